"""The app's pages, in sidebar order: the one place to list a new page.

Streamlit discovers ``pages/*.py`` next to ``app.py`` by itself (the URL of
``pages/2_Reliability.py`` is ``/Reliability``); the automatic sidebar list
is hidden in ``.streamlit/config.toml`` because it would label the home page
"app". :func:`available_pages` lists only the files that exist, so pages of
later features (Simplex, Recalibration, ...) appear as soon as their file does.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Folder holding ``app.py`` (paths below are relative to it, as st.page_link wants).
APP_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class NavPage:
    """One sidebar entry: a page file (relative to ``app.py``), its label and icon."""

    path: str
    label: str
    icon: str


PAGES: tuple[NavPage, ...] = (
    NavPage("app.py", "Data", ":material/upload_file:"),
    NavPage("pages/1_Metrics.py", "Metrics", ":material/table_chart:"),
    NavPage("pages/2_Reliability.py", "Reliability", ":material/show_chart:"),
    NavPage("pages/3_Per-class.py", "Per-class", ":material/bar_chart:"),
    NavPage("pages/4_Bin_sensitivity.py", "Bin sensitivity", ":material/tune:"),
    NavPage("pages/5_Simplex.py", "Simplex", ":material/change_history:"),
    NavPage("pages/6_Recalibration.py", "Recalibration", ":material/auto_fix_high:"),
    NavPage("pages/7_Estimators.py", "Estimators", ":material/functions:"),
    NavPage("pages/8_Lab.py", "Lab", ":material/science:"),
    NavPage("pages/9_Large_tables.py", "Large tables", ":material/dataset:"),
    NavPage("pages/10_Groups.py", "Groups", ":material/groups:"),
    NavPage("pages/11_Deployment.py", "Deployment", ":material/rocket_launch:"),
)


def available_pages(root: Path = APP_ROOT) -> list[NavPage]:
    """The entries of :data:`PAGES` whose file exists under ``root``, in order."""
    return [page for page in PAGES if (root / page.path).is_file()]
