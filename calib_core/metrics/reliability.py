"""Reliability-diagram data: one row per non-empty bin, the ECE of the bins, and the per-class summary."""
from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import norm as normal

from calib_core.metrics.binned import ace, classwise_ece, tace, top_label
from calib_core.binning import BinStats, bin_statistics, binned_error
from calib_core.validation import (
    check_right,
    check_sample_weight,
    CalibrationInputError,
    check_binning,
    check_n_bins,
    check_probs_labels,
)

__all__ = ["PER_CLASS_COLUMNS", "RELIABILITY_COLUMNS", "per_class_table", "reliability_ece", "reliability_frame",
           "reliability_table", "wilson_interval"]

RELIABILITY_COLUMNS = (
    "bin", "lower", "upper", "count", "weight", "mean_confidence",
    "observed_frequency", "gap", "ci_low", "ci_high",
)

#: Columns of :func:`per_class_table`.
PER_CLASS_COLUMNS = ("class_index", "class", "support", "frequency", "mean_probability", "ace", "tace",
                     "classwise_ece")


def wilson_interval(successes: ArrayLike, trials: ArrayLike, alpha: float = 0.05):
    """Wilson score interval for binomial proportions (Wilson 1927).

    .. math:: \\frac{\\hat p + z^2/2n \\pm z\\sqrt{\\hat p(1-\\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    Returns
    -------
    low, high : ndarray
        NaN where ``trials == 0``.
    """
    successes = np.asarray(successes, dtype=np.float64)
    trials = np.asarray(trials, dtype=np.float64)
    z = normal.ppf(1.0 - alpha / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = successes / trials
        denominator = 1.0 + z * z / trials
        centre = (share + z * z / (2.0 * trials)) / denominator
        half = z * np.sqrt(share * (1.0 - share) / trials + z * z / (4.0 * trials * trials)) / denominator
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def reliability_table(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform",
                      target: str | int = "top_label", *, alpha: float = 0.05,
                      right: bool = True, sample_weight: ArrayLike | None = None) -> pd.DataFrame:
    """Per-bin reliability data for a reliability diagram.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins : int, default 15
        In ``1..MAX_N_BINS`` (10,000).
    binning : {"uniform", "adaptive"}
    target : "top_label" or int
        ``"top_label"`` bins the arg-max confidence against correctness; a
        class index k bins ``probs[:, k]`` against ``labels == k``.
    alpha : float, default 0.05
        The per-bin interval is the ``1 - alpha`` Wilson score interval of
        the observed frequency.
    right : bool, default True
        Uniform bins ``(lo, hi]`` with 0 in the first bin (True) or
        ``[lo, hi)`` with 1 in the last bin (False); no effect on adaptive
        bins. See :mod:`calib_core.binning`.
    sample_weight : array_like of shape (N,), optional
        Non-negative row weights: ``count`` is the summed weight of a bin
        (whole numbers stay integers), means are weighted, and the Wilson
        interval treats the summed weight as the number of trials -- so
        integer weights give exactly the table of the repeated rows; other
        weights are read as frequencies too (for importance weights that
        interval is not an effective-sample-size interval).

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin with columns ``bin`` (index among all
        bins), ``lower``, ``upper`` (bin bounds), ``count``, ``weight``
        (count / N), ``mean_confidence``, ``observed_frequency``, ``gap``
        (mean confidence minus observed frequency: positive means
        over-confident), ``ci_low``, ``ci_high``. ``sum(weight * |gap|)``
        is the (class-wise) ECE of that target.

    Examples
    --------
    With ``target=1`` on two-class input and uniform bins, ``observed_frequency``
    and ``mean_confidence`` are scikit-learn's ``calibration_curve(y, p,
    n_bins=n_bins)`` (``docs/peers.md``):

    >>> table = reliability_table([[0.8, 0.2], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1], n_bins=2, target=1)
    >>> table[["count", "mean_confidence", "observed_frequency"]].values.tolist()
    [[1.0, 0.2, 0.0], [2.0, 0.75, 1.0]]
    """
    return reliability_frame(_target_bins(probs, labels, n_bins, binning, target, right, sample_weight),
                             alpha=alpha)


def _target_bins(probs: ArrayLike, labels: ArrayLike, n_bins: object, binning: object, target: object,
                 right: object, sample_weight: ArrayLike | None = None) -> BinStats:
    """Checked inputs, then the per-bin sums of ``target``'s values (the bins of :func:`reliability_table`)."""
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    right = check_right(right)
    if isinstance(target, str) and target == "top_label":
        values, targets = top_label(probs, labels)
    elif isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < probs.shape[1]:
        values, targets = probs[:, target], (labels == target).astype(np.float64)
    else:
        raise CalibrationInputError(
            f"`target` must be 'top_label' or a class index in 0..{probs.shape[1] - 1}, got {target!r}."
        )
    return bin_statistics(values, targets, n_bins, binning, right=right, sample_weight=weights)


def reliability_ece(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform",
                    target: str | int = "top_label", *, right: bool = True,
                    sample_weight: ArrayLike | None = None) -> float:
    """The ECE of the bins of :func:`reliability_table`: the number a reliability diagram summarises.

    Parameters
    ----------
    probs, labels, n_bins, binning, target, right, sample_weight :
        As :func:`reliability_table`.

    Returns
    -------
    float
        :math:`\\sum_b (n_b / N) |\\mathrm{conf}(b) - \\mathrm{freq}(b)|` (Nixon et al. 2019,
        eq. 1): for ``"top_label"`` the ECE (:func:`calib_core.ece`), for class k
        its term of the class-wise ECE (``classwise_ece(..., per_class=True)[k]``).

    Examples
    --------
    >>> round(reliability_ece([[0.9, 0.1], [0.6, 0.4]], [0, 1], n_bins=10), 6)
    0.35
    """
    return float(binned_error(_target_bins(probs, labels, n_bins, binning, target, right, sample_weight), "l1"))


def per_class_table(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform", *,
                    class_names=None, sample_weight: ArrayLike | None = None) -> pd.DataFrame:
    """One row per class: support, mean probability, and the class's ACE, TACE and class-wise ECE term.

    ``sample_weight`` weighs rows as :func:`reliability_table` does (``support`` the summed weight).

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins : int, default 15
        Bins of every column (ACE and TACE always use adaptive ranges, Nixon
        et al. 2019, Figure 1 left).
    binning : {"uniform", "adaptive"}, default "uniform"
        Binning of the class-wise ECE.
    class_names : sequence of K str, optional
        Default: the class indices as text.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`PER_CLASS_COLUMNS`: ``support`` (rows of the class),
        ``frequency`` (support / N), ``mean_probability`` (mean of the class's
        column), ``ace``, ``tace``, ``classwise_ece`` (``per_class=True`` of
        each metric).

    Examples
    --------
    >>> per_class_table([[0.8, 0.2], [0.3, 0.7]], [0, 1], n_bins=2)["support"].tolist()
    [1, 1]
    """
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    n_classes = probs.shape[1]
    names = [str(k) for k in range(n_classes)] if class_names is None else list(class_names)
    if len(names) != n_classes:
        raise CalibrationInputError(f"`class_names` must have {n_classes} entries (one per class), got {len(names)}.")
    if weights is None:
        support, mean_probability = np.bincount(labels, minlength=n_classes), probs.mean(axis=0)
    else:  # the summed weight per class (an integer for whole weights: the repeated rows' support)
        support = np.bincount(labels, weights=weights, minlength=n_classes)
        support = support.astype(np.int64) if np.all(support == np.round(support)) else support
        mean_probability = weights @ probs / weights.sum()
    return pd.DataFrame({
        "class_index": np.arange(n_classes),
        "class": names,
        "support": support,
        "frequency": support / (labels.size if weights is None else weights.sum()),
        "mean_probability": mean_probability,
        "ace": ace(probs, labels, n_bins=n_bins, per_class=True, sample_weight=weights),
        "tace": tace(probs, labels, n_bins=n_bins, per_class=True, sample_weight=weights),
        "classwise_ece": classwise_ece(probs, labels, n_bins=n_bins, binning=binning, per_class=True,
                                       sample_weight=weights),
    }, columns=list(PER_CLASS_COLUMNS))


def reliability_frame(stats: BinStats, *, alpha: float = 0.05) -> pd.DataFrame:
    """The :func:`reliability_table` of per-bin sums of one set of values.

    Shared by the in-memory table and the streamed summaries
    (:class:`calib_core.engines.summary.CalibrationSummary`), which keep sums, not rows.

    Parameters
    ----------
    stats : BinStats
        One set's per-bin sums (1-D arrays).
    alpha : float, default 0.05

    Returns
    -------
    pandas.DataFrame
        Columns :data:`RELIABILITY_COLUMNS`, one row per non-empty bin.
    """
    count = np.asarray(stats.count, dtype=np.float64)
    keep = count > 0
    ci_low, ci_high = wilson_interval(np.asarray(stats.sum_target)[keep], count[keep], alpha)
    return pd.DataFrame({
        "bin": np.flatnonzero(keep),
        "lower": np.asarray(stats.lower, dtype=np.float64)[keep],
        "upper": np.asarray(stats.upper, dtype=np.float64)[keep],
        # weighted counts (sample_weight) that are not whole numbers stay floats
        "count": count[keep].astype(np.int64) if np.all(count == np.round(count)) else count[keep],
        "weight": count[keep] / float(np.asarray(stats.n_total)),
        "mean_confidence": stats.mean_value[keep],
        "observed_frequency": stats.mean_target[keep],
        "gap": stats.gap[keep],
        "ci_low": ci_low,
        "ci_high": ci_high,
    }, columns=list(RELIABILITY_COLUMNS))
