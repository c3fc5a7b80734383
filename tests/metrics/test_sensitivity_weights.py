"""bin_sensitivity with sample_weight (issue 28): integer weights are the repeated rows, other weights give the
weighted metric functions' values, weights of 1 change nothing, bad weights are refused."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.validation import CalibrationInputError

COUNTS = [1, 2, 3, 7, 15, 40]


def _data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1.5
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    probs = np.round(probs, 2)  # ties, as in real files
    probs = probs / probs.sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(k, p=p) for p in probs])
    return probs, labels, rng.integers(0, 4, n).astype(float)


def test_integer_weights_sweep_the_repeated_rows():
    """Before: bin_sensitivity took no sample_weight (TypeError)."""
    probs, labels, weights = _data()
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=weights)
    repeated = cc.bin_sensitivity(probs[rows], labels[rows], COUNTS)
    assert weighted[["n_bins", "binning", "metric"]].equals(repeated[["n_bins", "binning", "metric"]])
    np.testing.assert_allclose(weighted["value"], repeated["value"], rtol=1e-9, atol=1e-13)
    unweighted = cc.bin_sensitivity(probs, labels, COUNTS)
    assert not np.allclose(weighted["value"], unweighted["value"])


def test_fractional_weights_give_the_weighted_metric_functions():
    probs, labels, weights = _data(seed=1)
    weights = weights * 0.3 + np.random.default_rng(2).uniform(0, 0.2, weights.size)
    table = cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=weights).set_index(["binning", "metric", "n_bins"])
    for n in COUNTS:
        expected = {
            ("uniform", "ece"): cc.ece(probs, labels, n, "uniform", sample_weight=weights),
            ("adaptive", "ece"): cc.ece(probs, labels, n, "adaptive", sample_weight=weights),
            ("uniform", "sce"): cc.sce(probs, labels, n, sample_weight=weights),
            ("adaptive", "sce"): cc.classwise_ece(probs, labels, n, "adaptive", sample_weight=weights),
            ("adaptive", "ace"): cc.ace(probs, labels, n, sample_weight=weights),
            ("adaptive", "tace"): cc.tace(probs, labels, n, sample_weight=weights),
        }
        for (binning, metric), value in expected.items():
            assert table.loc[(binning, metric, n), "value"] == pytest.approx(value, rel=1e-9, abs=1e-13), \
                (binning, metric, n)


def test_weights_of_one_change_nothing_and_zero_drops_a_row():
    probs, labels, weights = _data(seed=3)
    plain = cc.bin_sensitivity(probs, labels, COUNTS)
    ones = cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=np.ones(labels.size))
    np.testing.assert_allclose(ones["value"], plain["value"], rtol=1e-9, atol=1e-13)
    kept = weights > 0
    dropped = cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=kept.astype(float))
    np.testing.assert_allclose(dropped["value"], cc.bin_sensitivity(probs[kept], labels[kept], COUNTS)["value"],
                               rtol=1e-9, atol=1e-13)


def test_bad_weights_are_refused():
    probs, labels, weights = _data(n=50)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=-weights - 1)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=weights[1:])
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        cc.bin_sensitivity(probs, labels, COUNTS, sample_weight=np.zeros(labels.size))
