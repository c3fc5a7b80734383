"""``calib_core.plot`` draws the figure the page draws (issue 25, item 7): same data, same layout, on the demo.

Each test opens the page in an AppTest at its defaults, takes the Plotly JSON it
sends to the browser, and compares it with the figure ``cc.plot`` returns for the
same model.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import load_demo
from studio.state import DEFAULT_DEMO

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")


def page_chart(page: str, predictions: cc.Predictions, key: str) -> dict:
    at = app_support.open_with_model(page, predictions, timeout=180)
    app_support.assert_clean(at)
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(key) or key in c.proto.id)
    return json.loads(chart.proto.spec)


def assert_same_figure(page_spec: dict, figure) -> None:
    ours = json.loads(figure.to_json())
    assert ours["data"] == page_spec["data"]
    assert ours["layout"] == page_spec["layout"]


@pytest.fixture(scope="module")
def demo() -> cc.Predictions:
    return load_demo(DEFAULT_DEMO)


@pytest.fixture(scope="module")
def three_classes() -> cc.Predictions:
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([2.0, 1.0, 1.0], size=600)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    return cc.Predictions.from_arrays(probs=probs, labels=labels, class_names=["cat", "dog<b>", "5% bird"], name="zoo")


def test_reliability_is_the_reliability_pages_figure(demo):
    spec = page_chart("pages/2_Reliability.py", demo, "reliability_chart")
    assert_same_figure(spec, cc.plot.reliability(demo.probs, demo.labels, n_bins=15, name=demo.name,
                                                 class_names=demo.class_names))


def test_per_class_is_the_per_class_pages_figure(three_classes):
    spec = page_chart("pages/3_Per-class.py", three_classes, "perclass_chart")
    assert_same_figure(spec, cc.plot.per_class(three_classes.probs, three_classes.labels, name=three_classes.name,
                                               class_names=three_classes.class_names))


def test_bin_sensitivity_is_the_bin_sensitivity_pages_figure(three_classes):
    spec = page_chart("pages/4_Bin_sensitivity.py", three_classes, "sensitivity_chart")
    assert_same_figure(spec, cc.plot.bin_sensitivity(three_classes.probs, three_classes.labels,
                                                     name=three_classes.name))


def test_simplex_is_the_simplex_pages_figure(three_classes):
    spec = page_chart("pages/5_Simplex.py", three_classes, "simplex_chart")
    assert_same_figure(spec, cc.plot.simplex(three_classes.probs, three_classes.labels,
                                             class_names=three_classes.class_names))


def test_recalibration_is_the_recalibration_pages_before_after_figure():
    from calib_core.recalibration import TemperatureScaling

    data = load_demo("digits_gaussian_nb")
    at = app_support.open_link("pages/6_Recalibration.py", timeout=300, query={"demo": "digits_gaussian_nb"},
                               session_values={"recal_boot": 0})
    app_support.assert_clean(at)
    next(s for s in at.selectbox if s.label == "Method").set_value("Temperature scaling")
    at.run()
    app_support.assert_clean(at)
    spec = json.loads(next(c for c in at.get("plotly_chart") if "recal_reliability" in c.proto.id).proto.spec)
    cal, test = data.split == "calibration", data.split == "test"
    fitted = TemperatureScaling(input="probs").fit(data.probs[cal], data.labels[cal])
    assert_same_figure(spec, cc.plot.recalibration(data.probs[test], fitted, data.labels[test],
                                                   method="Temperature scaling"))
