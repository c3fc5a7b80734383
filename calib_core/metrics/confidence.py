"""Calibration of a confidence model: a stated confidence per item and whether the item was right.

A *confidence model* (an LLM answering questions with a verbalised or
token-probability confidence, an LLM judge, a forecaster) gives, per item,
a confidence ``c_i`` in [0, 1] that its answer is right and the outcome
``y_i`` (1 right, 0 wrong). Its calibration is that of ``c`` against ``y``:
``P(y = 1 | c) = c``. Every function here takes those two arrays, checked by
:func:`calib_core.validation.check_confidence_correct`.

The same two arrays exist for a K-class model: its top-label confidence and
correctness (:attr:`calib_core.Predictions.confidence` and
:attr:`~calib_core.Predictions.correct`), so these functions apply to any
model. A confidence model's :class:`~calib_core.Predictions` stores them as
the binary matrix ``probs = [1 - c, c]`` with ``labels = y``
(:func:`confidence_probs`); :func:`pair_of` reads them back. The top label of
that matrix is *not* the stated confidence (it is ``max(c, 1 - c)``), which is
why the registry holds separate entries for confidence models
(``MetricSpec.kind == "confidence"``).

The headline ECE follows the LLM calibration papers (e.g. Tian et al. 2023,
Xiong et al. 2024): :data:`HEADLINE_BINS` = 10 equal-width bins ``(lo, hi]``
with 0 in the first (Guo et al.'s rule, the contract's uniform bins).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import isotonic_regression

from calib_core.binning import bin_statistics, binned_error
from calib_core.metrics.smooth import smooth_ece_of_top_label
from calib_core.validation import (CalibrationInputError, check_binning, check_choice, check_confidence_correct,
                                   check_n_bins, check_probs_labels, check_right)

__all__ = ["BrierDecomposition", "HEADLINE_BINS", "brier_decomposition", "confidence_brier", "confidence_ece",
           "confidence_nll", "confidence_probs", "confidence_smooth_ece", "decomposition_term", "nll_rows", "on_pair",
           "overconfidence", "pair_of", "pair_rows", "pav_calibrated"]

#: Bins of the headline ECE of a confidence model: 10 equal-width bins, as in the LLM calibration papers.
HEADLINE_BINS = 10

#: Probabilities are clipped at this distance from 0 and 1 inside the log only (as :func:`calib_core.nll`).
_LOG_FLOOR = 1e-12


def confidence_probs(confidence: ArrayLike) -> NDArray[np.float64]:
    """The ``(N, 2)`` matrix ``[1 - c, c]`` that stores a confidence model (labels: the correctness).

    Examples
    --------
    >>> confidence_probs([0.8, 0.3]).tolist()
    [[0.19999999999999996, 0.8], [0.7, 0.3]]
    """
    values, _ = check_confidence_correct(confidence, np.zeros(np.shape(confidence)))
    return np.column_stack([1.0 - values, values])


def pair_of(probs: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(confidence, correct)`` of a confidence model stored as ``probs = [1 - c, c]``, ``labels = correct``.

    Raises
    ------
    CalibrationInputError
        ``probs`` is not ``(N, 2)``: a K-class model's confidence is its
        top-label confidence (:attr:`calib_core.Predictions.confidence`),
        not column 1.
    """
    probs, labels = check_probs_labels(probs, labels)
    if probs.shape[1] != 2:
        raise CalibrationInputError(
            f"a confidence metric reads a confidence model stored as (N, 2) probabilities [1 - c, c] with labels "
            f"= correct, got {probs.shape[1]} classes; for a K-class model pass its top-label confidence and "
            "correctness (Predictions.confidence, Predictions.correct, or Predictions.as_confidence()).")
    return probs[:, 1], labels.astype(np.float64)


def confidence_ece(confidence: ArrayLike, correct: ArrayLike, n_bins: int = HEADLINE_BINS,
                   binning: str = "uniform", *, right: bool = True) -> float:
    """ECE of stated confidence against correctness.

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Stated confidence in [0, 1].
    correct : array_like of shape (N,)
        1 where the answer was right, 0 where wrong.
    n_bins : int, default 10
        :data:`HEADLINE_BINS`, the LLM papers' convention.
    binning : {"uniform", "adaptive"}, default "uniform"
        Equal-width or equal-mass bins (ties share a bin).
    right : bool, default True
        Uniform bins ``(lo, hi]`` with 0 in the first (True) or ``[lo, hi)``.

    Returns
    -------
    float

    Notes
    -----
    Guo et al. (2017), eq. 3 and Nixon et al. (2019), eq. 1, with the stated
    confidence in place of the top-label probability:
    ``ECE = sum_b (n_b / N) |mean(y in b) - mean(c in b)|``. Unlike the
    top-label ECE of the matrix ``[1 - c, c]``, a confidence below 0.5 stays
    where it is (it is not folded onto ``1 - c``).

    Examples
    --------
    >>> round(confidence_ece([0.9, 0.9, 0.3, 0.3], [1, 0, 0, 0]), 4)
    0.35
    """
    values, hits = check_confidence_correct(confidence, correct)
    stats = bin_statistics(values, hits, check_n_bins(n_bins), check_binning(binning), right=check_right(right))
    return float(binned_error(stats, "l1"))


def confidence_smooth_ece(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Smooth ECE (Blasiok & Nakkiran 2023) of stated confidence against correctness.

    :func:`calib_core.smooth_ece`'s estimator (relplot's ``smECE``, automatic
    bandwidth) on ``(c, y)`` instead of the top label.

    Examples
    --------
    >>> 0.0 <= confidence_smooth_ece([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0]) <= 1.0
    True
    """
    values, hits = check_confidence_correct(confidence, correct)
    return float(smooth_ece_of_top_label(values, hits))


def confidence_brier(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Brier score of the stated confidence: ``mean((c - y)^2)`` (Brier 1950), in [0, 1].

    Half the two-class Brier score of the matrix ``[1 - c, c]``.

    Examples
    --------
    >>> round(confidence_brier([0.9, 0.2], [1, 1]), 6)
    0.325
    """
    values, hits = check_confidence_correct(confidence, correct)
    return float(np.mean((values - hits) ** 2))


def confidence_nll(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Mean negative log-likelihood ``-mean(y log c + (1 - y) log(1 - c))`` of the outcomes.

    ``c`` is clipped to ``[1e-12, 1 - 1e-12]`` inside the log only (as :func:`calib_core.nll`).

    Examples
    --------
    >>> round(confidence_nll([0.5, 0.5], [1, 0]), 6)
    0.693147
    """
    values, hits = check_confidence_correct(confidence, correct)
    return float(np.mean(nll_rows(values, hits)))


def nll_rows(values: NDArray[np.float64], hits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-row negative log-likelihood of checked ``(confidence, correct)`` (the mean is :func:`confidence_nll`)."""
    clipped = np.clip(values, _LOG_FLOOR, 1.0 - _LOG_FLOOR)
    return -(hits * np.log(clipped) + (1.0 - hits) * np.log1p(-clipped))


def overconfidence(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Overconfidence gap: mean stated confidence minus accuracy.

    Positive: the system claims more than it delivers; negative: it is
    underconfident. Also called calibration-in-the-large or the signed
    "average calibration error" (a single-bin ECE with its sign).

    Examples
    --------
    >>> round(overconfidence([0.9, 0.8], [1, 0]), 6)
    0.35
    """
    values, hits = check_confidence_correct(confidence, correct)
    return float(values.mean() - hits.mean())


def pav_calibrated(confidence: ArrayLike, correct: ArrayLike) -> NDArray[np.float64]:
    """The CORP recalibrated confidences: the isotonic (PAV) regression of ``y`` on ``c``, ties pooled.

    Tied confidences are first pooled into one point (their mean outcome,
    weighted by their count), as the CORP approach prescribes (Dimitriadis,
    Gneiting & Jordan 2021, section 2.2), so tied items always get the same
    recalibrated value.

    Returns
    -------
    ndarray of shape (N,)
        The recalibrated value of each row.
    """
    values, hits = check_confidence_correct(confidence, correct)
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=hits, minlength=distinct.size) / counts
    fitted = isotonic_regression(means, weights=counts.astype(np.float64), increasing=True).x
    return np.asarray(fitted, dtype=np.float64)[inverse]


@dataclass(frozen=True)
class BrierDecomposition:
    """Brier score = reliability - resolution + uncertainty (+ ``within_bin`` for binned Murphy).

    Attributes
    ----------
    brier : float
        ``mean((c - y)^2)``.
    reliability : float
        Miscalibration (MCB); 0 when calibrated.
    resolution : float
        Discrimination (DSC); larger is better.
    uncertainty : float
        ``ybar (1 - ybar)``: the Brier score of always stating the base rate.
    within_bin : float
        ``brier - (reliability - resolution + uncertainty)``: for the binned
        decomposition, the within-bin variance and covariance terms of
        Stephenson et al. (2008), which vanish only when the confidences are
        constant within each bin; exactly 0 (up to rounding) for CORP.
    method : {"corp", "binned"}
    n_bins : int or None
        The number of equal-width bins of ``"binned"`` (None for CORP).
    """

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin: float
    method: str
    n_bins: int | None


def brier_decomposition(confidence: ArrayLike, correct: ArrayLike, *, method: str = "corp",
                        n_bins: int = HEADLINE_BINS) -> BrierDecomposition:
    """Murphy decomposition of the Brier score of stated confidence, binned or CORP (isotonic).

    Parameters
    ----------
    confidence, correct : array_like of shape (N,)
    method : {"corp", "binned"}, default "corp"
        ``"corp"``: Dimitriadis, Gneiting & Jordan (2021), eq. 4-5: with
        ``chat`` the PAV recalibration (:func:`pav_calibrated`), ``MCB =
        S(c) - S(chat)``, ``DSC = S(ybar) - S(chat)``, ``UNC = S(ybar)``, where
        ``S`` is the mean Brier score; ``S(c) = MCB - DSC + UNC`` exactly.
        ``"binned"``: Murphy (1973) over ``n_bins`` equal-width bins ``(lo,
        hi]``: ``REL = sum_b (n_b/N) (cbar_b - ybar_b)^2``, ``RES = sum_b
        (n_b/N) (ybar_b - ybar)^2``, ``UNC = ybar (1 - ybar)``; the rest is
        ``within_bin``.
    n_bins : int, default 10
        Bins of ``"binned"`` (ignored by CORP).

    Returns
    -------
    BrierDecomposition

    Examples
    --------
    >>> d = brier_decomposition([0.9, 0.9, 0.2, 0.6], [1, 0, 0, 1])
    >>> abs(d.reliability - d.resolution + d.uncertainty - d.brier) < 1e-12
    True
    """
    values, hits = check_confidence_correct(confidence, correct)
    method = check_choice(method, "method", ("corp", "binned"))
    brier = float(np.mean((values - hits) ** 2))
    base = float(hits.mean())
    uncertainty = base * (1.0 - base)
    if method == "corp":
        fitted = pav_calibrated(values, hits)
        recalibrated = float(np.mean((fitted - hits) ** 2))
        reliability, resolution, bins = brier - recalibrated, uncertainty - recalibrated, None
    else:
        bins = check_n_bins(n_bins)
        stats = bin_statistics(values, hits, bins, "uniform")
        count = stats.count
        safe = np.where(count > 0, count, 1.0)
        mean_value, mean_hit = stats.sum_value / safe, stats.sum_target / safe
        reliability = float(np.sum(count * (mean_value - mean_hit) ** 2) / values.size)
        resolution = float(np.sum(count * (mean_hit - base) ** 2) / values.size)
    return BrierDecomposition(brier, float(reliability), float(resolution), uncertainty,
                              brier - (reliability - resolution + uncertainty), method, bins)


# ----------------------------------------------------------------------------- the registry's adapters

def on_pair(function: Callable[..., float], **settings: object) -> Callable[..., float]:
    """``compute(probs, labels, n_bins, binning)`` of a registry entry: ``function(confidence, correct,
    **settings)`` on the pair a confidence model stores (:func:`pair_of`); the page's bins are ignored."""
    return lambda p, y, b, s: function(*pair_of(p, y), **settings)


def pair_rows(function: Callable[..., NDArray[np.float64]]) -> Callable[..., NDArray[np.float64]]:
    """``per_row(probs, labels)`` of a ``row_mean`` resampling from a per-row function of ``(confidence, correct)``."""
    return lambda p, y: function(*pair_of(p, y))


def decomposition_term(method: str, term: str) -> Callable[..., float]:
    """One term of :func:`brier_decomposition` (``method``, the attribute ``term``) as a function of the pair."""
    return lambda c, y: getattr(brier_decomposition(c, y, method=method), term)
