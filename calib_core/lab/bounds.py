"""Futami & Fujisawa's bias bounds of the binned ECE, and Gruber & Buettner's expected ECE.

* :func:`futami_bounds` - Futami & Fujisawa's (2024) bounds on the bias of the
  binned ECE: statistical ``sqrt(2 B log 2 / n)``, binning ``(1 + L) / B`` and
  their sum, with the optimal bin count.
* :func:`expected_ece` - the folded-normal approximation of the expected ECE
  estimate at a test-set size n (Gruber & Buettner 2022, D.5).

References
----------
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, eq. (9), (11), (12), (13).
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix D.5,
   eq. (22)-(24) and Proposition 3.3.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import optimal_n_bins, uniform_index
from calib_core.validation import CalibrationInputError, check_binning, check_n_bins, check_positive

__all__ = ["FutamiBounds", "expected_ece", "futami_bounds", "model_lipschitz"]


def model_lipschitz(model: object) -> tuple[float, bool]:
    """The Lipschitz constant L of a generator's calibration map, and whether it is the model's own.

    L sets the optimal bin count ``floor((2 N (1 + L)^2 / log 2)^(1/3))`` and
    the bounds of Futami & Fujisawa (2024, Theorem 3). Only the logistic
    model knows its L; an unknown or unbounded (infinite) L falls back to 1.
    """
    value = getattr(model, "lipschitz", None)
    if value is not None and math.isfinite(value):
        return float(value), True
    return 1.0, False


@dataclass(frozen=True)
class FutamiBounds:
    """Futami & Fujisawa's (2024) bounds on the expected bias of the binned ECE.

    Attributes
    ----------
    n : ndarray
        Test-set sizes.
    n_bins : ndarray
        Bin counts B the bounds are evaluated at.
    statistical : ndarray
        Bound on ``E|TCE(f_I) - ECE(f, S)|`` (eq. 9).
    binning : ndarray
        Bound on ``|TCE(f) - TCE(f_I)|`` (eq. 11).
    total : ndarray
        Their sum, the bound on ``E|TCE(f) - ECE(f, S)|`` (eq. 12).
    optimal_n_bins : ndarray
        ``floor((2 n (1 + L)^2 / log 2)^(1/3))``, the minimiser of the
        uniform-width total (eq. 13).
    lipschitz : float
    scheme : str
        ``"uniform"`` (UWB) or ``"adaptive"`` (UMB).
    """

    n: NDArray[np.int64]
    n_bins: NDArray[np.int64]
    statistical: NDArray[np.float64]
    binning: NDArray[np.float64]
    total: NDArray[np.float64]
    optimal_n_bins: NDArray[np.int64]
    lipschitz: float
    scheme: str

    def to_frame(self) -> pd.DataFrame:
        """Columns ``n``, ``n_bins``, ``statistical``, ``binning``, ``total``, ``optimal_n_bins``."""
        return pd.DataFrame({"n": self.n, "n_bins": self.n_bins, "statistical": self.statistical,
                             "binning": self.binning, "total": self.total,
                             "optimal_n_bins": self.optimal_n_bins})


def _whole_numbers(values: int | ArrayLike, name: str, minimum: int) -> NDArray[np.int64]:
    """``values`` as a 1-D or larger int64 array of whole numbers ``>= minimum`` (whole floats accepted)."""
    array = np.atleast_1d(np.asarray(values))
    if array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and np.all(array == np.round(array))):
        raise CalibrationInputError(f"`{name}` must hold whole numbers, got {values!r}.")
    array = array.astype(np.int64)
    if np.any(array < minimum):
        raise CalibrationInputError(f"`{name}` must be >= {minimum}, got {array[array < minimum][0]}.")
    return array


def futami_bounds(n: int | ArrayLike, n_bins: int | ArrayLike | None = None, lipschitz: float = 1.0, *,
                  binning: str = "uniform") -> FutamiBounds:
    """Statistical, binning and total bias bounds of the binned ECE (Futami & Fujisawa 2024).

    Parameters
    ----------
    n : int or array_like of int
        Test-set sizes (>= 2).
    n_bins : int, array_like of int or None
        Bin counts (broadcast against ``n``); ``None`` uses the optimal
        ``optimal_n_bins(n, lipschitz)`` for each n.
    lipschitz : float, default 1.0
        Lipschitz constant L of ``E[Y | f(X) = p]``.
    binning : {"uniform", "adaptive"}, default "uniform"
        Uniform-width (UWB) or uniform-mass (UMB) bins.

    Returns
    -------
    FutamiBounds

    Raises
    ------
    CalibrationInputError
        Sizes below 2, bin counts below 1, adaptive bins with B >= n, or a
        negative Lipschitz constant.

    Notes
    -----
    Uniform-width bins (eq. 9, 11, 12):

    .. math:: \\text{statistical} = \\sqrt{\\frac{2 B \\log 2}{n}}, \\qquad
              \\text{binning} = \\frac{1 + L}{B},

    uniform-mass bins, with :math:`s = \\sqrt{2 B \\log 2 / (n - B)} + 2B / (n - B)`:
    statistical ``s`` and binning ``(1 + L)(1/B + s)``. The total is their
    sum; for UWB it is smallest near ``B = (2 n (1 + L)^2 / log 2)^{1/3}``,
    giving a bias of order :math:`n^{-1/3}` (eq. 13).

    Examples
    --------
    >>> b = futami_bounds(1000, 10)
    >>> round(float(b.statistical[0]), 4), round(float(b.binning[0]), 4)
    (0.1177, 0.2)
    """
    lipschitz = check_positive(lipschitz, "lipschitz", allow_zero=True)
    binning = check_binning(binning)
    sizes = _whole_numbers(n, "n", 2)
    optimal = np.array([optimal_n_bins(int(v), lipschitz) for v in sizes.ravel()], dtype=np.int64).reshape(sizes.shape)
    bins = optimal if n_bins is None else _whole_numbers(n_bins, "n_bins", 1)
    sizes, bins, optimal = np.broadcast_arrays(sizes, bins, optimal)
    b = bins.astype(np.float64)
    m = sizes.astype(np.float64)
    if binning == "uniform":
        statistical = np.sqrt(2.0 * b * math.log(2.0) / m)
        bin_bias = (1.0 + lipschitz) / b
    else:
        if np.any(bins >= sizes):
            raise CalibrationInputError("uniform-mass bounds need `n_bins` < `n` (they divide by n - B).")
        statistical = np.sqrt(2.0 * b * math.log(2.0) / (m - b)) + 2.0 * b / (m - b)
        bin_bias = (1.0 + lipschitz) * (1.0 / b + statistical)
    return FutamiBounds(sizes.copy(), bins.copy(), statistical, bin_bias, statistical + bin_bias,
                        optimal.copy(), lipschitz, binning)


def expected_ece(model, n: int | ArrayLike, n_bins: int = 15) -> NDArray[np.float64]:
    """Gruber & Buettner's folded-normal approximation of the expected ECE estimate at size n.

    Parameters
    ----------
    model : ground-truth generator
        :mod:`calib_core.lab.generators` model; its noise-free reference sample
        gives the per-bin quantities.
    n : int or array_like of int
        Test-set sizes.
    n_bins : int, default 15
        Uniform-width bins, as in the paper.

    Returns
    -------
    ndarray
        :math:`\\mu_{(n)}` for each n (shape of ``np.atleast_1d(n)``).

    Notes
    -----
    Gruber & Buettner (2022), appendix D.5, eq. (22)-(24): with bin
    probability :math:`p_i`, true gap :math:`\\mu_i = \\mathrm{conf}_i - \\mathrm{acc}_i`
    and :math:`\\sigma_i^2 = (V^{conf}_i + \\mathrm{acc}_i(1 - \\mathrm{acc}_i)) / n_i`,
    :math:`n_i = n p_i`,

    .. math:: \\mu_{(n)} = \\sum_i p_i \\left\\{ \\sqrt{2/\\pi}\\, \\sigma_i e^{-\\mu_i^2 / (2\\sigma_i^2)}
              + \\mu_i \\left[1 - 2\\Phi(-\\mu_i / \\sigma_i)\\right] \\right\\}
              \\ge \\sum_i p_i |\\mu_i| = \\mathrm{ECE},

    decreasing and convex in n (Proposition 3.3). It treats the bin counts
    as fixed, so it is least accurate when bins hold only a few rows.
    """
    from scipy.stats import norm as normal

    n_bins = check_n_bins(n_bins)
    sizes = np.atleast_1d(np.asarray(n, dtype=np.float64))
    if np.any(sizes < 1) or not np.all(np.isfinite(sizes)):
        raise CalibrationInputError(f"`n` must hold sizes >= 1, got {n!r}.")
    if not hasattr(model, "reference_sample"):
        raise CalibrationInputError(f"`model` must be a ground-truth generator, got {type(model).__name__}.")
    points, calibration = model.reference_sample()
    rows = np.arange(points.shape[0])
    top = points.argmax(axis=1)
    confidence, accuracy = points[rows, top], calibration[rows, top]
    index = uniform_index(confidence, n_bins)
    count = np.bincount(index, minlength=n_bins).astype(np.float64)
    filled = count > 0
    safe = np.maximum(count, 1.0)
    p = count / points.shape[0]
    conf = np.bincount(index, weights=confidence, minlength=n_bins) / safe
    acc = np.bincount(index, weights=accuracy, minlength=n_bins) / safe
    var_conf = np.maximum(np.bincount(index, weights=confidence**2, minlength=n_bins) / safe - conf**2, 0.0)
    mu = (conf - acc)[filled]
    spread = (var_conf + acc * (1.0 - acc))[filled]
    p = p[filled]
    n_i = sizes[:, None] * p[None, :]
    sigma = np.sqrt(spread[None, :] / n_i)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sigma > 0, mu[None, :] / sigma, np.sign(mu)[None, :] * np.inf)
        folded = np.where(sigma > 0,
                          np.sqrt(2.0 / np.pi) * sigma * np.exp(-0.5 * ratio**2) + mu * (1.0 - 2.0 * normal.cdf(-ratio)),
                          np.abs(mu)[None, :])
    return (p[None, :] * folded).sum(axis=1)

