"""Reliability page: the selective-prediction section (issue 26): risk-coverage curve with its bootstrap band,
selective risk at a coverage, and the abstention threshold certified for a target risk, all from calib_core."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.io import Predictions, load_demo
from studio.state import DEFAULT_DEMO
from studio.text import md

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/2_Reliability.py"
LABEL = "Selective prediction"


def switched_on(at):
    next(t for t in at.toggle if t.label.startswith(LABEL)).set_value(True)
    return at.run()


def test_the_section_draws_calib_cores_curve_band_and_certified_threshold():
    at = app_support.open_link(PAGE, timeout=90)
    assert len(app_support.plotly_specs(at)) == 1  # off by default: the reliability diagram only
    at = switched_on(at)
    app_support.assert_clean(at)
    spec = app_support.plotly_specs(at)[-1]
    demo = load_demo(DEFAULT_DEMO)
    confidence, correct = cc.top_label(demo.probs, demo.labels)
    curve = cc.risk_coverage(confidence, correct)
    band = cc.risk_coverage_band(confidence, correct, n_boot=200, seed=0)
    line = next(t for t in spec["data"] if t.get("name") == DEFAULT_DEMO)
    np.testing.assert_allclose(app_support.trace_array(line["x"]), curve.coverage)
    np.testing.assert_allclose(app_support.trace_array(line["y"]), curve.risk)
    upper, lower = [t for t in spec["data"] if t.get("legendgroup") == DEFAULT_DEMO][:2]
    np.testing.assert_allclose(app_support.trace_array(upper["y"]), band.high)
    np.testing.assert_allclose(app_support.trace_array(lower["y"]), band.low)
    row = at.dataframe[-1].value.iloc[0]
    assert row["risk at coverage"] == pytest.approx(cc.selective_risk(confidence, correct, [0.8])[0])
    assert row["coverage at target (these rows)"] == pytest.approx(cc.coverage_at_risk(confidence, correct, 0.1))
    found = cc.abstention_threshold(confidence, correct, 0.1, delta=0.05)
    assert found.found and row["certified threshold"] == pytest.approx(found.threshold)
    assert row["certified coverage"] == pytest.approx(found.coverage)
    assert row["risk bound"] == pytest.approx(found.risk_upper) and found.risk_upper <= 0.1
    assert any("Learn then Test" in c.value for c in at.caption)


def test_a_model_that_certifies_nothing_says_so_with_its_name_as_plain_text():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=40)
    name = "**bold** [x](http://e.com)"
    model = Predictions(probs, rng.integers(0, 3, size=40), name=name)
    at = switched_on(app_support.open_with_model(PAGE, model, timeout=90))
    app_support.assert_clean(at)
    note = next(i.value for i in at.info if "abstain on everything" in i.value)
    assert note.startswith(md(name) + ":")  # the name as literal text, not bold and no link
    assert pd.isna(at.dataframe[-1].value.iloc[0]["certified threshold"])
