"""The Recalibration page's calls into :mod:`calib_core.recalibration.compare`, cached, and its table styles.

The science (protocols, fits, paired bootstrap intervals, the results table,
the verdict, the temperature surface, the ranking under the 32 GCE variants)
lives in :mod:`calib_core.recalibration.compare` and
:mod:`calib_core.recalibration.sweeps`; this module only caches it and
formats it.

Same pattern as :mod:`studio.compute`: a model's predictions are passed as
``_predictions`` (not hashed) together with its ``fingerprint``; the
fingerprint and the small, hashable settings (a :class:`Protocol`, a method
name) form the cache key. A fit is cached by (fingerprint, method,
protocol), so adding a method to the selection fits only that method.

User-supplied strings (model names, class names, split values) enter the
Markdown this module returns only through :func:`studio.text.literal`, so they are shown
as typed.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core.inference.bootstrap import resampled_metrics
from calib_core.io import Predictions
from calib_core.metrics.simplex import SimplexReliability
from calib_core.recalibration import compare, defaults, recommendation, sweeps
from calib_core.recalibration import confidence as confidence_maps
from calib_core.recalibration.compare import BEFORE, CAUTIONARY, EvaluationSet, MethodFit, Protocol
from calib_core.recalibration.defaults import DEFAULT_METHODS
from calib_core.recalibration.recommendation import PairedDifference
from calib_core.recalibration.sweeps import GceRanking, TemperatureSurface
from studio.memory import RESULT_TTL_SECONDS, ResultStore
from studio.text import literal

#: Bootstrap resamples offered (0: no intervals).
BOOT_CHOICES = (0, 50, 100, 200, 500, 1000)
#: Above this predicted time (seconds, per model) the page skips the bootstrap and says why.
BOOT_BUDGET_SECONDS = 60.0

ProgressCallback = Callable[[str, str, int, int], None]


# ----------------------------------------------------------------------------- the default set

def largest_class_count(models: Sequence) -> int:
    """The most classes among ``models`` (studio.state.ModelView): the K of the default-set rule."""
    return max((view.predictions.n_classes for view in models), default=2)


def default_methods(models: Sequence) -> list[str]:
    """Methods selected on a first visit: :data:`DEFAULT_METHODS` less those above their class-count limit.

    :func:`calib_core.recalibration.defaults.default_methods` at the largest K among ``models``; when every model
    is a confidence model, :data:`~calib_core.recalibration.confidence.DEFAULT_CONFIDENCE_METHODS`.
    """
    if models and all(is_confidence(view.predictions) for view in models):
        return list(confidence_maps.DEFAULT_CONFIDENCE_METHODS)
    return list(defaults.default_methods(largest_class_count(models), DEFAULT_METHODS))


def is_confidence(predictions: Predictions) -> bool:
    """Whether a model is a confidence model (recalibrated as a map of its stated confidence)."""
    return predictions.kind == "confidence"


def methods_for(predictions: Predictions, methods: Sequence[str]) -> list[str]:
    """The chosen methods fitted on this model: for a confidence model those that map a stated confidence
    (:data:`~calib_core.recalibration.confidence.CONFIDENCE_METHODS`), else all of them."""
    return list(confidence_maps.applicable_methods(methods)) if is_confidence(predictions) else list(methods)


def slow_methods_note(models: Sequence, methods: Sequence[str]) -> str | None:
    """A warning for chosen methods above their class-count limit, with the expected fit time (Markdown)."""
    n_rows = max((view.predictions.n_samples for view in models), default=0)
    return defaults.slow_note(methods, n_rows, largest_class_count(models))


# ----------------------------------------------------------------------------- protocol

def split_column_ready(predictions: Predictions) -> bool:
    """Whether the model's ``split`` column marks both calibration rows and test rows."""
    return compare.split_column_ready(predictions.split_names)


def effective_protocol(predictions: Predictions, protocol: Protocol) -> tuple[Protocol, str | None]:
    """The protocol used for this model and, when it differs from the one chosen, why (Markdown).

    A model without a usable ``split`` column (none, or the sidebar shows one
    split only) gets a stratified random split with the page's fraction and seed.
    """
    used = compare.effective_protocol(protocol, split_ready=split_column_ready(predictions))
    if used.scheme == protocol.scheme:
        return used, None
    if predictions.split is None:
        reason = "has no `split` column"
    else:
        shown = ", ".join(literal(v) for v in predictions.split_names[:4])
        reason = f"has no calibration and test rows to tell apart (split values here: {shown})"
    return used, (f"{literal(predictions.name)} {reason}: it is split at random instead (stratified, test "
                  f"fraction {used.test_fraction:g}, seed {used.seed}).")


def model_input(predictions: Predictions) -> tuple[np.ndarray, str]:
    """``(x, input)``: the logits when the file held them, else the probabilities."""
    return compare.model_input(predictions.probs, predictions.logits)


def class_labels(predictions: Predictions) -> list[str]:
    """Class names for Markdown: a name as a :func:`literal`, a class without one as its index."""
    names = predictions.class_names
    return [str(k) if not names or str(names[k]) == str(k) else literal(names[k])
            for k in range(predictions.n_classes)]


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


def _shared(result: EvaluationSet | MethodFit) -> EvaluationSet | MethodFit:
    """``result`` with its arrays read-only, as :func:`st.cache_resource` hands the same object to every run.

    The evaluation rows and each fit's probabilities are the largest objects
    of the page (25,000 x 1,000 floats, 200 MB, at 50,000 x 1,000):
    ``st.cache_data`` would unpickle a fresh copy on every cache hit (0.3 s
    each, 1.7 s of a re-render there). Shared instead, they must not change:
    a write raises.
    """
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return result


#: Bytes of evaluation sets and fits kept for every session: at 50,000 x 1,000 the evaluation rows and each
#: fit's probabilities are 200 MB each, and the page's five default methods need the set and five fits at
#: once, 1.2 GB (a smaller bound would refit them on every re-render). Small tables use a fraction of it.
RECALIBRATION_BYTES = 1_280 * 2**20


@st.cache_resource(show_spinner=False, max_entries=1, ttl="24h")
def _shared_results() -> ResultStore:
    """The evaluation sets and fits shared by every session: ``st.cache_resource`` bounds only entries and age,
    so they live in a store bounded in bytes too (:class:`studio.memory.ResultStore`: 1,024 entries,
    :data:`RECALIBRATION_BYTES`, an hour)."""
    return ResultStore(max_entries=1024, max_bytes=RECALIBRATION_BYTES)


def _evaluation_set(_predictions: Predictions, key: str, protocol: Protocol) -> EvaluationSet:
    def compute() -> EvaluationSet:
        x, kind = model_input(_predictions)
        metrics = confidence_maps.CONFIDENCE_METRIC_KEYS if is_confidence(_predictions) else compare.METRIC_KEYS
        return _shared(compare.evaluation_set(x, _predictions.probs, _predictions.labels, protocol, input=kind,
                                              split=_predictions.split, class_names=class_labels(_predictions),
                                              metrics=metrics, sample_weight=_predictions.sample_weight))

    return _shared_results().get_or_compute(("evaluation_set", key, protocol), compute)


# ----------------------------------------------------------------------------- fitting

def fit_method(predictions: Predictions, fingerprint: str, method: str, protocol: Protocol) -> MethodFit:
    """:func:`calib_core.recalibration.compare.fit_method` under ``protocol``; failures are returned, not raised.

    Cached by (fingerprint, input kind, method, protocol).
    """
    return _fit_method(predictions, cache_key(predictions, fingerprint), method, protocol)


def _fit_method(_predictions: Predictions, key: str, method: str, protocol: Protocol) -> MethodFit:
    def compute() -> MethodFit:
        ev = evaluation_set(_predictions, key.rsplit("/", 1)[0], protocol)
        x, _ = model_input(_predictions)
        return _shared(compare.fit_method(method, x, _predictions.labels, ev))

    return _shared_results().get_or_compute(("fit_method", key, method, protocol), compute)


def fit_methods(models: Sequence, methods: Sequence[str], protocol: Protocol, *,
                on_progress: ProgressCallback | None = None) -> dict[str, dict[str, MethodFit]]:
    """Fit every method on every model (``models``: studio.state.ModelView), with progress per method.

    ``on_progress(model_name, method, index, total)`` is called before each
    fit (``index`` counts over all models) and once more with ``index == total``.
    Models whose protocol cannot split their rows are left out (the page
    reports them through :func:`evaluation_set`).
    """
    total = sum(len(methods_for(view.predictions, methods)) for view in models)
    out: dict[str, dict[str, MethodFit]] = {}
    index = 0
    for view in models:
        used, _ = effective_protocol(view.predictions, protocol)
        fits: dict[str, MethodFit] = {}
        chosen = methods_for(view.predictions, methods)
        try:
            evaluation_set(view.predictions, view.fingerprint, used)
        except cc.CalibrationInputError:
            index += len(chosen)
            continue
        for method in chosen:
            if on_progress is not None:
                on_progress(view.name, method, index, total)
            fits[method] = fit_method(view.predictions, view.fingerprint, method, used)
            index += 1
        out[view.name] = fits
    if on_progress is not None and total:
        on_progress("", "", total, total)
    return out


def predictions_csv(predictions: Predictions, ev: EvaluationSet, fit: MethodFit) -> bytes:
    """:func:`calib_core.recalibration.compare.recalibrated_frame` of every row as CSV bytes."""
    x, _ = model_input(predictions)
    if is_confidence(predictions):
        frame = confidence_maps.recalibrated_confidence_frame(x, predictions.labels, ev, fit, ids=predictions.ids)
    else:
        frame = compare.recalibrated_frame(x, predictions.labels, ev, fit, class_names=predictions.class_names)
    return cc.csv_bytes(frame, float_format="%.10g")


# ----------------------------------------------------------------------------- bootstrap

@st.cache_data(show_spinner=False, max_entries=1024, ttl=RESULT_TTL_SECONDS)
def metric_samples(_probs: np.ndarray, _labels: np.ndarray, key: tuple, n_boot: int,
                   seed: int, metric_keys: tuple[str, ...] = compare.METRIC_KEYS,
                   _weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`calib_core.inference.bootstrap.resampled_metrics` of every metric of the comparison (``metric_keys``:
    the evaluation set's), weighted by the evaluation rows' ``_weights`` (the model's fingerprint in ``key``
    covers them); ``key`` names the arrays."""
    return resampled_metrics(compare.metric_functions(metric_keys), _probs, _labels, n_boot=n_boot, seed=seed,
                             sample_weight=_weights)


def intervals(fingerprint: str, ev: EvaluationSet, fits: Mapping[str, MethodFit], *, n_boot: int, seed: int,
              alpha: float = 0.05, on_progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """:func:`calib_core.recalibration.compare.intervals`, each array's resamples cached."""
    return compare.intervals(ev, fits, n_boot=n_boot, seed=seed, alpha=alpha, on_progress=on_progress,
                             samples=_sampler(fingerprint, ev, n_boot, seed))


def _sampler(fingerprint: str, ev: EvaluationSet, n_boot: int, seed: int) -> compare.Sampler:
    """Each array's resamples through :func:`metric_samples`, keyed by the model, its protocol and the array's name."""
    base_key = (fingerprint, ev.input, ev.protocol)

    def samples(name: str, probs: np.ndarray) -> dict[str, np.ndarray]:
        return metric_samples(probs, ev.labels, (*base_key, name), n_boot, seed, ev.metric_keys, ev.sample_weight)

    return samples


def paired_differences(fingerprint: str, ev: EvaluationSet, fits: Mapping[str, MethodFit], table: pd.DataFrame,
                       *, n_boot: int, seed: int, alpha: float = 0.05) -> tuple[PairedDifference, ...]:
    """:func:`calib_core.recalibration.recommendation.paired_differences` (every candidate against the best one,
    for the advice's tie rule) on the resamples that :func:`intervals` cached."""
    return recommendation.paired_differences(ev, fits, table, n_boot=n_boot, seed=seed, alpha=alpha,
                                             samples=_sampler(fingerprint, ev, n_boot, seed))


# ----------------------------------------------------------------------------- diagrams

@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def reliability(_probs: np.ndarray, _labels: np.ndarray, key: tuple, n_bins: int, binning: str,
                target: str | int = "top_label", _weights: np.ndarray | None = None) -> pd.DataFrame:
    """``calib_core.reliability_table`` of an evaluation set; ``key`` names the arrays (``target``: 1 for a
    confidence model's stated confidence, :func:`calib_core.recalibration.confidence.reliability_target`;
    ``_weights``: the evaluation rows' weights, :attr:`EvaluationSet.sample_weight`)."""
    return cc.reliability_table(_probs, _labels, n_bins, binning, target=target, sample_weight=_weights)


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def simplex(_probs: np.ndarray, _labels: np.ndarray, key: tuple, n_bins: int,
            _weights: np.ndarray | None = None) -> SimplexReliability:
    """``calib_core.simplex_reliability`` with the default three groups of classes (``_weights``: the evaluation
    rows' weights, :attr:`EvaluationSet.sample_weight`; ``key`` names the arrays and so the weights)."""
    groups = cc.default_groups(_probs.shape[1])
    return cc.simplex_reliability(_probs, _labels, groups=groups, n_bins=n_bins, sample_weight=_weights)


def temperature_surface(predictions: Predictions, fingerprint: str, protocol: Protocol, *,
                        t_range: tuple[float, float] = (sweeps.T_MIN, sweeps.T_MAX), with_kde: bool = True,
                        seed: int = 0) -> TemperatureSurface:
    """:func:`calib_core.recalibration.sweeps.temperature_surface` on the evaluation rows of ``protocol``.

    ``z`` are the logits (or log-probabilities,
    :func:`calib_core.recalibration.compare.log_scores`).
    """
    return _temperature_surface(predictions, cache_key(predictions, fingerprint), protocol,
                                (float(t_range[0]), float(t_range[1])), bool(with_kde), int(seed))


@st.cache_data(show_spinner=False, max_entries=128, ttl=RESULT_TTL_SECONDS)
def _temperature_surface(_predictions: Predictions, key: str, protocol: Protocol, t_range: tuple[float, float],
                         with_kde: bool, seed: int) -> TemperatureSurface:
    ev = evaluation_set(_predictions, key.rsplit("/", 1)[0], protocol)
    # the logarithms of the surface's rows only (1,000 of 25,000 evaluation rows at 1,000 classes)
    picked = sweeps.surface_rows(ev.eval_index.size, _predictions.n_classes, seed)
    rows = ev.eval_index[picked]
    logits = None if _predictions.logits is None else _predictions.logits[rows]
    scores = compare.log_scores(_predictions.probs[rows], logits)
    weights = None if ev.sample_weight is None else ev.sample_weight[picked]
    return sweeps.temperature_surface(scores, _predictions.labels[rows], t_range=t_range, with_kde=with_kde,
                                      seed=seed, sample_weight=weights)


@st.cache_data(show_spinner=False, max_entries=128, ttl=RESULT_TTL_SECONDS)
def gce_ranking(_probs: Mapping[str, np.ndarray], _labels: np.ndarray, key: tuple, n_bins: int = 15,
                seed: int = 0, _weights: np.ndarray | None = None) -> GceRanking:
    """:func:`calib_core.recalibration.sweeps.gce_ranking`; ``key`` names the arrays (and so ``_weights``, the
    evaluation rows' weights)."""
    return sweeps.gce_ranking(_probs, _labels, n_bins=n_bins, seed=seed, sample_weight=_weights)


# ----------------------------------------------------------------------------- text and table styles

def weighting_text(ev: EvaluationSet) -> str:
    """" weighted by their row weights (total weight W)" after "the N evaluation rows" of a weighted model, else ""."""
    if ev.sample_weight is None:
        return ""
    return f" weighted by their row weights (total weight {float(ev.sample_weight.sum()):,.6g})"


def rows_text(n_used: int, ev: EvaluationSet) -> str:
    """"1,000 evaluation rows", or which subset of them a sweep used and why (Markdown); a weighted model's rows
    are said to be weighted (:func:`weighting_text`)."""
    n_rows, n_classes = ev.before.shape
    if n_used >= n_rows:
        return f"{n_rows:,} evaluation rows{weighting_text(ev)}"
    return (f"a random {n_used:,} of the {n_rows:,} evaluation rows{weighting_text(ev)}: at most "
            f"{sweeps.SURFACE_MAX_ROWS:,} rows and {sweeps.MAX_ENTRIES:,} probabilities ({n_classes:,} per row "
            "here), so that the page stays quick")


def variant_note(ranking: GceRanking | None = None, ev: EvaluationSet | None = None) -> str:
    """Which heatmap columns carry a metric's name, and why Nixon et al.'s SCE and ACE columns do not (markdown).

    With ``ranking`` and ``ev`` (and the ranking on all evaluation rows), the
    uncalibrated values of variants 8 and 24 are set beside the SCE and ACE of
    the results table.
    """
    named = ", ".join(f"{v} = {label}" for v, (label, _, _) in sweeps.NAMED_VARIANTS.items())
    paper = ", ".join(f"{v} {name}" for v, name in sweeps.PAPER_NAMES.items())
    text = (f"Named columns equal the metric of that name exactly: {named}. Nixon et al. also call variants "
            f"{paper}; here they are labelled by their settings, because the general calibration error keeps "
            "only values above the threshold (threshold 0: exact zeros dropped) and weights each bin by its count, "
            "while the SCE keeps every value and the ACE averages its ranges unweighted.")
    # Only when the ranking used every evaluation row (above GCE_MAX_ROWS it uses a subset).
    if ranking is not None and ev is not None and BEFORE in ranking.values.index and \
            ranking.n_rows == ev.labels.size:
        v8, v24 = ranking.values.loc[BEFORE, 8], ranking.values.loc[BEFORE, 24]
        text += (f" Before recalibration here: variant 8 = {v8:.4f} against SCE = {ev.before_values['sce']:.4f}, "
                 f"variant 24 = {v24:.4f} against ACE = {ev.before_values['ace']:.4f}.")
    return text


def best_note(methods: Sequence[str], *, cautionary: str = CAUTIONARY) -> str:
    """How the best method per metric is marked, and why the cautionary baseline never is (when shown)."""
    text = "Green: the best method per metric (lowest error; highest accuracy)."
    if cautionary in methods:
        text += (f" **{cautionary}** is never marked: it replaces each prediction by the label frequencies of its "
                 "predicted class, so it is calibrated by construction and wins calibration errors by design while "
                 "discarding every difference between rows of one predicted class (its Brier score and NLL show "
                 "the cost). It is a yardstick, not a candidate.")
    return text


#: Highlight of the best method per metric in the summary table.
BEST_STYLE = "background-color: #c7e9c0; color: #00441b"
#: Shown for a value that is not available (no interval, a metric that could not be computed).
MISSING = "—"
#: Formats and headers of the results table's display.
DETAIL_FORMATS = {"before": "{:.4f}", "after": "{:.4f}", "delta": "{:+.4f}", "fit_seconds": "{:.2f}",
                  "before_low": "{:.4f}", "before_high": "{:.4f}", "after_low": "{:.4f}", "after_high": "{:.4f}",
                  "delta_low": "{:+.4f}", "delta_high": "{:+.4f}"}
DETAIL_LABELS = {"method": "Method", "metric": "Metric", "before": "Before", "before_low": "low",
                 "before_high": "high", "after": "After", "after_low": "low", "after_high": "high",
                 "delta": "Change", "delta_low": "low", "delta_high": "high", "fit_seconds": "Fit s"}


def styled_summary(matrix: pd.DataFrame, best: Mapping[str, Sequence[str]]) -> pd.io.formats.style.Styler:
    """:func:`~calib_core.recalibration.compare.summary_matrix` for ``st.dataframe``: the best per metric in green.

    ``best`` is :func:`~calib_core.recalibration.compare.best_methods` of the
    results table; dashes for gaps.
    """
    styler = matrix.style.format("{:.4f}", na_rep=MISSING)
    if "Δ accuracy" in matrix.columns:  # none for a confidence model: its answers do not change
        styler = styler.format("{:+.1%}", subset=["Δ accuracy"], na_rep=MISSING)
    for key, winners in best.items():
        label = compare.metric_label(key)
        styler = styler.map(lambda _: BEST_STYLE, subset=pd.IndexSlice[winners, [label]])
    return styler


def styled_details(table: pd.DataFrame) -> pd.io.formats.style.Styler:
    """:func:`~calib_core.recalibration.compare.results_table` for ``st.dataframe``.

    Interval columns only when some interval exists. A value that is not
    available (an interval the bootstrap could not give, a metric that could
    not be computed) shows :data:`MISSING`, never "None" or "nan".
    """
    details = table.drop(columns=["key"])
    if details[compare.INTERVAL_COLUMNS].isna().all().all():
        details = details.drop(columns=compare.INTERVAL_COLUMNS)
    formats = {column: fmt for column, fmt in DETAIL_FORMATS.items() if column in details.columns}
    return details.style.format(formats, na_rep=MISSING)
