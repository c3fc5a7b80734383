"""Tests for calib_core.binned: known values, paper examples, GCE variants, invariants."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core import CalibrationInputError


def nixon_figure4():
    """Nixon et al. 2019, Figure 4: the ECE cancellation pathology."""
    probs = np.array([[0.52, 0.48]] * 450 + [[0.58, 0.42]] * 550)
    labels = np.array([1] * 450 + [0] * 550)
    return probs, labels


def test_nixon_figure4_pathology_gives_0003_with_10_bins():
    probs, labels = nixon_figure4()
    assert cc.ece(probs, labels, n_bins=10) == pytest.approx(0.003, abs=1e-12)


def test_tiny_case_by_hand():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]])
    labels = np.array([0, 1, 1, 1])
    # top-label: (0.9, ok) (0.6, wrong) (0.8, ok) (0.55, ok)
    # 20 bins put each alone: 0.9 -> |0.9-1|, 0.6 -> |0.6-0|, 0.8 -> |0.8-1|, 0.55 -> |0.55-1|
    expected = (0.1 + 0.6 + 0.2 + 0.45) / 4
    assert cc.ece(probs, labels, n_bins=20) == pytest.approx(expected)
    assert cc.mce(probs, labels, n_bins=20) == pytest.approx(0.6)
    assert cc.ece(probs, labels, n_bins=20, norm="l2") == pytest.approx(np.sqrt((0.01 + 0.36 + 0.04 + 0.2025) / 4))
    # one bin: |mean conf - accuracy|
    assert cc.ece(probs, labels, n_bins=1) == pytest.approx(abs((0.9 + 0.6 + 0.8 + 0.55) / 4 - 0.75))
    # 10 bins put 0.55 (ok) and 0.6 (wrong) together: |0.575 - 0.5| with weight 1/2
    assert cc.ece(probs, labels, n_bins=10) == pytest.approx((0.1 + 0.2) / 4 + 0.075 / 2)
    assert cc.accuracy(probs, labels) == 0.75


def test_classwise_ece_by_hand():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]])
    labels = np.array([0, 1, 1, 1])
    # class 0 values 0.9(1) 0.6(0) 0.2(0) 0.45(0), each alone in a bin of 10
    class0 = (0.1 + 0.6 + 0.2 + 0.45) / 4
    class1 = (0.1 + 0.6 + 0.2 + 0.45) / 4
    np.testing.assert_allclose(cc.classwise_ece(probs, labels, n_bins=10, per_class=True), [class0, class1])
    assert cc.sce(probs, labels, n_bins=10) == pytest.approx((class0 + class1) / 2)


def test_ace_by_hand_with_two_ranges():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]])
    labels = np.array([0, 1, 1, 1])
    # class 0 sorted: 0.2(0) 0.45(0) | 0.6(0) 0.9(1) -> |0.325-0|, |0.75-0.5|
    # class 1 sorted: 0.1(0) 0.4(1) | 0.55(1) 0.8(1) -> |0.25-0.5|, |0.675-1|
    per_class = [(0.325 + 0.25) / 2, (0.25 + 0.325) / 2]
    np.testing.assert_allclose(cc.ace(probs, labels, n_bins=2, per_class=True), per_class)
    # threshold 0.3 drops 0.2 (class 0) and 0.1 (class 1)
    # class 0: 0.45(0) 0.6(0) | 0.9(1) -> |0.525|, |0.1| ; class 1: 0.4(1) 0.55(1) | 0.8(1) -> 0.525, 0.2
    np.testing.assert_allclose(cc.tace(probs, labels, n_bins=2, threshold=0.3, per_class=True),
                               [(0.525 + 0.1) / 2, (0.525 + 0.2) / 2])


def test_tace_class_without_values_above_threshold_contributes_zero():
    probs = np.array([[0.995, 0.005], [0.999, 0.001]])
    labels = np.array([0, 0])
    per_class = cc.tace(probs, labels, n_bins=2, per_class=True)
    assert per_class[1] == 0.0
    assert cc.tace(probs, labels, n_bins=2) == pytest.approx(per_class[0] / 2)


def random_predictions(seed, n=400, k=4, temperature=1.0, calibrated=False):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    truth = probs if calibrated else np.exp(logits / temperature) / np.exp(logits / temperature).sum(1, keepdims=True)
    labels = (truth.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1)
    return probs, np.minimum(labels, k - 1)


@pytest.mark.parametrize("seed", range(3))
def test_ace_equals_matching_gce_when_bins_split_evenly(seed):
    probs, labels = random_predictions(seed, n=300, k=3)
    assert cc.ace(probs, labels, n_bins=15) == pytest.approx(
        cc.gce(probs, labels, n_bins=15, binning="adaptive", max_prob=False, class_conditional=True))
    assert cc.tace(probs, labels, n_bins=10, threshold=0.0) == pytest.approx(cc.ace(probs, labels, n_bins=10))


def test_gce_special_cases_match_named_metrics():
    probs, labels = random_predictions(7, n=500, k=5)
    assert cc.gce(probs, labels) == pytest.approx(cc.ece(probs, labels))
    assert cc.gce(probs, labels, norm="l2") == pytest.approx(cc.ece(probs, labels, norm="l2"))
    assert cc.gce(probs, labels, max_prob=False, class_conditional=True) == pytest.approx(cc.sce(probs, labels))
    assert cc.gce(probs, labels, binning="adaptive") == pytest.approx(cc.ece(probs, labels, binning="adaptive"))


def naive_gce(probs, labels, n_bins, binning, max_prob, class_conditional, threshold, norm):
    """Independent loop implementation of the contract's definition of gce."""
    n, k = probs.shape
    p = 1 if norm == "l1" else 2

    def part(v, t):
        keep = v > threshold
        v, t = v[keep], t[keep]
        if v.size == 0:
            return 0.0
        if binning == "uniform":
            edges = np.linspace(0, 1, n_bins + 1)
            groups = [((v > lo) | ((lo == 0) & (v == 0))) & (v <= hi) for lo, hi in zip(edges[:-1], edges[1:])]
        else:
            order = np.sort(v)
            uppers = [run[-1] for run in np.array_split(order, n_bins) if run.size]
            index = np.searchsorted(uppers, v, side="left")
            groups = [index == b for b in range(len(uppers))]
        return sum(g.sum() / v.size * abs(v[g].mean() - t[g].mean()) ** p for g in groups if g.any())

    predicted = probs.argmax(1)
    if not class_conditional:
        if max_prob:
            value = part(probs.max(1), (predicted == labels).astype(float))
        else:
            value = part(probs.ravel(), (np.arange(k) == labels[:, None]).ravel().astype(float))
    else:
        parts = []
        for c in range(k):
            rows = predicted == c if max_prob else np.ones(n, bool)
            parts.append(part(probs[rows, c], (labels[rows] == c).astype(float)))
        value = np.mean(parts)
    return value if norm == "l1" else np.sqrt(value)


@pytest.mark.parametrize("binning, max_prob, class_conditional, threshold, norm",
                         list(itertools.product(["uniform", "adaptive"], [True, False], [True, False],
                                                [0.0, 0.01], ["l1", "l2"])))
def test_all_32_gce_variants_match_a_loop_implementation(binning, max_prob, class_conditional, threshold, norm):
    probs, labels = random_predictions(11, n=257, k=4)
    probs[:5] = [1.0, 0.0, 0.0, 0.0]  # exact zeros are dropped by the threshold
    expected = naive_gce(probs, labels, 12, binning, max_prob, class_conditional, threshold, norm)
    got = cc.gce(probs, labels, n_bins=12, binning=binning, max_prob=max_prob,
                 class_conditional=class_conditional, threshold=threshold, norm=norm)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_labels_drawn_from_probabilities_give_ece_near_zero():
    probs, labels = random_predictions(3, n=200_000, k=5, calibrated=True)
    assert cc.ece(probs, labels) < 0.005
    assert cc.classwise_ece(probs, labels) < 0.005
    overconfident, labels_hot = random_predictions(3, n=200_000, k=5, temperature=2.0)
    assert cc.ece(overconfident, labels_hot) > 0.05


METRIC_FUNCTIONS = {
    "ece": cc.ece, "mce": cc.mce, "rmsce": lambda p, y: cc.ece(p, y, norm="l2"),
    "ece_adaptive": lambda p, y: cc.ece(p, y, binning="adaptive"),
    "classwise_ece": cc.classwise_ece, "sce": cc.sce, "ace": cc.ace, "tace": cc.tace,
    "gce_cc_maxprob": lambda p, y: cc.gce(p, y, class_conditional=True),
    "gce_adaptive_l2": lambda p, y: cc.gce(p, y, binning="adaptive", max_prob=False, norm="l2"),
}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 80), k=st.integers(2, 5))
@pytest.mark.parametrize("name", sorted(METRIC_FUNCTIONS))
def test_binned_metrics_are_bounded_and_ignore_row_order(name, seed, n, k):
    probs, labels = random_predictions(seed, n=n, k=k)
    metric = METRIC_FUNCTIONS[name]
    value = metric(probs, labels)
    assert 0.0 <= value <= 1.0
    perm = np.random.default_rng(seed + 1).permutation(n)
    assert metric(probs[perm], labels[perm]) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("metric", [cc.ece, cc.classwise_ece, cc.ace, cc.tace, cc.sce, cc.mce])
def test_metrics_accept_lists_and_float32(metric):
    probs = [[0.7, 0.3], [0.2, 0.8]]
    assert metric(probs, [0, 0]) == pytest.approx(metric(np.array(probs, dtype=np.float32), np.array([0, 0])), abs=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"norm": "l3"}, "norm"),
    ({"binning": "equal"}, "binning"),
    ({"n_bins": 0}, "n_bins"),
])
def test_ece_option_errors(kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.ece([[0.5, 0.5]], [0], **kwargs)


def test_gce_rejects_max_norm_and_negative_threshold():
    with pytest.raises(CalibrationInputError, match="norm"):
        cc.gce([[0.5, 0.5]], [0], norm="max")
    with pytest.raises(CalibrationInputError, match="threshold"):
        cc.gce([[0.5, 0.5]], [0], threshold=-0.1)
