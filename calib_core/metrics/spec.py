"""What a registered metric declares: :class:`MetricSpec` (its computation, notes, defaults and interval).

The entries themselves are in :mod:`calib_core.metrics.registry` (and, for the
confidence models and the ranking metrics, :mod:`calib_core.metrics.confidence_entries`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from calib_core.metrics.resampling import Resampling

__all__ = ["INTERVAL_METHODS", "MetricSpec"]

#: How an interval can be made (:attr:`MetricSpec.interval`).
INTERVAL_METHODS = {
    "percentile": "percentile bootstrap",
    "bootstrap_se": "normal, bootstrap standard error",
    "variance": "normal, variance formula",
    "none": "none",
}


@dataclass(frozen=True)
class MetricSpec:
    """A scalar metric of ``(probs, labels)``.

    Attributes
    ----------
    key : str
        Identifier used in tables, JSON and the CLI.
    label : str
        Display name without settings (:func:`metric_name` adds them).
    compute : callable
        ``compute(probs, labels, n_bins, binning) -> float`` at the default settings.
    summary, pitfalls : str
        What it measures and how it misleads, in one or two sentences each.
    uses_bins, uses_binning : bool
        Whether the bin count / the binning scheme changes the value.
    quadratic : bool
        Cost grows as N^2 (the app then offers a subsample).
    slow : bool
        One evaluation fits a smoother per class (the loess summaries, tens
        of milliseconds on a few thousand rows): resampling studies leave it
        out by default.
    per_class_fit : bool
        One evaluation fits a model per class for K > 2 (one-vs-rest: the
        Cox regressions and the loess summaries): :func:`metric_report`
        leaves it out when rows x fits exceeds ``max_fit_cells``.
    calibration_error : bool
        False for accuracy and the proper scores (not calibration errors).
    signed : bool
        The value can be negative: an unbiased estimate of a non-negative
        quantity (SKCE), or a signed summary (Cox's slope, intercept and
        calibration-in-the-large); shown raw, never clipped.
    ideal : float or None
        The value of a perfectly calibrated model: 0 for the calibration
        errors, 1 for Cox's slope; None for quantities without one
        (accuracy, the proper scores). The invariant tests measure
        miscalibration as ``|value - ideal|``.
    always_defined : bool
        False when the estimate may not exist on valid input (Cox's
        maximum-likelihood fit under separation or a constant outcome):
        ``compute`` then raises :class:`CalibrationInputError` saying why,
        and :func:`metric_report` reports it as not available.
    probability_scale : bool
        The value is a gap between probabilities, on ECE's [0, 1] scale
        (False for squared errors and divergences, which charts keep apart).
    interval : {"percentile", "bootstrap_se", "variance", "none"}
        How :func:`metric_interval` makes its interval (see there).
    no_interval : str
        With ``interval="none"``: why there is none (shown in the note).
    max_boot : int or None
        Bootstrap resamples are capped at this many (costly metrics, e.g.
        :data:`LOESS_MAX_BOOT` for the loess summaries); None: no cap.
    resampling : Resampling
        How a bootstrap resamples the metric, with its settings
        (:mod:`calib_core.metrics.resampling`): binned per-bin sums, a mean of
        per-row values, a function of the top label, each materialised
        resample, a variance formula (``interval="variance"``), or none.
    kind : {"classes", "confidence"}
        The models it is for: a K-class matrix, or a confidence model stored as
        ``[1 - c, c]``, labels = correct (:mod:`calib_core.metrics.confidence`).
    public : callable or None
        The public function that is this metric at its default settings
        (``bootstrap_ci(cc.ece, ...)`` then resamples it as declared).
    bandwidth : float, "median", "auto" or None
        Default kernel bandwidth: a number; ``"median"`` for the median
        heuristic (:func:`skce_bandwidth`); ``"auto"`` for smECE's fixed
        point; None for metrics without a kernel.
    fixed_binning : {"uniform", "adaptive"} or None
        The binning of a binned metric whose binning cannot be chosen.
    with_bandwidth : callable or None
        ``with_bandwidth(probs, labels, bandwidth) -> float`` for kernel
        metrics, ``bandwidth=None`` meaning the default.
    """

    key: str
    label: str
    compute: Callable[[np.ndarray, np.ndarray, int, str], float]
    summary: str
    pitfalls: str
    uses_bins: bool = True
    uses_binning: bool = False
    quadratic: bool = False
    slow: bool = False
    per_class_fit: bool = False
    calibration_error: bool = True
    signed: bool = False
    probability_scale: bool = True
    interval: str = "bootstrap_se"
    bandwidth: float | str | None = None
    fixed_binning: str | None = None
    with_bandwidth: Callable[[np.ndarray, np.ndarray, float | None], float] | None = field(default=None, repr=False)
    ideal: float | None = 0.0
    always_defined: bool = True
    no_interval: str = ""
    max_boot: int | None = None
    resampling: Resampling | None = None
    public: Callable | None = field(default=None, repr=False)
    kind: str = "classes"

    @property
    def variance(self) -> Callable[[np.ndarray, np.ndarray, float | None], tuple[float, float, str]] | None:
        """The variance formula of ``interval="variance"`` (:attr:`Resampling.variance`)."""
        return None if self.resampling is None else self.resampling.variance
