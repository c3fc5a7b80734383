"""Estimates outside their own bounds are marked (issue 23, item 5): the registry's BOUNDS and check_estimate."""
import numpy as np
import pytest

import calib_core as cc
from calib_core.io import load_demo
from calib_core.metrics import decomposition
from calib_core.metrics.kde import loo_conditional_mean, loo_conditional_means
from calib_core.metrics.registry import BOUNDS, CALIBRATED_BIAS
from calib_core.metrics.reports import UNRELIABLE, check_estimate


def calibrated_set(n_rows=1000, n_classes=8, seed=0):
    """Labels drawn from the predictions: every true calibration error is 0."""
    rng = np.random.default_rng(seed)
    probs = cc.softmax(1.5 * rng.normal(size=(n_rows, n_classes)))
    labels = (rng.random((n_rows, 1)) > np.cumsum(probs, axis=1)).sum(axis=1).clip(max=n_classes - 1)
    return probs, labels


def test_every_bound_names_registered_metrics():
    keys = {spec.key for spec in cc.METRICS}
    for bound in BOUNDS:
        assert bound.key in keys
        assert bound.relation in ("<=", ">=")
        assert not isinstance(bound.limit, str) or bound.limit in keys or bound.limit == CALIBRATED_BIAS
        assert bound.why and bound.bias and bound.remedy


def test_the_default_demos_ce_kl_is_marked_unreliable():
    """CE_KL (kernel), h = 0.01 = 16.80 next to NLL = 2.24 on digits_gaussian_nb: the true CE_KL <= NLL."""
    demo = load_demo("digits_gaussian_nb")
    report = cc.metric_report(demo.probs, demo.labels)
    assert report.values["kde_ce_kl"] > report.values["nll"]
    reason = report.unreliable["kde_ce_kl"]
    assert reason.startswith(f"{UNRELIABLE} (N = 899, K = 10)")
    assert "NLL = 2.244" in reason and "Reliable with: more rows" in reason
    # Within its bounds there: not marked.
    assert "kde_ce_l2" not in report.unreliable and "ece" not in report.unreliable


def test_an_estimate_that_is_mostly_its_own_bias_is_marked():
    """A calibrated 8-class set: the kernel CE_2^2 is ~70 % of the Brier score, all of it the estimator's bias."""
    probs, labels = calibrated_set()
    report = cc.metric_report(probs, labels)
    assert report.values["kde_ce_l2"] > 0.5 * report.values["brier"]
    assert report.values["kde_ce_l2"] <= report.values["brier"]  # no plain bound breaks...
    reason = report.unreliable["kde_ce_l2"]  # ...but it is not beyond its own bias
    assert "labels drawn from the predictions" in reason
    assert report.biases["kde_ce_l2"] == pytest.approx(report.values["kde_ce_l2"], rel=0.1)


def test_check_estimate_within_and_beyond_each_kind_of_bound():
    assert check_estimate("kde_ce_l2", 0.1, {"brier": 0.3}, n_rows=500, n_classes=3, biases={"kde_ce_l2": 0.01}) is None
    assert "above Brier score = 0.3" in check_estimate("kde_ce_l2", 0.4, {"brier": 0.3}, n_rows=500, n_classes=3)
    assert "below 0" in check_estimate("skce", -1e-4, {}, n_rows=500, n_classes=3)
    assert check_estimate("skce", 1e-4, {}, n_rows=500, n_classes=3) is None
    # A missing or non-finite limit is not checked; nor is a missing estimate.
    assert check_estimate("kde_ce_l2", 0.4, {"brier": None}, n_rows=500, n_classes=3) is None
    assert check_estimate("kde_ce_l2", None, {"brier": 0.3}, n_rows=500, n_classes=3) is None
    assert "h = 0.2" in check_estimate("kde_ce_l2", 0.4, {"brier": 0.3}, n_rows=5, n_classes=3, bandwidth=0.2)


def test_calibrated_bias_shares_one_kernel_pass():
    probs, labels = calibrated_set(200, 4)
    sets = np.stack([labels, labels[::-1]])
    both = loo_conditional_means(probs, sets, 0.05)
    np.testing.assert_allclose(both[0], loo_conditional_mean(probs, labels, 0.05), rtol=1e-12)
    np.testing.assert_allclose(both[1], loo_conditional_mean(probs, labels[::-1], 0.05), rtol=1e-12)
    bias = decomposition.calibrated_bias(probs, bandwidth=0.05, seed=3)
    assert bias == decomposition.calibrated_bias(probs, bandwidth=0.05, seed=3)
    assert all(np.isfinite(v) for v in bias.values()) and bias["l2", "direct"] > 0


def test_the_chain_tells_expected_breaks_from_bugs():
    """Every model showed "the estimates break 3 of 8 inequalities": the breaks of the default demo are all
    finite-sample effects, each explained; only the links the estimates obey on every sample signal a bug."""
    demo = load_demo("digits_gaussian_nb")
    chain = cc.bound_chain(demo.probs, demo.labels)
    assert chain.broken and chain.expected_breaks == chain.broken and not chain.bug_breaks
    assert all(link.explanation for link in chain.links)
    exact = {(link.upper, link.lower) for link in chain.links if link.exact}
    assert exact == {("sqrt2", "rbs"), ("tce2", "tce1")}
    binned = cc.bound_chain(demo.probs, demo.labels, estimator="binned")
    assert {(link.upper, link.lower) for link in binned.links if link.exact} == exact | {("tce1", "ece")}


def test_an_estimate_below_its_own_bias_says_so():
    reason = check_estimate("kde_ce_l2", 0.13, {"brier": 0.134}, n_rows=899, n_classes=10,
                            biases={"kde_ce_l2": 0.30})
    assert "gives 0.3 on average" in reason and "0.13 is below that bias itself" in reason
    reason = check_estimate("kde_ce_l2", 0.4, {"brier": 0.9}, n_rows=899, n_classes=10, biases={"kde_ce_l2": 0.3})
    assert "0.4 is not beyond 2 times its own bias" in reason
    assert check_estimate("kde_ce_l2", 0.7, {"brier": 0.9}, n_rows=899, n_classes=10, biases={"kde_ce_l2": 0.3}) is None


def _one_pass_bias(probs, bandwidth, n_draws, seed):
    """calibrated_bias as it was: every draw through one kernel pass (the reference for the chunked one)."""
    rng = np.random.default_rng(seed)
    draws = (rng.random((n_draws, probs.shape[0], 1)) > np.cumsum(probs, axis=1)[None]).sum(axis=2)
    draws = np.minimum(draws, probs.shape[1] - 1).astype(np.intp)
    conditionals = loo_conditional_means(probs, draws, bandwidth)
    return {(d, e): float(np.mean([decomposition.bregman_ce(probs, y, c, d, e) for y, c in zip(draws, conditionals)]))
            for d in ("kl", "l2") for e in ("direct", "refinement")}


def test_calibrated_bias_holds_its_label_draws_in_byte_bounded_chunks():
    """Issue 23 review: all draws' one-hot labels and conditional means at once made the bias check 3.5 times
    CE_KL's memory (101 MB vs 29 MB at 3,000 x 300). Chunked: the same numbers, the peak well below that."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n_rows, n_classes = 2000, 200
    probs = cc.softmax(rng.normal(size=(n_rows, n_classes)))
    per_draw = 8 * n_rows * n_classes  # one (N, K) float64 array
    tracemalloc.start()
    try:
        bias = decomposition.calibrated_bias(probs, bandwidth=0.05, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    reference = _one_pass_bias(probs, 0.05, decomposition.CALIBRATED_DRAWS, 1)
    assert bias.keys() == reference.keys()
    for key in bias:
        assert bias[key] == pytest.approx(reference[key], rel=1e-12, abs=1e-15)
    # The one-pass form held one-hot labels, means and their concatenated blocks for all 4 draws at once:
    # 3 x 4 (N, K) arrays (42 MB here). Chunked (one draw per pass at this size): 20 MB measured.
    assert decomposition.DRAW_CHUNK_BYTES // (2 * per_draw) < decomposition.CALIBRATED_DRAWS
    assert peak < 2 * decomposition.CALIBRATED_DRAWS * per_draw
