"""Shared pytest fixtures (kept small: the repository root and the demo files), and how pytest-xdist
shares the tests between its workers (scripts/run_tests.sh runs the suite on every CPU)."""
import functools
import os
import re
import sys
from pathlib import Path

from tests.blas_support import pin_this_process

# Before anything loads numpy: one OpenBLAS kernel on every CPU, and one BLAS and one OpenMP thread per process
# (tests/blas_support.py).
pin_this_process()

import pytest  # noqa: E402

# The app's page tests were written for one model: a fresh session here opens the first built-in default demo
# only (studio.state.default_demos); tests/app/test_first_visit.py checks the three a visitor gets. Set before
# any app or browser-test server starts, so their processes inherit it.
os.environ.setdefault("CALIB_STUDIO_DEFAULT_DEMOS", "digits_gaussian_nb")

REPO_ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- pytest-xdist
# scripts/run_tests.sh runs `-n auto --dist loadgroup`. A module whose tests share a fixture made once per
# module (a browser test's `streamlit run` server and Chromium, a Dask cluster, a fitted model) is sent whole
# to one worker, so the fixture is made once, as in a serial run; every other test goes to whichever worker
# is free (largest modules first). xdist's own `xdist_group` marks no longer reach its scheduler under
# pytest 9 (it rewrites a node id pytest no longer reads), so the scheduler decides from the file itself.

#: A fixture made once per module (or class, or package) defined in the file.
_WIDE_FIXTURE = re.compile(r"""@pytest\.fixture\([^)]*scope\s*=\s*["'](module|class|package)["']""")
#: The browser tests use this file's module-scoped ``server`` and ``browser``.
_BROWSER_TESTS = "tests/e2e/"


@functools.lru_cache(maxsize=None)
def shares_module_fixtures(path: str) -> bool:
    """Whether the tests of the file ``path`` (relative to the repository) share a module-wide fixture."""
    if path.startswith(_BROWSER_TESTS):
        return True
    try:
        return bool(_WIDE_FIXTURE.search((REPO_ROOT / path).read_text()))
    except OSError:
        return False


class _ModuleFixtureScheduling:
    """Registered under pytest-xdist only (this hook name is unknown to pytest without it)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config, log):
        from xdist.scheduler import LoadGroupScheduling

        class Scheduling(LoadGroupScheduling):
            def _split_scope(self, nodeid: str) -> str:
                scope = super()._split_scope(nodeid)  # an `@group` suffix, if xdist ever sets one again
                if scope != nodeid:
                    return scope
                path = nodeid.split("::", 1)[0]
                return path if shares_module_fixtures(path) else nodeid

        return Scheduling(config, log) if config.getvalue("dist") == "loadgroup" else None


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_ModuleFixtureScheduling(), "calib-module-fixture-scheduling")


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


# ----------------------------------------------------------------------------- browser tests
# A module of tests/e2e/test_e2e*.py may set VIEWPORT and TIMEOUT_MS; each module gets a
# fresh server, so "a deep link opened first after a server start" can be tested.

@pytest.fixture(scope="module")
def server(request):
    """Base URL of a fresh `streamlit run app.py` for this test module."""
    from tests.e2e_support import require_browser, streamlit_server

    require_browser()
    with streamlit_server(f"streamlit-{request.module.__name__.rsplit('.', 1)[-1]}.log") as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium, launched by Playwright."""
    from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS, require_browser

    sync_api = require_browser()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, request):
    """A page in a fresh browser context (downloads accepted)."""
    from tests.e2e_support import DEFAULT_TIMEOUT_MS, DEFAULT_VIEWPORT

    viewport = getattr(request.module, "VIEWPORT", DEFAULT_VIEWPORT)
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    opened = context.new_page()
    opened.set_default_timeout(getattr(request.module, "TIMEOUT_MS", DEFAULT_TIMEOUT_MS))
    yield opened
    context.close()


@pytest.fixture
def fresh_streamlit_caches(demo_dir):
    """st.cache_data and st.cache_resource are process-wide: clear them around each app test."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def downloads(monkeypatch) -> dict:
    """The data of every ``st.download_button`` a page draws, by file name (the buttons still draw).

    Bytes, or the function a click calls (the session file and the reports are made on the click).
    """
    import streamlit

    captured: dict = {}
    original = streamlit.download_button

    def record(label, data, *args, **kwargs):
        captured[kwargs.get("file_name")] = data
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", record)
    return captured


@pytest.fixture(autouse=True)
def keep_the_main_module():
    """Put pytest's ``__main__`` back after each test.

    ``AppTest.from_file(...)`` leaves the app script registered as ``sys.modules["__main__"]``;
    a later ``multiprocessing`` spawn (the local Dask cluster's worker processes) would then
    import and run the Streamlit script in each worker, which then fails to start.
    """
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main
