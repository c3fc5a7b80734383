"""Contract of the names issue 28 adds to the engines (row weights): argument names, defaults, exports."""
from __future__ import annotations

import inspect

import calib_core.engines as engines
from calib_core.engines.evaluate import Evaluation, evaluate, evaluate_arrays
from calib_core.engines.spark_engine import evaluate_spark
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.streaming import STREAM_METRICS, WEIGHTED_STREAM_METRICS, stream_metrics
from calib_core.engines.summary import CalibrationSummary


def _default(function, name):
    parameter = inspect.signature(function).parameters[name]
    return parameter.default


def test_weight_arguments_default_to_unweighted():
    assert _default(evaluate, "weight_column") is None
    assert _default(evaluate_spark, "weight_column") is None
    assert _default(evaluate_arrays, "sample_weight") is None and _default(evaluate_arrays, "weight_column") is None
    assert _default(stream_metrics, "weighted") is False
    assert _default(CalibrationStats, "weighted") is False
    assert _default(CalibrationStats.update, "sample_weight") is None
    assert Evaluation.__dataclass_fields__["weight_column"].default is None
    assert CalibrationSummary.__dataclass_fields__["weight_column"].default is None


def test_weighted_stream_metrics_are_exported_and_a_subset():
    assert "WEIGHTED_STREAM_METRICS" in engines.__all__ and engines.WEIGHTED_STREAM_METRICS is WEIGHTED_STREAM_METRICS
    assert set(WEIGHTED_STREAM_METRICS) <= set(STREAM_METRICS)
    assert not {"ace", "tace", "ks"} & set(WEIGHTED_STREAM_METRICS)
