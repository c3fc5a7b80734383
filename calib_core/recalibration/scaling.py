"""Parametric scaling maps: temperature, vector, matrix and Dirichlet scaling,
ensemble temperature scaling and metric-optimised temperature.

All of them compute ``softmax(linear map of the scores)``; the linear map is
fitted by minimising a loss on the calibration set.

References
----------
.. [Guo2017] Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. "On Calibration
   of Modern Neural Networks", ICML 2017, section 4.2 (temperature, vector and
   matrix scaling).
.. [Kull2019] Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song,
   H. & Flach, P. "Beyond temperature scaling: Obtaining well-calibrated
   multiclass probabilities with Dirichlet calibration", NeurIPS 2019,
   eq. (3) (Dirichlet calibration) and section 3.3 (ODIR regularisation).
.. [Zhang2020] Zhang, J., Kailkhura, B. & Han, T. Y.-J. "Mix-n-Match: Ensemble
   and Compositional Methods for Uncertainty Calibration in Deep Learning",
   ICML 2020, eq. (8) (ensemble temperature scaling).
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, section 5.2 (temperature optimised for a calibration
   metric with Nelder-Mead).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize

from calib_core.recalibration._base import Recalibrator, callable_name, resolve_callable
from calib_core.recalibration._numeric import (
    LOG_T_BOUNDS,
    fit_linear_softmax,
    fit_log_temperature,
    l2_penalty,
    log_softmax,
    odir_penalty,
)
from calib_core.validation import CalibrationInputError, check_choice, check_count, check_positive, softmax_unchecked

#: Iteration cap of L-BFGS-B for full-matrix maps (K^2 + K parameters): keeps a
#: 50,000 x 100 fit within seconds. The ODIR penalty leaves the diagonal free, so
#: on near-separable fitting rows the objective is flat along it and the cap is
#: reached (digits_mlp, wine_gaussian_nb): ``converged_`` is then False, and the
#: map depends on the path, down to how the CPU's BLAS kernel rounds (tests pin
#: one kernel: tests/blas_support.py).
_MAX_ITER_FULL = 150

__all__ = [
    "DirichletCalibration",
    "EnsembleTemperatureScaling",
    "MatrixScaling",
    "MetricOptimizedTemperature",
    "TemperatureScaling",
    "VectorScaling",
]


#: Largest class count at which matrix and Dirichlet scaling (K^2 + K parameters) are in the app's default set.
MAX_DEFAULT_CLASSES_FULL = 100
#: Largest class count at which vector scaling is in the app's default set. Above it, real data hold classes seen
#: once or twice in the fitting rows whose scores separate them (a class's rows score above every other row on its
#: column): its unpenalised NLL then has no minimum (``w_k -> +inf``) and L-BFGS-B runs to its cap, 500 iterations
#: of O(N K) each (145 s, 117 s of CPU, at 25,000 x 1,000 on the real next-word set). Structured vector scaling, its
#: ridge-penalised form, stays (:mod:`calib_core.recalibration.defaults`).
MAX_DEFAULT_CLASSES_VECTOR = 100


class TemperatureScaling(Recalibrator):
    """Temperature scaling: ``softmax(z / T)`` with T minimising the NLL.

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        What ``x`` holds; probabilities are turned into ``log(probs + 1e-12)``
        (equal to the logits up to a per-row constant, which softmax ignores,
        except at exact zeros), scikit-learn's rule: see Notes.

    Attributes
    ----------
    temperature_ : float
        The fitted T > 0 (T > 1 softens over-confident predictions).

    Notes
    -----
    .. math:: \\hat T = \\arg\\min_T -\\frac1N \\sum_i \\log \\operatorname{softmax}(z_i / T)_{y_i}

    optimised over ``log T`` in ``[log 1e-3, log 1e3]`` by L-BFGS-B with the
    analytic derivative ``mean_i(s_{i y_i} - sum_k p_ik s_ik)``, ``s = z / T``
    [Guo2017]_. Dividing by ``T > 0`` keeps the order of every row, so the
    accuracy is unchanged.

    Probabilities with exact zeros (random forests, histogram models): the
    zeros become ``log(1e-12) ~ -27.6``
    (:func:`~calib_core.recalibration._numeric.log_probabilities`), as in
    scikit-learn's ``CalibratedClassifierCV(method="temperature")``, whose
    temperature this reproduces. Flooring at ``log(tiny) ~ -708`` instead
    made every true class with probability 0 cost about 708 / T nats, and a
    few such rows pushed T past 100 (e.g. T = 138 instead of 4.8 on a 5-tree
    forest on scikit-learn's digits). Even at 1e-12, temperature scaling of
    vote shares is a poor map when many true classes get no vote: it can
    only soften every row at once.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [0.0, 4.0]])
    >>> ts = TemperatureScaling().fit(z, [0, 1, 1, 1])
    >>> round(ts.temperature_, 2) > 1
    True
    """

    method = "temperature_scaling"
    display_name = "Temperature scaling"
    works_on = "logits"
    preserves_accuracy = True
    weighted_loss = True
    _fitted_attributes = ("temperature_",)

    def __init__(self, *, input: str = "logits") -> None:
        self.input = input

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        self.temperature_ = float(np.exp(fit_log_temperature(x, labels, loss="nll", weights=weights)))

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        scaled = x / self.temperature_
        return softmax_unchecked(scaled, out=scaled)


class VectorScaling(Recalibrator):
    """Vector scaling: ``softmax(w * z + b)`` with a per-class scale and offset.

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        Probabilities are turned into ``log(probs + 1e-12)``, the logarithm
        every recalibrator shares (see :class:`TemperatureScaling`).
    reg_mu : float, default 0.0
        L2 penalty ``reg_mu / K * sum_k b_k^2`` on the offsets (0: none).

    Attributes
    ----------
    weights_ : ndarray of shape (K,)
    bias_ : ndarray of shape (K,)
    n_iter_ : int
        L-BFGS-B iterations used.
    converged_ : bool
        Whether L-BFGS-B met its tolerance (False: stopped at the iteration cap).
    unseen_classes_ : ndarray of int
        Classes with no fitting row (their parameters are set by the rule below, not fitted); a diagnostic,
        not saved to JSON.

    Notes
    -----
    Minimises the mean NLL by L-BFGS-B from the temperature-scaling map ``w = 1 / T, b = 0``
    with analytic gradients ``dw_k = sum_i G_ik z_ik``, ``db_k = sum_i G_ik``,
    ``G = (softmax - onehot) / N`` [Guo2017]_. May change the arg-max.

    Classes absent from the fitting rows (unseen classes, common at large K: 60 of the
    1,000 classes of the real next-word set never occur, and several hundred are absent
    from 5,000 rows of it). Without a penalty (``reg_mu = 0``) the maximum-likelihood
    estimate does not exist for them: the NLL keeps falling as ``b_k -> -inf``, and
    L-BFGS-B would stop wherever its tolerance or its cap catches it (``b_k`` near -17
    on six classes, -60 at 1,000). The NLL's infimum is approached by the fit of the
    seen classes alone (the unseen classes' probabilities -> 0), so that is what is
    fitted (its 466 columns instead of 1,000 at 5,000 x 1,000 on the next-word set:
    half the time). A seen class whose rows its scores separate from the others (a
    class seen once or twice at K = 1,000) has no finite estimate either (``w_k -> +inf``);
    that fit stops at the cap, ``converged_`` False, and the app leaves vector scaling
    out of its default set above :data:`MAX_DEFAULT_CLASSES_VECTOR` classes
    (structured vector scaling, penalised, has neither problem). An unseen class then gets a stated finite map
    instead of probability 0 (an infinite log loss for any later row of it): the
    temperature slope ``w_k = 1 / T`` and the bias that gives it, on the fitting rows,
    the mean probability of the Krichevsky-Trofimov (add-one-half) estimate of a class
    seen 0 times in N rows,

    ``tau = 0.5 / (N + K / 2)``, ``b_k = log tau - log mean_i [exp(z_ik / T) / S_i]``,

    with ``S_i = sum over seen j of exp(w_j z_ij + b_j)`` (weighted mean and ``N`` = the
    total weight when weighted). The final softmax over all K classes then gives every
    unseen class about ``tau`` and the seen ones ``(1 - about K_unseen tau)`` times their
    fitted probabilities. With every class seen (every bundled demo) the fit is unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(200, 3)); y = rng.integers(0, 3, 200)
    >>> VectorScaling().fit(z, y).predict_proba(z).shape
    (200, 3)
    """

    method = "vector_scaling"
    display_name = "Vector scaling"
    works_on = "logits"
    max_default_classes = MAX_DEFAULT_CLASSES_VECTOR
    weighted_loss = True
    repeat_whole_weights = True
    _fitted_attributes = ("weights_", "bias_", "n_iter_", "converged_")

    def __init__(self, *, input: str = "logits", reg_mu: float = 0.0) -> None:
        self.input = input
        self.reg_mu = reg_mu

    def _check_params(self) -> None:
        super()._check_params()
        check_positive(self.reg_mu, "reg_mu", allow_zero=True)

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        n_classes = x.shape[1]
        # Starting from the temperature-scaling solution saves most iterations.
        start = np.exp(-fit_log_temperature(x, labels, weights=weights))
        seen = np.unique(labels)
        self.unseen_classes_ = np.setdiff1d(np.arange(n_classes), seen)
        if self.reg_mu > 0 or not self.unseen_classes_.size:  # the penalised NLL has a finite minimum
            penalty = odir_penalty(n_classes, 0.0, float(self.reg_mu), full=False)
            self.weights_, self.bias_, self.n_iter_, self.converged_ = fit_linear_softmax(
                x, labels, full=False, penalty=penalty, weights0=np.full(n_classes, start),
                bias0=np.zeros(n_classes), sample_weight=weights)
            return
        # Unseen classes (no MLE, see Notes): fit the seen classes alone, then the stated rule for the rest.
        seen_x = np.ascontiguousarray(x[:, seen])
        w_seen, b_seen, self.n_iter_, self.converged_ = fit_linear_softmax(
            seen_x, np.searchsorted(seen, labels), full=False, penalty=odir_penalty(seen.size, 0.0, 0.0, full=False),
            weights0=np.full(seen.size, start), bias0=np.zeros(seen.size), sample_weight=weights)
        self.weights_ = np.full(n_classes, start)
        self.weights_[seen] = w_seen
        self.bias_ = np.empty(n_classes)
        self.bias_[seen] = b_seen
        self.bias_[self.unseen_classes_] = _unseen_class_bias(
            seen_x * w_seen + b_seen, x[:, self.unseen_classes_] * start, weights)

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        logits = x * self.weights_
        logits += self.bias_
        return softmax_unchecked(logits, out=logits)


def _unseen_class_bias(seen_logits: NDArray[np.float64], unseen_scaled: NDArray[np.float64],
                       weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """Biases of the unseen classes of :class:`VectorScaling` (see its Notes): ``log tau - log mean_i exp(u_ik - log S_i)``.

    ``seen_logits`` (N, K_seen): the fitted map's logits of the seen classes; ``unseen_scaled`` (N, K_unseen): the
    unseen classes' scores times ``1 / T``; ``tau = 0.5 / (N + K / 2)`` (Krichevsky-Trofimov) with N the total weight.
    """
    n_total = float(seen_logits.shape[0]) if weights is None else float(weights.sum())
    n_classes = seen_logits.shape[1] + unseen_scaled.shape[1]
    log_norm = np.logaddexp.reduce(seen_logits, axis=1)  # log S_i
    shares = np.exp(unseen_scaled - log_norm[:, None])
    mean_share = shares.mean(axis=0) if weights is None else weights @ shares / n_total
    return np.log(0.5 / (n_total + n_classes / 2.0)) - np.log(np.maximum(mean_share, np.finfo(float).tiny))


class _FullLinearScaling(Recalibrator):
    """``softmax(W s + b)`` with a full matrix ``W`` on scores ``s`` (shared by matrix and Dirichlet scaling).

    ``K^2 + K`` parameters, and each L-BFGS step costs O(N K^2): 10^6
    parameters at K = 1,000, so above :data:`MAX_DEFAULT_CLASSES_FULL`
    classes the app leaves these methods out of its default set.
    """

    max_default_classes = MAX_DEFAULT_CLASSES_FULL
    weighted_loss = True
    repeat_whole_weights = True
    _fitted_attributes = ("weights_", "bias_", "n_iter_", "converged_")
    regularization: str
    reg_lambda: float
    reg_mu: float

    def _check_params(self) -> None:
        super()._check_params()
        check_choice(self.regularization, "regularization", ("odir", "l2"))
        check_positive(self.reg_lambda, "reg_lambda", allow_zero=True)
        check_positive(self.reg_mu, "reg_mu", allow_zero=True)

    def _scores(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        n_classes = x.shape[1]
        if self.regularization == "odir":
            penalty = odir_penalty(n_classes, float(self.reg_lambda), float(self.reg_mu))
        else:
            penalty = l2_penalty(n_classes, float(self.reg_lambda))
        scores = self._scores(x)
        # Starting from the temperature-scaling solution W = I / T saves most iterations.
        start = np.exp(-fit_log_temperature(scores, labels, weights=weights))
        self.weights_, self.bias_, self.n_iter_, self.converged_ = fit_linear_softmax(
            scores, labels, full=True, penalty=penalty, weights0=np.eye(n_classes) * start,
            bias0=np.zeros(n_classes), max_iter=_MAX_ITER_FULL, sample_weight=weights)

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        logits = self._scores(x) @ self.weights_.T
        logits += self.bias_
        return softmax_unchecked(logits, out=logits)


class MatrixScaling(_FullLinearScaling):
    """Matrix scaling with off-diagonal and intercept regularisation (ODIR).

    ``softmax(W z + b)`` with a full ``(K, K)`` matrix ``W``.

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        Probabilities are turned into ``log(probs + 1e-12)``, the logarithm
        every recalibrator shares (see :class:`TemperatureScaling`).
    reg_lambda : float, default 1000.0
        Weight of the off-diagonal penalty (see Notes on the default).
    reg_mu : float, default 0.1
        Weight of the intercept penalty.
    regularization : {"odir", "l2"}, default "odir"
        ``"l2"`` penalises every parameter instead (``reg_mu`` unused).

    Attributes
    ----------
    weights_ : ndarray of shape (K, K)
    bias_ : ndarray of shape (K,)
    n_iter_ : int
        L-BFGS-B iterations used (at most 150).
    converged_ : bool
        Whether L-BFGS-B met its tolerance (False: stopped at the iteration cap).

    Notes
    -----
    Minimises, by L-BFGS-B from the temperature-scaling map ``W = I / T, b = 0``
    (at most 150 iterations) with analytic gradients
    (``dW = G^T z``, ``db = sum_i G_i``, ``G = (softmax - onehot) / N``),

    .. math:: \\frac1N\\sum_i -\\log \\operatorname{softmax}(W z_i + b)_{y_i}
              + \\frac{\\lambda}{K(K-1)} \\sum_{i \\ne j} W_{ij}^2 + \\frac{\\mu}{K} \\sum_j b_j^2

    (ODIR, [Kull2019]_ section 3.3; the diagonal is not penalised). With
    ``regularization="l2"`` the penalty is
    ``lambda / (K (K + 1)) * (sum W_ij^2 + sum b_j^2)``. Unregularised matrix
    scaling (``reg_lambda = reg_mu = 0``) over-fits badly for many classes
    [Guo2017]_; tune the two weights by cross-fitting
    (:func:`calib_core.cross_fit`).

    Scale of the weights: the NLL curvature is about ``E[x^2] / K`` for an
    off-diagonal weight and ``1 / K`` for an intercept, the penalty's
    ``2 lambda / (K (K - 1))`` and ``2 mu / K``. The defaults
    (``lambda = 1000``, ``mu = 0.1``) keep off-diagonal terms small unless the
    data insist and leave intercepts nearly free; on simulated data with 10
    and 100 classes (5,000-20,000 fitting rows) they were within 0.002 nats
    of the best held-out NLL over a grid of both weights where temperature
    scaling was the true map, and better than vector scaling where the
    classes had offsets, while L-BFGS-B converged in tens of iterations.
    Kull et al. select both weights by cross-validation over powers of 10.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(300, 3)); y = rng.integers(0, 3, 300)
    >>> MatrixScaling().fit(z, y).weights_.shape
    (3, 3)
    """

    method = "matrix_scaling"
    display_name = "Matrix scaling (ODIR)"
    works_on = "logits"

    def __init__(self, *, input: str = "logits", reg_lambda: float = 1000.0, reg_mu: float = 0.1,
                 regularization: str = "odir") -> None:
        self.input = input
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.regularization = regularization


class DirichletCalibration(_FullLinearScaling):
    """Dirichlet calibration: ``softmax(W log(q) + b)`` on the predicted probabilities q.

    Parameters
    ----------
    input : {"logits", "probs"}, default "probs"
        Logits are turned into ``log softmax(logits)``.
    reg_lambda : float, default 1000.0
        Weight of the off-diagonal penalty (``"odir"``) or of the L2 penalty
        (see :class:`MatrixScaling` on the default).
    reg_mu : float, default 0.1
        Weight of the intercept penalty (``"odir"`` only).
    regularization : {"odir", "l2"}, default "odir"

    Attributes
    ----------
    weights_ : ndarray of shape (K, K)
    bias_ : ndarray of shape (K,)
    n_iter_ : int
        L-BFGS-B iterations used (at most 150).
    converged_ : bool
        Whether L-BFGS-B met its tolerance (False: stopped at the iteration cap).

    Notes
    -----
    The fully-parametrised Dirichlet calibration map of [Kull2019]_ eq. (3),
    ``mu(q) = softmax(W ln q + b)``, is matrix scaling on the log-probabilities
    ``ln q`` (taken as ``log(q + 1e-12)`` by the helper every recalibrator
    shares, so exact zeros stay finite; Kull et al.'s code clips at machine
    epsilon, which differs only for q below about 1e-12), fitted with
    the same ODIR (section 3.3) or L2 penalty as :class:`MatrixScaling`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q = rng.dirichlet(np.ones(3), size=300); y = rng.integers(0, 3, 300)
    >>> bool(np.allclose(DirichletCalibration().fit(q, y).predict_proba(q).sum(axis=1), 1.0))
    True
    """

    method = "dirichlet_calibration"
    display_name = "Dirichlet calibration"
    works_on = "logits"

    def __init__(self, *, input: str = "probs", reg_lambda: float = 1000.0, reg_mu: float = 0.1,
                 regularization: str = "odir") -> None:
        self.input = input
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.regularization = regularization

    def _scores(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        # log(probs + 1e-12) for probability input (taken by the base class); for
        # logits log(softmax) is the same up to a per-row constant, made exact here.
        return log_softmax(x)


class EnsembleTemperatureScaling(Recalibrator):
    """Ensemble temperature scaling (ETS): a convex mix of T-scaled, original and uniform.

    .. math:: p(z) = w_1 \\operatorname{softmax}(z / T) + w_2 \\operatorname{softmax}(z) + w_3 / K,
              \\quad w \\ge 0,\\ w_1 + w_2 + w_3 = 1

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        Probabilities are turned into ``log(probs + 1e-12)``, the logarithm
        every recalibrator shares (see :class:`TemperatureScaling`).
    loss : {"mse", "nll"}, default "mse"
        Loss for both T and w: the mean squared error over all ``N * K``
        entries (the default of Zhang et al.'s code) or the NLL.

    Attributes
    ----------
    temperature_ : float
    weights_ : ndarray of shape (3,)
        ``(w_1, w_2, w_3)`` for (temperature-scaled, original, uniform).

    Notes
    -----
    [Zhang2020]_ eq. (8): T is fitted first (as in temperature scaling, with
    ``loss``), then w by SLSQP on the simplex. For ``"mse"`` the loss is the
    quadratic ``w^T G w / (N K)`` with ``G`` the Gram matrix of the three
    residual matrices ``p_j - onehot``; for ``"nll"`` only the true-class
    entries are needed. Every component keeps the order of each row (or is
    constant), so the accuracy is unchanged (up to rows the uniform
    component turns into ties, which needs ``w_1 = w_2 = 0``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = 3 * rng.normal(size=(500, 4)); y = rng.integers(0, 4, 500)
    >>> ets = EnsembleTemperatureScaling().fit(z, y)
    >>> bool(np.isclose(ets.weights_.sum(), 1.0))
    True
    """

    method = "ensemble_temperature_scaling"
    display_name = "Ensemble temperature scaling"
    works_on = "logits"
    preserves_accuracy = True
    _fitted_attributes = ("temperature_", "weights_")

    def __init__(self, *, input: str = "logits", loss: str = "mse") -> None:
        self.input = input
        self.loss = loss

    def _check_params(self) -> None:
        super()._check_params()
        check_choice(self.loss, "loss", ("mse", "nll"))

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        n_rows, n_classes = x.shape
        rows = np.arange(n_rows)
        temperature = float(np.exp(fit_log_temperature(x, labels, loss=self.loss)))
        scaled = x / temperature
        softmax_unchecked(scaled, out=scaled)
        original = softmax_unchecked(x)
        if self.loss == "mse":
            scaled[rows, labels] -= 1.0
            original[rows, labels] -= 1.0
            uniform_residual_sq = (n_rows * (n_classes - 1) / n_classes**2
                                   + n_rows * (1.0 - 1.0 / n_classes) ** 2)
            uniform_dot = lambda r: float(r.sum()) / n_classes - float(r[rows, labels].sum())  # noqa: E731
            gram = np.empty((3, 3))
            gram[0, 0] = float(np.vdot(scaled, scaled))
            gram[1, 1] = float(np.vdot(original, original))
            gram[0, 1] = gram[1, 0] = float(np.vdot(scaled, original))
            gram[0, 2] = gram[2, 0] = uniform_dot(scaled)
            gram[1, 2] = gram[2, 1] = uniform_dot(original)
            gram[2, 2] = uniform_residual_sq
            gram /= n_rows * n_classes

            def objective(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
                return float(w @ gram @ w), 2.0 * gram @ w
        else:
            true_probs = np.column_stack([scaled[rows, labels], original[rows, labels],
                                          np.full(n_rows, 1.0 / n_classes)])

            def objective(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
                mixed = np.maximum(true_probs @ w, 1e-300)
                return float(-np.mean(np.log(mixed))), -(true_probs / mixed[:, None]).mean(axis=0)

        result = minimize(objective, np.array([1.0, 0.0, 0.0]), jac=True, method="SLSQP",
                          bounds=[(0.0, 1.0)] * 3,
                          constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0,
                                        "jac": lambda w: np.ones(3)}],
                          options={"maxiter": 200, "ftol": 1e-15})
        weights = np.clip(result.x, 0.0, None)
        self.temperature_ = temperature
        self.weights_ = weights / weights.sum()

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        w_scaled, w_original, w_uniform = self.weights_
        out = x / self.temperature_
        softmax_unchecked(out, out=out)
        out *= w_scaled
        out += w_original * softmax_unchecked(x)
        out += w_uniform / x.shape[1]
        return out


def _default_metric() -> Callable[[ArrayLike, ArrayLike], float]:
    from calib_core.metrics.binned import ece  # lazy: the metric modules are not needed to fit other methods

    return ece


class MetricOptimizedTemperature(Recalibrator):
    """Temperature scaling with T chosen to minimise any calibration metric.

    Parameters
    ----------
    metric : callable, optional
        ``metric(probs, labels) -> float`` to minimise; ``None`` means
        :func:`calib_core.ece` (top-label ECE, 15 uniform bins), the
        "ECE-optimised temperature scaling" of Nixon et al. Table 5.
    input : {"logits", "probs"}, default "logits"
        Probabilities are turned into ``log(probs + 1e-12)``, the logarithm
        every recalibrator shares (see :class:`TemperatureScaling`).
    grid_size : int, default 17
        Points of the coarse grid of T, log-spaced over ``[0.05, 20]`` (T = 1
        is always added).
    max_evaluations : int, default 40
        Budget of the Nelder-Mead refinement.

    Attributes
    ----------
    temperature_ : float
    metric_value_ : float
        The metric at ``temperature_`` on the fitting data (in-sample).

    Notes
    -----
    Following [Nixon2019]_ section 5.2 the temperature is optimised with the
    Nelder-Mead simplex on ``log T``. Binned metrics are piecewise constant
    in T, so Nelder-Mead alone easily stalls on a plateau: a coarse grid is
    evaluated first and Nelder-Mead starts from its best point with an
    initial step of one grid spacing; the best temperature of all
    evaluations is kept. Accuracy is unchanged (T > 0 keeps the row order).

    When restored from JSON the metric is re-imported by name; a metric
    that cannot be imported (a lambda, a local function) is kept as its name
    (predictions still work, refitting needs a callable).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = 3 * rng.normal(size=(500, 4)); y = rng.integers(0, 4, 500)
    >>> def brier(p, y):
    ...     return float(((p - np.eye(4)[y]) ** 2).sum(axis=1).mean())
    >>> MetricOptimizedTemperature(brier).fit(z, y).temperature_ > 1
    True
    """

    method = "metric_optimized_temperature"
    display_name = "Metric-optimised temperature"
    works_on = "logits"
    preserves_accuracy = True
    _fitted_attributes = ("temperature_", "metric_value_")

    def __init__(self, metric: Callable[[ArrayLike, ArrayLike], float] | None = None, *,
                 input: str = "logits", grid_size: int = 17, max_evaluations: int = 40) -> None:
        self.metric = metric
        self.input = input
        self.grid_size = grid_size
        self.max_evaluations = max_evaluations

    def _check_params(self) -> None:
        super()._check_params()
        if self.metric is not None and not callable(self.metric):
            raise CalibrationInputError(
                f"`metric` must be a callable metric(probs, labels) -> float, got {self.metric!r}"
                + (" (a metric restored from JSON by name that could not be imported)."
                   if isinstance(self.metric, str) else ".")
            )
        for name in ("grid_size", "max_evaluations"):
            check_count(getattr(self, name), name)

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        metric = self.metric if self.metric is not None else _default_metric()
        seen: dict[float, float] = {}
        buffer = np.empty_like(x)  # every candidate's probabilities, in one work array

        def score(log_t: float) -> float:
            log_t = float(np.clip(log_t, *LOG_T_BOUNDS))
            if log_t not in seen:
                probs = softmax_unchecked(np.multiply(x, np.exp(-log_t), out=buffer), out=buffer)
                value = float(metric(probs, labels))
                seen[log_t] = value if np.isfinite(value) else np.inf
            return seen[log_t]

        grid = np.linspace(np.log(0.05), np.log(20.0), int(self.grid_size))
        for log_t in np.concatenate([grid, [0.0]]):
            score(log_t)
        start = min(seen, key=seen.get)
        spacing = float(grid[1] - grid[0]) if grid.size > 1 else 0.5
        minimize(lambda v: score(v[0]), x0=np.array([start]), method="Nelder-Mead",
                 options={"initial_simplex": np.array([[start], [start + spacing]]),
                          "maxfev": int(self.max_evaluations), "xatol": 1e-4, "fatol": 0.0})
        best = min(seen, key=seen.get)
        self.temperature_ = float(np.exp(best))
        self.metric_value_ = float(seen[best])

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        scaled = x / self.temperature_
        return softmax_unchecked(scaled, out=scaled)

    def _params_to_json(self) -> dict[str, Any]:
        params = self.get_params(deep=False)
        if params["metric"] is not None and not isinstance(params["metric"], str):
            params["metric"] = callable_name(params["metric"])
        return params

    @classmethod
    def _params_from_json(cls, params: dict[str, Any]) -> dict[str, Any]:
        if isinstance(params.get("metric"), str):
            params["metric"] = resolve_callable(params["metric"])
        return params
