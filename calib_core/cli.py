"""Command line: ``python -m calib_core report FILE`` (also installed as ``calib-core``).

Prints every registered metric for a predictions file as a table, or as JSON
for CI pipelines. Bad input gives a one-line error on stderr and exit status 2.
A metric that cannot be computed on valid input (e.g. SKCE on a one-row file)
is "n/a -- reason" in the table and ``null`` with an entry in ``reasons`` in
the JSON; the rest of the report comes out and the exit status is 0.
"""
from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Sequence

from calib_core.validation import CalibrationInputError

EXIT_BAD_INPUT = 2


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="calib-core", description="Calibration metrics for classifier predictions.")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="print every calibration metric of a predictions file")
    report.add_argument("path", help="CSV/TSV, Parquet, NPZ or NPY file of probabilities or logits plus labels, "
                        "or a folder or glob pattern of CSV/Parquet files with the same columns")
    report.add_argument("--n-bins", type=int, default=15, help="number of bins for binned metrics (default 15)")
    report.add_argument("--binning", choices=("uniform", "adaptive"), default="uniform",
                        help="bins for ECE, RMSCE, MCE and class-wise ECE (default uniform)")
    report.add_argument("--label-column", default=None, help="name of the label column (default: detected)")
    report.add_argument("--input-kind", choices=("auto", "probabilities", "logits"), default="auto",
                        help="whether the class columns hold probabilities or logits (default: detected)")
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
    return parser


def _report(args: argparse.Namespace) -> dict:
    from calib_core.evaluate import choose_engine
    from calib_core.io import load_predictions
    from calib_core.registry import METRICS, metric_report

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
    if pipe:
        with open(args.path, "rb") as handle:  # read once, as the bytes of an upload
            predictions = load_predictions(handle, name=os.path.basename(args.path), label_column=args.label_column,
                                           input_kind=args.input_kind, renormalize=args.renormalize,
                                           percentages=args.percentages)
    else:
        predictions = load_predictions(args.path, label_column=args.label_column, input_kind=args.input_kind,
                                       renormalize=args.renormalize, percentages=args.percentages)
    if args.split is not None:
        if predictions.split is None:
            raise CalibrationInputError(f"--split {args.split!r} given but {args.path} has no split column.")
        mask = predictions.split == args.split
        if not mask.any():
            known = ", ".join(sorted(set(predictions.split.tolist())))
            raise CalibrationInputError(f"no rows with split {args.split!r}; the file has: {known}.")
        predictions = predictions.subset(mask)
    limit = None if args.max_quadratic_rows == 0 else args.max_quadratic_rows
    report = metric_report(predictions.probs, predictions.labels, n_bins=args.n_bins, binning=args.binning,
                           max_quadratic_rows=limit)
    skipped = report.skipped
    notes = [f"left out the O(N^2) metrics {', '.join(skipped)}: {predictions.n_samples:,} rows > "
             f"--max-quadratic-rows {limit:,} (0 computes them anyway)"] if skipped else []
    values = report.values
    labels = {spec.key: spec.label for spec in METRICS}
    return {
        "file": str(args.path),
        "n_samples": predictions.n_samples,
        "n_classes": predictions.n_classes,
        "input_kind": predictions.input_kind,
        "n_bins": args.n_bins,
        "binning": args.binning,
        "split": args.split,
        "warnings": list(predictions.warnings) + notes,
        "metrics": values,
        "reasons": report.reasons,
        "metric_labels": {key: labels[key] for key in values},
        "metric_names": _names(values, args),
        "engine": "memory",
        **({"statistics": _summary_of(predictions, args)} if args.json else {}),
    }


def _summary_of(predictions, args: argparse.Namespace) -> dict:
    from calib_core.evaluate import evaluate_arrays

    return evaluate_arrays(predictions.probs, predictions.labels, n_bins=args.n_bins, binning=args.binning,
                           class_names=predictions.class_names, input_kind=predictions.input_kind,
                           files=(str(args.path),), split=args.split, warnings=predictions.warnings).summary()


def _report_scaled(args: argparse.Namespace, engine: str) -> dict:
    from calib_core.evaluate import SUMMARY_SWEEP_BINS, evaluate
    from calib_core.registry import METRICS

    result = evaluate(args.path, engine=engine, batch_rows=args.batch_rows,
                      scheduler=args.scheduler, n_bins=args.n_bins, binning=args.binning,
                      label_column=args.label_column, input_kind=args.input_kind, split=args.split,
                      sweep_bins=SUMMARY_SWEEP_BINS if args.json else (), progress=_progress_bar())
    labels = {spec.key: spec.label for spec in METRICS}
    return {
        "file": str(args.path),
        "n_samples": result.n_samples,
        "n_classes": result.n_classes,
        "input_kind": result.input_kind,
        "n_bins": args.n_bins,
        "binning": args.binning,
        "split": args.split,
        "warnings": list(result.warnings),
        "metrics": result.metrics,
        "reasons": {},
        "metric_labels": {key: labels.get(key, key) for key in result.metrics},
        "metric_names": _names(result.metrics, args),
        "engine": engine,
        **({"statistics": result.summary()} if args.json else {}),
    }


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
    """Each metric's name with its settings (:func:`calib_core.registry.metric_name`)."""
    from calib_core.registry import get_metric, metric_name

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
        lines.append(f"{names[key]:<{width}}  {shown}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _build_parser().parse_args(argv)
    try:
        result = _report(args)
    except CalibrationInputError as exc:
        print(f"calib-core: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"calib-core: error: cannot read {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(result, indent=2) if args.json else _format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
