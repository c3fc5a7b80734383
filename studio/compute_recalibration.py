"""The Recalibration page's calib_core calls, wrapped in ``st.cache_data``.

Same pattern as :mod:`studio.compute`: a model's predictions are passed as
``_predictions`` (not hashed) together with its ``fingerprint``; the
fingerprint and the small, hashable settings (a :class:`Protocol`, a method
name) form the cache key. A fit is cached by (fingerprint, method,
protocol), so adding a method to the selection fits only that method.

The protocol is honest by default (:mod:`calib_core.recalibration.protocol`): a method is
fitted on one set of rows and judged on disjoint rows, from the file's
``split`` column (calibration / test), a stratified random split, or K-fold
cross-fitting. Evaluating on the fitting rows happens only with
``Protocol.in_sample`` and the protocol sentence then says "IN-SAMPLE".

Model input: the logits when the file held them, else the probabilities
(``input="probs"``: methods that work on logits take ``log(probs + 1e-12)``,
:func:`calib_core.recalibration.log_probabilities`, scikit-learn's rule, so exact
zeros stay finite; the temperature surface uses the same logarithm).

User-supplied strings (model names, class names, split values) enter the
Markdown this module returns only through :func:`studio.text.literal`, so they are shown
as typed.
"""
from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st
from scipy import stats

import calib_core as cc
from calib_core.io.loader import Predictions
from calib_core.lab.studies import GCE_VARIANTS
from calib_core.recalibration.protocol import EVAL_SPLIT_VALUES, FIT_SPLIT_VALUES
from calib_core.recalibration import (
    RECALIBRATORS,
    AccuracyPreservingCalibratedMap,
    Recalibrator,
    log_probabilities,
)
from calib_core.metrics.simplex import SimplexReliability
from studio.text import literal

#: Metrics of the results table (registry keys), in display order. The class-wise ECE with uniform
#: bins is the SCE (Nixon et al. 2019, eq. 2), so it appears once, labelled as both.
METRIC_KEYS = ("ece", "ace", "sce", "mce", "ks", "nll", "brier", "accuracy")
#: Display names that differ from the registry's.
LABELS = {"sce": "SCE = class-wise ECE"}
#: Metrics where a larger value is better (all others: smaller is better).
HIGHER_IS_BETTER = frozenset({"accuracy"})
#: Calibration errors on ECE's 0-1 scale drawn together in the change chart (the MCE, a worst case
#: over bins, has intervals ten times wider and would flatten the others; it stays in the tables).
PROBABILITY_SCALE_KEYS = ("ece", "ace", "sce", "ks")
#: The cautionary baseline (Gruber & Buettner appendix E.1): calibrated by construction, no sharpness left.
CAUTIONARY = AccuracyPreservingCalibratedMap.display_name
#: Methods selected on a first visit.
DEFAULT_METHODS = ("Temperature scaling", "Vector scaling", "Isotonic regression", "Histogram binning",
                   "Dirichlet calibration")
#: Row label of the uncalibrated predictions in tables and charts.
BEFORE = "No recalibration"
#: How the rows are split into fitting and evaluation rows.
SCHEMES = {
    "split_column": "the file's split column (fit on calibration, evaluate on test)",
    "random": "stratified random split",
    "cross_fit": "K-fold cross-fitting",
}
#: Bootstrap resamples offered (0: no intervals).
BOOT_CHOICES = (0, 50, 100, 200, 500, 1000)
#: Above this predicted time (seconds, per model) the page skips the bootstrap and says why.
BOOT_BUDGET_SECONDS = 60.0
#: Rows used by the temperature surface and the GCE ranking (a seeded random subset above).
SURFACE_MAX_ROWS = 10_000
GCE_MAX_ROWS = 10_000
#: The kernel estimate costs N^2 K; its subset keeps N^2 K under this (and N <= KDE_MAX_ROWS).
KDE_BUDGET = 1e8
KDE_MAX_ROWS = 2_000
#: Temperatures of the surface: log-spaced over [T_MIN, T_MAX].
T_MIN, T_MAX, T_POINTS = 0.05, 20.0, 41
#: The GCE variants that equal a named calib_core metric exactly, for any data and bin count
#: (tests/test_page_recalibration.py checks each): variant -> (label, function, keyword arguments).
#: Only these carry a metric's name on the page; every other variant is labelled by its settings.
#: Nixon et al. (2019, section 5.4) also call variant 0 class-conditional ECE, 8 SCE and 24 ACE,
#: but :func:`calib_core.gce` drops values ``<= threshold`` (threshold 0: exact zeros) and weights
#: each range by its count, while :func:`calib_core.sce` keeps every value and :func:`calib_core.ace`
#: takes the unweighted mean over ranges: variant 8 differs from the SCE whenever a model outputs
#: exact zeros (0.042 against 0.030 on the default demo), variant 24 from the ACE also when the
#: ranges differ in size (see :data:`PAPER_NAMES`).
NAMED_VARIANTS: dict[int, tuple[str, Callable, dict]] = {
    4: ("ECE", cc.ece, {}),
    5: ("RMSCE", cc.ece, {"norm": "l2"}),
    20: ("ECE (adaptive)", cc.ece, {"binning": "adaptive"}),
    21: ("RMSCE (adaptive)", cc.ece, {"binning": "adaptive", "norm": "l2"}),
}
#: What Nixon et al. call the variants that are *not* those metrics here, and why (page text only).
PAPER_NAMES = {0: "class-conditional ECE", 8: "SCE", 24: "ACE"}

ProgressCallback = Callable[[str, str, int, int], None]


# ----------------------------------------------------------------------------- protocol

@dataclass(frozen=True)
class Protocol:
    """How rows are split for fitting and evaluation (hashable: part of every cache key).

    Attributes
    ----------
    scheme : {"split_column", "random", "cross_fit"}
    test_fraction : float
        Share of each class evaluated on (``"random"`` only).
    seed : int
        Seeds the random split or the folds.
    n_folds : int
        Folds of cross-fitting (``"cross_fit"`` only).
    in_sample : bool
        Evaluate on the fitting rows (optimistic; only behind the page's labelled checkbox).
    """

    scheme: str = "split_column"
    test_fraction: float = 0.5
    seed: int = 0
    n_folds: int = 5
    in_sample: bool = False

    def normalised(self) -> Protocol:
        """The same protocol with the settings it does not use reset, so cache entries are shared."""
        return replace(
            self,
            test_fraction=round(float(self.test_fraction), 6) if self.scheme == "random" else 0.5,
            n_folds=int(self.n_folds) if self.scheme == "cross_fit" and not self.in_sample else 5,
            seed=int(self.seed) if self.scheme != "split_column" and not (
                self.scheme == "cross_fit" and self.in_sample) else 0,
        )


def split_column_ready(predictions: Predictions) -> bool:
    """Whether the model's ``split`` column marks both calibration rows and test rows."""
    if predictions.split is None:
        return False
    values = {str(v).strip().lower() for v in predictions.split_names}
    return bool(values & set(FIT_SPLIT_VALUES)) and bool(values & set(EVAL_SPLIT_VALUES))


def effective_protocol(predictions: Predictions, protocol: Protocol) -> tuple[Protocol, str | None]:
    """The protocol used for this model and, when it differs from the one chosen, why.

    A model without a usable ``split`` column (none, or the sidebar shows one
    split only) gets a stratified random split with the page's fraction and seed.
    """
    if protocol.scheme == "split_column" and not split_column_ready(predictions):
        if predictions.split is None:
            reason = "has no `split` column"
        else:
            shown = ", ".join(literal(v) for v in predictions.split_names[:4])
            reason = f"has no calibration and test rows to tell apart (split values here: {shown})"
        used = replace(protocol, scheme="random").normalised()
        return used, (f"{literal(predictions.name)} {reason}: it is split at random instead (stratified, test "
                      f"fraction {used.test_fraction:g}, seed {used.seed}).")
    return protocol.normalised(), None


def model_input(predictions: Predictions) -> tuple[np.ndarray, str]:
    """``(x, input)``: the logits when the file held them, else the probabilities."""
    if predictions.logits is not None:
        return predictions.logits, "logits"
    return predictions.probs, "probs"


def _log_scores(predictions: Predictions) -> np.ndarray:
    """The scores temperature scaling divides by T: the logits, or ``log(probs + 1e-12)``.

    The same logarithm as :class:`calib_core.TemperatureScaling` with ``input="probs"``
    (:func:`calib_core.recalibration.log_probabilities`), so the fitted temperature
    marked on the surface is a temperature of these very curves.
    """
    if predictions.logits is not None:
        return np.asarray(predictions.logits, dtype=np.float64)
    return log_probabilities(predictions.probs)


@dataclass(frozen=True)
class EvaluationSet:
    """The rows a protocol fits on and evaluates on, with the "before" numbers.

    Attributes
    ----------
    protocol : Protocol
    fit_index, eval_index : ndarray of int
        Rows fitted on and rows evaluated on (equal under cross-fitting,
        where every row is evaluated out of fold, and in-sample).
    labels : ndarray of shape (M,)
        Labels of the evaluated rows.
    before : ndarray of shape (M, K)
        Their probabilities before recalibration.
    before_values : dict of str to float
        :data:`METRIC_KEYS` on them.
    metrics_seconds : float
        Time of one evaluation of every metric (predicts the bootstrap's cost).
    description : str or None
        How the split was made (``None`` for cross-fitting on all rows).
    input : {"logits", "probs"}
    notes : tuple of str
        Warnings about classes with too few rows.
    """

    protocol: Protocol
    fit_index: np.ndarray
    eval_index: np.ndarray
    labels: np.ndarray
    before: np.ndarray
    before_values: dict
    metrics_seconds: float
    description: str | None
    input: str
    notes: tuple[str, ...]

    @property
    def cross_fitted(self) -> bool:
        return self.protocol.scheme == "cross_fit" and not self.protocol.in_sample


def metric_values(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Every metric of :data:`METRIC_KEYS` (15 uniform bins for the binned ones)."""
    return {key: float(cc.metric_function(key)(probs, labels)) for key in METRIC_KEYS}


def _class_name(predictions: Predictions, k: int) -> str:
    name = predictions.class_names[k] if predictions.class_names else str(k)
    return literal(name) if name != str(k) else str(k)


def _rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def _class_notes(predictions: Predictions, fit_index: np.ndarray, eval_index: np.ndarray,
                 protocol: Protocol) -> tuple[str, ...]:
    n_classes = predictions.n_classes
    labels = predictions.labels
    fit_counts = np.bincount(labels[fit_index], minlength=n_classes)
    eval_counts = np.bincount(labels[eval_index], minlength=n_classes)
    notes = []
    if protocol.scheme == "cross_fit" and not protocol.in_sample:
        thin = np.flatnonzero(fit_counts < protocol.n_folds)
        if thin.size:
            shown = ", ".join(f"{_class_name(predictions, k)} ({_rows(fit_counts[k])})" for k in thin[:6])
            notes.append(f"Class {shown} has fewer rows than the {protocol.n_folds} folds: some folds fit without "
                         "it. Use fewer folds, or read its numbers with care.")
        return tuple(notes)
    thin = np.flatnonzero(fit_counts < 2)
    if thin.size:
        shown = ", ".join(f"{_class_name(predictions, k)} ({_rows(fit_counts[k])})" for k in thin[:6])
        notes.append(f"Too few fitting rows of class {shown}: the maps learn almost nothing about "
                     "it. Give the fitting part more rows (a smaller test fraction) or use cross-fitting.")
    missing = np.flatnonzero(eval_counts == 0)
    if missing.size and not protocol.in_sample:
        shown = ", ".join(_class_name(predictions, k) for k in missing[:6])
        notes.append(f"Class {shown} does not occur among the evaluation rows: the metrics see it only as a "
                     "wrong answer. Use a larger test fraction or cross-fitting.")
    return tuple(notes)


def cache_key(predictions: Predictions, fingerprint: str) -> str:
    """The model's fingerprint and what the methods receive (logits or probabilities).

    :func:`studio.state.fingerprint` hashes the probabilities, not the logits; the
    same probabilities read once as probabilities and once with their logits
    give different fits (vector scaling is not invariant to a per-row shift of
    the logits), so the input kind is part of every cache key here.
    """
    return f"{fingerprint}/{model_input(predictions)[1]}"


def evaluation_set(predictions: Predictions, fingerprint: str, protocol: Protocol) -> EvaluationSet:
    """The fitting and evaluation rows of ``protocol`` (raises CalibrationInputError when it cannot split)."""
    return _evaluation_set(predictions, cache_key(predictions, fingerprint), protocol)


@st.cache_data(show_spinner=False, max_entries=256, ttl="1h")
def _evaluation_set(_predictions: Predictions, key: str, protocol: Protocol) -> EvaluationSet:
    x, kind = model_input(_predictions)
    labels = _predictions.labels
    n_rows = labels.size
    description: str | None
    if protocol.scheme in ("split_column", "random"):
        split = cc.split_predictions(
            x, labels, split=_predictions.split if protocol.scheme == "split_column" else None,
            test_fraction=protocol.test_fraction, seed=protocol.seed)
        fit_index = split.fit_index
        eval_index = split.fit_index if protocol.in_sample else split.eval_index
        description = split.description
        if protocol.in_sample:
            description += "; only the fitting rows are used here"
    elif protocol.scheme == "cross_fit":
        fit_index = eval_index = np.arange(n_rows)
        description = None
        if not protocol.in_sample:
            cc.stratified_folds(labels, protocol.n_folds, seed=protocol.seed, n_classes=_predictions.n_classes)
    else:
        raise cc.CalibrationInputError(f"unknown protocol scheme {protocol.scheme!r}; choose one of "
                                       f"{', '.join(SCHEMES)}.")
    before = np.ascontiguousarray(_predictions.probs[eval_index])
    eval_labels = labels[eval_index]
    start = time.perf_counter()
    before_values = metric_values(before, eval_labels)
    seconds = time.perf_counter() - start
    notes = _class_notes(_predictions, fit_index, eval_index, protocol)
    return EvaluationSet(protocol, fit_index, eval_index, eval_labels, before, before_values, seconds,
                         description, kind, notes)


# ----------------------------------------------------------------------------- fitting

@dataclass(frozen=True)
class MethodFit:
    """One method fitted under one protocol on one model.

    Attributes
    ----------
    method : str
        Display name (a key of :data:`calib_core.RECALIBRATORS`).
    ok : bool
    severity : {"", "warning", "error"}
        ``"warning"``: the input did not suit the method (a CalibrationInputError);
        ``"error"``: it failed otherwise.
    message : str
        Why it failed (empty when ``ok``).
    protocol : str
        The protocol sentence of :func:`calib_core.evaluate_recalibration`.
    fit_seconds : float
    after : dict of str to float
        :data:`METRIC_KEYS` on the recalibrated evaluation rows.
    probs : ndarray of shape (M, K) or None
        Recalibrated probabilities of the evaluation rows (out of fold under cross-fitting).
    params_json : str or None
        ``Recalibrator.to_json()`` of the fitted method (under cross-fitting:
        refitted on all rows).
    """

    method: str
    ok: bool
    severity: str
    message: str
    protocol: str
    fit_seconds: float
    after: dict
    probs: np.ndarray | None
    params_json: str | None


def _evaluate(method: str, x: np.ndarray, labels: np.ndarray, ev: EvaluationSet) -> cc.RecalibrationReport:
    protocol = ev.protocol
    methods = {method: RECALIBRATORS[method]()}
    common = dict(input=ev.input, metrics=list(METRIC_KEYS), split_description=ev.description)
    if protocol.scheme == "cross_fit":
        if protocol.in_sample:
            return cc.evaluate_recalibration(methods, x, labels, allow_in_sample=True, **common)
        return cc.evaluate_recalibration(methods, x, labels, n_folds=protocol.n_folds, seed=protocol.seed, **common)
    x_fit, y_fit = x[ev.fit_index], labels[ev.fit_index]
    if protocol.in_sample:
        return cc.evaluate_recalibration(methods, x_fit, y_fit, allow_in_sample=True, **common)
    return cc.evaluate_recalibration(methods, x_fit, y_fit, x[ev.eval_index], labels[ev.eval_index], **common)


def fit_method(predictions: Predictions, fingerprint: str, method: str, protocol: Protocol) -> MethodFit:
    """Fit ``method`` under ``protocol`` and evaluate it; failures are returned, not raised.

    Cached by (fingerprint, input kind, method, protocol).
    """
    return _fit_method(predictions, cache_key(predictions, fingerprint), method, protocol)


@st.cache_data(show_spinner=False, max_entries=1024, ttl="1h")
def _fit_method(_predictions: Predictions, key: str, method: str, protocol: Protocol) -> MethodFit:
    fingerprint = key.rsplit("/", 1)[0]
    if method not in RECALIBRATORS:
        return MethodFit(method, False, "warning", f"unknown method {method!r}; known: {', '.join(RECALIBRATORS)}.",
                         "", 0.0, {}, None, None)
    ev = evaluation_set(_predictions, fingerprint, protocol)
    x, _ = model_input(_predictions)
    try:
        report = _evaluate(method, x, _predictions.labels, ev)
    except cc.CalibrationInputError as exc:
        return MethodFit(method, False, "warning", str(exc), "", 0.0, {}, None, None)
    except Exception as exc:  # a numerical failure inside a method must not end the page
        return MethodFit(method, False, "error", f"{type(exc).__name__}: {exc}", "", 0.0, {}, None, None)
    rows = report.table
    after = dict(zip(rows["metric_key"], rows["after"].astype(float)))
    model = report.models.get(method)
    return MethodFit(method, True, "", "", report.protocol, float(rows["fit_seconds"].iloc[0]), after,
                     np.ascontiguousarray(report.after[method]), model.to_json() if model is not None else None)


def fit_methods(models: Sequence, methods: Sequence[str], protocol: Protocol, *,
                on_progress: ProgressCallback | None = None) -> dict[str, dict[str, MethodFit]]:
    """Fit every method on every model (``models``: studio.state.ModelView), with progress per method.

    ``on_progress(model_name, method, index, total)`` is called before each
    fit (``index`` counts over all models) and once more with ``index == total``.
    Models whose protocol cannot split their rows are left out (the page
    reports them through :func:`evaluation_set`).
    """
    total = len(models) * len(methods)
    out: dict[str, dict[str, MethodFit]] = {}
    index = 0
    for view in models:
        used, _ = effective_protocol(view.predictions, protocol)
        fits: dict[str, MethodFit] = {}
        try:
            evaluation_set(view.predictions, view.fingerprint, used)
        except cc.CalibrationInputError:
            index += len(methods)
            continue
        for method in methods:
            if on_progress is not None:
                on_progress(view.name, method, index, total)
            fits[method] = fit_method(view.predictions, view.fingerprint, method, used)
            index += 1
        out[view.name] = fits
    if on_progress is not None and total:
        on_progress("", "", total, total)
    return out


def fitted_params(fit: MethodFit) -> dict:
    """The fitted parameters of a fit's JSON document (``{}`` without one)."""
    if not fit.params_json:
        return {}
    return json.loads(fit.params_json).get("fitted") or {}


def fitted_temperatures(fits: Mapping[str, MethodFit]) -> dict[str, float]:
    """Fitted temperatures of the temperature methods among ``fits`` (for the surface chart)."""
    marks = {}
    for name, fit in fits.items():
        value = fitted_params(fit).get("temperature_") if fit.ok else None
        if isinstance(value, (int, float)) and math.isfinite(value):
            marks[name] = float(value)
    return marks


# ----------------------------------------------------------------------------- bootstrap and tables

@st.cache_data(show_spinner=False, max_entries=8192, ttl="1h")
def bootstrap_samples(_probs: np.ndarray, _labels: np.ndarray, key: tuple, metric: str, n_boot: int,
                      seed: int) -> np.ndarray:
    """Resampled values of ``metric`` (:func:`calib_core.bootstrap_ci`); ``key`` names the arrays.

    The same ``seed`` draws the same rows for every array of the same
    length, so "before" and "after" samples are paired and their difference
    is the bootstrap distribution of the change.
    """
    return cc.bootstrap_ci(cc.metric_function(metric), _probs, _labels, n_boot=n_boot, seed=seed).samples


def bootstrap_seconds(ev: EvaluationSet, n_boot: int, n_methods: int) -> float:
    """Predicted time of the intervals: one evaluation of all metrics per resample and array."""
    return ev.metrics_seconds * n_boot * (n_methods + 1)


def intervals(fingerprint: str, ev: EvaluationSet, fits: Mapping[str, MethodFit], *, n_boot: int, seed: int,
              alpha: float = 0.05, on_progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Paired percentile bootstrap intervals of before, after and the change, per method and metric.

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``key``, ``before_low``, ``before_high``,
        ``after_low``, ``after_high``, ``delta_low``, ``delta_high``.
    """
    done_methods = [name for name, fit in fits.items() if fit.ok]
    total = (len(done_methods) + 1) * len(METRIC_KEYS)
    done = 0
    base_key = (fingerprint, ev.input, ev.protocol)
    before = {}
    for key in METRIC_KEYS:
        before[key] = bootstrap_samples(ev.before, ev.labels, (*base_key, BEFORE), key, n_boot, seed)
        done += 1
        if on_progress is not None:
            on_progress(done, total)
    quantiles = [alpha / 2, 1 - alpha / 2]
    rows = []
    for name in done_methods:
        for key in METRIC_KEYS:
            after = bootstrap_samples(fits[name].probs, ev.labels, (*base_key, name), key, n_boot, seed)
            b_low, b_high = np.quantile(before[key], quantiles)
            a_low, a_high = np.quantile(after, quantiles)
            d_low, d_high = np.quantile(after - before[key], quantiles)
            rows.append({"method": name, "key": key, "before_low": b_low, "before_high": b_high,
                         "after_low": a_low, "after_high": a_high, "delta_low": d_low, "delta_high": d_high})
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    return pd.DataFrame(rows, columns=["method", "key", "before_low", "before_high", "after_low", "after_high",
                                       "delta_low", "delta_high"])


def metric_label(key: str) -> str:
    """Display name of a metric key."""
    return LABELS.get(key, cc.get_metric(key).label)


def results_table(ev: EvaluationSet, fits: Mapping[str, MethodFit],
                  interval_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (method, metric): before, after, change, their intervals, the fit time.

    Interval columns are NaN without ``interval_table``.
    """
    rows = []
    for name, fit in fits.items():
        if not fit.ok:
            continue
        for key in METRIC_KEYS:
            before, after = ev.before_values[key], fit.after[key]
            rows.append({"method": name, "metric": metric_label(key), "key": key, "before": before, "after": after,
                         "delta": after - before, "fit_seconds": fit.fit_seconds})
    table = pd.DataFrame(rows, columns=["method", "metric", "key", "before", "after", "delta", "fit_seconds"])
    interval_columns = ["before_low", "before_high", "after_low", "after_high", "delta_low", "delta_high"]
    if interval_table is not None and len(interval_table):
        table = table.merge(interval_table, on=["method", "key"], how="left")
    else:
        for column in interval_columns:
            table[column] = np.nan
    return table[["method", "metric", "key", "before", "before_low", "before_high", "after", "after_low",
                  "after_high", "delta", "delta_low", "delta_high", "fit_seconds"]]


def best_methods(table: pd.DataFrame, *, exclude: Sequence[str] = (CAUTIONARY,)) -> dict[str, list[str]]:
    """Per metric key, the methods with the best value after recalibration (ties: all of them)."""
    eligible = table[~table["method"].isin(exclude)]
    best: dict[str, list[str]] = {}
    for key, rows in eligible.groupby("key", sort=False):
        values = rows["after"].to_numpy(dtype=float)
        if not np.isfinite(values).any():
            continue
        target = np.nanmax(values) if key in HIGHER_IS_BETTER else np.nanmin(values)
        best[key] = rows.loc[np.isclose(values, target, rtol=1e-12, atol=1e-15), "method"].tolist()
    return best


def best_note(methods: Sequence[str], *, cautionary: str = CAUTIONARY) -> str:
    """How the best method per metric is marked, and why the cautionary baseline never is (when shown)."""
    text = "Green: the best method per metric (lowest error; highest accuracy)."
    if cautionary in methods:
        text += (f" **{cautionary}** is never marked: it replaces each prediction by the label frequencies of its "
                 "predicted class, so it is calibrated by construction and wins calibration errors by design while "
                 "discarding every difference between rows of one predicted class (its Brier score and NLL show "
                 "the cost). It is a yardstick, not a candidate.")
    return text


def summary_matrix(ev: EvaluationSet, table: pd.DataFrame) -> pd.DataFrame:
    """Rows: no recalibration, then each method; columns: every metric after recalibration and Δ accuracy."""
    labels = [metric_label(key) for key in METRIC_KEYS]
    before_row = {metric_label(k): ev.before_values[k] for k in METRIC_KEYS}
    before_row["Δ accuracy"] = 0.0
    rows = {BEFORE: before_row}
    for name, part in table.groupby("method", sort=False):
        values = dict(zip(part["metric"], part["after"]))
        values["Δ accuracy"] = float(part.loc[part["key"] == "accuracy", "delta"].iloc[0])
        rows[name] = values
    return pd.DataFrame.from_dict(rows, orient="index", dtype=float)[[*labels, "Δ accuracy"]]


#: Highlight of the best method per metric in the summary table.
BEST_STYLE = "background-color: #c7e9c0; color: #00441b"
#: Shown for a value that is not available (no interval, a metric that could not be computed).
MISSING = "—"
#: Interval columns of :func:`results_table`, and the formats and headers of its display.
INTERVAL_COLUMNS = ["before_low", "before_high", "after_low", "after_high", "delta_low", "delta_high"]
DETAIL_FORMATS = {"before": "{:.4f}", "after": "{:.4f}", "delta": "{:+.4f}", "fit_seconds": "{:.2f}",
                  "before_low": "{:.4f}", "before_high": "{:.4f}", "after_low": "{:.4f}", "after_high": "{:.4f}",
                  "delta_low": "{:+.4f}", "delta_high": "{:+.4f}"}
DETAIL_LABELS = {"method": "Method", "metric": "Metric", "before": "Before", "before_low": "low",
                 "before_high": "high", "after": "After", "after_low": "low", "after_high": "high",
                 "delta": "Change", "delta_low": "low", "delta_high": "high", "fit_seconds": "Fit s"}


def styled_summary(matrix: pd.DataFrame, best: Mapping[str, Sequence[str]]) -> pd.io.formats.style.Styler:
    """:func:`summary_matrix` for ``st.dataframe``: the best per metric in green, dashes for gaps.

    ``best`` is :func:`best_methods` of the results table.
    """
    styler = matrix.style.format("{:.4f}", na_rep=MISSING).format("{:+.1%}", subset=["Δ accuracy"], na_rep=MISSING)
    for key, winners in best.items():
        label = metric_label(key)
        styler = styler.map(lambda _: BEST_STYLE, subset=pd.IndexSlice[winners, [label]])
    return styler


def styled_details(table: pd.DataFrame) -> pd.io.formats.style.Styler:
    """:func:`results_table` for ``st.dataframe``: interval columns only when some interval exists.

    A value that is not available (an interval the bootstrap could not give, a
    metric that could not be computed) shows :data:`MISSING`, never "None" or "nan".
    """
    details = table.drop(columns=["key"])
    if details[INTERVAL_COLUMNS].isna().all().all():
        details = details.drop(columns=INTERVAL_COLUMNS)
    formats = {column: fmt for column, fmt in DETAIL_FORMATS.items() if column in details.columns}
    return details.style.format(formats, na_rep=MISSING)


def _fmt(value: float) -> str:
    return f"{value:.3f}" if abs(value) >= 0.001 or value == 0 else f"{value:.1e}"


def _excludes_zero(table: pd.DataFrame, method: str, key: str) -> bool | None:
    row = table[(table["method"] == method) & (table["key"] == key)]
    low, high = float(row["delta_low"].iloc[0]), float(row["delta_high"].iloc[0])
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return high < 0 or low > 0


def verdict(model_name: str, table: pd.DataFrame, *, cautionary: str = CAUTIONARY) -> str:
    """Which fix helps, in one sentence (markdown; the model name as a :func:`literal`).

    The recommended method is, among the methods that lower the ECE without
    raising the Brier score (a proper score: calibration and sharpness
    together), the one with the lowest Brier score after recalibration. The
    cautionary baseline is never recommended. With intervals, the sentence
    says whether the Brier change is beyond bootstrap noise.
    """
    model_name = literal(model_name)
    if table.empty:
        return f"{model_name}: no method could be fitted, so there is no verdict."
    wide = table.pivot(index="method", columns="key", values="delta")
    after = table.pivot(index="method", columns="key", values="after")
    before = table.drop_duplicates("key").set_index("key")["before"]
    candidates = [m for m in wide.index if m != cautionary and wide.loc[m, "ece"] < 0 and wide.loc[m, "brier"] <= 0]
    if not candidates:
        return (f"{model_name}: no method lowers both the ECE and the Brier score on the evaluation rows; "
                "keep the model as it is, or collect more calibration rows and try again.")
    best = min(candidates, key=lambda m: (after.loc[m, "brier"], after.loc[m, "ece"]))
    accuracy_change = wide.loc[best, "accuracy"]
    accuracy_text = ("accuracy unchanged" if abs(accuracy_change) < 1e-12
                     else f"accuracy {accuracy_change:+.1%}")
    noise = _excludes_zero(table, best, "brier")
    noise_text = ("" if noise is None else "; the Brier improvement is beyond bootstrap noise" if noise
                  else "; but the Brier change is within bootstrap noise")
    return (f"{model_name}: **{best}** helps most: ECE {_fmt(before['ece'])} → {_fmt(after.loc[best, 'ece'])}, "
            f"Brier score {_fmt(before['brier'])} → {_fmt(after.loc[best, 'brier'])}, {accuracy_text}{noise_text}.")


def recalibrated_frame(predictions: Predictions, ev: EvaluationSet, fit: MethodFit) -> pd.DataFrame:
    """Recalibrated predictions of every row: ``label``, ``split``, one ``p_<class>`` column per class.

    Holdout and in-sample: the fitted map applied to every row; ``split`` says
    which rows it was fitted on (``calibration``), evaluated on (``test``),
    or neither (``unused``, e.g. ``train`` rows, or the test rows in-sample). Cross-fitting: the
    out-of-fold predictions, ``split`` = ``out-of-fold``.
    """
    names = list(predictions.class_names) or [str(k) for k in range(predictions.n_classes)]
    n_rows = predictions.n_samples
    if ev.cross_fitted:
        probs = fit.probs
        split = np.full(n_rows, "out-of-fold", dtype=object)
    else:
        x, _ = model_input(predictions)
        probs = Recalibrator.from_json(fit.params_json).predict_proba(x)
        split = np.full(n_rows, "unused", dtype=object)
        split[ev.fit_index] = "calibration"
        if not ev.protocol.in_sample:
            split[ev.eval_index] = "test"
    frame = pd.DataFrame({"label": predictions.labels, "split": split})
    columns = pd.DataFrame(probs, columns=[f"p_{name}" for name in names])
    return pd.concat([frame, columns], axis=1)


def predictions_csv(predictions: Predictions, ev: EvaluationSet, fit: MethodFit) -> bytes:
    """:func:`recalibrated_frame` as CSV bytes."""
    return cc.csv_bytes(recalibrated_frame(predictions, ev, fit), float_format="%.10g")


# ----------------------------------------------------------------------------- diagrams

@st.cache_data(show_spinner=False, max_entries=512, ttl="1h")
def reliability(_probs: np.ndarray, _labels: np.ndarray, key: tuple, n_bins: int, binning: str) -> pd.DataFrame:
    """``calib_core.reliability_table`` of an evaluation set; ``key`` names the arrays."""
    return cc.reliability_table(_probs, _labels, n_bins, binning)


@st.cache_data(show_spinner=False, max_entries=256, ttl="1h")
def simplex(_probs: np.ndarray, _labels: np.ndarray, key: tuple, n_bins: int) -> SimplexReliability:
    """``calib_core.simplex_reliability`` with the default three groups of classes."""
    groups = cc.default_groups(_probs.shape[1])
    return cc.simplex_reliability(_probs, _labels, groups=groups, n_bins=n_bins)


# ----------------------------------------------------------------------------- temperature surface

@dataclass(frozen=True)
class TemperatureSurface:
    """Metrics of ``softmax(z / T)`` against T (Nixon et al. 2019, Figure 1 right).

    Attributes
    ----------
    table : pandas.DataFrame
        ``temperature``, ``metric`` (display name), ``value``.
    minimisers : pandas.DataFrame
        ``metric``, ``temperature``, ``value``: each curve's lowest point on the grid.
    n_rows : int
        Rows of the curves.
    kde_rows : int
        Rows of the kernel estimate (a subset; 0 if it was not computed).
    failed : tuple of str
        Metrics left out because they were not finite at any temperature.
    at_edge : tuple of str
        Metrics whose lowest point is an end of the grid (the minimum may lie beyond it).
    """

    table: pd.DataFrame
    minimisers: pd.DataFrame
    n_rows: int
    kde_rows: int
    failed: tuple[str, ...]
    at_edge: tuple[str, ...] = ()


def _subset(n_rows: int, limit: int, seed: int) -> np.ndarray:
    if n_rows <= limit:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=limit, replace=False))


def _nice(value: float, up: bool) -> float:
    """The next 1-2-5 value at or above (``up``) or below ``value``."""
    exponent = math.floor(math.log10(value))
    steps = [m * 10.0**e for e in (exponent - 1, exponent, exponent + 1) for m in (1, 2, 5)]
    if up:
        return min(s for s in steps if s >= value * (1 - 1e-12))
    return max(s for s in steps if s <= value * (1 + 1e-12))


def surface_range(temperatures: Sequence[float] = ()) -> tuple[float, float]:
    """``[T_MIN, T_MAX]``, widened to twice any fitted temperature outside it (1-2-5 values)."""
    values = [float(t) for t in temperatures if math.isfinite(t) and t > 0]
    low = min([T_MIN, *[t / 2 for t in values]])
    high = max([T_MAX, *[t * 2 for t in values]])
    return _nice(low, up=False), _nice(high, up=True)


def kde_rows_for(n_rows: int, n_classes: int) -> int:
    """Rows of the kernel estimate: all, or as many as keep N^2 K under :data:`KDE_BUDGET`."""
    return int(min(n_rows, KDE_MAX_ROWS, math.isqrt(int(KDE_BUDGET / max(n_classes, 1)))))


def temperature_surface(predictions: Predictions, fingerprint: str, protocol: Protocol, *,
                        t_range: tuple[float, float] = (T_MIN, T_MAX), with_kde: bool = True,
                        seed: int = 0) -> TemperatureSurface:
    """NLL, ECE, ACE, SCE and (``with_kde``) CE_KL of ``softmax(z / T)`` on the evaluation rows.

    ``z`` are the logits (or log-probabilities). T runs over :data:`T_POINTS`
    log-spaced values in ``t_range`` (see :func:`surface_range`). At most :data:`SURFACE_MAX_ROWS`
    rows are used (seeded subset), and the kernel estimate
    (:func:`calib_core.kde_ce`, KL, bandwidth 0.01) uses :func:`kde_rows_for` of them.
    """
    return _temperature_surface(predictions, cache_key(predictions, fingerprint), protocol,
                                (float(t_range[0]), float(t_range[1])), bool(with_kde), int(seed))


@st.cache_data(show_spinner=False, max_entries=128, ttl="1h")
def _temperature_surface(_predictions: Predictions, key: str, protocol: Protocol, t_range: tuple[float, float],
                         with_kde: bool, seed: int) -> TemperatureSurface:
    fingerprint = key.rsplit("/", 1)[0]
    ev = evaluation_set(_predictions, fingerprint, protocol)
    rows = ev.eval_index[_subset(ev.eval_index.size, SURFACE_MAX_ROWS, seed)]
    scores = _log_scores(_predictions)[rows]
    labels = _predictions.labels[rows]
    n_kde = kde_rows_for(rows.size, scores.shape[1]) if with_kde else 0
    kde_pick = _subset(rows.size, n_kde, seed + 1) if n_kde >= 2 else None
    functions = {"NLL": cc.nll, "ECE": cc.ece, "ACE": cc.ace, "SCE": cc.sce}
    temperatures = np.geomspace(float(t_range[0]), float(t_range[1]), T_POINTS)
    records = []
    for temperature in temperatures:
        probs = cc.softmax(scores / temperature)
        for name, function in functions.items():
            records.append((temperature, name, float(function(probs, labels))))
        if kde_pick is not None:
            try:
                value = float(cc.kde_ce(probs[kde_pick], labels[kde_pick], "kl"))
            except cc.CalibrationInputError:
                value = np.nan
            records.append((temperature, "CE_KL (kernel)", value))
    table = pd.DataFrame(records, columns=["temperature", "metric", "value"])
    table.loc[~np.isfinite(table["value"]), "value"] = np.nan
    minimisers, failed, at_edge = [], [], []
    for name, part in table.groupby("metric", sort=False):
        if part["value"].notna().any():
            best = part.loc[part["value"].idxmin()]
            minimisers.append({"metric": name, "temperature": float(best["temperature"]),
                               "value": float(best["value"])})
            if best["temperature"] in (temperatures[0], temperatures[-1]):
                at_edge.append(name)
        else:
            failed.append(name)
    table = table[~table["metric"].isin(failed)].reset_index(drop=True)
    return TemperatureSurface(table, pd.DataFrame(minimisers, columns=["metric", "temperature", "value"]),
                              int(rows.size), int(n_kde if kde_pick is not None else 0), tuple(failed),
                              tuple(at_edge))


# ----------------------------------------------------------------------------- ranking under the 32 GCE variants

@dataclass(frozen=True)
class GceRanking:
    """Rank of every method under each of the 32 GCE variants (Nixon et al. 2019, Table 5).

    Attributes
    ----------
    values : pandas.DataFrame
        Index: methods (with :data:`BEFORE`); columns: variant 0-31; the GCE (15 bins).
    ranks : pandas.DataFrame
        Same shape; 1 = lowest error under that variant (ties share the lower rank).
    variants : pandas.DataFrame
        ``variant``, ``binning``, ``max_prob``, ``class_conditional``, ``threshold``, ``norm``, ``label``.
    correlation : ndarray of shape (32, 32)
        Spearman rank correlation between the methods' values under two variants.
    mean_spearman : float
        Mean over all pairs of variants with a defined correlation.
    n_rows : int
        Evaluation rows used.
    """

    values: pd.DataFrame
    ranks: pd.DataFrame
    variants: pd.DataFrame
    correlation: np.ndarray
    mean_spearman: float
    n_rows: int


def variant_settings(binning: str, max_prob: bool, class_conditional: bool, threshold: float, norm: str) -> str:
    """A GCE variant's settings in words, e.g. ``"uniform bins · all probabilities · per class · p > 0 · L1"``.

    ``p > t`` says which values are kept (:func:`calib_core.gce` drops ``v <= threshold``,
    so threshold 0 drops exact zeros).
    """
    return " · ".join([f"{binning} bins", "top label" if max_prob else "all probabilities",
                       "per class" if class_conditional else "pooled", f"p > {threshold:g}", norm.upper()])


def variant_note(ranking: GceRanking | None = None, ev: EvaluationSet | None = None) -> str:
    """Which heatmap columns carry a metric's name, and why Nixon et al.'s SCE and ACE columns do not (markdown).

    With ``ranking`` and ``ev`` (and the ranking on all evaluation rows), the
    uncalibrated values of variants 8 and 24 are set beside the SCE and ACE of
    the results table.
    """
    named = ", ".join(f"{v} = {label}" for v, (label, _, _) in NAMED_VARIANTS.items())
    paper = ", ".join(f"{v} {name}" for v, name in PAPER_NAMES.items())
    text = (f"Named columns equal the metric of that name exactly: {named}. Nixon et al. also call variants "
            f"{paper}; here they are labelled by their settings, because the general calibration error keeps "
            "only values above the threshold (threshold 0: exact zeros dropped) and weights each bin by its count, "
            "while the SCE keeps every value and the ACE averages its ranges unweighted.")
    # Only when the ranking used every evaluation row (above GCE_MAX_ROWS it uses a subset).
    if ranking is not None and ev is not None and BEFORE in ranking.values.index and \
            ranking.n_rows == ev.labels.size:
        v8, v24 = ranking.values.loc[BEFORE, 8], ranking.values.loc[BEFORE, 24]
        text += (f" Before recalibration here: variant 8 = {_fmt4(v8)} against SCE = {_fmt4(ev.before_values['sce'])}, "
                 f"variant 24 = {_fmt4(v24)} against ACE = {_fmt4(ev.before_values['ace'])}.")
    return text


def _fmt4(value: float) -> str:
    return f"{value:.4f}"


def variant_table() -> pd.DataFrame:
    """The 32 variants in Nixon et al.'s order (appendix C).

    Columns ``variant``, ``binning``, ``max_prob``, ``class_conditional``,
    ``threshold``, ``norm``, ``label`` (:func:`variant_settings`) and ``name``:
    a metric's name only for the variants of :data:`NAMED_VARIANTS`, which equal
    that metric exactly, else ``""``.
    """
    rows = []
    for index, (binning, max_prob, class_conditional, threshold, norm) in enumerate(GCE_VARIANTS):
        rows.append({"variant": index, "binning": binning, "max_prob": max_prob,
                     "class_conditional": class_conditional, "threshold": threshold, "norm": norm,
                     "label": variant_settings(binning, max_prob, class_conditional, threshold, norm),
                     "name": NAMED_VARIANTS[index][0] if index in NAMED_VARIANTS else ""})
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=128, ttl="1h")
def gce_ranking(_probs: Mapping[str, np.ndarray], _labels: np.ndarray, key: tuple, n_bins: int = 15,
                seed: int = 0) -> GceRanking:
    """Every method's :func:`calib_core.gce` under the 32 variants, ranks and rank correlations.

    ``_probs`` maps a method name (and :data:`BEFORE`) to its evaluation-row
    probabilities; ``key`` names them. At most :data:`GCE_MAX_ROWS` rows
    (the same seeded subset for every method).
    """
    names = list(_probs)
    n_rows = _labels.size
    pick = _subset(n_rows, GCE_MAX_ROWS, seed)
    labels = _labels[pick]
    values = np.empty((len(names), len(GCE_VARIANTS)))
    for i, name in enumerate(names):
        probs = np.asarray(_probs[name])[pick]
        for j, (binning, max_prob, class_conditional, threshold, norm) in enumerate(GCE_VARIANTS):
            values[i, j] = cc.gce(probs, labels, n_bins=n_bins, binning=binning, max_prob=max_prob,
                                  class_conditional=class_conditional, threshold=threshold, norm=norm)
    ranks = np.column_stack([stats.rankdata(values[:, j], method="min") for j in range(values.shape[1])])
    correlation = np.full((values.shape[1], values.shape[1]), np.nan)
    if len(names) >= 3:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a variant where every method ties has no defined correlation
            correlation = np.atleast_2d(stats.spearmanr(values, axis=0).statistic)
    upper = correlation[np.triu_indices(values.shape[1], k=1)]
    mean = float(np.nanmean(upper)) if np.isfinite(upper).any() else float("nan")
    columns = list(range(len(GCE_VARIANTS)))
    return GceRanking(pd.DataFrame(values, index=names, columns=columns),
                      pd.DataFrame(ranks.astype(int), index=names, columns=columns),
                      variant_table(), correlation, mean, int(pick.size))
