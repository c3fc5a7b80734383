"""Bias and interval coverage of the deployment prevalence estimates, on real labelled sets resampled to known shifts.

Each demo is split in two stratified halves. The first (the *source*: the
labelled test set a user has) fits the recalibration Alexandari et al. (2020)
recommend before the EM (here vector scaling on log-probabilities, the
closest of our methods to bias-corrected temperature scaling) and gives the
source prevalence and BBSE's confusion matrix. The second half is the
population of the *deployment*: R samples of n rows are drawn from it with
class frequencies set to a known target prevalence (label shift by
construction: rows of class k are drawn from that half's rows of class k).
For each method (EM on the raw predictions, EM on the recalibrated ones,
BBSE) the table gives the mean error of the estimate (bias, averaged over
classes in absolute value), its RMSE, the share of (sample, class) pairs
whose 95 % interval covers the truth, and the share of samples in which the
EM's no-shift test rejects at 0.05 (its size when the target is the source
prevalence).

    python bench/bench_prevalence.py [--repeats 200] [--boot 200] [--out bench_prevalence_out]

writes ``prevalence.csv`` and two figures (``coverage.png``: coverage against
n; ``bias.png``: bias against the shift) into ``--out``. About a minute at
``--repeats 40 --boot 100``; the numbers in the closing note of issue 28 come
from the defaults.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import calib_core as cc  # noqa: E402

#: (demo, target prevalences to draw at: each a name and a vector or P(class 1)).
CASES = {
    "fair_logistic_regression": {"no shift": None, "0.10": 0.10, "0.50": 0.50, "0.80": 0.80},
    "digits_mlp": {"no shift": None, "increasing": np.linspace(1, 4, 10), "one heavy": np.r_[5.0, np.ones(9)]},
}
SIZES = (200, 1000, 3000)


def _target(value, source):
    if value is None:
        return source
    vector = np.asarray([1 - value, value] if np.ndim(value) == 0 else value, dtype=float)
    return vector / vector.sum()


def _sample(labels, target, n, rng):
    drawn = rng.choice(target.size, size=n, p=target)
    by_class = [np.flatnonzero(labels == k) for k in range(target.size)]
    return np.concatenate([by_class[k][rng.integers(by_class[k].size, size=np.sum(drawn == k))]
                           for k in range(target.size)])


def run(repeats: int, n_boot: int, seed: int = 0, sizes: tuple[int, ...] = SIZES) -> pd.DataFrame:
    rows = []
    for demo, targets in CASES.items():
        data = cc.load_demo(demo)
        split = cc.stratified_split(data.labels, test_fraction=0.5, seed=seed)
        src_probs, src_labels = data.probs[split.fit_index], data.labels[split.fit_index]
        pool_probs, pool_labels = data.probs[split.eval_index], data.labels[split.eval_index]
        recal = cc.VectorScaling(input="probs").fit(src_probs, src_labels)
        src_recal, pool_recal = recal.predict_proba(src_probs), recal.predict_proba(pool_probs)
        source = np.bincount(src_labels, minlength=data.probs.shape[1]) / src_labels.size
        for shift, value in targets.items():
            target = _target(value, source)
            for n in sizes:
                rng = np.random.default_rng([seed, n, len(rows)])
                for method in ("em raw", "em recalibrated", "bbse"):
                    estimates, covered, rejected = [], [], []
                    started = time.perf_counter()
                    for r in range(repeats):
                        take = _sample(pool_labels, target, n, rng)
                        if method == "bbse":
                            est = cc.estimate_prevalence(pool_probs[take], method="bbse", probs_labelled=src_probs,
                                                         labels=src_labels, n_boot=n_boot, seed=r)
                        else:
                            probs = pool_probs if method == "em raw" else pool_recal
                            est = cc.estimate_prevalence(probs[take], labels=src_labels, n_boot=n_boot, seed=r)
                            rejected.append(est.shift_detected)
                        estimates.append(est.prevalence)
                        covered.append((est.ci_low <= target) & (target <= est.ci_high))
                    errors = np.array(estimates) - target
                    rows.append(dict(demo=demo, shift=shift, n=n, method=method, repeats=repeats,
                                     bias=float(np.abs(errors.mean(axis=0)).mean()),
                                     rmse=float(np.sqrt((errors ** 2).mean())),
                                     coverage=float(np.mean(covered)),
                                     rejects_no_shift=float(np.mean(rejected)) if rejected else np.nan,
                                     seconds=time.perf_counter() - started))
                    print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def figures(table: pd.DataFrame, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(CASES), figsize=(11, 4), sharey=True)
    for ax, (demo, part) in zip(np.atleast_1d(axes), table.groupby("demo", sort=False)):
        for (method, shift), line in part.groupby(["method", "shift"], sort=False):
            ax.plot(line["n"], line["coverage"], marker="o", label=f"{method}, {shift}")
        ax.axhline(0.95, color="black", linestyle="--", linewidth=1)
        ax.set(xscale="log", title=demo, xlabel="unlabelled rows n", ylabel="coverage of the 95% interval")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "coverage.png", dpi=120)
    fig, axes = plt.subplots(1, len(CASES), figsize=(11, 4))
    for ax, (demo, part) in zip(np.atleast_1d(axes), table.groupby("demo", sort=False)):
        largest = part[part["n"] == part["n"].max()]
        for method, line in largest.groupby("method", sort=False):
            ax.plot(line["shift"], line["bias"], marker="o", label=method)
        ax.set(title=f"{demo}, n = {int(part['n'].max()):,}", xlabel="target prevalence", ylabel="mean |bias|")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "bias.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--boot", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--out", type=Path, default=Path("bench_prevalence_out"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    table = run(args.repeats, args.boot, args.seed, tuple(args.sizes))
    table.to_csv(args.out / "prevalence.csv", index=False)
    figures(table, args.out)
    print(table.drop(columns=["seconds"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
