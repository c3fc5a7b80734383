"""Which recalibration method helps? Fit honestly, evaluate every metric, bootstrap the change, state a verdict.

The comparison the Recalibration page shows, as pure functions of arrays
(the page caches them and draws; :mod:`calib_core.recalibration.sweeps` holds
its temperature surface and the ranking under the 32 GCE variants).

1. **Protocol** (:class:`Protocol`, :func:`effective_protocol`,
   :func:`evaluation_set`): a method is fitted on one set of rows and judged
   on disjoint rows, from the file's ``split`` column (calibration / test), a
   stratified random split, or K-fold cross-fitting
   (:mod:`calib_core.recalibration.protocol`). Evaluating on the fitting rows
   happens only with ``Protocol.in_sample``, and the protocol sentence then
   says "IN-SAMPLE".
2. **Fits** (:func:`fit_method`): one method under one protocol, every
   metric of :data:`METRIC_KEYS` on the evaluation rows; failures are
   returned, not raised.
3. **Intervals** (:func:`intervals`): paired percentile bootstrap. "Before"
   and "after" resample the same rows (the same seed draws the same rows for
   arrays of one length), so ``after - before`` per resample is the bootstrap
   distribution of the change and has its own interval.
4. **Table and verdict** (:func:`results_table`, :func:`best_methods`,
   :func:`summary_matrix`, :func:`verdict`): among the methods that lower the
   ECE without raising the Brier score (a proper score: calibration and
   sharpness together), the one with the lowest Brier score. The cautionary
   baseline :class:`~calib_core.recalibration.AccuracyPreservingCalibratedMap`
   (Gruber & Buettner 2022, appendix E.1: calibrated by construction, no
   sharpness left within a predicted class) is never recommended nor marked best.

Which method is best depends on the metric: Nixon et al. (2019, Table 5)
show the ranking flipping between calibration measures, Popordanoska et al.
(2024, Table 2) find temperature scaling ahead on CE_KL but isotonic
regression ahead on CE_2^2; hence every metric, with intervals.

Model input: the logits when the file held them, else the probabilities
(``input="probs"``: methods that work on logits take ``log(probs + 1e-12)``,
:func:`calib_core.recalibration.log_probabilities`, scikit-learn's rule, so
exact zeros stay finite; the temperature surface uses the same logarithm).

Text returned here (the verdict, notes on thin classes) is Markdown; names
the caller passes in (model and class names) are inserted as given, so a
caller showing user-supplied names escapes them first.

Examples
--------
>>> import numpy as np
>>> from calib_core import softmax
>>> from calib_core.recalibration import compare
>>> rng = np.random.default_rng(0)
>>> labels = rng.integers(0, 3, 600)
>>> logits = 3 * (rng.normal(size=(600, 3)) + 1.5 * np.eye(3)[labels])
>>> ev = compare.evaluation_set(logits, softmax(logits), labels, compare.Protocol("random"), input="logits")
>>> fits = {m: compare.fit_method(m, logits, labels, ev) for m in ("Temperature scaling", "Isotonic regression")}
>>> table = compare.results_table(ev, fits, compare.intervals(ev, fits, n_boot=50, seed=0))
>>> compare.verdict("model", table)  # doctest: +NORMALIZE_WHITESPACE
'model: **Temperature scaling** helps most: ECE 0.153 → 0.070, Brier score 0.414 → 0.373, accuracy unchanged;
the Brier improvement is beyond bootstrap noise.'
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from calib_core.inference import bootstrap_ci
from calib_core.inference.bootstrap import resampled_metrics, weighted_metric
from calib_core.inference.intervals import interval_from_samples
from calib_core.metrics import get_metric, metric_function
from calib_core.metrics.registry import resolve_metrics
from calib_core.recalibration import RECALIBRATORS, AccuracyPreservingCalibratedMap, Recalibrator, log_probabilities
from calib_core.recalibration.hazards import ZeroHazard, zero_hazards
from calib_core.recalibration.protocol import (EVAL_SPLIT_VALUES, FIT_SPLIT_VALUES, RecalibrationReport,
                                               evaluate_recalibration, split_predictions, stratified_folds)
from calib_core._accel import mark_validated, marked_copy
from calib_core.validation import CalibrationInputError, check_probs, check_sample_weight

__all__ = [
    "BEFORE", "CAUTIONARY", "METRIC_FUNCTIONS", "METRIC_KEYS", "PROBABILITY_SCALE_KEYS", "SCHEMES",
    "EvaluationSet", "MethodFit", "Protocol",
    "best_methods", "bootstrap_samples", "bootstrap_seconds", "class_notes", "resampled_samples",
    "effective_protocol",
    "evaluation_set", "fit_method", "fitted_params", "fitted_temperatures", "intervals", "log_scores",
    "metric_label", "metric_values", "model_input", "recalibrated_frame", "results_table",
    "split_column_ready", "summary_matrix", "verdict", "ZeroHazard", "zero_hazards",
    "metric_functions",
]

#: Metrics of the results table (registry keys), in display order. The class-wise ECE with uniform
#: bins is the SCE (Nixon et al. 2019, eq. 2), so it appears once, labelled as both.
METRIC_KEYS = ("ece", "ace", "sce", "mce", "ks", "nll", "brier", "accuracy")
#: Each metric of :data:`METRIC_KEYS` as it declares its resampling (15 uniform bins for the binned ones).
METRIC_FUNCTIONS = MappingProxyType(resolve_metrics(METRIC_KEYS))
#: Display names that differ from the registry's.
LABELS = {"sce": "SCE = class-wise ECE"}
#: Metrics where a larger value is better (all others: smaller is better).
HIGHER_IS_BETTER = frozenset({"accuracy", "conf_accuracy", "conf_corp_dsc", "conf_brier_resolution", "auroc_correct",
                              "conf_auroc"})
#: Calibration errors on ECE's 0-1 scale drawn together in the change chart (the MCE, a worst case
#: over bins, has intervals ten times wider and would flatten the others; it stays in the tables).
PROBABILITY_SCALE_KEYS = ("ece", "ace", "sce", "ks")
#: The cautionary baseline (Gruber & Buettner appendix E.1): calibrated by construction, no sharpness left.
CAUTIONARY = AccuracyPreservingCalibratedMap.display_name
#: Row label of the uncalibrated predictions in tables and charts.
BEFORE = "No recalibration"
#: How the rows are split into fitting and evaluation rows.
SCHEMES = {
    "split_column": "the file's split column (fit on calibration, evaluate on test)",
    "random": "stratified random split",
    "cross_fit": "K-fold cross-fitting",
}
#: Columns of :func:`intervals` beyond ``method`` and ``key``.
INTERVAL_COLUMNS = ["before_low", "before_high", "after_low", "after_high", "delta_low", "delta_high"]

ProgressCallback = Callable[[int, int], None]
#: ``samples(name, probs)``: resampled values of every metric on ``probs`` (see :func:`intervals`).
Sampler = Callable[[str, np.ndarray], Mapping[str, np.ndarray]]


# ----------------------------------------------------------------------------- protocol

@dataclass(frozen=True)
class Protocol:
    """How rows are split for fitting and evaluation (hashable: a cache key).

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
        Evaluate on the fitting rows (optimistic; for comparison only).
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


def split_column_ready(split_names: Sequence[object]) -> bool:
    """Whether a ``split`` column with these distinct values marks both calibration rows and test rows.

    Parameters
    ----------
    split_names : sequence
        Distinct values of the column (empty without one); compared
        case-insensitively with
        :data:`~calib_core.recalibration.protocol.FIT_SPLIT_VALUES` and
        :data:`~calib_core.recalibration.protocol.EVAL_SPLIT_VALUES`.
    """
    values = {str(v).strip().lower() for v in split_names}
    return bool(values & set(FIT_SPLIT_VALUES)) and bool(values & set(EVAL_SPLIT_VALUES))


def effective_protocol(protocol: Protocol, *, split_ready: bool) -> Protocol:
    """The protocol used for one model, normalised (:meth:`Protocol.normalised`).

    A model whose ``split`` column cannot be used (``split_ready`` false:
    none, or no calibration and test rows to tell apart) gets a stratified
    random split with the protocol's fraction and seed instead of
    ``"split_column"``; the scheme of the result then differs from ``protocol``'s.
    """
    if protocol.scheme == "split_column" and not split_ready:
        return replace(protocol, scheme="random").normalised()
    return protocol.normalised()


def model_input(probs: np.ndarray, logits: np.ndarray | None) -> tuple[np.ndarray, str]:
    """``(x, input)``: the logits when there are any, else the probabilities."""
    if logits is not None:
        return logits, "logits"
    return probs, "probs"


def log_scores(probs: np.ndarray, logits: np.ndarray | None) -> np.ndarray:
    """The scores temperature scaling divides by T: the logits, or ``log(probs + 1e-12)``.

    The same logarithm as :class:`calib_core.TemperatureScaling` with ``input="probs"``
    (:func:`calib_core.recalibration.log_probabilities`), so a fitted temperature
    marked on the surface is a temperature of these very curves.
    """
    if logits is not None:
        return np.asarray(logits, dtype=np.float64)
    return log_probabilities(probs)


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
        Their probabilities before recalibration (read-only, checked once).
    before_values : dict of str to float
        :data:`METRIC_KEYS` on them.
    metrics_seconds : float
        Time of one evaluation of every metric (predicts the bootstrap's cost).
    description : str or None
        How the split was made (``None`` for cross-fitting on all rows).
    input : {"logits", "probs"}
    notes : tuple of str
        Warnings about classes with too few rows (:func:`class_notes`).
    x_fit : ndarray of shape (N_fit, K) or None
        What the methods are fitted on: the model input (:func:`model_input`)
        of the fitting rows, read-only, shared by every method (``None``
        under cross-fitting, which fits on folds of every row).
    metric_keys : tuple of str
        The registry keys every fit, interval and table of this set reports:
        :data:`METRIC_KEYS`, or a confidence model's entries
        (:data:`calib_core.recalibration.confidence.CONFIDENCE_METRIC_KEYS`).
    sample_weight : ndarray of shape (M,) or None
        Weights of the evaluated rows (read-only): every metric, interval and
        paired difference of the comparison weights them (``None``: rows count once).
    fit_sample_weight : ndarray of shape (N_fit,) or None
        Weights of the fitting rows, which every fit takes (under
        cross-fitting: of every row, each fold fitting with its rows' weights).
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
    x_fit: np.ndarray | None = None
    metric_keys: tuple[str, ...] = METRIC_KEYS
    sample_weight: np.ndarray | None = None
    fit_sample_weight: np.ndarray | None = None

    @property
    def cross_fitted(self) -> bool:
        return self.protocol.scheme == "cross_fit" and not self.protocol.in_sample


def metric_values(probs: np.ndarray, labels: np.ndarray, keys: Sequence[str] = METRIC_KEYS, *,
                  sample_weight: np.ndarray | None = None) -> dict[str, float]:
    """Every metric of ``keys`` (default :data:`METRIC_KEYS`, 15 uniform bins for the binned ones), each weighting
    the rows by ``sample_weight`` when given (as the registry metric declares)."""
    if sample_weight is None:
        return {key: float(metric(probs, labels)) for key, metric in metric_functions(keys).items()}
    return {key: weighted_metric(metric)(probs, labels, sample_weight) for key, metric in metric_functions(keys).items()}


def metric_functions(keys: Sequence[str]) -> Mapping[str, Callable]:
    """The declared metric functions of ``keys`` (:data:`METRIC_FUNCTIONS` for :data:`METRIC_KEYS`)."""
    return METRIC_FUNCTIONS if tuple(keys) == METRIC_KEYS else resolve_metrics(keys)


#: Rows of the untimed first evaluation of every metric (:func:`_first_rows`).
WARM_UP_ROWS = 64


def _first_rows(probs: np.ndarray, labels: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The first :data:`WARM_UP_ROWS` rows, frozen and marked as ``probs`` and ``labels`` are.

    :attr:`EvaluationSet.metrics_seconds` predicts the bootstrap's time, so it
    must not include what only a process's first call pays (loading the
    compiled kernels: 0.17 s, which made a 450-row demo's 200 resamples look
    like a minute and skipped them). The metrics are evaluated on these rows
    first, along the same code paths, and only the second evaluation is timed.
    """
    return marked_copy(probs[:WARM_UP_ROWS]), marked_copy(labels[:WARM_UP_ROWS], n_classes)


def _rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def class_notes(labels: np.ndarray, fit_index: np.ndarray, eval_index: np.ndarray, protocol: Protocol,
                class_names: Sequence[str]) -> tuple[str, ...]:
    """Warnings about classes with too few fitting rows, or none among the evaluation rows (Markdown).

    Parameters
    ----------
    labels : ndarray of shape (N,)
        Labels of every row.
    fit_index, eval_index : ndarray of int
        Rows fitted on and evaluated on.
    protocol : Protocol
    class_names : sequence of str
        One display name per class (K of them), inserted as given.
    """
    n_classes = len(class_names)
    fit_counts = np.bincount(labels[fit_index], minlength=n_classes)
    eval_counts = np.bincount(labels[eval_index], minlength=n_classes)
    notes = []
    if protocol.scheme == "cross_fit" and not protocol.in_sample:
        thin = np.flatnonzero(fit_counts < protocol.n_folds)
        if thin.size:
            shown = ", ".join(f"{class_names[k]} ({_rows(fit_counts[k])})" for k in thin[:6])
            notes.append(f"Class {shown} has fewer rows than the {protocol.n_folds} folds: some folds fit without "
                         "it. Use fewer folds, or read its numbers with care.")
        return tuple(notes)
    thin = np.flatnonzero(fit_counts < 2)
    if thin.size:
        shown = ", ".join(f"{class_names[k]} ({_rows(fit_counts[k])})" for k in thin[:6])
        notes.append(f"Too few fitting rows of class {shown}: the maps learn almost nothing about "
                     "it. Give the fitting part more rows (a smaller test fraction) or use cross-fitting.")
    missing = np.flatnonzero(eval_counts == 0)
    if missing.size and not protocol.in_sample:
        shown = ", ".join(class_names[k] for k in missing[:6])
        notes.append(f"Class {shown} does not occur among the evaluation rows: the metrics see it only as a "
                     "wrong answer. Use a larger test fraction or cross-fitting.")
    return tuple(notes)


def evaluation_set(x: np.ndarray, probs: np.ndarray, labels: np.ndarray, protocol: Protocol, *,
                   input: str = "probs", split: ArrayLike | None = None,
                   class_names: Sequence[str] | None = None,
                   metrics: Sequence[str] = METRIC_KEYS,
                   sample_weight: ArrayLike | None = None) -> EvaluationSet:
    """The fitting and evaluation rows of ``protocol``, and every metric before recalibration.

    Parameters
    ----------
    x : ndarray of shape (N, K)
        What the methods receive (:func:`model_input`).
    probs : ndarray of shape (N, K)
        The model's probabilities.
    labels : ndarray of shape (N,)
    protocol : Protocol
        Normalised (:func:`effective_protocol`).
    input : {"logits", "probs"}
        What ``x`` holds.
    split : array-like of shape (N,), optional
        The file's split column (used by ``scheme="split_column"`` only).
    class_names : sequence of str, optional
        Display names of the classes in :func:`class_notes` (default: the indices).
    metrics : sequence of str
        Registry keys of every number of the comparison (:attr:`EvaluationSet.metric_keys`).
    sample_weight : array_like of shape (N,), optional
        Every row's weight (non-negative; integer weights count a row that
        many times): the fitting rows' weights go to every fit, the
        evaluation rows' to every metric and bootstrap resample
        (:attr:`EvaluationSet.sample_weight`). The split and the folds are
        those of the unweighted rows.

    Raises
    ------
    CalibrationInputError
        When the protocol cannot split the rows (an unknown scheme, too few
        rows of a class for the folds, no calibration or test rows), or
        invalid weights (the evaluation rows' or the fitting rows' summing to 0).
    """
    n_rows = labels.size
    weights = check_sample_weight(sample_weight, n_rows)
    n_classes = probs.shape[1]
    description: str | None
    if protocol.scheme in ("split_column", "random"):
        made = split_predictions(x, labels, split=split if protocol.scheme == "split_column" else None,
                                 test_fraction=protocol.test_fraction, seed=protocol.seed)
        fit_index = made.fit_index
        eval_index = made.fit_index if protocol.in_sample else made.eval_index
        description = made.description
        if protocol.in_sample:
            description += "; only the fitting rows are used here"
    elif protocol.scheme == "cross_fit":
        fit_index = eval_index = np.arange(n_rows)
        description = None
        if not protocol.in_sample:
            stratified_folds(labels, protocol.n_folds, seed=protocol.seed, n_classes=n_classes)
    else:
        raise CalibrationInputError(f"unknown protocol scheme {protocol.scheme!r}; choose one of "
                                    f"{', '.join(SCHEMES)}.")
    # Copies of the evaluation rows of our own, frozen and marked as checked: every metric of every method
    # reads them without scanning them again (and, for probabilities, they are the methods' evaluation input).
    before = marked_copy(probs[eval_index], dtype=np.float64)
    eval_labels = marked_copy(labels[eval_index], n_classes, dtype=np.intp)
    eval_weights, fit_weights = _part_weights(weights, eval_index, fit_index)
    metrics = tuple(metrics)
    metric_values(*_first_rows(before, eval_labels, n_classes), metrics)  # first calls load compiled code: not timed
    if eval_weights is not None:  # the weighted paths too (the bootstrap's time is predicted from them)
        metric_values(*_first_rows(before, eval_labels, n_classes), metrics,
                      sample_weight=np.ones(min(WARM_UP_ROWS, eval_labels.size)))
    start = time.perf_counter()
    before_values = metric_values(before, eval_labels, metrics, sample_weight=eval_weights)
    seconds = time.perf_counter() - start
    names = list(class_names) if class_names is not None else [str(k) for k in range(n_classes)]
    notes = class_notes(labels, fit_index, eval_index, protocol, names)
    x_fit = None
    if protocol.scheme != "cross_fit" or protocol.in_sample:
        # One copy of the fitting rows for every method (each took its own, 200 MB at 25,000 x 1,000).
        x_fit = np.array(x[fit_index], dtype=np.float64, order="C")
        x_fit.flags.writeable = False
        if input == "probs":
            x_fit = mark_validated(check_probs(x_fit, name="x_fit"))
    return EvaluationSet(protocol, fit_index, eval_index, eval_labels, before, before_values, seconds,
                         description, input, notes, x_fit, metrics, eval_weights, fit_weights)


def _part_weights(weights: np.ndarray | None, eval_index: np.ndarray,
                  fit_index: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The evaluation and the fitting rows' weights, read-only; a part of weight 0 is refused (nothing to fit)."""
    if weights is None:
        return None, None
    parts = []
    for index, rows in ((eval_index, "evaluation"), (fit_index, "fitting")):
        part = weights[index]
        if not part.sum() > 0:
            raise CalibrationInputError(f"`sample_weight` is 0 on every {rows} row: the {rows} rows need a "
                                        "positive weight (choose another split, seed or weight column).")
        part.flags.writeable = False
        parts.append(part)
    if np.array_equal(eval_index, fit_index):
        return parts[0], parts[0]
    return parts[0], parts[1]


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
        :attr:`EvaluationSet.metric_keys` on the recalibrated evaluation rows.
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


def _evaluate(method: str, x: np.ndarray, labels: np.ndarray, ev: EvaluationSet) -> RecalibrationReport:
    protocol = ev.protocol
    methods = {method: RECALIBRATORS[method]()}
    common = dict(input=ev.input, metrics=list(ev.metric_keys), split_description=ev.description,
                  before_values=ev.before_values, sample_weight=ev.fit_sample_weight)
    if protocol.scheme == "cross_fit":
        if protocol.in_sample:
            return evaluate_recalibration(methods, x, labels, allow_in_sample=True, **common)
        return evaluate_recalibration(methods, x, labels, n_folds=protocol.n_folds, seed=protocol.seed, **common)
    x_fit = ev.x_fit if ev.x_fit is not None else x[ev.fit_index]
    y_fit = labels[ev.fit_index]
    if protocol.in_sample:
        return evaluate_recalibration(methods, x_fit, y_fit, allow_in_sample=True, **common)
    # Probabilities: the evaluation input is ev.before itself (checked once, no copy per method).
    x_eval = ev.before if ev.input == "probs" else x[ev.eval_index]
    return evaluate_recalibration(methods, x_fit, y_fit, x_eval, ev.labels, eval_sample_weight=ev.sample_weight,
                                  **common)


def fit_method(method: str, x: np.ndarray, labels: np.ndarray, ev: EvaluationSet) -> MethodFit:
    """Fit ``method`` on the fitting rows of ``ev`` and evaluate it on its evaluation rows.

    Failures are returned (``ok=False`` with a message), not raised: an
    unknown method or an unsuitable input (``severity="warning"``), or any
    other exception inside the method (``severity="error"``).

    Parameters
    ----------
    method : str
        A key of :data:`calib_core.RECALIBRATORS`.
    x : ndarray of shape (N, K)
        Every row's model input (:func:`model_input`), as given to :func:`evaluation_set`.
    labels : ndarray of shape (N,)
        Every row's label.
    ev : EvaluationSet
    """
    if method not in RECALIBRATORS:
        return MethodFit(method, False, "warning", f"unknown method {method!r}; known: {', '.join(RECALIBRATORS)}.",
                         "", 0.0, {}, None, None)
    try:
        report = _evaluate(method, x, labels, ev)
    except CalibrationInputError as exc:
        return MethodFit(method, False, "warning", str(exc), "", 0.0, {}, None, None)
    except Exception as exc:  # a numerical failure inside a method must not end the comparison
        return MethodFit(method, False, "error", f"{type(exc).__name__}: {exc}", "", 0.0, {}, None, None)
    rows = report.table
    after = dict(zip(rows["metric_key"], rows["after"].astype(float)))
    model = report.models.get(method)
    return MethodFit(method, True, "", "", report.protocol, float(rows["fit_seconds"].iloc[0]), after,
                     np.ascontiguousarray(report.after[method]), model.to_json() if model is not None else None)


def fitted_params(fit: MethodFit) -> dict:
    """The fitted parameters of a fit's JSON document (``{}`` without one)."""
    if not fit.params_json:
        return {}
    return json.loads(fit.params_json).get("fitted") or {}


def fitted_temperatures(fits: Mapping[str, MethodFit]) -> dict[str, float]:
    """Fitted temperatures of the temperature methods among ``fits`` (marks on the temperature surface)."""
    marks = {}
    for name, fit in fits.items():
        value = fitted_params(fit).get("temperature_") if fit.ok else None
        if isinstance(value, (int, float)) and math.isfinite(value):
            marks[name] = float(value)
    return marks


def unconverged_fits(fits: Mapping[str, MethodFit]) -> dict[str, int]:
    """The fitted methods among ``fits`` whose optimiser stopped at its iteration cap: name -> iterations.

    Matrix and Dirichlet scaling leave their diagonal free; on near-separable
    fitting rows the objective is flat along it and L-BFGS-B stops at its cap
    (``converged_`` False). Such a map is where the optimiser stopped, and the
    rounding of the machine's BLAS moves it (up to 0.15 in probability seen
    between two CPUs on the bundled wine demo), so the page says so.
    """
    out = {}
    for name, fit in fits.items():
        params = fitted_params(fit) if fit.ok else {}
        if params.get("converged_") is False:
            out[name] = int(params.get("n_iter_", 0))
    return out


def recalibrated_frame(x: np.ndarray, labels: np.ndarray, ev: EvaluationSet, fit: MethodFit, *,
                       class_names: Sequence[str] | None = None) -> pd.DataFrame:
    """Recalibrated predictions of every row: ``label``, ``split``, one ``p_<class>`` column per class.

    Holdout and in-sample: the fitted map applied to every row of ``x``;
    ``split`` says which rows it was fitted on (``calibration``), evaluated
    on (``test``), or neither (``unused``, e.g. ``train`` rows, or the test
    rows in-sample). Cross-fitting: the out-of-fold predictions, ``split`` =
    ``out-of-fold``. ``class_names`` name the columns (default: the indices).
    """
    n_rows = labels.size
    if ev.cross_fitted:
        probs = fit.probs
        split = np.full(n_rows, "out-of-fold", dtype=object)
    else:
        probs = Recalibrator.from_json(fit.params_json).predict_proba(x)
        split = np.full(n_rows, "unused", dtype=object)
        split[ev.fit_index] = "calibration"
        if not ev.protocol.in_sample:
            split[ev.eval_index] = "test"
    names = list(class_names) if class_names else [str(k) for k in range(probs.shape[1])]
    frame = pd.DataFrame({"label": labels, "split": split})
    columns = pd.DataFrame(probs, columns=[f"p_{name}" for name in names])
    return pd.concat([frame, columns], axis=1)


# ----------------------------------------------------------------------------- bootstrap

def bootstrap_samples(probs: np.ndarray, labels: np.ndarray, metric: str, n_boot: int, seed: int, *,
                      sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Resampled values of ``metric`` (:func:`calib_core.bootstrap_ci`, weighted by ``sample_weight`` when given).

    The same ``seed`` draws the same rows for every array of the same
    length, so "before" and "after" samples are paired and their difference
    is the bootstrap distribution of the change. :func:`calib_core.inference.bootstrap.resampled_metrics`
    of :data:`METRIC_FUNCTIONS` gives every metric of the page at once.
    """
    return bootstrap_ci(metric_function(metric), probs, labels, n_boot=n_boot, seed=seed,
                        sample_weight=sample_weight).samples


#: Seconds of :func:`~calib_core.inference.bootstrap.resampled_metrics` of :data:`METRIC_FUNCTIONS` per resample, as a share of one evaluation of every metric
#: (:attr:`EvaluationSet.metrics_seconds`, on checked rows, after a first untimed call): measured
#: 0.05-0.15 from 900 x 10 to 50,000 x 10 and about 0.05 at 10,000-25,000 x 1,000 (the resamples share
#: the per-row work); the largest is used, so the prediction errs long.
SAMPLE_COST_RATIO = 0.15


#: The same share for weighted rows: the weighted bootstrap evaluates every metric on each materialised
#: resample (:func:`~calib_core.inference.bootstrap.resampled_metrics` with ``sample_weight``): measured 1.2
#: at 4,000 x 10 and 2.0 at 2,000 x 100 (the drawn rows are copied); the larger, so the prediction errs long.
WEIGHTED_SAMPLE_COST_RATIO = 2.0


def bootstrap_seconds(ev: EvaluationSet, n_boot: int, n_methods: int) -> float:
    """Predicted time of :func:`intervals`: the resamples of every array (before and each method)."""
    ratio = SAMPLE_COST_RATIO if ev.sample_weight is None else WEIGHTED_SAMPLE_COST_RATIO
    return ratio * ev.metrics_seconds * n_boot * (n_methods + 1)


def intervals(ev: EvaluationSet, fits: Mapping[str, MethodFit], *, n_boot: int, seed: int, alpha: float = 0.05,
              on_progress: ProgressCallback | None = None, samples: Sampler | None = None) -> pd.DataFrame:
    """Paired bootstrap intervals of before, after and the change, per method and metric.

    Every array is resampled with the same ``seed``, so resample ``b`` of
    "before" and of each method's "after" holds the same rows, and
    ``after_b - before_b`` are the resampled changes. Weighted evaluation
    rows (:attr:`EvaluationSet.sample_weight`) are resampled by the shared
    engine's weighted bootstrap (each drawn row carries its weight, so the
    resamples centre on the weighted estimate), the same rows for every array. Each interval is made
    the way the metric's registry entry declares, as on the Metrics page
    (:func:`calib_core.inference.intervals.interval_from_samples`): the
    percentile interval for the NLL, the Brier score and the accuracy; for
    the binned errors and the KS error, ``estimate +- z * se`` with the
    bootstrap standard error (their resamples are biased upwards, and a
    percentile interval of a class-wise error at 300 classes lay wholly above
    its estimate); the change's low end is not cut at 0.

    Parameters
    ----------
    ev : EvaluationSet
    fits : mapping of str to MethodFit
        Failed fits are skipped.
    n_boot, seed : int
        Resamples and their seed.
    alpha : float
        ``1 - alpha`` intervals.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each array (before, then each method).
    samples : callable, optional
        ``samples(name, probs)`` -> ``{metric key: resampled values}`` for
        every key of ``ev.metric_keys`` (``name`` is :data:`BEFORE` or the
        method); default :func:`calib_core.inference.bootstrap.resampled_metrics`
        of those metrics on ``ev.labels`` with ``n_boot``, ``seed`` and
        ``ev.sample_weight`` (:func:`resampled_samples`; a caller may pass a cached one).

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``key``, ``before_low``, ``before_high``,
        ``after_low``, ``after_high``, ``delta_low``, ``delta_high``.
    """
    if samples is None:
        def samples(name: str, probs: np.ndarray) -> dict[str, np.ndarray]:
            return resampled_samples(ev, probs, n_boot=n_boot, seed=seed)
    done_methods = [name for name, fit in fits.items() if fit.ok]
    total = len(done_methods) + 1
    before = samples(BEFORE, ev.before)
    if on_progress is not None:
        on_progress(1, total)
    rows = []
    for done, name in enumerate(done_methods, start=2):
        after_samples = samples(name, fits[name].probs)
        for key in ev.metric_keys:
            spec = get_metric(key)
            estimate_before, estimate_after = ev.before_values[key], fits[name].after[key]
            after = after_samples[key]
            b_low, b_high = interval_from_samples(spec.interval, estimate_before, before[key], alpha,
                                                  signed=spec.signed)
            a_low, a_high = interval_from_samples(spec.interval, estimate_after, after, alpha, signed=spec.signed)
            d_low, d_high = interval_from_samples(spec.interval, estimate_after - estimate_before,
                                                  after - before[key], alpha, signed=True)
            rows.append({"method": name, "key": key, "before_low": b_low, "before_high": b_high,
                         "after_low": a_low, "after_high": a_high, "delta_low": d_low, "delta_high": d_high})
        if on_progress is not None:
            on_progress(done, total)
    return pd.DataFrame(rows, columns=["method", "key", *INTERVAL_COLUMNS])


def resampled_samples(ev: EvaluationSet, probs: np.ndarray, *, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Every metric of ``ev.metric_keys`` on ``n_boot`` resamples of ``probs`` (the evaluation rows of ``ev``).

    :func:`calib_core.inference.bootstrap.resampled_metrics` with ``ev.labels``
    and ``ev.sample_weight``: the one sampler of the intervals and the paired
    differences, so "before" and every method's "after" are resampled alike.
    """
    return resampled_metrics(metric_functions(ev.metric_keys), probs, ev.labels, n_boot=n_boot, seed=seed,
                             sample_weight=ev.sample_weight)


# ----------------------------------------------------------------------------- tables and verdict

def metric_label(key: str) -> str:
    """Display name of a metric key."""
    return LABELS.get(key, get_metric(key).label)


def results_table(ev: EvaluationSet, fits: Mapping[str, MethodFit],
                  interval_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (method, metric): before, after, change, their intervals, the fit time.

    Failed fits are left out. Interval columns (:data:`INTERVAL_COLUMNS`) are
    NaN without ``interval_table`` (:func:`intervals`).
    """
    rows = []
    for name, fit in fits.items():
        if not fit.ok:
            continue
        for key in ev.metric_keys:
            before, after = ev.before_values[key], fit.after[key]
            rows.append({"method": name, "metric": metric_label(key), "key": key, "before": before, "after": after,
                         "delta": after - before, "fit_seconds": fit.fit_seconds})
    table = pd.DataFrame(rows, columns=["method", "metric", "key", "before", "after", "delta", "fit_seconds"])
    if interval_table is not None and len(interval_table):
        table = table.merge(interval_table, on=["method", "key"], how="left")
    else:
        for column in INTERVAL_COLUMNS:
            table[column] = np.nan
    return table[["method", "metric", "key", "before", "before_low", "before_high", "after", "after_low",
                  "after_high", "delta", "delta_low", "delta_high", "fit_seconds"]]


def best_methods(table: pd.DataFrame, *, exclude: Sequence[str] = (CAUTIONARY,)) -> dict[str, list[str]]:
    """Per metric key, the methods with the best value after recalibration (ties: all of them).

    Best is the lowest value, or the highest for :data:`HIGHER_IS_BETTER`;
    the methods in ``exclude`` (the cautionary baseline) are never best.
    """
    eligible = table[~table["method"].isin(exclude)]
    best: dict[str, list[str]] = {}
    for key, rows in eligible.groupby("key", sort=False):
        values = rows["after"].to_numpy(dtype=float)
        if not np.isfinite(values).any():
            continue
        target = np.nanmax(values) if key in HIGHER_IS_BETTER else np.nanmin(values)
        best[key] = rows.loc[np.isclose(values, target, rtol=1e-12, atol=1e-15), "method"].tolist()
    return best


def summary_matrix(ev: EvaluationSet, table: pd.DataFrame) -> pd.DataFrame:
    """Rows: no recalibration (:data:`BEFORE`), then each method; columns: every metric after and Δ accuracy
    (no Δ accuracy for a set without accuracy: a confidence model's answers do not change)."""
    labels = [metric_label(key) for key in ev.metric_keys]
    accuracy = "accuracy" in ev.metric_keys
    before_row = {metric_label(k): ev.before_values[k] for k in ev.metric_keys}
    if accuracy:
        before_row["Δ accuracy"] = 0.0
    rows = {BEFORE: before_row}
    for name, part in table.groupby("method", sort=False):
        values = dict(zip(part["metric"], part["after"]))
        if accuracy:
            values["Δ accuracy"] = float(part.loc[part["key"] == "accuracy", "delta"].iloc[0])
        rows[name] = values
    return pd.DataFrame.from_dict(rows, orient="index", dtype=float)[[*labels, *(["Δ accuracy"] if accuracy else [])]]



def _fmt(value: float) -> str:
    return f"{value:.3f}" if abs(value) >= 0.001 or value == 0 else f"{value:.1e}"


def _excludes_zero(table: pd.DataFrame, method: str, key: str) -> bool | None:
    row = table[(table["method"] == method) & (table["key"] == key)]
    low, high = float(row["delta_low"].iloc[0]), float(row["delta_high"].iloc[0])
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return high < 0 or low > 0


def verdict(model_name: str, table: pd.DataFrame, *, cautionary: str = CAUTIONARY) -> str:
    """Which fix helps, in one sentence (Markdown): the ``sentence`` of
    :func:`calib_core.recalibration.recommendation.recommend`.

    Parameters
    ----------
    model_name : str
        Inserted as given (escape a user-supplied name first).
    table : pandas.DataFrame
        :func:`results_table`.
    cautionary : str
        The method never recommended.
    """
    from calib_core.recalibration.recommendation import recommend  # it builds on this module

    return recommend(table, cautionary=cautionary).sentence(model_name)
