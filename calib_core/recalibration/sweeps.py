"""Two sweeps of the recalibration comparison: over the temperature, and over the 32 GCE variants.

* :func:`temperature_surface`: NLL, ECE, ACE, SCE and CE_KL of
  ``softmax(z / T)`` against the temperature T (Nixon et al. 2019, Figure 1
  right: the T that minimises a calibration error is usually not the one that
  minimises the NLL, which temperature scaling fits).
* :func:`gce_ranking`: the rank of every method under each of the 32
  variants of the general calibration error :func:`calib_core.gce` (Nixon et
  al. 2019, Table 5 and appendix C: binning, top label or all probabilities,
  per class or pooled, threshold, norm), with the Spearman rank correlation
  between variants; the ranking changes with the variant.

Pure functions of arrays; :mod:`calib_core.recalibration.compare` holds the
fits and the evaluation rows they run on.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calib_core.metrics.sensitivity import GCE_VARIANTS, competition_ranks, gce_variants, spearman_rows
from calib_core.metrics import ace, ece, kde_ce, nll, sce
from calib_core._accel import map_blocks
from calib_core.validation import CalibrationInputError, check_sample_weight, integer_weights, softmax

__all__ = ["NAMED_VARIANTS", "PAPER_NAMES", "GceRanking", "TemperatureSurface", "gce_ranking",
           "kde_rows_for", "rows_for", "subset_rows", "surface_range", "surface_rows", "temperature_surface", "variant_settings",
           "variant_table"]

#: Rows used by the temperature surface and the GCE ranking (a seeded random subset above).
SURFACE_MAX_ROWS = 10_000
GCE_MAX_ROWS = 10_000
#: ... and at most this many probabilities (rows x classes; :func:`rows_for`): 10,000 rows up to
#: K = 100, 1,000 rows at K = 1,000, where every class-wise variant sorts K columns per evaluation.
MAX_ENTRIES = 1_000_000
#: The kernel estimate costs N^2 K; its subset keeps N^2 K under this (and N <= KDE_MAX_ROWS).
KDE_BUDGET = 1e8
KDE_MAX_ROWS = 2_000
#: Temperatures of the surface: log-spaced over [T_MIN, T_MAX].
T_MIN, T_MAX, T_POINTS = 0.05, 20.0, 41
#: The GCE variants that equal a named calib_core metric exactly, for any data and bin count
#: (tests/app/test_page_recalibration.py checks each): variant -> (label, function, keyword arguments).
#: Only these carry a metric's name; every other variant is labelled by its settings.
#: Nixon et al. (2019, section 5.4) also call variant 0 class-conditional ECE, 8 SCE and 24 ACE,
#: but :func:`calib_core.gce` drops values ``<= threshold`` (threshold 0: exact zeros) and weights
#: each range by its count, while :func:`calib_core.sce` keeps every value and :func:`calib_core.ace`
#: takes the unweighted mean over ranges: variant 8 differs from the SCE whenever a model outputs
#: exact zeros (0.042 against 0.030 on the default demo), variant 24 from the ACE also when the
#: ranges differ in size (see :data:`PAPER_NAMES`).
NAMED_VARIANTS: dict[int, tuple[str, Callable, dict]] = {
    4: ("ECE", ece, {}),
    5: ("RMSCE", ece, {"norm": "l2"}),
    20: ("ECE (adaptive)", ece, {"binning": "adaptive"}),
    21: ("RMSCE (adaptive)", ece, {"binning": "adaptive", "norm": "l2"}),
}
#: What Nixon et al. call the variants that are *not* those metrics here, and why (see above).
PAPER_NAMES = {0: "class-conditional ECE", 8: "SCE", 24: "ACE"}


def rows_for(n_classes: int, max_rows: int) -> int:
    """Rows of the surface or the ranking: ``max_rows``, fewer when ``rows x n_classes`` exceeds :data:`MAX_ENTRIES`."""
    return int(max(2, min(max_rows, MAX_ENTRIES // max(int(n_classes), 1))))


def surface_rows(n_rows: int, n_classes: int, seed: int) -> np.ndarray:
    """The rows of :func:`temperature_surface` among ``n_rows``: all, or its seeded subset.

    A caller holding probabilities can take their logarithms on these rows
    only; the surface of the subset is the surface of all rows.
    """
    return subset_rows(n_rows, rows_for(n_classes, SURFACE_MAX_ROWS), seed)


def subset_rows(n_rows: int, limit: int, seed: int) -> np.ndarray:
    """All ``n_rows`` row indices, or a sorted seeded random ``limit`` of them (without replacement)."""
    if n_rows <= limit:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=limit, replace=False))


# ----------------------------------------------------------------------------- temperature surface

@dataclass(frozen=True)
class TemperatureSurface:
    """Metrics of ``softmax(z / T)`` against T (Nixon et al. 2019, Figure 1 right).

    Attributes
    ----------
    table : pandas.DataFrame
        ``temperature``, ``metric`` (display name), ``value``.
    minimisers : pandas.DataFrame
        ``metric``, ``temperature``, ``value``: each curve's lowest point on the grid.
    n_rows : int
        Rows of the curves.
    kde_rows : int
        Rows of the kernel estimate (a subset; 0 if it was not computed).
    failed : tuple of str
        Metrics left out because they were not finite at any temperature.
    at_edge : tuple of str
        Metrics whose lowest point is an end of the grid (the minimum may lie beyond it).
    not_weighted : str
        Why the kernel curve is missing with row weights that are not whole numbers (``""`` otherwise).
    """

    table: pd.DataFrame
    minimisers: pd.DataFrame
    n_rows: int
    kde_rows: int
    failed: tuple[str, ...]
    at_edge: tuple[str, ...] = ()
    not_weighted: str = ""


def _nice(value: float, up: bool) -> float:
    """The next 1-2-5 value at or above (``up``) or below ``value``."""
    exponent = math.floor(math.log10(value))
    steps = [m * 10.0**e for e in (exponent - 1, exponent, exponent + 1) for m in (1, 2, 5)]
    if up:
        return min(s for s in steps if s >= value * (1 - 1e-12))
    return max(s for s in steps if s <= value * (1 + 1e-12))


def surface_range(temperatures: Sequence[float] = ()) -> tuple[float, float]:
    """``[T_MIN, T_MAX]``, widened to twice any fitted temperature outside it (1-2-5 values)."""
    values = [float(t) for t in temperatures if math.isfinite(t) and t > 0]
    low = min([T_MIN, *[t / 2 for t in values]])
    high = max([T_MAX, *[t * 2 for t in values]])
    return _nice(low, up=False), _nice(high, up=True)


def kde_rows_for(n_rows: int, n_classes: int) -> int:
    """Rows of the kernel estimate: all, or as many as keep N^2 K under :data:`KDE_BUDGET`."""
    return int(min(n_rows, KDE_MAX_ROWS, math.isqrt(int(KDE_BUDGET / max(n_classes, 1)))))


def temperature_surface(scores: np.ndarray, labels: np.ndarray, *, t_range: tuple[float, float] = (T_MIN, T_MAX),
                        with_kde: bool = True, seed: int = 0,
                        sample_weight: np.ndarray | None = None) -> TemperatureSurface:
    """NLL, ECE, ACE, SCE and (``with_kde``) CE_KL of ``softmax(scores / T)`` against T.

    Parameters
    ----------
    scores : ndarray of shape (M, K)
        The evaluation rows' logits or log-probabilities
        (:func:`calib_core.recalibration.compare.log_scores`).
    labels : ndarray of shape (M,)
    t_range : (float, float)
        T runs over :data:`T_POINTS` log-spaced values in it (see :func:`surface_range`).
    with_kde : bool
        Add the kernel estimate (:func:`calib_core.kde_ce`, KL, bandwidth
        0.01) on :func:`kde_rows_for` of the rows (seed ``seed + 1``).
    seed : int
        At most :data:`SURFACE_MAX_ROWS` rows are used, and at most
        :data:`MAX_ENTRIES` probabilities (:func:`rows_for`; a seeded subset).
    sample_weight : ndarray of shape (M,), optional
        Row weights (``docs/weights.md``): every curve is the weighted metric
        (``sample_weight=`` of :func:`calib_core.nll`, ``ece``, ``ace``,
        ``sce``, ``kde_ce``) on the same rows; whole-number weights give the
        curves of the repeated rows. ``kde_ce`` takes whole numbers only: with
        other weights its curve is not computed and ``not_weighted`` says why.
    """
    rows = surface_rows(labels.size, np.shape(scores)[1], seed)
    weights = check_sample_weight(sample_weight, labels.size)
    scores = np.asarray(scores)[rows]
    labels = labels[rows]
    weights = None if weights is None else weights[rows]
    not_weighted = ""
    if with_kde and weights is not None and not integer_weights(weights):
        with_kde, not_weighted = False, ("CE_KL (kernel) is left out: calib_core.kde_ce takes whole-number row "
                                         "weights only (it repeats rows), and these weights are not")
    n_kde = kde_rows_for(rows.size, scores.shape[1]) if with_kde else 0
    kde_pick = subset_rows(rows.size, n_kde, seed + 1) if n_kde >= 2 else None
    functions = {"NLL": nll, "ECE": ece, "ACE": ace, "SCE": sce}
    temperatures = np.geomspace(float(t_range[0]), float(t_range[1]), T_POINTS)

    def at_temperatures(first: int, last: int) -> list[tuple[float, str, float]]:
        records = []
        for temperature in temperatures[first:last]:
            probs = softmax(scores / temperature)
            for name, function in functions.items():
                records.append((temperature, name, float(function(probs, labels, sample_weight=weights))))
            if kde_pick is not None:
                try:
                    value = float(kde_ce(probs[kde_pick], labels[kde_pick], "kl",
                                         sample_weight=None if weights is None else weights[kde_pick]))
                except CalibrationInputError:
                    value = np.nan
                records.append((temperature, "CE_KL (kernel)", value))
        return records

    # The temperatures are independent: two threads take one each (numpy releases the GIL), in order.
    records = [r for part in map_blocks(at_temperatures, ((t, t + 1) for t in range(T_POINTS))) for r in part]
    table = pd.DataFrame(records, columns=["temperature", "metric", "value"])
    table.loc[~np.isfinite(table["value"]), "value"] = np.nan
    minimisers, failed, at_edge = [], [], []
    for name, part in table.groupby("metric", sort=False):
        if part["value"].notna().any():
            best = part.loc[part["value"].idxmin()]
            minimisers.append({"metric": name, "temperature": float(best["temperature"]),
                               "value": float(best["value"])})
            if best["temperature"] in (temperatures[0], temperatures[-1]):
                at_edge.append(name)
        else:
            failed.append(name)
    table = table[~table["metric"].isin(failed)].reset_index(drop=True)
    return TemperatureSurface(table, pd.DataFrame(minimisers, columns=["metric", "temperature", "value"]),
                              int(rows.size), int(n_kde if kde_pick is not None else 0), tuple(failed),
                              tuple(at_edge), not_weighted)


# ----------------------------------------------------------------------------- ranking under the 32 GCE variants

@dataclass(frozen=True)
class GceRanking:
    """Rank of every method under each of the 32 GCE variants (Nixon et al. 2019, Table 5).

    Attributes
    ----------
    values : pandas.DataFrame
        Index: methods; columns: variant 0-31; the GCE (15 bins).
    ranks : pandas.DataFrame
        Same shape; 1 = lowest error under that variant (ties share the lower rank).
    variants : pandas.DataFrame
        :func:`variant_table`.
    correlation : ndarray of shape (32, 32)
        Spearman rank correlation between the methods' values under two variants.
    mean_spearman : float
        Mean over all pairs of variants with a defined correlation.
    n_rows : int
        Evaluation rows used.
    """

    values: pd.DataFrame
    ranks: pd.DataFrame
    variants: pd.DataFrame
    correlation: np.ndarray
    mean_spearman: float
    n_rows: int


def variant_settings(binning: str, max_prob: bool, class_conditional: bool, threshold: float, norm: str) -> str:
    """A GCE variant's settings in words, e.g. ``"uniform bins · all probabilities · per class · p > 0 · L1"``.

    ``p > t`` says which values are kept (:func:`calib_core.gce` drops ``v <= threshold``,
    so threshold 0 drops exact zeros).
    """
    return " · ".join([f"{binning} bins", "top label" if max_prob else "all probabilities",
                       "per class" if class_conditional else "pooled", f"p > {threshold:g}", norm.upper()])


def variant_table() -> pd.DataFrame:
    """The 32 variants in Nixon et al.'s order (appendix C).

    Columns ``variant``, ``binning``, ``max_prob``, ``class_conditional``,
    ``threshold``, ``norm``, ``label`` (:func:`variant_settings`) and ``name``:
    a metric's name only for the variants of :data:`NAMED_VARIANTS`, which equal
    that metric exactly, else ``""``.
    """
    rows = []
    for index, (binning, max_prob, class_conditional, threshold, norm) in enumerate(GCE_VARIANTS):
        rows.append({"variant": index, "binning": binning, "max_prob": max_prob,
                     "class_conditional": class_conditional, "threshold": threshold, "norm": norm,
                     "label": variant_settings(binning, max_prob, class_conditional, threshold, norm),
                     "name": NAMED_VARIANTS[index][0] if index in NAMED_VARIANTS else ""})
    return pd.DataFrame(rows)


def gce_ranking(probs: Mapping[str, np.ndarray], labels: np.ndarray, *, n_bins: int = 15,
                seed: int = 0, sample_weight: np.ndarray | None = None) -> GceRanking:
    """Every method's :func:`calib_core.gce` under the 32 variants, ranks and rank correlations.

    Parameters
    ----------
    probs : mapping of str to ndarray of shape (M, K)
        Method name (and the uncalibrated predictions under their own name)
        -> its evaluation-row probabilities.
    labels : ndarray of shape (M,)
    n_bins : int
        Bins of every variant.
    seed : int
        At most :data:`GCE_MAX_ROWS` rows are used, and at most :data:`MAX_ENTRIES`
        probabilities (:func:`rows_for`; the same seeded subset for every method).
    sample_weight : ndarray of shape (M,), optional
        Row weights (``docs/weights.md``): every value is the weighted GCE of
        its variant (:func:`calib_core.metrics.sensitivity.gce_variants`), on
        the same rows.

    Returns
    -------
    GceRanking
        The correlation needs three methods at least (else all NaN); a
        variant where every method ties has no defined correlation.
    """
    names = list(probs)
    n_rows = labels.size
    n_classes = np.shape(probs[names[0]])[1] if names else 2
    pick = subset_rows(n_rows, rows_for(n_classes, GCE_MAX_ROWS), seed)
    picked_labels = labels[pick]
    weights = check_sample_weight(sample_weight, n_rows)
    picked_weights = None if weights is None else weights[pick]
    values = np.empty((len(names), len(GCE_VARIANTS)))
    # The methods are independent: two threads take one each (numpy releases the GIL), in order.
    rows = map_blocks(lambda i, _: gce_variants(np.asarray(probs[names[i]])[pick], picked_labels, n_bins,
                                                sample_weight=picked_weights),
                      ((i, i + 1) for i in range(len(names))))
    for i, row in enumerate(rows):
        values[i] = row
    ranks = competition_ranks(values, axis=0)
    correlation = np.full((values.shape[1], values.shape[1]), np.nan)
    if len(names) >= 3:
        correlation = spearman_rows(values.T)  # NaN for a variant where every method ties
    upper = correlation[np.triu_indices(values.shape[1], k=1)]
    mean = float(np.nanmean(upper)) if np.isfinite(upper).any() else float("nan")
    columns = list(range(len(GCE_VARIANTS)))
    return GceRanking(pd.DataFrame(values, index=names, columns=columns),
                      pd.DataFrame(ranks.astype(int), index=names, columns=columns),
                      variant_table(), correlation, mean, int(pick.size))
