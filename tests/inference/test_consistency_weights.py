"""Consistency resampling with row weights (issue 28): labels drawn per row, weighted statistics."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import calib_core as cc
from calib_core.inference import CanonicalCE, consistency_resampling, sample_labels
from calib_core.validation import CalibrationInputError


def _data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = sample_labels(probs ** 2 / (probs ** 2).sum(1, keepdims=True), seed=seed + 1)[0]
    weights = rng.integers(0, 4, size=n).astype(float)
    return probs, labels, weights


@pytest.mark.parametrize("options", [dict(n_bins=4), dict(lens="max", n_bins=10), dict(lens="marginal", class_index=1),
                                     dict(partition="data_dependent", min_bin_size=40, distance="sq_euclidean")])
def test_integer_weights_observed_equals_repeated_rows(options):
    probs, labels, weights = _data()
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    result = consistency_resampling(probs, labels, CanonicalCE(**options), 20, 0, sample_weight=weights)
    assert result.observed == pytest.approx(cc.canonical_ce(probs[repeated], labels[repeated], **options), abs=1e-12)
    assert result.observed == pytest.approx(cc.canonical_ce(probs, labels, **options, sample_weight=weights), abs=1e-12)


def test_weighted_draws_are_the_weighted_statistic_of_each_draw():
    probs, labels, weights = _data(n=120)
    estimator = CanonicalCE(n_bins=3)
    result = consistency_resampling(probs, labels, estimator, 15, 3, sample_weight=weights)
    keep = weights > 0
    draws = sample_labels(probs[keep], 15, seed=3)  # the same stream: one label per kept row and draw
    each = [estimator(probs[keep], d, sample_weight=weights[keep]) for d in draws]
    np.testing.assert_allclose(result.resampled, each, atol=1e-12)
    # The generic path (an estimator without a batched evaluator) gives the same values.
    generic = consistency_resampling(probs, labels, lambda p, y, sample_weight=None: estimator(p, y, sample_weight),
                                     15, 3, sample_weight=weights)
    np.testing.assert_allclose(generic.resampled, result.resampled, atol=1e-12)


def test_weights_change_the_numbers_and_unit_weights_do_not():
    probs, labels, weights = _data()
    plain = consistency_resampling(probs, labels, CanonicalCE(n_bins=4), 30, 1)
    ones = consistency_resampling(probs, labels, CanonicalCE(n_bins=4), 30, 1, sample_weight=np.ones(labels.size))
    weighted = consistency_resampling(probs, labels, CanonicalCE(n_bins=4), 30, 1, sample_weight=weights + 0.5)
    assert ones.observed == pytest.approx(plain.observed, abs=1e-12)
    np.testing.assert_allclose(ones.resampled, plain.resampled, atol=1e-12)
    assert weighted.observed != pytest.approx(plain.observed, abs=1e-6)


def test_weighted_ece_estimator_and_refusals():
    probs, labels, weights = _data(n=100, k=2)
    ece = functools.partial(cc.ece, n_bins=5)
    result = consistency_resampling(probs, labels, ece, 5, 0, sample_weight=weights)
    assert result.observed == pytest.approx(cc.ece(probs, labels, n_bins=5, sample_weight=weights))
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        consistency_resampling(probs, labels, lambda p, y: 0.0, 5, 0, sample_weight=weights)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        consistency_resampling(probs, labels, ece, 5, 0, sample_weight=weights[:-1])
