"""by_group and metric_interval with sample_weight (issue 28): integer weights are repeated rows."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.inference.intervals import metric_interval
from calib_core.validation import CalibrationInputError


def _data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    groups = np.where(rng.uniform(size=n) < 0.5, "a", "b")
    labels = (rng.uniform(size=n) < np.where(groups == "a", p, p ** 2)).astype(int)
    weights = rng.integers(0, 4, n).astype(float)
    return cc.as_probs(p), labels, groups, weights


@pytest.mark.parametrize("metric", ["ece", "brier", cc.ece, cc.nll])
def test_group_values_are_those_of_the_repeated_rows(metric):
    probs, labels, groups, weights = _data()
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = cc.by_group(metric, probs, labels, groups, n_boot=0, sample_weight=weights)
    repeated = cc.by_group(metric, probs[rows], labels[rows], groups[rows], n_boot=0)
    np.testing.assert_allclose(weighted.table["value"], repeated.table["value"], rtol=1e-9)
    assert weighted.table["n"].tolist() == repeated.table["n"].tolist()
    assert weighted.overall == pytest.approx(repeated.overall, rel=1e-9)
    assert weighted.worst_group == repeated.worst_group


def test_group_intervals_carry_the_weights():
    probs, labels, groups, weights = _data()
    result = cc.by_group("ece", probs, labels, groups, n_boot=30, seed=1, sample_weight=weights)
    assert np.isfinite(result.table[["ci_low", "ci_high"]].to_numpy()).all()
    assert np.isfinite([result.overall_low, result.gap_low]).all()
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        cc.by_group(lambda p, y: cc.ece(p, y), probs, labels, groups, n_boot=0, sample_weight=weights)


def test_metric_interval_estimate_is_weighted():
    probs, labels, _, weights = _data()
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    for key in ("ece", "nll", "skce_block"):
        weighted = metric_interval(key, probs, labels, n_boot=20, sample_weight=weights)
        assert weighted.estimate == pytest.approx(cc.metric_value(key, probs[rows], labels[rows]), rel=1e-9)
        assert weighted.low <= weighted.estimate <= weighted.high


@pytest.mark.parametrize("method", ["consistency", "hosmer_lemeshow", "spiegelhalter", "skce"])
def test_calibration_test_of_integer_weights_is_that_of_the_repeated_rows(method):
    probs, labels, _, weights = _data(n=120, seed=4)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    options = {"seed": 0, "n_resamples": 50} if method in ("consistency", "skce") else {}
    weighted = cc.calibration_test(probs, labels, method, sample_weight=weights, **options)
    repeated = cc.calibration_test(probs[rows], labels[rows], method, **options)
    assert weighted.p_value == pytest.approx(repeated.p_value, rel=1e-12)
    assert weighted.verdict == repeated.verdict and weighted.n_samples == repeated.n_samples


def test_calibration_test_refuses_fractional_weights():
    probs, labels, _, weights = _data()
    with pytest.raises(CalibrationInputError, match="whole numbers"):
        cc.calibration_test(probs, labels, "spiegelhalter", sample_weight=weights + 0.5)


@pytest.mark.parametrize("test", [cc.hosmer_lemeshow, cc.spiegelhalter_z])
def test_binary_tests_of_integer_weights(test):
    probs, labels, _, weights = _data(seed=5)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    p1 = probs[:, 1]
    np.testing.assert_allclose(test(p1, labels, sample_weight=weights), test(p1[rows], labels[rows]))


@pytest.mark.parametrize("target", ["top_label", 1])
def test_group_reliability_of_integer_weights_is_that_of_the_repeated_rows(target):
    """Before: group_reliability took no sample_weight (the Groups page drew unweighted diagrams)."""
    probs, labels, groups, weights = _data(seed=6)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = cc.group_reliability(probs, labels, groups, n_bins=8, target=target, sample_weight=weights)
    repeated = cc.group_reliability(probs[rows], labels[rows], groups[rows], n_bins=8, target=target)
    assert weighted["group"].tolist() == repeated["group"].tolist()
    assert weighted["count"].tolist() == repeated["count"].tolist()
    for column in ("confidence", "accuracy", "gap", "weight", "ci_low", "ci_high"):
        np.testing.assert_allclose(weighted[column], repeated[column], rtol=1e-12, atol=1e-15)
    unweighted = cc.group_reliability(probs, labels, groups, n_bins=8, target=target)
    assert weighted["count"].tolist() != unweighted["count"].tolist()


def test_group_reliability_of_fractional_weights_gives_each_groups_weighted_ece():
    probs, labels, groups, weights = _data(seed=7)
    weights = weights * 0.37 + 0.05
    table = cc.group_reliability(probs, labels, groups, n_bins=10, sample_weight=weights)
    for name, part in table.groupby("group"):
        mask = groups == name
        assert part["count"].sum() == pytest.approx(weights[mask].sum(), rel=1e-12)
        ece = float((part["weight"] * part["gap"].abs()).sum())
        assert ece == pytest.approx(cc.ece(probs[mask], labels[mask], n_bins=10, sample_weight=weights[mask]),
                                    abs=1e-12)
    multi = cc.multicalibration(probs, labels, groups, n_bins=10, min_count=0, sample_weight=weights)
    cell = table[(table["group"] == multi.group) & (table["bin"] == multi.bin)]
    assert multi.count == pytest.approx(float(cell["count"].iloc[0]), rel=1e-12)


def test_multicalibration_of_integer_weights_is_that_of_the_repeated_rows():
    probs, labels, groups, weights = _data(n=400, seed=8)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = cc.multicalibration(probs, labels, groups, n_bins=6, target=1, min_count=20, sample_weight=weights)
    repeated = cc.multicalibration(probs[rows], labels[rows], groups[rows], n_bins=6, target=1, min_count=20)
    assert (weighted.group, weighted.bin, weighted.count) == (repeated.group, repeated.bin, repeated.count)
    assert (weighted.n_cells, weighted.n_cells_used) == (repeated.n_cells, repeated.n_cells_used)
    assert weighted.max_gap == pytest.approx(repeated.max_gap, rel=1e-12)


@pytest.mark.parametrize("function", [cc.group_reliability, cc.multicalibration])
def test_group_reliability_weights_are_validated(function):
    probs, labels, groups, weights = _data(n=60)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        function(probs, labels, groups, sample_weight=-weights - 1)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        function(probs, labels, groups, sample_weight=weights[:-1])
