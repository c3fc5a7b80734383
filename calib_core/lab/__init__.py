"""Simulation: ground-truth generators and the studies run on them.

==================  =============================================================
module              what it does
==================  =============================================================
``generators``      models with a known true calibration error
``studies``         estimator bias and spread, Futami bounds, subsets, bin-rank stability, pathologies
``size_power``      the measured size and power of the calibration tests
==================  =============================================================
"""
from calib_core.lab.generators import (TRUTH_KEYS, GroundTruth, LogisticModel, LogisticNormalModel, SimulatedData,
                                       UniformSimplexModel, binned_truth, futami_logistic, gaussian_mixture)
from calib_core.lab.studies import (FutamiBounds, LabEstimator, LabResult, Pathology, RankStability, SubsetStudy,
                                    bin_rank_stability, ece_estimator, expected_ece, futami_bounds, lab_estimators,
                                    pathologies, run_lab, subset_study)
from calib_core.lab.size_power import (SIZE_BAND, SizePowerResult, binomial_interval, simulate_p_values,
                                       size_and_power, summarise_size_power)

__all__ = [
    "TRUTH_KEYS", "GroundTruth", "LogisticModel", "LogisticNormalModel", "SimulatedData", "UniformSimplexModel",
    "binned_truth", "futami_logistic", "gaussian_mixture",
    "FutamiBounds", "LabEstimator", "LabResult", "Pathology", "RankStability", "SubsetStudy", "bin_rank_stability",
    "ece_estimator", "expected_ece", "futami_bounds", "lab_estimators", "pathologies", "run_lab", "subset_study",
    "SIZE_BAND", "SizePowerResult", "binomial_interval", "simulate_p_values", "size_and_power",
    "summarise_size_power",
]
