"""Print CalArena's published win rates as the table of ``calib_core/recalibration/published.py``.

CalArena (probkit/CalArena, 2026) ranks calibration methods by their win rate on
the Brier score: per experiment (a dataset-model pair) the share of the other
methods with a strictly higher Brier score on the test rows, averaged over the
experiments of a benchmark (``utils.compute_winrates`` with ``metric="brier"``).
This script recomputes those point estimates from the repository's per-method
results files, exactly as ``compute_winrates`` does, so the table can be checked
against the leaderboard figures (``figures/{binary,multiclass}_winrates.png``).

Usage::

    git clone https://github.com/probkit/CalArena && python scripts/calarena_winrates.py CalArena

The numbers in published.py came from commit a0afa15 of that repository.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

#: CalArena benchmark -> the label used in calib_core.
BENCHMARKS = {"binary": ("tabrepo-binary", "tabarena-binary", "cv-binary"),
              "multiclass": ("tabrepo-multiclass", "tabarena-multiclass", "cv-multiclass"),
              "imagenet": ("imagenet-multiclass",)}
#: Extra CatBoost variants of tabrepo-binary that the binary leaderboard does not show (its ablation only).
NOT_IN_LEADERBOARD = ("CB", "CB-monotone", "CB-tiny", "CB-tiny-monotone")


def win_rates(folder: Path) -> pd.Series:
    """``compute_winrates(results, methods, metric="brier")["score"]`` of one benchmark's results folder."""
    methods = sorted(p.stem for p in folder.glob("*.csv") if p.stem not in NOT_IN_LEADERBOARD)
    keys = ["dataset", "model", "cal_size", "test_size"] + ([] if folder.name.endswith("binary") else ["n_classes"])
    results = None
    for method in methods:
        frame = pd.read_csv(folder / f"{method}.csv")
        results = frame if results is None else results.merge(frame, on=keys)
    scores = results[[f"{m}_brier" for m in methods]].set_axis(methods, axis=1)
    return pd.Series({m: scores[scores.columns.difference([m])].gt(scores[m], axis=0).mean(axis=1).mean()
                      for m in methods}), len(results)


def main(root: str) -> None:
    for kind, benchmarks in BENCHMARKS.items():
        print(f"# {kind}")
        for benchmark in benchmarks:
            rates, n = win_rates(Path(root) / "results" / benchmark)
            print(f"#   {benchmark}: {n} experiments")
            print("   ", {m: round(float(v), 3) for m, v in rates.sort_values(ascending=False).items()})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "CalArena")
