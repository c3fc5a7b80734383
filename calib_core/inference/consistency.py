"""Consistency resampling: canonical and lens estimates against their distribution under perfect calibration.

The binned estimate of :mod:`calib_core.metrics.canonical` is biased, and
differently so for different models (Vaicenavicius et al. 2019, Example 5).
Labels drawn from the predictions themselves give its distribution under the
hypothesis of calibration (appendix C): :func:`consistency_resampling` (a
test with a p-value and a verdict), :func:`consistency_bands` (bands around
a reliability diagram) and, in :mod:`calib_core.inference.lenses`,
:func:`~calib_core.inference.lenses.lens_estimates` (every lens and distance).

References
----------
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schon, T. B. "Evaluating model calibration in classification",
   AISTATS 2019. Appendix C (consistency resampling bands, Figures 8-15).
"""
from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import bin_index, bin_statistics
from calib_core.metrics.simplex import Partition, _cell_means, data_dependent_partition, uniform_partition
from calib_core.metrics.canonical import (Seed, _check_options, _check_quantiles, _lens, _Options, _partition,
                                          canonical_ce)
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_count,
    check_n_bins,
    check_probs,
    check_probs_labels,
    row_argmax,
)
from calib_core.inference.verdicts import DEFAULT_ALPHA, CellOccupancy, Verdict, cell_occupancy, check_alpha, read_test

__all__ = [
    "CanonicalCE",
    "ConsistencyBands",
    "ConsistencyResult",
    "consistency_bands",
    "consistency_resampling",
    "sample_labels",
]

#: Entries of the (draws x rows) and (draws x cells x outcomes) arrays held at once.
_BLOCK_ELEMENTS = 4_000_000

#: Up to this many classes labels are drawn by comparisons with each CDF column;
#: beyond it by one binary search over all rows' CDFs.
_COMPARE_MAX_CLASSES = 32

#: Resampled values within this relative distance of the observed one count as ties.
_TIE_TOLERANCE = 1e-12


# ----------------------------------------------------------------------------
# Drawing labels under perfect calibration
# ----------------------------------------------------------------------------

class _LabelSampler:
    """Inverse-CDF sampling of labels from the rows of ``probs`` (one draw = N labels)."""

    def __init__(self, probs: NDArray[np.float64]):
        self.n_rows, self.n_classes = probs.shape
        self.probs = probs
        self.compare = self.n_classes <= _COMPARE_MAX_CLASSES

    @functools.cached_property
    def cdf(self) -> NDArray[np.float64]:
        """Each row's cumulative sums ``F_k`` (one sequential sum per row)."""
        return np.cumsum(self.probs, axis=1)

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
        rows = np.arange(self.n_rows)
        position = np.searchsorted(self.flat, uniform + rows, side="right")
        return np.minimum(position - rows * self.n_classes, self.n_classes - 1)

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


def sample_labels(probs: ArrayLike, n_draws: int = 1, *, seed: Seed = None) -> NDArray[np.intp]:
    """Draw labels from the predictions themselves (the hypothesis of perfect calibration).

    Parameters
    ----------
    probs : array_like of shape (N, K)
    n_draws : int, default 1
        Number of independent label vectors.
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    ndarray of shape (n_draws, N), intp
        ``out[b, i]`` is drawn from the categorical distribution ``probs[i]``.

    Notes
    -----
    Inverse-CDF sampling: with :math:`u \\sim U[0, 1)` the label is the first
    k with :math:`u < \\sum_{j \\le k} p_j`. All draws of a block come from one
    uniform array, so there is no per-draw Python work.

    Examples
    --------
    >>> sample_labels([[0.0, 1.0], [1.0, 0.0]], 2, seed=0).tolist()
    [[1, 0], [1, 0]]
    """
    probs = check_probs(probs)
    n_draws = check_count(n_draws, "n_draws")
    return _LabelSampler(probs).draw(np.random.default_rng(seed), n_draws).astype(np.intp)


def _draw_blocks(probs: NDArray[np.float64], n_draws: int, rng: np.random.Generator, per_draw: int,
                 reference: NDArray[np.intp] | None = None):
    """Yield (start, labels of shape (b, N)) blocks of at most ``_BLOCK_ELEMENTS`` entries.

    With ``reference`` (a class per row), the blocks hold ``labels != reference``
    instead (:meth:`_LabelSampler.draw_other`): the same draws, seen through a
    two-class lens.
    """
    sampler = _LabelSampler(probs)
    block = max(1, _BLOCK_ELEMENTS // max(per_draw, 1))
    for start in range(0, n_draws, block):
        size = min(block, n_draws - start)
        yield start, sampler.draw(rng, size) if reference is None else sampler.draw_other(rng, size, reference)


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
    single = np.bincount(cells, minlength=partition.n_cells)[cells] == 1
    if "euclidean" in distances or not single.any():
        return _resampled_cell_estimates(points, cells, partition.n_cells, outcome_draws, distances)
    single_points = points[single]
    n_single = single_points.shape[0]
    drawn_prob = single_points[np.arange(n_single), outcome_draws[:, single]].sum(axis=1)  # sum_i p_{i, y_i}
    closed_form = {"tv": (n_single - drawn_prob) / n_rows,
                   "sq_euclidean": ((single_points ** 2).sum() - 2.0 * drawn_prob + n_single) / n_rows}
    out = np.array([closed_form[d] for d in distances])
    rest = ~single
    if rest.any():
        _, rest_cells = np.unique(cells[rest], return_inverse=True)
        share = rest.sum() / n_rows
        out += share * _resampled_cell_estimates(points[rest], rest_cells.ravel(), int(rest_cells.max()) + 1,
                                                 outcome_draws[:, rest], distances)
    return out


#: Most cells for :func:`_two_class_cell_estimates` (its one-hot matrix has N x cells entries).
_TWO_CLASS_MAX_CELLS = 256

#: The last (points, cells, per-cell arrays) of :func:`_two_class_cell_estimates`: the blocks of one
#: resampling share them (found by identity; the reference keeps the arrays alive).
_TWO_CLASS_CELLS: list = [None]


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
    cached = _TWO_CLASS_CELLS[0]
    if cached is not None and cached[0] is points and cached[1] is cells:  # the next block of the same draws
        count, safe, first, weight, one_hot = cached[2]
    else:
        n_rows = points.shape[0]
        count = np.bincount(cells, minlength=n_cells).astype(np.float64)
        safe = np.maximum(count, 1.0)
        first = np.bincount(cells, weights=points[:, 0], minlength=n_cells) / safe
        weight = count / n_rows
        one_hot = np.zeros((n_rows, n_cells), dtype=np.float32 if n_rows < 1 << 24 else np.float64)
        one_hot[np.arange(n_rows), cells] = 1.0
        _TWO_CLASS_CELLS[0] = (points, cells, (count, safe, first, weight, one_hot))
    ones = (outcome_draws.astype(one_hot.dtype) @ one_hot).astype(np.float64)
    gap = np.abs((count - ones) / safe - first)
    scale = {"tv": gap, "sq_euclidean": 2.0 * gap * gap, "euclidean": np.sqrt(2.0) * gap}
    return np.stack([scale[d] @ weight for d in distances])


def _resampled_cell_estimates(points: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int,
                              outcome_draws: NDArray[np.integer], distances: Sequence[str]) -> NDArray[np.float64]:
    """Estimates for many outcome vectors from per-cell outcome counts (see :func:`_resampled_estimates`).

    The predictions, hence the partition, the counts and the mean predictions
    do not change between draws; only the outcome counts do. For a cell with
    mean prediction g, size n and outcome counts h, both distances split into
    a part that does not depend on the draw and a sum over the outcomes seen:

    .. math:: \\sum_k f(h_k / n, g_k) = \\sum_k f(0, g_k) + \\sum_{k: h_k > 0} [f(h_k/n, g_k) - f(0, g_k)]

    with :math:`f(a, b) = |a - b|` or :math:`(a - b)^2`. The second sum runs
    over the (cell, outcome) pairs that occur, at most N per draw, so a block
    of draws costs one :func:`numpy.bincount`, one scan of its counts and a
    few passes over arrays of at most (draws x rows) entries.

    Returns
    -------
    ndarray of shape (len(distances), n_draws)
    """
    n_rows, dim = points.shape
    n_draws = outcome_draws.shape[0]
    count = np.bincount(cells, minlength=n_cells).astype(np.float64)
    safe = np.maximum(count, 1.0)
    mean_prediction = _cell_means(points, cells, n_cells, safe)
    weight = count / n_rows
    base = {"tv": weight @ np.abs(mean_prediction).sum(axis=1),
            "sq": weight @ (mean_prediction ** 2).sum(axis=1)}
    flat_means = mean_prediction.ravel()
    width = n_cells * dim
    out = np.empty((len(distances), n_draws))
    block = max(1, _BLOCK_ELEMENTS // max(width, n_rows))
    cell_offsets = cells * dim
    for start in range(0, n_draws, block):
        draws = outcome_draws[start:start + block]
        b = draws.shape[0]
        flat = (cell_offsets[None, :] + draws) + (np.arange(b) * width)[:, None]
        hits = np.bincount(flat.ravel(), minlength=b * width)
        seen = np.flatnonzero(hits)  # the (draw, cell, outcome) triples that occur
        draw_of, pair = np.divmod(seen, width)
        cell_of = pair // dim
        frequency = hits[seen] / safe[cell_of]
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


# ----------------------------------------------------------------------------
# Cell occupancy: does a partition leave the test any power?
# ----------------------------------------------------------------------------

#: Minimum cell sizes tried when advising a data-dependent partition.
_ADVICE_MIN_SIZES = (20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)


def _occupancy(points: NDArray[np.float64], partition: Partition, options: _Options) -> CellOccupancy:
    """Occupancy of ``partition``; when it is sparse, with settings of the same estimator that are not."""
    counts = np.bincount(partition.cell_index, minlength=partition.n_cells)
    found = cell_occupancy(counts)
    if not found.sparse:
        return found
    return cell_occupancy(counts, _power_advice(points, options))


def _sparse(partition: Partition) -> bool:
    return cell_occupancy(np.bincount(partition.cell_index, minlength=partition.n_cells)).sparse


def _power_advice(points: NDArray[np.float64], options: _Options) -> str:
    """Settings that leave at most half of the rows in cells of fewer than 5 rows (a readable list)."""
    n_rows, dim = points.shape
    advice = []
    # A data-dependent partition: the smallest tried minimum cell size whose cells are full enough.
    larger = [m for m in _ADVICE_MIN_SIZES if m < n_rows and
              (options.partition != "data_dependent" or m > options.min_bin_size)]
    for size in larger:
        if not _sparse(data_dependent_partition(points, size)):
            advice.append(f"a data-dependent partition with a minimum cell size of {size:,} "
                          f"(partition='data_dependent', min_bin_size={size})")
            break
    if options.partition == "uniform":
        for n in range(options.n_bins - 1, 1, -1):
            if not _sparse(uniform_partition(points, n)):
                advice.append(f"{n} subdivisions per coordinate (n_bins={n})")
                break
    if options.lens == "canonical" and dim > 2:
        advice.append("the max lens, whose cells are confidence bins (lens='max')")
    if not advice:
        advice.append("more rows")
    return ", ".join(advice[:-1]) + (" or " if len(advice) > 1 else "") + advice[-1]


@dataclass(frozen=True)
class CanonicalCE:
    """:func:`canonical_ce` with fixed options, as an estimator object.

    Calling it is :func:`canonical_ce`; :meth:`draw_evaluator` builds the
    partition of fixed predictions once and re-evaluates the estimate for
    whole blocks of label vectors at once, which
    :func:`consistency_resampling` uses instead of one call per draw.

    Parameters
    ----------
    distance, partition, n_bins, min_bin_size, lens, class_index
        As in :func:`canonical_ce`.

    Examples
    --------
    >>> est = CanonicalCE(lens="max", n_bins=15)
    >>> round(est([[0.9, 0.1], [0.6, 0.4]], [0, 1]), 6)
    0.35
    """

    distance: str = "tv"
    partition: str = "uniform"
    n_bins: int = 10
    min_bin_size: int = 1000
    lens: str = "canonical"
    class_index: int | None = None

    def __post_init__(self) -> None:
        _check_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                       self.class_index, None)

    def __call__(self, probs: ArrayLike, labels: ArrayLike) -> float:
        return canonical_ce(probs, labels, self.distance, self.partition, self.n_bins, self.min_bin_size,
                            self.lens, class_index=self.class_index)

    def evaluate_draws(self, probs: ArrayLike, label_draws: ArrayLike) -> NDArray[np.float64]:
        """The estimate for each row of ``label_draws`` (labels of the same predictions).

        Parameters
        ----------
        probs : array_like of shape (N, K)
        label_draws : array_like of shape (B, N)
            Integer labels in ``0..K-1``.

        Returns
        -------
        ndarray of shape (B,)
        """
        return self.draw_evaluator(probs)(label_draws)

    def draw_evaluator(self, probs: ArrayLike) -> Callable[[ArrayLike], NDArray[np.float64]]:
        """A function of label draws for fixed predictions: the partition is built once.

        Parameters
        ----------
        probs : array_like of shape (N, K)

        Returns
        -------
        callable
            ``evaluate(label_draws)`` with ``label_draws`` of shape (B, N),
            returning the B estimates.
        """
        probs = check_probs(probs)
        n_rows, n_classes = probs.shape
        options = _check_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                 self.class_index, n_classes)
        view = _lens(probs, options.lens, options.class_index)
        part = _partition(view.points, options)

        def evaluate(label_draws: ArrayLike) -> NDArray[np.float64]:
            draws = np.asarray(label_draws)
            if draws.ndim != 2 or draws.shape[1] != n_rows:
                raise CalibrationInputError(f"`label_draws` must have shape (B, {n_rows}), got {draws.shape}.")
            if not np.issubdtype(draws.dtype, np.integer) or (
                    draws.size and (draws.min() < 0 or draws.max() >= n_classes)):
                raise CalibrationInputError(f"`label_draws` must hold integer labels in 0..{n_classes - 1}.")
            return _resampled_estimates(view.points, part, view.outcomes(draws), (options.distance,))[0]

        return evaluate

    def outcome_evaluator(self, probs: ArrayLike) -> tuple[NDArray[np.intp], Callable] | None:
        """For the two-class lenses: each row's reference class and a function of outcome draws.

        The ``max`` and ``marginal`` lenses see a label only as "is it the
        row's reference class (the arg-max, or ``class_index``)?".
        :func:`consistency_resampling` then draws that indicator directly
        (:meth:`_LabelSampler.draw_other`, the same draws as whole labels)
        and passes blocks of ``labels != reference`` (shape (B, N)) to the
        function. ``None`` for the canonical lens, which needs the labels.
        """
        probs = check_probs(probs)
        n_rows, n_classes = probs.shape
        options = _check_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                 self.class_index, n_classes)
        if options.lens == "canonical":
            return None
        view = _lens(probs, options.lens, options.class_index)
        part = _partition(view.points, options)
        reference = np.broadcast_to(np.asarray(view.reference, dtype=np.intp), (n_rows,))

        def evaluate(outcome_draws: NDArray[np.uint8]) -> NDArray[np.float64]:
            return _resampled_estimates(view.points, part, outcome_draws, (options.distance,))[0]

        return reference, evaluate

    def cell_occupancy(self, probs: ArrayLike) -> CellOccupancy:
        """How full the cells of this estimator's partition are on ``probs``.

        Parameters
        ----------
        probs : array_like of shape (N, K)

        Returns
        -------
        CellOccupancy
            With ``advice`` (settings that leave at most half of the rows in
            cells of fewer than 5 rows) when the cells are sparse.
            :func:`consistency_resampling` calls this to read its result
            (:attr:`ConsistencyResult.verdict`).

        Examples
        --------
        >>> occ = CanonicalCE(n_bins=10).cell_occupancy(np.eye(3)[[0, 0, 1, 1, 2, 2]] * 0.7 + 0.1)
        >>> occ.n_cells, occ.median_rows
        (3, 2.0)
        """
        probs = check_probs(probs)
        options = _check_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                 self.class_index, probs.shape[1])
        view = _lens(probs, options.lens, options.class_index)
        return _occupancy(view.points, _partition(view.points, options), options)


# ----------------------------------------------------------------------------
# Consistency resampling
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ConsistencyResult:
    """An estimator's value and its distribution under perfect calibration.

    Attributes
    ----------
    observed : float
        The estimator on the data.
    lower, upper : float
        The ``quantiles`` (default 5th and 95th percentiles) of the resampled values.
    resampled_mean : float
        Mean of the resampled values, the paper's :math:`\\hat\\eta^{\\mathrm{id}}`:
        what the estimator gives on average for a perfectly calibrated model
        with these predictions (its bias at calibration).
    resampled_std : float
        Standard deviation of the resampled values.
    p_value : float
        :math:`(1 + \\#\\{b : \\hat\\eta_b \\ge \\hat\\eta\\}) / (1 + B)`: how
        unusual the observed value is under perfect calibration.
    resampled : ndarray of shape (B,)
        The resampled values.
    quantiles : tuple of float
    alpha : float, default 0.05
        Significance level of :attr:`verdict`.
    occupancy : CellOccupancy or None
        Cell occupancy of a partitioned estimator (one with a
        ``cell_occupancy(probs)`` method, as :class:`CanonicalCE`); ``None``
        for other estimators.
    """

    observed: float
    lower: float
    upper: float
    resampled_mean: float
    resampled_std: float
    p_value: float
    resampled: NDArray[np.float64]
    quantiles: tuple[float, float]
    alpha: float = DEFAULT_ALPHA
    occupancy: CellOccupancy | None = None

    @property
    def n_resamples(self) -> int:
        """Number of consistency resamples B."""
        return int(self.resampled.shape[0])

    @property
    def below_band(self) -> bool:
        """True when the observed estimate lies below the band (``observed < lower``)."""
        return self.observed < self.lower

    @property
    def reading(self) -> Verdict:
        """:attr:`verdict` and :attr:`verdict_reason` together (:func:`calib_core.inference.verdicts.read_test`)."""
        below = None
        if self.below_band:
            low, high = self.quantiles
            below = (f"the estimate {self.observed:.4f} lies below its band {self.lower:.4f}-{self.upper:.4f} "
                     f"({low:.0%}-{high:.0%} of {self.n_resamples:,} consistency resamples; "
                     f"{self.resampled_mean:.4f} on average for a calibrated model)")
        return read_test(self.p_value, self.alpha, test="consistency resampling", below_null=below,
                         occupancy=self.occupancy)

    @property
    def verdict(self) -> str:
        """``"miscalibrated"``, ``"consistent"`` or ``"inconclusive"``.

        ``p_value < alpha``: miscalibrated. Otherwise inconclusive when the
        observed estimate lies below the band (the estimator's bias
        dominates) or when more than half of the rows sit in cells of fewer
        than 5 rows (:attr:`occupancy`); consistent else. See
        :func:`calib_core.inference.verdicts.read_test`.
        """
        return self.reading.verdict

    @property
    def verdict_reason(self) -> str:
        """Why :attr:`verdict` reads as it does, and for ``"inconclusive"`` what would give the test power."""
        return self.reading.reason

    @property
    def excess(self) -> float:
        """``observed - resampled_mean``: the estimate net of its bias at calibration."""
        return self.observed - self.resampled_mean


def consistency_resampling(probs: ArrayLike, labels: ArrayLike, estimator: Callable[[NDArray, NDArray], float],
                           n_resamples: int = 1000, seed: Seed = None, *,
                           quantiles: tuple[float, float] = (0.05, 0.95), alpha: float = DEFAULT_ALPHA,
                           on_progress: Callable[[int, int], None] | None = None) -> ConsistencyResult:
    """Distribution of a calibration estimator when the model is perfectly calibrated.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    estimator : callable
        ``estimator(probs, labels) -> float``, e.g. :func:`calib_core.ece`,
        :func:`canonical_ce`, ``functools.partial(calib_core.ece, n_bins=10)``
        or a :class:`CanonicalCE`. If it has a method
        ``draw_evaluator(probs)`` returning a function of label draws of
        shape (B, N) that gives the B estimates (as :class:`CanonicalCE`
        does), whole blocks of draws go through that function; otherwise
        ``estimator`` is called once per draw. An ``outcome_evaluator(probs)``
        method (:meth:`CanonicalCE.outcome_evaluator`) that returns a
        reference class per row and a function of ``labels != reference``
        draws is used first: the same draws, two comparisons per entry.
    n_resamples : int, default 1000
        Number B of consistency resamples.
    seed : int or numpy.random.Generator, optional
    quantiles : (float, float), default (0.05, 0.95)
        Levels of ``lower`` and ``upper``.
    alpha : float, default 0.05
        Significance level of the result's ``verdict``.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each block of draws.

    Returns
    -------
    ConsistencyResult

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels or options, or ``estimator`` not callable.

    Notes
    -----
    Consistency resampling (Vaicenavicius et al. 2019, Section 4.2; Broecker &
    Smith 2007): keep the predictions :math:`g(x_i)`, draw new labels
    :math:`\\tilde y_i \\sim g(x_i)` (:func:`sample_labels`, inverse CDF on
    one block of uniforms for many draws), and recompute the estimator. The
    draws are exactly what a perfectly calibrated model with these
    predictions would produce, so their spread is the estimator's noise and
    their mean :math:`\\hat\\eta^{\\mathrm{id}}` its bias at calibration
    (Tables 3-5 of the paper). The p-value counts resampled values within
    a relative 1e-12 of the observed one as ties (>=), and adds 1 to
    numerator and denominator so that it is never 0.

    The result's ``verdict`` reads the p-value (:func:`calib_core.inference.verdicts.read_test`):
    an estimate below the band, or (for an estimator with a
    ``cell_occupancy(probs)`` method, as :class:`CanonicalCE`) a partition
    whose cells mostly hold fewer than 5 rows, makes a non-significant
    result ``"inconclusive"`` rather than ``"consistent"``: with 10 classes
    and 10 bins per coordinate most cells hold one row, the estimate is
    its bias, and the test cannot see miscalibration.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet([1, 1, 1], size=500)
    >>> y = sample_labels(p, seed=1)[0]
    >>> res = consistency_resampling(p, y, CanonicalCE(n_bins=4), n_resamples=200, seed=2)
    >>> res.lower <= res.resampled_mean <= res.upper
    True
    """
    probs, labels = check_probs_labels(probs, labels)
    if not callable(estimator):
        raise CalibrationInputError(f"`estimator` must be callable as estimator(probs, labels), got {estimator!r}.")
    n_resamples = check_count(n_resamples, "n_resamples")
    low_q, high_q = _check_quantiles(quantiles)
    alpha = check_alpha(alpha)
    rng = np.random.default_rng(seed)
    observed = float(estimator(probs, labels))
    occupancy_of = getattr(estimator, "cell_occupancy", None)
    occupancy = occupancy_of(probs) if callable(occupancy_of) else None
    make_outcomes = getattr(estimator, "outcome_evaluator", None)
    two_class = make_outcomes(probs) if callable(make_outcomes) else None
    if two_class is not None:  # a two-class lens: its outcome is drawn, not the whole label
        reference, batched = two_class
    else:
        reference = None
        make_batched = getattr(estimator, "draw_evaluator", None)
        batched = make_batched(probs) if callable(make_batched) else None
    values = np.empty(n_resamples)
    for start, draws in _draw_blocks(probs, n_resamples, rng, probs.shape[0], reference):
        stop = start + draws.shape[0]
        if batched is not None:
            values[start:stop] = batched(draws)
        else:
            for offset, draw in enumerate(draws):
                values[start + offset] = estimator(probs, draw)
        if on_progress is not None:
            on_progress(stop, n_resamples)
    return _consistency_result(observed, values, (low_q, high_q), alpha, occupancy)


def _consistency_result(observed: float, values: NDArray[np.float64], quantiles: tuple[float, float],
                        alpha: float = DEFAULT_ALPHA, occupancy: CellOccupancy | None = None) -> ConsistencyResult:
    lower, upper = np.quantile(values, quantiles)
    tolerance = _TIE_TOLERANCE * max(1.0, abs(observed))
    exceed = int(np.count_nonzero(values >= observed - tolerance))
    p_value = (1.0 + exceed) / (1.0 + values.shape[0])
    std = float(values.std(ddof=1)) if values.shape[0] > 1 else 0.0
    return ConsistencyResult(observed, float(lower), float(upper), float(values.mean()), std, p_value,
                             values, quantiles, alpha, occupancy)


@dataclass(frozen=True)
class ConsistencyBands:
    """Per-bin consistency bands of a reliability diagram (the red bars of Figures 8-15).

    One entry per non-empty bin.

    Attributes
    ----------
    lower, upper : ndarray of shape (B,)
        Bin bounds ``(lower, upper]``.
    count : ndarray of shape (B,)
        Predictions per bin.
    mean_value : ndarray of shape (B,)
        Mean confidence (or mean probability of the class) per bin.
    observed_frequency : ndarray of shape (B,)
        Accuracy (or frequency of the class) per bin in the data.
    frequency_low, frequency_high : ndarray of shape (B,)
        The ``quantiles`` of the bin's observed frequency over consistency
        resamples: where the frequency falls for a perfectly calibrated model.
    quantiles : tuple of float
    n_resamples : int
    target : str or int
        ``"top_label"`` or the class index.
    """

    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    count: NDArray[np.float64]
    mean_value: NDArray[np.float64]
    observed_frequency: NDArray[np.float64]
    frequency_low: NDArray[np.float64]
    frequency_high: NDArray[np.float64]
    quantiles: tuple[float, float]
    n_resamples: int
    target: str | int

    @property
    def deviation(self) -> NDArray[np.float64]:
        """``observed_frequency - mean_value`` per bin."""
        return self.observed_frequency - self.mean_value

    @property
    def deviation_low(self) -> NDArray[np.float64]:
        """Lower band of the deviation under perfect calibration."""
        return self.frequency_low - self.mean_value

    @property
    def deviation_high(self) -> NDArray[np.float64]:
        """Upper band of the deviation under perfect calibration."""
        return self.frequency_high - self.mean_value

    @property
    def outside(self) -> NDArray[np.bool_]:
        """Bins whose observed frequency lies outside the band."""
        return (self.observed_frequency < self.frequency_low) | (self.observed_frequency > self.frequency_high)

    def to_frame(self):
        """The bands as a :class:`pandas.DataFrame`, one row per non-empty bin."""
        import pandas as pd

        return pd.DataFrame({
            "lower": self.lower, "upper": self.upper, "count": self.count, "mean_value": self.mean_value,
            "observed_frequency": self.observed_frequency, "frequency_low": self.frequency_low,
            "frequency_high": self.frequency_high,
        })


def _target_values(probs: NDArray[np.float64], labels: NDArray[np.intp],
                   target: object) -> tuple[NDArray, NDArray, str | int]:
    n_classes = probs.shape[1]
    if isinstance(target, str):
        if target != "top_label":
            raise CalibrationInputError(f"`target` must be 'top_label' or a class index, got {target!r}.")
        predicted = row_argmax(probs)
        values = probs[np.arange(probs.shape[0]), predicted]
        return values, (labels == predicted).astype(np.float64), "top_label"
    if isinstance(target, bool) or not isinstance(target, numbers.Integral) or not 0 <= target < n_classes:
        raise CalibrationInputError(
            f"`target` must be 'top_label' or a class index in 0..{n_classes - 1}, got {target!r}."
        )
    return probs[:, int(target)], (labels == target).astype(np.float64), int(target)


def consistency_bands(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform",
                      target: str | int = "top_label", n_resamples: int = 1000, seed: Seed = None,
                      quantiles: tuple[float, float] = (0.05, 0.95)) -> ConsistencyBands:
    """Per-bin band of the observed frequency under perfect calibration.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}, default "uniform"
        Bins of :mod:`calib_core.binning` (the same as :func:`calib_core.reliability_table`).
    target : "top_label" or int, default "top_label"
        Top-label confidence against correctness, or the probabilities of
        one class against ``labels == target``.
    n_resamples : int, default 1000
    seed : int or numpy.random.Generator, optional
    quantiles : (float, float), default (0.05, 0.95)

    Returns
    -------
    ConsistencyBands

    Notes
    -----
    The binned values depend on the predictions only, so the bins are fixed
    across resamples. Under perfect calibration the target of a row is 1 with
    probability equal to its value (the top-label confidence, or
    :math:`p_k`), so each resample draws Bernoulli(value) targets (the same
    law as drawing the label from the prediction and comparing) and the
    per-bin frequencies of a whole block of resamples come from one
    :func:`numpy.bincount`. Vaicenavicius et al. (2019), appendix C,
    Figures 8-15: "Red bars visualize the 5th and 95th percentiles of the
    deviation in 1000 consistency resamples."

    Examples
    --------
    >>> p = np.column_stack([np.linspace(0.05, 0.95, 200), 1 - np.linspace(0.05, 0.95, 200)])
    >>> bands = consistency_bands(p, np.zeros(200, dtype=int), n_bins=5, target=0, n_resamples=200, seed=0)
    >>> bool(np.all(bands.frequency_low <= bands.mean_value + 1e-12))
    True
    """
    probs, labels = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    n_resamples = check_count(n_resamples, "n_resamples")
    low_q, high_q = _check_quantiles(quantiles)
    values, targets, target = _target_values(probs, labels, target)
    stats = bin_statistics(values, targets, n_bins, binning)
    index = bin_index(values, n_bins, binning)
    size = stats.count.shape[0]
    rng = np.random.default_rng(seed)
    frequencies = np.empty((n_resamples, size))
    safe = np.maximum(stats.count, 1.0)
    n_rows = values.shape[0]
    block = max(1, _BLOCK_ELEMENTS // n_rows)
    for start in range(0, n_resamples, block):
        b = min(block, n_resamples - start)
        hit = rng.random((b, n_rows)) < values[None, :]
        flat = np.arange(b)[:, None] * size + index[None, :]
        sums = np.bincount(flat[hit], minlength=b * size).reshape(b, size)
        frequencies[start:start + b] = sums / safe
    keep = stats.count > 0
    band_low, band_high = np.quantile(frequencies[:, keep], (low_q, high_q), axis=0)
    return ConsistencyBands(stats.lower[keep], stats.upper[keep], stats.count[keep], stats.mean_value[keep],
                            stats.mean_target[keep], band_low, band_high, (low_q, high_q), n_resamples, target)
