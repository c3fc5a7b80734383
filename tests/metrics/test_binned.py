"""Tests for calib_core.metrics.binned: known values, paper examples, GCE variants, invariants."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.metrics.debiased import ece_sweep_details


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


def naive_gce(probs, labels, n_bins, binning, max_prob, class_conditional, threshold, norm, right=True):
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
            if right:  # (lo, hi], the first bin also holds 0
                groups = [((v > lo) | ((lo == 0) & (v == 0))) & (v <= hi) for lo, hi in zip(edges[:-1], edges[1:])]
            else:  # [lo, hi), the last bin also holds 1
                groups = [(v >= lo) & ((v < hi) | ((hi == 1) & (v == 1))) for lo, hi in zip(edges[:-1], edges[1:])]
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


# --- right=False: [lo, hi) uniform bins (issue 11, item 9) ----------------------------------------

ISSUE_PROBS = [[.75, .15, .1], [.1, .8, .1], [.1, .3, .6], [.3, .3, .4]]
ISSUE_LABELS = [0, 1, 1, 2]


def test_issue_example_under_both_conventions():
    assert cc.ece(ISSUE_PROBS, ISSUE_LABELS, n_bins=4) == pytest.approx(0.2875, abs=1e-12)
    assert cc.ece(ISSUE_PROBS, ISSUE_LABELS, n_bins=4, right=False) == pytest.approx(0.4125, abs=1e-12)


def test_torchmetrics_docstring_example_with_left_closed_bins():
    """torchmetrics' multiclass_calibration_error example (n_bins=3): 0.2000, 0.2082, 0.2333."""
    preds = [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40], [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]]
    target = [0, 1, 2, 0]
    assert cc.ece(preds, target, n_bins=3, right=False) == pytest.approx(0.2000, abs=5e-5)
    assert cc.ece(preds, target, n_bins=3, norm="l2", right=False) == pytest.approx(0.2082, abs=5e-5)
    assert cc.mce(preds, target, n_bins=3, right=False) == pytest.approx(0.2333, abs=5e-5)


def edge_predictions(seed, n=300):
    """Rows whose entries are multiples of 1/20: many sit exactly on (or one ulp off) uniform edges."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 21, n)
    b = rng.integers(0, 21, n) % (21 - a)
    probs = np.column_stack([a / 20, b / 20, np.maximum(1.0 - a / 20 - b / 20, 0.0)])
    # correct 60 % of the time: low confidences are under-, high ones over-confident, so where
    # an edge value goes changes the error
    labels = np.where(rng.random(n) < 0.6, probs.argmax(1), rng.integers(0, 3, n))
    return probs, labels


def digitize_bins(values, n_bins, right):
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.clip(np.digitize(values, edges, right=right) - 1, 0, n_bins - 1)


def reference_errors(values, targets, n_bins, right):
    """Per-bin (weight, gap, count, accuracy) on numpy.digitize bins, empty bins dropped."""
    index = digitize_bins(values, n_bins, right)
    rows = [(np.mean(index == b), values[index == b].mean() - targets[index == b].mean(),
             np.sum(index == b), targets[index == b].mean()) for b in range(n_bins) if np.any(index == b)]
    return np.array(rows).T


def reference_ece(values, targets, n_bins, right, norm="l1"):
    weight, gap, _, _ = reference_errors(values, targets, n_bins, right)
    if norm == "max":
        return np.abs(gap).max()
    return np.sum(weight * np.abs(gap)) if norm == "l1" else np.sqrt(np.sum(weight * gap ** 2))


def reference_top(probs, labels):
    return probs.max(1), (probs.argmax(1) == labels).astype(float)


def reference_classwise(probs, labels, n_bins, right):
    return np.mean([reference_ece(probs[:, k], (labels == k).astype(float), n_bins, right)
                    for k in range(probs.shape[1])])


def reference_debiased(probs, labels, n_bins, right):
    weight, gap, count, acc = reference_errors(*reference_top(probs, labels), n_bins, right)
    terms = np.where(count >= 2, gap ** 2 - acc * (1 - acc) / np.maximum(count - 1, 1), 0.0)
    return np.sqrt(max(np.sum(weight * terms), 0.0))


RIGHT_CASES = {
    "ece": (lambda p, y, n, r: cc.ece(p, y, n_bins=n, right=r),
            lambda p, y, n, r: reference_ece(*reference_top(p, y), n, r)),
    "rmsce": (lambda p, y, n, r: cc.ece(p, y, n_bins=n, norm="l2", right=r),
              lambda p, y, n, r: reference_ece(*reference_top(p, y), n, r, "l2")),
    "mce": (lambda p, y, n, r: cc.mce(p, y, n_bins=n, right=r),
            lambda p, y, n, r: reference_ece(*reference_top(p, y), n, r, "max")),
    "classwise_ece": (lambda p, y, n, r: cc.classwise_ece(p, y, n_bins=n, right=r), reference_classwise),
    "sce": (lambda p, y, n, r: cc.sce(p, y, n_bins=n, right=r), reference_classwise),
    "gce_top": (lambda p, y, n, r: cc.gce(p, y, n_bins=n, threshold=0.0, right=r),
                lambda p, y, n, r: naive_gce(p, y, n, "uniform", True, False, 0.0, "l1", right=r)),
    "gce_cc_all_l2": (lambda p, y, n, r: cc.gce(p, y, n_bins=n, max_prob=False, class_conditional=True,
                                                norm="l2", right=r),
                      lambda p, y, n, r: naive_gce(p, y, n, "uniform", False, True, 0.0, "l2", right=r)),
    "reliability_table": (lambda p, y, n, r: float((lambda t: np.sum(t["weight"] * t["gap"].abs()))(
                              cc.reliability_table(p, y, n_bins=n, right=r))),
                          lambda p, y, n, r: reference_ece(*reference_top(p, y), n, r)),
    "reliability_table_class": (lambda p, y, n, r: float((lambda t: np.sum(t["weight"] * t["gap"].abs()))(
                                    cc.reliability_table(p, y, n_bins=n, target=1, right=r))),
                                lambda p, y, n, r: reference_ece(p[:, 1], (y == 1).astype(float), n, r)),
    "bin_sensitivity_ece": (lambda p, y, n, r: float(cc.bin_sensitivity(p, y, [n], ["ece"], ["uniform"],
                                                                         right=r)["value"].iloc[0]),
                            lambda p, y, n, r: reference_ece(*reference_top(p, y), n, r)),
    "bin_sensitivity_sce": (lambda p, y, n, r: float(cc.bin_sensitivity(p, y, [n], ["sce"], ["uniform"],
                                                                         right=r)["value"].iloc[0]),
                            reference_classwise),
    "debiased_ece": (lambda p, y, n, r: cc.debiased_ece(p, y, n_bins=n, binning="uniform", right=r),
                     reference_debiased),
}


@pytest.mark.parametrize("n_bins", [4, 10])
@pytest.mark.parametrize("right", [True, False])
@pytest.mark.parametrize("name", sorted(RIGHT_CASES))
def test_every_uniform_binned_function_follows_numpy_digitize(name, right, n_bins):
    ours, reference = RIGHT_CASES[name]
    for seed in range(3):
        probs, labels = edge_predictions(seed)
        assert ours(probs, labels, n_bins, right) == pytest.approx(reference(probs, labels, n_bins, right),
                                                                   abs=1e-12)


@pytest.mark.parametrize("name", sorted(RIGHT_CASES))
def test_the_two_conventions_differ_on_edge_values(name):
    ours, _ = RIGHT_CASES[name]
    probs, labels = edge_predictions(0)
    assert ours(probs, labels, 4, True) != pytest.approx(ours(probs, labels, 4, False), abs=1e-9)


def reference_sweep(probs, labels, right, max_bins):
    """Roelofs et al.'s equal-width sweep on numpy.digitize bins: the last b with monotone accuracy."""
    values, correct = reference_top(probs, labels)
    best, nonempty = 1, 1
    for b in range(2, max_bins + 1):
        if nonempty >= np.unique(values).size:  # every distinct confidence has its own bin
            break
        index = digitize_bins(values, b, right)
        acc = [correct[index == i].mean() for i in range(b) if np.any(index == i)]
        if np.any(np.diff(acc) < 0):
            break
        best, nonempty = b, np.unique(index).size
    return reference_ece(values, correct, best, right), best


@pytest.mark.parametrize("right", [True, False])
def test_equal_width_sweep_honours_right(right):
    probs, labels = edge_predictions(5, n=60)
    # wrong below confidence 0.5 (one wrong above): accuracy rises with confidence for many bin counts
    confident = probs.max(1) >= 0.5
    confident[np.flatnonzero(probs.max(1) > 0.8)[:1]] = False
    labels = np.where(confident, probs.argmax(1), (probs.argmax(1) + 1) % 3)
    details = ece_sweep_details(probs, labels, binning="uniform", right=right, max_bins=40)
    value, best = reference_sweep(probs, labels, right, 40)
    assert details.n_bins == best > 2
    assert details.value == pytest.approx(value, abs=1e-12)


# --- ece's fused check + top label (issue 15: validation and arg-max in one pass) -------------------------------

from calib_core.binning import bin_statistics, binned_error  # noqa: E402
from calib_core.metrics.binned import _checked_top_label, top_label  # noqa: E402
from calib_core.validation import check_probs_labels  # noqa: E402


@pytest.mark.parametrize("n, k", [(1, 2), (7, 3), (1311, 100), (5000, 100), (2621, 50), (300, 1000)])
def test_fused_top_label_equals_check_then_top_label(n, k):
    rng = np.random.default_rng(n + k)
    probs = rng.dirichlet(np.ones(k), size=n)
    probs[::3, :2] = probs[::3, :2].mean(axis=1, keepdims=True)  # ties: the lowest index wins
    labels = rng.integers(0, k, n)
    confidence, correct = _checked_top_label(probs, labels)
    expected = top_label(*check_probs_labels(probs, labels))
    np.testing.assert_array_equal(confidence, expected[0])
    np.testing.assert_array_equal(correct, expected[1])
    for binning in ("uniform", "adaptive"):
        for norm in ("l1", "l2", "max"):
            stats = bin_statistics(expected[0], expected[1], 15, binning)
            assert cc.ece(probs, labels, binning=binning, norm=norm) == float(binned_error(stats, norm))


def test_ece_errors_keep_their_order_probs_then_labels_then_options():
    with pytest.raises(CalibrationInputError, match="negative values"):
        cc.ece([[1.5, -0.5], [0.5, 0.5]], [0, 7], n_bins=0)
    with pytest.raises(CalibrationInputError, match="must lie in 0..1"):
        cc.ece([[0.5, 0.5], [0.5, 0.5]], [0, 7], n_bins=0)
    with pytest.raises(CalibrationInputError, match="n_bins"):
        cc.ece([[0.5, 0.5], [0.5, 0.5]], [0, 1], n_bins=0)


def test_ece_of_predictions_arrays_skips_nothing_it_should_not():
    from calib_core.io import Predictions
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(5), size=400)
    labels = rng.integers(0, 5, 400)
    pred = Predictions.from_arrays(probs=probs.astype(np.float32), labels=labels)  # converted: marked
    raw = np.array(pred.probs)
    for metric in (cc.ece, cc.mce, cc.accuracy, cc.classwise_ece, cc.ace):
        assert metric(pred.probs, pred.labels) == metric(raw, labels)


def test_compiled_row_max_gives_numpys_top_label_of_read_only_blocks(monkeypatch):
    """Issue 15: for a Predictions' read-only matrix each block was copied before numpy's arg-max (ece at
    1,000,000 x 100: 1.23x the plain numpy ECE, target 1.2x); the kernel reads each row once. Same labels and
    confidences, ties going to the lowest index as with np.argmax."""
    from calib_core._accel import compiled as _compiled
    from calib_core.metrics import binned
    from tests.compiled_support import require_kernel
    require_kernel("row_max")
    rng = np.random.default_rng(0)
    probs = np.round(rng.dirichlet(np.ones(7), size=20_000), 1)  # many ties within rows
    probs[:5] = 1.0 / 7  # every class tied
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 7, 20_000)
    pred = cc.Predictions.from_arrays(probs.tolist(), labels.tolist())
    compiled = binned.top_label.__wrapped__(pred.probs, pred.labels)
    expected_index = probs.argmax(axis=1)
    np.testing.assert_array_equal(compiled[0], probs[np.arange(20_000), expected_index])
    np.testing.assert_array_equal(compiled[1], (expected_index == labels).astype(float))
    monkeypatch.setattr(_compiled, "row_max", None)
    numpy_path = binned.top_label.__wrapped__(pred.probs, pred.labels)
    np.testing.assert_array_equal(compiled[0], numpy_path[0])
    np.testing.assert_array_equal(compiled[1], numpy_path[1])
    assert cc.ece(pred.probs, pred.labels) == cc.ece(probs, labels)


@pytest.mark.parametrize("binning, norm", [("uniform", "l1"), ("adaptive", "l1"), ("uniform", "l2"),
                                           ("uniform", "max")])
def test_float32_probabilities_give_the_numbers_of_their_float64_copy_without_making_it(binning, norm):
    """Issue 29 item 6: ``ece`` on float32 (what model outputs usually are) first copied the whole matrix to
    float64 (43-47 % of the call at 1e6 x 100, and a copy twice the input's size). The checked pass now reads
    the float32 blocks themselves; the numbers are those of the float64 copy (float32 maxima are exact in
    float64), ties and invalid rows included."""
    import tracemalloc

    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.full(50, 0.2), size=20_000).astype(np.float32)
    probs /= probs.sum(axis=1, keepdims=True)
    probs[:50] = np.float32(1 / 50)  # tied rows: the arg-max goes to the lowest index in both types
    labels = rng.integers(0, 50, 20_000)
    assert cc.ece(probs, labels, 15, binning, norm) == cc.ece(probs.astype(np.float64), labels, 15, binning, norm)
    tracemalloc.start()
    try:
        cc.ece(probs, labels, 15, binning, norm)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * probs.nbytes  # a float64 copy alone is twice the input
    bad = probs.copy()
    bad[7, 3] = np.nan
    with pytest.raises(cc.CalibrationInputError, match="row 7"):
        cc.ece(bad, labels)
