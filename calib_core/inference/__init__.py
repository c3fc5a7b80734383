"""Uncertainty and tests: intervals, verdicts, calibration tests, and the same by subgroup.

==================  =============================================================
module              what it does
==================  =============================================================
``resample``        the shared bootstrap engine (resampled per-bin sums)
``bootstrap``       bootstrap intervals of any metric; the one sampler of several metrics on the same resamples
``intervals``       each registered metric's interval, made as its entry declares
``verdicts``        the one rule reading a test into calibrated / miscalibrated / inconclusive
``consistency``     consistency resampling (Vaicenavicius et al. 2019, appendix C)
``draws``           labels drawn from the predictions; an estimate on many draws at once
``lenses``          expected miscalibration per lens, distance and partition (Tables 3-5)
``calibration_tests``  consistency, SKCE, Hosmer-Lemeshow and Spiegelhalter tests, Holm
``skce_estimators``  the quadratic and block SKCE as estimator objects (the SKCE test's resampled null)
``groups``          a metric per subgroup with intervals; multicalibration
``blocks``          intervals of O(N^2) estimators over disjoint row blocks
``selective_bands``  a bootstrap band around the risk-coverage curve
==================  =============================================================
"""
from calib_core.inference.bootstrap import BootstrapResult, bootstrap_ci, bootstrap_metrics, resampled_metrics
from calib_core.inference.intervals import MetricInterval, metric_interval
from calib_core.inference.verdicts import VERDICTS, CellOccupancy, Verdict, read_test
from calib_core.inference.consistency import (CanonicalCE, ConsistencyBands, ConsistencyResult, consistency_bands,
                                              consistency_resampling, sample_labels)
from calib_core.inference.lenses import LensEstimate, LensEstimates, lens_estimates
from calib_core.inference.calibration_tests import (TEST_METHODS, CalibrationTestResult, UnbiasedSKCE,
                                                    calibration_test, holm_adjust, hosmer_lemeshow, spiegelhalter_z)
from calib_core.inference.selective_bands import RiskCoverageBand, risk_coverage_band
from calib_core.inference.groups import (MAX_GROUPS, GroupResult, MulticalibrationResult, by_group,
                                         group_reliability, multicalibration)

__all__ = [
    "BootstrapResult", "bootstrap_ci", "bootstrap_metrics", "resampled_metrics",
    "MetricInterval", "metric_interval",
    "VERDICTS", "CellOccupancy", "Verdict", "read_test",
    "CanonicalCE", "ConsistencyBands", "ConsistencyResult", "LensEstimate", "LensEstimates", "consistency_bands",
    "consistency_resampling", "lens_estimates", "sample_labels",
    "TEST_METHODS", "CalibrationTestResult", "UnbiasedSKCE", "calibration_test", "holm_adjust", "hosmer_lemeshow",
    "spiegelhalter_z",
    "MAX_GROUPS", "GroupResult", "MulticalibrationResult", "by_group", "group_reliability", "multicalibration",
    "RiskCoverageBand", "risk_coverage_band",
]
