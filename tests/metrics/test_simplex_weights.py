"""simplex_reliability(sample_weight=) (issue 28): per-cell weighted counts, mean predictions and label
frequencies; integer weights give exactly the repeated rows' diagram, for both partitions."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.metrics.partitions import data_dependent_partition


def _data(n: int = 120, k: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), n)
    labels = rng.integers(0, k, n)
    weights = rng.integers(0, 4, n).astype(float)
    weights[0] = 3.0
    return probs, labels, weights


def _assert_same(weighted, repeated):
    a, b = weighted.table, repeated.table
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_allclose(a.mean_prediction, b.mean_prediction, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.observed_frequency, b.observed_frequency, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.deviation, b.deviation, rtol=0, atol=1e-12)
    assert a.estimate == pytest.approx(b.estimate, abs=1e-12)
    assert a.n_total == b.n_total
    np.testing.assert_array_equal(a.partition.keys if a.partition.keys is not None else 0,
                                  b.partition.keys if b.partition.keys is not None else 0)


@pytest.mark.parametrize("partition", ["uniform", "data_dependent"])
@pytest.mark.parametrize("vertices", [{}, {"classes": (0, 2, 3)}, {"groups": ((1,), (0, 3), (2,))}])
def test_integer_weights_equal_repeated_rows(partition, vertices):
    probs, labels, w = _data()
    options = dict(partition=partition, n_bins=4, min_bin_size=15, distance="sq_euclidean", **vertices)
    weighted = cc.simplex_reliability(probs, labels, sample_weight=w, **options)
    repeat = w.astype(int)
    repeated = cc.simplex_reliability(np.repeat(probs, repeat, 0), np.repeat(labels, repeat), **options)
    _assert_same(weighted, repeated)
    # the view keeps the rows of positive weight, each with its weight
    kept = weighted.projection.kept
    assert not kept[w == 0].any()
    np.testing.assert_array_equal(weighted.projection.weights, w[kept])
    assert repeated.projection.weights is None


def test_unit_weights_change_nothing_and_weights_move_the_estimate():
    probs, labels, w = _data(seed=1)
    plain = cc.simplex_reliability(probs, labels, n_bins=3)
    ones = cc.simplex_reliability(probs, labels, n_bins=3, sample_weight=np.ones(len(labels)))
    np.testing.assert_allclose(ones.table.observed_frequency, plain.table.observed_frequency, atol=1e-15)
    assert ones.table.estimate == pytest.approx(plain.table.estimate, abs=1e-15)
    fractional = cc.simplex_reliability(probs, labels, n_bins=3, sample_weight=w + 0.25)
    assert fractional.table.count.sum() == pytest.approx((w + 0.25).sum())
    assert fractional.table.estimate != pytest.approx(plain.table.estimate)


def test_weighted_cell_hand_computed():
    # one cell: weighted mean prediction and weighted label frequency
    rel = cc.simplex_reliability([[0.2, 0.3, 0.5], [0.4, 0.4, 0.2]], [2, 0], n_bins=1, sample_weight=[3.0, 1.0])
    np.testing.assert_allclose(rel.table.mean_prediction, [[0.25, 0.325, 0.425]])
    np.testing.assert_allclose(rel.table.observed_frequency, [[0.25, 0.0, 0.75]])
    assert rel.table.count.tolist() == [4.0] and rel.table.n_total == 4.0


def test_data_dependent_partition_weighted_counts_split():
    points = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9]]
    assert data_dependent_partition(points, 4).n_cells == 1
    assert data_dependent_partition(points, 4, sample_weight=[2, 1, 1, 1]).n_cells == 2


@pytest.mark.parametrize("bad, match", [([1.0, -1.0], ">= 0"), ([1.0], "shape"), ([0.0, 0.0], "sums to 0")])
def test_bad_weights_raise(bad, match):
    with pytest.raises(cc.CalibrationInputError, match=match):
        cc.simplex_reliability([[0.2, 0.3, 0.5], [0.4, 0.4, 0.2]], [2, 0], sample_weight=bad)
