"""calib_core: calibration metrics, reliability data and recalibration for classifiers.

The public names below are a contract (see ``calib_core_api.md``): checks outside
this repository import them from the package root and compare the numbers with
independent implementations.
"""
from calib_core.validation import CalibrationInputError, as_probs, softmax
from calib_core.binning import BinStats, bin_index, bin_statistics, classwise_bin_statistics, optimal_n_bins
from calib_core.binned import accuracy, ace, classwise_ece, ece, gce, mce, sce, tace, top_label
from calib_core.scores import brier_score, ks_error, nll
from calib_core.bootstrap import BootstrapResult, bootstrap_ci, bootstrap_metrics
from calib_core.reliability import reliability_table, wilson_interval
from calib_core.registry import (MAX_QUADRATIC_ROWS, METRICS, MetricSpec, compute_metrics, get_metric,
                                 metric_function, skipped_quadratic)
from calib_core.sensitivity import BinRanking, bin_sensitivity, rank_by_bins
from calib_core.simplex import (CellTable, Partition, SimplexProjection, SimplexReliability, cell_table,
                                data_dependent_partition, default_groups, simplex_projection,
                                simplex_reliability, uniform_partition)
from calib_core.canonical import (CanonicalCE, ConsistencyBands, ConsistencyResult, LensEstimate, LensEstimates,
                                  canonical_ce, canonical_ce_table, consistency_bands, consistency_resampling,
                                  lens_estimates, lens_view, sample_labels)

__all__ = [
    "CalibrationInputError",
    "as_probs",
    "softmax",
    "BinStats",
    "bin_index",
    "bin_statistics",
    "classwise_bin_statistics",
    "optimal_n_bins",
    "accuracy",
    "ace",
    "classwise_ece",
    "ece",
    "gce",
    "mce",
    "sce",
    "tace",
    "top_label",
    "brier_score",
    "ks_error",
    "nll",
    "BootstrapResult",
    "bootstrap_ci",
    "bootstrap_metrics",
    "reliability_table",
    "wilson_interval",
    "METRICS",
    "MetricSpec",
    "compute_metrics",
    "get_metric",
    "metric_function",
    "MAX_QUADRATIC_ROWS",
    "skipped_quadratic",
    "BinRanking",
    "bin_sensitivity",
    "rank_by_bins",
    "CellTable",
    "Partition",
    "SimplexProjection",
    "SimplexReliability",
    "cell_table",
    "data_dependent_partition",
    "default_groups",
    "simplex_projection",
    "simplex_reliability",
    "uniform_partition",
    "CanonicalCE",
    "ConsistencyBands",
    "ConsistencyResult",
    "LensEstimate",
    "LensEstimates",
    "canonical_ce",
    "canonical_ce_table",
    "consistency_bands",
    "consistency_resampling",
    "lens_estimates",
    "lens_view",
    "sample_labels",
]

from calib_core.io import Predictions, demo_datasets, load_demo, load_predictions  # noqa: E402

__all__ += ["Predictions", "load_predictions", "demo_datasets", "load_demo"]

from calib_core.kernel import median_pairwise_distance, mmce, skce  # noqa: E402
from calib_core.proper import (BoundChain, ChainLink, ChainTerm, ScoreDecomposition, bound_chain,  # noqa: E402
                               calibration_upper_bound, kde_bandwidth, kde_ce, kde_conditional_expectation,
                               score_decomposition)
from calib_core.smooth import SmoothReliabilityCurve, smooth_ece, smooth_reliability_curve  # noqa: E402

__all__ += ["median_pairwise_distance", "mmce", "skce", "BoundChain", "ChainLink", "ChainTerm",
            "ScoreDecomposition", "bound_chain", "calibration_upper_bound", "kde_bandwidth", "kde_ce",
            "kde_conditional_expectation", "score_decomposition", "SmoothReliabilityCurve", "smooth_ece",
            "smooth_reliability_curve"]

from calib_core.kernel import SKCEEstimate, median_heuristic, skce_estimate  # noqa: E402
from calib_core.registry import (MetricInterval, MetricReport, metric_interval, metric_name,  # noqa: E402
                                 metric_report, metric_value)
from calib_core.export import csv_bytes, escape_csv_cell, escape_csv_frame  # noqa: E402

__all__ += ["SKCEEstimate", "median_heuristic", "skce_estimate", "MetricInterval", "MetricReport",
            "metric_interval", "metric_name", "metric_report", "metric_value", "csv_bytes", "escape_csv_cell",
            "escape_csv_frame"]

from calib_core.generators import (GroundTruth, LogisticModel, LogisticNormalModel, SimulatedData,  # noqa: E402
                                   TRUTH_KEYS, UniformSimplexModel, binned_truth, futami_logistic, gaussian_mixture)
from calib_core.debiased import debiased_ece, ece_sweep  # noqa: E402
from calib_core.lab import (FutamiBounds, LabEstimator, LabResult, Pathology, RankStability, SubsetStudy,  # noqa: E402
                            bin_rank_stability, ece_estimator, expected_ece, futami_bounds, lab_estimators,
                            pathologies, run_lab, subset_study)

__all__ += ["GroundTruth", "LogisticModel", "LogisticNormalModel", "SimulatedData", "TRUTH_KEYS",
            "UniformSimplexModel", "binned_truth", "futami_logistic", "gaussian_mixture", "debiased_ece",
            "ece_sweep", "FutamiBounds", "LabEstimator", "LabResult", "Pathology", "RankStability", "SubsetStudy",
            "bin_rank_stability", "ece_estimator", "expected_ece", "futami_bounds", "lab_estimators",
            "pathologies", "run_lab", "subset_study"]

from calib_core.streaming import CalibrationStats, QuantileSketch, stream_metrics  # noqa: E402
from calib_core.evaluate import CalibrationSummary, Evaluation, evaluate, load_summary  # noqa: E402

__all__ += ["CalibrationStats", "QuantileSketch", "stream_metrics", "CalibrationSummary", "Evaluation", "evaluate",
            "load_summary"]

from calib_core.recalibration import (RECALIBRATORS, AccuracyPreservingCalibratedMap, BetaCalibration,  # noqa: E402
                                      DirichletCalibration, EnsembleTemperatureScaling, HistogramBinning,
                                      IsotonicCalibration, MatrixScaling, MetricOptimizedTemperature, NotFittedError,
                                      PlattScaling, Recalibrator, TemperatureScaling, VectorScaling,
                                      all_recalibrators, check_logits)
from calib_core.protocol import (PredictionSplit, RecalibrationReport, cross_fit, evaluate_recalibration,  # noqa: E402
                                 split_predictions, stratified_folds, stratified_split)

__all__ += ["RECALIBRATORS", "AccuracyPreservingCalibratedMap", "BetaCalibration", "DirichletCalibration",
            "EnsembleTemperatureScaling", "HistogramBinning", "IsotonicCalibration", "MatrixScaling",
            "MetricOptimizedTemperature", "NotFittedError", "PlattScaling", "Recalibrator", "TemperatureScaling",
            "VectorScaling", "all_recalibrators", "check_logits", "PredictionSplit", "RecalibrationReport",
            "cross_fit", "evaluate_recalibration", "split_predictions", "stratified_folds", "stratified_split"]

from calib_core.verdicts import VERDICTS, CellOccupancy, Verdict, read_test  # noqa: E402
from calib_core.calibration_tests import (TEST_METHODS, CalibrationTestResult, UnbiasedSKCE,  # noqa: E402
                                          calibration_test, holm_adjust, hosmer_lemeshow, spiegelhalter_z)

__all__ += ["VERDICTS", "CellOccupancy", "Verdict", "read_test", "TEST_METHODS", "CalibrationTestResult",
            "UnbiasedSKCE", "calibration_test", "holm_adjust", "hosmer_lemeshow", "spiegelhalter_z"]

from calib_core.clinical import (COX_EPSILON, CoxCalibration, ICIResult, PrevalenceAdjustment,  # noqa: E402
                                 adjust_prevalence, cox_calibration, ici, loess_smooth, one_vs_rest)
from calib_core.groups import (MAX_GROUPS, GroupResult, MulticalibrationResult, by_group,  # noqa: E402
                               group_reliability, multicalibration)

__all__ += ["COX_EPSILON", "CoxCalibration", "ICIResult", "PrevalenceAdjustment", "adjust_prevalence",
            "cox_calibration", "ici", "loess_smooth", "one_vs_rest", "MAX_GROUPS", "GroupResult",
            "MulticalibrationResult", "by_group", "group_reliability", "multicalibration"]

from calib_core.size_power import (SIZE_BAND, SizePowerResult, binomial_interval, simulate_p_values,  # noqa: E402
                                   size_and_power, summarise_size_power)

__all__ += ["SIZE_BAND", "SizePowerResult", "binomial_interval", "simulate_p_values", "size_and_power",
            "summarise_size_power"]
