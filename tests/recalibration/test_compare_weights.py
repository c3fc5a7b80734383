"""Row weights through the comparison of recalibration methods (issue 28, item 1).

compare_methods / the recommendation, evaluate_recalibration, cross_fit and fixable_part take
``sample_weight``: each fit gets its rows' weights, every metric and bootstrap resample weights the
evaluation rows. Which equality with repeated rows holds: with the file's split column (the copies
carrying their row's split value) the whole table and the recommendation equal those of the repeated
rows; under cross-fitting each fold's map equals the map of that fold's rows repeated, on the folds of
the weighted rows (cross-fitting the repeated rows deals their copies into other folds).
"""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core import softmax
from calib_core.inference.bootstrap import resampled_metrics
from calib_core.inference.intervals import interval_from_samples
from calib_core.recalibration import TemperatureScaling
from calib_core.recalibration.compare import Protocol, evaluation_set, fit_method, metric_functions
from calib_core.recalibration.confidence import compare_confidence
from calib_core.recalibration.fixable import fixable_part
from calib_core.recalibration.protocol import cross_fit, evaluate_recalibration, stratified_folds
from calib_core.recalibration.recommendation import compare_methods
from calib_core.validation import CalibrationInputError

METHODS = ("Temperature scaling", "Isotonic regression")


def _data(n=160, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    logits = 2.5 * (rng.normal(size=(n, 3)) + 1.2 * np.eye(3)[labels])
    weights = rng.integers(0, 4, n).astype(float)
    split = np.where(np.arange(n) % 2 == 0, "calibration", "test")
    return logits, labels, weights, split


def test_integer_weights_give_the_table_and_recommendation_of_repeated_rows_on_a_fixed_split():
    logits, labels, weights, split = _data()
    common = dict(methods=METHODS, n_boot=0, split_names=("calibration", "test"))
    weighted = compare_methods(softmax(logits), labels, logits=logits, split=split, sample_weight=weights, **common)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    repeated = compare_methods(softmax(logits)[rows], labels[rows], logits=logits[rows], split=split[rows], **common)
    assert list(weighted.table["method"]) == list(repeated.table["method"])
    np.testing.assert_allclose(weighted.table[["before", "after"]].to_numpy(),
                               repeated.table[["before", "after"]].to_numpy(), atol=1e-6)
    assert weighted.recommendation.method == repeated.recommendation.method
    assert weighted.recommendation.verdict("m", markdown=False) == repeated.recommendation.verdict("m", markdown=False)
    assert "sample weights" in weighted.protocol_sentence


def test_weighted_cross_fit_equals_each_folds_map_of_its_rows_repeated():
    logits, labels, weights, _ = _data()
    found = cross_fit(TemperatureScaling(), logits, labels, n_folds=4, seed=3, sample_weight=weights)
    folds = stratified_folds(labels, 4, seed=3)
    expected = np.empty_like(found)
    for fold in range(4):
        fit_rows = np.flatnonzero(folds != fold)
        rows = np.repeat(fit_rows, weights[fit_rows].astype(int))
        model = TemperatureScaling().fit(logits[rows], labels[rows])
        expected[folds == fold] = model.predict_proba(logits[folds == fold])
    np.testing.assert_allclose(found, expected, atol=1e-6)
    assert not np.allclose(found, cross_fit(TemperatureScaling(), logits, labels, n_folds=4, seed=3), atol=1e-6)


def test_cross_fitted_comparison_scores_out_of_fold_rows_with_weighted_metrics():
    logits, labels, _, _ = _data(seed=1)
    weights = np.random.default_rng(5).uniform(0.1, 3.0, labels.size)  # fractions: a weighted loss, not repeats
    probs = softmax(logits)
    found = compare_methods(probs, labels, logits=logits, methods=("Temperature scaling",), n_boot=0,
                            protocol=Protocol("cross_fit", n_folds=4, seed=2), sample_weight=weights)
    after = cross_fit(TemperatureScaling(), logits, labels, n_folds=4, seed=2, sample_weight=weights)
    table = found.table.set_index("key")
    for key in ("ece", "nll", "brier"):
        assert table.loc[key, "before"] == pytest.approx(cc.metric_value(key, probs, labels, sample_weight=weights))
        assert table.loc[key, "after"] == pytest.approx(cc.metric_value(key, after, labels, sample_weight=weights))
    unweighted = compare_methods(probs, labels, logits=logits, methods=("Temperature scaling",), n_boot=0,
                                 protocol=Protocol("cross_fit", n_folds=4, seed=2)).table.set_index("key")
    assert abs(table.loc["brier", "before"] - unweighted.loc["brier", "before"]) > 1e-4


def test_paired_intervals_resample_the_weighted_rows():
    logits, labels, weights, split = _data(seed=2)
    found = compare_methods(softmax(logits), labels, logits=logits, split=split, split_names=("calibration", "test"),
                            methods=METHODS, n_boot=20, seed=7, sample_weight=weights)
    ev = found.ev
    np.testing.assert_array_equal(ev.sample_weight, weights[ev.eval_index])
    functions = metric_functions(ev.metric_keys)
    before = resampled_metrics(functions, ev.before, ev.labels, n_boot=20, seed=7, sample_weight=ev.sample_weight)
    method = found.table["method"].iloc[0]
    after = resampled_metrics(functions, found.fits[method].probs, ev.labels, n_boot=20, seed=7,
                              sample_weight=ev.sample_weight)
    row = found.table[(found.table["method"] == method) & (found.table["key"] == "brier")].iloc[0]
    low, high = interval_from_samples(cc.get_metric("brier").interval, row["delta"], after["brier"] - before["brier"],
                                      0.05, signed=True)
    assert (row["delta_low"], row["delta_high"]) == pytest.approx((low, high))


def test_holdout_evaluation_weights_the_test_rows_and_fit_weights_the_calibration_rows():
    logits, labels, weights, _ = _data(seed=3)
    fit, test = np.arange(0, 160, 2), np.arange(1, 160, 2)
    report = evaluate_recalibration([TemperatureScaling()], logits[fit], labels[fit], logits[test], labels[test],
                                    metrics=["brier"], sample_weight=weights[fit], eval_sample_weight=weights[test])
    model = TemperatureScaling().fit(logits[fit], labels[fit], sample_weight=weights[fit])
    expected = cc.metric_value("brier", model.predict_proba(logits[test]), labels[test], sample_weight=weights[test])
    assert report.table["after"].iloc[0] == pytest.approx(expected)
    np.testing.assert_array_equal(report.sample_weight, weights[test])


def test_fixable_part_is_weighted():
    logits, labels, _, _ = _data(seed=4)
    weights = np.random.default_rng(1).uniform(0.2, 2.0, labels.size)
    probs = softmax(logits)
    found = fixable_part(probs, labels, logits=logits, methods=("Temperature scaling",), n_folds=4, n_boot=0,
                         sample_weight=weights)
    after = cross_fit(TemperatureScaling(), logits, labels, n_folds=4, seed=0, sample_weight=weights)
    assert found.brier_before == pytest.approx(cc.metric_value("brier", probs, labels, sample_weight=weights))
    assert found.brier_after == pytest.approx(cc.metric_value("brier", after, labels, sample_weight=weights))
    plain = fixable_part(probs, labels, logits=logits, methods=("Temperature scaling",), n_folds=4, n_boot=0)
    assert abs(found.brier_before - plain.brier_before) > 1e-4


def test_confidence_comparison_takes_weights():
    rng = np.random.default_rng(6)
    confidence = rng.uniform(0.3, 1.0, 200)
    correct = (rng.random(200) < confidence ** 2).astype(int)
    weights = rng.integers(0, 4, 200).astype(float)  # whole numbers: the confidence ECE weights by repeating rows
    found = compare_confidence(confidence, correct, methods=("Temperature scaling",), n_boot=0, sample_weight=weights)
    plain = compare_confidence(confidence, correct, methods=("Temperature scaling",), n_boot=0)
    assert found.ev.sample_weight is not None
    assert found.ev.before_values != plain.ev.before_values


def test_evaluation_rows_of_zero_weight_are_refused_clearly():
    logits, labels, weights, split = _data(seed=5)
    weights[split == "test"] = 0.0
    with pytest.raises(CalibrationInputError, match="evaluation row"):
        evaluation_set(logits, softmax(logits), labels, Protocol("split_column"), input="logits", split=split,
                       sample_weight=weights)


def test_unweighted_fit_method_is_unchanged_by_the_weights_option():
    logits, labels, _, split = _data(seed=6)
    ev = evaluation_set(logits, softmax(logits), labels, Protocol("split_column"), input="logits", split=split)
    assert ev.sample_weight is None and ev.fit_sample_weight is None
    fit = fit_method("Temperature scaling", logits, labels, ev)
    assert "sample weights" not in fit.protocol
