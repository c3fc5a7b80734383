"""Selective prediction with sample_weight (issue 28): risk_coverage, selective_risk, coverage_at_risk,
risk_coverage_band and abstention_threshold; integer weights give the repeated rows' numbers."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc

COVERAGES = [0.05, 0.2, 0.33, 0.5, 0.77, 0.9, 1.0]


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    confidence = np.round(rng.uniform(0.3, 1.0, n), 2)  # ties on purpose
    correct = (rng.random(n) < confidence ** 2).astype(float)
    weights = rng.integers(0, 4, n).astype(float)
    return confidence, correct, weights


def _repeated(confidence, correct, weights):
    r = weights.astype(int)
    return np.repeat(confidence, r), np.repeat(correct, r)


def test_risk_coverage_integer_weights_equal_repeated_rows():
    c, y, w = _data()
    weighted = cc.risk_coverage(c, y, sample_weight=w)
    repeated = cc.risk_coverage(*_repeated(c, y, w))
    for field in ("threshold", "coverage", "risk", "n_accepted", "errors"):
        np.testing.assert_allclose(getattr(weighted, field), getattr(repeated, field), rtol=0, atol=1e-12)


def test_selective_risk_and_coverage_at_risk_integer_weights_equal_repeated_rows():
    c, y, w = _data(seed=1)
    rc, ry = _repeated(c, y, w)
    np.testing.assert_allclose(cc.selective_risk(c, y, COVERAGES, sample_weight=w),
                               cc.selective_risk(rc, ry, COVERAGES), rtol=0, atol=1e-12)
    for target in (0.05, 0.2, 0.4):
        assert cc.coverage_at_risk(c, y, target, sample_weight=w) == pytest.approx(
            cc.coverage_at_risk(rc, ry, target), abs=1e-12)


def test_weighted_selective_risk_by_hand():
    # confidences 0.9 (right, w 3), 0.8 (wrong, w 1), 0.5 (wrong, w 1): W = 5
    rc = cc.risk_coverage([0.9, 0.8, 0.5], [1, 0, 0], sample_weight=[3.0, 1.0, 1.0])
    np.testing.assert_allclose(rc.coverage, [0.6, 0.8, 1.0])
    np.testing.assert_allclose(rc.risk, [0.0, 0.25, 0.4])
    # fractional weights: coverage 0.5 of W = 2.5 keeps ceil(1.25) = 2 units of weight, all in the first group
    risk = cc.selective_risk([0.9, 0.5], [1, 0], [0.5, 1.0], sample_weight=[2.0, 0.5])
    np.testing.assert_allclose(risk, [0.0, 0.5 / 2.5])


def test_risk_coverage_band_weighted_centre_and_unit_weights():
    c, y, w = _data(seed=2)
    band = cc.risk_coverage_band(c, y, coverages=COVERAGES, n_boot=40, sample_weight=w)
    np.testing.assert_allclose(band.risk, cc.selective_risk(*_repeated(c, y, w), COVERAGES), rtol=0, atol=1e-12)
    assert (band.low <= band.high).all()
    plain = cc.risk_coverage_band(c, y, coverages=COVERAGES, n_boot=40)
    ones = cc.risk_coverage_band(c, y, coverages=COVERAGES, n_boot=40, sample_weight=np.ones(c.size))
    np.testing.assert_allclose(ones.low, plain.low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ones.high, plain.high, rtol=0, atol=1e-12)
    fractional = cc.risk_coverage_band(c, y, coverages=COVERAGES, n_boot=40, sample_weight=w + 0.3)
    assert np.isfinite(fractional.low).all() and (fractional.low <= fractional.high).all()


@pytest.mark.parametrize("method", ["bonferroni", "fixed_sequence"])
def test_abstention_threshold_integer_weights_equal_repeated_rows(method):
    c, y, w = _data(n=400, seed=3)
    weighted = cc.abstention_threshold(c, y, 0.3, method=method, sample_weight=w)
    repeated = cc.abstention_threshold(*_repeated(c, y, w), 0.3, method=method)
    assert weighted == repeated


def test_abstention_threshold_refuses_fractional_weights_and_says_why():
    c, y, w = _data(n=50)
    with pytest.raises(cc.CalibrationInputError, match="binomial test counts independent items"):
        cc.abstention_threshold(c, y, 0.3, sample_weight=w + 0.5)


def test_bad_weights_raise():
    c, y, w = _data(n=20)
    with pytest.raises(cc.CalibrationInputError, match="shape"):
        cc.risk_coverage(c, y, sample_weight=w[:-1])
    with pytest.raises(cc.CalibrationInputError, match=">= 0"):
        cc.risk_coverage_band(c, y, sample_weight=-w - 1)
