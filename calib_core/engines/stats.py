"""One pass, exact: the mergeable sums behind the uniform-bin metrics.

Binned calibration errors, accuracy, Brier score and NLL are functions of
sums over rows, so they can be computed in one pass over record batches and
merged across machines. :class:`CalibrationStats` holds those sums: per-bin
count / sum of confidence / sum of correctness for the top label and for
every class (uniform bins, for one bin count or a whole sweep of bin counts
at once), label counts, per-class probability sums and the sums behind
accuracy, Brier score and NLL. ``update`` with a batch, ``merge`` with
another, ``metrics()`` for the numbers, ``to_json``/``from_json`` to move it.
With ``sketch_capacity`` it also keeps :class:`~calib_core.engines.sketch.QuantileSketch` es
of the value sets (top label, class columns, class values above the TACE
threshold) for adaptive bins and KS.

This module also holds what every statistics object of the engines shares:
the batch checks (``_BatchUpdates``: ``update`` / ``update_columns``) and the
value sets (``_value_sets``) the sketches and the later passes of
:mod:`calib_core.engines.streaming` see.

Conventions are those of :mod:`calib_core.binning`: uniform bins are
``(lo, hi]`` with edges ``np.linspace(0, 1, n_bins + 1)`` (the first bin also
holds 0). Streaming and in-memory results agree to float64 round-off (the
sums are added in another order).

References
----------
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, eq. 1-3 (ECE, SCE, ACE) and TACE.
"""
from __future__ import annotations

import abc
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import BinStats, binned_error, upper_edge_index
from calib_core.engines.sketch import QuantileSketch, _check_same
from calib_core.engines.weighted import add_weighted_block, checked_weights
from calib_core.metrics.scores import NLL_EPSILON
from calib_core.validation import (
    CalibrationInputError,
    check_count,
    check_n_bins,
    check_positive,
    check_probs_columns,
    check_probs_labels,
)

__all__ = [
    "CalibrationStats",
]

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

    def update(self, probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None = None):
        """Add a batch of rows (in place); returns ``self``.

        Parameters
        ----------
        probs : array_like of shape (n, K)
            Probabilities of the batch; ``n`` may be 0.
        labels : array_like of shape (n,)
        sample_weight : array_like of shape (n,), optional
            Row weights (finite, ``>= 0``; a batch may weigh 0), for
            statistics built with ``weighted=True`` only.

        Raises
        ------
        CalibrationInputError
            Invalid batch, or a batch with another number of classes;
            weights given to statistics that take none.
        """
        checked = _check_batch(probs, labels, self.n_classes)
        weights = checked_weights(self, sample_weight, np.asarray(labels).size)
        if checked is not None:
            if weights is None:
                self._add_checked(*checked)
            else:
                self._add_weighted(checked[0].T, checked[1], weights)
        return self

    def _add_weighted(self, columns: Any, labels: NDArray[np.intp], weights: NDArray[np.float64]) -> None:
        """Add checked class-major rows with their checked weights (statistics that take weights override it)."""
        raise CalibrationInputError(f"{type(self).__name__} takes no `sample_weight`.")

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


def _union_edges(bin_counts: Iterable[int]) -> NDArray[np.float64]:
    """Sorted union of the uniform edges of several bin counts (exact floats, 0 and 1 included)."""
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, n + 1) for n in bin_counts]))


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
    weighted : bool, default False
        Take row weights (``update(..., sample_weight=w)``): every count
        becomes a sum of weights and every sum a weighted sum, as
        :func:`calib_core.binning.bin_statistics` with ``sample_weight``
        computes them, so :meth:`metrics` are the weighted in-memory metrics
        (integer weights: those of the repeated rows). :attr:`n_rows` still
        counts rows read, :attr:`sum_weight` their weights. No sketches: the
        quantile sketch counts rows, so weighted adaptive bins and KS are
        not streamed (``docs/weights.md``).

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
                 threshold: float = 0.01, weighted: bool = False) -> None:
        self.n_classes = check_count(n_classes, "n_classes", 2)
        self.weighted = bool(weighted)
        if self.weighted and sketch_capacity is not None:
            raise CalibrationInputError(
                "weighted statistics keep no quantile sketches: the sketch counts rows and takes no weights, so "
                "adaptive bins, ACE, TACE and KS with sample weights need the rows in memory (engine='memory').")
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
        #: Summed row weight (weighted statistics); unweighted, the row count.
        self.sum_weight = 0.0
        self.n_correct: int | float = 0.0 if self.weighted else 0
        self.sum_brier = 0.0
        self.sum_nll = 0.0
        self.label_count = np.zeros(k, dtype=np.float64 if self.weighted else np.int64)
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
        if self.weighted:
            self._add_weighted(probs.T, labels, np.ones(labels.shape[0]))
            return
        self._add_class_major(probs.T, labels)

    def _add_weighted(self, columns: NDArray[np.float64] | Sequence[NDArray[np.float64]], labels: NDArray[np.intp],
                      weights: NDArray[np.float64]) -> None:
        """Add checked class-major rows with checked weights, block by block (weighted statistics only).

        Each sum of the unweighted pass becomes a sum of ``w_i`` times its
        term: per cell :math:`\\sum w_i`, :math:`\\sum w_i c_i`,
        :math:`\\sum w_i a_i` (top label) and :math:`\\sum w_i`,
        :math:`\\sum w_i p_{ik}`, :math:`\\sum w_i [y_i = k]` (class k),
        label weights, :math:`\\sum w_i a_i` (accuracy) and the weighted
        Brier and NLL sums -- the sums of
        :func:`calib_core.binning.bin_statistics` with ``sample_weight``
        (Nixon et al. 2019, eq. 1-2, with frequency weights).
        """
        if not self.weighted:
            raise CalibrationInputError("`sample_weight` given to CalibrationStats built without weights; "
                                        "build it with weighted=True.")
        step = self.block_rows
        for start in range(0, labels.shape[0], step):
            stop = start + step
            values = columns[:, start:stop] if isinstance(columns, np.ndarray) else \
                np.stack([np.asarray(column[start:stop], dtype=np.float64) for column in columns])
            add_weighted_block(self, np.ascontiguousarray(values, dtype=np.float64), labels[start:stop],
                               weights[start:stop])

    def _add_class_major(self, columns: NDArray[np.float64] | Sequence[NDArray[np.float64]], labels: NDArray[np.intp],
                         scratch: _BlockScratch | None = None) -> None:
        """Add checked class-major rows block by block: a ``(K, n)`` array (any layout) or K arrays of length n.

        Each block is copied into ``scratch`` (default: this object's; the
        objects of a :class:`~calib_core.engines.grouped.GroupedStats` share one).
        """
        scratch = self._scratch_space() if scratch is None else scratch
        step = self.block_rows
        for start in range(0, labels.shape[0], step):
            block = columns[:, start:start + step] if isinstance(columns, np.ndarray) else \
                [column[start:start + step] for column in columns]
            self._add_prepared(self._prepare(scratch.load(block), labels[start:start + step], scratch))

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
        _check_same(self.weighted, other.weighted, "weighting (weighted=)")
        merged = self.copy()
        merged.n_rows += other.n_rows
        merged.sum_weight += other.sum_weight
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
        """(Weighted) sum over rows of each class probability, shape ``(K,)`` (mean prediction times N or W)."""
        return self.class_sum_value.sum(axis=1)

    @property
    def total_weight(self) -> float:
        """N of the metrics: the summed weight W (weighted statistics) or the row count."""
        return float(self.sum_weight) if self.weighted else float(self.n_rows)

    def _require_rows(self) -> None:
        if self.n_rows == 0:
            raise CalibrationInputError("the statistics hold no rows; nothing to compute (is the input empty?).")
        if self.weighted and not self.sum_weight > 0:
            raise CalibrationInputError(
                "every row weight is 0 (the weights sum to 0): a row needs a positive weight.")

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
            n_total: Any = self.total_weight
            shape: tuple[int, ...] = (n_bins,)
        elif isinstance(target, str) and target == "classwise":
            sums = [self.class_count, self.class_sum_value, self.class_sum_target]
            n_total = np.full(self.n_classes, self.total_weight)
            shape = (self.n_classes, n_bins)
        elif isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < self.n_classes:
            sums = [self.class_count[target], self.class_sum_value[target], self.class_sum_target[target]]
            n_total = self.total_weight
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
        n_total = self.total_weight
        values = {"accuracy": self.n_correct / n_total}
        for key in _BINNED_TOP:
            values[key] = float(binned_error(top, _NORM_OF[key]))
        values["classwise_ece"] = float(binned_error(classwise, "l1").mean())
        values["sce"] = values["classwise_ece"]
        values["brier"] = self.sum_brier / n_total
        values["nll"] = self.sum_nll / n_total
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
            # Weighted statistics only (a summary without these keys is unweighted: every weight 1).
            **({"weighted": True, "sum_weight": self.sum_weight} if self.weighted else {}),
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
                        sketch_sets=tuple(data.get("sketch_sets", _SET_KINDS)),
                        weighted=bool(data.get("weighted", False)))
            n_cells = stats.edges.size - 1
            k = stats.n_classes
            stats.n_rows = int(data["n_rows"])
            stats.sum_weight = float(data["sum_weight"]) if stats.weighted else 0.0
            stats.n_correct = float(data["n_correct"]) if stats.weighted else int(data["n_correct"])
            stats.sum_brier = float(data["sum_brier"])
            stats.sum_nll = float(data["sum_nll"])
            stats.label_count = _array(data["label_count"], (k,), np.float64 if stats.weighted else np.int64)
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
        weights = f", sum_weight={self.sum_weight}" if self.weighted else ""
        return (f"CalibrationStats(n_classes={self.n_classes}, n_rows={self.n_rows}{weights}, n_bins={self.n_bins}, "
                f"bin_counts={self.bin_counts}, sketches={self.sketches is not None})")


def _array(values: Any, shape: tuple[int, ...], dtype: Any = np.float64) -> NDArray[Any]:
    array = np.asarray(values, dtype=dtype)
    if array.shape != shape:
        raise CalibrationInputError(f"damaged CalibrationStats summary: an array has shape {array.shape}, expected {shape}.")
    return array


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


