"""Bias and interval coverage of the deployment prevalence estimates, on real labelled sets resampled to known shifts.

In every repetition each demo is split at random in two halves (a fresh
split each time: the user's labelled test set is itself a random sample, so
its class frequencies and any recalibration fitted on it vary). The first
half (the *source*: the labelled test set a user has) gives the source
prevalence, BBSE's confusion matrix, the EM's calibration check and the
recalibration Alexandari et al. (2020) recommend before the EM (here
temperature scaling on log-probabilities passed as ``recalibrator=``, so it
is refitted in every bootstrap resample; vector scaling, closer to their
bias-corrected temperature scaling, takes 0.1-0.4 s a fit, too slow for
200 x 200 refits). The second half is the population of the *deployment*: a
sample of n rows is drawn from it with class frequencies set to a known
target prevalence (label shift by construction: rows of class k are drawn
from that half's rows of class k). For each method (EM on the raw
predictions, EM with the recalibration, BBSE) the table gives the mean error
of the estimate (bias, averaged over classes in absolute value), its RMSE,
the share of (sample, class) pairs whose 95 % interval covers the truth, the
share of samples whose EM interval is flagged as not holding
(``interval_holds`` False), the coverage among the unflagged samples, and the
share of samples in which the EM's no-shift test rejects at 0.05 (its size
when the target is the source prevalence).

    python bench/bench_prevalence.py [--repeats 200] [--boot 200] [--design halves] [--out bench_prevalence_out]

``--design independent`` draws the labelled source with replacement from the
whole demo (half its size) and the deployment from the whole demo, so the two
are independent samples of one population as a test set and a deployment are;
the halves design adds noise no bootstrap sees (docs/decisions.md, "BBSE's
interval"). The table's ``flagged`` column counts BBSE too (it has no check,
so 0).

writes ``prevalence.csv`` and two figures (``coverage.png``: coverage against
n; ``bias.png``: bias against the shift) into ``--out``. On a busy two-core
machine ``--repeats 40 --boot 100 --sizes 300 1000 --methods "em raw" bbse``
took seven minutes and ``--repeats 20 --boot 50 --sizes 1000 --methods "em
recalibrated"`` four (the refits and the EM's slow convergence on the weak
binary model dominate); docs/decisions.md has both tables.
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
METHODS = ("em raw", "em recalibrated", "bbse")


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


def _halves(n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random split in two halves: the labelled source and the deployment's population."""
    order = rng.permutation(n_rows)
    return order[: n_rows // 2], order[n_rows // 2:]


def _independent(n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The labelled source drawn with replacement (half the rows), the deployment drawn from all the rows.

    The demo is the population: both sets are i.i.d. draws from it and independent of each other, as a
    test set and a deployment are. With ``_halves`` the two halves are complementary (what one has too much
    of the other lacks) and a sample of n rows comes from a pool not much larger than n, whose own
    deviation from the demo is noise no bootstrap of the two sets sees.
    """
    return rng.integers(0, n_rows, n_rows // 2), np.arange(n_rows)


DESIGNS = {"halves": _halves, "independent": _independent}


def run(repeats: int, n_boot: int, seed: int = 0, sizes: tuple[int, ...] = SIZES,
        methods: tuple[str, ...] = METHODS, design: str = "halves") -> pd.DataFrame:
    rows = []
    for demo, targets in CASES.items():
        data = cc.load_demo(demo)
        overall = np.bincount(data.labels, minlength=data.probs.shape[1]) / data.labels.size
        for shift, value in targets.items():
            target = _target(value, overall)
            for n in sizes:
                for method in methods:
                    rng = np.random.default_rng([seed, n, len(rows) // len(methods)])  # same samples per method
                    estimates, covered, rejected, flagged = [], [], [], []
                    started = time.perf_counter()
                    for r in range(repeats):
                        source_rows, pool_rows = DESIGNS[design](data.labels.size, rng)
                        src_probs, src_labels = data.probs[source_rows], data.labels[source_rows]
                        pool_probs = data.probs[pool_rows]
                        take = _sample(data.labels[pool_rows], target, n, rng)
                        common = dict(probs_labelled=src_probs, labels=src_labels, n_boot=n_boot, seed=r)
                        if method == "bbse":
                            est = cc.estimate_prevalence(pool_probs[take], method="bbse", **common)
                            flagged.append(est.interval_holds is False)
                        else:
                            if method == "em recalibrated":
                                common["recalibrator"] = cc.TemperatureScaling(input="probs")
                            est = cc.estimate_prevalence(pool_probs[take], **common)
                            rejected.append(est.shift_detected)
                            flagged.append(est.interval_holds is False)
                        estimates.append(est.prevalence)
                        covered.append((est.ci_low <= target) & (target <= est.ci_high))
                    errors = np.array(estimates) - target
                    covered = np.array(covered)
                    kept = ~np.array(flagged, dtype=bool) if flagged else np.ones(repeats, dtype=bool)
                    rows.append(dict(demo=demo, shift=shift, n=n, method=method, repeats=repeats,
                                     bias=float(np.abs(errors.mean(axis=0)).mean()),
                                     rmse=float(np.sqrt((errors ** 2).mean())),
                                     coverage=float(covered.mean()),
                                     flagged=float(np.mean(flagged)) if flagged else np.nan,
                                     coverage_unflagged=float(covered[kept].mean()) if kept.any() else np.nan,
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
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--design", choices=tuple(DESIGNS), default="halves",
                        help="halves: complementary random halves of the demo (source, deployment pool); "
                             "independent: both drawn with replacement from the whole demo")
    parser.add_argument("--out", type=Path, default=Path("bench_prevalence_out"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    table = run(args.repeats, args.boot, args.seed, tuple(args.sizes), tuple(args.methods), args.design)
    table.to_csv(args.out / "prevalence.csv", index=False)
    figures(table, args.out)
    print(table.drop(columns=["seconds"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
