"""Each metric's interval, made the way its registry entry declares (:attr:`MetricSpec.interval`).

The registry (:mod:`calib_core.metrics.registry`) says *which* interval a
metric has; this module makes it, with the bootstrap of
:mod:`calib_core.inference.bootstrap` or the metric's variance formula.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calib_core.display import compact_display
from calib_core.inference.bootstrap import resampled_interval
from calib_core.inference.resample import binned_spec
from calib_core.metrics.registry import (CLASSWISE_BOOT_CELLS, CLASSWISE_MIN_BOOT, DeclaredMetric, get_metric,
                                         metric_bandwidth, metric_value)
from calib_core.validation import (CalibrationInputError, check_binning, check_count, check_fraction, check_n_bins,
                                   check_positive, check_probs_labels, check_sample_weight, repeat_rows)

@compact_display
@dataclass(frozen=True)
class MetricInterval:
    """A metric's value and its interval, made as the metric declares.

    Attributes
    ----------
    key : str
    estimate : float
        :func:`metric_value` on all rows.
    low, high : float
        The interval; NaN when there is none (``method == "none"``).
    std : float
        Standard error (bootstrap or formula); NaN when there is none.
    method : str
        A key of :data:`INTERVAL_METHODS` (``"none"`` also when an interval
        could not be made; ``note`` says why).
    alpha : float
        The interval covers ``1 - alpha``.
    n_boot : int
        Resamples used (0 without a bootstrap).
    bandwidth : float
        Kernel bandwidth used (NaN where none or automatic).
    note : str
        How the interval was made, in words.
    """

    key: str
    estimate: float
    low: float
    high: float
    std: float
    method: str
    alpha: float
    n_boot: int
    bandwidth: float
    note: str


def interval_from_samples(method: str, estimate: float, samples: NDArray[np.float64], alpha: float, *,
                          signed: bool = False) -> tuple[float, float]:
    """The ``1 - alpha`` interval of ``estimate`` from its bootstrap ``samples``, made as ``method`` says.

    ``"percentile"``: the ``alpha / 2`` and ``1 - alpha / 2`` quantiles of the
    samples (Efron & Tibshirani 1993, section 13.3). ``"bootstrap_se"``:
    ``estimate +- z_{1-alpha/2} * sd(samples)`` (eq. 13.5), the low end cut at
    0 unless the quantity is ``signed``; it always holds the estimate, which a
    percentile interval of an upward-biased binned error can miss (see
    :func:`metric_interval`). The one rule of :func:`metric_interval` and of
    the recalibration comparison's before, after and change.
    """
    if method == "percentile":
        low, high = np.quantile(samples, [alpha / 2.0, 1.0 - alpha / 2.0])
        return float(low), float(high)
    if method != "bootstrap_se":
        raise CalibrationInputError(f"no interval from samples for method {method!r}.")
    half = float(stats.norm.ppf(1.0 - alpha / 2.0)) * float(np.std(samples, ddof=1))
    low = estimate - half
    return (low if signed else max(low, 0.0)), estimate + half


def boot_cap(metric, n_rows: int, n_classes: int, max_boot: int | None = None) -> int | float:
    """Most bootstrap resamples :func:`metric_interval` gives ``metric`` on an ``n_rows x n_classes`` input.

    ``max_boot`` (the registry's cap, e.g. :data:`LOESS_MAX_BOOT`), and for a
    class-wise metric with adaptive bins (:func:`binned_spec` family
    ``classwise`` or ``adaptive_mean`` with adaptive binning) at most
    ``CLASSWISE_BOOT_CELLS // (n_rows * n_classes)``, never below
    :data:`CLASSWISE_MIN_BOOT`. ``inf`` when nothing caps it.

    Examples
    --------
    >>> import calib_core as cc
    >>> boot_cap(cc.ace, 50_000, 1_000), boot_cap(cc.ace, 100_000, 10), boot_cap(cc.ece, 50_000, 1_000)
    (40, 2000, inf)
    """
    cap: int | float = math.inf if max_boot is None else int(max_boot)
    spec = binned_spec(metric)
    if spec is not None and spec.binning == "adaptive" and spec.family in ("classwise", "adaptive_mean"):
        cap = min(cap, max(CLASSWISE_MIN_BOOT, CLASSWISE_BOOT_CELLS // max(1, int(n_rows) * int(n_classes))))
    return cap


def metric_interval(key: str, probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                    bandwidth: float | None = None, n_boot: int = 1000, alpha: float = 0.05,
                    seed: int | np.random.Generator | None = 0, estimate: float | None = None,
                    sample_weight: ArrayLike | None = None) -> MetricInterval:
    """The metric ``key`` with the interval its :attr:`MetricSpec.interval` declares.

    Parameters
    ----------
    key : str
        A key of :data:`METRICS`.
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins, binning, bandwidth
        As :func:`metric_value`.
    n_boot : int, default 1000
        Resamples of the bootstrap methods; below 2 no bootstrap interval.
    alpha : float, default 0.05
    seed : int or numpy.random.Generator, default 0
        The same seed resamples the same rows for every metric.
    estimate : float, optional
        :func:`metric_value` with these settings on these rows, when the
        caller has it already (the Metrics page's table, from
        :func:`calib_core.metric_report`): then it is not computed again.
        Unused by a variance formula, which computes the estimate with its
        standard error.
    sample_weight : array_like of shape (N,), optional
        Row weights: the estimate is ``metric_value(..., sample_weight=)``; a
        bootstrap draws rows carrying their weights
        (:func:`calib_core.inference.bootstrap.bootstrap_ci`); a variance
        formula, which counts rows, is applied to the rows repeated
        ``sample_weight`` times (whole numbers only).

    Returns
    -------
    MetricInterval
        Every interval contains its estimate.

    Raises
    ------
    CalibrationInputError
        Invalid input, or a metric that cannot be computed on it.

    Notes
    -----
    * ``"percentile"`` (accuracy, Brier score, NLL, root Brier): smooth
      functions of row means, for which the percentile bootstrap
      ``[q_{alpha/2}, q_{1-alpha/2}]`` of the resampled values is valid
      (Efron & Tibshirani 1993, section 13.3).
    * ``"bootstrap_se"`` (binned errors, KS, MMCE, smECE, ICI): these estimators
      are biased upwards, and more so on a resample (repeated rows add
      noise that reads as miscalibration), so the resampled values can lie
      wholly above the estimate and a percentile interval can miss it. The
      interval is ``estimate +- z_{1-alpha/2} * se`` with the bootstrap
      standard error ``se`` (Efron & Tibshirani 1993, eq. 13.5), cut at 0
      where the metric cannot go. It describes the noise of the estimate,
      not its bias.
    * ``"variance"`` (SKCE): ``estimate +- z * se`` with the standard error
      of :func:`calib_core.metrics.kernel.skce_estimate`: ``sd(h) / sqrt(N // 2)``
      of the independent block terms of the linear-time estimator (Widmann
      et al. 2019, section 4; Gretton et al. 2012, Corollary 16), Hoeffding's
      variance of the U-statistic for the unbiased one. Cox's slope,
      intercept and calibration-in-the-large: binary, the Wald interval of
      :func:`calib_core.cox_calibration` (inverse Fisher information);
      K > 2, the sandwich error of the mean of the one-vs-rest estimates
      (:func:`cox_mean_std_error`).
    * A metric with :attr:`MetricSpec.max_boot` (the ICI: at most
      :data:`LOESS_MAX_BOOT`) uses at most that many resamples, and a
      class-wise metric with adaptive bins at most
      ``CLASSWISE_BOOT_CELLS / (N K)`` (:func:`boot_cap`); the note says so.
    * ``"none"`` (CE_KL, CE_2^2): a resample repeats rows, and a repeated row
      is its own nearest neighbour in the leave-one-out kernel estimate.
      E50, E90: each resample refits the loess curves (:data:`LOESS_MAX_BOOT`).

    Examples
    --------
    >>> import calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = cc.as_probs(rng.uniform(size=400)); y = (rng.uniform(size=400) < p[:, 1]).astype(int)
    >>> r = metric_interval("skce_block", p, y)
    >>> r.method, r.low <= r.estimate <= r.high
    ('variance', True)
    """
    spec = get_metric(key)
    probs, labels = check_probs_labels(probs, labels)
    check_fraction(alpha, "alpha")
    check_count(n_boot, "n_boot", 0)
    if bandwidth is not None:
        if spec.with_bandwidth is None:
            raise CalibrationInputError(f"`bandwidth` applies to kernel metrics only; {spec.label} has no kernel.")
        bandwidth = check_positive(bandwidth, "bandwidth")
    z = float(stats.norm.ppf(1.0 - alpha / 2.0))
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is not None and spec.interval == "variance":
        # a variance formula counts rows: it is applied to the repeated rows
        probs, labels = repeat_rows(weights, probs, labels, metric=spec.label)
        weights = None
    used_bandwidth = metric_bandwidth(key, probs, labels) if bandwidth is None else float(bandwidth)

    def result(estimate, low=math.nan, high=math.nan, std=math.nan, method="none", boots=0, note=""):
        return MetricInterval(key, float(estimate), float(low), float(high), float(std), method, float(alpha),
                              int(boots), used_bandwidth, note)

    if spec.interval == "variance":
        estimate, std_error, how = spec.variance(probs, labels, bandwidth)
        if not np.isfinite(std_error):
            return result(estimate, note=f"none: {how}")
        half = z * std_error
        return result(estimate, estimate - half, estimate + half, std_error, "variance", note=how)
    # The bin settings are checked once: by the metric itself while it computes the estimate, or here.
    if estimate is None:
        estimate = metric_value(key, probs, labels, n_bins=n_bins, binning=binning, bandwidth=bandwidth,
                                sample_weight=weights)
    elif spec.uses_bins:
        n_bins, binning = check_n_bins(n_bins), spec.fixed_binning or check_binning(binning)
    if spec.interval == "none":
        return result(estimate, note="none: " + (spec.no_interval or "not defined for this metric"))
    if n_boot < 2:
        return result(estimate, note="none: no bootstrap resamples")
    metric = (DeclaredMetric(key, int(n_bins), spec.fixed_binning or binning, bandwidth) if spec.uses_bins
              else DeclaredMetric(key, bandwidth=bandwidth))
    asked, n_boot = int(n_boot), min(int(n_boot), boot_cap(metric, *probs.shape, spec.max_boot))
    resamples = f"{n_boot:,} resamples" + (f", capped from {asked:,} for time" if n_boot < asked else "")
    try:
        boot = resampled_interval(metric, probs, labels, estimate, n_boot=n_boot, alpha=alpha, seed=seed,
                                  sample_weight=weights)
    except CalibrationInputError as exc:
        return result(estimate, note=f"none: a resample could not be evaluated ({' '.join(str(exc).split())})")
    low, high = interval_from_samples(spec.interval, estimate, boot.samples, alpha, signed=spec.signed)
    if spec.interval == "percentile":
        return result(estimate, low, high, boot.std, "percentile", n_boot, f"percentile bootstrap, {resamples}")
    return result(estimate, low, high, boot.std, "bootstrap_se", n_boot,
                  f"estimate +- {z:.2f} bootstrap standard errors ({resamples})")
