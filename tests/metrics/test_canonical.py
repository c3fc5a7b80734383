"""Tests of calib_core.metrics.canonical: canonical_ce, lenses, consistency resampling and bands."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import calib_core as cc
from calib_core._accel import KeptValues
from tests.compiled_support import require_kernel

CIE = cc.CalibrationInputError


def dirichlet(n, k, seed, alpha=1.0):
    return np.random.default_rng(seed).dirichlet(np.full(k, alpha), size=n)


def calibrated(n, k, seed, alpha=0.5):
    probs = dirichlet(n, k, seed, alpha)
    return probs, cc.sample_labels(probs, seed=seed + 1000)[0]


def overconfident(n, k, seed, factor=2.0):
    logits = np.random.default_rng(seed).normal(size=(n, k)) * 2
    return cc.softmax(logits), cc.sample_labels(cc.softmax(logits / factor), seed=seed + 1)[0]


# ----------------------------------------------------------------------------
# Example 3: calibrated by top label, not canonically (appendix A.1)
# ----------------------------------------------------------------------------

def example_3(n_per_prediction=500):
    """Two predictions with equal probability; labels in exactly the true proportions.

    g(X) = (0.1, 0.3, 0.6) with P(Y | g(X)) = (0.2, 0.2, 0.6) and
    g(X) = (0.6, 0.3, 0.1) with P(Y | g(X)) = (0.6, 0.2, 0.2): the top-label
    confidence 0.6 is right, every marginal is wrong (the table of the
    example is not in the text we have; this is one instance of it).
    """
    m = n_per_prediction
    probs = np.repeat([[0.1, 0.3, 0.6], [0.6, 0.3, 0.1]], m, axis=0)
    first = np.repeat([0, 1, 2], [m // 5, m // 5, m - 2 * (m // 5)])
    second = np.repeat([0, 1, 2], [m - 2 * (m // 5), m // 5, m // 5])
    return probs, np.concatenate([first, second])


def test_example_3_top_label_calibrated_but_not_canonically():
    probs, labels = example_3()
    assert cc.ece(probs, labels) == pytest.approx(0.0, abs=1e-12)
    assert cc.canonical_ce(probs, labels, lens="max") == pytest.approx(0.0, abs=1e-12)
    # Each prediction is off by 0.1 in total variation: 0.5 * (0.1 + 0.1 + 0).
    assert cc.canonical_ce(probs, labels) == pytest.approx(0.1)
    assert cc.canonical_ce(probs, labels, "sq_euclidean") == pytest.approx(0.02)
    # One cell for everything (N <= min_bin_size) or split: still 0.1 in TV.
    assert cc.canonical_ce(probs, labels, partition="data_dependent") == pytest.approx(0.1)
    assert cc.canonical_ce(probs, labels, partition="data_dependent", min_bin_size=100) == pytest.approx(0.1)
    # The marginal of class 1 is always predicted 0.3 and happens 20% of the time.
    assert cc.canonical_ce(probs, labels, lens="marginal", class_index=1) == pytest.approx(0.1)
    assert cc.classwise_ece(probs, labels) > 0.05


def test_example_3_consistency_resampling_flags_only_the_canonical_lens():
    probs, labels = example_3()
    canonical = cc.consistency_resampling(probs, labels, cc.CanonicalCE(), n_resamples=300, seed=0)
    top = cc.consistency_resampling(probs, labels, cc.ece, n_resamples=300, seed=0)
    assert canonical.p_value < 0.01 and canonical.observed > canonical.upper
    assert top.p_value > 0.5


# ----------------------------------------------------------------------------
# Example 5: different biases of calibrated models (appendix A.1)
# ----------------------------------------------------------------------------

def test_example_5_single_point_single_bin():
    one_bin = {"partition": "data_dependent", "min_bin_size": 1000}
    for label in (0, 1):
        perfect = np.eye(2)[[label]]
        assert cc.canonical_ce(perfect, [label], **one_bin) == 0.0
        assert cc.canonical_ce([[0.5, 0.5]], [label], **one_bin) == 0.5


def test_example_5_biases_under_consistency_resampling():
    # Balanced separable problem: the perfect model predicts the one-hot label,
    # the constant model (1/2, 1/2). Both are calibrated (eta_TV = 0); the
    # estimator's mean under calibration (eta_hat_id) is its bias.
    one_bin = cc.CanonicalCE(partition="data_dependent", min_bin_size=1000)
    labels = np.array([0, 1] * 10)
    perfect = np.eye(2)[labels]
    constant = np.full((20, 2), 0.5)
    res_perfect = cc.consistency_resampling(perfect, labels, one_bin, n_resamples=500, seed=1)
    res_constant = cc.consistency_resampling(constant, labels, one_bin, n_resamples=500, seed=1)
    assert res_perfect.resampled_mean == 0.0 and res_perfect.observed == 0.0
    # E|Binomial(20, 1/2)/20 - 1/2| = C(20,10) / 2**21 ~ 0.0881
    from math import comb
    assert res_constant.resampled_mean == pytest.approx(comb(20, 10) / 2**21, abs=0.01)
    single = cc.consistency_resampling([[0.5, 0.5]], [0], one_bin, n_resamples=200, seed=1)
    assert single.resampled_mean == 0.5 and single.p_value == 1.0


# ----------------------------------------------------------------------------
# Agreement with the binned metrics and hand-computed values
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("n_classes", [2, 3, 10])
@pytest.mark.parametrize("n_bins", [1, 5, 15])
def test_max_lens_is_top_label_ece_and_marginal_lens_is_classwise(n_classes, n_bins):
    probs = dirichlet(2000, n_classes, n_bins, alpha=0.5)
    labels = np.random.default_rng(n_classes).integers(0, n_classes, 2000)
    assert cc.canonical_ce(probs, labels, n_bins=n_bins, lens="max") == pytest.approx(
        cc.ece(probs, labels, n_bins=n_bins), abs=1e-12)
    per_class = cc.classwise_ece(probs, labels, n_bins=n_bins, per_class=True)
    for k in (0, n_classes - 1):
        assert cc.canonical_ce(probs, labels, n_bins=n_bins, lens="marginal", class_index=k) == pytest.approx(
            per_class[k], abs=1e-12)
    # Two-class vectors: Euclidean = sqrt(2) * TV, squared Euclidean = 2 * gap**2.
    tv = cc.canonical_ce_table(probs, labels, "tv", n_bins=n_bins, lens="max")
    assert cc.canonical_ce(probs, labels, "euclidean", n_bins=n_bins, lens="max") == pytest.approx(
        np.sqrt(2) * tv.estimate)
    assert cc.canonical_ce(probs, labels, "sq_euclidean", n_bins=n_bins, lens="max") == pytest.approx(
        2 * np.sum(tv.weight * tv.deviation**2))


def test_binary_canonical_lens_is_class_0_marginal():
    values = np.concatenate([np.linspace(0, 1, 11), np.random.default_rng(0).random(300)])
    probs = np.column_stack([values, 1 - values])
    labels = (np.random.default_rng(1).random(values.size) < 0.4).astype(int)
    for n_bins in (2, 10):
        assert cc.canonical_ce(probs, labels, n_bins=n_bins) == pytest.approx(
            cc.classwise_ece(probs, labels, n_bins=n_bins, per_class=True)[0], abs=1e-12)


def test_canonical_ce_hand_case_uniform_three_classes():
    probs = [[0.8, 0.1, 0.1], [0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.1, 0.2, 0.7]]
    labels = [0, 1, 2, 2]
    # n_bins=2: rows 0-1 share the corner cell (1, 0, 0), rows 2-3 the cell (0, 0, 1).
    # cell A: mean (0.75, 0.15, 0.1), freq (0.5, 0.5, 0) -> TV 0.35
    # cell B: mean (0.1, 0.15, 0.75), freq (0, 0, 1)     -> TV 0.25
    table = cc.canonical_ce_table(probs, labels, n_bins=2)
    assert table.n_cells == 2
    assert table.estimate == pytest.approx(0.5 * 0.35 + 0.5 * 0.25)
    assert cc.canonical_ce(probs, labels, "sq_euclidean", n_bins=2) == pytest.approx(
        0.5 * (0.25**2 + 0.35**2 + 0.1**2) + 0.5 * (0.1**2 + 0.15**2 + 0.25**2))
    # n_bins=10 separates all four predictions.
    assert cc.canonical_ce(probs, labels, n_bins=10) == pytest.approx(np.mean([0.2, 0.8, 0.2, 0.3]))


def test_canonical_ce_equals_table_estimate_and_lens_view():
    probs, labels = overconfident(3000, 4, 0)
    for kwargs in ({}, {"partition": "data_dependent", "min_bin_size": 200}, {"lens": "max"},
                   {"lens": "marginal", "class_index": 2, "distance": "sq_euclidean"}):
        table = cc.canonical_ce_table(probs, labels, **kwargs)
        assert cc.canonical_ce(probs, labels, **kwargs) == table.estimate
        assert table.count.sum() == 3000
    points, outcomes = cc.lens_view(probs, labels, "max")
    np.testing.assert_allclose(points[:, 0], probs.max(1))
    np.testing.assert_array_equal(outcomes == 0, probs.argmax(1) == labels)
    points, outcomes = cc.lens_view(probs, labels, "marginal", class_index=1)
    np.testing.assert_array_equal(points[:, 0], probs[:, 1])
    np.testing.assert_array_equal(outcomes == 0, labels == 1)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(1, 300), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_finer_partitions_never_decrease_the_estimate(n_classes, n, n_bins, seed):
    # Merging cells averages (observed, mean) pairs, and both distances are
    # jointly convex, so a refinement can only increase eq. (6) (Theorem 2's Jensen step).
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(n_classes, 0.5), size=n)
    labels = rng.integers(0, n_classes, n)
    for distance in ("tv", "sq_euclidean"):
        coarse = cc.canonical_ce(probs, labels, distance, n_bins=n_bins)
        fine = cc.canonical_ce(probs, labels, distance, n_bins=2 * n_bins)
        assert fine >= coarse - 1e-12
        big = cc.canonical_ce(probs, labels, distance, "data_dependent", min_bin_size=40)
        small = cc.canonical_ce(probs, labels, distance, "data_dependent", min_bin_size=10)
        assert small >= big - 1e-12
    assert 0.0 <= cc.canonical_ce(probs, labels) <= 1.0
    perm = rng.permutation(n)
    assert cc.canonical_ce(probs[perm], labels[perm], n_bins=n_bins) == pytest.approx(
        cc.canonical_ce(probs, labels, n_bins=n_bins), abs=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"distance": "l1"}, "distance"),
    ({"partition": "adaptive"}, "partition"),
    ({"n_bins": 0}, "n_bins"),
    ({"min_bin_size": 0}, "min_bin_size"),
    ({"lens": "top"}, "lens"),
    ({"lens": "marginal"}, "needs `class_index`"),
    ({"lens": "marginal", "class_index": 3}, "class_index"),
    ({"lens": "marginal", "class_index": -1}, "class_index"),
    ({"lens": "max", "class_index": 1}, "only used with lens='marginal'"),
])
def test_canonical_ce_rejects_options(kwargs, match):
    probs = dirichlet(10, 3, 0)
    with pytest.raises(CIE, match=match):
        cc.canonical_ce(probs, np.zeros(10, dtype=int), **kwargs)
    with pytest.raises(CIE, match=match):
        cc.canonical_ce_table(probs, np.zeros(10, dtype=int), **kwargs)


def test_canonical_ce_validates_inputs():
    with pytest.raises(CIE, match="sum to 1"):
        cc.canonical_ce([[0.2, 0.2]], [0])
    with pytest.raises(CIE, match="labels"):
        cc.canonical_ce([[0.5, 0.5]], [2])
    with pytest.raises(CIE, match="NaN"):
        cc.canonical_ce([[np.nan, 1.0]], [0])


# ----------------------------------------------------------------------------
# Label sampling
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("n_classes", [2, 5, 40])  # 40 uses the binary-search path
def test_sample_labels_follow_the_predictions(n_classes):
    probs = dirichlet(30, n_classes, n_classes, alpha=0.5)
    probs[:, 0] = 0.0  # a class with probability 0 is never drawn
    probs /= probs.sum(1, keepdims=True)
    draws = cc.sample_labels(probs, 4000, seed=0)
    assert draws.shape == (4000, 30) and draws.dtype == np.intp
    assert not (draws == 0).any()
    freq = np.stack([(draws == k).mean(0) for k in range(n_classes)], axis=1)
    assert np.abs(freq - probs).max() < 5 * np.sqrt(0.25 / 4000)
    np.testing.assert_array_equal(draws, cc.sample_labels(probs, 4000, seed=0))


def test_sample_labels_degenerate_and_validation():
    assert cc.sample_labels([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], 3, seed=1).tolist() == [[2, 0]] * 3
    with pytest.raises(CIE, match="n_draws"):
        cc.sample_labels([[0.5, 0.5]], 0)
    with pytest.raises(CIE, match="sum to 1"):
        cc.sample_labels([[0.5, 0.6]])


# ----------------------------------------------------------------------------
# consistency_resampling
# ----------------------------------------------------------------------------

def test_batched_and_per_draw_paths_agree():
    probs, labels = overconfident(400, 4, 3)
    for estimator in (cc.CanonicalCE(), cc.CanonicalCE(partition="data_dependent", min_bin_size=50,
                                                       distance="sq_euclidean"),
                      cc.CanonicalCE(lens="marginal", class_index=2, distance="euclidean")):
        plain = functools.partial(cc.canonical_ce, distance=estimator.distance, partition=estimator.partition,
                                  min_bin_size=estimator.min_bin_size, lens=estimator.lens,
                                  class_index=estimator.class_index)
        fast = cc.consistency_resampling(probs, labels, estimator, n_resamples=60, seed=7)
        slow = cc.consistency_resampling(probs, labels, plain, n_resamples=60, seed=7)
        np.testing.assert_allclose(fast.resampled, slow.resampled, atol=1e-12)
        assert fast.observed == pytest.approx(slow.observed)
        assert fast.p_value == slow.p_value



@pytest.mark.parametrize("n_classes", [2, 5, 40])  # 40: above the comparison sampler, the flat search
@pytest.mark.parametrize("lens, class_index, distance", [("max", None, "tv"), ("max", None, "euclidean"),
                                                          ("marginal", 1, "sq_euclidean")])
def test_two_class_lenses_draw_their_outcome_and_agree_with_whole_labels(n_classes, lens, class_index, distance):
    """Issue 15: a two-class lens draws ``label != reference`` from the same uniforms (two comparisons per
    entry, no label) and counts cells with one matrix product; the draws and values are those of whole labels."""
    from calib_core.inference import draws
    probs, labels = overconfident(600, n_classes, 5)
    for partition in ("uniform", "data_dependent"):
        estimator = cc.CanonicalCE(lens=lens, class_index=class_index, distance=distance, partition=partition,
                                   min_bin_size=60)
        reference, _ = estimator.outcome_evaluator(probs)
        sampler = draws._LabelSampler(probs)
        whole = sampler.draw(np.random.default_rng(3), 30)
        np.testing.assert_array_equal(sampler.draw_other(np.random.default_rng(3), 30, reference),
                                      whole != reference)
        fast = cc.consistency_resampling(probs, labels, estimator, n_resamples=50, seed=7)
        by_labels = estimator.draw_evaluator(probs)
        slow = cc.consistency_resampling(probs, labels, lambda p, y: float(by_labels(np.asarray(y)[None])[0]),
                                         n_resamples=50, seed=7)
        np.testing.assert_allclose(fast.resampled, slow.resampled, rtol=0, atol=1e-12)
        assert fast.p_value == slow.p_value
    assert cc.CanonicalCE().outcome_evaluator(probs) is None  # the canonical lens needs whole labels


def test_two_class_cell_counts_by_matrix_product_equal_the_general_cell_sums():
    from calib_core.inference import draws as drawing
    from calib_core.metrics.simplex import data_dependent_partition, uniform_partition
    rng = np.random.default_rng(11)
    value = rng.uniform(size=2000)
    points = np.column_stack([value, 1.0 - value])
    draws = (rng.uniform(size=(25, 2000)) < value).astype(np.uint8)
    distances = ("tv", "sq_euclidean", "euclidean")
    for part in (uniform_partition(points, 15), data_dependent_partition(points, 100)):
        np.testing.assert_allclose(
            drawing._two_class_cell_estimates(points, part.cell_index, part.n_cells, draws, distances),
            drawing._resampled_cell_estimates(points, part.cell_index, part.n_cells, draws, distances),
            rtol=0, atol=1e-14)

def test_consistency_result_fields():
    probs, labels = calibrated(500, 3, 0)
    seen = []
    res = cc.consistency_resampling(probs, labels, cc.ece, n_resamples=200, seed=3,
                                    quantiles=(0.1, 0.9), on_progress=lambda done, total: seen.append((done, total)))
    values = res.resampled
    assert values.shape == (200,) and res.n_resamples == 200
    assert res.observed == pytest.approx(cc.ece(probs, labels))
    assert res.lower == pytest.approx(np.quantile(values, 0.1))
    assert res.upper == pytest.approx(np.quantile(values, 0.9))
    assert res.resampled_mean == pytest.approx(values.mean())
    assert res.resampled_std == pytest.approx(values.std(ddof=1))
    assert res.p_value == pytest.approx((1 + np.sum(values >= res.observed)) / 201)
    assert res.excess == pytest.approx(res.observed - res.resampled_mean)
    assert res.quantiles == (0.1, 0.9)
    assert seen[-1] == (200, 200)
    again = cc.consistency_resampling(probs, labels, cc.ece, n_resamples=200, seed=3, quantiles=(0.1, 0.9))
    np.testing.assert_array_equal(again.resampled, values)


def test_consistency_resampling_draws_from_predictions():
    # An estimator that reports the share of label 1: its resampled mean is the mean of probs[:, 1].
    probs = dirichlet(1000, 3, 4)
    share = lambda p, y: float(np.mean(np.asarray(y) == 1))  # noqa: E731
    res = cc.consistency_resampling(probs, np.zeros(1000, dtype=int), share, n_resamples=300, seed=0)
    assert res.resampled_mean == pytest.approx(probs[:, 1].mean(), abs=0.005)
    assert res.observed == 0.0 and res.p_value == 1.0


def test_p_values_roughly_uniform_under_calibration():
    estimator = cc.CanonicalCE(n_bins=3)
    p_calibrated, p_miscalibrated = [], []
    for seed in range(50):
        probs, labels = calibrated(300, 3, seed, alpha=1.0)
        p_calibrated.append(cc.consistency_resampling(probs, labels, estimator, n_resamples=99, seed=seed).p_value)
        probs, labels = overconfident(300, 3, seed, factor=3.0)
        p_miscalibrated.append(cc.consistency_resampling(probs, labels, estimator, n_resamples=99, seed=seed).p_value)
    p_calibrated = np.array(p_calibrated)
    assert stats.kstest(p_calibrated, "uniform").pvalue > 0.01
    assert 0.0 <= np.mean(p_calibrated <= 0.1) <= 0.25
    assert 0.3 <= np.median(p_calibrated) <= 0.7
    assert np.mean(np.array(p_miscalibrated) <= 0.05) > 0.9


@pytest.mark.parametrize("kwargs, match", [
    ({"estimator": "ece"}, "callable"),
    ({"n_resamples": 0}, "n_resamples"),
    ({"quantiles": (0.9, 0.1)}, "quantiles"),
    ({"quantiles": (0.1,)}, "quantiles"),
    ({"quantiles": (-0.1, 0.5)}, "quantiles"),
])
def test_consistency_resampling_rejects(kwargs, match):
    probs, labels = calibrated(20, 3, 0)
    args = {"estimator": cc.ece, **kwargs}
    with pytest.raises(CIE, match=match):
        cc.consistency_resampling(probs, labels, **args)


def test_canonical_estimator_object():
    probs, labels = overconfident(500, 5, 1)
    est = cc.CanonicalCE(distance="sq_euclidean", partition="data_dependent", min_bin_size=100)
    assert est(probs, labels) == cc.canonical_ce(probs, labels, "sq_euclidean", "data_dependent", min_bin_size=100)
    draws = cc.sample_labels(probs, 3, seed=0)
    np.testing.assert_allclose(est.evaluate_draws(probs, draws), [est(probs, d) for d in draws], atol=1e-12)
    with pytest.raises(CIE, match="distance"):
        cc.CanonicalCE(distance="kl")
    with pytest.raises(CIE, match="class_index"):
        cc.CanonicalCE(lens="marginal")
    with pytest.raises(CIE, match="label_draws"):
        est.evaluate_draws(probs, draws[:, :10])
    with pytest.raises(CIE, match="label_draws"):
        est.evaluate_draws(probs, draws + 5)
    with pytest.raises(CIE, match="class_index"):
        cc.CanonicalCE(lens="marginal", class_index=7).evaluate_draws(probs, draws)


# ----------------------------------------------------------------------------
# consistency_bands
# ----------------------------------------------------------------------------

def test_consistency_bands_cover_calibrated_frequencies():
    probs, labels = calibrated(20_000, 4, 2)
    bands = cc.consistency_bands(probs, labels, n_bins=10, n_resamples=400, seed=0)
    stats_ = cc.bin_statistics(probs.max(1), (probs.argmax(1) == labels).astype(float), 10, "uniform")
    keep = stats_.count > 0
    np.testing.assert_array_equal(bands.count, stats_.count[keep])
    np.testing.assert_allclose(bands.mean_value, stats_.mean_value[keep])
    np.testing.assert_allclose(bands.observed_frequency, stats_.mean_target[keep])
    assert (bands.frequency_low <= bands.mean_value + 1e-12).all()
    assert (bands.frequency_high >= bands.mean_value - 1e-12).all()
    assert np.mean(bands.outside) <= 0.3  # a 90% band misses ~10% of bins
    # The band's width shrinks like 1/sqrt(count): compare with the binomial quantiles.
    width = bands.frequency_high - bands.frequency_low
    expected = 2 * 1.645 * np.sqrt(bands.mean_value * (1 - bands.mean_value) / bands.count)
    big = bands.count > 500
    np.testing.assert_allclose(width[big], expected[big], rtol=0.25)
    np.testing.assert_allclose(bands.deviation_low, bands.frequency_low - bands.mean_value)
    assert list(bands.to_frame().columns)[:3] == ["lower", "upper", "count"]


def test_consistency_bands_flag_miscalibration_and_class_targets():
    probs, labels = overconfident(20_000, 4, 3, factor=2.0)
    bands = cc.consistency_bands(probs, labels, n_bins=10, n_resamples=300, seed=1)
    assert np.mean(bands.outside) > 0.5
    marginal = cc.consistency_bands(probs, labels, n_bins=8, binning="adaptive", target=2, n_resamples=100, seed=1)
    assert marginal.target == 2 and marginal.count.sum() == 20_000
    assert (marginal.frequency_low <= marginal.frequency_high).all()


def test_consistency_bands_deterministic_cases():
    probs = np.array([[1.0, 0.0]] * 5 + [[0.5, 0.5]] * 5)
    bands = cc.consistency_bands(probs, [0] * 10, n_bins=4, target=0, n_resamples=50, seed=0)
    assert bands.count.tolist() == [5.0, 5.0]
    assert bands.frequency_low[1] == 1.0 and bands.frequency_high[1] == 1.0


@pytest.mark.parametrize("kwargs, match", [
    ({"target": "max"}, "target"),
    ({"target": 5}, "target"),
    ({"binning": "quantile"}, "binning"),
    ({"n_bins": 0}, "n_bins"),
    ({"n_resamples": -1}, "n_resamples"),
    ({"quantiles": (0.5, 0.5)}, "quantiles"),
])
def test_consistency_bands_rejects(kwargs, match):
    probs, labels = calibrated(20, 3, 0)
    with pytest.raises(CIE, match=match):
        cc.consistency_bands(probs, labels, **kwargs)


# ----------------------------------------------------------------------------
# lens_estimates (Tables 3-5)
# ----------------------------------------------------------------------------

def test_lens_estimates_rows_and_values():
    probs, labels = overconfident(2000, 5, 4)
    table = cc.lens_estimates(probs, labels, n_resamples=100, n_bootstrap=20, seed=0, n_bins=5, min_bin_size=300)
    assert len(table.rows) == 8
    for row in table.rows:
        assert row.estimate == pytest.approx(cc.canonical_ce(probs, labels, row.distance, row.partition, 5, 300,
                                                             row.lens))
        assert row.estimate_sd > 0 and row.resampled_sd > 0
        assert 0 < row.p_value <= 1
    row = table.get("canonical", "tv", "data_dependent")
    direct = cc.consistency_resampling(probs, labels, cc.CanonicalCE(partition="data_dependent", min_bin_size=300),
                                       n_resamples=300, seed=5)
    assert row.resampled_mean == pytest.approx(direct.resampled_mean, abs=4 * direct.resampled_std / np.sqrt(100))
    # The overconfident model is far outside its calibrated spread on the max lens.
    assert table.get("max", "tv", "uniform").p_value < 0.02
    frame = table.to_frame()
    assert frame.shape == (8, 10) and set(frame["lens"]) == {"canonical", "max"}
    with pytest.raises(CIE, match="no row"):
        table.get("marginal", "tv", "uniform")


def test_lens_estimates_calibrated_model_is_near_its_resampled_value():
    probs, labels = calibrated(3000, 3, 6)
    table = cc.lens_estimates(probs, labels, n_resamples=200, n_bootstrap=10, seed=1, n_bins=4,
                              min_bin_size=500, lenses=("max",), distances=("tv",))
    assert len(table.rows) == 2
    for row in table.rows:
        assert abs(row.estimate - row.resampled_mean) < 4 * row.resampled_sd


@pytest.mark.parametrize("kwargs, match", [
    ({"n_bootstrap": 1}, "n_bootstrap"),
    ({"n_resamples": 0}, "n_resamples"),
    ({"lenses": ("marginal",)}, "lenses"),
    ({"distances": ("kl",)}, "distances"),
    ({"lenses": ()}, "at least one"),
])
def test_lens_estimates_rejects(kwargs, match):
    probs, labels = calibrated(30, 3, 0)
    with pytest.raises(CIE, match=match):
        cc.lens_estimates(probs, labels, **kwargs)


@pytest.mark.parametrize("distance", ["tv", "sq_euclidean", "euclidean"])
@pytest.mark.parametrize("partition", ["uniform", "data_dependent"])
def test_batched_draws_match_one_call_per_draw_with_single_prediction_cells(distance, partition):
    # A fine grid in 6 dimensions: many cells hold one prediction (the closed-form path), others several.
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(6, 0.7), size=1500)
    draws = cc.sample_labels(probs, 4, seed=2)
    evaluate = cc.CanonicalCE(distance, partition, 6, 100).draw_evaluator(probs)
    direct = [cc.canonical_ce(probs, labels, distance, partition, 6, 100) for labels in draws]
    np.testing.assert_allclose(evaluate(draws), direct, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------
# Verdicts (issue 11, item 2): ConsistencyResult.verdict and verdict_reason
# ----------------------------------------------------------------------------

def test_verdict_below_the_band_is_inconclusive_digits_random_forest():
    """The reported case: canonical_ce 0.2608 below its band 0.28-0.30 was shown as 'no sign of miscalibration'."""
    demo = cc.load_demo("digits_random_forest")
    res = cc.consistency_resampling(demo.probs, demo.labels, cc.CanonicalCE(), n_resamples=200, seed=0)
    assert res.observed < res.lower and res.below_band
    assert res.p_value > 0.95
    assert res.verdict == "inconclusive"
    reason = res.verdict_reason
    assert "below its band" in reason and "not evidence of calibration" in reason
    assert res.occupancy is not None and res.occupancy.sparse and res.occupancy.median_rows == 1.0
    # The advice names settings that do give the test power, and they do on this model.
    assert "min_bin_size=" in reason and "n_bins=" in reason and "lens='max'" in reason
    size = int(reason.split("min_bin_size=")[1].split(")")[0])
    n_bins = int(reason.split("n_bins=")[1].split(")")[0])
    for estimator in (cc.CanonicalCE(partition="data_dependent", min_bin_size=size), cc.CanonicalCE(n_bins=n_bins),
                      cc.CanonicalCE(lens="max")):
        better = cc.consistency_resampling(demo.probs, demo.labels, estimator, n_resamples=200, seed=0)
        assert not better.occupancy.sparse
        assert better.verdict == "miscalibrated", better.verdict_reason


def test_verdict_sparse_cells_inside_the_band_is_inconclusive():
    probs, labels = calibrated(300, 10, 5)
    res = cc.consistency_resampling(probs, labels, cc.CanonicalCE(n_bins=10), n_resamples=200, seed=1)
    assert not res.below_band and res.p_value >= 0.05  # neither of the other rules applies
    assert res.occupancy.sparse
    assert res.verdict == "inconclusive"
    assert "fewer than 5 rows" in res.verdict_reason and "To let the test detect miscalibration" in res.verdict_reason


def test_verdict_miscalibrated_and_consistent():
    probs, labels = overconfident(1500, 3, 2)
    bad = cc.consistency_resampling(probs, labels, cc.CanonicalCE(lens="max", n_bins=10), n_resamples=200, seed=0)
    assert bad.p_value < 0.05 and bad.verdict == "miscalibrated"
    assert "α = 0.05" in bad.verdict_reason
    probs, labels = calibrated(3000, 3, 3)
    good = cc.consistency_resampling(probs, labels, cc.CanonicalCE(lens="max", n_bins=10), n_resamples=200, seed=0)
    assert good.p_value >= 0.05 and not good.below_band and not good.occupancy.sparse
    assert good.verdict == "consistent"


def test_verdict_rejection_in_sparse_cells_stays_miscalibrated():
    probs, labels = overconfident(400, 10, 4, factor=4.0)
    res = cc.consistency_resampling(probs, labels, cc.CanonicalCE(n_bins=10), n_resamples=200, seed=0)
    assert res.occupancy.sparse and res.p_value < 0.05
    assert res.verdict == "miscalibrated" and "not less trustworthy" in res.verdict_reason


def test_verdict_alpha_and_estimators_without_cells():
    probs, labels = calibrated(500, 3, 6)
    res = cc.consistency_resampling(probs, labels, functools.partial(cc.ece, n_bins=10), n_resamples=100, seed=0)
    assert res.occupancy is None  # a plain function: only the band and the p-value are read
    loose = cc.consistency_resampling(probs, labels, functools.partial(cc.ece, n_bins=10), n_resamples=100,
                                      seed=0, alpha=0.5)
    assert loose.alpha == 0.5 and "α = 0.5" in loose.verdict_reason
    assert loose.verdict == ("miscalibrated" if loose.p_value < 0.5 else res.verdict)
    with pytest.raises(CIE, match="alpha"):
        cc.consistency_resampling(probs, labels, cc.ece, n_resamples=10, alpha=0.0)


def test_cell_occupancy_matches_the_cell_table():
    probs, labels = calibrated(400, 4, 7)
    for est in (cc.CanonicalCE(n_bins=4), cc.CanonicalCE(partition="data_dependent", min_bin_size=50),
                cc.CanonicalCE(lens="max", n_bins=15)):
        table = cc.canonical_ce_table(probs, labels, est.distance, est.partition, est.n_bins, est.min_bin_size,
                                      est.lens)
        occ = est.cell_occupancy(probs)
        assert occ.n_cells == table.n_cells and occ.n_rows == 400
        assert occ.median_rows == np.median(table.count)
        assert occ.sparse_share == pytest.approx(table.count[table.count < 5].sum() / 400)


def test_lens_estimates_rows_carry_the_verdict():
    demo = cc.load_demo("digits_random_forest")
    tab = cc.lens_estimates(demo.probs, demo.labels, n_resamples=100, n_bootstrap=5, seed=0, n_bins=10,
                            min_bin_size=100)
    row = tab.get("canonical", "tv", "uniform")
    assert row.verdict == "inconclusive" and "below its band" in row.verdict_reason
    assert tab.get("max", "tv", "uniform").verdict == "miscalibrated"
    frame = tab.to_frame()
    assert {"verdict", "verdict_reason"} <= set(frame.columns)
    assert set(frame["verdict"]) <= set(cc.VERDICTS)


@pytest.mark.parametrize("n_classes", [33, 300])
def test_compiled_label_search_draws_the_labels_of_the_flat_numpy_search(n_classes, monkeypatch):
    """Issue 15: above 32 classes numpy searched all rows' cumulative sums at once (25 s for 1,000 draws at
    50,000 x 1,000); the optional numba kernel searches each row's own sums with the same additions: same labels."""
    from calib_core.inference import draws
    from calib_core._accel import compiled as _compiled
    require_kernel("label_search")
    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.full(n_classes, 0.3), size=700)
    probs[:10] = np.eye(n_classes)[rng.integers(0, n_classes, 10)]  # zeros before and after the mass
    probs[10:20, -1] = 0.0
    probs[10:20] /= probs[10:20].sum(axis=1, keepdims=True)
    sampler = draws._LabelSampler(probs)
    compiled = sampler.draw(np.random.default_rng(5), 30)
    monkeypatch.setattr(_compiled, "label_search", None)
    np.testing.assert_array_equal(compiled, sampler.draw(np.random.default_rng(5), 30))
    assert compiled.min() >= 0 and compiled.max() < n_classes


@pytest.mark.parametrize("distance", ["tv", "sq_euclidean"])
@pytest.mark.parametrize("partition", ["uniform", "data_dependent"])
def test_canonical_ce_with_many_classes_is_the_tables_estimate(distance, partition):
    """Issue 15: above 32 classes canonical_ce gives the cells of one row their closed-form deviation instead of
    a (cells x K) table (400 MB at 50,000 x 1,000): the same estimate, up to the rounding of the row sums."""
    probs, labels = overconfident(3000, 60, 9)
    fast = cc.canonical_ce(probs, labels, distance, partition, n_bins=3, min_bin_size=2)
    table = cc.canonical_ce_table(probs, labels, distance, partition, n_bins=3, min_bin_size=2)
    assert 0 < (table.count == 1).sum() < table.count.size  # both kinds of cells
    assert fast == pytest.approx(table.estimate, rel=1e-12, abs=1e-15)


def test_many_classes_consistency_counts_the_same_triples_by_sorting_or_by_slots(monkeypatch):
    """Issue 15: with 3,900 shared cells of 1,000 classes every draw counted 3.9 million (cell, outcome) slots
    (26 ms per draw; the Simplex page took 6.6 s on a re-render). More than 16 slots per row are now sorted
    instead; both list the triples in the same order, so the draws' estimates are the same, bit for bit."""
    from calib_core.inference import draws
    probs = np.repeat(overconfident(800, 100, 3)[0], 2, axis=0)  # 800 cells of two rows at 20 bins: 80,000 slots
    labels = np.random.default_rng(1).integers(0, 100, 1600)
    estimator = cc.CanonicalCE("tv", "uniform", 20, 1000)
    assert draws._SLOTS_PER_ROW_DENSE * 1600 < 800 * 100  # more slots than the dense rule allows
    sorted_ = cc.consistency_resampling(probs, labels, estimator, 60, 4)
    monkeypatch.setattr(draws, "_SLOTS_PER_ROW_DENSE", 10**9)  # every slot counted, as before
    counted = cc.consistency_resampling(probs, labels, estimator, 60, 4)
    np.testing.assert_array_equal(sorted_.resampled, counted.resampled)
    assert sorted_.p_value == counted.p_value


def test_uniform_partition_keys_of_many_coordinates_stay_small_and_equal():
    """Issue 15: at 50,000 x 1,000 nearly every row is its own cell and intp keys took 400 MB; above 32
    coordinates they keep the grid's small unsigned type (the same values)."""
    from calib_core.metrics.simplex import squared_norm_sum, uniform_partition
    probs, _ = overconfident(400, 40, 2)
    part = uniform_partition(probs, 5)
    assert part.keys.dtype == np.uint8
    assert uniform_partition(probs[:, :3] / probs[:, :3].sum(axis=1, keepdims=True), 5).keys.dtype == np.intp
    rows = np.arange(0, 400, 3)
    assert squared_norm_sum(probs, rows) == pytest.approx(float(np.einsum("ij,ij->", probs[rows], probs[rows])),
                                                           rel=1e-13)


def test_label_draws_of_read_only_predictions_are_kept_for_an_integer_seed(monkeypatch):
    """Issue 15: a Simplex re-render with other cells drew the same 100 label vectors again (0.6 s at
    50,000 x 1,000): for read-only predictions and an integer seed the draws are a function of (probs, seed,
    count) and the last sets are kept. The same results; a Generator, or writable predictions, draw anew."""
    from calib_core.inference import draws
    monkeypatch.setattr(draws, "_KEPT_DRAWS", KeptValues(capacity=2))
    probs, labels = overconfident(600, 40, 5)
    frozen = cc.Predictions.from_arrays(probs.tolist(), labels.tolist()).probs  # frozen and marked
    calls = []
    original = draws._LabelSampler.draw
    monkeypatch.setattr(draws._LabelSampler, "draw", lambda self, rng, n: calls.append(n) or original(self, rng, n))
    first = cc.consistency_resampling(frozen, labels, cc.CanonicalCE(n_bins=4), 50, 7)
    again = cc.consistency_resampling(frozen, labels, cc.CanonicalCE(n_bins=6), 50, 7)
    assert len(calls) == 1  # the second resampling, with other cells, reused the draws
    fresh = cc.consistency_resampling(probs, labels, cc.CanonicalCE(n_bins=6), 50, 7)  # writable: drawn again
    np.testing.assert_array_equal(again.resampled, fresh.resampled)
    assert len(calls) == 2
    cc.consistency_resampling(frozen, labels, cc.CanonicalCE(n_bins=4), 50, np.random.default_rng(7))
    cc.consistency_resampling(frozen, labels, cc.CanonicalCE(n_bins=4), 60, 7)  # another count
    assert len(calls) == 4
    np.testing.assert_array_equal(cc.consistency_resampling(frozen, labels, cc.CanonicalCE(n_bins=4), 50, 7).resampled,
                                  first.resampled)


def test_kept_label_draws_need_marked_predictions_and_keep_their_type():
    """Review of issue 15's memo: a read-only view of memory that is still writeable got the draws kept from
    before the memory changed, and a replay handed out int64 labels where a fresh draw gives uint8."""
    from calib_core.inference import draws
    rng = np.random.default_rng(0)
    memory = rng.dirichlet([1, 1, 1], size=200)
    labels = rng.integers(0, 3, 200)
    view = memory.view()
    view.flags.writeable = False
    estimator = lambda p, y: cc.ece(p, y)  # noqa: E731 - a plain callable: called once per draw
    cc.consistency_resampling(view, labels, estimator, 50, seed=1)
    memory[:] = memory[:, ::-1].copy()
    fresh = cc.consistency_resampling(memory.copy(), labels, estimator, 50, seed=1)
    np.testing.assert_array_equal(cc.consistency_resampling(view, labels, estimator, 50, seed=1).resampled,
                                  fresh.resampled)
    pred = cc.Predictions.from_arrays(memory.tolist(), labels.tolist())
    seen = []
    typed = lambda p, y: seen.append(y.dtype) or cc.ece(p, y)  # noqa: E731
    cc.consistency_resampling(pred.probs, pred.labels, typed, 5, seed=2)
    cc.consistency_resampling(pred.probs, pred.labels, typed, 5, seed=2)  # replayed from the kept draws
    drawn, replayed = seen[1:6], seen[7:]  # each run first evaluates the observed labels
    assert replayed == drawn and any(kept[0] is pred.probs for kept in draws._KEPT_DRAWS.objects())
