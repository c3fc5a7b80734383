"""The bin-count sweep's numpy path: every row of a matrix sorted once, any bins' sums from prefix sums.

:func:`calib_core.bin_sensitivity` evaluates the binned metrics at many
bin counts. Each class column is sorted once (:func:`sort_columns`); the
bins of every bin count are then runs of positions whose counts and sums are
differences of the prefix sums (:func:`column_bin_sums`), ``O(K B)`` per bin
count instead of a new pass over the ``N x K`` matrix. The class-column
sweep calls :func:`sweep_reductions`: the compiled
:data:`calib_core._accel.compiled.sweep_reductions`, which walks the same
bins and keeps only their two reductions, or its numpy twin here (the bins'
sums by :func:`column_bin_sums`, then reduced); ``tests/ground/test_accel_twins.py``
and ``tests/metrics/test_sensitivity.py`` check that they agree.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core._accel import compiled

__all__ = ["SWEEP_BLOCK_VALUES", "SortedColumns", "column_bin_sums", "count_chunks", "sort_columns",
           "sweep_reductions", "uniform_sweep_plan"]

#: Bins summed at once by the numpy sweep (columns x bins of one chunk of bin counts): bounds its memory.
SWEEP_BLOCK_VALUES = 1 << 17


@dataclass(frozen=True)
class SortedColumns:
    """Several sets of values, each sorted once, with prefix sums: :class:`SortedValues` for many sets at once.

    Row ``c`` holds one set (e.g. one class column of a probability matrix).
    All rows have the same length ``M``; a row's bins are runs of positions,
    so any bins' counts and sums are differences of the prefix sums at their
    ends (:func:`column_bin_sums`).

    Attributes
    ----------
    values : ndarray of shape (C, M)
        Each row ascending.
    cum_values, cum_targets : ndarray of shape (C, M + 1)
        ``[0, cumsum(row)]`` of the values and of the targets in the same order.
    """

    values: NDArray[np.float64]
    cum_values: NDArray[np.float64]
    cum_targets: NDArray[np.float64]


def sort_columns(values: ArrayLike, targets: ArrayLike) -> SortedColumns:
    """Sort every row of ``values`` (shape ``(C, M)``) once, with the prefix sums of values and targets.

    The order among tied values does not matter: every bin ends at the end
    of a tie group (:func:`column_bin_sums`).
    """
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, axis=1)
    sorted_values = np.take_along_axis(values, order, axis=1)
    sorted_targets = np.take_along_axis(np.asarray(targets), order, axis=1)
    n_sets, m = values.shape
    cum_values = np.zeros((n_sets, m + 1))
    np.cumsum(sorted_values, axis=1, out=cum_values[:, 1:])
    cum_targets = np.zeros((n_sets, m + 1))
    np.cumsum(sorted_targets, axis=1, out=cum_targets[:, 1:])
    return SortedColumns(sorted_values, cum_values, cum_targets)


def column_bin_sums(columns: SortedColumns, counts: tuple[int, ...], binning: str, right: bool,
                             threshold: float | None) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                                NDArray[np.float64]]:
    """:func:`calib_core.binning.sorted_columns_bin_sums` with checked settings (the sweep checks its counts once)."""
    values = columns.values
    n_sets, m = values.shape
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.intp)
    first = (np.zeros(n_sets, dtype=np.intp) if threshold is None
             else (values <= threshold).sum(axis=1).astype(np.intp))
    if binning == "uniform":
        edges, which = uniform_sweep_plan(counts)
        # Position of each distinct edge in each row, then a final column M for the last bins.
        positions = np.full((n_sets, edges.shape[0] + 1), m, dtype=np.intp)
        side = "right" if right else "left"
        for row in range(n_sets):
            positions[row, :-1] = np.searchsorted(values[row], edges, side=side)
        ends = np.take(positions, which, axis=1)
        if threshold is not None:
            np.maximum(ends, first[:, None], out=ends)
    else:
        # np.array_split runs of the kept values (array_split_ends for every count at once):
        # run r of B ends at (r + 1) * (n // B) + min(r + 1, n % B).
        n_bins = np.repeat(np.asarray(counts, dtype=np.intp), counts)
        run = np.arange(offsets[-1], dtype=np.intp) - np.repeat(offsets[:-1], counts) + 1
        n_kept = (m - first)[:, None]
        ends = run * (n_kept // n_bins) + np.minimum(run, n_kept % n_bins) + first[:, None]
        # Move each end to the end of its tie group (only rows with ties have to).
        tied = (np.flatnonzero((values[:, 1:] == values[:, :-1]).any(axis=1)) if m > 1
                else np.zeros(0, dtype=np.intp))
        if tied.size:
            tied_values = values[tied]
            is_end = np.ones((tied.size, m + 1), dtype=bool)
            is_end[:, 1:-1] = tied_values[:, 1:] > tied_values[:, :-1]
            group_end = np.where(is_end, np.arange(m + 1), m)
            group_end = np.minimum.accumulate(group_end[:, ::-1], axis=1)[:, ::-1]
            ends[tied] = np.take_along_axis(group_end, ends[tied], axis=1)
    flat_ends = ends + (np.arange(n_sets, dtype=np.intp) * (m + 1))[:, None]
    flat_first = first + np.arange(n_sets, dtype=np.intp) * (m + 1)
    segment_starts = offsets[:-1]

    def bin_differences(end_values, first_values):
        # Each bin starts where the previous one ends; the first bin of each count at `first`.
        differences = np.empty_like(end_values)
        np.subtract(end_values[:, 1:], end_values[:, :-1], out=differences[:, 1:])
        differences[:, segment_starts] = end_values[:, segment_starts] - first_values[:, None]
        return differences

    count = bin_differences(ends.astype(np.float64), first.astype(np.float64))
    sum_value = bin_differences(np.take(columns.cum_values, flat_ends), np.take(columns.cum_values, flat_first))
    sum_target = bin_differences(np.take(columns.cum_targets, flat_ends), np.take(columns.cum_targets, flat_first))
    return count, sum_value, sum_target


@functools.lru_cache(maxsize=16)
def uniform_sweep_plan(counts: tuple[int, ...]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The distinct inner uniform edges of all ``counts`` and, for each bin, its upper edge's index (E: last bin)."""
    inner = [np.linspace(0.0, 1.0, n_bins + 1)[1:-1] for n_bins in counts]
    edges = np.unique(np.concatenate(inner))
    which = np.concatenate([np.append(np.searchsorted(edges, part), edges.shape[0]) for part in inner]).astype(np.intp)
    edges.setflags(write=False)
    which.setflags(write=False)
    return edges, which


def count_chunks(counts: list[int] | tuple[int, ...]) -> list[slice]:
    """Consecutive runs of ``counts`` holding at most :data:`SWEEP_BLOCK_VALUES` bins in all (a larger count alone)."""
    chunks, start, total = [], 0, 0
    for i, n_bins in enumerate(counts):
        if i > start and total + n_bins > SWEEP_BLOCK_VALUES:
            chunks.append(slice(start, i))
            start, total = i, 0
        total += n_bins
    return [*chunks, slice(start, len(counts))]


def sweep_reductions(columns: SortedColumns, counts: tuple[int, ...], binning: str, right: bool,
                     threshold: float | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each sorted row's two reductions of its bins at every bin count: ``(l1, gap)``, each of shape (C, len(counts)).

    ``l1[c, j] = sum_b |sum_value - sum_target|`` over the bins of ``counts[j]``
    (:func:`calib_core.binning.binned_error`'s L1 sum before the division by N)
    and ``gap[c, j]`` the mean of ``|sum_value - sum_target| / count`` over the
    non-empty bins (:func:`calib_core.binning.mean_abs_gap`; 0 without one), for
    the bins of :func:`column_bin_sums` (values at or below ``threshold``
    dropped when it is given). The compiled kernel
    (:data:`calib_core._accel.compiled.sweep_reductions`) walks each row's bins
    once without keeping their sums; numpy sums the bins of a chunk of bin
    counts for a block of rows at a time (:data:`SWEEP_BLOCK_VALUES`) and then
    reduces them. The same differences of the same prefix sums, added in bin
    order (they agree to about 1e-15; ``tests/ground/test_accel_twins.py``).
    """
    values = columns.values
    n_sets, m = values.shape
    if compiled.sweep_reductions is not None:
        first = (np.zeros(n_sets, dtype=np.intp) if threshold is None
                 else (values <= threshold).sum(axis=1).astype(np.intp))
        edges, which = uniform_sweep_plan(tuple(counts))
        return compiled.sweep_reductions(values, columns.cum_values, columns.cum_targets,
                                         np.asarray(counts, dtype=np.intp), edges, which, right,
                                         binning == "adaptive", first)
    l1 = np.empty((n_sets, len(counts)))
    gap = np.empty((n_sets, len(counts)))
    for part in count_chunks(counts):
        chunk = tuple(counts[part])
        segments = np.concatenate([[0], np.cumsum(chunk)[:-1]]).astype(np.intp)
        block = max(1, SWEEP_BLOCK_VALUES // max(m, sum(chunk)))
        for lo in range(0, n_sets, block):
            rows = slice(lo, min(lo + block, n_sets))
            count, sum_value, sum_target = column_bin_sums(
                SortedColumns(values[rows], columns.cum_values[rows], columns.cum_targets[rows]),
                chunk, binning, right, threshold)
            difference = np.abs(sum_value - sum_target)
            l1[rows, part] = np.add.reduceat(difference, segments, axis=1)
            n_nonempty = np.add.reduceat(count > 0, segments, axis=1)
            total = np.add.reduceat(difference / np.maximum(count, 1.0), segments, axis=1)
            gap[rows, part] = np.where(n_nonempty > 0, total / np.maximum(n_nonempty, 1), 0.0)
    return l1, gap
