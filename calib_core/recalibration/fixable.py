"""The fixable part of a score, measured honestly: what the recommended recalibration method removes, cross-fitted.

A kernel decomposition (:func:`calib_core.score_decomposition`) splits a
proper score into calibration and refinement, but its calibration term is an
estimate with its own bias at small N or many classes (an 8-class model with
ECE 0.02 had 60 % of its Brier score labelled "calibration" while no method
lowered it). :func:`fixable_part` measures instead what a user can act on: the
drop in NLL and Brier score that the recommended default recalibration
method achieves on rows it was not fitted on (K-fold cross-fitting), with a
paired bootstrap interval. It reuses the Recalibration page's machinery
(:mod:`calib_core.recalibration.compare`): the same protocol, fits and
intervals, and the page's one rule for the best method
(:func:`calib_core.recalibration.recommendation.ranked_candidates`: it lowers
the ECE without raising the Brier score; the lowest Brier score first). When
no method qualifies, nothing is fixable by recalibration.

Examples
--------
>>> import numpy as np
>>> from calib_core import softmax
>>> rng = np.random.default_rng(0)
>>> labels = rng.integers(0, 3, 600)
>>> logits = 3 * (rng.normal(size=(600, 3)) + 1.5 * np.eye(3)[labels])
>>> found = fixable_part(softmax(logits), labels, logits=logits, n_boot=50, methods=("Temperature scaling",))
>>> found.method, found.brier_drop > 0
('Temperature scaling', True)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from calib_core.recalibration.compare import (CAUTIONARY, Protocol, evaluation_set, fit_method, intervals,
                                              model_input, results_table)
from calib_core.recalibration.defaults import default_methods
from calib_core.recalibration.recommendation import ranked_candidates
from calib_core.validation import CalibrationInputError, check_probs_labels

__all__ = ["FixablePart", "fixable_part"]


@dataclass(frozen=True)
class FixablePart:
    """The drop in NLL and Brier score of the recommended recalibration method, cross-fitted, with paired intervals.

    Attributes
    ----------
    method : str or None
        The recommended method under cross-fitting: the first of
        :func:`~calib_core.recalibration.recommendation.ranked_candidates`
        (lowers the ECE without raising the Brier score; the lowest Brier
        score first), as on the Recalibration page. None when no method
        qualifies (``status`` ``"none_helps"``: nothing is fixable, the drops
        are 0) or none could be fitted (``"no_fit"``: the drops are NaN).
    methods : tuple of str
        The methods tried.
    n_folds, n_boot, seed : int
        Cross-fitting folds, bootstrap resamples and their seed.
    alpha : float
        The intervals cover ``1 - alpha``.
    brier_before, brier_after, nll_before, nll_after : float
        The scores before and after (out of fold).
    brier_drop, nll_drop : float
        ``before - after``: positive when recalibration helps, negative when it hurts.
    brier_drop_low, brier_drop_high, nll_drop_low, nll_drop_high : float
        Paired percentile bootstrap interval of each drop (NaN without resamples).
    failures : tuple of str
        ``"method: message"`` of the methods that could not be fitted.
    status : str
        ``"recommended"``, ``"none_helps"`` or ``"no_fit"`` (as
        :attr:`calib_core.recalibration.recommendation.Recommendation.status`).
    """

    method: str | None
    methods: tuple[str, ...]
    n_folds: int
    n_boot: int
    seed: int
    alpha: float
    brier_before: float
    brier_after: float
    brier_drop: float
    brier_drop_low: float
    brier_drop_high: float
    nll_before: float
    nll_after: float
    nll_drop: float
    nll_drop_low: float
    nll_drop_high: float
    failures: tuple[str, ...] = ()
    status: str = "recommended"

    @property
    def brier_share(self) -> float:
        """The Brier drop as a share of the Brier score (0 when recalibration does not lower it)."""
        return max(self.brier_drop, 0.0) / self.brier_before if self.brier_before > 0 else 0.0

    def sentence(self) -> str:
        """One plain sentence: what the recommended method removes, with the intervals (no Markdown)."""
        if self.status == "none_helps":
            return (f"No recalibration method lowers the ECE without raising the Brier score under "
                    f"{self.n_folds}-fold cross-fitting, so nothing is fixable by recalibration.")
        if self.method is None:
            return "No recalibration method could be fitted, so the fixable part is not measured."
        level = f"{1 - self.alpha:.0%}"

        def drop(name, before, after, value, low, high):
            interval = f" ({level} interval {low:.4g} to {high:.4g})" if math.isfinite(low) else ""
            return f"the {name} from {before:.4f} to {after:.4f}, a drop of {value:.4g}{interval}"

        brier = drop("Brier score", self.brier_before, self.brier_after, self.brier_drop, self.brier_drop_low,
                     self.brier_drop_high)
        nll = drop("NLL", self.nll_before, self.nll_after, self.nll_drop, self.nll_drop_low, self.nll_drop_high)
        tried = f"the recommended one of {len(self.methods)} methods" if len(self.methods) > 1 \
            else "the one method tried"
        head = f"{self.method}, {tried} under {self.n_folds}-fold cross-fitting, takes {brier}, and {nll}"
        if self.brier_drop <= 0:
            return head + ": no recalibration lowers the Brier score, so nothing of it is fixable by recalibration."
        if math.isfinite(self.brier_drop_low) and self.brier_drop_low <= 0:
            return head + f": {self.brier_share:.0%} of the Brier score, but within bootstrap noise of no change."
        return head + f": {self.brier_share:.0%} of the Brier score is fixable by recalibration."


def fixable_part(probs: ArrayLike, labels: ArrayLike, *, logits: ArrayLike | None = None,
                 methods: Sequence[str] | None = None, n_folds: int = 5, n_boot: int = 200, seed: int = 0,
                 alpha: float = 0.05, sample_weight: ArrayLike | None = None) -> FixablePart:
    """What recalibration can remove from the NLL and the Brier score, measured on rows it was not fitted on.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    logits : array_like of shape (N, K), optional
        The model's logits, when it has them (the methods then work on them).
    methods : sequence of str, optional
        Keys of :data:`calib_core.RECALIBRATORS`; default the Recalibration
        page's default set at K classes (:func:`calib_core.recalibration.defaults.default_methods`).
        The cautionary baseline is never recommended.
    n_folds : int, default 5
        Folds of the cross-fitting.
    n_boot : int, default 200
        Bootstrap resamples of the paired intervals (0: none).
    seed : int, default 0
        Seeds the folds and the resamples.
    alpha : float, default 0.05
    sample_weight : array_like of shape (N,), optional
        Row weights: each fold's fit takes its rows' weights, the scores
        before and after and the method's choice weight every row, and the
        paired bootstrap is the weighted one
        (:func:`calib_core.recalibration.compare.intervals`). The folds are
        those of the unweighted rows (so integer weights equal repeated rows
        only on folds that keep a row's copies together).

    Returns
    -------
    FixablePart

    Raises
    ------
    CalibrationInputError
        Invalid input, or too few rows of a class for ``n_folds`` folds.

    Notes
    -----
    For a proper score S the calibration term of Gruber & Buettner (2022,
    Lemma 4.1) is the largest drop in expected score any map of the
    predictions can achieve. A fitted method achieves at most that, so its
    out-of-fold drop estimates a lower bound of the calibration term that
    does not share the kernel estimate's bias: a large kernel "calibration"
    share with no drop here means the kernel estimate is unreliable, or the
    miscalibration is of a form none of the methods can fit. The method is the
    one the Recalibration page recommends
    (:func:`calib_core.recalibration.recommendation.ranked_candidates` of the
    cross-fitted results table): one that lowers the ECE without raising the
    Brier score, the lowest Brier score first; with none, nothing is fixable
    (drops 0). Choosing among several methods on the same rows favours the
    chosen one slightly; each fit is out
    of fold (:func:`calib_core.recalibration.compare.evaluation_set`,
    ``Protocol("cross_fit")``). The intervals are the paired percentile
    bootstrap of :func:`calib_core.recalibration.compare.intervals`: "before"
    and "after" resample the same rows.
    """
    probs, labels = check_probs_labels(probs, labels)
    if logits is not None:
        logits = np.asarray(logits, dtype=np.float64)
        if logits.shape != probs.shape:
            raise CalibrationInputError(f"`logits` must have the shape of `probs` {probs.shape}, got {logits.shape}.")
    methods = tuple(default_methods(probs.shape[1]) if methods is None else methods)
    x, kind = model_input(probs, logits)
    protocol = Protocol("cross_fit", n_folds=int(n_folds), seed=int(seed)).normalised()
    ev = evaluation_set(x, probs, labels, protocol, input=kind, sample_weight=sample_weight)
    fits = {name: fit_method(name, x, labels, ev) for name in methods}
    failures = tuple(f"{name}: {fit.message}" for name, fit in fits.items() if not fit.ok)
    before = ev.before_values
    if not any(fit.ok for fit in fits.values()):
        nan = math.nan
        return FixablePart(None, methods, protocol.n_folds, int(n_boot), int(seed), alpha, before["brier"], nan, nan,
                           nan, nan, before["nll"], nan, nan, nan, nan, failures, "no_fit")
    ranked = ranked_candidates(results_table(ev, fits), cautionary=CAUTIONARY)
    if not ranked:
        nan = math.nan
        return FixablePart(None, methods, protocol.n_folds, int(n_boot), int(seed), alpha, before["brier"],
                           before["brier"], 0.0, nan, nan, before["nll"], before["nll"], 0.0, nan, nan, failures,
                           "none_helps")
    best = ranked[0]
    fit = fits[best]
    low = {"brier": math.nan, "nll": math.nan}
    high = dict(low)
    if n_boot > 0:
        table = intervals(ev, {best: fit}, n_boot=int(n_boot), seed=int(seed), alpha=alpha).set_index("key")
        for key in low:  # the drop is minus the change: its interval is the change's, negated and swapped
            low[key], high[key] = -float(table.loc[key, "delta_high"]), -float(table.loc[key, "delta_low"])
    return FixablePart(best, methods, protocol.n_folds, int(n_boot), int(seed), alpha,
                       before["brier"], fit.after["brier"], before["brier"] - fit.after["brier"], low["brier"],
                       high["brier"], before["nll"], fit.after["nll"], before["nll"] - fit.after["nll"], low["nll"],
                       high["nll"], failures)
