"""Browser tests of the Lab page: `streamlit run app.py` driven by headless Chromium through Playwright.

What AppTest cannot check: the page opened first after a server start (a deep
link, so app.py never runs), the run's chunks advancing through real reruns,
Plotly drawing the chart, and the Stop button interrupting a running script.
Screenshots go to test-artifacts/. Uses Debian's chromium (/usr/bin/chromium, or
CHROMIUM_PATH) and never downloads a browser. Skipped when the browser or
playwright is missing.
"""
from __future__ import annotations

import time

import pytest

from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

import calib_core as cc
from calib_core.lab.estimators import DEFAULT_SIZES
from calib_core.plot.figures_lab import TRUTH_TRACE_PREFIX

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 3000}
TIMEOUT_MS = 90_000


#: Names of the drawn traces of the index-th Plotly chart, with the number of path segments each drew.
DRAWN_TRACES = """i => {
  const chart = document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot")[i];
  if (!chart) return null;
  return [...chart.querySelectorAll('g.trace')].filter(g => g.__data__ && g.__data__[0] && g.__data__[0].trace)
    .map(g => ({name: g.__data__[0].trace.name,
                segments: [...g.querySelectorAll('path.js-line, path.js-fill')]
                  .reduce((n, p) => n + ((p.getAttribute('d') || '').match(/L/g) || []).length, 0)}));
}"""


def drawn(page, index: int) -> dict[str, int]:
    """Wait until the index-th chart has drawn SVG paths; returns {trace name: drawn segments}."""
    page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot .main-svg").nth(index).wait_for()
    page.wait_for_function(f"i => {{ const t = ({DRAWN_TRACES})(i); return t && t.some(x => x.segments > 0); }}",
                           arg=index)
    return {t["name"]: t["segments"] for t in page.evaluate(DRAWN_TRACES, index)}


def choose_settings(page, sizes: list[int], repetitions: int, seed: int) -> None:
    """Keep only ``sizes`` in the size picker, set R and the seed (inside the form: nothing runs yet)."""
    picker = page.locator("[data-testid='stMultiSelect']").filter(has_text="Test-set sizes n")
    for n in DEFAULT_SIZES:
        if n not in sizes:
            picker.get_by_role("button", name=f"Remove {n:,}", exact=True).click()
    page.get_by_label("Repetitions R", exact=True).fill(str(repetitions))
    page.get_by_label("Seed", exact=True).first.fill(str(seed))


def test_lab_opened_first_runs_a_tiny_lab_and_draws_the_chart(server, page):
    """The first visit of the fresh server opens /Lab, runs R=3 at two sizes and sees the truth line drawn."""
    page.goto(f"{server}/Lab")
    wait_for_app(page)
    assert_no_exception(page)
    assert "Lab" in page.locator("h1").first.inner_text()
    preview = drawn(page, 0)
    assert any(name.startswith("total bound") for name in preview), preview

    choose_settings(page, [100, 268], 3, 0)
    started = time.perf_counter()
    page.get_by_test_id("stFormSubmitButton").get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("3 test sets at each of 2 sizes; finished in").wait_for()
    wait_for_app(page)
    seconds = time.perf_counter() - started
    assert_no_exception(page)

    traces = drawn(page, 0)
    truth = cc.futami_logistic("less_calibrated").truth()
    truth_line = f"{TRUTH_TRACE_PREFIX}TCE = {truth['tce']:.4f}"
    assert traces.get(truth_line, 0) >= 1, traces  # a drawn horizontal segment
    assert traces.get("ECE (uniform, optimal B)", 0) >= 1, traces  # the mean line through the two sizes
    assert traces.get("ECE (uniform, optimal B) 5-95%", 0) >= 3, traces  # the band polygon
    legend = page.locator("[data-testid='stPlotlyChart']").first.locator(".legend").text_content()
    assert truth_line in legend
    bounds = drawn(page, 1)
    assert "observed: ECE (uniform, optimal B)" in bounds
    page.screenshot(path=str(ARTIFACTS / "lab-tiny-run.png"), full_page=True)
    page.locator("[data-testid='stPlotlyChart']").first.screenshot(path=str(ARTIFACTS / "lab-tiny-run-chart.png"))
    print(f"tiny lab run in the browser: {seconds:.1f} s from Run to the finished chart")


def test_stop_button_interrupts_a_long_run_and_keeps_the_finished_sizes(server, page):
    """A run of R=400 (minutes) is stopped as soon as its progress bar shows; the page says what finished."""
    page.goto(f"{server}/Lab")
    wait_for_app(page)
    choose_settings(page, list(DEFAULT_SIZES), 400, 20240917)
    page.get_by_test_id("stFormSubmitButton").get_by_role("button", name="Run", exact=True).click()
    progress = page.locator("[data-testid='stProgress']")
    progress.wait_for()
    page.get_by_text("Simulating 400 test sets").wait_for()  # past the true values: sizes are running
    page.screenshot(path=str(ARTIFACTS / "lab-running.png"), full_page=True)
    clicked = time.perf_counter()
    # (while a script runs Streamlit's header has a "Stop" button of its own)
    page.get_by_test_id("stButton").get_by_role("button", name="Stop").click()
    page.get_by_text("Stopped:").wait_for()
    wait_for_app(page)
    seconds = time.perf_counter() - clicked
    assert_no_exception(page)
    assert progress.count() == 0
    warning = page.get_by_text("Stopped:").inner_text()
    assert f"of {len(DEFAULT_SIZES)} sizes finished" in warning and "Press Run to continue" in warning
    assert seconds < 20, f"the Stop button took {seconds:.1f} s to stop the run"
    page.screenshot(path=str(ARTIFACTS / "lab-stopped.png"), full_page=True)


def test_gallery_opens_a_case_in_the_browser(server, page):
    page.goto(f"{server}/Lab")
    wait_for_app(page)
    page.get_by_role("tab", name="Pathology gallery").click()
    wait_for_app(page)
    page.get_by_text("Over- and under-confidence cancel inside one bin").click()
    page.locator("[data-testid='stMetricLabel']").filter(has_text="ece 10 bins").wait_for()
    wait_for_app(page)
    assert_no_exception(page)
    values = page.locator("[data-testid='stMetricValue']").all_inner_texts()
    assert "0.003" in values
    page.screenshot(path=str(ARTIFACTS / "lab-gallery.png"), full_page=True)
