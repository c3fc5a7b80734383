"""Speed of bootstrap intervals as ratios to one call of the metric, measured in the same run.

Targets (issue 15, item 6), at N=100,000 x K=10 with 200 resamples:
* ``bootstrap_ci(ece)`` <= 20x one ``ece`` call;
* ``bootstrap_ci(ace)`` <= 60x one ``ace`` call;
* every binned metric together (``bootstrap_metrics``: ECE, RMSCE, MCE and
  class-wise ECE with uniform and adaptive bins, SCE, ACE, TACE) <= 40x one
  pass of all of them.

``--before`` also times the generic path (the metric called on every
materialised resample, as before the shared-work engine) on the same
resamples. Run: ``python bench/bench_bootstrap.py [--quick] [--before]``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import calib_core as cc  # noqa: E402
from calib_core.inference.bootstrap import bootstrap_metrics  # noqa: E402
from bench_core import best_time, random_predictions  # noqa: E402  (the same timing and data as bench_core)

N_BOOT = 200




def report(name, seconds, baseline_name, baseline, target=None):
    ratio = seconds / baseline
    verdict = "" if target is None else f"(target <= {target:g}) {'ok' if ratio <= target else 'MISSED'}"
    print(f"{name:<38} {seconds * 1e3:9.1f} ms   {baseline_name:<26} {baseline * 1e3:8.1f} ms   "
          f"ratio {ratio:6.1f} {verdict}")


def binned_metrics():
    """The registry's binned metrics (declared, so resampled by the engine), the binning-dependent ones with both
    binnings."""
    metrics = {}
    for binning in ("uniform", "adaptive"):
        for key in ("ece", "rmsce", "mce", "classwise_ece"):
            metrics[f"{key}_{binning}"] = cc.metric_function(key, binning=binning)
    metrics.update(sce=cc.sce, ace=cc.ace, tace=cc.tace)
    return metrics


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--before", action="store_true", help="also time the generic path (slow)")
    args = parser.parse_args()
    n_rows = 10_000 if args.quick else 100_000
    probs, labels = random_predictions(n_rows, 10)
    print(f"N={n_rows:,} x K=10, {N_BOOT} resamples")

    # The floor shared by every path that keeps today's resamples: drawing their row indices.
    draws = best_time(lambda: np.random.default_rng(0).integers(0, n_rows, size=(N_BOOT, n_rows)))
    report("  floor: drawing the resample indices", draws, "one ece", best_time(lambda: cc.ece(probs, labels), 5))
    for name, metric, target in (("ece", cc.ece, 20), ("ace", cc.ace, 60)):
        one = best_time(lambda: metric(probs, labels), 5)
        boot = best_time(lambda: cc.bootstrap_ci(metric, probs, labels, n_boot=N_BOOT, seed=0))
        report(f"bootstrap_ci({name})", boot, f"one {name}", one, target)
        if args.before:
            generic = best_time(lambda: cc.bootstrap_ci(lambda p, y: metric(p, y), probs, labels,
                                                        n_boot=N_BOOT, seed=0), 1)
            report(f"  before: generic bootstrap_ci({name})", generic, f"one {name}", one)

    metrics = binned_metrics()
    one_pass = best_time(lambda: [metric(probs, labels) for metric in metrics.values()], 3)
    together = best_time(lambda: bootstrap_metrics(metrics, probs, labels, n_boot=N_BOOT, seed=0))
    report(f"bootstrap_metrics({len(metrics)} binned)", together, "one pass of all", one_pass, 40)
    if args.before:
        generic = best_time(lambda: [cc.bootstrap_ci(lambda p, y, m=m: m(p, y), probs, labels, n_boot=N_BOOT,
                                                     seed=0) for m in metrics.values()], 1)
        report("  before: generic, one metric at a time", generic, "one pass of all", one_pass)


if __name__ == "__main__":
    main()
