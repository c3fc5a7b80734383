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


@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
def test_reliability_ece_is_the_ece_of_the_table_and_of_the_metric(binning):
    """One home for the number a reliability diagram summarises (issue 24; the page summed the table itself)."""
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(4), size=300)
    labels = rng.integers(0, 4, size=300)
    for target in ("top_label", 0, 3):
        table = cc.reliability_table(probs, labels, 12, binning, target=target)
        value = cc.reliability_ece(probs, labels, 12, binning, target)
        assert value == pytest.approx(float((table["weight"] * table["gap"].abs()).sum()), abs=1e-14)
    assert cc.reliability_ece(probs, labels, 12, binning) == pytest.approx(cc.ece(probs, labels, 12, binning),
                                                                           abs=1e-14)
    terms = cc.classwise_ece(probs, labels, 12, binning, per_class=True)
    assert cc.reliability_ece(probs, labels, 12, binning, 2) == pytest.approx(terms[2], abs=1e-14)
    with pytest.raises(CalibrationInputError, match="target"):
        cc.reliability_ece(probs, labels, 12, binning, 4)


def test_per_class_table_holds_each_class_support_and_metrics():
    probs = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])
    labels = np.array([0, 2, 2, 1])
    table = cc.per_class_table(probs, labels, 2, "adaptive", class_names=["a", "b", "c"])
    assert list(table.columns) == list(cc.metrics.reliability.PER_CLASS_COLUMNS)
    assert table["class"].tolist() == ["a", "b", "c"] and table["support"].tolist() == [1, 1, 2]
    assert table["frequency"].tolist() == [0.25, 0.25, 0.5]
    np.testing.assert_array_equal(table["mean_probability"], probs.mean(axis=0))
    np.testing.assert_array_equal(table["ace"], cc.ace(probs, labels, n_bins=2, per_class=True))
    np.testing.assert_array_equal(table["tace"], cc.tace(probs, labels, n_bins=2, per_class=True))
    np.testing.assert_array_equal(table["classwise_ece"],
                                  cc.classwise_ece(probs, labels, n_bins=2, binning="adaptive", per_class=True))
    assert cc.per_class_table(probs, labels, 2)["class"].tolist() == ["0", "1", "2"]
    with pytest.raises(CalibrationInputError, match="class_names"):
        cc.per_class_table(probs, labels, 2, class_names=["a"])
