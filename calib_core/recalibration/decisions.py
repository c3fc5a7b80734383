"""What miscalibration costs in decisions: net benefit, decision curves and the value of recalibrating.

A probability is used by acting on it: treat when P(class 1) reaches a
threshold, or take the action of least expected cost under a cost matrix.
Miscalibration moves those decisions. This module measures it in the user's
units:

* :func:`net_benefit` - the net benefit of Vickers & Elkin (2006) at each
  threshold, with the treat-all and treat-none references (binary; K > 2 one
  class against the rest).
* :func:`decision_curve` - the net benefit of the current and of the
  recalibrated predictions (cross-fitted: every row recalibrated by a map
  fitted on other rows, the Recalibration page's protocol), with paired
  bootstrap intervals.
* :func:`recalibration_value` - for a threshold or a cost matrix, the
  expected regret of acting on the current probabilities rather than on the
  recalibrated ones, "recalibration is worth X per 1,000 decisions", with an
  interval.

References
----------
.. [Vickers2006] Vickers, A. J. & Elkin, E. B. "Decision curve analysis: a novel
   method for evaluating prediction models", Medical Decision Making 26(6),
   2006, 565-574 (net benefit, section "Net benefit").
.. [Elkan2001] Elkan, C. "The foundations of cost-sensitive learning", IJCAI
   2001 (the Bayes action of a cost matrix on calibrated probabilities).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.inference.resample import index_blocks, row_weights
from calib_core.inference.verdicts import check_alpha
from calib_core.recalibration.compare import Protocol, evaluation_set, fit_method, model_input
from calib_core.recalibration import RECALIBRATORS
from calib_core.recalibration.protocol import stratified_folds
from calib_core.validation import CalibrationInputError, check_count, check_probs_labels, check_sample_weight

__all__ = ["DecisionCurve", "RecalibrationValue", "decision_curve", "net_benefit", "recalibration_value",
           "threshold_costs"]

#: Thresholds of a decision curve when none are given.
DEFAULT_THRESHOLDS = np.round(np.arange(0.01, 1.0, 0.01), 2)


def _check_thresholds(thresholds: ArrayLike) -> NDArray[np.float64]:
    values = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
        raise CalibrationInputError(f"`thresholds` must be a non-empty 1-D array of finite numbers, got {thresholds!r}.")
    if (values < 0).any() or (values >= 1).any():
        bad = values[(values < 0) | (values >= 1)][0]
        raise CalibrationInputError(f"every threshold must lie in [0, 1) (t / (1 - t) is infinite at 1), got {bad:g}.")
    return values


def _binary(probs: ArrayLike, labels: ArrayLike,
            positive_class: int | None) -> tuple[NDArray, NDArray, NDArray, int]:
    """Checked ``(probs, labels, score, outcome)``: the score is P(positive class), the outcome labels == it."""
    probs, labels = check_probs_labels(probs, labels)
    n_classes = probs.shape[1]
    if positive_class is None:
        if n_classes != 2:
            raise CalibrationInputError(
                f"net benefit is binary; this model has {n_classes} classes: give `positive_class` (one class "
                "against the rest) or use recalibration_value with a cost matrix.")
        positive_class = 1
    if isinstance(positive_class, bool) or not isinstance(positive_class, (int, np.integer)) \
            or not 0 <= positive_class < n_classes:
        raise CalibrationInputError(f"`positive_class` must be a class index in 0..{n_classes - 1}, "
                                    f"got {positive_class!r}.")
    return probs, labels, (labels == positive_class).astype(np.float64), int(positive_class)


def _contributions(score: NDArray[np.float64], outcome: NDArray[np.float64],
                   thresholds: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-row net benefit ``[score >= t] (y - (1 - y) t / (1 - t))``, shape (N, T): its mean is the net benefit."""
    odds = thresholds / (1.0 - thresholds)
    treated = score[:, None] >= thresholds[None, :]
    return treated * (outcome[:, None] - (1.0 - outcome[:, None]) * odds[None, :])


def _mean(values: NDArray[np.float64], weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """Column means of ``values`` (N, C), weighted by ``weights`` (checked) when given."""
    return values.mean(axis=0) if weights is None else weights @ values / weights.sum()


def net_benefit(probs: ArrayLike, labels: ArrayLike, thresholds: ArrayLike, *,
                positive_class: int | None = None, sample_weight: ArrayLike | None = None) -> pd.DataFrame:
    """Net benefit of acting when P(class 1) >= t, at each threshold t (Vickers & Elkin 2006).

    Parameters
    ----------
    probs : array_like of shape (N, 2)
        Binary predictions (``cc.as_probs(score)`` turns a score into them).
    labels : array_like of shape (N,)
    thresholds : array_like of shape (T,)
        Threshold probabilities in [0, 1).
    positive_class : int, optional
        For K > 2: the class acted on, against the rest (one-vs-rest).
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies, ``docs/weights.md``): TP, FP and N are
        summed weights, so whole-number weights give the repeated rows' net
        benefit and treat-all.

    Returns
    -------
    pandas.DataFrame
        Columns ``threshold``, ``net_benefit``, ``treat_all``, ``treat_none``.

    Raises
    ------
    CalibrationInputError
        Invalid input; more than two classes without ``positive_class``; a
        threshold outside [0, 1).

    Notes
    -----
    [Vickers2006]_: predicting class 1 when :math:`P(\\text{class } 1) \\ge t`,

    .. math:: \\mathrm{NB}(t) = \\frac{TP}{N} - \\frac{FP}{N}\\,\\frac{t}{1 - t},

    the true positives net of the false positives, weighted by the odds at
    the threshold: acting at t says a false positive costs t / (1 - t) true
    positives. ``treat_all`` is the same for acting on every row,
    :math:`\\pi - (1 - \\pi)\\,t/(1 - t)` with :math:`\\pi` the share of class 1;
    ``treat_none`` is 0. With row weights :math:`w_i` and :math:`W = \\sum_i w_i`,
    :math:`TP = \\sum_i w_i [p_i \\ge t] y_i`, :math:`FP = \\sum_i w_i [p_i \\ge t] (1 - y_i)`,
    N is W and :math:`\\pi` the weighted share of class 1.

    Examples
    --------
    >>> p1 = np.array([0.9, 0.6, 0.2, 0.4])
    >>> net_benefit(np.c_[1 - p1, p1], [1, 0, 0, 1], [0.5]).round(4).to_dict("records")
    [{'threshold': 0.5, 'net_benefit': 0.0, 'treat_all': 0.0, 'treat_none': 0.0}]
    """
    probs, _, outcome, positive = _binary(probs, labels, positive_class)
    thresholds = _check_thresholds(thresholds)
    weights = check_sample_weight(sample_weight, outcome.size)
    model = _mean(_contributions(probs[:, positive], outcome, thresholds), weights)
    everyone = _mean(_contributions(np.ones_like(outcome), outcome, thresholds), weights)
    return pd.DataFrame({"threshold": thresholds, "net_benefit": model, "treat_all": everyone,
                         "treat_none": np.zeros_like(thresholds)})


# ----------------------------------------------------------------------------- recalibrated, cross-fitted

def _cross_fitted(probs: NDArray, labels: NDArray, logits: ArrayLike | None, method: str, n_folds: int,
                  seed: int, weights: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], str]:
    """Out-of-fold recalibrated predictions of ``method`` (the Recalibration page's cross-fitting) and its protocol.

    With ``weights`` each fold's map is fitted with the other folds' row weights (``fit(sample_weight=)``) on the
    same stratified folds (:func:`calib_core.cross_fit`'s), so unit weights give the unweighted predictions.
    """
    if logits is not None:
        logits = np.asarray(logits, dtype=np.float64)
        if logits.shape != probs.shape:
            raise CalibrationInputError(f"`logits` must have the shape of `probs` {probs.shape}, got {logits.shape}.")
    x, kind = model_input(probs, logits)
    if weights is not None:
        return _weighted_cross_fit(x, kind, labels, method, check_count(n_folds, "n_folds", 2), int(seed), weights)
    protocol = Protocol("cross_fit", n_folds=check_count(n_folds, "n_folds", 2), seed=int(seed)).normalised()
    ev = evaluation_set(x, probs, labels, protocol, input=kind)
    fit = fit_method(method, x, labels, ev)
    if not fit.ok:
        raise CalibrationInputError(f"{method} could not be fitted: {fit.message}")
    return np.asarray(fit.probs, dtype=np.float64), fit.protocol


def _weighted_cross_fit(x: NDArray, kind: str, labels: NDArray, method: str, n_folds: int, seed: int,
                        weights: NDArray[np.float64]) -> tuple[NDArray[np.float64], str]:
    """:func:`_cross_fitted` with row weights (the folds of :func:`calib_core.cross_fit`)."""
    if method not in RECALIBRATORS:
        raise CalibrationInputError(f"unknown method {method!r}; known: {', '.join(RECALIBRATORS)}.")
    n_rows = labels.size
    folds = stratified_folds(labels, n_folds, seed=seed, n_classes=x.shape[1])
    out = np.empty(x.shape)
    for fold in range(n_folds):
        held_out = folds == fold
        if not weights[~held_out].sum() > 0:
            raise CalibrationInputError(f"the rows outside fold {fold + 1} all have `sample_weight` 0: {method} "
                                        "has nothing to fit there; give fewer folds or more weighted rows.")
        model = RECALIBRATORS[method]()
        model.set_params(input=kind)
        try:
            model.fit(x[~held_out], labels[~held_out], sample_weight=weights[~held_out])
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"{method} could not be fitted with the row weights: {exc}") from None
        out[held_out] = model.predict_proba(x[held_out])
    protocol = (f"{n_folds}-fold cross-fitting on {n_rows:,} rows (stratified folds, seed {seed}): every "
                f"recalibrated prediction comes from a map fitted, weighted by the row weights, on the other "
                f"{n_folds - 1} folds; the net benefit weights all {n_rows:,} out-of-fold predictions.")
    return out, protocol


def _paired_means(values: NDArray[np.float64], n_boot: int, seed: int, alpha: float,
                  weights: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Percentile bootstrap interval of the column means of ``values`` (N, C), resampling rows (paired columns).

    With ``weights`` (checked) each resample draws the rows of positive weight with replacement and carries
    their weights (the weighted bootstrap of :func:`calib_core.bootstrap_ci`): its value is the weighted mean.
    """
    if weights is not None:
        positive = weights > 0
        values, weights = values[positive], weights[positive]
    n_rows = values.shape[0]
    if n_boot == 0:
        nan = np.full(values.shape[1], np.nan)
        return nan, nan.copy()
    means = []
    for _, _, indices in index_blocks(np.random.default_rng(seed), n_rows, n_boot):
        counts = row_weights(indices, n_rows)[:, :n_rows].astype(np.float64)
        if weights is not None:
            counts *= weights
            means.append(counts @ values / counts.sum(axis=1, keepdims=True))
            continue
        means.append(counts @ values / n_rows)
    stacked = np.concatenate(means)
    return np.quantile(stacked, alpha / 2, axis=0), np.quantile(stacked, 1 - alpha / 2, axis=0)


@dataclass(frozen=True)
class DecisionCurve:
    """Net benefit before and after recalibration (:func:`decision_curve`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per threshold: ``threshold``, ``treat_all``, ``treat_none``,
        ``before``, ``before_low``, ``before_high``, ``after``, ``after_low``,
        ``after_high``, ``gain`` (after - before), ``gain_low``, ``gain_high``.
    method : str
        The recalibration method (cross-fitted).
    protocol : str
        How "after" was obtained, in words.
    positive_class : int
    n, n_boot, seed : int
    alpha : float
    sum_weight : float or None
        The summed row weight W of a weighted curve (None: unweighted).
    """

    table: pd.DataFrame
    method: str
    protocol: str
    positive_class: int
    n: int
    n_boot: int
    seed: int
    alpha: float
    sum_weight: float | None = None


def decision_curve(probs: ArrayLike, labels: ArrayLike, thresholds: ArrayLike | None = None, *,
                   logits: ArrayLike | None = None, method: str = "Temperature scaling",
                   positive_class: int | None = None, n_folds: int = 5, n_boot: int = 200, seed: int = 0,
                   alpha: float = 0.05, sample_weight: ArrayLike | None = None) -> DecisionCurve:
    """The decision curve of the current and of the recalibrated predictions, with paired bootstrap intervals.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    thresholds : array_like, optional
        Default 0.01, 0.02, ..., 0.99.
    logits : array_like of shape (N, K), optional
        The model's logits, when it has them (the method then works on them).
    method : str, default "Temperature scaling"
        A key of :data:`calib_core.RECALIBRATORS`.
    positive_class : int, optional
        The class acted on (default 1; required for K > 2: one-vs-rest of
        the K-class recalibration).
    n_folds, n_boot, seed, alpha :
        Cross-fitting folds, bootstrap resamples (0: no intervals), their seed, the intervals' level.
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies): the net benefit of both curves and treat-all
        are weighted (:func:`net_benefit`), each fold's map is fitted with the
        weights (``fit(sample_weight=)``) and the bootstrap carries them.
        Whole-number weights give the repeated rows' "before" and treat-all;
        "after" is cross-fitted on the rows, not on their copies (copies of one
        row would fall in different folds, so that a map would be scored on a
        copy of a row it was fitted on).

    Returns
    -------
    DecisionCurve

    Notes
    -----
    "After" is out of fold: each row is recalibrated by ``method`` fitted on
    the other folds (:func:`calib_core.recalibration.compare.fit_method`
    under ``Protocol("cross_fit")``, as on the Recalibration page and in
    :func:`calib_core.recalibration.fixable.fixable_part`), so the gain is not
    the optimism of a map fitted on the rows it is scored on. The intervals
    resample rows once for both curves (paired), so the gain's interval is
    that of the difference.
    """
    probs, labels, outcome, positive = _binary(probs, labels, positive_class)
    thresholds = DEFAULT_THRESHOLDS if thresholds is None else _check_thresholds(thresholds)
    n_boot = check_count(n_boot, "n_boot", 0)
    alpha = check_alpha(alpha)
    weights = check_sample_weight(sample_weight, labels.size)
    after, protocol = _cross_fitted(probs, labels, logits, method, n_folds, seed, weights)
    before_rows = _contributions(probs[:, positive], outcome, thresholds)
    after_rows = _contributions(after[:, positive], outcome, thresholds)
    stacked = np.hstack([before_rows, after_rows, after_rows - before_rows])
    low, high = _paired_means(stacked, n_boot, seed, alpha, weights)
    means = _mean(stacked, weights)
    count = thresholds.size
    table = pd.DataFrame({"threshold": thresholds,
                          "treat_all": _mean(_contributions(np.ones_like(outcome), outcome, thresholds), weights),
                          "treat_none": np.zeros(count)})
    for index, name in enumerate(("before", "after", "gain")):
        part = slice(index * count, (index + 1) * count)
        table[name], table[f"{name}_low"], table[f"{name}_high"] = means[part], low[part], high[part]
    return DecisionCurve(table, method, protocol, positive, int(labels.size), n_boot, int(seed), alpha,
                         None if weights is None else float(weights.sum()))


# ----------------------------------------------------------------------------- regret

def threshold_costs(threshold: float) -> NDArray[np.float64]:
    """The cost matrix of acting at a threshold, in units of true positives (the net benefit's units).

    Rows are actions (0: do not act, 1: act), columns the true class:
    acting on class 1 gains one true positive (cost -1), acting on class 0
    costs ``t / (1 - t)``, not acting costs nothing. Its Bayes action on a
    calibrated probability q is "act when q > t"; its mean realised cost is
    minus the net benefit.
    """
    t = float(_check_thresholds([threshold])[0])
    return np.array([[0.0, 0.0], [t / (1.0 - t), -1.0]])


def _check_costs(cost_matrix: ArrayLike, n_classes: int) -> NDArray[np.float64]:
    costs = np.asarray(cost_matrix, dtype=np.float64)
    if costs.ndim != 2 or costs.shape[1] != n_classes or costs.shape[0] < 2 or not np.isfinite(costs).all():
        raise CalibrationInputError(
            f"`cost_matrix` must be a finite (actions, {n_classes}) array with at least two actions: the cost "
            f"of each action (row) when the true class is each column; got shape {costs.shape}.")
    return costs


@dataclass(frozen=True)
class RecalibrationValue:
    """What acting on recalibrated rather than current probabilities saves (:func:`recalibration_value`).

    Attributes
    ----------
    value : float
        Expected regret of the current probabilities: mean cost of acting on
        them minus mean cost of acting on the recalibrated ones, per ``per``
        decisions, in the cost matrix's units (positive: recalibration helps).
    ci_low, ci_high : float
        Paired percentile bootstrap interval of ``value`` (NaN without resamples).
    cost_before, cost_after : float
        Mean cost per ``per`` decisions of each.
    changed : float
        Share of rows whose action changes.
    per : int
    units : str
    method, protocol : str
    n, n_boot : int
    alpha : float
    weighted : bool
        Whether the rows carried weights (the decisions are then counted by weight).
    """

    value: float
    ci_low: float
    ci_high: float
    cost_before: float
    cost_after: float
    changed: float
    per: int
    units: str
    method: str
    protocol: str
    n: int
    n_boot: int
    alpha: float
    weighted: bool = False

    def sentence(self) -> str:
        """One plain sentence in the user's units (no Markdown)."""
        interval = (f" ({1 - self.alpha:.0%} interval {self.ci_low:.3g} to {self.ci_high:.3g})"
                    if math.isfinite(self.ci_low) else "")
        counted = " (each row counted by its weight)" if self.weighted else ""
        head = (f"Recalibration ({self.method}, cross-fitted) is worth {self.value:.3g} {self.units} per "
                f"{self.per:,} decisions{counted}{interval}; it changes {self.changed:.1%} of the decisions.")
        if not math.isfinite(self.ci_low):
            return head
        if self.ci_low > 0:
            return head + " The gain is beyond bootstrap noise."
        if self.ci_high < 0:
            return head + " Recalibrating makes these decisions worse."
        return head + " The interval includes no change."


def recalibration_value(probs: ArrayLike, labels: ArrayLike, *, threshold: float | None = None,
                        cost_matrix: ArrayLike | None = None, units: str | None = None,
                        logits: ArrayLike | None = None, method: str = "Temperature scaling",
                        positive_class: int | None = None, per: int = 1000, n_folds: int = 5, n_boot: int = 200,
                        seed: int = 0, alpha: float = 0.05,
                        sample_weight: ArrayLike | None = None) -> RecalibrationValue:
    """The expected regret of acting on the current probabilities instead of recalibrated ones, per ``per`` decisions.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    threshold : float, optional
        Act when P(positive class) >= threshold (binary, or one-vs-rest with
        ``positive_class``); the value is then in net true positives (the net benefit's units).
    cost_matrix : array_like of shape (A, K), optional
        Cost of action a (row) when the true class is k (column), in the
        user's units; each row acts by the action of least expected cost under
        its probabilities (ties: the lowest action index). Give exactly one of
        ``threshold`` and ``cost_matrix``.
    units : str, optional
        Name of the cost matrix's units (shown in the sentence).
    logits, method, positive_class, n_folds, n_boot, seed, alpha :
        As :func:`decision_curve`.
    per : int, default 1000
        Decisions the value is counted over.
    sample_weight : array_like of shape (N,), optional
        Row weights, as :func:`decision_curve`: the mean costs, the share of
        changed decisions and the bootstrap are weighted (per ``per`` units of
        weight), each fold's map is fitted with the weights.

    Returns
    -------
    RecalibrationValue

    Notes
    -----
    With cost matrix C, row i's action is :math:`a(q_i) = \\arg\\min_a \\sum_k C_{ak} q_{ik}`
    ([Elkan2001]_: the optimal action when q is calibrated). The value is

    .. math:: \\frac{\\text{per}}{N} \\sum_i \\big[C_{a(p_i), y_i} - C_{a(\\tilde p_i), y_i}\\big],

    with :math:`\\tilde p` the cross-fitted recalibrated predictions (see
    :func:`decision_curve`): the realised cost difference on labelled rows,
    an unbiased estimate of the expected regret of not recalibrating. For a
    threshold it is ``per`` times the gain in net benefit (``>= t`` acts, as
    :func:`net_benefit`). The interval is the paired percentile bootstrap of
    the row-wise differences.
    """
    if (threshold is None) == (cost_matrix is None):
        raise CalibrationInputError("give exactly one of `threshold` and `cost_matrix`.")
    per = check_count(per, "per")
    n_boot = check_count(n_boot, "n_boot", 0)
    alpha = check_alpha(alpha)
    if threshold is not None:
        probs, labels, outcome, positive = _binary(probs, labels, positive_class)
        weights = check_sample_weight(sample_weight, labels.size)
        t = _check_thresholds([threshold])
        after, protocol = _cross_fitted(probs, labels, logits, method, n_folds, seed, weights)
        cost_before = -_contributions(probs[:, positive], outcome, t)[:, 0]
        cost_after = -_contributions(after[:, positive], outcome, t)[:, 0]
        changes = (probs[:, positive] >= t[0]) != (after[:, positive] >= t[0])
        units = units or "net true positives"
    else:
        probs, labels = check_probs_labels(probs, labels)
        weights = check_sample_weight(sample_weight, labels.size)
        costs = _check_costs(cost_matrix, probs.shape[1])
        after, protocol = _cross_fitted(probs, labels, logits, method, n_folds, seed, weights)
        action_before = np.argmin(probs @ costs.T, axis=1)
        action_after = np.argmin(after @ costs.T, axis=1)
        cost_before, cost_after = costs[action_before, labels], costs[action_after, labels]
        changes = action_before != action_after
        units = units or "cost units"
    difference = (cost_before - cost_after) * per
    low, high = _paired_means(difference[:, None], n_boot, seed, alpha, weights)
    if weights is None:
        value, before, after_cost, changed = difference.mean(), cost_before.mean(), cost_after.mean(), np.mean(changes)
    else:
        value, before, after_cost, changed = _mean(np.c_[difference, cost_before, cost_after, changes], weights)
    return RecalibrationValue(float(value), float(low[0]), float(high[0]), float(before * per),
                              float(after_cost * per), float(changed), per, str(units), method, protocol,
                              int(labels.size), n_boot, alpha, weights is not None)
