"""The Reliability page's selective-prediction section with a weighted model (issue 28): the curve, its band, the
selective risk, the coverage at the target and the certified threshold are calib_core's with the model's
sample_weight; fractional weights, which the binomial test cannot take, give calib_core's reason instead of a
threshold."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.io import load_predictions

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/2_Reliability.py"


def _file(fraction: float) -> bytes:
    rng = np.random.default_rng(7)
    lines = ["label,p_a,p_b,p_c,w"]
    for i in range(300):
        p = np.round(rng.dirichlet([12.0, 1.0, 1.0]), 3)
        p[2] = round(1 - p[0] - p[1], 3)
        label = rng.choice(3, p=[0.95, 0.03, 0.02])
        lines.append(f"{label},{p[0]:.3f},{p[1]:.3f},{p[2]:.3f},{1 + (i % 3) * (label == 0) + fraction * (i % 2)}")
    return ("\n".join(lines) + "\n").encode()


def _open(fraction: float):
    p = load_predictions(_file(fraction), name="clinic.csv", weight_column="w")
    at = app_support.open_with_model(PAGE, p, timeout=90)
    next(t for t in at.toggle if t.label.startswith("Selective prediction")).set_value(True)
    at.run()
    app_support.assert_clean(at)
    return p, at


def test_selective_section_is_weighted():
    """Before: the section counted rows (and the page's note listed it as not weighted)."""
    p, at = _open(0.0)
    c, y, w = p.confidence, p.correct, p.sample_weight
    spec = app_support.plotly_specs(at)[-1]
    curve = cc.risk_coverage(c, y, sample_weight=w)
    assert not np.allclose(curve.risk[-1], cc.risk_coverage(c, y).risk[-1])
    line = next(t for t in spec["data"] if t.get("name") == p.name)
    np.testing.assert_allclose(app_support.trace_array(line["y"]), curve.risk, rtol=0, atol=1e-12)
    band = cc.risk_coverage_band(c, y, n_boot=200, seed=0, sample_weight=w)
    upper = [t for t in spec["data"] if t.get("legendgroup") == p.name][0]
    np.testing.assert_allclose(app_support.trace_array(upper["y"]), band.high, rtol=0, atol=1e-12)
    row = at.dataframe[-1].value.iloc[0]
    assert row["risk at coverage"] == pytest.approx(cc.selective_risk(c, y, [0.8], sample_weight=w)[0], abs=1e-12)
    found = cc.abstention_threshold(c, y, 0.1, delta=0.05, sample_weight=w)
    assert found.found and row["certified threshold"] == pytest.approx(found.threshold)
    assert row["certified coverage"] == pytest.approx(found.coverage)
    assert not any("Selective prediction" in x.value and "Not weighted" in x.value for x in at.caption)


def test_fractional_weights_give_the_reason_instead_of_a_threshold():
    p, at = _open(0.5)
    row = at.dataframe[-1].value.iloc[0]
    assert pd.isna(row["certified threshold"])
    assert any("binomial test counts independent items" in i.value for i in at.info)
    curve = cc.risk_coverage(p.confidence, p.correct, sample_weight=p.sample_weight)
    line = next(t for t in app_support.plotly_specs(at)[-1]["data"] if t.get("name") == p.name)
    np.testing.assert_allclose(app_support.trace_array(line["y"]), curve.risk, rtol=0, atol=1e-12)
