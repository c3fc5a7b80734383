"""Command line: ``python -m calib_core report FILE`` (also installed as ``calib-core``).

Prints every registered metric for a predictions file as a table, or as JSON
for CI pipelines. Bad input gives a one-line error on stderr and exit status 2.
A metric that cannot be computed on valid input (e.g. SKCE on a one-row file)
is "n/a -- reason" in the table and ``null`` with an entry in ``reasons`` in
the JSON; the rest of the report comes out and the exit status is 0. An
estimate that breaks a bound of its true quantity (e.g. the kernel CE_KL above
the NLL) keeps its value and is marked "unreliable at this N and K" with the
reason (``unreliable`` in the JSON; see ``calib_core.metrics.reports.check_estimate``).
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import stat
import sys
from collections.abc import Sequence
from typing import NoReturn

from calib_core.engines.batches import choose_engine
from calib_core.io.columns import split_mask
from calib_core.engines.evaluate import SUMMARY_SWEEP_BINS, evaluate, evaluate_arrays
from calib_core.inference.calibration_tests import TEST_METHODS, calibration_test
from calib_core.inference.groups import by_group, multicalibration
from calib_core.io import load_predictions
from calib_core.io.formats import MAX_BYTES
from calib_core.lab.size_power import SIZE_NOTES
from calib_core.metrics.registry import METRICS, get_metric, metric_name
from calib_core.metrics.reports import MAX_FIT_CELLS, UNRELIABLE, check_bounds, fit_cells, metric_report
from calib_core.validation import CalibrationInputError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line, like every other bad input (no usage block), and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"calib-core: error: {' '.join(message.split())} "
                                  "(`calib-core report --help` lists the options)\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="calib-core", description="Calibration metrics for classifier predictions.")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="print every calibration metric of a predictions file")
    report.add_argument("path", help="CSV/TSV, Parquet, NPZ or NPY file of probabilities or logits plus labels, "
                        "or a folder or glob pattern of CSV/Parquet files with the same columns")
    report.add_argument("more_paths", nargs="*", metavar="FILE", help="more models (with --html only)")
    report.add_argument("--n-bins", type=int, default=15, help="number of bins for binned metrics (default 15)")
    report.add_argument("--binning", choices=("uniform", "adaptive"), default="uniform",
                        help="bins for ECE, RMSCE, MCE and class-wise ECE (default uniform)")
    report.add_argument("--label-column", default=None, help="name of the label column (default: detected)")
    report.add_argument("--input-kind", choices=("auto", "probabilities", "logits"), default="auto",
                        help="whether the class columns hold probabilities or logits (default: detected)")
    report.add_argument("--class-names", default=None, metavar="A,B,...",
                        help="the class of each class column, in column order, separated by commas (accepts the "
                             "label-to-column mapping a refused file proposes; memory engine)")
    report.add_argument("--renormalize", action="store_true",
                        help="divide each probability row by its sum instead of refusing rows not summing to 1")
    report.add_argument("--percentages", action="store_true",
                        help="the values are percentages (rows sum to 100): divide them by 100")
    report.add_argument("--max-quadratic-rows", type=int, default=20_000, metavar="N",
                        help="leave out the O(N^2) kernel metrics above N rows (default 20000; 0: no limit; "
                             "negative values are refused)")
    report.add_argument("--split", default=None, help="evaluate only the rows of this split (e.g. test)")
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
    report.add_argument("--n-boot", type=int, default=1000, metavar="N",
                        help="bootstrap resamples of the report's intervals (with --html; default 1000)")
    report.add_argument("--seed", type=int, default=0,
                        help="seed of the calibration tests (each its own named stream of it) and of the --html "
                             "report's bootstrap (default 0, as the app)")
    return parser


def _html_report(args: argparse.Namespace) -> dict:
    """Write the HTML report of every FILE to ``args.html`` (:mod:`studio.report`); returns what was written."""
    try:
        from studio import report as html_report
    except ImportError as exc:  # plotly (or the studio package) is not installed
        raise CalibrationInputError(f"--html needs plotly ({exc.name or exc} is missing): "
                                    "pip install 'calib-core[report]'.") from None
    if args.engine not in ("auto", "memory") or args.scheduler is not None:
        raise CalibrationInputError("--html loads the rows into memory; leave out --engine/--scheduler.")
    if args.n_boot < 0:
        raise CalibrationInputError(f"--n-boot must be 0 or more, got {args.n_boot}.")
    if args.max_quadratic_rows < 0:
        raise CalibrationInputError(
            f"--max-quadratic-rows must be 0 (no limit) or a positive number of rows, got {args.max_quadratic_rows}."
        )
    models = [_html_model(path, args, html_report) for path in [args.path, *args.more_paths]]
    settings = html_report.ReportSettings(n_bins=args.n_bins, binning=args.binning, n_boot=args.n_boot,
                                          seed=args.seed, max_quadratic_rows=args.max_quadratic_rows or None)
    text = html_report.build_report(models, settings)
    try:
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise CalibrationInputError(f"cannot write {args.html}: {exc.strerror or exc}") from None
    return {"html": args.html, "models": [m.name for m in models], "charts": html_report.chart_count(text)}


def _html_model(path: str, args: argparse.Namespace, html_report):
    """One ``studio.report.ReportModel``: the file(s) loaded as for the table, each file's SHA-256."""
    import glob


    options = dict(label_column=args.label_column, input_kind=args.input_kind, renormalize=args.renormalize,
                   percentages=args.percentages, class_names=_class_names(args))
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
    return html_report.ReportModel(os.path.basename(path.rstrip("/")) or path, predictions, files, rows)


def _select_split(predictions, split: str, path: str, where: str = ""):
    """The rows of split ``split``, chosen by the engines' split filter (:func:`~calib_core.io.columns.split_mask`)."""
    if predictions.split is None:
        raise CalibrationInputError(f"--split {split!r} given but {path} has no split column.")
    mask = split_mask(predictions.split, split)
    if not mask.any():
        known = ", ".join(sorted(set(predictions.split.tolist())))
        raise CalibrationInputError(f"no rows with split {split!r}{where}; the file has: {known}.")
    return predictions.subset(mask)


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
    if scaled:
        return _report_scaled(args, engine)
    if pipe or os.path.isfile(args.path):
        predictions = load_predictions(_read_input(args.path), label_column=args.label_column,
                                       input_kind=args.input_kind, renormalize=args.renormalize,
                                       percentages=args.percentages, group=args.group_by,
                                       class_names=_class_names(args))
    else:  # a folder or a pattern: the loader says why it cannot be loaded in memory
        predictions = load_predictions(args.path, label_column=args.label_column, input_kind=args.input_kind,
                                       renormalize=args.renormalize, percentages=args.percentages,
                                       group=args.group_by, class_names=_class_names(args))
    if args.split is not None:
        predictions = _select_split(predictions, args.split, args.path)
    limit = None if args.max_quadratic_rows == 0 else args.max_quadratic_rows
    report = metric_report(predictions.probs, predictions.labels, n_bins=args.n_bins, binning=args.binning,
                           max_quadratic_rows=limit)
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
        "tests": _tests_section(predictions, args),
        **({"groups": _groups_section(predictions, args)} if args.group_by is not None else {}),
        **({"statistics": _summary_of(predictions, args)} if args.json else {}),
    }


def _report_head(args: argparse.Namespace, source, *, warnings: list[str], metrics: dict, reasons: dict,
                 engine: str, unreliable: dict) -> dict:
    """The keys every report starts with, in the JSON's order; ``source`` (the loaded predictions or the
    :func:`evaluate` result) gives ``n_samples``, ``n_classes`` and ``input_kind``."""
    labels = {spec.key: spec.label for spec in METRICS}
    return {
        "file": str(args.path),
        "n_samples": source.n_samples,
        "n_classes": source.n_classes,
        "input_kind": source.input_kind,
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
            found = calibration_test(predictions.probs, predictions.labels, method, seed=getattr(args, "seed", 0))
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


def _finite(value) -> float | None:
    """JSON has no NaN or infinity: a missing or infinite number is null (a reason beside it says why)."""
    return float(value) if value is not None and math.isfinite(value) else None


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
                           files=(str(args.path),), split=args.split, warnings=predictions.warnings).summary()


def _class_names(args: argparse.Namespace) -> list[str] | None:
    """``--class-names a,b`` as the loader's ``class_names``."""
    if args.class_names is None:
        return None
    return [name.strip() for name in args.class_names.split(",")]


def _report_scaled(args: argparse.Namespace, engine: str) -> dict:
    if args.class_names is not None:
        raise CalibrationInputError(f"--class-names needs the memory engine (--engine memory), not the {engine} "
                                    "engine; or name each class column p_<class> after its label.")

    result = evaluate(args.path, engine=engine, batch_rows=args.batch_rows,
                      scheduler=args.scheduler, n_bins=args.n_bins, binning=args.binning,
                      label_column=args.label_column, input_kind=args.input_kind, split=args.split,
                      sweep_bins=SUMMARY_SWEEP_BINS if args.json else (), progress=_progress_bar(),
                      group_column=args.group_by)
    return {
        **_report_head(args, result, warnings=list(result.warnings), metrics=result.metrics, reasons={},
                       engine=engine, unreliable=check_bounds(result.metrics, n_rows=result.n_samples,
                                                              n_classes=result.n_classes)),
        **({"groups": result.groups.report_section(GROUP_METRICS)} if result.groups is not None else {}),
        **({"statistics": result.summary()} if args.json else {}),
    }


def _read_input(path: str) -> io.BytesIO:
    """The bytes of one file for the memory engine, read once and bounded, named after the file.

    A regular file's size is checked before it is opened; a pipe, device or socket has no
    size and is read up to :data:`~calib_core.io.formats.MAX_BYTES` plus one byte (``report
    /dev/zero`` ends with this message, not a MemoryError). The loader parses these bytes,
    never the file itself, so a file rewritten while the report runs cannot change (or
    crash) the read, and the bytes an HTML report hashes are the bytes it loaded.
    """
    size = os.stat(path).st_size if os.path.isfile(path) else None
    if size is not None and size > MAX_BYTES:
        raise CalibrationInputError(_too_big_for_memory(path, f"{size:,} bytes"))
    with open(path, "rb") as handle:
        # A regular file: one read of the size found (one byte more tells a file that grew). Anything
        # else: chunks, so that memory grows with what arrives and stops at the limit.
        chunks = [handle.read(size + 1)] if size is not None else iter(lambda: handle.read(1 << 20), b"")
        parts, total = [], 0
        for chunk in chunks:
            total += len(chunk)
            if total > MAX_BYTES:
                raise CalibrationInputError(_too_big_for_memory(path, f"more than {MAX_BYTES:,} bytes"))
            parts.append(chunk)
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    buffer = io.BytesIO(data)
    buffer.name = os.path.basename(path)  # the loader's messages say "file 'NAME'"
    return buffer


def _too_big_for_memory(path: str, size: str) -> str:
    return (f"{path} is {size}, over the {MAX_BYTES:,}-byte limit of the memory engine (and of --html); "
            "evaluate it with --engine stream, whose memory is bounded at any size.")


def _pipe_kind(path: str) -> str | None:
    """``"pipe (FIFO)"``, ``"character device"`` or ``"socket"`` for such a path (e.g. from ``mkfifo`` or
    ``<(...)``), None for regular files, folders, patterns and paths that do not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode):
        return "pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return None


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
        f"{result['file']}: N={result['n_samples']}, K={result['n_classes']}, {result['input_kind']}, "
        f"{result['n_bins']} {result['binning']} bins" + (f", split={result['split']}" if result["split"] else ""),
    ]
    lines += [f"warning: {w}" for w in result["warnings"]]
    names = result["metric_names"]
    width = max((len(name) for name in names.values()), default=0)
    for key, value in result["metrics"].items():
        shown = f"{value:.6f}" if value is not None else f"n/a -- {result['reasons'].get(key, 'not available')}"
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
    return "\n".join(lines)


#: Command-line spelling of the loader keywords a refused file's fixes set (see calib_core.io.interpret.LoadFix).
_FIX_FLAGS = {("renormalize", True): "--renormalize", ("percentages", True): "--percentages",
              ("input_kind", "logits"): "--input-kind logits", ("input_kind", "probabilities"): "--input-kind probabilities"}


#: Python argument mentions in calib_core messages -> what does it on the command line.
_CLI_WORDS = (
    (r"`label_column=(-?\d+|'[^']*')?`", lambda m: "--label-column" + (f" {m.group(1).strip(chr(39))}" if m.group(1) else "")),
    (r"`class_names=[^`]*`", "--class-names A,B,..."),
    (r"`input_kind='(logits|probabilities)'`", r"--input-kind \1"),
    (r"`renormalize=True`", "--renormalize"),
    (r"`percentages=True`", "--percentages"),
    (r"`group=`", "--group-by"),
    (r"[Pp]ass `class_columns=`|[Pp]ass `score_column=(?:'[^']*')?`", "name the class columns p_<class>"),
    (r"`class_columns=`|`score_column=(?:'[^']*')?`", "class columns named p_<class>"),
)


def _fix_flag(item: tuple) -> str | None:
    """The command-line spelling of one ``(keyword, value)`` of a fix, or None when the command line has none."""
    key, value = item
    if key == "class_names":
        import shlex

        return "--class-names " + shlex.quote(",".join(str(v) for v in value))
    return _FIX_FLAGS.get(item)


def _cli_words(text: str) -> str:
    """A loader message with its Python arguments replaced by the command line's flags."""
    import re

    for pattern, replacement in _CLI_WORDS:
        text = re.sub(pattern, replacement, text)
    return text


def _error_text(exc: CalibrationInputError) -> str:
    """The message of ``exc`` in the command line's words.

    A file the loader refused with fixes (:class:`calib_core.io.interpret.PredictionsFileError`) is
    described without Python argument names, followed by the flags that apply each fix.
    """
    fixes = getattr(exc, "fixes", ())
    flags = [" ".join(_fix_flag(item) for item in fix.overrides) for fix in fixes
             if all(_fix_flag(item) for item in fix.overrides)]
    if not flags:
        return _cli_words(str(exc))
    return f"{exc.plain} To load it anyway: " + "; or ".join(flags) + "."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _build_parser().parse_args(argv)
    try:
        if args.seed < 0:
            raise CalibrationInputError(f"--seed must be 0 or more, got {args.seed}.")
        if args.more_paths and not args.html:
            raise CalibrationInputError("several FILEs need --html (the table and --json report one FILE).")
        result = _html_report(args) if args.html else _report(args)
    except CalibrationInputError as exc:
        print(f"calib-core: error: {' '.join(_error_text(exc).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"calib-core: error: cannot read {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.html:
        print(f"wrote {result['html']}: {result['charts']} charts, models {', '.join(result['models'])}")
        return 0
    print(json.dumps(result, indent=2) if args.json else _format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
