"""The binary logistic model on Gaussian-mixture data, with closed-form true errors.

:class:`LogisticModel` - ``P(Y=1) = 1/2``, ``X | Y=1 ~ N(-1, 1)``,
``X | Y=0 ~ N(1, 1)`` and the model ``g_1(x) = 1 / (1 + exp(-b0 - b1 x))``
(Futami & Fujisawa 2024, section 6.1 and appendix G.1, after Zhang et al.
2020; the same Gaussian mixture as Vaicenavicius et al. 2019, appendix C.1).
:func:`futami_logistic` and :func:`gaussian_mixture` give the papers'
parameter settings. Every true error is an integral over x of a closed-form
integrand (adaptive quadrature); KS uses the trapezoid rule on a fine grid.

References
----------
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, section 6.1, appendix G.1.
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schön, T. "Evaluating model calibration in classification",
   AISTATS 2019, appendix C.1.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate
from scipy.special import expit, logit, xlogy

from calib_core.lab.generators.truth import ERROR_KEYS, MMCE_BANDWIDTH, GroundTruth, _Model, _ordered, _ordered_text
from calib_core.validation import CalibrationInputError, check_choice, check_probs, check_real

__all__ = ["FUTAMI_CASES", "LogisticModel", "VAICENAVICIUS_CASES", "futami_logistic", "gaussian_mixture"]

#: Parameter settings of the logistic model in Futami & Fujisawa (2024),
#: Figure 1: the "less calibrate" and "better calibrate" models.
FUTAMI_CASES: Mapping[str, tuple[float, float]] = MappingProxyType({
    "less_calibrated": (0.5, -1.5),
    "better_calibrated": (0.2, -1.9),
})

#: The three models of Vaicenavicius et al. (2019), appendix C.1 (Figures 6-14).
VAICENAVICIUS_CASES: Mapping[str, tuple[float, float]] = MappingProxyType({
    "perfect": (0.0, -2.0),
    "constant": (0.0, 0.0),
    "uncalibrated": (1.0, 1.0),
})


# --------------------------------------------------------------------------- logistic model
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _mixture_density(x):
    """Density of X: the mixture (N(-1, 1) + N(1, 1)) / 2."""
    return 0.5 * _INV_SQRT_2PI * (np.exp(-0.5 * (x + 1.0) ** 2) + np.exp(-0.5 * (x - 1.0) ** 2))


def _true_p1(x, out=None):
    """P(Y = 1 | X = x) = 1 / (1 + exp(2x)) for X | Y=1 ~ N(-1, 1), X | Y=0 ~ N(1, 1)."""
    return expit(-2.0 * x, out=out)


@dataclass(frozen=True)
class LogisticModel(_Model):
    """Binary Gaussian-mixture data and a logistic model of it (Futami & Fujisawa; Vaicenavicius et al.).

    Data: ``P(Y=1) = P(Y=0) = 1/2``, ``X | Y=1 ~ N(-1, 1)``,
    ``X | Y=0 ~ N(1, 1)``, so that ``P(Y=1 | X=x) = 1 / (1 + exp(2x))``.
    Model: ``g(x) = (1 - s(x), s(x))`` with ``s(x) = 1 / (1 + exp(-b0 - b1 x))``
    (column 1 is class 1).

    Parameters
    ----------
    b0, b1 : float
        ``(0, -2)`` is the Bayes-optimal, perfectly calibrated model;
        ``(0, 0)`` the calibrated constant model ``(1/2, 1/2)``; Futami &
        Fujisawa's Figure 1 uses ``(0.5, -1.5)`` and ``(0.2, -1.9)``
        (:data:`FUTAMI_CASES`), Vaicenavicius et al. also ``(1, 1)``
        (:data:`VAICENAVICIUS_CASES`).

    Notes
    -----
    For ``b1 != 0`` the model is invertible in x, so its calibration function
    is closed-form (Futami & Fujisawa 2024, appendix G.1):

    .. math:: E[Y \\mid s(X) = z] = \\left(1 + \\exp\\left(\\frac{2(\\mathrm{logit}(z) - b_0)}{b_1}\\right)\\right)^{-1},

    and the true errors are integrals over x of closed-form integrands, e.g.
    the (class-wise = canonical, for two classes) TCE
    :math:`\\int |s(x) - P(Y=1|x)|\\, p(x)\\, dx` with the mixture density
    :math:`p(x) = (\\phi(x+1) + \\phi(x-1))/2`. The top-label TCE conditions
    on the confidence ``c = max(s, 1 - s)``, which both ``x`` and its mirror
    ``x' = -x - 2 b0 / b1`` produce; ``E[1{Y=C} | c]`` is the density-weighted
    mean of the two accuracies. For ``b1 = 0`` the model is constant and
    ``E[Y | g] = (1/2, 1/2)``.

    Examples
    --------
    >>> model = LogisticModel(0.5, -1.5)
    >>> round(model.truth()["tce"], 4) > 0
    True
    """

    b0: float = 0.5
    b1: float = -1.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "b0", check_real(self.b0, "b0"))
        object.__setattr__(self, "b1", check_real(self.b1, "b1"))

    n_classes = 2  # not a dataclass field: no annotation

    @property
    def name(self) -> str:
        return f"Logistic model (b0={self.b0:g}, b1={self.b1:g})"

    @property
    def is_calibrated(self) -> bool:
        """True for the Bayes-optimal model (0, -2) and the constant model (0, 0)."""
        return (self.b0 == 0.0 and self.b1 in (-2.0, 0.0))

    @property
    def lipschitz(self) -> float:
        """Lipschitz constant L of ``z -> E[Y | s(X) = z]`` (inf when unbounded).

        Futami & Fujisawa estimate L as the largest gradient of the
        closed-form calibration function; it enters :func:`calib_core.optimal_n_bins`.
        With ``a = -2 / b1`` the function is ``expit(a logit(z) + 2 b0 / b1)``,
        whose slope is bounded exactly when ``a >= 1`` (``-2 <= b1 < 0``);
        the maximum is found on a fine logit grid. The constant model has L = 0.
        """
        if self.b1 == 0.0:
            return 0.0
        a = -2.0 / self.b1
        if a < 1.0:
            return float("inf")
        u = np.linspace(-30.0, 30.0, 600_001)
        v = a * u + 2.0 * self.b0 / self.b1
        # r(1 - r) / (z(1 - z)) with both products written without cancellation.
        slope = a * np.exp(np.log(expit(v)) + np.log(expit(-v)) - np.log(expit(u)) - np.log(expit(-u)))
        return float(np.max(slope))

    def calibration_map(self, probs: ArrayLike) -> NDArray[np.float64]:
        """``E[Y | g(X) = p]`` for predictions of this model (closed form).

        Parameters
        ----------
        probs : array_like of shape (N, 2)

        Returns
        -------
        ndarray of shape (N, 2)
        """
        probs = check_probs(probs)
        if probs.shape[1] != 2:
            raise CalibrationInputError(f"`probs` must have 2 columns for the logistic model, got {probs.shape[1]}.")
        if self.b1 == 0.0:
            return np.full_like(probs, 0.5)
        with np.errstate(divide="ignore"):
            x = (logit(probs[:, 1]) - self.b0) / self.b1
        p1 = _true_p1(x)
        return np.column_stack([1.0 - p1, p1])

    def _draw(self, n, repetitions, rng, with_labels=True):
        labels = (rng.random((repetitions, n)) < 0.5).astype(np.intp)
        x = rng.standard_normal((repetitions, n)) + np.where(labels == 1, -1.0, 1.0)
        score = self.b0 + self.b1 * x
        probs = np.empty((repetitions, n, 2))
        expit(-score, out=probs[..., 0])
        expit(score, out=probs[..., 1])
        calibrated = np.empty((repetitions, n, 2))
        if self.b1 == 0.0:
            calibrated.fill(0.5)
        else:
            _true_p1(x, out=calibrated[..., 1])
            np.subtract(1.0, calibrated[..., 1], out=calibrated[..., 0])
        return probs, labels, calibrated

    # ----- exact truth by quadrature
    def _truth(self, keys: tuple[str, ...] = ERROR_KEYS) -> GroundTruth:
        """Quadrature for everything but MMCE and SKCE, which come from the reference sample."""
        reference = super()._truth(("mmce", "skce"))
        values = dict(reference.values)
        method = dict(reference.method)
        if self.is_calibrated:
            values["accuracy"], method["accuracy"] = self._accuracy(), "quadrature"
        else:
            exact = self._constant_truth() if self.b1 == 0.0 else self._quadrature_truth()
            for key, value in exact.items():
                values[key] = value
                if self.b1 == 0.0:
                    method[key] = "exact"
                else:
                    method[key] = "grid (trapezoid, 400,001 points)" if key == "ks" else "quadrature"
        return GroundTruth(MappingProxyType(_ordered(values)), MappingProxyType(_ordered_text(method)),
                           reference.skce_bandwidth, MMCE_BANDWIDTH, reference.n_reference)

    def _top_label_parts(self):
        """``(weighted_gap, mass, confidence, width)`` as functions of t >= 0, the distance from
        x0 = -b0/b1 into the class-1 region: confidence(t) = expit(|b1| t) and
        weighted_gap = (c - E[1{Y=C} | c]) * density of c in t-units."""
        b0, b1 = self.b0, self.b1
        x0 = -b0 / b1
        shift = -2.0 * b0 / b1
        sign = 1.0 if b1 > 0 else -1.0

        def weighted_gap(t):
            x = x0 + sign * t
            mirror = -x + shift
            f, f_mirror = _mixture_density(x), _mixture_density(mirror)
            return expit(b0 + b1 * x) * (f + f_mirror) - (f * _true_p1(x) + f_mirror * (1.0 - _true_p1(mirror)))

        def mass(t):
            x = x0 + sign * t
            return _mixture_density(x) + _mixture_density(-x + shift)

        return weighted_gap, mass, 16.0 + abs(x0)

    def _binned_truth(self, n_bins: int, norm: str) -> float:
        """Population top-label ECE with uniform bins, by quadrature within each bin."""
        if self.b1 == 0.0:
            return self._constant_truth()["tce"]
        weighted_gap, mass, width = self._top_label_parts()
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        # Confidence c = expit(|b1| t) lies in [1/2, 1); bin (lo, hi] covers t in (t(lo), t(hi)].
        with np.errstate(divide="ignore"):
            t_edges = np.clip(logit(np.clip(edges, 0.5, 1.0)) / abs(self.b1), 0.0, width)
        total = 0.0
        for lo, hi in zip(t_edges[:-1], t_edges[1:]):
            if hi <= lo:
                continue
            gap = _quad(weighted_gap, lo, hi)
            if norm == "l1":
                total += abs(gap)
            else:
                weight = _quad(mass, lo, hi)
                total += gap**2 / weight if weight > 0 else 0.0
        return total if norm == "l1" else math.sqrt(total)

    def _accuracy(self) -> float:
        if self.b1 == 0.0:
            return 0.5
        x0 = -self.b0 / self.b1
        # Class 1 is predicted where b0 + b1 x > 0 (ties go to class 0).
        right = _quad(lambda x: _mixture_density(x) * (_true_p1(x) if self.b1 > 0 else 1.0 - _true_p1(x)), x0, 14.0)
        left = _quad(lambda x: _mixture_density(x) * (1.0 - _true_p1(x) if self.b1 > 0 else _true_p1(x)), -14.0, x0)
        return right + left

    def _constant_truth(self) -> dict[str, float]:
        s = float(expit(self.b0))
        gap = abs(s - 0.5)
        kl = float(xlogy(0.5, 0.5) * 2 - 0.5 * np.log(max(s, 1e-12)) - 0.5 * np.log(max(1 - s, 1e-12)))
        return {"accuracy": 0.5, "tce": gap, "tce_l2": gap, "ks": gap, "classwise_tce": gap,
                "classwise_ce_kl": kl, "classwise_ce_l2_sq": 2 * gap**2, "canonical_tv": gap,
                "canonical_sq": 2 * gap**2, "ce_kl": kl}

    def _quadrature_truth(self) -> dict[str, float]:
        b0, b1 = self.b0, self.b1

        def s(x):
            return expit(b0 + b1 * x)

        def gap(x):
            return s(x) - _true_p1(x)

        def kl(x):
            p, q = _true_p1(x), s(x)
            return xlogy(p, p) + xlogy(1 - p, 1 - p) - xlogy(p, q) - xlogy(1 - p, 1 - q)

        lo, hi = -14.0, 14.0
        canonical_tv = _quad(lambda x: abs(gap(x)) * _mixture_density(x), lo, hi, _kinks(gap, lo, hi))
        canonical_sq = 2.0 * _quad(lambda x: gap(x) ** 2 * _mixture_density(x), lo, hi)
        ce_kl = _quad(lambda x: kl(x) * _mixture_density(x), lo, hi)

        # Top label: integrate over the half-line where class 1 wins, pairing x
        # with the mirror point x' that has the same confidence for class 0.
        weighted_gap, mass, width = self._top_label_parts()
        kinks = _kinks(weighted_gap, 0.0, width)
        tce = _quad(lambda t: abs(weighted_gap(t)), 0.0, width, kinks)
        tce_sq = _quad(lambda t: weighted_gap(t) ** 2 / max(mass(t), 1e-300), 0.0, width, kinks)
        grid = np.linspace(0.0, width, 400_001)
        cumulative = integrate.cumulative_trapezoid(weighted_gap(grid), grid, initial=0.0)
        return {"accuracy": self._accuracy(), "tce": tce, "tce_l2": math.sqrt(tce_sq),
                "ks": float(np.abs(cumulative).max()), "classwise_tce": canonical_tv,
                "classwise_ce_kl": ce_kl, "classwise_ce_l2_sq": canonical_sq, "canonical_tv": canonical_tv,
                "canonical_sq": canonical_sq, "ce_kl": ce_kl}


def _kinks(signed, lo: float, hi: float) -> list[float]:
    """Sign changes of ``signed`` on a 4001-point grid (break points for quad)."""
    grid = np.linspace(lo, hi, 4001)
    values = signed(grid)
    change = np.flatnonzero(np.sign(values[1:]) * np.sign(values[:-1]) < 0)
    return [float(0.5 * (grid[i] + grid[i + 1])) for i in change[:40]]


def _quad(function, lo: float, hi: float, points: list[float] | None = None) -> float:
    points = [p for p in (points or []) if lo < p < hi]
    value, _ = integrate.quad(function, lo, hi, points=points or None, limit=400, epsabs=1e-13, epsrel=1e-10)
    return float(value)


def futami_logistic(case: str = "less_calibrated") -> LogisticModel:
    """The logistic model with one of Futami & Fujisawa's (2024, Figure 1) parameter settings.

    Parameters
    ----------
    case : {"less_calibrated", "better_calibrated"}
        ``(b0, b1) = (0.5, -1.5)`` or ``(0.2, -1.9)``.

    Returns
    -------
    LogisticModel
    """
    case = check_choice(case, "case", tuple(FUTAMI_CASES))
    return LogisticModel(*FUTAMI_CASES[case])


def gaussian_mixture(case: str = "perfect") -> LogisticModel:
    """The Gaussian-mixture models of Vaicenavicius et al. (2019), appendix C.1.

    Parameters
    ----------
    case : {"perfect", "constant", "uncalibrated"}
        ``(b0, b1) = (0, -2)`` (Bayes-optimal), ``(0, 0)`` (calibrated
        constant prediction 1/2) or ``(1, 1)`` (uncalibrated); their Figures
        6-8, 9-11 and 12-14.

    Returns
    -------
    LogisticModel
    """
    case = check_choice(case, "case", tuple(VAICENAVICIUS_CASES))
    return LogisticModel(*VAICENAVICIUS_CASES[case])
