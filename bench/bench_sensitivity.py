"""Speed of the bin-count sweep as a ratio to one class-wise ECE call, measured in the same run.

Target (issue 15, item 6): ``bin_sensitivity`` with its defaults (bin counts
2-200, metrics ECE, ACE, SCE, TACE, uniform and adaptive bins) on N=5,000 x
K=1,000 softmax-of-normal predictions <= 40x one ``classwise_ece`` call
(15 uniform bins) on the same data.

``--before`` also times the per-count path (every bin count binned anew with
``bin_statistics`` / ``classwise_bin_statistics``, as before the sorted-values
sweep; about 100 s at full size). Run:
``python bench/bench_sensitivity.py [--quick] [--before]``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import calib_core as cc  # noqa: E402
from calib_core.binning import binned_error, mean_abs_gap  # noqa: E402
from calib_core.metrics.binned import top_label  # noqa: E402
from calib_core.metrics.sensitivity import SENSITIVITY_METRICS  # noqa: E402
from bench_core import best_time  # noqa: E402  (the same timing as bench_core)

BIN_COUNTS = range(2, 201)


def softmax_normal(n, k, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return cc.softmax(rng.normal(size=(n, k)) * scale), rng.integers(0, k, size=n)


def per_count(probs, labels, threshold=0.01):
    """The sweep as before: every bin count and binning binned from scratch."""
    confidence, correct = top_label(probs, labels)
    keep = probs > threshold
    for binning in ("uniform", "adaptive"):
        for n_bins in BIN_COUNTS:
            binned_error(cc.bin_statistics(confidence, correct, n_bins, binning), "l1")
            stats = cc.classwise_bin_statistics(probs, labels, n_bins, binning)
            binned_error(stats, "l1").mean()
            mean_abs_gap(stats).mean()
            mean_abs_gap(cc.classwise_bin_statistics(probs, labels, n_bins, binning, keep=keep)).mean()


def report(name, seconds, baseline_name, baseline, target=None):
    ratio = seconds / baseline
    verdict = "" if target is None else f"(target <= {target:g}) {'ok' if ratio <= target else 'MISSED'}"
    print(f"{name:<38} {seconds:8.3f} s   {baseline_name:<22} {baseline * 1e3:8.1f} ms   "
          f"ratio {ratio:7.1f} {verdict}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--before", action="store_true", help="also time the per-count path (slow)")
    args = parser.parse_args()
    n_rows, n_classes = (1_000, 100) if args.quick else (5_000, 1_000)
    probs, labels = softmax_normal(n_rows, n_classes)
    print(f"N={n_rows:,} x K={n_classes:,}, bin counts {BIN_COUNTS.start}-{BIN_COUNTS.stop - 1}, "
          f"metrics {', '.join(SENSITIVITY_METRICS)}, uniform and adaptive bins")

    one = best_time(lambda: cc.classwise_ece(probs, labels), 5)
    sweep = best_time(lambda: cc.bin_sensitivity(probs, labels, BIN_COUNTS))
    report("bin_sensitivity (defaults)", sweep, "one classwise_ece", one, None if args.quick else 40)
    if args.before:
        report("  before: per-count binning", best_time(lambda: per_count(probs, labels), 1),
               "one classwise_ece", one)


if __name__ == "__main__":
    main()
