"""The smoothed reliability curve as drawn (calib_core/plot/figures_estimators.py; issue 23 item 8).

The smoothed accuracy ``t + r(t) / density(t)`` is an estimate of a
probability that leaves [0, 1] near the ends of the data and far below 0
where no prediction falls (below 0.51 on digits_gaussian_nb); no figure may
draw it outside [0, 1] or outside the range of the confidences.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import load_demo
from calib_core.plot import figures
from calib_core.plot import figures_estimators as fe

from tests.app_support import trace_array

DEMOS = ("digits_gaussian_nb", "digits_random_forest")


@pytest.fixture(scope="module", params=DEMOS)
def demo(request):
    data = load_demo(request.param)
    curve = cc.smooth_reliability_curve(data.probs, data.labels, n_boot=50, seed=0)
    return request.param, data, curve


def smoothed_traces(spec: dict, name: str) -> list[dict]:
    return [t for t in spec["data"] if str(t.get("name", "")).startswith(f"{name}: {fe.SMOOTH_SUFFIX}")]


def both_figures(name, data, curve) -> list[dict]:
    table = cc.reliability_table(data.probs, data.labels, n_bins=15)
    overlay = fe.add_smooth_overlay(figures.reliability_figure({name: table}), {name: curve})
    return [json.loads(overlay.to_json()), json.loads(fe.smooth_reliability_figure({name: curve}).to_json())]


def test_curve_records_the_range_of_the_confidences(demo):
    _, data, curve = demo
    confidence = data.probs.max(axis=1)
    assert (curve.confidence_min, curve.confidence_max) == (confidence.min(), confidence.max())
    # The raw estimate does leave [0, 1] on these demos: what the figures must not show.
    assert curve.accuracy.min() < 0 or curve.accuracy.max() > 1


def test_smoothed_traces_stay_in_the_unit_square_and_the_data_range(demo):
    name, data, curve = demo
    confidence = data.probs.max(axis=1)
    for spec in both_figures(name, data, curve):
        drawn = smoothed_traces(spec, name)
        assert len(drawn) >= 3, [t.get("name") for t in spec["data"]]
        for trace in drawn:
            x, y = trace_array(trace["x"]), trace_array(trace["y"])
            shown = np.isfinite(y)
            assert shown.any(), trace["name"]
            assert y[shown].min() >= 0.0 and y[shown].max() <= 1.0, trace["name"]
            assert x[shown].min() >= confidence.min() and x[shown].max() <= confidence.max(), trace["name"]


def test_the_figure_says_where_the_curve_is_drawn_and_clipped(demo):
    name, data, curve = demo
    confidence = data.probs.max(axis=1)
    for spec in both_figures(name, data, curve):
        (line,) = [t for t in spec["data"] if t.get("name") == f"{name}: smoothed (smECE {curve.smece:.4f})"]
        template = line["hovertemplate"]
        assert f"{confidence.min():.2f}" in template and f"{confidence.max():.2f}" in template
        assert "drawn at" in template  # the clipped estimate is named in the hover
