"""The HTML report's Decisions and Deployment sections (issue 28): the numbers of `report --json`
(calib_core.engines.decisions_report), the charts, escaped names, and a per-model note where a section
cannot be made."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.io import Predictions
from studio import report
from studio.report_decisions import DecisionInputs

HOSTILE = "<b>x</b>"


def _data(text: str) -> dict:
    return json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])


def _binary(n=200, seed=0):
    rng = np.random.default_rng(seed)
    p1 = rng.beta(1.2, 2.0, n) ** 0.6  # overconfident in class 1
    labels = (rng.random(n) < rng.beta(1.2, 2.0, n)).astype(int)
    return np.c_[1 - p1, p1], labels


def test_report_has_the_decision_curve_and_the_deployment_of_the_command_line():
    probs, labels = _binary()
    model = report.ReportModel(HOSTILE, Predictions.from_arrays(probs, labels, class_names=["neg", HOSTILE]))
    shifted = probs[np.r_[np.flatnonzero(labels == 1), np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)]]
    deployment = pd.DataFrame({"p_neg": shifted[:, 0], f"p_{HOSTILE}": shifted[:, 1]}).to_csv(index=False).encode()
    settings = report.ReportSettings(n_boot=30, seed=2, max_quadratic_rows=1)
    inputs = DecisionInputs(threshold=0.3, deployment=deployment, deployment_file=f"{HOSTILE}.csv")
    text = report.build_report([model], settings, sections=(), decisions=inputs)
    assert "<h2>Decisions</h2>" in text and "<h2>Deployment</h2>" in text
    assert report.chart_count(text) == 2  # the decision curve and the prevalence chart
    assert HOSTILE not in text.split("id='report-data'>")[0]  # every name escaped
    data = _data(text)["decisions"][0]
    value = cc.recalibration_value(probs, labels, threshold=0.3, n_boot=30, seed=2)
    assert data["decisions"]["value"]["value"] == pytest.approx(value.value)
    assert data["decisions"]["value"]["ci_high"] == pytest.approx(value.ci_high)
    curve = cc.decision_curve(probs, labels, n_boot=30, seed=2)
    np.testing.assert_allclose(data["decisions"]["curve"]["gain"], curve.table["gain"])
    em = cc.estimate_prevalence(shifted, probs_labelled=probs, labels=labels, n_boot=30, seed=2)
    np.testing.assert_allclose(data["deployment"]["estimates"]["em"]["prevalence"], em.prevalence)
    # the no-shift test as the page, the CLI table and the JSON show it: same test, same numbers
    assert (f"Test of no shift ({em.shift_test}): statistic {em.shift_statistic:.3g}, "
            f"p = {em.shift_p_value:.3g}") in text
    assert data["deployment"]["no_shift_test"]["method"] == em.shift_test
    assert data["deployment"]["reweighted"]["metrics"]["ece"] == pytest.approx(
        cc.ece(probs, labels, sample_weight=em.sample_weight(labels)))
    assert value.sentence().replace("<", "&lt;") in text or value.sentence() in text


def test_a_model_without_a_decision_curve_gets_the_reason_and_the_report_goes_on():
    rng = np.random.default_rng(1)
    three = rng.dirichlet(np.ones(3), 120)
    labels = rng.integers(0, 3, 120)
    probs, binary_labels = _binary(120)
    models = [report.ReportModel("three", Predictions.from_arrays(three, labels)),
              report.ReportModel("two", Predictions.from_arrays(probs, binary_labels))]
    text = report.build_report(models, report.ReportSettings(n_boot=10, max_quadratic_rows=1), sections=(),
                               decisions=DecisionInputs(threshold=0.4))
    entries = _data(text)["decisions"]
    assert "net benefit is binary" in entries[0]["decisions"]["reason"]
    assert entries[1]["decisions"]["curve"] is not None and report.chart_count(text) == 1
    assert "Not available: net benefit is binary" in text
    assert "<h2>Deployment</h2>" not in text


def test_report_without_decision_inputs_is_unchanged():
    probs, labels = _binary(60)
    model = report.ReportModel("m", Predictions.from_arrays(probs, labels))
    settings = report.ReportSettings(n_boot=10, max_quadratic_rows=1)
    plain = report.build_report([model], settings, sections=(), generated="now")
    assert plain == report.build_report([model], settings, sections=(), generated="now", decisions=DecisionInputs())
    assert "Decisions" not in plain and "decisions" not in _data(plain)


def test_cli_html_takes_the_threshold_and_the_deployment(tmp_path, capsys, monkeypatch):
    """The command line hands its flags to build_report (whose sections the tests above check)."""
    probs, labels = _binary(100)
    test, deployment = tmp_path / "test.csv", tmp_path / "deployment.csv"
    pd.DataFrame({"p_0": probs[:, 0], "p_1": probs[:, 1], "label": labels}).to_csv(test, index=False)
    pd.DataFrame({"score": probs[labels == 1, 1]}).to_csv(deployment, index=False)
    seen = {}

    def build(models, settings, *, decisions=None, **kwargs):
        seen["decisions"] = decisions
        return "<html></html>"

    monkeypatch.setattr(report, "build_report", build)
    out = tmp_path / "r.html"
    assert main(["report", str(test), "--html", str(out), "--threshold", "0.25", "--deployment", str(deployment),
                 "--n-boot", "20"]) == 0
    inputs = seen["decisions"]
    assert inputs.threshold == 0.25 and inputs.cost_matrix is None
    assert inputs.deployment == deployment.read_bytes() and inputs.deployment_file == str(deployment)
    assert main(["report", str(test), "--html", str(out)]) == 0
    assert seen["decisions"] is None
    assert main(["report", str(test), "--html", str(out), "--threshold", "0.2", "--cost-matrix", "x.json"]) == 2
    assert "not both" in capsys.readouterr().err


def test_report_marks_an_em_interval_that_does_not_hold():
    """The HTML report shows calib_core's flag as the page and the command line do (issue 28)."""
    rng = np.random.default_rng(4)

    def rows(prevalence, n=1000):
        y = (rng.random(n) < prevalence).astype(int)
        p1 = 1 / (1 + np.exp(-2.5 * (1.5 * rng.normal(1.5 * y, 1.0) - 1.125 + np.log(0.3 / 0.7))))
        return np.c_[1 - p1, p1], y

    probs, labels = rows(0.3)
    shifted, _ = rows(0.6)
    model = report.ReportModel("m", Predictions.from_arrays(probs, labels, class_names=["no", "yes"]))
    deployment = pd.DataFrame({"p_no": shifted[:, 0], "p_yes": shifted[:, 1]}).to_csv(index=False).encode()
    text = report.build_report([model], report.ReportSettings(n_boot=50, seed=0, max_quadratic_rows=1), sections=(),
                               decisions=DecisionInputs(deployment=deployment, deployment_file="d.csv"))
    data = _data(text)["decisions"][0]["deployment"]["estimates"]["em"]
    assert data["interval_holds"] is False
    assert "(interval does not hold)" in text and "intervals do not hold" in text and "The EM interval" in text
