"""The abstention threshold's guarantee by simulation (issue 26): violation rate, size and coverage given up.

Items have confidence C ~ U(0, 1) and are right with probability C ** a (a = 0.5: under-confident, a = 1:
calibrated, a = 2: over-confident), so the selective risk of a threshold t is known exactly:
``R(t) = 1 - (1 - t^(a+1)) / ((a + 1)(1 - t))``. For each setting the script draws ``--trials`` samples, chooses
:func:`calib_core.abstention_threshold` on each, and prints

* ``violation``: the share of samples whose certified threshold has R(t) > alpha (the guarantee: <= delta);
* ``naive``: the same for the lowest threshold whose risk on the sample is <= alpha (no guarantee), the
  baseline the certified threshold improves on;
* ``size``: one threshold t0 with R(t0) = alpha exactly, the share of samples that certify it (the test's
  size at the edge of its null, <= delta; near delta when the binomial test is not too discrete);
* ``coverage``: the mean population coverage P(C >= t) of the certified threshold, against the oracle's
  (the largest coverage with R(t) <= alpha), i.e. what the guarantee costs.

The methods: Bonferroni over the default grid of 109 thresholds and over 21 steps of 0.05, and the fixed
sequence from 0.95 down in steps of 0.01 (a grid that starts where this design has items).

Run: ``python bench/bench_selective.py [--trials 200]`` (under a minute at the default).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import calib_core as cc  # noqa: E402


def selective_risk(t, a):
    """R(t) = P(wrong | C >= t) for C ~ U(0, 1) and P(right | C = c) = c ** a."""
    t = np.asarray(t, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(t < 1.0, 1.0 - (1.0 - t ** (a + 1.0)) / ((a + 1.0) * (1.0 - t)), 1.0 - 1.0)


def one_setting(rng, n, a, alpha, delta, grid, method, trials):
    edge = brentq(lambda t: selective_risk(t, a) - alpha, 0.0, 1.0 - 1e-9)
    violation = naive = size = 0
    coverage = []
    for _ in range(trials):
        confidence = rng.uniform(size=n)
        correct = (rng.uniform(size=n) < confidence ** a).astype(int)
        chosen = cc.abstention_threshold(confidence, correct, alpha, delta=delta, thresholds=grid, method=method)
        if chosen.found:
            violation += selective_risk(chosen.threshold, a) > alpha
            coverage.append(1.0 - min(chosen.threshold, 1.0))
        else:
            coverage.append(0.0)
        curve = cc.risk_coverage(confidence, correct)
        ok = curve.risk <= alpha
        naive += bool(ok.any()) and selective_risk(curve.threshold[ok].min(), a) > alpha
        size += cc.abstention_threshold(confidence, correct, alpha, delta=delta, thresholds=[edge]).found
    return violation / trials, naive / trials, size / trials, float(np.mean(coverage)), 1.0 - edge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    grids = {"bonferroni, 109": (None, "bonferroni"), "bonferroni, 21": (np.linspace(0.0, 1.0, 21), "bonferroni"),
             "sequence from 0.95": (np.round(np.arange(0.95, -0.001, -0.01), 2), "fixed_sequence")}
    print(f"{'N':>6} {'a':>4} {'alpha':>6} {'delta':>6} {'method, grid':>19} {'violation':>10} {'naive':>7} {'size':>6} "
          f"{'coverage':>9} {'oracle':>7}")
    start = time.perf_counter()
    for n in (300, 1000, 3000):
        for a in (0.5, 1.0, 2.0):
            for alpha, delta in ((0.1, 0.05), (0.2, 0.1)):
                for name, (grid, method) in grids.items():
                    found = one_setting(rng, n, a, alpha, delta, grid, method, args.trials)
                    print(f"{n:>6} {a:>4} {alpha:>6} {delta:>6} {name:>19} {found[0]:>10.3f} {found[1]:>7.3f} "
                          f"{found[2]:>6.3f} {found[3]:>9.3f} {found[4]:>7.3f}", flush=True)
    se = np.sqrt(0.1 * 0.9 / args.trials)
    print(f"{time.perf_counter() - start:.0f} s; Monte-Carlo standard error of a rate near 0.1: {se:.3f}")


if __name__ == "__main__":
    main()
