"""The third round's contract for confidence files (../shared/calib_core_api.md): `load_predictions(...,
kind="confidence")` forces a confidence file, and the names of this work are importable from the package root."""
import numpy as np
import pytest

import calib_core as cc


def test_kind_confidence_is_a_keyword_of_load_predictions():
    data = b"y,conf,is_correct\n1,0.8,yes\n0,0.3,no\n1,0.6,no\n"
    forced = cc.load_predictions(data, name="x.csv", kind="confidence")
    assert forced.kind == "confidence"
    assert forced.confidence.tolist() == [0.8, 0.3, 0.6] and forced.correct.tolist() == [1.0, 0.0, 0.0]
    assert forced.accuracy == pytest.approx(1 / 3)


@pytest.mark.parametrize("name", ["confidence_ece", "confidence_brier", "confidence_nll", "confidence_smooth_ece",
                                  "overconfidence", "brier_decomposition", "pav_calibrated", "load_confidence_models",
                                  "SeveralModelsError", "metrics_of_kind"])
def test_names_are_exported_from_the_root(name):
    assert hasattr(cc, name)


def test_every_model_has_confidence_and_correct():
    classes = cc.Predictions.from_arrays(probs=[[0.6, 0.4], [0.2, 0.8]], labels=[1, 1])
    stated = cc.Predictions.from_confidence([0.6, 0.8], [0, 1])
    for model in (classes, stated):
        assert np.array_equal(model.confidence, [0.6, 0.8]) and np.array_equal(model.correct, [0.0, 1.0])
