"""Tests for calib_core.lab: the estimator lab, Futami bounds, subset study, pathologies, size and power."""
import math

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.lab.bounds import expected_ece, futami_bounds
from calib_core.lab.estimators import (DEFAULT_ESTIMATORS, DEFAULT_SIZES, LabEstimator, _Block, ece_estimator,
                                       lab_estimators, run_lab)
from calib_core.lab.generators import (
    LogisticNormalModel,
    UniformSimplexModel,
    binned_truth,
    futami_logistic,
    gaussian_mixture,
)
from calib_core.lab.pathologies import pathologies
from calib_core.lab.subsets import default_subset_sizes, subset_study

LESS = futami_logistic("less_calibrated")
PERFECT = gaussian_mixture("perfect")


# ----------------------------------------------------------------------------- batched estimators
@pytest.mark.parametrize("model", [LESS, gaussian_mixture("constant"), UniformSimplexModel(),
                                   LogisticNormalModel(n_classes=6, temperature=0.7)], ids=lambda m: m.name)
def test_batched_estimators_equal_the_per_test_set_functions(model):
    estimators = lab_estimators(model)
    probs, labels = model.sample_batch(700, 4, 3)
    if model.n_classes == 2 and model.b1 == 0.0:
        labels[0, :5] = 0  # the constant model: every confidence tied
    block = _Block(probs, labels)
    for key, estimator in estimators.items():
        if estimator.batch is None:
            continue
        batched = estimator.batch(block)
        single = [estimator.compute(probs[r], labels[r]) for r in range(4)]
        np.testing.assert_allclose(batched, single, rtol=1e-12, atol=1e-13, err_msg=key)


def test_batched_adaptive_bins_handle_ties_like_bin_statistics():
    probs = cc.softmax(np.round(np.random.default_rng(0).normal(size=(900, 3)), 1)).reshape(3, 300, 3)
    labels = np.random.default_rng(1).integers(0, 3, (3, 300))
    block = _Block(probs, labels)
    assert block.sorted_top[2].all()  # rounding made ties in every test set
    estimator = ece_estimator(12, "adaptive")
    expected = [cc.ece(probs[r], labels[r], n_bins=12, binning="adaptive") for r in range(3)]
    np.testing.assert_allclose(estimator.batch(block), expected, atol=1e-14)


def test_batched_top_label_is_the_one_top_label_of_each_test_set(monkeypatch):
    """Issue 24: the lab's batched top label was a twin of the top-label computation (its own arg-max and
    gather); it now stacks the test sets into the one function, with the same ties (lowest class) and values."""
    from calib_core.metrics import binned
    probs = np.round(cc.softmax(np.random.default_rng(2).normal(size=(4 * 50, 3))), 1).reshape(4, 50, 3)
    probs[0, :3] = [0.4, 0.4, 0.2]  # ties between classes: the lowest index
    labels = np.random.default_rng(3).integers(0, 3, (4, 50))
    calls = []
    real = binned.top_label
    monkeypatch.setattr(binned, "top_label", lambda p, y: calls.append(p.shape) or real(p, y))
    confidence, correct = _Block(probs, labels).top
    assert calls == [(200, 3)]  # one call for the whole block
    for r in range(4):
        expected = real(probs[r], labels[r])
        np.testing.assert_array_equal(confidence[r], expected[0])
        np.testing.assert_array_equal(correct[r], expected[1])
    assert correct[0, :3].tolist() == (labels[0, :3] == 0).astype(float).tolist()


def test_estimator_registry_targets_are_truth_keys():
    estimators = lab_estimators(LESS)
    for key in DEFAULT_ESTIMATORS + ("ece_uniform_15", "rmsce_uniform", "classwise_ece_uniform"):
        assert key in estimators
    for estimator in estimators.values():
        assert estimator.target is None or estimator.target in cc.lab.generators.TRUTH_KEYS
    assert estimators["skce"].max_n == 3000
    assert "h=" in estimators["skce"].label  # bandwidth fixed to the model's population median distance
    data = LESS.sample(1000, seed=0)
    assert estimators["ece_uniform"].compute(data.probs, data.labels) == pytest.approx(
        cc.ece(data.probs, data.labels, n_bins=cc.optimal_n_bins(1000, LESS.lipschitz)))


# ----------------------------------------------------------------------------- run_lab
def test_run_lab_tables_reproducibility_and_summary():
    result = run_lab(LESS, ["ece_uniform", "ks"], sizes=[500, 100], repetitions=6, seed=3)
    assert result.sizes == (100, 500) and result.estimators == ("ece_uniform", "ks") and not result.stopped
    assert list(result.estimates.columns) == ["estimator", "size", "repetition", "estimate"]
    assert len(result.estimates) == 2 * 2 * 6
    assert result.estimates["estimator"].tolist()[:12] == ["ece_uniform"] * 12
    again = run_lab(LESS, ["ece_uniform", "ks"], sizes=[100, 500], repetitions=6, seed=3)
    pd.testing.assert_frame_equal(result.estimates, again.estimates)
    other = run_lab(LESS, ["ece_uniform", "ks"], sizes=[100, 500], repetitions=6, seed=4)
    assert not np.allclose(result.estimates["estimate"], other.estimates["estimate"])
    summary = result.summary.set_index(["estimator", "size"])
    values = result.estimates.query("estimator == 'ks' and size == 500")["estimate"]
    row = summary.loc[("ks", 500)]
    assert row["truth"] == LESS.truth()["ks"] and row["target"] == "ks"
    assert row["mean"] == pytest.approx(values.mean()) and row["std"] == pytest.approx(values.std())
    assert row["bias"] == pytest.approx(values.mean() - LESS.truth()["ks"])
    assert row["mean_abs_error"] == pytest.approx(np.mean(np.abs(values - LESS.truth()["ks"])))
    assert row["rmse"] == pytest.approx(math.sqrt(np.mean((values - LESS.truth()["ks"]) ** 2)))
    assert row["repetitions"] == 6


def test_run_lab_estimates_equal_direct_calls_on_the_same_draws():
    result = run_lab(LESS, ["ece_adaptive_15"], sizes=[300], repetitions=3, seed=9)
    stream = np.random.SeedSequence(9).spawn(1)[0].spawn(1)[0]
    probs, labels = LESS.sample_batch(300, 3, np.random.default_rng(stream))
    expected = [cc.ece(probs[r], labels[r], n_bins=15, binning="adaptive") for r in range(3)]
    np.testing.assert_allclose(result.estimates["estimate"], expected)


def test_run_lab_blocks_progress_and_stop():
    calls = []
    result = run_lab(LESS, ["ece_uniform"], sizes=[100, 1000], repetitions=10, seed=0,
                     on_progress=lambda done, total: calls.append((done, total)), block_elements=2000)
    # n = 100: 10 test sets per block of 2000 entries; n = 1000: one per block.
    assert len(calls) == 1 + 10
    assert calls[-1] == (11_000, 11_000) and all(a[0] < b[0] for a, b in zip(calls, calls[1:]))
    checks = iter([False, False, True])
    stopped = run_lab(LESS, ["ece_uniform"], sizes=[100, 1000], repetitions=10, seed=0,
                      should_stop=lambda: next(checks), block_elements=2000)
    assert stopped.stopped
    assert stopped.estimates["size"].tolist() == [100] * 10 + [1000]
    pd.testing.assert_frame_equal(stopped.estimates, result.estimates.iloc[:11].reset_index(drop=True))
    nothing = run_lab(LESS, ["ece_uniform"], sizes=[100], repetitions=2, should_stop=lambda: True)
    assert nothing.stopped and nothing.estimates.empty and nothing.summary.empty


def test_run_lab_skips_sizes_above_max_n_and_accepts_custom_estimators():
    custom = LabEstimator("mean_confidence", "Mean confidence", None,
                          lambda p, y: float(p.max(axis=1).mean()), max_n=200)
    result = run_lab(UniformSimplexModel(), [custom, "ece_uniform"], sizes=[100, 400], repetitions=3)
    counts = result.estimates.groupby("estimator")["size"].unique()
    assert counts["mean_confidence"].tolist() == [100] and counts["ece_uniform"].tolist() == [100, 400]
    assert result.summary.query("estimator == 'mean_confidence'")["bias"].isna().all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(generator="model"), "ground-truth model"),
    (dict(estimators=["ece_magic"]), "unknown lab estimator 'ece_magic'"),
    (dict(estimators=[]), "`estimators` is empty"),
    (dict(estimators=["ks", "ks"]), "repeats a key"),
    (dict(sizes=[]), "`sizes` is empty"),
    (dict(sizes=[1, 10]), "`sizes` must hold whole numbers >= 2"),
    (dict(sizes=[100.5]), "`sizes` must hold whole numbers"),
    (dict(repetitions=0), "`repetitions` must be a whole number >= 1"),
    (dict(block_elements=0), "`block_elements` must be a whole number >= 1"),
])
def test_run_lab_validation(kwargs, match):
    arguments = dict(generator=LESS, estimators=["ks"], sizes=[100], repetitions=2)
    arguments.update(kwargs)
    with pytest.raises(CalibrationInputError, match=match):
        run_lab(**arguments)


# ----------------------------------------------------------------------------- the papers' findings
def test_gruber_d5_ece_exceeds_the_binned_truth_and_shrinks_with_n():
    """Gruber & Buettner D.5: E[ECE_n] ~ mu_(n) >= binned ECE, decreasing and convex in n."""
    sizes = [100, 1000, 10000]
    for model in (PERFECT, LogisticNormalModel(n_classes=10, temperature=1.0), LESS):
        result = run_lab(model, ["ece_uniform_15"], sizes=sizes, repetitions=40, seed=1)
        means = result.summary["mean"].to_numpy()
        truth = binned_truth(model, 15)
        assert np.all(means > truth)
        assert means[0] > means[1] > means[2]
        assert means[0] - means[1] > means[1] - means[2]  # convex
        np.testing.assert_allclose(means, expected_ece(model, sizes), rtol=0.15)
    assert binned_truth(PERFECT, 15) == 0.0


def test_gruber_d5_sensitivity_to_n_falls_as_calibration_worsens():
    drops = []
    for temperature in (1.0, 1.5, 3.0):
        model = LogisticNormalModel(n_classes=5, temperature=temperature)
        means = run_lab(model, ["ece_uniform_15"], sizes=[100, 10000], repetitions=30, seed=2).summary["mean"]
        drops.append(means.iloc[0] - means.iloc[1])
    assert drops[0] > drops[1] > drops[2] > 0


def test_futami_figure1_gap_shrinks_and_stays_below_the_bound():
    """Futami & Fujisawa Fig. 1: with the optimal B the TCE gap falls with n and under the eq. (12) bound."""
    sizes = [100, 1000, 10000, 100000]
    estimator = ece_estimator("optimal", "uniform", lipschitz=LESS.lipschitz, classwise=True, key="binary_ece")
    result = run_lab(LESS, [estimator], sizes=sizes, repetitions=20, seed=1)
    gap = result.summary["mean_abs_error"].to_numpy()
    bound = futami_bounds(sizes, None, LESS.lipschitz).total
    assert np.all(np.diff(gap) < 0)
    assert np.all(gap < bound)
    slope = np.polyfit(np.log(sizes), np.log(gap), 1)[0]
    assert -0.8 < slope < -0.2
    assert result.summary["truth"].iloc[0] == LESS.truth()["canonical_tv"]


def test_debiased_and_sweep_estimators_are_less_biased_than_the_plain_ece():
    result = run_lab(PERFECT, ["ece_adaptive", "debiased_ece", "ece_sweep"], sizes=[500], repetitions=40, seed=5)
    bias = result.summary.set_index("estimator")["bias"]
    assert bias["debiased_ece"] < 0.6 * bias["ece_adaptive"]
    assert bias["ece_sweep"] < 0.8 * bias["ece_adaptive"]


# ----------------------------------------------------------------------------- Futami bounds
def test_futami_bounds_values():
    bounds = futami_bounds(1000, 10, lipschitz=1.0)
    assert bounds.statistical[0] == pytest.approx(math.sqrt(2 * 10 * math.log(2) / 1000))
    assert bounds.binning[0] == pytest.approx(0.2)
    assert bounds.total[0] == pytest.approx(bounds.statistical[0] + 0.2)
    assert bounds.optimal_n_bins[0] == cc.optimal_n_bins(1000) == 22
    mass = futami_bounds(1000, 10, lipschitz=0.5, binning="adaptive")
    s = math.sqrt(2 * 10 * math.log(2) / 990) + 20 / 990
    assert mass.statistical[0] == pytest.approx(s)
    assert mass.binning[0] == pytest.approx(1.5 * (0.1 + s))
    assert mass.total[0] == pytest.approx(1.5 / 10 + 2.5 * s)  # eq. (12): (1+L)/B + (2+L)(...)


def test_futami_bounds_optimal_bins_minimise_the_uniform_total():
    sizes = np.array([100, 1000, 10_000, 100_000])
    optimal = futami_bounds(sizes, None, 1.0)
    np.testing.assert_array_equal(optimal.n_bins, optimal.optimal_n_bins)
    for factor in (0.5, 2.0):
        other = futami_bounds(sizes, np.maximum(1, np.round(optimal.n_bins * factor)).astype(int), 1.0)
        assert np.all(optimal.total <= other.total)
    # The total bias bound is O(n^(-1/3)) at the optimal B (eq. 13).
    slope = np.polyfit(np.log(sizes), np.log(optimal.total), 1)[0]
    assert slope == pytest.approx(-1 / 3, abs=0.03)
    frame = optimal.to_frame()
    assert list(frame.columns) == ["n", "n_bins", "statistical", "binning", "total", "optimal_n_bins"]


@pytest.mark.parametrize("args, kwargs, match", [
    ((1,), {}, "`n` must be >= 2"),
    ((100.5,), {}, "`n` must hold whole numbers"),
    ((100, 0), {}, "`n_bins` must be >= 1"),
    ((100, 2.5), {}, "`n_bins` must hold whole numbers"),
    ((100, 5, -1.0), {}, "`lipschitz` must be >= 0"),
    ((100, 100), {"binning": "adaptive"}, "n_bins` < `n`"),
    ((100, 5), {"binning": "mass"}, "`binning` must be"),
])
def test_futami_bounds_validation(args, kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        futami_bounds(*args, **kwargs)


# ----------------------------------------------------------------------------- subset study
def test_subset_study_tables_and_spread():
    data = UniformSimplexModel().sample(3000, seed=1)
    study = subset_study(data.probs, data.labels, ["ece", "brier"], repetitions=8, seed=0)
    assert study.sizes == default_subset_sizes(3000) and study.sizes[0] == 100 and study.sizes[-1] == 3000
    assert len(study.sizes) == 10 and study.n_rows == 3000
    counts = study.values.groupby("size").size()
    assert counts.loc[3000] == 2 and (counts.drop(3000) == 16).all()
    summary = study.summary.set_index(["metric", "size"])
    full = summary.loc[("ece", 3000)]
    assert full["mean"] == pytest.approx(cc.ece(data.probs, data.labels)) == full["full_value"]
    assert full["std"] == 0.0
    # Smaller subsets: the ECE estimate is biased upwards and spreads more (Gruber & Buettner G.2).
    ece = study.summary.query("metric == 'ece'").set_index("size")
    assert ece["mean"].iloc[0] > ece["mean"].iloc[-1]
    assert ece["std"].iloc[0] > 2 * ece["std"].iloc[-2]
    brier = study.summary.query("metric == 'brier'").set_index("size")
    assert abs(brier["mean"].iloc[0] - brier["full_value"].iloc[0]) < 3 * brier["std"].iloc[0] / math.sqrt(8)


def test_subset_study_custom_metrics_sizes_and_stop():
    data = LESS.sample(800, seed=2)
    seen = []
    study = subset_study(data.probs, data.labels, {"acc": cc.accuracy, "ECE": "ece"}, sizes=[100, 800, 400],
                         repetitions=3, seed=1, on_progress=lambda d, t: seen.append((d, t)))
    assert study.sizes == (100, 400, 800)
    assert set(study.values["metric"]) == {"acc", "ECE"}
    assert seen[-1] == (100 * 3 + 400 * 3 + 800, 100 * 3 + 400 * 3 + 800)
    values = study.values.query("metric == 'acc' and size == 100")["value"].to_numpy()
    rng = np.random.default_rng(1)
    first = rng.choice(800, size=100, replace=False)
    assert values[0] == pytest.approx(cc.accuracy(data.probs[first], data.labels[first]))
    stopped = subset_study(data.probs, data.labels, ["ece"], sizes=[100, 200], should_stop=lambda: True)
    assert stopped.stopped and stopped.values.empty
    assert default_subset_sizes(80) == (80,)


@pytest.mark.parametrize("kwargs, match", [
    (dict(metrics=["nope"]), "unknown metric 'nope'"),
    (dict(metrics=[]), "`metrics` is empty"),
    (dict(metrics=[3]), "`metrics` must hold metric keys or callables"),
    (dict(sizes=[100, 5000]), "must not exceed the 1000 rows"),
    (dict(sizes=[0]), "`sizes` must hold whole numbers >= 1"),
    (dict(repetitions=0), "`repetitions` must be a whole number >= 1"),
    (dict(n_bins=0), "`n_bins` must be >= 1"),
    (dict(binning="even"), "`binning` must be"),
])
def test_subset_study_validation(kwargs, match):
    data = LESS.sample(1000, seed=0)
    with pytest.raises(CalibrationInputError, match=match):
        subset_study(data.probs, data.labels, **{"metrics": ["ece"], **kwargs})


# ----------------------------------------------------------------------------- pathologies
def test_pathologies_reproduce_their_documented_numbers():
    cases = {case.key: case for case in pathologies()}
    assert list(cases) == ["nixon_cancellation", "vaicenavicius_example3", "vaicenavicius_example5",
                           "gruber_accuracy_map", "sharp_vs_constant"]
    for case in cases.values():
        assert case.title and case.explanation and case.reference
        numbers = case.compute()
        assert all(isinstance(v, float) and math.isfinite(v) for v in numbers.values())
        for key, value in case.documented.items():
            assert numbers[key] == pytest.approx(value, abs=1e-9), (case.key, key)
    nixon = cases["nixon_cancellation"].compute()
    assert nixon["ece_10_bins"] == pytest.approx(0.003, abs=1e-12)
    assert nixon["ece_100_bins"] == pytest.approx(0.465) == nixon["mean_abs_gap_per_prediction"]
    example3 = cases["vaicenavicius_example3"].compute()
    assert example3["true_classwise_tce"] == pytest.approx(0.2 / 3)
    assert example3["ece_estimate"] < 0.01 < 0.05 < example3["classwise_ece_estimate"]
    example5 = cases["vaicenavicius_example5"].compute()
    assert example5["constant_expected_estimate_n10"] == pytest.approx(0.123046875)  # sum_k C(10,k)|k/10-1/2|/2^10
    assert example5["constant_expected_estimate_n1000"] == pytest.approx(1 / math.sqrt(2 * math.pi * 1000), rel=0.01)


def test_gruber_accuracy_map_and_sharp_vs_constant_numbers():
    cases = {case.key: case for case in pathologies()}
    mapped = cases["gruber_accuracy_map"].compute()
    assert mapped["accuracy_after"] == mapped["accuracy_before"]
    assert mapped["ece_after"] == pytest.approx(0.0, abs=1e-12)
    assert mapped["ece_before"] > 1e-3
    assert mapped["true_canonical_tv_after"] > 0.02 and mapped["classwise_ece_after"] > 0
    assert mapped["brier_after"] > mapped["brier_before"]
    sharp = cases["sharp_vs_constant"].compute()
    assert sharp["perfect_accuracy"] > 0.84 > 0.5 == sharp["constant_accuracy"]
    assert sharp["perfect_brier"] < sharp["constant_brier"]
    assert sharp["perfect_mean_ece_100_bins_n1000"] > 2 * sharp["perfect_mean_ece_10_bins_n1000"]
    assert sharp["constant_mean_ece_100_bins_n1000"] == sharp["constant_mean_ece_10_bins_n1000"]


def test_default_sizes():
    assert DEFAULT_SIZES[0] == 100 and DEFAULT_SIZES[-1] == 100_000 and len(DEFAULT_SIZES) == 8


# =========================================================================== size and power of the calibration tests
from calib_core.lab import size_power as sp  # noqa: E402


def test_binomial_interval_matches_scipy_binomtest():
    from scipy.stats import binomtest

    for k, n in [(0, 50), (10, 200), (37, 37), (3, 20)]:
        low, high = sp.binomial_interval(k, n)
        exact = binomtest(k, n).proportion_ci(0.95, method="exact")
        assert (float(low), float(high)) == pytest.approx((exact.low, exact.high), abs=1e-10)
        low, high = sp.binomial_interval(k, n, method="wilson")
        wilson = binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert (float(low), float(high)) == pytest.approx((wilson.low, wilson.high), abs=1e-10)
    with pytest.raises(CalibrationInputError, match="successes <= trials"):
        sp.binomial_interval(5, 4)


def test_binomial_wilson_interval_is_the_reliability_tables_wilson_interval(monkeypatch):
    """One Wilson interval (issue 24): the lab's measured sizes and the reliability bins share one formula."""
    seen = []

    def spy(successes, trials, alpha=0.05):
        seen.append(alpha)
        return cc.wilson_interval(successes, trials, alpha)

    monkeypatch.setattr(sp, "wilson_interval", spy)
    low, high = sp.binomial_interval(np.array([3, 10]), np.array([20, 200]), level=0.9, method="wilson")
    assert seen == [pytest.approx(0.1)]
    expected = cc.wilson_interval([3, 10], [20, 200], 1.0 - 0.9)
    assert low.tolist() == expected[0].tolist() and high.tolist() == expected[1].tolist()


def test_spiegelhalter_size_is_near_alpha_on_calibrated_data():
    """Small R, wide tolerance: the exact 99.9% interval of 400 runs at 0.05 is about 0.02-0.09."""
    result = cc.size_and_power(methods=["spiegelhalter"], size_n=300, sizes=[], repetitions=400, seed=3)
    (row,) = result.size.itertuples()
    assert row.repetitions == 400 and 0.015 <= row.rate <= 0.095
    assert row.ci_low <= row.rate <= row.ci_high
    assert result.power.empty and result.calibrated.startswith("Logistic model (b0=0, b1=-2)")


def test_power_increases_with_n_on_a_miscalibrated_generator():
    """Futami & Fujisawa's less calibrated logistic model (the default): power ~0.1 at n = 100, ~0.9 at 1,600."""
    result = cc.size_and_power(methods=["spiegelhalter", "consistency"], size_n=100, sizes=[100, 400, 1600],
                               repetitions=60, seed=1)
    for test, part in result.power.groupby("test"):
        rates = part.sort_values("n")["rate"].to_numpy()
        assert np.all(np.diff(rates) >= 0) and rates[-1] - rates[0] >= 0.3, (test, rates)
    assert result.miscalibrated == cc.futami_logistic("less_calibrated").name


def test_hosmer_lemeshow_with_g_minus_2_dof_is_flagged_and_g_dof_is_not():
    methods = {"hl": ("hosmer_lemeshow", {}), "hl_g": ("hosmer_lemeshow", {"dof_offset": 0})}
    result = cc.size_and_power(methods=methods, size_n=500, sizes=[], repetitions=600, seed=0)
    size = result.size.set_index("test")
    assert size.loc["hl", "flagged"] and size.loc["hl", "conclusive"] and size.loc["hl", "rate"] > 0.08
    assert not size.loc["hl_g", "flagged"]
    assert result.flagged == ("hl",) and "real defect" in result.flags["hl"]


def test_size_and_power_is_seeded_and_cells_do_not_depend_on_each_other():
    a = cc.size_and_power(methods=["spiegelhalter"], size_n=100, sizes=[100, 200], repetitions=30, seed=5)
    b = cc.size_and_power(methods=["spiegelhalter"], size_n=100, sizes=[200], repetitions=30, seed=5)
    pd.testing.assert_frame_equal(a.size, b.size)
    pd.testing.assert_frame_equal(a.power[a.power["n"] == 200].reset_index(drop=True), b.power)


def test_size_and_power_stops_when_asked():
    calls = []
    result = cc.size_and_power(methods=["spiegelhalter"], size_n=100, sizes=[100, 200], repetitions=20,
                               should_stop=lambda: len(calls) > 0, on_progress=lambda d, t: calls.append(d))
    assert result.stopped and len(result.size) == 1 and result.power.empty


def test_size_and_power_refuses_bad_settings():
    with pytest.raises(CalibrationInputError, match="calibrated model"):
        cc.size_and_power(cc.futami_logistic(), methods=["spiegelhalter"], sizes=[], repetitions=5)
    with pytest.raises(CalibrationInputError, match="`method`"):
        cc.size_and_power(methods=["chi2"], sizes=[], repetitions=5)
    with pytest.raises(CalibrationInputError, match="`sizes`"):
        cc.size_and_power(methods=["spiegelhalter"], sizes=[2], repetitions=5)
    with pytest.raises(CalibrationInputError, match="set by the lab"):
        cc.size_and_power(methods={"x": ("skce", {"seed": 1})}, sizes=[], repetitions=5)


def test_documented_size_flags_agree_with_a_fresh_measurement():
    """SIZE_NOTES / FLAGGED_TESTS (shown on the Metrics page and in the CLI) match what the lab measures."""
    result = cc.size_and_power(methods=["hosmer_lemeshow", "spiegelhalter"], size_n=500, sizes=[],
                               repetitions=800, seed=11)
    conclusive = set(result.size.loc[result.size["conclusive"], "test"])
    assert conclusive == set(sp.FLAGGED_TESTS) & {"hosmer_lemeshow", "spiegelhalter"}
    for method in cc.TEST_METHODS:
        assert sp.SIZE_NOTES[method].startswith("FLAGGED") == (method in sp.FLAGGED_TESTS)


@pytest.mark.slow
def test_skce_default_size_is_within_the_band_and_not_flagged():
    """The default SKCE test (blocks of sqrt(N) rows, exact null variance) on the Lab's calibrated model:
    measured size inside [0.03, 0.07] and no flag, at a small and a moderate N (docs/tests.md has R = 2,000)."""
    result = cc.size_and_power(methods=["skce"], size_n=[100, 500], sizes=[], repetitions=600, seed=7)
    for row in result.size.itertuples():
        assert sp.SIZE_BAND[0] <= row.rate <= sp.SIZE_BAND[1], (row.n, row.rate)
        assert not row.conclusive
    assert "skce" not in result.flagged and "skce" not in sp.FLAGGED_TESTS
