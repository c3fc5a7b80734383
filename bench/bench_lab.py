"""Speed of the estimator lab, and the numbers behind the papers' figures it reproduces.

Target (issue 6): the default lab run - R = 50 repetitions, 8 sizes from 100 to
100,000, five estimators - under 20 s on the 2-core machine.

Run: ``python bench/bench_lab.py`` (speed only) or ``python bench/bench_lab.py --figures``
(also the paper reproductions, a few minutes). Prints one line per figure.
"""
from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import calib_core as cc  # noqa: E402
from calib_core.lab.bounds import expected_ece, futami_bounds  # noqa: E402
from calib_core.lab.estimators import (DEFAULT_ESTIMATORS, DEFAULT_SIZES, LabEstimator,  # noqa: E402
                                       ece_estimator, run_lab)
from calib_core.lab.subsets import subset_study  # noqa: E402
from calib_core.metrics.sensitivity import bin_rank_stability  # noqa: E402


def speed() -> None:
    model = cc.futami_logistic("less_calibrated")
    started = time.perf_counter()
    model.truth()
    truth_seconds = time.perf_counter() - started
    updates = []
    result = run_lab(model, DEFAULT_ESTIMATORS, DEFAULT_SIZES, repetitions=50, seed=0,
                     on_progress=lambda done, total: updates.append(done / total))
    status = "PASS" if result.seconds < 20 else "FAIL"
    print(f"default lab run (R=50, sizes {DEFAULT_SIZES[0]}..{DEFAULT_SIZES[-1]} x {len(DEFAULT_SIZES)}, "
          f"{len(DEFAULT_ESTIMATORS)} estimators: {', '.join(DEFAULT_ESTIMATORS)}): {result.seconds:.2f} s "
          f"(target < 20 s) {status}; truth {truth_seconds:.2f} s; {len(updates)} progress updates")

    checks = iter(range(10**6))
    stopped = run_lab(model, DEFAULT_ESTIMATORS, DEFAULT_SIZES, repetitions=50, seed=0,
                      should_stop=lambda: next(checks) >= 5)
    print(f"stop after 5 blocks: stopped={stopped.stopped}, {stopped.seconds:.2f} s, "
          f"{len(stopped.estimates)} of {len(result.estimates)} estimates")

    data = cc.UniformSimplexModel(n_classes=10).sample(50_000, seed=0)
    started = time.perf_counter()
    study = subset_study(data.probs, data.labels, ["ece", "ace", "sce", "ks", "brier", "nll"], repetitions=20)
    print(f"subset_study (N=50,000, K=10, 6 metrics, 10 sizes x 20 subsets): {time.perf_counter() - started:.2f} s")

    models = {}
    for i, temperature in enumerate((0.7, 0.85, 1.0, 1.2, 1.5)):
        sample = cc.LogisticNormalModel(n_classes=10, temperature=temperature).sample(10_000, seed=i)
        models[f"T={temperature}"] = (sample.probs, sample.labels)
    started = time.perf_counter()
    bin_rank_stability(models)
    print(f"bin_rank_stability (5 models, N=10,000, K=10, 32 variants x 41 bin counts): "
          f"{time.perf_counter() - started:.2f} s")
    del study


def futami_figure1() -> None:
    sizes = [100, 316, 1000, 3162, 10_000, 31_623, 100_000]
    for case in ("less_calibrated", "better_calibrated"):
        model = cc.futami_logistic(case)
        estimator = ece_estimator("optimal", "uniform", lipschitz=model.lipschitz, classwise=True, key="ece")
        summary = run_lab(model, [estimator], sizes, repetitions=20, seed=1).summary
        bounds = futami_bounds(sizes, None, model.lipschitz)
        gap = summary["mean_abs_error"].to_numpy()
        slope = np.polyfit(np.log(sizes), np.log(gap), 1)[0]
        print(f"Futami Fig. 1 [{case}, L={model.lipschitz:.2f}, TCE={model.truth()['canonical_tv']:.4f}]: "
              f"TCE gap {' '.join(f'{v:.4f}' for v in gap)} (log-log slope {slope:.2f}); "
              f"bound {' '.join(f'{v:.3f}' for v in bounds.total)}; optimal B {bounds.n_bins.tolist()}")


def gruber_figure2() -> None:
    sizes = [100, 316, 1000, 3162, 10_000]
    for label, temperature in (("calibrated", 1.0), ("mediocre", 1.3), ("bad", 2.0)):
        model = cc.LogisticNormalModel(temperature=temperature)
        summary = run_lab(model, ["ece_uniform_15"], sizes, repetitions=20, seed=2).summary
        approx = expected_ece(model, sizes)
        print(f"Gruber Fig. 2 / D.5 [K=100, T={temperature} {label}, accuracy {model.truth()['accuracy']:.3f}, "
              f"binned truth {cc.binned_truth(model, 15):.4f}]: mean ECE {' '.join(f'{v:.4f}' for v in summary['mean'])}"
              f"; D.5 approximation {' '.join(f'{v:.4f}' for v in approx)}")


def popordanoska_figure2() -> None:
    sizes = [100, 300, 1000, 3000]
    for k in (2, 3, 5):
        model = cc.UniformSimplexModel(n_classes=k)
        summary = run_lab(model, ["kde_ce_kl_classwise", "kde_ce_l2_classwise", "classwise_ece_uniform"], sizes,
                          repetitions=10, seed=3).summary
        parts = []
        for key, group in summary.groupby("estimator", sort=False):
            relative = 100 * group["bias"].to_numpy() / group["truth"].to_numpy()
            parts.append(f"{key} rel. bias % {' '.join(f'{v:+.0f}' for v in relative)}")
        print(f"Popordanoska Fig. 2c/4 [K={k}, sizes {sizes}]: " + "; ".join(parts))


def vaicenavicius_figures() -> None:
    sizes = [100, 1000, 10_000]
    estimators = [
        LabEstimator("eq10", "canonical TV, 10 equal bins", "canonical_tv", partial(cc.canonical_ce, n_bins=10)),
        LabEstimator("eq100", "canonical TV, 100 equal bins", "canonical_tv", partial(cc.canonical_ce, n_bins=100)),
        LabEstimator("dd", "canonical TV, data-dependent bins", "canonical_tv",
                     partial(cc.canonical_ce, partition="data_dependent", min_bin_size=100)),
    ]
    for case in ("perfect", "constant", "uncalibrated"):
        model = cc.gaussian_mixture(case)
        summary = run_lab(model, estimators, sizes, repetitions=100, seed=4).summary
        parts = []
        for key, group in summary.groupby("estimator", sort=False):
            parts.append(f"{key}: bias {' '.join(f'{v:+.4f}' for v in group['bias'])}")
        print(f"Vaicenavicius Figs. 6-13 [{case}, eta_TV={model.truth()['canonical_tv']:.4f}, n={sizes}]: "
              + "; ".join(parts))


def nixon_section53() -> None:
    models = {}
    for i, temperature in enumerate((0.7, 0.85, 1.0, 1.2, 1.5)):
        sample = cc.LogisticNormalModel(n_classes=10, temperature=temperature).sample(10_000, seed=i)
        models[f"T={temperature}"] = (sample.probs, sample.labels)
    result = bin_rank_stability(models)
    by = result.by_property.set_index(["property", "setting"])["mean_spearman"]
    print("Nixon 5.3 [5 tempered K=10 models, bins 10..50]: mean Spearman "
          + ", ".join(f"{p}={s}: {v:.3f}" for (p, s), v in by.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", action="store_true", help="also print the paper reproductions")
    args = parser.parse_args()
    speed()
    if args.figures:
        futami_figure1()
        gruber_figure2()
        vaicenavicius_figures()
        popordanoska_figure2()
        nixon_section53()


if __name__ == "__main__":
    main()
