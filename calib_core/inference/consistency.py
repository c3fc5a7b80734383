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

import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core.binning import bin_index, bin_statistics
from calib_core.metrics.simplex import (Partition, cell_sums, data_dependent_partition, simplex_distance,
                                       uniform_partition)
from calib_core.metrics.canonical import (CanonicalOptions, Seed, apply_lens, canonical_ce, check_canonical_options,
                                          partition_of)
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_count,
    check_n_bins,
    check_probs,
    check_probs_labels,
    check_sample_weight,
    row_argmax,
)
from calib_core.inference.draws import _BLOCK_ELEMENTS, _LabelSampler, _draw_blocks, _resampled_estimates
from calib_core.inference.skce_estimators import _checked_draws
from calib_core.inference.verdicts import DEFAULT_ALPHA, CellOccupancy, Verdict, cell_occupancy, check_alpha, read_test

__all__ = [
    "CanonicalCE",
    "ConsistencyBands",
    "ConsistencyResult",
    "consistency_bands",
    "consistency_resampling",
    "sample_labels",
]

#: Resampled values within this relative distance of the observed one count as ties.
_TIE_TOLERANCE = 1e-12


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


# ----------------------------------------------------------------------------
# Cell occupancy: does a partition leave the test any power?
# ----------------------------------------------------------------------------

#: Above this many coordinates the advice of a sparse partition names the two-class lenses without trying
#: other partitions.
_ADVICE_MAX_DIM = 32

#: Minimum cell sizes tried when advising a data-dependent partition.
_ADVICE_MIN_SIZES = (20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)


def _check_quantiles(quantiles: object) -> tuple[float, float]:
    """The ``quantiles`` of a consistency band, checked: ``(low, high)`` with 0 <= low < high <= 1."""
    try:
        low, high = (float(q) for q in quantiles)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise CalibrationInputError(f"`quantiles` must be two numbers (low, high), got {quantiles!r}.") from None
    if not 0.0 <= low < high <= 1.0:
        raise CalibrationInputError(f"`quantiles` must satisfy 0 <= low < high <= 1, got {quantiles!r}.")
    return low, high


def _occupancy(points: NDArray[np.float64], partition: Partition, options: CanonicalOptions) -> CellOccupancy:
    """Occupancy of ``partition``; when it is sparse, with settings of the same estimator that are not."""
    counts = np.bincount(partition.cell_index, minlength=partition.n_cells)
    found = cell_occupancy(counts)
    if not found.sparse:
        return found
    return cell_occupancy(counts, _power_advice(points, options))


def _sparse(partition: Partition) -> bool:
    return cell_occupancy(np.bincount(partition.cell_index, minlength=partition.n_cells)).sparse


def _power_advice(points: NDArray[np.float64], options: CanonicalOptions) -> str:
    """Settings that leave at most half of the rows in cells of fewer than 5 rows (a readable list)."""
    n_rows, dim = points.shape
    advice = []
    if dim > _ADVICE_MAX_DIM:
        # Each partition tried costs N x K per split level (30 s for one data-dependent partition at
        # 50,000 x 1,000); with this many coordinates the two-class lenses are the settings with power.
        advice.append("the max lens, whose cells are confidence bins (lens='max')")
        advice.append("the marginal lens of one class (lens='marginal')")
        return ", ".join(advice[:-1]) + " or " + advice[-1]
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
        check_canonical_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                self.class_index, None)

    def __call__(self, probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """:func:`canonical_ce`; with ``sample_weight`` (any weights >= 0) the weighted estimate
        (:meth:`weighted_draw_evaluator`), which for whole-number weights is ``canonical_ce`` of the repeated rows."""
        if sample_weight is None:
            return canonical_ce(probs, labels, self.distance, self.partition, self.n_bins, self.min_bin_size,
                                self.lens, class_index=self.class_index)
        probs, labels = check_probs_labels(probs, labels)
        return float(self.weighted_draw_evaluator(probs, sample_weight)(labels[None, :])[0])

    def weighted_draw_evaluator(self, probs: ArrayLike,
                                sample_weight: ArrayLike) -> Callable[[ArrayLike], NDArray[np.float64]]:
        """:meth:`draw_evaluator` of the weighted estimate: each cell counts its rows' summed weight.

        Parameters
        ----------
        probs : array_like of shape (N, K)
        sample_weight : array_like of shape (N,)
            Row weights (frequencies, ``docs/weights.md``).

        Returns
        -------
        callable
            ``evaluate(label_draws)`` with ``label_draws`` of shape (B, N), returning the B weighted estimates

            .. math:: \\hat\\eta_d = \\sum_i \\frac{W_i}{W}\\, d\\big(\\hat r^{(i)}, \\hat g^{(i)}\\big)

            (Vaicenavicius et al. 2019, eq. 6, with the cell's summed weight :math:`W_i` for its count and
            weighted means for :math:`\\hat r^{(i)}, \\hat g^{(i)}`, as :func:`calib_core.simplex_reliability`
            weighs its cells). Whole-number weights give the estimate of the rows repeated that many times
            (the data-dependent partition counts the summed weight against ``min_bin_size``).
        """
        probs = check_probs(probs)
        n_rows, n_classes = probs.shape
        weights = check_sample_weight(sample_weight, n_rows)
        if weights is None:
            raise CalibrationInputError("`sample_weight` of `weighted_draw_evaluator` is required.")
        options = check_canonical_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                          self.class_index, n_classes)
        view = apply_lens(probs, options.lens, options.class_index)
        positive = weights > 0
        points, kept_weights = view.points[positive], weights[positive]
        part = (uniform_partition(points, options.n_bins) if options.partition == "uniform"
                else data_dependent_partition(points, options.min_bin_size, sample_weight=kept_weights))
        cells, n_cells, dim = part.cell_index, part.n_cells, points.shape[1]
        count, mean_prediction, _ = cell_sums(points, np.zeros(points.shape[0], dtype=np.intp), part, kept_weights)
        safe = np.where(count > 0, count, 1.0)
        share = count / float(kept_weights.sum())
        chunk = max(1, _BLOCK_ELEMENTS // max(n_cells * dim, 1))

        def evaluate(label_draws: ArrayLike) -> NDArray[np.float64]:
            draws = _checked_draws(label_draws, n_rows, n_classes)
            outcomes = view.outcomes(draws)[:, positive]
            out = np.empty(draws.shape[0])
            for start in range(0, draws.shape[0], chunk):
                block = outcomes[start:start + chunk]
                size = block.shape[0]
                slot = (np.arange(size)[:, None] * n_cells + cells[None, :]) * dim + block
                hits = np.bincount(slot.ravel(), weights=np.tile(kept_weights, size),
                                   minlength=size * n_cells * dim).reshape(size, n_cells, dim)
                deviation = simplex_distance(hits / safe[None, :, None], mean_prediction[None], options.distance)
                out[start:start + size] = deviation @ share
            return out

        return evaluate

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
        options = check_canonical_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                          self.class_index, n_classes)
        view = apply_lens(probs, options.lens, options.class_index)
        part = partition_of(view.points, options)

        def evaluate(label_draws: ArrayLike) -> NDArray[np.float64]:
            draws = _checked_draws(label_draws, n_rows, n_classes)
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
        options = check_canonical_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                          self.class_index, n_classes)
        if options.lens == "canonical":
            return None
        view = apply_lens(probs, options.lens, options.class_index)
        part = partition_of(view.points, options)
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
        options = check_canonical_options(self.distance, self.partition, self.n_bins, self.min_bin_size, self.lens,
                                          self.class_index, probs.shape[1])
        view = apply_lens(probs, options.lens, options.class_index)
        return _occupancy(view.points, partition_of(view.points, options), options)


# ----------------------------------------------------------------------------
# Consistency resampling
# ----------------------------------------------------------------------------

@compact_display
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
                           on_progress: Callable[[int, int], None] | None = None,
                           sample_weight: ArrayLike | None = None) -> ConsistencyResult:
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
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies, ``docs/weights.md``). The labels are drawn
        from each row's prediction as without weights, and the statistic of
        the data and of each draw is the weighted one: ``estimator`` is
        called as ``estimator(probs, labels, sample_weight=w)`` (a
        :class:`CanonicalCE` weighs its cells by summed weight, and draws go
        through its ``weighted_draw_evaluator(probs, w)``). Rows of weight 0
        are dropped first. Whole-number weights: ``observed`` equals the
        estimate of the rows repeated that many times, but the null does
        not: a repeated row draws one label per copy, a weighted row one
        label for all its weight, so the band differs, typically wider (the draws
        of a row's copies are not shared) and the p-value is that of
        "labels drawn once per row, each row counted by its weight".

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
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is not None:
        return _weighted_consistency(probs, labels, estimator, weights, n_resamples, seed, (low_q, high_q), alpha,
                                     on_progress)
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
    known_seed = int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None
    for start, draws in _draw_blocks(probs, n_resamples, rng, probs.shape[0], reference, known_seed):
        stop = start + draws.shape[0]
        if batched is not None:
            values[start:stop] = batched(draws)
        else:
            for offset, draw in enumerate(draws):
                values[start + offset] = estimator(probs, draw)
        if on_progress is not None:
            on_progress(stop, n_resamples)
    return _consistency_result(observed, values, (low_q, high_q), alpha, occupancy)


def _takes_weights(estimator: Callable) -> bool:
    """Whether ``estimator`` can be called with ``sample_weight=``."""
    try:
        parameters = inspect.signature(estimator).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.name == "sample_weight" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _weighted_consistency(probs: NDArray[np.float64], labels: NDArray[np.intp], estimator: Callable,
                          weights: NDArray[np.float64], n_resamples: int, seed: Seed,
                          quantiles: tuple[float, float], alpha: float,
                          on_progress: Callable[[int, int], None] | None) -> ConsistencyResult:
    """:func:`consistency_resampling` with row weights: labels drawn per row, weighted statistics."""
    if not _takes_weights(estimator):
        raise CalibrationInputError(f"`sample_weight` needs an estimator that takes sample_weight= (as "
                                    f"CanonicalCE or calib_core.ece do); {estimator!r:.80} does not.")
    positive = weights > 0
    probs, labels, weights = probs[positive], labels[positive], weights[positive]
    rng = np.random.default_rng(seed)
    observed = float(estimator(probs, labels, sample_weight=weights))
    occupancy_of = getattr(estimator, "cell_occupancy", None)
    occupancy = occupancy_of(probs) if callable(occupancy_of) else None
    make_batched = getattr(estimator, "weighted_draw_evaluator", None)
    batched = make_batched(probs, weights) if callable(make_batched) else None
    values = np.empty(n_resamples)
    for start, draws in _draw_blocks(probs, n_resamples, rng, probs.shape[0]):
        stop = start + draws.shape[0]
        if batched is not None:
            values[start:stop] = batched(draws)
        else:
            for offset, draw in enumerate(draws):
                values[start + offset] = estimator(probs, draw, sample_weight=weights)
        if on_progress is not None:
            on_progress(stop, n_resamples)
    return _consistency_result(observed, values, quantiles, alpha, occupancy)


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
