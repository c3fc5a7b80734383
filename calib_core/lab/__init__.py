"""Simulation: ground-truth generators and the studies run on them.

==================  =============================================================
module              what it does
==================  =============================================================
``generators``      models with a known true calibration error
``estimators``      estimator bias and spread on simulated test sets (``run_lab``)
``bounds``          Futami & Fujisawa's bias bounds, Gruber & Buettner's expected ECE
``subsets``         every metric on random subsets of a test set
``pathologies``     the gallery of cases where a calibration number misleads
``stability``       how far an estimate still moves with the test-set size (reads the studies)
``size_power``      the measured size and power of the calibration tests
``planner``         rows needed to detect a miscalibration, on a model like the user's
==================  =============================================================

The bin-count rank stability of the 32 GCE variants lives with the other
bin-count studies in :mod:`calib_core.metrics.sensitivity`.
"""
from calib_core.lab.generators import (TRUTH_KEYS, GroundTruth, LogisticModel, LogisticNormalModel, SimulatedData,
                                       UniformSimplexModel, binned_truth, futami_logistic, gaussian_mixture)
from calib_core.lab.estimators import LabEstimator, LabResult, ece_estimator, lab_estimators, run_lab
from calib_core.lab.bounds import FutamiBounds, expected_ece, futami_bounds
from calib_core.lab.subsets import SubsetStudy, subset_study
from calib_core.lab.pathologies import Pathology, pathologies
from calib_core.lab.size_power import (SIZE_BAND, SizePowerResult, binomial_interval, simulate_p_values,
                                       size_and_power, summarise_size_power)

__all__ = [
    "TRUTH_KEYS", "GroundTruth", "LogisticModel", "LogisticNormalModel", "SimulatedData", "UniformSimplexModel",
    "binned_truth", "futami_logistic", "gaussian_mixture",
    "LabEstimator", "LabResult", "ece_estimator", "lab_estimators", "run_lab",
    "FutamiBounds", "expected_ece", "futami_bounds",
    "SubsetStudy", "subset_study",
    "Pathology", "pathologies",
    "SIZE_BAND", "SizePowerResult", "binomial_interval", "simulate_p_values", "size_and_power",
    "summarise_size_power",
]

from calib_core.lab.planner import LabelPlan, ResampledModel, plan_labels, temperature_for_ece, tempered_ece  # noqa: E402

__all__ += ["LabelPlan", "ResampledModel", "plan_labels", "temperature_for_ece", "tempered_ece"]
