"""Fit time of every recalibration method on N x K synthetic logits (default 50,000 x 100),
and the ratio to scikit-learn's equivalent where one exists, measured in the same run.

    python bench/bench_recalibration.py [--rows 50000] [--classes 100] [--seed 0] [--json out.json]

The logits are over-confident (true temperature 2) with class-dependent
offsets, so every method has something to fit. scikit-learn equivalents:
``IsotonicRegression(out_of_bounds="clip")`` one-vs-rest on the probability
columns (vs ``IsotonicCalibration(input="probs")``) and an unpenalised
``LogisticRegression`` on each class's log-odds (vs
``PlattScaling(smooth_targets=False)``). The 1-minute load average is
printed because other processes on a 2-core machine change every figure.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calib_core.recalibration import IsotonicCalibration, PlattScaling, all_recalibrators  # noqa: E402
from calib_core.recalibration._numeric import class_log_probs  # noqa: E402

BUDGET_SECONDS = 30.0


def synthetic_logits(n_rows: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.normal(size=(n_rows, n_classes)) + 0.3 * rng.normal(size=n_classes)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (probs.cumsum(axis=1) > rng.uniform(size=(n_rows, 1))).argmax(axis=1)
    row_offsets = rng.normal(size=(n_rows, 1))  # logits of real networks have per-row offsets
    return 2.0 * z + row_offsets, labels


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def sklearn_isotonic(probs: np.ndarray, labels: np.ndarray) -> None:
    from sklearn.isotonic import IsotonicRegression

    for k in range(probs.shape[1]):
        IsotonicRegression(out_of_bounds="clip").fit(probs[:, k], labels == k)


def sklearn_platt(log_odds: np.ndarray, labels: np.ndarray) -> None:
    from sklearn.linear_model import LogisticRegression

    for k in range(log_odds.shape[1]):
        LogisticRegression(C=np.inf, max_iter=1000).fit(log_odds[:, k : k + 1], labels == k)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    logits, labels = synthetic_logits(args.rows, args.classes, args.seed)
    print(f"recalibration fit times on {args.rows:,} x {args.classes} logits "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    results: dict = {"rows": args.rows, "classes": args.classes, "load_average": os.getloadavg()[0], "methods": {}}
    total = 0.0
    for name, method in all_recalibrators(input="logits").items():
        seconds = _timed(lambda: method.fit(logits, labels))
        total += seconds
        note = ""
        if hasattr(method, "converged_"):
            note = f"  ({method.n_iter_} L-BFGS iterations{'' if method.converged_ else ', NOT converged'})"
        results["methods"][name] = seconds
        print(f"  {name:<42s} {seconds:7.2f} s{note}")
    results["total"] = total
    verdict = "within" if total <= BUDGET_SECONDS else "OVER"
    print(f"  {'total (all methods)':<42s} {total:7.2f} s   {verdict} the {BUDGET_SECONDS:.0f} s budget")

    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    log_p, log_not_p = class_log_probs(logits)
    log_odds = log_p - log_not_p
    comparisons = {
        "isotonic (one-vs-rest, from probabilities)": (
            lambda: IsotonicCalibration(input="probs").fit(probs, labels), lambda: sklearn_isotonic(probs, labels),
            "sklearn IsotonicRegression x K"),
        "Platt (one-vs-rest, unsmoothed targets)": (
            lambda: PlattScaling(smooth_targets=False).fit(logits, labels), lambda: sklearn_platt(log_odds, labels),
            "sklearn LogisticRegression x K"),
    }
    print("ratio to scikit-learn (same data, same run; < 1 means faster than scikit-learn)")
    results["sklearn"] = {}
    for label, (ours, theirs, their_name) in comparisons.items():
        ours_s, theirs_s = _timed(ours), _timed(theirs)
        results["sklearn"][label] = {"ours": ours_s, "sklearn": theirs_s, "ratio": ours_s / theirs_s}
        print(f"  {label:<44s} ours {ours_s:6.2f} s   {their_name} {theirs_s:6.2f} s   ratio {ours_s / theirs_s:5.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
