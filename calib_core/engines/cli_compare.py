"""``calib-core compare A B [C ...]``: models on the same rows, each metric with its interval and the paired
difference of every two models with its interval, and which model is better beyond noise.

The rows must be the same: matched by an id column (``--id-column``) or in
the same order, checked by their labels (:func:`matched_rows`). Every model
is resampled with the same seed, so resample ``b`` holds the same rows for
each, and ``value_B,b - value_A,b`` is the bootstrap distribution of the
difference (the paired bootstrap of the Recalibration page,
:func:`calib_core.recalibration.compare.intervals`). Each interval is made as
the metric's registry entry declares
(:func:`calib_core.inference.intervals.interval_from_samples`), so a model's
interval is :func:`calib_core.metric_interval`'s for the same seed.
``check --baseline`` uses the same machinery (:func:`paired_metric`).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calib_core.engines.cli_common import CONFIDENCE_COMPARE_KEYS, add_loader_flags, check_metric_kind, load_file
from calib_core.inference.bootstrap import resampled_metrics
from calib_core.inference.intervals import interval_from_samples
from calib_core.inference.verdicts import check_alpha
from calib_core.metrics.registry import METRICS, get_metric, metric_function, metric_name
from calib_core.recalibration.compare import HIGHER_IS_BETTER, METRIC_KEYS
from calib_core.validation import CalibrationInputError, check_count

#: Resamples of ``compare`` and ``check --baseline`` by default.
DEFAULT_N_BOOT = 1000


def add_commands(commands) -> None:
    """Add ``compare`` to the sub-commands."""
    parser = commands.add_parser("compare", help="compare models on the same rows: each metric with its interval "
                                 "and the paired difference of every two models")
    parser.add_argument("path", metavar="A", help="the first model's predictions file (the reference)")
    parser.add_argument("others", nargs="+", metavar="B", help="the other models' files, on the same rows")
    parser.add_argument("--metric", action="append", default=None, metavar="NAME",
                        help=f"a metric to compare (repeatable; default: {', '.join(METRIC_KEYS)}); any registry "
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


@dataclass(frozen=True)
class PairedMetric:
    """Each model's value of one metric with its interval, and the differences ``value_j - value_i``.

    Attributes
    ----------
    key, name : str
    estimates, lows, highs : ndarray of shape (M,)
        Per model; NaN interval ends when the metric has no bootstrap interval.
    samples : ndarray of shape (M, n_boot)
        The paired resampled values (the same rows in column ``b`` for every model).
    """

    key: str
    name: str
    estimates: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    samples: np.ndarray
    alpha: float

    def difference(self, i: int, j: int) -> tuple[float, float, float]:
        """``value_j - value_i`` and its paired interval (the low end not cut at 0)."""
        spec = get_metric(self.key)
        estimate = float(self.estimates[j] - self.estimates[i])
        low, high = interval_from_samples(_sample_method(spec), estimate, self.samples[j] - self.samples[i],
                                          self.alpha, signed=True)
        return estimate, low, high


def _sample_method(spec) -> str:
    """How an interval is made from resamples: the declared one, or the bootstrap standard error for a metric
    whose own interval is a variance formula (its resamples are still valid)."""
    return spec.interval if spec.interval in ("percentile", "bootstrap_se") else "bootstrap_se"


def paired_metric(key: str, probs_list, labels, *, n_bins: int, binning: str, bandwidth: float | None,
                  n_boot: int, seed: int, alpha: float) -> PairedMetric:
    """One metric of several models on the same rows, resampled with one seed (:func:`resampled_metrics`).

    Raises
    ------
    CalibrationInputError
        A metric that a bootstrap cannot resample (``interval="none"``: a
        leave-one-out kernel estimate, the loess summaries) or that cannot be
        computed on these rows.
    """
    spec = get_metric(key)
    if spec.interval == "none":
        raise CalibrationInputError(f"{spec.label} cannot be compared with a paired bootstrap: "
                                    f"{spec.no_interval or 'it declares no interval'}.")
    function = metric_function(key, n_bins=n_bins, binning=binning, bandwidth=bandwidth)
    estimates = np.array([float(function(p, labels)) for p in probs_list])
    samples = np.stack([resampled_metrics({key: function}, p, labels, n_boot=n_boot, seed=seed)[key]
                        for p in probs_list])
    lows, highs = np.full(len(probs_list), math.nan), np.full(len(probs_list), math.nan)
    for m in range(len(probs_list)):
        lows[m], highs[m] = interval_from_samples(_sample_method(spec), estimates[m], samples[m], alpha,
                                                  signed=spec.signed)
    name = metric_name(key, n_bins=n_bins, binning=binning, bandwidth=bandwidth)
    return PairedMetric(key, name, estimates, lows, highs, samples, float(alpha))


def check_resampling(args: argparse.Namespace) -> None:
    """``--n-boot``, ``--seed`` and ``--alpha`` checked once (:class:`CalibrationInputError` names the flag)."""
    check_count(args.n_boot, "--n-boot", 2)
    if args.seed < 0:
        raise CalibrationInputError(f"--seed must be 0 or more, got {args.seed}.")
    try:
        check_alpha(args.alpha)
    except CalibrationInputError:
        raise CalibrationInputError(f"--alpha must be a number in (0, 0.5], got {args.alpha}.") from None


def _unique_names(predictions, paths) -> list[str]:
    names = [p.name for p in predictions]
    return names if len(set(names)) == len(names) else [str(path) for path in paths]


def compare(args: argparse.Namespace) -> dict:
    """The comparison as a JSON-ready dict."""
    check_resampling(args)
    paths = [args.path, *args.others]
    loaded = [load_rows(path, args) for path in paths]
    models = [loaded[0]] + [matched_rows(loaded[0], other, first_path=paths[0], second_path=path,
                                         id_column=args.id_column) for other, path in zip(loaded[1:], paths[1:])]
    names = _unique_names(models, paths)
    confidence = models[0].kind == "confidence"
    if any(m.kind != models[0].kind for m in models):
        raise CalibrationInputError("compare needs models of one kind: confidence files and K-class files mixed.")
    keys = args.metric or list(CONFIDENCE_COMPARE_KEYS if confidence else METRIC_KEYS)
    known = {spec.key for spec in METRICS}
    for key in keys:
        if key not in known:
            raise CalibrationInputError(f"unknown --metric {key!r}; known: {', '.join(sorted(known))}.")
        check_metric_kind(key, models[0], "--metric")
    labels = models[0].labels
    metrics = {}
    for key in keys:
        found = paired_metric(key, [m.probs for m in models], labels, n_bins=args.n_bins, binning=args.binning,
                              bandwidth=args.bandwidth if get_metric(key).with_bandwidth else None,
                              n_boot=args.n_boot, seed=args.seed, alpha=args.alpha)
        higher = key in HIGHER_IS_BETTER
        differences = []
        for i, j in itertools.combinations(range(len(models)), 2):
            estimate, low, high = found.difference(i, j)
            better = None
            if low > 0 or high < 0:  # beyond noise: the interval of the difference excludes 0
                better = names[j] if (high < 0) != higher else names[i]
            differences.append({"a": names[i], "b": names[j], "difference": estimate, "low": low, "high": high,
                                "better": better})
        metrics[key] = {
            "name": found.name, "higher_is_better": higher,
            "models": {name: {"estimate": float(found.estimates[m]), "low": float(found.lows[m]),
                              "high": float(found.highs[m])} for m, name in enumerate(names)},
            "differences": differences,
        }
    return {"files": [str(p) for p in paths], "models": names, "n_samples": int(labels.size),
            "n_classes": int(models[0].n_classes), "n_boot": int(args.n_boot), "seed": int(args.seed),
            "alpha": float(args.alpha), "matched_by": f"id column {args.id_column!r}" if args.id_column
            else "file order (labels checked)", "metrics": metrics}


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
