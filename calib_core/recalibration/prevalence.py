"""Prevalence adjustment: Bayes' rule shift of predictions to a deployment's class prevalence.

References
----------
.. [Saerens2002] Saerens, M., Latinne, P. & Decaestecker, C. "Adjusting the
   outputs of a classifier to new a priori probabilities", Neural Computation
   14 (2002), 21-41, eq. 2.4.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core.validation import CalibrationInputError, check_labels, check_probs

__all__ = ["PrevalenceAdjustment", "adjust_prevalence"]


@compact_display
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
