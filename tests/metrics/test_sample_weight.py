"""Sample weights over the whole registry: integer weights are repeated rows (issue 28, deliverable 1).

Every registered metric (the entries added later included: the test iterates
:data:`METRICS`) and every public metric function with a ``sample_weight``
argument must give, for whole-number weights, the value of the data with each
row repeated that many times; all-ones weights the unweighted value; zero
weights the value without those rows.
"""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import calib_core as cc
from calib_core import metrics as cm
from calib_core.binning import bin_statistics, weighted_upper_edges
from calib_core.metrics.registry import METRICS, WEIGHTED, metric_value
from calib_core.validation import CalibrationInputError, check_sample_weight

KEYS = [spec.key for spec in METRICS]


def _data(n=48, k=3, seed=0):
    """Predictions rounded to one decimal (many ties, so adaptive bins must split tie groups as repetition does)."""
    rng = np.random.default_rng(seed)
    probs = np.round(rng.dirichlet(np.ones(k) * 2, n), 1)
    probs[:, -1] = 1.0 - probs[:, :-1].sum(axis=1)
    probs = np.clip(probs, 0.0, 1.0)
    probs /= probs.sum(axis=1, keepdims=True)
    # labels drawn from the predictions: every class present, no separation for Cox's fit
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    labels[:k] = np.arange(k)
    weights = rng.integers(1, 4, n).astype(np.float64)
    return probs, labels, weights


def _data_for(key, **options):
    """:func:`_data` in the shape the metric reads: a confidence model's entries (``kind="confidence"``) read
    ``[1 - c, c]`` with labels = correct, i.e. two columns."""
    return _data(k=2, **options) if cc.get_metric(key).kind == "confidence" else _data(**options)


def _values(result):
    if isinstance(result, dict):
        return np.array([np.nan if v is None else v for v in result.values()], dtype=float)
    if dataclasses.is_dataclass(result):
        return np.array([v for v in vars(result).values()
                         if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)], dtype=float)
    return np.asarray(result, dtype=float)


def _close(a, b):
    np.testing.assert_allclose(_values(a), _values(b), rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("key", KEYS)
def test_integer_weights_equal_repeated_rows(key):
    probs, labels, weights = _data_for(key)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    _close(metric_value(key, probs, labels, sample_weight=weights), metric_value(key, probs[rows], labels[rows]))


@pytest.mark.parametrize("key", [spec.key for spec in METRICS if spec.uses_binning])
@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
def test_integer_weights_equal_repeated_rows_both_binnings(key, binning):
    probs, labels, weights = _data_for(key, seed=3)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    _close(metric_value(key, probs, labels, n_bins=7, binning=binning, sample_weight=weights),
           metric_value(key, probs[rows], labels[rows], n_bins=7, binning=binning))


@pytest.mark.parametrize("key", KEYS)
def test_unit_weights_equal_no_weights(key):
    probs, labels, _ = _data_for(key)
    _close(metric_value(key, probs, labels, sample_weight=np.ones(labels.size)), metric_value(key, probs, labels))


@pytest.mark.parametrize("key", KEYS)
def test_zero_weights_drop_rows(key):
    probs, labels, weights = _data_for(key)
    weights[3:40:4] = 0.0
    kept = weights > 0
    _close(metric_value(key, probs, labels, sample_weight=weights),
           metric_value(key, probs[kept], labels[kept], sample_weight=weights[kept]))


@pytest.mark.parametrize("key", KEYS)
def test_non_integer_weights_weighted_or_refused(key):
    """A metric of WEIGHTED takes any weights (scaling them changes nothing, except the equal-mass ranges of
    ACE and TACE, whose whole-number split follows np.array_split); any other refuses fractions."""
    probs, labels, weights = _data_for(key)
    if key in WEIGHTED and cc.get_metric(key).fixed_binning == "adaptive":
        assert np.isfinite(metric_value(key, probs, labels, sample_weight=weights * 0.37))
    elif key in WEIGHTED:
        _close(metric_value(key, probs, labels, sample_weight=weights * 0.37),
               metric_value(key, probs, labels, sample_weight=weights))
    else:
        with pytest.raises(CalibrationInputError, match="whole numbers"):
            metric_value(key, probs, labels, sample_weight=weights + 0.5)


def _public_weighted():
    functions = []
    for name in cm.__all__:
        function = getattr(cm, name)
        if (inspect.isfunction(function) and "sample_weight" in inspect.signature(function).parameters
                and next(iter(inspect.signature(function).parameters)) == "probs"):
            functions.append(name)
    return functions


PUBLIC = _public_weighted()


def test_every_public_metric_takes_weights():
    expected = {"accuracy", "ace", "classwise_ece", "ece", "gce", "mce", "sce", "tace", "brier_score", "ks_error",
                "nll", "mmce", "skce", "skce_estimate", "kde_ce", "score_decomposition", "calibration_upper_bound",
                "smooth_ece", "canonical_ce", "cox_calibration", "ici", "debiased_ece", "reliability_table",
                "reliability_ece", "per_class_table", "ece_sweep", "bound_chain"}
    assert expected <= set(PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_public_integer_weights_equal_repeated_rows(name):
    function = getattr(cm, name)
    probs, labels, weights = _data(seed=1)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted, repeated = function(probs, labels, sample_weight=weights), function(probs[rows], labels[rows])
    if hasattr(weighted, "columns"):  # a table
        np.testing.assert_allclose(weighted.select_dtypes("number").to_numpy(float),
                                   repeated.select_dtypes("number").to_numpy(float), rtol=1e-9, atol=1e-12)
    else:
        _close(weighted, repeated)


@pytest.mark.parametrize("name", ["ece", "gce", "classwise_ece"])
def test_adaptive_options_integer_weights(name):
    probs, labels, weights = _data(seed=2)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    function = getattr(cm, name)
    for n_bins in (1, 4, 10, 200):
        _close(function(probs, labels, n_bins=n_bins, binning="adaptive", sample_weight=weights),
               function(probs[rows], labels[rows], n_bins=n_bins, binning="adaptive"))


def test_weighted_edges_split_a_tie_group_as_repetition_does():
    values = np.array([0.2, 0.5, 0.9])
    weights = np.array([1.0, 4.0, 1.0])
    repeated = np.repeat(values, [1, 4, 1])
    for n_bins in range(1, 8):
        np.testing.assert_array_equal(weighted_upper_edges(values, weights, n_bins),
                                      cc.binning.adaptive_upper_edges(repeated, n_bins))


def test_fractional_adaptive_edges_are_weighted_quantiles():
    stats = bin_statistics([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], 2, "adaptive", sample_weight=[0.5, 0.5, 0.5, 2.5])
    # half of the weight (2.0) is first reached at 0.4's row: both edges are 0.4, so the first bin holds every
    # value and the second is emptied by the tie (count 0, as unweighted adaptive bins report it)
    assert stats.count.tolist() == [4.0, 0.0]


@pytest.mark.parametrize("bad, message", [
    (np.ones(3), "shape"), ([1.0, np.nan, 1.0, 1.0], "finite"), ([1.0, -1.0, 1.0, 1.0], ">= 0"),
    (np.zeros(4), "sums to 0"), (["a", "b", "c", "d"], "numbers"),
])
def test_weights_checked_in_one_place(bad, message):
    with pytest.raises(CalibrationInputError, match=message):
        check_sample_weight(bad, 4)
    with pytest.raises(CalibrationInputError, match=message):
        cc.ece(np.full((4, 2), 0.5), [0, 1, 0, 1], sample_weight=bad)


def test_mmce_weighted_v_statistic_by_hand():
    probs = np.array([[0.8, 0.2], [0.4, 0.6]])
    labels = np.array([0, 0])
    weights = np.array([2.0, 0.5])
    confidence, correct = np.array([0.8, 0.6]), np.array([1.0, 0.0])
    residual = weights * (correct - confidence)
    kernel = np.exp(-np.abs(confidence[:, None] - confidence[None, :]) / 0.4)
    expected = np.sqrt(residual @ kernel @ residual) / weights.sum()
    assert cc.mmce(probs, labels, sample_weight=weights) == pytest.approx(expected, rel=1e-12)


def test_metric_report_with_weights():
    probs, labels, weights = _data()
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = cm.metric_report(probs, labels, sample_weight=weights)
    repeated = cm.metric_report(probs[rows], labels[rows])
    assert weighted.values.keys() == repeated.values.keys()
    for key, value in repeated.values.items():
        _close(np.nan if weighted.values[key] is None else weighted.values[key], np.nan if value is None else value)
    fractional = cm.metric_report(probs, labels, sample_weight=weights + 0.5)
    assert fractional.values["ece"] is not None and fractional.values["skce"] is None
    assert "whole numbers" in fractional.reasons["skce"]
