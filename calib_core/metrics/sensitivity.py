"""How binned calibration errors, and the ranking of models by them, move with the bin count.

A binned estimate such as the ECE is not a property of the model alone: it
depends on the number of bins and on how they are placed. Nixon et al. (2019,
section 4 and Figure 3) show that the ranking of models by a binned metric
can change with the bin count. :func:`bin_sensitivity` sweeps the bin count
for several metrics and both binning schemes; :func:`rank_by_bins` ranks a
set of models at every bin count and says where the ranking changes;
:func:`bin_rank_stability` measures, for each of the 32 GCE variants, how
stable the ranking of several models is across bin counts (Nixon et al.
2019, 5.3). Both rank with the one pair of helpers :func:`competition_ranks`
and :func:`spearman_rows`.

References
----------
.. [Nixon2019] Nixon, J., Dusenberry, M., Jerfel, G., Nguyen, T., Liu, J.,
   Zhang, L. & Tran, D. "Measuring Calibration in Deep Learning", CVPR
   Workshops 2019, section 3 (ECE eq. 1, SCE eq. 2, ACE eq. 3, TACE),
   section 4 (bias of the estimators and the choice of the bin count),
   section 5.3, appendix C and Figure 4 (the 32 GCE variants and the
   stability of their rankings).
.. [Spearman1904] Spearman, C. "The proof and measurement of association
   between two things", American Journal of Psychology 15, 1904.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata

from calib_core._accel import column_bin_sums, count_chunks, sort_columns, sweep_reductions
from calib_core.binning import SortedValues, sort_values, sorted_bin_sums, weighted_edge_positions
from calib_core.metrics.binned import gce_bin_statistics, gce_of_statistics, top_label
from calib_core.validation import (
    CalibrationInputError,
    MAX_N_BINS,
    check_binning,
    check_choice,
    check_n_bins,
    check_positive,
    check_probs_labels,
    check_right,
    check_sample_weight,
    check_sizes,
    integer_weights,
    row_argmax,
    transposed,
)

__all__ = ["BinRanking", "GCE_VARIANTS", "RankStability", "SENSITIVITY_COLUMNS", "SENSITIVITY_METRICS",
           "bin_rank_stability", "bin_sensitivity", "competition_ranks", "gce_variants", "rank_by_bins",
           "spearman_rows"]

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
                    threshold: float = 0.01, right: bool = True,
                    sample_weight: ArrayLike | None = None) -> pd.DataFrame:
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
    sample_weight : array_like of shape (N,), optional
        Row weights (``docs/weights.md``): every bin's count and sums are
        weighted sums and N is the summed weight, as in the metric functions
        with ``sample_weight``; adaptive edges are
        :func:`calib_core.binning.weighted_upper_edges`. Integer weights give
        the sweep of the repeated rows; rows of weight 0 are left out.

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

    The top-label values and every class column are sorted once, with
    prefix sums (:func:`calib_core._accel.sort_columns`); every bin count
    and both binnings are then gathers of those sums at the bin ends
    (:func:`calib_core.binning.sorted_columns_bin_sums`), ``O(K B)`` per
    bin count instead of a new pass over the ``N x K`` matrix. The values
    equal those of the metric functions up to round-off. With
    ``sample_weight`` each set is sorted once with the prefix sums of ``w``,
    ``w v`` and ``w t`` (:class:`_WeightedSorted`), and a bin count costs a
    search of its edges.

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
    weights = check_sample_weight(sample_weight, labels.size)

    found = (_sweep(probs, labels, counts, metrics, binnings, threshold, right) if weights is None else
             _weighted_sweep(probs, labels, weights, counts, metrics, binnings, threshold, right))
    values = np.stack([np.column_stack([found[binning, metric] for metric in metrics]) for binning in binnings])
    n_binnings, n_counts, n_metrics = values.shape
    return pd.DataFrame({
        "n_bins": np.tile(np.repeat(np.asarray(counts, dtype=np.int64), n_metrics), n_binnings),
        "binning": np.repeat(np.asarray(binnings, dtype=object), n_counts * n_metrics),
        "metric": np.tile(np.asarray(metrics, dtype=object), n_binnings * n_counts),
        "value": values.ravel(),
    }, columns=list(SENSITIVITY_COLUMNS))


#: Values sorted per block of class columns (the sorted columns and their prefix sums; the bins' sums are bounded
#: by :func:`calib_core._accel.sweep_reductions` itself).
_BLOCK_VALUES = 1 << 21


def _binned_l1(count, sum_value, sum_target, segments, n_total):
    """``binned_error(..., "l1")`` of every bin count: the bins of count j are columns ``segments[j]:``."""
    return np.add.reduceat(np.abs(sum_value - sum_target), segments, axis=1) / max(n_total, 1)


def _sweep(probs: NDArray[np.float64], labels: NDArray[np.intp], counts: list[int], metrics: tuple[str, ...],
           binnings: tuple[str, ...], threshold: float, right: bool) -> dict[tuple[str, str], NDArray[np.float64]]:
    """``{(binning, metric): value at each bin count}`` from one sort of the top-label values and of each column.

    The class columns are sorted a block at a time and each block's bins are
    reduced by :func:`calib_core._accel.sweep_reductions` (the compiled walk
    or its numpy twin, the same bins and differences of prefix sums).
    """
    n_rows, n_classes = probs.shape
    found: dict[tuple[str, str], NDArray[np.float64]] = {}
    if "ece" in metrics:
        confidence, correct = top_label(probs, labels)
        top = sort_columns(confidence[None, :], correct[None, :])
        chunks = [(counts[part], np.concatenate([[0], np.cumsum(counts[part])[:-1]]).astype(np.intp))
                  for part in count_chunks(counts)]
        for binning in binnings:
            found[binning, "ece"] = np.concatenate([
                _binned_l1(*column_bin_sums(top, tuple(chunk), binning, right, None), segments, n_rows)[0]
                for chunk, segments in chunks])
    classwise = [metric for metric in ("sce", "ace", "tace") if metric in metrics]
    if not classwise:
        return found
    per_class = {(binning, metric): np.empty((n_classes, len(counts))) for binning in binnings for metric in classwise}
    block = max(1, _BLOCK_VALUES // max(n_rows, 1))
    for lo in range(0, n_classes, block):
        hi = min(lo + block, n_classes)
        columns = sort_columns(transposed(probs[:, lo:hi]),
                               labels[None, :] == np.arange(lo, hi)[:, None])
        for binning in binnings:
            if "sce" in classwise or "ace" in classwise:
                l1, gap = sweep_reductions(columns, tuple(counts), binning, right, None)
                if "sce" in classwise:
                    per_class[binning, "sce"][lo:hi] = l1 / max(n_rows, 1)
                if "ace" in classwise:
                    per_class[binning, "ace"][lo:hi] = gap
            if "tace" in classwise:
                _, gap = sweep_reductions(columns, tuple(counts), binning, right, threshold)
                per_class[binning, "tace"][lo:hi] = gap
    found.update({key: value.mean(axis=0) for key, value in per_class.items()})
    return found


class _WeightedSorted:
    """One set of values with positive weights, sorted once, with prefix sums of ``w``, ``w v`` and ``w t``.

    The bins are those of :func:`calib_core.binning.bin_statistics` with
    ``sample_weight``: uniform bins end after the last value ``<= hi``
    (``right``) or ``< hi``, as :func:`calib_core.binning.sorted_bin_ends`;
    adaptive bins end after the last value ``<=`` each of
    :func:`calib_core.binning.weighted_upper_edges` (tied values share a bin).
    Bins emptied by ties are dropped: they add nothing to either reduction.
    """

    def __init__(self, values: NDArray[np.float64], targets: NDArray[np.float64],
                 weights: NDArray[np.float64]) -> None:
        order = np.argsort(values, kind="stable")
        self.values, weights = values[order], weights[order]
        self.whole = integer_weights(weights)
        self.cumulative = [np.concatenate([[0.0], np.cumsum(x)])
                           for x in (weights, weights * self.values, weights * targets[order])]

    def sums(self, n_bins: int, binning: str, right: bool) -> tuple[NDArray[np.float64], ...]:
        """Summed weight, ``sum w v`` and ``sum w t`` of each non-empty bin."""
        m = self.values.size
        if m == 0:
            return np.zeros(0), np.zeros(0), np.zeros(0)
        if binning == "uniform":
            edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
            ends = np.append(np.searchsorted(self.values, edges, side="right" if right else "left"), m)
        else:
            upper = self.values[weighted_edge_positions(self.cumulative[0][1:], n_bins, self.whole)]
            ends = np.searchsorted(self.values, upper, side="right")
        ends = ends[(ends > 0) & (ends > np.concatenate([[0], ends[:-1]]))]  # ascending: drop the empty bins
        starts = np.concatenate([[0], ends[:-1]])
        return tuple(c[ends] - c[starts] for c in self.cumulative)


def _weighted_sweep(probs: NDArray[np.float64], labels: NDArray[np.intp], weights: NDArray[np.float64],
                    counts: list[int], metrics: tuple[str, ...], binnings: tuple[str, ...], threshold: float,
                    right: bool) -> dict[tuple[str, str], NDArray[np.float64]]:
    """:func:`_sweep` with row weights: the reductions of :mod:`calib_core.binning` on weighted bin sums.

    ``l1``: ``sum_b |sum w v - sum w t| / W`` (ECE, SCE; Nixon et al. eq. 1-2 with
    counts as summed weights); ACE / TACE: the mean over non-empty bins of
    ``|sum w v - sum w t| / sum w`` (eq. 3), then over classes.
    """
    keep = weights > 0
    probs, labels, weights = probs[keep], labels[keep], weights[keep]
    total = float(weights.sum())

    def l1(sums):
        return float(np.abs(sums[1] - sums[2]).sum() / total)

    def mean_gap(sums):
        return float(np.mean(np.abs(sums[1] - sums[2]) / sums[0])) if sums[0].size else 0.0

    found: dict[tuple[str, str], NDArray[np.float64]] = {}
    if "ece" in metrics:
        top = _WeightedSorted(*top_label(probs, labels), weights)
        for binning in binnings:
            found[binning, "ece"] = np.array([l1(top.sums(n, binning, right)) for n in counts])
    for metric in (m for m in ("sce", "ace", "tace") if m in metrics):
        reduce = l1 if metric == "sce" else mean_gap
        per_class = np.empty((len(binnings), probs.shape[1], len(counts)))
        for k in range(probs.shape[1]):
            kept = probs[:, k] > threshold if metric == "tace" else slice(None)
            column = _WeightedSorted(probs[kept, k], (labels[kept] == k).astype(np.float64), weights[kept])
            for i, binning in enumerate(binnings):
                per_class[i, k] = [reduce(column.sums(n, binning, right)) for n in counts]
        found.update({(binning, metric): per_class[i].mean(axis=0) for i, binning in enumerate(binnings)})
    return found


# ----------------------------------------------------------------------------- ranking
def competition_ranks(values: ArrayLike, axis: int = -1) -> NDArray[np.int64]:
    """Ranks along ``axis``, 1 for the lowest (best) error; tied values share the lowest rank of their group.

    Examples
    --------
    >>> competition_ranks([0.3, 0.1, 0.3]).tolist()
    [2, 1, 2]
    """
    return rankdata(values, method="min", axis=axis).astype(np.int64)


def spearman_rows(values: ArrayLike, reference: int | None = None) -> NDArray[np.float64]:
    """Spearman's rank correlation between the rows of a ``(variables, observations)`` matrix.

    Parameters
    ----------
    values : array_like of shape (V, M)
        One row per variable (e.g. a bin count), one column per observation
        (e.g. a model).
    reference : int, optional
        Correlate every row with this row only (shape ``(V,)``) instead of
        every pair of rows (shape ``(V, V)``).

    Returns
    -------
    ndarray
        Spearman's rho in [-1, 1]; NaN where a row is constant (every
        observation ties) or there are fewer than two observations.

    Notes
    -----
    Spearman's rho is the Pearson correlation of the (average, for ties)
    ranks; without ties it is :math:`1 - 6 \\sum_m d_m^2 / (M (M^2 - 1))`
    with :math:`d_m` the rank difference of observation m (Spearman 1904).

    Examples
    --------
    >>> np.round(spearman_rows([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]], reference=0), 12).tolist()
    [1.0, -1.0]
    """
    ranks = rankdata(np.asarray(values, dtype=np.float64), method="average", axis=1)
    centred = ranks - ranks.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(centred, axis=1)
    other, other_norms = (centred, norms) if reference is None else (centred[reference], norms[reference])
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (centred @ other.T) / np.multiply.outer(norms, other_norms)
    return np.clip(rho, -1.0, 1.0)  # rounding can leave |rho| a few ulps above 1


# ----------------------------------------------------------------------------- ranking by bin count
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
    min_ranks = competition_ranks(values, axis=1)

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
        rho = spearman_rows(values[rows], reference=int(np.flatnonzero(bins == reference_n_bins)[0]))
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


# ----------------------------------------------------------------------------- bin-count rank stability
#: The 32 GCE variants in the order of Nixon et al. (2019), appendix C:
#: (binning, max_prob, class_conditional, threshold, norm).
GCE_VARIANTS: tuple[tuple[str, bool, bool, float, str], ...] = tuple(
    (binning, max_prob, class_conditional, threshold, norm)
    for binning in ("uniform", "adaptive")
    for max_prob in (True, False)
    for class_conditional in (True, False)
    for threshold in (0.0, 0.01)
    for norm in ("l1", "l2")
)


def gce_variants(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, *,
                 sample_weight: ArrayLike | None = None) -> NDArray[np.float64]:
    """:func:`calib_core.gce` under each of the :data:`GCE_VARIANTS`, in their order (shape (32,)).

    ``sample_weight``: row weights, as :func:`calib_core.gce` takes them (each value is ``gce(...,
    sample_weight=)`` of its variant).

    The two norms of a setting share one set of bins
    (:func:`calib_core.metrics.binned.gce_bin_statistics`): 16 binnings
    instead of 32, each value bit for bit the one :func:`calib_core.gce` gives.

    Examples
    --------
    >>> import numpy as np
    >>> from calib_core import gce
    >>> p = np.array([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]]); y = np.array([0, 1, 1])
    >>> bool(gce_variants(p, y, 10)[4] == gce(p, y, n_bins=10))
    True
    """
    probs, labels = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    weights = check_sample_weight(sample_weight, labels.size)
    values = np.empty(len(GCE_VARIANTS))
    for index in range(0, len(GCE_VARIANTS), 2):  # l1 then l2 of each setting
        binning, max_prob, class_conditional, threshold, _ = GCE_VARIANTS[index]
        stats = gce_bin_statistics(probs, labels, n_bins, binning, max_prob, class_conditional, threshold,
                                   sample_weight=weights)
        for offset in (0, 1):
            values[index + offset] = gce_of_statistics(stats, class_conditional, GCE_VARIANTS[index + offset][4])
    return values


@dataclass(frozen=True)
class RankStability:
    """Output of :func:`bin_rank_stability`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per GCE variant (``variant`` 0-31 in Nixon et al.'s order):
        ``binning``, ``max_prob``, ``class_conditional``, ``threshold``,
        ``norm``, ``mean_spearman`` (mean over all pairs of bin counts of the
        Spearman correlation of the models' values), ``min_spearman`` and
        ``pairs`` (pairs with a defined correlation).
    by_property : pandas.DataFrame
        ``property``, ``setting`` (as text, e.g. ``"adaptive"``, ``"True"``,
        ``"0.01"``), ``mean_spearman``: the mean over the 16 variants sharing
        each setting (as Nixon et al. report "adaptive 0.59, even 0.37").
    values : ndarray of shape (32, len(bin_counts), len(models))
        The GCE value of every variant, bin count and model (for heatmaps).
    correlations : ndarray of shape (32, len(bin_counts), len(bin_counts))
        Spearman correlation between the model orderings at two bin counts.
    bin_counts : tuple of int
    models : tuple of str
    stopped : bool
    """

    table: pd.DataFrame
    by_property: pd.DataFrame
    values: NDArray[np.float64]
    correlations: NDArray[np.float64]
    bin_counts: tuple[int, ...]
    models: tuple[str, ...]
    stopped: bool


def bin_rank_stability(models: Mapping[str, tuple[ArrayLike, ArrayLike]], bin_counts: Iterable[int] = range(10, 51),
                       *, on_progress: Callable[[int, int], None] | None = None,
                       should_stop: Callable[[], bool] | None = None) -> RankStability:
    """Stability of the ranking of models across bin counts for the 32 GCE variants (Nixon et al. 5.3).

    Parameters
    ----------
    models : mapping of str to (probs, labels)
        At least two models (or recalibrations) evaluated on their test sets.
    bin_counts : iterable of int, default range(10, 51)
        At least two bin counts.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each variant.
    should_stop : callable, optional
        Checked before each variant; the rows of unfinished variants are NaN.

    Returns
    -------
    RankStability

    Raises
    ------
    CalibrationInputError
        Fewer than two models or bin counts, or invalid predictions/labels.

    Notes
    -----
    For each variant, the models' values at each bin count are ranked, and
    Spearman's rho (:func:`spearman_rows`, average ranks for ties) is
    taken between every pair of bin counts; the table reports the mean over
    the pairs (pairs where every model ties are undefined and skipped). 1
    means the bin count never changes which model looks better calibrated.
    Nixon et al. (2019, section 5.3) find adaptive binning clearly more
    stable than even binning (mean rank correlation 0.59 vs 0.37 on
    CIFAR-10). The values are those of :func:`calib_core.gce` (the tests
    check all 32 variants against it), computed from sets sorted once per
    model so that a bin count costs O(B) per set.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> p = {t: np.column_stack([1 - s, s]) for t, s in
    ...      {"sharp": np.clip(y * 0.8 + 0.1, 0, 1), "soft": np.full(400, 0.5), "mid": np.clip(y * 0.4 + 0.3, 0, 1)}.items()}
    >>> result = bin_rank_stability({k: (v, y) for k, v in p.items()}, bin_counts=[10, 20])
    >>> result.table.shape
    (32, 9)
    """
    if not isinstance(models, Mapping) or len(models) < 2:
        raise CalibrationInputError("`models` must map at least two model names to (probs, labels).")
    checked = {}
    for name, pair in models.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise CalibrationInputError(f"model {name!r} must be given as (probs, labels), got {type(pair).__name__}.")
        try:
            checked[str(name)] = check_probs_labels(*pair)
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"model {name!r}: {exc}") from exc
    counts = check_sizes(bin_counts, "bin_counts", minimum=1)
    if len(counts) < 2:
        raise CalibrationInputError("`bin_counts` must hold at least two different bin counts.")
    names = tuple(checked)
    prepared = {name: _GceSets(*checked[name]) for name in names}
    values = np.full((len(GCE_VARIANTS), len(counts), len(names)), np.nan)
    correlations = np.full((len(GCE_VARIANTS), len(counts), len(counts)), np.nan)
    stopped = False
    upper = np.triu_indices(len(counts), k=1)
    for v, (binning, max_prob, class_conditional, threshold, norm) in enumerate(GCE_VARIANTS):
        if should_stop is not None and should_stop():
            stopped = True
            break
        for m, name in enumerate(names):
            values[v, :, m] = prepared[name].gce(counts, binning, max_prob, class_conditional, threshold, norm)
        correlations[v] = spearman_rows(values[v])
        if on_progress is not None:
            on_progress(v + 1, len(GCE_VARIANTS))
    pair_values = correlations[:, upper[0], upper[1]]
    defined = np.isfinite(pair_values)
    with np.errstate(invalid="ignore"):
        mean = np.where(defined.any(axis=1), np.nansum(pair_values, axis=1) / np.maximum(defined.sum(axis=1), 1),
                        np.nan)
        minimum = np.where(defined.any(axis=1), np.nanmin(np.where(defined, pair_values, np.inf), axis=1), np.nan)
    table = pd.DataFrame({
        "variant": np.arange(len(GCE_VARIANTS)),
        "binning": [v[0] for v in GCE_VARIANTS],
        "max_prob": [v[1] for v in GCE_VARIANTS],
        "class_conditional": [v[2] for v in GCE_VARIANTS],
        "threshold": [v[3] for v in GCE_VARIANTS],
        "norm": [v[4] for v in GCE_VARIANTS],
        "mean_spearman": mean,
        "min_spearman": minimum,
        "pairs": defined.sum(axis=1),
    })
    by_property = []
    for column in ("binning", "max_prob", "class_conditional", "threshold", "norm"):
        for setting, group in table.groupby(column, sort=False):
            # Settings as text: 0.0 and False would otherwise merge in an index.
            by_property.append({"property": column, "setting": str(setting),
                                "mean_spearman": float(group["mean_spearman"].mean())})
    return RankStability(table, pd.DataFrame(by_property), values, correlations, counts, names, stopped)


class _GceSets:
    """The sets of values that the GCE variants bin, each sorted once, for fast bin-count sweeps.

    For a sorted set, any bin's count and sums are differences of cumulative
    sums at the bin's end positions, so a bin count costs O(B) per set
    instead of a new sort. The values equal :func:`calib_core.gce`'s
    (uniform bins right-closed, adaptive bins ``array_split`` runs extended
    over ties, values ``<= threshold`` dropped).
    """

    def __init__(self, probs: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        self.probs, self.labels = probs, labels
        self.n_classes = probs.shape[1]
        self._cache: dict[tuple[bool, bool, float], list[SortedValues]] = {}

    def _sets(self, max_prob: bool, class_conditional: bool, threshold: float) -> list[SortedValues]:
        key = (max_prob, class_conditional, threshold)
        if key not in self._cache:
            probs, labels = self.probs, self.labels
            raw: list[tuple[NDArray, NDArray]] = []
            if class_conditional:
                predicted = row_argmax(probs)
                for k in range(self.n_classes):
                    keep = probs[:, k] > threshold
                    if max_prob:
                        keep &= predicted == k
                    raw.append((probs[keep, k], (labels[keep] == k).astype(np.float64)))
            else:
                if max_prob:
                    values, targets = top_label(probs, labels)
                else:
                    values = probs.ravel()
                    targets = (np.arange(self.n_classes) == labels[:, None]).ravel().astype(np.float64)
                kept = values > threshold
                raw.append((values[kept], targets[kept]))
            self._cache[key] = [sort_values(values, targets) for values, targets in raw]
        return self._cache[key]

    @staticmethod
    def _part(prepared: SortedValues, n_bins: int, binning: str, norm: str) -> float:
        m = prepared.n
        if m == 0:
            return 0.0
        count, sum_values, sum_targets = sorted_bin_sums(prepared, n_bins, binning)
        difference = sum_values - sum_targets
        if norm == "l1":
            return float(np.abs(difference).sum() / m)
        return float(np.sum(difference**2 / count) / m)

    def gce(self, counts: Sequence[int], binning: str, max_prob: bool, class_conditional: bool, threshold: float,
            norm: str) -> NDArray[np.float64]:
        """``calib_core.gce`` of this model at every bin count in ``counts``."""
        sets = self._sets(max_prob, class_conditional, threshold)
        out = np.empty(len(counts))
        for i, n_bins in enumerate(counts):
            parts = [self._part(prepared, n_bins, binning, norm) for prepared in sets]
            value = float(np.mean(parts)) if class_conditional else parts[0]
            out[i] = math.sqrt(value) if norm == "l2" else value
        return out
