"""Bootstrap resamples as row weights, with the per-row work of the binned metrics done once.

A bootstrap resample of N rows drawn with replacement is the same thing as a
vector of row weights ``w`` (the multinomial counts: how often each row was
drawn). Every binned metric of :mod:`calib_core.metrics.binned` is a reduction of
per-bin sums ``sum_i w_i``, ``sum_i w_i v_i`` and ``sum_i w_i t_i`` (values
``v``: top-label confidence or a class column; targets ``t``: correctness or
``labels == k``), so everything that does not depend on the resample is
computed once:

* the top-label confidence and correctness of each row, and each class column;
* one sort per column (``np.argsort``): in sorted order every bin, uniform
  or adaptive, is a contiguous run of positions, so its sums are differences
  of the cumulative weighted sums ``S(p) = sum_{j < p} w_(j) (1, v_(j), t_(j))``
  taken along that order;
* for each sorted position, the end of its run of tied values.

Per block of resamples and column, the row weights are read once in sorted
order and summed per chunk of 256 positions (one batched matrix product); any
``S(p)`` is then a cumulated chunk sum plus a short partial sum. Uniform bins
end at fixed positions; the adaptive edges of a resample come from the
cumulative weights themselves (:func:`_adaptive_ends`). Top-label metrics with
uniform bins need no sort: one :func:`numpy.bincount` of the drawn rows' bin
keys per resample. The result is the metric of the materialised resample
``metric(probs[idx], labels[idx])`` up to floating-point round-off in the
sums: the same bins, the same rows in each bin.

References
----------
.. [Efron1993] Efron, B. & Tibshirani, R. "An Introduction to the Bootstrap",
   Chapman & Hall 1993, ch. 6 (bootstrap replications) and ch. 13 (percentile
   interval). A resample's multinomial counts: section 6.2.
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, eq. 1-3 and section 3 (ECE, SCE, ACE, TACE).
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calib_core._accel import adaptive_bin_sums, adaptive_walk_pays, entry_sums, entry_sums_pay, key_sums, map_blocks
from calib_core.metrics import binned
from calib_core.metrics.registry import declared_metric
from calib_core.binning import BinStats, array_split_ends, binned_error, mean_abs_gap, uniform_index, upper_bin_entries
from calib_core.validation import transposed

__all__ = ["BinnedResampler", "BinnedSpec", "binned_spec", "index_blocks", "resampled_binned_values", "row_weights"]

#: Largest number of resampled row indices drawn in one call. numpy's bounded
#: integers come from one stream whatever the call sizes (tests/inference/test_bootstrap.py
#: checks this against one draw of every index), so the size only bounds memory.
MAX_INDEX_BLOCK = 1 << 21

#: Largest ``resamples x rows`` of the weight and cumulative-sum blocks.
MAX_WEIGHT_BLOCK = 1 << 21

#: Largest ``rows x classes`` whose sorted class columns a :class:`BinnedResampler` keeps between blocks
#: (each cell takes about 72 bytes there: order, sorted values, ties and two copies of the sums' terms).
MAX_KEPT_CELLS = 4_000_000


def index_blocks(rng: np.random.Generator, n_rows: int, n_boot: int) -> Iterator[tuple[int, int, NDArray[np.int64]]]:
    """The row indices of ``n_boot`` resamples of ``n_rows`` rows, in blocks.

    Yields ``(start, stop, indices)`` with ``indices`` of shape
    ``(stop - start, n_rows)``: resample ``start + r`` is
    ``rows[indices[r]]``. Every bootstrap path draws through this one
    function, so the same seed gives the same resamples for every metric:
    resample r is row r of ``rng.integers(0, n_rows, size=(n_boot, n_rows))``.
    """
    per_block = max(1, MAX_INDEX_BLOCK // n_rows)
    for start in range(0, n_boot, per_block):
        stop = min(n_boot, start + per_block)
        yield start, stop, rng.integers(0, n_rows, size=(stop - start, n_rows))


@dataclass(frozen=True)
class BinnedSpec:
    """A binned metric of :mod:`calib_core.metrics.binned` with its settings resolved.

    Attributes
    ----------
    family : {"top_label", "classwise", "adaptive_mean"}
        :func:`~calib_core.metrics.binned.ece` (and ``mce``); :func:`~calib_core.metrics.binned.classwise_ece`
        (and ``sce``); :func:`~calib_core.metrics.binned.ace` and :func:`~calib_core.metrics.binned.tace`.
    n_bins : int
    binning : {"uniform", "adaptive"}
    norm : {"l1", "l2", "max"}
        Unused by ``adaptive_mean`` (the unweighted mean of ``|gap|``).
    right : bool
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)``.
    threshold : float or None
        TACE's threshold: only values strictly above it are binned.
    """

    family: str
    n_bins: int
    binning: str
    norm: str = "l1"
    right: bool = True
    threshold: float | None = None


def binned_spec(metric: Callable) -> BinnedSpec | None:
    """The :class:`BinnedSpec` of a metric that declares a ``"binned"`` resampling, or None for anything else.

    Read from the declaration (:class:`calib_core.metrics.resampling.Resampling`)
    and the metric's settings (:class:`calib_core.metrics.registry.DeclaredMetric`),
    checked once by :func:`calib_core.metrics.registry.metric_function`; a
    public binned function itself (``cc.ece``) declares its registry entry's
    defaults (:func:`calib_core.metrics.registry.declared_metric`).

    Examples
    --------
    >>> import calib_core as cc
    >>> from calib_core.metrics.registry import metric_function
    >>> binned_spec(metric_function("rmsce", n_bins=10, binning="adaptive"))
    BinnedSpec(family='top_label', n_bins=10, binning='adaptive', norm='l2', right=True, threshold=None)
    >>> binned_spec(cc.brier_score) is None
    True
    """
    declared = declared_metric(metric)
    if declared is None or declared.resampling is None or declared.resampling.kind != "binned":
        return None
    how = declared.resampling
    return BinnedSpec(how.family, declared.n_bins, declared.binning, how.norm, True, how.threshold)


#: Most sorted positions per chunk: a block's sums are taken per chunk with one matrix
#: product, then cumulated over chunks; a position inside a chunk adds a partial sum.
_CHUNK = 256


def _chunk_size(n_rows: int) -> int:
    """Power of two near sqrt(N), at most :data:`_CHUNK`: balances chunk sums and partial sums."""
    return int(min(_CHUNK, max(8, 2 ** round(np.log2(max(n_rows, 1)) / 2))))

#: Values per block of class columns cut from the matrix at once by the compiled adaptive path.
_COLUMN_BLOCK = 1 << 21

#: Largest number of (resample, position) pairs whose chunks are gathered at once.
_PAIRS = 4096


@dataclass
class _Column:
    """One set of values sorted once, with its targets, laid out in chunks of sorted positions.

    ``order`` lists the rows in ascending order of value, padded to a whole
    number of chunks with the index N (a row of weight 0); ``terms[c, j]`` is
    ``(1, value, target)`` at sorted position ``c * chunk + j`` (0 in the padding);
    ``tie_end[j]`` is the end (exclusive) of the run of values equal to the j-th.
    """

    order: NDArray[np.intp]
    values: NDArray[np.float64]
    terms: NDArray[np.float64]
    terms_t: NDArray[np.float64]
    tie_end: NDArray[np.intp]

    @classmethod
    def build(cls, values: NDArray[np.float64], targets: NDArray[np.bool_]) -> _Column:
        n_rows = values.shape[0]
        chunk = _chunk_size(n_rows)
        n_chunks = -(-n_rows // chunk)
        order = np.full(n_chunks * chunk, n_rows, dtype=np.intp)
        order[:n_rows], sorted_values, sorted_targets, tie_end = _sorted_column(values, targets)
        terms = np.zeros((n_chunks * chunk, 3))
        terms[:n_rows, 0] = 1.0
        terms[:n_rows, 1] = sorted_values
        terms[:n_rows, 2] = sorted_targets
        terms = terms.reshape(n_chunks, chunk, 3)
        return cls(order, sorted_values, terms, np.ascontiguousarray(terms.transpose(0, 2, 1)), tie_end)

    def uniform_ends(self, n_bins: int, right: bool) -> NDArray[np.intp]:
        """``(n_bins + 1,)`` sorted positions bounding each uniform bin (the one bin rule)."""
        index = uniform_index(self.values, n_bins, right)
        return np.concatenate([[0], np.searchsorted(index, np.arange(n_bins), side="right")])


def _sorted_column(values: NDArray[np.float64], targets: NDArray[np.bool_]
                   ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """``order`` (rows by ascending value), the values and targets in that order, and ``tie_end``.

    ``tie_end[j]`` is the end (exclusive) of the run of values equal to the
    j-th. Any order of tied values will do: every bin boundary falls at the
    end of a run of ties.
    """
    n_rows = values.shape[0]
    order = np.argsort(values)
    sorted_values = values[order]
    # End of each run of ties: the next position whose value differs (one O(N) pass, no search).
    change = np.flatnonzero(sorted_values[1:] != sorted_values[:-1]) + 1
    tie_end = np.repeat(np.append(change, n_rows), np.diff(np.concatenate([[0], change, [n_rows]])))
    return order, sorted_values, targets[order].astype(np.float64), tie_end


class _Prefix:
    """Weighted sums ``sum_{j < p} w_(j) (1, v_(j), t_(j))`` of one column for a block of resamples.

    Parameters
    ----------
    column : _Column
    weights : ndarray of shape (R, N + 1), integer
        Row weights of R resamples, with a trailing 0 (the padding row).
    buffers : (ndarray, ndarray)
        Reused work memory of at least ``R * chunks * chunk`` items: one of the
        dtype of ``weights``, one of floats.
    """

    def __init__(self, column: _Column, weights: NDArray[np.integer], buffers: tuple[NDArray, NDArray[np.float64]]):
        n_res = weights.shape[0]
        n_chunks, self.chunk = column.terms.shape[:2]
        size = n_res * n_chunks * self.chunk
        # The weights along the sorted order, one resample per row: a 1-D take per
        # resample from small integers (the whole block of weights stays in cache),
        # then one sequential conversion to floats.
        along = buffers[0][:size].reshape(n_res, n_chunks * self.chunk)
        for r in range(n_res):
            np.take(weights[r], column.order, out=along[r], mode="clip")  # clip: unbuffered
        self.along = buffers[1][:size].reshape(n_res, n_chunks, self.chunk)
        np.copyto(self.along, along.reshape(n_res, n_chunks, self.chunk))
        self.terms = column.terms
        # Per chunk (1, v, t) . w as one batched matrix product: (chunks, 3, R).
        per_chunk = np.matmul(column.terms_t, self.along.transpose(1, 2, 0))
        self.before = np.zeros((n_res, n_chunks + 1, 3))
        np.cumsum(per_chunk.transpose(2, 0, 1), axis=1, out=self.before[:, 1:])
        self.rows = np.arange(n_res)[:, None]

    def _pieces(self, shape: tuple[int, int]) -> Iterator[tuple[int, NDArray[np.intp]]]:
        """Flat (resample, position) pairs in pieces of :data:`_PAIRS`, bounding the chunk gathers."""
        rows = np.repeat(np.arange(shape[0]), shape[1])
        for start in range(0, rows.shape[0], _PAIRS):
            yield start, rows[start:start + _PAIRS]

    def at(self, positions: NDArray[np.intp]) -> NDArray[np.float64]:
        """Sums over the sorted positions before each of ``positions`` ``(R, P)``: ``(R, P, 3)``."""
        flat = positions.ravel()
        chunk = np.minimum(flat // self.chunk, self.terms.shape[0] - 1)
        inside = flat - chunk * self.chunk
        out = self.before[np.repeat(np.arange(positions.shape[0]), positions.shape[1]), chunk]
        for start, rows in self._pieces(positions.shape):
            part = slice(start, start + rows.shape[0])
            weights = self.along[rows, chunk[part]] * (np.arange(self.chunk) < inside[part, None])
            out[part] += np.matmul(weights[:, None, :], self.terms[chunk[part]])[:, 0]
        return out.reshape(*positions.shape, 3)

    def reach(self, goal: NDArray[np.float64]) -> NDArray[np.intp]:
        """First sorted position whose cumulative weight (inclusive) is >= ``goal`` ``(R, P)``, goal >= 1."""
        counts = self.before[:, :, 0]
        n_res, width = counts.shape
        # Rows of cumulative counts run from 0 to at most N: shifted by r * (N + 1) they form
        # one ascending array, searched once for every goal.
        shift = (np.arange(n_res) * (counts[:, -1].max() + 1))[:, None]
        found = np.searchsorted((counts + shift).ravel(), (goal + shift).ravel(), side="left")
        chunk = found - np.repeat(np.arange(n_res) * width, goal.shape[1]) - 1
        result = np.empty(chunk.shape, dtype=np.intp)
        flat_goal = goal.ravel()
        for start, rows in self._pieces(goal.shape):
            part = slice(start, start + rows.shape[0])
            cumulative = counts[rows, chunk[part]][:, None] + np.cumsum(self.along[rows, chunk[part]], axis=-1)
            result[part] = chunk[part] * self.chunk + np.argmax(cumulative >= flat_goal[part, None], axis=-1)
        return result.reshape(goal.shape)


def _stats(prefix: _Prefix, ends: NDArray[np.intp]) -> tuple[NDArray, NDArray, NDArray]:
    """Count, value sum and target sum of the bins between consecutive ``ends`` (R, B + 1)."""
    sums = np.diff(prefix.at(ends), axis=1)
    return sums[..., 0], sums[..., 1], sums[..., 2]


def _adaptive_ends(prefix: _Prefix, column: _Column, n_bins: int, start: int) -> tuple[NDArray[np.intp], NDArray]:
    """Sorted positions bounding each resample's adaptive bins over the values at ``start:``.

    The resample's own sorted values are the column's sorted values, value j
    repeated ``w_(j)`` times. ``np.array_split`` of the ``M`` kept values ends
    run b at ``E_b`` (:func:`calib_core.binning.array_split_ends`); the
    run's last value, the bin's upper edge, is the column value at the first
    position ``j >= start`` whose cumulative weight reaches ``W(start) + E_b``.
    The bin then ends after the last column position holding that same value
    (``tie_end``), so tied values share a bin and bins swallowed by ties are
    empty -- the contract's rule, applied to the same values.

    Returns
    -------
    ends : ndarray of shape (R, n_bins + 1)
    n_kept : ndarray of shape (R,)
    """
    n_res = prefix.rows.shape[0]
    first = np.full((n_res, 1), start, dtype=np.intp)
    before = prefix.at(first)[:, 0, 0]
    n_kept = prefix.before[:, -1, 0] - before
    run_ends = array_split_ends(n_kept.astype(np.intp), n_bins)
    # Resamples that keep nothing aim at position 1 only to stay in range; their bins are set empty below.
    goal = np.where(n_kept[:, None] > 0, before[:, None] + run_ends, 1.0)
    ends = column.tie_end[np.minimum(prefix.reach(goal), column.values.shape[0] - 1)]
    ends = np.where(n_kept[:, None] > 0, ends, start)
    return np.concatenate([first, ends], axis=1), n_kept


def row_weights(indices: NDArray[np.int64], n_rows: int) -> NDArray[np.integer]:
    """Multinomial counts ``(R, N + 1)``: how often each row is drawn; the last column is 0.

    Stored as int8 whenever no count exceeds 127 (always in practice: a count
    is Binomial(N, 1/N)), so that a block of weights fits in cache while every
    column reads it in its own order; int64 otherwise.
    """
    counts = [np.bincount(rows, minlength=n_rows + 1) for rows in indices]
    largest = max(int(c.max()) for c in counts)
    return np.array(counts, dtype=np.int8 if largest <= np.iinfo(np.int8).max else np.int64)


class BinnedResampler:
    """Per-row quantities of one ``(probs, labels)``, reused by every resample and binned metric.

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Checked probabilities (:func:`calib_core.validation.check_probs_labels`).
    labels : ndarray of shape (N,)
        Checked labels.
    """

    def __init__(self, probs: NDArray[np.float64], labels: NDArray[np.intp]):
        self.probs, self.labels = probs, labels
        self.n_rows, self.n_classes = probs.shape
        self._keys: dict[tuple, NDArray[np.integer]] = {}
        self._upper_entries: dict[tuple[int, bool], tuple] = {}
        self._buffers: dict[np.dtype, NDArray] = {}
        # Sorted class columns of the compiled adaptive path by first class of their block (kept when small).
        self._sorted_blocks: dict[int, list[tuple]] = {}

    def _buffer(self, size: int, dtype: type | np.dtype) -> NDArray:
        """A 1-D work array of at least ``size`` items of ``dtype``, kept for the next block."""
        dtype = np.dtype(dtype)
        if dtype not in self._buffers or self._buffers[dtype].shape[0] < size:
            self._buffers[dtype] = np.empty(size, dtype=dtype)
        return self._buffers[dtype]

    @functools.cached_property
    def top_label(self) -> list[_Column]:
        confidence, correct = self._confidence
        return [_Column.build(confidence, correct > 0)]

    @functools.cached_property
    def classwise(self) -> list[_Column]:
        return [_Column.build(np.ascontiguousarray(self.probs[:, k]), self.labels == k)
                for k in range(self.n_classes)]

    def _class_columns(self) -> Iterator[_Column]:
        """Each class column sorted (:class:`_Column`): kept for the next block when all of them hold at most
        :data:`MAX_KEPT_CELLS` rows x classes, else built when needed and dropped (at 50,000 x 1,000 they
        would hold 3.6 GB)."""
        if self.n_rows * self.n_classes <= MAX_KEPT_CELLS:
            yield from self.classwise
            return
        for k in range(self.n_classes):
            yield _Column.build(np.ascontiguousarray(self.probs[:, k]), self.labels == k)

    def values(self, specs: list[BinnedSpec], indices: NDArray[np.int64],
               weights: NDArray[np.integer] | None = None) -> NDArray[np.float64]:
        """Each spec's metric on each resample ``rows[indices[r]]``: ``(len(specs), R)``.

        Top-label metrics with uniform bins count the drawn rows' bin keys
        directly (:meth:`_top_label_uniform`). Every other spec works on the
        row weights (``weights``: :func:`row_weights` of ``indices``, when the
        caller has them already): each column's chunked weighted sums are
        built once per block and shared by every spec that bins that column.
        """
        n_res = indices.shape[0]
        out = np.empty((len(specs), n_res))
        direct = [i for i, s in enumerate(specs) if s.family == "top_label" and s.binning == "uniform"]
        if direct:
            out[direct] = self._top_label_uniform([specs[i] for i in direct], indices)
        weighted = [i for i in range(len(specs)) if i not in direct]
        if not weighted:
            return out
        chunk = _chunk_size(self.n_rows)
        size = n_res * -(-self.n_rows // chunk) * chunk
        if weights is None:
            weights = row_weights(indices, self.n_rows)
        buffers = (self._buffer(size, weights.dtype), self._buffer(size, np.float64))
        sparse = [i for i in weighted if specs[i].family == "classwise" and specs[i].binning == "uniform"
                  and self._few_upper_entries(specs[i])]
        if sparse:
            out[sparse] = self._classwise_uniform([specs[i] for i in sparse], weights)
        walked = ([i for i in weighted if specs[i].family != "top_label" and specs[i].binning == "adaptive"]
                  if adaptive_walk_pays() else [])
        if walked:
            out[walked] = self._classwise_adaptive_walked([specs[i] for i in walked], weights)
        for top in (True, False):
            mine = [i for i in weighted if (specs[i].family == "top_label") == top and i not in sparse + walked]
            if not mine:
                continue
            per_column: dict[int, list] = {i: [] for i in mine}
            for column in (self.top_label if top else self._class_columns()):
                prefix = _Prefix(column, weights, buffers)
                for i in mine:
                    per_column[i].append(self._column_stats(specs[i], prefix, column))
            for i in mine:
                out[i] = self._reduce_parts(specs[i], per_column[i])
        return out

    def _upper_bin_entries(self, n_bins: int, right: bool) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        """The (row, class) entries of ``probs`` outside the first uniform bin: rows, ``class * n_bins + bin``,
        values and targets (``labels == class``). A row has fewer than ``n_bins`` of them (its values sum to 1)."""
        key = (n_bins, right)
        if key not in self._upper_entries:
            rows, slots, values = upper_bin_entries(self.probs, n_bins, right)
            targets = (self.labels[rows] == slots // n_bins).astype(np.float64)
            self._upper_entries[key] = (rows, slots, values, targets)
        return self._upper_entries[key]

    def _few_upper_entries(self, spec: BinnedSpec) -> bool:
        """Whether :meth:`_classwise_uniform` pays: few entries outside the first bin
        (:func:`calib_core._accel.entry_sums_pay`: fewer than 3 in 4 of them with the compiled entry sums,
        fewer than 1 in 8 with numpy's bincounts)."""
        rows = self._upper_bin_entries(spec.n_bins, spec.right)[0]
        return entry_sums_pay(rows.size, self.n_rows * self.n_classes)

    def _classwise_uniform(self, specs: list[BinnedSpec], weights: NDArray[np.integer]) -> NDArray[np.float64]:
        """Class-wise metrics with uniform bins, without sorting or visiting every (row, class) per resample.

        Every value below ``1/B`` lies in the first bin, so a class's first bin
        is its column total minus its other bins. The totals of all classes
        and resamples are one matrix product ``W @ probs`` (values) and one
        weighted :func:`numpy.bincount` of the labels per resample (targets;
        every column's count is N). The other bins are weighted bincounts
        over the few entries of at least ``1/B`` (:meth:`_upper_bin_entries`,
        fewer than ``B`` per row). The cost per resample is N x K multiply-adds
        in BLAS plus O(N) for the rest, instead of a pass over every column.
        """
        n_res = weights.shape[0]
        n_rows, n_classes = self.n_rows, self.n_classes
        drawn = weights[:, :n_rows].astype(np.float64)
        total_value = drawn @ self.probs  # (R, K)
        total_target = np.stack([np.bincount(self.labels, weights=w, minlength=n_classes) for w in drawn])
        out = np.empty((len(specs), n_res))
        for setting in sorted({(spec.n_bins, spec.right) for spec in specs}):
            n_bins = setting[0]
            rows, slots, values, targets = self._upper_bin_entries(*setting)
            count, value, target = (sums.reshape(n_res, n_classes, n_bins) for sums in entry_sums(
                weights, rows, slots, values, targets, n_classes * n_bins))
            count[:, :, 0] = n_rows - count[:, :, 1:].sum(axis=2)
            value[:, :, 0] = total_value - value[:, :, 1:].sum(axis=2)
            target[:, :, 0] = total_target - target[:, :, 1:].sum(axis=2)
            empty = np.broadcast_to(np.nan, count.shape)
            stats = BinStats(count, value, target, empty, empty, np.full((n_res, n_classes), float(n_rows)))
            for i, spec in enumerate(specs):
                if (spec.n_bins, spec.right) == setting:
                    out[i] = binned_error(stats, spec.norm).mean(axis=1)
        return out

    def _classwise_adaptive_walked(self, specs: list[BinnedSpec], weights: NDArray[np.integer]
                                   ) -> NDArray[np.float64]:
        """Class-wise metrics with adaptive bins by :func:`calib_core._accel.adaptive_bin_sums` (when it pays).

        Each class column is sorted once (once per block of resamples above
        :data:`MAX_KEPT_CELLS` rows x classes, where they are not kept); the kernel
        walks its sorted rows once per resample with that resample's row
        weights, closing each bin at the end of the run of ties that reaches
        its goal: the bins of :func:`_adaptive_ends`, without the chunked
        weights, matrix products and searches of the numpy path. Columns are
        cut from the matrix in blocks (a strided single-column copy reads the
        whole matrix each time).
        """
        n_rows, n_classes = self.n_rows, self.n_classes
        by_row = np.ascontiguousarray(weights.T)  # (N + 1, R): a row's weights in every resample together
        totals = weights.sum(axis=1, dtype=np.int64).astype(np.float64)
        block = max(1, _COLUMN_BLOCK // max(n_rows, 1))
        keep = n_rows * n_classes <= MAX_KEPT_CELLS
        scratch = threading.local()

        def column_block(lo: int, hi: int) -> list[list]:
            """Every spec's bin sums of the columns ``lo:hi`` (one thread's block; the kernel releases the GIL)."""
            if keep and lo in self._sorted_blocks:
                sorted_columns = self._sorted_blocks[lo]
            else:
                buffer = getattr(scratch, "buffer", None)
                if buffer is None:
                    buffer = scratch.buffer = np.empty((min(block, n_classes), n_rows))
                columns = transposed(self.probs[:, lo:hi], buffer[:hi - lo])
                sorted_columns = [_sorted_column(column, self.labels == lo + offset)
                                  for offset, column in enumerate(columns)]
                if keep:  # for the next block of resamples
                    self._sorted_blocks[lo] = sorted_columns
            block_parts: list[list] = [[] for _ in specs]
            for order, values, targets, tie_end in sorted_columns:
                for part, spec in zip(block_parts, specs):
                    start = (0 if spec.threshold is None
                             else int(np.searchsorted(values, spec.threshold, side="right")))
                    count, value, target = adaptive_bin_sums(order, values, targets, tie_end, by_row,
                                                                       totals, start, spec.n_bins)
                    total = count.sum(axis=1) if spec.threshold is not None else float(n_rows)
                    part.append((count, value, target, total))
            return block_parts

        # Blocks of columns on two threads (calib_core._accel.map_blocks), their parts joined in column order.
        parts: list[list] = [[] for _ in specs]
        for block_parts in map_blocks(column_block, ((lo, min(n_classes, lo + block))
                                                            for lo in range(0, n_classes, block))):
            for part, block_part in zip(parts, block_parts):
                part.extend(block_part)
        return np.array([self._reduce_parts(spec, part) for spec, part in zip(specs, parts)])

    def _uniform_keys(self, n_bins: int, right: bool) -> NDArray[np.intp]:
        """``2 * bin + correct`` of each row's top-label confidence (uniform bins, the one bin rule)."""
        if (n_bins, right) not in self._keys:
            confidence, correct = self._confidence
            self._keys[(n_bins, right)] = 2 * uniform_index(confidence, n_bins, right) + (correct > 0)
        return self._keys[(n_bins, right)]

    def _compact_keys(self, n_bins: int, right: bool) -> NDArray[np.integer]:
        """:meth:`_uniform_keys` as int16 (int32 above 16,383 bins): the compiled key sums read them at random,
        and the smaller array stays in cache (twice as fast at 100,000 rows)."""
        if ("compact", n_bins, right) not in self._keys:
            dtype = np.int16 if 2 * n_bins <= np.iinfo(np.int16).max else np.int32
            self._keys[("compact", n_bins, right)] = self._uniform_keys(n_bins, right).astype(dtype)
        return self._keys[("compact", n_bins, right)]

    @functools.cached_property
    def _confidence(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return binned.top_label(self.probs, self.labels)

    def _top_label_uniform(self, specs: list[BinnedSpec], indices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Top-label uniform-bin metrics from bin counts of the drawn rows (no row weights needed).

        Per resample, one :func:`numpy.bincount` over the drawn rows' keys
        ``2 * bin + correct`` gives the counts and correct counts of every
        bin, and one weighted by the drawn confidences the confidence sums
        (a loop over resamples: each count array stays in cache).
        """
        n_res = indices.shape[0]
        settings = sorted({(spec.n_bins, spec.right) for spec in specs})
        sums = {s: np.empty((3, n_res, 1, s[0])) for s in settings}
        confidence = self._confidence[0]
        for setting in settings:
            # One pass over each resample's drawn rows (calib_core._accel.key_sums: the compiled kernel or bincounts)
            counts, values = key_sums(indices, self._compact_keys(*setting), confidence, 2 * setting[0])
            counts = counts.reshape(n_res, -1, 2)
            sums[setting][0, :, 0] = counts.sum(axis=2)
            sums[setting][1, :, 0] = values.reshape(n_res, -1, 2).sum(axis=2)
            sums[setting][2, :, 0] = counts[:, :, 1]
        out = np.empty((len(specs), n_res))
        for i, spec in enumerate(specs):
            count, value, target = sums[(spec.n_bins, spec.right)]
            out[i] = self._reduce_parts(spec, [(count[:, 0], value[:, 0], target[:, 0], float(self.n_rows))])
        return out

    def _column_stats(self, spec: BinnedSpec, prefix: _Prefix, column: _Column):
        if spec.binning == "uniform":
            ends = np.broadcast_to(column.uniform_ends(spec.n_bins, spec.right),
                                   (prefix.before.shape[0], spec.n_bins + 1))
            return (*_stats(prefix, ends), float(self.n_rows))
        start = 0 if spec.threshold is None else int(np.searchsorted(column.values, spec.threshold, side="right"))
        ends, n_kept = _adaptive_ends(prefix, column, spec.n_bins, start)
        return (*_stats(prefix, ends), n_kept if spec.threshold is not None else float(self.n_rows))

    @staticmethod
    def _reduce_parts(spec: BinnedSpec, parts) -> NDArray[np.float64]:
        # Stack the columns on axis 1: (R, C, B) sums and (R, C) totals; the reductions
        # are binned's own, so the formulas are the metrics' (Nixon et al. 2019, eq. 1-3).
        count, value, target = (np.stack([p[j] for p in parts], axis=1) for j in range(3))
        total = np.stack([np.broadcast_to(p[3], count.shape[:1]) for p in parts], axis=1)
        empty = np.broadcast_to(np.nan, count.shape)
        stats = BinStats(count, value, target, empty, empty, total)
        if spec.family == "adaptive_mean":
            per_column = mean_abs_gap(stats)
        else:
            per_column = binned_error(stats, spec.norm)
        return per_column.mean(axis=1)


def resampled_binned_values(resampler: BinnedResampler, specs: list[BinnedSpec],
                            indices: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each spec's metric on each resample ``rows[indices[r]]``: an array ``(len(specs), R)``.

    The index block is turned into row weights and processed in sub-blocks of
    at most :data:`MAX_WEIGHT_BLOCK` weights, so memory stays bounded.
    """
    n_res, n_rows = indices.shape
    out = np.empty((len(specs), n_res))
    step = max(1, MAX_WEIGHT_BLOCK // n_rows)
    for start in range(0, n_res, step):
        stop = min(n_res, start + step)
        out[:, start:stop] = resampler.values(specs, indices[start:stop])
    return out
