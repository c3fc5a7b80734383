"""Structured matrix and vector scaling (Berta et al. 2026) and quadratic scaling (binary).

Structured scaling first rescales the logits by a temperature and mixes the
result with the uniform distribution (the reference code's ``"ts-mix"``
step), then fits ``softmax((I + diag(v) + offdiag(M)) x + b)`` on the
log-probabilities ``x`` of that mixture, with ridge penalties whose
strengths grow with the class count K and shrink with the row count N.
Quadratic scaling fits ``sigmoid(a + b z + c z^2)`` on a binary model's
logit ``z``.

Every method here takes ``fit(x, labels, *, sample_weight=None)``: the
losses are weighted means, so integer weights give exactly the fit of the
rows repeated that many times (N in the penalty strengths and in the
uniform mixture is then the weight total).

References
----------
.. [Berta2026] Berta, E., Holzmüller, D., Jordan, M. I. & Bach, F.
   "Structured matrix scaling for multi-class calibration", AISTATS 2026
   (reference code: the ``probmetrics`` package, ``SMSCalibrator``,
   ``SVSCalibrator``, ``RegularizedQuadraticScalingCalibrator``).
.. [Guo2017] Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. "On calibration
   of modern neural networks", ICML 2017 (temperature, vector and matrix scaling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from calib_core.recalibration._base import Recalibrator
from calib_core.recalibration._numeric import (QuadraticPenalty, class_log_probs, fit_linear_softmax, fit_log_temperature,
                                                log_softmax)
from calib_core.validation import CalibrationInputError, check_positive, check_real

__all__ = ["MAX_SMS_CLASSES", "QuadraticScaling", "StructuredMatrixScaling", "StructuredVectorScaling"]

#: Largest class count :class:`StructuredMatrixScaling` fits: K^2 + K parameters (10^6 at K = 1,000),
#: each L-BFGS step O(N K^2); above this the fit is refused (use structured vector scaling).
MAX_SMS_CLASSES = 300

#: Largest class count at which structured matrix scaling is in the app's default set (as matrix scaling).
MAX_DEFAULT_CLASSES_SMS = 100


@dataclass(frozen=True)
class CenteredPenalty(QuadraticPenalty):
    """``sum(coef_w * (W - center_w)**2) + sum(coef_b * b**2)``: ridge towards the identity map."""

    center_w: NDArray[np.float64] = None  # type: ignore[assignment]

    def __call__(self, weights: NDArray[np.float64], bias: NDArray[np.float64]):
        delta = weights - self.center_w
        value = float(np.sum(self.coef_w * delta**2) + np.sum(self.coef_b * bias**2))
        return value, 2.0 * self.coef_w * delta, 2.0 * self.coef_b * bias


# ----------------------------------------------------------------------------- temperature pre-step
def mixed_log_probs(scores: NDArray[np.float64], invtemp: float, mixture: float) -> NDArray[np.float64]:
    """``log((1 - eps) softmax(invtemp * z) + eps / K)``: the reference's ``"ts-mix"`` output, as logits."""
    out = log_softmax(scores * invtemp)
    out += np.log1p(-mixture)
    return np.logaddexp(out, np.log(mixture / scores.shape[1]), out=out)


class _StructuredScaling(Recalibrator):
    """Shared fit of structured vector (``full=False``) and matrix (``full=True``) scaling."""

    full = False
    weighted_loss = True
    repeat_whole_weights = True  # as vector and matrix scaling: whole-number weights fit the repeated rows exactly
    _fitted_attributes = ("invtemp_", "mixture_", "weights_", "bias_")

    def _check_params(self) -> None:
        super()._check_params()
        for name in self._param_names():
            if name.startswith("lambda_"):
                check_positive(getattr(self, name), name, allow_zero=True)
        check_real(self.rho, "rho")
        check_real(self.tau, "tau")

    def _check_classes(self, n_classes: int) -> None:
        if n_classes < 2:
            raise CalibrationInputError(f"{type(self).__name__} needs at least 2 classes, got {n_classes}.")

    def _strengths(self, n_rows: float, n_classes: int) -> tuple[float, float, float]:
        """Ridge strengths of b, v and offdiag(M): ``lambda * K^rho / N^tau`` (``(K (K - 1))^rho`` for M)."""
        scale = n_rows**self.tau
        off = getattr(self, "lambda_off_diagonal", 0.0) * (n_classes * (n_classes - 1)) ** self.rho / scale
        return (self.lambda_intercept * n_classes**self.rho / scale,
                self.lambda_diagonal * n_classes**self.rho / scale, off)

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             sample_weight: NDArray[np.float64] | None = None) -> None:
        n_rows, n_classes = x.shape
        self._check_classes(n_classes)
        total = float(n_rows if sample_weight is None else sample_weight.sum())
        self.invtemp_ = float(np.exp(-fit_log_temperature(x, labels, weights=sample_weight)))
        self.mixture_ = 1.0 / (total + 1.0)
        features = mixed_log_probs(x, self.invtemp_, self.mixture_)
        reg_b, reg_d, reg_o = self._strengths(total, n_classes)
        if self.full:
            coef_w = np.full((n_classes, n_classes), reg_o)
            np.fill_diagonal(coef_w, reg_d)
            center = np.eye(n_classes)
        else:
            coef_w, center = np.full(n_classes, reg_d), np.ones(n_classes)
        penalty = CenteredPenalty(coef_w, np.full(n_classes, reg_b), center)
        weights, bias, n_iter, converged = fit_linear_softmax(
            features, labels, full=self.full, penalty=penalty, weights0=center.copy(), bias0=np.zeros(n_classes),
            max_iter=self.max_iter, sample_weight=sample_weight)
        self.weights_, self.bias_ = weights, bias
        self.n_iter_, self.converged_ = n_iter, converged  # diagnostics, not saved to JSON

    def _scores(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        features = mixed_log_probs(x, self.invtemp_, self.mixture_)
        return features @ self.weights_.T + self.bias_ if self.full else features * self.weights_ + self.bias_

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        scores = self._scores(x)
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        return scores


class StructuredVectorScaling(_StructuredScaling):
    """Structured vector scaling (SVS): ``softmax((I + diag(v)) x + b)`` after temperature scaling.

    .. math::
        x = \\log\\big((1 - \\varepsilon)\\,\\mathrm{softmax}(z / T) + \\varepsilon / K\\big),
        \\quad \\varepsilon = \\frac{1}{N + 1}

        q = \\mathrm{softmax}\\big((I + \\mathrm{diag}(v))\\, x + b\\big)

    fitted by minimising (Berta et al. 2026, eq. for SVS with the ridge penalty)

    .. math::
        \\frac{1}{N}\\sum_i -\\log q_{i y_i}
        + \\lambda_b \\frac{K^\\rho}{N^\\tau} \\|b\\|^2
        + \\lambda_v \\frac{K^\\rho}{N^\\tau} \\|v\\|^2 .

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        Probabilities are turned into ``log(p + 1e-12)`` first.
    lambda_intercept, lambda_diagonal : float, default 1.0
        ``lambda_b`` and ``lambda_v`` above (the reference's defaults).
    rho, tau : float, default 1.0
        Exponents of K and N in the penalty strengths.
    max_iter : int, default 500
        L-BFGS iterations.

    Attributes
    ----------
    invtemp_ : float
        ``1 / T`` of the pre-step (the reference's ``ts_``).
    mixture_ : float
        ``eps = 1 / (N + 1)`` (N: the weight total when weighted).
    weights_ : ndarray of shape (K,)
        ``1 + v``.
    bias_ : ndarray of shape (K,)

    Notes
    -----
    As the reference code (``probmetrics.calibrators.SVSCalibrator`` with
    ``opt="bfgs"``, ``penalty="ridge"``): the temperature is fitted first,
    without penalty (the reference's ``"ts-mix"``: 30 bisection steps on
    the NLL's derivative in ``log(1/T)`` on [-16, 16]; here the safeguarded
    Newton steps of :class:`TemperatureScaling` to the same root, which is
    unique as the NLL is convex in ``1/T``, on ``T`` in [1e-3, 1e3]), the
    global scale is then fixed to 1, and only ``v``
    and ``b`` are penalised, towards the identity map. The penalised NLL is
    strictly convex, so its minimiser is unique; it is found with L-BFGS-B
    and analytic gradients (the reference: torchmin's BFGS), each step
    O(N K), usable at K = 1,000 [Berta2026]_.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(300, 4)) * 3; y = rng.integers(0, 4, 300)
    >>> StructuredVectorScaling().fit(z, y).predict_proba(z).shape
    (300, 4)
    """

    method = "structured_vector_scaling"
    display_name = "Structured vector scaling"
    works_on = "logits"
    full = False

    def __init__(self, *, input: str = "logits", lambda_intercept: float = 1.0, lambda_diagonal: float = 1.0,
                 rho: float = 1.0, tau: float = 1.0, max_iter: int = 500) -> None:
        self.input = input
        self.lambda_intercept = lambda_intercept
        self.lambda_diagonal = lambda_diagonal
        self.rho = rho
        self.tau = tau
        self.max_iter = max_iter


class StructuredMatrixScaling(_StructuredScaling):
    """Structured matrix scaling (SMS): ``softmax((I + diag(v) + offdiag(M)) x + b)`` after temperature scaling.

    .. math::
        q = \\mathrm{softmax}\\big((I + \\mathrm{diag}(v) + \\mathrm{offdiag}(M))\\, x + b\\big)

    with ``x`` the temperature-scaled, uniform-mixed log-probabilities of
    :class:`StructuredVectorScaling`, fitted by minimising (Berta et al.
    2026, the SMS objective with ridge penalties)

    .. math::
        \\frac{1}{N}\\sum_i -\\log q_{i y_i}
        + \\lambda_b \\frac{K^\\rho}{N^\\tau} \\|b\\|^2
        + \\lambda_v \\frac{K^\\rho}{N^\\tau} \\|v\\|^2
        + \\lambda_M \\frac{(K (K - 1))^\\rho}{N^\\tau} \\sum_{j \\ne k} M_{jk}^2 .

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
    lambda_intercept, lambda_diagonal, lambda_off_diagonal : float, default 1.0
        ``lambda_b``, ``lambda_v``, ``lambda_M`` (the reference's defaults).
    rho, tau : float, default 1.0
    max_iter : int, default 500

    Attributes
    ----------
    invtemp_, mixture_ : float
        As in :class:`StructuredVectorScaling`.
    weights_ : ndarray of shape (K, K)
        ``I + diag(v) + offdiag(M)``.
    bias_ : ndarray of shape (K,)

    Raises
    ------
    CalibrationInputError
        From ``fit`` above :data:`MAX_SMS_CLASSES` classes: K^2 + K
        parameters and O(N K^2) per L-BFGS step (at K = 1,000, 10^6
        parameters and minutes per fit); structured vector scaling fits there.

    Notes
    -----
    As the reference (``probmetrics.calibrators.SMSCalibrator``, ``opt="bfgs"``,
    ``penalty="ridge"``) with the optimiser of :class:`StructuredVectorScaling` [Berta2026]_.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sms = StructuredMatrixScaling(lambda_off_diagonal=10.0)
    >>> sms.fit(rng.normal(size=(200, 3)), np.arange(200) % 3).weights_.shape
    (3, 3)
    """

    method = "structured_matrix_scaling"
    display_name = "Structured matrix scaling"
    works_on = "logits"
    full = True
    max_default_classes = MAX_DEFAULT_CLASSES_SMS

    def __init__(self, *, input: str = "logits", lambda_intercept: float = 1.0, lambda_diagonal: float = 1.0,
                 lambda_off_diagonal: float = 1.0, rho: float = 1.0, tau: float = 1.0, max_iter: int = 500) -> None:
        self.input = input
        self.lambda_intercept = lambda_intercept
        self.lambda_diagonal = lambda_diagonal
        self.lambda_off_diagonal = lambda_off_diagonal
        self.rho = rho
        self.tau = tau
        self.max_iter = max_iter

    def _check_classes(self, n_classes: int) -> None:
        super()._check_classes(n_classes)
        if n_classes > MAX_SMS_CLASSES:
            raise CalibrationInputError(
                f"StructuredMatrixScaling fits a {n_classes:,} x {n_classes:,} matrix ({n_classes**2 + n_classes:,} "
                f"parameters, each L-BFGS step O(N K^2)), above its limit of {MAX_SMS_CLASSES:,} classes; "
                "use StructuredVectorScaling (2K parameters) at this class count.")


# ----------------------------------------------------------------------------- quadratic scaling
class QuadraticScaling(Recalibrator):
    """Quadratic scaling for binary models: ``q = sigmoid(a + b z + c z^2)`` on the logit ``z``.

    .. math::
        \\min_{a, b, c}\\; \\frac{1}{N}\\sum_i \\ell\\big(y_i, \\sigma(a + b z_i + c z_i^2)\\big)
        + \\lambda_a a^2 + \\lambda_c c^2

    with ``l`` the log-loss (Berta et al. 2026, the binary "quadratic
    scaling" of their comparison; ``probmetrics``'
    ``RegularizedQuadraticScalingCalibrator`` with ``penalty="ridge"``, whose
    defaults ``lambda = 0`` give the unpenalised fit of ``BinaryLogisticCalibrator(type="quadratic")``).

    Parameters
    ----------
    input : {"logits", "probs"}, default "logits"
        Logits: ``z = z_1 - z_0``; probabilities: ``z = log(p_1) - log(1 - p_1)``
        (each logarithm ``log(v + 1e-12)``).
    lambda_intercept, lambda_quadratic : float, default 0.0
        Ridge strengths of ``a`` and ``c`` (``b`` is not penalised), as the reference.

    Attributes
    ----------
    coef_ : ndarray of shape (3,)
        ``(a, b, c)``.

    Raises
    ------
    CalibrationInputError
        From ``fit`` for K != 2 (a binary method).

    Notes
    -----
    The penalised log-loss is convex in ``(a, b, c)``; it is minimised by
    L-BFGS-B with analytic gradients on the standardised features
    ``(1, z / s, z^2 / s^2)`` (s: root mean square of z), so that the fit is
    well conditioned when logits are large. The reference fits the same
    objective by SAGA (``max_iter=200``, ``tol=1e-4``), which stops short of
    the minimum when ``z^2`` is large; the exact minimiser is the target here.
    With ``c < 0`` the map is not monotone: far outside the fitted logits it
    turns back (on the reference's float32 logits, saturated at +-87.3, a
    confident positive row of the breast-cancer MLP demo gets q ~ 0).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=500) * 3; y = (rng.uniform(size=500) < 1 / (1 + np.exp(-z / 2))).astype(int)
    >>> QuadraticScaling().fit(np.column_stack([np.zeros(500), z]), y).coef_.shape
    (3,)
    """

    method = "quadratic_scaling"
    display_name = "Quadratic scaling"
    works_on = "logits"
    #: Fits binary models only (K = 2); ``fit`` refuses other class counts.
    binary_only = True
    weighted_loss = True
    _fitted_attributes = ("coef_",)

    def __init__(self, *, input: str = "logits", lambda_intercept: float = 0.0, lambda_quadratic: float = 0.0) -> None:
        self.input = input
        self.lambda_intercept = lambda_intercept
        self.lambda_quadratic = lambda_quadratic

    def _check_params(self) -> None:
        super()._check_params()
        check_positive(self.lambda_intercept, "lambda_intercept", allow_zero=True)
        check_positive(self.lambda_quadratic, "lambda_quadratic", allow_zero=True)

    def _check_classes(self, n_classes: int) -> None:
        if n_classes != 2:
            raise CalibrationInputError(
                f"QuadraticScaling is a binary method (sigmoid of a quadratic in the logit) and needs 2 classes, "
                f"got {n_classes}; for K > 2 use StructuredVectorScaling or StructuredMatrixScaling.")

    @staticmethod
    def _logit(x: NDArray[np.float64]) -> NDArray[np.float64]:
        log_p, log_not_p = class_log_probs(x)
        return log_p[:, 1] - log_not_p[:, 1]

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             sample_weight: NDArray[np.float64] | None = None) -> None:
        self._check_classes(x.shape[1])
        z = self._logit(x)
        weights = np.ones(z.size) if sample_weight is None else sample_weight
        weights = weights / weights.sum()
        targets = (labels == 1).astype(np.float64)
        s = float(np.sqrt(np.average(z**2, weights=weights))) or 1.0
        features = np.column_stack([np.ones_like(z), z / s, (z / s) ** 2])
        # the penalties of (a, b, c) expressed on the standardised coefficients (a, b s, c s^2)
        ridge = np.array([self.lambda_intercept, 0.0, self.lambda_quadratic / s**4])

        def objective(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            eta = features @ theta
            value = float(weights @ (np.logaddexp(0.0, eta) - targets * eta)) + float(ridge @ theta**2)
            residual = 0.5 * (1.0 + np.tanh(0.5 * eta)) - targets
            return value, features.T @ (weights * residual) + 2.0 * ridge * theta

        result = minimize(objective, np.zeros(3), jac=True, method="L-BFGS-B",
                          options={"maxiter": 1000, "gtol": 1e-10, "ftol": 1e-14})
        self.coef_ = result.x / np.array([1.0, s, s * s])

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        z = self._logit(x)
        eta = self.coef_[0] + self.coef_[1] * z + self.coef_[2] * z * z
        q = 0.5 * (1.0 + np.tanh(0.5 * eta))
        return np.column_stack([1.0 - q, q])
