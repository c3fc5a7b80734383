"""One registry of every scalar metric, shared by the CLI, the app and the tests.

Each :class:`MetricSpec` says how to compute the metric from ``(probs,
labels)`` and the shared bin settings, which kernel bandwidth it uses by
default, how its interval is made, and carries a short plain-language note
on what it measures and its pitfalls (Nixon et al. 2019, section 3).

Every number shown under a metric's name comes from here:

* :func:`metric_value` -- the value, at the registry's default settings or
  at a bandwidth the caller chose;
* :func:`metric_name` -- the name with its settings ("CE_KL (kernel),
  h = 0.01"), so that one name always means one computation;
* :func:`calib_core.inference.intervals.metric_interval` -- the interval the
  metric declares (:attr:`MetricSpec.interval`);
* :func:`calib_core.metrics.reports.metric_report` -- every metric, with a
  reason for each one that cannot be computed on valid input, and the size
  limits that leave some out;
* :func:`metric_function` -- the metric with its settings fixed, as a
  :class:`DeclaredMetric` whose resampling the bootstrap reads
  (:attr:`MetricSpec.resampling`, :mod:`calib_core.metrics.resampling`).

The clinical summaries' fits live in :mod:`calib_core.metrics.clinical` and
the bounds of the true values in :mod:`calib_core.metrics.bounds` (both
re-exported here).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core._accel import remembered
from calib_core.metrics import binned, decomposition, kde, kernel, scores, smooth
from calib_core.metrics.bounds import BOUNDS, CALIBRATED_BIAS, Bound
from calib_core.metrics.clinical import cox_compute, cox_mean_std_error, cox_variance, ici_compute
from calib_core.metrics.confidence_entries import CONFIDENCE_METRICS, CONFIDENCE_RANKING_METRICS, SELECTIVE_METRICS
from calib_core.metrics.resampling import Resampling
from calib_core.metrics.spec import INTERVAL_METHODS, MetricSpec
from calib_core.validation import (CalibrationInputError, check_binning, check_n_bins, check_positive,
                                   check_probs_labels, check_sample_weight, correct_rows, repeat_rows)

__all__ = ["BOUNDS", "Bound", "CALIBRATED_BIAS", "DeclaredMetric", "INTERVAL_METHODS", "KDE_BANDWIDTH", "METRICS",
           "MMCE_BANDWIDTH", "MetricSpec", "SKCE_MEDIAN_ROWS", "cox_mean_std_error", "declared_metric", "get_metric",
           "metric_function", "metric_name", "metric_value", "resolve_metrics", "skce_bandwidth", "skce_pair_order", "WEIGHTED",
           "LOESS_MAX_BOOT", "CLASSWISE_BOOT_CELLS", "CLASSWISE_MIN_BOOT"]

#: Default width of MMCE's Laplacian kernel on the confidences (Kumar et al. 2018 use 0.4).
MMCE_BANDWIDTH = 0.4
#: Default bandwidth of the Dirichlet kernel of CE_KL and CE_2^2 (``kde_ce``'s own default).
KDE_BANDWIDTH = 0.01
#: The SKCE bandwidth is the median pairwise distance of at most this many rows (all pairs below it).
SKCE_MEDIAN_ROWS = kernel.MEDIAN_MAX_ROWS

#: Bootstrap resamples of the ICI are capped at this many: each resample is one loess fit per class (40-120 ms
#: on a 900-row, 10-class demo here), so 200 resamples of ICI, E50 and E90 added 10-25 s to the Metrics page of
#: one such model. 30 resamples (a standard error within about 13 %) add 1-3 s; E50 and E90 get no interval.
LOESS_MAX_BOOT = 30

#: Bootstrap resamples of a class-wise metric with adaptive bins (ACE, TACE, class-wise ECE adaptive) are capped
#: so that rows x classes x resamples stays within this many cells: each resample re-bins every class column
#: (about 1.3 ns per cell here), so 200 resamples at 50,000 x 1,000 took 31 s per metric; the cap gives 40
#: resamples there (a standard error within about 11 %) and no cap below 10,000,000 rows x classes.
CLASSWISE_BOOT_CELLS = 2_000_000_000
#: The cap never goes below this many resamples.
CLASSWISE_MIN_BOOT = 30

# ----------------------------------------------------------------------------- kernel defaults

def skce_pair_order(probs: ArrayLike, labels: ArrayLike) -> NDArray[np.intp]:
    """A row order that depends on the rows only, not on their order in the file.

    The rows are sorted (by label, then by the probabilities) and shuffled
    with a fixed seed. The linear-time SKCE pairs rows ``(0, 1), (2, 3), ...``
    of this order -- a random pairing that is the same for every order of the
    same rows -- and the median heuristic draws its subset from it.
    """
    probs, labels = check_probs_labels(probs, labels)
    return _lexicographic_order(probs, labels)[np.random.default_rng(0).permutation(labels.size)]


def _lexicographic_order(probs: NDArray[np.float64], labels: NDArray[np.intp]) -> NDArray[np.intp]:
    """``np.lexsort((*probs.T[::-1], labels))``: by label, then the first column, ..., ties kept in row order.

    One sort by (label, first column); only the runs of rows that tie on both
    are sorted again by every column (one lexsort over those rows), so 1,000
    classes cost two sorts, not 1,001 (4 s at 50,000 x 1,000). Same order.
    """
    order = np.lexsort((probs[:, 0], labels))
    if probs.shape[1] == 1 or order.size < 2:
        return order
    first, label = probs[order, 0], labels[order]
    tied = (first[1:] == first[:-1]) & (label[1:] == label[:-1])
    if not tied.any():
        return order
    # Positions in a run of ties, and each run's number (its first position).
    in_run = np.zeros(order.size, dtype=bool)
    in_run[1:] |= tied
    in_run[:-1] |= tied
    positions = np.flatnonzero(in_run)
    run = np.maximum.accumulate(np.where(np.concatenate([[True], ~tied])[positions], positions, 0))
    rows = order[positions]  # in row order within each run (the first sort is stable)
    again = np.lexsort((*probs[rows, 1:].T[::-1], run))
    order[positions] = rows[again]
    return order


@remembered
def skce_bandwidth(probs: ArrayLike, labels: ArrayLike) -> float:
    """The default SKCE bandwidth: :func:`calib_core.metrics.kernel.median_heuristic` of the rows.

    All pairs up to :data:`SKCE_MEDIAN_ROWS` rows (then it equals the
    bandwidth ``skce(..., bandwidth=None)`` uses), else the pairs of that many
    rows of :func:`skce_pair_order` (seed 0), so the value does not depend on
    the row order; above 10 classes fewer rows
    (:func:`calib_core.metrics.kernel.median_rows`: 500 at 1,000 classes). A zero median falls back to the median distance between
    distinct predictions, and constant predictions (where the kernel is 1
    for every bandwidth) to 1.0.
    """
    probs, labels = check_probs_labels(probs, labels)
    if probs.shape[0] < 2:
        raise CalibrationInputError(f"`skce` needs at least 2 rows, `probs` has {probs.shape[0]}.")
    rows = min(SKCE_MEDIAN_ROWS, kernel.median_rows(probs.shape[1]))
    return kernel.median_heuristic(probs[skce_pair_order(probs, labels)], max_rows=rows, seed=0)


def _check_bandwidth(bandwidth: float | None) -> float | None:
    return None if bandwidth is None else check_positive(bandwidth, "bandwidth")


def _mmce(probs, labels, bandwidth=None):
    return kernel.mmce(probs, labels, bandwidth=MMCE_BANDWIDTH if bandwidth is None else bandwidth)


def _skce_unbiased(probs, labels, bandwidth=None):
    bandwidth = skce_bandwidth(probs, labels) if bandwidth is None else _check_bandwidth(bandwidth)
    return kernel.skce(probs, labels, bandwidth=bandwidth)


def _skce_block(probs, labels, bandwidth=None):
    """``skce(..., estimator="block")`` on the pairs of :func:`skce_pair_order`."""
    probs, labels = check_probs_labels(probs, labels)
    bandwidth = skce_bandwidth(probs, labels) if bandwidth is None else _check_bandwidth(bandwidth)
    return float(np.mean(_ordered_pair_terms(probs, labels, bandwidth)))


def _ordered_pair_terms(probs, labels, bandwidth):
    """The block estimator's terms on the pairs of :func:`skce_pair_order` (checked inputs, no reordered copy)."""
    if probs.shape[0] < 2:
        raise CalibrationInputError(f"`skce` needs at least 2 rows, `probs` has {probs.shape[0]}.")
    order = skce_pair_order(probs, labels)
    half = order.shape[0] // 2
    return kernel.pair_terms(probs, labels, order[0:2 * half:2], order[1:2 * half:2], bandwidth)


def _kde(divergence):
    def value(probs, labels, bandwidth=None):
        return kde.kde_ce(probs, labels, divergence, KDE_BANDWIDTH if bandwidth is None else bandwidth)
    return value


def _smooth_ece(probs, labels, bandwidth=None):
    return smooth.smooth_ece(probs, labels, bandwidth=bandwidth)


def _default(function):
    """``compute(probs, labels, n_bins, binning)`` of a kernel metric at its default bandwidth."""
    return lambda p, y, b, s: function(p, y)


def _skce_variance(estimator):
    """``variance(probs, labels, bandwidth)`` of an SKCE estimator: :func:`calib_core.metrics.kernel.skce_estimate`."""
    def variance(probs, labels, bandwidth=None):
        probs, labels = check_probs_labels(probs, labels)
        h = skce_bandwidth(probs, labels) if bandwidth is None else _check_bandwidth(bandwidth)
        if estimator == "block":
            found = kernel.block_estimate(_ordered_pair_terms(probs, labels, h), h)
        else:
            found = kernel.skce_estimate(probs, labels, bandwidth=h)
        if not np.isfinite(found.std_error):
            return found.estimate, math.nan, f"the variance needs more rows than {probs.shape[0]}"
        pairs = "independent pairs of rows" if estimator == "block" else "pairs (U-statistic variance)"
        return found.estimate, found.std_error, (f"normal interval from the variance formula over "
                                                 f"{found.n_terms:,} {pairs}")
    return variance


# ----------------------------------------------------------------------------- notes and declarations

_LOO_NO_INTERVAL = "a bootstrap repeats rows, which a leave-one-out kernel estimate cannot take"
_LOESS_NO_INTERVAL = ("a bootstrap refits the loess curve of every class on every resample, too slow for a "
                      "table; the ICI's interval describes the noise of the same curve")

#: What the scalar of a clinical summary (:mod:`calib_core.metrics.clinical`) is, in its label.
_OVR = "binary: class 1; K > 2: one-vs-rest mean"


def _binned(family: str, *, norm: str = "l1", threshold: float | None = None) -> Resampling:
    """A binned metric's declaration: per-bin sums of ``family`` reduced by ``norm`` (Nixon et al. 2019)."""
    return Resampling("binned", family=family, norm=norm, threshold=threshold)


#: TACE's threshold (:func:`calib_core.metrics.binned.tace`'s default).
_TACE_THRESHOLD = 0.01

METRICS: list[MetricSpec] = [
    MetricSpec("accuracy", "Accuracy", lambda p, y, b, s: binned.accuracy(p, y),
               "Share of rows whose most probable class is the true class.",
               "Says nothing about calibration; shown for context.",
               uses_bins=False, calibration_error=False, interval="percentile", ideal=None,
               resampling=Resampling("row_mean", per_row=correct_rows), public=binned.accuracy),
    MetricSpec("ece", "ECE", lambda p, y, b, s: binned.ece(p, y, n_bins=b, binning=s),
               "Top-label expected calibration error: count-weighted mean gap between confidence and accuracy per bin.",
               "Looks only at the top class; over- and under-confidence inside a bin cancel; value depends on the bins "
               "and is biased upwards for small N.", uses_binning=True, resampling=_binned("top_label"), public=binned.ece),
    MetricSpec("rmsce", "RMSCE", lambda p, y, b, s: binned.ece(p, y, n_bins=b, binning=s, norm="l2"),
               "Root-mean-square calibration error: like ECE but squares the gaps, so large gaps weigh more.",
               "Same bin and top-label caveats as ECE.", uses_binning=True, resampling=_binned("top_label", norm="l2")),
    MetricSpec("mce", "MCE", lambda p, y, b, s: binned.mce(p, y, n_bins=b, binning=s),
               "Maximum calibration error: the largest gap over non-empty bins (worst case).",
               "A bin with a handful of rows can set it; very noisy with many bins.", uses_binning=True,
               resampling=_binned("top_label", norm="max"), public=binned.mce),
    MetricSpec("classwise_ece", "Class-wise ECE", lambda p, y, b, s: binned.classwise_ece(p, y, n_bins=b, binning=s),
               "ECE of every class probability against that class's indicator, averaged over classes.",
               "Rare classes have few informative rows; with uniform bins most mass sits near 0.", uses_binning=True,
               resampling=_binned("classwise"), public=binned.classwise_ece),
    MetricSpec("sce", "SCE", lambda p, y, b, s: binned.sce(p, y, n_bins=b),
               "Static calibration error: class-wise ECE with uniform bins (Nixon et al. eq. 2).",
               "Dominated by the many near-zero probabilities of a K-class model.", fixed_binning="uniform",
               resampling=_binned("classwise"), public=binned.sce),
    MetricSpec("ace", "ACE", lambda p, y, b, s: binned.ace(p, y, n_bins=b),
               "Adaptive calibration error: class-wise, with equal-mass ranges, unweighted mean over ranges.",
               "Equal-mass ranges of a rare class can be all near 0; see TACE.", fixed_binning="adaptive",
               resampling=_binned("adaptive_mean"), public=binned.ace),
    MetricSpec("tace", "TACE", lambda p, y, b, s: binned.tace(p, y, n_bins=b, threshold=_TACE_THRESHOLD),
               "Thresholded ACE: ACE over the probabilities above 0.01 only.",
               "The threshold is a choice; results move with it.", fixed_binning="adaptive",
               resampling=_binned("adaptive_mean", threshold=_TACE_THRESHOLD), public=binned.tace),
    MetricSpec("ks", "KS error", lambda p, y, b, s: scores.ks_error(p, y),
               "Kolmogorov-Smirnov calibration error: largest gap between cumulative confidence and cumulative accuracy.",
               "Bin-free, but top-label only, and gaps of opposite sign at different confidences can offset.",
               uses_bins=False, resampling=Resampling("top_label", statistic=scores.ks_of_top_label, sorts=True),
               public=scores.ks_error),
    MetricSpec("brier", "Brier score", lambda p, y, b, s: scores.brier_score(p, y),
               "Mean squared distance between the predicted distribution and the one-hot label (proper score, 0 to 2).",
               "Mixes calibration and sharpness (refinement): a lower score is not necessarily better calibrated.",
               uses_bins=False, calibration_error=False, interval="percentile", ideal=None,
               resampling=Resampling("row_mean", per_row=scores.brier_rows), public=scores.brier_score),
    MetricSpec("nll", "NLL", lambda p, y, b, s: scores.nll(p, y),
               "Mean negative log-likelihood of the true class (proper score).",
               "Unbounded: a few confident mistakes dominate it; mixes calibration and sharpness.",
               uses_bins=False, calibration_error=False, interval="percentile", ideal=None,
               resampling=Resampling("row_mean", per_row=scores.nll_rows), public=scores.nll),
    MetricSpec("mmce", "MMCE", _default(_mmce),
               "Maximum mean calibration error (Kumar et al. 2018, eq. 2): a kernel distance between confidence "
               "and correctness over all pairs of rows (Laplacian kernel of width h), without bins.",
               "Top-label only; a V-statistic, so biased upwards for small N; the value depends on the kernel "
               "width.", uses_bins=False, bandwidth=MMCE_BANDWIDTH, with_bandwidth=_mmce,
               resampling=Resampling("top_label", statistic=kernel.mmce_of_top_label, sorts=True, takes_bandwidth=True,
                                     of_draws=kernel.mmce_of_draws),
               public=kernel.mmce),
    MetricSpec("skce", "SKCE (unbiased)", _default(_skce_unbiased),
               "Squared kernel calibration error (Widmann et al. 2019): unbiased U-statistic over all pairs of "
               "rows comparing the whole predicted distribution with the labels (Laplacian kernel, median-distance "
               "width).",
               "Squared, so on another scale than ECE; O(N^2) time; the unbiased estimate is negative for many "
               "calibrated samples (shown raw: clipping at 0 would bias it and its intervals); for a calibrated "
               "model the normal interval is only a rough guide (the statistic is degenerate there).",
               uses_bins=False, quadratic=True, signed=True, probability_scale=False, interval="variance",
               bandwidth="median", with_bandwidth=_skce_unbiased,
               resampling=Resampling("variance", variance=_skce_variance("unbiased"))),
    MetricSpec("skce_block", "SKCE (linear-time)", _default(_skce_block),
               "Linear-time SKCE estimator of Widmann et al. (2019): the mean kernel term over disjoint pairs of "
               "rows, O(N) instead of O(N^2).",
               "Uses N/2 of the N(N-1)/2 pairs, so it is far noisier than the unbiased estimate; the pairs are "
               "drawn with a fixed seed after sorting the rows (the value does not depend on the row order); "
               "can be negative, like SKCE.", uses_bins=False, signed=True, probability_scale=False,
               interval="variance", bandwidth="median", with_bandwidth=_skce_block,
               resampling=Resampling("variance", variance=_skce_variance("block"))),
    MetricSpec("kde_ce_kl", "CE_KL (kernel)", _default(_kde("kl")),
               "Proper calibration error of the log score (Popordanoska et al. 2024, eq. 9): mean KL divergence "
               "between a leave-one-out Dirichlet-kernel estimate of P(Y | prediction) and the prediction, over "
               "the whole distribution.",
               "The value depends on the kernel bandwidth h (the Estimators page can choose it by leave-one-out "
               "likelihood); a small positive bias even for calibrated models; a class predicted with "
               "probability 0 that occurs nearby makes it very large; with few rows or many classes it can exceed "
               "the NLL, which bounds the true CE_KL, and is then marked unreliable (see BOUNDS); O(N^2) time; no "
               "interval here (a bootstrap repeats rows, which a leave-one-out estimate cannot take: the "
               "Estimators page gives block intervals).", uses_bins=False, quadratic=True, probability_scale=False, interval="none",
               bandwidth=KDE_BANDWIDTH, with_bandwidth=_kde("kl"), no_interval=_LOO_NO_INTERVAL,
               resampling=Resampling("none")),
    MetricSpec("kde_ce_l2", "CE_2^2 (kernel)", _default(_kde("l2")),
               "Squared canonical calibration error CE_2^2 (Popordanoska et al. 2024, eq. 9): mean squared "
               "distance between the leave-one-out Dirichlet-kernel estimate of P(Y | prediction) and the "
               "prediction.",
               "Squared, so on another scale than ECE; depends on the bandwidth h; a positive bias even for "
               "calibrated models, large with few rows or many classes (an estimate within twice that bias, or "
               "above the Brier score, is marked unreliable); O(N^2) time; no interval here (see CE_KL).", uses_bins=False,
               quadratic=True, probability_scale=False, interval="none", bandwidth=KDE_BANDWIDTH,
               with_bandwidth=_kde("l2"), no_interval=_LOO_NO_INTERVAL, resampling=Resampling("none")),
    MetricSpec("smooth_ece", "smECE", _default(_smooth_ece),
               "Smooth ECE (Blasiok & Nakkiran 2023): the residuals correctness - confidence smoothed with a "
               "reflected Gaussian kernel whose width is chosen automatically, integrated in absolute value; "
               "consistent, without bins.",
               "Top-label only; smoothing can hide narrow regions of miscalibration; the automatic width is "
               "coarse for small N.", uses_bins=False, bandwidth="auto", with_bandwidth=_smooth_ece,
               resampling=Resampling("top_label", statistic=smooth.smooth_ece_of_top_label, takes_bandwidth=True),
               public=smooth.smooth_ece),
    MetricSpec("calibration_upper_bound", "sqrt(Brier) bound",
               lambda p, y, b, s: decomposition.calibration_upper_bound(p, y),
               "Root Brier score: an upper bound of the canonical calibration error CE_2 that needs no estimate "
               "of P(Y | prediction) (Gruber & Buettner 2022, Theorem 4.3).",
               "A bound, not an estimate: it also contains the refinement (sharpness) part, so it is loose unless "
               "the accuracy is close to 1.", uses_bins=False, calibration_error=False, interval="percentile",
               ideal=None, resampling=Resampling("row_mean", per_row=scores.brier_rows, of_mean=np.sqrt),
               public=decomposition.calibration_upper_bound),
    MetricSpec("cox_slope", f"Cox slope ({_OVR})", cox_compute("slope"),
               "Calibration slope b of the logistic regression logit P(y = 1) = a + b logit(p) (Cox 1958); "
               "ideal 1: below 1 the predictions are too extreme (over-fitting), above 1 too modest.",
               "Summarises the curve by one line on the logit scale, so curved miscalibration can hide; does not "
               "exist when the predictions separate the outcome (a threshold puts every row of the class on one "
               "side), then shown as not available; for K > 2 the mean of the one-vs-rest slopes, and not "
               "available if any class's fit is not.", uses_bins=False, calibration_error=False, signed=True,
               probability_scale=False, interval="variance", ideal=1.0, always_defined=False,
               resampling=Resampling("variance", variance=cox_variance("slope")), per_class_fit=True),
    MetricSpec("cox_intercept", f"Cox intercept ({_OVR})", cox_compute("intercept"),
               "Intercept a of the same regression (Cox 1958), on the logit scale; ideal 0 together with slope 1.",
               "Depends on the slope fitted with it (read it with the slope, or use the calibration-in-the-large "
               "for the mean level); not available when the slope is not.", uses_bins=False,
               calibration_error=False, signed=True, probability_scale=False, interval="variance",
               always_defined=False, resampling=Resampling("variance", variance=cox_variance("intercept")), per_class_fit=True),
    MetricSpec("citl", f"Calibration-in-the-large ({_OVR})", cox_compute("citl"),
               "Intercept of the regression with the slope fixed at 1 (logit(p) as an offset), on the logit scale: "
               "ideal 0; above 0 the model predicts too low on average, below 0 too high.",
               "Only the mean level: a model with the right average and a wrong slope has a calibration-in-the-"
               "large of 0; not defined when the outcome is constant.", uses_bins=False, calibration_error=False,
               signed=True, probability_scale=False, interval="variance", always_defined=False,
               resampling=Resampling("variance", variance=cox_variance("citl")), per_class_fit=True),
    MetricSpec("ici", f"ICI ({_OVR})", ici_compute("ici"),
               "Integrated calibration index (Austin & Steyerberg 2019): mean over rows of |c(p) - p|, with c the "
               "loess calibration curve (span 0.75, local quadratic, as R's loess).",
               "Depends on the smoother's span; biased upwards on small N like the binned errors; for K > 2 the "
               "mean of the one-vs-rest ICIs (not a top-label error); the interval uses at most "
               f"{LOESS_MAX_BOOT} bootstrap resamples (one loess fit per class per resample).", uses_bins=False,
               slow=True, max_boot=LOESS_MAX_BOOT, per_class_fit=True, resampling=Resampling("rows")),
    MetricSpec("e50", f"E50 ({_OVR})", ici_compute("e50"),
               "Median over rows of |c(p) - p| for the loess calibration curve c (Austin & Steyerberg 2019).",
               "As the ICI; the median ignores the few rows where the curve is far off (see E90); no interval "
               "(see the ICI's).", uses_bins=False, slow=True, interval="none",
               no_interval=_LOESS_NO_INTERVAL, per_class_fit=True, resampling=Resampling("none")),
    MetricSpec("e90", f"E90 ({_OVR})", ici_compute("e90"),
               "90th percentile over rows of |c(p) - p| for the loess calibration curve c (Austin & Steyerberg "
               "2019).",
               "As the ICI; the smoothed curve is least certain at the extremes, where the largest gaps usually "
               "lie; no interval (see the ICI's).", uses_bins=False, slow=True, interval="none",
               no_interval=_LOESS_NO_INTERVAL, per_class_fit=True, resampling=Resampling("none")),
]


# ----------------------------------------------------------------------------- issue 26's entries

METRICS += [*SELECTIVE_METRICS, *CONFIDENCE_METRICS]

# issue 26, systems compared: AUROC and the AURC family of a confidence model's stated confidence
METRICS += CONFIDENCE_RANKING_METRICS


# ----------------------------------------------------------------------------- sample weights

#: The metrics with a weighted formula of their own: ``weighted(probs, labels, n_bins, binning, bandwidth,
#: weights) -> float`` on checked inputs (``bandwidth`` None: the default). Weighted per-bin sums, weighted means
#: of per-row values, weighted cumulative sums (KS) and the weighted V-statistic (MMCE) are exactly the values of
#: the rows repeated ``weights`` times, and accept any non-negative weights. Every other metric -- those added
#: later included -- takes whole-number weights as repeated rows (:func:`metric_value`), which is the definition.
WEIGHTED: dict[str, Callable[..., float]] = {
    "accuracy": lambda p, y, b, s, h, w: binned.accuracy(p, y, sample_weight=w),
    "ece": lambda p, y, b, s, h, w: binned.ece(p, y, n_bins=b, binning=s, sample_weight=w),
    "rmsce": lambda p, y, b, s, h, w: binned.ece(p, y, n_bins=b, binning=s, norm="l2", sample_weight=w),
    "mce": lambda p, y, b, s, h, w: binned.mce(p, y, n_bins=b, binning=s, sample_weight=w),
    "classwise_ece": lambda p, y, b, s, h, w: binned.classwise_ece(p, y, n_bins=b, binning=s, sample_weight=w),
    "sce": lambda p, y, b, s, h, w: binned.sce(p, y, n_bins=b, sample_weight=w),
    "ace": lambda p, y, b, s, h, w: binned.ace(p, y, n_bins=b, sample_weight=w),
    "tace": lambda p, y, b, s, h, w: binned.tace(p, y, n_bins=b, threshold=_TACE_THRESHOLD, sample_weight=w),
    "ks": lambda p, y, b, s, h, w: scores.ks_error(p, y, sample_weight=w),
    "brier": lambda p, y, b, s, h, w: scores.brier_score(p, y, sample_weight=w),
    "nll": lambda p, y, b, s, h, w: scores.nll(p, y, sample_weight=w),
    "mmce": lambda p, y, b, s, h, w: kernel.mmce(p, y, bandwidth=MMCE_BANDWIDTH if h is None else h,
                                                 sample_weight=w),
    "calibration_upper_bound": lambda p, y, b, s, h, w: decomposition.calibration_upper_bound(p, y,
                                                                                             sample_weight=w),
}


def get_metric(key: str) -> MetricSpec:
    """The registered metric called ``key``."""
    for spec in METRICS:
        if spec.key == key:
            return spec
    known = ", ".join(spec.key for spec in METRICS)
    raise CalibrationInputError(f"unknown metric {key!r}; known metrics: {known}.")


# ----------------------------------------------------------------------------- values and names

def metric_value(key: str, probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                 bandwidth: float | None = None, sample_weight: ArrayLike | None = None) -> float:
    """The metric ``key`` at the registry's default settings, or at the kernel ``bandwidth`` given.

    Parameters
    ----------
    key : str
        A key of :data:`METRICS`.
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins, binning : bin settings of the binned metrics (ignored by the others).
    bandwidth : float, optional
        Kernel bandwidth of a kernel metric (``MetricSpec.bandwidth`` not None);
        None uses the default. Other metrics refuse a bandwidth.
    sample_weight : array_like of shape (N,), optional
        Non-negative row weights; integer weights give exactly the value of
        the rows repeated that many times. The metrics of :data:`WEIGHTED`
        take any weights; the others (joint functions of the rows: U-statistics
        with a data-driven bandwidth, leave-one-out kernel estimates, fitted
        smoothers and regressions) are computed on the repeated rows and
        refuse non-integer weights (``docs/weights.md``).

    Returns
    -------
    float

    Raises
    ------
    CalibrationInputError
        Invalid input or weights, or a metric that cannot be computed on it (e.g. SKCE on one row).

    Examples
    --------
    >>> import calib_core as cc
    >>> p, y = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [0, 1, 1]
    >>> metric_value("mmce", p, y) == cc.mmce(p, y, bandwidth=MMCE_BANDWIDTH)
    True
    """
    spec = get_metric(key)
    if bandwidth is not None and spec.with_bandwidth is None:
        raise CalibrationInputError(f"`bandwidth` applies to kernel metrics only; {spec.label} has no kernel.")
    if sample_weight is not None:
        probs, labels = check_probs_labels(probs, labels)
        weights = check_sample_weight(sample_weight, labels.size)
        if key in WEIGHTED:
            h = None if bandwidth is None else check_positive(bandwidth, "bandwidth")
            return float(WEIGHTED[key](probs, labels, n_bins, binning, h, weights))
        probs, labels = repeat_rows(weights, probs, labels, metric=spec.label)
    if bandwidth is None:
        return float(spec.compute(probs, labels, n_bins, binning))
    return float(spec.with_bandwidth(probs, labels, check_positive(bandwidth, "bandwidth")))


@dataclass(frozen=True)
class DeclaredMetric:
    """``metric(probs, labels) -> float``: a registered metric with its settings fixed, as plain values.

    What :func:`metric_function` returns. The bootstrap reads
    :attr:`resampling` (the registry entry's declaration) and the settings to
    take the metric's shortcut (:mod:`calib_core.inference.resample`); a call
    is :func:`metric_value` with these settings.

    Attributes
    ----------
    key : str
    n_bins : int
    binning : {"uniform", "adaptive"}
        The binning the metric uses (its :attr:`MetricSpec.fixed_binning` if it has one).
    bandwidth : float or None
        The kernel bandwidth asked for (None: the metric's default).
    """

    key: str
    n_bins: int = 15
    binning: str = "uniform"
    bandwidth: float | None = None

    @property
    def __name__(self) -> str:
        return self.key

    @property
    def spec(self) -> MetricSpec:
        return get_metric(self.key)

    @property
    def resampling(self) -> Resampling | None:
        return self.spec.resampling

    def __call__(self, probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
        return metric_value(self.key, probs, labels, n_bins=self.n_bins, binning=self.binning,
                            bandwidth=self.bandwidth, sample_weight=sample_weight)

    def top_label_statistic(self) -> Callable[[NDArray, NDArray], float]:
        """``statistic(confidence, correctness) -> float`` of a ``"top_label"`` declaration, with the bandwidth."""
        declared = self.resampling
        if not declared.takes_bandwidth:
            return declared.statistic
        default = self.spec.bandwidth if isinstance(self.spec.bandwidth, (int, float)) else None
        bandwidth = default if self.bandwidth is None else self.bandwidth
        return lambda confidence, correct: declared.statistic(confidence, correct, bandwidth=bandwidth)

    def top_label_draws(self) -> Callable[[NDArray, NDArray, NDArray], NDArray] | None:
        """``of_draws(confidence, correctness, indices) -> (R,)`` of a ``"top_label"`` declaration that has one
        (:attr:`Resampling.of_draws`), with the bandwidth; None otherwise."""
        declared = self.resampling
        if declared is None or declared.of_draws is None:
            return None
        if not declared.takes_bandwidth:
            return declared.of_draws
        default = self.spec.bandwidth if isinstance(self.spec.bandwidth, (int, float)) else None
        bandwidth = default if self.bandwidth is None else self.bandwidth
        return lambda confidence, correct, indices: declared.of_draws(confidence, correct, indices,
                                                                       bandwidth=bandwidth)


def metric_function(key: str, *, n_bins: int = 15, binning: str = "uniform",
                    bandwidth: float | None = None) -> DeclaredMetric:
    """``metric(probs, labels) -> float`` with the settings fixed (for :func:`bootstrap_ci`).

    The settings are checked here, once: the bin count and binning of a
    metric that uses them, the bandwidth of a kernel metric (other metrics
    refuse one).

    Examples
    --------
    >>> metric_function("ace", n_bins=10)
    DeclaredMetric(key='ace', n_bins=10, binning='adaptive', bandwidth=None)
    """
    spec = get_metric(key)
    if spec.uses_bins:
        n_bins = check_n_bins(n_bins)
        binning = spec.fixed_binning or check_binning(binning)
    if bandwidth is not None:
        if spec.with_bandwidth is None:
            raise CalibrationInputError(f"`bandwidth` applies to kernel metrics only; {spec.label} has no kernel.")
        bandwidth = check_positive(bandwidth, "bandwidth")
    return DeclaredMetric(key, n_bins, binning, bandwidth)


def declared_metric(metric: Callable) -> DeclaredMetric | None:
    """The declared form of ``metric``: itself if it is a :class:`DeclaredMetric`, else the registry entry whose
    :attr:`MetricSpec.public` function it is (``cc.ece`` -> ``metric_function("ece")``), or such a function with
    only its bin settings fixed by :func:`functools.partial` (``partial(cc.ece, n_bins=10)`` ->
    ``metric_function("ece", n_bins=10)``: the same number, so the same fast interval), else None."""
    if isinstance(metric, DeclaredMetric):
        return metric
    if isinstance(metric, functools.partial) and not metric.args and set(metric.keywords) <= {"n_bins", "binning"}:
        base = declared_metric(metric.func)
        if base is None or not get_metric(base.key).uses_bins:
            return None
        binning = metric.keywords.get("binning", base.binning)
        if get_metric(base.key).fixed_binning not in (None, binning):
            return None
        try:
            return metric_function(base.key, n_bins=metric.keywords.get("n_bins", base.n_bins), binning=binning)
        except CalibrationInputError:  # bad settings: the metric itself says so when it is called
            return None
    for spec in METRICS:
        if spec.public is metric:
            return DeclaredMetric(spec.key, binning=spec.fixed_binning or "uniform")
    return None


def resolve_metrics(metrics: str | Callable | Mapping[str, str | Callable] | Iterable[str | Callable], *,
                    n_bins: int = 15, binning: str = "uniform") -> dict[str, Callable[[ArrayLike, ArrayLike], float]]:
    """``{name: metric(probs, labels) -> float}`` for registry keys, callables or a mapping of them.

    Parameters
    ----------
    metrics : str, callable, mapping or iterable
        A registry key (:data:`METRICS`), a function ``metric(probs, labels)
        -> float``, a list of keys and functions (named by the key or the
        function's ``__name__``), or a mapping ``name -> key or function``.
    n_bins, binning : bin settings of the binned metrics given by key.

    Returns
    -------
    dict of str to callable
        In the order given; a key becomes :func:`metric_function` with the bin settings.

    Raises
    ------
    CalibrationInputError
        An unknown key, an entry that is neither a key nor a callable, or no metric at all.

    Examples
    --------
    >>> list(resolve_metrics(["ece", "nll"]))
    ['ece', 'nll']
    """
    n_bins, binning = check_n_bins(n_bins), check_binning(binning)
    if isinstance(metrics, str) or callable(metrics):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        items = [(str(name), metric) for name, metric in metrics.items()]
    elif isinstance(metrics, Iterable):
        items = []
        for metric in metrics:
            if isinstance(metric, str):
                items.append((metric, metric))
            elif callable(metric):
                items.append((getattr(metric, "__name__", repr(metric)), metric))
            else:
                raise CalibrationInputError(f"`metrics` must hold metric keys or callables, got {metric!r}.")
    else:
        raise CalibrationInputError(
            f"`metrics` must be a metric key, a callable, a list of them or a dict name -> key or callable, "
            f"got {metrics!r}.")
    functions: dict[str, Callable[[ArrayLike, ArrayLike], float]] = {}
    for name, metric in items:
        if isinstance(metric, str):
            functions[name] = metric_function(metric, n_bins=n_bins, binning=binning)
        elif callable(metric):
            functions[name] = metric
        else:
            raise CalibrationInputError(
                f"metric {name!r} must be a registry key or callable(probs, labels) -> float, got {metric!r}.")
    if not functions:
        raise CalibrationInputError("`metrics` is empty; choose at least one metric.")
    return functions


def _number(value: float) -> str:
    return f"{value:.3g}"


def metric_name(key: str, *, n_bins: int = 15, binning: str = "uniform", bandwidth: float | None = None,
                bandwidth_rule: str | None = None) -> str:
    """The metric's display name with the settings that change its value.

    One name is one computation: two tables that show the same name show the
    value of :func:`metric_value` with the same settings.

    Parameters
    ----------
    key : str
    n_bins, binning : the bin settings (binned metrics only).
    bandwidth : float, optional
        A kernel bandwidth other than the default (kernel metrics only).
    bandwidth_rule : str, optional
        How that bandwidth was chosen, added in parentheses (e.g.
        ``"leave-one-out"``).

    Examples
    --------
    >>> metric_name("ece", n_bins=10)
    'ECE, 10 uniform bins'
    >>> metric_name("kde_ce_kl")
    'CE_KL (kernel), h = 0.01'
    >>> metric_name("skce")
    'SKCE (unbiased), h = median distance'
    >>> metric_name("kde_ce_kl", bandwidth=0.000356, bandwidth_rule="leave-one-out")
    'CE_KL (kernel), h = 0.000356 (leave-one-out)'
    """
    spec = get_metric(key)
    if spec.uses_bins:
        return f"{spec.label}, {n_bins} {spec.fixed_binning or binning} bins"
    if spec.bandwidth is None:
        if bandwidth is not None:
            raise CalibrationInputError(f"`bandwidth` applies to kernel metrics only; {spec.label} has no kernel.")
        return spec.label
    if bandwidth is None:
        text = {"median": "median distance", "auto": "auto"}.get(spec.bandwidth) if isinstance(spec.bandwidth, str) \
            else _number(spec.bandwidth)
    else:
        text = _number(check_positive(bandwidth, "bandwidth"))
    if bandwidth_rule:
        text += f" ({bandwidth_rule})"
    return f"{spec.label}, h = {text}"


def metric_bandwidth(key: str, probs: ArrayLike, labels: ArrayLike) -> float:
    """The default bandwidth of a kernel metric on this data (NaN for metrics without one and for smECE's auto)."""
    spec = get_metric(key)
    if spec.bandwidth == "median":
        return skce_bandwidth(probs, labels)
    return float(spec.bandwidth) if isinstance(spec.bandwidth, (int, float)) else math.nan
