"""net_benefit, decision_curve and recalibration_value with sample_weight (issue 28): weighted net benefit
(Vickers & Elkin 2006) and weighted treat-all; integer weights give the repeated rows' numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.recalibration.protocol import stratified_folds

THRESHOLDS = [0.1, 0.3, 0.5, 0.8]


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    w = rng.integers(0, 4, n).astype(float)
    return cc.as_probs(1 / (1 + np.exp(-2.5 * z))), y, w


def test_net_benefit_integer_weights_equal_repeated_rows():
    probs, y, w = _data()
    weighted = cc.net_benefit(probs, y, THRESHOLDS, sample_weight=w)
    r = w.astype(int)
    repeated = cc.net_benefit(np.repeat(probs, r, 0), np.repeat(y, r), THRESHOLDS)
    pd.testing.assert_frame_equal(weighted, repeated, rtol=0, atol=1e-12)


def test_weighted_net_benefit_by_hand():
    # p1 = 0.9 (y=1, w=2), 0.6 (y=0, w=1), 0.3 (y=1, w=1); W = 4; t = 0.5, odds 1: TP 2, FP 1 -> 2/4 - 1/4
    table = cc.net_benefit(cc.as_probs(np.array([0.9, 0.6, 0.3])), [1, 0, 1], [0.5], sample_weight=[2, 1, 1])
    assert table["net_benefit"].iloc[0] == pytest.approx(0.25)
    assert table["treat_all"].iloc[0] == pytest.approx(3 / 4 - 1 / 4)  # weighted prevalence 3/4


def test_decision_curve_weighted_before_is_the_repeated_rows_and_after_is_weighted_cross_fitting():
    probs, y, w = _data()
    curve = cc.decision_curve(probs, y, THRESHOLDS, n_boot=30, sample_weight=w)
    r = w.astype(int)
    repeated = cc.net_benefit(np.repeat(probs, r, 0), np.repeat(y, r), THRESHOLDS)
    np.testing.assert_allclose(curve.table["before"], repeated["net_benefit"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.table["treat_all"], repeated["treat_all"], rtol=0, atol=1e-12)
    # after: each fold's map fitted with the weights of the other folds, scored with the weights
    folds = stratified_folds(y, 5, seed=0)
    after = np.empty_like(probs)
    for fold in range(5):
        out = folds == fold
        model = cc.TemperatureScaling(input="probs").fit(probs[~out], y[~out], sample_weight=w[~out])
        after[out] = model.predict_proba(probs[out])
    expected = cc.net_benefit(after, y, THRESHOLDS, sample_weight=w)["net_benefit"]
    np.testing.assert_allclose(curve.table["after"], expected, rtol=0, atol=1e-9)
    assert (curve.table["before_low"] <= curve.table["before"] + 1e-12).all()
    assert (curve.table["before_high"] >= curve.table["before"] - 1e-12).all()
    assert curve.sum_weight == pytest.approx(w.sum())
    assert "weighted" in curve.protocol


def test_unit_weights_change_nothing():
    probs, y, _ = _data(seed=1)
    plain = cc.decision_curve(probs, y, THRESHOLDS, n_boot=20)
    ones = cc.decision_curve(probs, y, THRESHOLDS, n_boot=20, sample_weight=np.ones(y.size))
    pd.testing.assert_frame_equal(plain.table, ones.table, rtol=1e-9, atol=1e-12)
    a = cc.recalibration_value(probs, y, threshold=0.5, n_boot=20)
    b = cc.recalibration_value(probs, y, threshold=0.5, n_boot=20, sample_weight=np.ones(y.size))
    assert (a.value, a.ci_low, a.ci_high) == pytest.approx((b.value, b.ci_low, b.ci_high), abs=1e-9)


def test_recalibration_value_weighted_is_the_weighted_gain_per_1000():
    probs, y, w = _data(seed=2)
    curve = cc.decision_curve(probs, y, [0.8], n_boot=0, sample_weight=w)
    value = cc.recalibration_value(probs, y, threshold=0.8, n_boot=30, sample_weight=w)
    assert value.value == pytest.approx(1000 * curve.table["gain"].iloc[0], abs=1e-9)
    costs = np.array([[0.0, 20.0], [3.0, 0.0]])
    by_cost = cc.recalibration_value(probs, y, cost_matrix=costs, n_boot=0, sample_weight=w)
    plain = cc.recalibration_value(probs, y, cost_matrix=costs, n_boot=0)
    assert by_cost.value != pytest.approx(plain.value)
    assert np.isfinite(by_cost.cost_before)


def test_bad_weights_raise():
    probs, y, w = _data(n=50)
    with pytest.raises(cc.CalibrationInputError, match="sample_weight"):
        cc.decision_curve(probs, y, THRESHOLDS, sample_weight=w[:-1])
    with pytest.raises(cc.CalibrationInputError, match=">= 0"):
        cc.net_benefit(probs, y, THRESHOLDS, sample_weight=-w)
