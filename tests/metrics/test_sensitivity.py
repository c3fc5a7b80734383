"""Tests for calib_core.metrics.sensitivity: bin-count sweeps, model rankings across bin counts, rank stability."""
import math
import time
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from tests.compiled_support import kernel_paths, require_kernel
from calib_core import CalibrationInputError
from calib_core._accel import compiled, sort_columns
from calib_core._accel import sweep as accel_sweep
from calib_core.binning import classwise_bin_statistics, mean_abs_gap, sorted_columns_bin_sums
from calib_core.lab.generators import LogisticNormalModel
from calib_core.lab.pathologies import nixon_figure4_data
from calib_core.metrics import sensitivity
from calib_core.metrics.sensitivity import (GCE_VARIANTS, BinRanking, _GceSets, bin_rank_stability, bin_sensitivity,
                                            competition_ranks, rank_by_bins, spearman_rows)

TINY_PROBS = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]])
TINY_LABELS = np.array([0, 1, 1, 1])


def random_predictions(n=600, k=5, seed=0, temperature=2.0):
    rng = np.random.default_rng(seed)
    probs = cc.softmax(rng.normal(size=(n, k)) * temperature)
    labels = rng.integers(0, k, size=n)
    return probs, labels


def value(table, metric, binning, n_bins):
    row = table[(table.metric == metric) & (table.binning == binning) & (table.n_bins == n_bins)]
    assert len(row) == 1
    return row["value"].item()


def test_shape_order_and_columns():
    table = bin_sensitivity(TINY_PROBS, TINY_LABELS, bin_counts=[2, 3, 5], metrics=["ace", "ece"])
    assert list(table.columns) == ["n_bins", "binning", "metric", "value"]
    assert len(table) == 3 * 2 * 2
    assert table["binning"].tolist()[:6] == ["uniform"] * 6
    assert table["n_bins"].tolist()[:6] == [2, 2, 3, 3, 5, 5]
    assert table["metric"].tolist()[:4] == ["ace", "ece", "ace", "ece"]
    assert table["n_bins"].dtype == np.int64


def test_tiny_case_by_hand():
    table = bin_sensitivity(TINY_PROBS, TINY_LABELS, bin_counts=[1, 2, 10, 20])
    # one uniform bin: |mean top-label confidence - accuracy|
    assert value(table, "ece", "uniform", 1) == pytest.approx(abs((0.9 + 0.6 + 0.8 + 0.55) / 4 - 0.75))
    # 10 bins put 0.55 (ok) and 0.6 (wrong) together
    assert value(table, "ece", "uniform", 10) == pytest.approx((0.1 + 0.2) / 4 + 0.075 / 2)
    # ACE with two equal-mass ranges per class (see test_binned.test_ace_by_hand_with_two_ranges)
    assert value(table, "ace", "adaptive", 2) == pytest.approx((0.325 + 0.25) / 2)
    # ACE's unweighted reduction over two uniform bins [0, .5] and (.5, 1]:
    # class 0: {0.2(0), 0.45(0)} -> 0.325 ; {0.6(0), 0.9(1)} -> |0.75 - 0.5| = 0.25
    # class 1: {0.1(0), 0.4(1)} -> |0.25 - 0.5| = 0.25 ; {0.55(1), 0.8(1)} -> 0.325
    assert value(table, "ace", "uniform", 2) == pytest.approx((0.325 + 0.25) / 2)
    # SCE with 20 uniform bins: every value alone, weights 1/4
    assert value(table, "sce", "uniform", 20) == pytest.approx((0.1 + 0.6 + 0.2 + 0.45) / 4)


@pytest.mark.parametrize("n_bins", [2, 7, 15, 40])
def test_canonical_entries_equal_the_metric_functions(n_bins):
    probs, labels = random_predictions()
    table = bin_sensitivity(probs, labels, bin_counts=[n_bins])
    assert value(table, "ece", "uniform", n_bins) == pytest.approx(cc.ece(probs, labels, n_bins=n_bins), abs=1e-14)
    assert value(table, "ece", "adaptive", n_bins) == pytest.approx(
        cc.ece(probs, labels, n_bins=n_bins, binning="adaptive"), abs=1e-14)
    assert value(table, "sce", "uniform", n_bins) == pytest.approx(cc.sce(probs, labels, n_bins=n_bins), abs=1e-14)
    assert value(table, "sce", "adaptive", n_bins) == pytest.approx(
        cc.classwise_ece(probs, labels, n_bins=n_bins, binning="adaptive"), abs=1e-14)
    assert value(table, "ace", "adaptive", n_bins) == pytest.approx(cc.ace(probs, labels, n_bins=n_bins), abs=1e-14)
    assert value(table, "tace", "adaptive", n_bins) == pytest.approx(cc.tace(probs, labels, n_bins=n_bins), abs=1e-14)


def test_threshold_is_passed_to_tace():
    probs, labels = random_predictions(seed=3)
    table = bin_sensitivity(probs, labels, bin_counts=[10], metrics=["tace"], binnings=["adaptive"], threshold=0.2)
    assert table["value"].item() == pytest.approx(cc.tace(probs, labels, n_bins=10, threshold=0.2), abs=1e-14)
    assert table["value"].item() != pytest.approx(cc.tace(probs, labels, n_bins=10), abs=1e-6)


def test_adaptive_ece_with_one_value_per_bin_is_mean_absolute_gap():
    probs, labels = random_predictions(n=50, k=3, seed=4)
    confidence = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    table = bin_sensitivity(probs, labels, bin_counts=[50], metrics=["ece"], binnings=["adaptive"])
    assert table["value"].item() == pytest.approx(np.mean(np.abs(confidence - correct)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), k=st.integers(2, 4))
def test_row_permutation_invariance_and_non_negative(seed, n, k):
    probs, labels = random_predictions(n=n, k=k, seed=seed)
    order = np.random.default_rng(seed + 1).permutation(n)
    counts = [1, 3, 8]
    a = bin_sensitivity(probs, labels, bin_counts=counts)
    b = bin_sensitivity(probs[order], labels[order], bin_counts=counts)
    np.testing.assert_allclose(a["value"], b["value"], rtol=0, atol=1e-12)
    assert (a["value"] >= 0).all()


def test_two_hundred_bin_counts_on_digits_sized_data_are_fast():
    probs, labels = random_predictions(n=1800, k=10, seed=5)
    bin_sensitivity(probs[:50], labels[:50], bin_counts=[2, 3])  # warm-up
    start = time.perf_counter()
    table = bin_sensitivity(probs, labels)
    elapsed = time.perf_counter() - start
    assert len(table) == 199 * 4 * 2
    assert elapsed < 2.0  # about 0.5 s on the 2-core development machine


@pytest.mark.parametrize("kwargs, match", [
    ({"bin_counts": []}, "bin_counts.*empty"),
    ({"bin_counts": [0, 5]}, "bin_counts"),
    ({"bin_counts": [2.5]}, "bin_counts"),
    ({"bin_counts": [5, 5]}, "repeated"),
    ({"bin_counts": 7}, "iterable"),
    ({"metrics": ["mce"]}, "metrics"),
    ({"metrics": []}, "metrics.*empty"),
    ({"binnings": ["quantile"]}, "binning"),
    ({"binnings": []}, "binnings.*empty"),
    ({"threshold": -0.1}, "threshold"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        bin_sensitivity(TINY_PROBS, TINY_LABELS, **kwargs)


def test_bad_predictions_are_rejected():
    with pytest.raises(CalibrationInputError, match="sum to 1"):
        bin_sensitivity([[0.5, 0.6]], [0])


# ----------------------------------------------------------------------------- the sorted-values sweep
def per_count_reference(probs, labels, n_bins, binning, metric, threshold=0.01, right=True):
    """The value of one table entry computed the way it was before the sweep: the metric function, or the
    per-count bin statistics with the metric's reduction."""
    if metric == "ece":
        return cc.ece(probs, labels, n_bins=n_bins, binning=binning, right=right)
    if metric == "sce":
        return cc.classwise_ece(probs, labels, n_bins=n_bins, binning=binning, right=right)
    keep = probs > threshold if metric == "tace" else None
    if binning == "adaptive":
        return cc.tace(probs, labels, n_bins, threshold) if keep is not None else cc.ace(probs, labels, n_bins)
    stats = classwise_bin_statistics(probs, labels, n_bins, binning, keep=keep, right=right)
    return float(mean_abs_gap(stats).mean())


def assert_sweep_equals_reference(probs, labels, counts, threshold=0.01, right=True):
    table = bin_sensitivity(probs, labels, bin_counts=counts, threshold=threshold, right=right)
    for row in table.itertuples():
        expected = per_count_reference(probs, labels, row.n_bins, row.binning, row.metric, threshold, right)
        assert row.value == pytest.approx(expected, rel=1e-12, abs=1e-14), row


def tied_predictions(n, k, seed, decimals):
    """Softmax-of-normal rows rounded so that many values tie (and some fall on uniform edges, 0 and 1)."""
    probs, labels = random_predictions(n=n, k=k, seed=seed, temperature=3.0)
    probs = np.round(probs, decimals)
    probs[:, -1] = np.clip(1.0 - probs[:, :-1].sum(axis=1), 0.0, None)
    probs /= probs.sum(axis=1, keepdims=True)
    return np.round(probs, 12), labels


COUNTS = [1, 2, 3, 7, 10, 15, 40, 199, 200, 700]


sweep_path = kernel_paths("sweep_reductions", "sweep_path")  # the compiled class-column sweep and numpy's


@pytest.mark.parametrize("k", [2, 50])
@pytest.mark.parametrize("right", [True, False])
@pytest.mark.parametrize("ties", [False, True])
def test_sweep_equals_the_per_count_metrics(k, right, ties, sweep_path):
    probs, labels = tied_predictions(400, k, seed=k, decimals=2) if ties else random_predictions(n=400, k=k, seed=k)
    assert_sweep_equals_reference(probs, labels, COUNTS, right=right)


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.6, 0.99, 1.0])
def test_tace_thresholds_that_empty_classes(threshold, sweep_path):
    probs, labels = tied_predictions(300, 50, seed=7, decimals=1)
    # some classes keep no value above the larger thresholds: they count 0 in the mean over classes
    assert_sweep_equals_reference(probs, labels, COUNTS, threshold=threshold)
    assert_sweep_equals_reference(probs, labels, COUNTS, threshold=threshold, right=False)


def test_values_on_uniform_edges_with_both_rules(sweep_path):
    probs = np.array([[0.0, 1.0], [0.3, 0.7], [0.5, 0.5], [0.1, 0.9], [0.25, 0.75], [0.7, 0.3], [1.0, 0.0]])
    labels = np.array([1, 0, 1, 1, 0, 0, 0])
    for right in (True, False):
        assert_sweep_equals_reference(probs, labels, [1, 2, 3, 4, 5, 10, 20], right=right)


def test_one_row(sweep_path):
    assert_sweep_equals_reference(np.array([[0.2, 0.8]]), np.array([0]), [1, 2, 5])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), k=st.integers(2, 6), decimals=st.integers(1, 3),
       right=st.booleans(), threshold=st.sampled_from([0.0, 0.01, 0.2, 0.5, 0.9]),
       counts=st.lists(st.integers(1, 60), min_size=1, max_size=6, unique=True))
def test_sweep_equals_the_per_count_metrics_on_random_tied_data(seed, n, k, decimals, right, threshold, counts):
    probs, labels = tied_predictions(n, k, seed, decimals)
    assert_sweep_equals_reference(probs, labels, counts, threshold=threshold, right=right)
    kernel = compiled.sweep_reductions
    if kernel is not None:  # and the numpy path, which the kernel replaces when numba is installed
        try:
            compiled.sweep_reductions = None
            assert_sweep_equals_reference(probs, labels, counts, threshold=threshold, right=right)
        finally:
            compiled.sweep_reductions = kernel


def test_compiled_sweep_gives_the_numpy_sweep_at_many_classes(monkeypatch):
    """Issue 15: bin_sensitivity at 5,000 x 1,000 took 1.3 s (85x one classwise_ece, target 40x), most of it
    gathering 20 million bin sums per array; the kernel reduces each column's bins as it walks them."""
    require_kernel("sweep_reductions")
    probs, labels = tied_predictions(700, 300, seed=5, decimals=3)  # ties, zeros, and columns empty above 0.01
    for right in (True, False):
        fast = bin_sensitivity(probs, labels, right=right)
        with monkeypatch.context() as patch:
            patch.setattr(compiled, "sweep_reductions", None)
            pd.testing.assert_frame_equal(fast, bin_sensitivity(probs, labels, right=right), rtol=1e-13, atol=1e-15)


def test_small_blocks_and_chunks_of_bin_counts_give_the_same_table(monkeypatch, sweep_path):
    probs, labels = tied_predictions(90, 7, seed=11, decimals=2)
    counts = [300, 2, 5, 40, 120, 1, 77]
    expected = bin_sensitivity(probs, labels, bin_counts=counts)
    monkeypatch.setattr(sensitivity, "_BLOCK_VALUES", 100)  # one column per block, counts in several chunks
    monkeypatch.setattr(accel_sweep, "SWEEP_BLOCK_VALUES", 100)
    assert accel_sweep.count_chunks(counts) == [slice(0, 1), slice(1, 4), slice(4, 5), slice(5, 7)]
    pd.testing.assert_frame_equal(bin_sensitivity(probs, labels, bin_counts=counts), expected, rtol=1e-13)
    assert_sweep_equals_reference(probs, labels, counts)


@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
@pytest.mark.parametrize("right", [True, False])
@pytest.mark.parametrize("threshold", [None, 0.05, 0.5])
def test_sorted_columns_bin_sums_equal_classwise_bin_statistics(binning, right, threshold):
    probs, labels = tied_predictions(120, 6, seed=3, decimals=2)
    counts = [1, 4, 15, 130]
    columns = sort_columns(np.ascontiguousarray(probs.T), labels[None, :] == np.arange(6)[:, None])
    count, sum_value, sum_target = sorted_columns_bin_sums(columns, counts, binning, right=right, threshold=threshold)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    keep = None if threshold is None else probs > threshold
    for j, n_bins in enumerate(counts):
        stats = classwise_bin_statistics(probs, labels, n_bins, binning, keep=keep, right=right)
        part = slice(offsets[j], offsets[j + 1])
        np.testing.assert_array_equal(count[:, part], stats.count)
        np.testing.assert_allclose(sum_value[:, part], stats.sum_value, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(sum_target[:, part], stats.sum_target)


# ----------------------------------------------------------------------------- rank_by_bins

def sweep(values, metric="ece", binning="uniform", bins=(5, 10, 15)):
    return pd.DataFrame({"n_bins": list(bins), "binning": binning, "metric": metric, "value": values})


def test_ranks_flips_and_spearman_by_hand():
    tables = {
        "a": sweep([0.10, 0.30, 0.30]),
        "b": sweep([0.20, 0.20, 0.10]),
        "c": sweep([0.30, 0.10, 0.20]),
    }
    result = rank_by_bins(tables, reference_n_bins=5)
    assert isinstance(result, BinRanking)
    at_10 = result.ranks[result.ranks.n_bins == 10].set_index("model")["rank"].to_dict()
    assert at_10 == {"a": 3, "b": 2, "c": 1}
    assert result.flips["n_bins"].tolist() == [10, 15]
    assert result.flips["order"].tolist() == ["c < b < a", "b < c < a"]
    assert result.flips["previous_order"].tolist()[0] == "a < b < c"
    # ranks at 5: (1,2,3); at 10: (3,2,1) -> rho -1; at 15: (3,1,2) -> 1 - 6*(4+1+1)/(3*8) = -0.5
    np.testing.assert_allclose(result.spearman["rho"], [1.0, -1.0, -0.5])
    assert (result.spearman["reference_n_bins"] == 5).all()


def test_ties_share_the_lowest_rank_and_are_shown_as_equal():
    tables = {"a": sweep([0.1, 0.2, 0.2]), "b": sweep([0.1, 0.3, 0.3])}
    result = rank_by_bins(tables, reference_n_bins=10)
    at_5 = result.ranks[result.ranks.n_bins == 5]["rank"].tolist()
    assert at_5 == [1, 1]
    assert result.flips["order"].tolist() == ["a < b"]
    assert result.flips["previous_order"].tolist() == ["a = b"]
    assert np.isnan(result.spearman["rho"].iloc[0])  # all tied at 5 bins


def test_one_model_has_no_flips_and_nan_spearman():
    result = rank_by_bins({"only": sweep([0.1, 0.2, 0.3])})
    assert result.flips.empty
    assert list(result.flips.columns) == ["binning", "metric", "n_bins", "previous_n_bins", "order", "previous_order"]
    assert result.ranks["rank"].eq(1).all()
    assert result.spearman["rho"].isna().all()


def test_groups_are_ranked_separately_and_rows_may_come_in_any_order():
    a = pd.concat([sweep([0.1, 0.1, 0.1]), sweep([0.5, 0.5, 0.5], metric="ace")])
    b = pd.concat([sweep([0.2, 0.2, 0.2], metric="ace"), sweep([0.2, 0.2, 0.2])]).iloc[::-1]
    result = rank_by_bins({"a": a, "b": b})
    ece_ranks = result.ranks[result.ranks.metric == "ece"].groupby("model")["rank"].unique()
    ace_ranks = result.ranks[result.ranks.metric == "ace"].groupby("model")["rank"].unique()
    assert ece_ranks["a"].tolist() == [1] and ace_ranks["a"].tolist() == [2]
    assert result.flips.empty


def test_on_real_sweeps():
    probs, labels = random_predictions(n=400, k=4, seed=7, temperature=1.0)
    sharp = cc.softmax(np.log(probs) * 3.0)
    tables = {name: bin_sensitivity(p, labels, bin_counts=range(2, 31)) for name, p in
              {"calibrated-ish": probs, "sharpened": sharp}.items()}
    result = rank_by_bins(tables)
    assert set(result.ranks["rank"]) <= {1, 2}
    assert len(result.ranks) == 2 * len(tables["sharpened"])
    rho = result.spearman["rho"].dropna()
    np.testing.assert_allclose(np.abs(rho), 1.0)  # two models: same order or reversed
    assert rho.between(-1.0, 1.0).all()


@pytest.mark.parametrize("tables, kwargs, match", [
    ({}, {}, "non-empty mapping"),
    ({"a": pd.DataFrame({"x": [1]})}, {}, "columns"),
    ({"a": sweep([0.1, 0.2, 0.3]), "b": sweep([0.1, 0.2], bins=(5, 10))}, {}, "different bin counts"),
    ({"a": pd.concat([sweep([0.1, 0.2, 0.3]), sweep([0.1, 0.2, 0.3])])}, {}, "repeats"),
    ({"a": sweep([0.1, 0.2, 0.3])}, {"reference_n_bins": 7}, "reference_n_bins"),
    ({"a": sweep([0.1, 0.2, 0.3])}, {"reference_n_bins": 0}, "reference_n_bins"),
])
def test_rank_by_bins_bad_input(tables, kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        rank_by_bins(tables, **kwargs)


# ----------------------------------------------------------------------------- the one ranking helper
def test_spearman_rows_equal_scipy_with_ties_and_nan_for_constant_rows():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(3)
    values = np.round(rng.random((6, 5)), 1)  # rounding makes ties
    values[2] = 0.4  # every observation ties: undefined
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about the constant row
        expected = spearmanr(values, axis=1).statistic
    found = spearman_rows(values)
    np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-12)
    assert np.isnan(found[2]).all() and np.isnan(found[:, 2]).all()
    np.testing.assert_allclose(spearman_rows(values, reference=4), found[:, 4], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(spearman_rows([[1.0, 2.0], [2.0, 1.0]]), [[1.0, -1.0], [-1.0, 1.0]])


def test_competition_ranks_share_the_lowest_rank_of_a_tie():
    assert competition_ranks([[0.2, 0.1, 0.2, 0.3]], axis=1).tolist() == [[2, 1, 2, 4]]
    assert competition_ranks([[0.2, 0.1], [0.1, 0.1]], axis=0).tolist() == [[2, 1], [1, 1]]


# ----------------------------------------------------------------------------- rank stability
def single_prediction_model(confidence, accuracy, n=1000):
    probs = np.tile([confidence, 1 - confidence], (n, 1))
    labels = np.where(np.arange(n) < round(accuracy * n), 0, 1)
    return probs, labels


def test_gce_sets_equal_gce_for_all_32_variants():
    data = LogisticNormalModel(n_classes=5, temperature=0.8).sample(1500, seed=1)
    probs = data.probs.copy()
    probs[:4] = [1.0, 0.0, 0.0, 0.0, 0.0]  # exact zeros and ties
    prepared = _GceSets(probs, data.labels)
    for variant in GCE_VARIANTS:
        binning, max_prob, class_conditional, threshold, norm = variant
        expected = [cc.gce(probs, data.labels, n_bins=b, binning=binning, max_prob=max_prob,
                           class_conditional=class_conditional, threshold=threshold, norm=norm) for b in (1, 9, 40)]
        np.testing.assert_allclose(prepared.gce([1, 9, 40], *variant), expected, atol=1e-13, err_msg=str(variant))


def test_rank_stability_is_one_when_no_bin_count_changes_the_order():
    models = {"a": single_prediction_model(0.7, 0.65), "b": single_prediction_model(0.8, 0.6),
              "c": single_prediction_model(0.9, 0.5)}
    result = bin_rank_stability(models, bin_counts=range(10, 51, 10))
    assert result.table.shape == (32, 9)
    assert result.values.shape == (32, 5, 3) and result.correlations.shape == (32, 5, 5)
    defined = result.table.dropna(subset=["mean_spearman"])
    assert len(defined) >= 16
    np.testing.assert_allclose(defined["mean_spearman"], 1.0)
    assert (defined["pairs"] == 10).all()
    assert result.table["variant"].tolist() == list(range(32))
    assert result.table.loc[4, ["binning", "max_prob", "class_conditional", "threshold", "norm"]].tolist() == [
        "uniform", True, False, 0.0, "l1"]


def test_rank_stability_counts_the_order_flips_of_the_nixon_cancellation():
    """X (Nixon Fig. 4) has ECE 0.003 when 0.52 and 0.58 share a bin and 0.465 otherwise; Y sits at 0.1, Z at 0.6."""
    models = {"X": nixon_figure4_data(), "Y": single_prediction_model(0.7, 0.6),
              "Z": single_prediction_model(0.9, 0.3)}
    counts = list(range(10, 51))
    result = bin_rank_stability(models, bin_counts=counts)
    probs, labels = models["X"]
    shared = np.array([cc.ece(probs, labels, n_bins=b) < 0.05 for b in counts])
    np.testing.assert_allclose(result.values[4, :, 0], [cc.ece(probs, labels, n_bins=b) for b in counts])
    s, d = int(shared.sum()), int((~shared).sum())
    assert s > 0 and d > 0
    # Same pattern: rho = 1; orders (1, 2, 3) vs (2, 1, 3): rho = 1 - 6 * 2 / (3 * 8) = 0.5.
    expected = (math.comb(s, 2) + math.comb(d, 2) + 0.5 * s * d) / math.comb(len(counts), 2)
    assert result.table.loc[4, "mean_spearman"] == pytest.approx(expected)
    flips = [(i, j) for i, j in combinations(range(len(counts)), 2) if shared[i] != shared[j]]
    assert result.correlations[4][flips[0]] == pytest.approx(0.5)
    # Adaptive bins on X's two values always split them: its variant 20 never flips.
    assert result.table.loc[20, "mean_spearman"] == pytest.approx(1.0)
    by = result.by_property.set_index(["property", "setting"])["mean_spearman"]
    assert by[("binning", "adaptive")] > by[("binning", "uniform")]
    assert len(by) == 10 and ("threshold", "0.0") in by.index and ("max_prob", "False") in by.index


def test_rank_stability_progress_stop_and_validation():
    models = {"a": single_prediction_model(0.7, 0.65), "b": single_prediction_model(0.8, 0.6)}
    seen = []
    bin_rank_stability(models, bin_counts=[10, 20], on_progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (1, 32) and seen[-1] == (32, 32)
    checks = iter([False, True])
    stopped = bin_rank_stability(models, bin_counts=[10, 20], should_stop=lambda: next(checks))
    assert stopped.stopped and np.isfinite(stopped.values[0]).all() and np.isnan(stopped.values[1:]).all()
    with pytest.raises(CalibrationInputError, match="at least two model names"):
        bin_rank_stability({"a": models["a"]})
    with pytest.raises(CalibrationInputError, match="at least two different bin counts"):
        bin_rank_stability(models, bin_counts=[10, 10])
    with pytest.raises(CalibrationInputError, match=r"model 'b' must be given as \(probs, labels\)"):
        bin_rank_stability({"a": models["a"], "b": models["a"][0]})
    with pytest.raises(CalibrationInputError, match="model 'b': rows of `probs` must sum to 1"):
        bin_rank_stability({"a": models["a"], "b": (np.full((3, 2), 0.6), [0, 1, 0])})


def test_gce_variants_equal_gce_bit_for_bit_with_each_binning_made_once(monkeypatch):
    """Issue 15: the 32-variant ranking bins each of the 16 settings once for both norms (at 25,000 x 1,000 the
    32 separate calls took 0.5 s per method); every value is the one calib_core.gce gives, bit for bit."""
    from calib_core.metrics import binned, sensitivity

    rng = np.random.default_rng(2)
    for n, k in ((400, 2), (300, 4), (200, 30)):
        logits = 3 * rng.normal(size=(n, k))
        probs = cc.softmax(logits)
        probs[: n // 10] = np.round(probs[: n // 10], 2)  # ties and exact zeros
        probs[: n // 10] /= probs[: n // 10].sum(axis=1, keepdims=True)
        labels = rng.integers(0, k, n)
        for n_bins in (5, 15):
            expected = [cc.gce(probs, labels, n_bins=n_bins, binning=b, max_prob=m, class_conditional=c,
                               threshold=t, norm=norm) for b, m, c, t, norm in sensitivity.GCE_VARIANTS]
            calls = []
            original = binned.gce_bin_statistics
            monkeypatch.setattr(sensitivity, "gce_bin_statistics", lambda *a, **kw: calls.append(a) or original(*a, **kw))
            got = sensitivity.gce_variants(probs, labels, n_bins)
            assert got.tolist() == expected
            assert len(calls) == 16
