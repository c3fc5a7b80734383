"""Recalibrating a confidence model: a map ``c -> P(correct | c)``, fitted and judged through the one comparison.

A confidence model (an LLM's stated confidence per answer and whether the
answer was right, a judge, a forecaster; :mod:`calib_core.metrics.confidence`)
is stored as the two-column matrix ``[1 - c, c]`` with ``labels = correct``
(:func:`~calib_core.metrics.confidence.confidence_probs`). Recalibrating it
means fitting ``g(c) = P(y = 1 | c)``, and the binary recalibrators already
fit exactly that on this matrix, so none is written twice here:

=================================  ============================================================
method (registry name)             the map of the stated confidence
=================================  ============================================================
Platt scaling                      ``sigmoid(a logit(c) + b)`` (Platt 1999)
Temperature scaling                ``sigmoid(logit(c) / T)`` (Guo et al. 2017, on the logit)
Beta calibration                   ``sigmoid(a log c - b log(1 - c) + m)`` (Kull et al. 2017)
Quadratic scaling                  a quadratic in ``logit(c)`` (issue 27)
Isotonic regression                PAV (Zadrozny & Elkan 2002); its floored twin
Centred isotonic regression        Oron & Flournoy (2017)
Histogram binning                  uniform-mass bins (Zadrozny & Elkan 2001); its floored twin
Spline calibration                 Lucena (2018)
Venn-Abers                         the inductive Venn-Abers predictor (Vovk & Petej 2014)
=================================  ============================================================

:func:`compare_confidence` is :func:`calib_core.recalibration.recommendation.compare_methods`
on that matrix with a confidence model's metrics (:data:`CONFIDENCE_METRIC_KEYS`:
the ECE, Brier score and NLL of confidence against correctness and the AURC of
the confidence, the registry's ``conf_*`` entries), so the protocol, the
cross-fitting, the paired bootstrap intervals and the recommendation are the
ones every model gets. There is no accuracy among them: the answers do not
change, so neither can their accuracy. An increasing map keeps the order of
the confidences and so the AURC (up to the ties it makes: tied items enter
together); a map that is not monotone can change it. :func:`order_changes`
says which holds for each fitted map, in sentences every surface shows.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> c = rng.uniform(0.5, 1.0, 400)
>>> correct = rng.random(400) < 0.5 + 0.5 * (c - 0.5)   # overconfident
>>> found = compare_confidence(c, correct, methods=("Platt scaling", "Isotonic regression"), n_boot=0)
>>> sorted(set(found.table["key"])) == sorted(CONFIDENCE_METRIC_KEYS)
True
>>> found.recommendation.method
'Platt scaling'
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.io.confidence import CONFIDENCE_CLASSES
from calib_core.metrics.confidence import confidence_probs
from calib_core.recalibration import RECALIBRATORS, Recalibrator
from calib_core.recalibration.compare import EvaluationSet, MethodFit, Protocol, recalibrated_frame
from calib_core.recalibration.recommendation import Comparison, compare_methods
from calib_core.validation import CalibrationInputError, check_confidence_correct

__all__ = ["CONFIDENCE_CHANGE_KEYS", "CONFIDENCE_METHODS", "CONFIDENCE_METRIC_KEYS", "DEFAULT_CONFIDENCE_METHODS",
           "OrderChange", "applicable_methods", "apply_confidence_map", "compare_confidence", "compare_predictions",
           "confidence_map_input", "fit_confidence_map", "is_confidence_comparison", "order_changes",
           "recalibrated_confidence_frame", "reliability_target", "unchanged_accuracy_sentence"]

#: The numbers that judge a recalibrated confidence (registry keys, display order): ECE (10 equal-width bins, the
#: headline, and 10 equal-mass bins), Brier score, NLL, AURC. No accuracy: it cannot change.
CONFIDENCE_METRIC_KEYS = ("conf_ece", "conf_ece_mass_10", "conf_brier", "conf_nll", "conf_aurc")
#: The calibration errors drawn together in the page's change chart.
CONFIDENCE_CHANGE_KEYS = ("conf_ece", "conf_ece_mass_10")
#: The registered methods that apply to a stated confidence (binary methods on ``[1 - c, c]``).
CONFIDENCE_METHODS = ("Platt scaling", "Temperature scaling", "Beta calibration", "Quadratic scaling",
                      "Isotonic regression", "Isotonic regression (floored)", "Centred isotonic regression",
                      "Histogram binning", "Histogram binning (floored)", "Spline calibration", "Venn-Abers")
#: Fitted by default (the page's first selection, ``--method auto``): the parametric maps and two step maps.
DEFAULT_CONFIDENCE_METHODS = ("Platt scaling", "Temperature scaling", "Beta calibration", "Isotonic regression",
                              "Histogram binning")


def confidence_map_input(confidence: ArrayLike, correct: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """``(probs, labels)``: the matrix ``[1 - c, c]`` and the correctness the binary recalibrators fit on."""
    values, hits = check_confidence_correct(confidence, correct)
    return confidence_probs(values), hits.astype(np.intp)


def _check_method(method: str) -> str:
    if method not in CONFIDENCE_METHODS:
        raise CalibrationInputError(f"`method` {method!r} does not recalibrate a stated confidence; choose one of "
                                    f"{', '.join(CONFIDENCE_METHODS)}.")
    return method


def fit_confidence_map(method: str, confidence: ArrayLike, correct: ArrayLike, *,
                       sample_weight: ArrayLike | None = None) -> Recalibrator:
    """Fit one map ``c -> P(correct | c)`` on every row given.

    Parameters
    ----------
    method : str
        One of :data:`CONFIDENCE_METHODS`.
    confidence, correct : array_like of shape (N,)
    sample_weight : array_like of shape (N,), optional
        Row weights, passed to the recalibrator's ``fit`` (a method that
        cannot use them, e.g. Venn-Abers, raises).

    Returns
    -------
    Recalibrator
        Fitted on ``[1 - c, c]`` (``input="probs"``); :func:`apply_confidence_map` applies it, its
        ``to_json`` document is what ``calib-core recalibrate --save-map`` writes.

    Raises
    ------
    CalibrationInputError
        An unknown method, invalid confidences, or weights the method cannot use.
    """
    probs, labels = confidence_map_input(confidence, correct)
    recalibrator = RECALIBRATORS[_check_method(method)]().set_params(input="probs")
    return recalibrator.fit(probs, labels, sample_weight=sample_weight)


def apply_confidence_map(recalibrator: Recalibrator, confidence: ArrayLike) -> NDArray[np.float64]:
    """The recalibrated confidence ``g(c)`` of each row: column 1 of ``predict_proba([1 - c, c])``.

    Raises
    ------
    CalibrationInputError
        The map was fitted on more than two classes or on logits (not a confidence map).
    """
    if getattr(recalibrator, "input", "probs") != "probs" or getattr(recalibrator, "n_classes_", 2) != 2:
        raise CalibrationInputError("this map was not fitted on a confidence model (two columns [1 - c, c] of "
                                    "probabilities); fit it with recalibrate on a confidence file.")
    values, _ = check_confidence_correct(confidence, np.zeros(np.shape(confidence)))
    return np.asarray(recalibrator.predict_proba(confidence_probs(values))[:, 1], dtype=np.float64)


def compare_confidence(confidence: ArrayLike, correct: ArrayLike, *, split: ArrayLike | None = None,
                       split_names: Sequence[object] = (), methods: Sequence[str] | None = None,
                       protocol: Protocol = Protocol(), n_boot: int = 200, seed: int = 0, alpha: float = 0.05,
                       boot_budget_seconds: float | None = None, sample_weight: ArrayLike | None = None) -> Comparison:
    """Fit every method honestly on a stated confidence, bootstrap every change, recommend one.

    :func:`calib_core.recalibration.recommendation.compare_methods` on ``[1 - c, c]`` and the correctness with
    :data:`CONFIDENCE_METRIC_KEYS`: the same protocol, paired intervals and recommendation (lower ECE without
    a higher Brier score, lowest Brier score first) as for any model, judged by the ECE and Brier score of
    confidence against correctness; no accuracy row, since no answer changes.

    Parameters
    ----------
    confidence, correct : array_like of shape (N,)
    split, split_names, protocol, n_boot, seed, alpha, boot_budget_seconds, sample_weight
        As in :func:`~calib_core.recalibration.recommendation.compare_methods`.
    methods : sequence of str, optional
        Of :data:`CONFIDENCE_METHODS`; default :data:`DEFAULT_CONFIDENCE_METHODS`.

    Returns
    -------
    Comparison
        Its ``ev.metric_keys`` are :data:`CONFIDENCE_METRIC_KEYS` (:func:`is_confidence_comparison`).
    """
    probs, labels = confidence_map_input(confidence, correct)
    chosen = tuple(_check_method(m) for m in (DEFAULT_CONFIDENCE_METHODS if methods is None else methods))
    return compare_methods(probs, labels, split=split, split_names=split_names, class_names=list(CONFIDENCE_CLASSES),
                           methods=chosen, protocol=protocol, n_boot=n_boot, seed=seed, alpha=alpha,
                           boot_budget_seconds=boot_budget_seconds, metrics=CONFIDENCE_METRIC_KEYS,
                           sample_weight=sample_weight)


def applicable_methods(methods: Sequence[str]) -> tuple[str, ...]:
    """The methods of ``methods`` that recalibrate a stated confidence (of :data:`CONFIDENCE_METHODS`), in order."""
    return tuple(m for m in methods if m in CONFIDENCE_METHODS)


def compare_predictions(predictions, *, methods: Sequence[str] | None = None, **options) -> Comparison:
    """The comparison of one loaded model: :func:`compare_confidence` for a confidence model (a method of
    ``methods`` that does not apply to it is refused), else
    :func:`~calib_core.recalibration.recommendation.compare_methods` on its probabilities (and logits), its rows
    weighted by its ``sample_weight`` (the Data page's weight column, ``--weight-column``) when it has one.

    Parameters
    ----------
    predictions : calib_core.Predictions
    methods : sequence of str, optional
        Default: the default set of the model's kind.
    **options
        ``protocol``, ``n_boot``, ``seed``, ``alpha``, ``boot_budget_seconds`` of ``compare_methods``.
    """
    common = dict(split=predictions.split, split_names=predictions.split_names,
                  sample_weight=predictions.sample_weight, **options)
    if predictions.kind == "confidence":
        return compare_confidence(predictions.confidence, predictions.correct, methods=methods, **common)
    return compare_methods(predictions.probs, predictions.labels, logits=predictions.logits,
                           class_names=[str(c) for c in predictions.class_names] or None, methods=methods, **common)


def is_confidence_comparison(metric_keys: Sequence[str]) -> bool:
    """Whether a comparison's metric keys (``ev.metric_keys``) are a confidence model's."""
    return tuple(metric_keys) == CONFIDENCE_METRIC_KEYS


def reliability_target(ev: EvaluationSet) -> str | int:
    """The ``target`` of :func:`calib_core.reliability_table` for a comparison's rows: column 1 (the stated
    confidence against the correctness) for a confidence model, else the top label."""
    return 1 if is_confidence_comparison(ev.metric_keys) else "top_label"


def recalibrated_confidence_frame(x: np.ndarray, labels: np.ndarray, ev: EvaluationSet, fit: MethodFit, *,
                                  ids: ArrayLike | None = None, id_column: str = "id") -> pd.DataFrame:
    """Recalibrated confidences of every row, a confidence file again: ``[id,] confidence, correct, split``.

    :func:`~calib_core.recalibration.compare.recalibrated_frame` (the same rows and ``split`` rule: the fitted
    map on every row, or the out-of-fold values under cross-fitting) with its ``[1 - g, g]`` columns read back
    as the confidence ``g``.
    """
    frame = recalibrated_frame(x, labels, ev, fit)
    out = pd.DataFrame({"confidence": frame.iloc[:, -1].to_numpy(), "correct": np.asarray(labels, dtype=int),
                        "split": frame["split"].to_numpy()})
    if ids is not None:
        out.insert(0, id_column, np.asarray(ids))
    return out


def unchanged_accuracy_sentence(correct: ArrayLike) -> str:
    """Why a confidence model's comparison has no accuracy row (plain text)."""
    hits = np.asarray(correct, dtype=np.float64)
    return (f"Recalibrating a stated confidence changes no answer, so the accuracy ({hits.mean():.1%} of these "
            f"{hits.size:,} rows right) cannot change; only the confidences and the scores of them do.")


@dataclass(frozen=True)
class OrderChange:
    """Whether a fitted confidence map keeps the order of the confidences, and what that means for the AURC.

    Attributes
    ----------
    method : str
    order : {"increasing", "steps", "not_monotone"}
        On the distinct confidences of the evaluation rows, the map (fitted on the fitting rows, or refitted
        on all rows under cross-fitting) is strictly increasing, non-decreasing with some values merged into
        one step, or decreasing somewhere.
    aurc_before, aurc_after : float
        The AURC of the evaluation rows before and after.
    sentence : str
        Plain text (registry method names only).
    """

    method: str
    order: str
    aurc_before: float
    aurc_after: float
    sentence: str


def _order(mapped: NDArray[np.float64]) -> str:
    steps = np.diff(mapped)
    if np.any(steps < -1e-12):
        return "not_monotone"
    return "increasing" if np.all(steps > 1e-12) else "steps"


def order_changes(comparison: Comparison) -> dict[str, OrderChange]:
    """For each fitted method of a confidence model's comparison, whether its map keeps the confidences' order.

    The map is evaluated on the sorted distinct confidences of the evaluation rows: a strictly increasing map
    keeps every pair's order, so it cannot change the AURC; a non-decreasing map with flat steps (isotonic
    regression, histogram binning) only merges neighbours into ties, which enter together (the expected value
    over random tie-breaking, :mod:`calib_core.metrics.selective`), so the AURC moves only through those ties;
    a map that decreases somewhere (a Platt slope below 0, a wiggling spline) reorders answers and can change
    it. Under cross-fitting the evaluated confidences come from the fold maps, which differ a little, so even
    an increasing map's pooled AURC can move slightly; the sentence says so.

    Returns
    -------
    dict of str to OrderChange
        Fitted methods only, in the comparison's order.
    """
    ev = comparison.ev
    distinct = np.unique(ev.before[:, 1])
    grid = confidence_probs(distinct)
    before = ev.before_values.get("conf_aurc", float("nan"))
    changes = {}
    for name, fit in comparison.fits.items():
        if not fit.ok or fit.params_json is None:
            continue
        order = _order(Recalibrator.from_json(fit.params_json).predict_proba(grid)[:, 1])
        after = fit.after.get("conf_aurc", float("nan"))
        moved = f"AURC {before:.4f} → {after:.4f}"
        if order == "increasing":
            sentence = f"{name} is an increasing map: it keeps the order of the confidences, so it cannot change " \
                       "the AURC"
            sentence += (f" (the cross-fitted numbers pool {ev.protocol.n_folds} fold maps, so it may move a "
                         f"little: {moved})." if ev.cross_fitted else f" ({moved}).")
        elif order == "steps":
            sentence = (f"{name} is a step map: it keeps the order but merges neighbouring confidences into ties, "
                        f"which enter together, so the AURC moves only through those ties ({moved}).")
        else:
            sentence = (f"{name} is not monotone on these confidences: it reorders some answers, so it can change "
                        f"the AURC ({moved}).")
        changes[name] = OrderChange(name, order, float(before), float(after), sentence)
    return changes
