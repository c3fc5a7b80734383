"""Bootstrap confidence intervals for any metric of ``(probs, labels)``: the one multi-metric sampler.

Each metric is resampled the way it declares
(:mod:`calib_core.metrics.resampling`): binned metrics by the shared-work
engine of :mod:`calib_core.inference.resample`, means of per-row values and
top-label statistics on the drawn rows' values; an undeclared metric is
evaluated on each materialised resample. Every path draws its resamples
through :func:`calib_core.inference.resample.index_blocks`, so a seed gives the
same resamples, and the same interval up to round-off, on any path.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core._accel import sorted_draws
from calib_core.inference.resample import BinnedResampler, binned_spec, index_blocks, resampled_binned_values
from calib_core.metrics.binned import top_label
from calib_core.metrics.registry import declared_metric
from calib_core.validation import (CalibrationInputError, check_count, check_fraction, check_probs_labels,
                                   check_sample_weight)

__all__ = ["BootstrapResult", "bootstrap_ci", "bootstrap_metrics", "resampled_interval", "resampled_metrics",
           "weighted_metric"]


@compact_display
@dataclass(frozen=True)
class BootstrapResult:
    """A metric's value on the data and its percentile bootstrap interval.

    Attributes
    ----------
    estimate : float
        The metric on the full data.
    low, high : float
        The ``alpha / 2`` and ``1 - alpha / 2`` percentiles of the resampled values.
    std : float
        Standard deviation of the resampled values (the bootstrap standard error).
    alpha : float
    samples : ndarray of shape (n_boot,)
        The resampled values.
    """

    estimate: float
    low: float
    high: float
    std: float
    alpha: float
    samples: NDArray[np.float64]


def _check_options(n_boot: object, alpha: object) -> None:
    check_count(n_boot, "n_boot", 2)
    check_fraction(alpha, "alpha")


def _result(estimate: float, samples: NDArray[np.float64], alpha: float) -> BootstrapResult:
    low, high = np.quantile(samples, [alpha / 2.0, 1.0 - alpha / 2.0])
    return BootstrapResult(float(estimate), float(low), float(high), float(samples.std(ddof=1)), float(alpha), samples)


def weighted_metric(metric: Callable) -> Callable[[NDArray, NDArray, NDArray], float]:
    """``value(probs, labels, weights)`` of a metric given with row weights.

    A registry metric or public metric function (:func:`declared_metric`) is
    called through :func:`calib_core.metrics.registry.metric_value`; any
    other callable must take a ``sample_weight`` keyword itself -- one that
    does not is refused rather than evaluated without its weights.
    """
    declared = declared_metric(metric)
    if declared is not None:
        return lambda p, y, w: float(declared(p, y, sample_weight=w))
    try:
        takes = "sample_weight" in inspect.signature(metric).parameters
    except (TypeError, ValueError):
        takes = False
    if not takes:
        name = getattr(metric, "__name__", repr(metric))
        raise CalibrationInputError(
            f"`metric` {name} takes no `sample_weight` argument, so it cannot be bootstrapped with weights; "
            f"pass a registry metric (metric_function(key)) or a function with a `sample_weight` keyword.")
    return lambda p, y, w: float(metric(p, y, sample_weight=w))


def _weighted_rows(probs: NDArray[np.float64], labels: NDArray[np.intp], sample_weight: ArrayLike | None):
    """Checked weights, and the rows of positive weight only (a row of weight 0 is absent from every estimate,
    so it is not drawn either); ``weights`` None when none are given."""
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is None:
        return probs, labels, None
    keep = weights > 0
    return probs[keep], labels[keep], weights[keep]


def _resampled_weighted(metrics: list[Callable], probs: NDArray[np.float64], labels: NDArray[np.intp],
                        weights: NDArray[np.float64], n_boot: int, seed: int | np.random.Generator | None,
                        on_progress: Callable[[int, int], None] | None) -> NDArray[np.float64]:
    """:func:`_resampled` with row weights: each resample draws N rows with replacement and carries their weights.

    The weighted bootstrap of independent weighted units: the value on a
    resample is the metric of the drawn rows with their own weights, so the
    resamples centre on the weighted estimate (a row drawn twice counts twice
    its weight). The same draws as without weights (:func:`index_blocks`);
    each resample is materialised (the shared binned engine takes only
    unweighted rows).
    """
    rng = np.random.default_rng(seed)
    functions = [weighted_metric(metric) for metric in metrics]
    samples = np.empty((len(metrics), int(n_boot)))
    for start, stop, indices in index_blocks(rng, probs.shape[0], int(n_boot)):
        for offset, rows in enumerate(indices):
            drawn = probs[rows], labels[rows], weights[rows]
            for i, function in enumerate(functions):
                samples[i, start + offset] = function(*drawn)
        if on_progress is not None:
            on_progress(stop, int(n_boot))
    return samples


def _resampled(metrics: list[Callable], probs: NDArray[np.float64], labels: NDArray[np.intp], n_boot: int,
               seed: int | np.random.Generator | None,
               on_progress: Callable[[int, int], None] | None,
               weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Values ``(len(metrics), n_boot)`` of each metric on the same resamples, taken as each declares.

    The one multi-metric sampler. A metric's declared resampling
    (:attr:`calib_core.metrics.registry.MetricSpec.resampling`, read through
    :func:`calib_core.metrics.registry.declared_metric`) chooses the path:
    ``"binned"``, the row-weight engine; ``"row_mean"``, the mean of its
    per-row values over the drawn rows; ``"top_label"``, its statistic of the
    drawn confidences and correctness (a whole block of resamples in one call
    where it declares :attr:`~calib_core.metrics.resampling.Resampling.of_draws`:
    MMCE); anything else, the metric on each
    materialised resample ``probs[rows], labels[rows]`` (drawn once per
    resample and shared). With ``weights``: :func:`_resampled_weighted`.
    """
    if weights is not None:
        return _resampled_weighted(metrics, probs, labels, weights, n_boot, seed, on_progress)
    rng = np.random.default_rng(seed)
    declared = [declared_metric(metric) for metric in metrics]
    kinds = [d.resampling.kind if d is not None and d.resampling is not None else "rows" for d in declared]
    fast = [i for i, kind in enumerate(kinds) if kind == "binned"]
    means = {i: (declared[i].resampling.per_row(probs, labels), declared[i].resampling.of_mean)
             for i, kind in enumerate(kinds) if kind == "row_mean"}
    at_once = {i: declared[i].top_label_draws() for i, kind in enumerate(kinds) if kind == "top_label"}
    at_once = {i: of_draws for i, of_draws in at_once.items() if of_draws is not None}
    tops = {i: (declared[i].top_label_statistic(), declared[i].resampling.sorts)
            for i, kind in enumerate(kinds) if kind == "top_label" and i not in at_once}
    slow = [i for i, kind in enumerate(kinds) if kind not in ("binned", "row_mean", "top_label")]
    confidence, correct = top_label(probs, labels) if tops or at_once else (None, None)
    ranks = None
    if any(sorts for _, sorts in tops.values()):
        # Each resample's rows in the stable order of their confidence (the dense rank of each value, ties
        # equal; calib_core._accel.sorted_draws: a counting sort, or numpy's stable argsort): the KS error's
        # and MMCE's own stable sort then meets sorted data and sees the same sequence.
        distinct, ranks = np.unique(confidence, return_inverse=True)
    resampler = BinnedResampler(probs, labels) if fast else None
    specs = [binned_spec(declared[i]) for i in fast]
    samples = np.empty((len(metrics), int(n_boot)))
    for start, stop, indices in index_blocks(rng, probs.shape[0], int(n_boot)):
        if fast:
            samples[fast, start:stop] = resampled_binned_values(resampler, specs, indices)
        for i, (values, of_mean) in means.items():
            mean = np.take(values, indices).mean(axis=1)
            samples[i, start:stop] = mean if of_mean is None else of_mean(mean)
        for i, of_draws in at_once.items():
            samples[i, start:stop] = of_draws(confidence, correct, indices)
        for offset, rows in enumerate(indices if tops else ()):
            drawn = confidence[rows], correct[rows]
            ordered = drawn
            if ranks is not None:
                ordered_rows = sorted_draws(ranks, rows, distinct.shape[0])
                ordered = confidence[ordered_rows], correct[ordered_rows]
            for i, (statistic, sorts) in tops.items():
                samples[i, start + offset] = statistic(*(ordered if sorts else drawn))
        for offset, rows in enumerate(indices if slow else ()):
            resample = probs[rows], labels[rows]
            for i in slow:
                samples[i, start + offset] = metrics[i](*resample)
        if on_progress is not None:
            on_progress(stop, int(n_boot))
    return samples


def bootstrap_ci(metric: Callable[[NDArray, NDArray], float], probs: ArrayLike, labels: ArrayLike, *,
                 n_boot: int = 1000, alpha: float = 0.05, seed: int | np.random.Generator | None = None,
                 on_progress: Callable[[int, int], None] | None = None,
                 sample_weight: ArrayLike | None = None) -> BootstrapResult:
    """Percentile bootstrap interval of ``metric(probs, labels)``.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels) -> float``, e.g. :func:`calib_core.ece` or
        ``metric_function("ece", n_bins=20)`` (declared, so resampled fast;
        ``functools.partial(calib_core.ece, n_bins=20)``, a public metric with
        only its bin settings fixed, stands for the same declaration).
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_boot : int, default 1000
        Number of resamples of N rows drawn with replacement.
    alpha : float, default 0.05
        The interval covers ``1 - alpha``.
    seed : int or numpy.random.Generator, optional
        Source of randomness; the same seed gives the same interval.
    on_progress : callable, optional
        Called as ``on_progress(done, n_boot)`` after each block of resamples.
    sample_weight : array_like of shape (N,), optional
        Non-negative row weights. The estimate is the weighted metric
        (``metric(probs, labels, sample_weight=...)``); each resample draws the
        rows of positive weight with replacement and carries their weights
        (:func:`weighted_metric`: registry metrics, public metric functions or
        any callable with a ``sample_weight`` keyword; others are refused).

    Returns
    -------
    BootstrapResult

    Notes
    -----
    All resample indices of a block are drawn in one call (no Python loop
    over rows). Efron & Tibshirani (1993), the percentile interval
    ``[q_{alpha/2}, q_{1-alpha/2}]`` of the resampled statistic.

    A metric that declares how it is resampled takes that shortcut
    (:attr:`calib_core.metrics.registry.MetricSpec.resampling`): a
    :func:`calib_core.metrics.registry.metric_function` of a registry key
    (``metric_function("ece", n_bins=20)``), or a public metric function
    itself at its defaults (``cc.ece``, ``cc.brier_score``, ``cc.ks_error``
    ...). Binned metrics take each resample as its row weights, their per-bin
    sums coming from cumulative sums along one sort per column
    (:mod:`calib_core.inference.resample`); the accuracy, Brier score and NLL
    (and the root Brier score, a function of one) are means of per-row values
    taken over each resample's rows without copying them; the KS error, MMCE
    and smECE see only the top label, whose two arrays are resampled. Any
    other callable (a lambda, a :func:`functools.partial` fixing more than the
    bin settings of a public metric) is called on each
    materialised ``probs[rows], labels[rows]``. Every path gives the same
    values, up to round-off.

    Examples
    --------
    >>> import calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = cc.as_probs(rng.uniform(size=500)); y = (rng.uniform(size=500) < p[:, 1]).astype(int)
    >>> r = bootstrap_ci(cc.ece, p, y, n_boot=200, seed=1)
    >>> r.low <= r.estimate <= r.high
    True
    """
    probs, labels = check_probs_labels(probs, labels)
    probs, labels, weights = _weighted_rows(probs, labels, sample_weight)
    if weights is None:
        estimate = float(metric(probs, labels))
    else:
        _check_options(n_boot, alpha)
        estimate = weighted_metric(metric)(probs, labels, weights)
    return resampled_interval(metric, probs, labels, estimate, n_boot=n_boot, alpha=alpha,
                              seed=seed, on_progress=on_progress, sample_weight=weights)


def resampled_interval(metric: Callable[[NDArray, NDArray], float], probs: NDArray[np.float64],
                       labels: NDArray[np.intp], estimate: float, *, n_boot: int, alpha: float,
                       seed: int | np.random.Generator | None,
                       on_progress: Callable[[int, int], None] | None = None,
                       sample_weight: NDArray[np.float64] | None = None) -> BootstrapResult:
    """:func:`bootstrap_ci` for checked arrays whose estimate the caller already has (not computed again:
    0.7 s for ACE at 50,000 x 1,000). :func:`calib_core.inference.intervals.metric_interval` uses it."""
    _check_options(n_boot, alpha)
    probs, labels, weights = _weighted_rows(probs, labels, sample_weight)
    samples = _resampled([metric], probs, labels, int(n_boot), seed, on_progress, weights)[0]
    return _result(float(estimate), samples, float(alpha))


def bootstrap_metrics(metrics: Mapping[str, Callable[[NDArray, NDArray], float]], probs: ArrayLike,
                      labels: ArrayLike, *, n_boot: int = 1000, alpha: float = 0.05,
                      seed: int | np.random.Generator | None = None,
                      on_progress: Callable[[int, int], None] | None = None,
                      sample_weight: ArrayLike | None = None) -> dict[str, BootstrapResult]:
    """Percentile bootstrap intervals of several metrics on the same resamples, in one pass.

    Parameters
    ----------
    metrics : mapping of str to callable
        ``{name: metric}``, each ``metric(probs, labels) -> float``. The binned
        ones (see :func:`bootstrap_ci`) share the per-row work and one
        cumulative sum per column and block of resamples.
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_boot, alpha, seed, on_progress, sample_weight
        As :func:`bootstrap_ci`.

    Returns
    -------
    dict of str to BootstrapResult
        In the order of ``metrics``. ``bootstrap_metrics({name: m}, ...)[name]``
        equals ``bootstrap_ci(m, ...)`` for the same seed (up to round-off).

    Notes
    -----
    Every metric sees the same resamples (Efron & Tibshirani 1993, ch. 6),
    so differences between the metrics' intervals are not resampling noise.

    Examples
    --------
    >>> import functools, calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = cc.as_probs(rng.uniform(size=500)); y = (rng.uniform(size=500) < p[:, 1]).astype(int)
    >>> out = bootstrap_metrics({"ece": cc.ece, "ace": cc.ace}, p, y, n_boot=100, seed=1)
    >>> sorted(out), out["ece"].estimate == cc.ece(p, y)
    (['ace', 'ece'], True)
    """
    probs, labels = check_probs_labels(probs, labels)
    _check_options(n_boot, alpha)
    probs, labels, weights = _weighted_rows(probs, labels, sample_weight)
    if weights is None:
        estimates = {name: float(function(probs, labels)) for name, function in metrics.items()}
    else:
        estimates = {name: weighted_metric(function)(probs, labels, weights) for name, function in metrics.items()}
    samples = resampled_metrics(metrics, probs, labels, n_boot=n_boot, seed=seed, on_progress=on_progress,
                                sample_weight=weights)
    return {name: _result(estimate, samples[name], float(alpha)) for name, estimate in estimates.items()}


def resampled_metrics(metrics: Mapping[str, Callable[[NDArray, NDArray], float]], probs: ArrayLike,
                      labels: ArrayLike, *, n_boot: int, seed: int | np.random.Generator | None,
                      on_progress: Callable[[int, int], None] | None = None,
                      sample_weight: ArrayLike | None = None) -> dict[str, NDArray[np.float64]]:
    """Each metric's values on the same ``n_boot`` resamples, without estimates or intervals.

    The samples of :func:`bootstrap_metrics` (and of :func:`bootstrap_ci` of
    each metric, up to round-off, for the same ``seed``). Two arrays of the
    same length resampled with the same ``seed`` hold the same rows in
    resample ``b``, so their samples are paired: the recalibration
    comparison's change ``after_b - before_b``
    (:func:`calib_core.recalibration.compare.intervals`).

    Parameters
    ----------
    metrics : mapping of str to callable
        ``{name: metric}``; registry metrics (:func:`calib_core.metrics.registry.metric_function`)
        are resampled as they declare.
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_boot : int
        At least 1.
    seed, on_progress, sample_weight
        As :func:`bootstrap_ci`.

    Returns
    -------
    dict of str to ndarray of shape (n_boot,)
    """
    probs, labels = check_probs_labels(probs, labels)
    check_count(n_boot, "n_boot", 1)
    probs, labels, weights = _weighted_rows(probs, labels, sample_weight)
    samples = _resampled(list(metrics.values()), probs, labels, int(n_boot), seed, on_progress, weights)
    return dict(zip(metrics, samples))
