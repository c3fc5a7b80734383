"""Canonical calibration: expected miscalibration on the simplex, calibration lenses, consistency resampling.

A probabilistic classifier ``g`` is calibrated in the canonical sense when
:math:`P(Y \\in \\cdot \\mid g(X)) = g(X)`, i.e. the whole predicted
distribution is right, not only its largest entry. Vaicenavicius et al.
(2019) measure the departure from it by the expected miscalibration

.. math:: \\eta_d = E\\left[ d\\big(r(g(X)), g(X)\\big) \\right],
   \\qquad r(p) = P(Y \\in \\cdot \\mid g(X) = p),

estimated by partitioning the simplex (eq. 6, :func:`canonical_ce`), and
look at it through *calibration lenses* (their Example 2): the canonical
lens (the full vector), the max lens (top-label confidence against
correctness) and the marginal lens of one class. Because the estimator is
biased, and differently so for different models (their Example 5), they
compare it with its distribution under the hypothesis of perfect calibration,
obtained by *consistency resampling*: labels drawn from the predictions
themselves (:func:`consistency_resampling`, :func:`consistency_bands`,
:func:`lens_estimates`).

References
----------
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schon, T. B. "Evaluating model calibration in classification",
   AISTATS 2019. Eq. (6) (binned estimator), Example 2 (lenses), appendix A.1
   (Examples 3 and 5), appendix B (data-dependent binning), appendix C
   (consistency resampling bands, Figures 8-15), appendix D (Tables 3-5).
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022. Definition 2,
   the canonical :math:`\\mathrm{CE}_p = (E\\|f(X) - P_{Y|f(X)}\\|_p^p)^{1/p}`.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core._accel import KeptValues, is_validated
from calib_core.metrics.simplex import (
    DISTANCES,
    CellTable,
    Partition,
    _check_partition,
    _make_partition,
    _table_from_assignment,
    squared_norm_sum,
)
from calib_core.validation import (CalibrationInputError, check_choice, check_probs_labels, repeated_probs_labels,
                                   row_argmax)

__all__ = [
    "LENSES",
    "CanonicalOptions",
    "LensView",
    "Seed",
    "apply_lens",
    "canonical_ce",
    "canonical_ce_table",
    "check_canonical_options",
    "lens_view",
    "partition_of",
]

#: Calibration lenses (Vaicenavicius et al. 2019, Example 2).
LENSES = ("canonical", "max", "marginal")

#: Entries of the (draws x rows) and (draws x cells x outcomes) arrays held at once.
_BLOCK_ELEMENTS = 4_000_000

#: Up to this many classes labels are drawn by comparisons with each CDF column;
#: beyond it by one binary search over all rows' CDFs.
_COMPARE_MAX_CLASSES = 32

#: Resampled values within this relative distance of the observed one count as ties.
_TIE_TOLERANCE = 1e-12

Seed = int | np.random.Generator | None


# ----------------------------------------------------------------------------
# Option checks
# ----------------------------------------------------------------------------

def _check_lens(lens: object, class_index: object, n_classes: int | None) -> tuple[str, int | None]:
    lens = check_choice(lens, "lens", LENSES)
    if lens != "marginal":
        if class_index is not None:
            raise CalibrationInputError(
                f"`class_index` is only used with lens='marginal', got class_index={class_index!r} with lens={lens!r}."
            )
        return lens, None
    if isinstance(class_index, bool) or not isinstance(class_index, numbers.Integral):
        raise CalibrationInputError(
            f"lens='marginal' needs `class_index`, a whole number naming the class, got {class_index!r}."
        )
    if class_index < 0 or (n_classes is not None and class_index >= n_classes):
        upper = "" if n_classes is None else f"..{n_classes - 1}"
        raise CalibrationInputError(
            f"`class_index` must lie in 0{upper} for {n_classes} classes, got {class_index}."
        )
    return lens, int(class_index)


# ----------------------------------------------------------------------------
# Lenses
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class LensView:
    """Predictions seen through a lens, and the map from labels to lens outcomes."""

    points: NDArray[np.float64]
    kind: str
    reference: NDArray[np.intp] | int | None  # predicted class (max) or the class (marginal)

    def outcomes(self, labels: NDArray[np.intp]) -> NDArray[np.intp]:
        """Outcome index in the lens for labels of shape (N,) or (draws, N)."""
        if self.kind == "canonical":
            return labels
        # Outcome 0 is "the predicted class" (max) or "class k" (marginal).
        return (labels != self.reference).astype(np.intp)


def apply_lens(probs: NDArray[np.float64], lens: str, class_index: int | None) -> LensView:
    """Checked ``probs`` seen through a checked lens (:func:`lens_view` on arrays already validated)."""
    if lens == "canonical":
        return LensView(probs, lens, None)
    if lens == "max":
        predicted = row_argmax(probs)
        value = probs[np.arange(probs.shape[0]), predicted]
        return LensView(np.column_stack([value, 1.0 - value]), lens, predicted)
    value = probs[:, class_index]
    return LensView(np.column_stack([value, 1.0 - value]), lens, class_index)


def lens_view(probs: ArrayLike, labels: ArrayLike, lens: str = "canonical", *,
              class_index: int | None = None) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Predictions and labels seen through a calibration lens.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    lens : {"canonical", "max", "marginal"}, default "canonical"
        ``canonical``: the predictions and labels as they are. ``max``: the
        two-class problem "is the predicted (arg-max, lowest index on ties)
        class right?", with predictions ``(max_k p_k, 1 - max_k p_k)``.
        ``marginal``: the two-class problem "is the label ``class_index``?",
        with predictions ``(p_k, 1 - p_k)``.
    class_index : int, optional
        The class of the marginal lens (required for it, refused otherwise).

    Returns
    -------
    points : ndarray of shape (N, m)
        m = K for the canonical lens, 2 otherwise.
    outcomes : ndarray of shape (N,)
        Outcome index in ``0..m-1``; for the two-class lenses 0 means "the
        predicted class is right" / "the label is ``class_index``".

    Notes
    -----
    A lens is a measurable map of the prediction and the label that
    induces its own calibration function (Vaicenavicius et al. 2019,
    Example 2); the max lens is what the top-label ECE of Guo et al. (2017)
    evaluates, which is why a model can pass it and fail the canonical lens
    (Example 3).

    Examples
    --------
    >>> pts, out = lens_view([[0.7, 0.2, 0.1]], [1], "max")
    >>> pts.round(2).tolist(), out.tolist()
    ([[0.7, 0.3]], [1])
    """
    probs, labels = check_probs_labels(probs, labels)
    lens, class_index = _check_lens(lens, class_index, probs.shape[1])
    view = apply_lens(probs, lens, class_index)
    return view.points, view.outcomes(labels)


# ----------------------------------------------------------------------------
# canonical_ce
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class CanonicalOptions:
    """The checked settings of :func:`canonical_ce` (:func:`check_canonical_options`)."""

    distance: str
    partition: str
    n_bins: int
    min_bin_size: int
    lens: str
    class_index: int | None


def check_canonical_options(distance: object, partition: object, n_bins: object, min_bin_size: object, lens: object,
                            class_index: object, n_classes: int | None) -> CanonicalOptions:
    """Check the settings of :func:`canonical_ce` once (``n_classes=None``: the class index is checked later)."""
    distance = check_choice(distance, "distance", DISTANCES)
    partition, n_bins, min_bin_size = _check_partition(partition, n_bins, min_bin_size)
    lens, class_index = _check_lens(lens, class_index, n_classes)
    return CanonicalOptions(distance, partition, n_bins, min_bin_size, lens, class_index)


#: The last few partitions of marked points (the frozen arrays of a loaded Predictions), with their points and
#: settings, newest first: an estimate, its cell occupancy and its consistency draws partition the same points
#: three times, and a page interleaves the model with its triangle view.
_PARTITIONS = KeptValues(capacity=4)


def partition_of(points: NDArray[np.float64], options: CanonicalOptions) -> Partition:
    """The partition of ``points`` with ``options``' settings, kept for the last few marked (frozen) arrays."""
    settings = (options.partition, options.n_bins, options.min_bin_size)
    kept = _PARTITIONS.get((points,), settings)
    if kept is not None:
        return kept
    partition = _make_partition(points, options.partition, options.n_bins, options.min_bin_size)
    if is_validated(points):  # frozen and marked: cannot change behind the memo's back
        _PARTITIONS.put((points,), settings, partition)
    return partition


def canonical_ce_table(probs: ArrayLike, labels: ArrayLike, distance: str = "tv", partition: str = "uniform",
                       n_bins: int = 10, min_bin_size: int = 1000, lens: str = "canonical", *,
                       class_index: int | None = None) -> CellTable:
    """Per-cell table behind :func:`canonical_ce` (same arguments).

    Returns
    -------
    CellTable
        Count, mean prediction, observed frequency and deviation of every
        non-empty cell of the lens's simplex; ``estimate`` equals
        :func:`canonical_ce` with the same arguments (above 32 classes up to
        the rounding of the row sums), and ``partition.cell_index`` gives
        each row's cell.

    Examples
    --------
    >>> table = canonical_ce_table([[0.6, 0.4], [0.6, 0.4]], [0, 0], n_bins=5)
    >>> table.count.tolist(), table.observed_frequency.tolist(), round(table.estimate, 6)
    ([2.0], [[1.0, 0.0]], 0.4)
    """
    view, outcomes, part, options = _prepared(probs, labels, distance, partition, n_bins, min_bin_size, lens,
                                              class_index)
    return _table_from_assignment(view.points, outcomes, part, options.distance)


def _prepared(probs, labels, distance, partition, n_bins, min_bin_size, lens, class_index):
    """Checked inputs seen through the lens, and their partition: ``(view, outcomes, partition, options)``."""
    probs, labels = check_probs_labels(probs, labels)
    options = check_canonical_options(distance, partition, n_bins, min_bin_size, lens, class_index, probs.shape[1])
    view = apply_lens(probs, options.lens, options.class_index)
    return view, view.outcomes(labels), partition_of(view.points, options), options


def canonical_ce(probs: ArrayLike, labels: ArrayLike, distance: str = "tv", partition: str = "uniform",
                 n_bins: int = 10, min_bin_size: int = 1000, lens: str = "canonical", *,
                 class_index: int | None = None,
                 sample_weight: ArrayLike | None = None) -> float:
    """Expected miscalibration over a partition of the simplex (Vaicenavicius et al. 2019).

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    distance : {"tv", "sq_euclidean", "euclidean"}, default "tv"
        Total variation :math:`\\tfrac12\\|r - g\\|_1`, squared Euclidean
        :math:`\\|r - g\\|_2^2`, or (an extra) Euclidean :math:`\\|r - g\\|_2`.
    partition : {"uniform", "data_dependent"}, default "uniform"
        ``uniform``: ``n_bins`` right-closed bins per coordinate of the lens's
        simplex (:func:`calib_core.uniform_partition`; on the 2-simplex the
        ``n_bins**2`` triangles). ``data_dependent``: split a cell at the mean
        of its highest-variance coordinate while it holds more than
        ``min_bin_size`` predictions (appendix B,
        :func:`calib_core.data_dependent_partition`).
    n_bins : int, default 10
        Bins per coordinate for ``partition="uniform"``.
    min_bin_size : int, default 1000
        Split threshold for ``partition="data_dependent"``.
    lens : {"canonical", "max", "marginal"}, default "canonical"
        The calibration lens (:func:`lens_view`): the whole distribution, the
        top-label problem, or one class's marginal (with ``class_index``).
    class_index : int, optional, keyword-only
        Class of the marginal lens.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (the cell counts, and so
        ``min_bin_size``, count repeated rows; ``docs/weights.md``). Other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels or options.

    Notes
    -----
    With cells :math:`\\Phi^{(i)}` holding :math:`n_i` of the N (lens-mapped)
    predictions, mean prediction :math:`\\hat g^{(i)}` and observed outcome
    frequencies :math:`\\hat r^{(i)}` (Vaicenavicius et al. 2019, eq. 6):

    .. math:: \\hat\\eta_d = \\sum_i \\frac{n_i}{N}\\, d\\big(\\hat r^{(i)}, \\hat g^{(i)}\\big).

    It estimates :math:`\\eta_d = E[d(r(g(X)), g(X))]`; for convex ``d`` its
    limit is a lower bound of :math:`\\eta_d` (their Theorem 2) and it is
    consistent as the cells shrink (Theorem 1). With ``sq_euclidean`` and the
    canonical lens it is the binned estimate of :math:`\\mathrm{CE}_2^2`, and
    with ``tv`` of :math:`\\tfrac12 \\mathrm{CE}_1`, the canonical
    calibration errors of Gruber & Buettner (2022, Definition 2). With the max
    lens, ``tv`` and uniform bins it equals the top-label ECE of
    :func:`calib_core.ece` with the same ``n_bins`` (the confidence bins are
    the cells); with the marginal lens of class k it equals that class's entry
    of ``classwise_ece(..., per_class=True)``.

    The uniform partition in K dimensions is the per-coordinate grid of
    ``UniformBinning`` in CalibrationErrors.jl: up to ``n_bins**(K-1)``
    cells, most of them empty for K = 10. Only non-empty cells count.

    Examples
    --------
    Example 5 of Vaicenavicius et al. (2019): one bin, one data point, a
    calibrated constant model has estimate 1/2, the perfect model 0.

    >>> canonical_ce([[0.5, 0.5]], [0], partition="data_dependent")
    0.5
    >>> canonical_ce([[1.0, 0.0]], [0], partition="data_dependent")
    0.0
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`canonical_ce`")
    view, outcomes, part, options = _prepared(probs, labels, distance, partition, n_bins, min_bin_size, lens,
                                              class_index)
    if view.points.shape[1] <= _DENSE_MAX_DIM or options.distance == "euclidean":
        return _table_from_assignment(view.points, outcomes, part, options.distance).estimate
    return _split_estimate(view.points, outcomes, part, options.distance)


#: Up to this many coordinates :func:`canonical_ce` reads its estimate off the dense per-cell table; beyond,
#: most cells hold one row, and their deviations have a closed form (:func:`_split_estimate`).
_DENSE_MAX_DIM = 32


def _split_estimate(points: NDArray[np.float64], outcomes: NDArray[np.intp], partition: Partition,
                    distance: str) -> float:
    """The estimate of :func:`_table_from_assignment` without a (cells x K) table for the cells of one row.

    A cell holding one prediction p with outcome y has the frequency vector
    e_y, so its deviation is ``1 - p_y`` (total variation, for p summing to 1)
    or ``|p|^2 - 2 p_y + 1`` (squared Euclidean); the other cells get the
    table. With 1,000 classes the table would be 400 MB at 50,000 rows.
    Equal to the table's estimate up to the rounding of the row sums.
    """
    cells = partition.cell_index
    n_rows = points.shape[0]
    alone = np.bincount(cells, minlength=partition.n_cells)[cells] == 1
    single = np.flatnonzero(alone)
    drawn = points[single, outcomes[single]]
    if distance == "tv":
        total = float(np.sum(1.0 - drawn))
    else:
        total = squared_norm_sum(points, single) - 2.0 * float(drawn.sum()) + single.size
    rest = np.flatnonzero(~alone)
    if rest.size:
        _, rest_cells = np.unique(cells[rest], return_inverse=True)
        rest_cells = rest_cells.ravel()
        rest_partition = Partition(partition.kind, rest_cells, int(rest_cells.max()) + 1, None)
        total += _table_from_assignment(points[rest], outcomes[rest], rest_partition, distance).estimate * rest.size
    return total / n_rows
