"""Tests for calib_core.binning: edges, assignment, per-bin sums."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from calib_core import binning
from calib_core import CalibrationInputError, optimal_n_bins
from calib_core.binning import (
    adaptive_upper_edges,
    bin_index,
    bin_statistics,
    classwise_bin_statistics,
    sort_values,
    sorted_pairs,
    uniform_edges,
    upper_edge_index,
)

unit_values = arrays(np.float64, st.integers(1, 60), elements=st.floats(0, 1))


def test_uniform_bins_are_closed_on_the_right_and_first_bin_holds_zero():
    values = np.array([0.0, 0.1, 0.1000001, 0.2, 0.3, 1.0])
    assert bin_index(values, 10).tolist() == [0, 0, 1, 1, 2, 9]


def test_uniform_edges_are_linspace():
    np.testing.assert_array_equal(uniform_edges(4), [0, 0.25, 0.5, 0.75, 1.0])


def test_adaptive_bins_follow_array_split_without_ties():
    values = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.6])
    index = bin_index(values, 3, "adaptive")
    order = np.argsort(values)
    expected = np.empty(7, dtype=int)
    for b, run in enumerate(np.array_split(order, 3)):
        expected[run] = b
    assert index.tolist() == expected.tolist()


def test_adaptive_ties_share_a_bin_and_leave_the_next_empty():
    values = np.array([0.2, 0.2, 0.2, 0.2, 0.9, 0.9])
    stats = bin_statistics(values, np.zeros(6), 3, "adaptive")
    assert stats.count.tolist() == [4, 0, 2]
    assert np.isnan(stats.upper[1])


def test_adaptive_upper_edges_example():
    assert adaptive_upper_edges([0.1, 0.2, 0.3, 0.4, 0.5], 2).tolist() == [0.3, 0.5]
    assert adaptive_upper_edges([0.1, 0.2], 5).tolist() == [0.1, 0.2]


def test_bin_statistics_sums_by_hand():
    stats = bin_statistics([0.05, 0.15, 0.12, 0.95], [0, 1, 0, 1], n_bins=10)
    assert stats.count[:2].tolist() == [1, 2]
    assert stats.sum_value[1] == pytest.approx(0.27)
    assert stats.sum_target.tolist()[:2] == [0, 1]
    assert stats.mean_target[1] == 0.5
    assert np.isnan(stats.gap[5])


@settings(max_examples=60, deadline=None)
@given(values=unit_values, n_bins=st.integers(1, 20), binning=st.sampled_from(["uniform", "adaptive"]))
def test_bin_counts_sum_to_n_and_order_does_not_matter(values, n_bins, binning):
    targets = (values > 0.5).astype(float)
    stats = bin_statistics(values, targets, n_bins, binning)
    assert stats.count.sum() == values.size
    perm = np.random.default_rng(0).permutation(values.size)
    again = bin_statistics(values[perm], targets[perm], n_bins, binning)
    np.testing.assert_array_equal(stats.count, again.count)
    np.testing.assert_allclose(stats.sum_value, again.sum_value, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(values=unit_values, n_bins=st.integers(1, 12))
def test_values_lie_within_their_bin_bounds(values, n_bins):
    for binning in ("uniform", "adaptive"):
        stats = bin_statistics(values, np.zeros(values.size), n_bins, binning)
        index = bin_index(values, n_bins, binning)
        assert np.all(values <= stats.upper[index] + 1e-12)
        assert np.all((values > stats.lower[index]) | (index == 0))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 50), k=st.integers(2, 5), n_bins=st.integers(1, 12),
       binning=st.sampled_from(["uniform", "adaptive"]), threshold=st.sampled_from([None, 0.0, 0.2]))
def test_classwise_statistics_match_one_column_at_a_time(seed, n, k, n_bins, binning, threshold):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k) * 0.5, size=n).round(int(rng.integers(1, 3)))  # many ties
    probs[:, -1] = 1 - probs[:, :-1].sum(axis=1)
    probs = np.abs(probs)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, size=n)
    keep = None if threshold is None else probs > threshold
    stats = classwise_bin_statistics(probs, labels, n_bins, binning, keep=keep)
    for c in range(k):
        mask = np.ones(n, bool) if keep is None else keep[:, c]
        one = bin_statistics(probs[mask, c], (labels[mask] == c), n_bins, binning)
        width = one.count.size
        np.testing.assert_array_equal(stats.count[c, :width], one.count)
        np.testing.assert_allclose(stats.sum_value[c, :width], one.sum_value, atol=1e-12)
        np.testing.assert_array_equal(stats.sum_target[c, :width], one.sum_target)
        assert stats.count[c, width:].sum() == 0


@pytest.mark.parametrize("n, expected", [(1, 2), (100, 10), (1000, 22), (10_000, 48)])
def test_optimal_n_bins_formula(n, expected):
    assert optimal_n_bins(n) == expected
    assert optimal_n_bins(n) == int(np.floor((2 * n * 4 / np.log(2)) ** (1 / 3)))


def test_optimal_n_bins_is_at_least_one():
    assert optimal_n_bins(1, lipschitz=0.0) == 1


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True, None])
def test_n_bins_must_be_a_positive_whole_number(bad):
    with pytest.raises(CalibrationInputError, match="n_bins"):
        bin_index([0.5], bad)


def test_binning_name_is_checked():
    with pytest.raises(CalibrationInputError, match="binning"):
        bin_index([0.5], 3, "quantile")


def test_values_and_targets_must_align():
    with pytest.raises(CalibrationInputError, match="same length"):
        bin_statistics([0.1, 0.2], [1], 3)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_optimal_n_bins_rejects_bad_n(bad):
    with pytest.raises(CalibrationInputError, match="`n`"):
        optimal_n_bins(bad)


def test_classwise_adaptive_keeps_the_last_value_when_ties_empty_trailing_bins():
    probs = np.array([[1, 0], [.7, .3], [.2, .8], [.7, .3], [.9, .1], [0, 1], [.4, .6], [1, 0], [.5, .5],
                      [.5, .5], [.7, .3], [0, 1]])
    labels = np.array([1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1])
    stats = classwise_bin_statistics(probs, labels, 7, "adaptive")
    for c in range(2):
        one = bin_statistics(probs[:, c], labels == c, 7, "adaptive")
        np.testing.assert_allclose(stats.sum_value[c, :one.count.size], one.sum_value, atol=1e-12)
    np.testing.assert_allclose(stats.sum_value.sum(axis=1), probs.sum(axis=0))


# --- right=False: [lo, hi) bins (issue 11, item 9) -------------------------------------------------

def edge_values(n_bins):
    """Values on and next to every float edge of n bins, and k / n computed by division."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    divided = np.arange(n_bins + 1) / n_bins
    near = np.concatenate([np.nextafter(edges, -1.0), np.nextafter(edges, 2.0)])
    return np.clip(np.concatenate([edges, divided, near, [0.3, 0.7, 0.1, 0.9]]), 0.0, 1.0)


def test_left_closed_bins_hold_their_lower_edge_and_the_last_holds_one():
    values = np.array([0.0, 0.1, 0.1000001, 0.2, 0.3, 0.95, 1.0])
    # 0.3 is below the float edge 3 * 0.1 = 0.30000000000000004 of 10 bins under both rules
    assert bin_index(values, 10, right=False).tolist() == [0, 1, 1, 2, 2, 9, 9]
    assert bin_index(values, 10, right=True).tolist() == [0, 0, 1, 1, 2, 9, 9]


@pytest.mark.parametrize("n_bins", [1, 2, 3, 4, 7, 10, 15, 49, 100, 1000])
@pytest.mark.parametrize("right", [True, False])
def test_uniform_index_is_numpy_digitize_on_the_linspace_edges(n_bins, right):
    values = edge_values(n_bins)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    expected = np.clip(np.digitize(values, edges, right=right) - 1, 0, n_bins - 1)
    np.testing.assert_array_equal(bin_index(values, n_bins, right=right), expected)
    np.testing.assert_array_equal(upper_edge_index(values, edges[1:], right=right), expected)


@pytest.mark.parametrize("right", [True, False])
def test_every_uniform_path_bins_edge_values_alike(right):
    """bin_statistics, classwise_bin_statistics and bin_index put each value in one bin."""
    values = edge_values(10)
    targets = (np.arange(values.size) % 3 == 0).astype(float)
    index = bin_index(values, 10, right=right)
    stats = bin_statistics(values, targets, 10, right=right)
    np.testing.assert_array_equal(stats.count, np.bincount(index, minlength=10))
    np.testing.assert_allclose(stats.sum_value, np.bincount(index, weights=values, minlength=10))
    assert stats.right is right
    probs = np.column_stack([values, 1.0 - values])
    labels = (targets == 0).astype(np.intp)
    both = classwise_bin_statistics(probs, labels, 10, right=right)
    for k in range(2):
        one = bin_statistics(probs[:, k], labels == k, 10, right=right)
        np.testing.assert_array_equal(both.count[k], one.count)
        np.testing.assert_allclose(both.sum_target[k], one.sum_target)
    assert both.right is right


def test_right_does_not_change_adaptive_bins():
    values = np.array([0.1, 0.25, 0.25, 0.5, 0.75, 1.0])
    targets = np.array([0, 1, 0, 1, 1, 0.0])
    a = bin_statistics(values, targets, 3, "adaptive", right=False)
    b = bin_statistics(values, targets, 3, "adaptive")
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_array_equal(bin_index(values, 3, "adaptive", right=False), bin_index(values, 3, "adaptive"))
    assert a.right is True


@pytest.mark.parametrize("bad", ["yes", 1, None, 0.0])
def test_right_must_be_a_bool(bad):
    with pytest.raises(CalibrationInputError, match="`right` must be True or False"):
        bin_statistics([0.5], [1.0], 4, right=bad)


@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 15, 49, 100, 999, 10_000])
@pytest.mark.parametrize("right", [True, False])
def test_uniform_index_by_guess_is_the_binary_search_on_edges_and_their_neighbours(n_bins, right):
    """Issue 15: for many values the uniform bin is guessed from value * n_bins and moved by at most one; it must
    be the one bin rule's index everywhere, above all on the edges and one or two ulps either side of them."""
    rng = np.random.default_rng(n_bins)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    steps = [edges, np.nextafter(edges, 2), np.nextafter(edges, -1)]
    steps += [np.nextafter(steps[1], 2), np.nextafter(steps[2], -1)]
    values = np.concatenate([*steps, rng.uniform(size=5000), rng.uniform(size=2000) ** 40,
                             [0.0, 1.0, 1.0 + 1e-12, -1e-15, 1e-300, 5e-324]])
    assert values.size >= binning._GUESS_MIN_VALUES  # the guessing path
    np.testing.assert_array_equal(binning.uniform_index(values, n_bins, right),
                                  binning.upper_edge_index(values, edges[1:], right=right))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), k=st.integers(2, 6), n_bins=st.integers(1, 12),
       binning=st.sampled_from(["uniform", "adaptive"]), threshold=st.sampled_from([0.0, 0.1, 0.2, 0.5]))
def test_classwise_threshold_is_the_keep_mask_of_the_values_above_it(seed, n, k, n_bins, binning, threshold):
    """Issue 15: TACE's threshold keeps the end of each sorted column instead of masking (N, K) entries
    (1.2 s -> 0.8 s at 50,000 x 1,000); the bins and sums are those of keep=probs > threshold."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k) * 0.5, size=n).round(int(rng.integers(1, 3)))  # ties, values = threshold
    probs[:, -1] = 1 - probs[:, :-1].sum(axis=1)
    probs = np.abs(probs)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, size=n)
    by_threshold = classwise_bin_statistics(probs, labels, n_bins, binning, threshold=threshold)
    by_mask = classwise_bin_statistics(probs, labels, n_bins, binning, keep=probs > threshold)
    for field in ("count", "sum_target", "n_total"):
        np.testing.assert_array_equal(getattr(by_threshold, field), getattr(by_mask, field))
    np.testing.assert_allclose(by_threshold.sum_value, by_mask.sum_value, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(by_threshold.upper, by_mask.upper)
    with pytest.raises(CalibrationInputError, match="not both"):
        classwise_bin_statistics(probs, labels, n_bins, binning, keep=probs > threshold, threshold=threshold)


def test_sorted_pairs_sorts_probabilities_with_01_targets_as_one_integer_key():
    """Issue 15: the sketch's level 0, the sorted-values sweep and the isotonic fit sort (value, 0/1 target) pairs
    as int64 keys (numpy's SIMD sort): the values ascend with their own targets; other input (negative values,
    values of 2 or more, whose shifted keys would change sign, other targets) takes the arg-sort."""

    rng = np.random.default_rng(3)
    values = np.concatenate([rng.random(5_000), np.round(rng.random(5_000), 2), [0.0, -0.0, 1.0, 5e-324]])
    targets = (rng.random(values.size) < 0.4).astype(np.float64)
    got_values, got_targets = sorted_pairs(values, targets)
    order = np.lexsort((targets, values))  # by value, ties: target 0 first
    np.testing.assert_array_equal(got_values, values[order])
    np.testing.assert_array_equal(got_targets, targets[order])
    for other_values, other_targets in ((values - 0.5, targets), (values, targets * 0.5), (values * 3.0, targets)):
        got_values, got_targets = sorted_pairs(other_values, other_targets)
        np.testing.assert_array_equal(got_values, np.sort(other_values))
        assert sorted(zip(got_values, got_targets)) == sorted(zip(other_values, other_targets))


def test_sort_values_sums_at_tie_group_ends_equal_the_stable_argsort_ones():
    """The sorted-values sweep sorted by sorted_pairs: the same sums at every tie group's end, bit for bit."""
    rng = np.random.default_rng(5)
    values = np.round(rng.random(4_000), 3)
    targets = (rng.random(values.size) < values).astype(np.float64)
    swept = sort_values(values, targets)
    order = np.argsort(values, kind="stable")
    ends = swept.group_ends
    np.testing.assert_array_equal(swept.values, values[order])
    np.testing.assert_array_equal(swept.cum_targets[ends], np.concatenate([[0.0], np.cumsum(targets[order])])[ends])
    np.testing.assert_array_equal(swept.cum_values[ends], np.concatenate([[0.0], np.cumsum(values[order])])[ends])
