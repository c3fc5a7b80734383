"""Every calib_core call the pages make, wrapped in ``st.cache_data``.

A model's :class:`~calib_core.io.Predictions` is passed as ``_predictions``
(not hashed: hashing arrays on every rerun would cost as much as some of the
metrics) together with its ``fingerprint``, a hash of its probabilities and
labels computed once when it was loaded (:func:`studio.state.fingerprint`).
The fingerprint and the remaining, small arguments form the cache key.

Functions that loop over models or metrics take an ``on_progress(done,
total)`` callback so the page can show a progress bar for heavy work.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core import io as cio
from calib_core.io import Predictions
from calib_core.io.formats import column_names
from calib_core.io.unlabelled import weight_candidates
from calib_core.metrics.sensitivity import BinRanking
from studio.memory import RESULT_TTL_SECONDS

Progress = Callable[[int, int], None] | None

#: Columns of :func:`estimates_table`.
METRIC_COLUMNS = ("model", "rows", "metric", "name", "key", "estimate", "ci_low", "ci_high", "std", "interval",
                  "n_bins", "binning", "n_boot", "calibration_error", "probability_scale", "reason", "unreliable")


# ----------------------------------------------------------------------------- loading

@st.cache_data(show_spinner=False, max_entries=32, ttl="24h")
def load_demo(name: str) -> Predictions:
    """A bundled demo model (raises CalibrationInputError for unknown names)."""
    return cio.load_demo(name)


@st.cache_data(show_spinner=False, max_entries=4, ttl="15m", scope="session")
def load_file(raw: bytes, file_name: str, options: tuple[tuple[str, Any], ...]) -> Predictions:
    """``load_predictions`` on uploaded bytes; ``options`` are its keyword overrides."""
    return cio.load_predictions(raw, name=file_name, **dict(options))


@st.cache_data(show_spinner=False, max_entries=16, ttl="15m", scope="session")
def file_columns(raw: bytes, file_name: str) -> list[str]:
    """Column (or NPZ array) names of a predictions file, for the column-mapping form.

    The names are those the loader reads (:func:`calib_core.io.formats.column_names`: the
    same format detection and CSV sniffer). Returns an empty list when the header cannot be
    read; the loader's own message then explains the problem.
    """
    try:
        return column_names(raw, file_name)
    except Exception:  # any unreadable header: the form then offers "detect" only
        return []


@st.cache_data(show_spinner=False, max_entries=16, ttl="15m", scope="session")
def weight_columns(raw: bytes, file_name: str, class_names: tuple[str, ...], taken: tuple) -> list[str]:
    """The columns the Data page offers as row weights (:func:`calib_core.io.unlabelled.weight_candidates`)."""
    return weight_candidates(raw, file_name, class_names, taken)


# ----------------------------------------------------------------------------- metrics

def metric_estimates(predictions: Predictions, fingerprint: str, n_bins: int, binning: str) -> cc.MetricReport:
    """Every registered metric on all rows of the model, with a reason for each one that is not available.

    Two cached halves: the metrics that use the bin settings, and the others, computed at fixed settings that
    they ignore, so that moving the bins slider recomputes only the binned half (at 50,000 x 1,000 the other
    half, the kernel and smooth errors, is about 2 s). Merged in registry order, as one ``metric_report`` gives.
    """
    binned = _metric_estimates(predictions, fingerprint, n_bins, binning, True, predictions.kind)
    other = _metric_estimates(predictions, fingerprint, 15, "uniform", False, predictions.kind)
    order = [spec.key for spec in cc.METRICS]
    values = {key: {**binned.values, **other.values}[key] for key in order
              if key in binned.values or key in other.values}
    # A bound may join the halves (the binned ECE against the root Brier score): checked on the merged values.
    unreliable = cc.check_bounds(values, n_rows=predictions.n_samples, n_classes=predictions.n_classes,
                                 biases=other.biases)
    return cc.MetricReport(values, {**binned.reasons, **other.reasons},
                           tuple(key for key in order if key in binned.skipped or key in other.skipped),
                           unreliable, other.biases)


@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def _metric_estimates(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str,
                      uses_bins: bool, kind: str = "classes") -> cc.MetricReport:
    # A confidence model gets the registry's confidence entries, never the K-class ones (MetricSpec.kind).
    keys = [spec.key for spec in cc.METRICS if spec.uses_bins == uses_bins and spec.kind == kind]
    return cc.metric_report(_predictions.probs, _predictions.labels, n_bins=n_bins, binning=binning, keys=keys,
                            sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner=False, max_entries=4096, ttl=RESULT_TTL_SECONDS)
def metric_interval(_predictions: Predictions, fingerprint: str, key: str, n_bins: int, binning: str,
                    n_boot: int, seed: int, alpha: float, _estimate: float | None = None) -> cc.MetricInterval:
    """:func:`calib_core.metric_interval` of one metric: the interval the registry declares for it (seeded).

    ``_estimate``, the metric's value from :func:`metric_estimates` (the same settings, so the same number), is
    not computed again; it is not part of the cache key, which already determines it.
    """
    return cc.metric_interval(key, _predictions.probs, _predictions.labels, n_bins=n_bins, binning=binning,
                              n_boot=n_boot, alpha=alpha, seed=seed, estimate=_estimate,
                              sample_weight=_predictions.sample_weight)


#: ``interval`` of a row of :func:`estimates_table` whose interval is not computed yet.
PENDING = "pending"


@dataclass(frozen=True)
class IntervalJob:
    """One interval still to compute for a row of :func:`estimates_table`.

    ``row`` is the row's position in the table; ``key`` the registry key;
    ``n_bins`` and ``binning`` are normalised (15 and "uniform" for a metric
    that ignores them) so that equal intervals share one cache entry. Its
    :attr:`cache_key` identifies the result across reruns (model fingerprint,
    metric, settings, seed). ``estimate`` is the row's estimate, which the
    interval reuses instead of computing it again.
    """

    row: int
    predictions: Predictions = field(repr=False, compare=False)
    fingerprint: str
    key: str
    n_bins: int
    binning: str
    n_boot: int
    seed: int
    alpha: float
    estimate: float | None = field(default=None, compare=False)

    @property
    def cache_key(self) -> tuple:
        return (self.fingerprint, self.key, self.n_bins, self.binning, self.n_boot, self.seed, self.alpha)

    def compute(self) -> cc.MetricInterval:
        """The interval, by the cached :func:`metric_interval` (the same call, so the same numbers)."""
        return metric_interval(self.predictions, self.fingerprint, self.key, self.n_bins, self.binning,
                               self.n_boot, self.seed, self.alpha, self.estimate)


def estimates_table(models: Sequence[Any], *, n_bins: int, binning: str, n_boot: int, seed: int,
                    alpha: float = 0.05) -> tuple[pd.DataFrame, list[IntervalJob]]:
    """Every metric of every model, with its interval still to compute (:func:`fill_interval` writes it).

    Returns
    -------
    table : pandas.DataFrame
        One row per (model, metric), columns :data:`METRIC_COLUMNS`: ``metric``
        is the registry label, ``name`` the label with its settings
        (:func:`calib_core.metric_name`), ``interval`` how the interval was
        made, ``reason`` why a metric is not available (its estimate is then
        NaN), ``unreliable`` why an estimate that breaks a bound of its true
        quantity is unreliable (:func:`calib_core.check_estimate`; else empty).
        O(N^2) metrics left out on many rows have no row. A row whose metric
        has an estimate has ``ci_low``, ``ci_high`` and ``std`` NaN, ``n_boot``
        0 and ``interval`` :data:`PENDING` until :func:`fill_interval` writes
        its interval.
    jobs : list of IntervalJob
        One per pending row, in table order.
    """
    rows, jobs = [], []
    for model in models:
        report = metric_estimates(model.predictions, model.fingerprint, n_bins, binning)
        for spec in cc.METRICS:
            if spec.key not in report.values:  # an O(N^2) metric left out on many rows
                continue
            estimate = report.values[spec.key]
            if estimate is not None:
                # Settings a metric ignores are normalised so that its cache entry is shared.
                jobs.append(IntervalJob(len(rows), model.predictions, model.fingerprint, spec.key,
                                        n_bins if spec.uses_bins else 15,
                                        binning if spec.uses_binning else "uniform", n_boot, seed, alpha,
                                        estimate))
            rows.append({
                "model": model.name, "rows": model.rows, "metric": spec.label,
                "name": cc.metric_name(spec.key, n_bins=n_bins, binning=binning), "key": spec.key,
                "estimate": np.nan if estimate is None else estimate, "ci_low": np.nan, "ci_high": np.nan,
                "std": np.nan, "interval": "" if estimate is None else PENDING,
                "n_bins": n_bins if spec.uses_bins else None,
                "binning": (spec.fixed_binning or binning) if spec.uses_bins else None,
                "n_boot": 0,
                "calibration_error": spec.calibration_error,
                "probability_scale": spec.probability_scale,
                "reason": report.reasons.get(spec.key, ""),
                "unreliable": report.unreliable.get(spec.key, ""),
            })
    table = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
    table["n_bins"] = table["n_bins"].astype("Int64")
    return table, jobs


def fill_interval(table: pd.DataFrame, job: IntervalJob, found: cc.MetricInterval) -> None:
    """Write ``found`` (the interval of ``job``) into its row of ``table``, in place."""
    row = table.index[job.row]
    table.loc[row, ["ci_low", "ci_high", "std"]] = [found.low, found.high, found.std]
    table.loc[row, "interval"] = found.note
    table.loc[row, "n_boot"] = found.n_boot


# ----------------------------------------------------------------------------- reliability and classes

@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def reliability(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str,
                target: str | int = "top_label", alpha: float = 0.05) -> pd.DataFrame:
    """``calib_core.reliability_table`` for one model (Wilson intervals per bin); a confidence model's top label
    is its stated confidence (``probs[:, 1]`` against the correctness), not ``max(c, 1 - c)``."""
    target = confidence_target(_predictions, target)
    return cc.reliability_table(_predictions.probs, _predictions.labels, n_bins, binning,
                                target=target, alpha=alpha, sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def reliability_ece(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str,
                    target: str | int = "top_label") -> float:
    """``calib_core.reliability_ece``: the ECE of the bins of :func:`reliability` (the number the page shows)."""
    return cc.reliability_ece(_predictions.probs, _predictions.labels, n_bins, binning,
                              confidence_target(_predictions, target), sample_weight=_predictions.sample_weight)


def confidence_target(predictions: Predictions, target: str | int) -> str | int:
    """The reliability target of ``target``: for a confidence model (``probs = [1 - c, c]``) "top_label" is
    column 1, the stated confidence against the correctness (:mod:`calib_core.metrics.confidence`)."""
    return 1 if predictions.kind == "confidence" and target == "top_label" else target


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def per_class(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str) -> pd.DataFrame:
    """``calib_core.per_class_table`` of one model (ACE, TACE and class-wise ECE per class, its class names)."""
    return cc.per_class_table(_predictions.probs, _predictions.labels, n_bins, binning,
                              class_names=_predictions.class_names, sample_weight=_predictions.sample_weight)


# ----------------------------------------------------------------------------- bin sensitivity

@st.cache_data(show_spinner=False, max_entries=64, ttl=RESULT_TTL_SECONDS)
def sensitivity(_predictions: Predictions, fingerprint: str, bin_counts: tuple[int, ...],
                metrics: tuple[str, ...], binnings: tuple[str, ...]) -> pd.DataFrame:
    """``calib_core.bin_sensitivity`` for one model, with its row weights (in the fingerprint)."""
    return cc.bin_sensitivity(_predictions.probs, _predictions.labels, bin_counts=bin_counts,
                              metrics=metrics, binnings=binnings, sample_weight=_predictions.sample_weight)


def sensitivity_tables(models: Sequence[Any], *, bin_counts: tuple[int, ...], metrics: tuple[str, ...],
                       binnings: tuple[str, ...], on_progress: Progress = None) -> dict[str, pd.DataFrame]:
    """The sweep of every model, ``{model name: table}``."""
    tables = {}
    for i, model in enumerate(models):
        tables[model.name] = sensitivity(model.predictions, model.fingerprint, bin_counts, metrics, binnings)
        if on_progress is not None:
            on_progress(i + 1, len(models))
    return tables


@st.cache_data(show_spinner=False, max_entries=64, ttl=RESULT_TTL_SECONDS)
def ranking(_tables: dict[str, pd.DataFrame], key: tuple, reference_n_bins: int) -> BinRanking:
    """``calib_core.rank_by_bins``; ``key`` identifies the tables (names, fingerprints, settings)."""
    return cc.rank_by_bins(_tables, reference_n_bins=reference_n_bins)



# ----------------------------------------------------------------------------- calibration tests

#: Columns of :func:`tests_table`.
TEST_COLUMNS = ("model", "test", "method", "statistic", "p_value", "verdict", "reason", "null_distribution",
                "measured_size")


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def calibration_tests(_predictions: Predictions, fingerprint: str, seed: int) -> list[dict[str, Any]]:
    """Every method of :func:`calib_core.calibration_test` at its defaults on one model (seeded).

    A test that cannot be computed on this model (e.g. Hosmer-Lemeshow when every
    prediction is the same) gives a row with no statistic and the reason.
    """
    rows = []
    for method in cc.TEST_METHODS:
        try:
            result = cc.calibration_test(_predictions.probs, _predictions.labels, method, seed=seed,
                                         sample_weight=_predictions.sample_weight)
        except cc.CalibrationInputError as exc:
            rows.append({"method": method, "statistic": np.nan, "p_value": np.nan, "verdict": "n/a",
                         "reason": " ".join(str(exc).split()), "null_distribution": ""})
            continue
        rows.append({"method": method, "statistic": result.statistic, "p_value": result.p_value,
                     "verdict": result.verdict, "reason": result.verdict_reason,
                     "null_distribution": result.null_distribution})
    return rows


def tests_table(models: Sequence[Any], *, seed: int, on_progress: Progress = None) -> pd.DataFrame:
    """One row per (model, calibration test): statistic, p-value, calib_core's verdict and reason, and the
    test's measured size at α = 0.05 (:data:`calib_core.lab.size_power.SIZE_NOTES`, from the Lab)."""
    rows = []
    for i, model in enumerate(models):
        for row in calibration_tests(model.predictions, model.fingerprint, seed):
            rows.append({"model": model.name, "test": cc.lab.size_power.TEST_LABELS[row["method"]], **row,
                         "measured_size": cc.lab.size_power.SIZE_NOTES[row["method"]]})
        if on_progress is not None:
            on_progress(i + 1, len(models))
    return pd.DataFrame(rows, columns=list(TEST_COLUMNS))


# ----------------------------------------------------------------------------- Data page headline

@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def consistency_verdict(_predictions: Predictions, fingerprint: str, seed: int) -> dict[str, Any]:
    """calib_core's verdict on one model: :func:`calib_core.calibration_test` with ``method="consistency"``.

    One seeded call at the test's defaults (1,000 consistency resamples of the
    top-label ECE; Vaicenavicius et al. 2019, Section 4.2), the same call as
    the consistency row of :func:`calibration_tests`, so the Data page's
    headline and the Metrics page agree. Cheap: about 0.1 s on the demos,
    under 1 s on 20,000 rows with 10 classes.

    Returns
    -------
    dict
        ``verdict`` ("miscalibrated", "consistent", "inconclusive", or "n/a"
        when the test cannot run on this model), ``reason`` (calib_core's
        sentence, or why it could not run), ``p_value`` (NaN for "n/a").
    """
    try:
        result = cc.calibration_test(_predictions.probs, _predictions.labels, "consistency", seed=seed,
                                     sample_weight=_predictions.sample_weight)
    except cc.CalibrationInputError as exc:
        return {"verdict": "n/a", "reason": " ".join(str(exc).split()), "p_value": np.nan}
    return {"verdict": result.verdict, "reason": result.verdict_reason, "p_value": float(result.p_value)}


# ----------------------------------------------------------------------------- deployment prevalence

#: Registry keys shown before and after a prevalence shift (:func:`prevalence_view`).
PREVALENCE_METRICS = ("ece", "ici", "cox_slope", "cox_intercept", "citl")


@st.cache_data(show_spinner=False, max_entries=128, ttl=RESULT_TTL_SECONDS)
def prevalence_view(_predictions: Predictions, fingerprint: str, class_index: int, prevalence: float,
                    n_bins: int) -> dict[str, Any]:
    """One class's predictions moved to a deployment prevalence by Bayes' rule, with metrics before and after.

    The binary view of class ``class_index``: ``probs[:, k]`` against
    ``labels == k`` (for two classes, k = 1 is P(class 1)), shifted by
    :func:`calib_core.adjust_prevalence` from the test set's prevalence of
    the class to ``prevalence`` (Saerens et al. 2002, eq. 2.4).

    Returns
    -------
    dict
        ``source`` (test prevalence of the class), ``target``, ``odds_factor``
        (odds(target) / odds(source), the factor on every prediction's odds),
        ``mean_before`` / ``mean_after`` (mean predicted probability), and
        ``table``: one row per key of :data:`PREVALENCE_METRICS` with ``key``,
        ``metric`` (name with settings), ``before``, ``after`` (NaN when not
        available) and ``reason``. Both columns are measured against the test
        labels. ``error``: a sentence when the shift is impossible (a class
        absent from the test set), else "".
    """
    probs, labels = _predictions.probs, _predictions.labels
    scores = probs[:, class_index]
    view, outcome = cc.as_probs(scores), (labels == class_index).astype(np.int64)
    try:
        shifted = cc.adjust_prevalence(view, prevalence, labels=outcome)
    except cc.CalibrationInputError as exc:
        return {"error": " ".join(str(exc).split())}
    keys = list(PREVALENCE_METRICS)
    before = cc.metric_report(view, outcome, n_bins=n_bins, keys=keys)
    after = cc.metric_report(shifted.probs, outcome, n_bins=n_bins, keys=keys)
    rows = []
    for key in keys:
        reasons = "; ".join(f"{when}: {report.reasons[key]}" for when, report in (("before", before),
                                                                                   ("after", after))
                            if key in report.reasons)
        rows.append({"key": key, "metric": cc.metric_name(key, n_bins=n_bins),
                     "before": np.nan if before.values[key] is None else before.values[key],
                     "after": np.nan if after.values[key] is None else after.values[key], "reason": reasons})
    return {"error": "", "source": float(shifted.source[1]), "target": float(shifted.target[1]),
            "odds_factor": shifted.odds_factor, "mean_before": float(scores.mean()),
            "mean_after": float(shifted.probs[:, 1].mean()), "table": pd.DataFrame(rows)}
