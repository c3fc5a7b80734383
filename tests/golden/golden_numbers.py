"""Every number the package computes on the bundled demos, as one nested dict.

Recorded once before the package was reorganised (issue 13) and compared
after every move by ``tests/golden/test_golden.py``: moving code must not
move a number beyond round-off. Only public names of the package root and
the CLI are used, so the recorder survives any internal layout.

Re-record (only when a number is meant to change, and say so in the commit):

    PYTHONPATH=. python tests/golden/golden_numbers.py --write

The script reruns itself with OpenBLAS's kernel pinned, as the tests run
(``tests/blas_support.py``): the full-matrix fits differ between kernels.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import calib_core as cc

GOLDEN_FILE = Path(__file__).with_name("golden.json")
#: Demos covering binary, 3-, 10- and 2-class-with-groups files, logits and probabilities.
DEMOS = ("breast_cancer_random_forest", "iris_svc", "wine_gaussian_nb", "digits_mlp", "fair_logistic_regression")
#: Rows of predict_proba kept per recalibrator (the file stays small; the column means cover the rest).
KEPT_ROWS = 5
#: Keys left out: wall-clock durations and file paths differ between runs and machines.
VOLATILE_KEYS = ("seconds", "file")


def volatile(key) -> bool:
    return any(word in str(key) for word in VOLATILE_KEYS)


def plain(value):
    """A JSON-able copy of ``value``: floats, lists and dicts only (NaN as the string 'nan')."""
    if isinstance(value, pd.DataFrame):
        return {str(column): plain(value[column].to_numpy()) for column in value.columns if not volatile(column)}
    if isinstance(value, pd.Series):
        return plain(value.to_numpy())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)
                if not callable(getattr(value, field.name)) and not volatile(field.name)}
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items() if not volatile(key)}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiub":
            return plain(value.astype(float).tolist())
        return [plain(item) for item in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        return "nan" if np.isnan(number) else float(f"{number:.13g}")
    if value is None or isinstance(value, str):
        return value
    return repr(type(value).__name__)


def attempt(compute, *args, **kwargs):
    """``compute(*args, **kwargs)`` as plain data, or the refusal's message (a refusal is a result too)."""
    try:
        return plain(compute(*args, **kwargs))
    except cc.CalibrationInputError as error:
        return {"refused": str(error)}


def demo_numbers(name: str) -> dict:
    predictions = cc.load_demo(name)
    probs, labels = predictions.probs, predictions.labels
    out: dict = {}
    out["metrics"] = {key: value for key, value in cc.compute_metrics(probs, labels).items()}
    out["metrics_adaptive_10"] = cc.compute_metrics(probs, labels, n_bins=10, binning="adaptive",
                                                    include_quadratic=False)
    out["metric_report"] = plain(cc.metric_report(probs, labels))
    out["metric_intervals"] = {key: attempt(cc.metric_interval, key, probs, labels, n_boot=50, seed=0)
                               for key in ("ece", "ace", "brier", "skce_block", "cox_slope")}
    variants = {}
    for binning in ("uniform", "adaptive"):
        for max_prob in (True, False):
            for class_conditional in (True, False):
                for threshold in (0.0, 0.01):
                    for norm in ("l1", "l2"):
                        key = f"{binning}/{max_prob}/{class_conditional}/{threshold}/{norm}"
                        variants[key] = cc.gce(probs, labels, n_bins=15, binning=binning, max_prob=max_prob,
                                               class_conditional=class_conditional, threshold=threshold,
                                               norm=norm)
    out["gce"] = variants
    out["right_false"] = {"ece": cc.ece(probs, labels, right=False),
                          "classwise": cc.classwise_ece(probs, labels, right=False, per_class=True)}
    out["per_class"] = {"ace": cc.ace(probs, labels, per_class=True), "tace": cc.tace(probs, labels, per_class=True)}
    out["canonical"] = {f"{d}/{p}/{lens}": cc.canonical_ce(probs, labels, distance=d, partition=p, lens=lens,
                                                            min_bin_size=50)
                        for d in ("tv", "sq_euclidean") for p in ("uniform", "data_dependent")
                        for lens in ("canonical", "max")}
    out["debiased"] = {"debiased_ece": cc.debiased_ece(probs, labels), "ece_sweep": cc.ece_sweep(probs, labels)}
    out["reliability"] = plain(cc.reliability_table(probs, labels, n_bins=10))
    out["reliability_adaptive_class0"] = plain(cc.reliability_table(probs, labels, n_bins=8, binning="adaptive",
                                                                    target=0))
    out["bin_sensitivity"] = plain(cc.bin_sensitivity(probs, labels, bin_counts=range(2, 31, 7)))
    out["bootstrap"] = plain(cc.bootstrap_metrics({"ece": cc.ece, "brier": cc.brier_score}, probs, labels,
                                                  n_boot=40, seed=1))
    out["smooth"] = plain(cc.smooth_reliability_curve(probs, labels, n_boot=10, seed=0, n_mesh=20))
    out["decomposition"] = plain(cc.score_decomposition(probs, labels))
    out["bound_chain"] = plain(cc.bound_chain(probs, labels))
    out["skce_estimate"] = plain(cc.skce_estimate(probs, labels, estimator="block"))
    out["tests"] = {method: attempt(cc.calibration_test, probs, labels, method=method, seed=0, n_resamples=100)
                    for method in cc.TEST_METHODS}
    out["lens_estimates"] = plain(cc.lens_estimates(probs, labels, n_resamples=30, n_bootstrap=20, seed=0,
                                                    min_bin_size=50))
    simplex = cc.simplex_reliability(probs, labels, n_bins=5)
    out["simplex"] = {"table": plain(simplex.table), "points_mean": plain(simplex.projection.points.mean(axis=0))} \
        if hasattr(simplex.projection, "points") else {"table": plain(simplex.table)}
    out["cox"] = attempt(cc.cox_calibration, probs, labels)
    out["ici"] = attempt(cc.ici, probs, labels)
    if predictions.groups is not None:
        out["by_group"] = plain(cc.by_group("ece", probs, labels, predictions.groups, n_boot=30, min_rows=5).table)
        out["multicalibration"] = plain(cc.multicalibration(probs, labels, predictions.groups, min_count=5))
    out["recalibration"] = recalibration_numbers(predictions)
    return out


def recalibration_numbers(predictions) -> dict:
    x = predictions.logits if predictions.logits is not None else predictions.probs
    kind = "logits" if predictions.logits is not None else "probs"
    labels = predictions.labels
    half = len(labels) // 2
    out = {}
    for name, factory in cc.RECALIBRATORS.items():
        model = factory(input=kind) if "input" in factory.__init__.__code__.co_varnames else factory()
        try:
            model.fit(x[:half], labels[:half])
            proba = model.predict_proba(x[half:])
        except cc.CalibrationInputError as error:
            out[name] = {"error": str(error)}
            continue
        out[name] = {"rows": plain(proba[:KEPT_ROWS]), "column_means": plain(proba.mean(axis=0))}
    report = cc.evaluate_recalibration({name: cc.RECALIBRATORS[name] for name in ("Temperature scaling", "Histogram binning")}, x[:half], labels[:half],
                                       x[half:], labels[half:], input=kind)
    out["protocol"] = plain(report.table) if hasattr(report, "table") else plain(report)
    return out


def lab_numbers() -> dict:
    out = {}
    lab = cc.run_lab(cc.futami_logistic(), sizes=(100, 400), repetitions=3, seed=0)
    out["run_lab"] = plain(lab.summary) if hasattr(lab, "summary") else plain(lab)
    out["futami_bounds"] = plain(cc.futami_bounds([100, 1000]))
    out["expected_ece"] = plain(cc.expected_ece(cc.gaussian_mixture("perfect"), [200, 800]))
    models = {name: (cc.load_demo(name).probs, cc.load_demo(name).labels)
              for name in ("iris_svc", "iris_mlp", "iris_random_forest")}
    out["bin_rank_stability"] = plain(cc.bin_rank_stability(models, range(10, 16)))
    tables = {name: cc.bin_sensitivity(*pair, bin_counts=range(5, 26, 5)) for name, pair in models.items()}
    out["rank_by_bins"] = plain(cc.rank_by_bins(tables))
    probs, labels = models["iris_svc"]
    out["subset_study"] = plain(cc.subset_study(probs, labels, sizes=(30, 60), repetitions=3, seed=0))
    out["pathologies"] = [plain(p) for p in cc.pathologies()]
    return out


def cli_numbers() -> dict:
    """``python -m calib_core report FILE --json`` on two demos, through the command line's ``main(argv)`` in this
    process (its parsing and its JSON, without a subprocess's 2.5 s import of calib_core)."""
    from calib_core.engines.cli import main

    out = {}
    for name in ("iris_svc", "breast_cancer_svc"):
        path = cc.demo_datasets()[name]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = main(["report", str(path), "--json"])
        if status != 0:
            raise RuntimeError(f"report {path} --json exited {status}")
        out[name] = json.loads(printed.getvalue())
    return out


def golden_numbers() -> dict:
    return plain({"demos": {name: demo_numbers(name) for name in DEMOS}, "lab": lab_numbers(),
                  "cli": cli_numbers()})


if __name__ == "__main__":
    from tests.blas_support import pinned_environment

    if pinned_environment() != dict(os.environ):  # OpenBLAS reads its kernel once: rerun with it pinned
        sys.exit(subprocess.run([sys.executable, *sys.argv], env=pinned_environment()).returncode)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write golden.json")
    args = parser.parse_args()
    numbers = golden_numbers()
    text = json.dumps(numbers, indent=None, sort_keys=True)
    if args.write:
        GOLDEN_FILE.write_text(text + "\n")
    print(f"{len(text):,} characters")
