"""Selective prediction: how well a confidence ranks right answers above wrong ones, and when to abstain.

Every function takes a confidence file's two arrays, ``confidence`` in [0, 1]
and ``correct`` in {0, 1} (checked once by
:func:`calib_core.validation.check_confidence_correct`); a K-class model
enters through its top label (``confidence = max_k p_k``, ``correct =
argmax == label``; :func:`calib_core.metrics.binned.top_label`).

Ties. Verbalised confidences come in steps of 5 or 10 %, so many items share
one value. One rule throughout: **tied items enter together**. A threshold
keeps all of a tie group or none of it (:func:`risk_coverage`,
:func:`coverage_at_risk`, :func:`abstention_threshold`), and a quantity
defined on "the k most confident items" takes its expected value over a
random order inside the tie group that straddles k (:func:`aurc`,
:func:`augrc`, :func:`selective_risk`): inside a group of m items with e
errors, each item adds e/m errors. Nothing depends on the order of the rows.

References
----------
Geifman, Y. & El-Yaniv, R. (2017). Selective classification for deep neural
networks. NeurIPS. (risk-coverage curve, section 2; the SGR bound, section 3.)
Geifman, Y., Uziel, G. & El-Yaniv, R. (2019). Bias-reduced uncertainty
estimation for deep neural classifiers. ICLR. (AURC and E-AURC.)
Traub, J., Bungert, T. J., Lüth, C. T., Baumgartner, M., Maier-Hein, K. H.,
Maier-Hein, L. & Jäger, P. F. (2024). Overcoming common flaws in the
evaluation of selective classification systems. NeurIPS. (AUGRC.)
Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I. & Lei, L. (2021).
Learn then Test: calibrating predictive algorithms to achieve risk control.
arXiv:2110.01052. (p-values of risk hypotheses, family-wise error control.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calib_core.validation import (CalibrationInputError, check_choice, check_confidence_correct, check_fraction,
                                   check_sample_weight, integer_weights, repeat_rows)

__all__ = ["AbstentionThreshold", "RiskCoverage", "THRESHOLD_GRID", "abstention_threshold", "aurc",
           "auroc_correct", "augrc", "coverage_at_risk", "coverage_places", "eaurc", "expected_errors", "risk_at_places",
           "risk_coverage", "selective_risk", "tie_groups", "weighted_confidence_correct", "weighted_places"]


# ----------------------------------------------------------------------------- the ranking, once

def tie_groups(confidence: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The distinct confidences, highest first, and each row's group among them (checked input)."""
    values, inverse = np.unique(confidence, return_inverse=True)
    return values[::-1], values.size - 1 - inverse


def _groups(confidence: NDArray[np.float64], correct: NDArray[np.float64],
            weights: NDArray[np.float64] | None = None):
    """Tie groups from the most confident down: (distinct values, sizes, errors), each of shape (G,).

    With ``weights`` a group's size and errors are summed weights.
    """
    values, group = tie_groups(confidence)
    sizes = np.bincount(group, weights=weights, minlength=values.size)
    errors = np.bincount(group, weights=1.0 - correct if weights is None else (1.0 - correct) * weights,
                         minlength=values.size)
    return values, sizes, errors


def weighted_confidence_correct(confidence: ArrayLike, correct: ArrayLike, sample_weight: ArrayLike | None
                                ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
    """Checked ``(confidence, correct, weights)``: without weights ``weights`` is None; with them the rows of
    weight 0 are left out (a weight is a frequency: whole-number weights are the repeated rows,
    ``docs/weights.md``)."""
    confidence, correct = check_confidence_correct(confidence, correct)
    weights = check_sample_weight(sample_weight, confidence.size)
    if weights is None:
        return confidence, correct, None
    keep = weights > 0
    return confidence[keep], correct[keep], weights[keep]


def _repeated(confidence: ArrayLike, correct: ArrayLike, sample_weight: ArrayLike | None,
              name: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Checked arrays, with whole-number ``sample_weight`` the rows repeated (a ranking area is defined on the
    repeated items: ``E_k`` counts items one by one); other weights raise CalibrationInputError saying why."""
    confidence, correct = check_confidence_correct(confidence, correct)
    weights = check_sample_weight(sample_weight, confidence.size)
    if weights is None:
        return confidence, correct
    return repeat_rows(weights, confidence, correct, metric=f"`{name}`")  # type: ignore[return-value]


def weighted_places(coverages: ArrayLike, total: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """:func:`coverage_places` on the scale of a summed weight W (an array of them: one row per W):
    ``clip(ceil(coverage W), min(1, W), W)``; for whole-number weights the repeated rows' places."""
    levels = _check_levels(coverages, "coverages")
    total = np.asarray(total, dtype=np.float64)[..., None]
    return np.clip(np.ceil(levels * total - 1e-9), np.minimum(1.0, total), total)


def _expected_errors(confidence: NDArray[np.float64], correct: NDArray[np.float64]) -> NDArray[np.float64]:
    """``E_k`` for k = 1..N on checked arrays (see :func:`expected_errors`)."""
    _, sizes, errors = _groups(confidence, correct)
    group = np.repeat(np.arange(sizes.size), sizes)  # the tie group of the k-th most confident place
    before = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # places above each group
    errors_before = np.concatenate([[0.0], np.cumsum(errors)[:-1]])
    inside = np.arange(1, group.size + 1) - before[group]  # j = 1..m inside the group
    return errors_before[group] + inside * (errors / sizes)[group]


def expected_errors(confidence: ArrayLike, correct: ArrayLike) -> NDArray[np.float64]:
    """Expected number of errors among the k most confident items, for k = 1..N, tied items entering together.

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Stated confidence in [0, 1].
    correct : array_like of shape (N,)
        1 where the item was right, 0 where wrong.

    Returns
    -------
    ndarray of shape (N,)
        ``E_k``. Sort by confidence, highest first, into tie groups; if the
        k-th place is the j-th place of a group of m items with e errors and
        ``E_before`` errors above the group, ``E_k = E_before + j e / m``:
        the expected value over a uniformly random order inside each group.

    Raises
    ------
    CalibrationInputError
        Invalid input (:func:`calib_core.validation.check_confidence_correct`).

    Examples
    --------
    >>> expected_errors([0.9, 0.9, 0.5], [1, 0, 0]).tolist()
    [0.5, 1.0, 2.0]
    """
    return _expected_errors(*check_confidence_correct(confidence, correct))


# ----------------------------------------------------------------------------- ranking quality

def auroc_correct(confidence: ArrayLike, correct: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Area under the ROC curve of ``confidence`` as a score for ``correct`` (ties count one half).

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    sample_weight : array_like of shape (N,), optional, keyword-only
        Whole-number row weights: the value of the rows repeated that many
        times; other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float
        ``P(c_i > c_j) + P(c_i = c_j) / 2`` for a random right item i and a
        random wrong item j (Mann-Whitney), equal to
        ``sklearn.metrics.roc_auc_score(correct, confidence)``.

    Raises
    ------
    CalibrationInputError
        Invalid input, or every item right (or every item wrong): the area
        does not exist then.

    Notes
    -----
    With mid-ranks ``r_i`` of the confidences (ties get the mean of their
    ranks), ``AUROC = (sum_{i right} r_i - n_1 (n_1 + 1) / 2) / (n_1 n_0)``.
    0.5 is a confidence that ranks no better than chance; it says nothing
    about calibration (any increasing transform of the confidence has the
    same AUROC).

    Examples
    --------
    >>> auroc_correct([0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0])
    0.875
    """
    confidence, correct = _repeated(confidence, correct, sample_weight, "auroc_correct")
    n_right = float(correct.sum())
    n_wrong = correct.size - n_right
    if n_right == 0 or n_wrong == 0:
        which = "right" if n_wrong == 0 else "wrong"
        raise CalibrationInputError(
            f"the AUROC of confidence for correctness does not exist when every item is {which} "
            f"({correct.size} items): it compares right items with wrong ones.")
    _, inverse, counts = np.unique(confidence, return_inverse=True, return_counts=True)
    mid_rank = np.cumsum(counts) - (counts - 1) / 2.0  # mean rank of each distinct value, ranks from 1
    rank_sum = float(np.dot(mid_rank[inverse], correct))
    return (rank_sum - n_right * (n_right + 1) / 2.0) / (n_right * n_wrong)


# ----------------------------------------------------------------------------- risk and coverage

@dataclass(frozen=True)
class RiskCoverage:
    """The risk-coverage curve: one point per distinct confidence, most confident first.

    Attributes
    ----------
    threshold : ndarray of shape (G,)
        The distinct confidences, descending: predict when ``confidence >= threshold``.
    coverage : ndarray of shape (G,)
        Fraction of items with confidence >= the threshold.
    risk : ndarray of shape (G,)
        Error rate among them (the selective risk).
    n_accepted, errors : ndarray of shape (G,)
        How many items are kept at each threshold, and how many of them are wrong.
    """

    threshold: NDArray[np.float64]
    coverage: NDArray[np.float64]
    risk: NDArray[np.float64]
    n_accepted: NDArray[np.int64]
    errors: NDArray[np.float64]


def risk_coverage(confidence: ArrayLike, correct: ArrayLike, *,
                  sample_weight: ArrayLike | None = None) -> RiskCoverage:
    """Risk-coverage curve of a confidence (Geifman & El-Yaniv 2017, section 2).

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies): counts become summed weights, so
        ``coverage(t) = W(c >= t) / W`` and ``risk(t)`` is the weighted error
        rate among them (``n_accepted`` holds the summed weights, floats).
        Rows of weight 0 are left out; whole-number weights give the
        repeated rows' curve.

    Returns
    -------
    RiskCoverage
        Sort by confidence, highest first; at each distinct confidence
        threshold t, ``coverage(t) = #{c_i >= t} / N`` and ``risk(t) =
        #{c_i >= t, wrong} / #{c_i >= t}``. Tied items are kept or dropped
        together, so the curve has one point per distinct confidence.

    Raises
    ------
    CalibrationInputError
        Invalid input.

    Examples
    --------
    >>> rc = risk_coverage([0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0])
    >>> rc.coverage.tolist(), rc.risk.tolist()
    ([0.25, 0.75, 1.0], [0.0, 0.3333333333333333, 0.5])
    """
    confidence, correct, weights = weighted_confidence_correct(confidence, correct, sample_weight)
    values, sizes, errors = _groups(confidence, correct, weights)
    kept, wrong = np.cumsum(sizes), np.cumsum(errors)
    if weights is not None:
        return RiskCoverage(values, kept / kept[-1], wrong / kept, kept, wrong)  # W as the cumulative sum ends
    return RiskCoverage(values, kept / confidence.size, wrong / kept, kept.astype(np.int64), wrong)


def aurc(confidence: ArrayLike, correct: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Area under the risk-coverage curve, tied items entering together (Geifman et al. 2019).

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    sample_weight : array_like of shape (N,), optional, keyword-only
        Whole-number row weights: the value of the rows repeated that many
        times; other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float in [0, 1]
        ``AURC = (1/N) sum_{k=1..N} E_k / k``, with ``E_k`` the expected
        number of errors among the k most confident items
        (:func:`expected_errors`): the mean selective risk over the
        coverages 1/N, 2/N, ..., 1. Lower is better.

    Raises
    ------
    CalibrationInputError
        Invalid input.

    Notes
    -----
    Without ties this is the usual step-wise AURC. With ties it is the
    expected AURC over a random order inside each tie group, so it does not
    depend on the order of the rows (a stable sort would reward whatever
    order the file happens to have). It mixes ranking quality with the
    error rate: compare models of different accuracy with :func:`eaurc` or
    :func:`augrc`.

    Examples
    --------
    >>> aurc([0.9, 0.8, 0.3], [1, 0, 0])
    0.38888888888888884
    """
    confidence, correct = _repeated(confidence, correct, sample_weight, "aurc")
    places = np.arange(1, confidence.size + 1)
    return float(np.mean(_expected_errors(confidence, correct) / places))


def eaurc(confidence: ArrayLike, correct: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Excess AURC: :func:`aurc` minus the AURC of the ideal ordering (Geifman et al. 2019).

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    sample_weight : array_like of shape (N,), optional, keyword-only
        Whole-number row weights: the value of the rows repeated that many
        times; other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float >= 0
        ``E-AURC = AURC - AURC*``, with ``AURC* = (1/N) sum_{k=n_1+1..N}
        (k - n_1) / k`` for ``n_1`` right items (every right item ranked
        above every error). 0 means the confidence puts every right item
        above every wrong one.

    Raises
    ------
    CalibrationInputError
        Invalid input.

    Notes
    -----
    The exact finite sum, not the continuous approximation ``r + (1 - r)
    log(1 - r)`` of the paper. Non-negative because every order has at
    least ``max(0, k - n_1)`` errors among its k first items.

    Examples
    --------
    >>> round(eaurc([0.9, 0.8, 0.3], [1, 0, 0]), 12)
    0.0
    """
    confidence, correct = _repeated(confidence, correct, sample_weight, "eaurc")
    places = np.arange(1, confidence.size + 1)
    ideal = np.maximum(places - correct.sum(), 0.0)  # errors among the k first of the ideal order
    # One sum of per-place excesses, each >= 0 in exact arithmetic (the maximum only drops the rounding of e/m).
    return float(np.mean(np.maximum(_expected_errors(confidence, correct) - ideal, 0.0) / places))


def augrc(confidence: ArrayLike, correct: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Area under the generalized risk-coverage curve (Traub et al. 2024), tied items entering together.

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    sample_weight : array_like of shape (N,), optional, keyword-only
        Whole-number row weights: the value of the rows repeated that many
        times; other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float in [0, 1]
        ``AUGRC = (1/N) sum_{k=1..N} E_k / N``: the mean, over coverages
        k/N, of the generalized risk ``E_k / N`` (the share of all items that
        are both kept and wrong). Lower is better.

    Raises
    ------
    CalibrationInputError
        Invalid input.

    Notes
    -----
    Unlike AURC, an error kept at low coverage weighs as much as one kept at
    high coverage, which is the ranking people who defer the least confident
    items to a human care about (Traub et al. 2024). With a random
    ranking it is about ``err / 2`` for an error rate ``err``.

    Examples
    --------
    >>> augrc([0.9, 0.8, 0.3], [1, 0, 0])
    0.3333333333333333
    """
    confidence, correct = _repeated(confidence, correct, sample_weight, "augrc")
    return float(np.sum(_expected_errors(confidence, correct)) / confidence.size ** 2)


def _check_levels(values: ArrayLike, name: str) -> NDArray[np.float64]:
    """A 1-D array of levels in [0, 1] (coverages or risks)."""
    array = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if array.ndim != 1 or array.size == 0 or not np.all((array >= 0.0) & (array <= 1.0)):
        raise CalibrationInputError(f"`{name}` must be one or more numbers in [0, 1], got {values!r}.")
    return array


def selective_risk(confidence: ArrayLike, correct: ArrayLike, coverages: ArrayLike, *,
                   sample_weight: ArrayLike | None = None) -> NDArray[np.float64]:
    """Selective risk at chosen coverages: the error rate among the most confident items, ties entering together.

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    coverages : float or array_like of shape (C,)
        Fractions of the items to keep, in [0, 1].
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies): places k are on the scale of the summed
        weight W, ``k = clip(ceil(coverage W), min(1, W), W)``, and ``E_k``
        counts weight (the straddling tie group contributes its weighted error
        rate times the weight it keeps). Whole-number weights give the
        repeated rows' risks.

    Returns
    -------
    ndarray of shape (C,)
        ``E_k / k`` with ``k = max(1, ceil(coverage N))`` (computed with a
        1e-9 tolerance so that 0.7 of 10 items keeps 7): the expected error
        rate among the k most confident items (:func:`expected_errors`), the
        same quantity :func:`aurc` averages over k.

    Raises
    ------
    CalibrationInputError
        Invalid input or a coverage outside [0, 1].

    Examples
    --------
    >>> selective_risk([0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0], [0.5, 1.0]).tolist()
    [0.25, 0.5]
    """
    confidence, correct, weights = weighted_confidence_correct(confidence, correct, sample_weight)
    _, sizes, errors = _groups(confidence, correct, weights)
    # W as the cumulative sum reaches it, so that the last place is exactly the last group's end
    places = coverage_places(coverages, confidence.size) if weights is None else weighted_places(
        coverages, np.cumsum(sizes)[-1])
    return risk_at_places(sizes[None, :], errors[None, :], places)[0]


def coverage_places(coverages: ArrayLike, n_rows: int) -> NDArray[np.int64]:
    """``k = max(1, ceil(coverage N))`` for each coverage in [0, 1] (1e-9 tolerance: 0.7 of 10 items is 7)."""
    coverages = _check_levels(coverages, "coverages")
    return np.clip(np.ceil(coverages * n_rows - 1e-9).astype(np.int64), 1, n_rows)


def risk_at_places(sizes: NDArray[np.float64], errors: NDArray[np.float64],
                   places: NDArray[np.int64]) -> NDArray[np.float64]:
    """``E_k / k`` at the places k of several samples at once, from their tie groups.

    Parameters
    ----------
    sizes, errors : ndarray of shape (B, G)
        Items and errors of each tie group, most confident first, for B
        samples over the same G groups (a group may be empty in a sample:
        a bootstrap resample of the rows).
    places : ndarray of shape (C,) or (B, C)
        Places ``1 <= k <= N``, N the items of every sample (or the summed
        weight of each sample, one row of places per sample).

    Returns
    -------
    ndarray of shape (B, C)
        The straddling-group rule of :func:`expected_errors`, divided by k.
    """
    n_samples, n_groups = sizes.shape
    places = np.broadcast_to(places, (n_samples, np.shape(places)[-1]))
    kept = np.cumsum(sizes, axis=1)
    # The group holding place k: the first whose cumulative size reaches k (row-wise, one flat search).
    shift = (np.arange(n_samples) * (kept[:, -1].max() + 1))[:, None]
    group = np.searchsorted((kept + shift).ravel(), (places + shift).ravel()).reshape(n_samples, -1)
    group -= (np.arange(n_samples) * n_groups)[:, None]
    rows = np.arange(n_samples)[:, None]
    above = kept[rows, group] - sizes[rows, group]
    errors_above = np.cumsum(errors, axis=1)[rows, group] - errors[rows, group]
    within = errors[rows, group] / sizes[rows, group]
    return (errors_above + (places - above) * within) / places


def coverage_at_risk(confidence: ArrayLike, correct: ArrayLike, risk: float, *,
                     sample_weight: ArrayLike | None = None) -> float:
    """The largest coverage whose selective risk on these items is at most ``risk`` (an estimate, no guarantee).

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    risk : float in [0, 1]
        The target error rate among the kept items.
    sample_weight : array_like of shape (N,), optional
        Row weights: read off the weighted :func:`risk_coverage`.

    Returns
    -------
    float
        ``max {coverage(t) : risk(t) <= risk}`` over the thresholds of
        :func:`risk_coverage` (whole tie groups), 0.0 if no threshold
        qualifies. It is measured on the same items it is chosen on, so it is
        optimistic; :func:`abstention_threshold` gives a threshold with a
        guarantee.

    Raises
    ------
    CalibrationInputError
        Invalid input or a risk outside [0, 1].

    Examples
    --------
    >>> coverage_at_risk([0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0], 0.4)
    0.75
    """
    curve = risk_coverage(confidence, correct, sample_weight=sample_weight)
    target = float(_check_levels(risk, "risk")[0])
    ok = curve.risk <= target + 1e-12
    return float(curve.coverage[ok].max()) if ok.any() else 0.0


# ----------------------------------------------------------------------------- abstention with a guarantee

#: The thresholds :func:`abstention_threshold` tests by default, fixed before any data is seen (as the union
#: bound requires): 0, 0.01, ..., 1 and eight more between 0.99 and 0.9999 for the top-label confidences of
#: K-class models, which crowd just below 1. 109 thresholds.
THRESHOLD_GRID = np.unique(np.round(np.concatenate([np.linspace(0.0, 1.0, 101),
                                                    1.0 - np.logspace(-4.0, -2.0, 9)]), 12))[::-1]


@dataclass(frozen=True)
class AbstentionThreshold:
    """An abstention threshold chosen for a target risk, with its finite-sample guarantee.

    Attributes
    ----------
    threshold : float
        Predict when ``confidence >= threshold``, abstain otherwise; ``inf``
        when no tested threshold could be certified (abstain on everything).
    target_risk, delta : float
        The risk to stay under, and the allowed probability of failing to.
    coverage : float
        Fraction of these items kept at the threshold (0 when none is certified).
    n_accepted : int
        Items kept; ``errors`` of them wrong; ``risk`` = errors / n_accepted (NaN if none).
    risk_upper : float
        Clopper-Pearson upper bound on the selective risk at the threshold,
        at the level the method tests at (``1 - delta / n_thresholds`` for
        Bonferroni, ``1 - delta`` for the fixed sequence), at most
        ``target_risk`` when one is certified.
    n_thresholds : int
        How many thresholds were tested.
    found : bool
        Whether a threshold was certified.
    guarantee : str
        The guarantee in one sentence.
    method : {"bonferroni", "fixed_sequence"}
    """

    threshold: float
    target_risk: float
    delta: float
    coverage: float
    n_accepted: int
    errors: int
    risk: float
    risk_upper: float
    n_thresholds: int
    found: bool
    guarantee: str
    method: str = "bonferroni"


def _clopper_pearson_upper(errors: NDArray[np.float64], n: NDArray[np.float64], level: float) -> NDArray[np.float64]:
    """One-sided upper confidence bound of a binomial proportion: ``Beta(1 - level ... )`` quantile, 1 if n = e."""
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = stats.beta.ppf(level, errors + 1.0, np.maximum(n - errors, 1e-300))
    return np.where(errors >= n, 1.0, upper)


def abstention_threshold(confidence: ArrayLike, correct: ArrayLike, target_risk: float, *, delta: float = 0.05,
                         thresholds: ArrayLike | None = None, method: str = "bonferroni",
                         sample_weight: ArrayLike | None = None) -> AbstentionThreshold:
    """The lowest confidence threshold whose selective risk is certified to be at most ``target_risk``.

    Learn then Test (Angelopoulos et al. 2021) with exact binomial p-values
    over a grid of thresholds fixed in advance, Bonferroni-corrected or
    tested in a fixed sequence from high to low.

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Confidences of held-out items, drawn i.i.d. from the items the
        threshold will be used on (not the items the model was tuned on).
    correct : array_like of shape (N,)
    target_risk : float in (0, 1)
        ``alpha``: the largest acceptable error rate among the items answered.
    delta : float in (0, 1), default 0.05
        The allowed probability that the guarantee fails.
    thresholds : array_like, optional
        The thresholds to test, chosen **without looking at these items**;
        default :data:`THRESHOLD_GRID` (109 thresholds). Fewer thresholds
        (e.g. the 21 steps 0, 0.05, ..., 1 of verbalised confidences) make
        the correction smaller.
    method : {"bonferroni", "fixed_sequence"}, default "bonferroni"
        ``"bonferroni"``: every threshold tested at level ``delta / G``.
        ``"fixed_sequence"``: from the highest threshold down, each at level
        ``delta``, stopping at the first that fails: no correction, but it
        certifies nothing when the grid starts above the confidences seen,
        so start the grid where items are known to be (from earlier data).
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: how many times each item counts (the test
        of the repeated items, ``n_t`` and ``e_t`` summed weights). Other
        weights raise :class:`~calib_core.validation.CalibrationInputError`:
        the exact binomial test counts independent items, and importance
        weights would need an effective sample size, which this guarantee
        does not model.

    Returns
    -------
    AbstentionThreshold

    Raises
    ------
    CalibrationInputError
        Invalid input, a target risk or delta outside (0, 1), thresholds outside [0, 1].

    Notes
    -----
    For a threshold t let ``R(t) = P(wrong | confidence >= t)`` on new
    items (the selective risk), ``n_t`` the items of this sample with
    confidence >= t and ``e_t`` the wrong ones among them. Given ``n_t``,
    those items are an i.i.d. sample of the items above t, so ``e_t ~
    Binomial(n_t, R(t))``, and ``p_t = P(Binomial(n_t, alpha) <= e_t)`` is a
    valid p-value of the hypothesis ``R(t) > alpha`` (``p_t = 1`` when
    ``n_t = 0``). Every threshold of the grid (G of them) with ``p_t <=
    delta / G`` is certified; the union bound gives

        P(some certified threshold has R(t) > alpha) <= delta,

    so the lowest certified threshold (the largest coverage) has selective
    risk at most ``alpha`` with probability at least ``1 - delta`` over the
    draw of the sample. ``p_t <= delta / G`` is the same as the
    Clopper-Pearson upper bound at level ``1 - delta / G`` being at most
    ``alpha``. Fixed-sequence testing (``method="fixed_sequence"``) tests
    the grid in its fixed order at level ``delta`` and certifies the
    thresholds before the first failure; it controls the same probability
    because a false certification needs the first true null of the order
    to be rejected (Angelopoulos et al. 2021). It avoids the
    factor G but stops at once at a nearly empty threshold at the top, which
    is why it is not the default. Geifman & El-Yaniv's SGR (2017, section 3)
    divides delta by ``log2 N`` instead, over thresholds taken from the
    sample itself.

    What is not guaranteed: the coverage (reported on this sample only), the
    risk of any single future batch (the guarantee is on the population
    rate), and anything at all under a shift between this sample and the
    deployment.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> c = rng.uniform(size=2000); y = rng.uniform(size=2000) < c
    >>> found = abstention_threshold(c, y, 0.1, delta=0.05)
    >>> found.found, found.risk_upper <= 0.1
    (True, True)
    """
    confidence, correct, weights = weighted_confidence_correct(confidence, correct, sample_weight)
    if weights is not None and not integer_weights(weights):
        raise CalibrationInputError(
            "`sample_weight` of `abstention_threshold` must be whole numbers (how many times each item counts): its "
            "exact binomial test counts independent items, and fractional (importance) weights would need an "
            f"effective sample size, which Learn then Test does not model here; got "
            f"{float(weights[weights != np.round(weights)][0])!r}.")
    alpha, delta = check_fraction(target_risk, "target_risk"), check_fraction(delta, "delta")
    grid = THRESHOLD_GRID if thresholds is None else np.unique(_check_levels(thresholds, "thresholds"))[::-1]
    method = check_choice(method, "method", ("bonferroni", "fixed_sequence"))
    descending = np.sort(confidence)[::-1]
    order = np.argsort(-confidence, kind="stable")
    wrong = 1.0 - correct[order] if weights is None else (1.0 - correct[order]) * weights[order]
    wrong_above = np.concatenate([[0.0], np.cumsum(wrong)])
    # n_t = #{c >= t}: the insertion point of -t among the negated confidences (ascending), from the right.
    n_t = np.searchsorted(-descending, -grid, side="right")
    e_t = wrong_above[n_t]
    if weights is not None:  # the repeated items above t: summed (whole-number) weights
        n_t = np.concatenate([[0.0], np.cumsum(weights[order])])[n_t]
    p_values = np.where(n_t > 0, stats.binom.cdf(e_t, np.maximum(n_t, 1), alpha), 1.0)
    level = delta / grid.size if method == "bonferroni" else delta
    certified = np.flatnonzero(p_values <= level)
    if method == "fixed_sequence":  # the thresholds before the first failure, from the top
        certified = certified[certified == np.arange(certified.size)]
    n_rows = confidence.size if weights is None else int(round(float(weights.sum())))
    if certified.size == 0:
        sentence = (f"No tested threshold could be certified to keep the error rate at or below {alpha:.3g} with "
                    f"probability {1 - delta:.3g} on {n_rows:,} items: abstain on everything, or give more items.")
        return AbstentionThreshold(math.inf, alpha, delta, 0.0, 0, 0, math.nan, math.nan, int(grid.size), False,
                                   sentence, method)
    best = certified[-1]  # the lowest certified threshold: n_t only grows as the threshold falls
    n, e = int(n_t[best]), int(round(e_t[best]))
    upper = float(_clopper_pearson_upper(np.array([e], float), np.array([n], float), 1.0 - level)[0])
    threshold = float(grid[best])
    how = (f"Bonferroni over {grid.size} thresholds fixed in advance" if method == "bonferroni" else
           f"fixed-sequence testing of {grid.size} thresholds fixed in advance, from high to low")
    sentence = (f"With probability at least {1 - delta:.3g} over the draw of these {n_rows:,} items (i.i.d. like "
                f"future ones), the error rate among future items with confidence >= {threshold:.4g} is at most "
                f"{alpha:.3g} (Learn then Test: exact binomial tests, {how}); the coverage {n / n_rows:.1%} is "
                "measured on these items, not guaranteed.")
    return AbstentionThreshold(threshold, alpha, delta, n / n_rows, n, e, e / n, upper, int(grid.size), True,
                               sentence, method)
