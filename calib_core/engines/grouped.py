"""Per-group statistics: one mergeable :class:`~calib_core.engines.stats.CalibrationStats` per group value.

:class:`GroupedStats` keeps the sums of all rows and of the rows of every
value of a group column in the same pass, so per-group metrics from uniform
bins are exact in every engine (``evaluate(..., group_column=)``); at the end
the groups are folded as :func:`calib_core.by_group` folds them (at most
``max_groups``, the smallest merged into "other").
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.engines.sketch import _check_same
from calib_core.engines.stats import CalibrationStats, _BlockScratch, _check_batch
from calib_core.inference.groups import MAX_GROUPS, merge_smallest_groups
from calib_core.io.columns import MISSING_GROUP, group_text
from calib_core.validation import CalibrationInputError, check_sample_weight

__all__ = [
    "GroupedStats",
    "MAX_STREAM_GROUPS",
]

# ---------------------------------------------------------------------------
# One pass, exact: the same sums per group of rows
# ---------------------------------------------------------------------------

#: Distinct group values :class:`GroupedStats` keeps while streaming; one more is refused.
#: Each group costs about ``24 * (K + 1) * n_cells`` bytes (15 bins, 10 classes: 4 KiB).
MAX_STREAM_GROUPS = 10_000

_SUM_NAMES = ("label_count", "top_count", "top_sum_value", "top_sum_target",
              "class_count", "class_sum_value", "class_sum_target")
_SCALAR_NAMES = ("n_rows", "n_correct", "sum_brier", "sum_nll")
_GROUPED_FORMAT = "calib_core.GroupedStats/1"


def _group_text_of(values: ArrayLike) -> NDArray[Any]:
    """Group values as text, as :attr:`calib_core.Predictions.groups` holds them."""
    array = np.asarray(values)
    if array.dtype.kind == "U":
        return np.where(np.char.strip(array) == "", MISSING_GROUP, array)

    return group_text(pd.Series(array.astype(object)))[0]


class GroupedStats:
    """:class:`CalibrationStats` of all rows and of every group of rows, mergeable.

    Parameters
    ----------
    overall : CalibrationStats
        Empty statistics for all rows (any settings, sketches included).
    max_distinct : int, default :data:`MAX_STREAM_GROUPS`
        Distinct group values kept while streaming; a batch or merge that
        brings more raises :class:`CalibrationInputError`.

    Attributes
    ----------
    overall : CalibrationStats
    groups : dict of str to CalibrationStats
        One object per group value seen (keyed by the group's text; missing
        values are the group ``"(missing)"`` as in
        :func:`calib_core.load_predictions`), each with the uniform-bin sums
        for ``overall.n_bins`` bins and no sketches.

    Notes
    -----
    Per group g, the sums of :class:`CalibrationStats` over the rows of g;
    every metric of ``CalibrationStats.metrics()`` (uniform-bin ECE / RMSCE /
    MCE, class-wise ECE, accuracy, Brier, NLL) then equals the in-memory
    metric on the group's rows, as ``calib_core.by_group`` computes it, to
    float64 round-off (Nixon et al. 2019, eq. 1-2). The choice of the 49
    largest groups plus "other" is made at the end, from the exact counts
    (:meth:`folded`): the sums of the merged group are the sums of its groups.

    Examples
    --------
    >>> g = GroupedStats(CalibrationStats(2, n_bins=10))
    >>> g = g.update([[0.9, 0.1], [0.6, 0.4]], [0, 1], ["a", "b"])
    >>> sorted(g.groups), g.groups["b"].n_rows
    (['a', 'b'], 1)
    """

    def __init__(self, overall: CalibrationStats, *, max_distinct: int = MAX_STREAM_GROUPS) -> None:
        if not isinstance(overall, CalibrationStats):
            raise CalibrationInputError(f"`overall` must be CalibrationStats, got {type(overall).__name__}.")
        if isinstance(max_distinct, bool) or not isinstance(max_distinct, (int, np.integer)) or max_distinct < 1:
            raise CalibrationInputError(f"`max_distinct` must be a whole number >= 1, got {max_distinct!r}.")
        self.overall = overall
        self.max_distinct = int(max_distinct)
        self.groups: dict[str, CalibrationStats] = {}
        self._scratch: _BlockScratch | None = None

    @property
    def n_rows(self) -> int:
        return self.overall.n_rows

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_scratch"] = None
        return state

    def _blank(self) -> CalibrationStats:
        """Empty statistics of one group: the overall settings for ``n_bins`` only, no sketches."""
        base = self.overall
        return CalibrationStats(base.n_classes, n_bins=base.n_bins, threshold=base.threshold, weighted=base.weighted)

    def _group(self, key: str) -> CalibrationStats:
        stats = self.groups.get(key)
        if stats is None:
            if len(self.groups) >= self.max_distinct:
                raise CalibrationInputError(
                    f"the group column has more than {self.max_distinct:,} distinct values; the streaming "
                    "engines keep statistics for at most that many groups (calib_core.engines.grouped."
                    "MAX_STREAM_GROUPS). Group by a coarser column, or map the rare values to one value first."
                )
            stats = self.groups[key] = self._blank()
        return stats

    def update(self, probs: ArrayLike, labels: ArrayLike, groups: ArrayLike,
               sample_weight: ArrayLike | None = None) -> "GroupedStats":
        """Add a batch of rows ``(n, K)`` with the group of each row (in place); returns ``self``.

        ``sample_weight`` (weighted statistics only, ``CalibrationStats(weighted=True)``) weights every sum;
        rows of weight 0 count in the overall rows read but in no group (as :func:`calib_core.by_group`, which
        leaves them out first).

        Raises
        ------
        CalibrationInputError
            Invalid batch, ``groups`` of another length, too many groups.
        """
        checked = _check_batch(probs, labels, self.overall.n_classes)
        if checked is None:
            return self
        probs, labels = checked
        text = _group_text_of(groups)
        if text.ndim != 1 or text.shape[0] != labels.shape[0]:
            raise CalibrationInputError(
                f"`groups` must have one value per row ({labels.shape[0]}), got shape {text.shape}.")
        weights = check_sample_weight(sample_weight, labels.shape[0]) if sample_weight is not None else None
        self.add_columns(list(probs.T), labels, text, weights)
        return self

    def add_columns(self, columns: Sequence[NDArray[np.float64]], labels: NDArray[np.intp],
                    groups: NDArray[Any], weights: NDArray[np.float64] | None = None) -> None:
        """Add checked class-major rows (K arrays of length n), with their groups as text (in place).

        With checked ``weights`` (weighted statistics): weighted sums, the rows of weight 0 in no group.
        """
        if weights is not None:
            self.overall._add_weighted(columns, labels, weights)
            keep = weights > 0
            columns, labels, groups, weights = [c[keep] for c in columns], labels[keep], groups[keep], weights[keep]
            if not labels.size:
                return
        else:
            self.overall._add_class_major(columns, labels, self._scratch_space())
        codes, uniques = pd.factorize(pd.Series(groups, dtype=object), sort=False)
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(uniques)))])
        for code, key in enumerate(uniques):
            rows = order[bounds[code]:bounds[code + 1]]
            if weights is not None:
                self._group(str(key))._add_weighted([column[rows] for column in columns], labels[rows], weights[rows])
                continue
            self._group(str(key))._add_class_major([column[rows] for column in columns], labels[rows],
                                                   self._scratch_space())

    def _scratch_space(self) -> _BlockScratch:
        if self._scratch is None:
            self._scratch = _BlockScratch(self.overall.n_classes, self.overall.block_rows)
        return self._scratch

    def merge(self, other: "GroupedStats") -> "GroupedStats":
        """A new object holding the sums of ``self`` and ``other`` (overall and per group).

        Raises
        ------
        CalibrationInputError
            Different settings, or more than ``max_distinct`` groups together.
        """
        if not isinstance(other, GroupedStats):
            raise CalibrationInputError(f"can only merge GroupedStats, got {type(other).__name__}.")
        merged = GroupedStats(self.overall.merge(other.overall), max_distinct=self.max_distinct)
        merged.groups = dict(self.groups)
        for key, stats in other.groups.items():
            if key in merged.groups:
                merged.groups[key] = _sum_stats([merged.groups[key], stats])
            else:
                merged._group(key)  # counts it against the cap
                merged.groups[key] = stats
        return merged

    def folded(self, max_groups: int | None = None) -> tuple[list[str], list[CalibrationStats], bool, list[str]]:
        """The groups as :func:`calib_core.by_group` reports them: sorted, at most ``max_groups``.

        More than ``max_groups`` (default :data:`calib_core.inference.groups.MAX_GROUPS`, 50)
        groups: the ``max_groups - 1`` largest (ties: the first in sorted
        order) are kept and the others' sums added into one group "other"
        (last), with the note ``by_group`` writes.

        Returns
        -------
        labels, stats, merged, notes
        """
        max_groups = MAX_GROUPS if max_groups is None else int(max_groups)
        labels = sorted(self.groups)
        stats = [self.groups[key] for key in labels]
        if len(labels) <= max_groups:
            return labels, stats, False, []
        counts = np.array([s.n_rows for s in stats], dtype=np.int64)
        kept, other, note = merge_smallest_groups(labels, counts, max_groups)
        rest = np.setdiff1d(np.arange(len(labels)), kept)
        return ([labels[k] for k in kept] + [other], [stats[k] for k in kept] + [_sum_stats([stats[k] for k in rest])],
                True, [note])

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form: the overall statistics and every group's (no rows)."""
        return {"format": _GROUPED_FORMAT, "max_distinct": self.max_distinct, "overall": self.overall.to_dict(),
                "labels": list(self.groups), "groups": [s.to_dict() for s in self.groups.values()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupedStats":
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or data.get("format") != _GROUPED_FORMAT:
            raise CalibrationInputError(f"not a GroupedStats summary (expected format {_GROUPED_FORMAT!r}).")
        try:
            grouped = cls(CalibrationStats.from_dict(data["overall"]), max_distinct=int(data["max_distinct"]))
            if len(data["labels"]) != len(data["groups"]):
                raise CalibrationInputError("damaged GroupedStats summary: labels and groups differ in length.")
            grouped.groups = {str(k): CalibrationStats.from_dict(v) for k, v in zip(data["labels"], data["groups"])}
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CalibrationInputError):
                raise
            raise CalibrationInputError(f"damaged GroupedStats summary: {type(exc).__name__}: {exc}.") from exc
        return grouped

    def __repr__(self) -> str:
        return f"GroupedStats(n_rows={self.n_rows}, n_groups={len(self.groups)}, overall={self.overall!r})"


def _sum_stats(parts: Sequence[CalibrationStats]) -> CalibrationStats:
    """Sketch-less statistics of the same settings, added up (without the copies of ``merge``)."""
    first = parts[0]
    total = CalibrationStats(first.n_classes, n_bins=first.n_bins, sweep_bins=first.bin_counts,
                             threshold=first.threshold, weighted=first.weighted)
    for part in parts:
        _check_same(first.bin_counts, part.bin_counts, "bin counts")
        _check_same(first.n_classes, part.n_classes, "class counts")
        _check_same(first.weighted, part.weighted, "weighting (weighted=)")
        for name in _SCALAR_NAMES + _SUM_NAMES + (("sum_weight",) if first.weighted else ()):
            setattr(total, name, getattr(total, name) + getattr(part, name))
    return total
