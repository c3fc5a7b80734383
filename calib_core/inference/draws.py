"""Labels drawn from the predictions, and a canonical estimator's value on many draws at once.

The machinery of :func:`calib_core.inference.consistency.consistency_resampling`
and :func:`calib_core.inference.lenses.lens_estimates`: drawing blocks of
label vectors under perfect calibration (inverse CDF, :class:`_LabelSampler`),
and re-evaluating a partitioned estimate for a whole block of draws on fixed
points (:func:`_resampled_estimates`: a closed form for rows alone in their
cell, per-cell outcome counts for the others, one matrix product for two-class
points). Vaicenavicius et al. (2019), Section 4.2.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calib_core._accel import KeptValues, is_validated, label_search
from calib_core.metrics.simplex import Partition, cell_means, squared_norm_sum

#: Entries of the (draws x rows) and (draws x cells x outcomes) arrays held at once.
_BLOCK_ELEMENTS = 4_000_000

#: Most (cell, outcome) slots per row for which :func:`_resampled_cell_estimates` counts every slot (a bincount)
#: rather than sorting the triples that occur: at 14,000 rows in 3,900 cells of 1,000 classes the slots took
#: 26 ms per draw, the sort 3 ms.
_SLOTS_PER_ROW_DENSE = 16

#: Up to this many classes labels are drawn by comparisons with each CDF column;
#: beyond it by one binary search over all rows' CDFs.
_COMPARE_MAX_CLASSES = 32

# ----------------------------------------------------------------------------
# Drawing labels under perfect calibration
# ----------------------------------------------------------------------------

class _LabelSampler:
    """Inverse-CDF sampling of labels from the rows of ``probs`` (one draw = N labels)."""

    def __init__(self, probs: NDArray[np.float64]):
        self.n_rows, self.n_classes = probs.shape
        self.compare = self.n_classes <= _COMPARE_MAX_CLASSES
        #: Each row's cumulative sums ``F_k`` (one sequential sum per row). The sampler keeps no reference to
        #: ``probs``, so that :data:`_SAMPLERS` (which holds ``probs`` weakly) lets the predictions go.
        self.cdf: NDArray[np.float64] = np.cumsum(probs, axis=1)

    @functools.cached_property
    def columns(self) -> NDArray[np.float64]:
        """K <= 32: ``F_0 .. F_(K-2)`` as rows; label = #{k < K-1 : u >= F_k}, the first k with u < F_k
        (the last column is left out so that rounding of F_(K-1) cannot give K)."""
        return np.ascontiguousarray(self.cdf[:, :-1].T)

    @functools.cached_property
    def flat(self) -> NDArray[np.float64]:
        """K > 32: one sorted array of all rows' CDFs shifted by the row number (the last set to 1): a binary
        search for ``i + u`` finds row i's first ``F_k > u``."""
        cdf = self.cdf.copy()
        cdf[:, -1] = 1.0
        return (cdf + np.arange(self.n_rows)[:, None]).ravel()

    def draw(self, rng: np.random.Generator, n_draws: int) -> NDArray[np.integer]:
        """Labels of shape (n_draws, N); a small integer dtype when K is small."""
        uniform = rng.random((n_draws, self.n_rows))
        if self.compare:
            # uint8 counters: the K-1 comparisons cost less than one intp pass.
            labels = np.zeros((n_draws, self.n_rows), dtype=np.uint8)
            for column in self.columns:
                labels += uniform >= column
            return labels
        return label_search(self.flat, uniform, self.n_classes)

    def draw_other(self, rng: np.random.Generator, n_draws: int, reference: NDArray[np.intp]) -> NDArray[np.uint8]:
        """``labels != reference`` of shape (n_draws, N), for the labels :meth:`draw` gives with this ``rng``.

        The same uniforms and the same comparisons with the cumulative sums as
        :meth:`draw`, so the same draws, but two comparisons per entry instead
        of a label: the label is ``reference[i]`` exactly when ``u`` lies in
        ``[F_(r-1), F_r)`` (no lower end for ``r = 0``, no upper end for the
        last class).
        """
        uniform = rng.random((n_draws, self.n_rows))
        last = self.n_classes - 1
        rows = np.arange(self.n_rows)
        # Only the two cumulative sums around each row's reference class are needed (no flat array).
        low = np.where(reference > 0, self.cdf[rows, np.maximum(reference - 1, 0)], -np.inf)
        high = np.where(reference < last, self.cdf[rows, np.minimum(reference, last - 1)], np.inf)
        if not self.compare:
            # The flat search compares i + u with i + F_k: the same sums here.
            uniform += rows
            low += rows
            high += rows
        other = uniform < low
        other |= uniform >= high
        return other.view(np.uint8)


#: The sampler of the last marked ``probs`` (a loaded Predictions' frozen array): its cumulative sums (and, above
#: 32 classes, the flat array, 1.2 s at 50,000 x 1,000) serve every later resampling of the same predictions.
_SAMPLERS = KeptValues(capacity=1)


def _sampler(probs: NDArray[np.float64]) -> _LabelSampler:
    sampler = _SAMPLERS.get((probs,))
    if sampler is None:
        sampler = _LabelSampler(probs)
        if is_validated(probs):  # frozen and marked: cannot change behind the memo's back
            _SAMPLERS.put((probs,), (), sampler)
    return sampler


def _draw_blocks(probs: NDArray[np.float64], n_draws: int, rng: np.random.Generator, per_draw: int,
                 reference: NDArray[np.intp] | None = None, seed: int | None = None):
    """Yield (start, labels of shape (b, N)) blocks of at most ``_BLOCK_ELEMENTS`` entries.

    With ``reference`` (a class per row), the blocks hold ``labels != reference``
    instead (:meth:`_LabelSampler.draw_other`): the same draws, seen through a
    two-class lens.

    ``seed``: the integer ``rng`` was made from, when it was. The labels are
    then a function of (``probs``, ``seed``, ``n_draws``) alone, and for
    marked predictions (:func:`calib_core._accel.is_validated`: a
    ``Predictions``' frozen arrays) the last few sets are kept (:data:`_KEPT_DRAWS`): a
    page that changes only the partition (the Simplex page's cells) draws
    the same labels again (0.6 s for 100 draws at 50,000 x 1,000).
    """
    key = None
    if (seed is not None and reference is None and is_validated(probs)
            and n_draws * probs.shape[0] <= _MAX_KEPT_DRAW_ENTRIES):
        key = (seed, n_draws, per_draw)
        blocks = _KEPT_DRAWS.get((probs,), key)
        if blocks is not None:
            for start, labels, dtype in blocks:
                yield start, labels.astype(dtype)
            return
    sampler = _sampler(probs)
    block = max(1, _BLOCK_ELEMENTS // max(per_draw, 1))
    kept = []
    for start in range(0, n_draws, block):
        size = min(block, n_draws - start)
        labels = sampler.draw(rng, size) if reference is None else sampler.draw_other(rng, size, reference)
        if key is not None:
            kept.append((start, labels.astype(np.min_scalar_type(probs.shape[1] - 1)), labels.dtype))
        yield start, labels
    if key is not None:
        _KEPT_DRAWS.put((probs,), key, kept)


#: The last label draws of marked predictions: (probs, (seed, n_draws, per_draw), [(start, labels, dtype)]), newest
#: first. Labels kept in the smallest integer type and handed out in the type they were drawn in.
_KEPT_DRAWS = KeptValues(capacity=2)
#: Most draws x rows kept per set (uint16 labels at 1,000 classes: 33 MB; 200 draws of 50,000 rows: 20 MB).
_MAX_KEPT_DRAW_ENTRIES = 1 << 24


# ----------------------------------------------------------------------------
# Vectorised re-evaluation on a fixed partition
# ----------------------------------------------------------------------------

def _resampled_estimates(points: NDArray[np.float64], partition: Partition, outcome_draws: NDArray[np.integer],
                         distances: Sequence[str]) -> NDArray[np.float64]:
    """Estimates for many outcome vectors on one partition of fixed points.

    Cells holding a single prediction (most cells of a fine grid in many
    dimensions) have a closed form per draw: with the prediction p and the
    drawn outcome y, ``sum_k |h_k - p_k| = 2 (1 - p_y)`` and
    ``sum_k (h_k - p_k)^2 = |p|^2 - 2 p_y + 1``. They are summed directly
    from the draws; :func:`_resampled_cell_estimates` handles the other cells.

    Returns
    -------
    ndarray of shape (len(distances), n_draws)
    """
    cells = partition.cell_index
    n_rows = points.shape[0]
    if points.shape[1] == 2 and partition.n_cells <= _TWO_CLASS_MAX_CELLS:
        return _two_class_cell_estimates(points, cells, partition.n_cells, outcome_draws, distances)
    if "euclidean" in distances:
        return _resampled_cell_estimates(points, cells, partition.n_cells, outcome_draws, distances)
    split = _SPLIT_CELLS.get((points, partition))  # the next block of one resampling
    if split is None:
        split = _SPLIT_CELLS.put((points, partition), (), _SplitCells.build(points, partition))
    if split.single.size == 0:
        return _resampled_cell_estimates(points, cells, partition.n_cells, outcome_draws, distances, split.rest)
    n_single = split.single.size
    drawn_prob = points[split.single, outcome_draws[:, split.single]].sum(axis=1)  # sum_i p_{i, y_i}
    closed_form = {"tv": (n_single - drawn_prob) / n_rows,
                   "sq_euclidean": (split.single_square - 2.0 * drawn_prob + n_single) / n_rows}
    out = np.array([closed_form[d] for d in distances])
    if split.rest is not None:
        out += split.share * _resampled_cell_estimates(None, None, 0, outcome_draws[:, split.rest_rows], distances,
                                                       split.rest)
    return out


@dataclass(frozen=True)
class _CellSums:
    """What :func:`_resampled_cell_estimates` needs of fixed points and cells, for every block of draws."""

    dim: int
    n_rows: int
    n_cells: int
    safe: NDArray[np.float64]
    mean_prediction: NDArray[np.float64]
    weight: NDArray[np.float64]
    base: dict
    cell_offsets: NDArray[np.intp]

    @classmethod
    def build(cls, points: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int) -> _CellSums:
        n_rows, dim = points.shape
        count = np.bincount(cells, minlength=n_cells).astype(np.float64)
        safe = np.maximum(count, 1.0)
        mean_prediction = cell_means(points, cells, n_cells, safe)
        weight = count / n_rows
        base = {"tv": weight @ np.abs(mean_prediction).sum(axis=1),
                "sq": weight @ (mean_prediction ** 2).sum(axis=1)}
        return cls(dim, n_rows, n_cells, safe, mean_prediction, weight, base, cells * dim)


@dataclass(frozen=True)
class _SplitCells:
    """The rows alone in their cell (closed form) and the others (:class:`_CellSums`), of one partition."""

    single: NDArray[np.intp]
    single_square: float
    rest_rows: NDArray[np.intp]
    rest: _CellSums | None
    share: float

    @classmethod
    def build(cls, points: NDArray[np.float64], partition: Partition) -> _SplitCells:
        cells = partition.cell_index
        alone = np.bincount(cells, minlength=partition.n_cells)[cells] == 1
        single, rest_rows = np.flatnonzero(alone), np.flatnonzero(~alone)
        rest = None
        if rest_rows.size and single.size:
            _, rest_cells = np.unique(cells[rest_rows], return_inverse=True)
            rest_cells = rest_cells.ravel()
            rest = _CellSums.build(points[rest_rows], rest_cells, int(rest_cells.max()) + 1)
        elif rest_rows.size:
            rest = _CellSums.build(points, cells, partition.n_cells)
        square = squared_norm_sum(points, single)
        return cls(single, square, rest_rows, rest, rest_rows.size / points.shape[0])


#: The :class:`_SplitCells` of the last (points, partition) of :func:`_resampled_estimates`: the blocks of one
#: resampling share them (found by identity, while the points and the partition live).
_SPLIT_CELLS = KeptValues(capacity=1)


#: Most cells for :func:`_two_class_cell_estimates` (its one-hot matrix has N x cells entries).
_TWO_CLASS_MAX_CELLS = 256

#: The per-cell arrays of the last (points, cells) of :func:`_two_class_cell_estimates`: the blocks of one
#: resampling share them (found by identity, while the points and the cells live).
_TWO_CLASS_CELLS = KeptValues(capacity=1)


def _two_class_cell_estimates(points: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int,
                              outcome_draws: NDArray[np.integer], distances: Sequence[str]) -> NDArray[np.float64]:
    """:func:`_resampled_cell_estimates` for two-class points ``(v, 1 - v)`` and outcomes in {0, 1}.

    With the cell's mean prediction ``(g, 1 - g)``, size ``n`` and ``m``
    outcomes 1 among its rows, the frequency is ``(1 - m/n, m/n)`` and both
    coordinates are off by the same ``d = |1 - m/n - g|``: the cell's
    distance is ``d`` (total variation), ``2 d^2`` (squared Euclidean) or
    ``sqrt(2) d`` (Euclidean). The counts ``m`` of a block of draws are one
    matrix product of the draws with the cells' one-hot matrix (exact:
    float32 sums of 0/1 up to 2^24 rows, float64 beyond).

    Returns
    -------
    ndarray of shape (len(distances), n_draws)
    """
    cached = _TWO_CLASS_CELLS.get((points, cells))  # the next block of the same draws
    if cached is not None:
        count, safe, first, weight, one_hot = cached
    else:
        n_rows = points.shape[0]
        count = np.bincount(cells, minlength=n_cells).astype(np.float64)
        safe = np.maximum(count, 1.0)
        first = np.bincount(cells, weights=points[:, 0], minlength=n_cells) / safe
        weight = count / n_rows
        one_hot = np.zeros((n_rows, n_cells), dtype=np.float32 if n_rows < 1 << 24 else np.float64)
        one_hot[np.arange(n_rows), cells] = 1.0
        _TWO_CLASS_CELLS.put((points, cells), (), (count, safe, first, weight, one_hot))
    ones = (outcome_draws.astype(one_hot.dtype) @ one_hot).astype(np.float64)
    gap = np.abs((count - ones) / safe - first)
    scale = {"tv": gap, "sq_euclidean": 2.0 * gap * gap, "euclidean": np.sqrt(2.0) * gap}
    return np.stack([scale[d] @ weight for d in distances])


def _resampled_cell_estimates(points: NDArray[np.float64] | None, cells: NDArray[np.intp] | None, n_cells: int,
                              outcome_draws: NDArray[np.integer], distances: Sequence[str],
                              prepared: _CellSums | None = None) -> NDArray[np.float64]:
    """Estimates for many outcome vectors from per-cell outcome counts (see :func:`_resampled_estimates`).

    The predictions, hence the partition, the counts and the mean predictions
    do not change between draws; only the outcome counts do. For a cell with
    mean prediction g, size n and outcome counts h, both distances split into
    a part that does not depend on the draw and a sum over the outcomes seen:

    .. math:: \\sum_k f(h_k / n, g_k) = \\sum_k f(0, g_k) + \\sum_{k: h_k > 0} [f(h_k/n, g_k) - f(0, g_k)]

    with :math:`f(a, b) = |a - b|` or :math:`(a - b)^2`. The second sum runs
    over the (cell, outcome) pairs that occur, at most N per draw, so a block
    of draws costs one :func:`numpy.bincount`, one scan of its counts and a
    few passes over arrays of at most (draws x rows) entries. With more
    (cell, outcome) slots than that, or more than 16 per row (many classes),
    the triples that occur are counted by sorting them (:func:`numpy.unique`)
    instead, which lists them in the same ascending order.
    ``prepared``: the fixed part (:class:`_CellSums`), when the caller kept it.

    Returns
    -------
    ndarray of shape (len(distances), n_draws)
    """
    fixed = prepared if prepared is not None else _CellSums.build(points, cells, n_cells)
    dim, n_rows, n_cells = fixed.dim, fixed.n_rows, fixed.n_cells
    safe, mean_prediction, weight, base = fixed.safe, fixed.mean_prediction, fixed.weight, fixed.base
    n_draws = outcome_draws.shape[0]
    flat_means = mean_prediction.ravel()
    width = n_cells * dim
    out = np.empty((len(distances), n_draws))
    # Counting every (cell, outcome) slot costs O(width) per draw, sorting the triples that occur O(N log N):
    # slots far outnumbering the rows (many classes) are sorted. Both list the triples in ascending order.
    sparse = (width > _BLOCK_ELEMENTS or width > _SLOTS_PER_ROW_DENSE * n_rows) and "euclidean" not in distances
    block = max(1, _BLOCK_ELEMENTS // (n_rows if sparse else max(width, n_rows)))
    for start in range(0, n_draws, block):
        draws = outcome_draws[start:start + block]
        b = draws.shape[0]
        flat = (fixed.cell_offsets[None, :] + draws) + (np.arange(b) * width)[:, None]
        if sparse:
            seen, counts = np.unique(flat.ravel(), return_counts=True)
        else:
            hits = np.bincount(flat.ravel(), minlength=b * width)
            seen = np.flatnonzero(hits)  # the (draw, cell, outcome) triples that occur
            counts = hits[seen]
        draw_of, pair = np.divmod(seen, width)
        cell_of = pair // dim
        frequency = counts / safe[cell_of]
        g = flat_means[pair]
        w = weight[cell_of]
        for j, distance in enumerate(distances):
            if distance == "tv":
                terms = (np.abs(frequency - g) - g) * w
                value = 0.5 * (base["tv"] + np.bincount(draw_of, weights=terms, minlength=b))
            elif distance == "sq_euclidean":
                terms = ((frequency - g) ** 2 - g ** 2) * w
                value = base["sq"] + np.bincount(draw_of, weights=terms, minlength=b)
            else:
                # The square root is per cell, so the Euclidean distance needs the dense counts.
                dense = hits.reshape(b, n_cells, dim) / safe[None, :, None] - mean_prediction[None]
                value = np.sqrt(np.einsum("bck,bck->bc", dense, dense)) @ weight
            # The split into a fixed part and a sum can leave -1e-16 where the estimate is 0.
            out[j, start:start + b] = np.maximum(value, 0.0)
    return out
