"""Tests for calib_core.metrics.kernel: MMCE and SKCE (hand-checked cases, full-matrix agreement, unbiasedness)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist, squareform

from calib_core import CalibrationInputError
import calib_core as cc
from calib_core.metrics import kernel
from calib_core.metrics.kernel import median_pairwise_distance, mmce, skce


def random_predictions(seed, n, k, concentration=1.0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), n)
    labels = rng.integers(0, k, n)
    return probs, labels


def sample_labels(probs, rng):
    """Labels drawn from the predicted distributions: a calibrated model."""
    return (rng.random(probs.shape[0])[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, probs.shape[1] - 1)


def full_matrix_mmce(probs, labels, bandwidth):
    confidence = probs.max(axis=1)
    residual = (probs.argmax(axis=1) == labels) - confidence
    gram = np.exp(-np.abs(confidence[:, None] - confidence[None, :]) / bandwidth)
    return np.sqrt(residual @ gram @ residual) / probs.shape[0]


def full_matrix_skce(probs, labels, bandwidth):
    n = probs.shape[0]
    residual = np.eye(probs.shape[1])[labels] - probs
    h = np.exp(-squareform(pdist(probs)) / bandwidth) * (residual @ residual.T)
    return (h.sum() - np.trace(h)) / (n * (n - 1))


# ----------------------------------------------------------------------------- MMCE
def test_mmce_two_points_by_hand():
    # r = 0.8 (correct, residual 0.2) and r = 0.6 (wrong, residual -0.6); k_12 = exp(-0.2 / 0.4)
    value = mmce([[0.8, 0.2], [0.6, 0.4]], [0, 1], bandwidth=0.4)
    assert value == pytest.approx(np.sqrt(0.2**2 + 0.6**2 - 2 * 0.2 * 0.6 * np.exp(-0.5)) / 2, rel=1e-12)


def test_mmce_three_points_with_a_tie_by_hand():
    probs = [[0.7, 0.3], [0.3, 0.7], [0.9, 0.1]]
    labels = [0, 0, 0]
    # confidences 0.7 (ok: 0.3), 0.7 (wrong: -0.7), 0.9 (ok: 0.1); bandwidth 0.1
    a = np.array([0.3, -0.7, 0.1])
    k = np.exp(-0.2 / 0.1)
    total = a @ a + 2 * (a[0] * a[1] * 1.0 + a[0] * a[2] * k + a[1] * a[2] * k)
    assert mmce(probs, labels, bandwidth=0.1) == pytest.approx(np.sqrt(total) / 3, rel=1e-12)


def test_mmce_is_zero_when_every_confidence_level_is_exactly_calibrated():
    # confidence 0.5: one of two right; confidence 0.75: three of four right
    probs = [[0.5, 0.5]] * 2 + [[0.75, 0.25]] * 4
    labels = [0, 1, 0, 0, 0, 1]
    # the square root turns a rounding residue of ~1e-17 in the double sum into ~1e-9
    assert mmce(probs, labels) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("bandwidth", [1e-4, 0.01, 0.4, 50.0])
def test_mmce_matches_the_full_matrix(bandwidth):
    probs, labels = random_predictions(3, 300, 4, concentration=0.5)
    assert mmce(probs, labels, bandwidth) == pytest.approx(full_matrix_mmce(probs, labels, bandwidth), rel=1e-9)


def test_mmce_is_small_for_calibrated_and_large_for_overconfident_predictions():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), 4000)
    labels = sample_labels(probs, rng)
    sharpened = probs**3 / (probs**3).sum(axis=1, keepdims=True)
    assert mmce(probs, labels) < 0.03
    assert mmce(sharpened, labels) > 0.1


# ----------------------------------------------------------------------------- SKCE
def test_skce_two_points_by_hand():
    # residuals (-0.8, 0.8) and (0.7, -0.7): inner product -1.12; distance sqrt(0.5) is the median
    probs = [[0.8, 0.2], [0.3, 0.7]]
    assert skce(probs, [1, 0]) == pytest.approx(-1.12 * np.exp(-1.0), rel=1e-12)
    assert skce(probs, [1, 0], bandwidth=2 * np.sqrt(0.5)) == pytest.approx(-1.12 * np.exp(-0.5), rel=1e-12)


def test_skce_three_points_by_hand():
    probs = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0]]
    labels = [1, 1, 0]
    # residuals e_y - p: (-1, 1, 0), (0, 0, 0), (0.5, -0.5, 0); only pair (0, 2) counts
    # distance between rows 0 and 2: sqrt(0.25 + 0.25); inner product -1
    h02 = np.exp(-np.sqrt(0.5) / 1.0) * -1.0
    assert skce(probs, labels, bandwidth=1.0) == pytest.approx(h02 / 3, rel=1e-12)
    # pairwise distances sqrt(2), sqrt(0.5), sqrt(0.5): median sqrt(0.5)
    assert skce(probs, labels) == pytest.approx(np.exp(-1.0) * -1.0 / 3, rel=1e-12)


def test_skce_block_estimator_by_hand():
    probs = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.6, 0.4], [0.1, 0.9]])
    labels = np.array([1, 0, 0, 1, 1])
    # pairs (0, 1) and (2, 3); row 4 is left out
    h01 = np.exp(-np.sqrt(0.5)) * -1.12
    h23 = 1.0 * ((0.4 * -0.6) + (-0.4 * 0.6))
    assert skce(probs, labels, bandwidth=1.0, estimator="block") == pytest.approx((h01 + h23) / 2, rel=1e-12)


@pytest.mark.parametrize("bandwidth", [None, 0.05, 3.0])
def test_skce_matches_the_full_matrix_across_many_blocks(monkeypatch, bandwidth):
    probs, labels = random_predictions(11, 257, 5)
    expected_bandwidth = np.median(pdist(probs)) if bandwidth is None else bandwidth
    expected = full_matrix_skce(probs, labels, expected_bandwidth)
    assert skce(probs, labels, bandwidth) == pytest.approx(expected, rel=1e-10, abs=1e-14)
    monkeypatch.setattr(kernel, "BLOCK_ELEMENTS", 1000)  # about 4 to 250 rows per block
    assert skce(probs, labels, bandwidth) == pytest.approx(expected, rel=1e-10, abs=1e-14)


def test_skce_unbiased_averages_zero_for_calibrated_and_is_positive_for_miscalibrated():
    rng = np.random.default_rng(2024)
    calibrated, miscalibrated, blocks = [], [], []
    for _ in range(200):
        probs = rng.dirichlet(np.ones(3), 80)
        labels = sample_labels(probs, rng)
        calibrated.append(skce(probs, labels, bandwidth=0.5))
        blocks.append(skce(probs, labels, bandwidth=0.5, estimator="block"))
        sharpened = probs**2.5 / (probs**2.5).sum(axis=1, keepdims=True)
        miscalibrated.append(skce(sharpened, labels, bandwidth=0.5))
    for values in (calibrated, blocks):
        mean, se = np.mean(values), np.std(values, ddof=1) / np.sqrt(len(values))
        assert abs(mean) < 3.5 * se
    mean, se = np.mean(miscalibrated), np.std(miscalibrated, ddof=1) / np.sqrt(len(miscalibrated))
    assert mean > 10 * se


def test_skce_block_estimator_has_the_same_expectation_as_the_u_statistic():
    rng = np.random.default_rng(7)
    unbiased, block = [], []
    for _ in range(300):
        probs = rng.dirichlet(np.ones(3), 60)
        labels = sample_labels(probs, rng)
        sharpened = probs**2 / (probs**2).sum(axis=1, keepdims=True)
        unbiased.append(skce(sharpened, labels, bandwidth=0.3))
        block.append(skce(sharpened, labels, bandwidth=0.3, estimator="block"))
    difference = np.mean(block) - np.mean(unbiased)
    se = np.sqrt(np.var(block, ddof=1) / len(block) + np.var(unbiased, ddof=1) / len(unbiased))
    assert np.mean(unbiased) > 0
    assert abs(difference) < 3.5 * se
    assert np.std(block) > np.std(unbiased)  # the price of linear time


# ----------------------------------------------------------------------------- median heuristic
@pytest.mark.parametrize("n", [2, 3, 50, 2829, 2830])
def test_median_pairwise_distance_matches_scipy(n):
    probs, _ = random_predictions(n, n, 3)
    probs[: n // 4] = probs[0]  # ties
    assert median_pairwise_distance(probs) == pytest.approx(np.median(pdist(probs)), rel=1e-12)


def test_median_pairwise_distance_on_a_subset_of_rows():
    probs, _ = random_predictions(1, 500, 3)
    rows = np.sort(np.random.default_rng(4).choice(500, size=100, replace=False))
    assert median_pairwise_distance(probs, max_rows=100, seed=4) == pytest.approx(np.median(pdist(probs[rows])))
    assert median_pairwise_distance(probs, max_rows=1000, seed=4) == pytest.approx(np.median(pdist(probs)))


def test_row_blocks_stay_below_the_memory_limit():
    n = 300_000
    for triangular in (False, True):
        blocks = list(kernel.row_blocks(n, n, triangular=triangular))
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
        widths = [(stop - start) * (n - start if triangular else n) for start, stop in blocks]
        assert max(widths) * 8 <= 256 * 2**20


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, "wide"])
def test_bandwidth_validation(bad):
    probs, labels = random_predictions(0, 10, 3)
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        mmce(probs, labels, bandwidth=bad)
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        skce(probs, labels, bandwidth=bad)


def test_estimator_validation():
    probs, labels = random_predictions(0, 10, 3)
    with pytest.raises(CalibrationInputError, match="estimator"):
        skce(probs, labels, estimator="linear")


def test_skce_needs_two_rows():
    with pytest.raises(CalibrationInputError, match="at least 2 rows"):
        skce([[0.5, 0.5]], [0])
    with pytest.raises(CalibrationInputError, match="at least 2 rows"):
        median_pairwise_distance([[0.5, 0.5]])


def test_skce_zero_median_distance_asks_for_a_bandwidth():
    with pytest.raises(CalibrationInputError, match="median pairwise distance"):
        # 10 of the 15 pairs are identical rows
        skce([[0.5, 0.5]] * 5 + [[0.9, 0.1]], [0, 1, 0, 1, 0, 1])


def test_inputs_are_validated():
    with pytest.raises(CalibrationInputError, match="sum to 1"):
        mmce([[0.5, 0.6], [0.5, 0.5]], [0, 1])
    with pytest.raises(CalibrationInputError, match="labels"):
        skce([[0.5, 0.5], [0.2, 0.8]], [0, 2])


# ----------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), k=st.integers(2, 5))
def test_permutation_invariance_and_signs(seed, n, k):
    probs, labels = random_predictions(seed, n, k, concentration=0.7)
    order = np.random.default_rng(seed + 1).permutation(n)
    value = mmce(probs, labels)
    assert value >= 0.0
    assert mmce(probs[order], labels[order]) == pytest.approx(value, rel=1e-9, abs=1e-12)
    if np.median(pdist(probs)) > 0:
        assert skce(probs[order], labels[order]) == pytest.approx(skce(probs, labels), rel=1e-9, abs=1e-12)
    assert skce(probs[order], labels[order], bandwidth=0.3) == pytest.approx(
        skce(probs, labels, bandwidth=0.3), rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- median heuristic and standard errors

def test_median_heuristic_is_the_median_distance_when_that_is_positive():
    probs = np.random.default_rng(0).dirichlet([1, 1, 1], 200)
    assert cc.median_heuristic(probs) == cc.median_pairwise_distance(probs)


def test_median_heuristic_falls_back_to_the_distinct_predictions():
    # 30 copies of one row: 435 of the 528 pairs are identical, the median distance is 0 (and skce raised).
    rest = np.array([[0.1, 0.9], [0.5, 0.5], [0.9, 0.1]])
    probs = np.vstack([np.tile([0.7, 0.3], (30, 1)), rest])
    assert cc.median_pairwise_distance(probs) == 0.0
    distinct = np.unique(probs, axis=0)
    pairs = [np.linalg.norm(a - b) for i, a in enumerate(distinct) for b in distinct[i + 1:]]
    assert cc.median_heuristic(probs) == pytest.approx(np.median(pairs))
    assert cc.median_heuristic(np.tile([0.2, 0.8], (5, 1))) == 1.0


def brute_force_terms(probs, labels, h):
    residual = np.eye(probs.shape[1])[labels] - probs
    distance = np.linalg.norm(probs[:, None] - probs[None], axis=2)
    return np.exp(-distance / h) * (residual @ residual.T)


def test_unbiased_standard_error_follows_hoeffdings_formula():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([1, 2, 1], 40)
    labels = rng.integers(0, 3, 40)
    found = cc.skce_estimate(probs, labels, bandwidth=0.4)
    terms = brute_force_terms(probs, labels, 0.4)
    n = 40
    off = ~np.eye(n, dtype=bool)
    u = terms[off].sum() / (n * (n - 1))
    zeta2 = (terms[off] ** 2).sum() / (n * (n - 1)) - u ** 2
    row_means = (terms.sum(1) - np.diag(terms)) / (n - 1)
    spread = np.sum((row_means - u) ** 2) / (n - 1)
    zeta1 = max(((n - 1) * spread - zeta2) / (n - 2), 0.0)
    variance = 2 / (n * (n - 1)) * (2 * (n - 2) * zeta1 + zeta2)
    assert found.estimate == pytest.approx(u, rel=1e-12) == cc.skce(probs, labels, bandwidth=0.4)
    assert found.std_error == pytest.approx(np.sqrt(variance), rel=1e-10)
    assert found.n_terms == 780 and found.bandwidth == 0.4


def test_pair_terms_in_small_blocks_equal_the_whole_matrix_formula(monkeypatch):
    """Issue 15: the block SKCE built the (N, K) residuals and a reordered copy of probs (2 s at 50,000 x 1,000);
    the pairs are now gathered block by block, with the same arithmetic per term: the same numbers, bit for bit."""
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(7), size=301)
    labels = rng.integers(0, 7, 301)
    order = rng.permutation(301)
    first, second = order[0:300:2], order[1:300:2]
    residual = -probs
    residual[np.arange(301), labels] += 1.0
    distance = np.sqrt(np.sum((probs[first] - probs[second]) ** 2, axis=1))
    expected = np.exp(-distance / 0.4) * np.einsum("ij,ij->i", residual[first], residual[second])
    kept = probs.copy()
    monkeypatch.setattr(kernel, "_PAIR_BLOCK_VALUES", 7 * 11)  # 11 pairs per block, a short last block
    np.testing.assert_array_equal(kernel.pair_terms(probs, labels, first, second, 0.4), expected)
    np.testing.assert_array_equal(probs, kept)  # the input is not changed


def test_block_standard_error_is_the_spread_of_the_pair_terms():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet([1, 1], 51)
    labels = rng.integers(0, 2, 51)
    terms = cc.metrics.kernel.skce_block_terms(probs, labels, bandwidth=0.3)
    assert terms.size == 25
    found = cc.skce_estimate(probs, labels, bandwidth=0.3, estimator="block")
    assert found.estimate == pytest.approx(terms.mean()) == cc.skce(probs, labels, 0.3, "block")
    assert found.std_error == pytest.approx(terms.std(ddof=1) / 5)
    np.testing.assert_allclose(terms, np.diag(brute_force_terms(probs, labels, 0.3)[0::2, 1::2])[:25])


@pytest.mark.parametrize("estimator", ["unbiased", "block"])
def test_standard_errors_match_the_spread_over_samples(estimator):
    """Over 200 independent samples of a miscalibrated model the estimated standard error is close to the
    standard deviation of the estimates (so the normal interval covers about 95 %)."""
    rng = np.random.default_rng(0)
    values, errors = [], []
    for _ in range(200):
        logits = rng.normal(size=(150, 3)) * 1.5
        probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        truth = np.exp(logits / 2) / np.exp(logits / 2).sum(1, keepdims=True)
        labels = (rng.uniform(size=(150, 1)) > truth.cumsum(1)).sum(1).clip(0, 2)
        found = cc.skce_estimate(probs, labels, bandwidth=0.5, estimator=estimator)
        values.append(found.estimate)
        errors.append(found.std_error)
    assert np.mean(errors) == pytest.approx(np.std(values, ddof=1), rel=0.2)


def test_standard_error_needs_enough_rows():
    assert np.isnan(cc.skce_estimate([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]], [0, 1, 1], bandwidth=1.0).std_error)
    assert np.isnan(cc.skce_estimate([[0.7, 0.3], [0.2, 0.8]], [0, 1], 1.0, "block").std_error)


def test_the_default_median_takes_fewer_rows_with_many_classes():
    """Issue 15: the median of 5,000 rows of 1,000 classes took 25 s (twice per table of metrics). Above 10
    classes the default median heuristic uses sqrt(MEDIAN_MAX_CELLS / K) rows; up to 10 classes nothing changes."""
    from calib_core.metrics import kernel
    assert [kernel.median_rows(k) for k in (2, 10, 40, 1000, 10**6)] == [5000, 5000, 2500, 500, 100]
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(200), size=1500)  # 200 classes: 1,118 rows
    labels = rng.integers(0, 200, 1500)
    order = cc.metrics.registry.skce_pair_order(probs, labels)
    expected = kernel.median_heuristic(probs[order], max_rows=1118, seed=0)
    assert cc.metrics.registry.skce_bandwidth(probs, labels) == expected
    assert expected != kernel.median_heuristic(probs[order], seed=0)  # all 1,500 rows would give another value
    block = cc.skce(probs, labels, estimator="block", seed=0)
    assert block == cc.skce(probs, labels, estimator="block", seed=0,
                            bandwidth=kernel.median_pairwise_distance(probs, max_rows=1118, seed=0))
