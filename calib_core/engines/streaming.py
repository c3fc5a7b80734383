"""The passes over any engine: exact adaptive bins and KS error from mergeable statistics.

:func:`stream_metrics` runs the passes over any engine (a Python loop over
batches, Dask, Spark) given as ``run_pass(factory) -> merged statistics``:

* one pass for uniform bins (:class:`~calib_core.engines.stats.CalibrationStats`);
* two passes for exact adaptive bins (pass 1: brackets from the
  :class:`~calib_core.engines.sketch.QuantileSketch` es, pass 2:
  :class:`SecondPass`, exact order statistics and binned sums);
* exact KS needs one more pass over the few rows whose confidence falls
  where the maximum can be.

It returns a :class:`StreamResult` (the metrics, the statistics behind them
and, with ``exact=False``, error bounds of the one-pass sketch estimates).

Conventions are those of :mod:`calib_core.binning`: adaptive bins put each
value in the first bin whose upper edge, an order statistic at an
``np.array_split`` run end, is >= it. Streaming and in-memory results agree
to float64 round-off (the sums are added in another order).

References
----------
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, eq. 1-3 (ECE, SCE, ACE) and TACE.
.. [Gupta2021] Gupta, K. et al. "Calibration of Neural Networks using
   Splines", ICLR 2021, section 4 (KS error).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calib_core.binning import BinStats, binned_error, mean_abs_gap, upper_edge_index
from calib_core.engines.sketch import DEFAULT_SKETCH_CAPACITY, QuantileSketch, _adaptive_binstats, _run_end_ranks
from calib_core.engines.stats import (_BINNED_TOP, _LOOKUP_CELLS, _NORM_OF, CalibrationStats, _BatchUpdates,
                                      _set_keys)
from calib_core._accel import KeptValues, lookup_slots, slot_sums
from calib_core.metrics.binned import top_label
from calib_core.validation import CalibrationInputError, check_binning, check_count, check_n_bins, check_positive

__all__ = [
    "STREAM_METRICS",
    "WEIGHTED_STREAM_METRICS",
    "SecondPass",
    "check_weighted_request",
    "weighted_metric_keys",
    "StreamResult",
    "stream_metrics",
]

#: Metric keys :func:`stream_metrics` computes (those of :mod:`calib_core.metrics.registry`).
STREAM_METRICS = ("accuracy", "ece", "rmsce", "mce", "classwise_ece", "sce", "ace", "tace", "ks", "brier", "nll")

#: The keys :func:`stream_metrics` computes with row weights (``weighted=True``, uniform bins): weighted sums
#: in one pass. ACE, TACE, KS and adaptive bins need weighted order statistics, which the quantile sketch
#: (:class:`~calib_core.engines.sketch.QuantileSketch`, items of weight ``2**level``) does not keep.
WEIGHTED_STREAM_METRICS = ("accuracy", "ece", "rmsce", "mce", "classwise_ece", "sce", "brier", "nll")


def weighted_metric_keys(metrics: Sequence[str] | None, engine: str, weight_column: str) -> tuple[list[str], list[str]]:
    """The metric keys of a weighted streaming run, and the note saying what the default leaves out.

    ``metrics=None`` with weights means :data:`WEIGHTED_STREAM_METRICS` (the
    rest is named in the note); keys given are kept (and refused later by
    :func:`check_weighted_request` when they need weighted quantiles).
    """
    if metrics is not None:
        return list(dict.fromkeys(metrics)), []
    return list(WEIGHTED_STREAM_METRICS), [
        f"weighted by {weight_column!r}: the {engine} engine computes the uniform-bin metrics only (ACE, TACE, KS "
        "and adaptive bins need weighted quantiles, which its sketch does not keep; the memory engine computes them)"]


def check_weighted_request(metrics: Sequence[str], binning: str) -> None:

    """Refuse, with the reason, a weighted streaming run of a metric that needs weighted quantiles."""
    unsupported = [key for key in metrics if key not in WEIGHTED_STREAM_METRICS]
    if binning == "adaptive":
        unsupported = ["adaptive binning", *unsupported]
    if unsupported:
        raise CalibrationInputError(
            f"with row weights the streaming engines (stream, Dask, Spark) compute {', '.join(WEIGHTED_STREAM_METRICS)}"
            f" with uniform bins only, not {', '.join(unsupported)}: equal-mass bins and KS need weighted order "
            "statistics, and the quantile sketch the streaming passes use counts rows and takes no weights. "
            "Use the memory engine (engine='memory', --engine memory), which computes every weighted metric.")


#: Placeholders of :meth:`_Slots.add_set` for the kernel's unused targets or labels.
_NO_TARGETS = np.zeros(0)
_NO_LABELS = np.zeros(0, dtype=np.intp)
#: The lookup table of each cut-point array, shared by the slots of every batch of a pass (they hold the same
#: ``points`` object): built once per array, not once per batch and merge (with batches of a few rows, building
#: the 65,600-cell table took 40 % of a stream's time). Held weakly (:class:`calib_core._accel.KeptValues`).
_LOOKUP_TABLES = KeptValues(capacity=64)


def _set_of(key: str) -> tuple[str, int]:
    """``("top", -1)``, ``("class", k)`` or ``("above", k)`` from a value set's key (:func:`_set_keys`)."""
    kind = key.rstrip("0123456789")
    return kind, (int(key[len(kind):]) if kind != "top" else -1)


class _Slots:
    """Sums per slot of sorted cut points: slot 2i is (P[i-1], P[i]), slot 2i+1 is {P[i]}.

    Rows in the slots flagged ``collect`` are also kept one by one.
    """

    def __init__(self, points: NDArray[np.float64], collect: NDArray[np.bool_]) -> None:
        self.points = points
        self.collect = collect
        size = 2 * points.size + 1
        self.count = np.zeros(size)
        self.sum_value = np.zeros(size)
        self.sum_target = np.zeros(size)
        self.values: list[NDArray[np.float64]] = []
        self.targets: list[NDArray[np.float64]] = []
        self._table: NDArray[np.intp] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_table"] = None  # rebuilt where needed, not sent along
        return state

    def slot(self, values: NDArray[np.float64]) -> NDArray[np.intp]:
        """Slot of each value (checked probabilities), by a lookup table as :class:`_CellIndex` does.

        A grid cell ``[c / G, (c + 1) / G)`` without a point in it has one
        slot for all its values (``2 * #{points below it}``); the few values
        in grid cells that hold a point are placed by ``searchsorted``
        (:func:`calib_core._accel.lookup_slots`, as :meth:`add_set` does).
        """
        return lookup_slots(values, self._lookup(), float(_LOOKUP_CELLS), self.points)

    def _lookup(self) -> NDArray[np.signedinteger]:
        """The slot of each grid cell ``[c / G, (c + 1) / G)``, or -1 where a point lies in the cell.

        In the smallest signed type that holds every slot (int16 below 16,384
        points): a pass goes through the 21 value sets of a block in turn, and
        21 tables of 64 K int64 slots (11 MB) fall out of cache between blocks
        where int16 ones (2.8 MB) stay in it (10.5 -> 4 ns per value).
        """
        if self._table is None:
            self._table = _LOOKUP_TABLES.get((self.points,))
        if self._table is None:
            cells = np.arange(_LOOKUP_CELLS + 64, dtype=np.float64)
            table = 2 * np.searchsorted(self.points, (cells + 0.5) / _LOOKUP_CELLS, side="left")
            touched = np.floor(self.points * _LOOKUP_CELLS).astype(np.int64)
            table[touched[(touched >= 0) & (touched < table.size)]] = -1
            self._table = table.astype(np.int16 if self.count.size <= np.iinfo(np.int16).max else np.int32)
            self._table.flags.writeable = False
            _LOOKUP_TABLES.put((self.points,), (), self._table)
        return self._table

    def add_set(self, values: NDArray[np.float64], targets: NDArray[np.float64] | None,
                labels: NDArray[np.intp] | None = None, label: int = -1, threshold: float = -np.inf) -> None:
        """Add one value set of a block to the slot sums, without building it first.

        The values above ``threshold`` with their ``targets``, or with targets
        ``labels == label`` (``targets`` None): the sets of
        :func:`calib_core.engines.stats._value_sets`. Counted and summed per
        slot (:meth:`slot`), the values of the ``collect`` slots kept one by
        one, by :func:`calib_core._accel.slot_sums` (one read of the column
        with numba, its numpy twin otherwise: the same sums, bit for bit).
        """
        if values.size == 0:
            return
        size = self.count.size
        count, sum_value, sum_target = np.zeros(size), np.zeros(size), np.zeros(size)
        kept_values, kept_targets = np.empty(values.size), np.empty(values.size)
        n_kept = slot_sums(values, _NO_TARGETS if targets is None else targets,
                           _NO_LABELS if labels is None else labels, int(label), float(threshold), self._lookup(),
                           float(_LOOKUP_CELLS), self.points, self.collect, count, sum_value, sum_target,
                           kept_values, kept_targets)
        self.count += count
        self.sum_value += sum_value
        self.sum_target += sum_target
        if n_kept:
            self.values.append(kept_values[:n_kept].copy())
            self.targets.append(kept_targets[:n_kept].copy())

    def merge(self, other: "_Slots") -> "_Slots":
        merged = _Slots(self.points, self.collect)
        merged.count = self.count + other.count
        merged.sum_value = self.sum_value + other.sum_value
        merged.sum_target = self.sum_target + other.sum_target
        merged.values = self.values + other.values
        merged.targets = self.targets + other.targets
        return merged

    def collected(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if not self.values:
            return np.empty(0), np.empty(0)
        return np.concatenate(self.values), np.concatenate(self.targets)


def _bracket_slots(sketch: QuantileSketch, n_bins: int) -> _Slots:
    """Pass-2 slots for the exact adaptive edges of one set (from its pass-1 sketch)."""
    if sketch.n == 0:
        return _Slots(np.empty(0), np.zeros(1, dtype=bool))
    low, high = sketch.brackets(_run_end_ranks(sketch.n, n_bins))
    points = np.unique(np.concatenate([low[np.isfinite(low)], high[np.isfinite(high)]]))
    extended = np.concatenate([[-np.inf], points, [np.inf]])
    collect = np.zeros(2 * points.size + 1, dtype=bool)
    for a, b in zip(low, high):
        # Between-slot i lies in (a, b) iff a <= P[i-1] and P[i] <= b; point i iff a < P[i] < b.
        between = (a <= extended[:-1]) & (extended[1:] <= b)
        collect[0::2] |= between
        collect[1::2] |= (a < points) & (points < b)
    return _Slots(points, collect)


def _exact_adaptive(slots: _Slots, n_values: int, n_bins: int) -> BinStats:
    """Exact adaptive-bin sums of one set from its pass-2 slots."""
    total = int(round(slots.count.sum()))
    if total != n_values:
        raise CalibrationInputError(
            f"the data changed between passes: pass 1 saw {n_values} values, a later pass {total}. "
            "Do not modify the input while it is being evaluated."
        )
    if n_values == 0:
        return _adaptive_binstats(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), 0.0, n_bins)
    values, targets = slots.collected()
    order = np.argsort(values, kind="stable")
    values, targets = values[order], targets[order]
    value_slot = slots.slot(values)
    cumulative = np.cumsum(slots.count)
    ranks = _run_end_ranks(n_values, n_bins)
    edges = np.empty(ranks.size)
    for j, rank in enumerate(ranks):
        slot = int(np.searchsorted(cumulative, rank, side="left"))
        if slot % 2 == 1:
            edges[j] = slots.points[slot // 2]
            continue
        if not slots.collect[slot]:
            raise CalibrationInputError(
                "the data changed between passes (an order statistic fell outside its pass-1 bracket)."
            )
        before = cumulative[slot - 1] if slot else 0.0
        inside = values[value_slot == slot]
        edges[j] = inside[int(rank - before) - 1]
    size = edges.size
    extended = np.concatenate([[-np.inf], slots.points])
    slot_bin = np.empty(slots.count.size, dtype=np.intp)
    slot_bin[0::2] = np.searchsorted(edges, extended, side="right")
    slot_bin[1::2] = np.searchsorted(edges, slots.points, side="left")
    slot_bin = np.minimum(slot_bin, size - 1)
    certain = ~slots.collect
    count = np.bincount(slot_bin[certain], weights=slots.count[certain], minlength=size)
    sum_value = np.bincount(slot_bin[certain], weights=slots.sum_value[certain], minlength=size)
    sum_target = np.bincount(slot_bin[certain], weights=slots.sum_target[certain], minlength=size)
    if values.size:
        index = upper_edge_index(values, edges)
        count += np.bincount(index, minlength=size)
        sum_value += np.bincount(index, weights=values, minlength=size)
        sum_target += np.bincount(index, weights=targets, minlength=size)
    return _adaptive_binstats(count, sum_value, sum_target, edges, float(n_values), n_bins)


def _pad_binstats(stats: BinStats, n_bins: int) -> BinStats:
    """Adaptive sums extended with empty bins (NaN bounds) to ``n_bins``, so classes stack."""
    pad = n_bins - stats.count.size
    if pad <= 0:
        return stats
    zeros, nans = np.zeros(pad), np.full(pad, np.nan)
    return BinStats(np.concatenate([stats.count, zeros]), np.concatenate([stats.sum_value, zeros]),
                    np.concatenate([stats.sum_target, zeros]), np.concatenate([stats.lower, nans]),
                    np.concatenate([stats.upper, nans]), stats.n_total)


def _stack_binstats(parts: Sequence[BinStats]) -> BinStats:
    return BinStats(*(np.stack([getattr(p, name) for p in parts]) for name in ("count", "sum_value", "sum_target", "lower", "upper")),
                    np.asarray([float(p.n_total) for p in parts]))


# ---------------------------------------------------------------------------
# Pass 2 and 3 statistics (mergeable, picklable)
# ---------------------------------------------------------------------------

class SecondPass(_BatchUpdates):
    """Pass-2 statistics: exact adaptive brackets per value set and KS region sums."""

    def __init__(self, n_classes: int, brackets: dict[str, _Slots], ks_regions: _Slots | None,
                 threshold: float) -> None:
        self.n_classes = n_classes
        self.brackets = brackets
        self.ks_regions = ks_regions
        self.threshold = threshold
        self.n_rows = 0

    def fresh(self) -> "SecondPass":
        empty = {key: _Slots(s.points, s.collect) for key, s in self.brackets.items()}
        regions = None if self.ks_regions is None else _Slots(self.ks_regions.points, self.ks_regions.collect)
        return SecondPass(self.n_classes, empty, regions, self.threshold)

    def _add_checked(self, probs: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        confidence, correct = top_label(probs, labels)
        self.n_rows += probs.shape[0]
        for key, slots in self.brackets.items():  # each set straight from its column
            kind, label = _set_of(key)
            if kind == "top":
                slots.add_set(confidence, correct)
            else:
                slots.add_set(probs[:, label], None, labels, label, self.threshold if kind == "above" else -np.inf)
        if self.ks_regions is not None:
            self.ks_regions.add_set(confidence, correct)

    def merge(self, other: "SecondPass") -> "SecondPass":
        merged = SecondPass(self.n_classes, {key: s.merge(other.brackets[key]) for key, s in self.brackets.items()},
                            None if self.ks_regions is None else self.ks_regions.merge(other.ks_regions),
                            self.threshold)
        merged.n_rows = self.n_rows + other.n_rows
        return merged


def _fresh(template):
    """Factory for a pass: an empty copy of ``template`` (picklable via functools.partial)."""
    return template.fresh()


def _ks_candidates(regions: _Slots, n_rows: int) -> tuple[NDArray[np.bool_], float]:
    """Regions where max |D| may lie (D = cumulative sum of confidence - correctness), and the lower bound."""
    difference = np.cumsum(regions.sum_value - regions.sum_target)
    before = np.concatenate([[0.0], difference[:-1]])
    nonempty = regions.count > 0
    lower_bound = float(np.abs(difference[nonempty]).max()) if nonempty.any() else 0.0
    extended = np.concatenate([[-np.inf], regions.points, [np.inf]])
    candidate = np.zeros(regions.count.size, dtype=bool)
    between = np.flatnonzero(nonempty & (np.arange(regions.count.size) % 2 == 0))
    for slot in between:
        i = slot // 2
        lo = max(extended[i], 0.0)
        hi = min(extended[i + 1], 1.0 + 1e-4)
        n = regions.count[slot]
        hits = regions.sum_target[slot]
        # Partial sums over the first j rows (any order of correctness):
        # j * lo - min(j, hits) <= partial <= j * hi - max(0, j - (n - hits)).
        js = np.array([0.0, hits, n - hits, n])
        upper = before[slot] + (js * hi - np.maximum(0.0, js - (n - hits))).max()
        lower = before[slot] + (js * lo - np.minimum(js, hits)).min()
        slack = 1e-9 * (n + 1.0)
        if max(abs(upper), abs(lower)) + slack >= lower_bound:
            candidate[slot] = True
    return candidate, lower_bound


def _ks_from_collected(collect: _Slots, n_rows: int) -> float:
    """Exact max |D| / N from region sums and the rows collected in the candidate regions."""
    difference = np.cumsum(collect.sum_value - collect.sum_target)
    before = np.concatenate([[0.0], difference[:-1]])
    nonempty = collect.count > 0
    best = float(np.abs(difference[nonempty]).max()) if nonempty.any() else 0.0
    values, targets = collect.collected()
    if values.size:
        order = np.argsort(values, kind="stable")
        values = values[order]
        step = values - targets[order]
        slot = collect.slot(values)
        # Cumulative sums restarted at every region, plus the exact D before the region.
        running = np.cumsum(step)
        starts = np.flatnonzero(np.concatenate([[True], slot[1:] != slot[:-1]]))
        offset = np.repeat(running[starts] - step[starts], np.diff(np.append(starts, values.size)))
        partial = before[slot] + (running - offset)
        group_end = np.append(values[1:] != values[:-1], True)
        best = max(best, float(np.abs(partial[group_end]).max()))
    return best / n_rows


# ---------------------------------------------------------------------------
# The orchestration over any engine
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class StreamResult:
    """Metrics computed from mergeable statistics, and the statistics themselves.

    Attributes
    ----------
    metrics : dict of str to float
        Keys as in :mod:`calib_core.metrics.registry` (see :data:`STREAM_METRICS`).
    stats : CalibrationStats
        The pass-1 sums (uniform bins, scalars, sketches if any).
    adaptive : dict of str to BinStats
        Adaptive-bin sums when computed: ``"top_label"`` (shape
        ``(n_bins,)``), ``"classwise"`` and ``"classwise_above"`` (shape
        ``(K, n_bins)``; the latter over the values above ``threshold``).
    exact : bool
        True when every metric is exact (up to round-off); False when adaptive
        bins and KS come from the one-pass sketch.
    error_bounds : dict of str to float
        For approximate metrics, a bound on ``|approximate - exact|`` (see
        :func:`stream_metrics`); empty when exact.
    n_passes : int
        Passes made over the data.
    n_bins, binning, threshold
        The settings used.
    """

    metrics: dict[str, float]
    stats: CalibrationStats
    adaptive: dict[str, BinStats] = field(default_factory=dict)
    exact: bool = True
    error_bounds: dict[str, float] = field(default_factory=dict)
    n_passes: int = 1
    n_bins: int = 15
    binning: str = "uniform"
    threshold: float = 0.01

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary: metrics, settings and every per-bin sum (no rows)."""
        return {
            "metrics": dict(self.metrics),
            "exact": self.exact,
            "error_bounds": dict(self.error_bounds),
            "n_passes": self.n_passes,
            "n_bins": self.n_bins,
            "binning": self.binning,
            "threshold": self.threshold,
            "stats": _stats_dict_without_sketches(self.stats),
            "adaptive": {key: _binstats_dict(value) for key, value in self.adaptive.items()},
        }


def _stats_dict_without_sketches(stats: CalibrationStats) -> dict[str, Any]:
    data = stats.to_dict()
    data["sketches"] = None
    return data


def _binstats_dict(stats: BinStats) -> dict[str, Any]:
    def listed(a):
        return np.where(np.isnan(a), None, a).tolist() if np.ndim(a) else float(a)
    return {"count": np.asarray(stats.count).tolist(), "sum_value": np.asarray(stats.sum_value).tolist(),
            "sum_target": np.asarray(stats.sum_target).tolist(), "lower": listed(np.asarray(stats.lower, dtype=float)),
            "upper": listed(np.asarray(stats.upper, dtype=float)), "n_total": np.asarray(stats.n_total).tolist()}


def stream_metrics(run_pass: Callable[[Callable[[], Any]], Any], n_classes: int, *, n_bins: int = 15,
                   binning: str = "uniform", metrics: Sequence[str] | None = None, exact: bool = True,
                   threshold: float = 0.01, sweep_bins: Iterable[int] = (),
                   sketch_capacity: int = DEFAULT_SKETCH_CAPACITY, ks_regions: int = 8192,
                   ks_collect_rows: int = 4_000_000, collect_rows: int = 4_000_000,
                   weighted: bool = False) -> StreamResult:
    """Compute calibration metrics in passes over data that never sits in memory at once.

    Parameters
    ----------
    run_pass : callable
        ``run_pass(factory) -> statistics``: calls ``factory()`` for empty
        statistics objects, feeds them every batch of the data with
        ``.update(probs, labels)``, combines them with ``.merge`` and returns
        the result. ``factory`` is picklable (a :func:`functools.partial`),
        so a distributed engine can call it on its workers.
    n_classes : int
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Bins of ``ece``, ``rmsce``, ``mce`` and ``classwise_ece`` (``sce`` is
        always uniform, ``ace`` and ``tace`` always adaptive).
    metrics : sequence of str, optional
        Subset of :data:`STREAM_METRICS`; default all.
    exact : bool, default True
        Exact adaptive bins and KS (more passes) or one pass with the
        sketch and error bounds.
    threshold : float, default 0.01
        TACE threshold.
    sweep_bins : iterable of int
        Extra uniform bin counts to keep sums for.
    sketch_capacity : int
        :class:`QuantileSketch` capacity.
    ks_regions : int
        Number of regions (sketch quantiles) the exact KS pass sums over.
    ks_collect_rows : int
        At most this many rows are held to resolve the KS maximum; past it
        the regions are refined with another pass.
    collect_rows : int
        At most about this many values are held to find the exact adaptive
        edges; past it the sketch's brackets are narrowed with counting
        passes first, so memory does not grow with the number of rows.
    weighted : bool, default False
        The batches carry row weights (``update(..., sample_weight=w)``, or
        a weight column): every per-bin count and sum is a weighted sum
        (:class:`CalibrationStats` with ``weighted=True``), so the metrics
        equal the in-memory ones with ``sample_weight`` to round-off. Only
        :data:`WEIGHTED_STREAM_METRICS` with uniform bins; others raise
        :class:`CalibrationInputError` (weighted quantiles are not sketched).

    Returns
    -------
    StreamResult

    Notes
    -----
    Passes: 1 when every requested metric uses uniform bins (or without
    ``ks``); with adaptive bins or ``ks`` and ``exact=True``, pass 1 also
    builds the sketches, pass 2 finds the exact adaptive edges inside the
    sketch's brackets (:meth:`QuantileSketch.brackets`) and sums the bins,
    and, for ``ks``, sums the confidence and correctness between sketch
    quantiles; pass 3 collects the rows of the regions where the maximum
    of :math:`|D(q)| = |\\sum_{c_i \\le q} (c_i - a_i)|` can lie (bounded by
    the region sums) and resolves it exactly. When the sketch's brackets
    may hold more than ``collect_rows`` values (large tables: the sketch's
    rank error grows with the row count), pass 2 only counts them, and
    counting passes over ever narrower slices of the brackets come before
    the pass that collects, so the memory stays bounded; the same holds
    for the KS regions and ``ks_collect_rows``.

    With ``exact=False`` the adaptive metrics and KS come from the pass-1
    sketches; ``error_bounds`` then holds, for ``ks``, a bound on
    ``|KS_sketch - KS|``; for the adaptive ECE-type metrics, a bound on the
    difference to the exact metric computed with the sketch's (approximate,
    see :attr:`QuantileSketch.rank_error`) adaptive edges.
    """
    n_classes = check_count(n_classes, "n_classes", 2)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    threshold = check_positive(threshold, "threshold", allow_zero=True)
    wanted = list(STREAM_METRICS) if metrics is None else list(dict.fromkeys(metrics))
    for key in wanted:
        if key not in STREAM_METRICS:
            raise CalibrationInputError(f"unknown metric {key!r}; streaming supports: {', '.join(STREAM_METRICS)}.")
    if weighted:
        check_weighted_request(wanted, binning)
    adaptive_bins = binning == "adaptive"
    kinds = []
    if "ks" in wanted or (adaptive_bins and any(key in wanted for key in _BINNED_TOP)):
        kinds.append("top")
    if "ace" in wanted or (adaptive_bins and "classwise_ece" in wanted):
        kinds.append("class")
    if "tace" in wanted:
        kinds.append("above")
    factory = partial(CalibrationStats, n_classes, n_bins=n_bins, sweep_bins=tuple(sweep_bins),
                      sketch_capacity=sketch_capacity if kinds else None, sketch_sets=tuple(kinds),
                      threshold=threshold, **({"weighted": True} if weighted else {}))
    stats: CalibrationStats = run_pass(factory)

    stats._require_rows()
    n_rows = stats.n_rows
    uniform = stats.metrics()
    result: dict[str, float] = {}
    for key in wanted:
        if key in uniform and not (adaptive_bins and key in (*_BINNED_TOP, "classwise_ece")):
            result[key] = uniform[key]
    n_passes = 1
    bounds: dict[str, float] = {}
    adaptive: dict[str, BinStats] = {}
    sketches = stats.sketches or {}
    # Every sketched set also gets its adaptive bins (the top label's are cheap and serve the summary).
    adaptive_kinds = list(kinds)
    if kinds and not exact:
        for kind in adaptive_kinds:
            parts = [sketches[key].bin_statistics(n_bins) for key in _set_keys(n_classes, (kind,))]
            if kind == "top":
                adaptive["top_label"] = parts[0][0]
                if adaptive_bins:
                    bounds["ece"] = 2.0 * parts[0][1] / n_rows
            else:
                adaptive["classwise" if kind == "class" else "classwise_above"] = _stack_binstats([p for p, _ in parts])
                if kind == "class" and adaptive_bins:
                    bounds["classwise_ece"] = float(np.mean([2.0 * d / n_rows for _, d in parts]))
        if "ks" in wanted:
            estimate, bound = sketches["top"].ks_difference()
            result["ks"] = estimate / n_rows
            bounds["ks"] = bound / n_rows
    elif kinds:
        keys = _set_keys(n_classes, adaptive_kinds)
        ranks = {key: _run_end_ranks(sketches[key].n, n_bins) for key in keys}
        brackets = {key: _bracket_slots(sketches[key], n_bins) for key in keys}
        # Each bracket holds at most 4 rank errors of values. When together they may be more than
        # `collect_rows`, pass 2 counts the brackets cut into fine pieces instead of collecting them.
        bound = sum(4.0 * sketches[key].rank_error * ranks[key].size for key in keys)
        collect_now = bound <= collect_rows
        if not collect_now:
            # Enough pieces that the pieces holding the edges fit the budget if values spread evenly.
            pieces = int(min(1024, max(2, np.ceil(4.0 * bound / max(collect_rows, 1)))))
            brackets = {key: _refine(value, value.collect & (np.arange(value.collect.size) % 2 == 0), pieces)
                        for key, value in brackets.items()}
        regions = None
        if "ks" in wanted:
            top = sketches["top"]
            cut = np.unique(top.quantile(np.linspace(1, top.n, min(ks_regions, top.n))))
            regions = _Slots(cut, np.zeros(2 * cut.size + 1, dtype=bool))
        second: SecondPass = run_pass(partial(_fresh, SecondPass(n_classes, brackets, regions, threshold)))
        n_passes += 1
        _check_same_rows(n_rows, second.n_rows)
        slots, regions = second.brackets, second.ks_regions
        if not collect_now or regions is not None:
            narrowed, regions, extra_passes = _narrow_and_collect(
                run_pass, n_classes, None if collect_now else slots, ranks, regions, n_rows, threshold,
                collect_rows, ks_collect_rows)
            slots = slots if collect_now else narrowed
            n_passes += extra_passes
        for kind in adaptive_kinds:
            parts = [_exact_adaptive(slots[key], sketches[key].n, n_bins) for key in _set_keys(n_classes, (kind,))]
            if kind == "top":
                adaptive["top_label"] = parts[0]
            else:
                adaptive["classwise" if kind == "class" else "classwise_above"] = _stack_binstats(parts)
        if regions is not None:
            result["ks"] = _ks_from_collected(regions, n_rows)
    if "top_label" in adaptive and adaptive_bins:
        for key in _BINNED_TOP:
            if key in wanted:
                result[key] = float(binned_error(adaptive["top_label"], _NORM_OF[key]))
    if "classwise" in adaptive:
        if adaptive_bins and "classwise_ece" in wanted:
            result["classwise_ece"] = float(binned_error(adaptive["classwise"], "l1").mean())
        if "ace" in wanted:
            result["ace"] = float(mean_abs_gap(adaptive["classwise"]).mean())
    if "tace" in wanted:
        result["tace"] = float(mean_abs_gap(adaptive["classwise_above"]).mean())
    bounds = {key: value for key, value in bounds.items() if key in wanted}
    ordered = {key: float(result[key]) for key in wanted}
    return StreamResult(ordered, stats, adaptive, exact or not kinds, bounds, n_passes, n_bins, binning, threshold)


def _check_same_rows(first: int, later: int) -> None:
    if later != first:
        raise CalibrationInputError(f"the data changed between passes: pass 1 saw {first} rows, a later pass {later}.")


def _slots_holding(slots: _Slots, ranks: NDArray[np.float64]) -> NDArray[np.bool_]:
    """The between-slots that hold the values of the given 1-based ranks (point slots need no values)."""
    at = np.searchsorted(np.cumsum(slots.count), ranks, side="left")
    holding = np.zeros(slots.count.size, dtype=bool)
    holding[at[at % 2 == 0]] = True
    return holding


def _narrow_and_collect(run_pass: Callable[[Callable[[], Any]], Any], n_classes: int,
                        slots: dict[str, _Slots] | None, ranks: dict[str, NDArray[np.float64]],
                        regions: _Slots | None, n_rows: int, threshold: float, collect_rows: int,
                        ks_collect_rows: int) -> tuple[dict[str, _Slots], _Slots | None, int]:
    """Narrow counted slots down to the few values that decide the results, then collect those.

    ``slots``: per value set, counted slots around the adaptive edges (None
    when pass 2 collected them already); ``regions``: counted KS regions
    (None without KS). While the slots holding the target ranks hold more
    than ``collect_rows`` values, or the candidate KS regions more than
    ``ks_collect_rows`` rows, those are cut into 1024 equal-width pieces and
    counted again (one pass each, at most 8); then one pass collects the
    values of both. Returns the slots and regions of that pass and the
    number of passes made.
    """
    slots = slots or {}
    passes = 0
    for _ in range(8):
        holding = {key: _slots_holding(value, ranks[key]) for key, value in slots.items()}
        candidate = _ks_candidates(regions, n_rows)[0] if regions is not None else None
        narrow_slots = sum(value.count[holding[key]].sum() for key, value in slots.items()) > collect_rows
        narrow_regions = regions is not None and regions.count[candidate].sum() > ks_collect_rows
        if not (narrow_slots or narrow_regions):
            break
        counted: SecondPass = run_pass(partial(_fresh, SecondPass(
            n_classes,
            {key: _refine(value, holding[key]) if narrow_slots else _Slots(value.points, np.zeros_like(value.collect))
             for key, value in slots.items()},
            None if regions is None else _refine(regions, candidate) if narrow_regions else
            _Slots(regions.points, np.zeros_like(regions.collect)),
            threshold)))
        passes += 1
        _check_same_rows(n_rows, counted.n_rows)
        slots, regions = counted.brackets, counted.ks_regions
    holding = {key: _slots_holding(value, ranks[key]) for key, value in slots.items()}
    flagged = {key: _Slots(value.points, holding[key]) for key, value in slots.items()}
    flagged_regions = None if regions is None else _Slots(regions.points, _ks_candidates(regions, n_rows)[0])
    collected: SecondPass = run_pass(partial(_fresh, SecondPass(n_classes, flagged, flagged_regions, threshold)))
    _check_same_rows(n_rows, collected.n_rows)
    return collected.brackets, collected.ks_regions, passes + 1


def _refine(regions: _Slots, candidate: NDArray[np.bool_], pieces: int = 1024) -> _Slots:
    """Cut every candidate region into ``pieces`` equal-width parts (for another region-sum pass)."""
    extended = np.concatenate([[-np.inf], regions.points, [np.inf]])
    new_points = [regions.points]
    for slot in np.flatnonzero(candidate):
        i = slot // 2
        lo, hi = max(extended[i], 0.0), min(extended[i + 1], 1.0)
        if hi > lo:
            new_points.append(np.linspace(lo, hi, pieces + 1)[1:-1])
    points = np.unique(np.concatenate(new_points))
    return _Slots(points, np.zeros(2 * points.size + 1, dtype=bool))
