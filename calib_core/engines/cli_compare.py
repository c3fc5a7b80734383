"""``calib-core compare A B [C ...]``: models on the same rows, each metric with its interval and the paired
difference of every two models with its interval, and which model is better beyond noise.

The rows must be the same: matched by an id column (``--id-column``) or in
the same order, checked by their labels (:func:`matched_rows`). Every model
is resampled with the same seed, so resample ``b`` holds the same rows for
each, and ``value_B,b - value_A,b`` is the bootstrap distribution of the
difference (the paired bootstrap of the Recalibration page,
:func:`calib_core.recalibration.compare.intervals`). The numbers and the
verdicts are :func:`calib_core.recalibration.paired.compare_systems`'s (the
app's *Compare systems* section and the HTML report call the same function);
``check --baseline`` uses the same machinery (:func:`paired_metric`).
"""
from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import pandas as pd

from calib_core.engines.cli_common import add_loader_flags, check_metric_kind, load_file
from calib_core.inference.verdicts import check_alpha
from calib_core.io.confidence import SeveralModelsError
from calib_core.io.systems import match_by_id
from calib_core.metrics.registry import METRICS
from calib_core.recalibration.compare import HIGHER_IS_BETTER, METRIC_KEYS
from calib_core.recalibration.paired import CONFIDENCE_SYSTEM_KEYS, compare_systems
from calib_core.recalibration.paired import PairedMetric, paired_metric  # noqa: F401 (cli_check's import)
from calib_core.validation import CalibrationInputError, check_count

#: Resamples of ``compare`` and ``check --baseline`` by default.
DEFAULT_N_BOOT = 1000


def add_commands(commands) -> None:
    """Add ``compare`` to the sub-commands."""
    parser = commands.add_parser("compare", help="compare models on the same rows: each metric with its interval "
                                 "and the paired difference of every two models")
    parser.add_argument("path", metavar="A", help="the first model's predictions file (the reference)")
    parser.add_argument("others", nargs="*", metavar="B", help="the other models' files, on the same rows (none: "
                        "A is one confidence file of several systems, in a model column)")
    parser.add_argument("--metric", action="append", default=None, metavar="NAME",
                        help=f"a metric to compare (repeatable; default: {', '.join(METRIC_KEYS)}; confidence files: "
                             f"{', '.join(CONFIDENCE_SYSTEM_KEYS)}); any registry "
                             "metric with a bootstrap interval")
    add_metric_flags(parser)
    add_pairing_flags(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_loader_flags(parser)
    parser.set_defaults(handler=run_compare)


def add_metric_flags(parser: argparse.ArgumentParser) -> None:
    """The metric settings as flags (shared by ``check`` and ``compare``)."""
    parser.add_argument("--n-bins", type=int, default=15, help="bins of the binned metrics (default 15)")
    parser.add_argument("--binning", choices=("uniform", "adaptive"), default="uniform",
                        help="binning of ECE, RMSCE, MCE and class-wise ECE (default uniform)")
    parser.add_argument("--bandwidth", type=float, default=None,
                        help="kernel bandwidth of a kernel metric (default: the metric's own)")


def add_pairing_flags(parser: argparse.ArgumentParser) -> None:
    """Resampling and row matching (shared by ``check --baseline`` and ``compare``)."""
    parser.add_argument("--id-column", default=None, metavar="COL",
                        help="match the rows of the files by this column (default: the rows must be in the same "
                             "order, checked by their labels)")
    parser.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, metavar="N",
                        help=f"bootstrap resamples (default {DEFAULT_N_BOOT})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resamples (default 0)")
    parser.add_argument("--alpha", type=float, default=0.05, help="intervals cover 1 - alpha (default 0.05)")


def load_rows(path: str, args: argparse.Namespace):
    """A predictions file with its ``--id-column`` (read as the loader's group column) when one is given."""
    if args.id_column is None:
        return load_file(path, args)
    try:
        return load_file(path, args, group=args.id_column)
    except CalibrationInputError as exc:
        if getattr(exc, "fixes", ()):
            raise
        text = str(exc).replace("`group=`", "--id-column").replace("group column", "id column")
        raise CalibrationInputError(text.replace("as the group", "as the id")) from None


def matched_rows(first, second, *, first_path: str, second_path: str, id_column: str | None):
    """``second`` with its rows in the order of ``first``'s, checked to be the same rows.

    With ``id_column``: both files' ids must be unique and the same set, and
    ``second`` is reordered to ``first``'s ids. Without: the row counts must
    agree. Either way every matched row must have the same label in both
    files, else the files are not predictions on the same rows.

    Raises
    ------
    CalibrationInputError
        Saying which check failed and what to do.
    """
    if first.class_names != second.class_names:
        raise CalibrationInputError(f"{second_path} has classes {list(second.class_names)}, {first_path} has "
                                    f"{list(first.class_names)}: compare models of the same classes.")
    if id_column is not None:
        ids = [pd.Index(p.groups) for p in (first, second)]
        for index, path in zip(ids, (first_path, second_path)):
            if not index.is_unique:
                shown = ", ".join(map(str, index[index.duplicated()].unique()[:3]))
                raise CalibrationInputError(f"--id-column {id_column!r} repeats ids in {path} (e.g. {shown}): "
                                            "each row needs its own id.")
        order = ids[1].get_indexer(ids[0])
        if (order < 0).any() or len(ids[0]) != len(ids[1]):
            missing = int((order < 0).sum())
            raise CalibrationInputError(f"{first_path} and {second_path} do not hold the same ids in --id-column "
                                        f"{id_column!r} ({len(ids[0]):,} and {len(ids[1]):,} rows, {missing:,} "
                                        f"ids of the first missing from the second).")
        second = second.subset(order)
    elif first.n_samples != second.n_samples:
        raise CalibrationInputError(f"{first_path} has {first.n_samples:,} rows and {second_path} "
                                    f"{second.n_samples:,}: compare predictions on the same rows (or match them "
                                    "with --id-column).")
    differ = int((first.labels != second.labels).sum())
    if differ:
        how = f"matched by --id-column {id_column!r}" if id_column else "in file order"
        raise CalibrationInputError(f"{differ:,} of the {first.n_samples:,} rows of {first_path} and {second_path} "
                                    f"({how}) have different labels: they are not the same rows"
                                    + ("." if id_column else "; match them with --id-column."))
    return second


def check_resampling(args: argparse.Namespace) -> None:
    """``--n-boot``, ``--seed`` and ``--alpha`` checked once (:class:`CalibrationInputError` names the flag)."""
    check_count(args.n_boot, "--n-boot", 2)
    if args.seed < 0:
        raise CalibrationInputError(f"--seed must be 0 or more, got {args.seed}.")
    try:
        check_alpha(args.alpha)
    except CalibrationInputError:
        raise CalibrationInputError(f"--alpha must be a number in (0, 0.5], got {args.alpha}.") from None


def _load_systems(paths: list[str], args: argparse.Namespace) -> tuple[list, list[str]]:
    """Each file's model, or each system of a confidence file with a model column (its path as
    ``path:system``); at least two models."""
    loaded, shown = [], []
    for path in paths:
        try:
            loaded.append(load_rows(path, args))
            shown.append(path)
        except SeveralModelsError as several:
            loaded += several.models
            shown += [f"{path}:{m.name}" for m in several.models]
    if len(loaded) < 2:
        raise CalibrationInputError("compare needs at least two models: give two files or more, or one confidence "
                                    "file with several systems in a model column.")
    return loaded, shown


def _unique_names(predictions, paths) -> list[str]:
    names = [p.name for p in predictions]
    return names if len(set(names)) == len(names) else [str(path) for path in paths]


def compare(args: argparse.Namespace) -> dict:
    """The comparison as a JSON-ready dict (:func:`calib_core.recalibration.paired.compare_systems`)."""
    check_resampling(args)
    paths = [args.path, *args.others]
    loaded, paths = _load_systems(paths, args)
    kind = loaded[0].kind
    if any(m.kind != kind for m in loaded):
        raise CalibrationInputError("compare needs models of one kind: confidence files and K-class files mixed.")
    names = _unique_names(loaded, paths)
    if kind == "confidence":  # each system is right or wrong on its own: match items by id, not by labels
        models, matched_by = _matched_systems(loaded, names, args.id_column)
    else:
        models = [loaded[0]] + [matched_rows(loaded[0], other, first_path=paths[0], second_path=path,
                                             id_column=args.id_column)
                                for other, path in zip(loaded[1:], paths[1:])]
        matched_by = f"id column {args.id_column!r}" if args.id_column else "file order (labels checked)"
    keys = args.metric or list(CONFIDENCE_SYSTEM_KEYS if kind == "confidence" else METRIC_KEYS)
    known = {spec.key for spec in METRICS}
    for key in keys:
        if key not in known:
            raise CalibrationInputError(f"unknown --metric {key!r}; known: {', '.join(sorted(known))}.")
        check_metric_kind(key, models[0], "--metric")
    labels = np.stack([m.labels for m in models]) if kind == "confidence" else models[0].labels
    found = compare_systems([m.probs for m in models], labels, names=names, keys=keys, kind=kind,
                            n_bins=args.n_bins, binning=args.binning, bandwidth=args.bandwidth, n_boot=args.n_boot,
                            seed=args.seed, alpha=args.alpha)
    metrics = {}
    for paired in found.metrics:
        metrics[paired.key] = {
            "name": paired.name, "higher_is_better": paired.key in HIGHER_IS_BETTER,
            "models": {name: {"estimate": float(paired.estimates[m]), "low": float(paired.lows[m]),
                              "high": float(paired.highs[m])} for m, name in enumerate(names)},
            "differences": [{"a": d.a, "b": d.b, "difference": d.difference, "low": d.low, "high": d.high,
                             "better": d.better} for d in found.differences if d.key == paired.key],
        }
    return {"files": [str(p) for p in paths], "models": names, "n_samples": found.n_samples,
            "n_classes": int(models[0].n_classes), "n_boot": int(args.n_boot), "seed": int(args.seed),
            "alpha": float(args.alpha), "matched_by": matched_by, "metrics": metrics}


def _matched_systems(loaded, names: list[str], id_column: str | None):
    """Confidence models matched by item id (:func:`calib_core.io.systems.match_by_id`): the loader's id column,
    or ``--id-column`` (loaded as the group column); without ids, by position when the row counts agree."""
    if id_column is not None:
        loaded = [dataclasses.replace(m, ids=m.groups, groups=None, group_column=None) for m in loaded]
    shown = [f"{n} ({k + 1})" if names.count(n) > 1 else n for k, n in enumerate(names)]  # a file given twice
    models = match_by_id(loaded, names=shown)
    if all(m.ids is None for m in models):
        return models, "file order (no item id column)"
    return models, f"item id ({id_column!r})" if id_column else "item id (the files' id column)"


def format_compare(result: dict) -> str:
    """The comparison as text lines."""
    level = f"{1 - result['alpha']:.0%}"
    lines = [f"{len(result['models'])} models on the same {result['n_samples']:,} rows (matched by "
             f"{result['matched_by']}); {level} intervals from {result['n_boot']:,} paired bootstrap resamples, "
             f"seed {result['seed']}"]
    width = max(len(name) for name in result["models"])
    for entry in result["metrics"].values():
        lines.append(f"{entry['name']} ({'higher' if entry['higher_is_better'] else 'lower'} is better):")
        for name, value in entry["models"].items():
            lines.append(f"  {name:<{width}}  {value['estimate']:.6f}  [{value['low']:.6f}, {value['high']:.6f}]")
        for d in entry["differences"]:
            verdict = f"{d['better']} better beyond noise" if d["better"] else "within noise"
            lines.append(f"  {d['b']} - {d['a']}: {d['difference']:+.6f}  [{d['low']:+.6f}, {d['high']:+.6f}]  "
                         f"{verdict}")
    return "\n".join(lines)


def run_compare(args: argparse.Namespace) -> int:
    result = compare(args)
    print(json.dumps(result, indent=2) if args.json else format_compare(result))
    return 0
