"""Reliability page: consistency bands and lens estimates (issue 3, item 5)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.io import load_demo
from studio.state import DEFAULT_DEMO

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/2_Reliability.py"


def open_reliability() -> AppTest:
    return app_support.open_link(PAGE, timeout=60)


def toggle(at: AppTest, label_start: str):
    return next(t for t in at.toggle if t.label.startswith(label_start))


def band_traces(at: AppTest) -> list[dict]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return [t for t in spec["data"] if "if calibrated" in str(t.get("name", ""))]


def test_bands_are_off_by_default_and_drawn_when_switched_on():
    at = open_reliability()
    assert not at.exception
    assert band_traces(at) == []
    toggle(at, "Consistency bands").set_value(True)
    at.run()
    assert not at.exception and not at.error
    traces = band_traces(at)
    assert len(traces) == 1
    demo = load_demo(DEFAULT_DEMO)
    expected = cc.consistency_bands(demo.probs, demo.labels, n_bins=15, binning="uniform", target="top_label",
                                    n_resamples=200, seed=0)
    y = np.array([np.nan if v is None else v for v in traces[0]["y"]], dtype=float)
    np.testing.assert_allclose(y[0::3], expected.frequency_low)
    np.testing.assert_allclose(y[1::3], expected.frequency_high)
    assert any("outside their consistency band" in c.value for c in at.caption)


def test_lens_estimates_table_lists_every_lens_distance_and_partition():
    at = open_reliability()
    toggle(at, "Canonical / max lens").set_value(True)
    at.run()
    assert not at.exception and not at.error
    frame = at.dataframe[-1].value
    assert len(frame) == 8
    assert set(frame["lens"]) == {"canonical", "max"}
    demo = load_demo(DEFAULT_DEMO)
    row = frame[(frame.lens == "max") & (frame.distance == "tv") & (frame.partition == "uniform")].iloc[0]
    assert row["estimate"] == pytest.approx(cc.canonical_ce(demo.probs, demo.labels, "tv", "uniform", 10, lens="max"))


def test_smoothed_curve_overlay_draws_each_models_curve_with_its_smece():
    at = open_reliability()
    toggle(at, "Smoothed curve").set_value(True)
    at.run()
    assert not at.exception and not at.error
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [str(t.get("name", "")) for t in spec["data"]]
    demo = load_demo(DEFAULT_DEMO)
    smece = cc.smooth_ece(demo.probs, demo.labels)
    assert any(name.startswith(f"{DEFAULT_DEMO}: smoothed") and f"{smece:.4f}" in name for name in names), names


def test_lens_table_shows_calib_core_verdicts():
    """Issue 11 item 2: the canonical lens on a uniform grid of digits_random_forest is inconclusive, not a pass."""
    at = AppTest.from_file(str(app_support.APP), default_timeout=60)
    at.query_params["demo"] = "digits_random_forest"
    at.switch_page(PAGE)
    at.run()
    toggle(at, "Canonical / max lens").set_value(True)
    at.run()
    assert not at.exception and not at.error
    frame = at.dataframe[-1].value
    demo = load_demo("digits_random_forest")
    expected = cc.lens_estimates(demo.probs, demo.labels, n_resamples=200, n_bootstrap=50, seed=0, n_bins=10,
                                 min_bin_size=100)
    for row in expected.rows:
        shown = frame[(frame.lens == row.lens) & (frame.distance == row.distance)
                      & (frame.partition == row.partition)].iloc[0]
        assert (shown["verdict"], shown["verdict_reason"]) == (row.verdict, row.verdict_reason)
    canonical = frame[(frame.lens == "canonical") & (frame.distance == "tv") & (frame.partition == "uniform")].iloc[0]
    assert canonical["verdict"] == "inconclusive"
    assert set(frame["verdict"]) <= set(cc.VERDICTS)
