"""Which method to recommend, and whether it beats the runner-up beyond bootstrap noise.

Built on :mod:`calib_core.recalibration.compare` (the fits, the paired
bootstrap, the results table):

* :func:`ranked_candidates` -- the methods that lower the ECE without raising
  the Brier score (a proper score: calibration and sharpness together), best
  (lowest Brier score) first; the cautionary baseline is never one.
* :func:`runner_up_difference` -- the paired bootstrap interval of the Brier
  score of the runner-up minus the recommended method's, on the resamples of
  :func:`~calib_core.recalibration.compare.intervals`.
* :func:`paired_differences` -- the same interval for every other candidate
  against the best one (which of them are tied with it within noise).
* :func:`recommend` -- a :class:`Recommendation`: the one object the
  Recalibration page, both HTML reports and the CLI (``--method auto``)
  render their verdict from (:meth:`Recommendation.verdict`, Markdown or plain text).
* :func:`compare_methods` -- the page's whole comparison in one call (the
  reports and ``calib-core recalibrate --method auto`` make theirs with it).

The advice (issue 27): the best method is the one with the lowest Brier
score on the evaluation rows; the methods *tied* with it are those whose
paired interval of (their Brier score - the best one's) reaches 0. When the
best one beats every other candidate beyond noise it is advised; otherwise
the simplest of the tied methods is (fewest parameters at K,
:func:`parameter_count`; equal counts: the lower Brier score). Point
estimates flip with the rows (the sidebar's *Rows*, the seed of a random
split), ties within noise do not have to: the same rows evaluated by another
protocol get the same advice unless one method pulls away beyond noise.

Examples
--------
>>> import numpy as np
>>> from calib_core import softmax
>>> from calib_core.recalibration.recommendation import compare_methods
>>> rng = np.random.default_rng(0)
>>> labels = rng.integers(0, 3, 600)
>>> logits = 3 * (rng.normal(size=(600, 3)) + 1.5 * np.eye(3)[labels])
>>> found = compare_methods(softmax(logits), labels, logits=logits, n_boot=50,
...                         methods=("Temperature scaling", "Vector scaling"))
>>> found.recommendation.method, found.recommendation.runner_up
('Temperature scaling', 'Vector scaling')
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from calib_core.inference.intervals import interval_from_samples
from calib_core.metrics import get_metric
from calib_core.recalibration import RECALIBRATORS, defaults
from calib_core.recalibration.compare import (CAUTIONARY, METRIC_KEYS, EvaluationSet, MethodFit, Protocol, Sampler,
                                              _excludes_zero, _fmt, bootstrap_seconds, effective_protocol,
                                              evaluation_set, fit_method, intervals, model_input, resampled_samples,
                                              results_table, split_column_ready)
from calib_core.recalibration.published import published_standing
from calib_core.validation import CalibrationInputError

__all__ = ["Comparison", "PairedDifference", "Recommendation", "compare_methods", "paired_differences",
           "parameter_count", "ranked_candidates", "recommend", "runner_up_difference", "score_keys"]


def score_keys(keys: Sequence[str]) -> tuple[str, str, str | None]:
    """The keys of the ECE, the Brier score and the accuracy among a comparison's metric ``keys``.

    The recommendation ranks by these roles. A confidence model's set (the ``conf_*`` entries,
    :mod:`calib_core.recalibration.confidence`) has no accuracy: recalibrating a stated confidence changes no
    answer, so no accuracy change can happen and none is reported (``None``).
    """
    if "conf_ece" in keys:
        return "conf_ece", "conf_brier", None
    return "ece", "brier", "accuracy"


def _roles(table: pd.DataFrame) -> tuple[str, str, str | None]:
    return score_keys(set(table["key"]))


def ranked_candidates(table: pd.DataFrame, *, cautionary: str = CAUTIONARY) -> list[str]:
    """The methods that may be recommended, best first.

    A candidate lowers the ECE without raising the Brier score (a proper
    score: calibration and sharpness together); candidates are ordered by
    their Brier score after recalibration (ties: the lower ECE). The
    cautionary baseline is never a candidate.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`results_table`.
    cautionary : str
        The method never recommended.
    """
    if table.empty:
        return []
    ece, brier, _ = _roles(table)
    wide = table.pivot(index="method", columns="key", values="delta")
    after = table.pivot(index="method", columns="key", values="after")
    candidates = [m for m in wide.index if m != cautionary and wide.loc[m, ece] < 0 and wide.loc[m, brier] <= 0]
    order = {m: i for i, m in enumerate(dict.fromkeys(table["method"]))}  # the table's order breaks exact ties
    return sorted(candidates, key=lambda m: (after.loc[m, brier], after.loc[m, ece], order[m]))


@dataclass(frozen=True)
class PairedDifference:
    """How much lower the recommended method's Brier score is than the runner-up's, on the same resamples.

    Attributes
    ----------
    winner, runner_up : str
        The first two of :func:`ranked_candidates`.
    key : str
        The metric compared (``"brier"``: the score the recommendation ranks by).
    estimate : float
        ``runner_up's value - winner's value`` on the evaluation rows (at least 0).
    low, high : float
        Its ``1 - alpha`` paired bootstrap interval: the same resamples of
        the evaluation rows scored under both methods, differenced per
        resample, the interval made as the metric's registry entry declares
        (percentiles for the Brier score). NaN when the resamples were not finite.
    n_boot : int
    alpha : float
    """

    winner: str
    runner_up: str
    key: str
    estimate: float
    low: float
    high: float
    n_boot: int
    alpha: float

    @property
    def beyond_noise(self) -> bool | None:
        """Whether the interval excludes 0 (``None`` without a finite interval)."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return None
        return self.low > 0 or self.high < 0


#: Free parameters of each parametric map at K classes (by the recalibrator's JSON ``method`` name): the rule
#: that decides which of the methods tied within noise is the simplest (:func:`parameter_count`).
PARAMETER_COUNTS = {
    "temperature_scaling": lambda k: 1,                          # T (Guo et al. 2017)
    "metric_optimized_temperature": lambda k: 1,                 # T
    "ensemble_temperature_scaling": lambda k: 3,                 # T and 3 weights on the simplex (Zhang et al. 2020)
    "platt_scaling": lambda k: 2 if k == 2 else 2 * k,           # a, b per one-vs-rest map
    "quadratic_scaling": lambda k: 3 if k == 2 else 3 * k,       # a, b, c
    "beta_calibration": lambda k: 3 if k == 2 else 3 * k,        # a, b, m per one-vs-rest map
    "vector_scaling": lambda k: 2 * k,                           # diag(W), b
    "structured_vector_scaling": lambda k: 2 * k + 1,            # T, v, b (Berta et al. 2026)
    "matrix_scaling": lambda k: k * k + k,                       # W, b
    "dirichlet_calibration": lambda k: k * k + k,                # W, b (Kull et al. 2019)
    "structured_matrix_scaling": lambda k: k * k + k + 1,        # T, diag, off-diagonal, b
}


def parameter_count(method: str, n_classes: int) -> float:
    """The number of free parameters of ``method``'s map at ``n_classes`` classes: how simple the tie rule finds it.

    Parametric maps count their fitted parameters (:data:`PARAMETER_COUNTS`:
    temperature scaling 1, vector scaling ``2K``, structured vector scaling
    ``2K + 1``, matrix and Dirichlet scaling ``K^2 + K`` ...). Maps whose size
    grows with the data (isotonic steps, histogram bins, spline knots,
    Venn-Abers tables, the calibrated map, their floored twins) and methods
    the rule does not know count as ``inf``: more complex than any parametric map.

    Parameters
    ----------
    method : str
        A display name of :data:`calib_core.RECALIBRATORS`.
    n_classes : int
        K.

    Examples
    --------
    >>> parameter_count("Temperature scaling", 10), parameter_count("Dirichlet calibration", 10)
    (1, 110)
    """
    cls = RECALIBRATORS.get(method)
    count = PARAMETER_COUNTS.get(getattr(cls, "method", None))
    return math.inf if count is None else count(int(n_classes))


def _paired(ev: EvaluationSet, fits: Mapping[str, MethodFit], winner: str, others: Sequence[str], *, n_boot: int,
            seed: int, alpha: float, samples: Sampler | None, key: str) -> tuple[PairedDifference, ...]:
    """The paired interval of ``metric(other) - metric(winner)`` for each of ``others``, on the same resamples."""
    if samples is None:
        def samples(name: str, probs: np.ndarray) -> dict[str, np.ndarray]:
            return resampled_samples(ev, probs, n_boot=n_boot, seed=seed)
    spec = get_metric(key)
    best = samples(winner, fits[winner].probs)[key]
    out = []
    for other in others:
        margin = fits[other].after[key] - fits[winner].after[key]
        low, high = interval_from_samples(spec.interval, margin, samples(other, fits[other].probs)[key] - best,
                                          alpha, signed=True)
        out.append(PairedDifference(winner, other, key, float(margin), float(low), float(high), int(n_boot),
                                    float(alpha)))
    return tuple(out)


def paired_differences(ev: EvaluationSet, fits: Mapping[str, MethodFit], table: pd.DataFrame, *, n_boot: int,
                       seed: int, alpha: float = 0.05, samples: Sampler | None = None,
                       cautionary: str = CAUTIONARY) -> tuple[PairedDifference, ...]:
    """The paired bootstrap interval of every other candidate's Brier score minus the best one's.

    As :func:`runner_up_difference` (whose result is the first of these),
    for each candidate of :func:`ranked_candidates` after the first, in rank
    order: those whose interval reaches 0 are tied with the best method within
    noise (:func:`recommend`). The evaluation rows are the protocol's held-out
    rows (out of fold under cross-fitting), never the rows a map was fitted on
    unless the protocol is in-sample.

    Returns
    -------
    tuple of PairedDifference
        Empty with fewer than two candidates or no resamples.
    """
    ranked = ranked_candidates(table, cautionary=cautionary)
    if len(ranked) < 2 or int(n_boot) <= 0:
        return ()
    return _paired(ev, fits, ranked[0], ranked[1:], n_boot=n_boot, seed=seed, alpha=alpha, samples=samples,
                   key=_roles(table)[1])


def runner_up_difference(ev: EvaluationSet, fits: Mapping[str, MethodFit], table: pd.DataFrame, *, n_boot: int,
                         seed: int, alpha: float = 0.05, samples: Sampler | None = None,
                         cautionary: str = CAUTIONARY) -> PairedDifference | None:
    """The paired bootstrap interval of the Brier score of the runner-up minus the recommended method.

    Both methods' recalibrated evaluation rows are resampled with the same
    ``seed`` (the same rows in resample ``b``, as :func:`intervals` pairs
    before and after), so ``brier_runner_up_b - brier_winner_b`` is the
    bootstrap distribution of the margin (Efron & Tibshirani 1993, section
    6.2, paired comparison of two statistics on one sample).

    Parameters
    ----------
    ev : EvaluationSet
    fits : mapping of str to MethodFit
    table : pandas.DataFrame
        :func:`results_table` of ``fits``: the winner and the runner-up are
        the first two of :func:`ranked_candidates`.
    n_boot, seed : int
        Resamples and their seed (those of :func:`intervals`, so a cached
        sampler returns the same resamples).
    alpha : float
        A ``1 - alpha`` interval.
    samples : callable, optional
        As in :func:`intervals` (default
        :func:`~calib_core.recalibration.compare.resampled_samples`: the
        weighted bootstrap when ``ev`` has row weights).
    cautionary : str
        The method never recommended.

    Returns
    -------
    PairedDifference or None
        ``None`` with fewer than two candidates or no resamples.
    """
    ranked = ranked_candidates(table, cautionary=cautionary)
    if len(ranked) < 2 or int(n_boot) <= 0:
        return None
    return _paired(ev, fits, ranked[0], ranked[1:2], n_boot=n_boot, seed=seed, alpha=alpha, samples=samples,
                   key=_roles(table)[1])[0]


@dataclass(frozen=True)
class Recommendation:
    """The advice: which fix to use, and whether the best method beats the others beyond bootstrap noise.

    The page, both HTML reports and the CLI (``--method auto``) render their
    verdict from this one object (:meth:`verdict` = :meth:`sentence` and
    :meth:`comparison`), in Markdown or plain text.

    Attributes
    ----------
    method : str or None
        The advised method (``None``: no fit, or none lowers both the ECE and
        the Brier score): :attr:`best`, unless another candidate is tied with
        it within noise, then the simplest of :attr:`tied` (:func:`recommend`).
    runner_up : str or None
        The candidate after :attr:`best` in Brier score (``None`` when there is no second).
    status : {"recommended", "none_helps", "no_fit"}
    before, after : dict of str to float
        ``"ece"``, ``"brier"`` and ``"accuracy"`` before, and after ``method`` (empty without one); a
        confidence model's (:func:`score_keys`) hold its ECE and Brier score of confidence vs correctness and no
        ``"accuracy"``: its answers, hence its accuracy, cannot change.
    brier_beyond_noise : bool or None
        Whether the paired interval of the method's own Brier change excludes 0 (``None`` without intervals).
    runner_up_brier : float or None
        The runner-up's Brier score after recalibration.
    pair : PairedDifference or None
        The runner-up's margin over :attr:`best` with its interval (``None`` without intervals).
    best : str or None
        The candidate with the lowest Brier score on the evaluation rows.
    tied : tuple of str
        :attr:`best` and every candidate whose paired interval against it
        reaches 0, in Brier order (empty without intervals).
    pairs : tuple of PairedDifference
        Every other candidate against :attr:`best` (:func:`paired_differences`).
    n_classes : int or None
        K, for the tie rule's parameter counts and the published standing.
    """

    method: str | None
    runner_up: str | None
    status: str
    before: dict
    after: dict
    brier_beyond_noise: bool | None = None
    runner_up_brier: float | None = None
    pair: PairedDifference | None = None
    best: str | None = None
    tied: tuple[str, ...] = ()
    pairs: tuple[PairedDifference, ...] = ()
    n_classes: int | None = None

    def _name(self, method: str, markdown: bool) -> str:
        return f"**{method}**" if markdown else method

    def sentence(self, model_name: str, *, markdown: bool = True) -> str:
        """The advice: which method to use, its ECE and Brier score before and after.

        ``model_name`` is inserted as given (escape a user-supplied name
        first for Markdown or HTML); ``markdown=False``: no emphasis marks.
        """
        if self.status == "no_fit":
            return f"{model_name}: no method could be fitted, so there is no verdict."
        if self.status == "none_helps":
            return (f"{model_name}: no method lowers both the ECE and the Brier score on the evaluation rows; "
                    "keep the model as it is, or collect more calibration rows and try again.")
        best = self._name(self.method, markdown)
        accuracy_text = ""
        if "accuracy" in self.after:  # a confidence model has none: its answers do not change
            accuracy_change = self.after["accuracy"] - self.before["accuracy"]
            accuracy_text = (", accuracy unchanged" if abs(accuracy_change) < 1e-12
                             else f", accuracy {accuracy_change:+.1%}")
        noise = self.brier_beyond_noise
        noise_text = ("" if noise is None else "; the Brier improvement is beyond bootstrap noise" if noise
                      else "; but the Brier change is within bootstrap noise")
        how = "helps most" if self.best in (None, self.method) else "is advised"
        return (f"{model_name}: {best} {how}: ECE {_fmt(self.before['ece'])} → {_fmt(self.after['ece'])}, "
                f"Brier score {_fmt(self.before['brier'])} → {_fmt(self.after['brier'])}"
                f"{accuracy_text}{noise_text}.")

    def comparison(self, *, markdown: bool = True) -> str | None:
        """Whether the best method beats the runner-up beyond noise, the tie rule's choice, the published standing.

        ``None`` without a recommendation. The interval is that of
        :class:`PairedDifference` (runner-up's Brier score minus the best one's).
        """
        if self.method is None:
            return None
        text = self._noise_text(markdown)
        if self.n_classes is not None:
            named = [m for m in (self.method, self.best, self.runner_up) if m is not None]
            text += " " + published_standing(named, self.n_classes)
        return text

    def _noise_text(self, markdown: bool) -> str:
        top = self.best or self.method
        best = self._name(top, markdown)
        if self.runner_up is None:
            return (f"{best} is the only method that lowers both the ECE and the Brier score, so there is no "
                    "runner-up to compare it with.")
        other = self._name(self.runner_up, markdown)
        pair = self.pair
        if pair is None or pair.beyond_noise is None:
            margin = self.runner_up_brier - self.after["brier"]  # without intervals the advice is the best one
            return (f"Runner-up: {other} (Brier score {_fmt(self.runner_up_brier)}, {margin:.4f} higher); "
                    "whether the recommended method beats it beyond noise needs the bootstrap intervals.")
        interval = f"[{_signed(pair.low)}, {_signed(pair.high)}]"
        level = f"{1 - pair.alpha:.0%} paired bootstrap interval, {pair.n_boot:,} resamples"
        if pair.beyond_noise and pair.low > 0:
            return (f"{best} beats {other} beyond bootstrap noise: its Brier score is lower by {pair.estimate:.4f} "
                    f"{interval} ({level}), so it is advised whatever its number of parameters.")
        head = (f"{best} has the lowest Brier score but does not beat {other} beyond bootstrap noise: Brier score "
                f"difference {pair.estimate:.4f} {interval} ({level}); another protocol, seed or set of rows may "
                "rank them the other way")
        if not self.tied:  # only the runner-up's pair was given: the tie rule needs every candidate's
            return f"{head}, and either is a sound choice."
        k = self.n_classes
        counts = ", ".join(f"{m} ({_count_text(parameter_count(m, k))})" for m in self.tied) if k else \
            ", ".join(self.tied)
        advised = self._name(self.method, markdown)
        return (f"{head}. Tied within noise (paired interval reaching 0): {counts}. Tie rule: the "
                "tied method with the fewest parameters at this K is advised (maps that grow with the data count "
                f"as the most complex; equal counts: the lower Brier score): {advised}.")

    def verdict(self, model_name: str, *, markdown: bool = True) -> str:
        """The whole verdict: :meth:`sentence`, then :meth:`comparison` (what the page and ``--method auto`` show)."""
        comparison = self.comparison(markdown=markdown)
        sentence = self.sentence(model_name, markdown=markdown)
        return sentence if comparison is None else f"{sentence} {comparison}"


def _count_text(count: float) -> str:
    return "grows with the data" if math.isinf(count) else f"{count:,} parameter{'s' if count != 1 else ''}"


def _signed(value: float) -> str:
    """A difference of two Brier scores and its interval's ends: four decimals (margins are often below 0.001)."""
    return f"{value:+.4f}"


def recommend(table: pd.DataFrame, *, pair: PairedDifference | None = None,
              pairs: Sequence[PairedDifference] = (), n_classes: int | None = None,
              cautionary: str = CAUTIONARY) -> Recommendation:
    """The advised method of a results table, the best one, the runner-up, and whether they are tied within noise.

    The best method is the first of :func:`ranked_candidates`: among the
    methods that lower the ECE without raising the Brier score, the one with
    the lowest Brier score after recalibration (ties: the lower ECE). The
    cautionary baseline is never a candidate.

    With ``pairs`` (:func:`paired_differences`) the tie rule applies: the
    methods tied with the best one are those whose paired interval of
    (their Brier score - the best one's) reaches 0; the advised method is the
    tied one with the fewest parameters at K (:func:`parameter_count`; equal
    counts: the lower Brier score). A best method that beats every other
    candidate beyond noise is advised as it is. Without ``pairs`` (no
    intervals) the best method is advised and the verdict says that whether
    it beats the runner-up needs the intervals.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`results_table`.
    pair : PairedDifference, optional
        :func:`runner_up_difference` of the same table (ignored when it
        names other methods than the first two candidates; the first of
        ``pairs`` when those are given).
    pairs : sequence of PairedDifference
        :func:`paired_differences` of the same table (ignored unless they
        compare every other candidate with the best one, in rank order, with
        finite intervals).
    n_classes : int, optional
        K: required with ``pairs`` (the parameter counts depend on it); also
        selects the published standing cited in :meth:`Recommendation.comparison`.
    cautionary : str
        The method never recommended.

    Raises
    ------
    CalibrationInputError
        ``pairs`` without ``n_classes``.
    """
    if pairs and n_classes is None:
        raise CalibrationInputError("`n_classes` is needed with `pairs`: the tie rule counts parameters at K.")
    if table.empty:
        return Recommendation(None, None, "no_fit", {}, {}, n_classes=n_classes)
    before = table.drop_duplicates("key").set_index("key")["before"]
    roles = {role: key for role, key in zip(("ece", "brier", "accuracy"), _roles(table)) if key is not None}
    before_values = {role: float(before[key]) for role, key in roles.items()}
    ranked = ranked_candidates(table, cautionary=cautionary)
    if not ranked:
        return Recommendation(None, None, "none_helps", before_values, {}, n_classes=n_classes)
    after = table.pivot(index="method", columns="key", values="after")
    best = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    pairs = tuple(pairs)
    if [(p.winner, p.runner_up) for p in pairs] != [(best, m) for m in ranked[1:]] or \
            any(p.beyond_noise is None for p in pairs):
        pairs = ()
    if pairs:
        pair = pairs[0]
    if pair is not None and (pair.winner, pair.runner_up) != (best, runner_up):
        pair = None
    tied = (best, *(p.runner_up for p in pairs if not p.low > 0)) if pairs else ()
    method = min(tied, key=lambda m: (parameter_count(m, n_classes), tied.index(m))) if tied else best
    return Recommendation(method, runner_up, "recommended", before_values,
                          {role: float(after.loc[method, key]) for role, key in roles.items()},
                          _excludes_zero(table, method, roles["brier"]),
                          None if runner_up is None else float(after.loc[runner_up, roles["brier"]]), pair,
                          best, tied, pairs, None if n_classes is None else int(n_classes))


# ----------------------------------------------------------------------------- the whole comparison

@dataclass(frozen=True)
class Comparison:
    """One model's comparison, as the Recalibration page makes it (:func:`compare_methods`).

    Attributes
    ----------
    ev : EvaluationSet
    fits : dict of str to MethodFit
        Every method asked for, failed ones included.
    table : pandas.DataFrame
        :func:`results_table` with the intervals of :func:`intervals` (NaN without resamples).
    recommendation : Recommendation
        :func:`recommend` of ``table`` with the margin over the runner-up.
    n_boot, seed : int
        Resamples and seed of the intervals (``n_boot`` 0: none made).
    skipped_seconds : float or None
        The predicted time of the intervals when it was over the budget and
        they were left out (:func:`bootstrap_seconds`).
    """

    ev: EvaluationSet
    fits: dict
    table: pd.DataFrame
    recommendation: Recommendation
    n_boot: int
    seed: int
    skipped_seconds: float | None = None

    @property
    def ok_methods(self) -> list[str]:
        return [name for name, fit in self.fits.items() if fit.ok]

    @property
    def protocol_sentence(self) -> str:
        """The protocol sentence of the fits ("" when none was fitted)."""
        return next((fit.protocol for fit in self.fits.values() if fit.ok), "")


def compare_methods(probs: np.ndarray, labels: np.ndarray, *, logits: np.ndarray | None = None,
                    split: ArrayLike | None = None, split_names: Sequence[object] = (),
                    class_names: Sequence[str] | None = None, methods: Sequence[str] | None = None,
                    protocol: Protocol = Protocol(), n_boot: int = 200, seed: int = 0,
                    alpha: float = 0.05, boot_budget_seconds: float | None = None,
                    metrics: Sequence[str] = METRIC_KEYS, sample_weight: ArrayLike | None = None) -> Comparison:
    """Fit every method honestly, bootstrap every change, recommend one: the Recalibration page in one call.

    The same steps as the page (and the same numbers for the same settings):
    :func:`effective_protocol` (a random split when the ``split`` column
    cannot be used), :func:`evaluation_set`, :func:`fit_method` per method,
    :func:`intervals`, :func:`results_table`, :func:`paired_differences`
    and :func:`recommend` (the advice with the tie rule). The HTML report's recalibration section is made
    with it when no page handed it a comparison.

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Valid probabilities.
    labels : ndarray of shape (N,)
    logits : ndarray of shape (N, K), optional
        The methods receive them when given (:func:`model_input`).
    split : array-like of shape (N,), optional
        The file's split column.
    split_names : sequence
        Its distinct values (:func:`split_column_ready`).
    class_names : sequence of str, optional
    methods : sequence of str, optional
        Keys of :data:`calib_core.RECALIBRATORS`; default the page's first
        selection (:func:`calib_core.recalibration.defaults.default_methods` at K).
    protocol : Protocol
    n_boot, seed : int
        Resamples of the intervals and their seed (0: no intervals).
    alpha : float
    boot_budget_seconds : float, optional
        Leave the intervals out when their predicted time
        (:func:`bootstrap_seconds`) is above this (as the page does above a minute).
    metrics : sequence of str
        Registry keys of every number (default :data:`~calib_core.recalibration.compare.METRIC_KEYS`; a
        confidence model's set: :func:`calib_core.recalibration.confidence.compare_confidence`).
    sample_weight : array_like of shape (N,), optional
        Row weights (:func:`evaluation_set`): every fit takes the fitting
        rows' weights (each fold its own under cross-fitting), every metric,
        interval and paired difference weights the evaluation rows, and the
        bootstrap is the shared engine's weighted one
        (:func:`calib_core.inference.bootstrap.resampled_metrics`), so its
        resamples centre on the weighted estimates.

    Raises
    ------
    CalibrationInputError
        When the protocol cannot split the rows, or invalid weights.

    Notes
    -----
    Integer weights give the table and the recommendation of the rows
    repeated that many times (fits to the optimiser's tolerance, metrics
    exactly) when both are split alike: with the file's ``split`` column
    (the repeated rows carrying their row's split value), or in-sample. A
    random split or cross-fitting deals the repeated rows' copies into parts
    or folds of their own, so copies of one row can be fitted on and scored
    at once: another computation, whose numbers differ. The bootstrap
    intervals differ too: the weighted bootstrap resamples the N weighted
    rows, the repeated rows' bootstrap their copies one by one.
    """
    probs, labels = np.asarray(probs, dtype=np.float64), np.asarray(labels)
    if methods is None:
        methods = defaults.default_methods(probs.shape[1], defaults.DEFAULT_METHODS)
    used = effective_protocol(protocol, split_ready=split_column_ready(split_names))
    x, kind = model_input(probs, logits)
    ev = evaluation_set(x, probs, labels, used, input=kind, split=split, class_names=class_names, metrics=metrics,
                        sample_weight=sample_weight)
    fits = {method: fit_method(method, x, labels, ev) for method in methods}
    ok = {name: fit for name, fit in fits.items() if fit.ok}
    skipped = None
    if n_boot and ok and boot_budget_seconds is not None:
        predicted = bootstrap_seconds(ev, int(n_boot), len(ok))
        if predicted > boot_budget_seconds:
            skipped, n_boot = predicted, 0
    cache: dict[str, dict[str, np.ndarray]] = {}

    def samples(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
        if name not in cache:
            cache[name] = resampled_samples(ev, values, n_boot=n_boot, seed=seed)
        return cache[name]

    interval_table = intervals(ev, ok, n_boot=n_boot, seed=seed, alpha=alpha, samples=samples) \
        if n_boot and ok else None
    table = results_table(ev, fits, interval_table)
    pairs = paired_differences(ev, ok, table, n_boot=n_boot, seed=seed, alpha=alpha, samples=samples) \
        if n_boot and ok else ()
    return Comparison(ev, fits, table, recommend(table, pairs=pairs, n_classes=probs.shape[1]), int(n_boot),
                      int(seed), skipped)
