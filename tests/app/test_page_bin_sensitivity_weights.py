"""The Bin sensitivity page with a weighted model (issue 28): its curves are calib_core.bin_sensitivity with the
model's sample_weight, the weights are in the cache key, and the page says its numbers are weighted."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import load_predictions
from calib_core.plot.draw import BIN_COUNTS
from studio import compute, state

from tests import app_support
from tests.app_support import assert_clean, trace_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/4_Bin_sensitivity.py"
TIMEOUT = 90


def _weighted_file(rows: int = 150) -> bytes:
    return app_support.three_class_weighted_csv(rows, fractional=False)


def _series(table):
    return [g["value"].to_numpy() for _, g in table.groupby(["binning", "metric"], sort=False)]


def test_bin_sensitivity_curves_are_the_weighted_sweep():
    """Before: the page swept the unweighted rows (and warned that it did)."""
    p = load_predictions(_weighted_file(), name="clinic.csv", weight_column="w")
    w = p.sample_weight
    at = app_support.open_with_model(PAGE, p, timeout=TIMEOUT)
    assert_clean(at)
    expected = _series(cc.bin_sensitivity(p.probs, p.labels, BIN_COUNTS, sample_weight=w))
    unweighted = _series(cc.bin_sensitivity(p.probs, p.labels, BIN_COUNTS))
    curves = app_support.plotly_specs(at)[0]
    lines = [trace_array(t["y"]) for t in curves["data"] if not t.get("legendgroup", "").startswith("mark-")]
    assert len(lines) == 8
    for line in lines:
        assert any(np.allclose(line, e, rtol=1e-12, atol=0) for e in expected)
    assert not all(any(np.allclose(line, u, rtol=1e-9, atol=0) for u in unweighted) for line in lines)
    # the marks use N = the summed weight, the rows of the repeated data
    total = int(w.sum())
    assert {t["name"] for t in curves["data"]} >= {f"optimal_n_bins(N) = {cc.optimal_n_bins(total)}"}
    assert any("Row weights" in c.value and "weighted" in c.value for c in at.caption)
    assert not [x.value for x in at.warning if "Row weights" in x.value]


def test_the_weights_are_part_of_the_sensitivity_cache_key():
    weighted = load_predictions(_weighted_file(), name="clinic.csv", weight_column="w")
    plain = load_predictions(_weighted_file(), name="clinic.csv")
    counts, metrics, binnings = (2, 15), ("ece",), ("uniform",)
    tables = [compute.sensitivity(p, state.fingerprint(p), counts, metrics, binnings) for p in (plain, weighted)]
    np.testing.assert_allclose(tables[0]["value"], cc.bin_sensitivity(plain.probs, plain.labels, counts, metrics,
                                                                       binnings)["value"])
    np.testing.assert_allclose(tables[1]["value"], cc.bin_sensitivity(weighted.probs, weighted.labels, counts,
                                                                       metrics, binnings,
                                                                       sample_weight=weighted.sample_weight)["value"])
