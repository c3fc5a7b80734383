"""The Deployment page's prevalence tab with a weighted model (issue 28): its cached calls (studio.compute_decisions,
which the tab draws) are calib_core.estimate_prevalence with the model's sample_weight, and the re-weighted metrics
weigh each row by its weight times its class's importance weight, as `report --deployment --weight-column` does.
Before, the tab counted rows and named itself unweighted. (The upload itself is driven in tests/e2e.)"""
from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.engines.decisions_report import deployment_weights
from calib_core.io import load_predictions
from studio import compute_decisions, report
from studio.weights_reasons import REPORT_UNWEIGHTED, UNWEIGHTED_PARTS

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")


def _weighted(tmp_path, n=200, seed=4):
    rng = np.random.default_rng(seed)
    p1 = rng.beta(1.2, 1.6, n)
    labels = (rng.random(n) < p1 ** 1.5).astype(int)
    path = tmp_path / "clinic.csv"
    pd.DataFrame({"label": labels, "p_no": 1 - p1, "p_yes": p1,
                  "w": 1 + 3 * (p1 > 0.6) + 0.5 * labels}).to_csv(path, index=False)
    unlabelled = cc.as_probs(rng.beta(2.0, 1.5, 150))
    return load_predictions(path, weight_column="w"), unlabelled


@pytest.mark.parametrize("method", ["em", "bbse"])
def test_prevalence_tab_is_the_weighted_estimate(tmp_path, method):
    p, unlabelled = _weighted(tmp_path)
    shown = compute_decisions.prevalence(p, "fp", unlabelled, "dep", method, 40, 0, 0.05)
    expected = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=p.probs, labels=p.labels, n_boot=40,
                                      seed=0, alpha=0.05, sample_weight=p.sample_weight)
    plain = cc.estimate_prevalence(unlabelled, method=method, probs_labelled=p.probs, labels=p.labels, n_boot=40,
                                   seed=0, alpha=0.05)
    for name in ("prevalence", "ci_low", "ci_high", "source_prevalence"):
        np.testing.assert_allclose(getattr(shown, name), getattr(expected, name), rtol=0, atol=1e-12)
    assert np.abs(shown.source_prevalence - plain.source_prevalence).max() > 1e-3
    assert shown.sentence() == expected.sentence()


def test_reweighted_metrics_carry_the_row_weights(tmp_path):
    p, unlabelled = _weighted(tmp_path)
    estimate = cc.estimate_prevalence(unlabelled, probs_labelled=p.probs, labels=p.labels, n_boot=0,
                                      sample_weight=p.sample_weight)
    table, note = compute_decisions.reweighted_metrics(p, "fp", tuple(float(w) for w in estimate.class_weights), 15)
    assert note == ""
    weights = deployment_weights(estimate, p)  # the command line's rule (report --deployment)
    np.testing.assert_allclose(weights, estimate.sample_weight(p.labels) * p.sample_weight)
    for key, row in zip(compute_decisions.REWEIGHTED_METRICS, table.itertuples(index=False)):
        function = cc.metric_function(key, n_bins=15)
        assert row[1] == pytest.approx(function(p.probs, p.labels, sample_weight=p.sample_weight), rel=1e-12)
        assert row[2] == pytest.approx(function(p.probs, p.labels, sample_weight=weights), rel=1e-12)


def test_deployment_prevalence_is_no_longer_named_unweighted():
    assert "Deployment prevalence" not in UNWEIGHTED_PARTS and "deployment" not in REPORT_UNWEIGHTED


def test_html_report_deployment_is_the_weighted_estimate(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "ReportSettings", functools.partial(report.ReportSettings, sensitivity_bins=(5, 10),
                                                                    n_resamples=100))  # fast
    p, unlabelled = _weighted(tmp_path, seed=1)
    test, deployment = tmp_path / "clinic.csv", tmp_path / "deployment.csv"
    pd.DataFrame({"p_no": unlabelled[:, 0], "p_yes": unlabelled[:, 1]}).to_csv(deployment, index=False)
    out = tmp_path / "r.html"
    assert main(["report", str(test), "--deployment", str(deployment), "--weight-column", "w", "--n-boot", "5",
                 "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    data = json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])
    section = data["decisions"][0]["deployment"]
    assert "reason" not in section and section["weighted"] is True
    expected = cc.estimate_prevalence(unlabelled, probs_labelled=p.probs, labels=p.labels, n_boot=5,
                                      seed=report.ReportSettings().seed, sample_weight=p.sample_weight)
    np.testing.assert_allclose(section["estimates"]["em"]["prevalence"], expected.prevalence, rtol=0, atol=1e-12)
    np.testing.assert_allclose(section["estimates"]["em"]["ci_low"], expected.ci_low, rtol=0, atol=1e-12)
    assert "Unweighted: calib_core.estimate_prevalence" not in text
    assert "Row weights: the labelled rows are weighted" in text and "prevalence times its row weight" in text
