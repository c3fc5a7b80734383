"""The integrated calibration index (ICI) and E50 / E90 / Emax, with the loess smoother behind them.

:func:`ici`: a loess calibration curve, then the mean, median, 90th
percentile and maximum of ``|curve(p_i) - p_i|`` (Austin & Steyerberg 2019);
for ``K > 2`` classes one-vs-rest, as ``(K,)`` arrays. :func:`loess_smooth`
is the local-regression smoother (Cleveland 1979) with R's ``loess`` defaults.

References
----------
.. [Austin2019] Austin, P. C. & Steyerberg, E. W. "The Integrated Calibration
   Index (ICI) and related metrics for quantifying the calibration of logistic
   regression models", Statistics in Medicine 38 (2019), 4051-4065 (section 2;
   appendix: ``loess(Y ~ P)`` with R's defaults, ``mean``, ``median`` and
   ``quantile(.., 0.9)`` of ``abs(P.calibrate - P)``).
.. [Cleveland1979] Cleveland, W. S. "Robust locally weighted regression and
   smoothing scatterplots", JASA 74 (1979), 829-836.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core._accel import loess_fit_points, loess_workers, parallel_map, window_moments
from calib_core.validation import CalibrationInputError, repeated_probs_labels
from calib_core.metrics.cox import _shape, one_vs_rest

__all__ = ["ICIResult", "ici", "loess_smooth"]

#: Above this many distinct predicted values, ``delta=None`` fits on a grid (see :func:`loess_smooth`).
_EXACT_FIT_LIMIT = 1000
_AUTO_DELTA = 1e-3


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
    moments = window_moments(x_fit, safe, zero, lo_all, hi_all, xp, yp, wp, n_moments)
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
    # By x, ties by y. Without ties in x (continuous scores) a stable sort of x alone gives that order, faster.
    order = np.argsort(x_arr, kind="stable")
    xs = x_arr[order]
    tied = xs[1:] == xs[:-1]
    if tied.any():
        order = np.lexsort((y_arr, x_arr))
        xs = x_arr[order]
    ys = y_arr[order]
    # Merge repeated (x, y) pairs; the counts become weights.
    new_pair = np.empty(n, dtype=bool)
    new_pair[0] = True
    new_pair[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
    starts = np.flatnonzero(new_pair)
    xp, yp = xs[starts], ys[starts]
    counts = np.diff(np.append(starts, n)).astype(np.float64)
    # np.unique(xs, return_counts=True) of the sorted xs, without sorting them again
    new_x = np.empty(n, dtype=bool)
    new_x[0] = True
    new_x[1:] = xs[1:] != xs[:-1]
    x_starts = np.flatnonzero(new_x)
    distinct, distinct_counts = xs[x_starts], np.diff(np.append(x_starts, n))
    if delta is None:
        delta = 0.0 if distinct.size <= _EXACT_FIT_LIMIT else _AUTO_DELTA * float(distinct[-1] - distinct[0])
    fit_index = loess_fit_points(distinct, int(distinct_counts[-1]), float(delta))
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

@compact_display
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
        delta: float | None = None,
        sample_weight: ArrayLike | None = None) -> ICIResult:
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
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (a loess fit: its span counts
        repeated rows; ``docs/weights.md``). Other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

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
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`ici`")
    classes, scores, outcomes = one_vs_rest(probs, labels)
    _check_smoother_options(span, degree, iterations, delta)

    def summarise(j: int) -> tuple[float, float, float, float]:
        gap = np.abs(loess_smooth(scores[:, j], outcomes[:, j], span=span, degree=degree,
                                  iterations=iterations, delta=delta) - scores[:, j])
        e50, e90 = np.quantile(gap, [0.5, 0.9])
        return float(gap.mean()), float(e50), float(e90), float(gap.max())

    workers = loess_workers(len(classes))
    if workers > 1:  # the classes' curves on every core (the same fits, in class order)
        summaries = parallel_map(summarise, range(len(classes)), workers)
    else:
        summaries = [summarise(j) for j in range(len(classes))]
    binary = len(classes) == 1
    columns = list(zip(*summaries))
    return ICIResult(ici=_shape(list(columns[0]), binary), e50=_shape(list(columns[1]), binary),
                     e90=_shape(list(columns[2]), binary), emax=_shape(list(columns[3]), binary),
                     classes=classes, n=int(scores.shape[0]), span=float(span), degree=int(degree),
                     iterations=int(iterations), delta=None if delta is None else float(delta))

