"""Browser test of the Simplex page: `streamlit run app.py` in headless Chromium (Playwright).

What AppTest cannot check: that Plotly actually draws the arrows. The page
is opened by its URL first after the server starts (a deep link: Streamlit
runs the page file without app.py). The arrow trace is found through the
data Plotly binds to each drawn trace group (``g.trace.__data__``), and its
SVG is checked: one line segment and one arrow-head marker per non-empty
cell. Screenshots go to test-artifacts/.

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH) and never
downloads a browser. Skipped when the browser or playwright is missing.
"""
from __future__ import annotations


import pytest

from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

import calib_core as cc
from calib_core.io import load_demo
from calib_core.plot.figures_simplex import ARROW_TRACE_NAME
from studio.state import DEFAULT_DEMO

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 1700}
TIMEOUT_MS = 60_000


#: The drawn arrow trace: segments of its line paths, its markers, and the markers Plotly drew a head for.
ARROW_SVG = """name => {
  const group = [...document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot g.trace")]
      .find(g => g.__data__ && g.__data__[0] && g.__data__[0].trace && g.__data__[0].trace.name === name);
  if (!group) return null;
  const lines = [...group.querySelectorAll('path.js-line')].map(p => p.getAttribute('d') || '');
  const points = [...group.querySelectorAll('path.point')];
  return {
    segments: lines.reduce((n, d) => n + (d.match(/M/g) || []).length, 0),
    stroke: group.querySelector('path.js-line') ? getComputedStyle(group.querySelector('path.js-line')).stroke : null,
    markers: points.length,
    heads: points.filter(p => (p.getAttribute('d') || '').includes('L')).length,
  };
}"""


#: Screen position of the first drawn arrow head.
HEAD_CENTRE = """name => {
  const group = [...document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot g.trace")]
      .find(g => g.__data__ && g.__data__[0] && g.__data__[0].trace && g.__data__[0].trace.name === name);
  const head = [...group.querySelectorAll('path.point')].find(p => (p.getAttribute('d') || '').includes('L'));
  const box = head.getBoundingClientRect();
  return {x: box.x + box.width / 2, y: box.y + box.height / 2};
}"""


def wait_for_arrows(page, n_arrows: int) -> dict:
    """Wait until the chart has drawn ``n_arrows`` arrow segments; returns the arrow trace's SVG summary."""
    page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot .main-svg").first.wait_for()
    page.wait_for_function(f"n => {{ const s = ({ARROW_SVG})({ARROW_TRACE_NAME!r}); return s && s.segments === n; }}",
                           arg=n_arrows)
    return page.evaluate(ARROW_SVG, ARROW_TRACE_NAME)


def test_simplex_deep_link_draws_one_arrow_per_cell(server, page):
    """The first visit of the fresh server opens /Simplex: default demo, 10 classes in three groups."""
    data = load_demo(DEFAULT_DEMO)
    n_cells = cc.simplex_reliability(data.probs, data.labels, n_bins=10).table.n_cells
    page.goto(f"{server}/Simplex")
    wait_for_app(page)
    svg = wait_for_arrows(page, n_cells)
    assert_no_exception(page)
    assert "Simplex" in page.locator("h1").first.inner_text()
    assert svg["stroke"] == "rgb(214, 39, 40)"
    assert svg["markers"] == 2 * n_cells  # a tail and a head per arrow
    assert svg["heads"] == n_cells, "every arrow has a visible head"
    chart = page.locator("[data-testid='stPlotlyChart']").first
    ternary_titles = chart.locator(".g-atitle, .g-btitle, .g-ctitle").all_text_contents()
    assert ternary_titles == ["0 + 1 + 2", "3 + 4 + 5", "6 + 7 + 8 + 9"]
    expected = cc.canonical_ce(data.probs, data.labels)
    assert page.locator("[data-testid='stMetricValue']").first.inner_text() == f"{expected:.4f}"
    page.screenshot(path=str(ARTIFACTS / "simplex.png"), full_page=True)
    chart.screenshot(path=str(ARTIFACTS / "simplex-chart.png"))


def test_simplex_three_classes_and_lens_change_redraws(server, page):
    data = load_demo("wine_random_forest")
    n_cells = cc.simplex_reliability(data.probs, data.labels, n_bins=10).table.n_cells
    page.goto(f"{server}/Simplex?demo=wine_random_forest")
    wait_for_app(page)
    wait_for_arrows(page, n_cells)
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "simplex-wine.png"), full_page=True)

    # Hovering an arrow head shows its cell's count, mean prediction and observed frequency.
    head = page.evaluate(HEAD_CENTRE, ARROW_TRACE_NAME)
    page.mouse.move(head["x"], head["y"])
    hover = page.locator("[data-testid='stPlotlyChart'] .hoverlayer .hovertext").first
    hover.wait_for()
    text = hover.text_content()
    assert "count: " in text and "mean prediction (class_0, class_1, class_2)" in text
    assert "observed frequency" in text
    page.locator("[data-testid='stPlotlyChart']").first.screenshot(path=str(ARTIFACTS / "simplex-wine-hover.png"))

    # The max lens: the top-label problem, drawn on the edge between "predicted class" and "another class".
    page.locator("[data-testid='stRadio']").filter(has_text="Lens").get_by_text("max (top label)").click()
    wait_for_app(page)
    points, outcomes = cc.lens_view(data.probs, data.labels, "max")
    n_lens_cells = cc.simplex_reliability(points, outcomes).table.n_cells
    svg = wait_for_arrows(page, n_lens_cells)
    assert_no_exception(page)
    assert svg["heads"] == n_lens_cells
    chart = page.locator("[data-testid='stPlotlyChart']").first
    assert chart.locator(".g-atitle").text_content() == "predicted class"
    top_label_ece = cc.ece(data.probs, data.labels, n_bins=10)
    assert page.locator("[data-testid='stMetricValue']").first.inner_text() == f"{top_label_ece:.4f}"
    chart.screenshot(path=str(ARTIFACTS / "simplex-wine-max-lens.png"))


#: Bounding boxes of the ternary chart's tick labels and vertex titles, in page pixels.
TERNARY_TEXT = """() => {
  const plot = document.querySelector("[data-testid='stPlotlyChart'] .js-plotly-plot");
  const box = t => { const r = t.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height,
                                                                    text: t.textContent}; };
  return {
    ticks: [...plot.querySelectorAll('.ternary g.xtick text, .ternary g.ytick text')].map(box),
    titles: [...plot.querySelectorAll('.g-atitle text, .g-btitle text, .g-ctitle text')].map(box),
  };
}"""


def overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


def test_simplex_verdicts_of_digits_random_forest(server, page):
    """Issue 11 item 2: no green pass for a test without power; both verdicts from calib_core, the difference said."""
    data = load_demo("digits_random_forest")
    whole = cc.consistency_resampling(data.probs, data.labels, cc.CanonicalCE(), 200, seed=0)
    view = cc.simplex_reliability(data.probs, data.labels, groups=cc.default_groups(10))
    arrows_band = cc.consistency_resampling(view.projection.points, view.projection.labels, cc.CanonicalCE(), 200,
                                            seed=0)
    page.goto(f"{server}/Simplex?demo=digits_random_forest")
    wait_for_app(page)
    wait_for_arrows(page, view.table.n_cells)
    assert_no_exception(page)
    alerts = [a.inner_text() for a in page.locator("[data-testid='stAlert']").all()]
    inconclusive = [a for a in alerts if "Inconclusive." in a]
    assert len(inconclusive) == 1 and whole.verdict == "inconclusive"
    assert f"the estimate {whole.observed:.4f} lies below its band" in inconclusive[0]
    assert "To let the test detect miscalibration" in inconclusive[0]
    assert any("Miscalibrated." in a and f"p = {arrows_band.p_value:.3f}" in a for a in alerts)
    assert any("The two tests read differently" in a for a in alerts)
    assert not any("no sign of miscalibration" in a for a in alerts)
    assert page.locator("[data-testid='stAlertContentSuccess']").count() == 0

    # The triangle is large and its vertex titles clear the tick labels (issue 11 item 10).
    text = page.evaluate(TERNARY_TEXT)
    ticks = {t["text"]: t for t in text["ticks"]}
    assert set(ticks) == {"0.2", "0.4", "0.6", "0.8"}, "no 0 / 1 labels on the vertices"
    bottom = sorted((t for t in text["ticks"] if abs(t["y"] - max(u["y"] for u in text["ticks"])) < 2),
                    key=lambda t: t["x"])
    side = (bottom[-1]["x"] - bottom[0]["x"]) / 0.6  # labels 0.8 ... 0.2 span 0.6 of an edge
    assert side > 560, f"the triangle is only {side:.0f} px wide"
    for title in text["titles"]:
        assert not any(overlap(title, tick) for tick in text["ticks"]), title
    page.locator("[data-testid='stPlotlyChart']").first.screenshot(path=str(ARTIFACTS / "simplex-digits-rf.png"))
    page.screenshot(path=str(ARTIFACTS / "simplex-digits-rf-page.png"), full_page=True)
