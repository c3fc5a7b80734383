"""AppTest tests of the Deployment page (pages/11_Deployment.py), its sections (studio/deployment.py), cached
helpers (studio/compute_decisions.py) and figures (calib_core/plot/figures_decisions.py), and the planner on the Lab and
Metrics pages. The deployment upload itself is driven in a browser (tests/e2e/test_e2e_deployment.py).

Expected values are computed independently with calib_core on the same rows.
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.io import load_demo
from calib_core.plot import figures_decisions
from studio import compute_decisions
from studio.text import md

from tests import app_support
from tests.app_support import assert_clean, trace_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/11_Deployment.py"
TIMEOUT = 180


def test_decision_curve_and_value_match_calib_core():
    at = app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": "breast_cancer_gaussian_nb"})
    assert_clean(at)
    data = load_demo("breast_cancer_gaussian_nb")
    expected = cc.decision_curve(data.probs, data.labels, n_boot=200, seed=0)
    spec = app_support.plotly_specs(at)[0]
    before = next(t for t in spec["data"] if t.get("name") == "Current probabilities")
    assert trace_array(before["y"]) == pytest.approx(expected.table["before"].to_numpy())
    value = cc.recalibration_value(data.probs, data.labels, threshold=0.5, n_boot=200, seed=0)
    assert md(value.sentence()) in [i.value for i in at.info]
    at.number_input(key="decision_threshold").set_value(0.8).run()
    assert_clean(at)
    value = cc.recalibration_value(data.probs, data.labels, threshold=0.8, n_boot=200, seed=0)
    assert md(value.sentence()) in [i.value for i in at.info]


def test_cost_matrix_one_vs_rest_on_a_three_class_model():
    at = app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": "iris_mlp"})
    at.selectbox(key="decision_class").set_value(2).run()
    at.radio(key="decision_rule").set_value("Cost matrix").run()
    at.text_input(key="decision_units").input("<b>dollars</b>").run()
    assert_clean(at)
    data = load_demo("iris_mlp")
    costs = np.array([[0.0, 0.0, 10.0], [1.0, 1.0, 0.0]])  # miss class 2: 10; false alarm: 1
    value = cc.recalibration_value(data.probs, data.labels, cost_matrix=costs, units="<b>dollars</b>", n_boot=200,
                                   seed=0)
    assert [i.value for i in at.info] == [md(value.sentence())]  # the user's units as plain text


def test_planner_tab_runs_on_request_and_states_its_monte_carlo_error():
    at = app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": "breast_cancer_svc",
                                                             "deployment_tool": "How many labels"})
    assert_clean(at)
    assert not at.info  # nothing simulated before *Plan*
    at.radio(key="deployment_plan_kind").set_value("Temperature").run()
    at.selectbox(key="deployment_plan_test").set_value("spiegelhalter").run()
    at.button(key="deployment_plan_button").click().run()
    assert_clean(at)
    data = load_demo("breast_cancer_svc")
    plan = cc.plan_labels(data.probs, temperature=1.5, test="spiegelhalter", n=data.labels.size, repetitions=100)
    assert [i.value for i in at.info] == [md(plan.sentence())]
    assert "Monte Carlo error" in at.info[0].value


def test_lab_page_has_the_planner_tab():
    at = app_support.open_link("pages/8_Lab.py", timeout=TIMEOUT, query={"demo": "iris_mlp",
                                                                        "lab_tool": "How many labels"})
    assert_clean(at)
    assert at.button(key="lab_plan_button")


def test_metrics_page_offers_the_planner_next_to_an_inconclusive_verdict():
    at = app_support.open_link("pages/1_Metrics.py", timeout=TIMEOUT, query={"demo": "iris_mlp", "boot": "none"})
    assert_clean(at)
    assert "Inconclusive: how many labelled rows would settle it?" in [e.label for e in at.expander]
    at = app_support.open_link("pages/1_Metrics.py", timeout=TIMEOUT, query={"demo": "wine_svc", "boot": "none"})
    assert not any("Inconclusive" in e.label for e in at.expander)  # every test's verdict is "miscalibrated"


def test_read_unlabelled_matches_class_columns_and_refuses_others():
    frame = pd.DataFrame({"id": [1, 2], "p_b": [0.3, 0.6], "p_a": [0.7, 0.4]})
    probs = compute_decisions.unlabelled_probs(frame.to_csv(index=False).encode(), "d.csv", ("a", "b"))
    np.testing.assert_allclose(probs, [[0.7, 0.3], [0.4, 0.6]])
    score = compute_decisions.unlabelled_probs(b"score\n0.2\n0.9\n", "d.csv", ("no", "yes"))
    np.testing.assert_allclose(score[:, 1], [0.2, 0.9])
    with pytest.raises(cc.CalibrationInputError, match="one column per class"):
        compute_decisions.unlabelled_probs(b"x,y\n1,2\n", "d.csv", ("a", "b", "c"))
    with pytest.raises(cc.CalibrationInputError, match="sum"):
        compute_decisions.unlabelled_probs(b"p_a,p_b\n0.5,0.9\n", "d.csv", ("a", "b"))
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    np.testing.assert_allclose(compute_decisions.unlabelled_probs(buffer.getvalue(), "d.parquet", ("a", "b")), probs)


def test_figures_draw_the_results():
    data = load_demo("breast_cancer_gaussian_nb")
    estimate = cc.estimate_prevalence(data.probs[:100], labels=data.labels, n_boot=50)
    fig = figures_decisions.prevalence_figure(estimate, ["<i>m</i>", "b"])
    assert trace_array(fig.data[1].y) == pytest.approx(estimate.prevalence)
    assert "<i>" not in str(fig.data[1].x[0])  # class names are plain text in the plot
    plan = cc.plan_labels(data.probs, temperature=2.0, test="spiegelhalter", repetitions=20)
    power = figures_decisions.power_figure(plan)
    assert power.layout.xaxis.type == "log"
    assert trace_array(power.data[0].y) == pytest.approx(plan.curve["power"].to_numpy())


def test_reweighted_metrics_equal_repeated_rows_or_say_why_not():
    """Integer class weights are rows repeated: the re-weighted column is the metric of the repeated rows
    (once every metric takes sample_weight=); a metric without the keyword has no value and the note names it."""
    data = load_demo("breast_cancer_svc")
    table, note = compute_decisions.reweighted_metrics(data, "fp-test", (1.0, 2.0), 15)
    repeated = np.r_[np.arange(data.labels.size), np.flatnonzero(data.labels == 1)]
    for key, row in zip(compute_decisions.REWEIGHTED_METRICS, table.itertuples(index=False)):
        function = cc.metric_function(key, n_bins=15)
        assert row[1] == pytest.approx(function(data.probs, data.labels))
        if np.isnan(row[2]):
            assert cc.metric_name(key, n_bins=15) in note
        else:
            assert row[2] == pytest.approx(function(data.probs[repeated], data.labels[repeated]))
