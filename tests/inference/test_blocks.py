"""Tests for calib_core.inference.blocks: estimates over disjoint random blocks of rows with a t-interval.

Known values: hand-computed t-intervals and numbers recorded from the implementation before it moved out of
``studio/compute_estimators.py`` (issue 13).
"""
from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from scipy import stats

import calib_core as cc
from calib_core.inference.blocks import (BlockEstimate, block_decomposition, block_estimate, block_indices,
                                         block_metric)


def predictions(n: int, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, k - 1)
    return probs, labels


# ----------------------------------------------------------------------------- blocks
def test_block_indices_are_disjoint_sorted_random_blocks():
    blocks = block_indices(1000, 100, 7, seed=3)
    assert len(blocks) == 7 and all(b.size == 100 and np.all(np.diff(b) > 0) for b in blocks)
    assert np.unique(np.concatenate(blocks)).size == 700
    assert not np.array_equal(blocks[0], block_indices(1000, 100, 7, seed=4)[0])
    np.testing.assert_array_equal(block_indices(50, None, 1, seed=0)[0], np.arange(50))


def test_block_indices_are_unchanged():
    blocks = block_indices(5000, 700, 6, 11)
    assert [int(b.sum()) for b in blocks] == [1748932, 1700734, 1729538, 1712076, 1778148, 1767365]
    assert blocks[0][:5].tolist() == [1, 2, 6, 11, 17]


@pytest.mark.parametrize("block_rows, n_blocks", [(300, 4), (10, 0)])
def test_blocks_that_do_not_fit_are_refused(block_rows, n_blocks):
    with pytest.raises(cc.CalibrationInputError, match="do not fit"):
        block_indices(1000, block_rows, n_blocks, seed=0)


# ----------------------------------------------------------------------------- t-interval
def test_block_estimate_is_a_t_interval():
    values = [0.10, 0.12, 0.11, 0.13, 0.09]
    result = block_estimate(values, block_rows=200, n_rows=1000, alpha=0.05)
    se = np.std(values, ddof=1) / np.sqrt(5)
    assert result.value == pytest.approx(0.11) and result.std == pytest.approx(se)
    assert result.high - result.value == pytest.approx(2.7764451051977987 * se)  # t_{0.975, 4}
    assert result.value - result.low == pytest.approx(result.high - result.value)
    assert (result.rows, result.n_blocks, result.block_rows) == (1000, 5, 200) and result.has_interval
    assert result.note == "t-interval over 5 blocks of 200 rows"


def test_one_value_has_no_interval():
    single = block_estimate([0.3], block_rows=None, n_rows=80, alpha=0.05)
    assert single.value == 0.3 and np.isnan(single.low) and np.isnan(single.high) and np.isnan(single.std)
    assert single.rows == 80 and single.n_blocks == 1 and not single.has_interval


def test_block_estimate_numbers_are_unchanged():
    values = np.random.default_rng(0).random(7)
    result = block_estimate(values, block_rows=300, n_rows=5000, alpha=0.1)
    expected = (0.4709873075421746, 0.2044520006299566, 0.7375226144543926, 0.13716447700958379)
    np.testing.assert_allclose([result.value, result.low, result.high, result.std], expected, rtol=1e-13)
    assert result.rows == 2100 and result.note == "t-interval over 7 blocks of 300 rows"


# ----------------------------------------------------------------------------- on data
def test_block_metric_is_the_mean_over_the_same_blocks():
    probs, labels = predictions(1200)
    found = block_metric(cc.brier_score, probs, labels, block_rows=200, n_blocks=5, seed=2, alpha=0.05)
    values = [cc.brier_score(probs[b], labels[b]) for b in block_indices(1200, 200, 5, seed=2)]
    assert isinstance(found, BlockEstimate)
    assert found.value == pytest.approx(np.mean(values), abs=1e-15)
    half = stats.t.ppf(0.975, 4) * np.std(values, ddof=1) / np.sqrt(5)
    assert found.high - found.value == pytest.approx(half)
    assert found.rows == 1000
    whole = block_metric(cc.brier_score, probs, labels, block_rows=None)
    assert whole.value == cc.brier_score(probs, labels) and whole.rows == 1200 and not whole.has_interval


def test_block_metric_validates_its_input():
    with pytest.raises(cc.CalibrationInputError):
        block_metric(cc.brier_score, [[0.5, 0.6]], [0], block_rows=None)


def test_block_decomposition_means_add_up_to_the_mean_score():
    probs, labels = predictions(600)
    whole = block_decomposition(probs, labels, "brier", bandwidth=0.05)
    assert whole == cc.score_decomposition(probs, labels, "brier", bandwidth=0.05)
    blocked = block_decomposition(probs, labels, "log", bandwidth=0.05, block_rows=150, n_blocks=3, seed=1)
    parts = [cc.score_decomposition(probs[b], labels[b], "log", bandwidth=0.05)
             for b in block_indices(600, 150, 3, seed=1)]
    for field in fields(blocked):
        if field.name != "score":
            assert getattr(blocked, field.name) == pytest.approx(np.mean([getattr(p, field.name) for p in parts]))
    assert blocked.score == "log"
    assert blocked.calibration + blocked.refinement == pytest.approx(blocked.empirical_score, abs=1e-12)
