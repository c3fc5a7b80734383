"""AppTest tests of the Metrics page (pages/1_Metrics.py) beyond tests/app/test_app.py."""
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
    at.slider(key="metric_bins").set_value(8).run()
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


def test_tests_table_shows_calib_core_verdicts_and_the_measured_size_flag():
    rng = np.random.default_rng(1)
    p1 = rng.uniform(0.05, 0.95, 400)
    labels = (rng.uniform(size=400) < p1 ** 2).astype(int)  # over-confident: miscalibrated
    probs = np.column_stack([1 - p1, p1])
    at = open_with(Predictions(probs, labels, ("no", "yes"), name="overconfident"))
    assert not at.exception and not at.error
    (tests,) = [d.value for d in at.dataframe if "p_value" in d.value.columns]
    tests = tests.set_index("method")
    assert list(tests.index) == list(cc.TEST_METHODS)
    for method in cc.TEST_METHODS:
        expected = cc.calibration_test(probs, labels, method, seed=0)
        assert tests.loc[method, "p_value"] == pytest.approx(expected.p_value)
        assert tests.loc[method, "verdict"] == expected.verdict
        assert tests.loc[method, "reason"] == expected.verdict_reason
        assert tests.loc[method, "measured_size"] == cc.lab.size_power.SIZE_NOTES[method]
    assert tests.loc["hosmer_lemeshow", "verdict"] == "miscalibrated"
    flags = [w.value for w in at.warning if "Flagged by the Lab" in w.value]
    assert len(flags) == 1 and "Hosmer-Lemeshow" in flags[0]


def test_deployment_prevalence_states_the_odds_factor_and_shifts_only_the_intercepts():
    rng = np.random.default_rng(3)
    p1 = rng.uniform(0.05, 0.95, 600)
    labels = (rng.uniform(size=600) < p1).astype(int)
    probs = np.column_stack([1 - p1, p1])
    name = "model ![t](http://127.0.0.1:9/t.png)"
    at = open_with(Predictions(probs, labels, ("neg", "pos **bold**"), name=name))
    assert not at.exception and not at.error
    at.number_input(key="prevalence").set_value(0.05).run()
    assert not at.exception and not at.error
    pi = labels.mean()
    factor = (0.05 / 0.95) / (pi / (1 - pi))
    (stated,) = [m.value for m in at.markdown if "odds are multiplied by" in m.value]
    assert f"**{factor:.4g}**" in stated and f"π = {pi:.3f}" in stated
    assert "pos \\*\\*bold\\*\\*" in stated, "the class name is plain text"
    (table,) = [d.value for d in at.dataframe if "after" in d.value.columns]
    table = table.set_index("key")
    shifted = cc.adjust_prevalence(probs, 0.05, labels=labels)
    assert table.loc["ici", "before"] == pytest.approx(cc.ici(probs, labels).ici)
    assert table.loc["ici", "after"] == pytest.approx(cc.ici(shifted.probs, labels).ici)
    assert table.loc["ece", "after"] == pytest.approx(cc.ece(shifted.probs, labels, n_bins=15))
    # Bayes' rule adds log(factor) to every logit: the slope stays, the calibration-in-the-large drops by it.
    assert table.loc["cox_slope", "after"] == pytest.approx(table.loc["cox_slope", "before"], rel=1e-6)
    assert table.loc["citl", "before"] - table.loc["citl", "after"] == pytest.approx(np.log(factor), rel=1e-6)


def test_deployment_prevalence_of_one_class_of_a_multiclass_model():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet([1, 1, 1], 300)
    labels = (rng.uniform(size=(300, 1)) > probs.cumsum(1)).sum(1).clip(0, 2)
    at = open_with(Predictions(probs, labels, ("a", "b", "c"), name="three"))
    at.selectbox(key="prevalence_class").set_value(2).run()
    assert not at.exception and not at.error
    (table,) = [d.value for d in at.dataframe if "after" in d.value.columns]
    view = cc.as_probs(probs[:, 2])
    shifted = cc.adjust_prevalence(view, 0.1, labels=labels == 2)
    assert table.set_index("key").loc["ece", "after"] == pytest.approx(cc.ece(shifted.probs, labels == 2))
    (stated,) = [m.value for m in at.markdown if "odds are multiplied by" in m.value]
    assert stated.startswith("Class c:")
