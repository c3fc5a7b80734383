"""The one binning module: bin edges, bin assignment and per-bin sums.

Every binned metric, reliability table, plot and sensitivity sweep in
calibration studio is a few lines on top of :func:`bin_statistics` (one
set of values) or :func:`classwise_bin_statistics` (every class column of a
probability matrix at once).

Notes
-----
Conventions (``calib_core_api.md``):

* **Uniform** ("uniform-width") bins split [0, 1] into ``n_bins`` equal
  intervals on the edges ``e = np.linspace(0, 1, n_bins + 1)``. With
  ``right=True`` (the default; Guo et al.'s original code and scikit-learn's
  ``calibration_curve``) they are ``(lo, hi]`` and the first bin also holds
  exactly 0: the bin of ``v`` is ``np.digitize(v, e, right=True) - 1``,
  clipped to ``0..n_bins-1``. With ``right=False`` (torchmetrics, netcal,
  ``pandas.cut(right=False)``) they are ``[lo, hi)`` and the last bin also
  holds exactly 1: ``np.digitize(v, e) - 1``, clipped the same way. The
  rule is applied to the float64 edges as they are, so a value such as 0.3
  against the edge ``e[3] = 3 * 0.1 = 0.30000000000000004`` of 10 bins lies
  below that edge under both rules. ``docs/peers.md`` says which convention
  each peer library uses.
* **Adaptive** ("uniform-mass") bins: sort the values, cut the sorted array
  into ``n_bins`` runs the way :func:`numpy.array_split` does (the first
  ``m % n_bins`` runs one longer), take each run's last value as the bin's
  upper edge and put every value in the first bin whose upper edge is >= it.
  Without ties this is exactly the ``array_split`` grouping; tied values
  always share a bin, so results never depend on row order. Bins left empty
  by ties are reported with count 0. ``right`` does not apply to them (their
  edges are data values).
* ``n_bins`` is a whole number in ``1..MAX_N_BINS`` (10,000), checked by
  :func:`calib_core.validation.check_n_bins`.
* Empty bins contribute nothing to any metric and are not counted.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core._accel import SortedColumns, column_bin_sums
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_n_bins,
    check_positive,
    check_right,
    check_sample_weight, integer_weights,
    transposed,
)

__all__ = [
    "BinStats",
    "SortedValues",
    "adaptive_upper_edges",
    "array_split_ends",
    "bin_index",
    "bin_statistics",
    "binned_error",
    "classwise_bin_statistics",
    "mean_abs_gap",
    "optimal_n_bins",
    "sort_values",
    "sorted_bin_ends",
    "sorted_bin_sums",
    "sorted_columns_bin_sums",
    "sorted_pairs",
    "uniform_edges",
    "uniform_index",
    "weighted_edge_positions",
    "weighted_upper_edges",
    "upper_bin_entries",
    "upper_edge_index",
]


@compact_display
@dataclass(frozen=True)
class BinStats:
    """Per-bin sums of one or several sets of values (one set per row).

    Attributes
    ----------
    count : ndarray of shape (..., B)
        Number of values in each bin.
    sum_value : ndarray of shape (..., B)
        Sum of the binned values (the confidences) in each bin.
    sum_target : ndarray of shape (..., B)
        Sum of the 0/1 targets (correctness, or ``labels == k``) in each bin.
    lower, upper : ndarray of shape (..., B)
        Bin bounds: each bin holds the values in ``(lower, upper]`` (the first
        bin also holds ``lower`` itself), or in ``[lower, upper)`` (the last
        bin also holds ``upper``) for uniform bins with ``right=False``. For
        adaptive bins ``upper`` is the largest value in the bin and bins
        emptied by ties have NaN bounds.
    n_total : int or ndarray of shape (...)
        Number of values that were binned (the denominator of the weights).
    right : bool, default True
        Which end of a uniform bin is closed (see the module notes); always
        True for adaptive bins.
    """

    count: NDArray[np.float64]
    sum_value: NDArray[np.float64]
    sum_target: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    n_total: NDArray[np.float64] | float
    right: bool = True

    @property
    def nonempty(self) -> NDArray[np.bool_]:
        """Mask of the bins holding at least one value."""
        return self.count > 0

    @property
    def mean_value(self) -> NDArray[np.float64]:
        """Mean value (confidence) per bin; NaN for empty bins."""
        return _safe_mean(self.sum_value, self.count)

    @property
    def mean_target(self) -> NDArray[np.float64]:
        """Observed frequency (accuracy) per bin; NaN for empty bins."""
        return _safe_mean(self.sum_target, self.count)

    @property
    def gap(self) -> NDArray[np.float64]:
        """``mean_value - mean_target`` per bin (positive: over-confident); NaN if empty."""
        return _safe_mean(self.sum_value - self.sum_target, self.count)


def _safe_mean(total: NDArray[np.float64], count: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)


def uniform_edges(n_bins: int) -> NDArray[np.float64]:
    """Edges ``np.linspace(0, 1, n_bins + 1)`` of uniform-width bins."""
    return np.linspace(0.0, 1.0, check_n_bins(n_bins) + 1)


def uniform_index(values: NDArray[np.float64], n_bins: int, right: bool = True) -> NDArray[np.intp]:
    """Index of the uniform bin holding each value: ``(lo, hi]`` (``right``) or ``[lo, hi)``.

    :func:`upper_edge_index` with the edges ``np.linspace(0, 1, n_bins + 1)[1:]``.
    For many values the bin is first guessed from ``value * n_bins`` and then
    moved by at most one so that the same comparisons with the same edges hold
    (the guess is off by at most one where the product rounds): the same
    index, in about half the time of the binary search.
    """
    # 0 and 1 are in the first and last bin under both rules; values a rounding error
    # above 1 (accepted by the row-sum tolerance) are in the last bin.
    upper = np.linspace(0.0, 1.0, n_bins + 1)[1:]
    values = np.asarray(values, dtype=np.float64)
    if values.size < _GUESS_MIN_VALUES:
        return upper_edge_index(values, upper, right=right)
    scaled = values * n_bins
    guess = (np.ceil(scaled, out=scaled) - 1.0) if right else np.floor(scaled, out=scaled)
    index = np.clip(guess, 0, n_bins - 1).astype(np.intp)
    # right=True: bin b holds (upper[b-1], upper[b]]; right=False: [upper[b-1], upper[b]).
    above = (values > upper[index]) if right else (values >= upper[index])
    above &= index < n_bins - 1
    index += above
    below = (values <= upper[index - 1]) if right else (values < upper[index - 1])
    below &= index > 0
    index -= below
    return index


#: From this many values on, :func:`uniform_index` guesses each bin from ``value * n_bins`` (fewer: binary search).
_GUESS_MIN_VALUES = 4096


def array_split_ends(n_values: NDArray[np.intp] | int, n_bins: int) -> NDArray[np.intp]:
    """End positions (exclusive) of the ``np.array_split`` runs of ``n_values`` items."""
    n_values = np.asarray(n_values)
    run = np.arange(n_bins)
    sizes = n_values[..., None] // n_bins + (run < n_values[..., None] % n_bins)
    return np.cumsum(sizes, axis=-1)


def adaptive_upper_edges(sorted_values: ArrayLike, n_bins: int) -> NDArray[np.float64]:
    """Upper edges of adaptive (uniform-mass) bins of an already sorted array.

    Parameters
    ----------
    sorted_values : array_like of shape (M,)
        Values in ascending order.
    n_bins : int
        Number of ``np.array_split`` runs.

    Returns
    -------
    ndarray of shape (min(M, n_bins),)
        The last value of each non-empty run, ascending (ties may repeat).

    Examples
    --------
    >>> adaptive_upper_edges([0.1, 0.2, 0.3, 0.4, 0.5], 2).tolist()
    [0.3, 0.5]
    """
    values = np.asarray(sorted_values, dtype=np.float64)
    n_bins = check_n_bins(n_bins)
    ends = array_split_ends(values.shape[0], n_bins)
    ends = ends[ends > np.concatenate([[0], ends[:-1]])]
    return values[ends - 1]


def upper_edge_index(values: ArrayLike, upper: ArrayLike, *, right: bool = True) -> NDArray[np.intp]:
    """Bin index of each value for precomputed ascending upper edges.

    The one bin-assignment rule of calibration studio. Applies edges that
    are already known (uniform edges, adaptive edges found in an earlier
    pass, or the union of several uniform grids): with ``right=True`` bin
    ``b`` holds ``(upper[b-1], upper[b]]`` (the first bin whose upper edge
    is >= the value); with ``right=False`` it holds ``[upper[b-1], upper[b])``.
    The first bin also holds everything below its bounds and the last bin
    everything above them. With ``upper = uniform_edges(n)[1:]`` this is
    ``np.digitize(values, uniform_edges(n), right=right) - 1`` clipped to
    ``0..n-1``; with ``upper = adaptive_upper_edges(sorted_values, n)`` and
    ``right=True`` it is the adaptive index.

    Parameters
    ----------
    values : array_like
    upper : array_like of shape (B,)
        Ascending upper edges (ties allowed).
    right : bool, default True
        Closed upper ends (True) or closed lower ends (False).

    Returns
    -------
    ndarray of the shape of ``values``, intp
        Index in ``0..B-1``.

    Examples
    --------
    >>> upper_edge_index([0.0, 0.5, 0.51, 1.0], [0.5, 1.0]).tolist()
    [0, 0, 1, 1]
    >>> upper_edge_index([0.0, 0.5, 0.51, 1.0], [0.5, 1.0], right=False).tolist()
    [0, 1, 1, 1]
    """
    upper = np.asarray(upper, dtype=np.float64)
    index = np.searchsorted(upper, values, side="left" if right else "right")
    return np.minimum(index, upper.shape[0] - 1)


def bin_index(values: ArrayLike, n_bins: int, binning: str = "uniform", *,
              right: bool = True) -> NDArray[np.intp]:
    """Bin index of each value under the uniform or adaptive scheme.

    Parameters
    ----------
    values : array_like of shape (M,)
        Values in [0, 1].
    n_bins : int
        In ``1..MAX_N_BINS``.
    binning : {"uniform", "adaptive"}
    right : bool, default True
        Uniform bins ``(lo, hi]`` with 0 in the first bin (True) or
        ``[lo, hi)`` with 1 in the last bin (False); no effect on adaptive bins.

    Returns
    -------
    ndarray of shape (M,), intp
        Index in ``0..n_bins-1``.

    Examples
    --------
    >>> bin_index([0.0, 0.25, 0.5, 1.0], 4).tolist()
    [0, 0, 1, 3]
    >>> bin_index([0.0, 0.25, 0.5, 1.0], 4, right=False).tolist()
    [0, 1, 2, 3]
    """
    values = np.asarray(values, dtype=np.float64)
    n_bins = check_n_bins(n_bins)
    right = check_right(right)
    if check_binning(binning) == "uniform":
        return uniform_index(values, n_bins, right)
    edges = adaptive_upper_edges(np.sort(values), n_bins)
    return np.searchsorted(edges, values, side="left")


def bin_statistics(values: ArrayLike, targets: ArrayLike, n_bins: int = 15,
                   binning: str = "uniform", *, right: bool = True,
                   sample_weight: ArrayLike | None = None) -> BinStats:
    """Per-bin count, sum of values and sum of targets of one set of values.

    Parameters
    ----------
    values : array_like of shape (M,)
        Confidences in [0, 1] (top-label confidence, or one class column).
    targets : array_like of shape (M,)
        0/1 outcomes (correctness, or ``labels == k``).
    n_bins : int, default 15
        In ``1..MAX_N_BINS``.
    binning : {"uniform", "adaptive"}, default "uniform"
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False); see the
        module notes. No effect on adaptive bins.
    sample_weight : array_like of shape (M,), optional
        Per-value weights: weighted counts and sums, adaptive edges by
        :func:`weighted_upper_edges` (integer weights: the repeated values' bins).

    Returns
    -------
    BinStats
        Arrays of length ``n_bins`` (uniform) or ``min(M, n_bins)``
        (adaptive; ``min(W, n_bins)`` for a whole weight total W); an empty
        set gives all-zero counts.

    Notes
    -----
    One pass of :func:`numpy.bincount` per sum (no Python loop over values),
    as scikit-learn's ``calibration_curve`` does.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    targets = np.asarray(targets, dtype=np.float64).ravel()
    if values.shape != targets.shape:
        raise CalibrationInputError(
            f"`values` and `targets` must have the same length, got {values.size} and {targets.size}."
        )
    n_bins = check_n_bins(n_bins)
    right = check_right(right)
    weights = check_sample_weight(sample_weight, values.size)
    if weights is not None:  # rows of weight 0 are absent
        values, targets, weights = values[weights > 0], targets[weights > 0], weights[weights > 0]
    if check_binning(binning) == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        lower, upper = edges[:-1], edges[1:]
        index = uniform_index(values, n_bins, right)
    else:
        right = True
        upper = adaptive_upper_edges(np.sort(values), n_bins) if weights is None else \
            weighted_upper_edges(values, weights, n_bins)
        index = np.searchsorted(upper, values, side="left")
        lower = np.concatenate([[0.0], upper[:-1]])
    size = upper.shape[0]
    count = np.bincount(index, weights=weights, minlength=size).astype(np.float64)
    sum_value = np.bincount(index, weights=values if weights is None else weights * values, minlength=size)
    sum_target = np.bincount(index, weights=targets if weights is None else weights * targets, minlength=size)
    if binning == "adaptive":
        tied_away = count == 0
        lower = np.where(tied_away, np.nan, lower)
        upper = np.where(tied_away, np.nan, upper)
    return BinStats(count, sum_value, sum_target, lower, upper,
                    float(values.size) if weights is None else float(weights.sum()), right)


def weighted_upper_edges(values: NDArray[np.float64], weights: NDArray[np.float64], n_bins: int) -> NDArray[np.float64]:
    r"""Upper edges of adaptive bins of positively weighted values: those of the values repeated ``weights`` times.

    With cumulative weights :math:`C_i` along the sorted values: whole weights cut the ``np.array_split`` runs
    of the W repeated values, a run ending at position ``e`` (exclusive) having the first value with
    :math:`C_i > e - 1` as edge -- :func:`adaptive_upper_edges` of ``np.repeat(values, weights)``, ties
    included; other weights cut at the equal-mass quantiles :math:`W (r + 1) / B` (first :math:`C_i \ge` it).
    """
    order = np.argsort(values, kind="stable")
    values, cumulative = values[order], np.cumsum(weights[order])
    return values[weighted_edge_positions(cumulative, n_bins, integer_weights(weights))] if values.size else values


def weighted_edge_positions(cumulative: NDArray[np.float64], n_bins: int, whole: bool) -> NDArray[np.intp]:
    """Where, in the sorted values of cumulative weights ``C_i``, :func:`weighted_upper_edges` cuts (whole weights?)."""
    ends = array_split_ends(int(round(cumulative[-1])), n_bins) if whole else None  # the repeated rows' runs
    position = (np.searchsorted(cumulative, ends[ends > np.concatenate([[0], ends[:-1]])] - 1, side="right") if whole
                else np.searchsorted(cumulative, cumulative[-1] * np.arange(1, n_bins + 1) / n_bins * (1.0 - 1e-12)))
    return np.minimum(position, cumulative.size - 1)


def classwise_bin_statistics(probs: NDArray[np.float64], labels: NDArray[np.intp],
                             n_bins: int = 15, binning: str = "uniform", *,
                             keep: NDArray[np.bool_] | None = None, right: bool = True,
                             threshold: float | None = None,
                             sample_weight: NDArray[np.float64] | None = None) -> BinStats:
    """Bin every class column ``probs[:, k]`` against ``labels == k`` at once.

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Checked probabilities (call :func:`calib_core.validation.check_probs_labels` first).
    labels : ndarray of shape (N,)
        Checked labels.
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Adaptive bins are computed within each class column.
    keep : ndarray of shape (N, K), bool, optional
        Which entries to bin (e.g. ``probs > threshold`` for TACE, or only the
        predicted class of each row); ``None`` bins every entry.
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False); no effect
        on adaptive bins.
    threshold : float, optional
        Bin only the values above it (TACE): the same as ``keep=probs >
        threshold``, without the (N, K) mask for adaptive bins (the kept
        values are the end of each sorted column). Not together with ``keep``.
    sample_weight : ndarray of shape (N,), optional
        Checked row weights: each class column binned by :func:`bin_statistics` with them.

    Returns
    -------
    BinStats
        Arrays of shape ``(K, n_bins)``; ``n_total`` has shape ``(K,)`` (the
        number of kept values per class).

    Notes
    -----
    The target sums use that only the true class of a row has target 1: for
    class k they are the bin counts of ``probs[i, k]`` over the rows with
    ``labels[i] == k``, so no ``(N, K)`` one-hot matrix is built. Adaptive
    bins sort each column once (``np.sort``) and sum contiguous runs with
    :func:`numpy.add.reduceat`.
    """
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    right = check_right(right)
    n_rows, n_classes = probs.shape
    if threshold is not None and (keep is not None or binning == "uniform"):
        if keep is not None:
            raise CalibrationInputError("Give `keep` or `threshold`, not both.")
        keep, threshold = probs > threshold, None
    if sample_weight is not None:
        return _classwise_weighted(probs, labels, n_bins, binning, keep, threshold, right, sample_weight)
    true_value = probs[np.arange(n_rows), labels]
    if threshold is not None:
        true_kept = true_value > threshold
    else:
        true_kept = np.ones(n_rows, dtype=bool) if keep is None else keep[np.arange(n_rows), labels]
    if binning == "uniform":
        return _classwise_uniform(probs, labels, n_bins, keep, true_value, true_kept, right)
    return _classwise_adaptive(probs, labels, n_bins, keep, true_value, true_kept, threshold)


def _classwise_weighted(probs, labels, n_bins, binning, keep, threshold, right, weights) -> BinStats:
    """:func:`classwise_bin_statistics` with row weights: :func:`bin_statistics` of each class column, padded."""
    names = ("count", "sum_value", "sum_target", "lower", "upper")
    parts = {name: np.full((probs.shape[1], n_bins), np.nan if name in names[3:] else 0.0) for name in names}
    n_total = np.zeros(probs.shape[1])
    for k in range(probs.shape[1]):
        kept = (probs[:, k] > threshold) if threshold is not None else (slice(None) if keep is None else keep[:, k])
        if weights[kept].sum() > 0:  # else no value of the column is kept: its bins stay empty
            stats = bin_statistics(probs[kept, k], (labels[kept] == k).astype(np.float64), n_bins, binning,
                                   right=right, sample_weight=weights[kept])
            for name, array in parts.items():
                array[k, :stats.count.shape[0]] = getattr(stats, name)
            n_total[k] = stats.n_total
    return BinStats(**parts, n_total=n_total, right=right if binning == "uniform" else True)


def upper_bin_entries(probs: NDArray[np.float64], n_bins: int,
                      right: bool = True) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """The entries of ``probs`` outside the first uniform bin: rows, ``class * n_bins + bin`` and values.

    Every value below ``1/n_bins`` is in the first bin, and a row (summing to 1)
    has fewer than ``n_bins`` values of at least ``1/n_bins``; so a class's
    first bin is its column total minus these entries. At 1,000 classes they
    are a few per row instead of 1,000. The bins are :func:`uniform_index`'s
    (the one bin rule), found for the values above a margin below ``1/n_bins``.

    Examples
    --------
    >>> rows, slots, values = upper_bin_entries(np.array([[0.05, 0.95], [0.5, 0.5]]), 10)
    >>> rows.tolist(), slots.tolist(), values.tolist()
    ([0, 1, 1], [19, 4, 14], [0.95, 0.5, 0.5])
    """
    rows, classes = np.nonzero(probs >= (1.0 - 1e-9) / n_bins)
    values = probs[rows, classes]
    bins = uniform_index(values, n_bins, right)
    upper = bins > 0
    return rows[upper], classes[upper] * n_bins + bins[upper], values[upper]


def _classwise_uniform(probs, labels, n_bins, keep, true_value, true_kept, right) -> BinStats:
    n_rows, n_classes = probs.shape
    offsets = np.arange(n_classes) * n_bins
    size = n_classes * n_bins
    if keep is None:
        # The first bin of each class is its column total minus the other bins (upper_bin_entries).
        _, slots, values = upper_bin_entries(probs, n_bins, right)
        count = np.bincount(slots, minlength=size).astype(np.float64).reshape(n_classes, n_bins)
        # (float64 also when there is no such entry: bincount then returns integers)
        sum_value = np.bincount(slots, weights=values, minlength=size).astype(np.float64).reshape(n_classes, n_bins)
        count[:, 0] = n_rows - count[:, 1:].sum(axis=1)
        sum_value[:, 0] = probs.sum(axis=0) - sum_value[:, 1:].sum(axis=1)
        count, sum_value = count.ravel(), sum_value.ravel()
    else:
        flat_index = (uniform_index(probs, n_bins, right) + offsets).ravel()
        count = np.bincount(flat_index, weights=keep.ravel().astype(np.float64), minlength=size)
        sum_value = np.bincount(flat_index, weights=np.where(keep, probs, 0.0).ravel(), minlength=size)
    true_index = uniform_index(true_value, n_bins, right) + offsets[labels]
    sum_target = np.bincount(true_index[true_kept], minlength=size).astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    shape = (n_classes, n_bins)
    n_total = np.full(n_classes, float(n_rows)) if keep is None else keep.sum(axis=0).astype(np.float64)
    return BinStats(count.reshape(shape), sum_value.reshape(shape), sum_target.reshape(shape),
                    np.broadcast_to(edges[:-1], shape), np.broadcast_to(edges[1:], shape), n_total, right)


def _classwise_adaptive(probs, labels, n_bins, keep, true_value, true_kept, threshold=None) -> BinStats:
    n_rows, n_classes = probs.shape
    count = np.empty((n_classes, n_bins))
    sum_value = np.zeros((n_classes, n_bins))
    upper = np.empty((n_classes, n_bins))
    n_kept = np.empty(n_classes, dtype=np.intp)
    # Blocks of class columns, each copied into one reused buffer and sorted in place: no (K, N) copy
    # (400 MB at 50,000 x 1,000, most of whose time went in first touching its pages).
    block = max(1, _ADAPTIVE_BLOCK_VALUES // max(n_rows, 1))
    buffer = np.empty((min(block, n_classes), n_rows))
    for lo in range(0, n_classes, block):
        hi = min(lo + block, n_classes)
        columns = transposed(probs[:, lo:hi], buffer[:hi - lo])
        parts = _adaptive_block(columns, n_bins, None if keep is None else keep[:, lo:hi], threshold)
        count[lo:hi], sum_value[lo:hi], upper[lo:hi], n_kept[lo:hi] = parts
    # Each kept true entry's bin: the number of its class's upper edges below it (searchsorted "left";
    # NaN edges of runs without values compare False).
    kept_rows = np.flatnonzero(true_kept)
    below = upper[labels[kept_rows]] < true_value[kept_rows, None]
    target_index = labels[kept_rows] * n_bins + below.sum(axis=1)
    sum_target = np.bincount(target_index, minlength=n_classes * n_bins).reshape(n_classes, n_bins).astype(np.float64)
    upper = np.where(count > 0, upper, np.nan)
    previous = np.concatenate([np.zeros((n_classes, 1)), np.fmax.accumulate(np.nan_to_num(upper, nan=0.0), axis=1)[:, :-1]], axis=1)
    lower = np.where(count > 0, previous, np.nan)
    return BinStats(count, sum_value, sum_target, lower, upper, n_kept.astype(np.float64))


#: Values per block of class columns sorted at once by :func:`_classwise_adaptive`.
_ADAPTIVE_BLOCK_VALUES = 1 << 21


def _adaptive_block(columns, n_bins, keep, threshold):
    """Count, value sum, upper edge of each adaptive bin and the kept count of a block of class columns.

    ``columns`` (C, N) is a work copy: it is overwritten and sorted in place;
    ``keep`` is the block's (N, C) mask, or None.
    """
    n_columns, n_rows = columns.shape
    if keep is not None:
        # Dropped values become NaN, which np.sort puts after every kept value.
        columns[~keep.T] = np.nan
    columns.sort(axis=1)
    # The kept values of a sorted column are positions first:first + n_kept (with a threshold, the values
    # <= threshold come first; with a mask, the dropped NaN come last).
    if threshold is not None:
        first = np.array([np.searchsorted(column, threshold, side="right") for column in columns], dtype=np.intp)
        n_kept = n_rows - first
    else:
        first = np.zeros(n_columns, dtype=np.intp)
        n_kept = np.full(n_columns, n_rows) if keep is None else keep.sum(axis=0)
    run_ends = array_split_ends(n_kept, n_bins) + first[:, None]  # (C, B)
    run_starts = np.concatenate([first[:, None], run_ends[:, :-1]], axis=1)
    has_run = run_ends > run_starts
    upper = np.where(has_run, np.take_along_axis(columns, np.maximum(run_ends - 1, 0), axis=1), np.nan)
    # A bin ends after the last value <= its edge, so tied values share a bin.
    bin_ends = np.empty_like(run_ends)
    edges = np.nan_to_num(upper, nan=np.inf)  # once per block, not per column (11 us each, 50,000 per page)
    for k in range(n_columns):
        kept = columns[k, first[k]: first[k] + n_kept[k]]
        bin_ends[k] = first[k] + np.searchsorted(kept, edges[k], side="right")
    bin_starts = np.concatenate([first[:, None], bin_ends[:, :-1]], axis=1)
    count = (bin_ends - bin_starts).astype(np.float64)
    flat_starts = bin_starts + (np.arange(n_columns) * n_rows)[:, None]
    if keep is not None:
        columns[np.isnan(columns)] = 0.0  # the dropped tail of each column (our copy) adds nothing
    for k in np.flatnonzero(first):
        columns[k, :first[k]] = 0.0  # the dropped head of a column likewise
    # Only the non-empty bins' starts: each run then ends where the next non-empty bin starts (the empty bins
    # between them hold nothing; a column's dropped tail is 0), and no start is C * N. No copy of the columns.
    nonempty = (count > 0).ravel()
    sum_value = np.zeros(n_columns * n_bins)
    sum_value[nonempty] = np.add.reduceat(columns.ravel(), flat_starts.ravel()[nonempty])
    return count, sum_value.reshape(n_columns, n_bins), upper, n_kept


# ----------------------------------------------------------------------------- reductions

def binned_error(stats: BinStats, norm: str = "l1") -> NDArray[np.float64]:
    """Reduce per-bin sums (last axis) to a weighted calibration error.

    ``l1``: :math:`\\sum_b (n_b / n) |gap_b|` (ECE); ``l2``:
    :math:`\\sqrt{\\sum_b (n_b / n) gap_b^2}` (RMSCE); ``max``:
    :math:`\\max_b |gap_b|` over non-empty bins (MCE), Nixon et al. (2019),
    eq. 1 and section 3. An empty set gives 0.
    """
    total = np.asarray(stats.n_total, dtype=np.float64)
    safe_total = np.where(total > 0, total, 1.0)
    if norm == "l1":
        return np.abs(stats.sum_value - stats.sum_target).sum(axis=-1) / safe_total
    if norm == "l2":
        squared = np.where(stats.nonempty, stats.count * np.nan_to_num(stats.gap) ** 2, 0.0)
        return np.sqrt(squared.sum(axis=-1) / safe_total)
    return np.where(stats.nonempty, np.abs(np.nan_to_num(stats.gap)), 0.0).max(axis=-1)


def mean_abs_gap(stats: BinStats) -> NDArray[np.float64]:
    """Mean of ``|gap_b|`` over the non-empty bins (0 when every bin is empty): the ACE reduction.

    Nixon et al. (2019), eq. 3: adaptive ranges weigh equally, not by their counts.
    """
    n_nonempty = stats.nonempty.sum(axis=-1)
    total = np.where(stats.nonempty, np.abs(np.nan_to_num(stats.gap)), 0.0).sum(axis=-1)
    return np.where(n_nonempty > 0, total / np.maximum(n_nonempty, 1), 0.0)


# ----------------------------------------------------------------------------- sorted-values sweep

@dataclass(frozen=True)
class SortedValues:
    """Values sorted once, with prefix sums, so that any bins' sums cost O(B).

    For sorted values, a bin is a run of positions ``[start, end)``, and its
    count and sums are differences of the cumulative sums at its two ends.
    Sorting once (O(M log M)) then serves every bin count and both binnings:
    the bin-count sweeps, the debiased ECE's sweep and the lab's studies.

    Attributes
    ----------
    values : ndarray of shape (M,)
        The values, ascending.
    cum_values, cum_targets : ndarray of shape (M + 1,)
        ``[0, cumsum(values)]`` and ``[0, cumsum(targets in the same order)]``.
    group_ends : ndarray of shape (G,)
        End position (exclusive) of each run of tied values, ascending.
    """

    values: NDArray[np.float64]
    cum_values: NDArray[np.float64]
    cum_targets: NDArray[np.float64]
    group_ends: NDArray[np.intp]

    @property
    def n(self) -> int:
        return int(self.values.shape[0])


def sorted_pairs(values: NDArray[np.float64], targets: NDArray[np.float64]
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``values`` ascending with their ``targets``; tied values in an unspecified order.

    Probabilities with 0/1 targets are sorted as one int64 key per pair,
    ``bits(value) << 1 | target`` (the bits of a float in [0, 2) ascend with
    it and stay below 2^62; -0.0 comes back as +0.0): numpy's SIMD sort of
    integers, 8x faster than a stable arg-sort and two gathers. Other input
    takes the stable arg-sort. Sums over whole tie groups agree either way.
    """
    if (values.size and float(values.min()) >= 0.0 and float(values.max()) < 2.0
            and bool(((targets == 0.0) | (targets == 1.0)).all())):
        keys = values.view(np.int64) << 1
        keys |= targets.astype(np.int64)
        keys.sort()
        return (keys >> 1).view(np.float64), (keys & 1).astype(np.float64)
    order = np.argsort(values, kind="stable")
    return np.take(values, order), np.take(targets, order)


def sort_values(values: ArrayLike, targets: ArrayLike) -> SortedValues:
    """Sort ``values`` once and keep the prefix sums of values and targets (:class:`SortedValues`).

    The order among tied values does not matter: every bin ends at the end
    of a tie group (:func:`sorted_bin_ends`); :func:`sorted_pairs` sorts.
    """
    sorted_values, sorted_targets = sorted_pairs(np.asarray(values, dtype=np.float64),
                                                 np.asarray(targets, dtype=np.float64))
    m = sorted_values.shape[0]
    group_ends = (np.concatenate([np.flatnonzero(np.diff(sorted_values) > 0) + 1, [m]]).astype(np.intp) if m
                  else np.zeros(0, dtype=np.intp))
    return SortedValues(sorted_values, np.concatenate([[0.0], np.cumsum(sorted_values)]),
                        np.concatenate([[0.0], np.cumsum(sorted_targets)]), group_ends)


def sorted_bin_ends(sorted_values: SortedValues, n_bins: int, binning: str = "uniform", *,
                    right: bool = True) -> NDArray[np.intp]:
    """End positions (exclusive, ascending) of the non-empty bins of sorted values.

    The same bins as :func:`bin_statistics`: uniform bins end after the last
    value ``<= hi`` (``right=True``, ``(lo, hi]``) or ``< hi`` (``[lo, hi)``);
    adaptive bins end where :func:`numpy.array_split` cuts (edges by rank),
    moved to the end of their tie group so that tied values share a bin.
    Empty bins are dropped.
    """
    m = sorted_values.n
    if m == 0:
        return np.zeros(0, dtype=np.intp)
    if binning == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
        ends = np.concatenate([np.searchsorted(sorted_values.values, edges, side="right" if right else "left"),
                               [m]])
    else:
        ends = array_split_ends(m, n_bins)
        ends = ends[ends > 0]
        ends = sorted_values.group_ends[np.searchsorted(sorted_values.group_ends, ends, side="left")]
    return np.unique(ends[ends > 0]).astype(np.intp)


def sorted_bin_sums(sorted_values: SortedValues, n_bins: int, binning: str = "uniform", *,
                    right: bool = True) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Count, sum of values and sum of targets of each non-empty bin (:func:`sorted_bin_ends`).

    Examples
    --------
    >>> s = sort_values([0.9, 0.1, 0.2, 0.8], [1, 0, 1, 1])
    >>> [np.round(a, 12).tolist() for a in sorted_bin_sums(s, 2, "uniform")]
    [[2.0, 2.0], [0.3, 1.7], [1.0, 2.0]]
    """
    ends = sorted_bin_ends(sorted_values, n_bins, binning, right=right)
    starts = np.concatenate([[0], ends[:-1]])
    count = (ends - starts).astype(np.float64)
    return (count, sorted_values.cum_values[ends] - sorted_values.cum_values[starts],
            sorted_values.cum_targets[ends] - sorted_values.cum_targets[starts])


def sorted_columns_bin_sums(columns: SortedColumns, bin_counts: Sequence[int], binning: str = "uniform", *,
                            right: bool = True, threshold: float | None = None
                            ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Count, sum of values and sum of targets of every bin, for several bin counts and every row at once.

    The same bins as :func:`bin_statistics` and
    :func:`classwise_bin_statistics` (and :func:`sorted_bin_ends`): uniform
    bins end after the last value ``<= hi`` (``right=True``) or ``< hi``
    (``right=False``), the last bin at the end of the row; adaptive bins end
    where :func:`numpy.array_split` cuts the kept values (edges by rank),
    moved to the end of their tie group, so that tied values share a bin and
    bins emptied by ties have count 0.

    Parameters
    ----------
    columns : SortedColumns
        ``C`` sorted sets of ``M`` values (:func:`calib_core._accel.sort_columns`).
    bin_counts : sequence of int
        Bin counts, each in ``1..MAX_N_BINS``.
    binning : {"uniform", "adaptive"}
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False); no effect on adaptive bins.
    threshold : float, optional
        Drop the values ``<= threshold`` (TACE) before binning: in a sorted
        row the kept values are a suffix, whose length differs per row.

    Returns
    -------
    count, sum_value, sum_target : ndarray of shape (C, sum(bin_counts))
        The bins of ``bin_counts[j]`` are the columns
        ``offsets[j]:offsets[j + 1]``, ``offsets = [0, *np.cumsum(bin_counts)]``;
        empty bins have all three zero, and the counts of one bin count sum to
        the number of kept values of the row.

    Notes
    -----
    Cost: the uniform edges of every bin count are located in each row by
    one :func:`numpy.searchsorted` of their union (``O(E log M)`` per row);
    then every bin count costs ``O(B)`` gathers of the prefix sums per row,
    instead of a new pass over the ``M`` values.

    Examples
    --------
    >>> from calib_core._accel import sort_columns
    >>> s = sort_columns([[0.9, 0.1, 0.2, 0.8]], [[1, 0, 1, 1]])
    >>> [a.round(12).tolist() for a in sorted_columns_bin_sums(s, [1, 2])]
    [[[4.0, 2.0, 2.0]], [[2.0, 0.3, 1.7]], [[3.0, 1.0, 2.0]]]
    """
    counts = tuple(check_n_bins(n_bins) for n_bins in bin_counts)
    return column_bin_sums(columns, counts, check_binning(binning), check_right(right), threshold)


def optimal_n_bins(n: int, lipschitz: float = 1.0) -> int:
    """Bin count that balances statistical and binning bias (Futami & Fujisawa 2024).

    .. math:: B^* = \\left\\lfloor \\left( \\frac{2 n (1 + L)^2}{\\log 2} \\right)^{1/3} \\right\\rfloor

    Parameters
    ----------
    n : int
        Number of samples (>= 1).
    lipschitz : float, default 1.0
        Lipschitz constant L of ``E[Y | f(X) = p]`` in ``p``.

    Returns
    -------
    int
        At least 1.

    References
    ----------
    Futami, F. & Fujisawa, M. "Information-Theoretic Generalization Analysis for
    Expected Calibration Error", NeurIPS 2024: the bin count minimising the
    total-bias bound of Corollary 1, eq. (12), for uniform-width bins,
    ``(1 + L) / B + sqrt(2 B log 2 / n)``; eq. (13) and Figure 2 use it.

    Examples
    --------
    >>> optimal_n_bins(1000)
    22
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise CalibrationInputError(f"`n` must be a whole number >= 1, got {n!r}.")
    lipschitz = check_positive(lipschitz, "lipschitz", allow_zero=True)
    return max(1, math.floor((2 * int(n) * (1 + lipschitz) ** 2 / math.log(2)) ** (1 / 3)))
