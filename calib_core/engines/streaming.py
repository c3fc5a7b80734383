"""Mergeable calibration statistics: exact metrics over tables larger than memory.

Binned calibration errors, accuracy, Brier score and NLL are functions of
sums over rows, so they can be computed in one pass over record batches and
merged across machines. This module holds those sums and the passes that
adaptive bins and the KS error need on top of them:

* :class:`CalibrationStats` -- one pass, exact: per-bin count / sum of
  confidence / sum of correctness for the top label and for every class
  (uniform bins, for one bin count or a whole sweep of bin counts at once),
  label counts, per-class probability sums and the sums behind accuracy,
  Brier score and NLL. ``update`` with a batch, ``merge`` with another,
  ``metrics()`` for the numbers, ``to_json``/``from_json`` to move it.
* :class:`QuantileSketch` -- a mergeable one-pass quantile sketch whose
  items also carry the sums of the values and targets they stand for. Its
  rank error is tracked exactly (:attr:`QuantileSketch.rank_error`) and
  every item knows the range of the values it holds, so the sketch gives
  approximate adaptive bins and KS error *with* an error bound in one pass,
  and brackets for the exact order statistics in a second pass.
* :func:`stream_metrics` -- runs the passes over any engine (a Python loop
  over batches, Dask, Spark) given as ``run_pass(factory) -> merged
  statistics``: one pass for uniform bins; two passes for exact adaptive
  bins (pass 1: sketch brackets, pass 2: exact order statistics and binned
  sums); exact KS needs one more pass over the few rows whose confidence
  falls where the maximum can be.

Conventions are those of :mod:`calib_core.binning`: uniform bins are
``(lo, hi]`` with edges ``np.linspace(0, 1, n_bins + 1)`` (the first bin also
holds 0); adaptive bins put each value in the first bin whose upper edge,
an order statistic at an ``np.array_split`` run end, is >= it. Streaming and
in-memory results agree to float64 round-off (the sums are added in another
order).

References
----------
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, eq. 1-3 (ECE, SCE, ACE) and TACE.
.. [Gupta2021] Gupta, K. et al. "Calibration of Neural Networks using
   Splines", ICLR 2021, section 4 (KS error).
.. [MRL1998] Manku, G. S., Rajagopalan, S. & Lindsay, B. G. "Approximate
   medians and other quantiles in one pass and with limited memory",
   SIGMOD 1998 (the compaction scheme of :class:`QuantileSketch`).
"""
from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import binned_error, mean_abs_gap
from calib_core.binning import BinStats, array_split_ends, upper_edge_index
from calib_core.metrics.scores import NLL_EPSILON
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_n_bins,
    check_positive,
    check_probs_columns,
    check_probs_labels,
)

__all__ = [
    "CalibrationStats",
    "DEFAULT_SKETCH_CAPACITY",
    "GroupedStats",
    "MAX_STREAM_GROUPS",
    "QuantileSketch",
    "STREAM_METRICS",
    "StreamResult",
    "stream_metrics",
]

#: Items a :class:`QuantileSketch` level may hold before it is compacted.
DEFAULT_SKETCH_CAPACITY = 4096

#: Metric keys :func:`stream_metrics` computes (those of :mod:`calib_core.metrics.registry`).
STREAM_METRICS = ("accuracy", "ece", "rmsce", "mce", "classwise_ece", "sce", "ace", "tace", "ks", "brier", "nll")

_SET_KINDS = ("top", "class", "above")
_BINNED_TOP = ("ece", "rmsce", "mce")
_NORM_OF = {"ece": "l1", "rmsce": "l2", "mce": "max"}
_FORMAT = "calib_core.CalibrationStats/1"


def _check_batch(probs: ArrayLike, labels: ArrayLike, n_classes: int, *,
                 class_major: bool = False) -> tuple[NDArray[np.float64], NDArray[np.intp]] | None:
    """Checked batch in the layout given, or None for a batch without rows.

    ``class_major=False``: ``probs`` has shape ``(n, K)``; True: ``(K, n)``.
    """
    array = np.asarray(probs)
    rows_axis, what = (1, "rows") if class_major else (0, "columns")
    if array.ndim == 2 and array.shape[rows_axis] == 0:
        _check_class_count(array.shape[1 - rows_axis], n_classes, what)
        if np.asarray(labels).size:
            raise CalibrationInputError(f"`labels` has {np.asarray(labels).size} entries but `probs` has 0 rows.")
        return None
    if class_major:
        array, labels = check_probs_columns(array, labels)
    else:
        array, labels = check_probs_labels(array, labels)
    _check_class_count(array.shape[1 - rows_axis], n_classes, what)
    return array, labels


def _check_class_count(found: int, n_classes: int, what: str) -> None:
    if found != n_classes:
        raise CalibrationInputError(f"`probs` has {found} {what} but the statistics are for {n_classes} classes.")


class _BatchUpdates(abc.ABC):
    """``update`` (rows) and ``update_columns`` (class-major) for every statistics object.

    Both check the batch with the shared validator and hand it to
    ``_add_checked(probs, labels)`` as an ``(n, K)`` array (for class-major
    input, a transposed view: no copy).
    """

    n_classes: int

    def update(self, probs: ArrayLike, labels: ArrayLike):
        """Add a batch of rows (in place); returns ``self``.

        Parameters
        ----------
        probs : array_like of shape (n, K)
            Probabilities of the batch; ``n`` may be 0.
        labels : array_like of shape (n,)

        Raises
        ------
        CalibrationInputError
            Invalid batch, or a batch with another number of classes.
        """
        checked = _check_batch(probs, labels, self.n_classes)
        if checked is not None:
            self._add_checked(*checked)
        return self

    def update_columns(self, columns: ArrayLike, labels: ArrayLike):
        """Add a batch stored class-major, shape ``(K, n)`` (in place); returns ``self``.

        The layout in which columnar files (Parquet, Arrow) arrive: row k
        holds the probabilities of class k. Same result as
        ``update(columns.T, labels)``, without the transposed copy.

        Raises
        ------
        CalibrationInputError
            As :meth:`update`.
        """
        checked = _check_batch(columns, labels, self.n_classes, class_major=True)
        if checked is not None:
            self._add_checked(checked[0].T, checked[1])
        return self

    @abc.abstractmethod
    def _add_checked(self, probs: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        """Add a checked batch of shape ``(n, K)`` (any memory layout)."""


def _check_n_classes(n_classes: object) -> int:
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise CalibrationInputError(f"`n_classes` must be a whole number >= 2, got {n_classes!r}.")
    return int(n_classes)


def _union_edges(bin_counts: Iterable[int]) -> NDArray[np.float64]:
    """Sorted union of the uniform edges of several bin counts (exact floats, 0 and 1 included)."""
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, n + 1) for n in bin_counts]))


def _check_same(a: Any, b: Any, what: str) -> None:
    if a != b:
        raise CalibrationInputError(f"cannot merge statistics with different {what}: {a!r} and {b!r}.")


# ---------------------------------------------------------------------------
# One pass, exact: uniform bins and scalar sums
# ---------------------------------------------------------------------------

#: Values per block of rows processed at once by :meth:`CalibrationStats.update`.
_BLOCK_VALUES = 1 << 17

#: Resolution of the lookup table of :class:`_CellIndex` (a power of two, so ``v * G`` is exact).
_LOOKUP_CELLS = 1 << 16


class _CellIndex:
    """Fast exact :func:`calib_core.binning.upper_edge_index` for fixed edges on [0, 1].

    ``floor(v * G)`` with G a power of two is exact, so every value in the
    grid cell ``[c / G, (c + 1) / G)`` has the same index unless an edge lies
    in that grid cell; those few grid cells are marked -1 and their values
    go through :func:`~calib_core.binning.upper_edge_index` itself. The
    table is built with ``upper_edge_index`` too, so both paths share one
    definition. Values must be validated probabilities (in [0, 1 + 1e-4]).
    """

    def __init__(self, upper: NDArray[np.float64]) -> None:
        self.upper = upper
        grid = _LOOKUP_CELLS
        start = np.arange(grid + 64, dtype=np.float64) / grid
        table = upper_edge_index(start + 0.5 / grid, upper)
        edge_cell = np.floor(upper * grid).astype(np.int64)
        ambiguous = edge_cell[(edge_cell >= 0) & (edge_cell < grid)]
        table[ambiguous] = -1
        # Values >= 1 all go to the last bin (1.0 is the last upper edge).
        table[grid:] = upper.size - 1
        self.table = table

    def __call__(self, values: NDArray[np.float64], out: NDArray[np.intp] | None = None) -> NDArray[np.intp]:
        """Cell index of every value; ``out`` (C-contiguous, the shape of ``values``) is reused if given."""
        index = np.multiply(values, float(_LOOKUP_CELLS), out=out if out is not None else np.empty(values.shape, np.intp),
                            casting="unsafe")
        # In place: each entry is read before it is overwritten. "wrap" skips the bounds check;
        # checked values (at most 1 + 1e-4) stay inside the table.
        self.table.take(index, out=index, mode="wrap")
        flat = index.reshape(-1)
        unsure = np.flatnonzero(flat < 0)
        if unsure.size:
            flat[unsure] = upper_edge_index(values.reshape(-1)[unsure], self.upper)
        return index


#: Sub-histograms per sum: neighbouring rows add to different copies of a cell's counter,
#: so a run of values in one cell does not wait on one memory location (merged after each block).
_LANES = 4


def _lane_sums(index: NDArray[np.intp], n_out: int, weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Per-cell sums of ``weights`` (counts without) for lane-offset cell indices, the lanes added up."""
    sums = np.bincount(index, weights=weights, minlength=_LANES * n_out).reshape(_LANES, n_out).sum(axis=0)
    return sums.astype(np.float64, copy=False)  # bincount of no values gives integers


class _BlockScratch:
    """Arrays reused from block to block by :meth:`CalibrationStats._prepare`.

    Fresh arrays of a block's size cost a page fault per 4 KiB (about as
    much as the arithmetic on them), so each block's class values and cell
    indices are written into these instead.
    """

    def __init__(self, n_classes: int, n_rows: int) -> None:
        self.n_classes = n_classes
        self.n_rows = n_rows
        self._values = np.empty(n_classes * n_rows)
        self._cells = np.empty(n_classes * n_rows, dtype=np.intp)

    def load(self, columns: NDArray[np.float64] | Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """Copy a block (a ``(K, m)`` array in any layout, or K arrays of length m) in; return the ``(K, m)`` view."""
        n_rows = len(columns[0])
        if n_rows > self.n_rows:
            raise ValueError(f"a block of {n_rows} rows does not fit scratch space for {self.n_rows}.")
        values = self._values[:self.n_classes * n_rows].reshape(self.n_classes, n_rows)
        if isinstance(columns, np.ndarray):
            np.copyto(values, columns)
        else:
            for row, column in zip(values, columns):
                row[:] = column
        return values

    def cells(self, size: int) -> NDArray[np.intp]:
        """A flat array of ``size`` cell indices (at most K times the block's rows)."""
        return self._cells[:size]


@dataclass(frozen=True)
class _PreparedBlock:
    """One block of rows reduced to what :meth:`CalibrationStats._add_prepared` adds up.

    ``binned_cells`` / ``binned_values``: the class values above the first
    cell's upper edge, with their cells (offset by ``k * n_cells`` for class
    k and by the lane, see :data:`_LANES`); every other value lies in cell 0
    of its class, whose count and sum follow from ``class_totals``.
    ``true_cell`` and ``top_cell`` are the (offset) cells of each row's
    true-class value and top-label confidence. ``values`` is the whole
    class-major block, flat.
    """

    n_rows: int
    n_correct: int
    sum_brier: float
    sum_nll: float
    labels: NDArray[np.intp]
    values: NDArray[np.float64]
    class_totals: NDArray[np.float64]
    binned_cells: NDArray[np.intp]
    binned_values: NDArray[np.float64]
    true_cell: NDArray[np.intp]
    top_cell: NDArray[np.intp]
    confidence: NDArray[np.float64]
    correct: NDArray[np.float64]


#: Attributes of :class:`CalibrationStats` that follow from its settings (shared, not pickled).
_DERIVED = ("edges", "_index", "_class_starts", "_top_lanes", "_class_lanes")


@lru_cache(maxsize=16)
def _lookup_tables(n_classes: int, bin_counts: tuple[int, ...]) -> tuple[Any, ...]:
    """Edges, cell index and lane offsets of a :class:`CalibrationStats`, shared by every object with
    the same settings (read-only; a per-group dict holds thousands of objects)."""
    edges = _union_edges(bin_counts)
    n_cells = edges.size - 1
    block_rows = max(1, _BLOCK_VALUES // n_classes)
    # Cell offsets: class k's cells start at k * n_cells; lane j's (see _LANES) at j * n_cells
    # for the top label and at j * K * n_cells for the class cells.
    class_starts = np.arange(n_classes) * n_cells
    lanes = np.arange(n_classes * block_rows) % _LANES
    top_lanes = lanes[:block_rows] * n_cells
    class_lanes = lanes * (n_classes * n_cells)
    for array in (edges, class_starts, top_lanes, class_lanes):
        array.flags.writeable = False
    return edges, _CellIndex(edges[1:]), class_starts, top_lanes, class_lanes


class CalibrationStats(_BatchUpdates):
    """Mergeable sums from which the uniform-bin metrics follow exactly.

    Parameters
    ----------
    n_classes : int
        Number of classes K (columns of ``probs``).
    n_bins : int, default 15
        The bin count of the metrics.
    sweep_bins : iterable of int, optional
        Further bin counts to keep sums for (for a bin-count sensitivity
        sweep without the rows). All bin counts share one set of cells: the
        union of their uniform edges, so one index per value serves them all.
    sketch_capacity : int or None, default None
        Also keep :class:`QuantileSketch` es for adaptive bins and the KS
        error; None keeps none.
    sketch_sets : iterable of {"top", "class", "above"}
        Which values to sketch: the top-label confidences (with
        correctness), every class column (with ``labels == k``), the class
        values above ``threshold`` (TACE).
    threshold : float, default 0.01
        The TACE threshold of the thresholded class sketches.

    Notes
    -----
    Per batch, with top-label confidence :math:`c_i`, correctness
    :math:`a_i`, true-class probability :math:`p_{i y_i}`:

    * cells: count, :math:`\\sum c_i`, :math:`\\sum a_i` per uniform cell of
      the top label; count, :math:`\\sum p_{ik}`, :math:`\\sum [y_i = k]` per
      cell of every class column k (the cell sums add up to the per-bin sums
      of :func:`calib_core.binning.bin_statistics` for every bin count kept);
    * :math:`\\sum a_i` (accuracy), :math:`\\sum_i (\\sum_k p_{ik}^2 - 2 p_{iy_i} + 1)`
      (Brier), :math:`-\\sum_i \\log \\max(p_{iy_i}, 10^{-12})` (NLL), label
      counts and :math:`\\sum_i p_{ik}` per class.

    ``merge`` adds the sums, so it is commutative and associative up to
    float64 round-off, and an empty object is its identity.

    Examples
    --------
    >>> stats = CalibrationStats(2, n_bins=10).update([[0.9, 0.1]], [0]).update([[0.6, 0.4]], [1])
    >>> round(stats.metrics()["ece"], 6)
    0.35
    """

    def __init__(self, n_classes: int, *, n_bins: int = 15, sweep_bins: Iterable[int] = (),
                 sketch_capacity: int | None = None, sketch_sets: Iterable[str] = _SET_KINDS,
                 threshold: float = 0.01) -> None:
        self.n_classes = _check_n_classes(n_classes)
        self.n_bins = check_n_bins(n_bins)
        if isinstance(sweep_bins, (int, np.integer)):
            sweep_bins = (sweep_bins,)
        self.bin_counts = tuple(sorted({self.n_bins, *(check_n_bins(b, name="sweep_bins") for b in sweep_bins)}))
        self.threshold = check_positive(threshold, "threshold", allow_zero=True)
        self.edges, self._index, self._class_starts, self._top_lanes, self._class_lanes = \
            _lookup_tables(self.n_classes, self.bin_counts)
        n_cells = self.edges.size - 1
        k = self.n_classes
        self._scratch: _BlockScratch | None = None
        self.n_rows = 0
        self.n_correct = 0
        self.sum_brier = 0.0
        self.sum_nll = 0.0
        self.label_count = np.zeros(k, dtype=np.int64)
        self.top_count = np.zeros(n_cells)
        self.top_sum_value = np.zeros(n_cells)
        self.top_sum_target = np.zeros(n_cells)
        self.class_count = np.zeros((k, n_cells))
        self.class_sum_value = np.zeros((k, n_cells))
        self.class_sum_target = np.zeros((k, n_cells))
        kinds = (sketch_sets,) if isinstance(sketch_sets, str) else tuple(sketch_sets)
        for kind in kinds:
            if kind not in _SET_KINDS:
                raise CalibrationInputError(f"`sketch_sets` entries must be 'top', 'class' or 'above', got {kind!r}.")
        self.sketch_sets = tuple(kind for kind in _SET_KINDS if kind in kinds)
        self.sketches: dict[str, QuantileSketch] | None = None
        if sketch_capacity is not None:
            self.sketches = {key: QuantileSketch(sketch_capacity) for key in _set_keys(k, self.sketch_sets)}

    # -- building ----------------------------------------------------------
    def _add_checked(self, probs: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        scratch = self._scratch_space()
        columns = probs.T
        step = self.block_rows
        for start in range(0, probs.shape[0], step):
            values = scratch.load(columns[:, start:start + step])
            self._add_prepared(self._prepare(values, labels[start:start + step], scratch))

    def _scratch_space(self) -> _BlockScratch:
        """This object's scratch arrays for :meth:`_prepare` (made on first use, never sent along)."""
        if self._scratch is None:
            self._scratch = _BlockScratch(self.n_classes, self.block_rows)
        return self._scratch

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        # Neither scratch space nor the lookup tables (about 1.5 MB, rebuilt from the settings) are sent
        # along (Dask, Spark): a per-group dict of thousands of objects stays small.
        for name in _DERIVED:
            state.pop(name, None)
        state["_scratch"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.edges, self._index, self._class_starts, self._top_lanes, self._class_lanes = \
            _lookup_tables(self.n_classes, self.bin_counts)

    @property
    def block_rows(self) -> int:
        """Rows per block of :meth:`update` (about 2**17 values, so every temporary stays in cache)."""
        return max(1, _BLOCK_VALUES // self.n_classes)

    def _prepare(self, values: NDArray[np.float64], labels: NDArray[np.intp],
                 scratch: _BlockScratch) -> _PreparedBlock:
        """Everything about one checked block except the sums; changes no state.

        ``values`` is the block, class-major ``(K, m)``, as loaded into
        ``scratch`` (:meth:`_BlockScratch.load`); at most :attr:`block_rows`
        rows.

        Most class probabilities of a K-class model are small: every value
        at or below the first cell's upper edge lies in cell 0 of its class,
        so only the values above it get a cell index one by one; cell 0 gets
        the rest of its class's count and sum (``class_totals``).
        """
        n_classes, n_rows = values.shape
        n_cells = self.edges.size - 1
        flat_values = values.reshape(-1)
        above = np.flatnonzero(flat_values > self.edges[1])
        binned_values = flat_values.take(above)
        # ``above`` is sorted, so it holds class 0's positions first, then class 1's, ...
        per_class = np.diff(np.searchsorted(above, np.arange(n_classes + 1) * n_rows))
        binned_cells = self._index(binned_values, out=scratch.cells(above.size))
        binned_cells += np.repeat(self._class_starts, per_class)
        binned_cells += self._class_lanes[:above.size]
        confidence = values.max(axis=0)
        # Flat position of each row's true-class value.
        true_at = labels * n_rows + np.arange(n_rows)
        true_value = flat_values.take(true_at)
        if np.count_nonzero(values == confidence) == n_rows:
            # One maximum per row: the prediction is the label iff the true-class value is the maximum.
            hit = true_value == confidence
        else:
            hit = values.argmax(axis=0) == labels  # ties: the first maximum, as argmax in memory
        true_cell = self._index(true_value)
        true_cell += labels * n_cells
        true_cell += self._class_lanes[:n_rows]
        top_cell = self._index(confidence)
        top_cell += self._top_lanes[:n_rows]
        return _PreparedBlock(
            n_rows=n_rows,
            n_correct=int(np.count_nonzero(hit)),
            # einsum, not vdot: BLAS would start its thread pool for every block.
            sum_brier=float(np.einsum("i,i->", flat_values, flat_values) - 2.0 * true_value.sum() + n_rows),
            sum_nll=-float(np.log(np.maximum(true_value, NLL_EPSILON)).sum()),
            labels=labels,
            values=flat_values,
            class_totals=values.sum(axis=1),
            binned_cells=binned_cells,
            binned_values=binned_values,
            true_cell=true_cell,
            top_cell=top_cell,
            confidence=confidence,
            correct=hit.astype(np.float64),
        )

    def _add_prepared(self, block: _PreparedBlock) -> None:
        """Add the sums of a block from :meth:`_prepare` (the bincounts; they hold the GIL)."""
        n_cells = self.edges.size - 1
        shape = (self.n_classes, n_cells)

        self.n_rows += block.n_rows
        self.n_correct += block.n_correct
        self.sum_brier += block.sum_brier
        self.sum_nll += block.sum_nll
        self.label_count += np.bincount(block.labels, minlength=self.n_classes)
        self.top_count += _lane_sums(block.top_cell, n_cells)
        self.top_sum_value += _lane_sums(block.top_cell, n_cells, block.confidence)
        self.top_sum_target += _lane_sums(block.top_cell, n_cells, block.correct)
        count = _lane_sums(block.binned_cells, self.n_classes * n_cells).reshape(shape)
        total = _lane_sums(block.binned_cells, self.n_classes * n_cells, block.binned_values).reshape(shape)
        # The values not binned one by one lie in cell 0 of their class.
        count[:, 0] += block.n_rows - count.sum(axis=1)
        total[:, 0] += block.class_totals - total.sum(axis=1)
        self.class_count += count
        self.class_sum_value += total
        # Only the true class of a row has target 1 (as in classwise_bin_statistics).
        self.class_sum_target += _lane_sums(block.true_cell, self.n_classes * n_cells).reshape(shape)
        if self.sketches is not None:
            probs = block.values.reshape(self.n_classes, block.n_rows).T
            for key, values, targets in _value_sets(probs, block.labels, block.confidence, block.correct,
                                                    self.threshold, self.sketch_sets):
                self.sketches[key].update(values, targets)

    def copy(self) -> "CalibrationStats":
        """A deep copy."""
        return CalibrationStats.from_dict(self.to_dict())

    def merge(self, other: "CalibrationStats") -> "CalibrationStats":
        """A new object holding the sums of ``self`` and ``other``.

        Raises
        ------
        CalibrationInputError
            Different class counts, bin counts, thresholds or sketch settings.
        """
        if not isinstance(other, CalibrationStats):
            raise CalibrationInputError(f"can only merge CalibrationStats, got {type(other).__name__}.")
        _check_same(self.n_classes, other.n_classes, "class counts")
        _check_same(self.n_bins, other.n_bins, "`n_bins`")
        _check_same(self.bin_counts, other.bin_counts, "bin counts")
        _check_same(self.threshold, other.threshold, "thresholds")
        _check_same(self.sketches is None, other.sketches is None, "sketch settings (one has sketches)")
        _check_same(self.sketch_sets, other.sketch_sets, "sketched value sets")
        merged = self.copy()
        merged.n_rows += other.n_rows
        merged.n_correct += other.n_correct
        merged.sum_brier += other.sum_brier
        merged.sum_nll += other.sum_nll
        for name in ("label_count", "top_count", "top_sum_value", "top_sum_target",
                     "class_count", "class_sum_value", "class_sum_target"):
            setattr(merged, name, getattr(merged, name) + getattr(other, name))
        if merged.sketches is not None:
            merged.sketches = {key: sketch.merge(other.sketches[key]) for key, sketch in merged.sketches.items()}
        return merged

    # -- reading -----------------------------------------------------------
    @property
    def prob_sum(self) -> NDArray[np.float64]:
        """Sum over rows of each class probability, shape ``(K,)`` (mean prediction times N)."""
        return self.class_sum_value.sum(axis=1)

    def _require_rows(self) -> None:
        if self.n_rows == 0:
            raise CalibrationInputError("the statistics hold no rows; nothing to compute (is the input empty?).")

    def _cell_map(self, n_bins: int) -> NDArray[np.intp]:
        if n_bins not in self.bin_counts:
            raise CalibrationInputError(
                f"no sums kept for {n_bins} bins; kept bin counts: {', '.join(map(str, self.bin_counts))}. "
                "Pass it in `sweep_bins` when building the statistics."
            )
        return upper_edge_index(self.edges[1:], np.linspace(0.0, 1.0, n_bins + 1)[1:])

    def bin_stats(self, target: str | int = "top_label", n_bins: int | None = None) -> BinStats:
        """Uniform-bin sums as :class:`~calib_core.binning.BinStats`.

        Parameters
        ----------
        target : "top_label", "classwise" or int
            The top-label confidences (arrays of shape ``(n_bins,)``), every
            class column (shape ``(K, n_bins)``) or one class column k.
        n_bins : int, optional
            One of :attr:`bin_counts`; default :attr:`n_bins`.
        """
        n_bins = self.n_bins if n_bins is None else check_n_bins(n_bins)
        mapping = self._cell_map(n_bins)
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        if isinstance(target, str) and target == "top_label":
            sums = [self.top_count, self.top_sum_value, self.top_sum_target]
            n_total: Any = float(self.n_rows)
            shape: tuple[int, ...] = (n_bins,)
        elif isinstance(target, str) and target == "classwise":
            sums = [self.class_count, self.class_sum_value, self.class_sum_target]
            n_total = np.full(self.n_classes, float(self.n_rows))
            shape = (self.n_classes, n_bins)
        elif isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < self.n_classes:
            sums = [self.class_count[target], self.class_sum_value[target], self.class_sum_target[target]]
            n_total = float(self.n_rows)
            shape = (n_bins,)
        else:
            raise CalibrationInputError(
                f"`target` must be 'top_label', 'classwise' or a class index in 0..{self.n_classes - 1}, got {target!r}."
            )
        binned = []
        for total in sums:
            rows = np.atleast_2d(total)
            out = np.zeros((rows.shape[0], n_bins))
            for i, row in enumerate(rows):
                out[i] = np.bincount(mapping, weights=row, minlength=n_bins)
            binned.append(out.reshape(shape))
        return BinStats(binned[0], binned[1], binned[2], np.broadcast_to(edges[:-1], shape),
                        np.broadcast_to(edges[1:], shape), n_total)

    def metrics(self, n_bins: int | None = None) -> dict[str, float]:
        """Every metric that uniform bins and the scalar sums give exactly.

        Returns
        -------
        dict
            ``accuracy``, ``ece``, ``rmsce``, ``mce``, ``classwise_ece``,
            ``sce``, ``brier``, ``nll`` (uniform bins; keys as in
            :mod:`calib_core.metrics.registry`).
        """
        self._require_rows()
        top = self.bin_stats("top_label", n_bins)
        classwise = self.bin_stats("classwise", n_bins)
        values = {"accuracy": self.n_correct / self.n_rows}
        for key in _BINNED_TOP:
            values[key] = float(binned_error(top, _NORM_OF[key]))
        values["classwise_ece"] = float(binned_error(classwise, "l1").mean())
        values["sce"] = values["classwise_ece"]
        values["brier"] = self.sum_brier / self.n_rows
        values["nll"] = self.sum_nll / self.n_rows
        return values

    # -- serialisation -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form (lists and numbers) of every sum; no rows."""
        return {
            "format": _FORMAT,
            "n_classes": self.n_classes,
            "n_bins": self.n_bins,
            "bin_counts": list(self.bin_counts),
            "threshold": self.threshold,
            "n_rows": self.n_rows,
            "n_correct": self.n_correct,
            "sum_brier": self.sum_brier,
            "sum_nll": self.sum_nll,
            "label_count": self.label_count.tolist(),
            "top": {"count": self.top_count.tolist(), "sum_value": self.top_sum_value.tolist(),
                    "sum_target": self.top_sum_target.tolist()},
            "classwise": {"count": self.class_count.tolist(), "sum_value": self.class_sum_value.tolist(),
                          "sum_target": self.class_sum_target.tolist()},
            "sketch_sets": list(self.sketch_sets),
            "sketches": None if self.sketches is None else {k: s.to_dict() for k, s in self.sketches.items()},
        }

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict` (floats written exactly, round-trip safe)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CalibrationStats":
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise CalibrationInputError(
                f"not a CalibrationStats summary (expected format {_FORMAT!r}, got "
                f"{data.get('format') if isinstance(data, dict) else type(data).__name__!r})."
            )
        try:
            stats = cls(int(data["n_classes"]), n_bins=int(data["n_bins"]),
                        sweep_bins=[int(b) for b in data["bin_counts"]], threshold=float(data["threshold"]),
                        sketch_sets=tuple(data.get("sketch_sets", _SET_KINDS)))
            n_cells = stats.edges.size - 1
            k = stats.n_classes
            stats.n_rows = int(data["n_rows"])
            stats.n_correct = int(data["n_correct"])
            stats.sum_brier = float(data["sum_brier"])
            stats.sum_nll = float(data["sum_nll"])
            stats.label_count = _array(data["label_count"], (k,), np.int64)
            for prefix, part, shape in (("top", "top", (n_cells,)), ("class", "classwise", (k, n_cells))):
                for name in ("count", "sum_value", "sum_target"):
                    setattr(stats, f"{prefix}_{name}", _array(data[part][name], shape))
            if data.get("sketches") is not None:
                stats.sketches = {key: QuantileSketch.from_dict(value) for key, value in data["sketches"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CalibrationInputError):
                raise
            raise CalibrationInputError(f"damaged CalibrationStats summary: {type(exc).__name__}: {exc}.") from exc
        return stats

    @classmethod
    def from_json(cls, text: str | bytes) -> "CalibrationStats":
        """Inverse of :meth:`to_json`."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CalibrationInputError(f"not valid JSON: {exc}.") from exc
        return cls.from_dict(data)

    def __repr__(self) -> str:
        return (f"CalibrationStats(n_classes={self.n_classes}, n_rows={self.n_rows}, n_bins={self.n_bins}, "
                f"bin_counts={self.bin_counts}, sketches={self.sketches is not None})")


# ---------------------------------------------------------------------------
# One pass, exact: the same sums per group of rows
# ---------------------------------------------------------------------------

#: Distinct group values :class:`GroupedStats` keeps while streaming; one more is refused.
#: Each group costs about ``24 * (K + 1) * n_cells`` bytes (15 bins, 10 classes: 4 KiB).
MAX_STREAM_GROUPS = 10_000

_SUM_NAMES = ("label_count", "top_count", "top_sum_value", "top_sum_target",
              "class_count", "class_sum_value", "class_sum_target")
_SCALAR_NAMES = ("n_rows", "n_correct", "sum_brier", "sum_nll")
_GROUPED_FORMAT = "calib_core.GroupedStats/1"


def _group_text_of(values: ArrayLike) -> NDArray[Any]:
    """Group values as text, as :attr:`calib_core.Predictions.groups` holds them."""
    import pandas as pd

    from calib_core.io.loader import MISSING_GROUP, _group_text

    array = np.asarray(values)
    if array.dtype.kind == "U":
        return np.where(np.char.strip(array) == "", MISSING_GROUP, array)

    return _group_text(pd.Series(array.astype(object)))[0]


class GroupedStats:
    """:class:`CalibrationStats` of all rows and of every group of rows, mergeable.

    Parameters
    ----------
    overall : CalibrationStats
        Empty statistics for all rows (any settings, sketches included).
    max_distinct : int, default :data:`MAX_STREAM_GROUPS`
        Distinct group values kept while streaming; a batch or merge that
        brings more raises :class:`CalibrationInputError`.

    Attributes
    ----------
    overall : CalibrationStats
    groups : dict of str to CalibrationStats
        One object per group value seen (keyed by the group's text; missing
        values are the group ``"(missing)"`` as in
        :func:`calib_core.load_predictions`), each with the uniform-bin sums
        for ``overall.n_bins`` bins and no sketches.

    Notes
    -----
    Per group g, the sums of :class:`CalibrationStats` over the rows of g;
    every metric of ``CalibrationStats.metrics()`` (uniform-bin ECE / RMSCE /
    MCE, class-wise ECE, accuracy, Brier, NLL) then equals the in-memory
    metric on the group's rows, as ``calib_core.by_group`` computes it, to
    float64 round-off (Nixon et al. 2019, eq. 1-2). The choice of the 49
    largest groups plus "other" is made at the end, from the exact counts
    (:meth:`folded`): the sums of the merged group are the sums of its groups.

    Examples
    --------
    >>> g = GroupedStats(CalibrationStats(2, n_bins=10))
    >>> g = g.update([[0.9, 0.1], [0.6, 0.4]], [0, 1], ["a", "b"])
    >>> sorted(g.groups), g.groups["b"].n_rows
    (['a', 'b'], 1)
    """

    def __init__(self, overall: CalibrationStats, *, max_distinct: int = MAX_STREAM_GROUPS) -> None:
        if not isinstance(overall, CalibrationStats):
            raise CalibrationInputError(f"`overall` must be CalibrationStats, got {type(overall).__name__}.")
        if isinstance(max_distinct, bool) or not isinstance(max_distinct, (int, np.integer)) or max_distinct < 1:
            raise CalibrationInputError(f"`max_distinct` must be a whole number >= 1, got {max_distinct!r}.")
        self.overall = overall
        self.max_distinct = int(max_distinct)
        self.groups: dict[str, CalibrationStats] = {}
        self._scratch: _BlockScratch | None = None

    @property
    def n_rows(self) -> int:
        return self.overall.n_rows

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_scratch"] = None
        return state

    def _blank(self) -> CalibrationStats:
        """Empty statistics of one group: the overall settings for ``n_bins`` only, no sketches."""
        base = self.overall
        return CalibrationStats(base.n_classes, n_bins=base.n_bins, threshold=base.threshold)

    def _group(self, key: str) -> CalibrationStats:
        stats = self.groups.get(key)
        if stats is None:
            if len(self.groups) >= self.max_distinct:
                raise CalibrationInputError(
                    f"the group column has more than {self.max_distinct:,} distinct values; the streaming "
                    "engines keep statistics for at most that many groups (calib_core.engines.streaming."
                    "MAX_STREAM_GROUPS). Group by a coarser column, or map the rare values to one value first."
                )
            stats = self.groups[key] = self._blank()
        return stats

    def update(self, probs: ArrayLike, labels: ArrayLike, groups: ArrayLike) -> "GroupedStats":
        """Add a batch of rows ``(n, K)`` with the group of each row (in place); returns ``self``.

        Raises
        ------
        CalibrationInputError
            Invalid batch, ``groups`` of another length, too many groups.
        """
        checked = _check_batch(probs, labels, self.overall.n_classes)
        if checked is None:
            return self
        probs, labels = checked
        text = _group_text_of(groups)
        if text.ndim != 1 or text.shape[0] != labels.shape[0]:
            raise CalibrationInputError(
                f"`groups` must have one value per row ({labels.shape[0]}), got shape {text.shape}.")
        self.add_columns(list(probs.T), labels, text)
        return self

    def add_columns(self, columns: Sequence[NDArray[np.float64]], labels: NDArray[np.intp],
                    groups: NDArray[Any]) -> None:
        """Add checked class-major rows (K arrays of length n), with their groups as text (in place)."""
        import pandas as pd

        _add_columns(self.overall, columns, labels, self._scratch_space())
        codes, uniques = pd.factorize(pd.Series(groups, dtype=object), sort=False)
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(uniques)))])
        for code, key in enumerate(uniques):
            rows = order[bounds[code]:bounds[code + 1]]
            _add_columns(self._group(str(key)), [column[rows] for column in columns], labels[rows],
                         self._scratch_space())

    def _scratch_space(self) -> _BlockScratch:
        if self._scratch is None:
            self._scratch = _BlockScratch(self.overall.n_classes, self.overall.block_rows)
        return self._scratch

    def merge(self, other: "GroupedStats") -> "GroupedStats":
        """A new object holding the sums of ``self`` and ``other`` (overall and per group).

        Raises
        ------
        CalibrationInputError
            Different settings, or more than ``max_distinct`` groups together.
        """
        if not isinstance(other, GroupedStats):
            raise CalibrationInputError(f"can only merge GroupedStats, got {type(other).__name__}.")
        merged = GroupedStats(self.overall.merge(other.overall), max_distinct=self.max_distinct)
        merged.groups = dict(self.groups)
        for key, stats in other.groups.items():
            if key in merged.groups:
                merged.groups[key] = _sum_stats([merged.groups[key], stats])
            else:
                merged._group(key)  # counts it against the cap
                merged.groups[key] = stats
        return merged

    def folded(self, max_groups: int | None = None) -> tuple[list[str], list[CalibrationStats], bool, list[str]]:
        """The groups as :func:`calib_core.by_group` reports them: sorted, at most ``max_groups``.

        More than ``max_groups`` (default :data:`calib_core.inference.groups.MAX_GROUPS`, 50)
        groups: the ``max_groups - 1`` largest (ties: the first in sorted
        order) are kept and the others' sums added into one group "other"
        (last), with the note ``by_group`` writes.

        Returns
        -------
        labels, stats, merged, notes
        """
        from calib_core.inference.groups import _OTHER, MAX_GROUPS

        max_groups = MAX_GROUPS if max_groups is None else int(max_groups)
        labels = sorted(self.groups)
        stats = [self.groups[key] for key in labels]
        if len(labels) <= max_groups:
            return labels, stats, False, []
        counts = np.array([s.n_rows for s in stats], dtype=np.int64)
        by_size = np.lexsort((np.arange(len(labels)), -counts))
        kept = np.sort(by_size[:max_groups - 1])
        rest = np.setdiff1d(np.arange(len(labels)), kept)
        kept_labels = [labels[k] for k in kept]
        other = _OTHER if _OTHER not in kept_labels else f"{_OTHER} (merged)"
        merged_rows = int(counts[rest].sum())
        notes = [f"{len(labels)} groups: the {max_groups - 1} largest are shown and the other "
                 f"{len(labels) - kept.size} ({merged_rows} rows) are merged into '{other}'."]
        return kept_labels + [other], [stats[k] for k in kept] + [_sum_stats([stats[k] for k in rest])], True, notes

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form: the overall statistics and every group's (no rows)."""
        return {"format": _GROUPED_FORMAT, "max_distinct": self.max_distinct, "overall": self.overall.to_dict(),
                "labels": list(self.groups), "groups": [s.to_dict() for s in self.groups.values()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupedStats":
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or data.get("format") != _GROUPED_FORMAT:
            raise CalibrationInputError(f"not a GroupedStats summary (expected format {_GROUPED_FORMAT!r}).")
        try:
            grouped = cls(CalibrationStats.from_dict(data["overall"]), max_distinct=int(data["max_distinct"]))
            if len(data["labels"]) != len(data["groups"]):
                raise CalibrationInputError("damaged GroupedStats summary: labels and groups differ in length.")
            grouped.groups = {str(k): CalibrationStats.from_dict(v) for k, v in zip(data["labels"], data["groups"])}
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CalibrationInputError):
                raise
            raise CalibrationInputError(f"damaged GroupedStats summary: {type(exc).__name__}: {exc}.") from exc
        return grouped

    def __repr__(self) -> str:
        return f"GroupedStats(n_rows={self.n_rows}, n_groups={len(self.groups)}, overall={self.overall!r})"


def _add_columns(stats: CalibrationStats, columns: Sequence[NDArray[np.float64]], labels: NDArray[np.intp],
                 scratch: _BlockScratch) -> None:
    """Add checked class-major rows to ``stats`` block by block, in ``scratch`` (shared by every group)."""
    step = stats.block_rows
    for start in range(0, labels.shape[0], step):
        values = scratch.load([column[start:start + step] for column in columns])
        stats._add_prepared(stats._prepare(values, labels[start:start + step], scratch))


def _sum_stats(parts: Sequence[CalibrationStats]) -> CalibrationStats:
    """Sketch-less statistics of the same settings, added up (without the copies of ``merge``)."""
    first = parts[0]
    total = CalibrationStats(first.n_classes, n_bins=first.n_bins, sweep_bins=first.bin_counts,
                             threshold=first.threshold)
    for part in parts:
        _check_same(first.bin_counts, part.bin_counts, "bin counts")
        _check_same(first.n_classes, part.n_classes, "class counts")
        for name in _SCALAR_NAMES + _SUM_NAMES:
            setattr(total, name, getattr(total, name) + getattr(part, name))
    return total


def _array(values: Any, shape: tuple[int, ...], dtype: Any = np.float64) -> NDArray[Any]:
    array = np.asarray(values, dtype=dtype)
    if array.shape != shape:
        raise CalibrationInputError(f"damaged CalibrationStats summary: an array has shape {array.shape}, expected {shape}.")
    return array


# ---------------------------------------------------------------------------
# The quantile sketch
# ---------------------------------------------------------------------------

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
        self._push(0, np.stack([values, values, values, values, targets]))
        self.n += int(values.size)
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
                items = items[:, np.argsort(items[_KEY])]  # any order of equal keys keeps the rank bounds
                paired = items.shape[1] // 2 * 2
                first, second = items[:, 0:paired:2], items[:, 1:paired:2]
                merged = np.empty((5, paired // 2))
                merged[_KEY] = second[_KEY] if self._parity[level] else first[_KEY]
                merged[_LO] = np.minimum(first[_LO], second[_LO])
                merged[_HI] = np.maximum(first[_HI], second[_HI])
                merged[_SUM_VALUE] = first[_SUM_VALUE] + second[_SUM_VALUE]
                merged[_SUM_TARGET] = first[_SUM_TARGET] + second[_SUM_TARGET]
                self._levels[level] = items[:, paired:]
                self._parity[level] ^= 1
                self.rank_error += 1 << level
                self._push(level + 1, merged)
            level += 1

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


# ---------------------------------------------------------------------------
# The value sets behind adaptive bins: top label, class columns, thresholded
# ---------------------------------------------------------------------------

def _set_keys(n_classes: int, kinds: Iterable[str] = _SET_KINDS) -> list[str]:
    kinds = tuple(kinds)
    keys = ["top"] if "top" in kinds else []
    for kind in ("class", "above"):
        if kind in kinds:
            keys += [f"{kind}{k}" for k in range(n_classes)]
    return keys


def _value_sets(probs, labels, confidence, correct, threshold,
                kinds: Iterable[str] = _SET_KINDS) -> Iterable[tuple[str, NDArray, NDArray]]:
    """``(key, values, targets)`` of the sets of the given kinds: top label, columns, columns above the threshold."""
    kinds = tuple(kinds)
    if "top" in kinds:
        yield "top", confidence, correct
    if "class" in kinds or "above" in kinds:
        for k in range(probs.shape[1]):
            column = probs[:, k]
            target = (labels == k).astype(np.float64)
            if "class" in kinds:
                yield f"class{k}", column, target
            if "above" in kinds:
                kept = column > threshold
                yield f"above{k}", column[kept], target[kept]


def _top_label(probs: NDArray[np.float64], labels: NDArray[np.intp]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    predicted = probs.argmax(axis=1)
    return probs[np.arange(probs.shape[0]), predicted], (predicted == labels).astype(np.float64)


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

    def _exact_slot(self, values: NDArray[np.float64]) -> NDArray[np.intp]:
        at = np.searchsorted(self.points, values, side="left")
        if self.points.size == 0:
            return 2 * at
        equal = self.points[np.minimum(at, self.points.size - 1)] == values
        return 2 * at + equal

    def slot(self, values: NDArray[np.float64]) -> NDArray[np.intp]:
        """Slot of each value (checked probabilities), by a lookup table as :class:`_CellIndex` does.

        A grid cell ``[c / G, (c + 1) / G)`` without a point in it has one
        slot for all its values (``2 * #{points below it}``); the few values
        in grid cells that hold a point are placed by ``searchsorted``.
        """
        if self._table is None:
            cells = np.arange(_LOOKUP_CELLS + 64, dtype=np.float64)
            table = 2 * np.searchsorted(self.points, (cells + 0.5) / _LOOKUP_CELLS, side="left")
            touched = np.floor(self.points * _LOOKUP_CELLS).astype(np.int64)
            table[touched[(touched >= 0) & (touched < table.size)]] = -1
            self._table = table
        scaled = np.multiply(values, float(_LOOKUP_CELLS), out=np.empty(values.shape, np.intp), casting="unsafe")
        index = self._table.take(scaled, mode="clip")
        unsure = np.flatnonzero(index < 0)
        if unsure.size:
            index[unsure] = self._exact_slot(values[unsure])
        return index

    def add(self, values: NDArray[np.float64], targets: NDArray[np.float64]) -> None:
        if values.size == 0:
            return
        slot = self.slot(values)
        size = self.count.size
        self.count += np.bincount(slot, minlength=size)
        self.sum_value += np.bincount(slot, weights=values, minlength=size)
        self.sum_target += np.bincount(slot, weights=targets, minlength=size)
        keep = self.collect[slot]
        if keep.any():
            self.values.append(values[keep])
            self.targets.append(targets[keep])

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
        confidence, correct = _top_label(probs, labels)
        self.n_rows += probs.shape[0]
        if self.brackets:
            kinds = {key.rstrip("0123456789") for key in self.brackets}
            for key, values, targets in _value_sets(probs, labels, confidence, correct, self.threshold, kinds):
                self.brackets[key].add(values, targets)
        if self.ks_regions is not None:
            self.ks_regions.add(confidence, correct)

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
                   ks_collect_rows: int = 4_000_000, collect_rows: int = 4_000_000) -> StreamResult:
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
    n_classes = _check_n_classes(n_classes)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    threshold = check_positive(threshold, "threshold", allow_zero=True)
    wanted = list(STREAM_METRICS) if metrics is None else list(dict.fromkeys(metrics))
    for key in wanted:
        if key not in STREAM_METRICS:
            raise CalibrationInputError(f"unknown metric {key!r}; streaming supports: {', '.join(STREAM_METRICS)}.")
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
                      threshold=threshold)
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
