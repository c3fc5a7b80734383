"""Reading a summary back: reliability diagrams, per-class bars and bin sweeps without the rows.

:meth:`calib_core.engines.evaluate.Evaluation.summary` (and
``calib-core report --json``) writes per-bin sums, not rows;
:func:`load_summary` reads them into a :class:`CalibrationSummary`, whose
methods give the tables :func:`calib_core.reliability_table`,
:func:`calib_core.bin_sensitivity` and the class-wise metrics give on the
rows, computed from the sums (:func:`calib_core.binning.binned_error`,
:func:`calib_core.binning.mean_abs_gap`).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.binning import BinStats, binned_error, mean_abs_gap
from calib_core.engines.group_evaluation import GroupEvaluation
from calib_core.engines.stats import CalibrationStats
from calib_core.metrics.reliability import reliability_frame
from calib_core.validation import CalibrationInputError, check_binning, check_choice

__all__ = [
    "CalibrationSummary",
    "load_summary",
]

# ---------------------------------------------------------------------------
# Reading a summary back: diagrams without the rows
# ---------------------------------------------------------------------------

_SUMMARY_FORMAT = "calib_core.summary/1"


def _binstats_from_dict(data: dict[str, Any]) -> Any:

    return BinStats(np.asarray(data["count"], dtype=np.float64), np.asarray(data["sum_value"], dtype=np.float64),
                    np.asarray(data["sum_target"], dtype=np.float64),
                    _nan_array(data["lower"]), _nan_array(data["upper"]),
                    np.asarray(data["n_total"], dtype=np.float64) if np.ndim(data["n_total"]) else float(data["n_total"]))


def _nan_array(values: Any) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=object)
    return np.where(array == None, np.nan, array).astype(np.float64)  # noqa: E711 - JSON nulls


@dataclass(frozen=True)
class CalibrationSummary:
    """A summary written by :meth:`Evaluation.summary` (or ``calib-core report --json``), read back.

    Everything a reliability diagram, per-class bars and a uniform-bin
    sensitivity sweep need, computed from per-bin sums instead of rows.

    Attributes
    ----------
    metrics : dict of str to float
    n_samples, n_classes : int
    class_names : tuple of str
    n_bins : int
    binning : str
    bin_counts : tuple of int
        The uniform bin counts whose sums the summary holds.
    stats : CalibrationStats
    adaptive : dict of str to BinStats
        ``"top_label"``, ``"classwise"``, ``"classwise_above"`` when present.
    files : tuple of str
    engine, input_kind : str
    exact : bool
    error_bounds : dict of str to float
    warnings : tuple of str
    groups : GroupEvaluation or None
        Per-group sums and metrics when the run had a group column.
    weight_column : str or None
        The column of row weights when the run had one: every count of the
        sums is then a summed weight (``stats.weighted``, ``stats.sum_weight``).
        A summary without it (every summary written before weights) is
        unweighted: each row weighs 1.
    """

    metrics: dict[str, float]
    n_samples: int
    n_classes: int
    class_names: tuple[str, ...]
    n_bins: int
    binning: str
    bin_counts: tuple[int, ...]
    stats: CalibrationStats
    adaptive: dict[str, Any]
    files: tuple[str, ...] = ()
    engine: str = ""
    input_kind: str = ""
    exact: bool = True
    error_bounds: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    groups: GroupEvaluation | None = None
    weight_column: str | None = None

    def _class_index(self, target: str | int) -> int | str:
        if isinstance(target, str) and target == "top_label":
            return target
        if isinstance(target, str) and target in self.class_names:
            return self.class_names.index(target)
        if isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < self.n_classes:
            return int(target)
        raise CalibrationInputError(
            f"`target` must be 'top_label', a class index in 0..{self.n_classes - 1} or a class name, got {target!r}."
        )

    def bin_stats(self, target: str | int = "top_label", n_bins: int | None = None,
                  binning: str = "uniform") -> Any:
        """Per-bin sums of the top label or one class (:class:`~calib_core.binning.BinStats`)."""
        target = self._class_index(target)
        if check_binning(binning) == "uniform":
            return self.stats.bin_stats(target, n_bins)
        if n_bins is not None and n_bins != self.n_bins:
            raise CalibrationInputError(
                f"adaptive bins are kept for n_bins={self.n_bins} only, got {n_bins}."
            )
        key = "top_label" if target == "top_label" else "classwise"
        if key not in self.adaptive:
            raise CalibrationInputError(f"the summary holds no adaptive bins for {target!r}; re-run with every metric.")
        stats = self.adaptive[key]
        if target == "top_label":
            return stats
        k = int(target)
        return BinStats(stats.count[k], stats.sum_value[k], stats.sum_target[k], stats.lower[k], stats.upper[k],
                        float(np.asarray(stats.n_total)[k]))

    def reliability_table(self, target: str | int = "top_label", n_bins: int | None = None,
                          binning: str = "uniform", *, alpha: float = 0.05) -> pd.DataFrame:
        """The table :func:`calib_core.reliability_table` gives on the rows, from the sums.

        Columns ``bin, lower, upper, count, weight, mean_confidence,
        observed_frequency, gap, ci_low, ci_high``; one row per non-empty bin;
        the interval is the ``1 - alpha`` Wilson score interval.
        """
        return reliability_frame(self.bin_stats(target, n_bins, binning), alpha=alpha)

    def classwise_ece(self, n_bins: int | None = None, binning: str = "uniform", norm: str = "l1") -> pd.Series:
        """Per-class ECE (``probs[:, k]`` against ``labels == k``), indexed by class name."""
        norm = check_choice(norm, "norm", ("l1", "l2", "max"))
        if check_binning(binning) == "uniform":
            stats = self.stats.bin_stats("classwise", n_bins)
        else:
            self.bin_stats(0, n_bins, "adaptive")  # checks that the adaptive sums exist
            stats = self.adaptive["classwise"]
        return pd.Series(binned_error(stats, norm), index=list(self.class_names), name="classwise_ece")

    def per_class_ace(self) -> pd.Series:
        """Per-class ACE (Nixon et al. 2019, eq. 3) from the adaptive class-wise sums.

        Available for the run's ``n_bins`` when the report kept adaptive
        class-wise bins (every metric requested); indexed by class name.
        """
        self.bin_stats(0, self.n_bins, "adaptive")  # checks that the adaptive sums exist
        return pd.Series(mean_abs_gap(self.adaptive["classwise"]), index=list(self.class_names), name="ace")

    def bin_sensitivity(self, metrics: Sequence[str] = ("ece", "sce", "ace")) -> pd.DataFrame:
        """Uniform-bin sensitivity over the kept bin counts, like :func:`calib_core.bin_sensitivity`.

        Columns ``n_bins, binning, metric, value`` with ``binning ==
        "uniform"``; metrics ``ece`` (top label), ``sce`` (class-wise,
        count-weighted) and ``ace`` (class-wise, unweighted mean over
        non-empty bins).
        """
        metrics = [check_choice(m, "metrics", ("ece", "sce", "ace")) for m in metrics]
        rows = []
        for n_bins in self.bin_counts:
            top = self.stats.bin_stats("top_label", n_bins)
            classwise = self.stats.bin_stats("classwise", n_bins)
            found = {"ece": float(binned_error(top, "l1")), "sce": float(binned_error(classwise, "l1").mean()),
                     "ace": float(mean_abs_gap(classwise).mean())}
            rows += [(n_bins, "uniform", m, found[m]) for m in metrics]
        return pd.DataFrame(rows, columns=["n_bins", "binning", "metric", "value"])

    @property
    def sum_weight(self) -> float:
        """The summed row weight W of the sums (the row count when unweighted)."""
        return self.stats.total_weight

    @property
    def class_balance(self) -> pd.DataFrame:
        """Per class: label count, share of rows and mean predicted probability (weighted: summed weights)."""
        n = self.stats.total_weight
        return pd.DataFrame({"class": list(self.class_names), "count": self.stats.label_count,
                             "share": self.stats.label_count / n, "mean_probability": self.stats.prob_sum / n})


def load_summary(json_text: str | bytes | dict[str, Any]) -> CalibrationSummary:
    """Read the summary JSON of ``calib-core report --json`` (or :meth:`Evaluation.summary`).

    Parameters
    ----------
    json_text : str, bytes or dict
        The JSON text (or its parsed dict): the CLI output, whose
        ``"statistics"`` entry is the summary, or the summary itself.

    Returns
    -------
    CalibrationSummary

    Raises
    ------
    CalibrationInputError
        Not JSON, or not a calib_core summary, or damaged.

    Examples
    --------
    >>> summary = load_summary(open("report.json").read())  # doctest: +SKIP
    >>> summary.reliability_table("top_label", n_bins=15)  # doctest: +SKIP
    """
    if isinstance(json_text, dict):
        data = json_text
    else:
        try:
            data = json.loads(json_text)
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            raise CalibrationInputError(f"the summary is not valid JSON: {exc}.") from exc
    if isinstance(data, dict) and isinstance(data.get("statistics"), dict):
        data = data["statistics"]
    if not isinstance(data, dict) or data.get("format") != _SUMMARY_FORMAT:
        raise CalibrationInputError(
            "not a calib_core summary: expected the JSON written by `calib-core report --json` "
            f"(format {_SUMMARY_FORMAT!r})."
        )
    try:
        stats = CalibrationStats.from_dict(data["stats"])
        adaptive = {key: _binstats_from_dict(value) for key, value in (data.get("adaptive") or {}).items()}
        return CalibrationSummary(
            metrics={str(k): float(v) for k, v in data["metrics"].items()},
            n_samples=int(data["n_samples"]), n_classes=int(data["n_classes"]),
            class_names=tuple(str(c) for c in data["class_names"]), n_bins=int(data["n_bins"]),
            binning=str(data["binning"]), bin_counts=stats.bin_counts, stats=stats, adaptive=adaptive,
            files=tuple(data.get("files", ())), engine=str(data.get("engine", "")),
            input_kind=str(data.get("input_kind", "")), exact=bool(data.get("exact", True)),
            error_bounds={str(k): float(v) for k, v in (data.get("error_bounds") or {}).items()},
            warnings=tuple(data.get("warnings", ())),
            groups=None if data.get("groups") is None else GroupEvaluation.from_dict(data["groups"]),
            weight_column=None if data.get("weight_column") is None else str(data["weight_column"]))

    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CalibrationInputError):
            raise
        raise CalibrationInputError(f"damaged calib_core summary: {type(exc).__name__}: {exc}.") from exc
