"""compare_systems / paired_metric with sample_weight (issue 28): one weight per item shared by every system;
integer weights give the repeated items' values, unit weights the unweighted comparison."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.recalibration.paired import compare_systems, paired_metric

N = 300


def _systems(seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.5, 1.0, N)
    y = (rng.uniform(size=N) < c).astype(int)
    honest = np.column_stack([1 - c, c])
    over = np.column_stack([1 - np.sqrt(c), np.sqrt(c)])
    weights = rng.integers(0, 4, N).astype(float)
    weights[0] = 2.0
    return [honest, over], np.stack([y, y]), weights


def test_integer_weights_give_the_repeated_items_values():
    probs, labels, w = _systems()
    found = compare_systems(probs, labels, names=["honest", "over"], keys=["conf_ece", "conf_brier"],
                            kind="confidence", n_boot=20, sample_weight=w)
    r = w.astype(int)
    repeated = compare_systems([np.repeat(p, r, 0) for p in probs], np.repeat(labels, r, axis=1),
                               names=["honest", "over"], keys=["conf_ece", "conf_brier"], kind="confidence",
                               n_boot=20)
    for mine, theirs in zip(found.metrics, repeated.metrics):
        np.testing.assert_allclose(mine.estimates, theirs.estimates, rtol=0, atol=1e-12)
    plain = compare_systems(probs, labels, names=["honest", "over"], keys=["conf_ece"], kind="confidence", n_boot=20)
    assert not np.allclose(found.metrics[0].estimates, plain.metrics[0].estimates)


def test_unit_weights_give_the_unweighted_comparison_and_the_draws_are_paired():
    probs, labels, _ = _systems(1)
    plain = paired_metric("conf_brier", probs, labels, n_boot=30)
    ones = paired_metric("conf_brier", probs, labels, n_boot=30, sample_weight=np.ones(N))
    np.testing.assert_allclose(ones.estimates, plain.estimates, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ones.samples, plain.samples, rtol=0, atol=1e-12)
    # the same rows in resample b for both systems: a system compared with itself differs by exactly 0
    same = paired_metric("conf_brier", [probs[0], probs[0]], labels, n_boot=30, sample_weight=_systems()[2])
    assert np.array_equal(same.samples[0], same.samples[1])


def test_fractional_weights_refused_by_a_repeated_rows_metric():
    probs, labels, w = _systems()
    with pytest.raises(cc.CalibrationInputError, match="whole numbers"):
        compare_systems(probs, labels, names=["a", "b"], keys=["conf_aurc"], kind="confidence", n_boot=5,
                        sample_weight=w + 0.5)
