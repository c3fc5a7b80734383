"""`report --deployment FILE --weight-column W` (issue 28): the deployment section is calib_core.estimate_prevalence
with the labelled rows' weights, in the JSON and the table (the HTML report: tests/app/test_deployment_prevalence_weights.py); the metrics re-weighted to the deployment
weigh each row by its own weight times its class's importance weight. Before, the command refused the weights."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.io import load_predictions


def _files(tmp_path, n=240, m=200, seed=0):
    rng = np.random.default_rng(seed)
    p1 = rng.beta(1.2, 2.0, n)
    labels = (rng.random(n) < p1).astype(int)
    weights = 1.0 + 3.0 * (p1 > 0.5) + 1.5 * labels  # the weights move the test set's prevalence and confusion
    frame = pd.DataFrame({"p_no": 1 - p1, "p_yes": p1, "label": np.where(labels == 1, "yes", "no"), "w": weights})
    test = tmp_path / "test.csv"
    frame.to_csv(test, index=False)
    rows = rng.choice(np.flatnonzero(labels == 1), m)  # a deployment of positives only... and some negatives
    rows[: m // 3] = rng.choice(np.flatnonzero(labels == 0), m // 3)
    deployment = tmp_path / "deployment.csv"
    frame.iloc[rows][["p_no", "p_yes"]].to_csv(deployment, index=False)
    return test, deployment, load_predictions(test, weight_column="w"), frame.iloc[rows][["p_no", "p_yes"]].to_numpy()


def test_json_and_table_are_the_weighted_estimate(tmp_path, capsys):
    test, deployment, p, unlabelled = _files(tmp_path)
    assert main(["report", str(test), "--deployment", str(deployment), "--weight-column", "w", "--n-boot", "30",
                 "--json", "--max-quadratic-rows", "1"]) == 0
    section = json.loads(capsys.readouterr().out)["deployment"]
    assert section["weighted"] is True
    for method in ("em", "bbse"):
        expected = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=p.probs, labels=p.labels,
                                          n_boot=30, seed=0, sample_weight=p.sample_weight)
        plain = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=p.probs, labels=p.labels,
                                       n_boot=30, seed=0)
        found = section["estimates"][method]
        np.testing.assert_allclose(found["prevalence"], expected.prevalence, rtol=0, atol=1e-12)
        np.testing.assert_allclose(found["ci_low"], expected.ci_low, rtol=0, atol=1e-12)
        np.testing.assert_allclose(found["ci_high"], expected.ci_high, rtol=0, atol=1e-12)
        assert np.abs(expected.prevalence - plain.prevalence).max() > 1e-3  # the weights change the numbers
    em = cc.estimate_prevalence(unlabelled, probs_labelled=p.probs, labels=p.labels, n_boot=30, seed=0,
                                sample_weight=p.sample_weight)
    np.testing.assert_allclose(section["test_set_prevalence"], em.source_prevalence, rtol=0, atol=1e-12)
    assert section["no_shift_test"]["p_value"] == pytest.approx(em.shift_p_value, rel=1e-9)
    weights = em.sample_weight(p.labels) * p.sample_weight
    assert section["reweighted"]["metrics"]["ece"] == pytest.approx(cc.ece(p.probs, p.labels, sample_weight=weights))
    assert main(["report", str(test), "--deployment", str(deployment), "--weight-column", "w", "--n-boot", "30",
                 "--max-quadratic-rows", "1"]) == 0
    text = capsys.readouterr().out
    assert "row weights: the labelled rows are weighted" in text and "times its row weight" in text
    assert f"statistic {em.shift_statistic:.3g}, p = {em.shift_p_value:.3g}" in text
