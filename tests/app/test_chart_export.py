"""Chart export (issue 14, item 4): every Plotly chart's camera button saves the chart with a meaningful,
safe file name (page, model, setting), client-side.

plotly.js ``config.toImageButtonOptions`` sets the one format of the modebar's camera button ("png",
"svg", "jpeg" or "webp"); a second format would need a custom modebar button, i.e. JavaScript, which
``st.plotly_chart`` does not take from Python. The app therefore offers one sidebar choice, PNG
(``scale=2``) or SVG, that every chart's button follows; the HTML report holds the interactive charts.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from calib_core.io import Predictions
from studio import downloads, nav, report

from tests.app_support import assert_clean, open_link, open_with_uploads

ROOT = Path(__file__).resolve().parents[2]
PAGE_SOURCES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
#: A model and class name that is a path, Markdown, HTML and a Plotly hover template at once.
HOSTILE = ("../etc/<b>x</b> [l](http://127.0.0.1:9) %{y}:*", "a\\b/c <img src=x> $x$")
SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")
#: Settings that make a page draw its charts (the Lab draws the bounds preview without a run).
PAGE_STATE = {"pages/8_Lab.py": {"lab_tool": "Simulation lab"}}


def _plotly_chart_calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "plotly_chart":
            yield node


@pytest.mark.parametrize("path", PAGE_SOURCES, ids=lambda p: p.name)
def test_every_plotly_chart_call_passes_the_shared_chart_config(path):
    """Also the charts an AppTest does not reach (the Lab's results need a finished run)."""
    for call in _plotly_chart_calls(path):
        config = next((k.value for k in call.keywords if k.arg == "config"), None)
        assert (isinstance(config, ast.Call) and isinstance(config.func, ast.Attribute)
                and config.func.attr == "chart_config" and config.args), \
            f"{path.name}:{call.lineno}: st.plotly_chart without config=downloads.chart_config(page, ...)"


def test_chart_config_slugs_every_part_and_keeps_png():
    config = downloads.chart_config("Reliability", HOSTILE[0], "15 uniform bins")
    options = config["toImageButtonOptions"]
    assert options["format"] == "png" and options["scale"] == 2
    assert SAFE_NAME.fullmatch(options["filename"]), options["filename"]
    assert options["filename"].startswith("Reliability_") and options["filename"].endswith("_15-uniform-bins")
    assert downloads.chart_config("x", image_format="svg")["toImageButtonOptions"]["format"] == "svg"
    with pytest.raises(ValueError, match="image_format"):
        downloads.chart_config("x", image_format="pdf")


def _hostile_model(seed: int, name: str) -> Predictions:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3) * 0.7, size=240)
    labels = (rng.random(240)[:, None] > probs.cumsum(axis=1)).sum(axis=1).clip(0, 2)
    groups = np.array([f"{HOSTILE[1]}{g}" for g in rng.integers(0, 3, size=240)])
    return Predictions.from_arrays(probs=probs, labels=labels, class_names=(HOSTILE[0], HOSTILE[1], "c"),
                                   name=name, groups=groups, group_column=HOSTILE[1])


@pytest.mark.usefixtures("fresh_streamlit_caches")
@pytest.mark.parametrize("page", [p.path for p in nav.PAGES])
def test_every_chart_on_every_page_downloads_under_a_safe_meaningful_name(page):
    """Two models with a path/Markdown/HTML name: every chart's file name is non-empty, has no path
    separator or markup character, starts with the page, and two charts of a page never share a name."""
    models = [_hostile_model(0, HOSTILE[0] + ".csv"), _hostile_model(1, HOSTILE[1])]
    at = open_with_uploads(page, models, timeout=180, session_values=PAGE_STATE.get(page, {}))
    assert not at.exception, [e.value for e in at.exception]
    charts = at.get("plotly_chart")
    assert charts, "the page drew no chart, so the check below would be vacuous"
    names = []
    for chart in charts:
        config = json.loads(chart.proto.config)
        options = config["toImageButtonOptions"]
        name = options["filename"]
        assert name and SAFE_NAME.fullmatch(name), name
        assert options["format"] == "png" and config["displaylogo"] is False
        label = next(p.label for p in nav.PAGES if p.path == page)
        assert name.split("_")[0] == report.chart_file_name(label.replace(" ", "-")), (page, name)
        names.append(name)
    assert len(set(names)) == len(names), f"two charts share a file name: {names}"
    if page not in ("pages/8_Lab.py", "pages/9_Large_tables.py"):  # a simulated model; an uploaded summary
        slugs = [report.chart_file_name(m.name) for m in models]
        assert any(s in n for n in names for s in slugs), (names, slugs)


def test_the_sidebar_chooses_svg_for_every_chart_of_the_page():
    """Issue 14: the camera button saves PNG or SVG; one sidebar choice sets it for every chart."""
    at = open_link("pages/2_Reliability.py", timeout=120)
    assert_clean(at)
    formats = {json.loads(chart.proto.config)["toImageButtonOptions"]["format"]
               for chart in at.get("plotly_chart")}
    assert formats == {"png"}
    at.radio(key=downloads.CHART_FORMAT_KEY).set_value("SVG").run()
    charts = at.get("plotly_chart")
    assert charts and {json.loads(chart.proto.config)["toImageButtonOptions"]["format"] for chart in charts} == {"svg"}
