"""Shared pytest fixtures (kept small: the repository root and the demo files)."""
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (the folder holding app.py)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def demo_dir(repo_root: Path) -> Path:
    """data/demo; tests that need a demo file skip when it is missing."""
    folder = repo_root / "data" / "demo"
    if not any(folder.glob("*.csv")):
        pytest.skip("no demo CSVs in data/demo (run scripts/make_demo_data.py)")
    return folder
