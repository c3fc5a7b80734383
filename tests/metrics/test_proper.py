"""Tests for calib_core.metrics.kde (kde_ce) and calib_core.metrics.decomposition (score decomposition,
calibration upper bound, bound chain)."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import xlogy
from scipy.stats import beta as beta_dist
from scipy.stats import dirichlet

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.metrics.decomposition import bound_chain, calibration_upper_bound, score_decomposition
from calib_core.metrics.kde import DEFAULT_BANDWIDTH_GRID, kde_bandwidth, kde_ce, kde_conditional_expectation


def softmax(logits):
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def draw_labels(probs, rng):
    return (rng.random(probs.shape[0])[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, probs.shape[1] - 1)


def synthetic(n, k, seed):
    """Popordanoska et al. 2024, section 7.1: uniform simplex points, temperature 0.9, labels, temperature 0.6.

    Returns the calibrated scores p1 (= E[Y | p2], since p2 is an injective function of p1),
    the miscalibrated scores p2 and the labels.
    """
    rng = np.random.default_rng(seed)
    uniform = rng.dirichlet(np.ones(k), n)
    p1 = softmax(np.log(uniform) / 0.9)
    labels = draw_labels(p1, rng)
    p2 = softmax(np.log(p1) / 0.6)
    return p1, p2, labels


def brute_force_conditional(points, labels, bandwidth):
    """Leave-one-out Nadaraya-Watson with scipy's Dirichlet density, one pair at a time."""
    n, k = points.shape
    weights = np.array([[0.0 if i == j else dirichlet.pdf(points[i], points[j] / bandwidth + 1.0)
                         for j in range(n)] for i in range(n)])
    return weights @ np.eye(k)[labels] / weights.sum(axis=1, keepdims=True)


def random_case(seed, n=40, k=3, concentration=2.0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), n)
    return probs, rng.integers(0, k, n)


# ----------------------------------------------------------------------------- E[Y | g(X)]
def test_conditional_expectation_matches_scipy_dirichlet():
    probs, labels = random_case(0, n=30, k=3)
    expected = brute_force_conditional(probs, labels, 0.05)
    np.testing.assert_allclose(kde_conditional_expectation(probs, labels, bandwidth=0.05), expected, rtol=1e-10)


def test_conditional_expectation_handles_zero_probabilities():
    probs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]])
    labels = np.array([0, 1, 1, 2, 2])
    estimate = kde_conditional_expectation(probs, labels, bandwidth=0.2)
    assert np.all(np.isfinite(estimate))
    np.testing.assert_allclose(estimate.sum(axis=1), 1.0)
    # row 0 sits on a vertex where every other kernel vanishes; the weights are their limits
    # (the kernels with the fewest mass away from the vertex dominate), not 0 / 0
    assert np.isfinite(kde_ce(probs, labels, "kl", 0.2))
    assert np.isfinite(kde_ce(probs, labels, "kl", 0.2, classwise=True))


def test_kde_ce_direct_and_refinement_formulas():
    probs, labels = random_case(1, n=30, k=3)
    r = brute_force_conditional(probs, labels, 0.1)
    onehot = np.eye(3)[labels]
    assert kde_ce(probs, labels, "l2", 0.1) == pytest.approx(np.mean(np.sum((r - probs) ** 2, axis=1)), rel=1e-10)
    assert kde_ce(probs, labels, "kl", 0.1) == pytest.approx(np.mean(np.sum(r * np.log(r / probs), axis=1)),
                                                            rel=1e-10)
    # eq. 14: -REF + mean(D_F(y, g) - F(y))
    brier = np.mean(np.sum((probs - onehot) ** 2, axis=1))
    assert kde_ce(probs, labels, "l2", 0.1, estimator="refinement") == pytest.approx(
        np.mean(np.sum(r**2, axis=1)) + brier - 1.0, rel=1e-10)
    nll = -np.mean(np.log(probs[np.arange(30), labels]))
    assert kde_ce(probs, labels, "kl", 0.1, estimator="refinement") == pytest.approx(
        np.mean(np.sum(xlogy(r, r), axis=1)) + nll, rel=1e-10)


def test_kde_ce_uses_exact_logarithms_of_tiny_probabilities():
    probs, labels = random_case(5, n=20, k=3)
    probs[:5] = [1.0 - 2e-20, 1e-20, 1e-20]  # confident softmax outputs far below nll's 1e-12 floor
    labels[:5] = [0, 0, 0, 0, 1]
    r = brute_force_conditional(probs, labels, 0.1)
    expected = np.mean(np.sum(xlogy(r, r) - r * np.log(probs), axis=1))
    assert kde_ce(probs, labels, "kl", 0.1) == pytest.approx(expected, rel=1e-9)


def test_classwise_uses_the_beta_kernel_and_the_binary_divergence():
    probs, labels = random_case(2, n=25, k=3)
    h = 0.08
    l2, kl = [], []
    for k in range(3):
        g = probs[:, k]
        y = (labels == k).astype(float)
        w = np.array([[0.0 if i == j else beta_dist.pdf(g[i], g[j] / h + 1, (1 - g[j]) / h + 1)
                       for j in range(25)] for i in range(25)])
        r = w @ y / w.sum(axis=1)
        l2.append(np.mean(2 * (r - g) ** 2))  # ||[r, 1-r] - [g, 1-g]||^2
        kl.append(np.mean(r * np.log(r / g) + (1 - r) * np.log((1 - r) / (1 - g))))
    assert kde_ce(probs, labels, "l2", h, classwise=True) == pytest.approx(np.mean(l2), rel=1e-9)
    assert kde_ce(probs, labels, "kl", h, classwise=True) == pytest.approx(np.mean(kl), rel=1e-9)


def test_classwise_equals_canonical_for_two_classes():
    _, probs, labels = synthetic(300, 2, seed=3)
    for divergence in ("l2", "kl"):
        assert kde_ce(probs, labels, divergence, 0.02, classwise=True) == pytest.approx(
            kde_ce(probs, labels, divergence, 0.02), rel=1e-10)


# ----------------------------------------------------------------------------- synthetic ground truth
def ground_truth_two_classes():
    """CE_2^2 and CE_KL of the section 7.1 model for K = 2 by numerical integration over s ~ U(0, 1)."""
    def scores(s):
        a, b = s ** (1 / 0.9), (1 - s) ** (1 / 0.9)
        p = a / (a + b)
        c, d = p ** (1 / 0.6), (1 - p) ** (1 / 0.6)
        return p, c / (c + d)

    def squared(s):
        p, q = scores(s)
        return 2 * (p - q) ** 2

    def kl(s):
        p, q = scores(s)
        return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))

    return integrate.quad(squared, 0, 1, limit=200)[0], integrate.quad(kl, 0, 1, limit=200)[0]


@functools.lru_cache(maxsize=None)
def ground_truth_monte_carlo(k, n=400_000):
    rng = np.random.default_rng(99)
    p1 = softmax(np.log(rng.dirichlet(np.ones(k), n)) / 0.9)
    p2 = softmax(np.log(p1) / 0.6)
    return np.mean(np.sum((p1 - p2) ** 2, axis=1)), np.mean(np.sum(p1 * np.log(p1 / p2), axis=1))


def test_kde_ce_approaches_the_ground_truth_for_two_classes():
    truth_l2, truth_kl = ground_truth_two_classes()
    estimates = np.array([[kde_ce(p2, y, "l2", 0.01), kde_ce(p2, y, "kl", 0.01)]
                          for _, p2, y in (synthetic(2000, 2, seed) for seed in range(4))])
    np.testing.assert_allclose(estimates.mean(axis=0), [truth_l2, truth_kl], rtol=0.15)


def test_kde_ce_error_shrinks_towards_the_ground_truth_for_three_classes():
    truth_l2, truth_kl = ground_truth_monte_carlo(3)
    errors = {}
    for n in (500, 4000):
        estimates = np.array([[kde_ce(p2, y, "l2", 0.01), kde_ce(p2, y, "kl", 0.01)]
                              for _, p2, y in (synthetic(n, 3, 10 + seed) for seed in range(2))])
        errors[n] = np.abs(estimates.mean(axis=0) / [truth_l2, truth_kl] - 1.0)
    assert np.all(errors[4000] < errors[500])
    assert np.all(errors[4000] < 0.25)


def test_kde_ce_is_near_zero_within_its_bias_for_calibrated_scores():
    truth_l2, truth_kl = ground_truth_monte_carlo(3)
    p1, p2, y = synthetic(4000, 3, 20)
    calibrated = kde_ce(p1, y, "l2", 0.01), kde_ce(p1, y, "kl", 0.01)
    miscalibrated = kde_ce(p2, y, "l2", 0.01), kde_ce(p2, y, "kl", 0.01)
    # the positive bias of the direct estimator is the variance of the kernel ratio: O(1/n)
    assert 0 < calibrated[0] < 0.4 * truth_l2 and 0 < calibrated[1] < 0.4 * truth_kl
    assert calibrated[0] < 0.4 * miscalibrated[0] and calibrated[1] < 0.4 * miscalibrated[1]


# ----------------------------------------------------------------------------- bandwidth
def brute_force_loo_likelihood(points, bandwidth):
    n = points.shape[0]
    total = 0.0
    for i in range(n):
        density = np.mean([dirichlet.pdf(points[i], points[j] / bandwidth + 1) for j in range(n) if j != i])
        total += np.log(density)
    return total


def test_auto_bandwidth_maximises_the_leave_one_out_likelihood():
    probs, labels = random_case(4, n=30, k=3, concentration=3.0)
    grid = [0.005, 0.02, 0.05, 0.1, 0.3, 1.0]
    likelihoods = [brute_force_loo_likelihood(probs, b) for b in grid]
    best = grid[int(np.argmax(likelihoods))]
    assert 0.005 < best < 1.0  # an interior maximum, so the test can fail
    assert kde_bandwidth(probs, bandwidth_grid=grid) == best
    assert kde_ce(probs, labels, "l2", "auto", bandwidth_grid=grid) == kde_ce(probs, labels, "l2", best)


def test_default_grid_search_agrees_with_exhaustive_search():
    _, probs, _ = synthetic(400, 3, seed=5)
    assert kde_bandwidth(probs) == kde_bandwidth(probs, bandwidth_grid=DEFAULT_BANDWIDTH_GRID)


# ----------------------------------------------------------------------------- decomposition
@pytest.mark.parametrize("score", ["brier", "log"])
def test_decomposition_adds_up_to_the_empirical_score(score):
    _, probs, labels = synthetic(500, 4, seed=6)
    d = score_decomposition(probs, labels, score, bandwidth=0.02)
    empirical = cc.brier_score(probs, labels) if score == "brier" else cc.nll(probs, labels)
    assert d.empirical_score == pytest.approx(empirical, rel=1e-12)
    assert d.calibration + d.refinement == pytest.approx(empirical, abs=1e-10)
    assert d.entropy - d.sharpness + d.calibration == pytest.approx(empirical, abs=1e-10)
    # each term is the estimator it claims to be
    r = kde_conditional_expectation(probs, labels, bandwidth=0.02)
    freq = np.bincount(labels, minlength=4) / 500
    if score == "brier":
        assert d.entropy == pytest.approx(1 - np.sum(freq**2), rel=1e-12)
        assert d.refinement == pytest.approx(1 - np.mean(np.sum(r**2, axis=1)), rel=1e-12)
    else:
        assert d.entropy == pytest.approx(-np.sum(freq * np.log(freq)), rel=1e-12)
        assert d.refinement == pytest.approx(-np.mean(np.sum(xlogy(r, r), axis=1)), rel=1e-12)
    divergence = "l2" if score == "brier" else "kl"
    assert d.calibration == pytest.approx(kde_ce(probs, labels, divergence, 0.02, estimator="refinement"), rel=1e-10)
    assert d.calibration_direct == pytest.approx(kde_ce(probs, labels, divergence, 0.02), rel=1e-12)
    assert d.bandwidth == 0.02 and d.score == score


def test_decomposition_of_an_uninformative_forecast_has_no_sharpness():
    # every prediction is the base rate: E[Y | g(X)] = base rate, calibrated, no sharpness
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 3, 300)
    freq = np.bincount(labels, minlength=3) / 300
    probs = np.tile(freq, (300, 1))
    d = score_decomposition(probs, labels, "brier")
    # leave-one-out frequencies differ from freq by O(1/n)
    assert abs(d.sharpness) < 1e-3 and abs(d.calibration) < 1e-2
    assert d.empirical_score == pytest.approx(d.entropy, rel=1e-12)


# ----------------------------------------------------------------------------- upper bound
def test_calibration_upper_bound_is_the_root_brier_score():
    _, probs, labels = synthetic(800, 3, seed=9)
    assert calibration_upper_bound(probs, labels) == pytest.approx(np.sqrt(cc.brier_score(probs, labels)))
    assert calibration_upper_bound(probs, labels, score="log") == pytest.approx(cc.nll(probs, labels))
    assert calibration_upper_bound(probs, labels) >= np.sqrt(kde_ce(probs, labels, "l2", 0.01))
    assert calibration_upper_bound(probs, labels, score="log") >= kde_ce(probs, labels, "kl", 0.01)
    assert calibration_upper_bound([[0.8, 0.2], [0.5, 0.5]], [0, 1]) == pytest.approx(np.sqrt(0.29))


# ----------------------------------------------------------------------------- bound chain
def test_bound_chain_terms_are_the_named_estimators():
    _, probs, labels = synthetic(600, 3, seed=12)
    chain = bound_chain(probs, labels, n_bins=10)
    values = chain.values
    assert [t.key for t in chain.terms] == ["sqrt2", "rbs", "ce2", "cwce2", "tce2", "tce1", "ks", "ece", "mmce"]
    assert values["rbs"] == pytest.approx(np.sqrt(cc.brier_score(probs, labels)))
    assert values["ce2"] == pytest.approx(np.sqrt(kde_ce(probs, labels, "l2", 0.01)))
    assert values["ks"] == pytest.approx(cc.ks_error(probs, labels))
    assert values["ece"] == pytest.approx(cc.ece(probs, labels, n_bins=10))
    assert values["mmce"] == pytest.approx(cc.mmce(probs, labels))
    # CWCE_2 sums the class-wise squared errors (no 1/K); kde_ce's class-wise l2 is the mean of 2 E[gap_k^2]
    assert values["cwce2"] == pytest.approx(np.sqrt(3 * kde_ce(probs, labels, "l2", 0.01, classwise=True) / 2))
    assert values["tce2"] >= values["tce1"]
    for link in chain.links:
        assert link.holds == (values[link.upper] >= values[link.lower] - 1e-12)
        assert link.gap == pytest.approx(values[link.upper] - values[link.lower])
    assert chain.all_hold == (not chain.broken)


def test_bound_chain_binned_estimator():
    _, probs, labels = synthetic(600, 3, seed=13)
    chain = bound_chain(probs, labels, n_bins=10, estimator="binned")
    values = chain.values
    per_class = cc.classwise_ece(probs, labels, n_bins=10, norm="l2", per_class=True)
    assert values["cwce2"] == pytest.approx(np.sqrt(np.sum(per_class**2)))
    assert values["tce2"] == pytest.approx(cc.ece(probs, labels, n_bins=10, norm="l2"))
    assert values["tce1"] == pytest.approx(values["ece"])


def test_bound_chain_top_holds_for_a_miscalibrated_model():
    _, probs, labels = synthetic(3000, 3, seed=14)
    chain = bound_chain(probs, labels)
    holds = {(link.upper, link.lower): link.holds for link in chain.links}
    assert holds[("sqrt2", "rbs")] and holds[("rbs", "ce2")] and holds[("ce2", "cwce2")]
    assert holds[("tce2", "tce1")]


def test_bound_chain_shows_small_sample_violations():
    # a calibrated model on 60 points: the upward-biased MMCE V-statistic and binned ECE
    # exceed the (nearly unbiased) TCE_1 estimate for most seeds
    broken = 0
    for seed in range(10):
        p1, _, labels = synthetic(60, 3, seed=30 + seed)
        chain = bound_chain(p1, labels, bandwidth=0.05)
        broken += not chain.all_hold
    assert broken >= 5


# ----------------------------------------------------------------------------- validation
def test_validation_errors():
    probs, labels = random_case(0, n=10)
    with pytest.raises(CalibrationInputError, match="divergence"):
        kde_ce(probs, labels, divergence="js")
    with pytest.raises(CalibrationInputError, match="estimator"):
        kde_ce(probs, labels, estimator="debiased")
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        kde_ce(probs, labels, bandwidth="silverman")
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        kde_ce(probs, labels, bandwidth=-0.1)
    with pytest.raises(CalibrationInputError, match="classwise"):
        kde_ce(probs, labels, classwise="yes")
    with pytest.raises(CalibrationInputError, match="bandwidth_grid"):
        kde_ce(probs, labels, bandwidth="auto", bandwidth_grid=[0.1, -1.0])
    with pytest.raises(CalibrationInputError, match="at least 2 rows"):
        kde_ce([[0.5, 0.5]], [0])
    with pytest.raises(CalibrationInputError, match="score"):
        score_decomposition(probs, labels, score="spherical")
    with pytest.raises(CalibrationInputError, match="score"):
        calibration_upper_bound(probs, labels, score="crps")
    with pytest.raises(CalibrationInputError, match="estimator"):
        bound_chain(probs, labels, estimator="exact")
    with pytest.raises(CalibrationInputError, match="n_bins"):
        bound_chain(probs, labels, n_bins=0)
    with pytest.raises(CalibrationInputError, match="labels"):
        kde_ce(probs, np.full(10, 3))
    with pytest.raises(CalibrationInputError, match="at least 2 rows"):
        kde_bandwidth([[0.5, 0.5]])


# ----------------------------------------------------------------------------- properties
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 30), k=st.integers(2, 4),
       divergence=st.sampled_from(["l2", "kl"]), classwise=st.booleans())
def test_permutation_invariance_and_non_negativity(seed, n, k, divergence, classwise):
    probs, labels = random_case(seed, n=n, k=k, concentration=0.8)
    order = np.random.default_rng(seed).permutation(n)
    value = kde_ce(probs, labels, divergence, 0.05, classwise)
    assert value >= -1e-12  # the direct estimator is a mean of Bregman divergences
    assert kde_ce(probs[order], labels[order], divergence, 0.05, classwise) == pytest.approx(
        value, rel=1e-9, abs=1e-12)
    d = score_decomposition(probs[order], labels[order], "log" if divergence == "kl" else "brier", bandwidth=0.05)
    assert d.calibration + d.refinement == pytest.approx(d.empirical_score, abs=1e-10)
    if not classwise:
        assert d.calibration_direct == pytest.approx(value, rel=1e-9, abs=1e-12)
