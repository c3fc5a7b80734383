"""The clinical summaries of the registry: Cox's slope, intercept and calibration-in-the-large, and the ICI.

One fit serves the metrics that read it (:func:`shared_fit`); for K > 2 each
summary is the mean over the one-vs-rest fits, with the sandwich standard
error of that mean (:func:`cox_mean_std_error`). The registry
(:mod:`calib_core.metrics.registry`) names them.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from calib_core.metrics.cox import CoxCalibration, cox_calibration, one_vs_rest
from calib_core.metrics.ici import ici
from calib_core._accel import KeptValues
from calib_core.validation import CalibrationInputError, is_validated

__all__ = ["cox_compute", "cox_mean_std_error", "cox_scalar", "cox_variance", "ici_compute", "shared_fit"]


def cox_scalar(fit: CoxCalibration, name: str) -> float:
    """Field ``name`` of a Cox fit as one number: the value (binary) or the mean over classes (K > 2).

    Raises :class:`CalibrationInputError` with the fit's reason when the
    estimate does not exist (for K > 2: for any class).
    """
    values = np.atleast_1d(np.asarray(getattr(fit, name), dtype=np.float64))
    missing = np.flatnonzero(~np.isfinite(values))
    if missing.size:
        reasons = (fit.reason,) if isinstance(fit.reason, str) else fit.reason
        what = {"slope": "slope", "intercept": "intercept", "citl": "calibration-in-the-large"}[name]
        if len(fit.classes) == 1:
            raise CalibrationInputError(f"the Cox {what} does not exist: {reasons[0]}.")
        first = int(missing[0])
        others = "" if missing.size == 1 else \
            f" (and of class{'es' if missing.size > 2 else ''} {', '.join(str(fit.classes[j]) for j in missing[1:])})"
        raise CalibrationInputError(
            f"the one-vs-rest Cox {what} of class {fit.classes[first]}{others} does not exist, so their mean does "
            f"not either: {reasons[first]}."
        )
    return float(values.mean())


#: The last fit of each shared fit function, found by the arrays it was made on (see :func:`shared_fit`).
_LAST_FITS = KeptValues(capacity=2)


def shared_fit(function: Callable, probs: np.ndarray, labels: np.ndarray):
    """``function(probs, labels)``, fitted once for the metrics that read one fit.

    ICI, E50 and E90 read one loess fit per class, and Cox's slope, intercept
    and calibration-in-the-large one regression: a table of every metric would
    fit each three times (4.7 s per loess fit at 100,000 x 10). The last fit is
    reused only for the very same arrays and only when both are frozen and
    marked (those of a :class:`~calib_core.io.Predictions`), so no in-place
    change can make it stale (a read-only view of writeable memory is not).
    """
    if not (is_validated(probs) and is_validated(labels, probs.shape[1])):
        return function(probs, labels)
    fit = _LAST_FITS.get((probs, labels), function.__name__)
    if fit is None:
        fit = _LAST_FITS.put((probs, labels), function.__name__, function(probs, labels))
    return fit


def cox_compute(name):
    def compute(probs, labels, n_bins=15, binning="uniform"):
        return cox_scalar(shared_fit(cox_calibration, probs, labels), name)
    return compute


def cox_variance(name):
    """``variance(probs, labels, bandwidth)`` of the Cox summary ``name`` (see :func:`cox_mean_std_error`)."""
    def variance(probs, labels, bandwidth=None):
        fit = shared_fit(cox_calibration, probs, labels)
        estimate = cox_scalar(fit, name)
        if len(fit.classes) == 1:
            return estimate, float(getattr(fit, name + "_se")), "Wald interval from the Fisher information"
        return estimate, cox_mean_std_error(probs, labels, fit, name), (
            f"normal interval, sandwich standard error of the mean over the {len(fit.classes)} one-vs-rest fits")
    return variance


def cox_mean_std_error(probs: ArrayLike, labels: ArrayLike, fit: CoxCalibration, name: str) -> float:
    """Sandwich standard error of the mean over classes of one-vs-rest Cox estimates (one class: HC0).

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    fit : CoxCalibration
        ``cox_calibration(probs, labels)`` with every field of ``name`` finite.
    name : {"slope", "intercept", "citl"}

    Returns
    -------
    float

    Notes
    -----
    The K fits share the rows, so their estimates are correlated and the
    per-class Wald errors do not combine. Stacking the K score equations
    (one M-estimator, Stefanski & Boos 2002, eq. 4-5) gives each row the
    influence ``IF_ik = A_k^{-1} x_i (y_ik - mu_ik)`` in fit k, with
    ``x_i = (1, logit p_ik)`` (``citl``: ``x_i = 1``, offset ``logit p_ik``)
    and ``A_k = sum_i mu_ik (1 - mu_ik) x_i x_i^T``. The mean over classes
    has influence ``m_i = (1/K) sum_k IF_ik`` (its component ``name``), and
    the sandwich variance is ``sum_i m_i^2``. For one class this is the
    robust (HC0) error of the logistic fit, which equals the Wald error when
    the model holds.

    References
    ----------
    Stefanski, L. A. & Boos, D. D. "The calculus of M-estimation", The
    American Statistician 56 (2002), 29-38.
    """
    _, scores_, outcomes = one_vs_rest(probs, labels)
    clipped = np.clip(scores_, fit.epsilon, 1.0 - fit.epsilon)
    x = np.log(clipped) - np.log1p(-clipped)
    if name == "citl":
        mu = expit(np.atleast_1d(fit.citl)[None, :] + x)
        influence = (outcomes - mu) / np.sum(mu * (1.0 - mu), axis=0)
    else:
        mu = expit(np.atleast_1d(fit.intercept)[None, :] + np.atleast_1d(fit.slope)[None, :] * x)
        w, residual = mu * (1.0 - mu), outcomes - mu
        s0, s1, s2 = w.sum(axis=0), (w * x).sum(axis=0), (w * x * x).sum(axis=0)
        determinant = s0 * s2 - s1 * s1
        # Rows of the inverse of [[s0, s1], [s1, s2]] applied to (1, x) * residual.
        influence = ((s2 - s1 * x) if name == "intercept" else (s0 * x - s1)) * residual / determinant
    return float(np.sqrt(np.sum(influence.mean(axis=1) ** 2)))


def ici_compute(name):
    def compute(probs, labels, n_bins=15, binning="uniform"):
        return float(np.mean(getattr(shared_fit(ici, probs, labels), name)))
    return compute
