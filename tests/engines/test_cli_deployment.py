"""`report --deployment FILE` and `report --threshold T / --cost-matrix FILE` (issue 28): the deployment's
prevalence, the no-shift test and the metrics re-weighted to it; the decision curve and the value of recalibrating.
The numbers are those of calib_core's functions (one computation for the JSON, the table and the HTML report)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.engines.decisions_report import deployment_json, deployment_lines, deployment_report
from calib_core.io import Predictions
from calib_core.io.unlabelled import load_unlabelled


def _binary(tmp_path, n=600, target=0.75, seed=0):
    """A calibrated binary test set (prevalence about 0.35) and the deployment: its rows resampled to `target`."""
    rng = np.random.default_rng(seed)
    p1 = rng.beta(1.2, 2.0, n)
    labels = (rng.random(n) < p1).astype(int)
    frame = pd.DataFrame({"p_no": 1 - p1, "p_yes": p1, "label": np.where(labels == 1, "yes", "no")})
    test = tmp_path / "test.csv"
    frame.to_csv(test, index=False)
    positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    m = 400
    rows = np.r_[rng.choice(positives, int(m * target)), rng.choice(negatives, m - int(m * target))]
    deployment = tmp_path / "deployment.csv"
    frame.iloc[rows].to_csv(deployment, index=False)  # with its label column: ignored, and said so
    return test, deployment, frame, frame.iloc[rows]


def test_deployment_json_has_the_prevalence_the_test_and_the_reweighted_metrics(tmp_path, capsys):
    test, deployment, frame, shifted = _binary(tmp_path)
    assert main(["report", str(test), "--deployment", str(deployment), "--json", "--max-quadratic-rows", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    section = result["deployment"]
    assert section["n_rows"] == len(shifted) and section["classes"] == ["no", "yes"]
    assert "label" in section["notes"][0] and "ignored" in section["notes"][0]
    probs, labels = frame[["p_no", "p_yes"]].to_numpy(), (frame["label"] == "yes").to_numpy().astype(int)
    for method in ("em", "bbse"):
        expected = cc.estimate_prevalence(shifted[["p_no", "p_yes"]].to_numpy(), method=method, probs_labelled=probs,
                                          labels=labels, n_boot=200, seed=0)
        found = section["estimates"][method]
        np.testing.assert_allclose(found["prevalence"], expected.prevalence)
        np.testing.assert_allclose(found["ci_low"], expected.ci_low)
        # the known shift: the deployment holds 75% "yes" (calib_core's own tests measure the intervals' coverage)
        assert found["prevalence"][1] == pytest.approx(0.75, abs=0.08)
    assert section["test_set_prevalence"][1] == pytest.approx(labels.mean())
    test_json = section["no_shift_test"]
    assert test_json["p_value"] < 0.05 and test_json["shift_detected"] is True
    em = cc.estimate_prevalence(shifted[["p_no", "p_yes"]].to_numpy(), probs_labelled=probs, labels=labels,
                                n_boot=0)
    # the test of the page and the HTML report (PrevalenceEstimate.sentence): the same test, the same numbers
    assert test_json["method"] == em.shift_test and "Welch" in em.shift_test
    assert test_json["statistic"] == pytest.approx(em.shift_statistic)
    assert test_json["p_value"] == pytest.approx(em.shift_p_value)
    weights = em.sample_weight(labels)
    reweighted = section["reweighted"]
    assert reweighted["by"] == "em"
    assert reweighted["metrics"]["ece"] == pytest.approx(cc.ece(probs, labels, sample_weight=weights))
    assert reweighted["metrics"]["brier"] == pytest.approx(cc.brier_score(probs, labels, sample_weight=weights))
    assert reweighted["metrics"]["ece"] != pytest.approx(result["metrics"]["ece"])
    assert reweighted["metrics"]["smooth_ece"] is None and "whole numbers" in reweighted["reasons"]["smooth_ece"]


def test_deployment_table_says_it(tmp_path, capsys):
    test, deployment, frame, shifted = _binary(tmp_path)
    assert main(["report", str(test), "--deployment", str(deployment), "--max-quadratic-rows", "1"]) == 0
    text = capsys.readouterr().out
    assert f"deployment {deployment}: 400 unlabelled rows" in text
    assert "assumption: label shift" in text and "no-shift test (black-box shift detection" in text
    assert "metrics re-weighted to the deployment" in text and "not re-weighted: " in text
    assert "label column 'label' is ignored" in text
    em = cc.estimate_prevalence(shifted[["p_no", "p_yes"]].to_numpy(),
                                probs_labelled=frame[["p_no", "p_yes"]].to_numpy(),
                                labels=(frame["label"] == "yes").to_numpy().astype(int), n_boot=0)
    shown = f"({em.shift_test}): statistic {em.shift_statistic:.3g}, p = {em.shift_p_value:.3g}"
    assert f"no-shift test {shown}" in text and f"Test of no shift {shown}" in em.sentence()


def test_deployment_file_with_logit_columns_goes_through_the_softmax(tmp_path, capsys):
    test, _, frame, _ = _binary(tmp_path)
    logits = pd.DataFrame({"logit_no": np.zeros(len(frame)), "logit_yes": np.log(frame.p_yes / frame.p_no)})
    path = tmp_path / "logits.csv"
    logits.to_csv(path, index=False)
    assert main(["report", str(test), "--deployment", str(path), "--json", "--max-quadratic-rows", "1"]) == 0
    section = json.loads(capsys.readouterr().out)["deployment"]
    assert section["columns"] == ["logit_no", "logit_yes"] and section["notes"] == []
    probs, labels = frame[["p_no", "p_yes"]].to_numpy(), (frame["label"] == "yes").to_numpy().astype(int)
    expected = cc.estimate_prevalence(probs, probs_labelled=probs, labels=labels, n_boot=200, seed=0)
    np.testing.assert_allclose(section["estimates"]["em"]["prevalence"], expected.prevalence, rtol=1e-6)


@pytest.mark.parametrize("extra, message", [
    (["--deployment", "{bad}"], "needs one column per class"),
    (["--deployment", "{dep}", "--engine", "stream"], "needs the memory engine"),
    (["--threshold", "0.3", "--cost-matrix", "{costs}"], "not both"),
    (["--threshold", "1.5"], "threshold must lie in [0, 1)"),
    (["--cost-matrix", "{bad}"], "is not JSON"),
    (["--cost-matrix", "{short}"], "must be a finite (actions, 2) array"),
])
def test_deployment_and_decision_errors_are_one_line(tmp_path, capsys, extra, message):
    test, deployment, frame, _ = _binary(tmp_path)
    frame.assign(w=1.0).to_csv(test, index=False)
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n")
    costs, short = tmp_path / "costs.json", tmp_path / "short.json"
    costs.write_text("[[0, 1], [1, 0]]")
    short.write_text('{"costs": [[0, 1, 2], [1, 0, 2]], "units": "EUR"}')
    args = [a.format(bad=bad, dep=deployment, costs=costs, short=short) for a in extra]
    assert main(["report", str(test), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calib-core: error: ") and err.count("\n") == 1 and message in err


def test_threshold_gives_the_decision_curve_and_the_value_of_recalibrating(tmp_path, capsys):
    test, _, frame, _ = _binary(tmp_path)
    frame = frame.assign(p_yes=frame.p_yes ** 0.5, p_no=1 - frame.p_yes ** 0.5)  # overconfident in "yes"
    frame.to_csv(test, index=False)
    assert main(["report", str(test), "--threshold", "0.3", "--json", "--max-quadratic-rows", "1"]) == 0
    section = json.loads(capsys.readouterr().out)["decisions"]
    probs, labels = frame[["p_no", "p_yes"]].to_numpy(), (frame["label"] == "yes").to_numpy().astype(int)
    curve = cc.decision_curve(probs, labels, n_boot=200, seed=0)
    np.testing.assert_allclose(section["curve"]["after"], curve.table["after"])
    np.testing.assert_allclose(section["curve"]["before_low"], curve.table["before_low"])
    value = cc.recalibration_value(probs, labels, threshold=0.3, n_boot=200, seed=0)
    assert section["value"]["value"] == pytest.approx(value.value)
    assert section["value"]["ci_low"] == pytest.approx(value.ci_low)
    assert section["positive_class"] == "yes" and section["threshold"] == 0.3
    assert main(["report", str(test), "--threshold", "0.3", "--max-quadratic-rows", "1"]) == 0
    text = capsys.readouterr().out
    assert "decisions (act when P(yes) >= 0.3" in text and "per 1,000 decisions" in text and "treat all" in text


def test_cost_matrix_for_three_classes_values_recalibration_without_a_curve(tmp_path, capsys):
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), 300)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    path = tmp_path / "three.csv"
    pd.DataFrame({"p_a": probs[:, 0], "p_b": probs[:, 1], "p_c": probs[:, 2], "label": labels}).to_csv(path,
                                                                                                       index=False)
    costs = tmp_path / "costs.json"
    matrix = [[0, 5, 5], [1, 0, 1], [2, 2, 0]]
    costs.write_text(json.dumps({"costs": matrix, "units": "EUR"}))
    assert main(["report", str(path), "--cost-matrix", str(costs), "--json", "--max-quadratic-rows", "1"]) == 0
    section = json.loads(capsys.readouterr().out)["decisions"]
    assert section["curve"] is None and section["cost_matrix"] == matrix
    value = cc.recalibration_value(probs, labels, cost_matrix=np.array(matrix, float), units="EUR", n_boot=200,
                                   seed=0)
    assert section["value"]["value"] == pytest.approx(value.value) and section["value"]["units"] == "EUR"
    assert main(["report", str(path), "--threshold", "0.3"]) == 2
    assert "net benefit is binary" in capsys.readouterr().err


def test_deployment_says_when_the_em_interval_does_not_hold():
    """Issue 28: predictions that fail the EM's calibration check (P(yes) over-confident: logit x 2.5) give an
    interval that cannot cover; the section of the JSON (and of the HTML report) carries calib_core's flag and
    bias, the table marks the interval and says why."""
    rng = np.random.default_rng(4)

    def rows(prevalence, n=600):
        y = (rng.random(n) < prevalence).astype(int)
        p1 = 1 / (1 + np.exp(-2.5 * (1.5 * rng.normal(1.5 * y, 1.0) - 1.125 + np.log(0.3 / 0.7))))
        return np.c_[1 - p1, p1], y

    probs, labels = rows(0.3)
    shifted, _ = rows(0.6)
    predictions = Predictions.from_arrays(probs, labels, class_names=["no", "yes"])
    unlabelled = load_unlabelled(pd.DataFrame({"no": shifted[:, 0], "yes": shifted[:, 1]}).to_csv(index=False).encode(),
                                 ["no", "yes"], name="d.csv")
    found = deployment_report(predictions, unlabelled, n_boot=50, seed=0, alpha=0.05, n_bins=15, binning="uniform",
                              max_quadratic_rows=1)
    section = deployment_json(found, ["no", "yes"], file="d.csv")
    em = section["estimates"]["em"]
    assert em["interval_holds"] is False and em["em_bias"][1] < -0.05
    assert "does not hold" in em["notes"][0]
    assert not em["ci_low"][1] <= 0.6 <= em["ci_high"][1]  # the flag is right: the interval misses the truth
    out = "\n".join(deployment_lines(section, {}))
    assert "]!" in out and "em: its interval (marked !) does not hold" in out and "em note: The EM interval" in out
