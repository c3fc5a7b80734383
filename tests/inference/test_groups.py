"""Tests for calib_core.inference.groups: by_group, group_reliability, multicalibration."""
import functools

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core import CalibrationInputError


def two_groups(n=3000, seed=0):
    """Group "a" calibrated, group "b" over-confident (outcome frequency p**3 at prediction p)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    groups = np.where(rng.uniform(size=n) < 0.5, "a", "b")
    labels = (rng.uniform(size=n) < np.where(groups == "a", p, p ** 3)).astype(int)
    return cc.as_probs(p), labels, groups


def test_table_columns_values_and_intervals_are_the_metric_and_bootstrap_ci_per_group():
    probs, labels, groups = two_groups()
    result = cc.by_group(cc.ece, probs, labels, groups, n_boot=60, seed=4)
    assert list(result.table.columns[:5]) == ["group", "value", "ci_low", "ci_high", "n"]
    assert result.table["group"].tolist() == ["a", "b"]
    children = np.random.SeedSequence(4).spawn(3)
    for g, row in result.table.iterrows():
        mask = groups == row["group"]
        assert row["value"] == cc.ece(probs[mask], labels[mask])
        assert row["n"] == mask.sum()
        ref = cc.bootstrap_ci(cc.ece, probs[mask], labels[mask], n_boot=60,
                              seed=np.random.default_rng(children[g]))
        assert (row["ci_low"], row["ci_high"]) == (ref.low, ref.high)
        assert row["gap"] == pytest.approx(row["value"] - result.overall)
    assert result.overall == cc.ece(probs, labels)
    again = cc.by_group(cc.ece, probs, labels, groups, n_boot=60, seed=4)
    pd.testing.assert_frame_equal(result.table, again.table)


def test_worst_group_its_gap_and_the_gap_interval():
    probs, labels, groups = two_groups(n=6000, seed=1)
    result = cc.by_group(cc.ece, probs, labels, groups, n_boot=100, seed=0)
    assert result.worst_group == "b"
    b = result.table.set_index("group").loc["b"]
    assert result.worst_value == b["value"]
    assert result.worst_gap == pytest.approx(b["value"] - result.overall)
    assert 0 < result.gap_low <= result.worst_gap <= result.gap_high
    assert result.overall_low <= result.overall <= result.overall_high


def test_registry_key_equals_the_callable_with_the_same_bins():
    probs, labels, groups = two_groups(n=1500)
    by_key = cc.by_group("ace", probs, labels, groups, n_boot=0, n_bins=10)
    by_function = cc.by_group(functools.partial(cc.ace, n_bins=10), probs, labels, groups, n_boot=0)
    np.testing.assert_array_equal(by_key.table["value"], by_function.table["value"])
    assert by_key.metric == "ace" and np.isnan(by_key.table["ci_low"]).all() and np.isnan(by_key.gap_low)


def test_worst_can_be_the_smallest_value():
    probs, labels, groups = two_groups(n=2000)
    result = cc.by_group("accuracy", probs, labels, groups, n_boot=0, worst="min")
    values = result.table.set_index("group")["value"]
    assert result.worst_group == values.idxmin()


def test_more_than_fifty_groups_keeps_the_49_largest_and_merges_the_rest():
    rng = np.random.default_rng(2)
    sizes = np.arange(60) + 40  # group gK has 40 + K rows: g0..g10 are the 11 smallest
    groups = np.repeat([f"g{k:02d}" for k in range(60)], sizes)
    probs = cc.as_probs(rng.uniform(size=groups.size))
    labels = (rng.uniform(size=groups.size) < probs[:, 1]).astype(int)
    result = cc.by_group(cc.ece, probs, labels, groups, n_boot=0)
    table = result.table
    assert len(table) == 50 and table["group"].iloc[-1] == "other"
    assert table["group"].iloc[:49].tolist() == [f"g{k:02d}" for k in range(11, 60)]
    assert table["n"].iloc[-1] == sizes[:11].sum() and table["n"].sum() == groups.size
    assert any("merged into 'other'" in note for note in result.notes)
    assert result.worst_group != "other"
    mask = np.isin(groups, [f"g{k:02d}" for k in range(11)])
    assert table["value"].iloc[-1] == cc.ece(probs[mask], labels[mask])


def test_small_groups_are_flagged_and_not_chosen_as_worst():
    probs, labels, groups = two_groups(n=2000)
    groups = groups.astype(object)
    groups[:12] = "tiny"
    labels = labels.copy()
    labels[:12] = 1 - (probs[:12, 1] > 0.5)  # every tiny-group prediction wrong: a huge ECE
    result = cc.by_group(cc.ece, probs, labels, groups, n_boot=0)
    tiny = result.table.set_index("group").loc["tiny"]
    assert bool(tiny["too_small"]) and "fewer than 30 rows" in tiny["note"]
    assert tiny["value"] == result.table["value"].max()
    assert result.worst_group == "b"
    flagged = cc.by_group(cc.ece, probs, labels, groups, n_boot=0, min_rows=5, n_bins=15)
    assert bool(flagged.table.set_index("group").loc["tiny", "too_small"])  # 12 rows < 15 bins


def test_mixed_label_types_and_categoricals_are_accepted():
    probs, labels, _ = two_groups(n=200)
    mixed = np.array([1, "1"] * 100, dtype=object)
    assert len(cc.by_group(cc.ece, probs, labels, mixed, n_boot=0).table) == 2
    categorical = pd.Categorical(["x", "y"] * 100, categories=["x", "y", "unused"])
    assert cc.by_group(cc.ece, probs, labels, categorical, n_boot=0).table["group"].tolist() == ["x", "y"]


@pytest.mark.parametrize("groups, match", [
    (np.array(["a", "b"]), "2 entries but `probs` has 200 rows"),
    (np.array(["a"] * 199 + [None], dtype=object), "missing values.*row 199"),
    (np.array([1.0] * 150 + [np.nan] * 50), "missing values.*row 150"),
    (np.zeros((200, 2)), "1-D"),
    (pd.DataFrame({"a": [1] * 200, "b": [2] * 200}), "1-D"),
])
def test_groups_validation_names_the_argument(groups, match):
    probs, labels, _ = two_groups(n=200)
    with pytest.raises(CalibrationInputError, match=match):
        cc.by_group(cc.ece, probs, labels, groups, n_boot=0)


@pytest.mark.parametrize("kwargs, match", [({"n_boot": 1}, "n_boot"), ({"worst": "best"}, "worst"),
                                           ({"alpha": 2.0}, "alpha"), ({"max_groups": 1}, "max_groups")])
def test_option_validation(kwargs, match):
    probs, labels, groups = two_groups(n=200)
    with pytest.raises(CalibrationInputError, match=match):
        cc.by_group(cc.ece, probs, labels, groups, **kwargs)


def test_metric_must_be_callable_or_a_known_key():
    probs, labels, groups = two_groups(n=200)
    with pytest.raises(CalibrationInputError, match="metric"):
        cc.by_group(42, probs, labels, groups, n_boot=0)
    with pytest.raises(CalibrationInputError, match="unknown metric"):
        cc.by_group("not_a_metric", probs, labels, groups, n_boot=0)


def test_group_reliability_rows_give_each_groups_ece():
    probs, labels, groups = two_groups(n=2000, seed=5)
    table = cc.group_reliability(probs, labels, groups, n_bins=10)
    assert list(table.columns[:6]) == ["group", "bin", "count", "confidence", "accuracy", "gap"]
    for name, rows in table.groupby("group"):
        mask = groups == name
        assert rows["count"].sum() == mask.sum()
        ece = float((rows["weight"] * rows["gap"].abs()).sum())
        assert ece == pytest.approx(cc.ece(probs[mask], labels[mask], n_bins=10), abs=1e-12)
    np.testing.assert_allclose(table["gap"], table["confidence"] - table["accuracy"])


def test_multicalibration_finds_the_worst_cell_of_a_hand_example():
    probs = cc.as_probs([0.9] * 4 + [0.1] * 4 + [0.9] * 4)
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0])
    groups = ["a"] * 8 + ["b"] * 4
    result = cc.multicalibration(probs, labels, groups, n_bins=10, target=1, min_count=4)
    assert (result.group, result.bin, result.count) == ("b", 8, 4)
    assert result.gap == pytest.approx(0.9 - 0.25) and result.max_gap == pytest.approx(0.65)
    assert result.n_cells == 3 and result.n_cells_used == 3
    none = cc.multicalibration(probs, labels, groups, n_bins=10, target=1, min_count=5)
    assert none.group is None and np.isnan(none.max_gap) and "at least 5 rows" in none.reason


def test_multicalibration_on_a_simulation_names_the_miscalibrated_group():
    probs, labels, groups = two_groups(n=8000, seed=3)
    result = cc.multicalibration(probs, labels, groups, n_bins=10, target=1)
    assert result.group == "b" and result.max_gap > 0.2
    assert result.table.loc[result.table["used"], "count"].min() >= 30


def test_multicalibration_rejects_a_negative_min_count():
    probs, labels, groups = two_groups(n=100)
    with pytest.raises(CalibrationInputError, match="min_count"):
        cc.multicalibration(probs, labels, groups, min_count=-1)


def test_registry_keys_get_the_interval_their_registry_entry_declares():
    """The Groups page and the CLI pass registry keys: ECE's interval is estimate +- z * bootstrap SE there,
    as on the Metrics page (it was a percentile interval, which need not contain a biased estimate)."""
    rng = np.random.default_rng(11)
    n = 1_200
    probs = rng.dirichlet(np.ones(3), size=n)
    labels = rng.integers(0, 3, size=n)
    groups = rng.choice(["a", "b", "c"], size=n)
    assert cc.get_metric("ece").interval == "bootstrap_se"
    table = cc.by_group("ece", probs, labels, groups, n_boot=100, seed=0).table
    inside = table["ci_low"] > 0  # not clipped at 0
    assert inside.any()
    centre = (table["ci_low"] + table["ci_high"]) / 2
    np.testing.assert_allclose(centre[inside], table["value"][inside], rtol=0, atol=1e-12)


@pytest.mark.parametrize("metric", [cc.ece, functools.partial(cc.ace, n_bins=8),
                                    functools.partial(cc.classwise_ece, binning="adaptive")])
def test_stratified_bootstrap_of_a_binned_metric_is_the_materialised_resamples(metric, monkeypatch):
    """Issue 15: the worst-group and overall intervals come from the row-weight engine, with the same
    resamples and values as calling the metric on every materialised resample (the path it replaced)."""
    from calib_core.inference import groups as groups_module
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3), size=2500)
    labels = rng.integers(0, 3, size=2500)
    groups = rng.choice(["x", "y", "z"], size=2500, p=[0.5, 0.3, 0.2])
    # Blocks of a few resamples each, so the blocked loop is exercised too.
    monkeypatch.setattr(groups_module, "MAX_WEIGHT_BLOCK", 3 * 2500)
    engine = cc.by_group(metric, probs, labels, groups, n_boot=40, seed=9)
    monkeypatch.setattr(groups_module, "binned_spec", lambda metric: None)
    generic = cc.by_group(metric, probs, labels, groups, n_boot=40, seed=9)
    for field in ("overall_low", "overall_high", "gap_low", "gap_high"):
        assert getattr(engine, field) == pytest.approx(getattr(generic, field), rel=1e-12, abs=1e-15)
    assert np.isfinite(engine.gap_low)
