"""The third round's selective-prediction names of calib_core_api.md: exported from the package root with the
contract's argument names, and equal to independent computations of the contract's definitions."""
import inspect

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import calib_core as cc

SIGNATURES = {name: ["confidence", "correct"] for name in ("auroc_correct", "risk_coverage", "aurc", "eaurc", "augrc")}


@pytest.mark.parametrize("name", SIGNATURES)
def test_each_name_is_exported_with_the_contract_arguments(name):
    assert name in cc.__all__
    assert list(inspect.signature(getattr(cc, name)).parameters)[:2] == SIGNATURES[name]


def contract_numbers(confidence, correct):
    """The contract's sentences, transcribed: loops over k, the j-th row of a tie group adds e/m errors."""
    n = len(confidence)
    order = sorted(range(n), key=lambda i: -confidence[i])
    expected, place = [], 0
    while place < n:
        group = [i for i in order if confidence[i] == confidence[order[place]]]
        m, e = len(group), sum(1 - correct[i] for i in group)
        above = expected[-1] if expected else 0.0
        expected += [above + j * e / m for j in range(1, m + 1)]
        place += m
    aurc = sum(expected[k - 1] / k for k in range(1, n + 1)) / n
    augrc = sum(expected[k - 1] / n for k in range(1, n + 1)) / n
    n_right = sum(correct)
    ideal = sum(max(0, k - n_right) / k for k in range(1, n + 1)) / n
    thresholds = sorted(set(confidence), reverse=True)
    coverage = [sum(c >= t for c in confidence) / n for t in thresholds]
    risk = [sum(1 - y for c, y in zip(confidence, correct) if c >= t) / sum(c >= t for c in confidence)
            for t in thresholds]
    return aurc, aurc - ideal, augrc, coverage, risk


@pytest.mark.parametrize("seed", range(3))
def test_the_numbers_are_the_contract_definitions_with_ties(seed):
    rng = np.random.default_rng(seed)
    confidence = list(np.round(rng.uniform(0.2, 1.0, size=120) * 10) / 10)
    correct = list((rng.uniform(size=120) < np.array(confidence)).astype(int))
    aurc, eaurc, augrc, coverage, risk = contract_numbers(confidence, correct)
    assert cc.aurc(confidence, correct) == pytest.approx(aurc, rel=1e-12)
    assert cc.eaurc(confidence, correct) == pytest.approx(eaurc, rel=1e-10)
    assert cc.augrc(confidence, correct) == pytest.approx(augrc, rel=1e-12)
    assert cc.auroc_correct(confidence, correct) == pytest.approx(roc_auc_score(correct, confidence), rel=1e-12)
    curve = cc.risk_coverage(confidence, correct)
    np.testing.assert_allclose(curve.coverage, coverage, rtol=1e-12)
    np.testing.assert_allclose(curve.risk, risk, rtol=1e-12)
