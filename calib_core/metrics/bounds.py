"""Bounds the true value of a registered metric obeys, declared once (:data:`BOUNDS`).

:func:`calib_core.metrics.reports.check_estimate` marks an estimate that
breaks one as unreliable at its N and K; the registry
(:mod:`calib_core.metrics.registry`) re-exports these names.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOUNDS", "Bound", "CALIBRATED_BIAS"]

#: The limit of a :class:`Bound` that is the estimator's own bias (:func:`calib_core.calibrated_bias`).
CALIBRATED_BIAS = "calibrated_bias"


@dataclass(frozen=True)
class Bound:
    """``key <= scale * limit`` (or ``>=``): a bound the true quantity obeys, declared once in :data:`BOUNDS`.

    An estimate that breaks it is marked "unreliable at this N and K"
    (:func:`calib_core.metrics.reports.check_estimate`) with ``bias`` and ``remedy``.

    Attributes
    ----------
    key : str
        The registry key of the bounded metric.
    relation : {"<=", ">="}
    limit : str or float
        A registry key, a number, or :data:`CALIBRATED_BIAS` (the estimate on
        labels drawn from the predictions themselves, where the true value is 0).
    why : str
        Why the true quantity obeys the bound (paper and equation).
    bias : str
        Why a finite-sample estimate can break it (may name ``{h}``, the bandwidth).
    remedy : str
        What would make the estimate reliable.
    scale : float
        Multiplies the limit.
    """

    key: str
    relation: str
    limit: str | float
    why: str
    bias: str
    remedy: str
    scale: float = 1.0


_KDE_BIAS = ("the leave-one-out Dirichlet-kernel estimate of P(Y | prediction) at h = {h} averages the labels of "
             "the nearest predictions, which at this N and K lie far apart in the simplex, so it is nearly one-hot "
             "and far from the prediction even for a calibrated model")
_KDE_REMEDY = ("more rows, fewer classes (e.g. the class-wise or top-label errors), or a larger bandwidth h (the "
               "Estimators page can choose h by leave-one-out likelihood)")
_CHAIN = "Gruber & Buettner 2022, eq. 6: ECE, KS and MMCE <= TCE_1 <= ... <= CE_2 <= sqrt(BS)"
_BINNED_BIAS = "a binned estimate is biased upwards when its bins hold few rows (Proposition 3.3 of the same paper)"

#: Every bound of a registered metric (Gruber & Buettner 2022; Popordanoska et al. 2024; Widmann et al. 2019).
BOUNDS: tuple[Bound, ...] = (
    Bound("kde_ce_kl", "<=", "nll",
          "the NLL is CE_KL plus a non-negative refinement term (Gruber & Buettner 2022, Theorem 4.3; "
          "Popordanoska et al. 2024, eq. 13)", _KDE_BIAS + "; where it gives weight to a class the prediction rates "
          "at (nearly) 0, the KL divergence explodes (the NLL floors such probabilities at 1e-12)", _KDE_REMEDY),
    Bound("kde_ce_l2", "<=", "brier",
          "the Brier score is CE_2^2 plus a non-negative refinement term (Gruber & Buettner 2022, Theorem 4.3; "
          "Popordanoska et al. 2024, eq. 13)", _KDE_BIAS, _KDE_REMEDY),
    *(Bound(key, ">=", CALIBRATED_BIAS, "an estimate that close to its own bias says more about the estimator "
            "than about the model (consistency resampling, Vaicenavicius et al. 2019)",
            _KDE_BIAS, _KDE_REMEDY, scale=2.0) for key in ("kde_ce_kl", "kde_ce_l2")),
    Bound("ece", "<=", "calibration_upper_bound", _CHAIN, _BINNED_BIAS, "more rows, or fewer bins"),
    Bound("rmsce", "<=", "calibration_upper_bound", _CHAIN + " (RMSCE estimates TCE_2)", _BINNED_BIAS,
          "more rows, or fewer bins"),
    Bound("ks", "<=", "calibration_upper_bound", _CHAIN,
          "the KS error of a small sample is inflated by the noise of the cumulative sums", "more rows"),
    Bound("mmce", "<=", "calibration_upper_bound", _CHAIN + " (with c = 1 for its Laplacian kernel)",
          "MMCE is a V-statistic, biased upwards on small samples (Kumar et al. 2018)",
          "more rows, or a smaller kernel width"),
    *(Bound(key, ">=", 0.0, "a squared kernel distance is never negative (Widmann et al. 2019, Lemma 1)",
            "an unbiased estimate scatters around the true value, so near 0 it falls below 0 by noise: read it "
            "as no evidence of miscalibration", "more rows (a narrower interval)") for key in ("skce", "skce_block")),
)
