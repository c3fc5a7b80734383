"""Every invariant, once, over the registry of all metrics (calib_core.registry.METRICS)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core.registry import METRICS, compute_metrics, get_metric, metric_function

KEYS = [spec.key for spec in METRICS]


def predictions(seed, n, k, temperature=1.0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    truth = np.exp(logits / temperature) / np.exp(logits / temperature).sum(1, keepdims=True)
    labels = np.minimum((truth.cumsum(1) < rng.uniform(size=(n, 1))).sum(1), k - 1)
    return probs, labels


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), k=st.integers(2, 4))
@pytest.mark.parametrize("key", KEYS)
def test_every_metric_is_finite_non_negative_and_ignores_row_order(key, seed, n, k):
    probs, labels = predictions(seed, n, k)
    spec = get_metric(key)
    value = spec.compute(probs, labels, 10, "uniform")
    assert np.isfinite(value) and (value >= 0 or spec.signed)
    perm = np.random.default_rng(seed).permutation(n)
    assert spec.compute(probs[perm], labels[perm], 10, "uniform") == pytest.approx(value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("key", [spec.key for spec in METRICS if spec.calibration_error])
def test_every_calibration_error_is_small_for_calibrated_data_and_larger_when_miscalibrated(key):
    spec = get_metric(key)
    n = 3000 if spec.quadratic else 40_000
    calibrated = spec.compute(*predictions(0, n, 3), 10, "uniform")
    miscalibrated = spec.compute(*predictions(0, n, 3, temperature=3.0), 10, "uniform")
    assert miscalibrated > calibrated
    assert miscalibrated > 2 * calibrated or spec.key == "mce"


@pytest.mark.parametrize("key", KEYS)
def test_every_metric_rejects_invalid_predictions(key):
    with pytest.raises(cc.CalibrationInputError, match="sum to 1"):
        get_metric(key).compute(np.array([[0.5, 0.6]]), np.array([0]), 10, "uniform")


def test_compute_metrics_and_metric_function_agree_with_the_functions():
    probs, labels = predictions(1, 500, 4)
    values = compute_metrics(probs, labels, n_bins=10, binning="adaptive")
    assert values["ece"] == cc.ece(probs, labels, n_bins=10, binning="adaptive")
    assert values["ace"] == cc.ace(probs, labels, n_bins=10)
    assert metric_function("sce", n_bins=7)(probs, labels) == cc.sce(probs, labels, n_bins=7)


def test_unknown_metric_lists_the_known_ones():
    with pytest.raises(cc.CalibrationInputError, match="known metrics: accuracy, ece"):
        get_metric("brierr")


def test_every_metric_has_notes():
    for spec in METRICS:
        assert spec.summary.endswith(".") and spec.pitfalls.endswith(".")
