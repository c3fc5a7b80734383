"""The risk-coverage band (calib_core/inference/selective_bands.py): the quantiles of each materialised resample's
selective risk, drawn as every bootstrap of calib_core draws."""
import numpy as np
import pytest

import calib_core as cc
from calib_core.inference.resample import index_blocks


@pytest.mark.parametrize("step", [None, 0.05])
def test_the_band_is_the_quantiles_of_the_selective_risk_of_each_resample(step):
    rng = np.random.default_rng(4)
    confidence = rng.uniform(size=400)
    if step:
        confidence = np.round(confidence / step) * step
    correct = (rng.uniform(size=400) < confidence).astype(int)
    coverages = np.array([0.1, 0.25, 0.5, 0.8, 1.0])
    band = cc.risk_coverage_band(confidence, correct, coverages=coverages, n_boot=60, alpha=0.1, seed=9)
    draws = [cc.selective_risk(confidence[rows], correct[rows], coverages)
             for _, _, block in index_blocks(np.random.default_rng(9), 400, 60) for rows in block]
    low, high = np.quantile(np.array(draws), [0.05, 0.95], axis=0)
    np.testing.assert_allclose(band.low, low, atol=1e-12)
    np.testing.assert_allclose(band.high, high, atol=1e-12)
    np.testing.assert_allclose(band.risk, cc.selective_risk(confidence, correct, coverages))
    assert np.all(band.low <= band.high) and band.n_boot == 60 and band.alpha == 0.1


def test_the_default_band_spans_coverages_of_one_to_a_hundred_percent_and_checks_its_options():
    band = cc.risk_coverage_band([0.9, 0.8, 0.6, 0.3], [1, 1, 0, 0], n_boot=20)
    assert band.coverage[0] == pytest.approx(0.01) and band.coverage[-1] == 1.0 and band.coverage.size == 100
    with pytest.raises(cc.CalibrationInputError, match="n_boot"):
        cc.risk_coverage_band([0.9, 0.8], [1, 0], n_boot=1)
    with pytest.raises(cc.CalibrationInputError, match="coverages"):
        cc.risk_coverage_band([0.9, 0.8], [1, 0], coverages=[2.0])
