"""Every invariant, once, over the registry of all metrics (calib_core.metrics.registry.METRICS)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core._accel import KeptValues
from calib_core.metrics.registry import get_metric, metric_function, resolve_metrics
from calib_core.metrics.reports import metrics_of_kind

#: The K-class entries; the confidence models' entries have their invariants in tests/metrics/test_confidence.py.
METRICS = metrics_of_kind("classes")
from calib_core.metrics.reports import compute_metrics

KEYS = [spec.key for spec in METRICS]


def predictions(seed, n, k, temperature=1.0, shift=0.0):
    """Predictions and labels drawn from ``softmax(logits / temperature + shift * (0, 1, ..., K-1))``."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    true_logits = logits / temperature + shift * np.arange(k)
    truth = np.exp(true_logits) / np.exp(true_logits).sum(1, keepdims=True)
    labels = np.minimum((truth.cumsum(1) < rng.uniform(size=(n, 1))).sum(1), k - 1)
    return probs, labels


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), k=st.integers(2, 4))
@pytest.mark.parametrize("key", KEYS)
def test_every_metric_is_finite_non_negative_and_ignores_row_order(key, seed, n, k):
    probs, labels = predictions(seed, n, k)
    spec = get_metric(key)
    perm = np.random.default_rng(seed).permutation(n)
    try:
        value = spec.compute(probs, labels, 10, "uniform")
    except cc.CalibrationInputError as exc:
        # Only a metric that declares it (Cox's fit under separation) may not exist on valid input, and then
        # not on any order of the same rows, for the same reason.
        assert not spec.always_defined, exc
        with pytest.raises(cc.CalibrationInputError, match="does not exist"):
            spec.compute(probs[perm], labels[perm], 10, "uniform")
        return
    assert np.isfinite(value) and (value >= 0 or spec.signed)
    assert spec.compute(probs[perm], labels[perm], 10, "uniform") == pytest.approx(value, rel=1e-9, abs=1e-9)


def test_every_calibration_error_has_the_ideal_zero():
    assert all(spec.ideal == 0.0 for spec in METRICS if spec.calibration_error)
    assert get_metric("cox_slope").ideal == 1.0 and get_metric("citl").ideal == 0.0
    assert get_metric("accuracy").ideal is None and get_metric("nll").ideal is None


@pytest.mark.parametrize("key", [spec.key for spec in METRICS if spec.ideal is not None])
def test_every_summary_is_near_its_ideal_for_calibrated_data_and_farther_when_miscalibrated(key):
    """Distance to the ideal value (0 for errors, 1 for Cox's slope), not the value itself: a calibrated model's
    slope is 1. The miscalibration is over-confidence (temperature 3) and a shift of the class prevalences, which
    a calibration-in-the-large sees and a temperature alone does not."""
    spec = get_metric(key)
    n = 3000 if spec.quadratic else 40_000
    calibrated = abs(spec.compute(*predictions(0, n, 3), 10, "uniform") - spec.ideal)
    miscalibrated = abs(spec.compute(*predictions(0, n, 3, temperature=3.0, shift=0.5), 10, "uniform") - spec.ideal)
    assert miscalibrated > calibrated
    assert miscalibrated > 2 * calibrated or spec.key == "mce"


@pytest.mark.parametrize("key", KEYS)
def test_every_metric_rejects_invalid_predictions(key):
    with pytest.raises(cc.CalibrationInputError, match="sum to 1"):
        get_metric(key).compute(np.array([[0.5, 0.6]]), np.array([0]), 10, "uniform")


def test_compute_metrics_and_metric_function_agree_with_the_functions():
    probs, labels = predictions(1, 500, 4)
    values = compute_metrics(probs, labels, n_bins=10, binning="adaptive")
    assert values["ece"] == cc.ece(probs, labels, n_bins=10, binning="adaptive")
    assert values["ace"] == cc.ace(probs, labels, n_bins=10)
    assert metric_function("sce", n_bins=7)(probs, labels) == cc.sce(probs, labels, n_bins=7)


def test_unknown_metric_lists_the_known_ones():
    with pytest.raises(cc.CalibrationInputError, match="known metrics: accuracy, ece"):
        get_metric("brierr")


def test_every_metric_has_notes():
    for spec in METRICS:
        assert spec.summary.endswith(".") and spec.pitfalls.endswith(".")


# ----------------------------------------------------------------------------- intervals

@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), k=st.integers(2, 4),
       temperature=st.sampled_from([0.5, 1.0, 3.0]))
@pytest.mark.parametrize("key", KEYS)
def test_every_interval_brackets_its_estimate(key, seed, n, k, temperature):
    """The percentile bootstrap missed the estimate of biased metrics (SKCE linear-time 0.0162 in [-0.0014, 0.0111]
    on the default demo; class-wise ECE, SCE, ACE, TACE on most calibrated samples): each metric's declared
    interval must contain its estimate."""
    probs, labels = predictions(seed, n, k, temperature)
    spec = get_metric(key)
    try:
        expected = spec.compute(probs, labels, 10, "uniform")
    except cc.CalibrationInputError:
        return  # not available on this input (e.g. SKCE on 2 rows with a 0 distance): metric_report's business
    found = cc.metric_interval(key, probs, labels, n_bins=10, n_boot=40, seed=seed, alpha=0.05)
    assert found.estimate == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert found.method in cc.metrics.registry.INTERVAL_METHODS and found.method in (spec.interval, "none")
    if found.method == "none":
        assert np.isnan(found.low) and np.isnan(found.high) and found.note.startswith("none")
    else:
        assert found.low <= found.estimate <= found.high, found


def test_every_metric_declares_an_interval_method():
    assert {spec.interval for spec in METRICS} <= set(cc.metrics.registry.INTERVAL_METHODS)
    assert get_metric("skce_block").interval == get_metric("skce").interval == "variance"
    assert get_metric("kde_ce_kl").interval == "none" and get_metric("accuracy").interval == "percentile"


def test_linear_time_skce_interval_is_the_normal_interval_of_its_pair_terms():
    data = cc.load_demo("digits_gaussian_nb")
    probs, labels = data.probs, data.labels
    found = cc.metric_interval("skce_block", probs, labels, alpha=0.05)
    # Independently: the registry's pairs, the median heuristic, mean +- z sd / sqrt(pairs).
    order = cc.metrics.registry.skce_pair_order(probs, labels)
    h = cc.median_pairwise_distance(probs)
    p, y = probs[order], labels[order]
    residual = np.eye(10)[y] - p
    first, second = slice(0, 2 * (len(y) // 2), 2), slice(1, 2 * (len(y) // 2), 2)
    terms = np.exp(-np.linalg.norm(p[first] - p[second], axis=1) / h) * np.sum(residual[first] * residual[second], 1)
    half = 1.959963984540054 * terms.std(ddof=1) / np.sqrt(terms.size)
    assert found.estimate == pytest.approx(terms.mean(), rel=1e-12)
    assert (found.low, found.high) == pytest.approx((terms.mean() - half, terms.mean() + half), rel=1e-10)
    assert found.low <= found.estimate <= found.high  # the Metrics page showed 0.0162 with [-0.0014, 0.0111]


def test_bootstrap_se_interval_is_estimate_plus_minus_z_standard_errors():
    probs, labels = predictions(3, 300, 3)
    found = cc.metric_interval("classwise_ece", probs, labels, n_boot=100, seed=5, alpha=0.1)
    boot = cc.bootstrap_ci(metric_function("classwise_ece"), probs, labels, n_boot=100, seed=5, alpha=0.1)
    assert found.method == "bootstrap_se" and found.std == pytest.approx(boot.std)
    assert found.high - found.estimate == pytest.approx(1.6448536269514722 * boot.std)
    assert found.low == pytest.approx(max(0.0, found.estimate - 1.6448536269514722 * boot.std))
    # The percentile interval of this biased estimate lies above it: the reason for the method.
    assert boot.low > found.estimate


def test_intervals_without_resamples_and_bad_options():
    probs, labels = predictions(0, 100, 3)
    assert np.isnan(cc.metric_interval("ece", probs, labels, n_boot=0).low)
    assert np.isfinite(cc.metric_interval("skce_block", probs, labels, n_boot=0).low), "needs no resamples"
    with pytest.raises(cc.CalibrationInputError, match="alpha"):
        cc.metric_interval("ece", probs, labels, alpha=2.0)
    with pytest.raises(cc.CalibrationInputError, match="n_boot"):
        cc.metric_interval("ece", probs, labels, n_boot=-1)


# ----------------------------------------------------------------------------- one failing metric

def test_one_row_reports_the_kernel_metrics_as_not_available():
    probs, labels = np.array([[0.7, 0.3]]), np.array([0])
    report = cc.metric_report(probs, labels)
    assert [k for k, v in report.values.items() if v is None] == ["skce", "skce_block", "kde_ce_kl", "kde_ce_l2",
                                                                  "cox_slope", "cox_intercept", "citl",
                                                                  "auroc_correct"]
    assert "at least 2 rows" in report.reasons["skce"] and set(report.reasons) == {
        "skce", "skce_block", "kde_ce_kl", "kde_ce_l2", "cox_slope", "cox_intercept", "citl", "auroc_correct"}
    assert "the outcome is constant" in report.reasons["citl"]
    assert "every item is right" in report.reasons["auroc_correct"]
    assert report.values["ece"] == pytest.approx(0.3)
    values = compute_metrics(probs, labels)  # the old return type: {key: float}, NaN when not available
    assert all(isinstance(v, float) for v in values.values()) and np.isnan(values["skce"])
    assert values["brier"] == pytest.approx(0.18)


def test_constant_predictions_get_a_kernel_bandwidth():
    """`report` on constant predictions used to exit 2: "the median pairwise distance of probs is 0"."""
    probs = np.tile([0.6, 0.3, 0.1], (30, 1))
    labels = np.arange(30) % 3
    report = cc.metric_report(probs, labels)
    # Only Cox's slope and intercept are missing: one value of logit(p) cannot fix a slope.
    assert set(report.reasons) == {"cox_slope", "cox_intercept"}
    assert "not identifiable" in report.reasons["cox_slope"] and "classes 1, 2" in report.reasons["cox_slope"]
    # Every kernel weight is exp(0) = 1, so any bandwidth gives the same SKCE.
    assert report.values["skce"] == pytest.approx(cc.skce(probs, labels, bandwidth=0.123), abs=1e-15)
    assert cc.metrics.registry.skce_bandwidth(probs, labels) == 1.0


def test_invalid_input_still_raises():
    with pytest.raises(cc.CalibrationInputError, match="sum to 1"):
        cc.metric_report(np.array([[0.5, 0.6]]), np.array([0]))
    with pytest.raises(cc.CalibrationInputError, match="max_quadratic_rows"):
        compute_metrics(*predictions(0, 10, 2), max_quadratic_rows=-1)
    with pytest.raises(cc.CalibrationInputError, match="unknown metric"):
        cc.metric_report(*predictions(0, 10, 2), keys=["nope"])


def test_non_finite_values_are_reported(monkeypatch):
    infinite = cc.MetricSpec("nll", "NLL", lambda p, y, b, s: float("inf"), "x.", "y.", uses_bins=False)
    monkeypatch.setattr(cc.metrics.registry, "METRICS", [infinite if spec.key == "nll" else spec for spec in METRICS])
    report = cc.metric_report(*predictions(0, 20, 2))
    assert report.values["nll"] is None and "not finite" in report.reasons["nll"]


# ----------------------------------------------------------------------------- names and defaults

def test_names_carry_the_settings_and_are_unique():
    names = [cc.metric_name(spec.key, n_bins=12, binning="adaptive") for spec in METRICS]
    assert len(set(names)) == len(names)
    assert cc.metric_name("ece", n_bins=12, binning="adaptive") == "ECE, 12 adaptive bins"
    assert cc.metric_name("sce", n_bins=12, binning="adaptive") == "SCE, 12 uniform bins", "SCE is always uniform"
    assert cc.metric_name("mmce") == cc.metric_name("mmce", bandwidth=cc.metrics.registry.MMCE_BANDWIDTH) == "MMCE, h = 0.4"
    assert cc.metric_name("kde_ce_l2", bandwidth=0.05) == "CE_2^2 (kernel), h = 0.05"
    assert cc.metric_name("brier") == "Brier score"
    with pytest.raises(cc.CalibrationInputError, match="kernel metrics only"):
        cc.metric_name("brier", bandwidth=0.1)
    with pytest.raises(cc.CalibrationInputError, match="kernel metrics only"):
        cc.metric_value("ece", *predictions(0, 10, 2), bandwidth=0.1)


def test_defaults_are_the_library_defaults():
    probs, labels = predictions(2, 400, 3)
    assert cc.metric_value("kde_ce_kl", probs, labels) == cc.kde_ce(probs, labels, "kl")
    assert cc.metric_value("kde_ce_l2", probs, labels, bandwidth=0.05) == cc.kde_ce(probs, labels, "l2", 0.05)
    assert cc.metric_value("mmce", probs, labels) == cc.mmce(probs, labels)
    assert cc.metric_value("skce", probs, labels) == pytest.approx(cc.skce(probs, labels), rel=1e-13)
    assert cc.metric_value("smooth_ece", probs, labels) == cc.smooth_ece(probs, labels)


def test_skce_bandwidth_ignores_the_row_order_above_the_median_rows(monkeypatch):
    monkeypatch.setattr(cc.metrics.registry, "SKCE_MEDIAN_ROWS", 50)
    probs, labels = predictions(4, 300, 3)
    perm = np.random.default_rng(1).permutation(300)
    h = cc.metrics.registry.skce_bandwidth(probs, labels)
    assert h == cc.metrics.registry.skce_bandwidth(probs[perm], labels[perm])
    assert h != cc.median_pairwise_distance(probs), "a subset of 50 rows"


# ----------------------------------------------------------------------------- clinical summaries

def test_clinical_summaries_are_the_binary_value_or_the_mean_over_one_vs_rest_classes():
    probs, labels = predictions(5, 2000, 2, temperature=1.5)
    fit, loess = cc.cox_calibration(probs, labels), cc.ici(probs, labels)
    values = cc.metric_report(probs, labels).values
    assert (values["cox_slope"], values["cox_intercept"], values["citl"]) == (fit.slope, fit.intercept, fit.citl)
    assert (values["ici"], values["e50"], values["e90"]) == (loess.ici, loess.e50, loess.e90)
    probs, labels = predictions(5, 2000, 4, temperature=1.5)
    fit, loess = cc.cox_calibration(probs, labels), cc.ici(probs, labels)
    values = cc.metric_report(probs, labels).values
    assert values["cox_slope"] == pytest.approx(np.mean(fit.slope), rel=1e-14)
    assert values["citl"] == pytest.approx(np.mean(fit.citl), rel=1e-14)
    assert values["e90"] == pytest.approx(np.mean(loess.e90), rel=1e-14)
    assert "K > 2: one-vs-rest mean" in cc.metric_name("cox_slope") and cc.metric_name("ici").startswith("ICI")


def test_binary_cox_intervals_are_the_wald_intervals_of_cox_calibration():
    probs, labels = predictions(6, 800, 2, temperature=2.0)
    fit = cc.cox_calibration(probs, labels, alpha=0.1)
    for key, name in (("cox_slope", "slope"), ("cox_intercept", "intercept"), ("citl", "citl")):
        found = cc.metric_interval(key, probs, labels, alpha=0.1)
        assert found.method == "variance" and found.n_boot == 0 and "Wald" in found.note
        assert (found.low, found.high) == pytest.approx((getattr(fit, name + "_low"), getattr(fit, name + "_high")),
                                                        rel=1e-12)


def test_multiclass_cox_standard_error_is_the_sandwich_of_the_mean():
    """For one class the formula is statsmodels' HC0 (sandwich) error; for K > 2 the mean's error agrees with a
    bootstrap of the mean slope (the per-class Wald errors would ignore that the K fits share the rows)."""
    sm = pytest.importorskip("statsmodels.api")
    probs, labels = predictions(7, 3000, 2, temperature=1.5)
    x = np.log(probs[:, 1]) - np.log1p(-probs[:, 1])
    fit = cc.cox_calibration(probs, labels)
    for name, column in (("intercept", 0), ("slope", 1)):
        model = sm.Logit(labels.astype(float), sm.add_constant(x)).fit(disp=0, cov_type="HC0")
        assert cc.metrics.registry.cox_mean_std_error(probs, labels, fit, name) == pytest.approx(model.bse[column], rel=1e-6)
    citl = sm.GLM(labels.astype(float), np.ones((3000, 1)), family=sm.families.Binomial(), offset=x).fit(
        cov_type="HC0")
    assert cc.metrics.registry.cox_mean_std_error(probs, labels, fit, "citl") == pytest.approx(citl.bse[0], rel=1e-6)

    probs, labels = predictions(7, 3000, 3, temperature=1.5)
    found = cc.metric_interval("cox_slope", probs, labels)
    rng = np.random.default_rng(0)
    boots = [np.mean(cc.cox_calibration(probs[i], labels[i]).slope)
             for i in (rng.integers(0, 3000, 3000) for _ in range(200))]
    assert found.std == pytest.approx(np.std(boots, ddof=1), rel=0.2)
    assert "sandwich" in found.note and found.low < found.estimate < found.high


def test_a_cox_fit_that_does_not_exist_is_not_available_with_its_reason():
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    labels = np.array([0, 0, 1, 1])  # separated: the slope is infinite
    report = cc.metric_report(probs, labels)
    assert report.values["cox_slope"] is None and "separate the outcome" in report.reasons["cox_slope"]
    assert report.values["citl"] is not None, "the calibration-in-the-large still exists"
    with pytest.raises(cc.CalibrationInputError, match="Cox slope does not exist"):
        cc.metric_interval("cox_slope", probs, labels)


def test_ici_bootstrap_is_capped_and_says_so():
    probs, labels = predictions(8, 300, 2)
    found = cc.metric_interval("ici", probs, labels, n_boot=200, seed=1)
    assert found.n_boot == cc.metrics.registry.LOESS_MAX_BOOT and "capped from 200" in found.note
    boot = cc.bootstrap_ci(metric_function("ici"), probs, labels, n_boot=cc.metrics.registry.LOESS_MAX_BOOT, seed=1)
    assert found.std == pytest.approx(boot.std, rel=1e-12)
    assert "capped" not in cc.metric_interval("ici", probs, labels, n_boot=20).note
    e90 = cc.metric_interval("e90", probs, labels)
    assert e90.method == "none" and "loess" in e90.note


@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
def test_binned_metric_functions_take_the_shared_bootstrap_path_with_the_same_values(binning):
    """metric_function of a binned key declares its binned resampling with its settings, so bootstrap_ci reads
    its BinnedSpec (calib_core.inference.resample.binned_spec) and the Metrics page's intervals share work."""
    from calib_core.inference.resample import binned_spec
    from calib_core.metrics.registry import metric_function, metric_value

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4), size=300)
    labels = rng.integers(0, 4, size=300)
    for key in ("ece", "rmsce", "mce", "classwise_ece", "sce", "ace", "tace"):
        function = metric_function(key, n_bins=7, binning=binning)
        assert binned_spec(function) is not None, key
        assert function(probs, labels) == metric_value(key, probs, labels, n_bins=7, binning=binning)


# ----------------------------------------------------------------------------- declared resampling (issue 24)

@pytest.mark.parametrize("spec", METRICS, ids=lambda spec: spec.key)
def test_every_registered_metric_declares_its_resampling_and_its_interval_agrees(spec):
    """Each entry says how it is resampled; a bootstrap interval needs resamples, a variance interval its
    formula, and a metric without an interval declares none."""
    from calib_core.metrics.resampling import BOOTSTRAP_KINDS

    how = spec.resampling
    assert how is not None, spec.key
    if spec.interval in ("percentile", "bootstrap_se"):
        assert how.kind in BOOTSTRAP_KINDS, spec.key
    else:
        assert how.kind == spec.interval, spec.key
    assert (spec.variance is not None) == (spec.interval == "variance")
    if how.kind == "binned":
        assert spec.uses_bins
    if spec.public is not None:  # the public function is the metric at the registry's default settings
        assert cc.metrics.registry.declared_metric(spec.public) == metric_function(spec.key)


def _declared_and_materialised(key, probs, labels, **settings):
    metric = metric_function(key, **settings)
    declared = cc.bootstrap_ci(metric, probs, labels, n_boot=30, seed=3)
    materialised = cc.bootstrap_ci(lambda p, y: metric(p, y), probs, labels, n_boot=30, seed=3)
    return declared, materialised


@pytest.mark.parametrize("key", [spec.key for spec in METRICS
                                 if spec.resampling.kind in ("binned", "row_mean", "top_label")])
@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
def test_each_declared_resampling_gives_the_metric_of_the_materialised_resamples(key, binning):
    """The shortcut a metric declares (per-bin sums, per-row means, the top label's two arrays) gives the
    values of the metric called on each resample's rows, which is what it was before the declarations."""
    probs, labels = predictions(11, 250, 4)
    probs = probs.round(2) / probs.round(2).sum(1, keepdims=True)  # ties
    declared, materialised = _declared_and_materialised(key, probs, labels, n_bins=7, binning=binning)
    assert declared.estimate == materialised.estimate
    np.testing.assert_allclose(declared.samples, materialised.samples, rtol=1e-12, atol=1e-13, err_msg=key)


def test_a_kernel_bandwidth_is_a_declared_setting_of_the_top_label_statistic():
    probs, labels = predictions(12, 200, 3)
    for key, bandwidth in (("mmce", 0.2), ("smooth_ece", 0.05)):
        declared, materialised = _declared_and_materialised(key, probs, labels, bandwidth=bandwidth)
        np.testing.assert_allclose(declared.samples, materialised.samples, rtol=1e-12, atol=1e-13)
    assert metric_function("mmce").top_label_statistic()(np.array([0.9, 0.6]), np.array([1.0, 0.0])) == \
        pytest.approx(cc.mmce([[0.9, 0.1], [0.6, 0.4]], [0, 1]), rel=1e-12)


def test_a_resampling_declaration_names_a_known_kind_and_what_it_needs():
    from calib_core.metrics.resampling import Resampling
    with pytest.raises(ValueError, match="unknown resampling kind"):
        Resampling("jackknife")
    with pytest.raises(ValueError, match="per_row"):
        Resampling("row_mean")


# ----------------------------------------------------------------------------- resolve_metrics
def test_resolve_metrics_reads_keys_callables_and_mappings_with_the_bin_settings():
    probs, labels = predictions(3, 200, 3)

    def my_metric(p, y):
        return 0.5

    assert list(resolve_metrics("ece")) == ["ece"]
    assert list(resolve_metrics(my_metric)) == ["my_metric"]
    found = resolve_metrics(["ece", my_metric, "nll"], n_bins=7, binning="adaptive")
    assert list(found) == ["ece", "my_metric", "nll"]
    assert found["ece"](probs, labels) == cc.ece(probs, labels, n_bins=7, binning="adaptive")
    assert found["my_metric"] is my_metric
    named = resolve_metrics({"ECE, 7 bins": "ece", "mine": my_metric}, n_bins=7)
    assert named["ECE, 7 bins"](probs, labels) == cc.ece(probs, labels, n_bins=7)
    assert named["mine"] is my_metric


@pytest.mark.parametrize("metrics, kwargs, match", [
    ([], {}, "`metrics` is empty"),
    ({}, {}, "`metrics` is empty"),
    ([3], {}, "`metrics` must hold metric keys or callables"),
    ({"bad": 3}, {}, "metric 'bad' must be a registry key or callable"),
    (3, {}, "`metrics` must be a metric key, a callable"),
    (["no_such_metric"], {}, "unknown metric 'no_such_metric'"),
    (["ece"], {"n_bins": 0}, "`n_bins` must be >= 1"),
    (["ece"], {"binning": "quantile"}, "`binning` must be 'uniform' or 'adaptive'"),
])
def test_resolve_metrics_errors(metrics, kwargs, match):
    with pytest.raises(cc.CalibrationInputError, match=match):
        resolve_metrics(metrics, **kwargs)


def test_ici_e50_e90_and_the_cox_summaries_share_one_fit_on_a_predictions_arrays(monkeypatch):
    """A table of every metric fitted the same loess curves three times (ICI, E50, E90) and Cox's regression
    three times; on a Predictions' frozen, marked arrays one fit now serves them; on others nothing is kept."""
    from calib_core.metrics import clinical as registry  # the shared fits live there (issue 24 split the registry)

    calls = {"ici": 0}
    real_ici = registry.ici

    def counted(probs, labels):
        calls["ici"] += 1
        return real_ici(probs, labels)

    counted.__name__ = "ici"
    monkeypatch.setattr(registry, "ici", counted)
    monkeypatch.setattr(registry, "_LAST_FITS", KeptValues(capacity=2))
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=300)
    labels = rng.integers(0, 3, 300)
    writeable = [cc.metric_value(key, probs, labels) for key in ("ici", "e50", "e90")]
    assert calls["ici"] == 3
    view = probs.view()
    view.flags.writeable = False  # read-only, but its memory is not: nothing kept
    cc.metric_value("ici", view, labels)
    assert calls["ici"] == 4
    pred = cc.Predictions.from_arrays(probs.tolist(), labels.tolist())  # frozen and marked
    frozen = [cc.metric_value(key, pred.probs, pred.labels) for key in ("ici", "e50", "e90")]
    assert calls["ici"] == 5
    assert frozen == writeable
    other = cc.Predictions.from_arrays(probs.tolist(), labels.tolist())
    cc.metric_value("ici", other.probs, other.labels)  # other arrays: a new fit
    assert calls["ici"] == 6


def test_per_class_fits_are_left_out_above_max_fit_cells_and_listed_as_skipped():
    """Issue 15: at 50,000 x 1,000 the Cox terms and loess summaries are 1,000 fits each (minutes): above
    max_fit_cells (rows x fits) metric_report leaves them out and says so in `skipped`, as for O(N^2) ones."""
    probs, labels = predictions(0, 400, 5)
    fits = ["cox_slope", "cox_intercept", "citl", "ici", "e50", "e90"]
    assert [s.key for s in cc.METRICS if s.per_class_fit] == fits
    assert cc.fit_cells(400, 5) == 2000 and cc.fit_cells(400, 2) == 400
    limited = cc.metric_report(probs, labels, max_fit_cells=1999)
    assert set(fits) <= set(limited.skipped) and not set(fits) & set(limited.values)
    assert cc.skipped_for_size(400, 5, max_fit_cells=1999) == [k for k in limited.skipped]
    full = cc.metric_report(probs, labels, max_fit_cells=2000)
    assert not set(fits) & set(full.skipped) and set(fits) <= set(full.values)
    assert full.values["ici"] == cc.ici(probs, labels).ici.mean()
    assert cc.metric_report(probs, labels, max_fit_cells=None).values == full.values
    assert set(cc.skipped_for_size(50_000, 1_000)) >= set(fits)
    assert not set(cc.skipped_for_size(100_000, 10)) & set(fits)  # the 100,000 x 10 case keeps them
    with pytest.raises(cc.CalibrationInputError, match="max_fit_cells"):
        cc.metric_report(probs, labels, max_fit_cells=0)


def test_skce_pair_order_is_the_full_lexicographic_order_with_two_sorts():
    """Issue 15: np.lexsort over 1,001 keys took 4 s per call at 50,000 x 1,000; the order is unchanged."""
    from calib_core.metrics.registry import _lexicographic_order
    rng = np.random.default_rng(0)
    for _ in range(100):
        n, k = int(rng.integers(1, 80)), int(rng.integers(1, 6))
        probs = rng.integers(0, 3, size=(n, k)) / 2.0  # many ties on every column
        labels = rng.integers(0, 2, n)
        np.testing.assert_array_equal(_lexicographic_order(probs, labels), np.lexsort((*probs.T[::-1], labels)))
    probs, labels = predictions(1, 500, 4)
    np.testing.assert_array_equal(_lexicographic_order(probs, labels), np.lexsort((*probs.T[::-1], labels)))
