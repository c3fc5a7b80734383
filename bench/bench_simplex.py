"""Speed of the simplex / canonical-calibration computations (issue 3).

Run ``python bench/bench_simplex.py`` from the repository root. Every figure
is printed as a ratio against a baseline measured in the same run, so the
numbers compare across machines:

* consistency resampling, 1,000 draws on N=10,000 x K=10, against 1,000
  calls of ``calib_core.ece`` on the same data (target: ratio <= 20, i.e. no
  per-draw Python overhead dominating);
* the simplex page's computations on N=100,000 x K=10 (projection onto three
  groups, partition, cell table, canonical_ce on all K classes) in seconds,
  against the 1 s budget and against one ``ece`` call on the same data.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calib_core as cc  # noqa: E402


def timed(function, repeat: int = 3) -> float:
    """Median wall time of ``function()`` over ``repeat`` runs (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def overconfident(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.5
    return cc.softmax(logits), cc.sample_labels(cc.softmax(logits / 1.5), seed=seed + 1)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="consistency resamples (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing, median reported")
    args = parser.parse_args(argv)
    draws = args.draws

    print("== consistency resampling: N=10,000 x K=10, "
          f"{draws} draws vs {draws} x one ece call (target ratio <= 20)")
    probs, labels = overconfident(10_000, 10, 0)
    one_ece = timed(lambda: [cc.ece(probs, labels) for _ in range(20)], args.repeat) / 20
    baseline = draws * one_ece
    print(f"baseline: one ece call {one_ece * 1e3:.2f} ms; {draws} calls {baseline:.3f} s")
    cases = [
        ("ece (generic per-draw path)", cc.ece),
        ("canonical_ce uniform n=10 (batched)", cc.CanonicalCE()),
        ("canonical_ce data-dependent 1000 (batched)", cc.CanonicalCE(partition="data_dependent")),
        ("canonical_ce max lens (batched)", cc.CanonicalCE(lens="max")),
        ("canonical_ce uniform, per-draw calls", lambda p, y: cc.canonical_ce(p, y)),
    ]
    for name, estimator in cases:
        seconds = timed(lambda: cc.consistency_resampling(probs, labels, estimator, n_resamples=draws, seed=1),
                        1 if "per-draw calls" in name else args.repeat)
        print(f"  {name:45s} {seconds:7.3f} s   ratio {seconds / baseline:6.2f}")
    seconds = timed(lambda: cc.consistency_bands(probs, labels, n_resamples=draws, seed=1), args.repeat)
    print(f"  {'consistency_bands 15 bins':45s} {seconds:7.3f} s   ratio {seconds / baseline:6.2f}")
    seconds = timed(lambda: cc.lens_estimates(probs, labels, n_resamples=draws, n_bootstrap=200, seed=1), 1)
    print(f"  {'lens_estimates (8 rows, 200 bootstraps)':45s} {seconds:7.3f} s   ratio {seconds / baseline:6.2f}")

    print("\n== simplex page computations: N=100,000 x K=10 (budget 1 s each)")
    probs, labels = overconfident(100_000, 10, 2)
    one_ece = timed(lambda: cc.ece(probs, labels), args.repeat)
    print(f"baseline: one ece call on the same data {one_ece * 1e3:.1f} ms")
    cases = [
        ("simplex_reliability uniform n=10", lambda: cc.simplex_reliability(probs, labels, n_bins=10)),
        ("simplex_reliability uniform n=20", lambda: cc.simplex_reliability(probs, labels, n_bins=20)),
        ("simplex_reliability data-dependent 1000",
         lambda: cc.simplex_reliability(probs, labels, partition="data_dependent")),
        ("simplex_reliability classes (0, 1, 2)",
         lambda: cc.simplex_reliability(probs, labels, classes=(0, 1, 2))),
        ("canonical_ce uniform n=10, all K", lambda: cc.canonical_ce(probs, labels)),
        ("canonical_ce data-dependent 1000, all K",
         lambda: cc.canonical_ce(probs, labels, partition="data_dependent")),
        ("canonical_ce max lens", lambda: cc.canonical_ce(probs, labels, lens="max")),
    ]
    for name, function in cases:
        seconds = timed(function, args.repeat)
        print(f"  {name:45s} {seconds:7.3f} s   of budget {seconds / 1.0:5.2f}   x ece {seconds / one_ece:6.1f}")

    print(f"\n== consistency band of the three-group view, N=100,000 (ratio to n x one ece call of {one_ece * 1e3:.1f} ms)")
    view = cc.simplex_projection(probs, labels)
    for n_draws in (200, draws):
        for name, estimator in (("uniform n=10", cc.CanonicalCE()),
                                ("data-dependent 1000", cc.CanonicalCE(partition="data_dependent"))):
            seconds = timed(lambda: cc.consistency_resampling(view.points, view.labels, estimator,
                                                              n_resamples=n_draws, seed=1), 1)
            print(f"  {n_draws:5d} draws, {name:32s} {seconds:7.3f} s   ratio {seconds / (n_draws * one_ece):6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
