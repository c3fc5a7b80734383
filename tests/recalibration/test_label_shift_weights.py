"""estimate_prevalence with sample_weight= on the labelled rows (issue 28): integer weights are repeated labelled rows
for the point estimates, weights change the numbers, unit weights change nothing, the weighted no-shift test."""
import numpy as np
import pytest

import calib_core as cc


def _data(seed=0, m=120, n=150, k=3):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, m)
    logits = rng.normal(size=(m, k)) + 1.5 * np.eye(k)[labels]
    target = rng.integers(0, k, n)
    unlabelled = cc.softmax(rng.normal(size=(n, k)) + 1.5 * np.eye(k)[target] * (target[:, None] > 0))
    return cc.softmax(logits), labels, unlabelled, rng.integers(0, 4, m)  # weights 0..3: some rows dropped


@pytest.mark.parametrize("method", ["em", "bbse"])
def test_integer_weights_are_repeated_labelled_rows(method):
    probs, labels, unlabelled, w = _data()
    rows = np.repeat(np.arange(labels.size), w)
    weighted = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=probs, labels=labels,
                                      sample_weight=w, n_boot=0)
    repeated = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=probs[rows], labels=labels[rows],
                                      n_boot=0)
    np.testing.assert_allclose(weighted.source_prevalence, repeated.source_prevalence, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.prevalence, repeated.prevalence, rtol=0, atol=1e-9)
    np.testing.assert_allclose(weighted.em_bias, repeated.em_bias, rtol=0, atol=1e-9, equal_nan=True)
    np.testing.assert_allclose(weighted.adjustment.probs, repeated.adjustment.probs, rtol=0, atol=1e-9)


def test_integer_weights_are_repeated_rows_through_the_recalibrator():
    probs, labels, unlabelled, w = _data(1)
    rows = np.repeat(np.arange(labels.size), w)
    common = dict(n_boot=0, recalibrator=cc.TemperatureScaling(input="probs"))
    weighted = cc.estimate_prevalence(unlabelled, probs_labelled=probs, labels=labels, sample_weight=w, **common)
    repeated = cc.estimate_prevalence(unlabelled, probs_labelled=probs[rows], labels=labels[rows], **common)
    np.testing.assert_allclose(weighted.prevalence, repeated.prevalence, rtol=0, atol=1e-5)
    np.testing.assert_allclose(weighted.em_bias, repeated.em_bias, rtol=0, atol=1e-5)


@pytest.mark.parametrize("method", ["em", "bbse"])
def test_weights_change_the_estimate_and_its_interval(method):
    probs, labels, unlabelled, w = _data(2)
    # class 0 and confident rows weigh more (a class-only weight leaves BBSE unchanged: it scales C's columns)
    w = 1.0 + 4.0 * (labels == 0) + 3.0 * (probs.max(axis=1) > 0.7)
    weighted = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=probs, labels=labels,
                                      sample_weight=w, n_boot=20)
    plain = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=probs, labels=labels, n_boot=20)
    expected_source = np.bincount(labels, weights=w, minlength=3) / w.sum()
    np.testing.assert_allclose(weighted.source_prevalence, expected_source, rtol=1e-12)
    assert np.abs(weighted.prevalence - plain.prevalence).max() > 1e-3
    assert np.abs(weighted.ci_low - plain.ci_low).max() > 1e-3
    assert np.all(weighted.ci_low <= weighted.prevalence + 1e-12)


def test_unit_weights_change_nothing():
    probs, labels, unlabelled, _ = _data(3)
    plain = cc.estimate_prevalence(unlabelled, probs_labelled=probs, labels=labels, n_boot=20)
    unit = cc.estimate_prevalence(unlabelled, probs_labelled=probs, labels=labels, n_boot=20,
                                  sample_weight=np.ones(labels.size))
    for name in ("prevalence", "ci_low", "ci_high", "em_bias", "source_prevalence"):
        np.testing.assert_allclose(getattr(unit, name), getattr(plain, name), rtol=0, atol=1e-12)
    assert unit.shift_p_value == pytest.approx(plain.shift_p_value, rel=1e-9)
    assert unit.shift_statistic == pytest.approx(plain.shift_statistic, rel=1e-9)
    assert unit.interval_holds == plain.interval_holds


def test_weighted_shift_test_uses_the_weighted_mean_and_kish_size():
    probs, labels, unlabelled, w = _data(4)
    w = w + 0.5
    est = cc.estimate_prevalence(unlabelled, probs_labelled=probs, labels=labels, sample_weight=w, n_boot=0)
    scaled = cc.estimate_prevalence(unlabelled, probs_labelled=probs, labels=labels, sample_weight=7 * w, n_boot=0)
    assert scaled.shift_p_value == pytest.approx(est.shift_p_value, rel=1e-9)  # the weights' scale does not count
    # by hand: Welch's t per class with the weighted mean, reliability-weighted variance, n_eff = (sum w)^2 / sum w^2
    v1, v2 = w.sum(), np.square(w).sum()
    mean = w @ probs / v1
    var = w @ np.square(probs - mean) / (v1 - v2 / v1)
    se = np.sqrt(unlabelled.var(axis=0, ddof=1) / unlabelled.shape[0] + var / (v1 ** 2 / v2))
    t = np.abs(unlabelled.mean(axis=0) - mean) / se
    assert est.shift_statistic == pytest.approx(t.max(), rel=1e-9)
    plain = cc.estimate_prevalence(unlabelled, probs_labelled=probs, labels=labels, n_boot=0)
    assert est.shift_statistic != pytest.approx(plain.shift_statistic, rel=1e-3)


def test_weights_need_labels_and_must_be_valid():
    probs, labels, unlabelled, _ = _data(5)
    with pytest.raises(cc.CalibrationInputError, match="needs `labels`"):
        cc.estimate_prevalence(unlabelled, sample_weight=np.ones(labels.size))
    with pytest.raises(cc.CalibrationInputError, match="sample_weight"):
        cc.estimate_prevalence(unlabelled, labels=labels, sample_weight=-np.ones(labels.size))
