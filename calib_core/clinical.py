"""Clinical calibration summaries: Cox's slope and intercept, the ICI, prevalence shifts.

These are the summaries clinical prediction papers report for a binary
outcome; for ``K > 2`` classes each is computed one-vs-rest (class k against
the others, on ``probs[:, k]``) and returned as a ``(K,)`` array.

- :func:`cox_calibration`: logistic regression of the outcome on the logit
  of the prediction (Cox 1958): slope (ideal 1), intercept (ideal 0) and the
  calibration-in-the-large (the intercept with the slope fixed at 1), with
  Wald intervals from the Fisher information.
- :func:`ici`: the integrated calibration index and E50 / E90 / Emax of
  Austin & Steyerberg (2019): a loess calibration curve, then the mean,
  median, 90th percentile and maximum of ``|curve(p_i) - p_i|``.
- :func:`loess_smooth`: the local-regression smoother behind :func:`ici`.
- :func:`adjust_prevalence`: Bayes' rule shift of the predictions from the
  test set's class prevalence to a deployment prevalence.

References
----------
.. [Cox1958] Cox, D. R. "Two further applications of a model for binary
   regression", Biometrika 45 (1958), 562-565.
.. [Austin2019] Austin, P. C. & Steyerberg, E. W. "The Integrated Calibration
   Index (ICI) and related metrics for quantifying the calibration of logistic
   regression models", Statistics in Medicine 38 (2019), 4051-4065 (section 2;
   appendix: ``loess(Y ~ P)`` with R's defaults, ``mean``, ``median`` and
   ``quantile(.., 0.9)`` of ``abs(P.calibrate - P)``).
.. [Cleveland1979] Cleveland, W. S. "Robust locally weighted regression and
   smoothing scatterplots", JASA 74 (1979), 829-836.
.. [Saerens2002] Saerens, M., Latinne, P. & Decaestecker, C. "Adjusting the
   outputs of a classifier to new a priori probabilities", Neural Computation
   14 (2002), 21-41, eq. 2.4.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit
from scipy.stats import norm as normal

from calib_core.validation import CalibrationInputError, check_labels, check_probs, check_probs_labels

__all__ = ["COX_EPSILON", "CoxCalibration", "ICIResult", "PrevalenceAdjustment", "adjust_prevalence",
           "cox_calibration", "ici", "loess_smooth", "one_vs_rest"]

#: Probabilities are clipped to ``[COX_EPSILON, 1 - COX_EPSILON]`` inside the
#: logit of :func:`cox_calibration` (logits within +-16.1), as calzone does.
COX_EPSILON = 1e-7
_MAX_NEWTON_STEPS = 100
_MAX_HALVINGS = 60
#: Entries of one (fit points x data points) tile of the loess weights (fits in cache).
_BLOCK_ELEMENTS = 1 << 15
#: Above this many distinct predicted values, ``delta=None`` fits on a grid (see :func:`loess_smooth`).
_EXACT_FIT_LIMIT = 1000
_AUTO_DELTA = 1e-3


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
    return classes, probs[:, columns], outcomes


def _shape(values: list, binary: bool):
    """A float for a binary problem, else a ``(K,)`` array (the contract's shapes)."""
    return values[0] if binary else np.asarray(values, dtype=np.float64)


def _check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < 1.0:
        raise CalibrationInputError(f"`alpha` must lie strictly between 0 and 1, got {alpha!r}.")
    return float(alpha)


# ----------------------------------------------------------------------------- Cox calibration

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
                    epsilon: float = COX_EPSILON) -> CoxCalibration:
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
    classes, scores, outcomes = one_vs_rest(probs, labels)
    alpha = _check_alpha(alpha)
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

def _check_smoother_options(span: object, degree: object, iterations: object, delta: object) -> None:
    if isinstance(span, bool) or not isinstance(span, numbers.Real) or not 0.0 < span <= 1.0:
        raise CalibrationInputError(f"`span` must lie in (0, 1], got {span!r}.")
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree not in (0, 1, 2):
        raise CalibrationInputError(f"`degree` must be 0, 1 or 2, got {degree!r}.")
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral) or not 0 <= iterations <= 100:
        raise CalibrationInputError(f"`iterations` must be a whole number in 0..100, got {iterations!r}.")
    if delta is not None and (isinstance(delta, bool) or not isinstance(delta, numbers.Real)
                              or not np.isfinite(delta) or delta < 0):
        raise CalibrationInputError(f"`delta` must be None or a finite number >= 0, got {delta!r}.")


def _fit_points(distinct: NDArray[np.float64], last_count: int, delta: float) -> NDArray[np.intp]:
    """Indices into ``distinct`` at which local fits are computed (statsmodels' ``delta`` rule).

    From a fit at ``u_g`` the next fit is at the largest distinct value within
    ``delta`` of it (at least the next value). When every remaining value is
    within ``delta``, statsmodels fits at the second-to-last observation and
    then the last one; that is reproduced (``last_count`` is how many
    observations share the largest value).
    """
    m = distinct.size
    if delta <= 0.0 or m <= 2:
        return np.arange(m)
    # The observation before the last one, as an index into the distinct values.
    second_last = m - 1 if last_count >= 2 else m - 2
    chosen = [0]
    g = 0
    while g < m - 1:
        j = int(np.searchsorted(distinct, distinct[g] + delta, side="right")) - 1
        g = max(second_last if j == m - 1 else j, g + 1)
        chosen.append(g)
    return np.asarray(chosen, dtype=np.intp)


def _window_moments(centre: NDArray[np.float64], radius: NDArray[np.float64], zero: NDArray[np.bool_],
                    xp: NDArray[np.float64], values: NDArray[np.float64], wp: NDArray[np.float64],
                    n_moments: int) -> NDArray[np.float64]:
    """``sum_j w_ij t_ij^p values_j`` for ``p < n_moments``: (rows, n_moments, 2) tricube-weighted moments.

    ``t_ij = (xp_j - centre_i) / radius_i``; ``w_ij = (1 - |t_ij|^3)^3 wp_j`` for
    ``|t_ij| < 1``, else 0 (rows with ``zero``: ``wp_j`` where ``xp_j == centre_i``).
    """
    t = xp[None, :] - centre[:, None]
    # A window narrower than the spacing of far points (radius ~1e-300 among predictions of 1e-300) sends
    # their t to +-inf; every point with |t| >= 1 has weight 0, so t is capped at +-1, which keeps the
    # tricube and the moments finite (an infinite t times a zero weight would be NaN).
    with np.errstate(over="ignore"):
        t /= radius[:, None]
    np.clip(t, -1.0, 1.0, out=t)
    # Tricube with in-place products (no pow, few temporaries).
    weight = np.abs(t)
    cube = weight * weight
    cube *= weight
    np.subtract(1.0, cube, out=cube)
    np.maximum(cube, 0.0, out=cube)
    np.multiply(cube, cube, out=weight)
    weight *= cube
    if zero.any():
        weight[zero] = (xp[None, :] == centre[zero, None]).astype(np.float64)
    weight *= wp[None, :]
    moments = np.empty((centre.size, n_moments, 2))
    for p in range(n_moments):
        moments[:, p] = weight @ values
        if p < n_moments - 1:
            np.multiply(weight, t, out=weight)
    return moments


def _local_fits(x_fit: NDArray[np.float64], radius: NDArray[np.float64], xp: NDArray[np.float64],
                yp: NDArray[np.float64], wp: NDArray[np.float64], distinct: NDArray[np.float64],
                degree: int) -> NDArray[np.float64]:
    """Value at ``x_fit[i]`` of the weighted polynomial fit with tricube weights of radius ``radius[i]``.

    ``xp`` (sorted), ``yp``, ``wp``: the data as distinct (x, y) pairs with
    their weights (counts times robustness weights). The fit is solved in the
    scaled coordinate ``t = (x - x_fit) / radius`` from the normal equations
    ``A_jl = sum w t^(j+l)``, ``b_j = sum w y t^j``.
    """
    safe = np.where(radius > 0.0, radius, 1.0)
    zero = radius == 0.0
    # Distinct x values strictly inside the window: the most coefficients the data can determine.
    inside = (np.searchsorted(distinct, x_fit + radius, side="left")
              - np.searchsorted(distinct, x_fit - radius, side="right"))
    effective = np.minimum(degree, np.where(zero, 1, inside) - 1)
    lo_all = np.searchsorted(xp, x_fit - radius, side="left")
    hi_all = np.searchsorted(xp, x_fit + radius, side="right")
    n_moments = 2 * degree + 1
    moments = np.zeros((x_fit.size, n_moments, 2))
    values = np.column_stack([np.ones_like(yp), yp])
    start = 0
    while start < x_fit.size:
        # Rows whose windows overlap, in blocks of a few cache-sized (rows x columns) tiles.
        stop = start + 1
        while stop < x_fit.size and stop - start < 64 and \
                (stop + 1 - start) * (hi_all[stop] - lo_all[start]) <= 64 * _BLOCK_ELEMENTS:
            stop += 1
        lo, hi = int(lo_all[start]), int(hi_all[stop - 1])
        step = max(1, _BLOCK_ELEMENTS // (stop - start))
        for c0 in range(lo, hi, step):
            c1 = min(hi, c0 + step)
            moments[start:stop] += _window_moments(x_fit[start:stop], safe[start:stop], zero[start:stop],
                                                   xp[c0:c1], values[c0:c1], wp[c0:c1], n_moments)
        start = stop
    size = degree + 1
    index = np.arange(size)
    matrix = moments[:, index[:, None] + index[None, :], 0]
    rhs = moments[:, :size, 1].copy()
    # Coefficients the window cannot determine are pinned at 0 (a lower-degree fit).
    unused = index[None, :] > effective[:, None]
    matrix[unused] = 0.0
    matrix.transpose(0, 2, 1)[unused] = 0.0
    rows, cols = np.nonzero(unused)
    matrix[rows, cols, cols] = 1.0
    rhs[unused] = 0.0
    try:
        coefficients = np.linalg.solve(matrix, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # zero robustness weights can leave too few points; rare
        coefficients = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(matrix, rhs)])
    return coefficients[:, 0]


def _weighted_median(values: NDArray[np.float64], counts: NDArray[np.float64]) -> float:
    """``np.median`` of ``values`` repeated ``counts`` times, without repeating them."""
    order = np.argsort(values, kind="stable")
    ends = np.cumsum(counts[order])
    n = int(round(ends[-1]))
    low = values[order][np.searchsorted(ends, (n - 1) // 2, side="right")]
    high = values[order][np.searchsorted(ends, n // 2, side="right")]
    return float((low + high) / 2.0)


def loess_smooth(x: ArrayLike, y: ArrayLike, *, span: float = 0.75, degree: int = 2, iterations: int = 0,
                 delta: float | None = None) -> NDArray[np.float64]:
    """Loess / lowess smoother: local polynomial fits with tricube weights, at every ``x``.

    Parameters
    ----------
    x, y : array_like of shape (N,)
        Finite numbers.
    span : float in (0, 1], default 0.75
        Fraction of the observations in each local fit: ``q = int(span * N)``
        (at least 2, at most N) nearest ones. R's ``loess`` ``span``,
        statsmodels' ``lowess`` ``frac``.
    degree : {0, 1, 2}, default 2
        Degree of the local polynomials (R's ``loess`` default 2;
        statsmodels' ``lowess`` and R's ``lowess`` use 1).
    iterations : int, default 0
        Robustness iterations (bisquare weights of the residuals scaled by 6
        times their median, Cleveland 1979); R's ``loess`` default
        ``family="gaussian"`` is 0, statsmodels' ``it`` defaults to 3.
    delta : float or None, default None
        Local fits are computed only at data values at least ``delta`` apart
        and interpolated linearly in between, by statsmodels' rule (the next
        fit is at the farthest value within ``delta`` of the last one).
        ``0``: a fit at every distinct value (exact). ``None``: exact when
        there are at most 1000 distinct ``x`` values, otherwise
        ``0.001 * (max(x) - min(x))`` (about 1000 fits).

    Returns
    -------
    ndarray of shape (N,)
        The smoothed value at each ``x``, in the input order.

    Raises
    ------
    CalibrationInputError
        ``x`` and ``y`` not finite 1-D arrays of one length, or invalid options.

    Notes
    -----
    At a point ``x0``, let ``r`` be the distance to the ``q``-th nearest
    observation (counting repeats). Each observation gets the weight
    ``w_j = (1 - |d_j / r|^3)^3`` for ``|d_j| < r`` (0 beyond),
    ``d_j = x_j - x0``, times its robustness weight, and the fitted value is
    ``b_0`` of the weighted least-squares fit of
    ``y ~ b_0 + b_1 d + ... + b_degree d^degree``. This is the "direct"
    computation of R's ``loess`` and exactly statsmodels' ``lowess`` for
    ``degree=1`` (same neighbourhoods, weights and ``delta`` rule), up to
    round-off. R's default ``surface="interpolate"`` instead fits at the
    vertices of a k-d tree and interpolates with cubic polynomials, which moves
    the curve by up to about 0.03 on 200 points; ``docs/clinical.md`` gives
    the effect on the ICI.

    Windows that hold fewer than ``degree + 1`` distinct ``x`` values get the
    highest degree they determine (a weighted mean when all ``q`` neighbours
    share one value), where statsmodels would return the observation's own
    ``y``. Repeated ``(x, y)`` pairs are merged with their counts as weights,
    so the result does not depend on the row order; the cost is about
    ``(number of fits) x span x (number of distinct values)`` multiply-adds,
    in blocks of bounded memory.

    References
    ----------
    Cleveland (1979), section 2 (local fits with tricube weights, robustness
    iterations); Cleveland, W. S. & Devlin, S. J., "Locally weighted
    regression", JASA 83 (1988), 596-610 (local quadratic fits, R's
    ``loess``); statsmodels ``nonparametric.lowess`` (the ``delta`` rule).

    Examples
    --------
    >>> x = np.linspace(0, 1, 11)
    >>> np.allclose(loess_smooth(x, 2 * x + 1, degree=1), 2 * x + 1)
    True
    """
    _check_smoother_options(span, degree, iterations, delta)
    x_arr = np.asarray(x, dtype=np.float64) if not isinstance(x, np.ndarray) else x.astype(np.float64, copy=False)
    y_arr = np.asarray(y, dtype=np.float64) if not isinstance(y, np.ndarray) else y.astype(np.float64, copy=False)
    if x_arr.ndim != 1 or y_arr.ndim != 1 or x_arr.shape != y_arr.shape or x_arr.size == 0:
        raise CalibrationInputError(
            f"`x` and `y` must be non-empty 1-D arrays of one length, got shapes {x_arr.shape} and {y_arr.shape}."
        )
    if not (np.isfinite(x_arr).all() and np.isfinite(y_arr).all()):
        raise CalibrationInputError("`x` and `y` must be finite (no NaN or infinite values).")
    n = x_arr.size
    q = min(max(int(span * n + 1e-10), 2), n)
    order = np.lexsort((y_arr, x_arr))
    xs, ys = x_arr[order], y_arr[order]
    # Merge repeated (x, y) pairs; the counts become weights.
    new_pair = np.empty(n, dtype=bool)
    new_pair[0] = True
    new_pair[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
    starts = np.flatnonzero(new_pair)
    xp, yp = xs[starts], ys[starts]
    counts = np.diff(np.append(starts, n)).astype(np.float64)
    distinct, distinct_counts = np.unique(xs, return_counts=True)
    if delta is None:
        delta = 0.0 if distinct.size <= _EXACT_FIT_LIMIT else _AUTO_DELTA * float(distinct[-1] - distinct[0])
    fit_index = _fit_points(distinct, int(distinct_counts[-1]), float(delta))
    x_fit = distinct[fit_index]
    # Radius: distance to the q-th nearest observation (the window of q sorted
    # observations whose ends are most nearly equidistant from x_fit).
    middles = (xs[: n - q] + xs[q:]) / 2.0
    left = np.searchsorted(middles, x_fit, side="left")
    radius = np.maximum(x_fit - xs[left], xs[left + q - 1] - x_fit)
    robustness = np.ones_like(counts)
    for step in range(int(iterations) + 1):
        fitted = _local_fits(x_fit, radius, xp, yp, counts * robustness, distinct, int(degree))
        if step == iterations:
            break
        residual = np.abs(yp - np.interp(xp, x_fit, fitted))
        median = _weighted_median(residual, counts)
        if median <= 1e-7:  # statsmodels stops here: the fit is (nearly) exact
            break
        robustness = (1.0 - np.minimum(residual / (6.0 * median), 1.0) ** 2) ** 2
    smoothed = np.empty(n)
    smoothed[order] = np.interp(xs, x_fit, fitted)
    return smoothed


# ----------------------------------------------------------------------------- ICI

@dataclass(frozen=True)
class ICIResult:
    """Integrated calibration index and related summaries of a loess calibration curve.

    Every numeric field is a float for a binary problem and a ``(K,)`` array
    (one-vs-rest) for ``K > 2``.

    Attributes
    ----------
    ici : float or ndarray
        ``mean_i |c(p_i) - p_i|`` with ``c`` the loess calibration curve.
    e50, e90 : float or ndarray
        Median and 90th percentile (linear interpolation, R's default
        ``quantile`` type 7 and numpy's default) of ``|c(p_i) - p_i|``.
    emax : float or ndarray
        Largest ``|c(p_i) - p_i|`` over the observations (Harrell's Emax
        evaluated at the data).
    classes : tuple of int
    n : int
    span, degree, iterations, delta
        The smoother's settings (``delta`` as given; ``None`` is automatic).
    """

    ici: float | NDArray[np.float64]
    e50: float | NDArray[np.float64]
    e90: float | NDArray[np.float64]
    emax: float | NDArray[np.float64]
    classes: tuple[int, ...]
    n: int
    span: float
    degree: int
    iterations: int
    delta: float | None


def ici(probs: ArrayLike, labels: ArrayLike, *, span: float = 0.75, degree: int = 2, iterations: int = 0,
        delta: float | None = None) -> ICIResult:
    """Integrated calibration index (ICI), E50, E90 and Emax (Austin & Steyerberg 2019).

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    span, degree, iterations, delta
        The loess smoother's settings, see :func:`loess_smooth`. The defaults
        are the paper's (R's ``loess(Y ~ P)``: span 0.75, local quadratic, no
        robustness iterations). calzone's ``lowess_regression_analysis`` is
        ``span=0.5, degree=1, iterations=0, delta=0.001``.

    Returns
    -------
    ICIResult
        Floats for ``K == 2`` (P(class 1)); ``(K,)`` arrays, one-vs-rest, for
        ``K > 2``.

    Raises
    ------
    CalibrationInputError
        Invalid ``probs``, ``labels`` or smoother settings.

    Notes
    -----
    With ``p_i`` the predicted probability and ``y_i`` the 0/1 outcome, the
    calibration curve ``c`` is the loess regression of ``y`` on ``p``,
    evaluated at each ``p_i``, and with ``d_i = |c(p_i) - p_i|``:
    ``ICI = (1/N) sum_i d_i``, ``E50 = median(d)``, ``E90 = quantile(d, 0.9)``
    (Austin & Steyerberg 2019, section 2.2; the ICI is the integral of
    ``|c(p) - p|`` against the empirical distribution of the predictions).
    The smoothed curve is not clipped to [0, 1].

    References
    ----------
    Austin, P. C. & Steyerberg, E. W., Stat. Med. 38 (2019), 4051-4065,
    section 2 and the appendix's R code.

    Examples
    --------
    >>> import calib_core as cc
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000); y = (rng.uniform(size=2000) < p).astype(int)
    >>> r = cc.ici(cc.as_probs(p), y)
    >>> bool(r.ici < 0.03 and r.e50 <= r.e90 <= r.emax)
    True
    """
    classes, scores, outcomes = one_vs_rest(probs, labels)
    _check_smoother_options(span, degree, iterations, delta)
    summaries = []
    for j in range(len(classes)):
        gap = np.abs(loess_smooth(scores[:, j], outcomes[:, j], span=span, degree=degree,
                                  iterations=iterations, delta=delta) - scores[:, j])
        e50, e90 = np.quantile(gap, [0.5, 0.9])
        summaries.append((float(gap.mean()), float(e50), float(e90), float(gap.max())))
    binary = len(classes) == 1
    columns = list(zip(*summaries))
    return ICIResult(ici=_shape(list(columns[0]), binary), e50=_shape(list(columns[1]), binary),
                     e90=_shape(list(columns[2]), binary), emax=_shape(list(columns[3]), binary),
                     classes=classes, n=int(scores.shape[0]), span=float(span), degree=int(degree),
                     iterations=int(iterations), delta=None if delta is None else float(delta))


# ----------------------------------------------------------------------------- prevalence

@dataclass(frozen=True)
class PrevalenceAdjustment:
    """Predictions moved to new class prevalences by Bayes' rule.

    Attributes
    ----------
    probs : ndarray of shape (N, K)
        The adjusted predictions (rows on the simplex).
    source, target : ndarray of shape (K,)
        Class prevalences the predictions were made for, and the ones they
        are moved to.
    weights : ndarray of shape (K,)
        ``target / source``: each class probability is multiplied by its
        weight and the row renormalised.
    odds_factor : float
        Binary problems: the factor on the odds of class 1,
        ``(pi_new / (1 - pi_new)) / (pi_old / (1 - pi_old))``; NaN for K > 2.
    """

    probs: NDArray[np.float64]
    source: NDArray[np.float64]
    target: NDArray[np.float64]
    weights: NDArray[np.float64]
    odds_factor: float


def _check_prevalence(value: ArrayLike, n_classes: int, name: str) -> NDArray[np.float64]:
    array = np.asarray(value, dtype=np.float64) if not isinstance(value, np.ndarray) else value.astype(np.float64)
    if array.ndim == 0:
        if n_classes != 2:
            raise CalibrationInputError(
                f"`{name}` must be a vector of {n_classes} class prevalences for {n_classes} classes, "
                f"got the single number {value!r} (a single number means P(class 1) of a binary problem)."
            )
        array = np.array([1.0 - float(array), float(array)])
    if array.shape != (n_classes,) or not np.isfinite(array).all():
        raise CalibrationInputError(
            f"`{name}` must be a number in (0, 1) (binary) or {n_classes} finite prevalences, got {value!r}."
        )
    if (array <= 0.0).any() or (array >= 1.0).any() or abs(array.sum() - 1.0) > 1e-6:
        raise CalibrationInputError(
            f"`{name}` must hold prevalences strictly between 0 and 1 that sum to 1, got {array.tolist()}."
        )
    return array


def adjust_prevalence(probs: ArrayLike, prevalence: float | ArrayLike, *, labels: ArrayLike | None = None,
                      source_prevalence: float | ArrayLike | None = None) -> PrevalenceAdjustment:
    """Shift predictions from the test set's class prevalence to a deployment prevalence.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    prevalence : float or array_like of shape (K,)
        The deployment prevalence: P(class 1) for a binary problem, or one
        prevalence per class (summing to 1).
    labels : array_like of shape (N,), optional
        The source prevalence is the class frequencies of ``labels`` (the
        test set) unless ``source_prevalence`` is given.
    source_prevalence : float or array_like of shape (K,), optional
        The prevalence the predictions were made for, if not the labels'.

    Returns
    -------
    PrevalenceAdjustment

    Raises
    ------
    CalibrationInputError
        Invalid ``probs``; neither ``labels`` nor ``source_prevalence``; a
        prevalence outside (0, 1) (a class absent from ``labels`` included).

    Notes
    -----
    If the class-conditional distributions of the inputs are the same in test
    and deployment and only the prevalences change (prior shift), Bayes' rule
    gives [Saerens2002]_ eq. 2.4:

    .. math:: p'_k = \\frac{p_k \\, \\pi'_k / \\pi_k}{\\sum_j p_j \\, \\pi'_j / \\pi_j}.

    For two classes this is the odds form
    ``odds(p') = odds(p) * odds(pi_new) / odds(pi_old)``. For a one-vs-rest
    view of class k of a K-class model, pass ``cc.as_probs(probs[:, k])``
    and ``labels == k``. Predictions of exactly 0 or 1 stay 0 or 1.
    Calibration measured on the adjusted predictions against the test labels
    is no longer meaningful (the labels keep the test prevalence); the
    adjusted predictions are what the model would say at deployment.

    References
    ----------
    Saerens, Latinne & Decaestecker (2002), section 2.2.

    Examples
    --------
    >>> r = adjust_prevalence([[0.5, 0.5], [0.8, 0.2]], 0.1, source_prevalence=0.5)
    >>> np.round(r.probs[:, 1], 4).tolist(), round(r.odds_factor, 4)
    ([0.1, 0.027], 0.1111)
    """
    probs = check_probs(probs)
    n_classes = probs.shape[1]
    target = _check_prevalence(prevalence, n_classes, "prevalence")
    if source_prevalence is not None:
        source = _check_prevalence(source_prevalence, n_classes, "source_prevalence")
    elif labels is not None:
        checked = check_labels(labels, n_classes, n_rows=probs.shape[0])
        frequencies = np.bincount(checked, minlength=n_classes) / checked.size
        if (frequencies == 0.0).any():
            missing = int(np.flatnonzero(frequencies == 0.0)[0])
            raise CalibrationInputError(
                f"`labels` has no row of class {missing}, so its prevalence is 0 and cannot be shifted; "
                "give `source_prevalence` instead."
            )
        source = frequencies
    else:
        raise CalibrationInputError("give `labels` (the test set's prevalence) or `source_prevalence`.")
    weights = target / source
    adjusted = probs * weights[None, :]
    adjusted /= adjusted.sum(axis=1, keepdims=True)
    odds_factor = float(weights[1] / weights[0]) if n_classes == 2 else float("nan")
    return PrevalenceAdjustment(probs=adjusted, source=source, target=target, weights=weights,
                                odds_factor=odds_factor)
