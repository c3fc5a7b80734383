"""Mergeable statistics, the quantile sketch and the multi-pass streaming metrics."""
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core.binning import binned_error, mean_abs_gap
from calib_core.binning import upper_edge_index
from calib_core.metrics.reports import compute_metrics
from calib_core.engines.grouped import GroupedStats
from calib_core.engines.sketch import QuantileSketch
from calib_core.engines.stats import CalibrationStats, _CellIndex
from calib_core.engines.streaming import STREAM_METRICS, SecondPass, stream_metrics
from calib_core.validation import CalibrationInputError

from tests.compiled_support import kernel_paths, require_kernel


def _data(seed, n, k, ties=False, concentration=0.5):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), size=n)
    if ties:
        # Rounded rows: many exact ties, values exactly on bin edges (0.2, 0.4, ...), zeros and ones.
        probs = np.round(probs, 1)
        probs[:, -1] = np.clip(1.0 - probs[:, :-1].sum(axis=1), 0.0, None)
        probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    return probs, labels


def _reference(probs, labels, n_bins, binning):
    """The in-memory metrics; the adaptive class-wise ones (ACE, TACE, adaptive class-wise ECE) built
    per class with ``bin_statistics``, the contract's definition.

    ``classwise_bin_statistics(..., "adaptive")`` under-counts the value sum of the last non-empty bin
    of the last class when ties leave trailing bins empty (its ``reduceat`` start indices are clipped),
    so it is not used as the reference here.
    """
    expected = compute_metrics(probs, labels, n_bins=n_bins, binning=binning, keys=list(STREAM_METRICS))
    per_class = [cc.bin_statistics(probs[:, k], labels == k, n_bins, "adaptive") for k in range(probs.shape[1])]
    above = [cc.bin_statistics(probs[probs[:, k] > 0.01, k], labels[probs[:, k] > 0.01] == k, n_bins, "adaptive")
             for k in range(probs.shape[1])]
    expected["ace"] = float(np.mean([mean_abs_gap(stats) for stats in per_class]))
    expected["tace"] = float(np.mean([mean_abs_gap(stats) for stats in above]))
    if binning == "adaptive":
        expected["classwise_ece"] = float(np.mean([binned_error(stats, "l1") for stats in per_class]))
    return expected


def _batch_runner(probs, labels, cuts):
    """run_pass over the batches between the cut positions (empty batches included), merged in a tree."""
    bounds = [0, *cuts, probs.shape[0]]

    def run_pass(factory):
        parts = [factory().update(probs[a:b], labels[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        while len(parts) > 1:
            parts = [parts[i].merge(parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        return parts[0]

    return run_pass


@st.composite
def streams(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 120))
    k = draw(st.integers(2, 4))
    ties = draw(st.booleans())
    probs, labels = _data(seed, n, k, ties)
    style = draw(st.sampled_from(["ones", "random", "whole"]))
    if style == "ones":
        cuts = list(range(1, n))  # batches of one row
    elif style == "whole":
        cuts = [0, n]  # an empty batch on each side
    else:
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))  # repeats give empty batches
    return probs, labels, cuts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams(), binning=st.sampled_from(["uniform", "adaptive"]), n_bins=st.integers(1, 12),
       collect_rows=st.sampled_from([0, 5, 4_000_000]))
def test_streaming_equals_in_memory_for_every_metric(data, binning, n_bins, collect_rows):
    probs, labels, cuts = data
    expected = _reference(probs, labels, n_bins, binning)
    # Tiny sketches and collection budgets force compactions, brackets, and the narrowing passes of the
    # adaptive edges and of KS.
    result = stream_metrics(_batch_runner(probs, labels, cuts), probs.shape[1], n_bins=n_bins, binning=binning,
                            sketch_capacity=4, ks_regions=3, ks_collect_rows=5, collect_rows=collect_rows)
    assert result.exact
    for key in STREAM_METRICS:
        assert result.metrics[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-12), key


def test_streaming_matches_on_larger_data_with_many_ties():
    probs, labels = _data(7, 20_000, 5, ties=True, concentration=0.2)
    expected = _reference(probs, labels, 15, "adaptive")
    result = stream_metrics(_batch_runner(probs, labels, list(range(0, 20_000, 3_000))), 5, binning="adaptive",
                            sketch_capacity=64, ks_regions=16, ks_collect_rows=500)
    for key in STREAM_METRICS:
        assert result.metrics[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-12), key
    assert result.n_passes >= 3


def test_adaptive_edges_of_a_large_table_are_found_with_bounded_collection():
    # A small sketch on 20,000 rows: its brackets may hold far more than 200 values, so pass 2 only counts
    # (in fine pieces) and pass 3 collects; the result is still exact.
    probs, labels = _data(5, 20_000, 4, concentration=0.3)
    expected = _reference(probs, labels, 10, "adaptive")
    runner = _batch_runner(probs, labels, list(range(2_000, 20_000, 2_000)))
    held = []

    def run_pass(factory):
        merged = runner(factory)
        if isinstance(merged, SecondPass):
            held.append(sum(values.size for slots in merged.brackets.values() for values in slots.values))
        return merged

    result = stream_metrics(run_pass, 4, n_bins=10, binning="adaptive", metrics=["ece", "ace", "tace", "classwise_ece"],
                            sketch_capacity=16, collect_rows=200)
    # Pass 2 counted the brackets cut into pieces (collecting nothing), pass 3 collected the pieces that
    # hold the edges.
    assert result.n_passes == 3 and held[0] == 0
    for key in ("ece", "ace", "tace", "classwise_ece"):
        assert result.metrics[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-12), key
    # The values held to find the edges: near the budget, not near the 20,000 x 9 values of the sets.
    assert 0 < held[-1] <= 2_000
    without_budget = stream_metrics(runner, 4, n_bins=10, binning="adaptive", metrics=["ace"], sketch_capacity=16)
    assert without_budget.n_passes == 2 and without_budget.metrics["ace"] == pytest.approx(expected["ace"], rel=1e-12)


def test_uniform_only_metrics_take_one_pass():
    probs, labels = _data(3, 500, 3)
    result = stream_metrics(_batch_runner(probs, labels, [100, 250]), 3, metrics=["ece", "sce", "brier", "nll"])
    assert result.n_passes == 1 and result.stats.sketches is None
    assert result.metrics["ece"] == pytest.approx(cc.ece(probs, labels), abs=1e-14)
    assert result.metrics["nll"] == pytest.approx(cc.nll(probs, labels), abs=1e-14)


def test_hand_computed_ece():
    # Bins of width 0.1: {0.9} with accuracy 1 (gap 0.1), {0.6} with accuracy 0 (gap 0.6): (0.1 + 0.6) / 2.
    stats = CalibrationStats(2, n_bins=10).update([[0.9, 0.1]], [0]).update([[0.6, 0.4]], [1])
    values = stats.metrics()
    assert values["ece"] == pytest.approx(0.35)
    assert values["mce"] == pytest.approx(0.6)
    assert values["accuracy"] == 0.5
    assert values["brier"] == pytest.approx((0.02 + 0.72) / 2)


def test_bin_stats_for_every_kept_bin_count_equal_binning_module():
    probs, labels = _data(11, 3_000, 4, ties=True)
    stats = CalibrationStats(4, n_bins=15, sweep_bins=(2, 3, 7, 10, 30)).update(probs, labels)
    confidence, correct = cc.top_label(probs, labels)
    for n_bins in (2, 3, 7, 10, 15, 30):
        top = stats.bin_stats("top_label", n_bins)
        expected = cc.bin_statistics(confidence, correct, n_bins)
        for name in ("count", "sum_value", "sum_target"):
            np.testing.assert_allclose(getattr(top, name), getattr(expected, name), atol=1e-10)
        classwise = stats.bin_stats("classwise", n_bins)
        expected = cc.classwise_bin_statistics(probs, labels, n_bins)
        for name in ("count", "sum_value", "sum_target"):
            np.testing.assert_allclose(getattr(classwise, name), getattr(expected, name), atol=1e-10)
    np.testing.assert_allclose(stats.prob_sum, probs.sum(axis=0))
    np.testing.assert_array_equal(stats.label_count, np.bincount(labels, minlength=4))


def test_cell_index_agrees_with_upper_edge_index_at_and_around_edges():
    for bin_counts in [(15,), (3, 7), tuple(range(2, 51))]:
        upper = np.unique(np.concatenate([np.linspace(0, 1, n + 1) for n in bin_counts]))[1:]
        values = np.concatenate([np.random.default_rng(0).random(10_000), upper, np.nextafter(upper, 0),
                                 np.nextafter(upper, 2), [0.0, 5e-324, 1.0, 1.00005]])
        np.testing.assert_array_equal(_CellIndex(upper)(values), upper_edge_index(values, upper))


def _exact_slots(points, values):
    """Slot 2i for (P[i-1], P[i]), 2i + 1 for {P[i]}: the slots by searchsorted alone."""
    at = np.searchsorted(points, values, side="left")
    return 2 * at + (points[np.minimum(at, points.size - 1)] == values) if points.size else 2 * at


def _added(slots, values, targets):
    """``slots`` after adding the built value set: the per-slot sums and the collected values by their contract."""
    slot = _exact_slots(slots.points, values)
    for name, weights in (("count", None), ("sum_value", values), ("sum_target", targets)):
        setattr(slots, name, getattr(slots, name) + np.bincount(slot, weights=weights, minlength=slots.count.size))
    keep = slots.collect[slot]
    if keep.any():
        slots.values.append(values[keep])
        slots.targets.append(targets[keep])


def test_slot_lookup_agrees_with_searchsorted_at_and_around_points():
    from calib_core.engines.streaming import _Slots

    rng = np.random.default_rng(4)
    for points in [np.empty(0), np.array([0.0]), np.array([1.0]), np.unique(rng.random(50)),
                   np.unique(np.concatenate([np.linspace(0.3, 0.30001, 500), rng.random(20), [0.0, 1.0, 1.00005]]))]:
        slots = _Slots(points, np.zeros(2 * points.size + 1, dtype=bool))
        values = np.concatenate([rng.random(20_000), points, np.nextafter(points, 0), np.nextafter(points, 2),
                                 [0.0, 5e-324, 1.0, 1.0001]])
        values = values[(values >= 0) & (values <= 1.0001)]
        np.testing.assert_array_equal(slots.slot(values), _exact_slots(points, values))


slot_path = kernel_paths("slot_sums", "slot_path")


def _slot_cases():
    rng = np.random.default_rng(8)
    many = np.unique(np.concatenate([np.linspace(0.3, 0.30001, 500), rng.random(20_000)]))  # int32 lookup table
    for points in [np.empty(0), np.array([0.0]), np.array([1.0]), np.unique(rng.random(50)),
                   np.unique(np.concatenate([np.linspace(0.3, 0.30001, 500), rng.random(20), [0.0, 1.0]])), many]:
        collect = rng.random(2 * points.size + 1) < 0.3
        values = np.concatenate([rng.dirichlet([0.3, 0.3, 0.4], 3_000).ravel(), points, np.nextafter(points, 0),
                                 np.nextafter(points, 2), [0.0, 5e-324, 1.0]])
        yield points, collect, np.clip(values, 0.0, 1.0)


def test_slot_sums_of_a_value_set_equal_the_built_set_added(slot_path):
    """Issue 15: the exact passes add each value set straight from its column (numba); the same sums, bit for
    bit, and the same collected values in the same order, as building the set, its targets and slots first."""
    from calib_core.engines.streaming import _Slots

    rng = np.random.default_rng(9)
    for points, collect, values in _slot_cases():
        labels = rng.integers(0, 3, values.size)
        targets = rng.integers(0, 2, values.size).astype(np.float64)
        for kind in ("top", "class", "above"):
            fast, slow = _Slots(points, collect), _Slots(points, collect)
            for piece in (slice(0, 700), slice(700, None)):  # two blocks: sums added per block
                column, block_labels = values[piece], labels[piece]
                if kind == "top":
                    fast.add_set(column, targets[piece])
                    _added(slow, column, targets[piece])
                else:
                    threshold = 0.01 if kind == "above" else -np.inf
                    fast.add_set(column, None, block_labels, 2, threshold)
                    kept = column > threshold
                    _added(slow, column[kept], (block_labels[kept] == 2).astype(np.float64))
            for name in ("count", "sum_value", "sum_target"):
                np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
            for got, expected in zip(fast.collected(), slow.collected()):
                np.testing.assert_array_equal(got, expected)
        assert _Slots(points, collect)._lookup().dtype == (np.int16 if points.size < 16_000 else np.int32)


def test_second_pass_numbers_are_the_same_on_both_paths(monkeypatch):
    """The exact streaming metrics with the compiled slot sums and with numpy's: the same numbers, bit for bit."""
    from calib_core._accel import compiled as _compiled

    require_kernel("slot_sums")
    probs, labels = _data(11, 3_000, 6, ties=True, concentration=0.3)
    run = _batch_runner(probs, labels, list(range(0, 3_000, 400)))
    kwargs = dict(binning="adaptive", sketch_capacity=16, ks_regions=8, ks_collect_rows=50, collect_rows=100)
    compiled = stream_metrics(run, 6, **kwargs).metrics
    monkeypatch.setattr(_compiled, "slot_sums", None)
    assert stream_metrics(run, 6, **kwargs).metrics == compiled


def _assert_stats_close(a, b):
    left, right = a.to_dict(), b.to_dict()
    for key in ("n_rows", "n_correct", "label_count", "bin_counts"):
        assert left[key] == right[key]
    for key in ("sum_brier", "sum_nll"):
        assert left[key] == pytest.approx(right[key], rel=1e-12)
    for part in ("top", "classwise"):
        for name in ("count", "sum_value", "sum_target"):
            np.testing.assert_allclose(left[part][name], right[part][name], rtol=1e-12, atol=1e-12)


def test_class_major_update_equals_row_update_across_blocks():
    # 30,000 rows of 10 classes span three blocks; rounded rows add ties and values on edges.
    probs, labels = _data(11, 30_000, 10, ties=True, concentration=0.3)
    by_rows = CalibrationStats(10, sweep_bins=(7, 50)).update(probs, labels)
    by_columns = CalibrationStats(10, sweep_bins=(7, 50)).update_columns(probs.T.copy(), labels)
    assert by_rows.block_rows < probs.shape[0] / 2
    _assert_stats_close(by_rows, by_columns)
    for n_bins in (7, 15, 50):
        expected = compute_metrics(probs, labels, n_bins=n_bins, keys=["ece", "classwise_ece", "accuracy", "brier"])
        found = by_columns.metrics(n_bins)
        for key, value in expected.items():
            assert found[key] == pytest.approx(value, rel=1e-12, abs=1e-12), (n_bins, key)


def test_top_label_ties_count_the_first_maximum_as_the_prediction():
    # Row 0: tie between classes 0 and 1, label 1 -> wrong (argmax picks 0); row 1: same tie, label 0 -> right.
    probs = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    labels = np.array([1, 0, 2])
    stats = CalibrationStats(3, n_bins=4).update_columns(probs.T.copy(), labels)
    assert stats.n_correct == 2
    assert stats.metrics()["ece"] == pytest.approx(cc.ece(probs, labels, n_bins=4), abs=1e-15)


def test_values_at_the_first_edge_and_a_single_bin_are_binned_exactly():
    # Values equal to the first upper edge belong to cell 0 ((lo, hi] bins); with one bin every value does.
    edge = np.linspace(0, 1, 16)[1]
    probs = np.array([[edge, 1 - edge], [1 - edge, edge], [np.nextafter(edge, 1), 1 - np.nextafter(edge, 1)]])
    labels = np.array([0, 1, 1])
    for n_bins in (1, 15):
        stats = CalibrationStats(2, n_bins=n_bins).update(probs, labels)
        expected = cc.classwise_bin_statistics(probs, labels, n_bins)
        found = stats.bin_stats("classwise")
        np.testing.assert_array_equal(found.count, expected.count)
        np.testing.assert_allclose(found.sum_value, expected.sum_value, rtol=1e-15)


def test_merge_is_commutative_and_associative_with_empty_identity():
    a_p, a_y = _data(1, 300, 3)
    b_p, b_y = _data(2, 17, 3, ties=True)
    c_p, c_y = _data(3, 1, 3)
    a, b, c = (CalibrationStats(3, sweep_bins=(5,)).update(p, y) for p, y in ((a_p, a_y), (b_p, b_y), (c_p, c_y)))
    empty = CalibrationStats(3, sweep_bins=(5,))
    _assert_stats_close(a.merge(b), b.merge(a))
    _assert_stats_close(a.merge(b).merge(c), a.merge(b.merge(c)))
    _assert_stats_close(a.merge(empty), a)
    whole = CalibrationStats(3, sweep_bins=(5,)).update(np.concatenate([a_p, b_p, c_p]), np.concatenate([a_y, b_y, c_y]))
    _assert_stats_close(a.merge(b).merge(c), whole)
    assert a.n_rows == 300  # merge does not change its operands


def test_json_round_trip_keeps_every_sum_and_sketch():
    probs, labels = _data(5, 2_000, 3)
    stats = CalibrationStats(3, sweep_bins=(4, 9), sketch_capacity=32).update(probs, labels)
    again = CalibrationStats.from_json(stats.to_json())
    assert again.to_dict() == json.loads(stats.to_json())
    assert again.metrics() == stats.metrics()
    assert again.sketches["top"].rank_error == stats.sketches["top"].rank_error
    np.testing.assert_array_equal(again.sketches["class1"].items()[0], stats.sketches["class1"].items()[0])


@pytest.mark.parametrize("capacity", [2, 16, 256])
@pytest.mark.parametrize("ties", [False, True])
def test_sketch_rank_error_is_within_its_tracked_and_stated_bounds(capacity, ties):
    rng = np.random.default_rng(capacity)
    values = np.round(rng.random(30_000), 2) if ties else rng.beta(0.5, 0.5, 30_000)
    pieces = np.array_split(values, 7)
    sketches = [QuantileSketch(capacity).update(piece, piece > 0.5) for piece in pieces]
    sketch = sketches[0]
    for other in sketches[1:]:
        sketch = sketch.merge(other)
    n = values.size
    assert sketch.n == n
    # Stated a-priori bound: E <= N (ceil(log2(N / capacity)) + 2) / capacity (each compaction at level h
    # consumes more than `capacity` of the at most N / 2**h items that ever reach that level).
    stated = n * (math.ceil(math.log2(n / capacity)) + 2) / capacity
    assert 0 < sketch.rank_error <= stated
    queries = np.concatenate([np.linspace(-0.1, 1.1, 301), values[:200]])
    truth = np.searchsorted(np.sort(values), queries, side="right")
    assert np.all(np.abs(sketch.rank(queries) - truth) <= sketch.rank_error)
    low, high = sketch.rank_bounds(queries)
    assert np.all((low <= truth) & (truth <= high))
    # The sums carried by the items are exact.
    _, _, _, weight, sum_value, sum_target = sketch.items()
    assert weight.sum() == n
    assert sum_value.sum() == pytest.approx(values.sum(), rel=1e-12)
    assert sum_target.sum() == (values > 0.5).sum()
    # Brackets hold the exact order statistics and at most 4E values lie strictly inside.
    ranks = np.array([1, 2, n // 3, n // 2, n - 1, n], dtype=float)
    a, b = sketch.brackets(ranks)
    ordered = np.sort(values)
    for r, lo, hi in zip(ranks, a, b):
        assert lo <= ordered[int(r) - 1] <= hi
        assert np.count_nonzero((values > lo) & (values < hi)) <= max(4 * sketch.rank_error, 0)


def test_a_sketch_without_compaction_is_exact():
    values = np.array([0.3, 0.1, 0.2, 0.2])
    sketch = QuantileSketch(capacity=10).update(values)
    assert sketch.rank_error == 0
    assert sketch.rank(0.2) == 3 and sketch.quantile([1, 4]).tolist() == [0.1, 0.3]


def test_sketch_adaptive_ece_and_ks_stay_within_their_stated_error():
    rng = np.random.default_rng(4)
    n, k = 200_000, 3
    probs = rng.dirichlet(np.full(k, 0.7), size=n)
    # Miscalibrated on purpose: labels drawn from sharpened probabilities.
    sharp = probs**2 / (probs**2).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(sharp, axis=1)).sum(axis=1)
    run = _batch_runner(probs, labels, list(range(0, n, 25_000)))
    approx = stream_metrics(run, k, binning="adaptive", metrics=["ece", "classwise_ece", "ks"], exact=False,
                            sketch_capacity=1024)
    exact = stream_metrics(run, k, binning="adaptive", metrics=["ece", "classwise_ece", "ks"])
    assert not approx.exact and approx.n_passes == 1
    # KS: |KS_sketch - KS| <= the largest straddling weight / N.
    assert abs(approx.metrics["ks"] - exact.metrics["ks"]) <= approx.error_bounds["ks"]
    # ECE: within the displaced-row bound of the exact ECE computed with the sketch's own edges...
    confidence, correct = cc.top_label(probs, labels)
    edges = approx.stats.sketches["top"].adaptive_edges(15)
    index = upper_edge_index(confidence, edges)
    gaps = np.bincount(index, weights=confidence - correct, minlength=edges.size)
    ece_with_sketch_edges = np.abs(gaps).sum() / n
    assert abs(approx.metrics["ece"] - ece_with_sketch_edges) <= approx.error_bounds["ece"]
    # ... whose edges have ranks within the rank error of the equal-mass targets.
    targets = np.cumsum([len(part) for part in np.array_split(np.arange(n), 15)])
    ranks = np.searchsorted(np.sort(confidence), edges, side="right")
    assert np.all(np.abs(ranks - targets) <= approx.stats.sketches["top"].rank_error + 1)
    # And in practice the sketch is close to the exact value.
    assert abs(approx.metrics["ece"] - exact.metrics["ece"]) < 2e-3
    assert approx.error_bounds["ece"] < 0.2


def test_exact_ks_on_a_confidence_spike_uses_refinement_passes():
    rng = np.random.default_rng(9)
    n = 40_000
    top = np.where(rng.random(n) < 0.7, 1.0 - rng.random(n) * 1e-9, rng.uniform(0.5, 1.0, n))
    probs = np.column_stack([top, 1.0 - top])
    labels = (rng.random(n) > top).astype(int)
    result = stream_metrics(_batch_runner(probs, labels, [10_000, 20_000]), 2, metrics=["ks"],
                            sketch_capacity=32, ks_regions=8, ks_collect_rows=1_000)
    assert result.metrics["ks"] == pytest.approx(cc.ks_error(probs, labels), rel=1e-10, abs=1e-13)
    assert result.n_passes >= 4


def test_validation_errors():
    with pytest.raises(CalibrationInputError, match="n_classes"):
        CalibrationStats(1)
    with pytest.raises(CalibrationInputError, match="n_bins"):
        CalibrationStats(2, n_bins=0)
    with pytest.raises(CalibrationInputError, match="sweep_bins"):
        CalibrationStats(2, sweep_bins=(0,))
    with pytest.raises(CalibrationInputError, match="sketch_sets"):
        CalibrationStats(2, sketch_sets=("rows",))
    stats = CalibrationStats(3)
    with pytest.raises(CalibrationInputError, match="3 classes"):
        stats.update([[0.5, 0.5]], [0])
    with pytest.raises(CalibrationInputError, match="3 classes"):
        stats.update(np.empty((0, 2)), [])
    with pytest.raises(CalibrationInputError, match="sum to 1"):
        stats.update([[0.5, 0.6, 0.1]], [0])
    with pytest.raises(CalibrationInputError, match="0 rows"):
        stats.update(np.empty((0, 3)), [1])
    with pytest.raises(CalibrationInputError, match="no rows"):
        stats.metrics()
    with pytest.raises(CalibrationInputError, match="different class counts"):
        stats.merge(CalibrationStats(2))
    with pytest.raises(CalibrationInputError, match="bin counts"):
        stats.merge(CalibrationStats(3, sweep_bins=(4,)))
    with pytest.raises(CalibrationInputError, match="can only merge"):
        stats.merge("stats")
    with pytest.raises(CalibrationInputError, match="no sums kept for 7 bins"):
        stats.update([[0.2, 0.3, 0.5]], [2]).bin_stats("top_label", 7)
    with pytest.raises(CalibrationInputError, match="target"):
        stats.bin_stats("everything")
    with pytest.raises(CalibrationInputError, match="not valid JSON"):
        CalibrationStats.from_json("{")
    with pytest.raises(CalibrationInputError, match="not a CalibrationStats summary"):
        CalibrationStats.from_json('{"format": "other"}')
    with pytest.raises(CalibrationInputError, match="capacity"):
        QuantileSketch(1)
    with pytest.raises(CalibrationInputError, match="NaN"):
        QuantileSketch().update([np.nan])
    with pytest.raises(CalibrationInputError, match="same length"):
        QuantileSketch().update([0.1, 0.2], [1])
    with pytest.raises(CalibrationInputError, match="sketch capacities"):
        QuantileSketch(8).merge(QuantileSketch(16))
    with pytest.raises(CalibrationInputError, match="empty"):
        QuantileSketch().quantile(1)
    with pytest.raises(CalibrationInputError, match="unknown metric"):
        stream_metrics(_batch_runner(*_data(0, 5, 2), []), 2, metrics=["mmce"])


def test_changed_data_between_passes_is_reported():
    probs, labels = _data(0, 200, 2)
    calls = {"n": 0}

    def run_pass(factory):
        calls["n"] += 1
        rows = 200 if calls["n"] == 1 else 150
        return factory().update(probs[:rows], labels[:rows])

    with pytest.raises(CalibrationInputError, match="changed between passes"):
        stream_metrics(run_pass, 2, metrics=["ace"])


# ----------------------------------------------------------------------------- per-group statistics

@st.composite
def grouped_streams(draw):
    """Rows with a random group column (one group, a few, or more than 50 so "other" is formed), batch cuts."""
    probs, labels, cuts = draw(streams())
    n = probs.shape[0]
    seed = draw(st.integers(0, 2**32 - 1))
    n_groups = draw(st.sampled_from([1, 2, 5, 60]))
    rng = np.random.default_rng(seed)
    # Skewed sizes, so the 49 largest are a real choice; labels as text, some numeric-looking.
    weights = rng.dirichlet(np.full(n_groups, 0.7))
    groups = np.array([f"g{c}" if c % 3 else str(c) for c in rng.choice(n_groups, size=n, p=weights)])
    return probs, labels, groups, cuts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=grouped_streams(), n_bins=st.integers(1, 12))
def test_grouped_stats_equal_by_group_in_memory(data, n_bins):
    probs, labels, groups, cuts = data
    bounds = [0, *cuts, probs.shape[0]]
    parts = [GroupedStats(CalibrationStats(probs.shape[1], n_bins=n_bins)).update(probs[a:b], labels[a:b], groups[a:b])
             for a, b in zip(bounds[:-1], bounds[1:])]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    names, stats, was_merged, notes = merged.folded()
    for metric, key in ((cc.ece, "ece"), (cc.classwise_ece, "classwise_ece"), (cc.brier_score, "brier")):
        reference = cc.by_group(lambda p, y, m=metric: m(p, y, n_bins=n_bins) if m is not cc.brier_score else m(p, y),
                                probs, labels, groups, n_boot=0).table
        assert names == list(reference["group"])
        assert [s.n_rows for s in stats] == list(reference["n"])
        found = np.array([s.metrics(n_bins)[key] for s in stats])
        np.testing.assert_allclose(found, reference["value"].to_numpy(), rtol=0, atol=1e-12)
    assert was_merged == (len(set(groups.tolist())) > 50) and merged.n_rows == probs.shape[0]
    assert merged.overall.metrics()["ece"] == pytest.approx(cc.ece(probs, labels, n_bins=n_bins), abs=1e-12)


def test_grouped_stats_refuse_more_distinct_groups_than_the_cap():
    probs, labels = _data(0, 8, 3)
    grouped = GroupedStats(CalibrationStats(3), max_distinct=3)
    grouped.update(probs[:4], labels[:4], ["a", "b", "c", "a"])
    with pytest.raises(CalibrationInputError, match="more than 3 distinct values"):
        grouped.update(probs[4:], labels[4:], ["d", "a", "a", "a"])
    other = GroupedStats(CalibrationStats(3), max_distinct=3).update(probs[4:], labels[4:], ["d", "d", "d", "d"])
    with pytest.raises(CalibrationInputError, match="more than 3 distinct values"):
        GroupedStats(CalibrationStats(3), max_distinct=3).update(probs[:4], labels[:4], ["a", "b", "c", "a"]).merge(other)
    with pytest.raises(CalibrationInputError, match="one value per row"):
        GroupedStats(CalibrationStats(3)).update(probs, labels, ["a"])


def test_grouped_stats_text_keys_missing_values_and_round_trip():
    probs, labels = _data(1, 5, 2)
    grouped = GroupedStats(CalibrationStats(2)).update(probs, labels, np.array([1.0, 2.0, np.nan, 1.0, 2.0]))
    assert sorted(grouped.groups) == ["(missing)", "1", "2"]  # whole floats as integers, as the loader
    back = GroupedStats.from_dict(json.loads(json.dumps(grouped.to_dict())))
    assert {k: s.n_rows for k, s in back.groups.items()} == {k: s.n_rows for k, s in grouped.groups.items()}
    assert back.groups["1"].metrics() == grouped.groups["1"].metrics()


def test_pickled_statistics_leave_out_the_shared_lookup_tables():
    import pickle

    stats = CalibrationStats(10).update(*_data(2, 50, 10))
    text = pickle.dumps(stats)
    # The cell lookup table and lane offsets (about 1.5 MB) are rebuilt on unpickling, not sent.
    assert len(text) < 50_000
    back = pickle.loads(text)
    assert back.metrics() == stats.metrics()
    probs, labels = _data(3, 30, 10)
    assert back.update(probs, labels).metrics() == stats.copy().update(probs, labels).metrics()


def test_the_slots_of_every_batch_share_one_lookup_table():
    """Each batch's slots (and each merge) built its own 65,600-cell lookup table of the same cut points: with
    batches of a few rows that was 40 % of a stream's time (this file's property test took 38 s, 4 s after)."""
    from calib_core.engines.streaming import _Slots

    points = np.array([0.1, 0.25, 0.5, 0.9])
    first, second = _Slots(points, np.zeros(9, dtype=bool)), _Slots(points, np.zeros(9, dtype=bool))
    assert first._lookup() is second._lookup() is first.merge(second)._lookup()
    assert not first._lookup().flags.writeable
    other = _Slots(points.copy(), np.zeros(9, dtype=bool))  # the same values in another array: its own table
    np.testing.assert_array_equal(other._lookup(), first._lookup())
