"""Tests for calib_core.lab.stability: stability of an estimate at the test-set size N, and error slopes.

Known values: hand-computed tiny cases, and numbers recorded from the implementation before it moved out of
``studio/compute_lab.py`` (issue 13).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.lab.stability import (BOUNDED_TARGETS, STABILITY_COLUMNS, gap_slopes, observed_gap, stability_table,
                                      study_sizes)


def summary_of(rows) -> pd.DataFrame:
    """A subset-study summary: (metric, size, mean, std, full_value) rows of model "m"."""
    return pd.DataFrame(rows, columns=["metric", "size", "mean", "std", "full_value"]).assign(model="m")


# ----------------------------------------------------------------------------- study sizes
def test_study_sizes_always_hold_half_and_all_rows():
    assert study_sizes(899) == (100, 128, 163, 208, 265, 339, 432, 449, 552, 704, 899)
    for n in (200, 201, 1000, 12_345):
        sizes = study_sizes(n)
        assert n // 2 in sizes and sizes[-1] == n and list(sizes) == sorted(set(sizes))


# ----------------------------------------------------------------------------- stability table
def test_stability_table_by_hand():
    summary = summary_of([("ece", 500, 0.060, 0.010, 0.050), ("ece", 1000, 0.050, 0.0, 0.050),
                          ("brier", 500, 0.201, 0.004, 0.200), ("brier", 1000, 0.200, 0.0, 0.200)])
    table = stability_table(summary, {"m": 1000}, tolerance=0.1)
    assert tuple(table.columns) == STABILITY_COLUMNS
    assert list(table["metric"]) == ["ece", "brier"], "in the order of the summary"
    table = table.set_index("metric")
    assert table.loc["ece", "relative_se"] == pytest.approx(0.2)  # 0.010 / 0.050
    assert table.loc["ece", "drift"] == pytest.approx(0.2)  # |0.060 - 0.050| / 0.050
    assert table.loc["ece", "verdict"] == "noisy and still moving with N"
    assert table.loc["brier", "relative_se"] == pytest.approx(0.02)
    assert table.loc["brier", "drift"] == pytest.approx(0.005)
    assert bool(table.loc["brier", "stable"]) and table.loc["brier", "verdict"] == "stable"
    assert table.loc["brier", "half"] == 500 and table.loc["brier", "value"] == 0.2
    assert stability_table(summary, {"m": 1000}, tolerance=0.25)["stable"].all()


def test_each_verdict():
    summary = summary_of([("noisy", 50, 1.0, 0.5, 1.0), ("noisy", 100, 1.0, 0.0, 1.0),
                          ("moving", 50, 1.5, 0.01, 1.0), ("moving", 100, 1.0, 0.0, 1.0)])
    table = stability_table(summary, {"m": 100}, tolerance=0.1).set_index("metric")
    assert table.loc["noisy", "verdict"] == "noisy: another test set of this size could differ"
    assert table.loc["moving", "verdict"] == "still moving with N (small-sample bias)"
    assert not table["stable"].any()


def test_a_zero_value_is_stable_only_when_nothing_moves():
    summary = summary_of([("still", 50, 0.0, 0.0, 0.0), ("still", 100, 0.0, 0.0, 0.0),
                          ("spread", 50, 0.0, 0.1, 0.0), ("spread", 100, 0.0, 0.0, 0.0)])
    table = stability_table(summary, {"m": 100}, tolerance=0.1).set_index("metric")
    assert (table.loc["still", "relative_se"], table.loc["still", "drift"]) == (0.0, 0.0)
    assert bool(table.loc["still", "stable"])
    assert table.loc["spread", "relative_se"] == math.inf and table.loc["spread", "drift"] == 0.0


def test_metrics_without_half_or_full_size_are_left_out():
    summary = summary_of([("ece", 100, 0.05, 0.0, 0.05), ("ece", 30, 0.07, 0.02, 0.05)])
    assert stability_table(summary, {"m": 100}, tolerance=0.1).empty
    assert tuple(stability_table(summary.iloc[:0], {}, 0.1).columns) == STABILITY_COLUMNS


def test_stability_table_numbers_are_unchanged():
    """The digits demo's study (ECE, Brier, NLL; 5 subsets per size, seed 0), recorded before the move."""
    data = cc.load_demo("digits_gaussian_nb")
    study = cc.subset_study(data.probs, data.labels, ["ece", "brier", "nll"], sizes=study_sizes(data.n_samples),
                            repetitions=5, seed=0)
    table = stability_table(study.summary.assign(model="m"), {"m": data.n_samples}, 0.1)
    expected = pd.DataFrame([
        ("m", "ece", 0.12905341778642931, 449, 0.01279941228124396, 0.09917918099949685, 0.004349836381995338,
         True, "stable"),
        ("m", "brier", 0.26113363856863336, 449, 0.02617739049229733, 0.10024518723740436, 0.014831989519954515,
         False, "noisy: another test set of this size could differ"),
        ("m", "nll", 2.244294805343669, 449, 0.24294984329616232, 0.10825219695634387, 0.04761856130457635,
         False, "noisy: another test set of this size could differ"),
    ], columns=list(STABILITY_COLUMNS))
    pd.testing.assert_frame_equal(table, expected, check_exact=False, rtol=1e-10)


# ----------------------------------------------------------------------------- Futami gap and slopes
def test_observed_gap_keeps_the_estimators_of_a_tce():
    summary = pd.DataFrame({"estimator": ["ece", "ks", "cw"], "label": ["ECE", "KS", "CW"], "size": [100] * 3,
                            "target": ["tce", "ks", "classwise_tce"], "mean_abs_error": [0.1, 0.2, 0.3],
                            "bias": 0.0})
    gap = observed_gap(summary)
    assert list(gap.columns) == ["estimator", "label", "size", "mean_abs_error"]
    assert list(gap["estimator"]) == ["ece", "cw"] and set(BOUNDED_TARGETS) == {"tce", "classwise_tce"}
    assert observed_gap(summary.iloc[:0]).empty


def test_gap_slopes_recover_a_power_law():
    sizes = np.array([100, 1000, 10_000])
    observed = pd.DataFrame({"label": "x", "size": sizes, "mean_abs_error": 0.5 * sizes ** -0.5})
    assert gap_slopes(observed)["x"] == pytest.approx(-0.5)
    assert gap_slopes(observed.iloc[:1]) == {}


def test_gap_slopes_skip_zero_errors_and_are_unchanged():
    observed = pd.DataFrame({"label": ["a"] * 3 + ["b"] * 3, "size": [100, 300, 1000] * 2,
                             "mean_abs_error": [0.1, 0.06, 0.03, 0.2, 0.0, 0.05]})
    slopes = gap_slopes(observed)
    assert list(slopes) == ["a", "b"]
    assert slopes["a"] == pytest.approx(-0.5237209437704017, rel=1e-12)
    assert slopes["b"] == pytest.approx(math.log(0.05 / 0.2) / math.log(10), rel=1e-12)  # two points: exact
