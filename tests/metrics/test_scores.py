"""Tests for calib_core.metrics.scores: Brier, NLL, KS against scikit-learn and by hand."""
import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

import calib_core as cc


def test_brier_matches_sklearn_multiclass():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=300)
    labels = rng.integers(0, 4, size=300)
    onehot = np.eye(4)[labels]
    assert cc.brier_score(probs, labels) == pytest.approx(((probs - onehot) ** 2).sum(1).mean(), rel=1e-12)
    # scikit-learn's multi-class brier_score_loss has the same [0, 2] scale
    assert cc.brier_score(probs, labels) == pytest.approx(brier_score_loss(labels, probs, labels=[0, 1, 2, 3]), rel=1e-12)


def test_nll_matches_sklearn_and_clips_only_inside_log():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), size=200)
    labels = rng.integers(0, 3, size=200)
    assert cc.nll(probs, labels) == pytest.approx(log_loss(labels, probs), rel=1e-12)
    assert cc.nll([[1.0, 0.0]], [1]) == pytest.approx(-np.log(1e-12))


def test_ks_error_by_hand():
    # confidences sorted: 0.6 (wrong), 0.7 (ok), 0.9 (ok); cumulative diffs: 0.6, 0.3, 0.2 -> max 0.6 / 3
    probs = np.array([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]])
    labels = np.array([0, 1, 1])
    assert cc.ks_error(probs, labels) == pytest.approx(0.2)


def test_ks_error_matches_reference_without_ties():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(5), size=500)
    labels = rng.integers(0, 5, size=500)
    confidence = probs.max(1)
    correct = (probs.argmax(1) == labels).astype(float)
    order = np.argsort(confidence)
    reference = np.abs(np.cumsum(confidence[order]) / 500 - np.cumsum(correct[order]) / 500).max()
    assert cc.ks_error(probs, labels) == pytest.approx(reference, rel=1e-12)


def test_ks_error_ignores_order_within_ties():
    probs = np.array([[0.7, 0.3]] * 4)
    assert cc.ks_error(probs, [0, 0, 1, 1]) == cc.ks_error(probs, [1, 1, 0, 0]) == pytest.approx(0.2)


def test_perfect_predictions_have_zero_brier_and_ks():
    probs = np.eye(3)[[0, 1, 2, 1]]
    assert cc.brier_score(probs, [0, 1, 2, 1]) == 0.0
    assert cc.ks_error(probs, [0, 1, 2, 1]) == 0.0
