"""Tests of calib_core.recalibration: one parametrised test per invariant over the registry,
plus known values (recovered temperature, agreement with scikit-learn, the E.1 map)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from calib_core.binning import optimal_n_bins
from calib_core.recalibration import (
    LOG_PROBS_EPS,
    RECALIBRATORS,
    AccuracyPreservingCalibratedMap,
    BetaCalibration,
    DirichletCalibration,
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    MetricOptimizedTemperature,
    NotFittedError,
    PlattScaling,
    Recalibrator,
    TemperatureScaling,
    VectorScaling,
    all_recalibrators,
    log_probabilities,
)
from calib_core.validation import CalibrationInputError, softmax

ALL = list(RECALIBRATORS.values())
IDS = [cls.__name__ for cls in ALL]
#: The invariants below fit K = 4 classes; binary-only methods (quadratic scaling) have their twins on binary
#: data in tests/recalibration/test_structured.py.
MULTI = [cls for cls in ALL if not getattr(cls, "binary_only", False)]
MULTI_IDS = [cls.__name__ for cls in MULTI]


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _sample_labels(probs, rng):
    return (probs.cumsum(axis=1) > rng.uniform(size=(probs.shape[0], 1))).argmax(axis=1)


def _synthetic(n=600, k=4, scale=2.0, temperature=2.0, seed=0):
    """Logits z*T0 whose labels are drawn from softmax(z): calibrated after dividing by T0."""
    rng = np.random.default_rng(seed)
    z = scale * rng.normal(size=(n, k))
    return temperature * z, _sample_labels(_softmax(z), rng)


def _ece_top(probs, labels, n_bins=15):
    """Top-label ECE with uniform bins, written independently of calib_core."""
    confidence = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    index = np.clip(np.ceil(confidence * n_bins).astype(int) - 1, 0, n_bins - 1)
    gap = np.bincount(index, weights=confidence - correct, minlength=n_bins)
    return float(np.abs(gap).sum() / labels.size)


def _make(cls, input="logits"):
    return cls(input=input)


@pytest.fixture(scope="module")
def data():
    x, y = _synthetic(n=600, k=4)
    return x[:400], y[:400], x[400:], y[400:]


# -- registry ----------------------------------------------------------------------
def test_registry_lists_every_method_once():
    assert len(ALL) >= 16 and len(set(ALL)) == len(ALL)  # 11 before issue 27; others append theirs
    assert set(RECALIBRATORS) == {cls.display_name for cls in ALL}
    assert {cls.method for cls in ALL} == set(Recalibrator._registry)
    methods = all_recalibrators(input="probs")
    assert list(methods) == list(RECALIBRATORS)
    assert all(m.input == "probs" and not m.is_fitted for m in methods.values())
    with pytest.raises(CalibrationInputError, match="input"):
        all_recalibrators(input="scores")


# -- invariants, one parametrised test each ---------------------------------------
@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
def test_fit_returns_self_and_sets_fitted_attributes(cls, data):
    x, y, _, _ = data
    method = _make(cls)
    assert method.fit(x, y) is method
    assert method.n_classes_ == 4
    params = method.fitted_params()
    assert all(name.endswith("_") for name in params)


@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
@pytest.mark.parametrize("input", ["logits", "probs"])
def test_outputs_on_simplex(cls, input, data):
    x, y, x_test, _ = data
    if input == "probs":
        x, x_test = _softmax(x), _softmax(x_test)
    out = _make(cls, input).fit(x, y).predict_proba(x_test)
    assert out.shape == x_test.shape
    assert np.all(out >= 0) and np.all(out <= 1)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
def test_unfitted_predict_raises(cls, data):
    with pytest.raises(NotFittedError, match="not fitted"):
        _make(cls).predict_proba(data[0])
    with pytest.raises(CalibrationInputError):  # NotFittedError is a CalibrationInputError
        _make(cls).fitted_params()


@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
def test_bad_input_raises(cls, data):
    x, y, _, _ = data
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(CalibrationInputError, match="NaN"):
        _make(cls).fit(bad, y)
    with pytest.raises(CalibrationInputError, match="0..3"):
        _make(cls).fit(x, np.where(y == 0, 7, y))
    with pytest.raises(CalibrationInputError, match="entries"):
        _make(cls).fit(x, y[:-1])
    with pytest.raises(CalibrationInputError, match="2-D"):
        _make(cls).fit(x[:, 0], y)
    with pytest.raises(CalibrationInputError, match="sum to 1"):
        _make(cls, "probs").fit(np.abs(x), y)
    with pytest.raises(CalibrationInputError, match="`input`"):
        cls(input="scores").fit(x, y)
    fitted = _make(cls).fit(x, y)
    with pytest.raises(CalibrationInputError, match="fitted on 4 classes"):
        fitted.predict_proba(x[:, :3])
    with pytest.raises(CalibrationInputError, match="infinite"):
        fitted.predict_proba(np.full((2, 4), np.inf))


@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
def test_json_round_trip_is_exact(cls, data):
    x, y, x_test, _ = data
    method = _make(cls).fit(x, y)
    text = method.to_json()
    json.loads(text)  # standard JSON (no NaN/Infinity literals)
    restored = Recalibrator.from_json(text)
    assert type(restored) is cls
    assert restored.get_params() == method.get_params() or cls is MetricOptimizedTemperature
    np.testing.assert_array_equal(restored.predict_proba(x_test), method.predict_proba(x_test))
    assert cls.from_json(text).to_json() == text
    unfitted = Recalibrator.from_json(_make(cls).to_json())
    assert not unfitted.is_fitted


@pytest.mark.parametrize("cls", ALL, ids=IDS)
def test_params_clone_and_keyword_only(cls):
    method = cls()
    params = method.get_params()
    assert "input" in params
    clone = method.clone()
    assert clone is not method and clone.get_params() == params
    with pytest.raises(TypeError):
        cls("logits", "extra", "positional", "arguments")
    with pytest.raises(CalibrationInputError, match="no parameter"):
        method.set_params(temprature=2.0)


@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
def test_accuracy_preserved_exactly_when_claimed(cls, data):
    x, y, x_test, _ = data
    out = _make(cls).fit(x, y).predict_proba(x_test)
    if cls.preserves_accuracy:
        np.testing.assert_array_equal(out.argmax(axis=1), x_test.argmax(axis=1))
    assert cls.preserves_accuracy == (cls in (TemperatureScaling, EnsembleTemperatureScaling,
                                              MetricOptimizedTemperature))


@st.composite
def _problems(draw):
    n = draw(st.integers(4, 30))
    k = draw(st.integers(2, 4))
    logits = draw(st.lists(st.floats(-30, 30, allow_nan=False), min_size=n * k, max_size=n * k))
    labels = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    return np.array(logits).reshape(n, k), np.array(labels)


@pytest.mark.parametrize("cls", MULTI, ids=MULTI_IDS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=_problems(), use_probs=st.booleans())
def test_outputs_on_simplex_property(cls, problem, use_probs):
    x, y = problem
    if use_probs:
        x = softmax(x)
    if cls.method == "spline_calibration":  # a spline needs 3 distinct probabilities per class (else a clear error)
        assume(all(np.unique(column).size >= 3 for column in softmax(x).T))
    method = _make(cls, "probs" if use_probs else "logits").fit(x, y)
    out = method.predict_proba(x)
    assert np.all(np.isfinite(out)) and np.all(out >= 0) and np.all(out <= 1 + 1e-12)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-9)


# -- temperature scaling -------------------------------------------------------------
@pytest.mark.parametrize("true_t", [0.5, 2.5])
def test_temperature_recovers_true_temperature(true_t):
    x, y = _synthetic(n=20000, k=10, scale=1.5, temperature=true_t, seed=3)
    fitted = TemperatureScaling().fit(x, y).temperature_
    # The MLE of T from 20,000 rows has a relative standard error below 1%.
    assert fitted == pytest.approx(true_t, rel=0.03)
    from_probs = TemperatureScaling(input="probs").fit(_softmax(x), y).temperature_
    assert from_probs == pytest.approx(fitted, rel=1e-6)


def test_temperature_is_nll_minimiser():
    x, y = _synthetic(n=2000, k=5, seed=1)
    ts = TemperatureScaling().fit(x, y)

    def nll(t):
        p = _softmax(x / t)
        return -np.mean(np.log(p[np.arange(y.size), y]))

    grid = ts.temperature_ * np.array([0.98, 0.995, 1.005, 1.02])
    assert all(nll(ts.temperature_) < nll(t) for t in grid)


def test_metric_optimized_temperature_with_nll_matches_temperature_scaling():
    x, y = _synthetic(n=3000, k=5, seed=2)

    def nll(p, labels):
        return float(-np.mean(np.log(p[np.arange(labels.size), labels])))

    mot = MetricOptimizedTemperature(nll, max_evaluations=60).fit(x, y)
    assert mot.temperature_ == pytest.approx(TemperatureScaling().fit(x, y).temperature_, rel=2e-3)
    assert mot.metric_value_ == pytest.approx(nll(mot.predict_proba(x), y))


def test_metric_optimized_temperature_default_metric_is_ece():
    import calib_core as cc

    x, y = _synthetic(n=3000, k=5, seed=4)
    mot = MetricOptimizedTemperature().fit(x, y)
    assert mot.metric_value_ == pytest.approx(cc.ece(mot.predict_proba(x), y))
    assert mot.metric_value_ <= cc.ece(_softmax(x), y)
    assert mot.metric_value_ <= cc.ece(TemperatureScaling().fit(x, y).predict_proba(x), y) + 1e-12


def test_metric_optimized_temperature_json_keeps_unimportable_metric_as_name(data):
    x, y, x_test, _ = data
    mot = MetricOptimizedTemperature(lambda p, labels: float(np.mean(p.max(axis=1)))).fit(x, y)
    restored = Recalibrator.from_json(mot.to_json())
    np.testing.assert_array_equal(restored.predict_proba(x_test), mot.predict_proba(x_test))
    assert isinstance(restored.metric, str) and "<lambda>" in restored.metric
    with pytest.raises(CalibrationInputError, match="could not be imported"):
        restored.fit(x, y)
    import calib_core as cc

    named = Recalibrator.from_json(MetricOptimizedTemperature(cc.ece).fit(x, y).to_json())
    assert named.metric is cc.ece


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": 3}, "callable"),
    ({"grid_size": 0}, "grid_size"),
    ({"max_evaluations": 1.5}, "max_evaluations"),
])
def test_metric_optimized_temperature_bad_params(kwargs, match, data):
    with pytest.raises(CalibrationInputError, match=match):
        MetricOptimizedTemperature(**kwargs).fit(data[0], data[1])


# -- ensemble temperature scaling --------------------------------------------------------
@pytest.mark.parametrize("loss", ["mse", "nll"])
def test_ensemble_temperature_weights_on_simplex_and_not_worse_than_ts(loss):
    x, y = _synthetic(n=3000, k=5, seed=5)
    ets = EnsembleTemperatureScaling(loss=loss).fit(x, y)
    assert np.all(ets.weights_ >= 0) and ets.weights_.sum() == pytest.approx(1.0)
    ts_probs = _softmax(x / ets.temperature_)
    rows = np.arange(y.size)
    if loss == "nll":
        assert -np.log(ets.predict_proba(x)[rows, y]).mean() <= -np.log(ts_probs[rows, y]).mean() + 1e-9
    else:
        onehot = np.eye(5)[y]
        assert ((ets.predict_proba(x) - onehot) ** 2).mean() <= ((ts_probs - onehot) ** 2).mean() + 1e-12
    with pytest.raises(CalibrationInputError, match="loss"):
        EnsembleTemperatureScaling(loss="brier").fit(x, y)


# -- vector / matrix / Dirichlet --------------------------------------------------------------
def _linear_objective(w, b, feats, y, lam, mu):
    logits = feats @ w.T + b
    logits -= logits.max(axis=1, keepdims=True)
    nll = np.mean(np.log(np.exp(logits).sum(axis=1)) - logits[np.arange(y.size), y])
    k = b.size
    off = w - np.diag(np.diag(w))
    return nll + lam / (k * (k - 1)) * np.sum(off**2) + mu / k * np.sum(b**2)


@pytest.mark.parametrize("cls", [MatrixScaling, DirichletCalibration])
@pytest.mark.parametrize("lam, mu", [(0.0, 0.0), (5.0, 0.5)])
def test_full_maps_minimise_the_odir_objective(cls, lam, mu):
    x, y = _synthetic(n=800, k=3, seed=6)
    x = x + np.random.default_rng(0).normal(size=(800, 1)) * 4  # per-row offsets, as real logits have
    method = cls(input="logits", reg_lambda=lam, reg_mu=mu).fit(x, y)
    assert method.converged_
    feats = x if cls is MatrixScaling else np.log(_softmax(x))
    base = _linear_objective(method.weights_, method.bias_, feats, y, lam, mu)
    # First-order optimality, checked by central differences of an independent implementation.
    step = 1e-5
    for i, j in [(0, 0), (0, 1), (2, 1), (1, 2)]:
        w = method.weights_.copy()
        w[i, j] += step
        up = _linear_objective(w, method.bias_, feats, y, lam, mu)
        w[i, j] -= 2 * step
        down = _linear_objective(w, method.bias_, feats, y, lam, mu)
        assert abs(up - down) / (2 * step) < 1e-4
        assert up >= base - 1e-8 and down >= base - 1e-8  # optimiser tolerance: ftol 1e-8
    if mu > 0:
        bias_grad = [(_linear_objective(method.weights_, method.bias_ + step * e, feats, y, lam, mu)
                      - _linear_objective(method.weights_, method.bias_ - step * e, feats, y, lam, mu)) / (2 * step)
                     for e in np.eye(3)]
        assert np.max(np.abs(bias_grad)) < 1e-4


def test_vector_scaling_minimises_nll():
    x, y = _synthetic(n=800, k=3, seed=7)
    vs = VectorScaling().fit(x, y)
    assert vs.converged_ and vs.weights_.shape == (3,) and vs.bias_.shape == (3,)
    w = np.diag(vs.weights_)
    base = _linear_objective(w, vs.bias_, x, y, 0.0, 0.0)
    for k in range(3):
        for delta in (-1e-3, 1e-3):
            moved = vs.weights_.copy()
            moved[k] += delta
            assert _linear_objective(np.diag(moved), vs.bias_, x, y, 0.0, 0.0) > base


def test_dirichlet_same_on_logits_and_probs():
    x, y = _synthetic(n=500, k=3, seed=8)
    from_logits = DirichletCalibration(input="logits").fit(x, y).predict_proba(x)
    from_probs = DirichletCalibration(input="probs").fit(_softmax(x), y).predict_proba(_softmax(x))
    np.testing.assert_allclose(from_logits, from_probs, atol=1e-5)


@pytest.mark.parametrize("kwargs, match", [
    ({"reg_lambda": -1.0}, "reg_lambda"),
    ({"reg_mu": np.nan}, "reg_mu"),
    ({"regularization": "l1"}, "regularization"),
])
@pytest.mark.parametrize("cls", [MatrixScaling, DirichletCalibration])
def test_full_map_bad_params(cls, kwargs, match, data):
    with pytest.raises(CalibrationInputError, match=match):
        cls(input="logits", **kwargs).fit(data[0], data[1])


def test_vector_scaling_bad_reg_mu(data):
    with pytest.raises(CalibrationInputError, match="reg_mu"):
        VectorScaling(reg_mu=-0.1).fit(data[0], data[1])


def test_l2_dirichlet_shrinks_towards_uniform():
    x, y = _synthetic(n=500, k=3, seed=9)
    weak = DirichletCalibration(input="logits", regularization="l2", reg_lambda=1e-3).fit(x, y)
    strong = DirichletCalibration(input="logits", regularization="l2", reg_lambda=1e4).fit(x, y)
    assert np.abs(strong.weights_).max() < 0.1 * np.abs(weak.weights_).max()


# -- one-vs-rest: isotonic, Platt, Beta ----------------------------------------------------------
def test_binary_isotonic_agrees_with_sklearn():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(10)
    p = rng.uniform(0.05, 0.95, 2000)
    p[:100] = np.round(p[:100], 2)  # some ties
    y = (rng.uniform(size=2000) < p**1.5).astype(int)
    ours = IsotonicCalibration().fit(np.column_stack([1 - p, p]), y)
    theirs = IsotonicRegression(out_of_bounds="clip").fit(p, y)
    test = np.concatenate([rng.uniform(0, 1, 500), [0.0, 0.01, 0.99, 1.0]])
    np.testing.assert_allclose(ours.predict_proba(np.column_stack([1 - test, test]))[:, 1],
                               theirs.predict(test), atol=1e-12)
    np.testing.assert_allclose(ours.predict_proba(np.column_stack([1 - p, p]))[:, 1], theirs.predict(p), atol=1e-12)


def test_isotonic_one_vs_rest_is_renormalised_columnwise_fit():
    from sklearn.isotonic import IsotonicRegression

    x, y = _synthetic(n=800, k=3, seed=11)
    probs = _softmax(x)
    ours = IsotonicCalibration().fit(probs, y).predict_proba(probs)
    columns = np.column_stack([IsotonicRegression(out_of_bounds="clip").fit(probs[:, k], y == k).predict(probs[:, k])
                               for k in range(3)])
    np.testing.assert_allclose(ours, columns / columns.sum(axis=1, keepdims=True), atol=1e-12)


def test_platt_without_smoothing_agrees_with_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    x, y = _synthetic(n=3000, k=2, seed=12)
    platt = PlattScaling(smooth_targets=False).fit(x, y)
    odds = (x[:, 1] - x[:, 0])[:, None]
    lr = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(odds, y)
    assert platt.slopes_[0] == pytest.approx(lr.coef_[0, 0], rel=1e-5)
    assert platt.intercepts_[0] == pytest.approx(lr.intercept_[0], abs=1e-5)
    np.testing.assert_allclose(platt.predict_proba(x), lr.predict_proba(odds), atol=1e-6)


def test_platt_agrees_with_sklearn_sigmoid_calibration():
    calibration = pytest.importorskip("sklearn.calibration")
    if not hasattr(calibration, "_SigmoidCalibration"):
        pytest.skip("scikit-learn's private _SigmoidCalibration is not available")
    x, y = _synthetic(n=3000, k=2, seed=19)
    ours = PlattScaling().fit(x, y)
    scores = x[:, 1] - x[:, 0]
    theirs = calibration._SigmoidCalibration().fit(scores, y)
    np.testing.assert_allclose(ours.predict_proba(x)[:, 1], theirs.predict(scores), atol=1e-7)


def test_platt_smoothed_targets_satisfy_the_score_equations():
    x, y = _synthetic(n=2000, k=2, seed=13)
    platt = PlattScaling().fit(x, y)
    s = x[:, 1] - x[:, 0]
    n_pos, n_neg = y.sum(), (1 - y).sum()
    targets = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    q = platt.predict_proba(x)[:, 1]
    assert abs(np.mean(q - targets)) < 1e-9 and abs(np.mean((q - targets) * s)) < 1e-9
    with pytest.raises(CalibrationInputError, match="smooth_targets"):
        PlattScaling(smooth_targets="yes").fit(x, y)


def test_beta_calibration_recovers_a_beta_map():
    rng = np.random.default_rng(14)
    p = rng.uniform(0.01, 0.99, 60000)
    a, b, c = 2.0, 0.5, 0.3
    q = 1 / (1 + np.exp(-(a * np.log(p) - b * np.log1p(-p) + c)))
    y = (rng.uniform(size=p.size) < q).astype(int)
    beta = BetaCalibration().fit(np.column_stack([1 - p, p]), y)
    assert beta.a_[0] == pytest.approx(a, abs=0.1)
    assert beta.b_[0] == pytest.approx(b, abs=0.1)
    assert beta.c_[0] == pytest.approx(c, abs=0.1)
    m = beta.midpoint_[0]
    assert beta.a_[0] * np.log(m) - beta.b_[0] * np.log1p(-m) + beta.c_[0] == pytest.approx(0.0, abs=1e-9)


def test_beta_calibration_keeps_a_and_b_non_negative():
    rng = np.random.default_rng(15)
    p = rng.uniform(0.01, 0.99, 5000)
    y = (rng.uniform(size=p.size) < 1 - p).astype(int)  # anti-monotone: the fit must clamp
    beta = BetaCalibration().fit(np.column_stack([1 - p, p]), y)
    assert beta.a_[0] >= 0 and beta.b_[0] >= 0


# -- histogram binning ---------------------------------------------------------------------------
def test_histogram_binning_hand_computed():
    p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    y = np.array([0, 0, 1, 0, 1, 1])
    hb = HistogramBinning(2).fit(np.column_stack([1 - p, p]), y)
    np.testing.assert_allclose(hb.edges_[0], [0.3, 0.9])
    np.testing.assert_allclose(hb.values_[0], [1 / 3, 2 / 3])
    out = hb.predict_proba(np.array([[1.0, 0.0], [0.7, 0.3], [0.69, 0.31], [0.0, 1.0]]))
    np.testing.assert_allclose(out[:, 1], [1 / 3, 1 / 3, 2 / 3, 2 / 3])


def test_histogram_binning_default_bin_count_is_optimal_n_bins():
    x, y = _synthetic(n=5000, k=3, seed=16)
    hb = HistogramBinning(input="logits").fit(x, y)
    assert hb.n_bins_ == optimal_n_bins(5000)
    assert all(edges.size == optimal_n_bins(5000) for edges in hb.edges_)


def test_top_label_histogram_binning_sets_confidence_to_bin_accuracy():
    x, y = _synthetic(n=2000, k=4, seed=17)
    probs = _softmax(x)
    hb = HistogramBinning(10, class_conditional=False).fit(probs, y)
    out = hb.predict_proba(probs)
    confidence = probs.max(axis=1)
    bins = np.minimum(np.searchsorted(hb.edges_[0], confidence), hb.edges_[0].size - 1)
    correct = probs.argmax(axis=1) == y
    for b in range(hb.edges_[0].size):
        in_bin = bins == b
        np.testing.assert_allclose(out[in_bin, probs.argmax(axis=1)[in_bin]], correct[in_bin].mean())
    with pytest.raises(CalibrationInputError, match="class_conditional"):
        HistogramBinning(class_conditional=1).fit(probs, y)
    with pytest.raises(CalibrationInputError, match="n_bins"):
        HistogramBinning(0).fit(probs, y)


# -- accuracy-preserving calibrated map (Gruber & Buettner E.1) ---------------------------------------
def test_calibrated_map_is_calibrated_accuracy_preserving_and_less_sharp():
    x, y = _synthetic(n=40000, k=4, scale=1.5, temperature=1.0, seed=18)  # input already calibrated
    probs = _softmax(x)
    fit, test = slice(0, 20000), slice(20000, None)
    mapped = AccuracyPreservingCalibratedMap().fit(probs[fit], y[fit])
    in_sample = mapped.predict_proba(probs[fit])
    out = mapped.predict_proba(probs[test])
    assert _ece_top(in_sample, y[fit]) < 1e-12
    assert _ece_top(out, y[test]) < 0.015
    np.testing.assert_array_equal(out.argmax(axis=1), probs[test].argmax(axis=1))
    # Sharpness: the predictions vary far less, and the Brier score (which rewards sharpness) gets worse.
    assert out.var(axis=0).sum() < 0.9 * probs[test].var(axis=0).sum()
    onehot = np.eye(4)[y[test]]
    assert ((out - onehot) ** 2).sum(axis=1).mean() > ((probs[test] - onehot) ** 2).sum(axis=1).mean() + 0.01
    assert len(np.unique(out, axis=0)) == 4


def test_calibrated_map_hand_computed_and_unseen_class():
    p = np.array([[0.9, 0.05, 0.05], [0.8, 0.1, 0.1], [0.3, 0.6, 0.1]])
    y = np.array([0, 1, 1])
    mapped = AccuracyPreservingCalibratedMap().fit(p, y)
    np.testing.assert_allclose(mapped.class_distributions_[0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(mapped.class_distributions_[1], [0.0, 1.0, 0.0])
    # Class 2 was never predicted: it maps to the label frequencies of the fitting data.
    np.testing.assert_allclose(mapped.predict_proba([[0.1, 0.1, 0.8]]), [[1 / 3, 2 / 3, 0.0]])
    np.testing.assert_array_equal(mapped.counts_, [2, 1, 0])


def test_calibrated_map_binary_threshold_at_one_half():
    p = np.array([0.2, 0.5, 0.7, 0.4])
    y = np.array([0, 1, 1, 1])
    mapped = AccuracyPreservingCalibratedMap().fit(np.column_stack([1 - p, p]), y)
    # p >= 0.5 -> class 1 (eq. 40): rows 1, 2 predicted 1, rows 0, 3 predicted 0.
    np.testing.assert_allclose(mapped.class_distributions_, [[0.5, 0.5], [0.0, 1.0]])


# -- JSON errors, logits check ------------------------------------------------------------------
def test_from_json_errors(data):
    x, y, _, _ = data
    text = TemperatureScaling().fit(x, y).to_json()
    with pytest.raises(CalibrationInputError, match="not valid JSON"):
        Recalibrator.from_json("{not json")
    with pytest.raises(CalibrationInputError, match="not a calib_core recalibrator"):
        Recalibrator.from_json(json.dumps({"method": "temperature_scaling"}))
    payload = json.loads(text)
    payload["method"] = "magic_scaling"
    with pytest.raises(CalibrationInputError, match="unknown recalibration method"):
        Recalibrator.from_json(json.dumps(payload))
    with pytest.raises(CalibrationInputError, match="not a VectorScaling"):
        VectorScaling.from_json(text)
    payload = json.loads(text)
    payload["version"] = 99
    with pytest.raises(CalibrationInputError, match="version"):
        Recalibrator.from_json(json.dumps(payload))
    payload = json.loads(text)
    payload["fitted"]["weights_"] = 1.0
    with pytest.raises(CalibrationInputError, match="unexpected fitted attribute"):
        Recalibrator.from_json(json.dumps(payload))


# -- exact zeros: one logarithm of probabilities for every method (issue 11, item 6) -------------
#: The methods that take logarithms of probabilities when given ``input="probs"``.
LOG_TAKING = [cls for cls in MULTI if cls.works_on == "logits"]


@pytest.fixture(scope="module")
def forest():
    """A 5-tree random forest on scikit-learn's digits: vote shares, about 80 % exact zeros.

    Stratified 50 / 25 / 25 train / calibration / test split (seed 0).
    """
    datasets = pytest.importorskip("sklearn.datasets")
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    features, labels = datasets.load_digits(return_X_y=True)
    x_train, x_held, y_train, y_held = train_test_split(features, labels, test_size=0.5, stratify=labels,
                                                        random_state=0)
    x_cal, x_test, y_cal, y_test = train_test_split(x_held, y_held, test_size=0.5, stratify=y_held, random_state=0)
    model = RandomForestClassifier(n_estimators=5, random_state=0).fit(x_train, y_train)
    p_cal, p_test = model.predict_proba(x_cal), model.predict_proba(x_test)
    assert (p_cal == 0).mean() > 0.7 and (p_cal[np.arange(y_cal.size), y_cal] == 0).any()
    return model, x_cal, y_cal, x_test, y_test, p_cal, p_test


def test_log_probabilities_is_scikit_learns_rule():
    p = np.array([[0.0, 0.25, 0.75], [1.0, 0.0, 0.0]])
    out = log_probabilities(p)
    np.testing.assert_array_equal(out, np.log(p + 1e-12))
    assert LOG_PROBS_EPS == 1e-12 and np.isfinite(out).all()
    assert out[0, 0] == pytest.approx(np.log(1e-12))


@pytest.mark.parametrize("cls", LOG_TAKING, ids=[c.__name__ for c in LOG_TAKING])
def test_every_log_taking_method_reads_probabilities_through_the_shared_logarithm(cls, forest):
    """Fitting on probabilities equals fitting on ``log_probabilities(probs)`` given as logits, exactly.

    Before the fix the probabilities were floored at log(tiny) ~ -708, so on forest
    outputs (exact zeros) the two fits differed.
    """
    *_, p_cal, p_test = forest
    y_cal = forest[2]
    from_probs = cls(input="probs").fit(p_cal, y_cal).predict_proba(p_test)
    from_logs = cls(input="logits").fit(log_probabilities(p_cal), y_cal).predict_proba(log_probabilities(p_test))
    np.testing.assert_allclose(from_probs, from_logs, rtol=1e-9, atol=1e-12)


def test_beta_calibration_takes_both_logarithms_through_the_shared_helper():
    p = np.array([0.0, 0.2, 0.5, 0.9, 1.0, 0.0, 1.0, 0.3])
    y = np.array([0, 0, 1, 1, 1, 1, 0, 0])
    beta = BetaCalibration().fit(np.column_stack([1 - p, p]), y)
    eta = beta.a_[0] * log_probabilities(p) - beta.b_[0] * log_probabilities(1 - p) + beta.c_[0]
    np.testing.assert_allclose(beta.predict_proba(np.column_stack([1 - p, p]))[:, 1], 1 / (1 + np.exp(-eta)),
                               rtol=1e-12)


def _temperature_by_grid(p, y):
    """The NLL-minimising T of softmax(log(p + 1e-12) / T), by bounded scalar search (independent of calib_core)."""
    from scipy.optimize import minimize_scalar

    z = np.log(p + 1e-12)

    def nll(log_t):
        s = z / np.exp(log_t)
        s = s - s.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(s).sum(axis=1)) - s[np.arange(y.size), y]))

    return float(np.exp(minimize_scalar(nll, bounds=(np.log(1e-3), np.log(1e3)), method="bounded",
                                        options={"xatol": 1e-10}).x))


def test_temperature_on_forest_probabilities_is_sane_and_matches_scikit_learn(forest):
    """Regression (issue 11, item 6): exact zeros read as log(tiny) drove T past 100."""
    model, x_cal, y_cal, x_test, y_test, p_cal, p_test = forest
    fitted = TemperatureScaling(input="probs").fit(p_cal, y_cal)
    # The rule before the fix, reproduced: log(p) floored at log(tiny) ~ -708.
    floored = np.maximum(np.log(np.maximum(p_cal, np.finfo(float).tiny)), np.log(np.finfo(float).tiny))
    old_t = TemperatureScaling().fit(floored, y_cal).temperature_
    assert old_t > 100, old_t
    assert 1.0 < fitted.temperature_ < 20.0, fitted.temperature_
    assert fitted.temperature_ == pytest.approx(_temperature_by_grid(p_cal, y_cal), rel=1e-6)
    calibration = pytest.importorskip("sklearn.calibration")
    from sklearn.frozen import FrozenEstimator

    try:
        theirs = calibration.CalibratedClassifierCV(FrozenEstimator(model), method="temperature").fit(x_cal, y_cal)
    except ValueError:
        pytest.skip("this scikit-learn has no method='temperature' (added in 1.8)")
    (calibrator,) = theirs.calibrated_classifiers_[0].calibrators
    assert fitted.temperature_ == pytest.approx(1.0 / calibrator.beta_, rel=1e-4)
    np.testing.assert_allclose(fitted.predict_proba(p_test), theirs.predict_proba(x_test), atol=1e-4)


@pytest.mark.parametrize("cls", [*LOG_TAKING, BetaCalibration],
                         ids=[c.__name__ for c in [*LOG_TAKING, BetaCalibration]])
def test_log_taking_methods_on_forest_probabilities_are_not_absurd(cls, forest):
    """Fit on the calibration rows of a 5-tree forest, evaluate on the test rows.

    A temperature above 20 or a test ECE beyond 2.5 times the uncalibrated one would mean
    the zeros dominate the fit. (Temperature scaling itself stays worse than no
    recalibration here, 0.28 against 0.14: one temperature cannot fix vote shares
    whose true class often got no vote; scikit-learn's fit gives the same.)
    """
    *_, y_cal, _, y_test, p_cal, p_test = forest
    before = _ece_top(p_test, y_test)
    method = cls(input="probs").fit(p_cal, y_cal)
    after = method.predict_proba(p_test)
    assert np.isfinite(after).all() and np.allclose(after.sum(axis=1), 1.0)
    assert _ece_top(after, y_test) < 2.5 * before, (_ece_top(after, y_test), before)
    temperature = getattr(method, "temperature_", None)
    if temperature is not None:
        assert 0.05 < temperature < 20.0, temperature


def test_top_class_log_odds_keep_full_precision_beyond_the_underflow_of_exp():
    """Platt's log-odds of softmax(z): ``z_1 - z_0`` even when exp(-800) underflows (was capped near 708)."""
    from calib_core.recalibration._numeric import class_log_probs

    log_p, log_not_p = class_log_probs(np.array([[800.0, 0.0], [0.0, -1000.0], [1.0, 2.0]]))
    np.testing.assert_allclose(log_p - log_not_p, [[800.0, -800.0], [1000.0, -1000.0], [-1.0, 1.0]], rtol=1e-12)


def test_version_1_documents_of_maps_fitted_on_probabilities_are_refused():
    p = _softmax(_synthetic(n=200, k=3)[0])
    y = _synthetic(n=200, k=3)[1]
    payload = json.loads(TemperatureScaling(input="probs").fit(p, y).to_json())
    assert payload["version"] == 2
    payload["version"] = 1
    with pytest.raises(CalibrationInputError, match="older calib_core.*fit it again"):
        Recalibrator.from_json(json.dumps(payload))
    # A version-1 map fitted on logits predicts as before and is still read.
    x, y = _synthetic(n=200, k=3)
    payload = json.loads(TemperatureScaling().fit(x, y).to_json())
    payload["version"] = 1
    assert Recalibrator.from_json(json.dumps(payload)).temperature_ == payload["fitted"]["temperature_"]


def test_a_document_written_before_the_wings_still_finds_its_metric(data):
    """Issue 13 moved calib_core.binned to calib_core.metrics.binned; a saved map names the old module."""
    import calib_core as cc

    x, y, _, _ = data
    text = MetricOptimizedTemperature(cc.ece).fit(x, y).to_json()
    assert "calib_core.metrics.binned:ece" in text
    old = text.replace("calib_core.metrics.binned:ece", "calib_core.binned:ece")
    assert Recalibrator.from_json(old).metric is cc.ece


def test_histogram_bins_from_the_sorted_values_equal_the_bin_index_count():
    """Issue 15: the fit counts bins along the sorted values and sums the targets of the rows with target 1 only;
    the same edges and means, bit for bit, as binning every row (the reference below, the former code)."""
    from calib_core.binning import adaptive_upper_edges
    from calib_core.recalibration.histogram import _bin_of, _fit_bins

    rng = np.random.default_rng(4)
    for n_rows, n_bins in [(1000, 10), (37, 5), (500, 40), (3, 3)]:
        values = np.round(rng.beta(0.5, 3, n_rows), 2)  # many ties
        targets = (rng.uniform(size=n_rows) < values).astype(np.float64)
        edges_ref = np.unique(adaptive_upper_edges(np.sort(values), n_bins))
        index = _bin_of(values, edges_ref)
        means_ref = np.bincount(index, weights=targets, minlength=edges_ref.size) / np.bincount(
            index, minlength=edges_ref.size)
        edges, means = _fit_bins(values, targets, n_bins)
        np.testing.assert_array_equal(edges, edges_ref)
        np.testing.assert_array_equal(means, means_ref)


@pytest.mark.parametrize("n_classes", [2, 3, 12])
def test_one_map_per_class_predictions_equal_the_column_loop(n_classes):
    """Issue 15: histogram binning and isotonic regression predict on the transposed columns; bit for bit the
    former loop over ``x[:, k]`` (the reference below)."""
    from calib_core.recalibration._base import _renormalise
    from calib_core.recalibration.histogram import _bin_of

    rng = np.random.default_rng(n_classes)
    probs = softmax(2 * rng.normal(size=(900, n_classes)))
    labels = rng.integers(0, n_classes, 900)
    hist = HistogramBinning().fit(probs[:500], labels[:500])
    iso = IsotonicCalibration().fit(probs[:500], labels[:500])
    x = probs[500:]
    if n_classes == 2:
        q = hist.values_[0][_bin_of(x[:, 1], hist.edges_[0])]
        hist_ref = np.column_stack([1.0 - q, q])
        q = np.clip(np.interp(x[:, 1], iso.knots_x_[0], iso.knots_y_[0]), 0.0, 1.0)
        iso_ref = np.column_stack([1.0 - q, q])
    else:
        hist_ref = np.empty_like(x)
        iso_ref = np.empty_like(x)
        for k in range(n_classes):
            hist_ref[:, k] = hist.values_[k][_bin_of(x[:, k], hist.edges_[k])]
            iso_ref[:, k] = np.interp(x[:, k], iso.knots_x_[k], iso.knots_y_[k])
        hist_ref = _renormalise(hist_ref)
        iso_ref = _renormalise(np.clip(iso_ref, 0.0, None))
    np.testing.assert_array_equal(hist.predict_proba(x), hist_ref)
    np.testing.assert_array_equal(iso.predict_proba(x), iso_ref)


def _isotonic_fit_by_stable_argsort(values, targets):
    """isotonic_fit as it was before issue 15's sorted_pairs: stable arg-sort, np.unique, reduceat."""
    from scipy.optimize import isotonic_regression

    order = np.argsort(values, kind="stable")
    unique, start, counts = np.unique(values[order], return_index=True, return_counts=True)
    means = np.add.reduceat(targets[order], start) / counts
    fitted = isotonic_regression(means, weights=counts.astype(np.float64), increasing=True).x
    keep = np.ones(fitted.size, dtype=bool)
    if fitted.size > 2:
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return unique[keep], fitted[keep]


def test_isotonic_fit_equals_the_stable_argsort_fit_bit_for_bit():
    """Issue 15: the one-vs-rest isotonic fit at 25,000 x 1,000 spent 1.5 s in stable arg-sorts; sorted once by
    sorted_pairs (integer keys for probabilities with 0/1 targets) it gives the same knots, bit for bit."""
    from calib_core.recalibration._numeric import isotonic_fit

    rng = np.random.default_rng(4)
    for values in (rng.random(3_000), np.round(rng.random(3_000), 2), np.concatenate([np.zeros(50), rng.random(500)]),
                   rng.normal(size=2_000), np.array([0.5]), np.array([0.2, 0.2, 0.2])):
        for targets in ((rng.random(values.size) < 0.3).astype(np.float64), rng.random(values.size)):
            got, expected = isotonic_fit(values, targets), _isotonic_fit_by_stable_argsort(values, targets)
            for a, b in zip(got, expected):
                np.testing.assert_array_equal(a, b)


def test_loss_sums_over_row_blocks_do_not_depend_on_the_threads(monkeypatch):
    """Issue 15: the temperature and linear-softmax losses sum their row blocks in two chunks on two threads
    (vector scaling at 25,000 x 1,000: 30 loss evaluations of 75 ms). The chunks are the same on any machine, so
    one thread or two give the same fit, bit for bit; the sums equal a plain loop over the blocks to round-off."""
    from calib_core._accel import threads
    from calib_core.recalibration import _numeric

    rng = np.random.default_rng(6)
    n, k = 3_000, 60  # 3,000 x 61 values: two row blocks of 2,148 and 852 rows
    logits = 2.0 * rng.normal(size=(n, k))
    labels = rng.integers(0, k, n)
    assert len(_numeric.row_blocks(n, k + 1)) == 2

    def plain_loop(start, stop, work):
        block = logits[start:stop]
        return float(block.sum()), block.sum(axis=0), block[:, 0] @ block

    looped = [sum(parts) for parts in zip(*(plain_loop(b, min(n, b + 2_148), None) for b in (0, 2_148)))]
    for got, expected in zip(_numeric.block_sums(n, k + 1, plain_loop), looped):
        np.testing.assert_allclose(got, expected, rtol=1e-12)

    from calib_core.recalibration import RECALIBRATORS

    def fits():
        vector = RECALIBRATORS["Vector scaling"](input="logits").fit(logits, labels)
        matrix = RECALIBRATORS["Matrix scaling (ODIR)"](input="logits").fit(logits, labels)
        temperature = _numeric.fit_log_temperature(logits, labels, loss="mse")
        return vector.weights_, vector.bias_, matrix.weights_, temperature

    two = fits()
    monkeypatch.setattr(threads, "WORKERS", 1)
    for a, b in zip(fits(), two):
        np.testing.assert_array_equal(a, b)


def test_column_by_column_work_equals_the_plain_loop_on_any_number_of_threads(monkeypatch):
    """Issue 15: one-vs-rest fits and predictions read their columns by blocks of 64 on two threads (no transposed
    copy of a 200 MB matrix); the results are the plain loop's, in order, with one thread or two."""
    from calib_core._accel import threads
    from calib_core.recalibration import _numeric

    rng = np.random.default_rng(8)
    matrix = rng.random((300, 150))  # three blocks of columns
    expected_results = [(k, float(matrix[:, k].sum())) for k in range(150)]
    expected_map = np.column_stack([np.sort(matrix[:, k]) * k for k in range(150)])
    for workers in (2, 1):
        monkeypatch.setattr(threads, "WORKERS", workers)
        assert _numeric.column_results(matrix, lambda k, column: (k, float(column.sum()))) == expected_results
        np.testing.assert_array_equal(_numeric.map_columns(matrix, lambda k, column: np.sort(column) * k),
                                      expected_map)
    probs = rng.dirichlet(np.ones(80), 400)
    labels = rng.integers(0, 80, 400)
    outputs = []
    for workers in (2, 1):
        monkeypatch.setattr(threads, "WORKERS", workers)
        outputs.append([IsotonicCalibration().fit(probs, labels).predict_proba(probs),
                        HistogramBinning().fit(probs, labels).predict_proba(probs)])
    for a, b in zip(*outputs):
        np.testing.assert_array_equal(a, b)
