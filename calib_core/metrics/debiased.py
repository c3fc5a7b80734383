"""Bias-reduced binned calibration errors: the debiased l2 ECE and the monotone sweep ECE.

The plug-in ECE overestimates a well-calibrated model's error: each bin's
``|mean confidence - accuracy|`` absorbs the sampling noise of the accuracy
(Gruber & Buettner 2022, appendix D.5; Futami & Fujisawa 2024, Theorem 2).
Two remedies from the literature:

* :func:`debiased_ece` - Kumar, Liang & Ma (2019): in the squared (l2) error,
  subtract each bin's estimated variance of the accuracy, which makes every
  bin's term unbiased for its squared gap.
* :func:`ece_sweep` - Roelofs, Cain, Shlens & Mozer (2022): use the largest
  number of bins for which the bin accuracies still increase monotonically
  with confidence, so the bin count adapts to the data.

References
----------
.. [Kumar2019] Kumar, A., Liang, P. & Ma, T. "Verified Uncertainty Calibration",
   NeurIPS 2019, section 5 (the debiased estimator of the squared calibration error).
.. [Roelofs2022] Roelofs, R., Cain, N., Shlens, J. & Mozer, M. C. "Mitigating Bias
   in Calibration Error Estimation", AISTATS 2022, section 5 (ECE_sweep).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.metrics.binned import top_label
from calib_core.binning import bin_statistics, sort_values, sorted_bin_sums
from calib_core.validation import (CalibrationInputError, check_binning, check_choice, check_flag, check_n_bins,
                                   check_probs_labels, check_right, MAX_N_BINS, repeated_probs_labels)

__all__ = ["SweepResult", "debiased_ece", "debiased_squared_terms", "ece_sweep", "ece_sweep_details"]


def debiased_squared_terms(count: NDArray[np.float64], sum_value: NDArray[np.float64],
                           sum_target: NDArray[np.float64], n_total: float | NDArray[np.float64]
                           ) -> NDArray[np.float64]:
    """Kumar et al.'s debiased squared calibration error from per-bin sums (last axis = bins).

    ``sum_b (n_b / n) [(conf_b - acc_b)^2 - acc_b (1 - acc_b) / (n_b - 1)]``;
    bins with fewer than 2 values contribute 0. Works on stacked sums of
    several data sets (any leading axes), which :mod:`calib_core.lab.estimators` uses.
    """
    safe = np.maximum(count, 1.0)
    conf = sum_value / safe
    acc = sum_target / safe
    term = (conf - acc) ** 2 - acc * (1.0 - acc) / np.maximum(count - 1.0, 1.0)
    term = np.where(count >= 2, term, 0.0)
    total = np.asarray(n_total, dtype=np.float64)
    return (count * term).sum(axis=-1) / np.where(total > 0, total, 1.0)


def debiased_ece(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "adaptive", *,
                 squared: bool = False, right: bool = True,
                 sample_weight: ArrayLike | None = None) -> float:
    """Debiased top-label l2 calibration error (Kumar et al. 2019).

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins : int, default 15
        In ``1..MAX_N_BINS`` (10,000).
    binning : {"adaptive", "uniform"}, default "adaptive"
        Kumar et al. use equal-mass bins (their ``get_equal_bins``: the same
        grouping as :mod:`calib_core.binning`'s adaptive bins).
    squared : bool, default False
        Return the debiased estimate of the *squared* error (unbiased per
        bin, may be negative) instead of ``sqrt(max(estimate, 0))``.
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False); no effect on
        adaptive bins.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (its bias correction counts
        rows per bin; ``docs/weights.md``). Other weights raise
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
    With bin b holding :math:`n_b` of the N top-label predictions, mean
    confidence :math:`\\bar s_b` and accuracy :math:`\\bar y_b`:

    .. math:: \\widehat{\\mathrm{CE}}^2 = \\sum_b \\frac{n_b}{N}
              \\left[(\\bar s_b - \\bar y_b)^2 - \\frac{\\bar y_b (1 - \\bar y_b)}{n_b - 1}\\right],

    since :math:`E(\\bar y_b - a_b)^2 = a_b(1 - a_b)/n_b` and
    :math:`E[\\bar y_b(1 - \\bar y_b)] = a_b (1 - a_b)(n_b - 1)/n_b` for the
    bin's true accuracy :math:`a_b`. Bins with fewer than two predictions
    contribute 0 (as in the authors' code). The result estimates the binned
    l2 error, ``ece(..., norm="l2")`` in the large-sample limit, which for
    many bins approaches the top-label :math:`\\mathrm{TCE}_2`. With the
    default adaptive bins it equals ``calibration.lower_bound_scaling_ce(probs,
    labels, p=2, debias=True, num_bins=n_bins, mode="top-label")`` of the
    authors' package (``docs/peers.md``).

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> round(debiased_ece(p, [0, 1, 1, 1], n_bins=1, squared=True), 6)  # 0^2 - 0.75 * 0.25 / 3
    -0.0625
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`debiased_ece`")
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    squared = check_flag(squared, "squared")
    right = check_right(right)
    confidence, correct = top_label(probs, labels)
    stats = bin_statistics(confidence, correct, n_bins, binning, right=right)
    value = float(debiased_squared_terms(stats.count, stats.sum_value, stats.sum_target, stats.n_total))
    return value if squared else float(np.sqrt(max(value, 0.0)))


@dataclass(frozen=True)
class SweepResult:
    """Outcome of the monotone bin sweep.

    Attributes
    ----------
    value : float
        The ECE at the chosen bin count.
    n_bins : int
        The chosen bin count b*.
    stopped_by : str
        ``"monotonicity"`` (b* + 1 bins break it), ``"finest"`` (every
        distinct confidence has its own bin) or ``"max_bins"``.
    """

    value: float
    n_bins: int
    stopped_by: str


def ece_sweep_details(probs: ArrayLike, labels: ArrayLike, *, binning: str = "adaptive", norm: str = "l1",
                      max_bins: int | None = None, right: bool = True) -> SweepResult:
    """:func:`ece_sweep` with the chosen bin count and the reason the sweep stopped."""
    probs, labels = check_probs_labels(probs, labels)
    binning = check_binning(binning)
    norm = check_choice(norm, "norm", ("l1", "l2"))
    right = check_right(right)
    n = probs.shape[0]
    if max_bins is None:
        max_bins = min(n, MAX_N_BINS)
    else:
        if isinstance(max_bins, bool) or not isinstance(max_bins, numbers.Integral) or max_bins < 1:
            raise CalibrationInputError(f"`max_bins` must be a whole number >= 1 or None, got {max_bins!r}.")
        max_bins = check_n_bins(max_bins, name="max_bins")  # the upper bound
    confidence, correct = top_label(probs, labels)
    swept = sort_values(confidence, correct)  # sorted once; every bin count is then O(B)
    n_distinct = swept.group_ends.shape[0]

    chosen = sorted_bin_sums(swept, 1, binning, right=right)
    best, stopped_by = 1, "max_bins"
    for b in range(2, int(max_bins) + 1):
        if chosen[0].shape[0] >= n_distinct:
            stopped_by = "finest"
            break
        candidate = sorted_bin_sums(swept, b, binning, right=right)
        accuracy = candidate[2] / candidate[0]
        if np.any(np.diff(accuracy) < 0):
            stopped_by = "monotonicity"
            break
        chosen, best = candidate, b
    count, sum_conf, sum_correct = chosen
    gap = np.abs(sum_conf - sum_correct) / count
    if norm == "l1":
        value = float(np.sum(count * gap) / n)
    else:
        value = float(np.sqrt(np.sum(count * gap**2) / n))
    return SweepResult(value, best, stopped_by)


def ece_sweep(probs: ArrayLike, labels: ArrayLike, *, binning: str = "adaptive", norm: str = "l1",
              max_bins: int | None = None, right: bool = True,
              sample_weight: ArrayLike | None = None) -> float:
    """Monotone-sweep ECE (Roelofs et al. 2022): the most bins that keep accuracy monotone.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    binning : {"adaptive", "uniform"}, default "adaptive"
        Equal-mass ("EM sweep") or equal-width ("EW sweep") bins.
    norm : {"l1", "l2"}, default "l1"
    max_bins : int, optional
        Largest bin count tried, in ``1..MAX_N_BINS`` (10,000); ``None``
        means ``min(N, MAX_N_BINS)``.
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False), as in
        :func:`calib_core.ece`; no effect on adaptive bins.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (its bin count is chosen on
        the rows; ``docs/weights.md``). Other weights raise
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
    For b = 1, 2, ... the top-label confidences are binned (same conventions
    as :func:`calib_core.ece`: uniform bins closed as ``right`` says, ``array_split``
    equal-mass bins with ties sharing a bin, empty bins dropped) until the
    accuracies of the non-empty bins, in order of confidence, first fail to
    be non-decreasing; b* is the last monotone count and

    .. math:: \\mathrm{ECE}_{\\mathrm{sweep}} = \\Big(\\sum_{k=1}^{b^*} \\frac{|B_k|}{N}
              |\\bar f_k - \\bar y_k|^p\\Big)^{1/p}.

    The sweep also ends once every distinct confidence has its own bin. Each
    step reuses one sort and cumulative sums, so step b costs O(b) and the
    sweep O(b*^2); when the accuracy never stops being monotone (e.g. every
    prediction correct) b* reaches ``min(N, MAX_N_BINS)`` (``stopped_by ==
    "max_bins"``), which bounds the cost on large, (nearly) separable test
    sets; a smaller ``max_bins`` bounds it further.

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> ece_sweep(p, [0, 1, 1, 1]) == ece_sweep_details(p, [0, 1, 1, 1]).value
    True
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`ece_sweep`")
    return ece_sweep_details(probs, labels, binning=binning, norm=norm, max_bins=max_bins, right=right).value
