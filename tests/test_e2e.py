"""Browser tests: `streamlit run app.py` driven by headless Chromium through Playwright.

What AppTest cannot check: the real HTTP upload path, a deep link opened first
after a server start (Streamlit then runs the page file directly, never
app.py), and Plotly actually drawing SVG. Screenshots go to test-artifacts/.

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH); never downloads
a browser (no `playwright install`). Skipped when the browser or the
playwright package is missing.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1440, "height": 2400}
TIMEOUT_MS = 60_000

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """A fresh `streamlit run app.py`; yields its base URL. Its log goes to test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = _free_port()
    log_path = ARTIFACTS / "streamlit-e2e.log"
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
               "--server.port", str(port), "--server.address=127.0.0.1", "--browser.gatherUsageStats=false",
               "--server.fileWatcherType=none"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"streamlit did not start; see {log_path}:\n{log_path.read_text()[-2000:]}")
        time.sleep(0.3)
    yield base
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    yield opened
    context.close()


def wait_for_app(page) -> None:
    """Wait until the app is connected and its script has finished (Streamlit's e2e helper)."""
    page.wait_for_timeout(155)
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']")
    page.wait_for_selector("[data-testid='stAppViewContainer']")


def assert_no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()


def wait_for_plot(page, index: int = 0):
    """Wait until the index-th Plotly chart has drawn its traces as SVG paths; returns the chart."""
    chart = page.locator("[data-testid='stPlotlyChart']").nth(index)
    chart.locator(".js-plotly-plot .main-svg").first.wait_for()
    page.wait_for_function(
        """i => { const c = document.querySelectorAll("[data-testid='stPlotlyChart']")[i];
                  return c && c.querySelectorAll('.js-plotly-plot g.trace path').length > 0; }""",
        arg=index,
    )
    return chart


def test_deep_link_to_reliability_first_after_server_start(server, page):
    """The very first visit of the fresh server opens /Reliability: the page must set itself up."""
    page.goto(f"{server}/Reliability?demo=digits_random_forest")
    wait_for_app(page)
    chart = wait_for_plot(page)
    assert_no_exception(page)
    assert "Reliability diagram" in page.locator("h1").first.inner_text()
    # the shared sidebar (custom nav labels the home page "Data") and the demo from the link
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.get_by_text("Data", exact=True).count() >= 1
    assert "digits_random_forest" in sidebar.inner_text()
    assert "digits_random_forest" in chart.locator(".legend").first.text_content()
    assert chart.locator("g.trace.scatter path").count() > 0
    page.screenshot(path=str(ARTIFACTS / "deep-link-reliability.png"))
    # from the deep-linked page to the home page: same session, same model, ?demo= kept in the URL
    sidebar.locator("[data-testid='stPageLink']").get_by_text("Data", exact=True).click()
    page.get_by_role("heading", name="digits_random_forest").wait_for()
    wait_for_app(page)
    assert_no_exception(page)
    assert "demo=digits_random_forest" in page.url


def test_upload_csv_then_reliability_chart(server, page, demo_dir, tmp_path):
    upload = tmp_path / "uploaded_forest.csv"
    upload.write_bytes((demo_dir / "digits_random_forest.csv").read_bytes())
    garbage = tmp_path / "broken.csv"
    garbage.write_bytes(b"\x00\x01 not a table \xff\xfe")

    page.goto(server)
    wait_for_app(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files([str(upload), str(garbage)])
    page.get_by_role("heading", name="uploaded_forest").wait_for()
    wait_for_app(page)
    page.locator("[data-testid='stAlertContentError']").filter(has_text="broken.csv").wait_for()
    assert page.get_by_role("heading", name="digits_gaussian_nb").count() == 1  # the default demo stayed
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "data-after-upload.png"))

    for label, shot in (("Metrics", "metrics"), ("Reliability", "reliability"), ("Per-class", "per-class"),
                        ("Bin sensitivity", "bin-sensitivity")):
        page.locator("[data-testid='stSidebar'] [data-testid='stPageLink']").get_by_text(label, exact=True).click()
        page.get_by_role("heading", level=1).filter(has_text=label.split()[0]).wait_for()
        wait_for_app(page)
        chart = wait_for_plot(page)
        assert_no_exception(page)
        page.screenshot(path=str(ARTIFACTS / f"{shot}.png"))
        if label == "Reliability":
            legend = chart.locator(".legend").first.text_content()
            assert "uploaded_forest" in legend and "digits_gaussian_nb" in legend
            for option in ("side by side", "bars"):
                page.locator("[data-testid='stRadio']").get_by_text(option, exact=True).click()
                wait_for_app(page)
            chart = wait_for_plot(page)
            assert chart.locator("g.trace.bars").count() >= 4  # bars and gap bars of two models
            assert_no_exception(page)
            page.screenshot(path=str(ARTIFACTS / "reliability-side-by-side-bars.png"))
