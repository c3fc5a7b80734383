"""Tests for calib_core.metrics.sensitivity: bin-count sweeps and model rankings across bin counts."""
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.metrics.sensitivity import BinRanking, bin_sensitivity, rank_by_bins

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
