"""Tests for calib_core.metrics.reliability."""
import numpy as np
import pytest
from sklearn.calibration import calibration_curve

import calib_core as cc
from calib_core import CalibrationInputError


def binary(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.beta(2, 2, size=n)
    return cc.as_probs(scores), (rng.uniform(size=n) < scores ** 1.5).astype(int)


def test_class_target_matches_sklearn_calibration_curve():
    probs, labels = binary()
    table = cc.reliability_table(probs, labels, n_bins=10, target=1)
    freq, conf = calibration_curve(labels, probs[:, 1], n_bins=10, strategy="uniform")
    np.testing.assert_allclose(table["observed_frequency"], freq, rtol=1e-12)
    np.testing.assert_allclose(table["mean_confidence"], conf, rtol=1e-12)


def test_table_weights_reproduce_ece_and_counts_sum_to_n():
    probs, labels = binary(seed=1)
    for binning in ("uniform", "adaptive"):
        table = cc.reliability_table(probs, labels, n_bins=12, binning=binning)
        assert table["count"].sum() == len(labels)
        assert (table["weight"] * table["gap"].abs()).sum() == pytest.approx(
            cc.ece(probs, labels, n_bins=12, binning=binning))
        assert (table["ci_low"] <= table["observed_frequency"]).all()
        assert (table["observed_frequency"] <= table["ci_high"]).all()


def test_wilson_interval_known_value():
    low, high = cc.wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


def test_empty_bins_are_dropped():
    table = cc.reliability_table([[0.95, 0.05], [0.91, 0.09]], [0, 1], n_bins=10)
    assert table["bin"].tolist() == [9]


@pytest.mark.parametrize("target", [2, -1, "class", True])
def test_bad_target(target):
    with pytest.raises(CalibrationInputError, match="target"):
        cc.reliability_table([[0.5, 0.5]], [0], target=target)
