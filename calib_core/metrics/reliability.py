"""Reliability-diagram data: one row per non-empty bin."""
from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import norm as normal

from calib_core.metrics.binned import top_label
from calib_core.binning import BinStats, bin_statistics
from calib_core.validation import (
    check_right,
    CalibrationInputError,
    check_binning,
    check_n_bins,
    check_probs_labels,
)

__all__ = ["RELIABILITY_COLUMNS", "reliability_frame", "reliability_table", "wilson_interval"]

RELIABILITY_COLUMNS = (
    "bin", "lower", "upper", "count", "weight", "mean_confidence",
    "observed_frequency", "gap", "ci_low", "ci_high",
)


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
                      right: bool = True) -> pd.DataFrame:
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
    probs, labels = check_probs_labels(probs, labels)
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
    return reliability_frame(bin_statistics(values, targets, n_bins, binning, right=right), alpha=alpha)


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
        "count": count[keep].astype(np.int64),
        "weight": count[keep] / float(np.asarray(stats.n_total)),
        "mean_confidence": stats.mean_value[keep],
        "observed_frequency": stats.mean_target[keep],
        "gap": stats.gap[keep],
        "ci_low": ci_low,
        "ci_high": ci_high,
    }, columns=list(RELIABILITY_COLUMNS))
