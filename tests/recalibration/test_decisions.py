"""Net benefit, decision curves and the value of recalibration in decisions."""
import numpy as np
import pandas as pd
import pytest

import calib_core as cc


def _dcurves_net_benefit(risk, outcome, thresholds):
    """A transcription of dcurves' binary formula (dca.py: _calc_tp_rate, _calc_fp_rate, _calc_more_stats).

    tp_rate = share of events with risk >= t times the prevalence; fp_rate = share
    of non-events with risk >= t times (1 - prevalence); net_benefit = tp_rate - t / (1 - t) * fp_rate
    (harm 0). Its "all" model is risk 1 for every row.
    """
    prevalence = outcome.mean()
    events, non_events = risk[outcome == 1], risk[outcome == 0]
    rows = []
    for t in thresholds:
        tp_rate = np.sum(events >= t) / events.size * prevalence
        fp_rate = np.sum(non_events >= t) / non_events.size * (1 - prevalence)
        rows.append(tp_rate - t / (1 - t) * fp_rate)
    return np.array(rows)


def test_net_benefit_by_hand():
    # rows: p1 = 0.9 (y=1), 0.6 (y=0), 0.3 (y=1), 0.1 (y=0), 0.5 (y=1)
    p1 = np.array([0.9, 0.6, 0.3, 0.1, 0.5])
    y = np.array([1, 0, 1, 0, 1])
    table = cc.net_benefit(cc.as_probs(p1), y, [0.25, 0.5, 0.6])
    assert list(table.columns) == ["threshold", "net_benefit", "treat_all", "treat_none"]
    # t = 0.25: treated 0.9, 0.6, 0.3, 0.5 -> TP 3, FP 1; odds 1/3 -> 3/5 - 1/5 * 1/3
    # t = 0.5: treated 0.9, 0.6, 0.5 -> TP 2, FP 1; odds 1 -> 2/5 - 1/5
    # t = 0.6: treated 0.9, 0.6 (>= t) -> TP 1, FP 1; odds 1.5 -> 1/5 - 1.5/5
    np.testing.assert_allclose(table["net_benefit"], [3 / 5 - 1 / 15, 1 / 5, 1 / 5 - 0.3], atol=1e-12)
    # treat all: TP 3, FP 2
    np.testing.assert_allclose(table["treat_all"], [3 / 5 - 2 / 5 / 3, 3 / 5 - 2 / 5, 3 / 5 - 2 / 5 * 1.5], atol=1e-12)
    assert (table["treat_none"] == 0).all()


def test_net_benefit_matches_the_dcurves_formula():
    rng = np.random.default_rng(4)
    p1 = np.round(rng.random(500), 2)  # ties at the thresholds on purpose
    y = (rng.random(500) < p1).astype(int)
    thresholds = np.arange(0.0, 1.0, 0.01)
    table = cc.net_benefit(cc.as_probs(p1), y, thresholds)
    np.testing.assert_allclose(table["net_benefit"], _dcurves_net_benefit(p1, y, thresholds), atol=1e-12)
    np.testing.assert_allclose(table["treat_all"], _dcurves_net_benefit(np.ones(500), y, thresholds), atol=1e-12)


def test_net_benefit_one_vs_rest_for_k_classes():
    rng = np.random.default_rng(0)
    probs = cc.softmax(rng.normal(size=(50, 3)))
    labels = rng.integers(0, 3, 50)
    with pytest.raises(cc.CalibrationInputError, match="positive_class"):
        cc.net_benefit(probs, labels, [0.3])
    one = cc.net_benefit(probs, labels, [0.3], positive_class=2)
    pd.testing.assert_frame_equal(one, cc.net_benefit(cc.as_probs(probs[:, 2]), labels == 2, [0.3]))


@pytest.mark.parametrize("thresholds", [[1.0], [-0.1], [np.nan], []])
def test_net_benefit_rejects_thresholds_outside_0_1(thresholds):
    with pytest.raises(cc.CalibrationInputError, match="threshold"):
        cc.net_benefit(cc.as_probs(np.array([0.2, 0.8])), [0, 1], thresholds)


def _overconfident(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    return cc.as_probs(1 / (1 + np.exp(-3 * z))), y  # logits three times too large


def test_decision_curve_before_is_net_benefit_and_after_is_cross_fitted():
    probs, y = _overconfident()
    curve = cc.decision_curve(probs, y, [0.1, 0.5, 0.9], n_boot=50)
    np.testing.assert_allclose(curve.table["before"], cc.net_benefit(probs, y, [0.1, 0.5, 0.9])["net_benefit"])
    after = cc.cross_fit(cc.TemperatureScaling(input="probs"), probs, y, n_folds=5, seed=0)
    np.testing.assert_allclose(curve.table["after"], cc.net_benefit(after, y, [0.1, 0.5, 0.9])["net_benefit"],
                               atol=1e-9)
    np.testing.assert_allclose(curve.table["gain"], curve.table["after"] - curve.table["before"])
    assert (curve.table["before_low"] <= curve.table["before"]).all()
    assert (curve.table["gain_high"] >= curve.table["gain_low"]).all()
    # an overconfident model acts too often at high thresholds: recalibration must gain there
    assert curve.table["gain_low"].iloc[2] > 0


def test_recalibration_value_at_a_threshold_is_the_net_benefit_gain_per_1000():
    probs, y = _overconfident()
    value = cc.recalibration_value(probs, y, threshold=0.9, n_boot=100)
    curve = cc.decision_curve(probs, y, [0.9], n_boot=0)
    assert value.value == pytest.approx(1000 * curve.table["gain"].iloc[0])
    assert value.ci_low > 0 and "per 1,000 decisions" in value.sentence()


def test_recalibration_value_with_a_cost_matrix_by_hand():
    probs, y = _overconfident()
    costs = np.array([[0.0, 20.0], [3.0, 0.0]])  # missing a positive costs 20, a false alarm 3
    value = cc.recalibration_value(probs, y, cost_matrix=costs, units="dollars", n_boot=0)
    after = cc.cross_fit(cc.TemperatureScaling(input="probs"), probs, y, n_folds=5, seed=0)
    act_before = (probs @ costs.T).argmin(1)
    act_after = (after @ costs.T).argmin(1)
    expected = 1000 * np.mean(costs[act_before, y] - costs[act_after, y])
    assert value.value == pytest.approx(expected)
    assert "dollars" in value.sentence()


def test_threshold_costs_act_above_the_threshold():
    costs = cc.recalibration.decisions.threshold_costs(0.2)
    q = np.array([[0.9, 0.1], [0.7, 0.3]])
    np.testing.assert_array_equal((q @ costs.T).argmin(1), [0, 1])


def test_recalibration_value_needs_exactly_one_rule():
    probs, y = _overconfident(100)
    with pytest.raises(cc.CalibrationInputError, match="exactly one"):
        cc.recalibration_value(probs, y)
    with pytest.raises(cc.CalibrationInputError, match="cost_matrix"):
        cc.recalibration_value(probs, y, cost_matrix=[[0, 1, 2]])
