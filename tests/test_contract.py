"""The public names and argument names of calib_core_api.md (checked from outside too)."""
import inspect

import numpy as np
import pytest

import calib_core as cc

SIGNATURES = {
    "ece": ["probs", "labels", "n_bins", "binning", "norm"],
    "mce": ["probs", "labels", "n_bins", "binning"],
    "classwise_ece": ["probs", "labels", "n_bins", "binning", "norm", "per_class"],
    "sce": ["probs", "labels", "n_bins"],
    "ace": ["probs", "labels", "n_bins", "per_class"],
    "tace": ["probs", "labels", "n_bins", "threshold", "per_class"],
    "gce": ["probs", "labels", "n_bins", "binning", "max_prob", "class_conditional", "threshold", "norm"],
    "brier_score": ["probs", "labels"],
    "nll": ["probs", "labels"],
    "ks_error": ["probs", "labels"],
    "mmce": ["probs", "labels", "bandwidth"],
    "skce": ["probs", "labels", "bandwidth", "estimator"],
    "kde_ce": ["probs", "labels", "divergence", "bandwidth", "classwise"],
    "canonical_ce": ["probs", "labels", "distance", "partition", "n_bins", "min_bin_size", "lens"],
    "optimal_n_bins": ["n", "lipschitz"],
    "bootstrap_ci": ["metric", "probs", "labels", "n_boot", "alpha", "seed"],
    "consistency_resampling": ["probs", "labels", "estimator", "n_resamples", "seed"],
    "reliability_table": ["probs", "labels", "n_bins", "binning", "target"],
}
DEFAULTS = {
    ("ece", "n_bins"): 15, ("ece", "binning"): "uniform", ("ece", "norm"): "l1",
    ("tace", "threshold"): 0.01, ("mmce", "bandwidth"): 0.4, ("skce", "bandwidth"): None,
    ("skce", "estimator"): "unbiased", ("kde_ce", "divergence"): "kl", ("kde_ce", "bandwidth"): 0.01,
    ("kde_ce", "classwise"): False, ("canonical_ce", "distance"): "tv", ("canonical_ce", "partition"): "uniform",
    ("canonical_ce", "n_bins"): 10, ("canonical_ce", "min_bin_size"): 1000, ("canonical_ce", "lens"): "canonical",
    ("gce", "n_bins"): 15, ("gce", "max_prob"): True, ("gce", "class_conditional"): False,
    ("gce", "threshold"): 0.0, ("optimal_n_bins", "lipschitz"): 1.0,
}
RECALIBRATORS = ["TemperatureScaling", "VectorScaling", "MatrixScaling", "PlattScaling", "HistogramBinning",
                 "IsotonicCalibration", "BetaCalibration", "DirichletCalibration", "MetricOptimizedTemperature"]
ALSO_PUBLIC = ["load_predictions", "Predictions", "reliability_table", "bootstrap_ci", "consistency_resampling",
               "score_decomposition", "calibration_upper_bound", "smooth_ece", "as_probs", "CalibrationInputError"]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_function_argument_names_follow_the_contract(name):
    parameters = list(inspect.signature(getattr(cc, name)).parameters)
    assert parameters[: len(SIGNATURES[name])] == SIGNATURES[name]
    assert name in cc.__all__


@pytest.mark.parametrize("name, argument", sorted(DEFAULTS))
def test_defaults_follow_the_contract(name, argument):
    assert inspect.signature(getattr(cc, name)).parameters[argument].default == DEFAULTS[(name, argument)]


@pytest.mark.parametrize("name", RECALIBRATORS + ALSO_PUBLIC)
def test_name_is_public(name):
    assert hasattr(cc, name) and name in cc.__all__


def test_gce_options_are_keyword_only():
    parameters = inspect.signature(cc.gce).parameters
    assert all(parameters[p].kind is inspect.Parameter.KEYWORD_ONLY for p in SIGNATURES["gce"][2:])


def test_histogram_binning_defaults_to_the_optimal_bin_count():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=500)
    labels = rng.integers(0, 3, size=500)
    model = cc.HistogramBinning(n_bins=None).fit(probs, labels)
    assert model.n_bins_ == cc.optimal_n_bins(500)


def test_fitted_temperature_scaling_exposes_its_temperature():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(300, 4))
    labels = rng.integers(0, 4, size=300)
    assert cc.TemperatureScaling(input="logits").fit(logits, labels).temperature_ > 0


def test_metric_optimized_temperature_takes_a_metric():
    assert inspect.signature(cc.MetricOptimizedTemperature).parameters["metric"].default in (None, cc.ece)
