"""Spline calibration (Lucena 2018): a penalised logistic regression on a natural cubic spline of the log-odds.

References
----------
.. [Lucena2018] Lucena, B. "Spline-Based Probability Calibration",
   arXiv:1809.07751, 2018: section 2 (natural cubic spline basis of the
   log-odds, eq. 1-2, with knots sampled from the data), section 3 (ridge-
   penalised log loss with the penalty chosen on a held-out fold) and the
   "unity prior" (synthetic points on y = x). Implemented as in the
   author's ``splinecalib`` package (version 0.0.13), whose results it
   reproduces.
"""
from __future__ import annotations

import random

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import expit

from calib_core._accel import blas_single_threaded
from calib_core.recalibration._base import Recalibrator, _renormalise
from calib_core.recalibration.one_vs_rest import _target_classes
from calib_core.validation import CalibrationInputError, check_count, check_positive

__all__ = ["SplineCalibration", "natural_cubic_basis"]

#: The penalties tried (``splinecalib``'s default: 17 values, log-spaced from 1e-4 to 1e4).
PENALTIES = np.logspace(-4, 4, 17)
#: Knots always added to the sampled ones (``splinecalib``'s ``add_knots="auto"``).
EXTRA_KNOTS = np.linspace(0.1, 0.9, 9)


def _unity_prior() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Synthetic points on y = x and their relative weights (``splinecalib``'s default grid)."""
    tail = 10.0 ** np.linspace(-8, -2, 19)
    grid = np.unique(np.concatenate([tail, np.linspace(0.01, 0.99, 99), 1.0 - tail]))
    weights = np.concatenate([np.full(18, 1 / 18), np.ones(99), np.full(18, 1 / 18)])
    return grid, weights


def natural_cubic_basis(x: NDArray[np.float64], knots: NDArray[np.float64]) -> NDArray[np.float64]:
    """The natural cubic spline basis ``[1, x, N_3(x), ..., N_m(x)]`` at ``m`` increasing knots.

    ``N_{k+2}(x) = d_k(x) - d_{m-1}(x)`` with
    ``d_k(x) = ((x - t_k)_+^3 - (x - t_m)_+^3) / (t_m - t_k)`` ([Lucena2018]_
    eq. 2; Hastie, Tibshirani & Friedman, eq. 5.4-5.5).
    """
    last = knots[-1]

    def d(at: NDArray[np.float64]) -> NDArray[np.float64]:
        return (np.maximum(x[:, None] - at, 0.0) ** 3 - np.maximum(x[:, None] - last, 0.0) ** 3) / (last - at)

    return np.column_stack([np.ones(x.size), x, d(knots[:-2]) - d(knots[-2:-1])])


def _loss(beta: NDArray[np.float64], basis: NDArray[np.float64], y: NDArray[np.float64], penalty: float,
          weights: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
    """``sum_i w_i logloss_i / n + penalty * |beta|^2 / len(beta)`` and its gradient (``splinecalib``'s objective).

    The penalised fits are ill-conditioned (cubic terms of log-odds up to 28^3): L-BFGS stops at points
    that another rounding of the same loss moves, and the penalty chosen on the held-out fold with them,
    so agreement with ``splinecalib`` is close on most data but not guaranteed to the last digit.
    """
    eta = basis @ beta
    n = basis.shape[0]
    value = np.sum(weights * (y * np.logaddexp(0.0, -eta) + (1.0 - y) * np.logaddexp(0.0, eta))) / n
    z = 0.5 * (1.0 + np.tanh(0.5 * eta))
    gradient = basis.T @ (weights * (z - y)) / n + 2.0 * penalty * beta / beta.size
    return value + penalty * float(beta @ beta) / beta.size, gradient


def _folds(y: NDArray[np.float64], n_folds: int, seed: int) -> NDArray[np.float64]:
    """``splinecalib``'s stratified fold numbers (each distinct target shuffled with the legacy seed)."""
    folds = np.full(y.size, -1.0)
    for value in np.unique(y):
        rows = np.flatnonzero(y == value)
        np.random.RandomState(seed).shuffle(rows)
        cuts = np.round(rows.size / n_folds * np.arange(n_folds + 1)).astype(int)
        for i in range(n_folds):
            folds[rows[cuts[i]:cuts[i + 1]]] = i if value % 2 == 0 else n_folds - i - 1
    return folds


class SplineCalibration(Recalibrator):
    """Spline calibration (Lucena 2018), one-vs-rest for K > 2, renormalised.

    Parameters
    ----------
    knot_sample_size : int, default 30
        Knots sampled from the distinct fitting values (the smallest and
        largest always among them), plus 0.1, 0.2, ..., 0.9.
    n_folds : int, default 5
        Stratified folds; the penalty is chosen on fold 0.
    unity_prior_weight : float, default 20
        Total weight of the synthetic points on y = x (0: none).
    seed : int, default 42
        Seeds the knot sample and the folds (``splinecalib``'s ``random_state``).
    input : {"logits", "probs"}, default "probs"

    Attributes
    ----------
    knots_ : list of ndarray
        Per fitted class (class 1 only for K = 2), the knots on the log-odds scale.
    coefficients_ : list of ndarray
        The spline coefficients.
    eps_ : ndarray
        Per fitted class, the clip of probabilities before the log-odds.
    penalty_ : ndarray
        The chosen ridge penalty per fitted class.

    Notes
    -----
    [Lucena2018]_: with ``s = logit(clip(p, eps, 1 - eps))`` and the natural
    cubic basis ``B(s)`` at the knots (:func:`natural_cubic_basis`),
    ``q = sigmoid(B(s) beta)``, ``beta`` minimising
    ``(1/n) sum_i w_i [-y_i log q_i - (1 - y_i) log(1 - q_i)] + lambda |beta|^2 / dim(beta)``
    over the fitting rows and 135 synthetic points ``(u, u)`` on the
    diagonal of total weight ``unity_prior_weight``; ``lambda`` is the one
    of 17 log-spaced values (1e-4 to 1e4) with the lowest held-out log loss
    on fold 0 (rounded to 4 decimals, ties to the smaller), and ``beta`` is
    then refitted on the other folds (as ``splinecalib`` does, so fold 0
    stays held out). ``eps`` is ``min(1e-4, 2^(round(log2 m) - 1))``, m the
    value closest to 0 or 1. Each ``q`` lies strictly inside (0, 1); for K = 2 the class-0
    column is ``sigmoid(-eta)``, not ``1 - q`` (which rounds to exactly 0 beyond ``eta ~ 37``).
    ``sample_weight`` multiplies each row's loss (normalised to mean 1).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.01, 0.99, 400); y = (rng.uniform(size=400) < p ** 2).astype(int)
    >>> spline = SplineCalibration().fit(np.column_stack([1 - p, p]), y)
    >>> bool(spline.predict_proba(np.array([[0.5, 0.5]]))[0, 1] < 0.5)
    True
    """

    method = "spline_calibration"
    display_name = "Spline calibration"
    works_on = "probs"
    _fitted_attributes = ("knots_", "coefficients_", "eps_", "penalty_")
    #: A weighted log loss; whole-number weights fit the repeated rows themselves, since the penalty is chosen on
    #: a held-out fold of rows (a row and its copies must fall where a repeated row's copies fall).
    weighted_loss = True
    repeat_whole_weights = True

    def __init__(self, *, knot_sample_size: int = 30, n_folds: int = 5, unity_prior_weight: float = 20.0,
                 seed: int = 42, input: str = "probs") -> None:
        self.knot_sample_size = knot_sample_size
        self.n_folds = n_folds
        self.unity_prior_weight = unity_prior_weight
        self.seed = seed
        self.input = input

    def _check_params(self) -> None:
        super()._check_params()
        check_count(self.knot_sample_size, "knot_sample_size", minimum=2)
        check_count(self.n_folds, "n_folds", minimum=2)
        check_positive(self.unity_prior_weight, "unity_prior_weight", allow_zero=True)
        check_count(self.seed, "seed", minimum=0)

    def _knots(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        unique = np.unique(values)
        if unique.size < 3:
            raise CalibrationInputError(
                f"spline calibration needs at least 3 distinct probabilities per class, got {unique.size}.")
        size = int(self.knot_sample_size)
        if unique.size > size:
            others = list(unique[1:-1])
            random.Random(self.seed).shuffle(others)  # splinecalib's sample: Python's generator, seeded
            sample = np.concatenate([others[:size - 2], unique[[0, -1]]])
        else:
            sample = unique
        return np.unique(np.concatenate([sample, EXTRA_KNOTS]))

    def _fit_binary(self, values: NDArray[np.float64], targets: NDArray[np.float64],
                    weights: NDArray[np.float64] | None) -> tuple:
        knots = self._knots(values)
        data_weights = np.ones(values.size) if weights is None else weights / weights.mean()
        if self.unity_prior_weight > 0:
            grid, grid_weights = _unity_prior()
            values = np.concatenate([values, grid])
            targets = np.concatenate([targets, grid])
            data_weights = np.concatenate([data_weights, self.unity_prior_weight / grid_weights.sum() * grid_weights])
        inside = values[(values > 0) & (values < 1)]
        nearest = min(inside.min(), 1.0 - (1.0 - inside).max())  # 0 when a value rounds to 1 - 0
        with np.errstate(divide="ignore"):
            eps = float(max(min(1e-4, 2.0 ** (np.round(np.log2(nearest)) - 1)), 1e-16))
        knots = np.unique(np.clip(knots, eps, 1 - eps))
        knots = np.log(knots / (1 - knots))
        clipped = np.clip(values, eps, 1 - eps)
        basis = natural_cubic_basis(np.log(clipped / (1 - clipped)), knots)
        folds = _folds(targets, int(self.n_folds), int(self.seed))
        train, held = folds != 0, folds == 0
        start = np.zeros(basis.shape[1])
        options = {"gtol": 1e-4, "maxiter": 1000}
        args = (basis[train], targets[train])
        losses = np.empty(PENALTIES.size)
        for i, penalty in enumerate(PENALTIES):
            beta = minimize(_loss, start, (*args, float(penalty), data_weights[train]), method="L-BFGS-B",
                            jac=True, options=options).x
            q = np.clip(expit(basis[held] @ beta), 1e-16, 1 - 1e-16)  # expit: no overflow warning at |eta| > 709
            y = targets[held]
            losses[i] = -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))
        penalty = float(PENALTIES[np.argmin(np.round(losses, 4))])
        beta = minimize(_loss, start, (*args, penalty, data_weights[train]), jac=True, options=options).x
        return knots, beta, eps, penalty

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp], weights: NDArray[np.float64] | None = None,
             ) -> None:
        # One BLAS thread: each of the 18 small L-BFGS fits per class took 8 ms a step with OpenBLAS's threads
        # spinning on a loaded 2-core machine (36 s for a 142-row binary fit), 0.2 ms on one thread (1 s).
        with blas_single_threaded():
            fitted = [self._fit_binary(np.ascontiguousarray(x[:, k]), (labels == k).astype(np.float64), weights)
                      for k in _target_classes(x.shape[1])]
        self.knots_ = [f[0] for f in fitted]
        self.coefficients_ = [f[1] for f in fitted]
        self.eps_ = np.array([f[2] for f in fitted])
        self.penalty_ = np.array([f[3] for f in fitted])

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        classes = _target_classes(x.shape[1])
        eta = np.empty((x.shape[0], len(classes)))
        for j, k in enumerate(classes):
            p = np.clip(x[:, k], self.eps_[j], 1 - self.eps_[j])
            eta[:, j] = natural_cubic_basis(np.log(p / (1 - p)), self.knots_[j]) @ self.coefficients_[j]
        with np.errstate(over="ignore"):
            if len(classes) == 1:  # sigmoid(-eta), not 1 - sigmoid(eta), which rounds to 0 beyond eta ~ 37
                return np.column_stack([1.0 / (1.0 + np.exp(eta[:, 0])), 1.0 / (1.0 + np.exp(-eta[:, 0]))])
            return _renormalise(1.0 / (1.0 + np.exp(-eta)))
