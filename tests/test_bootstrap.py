"""Tests for calib_core.bootstrap."""
import functools

import numpy as np
import pytest

import calib_core as cc
from calib_core import CalibrationInputError


def calibrated_binary(n, seed):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n)
    return cc.as_probs(scores), (rng.uniform(size=n) < scores).astype(int)


def test_interval_contains_estimate_and_is_reproducible():
    probs, labels = calibrated_binary(2000, 0)
    first = cc.bootstrap_ci(cc.ece, probs, labels, n_boot=200, seed=3)
    second = cc.bootstrap_ci(cc.ece, probs, labels, n_boot=200, seed=3)
    assert first.low <= first.estimate <= first.high
    assert first.estimate == cc.ece(probs, labels)
    np.testing.assert_array_equal(first.samples, second.samples)
    assert first.samples.shape == (200,)


def test_interval_width_shrinks_like_one_over_sqrt_n():
    small = cc.bootstrap_ci(cc.brier_score, *calibrated_binary(500, 1), n_boot=300, seed=0)
    large = cc.bootstrap_ci(cc.brier_score, *calibrated_binary(8000, 1), n_boot=300, seed=0)
    ratio = (small.high - small.low) / (large.high - large.low)
    assert 2.5 < ratio < 6.5  # sqrt(16) = 4


def test_accuracy_interval_covers_normal_approximation():
    probs, labels = calibrated_binary(4000, 2)
    result = cc.bootstrap_ci(cc.accuracy, probs, labels, n_boot=400, seed=1)
    acc = result.estimate
    assert result.std == pytest.approx(np.sqrt(acc * (1 - acc) / 4000), rel=0.2)


def test_works_with_partial_metrics_and_reports_progress():
    probs, labels = calibrated_binary(300, 3)
    calls = []
    cc.bootstrap_ci(functools.partial(cc.ece, n_bins=5), probs, labels, n_boot=10, seed=0,
                    on_progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (10, 10)


@pytest.mark.parametrize("kwargs, match", [({"n_boot": 1}, "n_boot"), ({"alpha": 1.5}, "alpha")])
def test_option_errors(kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.bootstrap_ci(cc.ece, [[0.5, 0.5]], [0], **kwargs)
