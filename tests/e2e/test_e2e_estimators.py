"""Browser test of the Estimators page: `streamlit run app.py` in headless Chromium (Playwright).

What AppTest cannot check: that Plotly actually draws the four charts. The
page is opened by its URL first after the server starts (a deep link:
Streamlit runs the page file without app.py). Drawn traces are found
through the data Plotly binds to each trace group (``g.trace.__data__``):
the decomposition's bars, the bound chain's links (the broken ones in
their highlight colour) and the smoothed curves with their bands.
Screenshots go to test-artifacts/.

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH) and never
downloads a browser. Skipped when the browser or playwright is missing.
"""
from __future__ import annotations


import pytest

from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

import calib_core as cc
from calib_core.io import load_demo
from calib_core.plot import figures_estimators as fe
from studio.state import DEFAULT_DEMO

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 1700}
TIMEOUT_MS = 90_000
CHART_KEYS = ("estimators_estimates", "estimators_decomposition", "estimators_chain", "estimators_smooth")


#: Summary of every drawn trace of the n-th chart: name, type, number of drawn paths, first stroke colour.
DRAWN = """index => {
  const chart = document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot")[index];
  if (!chart) return null;
  return [...chart.querySelectorAll('g.trace')].filter(g => g.__data__ && g.__data__[0] && g.__data__[0].trace)
    .map(g => {
      const line = g.querySelector('path.js-line');
      return {
        name: g.__data__[0].trace.name,
        type: g.__data__[0].trace.type,
        bars: g.querySelectorAll('g.point path').length,
        segments: [...g.querySelectorAll('path.js-line')]
            .reduce((n, p) => n + ((p.getAttribute('d') || '').match(/M/g) || []).length, 0),
        fill: !!g.querySelector('path.js-fill'),
        stroke: line ? getComputedStyle(line).stroke : null,
        width: line ? getComputedStyle(line).strokeWidth : null,
      };
    });
}"""


def wait_for_charts(page, n_charts: int) -> list[list[dict]]:
    """Wait until ``n_charts`` Plotly charts have drawn their traces; returns each chart's trace summary."""
    page.wait_for_function(
        """n => { const c = document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot");
                  return c.length === n && [...c].every(p => p.querySelectorAll('g.trace').length > 0); }""",
        arg=n_charts)
    return [page.evaluate(DRAWN, i) for i in range(n_charts)]


def by_name(traces: list[dict], name: str) -> list[dict]:
    return [t for t in traces if t["name"] == name]


def test_estimators_deep_link_draws_every_chart(server, page):
    """The first visit of the fresh server opens /Estimators on the default demo (10 classes)."""
    data = load_demo(DEFAULT_DEMO)
    chain = cc.bound_chain(data.probs, data.labels, bandwidth=cc.metrics.registry.KDE_BANDWIDTH)  # the page's default
    page.goto(f"{server}/Estimators")
    wait_for_app(page)
    estimates, decomposition, chain_traces, smooth = wait_for_charts(page, 4)
    assert_no_exception(page)
    assert "Estimators beyond binning" in page.locator("h1").first.inner_text()

    # Estimates: one dot per estimator panel (one model).
    assert len(by_name(estimates, DEFAULT_DEMO)) == 7
    # Decomposition: refinement under both bars of each panel, calibration and sharpness on one each.
    assert sum(t["bars"] for t in by_name(decomposition, fe.REFINEMENT_NAME)) == 4
    assert sum(t["bars"] for t in by_name(decomposition, fe.CALIBRATION_NAME)) == 2
    assert sum(t["bars"] for t in by_name(decomposition, fe.SHARPNESS_NAME)) == 2
    # Chain: the links the estimates break are drawn thick in the highlight colour.
    (held,) = by_name(chain_traces, fe.HELD_NAME)
    assert held["segments"] == len(chain.links) - len(chain.broken)
    assert held["stroke"] == "rgb(154, 165, 177)"
    if chain.broken:
        (broken,) = by_name(chain_traces, fe.BROKEN_NAME)
        assert broken["segments"] == len(chain.broken)
        assert broken["stroke"] == "rgb(213, 94, 0)" and float(broken["width"].rstrip("px")) >= 4
    # Smoothed curve with its band and density.
    curve = cc.smooth_reliability_curve(data.probs, data.labels, n_boot=0)
    (line,) = by_name(smooth, f"{DEFAULT_DEMO}: smoothed (smECE {curve.smece:.4f})")
    assert line["segments"] >= 1
    # Plotly draws a "tonexty" fill in the group of the trace before it: the band's upper edge.
    assert by_name(smooth, f"{DEFAULT_DEMO}: smoothed band (upper)")[0]["fill"]
    metric = page.locator("[data-testid='stMetricValue']").first.inner_text()
    assert metric == f"{curve.smece:.4f}"

    page.screenshot(path=str(ARTIFACTS / "estimators.png"), full_page=True)
    charts = page.locator("[data-testid='stPlotlyChart']")
    for index, name in enumerate(("estimates", "decomposition", "chain", "smooth")):
        charts.nth(index).scroll_into_view_if_needed()
        charts.nth(index).screenshot(path=str(ARTIFACTS / f"estimators-{name}.png"))


def test_two_models_and_a_setting_change_redraw(server, page):
    """Two small demos side by side; a fixed Dirichlet bandwidth recomputes and redraws."""
    page.goto(f"{server}/Estimators?demo=wine_random_forest,breast_cancer_svc")
    wait_for_app(page)
    estimates, decomposition, chain_traces, smooth = wait_for_charts(page, 4)
    assert_no_exception(page)
    for name in ("wine_random_forest", "breast_cancer_svc"):
        assert len(by_name(estimates, name)) == 7
        assert any(t["name"].startswith(f"{name}: smoothed (smECE") for t in smooth)
    assert sum(t["bars"] for t in by_name(decomposition, fe.REFINEMENT_NAME)) == 8
    chart = page.locator("[data-testid='stPlotlyChart']").nth(2)
    titles = chart.locator(".annotation-text").all_text_contents()
    assert titles[:2] == ["wine_random_forest", "breast_cancer_svc"]

    page.locator("[data-testid='stRadio']").filter(has_text="Dirichlet kernel").get_by_text("fixed").click()
    wait_for_app(page)
    wait_for_charts(page, 4)
    assert_no_exception(page)
    rows = page.locator("[data-testid='stExpander']").filter(has_text="Decomposition table")
    assert rows.count() == 1
    page.screenshot(path=str(ARTIFACTS / "estimators-two-models.png"), full_page=True)
    page.locator("[data-testid='stPlotlyChart']").nth(2).screenshot(
        path=str(ARTIFACTS / "estimators-two-models-chain.png"))


def test_large_upload_shows_progress_and_runs_on_blocks(server, page, tmp_path):
    """A 30,000-row upload: the page shows its progress, then the O(N²) estimators on disjoint blocks."""
    import numpy as np
    import pandas as pd

    from studio import compute_estimators as ce

    rng = np.random.default_rng(1)
    logits = rng.normal(size=(30_000, 5)) * 1.5
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(30_000)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(0, 4)
    sharp = np.exp(2.0 * logits)
    probs = sharp / sharp.sum(axis=1, keepdims=True)
    upload = tmp_path / "large_upload.csv"
    frame = pd.DataFrame(probs, columns=[f"p_{k}" for k in range(5)]).round(8)
    frame[["p_0"]] = 1.0 - frame[[f"p_{k}" for k in range(1, 5)]].sum(axis=1).to_frame()
    frame.insert(0, "label", labels)
    frame.to_csv(upload, index=False)
    plan = ce.plan_quadratic(30_000, 5, ce.AUTO, 10, auto_bandwidth=False, classwise=False)
    assert plan.uses_blocks

    page.goto(server)
    wait_for_app(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(upload))
    page.get_by_role("heading", name="large_upload").wait_for()
    wait_for_app(page)
    page.locator("[data-testid='stSidebar'] [data-testid='stPageLink']").get_by_text("Estimators", exact=True).click()
    # One wait for a bar that says its step (reading the text after a separate wait raced with the bar's removal
    # at the end of the work, and timed out on a busy machine).
    page.locator("[data-testid='stProgress']").filter(has_text="step").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "estimators-large-upload-progress.png"))
    wait_for_app(page)
    wait_for_charts(page, 4)
    assert_no_exception(page)
    assert page.locator("[data-testid='stProgress']").count() == 0, "the bar is removed when the work is done"
    note = page.locator("[data-testid='stAlertContentInfo']").filter(has_text="large_upload has 30,000 rows")
    assert f"run on {plan.describe()}" in note.first.inner_text()
    page.locator("[data-testid='stPlotlyChart']").first.screenshot(
        path=str(ARTIFACTS / "estimators-large-upload-estimates.png"))
    page.locator("[data-testid='stDataFrame']").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "estimators-large-upload.png"))
