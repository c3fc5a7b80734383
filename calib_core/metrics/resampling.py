"""How a registered metric may be resampled: one declaration per metric, read by the bootstrap.

Each :class:`~calib_core.metrics.registry.MetricSpec` carries a
:class:`Resampling` that says which shortcut a bootstrap may take, with its
settings as plain values (after scipy's ``_resampling.py``, where a statistic
declares whether it is vectorised or paired and ``bootstrap`` reads it):

* ``"binned"`` -- a reduction of per-bin sums (count, sum of values, sum of
  targets) of the top-label confidence (``family="top_label"``), of every
  class column (``"classwise"``) or their unweighted mean of ``|gap|`` over
  adaptive bins (``"adaptive_mean"``): a resample is a vector of row weights
  and its sums come from one sort per column
  (:mod:`calib_core.inference.resample`; Nixon et al. 2019, eq. 1-3);
* ``"row_mean"`` -- the mean of a per-row value (``per_row``), or a function
  ``of_mean`` of it: a resample's value is the mean over its rows;
* ``"top_label"`` -- a function ``statistic(confidence, correctness)`` of the
  top label alone: the bootstrap resamples those two arrays, not the N x K
  matrix (``sorts``: it begins with a stable sort of the confidences, so
  the draws may be given to it already in that order);
* ``"rows"`` -- the metric is called on each materialised resample;
* ``"variance"`` -- no resampling: ``variance(probs, labels, bandwidth) ->
  (estimate, std_error, note)`` is the metric's variance formula;
* ``"none"`` -- no interval (the registry entry's ``no_interval`` says why).

Adding a metric with a fast interval is its formula plus one registry entry
naming one of these (``docs/architecture.md``, "Declared resampling").
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BOOTSTRAP_KINDS", "RESAMPLING_KINDS", "Resampling"]

#: Every kind of :class:`Resampling`, in words.
RESAMPLING_KINDS = {
    "binned": "row weights, per-bin sums along one sort per column",
    "row_mean": "the mean of per-row values over each resample's rows",
    "top_label": "a function of the resampled top-label confidence and correctness",
    "rows": "the metric on each materialised resample",
    "variance": "a variance formula, no resampling",
    "none": "no interval",
}
#: The kinds a bootstrap resamples (the others make no bootstrap samples).
BOOTSTRAP_KINDS = ("binned", "row_mean", "top_label", "rows")


@dataclass(frozen=True)
class Resampling:
    """How one metric may be resampled (see the module docstring for the kinds).

    Attributes
    ----------
    kind : {"binned", "row_mean", "top_label", "rows", "variance", "none"}
    family : {"top_label", "classwise", "adaptive_mean"} or None
        ``"binned"``: what is binned and how the per-bin gaps are reduced.
    norm : {"l1", "l2", "max"}
        ``"binned"``: the reduction of the gaps (unused by ``adaptive_mean``).
    threshold : float or None
        ``"binned"``: only values strictly above it are binned (TACE).
    per_row : callable or None
        ``"row_mean"``: ``per_row(probs, labels) -> (N,)`` values whose mean is the metric.
    of_mean : callable or None
        ``"row_mean"``: the metric is ``of_mean(mean)`` (the root Brier score: ``np.sqrt``).
    statistic : callable or None
        ``"top_label"``: ``statistic(confidence, correctness[, bandwidth=h])``.
    sorts : bool
        ``"top_label"``: the statistic begins with a stable sort of the confidences.
    takes_bandwidth : bool
        ``"top_label"``: the statistic takes the metric's kernel ``bandwidth`` as a keyword.
    variance : callable or None
        ``"variance"``: ``variance(probs, labels, bandwidth) -> (estimate, std_error, note)``;
        a non-finite ``std_error`` means no interval, ``note`` then says why.
    of_draws : callable or None
        ``"top_label"``: ``of_draws(confidence, correctness, indices[, bandwidth=h]) -> (R,)``, the statistic
        of R resamples at once (resample ``r`` the rows ``indices[r]``), equal to ``statistic`` on each
        materialised resample up to round-off; the bootstrap then calls it once per block of resamples.
    """

    kind: str
    family: str | None = None
    norm: str = "l1"
    threshold: float | None = None
    per_row: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = field(default=None, repr=False)
    of_mean: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)
    statistic: Callable[..., float] | None = field(default=None, repr=False)
    sorts: bool = False
    takes_bandwidth: bool = False
    variance: Callable[[np.ndarray, np.ndarray, float | None], tuple[float, float, str]] | None = field(
        default=None, repr=False)
    of_draws: Callable[..., np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in RESAMPLING_KINDS:
            raise ValueError(f"unknown resampling kind {self.kind!r}; known: {', '.join(RESAMPLING_KINDS)}.")
        needed = {"binned": "family", "row_mean": "per_row", "top_label": "statistic", "variance": "variance"}
        name = needed.get(self.kind)
        if name is not None and getattr(self, name) is None:
            raise ValueError(f"a {self.kind!r} resampling needs its `{name}`.")
