"""How binned calibration errors, and the ranking of models by them, move with the bin count.

A binned estimate such as the ECE is not a property of the model alone: it
depends on the number of bins and on how they are placed. Nixon et al. (2019,
section 4 and Figure 3) show that the ranking of models by a binned metric
can change with the bin count. :func:`bin_sensitivity` sweeps the bin count
for several metrics and both binning schemes; :func:`rank_by_bins` ranks a
set of models at every bin count and says where the ranking changes.

References
----------
.. [Nixon2019] Nixon, J., Dusenberry, M., Jerfel, G., Nguyen, T., Liu, J.,
   Zhang, L. & Tran, D. "Measuring Calibration in Deep Learning", CVPR
   Workshops 2019, section 3 (ECE eq. 1, SCE eq. 2, ACE eq. 3, TACE) and
   section 4 (bias of the estimators and the choice of the bin count).
.. [Spearman1904] Spearman, C. "The proof and measurement of association
   between two things", American Journal of Psychology 15, 1904.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import islice

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from calib_core.binning import binned_error, mean_abs_gap
from calib_core.metrics.binned import top_label
from calib_core.binning import bin_statistics, classwise_bin_statistics
from calib_core.validation import (
    check_right,
    MAX_N_BINS,
    CalibrationInputError,
    check_binning,
    check_choice,
    check_n_bins,
    check_positive,
    check_probs_labels,
)

__all__ = ["BinRanking", "SENSITIVITY_COLUMNS", "SENSITIVITY_METRICS", "bin_sensitivity", "rank_by_bins"]

#: Metrics :func:`bin_sensitivity` can sweep.
SENSITIVITY_METRICS = ("ece", "ace", "sce", "tace")

#: Columns of the tidy table returned by :func:`bin_sensitivity`.
SENSITIVITY_COLUMNS = ("n_bins", "binning", "metric", "value")

#: The binning scheme each metric is defined with; the other scheme gives
#: the same reduction over the other kind of bins.
CANONICAL_BINNING = {"ece": "uniform", "ace": "adaptive", "sce": "uniform", "tace": "adaptive"}


def _check_bin_counts(bin_counts: Iterable[int]) -> list[int]:
    try:
        # Distinct counts in 1..MAX_N_BINS: more than MAX_N_BINS entries cannot be valid,
        # so a huge iterable (range(2, 10**9)) is refused without being read to its end.
        counts = list(islice(bin_counts, MAX_N_BINS + 1))
    except TypeError as exc:
        raise CalibrationInputError(
            f"`bin_counts` must be an iterable of whole numbers, got {bin_counts!r}."
        ) from exc
    if not counts:
        raise CalibrationInputError("`bin_counts` is empty; give at least one bin count, e.g. range(2, 201).")
    if len(counts) > MAX_N_BINS:
        raise CalibrationInputError(
            f"`bin_counts` holds more than {MAX_N_BINS:,} values; bin counts are distinct and at most "
            f"{MAX_N_BINS:,}, e.g. range(2, 201)."
        )
    checked = [check_n_bins(n, name="bin_counts") for n in counts]
    if len(set(checked)) != len(checked):
        raise CalibrationInputError(f"`bin_counts` holds repeated values: {checked!r}.")
    return checked


def _check_names(values: Iterable[str], name: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(values, str):
        values = (values,)
    checked = tuple(check_choice(value, name, choices) for value in values)
    if not checked:
        raise CalibrationInputError(f"`{name}` is empty; choose from {', '.join(choices)}.")
    return tuple(dict.fromkeys(checked))


def bin_sensitivity(probs: ArrayLike, labels: ArrayLike, bin_counts: Iterable[int] = range(2, 201),
                    metrics: Iterable[str] = SENSITIVITY_METRICS,
                    binnings: Iterable[str] = ("uniform", "adaptive"), *,
                    threshold: float = 0.01, right: bool = True) -> pd.DataFrame:
    """Binned calibration errors at every bin count, for uniform and adaptive bins.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, rows on the simplex.
    labels : array_like of shape (N,)
        True classes in ``0..K-1``.
    bin_counts : iterable of int, default range(2, 201)
        The bin counts to evaluate (distinct, each in ``1..MAX_N_BINS``, 10,000).
    metrics : iterable of {"ece", "ace", "sce", "tace"}
        Which errors to sweep.
    binnings : iterable of {"uniform", "adaptive"}
        Which bin placements to use for every metric.
    threshold : float, default 0.01
        The TACE threshold: only probabilities strictly above it are binned.
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False), as in
        :func:`calib_core.ece`; no effect on adaptive bins.

    Returns
    -------
    pandas.DataFrame
        Tidy table with columns ``n_bins``, ``binning``, ``metric``,
        ``value``: one row per (bin count, binning, metric), ordered by
        binning, then bin count, then metric as given.

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels, bin counts, metric or binning names.

    Notes
    -----
    Each metric is one reduction of the per-bin sums of
    :mod:`calib_core.binning`; ``binning`` chooses where the bins lie:

    * ``ece``: top-label, :math:`\\sum_b (n_b/N) |\\mathrm{acc}(b) - \\mathrm{conf}(b)|`
      (Nixon et al. eq. 1); equals :func:`calib_core.ece` with that binning.
    * ``sce``: class-wise, :math:`\\frac1K \\sum_k \\sum_b (n_{bk}/N) |\\mathrm{acc}(b,k) - \\mathrm{conf}(b,k)|`
      (eq. 2). With uniform bins it is :func:`calib_core.sce`; with adaptive
      bins :func:`calib_core.classwise_ece` with ``binning="adaptive"``.
    * ``ace``: class-wise, the unweighted mean of the gaps over the non-empty
      bins, then over classes (eq. 3). With adaptive bins it is
      :func:`calib_core.ace`; with uniform bins the same unweighted mean over
      uniform-width bins.
    * ``tace``: ``ace`` over the probabilities above ``threshold`` only; with
      adaptive bins :func:`calib_core.tace`.

    For every bin count the top-label values are binned once and the class
    columns once (twice with ``tace``), each in one vectorised call, so
    200 bin counts on 2,000 x 10 predictions take a fraction of a second.

    References
    ----------
    Nixon et al. 2019, "Measuring Calibration in Deep Learning", section 3
    (eq. 1-3) and section 4, Figure 3 (the bin count changes the ranking).

    Examples
    --------
    >>> table = bin_sensitivity([[0.9, 0.1], [0.6, 0.4]], [0, 1], bin_counts=[2, 10], metrics=["ece"],
    ...                         binnings=["uniform"])
    >>> table["value"].round(6).tolist()
    [0.25, 0.35]
    """
    probs, labels = check_probs_labels(probs, labels)
    counts = _check_bin_counts(bin_counts)
    metrics = _check_names(metrics, "metrics", SENSITIVITY_METRICS)
    binnings = tuple(dict.fromkeys(check_binning(b) for b in ((binnings,) if isinstance(binnings, str) else binnings)))
    if not binnings:
        raise CalibrationInputError("`binnings` is empty; choose 'uniform', 'adaptive' or both.")
    threshold = check_positive(threshold, "threshold", allow_zero=True)
    right = check_right(right)

    confidence, correct = top_label(probs, labels)
    keep = probs > threshold if "tace" in metrics else None
    wants_classwise = "sce" in metrics or "ace" in metrics
    values = np.empty((len(binnings), len(counts), len(metrics)))
    for b, binning in enumerate(binnings):
        for i, n_bins in enumerate(counts):
            found: dict[str, float] = {}
            if "ece" in metrics:
                found["ece"] = float(binned_error(bin_statistics(confidence, correct, n_bins, binning, right=right), "l1"))
            if wants_classwise:
                stats = classwise_bin_statistics(probs, labels, n_bins, binning, right=right)
                found["sce"] = float(binned_error(stats, "l1").mean())
                found["ace"] = float(mean_abs_gap(stats).mean())
            if keep is not None:
                kept = classwise_bin_statistics(probs, labels, n_bins, binning, keep=keep, right=right)
                found["tace"] = float(mean_abs_gap(kept).mean())
            values[b, i] = [found[m] for m in metrics]
    n_binnings, n_counts, n_metrics = values.shape
    return pd.DataFrame({
        "n_bins": np.tile(np.repeat(np.asarray(counts, dtype=np.int64), n_metrics), n_binnings),
        "binning": np.repeat(np.asarray(binnings, dtype=object), n_counts * n_metrics),
        "metric": np.tile(np.asarray(metrics, dtype=object), n_binnings * n_counts),
        "value": values.ravel(),
    }, columns=list(SENSITIVITY_COLUMNS))


@dataclass(frozen=True)
class BinRanking:
    """Ranks of several models by a binned metric at every bin count.

    Attributes
    ----------
    ranks : pandas.DataFrame
        Columns ``n_bins``, ``binning``, ``metric``, ``model``, ``value``,
        ``rank``: rank 1 is the lowest (best) error; tied values share the
        lowest rank of their group.
    spearman : pandas.DataFrame
        Columns ``binning``, ``metric``, ``n_bins``, ``reference_n_bins``,
        ``rho``: Spearman's rank correlation between the model values at
        ``n_bins`` and at ``reference_n_bins`` (1 = same order, -1 =
        reversed, NaN when fewer than two models or all values tie).
    flips : pandas.DataFrame
        Columns ``binning``, ``metric``, ``n_bins``, ``previous_n_bins``,
        ``order``, ``previous_order``: one row for every bin count at which
        the order of the models differs from the order at the previous bin
        count of the sweep. Orders read best first, e.g. ``"a < b < c"``.
    """

    ranks: pd.DataFrame
    spearman: pd.DataFrame
    flips: pd.DataFrame


def _order_text(names: np.ndarray, row_ranks: np.ndarray) -> str:
    order = np.lexsort((names, row_ranks))
    text = str(names[order[0]])
    for previous, current in zip(order[:-1], order[1:]):
        text += (" = " if row_ranks[current] == row_ranks[previous] else " < ") + str(names[current])
    return text


def rank_by_bins(table_per_model: Mapping[str, pd.DataFrame], *, reference_n_bins: int = 15) -> BinRanking:
    """Rank models by each swept metric at every bin count and find where the ranking flips.

    Parameters
    ----------
    table_per_model : mapping of str to pandas.DataFrame
        ``{model name: bin_sensitivity(...) table}``; every table must hold
        the same (n_bins, binning, metric) grid.
    reference_n_bins : int, default 15
        The bin count whose ranking the Spearman correlations compare with
        (15 is the usual default of ECE implementations). Must be one of
        the swept bin counts.

    Returns
    -------
    BinRanking
        Ranks per bin count, Spearman correlations with the reference bin
        count, and the bin counts at which the order changes.

    Raises
    ------
    CalibrationInputError
        No models, tables that are not ``bin_sensitivity`` output, grids
        that differ between models, or a reference bin count not swept.

    Notes
    -----
    With :math:`d_m` the difference between the (average, for ties) ranks of
    model m at two bin counts and M models, Spearman's rho is the Pearson
    correlation of the ranks, which without ties is
    :math:`1 - 6 \\sum_m d_m^2 / (M (M^2 - 1))` (Spearman 1904).

    Examples
    --------
    >>> a = pd.DataFrame({"n_bins": [5, 15], "binning": "uniform", "metric": "ece", "value": [0.1, 0.3]})
    >>> b = pd.DataFrame({"n_bins": [5, 15], "binning": "uniform", "metric": "ece", "value": [0.2, 0.2]})
    >>> result = rank_by_bins({"a": a, "b": b})
    >>> result.flips[["n_bins", "order"]].values.tolist()
    [[15, 'b < a']]
    """
    if not isinstance(table_per_model, Mapping) or not table_per_model:
        raise CalibrationInputError("`table_per_model` must be a non-empty mapping of model name to table.")
    names = np.asarray([str(name) for name in table_per_model], dtype=object)
    reference_n_bins = check_n_bins(reference_n_bins, name="reference_n_bins")
    keys = ["binning", "metric", "n_bins"]
    columns = []
    grid = None
    for name, table in table_per_model.items():
        if not isinstance(table, pd.DataFrame) or not set(SENSITIVITY_COLUMNS) <= set(table.columns):
            raise CalibrationInputError(
                f"the table of model {name!r} must be a DataFrame with columns "
                f"{', '.join(SENSITIVITY_COLUMNS)} (the output of bin_sensitivity)."
            )
        ordered = table.sort_values(keys, kind="stable").reset_index(drop=True)
        if ordered.duplicated(keys).any():
            raise CalibrationInputError(f"the table of model {name!r} repeats an (n_bins, binning, metric) row.")
        if grid is None:
            grid = ordered[keys]
        elif not grid.equals(ordered[keys]):
            raise CalibrationInputError(
                f"the table of model {name!r} sweeps different bin counts, binnings or metrics than "
                f"{names[0]!r}; compute every table with the same arguments."
            )
        columns.append(ordered["value"].to_numpy(dtype=np.float64))
    values = np.column_stack(columns)  # (grid rows, models)
    if reference_n_bins not in set(grid["n_bins"].tolist()):
        swept = grid["n_bins"]
        raise CalibrationInputError(
            f"`reference_n_bins` must be one of the swept bin counts ({swept.min()}..{swept.max()}), "
            f"got {reference_n_bins}."
        )
    min_ranks = rankdata(values, method="min", axis=1).astype(np.int64)
    mean_ranks = rankdata(values, method="average", axis=1)

    n_models = names.size
    ranks = pd.DataFrame({
        "n_bins": np.repeat(grid["n_bins"].to_numpy(), n_models),
        "binning": np.repeat(grid["binning"].to_numpy(), n_models),
        "metric": np.repeat(grid["metric"].to_numpy(), n_models),
        "model": np.tile(names, len(grid)),
        "value": values.ravel(),
        "rank": min_ranks.ravel(),
    })

    spearman_parts = []
    flip_rows = []
    for (binning, metric), group in grid.groupby(["binning", "metric"], sort=False):
        rows = group.index.to_numpy()
        bins = group["n_bins"].to_numpy()
        centred = mean_ranks[rows] - mean_ranks[rows].mean(axis=1, keepdims=True)
        reference = centred[np.flatnonzero(bins == reference_n_bins)[0]]
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (centred @ reference) / (np.linalg.norm(centred, axis=1) * np.linalg.norm(reference))
        rho = np.clip(rho, -1.0, 1.0)  # rounding can leave |rho| a few ulps above 1
        spearman_parts.append(pd.DataFrame({
            "binning": binning, "metric": metric, "n_bins": bins,
            "reference_n_bins": reference_n_bins, "rho": rho,
        }))
        group_ranks = min_ranks[rows]
        changed = np.flatnonzero((group_ranks[1:] != group_ranks[:-1]).any(axis=1)) + 1
        for i in changed:
            flip_rows.append({
                "binning": binning, "metric": metric, "n_bins": int(bins[i]),
                "previous_n_bins": int(bins[i - 1]),
                "order": _order_text(names, group_ranks[i]),
                "previous_order": _order_text(names, group_ranks[i - 1]),
            })
    flips = pd.DataFrame(flip_rows, columns=["binning", "metric", "n_bins", "previous_n_bins",
                                             "order", "previous_order"])
    return BinRanking(ranks, pd.concat(spearman_parts, ignore_index=True), flips)
