"""The mergeable one-pass quantile sketch behind approximate adaptive bins and KS error.

:class:`QuantileSketch` holds items that carry, besides a key, the range of
the values they stand for and the sums of those values and of their 0/1
targets. Its rank error is tracked exactly (:attr:`QuantileSketch.rank_error`)
and every item knows the range of the values it holds, so the sketch gives
approximate adaptive bins and KS error *with* an error bound in one pass,
and brackets for the exact order statistics of a second pass (see
:func:`calib_core.engines.streaming.stream_metrics`).

The helpers ``_run_end_ranks`` and ``_adaptive_binstats`` state the adaptive
conventions of :func:`calib_core.binning.bin_statistics` (an upper edge is the
order statistic at an ``np.array_split`` run end) once for the sketch and
for the exact passes.

References
----------
.. [MRL1998] Manku, G. S., Rajagopalan, S. & Lindsay, B. G. "Approximate
   medians and other quantiles in one pass and with limited memory",
   SIGMOD 1998 (the compaction scheme of :class:`QuantileSketch`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import BinStats, array_split_ends, sorted_pairs, upper_edge_index
from calib_core.validation import CalibrationInputError, check_n_bins

__all__ = [
    "DEFAULT_SKETCH_CAPACITY",
    "QuantileSketch",
]

#: Items a :class:`QuantileSketch` level may hold before it is compacted.
DEFAULT_SKETCH_CAPACITY = 4096


def _check_same(a: Any, b: Any, what: str) -> None:
    """Refuse to merge statistics whose settings differ (every mergeable object of the engines calls it)."""
    if a != b:
        raise CalibrationInputError(f"cannot merge statistics with different {what}: {a!r} and {b!r}.")


#: Rows of an item array: key, smallest and largest value held, sums of the values and of the targets.
_KEY, _LO, _HI, _SUM_VALUE, _SUM_TARGET = range(5)


class QuantileSketch:
    """Mergeable one-pass quantile sketch whose items carry value and target sums.

    Parameters
    ----------
    capacity : int, default 4096
        A level is compacted when it holds more than ``capacity`` items.
        Memory is at most about ``capacity * (log2(N / capacity) + 2)``
        items of 5 floats.

    Notes
    -----
    Level ``h`` holds items of weight :math:`2^h`. Every item stands for the
    rows merged into it and stores a *key* (the value of one of them), the
    smallest and largest value (*span*) and the sums of their values and
    targets. A batch enters level 0 (one item per row); a level with more
    than ``capacity`` items is sorted by key and consecutive pairs are
    merged into items of the next level, keeping the key of the lower or,
    alternately, the upper item (Manku, Rajagopalan & Lindsay 1998). Merging
    two sketches concatenates their levels and compacts.

    Rank error. With :math:`R(q) = \\#\\{v \\le q\\}` and the estimate
    :math:`\\hat R(q) = \\sum_{key \\le q} w`, one compaction at level h
    moves the key of at most one item across any q, so

    .. math:: |\\hat R(q) - R(q)| \\le E = \\sum_{\\text{compactions}} 2^{h},

    tracked exactly in :attr:`rank_error`. Each level is compacted at most
    about :math:`N / (2^h \\cdot capacity)` times, so
    :math:`E \\le N (\\lceil \\log_2(N / capacity) \\rceil + 2) / capacity`.
    The spans give a second, a-posteriori certificate:
    :math:`\\sum_{hi \\le q} w \\le R(q) \\le \\sum_{lo \\le q} w`
    (:meth:`rank_bounds`).

    Examples
    --------
    >>> sketch = QuantileSketch(capacity=64).update(np.arange(1000) / 1000.0)
    >>> low, high = sketch.rank_bounds(0.5)
    >>> bool(low <= 501 <= high), sketch.rank_error <= 1000 * (4 + 2) / 64
    (True, True)
    """

    def __init__(self, capacity: int = DEFAULT_SKETCH_CAPACITY) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 2:
            raise CalibrationInputError(f"`capacity` must be a whole number >= 2, got {capacity!r}.")
        self.capacity = int(capacity)
        self.n = 0
        self.rank_error = 0
        self._levels: list[NDArray[np.float64]] = []
        self._parity: list[int] = []

    def update(self, values: ArrayLike, targets: ArrayLike | None = None) -> "QuantileSketch":
        """Add values (with 0/1 targets, default 0); returns ``self``."""
        values = np.asarray(values, dtype=np.float64).ravel()
        targets = np.zeros_like(values) if targets is None else np.asarray(targets, dtype=np.float64).ravel()
        if values.shape != targets.shape:
            raise CalibrationInputError(
                f"`values` and `targets` must have the same length, got {values.size} and {targets.size}."
            )
        if values.size == 0:
            return self
        if not np.isfinite(values).all():
            raise CalibrationInputError("`values` contains NaN or infinite values.")
        self.n += int(values.size)
        held = self._levels[0] if self._levels else np.empty((5, 0))
        if held.shape[1] + values.size <= self.capacity:
            self._push(0, np.stack([values, values, values, values, targets]))
        else:
            # Level 0 overflows: compact it from its keys and targets alone (a level-0 item is one value,
            # key = lo = hi = sum of values), the same items as from the five rows, at about half the cost.
            if held.shape[1]:
                values, targets = np.concatenate([held[_KEY], values]), np.concatenate([held[_SUM_TARGET], targets])
            values, targets = sorted_pairs(values, targets)
            self._push(0, np.empty((5, 0)))
            self._compact(0, values, values, values, values, targets)
        self._compress()
        return self

    def _push(self, level: int, items: NDArray[np.float64]) -> None:
        while len(self._levels) <= level:
            self._levels.append(np.empty((5, 0)))
            self._parity.append(0)
        current = self._levels[level]
        self._levels[level] = items if current.shape[1] == 0 else np.concatenate([current, items], axis=1)

    def _compress(self) -> None:
        level = 0
        while level < len(self._levels):
            items = self._levels[level]
            if items.shape[1] > self.capacity:
                # Any order of equal keys keeps the rank bounds. A level holds a few runs sorted by key (what
                # compactions below pushed): the stable sort merges runs in linear time (3x quicksort's speed).
                self._compact(level, *np.take(items, np.argsort(items[_KEY], kind="stable"), axis=1))
            level += 1

    def _compact(self, level: int, key: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64],
                 sum_value: NDArray[np.float64], sum_target: NDArray[np.float64]) -> None:
        """Merge consecutive pairs of a level's items (rows sorted by key) into the next level; one may stay."""
        paired = key.size // 2 * 2
        merged = np.empty((5, paired // 2))
        merged[_KEY] = key[1:paired:2] if self._parity[level] else key[0:paired:2]
        merged[_LO] = np.minimum(lo[0:paired:2], lo[1:paired:2])
        merged[_HI] = np.maximum(hi[0:paired:2], hi[1:paired:2])
        merged[_SUM_VALUE] = sum_value[0:paired:2] + sum_value[1:paired:2]
        merged[_SUM_TARGET] = sum_target[0:paired:2] + sum_target[1:paired:2]
        self._levels[level] = np.stack([key[paired:], lo[paired:], hi[paired:], sum_value[paired:], sum_target[paired:]])
        self._parity[level] ^= 1
        self.rank_error += 1 << level
        self._push(level + 1, merged)

    def merge(self, other: "QuantileSketch") -> "QuantileSketch":
        """A new sketch of the union of both inputs; rank errors add up."""
        if not isinstance(other, QuantileSketch):
            raise CalibrationInputError(f"can only merge QuantileSketch, got {type(other).__name__}.")
        _check_same(self.capacity, other.capacity, "sketch capacities")
        merged = QuantileSketch(self.capacity)
        merged.n = self.n + other.n
        merged.rank_error = self.rank_error + other.rank_error
        for source in (self, other):
            for level, items in enumerate(source._levels):
                if items.shape[1]:
                    merged._push(level, items.copy())
        for level in range(len(merged._levels)):
            merged._parity[level] = (self._parity[level] if level < len(self._parity) else 0) ^ (
                other._parity[level] if level < len(other._parity) else 0)
        merged._compress()
        return merged

    # -- queries -------------------------------------------------------------
    def items(self) -> tuple[NDArray[np.float64], ...]:
        """All items sorted by key: ``key, lo, hi, weight, sum_value, sum_target``."""
        if not self._levels:
            empty = np.empty(0)
            return empty, empty, empty, empty, empty, empty
        stacked = np.concatenate(self._levels, axis=1)
        weight = np.concatenate([np.full(items.shape[1], float(1 << level)) for level, items in enumerate(self._levels)])
        order = np.argsort(stacked[_KEY], kind="stable")
        stacked, weight = stacked[:, order], weight[order]
        return stacked[_KEY], stacked[_LO], stacked[_HI], weight, stacked[_SUM_VALUE], stacked[_SUM_TARGET]

    @property
    def n_items(self) -> int:
        """Number of items held."""
        return int(sum(items.shape[1] for items in self._levels))

    def rank(self, q: ArrayLike) -> NDArray[np.float64]:
        """Estimated :math:`R(q) = \\#\\{v \\le q\\}`; within :attr:`rank_error` of the truth."""
        key, _, _, weight, _, _ = self.items()
        cumulative = np.concatenate([[0.0], np.cumsum(weight)])
        return cumulative[np.searchsorted(key, q, side="right")]

    def rank_bounds(self, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Certain bounds ``(low, high)`` with ``low <= #{v <= q} <= high`` from the item spans."""
        _, lo, hi, weight, _, _ = self.items()
        low = _weight_at_or_below(hi, weight, q)
        high = _weight_at_or_below(lo, weight, q)
        return low, high

    def quantile(self, rank: ArrayLike) -> NDArray[np.float64]:
        """Smallest key whose estimated rank is >= ``rank`` (1-based, clipped to 1..N)."""
        if self.n == 0:
            raise CalibrationInputError("the sketch is empty; no quantiles.")
        key, _, _, weight, _, _ = self.items()
        cumulative = np.cumsum(weight)
        rank = np.clip(np.asarray(rank, dtype=np.float64), 1, self.n)
        return key[np.minimum(np.searchsorted(cumulative, rank, side="left"), key.size - 1)]

    def brackets(self, rank: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Values ``a <= b`` with ``#{v < a} < rank <= #{v <= b}``: the order statistic lies in [a, b].

        ``a`` may be ``-inf`` and ``b`` ``+inf``. Both the rank-error bound
        and the spans give a valid bracket; the tighter of each is kept. At
        most ``4 * rank_error`` values lie strictly between ``a`` and ``b``.
        """
        rank = np.atleast_1d(np.asarray(rank, dtype=np.float64))
        key, lo, hi, weight, _, _ = self.items()
        cumulative = np.cumsum(weight)
        error = self.rank_error
        # Key-based: quantile(t) has #{v < x} <= t - 1 + E and #{v <= x} >= t - E.
        low_rank = rank - error
        a_key = np.where(low_rank >= 1, key[np.minimum(np.searchsorted(cumulative, np.maximum(low_rank, 1), "left"), key.size - 1)], -np.inf)
        high_rank = rank + error
        b_key = np.where(high_rank <= self.n, key[np.minimum(np.searchsorted(cumulative, np.minimum(high_rank, self.n), "left"), key.size - 1)], np.inf)
        # Span-based: #{v < a} <= sum_{lo < a} w and #{v <= b} >= sum_{hi <= b} w.
        lo_order = np.argsort(lo, kind="stable")
        lo_sorted, lo_cumulative = lo[lo_order], np.cumsum(weight[lo_order])
        at = np.searchsorted(lo_cumulative, rank, side="left")
        a_span = np.where(at < lo_sorted.size, lo_sorted[np.minimum(at, lo_sorted.size - 1)], -np.inf)
        hi_order = np.argsort(hi, kind="stable")
        hi_sorted, hi_cumulative = hi[hi_order], np.cumsum(weight[hi_order])
        at = np.searchsorted(hi_cumulative, rank, side="left")
        b_span = np.where(at < hi_sorted.size, hi_sorted[np.minimum(at, hi_sorted.size - 1)], np.inf)
        return np.maximum(a_key, a_span), np.minimum(b_key, b_span)

    def adaptive_edges(self, n_bins: int) -> NDArray[np.float64]:
        """Approximate adaptive upper edges: keys at the ``np.array_split`` run ends."""
        n_bins = check_n_bins(n_bins)
        if self.n == 0:
            return np.empty(0)
        return self.quantile(_run_end_ranks(self.n, n_bins))

    def bin_statistics(self, n_bins: int) -> tuple[BinStats, float]:
        """Approximate adaptive-bin sums from the items alone, and an error bound.

        Returns
        -------
        stats : BinStats
            Items binned by key with :meth:`adaptive_edges` (arrays of length
            ``n_bins``; bins beyond the edges are empty).
        displaced : float
            Upper bound on the number of rows whose bin differs from the bin
            their own value falls in with the same edges: the weight of the
            items whose span crosses an edge, summed over edges. The l1 error
            (ECE) differs from the exact one with these edges by at most
            ``2 * displaced / N``.
        """
        n_bins = check_n_bins(n_bins)
        edges = self.adaptive_edges(n_bins)
        key, lo, hi, weight, sum_value, sum_target = self.items()
        if edges.size == 0:
            zeros = np.zeros(n_bins)
            return BinStats(zeros, zeros, zeros, np.full(n_bins, np.nan), np.full(n_bins, np.nan), 0.0), 0.0
        index = upper_edge_index(key, edges)
        size = edges.size
        count = np.bincount(index, weights=weight, minlength=size)
        sums_value = np.bincount(index, weights=sum_value, minlength=size)
        sums_target = np.bincount(index, weights=sum_target, minlength=size)
        displaced = float(sum(weight[(lo <= edge) & (hi > edge)].sum() for edge in edges[:-1]))
        stats = _adaptive_binstats(count, sums_value, sums_target, edges, float(self.n), n_bins)
        return stats, displaced

    def ks_difference(self) -> tuple[float, float]:
        """Approximate :math:`\\max_q |\\sum_{v \\le q} (v - t)|` and a bound on its error.

        With values = top-label confidences and targets = correctness this is
        N times the KS error. The error is at most the largest total weight
        of the items whose span straddles one point.
        """
        key, lo, hi, weight, sum_value, sum_target = self.items()
        if key.size == 0:
            return 0.0, 0.0
        difference = np.cumsum(sum_value - sum_target)
        last_of_key = np.append(key[1:] != key[:-1], True)
        estimate = float(np.abs(difference[last_of_key]).max())
        # Straddling weight at q: sum of w with lo <= q < hi; maximal at some lo.
        events = np.concatenate([lo, hi])
        change = np.concatenate([weight, -weight])
        order = np.lexsort((change, events))  # at equal points, leave (hi) before enter (lo)
        running = np.cumsum(change[order])
        return estimate, float(max(running.max(), 0.0))

    # -- serialisation -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form (levels as lists)."""
        return {"capacity": self.capacity, "n": self.n, "rank_error": self.rank_error,
                "parity": list(self._parity), "levels": [items.tolist() for items in self._levels]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QuantileSketch":
        """Inverse of :meth:`to_dict`."""
        sketch = cls(int(data["capacity"]))
        sketch.n = int(data["n"])
        sketch.rank_error = int(data["rank_error"])
        sketch._parity = [int(p) for p in data["parity"]]
        sketch._levels = [np.asarray(items, dtype=np.float64).reshape(5, -1) for items in data["levels"]]
        if len(sketch._parity) != len(sketch._levels):
            raise CalibrationInputError("damaged QuantileSketch: parity and levels differ in length.")
        return sketch

    def __repr__(self) -> str:
        return f"QuantileSketch(capacity={self.capacity}, n={self.n}, items={self.n_items}, rank_error={self.rank_error})"


def _weight_at_or_below(points: NDArray[np.float64], weight: NDArray[np.float64], q: ArrayLike) -> NDArray[np.float64]:
    order = np.argsort(points, kind="stable")
    cumulative = np.concatenate([[0.0], np.cumsum(weight[order])])
    return cumulative[np.searchsorted(points[order], q, side="right")]


def _run_end_ranks(n_values: int, n_bins: int) -> NDArray[np.float64]:
    """1-based ranks of the last value of each non-empty ``np.array_split`` run."""
    ends = array_split_ends(n_values, n_bins)
    starts = np.concatenate([[0], ends[:-1]])
    return ends[ends > starts].astype(np.float64)


def _adaptive_binstats(count, sum_value, sum_target, edges, n_total, n_bins: int | None = None) -> BinStats:
    """BinStats with the adaptive conventions of :func:`calib_core.binning.bin_statistics`."""
    upper = np.asarray(edges, dtype=np.float64)
    lower = np.concatenate([[0.0], upper[:-1]])
    tied_away = count == 0
    lower = np.where(tied_away, np.nan, lower)
    upper = np.where(tied_away, np.nan, upper)
    if n_bins is not None and count.size < n_bins:
        pad = n_bins - count.size
        count, sum_value, sum_target = (np.concatenate([a, np.zeros(pad)]) for a in (count, sum_value, sum_target))
        lower, upper = (np.concatenate([a, np.full(pad, np.nan)]) for a in (lower, upper))
    return BinStats(count, sum_value, sum_target, lower, upper, n_total)
