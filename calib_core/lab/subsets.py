"""Test-set-size study: every metric on random subsets of the user's own test set.

:func:`subset_study` evaluates metrics on random subsets from 100 rows to all
of them, so that a metric's bias at small sizes and the spread of one test
set of a given size can be read off (Gruber & Buettner 2022, G.2/G.3).

References
----------
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix D.5,
   G.2, G.3.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from calib_core.lab.estimators import ProgressCallback, StopCallback
from calib_core.metrics.registry import resolve_metrics
from calib_core.validation import CalibrationInputError, check_count, check_probs_labels, check_sizes

__all__ = ["SubsetStudy", "default_subset_sizes", "subset_study"]


@dataclass(frozen=True)
class SubsetStudy:
    """Output of :func:`subset_study`.

    Attributes
    ----------
    values : pandas.DataFrame
        Columns ``metric``, ``size``, ``repetition``, ``value``.
    summary : pandas.DataFrame
        One row per (metric, size): ``mean``, ``std``, ``q05``, ``q95``,
        ``full_value`` (the metric on all N rows), ``relative_spread``
        (``std / |full_value|``) and ``repetitions``.
    sizes : tuple of int
    n_rows : int
    stopped : bool
    """

    values: pd.DataFrame
    summary: pd.DataFrame
    sizes: tuple[int, ...]
    n_rows: int
    stopped: bool


def default_subset_sizes(n_rows: int, n_ticks: int = 10, minimum: int = 100) -> tuple[int, ...]:
    """Sizes equally spaced in log2 from ``minimum`` to ``n_rows`` (Gruber & Buettner, G.2)."""
    if n_rows <= minimum:
        return (int(n_rows),)
    ticks = np.round(np.exp2(np.linspace(math.log2(minimum), math.log2(n_rows), n_ticks))).astype(np.int64)
    ticks[-1] = n_rows
    return tuple(int(v) for v in np.unique(ticks))


def subset_study(probs: ArrayLike, labels: ArrayLike, metrics=("ece", "ace", "sce", "ks", "brier", "nll"),
                 sizes: Iterable[int] | None = None, repetitions: int = 20, seed: int | None = 0, *,
                 n_bins: int = 15, binning: str = "uniform", on_progress: ProgressCallback | None = None,
                 should_stop: StopCallback | None = None) -> SubsetStudy:
    """Every metric on random subsets of a test set, from 100 rows to all of them.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    metrics : sequence of str or callable, or mapping of name to either
        Keys of :data:`calib_core.METRICS` (computed with ``n_bins`` and
        ``binning``) or ``metric(probs, labels) -> float``.
    sizes : iterable of int, optional
        Subset sizes (<= N); default: 10 sizes equally spaced in log2 from
        100 to N (Gruber & Buettner 2022, appendix G.2).
    repetitions : int, default 20
        Random subsets per size (drawn without replacement); the full set is
        evaluated once.
    seed : int, optional
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}, default "uniform"
    on_progress : callable, optional
        ``on_progress(done, total)`` after each size, in evaluated rows.
    should_stop : callable, optional
        Checked before each size.

    Returns
    -------
    SubsetStudy

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels, metrics, sizes or repetitions.

    Notes
    -----
    A metric whose mean moves with the subset size is biased at the small
    sizes (the binned ECE of a well-calibrated model falls roughly like
    ``1 / sqrt(n)``, Gruber & Buettner D.5); its spread says how much one
    test set of that size can be trusted.
    """
    probs, labels = check_probs_labels(probs, labels)
    n_rows = probs.shape[0]
    functions = resolve_metrics(metrics, n_bins=n_bins, binning=binning)
    repetitions = check_count(repetitions, "repetitions")
    chosen_sizes = default_subset_sizes(n_rows) if sizes is None else check_sizes(sizes, minimum=1)
    if chosen_sizes[-1] > n_rows:
        raise CalibrationInputError(f"`sizes` must not exceed the {n_rows} rows, got {chosen_sizes[-1]}.")
    rng = np.random.default_rng(seed)
    total = sum(n * (1 if n == n_rows else repetitions) for n in chosen_sizes)
    rows: list[tuple[str, int, int, float]] = []
    done = 0
    stopped = False
    for n in chosen_sizes:
        if should_stop is not None and should_stop():
            stopped = True
            break
        count = 1 if n == n_rows else repetitions
        for r in range(count):
            index = np.arange(n_rows) if n == n_rows else rng.choice(n_rows, size=n, replace=False)
            sub_probs, sub_labels = probs[index], labels[index]
            for name, function in functions.items():
                rows.append((name, n, r, float(function(sub_probs, sub_labels))))
        done += n * count
        if on_progress is not None:
            on_progress(done, total)
    values = pd.DataFrame(rows, columns=["metric", "size", "repetition", "value"])
    full = {name: float(function(probs, labels)) for name, function in functions.items()}
    if values.empty:
        summary = pd.DataFrame(columns=["metric", "size", "mean", "std", "q05", "q95", "full_value",
                                        "relative_spread", "repetitions"])
    else:
        grouped = values.groupby(["metric", "size"], sort=False)["value"]
        summary = grouped.agg(mean="mean", std="std", q05=lambda v: v.quantile(0.05),
                              q95=lambda v: v.quantile(0.95), repetitions="count").reset_index()
        summary["std"] = summary["std"].fillna(0.0)
        summary["full_value"] = summary["metric"].map(full)
        with np.errstate(divide="ignore", invalid="ignore"):
            summary["relative_spread"] = summary["std"] / summary["full_value"].abs()
        summary = summary[["metric", "size", "mean", "std", "q05", "q95", "full_value", "relative_spread",
                           "repetitions"]]
    return SubsetStudy(values, summary, chosen_sizes, n_rows, stopped)

