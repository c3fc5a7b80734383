"""Contract checks of the sample_weight keywords added by viewsw (issue 28): keyword-only with a None default, so
every call of the contract keeps working, and the contract's own calls unchanged."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import calib_core as cc
from calib_core.metrics.partitions import data_dependent_partition
from calib_core.recalibration.paired import compare_systems, paired_metric

WEIGHTED = [cc.simplex_reliability, data_dependent_partition, cc.net_benefit, cc.decision_curve,
            cc.recalibration_value, cc.risk_coverage, cc.selective_risk, cc.coverage_at_risk, cc.risk_coverage_band,
            cc.abstention_threshold, cc.aurc, cc.eaurc, cc.augrc, cc.auroc_correct, compare_systems, paired_metric]


@pytest.mark.parametrize("function", WEIGHTED, ids=lambda f: f.__name__)
def test_sample_weight_is_a_keyword_defaulting_to_none(function):
    parameter = inspect.signature(function).parameters["sample_weight"]
    assert parameter.default is None
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY


def test_contract_calls_unchanged():
    p1 = np.array([0.9, 0.6, 0.3, 0.1, 0.5])
    table = cc.net_benefit(cc.as_probs(p1), [1, 0, 1, 0, 1], [0.25, 0.5])
    assert list(table.columns) == ["threshold", "net_benefit", "treat_all", "treat_none"]
    curve = cc.risk_coverage([0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0])
    assert curve.coverage.tolist() == [0.25, 0.75, 1.0] and curve.n_accepted.dtype == np.int64
