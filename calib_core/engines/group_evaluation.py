"""Per-group results of an out-of-core evaluation: :class:`GroupEvaluation`.

``evaluate(..., group_column=COL)`` keeps one mergeable
:class:`~calib_core.engines.stats.CalibrationStats` per group value
(:class:`~calib_core.engines.grouped.GroupedStats`) in the same pass as the
overall sums. :func:`_group_evaluation` folds them (or, in the memory engine,
the rows) into a :class:`GroupEvaluation`: per-group metrics, tables, the
worst group and multicalibration as :func:`calib_core.by_group` and
:func:`calib_core.multicalibration` give them on the rows, and the reasons
for what an engine that keeps sums (not rows) cannot give per group. A
summary (:func:`calib_core.engines.summary.load_summary`) reads it back.

References
----------
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, eq. 1-2 (binned ECE per group of rows).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.engines.grouped import GroupedStats
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.streaming import StreamResult, _stats_dict_without_sketches
from calib_core.inference.groups import (choose_worst, group_codes, multicalibration_from_table,
                                         stack_group_reliability)
from calib_core.metrics.registry import metric_name
from calib_core.metrics.reports import compute_metrics
from calib_core.metrics.reliability import reliability_frame
from calib_core.validation import CalibrationInputError, check_choice

__all__ = [
    "GROUP_STREAM_EXACT",
    "GroupEvaluation",
]

# ---------------------------------------------------------------------------
# Per-group results
# ---------------------------------------------------------------------------

#: Per-group metrics the streaming engines compute exactly from per-group uniform-bin sums
#: (the binned ones only with ``binning="uniform"``).
GROUP_STREAM_EXACT = ("accuracy", "sce", "brier", "nll")
_GROUP_UNIFORM_BINNED = ("ece", "rmsce", "mce", "classwise_ece")
_NO_ROWS = ("the stream and Dask engines keep per-bin sums per group, not rows; "
            "use engine='memory' (--engine memory) for it")
_GROUP_REASONS = {
    "ace": "per-group ACE needs exact equal-mass bin edges within every group (order statistics of each group's "
           f"class values, a sketch and an extra pass per group); {_NO_ROWS}",
    "tace": "per-group TACE needs exact equal-mass bin edges within every group, as ACE; " + _NO_ROWS,
    "ks": "per-group KS error needs every group's rows sorted by confidence; " + _NO_ROWS,
    "adaptive": "adaptive bins per group need exact equal-mass edges within every group; " + _NO_ROWS,
}


def _nan_to_none(values: Sequence[float]) -> list[float | None]:
    return [None if v is None or not np.isfinite(v) else float(v) for v in values]


@dataclass(frozen=True)
class GroupEvaluation:
    """Metrics per group of a column, from :func:`evaluate` with ``group_column=`` (or a summary).

    Attributes
    ----------
    column : str
        The group column.
    labels : tuple of str
        The groups as :func:`calib_core.by_group` orders them: sorted, at
        most ``max_groups``, the merged group "other" last.
    stats : tuple of CalibrationStats
        Each group's uniform-bin sums (``n_bins`` bins), aligned with ``labels``.
    values : dict of str to tuple of float
        Metric key -> value per group (NaN: not computable on that group).
    overall : dict of str to float
        The metrics on all rows.
    unavailable : dict of str to str
        Metric key -> why this engine does not give it per group.
    n_distinct : int
        Distinct group values before merging.
    merged : bool
    notes : tuple of str
    n_bins : int
    binning : str
    engine : str

    Notes
    -----
    Group g's value of a binned metric is the metric of the sums over the
    rows of g only (Nixon et al. 2019, eq. 1-2: ``ECE_g = sum_b n_gb / n_g
    |acc_gb - conf_gb|``), so it equals ``by_group(metric, ...)`` on the rows.
    No bootstrap intervals: they need the rows (``ci_low``/``ci_high`` are NaN).
    """

    column: str
    labels: tuple[str, ...]
    stats: tuple[CalibrationStats, ...]
    values: dict[str, tuple[float, ...]]
    overall: dict[str, float]
    unavailable: dict[str, str]
    n_distinct: int
    merged: bool
    notes: tuple[str, ...]
    n_bins: int
    binning: str
    engine: str

    @property
    def n(self) -> NDArray[np.int64] | NDArray[np.float64]:
        """Rows per group, aligned with :attr:`labels`; weighted: each group's summed weight (integers when
        every one is whole), as :func:`calib_core.by_group` reports ``n``."""
        if self.stats and self.stats[0].weighted:
            sizes = np.array([s.sum_weight for s in self.stats], dtype=np.float64)
            return sizes.astype(np.int64) if np.all(sizes == np.round(sizes)) else sizes
        return np.array([s.n_rows for s in self.stats], dtype=np.int64)

    def _values(self, metric: str) -> NDArray[np.float64]:
        if metric in self.unavailable:
            raise CalibrationInputError(f"{metric!r} per group is not available: {self.unavailable[metric]}.")
        if metric not in self.values:
            raise CalibrationInputError(
                f"no per-group values of {metric!r}; available: {', '.join(self.values) or 'none'}.")
        return np.asarray(self.values[metric], dtype=np.float64)

    def table(self, metric: str = "ece", *, min_rows: int = 30) -> pd.DataFrame:
        """The table of :func:`calib_core.by_group` (``group, value, ci_low, ci_high, n, gap, too_small,
        note``) with NaN intervals."""
        values = self._values(metric)
        sizes = self.n
        too_small = (sizes < min_rows) | (sizes < self.n_bins)
        notes = []
        for g in range(len(self.labels)):
            parts = []
            if too_small[g]:
                reason = f"fewer than {min_rows} rows" if sizes[g] < min_rows else f"fewer rows than bins ({self.n_bins})"
                parts.append(f"too small to say much: {reason}")
            if not np.isfinite(values[g]):
                parts.append("not computable on this group")
            notes.append("; ".join(parts))
        nan = np.full(len(self.labels), np.nan)
        return pd.DataFrame({"group": pd.Series(list(self.labels), dtype=object), "value": values, "ci_low": nan,
                             "ci_high": nan.copy(), "n": sizes, "gap": values - self.overall[metric],
                             "too_small": too_small, "note": notes})

    def worst(self, metric: str = "ece", *, worst: str = "max", min_rows: int = 30) -> tuple[str | None, float, float]:
        """``(group, value, gap to overall)`` of the worst group, chosen as :func:`calib_core.by_group` does."""
        table = self.table(metric, min_rows=min_rows)
        eligible = ~table["too_small"].to_numpy()
        if self.merged:
            eligible[-1] = False
        values = table["value"].to_numpy()
        index = choose_worst(values, self.overall[metric], eligible, check_choice(worst, "worst", ("max", "min", "farthest")))
        if index is None:
            return None, float("nan"), float("nan")
        return self.labels[index], float(values[index]), float(values[index] - self.overall[metric])

    def reliability_table(self, target: str | int = "top_label", *, alpha: float = 0.05) -> pd.DataFrame:
        """:func:`calib_core.group_reliability` with uniform bins, from the sums."""
        frames = [reliability_frame(stats.bin_stats(target), alpha=alpha) for stats in self.stats]
        return stack_group_reliability(self.labels, frames)

    def multicalibration(self, target: str | int = "top_label", *, min_count: int = 30) -> Any:
        """:func:`calib_core.multicalibration` with uniform bins, from the sums (a ``MulticalibrationResult``)."""
        return multicalibration_from_table(self.reliability_table(target), min_count)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (per-group sums, no rows); :func:`load_summary` reads it back."""
        return {"column": self.column, "labels": list(self.labels), "n": self.n.tolist(),
                "stats": [_stats_dict_without_sketches(s) for s in self.stats],
                "values": {k: _nan_to_none(v) for k, v in self.values.items()},
                "overall": {k: (None if not np.isfinite(v) else float(v)) for k, v in self.overall.items()},
                "unavailable": dict(self.unavailable), "n_distinct": self.n_distinct, "merged": self.merged,
                "notes": list(self.notes), "n_bins": self.n_bins, "binning": self.binning, "engine": self.engine}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupEvaluation":
        """Inverse of :meth:`to_dict`."""
        labels = tuple(str(x) for x in data["labels"])
        stats = tuple(CalibrationStats.from_dict(s) for s in data["stats"])
        if len(stats) != len(labels):
            raise CalibrationInputError("damaged calib_core summary: group labels and statistics differ in length.")
        values = {str(k): tuple(np.nan if x is None else float(x) for x in v) for k, v in data["values"].items()}
        return cls(column=str(data["column"]), labels=labels, stats=stats, values=values,
                   overall={str(k): (np.nan if v is None else float(v)) for k, v in data["overall"].items()},
                   unavailable={str(k): str(v) for k, v in data["unavailable"].items()},
                   n_distinct=int(data["n_distinct"]), merged=bool(data["merged"]), notes=tuple(data["notes"]),
                   n_bins=int(data["n_bins"]), binning=str(data["binning"]), engine=str(data["engine"]))

    def report_section(self, metrics: Sequence[str] = ("ece", "ace"), *, min_count: int = 30) -> dict[str, Any]:
        """The ``groups`` section of ``calib-core report`` (as ``--engine memory`` writes it, without intervals):
        a metric this engine cannot give per group is under ``unavailable`` with the reason."""
        section: dict[str, Any] = {}
        unavailable = {}
        for key in metrics:
            if key in self.unavailable or key not in self.values:
                unavailable[key] = self.unavailable.get(key, "not computed")
                continue
            table = self.table(key)
            label, value, gap = self.worst(key)
            section[key] = {
                "name": metric_name(key, n_bins=self.n_bins, binning=self.binning),
                "overall": _nan_to_none([self.overall[key]])[0], "overall_ci_low": None, "overall_ci_high": None,
                "worst_group": label, "worst_value": _nan_to_none([value])[0], "worst_gap": _nan_to_none([gap])[0],
                "gap_ci_low": None, "gap_ci_high": None,
                "table": [{"group": str(row.group), "value": _nan_to_none([row.value])[0], "ci_low": None,
                           "ci_high": None, "n": int(row.n) if float(row.n).is_integer() else float(row.n), "gap": _nan_to_none([row.gap])[0],
                           "too_small": bool(row.too_small), "note": row.note}
                          for row in table.itertuples(index=False)],
            }
        if self.binning == "uniform":
            multi = self.multicalibration(min_count=min_count)
            multicalibration: dict[str, Any] = {
                "max_gap": _nan_to_none([multi.max_gap])[0], "gap": _nan_to_none([multi.gap])[0],
                "group": None if multi.group is None else str(multi.group), "bin": int(multi.bin),
                "lower": _nan_to_none([multi.lower])[0], "upper": _nan_to_none([multi.upper])[0],
                "count": int(multi.count), "confidence": _nan_to_none([multi.confidence])[0],
                "accuracy": _nan_to_none([multi.accuracy])[0], "n_cells": int(multi.n_cells),
                "n_cells_used": int(multi.n_cells_used), "min_count": int(multi.min_count), "reason": multi.reason}
        else:
            multicalibration = {"max_gap": None, "reason": _GROUP_REASONS["adaptive"]}
        notes = list(self.notes) + ["no bootstrap intervals: they resample rows, which the "
                                    f"{self.engine} engine does not keep; use --engine memory for them"]
        return {"column": self.column, "n_groups": len(self.labels), "n_boot": 0, "seed": None, "alpha": None,
                "engine": self.engine, "metrics": section, "unavailable": unavailable, "notes": notes,
                "multicalibration": multicalibration}


def _group_evaluation(column: str, result: StreamResult, wanted: list[str], engine: str,
                      grouped: GroupedStats | None, group_rows: dict[str, Any], max_groups: int,
                      max_distinct: int) -> GroupEvaluation:
    """Fold the per-group sums (or, in memory, the rows) into a :class:`GroupEvaluation`."""
    n_bins, binning = result.n_bins, result.binning
    if grouped is None:  # the memory engine: the rows are here

        probs, labels, groups = group_rows["probs"], group_rows["labels"], group_rows["groups"]
        weights = group_rows.get("weights")
        if weights is not None:  # as calib_core.by_group: rows of weight 0 are left out first
            keep = weights > 0
            probs, labels, groups, weights = probs[keep], labels[keep], groups[keep], weights[keep]
        n_distinct = int(np.unique(groups).size)
        grouped = GroupedStats(CalibrationStats(probs.shape[1], n_bins=n_bins, threshold=result.threshold,
                                                weighted=weights is not None),
                               max_distinct=max(max_distinct, n_distinct))
        grouped.update(probs, labels, groups, sample_weight=weights)
        names, stats, merged, notes = grouped.folded(max_groups)
        codes = group_codes(groups, probs.shape[0], max_groups)
        per_group = [compute_metrics(probs[rows], labels[rows], n_bins=n_bins, binning=binning, keys=wanted,
                                     sample_weight=None if weights is None else weights[rows])
                     for rows in codes.rows]
        values = {key: tuple(float(found[key]) for found in per_group) for key in wanted}
        unavailable: dict[str, str] = {}
    else:
        n_distinct = len(grouped.groups)
        names, stats, merged, notes = grouped.folded(max_groups)
        exact = list(GROUP_STREAM_EXACT) + (list(_GROUP_UNIFORM_BINNED) if binning == "uniform" else [])
        found = [s.metrics() for s in stats]
        values = {key: tuple(float(f[key]) for f in found) for key in wanted if key in exact}
        unavailable = {key: _GROUP_REASONS.get(key, _GROUP_REASONS["adaptive"]) for key in wanted if key not in exact}
    return GroupEvaluation(column=column, labels=tuple(names), stats=tuple(stats), values=values,
                           overall={key: float(result.metrics[key]) for key in wanted}, unavailable=unavailable,
                           n_distinct=n_distinct, merged=merged, notes=tuple(notes), n_bins=n_bins,
                           binning=binning, engine=engine)
