"""Contract, third round: `sample_weight=` (keyword, default None) on every registered metric,
reliability_table, bootstrap_ci and every recalibrator's fit (calib_core_api.md)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import calib_core as cc
from calib_core.metrics.registry import METRICS
from calib_core.recalibration import all_recalibrators

PUBLIC = ["ece", "mce", "classwise_ece", "sce", "ace", "tace", "gce", "brier_score", "nll", "ks_error", "mmce",
          "skce", "kde_ce", "canonical_ce", "smooth_ece", "score_decomposition", "calibration_upper_bound",
          "reliability_table", "bootstrap_ci", "metric_value", "by_group", "calibration_test"]


def _keyword_none(function, name="sample_weight"):
    parameter = inspect.signature(function).parameters[name]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None


@pytest.mark.parametrize("name", PUBLIC)
def test_public_functions_take_sample_weight(name):
    _keyword_none(getattr(cc, name))


@pytest.mark.parametrize("name", list(all_recalibrators()))
def test_every_recalibrator_fit_takes_sample_weight(name):
    _keyword_none(all_recalibrators()[name].fit)


@pytest.mark.parametrize("key", [spec.key for spec in METRICS])
def test_every_registered_metric_takes_sample_weight(key):
    probs = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9], [0.45, 0.55], [0.7, 0.3]])
    labels = np.array([0, 1, 1, 1, 0, 0])
    weights = np.array([1, 2, 1, 3, 1, 2])
    rows = np.repeat(np.arange(6), weights)
    try:
        expected = cc.metric_value(key, probs[rows], labels[rows])
    except cc.CalibrationInputError:  # not computable on the repeated rows: the weighted call must refuse too
        with pytest.raises(cc.CalibrationInputError):
            cc.metric_value(key, probs, labels, sample_weight=weights)
        return
    assert cc.metric_value(key, probs, labels, sample_weight=weights) == pytest.approx(expected, rel=1e-9, abs=1e-12)
