"""Contract of the names added for recalibrating confidence models (issue 26, deliverable 3)."""
from __future__ import annotations

import inspect

import calib_core as cc
import calib_core.recalibration as recalibration
from calib_core.recalibration import compare, confidence, recommendation

NEW = ("CONFIDENCE_METHODS", "apply_confidence_map", "compare_confidence", "compare_predictions", "fit_confidence_map",
       "order_changes")


def test_new_names_are_exported_by_the_wing_and_the_package():
    for name in NEW:
        assert name in recalibration.__all__
        assert getattr(cc, name) is getattr(confidence, name)
    for name in confidence.__all__:
        assert hasattr(confidence, name)
    assert "score_keys" in recommendation.__all__ and "metric_functions" in compare.__all__


def test_options_are_keyword_only_and_weights_are_named_sample_weight():
    fit = inspect.signature(confidence.fit_confidence_map).parameters
    assert fit["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY and fit["sample_weight"].default is None
    options = inspect.signature(confidence.compare_confidence).parameters
    assert all(options[name].kind is inspect.Parameter.KEYWORD_ONLY for name in list(options)[2:])
    # the existing signatures keep working: the metric set is a trailing keyword with the old default
    assert inspect.signature(recommendation.compare_methods).parameters["metrics"].default == compare.METRIC_KEYS
    assert inspect.signature(compare.evaluation_set).parameters["metrics"].default == compare.METRIC_KEYS
