"""Contract of the names issue 28's surface adds (CalibratedModel.fit's weights, the unlabelled reader, the
report's deployment and decision sections): names and signatures other code and hidden checks call."""
from __future__ import annotations

import inspect

import numpy as np

import calib_core as cc
from calib_core import io as cio
from calib_core.engines import decisions_report


def test_calibrated_model_fit_takes_sample_weight():
    parameters = inspect.signature(cc.CalibratedModel.fit).parameters
    assert list(parameters)[:4] == ["self", "x", "y", "sample_weight"] and parameters["sample_weight"].default is None


def test_load_unlabelled_is_exported_and_reads_class_columns_in_class_order():
    assert "load_unlabelled" in cio.__all__ and "UnlabelledPredictions" in cio.__all__
    found = cio.load_unlabelled(b"p_b,p_a,label\n0.25,0.75,a\n0.5,0.5,b\n", ["a", "b"], name="d.csv")
    np.testing.assert_allclose(found.probs, [[0.75, 0.25], [0.5, 0.5]])
    assert found.columns == ("p_a", "p_b") and found.ignored_labels == ("label",) and found.n_samples == 2


def test_decisions_report_exports():
    for name in ("deployment_report", "deployment_json", "decision_report", "decision_json", "read_cost_matrix"):
        assert name in decisions_report.__all__ and callable(getattr(decisions_report, name))
