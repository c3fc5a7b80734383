"""The Deployment page's decision section with a weighted model (issue 28): the decision curve and the value of
recalibrating are calib_core.decision_curve / recalibration_value with the model's sample_weight; the sections
that take no weights (the label planner) are named at the top of the page."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import load_predictions
from studio.text import md
from studio.weights_reasons import UNWEIGHTED_PARTS

from tests import app_support
from tests.app_support import assert_clean, trace_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/11_Deployment.py"


def _weighted_file(rows: int = 160) -> bytes:
    rng = np.random.default_rng(3)
    lines = ["label,p_no,p_yes,w"]
    for _ in range(rows):
        p = round(float(rng.beta(1.2, 1.6)), 3)
        label = int(rng.random() < p ** 1.5)  # over-confident
        lines.append(f"{label},{1 - p:.3f},{p:.3f},{1 + 3 * (p > 0.6) + 0.5 * label}")
    return ("\n".join(lines) + "\n").encode()


def test_decision_curve_and_value_are_weighted():
    """Before: the page drew the unweighted curve (and warned that the page counted rows)."""
    p = load_predictions(_weighted_file(), name="clinic.csv", weight_column="w")
    w = p.sample_weight
    at = app_support.open_with_model(PAGE, p, timeout=180)
    assert_clean(at)
    expected = cc.decision_curve(p.probs, p.labels, n_boot=200, seed=0, sample_weight=w)
    plain = cc.decision_curve(p.probs, p.labels, n_boot=0)
    spec = app_support.plotly_specs(at)[0]
    before = trace_array(next(t for t in spec["data"] if t.get("name") == "Current probabilities")["y"])
    np.testing.assert_allclose(before, expected.table["before"], rtol=0, atol=1e-12)
    assert not np.allclose(before, plain.table["before"])
    value = cc.recalibration_value(p.probs, p.labels, threshold=0.5, n_boot=200, seed=0, sample_weight=w)
    assert md(value.sentence()) in [i.value for i in at.info]
    text = " ".join(c.value for c in at.caption)
    assert "Row weights" in text and md(UNWEIGHTED_PARTS["How many labels"]) in text
    assert "Not weighted: Deployment prevalence" not in text  # estimate_prevalence takes the weights
    assert not [x.value for x in at.warning if "Row weights" in x.value]
