"""The one-file offline HTML report: every number, setting and chart of a calibration review.

Used by the command line (``calib-core report FILE... --html OUT.html``) and by
the app's "Download report (HTML)" buttons. Pure functions: models and settings
in, an HTML string out; nothing here imports streamlit.

What a model-risk reviewer needs to reproduce and audit the numbers is in the
file: the ``calib_core`` version, each input file's name and SHA-256, the date,
every setting (bins, binning, bin edges convention, seeds, resamples, alpha),
the data summary, the metrics with the interval each one declares
(:func:`calib_core.inference.intervals.metric_interval`, named by
:func:`calib_core.metrics.registry.metric_name`), the verdicts of
:func:`calib_core.calibration_test`, and the charts (Plotly figures from
``studio/figures*.py``). The same numbers are also stored as JSON in
``<script type="application/json" id="report-data">`` for machines.

Self-contained: plotly.js is embedded once (inline, no CDN), a Content
Security Policy forbids every network request, every user-supplied string is
HTML-escaped (:func:`html.escape`) and Plotly text goes through
:func:`studio.text.plot_text`.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.io as pio  # at import time: without plotly the CLI's --html says so in one line
from plotly.offline import get_plotlyjs

import calib_core as cc
from calib_core.io import Predictions
from calib_core.inference.intervals import metric_interval
from calib_core.metrics.registry import INTERVAL_METHODS, metric_name
from calib_core.metrics.reports import MAX_QUADRATIC_ROWS, metric_report, metrics_of_kind, size_note
from calib_core.metrics.sensitivity import SENSITIVITY_METRICS
from calib_core.recalibration import compare
from calib_core.recalibration.compare import Protocol
from calib_core.recalibration.confidence import compare_predictions, reliability_target
from calib_core.recalibration.recommendation import Recommendation
from calib_core.recalibration.fixable import fixable_part
from calib_core.validation import CalibrationInputError
from studio import report_decisions
from studio.report_confidence import confidence_sections
from studio.report_weights import summary_rows, summary_weights, unweighted_note, weights_data, weights_html
from studio.weights_reasons import weighted_size

__all__ = ["REPORT_SECTIONS", "Recalibration", "RecalibrationSettings", "ReportModel", "ReportSettings", "build_report",
           "calib_core_version", "chart_file_name", "comparison_notes", "recalibration_of", "report_file_name",
           "report_data", "sha256_hex"]

#: Sections in report order (a page's button asks for its own; "everything" for all).
REPORT_SECTIONS = ("data", "metrics", "verdicts", "reliability", "per_class", "sensitivity", "simplex",
                   "recalibration", "selective", "systems")
#: Per-class reliability diagrams drawn at most (one per class); larger K lists the rest in the table.
MAX_CLASS_DIAGRAMS = 20
#: Tests of :func:`calib_core.calibration_test` in the verdict table.
TEST_METHODS = ("consistency", "hosmer_lemeshow", "spiegelhalter", "skce")
_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
        "font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")


@dataclass(frozen=True)
class ReportSettings:
    """Every setting behind the report's numbers.

    Attributes
    ----------
    n_bins, binning : int, {"uniform", "adaptive"}
        Bins of the binned metrics and of the reliability diagrams.
    n_boot : int
        Bootstrap resamples of the metrics whose interval is a bootstrap.
    seed : int
        Seed of the bootstrap (the same rows for every metric) and of every
        calibration test (each its own named stream of it).
    alpha : float
        Intervals cover ``1 - alpha``; tests read at level ``alpha``.
    n_resamples : int
        Consistency resamples of the ``"consistency"`` test.
    max_quadratic_rows : int or None
        O(N^2) metrics are left out above this many rows.
    sensitivity_bins : tuple of int
        Bin counts of the bin-sensitivity sweep.
    simplex_bins : int
        Subdivisions per edge of the simplex partition.
    """

    n_bins: int = 15
    binning: str = "uniform"
    n_boot: int = 1000
    seed: int = 0
    alpha: float = 0.05
    n_resamples: int = 1000
    max_quadratic_rows: int | None = MAX_QUADRATIC_ROWS
    sensitivity_bins: tuple[int, ...] = tuple(range(2, 201))
    simplex_bins: int = 10

    def rows(self) -> list[tuple[str, str]]:
        """The settings as (name, value) pairs for the report's settings table."""
        counts = self.sensitivity_bins
        sweep = f"{min(counts)}..{max(counts)} ({len(counts)} counts)" if counts else "none"
        return [
            ("bins (n_bins)", str(self.n_bins)),
            ("binning", self.binning),
            ("uniform bin edges", "(lo, hi], first bin also holds 0 (right=True, the calib_core convention)"),
            ("bootstrap resamples (n_boot)", str(self.n_boot)),
            ("seed", str(self.seed)),
            ("alpha (intervals cover 1 - alpha; tests at level alpha)", f"{self.alpha:g}"),
            ("consistency resamples", str(self.n_resamples)),
            ("O(N^2) metrics up to (rows)", "no limit" if self.max_quadratic_rows is None
             else f"{self.max_quadratic_rows:,}"),
            ("bin-sensitivity sweep", sweep),
            ("simplex subdivisions per edge", str(self.simplex_bins)),
        ]


@dataclass(frozen=True)
class ReportModel:
    """One model in the report.

    Attributes
    ----------
    name : str
        Model name (user-supplied: escaped wherever shown).
    predictions : Predictions
        The rows analysed.
    files : tuple of (file name, SHA-256 hex) pairs
        The input file(s) and the hash of each one's bytes (:func:`sha256_hex`).
    rows : str
        Which rows (e.g. "all rows", "split test").
    notes : tuple of str
        Loader notes and fixes applied (shown as plain text).
    """

    name: str
    predictions: Predictions
    files: tuple[tuple[str, str], ...] = ()
    rows: str = "all rows"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recalibration:
    """A recalibration comparison already computed (the app's Recalibration page).

    Attributes
    ----------
    model : str
        The model recalibrated.
    table : pandas.DataFrame
        The before/after metrics table as shown on the page (cells are escaped).
    diagrams : mapping of str to DataFrame
        ``reliability_table`` output before and after (e.g. ``{"Before": ..., "After: temperature": ...}``).
    note : str
        Protocol and settings of the comparison, in words.
    recommendation : calib_core.recalibration.recommendation.Recommendation, optional
        The object the page's verdict is rendered from
        (:func:`calib_core.recalibration.recommendation.recommend`): the report
        renders the same sentences from it, as plain text.
    """

    model: str
    table: pd.DataFrame
    diagrams: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    note: str = ""
    recommendation: Recommendation | None = None


@dataclass(frozen=True)
class RecalibrationSettings:
    """How a report that is handed no comparison makes one (:func:`recalibration_of`).

    The defaults are the Recalibration page's first view: its default methods
    at the model's K, the file's split column (else a stratified random split
    of half the rows), and the report's resamples and seed.

    Attributes
    ----------
    methods : tuple of str or None
        Keys of :data:`calib_core.RECALIBRATORS` (None: the page's default set).
    protocol : Protocol or None
        None: ``Protocol(seed=settings.seed)``.
    n_boot, seed : int or None
        Resamples and seed of the intervals (None: the report settings').
    boot_budget_seconds : float
        Above this predicted time per model the intervals are left out and the report says so.
    """

    methods: tuple[str, ...] | None = None
    protocol: Protocol | None = None
    n_boot: int | None = None
    seed: int | None = None
    boot_budget_seconds: float = 60.0


# ----------------------------------------------------------------------------- small pure helpers

def sha256_hex(data: bytes | str | Path) -> str:
    """SHA-256 of a file's bytes (``data`` as bytes, or a path to read in 1 MiB blocks), as 64 hex digits."""
    digest = hashlib.sha256()
    if isinstance(data, (bytes, bytearray, memoryview)):
        digest.update(data)
        return digest.hexdigest()
    with open(data, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def calib_core_version() -> str:
    """The installed ``calib-core`` distribution's version, else the source tree's (``pyproject.toml``)."""
    from importlib import metadata

    try:
        return metadata.version("calib-core")
    except metadata.PackageNotFoundError:
        pyproject = Path(cc.__file__).resolve().parent.parent / "pyproject.toml"
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.M) if pyproject.is_file() else None
        return f"{found.group(1)} (source tree)" if found else "unknown (source tree)"


def _slug(value: object) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", str(value)).strip("-._")
    return text[:60] or "x"


def chart_file_name(*parts: object) -> str:
    """A file name (without extension) for a chart download: the parts as safe slugs joined by ``_``.

    >>> chart_file_name("Reliability", "digits/rf <1>", "15 uniform bins")
    'Reliability_digits-rf-1_15-uniform-bins'
    """
    return "_".join(_slug(p) for p in parts if p is not None and str(p) != "") or "chart"


def report_file_name(section: str, models: Sequence[str] = ()) -> str:
    """``calibration_report_<section>[_<model>].html`` with safe characters only."""
    one = [models[0]] if len(models) == 1 else []
    return chart_file_name("calibration_report", section, *one) + ".html"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _num(value: float | None, digits: int = 6) -> str:
    value = _finite(value)
    return "n/a" if value is None else f"{value:.{digits}f}"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], *, cls: str = "") -> str:
    """An HTML table; every cell escaped."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# ----------------------------------------------------------------------------- numbers

def _metrics(model: ReportModel, settings: ReportSettings) -> list[dict]:
    """Every registered metric with the interval it declares (as the app's Metrics page and the CLI)."""
    probs, labels = model.predictions.probs, model.predictions.labels
    kind = model.predictions.kind  # a confidence model gets the confidence entries (stated confidence vs correct)
    weights = model.predictions.sample_weight  # as the Metrics page (studio.compute): None for unweighted rows
    report = metric_report(probs, labels, n_bins=settings.n_bins, binning=settings.binning,
                           max_quadratic_rows=settings.max_quadratic_rows, kind=kind, sample_weight=weights)
    rows = []
    for spec in metrics_of_kind(kind):
        if spec.key not in report.values:
            rows.append({"key": spec.key, "name": metric_name(spec.key, n_bins=settings.n_bins,
                                                              binning=settings.binning),
                         "estimate": None, "low": None, "high": None, "method": "none", "n_boot": 0,
                         "note": size_note(spec.key, *probs.shape, max_quadratic_rows=settings.max_quadratic_rows)})
            continue
        value = report.values[spec.key]
        row = {"key": spec.key, "name": metric_name(spec.key, n_bins=settings.n_bins, binning=settings.binning),
               "estimate": _finite(value), "low": None, "high": None, "method": "none", "n_boot": 0,
               "note": report.reasons.get(spec.key, ""), "unreliable": report.unreliable.get(spec.key, "")}
        if value is not None:
            found = metric_interval(spec.key, probs, labels, n_bins=settings.n_bins, binning=settings.binning,
                                    n_boot=settings.n_boot, alpha=settings.alpha, seed=settings.seed, estimate=value,
                                    sample_weight=weights)
            row.update(low=_finite(found.low), high=_finite(found.high), method=found.method,
                       n_boot=int(found.n_boot), note=found.note)
        rows.append(row)
    return rows


def _fixable(model: ReportModel, settings: ReportSettings) -> dict:
    """:func:`calib_core.recalibration.fixable.fixable_part` (as the Metrics and Estimators pages), as plain data."""
    p = model.predictions
    if p.kind == "confidence":
        return {"method": None, "sentence": "Not measured for a confidence model: the fixable part is measured by "
                "recalibrating class probabilities, and recalibrating a stated confidence changes no answer."}
    try:
        found = fixable_part(p.probs, p.labels, logits=p.logits, n_boot=settings.n_boot, seed=settings.seed,
                             alpha=settings.alpha, sample_weight=p.sample_weight)
    except CalibrationInputError as exc:
        return {"method": None, "sentence": f"The fixable part cannot be measured: {exc}"}
    return {"method": found.method, "brier_drop": _finite(found.brier_drop),
            "brier_drop_low": _finite(found.brier_drop_low), "brier_drop_high": _finite(found.brier_drop_high),
            "nll_drop": _finite(found.nll_drop), "nll_drop_low": _finite(found.nll_drop_low),
            "nll_drop_high": _finite(found.nll_drop_high), "sentence": found.sentence()}


def _verdicts(model: ReportModel, settings: ReportSettings) -> list[dict]:
    """:func:`calib_core.calibration_test` for each of :data:`TEST_METHODS` (reason when one cannot run), with the
    model's row weights as the Metrics page (fractional weights: the test's refusal is the row's reason)."""
    probs, labels = model.predictions.probs, model.predictions.labels
    rows = []
    for method in TEST_METHODS:
        # The one seed for every test (each draws its own named stream of it), as the Metrics page and the CLI.
        options = {"n_resamples": settings.n_resamples} if method == "consistency" else {}
        try:
            result = cc.calibration_test(probs, labels, method=method, alpha=settings.alpha, seed=settings.seed,
                                         sample_weight=model.predictions.sample_weight, **options)
        except CalibrationInputError as exc:
            rows.append({"method": method, "statistic": None, "p_value": None, "verdict": "not run",
                         "reason": str(exc)})
            continue
        rows.append({"method": method, "statistic": _finite(result.statistic), "p_value": _finite(result.p_value),
                     "verdict": result.verdict, "reason": result.verdict_reason,
                     "null_distribution": result.null_distribution, "reference": result.reference})
    return rows


def _summary(model: ReportModel) -> dict:
    p = model.predictions
    accuracy = p.accuracy if p.n_samples else float("nan")
    splits = {}
    if p.split is not None:
        values, counts = np.unique(p.split.astype(str), return_counts=True)
        splits = {str(v): int(c) for v, c in zip(values, counts)}
    return {"name": model.name, "rows": model.rows, "n_samples": int(p.n_samples), "n_classes": int(p.n_classes),
            "classes": [str(c) for c in p.class_names], "accuracy": _finite(accuracy), "input_kind": p.input_kind,
            "source_format": p.source_format, "splits": splits, "kind": p.kind,
            "files": [{"name": n, "sha256": h} for n, h in model.files], **summary_weights(p),
            "notes": [*map(str, p.warnings), *([p.logit_reason] if p.logit_reason else []), *model.notes]}


def report_data(models: Sequence[ReportModel], settings: ReportSettings, *,
                sections: Sequence[str] = REPORT_SECTIONS, generated: str | None = None) -> dict:
    """The report's numbers as plain data (also embedded in the HTML as JSON).

    Returns
    -------
    dict
        ``calib_core_version``, ``generated`` (ISO 8601, UTC), ``settings``,
        and per model its ``summary``, ``metrics`` (key, name, estimate,
        low, high, method, n_boot, note) and ``verdicts`` (method, statistic,
        p_value, verdict, reason) -- the last two only when their section is asked for.
    """
    stamp = generated or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    out = {"calib_core_version": calib_core_version(), "generated": stamp,
           "settings": {"n_bins": settings.n_bins, "binning": settings.binning, "right": True,
                        "n_boot": settings.n_boot, "seed": settings.seed, "alpha": settings.alpha,
                        "n_resamples": settings.n_resamples, "max_quadratic_rows": settings.max_quadratic_rows,
                        "sensitivity_bins": [min(settings.sensitivity_bins), max(settings.sensitivity_bins)]
                        if settings.sensitivity_bins else [], "simplex_bins": settings.simplex_bins},
           "models": []}
    for model in models:
        entry = {"summary": _summary(model)}
        if "metrics" in sections:
            entry["metrics"] = _metrics(model, settings)
            entry["fixable"] = _fixable(model, settings)
        if "verdicts" in sections:
            entry["verdicts"] = _verdicts(model, settings)
        out["models"].append(entry)
    out.update({"weights": found} if (found := weights_data(models)) else {})  # studio.report_weights
    return out


# ----------------------------------------------------------------------------- figures

def _figures(models: Sequence[ReportModel], settings: ReportSettings, sections: Sequence[str],
             recalibrations: Sequence[Recalibration] = ()) -> list[tuple[str, str, object]]:
    """``(section, caption, plotly Figure)`` for every chart, in report order."""
    from calib_core.plot import figures
    from calib_core.plot.figures_simplex import simplex_figure
    from studio.text import plot_text

    colors = {m.name: i for i, m in enumerate(models)}
    n_rows = {m.name: m.predictions.n_samples for m in models}
    out = []
    stated = [m for m in models if m.predictions.kind == "confidence"]
    models = [m for m in models if m.predictions.kind != "confidence"]  # the class charts below
    if "reliability" in sections and stated:
        tables = {m.name: cc.reliability_table(m.predictions.probs, m.predictions.labels, settings.n_bins,
                                               settings.binning, target=1, alpha=settings.alpha,
                                               sample_weight=m.predictions.sample_weight) for m in stated}
        out.append(("reliability", f"Confidence models: stated confidence against correctness, {settings.n_bins} "
                    f"{settings.binning} bins", figures.reliability_figure(
                        tables, colors=colors, n_rows=n_rows, title="Stated confidence (confidence models)",
                        x_title="Mean stated confidence in the bin")))
    if "reliability" in sections and models:
        tables = {m.name: cc.reliability_table(m.predictions.probs, m.predictions.labels, settings.n_bins,
                                               settings.binning, alpha=settings.alpha,
                                               sample_weight=m.predictions.sample_weight) for m in models}
        out.append(("reliability", f"Top-label reliability, {settings.n_bins} {settings.binning} bins",
                    figures.reliability_figure(tables, colors=colors, n_rows=n_rows,
                                               title="Top label (confidence of the predicted class)")))
        for group in _class_groups(models):
            names = group[0].predictions.class_names
            for k, class_name in enumerate(names[:MAX_CLASS_DIAGRAMS]):
                tables = {m.name: cc.reliability_table(m.predictions.probs, m.predictions.labels, settings.n_bins,
                                                       settings.binning, target=k, alpha=settings.alpha,
                                                       sample_weight=m.predictions.sample_weight)
                          for m in group}
                out.append(("reliability", f"Class {class_name} (one-vs-rest), {settings.n_bins} "
                            f"{settings.binning} bins",
                            figures.reliability_figure(
                                tables, colors=colors, n_rows=n_rows, histogram_log=True,
                                title=f"Class {plot_text(class_name)} (one-vs-rest)",
                                x_title=f"Mean predicted probability of class {plot_text(class_name)} in the bin")))
    if "per_class" in sections:
        for group in _class_groups(models):
            tables = {m.name: cc.per_class_table(m.predictions.probs, m.predictions.labels, settings.n_bins,
                                                 settings.binning, class_names=m.predictions.class_names,
                                                 sample_weight=m.predictions.sample_weight)
                      for m in group}
            out.append(("per_class", "Per-class ACE (adaptive ranges) and class-wise ECE",
                        figures.per_class_figure(tables, colors=colors)))
    if "sensitivity" in sections and settings.sensitivity_bins and models:
        frames = [cc.bin_sensitivity(m.predictions.probs, m.predictions.labels,
                                     bin_counts=settings.sensitivity_bins, metrics=SENSITIVITY_METRICS,
                                     sample_weight=m.predictions.sample_weight).assign(model=m.name) for m in models]
        n_ref = min(weighted_size(m.predictions) for m in models)  # as the Bin sensitivity page marks them
        marks = figures.bin_marks(n_ref)
        out.append(("sensitivity", f"ECE, ACE, SCE, TACE against the number of bins (N = {n_ref:,} for the marks)",
                    figures.sensitivity_figure(pd.concat(frames, ignore_index=True), marks=marks, colors=colors)))
    if "simplex" in sections:
        for m in models:
            k = m.predictions.n_classes
            if k < 3:
                continue
            groups = tuple(tuple(int(c) for c in part) for part in np.array_split(np.arange(k), 3))
            result = cc.simplex_reliability(m.predictions.probs, m.predictions.labels, groups=groups,
                                            n_bins=settings.simplex_bins, sample_weight=m.predictions.sample_weight)
            vertex = "classes" if k == 3 else "class groups " + " | ".join(
                "+".join(str(m.predictions.class_names[c]) for c in g) for g in groups)
            out.append(("simplex", f"{m.name}: simplex arrows ({vertex}), {settings.simplex_bins} subdivisions",
                        simplex_figure(result, class_names=list(m.predictions.class_names),
                                       title=plot_text(m.name))))
    if "recalibration" in sections:
        out += _recalibration_figures(recalibrations)
    return out


def _recalibration_figures(recalibrations: Sequence[Recalibration]) -> list[tuple[str, str, object]]:
    """One before/after reliability figure per comparison (its recommended method, and the one picked on the page)."""
    from calib_core.plot import figures

    out = []
    for recalibration in recalibrations:
        if not recalibration.diagrams:
            continue
        keys = list(recalibration.diagrams)
        out.append(("recalibration", f"{recalibration.model}: reliability before and after ({', '.join(keys[1:])})",
                    figures.reliability_figure(dict(recalibration.diagrams), layout="side_by_side",
                                               colors={key: 2 * i for i, key in enumerate(keys)})))
    return out


def _class_groups(models: Sequence[ReportModel]) -> list[list[ReportModel]]:
    """Models grouped by identical class names (per-class charts overlay only models with the same classes)."""
    groups: dict[tuple, list[ReportModel]] = {}
    for m in models:
        groups.setdefault(tuple(m.predictions.class_names), []).append(m)
    return list(groups.values())


# ----------------------------------------------------------------------------- HTML

_STYLE = """
body{font-family:Arial,Helvetica,sans-serif;margin:24px auto;max-width:1180px;color:#1f2933;line-height:1.45}
h1{font-size:1.6em;margin-bottom:4px}h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.9em}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.chart{margin:12px 0 28px}.caption{color:#52606d;font-size:.9em}
.mono{font-family:monospace;word-break:break-all}.note{color:#52606d;font-size:.9em}
"""


def _model_heading(model: ReportModel) -> str:
    return f"<h3>{_e(model.name)} <span class='note'>({_e(model.rows)})</span></h3>"


def _data_section(data: dict) -> str:
    parts = ["<h2>Data</h2>"]
    for entry in data["models"]:
        s = entry["summary"]
        classes = s["classes"]
        shown = ", ".join(classes[:50]) + (f", ... ({len(classes) - 50} more)" if len(classes) > 50 else "")
        if s.get("kind") == "confidence":
            kind_rows = [("kind", "confidence model: a stated confidence per item and whether the answer was right "
                                  "(not a two-class problem)"), ("accuracy (share of answers right)",
                                                                   _num(s["accuracy"], 4))]
        else:
            kind_rows = [("K (classes)", str(s["n_classes"])), ("classes", shown), ("accuracy", _num(s["accuracy"], 4))]
        rows = [("model", s["name"]), ("rows analysed", s["rows"]), ("N", f"{s['n_samples']:,}"), *kind_rows,
                ("input kind", s["input_kind"]), ("file format", s["source_format"] or ""), *summary_rows(s)]
        if s["splits"]:
            rows.append(("splits", ", ".join(f"{k}: {v:,}" for k, v in s["splits"].items())))
        rows += [(f"input file {i + 1}", f"{f['name']}  SHA-256 {f['sha256']}") for i, f in enumerate(s["files"])]
        rows += [("loader note", n) for n in s["notes"]] or [("loader notes", "none")]
        parts.append(f"<h3>{_e(s['name'])}</h3>" + _table(("item", "value"), rows, cls="summary"))
    return "".join(parts)


def _metrics_section(models: Sequence[ReportModel], data: dict, settings: ReportSettings) -> str:
    methods = "; ".join(f"{k}: {v}" for k, v in INTERVAL_METHODS.items())
    parts = ["<h2>Metrics</h2>",
             f"<p class='note'>Every metric of calib_core.metrics.registry, named with its settings "
             f"(metric_name); the {100 * (1 - settings.alpha):g}% interval is made the way the registry declares "
             f"for each metric (metric_interval: {_e(methods)}), with {settings.n_boot} bootstrap resamples and "
             f"seed {settings.seed} where it is a bootstrap.</p>"]
    for model, entry in zip(models, data["models"]):
        rows = [(r["name"], r["key"], _num(r["estimate"]) + (" ⚠ unreliable" if r.get("unreliable") else ""),
                 _num(r["low"]), _num(r["high"]), INTERVAL_METHODS.get(r["method"], r["method"]), r["n_boot"],
                 r["note"], f"no: {r['unreliable']}" if r.get("unreliable") else "yes") for r in entry["metrics"]]
        parts.append(_model_heading(model) + _table(
            ("metric", "key", "estimate", "interval low", "interval high", "interval method", "resamples", "note",
             "within its bounds?"), rows, cls="metrics"))
        parts.append(f"<p class='fixable'><b>What recalibration can fix</b> (the recommended default method's drop "
                     f"under cross-fitting, paired bootstrap interval): {_e(entry['fixable']['sentence'])}</p>")
    return "".join(parts)


def _verdicts_section(models: Sequence[ReportModel], data: dict, settings: ReportSettings) -> str:
    parts = ["<h2>Verdicts</h2>",
             f"<p class='note'>calib_core.calibration_test at level alpha = {settings.alpha:g}; the verdict is "
             "calib_core.inference.verdicts.read_test's reading (miscalibrated / consistent / inconclusive).</p>"]
    for model, entry in zip(models, data["models"]):
        rows = [(r["method"], _num(r["statistic"], 4), "n/a" if r["p_value"] is None else f"{r['p_value']:.3g}",
                 r["verdict"], r["reason"]) for r in entry["verdicts"]]
        parts.append(_model_heading(model) + _table(("test", "statistic", "p-value", "verdict", "why"), rows,
                                                    cls="verdicts"))
    return "".join(parts)


def _recalibration_section(recalibration: Recalibration, charts: str = "") -> str:
    """One comparison: the verdict and the margin over the runner-up (the page's sentences), the note, the
    before/after diagram(s) (``charts``, HTML) and the table."""
    frame = recalibration.table
    rows = [[("" if isinstance(v, float) and not math.isfinite(v) else
              f"{v:.6f}" if isinstance(v, (float, np.floating)) else v) for v in row]
            for row in frame.itertuples(index=False)]
    verdict = ""
    if recalibration.recommendation is not None:
        found = recalibration.recommendation
        lines = [found.sentence(recalibration.model, markdown=False), found.comparison(markdown=False)]
        verdict = "".join(f"<p class='verdict'>{_e(line)}</p>" for line in lines if line)
    return (f"<h3>{_e(recalibration.model)}</h3>{verdict}<p class='note'>{_e(recalibration.note)}</p>{charts}"
            + _table([str(c) for c in frame.columns], rows, cls="recalibration"))


def recalibration_of(model: ReportModel, settings: ReportSettings,
                     recalibration: RecalibrationSettings | None = None) -> Recalibration:
    """The comparison of the Recalibration page for one model, made here (the Data page's and the CLI's reports).

    :func:`calib_core.recalibration.confidence.compare_predictions` (``compare_methods``, or the confidence
    comparison of a confidence model) with ``recalibration``'s methods, protocol, resamples and seed; the diagrams
    are the reliability tables (the report's bins) before and after the
    recommended method. A model whose rows the protocol cannot split gets
    the reason as its note and no verdict.
    """
    recalibration = recalibration or RecalibrationSettings()
    p = model.predictions
    protocol = recalibration.protocol or Protocol(seed=settings.seed)
    n_boot = settings.n_boot if recalibration.n_boot is None else recalibration.n_boot
    seed = settings.seed if recalibration.seed is None else recalibration.seed
    try:  # a confidence model: maps of its stated confidence, judged without an accuracy (calib_core decides)
        found = compare_predictions(p, methods=recalibration.methods, protocol=protocol, n_boot=int(n_boot),
                                    seed=int(seed), alpha=settings.alpha,
                                    boot_budget_seconds=recalibration.boot_budget_seconds)
    except CalibrationInputError as exc:
        return Recalibration(model.name, pd.DataFrame(), note=f"No comparison: {exc}")
    ev, best = found.ev, found.recommendation.method
    target = reliability_target(ev)
    diagrams = {"Before": cc.reliability_table(ev.before, ev.labels, settings.n_bins, settings.binning, target,
                                               sample_weight=ev.sample_weight)}
    if best is not None:
        diagrams[f"After: {best}"] = cc.reliability_table(found.fits[best].probs, ev.labels, settings.n_bins,
                                                          settings.binning, target, sample_weight=ev.sample_weight)
    note = comparison_note(found.protocol_sentence, ev, found.fits, n_boot=found.n_boot, seed=found.seed,
                           skipped_seconds=found.skipped_seconds, budget_seconds=recalibration.boot_budget_seconds)
    return Recalibration(model.name, found.table, diagrams, note, found.recommendation)


def comparison_note(sentence: str, ev: compare.EvaluationSet, fits: Mapping[str, compare.MethodFit], *,
                    n_boot: int, seed: int, skipped_seconds: float = 0.0, budget_seconds: float | None = None) -> str:
    """The note under a comparison in the report (this module's and the Recalibration page's): the protocol
    ``sentence``, the evaluation rows, the methods, the bootstrap (``n_boot`` 0: none; ``skipped_seconds``:
    the predicted time that was over the budget) and :func:`comparison_notes`."""
    intervals = (f"{n_boot:,} paired bootstrap resamples, seed {seed}" if n_boot
                 else f"no bootstrap intervals (predicted {skipped_seconds:.0f} s, over the "
                      f"{budget_seconds:.0f} s budget)" if skipped_seconds and budget_seconds is not None
                 else "no bootstrap intervals")
    return " ".join([sentence, f"{ev.labels.size:,} evaluation rows.", f"Methods: {', '.join(fits)}; {intervals}.",
                     *comparison_notes(ev, fits)]).strip()


def comparison_notes(ev: compare.EvaluationSet, fits: Mapping[str, compare.MethodFit]) -> list[str]:
    """The warnings the Recalibration page shows beside a verdict, as sentences: classes with too few rows,
    methods that could not be fitted, fits stopped at their iteration cap, exact zeros that inflate the NLL
    (:func:`calib_core.recalibration.compare.zero_hazards`)."""
    notes = list(ev.notes)
    notes += [f"{name} could not be fitted: {fit.message}" for name, fit in fits.items() if not fit.ok]
    notes += [f"{name} stopped at its iteration cap ({n_iter} L-BFGS-B iterations): read its numbers with care."
              for name, n_iter in compare.unconverged_fits(fits).items()]
    notes += [hazard.sentence for hazard in compare.zero_hazards(ev, fits).values()]
    return notes


def _recalibration_data(recalibration: Recalibration) -> dict:
    """A comparison's verdict for the report's JSON: the recommended method, the runner-up and their margin."""
    found = recalibration.recommendation
    out = {"model": recalibration.model, "note": recalibration.note, "recommended": None, "runner_up": None,
           "best": None, "tied": [], "verdict": None, "comparison": None, "margin": None}
    if found is None:
        return out
    out.update(recommended=found.method, runner_up=found.runner_up, best=found.best, tied=list(found.tied),
               verdict=found.sentence(recalibration.model, markdown=False),
               comparison=found.comparison(markdown=False))
    if found.pair is not None:
        pair = found.pair
        out["margin"] = {"metric": pair.key, "winner": pair.winner, "runner_up": pair.runner_up,
                         "estimate": _finite(pair.estimate), "low": _finite(pair.low), "high": _finite(pair.high),
                         "beyond_noise": pair.beyond_noise, "n_boot": pair.n_boot, "alpha": pair.alpha}
    return out


def _recalibrations(models: Sequence[ReportModel], settings: ReportSettings, sections: Sequence[str],
                    given: Recalibration | Sequence[Recalibration] | None,
                    recalibration_settings: RecalibrationSettings | None) -> tuple[tuple[Recalibration, ...], list]:
    """The comparisons of the recalibration section (given, or made per model) and their settings-table rows."""
    if "recalibration" not in sections:
        return (), []
    if given is not None:
        return ((given,) if isinstance(given, Recalibration) else tuple(given)), []
    made = recalibration_settings or RecalibrationSettings()
    protocol = made.protocol or Protocol(seed=settings.seed)
    rows = [("recalibration methods", "the Recalibration page's default set at each model's K" if made.methods is None
             else ", ".join(made.methods)),
            ("recalibration protocol", f"{compare.SCHEMES[protocol.scheme]} (a stratified random split of "
             f"{protocol.test_fraction:g} when a model has no usable split column), seed {protocol.seed}"
             + (f", {protocol.n_folds} folds" if protocol.scheme == "cross_fit" else "")
             + (", IN-SAMPLE" if protocol.in_sample else "")),
            ("recalibration resamples and seed", f"{settings.n_boot if made.n_boot is None else made.n_boot}, "
             f"seed {settings.seed if made.seed is None else made.seed}")]
    # A confidence model's recalibration is not compared here (it would be judged on class probabilities).
    return tuple(recalibration_of(m, settings, made) for m in models if m.predictions.kind != "confidence"), rows


_TITLES = {"reliability": "Reliability diagrams", "per_class": "Per-class ACE", "sensitivity": "Bin sensitivity",
           "simplex": "Simplex (2-D reliability, arrows from mean prediction to observed frequency)",
           "recalibration": "Recalibration"}


def build_report(models: Sequence[ReportModel], settings: ReportSettings | None = None, *,
                 sections: Sequence[str] = REPORT_SECTIONS,
                 recalibration: Recalibration | Sequence[Recalibration] | None = None,
                 title: str = "Calibration report", generated: str | None = None,
                 recalibration_settings: RecalibrationSettings | None = None,
                 decisions: report_decisions.DecisionInputs | None = None) -> str:
    """The report as one self-contained HTML document.

    Parameters
    ----------
    models : sequence of ReportModel
    settings : ReportSettings, optional
        Defaults: 15 uniform bins, 1000 resamples, seed 0, alpha 0.05.
    sections : sequence of str
        Which of :data:`REPORT_SECTIONS` to include ("data" is always included).
    recalibration : Recalibration or sequence of them, optional
        Comparisons already computed (a page's); shown when "recalibration"
        is in ``sections``. Without them that section makes one per model
        (:func:`recalibration_of` with ``recalibration_settings``).
    title : str
        Document title (plain text; escaped).
    generated : str, optional
        Timestamp to print (default: now, UTC, ISO 8601).
    recalibration_settings : RecalibrationSettings, optional
        How the recalibration section is made when no comparison is given
        (default: the Recalibration page's first view).
    decisions : studio.report_decisions.DecisionInputs, optional
        A threshold or cost matrix and/or a deployment file: adds the
        "Decisions" and "Deployment" sections (:mod:`studio.report_decisions`).

    Returns
    -------
    str
        HTML with plotly.js inline once, one ``<div class="chart">`` per figure,
        the numbers as JSON in ``script#report-data``; it loads nothing from the network.

    Raises
    ------
    CalibrationInputError
        No model, or a section name that is not in :data:`REPORT_SECTIONS`.
    """
    settings = settings or ReportSettings()
    if not models:
        raise CalibrationInputError("`models` is empty: the report needs at least one model.")
    unknown = [s for s in sections if s not in REPORT_SECTIONS]
    if unknown:
        raise CalibrationInputError(f"`sections` has unknown names {unknown}; choose from {list(REPORT_SECTIONS)}.")
    sections = ("data", *[s for s in REPORT_SECTIONS if s in sections and s != "data"])
    data = report_data(models, settings, sections=sections, generated=generated)
    recalibrations, recalibration_rows = _recalibrations(models, settings, sections, recalibration,
                                                         recalibration_settings)
    if recalibrations:
        data["recalibration"] = [_recalibration_data(r) for r in recalibrations]
    charts = _figures(models, settings, sections, recalibrations)

    head_rows = [("calib_core version", data["calib_core_version"]), ("generated (UTC)", data["generated"]),
                 ("sections", ", ".join(sections)), *settings.rows(), *recalibration_rows]
    body = [f"<h1>{_e(title)}</h1>", "<h2>Provenance and settings</h2>", _table(("item", "value"), head_rows,
                                                                                cls="settings"),
            weights_html(models), _data_section(data)]
    if "metrics" in sections:
        body.append(_metrics_section(models, data, settings))
    if "verdicts" in sections:
        body.append(_verdicts_section(models, data, settings))
    by_section: dict[str, list] = {}
    for section, caption, fig in charts:
        by_section.setdefault(section, []).append((caption, fig))
    config = {"displaylogo": False, "responsive": True}
    n = 0
    def chart_div(section: str, caption: str, fig) -> str:
        nonlocal n
        n += 1
        chart_config = {**config, "toImageButtonOptions": {"format": "png",
                                                           "filename": chart_file_name("report", section, n)}}
        div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"chart-{n}", config=chart_config)
        return f"<div class='chart'><p class='caption'>{_e(caption)}</p>{div}</div>"

    for section in sections:
        if section == "recalibration" and recalibrations:
            # each comparison with its own diagram, in the order of the figures (one per comparison with diagrams)
            pending = iter(by_section.pop(section, []))
            body.append(f"<h2>{_TITLES[section]}</h2>" + unweighted_note(section, models) + "".join(
                _recalibration_section(r, chart_div(section, *next(pending)) if r.diagrams else "")
                for r in recalibrations))
        elif section in by_section:
            body.append(f"<h2>{_TITLES[section]}</h2>" + unweighted_note(section, models))
        for caption, fig in by_section.get(section, []):
            body.append(chart_div(section, caption, fig))
        if section in ("simplex",) and section not in by_section and any(m.predictions.n_classes < 3 for m in models):
            body.append("<h2>Simplex</h2><p class='note'>No model with three or more classes.</p>")
    if decisions is not None and (decisions.decides or decisions.deployment is not None):
        part, data["decisions"] = report_decisions.decisions_html(models, settings, decisions, chart_div)
        body.append(part)
    for part in ("selective", "systems"):  # issue 26 (studio/report_confidence); weighted or say why not (issue 28)
        body += [block.replace("</h2>", "</h2>" + unweighted_note(part, models), 1) for block in confidence_sections(
            models, settings, [s for s in sections if s == part], data, chart_div, table=_table, escape=_e)]
    payload = json.dumps(data, allow_nan=False, default=str).replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("&", "\\u0026")
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_e(title)}</title><style>{_STYLE}</style>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script>",
        "</head><body>", *body,
        f"<script type='application/json' id='report-data'>{payload}</script>",
        f"<p class='note'>{n} charts. Made with calibration studio (calib_core {_e(data['calib_core_version'])}).</p>",
        "</body></html>",
    ])


def chart_count(html_text: str) -> int:
    """Number of charts in a report made by :func:`build_report` (``<div class='chart'>`` blocks)."""
    return html_text.count("<div class='chart'>")
