"""AppTest tests of the Metrics page (pages/1_Metrics.py) beyond tests/test_app.py."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import Predictions

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/1_Metrics.py"


def open_with(predictions: Predictions):
    return app_support.open_with_model(PAGE, predictions, timeout=120)


def test_a_metric_that_cannot_be_computed_gets_a_note_and_the_rest_is_shown():
    """One row: SKCE and the kernel CEs need two; the page used to fail as a whole (compute_metrics raised)."""
    name = "one_row ![t](http://127.0.0.1:9/t.png)"
    at = open_with(Predictions(np.array([[0.7, 0.3]]), np.array([0]), ("a", "b"), name=name))
    assert not at.exception
    (note,) = [w.value for w in at.warning if "Not available" in w.value]
    assert "SKCE \\(unbiased\\)" in note and "needs at least 2 rows" in note
    assert "![t](http" not in note, "the model name is plain text, not an image"
    table = at.dataframe[1].value.set_index("key")
    assert np.isnan(table.loc["skce", "estimate"]) and "at least 2 rows" in table.loc["skce", "reason"]
    assert table.loc["ece", "estimate"] == pytest.approx(0.3) and table.loc["ece", "reason"] == ""


def test_names_carry_the_bin_settings_and_intervals_contain_the_estimates():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet([1, 1, 1], 300)
    labels = (rng.uniform(size=(300, 1)) > probs.cumsum(1)).sum(1).clip(0, 2)
    at = open_with(Predictions(probs, labels, ("a", "b", "c"), name="calibrated"))
    assert not at.exception and not at.error
    at.slider(key="keep:metrics.n_bins").set_value(8).run()
    table = at.dataframe[1].value.set_index("key")
    assert table.loc["ece", "name"] == "ECE, 8 uniform bins" and table.loc["ace", "name"] == "ACE, 8 adaptive bins"
    assert table.loc["kde_ce_kl", "name"] == "CE_KL (kernel), h = 0.01"
    assert list(at.dataframe[0].value.index) == [cc.metric_name(s.key, n_bins=8) for s in cc.METRICS]
    has = table["ci_low"].notna()
    assert (table.loc[has, "ci_low"] <= table.loc[has, "estimate"]).all()
    assert (table.loc[has, "estimate"] <= table.loc[has, "ci_high"]).all()
    # The page's intervals are calib_core's (200 resamples, seed 0 by default).
    for key in ("ace", "skce_block", "nll"):
        expected = cc.metric_interval(key, probs, labels, n_bins=8, n_boot=200, seed=0)
        assert (table.loc[key, "ci_low"], table.loc[key, "ci_high"]) == pytest.approx((expected.low, expected.high))
        assert table.loc[key, "interval"] == expected.note
