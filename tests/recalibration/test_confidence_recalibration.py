"""Recalibrating a confidence model (issue 26, deliverable 3): calib_core.recalibration.confidence."""
from __future__ import annotations

import numpy as np
import pytest

from calib_core import CalibrationInputError, load_demo
from calib_core.metrics import aurc, confidence_ece
from calib_core.recalibration import RECALIBRATORS, PlattScaling
from calib_core.recalibration.compare import Protocol, summary_matrix
from calib_core.recalibration.confidence import (CONFIDENCE_METHODS, CONFIDENCE_METRIC_KEYS, apply_confidence_map,
                                                 compare_confidence, fit_confidence_map, order_changes)
from calib_core.recalibration.recommendation import compare_methods


@pytest.fixture(scope="module")
def demo():
    return load_demo("confidence_digits_random_forest")


@pytest.fixture(scope="module")
def demo_comparison(demo):
    return compare_confidence(demo.confidence, demo.correct, split=demo.split, split_names=demo.split_names,
                              methods=("Platt scaling", "Isotonic regression"), n_boot=30, seed=0)


def test_recalibrated_confidence_of_the_demo_lowers_its_ece_beyond_noise(demo, demo_comparison):
    table = demo_comparison.table.set_index(["method", "key"])
    ev = demo_comparison.ev
    # "before" is the ECE of the stated confidence on the test rows, as confidence_ece computes it
    assert ev.before_values["conf_ece"] == pytest.approx(confidence_ece(ev.before[:, 1], ev.labels))
    for method in ("Platt scaling", "Isotonic regression"):
        row = table.loc[(method, "conf_ece")]
        assert row["after"] < row["before"] / 2
        assert row["delta_high"] < 0  # the paired interval of the change excludes 0
    rec = demo_comparison.recommendation
    assert rec.method in ("Platt scaling", "Isotonic regression")
    assert rec.after["ece"] < rec.before["ece"] and rec.after["brier"] <= rec.before["brier"]


def test_a_confidence_comparison_has_no_accuracy_row_nor_claim(demo, demo_comparison):
    keys = set(demo_comparison.table["key"])
    assert keys == set(CONFIDENCE_METRIC_KEYS)
    assert not any("accuracy" in key for key in keys)
    assert "Δ accuracy" not in summary_matrix(demo_comparison.ev, demo_comparison.table).columns
    rec = demo_comparison.recommendation
    assert "accuracy" not in rec.after and "accuracy" not in rec.before
    for markdown in (True, False):
        assert "accuracy" not in rec.sentence("demo", markdown=markdown)
    # the K-class comparison of the same matrix would claim an accuracy (of predicting correctness): not this one
    k_class = compare_methods(demo.probs[:300], demo.labels[:300], methods=("Platt scaling",), n_boot=0)
    assert "accuracy" in k_class.recommendation.sentence("demo")


def test_the_comparison_is_compare_methods_with_the_confidence_metrics(demo):
    """One path: the adapter is compare_methods on [1 - c, c], so its numbers are exactly those."""
    found = compare_confidence(demo.confidence, demo.correct, methods=("Platt scaling",), n_boot=0,
                               protocol=Protocol("random", seed=3))
    direct = compare_methods(demo.probs, demo.labels, methods=("Platt scaling",), n_boot=0,
                             protocol=Protocol("random", seed=3), metrics=CONFIDENCE_METRIC_KEYS)
    assert found.table["after"].tolist() == direct.table["after"].tolist()


def test_an_increasing_map_keeps_the_aurc_and_a_reversing_one_changes_it():
    rng = np.random.default_rng(1)
    confidence = rng.uniform(0.05, 0.95, 600)
    # confidence ranks the answers the wrong way round: a Platt map with a negative slope reverses the order
    correct = (rng.random(600) < 1.0 - confidence).astype(int)
    found = compare_confidence(confidence, correct, methods=("Platt scaling", "Temperature scaling",
                                                             "Histogram binning"),
                               n_boot=0, protocol=Protocol("random", seed=0))
    changes = order_changes(found)
    assert changes["Temperature scaling"].order == "increasing"
    assert changes["Temperature scaling"].aurc_after == pytest.approx(changes["Temperature scaling"].aurc_before)
    assert changes["Platt scaling"].order == "not_monotone"
    assert changes["Platt scaling"].aurc_after < changes["Platt scaling"].aurc_before
    assert "can change the AURC" in changes["Platt scaling"].sentence
    assert changes["Histogram binning"].order in ("steps", "not_monotone")
    before = aurc(found.ev.before[:, 1], found.ev.labels)
    assert changes["Platt scaling"].aurc_before == pytest.approx(before)


def test_weights_are_honoured_as_repeated_rows_or_refused():
    rng = np.random.default_rng(2)
    confidence = rng.uniform(0.3, 1.0, 200)
    correct = (rng.random(200) < confidence ** 2).astype(int)
    weights = rng.integers(1, 4, 200)
    weighted = fit_confidence_map("Platt scaling", confidence, correct, sample_weight=weights)
    repeated = fit_confidence_map("Platt scaling", np.repeat(confidence, weights), np.repeat(correct, weights))
    plain = fit_confidence_map("Platt scaling", confidence, correct)
    grid = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(apply_confidence_map(weighted, grid), apply_confidence_map(repeated, grid), atol=1e-6)
    assert not np.allclose(apply_confidence_map(weighted, grid), apply_confidence_map(plain, grid), atol=1e-4)
    with pytest.raises(CalibrationInputError):
        fit_confidence_map("Venn-Abers", confidence, correct, sample_weight=weights)


def test_every_confidence_method_is_registered_and_only_those_are_accepted():
    assert set(CONFIDENCE_METHODS) <= set(RECALIBRATORS)
    with pytest.raises(CalibrationInputError, match="Dirichlet"):
        fit_confidence_map("Dirichlet calibration", [0.2, 0.9], [0, 1])
    with pytest.raises(CalibrationInputError, match="Vector scaling"):
        compare_confidence([0.2, 0.9, 0.7, 0.4], [0, 1, 1, 0], methods=("Vector scaling",), n_boot=0)


def test_a_map_fitted_on_a_k_class_model_is_not_applied_to_a_confidence():
    three = PlattScaling(input="probs").fit(np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.1, 0.8, 0.1]] * 4),
                                            np.array([2, 0, 1] * 4))
    with pytest.raises(CalibrationInputError, match="confidence"):
        apply_confidence_map(three, [0.5, 0.7])


def test_cross_fitted_comparison_of_a_confidence_model(demo):
    found = compare_confidence(demo.confidence, demo.correct, methods=("Platt scaling",), n_boot=20,
                               protocol=Protocol("cross_fit", n_folds=3, seed=1))
    assert found.ev.cross_fitted and found.ev.eval_index.size == demo.n_samples
    row = found.table.set_index("key").loc["conf_ece"]
    assert row["after"] < row["before"] and row["delta_high"] < 0
    assert "3 fold maps" in order_changes(found)["Platt scaling"].sentence
