"""Browser test of the Recalibration page: `streamlit run app.py` in headless Chromium (Playwright).

What AppTest cannot check: that the results table and the charts are
actually drawn. The page is opened by its URL first after the server starts
(a deep link: Streamlit runs the page file without app.py). Drawn traces are
found through the data Plotly binds to each trace group
(``g.trace.__data__``): the before/after reliability curves, one arrow per
cell in each simplex view, the temperature curves with their minimiser
stars, the rank heatmap. A second test switches to cross-fitting in the
browser and downloads the recalibrated predictions. Screenshots go to
test-artifacts/.

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH) and never
downloads a browser. Skipped when the browser or playwright is missing.
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.io import load_demo
from calib_core.recalibration import TemperatureScaling
from calib_core.recalibration.recommendation import compare_methods
from studio import compute_recalibration as cr
from calib_core.plot.figures_recalibration import MINIMISER_PREFIX
from studio.state import DEFAULT_DEMO
from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e

#: Tall enough that the whole page is on screen for the full-page screenshot.
VIEWPORT = {"width": 1440, "height": 6400}
TIMEOUT_MS = 90_000
#: Charts in page order.
CHANGE, RELIABILITY, SIMPLEX_BEFORE, SIMPLEX_AFTER, SURFACE, RANKS = range(6)

#: Every drawn trace of the n-th chart: name, type, drawn line segments, markers, heatmap cells drawn.
DRAWN = """index => {
  const chart = document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot")[index];
  if (!chart) return null;
  return [...chart.querySelectorAll('g.trace, g.hm')].filter(g => g.__data__ && g.__data__[0] && g.__data__[0].trace)
    .map(g => ({
      name: g.__data__[0].trace.name,
      type: g.__data__[0].trace.type,
      segments: [...g.querySelectorAll('path.js-line')]
          .reduce((n, p) => n + ((p.getAttribute('d') || '').match(/M/g) || []).length, 0),
      markers: g.querySelectorAll('path.point').length,
      image: !!g.querySelector('image'),
    }));
}"""


def wait_for_charts(page, n_charts: int) -> list[list[dict]]:
    """Wait until ``n_charts`` Plotly charts have drawn traces; returns each chart's trace summary."""
    page.wait_for_function(
        """n => { const c = document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot");
                  return c.length === n && [...c].every(p => p.querySelectorAll('g.trace, g.hm').length > 0); }""",
        arg=n_charts)
    return [page.evaluate(DRAWN, i) for i in range(n_charts)]


def named(traces: list[dict], name: str) -> dict:
    (trace,) = [t for t in traces if t["name"] == name]
    return trace


def protocol_box(page) -> str:
    return page.locator("[data-testid='stAlertContentInfo']").filter(has_text="Protocol:").first.inner_text()


def test_recalibration_deep_link_draws_the_table_and_the_before_after_charts(server, page):
    """The first visit of the fresh server opens /Recalibration on the default demo (10 classes, split column);
    the before/after views show the recommended method first."""
    data = load_demo(DEFAULT_DEMO)
    test = data.split == "test"
    found = compare_methods(data.probs, data.labels, split=data.split, split_names=data.split_names,
                            methods=cr.DEFAULT_METHODS, n_boot=0)
    recommended = found.recommendation.method
    after = found.fits[recommended].probs
    groups = cc.default_groups(10)
    cells_before = cc.simplex_reliability(data.probs[test], data.labels[test], groups=groups).table.n_cells
    cells_after = cc.simplex_reliability(after, data.labels[test], groups=groups).table.n_cells

    page.goto(f"{server}/Recalibration")
    wait_for_app(page)
    charts = wait_for_charts(page, 6)
    assert_no_exception(page)
    assert "Recalibration" in page.locator("h1").first.inner_text()
    assert "Holdout" in protocol_box(page) and "449 calibration rows" in protocol_box(page)
    # The protocol is stated once on the page (it was repeated about eight times).
    assert page.get_by_text("Holdout: each method was fitted", exact=False).count() == 1
    # The results table, the detailed table with intervals and the minimisers are drawn (canvas grids).
    tables = page.locator("[data-testid='stDataFrame']")
    assert tables.count() == 3 and tables.first.bounding_box()["height"] > 150
    assert page.get_by_text("helps most", exact=False).count() >= 1

    # Before/after reliability diagrams side by side: both curves drawn, with their histograms.
    reliability = charts[RELIABILITY]
    assert named(reliability, "Before")["segments"] >= 1
    assert named(reliability, f"After: {recommended}")["segments"] >= 1
    assert sum(t["type"] == "bar" for t in reliability) == 2
    assert named(charts[SIMPLEX_BEFORE], "arrows")["segments"] == cells_before
    assert named(charts[SIMPLEX_AFTER], "arrows")["segments"] == cells_after
    surface_names = {t["name"] for t in charts[SURFACE]}
    for metric in ("NLL", "ECE", "ACE", "SCE", "CE_KL (kernel)"):
        assert named(charts[SURFACE], metric)["segments"] >= 1
        assert named(charts[SURFACE], f"{MINIMISER_PREFIX}{metric}")["markers"] == 1
    assert any(name.startswith("Temperature scaling: T = ") for name in surface_names)
    assert any(t["type"] == "heatmap" for t in charts[RANKS])
    # Heatmap columns carry a metric's name only where they equal it: "4 ECE", but "8", not "8 SCE".
    ticks = page.locator("[data-testid='stPlotlyChart']").nth(RANKS).locator("g.xtick text").evaluate_all(
        "texts => texts.map(t => t.textContent)")
    assert "4 ECE" in ticks and "8" in ticks and "24" in ticks
    assert not any(tick.split()[-1] in ("SCE", "ACE") for tick in ticks)
    assert len([t for t in charts[CHANGE] if t["markers"]]) == len(cr.DEFAULT_METHODS)

    page.screenshot(path=str(ARTIFACTS / "recalibration.png"), full_page=True)
    page.locator("[data-testid='stPlotlyChart']").nth(RELIABILITY).screenshot(
        path=str(ARTIFACTS / "recalibration-reliability.png"))
    page.locator("[data-testid='stPlotlyChart']").nth(SURFACE).screenshot(
        path=str(ARTIFACTS / "recalibration-surface.png"))


def test_cross_fitting_in_the_browser_and_csv_download(server, page):
    data = load_demo("wine_random_forest")
    page.goto(f"{server}/Recalibration?demo=wine_random_forest&download=Temperature+scaling")
    wait_for_app(page)
    wait_for_charts(page, 6)
    page.locator("[data-testid='stRadio']").filter(has_text="Protocol").get_by_text("K-fold cross-fitting").click()
    wait_for_app(page)
    wait_for_charts(page, 6)
    assert_no_exception(page)
    assert f"5-fold cross-fitting on {data.n_samples} rows" in protocol_box(page)

    with page.expect_download() as download_info:
        page.get_by_role("button", name="Recalibrated predictions (CSV)").click()
    frame = pd.read_csv(io.BytesIO(download_info.value.path().read_bytes()))
    assert list(frame.columns) == ["label", "split", *[f"p_{n}" for n in data.class_names]]
    assert (frame["split"] == "out-of-fold").all()
    oof = cc.cross_fit(TemperatureScaling(input="probs"), data.probs, data.labels, n_folds=5, seed=0)
    np.testing.assert_allclose(frame[[f"p_{n}" for n in data.class_names]].to_numpy(), oof, rtol=1e-8, atol=1e-12)
    page.screenshot(path=str(ARTIFACTS / "recalibration-cross-fit.png"), full_page=True)
