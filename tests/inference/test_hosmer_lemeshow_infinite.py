"""An infinite Hosmer-Lemeshow statistic says why (issue 23 item 8: it printed as "Infinity" with no reason)."""
from __future__ import annotations

import numpy as np

import calib_core as cc
from calib_core.io import load_demo


def binary_with_impossible_events(n_impossible_events: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """200 rows: 20 predicted with probability exactly 0 of which some have the event, the rest calibrated-ish."""
    rng = np.random.default_rng(0)
    p1 = np.concatenate([np.zeros(20), rng.uniform(0.2, 0.8, 180)])
    y = (rng.uniform(size=200) < p1).astype(int)
    y[:n_impossible_events] = 1
    return np.column_stack([1 - p1, p1]), y


def test_the_reason_names_the_group_expected_to_have_no_event():
    probs, labels = binary_with_impossible_events(3)
    result = cc.calibration_test(probs, labels, "hosmer_lemeshow")
    assert np.isinf(result.statistic)
    reason = result.verdict_reason.lower()
    assert "infinite" in reason
    assert "risk group 1 of 10 (20 rows)" in reason
    assert "expected 0 events" in reason and "observed 3" in reason
    assert result.verdict == "miscalibrated"


def test_the_reason_names_a_group_predicted_certain_that_missed():
    probs, labels = binary_with_impossible_events(0)
    probs = probs[:, ::-1].copy()  # the first 20 rows now predicted certain to have the event ...
    labels = 1 - labels
    labels[:2] = 0  # ... and two of them do not
    result = cc.calibration_test(probs, labels, "hosmer_lemeshow")
    assert np.isinf(result.statistic)
    assert "risk group 10 of 10 (20 rows)" in result.verdict_reason.lower()
    assert "expected 20 events" in result.verdict_reason and "observed 18" in result.verdict_reason


def test_a_finite_statistic_has_no_such_sentence():
    rng = np.random.default_rng(1)
    p1 = rng.uniform(0.05, 0.95, 500)
    y = (rng.uniform(size=500) < p1).astype(int)
    result = cc.calibration_test(np.column_stack([1 - p1, p1]), y, "hosmer_lemeshow")
    assert np.isfinite(result.statistic) and "infinite" not in result.verdict_reason


def test_default_demo_multiclass_reason_says_which_classes():
    data = load_demo("digits_gaussian_nb")
    result = cc.calibration_test(data.probs, data.labels, "hosmer_lemeshow")
    assert np.isinf(result.statistic)
    assert "infinite" in result.verdict_reason and "class 0" in result.verdict_reason.lower()
