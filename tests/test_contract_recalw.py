"""Contract of the names added for weights in the comparison of recalibration methods (issue 28, item 1):
``sample_weight=None`` (keyword) on the comparison's public functions, and the new/moved exports."""
from __future__ import annotations

import inspect

import pytest

from calib_core.recalibration import compare, confidence, fixable, hazards, protocol, recommendation

WEIGHTED = [recommendation.compare_methods, compare.evaluation_set, compare.metric_values, compare.bootstrap_samples,
            protocol.evaluate_recalibration, protocol.cross_fit, fixable.fixable_part, confidence.compare_confidence]


@pytest.mark.parametrize("function", WEIGHTED, ids=lambda f: f.__name__)
def test_sample_weight_is_a_keyword_defaulting_to_none(function):
    parameter = inspect.signature(function).parameters["sample_weight"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None


def test_exports():
    assert "resampled_samples" in compare.__all__
    assert {"ZeroHazard", "zero_hazards"} <= set(hazards.__all__)
    assert compare.zero_hazards is hazards.zero_hazards and compare.ZeroHazard is hazards.ZeroHazard
    assert inspect.signature(protocol.evaluate_recalibration).parameters["eval_sample_weight"].default is None
    assert compare.EvaluationSet.__dataclass_fields__["sample_weight"].default is None
