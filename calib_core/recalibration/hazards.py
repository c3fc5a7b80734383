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

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.recalibration.histogram import HistogramBinning
from calib_core.recalibration.one_vs_rest import IsotonicCalibration
from calib_core.validation import check_fraction

__all__ = ["DEFAULT_EPSILON", "FLOORED_TWINS", "ZERO_HAZARD_MAX_CLASSES", "FlooredHistogramBinning",
           "FlooredIsotonic", "exact_zero_rows", "mix_with_uncalibrated"]

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
