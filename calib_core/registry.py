"""One registry of every scalar metric, shared by the CLI, the app and the tests.

Each :class:`MetricSpec` says how to compute the metric from ``(probs,
labels)`` and the shared bin settings, and carries a short plain-language
note on what it measures and its pitfalls (Nixon et al. 2019, section 3).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import ArrayLike

from calib_core import binned, kernel, proper, scores, smooth
from calib_core.validation import CalibrationInputError, check_probs_labels

__all__ = ["MAX_QUADRATIC_ROWS", "METRICS", "MetricSpec", "compute_metrics", "get_metric", "metric_function",
           "skipped_quadratic"]


@dataclass(frozen=True)
class MetricSpec:
    """A scalar metric of ``(probs, labels)``.

    Attributes
    ----------
    key : str
        Identifier used in tables, JSON and the CLI.
    label : str
        Display name.
    compute : callable
        ``compute(probs, labels, n_bins, binning) -> float``.
    summary, pitfalls : str
        What it measures and how it misleads, in one or two sentences each.
    uses_bins, uses_binning : bool
        Whether the bin count / the binning scheme changes the value.
    quadratic : bool
        Cost grows as N^2 (the app then offers a subsample).
    calibration_error : bool
        False for accuracy and the proper scores (not calibration errors).
    signed : bool
        An unbiased estimate of a non-negative quantity that can itself be
        negative (SKCE); shown raw, never clipped.
    probability_scale : bool
        The value is a gap between probabilities, on ECE's [0, 1] scale
        (False for squared errors and divergences, which charts keep apart).
    """

    key: str
    label: str
    compute: Callable[[np.ndarray, np.ndarray, int, str], float]
    summary: str
    pitfalls: str
    uses_bins: bool = True
    uses_binning: bool = False
    quadratic: bool = False
    calibration_error: bool = True
    signed: bool = False
    probability_scale: bool = True


METRICS: list[MetricSpec] = [
    MetricSpec("accuracy", "Accuracy", lambda p, y, b, s: binned.accuracy(p, y),
               "Share of rows whose most probable class is the true class.",
               "Says nothing about calibration; shown for context.",
               uses_bins=False, calibration_error=False),
    MetricSpec("ece", "ECE", lambda p, y, b, s: binned.ece(p, y, n_bins=b, binning=s),
               "Top-label expected calibration error: count-weighted mean gap between confidence and accuracy per bin.",
               "Looks only at the top class; over- and under-confidence inside a bin cancel; value depends on the bins "
               "and is biased upwards for small N.", uses_binning=True),
    MetricSpec("rmsce", "RMSCE", lambda p, y, b, s: binned.ece(p, y, n_bins=b, binning=s, norm="l2"),
               "Root-mean-square calibration error: like ECE but squares the gaps, so large gaps weigh more.",
               "Same bin and top-label caveats as ECE.", uses_binning=True),
    MetricSpec("mce", "MCE", lambda p, y, b, s: binned.mce(p, y, n_bins=b, binning=s),
               "Maximum calibration error: the largest gap over non-empty bins (worst case).",
               "A bin with a handful of rows can set it; very noisy with many bins.", uses_binning=True),
    MetricSpec("classwise_ece", "Class-wise ECE", lambda p, y, b, s: binned.classwise_ece(p, y, n_bins=b, binning=s),
               "ECE of every class probability against that class's indicator, averaged over classes.",
               "Rare classes have few informative rows; with uniform bins most mass sits near 0.", uses_binning=True),
    MetricSpec("sce", "SCE", lambda p, y, b, s: binned.sce(p, y, n_bins=b),
               "Static calibration error: class-wise ECE with uniform bins (Nixon et al. eq. 2).",
               "Dominated by the many near-zero probabilities of a K-class model."),
    MetricSpec("ace", "ACE", lambda p, y, b, s: binned.ace(p, y, n_bins=b),
               "Adaptive calibration error: class-wise, with equal-mass ranges, unweighted mean over ranges.",
               "Equal-mass ranges of a rare class can be all near 0; see TACE."),
    MetricSpec("tace", "TACE", lambda p, y, b, s: binned.tace(p, y, n_bins=b),
               "Thresholded ACE: ACE over the probabilities above 0.01 only.",
               "The threshold is a choice; results move with it."),
    MetricSpec("ks", "KS error", lambda p, y, b, s: scores.ks_error(p, y),
               "Kolmogorov-Smirnov calibration error: largest gap between cumulative confidence and cumulative accuracy.",
               "Bin-free, but top-label only, and gaps of opposite sign at different confidences can offset.",
               uses_bins=False),
    MetricSpec("brier", "Brier score", lambda p, y, b, s: scores.brier_score(p, y),
               "Mean squared distance between the predicted distribution and the one-hot label (proper score, 0 to 2).",
               "Mixes calibration and sharpness (refinement): a lower score is not necessarily better calibrated.",
               uses_bins=False, calibration_error=False),
    MetricSpec("nll", "NLL", lambda p, y, b, s: scores.nll(p, y),
               "Mean negative log-likelihood of the true class (proper score).",
               "Unbounded: a few confident mistakes dominate it; mixes calibration and sharpness.",
               uses_bins=False, calibration_error=False),
    MetricSpec("mmce", "MMCE", lambda p, y, b, s: kernel.mmce(p, y),
               "Maximum mean calibration error (Kumar et al. 2018, eq. 2): a kernel distance between confidence "
               "and correctness over all pairs of rows (Laplacian kernel of width 0.4), without bins.",
               "Top-label only; a V-statistic, so biased upwards for small N; the value depends on the kernel "
               "width.", uses_bins=False),
    MetricSpec("skce", "SKCE (unbiased)", lambda p, y, b, s: kernel.skce(p, y),
               "Squared kernel calibration error (Widmann et al. 2019): unbiased U-statistic over all pairs of "
               "rows comparing the whole predicted distribution with the labels (Laplacian kernel, median-distance "
               "width).",
               "Squared, so on another scale than ECE; O(N^2) time; the unbiased estimate is negative for many "
               "calibrated samples (shown raw: clipping at 0 would bias it and its intervals).",
               uses_bins=False, quadratic=True, signed=True, probability_scale=False),
    MetricSpec("skce_block", "SKCE (linear-time)", lambda p, y, b, s: _skce_block(p, y),
               "Linear-time SKCE estimator of Widmann et al. (2019): the mean kernel term over disjoint pairs of "
               "rows, O(N) instead of O(N^2).",
               "Uses N/2 of the N(N-1)/2 pairs, so it is far noisier than the unbiased estimate; the pairs are "
               "drawn with a fixed seed after sorting the rows (the value does not depend on the row order); "
               "can be negative, like SKCE.", uses_bins=False, signed=True, probability_scale=False),
    MetricSpec("kde_ce_kl", "CE_KL (kernel)", lambda p, y, b, s: proper.kde_ce(p, y, "kl"),
               "Proper calibration error of the log score (Popordanoska et al. 2024, eq. 9): mean KL divergence "
               "between a leave-one-out Dirichlet-kernel estimate of P(Y | prediction) and the prediction, over "
               "the whole distribution.",
               "Kernel bandwidth fixed at 0.01 here (the Estimators page can choose it by leave-one-out "
               "likelihood); a small positive bias even for calibrated models; a class predicted with "
               "probability 0 that occurs nearby makes it very large; O(N^2) time.",
               uses_bins=False, quadratic=True, probability_scale=False),
    MetricSpec("kde_ce_l2", "CE_2^2 (kernel)", lambda p, y, b, s: proper.kde_ce(p, y, "l2"),
               "Squared canonical calibration error CE_2^2 (Popordanoska et al. 2024, eq. 9): mean squared "
               "distance between the leave-one-out Dirichlet-kernel estimate of P(Y | prediction) and the "
               "prediction.",
               "Squared, so on another scale than ECE; bandwidth fixed at 0.01 here; a small positive bias even "
               "for calibrated models; O(N^2) time.", uses_bins=False, quadratic=True, probability_scale=False),
    MetricSpec("smooth_ece", "smECE", lambda p, y, b, s: smooth.smooth_ece(p, y),
               "Smooth ECE (Blasiok & Nakkiran 2023): the residuals correctness - confidence smoothed with a "
               "reflected Gaussian kernel whose width is chosen automatically, integrated in absolute value; "
               "consistent, without bins.",
               "Top-label only; smoothing can hide narrow regions of miscalibration; the automatic width is "
               "coarse for small N.", uses_bins=False),
    MetricSpec("calibration_upper_bound", "sqrt(Brier) bound", lambda p, y, b, s: proper.calibration_upper_bound(p, y),
               "Root Brier score: an upper bound of the canonical calibration error CE_2 that needs no estimate "
               "of P(Y | prediction) (Gruber & Buettner 2022, Theorem 4.3).",
               "A bound, not an estimate: it also contains the refinement (sharpness) part, so it is loose unless "
               "the accuracy is close to 1.", uses_bins=False, calibration_error=False),
]


def _skce_block(probs: ArrayLike, labels: ArrayLike) -> float:
    """``skce(..., estimator="block")`` on the rows in an order that does not depend on the input order.

    The linear-time estimator pairs rows (0, 1), (2, 3), ...; sorting the rows
    (by label, then by the probabilities) and shuffling them with a fixed seed
    gives a random pairing that is the same for every order of the same rows.
    """
    probs, labels = check_probs_labels(probs, labels)
    order = np.lexsort((*probs.T[::-1], labels))
    order = order[np.random.default_rng(0).permutation(order.size)]
    return kernel.skce(probs[order], labels[order], estimator="block", seed=0)


def get_metric(key: str) -> MetricSpec:
    """The registered metric called ``key``."""
    for spec in METRICS:
        if spec.key == key:
            return spec
    known = ", ".join(spec.key for spec in METRICS)
    raise CalibrationInputError(f"unknown metric {key!r}; known metrics: {known}.")


def metric_function(key: str, *, n_bins: int = 15, binning: str = "uniform") -> Callable[[ArrayLike, ArrayLike], float]:
    """``metric(probs, labels) -> float`` with the bin settings fixed (for :func:`bootstrap_ci`)."""
    spec = get_metric(key)
    return partial(_call, spec.compute, n_bins=n_bins, binning=binning)


def _call(compute, probs, labels, *, n_bins, binning):
    return compute(probs, labels, n_bins, binning)


#: Above this many rows the O(N^2) metrics are left out of :func:`compute_metrics`
#: by default (about 10 s each here at 20,000 rows; the Estimators page subsamples).
MAX_QUADRATIC_ROWS = 20_000


def compute_metrics(probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                    keys: list[str] | None = None, include_quadratic: bool = True,
                    max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS) -> dict[str, float]:
    """Every registered metric (or those in ``keys``) as ``{key: value}``.

    The O(N^2) metrics are left out when ``include_quadratic`` is false or
    when N exceeds ``max_quadratic_rows`` (``None``: no limit); use
    :func:`skipped_quadratic` to say which were left out.
    """
    probs, labels = check_probs_labels(probs, labels)
    specs = METRICS if keys is None else [get_metric(k) for k in keys]
    skipped = set(skipped_quadratic(probs.shape[0], include_quadratic=include_quadratic,
                                    max_quadratic_rows=max_quadratic_rows))
    return {spec.key: float(spec.compute(probs, labels, n_bins, binning))
            for spec in specs if spec.key not in skipped}


def skipped_quadratic(n_rows: int, *, include_quadratic: bool = True,
                      max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS) -> list[str]:
    """Keys of the O(N^2) metrics :func:`compute_metrics` leaves out for ``n_rows`` rows."""
    too_many = max_quadratic_rows is not None and n_rows > max_quadratic_rows
    return [spec.key for spec in METRICS if spec.quadratic and (too_many or not include_quadratic)]
