"""Command line: ``python -m calib_core COMMAND`` (also installed as ``calib-core``).

``report FILE`` prints every registered metric for a predictions file as a
table, or as JSON for CI pipelines (``--n-boot N``: with each metric's
interval, made as the Metrics page makes it). The other sub-commands live in
their own modules: ``check`` (the CI gate, :mod:`calib_core.engines.cli_check`),
``recalibrate`` and ``apply`` (:mod:`calib_core.engines.cli_recalibrate`),
``compare`` (:mod:`calib_core.engines.cli_compare`); the loader flags, exit
codes and the one error path are shared (:mod:`calib_core.engines.cli_common`).

Bad input gives a one-line error on stderr and exit status 2, in every
sub-command. A metric that cannot be computed on valid input (e.g. SKCE on a
one-row file) is "n/a -- reason" in the table and ``null`` with an entry in
``reasons`` in the JSON; the rest of the report comes out and the exit status
is 0. An estimate that breaks a bound of its true quantity (e.g. the kernel
CE_KL above the NLL) keeps its value and is marked "unreliable at this N and K"
with the reason (``unreliable`` in the JSON; see
``calib_core.metrics.reports.check_estimate``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from calib_core._accel import blas_single_threaded
from calib_core.engines import cli_check, cli_compare, cli_recalibrate, decisions_report
from calib_core.engines.batches import choose_engine
from calib_core.engines.cli_common import (EXIT_BAD_INPUT, _cli_words, _Parser, _pipe_kind, _read_input,
                                           _select_split, add_loader_flags, load_file, loader_options, run)
from calib_core.engines.cli_common import json_number as _finite
from calib_core.io import load_predictions
from calib_core.io.formats import FORMATS
from calib_core.io.unlabelled import load_unlabelled
from calib_core.engines.evaluate import SUMMARY_SWEEP_BINS, evaluate, evaluate_arrays
from calib_core.inference.calibration_tests import TEST_METHODS, calibration_test
from calib_core.inference.groups import by_group, multicalibration
from calib_core.inference.intervals import metric_interval
from calib_core.lab.size_power import SIZE_NOTES
from calib_core.metrics.registry import METRICS, get_metric, metric_name
from calib_core.metrics.reports import MAX_FIT_CELLS, UNRELIABLE, check_bounds, fit_cells, metric_report
from calib_core.validation import CalibrationInputError

__all__ = ["EXIT_BAD_INPUT", "main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="calib-core", description="Calibration metrics for classifier predictions: report, "
                     "gate (check), recalibrate, apply a saved map, compare models.")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="print every calibration metric of a predictions file")
    report.add_argument("path", help="CSV/TSV, Parquet, NPZ or NPY file of probabilities or logits plus labels, "
                        "or a folder or glob pattern of CSV/Parquet files with the same columns")
    report.add_argument("more_paths", nargs="*", metavar="FILE", help="more models (with --html only)")
    report.add_argument("--n-bins", type=int, default=15, help="number of bins for binned metrics (default 15)")
    report.add_argument("--binning", choices=("uniform", "adaptive"), default="uniform",
                        help="bins for ECE, RMSCE, MCE and class-wise ECE (default uniform)")
    add_loader_flags(report)
    report.add_argument("--max-quadratic-rows", type=int, default=20_000, metavar="N",
                        help="leave out the O(N^2) kernel metrics above N rows (default 20000; 0: no limit; "
                             "negative values are refused)")
    report.add_argument("--split", default=None, help="evaluate only the rows of this split (e.g. test)")
    report.add_argument("--weight-column", default=None, metavar="COL",
                        help="row weights from column COL (CSV/Parquet): every metric, interval and test is weighted "
                             "(integer weights = repeated rows; docs/weights.md says which metrics take fractional "
                             "weights); the stream/dask engines compute the uniform-bin metrics, weighted")
    report.add_argument("--deployment", default=None, metavar="FILE",
                        help="predictions of the same model on the deployment's unlabelled rows (CSV/Parquet, one "
                             "column per class named as in FILE, or a binary `score`; a label column is ignored): "
                             "adds the deployment's class prevalence by EM and BBSE with intervals, the test of no "
                             "shift, and every metric re-weighted to the deployment (label shift assumed; memory "
                             "engine)")
    report.add_argument("--threshold", type=float, default=None, metavar="T",
                        help="adds the decisions section: the decision curve (net benefit, treat all/none) before "
                             "and after cross-fitted temperature scaling, with intervals, and what recalibrating is "
                             "worth per 1,000 decisions when acting at P(class 1) >= T (binary models)")
    report.add_argument("--cost-matrix", default=None, metavar="FILE.json",
                        help="as --threshold, for the least-cost action of a cost matrix: JSON [[...], ...] or "
                             '{"costs": [[...], ...], "units": "..."}, one row per action, one column per class')
    report.add_argument("--json", action="store_true",
                        help="print JSON instead of a table, with the per-bin summary statistics (no rows)")
    report.add_argument("--engine", choices=("auto", "memory", "stream", "dask"), default="auto",
                        help="memory: load the table; stream: record batches, memory bounded by --batch-rows; "
                             "dask: a Dask cluster (--scheduler); auto: stream inputs over 200 MB (default)")
    report.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: a local cluster)")
    report.add_argument("--batch-rows", type=int, default=None, metavar="N",
                        help="rows per record batch when streaming (default: about 64 MB of class values)")
    report.add_argument("--group-by", default=None, metavar="COL",
                        help="add a per-group section: ECE and ACE of each value of column COL with "
                             f"{GROUP_N_BOOT}-resample bootstrap intervals, the worst group and its gap to the overall "
                             "value, and the multicalibration summary (rows without a value form the group "
                             "'(missing)'; with --engine stream/dask: the exact per-group values without "
                             "intervals, ACE/TACE/KS per group marked unavailable)")
    report.add_argument("--html", default=None, metavar="OUT.html",
                        help="write the one-file offline HTML report (every setting, the file hashes, metrics with "
                             "intervals, verdicts and charts) to OUT.html; needs plotly (pip install "
                             "'calib-core[report]')")
    report.add_argument("--n-boot", type=int, default=None, metavar="N",
                        help="bootstrap resamples of each metric's interval, made as the Metrics page makes it "
                             "(calib_core.metric_interval, seed --seed): the table and --json show intervals "
                             f"only when it is given (the page's default is {APP_N_BOOT}); --html: default 1000")
    report.add_argument("--seed", type=int, default=0,
                        help="seed of the calibration tests (each its own named stream of it) and of the --html "
                             "report's bootstrap (default 0, as the app)")
    report.set_defaults(handler=_run_report)
    for module in (cli_check, cli_recalibrate, cli_compare):
        module.add_commands(commands)
    return parser


#: The Metrics page's default number of resamples (its "Bootstrap resamples" control).
APP_N_BOOT = 200
#: ``report --html``'s default number of resamples.
HTML_N_BOOT = 1000


def _html_report(args: argparse.Namespace) -> dict:
    """Write the HTML report of every FILE to ``args.html`` (:mod:`studio.report`); returns what was written."""
    try:
        from studio import report as html_report
    except ImportError as exc:  # plotly (or the studio package) is not installed
        raise CalibrationInputError(f"--html needs plotly ({exc.name or exc} is missing): "
                                    "pip install 'calib-core[report]'.") from None
    if args.engine not in ("auto", "memory") or args.scheduler is not None:
        raise CalibrationInputError("--html loads the rows into memory; leave out --engine/--scheduler.")
    if args.max_quadratic_rows < 0:
        raise CalibrationInputError(
            f"--max-quadratic-rows must be 0 (no limit) or a positive number of rows, got {args.max_quadratic_rows}."
        )
    models = [_html_model(path, args, html_report) for path in [args.path, *args.more_paths]]
    settings = html_report.ReportSettings(n_bins=args.n_bins, binning=args.binning, n_boot=args.n_boot,
                                          seed=args.seed, max_quadratic_rows=args.max_quadratic_rows or None)
    # BLAS on one thread: the report makes thousands of small products (one per resample), for each of which
    # OpenBLAS wakes its threads to spin (the AUROC interval at 12,000 rows: 8.0 s CPU, 0.9 s on one; issue 29).
    with blas_single_threaded():
        text = html_report.build_report(models, settings, decisions=_html_decisions(args))
    try:
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise CalibrationInputError(f"cannot write {args.html}: {exc.strerror or exc}") from None
    return {"html": args.html, "models": [m.name for m in models], "charts": html_report.chart_count(text)}


def _html_decisions(args: argparse.Namespace):
    """``--threshold``/``--cost-matrix``/``--deployment`` as the HTML report's inputs (None without them)."""
    if not _decision_flags(args):
        return None
    from studio.report_decisions import DecisionInputs

    if args.threshold is not None and args.cost_matrix is not None:
        raise CalibrationInputError("give --threshold or --cost-matrix, not both.")
    costs, units = decisions_report.read_cost_matrix(args.cost_matrix) if args.cost_matrix else (None, None)
    deployment = _read_input(args.deployment).getvalue() if args.deployment is not None else None
    return DecisionInputs(threshold=args.threshold, cost_matrix=costs, units=units, deployment=deployment,
                          deployment_file=args.deployment or "")


def _html_model(path: str, args: argparse.Namespace, html_report):
    """One ``studio.report.ReportModel``: the file(s) loaded as for the table, each file's SHA-256."""
    import glob

    options = loader_options(args)
    if os.path.isfile(path) or _pipe_kind(path):
        raw = _read_input(path)  # read once: the bytes hashed are the bytes loaded
        predictions = load_predictions(raw, **options)
        files = ((os.path.basename(path), html_report.sha256_hex(raw.getvalue())),)
    else:
        predictions = load_predictions(path, **options)
        matched = sorted(os.path.join(path, f) for f in os.listdir(path)) if os.path.isdir(path) else sorted(
            glob.glob(path))
        files = tuple((p, html_report.sha256_hex(p)) for p in matched if os.path.isfile(p))
    rows = "all rows"
    if args.split is not None:
        predictions, rows = _select_split(predictions, args.split, path, f" in {path}"), f"split {args.split}"
    return html_report.ReportModel(predictions.name, predictions, files, rows)


def _report(args: argparse.Namespace) -> dict:

    if args.max_quadratic_rows < 0:
        raise CalibrationInputError(
            f"--max-quadratic-rows must be 0 (no limit) or a positive number of rows, got {args.max_quadratic_rows}."
        )
    pipe = _pipe_kind(args.path)
    engine = "memory" if pipe and args.engine == "auto" else choose_engine(args.path, args.engine)
    scaled = engine != "memory" or args.scheduler is not None or args.batch_rows is not None
    if pipe and scaled:
        raise CalibrationInputError(
            f"{args.path} is a {pipe}, which can be read only once, but the {engine} engine reads its input in "
            "several passes; use --engine memory (the default for a pipe), or save the data to a file first."
        )
    if scaled and _decision_flags(args):
        raise CalibrationInputError(f"{_decision_flags(args)} needs the memory engine (--engine memory): the "
                                    f"{engine} engine keeps no rows to resample or to recalibrate.")
    if scaled:
        return _report_scaled(args, engine)
    # A folder or a pattern goes to the loader, which says why it cannot be loaded in memory.
    predictions = load_file(args.path, args, group=args.group_by)
    if args.split is not None:
        predictions = _select_split(predictions, args.split, args.path)
    limit = None if args.max_quadratic_rows == 0 else args.max_quadratic_rows
    decisions = _decision_sections(predictions, args, limit)  # first: their input errors end the run at once
    report = metric_report(predictions.probs, predictions.labels, n_bins=args.n_bins, binning=args.binning,
                           max_quadratic_rows=limit, kind=predictions.kind, sample_weight=predictions.sample_weight)
    quadratic = [key for key in report.skipped if get_metric(key).quadratic]
    fits = [key for key in report.skipped if get_metric(key).per_class_fit]
    notes = [f"left out the O(N^2) metrics {', '.join(quadratic)}: {predictions.n_samples:,} rows > "
             f"--max-quadratic-rows {limit:,} (0 computes them anyway)"] if quadratic else []
    if fits:
        notes.append(f"left out the per-class fits {', '.join(fits)}: {predictions.n_samples:,} rows x "
                     f"{predictions.n_classes:,} classes = {fit_cells(*predictions.probs.shape):,} rows x fits > "
                     f"{MAX_FIT_CELLS:,} (calib_core.ici and calib_core.cox_calibration compute them)")
    return {
        **_report_head(args, predictions, warnings=list(predictions.warnings) + notes, metrics=report.values,
                       reasons=report.reasons, engine="memory", unreliable=report.unreliable),
        **_intervals_section(predictions, report.values, args),
        "tests": _tests_section(predictions, args),
        **({"groups": _groups_section(predictions, args)} if args.group_by is not None else {}),
        **decisions,
        **({"statistics": _summary_of(predictions, args)} if args.json else {}),
    }


def _decision_flags(args: argparse.Namespace) -> str:
    """The flags given among --deployment, --threshold, --cost-matrix ("" when none)."""
    given = [flag for flag, value in (("--deployment", args.deployment), ("--threshold", args.threshold),
                                      ("--cost-matrix", args.cost_matrix)) if value is not None]
    return "/".join(given)


def decision_inputs(args: argparse.Namespace, predictions) -> dict:
    """The deployment file and the decision rule the flags give, read and checked (``{}`` without the flags)."""
    if args.threshold is not None and args.cost_matrix is not None:
        raise CalibrationInputError("give --threshold or --cost-matrix, not both.")
    inputs: dict = {}
    if args.deployment is not None:
        inputs["unlabelled"] = load_unlabelled(args.deployment, predictions.class_names)
    if args.cost_matrix is not None:
        inputs["cost_matrix"], inputs["units"] = decisions_report.read_cost_matrix(args.cost_matrix)
    return inputs


def _decision_sections(predictions, args: argparse.Namespace, limit: int | None) -> dict:
    """``--deployment`` and ``--threshold``/``--cost-matrix``: their sections (n_boot: --n-boot, default the app's)."""
    if not _decision_flags(args):
        return {}
    inputs = decision_inputs(args, predictions)
    n_boot = APP_N_BOOT if args.n_boot is None else args.n_boot
    out = {}
    if "unlabelled" in inputs:
        found = decisions_report.deployment_report(predictions, inputs["unlabelled"], n_boot=n_boot, seed=args.seed,
                                                   alpha=INTERVAL_ALPHA, n_bins=args.n_bins, binning=args.binning,
                                                   max_quadratic_rows=limit)
        out["deployment"] = decisions_report.deployment_json(found, predictions.class_names, file=args.deployment)
    if args.threshold is not None or args.cost_matrix is not None:
        found = decisions_report.decision_report(predictions, threshold=args.threshold,
                                                 cost_matrix=inputs.get("cost_matrix"), units=inputs.get("units"),
                                                 n_boot=n_boot, seed=args.seed, alpha=INTERVAL_ALPHA)
        out["decisions"] = decisions_report.decision_json(found, predictions.class_names)
    return out


def _stem(path: str) -> str:
    """A file's name without its extensions (``preds.csv.gz`` -> ``preds``), as the app names models; a folder
    or pattern as given."""
    name = os.path.basename(path.rstrip("/"))
    if name.endswith(".gz"):
        name = name[:-3]
    stem, extension = os.path.splitext(name)
    return stem if stem and extension.lower().lstrip(".") in FORMATS else name or path


def _intervals_section(predictions, values: dict, args: argparse.Namespace) -> dict:
    """``--n-boot N``: each metric's interval as the Metrics page makes it, for the same resamples and seed.

    :func:`calib_core.metric_interval` with the page's settings per metric
    (the bin count only where the metric uses bins, the binning only where it
    can be chosen; the estimate of the table), so the same seed gives the
    page's intervals. Without ``--n-boot``: no section (no resampling time).
    """
    if args.n_boot is None:
        return {}
    section = {}
    for key, estimate in values.items():
        if estimate is None:
            continue
        spec = get_metric(key)
        found = metric_interval(key, predictions.probs, predictions.labels,
                                n_bins=args.n_bins if spec.uses_bins else 15,
                                binning=args.binning if spec.uses_binning else "uniform",
                                n_boot=args.n_boot, alpha=INTERVAL_ALPHA, seed=args.seed, estimate=estimate,
                                sample_weight=predictions.sample_weight)
        section[key] = {"low": _finite(found.low), "high": _finite(found.high), "std": _finite(found.std),
                        "method": found.method, "n_boot": found.n_boot, "note": found.note}
    return {"n_boot": args.n_boot, "seed": args.seed, "alpha": INTERVAL_ALPHA, "intervals": section}


#: The level of the report's intervals (the Metrics page's default).
INTERVAL_ALPHA = 0.05


def _report_head(args: argparse.Namespace, source, *, warnings: list[str], metrics: dict, reasons: dict,
                 engine: str, unreliable: dict) -> dict:
    """The keys every report starts with, in the JSON's order; ``source`` (the loaded predictions or the
    :func:`evaluate` result) gives ``n_samples``, ``n_classes`` and ``input_kind``."""
    labels = {spec.key: spec.label for spec in METRICS}
    return {
        "file": str(args.path),
        "model": getattr(source, "name", None) or _stem(str(args.path)),
        "n_samples": source.n_samples,
        "n_classes": source.n_classes,
        "kind": getattr(source, "kind", "classes"),
        "input_kind": source.input_kind,
        **({"weight_column": source.weight_column} if getattr(source, "weight_column", None) else {}),
        "n_bins": args.n_bins,
        "binning": args.binning,
        "split": args.split,
        "warnings": [_cli_words(w) for w in warnings],  # the loader's notes name flags here
        "metrics": metrics,
        "reasons": reasons,
        "unreliable": unreliable,
        "metric_labels": {key: labels.get(key, key) for key in metrics},
        "metric_names": _names(metrics, args),
        "engine": engine,
    }


def _tests_section(predictions, args: argparse.Namespace) -> dict:
    """Every method of :func:`calib_core.calibration_test` at its defaults (seed ``--seed``): method ->
    statistic, p_value, verdict, reason, null_distribution and the Lab's measured size; a test that cannot be
    computed on this input has null values and the reason."""
    section = {}
    for method in TEST_METHODS:
        try:
            found = calibration_test(predictions.probs, predictions.labels, method, seed=getattr(args, "seed", 0),
                                     sample_weight=predictions.sample_weight)
        except CalibrationInputError as exc:
            section[method] = {"statistic": None, "p_value": None, "verdict": None,
                               "reason": " ".join(str(exc).split()), "null_distribution": None,
                               "measured_size": SIZE_NOTES[method]}
            continue
        section[method] = {"statistic": _finite(found.statistic), "p_value": float(found.p_value),
                           "verdict": found.verdict, "reason": found.verdict_reason,
                           "null_distribution": found.null_distribution, "measured_size": SIZE_NOTES[method]}
    return section


#: Bootstrap resamples per group of ``--group-by`` (seed 0).
GROUP_N_BOOT = 200
#: The metrics reported per group by ``--group-by``.
GROUP_METRICS = ("ece", "ace")


def _groups_section(predictions, args: argparse.Namespace) -> dict:
    """``--group-by``: :func:`calib_core.by_group` of ECE and ACE and :func:`calib_core.multicalibration`."""
    metrics = {}
    notes: list[str] = []
    for key in GROUP_METRICS:
        result = by_group(key, predictions.probs, predictions.labels, predictions.groups, n_boot=GROUP_N_BOOT,
                          seed=0, n_bins=args.n_bins, binning=args.binning)
        metrics[key] = {
            "name": metric_name(key, n_bins=args.n_bins, binning=args.binning),
            "overall": _finite(result.overall),
            "overall_ci_low": _finite(result.overall_low), "overall_ci_high": _finite(result.overall_high),
            "worst_group": None if result.worst_group is None else str(result.worst_group),
            "worst_value": _finite(result.worst_value), "worst_gap": _finite(result.worst_gap),
            "gap_ci_low": _finite(result.gap_low), "gap_ci_high": _finite(result.gap_high),
            "table": [{"group": str(row.group), "value": _finite(row.value), "ci_low": _finite(row.ci_low),
                       "ci_high": _finite(row.ci_high), "n": int(row.n), "gap": _finite(row.gap),
                       "too_small": bool(row.too_small), "note": row.note}
                      for row in result.table.itertuples(index=False)],
        }
        notes += [n for n in result.notes if n not in notes]
    multi = multicalibration(predictions.probs, predictions.labels, predictions.groups, n_bins=args.n_bins,
                             binning=args.binning)
    return {
        "column": predictions.group_column, "n_groups": len(metrics[GROUP_METRICS[0]]["table"]),
        "n_boot": GROUP_N_BOOT, "seed": 0, "alpha": 0.05, "metrics": metrics, "notes": notes,
        "multicalibration": {
            "max_gap": _finite(multi.max_gap), "gap": _finite(multi.gap),
            "group": None if multi.group is None else str(multi.group), "bin": int(multi.bin),
            "lower": _finite(multi.lower), "upper": _finite(multi.upper), "count": int(multi.count),
            "confidence": _finite(multi.confidence), "accuracy": _finite(multi.accuracy),
            "n_cells": int(multi.n_cells), "n_cells_used": int(multi.n_cells_used), "min_count": int(multi.min_count),
            "reason": multi.reason,
        },
    }


def _format_groups(section: dict) -> list[str]:
    """The ``--group-by`` section as table lines."""
    lines = [f"groups by {section['column']!r} ({section['n_groups']} groups; 95% intervals from "
             f"{section['n_boot']} bootstrap resamples per group, seed {section['seed']}):" if section["n_boot"] else
             f"groups by {section['column']!r} ({section['n_groups']} groups; {section['engine']} engine, "
             "exact per-group values, no intervals):"]
    for entry in section["metrics"].values():
        lines.append(f"  {entry['name']}: overall {_number(entry['overall'])}")
        width = max(len(row["group"]) for row in entry["table"])
        lines.append(f"    {'group':<{width}}  {'value':>8}  {'95% interval':<18}  {'n':>7}")
        for row in entry["table"]:
            flag = "  too small" if row["too_small"] else ""
            interval = f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
            lines.append(f"    {row['group']:<{width}}  {_number(row['value']):>8}  {interval:<18}  {row['n']:>7}{flag}")
        if entry["worst_group"] is not None:
            lines.append(f"    worst: {entry['worst_group']!r}, gap {_number(entry['worst_gap'], sign=True)} to "
                         f"overall [{_number(entry['gap_ci_low'], sign=True)}, {_number(entry['gap_ci_high'], sign=True)}]")
    lines += [f"  {key}: n/a -- {reason}" for key, reason in section.get("unavailable", {}).items()]
    multi = section["multicalibration"]
    if multi["max_gap"] is None:
        lines.append(f"  multicalibration: n/a -- {multi['reason']}")
    else:
        lines.append(f"  multicalibration: largest |confidence - accuracy| {multi['max_gap']:.4f} in group "
                     f"{multi['group']!r}, bin {multi['bin']} ({multi['lower']:.3g}, {multi['upper']:.3g}], "
                     f"{multi['count']} rows (cells with >= {multi['min_count']} rows: {multi['n_cells_used']} "
                     f"of {multi['n_cells']})")
    lines += [f"  note: {n}" for n in section["notes"]]
    return lines


def _number(value: float | None, *, sign: bool = False) -> str:
    return "n/a" if value is None else (f"{value:+.4f}" if sign else f"{value:.4f}")


def _summary_of(predictions, args: argparse.Namespace) -> dict:
    return evaluate_arrays(predictions.probs, predictions.labels, n_bins=args.n_bins, binning=args.binning,
                           class_names=predictions.class_names, input_kind=predictions.input_kind,
                           files=(str(args.path),), split=args.split, warnings=predictions.warnings,
                           sample_weight=predictions.sample_weight, weight_column=predictions.weight_column).summary()


def _report_scaled(args: argparse.Namespace, engine: str) -> dict:
    if args.class_names is not None:
        raise CalibrationInputError(f"--class-names needs the memory engine (--engine memory), not the {engine} "
                                    "engine; or name each class column p_<class> after its label.")
    if args.n_boot is not None:
        raise CalibrationInputError(f"--n-boot resamples rows in memory, which the {engine} engine does not "
                                    "hold; use --engine memory, or leave out --n-boot for the exact values.")
    result = evaluate(args.path, engine=engine, batch_rows=args.batch_rows,
                      scheduler=args.scheduler, n_bins=args.n_bins, binning=args.binning,
                      label_column=args.label_column, input_kind=args.input_kind, split=args.split,
                      sweep_bins=SUMMARY_SWEEP_BINS if args.json else (), progress=_progress_bar(),
                      group_column=args.group_by, weight_column=args.weight_column)
    return {
        **_report_head(args, result, warnings=list(result.warnings), metrics=result.metrics, reasons={},
                       engine=engine, unreliable=check_bounds(result.metrics, n_rows=result.n_samples,
                                                              n_classes=result.n_classes)),
        **({"groups": result.groups.report_section(GROUP_METRICS)} if result.groups is not None else {}),
        **({"statistics": result.summary()} if args.json else {}),
    }


def _names(values: dict, args: argparse.Namespace) -> dict[str, str]:
    """Each metric's name with its settings (:func:`calib_core.metrics.registry.metric_name`)."""
    names = {}
    for key in values:
        try:
            get_metric(key)
        except CalibrationInputError:  # a key only the scaled engines know
            names[key] = key
            continue
        names[key] = metric_name(key, n_bins=args.n_bins, binning=args.binning)
    return names


def _progress_bar():
    """A one-line progress display on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int | None, pass_number: int) -> None:
        share = f" ({100 * done / total:.0f}%)" if total else ""
        end = "\n" if total and done >= total else ""
        print(f"\rpass {pass_number}: {done:,} rows{share}", end=end, file=sys.stderr, flush=True)

    return show


def _format_table(result: dict) -> str:
    lines = [
        f"{result['file']}: N={result['n_samples']}, "
        + ("confidence model (stated confidence against correctness)" if result.get("kind") == "confidence"
           else f"K={result['n_classes']}, {result['input_kind']}") + ", "
        + (f"weighted by {result['weight_column']}, " if result.get("weight_column") else "") +
        f"{result['n_bins']} {result['binning']} bins" + (f", split={result['split']}" if result["split"] else ""),
    ]
    lines += [f"warning: {w}" for w in result["warnings"]]
    if "intervals" in result:
        lines.append(f"{1 - result['alpha']:.0%} intervals: {result['n_boot']:,} bootstrap resamples, seed "
                     f"{result['seed']} (each made as its metric declares, as on the Metrics page)")
    names = result["metric_names"]
    width = max((len(name) for name in names.values()), default=0)
    for key, value in result["metrics"].items():
        shown = f"{value:.6f}" if value is not None else f"n/a -- {result['reasons'].get(key, 'not available')}"
        interval = result.get("intervals", {}).get(key)
        if interval is not None:
            shown += (f"  [{interval['low']:.6f}, {interval['high']:.6f}]" if interval["low"] is not None
                      else f"  (no interval: {interval['note'].removeprefix('none: ')})")
        if key in result.get("unreliable", {}):
            shown += f"  ({UNRELIABLE}: see below)"
        lines.append(f"{names[key]:<{width}}  {shown}")
    lines += [f"{names[key]}: {reason}" for key, reason in result.get("unreliable", {}).items()]
    if result.get("tests"):
        lines.append("calibration tests (alpha = 0.05):")
        for method, test in result["tests"].items():
            shown = (f"p = {test['p_value']:.4g}  {test['verdict']}" if test["p_value"] is not None
                     else f"n/a -- {test['reason']}")
            lines.append(f"  {method:<{width - 2}}  {shown}")
    if result.get("groups"):
        lines += _format_groups(result["groups"])
    if result.get("deployment"):
        lines += decisions_report.deployment_lines(result["deployment"], names)
    if result.get("decisions"):
        lines += decisions_report.decision_lines(result["decisions"])
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (``check``: 0 pass, 1 fail, 3 inconclusive; 2 bad input)."""
    try:
        args = _build_parser().parse_args(argv)
    except SystemExit as exc:  # a usage error (one line printed, status 2) or --help (status 0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    return run(args.handler, args)


def _run_report(args: argparse.Namespace) -> int:
    if args.seed < 0:
        raise CalibrationInputError(f"--seed must be 0 or more, got {args.seed}.")
    if args.n_boot is not None and args.n_boot < 0:
        raise CalibrationInputError(f"--n-boot must be 0 or more, got {args.n_boot}.")
    if args.more_paths and not args.html:
        raise CalibrationInputError("several FILEs need --html (the table and --json report one FILE).")
    if args.html:
        if args.n_boot is None:
            args.n_boot = HTML_N_BOOT
        result = _html_report(args)
        print(f"wrote {result['html']}: {result['charts']} charts, models {', '.join(result['models'])}")
        return 0
    result = _report(args)
    print(json.dumps(result, indent=2) if args.json else _format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
