"""The deployment prevalence from unlabelled predictions: EM, BBSE, interval coverage, the no-shift test."""
import numpy as np
import pytest

import calib_core as cc
from calib_core.recalibration.label_shift import em_prevalence


def _resampled(probs, labels, target, n, rng):
    """Rows of a labelled set drawn so that their classes follow ``target`` (label shift by construction)."""
    drawn = rng.choice(target.size, size=n, p=target)
    by_class = [np.flatnonzero(labels == k) for k in range(target.size)]
    return np.array([by_class[k][rng.integers(by_class[k].size)] for k in drawn])


def test_em_matches_a_hand_iteration():
    p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    source = np.array([0.5, 0.5])
    prevalence = source.copy()
    for _ in range(5000):  # Saerens et al. eq. 2.7-2.8, written out
        q = p * prevalence / source
        q /= q.sum(axis=1, keepdims=True)
        prevalence = q.mean(axis=0)
    estimate, _, converged = em_prevalence(p, source, tol=1e-12, max_iter=10_000)
    assert converged
    np.testing.assert_allclose(estimate, prevalence, atol=1e-8)


def test_adjusted_predictions_are_adjust_prevalence_at_the_estimate_and_the_em_fixed_point():
    rng = np.random.default_rng(0)
    probs = cc.softmax(rng.normal(size=(300, 3)) * 2)
    est = cc.estimate_prevalence(probs, [0.2, 0.3, 0.5], n_boot=0, tol=1e-12)
    expected = cc.adjust_prevalence(probs, est.prevalence, source_prevalence=[0.2, 0.3, 0.5]).probs
    np.testing.assert_allclose(est.adjustment.probs, expected)
    np.testing.assert_allclose(est.adjustment.probs.mean(axis=0), est.prevalence, atol=1e-8)


def test_importance_weights_are_the_prevalence_ratio():
    probs = cc.as_probs(np.array([0.1, 0.2, 0.8, 0.9, 0.7]))
    est = cc.estimate_prevalence(probs, labels=[0, 0, 1, 1, 0], n_boot=0)
    np.testing.assert_allclose(est.class_weights, est.prevalence / np.array([0.6, 0.4]))
    np.testing.assert_allclose(est.sample_weight([0, 1, 1]), est.class_weights[[0, 1, 1]])


def test_no_source_prevalence_assumes_uniform_and_says_so():
    est = cc.estimate_prevalence(cc.as_probs(np.array([0.2, 0.7, 0.9])), n_boot=0)
    np.testing.assert_allclose(est.source_prevalence, [0.5, 0.5])
    assert any("1/K" in note for note in est.notes)


def test_the_em_note_asks_for_recalibration():
    est = cc.estimate_prevalence(cc.as_probs(np.array([0.2, 0.7, 0.9])), 0.5, n_boot=0)
    assert any("Alexandari" in note for note in est.notes)


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="bbse"), "needs `probs_labelled`"),
    (dict(method="nope"), "method"),
    (dict(probs_labelled=[[0.5, 0.5]]), "needs its `labels`"),
    (dict(source_prevalence=[0.0, 1.0]), "strictly between 0 and 1"),
    (dict(labels=[0, 0, 0]), "class frequencies"),
    (dict(n_boot=-1), "n_boot"),
])
def test_invalid_inputs_raise(kwargs, match):
    with pytest.raises(cc.CalibrationInputError, match=match):
        cc.estimate_prevalence(cc.as_probs(np.array([0.2, 0.7, 0.9])), **kwargs)


def test_bbse_matches_the_confusion_matrix_inversion():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 400)
    probs = cc.as_probs(np.clip(0.3 + 0.4 * labels + rng.normal(0, 0.2, 400), 0.01, 0.99))
    target = cc.as_probs(np.clip(0.3 + 0.4 * (rng.random(300) < 0.7) + rng.normal(0, 0.2, 300), 0.01, 0.99))
    predicted, truth = probs.argmax(1), labels
    joint = np.array([[np.mean((predicted == i) & (truth == j)) for j in range(2)] for i in range(2)])
    mu = np.bincount(target.argmax(1), minlength=2) / 300
    w = np.linalg.solve(joint, mu)
    expected = w * joint.sum(axis=0)
    est = cc.estimate_prevalence(target, method="bbse", probs_labelled=probs, labels=labels, n_boot=0)
    np.testing.assert_allclose(est.prevalence, expected / expected.sum())
    assert np.isnan(est.shift_p_value)


def test_simulation_bias_small_and_coverage_near_nominal_on_a_real_labelled_set():
    """A real labelled set resampled to a known prevalence: the EM is unbiased and its interval covers."""
    data = cc.load_demo("fair_logistic_regression")
    probs, labels = data.probs, data.labels
    target = np.array([0.4, 0.6])  # the test set has 0.68 / 0.32
    rng = np.random.default_rng(11)
    estimates, covered, em_bbse = [], [], []
    for repetition in range(30):
        rows = _resampled(probs, labels, target, 600, rng)
        est = cc.estimate_prevalence(probs[rows], labels=labels, n_boot=60, seed=repetition)
        estimates.append(est.prevalence[1])
        covered.append(est.ci_low[1] <= target[1] <= est.ci_high[1])
        assert est.shift_detected  # 0.32 -> 0.6 at 600 rows is found every time
        if repetition < 5:
            bbse = cc.estimate_prevalence(probs[rows], method="bbse", probs_labelled=probs, labels=labels, n_boot=0)
            em_bbse.append(bbse.prevalence[1] - est.prevalence[1])
    assert abs(np.mean(estimates) - target[1]) < 0.02
    assert 0.8 <= np.mean(covered) <= 1.0  # nominal 0.95; 30 repetitions: 0.8 is 3.8 binomial SDs below
    assert np.max(np.abs(em_bbse)) < 0.1  # the check agrees with the EM


def test_no_shift_test_holds_its_size_on_the_same_set():
    data = cc.load_demo("fair_logistic_regression")
    rng = np.random.default_rng(2)
    p_values = [cc.estimate_prevalence(data.probs[rng.integers(0, data.labels.size, 600)], labels=data.labels,
                                       n_boot=0).shift_p_value for _ in range(100)]
    assert np.mean(np.array(p_values) < 0.05) <= 0.12  # nominal 0.05; 100 draws


def _gaussian_rows(prevalence, n, rng, *, gap=1.5, temperature=1.0, source=0.3):
    """Binary rows with x | y ~ N(gap * y, 1) and P(y = 1 | x) at prevalence ``source`` (calibrated at
    ``temperature`` 1; over-confident above 1, under-confident below)."""
    y = (rng.random(n) < prevalence).astype(int)
    x = rng.normal(gap * y, 1.0)
    logit = gap * x - gap ** 2 / 2 + np.log(source / (1 - source))
    return cc.as_probs(1 / (1 + np.exp(-temperature * logit))), y


def test_em_interval_covers_at_its_rate_when_the_source_prevalence_comes_from_few_labels():
    """Issue 28: the EM interval resampled the unlabelled rows only (0.70 coverage here); with the labelled rows
    resampled too (their frequencies are the source prevalence) it covers near 0.95, and the EM is unbiased."""
    covered, errors, held = [], [], []
    for repetition in range(30):
        rng = np.random.default_rng(repetition)
        probs_labelled, labels = _gaussian_rows(0.3, 200, rng)
        probs, _ = _gaussian_rows(0.6, 400, rng)
        est = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=50,
                                     seed=repetition)
        covered.append(est.ci_low[1] <= 0.6 <= est.ci_high[1])
        errors.append(est.prevalence[1] - 0.6)
        held.append(getattr(est, "interval_holds", None))
    assert np.mean(covered) >= 0.8  # nominal 0.95; 30 repetitions: 0.8 is 3.8 binomial SDs below
    assert abs(np.mean(errors)) < 0.02
    assert all(held)  # calibrated predictions pass the calibration check


@pytest.mark.parametrize("temperature, holds", [(1.0, True), (2.5, False), (0.5, False)])
def test_the_interval_is_flagged_when_the_predictions_fail_the_ems_calibration_check(temperature, holds):
    """Over-confident predictions bias the EM (0.43 for 0.6), under-confident ones push it to the edge: no
    interval covers, and the result says so in ``interval_holds``, its first note and its sentence."""
    rng = np.random.default_rng(4)
    probs_labelled, labels = _gaussian_rows(0.3, 1000, rng, temperature=temperature)
    probs, _ = _gaussian_rows(0.6, 1000, rng, temperature=temperature)
    est = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=50)
    assert est.interval_holds is holds
    assert bool(est.ci_low[1] <= 0.6 <= est.ci_high[1]) is holds  # the flag is right on both sides
    assert ("does not hold" in est.notes[0]) is not holds
    assert ("intervals do not hold" in est.sentence()) is not holds
    assert est.em_bias.shape == (2,) and np.isfinite(est.em_bias).all()


def test_over_confident_bias_is_measured_by_the_check():
    """The check (EM on the labelled rows re-weighted to the estimate, minus the estimate) has the sign and
    about the size of the EM's error on the deployment."""
    rng = np.random.default_rng(5)
    probs_labelled, labels = _gaussian_rows(0.3, 2000, rng, temperature=2.5)
    probs, _ = _gaussian_rows(0.6, 2000, rng, temperature=2.5)
    est = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=0)
    error = est.prevalence[1] - 0.6
    assert error < -0.1 and est.em_bias[1] < -0.05
    assert est.interval_holds is None  # no resamples, no spread to judge by


def test_without_labelled_rows_the_interval_is_the_unlabelled_bootstrap_and_says_so():
    rng = np.random.default_rng(6)
    probs, _ = _gaussian_rows(0.6, 300, rng)
    est = cc.estimate_prevalence(probs, [0.7, 0.3], n_boot=30, seed=1)
    assert est.interval_holds is None and np.isnan(est.em_bias).all()
    assert any("unlabelled rows only" in note for note in est.notes)
    counts = np.random.default_rng(1).integers(0, 300, (30, 300))  # the resamples index_blocks draws
    draws = [em_prevalence(probs[rows], [0.7, 0.3])[0] for rows in counts]
    np.testing.assert_allclose(est.ci_low, np.quantile(draws, 0.025, axis=0), atol=1e-6)


def test_recalibrator_is_fitted_on_the_labelled_rows_before_the_em():
    rng = np.random.default_rng(7)
    probs_labelled, labels = _gaussian_rows(0.3, 400, rng, temperature=2.5)
    probs, _ = _gaussian_rows(0.6, 400, rng, temperature=2.5)
    recalibrator = cc.TemperatureScaling(input="probs")
    est = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=20,
                                 recalibrator=recalibrator)
    fitted = cc.TemperatureScaling(input="probs").fit(probs_labelled, labels)
    expected = cc.estimate_prevalence(fitted.predict_proba(probs), labels=labels, n_boot=0).prevalence
    np.testing.assert_allclose(est.prevalence, expected, atol=1e-7)
    assert not hasattr(recalibrator, "temperature_")  # the caller's object is left unfitted
    assert abs(est.prevalence[1] - 0.6) < 0.06 and est.ci_low[1] <= 0.6 <= est.ci_high[1]
    assert "TemperatureScaling" in est.notes[-1] or any("TemperatureScaling" in n for n in est.notes)


@pytest.mark.parametrize("kwargs", [dict(method="bbse", probs_labelled=[[0.6, 0.4], [0.2, 0.8]], labels=[0, 1]),
                                    dict(labels=[0, 1])])
def test_recalibrator_needs_labelled_predictions_and_the_em(kwargs):
    with pytest.raises(cc.CalibrationInputError, match="recalibrator"):
        cc.estimate_prevalence(cc.as_probs(np.array([0.2, 0.7, 0.9])), recalibrator=cc.TemperatureScaling(),
                               **kwargs)


def test_a_rejection_of_no_shift_inside_the_interval_is_said_not_to_establish_a_shift():
    """Without shift, a weak model and 300 labelled rows given by their labels only: the likelihood-ratio test
    (which holds the labels' frequencies fixed as the source prevalence) rejects, yet the interval holds the test
    set's prevalence; the result says the shift is not established. With the labelled rows' predictions the
    black-box test is used, and it does not reject here (this data set was the defect: p ~ 1e-14 before)."""
    rng = np.random.default_rng(31)
    probs_labelled, labels = _gaussian_rows(0.3, 300, rng, gap=1.0)
    probs, _ = _gaussian_rows(0.3, 2000, rng, gap=1.0)
    est = cc.estimate_prevalence(probs, labels=labels, n_boot=50)
    assert est.shift_detected
    assert ((est.ci_low <= est.source_prevalence) & (est.source_prevalence <= est.ci_high)).all()
    assert any("not established" in note for note in est.notes)
    with_rows = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=0)
    assert not with_rows.shift_detected
    assert not any("not established" in note for note in with_rows.notes)


def test_labelled_rows_without_a_class_are_not_resampled_and_say_so():
    """With `source_prevalence` given, labels may lack a class: no source frequency to resample, no check."""
    probs = cc.as_probs(np.array([0.2, 0.7, 0.9, 0.4]))
    est = cc.estimate_prevalence(probs, [0.5, 0.5], probs_labelled=probs[:3], labels=[0, 0, 0], n_boot=5)
    assert est.interval_holds is None and np.isfinite(est.ci_low).all()
    assert any("lack a class" in note for note in est.notes)
    some = cc.estimate_prevalence(probs, probs_labelled=probs[:3], labels=[0, 1, 0], n_boot=30)
    assert any("lacked a class" in note for note in some.notes)  # those resamples are left out


def _rejections(target, repeats, rng, *, temperature=1.0, n_labelled=300, n=1000):
    """How often the no-shift test rejects at 0.05 when the deployment's prevalence is ``target`` (source 0.3)."""
    found = []
    for _ in range(repeats):
        probs_labelled, labels = _gaussian_rows(0.3, n_labelled, rng, gap=1.0, temperature=temperature)
        probs, _ = _gaussian_rows(target, n, rng, gap=1.0, temperature=temperature)
        found.append(cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=0,
                                            max_iter=200, tol=1e-6).shift_detected)
    return np.mean(found)


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_no_shift_test_with_labelled_predictions_holds_its_size(temperature):
    """No shift, a weak model, 300 labelled rows, calibrated or over-confident: the test rejects in about alpha
    of data sets (the former likelihood-ratio test, which held the labels' frequencies fixed as the source
    prevalence and assumed calibration, rejected in 26 of 40 calibrated ones and in all over-confident ones)."""
    rate = _rejections(0.3, 40, np.random.default_rng(5), temperature=temperature)
    assert rate <= 0.15  # nominal <= 0.05 (Bonferroni); 40 draws: 0.15 is 6 of 40, P < 0.01 at 0.05


def test_no_shift_test_with_labelled_predictions_finds_a_real_shift():
    """The same weak model, the deployment at 0.6 instead of 0.3: found in nearly every data set."""
    assert _rejections(0.6, 20, np.random.default_rng(6)) >= 0.9


def test_no_shift_test_names_itself_and_without_labelled_predictions_says_it_may_not_hold():
    rng = np.random.default_rng(8)
    probs_labelled, labels = _gaussian_rows(0.3, 200, rng)
    probs, _ = _gaussian_rows(0.3, 300, rng)
    with_rows = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=0)
    assert "Welch t-test" in with_rows.shift_test and "Welch t-test" in with_rows.sentence()
    without = cc.estimate_prevalence(probs, labels=labels, n_boot=0)
    assert "likelihood ratio" in without.shift_test
    assert any("does not hold its size" in note for note in without.notes)
    assert "does not hold its size" in without.sentence()
