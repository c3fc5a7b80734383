"""Contract checks of the advisor's names (issue 27, deliverable 4): exported, keyword-only, stable shapes."""
from __future__ import annotations

import dataclasses
import inspect

from calib_core.recalibration import defaults, published, recommendation


def test_the_advisor_names_are_exported():
    for name in ("paired_differences", "parameter_count", "recommend", "runner_up_difference", "compare_methods",
                 "Recommendation", "PairedDifference"):
        assert name in recommendation.__all__
    assert "published_standing" in published.__all__ and "MULTICLASS_DEFAULTS" in defaults.__all__


def test_recommend_keeps_its_arguments_and_adds_keyword_only_ones():
    params = inspect.signature(recommendation.recommend).parameters
    assert list(params) == ["table", "pair", "pairs", "n_classes", "cautionary"]
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in ("pair", "pairs", "n_classes"))
    assert params["pair"].default is None and params["pairs"].default == () and params["n_classes"].default is None
    paired = inspect.signature(recommendation.paired_differences).parameters
    assert list(paired) == list(inspect.signature(recommendation.runner_up_difference).parameters)


def test_recommendation_fields_keep_their_order_and_add_new_ones_at_the_end():
    names = [f.name for f in dataclasses.fields(recommendation.Recommendation)]
    assert names[:8] == ["method", "runner_up", "status", "before", "after", "brier_beyond_noise",
                         "runner_up_brier", "pair"]
    assert names[8:] == ["best", "tied", "pairs", "n_classes"]
    assert callable(recommendation.Recommendation.verdict)
