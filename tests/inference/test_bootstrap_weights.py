"""bootstrap_ci / bootstrap_metrics with sample_weight: resample rows, carry their weights (issue 28)."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.inference.bootstrap import bootstrap_metrics, resampled_metrics
from calib_core.metrics.registry import metric_function
from calib_core.validation import CalibrationInputError


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), n)
    labels = rng.integers(0, 3, n)
    weights = rng.integers(0, 4, n).astype(float)
    weights[0] = 1.0
    return probs, labels, weights


@pytest.mark.parametrize("metric", [cc.ece, cc.brier_score, cc.ks_error, metric_function("ace", n_bins=5),
                                    metric_function("skce")])
def test_estimate_is_the_weighted_metric(metric):
    probs, labels, weights = _data()
    result = cc.bootstrap_ci(metric, probs, labels, n_boot=20, seed=1, sample_weight=weights)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    declared = cc.metrics.registry.declared_metric(metric)
    assert result.estimate == pytest.approx(declared(probs[rows], labels[rows]), rel=1e-9, abs=1e-12)
    assert np.isfinite(result.samples).all()


def test_resamples_carry_their_weights():
    """Resample b's value is the metric of the drawn rows repeated by their weights."""
    probs, labels, weights = _data()
    samples = resampled_metrics({"ece": cc.ece}, probs, labels, n_boot=5, seed=3, sample_weight=weights)["ece"]
    keep = weights > 0
    p, y, w = probs[keep], labels[keep], weights[keep]
    draws = next(cc.inference.resample.index_blocks(np.random.default_rng(3), y.size, 5))[2]
    for value, rows in zip(samples, draws):
        repeated = np.repeat(rows, w[rows].astype(int))
        assert value == pytest.approx(cc.ece(p[repeated], y[repeated]), rel=1e-9, abs=1e-12)


def test_unit_weights_give_the_unweighted_interval():
    probs, labels, _ = _data()
    plain = bootstrap_metrics({"ece": cc.ece, "nll": cc.nll}, probs, labels, n_boot=30, seed=2)
    weighted = bootstrap_metrics({"ece": cc.ece, "nll": cc.nll}, probs, labels, n_boot=30, seed=2,
                                 sample_weight=np.ones(labels.size))
    for name in plain:
        np.testing.assert_allclose(weighted[name].samples, plain[name].samples, rtol=1e-9, atol=1e-12)
        assert weighted[name].estimate == pytest.approx(plain[name].estimate, rel=1e-12)


def test_a_metric_without_weights_is_refused():
    probs, labels, weights = _data()
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        cc.bootstrap_ci(lambda p, y: cc.ece(p, y), probs, labels, n_boot=5, sample_weight=weights)
