"""The HTML report's confidence sections (issue 26): selective prediction (risk-coverage with its band, AURC,
E-AURC, AUGRC, selective risk at coverages, the certified abstention threshold) and the systems compared."""
from __future__ import annotations

import json

import numpy as np
import pytest

import calib_core as cc
from calib_core.recalibration.paired import compare_systems
from studio import report
from studio.report_confidence import COVERAGES, DELTA, TARGET_RISK

SETTINGS = report.ReportSettings(n_boot=30)


def _data(text: str) -> dict:
    return json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])


def _systems(n=300, drop=0, ids=True):
    rng = np.random.default_rng(7)
    c = np.round(rng.uniform(0.2, 1.0, n), 1)  # ties, and stated confidences below one half
    right = (rng.uniform(size=n) < c).astype(int)
    sure_right = (rng.uniform(size=n) < 0.6).astype(int)
    names = np.array([f"q{i}" for i in range(n)])
    keep = np.arange(n - drop)
    honest = cc.Predictions.from_confidence(c, right, name="honest", ids=names if ids else None)
    sure = cc.Predictions.from_confidence(np.full(keep.size, 0.95), sure_right[keep], name="<b>sure</b>",
                                          ids=names[keep] if ids else None)
    return honest, sure


def test_selective_section_of_a_k_class_and_a_confidence_model(repo_root):
    """Before: the report had no selective-prediction section (no curve, AURC family, threshold)."""
    k_class = cc.load_predictions(repo_root / "data" / "demo" / "digits_random_forest.csv")
    honest, _ = _systems()
    text = report.build_report([report.ReportModel("rf", k_class), report.ReportModel("honest", honest)], SETTINGS,
                               sections=("data", "selective"))
    assert "Selective prediction: when to abstain" in text and report.chart_count(text) == 1
    rows = {r["model"]: r for r in _data(text)["selective"]}
    for name, p in (("rf", k_class), ("honest", honest)):
        c, y = p.confidence, p.correct
        assert rows[name]["aurc"] == pytest.approx(cc.aurc(c, y), abs=1e-12)
        assert rows[name]["eaurc"] == pytest.approx(cc.eaurc(c, y), abs=1e-12)
        assert rows[name]["augrc"] == pytest.approx(cc.augrc(c, y), abs=1e-12)
        risks = cc.selective_risk(c, y, list(COVERAGES))
        assert list(rows[name]["selective_risk"].values()) == pytest.approx(list(risks))
        found = cc.abstention_threshold(c, y, TARGET_RISK, delta=DELTA)
        assert rows[name]["threshold"]["found"] == found.found and rows[name]["threshold"]["guarantee"] == found.guarantee
    # a confidence model reads its stated confidence (c < 0.5 included), not max(c, 1 - c)
    assert rows["honest"]["reads"] == "stated confidence" and honest.confidence.min() < 0.5


def test_systems_section_matches_items_and_equals_compare_systems():
    honest, sure = _systems(drop=20)
    text = report.build_report([report.ReportModel("honest", honest), report.ReportModel("<b>sure</b>", sure)],
                               SETTINGS, sections=("data", "systems"))
    assert "<h2>Compare systems</h2>" in text and "280 items matched by item id" in text
    assert "<b>sure</b>" not in text.split("id='report-data'")[0]  # the hostile name is escaped
    found = _data(text)["systems"]
    kept = slice(0, 280)
    expected = compare_systems([honest.probs[kept], sure.probs], np.stack([honest.labels[kept], sure.labels]),
                               names=["honest", "<b>sure</b>"], kind="confidence", n_boot=30)
    assert [d["difference"] for d in found["differences"]] == pytest.approx(
        [d.difference for d in expected.differences])
    assert [d["better"] for d in found["differences"]] == [d.better for d in expected.differences]


def test_systems_that_cannot_be_matched_are_refused_in_the_report():
    honest, sure = _systems(drop=20, ids=False)
    text = report.build_report([report.ReportModel("honest", honest), report.ReportModel("sure", sure)], SETTINGS,
                               sections=("data", "systems"))
    assert "These systems cannot be compared" in text and "different numbers of items" in _data(text)["systems"]["error"]
    one = report.build_report([report.ReportModel("honest", honest)], SETTINGS, sections=("data", "systems"))
    assert "Compare systems" not in one  # one confidence model: no section


def test_the_reliability_pages_selective_numbers_read_a_confidence_models_stated_confidence():
    """Before: studio.compute_selective took the top label of [1 - c, c], i.e. max(c, 1 - c) and whether c >= 0.5
    matched the outcome, for a confidence model with stated confidences below one half."""
    from studio import compute_selective

    honest, _ = _systems()
    curve, _band = compute_selective.curve_and_band(honest, "honest-test", 20, 0)
    expected = cc.risk_coverage(honest.confidence, honest.correct)
    assert curve.risk.tolist() == pytest.approx(expected.risk.tolist())
    risk, _, found = compute_selective.selective_numbers(honest, "honest-test", 0.8, 0.3, 0.05)
    assert risk == pytest.approx(float(cc.selective_risk(honest.confidence, honest.correct, [0.8])[0]))
