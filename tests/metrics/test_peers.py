"""docs/peers.md: every row's calib_core call against a numpy transcription of that peer's binning rule.

torchmetrics and netcal need torch / are not installed here; their rules are transcribed
from their source (torchmetrics ``functional/classification/calibration_error.py``,
netcal ``metrics/Miscalibration.py``), as are those of Kumar et al.'s ``calibration``
package (``calibration/utils.py``). scikit-learn is installed and called directly.
"""
import bisect

import numpy as np
import pytest
from scipy.stats import binned_statistic_dd
from sklearn.calibration import calibration_curve

import calib_core as cc

ISSUE_PROBS = np.array([[.75, .15, .1], [.1, .8, .1], [.1, .3, .6], [.3, .3, .4]])
ISSUE_LABELS = np.array([0, 1, 1, 2])


def predictions(seed, n=400, k=4, decimals=None, temperature=0.6):
    """Miscalibrated predictions; ``decimals`` rounds them so that values sit on bin edges and tie."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    truth = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, 1)).sum(1).clip(0, k - 1)
    probs = np.exp(logits / temperature) / np.exp(logits / temperature).sum(1, keepdims=True)
    if decimals is not None:
        probs = np.round(probs, decimals)
        probs[:, -1] = np.clip(1.0 - probs[:, :-1].sum(1), 0.0, None)
        probs /= probs.sum(1, keepdims=True)
    return probs, labels


# --- torchmetrics ---------------------------------------------------------------------------------

def torchmetrics_ce(confidences, accuracies, n_bins, norm="l1", dtype=np.float32):
    """``_ce_compute`` with ``_binning_bucketize``: n_bins + 1 bins, index bucketize(right=True) - 1."""
    confidences = np.asarray(confidences, dtype=dtype)
    accuracies = np.asarray(accuracies, dtype=dtype)
    bounds = np.linspace(0, 1, n_bins + 1).astype(dtype)
    indices = np.searchsorted(bounds, confidences, side="right") - 1  # boundaries[i-1] <= x < boundaries[i]
    count = np.bincount(indices, minlength=n_bins + 1).astype(dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf_bin = np.nan_to_num(np.bincount(indices, confidences, n_bins + 1).astype(dtype) / count)
        acc_bin = np.nan_to_num(np.bincount(indices, accuracies, n_bins + 1).astype(dtype) / count)
    prop = count / count.sum()
    if norm == "l1":
        return float(np.sum(np.abs(acc_bin - conf_bin) * prop))
    if norm == "max":
        return float(np.max(np.abs(acc_bin - conf_bin)))
    return float(np.sqrt(np.sum((acc_bin - conf_bin) ** 2 * prop)))


def torchmetrics_multiclass(probs, target, n_bins, norm="l1", dtype=np.float32):
    """``_multiclass_calibration_error_update``: preds.max(dim=1), then ``.float()``."""
    probs = np.asarray(probs, dtype=dtype)
    return torchmetrics_ce(probs.max(1), probs.argmax(1) == target, n_bins, norm, dtype)


def test_issue_example_matches_torchmetrics_and_netcal():
    assert torchmetrics_multiclass(ISSUE_PROBS, ISSUE_LABELS, 4, dtype=np.float64) == pytest.approx(0.4125)
    assert netcal_measure(ISSUE_PROBS, ISSUE_LABELS, 4, "ece") == pytest.approx(0.4125)
    assert cc.ece(ISSUE_PROBS, ISSUE_LABELS, n_bins=4, right=False) == pytest.approx(0.4125, abs=1e-12)
    assert cc.ece(ISSUE_PROBS, ISSUE_LABELS, n_bins=4) == pytest.approx(0.2875, abs=1e-12)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [4, 10, 15])
@pytest.mark.parametrize("seed", range(3))
def test_torchmetrics_multiclass(norm, n_bins, seed):
    probs, labels = predictions(seed, decimals=2)
    below_one = probs.max(1) < 1.0  # a confidence of 1.0 has a bin of its own there (next test)
    probs, labels = probs[below_one], labels[below_one]
    ours = cc.ece(probs, labels, n_bins=n_bins, norm=norm, right=False)
    # the rule itself (float64): equal on values that sit exactly on edges
    assert ours == pytest.approx(torchmetrics_multiclass(probs, labels, n_bins, norm, dtype=np.float64), abs=1e-12)
    # what torchmetrics computes (float32), on values away from the edges
    probs, labels = predictions(seed)
    assert cc.ece(probs, labels, n_bins=n_bins, norm=norm, right=False) == pytest.approx(
        torchmetrics_multiclass(probs, labels, n_bins, norm), abs=2e-6)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_torchmetrics_binary(norm):
    probs, labels = predictions(5, k=2, decimals=2)
    p1 = probs[:, 1]
    p1, labels = p1[p1 < 1.0], labels[p1 < 1.0]
    reference = torchmetrics_ce(p1, labels, 10, norm, dtype=np.float64)  # binary: confidences = preds
    ours = cc.classwise_ece(cc.as_probs(p1), labels, n_bins=10, norm=norm, right=False, per_class=True)[1]
    assert ours == pytest.approx(reference, abs=1e-12)


def test_torchmetrics_gives_one_its_own_bin():
    probs, labels = predictions(6, decimals=2, temperature=0.15)
    conf = probs.max(1)
    # under-confident just below 1, over-confident at 1: where 1.0 goes changes the l1 error
    labels = np.where((conf >= 0.9) & (conf < 1.0), probs.argmax(1), labels)
    ones = conf == 1.0
    assert 5 < ones.sum() < len(ones) - 5
    reference = torchmetrics_multiclass(probs, labels, 10, dtype=np.float64)
    n = len(labels)
    accuracy_on_ones = np.mean(probs[ones].argmax(1) == labels[ones])
    recipe = ((n - ones.sum()) / n * cc.ece(probs[~ones], labels[~ones], n_bins=10, right=False)
              + ones.sum() / n * (1.0 - accuracy_on_ones))
    assert recipe == pytest.approx(reference, abs=1e-12)
    # without the recipe the numbers differ: 1.0 shares the last bin in calib_core
    assert cc.ece(probs, labels, n_bins=10, right=False) != pytest.approx(reference, abs=1e-6)


# --- netcal ---------------------------------------------------------------------------------------

def netcal_measure(X, y, bins, metric):
    """``_Miscalibration._measure`` for classification (one feature, sample_threshold=1, no uncertainty)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    eps = np.finfo(np.float64).eps
    X = np.clip(X, eps, 1.0 - eps)  # _prepare_input
    if len(np.unique(y)) <= 2:
        matched = np.array(y)
    else:
        matched = np.argmax(X, axis=1) == y
        X = np.max(X, axis=1, keepdims=True)
    bounds = [np.linspace(0.0, 1.0, bins + 1)]  # _prepare_bins, equal_intervals=True
    num_samples_hist, _ = np.histogramdd(X, bins=bounds)  # binning()
    acc_hist = np.nan_to_num(binned_statistic_dd(X, matched, statistic="mean", bins=bounds)[0], nan=0.0)
    conf_hist = np.nan_to_num(binned_statistic_dd(X, X[:, 0], statistic="mean", bins=bounds)[0], nan=0.0)
    deviation_map = np.abs(acc_hist - conf_hist)  # process()
    if metric == "ece":
        return float(np.sum(deviation_map * num_samples_hist / np.sum(num_samples_hist)))
    if metric == "mce":
        return float(np.max(deviation_map))
    return float(np.sum(deviation_map) / np.count_nonzero(num_samples_hist))  # "ace"


@pytest.mark.parametrize("n_bins", [4, 10, 20])
@pytest.mark.parametrize("seed", range(3))
def test_netcal(n_bins, seed):
    probs, labels = predictions(seed, decimals=2)
    assert cc.ece(probs, labels, n_bins=n_bins, right=False) == pytest.approx(
        netcal_measure(probs, labels, n_bins, "ece"), abs=1e-12)
    assert cc.mce(probs, labels, n_bins=n_bins, right=False) == pytest.approx(
        netcal_measure(probs, labels, n_bins, "mce"), abs=1e-12)
    table = cc.reliability_table(probs, labels, n_bins=n_bins, right=False)
    assert table["gap"].abs().mean() == pytest.approx(netcal_measure(probs, labels, n_bins, "ace"), abs=1e-12)


def test_netcal_binary():
    probs, labels = predictions(7, k=2, decimals=1)
    reference = netcal_measure(probs[:, 1], labels, 10, "ece")
    ours = cc.classwise_ece(cc.as_probs(probs[:, 1]), labels, n_bins=10, right=False, per_class=True)[1]
    assert ours == pytest.approx(reference, abs=1e-12)


# --- scikit-learn ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n_bins", [3, 5, 10])
@pytest.mark.parametrize("decimals", [None, 1, 2])
def test_sklearn_uniform(n_bins, decimals):
    probs, labels = predictions(8, k=2, decimals=decimals)
    prob_true, prob_pred = calibration_curve(labels, probs[:, 1], n_bins=n_bins, strategy="uniform")
    table = cc.reliability_table(cc.as_probs(probs[:, 1]), labels, n_bins=n_bins, target=1)
    np.testing.assert_allclose(table["observed_frequency"], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(table["mean_confidence"], prob_pred, rtol=0, atol=1e-12)


def sklearn_quantile_index(p1, n_bins):
    """calibration_curve(strategy="quantile"): percentile edges, np.searchsorted(edges[1:-1], p1)."""
    edges = np.percentile(p1, np.linspace(0, 1, n_bins + 1) * 100)
    return np.searchsorted(edges[1:-1], p1)


def sklearn_quantile_case(n_bins, n, seed):
    """Distinct values: our adaptive bins, sklearn's quantile bins, their curve and our table."""
    rng = np.random.default_rng(seed)
    p1 = rng.random(n)
    labels = (rng.random(n) < p1).astype(int)
    prob_true, prob_pred = calibration_curve(labels, p1, n_bins=n_bins, strategy="quantile")
    table = cc.reliability_table(cc.as_probs(p1), labels, n_bins=n_bins, binning="adaptive", target=1)
    return cc.bin_index(p1, n_bins, "adaptive"), sklearn_quantile_index(p1, n_bins), prob_true, prob_pred, table


@pytest.mark.parametrize("n_bins", [2, 4, 8, 16, 32])
def test_sklearn_quantile_equals_ours_when_n_is_m_n_bins_plus_1_and_n_bins_a_power_of_2(n_bins):
    """docs/peers.md: the percentile positions (N - 1) k / n_bins are then computed exactly in floating point,
    whole, and on the ends of the np.array_split runs."""
    for m in (1, 2, 3, 7, 40, 41, 100, 333):
        same, theirs, prob_true, prob_pred, table = sklearn_quantile_case(n_bins, m * n_bins + 1, seed=m)
        np.testing.assert_array_equal(same, theirs)
        np.testing.assert_allclose(table["observed_frequency"], prob_true, rtol=0, atol=1e-12)
        np.testing.assert_allclose(table["mean_confidence"], prob_pred, rtol=0, atol=1e-12)


def test_sklearn_quantile_differs_at_15_bins_even_when_n_is_m_n_bins_plus_1():
    """Issue 23 item 8: the old claim ("exactly when N = m n + 1") is false at 15 bins: np.percentile rounds the
    interpolated positions, so a boundary value moves to the next bin."""
    same, theirs, prob_true, prob_pred, table = sklearn_quantile_case(15, 601, seed=0)
    assert not np.array_equal(same, theirs)
    assert np.abs(table["mean_confidence"].to_numpy() - prob_pred).max() > 1e-4
    moved = [m for m in range(1, 121) if not np.array_equal(*sklearn_quantile_case(15, 15 * m + 1, seed=m)[:2])]
    assert len(moved) > 100, "at 15 bins nearly every such N differs"


@pytest.mark.parametrize("n_bins", list(range(2, 31)))
def test_sklearn_quantile_boundaries_move_by_at_most_one_value(n_bins):
    """Every bin count, N = m n + 1 or not: the bins differ only in where a boundary value goes."""
    for n in (n_bins * 7 + 1, n_bins * 40 + 1, n_bins * 40 + 3, 601):
        same, theirs, *_ = sklearn_quantile_case(n_bins, n, seed=n_bins * n)
        assert np.all(np.abs(same - theirs) <= 1)
        assert np.abs(np.bincount(same, minlength=n_bins) - np.bincount(theirs, minlength=n_bins)).max() <= 2


# --- Kumar et al. 2019 ----------------------------------------------------------------------------

def kumar_equal_bins(probs, num_bins):
    """``get_equal_bins``."""
    sorted_probs = sorted(probs)
    num_bins = min(num_bins, len(sorted_probs))
    binned = [list(part) for part in np.array_split(sorted_probs, num_bins)]
    bins = [(binned[i][-1] + binned[i + 1][0]) / 2.0 for i in range(len(binned) - 1)] + [1.0]
    return sorted(set(bins))


def kumar_binned(probs, labels, bins):
    """``fast_bin``: np.searchsorted(bins, prob), i.e. bisect_left (``get_bin``)."""
    index = np.searchsorted(bins, probs)
    assert all(index[i] == bisect.bisect_left(bins, probs[i]) for i in range(0, len(probs), 37))
    return [(probs[index == b], labels[index == b]) for b in range(len(bins))]


def kumar_plugin_ce(binned, power):
    n = sum(len(p) for p, _ in binned)
    errors = [abs(p.mean() - y.mean()) ** power if len(p) else 0.0 for p, y in binned]
    return float(np.dot([len(p) / n for p, _ in binned], errors) ** (1.0 / power))


def kumar_unbiased_l2_ce(binned):
    n = sum(len(p) for p, _ in binned)
    errors = [abs(p.mean() - y.mean()) ** 2 - y.mean() * (1 - y.mean()) / (len(p) - 1.0) if len(p) >= 2 else 0.0
              for p, y in binned]
    return max(float(np.dot([len(p) / n for p, _ in binned], errors)), 0.0) ** 0.5


def kumar_top(probs, labels):
    return probs.max(1), (probs.argmax(1) == labels).astype(float)


@pytest.mark.parametrize("n_bins", [3, 15, 50, 1000])
@pytest.mark.parametrize("decimals", [None, 2])
def test_kumar_equal_mass(n_bins, decimals):
    probs, labels = predictions(9, n=300, decimals=decimals)
    conf, correct = kumar_top(probs, labels)
    top_bins = kumar_binned(conf, correct, kumar_equal_bins(conf, n_bins))
    # get_ece_em(probs, labels, num_bins=n_bins): top-label, plugin l1
    assert cc.ece(probs, labels, n_bins=n_bins, binning="adaptive") == pytest.approx(
        kumar_plugin_ce(top_bins, 1), abs=1e-12)
    # lower_bound_scaling_ce(..., p=2, debias=False / True, mode="top-label")
    assert cc.ece(probs, labels, n_bins=n_bins, binning="adaptive", norm="l2") == pytest.approx(
        kumar_plugin_ce(top_bins, 2), abs=1e-12)
    assert cc.debiased_ece(probs, labels, n_bins=n_bins) == pytest.approx(kumar_unbiased_l2_ce(top_bins), abs=1e-12)
    # get_ece_em(..., mode="marginal"): mean over classes of each column's plugin l1 error
    marginal = np.mean([kumar_plugin_ce(kumar_binned(probs[:, k], (labels == k).astype(float),
                                                     kumar_equal_bins(probs[:, k], n_bins)), 1)
                        for k in range(probs.shape[1])])
    assert cc.classwise_ece(probs, labels, n_bins=n_bins, binning="adaptive") == pytest.approx(marginal, abs=1e-12)


@pytest.mark.parametrize("n_bins", [4, 10, 15])
def test_kumar_uniform(n_bins):
    """get_ece: edges i / n with bisect_left, i.e. (lo, hi] - calib_core's default."""
    probs, labels = predictions(10, decimals=2)
    conf, correct = kumar_top(probs, labels)
    edges = [i * 1.0 / n_bins for i in range(1, n_bins + 1)]  # get_equal_prob_bins
    assert cc.ece(probs, labels, n_bins=n_bins) == pytest.approx(
        kumar_plugin_ce(kumar_binned(conf, correct, edges), 1), abs=1e-12)


def test_kumar_uniform_edges_can_differ_from_linspace_by_an_ulp():
    """The documented exception: with 6 bins, linspace's 5 * (1/6) is one ulp below 5/6."""
    edge = np.linspace(0, 1, 7)[5]
    assert edge < 5 / 6
    value = np.array([5 / 6])
    assert cc.bin_index(value, 6).tolist() == [5]  # above the float edge: next bin
    assert np.searchsorted([i / 6 for i in range(1, 7)], value).tolist() == [4]  # Kumar: <= 5/6


def test_peers_md_states_the_quantile_claim_with_its_condition():
    """docs/peers.md's scikit-learn quantile row says when the bins are equal: N = m n + 1 *and* n a power of 2."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "peers.md").read_text()
    (row,) = [line for line in text.splitlines() if 'strategy="quantile"' in line and line.startswith("| scikit")]
    assert "power of 2" in row and "n = 15" in row and "at most one value" in row
