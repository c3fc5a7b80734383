"""Tests for calib_core.metrics.debiased: Kumar et al.'s debiased l2 ECE and Roelofs et al.'s monotone sweep."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.metrics.debiased import debiased_ece, debiased_squared_terms, ece_sweep, ece_sweep_details
from calib_core.lab.generators import LogisticModel, binned_truth, futami_logistic

TINY = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
TINY_LABELS = np.array([0, 1, 1, 1])


def test_debiased_hand_computed():
    # One bin: confidences 0.9, 0.8, 0.7, 0.6 (mean 0.75), correct 1, 0, 1, 1 (accuracy 0.75).
    assert debiased_ece(TINY, TINY_LABELS, n_bins=1, squared=True) == pytest.approx(0.0 - 0.75 * 0.25 / 3)
    assert debiased_ece(TINY, TINY_LABELS, n_bins=1) == 0.0
    # Two equal-mass bins: {0.6, 0.7} conf 0.65 acc 1 -> 0.35^2 - 0;  {0.8, 0.9} conf 0.85 acc 0.5 -> 0.35^2 - 0.25
    expected = 0.5 * 0.35**2 + 0.5 * (0.35**2 - 0.25)
    assert debiased_ece(TINY, TINY_LABELS, n_bins=2, squared=True) == pytest.approx(expected)
    # Bins with a single prediction contribute nothing.
    assert debiased_ece(TINY, TINY_LABELS, n_bins=4, squared=True) == 0.0


def test_debiased_equals_plug_in_minus_the_accuracy_variance():
    rng = np.random.default_rng(0)
    probs = cc.softmax(rng.normal(size=(500, 3)) * 2)
    labels = rng.integers(0, 3, 500)
    confidence, correct = cc.top_label(probs, labels)
    stats = cc.bin_statistics(confidence, correct, 10, "uniform")
    plug_in = cc.ece(probs, labels, n_bins=10, norm="l2") ** 2
    acc = stats.mean_target
    variance = np.nansum(np.where(stats.count >= 2, stats.count * acc * (1 - acc) / (stats.count - 1), 0)) / 500
    assert debiased_ece(probs, labels, n_bins=10, binning="uniform", squared=True) == pytest.approx(
        plug_in - variance, abs=1e-12)


def test_debiased_is_unbiased_for_the_binned_squared_error_where_the_plug_in_is_not():
    """Kumar et al. section 5: E[debiased^2] = binned CE^2, while the plug-in RMSCE^2 is biased upwards."""
    model = futami_logistic("less_calibrated")
    truth_sq = binned_truth(model, 10, "uniform", norm="l2") ** 2
    probs, labels = model.sample_batch(300, 400, 5)
    debiased = np.array([debiased_ece(p, y, n_bins=10, binning="uniform", squared=True) for p, y in zip(probs, labels)])
    plug_in = np.array([cc.ece(p, y, n_bins=10, norm="l2") ** 2 for p, y in zip(probs, labels)])
    error = debiased.std() / np.sqrt(len(debiased))
    assert abs(debiased.mean() - truth_sq) < 4 * error
    assert plug_in.mean() - truth_sq > 10 * error


def test_debiased_squared_terms_on_stacked_sums():
    count = np.array([[3.0, 1.0], [0.0, 4.0]])
    sum_value = np.array([[2.1, 0.9], [0.0, 2.0]])
    sum_target = np.array([[2.0, 1.0], [0.0, 3.0]])
    first = 3 / 4 * ((0.7 - 2 / 3) ** 2 - (2 / 3) * (1 / 3) / 2)
    second = 4 / 4 * ((0.5 - 0.75) ** 2 - 0.75 * 0.25 / 3)
    np.testing.assert_allclose(debiased_squared_terms(count, sum_value, sum_target, 4.0), [first, second])


def test_sweep_equals_ece_at_the_chosen_bin_count_and_is_monotone_there():
    for seed in range(4):
        rng = np.random.default_rng(seed)
        probs = cc.softmax(rng.normal(size=(3000, 4)) * 2)
        labels = (np.cumsum(probs, axis=1) < rng.random(3000)[:, None]).sum(axis=1)
        for binning in ("adaptive", "uniform"):
            result = ece_sweep_details(probs, labels, binning=binning)
            assert result.stopped_by == "monotonicity"
            assert result.value == pytest.approx(cc.ece(probs, labels, n_bins=result.n_bins, binning=binning),
                                                  abs=1e-12)
            confidence, correct = cc.top_label(probs, labels)
            accuracy = cc.bin_statistics(confidence, correct, result.n_bins, binning).mean_target
            accuracy = accuracy[np.isfinite(accuracy)]
            assert np.all(np.diff(accuracy) >= 0)
            following = cc.bin_statistics(confidence, correct, result.n_bins + 1, binning).mean_target
            following = following[np.isfinite(following)]
            assert np.any(np.diff(following) < 0)
    assert ece_sweep(probs, labels, norm="l2") == pytest.approx(
        cc.ece(probs, labels, n_bins=ece_sweep_details(probs, labels, norm="l2").n_bins, binning="adaptive",
               norm="l2"))


def test_sweep_stops_at_the_finest_partition_and_at_max_bins():
    constant = np.full((1000, 2), 0.5)
    labels = np.random.default_rng(1).integers(0, 2, 1000)
    result = ece_sweep_details(constant, labels)
    assert (result.n_bins, result.stopped_by) == (1, "finest")
    assert result.value == pytest.approx(abs(0.5 - np.mean(labels == 0)))
    # Perfectly separated and sorted: accuracy stays monotone for every bin count, so max_bins ends it.
    scores = np.linspace(0.51, 0.99, 200)
    probs = np.column_stack([1 - scores, scores])
    labels = (scores > 0.75).astype(int)
    capped = ece_sweep_details(probs, labels, max_bins=7)
    assert (capped.n_bins, capped.stopped_by) == (7, "max_bins")


def test_sweep_reduces_the_bias_of_the_ece_on_a_calibrated_model():
    """Roelofs et al.: fewer, data-chosen bins give a smaller upward bias than 15 fixed bins."""
    probs, labels = LogisticModel(0.0, -2.0).sample_batch(500, 60, 2)
    sweep = np.mean([ece_sweep(p, y) for p, y in zip(probs, labels)])
    fixed = np.mean([cc.ece(p, y, n_bins=15, binning="adaptive") for p, y in zip(probs, labels)])
    assert sweep < 0.8 * fixed


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.integers(0, 10_000))
def test_sweep_is_row_order_free_and_bounded(n, seed):
    rng = np.random.default_rng(seed)
    probs = cc.softmax(np.round(rng.normal(size=(n, 3)), 1))  # rounding creates ties
    labels = rng.integers(0, 3, n)
    value = ece_sweep(probs, labels)
    permutation = rng.permutation(n)
    assert ece_sweep(probs[permutation], labels[permutation]) == pytest.approx(value, abs=1e-12)
    assert 0.0 <= value <= 1.0
    squared = debiased_ece(probs, labels, n_bins=5, squared=True)
    assert debiased_ece(probs[permutation], labels[permutation], n_bins=5, squared=True) == pytest.approx(squared)


@pytest.mark.parametrize("call, match", [
    (lambda: debiased_ece(TINY, TINY_LABELS, n_bins=0), "`n_bins` must be >= 1"),
    (lambda: debiased_ece(TINY, TINY_LABELS, binning="even"), "`binning` must be"),
    (lambda: debiased_ece(TINY, TINY_LABELS, squared="yes"), "`squared` must be True or False"),
    (lambda: debiased_ece(TINY[:, :1], TINY_LABELS), "at least 2 columns"),
    (lambda: ece_sweep(TINY, TINY_LABELS, norm="max"), "`norm` must be one of"),
    (lambda: ece_sweep(TINY, TINY_LABELS, binning="even"), "`binning` must be"),
    (lambda: ece_sweep(TINY, TINY_LABELS, max_bins=0), "`max_bins` must be a whole number >= 1"),
    (lambda: ece_sweep(TINY, [0, 1, 2, 1]), "must lie in 0..1"),
])
def test_validation(call, match):
    with pytest.raises(CalibrationInputError, match=match):
        call()
