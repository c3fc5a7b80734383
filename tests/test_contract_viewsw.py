"""Contract checks of the sample_weight keywords added by viewsw (issue 28): keyword-only or trailing with a
None default, so every call of the contract keeps working."""
from __future__ import annotations

import inspect

import pytest

import calib_core as cc
from calib_core.metrics.partitions import data_dependent_partition


@pytest.mark.parametrize("function", [cc.simplex_reliability, data_dependent_partition])
def test_sample_weight_is_a_keyword_defaulting_to_none(function):
    parameter = inspect.signature(function).parameters["sample_weight"]
    assert parameter.default is None
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
