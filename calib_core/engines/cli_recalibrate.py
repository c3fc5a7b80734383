"""``calib-core recalibrate`` and ``calib-core apply``: fit a recalibration map, ship it, apply it.

``recalibrate FILE --method NAME --out OUT --save-map MAP.json`` fits the
method on the calibration rows (the file's split column when it marks
calibration and test rows, else a stratified random split keeping
``--fit-fraction`` of each class for fitting, seeded by ``--seed``) with the
Recalibration page's own steps
(:func:`calib_core.recalibration.recommendation.compare_methods`), writes the
calibrated predictions of every row (CSV or Parquet, by the extension) with a
``fitted`` column (true on the rows the map was fitted on) and the file's
``split`` as the protocol used it, saves the map as the recalibrator's JSON
document (:meth:`calib_core.Recalibrator.to_json`; ``Recalibrator.from_json``
reads it back in Python), and prints before / after on the held-out rows
with paired bootstrap intervals. ``--method auto`` compares the page's
default methods and takes the one it recommends, saying why.
``--weight-column COL`` weights the rows as the Data page's weight column
does the page's: every fit, metric, interval and the recommendation.

Method names: the registry's (:data:`calib_core.RECALIBRATORS`), by their
JSON name (``temperature_scaling``) or display name, so a method added to the
registry is offered here at once.

``apply MAP.json FILE --out OUT`` applies a saved map to new predictions:
the same numbers as ``Recalibrator.from_json(text).predict_proba(x)``.

A confidence file (a stated confidence and whether each answer was right)
is recalibrated as a map ``c -> P(correct | c)``
(:mod:`calib_core.recalibration.confidence`: the binary methods on
``[1 - c, c]``, judged by the ECE, Brier score, NLL and AURC of confidence
against correctness, ``--method auto`` by the same recommendation); both
commands then write the id column (when the file has one), the recalibrated
``confidence``, ``correct`` and the split, a confidence file again. No
accuracy change is printed: the answers do not change.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pandas as pd

from calib_core.engines.cli_common import add_loader_flags, json_number, load_file
from calib_core.recalibration import RECALIBRATORS, Recalibrator
from calib_core.recalibration import defaults
from calib_core.recalibration import confidence as confidence_maps
from calib_core.recalibration.compare import Protocol, metric_label, model_input, recalibrated_frame
from calib_core.validation import CalibrationInputError, check_fraction

#: Output formats by file extension.
OUTPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
#: Metrics printed before / after (the results table holds all of :data:`METRIC_KEYS`).
SHOWN_METRICS = ("ece", "brier", "nll", "accuracy")
#: The same for a confidence model: no accuracy (its answers do not change), its AURC instead.
SHOWN_CONFIDENCE_METRICS = ("conf_ece", "conf_brier", "conf_nll", "conf_aurc")
#: Their short names in the text output (the JSON keeps the registry's labels).
CONFIDENCE_NAMES = {"conf_ece": "ECE (10 bins)", "conf_brier": "Brier score", "conf_nll": "NLL", "conf_aurc": "AURC"}


def method_names() -> dict[str, str]:
    """Every spelling the command line accepts -> the registry's display name (lower case keys)."""
    names = {}
    for display, cls in RECALIBRATORS.items():
        for spelling in (display, cls.method, cls.method.replace("_", "-")):
            names[spelling.lower()] = display
    return names


def add_commands(commands) -> None:
    """Add ``recalibrate`` and ``apply`` to the sub-commands."""
    known = ", ".join(cls.method for cls in RECALIBRATORS.values())
    parser = commands.add_parser("recalibrate", help="fit a recalibration map on the calibration rows, write "
                                 "calibrated predictions of every row and the map as JSON")
    parser.add_argument("path", metavar="FILE", help="predictions file with labels")
    parser.add_argument("--method", required=True, metavar="NAME",
                        help=f"auto (the Recalibration page's recommendation) or one of: {known}")
    parser.add_argument("--fit-split", default=None, metavar="NAME",
                        help="the split value of the fitting rows (e.g. calibration); default: the file's split "
                             "column when it marks calibration and test rows, else --fit-fraction")
    parser.add_argument("--fit-fraction", type=float, default=0.5, metavar="F",
                        help="without a usable split column: the share of each class fitted on (default 0.5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random split and the bootstrap (default 0)")
    parser.add_argument("--n-boot", type=int, default=200, metavar="N",
                        help="paired bootstrap resamples of before / after (default 200, as the page; 0: none)")
    parser.add_argument("--out", required=True, metavar="OUT.csv|OUT.parquet",
                        help="calibrated predictions of every row")
    parser.add_argument("--save-map", default=None, metavar="MAP.json", help="the fitted map as JSON")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--weight-column", default=None, metavar="COL",
                        help="row weights from column COL (CSV/Parquet): each fit takes the fitting rows' weights, "
                             "every metric, interval and the --method auto recommendation weight the held-out rows "
                             "(integer weights = repeated rows), as the Recalibration page with a weight column")
    add_loader_flags(parser)
    parser.set_defaults(handler=run_recalibrate)

    apply = commands.add_parser("apply", help="apply a saved recalibration map to predictions")
    apply.add_argument("map", metavar="MAP.json", help="a map saved by recalibrate --save-map")
    apply.add_argument("path", metavar="FILE", help="predictions file (labels optional only if the loader allows)")
    apply.add_argument("--out", required=True, metavar="OUT.csv|OUT.parquet", help="calibrated predictions")
    add_loader_flags(apply)
    apply.set_defaults(handler=run_apply)


def _output_format(path: str) -> str:
    extension = os.path.splitext(path)[1].lower()
    if extension not in OUTPUT_FORMATS:
        raise CalibrationInputError(f"--out {path}: write .csv or .parquet (the format follows the extension).")
    return OUTPUT_FORMATS[extension]


def _write_table(frame: pd.DataFrame, path: str) -> None:
    try:
        if _output_format(path) == "csv":
            frame.to_csv(path, index=False, float_format="%.17g")
        else:
            frame.to_parquet(path, index=False)
    except OSError as exc:
        raise CalibrationInputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_text(text: str, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise CalibrationInputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _protocol(args: argparse.Namespace, predictions) -> tuple[Protocol, list]:
    """The split protocol of ``--fit-split`` / ``--fit-fraction`` and the split names it sees."""
    fraction = check_fraction(args.fit_fraction, "--fit-fraction")
    if not 0.0 < fraction < 1.0:
        raise CalibrationInputError(f"--fit-fraction must lie strictly between 0 and 1, got {args.fit_fraction}.")
    names = [] if predictions.split is None else sorted({str(v) for v in predictions.split.tolist()})
    if args.fit_split is not None:
        from calib_core.recalibration.protocol import FIT_SPLIT_VALUES

        if predictions.split is None:
            raise CalibrationInputError(f"--fit-split {args.fit_split!r} given but {args.path} has no split column.")
        if args.fit_split.strip().lower() not in FIT_SPLIT_VALUES:
            raise CalibrationInputError(f"--fit-split must be a calibration split name ({', '.join(FIT_SPLIT_VALUES)})"
                                        f", got {args.fit_split!r}.")
        if args.fit_split.strip().lower() not in {n.strip().lower() for n in names}:
            raise CalibrationInputError(f"no rows with split {args.fit_split!r} in {args.path}; the file has: "
                                        f"{', '.join(names)}.")
    return Protocol("split_column", test_fraction=1.0 - fraction, seed=int(args.seed)), names


def recalibrate(args: argparse.Namespace) -> dict:
    """Fit, write, save; the summary as a JSON-ready dict."""
    if args.seed < 0:
        raise CalibrationInputError(f"--seed must be 0 or more, got {args.seed}.")
    if args.n_boot < 0:
        raise CalibrationInputError(f"--n-boot must be 0 or more, got {args.n_boot}.")
    _output_format(args.out)
    predictions = load_file(args.path, args)
    protocol, split_names = _protocol(args, predictions)
    choice = args.method.strip()
    stated = predictions.kind == "confidence"
    if choice.lower() == "auto":
        methods = (confidence_maps.DEFAULT_CONFIDENCE_METHODS if stated
                   else defaults.default_methods(predictions.n_classes, defaults.DEFAULT_METHODS))
    else:
        names = method_names()
        if choice.lower() not in names:
            raise CalibrationInputError(f"unknown --method {choice!r}; use auto or one of: "
                                        f"{', '.join(cls.method for cls in RECALIBRATORS.values())}.")
        methods = (names[choice.lower()],)
    found = confidence_maps.compare_predictions(predictions, methods=methods, protocol=protocol,
                                                n_boot=int(args.n_boot), seed=int(args.seed))
    recommendation = found.recommendation
    if choice.lower() == "auto":
        if recommendation.method is None:
            raise CalibrationInputError("--method auto: " + recommendation.sentence(predictions.name, markdown=False)
                                        + " Nothing was written.")
        method = recommendation.method
    else:
        method = methods[0]
    fit = found.fits[method]
    if not fit.ok:
        raise CalibrationInputError(f"{method} could not be fitted: {fit.message}")
    x, _ = model_input(predictions.probs, predictions.logits)
    if stated:
        frame = confidence_maps.recalibrated_confidence_frame(x, predictions.labels, found.ev, fit, ids=predictions.ids,
                                                              id_column=id_column(predictions))
    else:
        frame = recalibrated_frame(x, predictions.labels, found.ev, fit, class_names=predictions.class_names)
        frame["label"] = np.asarray(predictions.class_names, dtype=object)[predictions.labels]
    frame.insert(len(frame.columns) if stated else 2, "fitted",
                 np.isin(np.arange(predictions.n_samples), found.ev.fit_index))
    _write_table(frame, args.out)
    if args.save_map is not None:
        _write_text(fit.params_json, args.save_map)
    rows = found.table[found.table["method"] == method].set_index("key")
    metrics = {key: {"name": metric_label(key), **{column: json_number(float(rows.loc[key, column])) for column in (
        "before", "before_low", "before_high", "after", "after_low", "after_high", "delta", "delta_low",
        "delta_high")}} for key in found.ev.metric_keys}
    order = confidence_maps.order_changes(found).get(method) if stated else None
    return {
        "file": str(args.path), "model": predictions.name, "method": method,
        "kind": predictions.kind, "order": None if order is None else order.sentence,
        "accuracy_note": confidence_maps.unchanged_accuracy_sentence(found.ev.labels) if stated else None,
        "map_method": json.loads(fit.params_json)["method"], "out": args.out, "map": args.save_map,
        "protocol": fit.protocol, "n_fitted": int(found.ev.fit_index.size),
        "n_evaluated": int(found.ev.eval_index.size), "n_boot": found.n_boot, "seed": found.seed,
        "why": (recommendation.sentence(predictions.name, markdown=False) + " "
                + (recommendation.comparison(markdown=False) or "")).strip()
        if choice.lower() == "auto" else None,
        "notes": list(found.ev.notes), "metrics": metrics,
        "weight_column": predictions.weight_column if predictions.sample_weight is not None else None,
        "sum_weight": None if predictions.sample_weight is None else float(predictions.sample_weight.sum()),
    }


def format_recalibrate(result: dict) -> str:
    lines = [f"{result['model']}: {result['method']} fitted on {result['n_fitted']:,} rows; before / after on "
             f"{result['n_evaluated']:,} held-out rows ({result['protocol']})"]
    if result["why"]:
        lines.append(f"auto: {result['why']}")
    lines += [f"note: {note}" for note in result["notes"]]
    with_intervals = result["n_boot"] > 0
    stated = result.get("kind") == "confidence"
    for key in SHOWN_CONFIDENCE_METRICS if stated else SHOWN_METRICS:
        m = result["metrics"][key]
        name = CONFIDENCE_NAMES.get(key, m["name"])
        text = f"  {name:<14} {m['before']:.6f} -> {m['after']:.6f}  (change {m['delta']:+.6f}"
        if with_intervals and m["delta_low"] is not None:
            text += f" [{m['delta_low']:+.6f}, {m['delta_high']:+.6f}]"
        lines.append(text + ")")
    if with_intervals:
        lines.append(f"  (95% paired bootstrap intervals of the change, {result['n_boot']} resamples, seed "
                     f"{result['seed']})")
    if stated:
        lines += [f"  {result['accuracy_note']}", f"  {result['order']}"]
    lines.append(f"wrote {result['out']}" + (f" and the map {result['map']}" if result["map"] else ""))
    return "\n".join(lines)


def run_recalibrate(args: argparse.Namespace) -> int:
    result = recalibrate(args)
    print(json.dumps(result, indent=2) if args.json else format_recalibrate(result))
    return 0


def id_column(predictions) -> str:
    """The name of the file's id column (:attr:`calib_core.io.Predictions.id_column`), else ``id``."""
    return predictions.id_column or "id"


def apply_map(text: str, predictions) -> np.ndarray:
    """``Recalibrator.from_json(text).predict_proba`` of the loaded predictions, on the input the map was fitted
    on (logits or probabilities)."""
    recalibrator = Recalibrator.from_json(text)
    if not recalibrator.is_fitted:
        raise CalibrationInputError("the map is not fitted (\"fitted\": null): save it with recalibrate --save-map.")
    if recalibrator.input == "logits":
        if predictions.logits is None:
            raise CalibrationInputError(f"the map was fitted on logits ({recalibrator.display_name}), but the file "
                                        "holds probabilities: apply it to the model's logits (--input-kind logits).")
        x = predictions.logits
    else:
        x = predictions.probs
    if predictions.kind == "confidence":
        return confidence_maps.apply_confidence_map(recalibrator, predictions.confidence)
    return recalibrator.predict_proba(x)


def run_apply(args: argparse.Namespace) -> int:
    _output_format(args.out)
    try:
        with open(args.map, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise CalibrationInputError(f"cannot read {args.map}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CalibrationInputError(f"{args.map} is not a text (JSON) file.") from None
    predictions = load_file(args.path, args)
    probs = apply_map(text, predictions)
    if predictions.kind == "confidence":
        frame = pd.DataFrame({"confidence": probs, "correct": predictions.labels.astype(int)})
        if predictions.ids is not None:
            frame.insert(0, id_column(predictions), predictions.ids)
        if predictions.split is not None:
            frame["split"] = predictions.split
        _write_table(frame, args.out)
        print(f"wrote {args.out}: {predictions.n_samples:,} recalibrated confidences by the map in {args.map}")
        return 0
    frame = pd.DataFrame({"label": np.asarray(predictions.class_names, dtype=object)[predictions.labels]})
    frame = pd.concat([frame, pd.DataFrame(probs, columns=[f"p_{name}" for name in predictions.class_names])], axis=1)
    if predictions.split is not None:
        frame.insert(1, "split", predictions.split)
    _write_table(frame, args.out)
    print(f"wrote {args.out}: {predictions.n_samples:,} rows recalibrated by the map in {args.map}")
    return 0
