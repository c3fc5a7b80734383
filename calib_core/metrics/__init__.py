"""Calibration metrics: every formula, and the registry of their default settings.

==================  =============================================================
module              what it computes
==================  =============================================================
``binned``          ECE, MCE, RMSCE, class-wise ECE, SCE, ACE, TACE, GCE (Nixon et al. 2019)
``scores``          Brier score, NLL, KS error
``reliability``     reliability tables with Wilson intervals, their ECE, the per-class table
``sensitivity``     every binned metric over a range of bin counts, rankings by them, and their stability
``debiased``        debiased ECE and the monotone-sweep ECE
``kernel``          MMCE and SKCE (Kumar et al. 2018; Widmann et al. 2019)
``kde``             CE_KL and CE_2^2 with a Dirichlet kernel (Popordanoska et al. 2024)
``decomposition``   proper-score decompositions, the kernel estimates' bias, the bound chain (Gruber & Buettner 2022)
``smooth``          smooth ECE (Blasiok & Nakkiran 2023)
``confidence``      a confidence model's (stated confidence, correct): ECE, smECE, Brier and its CORP/Murphy terms, NLL
``partitions``      partitions of the probability simplex (uniform, data-dependent) and their cells
``simplex``         2-simplex views of K-class predictions and the cell tables of a partition
``canonical``       canonical calibration error and calibration lenses (Vaicenavicius et al. 2019)
``cox``, ``ici``    Cox slope / intercept and the ICI (the clinical summaries)
``clinical``        the Cox and ICI summaries of the registry (one shared fit, the sandwich error of a mean)
``registry``        one entry per metric: defaults, name with settings, interval method, how it is resampled
``resampling``      the declaration of how a metric may be resampled (read by the bootstrap)
``bounds``          the bounds the true value of a registered metric obeys
``selective``       selective prediction of confidence files: risk-coverage, AURC, E-AURC, AUGRC, AUROC, abstention
``reports``         every metric at once (metric_report), the size limits, the estimates that break a bound
==================  =============================================================
"""
from calib_core.metrics.binned import accuracy, ace, classwise_ece, ece, gce, mce, sce, tace, top_label
from calib_core.metrics.scores import brier_score, ks_error, nll
from calib_core.metrics.reliability import per_class_table, reliability_ece, reliability_table, wilson_interval
from calib_core.metrics.sensitivity import BinRanking, RankStability, bin_rank_stability, bin_sensitivity, rank_by_bins
from calib_core.metrics.debiased import debiased_ece, ece_sweep
from calib_core.metrics.kernel import SKCEEstimate, median_heuristic, median_pairwise_distance, mmce, skce, skce_estimate
from calib_core.metrics.kde import kde_bandwidth, kde_ce, kde_conditional_expectation
from calib_core.metrics.decomposition import (BoundChain, ChainLink, ChainTerm, ScoreDecomposition, bound_chain,
                                              calibrated_bias, calibration_upper_bound, score_decomposition)
from calib_core.metrics.smooth import SmoothReliabilityCurve, smooth_ece, smooth_reliability_curve
from calib_core.metrics.simplex import (CellTable, Partition, SimplexProjection, SimplexReliability, cell_table,
                                        data_dependent_partition, default_groups, simplex_projection,
                                        simplex_reliability, uniform_partition)
from calib_core.metrics.canonical import canonical_ce, canonical_ce_table, lens_view
from calib_core.metrics.cox import COX_EPSILON, CoxCalibration, cox_calibration, one_vs_rest
from calib_core.metrics.ici import ICIResult, ici, loess_smooth
from calib_core.metrics.registry import (BOUNDS, METRICS, Bound, MetricSpec, get_metric, metric_function, metric_name,
                                         metric_value)
from calib_core.metrics.registry import DeclaredMetric, declared_metric
from calib_core.metrics.reports import metrics_of_kind
from calib_core.metrics.confidence import (BrierDecomposition, brier_decomposition, confidence_brier, confidence_ece,
                                           confidence_nll, confidence_smooth_ece, overconfidence, pav_calibrated)
from calib_core.metrics.resampling import Resampling
from calib_core.metrics.selective import (AbstentionThreshold, RiskCoverage, abstention_threshold, aurc, augrc,
                                          auroc_correct, coverage_at_risk, eaurc, expected_errors, risk_coverage,
                                          selective_risk)
from calib_core.metrics.reports import (MAX_FIT_CELLS, MAX_QUADRATIC_ROWS, UNRELIABLE, MetricReport, check_bounds,
                                        check_estimate, compute_metrics, fit_cells, kernel_biases, metric_report,
                                        size_note, skipped_for_size, skipped_quadratic)

__all__ = [
    "accuracy", "ace", "classwise_ece", "ece", "gce", "mce", "sce", "tace", "top_label",
    "brier_score", "ks_error", "nll",
    "per_class_table", "reliability_ece", "reliability_table", "wilson_interval",
    "BinRanking", "RankStability", "bin_rank_stability", "bin_sensitivity", "rank_by_bins",
    "debiased_ece", "ece_sweep",
    "SKCEEstimate", "median_heuristic", "median_pairwise_distance", "mmce", "skce", "skce_estimate",
    "BoundChain", "ChainLink", "ChainTerm", "ScoreDecomposition", "bound_chain", "calibration_upper_bound",
    "kde_bandwidth", "kde_ce", "kde_conditional_expectation", "score_decomposition",
    "SmoothReliabilityCurve", "smooth_ece", "smooth_reliability_curve",
    "CellTable", "Partition", "SimplexProjection", "SimplexReliability", "cell_table", "data_dependent_partition",
    "default_groups", "simplex_projection", "simplex_reliability", "uniform_partition",
    "canonical_ce", "canonical_ce_table", "lens_view",
    "COX_EPSILON", "CoxCalibration", "cox_calibration", "one_vs_rest",
    "ICIResult", "ici", "loess_smooth",
    "MAX_QUADRATIC_ROWS", "METRICS", "MetricReport", "MetricSpec", "compute_metrics", "get_metric",
    "metric_function", "metric_name", "metric_report", "metric_value", "skipped_quadratic", "MAX_FIT_CELLS",
    "fit_cells", "size_note", "skipped_for_size",
    "BOUNDS", "Bound", "UNRELIABLE", "calibrated_bias", "check_bounds", "check_estimate", "kernel_biases",
    "DeclaredMetric", "Resampling", "declared_metric",
    "AbstentionThreshold", "RiskCoverage", "abstention_threshold", "aurc", "augrc", "auroc_correct",
    "coverage_at_risk", "eaurc", "expected_errors", "risk_coverage", "selective_risk",
    "BrierDecomposition", "brier_decomposition", "confidence_brier", "confidence_ece", "confidence_nll",
    "confidence_smooth_ece", "overconfidence", "pav_calibrated", "metrics_of_kind",
]
