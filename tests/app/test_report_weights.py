"""The HTML report of a weighted model (issue 28): its metrics, intervals, tests, reliability and per-class charts
are weighted exactly as the Metrics, Reliability and Per-class pages are (the same calib_core calls, so the same
digits); the sections whose calib_core functions take no weights say so, with the pages' reasons; the CLI's
``--html --weight-column`` writes that report."""
from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.io import Predictions, load_predictions
from studio import compute, report, report_confidence, state
from studio.weights_reasons import REPORT_UNWEIGHTED

SETTINGS = report.ReportSettings(n_bins=10, binning="uniform", n_boot=10, seed=4, n_resamples=100,
                                 sensitivity_bins=(5, 10), simplex_bins=4)


def _data(text: str) -> dict:
    return json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])


def _frame(n: int = 150, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), n)
    truth = probs ** 2 / (probs ** 2).sum(1, keepdims=True)  # over-confident: the weights move every metric
    labels = (rng.random(n)[:, None] > np.cumsum(truth, 1)).sum(1)
    return pd.DataFrame({"p_a": probs[:, 0], "p_b": probs[:, 1], "p_c": probs[:, 2], "label": labels,
                         "w": 1 + (labels + np.arange(n)) % 4})


@pytest.fixture(scope="module")
def weighted() -> Predictions:
    frame = _frame()
    return Predictions.from_arrays(frame[["p_a", "p_b", "p_c"]].to_numpy(), frame["label"].to_numpy(),
                                   sample_weight=frame["w"].to_numpy(float), name="clinic")


def test_the_reports_metrics_and_tests_equal_the_metrics_page_for_a_weighted_model(weighted):
    """Before: the report called metric_report, metric_interval and calibration_test without the weights."""
    p, w = weighted, weighted.sample_weight
    data = report.report_data([report.ReportModel("clinic", p)], SETTINGS, sections=("metrics", "verdicts"))
    rows = {row["key"]: row for row in data["models"][0]["metrics"]}
    view = state.ModelView("clinic", p, state.fingerprint(p), "all rows")
    table, jobs = compute.estimates_table([view], n_bins=10, binning="uniform", n_boot=10, seed=4, alpha=0.05)
    for job in jobs:  # the Metrics page's intervals, as it fills them
        compute.fill_interval(table, job, job.compute())
    direct = cc.metric_report(p.probs, p.labels, n_bins=10, binning="uniform", sample_weight=w)
    unweighted = cc.metric_report(p.probs, p.labels, n_bins=10, binning="uniform")
    assert len(table) == len(rows)
    for page in table.itertuples():
        ours = rows[page.key]
        if np.isnan(page.estimate):
            assert ours["estimate"] is None and direct.values[page.key] is None, page.key
            continue
        assert ours["estimate"] == page.estimate == direct.values[page.key], page.key  # to the digit
        for mine, theirs in ((ours["low"], page.ci_low), (ours["high"], page.ci_high)):
            assert (mine is None and not np.isfinite(theirs)) or mine == theirs, page.key
    assert rows["ece"]["estimate"] != unweighted.values["ece"]  # the weights were used
    assert rows["ece"]["estimate"] == cc.ece(p.probs, p.labels, n_bins=10, sample_weight=w)
    for row in data["models"][0]["verdicts"]:
        options = {"n_resamples": 100} if row["method"] == "consistency" else {}
        found = cc.calibration_test(p.probs, p.labels, method=row["method"], seed=4, sample_weight=w, **options)
        assert (row["statistic"], row["p_value"], row["verdict"]) == (found.statistic, found.p_value, found.verdict)
    assert data["weights"] == {"models": {"clinic": {"column": p.weight_column, "sum_weight": float(w.sum())}},
                               "unweighted": {key: reason for key, (_, reason) in REPORT_UNWEIGHTED.items()}}


def test_the_reports_reliability_and_per_class_charts_are_the_pages_weighted_tables(weighted):
    p = weighted
    fp = state.fingerprint(p)
    charts = report._figures([report.ReportModel("clinic", p)], SETTINGS, ("reliability", "per_class"))
    top = next(fig for _, caption, fig in charts if caption.startswith("Top-label"))
    trace = next(t for t in top.data if t.customdata is not None)
    page = compute.reliability(p, fp, 10, "uniform")
    shown = page[page["count"] > 0]
    np.testing.assert_array_equal(trace.customdata[:, 2], shown["count"])  # summed weights, not rows
    assert shown["count"].sum() == p.sample_weight.sum()
    per_class = next(fig for section, _, fig in charts if section == "per_class")
    ace = compute.per_class(p, fp, 10, "uniform")["ace"].to_numpy()
    assert any(np.allclose(np.asarray(t.y, float), ace) for t in per_class.data if t.y is not None)
    assert not np.allclose(ace, cc.per_class_table(p.probs, p.labels, 10, "uniform")["ace"])


def test_the_unweighted_sections_say_so_with_the_pages_reasons(weighted):
    model = report.ReportModel("clinic", weighted)
    text = report.build_report([model], SETTINGS, sections=("sensitivity", "simplex", "selective"))
    total = float(weighted.sample_weight.sum())
    assert f"<b>Row weights</b>: clinic by column weight (total weight {total:,.6g})" in text
    # the data table's N and accuracy count rows: it says so, next to the column and the total weight
    assert f"<td>row weights</td><td>column weight, total weight {total:,.6g}; the metrics, tests and charts are " \
        "weighted" in text
    assert _data(text)["models"][0]["summary"]["sum_weight"] == total
    # the page's own sentence; Bin sensitivity is weighted (cc.bin_sensitivity(sample_weight=)), as its page
    # Simplex is weighted (cc.simplex_reliability(sample_weight=)), as its page
    assert f"<h2>{report._TITLES['simplex']}</h2><p class='note unweighted'>" not in text
    assert f"<h2>{report._TITLES['sensitivity']}</h2><p class='note unweighted'>" not in text
    # selective prediction is weighted (risk_coverage, its band and abstention_threshold take sample_weight)
    assert "Selective prediction: when to abstain</h2><p class='note unweighted'>" not in text
    assert "Unweighted" not in report._fixable(model, SETTINGS)["sentence"]  # weighted (fixable_part(sample_weight=))
    plain = Predictions.from_arrays(weighted.probs, weighted.labels, name="plain")
    text = report.build_report([report.ReportModel("plain", plain)], SETTINGS, sections=("sensitivity",))
    assert "Unweighted" not in text and "weights" not in _data(text)


def test_the_reports_selective_section_is_weighted(weighted):
    """Before: the report's selective prediction counted rows and said so ('Unweighted')."""
    p, w = weighted, weighted.sample_weight
    rows, curves, bands, chosen = report_confidence.selective_data([report.ReportModel("clinic", p)], SETTINGS)
    expected = cc.risk_coverage(p.confidence, p.correct, sample_weight=w)
    np.testing.assert_array_equal(curves["clinic"].risk, expected.risk)
    assert not np.array_equal(expected.risk, cc.risk_coverage(p.confidence, p.correct).risk)
    band = cc.risk_coverage_band(p.confidence, p.correct, n_boot=min(SETTINGS.n_boot, 200), alpha=SETTINGS.alpha,
                                 seed=SETTINGS.seed, sample_weight=w)
    np.testing.assert_array_equal(bands["clinic"].low, band.low)
    found = cc.abstention_threshold(p.confidence, p.correct, report_confidence.TARGET_RISK,
                                    delta=report_confidence.DELTA, sample_weight=w)
    assert chosen["clinic"] == found and rows[0]["threshold"]["guarantee"] == found.guarantee
    assert rows[0]["aurc"] == cc.aurc(p.confidence, p.correct, sample_weight=w)
    risks = cc.selective_risk(p.confidence, p.correct, list(report_confidence.COVERAGES), sample_weight=w)
    assert list(rows[0]["selective_risk"].values()) == [float(r) for r in risks]


def test_the_reports_bin_sensitivity_is_the_pages_weighted_sweep(weighted):
    """The Bin sensitivity page weights its sweep (cc.bin_sensitivity(sample_weight=)); the report's chart is the
    same sweep, not the unweighted one it drew before."""
    charts = report._figures([report.ReportModel("clinic", weighted)], SETTINGS, ("sensitivity",))
    sweep = cc.bin_sensitivity(weighted.probs, weighted.labels, bin_counts=SETTINGS.sensitivity_bins,
                               sample_weight=weighted.sample_weight)
    plain = cc.bin_sensitivity(weighted.probs, weighted.labels, bin_counts=SETTINGS.sensitivity_bins)
    ece = sweep[(sweep["metric"] == "ece") & (sweep["binning"] == "uniform")]["value"].to_numpy()
    unweighted = plain[(plain["metric"] == "ece") & (plain["binning"] == "uniform")]["value"].to_numpy()
    assert not np.allclose(ece, unweighted)
    figure = next(fig for section, _, fig in charts if section == "sensitivity")
    assert any(t.y is not None and np.allclose(np.asarray(t.y, float), ece) for t in figure.data)


def test_cli_html_with_a_weight_column_writes_the_weighted_report(tmp_path, capsys, monkeypatch):
    """Before: --html refused --weight-column ("--html does not weight its numbers yet")."""
    # A short bin-sensitivity sweep and few consistency resamples keep the test fast (neither is weighted).
    monkeypatch.setattr(report, "ReportSettings", functools.partial(report.ReportSettings, sensitivity_bins=(5, 10),
                                                                    n_resamples=100))
    path = tmp_path / "w <b>.csv"
    _frame().to_csv(path, index=False)
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--weight-column", "w", "--html", str(out), "--n-boot", "10",
                 "--n-bins", "10"]) == 0
    text = out.read_text(encoding="utf-8")
    data = _data(text)
    p = load_predictions(path, weight_column="w")
    ece = {row["key"]: row for row in data["models"][0]["metrics"]}["ece"]
    assert ece["estimate"] == cc.ece(p.probs, p.labels, n_bins=10, sample_weight=p.sample_weight)
    assert data["weights"]["models"]["w <b>"] == {"column": "w", "sum_weight": float(p.sample_weight.sum())}
    assert "Row weights" in text and "by column w" in text
    assert "wrote" in capsys.readouterr().out


def test_cli_html_weighted_decisions_section_is_the_weighted_decision_curve(tmp_path, monkeypatch):
    """Before: the section said that it takes no row weights (the decision curve counted rows). Now the report's
    decision curve and value are calib_core.decision_curve / recalibration_value with the weights, as the
    Deployment page's."""
    monkeypatch.setattr(report, "ReportSettings", functools.partial(report.ReportSettings, sensitivity_bins=(5, 10),
                                                                    n_resamples=100))  # fast
    rng = np.random.default_rng(0)
    p1 = rng.beta(1.2, 2.0, 120)
    path, out = tmp_path / "test.csv", tmp_path / "r.html"
    pd.DataFrame({"p_no": 1 - p1, "p_yes": p1, "label": np.where(rng.random(120) < p1, "yes", "no"),
                  "w": 1.0 + 3.0 * (p1 > 0.5)}).to_csv(path, index=False)
    assert main(["report", str(path), "--weight-column", "w", "--threshold", "0.3", "--n-boot", "5",
                 "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<h2>Decisions</h2>" in text and "takes no row weights" not in text
    assert "<b>Row weights</b>" in text
    p = load_predictions(path, weight_column="w")
    section = _data(text)["decisions"][0]["decisions"]
    curve = cc.decision_curve(p.probs, p.labels, n_boot=5, seed=report.ReportSettings().seed,
                              sample_weight=p.sample_weight)
    plain = cc.decision_curve(p.probs, p.labels, n_boot=0)
    np.testing.assert_allclose(section["curve"]["before"], curve.table["before"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(section["curve"]["after"], curve.table["after"], rtol=0, atol=1e-12)
    assert not np.allclose(section["curve"]["before"], plain.table["before"])
    value = cc.recalibration_value(p.probs, p.labels, threshold=0.3, n_boot=5, seed=report.ReportSettings().seed,
                                   sample_weight=p.sample_weight)
    assert section["value"]["value"] == pytest.approx(value.value, abs=1e-12) and section["weighted"] is True
    assert "each row counted by its weight" in section["value"]["sentence"]
