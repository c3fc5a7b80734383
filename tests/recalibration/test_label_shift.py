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
    for repetition in range(50):
        rows = _resampled(probs, labels, target, 600, rng)
        est = cc.estimate_prevalence(probs[rows], labels=labels, n_boot=100, seed=repetition)
        estimates.append(est.prevalence[1])
        covered.append(est.ci_low[1] <= target[1] <= est.ci_high[1])
        assert est.shift_detected  # 0.32 -> 0.6 at 600 rows is found every time
        if repetition < 5:
            bbse = cc.estimate_prevalence(probs[rows], method="bbse", probs_labelled=probs, labels=labels, n_boot=0)
            em_bbse.append(bbse.prevalence[1] - est.prevalence[1])
    assert abs(np.mean(estimates) - target[1]) < 0.02
    assert 0.82 <= np.mean(covered) <= 1.0  # nominal 0.95; 50 repetitions: 0.82 is 4 binomial SDs below
    assert np.max(np.abs(em_bbse)) < 0.1  # the check agrees with the EM


def test_no_shift_test_holds_its_size_on_the_same_set():
    data = cc.load_demo("fair_logistic_regression")
    rng = np.random.default_rng(2)
    p_values = [cc.estimate_prevalence(data.probs[rng.integers(0, data.labels.size, 600)], labels=data.labels,
                                       n_boot=0).shift_p_value for _ in range(100)]
    assert np.mean(np.array(p_values) < 0.05) <= 0.12  # nominal 0.05; 100 draws
