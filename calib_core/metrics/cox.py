"""Cox's calibration slope and intercept, and the calibration-in-the-large.

Logistic regression of the outcome on the logit of the prediction (Cox 1958):
slope (ideal 1), intercept (ideal 0) and the calibration-in-the-large (the
intercept with the slope fixed at 1), with Wald intervals from the Fisher
information. For ``K > 2`` classes each is computed one-vs-rest (class k
against the others, on ``probs[:, k]``) and returned as a ``(K,)`` array.

References
----------
.. [Cox1958] Cox, D. R. "Two further applications of a model for binary
   regression", Biometrika 45 (1958), 562-565.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit
from scipy.stats import norm as normal

from calib_core.display import compact_display
from calib_core.validation import CalibrationInputError, check_fraction, check_probs_labels, repeated_probs_labels

__all__ = ["COX_EPSILON", "CoxCalibration", "cox_calibration", "one_vs_rest"]


#: Probabilities are clipped to ``[COX_EPSILON, 1 - COX_EPSILON]`` inside the
#: logit of :func:`cox_calibration` (logits within +-16.1), as calzone does.
COX_EPSILON = 1e-7
_MAX_NEWTON_STEPS = 100
_MAX_HALVINGS = 60


def one_vs_rest(probs: ArrayLike, labels: ArrayLike) -> tuple[tuple[int, ...], NDArray[np.float64], NDArray[np.float64]]:
    """The binary problems the clinical summaries look at.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)

    Returns
    -------
    classes : tuple of int
        ``(1,)`` for ``K == 2`` (P(class 1) against ``labels == 1``), else
        ``(0, ..., K-1)``.
    scores : ndarray of shape (N, len(classes))
        ``probs[:, k]`` for each class k in ``classes``.
    outcomes : ndarray of shape (N, len(classes))
        ``1.0`` where ``labels == k``, else ``0.0``.

    Examples
    --------
    >>> classes, p, y = one_vs_rest([[0.8, 0.2], [0.3, 0.7]], [0, 1])
    >>> classes, p[:, 0].tolist(), y[:, 0].tolist()
    ((1,), [0.2, 0.7], [0.0, 1.0])
    """
    probs, labels = check_probs_labels(probs, labels)
    n_classes = probs.shape[1]
    classes = (1,) if n_classes == 2 else tuple(range(n_classes))
    columns = list(classes)
    outcomes = (labels[:, None] == np.asarray(columns)[None, :]).astype(np.float64)
    # K > 2: every column in order, so the scores are probs itself (no copy of an N x K matrix).
    return classes, (probs if n_classes > 2 else probs[:, columns]), outcomes


def _shape(values: list, binary: bool):
    """A float for a binary problem, else a ``(K,)`` array (the contract's shapes)."""
    return values[0] if binary else np.asarray(values, dtype=np.float64)


# ----------------------------------------------------------------------------- Cox calibration

@compact_display
@dataclass(frozen=True)
class CoxCalibration:
    """Cox's calibration regression ``logit P(y=1) = intercept + slope * logit(p)``.

    Every numeric field is a float for a binary problem and a ``(K,)`` array
    (one-vs-rest, class k in position k) for ``K > 2``. A fit that does not
    exist is NaN, with the reason in ``reason``.

    Attributes
    ----------
    slope, intercept : float or ndarray
        Maximum-likelihood estimates; a calibrated model has slope 1 and
        intercept 0. Slope < 1: predictions too extreme (over-fitting);
        slope > 1: too modest.
    citl : float or ndarray
        Calibration-in-the-large: the intercept ``a`` of
        ``logit P(y=1) = a + logit(p)`` (slope fixed at 1, ``logit(p)`` an
        offset); ``citl > 0``: the model predicts too low on average.
    slope_se, intercept_se, citl_se : float or ndarray
        Standard errors from the inverse Fisher information at the estimate.
    slope_low, slope_high, intercept_low, intercept_high, citl_low, citl_high : float or ndarray
        Wald ``1 - alpha`` intervals ``estimate -+ z_{1-alpha/2} * se``.
    reason : str or tuple of str
        ``""`` when the fit exists; otherwise why the slope and intercept
        (and, for a constant outcome, ``citl``) are NaN. A tuple of K
        strings for ``K > 2``.
    classes : tuple of int
        The class each entry refers to: ``(1,)`` or ``(0, ..., K-1)``.
    n : int
    alpha, epsilon : float
    iterations : int or ndarray
        Newton steps the two-parameter fit took (0 when it was not run).
    """

    slope: float | NDArray[np.float64]
    intercept: float | NDArray[np.float64]
    citl: float | NDArray[np.float64]
    slope_se: float | NDArray[np.float64]
    intercept_se: float | NDArray[np.float64]
    citl_se: float | NDArray[np.float64]
    slope_low: float | NDArray[np.float64]
    slope_high: float | NDArray[np.float64]
    intercept_low: float | NDArray[np.float64]
    intercept_high: float | NDArray[np.float64]
    citl_low: float | NDArray[np.float64]
    citl_high: float | NDArray[np.float64]
    reason: str | tuple[str, ...]
    classes: tuple[int, ...]
    n: int
    alpha: float
    epsilon: float
    iterations: int | NDArray[np.int64]


def _log_likelihood(eta: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    # y * eta - log(1 + exp(eta)), stable for large |eta|.
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)))


def _newton_logistic(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[NDArray[np.float64],
                                                                                NDArray[np.float64], int, str]:
    """Maximum likelihood of ``logit P(y=1) = b0 + b1 x`` by Newton's method with step halving.

    Returns ``(params, covariance, steps, reason)``; ``reason`` is ``""`` on success.
    """
    design = np.column_stack([np.ones_like(x), x])
    beta = np.array([0.0, 1.0])  # the calibrated model: the usual answer is close to it
    current = _log_likelihood(design @ beta, y)
    for step in range(1, _MAX_NEWTON_STEPS + 1):
        mu = expit(design @ beta)
        gradient = design.T @ (y - mu)
        information = (design * (mu * (1.0 - mu))[:, None]).T @ design
        try:
            direction = np.linalg.solve(information, gradient)
        except np.linalg.LinAlgError:
            return beta, np.full((2, 2), np.nan), step, "the Fisher information is singular"
        scale = 1.0
        for _ in range(_MAX_HALVINGS):
            candidate = beta + scale * direction
            value = _log_likelihood(design @ candidate, y)
            if value >= current - 1e-12 * abs(current):
                break
            scale *= 0.5
        beta, current = candidate, value
        if np.max(np.abs(scale * direction)) <= 1e-10 * (1.0 + np.max(np.abs(beta))):
            mu = expit(design @ beta)
            information = (design * (mu * (1.0 - mu))[:, None]).T @ design
            try:
                return beta, np.linalg.inv(information), step, ""
            except np.linalg.LinAlgError:  # converged where every fitted probability is 0 or 1
                return beta, np.full((2, 2), np.nan), step, "the Fisher information is singular"
    return beta, np.full((2, 2), np.nan), _MAX_NEWTON_STEPS, \
        f"Newton's method did not converge in {_MAX_NEWTON_STEPS} steps"


def _newton_offset(offset: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Intercept ``a`` of ``logit P(y=1) = a + offset`` and its standard error (y not constant)."""
    a = 0.0
    for _ in range(_MAX_NEWTON_STEPS):
        mu = expit(a + offset)
        information = float(np.sum(mu * (1.0 - mu)))
        step = float(np.sum(y - mu)) / information
        # The log-likelihood is concave in one parameter; halve steps that overshoot.
        current = _log_likelihood(a + offset, y)
        scale = 1.0
        for _ in range(_MAX_HALVINGS):
            if _log_likelihood(a + scale * step + offset, y) >= current - 1e-12 * abs(current):
                break
            scale *= 0.5
        a += scale * step
        if abs(scale * step) <= 1e-12 * (1.0 + abs(a)):
            break
    mu = expit(a + offset)
    return a, float(1.0 / np.sqrt(np.sum(mu * (1.0 - mu))))


def _cox_one(score: NDArray[np.float64], outcome: NDArray[np.float64], epsilon: float) -> dict:
    clipped = np.clip(score, epsilon, 1.0 - epsilon)
    x = np.log(clipped) - np.log1p(-clipped)
    nan = float("nan")
    out = dict(slope=nan, intercept=nan, citl=nan, slope_se=nan, intercept_se=nan, citl_se=nan,
               reason="", iterations=0)
    positives = float(outcome.sum())
    if positives == 0.0 or positives == outcome.size:
        which = "no row" if positives == 0.0 else "every row"
        out["reason"] = (f"the outcome is constant ({which} is of this class): the slope, intercept and "
                         "calibration-in-the-large are not defined")
        return out
    out["citl"], out["citl_se"] = _newton_offset(x, outcome)
    is_positive = outcome > 0.5
    low_pos, high_pos = x[is_positive].min(), x[is_positive].max()
    low_neg, high_neg = x[~is_positive].min(), x[~is_positive].max()
    if x.min() == x.max():
        out["reason"] = "every prediction has the same value (after clipping): the slope is not identifiable"
    elif high_neg <= low_pos or high_pos <= low_neg:
        out["reason"] = ("the predictions separate the outcome (a threshold puts every row of the class on one "
                         "side): the maximum-likelihood slope is infinite")
    else:
        params, covariance, steps, reason = _newton_logistic(x, outcome)
        out["iterations"] = steps
        if reason:
            out["reason"] = reason
        else:
            out["intercept"], out["slope"] = float(params[0]), float(params[1])
            out["intercept_se"], out["slope_se"] = (float(np.sqrt(covariance[0, 0])),
                                                    float(np.sqrt(covariance[1, 1])))
    return out


def cox_calibration(probs: ArrayLike, labels: ArrayLike, *, alpha: float = 0.05,
                    epsilon: float = COX_EPSILON,
                    sample_weight: ArrayLike | None = None) -> CoxCalibration:
    """Cox's calibration slope and intercept, and the calibration-in-the-large.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    alpha : float, default 0.05
        The Wald intervals cover ``1 - alpha``.
    epsilon : float, default :data:`COX_EPSILON` (1e-7)
        Probabilities are clipped to ``[epsilon, 1 - epsilon]`` inside the
        logit only (a prediction of exactly 0 or 1 has an infinite logit).
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (a maximum-likelihood fit:
        repeated rows and frequency weights give the same estimate; the standard errors are those of the
        repeated rows; ``docs/weights.md``). Other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    CoxCalibration
        Floats for ``K == 2`` (P(class 1) against ``labels == 1``); ``(K,)``
        arrays, one-vs-rest, for ``K > 2``.

    Raises
    ------
    CalibrationInputError
        Invalid ``probs``, ``labels``, ``alpha`` or ``epsilon``. A fit that
        does not exist on valid input is not an error: see Notes.

    Notes
    -----
    With ``x_i = logit(clip(p_i))`` and ``y_i`` the 0/1 outcome, the slope
    ``b`` and intercept ``a`` maximise the Bernoulli log-likelihood of
    ``P(y_i = 1) = expit(a + b x_i)`` [Cox1958]_; the calibration-in-the-large
    maximises it over ``a`` with ``b = 1`` fixed (``x_i`` an offset). Both are
    fitted by Newton's method (IRLS) with step halving, from ``a = 0, b = 1``,
    until the step is below ``1e-10``. Standard errors are the square roots of
    the diagonal of the inverse Fisher information
    ``(X^T W X)^{-1}``, ``W = diag(mu_i (1 - mu_i))``, at the estimate; the
    intervals are Wald intervals, as statsmodels' ``Logit.conf_int``.

    When the maximum-likelihood estimate does not exist the fields are NaN
    and ``reason`` says why (a table of many models or classes, and bootstrap
    resamples, should not stop at one degenerate fit):

    - constant outcome (no row, or every row, of the class): all NaN;
    - all predictions equal: slope and intercept NaN (``citl`` is defined);
    - separation, i.e. ``max x[y=0] <= min x[y=1]`` or
      ``max x[y=1] <= min x[y=0]`` (for one predictor with an intercept this
      is exactly when the estimate is infinite): slope and intercept NaN.

    References
    ----------
    Cox (1958), section 2 (the regression of the outcome on the log odds of
    the prediction). The calibration hierarchy: Van Calster et al., "A
    calibration hierarchy for risk models was defined: from utopia to
    empirical data", J. Clin. Epidemiol. 74 (2016), 167-176.

    Examples
    --------
    >>> import calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, size=20000); y = (rng.uniform(size=20000) < p).astype(int)
    >>> fit = cc.cox_calibration(cc.as_probs(p), y)
    >>> bool(abs(fit.slope - 1) < 0.1 and abs(fit.intercept) < 0.1 and fit.reason == "")
    True
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`cox_calibration`")
    classes, scores, outcomes = one_vs_rest(probs, labels)
    alpha = check_fraction(alpha, "alpha")
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not 0.0 < epsilon < 0.5:
        raise CalibrationInputError(f"`epsilon` must lie strictly between 0 and 0.5, got {epsilon!r}.")
    fits = [_cox_one(scores[:, j], outcomes[:, j], float(epsilon)) for j in range(len(classes))]
    z = float(normal.ppf(1.0 - alpha / 2.0))
    binary = len(classes) == 1

    def field(name):
        return _shape([f[name] for f in fits], binary)

    def bound(name, sign):
        return _shape([f[name] + sign * z * f[name + "_se"] for f in fits], binary)

    iterations = [f["iterations"] for f in fits]
    return CoxCalibration(
        slope=field("slope"), intercept=field("intercept"), citl=field("citl"),
        slope_se=field("slope_se"), intercept_se=field("intercept_se"), citl_se=field("citl_se"),
        slope_low=bound("slope", -1), slope_high=bound("slope", 1),
        intercept_low=bound("intercept", -1), intercept_high=bound("intercept", 1),
        citl_low=bound("citl", -1), citl_high=bound("citl", 1),
        reason=fits[0]["reason"] if binary else tuple(f["reason"] for f in fits),
        classes=classes, n=int(scores.shape[0]), alpha=alpha, epsilon=float(epsilon),
        iterations=iterations[0] if binary else np.asarray(iterations, dtype=np.int64),
    )


# ----------------------------------------------------------------------------- loess
