"""Tests for calib_core.clinical.summaries: Cox calibration, the loess smoother and ICI, prevalence shifts."""
import os
import warnings

import numpy as np
import pytest
from scipy.special import expit, logit

import calib_core as cc
from tests.compiled_support import require_kernel
from calib_core import CalibrationInputError

sm = pytest.importorskip("statsmodels.api")
from statsmodels.nonparametric.smoothers_lowess import lowess  # noqa: E402


def logistic_data(n, a, b, seed, scale=1.5):
    """Predictions expit(z); outcomes from expit(a + b z): Cox slope b, intercept a."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * scale
    return cc.as_probs(expit(z)), (rng.uniform(size=n) < expit(a + b * z)).astype(int)


def clipped_logit(p, eps=cc.COX_EPSILON):
    return logit(np.clip(p, eps, 1 - eps))


DATASETS = [(300, 0.3, 0.7, 0), (2000, -0.5, 1.6, 1), (5000, 0.0, 1.0, 2), (800, 1.0, 0.3, 3)]


# ----------------------------------------------------------------------------- Cox

@pytest.mark.parametrize("n, a, b, seed", DATASETS)
def test_cox_matches_statsmodels_logit_and_glm_offset(n, a, b, seed):
    probs, labels = logistic_data(n, a, b, seed)
    fit = cc.cox_calibration(probs, labels)
    x = clipped_logit(probs[:, 1])
    ref = sm.Logit(labels, sm.add_constant(x)).fit(disp=0, tol=1e-12, maxiter=100)
    np.testing.assert_allclose([fit.intercept, fit.slope], ref.params, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([fit.intercept_se, fit.slope_se], ref.bse, rtol=1e-8)
    ci = ref.conf_int(alpha=0.05)
    np.testing.assert_allclose([fit.intercept_low, fit.intercept_high], ci[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose([fit.slope_low, fit.slope_high], ci[1], rtol=1e-8, atol=1e-12)
    glm = sm.GLM(labels, np.ones((n, 1)), family=sm.families.Binomial(), offset=x).fit(tol=1e-13)
    np.testing.assert_allclose(fit.citl, glm.params[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(fit.citl_se, glm.bse[0], rtol=1e-6)
    assert fit.reason == "" and fit.classes == (1,) and fit.n == n


@pytest.mark.parametrize("n, a, b, seed", DATASETS)
def test_cox_matches_scikit_learn_unpenalised_logistic_regression(n, a, b, seed):
    from sklearn.linear_model import LogisticRegression

    probs, labels = logistic_data(n, a, b, seed)
    fit = cc.cox_calibration(probs, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # `penalty` is being renamed in newer releases
        model = LogisticRegression(penalty=None, solver="newton-cholesky", tol=1e-12, max_iter=1000)
        model.fit(clipped_logit(probs[:, 1])[:, None], labels)
    np.testing.assert_allclose([fit.intercept, fit.slope], [model.intercept_[0], model.coef_[0, 0]],
                               rtol=1e-7, atol=1e-9)


def test_cox_on_a_perfectly_calibrated_simulation_is_slope_one_intercept_zero():
    probs, labels = logistic_data(40_000, 0.0, 1.0, seed=11)
    fit = cc.cox_calibration(probs, labels)
    assert abs(fit.slope - 1.0) < 3 * fit.slope_se
    assert abs(fit.intercept) < 3 * fit.intercept_se
    assert abs(fit.citl) < 3 * fit.citl_se
    assert fit.slope_low < 1.0 < fit.slope_high


def test_cox_recovers_an_overconfident_model_and_calibration_in_the_large():
    # Predictions twice as extreme as the truth: slope 1/2. Shifted predictions: citl = shift.
    rng = np.random.default_rng(5)
    z = rng.normal(size=30_000)
    labels = (rng.uniform(size=z.size) < expit(z)).astype(int)
    assert abs(cc.cox_calibration(cc.as_probs(expit(2 * z)), labels).slope - 0.5) < 0.03
    shifted = cc.cox_calibration(cc.as_probs(expit(z - 0.7)), labels)
    assert abs(shifted.citl - 0.7) < 0.05 and abs(shifted.slope - 1.0) < 0.05


def test_cox_multiclass_is_one_vs_rest_per_class():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet([2, 3, 4], size=1500)
    labels = np.array([rng.choice(3, p=row) for row in probs])
    fit = cc.cox_calibration(probs, labels)
    assert fit.slope.shape == (3,) and fit.citl.shape == (3,) and fit.classes == (0, 1, 2)
    assert fit.reason == ("", "", "")
    for k in range(3):
        single = cc.cox_calibration(cc.as_probs(probs[:, k]), (labels == k).astype(int))
        assert fit.slope[k] == pytest.approx(single.slope, rel=1e-12)
        assert fit.intercept_high[k] == pytest.approx(single.intercept_high, rel=1e-12)


def test_cox_separation_constant_prediction_and_constant_outcome_give_nan_with_reason():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    separated = cc.cox_calibration(cc.as_probs(p), [0, 0, 0, 1, 1, 1])
    assert np.isnan(separated.slope) and np.isnan(separated.intercept) and "separate" in separated.reason
    assert np.isfinite(separated.citl)
    constant = cc.cox_calibration(cc.as_probs(np.full(6, 0.4)), [0, 1, 0, 1, 1, 0])
    assert np.isnan(constant.slope) and "same value" in constant.reason
    # With the slope fixed at 1, logit(p_cal) = logit(0.4) + citl must equal the observed 1/2.
    assert constant.citl == pytest.approx(-logit(0.4), abs=1e-10)
    one_class = cc.cox_calibration(cc.as_probs(p), np.zeros(6, dtype=int))
    assert np.isnan(one_class.citl) and "constant" in one_class.reason


def test_cox_clips_probabilities_of_exactly_zero_and_one():
    probs, labels = logistic_data(500, 0.2, 0.8, seed=4)
    scores = probs[:, 1].copy()
    scores[:3] = [0.0, 1.0, 1e-12]
    clipped = np.clip(scores, 1e-4, 1 - 1e-4)
    fit = cc.cox_calibration(cc.as_probs(scores), labels, epsilon=1e-4)
    ref = cc.cox_calibration(cc.as_probs(clipped), labels, epsilon=1e-4)
    assert np.isfinite(fit.slope) and fit.slope == pytest.approx(ref.slope, rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha"),
                                           ({"epsilon": 0.0}, "epsilon"), ({"epsilon": 0.5}, "epsilon")])
def test_cox_rejects_bad_options(kwargs, match):
    probs, labels = logistic_data(50, 0, 1, 0)
    with pytest.raises(CalibrationInputError, match=match):
        cc.cox_calibration(probs, labels, **kwargs)


# ----------------------------------------------------------------------------- loess

@pytest.mark.parametrize("n", [40, 300])
@pytest.mark.parametrize("frac", [0.3, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("delta", [0.0, 0.01, 0.2])
def test_degree_one_equals_statsmodels_lowess_on_binary_outcomes(n, frac, delta):
    rng = np.random.default_rng(n)
    x = rng.uniform(size=n)
    y = (rng.uniform(size=n) < x ** 2).astype(float)
    ref = lowess(y, x, frac=frac, it=0, delta=delta, return_sorted=False)
    ours = cc.loess_smooth(x, y, span=frac, degree=1, iterations=0, delta=delta)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("iterations", [1, 3])
@pytest.mark.parametrize("delta", [0.0, 0.01])
def test_robustness_iterations_equal_statsmodels_lowess(iterations, delta):
    rng = np.random.default_rng(7)
    x = rng.uniform(size=400)
    y = np.sin(6 * x) + 0.3 * rng.standard_t(3, size=400)
    ref = lowess(y, x, frac=0.4, it=iterations, delta=delta, return_sorted=False)
    ours = cc.loess_smooth(x, y, span=0.4, degree=1, iterations=iterations, delta=delta)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)


def direct_local_polynomial(x, y, span, degree):
    """Independent direct loess: at each x0, np.polyfit with tricube weights on the q nearest points."""
    n = x.size
    q = int(span * n + 1e-10)
    out = np.empty(n)
    for i, x0 in enumerate(x):
        distance = np.abs(x - x0)
        radius = np.sort(distance)[q - 1]
        w = np.clip(1 - (distance / radius) ** 3, 0, None) ** 3
        keep = w > 0
        coefficients = np.polyfit(x[keep] - x0, y[keep], degree, w=np.sqrt(w[keep]))
        out[i] = coefficients[-1]
    return out


@pytest.mark.parametrize("span", [0.3, 0.75])
def test_local_quadratic_equals_a_direct_weighted_polyfit(span):
    rng = np.random.default_rng(3)
    x = rng.uniform(size=120)
    y = (rng.uniform(size=120) < x).astype(float)
    ours = cc.loess_smooth(x, y, span=span, degree=2, delta=0)
    np.testing.assert_allclose(ours, direct_local_polynomial(x, y, span, 2), rtol=0, atol=1e-10)


@pytest.mark.parametrize("span, degree", [(0.5, 1), (0.75, 2), (0.3, 2)])
def test_equals_r_loess_direct_surface(span, degree):
    skmisc_loess = pytest.importorskip("skmisc.loess")  # the netlib dloess code behind R's loess
    rng = np.random.default_rng(8)
    x = rng.uniform(size=250)
    y = (rng.uniform(size=250) < x ** 1.3).astype(float)
    model = skmisc_loess.loess(x, y, span=span, degree=degree, surface="direct")
    model.fit()
    np.testing.assert_allclose(cc.loess_smooth(x, y, span=span, degree=degree, delta=0),
                               model.outputs.fitted_values, rtol=0, atol=1e-12)


def test_smoother_is_exact_on_polynomials_and_ignores_row_order_with_ties():
    x = np.repeat(np.linspace(0, 1, 25), 3)
    assert np.allclose(cc.loess_smooth(x, 1 - 2 * x + 3 * x ** 2, degree=2), 1 - 2 * x + 3 * x ** 2)
    rng = np.random.default_rng(0)
    y = (rng.uniform(size=x.size) < x).astype(float)
    perm = rng.permutation(x.size)
    np.testing.assert_allclose(cc.loess_smooth(x[perm], y[perm], span=0.2)[np.argsort(perm)],
                               cc.loess_smooth(x, y, span=0.2), atol=1e-13)


def test_smoother_with_every_neighbour_at_one_value_averages_them():
    x = np.array([0.2] * 10 + [0.9] * 2)
    y = np.array([1.0] * 4 + [0.0] * 6 + [1.0, 1.0])
    smoothed = cc.loess_smooth(x, y, span=0.5)
    np.testing.assert_allclose(smoothed[:10], 0.4)


def test_automatic_delta_is_close_to_the_exact_fit():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < x ** 1.5).astype(float)
    exact = cc.loess_smooth(x, y, delta=0)
    gridded = cc.loess_smooth(x, y)
    assert np.max(np.abs(gridded - exact)) < 1e-4  # linear interpolation over steps of 0.001
    assert abs(np.mean(np.abs(gridded - x)) - np.mean(np.abs(exact - x))) < 1e-6  # the ICI


@pytest.mark.parametrize("kwargs, match", [({"span": 0.0}, "span"), ({"span": 1.5}, "span"),
                                           ({"degree": 3}, "degree"), ({"iterations": -1}, "iterations"),
                                           ({"delta": -0.1}, "delta")])
def test_smoother_rejects_bad_options(kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.loess_smooth([0.1, 0.2, 0.3], [0, 1, 0], **kwargs)


def test_smoother_rejects_bad_arrays():
    with pytest.raises(CalibrationInputError, match="one length"):
        cc.loess_smooth([0.1, 0.2], [0, 1, 0])
    with pytest.raises(CalibrationInputError, match="finite"):
        cc.loess_smooth([0.1, np.nan], [0, 1])


# ----------------------------------------------------------------------------- ICI

def test_ici_with_calzone_settings_equals_statsmodels_lowess():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=700)
    y = (rng.uniform(size=700) < p ** 1.4).astype(int)
    result = cc.ici(cc.as_probs(p), y, span=0.5, degree=1, delta=0.001)
    gap = np.abs(lowess(y.astype(float), p, frac=0.5, it=0, delta=0.001, return_sorted=False) - p)
    assert result.ici == pytest.approx(gap.mean(), abs=1e-12)
    assert result.e50 == pytest.approx(np.median(gap), abs=1e-12)
    assert result.e90 == pytest.approx(np.quantile(gap, 0.9), abs=1e-12)
    assert result.emax == pytest.approx(gap.max(), abs=1e-12)


def test_ici_recovers_a_known_miscalibration_curve():
    # Outcome frequency p**1.5 at prediction p ~ U(0, 1): |c(p) - p| = p - p**1.5, mean 1/2 - 2/5 = 0.1.
    rng = np.random.default_rng(6)
    p = rng.uniform(size=20_000)
    y = (rng.uniform(size=p.size) < p ** 1.5).astype(int)
    result = cc.ici(cc.as_probs(p), y)
    truth = p - p ** 1.5
    assert result.ici == pytest.approx(0.1, abs=0.01)
    assert result.e50 == pytest.approx(np.median(truth), abs=0.01)
    assert result.e90 == pytest.approx(np.quantile(truth, 0.9), abs=0.015)
    calibrated = cc.ici(cc.as_probs(p), (rng.uniform(size=p.size) < p).astype(int))
    assert calibrated.ici < 0.015 and calibrated.e90 < 0.03
    assert calibrated.ici < result.ici / 5


def test_ici_multiclass_is_one_vs_rest():
    rng = np.random.default_rng(9)
    probs = rng.dirichlet([1, 2, 3], size=600)
    labels = np.array([rng.choice(3, p=row) for row in probs])
    result = cc.ici(probs, labels)
    assert result.ici.shape == (3,) and result.classes == (0, 1, 2)
    for k in range(3):
        assert result.e90[k] == pytest.approx(cc.ici(cc.as_probs(probs[:, k]), labels == k).e90, abs=1e-14)


def test_ici_rejects_bad_smoother_settings():
    probs, labels = logistic_data(50, 0, 1, 0)
    with pytest.raises(CalibrationInputError, match="span"):
        cc.ici(probs, labels, span=2.0)


# ----------------------------------------------------------------------------- prevalence

def test_binary_adjustment_multiplies_the_odds_by_the_prevalence_odds_ratio():
    p = np.array([0.0, 0.05, 0.3, 0.5, 0.9, 1.0])
    labels = np.array([0, 0, 1, 0, 1, 1])  # prevalence 1/2
    result = cc.adjust_prevalence(cc.as_probs(p), 0.2, labels=labels)
    factor = (0.2 / 0.8) / (0.5 / 0.5)
    assert result.odds_factor == pytest.approx(factor)
    inner = slice(1, 5)
    adjusted = result.probs[:, 1]
    np.testing.assert_allclose(adjusted[inner] / (1 - adjusted[inner]), factor * p[inner] / (1 - p[inner]))
    assert adjusted[0] == 0.0 and adjusted[-1] == 1.0
    np.testing.assert_allclose(result.probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(result.source, [0.5, 0.5])


def test_same_prevalence_changes_nothing_and_multiclass_is_renormalised_bayes():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet([1, 1, 1], size=20)
    same = cc.adjust_prevalence(probs, [0.2, 0.3, 0.5], source_prevalence=[0.2, 0.3, 0.5])
    np.testing.assert_allclose(same.probs, probs)
    moved = cc.adjust_prevalence(probs, [0.6, 0.2, 0.2], source_prevalence=[0.2, 0.3, 0.5])
    expected = probs * np.array([3.0, 2 / 3, 0.4])
    np.testing.assert_allclose(moved.probs, expected / expected.sum(axis=1, keepdims=True))
    assert np.isnan(moved.odds_factor)


def test_adjusted_predictions_are_calibrated_at_the_new_prevalence():
    # Calibrated at prevalence 1/2; keep every negative and 1 in 9 positives (prevalence ~0.1).
    rng = np.random.default_rng(3)
    z = rng.normal(size=200_000) * 2
    y = (rng.uniform(size=z.size) < expit(z)).astype(int)
    keep = (y == 0) | (rng.uniform(size=z.size) < 1 / 9)
    probs = cc.as_probs(expit(z))[keep]
    adjusted = cc.adjust_prevalence(probs, 0.1, source_prevalence=y.mean()).probs
    before, after = cc.cox_calibration(probs, y[keep]), cc.cox_calibration(adjusted, y[keep])
    assert before.citl < -1.5
    assert abs(after.citl) < 0.06 and abs(after.slope - 1) < 0.06


@pytest.mark.parametrize("kwargs, match", [
    ({"prevalence": 0.0, "source_prevalence": 0.5}, "prevalence"),
    ({"prevalence": 1.2, "source_prevalence": 0.5}, "prevalence"),
    ({"prevalence": 0.3}, "labels"),
    ({"prevalence": 0.3, "labels": [0, 0, 0]}, "no row of class 1"),
    ({"prevalence": 0.3, "source_prevalence": [0.4, 0.4]}, "source_prevalence"),
])
def test_prevalence_validation(kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.adjust_prevalence(cc.as_probs([0.2, 0.5, 0.7]), **kwargs)


def test_multiclass_needs_a_prevalence_vector():
    with pytest.raises(CalibrationInputError, match="vector of 3"):
        cc.adjust_prevalence(np.full((2, 3), 1 / 3), 0.3, source_prevalence=[0.2, 0.3, 0.5])


def test_loess_on_predictions_of_one_in_10_to_the_300_does_not_overflow():
    """digits_gaussian_nb has probabilities near 1e-300: a window that narrow sent (x - x0) / radius to inf and
    the tricube overflowed (RuntimeWarning, an error under the test settings; NaN risk in the moments)."""
    data = cc.load_demo("digits_gaussian_nb")
    result = cc.ici(data.probs, data.labels)
    assert np.isfinite(result.ici).all() and np.isfinite(result.e90).all()
    x = np.array([0.0, 1e-300, 2e-300, 0.5, 0.6, 0.7, 0.8, 0.9])
    y = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    assert np.isfinite(cc.loess_smooth(x, y, span=0.3, degree=1)).all()


# ----------------------------------------------------------------------------- compiled loess kernel

def _loess_paths(monkeypatch, compute):
    """``compute()`` with the compiled window moments (numba) and with the numpy path."""
    import importlib
    kernel = importlib.import_module("calib_core._accel.compiled")
    require_kernel("window_moments")
    compiled = compute()
    monkeypatch.setattr(kernel, "window_moments", None)
    return compiled, compute()


@pytest.mark.parametrize("degree", [0, 1, 2])
@pytest.mark.parametrize("iterations, delta", [(0, None), (2, 0.0), (0, 0.01)])
def test_compiled_compiled_equals_the_numpy_path(monkeypatch, degree, iterations, delta):
    """Issue 15: the optional numba kernel (calib-core[fast]) gives the numpy path's loess, up to summation order;
    with repeated x values (weights), zero-width windows (x shared by more than span * N rows) and far tails."""
    rng = np.random.default_rng(degree)
    x = np.concatenate([rng.uniform(size=3000), np.full(1200, 0.25), rng.uniform(size=50) * 1e-300])
    y = (rng.uniform(size=x.size) < np.clip(x, 0, 1) ** 2).astype(float)
    compiled, plain = _loess_paths(monkeypatch, lambda: cc.loess_smooth(x, y, span=0.2, degree=degree,
                                                                         iterations=iterations, delta=delta))
    np.testing.assert_allclose(compiled, plain, rtol=0, atol=1e-12)


def test_compiled_compiled_gives_the_numpy_ici_of_a_demo(monkeypatch):
    data = cc.load_demo("digits_gaussian_nb")
    compiled, plain = _loess_paths(monkeypatch, lambda: cc.ici(data.probs, data.labels))
    for field in ("ici", "e50", "e90"):
        np.testing.assert_allclose(getattr(compiled, field), getattr(plain, field), rtol=1e-10, atol=1e-13)


def test_no_numba_environment_variable_turns_the_kernel_off():
    import subprocess
    import sys
    code = "import calib_core._accel.compiled as k; print(k.window_moments is None)"
    env = {**os.environ, "CALIB_CORE_NO_NUMBA": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
