"""A bootstrap band around the risk-coverage curve (:mod:`calib_core.metrics.selective`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.inference.resample import index_blocks
from calib_core.metrics.selective import (coverage_places, risk_at_places, selective_risk, tie_groups,
                                          weighted_confidence_correct, weighted_places)
from calib_core.validation import CalibrationInputError, check_count, check_fraction

__all__ = ["RiskCoverageBand", "risk_coverage_band"]

#: Coverages of the band by default: 1 %, 2 %, ..., 100 %.
BAND_COVERAGES = np.linspace(0.01, 1.0, 100)


@dataclass(frozen=True)
class RiskCoverageBand:
    """Selective risk at fixed coverages with a percentile bootstrap band.

    Attributes
    ----------
    coverage : ndarray of shape (C,)
    risk : ndarray of shape (C,)
        :func:`calib_core.selective_risk` of all rows at each coverage.
    low, high : ndarray of shape (C,)
        The ``alpha / 2`` and ``1 - alpha / 2`` quantiles of the same over the resamples (pointwise, not
        simultaneous).
    n_boot : int
    alpha : float
    """

    coverage: NDArray[np.float64]
    risk: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    n_boot: int
    alpha: float


def risk_coverage_band(confidence: ArrayLike, correct: ArrayLike, *, coverages: ArrayLike | None = None,
                       n_boot: int = 200, alpha: float = 0.05, seed: int | np.random.Generator | None = 0,
                       sample_weight: ArrayLike | None = None) -> RiskCoverageBand:
    """Pointwise percentile bootstrap band of the selective risk at fixed coverages.

    Parameters
    ----------
    confidence : array_like of shape (N,)
    correct : array_like of shape (N,)
    coverages : array_like of shape (C,), optional
        Coverages in [0, 1]; default 0.01, 0.02, ..., 1.
    n_boot : int, default 200
        Resamples of N rows drawn with replacement (the draws of every
        bootstrap of calib_core, :func:`calib_core.inference.resample.index_blocks`).
    alpha : float, default 0.05
        The band holds ``1 - alpha`` of the resampled values at each coverage.
    seed : int or numpy.random.Generator, optional
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies): ``risk`` is the weighted
        :func:`calib_core.selective_risk`, and each resample draws the rows of
        positive weight with replacement carrying their weights (the weighted
        bootstrap of :func:`calib_core.bootstrap_ci`), its places on the scale
        of its own summed weight. Unit weights give the unweighted band.

    Returns
    -------
    RiskCoverageBand

    Raises
    ------
    CalibrationInputError
        Invalid input or options.

    Notes
    -----
    Each resample's selective risk at coverage c is ``E_k / k`` with ``k =
    ceil(c N)`` (:func:`calib_core.selective_risk`, tied items entering
    together), so the band is read at fixed coverages rather than at the
    thresholds, which move from resample to resample. Pointwise: about
    ``alpha`` of the coverages may fall outside by chance. Efron &
    Tibshirani (1993), section 13.3.

    Examples
    --------
    >>> band = risk_coverage_band([0.9, 0.8, 0.6, 0.3], [1, 1, 0, 0], coverages=[0.5, 1.0], n_boot=50)
    >>> band.risk.tolist()
    [0.0, 0.5]
    """
    confidence, correct, weights = weighted_confidence_correct(confidence, correct, sample_weight)
    n_boot, alpha = check_count(n_boot, "n_boot", 2), check_fraction(alpha, "alpha")
    levels = BAND_COVERAGES if coverages is None else np.asarray(coverages, dtype=np.float64)
    if levels.ndim != 1:
        raise CalibrationInputError(f"`coverages` must be 1-D, got shape {levels.shape}.")
    places = coverage_places(levels, confidence.size)
    values, group = tie_groups(confidence)
    wrong = 1.0 - correct
    n_groups = values.size
    samples = np.empty((n_boot, levels.size))
    for start, stop, indices in index_blocks(np.random.default_rng(seed), confidence.size, n_boot):
        # Each resample's items and errors per tie group, all resamples of the block in one bincount.
        flat = (group[indices] + (np.arange(stop - start) * n_groups)[:, None]).ravel()
        if weights is None:
            sizes = np.bincount(flat, minlength=(stop - start) * n_groups).reshape(-1, n_groups)
            errors = np.bincount(flat, weights=wrong[indices].ravel(), minlength=sizes.size).reshape(-1, n_groups)
            samples[start:stop] = risk_at_places(sizes, errors, places)
            continue
        drawn = weights[indices].ravel()
        sizes = np.bincount(flat, weights=drawn, minlength=(stop - start) * n_groups).reshape(-1, n_groups)
        errors = np.bincount(flat, weights=wrong[indices].ravel() * drawn, minlength=sizes.size).reshape(-1, n_groups)
        samples[start:stop] = risk_at_places(sizes, errors, weighted_places(levels, np.cumsum(sizes, axis=1)[:, -1]))
    low, high = np.quantile(samples, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    risk = selective_risk(confidence, correct, levels, sample_weight=weights)
    return RiskCoverageBand(levels, risk, low, high, n_boot, alpha)
