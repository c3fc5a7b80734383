"""Exact zeros: which methods can emit them, how to count them, and their floored twins.

A map that outputs a probability of exactly 0 for a row's true class gives
that row an infinite log loss (27.6 nats under the NLL's clip at 1e-12).
One-vs-rest isotonic regression and histogram binning do so wherever a
flat step or a bin held no positive: on ImageNet (K = 1,000) they reach a
mean log loss of 5.4-6.7 against 0.76 uncalibrated (CalArena, probkit
2026). Such methods declare ``emits_exact_zeros``; the comparison flags
them wherever the NLL is shown
(:func:`calib_core.recalibration.compare.zero_hazards`), and above
:data:`ZERO_HAZARD_MAX_CLASSES` classes they leave the default set, their
floored twins taking their place
(:func:`calib_core.recalibration.defaults.default_methods`).

The floor (stated rule): mix with the uncalibrated probabilities,
``q' = (1 - epsilon) q + epsilon p`` (:func:`mix_with_uncalibrated`,
default ``epsilon = 0.01``), so each row's log loss is at most the model's
own plus ``log(1 / epsilon)`` (4.6 nats), rows stay on the simplex, and
no new zero appears where the model had none.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.recalibration.histogram import HistogramBinning
from calib_core.recalibration.one_vs_rest import IsotonicCalibration
from calib_core.validation import check_fraction

if TYPE_CHECKING:
    from calib_core.recalibration.compare import EvaluationSet, MethodFit

__all__ = ["DEFAULT_EPSILON", "FLOORED_TWINS", "ZERO_HAZARD_MAX_CLASSES", "FlooredHistogramBinning",
           "FlooredIsotonic", "ZeroHazard", "exact_zero_rows", "mix_with_uncalibrated", "zero_hazards"]

#: Above this many classes, methods that can emit exact zeros leave the default set (their floored twins
#: stay): with K classes a one-vs-rest map sees about N / K positives per class, so its flat steps at 0 grow.
ZERO_HAZARD_MAX_CLASSES = 100
#: The share of the uncalibrated probabilities mixed in by the floored methods.
DEFAULT_EPSILON = 0.01


def mix_with_uncalibrated(recalibrated: ArrayLike, uncalibrated: ArrayLike, epsilon: float = DEFAULT_EPSILON
                          ) -> NDArray[np.float64]:
    """``(1 - epsilon) * recalibrated + epsilon * uncalibrated``: the floor of the floored methods.

    Parameters
    ----------
    recalibrated, uncalibrated : array_like of shape (N, K)
        Rows on the simplex (checked by the caller).
    epsilon : float in (0, 1)

    Returns
    -------
    ndarray of shape (N, K)
        Rows on the simplex; a class the model gave ``p > 0`` gets at least
        ``epsilon * p``, so a row's log loss is at most the model's plus
        ``log(1 / epsilon)``.

    Examples
    --------
    >>> mix_with_uncalibrated([[1.0, 0.0]], [[0.6, 0.4]], 0.01).tolist()
    [[0.996, 0.004]]
    """
    epsilon = check_fraction(epsilon, "epsilon")
    out = np.multiply(np.asarray(recalibrated, dtype=np.float64), 1.0 - epsilon)
    out += epsilon * np.asarray(uncalibrated, dtype=np.float64)
    return out


def exact_zero_rows(probs: ArrayLike, labels: ArrayLike) -> int:
    """How many rows give their true class a probability of exactly 0 (each an infinite log loss)."""
    probs, labels = np.asarray(probs), np.asarray(labels)
    return int(np.count_nonzero(probs[np.arange(labels.size), labels] == 0.0))


class _Floored:
    """Mix a zero-emitting map's output with the model's probabilities (:func:`mix_with_uncalibrated`)."""

    emits_exact_zeros = False
    epsilon: float

    def _check_params(self) -> None:
        super()._check_params()  # type: ignore[misc]
        check_fraction(self.epsilon, "epsilon")

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return mix_with_uncalibrated(super()._predict(x), x, self.epsilon)  # type: ignore[misc]


class FlooredIsotonic(_Floored, IsotonicCalibration):
    """One-vs-rest isotonic regression mixed with the uncalibrated probabilities: no exact zeros.

    ``q' = (1 - epsilon) q_iso + epsilon p`` (:func:`mix_with_uncalibrated`),
    ``q_iso`` the output of :class:`~calib_core.recalibration.IsotonicCalibration`.

    Parameters
    ----------
    epsilon : float, default 0.01
    input : {"logits", "probs"}, default "probs"

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.1, 0.3, 0.35, 0.8]); y = np.array([0, 1, 0, 1])
    >>> iso = FlooredIsotonic().fit(np.column_stack([1 - p, p]), y)
    >>> iso.predict_proba(np.array([[0.9, 0.1]]))[:, 1].round(4).tolist()
    [0.001]
    """

    method = "isotonic_calibration_floored"
    display_name = "Isotonic regression (floored)"

    def __init__(self, *, epsilon: float = DEFAULT_EPSILON, input: str = "probs") -> None:
        super().__init__(input=input)
        self.epsilon = epsilon


class FlooredHistogramBinning(_Floored, HistogramBinning):
    """Histogram binning mixed with the uncalibrated probabilities: no exact zeros.

    ``q' = (1 - epsilon) q_bins + epsilon p`` (:func:`mix_with_uncalibrated`),
    ``q_bins`` the output of :class:`~calib_core.recalibration.HistogramBinning`.

    Parameters
    ----------
    n_bins : int or None, default None
    class_conditional : bool, default True
    epsilon : float, default 0.01
    input : {"logits", "probs"}, default "probs"

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9]); y = np.array([0, 0, 0, 1, 1, 1])
    >>> hb = FlooredHistogramBinning(2).fit(np.column_stack([1 - p, p]), y)
    >>> hb.predict_proba(np.array([[0.9, 0.1]]))[:, 1].round(4).tolist()
    [0.001]
    """

    method = "histogram_binning_floored"
    display_name = "Histogram binning (floored)"

    def __init__(self, n_bins: int | None = None, *, class_conditional: bool = True,
                 epsilon: float = DEFAULT_EPSILON, input: str = "probs") -> None:
        super().__init__(n_bins, class_conditional=class_conditional, input=input)
        self.epsilon = epsilon


#: Display name of a method that can emit exact zeros -> that of its floored twin.
FLOORED_TWINS = {IsotonicCalibration.display_name: FlooredIsotonic.display_name,
                 HistogramBinning.display_name: FlooredHistogramBinning.display_name}


@dataclass(frozen=True)
class ZeroHazard:
    """A fitted method whose NLL exact zeros hurt or can hurt (:func:`zero_hazards`).

    Attributes
    ----------
    method : str
    rows : int
        Evaluation rows whose true class got a probability of exactly 0 (0: the method can emit zeros, but
        gave none to a true class on these rows).
    sentence : str
        What to tell the reader, plain text (registry names only).
    """

    method: str
    rows: int
    sentence: str


def zero_hazards(ev: EvaluationSet, fits: Mapping[str, MethodFit]) -> dict[str, ZeroHazard]:
    """The fitted methods whose NLL is hurt by exact zeros, each with a plain-text sentence saying so.

    A method is flagged when it can emit exact zeros
    (:attr:`~calib_core.recalibration.Recalibrator.emits_exact_zeros`: flat
    steps of isotonic regression, empty bins) or when its evaluated
    probabilities give some row's true class exactly 0. Each such row costs
    27.6 nats in the NLL (clipped at 1e-12; unclipped it is infinite), so
    the page (a warning when some true class got 0, else a caption) and the
    report show these sentences wherever the NLL is shown. The floored twins
    of :mod:`calib_core.recalibration.hazards` mix the model's own
    probabilities back in and are not flagged.

    Returns
    -------
    dict of str to ZeroHazard
        Method -> its hazard, in ``fits`` order.
    """
    from calib_core.recalibration import RECALIBRATORS  # the registry imports this module

    flagged = {}
    for name, fit in fits.items():
        if not fit.ok or fit.probs is None:
            continue
        rows = exact_zero_rows(fit.probs, ev.labels)
        can = name in RECALIBRATORS and RECALIBRATORS[name].emits_exact_zeros
        if not (rows or can):
            continue
        twin = FLOORED_TWINS.get(name)
        fix = (f" Its floored twin, {twin}, mixes {DEFAULT_EPSILON:.0%} of the model's probabilities back in." if twin
               else "")
        if rows:
            sentence = (f"{name} gives the true class a probability of exactly 0 on {rows:,} of "
                        f"{ev.labels.size:,} evaluation rows: the NLL counts each at 27.6 nats (clipped at 1e-12; "
                        f"unclipped it is infinite), so its NLL is dominated by them.{fix}")
        else:
            sentence = (f"{name} can emit probabilities of exactly 0 (none for a true class on these rows): on "
                        f"other rows its NLL can be infinite.{fix}")
        flagged[name] = ZeroHazard(name, rows, sentence)
    return flagged
