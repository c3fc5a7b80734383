"""Tests for calib_core.lab.generators: the ground-truth models and their true calibration errors."""
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.lab.generators import (
    ERROR_KEYS,
    TRUTH_KEYS,
    GroundTruth,
    LogisticModel,
    LogisticNormalModel,
    SimulatedData,
    UniformSimplexModel,
    binned_truth,
    futami_logistic,
    gaussian_mixture,
)
from calib_core.lab.generators.truth import _run_statistics
from calib_core.metrics.kernel import mmce, skce

LESS = futami_logistic("less_calibrated")  # (0.5, -1.5)
BETTER = futami_logistic("better_calibrated")  # (0.2, -1.9)


# ----------------------------------------------------------------------------- logistic model
def test_logistic_tce_by_quadrature_matches_monte_carlo_on_a_million_samples():
    """Futami & Fujisawa G.1: TCE = mean |z1 - pi1(z)| over 10^6 samples, pi1 in closed form."""
    data = LESS.sample(1_000_000, seed=7)
    z = data.probs[:, 1]
    closed_form = expit(-2.0 * (np.log(z / (1.0 - z)) - LESS.b0) / LESS.b1)
    gaps = np.abs(z - closed_form)
    monte_carlo = gaps.mean()
    standard_error = gaps.std() / 1000.0
    assert LESS.truth()["canonical_tv"] == pytest.approx(monte_carlo, abs=5 * standard_error)
    assert LESS.truth()["classwise_tce"] == LESS.truth()["canonical_tv"]
    assert LESS.truth().method["canonical_tv"] == "quadrature"
    # The sample's calibration column is the same closed form.
    np.testing.assert_allclose(data.calibrated[:, 1], closed_form, atol=1e-9)


def test_logistic_label_frequencies_follow_the_calibration_function():
    data = BETTER.sample(400_000, seed=3)
    residual = (data.labels == 1) - data.calibrated[:, 1]
    assert abs(residual.mean()) < 5 * residual.std() / math.sqrt(residual.size)
    # Orthogonal to any function of the prediction, here the prediction itself.
    weighted = residual * data.probs[:, 1]
    assert abs(weighted.mean()) < 5 * weighted.std() / math.sqrt(weighted.size)
    assert np.mean(data.labels == 1) == pytest.approx(0.5, abs=0.004)


@pytest.mark.parametrize("model", [LESS, BETTER, LogisticModel(1.0, 1.0), LogisticModel(-0.4, 0.7)],
                         ids=lambda m: m.name)
def test_logistic_top_label_quadrature_agrees_with_the_fine_binned_reference(model):
    """Two independent routes to the top-label TCE: quadrature over x and run means of 10^6 predictions."""
    points, calibration = model.reference_sample()
    rows = np.arange(points.shape[0])
    top = points.argmax(axis=1)
    l1, l2_sq, _ = _run_statistics(points[rows, top], calibration[rows, top])
    truth = model.truth()
    assert truth["tce"] == pytest.approx(l1, abs=1e-3)
    assert truth["tce_l2"] == pytest.approx(math.sqrt(l2_sq), abs=1e-3)
    assert truth["accuracy"] == pytest.approx(calibration[rows, top].mean(), abs=2e-3)


def test_logistic_truths_follow_the_chain_of_inequalities():
    """Gruber & Buettner eq. 6: CE_1 >= CWCE_1 >= TCE_1 >= KS; TCE_2 >= TCE_1 >= MMCE (c = 1)."""
    for model in (LESS, BETTER, LogisticModel(1.0, 1.0)):
        t = model.truth()
        assert 2 * t["canonical_tv"] >= t["classwise_tce"] >= t["tce"] - 1e-12
        assert t["tce_l2"] >= t["tce"] >= t["ks"] - 1e-9
        assert t["tce"] >= t["mmce"]


def test_futami_settings_less_calibrated_is_worse():
    assert LESS.truth()["canonical_tv"] > 3 * BETTER.truth()["canonical_tv"]
    assert LESS.truth()["tce"] > BETTER.truth()["tce"] > 0


def test_perfect_and_constant_models_are_calibrated_with_known_accuracy():
    perfect, constant = gaussian_mixture("perfect"), gaussian_mixture("constant")
    assert perfect.is_calibrated and constant.is_calibrated
    for key in ERROR_KEYS:
        assert perfect.truth()[key] == 0.0
        assert constant.truth()[key] == 0.0
    # Bayes accuracy of two unit Gaussians at -1 and 1 is Phi(1).
    assert perfect.truth()["accuracy"] == pytest.approx(0.5 * (1 + math.erf(1 / math.sqrt(2))), abs=1e-9)
    assert constant.truth()["accuracy"] == 0.5
    data = perfect.sample(200_000, seed=1)
    np.testing.assert_allclose(data.probs, data.calibrated, atol=1e-12)
    assert cc.accuracy(data.probs, data.labels) == pytest.approx(perfect.truth()["accuracy"], abs=0.005)


def test_uncalibrated_vaicenavicius_model_is_worse_than_chance():
    model = gaussian_mixture("uncalibrated")
    assert (model.b0, model.b1) == (1.0, 1.0)
    assert model.truth()["accuracy"] < 0.3
    assert model.truth()["tce"] > 0.4


def test_constant_model_off_one_half_has_closed_form_truth():
    model = LogisticModel(0.3, 0.0)
    gap = float(expit(0.3)) - 0.5
    t = model.truth()
    for key in ("tce", "tce_l2", "ks", "classwise_tce", "canonical_tv", "mmce"):
        assert t[key] == pytest.approx(gap, abs=1e-6)
    assert t["canonical_sq"] == pytest.approx(2 * gap**2)
    assert math.isnan(t["skce"])  # every prediction equal: no median distance


def test_lipschitz_constant():
    assert gaussian_mixture("perfect").lipschitz == pytest.approx(1.0, abs=1e-9)
    assert gaussian_mixture("constant").lipschitz == 0.0
    assert math.isinf(gaussian_mixture("uncalibrated").lipschitz)
    # Finite and above 1 for Futami's settings: r(z) = expit(a logit z + c) with a = -2/b1 > 1.
    assert 1.0 < BETTER.lipschitz < LESS.lipschitz < 3.0


def test_kernel_and_ks_truths_match_large_sample_estimates():
    data = LESS.sample(200_000, seed=11)
    truth = LESS.truth()
    assert mmce(data.probs, data.labels) == pytest.approx(truth["mmce"], abs=0.003)
    assert cc.ks_error(data.probs, data.labels) == pytest.approx(truth["ks"], abs=0.004)
    estimate = skce(data.probs, data.labels, bandwidth=truth.skce_bandwidth, estimator="block")
    assert estimate == pytest.approx(truth["skce"], abs=8e-4)


# ----------------------------------------------------------------------------- logistic-normal model
def test_logistic_normal_defaults_reproduce_the_paper_accuracy():
    """Gruber & Buettner G.1: 100 classes, about 87.6% accuracy; labels drawn from the predictions."""
    model = LogisticNormalModel()
    assert model.n_classes == 100 and model.df == 100.0
    assert model.truth()["accuracy"] == pytest.approx(0.876, abs=0.005)
    data = model.sample(20_000, seed=0)
    assert cc.accuracy(data.probs, data.labels) == pytest.approx(0.876, abs=0.01)
    for key in ERROR_KEYS:
        assert model.truth()[key] == 0.0


def test_temperature_keeps_accuracy_and_the_calibration_map_inverts_it():
    calibrated = LogisticNormalModel(n_classes=8, temperature=1.0).sample(5000, seed=4)
    tempered_model = LogisticNormalModel(n_classes=8, temperature=2.5)
    tempered = tempered_model.sample(5000, seed=4)
    np.testing.assert_array_equal(calibrated.labels, tempered.labels)
    np.testing.assert_array_equal(calibrated.probs.argmax(axis=1), tempered.probs.argmax(axis=1))
    np.testing.assert_allclose(tempered.calibrated, calibrated.probs, atol=1e-12)
    np.testing.assert_allclose(tempered_model.calibration_map(tempered.probs), calibrated.probs, atol=1e-9)
    # T > 1: under-confident, so the mean confidence is below the (unchanged) accuracy.
    assert tempered.probs.max(axis=1).mean() < cc.accuracy(tempered.probs, tempered.labels) - 0.05


def test_logistic_normal_covariance_is_symmetric_positive_definite_and_seeded():
    model = LogisticNormalModel(n_classes=6, model_seed=3)
    sigma = model.covariance
    np.testing.assert_allclose(sigma, sigma.T, atol=1e-9)
    assert np.all(np.linalg.eigvalsh(sigma) > 0)
    np.testing.assert_array_equal(sigma, LogisticNormalModel(n_classes=6, model_seed=3).covariance)
    assert not np.allclose(sigma, LogisticNormalModel(n_classes=6, model_seed=4).covariance)
    # Sample covariance of the logits (log p up to a per-row constant): compare centred log-ratios.
    probs, _ = model.sample_batch(200_000, 1, 0)
    logits = np.log(probs[0])
    centred = logits - logits.mean(axis=1, keepdims=True)
    projector = np.eye(6) - 1.0 / 6
    np.testing.assert_allclose(np.cov(centred.T), projector @ sigma @ projector, rtol=0.05, atol=0.05 * sigma.max())


def test_miscalibrated_logistic_normal_truth_orders():
    t = LogisticNormalModel(n_classes=6, temperature=2.0).truth()
    assert t["tce"] > 0.02
    assert t["tce_l2"] >= t["tce"] >= t["ks"] - 1e-9
    assert 2 * t["canonical_tv"] >= t["tce"]
    assert t["canonical_sq"] > 0 and t["ce_kl"] > 0 and t["skce"] > 0


# ----------------------------------------------------------------------------- uniform simplex model
def test_uniform_simplex_two_classes_matches_quadrature():
    """Popordanoska et al. 7.1 with K = 2: u ~ U(0, 1), so CE_2^2 and CE_KL are 1-D integrals."""
    def scores(s):
        a, b = s ** (1 / 0.9), (1 - s) ** (1 / 0.9)
        p = a / (a + b)
        c, d = p ** (1 / 0.6), (1 - p) ** (1 / 0.6)
        return p, c / (c + d)

    squared = integrate.quad(lambda s: 2 * (scores(s)[0] - scores(s)[1]) ** 2, 0, 1, limit=200)[0]
    kl = integrate.quad(lambda s: (lambda p, q: p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)))(*scores(s)),
                        0, 1, limit=200)[0]
    tv = integrate.quad(lambda s: abs(scores(s)[0] - scores(s)[1]), 0, 1, limit=200)[0]
    t = UniformSimplexModel(n_classes=2).truth()
    assert t["canonical_sq"] == pytest.approx(squared, rel=0.01)
    assert t["ce_kl"] == pytest.approx(kl, rel=0.01)
    assert t["canonical_tv"] == pytest.approx(tv, rel=0.01)
    # For two classes g_1 determines g, so the class-wise errors equal the canonical ones.
    assert t["classwise_ce_l2_sq"] == pytest.approx(squared, rel=0.01)
    assert t["classwise_ce_kl"] == pytest.approx(kl, rel=0.01)
    assert t["classwise_tce"] == pytest.approx(tv, rel=0.01)


def test_uniform_simplex_stated_properties():
    model = UniformSimplexModel()
    data = model.sample(100_000, seed=2)
    # t1 = 0.9 pushes the calibrated scores towards the corners: E[max u] = 11/18 for K = 3.
    assert data.calibrated.max(axis=1).mean() > 11 / 18 + 0.01
    # t2 = 0.6 makes the reported scores over-confident.
    assert data.probs.max(axis=1).mean() > model.truth()["accuracy"] + 0.05
    np.testing.assert_allclose(model.calibration_map(data.probs), data.calibrated, atol=1e-9)
    residual = np.eye(3)[data.labels] - data.calibrated
    assert np.all(np.abs(residual.mean(axis=0)) < 5 * residual.std(axis=0) / math.sqrt(len(residual)))
    assert UniformSimplexModel(t2=1.0).truth()["tce"] == 0.0


def test_fine_binned_truth_does_not_depend_on_the_run_length(monkeypatch):
    import calib_core.lab.generators.truth as generators

    model = UniformSimplexModel()
    points, calibration = model.reference_sample()
    values = {}
    for size in (300, 3000):
        monkeypatch.setattr(generators, "FINE_BIN_SIZE", size)
        keys = ("tce", "tce_l2", "classwise_tce", "classwise_ce_l2_sq")
        values[size], _, _ = generators._reference_truth(points, calibration, keys)
    for key in ("tce", "tce_l2", "classwise_tce", "classwise_ce_l2_sq"):
        assert values[300][key] == pytest.approx(values[3000][key], rel=0.01)


# ----------------------------------------------------------------------------- sampling and results
@pytest.mark.parametrize("model", [LESS, LogisticNormalModel(n_classes=5, temperature=1.5), UniformSimplexModel(4)],
                         ids=lambda m: m.name)
def test_sample_batch_shapes_seeds_and_simplex(model):
    probs, labels = model.sample_batch(300, 3, 5)
    assert probs.shape == (3, 300, model.n_classes) and labels.shape == (3, 300)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-12)
    assert labels.min() >= 0 and labels.max() < model.n_classes
    again, _ = model.sample_batch(300, 3, 5)
    np.testing.assert_array_equal(probs, again)
    other, _ = model.sample_batch(300, 3, 6)
    assert not np.array_equal(probs, other)
    assert not np.array_equal(probs[0], probs[1])  # repetitions are independent draws
    data = model.sample(50, seed=1)
    assert isinstance(data, SimulatedData) and data.probs.shape == (50, model.n_classes)
    assert data.model is model and data.calibrated.shape == data.probs.shape
    cc.ece(data.probs, data.labels)  # valid input for the metrics


def test_simulated_data_exposes_the_model_truth():
    data = LESS.sample(10, seed=0)
    assert data.truth is LESS.truth()
    assert set(data.true_values) == set(TRUTH_KEYS)


def test_truth_is_cached_and_read_only():
    truth = LESS.truth()
    assert truth is LESS.truth() is LogisticModel(0.5, -1.5).truth()
    assert isinstance(truth, GroundTruth)
    with pytest.raises(TypeError):
        truth.values["tce"] = 0.0
    points, _ = LESS.reference_sample()
    with pytest.raises(ValueError):
        points[0, 0] = 0.5
    with pytest.raises(CalibrationInputError, match="unknown true error 'ece'"):
        truth["ece"]


# ----------------------------------------------------------------------------- binned truth
def test_binned_truth_is_a_lower_bound_that_approaches_the_tce():
    """Vaicenavicius et al. Theorem 2 / Gruber & Buettner eq. 19: binned ECE <= TCE, equal in the limit."""
    for model, slack in ((LESS, 1e-9), (UniformSimplexModel(), 5e-4)):
        tce = model.truth()["tce"]
        coarse, fine = binned_truth(model, 5), binned_truth(model, 200)
        assert coarse <= fine + slack
        assert fine <= tce + slack
        assert fine == pytest.approx(tce, abs=0.003)
        assert binned_truth(model, 15, norm="l2") <= model.truth()["tce_l2"] + slack
        assert binned_truth(model, 15, "adaptive") <= tce + 5e-4
    assert binned_truth(gaussian_mixture("perfect"), 15) == 0.0
    assert binned_truth(LogisticModel(0.3, 0.0), 15) == pytest.approx(float(expit(0.3)) - 0.5)


def test_logistic_binned_truth_by_quadrature_matches_the_reference_sample():
    import calib_core.lab.generators as generators

    points, calibration = LESS.reference_sample()
    rows = np.arange(points.shape[0])
    top = points.argmax(axis=1)
    confidence = points[rows, top]
    index = cc.bin_index(confidence, 15, "uniform")
    sums = np.bincount(index, weights=confidence - calibration[rows, top], minlength=15)
    assert binned_truth(LESS, 15) == pytest.approx(np.abs(sums).sum() / len(rows), abs=3e-4)
    assert isinstance(LESS, generators.LogisticModel)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("make, match", [
    (lambda: LogisticModel(float("nan"), 1.0), "`b0` must be a finite number"),
    (lambda: LogisticModel(0.0, "x"), "`b1` must be a finite number"),
    (lambda: LogisticNormalModel(n_classes=1), "`n_classes` must be a whole number >= 2"),
    (lambda: LogisticNormalModel(temperature=0.0), "`temperature` must be > 0"),
    (lambda: LogisticNormalModel(n_classes=5, df=3.0), "`df` must exceed n_classes - 1 = 4"),
    (lambda: LogisticNormalModel(model_seed=-1), "`model_seed` must be a whole number >= 0"),
    (lambda: UniformSimplexModel(t1=-1.0), "`t1` must be > 0"),
    (lambda: UniformSimplexModel(t2=float("inf")), "`t2` must be a finite number"),
    (lambda: futami_logistic("best"), "`case` must be one of"),
    (lambda: gaussian_mixture("perfectly"), "`case` must be one of"),
    (lambda: LESS.sample(0), "`n` must be a whole number >= 1"),
    (lambda: LESS.sample_batch(10, 0), "`repetitions` must be a whole number >= 1"),
    (lambda: LESS.calibration_map(np.full((2, 3), 1 / 3)), "2 columns"),
    (lambda: LESS.calibration_map([[0.5, 0.6]]), "must sum to 1"),
    (lambda: binned_truth("model"), "ground-truth generator"),
    (lambda: binned_truth(LESS, 0), "`n_bins` must be >= 1"),
    (lambda: binned_truth(LESS, 10, "quantile"), "`binning` must be"),
    (lambda: binned_truth(LESS, 10, norm="max"), "`norm` must be one of"),
])
def test_validation(make, match):
    with pytest.raises(CalibrationInputError, match=match):
        make()
