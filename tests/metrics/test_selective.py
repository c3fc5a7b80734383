"""Selective prediction (calib_core/metrics/selective.py), each number against an independent transcription of
its definition: literal loops, every order of the tied items, scikit-learn's roc_auc_score."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score

import calib_core as cc
from calib_core.metrics import selective


# ----------------------------------------------------------------------------- independent transcriptions

def literal_aurc_of_order(wrong_in_order):
    """(1/N) sum_k (errors among the first k) / k, and (1/N) sum_k (errors among the first k) / N, by loops."""
    n = len(wrong_in_order)
    aurc = augrc = 0.0
    for k in range(1, n + 1):
        errors = sum(wrong_in_order[:k])
        aurc += errors / k / n
        augrc += errors / n / n
    return aurc, augrc


def every_tie_order(confidence, correct):
    """The wrong-flags in every order that sorts the confidences from high to low (all orders of tied items)."""
    orders = []
    for perm in itertools.permutations(range(len(confidence))):
        values = [confidence[i] for i in perm]
        if all(values[i] >= values[i + 1] for i in range(len(values) - 1)):
            orders.append([1 - correct[i] for i in perm])
    return orders


def brute_force(confidence, correct):
    """Expected AURC, AUGRC and errors among the first k, over a uniformly random order inside each tie group."""
    orders = every_tie_order(confidence, correct)
    values = np.array([literal_aurc_of_order(order) for order in orders])
    errors = np.array([np.cumsum(order) for order in orders], dtype=float)
    return values[:, 0].mean(), values[:, 1].mean(), errors.mean(axis=0)


def literal_risk_coverage(confidence, correct):
    thresholds = sorted(set(confidence), reverse=True)
    coverage, risk = [], []
    for t in thresholds:
        kept = [i for i in range(len(confidence)) if confidence[i] >= t]
        coverage.append(len(kept) / len(confidence))
        risk.append(sum(1 - correct[i] for i in kept) / len(kept))
    return thresholds, coverage, risk


tiny = st.lists(st.tuples(st.sampled_from([0.0, 0.3, 0.5, 0.55, 0.9, 1.0]), st.integers(0, 1)), min_size=1,
                max_size=6)


@settings(max_examples=60, deadline=None)
@given(rows=tiny)
def test_aurc_augrc_and_expected_errors_are_the_mean_over_every_order_of_the_tied_items(rows):
    confidence, correct = [r[0] for r in rows], [r[1] for r in rows]
    aurc, augrc, errors = brute_force(confidence, correct)
    assert cc.aurc(confidence, correct) == pytest.approx(aurc, abs=1e-12)
    assert cc.augrc(confidence, correct) == pytest.approx(augrc, abs=1e-12)
    np.testing.assert_allclose(cc.expected_errors(confidence, correct), errors, atol=1e-12)
    n = len(rows)
    coverages = np.arange(1, n + 1) / n
    np.testing.assert_allclose(cc.selective_risk(confidence, correct, coverages), errors / np.arange(1, n + 1),
                               atol=1e-12)


def test_the_tie_rule_on_a_hand_computed_case():
    # Two items tied at 0.9, one of them wrong: each adds half an error; the contract's worked rule.
    assert cc.expected_errors([0.9, 0.9, 0.5], [1, 0, 0]).tolist() == [0.5, 1.0, 2.0]
    assert cc.aurc([0.9, 0.9, 0.5], [1, 0, 0]) == pytest.approx((0.5 / 1 + 1.0 / 2 + 2.0 / 3) / 3)
    assert cc.augrc([0.9, 0.9, 0.5], [1, 0, 0]) == pytest.approx((0.5 + 1.0 + 2.0) / 9)


@pytest.mark.parametrize("seed", range(5))
def test_without_ties_aurc_and_augrc_are_the_literal_loops(seed):
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(size=60)
    correct = (rng.uniform(size=60) < confidence).astype(int)
    order = np.argsort(-confidence)
    aurc, augrc = literal_aurc_of_order(list(1 - correct[order]))
    assert cc.aurc(confidence, correct) == pytest.approx(aurc, rel=1e-12)
    assert cc.augrc(confidence, correct) == pytest.approx(augrc, rel=1e-12)
    ideal, _ = literal_aurc_of_order(sorted(1 - correct))  # every right item (wrong = 0) first
    assert cc.eaurc(confidence, correct) == pytest.approx(aurc - ideal, rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("step", [0.05, 0.1])
@pytest.mark.parametrize("seed", range(4))
def test_with_verbalised_steps_every_metric_matches_its_transcription(step, seed):
    """Confidences in steps of 5 or 10 %: AUROC against scikit-learn, the curve against loops, AURC against the
    expected value computed by the straddling-group rule written out with loops."""
    rng = np.random.default_rng(seed)
    confidence = np.round(rng.uniform(0.3, 1.0, size=300) / step) * step
    correct = (rng.uniform(size=300) < confidence * 0.9).astype(int)
    assert cc.auroc_correct(confidence, correct) == pytest.approx(roc_auc_score(correct, confidence), rel=1e-12)
    thresholds, coverage, risk = literal_risk_coverage(list(confidence), list(correct))
    curve = cc.risk_coverage(confidence, correct)
    np.testing.assert_allclose(curve.threshold, thresholds)
    np.testing.assert_allclose(curve.coverage, coverage, rtol=1e-12)
    np.testing.assert_allclose(curve.risk, risk, rtol=1e-12)
    # E_k by loops: the groups above k, plus j e/m of the group k falls in.
    expected, k = [], 0
    above = 0.0
    for t in thresholds:
        members = [i for i in range(300) if confidence[i] == t]
        m, e = len(members), sum(1 - correct[i] for i in members)
        for j in range(1, m + 1):
            expected.append(above + j * e / m)
        above += e
    n = 300
    assert cc.aurc(confidence, correct) == pytest.approx(sum(expected[k] / (k + 1) for k in range(n)) / n, rel=1e-12)
    assert cc.augrc(confidence, correct) == pytest.approx(sum(expected) / n / n, rel=1e-12)


def test_auroc_equals_scikit_learn_on_continuous_confidences_and_is_undefined_for_one_outcome():
    rng = np.random.default_rng(7)
    confidence = rng.uniform(size=500)
    correct = (rng.uniform(size=500) < confidence).astype(bool)
    assert cc.auroc_correct(confidence, correct) == pytest.approx(roc_auc_score(correct, confidence), rel=1e-12)
    for constant in (np.ones(5), np.zeros(5)):
        with pytest.raises(cc.CalibrationInputError, match="does not exist"):
            cc.auroc_correct(confidence[:5], constant)


def test_edge_cases_all_right_all_wrong_and_one_row():
    confidence = [0.2, 0.9, 0.9, 0.4]
    assert cc.aurc(confidence, [1, 1, 1, 1]) == 0.0 and cc.eaurc(confidence, [1, 1, 1, 1]) == 0.0
    assert cc.augrc(confidence, [1, 1, 1, 1]) == 0.0
    assert cc.aurc(confidence, [0, 0, 0, 0]) == 1.0 and cc.eaurc(confidence, [0, 0, 0, 0]) == pytest.approx(0.0)
    assert cc.augrc(confidence, [0, 0, 0, 0]) == pytest.approx((4 + 1) / (2 * 4))
    assert cc.aurc([0.7], [0]) == 1.0 and cc.aurc([0.7], [1]) == 0.0 and cc.eaurc([0.7], [0]) == 0.0
    curve = cc.risk_coverage([0.7], [1])
    assert curve.coverage.tolist() == [1.0] and curve.risk.tolist() == [0.0]
    assert cc.selective_risk([0.7], [0], [0.0, 1.0]).tolist() == [1.0, 1.0]
    assert cc.coverage_at_risk([0.7], [0], 0.5) == 0.0 and cc.coverage_at_risk([0.7], [1], 0.0) == 1.0


def test_coverage_at_risk_and_selective_risk_read_the_curve():
    confidence, correct = [0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0]
    assert cc.coverage_at_risk(confidence, correct, 0.4) == 0.75
    assert cc.coverage_at_risk(confidence, correct, 0.3) == 0.25
    # 0.7 of 10 items keeps 7, despite 0.7 * 10 = 7.000000000000001 in floating point.
    ten = np.linspace(1.0, 0.1, 10)
    right = np.r_[np.ones(6), np.zeros(4)]
    assert cc.selective_risk(ten, right, [0.7]).tolist() == [1 / 7]


values_on_a_grid = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 1)), min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(rows=values_on_a_grid)
def test_bounds_and_invariance_to_increasing_transforms_and_row_order(rows):
    confidence = np.array([r[0] for r in rows]) / 20.0
    correct = np.array([r[1] for r in rows])
    found = {name: getattr(cc, name)(confidence, correct) for name in ("aurc", "eaurc", "augrc")}
    assert 0.0 <= found["aurc"] <= 1.0 and 0.0 <= found["augrc"] <= 1.0
    assert found["eaurc"] >= -1e-12 and found["eaurc"] <= found["aurc"] + 1e-12
    squashed = confidence ** 2 * 0.5 + 0.25  # strictly increasing, the 21 grid values stay distinct
    perm = np.random.default_rng(len(rows)).permutation(len(rows))
    for name, value in found.items():
        assert getattr(cc, name)(squashed, correct) == pytest.approx(value, abs=1e-12)
        assert getattr(cc, name)(confidence[perm], correct[perm]) == pytest.approx(value, abs=1e-12)
    if 0 < correct.sum() < correct.size:
        assert cc.auroc_correct(squashed, correct) == pytest.approx(cc.auroc_correct(confidence, correct), abs=1e-12)


@pytest.mark.parametrize("confidence, correct, match", [
    ([[0.5, 0.5]], [1], "1-D"),
    ([], [], "no rows"),
    ([0.5, 0.6], [1], "2 entries but `correct` has 1"),
    ([0.5, np.nan], [1, 0], r"row 1 is nan"),
    ([0.5, 85.0], [1, 0], "percentage"),
    ([0.5, -0.1], [1, 0], r"\[0, 1\]"),
    ([0.5, 0.6], [1, 2], "`correct` must be 0 or 1"),
    (["a", "b"], [1, 0], "must hold numbers"),
])
def test_invalid_inputs_are_refused_with_the_reason(confidence, correct, match):
    for function in (cc.aurc, cc.eaurc, cc.augrc, cc.auroc_correct, cc.risk_coverage):
        with pytest.raises(cc.CalibrationInputError, match=match):
            function(confidence, correct)


@pytest.mark.parametrize("kwargs, match", [({"coverages": [1.5]}, "coverages"), ({"coverages": []}, "coverages")])
def test_selective_risk_refuses_coverages_outside_0_1(kwargs, match):
    with pytest.raises(cc.CalibrationInputError, match=match):
        cc.selective_risk([0.5, 0.6], [1, 0], **kwargs)


def test_large_inputs_are_fast():
    """O(N log N): a million rows in well under a second each (a Python loop over rows takes minutes)."""
    import time
    rng = np.random.default_rng(0)
    confidence = np.round(rng.uniform(size=1_000_000), 2)
    correct = rng.uniform(size=1_000_000) < confidence
    start = time.perf_counter()
    cc.aurc(confidence, correct), cc.augrc(confidence, correct), cc.eaurc(confidence, correct)
    cc.risk_coverage(confidence, correct), cc.auroc_correct(confidence, correct)
    assert time.perf_counter() - start < 10.0


# ----------------------------------------------------------------------------- the abstention threshold

def population_risk(threshold):
    """P(wrong | C >= t) for C ~ U(0, 1) and P(right | C = c) = sqrt(c): ((1 - t) - 2/3 (1 - t^1.5)) / (1 - t)."""
    t = np.asarray(threshold, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(t < 1.0, ((1.0 - t) - 2.0 / 3.0 * (1.0 - t ** 1.5)) / (1.0 - t), 0.0)


def draw(rng, n):
    confidence = rng.uniform(size=n)
    return confidence, (rng.uniform(size=n) < np.sqrt(confidence)).astype(int)


def test_the_guarantee_holds_in_simulation_and_the_naive_threshold_breaks_it():
    """Violation rate P(R(threshold) > alpha) <= delta up to Monte-Carlo error (3 standard errors), on a grid of
    21 thresholds fixed in advance. The same simulation catches the naive choice (the lowest threshold whose risk
    on the sample is <= alpha), which violates about half the time: the check has teeth."""
    alpha, delta, trials, n = 0.12, 0.1, 400, 1000
    grid = np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(2026)
    violations = naive_violations = found = 0
    for _ in range(trials):
        confidence, correct = draw(rng, n)
        chosen = cc.abstention_threshold(confidence, correct, alpha, delta=delta, thresholds=grid)
        if chosen.found:
            found += 1
            violations += population_risk(chosen.threshold) > alpha
        curve = cc.risk_coverage(confidence, correct)
        ok = curve.risk <= alpha
        if ok.any():
            naive_violations += population_risk(curve.threshold[ok].min()) > alpha
    allowed = delta + 3 * math.sqrt(delta * (1 - delta) / trials)
    assert violations / trials <= allowed
    assert found / trials > 0.9  # not vacuous: a threshold is certified almost always
    assert naive_violations / trials > 2 * allowed


def test_the_certified_threshold_is_the_lowest_with_a_clopper_pearson_bound_under_the_target():
    rng = np.random.default_rng(5)
    confidence, correct = draw(rng, 3000)
    grid = np.linspace(0.0, 1.0, 41)
    chosen = cc.abstention_threshold(confidence, correct, 0.1, delta=0.05, thresholds=grid)
    level = 1 - 0.05 / grid.size
    uppers = {}
    for t in grid:
        kept = confidence >= t
        n, e = int(kept.sum()), int((1 - correct[kept]).sum())
        if n:  # one-sided exact upper bound = the two-sided bound at level 2 * level - 1
            uppers[t] = stats.binomtest(e, n).proportion_ci(confidence_level=2 * level - 1, method="exact").high
    certified = [t for t, upper in uppers.items() if upper <= 0.1]
    assert chosen.found and chosen.threshold == pytest.approx(min(certified))
    assert chosen.risk_upper == pytest.approx(uppers[min(certified)], rel=1e-9)
    kept = confidence >= chosen.threshold
    assert chosen.n_accepted == kept.sum() and chosen.coverage == kept.mean()
    assert chosen.errors == (1 - correct[kept]).sum() and chosen.n_thresholds == 41
    assert "at most 0.1" in chosen.guarantee and "not guaranteed" in chosen.guarantee


def test_of_thresholds_keeping_the_same_items_the_lowest_is_chosen():
    """Every certified threshold is covered by the guarantee at once, so the lowest is chosen: below the smallest
    confidence of the sample a lower threshold keeps the same items here and more items later."""
    confidence = np.linspace(0.5, 1.0, 400)
    chosen = cc.abstention_threshold(confidence, np.ones(400), 0.1, thresholds=[0.9, 0.6, 0.3, 0.0])
    assert chosen.threshold == 0.0 and chosen.coverage == 1.0


def test_too_few_items_certify_nothing_and_say_so():
    chosen = cc.abstention_threshold([0.9, 0.8, 0.95], [1, 1, 1], 0.1)
    assert not chosen.found and chosen.threshold == math.inf and chosen.coverage == 0.0
    assert "abstain on everything" in chosen.guarantee
    assert chosen.n_thresholds == selective.THRESHOLD_GRID.size


@pytest.mark.parametrize("kwargs, match", [({"target_risk": 0.0}, "target_risk"), ({"target_risk": 0.1, "delta": 1.0},
                                                                                     "delta"),
                                           ({"target_risk": 0.1, "thresholds": [1.2]}, "thresholds")])
def test_abstention_threshold_refuses_bad_options(kwargs, match):
    with pytest.raises(cc.CalibrationInputError, match=match):
        cc.abstention_threshold([0.5, 0.6], [1, 0], **kwargs)


def test_a_threshold_whose_risk_is_exactly_the_target_is_certified_at_most_delta_of_the_time():
    """The sharp case of the guarantee: one threshold t0 with R(t0) = alpha (a true null at its edge). Its
    certification rate is the test's size, <= delta up to Monte-Carlo error, and not far below (measured
    0.08 for delta 0.1: the binomial test is exact up to its discreteness)."""
    from scipy.optimize import brentq

    alpha, delta, trials = 0.12, 0.1, 1000
    t0 = brentq(lambda t: population_risk(t) - alpha, 0.0, 0.99)
    rng = np.random.default_rng(11)
    certified = sum(cc.abstention_threshold(*draw(rng, 1000), alpha, delta=delta, thresholds=[t0]).found
                    for _ in range(trials))
    standard_error = math.sqrt(delta * (1 - delta) / trials)
    assert delta - 6 * standard_error < certified / trials <= delta + 3 * standard_error


def test_fixed_sequence_stops_at_the_first_failure_from_the_top():
    confidence = np.linspace(0.5, 0.9, 500)
    correct = np.ones(500)
    bonferroni = cc.abstention_threshold(confidence, correct, 0.1, thresholds=[1.0, 0.5])
    sequence = cc.abstention_threshold(confidence, correct, 0.1, thresholds=[1.0, 0.5], method="fixed_sequence")
    assert bonferroni.found and bonferroni.threshold == 0.5
    assert not sequence.found and sequence.method == "fixed_sequence"  # nothing at or above 1.0: it stops there
    started_lower = cc.abstention_threshold(confidence, correct, 0.1, thresholds=[0.8, 0.5], method="fixed_sequence")
    assert started_lower.found and started_lower.threshold == 0.5 and "fixed-sequence" in started_lower.guarantee
    with pytest.raises(cc.CalibrationInputError, match="method"):
        cc.abstention_threshold(confidence, correct, 0.1, method="holm")


def test_fixed_sequence_keeps_the_guarantee_in_simulation():
    """Violation rate <= delta up to Monte-Carlo error, on a grid fixed in advance that starts where items are."""
    alpha, delta, trials = 0.12, 0.1, 400
    grid = np.round(np.arange(0.95, -0.001, -0.01), 2)
    rng = np.random.default_rng(3)
    violations = found = 0
    for _ in range(trials):
        chosen = cc.abstention_threshold(*draw(rng, 1000), alpha, delta=delta, thresholds=grid,
                                         method="fixed_sequence")
        found += chosen.found
        violations += chosen.found and population_risk(chosen.threshold) > alpha
    assert violations / trials <= delta + 3 * math.sqrt(delta * (1 - delta) / trials)
    assert found / trials > 0.9
