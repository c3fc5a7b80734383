"""Tests of calib_core.recalibration.protocol: splits, cross-fitting and the before/after report."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calib_core.recalibration.protocol import (
    DEFAULT_METRICS,
    PredictionSplit,
    cross_fit,
    evaluate_recalibration,
    split_predictions,
    stratified_folds,
    stratified_split,
)
from calib_core.recalibration import HistogramBinning, IsotonicCalibration, TemperatureScaling
from calib_core.validation import CalibrationInputError


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    z = 2.0 * rng.normal(size=(1200, 4))
    labels = (_softmax(z).cumsum(axis=1) > rng.uniform(size=(1200, 1))).argmax(axis=1)
    return 2.5 * z, labels  # over-confident logits


def _nll(probs, labels):
    return float(-np.mean(np.log(np.clip(probs[np.arange(labels.size), labels], 1e-12, None))))


def _accuracy(probs, labels):
    return float(np.mean(probs.argmax(axis=1) == labels))


METRICS = {"NLL": _nll, "accuracy": _accuracy}


# -- splits ------------------------------------------------------------------------
def test_stratified_split_is_disjoint_complete_and_stratified(problem):
    _, labels = problem
    split = stratified_split(labels, test_fraction=0.25, seed=3)
    assert np.intersect1d(split.fit_index, split.eval_index).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([split.fit_index, split.eval_index])), np.arange(labels.size))
    counts = np.bincount(labels)
    np.testing.assert_array_equal(np.bincount(labels[split.eval_index], minlength=4), np.rint(counts * 0.25))
    assert "seed 3" in split.description and "stratified" in split.description


def test_stratified_split_depends_on_seed_only(problem):
    _, labels = problem
    a = stratified_split(labels, seed=1)
    b = stratified_split(labels, seed=1)
    c = stratified_split(labels, seed=2)
    np.testing.assert_array_equal(a.eval_index, b.eval_index)
    assert not np.array_equal(a.eval_index, c.eval_index)


def test_stratified_split_small_classes():
    split = stratified_split([0, 0, 1, 2, 2, 2], test_fraction=0.1, seed=0)
    # Each class with >= 2 rows keeps one row on each side; the singleton class 1 is fitted on.
    assert sorted(np.asarray([0, 0, 1, 2, 2, 2])[split.eval_index].tolist()) == [0, 2]
    assert 2 in split.fit_index


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.2, True, "half"])
def test_stratified_split_bad_fraction(fraction):
    with pytest.raises(CalibrationInputError, match="test_fraction"):
        stratified_split([0, 1, 0, 1], test_fraction=fraction)


def test_stratified_split_errors():
    with pytest.raises(CalibrationInputError, match="part empty"):
        stratified_split([0, 1], seed=0)
    with pytest.raises(CalibrationInputError, match="seed"):
        stratified_split([0, 1, 0, 1], seed="abc")
    with pytest.raises(CalibrationInputError, match="empty"):
        stratified_split([])
    with pytest.raises(CalibrationInputError, match="integer"):
        stratified_split([0.5, 1.0])


def test_split_predictions_from_column(problem):
    x, labels = problem
    column = np.array(["Calibration", "test", "train", " VAL "] * 300)
    split = split_predictions(x, labels, split=column)
    np.testing.assert_array_equal(split.fit_index, np.flatnonzero(np.isin(np.arange(1200) % 4, [0, 3])))
    np.testing.assert_array_equal(split.eval_index, np.arange(1, 1200, 4))
    assert "300 rows with other split values ignored" in split.description
    x_fit, y_fit, x_eval, y_eval = split.take(x, labels)
    np.testing.assert_array_equal(x_fit, x[split.fit_index])
    np.testing.assert_array_equal(y_eval, labels[split.eval_index])


def test_split_predictions_random_and_errors(problem):
    x, labels = problem
    split = split_predictions(x, labels, test_fraction=0.3, seed=5)
    assert isinstance(split, PredictionSplit) and split.eval_index.size == pytest.approx(360, abs=3)
    with pytest.raises(CalibrationInputError, match="mark both"):
        split_predictions(x, labels, split=["test"] * 1200)
    with pytest.raises(CalibrationInputError, match="entries"):
        split_predictions(x, labels, split=["test", "cal"])
    with pytest.raises(CalibrationInputError, match="entries"):
        split_predictions(x, labels[:-1])
    with pytest.raises(CalibrationInputError, match="NaN"):
        split_predictions(np.where(x > 3, np.nan, x), labels)


def test_stratified_folds_are_balanced(problem):
    _, labels = problem
    folds = stratified_folds(labels, 5, seed=0)
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1
    for k in range(4):
        per_fold = np.bincount(folds[labels == k], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    for bad in (1, 1201, 2.5, True):
        with pytest.raises(CalibrationInputError, match="n_folds"):
            stratified_folds(labels, bad)


# -- cross-fitting -------------------------------------------------------------------
def test_cross_fit_uses_only_other_folds(problem):
    x, labels = problem
    template = TemperatureScaling()
    out = cross_fit(template, x, labels, n_folds=4, seed=7)
    assert not template.is_fitted
    folds = stratified_folds(labels, 4, seed=7)
    for fold in (0, 3):
        held = folds == fold
        model = TemperatureScaling().fit(x[~held], labels[~held])
        np.testing.assert_allclose(out[held], model.predict_proba(x[held]), rtol=1e-12)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)


def test_cross_fit_accepts_factories_and_input_override(problem):
    x, labels = problem
    probs = _softmax(x)
    a = cross_fit(lambda: IsotonicCalibration(), probs, labels, n_folds=3, seed=0)
    b = cross_fit(IsotonicCalibration(input="logits"), probs, labels, n_folds=3, seed=0, input="probs")
    np.testing.assert_array_equal(a, b)
    with pytest.raises(CalibrationInputError, match="Recalibrator"):
        cross_fit(lambda: "not a method", probs, labels)
    with pytest.raises(CalibrationInputError, match="Recalibrator"):
        cross_fit(42, probs, labels)
    with pytest.raises(CalibrationInputError, match="input"):
        cross_fit(IsotonicCalibration(), probs, labels, input="scores")


def test_cross_fit_is_less_optimistic_than_in_sample(problem):
    x, labels = problem
    probs = _softmax(x)
    in_sample = HistogramBinning(50).fit(probs, labels).predict_proba(probs)
    out_of_fold = cross_fit(HistogramBinning(50), probs, labels, n_folds=5, seed=0)
    assert _nll(in_sample, labels) < _nll(out_of_fold, labels)


# -- evaluate_recalibration ---------------------------------------------------------------
def test_holdout_report(problem):
    x, labels = problem
    calls = []
    report = evaluate_recalibration({"TS": TemperatureScaling(), "Iso": IsotonicCalibration()},
                                    x[:600], labels[:600], x[600:], labels[600:], metrics=METRICS,
                                    on_progress=lambda *args: calls.append(args))
    table = report.table
    assert list(table.columns) == ["method", "metric", "metric_key", "before", "after", "delta", "fit_seconds"]
    assert len(table) == 4 and set(table["method"]) == {"TS", "Iso"}
    np.testing.assert_allclose(table["delta"], table["after"] - table["before"])
    ts_nll = table.query("method == 'TS' and metric == 'NLL'")
    assert ts_nll["after"].iloc[0] < ts_nll["before"].iloc[0]
    expected = _nll(TemperatureScaling().fit(x[:600], labels[:600]).predict_proba(x[600:]), labels[600:])
    assert ts_nll["after"].iloc[0] == pytest.approx(expected)
    assert ts_nll["before"].iloc[0] == pytest.approx(_nll(_softmax(x[600:]), labels[600:]))
    ts_acc = table.query("method == 'TS' and metric == 'accuracy'")
    assert ts_acc["delta"].iloc[0] == 0.0
    assert report.protocol.startswith("Holdout") and "600 calibration rows" in report.protocol
    assert not report.in_sample
    assert calls == [("TS", 0, 2), ("Iso", 1, 2), ("Iso", 2, 2)]
    assert report.after["TS"].shape == (600, 4) and report.before.shape == (600, 4)
    assert report.models["TS"].is_fitted


def test_cross_fit_report_and_refit(problem):
    x, labels = problem
    report = evaluate_recalibration([TemperatureScaling(), TemperatureScaling()], x, labels, metrics=METRICS,
                                    n_folds=3, seed=4, split_description="one uploaded set")
    assert set(report.table["method"]) == {"Temperature scaling", "Temperature scaling (2)"}
    assert "3-fold cross-fitting" in report.protocol and "one uploaded set" in report.protocol
    np.testing.assert_allclose(report.after["Temperature scaling"],
                               cross_fit(TemperatureScaling(), x, labels, n_folds=3, seed=4))
    assert report.models["Temperature scaling"].temperature_ == pytest.approx(
        TemperatureScaling().fit(x, labels).temperature_)
    no_refit = evaluate_recalibration([TemperatureScaling()], x, labels, metrics=METRICS, refit=False)
    assert no_refit.models == {}


def test_in_sample_needs_explicit_flag(problem):
    x, labels = problem
    with pytest.raises(CalibrationInputError, match="allow_in_sample=True"):
        evaluate_recalibration([TemperatureScaling()], x, labels, x, labels, metrics=METRICS)
    with pytest.raises(CalibrationInputError, match="allow_in_sample=True"):
        evaluate_recalibration([TemperatureScaling()], x, labels, x.copy(), labels.copy(), metrics=METRICS)
    report = evaluate_recalibration([HistogramBinning(50)], x, labels, metrics=METRICS, allow_in_sample=True,
                                    input="logits")
    assert report.in_sample and report.protocol.startswith("IN-SAMPLE")
    with pytest.raises(CalibrationInputError, match="allow_in_sample"):
        evaluate_recalibration([TemperatureScaling()], x, labels, metrics=METRICS, allow_in_sample="yes")


def test_evaluate_with_probabilities_and_registry_metrics(problem):
    x, labels = problem
    probs = _softmax(x)
    report = evaluate_recalibration([IsotonicCalibration()], probs[:600], labels[:600], probs[600:], labels[600:],
                                    input="probs")
    assert report.table["metric_key"].tolist() == list(DEFAULT_METRICS)
    import calib_core as cc

    ece_row = report.table.query("metric_key == 'ece'")
    assert ece_row["before"].iloc[0] == pytest.approx(cc.ece(probs[600:], labels[600:]))
    assert ece_row["after"].iloc[0] == pytest.approx(cc.ece(report.after["Isotonic regression"], labels[600:]))
    assert isinstance(report.table, pd.DataFrame)


def test_evaluate_shows_registry_keys_by_label_and_other_metrics_by_their_name(problem):
    x, labels = problem
    args = ([TemperatureScaling()], x[:600], labels[:600], x[600:], labels[600:])
    one_key = evaluate_recalibration(*args, metrics="ece").table
    assert one_key[["metric", "metric_key"]].values.tolist() == [["ECE", "ece"]]
    mixed = evaluate_recalibration(*args, metrics=["nll", _accuracy]).table
    assert mixed[["metric", "metric_key"]].values.tolist() == [["NLL", "nll"], ["_accuracy", "_accuracy"]]
    named = evaluate_recalibration(*args, metrics={"my ECE": "ece"}).table
    assert named[["metric", "metric_key"]].values.tolist() == [["my ECE", "my ECE"]]
    assert named["before"].iloc[0] == one_key["before"].iloc[0]


def test_evaluate_errors(problem):
    x, labels = problem
    with pytest.raises(CalibrationInputError, match="both"):
        evaluate_recalibration([TemperatureScaling()], x, labels, x[:10], None, metrics=METRICS)
    with pytest.raises(CalibrationInputError, match="empty"):
        evaluate_recalibration([], x, labels, metrics=METRICS)
    with pytest.raises(CalibrationInputError, match="columns"):
        evaluate_recalibration([TemperatureScaling()], x, labels, x[:10, :3], labels[:10] % 3, metrics=METRICS)
    with pytest.raises(CalibrationInputError, match="callable"):
        evaluate_recalibration([TemperatureScaling()], x, labels, metrics={"bad": 3})
    with pytest.raises(CalibrationInputError, match="unknown metric"):
        evaluate_recalibration([TemperatureScaling()], x, labels, metrics=["no_such_metric"])
    with pytest.raises(CalibrationInputError, match="`metrics` is empty"):
        evaluate_recalibration([TemperatureScaling()], x, labels, metrics=[])
    with pytest.raises(CalibrationInputError, match="input"):
        evaluate_recalibration([TemperatureScaling()], x, labels, metrics=METRICS, input="scores")
    with pytest.raises(CalibrationInputError, match="declare them as logits"):
        evaluate_recalibration([TemperatureScaling()], x, labels, metrics=METRICS, input="probs")


def test_each_methods_predictions_are_checked_once_for_every_metric(monkeypatch):
    """Issue 15: every metric of evaluate_recalibration scanned the method's predictions again (eight passes per
    method, 0.3 s at 25,000 x 1,000); they are checked once and marked, the same numbers come out, and what the
    report hands back is read-only."""
    from calib_core.recalibration import protocol
    from calib_core.validation import arrays as validation  # where check_probs finds its block scan

    rng = np.random.default_rng(3)
    z = 2.5 * rng.normal(size=(600, 4))
    y = rng.integers(0, 4, 600)
    scans = []
    original = validation._checked_row_blocks
    monkeypatch.setattr(validation, "_checked_row_blocks", lambda m, *a: scans.append(m.shape) or original(m, *a))
    report = protocol.evaluate_recalibration([TemperatureScaling()], z[:300], y[:300], z[300:], y[300:],
                                             metrics=["ece", "ace", "sce", "nll", "brier", "accuracy"])
    after = report.after["Temperature scaling"]
    # the fitting and evaluation logits, the "before" probabilities once, each method's predictions once
    assert len(scans) <= 4, scans
    assert not after.flags.writeable and not report.labels.flags.writeable
    expected = {key: float(function(np.array(after), np.array(y[300:])))
                for key, _, function in protocol._resolve_metrics(["ece", "ace", "sce", "nll", "brier", "accuracy"])}
    assert dict(zip(report.table["metric_key"], report.table["after"])) == expected


def test_a_method_returning_its_input_is_not_frozen_and_bad_output_is_refused():
    """Only arrays of the method's own are frozen; output that is not probabilities stops with the metric's error."""
    from calib_core.recalibration import Recalibrator

    class Identity(Recalibrator):
        works_on = "probs"

        def __init__(self, *, input: str = "probs") -> None:
            self.input = input

        def _fit(self, x, labels):
            pass

        def _predict(self, x):
            return x

    class Broken(Identity):
        def _predict(self, x):
            return x * 2.0

    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), 200)
    y = rng.integers(0, 3, 200)
    evaluation = p[100:].copy()
    report = evaluate_recalibration({"identity": Identity()}, p[:100], y[:100], evaluation, y[100:], input="probs")
    assert evaluation.flags.writeable
    np.testing.assert_array_equal(report.after["identity"], evaluation)
    with pytest.raises(CalibrationInputError, match="sum"):
        evaluate_recalibration({"broken": Broken()}, p[:100], y[:100], evaluation, y[100:], input="probs")
