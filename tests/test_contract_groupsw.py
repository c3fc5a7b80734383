"""Contract of the names this branch adds (issue 28, weights on the Groups and Bin sensitivity pages)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import calib_core as cc
from calib_core import binning


@pytest.mark.parametrize("function", [cc.bin_sensitivity, cc.group_reliability, cc.multicalibration, cc.by_group])
def test_sample_weight_is_a_keyword_defaulting_to_none(function):
    parameter = inspect.signature(function).parameters["sample_weight"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None


def test_weighted_edge_positions_is_exported_and_gives_weighted_upper_edges():
    assert "weighted_edge_positions" in binning.__all__
    values = np.array([0.1, 0.2, 0.2, 0.7, 0.9])
    weights = np.array([1.0, 2.0, 1.0, 3.0, 1.0])
    for whole, w in ((True, weights), (False, weights * 0.3)):
        positions = binning.weighted_edge_positions(np.cumsum(w), 3, whole)
        np.testing.assert_array_equal(values[positions], binning.weighted_upper_edges(values, w, 3))
