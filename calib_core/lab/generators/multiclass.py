"""Multi-class generators: the logistic-normal model and the uniform simplex model.

* :class:`LogisticNormalModel` - K classes, logits ``N(0, Sigma)`` with
  ``Sigma`` drawn once from an inverse-Wishart distribution, labels drawn from
  the predictions (so they are calibrated), then a temperature (Gruber &
  Buettner 2022, appendix G.1).
* :class:`UniformSimplexModel` - uniform points on the simplex, temperature
  ``t1 = 0.9``, labels drawn from them, then temperature ``t2 = 0.6``
  (Popordanoska et al. 2024, section 7.1).

Both calibration functions are exact (a temperature is invertible), so the
canonical errors are Monte Carlo means over the reference sample
(:mod:`calib_core.lab.generators.truth`).

References
----------
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix G.1.
.. [Popordanoska2024] Popordanoska, T., Gruber, S. G., Tiulpin, A., Buettner, F. &
   Blaschko, M. B. "Consistent and Asymptotically Unbiased Estimation of Proper
   Calibration Errors", AISTATS 2024, section 7.1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.lab.generators.truth import _Model, sample_categorical
from calib_core.validation import CalibrationInputError, check_count, check_positive, check_probs, softmax_unchecked

__all__ = ["LogisticNormalModel", "UniformSimplexModel"]


# --------------------------------------------------------------------------- logistic-normal model
def _bartlett_inverse_factor(n_classes: int, df: float, scale: float, seed: int) -> NDArray[np.float64]:
    """``B`` with ``B^T B = Sigma ~ inverse-Wishart(df, scale * I)`` (Bartlett decomposition).

    ``W = A A^T / scale ~ Wishart(df, I / scale)`` with A lower triangular,
    ``A_ii = sqrt(chi2(df - i))`` and ``A_ij ~ N(0, 1)`` below the diagonal;
    ``Sigma = W^-1 = scale A^-T A^-1``, so row vectors ``z B`` with
    ``B = sqrt(scale) A^-1`` have covariance ``Sigma``.
    """
    rng = np.random.default_rng(seed)
    a = np.tril(rng.standard_normal((n_classes, n_classes)), k=-1)
    a[np.diag_indices(n_classes)] = np.sqrt(rng.chisquare(df - np.arange(n_classes)))
    inverse = np.linalg.solve(a, np.eye(n_classes))
    return math.sqrt(scale) * inverse


@dataclass(frozen=True)
class LogisticNormalModel(_Model):
    """Multi-class logistic-normal predictions with labels drawn from them, then tempered (Gruber & Buettner G.1).

    Logits ``l ~ N(0, Sigma)`` with ``Sigma`` drawn once (``model_seed``)
    from an inverse-Wishart distribution with ``df`` degrees of freedom and
    scale matrix ``scale * I``; calibrated predictions ``p = softmax(l)``;
    labels ``Y ~ Categorical(p)``; reported predictions
    ``g = softmax(l / temperature)``.

    Parameters
    ----------
    n_classes : int, default 100
    temperature : float, default 1.0
        1 keeps the predictions calibrated; > 1 makes them under-confident,
        < 1 over-confident. The arg-max, hence the accuracy, does not change.
    scale : float, default 215.0
        Scale matrix ``scale * I``. The paper starts from ``I / 0.01`` and
        tempers it until its draw reaches 87.6% accuracy; with K = 100 and
        ``model_seed=0``, ``scale=100`` gives 81.7% and the default 215
        gives the paper's 87.6% (``truth()["accuracy"]``).
    df : float, optional
        Degrees of freedom, > K - 1; ``None`` means K.
    model_seed : int, default 0
        Seed of the covariance draw (the model), not of the data.

    Notes
    -----
    Because ``g`` is an invertible function of ``p``, the calibration function
    is exact: ``E[Y | g] = p = softmax(temperature * log g)``.

    Examples
    --------
    >>> model = LogisticNormalModel(n_classes=10, temperature=2.0)
    >>> model.sample(500, seed=1).probs.shape
    (500, 10)
    """

    n_classes: int = 100
    temperature: float = 1.0
    scale: float = 215.0
    df: float | None = None
    model_seed: int = 0
    _factor: NDArray[np.float64] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_classes", check_count(self.n_classes, "n_classes", 2))
        object.__setattr__(self, "temperature", check_positive(self.temperature, "temperature"))
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))
        df = float(self.n_classes) if self.df is None else check_positive(self.df, "df")
        if df <= self.n_classes - 1:
            raise CalibrationInputError(
                f"`df` must exceed n_classes - 1 = {self.n_classes - 1} for an inverse-Wishart draw, got {df:g}."
            )
        object.__setattr__(self, "df", df)
        object.__setattr__(self, "model_seed", check_count(self.model_seed, "model_seed", 0))
        object.__setattr__(self, "_factor", _bartlett_inverse_factor(self.n_classes, df, self.scale, self.model_seed))

    @property
    def name(self) -> str:
        return f"Logistic-normal model (K={self.n_classes}, T={self.temperature:g})"

    @property
    def is_calibrated(self) -> bool:
        return self.temperature == 1.0

    @property
    def covariance(self) -> NDArray[np.float64]:
        """The drawn logit covariance Sigma, ``(K, K)``."""
        return self._factor.T @ self._factor

    def calibration_map(self, probs: ArrayLike) -> NDArray[np.float64]:
        """``E[Y | g] = softmax(temperature * log g)``, ``(N, K)``."""
        probs = check_probs(probs)
        with np.errstate(divide="ignore"):
            return softmax_unchecked(self.temperature * np.log(probs))

    def _draw(self, n, repetitions, rng, with_labels=True):
        logits = rng.standard_normal((repetitions, n, self.n_classes)) @ self._factor
        calibrated = softmax_unchecked(logits)
        labels = sample_categorical(calibrated, rng) if with_labels else None
        probs = calibrated if self.temperature == 1.0 else softmax_unchecked(logits / self.temperature)
        return probs, labels, calibrated


# --------------------------------------------------------------------------- uniform simplex model
@dataclass(frozen=True)
class UniformSimplexModel(_Model):
    """Uniform simplex points, sharpened, labelled, then miscalibrated (Popordanoska et al. 7.1).

    ``u ~ Dirichlet(1, ..., 1)`` (uniform on the simplex);
    ``p = softmax(log(u) / t1)`` (t1 = 0.9 pushes the scores towards the
    corners); labels ``Y ~ Categorical(p)``, so ``p`` is calibrated; the
    reported predictions ``g = softmax(log(p) / t2)`` (t2 = 0.6 makes them
    over-confident).

    Parameters
    ----------
    n_classes : int, default 3
    t1 : float, default 0.9
    t2 : float, default 0.6
        ``t2 = 1`` gives a calibrated model.

    Notes
    -----
    ``E[Y | g] = p = softmax(t2 * log g)`` exactly, as ``g`` is an invertible
    function of ``p``. Popordanoska et al. evaluate class-wise errors; the
    class-wise truths here condition on each ``g_k`` alone (see the module Notes).
    """

    n_classes: int = 3
    t1: float = 0.9
    t2: float = 0.6

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_classes", check_count(self.n_classes, "n_classes", 2))
        object.__setattr__(self, "t1", check_positive(self.t1, "t1"))
        object.__setattr__(self, "t2", check_positive(self.t2, "t2"))

    @property
    def name(self) -> str:
        return f"Uniform-simplex model (K={self.n_classes}, t1={self.t1:g}, t2={self.t2:g})"

    @property
    def is_calibrated(self) -> bool:
        return self.t2 == 1.0

    def calibration_map(self, probs: ArrayLike) -> NDArray[np.float64]:
        """``E[Y | g] = softmax(t2 * log g)``, ``(N, K)``."""
        probs = check_probs(probs)
        with np.errstate(divide="ignore"):
            return softmax_unchecked(self.t2 * np.log(probs))

    def _draw(self, n, repetitions, rng, with_labels=True):
        # Normalised exponentials are uniform on the simplex; the normalisation
        # cancels inside the softmax, so log(e) / t1 gives p directly.
        log_e = np.log(rng.standard_exponential((repetitions, n, self.n_classes)))
        calibrated = softmax_unchecked(log_e / self.t1)
        labels = sample_categorical(calibrated, rng) if with_labels else None
        probs = calibrated if self.t2 == 1.0 else softmax_unchecked(log_e / (self.t1 * self.t2))
        return probs, labels, calibrated
