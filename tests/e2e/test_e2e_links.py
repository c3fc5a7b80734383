"""Browser test of "every view is a link" (issue 14, item 1): `streamlit run app.py` in headless Chromium.

On Reliability, Simplex and Recalibration three controls are changed with the
mouse and keyboard; the browser's URL then carries them (Streamlit's
``bind="query-params"``), and the "Link to this view" box in the sidebar shows
the same parameters. The URL is opened in a NEW browser context (no shared
session, cookies or storage): the controls, the numbers on the page and the
data of every chart must come back the same. Screenshots go to
test-artifacts/ (links-*.png).

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH) and never
downloads a browser. Skipped when the browser or playwright is missing.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 2000}
TIMEOUT_MS = 90_000

#: The data of every Plotly chart on the page (the numbers drawn), rounded so that JSON floats compare.
CHART_DATA = """() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .js-plotly-plot")].map(gd =>
  JSON.stringify(gd.data.map(t => ({name: t.name, type: t.type, x: t.x, y: t.y, a: t.a, b: t.b, c: t.c}))))"""

#: The text of the page's main area (metrics, captions, verdicts), without the link notes.
MAIN_TEXT = """() => document.querySelector("[data-testid='stMain']").innerText"""


def radio(page, label: str, option: str) -> None:
    page.locator("[data-testid='stRadio']").filter(has_text=label).get_by_text(option, exact=True).click()
    wait_for_app(page)


def toggle(page, label: str) -> None:
    page.locator("[data-testid='stCheckbox']").filter(has_text=label).locator("label").first.click()
    wait_for_app(page)


def slider_steps(page, label: str, steps: int) -> None:
    """Move a slider ``steps`` steps with the keyboard (right for positive)."""
    thumb = page.locator("[data-testid='stSlider']").filter(has_text=label).get_by_role("slider").first
    thumb.focus()
    for _ in range(abs(steps)):
        thumb.press("ArrowRight" if steps > 0 else "ArrowLeft")
    thumb.blur()
    wait_for_app(page)


def selectbox(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_for_app(page)


def link_box(page) -> str:
    return page.locator("[data-testid='stSidebar'] [data-testid='stCode']").first.inner_text().strip()


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


#: True once every chart element of the page has been drawn by Plotly.
ALL_DRAWN = """() => {
  const charts = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
  return charts.length > 0 && charts.every(c => { const gd = c.querySelector('.js-plotly-plot');
                                                  return gd && gd.data && gd._fullLayout; });
}"""


def snapshot(page) -> tuple[list[str], str]:
    page.mouse.wheel(0, 20_000)  # charts below the fold are drawn when scrolled into view
    page.wait_for_function(ALL_DRAWN)
    page.mouse.wheel(0, -20_000)
    return page.evaluate(CHART_DATA), page.evaluate(MAIN_TEXT)


def view(page) -> tuple[list[str], str]:
    """What must come back: every chart's data and the main area's text, once two looks 1 s apart agree.

    A page opened from a link may run twice (the browser reports its bound controls); between the runs
    the first elements are already redrawn while later ones are not, so one look is not enough.
    """
    previous = snapshot(page)
    for _ in range(30):
        page.wait_for_timeout(1000)
        wait_for_app(page)
        current = snapshot(page)
        if current == previous:
            return current
        previous = current
    raise AssertionError("the page did not settle within 30 s")


def _without_timings(text: str) -> str:
    """``text`` with wall-clock durations ("fitted in 0.01 s") masked: they differ between two runs."""
    return re.sub(r"\bin \d+(\.\d+)? s\b", "in _ s", text)


def reopen(browser, url: str):
    """``url`` in a new browser context: nothing shared with the session that made the link."""
    context = browser.new_context(viewport=VIEWPORT)
    fresh = context.new_page()
    fresh.set_default_timeout(TIMEOUT_MS)
    fresh.goto(url)
    wait_for_app(fresh)
    return context, fresh


def round_trip(browser, page, name: str, expected: dict[str, list[str]]) -> dict[str, list[str]]:
    """Check the URL and the link box carry ``expected``, reopen the URL elsewhere, compare the views."""
    assert_no_exception(page)
    page.wait_for_function("keys => keys.every(k => new URL(location.href).searchParams.has(k))",
                           arg=list(expected))
    url = page.url
    params = query(url)
    for key, values in expected.items():
        assert params[key] == values, (key, params)
    assert query(link_box(page)) == params, "the link box shows the browser's URL"
    charts, text = view(page)
    page.screenshot(path=str(ARTIFACTS / f"links-{name}.png"), full_page=True)

    context, fresh = reopen(browser, url)
    try:
        assert_no_exception(fresh)
        assert query(fresh.url) == params, "the link opens unchanged"
        fresh_charts, fresh_text = view(fresh)
        assert fresh_charts == charts, "the same chart data comes back"
        assert _without_timings(fresh_text) == _without_timings(text), "the same numbers and text come back"
        assert "is not a valid choice" not in fresh_text
        fresh.screenshot(path=str(ARTIFACTS / f"links-{name}-reopened.png"), full_page=True)
    finally:
        context.close()
    return params


def test_reliability_view_round_trips_through_its_link(server, browser, page):
    page.goto(f"{server}/Reliability?demo=iris_svc")
    wait_for_app(page)
    before, _ = view(page)
    slider_steps(page, "Number of bins", -5)         # 15 -> 10
    radio(page, "Bins", "adaptive")
    toggle(page, "Log scale")
    after, text = view(page)
    assert after != before, "the controls changed the chart"
    assert "ECE (10 adaptive bins)" in text
    round_trip(browser, page, "reliability", {"bins": ["10"], "binning": ["adaptive"], "log": ["true"]})
    page.locator("[data-testid='stSidebar']").screenshot(path=str(ARTIFACTS / "links-sidebar.png"))


def test_simplex_view_round_trips_through_its_link(server, browser, page):
    page.goto(f"{server}/Simplex?demo=wine_random_forest")
    wait_for_app(page)
    before, _ = view(page)
    radio(page, "Lens", "max (top label)")
    radio(page, "Distance", "squared Euclidean")
    slider_steps(page, "Subdivisions per edge", 2)   # 10 -> 12
    after, _ = view(page)
    assert after != before
    round_trip(browser, page, "simplex",
               {"lens": ["max (top label)"], "distance": ["squared Euclidean"], "cells": ["12"]})


def test_recalibration_view_round_trips_through_its_link(server, browser, page):
    page.goto(f"{server}/Recalibration?demo=iris_svc")
    wait_for_app(page)
    before, _ = view(page)
    radio(page, "Protocol", "K-fold cross-fitting")
    radio(page, "Binning", "adaptive")
    selectbox(page, "Bins", "10")
    after, _ = view(page)
    assert after != before
    round_trip(browser, page, "recalibration",
               {"protocol": ["K-fold cross-fitting"], "recal_binning": ["adaptive"], "recal_bins": ["10"]})


def test_values_survive_a_page_switch_in_the_browser(server, page):
    page.goto(f"{server}/Reliability?demo=iris_svc")
    wait_for_app(page)
    radio(page, "Bins", "adaptive")
    page.locator("[data-testid='stSidebar']").get_by_role("link", name="Metrics").click()
    wait_for_app(page)
    assert "binning" not in query(page.url), "a page's controls leave the URL of another page"
    page.locator("[data-testid='stSidebar']").get_by_role("link", name="Reliability").click()
    wait_for_app(page)
    page.wait_for_function("() => new URL(location.href).searchParams.get('binning') === 'adaptive'")
    assert_no_exception(page)
    assert page.get_by_role("radio", name="adaptive", exact=True).is_checked()
    assert "adaptive bins" in page.evaluate(MAIN_TEXT)


def test_a_bad_link_shows_a_note_and_the_defaults(server, page):
    page.goto(f"{server}/Reliability?demo=iris_svc&bins=500&event=Class+9%3A+lotus")
    wait_for_app(page)
    assert_no_exception(page)
    notes = page.locator("[data-testid='stAlertContentInfo']").all_inner_texts()
    assert any("bins=500" in n for n in notes), notes
    assert any("lotus" in n for n in notes), notes
    assert "bins" not in query(page.url) and "event" not in query(page.url)
    label = page.locator("[data-testid='stMetricLabel']").first
    label.wait_for()
    assert "ECE (15 uniform bins)" in label.inner_text()


def test_lab_rank_stability_view_round_trips_through_its_link(server, browser, page):
    page.goto(f"{server}/Lab?demo=digits_gaussian_nb,digits_random_forest")
    wait_for_app(page)
    page.get_by_role("tab", name="Bin-count rank stability").click()
    wait_for_app(page)
    slider_steps(page, "Bin counts", 2)              # 10-50 -> 12-50
    selectbox(page, "Correlations between bin counts of one variant", "uniform · top label · pooled · no threshold · l1")
    round_trip(browser, page, "lab-rank", {"lab_tool": ["Bin-count rank stability"], "lab_rank_bins": ["12", "50"],
                                           "lab_rank_variant": ["uniform · top label · pooled · no threshold · l1"]})


def test_a_bad_lab_link_shows_notes_and_runs_nothing(server, page):
    page.goto(f"{server}/Lab?lab_tool=Crystal+ball&lab_generator=Magic&lab_seed=7")
    wait_for_app(page)
    assert_no_exception(page)
    notes = page.locator("[data-testid='stAlertContentInfo']").all_inner_texts()
    assert any("lab_tool=Crystal ball" in n for n in notes), notes
    assert any("lab_generator=Magic" in n for n in notes), notes
    assert page.get_by_role("tab", name="Simulation lab").get_attribute("aria-selected") == "true"
    assert query(link_box(page))["lab_seed"] == ["7"]
    assert any("press Run" in n for n in notes), "the link fills in the settings; the run waits for its button"
