"""Proper scores and the Kolmogorov-Smirnov calibration error (no binning)."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.metrics.binned import top_label
from calib_core.validation import check_probs_labels, check_sample_weight

__all__ = ["brier_rows", "brier_score", "ks_error", "ks_of_top_label", "nll", "nll_rows"]

#: Probabilities are clipped at this value only inside the logarithm of :func:`nll`.
NLL_EPSILON = 1e-12


def _mean(values: NDArray[np.float64], sample_weight: ArrayLike | None) -> float:
    """The mean of per-row values, weighted by the checked ``sample_weight`` (repeating rows = weighting them)."""
    weights = check_sample_weight(sample_weight, values.shape[0])
    if weights is None:
        return float(values.mean())
    return float(np.dot(weights, values) / weights.sum())


def brier_score(probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Multi-class Brier score: mean over rows of ``sum_k (p_k - onehot_k)^2``.

    Ranges over [0, 2] (scikit-learn's multi-class ``brier_score_loss``
    convention; a binary problem given as ``(N, 2)`` is twice the binary
    score on P(class 1)).

    ``sample_weight`` (shape ``(N,)``, non-negative) makes it the weighted
    mean ``sum_i w_i b_i / sum_i w_i``: integer weights repeat rows.

    Notes
    -----
    Computed as ``sum_k p_k^2 - 2 p_y + 1`` per row (Brier 1950; Gruber &
    Buettner 2022, appendix C), without building a one-hot matrix.

    Examples
    --------
    >>> round(brier_score([[0.8, 0.2], [0.5, 0.5]], [0, 1]), 6)
    0.29
    """
    return _mean(brier_rows(probs, labels), sample_weight)


def brier_rows(probs: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    """Each row's Brier score ``sum_k p_k^2 - 2 p_y + 1``: :func:`brier_score` is their mean.

    Examples
    --------
    >>> brier_rows([[0.8, 0.2], [0.5, 0.5]], [0, 1]).round(6).tolist()
    [0.08, 0.5]
    """
    probs, labels = check_probs_labels(probs, labels)
    true_prob = probs[np.arange(probs.shape[0]), labels]
    return np.einsum("ij,ij->i", probs, probs) - 2.0 * true_prob + 1.0


def nll(probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Mean negative log-likelihood of the true class.

    ``-mean_i log(max(p_{i, y_i}, 1e-12))``: probabilities are clipped at
    ``NLL_EPSILON`` only inside the logarithm, so a confident mistake costs
    at most ``-log(1e-12) ~ 27.6`` instead of infinity. ``sample_weight``
    makes it the weighted mean (integer weights repeat rows).
    """
    return _mean(nll_rows(probs, labels), sample_weight)


def nll_rows(probs: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    """Each row's ``-log(max(p_y, NLL_EPSILON))``: :func:`nll` is their mean.

    Examples
    --------
    >>> nll_rows([[0.5, 0.5], [1.0, 0.0]], [0, 1]).round(4).tolist()
    [0.6931, 27.631]
    """
    probs, labels = check_probs_labels(probs, labels)
    true_prob = probs[np.arange(probs.shape[0]), labels]
    return -np.log(np.maximum(true_prob, NLL_EPSILON))


def ks_error(probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Top-label Kolmogorov-Smirnov calibration error (Gupta et al. 2021).

    Sort the rows by top-label confidence and compare the cumulative sums of
    confidence and of correctness:

    .. math:: \\mathrm{KS} = \\max_i \\frac{1}{N} \\left| \\sum_{j \\le i} c_{(j)} - \\sum_{j \\le i} a_{(j)} \\right|

    With ``sample_weight`` w the sums are :math:`\\sum_{j \\le i} w_{(j)} (c_{(j)} - a_{(j)})` and N becomes
    :math:`\\sum_j w_j`: the value of the rows repeated ``w`` times (the repeated copies tie, and ties are
    compared at the end of their group).

    Notes
    -----
    Gupta, K., Rahimi, A., Ajanthan, T., Mensink, T., Sminchisescu, C. &
    Hartley, R. "Calibration of Neural Networks using Splines", ICLR 2021,
    section 4; Gruber & Buettner 2022 list it as the lower end of their
    chain of calibration errors (eq. 6). Among tied confidences the
    cumulative sums are compared only at the end of the tie group, so the
    value does not depend on row order; without ties this is exactly the
    reference implementation (``np.cumsum`` over the sorted rows).
    """
    probs, labels = check_probs_labels(probs, labels)
    return ks_of_top_label(*top_label(probs, labels), sample_weight=check_sample_weight(sample_weight, labels.size))


def ks_of_top_label(confidence: NDArray[np.float64], correct: NDArray[np.float64], *,
                    sample_weight: NDArray[np.float64] | None = None) -> float:
    """:func:`ks_error` from the top-label confidences and correctness (what it computes after
    :func:`~calib_core.metrics.binned.top_label`; the bootstrap resamples these two arrays)."""
    order = np.argsort(confidence, kind="stable")
    sorted_confidence = confidence[order]
    group_end = np.append(sorted_confidence[1:] != sorted_confidence[:-1], True)
    if sample_weight is None:
        difference = np.cumsum(sorted_confidence - correct[order])
        return float(np.abs(difference[group_end]).max() / confidence.shape[0])
    difference = np.cumsum(sample_weight[order] * (sorted_confidence - correct[order]))
    return float(np.abs(difference[group_end]).max() / sample_weight.sum())
