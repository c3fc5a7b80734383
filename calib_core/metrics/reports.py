"""Every registered metric at once: :func:`metric_report`, and the size limits that leave some out.

:func:`metric_report` evaluates the metrics of :mod:`calib_core.metrics.registry`
on one input and reports, instead of raising, each one that cannot be
computed on it. Two limits leave metrics out for size (``skipped``), with one
sentence each (:func:`size_note`) for the pages, the HTML report and the CLI:

* the O(N^2) metrics above :data:`MAX_QUADRATIC_ROWS` rows
  (:func:`skipped_quadratic`);
* the per-class fits (Cox terms, ICI, E50, E90: one fit per class for
  K > 2) above :data:`MAX_FIT_CELLS` rows x fits (:func:`fit_cells`).

An estimate that breaks a bound its true quantity obeys (the registry's
:data:`~calib_core.metrics.registry.BOUNDS`) is marked :data:`UNRELIABLE`
with the reason (:func:`check_estimate`, :func:`check_bounds`): every page,
the CLI and the reports show that reason beside the number.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from calib_core.display import compact_display
from calib_core.metrics import registry
from calib_core.metrics.decomposition import calibrated_bias
from calib_core.metrics.registry import BOUNDS, CALIBRATED_BIAS, KDE_BANDWIDTH, get_metric, metric_name
from calib_core.validation import (CalibrationInputError, check_binning, check_choice, check_n_bins, check_probs_labels,
                                   check_sample_weight, integer_weights, repeat_rows)

__all__ = ["MAX_FIT_CELLS", "MAX_QUADRATIC_ROWS", "MetricReport", "UNRELIABLE", "check_bounds", "check_estimate",
           "compute_metrics", "METRIC_KINDS", "metrics_of_kind", "fit_cells", "kernel_biases", "metric_report",
           "size_note", "skipped_for_size",
           "skipped_quadratic"]


#: Above this many rows the O(N^2) metrics are left out of :func:`compute_metrics`
#: by default (about 10 s each here at 20,000 rows; the Estimators page subsamples).
MAX_QUADRATIC_ROWS = 20_000

#: Above this many rows x fits (fits: 1 for two classes, K for K > 2) the per-class fits (Cox terms and
#: loess summaries, ``MetricSpec.per_class_fit``) are left out of :func:`metric_report` by default: at
#: 50,000 x 1,000 they are 1,000 loess fits and 3,000 logistic regressions (minutes); at 100,000 x 10,
#: 1.5 s with the compiled loess kernel.
MAX_FIT_CELLS = 5_000_000


@compact_display
@dataclass(frozen=True)
class MetricReport:
    """Every requested metric, with a reason for each one that is not available.

    Attributes
    ----------
    values : dict
        ``{key: float or None}`` in registry order; None when the metric
        cannot be computed on this (valid) input. Metrics left out for size
        (``skipped``) are not keys.
    reasons : dict
        ``{key: reason}`` for the keys whose value is None.
    skipped : tuple of str
        Metrics left out for size: O(N^2) metrics because of
        ``max_quadratic_rows`` or ``include_quadratic=False``, per-class fits
        because of ``max_fit_cells`` (:func:`skipped_for_size`).
    unreliable : dict
        ``{key: reason}`` for the values that break a bound of their true
        quantity (:func:`check_bounds`); the value is kept, the reason shown beside it.
    biases : dict
        ``{key: bias}`` of the kernel estimates computed (:func:`kernel_biases`).
    """

    values: dict[str, float | None]
    reasons: dict[str, str]
    skipped: tuple[str, ...]
    unreliable: dict[str, str] = field(default_factory=dict)
    biases: dict[str, float] = field(default_factory=dict)


def _check_max_quadratic_rows(max_quadratic_rows: object) -> int | None:
    if max_quadratic_rows is None:
        return None
    if (isinstance(max_quadratic_rows, bool) or not isinstance(max_quadratic_rows, (int, np.integer))
            or max_quadratic_rows < 1):
        raise CalibrationInputError(
            f"`max_quadratic_rows` must be a positive number of rows or None (no limit), got {max_quadratic_rows!r}."
        )
    return int(max_quadratic_rows)


#: The kinds of model a registry entry is for (:attr:`~calib_core.metrics.registry.MetricSpec.kind`).
METRIC_KINDS = ("classes", "confidence")


def metrics_of_kind(kind: str) -> list:
    """The registry entries for models of ``kind`` (``"classes"`` or ``"confidence"``), in registry order."""
    kind = check_choice(kind, "kind", METRIC_KINDS)
    return [spec for spec in registry.METRICS if spec.kind == kind]


def metric_report(probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                  keys: list[str] | None = None, include_quadratic: bool = True,
                  max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS,
                  max_fit_cells: int | None = MAX_FIT_CELLS, kind: str = "classes",
                  sample_weight: ArrayLike | None = None) -> MetricReport:
    """Every registered metric (or those in ``keys``); one that fails is reported, not raised.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins, binning : bin settings of the binned metrics.
    keys : list of str, optional
        Keys of :data:`calib_core.metrics.registry.METRICS`; default every
        entry of the model's ``kind``.
    include_quadratic : bool, default True
    max_quadratic_rows : int or None, default MAX_QUADRATIC_ROWS
        The O(N^2) metrics are left out above this many rows (None: no limit).
    max_fit_cells : int or None, default MAX_FIT_CELLS
        The per-class fits (Cox terms, ICI, E50, E90) are left out when
        rows x fits exceeds this (fits: 1 for two classes, K beyond; None: no
        limit). :func:`skipped_for_size` says which keys are left out.
    kind : {"classes", "confidence"}, default "classes"
        The model's kind (:attr:`calib_core.Predictions.kind`): a confidence
        model (``probs = [1 - c, c]``, labels = correct) gets the confidence
        entries, never the K-class ones, whose top label would read ``max(c, 1 - c)``
        (:func:`metrics_of_kind`).
    sample_weight : array_like of shape (N,), optional
        Row weights, as :func:`calib_core.metrics.registry.metric_value`
        takes them; a metric defined on the repeated rows that cannot take
        them (fractional weights) is None with the reason. The size limits,
        the bounds' N and the kernel biases are those of the repeated rows
        (N becomes the summed weight, rounded up).

    Returns
    -------
    MetricReport

    Raises
    ------
    CalibrationInputError
        Invalid input (predictions, labels, bin settings, keys): then no
        metric means anything. A metric that cannot be computed on valid input
        (SKCE on one row, a non-finite value) is None with its reason instead.
    """
    probs, labels = check_probs_labels(probs, labels)
    check_n_bins(n_bins)
    check_binning(binning)
    weights = check_sample_weight(sample_weight, labels.size)
    n_rows = probs.shape[0] if weights is None else max(1, math.ceil(float(weights.sum())))
    specs = metrics_of_kind(kind) if keys is None else [get_metric(k) for k in keys]
    skipped = set(skipped_for_size(n_rows, probs.shape[1], include_quadratic=include_quadratic,
                                   max_quadratic_rows=max_quadratic_rows, max_fit_cells=max_fit_cells))
    values: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    for spec in specs:
        if spec.key in skipped:
            continue
        try:
            if weights is None:
                value = float(spec.compute(probs, labels, n_bins, binning))
            else:
                value = registry.metric_value(spec.key, probs, labels, n_bins=n_bins, binning=binning,
                                              sample_weight=weights)
        except CalibrationInputError as exc:
            values[spec.key], reasons[spec.key] = None, " ".join(str(exc).split())
            continue
        if not math.isfinite(value):
            values[spec.key], reasons[spec.key] = None, f"the estimate is not finite ({value})."
            continue
        values[spec.key] = value
    # the kernel estimates exist with weights only for whole-number weights: their bias is the repeated rows'
    biases = kernel_biases(probs if weights is None or not integer_weights(weights)
                           else repeat_rows(weights, probs, metric="the kernel bias")[0], values)
    return MetricReport(values, reasons, tuple(spec.key for spec in specs if spec.key in skipped),
                        check_bounds(values, n_rows=n_rows, n_classes=probs.shape[1], biases=biases), biases)


#: Marks an estimate that breaks a bound of its true quantity (:func:`check_estimate`).
UNRELIABLE = "unreliable at this N and K"


def _shown(value: float) -> str:
    return f"{value:.4g}"


def check_estimate(key: str, value: float | None, limits: Mapping[str, float | None], *, n_rows: int,
                   n_classes: int, biases: Mapping[str, float] | None = None,
                   bandwidth: float | None = None) -> str | None:
    """Why ``value``, an estimate of metric ``key``, is unreliable: the first bound of ``key`` it breaks, or None.

    Parameters
    ----------
    key : str
        A registry key with bounds in :data:`calib_core.metrics.registry.BOUNDS`.
    value : float or None
        The estimate (None or NaN: nothing to check).
    limits : mapping
        ``{registry key: value}`` of the metrics that bound it (e.g. the NLL
        for CE_KL); a bound whose limit is missing is not checked.
    n_rows, n_classes : int
        The N and K the estimate was made on (named in the reason).
    biases : mapping, optional
        ``{key: the estimator's value on labels drawn from the predictions}``
        (:func:`kernel_biases`) for the bounds whose limit is that bias.
    bandwidth : float, optional
        The kernel bandwidth, named in the reason (default: the registry's).

    Returns
    -------
    str or None
        ":data:`UNRELIABLE` (N = ..., K = ...): what is broken, why the true
        value obeys it, the estimator's bias that breaks it, and what would
        make it reliable."

    Examples
    --------
    >>> check_estimate("kde_ce_kl", 16.8, {"nll": 2.24}, n_rows=899, n_classes=10)[:70]
    'unreliable at this N and K (N = 899, K = 10): 16.8 is above NLL = 2.24'
    >>> check_estimate("kde_ce_kl", 0.3, {"nll": 2.24}, n_rows=899, n_classes=10) is None
    True
    """
    if value is None or not math.isfinite(value):
        return None
    biases = biases or {}
    for bound in BOUNDS:
        if bound.key != key:
            continue
        if bound.limit == CALIBRATED_BIAS:
            limit, what = biases.get(key), None
        elif isinstance(bound.limit, str):
            limit, what = limits.get(bound.limit), metric_name(bound.limit)
        else:
            limit, what = float(bound.limit), None
        if limit is None or not math.isfinite(limit):
            continue
        limit = bound.scale * limit
        if (value <= limit) if bound.relation == "<=" else (value >= limit):
            continue
        if bound.limit == CALIBRATED_BIAS:
            bias = limit / bound.scale
            beyond = "below that bias itself" if value < bias else f"not beyond {bound.scale:g} times its own bias"
            broken = (f"this estimator gives {_shown(bias)} on average on labels drawn from the predictions "
                      f"themselves (a perfectly calibrated model, true error 0), so {_shown(value)} is {beyond}: "
                      f"{bound.why}")
        else:
            side = "above" if bound.relation == "<=" else "below"
            shown_limit = f"{what} = {_shown(limit)}" if what else _shown(limit)
            broken = f"{_shown(value)} is {side} {shown_limit}, where the true value cannot be: {bound.why}"
        h = KDE_BANDWIDTH if bandwidth is None else bandwidth
        return (f"{UNRELIABLE} (N = {n_rows:,}, K = {n_classes:,}): {broken}. Why the estimate breaks it: "
                f"{bound.bias.format(h=f'{h:.3g}')}. Reliable with: {bound.remedy}.")
    return None


def check_bounds(values: Mapping[str, float | None], *, n_rows: int, n_classes: int,
                 biases: Mapping[str, float] | None = None) -> dict[str, str]:
    """``{key: reason}`` of every value in ``values`` that breaks a bound (:func:`check_estimate`), in order."""
    found = {}
    for key, value in values.items():
        reason = check_estimate(key, value, values, n_rows=n_rows, n_classes=n_classes, biases=biases)
        if reason is not None:
            found[key] = reason
    return found


def kernel_biases(probs: np.ndarray, values: Mapping[str, float | None]) -> dict[str, float]:
    """The bias of the registry's kernel estimates CE_KL and CE_2^2 on these predictions (those in ``values``).

    :func:`calib_core.metrics.decomposition.calibrated_bias` at the registry's
    bandwidth: their mean on labels drawn from the predictions, where the
    true error is 0. Empty when neither was computed.
    """
    keys = [key for key in ("kde_ce_kl", "kde_ce_l2") if values.get(key) is not None]
    if not keys:
        return {}
    bias = calibrated_bias(probs, bandwidth=KDE_BANDWIDTH)
    return {key: bias[("kl" if key == "kde_ce_kl" else "l2"), "direct"] for key in keys}


def compute_metrics(probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                    keys: list[str] | None = None, include_quadratic: bool = True,
                    max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS,
                    max_fit_cells: int | None = MAX_FIT_CELLS, kind: str = "classes",
                    sample_weight: ArrayLike | None = None) -> dict[str, float]:
    """Every registered metric of the model's ``kind`` (or those in ``keys``) as ``{key: value}``.

    ``sample_weight``: see :func:`metric_report`.

    The O(N^2) metrics are left out when ``include_quadratic`` is false or
    when N exceeds ``max_quadratic_rows`` (``None``: no limit); use
    :func:`skipped_quadratic` to say which were left out; likewise the
    per-class fits above ``max_fit_cells`` (:func:`skipped_for_size`). A metric that
    cannot be computed on valid input is NaN; :func:`metric_report` gives
    the reason.
    """
    report = metric_report(probs, labels, n_bins=n_bins, binning=binning, keys=keys,
                           include_quadratic=include_quadratic, max_quadratic_rows=max_quadratic_rows,
                           max_fit_cells=max_fit_cells, kind=kind, sample_weight=sample_weight)
    return {key: math.nan if value is None else value for key, value in report.values.items()}


def fit_cells(n_rows: int, n_classes: int) -> int:
    """Rows x fits of a per-class fit metric: one fit for two classes, one per class (one-vs-rest) beyond."""
    return int(n_rows) * (1 if n_classes <= 2 else int(n_classes))


def skipped_for_size(n_rows: int, n_classes: int, *, include_quadratic: bool = True,
                     max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS,
                     max_fit_cells: int | None = MAX_FIT_CELLS) -> list[str]:
    """Keys :func:`metric_report` leaves out for an ``n_rows x n_classes`` input, in registry order.

    The O(N^2) metrics (:func:`skipped_quadratic`) and, when
    :func:`fit_cells` exceeds ``max_fit_cells``, the per-class fits
    (``MetricSpec.per_class_fit``: Cox slope, intercept, calibration-in-the-large, ICI, E50, E90).

    Examples
    --------
    >>> skipped_for_size(50_000, 1_000)
    ['skce', 'kde_ce_kl', 'kde_ce_l2', 'cox_slope', 'cox_intercept', 'citl', 'ici', 'e50', 'e90']
    >>> skipped_for_size(1_000, 10)
    []
    """
    if max_fit_cells is not None and (isinstance(max_fit_cells, bool) or not isinstance(max_fit_cells, numbers.Integral)
                                      or max_fit_cells < 1):
        raise CalibrationInputError(
            f"`max_fit_cells` must be a positive whole number or None (no limit), got {max_fit_cells!r}.")
    quadratic = set(skipped_quadratic(n_rows, include_quadratic=include_quadratic,
                                      max_quadratic_rows=max_quadratic_rows))
    too_many_fits = max_fit_cells is not None and fit_cells(n_rows, n_classes) > max_fit_cells
    return [spec.key for spec in registry.METRICS if spec.key in quadratic or (spec.per_class_fit and too_many_fits)]


def size_note(key: str, n_rows: int, n_classes: int, *, max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS,
              max_fit_cells: int | None = MAX_FIT_CELLS) -> str:
    """Why :func:`metric_report` left ``key`` out for size: one sentence for pages, reports and the CLI.

    Examples
    --------
    >>> size_note("ici", 50_000, 1_000)
    'left out: 50,000 rows x 1,000 classes = 50,000,000 rows x fits > 5,000,000 (one fit per class; calib_core.ici and cox_calibration compute it)'
    """
    spec = get_metric(key)
    if spec.quadratic:
        limit = "no limit" if max_quadratic_rows is None else f"{max_quadratic_rows:,}"
        return f"left out: {n_rows:,} rows > {limit} (O(N^2) metric)"
    if spec.per_class_fit:
        return (f"left out: {n_rows:,} rows x {n_classes:,} classes = {fit_cells(n_rows, n_classes):,} rows x fits > "
                f"{max_fit_cells:,} (one fit per class; calib_core.ici and cox_calibration compute it)")
    return ""


def skipped_quadratic(n_rows: int, *, include_quadratic: bool = True,
                      max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS) -> list[str]:
    """Keys of the O(N^2) metrics :func:`compute_metrics` leaves out for ``n_rows`` rows."""
    limit = _check_max_quadratic_rows(max_quadratic_rows)
    too_many = limit is not None and n_rows > limit
    return [spec.key for spec in registry.METRICS if spec.quadratic and (too_many or not include_quadratic)]
