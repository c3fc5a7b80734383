"""Binary calibration maps applied one-vs-rest: Platt scaling, Beta calibration,
isotonic regression.

For a binary problem (K = 2) one map is fitted on class 1 and the output is
``(1 - q, q)``. For K > 2 one map per class k is fitted on column k against
``labels == k``; the K outputs of a row are divided by their sum (a row whose
K outputs are all 0 becomes uniform).

References
----------
.. [Platt1999] Platt, J. "Probabilistic outputs for support vector machines and
   comparisons to regularized likelihood methods", 1999 (sigmoid fit with the
   smoothed targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)``).
.. [Kull2017] Kull, M., Silva Filho, T. & Flach, P. "Beta calibration: a
   well-founded and easily implemented improvement on logistic calibration
   for binary classifiers", AISTATS 2017, eq. (3)-(4) (the abm map).
.. [Zadrozny2002] Zadrozny, B. & Elkan, C. "Transforming classifier scores into
   accurate multiclass probability estimates", KDD 2002 (isotonic regression,
   one-vs-rest with renormalisation).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calib_core.recalibration._base import Recalibrator, _renormalise
from calib_core.recalibration._numeric import (class_log_probs, column_results, fit_logistic, isotonic_fit,
                                                log_probabilities, map_columns)
from calib_core.validation import check_flag, transposed

__all__ = ["BetaCalibration", "IsotonicCalibration", "PlattScaling"]


def _target_classes(n_classes: int) -> list[int]:
    """Classes that get their own binary map: class 1 for K = 2, every class otherwise."""
    return [1] if n_classes == 2 else list(range(n_classes))


def _combine(columns: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(N, 1)`` binary output -> ``(1 - q, q)``; ``(N, K)`` one-vs-rest outputs -> renormalised rows.

    ``columns`` is a work array of the caller's: the K-class case clips and renormalises it in place.
    """
    if columns.shape[1] == 1:
        q = np.clip(columns[:, 0], 0.0, 1.0)
        return np.column_stack([1.0 - q, q])
    return _renormalise(np.clip(columns, 0.0, None, out=columns))


def _sigmoid(eta: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * eta))


class PlattScaling(Recalibrator):
    """Platt scaling: a logistic regression on each class's log-odds.

    ``q_k = sigmoid(a_k * s_k + b_k)`` with ``s_k = log(p_k / (1 - p_k))``.

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        For logits, ``s_k`` is the log-odds of ``softmax(logits)`` computed
        stably (``z_1 - z_0`` for K = 2). Probabilities are first turned into
        ``log(p + 1e-12)`` (the helper every recalibrator shares), so an
        exact 0 or 1 gives a log-odds of about -27.6 or 27.6 - log(K - 1)
        instead of an infinity.
    smooth_targets : bool, default True
        Platt's targets ``(N+ + 1) / (N+ + 2)`` for positives and
        ``1 / (N- + 2)`` for negatives (as scikit-learn's
        ``CalibratedClassifierCV(method="sigmoid")``); False fits the 0/1
        labels (plain maximum-likelihood logistic regression).

    Attributes
    ----------
    slopes_, intercepts_ : ndarray of shape (1,) for K = 2, (K,) otherwise

    Notes
    -----
    Each fit is an unpenalised two-parameter logistic regression solved by
    damped Newton steps [Platt1999]_. K > 2 is one-vs-rest, renormalised,
    which may change the arg-max.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[0.0, 2.0], [0.0, -1.0], [0.0, 0.5], [0.0, 3.0]])
    >>> PlattScaling().fit(z, [1, 0, 0, 1]).predict_proba(z).shape
    (4, 2)
    """

    method = "platt_scaling"
    display_name = "Platt scaling"
    works_on = "logits"
    weighted_loss = True
    _fitted_attributes = ("slopes_", "intercepts_")

    def __init__(self, *, input: str = "logits", smooth_targets: bool = True) -> None:
        self.input = input
        self.smooth_targets = smooth_targets

    def _check_params(self) -> None:
        super()._check_params()
        check_flag(self.smooth_targets, "smooth_targets")

    def _log_odds(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        log_p, log_not_p = class_log_probs(x)
        return log_p - log_not_p

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        odds = self._log_odds(x)
        classes = _target_classes(x.shape[1])
        slopes, intercepts = np.empty(len(classes)), np.empty(len(classes))
        odds_t = np.ascontiguousarray(odds[:, classes].T)
        for j, k in enumerate(classes):
            positive = labels == k
            if self.smooth_targets:
                # with weights, N+ and N- are the summed weights (the counts of the repeated rows)
                n_pos = float(positive.sum()) if weights is None else float(weights[positive].sum())
                n_neg = (positive.size if weights is None else float(weights.sum())) - n_pos
                targets = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
            else:
                targets = positive.astype(np.float64)
            features = np.column_stack([odds_t[j], np.ones(odds_t.shape[1])])
            slopes[j], intercepts[j] = fit_logistic(features, targets, weights=weights)
        self.slopes_, self.intercepts_ = slopes, intercepts

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        odds = self._log_odds(x)[:, _target_classes(x.shape[1])]
        return _combine(_sigmoid(odds * self.slopes_ + self.intercepts_))


class BetaCalibration(Recalibrator):
    """Beta calibration (the three-parameter "abm" family), one-vs-rest for K > 2.

    .. math:: q = \\frac{1}{1 + 1 / \\left(e^{c}\\, p^{a} / (1 - p)^{b}\\right)}
              = \\operatorname{sigmoid}(a \\ln p - b \\ln(1 - p) + c)

    Parameters
    ----------
    input : {"logits", "probs"}, default "probs"

    Attributes
    ----------
    a_, b_, c_ : ndarray of shape (1,) for K = 2, (K,) otherwise
        The map's parameters, ``a, b >= 0``.
    midpoint_ : ndarray
        ``m`` with ``q(m) = 1/2`` (the "abm" parametrisation), NaN when
        ``a = b = 0``.

    Notes
    -----
    As in [Kull2017]_ (and the ``betacal`` package) a logistic regression is
    fitted on the features ``(ln p, -ln(1 - p))``, both logarithms taken as
    ``log(v + 1e-12)`` by the helper every recalibrator shares
    (:func:`~calib_core.recalibration._numeric.log_probabilities`;
    ``betacal`` clips at machine epsilon instead, which differs only for
    ``p`` within about 1e-12 of 0 or 1); if the fitted ``a < 0`` it is refitted with
    ``a = 0``, else if ``b < 0`` with ``b = 0``; if the remaining
    coefficient is still negative (where ``betacal`` would keep it), both
    are set to 0 and only ``c`` is fitted, so the map is never decreasing.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.01, 0.99, 400); y = (rng.uniform(size=400) < p**2).astype(int)
    >>> beta = BetaCalibration().fit(np.column_stack([1 - p, p]), y)
    >>> bool(beta.a_[0] >= 0 and beta.b_[0] >= 0)
    True
    """

    method = "beta_calibration"
    display_name = "Beta calibration"
    works_on = "probs"
    weighted_loss = True
    _fitted_attributes = ("a_", "b_", "c_", "midpoint_")

    def __init__(self, *, input: str = "probs") -> None:
        self.input = input

    @staticmethod
    def _features(x: NDArray[np.float64], classes: list[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        p = x[:, classes]
        return log_probabilities(p), -log_probabilities(1.0 - p)

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        classes = _target_classes(x.shape[1])
        log_p, log_not_p = self._features(x, classes)
        log_p, log_not_p = transposed(log_p), transposed(log_not_p)
        ones = np.ones(x.shape[0])
        a, b, c = np.zeros(len(classes)), np.zeros(len(classes)), np.zeros(len(classes))
        for j, k in enumerate(classes):
            targets = (labels == k).astype(np.float64)
            a[j], b[j], c[j] = fit_logistic(np.column_stack([log_p[j], log_not_p[j], ones]), targets, weights=weights)
            if a[j] < 0:
                a[j] = 0.0
                b[j], c[j] = fit_logistic(np.column_stack([log_not_p[j], ones]), targets, weights=weights)
            elif b[j] < 0:
                b[j] = 0.0
                a[j], c[j] = fit_logistic(np.column_stack([log_p[j], ones]), targets, weights=weights)
            if a[j] < 0 or b[j] < 0:
                # Anti-monotone evidence: the only non-decreasing member left is a constant.
                a[j] = b[j] = 0.0
                c[j] = fit_logistic(ones[:, None], targets, weights=weights)[0]
        self.a_, self.b_, self.c_ = a, b, c
        self.midpoint_ = self._midpoint(a, b, c)

    @staticmethod
    def _midpoint(a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
        """Solve ``a ln m - b ln(1 - m) + c = 0`` for m in (0, 1) by bisection on all classes at once."""
        low, high = np.zeros_like(a), np.ones_like(a)
        for _ in range(60):
            mid = 0.5 * (low + high)
            value = a * log_probabilities(mid) - b * log_probabilities(1.0 - mid) + c
            low = np.where(value < 0, mid, low)
            high = np.where(value < 0, high, mid)
        return np.where((a == 0) & (b == 0), np.nan, 0.5 * (low + high))

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        log_p, log_not_p = self._features(x, _target_classes(x.shape[1]))
        return _combine(_sigmoid(self.a_ * log_p + self.b_ * log_not_p + self.c_))


class IsotonicCalibration(Recalibrator):
    """Isotonic regression of each class's indicator on its probability (one-vs-rest).

    Parameters
    ----------
    input : {"logits", "probs"}, default "probs"
        Logits are turned into ``softmax(logits)``.

    Attributes
    ----------
    knots_x_, knots_y_ : list of ndarray
        One array per fitted class (class 1 only for K = 2): the
        interpolation knots of the non-decreasing step fit.

    Notes
    -----
    The least-squares non-decreasing fit is found by pool adjacent violators
    (:func:`scipy.optimize.isotonic_regression`) after merging tied values.
    New values are mapped by linear interpolation between knots and clipped
    to the end values outside them, which is exactly what
    ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` does, so
    for K = 2 this agrees with scikit-learn on ``probs[:, 1]`` (scikit-learn
    also merges values closer than 1e-15; here only exact ties are merged)
    [Zadrozny2002]_.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.1, 0.3, 0.35, 0.8]); y = np.array([0, 1, 0, 1])
    >>> iso = IsotonicCalibration().fit(np.column_stack([1 - p, p]), y)
    >>> iso.predict_proba(np.array([[0.9, 0.1], [0.2, 0.8]]))[:, 1].tolist()
    [0.0, 1.0]
    """

    method = "isotonic_calibration"
    display_name = "Isotonic regression"
    works_on = "probs"
    weighted_loss = True
    emits_exact_zeros = True
    _fitted_attributes = ("knots_x_", "knots_y_")

    def __init__(self, *, input: str = "probs") -> None:
        self.input = input

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        classes = _target_classes(x.shape[1])
        knots = column_results(x if len(classes) == x.shape[1] else x[:, classes],
                               lambda j, column: isotonic_fit(column, (labels == classes[j]).astype(np.float64),
                                                              weights))
        self.knots_x_ = [knots_x for knots_x, _ in knots]
        self.knots_y_ = [knots_y for _, knots_y in knots]

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        classes = _target_classes(x.shape[1])
        # Column by column, each contiguous (map_columns: blocks of columns, no transposed copy).
        return _combine(map_columns(x if len(classes) == x.shape[1] else x[:, classes],
                                    lambda j, column: np.interp(column, self.knots_x_[j], self.knots_y_[j])))
