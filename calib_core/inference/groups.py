"""Calibration by subgroup: a metric per group with intervals, group-wise reliability, multicalibration.

A model can be calibrated on average and miscalibrated for every group of
users taken alone (the groups' errors cancel in the overall bins). This
module answers "which group is worst, and by how much" for any metric of
``(probs, labels)``:

- :func:`by_group`: the metric on each group's rows, a seeded percentile
  bootstrap interval per group (:func:`calib_core.bootstrap_ci`), the overall
  value, the worst group and its gap to the overall value with a stratified
  bootstrap interval;
- :func:`group_reliability`: one reliability table per group, stacked;
- :func:`multicalibration`: the largest ``|confidence - accuracy|`` over all
  (group, bin) cells holding at least ``min_count`` rows.

Groups are the distinct values of any label column (strings, integers,
booleans, categories). More than ``max_groups`` (50) groups: the largest
``max_groups - 1`` are kept and the rest merged into one group "other", and
the result's ``notes`` say so.

References
----------
.. [Hebert2018] Hebert-Johnson, U., Kim, M. P., Reingold, O. & Rothblum, G.
   N. "Multicalibration: calibration for the (computationally-identifiable)
   masses", ICML 2018, Definition 2.1 (alpha-calibration on every set of a
   collection, over the level sets of the predictor).
.. [Efron1993] Efron, B. & Tibshirani, R. J. "An Introduction to the
   Bootstrap", Chapman & Hall 1993, chapter 13 (percentile intervals) and
   section 6.6 (stratified resampling).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core.inference.bootstrap import bootstrap_ci, weighted_metric
from calib_core.inference.resample import MAX_WEIGHT_BLOCK, BinnedResampler, binned_spec, resampled_binned_values
from calib_core.inference.intervals import metric_interval
from calib_core.metrics.registry import metric_function
from calib_core.metrics.reliability import reliability_table
from calib_core.validation import (CalibrationInputError, check_binning, check_choice, check_count, check_fraction,
                                   check_n_bins, check_probs_labels, check_sample_weight)

__all__ = ["GROUP_COLUMNS", "MAX_GROUPS", "MIN_GROUP_ROWS", "OTHER_GROUP", "merge_smallest_groups", "GroupCodes", "GroupResult",
           "MulticalibrationResult", "by_group", "choose_worst", "group_codes", "group_reliability", "multicalibration",
           "multicalibration_from_table", "stack_group_reliability"]

#: At most this many groups are reported; beyond it the smallest are merged into "other".
MAX_GROUPS = 50
#: Groups with fewer rows are flagged as too small to say anything.
MIN_GROUP_ROWS = 30
#: The first five columns of :attr:`GroupResult.table` (the contract).
GROUP_COLUMNS = ("group", "value", "ci_low", "ci_high", "n")
#: The name of the group the smallest groups are merged into beyond ``max_groups`` (also the streaming engines').
OTHER_GROUP = "other"


# ----------------------------------------------------------------------------- group codes

@dataclass(frozen=True)
class GroupCodes:
    """Checked group labels as codes 0..G-1 (:func:`group_codes`)."""

    labels: list            # one label per code (the merged group last)
    codes: NDArray[np.intp]  # (N,) code of each row
    rows: list               # row indices of each code, in the input order
    merged: bool             # whether the last label is the merged "other" group
    notes: list



def merge_smallest_groups(labels: Sequence, counts: NDArray[np.integer], max_groups: int,
                          ) -> tuple[NDArray[np.intp], str, str]:
    """The one rule for too many groups: keep the ``max_groups - 1`` largest, merge the rest into "other".

    Ties in size go to the group listed first. The merged group is called
    :data:`OTHER_GROUP`, or ``"other (merged)"`` when a kept group is called
    "other" already.

    Returns
    -------
    kept : ndarray of int
        Indices of the kept groups, in their original order.
    other : str
        The merged group's name.
    note : str
        The sentence that tells the reader what was merged.
    """
    by_size = np.lexsort((np.arange(len(labels)), -np.asarray(counts)))
    kept = np.sort(by_size[: max_groups - 1])
    other = OTHER_GROUP if OTHER_GROUP not in [labels[k] for k in kept] else f"{OTHER_GROUP} (merged)"
    merged_rows = int(np.sum(counts) - np.asarray(counts)[kept].sum())
    note = (f"{len(labels)} groups: the {max_groups - 1} largest are shown and the other "
            f"{len(labels) - kept.size} ({merged_rows} rows) are merged into '{other}'.")
    return kept, other, note

def group_codes(groups: ArrayLike, n_rows: int, max_groups: int) -> GroupCodes:
    """Validate ``groups`` and number its distinct values (merging the smallest beyond ``max_groups``)."""
    if isinstance(groups, pd.DataFrame):
        raise CalibrationInputError(f"`groups` must be 1-D (one label per row), got a table of shape {groups.shape}.")
    if isinstance(groups, (pd.Series, pd.Categorical, pd.Index)):
        series = pd.Series(groups)
    else:
        try:
            array = groups if isinstance(groups, np.ndarray) else np.asarray(groups, dtype=object)
        except ValueError as exc:  # ragged nested lists
            raise CalibrationInputError(f"`groups` must be 1-D (one label per row): {exc}") from exc
        if array.ndim != 1:
            raise CalibrationInputError(f"`groups` must be 1-D (one label per row), got shape {array.shape}.")
        series = pd.Series(array)
    if len(series) != n_rows:
        raise CalibrationInputError(f"`groups` has {len(series)} entries but `probs` has {n_rows} rows.")
    missing = series.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise CalibrationInputError(
            f"`groups` has {int(missing.sum())} missing values (NaN/None), e.g. row {row}; "
            "give those rows a group of their own (e.g. 'unknown') or drop them."
        )
    try:
        try:
            codes, uniques = pd.factorize(series, sort=True)
        except TypeError:  # labels of mixed types cannot be ordered: keep first-appearance order
            codes, uniques = pd.factorize(series, sort=False)
    except TypeError as exc:
        raise CalibrationInputError(f"`groups` must hold hashable labels (strings, numbers): {exc}") from exc
    labels = list(uniques)
    counts = np.bincount(codes, minlength=len(labels))
    notes: list[str] = []
    merged = False
    if len(labels) > max_groups:
        kept, other, note = merge_smallest_groups(labels, counts, max_groups)
        mapping = np.full(len(labels), max_groups - 1, dtype=np.intp)
        mapping[kept] = np.arange(kept.size)
        notes.append(note)
        labels = [labels[k] for k in kept] + [other]
        codes = mapping[codes]
        merged = True
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(labels)))[:-1]
    rows = np.split(order, bounds)
    return GroupCodes(labels, codes.astype(np.intp), rows, merged, notes)


def _resolve_metric(metric: Callable | str, n_bins: int, binning: str) -> tuple[Callable, str]:
    if isinstance(metric, str):
        return metric_function(metric, n_bins=n_bins, binning=binning), metric
    if not callable(metric):
        raise CalibrationInputError(
            f"`metric` must be a function metric(probs, labels) -> float or a registered metric key, got {metric!r}."
        )
    name = getattr(metric, "__name__", None) or getattr(getattr(metric, "func", None), "__name__", None)
    return metric, name or repr(metric)


# ----------------------------------------------------------------------------- by_group

@compact_display
@dataclass(frozen=True)
class GroupResult:
    """A metric per group, with intervals, and the worst group.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per group (sorted labels; the merged group last), columns
        ``group, value, ci_low, ci_high, n`` (:data:`GROUP_COLUMNS`), then
        ``gap`` (``value - overall``), ``too_small`` (bool) and ``note``
        (why a group is flagged or has no value; ``""`` otherwise).
    metric : str
        The metric's key or function name.
    overall : float
        The metric on all rows.
    overall_low, overall_high : float
        Stratified bootstrap interval of the overall value (NaN with ``n_boot=0``).
    worst_group : object
        Label of the worst group (see ``worst`` in :func:`by_group`), chosen
        among the groups that are not too small and not the merged group;
        ``None`` when no group has a value.
    worst_value, worst_gap : float
        Its value, and ``worst_value - overall``.
    gap_low, gap_high : float
        Stratified bootstrap interval of ``worst_gap`` (NaN with ``n_boot=0``).
    notes : tuple of str
        Merged groups, flagged groups, how the worst group was chosen.
    n_boot : int
    alpha : float
    """

    table: pd.DataFrame
    metric: str
    overall: float
    overall_low: float
    overall_high: float
    worst_group: object
    worst_value: float
    worst_gap: float
    gap_low: float
    gap_high: float
    notes: tuple[str, ...]
    n_boot: int
    alpha: float


def _safe_value(metric: Callable, probs: NDArray, labels: NDArray) -> tuple[float, str]:
    try:
        return float(metric(probs, labels)), ""
    except CalibrationInputError as exc:
        return float("nan"), f"not computable: {exc}"


def choose_worst(values: NDArray[np.float64], overall: float, eligible: NDArray[np.bool_], worst: str) -> int | None:
    """Index of the worst group (``worst``: "max", "min" or "farthest" from ``overall``), eligible groups first."""
    finite = np.isfinite(values)
    pool = eligible & finite
    if not pool.any():
        pool = finite
    if not pool.any():
        return None
    score = {"max": values, "min": -values, "farthest": np.abs(values - overall)}[worst]
    candidates = np.flatnonzero(pool)
    return int(candidates[np.argmax(score[candidates])])


def by_group(metric: Callable | str, probs: ArrayLike, labels: ArrayLike, groups: ArrayLike, *,
             n_boot: int = 200, seed: int | None = 0, alpha: float = 0.05, n_bins: int = 15,
             binning: str = "uniform", min_rows: int = MIN_GROUP_ROWS, max_groups: int = MAX_GROUPS,
             worst: str = "max", sample_weight: ArrayLike | None = None) -> GroupResult:
    """A metric on each group's rows, with intervals, and the worst group.

    A callable ``metric`` gets percentile bootstrap intervals; a registry key
    gets the interval its registry entry declares (the same as on the Metrics
    page and in the CLI, e.g. estimate +- z * bootstrap SE for ECE).

    Parameters
    ----------
    metric : callable or str
        ``metric(probs, labels) -> float`` such as :func:`calib_core.ece`, or a
        registry key (``"ece"``, ``"ace"``, ...) resolved with
        :func:`calib_core.metric_function` and ``n_bins`` / ``binning``.
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    groups : array_like of shape (N,)
        The group of each row: any hashable labels, no missing values.
    n_boot : int, default 200
        Bootstrap resamples per group (0: no intervals, NaN bounds).
    seed : int or None, default 0
        Seeds every resampling: group g uses the g-th child of
        ``numpy.random.SeedSequence(seed)``, the overall/gap bootstrap the last.
    alpha : float, default 0.05
        Intervals cover ``1 - alpha``.
    n_bins : int, default 15
        Bin count for a registry key, and the "fewer rows than bins" flag.
    binning : {"uniform", "adaptive"}
        Binning for a registry key.
    min_rows : int, default 30
        Groups with fewer rows (or fewer rows than ``n_bins``) are flagged
        ``too_small`` and not chosen as the worst group.
    max_groups : int, default 50
        More distinct groups: the ``max_groups - 1`` largest are kept and the
        others merged into "other" (said in ``notes``).
    worst : {"max", "min", "farthest"}, default "max"
        Which value is worst: the largest (calibration errors, Brier, NLL),
        the smallest (accuracy), or the farthest from the overall value
        (signed quantities such as Cox's slope).
    sample_weight : array_like of shape (N,), optional
        Row weights: each group's value is the weighted metric of its rows
        (a callable must take ``sample_weight``), its interval a bootstrap
        drawing rows with their weights (a registry key: the declared
        interval, :func:`calib_core.metric_interval`), ``n`` the group's
        summed weight (an integer for whole-number weights: the repeated
        rows' count) and the stratified bootstrap carries the weights. Rows
        of weight 0 are left out first, as if absent.

    Returns
    -------
    GroupResult

    Raises
    ------
    CalibrationInputError
        Invalid ``probs``, ``labels``, options, an unknown metric key, or
        ``groups`` not 1-D, of another length than ``probs`` or with missing
        values.

    Notes
    -----
    For group g with rows ``I_g``, ``value_g = metric(probs[I_g], labels[I_g])``
    (rows in their input order) and its interval is
    ``bootstrap_ci(metric, probs[I_g], labels[I_g], n_boot, alpha, seed=child_g)``:
    the ``alpha/2`` and ``1 - alpha/2`` percentiles of the metric over
    resamples of ``|I_g|`` rows drawn with replacement within the group
    (Efron & Tibshirani 1993, ch. 13). ``gap_g = value_g - overall``.

    The overall value's and the worst group's gap's intervals come from one
    stratified bootstrap (each group resampled within itself, sizes kept,
    the overall metric on the union): ``gap* = value*_worst - overall*``. The
    worst group is picked on the data before resampling, so the gap interval
    does not account for the choice among groups (it is optimistic when many
    groups have similar values).

    References
    ----------
    Efron & Tibshirani (1993), chapter 13 and section 6.6. Subgroup
    calibration as in Hebert-Johnson et al. (2018), Definition 2.1, with the
    metric in place of the per-level-set gap.

    Examples
    --------
    >>> import calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=3000); g = np.where(rng.uniform(size=3000) < 0.5, "a", "b")
    >>> y = (rng.uniform(size=3000) < np.where(g == "a", p, p ** 3)).astype(int)
    >>> r = cc.by_group(cc.ece, cc.as_probs(p), y, g, n_boot=50, seed=0)
    >>> list(r.table.columns[:5]), r.worst_group
    (['group', 'value', 'ci_low', 'ci_high', 'n'], 'b')
    """
    probs, labels = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    worst = check_choice(worst, "worst", ("max", "min", "farthest"))
    n_boot = check_count(n_boot, "n_boot", 0)
    if n_boot == 1:
        raise CalibrationInputError("`n_boot` must be 0 (no intervals) or at least 2, got 1.")
    check_fraction(alpha, "alpha")
    min_rows = check_count(min_rows, "min_rows", 0)
    max_groups = check_count(max_groups, "max_groups", 2)
    function, name = _resolve_metric(metric, n_bins, binning)
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is not None:
        keep = weights > 0
        group_codes(groups, labels.size, max_groups)  # the groups' own checks, on every row
        groups = np.asarray(groups)[keep]
        probs, labels, weights = probs[keep], labels[keep], weights[keep]
        function = _with_weights(function, weights)
    grouped = group_codes(groups, probs.shape[0], max_groups)
    n_groups = len(grouped.labels)
    children = np.random.SeedSequence(seed).spawn(n_groups + 1)

    values = np.full(n_groups, np.nan)
    low = np.full(n_groups, np.nan)
    high = np.full(n_groups, np.nan)
    sizes = np.array([rows.size for rows in grouped.rows], dtype=np.int64)
    if weights is not None:  # the summed weight: the count of the repeated rows
        sizes = np.array([weights[rows].sum() for rows in grouped.rows])
        sizes = sizes.astype(np.int64) if np.all(sizes == np.round(sizes)) else sizes
    notes_per_group = [""] * n_groups
    for g, rows in enumerate(grouped.rows):
        p_g, y_g = probs[rows], labels[rows]
        w_g = None if weights is None else weights[rows]
        values[g], notes_per_group[g] = _safe_value(function.at(rows) if weights is not None else function, p_g, y_g)
        if n_boot and np.isfinite(values[g]):
            try:
                if isinstance(metric, str):
                    # A registry key: the interval its registry entry declares, as on the Metrics page.
                    interval = metric_interval(metric, p_g, y_g, n_bins=n_bins, binning=binning, n_boot=n_boot,
                                               alpha=float(alpha), seed=np.random.default_rng(children[g]),
                                               sample_weight=w_g)
                    low[g], high[g] = interval.low, interval.high
                    if not np.isfinite(interval.low):
                        notes_per_group[g] = f"no interval: {interval.note}"
                else:
                    result = bootstrap_ci(function if weights is None else function.metric, p_g, y_g,
                                          n_boot=n_boot, alpha=float(alpha), seed=np.random.default_rng(children[g]),
                                          sample_weight=w_g)
                    low[g], high[g] = result.low, result.high
            except CalibrationInputError as exc:
                notes_per_group[g] = f"no interval: {exc}"
    overall, overall_note = _safe_value(function.at(slice(None)) if weights is not None else function, probs, labels)
    if overall_note:
        raise CalibrationInputError(f"`metric` cannot be computed on all rows: {overall_note}")

    too_small = (sizes < min_rows) | (sizes < n_bins)
    for g in np.flatnonzero(too_small):
        reason = f"fewer than {min_rows} rows" if sizes[g] < min_rows else f"fewer rows than bins ({n_bins})"
        notes_per_group[g] = "; ".join(filter(None, [f"too small to say much: {reason}", notes_per_group[g]]))
    notes = list(grouped.notes)
    if too_small.any():
        notes.append(f"{int(too_small.sum())} of {n_groups} groups have fewer than {min_rows} rows or fewer "
                     f"rows than bins ({n_bins}): flagged `too_small`, their values are mostly noise.")
    eligible = ~too_small
    if grouped.merged:
        eligible[-1] = False
    worst_index = choose_worst(values, overall, eligible, worst)
    if worst_index is not None and not eligible[worst_index]:
        notes.append("no group is large enough to be compared: the worst group was chosen among all groups.")

    overall_low = overall_high = gap_low = gap_high = float("nan")
    if n_boot and worst_index is not None:
        overall_samples, worst_samples = _stratified_bootstrap(function, probs, labels, grouped.rows,
                                                               worst_index, n_boot, children[-1], weights)
        q = [alpha / 2.0, 1.0 - alpha / 2.0]
        overall_low, overall_high = (float(v) for v in np.quantile(overall_samples, q))
        gap_low, gap_high = (float(v) for v in np.quantile(worst_samples - overall_samples, q))

    table = pd.DataFrame({
        "group": pd.Series(grouped.labels, dtype=object),
        "value": values, "ci_low": low, "ci_high": high, "n": sizes,
        "gap": values - overall, "too_small": too_small, "note": notes_per_group,
    })
    worst_value = float(values[worst_index]) if worst_index is not None else float("nan")
    return GroupResult(
        table=table, metric=name, overall=overall, overall_low=overall_low, overall_high=overall_high,
        worst_group=grouped.labels[worst_index] if worst_index is not None else None,
        worst_value=worst_value, worst_gap=worst_value - overall, gap_low=gap_low, gap_high=gap_high,
        notes=tuple(notes), n_boot=n_boot, alpha=float(alpha),
    )


@dataclass(frozen=True)
class _Weighted:
    """A metric with the (positive) row weights of :func:`by_group`: ``at(rows)(probs[rows], labels[rows])``."""

    metric: Callable
    weights: NDArray[np.float64]

    def at(self, rows) -> Callable[[NDArray, NDArray], float]:
        value = weighted_metric(self.metric)
        return lambda p, y: value(p, y, self.weights[rows])


def _with_weights(metric: Callable, weights: NDArray[np.float64]) -> _Weighted:
    weighted_metric(metric)  # refuses, once and now, a callable without `sample_weight`
    return _Weighted(metric, weights)


def _stratified_bootstrap(metric: Callable, probs: NDArray, labels: NDArray, rows: list, worst: int,
                          n_boot: int, seed: np.random.SeedSequence,
                          weights: NDArray[np.float64] | None = None) -> tuple[NDArray, NDArray]:
    """Metric on the union of within-group resamples, and on the worst group's resample.

    Resample ``b`` draws, for each position of the concatenated groups, a row
    uniformly within that position's own group (so every group keeps its
    size). For a registered binned metric (:func:`binned_spec`) the resamples
    go through the row-weight engine (:class:`BinnedResampler`, one for all
    rows and one for the worst group's rows), in blocks of at most
    :data:`MAX_WEIGHT_BLOCK` indices; any other metric is called on each
    materialised resample. Both paths see the same resamples (the same draws
    of ``seed``) and give the same values up to round-off in the sums.
    """
    rng = np.random.default_rng(seed)
    order = np.concatenate(rows)
    sizes = np.array([r.size for r in rows])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    size_of_row = np.repeat(sizes, sizes)
    start_of_row = np.repeat(starts, sizes)
    worst_slice = slice(int(starts[worst]), int(starts[worst] + sizes[worst]))
    overall = np.empty(n_boot)
    worst_values = np.empty(n_boot)

    def draw() -> NDArray[np.intp]:
        # Position i of the concatenated groups draws uniformly within its own group.
        return start_of_row + np.floor(rng.random(order.size) * size_of_row).astype(np.intp)

    if weights is not None:  # the same draws; each drawn row carries its weight
        for b in range(n_boot):
            picked = order[draw()]
            overall[b] = metric.at(picked)(probs[picked], labels[picked])
            mine = picked[worst_slice]
            worst_values[b] = metric.at(mine)(probs[mine], labels[mine])
        return overall, worst_values
    spec = binned_spec(metric)
    if spec is None:
        for b in range(n_boot):
            picked = order[draw()]
            overall[b] = metric(probs[picked], labels[picked])
            mine = picked[worst_slice]
            worst_values[b] = metric(probs[mine], labels[mine])
        return overall, worst_values
    worst_rows = rows[worst]
    everyone = BinnedResampler(probs, labels)
    in_worst = BinnedResampler(probs[worst_rows], labels[worst_rows])
    block = max(1, MAX_WEIGHT_BLOCK // order.size)
    for start in range(0, n_boot, block):
        draws = np.stack([draw() for _ in range(min(block, n_boot - start))])
        stop = start + draws.shape[0]
        overall[start:stop] = resampled_binned_values(everyone, [spec], order[draws])[0]
        # Positions of the worst group's segment index its rows in order: rows[worst] == order[worst_slice].
        worst_values[start:stop] = resampled_binned_values(in_worst, [spec], draws[:, worst_slice] - starts[worst])[0]
    return overall, worst_values


# ----------------------------------------------------------------------------- reliability per group

def group_reliability(probs: ArrayLike, labels: ArrayLike, groups: ArrayLike, *, n_bins: int = 15,
                      binning: str = "uniform", target: str | int = "top_label", alpha: float = 0.05,
                      max_groups: int = MAX_GROUPS, sample_weight: ArrayLike | None = None) -> pd.DataFrame:
    """Reliability tables of every group, stacked.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    groups : array_like of shape (N,)
    n_bins, binning, target, alpha
        As :func:`calib_core.reliability_table`. Uniform bins are the same
        for every group; adaptive bins are cut within each group.
    max_groups : int, default 50
        As :func:`by_group`.
    sample_weight : array_like of shape (N,), optional
        Row weights, as :func:`calib_core.reliability_table` (``count`` the
        summed weight of a cell, weighted means, ``weight`` = count / the
        group's summed weight; integer weights give the repeated rows'
        table). Rows of weight 0 are left out first, as in :func:`by_group`.

    Returns
    -------
    pandas.DataFrame
        One row per non-empty (group, bin), columns ``group, bin, count,
        confidence, accuracy, gap`` then ``lower, upper, weight, ci_low,
        ci_high`` (``weight`` = count / group size; ``accuracy`` is the
        observed frequency of the target; ``gap = confidence - accuracy``,
        positive when over-confident; Wilson intervals of ``accuracy``).

    Raises
    ------
    CalibrationInputError
        As :func:`by_group`.

    Notes
    -----
    For group g and bin b, ``confidence = mean(v_i)`` and
    ``accuracy = mean(t_i)`` over the rows of g whose value ``v_i`` (top-label
    confidence, or ``probs[:, k]``) falls in b, ``t_i`` the correctness (or
    ``labels == k``); ``sum_b weight * |gap|`` is group g's ECE (Nixon et al.
    2019, eq. 1).

    Examples
    --------
    >>> import calib_core as cc
    >>> t = cc.group_reliability([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [0, 1, 1], ["a", "a", "b"], n_bins=2)
    >>> t[["group", "bin", "count", "confidence", "accuracy"]].values.tolist()
    [['a', 1, 2, 0.75, 1.0], ['b', 1, 1, 0.6, 0.0]]
    """
    probs, labels = check_probs_labels(probs, labels)
    max_groups = check_count(max_groups, "max_groups", 2)
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is not None:  # as by_group: the groups' own checks on every row, then rows of weight 0 are absent
        group_codes(groups, labels.size, max_groups)
        keep = weights > 0
        groups, probs, labels, weights = np.asarray(groups)[keep], probs[keep], labels[keep], weights[keep]
    grouped = group_codes(groups, probs.shape[0], max_groups)
    frames = [reliability_table(probs[rows], labels[rows], n_bins=n_bins, binning=binning, target=target, alpha=alpha,
                                sample_weight=None if weights is None else weights[rows])
              for rows in grouped.rows]
    return stack_group_reliability(grouped.labels, frames)


def stack_group_reliability(group_labels: Sequence[object], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One table of the groups' reliability tables, in the columns of :func:`group_reliability`.

    Shared with the streaming engines (:mod:`calib_core.engines.group_evaluation`), which
    build each group's table from its accumulated bin sums.
    """
    parts = []
    for label, frame in zip(group_labels, frames):
        frame = frame.copy()
        frame.insert(0, "group", pd.Series([label] * len(frame), dtype=object))
        parts.append(frame)
    table = pd.concat(parts, ignore_index=True)
    table = table.rename(columns={"mean_confidence": "confidence", "observed_frequency": "accuracy"})
    first = ["group", "bin", "count", "confidence", "accuracy", "gap"]
    return table[first + [c for c in table.columns if c not in first]]


@compact_display
@dataclass(frozen=True)
class MulticalibrationResult:
    """The largest calibration gap over (group, bin) cells with enough rows.

    Attributes
    ----------
    max_gap : float
        ``max |confidence - accuracy|`` over the cells with ``count >=
        min_count`` (NaN when there is none, see ``reason``).
    gap : float
        That cell's signed gap (positive: over-confident).
    group : object
        The cell's group (``None`` when there is no cell).
    bin : int
        The cell's bin index (-1 when there is no cell); ``lower``, ``upper``
        its bounds, ``count``, ``confidence``, ``accuracy`` its statistics
        (``count`` the summed weight with ``sample_weight``: a float unless whole).
    n_cells, n_cells_used : int
        Non-empty cells, and those with at least ``min_count`` rows.
    min_count : int
    reason : str
        ``""``, or why there is no value.
    table : pandas.DataFrame
        :func:`group_reliability` with a boolean column ``used``.
    """

    max_gap: float
    gap: float
    group: object
    bin: int
    lower: float
    upper: float
    count: int | float
    confidence: float
    accuracy: float
    n_cells: int
    n_cells_used: int
    min_count: int
    reason: str
    table: pd.DataFrame


def multicalibration(probs: ArrayLike, labels: ArrayLike, groups: ArrayLike, *, n_bins: int = 15,
                     binning: str = "uniform", target: str | int = "top_label", min_count: int = MIN_GROUP_ROWS,
                     max_groups: int = MAX_GROUPS, sample_weight: ArrayLike | None = None) -> MulticalibrationResult:
    """Multicalibration-style summary: the worst (group, bin) calibration gap.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    groups : array_like of shape (N,)
    n_bins, binning, target
        As :func:`group_reliability` (uniform bins: the same level sets in
        every group, as in the definition).
    min_count : int, default 30
        Cells with fewer rows are ignored (their gaps are mostly noise).
        With ``sample_weight``, a cell's count is its summed weight.
    max_groups : int, default 50
    sample_weight : array_like of shape (N,), optional
        Row weights, as :func:`group_reliability` (integer weights: the
        repeated rows' summary).

    Returns
    -------
    MulticalibrationResult

    Raises
    ------
    CalibrationInputError
        As :func:`group_reliability`, or a negative ``min_count``.

    Notes
    -----
    ``max over groups g and bins b with n_gb >= min_count of
    |mean_{i in g, v_i in b} v_i - mean_{i in g, v_i in b} t_i|``: the
    empirical version of alpha-multicalibration over the collection of groups
    with the bins as level sets (Hebert-Johnson et al. 2018, Definition 2.1,
    without the ``gamma``-fraction exemption, replaced by ``min_count``).

    Examples
    --------
    >>> import calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=4000); g = np.where(rng.uniform(size=4000) < 0.5, "a", "b")
    >>> y = (rng.uniform(size=4000) < np.where(g == "a", p, p ** 3)).astype(int)
    >>> r = cc.multicalibration(cc.as_probs(p), y, g, target=1, n_bins=10)
    >>> r.group, bool(r.max_gap > 0.2)
    ('b', True)
    """
    min_count = check_count(min_count, "min_count", 0)
    table = group_reliability(probs, labels, groups, n_bins=n_bins, binning=binning, target=target,
                              max_groups=max_groups, sample_weight=sample_weight)
    return multicalibration_from_table(table, min_count)


def multicalibration_from_table(table: pd.DataFrame, min_count: int) -> MulticalibrationResult:
    """The largest ``|gap|`` over the (group, bin) cells of a group reliability table with ``min_count`` rows.

    Shared by :func:`multicalibration` (rows in memory) and the streamed
    summaries (:meth:`calib_core.engines.group_evaluation.GroupEvaluation.multicalibration`),
    whose tables have the columns of :func:`group_reliability`.
    """
    used = table["count"].to_numpy() >= min_count
    table = table.assign(used=used)
    if not used.any():
        nan = float("nan")
        return MulticalibrationResult(nan, nan, None, -1, nan, nan, 0, nan, nan, len(table), 0, min_count,
                                      f"no (group, bin) cell has at least {min_count} rows.", table)
    candidates = np.flatnonzero(used)
    best = int(candidates[np.argmax(np.abs(table["gap"].to_numpy()[candidates]))])
    row = table.iloc[best]
    count = float(row["count"])  # a summed weight with sample_weight: whole only for whole-number weights
    return MulticalibrationResult(
        max_gap=float(abs(row["gap"])), gap=float(row["gap"]), group=row["group"], bin=int(row["bin"]),
        lower=float(row["lower"]), upper=float(row["upper"]),
        count=int(count) if count.is_integer() else count,
        confidence=float(row["confidence"]), accuracy=float(row["accuracy"]), n_cells=len(table),
        n_cells_used=int(used.sum()), min_count=min_count, reason="", table=table,
    )
