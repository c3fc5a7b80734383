"""studio.report: the one-file HTML report (numbers equal calib_core's, hashes, escaping) and the CLI's --html."""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.io import load_predictions
from calib_core.validation import CalibrationInputError
from studio import report

DEMO = "digits_random_forest.csv"
HOSTILE = "<script>alert(1)</script>.csv"


def _data(text: str) -> dict:
    return json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])


@pytest.fixture(scope="module")
def demo(repo_root):
    path = repo_root / "data" / "demo" / DEMO
    return path, load_predictions(path)


def test_report_numbers_equal_calib_core(demo):
    path, p = demo
    settings = report.ReportSettings(n_bins=12, binning="adaptive", n_boot=40, seed=3, sensitivity_bins=(5, 10))
    model = report.ReportModel("rf", p, ((DEMO, report.sha256_hex(path)),))
    text = report.build_report([model], settings, sections=("metrics", "verdicts"))
    data = _data(text)
    metrics = {row["key"]: row for row in data["models"][0]["metrics"]}
    expected = cc.metric_report(p.probs, p.labels, n_bins=12, binning="adaptive")
    assert set(metrics) == {spec.key for spec in cc.metrics_of_kind("classes")}
    for key, value in expected.values.items():
        assert metrics[key]["name"] == cc.metric_name(key, n_bins=12, binning="adaptive")
        if value is None:
            assert metrics[key]["estimate"] is None
            continue
        assert metrics[key]["estimate"] == pytest.approx(value, rel=0, abs=0)
        found = cc.metric_interval(key, p.probs, p.labels, n_bins=12, binning="adaptive", n_boot=40, seed=3)
        assert metrics[key]["method"] == found.method
        for ours, theirs in ((metrics[key]["low"], found.low), (metrics[key]["high"], found.high)):
            assert (ours is None and not math.isfinite(theirs)) or ours == theirs
        assert f"<td>{value:.6f}</td>" in text or f"<td>{value:.6f} ⚠ unreliable</td>" in text
    assert metrics["ace"]["estimate"] == pytest.approx(cc.ace(p.probs, p.labels, n_bins=12))
    verdicts = {row["method"]: row for row in data["models"][0]["verdicts"]}
    hl = cc.calibration_test(p.probs, p.labels, method="hosmer_lemeshow")
    assert verdicts["hosmer_lemeshow"]["verdict"] == hl.verdict
    assert verdicts["hosmer_lemeshow"]["p_value"] == hl.p_value
    assert data["settings"]["n_boot"] == 40 and data["settings"]["seed"] == 3
    assert data["settings"]["binning"] == "adaptive" and data["settings"]["n_bins"] == 12
    assert data["calib_core_version"].startswith("0.1.0")


def test_report_marks_estimates_outside_their_bounds_and_shows_the_fixable_part(demo):
    """Issue 23, item 5: on this demo the kernel CE_2^2 (0.19) is above the Brier score (0.134) that bounds it."""
    from calib_core.recalibration.fixable import fixable_part

    path, p = demo
    settings = report.ReportSettings(n_boot=40, seed=3, sensitivity_bins=(5, 10))
    text = report.build_report([report.ReportModel("rf", p, ((DEMO, report.sha256_hex(path)),))], settings,
                               sections=("metrics",))
    entry = _data(text)["models"][0]
    expected = cc.metric_report(p.probs, p.labels).unreliable
    assert set(expected) >= {"kde_ce_kl", "kde_ce_l2"}
    assert {row["key"]: row["unreliable"] for row in entry["metrics"] if row["unreliable"]} == expected
    value = cc.kde_ce(p.probs, p.labels, "l2")
    assert f"<td>{value:.6f} ⚠ unreliable</td>" in text
    assert report._e(f"no: {expected['kde_ce_l2']}") in text
    found = fixable_part(p.probs, p.labels, logits=p.logits, n_boot=40, seed=3)
    assert entry["fixable"]["method"] == found.method and entry["fixable"]["sentence"] == found.sentence()
    assert entry["fixable"]["brier_drop_low"] == found.brier_drop_low > 0
    assert report._e(found.sentence()) in text and "95% interval" in found.sentence()


def test_report_carries_file_hash_and_data_summary(demo):
    path, p = demo
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert report.sha256_hex(path) == digest == report.sha256_hex(path.read_bytes())
    text = report.build_report([report.ReportModel("rf", p, ((DEMO, digest),))],
                               report.ReportSettings(n_boot=0, sensitivity_bins=()), sections=("data",))
    assert digest in text and DEMO in text
    summary = _data(text)["models"][0]["summary"]
    assert summary["n_samples"] == p.n_samples and summary["n_classes"] == p.n_classes
    assert summary["accuracy"] == pytest.approx(float(np.mean(p.probs.argmax(1) == p.labels)))
    assert summary["files"] == [{"name": DEMO, "sha256": digest}]
    assert report.chart_count(text) == 0  # data only: no chart section asked for


def test_report_escapes_hostile_names(demo):
    _, p = demo
    import dataclasses

    hostile = dataclasses.replace(p, class_names=tuple(f"<img src=x onerror=alert({k})>" for k in range(p.n_classes)))
    model = report.ReportModel(HOSTILE, hostile, ((HOSTILE, "0" * 64),), rows="</td><script>x</script>",
                               notes=("<b>note</b>",))
    text = report.build_report([model], report.ReportSettings(n_boot=0, sensitivity_bins=(5, 10)),
                               title="<i>t</i>", sections=("data", "reliability", "per_class", "simplex"))
    assert "<script>alert(1)</script>" not in text
    assert "<img src=x" not in text and "<b>note</b>" not in text and "<i>t</i>" not in text
    assert "</td><script>x" not in text
    assert html_escaped(HOSTILE) in text
    # plotly.js embedded exactly once, no external script or stylesheet
    assert text.count("<script type='text/javascript'>") == 1
    assert "src=\"http" not in text and "src='http" not in text and "cdn.plot.ly" not in text.split("</head>")[1]
    # reliability: top label + one per class; per-class bars; one simplex (K = 10)
    assert report.chart_count(text) == 1 + p.n_classes + 1 + 1


def html_escaped(value: str) -> str:
    import html

    return html.escape(value, quote=True)


def test_report_rejects_bad_sections_and_no_models(demo):
    _, p = demo
    with pytest.raises(CalibrationInputError, match="sections"):
        report.build_report([report.ReportModel("rf", p)], sections=("nope",))
    with pytest.raises(CalibrationInputError, match="models"):
        report.build_report([])


def test_binary_model_has_no_simplex_and_recalibration_is_shown(repo_root):
    p = load_predictions(repo_root / "data" / "demo" / "breast_cancer_svc.csv")
    table = cc.reliability_table(p.probs, p.labels, 10)
    import pandas as pd

    recal = report.Recalibration("svc", pd.DataFrame({"method": ["<temp>"], "ece": [0.01]}),
                                 {"Before": table, "After: temperature": table}, note="calibration split")
    text = report.build_report([report.ReportModel("svc", p)], report.ReportSettings(n_boot=0),
                               sections=("simplex", "recalibration"), recalibration=recal)
    assert report.chart_count(text) == 1  # the before/after diagram only
    assert "&lt;temp&gt;" in text and "<td>0.010000</td>" in text


def test_chart_file_name_is_safe():
    assert report.chart_file_name("Reliability", "digits/rf <1>", 15, "uniform") == "Reliability_digits-rf-1_15_uniform"
    assert report.chart_file_name("", None) == "chart"
    assert report.report_file_name("everything", ["../x y"]) == "calibration_report_everything_x-y.html"


def test_cli_writes_the_html_report(repo_root, tmp_path, capsys):
    src = repo_root / "data" / "demo" / "breast_cancer_svc.csv"
    hostile = tmp_path / HOSTILE.replace("/", "_")
    hostile.write_bytes(src.read_bytes())
    out = tmp_path / "out.html"
    status = main(["report", str(hostile), "--html", str(out), "--n-boot", "20", "--n-bins", "10"])
    assert status == 0
    text = out.read_text(encoding="utf-8")
    assert hashlib.sha256(src.read_bytes()).hexdigest() in text
    assert "<script>alert(1)</script>" not in text
    data = _data(text)
    p = load_predictions(src)
    ece = {row["key"]: row for row in data["models"][0]["metrics"]}["ece"]
    assert ece["estimate"] == cc.ece(p.probs, p.labels, n_bins=10)
    assert f"{report.chart_count(text)} charts" in capsys.readouterr().out
    # The recalibration section: calib_core's verdict and margin over the runner-up, with the CLI's resamples and seed.
    from calib_core.recalibration import recommendation

    found = recommendation.compare_methods(p.probs, p.labels, logits=p.logits, split=p.split, split_names=p.split_names,
                                    class_names=list(p.class_names), n_boot=20, seed=0).recommendation
    (entry,) = data["recalibration"]
    name = data["models"][0]["summary"]["name"]
    assert entry["verdict"] == found.sentence(name, markdown=False) and entry["recommended"] == found.method
    assert entry["comparison"] == found.comparison(markdown=False)
    assert html_escaped(entry["verdict"]) in text and f"After: {found.method}" in text


def test_cli_html_errors_are_one_line_exit_2(repo_root, tmp_path, capsys, monkeypatch):
    src = str(repo_root / "data" / "demo" / "breast_cancer_svc.csv")
    assert main(["report", src, src]) == 2  # several files without --html
    assert main(["report", src, "--html", str(tmp_path / "missing" / "x.html"), "--n-boot", "0"]) == 2
    import sys

    import studio

    # plotly not installed: a fresh import of studio.report fails on it
    monkeypatch.delattr(studio, "report")
    monkeypatch.delitem(sys.modules, "studio.report")
    monkeypatch.setitem(sys.modules, "plotly.io", None)
    status = main(["report", src, "--html", str(tmp_path / "y.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err[-1].startswith("calib-core: error: --html needs plotly") and "calib-core[report]" in err[-1]


# ----------------------------------------------------------------------------- the app's reports (issue 23, item 7)

def _hostile_upload(repo_root) -> tuple[str, bytes]:
    return "upload <b>svc</b>.csv", (repo_root / "data" / "demo" / "breast_cancer_svc.csv").read_bytes()


def test_the_data_pages_report_of_everything_has_the_upload_hash_and_a_recalibration_section(repo_root, monkeypatch):
    """The Data page's "report of everything" lists a recalibration section: it must have one (the verdict from
    calib_core, the winner against the runner-up, the recommended method's diagram), and the uploaded file's
    SHA-256 as the CLI's report has it."""
    from streamlit.testing.v1 import AppTest

    from calib_core.recalibration import recommendation
    from tests.app_support import APP, DeferredDownloads

    downloads = DeferredDownloads.install(monkeypatch)
    file_name, raw = _hostile_upload(repo_root)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.file_uploader(key="data:uploads").upload(file_name, raw, "text/csv")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = downloads.get(at, "Download report of everything (HTML)").decode()
    data = _data(text)
    assert hashlib.sha256(raw).hexdigest() in text
    assert {"name": file_name, "sha256": hashlib.sha256(raw).hexdigest()} in data["models"][0]["summary"]["files"]
    assert "<h2>Recalibration</h2>" in text
    # The verdict is calib_core's, on the same rows with the page's first settings and the report's resamples.
    p = load_predictions(raw, name=file_name)
    found = recommendation.compare_methods(p.probs, p.labels, logits=p.logits, split=p.split, split_names=p.split_names,
                                    class_names=list(p.class_names), n_boot=200, seed=0)
    name = data["models"][0]["summary"]["name"]
    rec = found.recommendation
    assert rec.method is not None
    (entry,) = data["recalibration"]
    assert entry["recommended"] == rec.method and entry["verdict"] == rec.sentence(name, markdown=False)
    assert entry["comparison"] == rec.comparison(markdown=False) and entry["margin"]["n_boot"] == 200
    for line in (rec.sentence(name, markdown=False), rec.comparison(markdown=False)):
        assert html_escaped(line) in text
    assert html_escaped(f"After: {rec.method}") in text
    assert "<b>svc</b>" not in text


def test_the_report_of_everything_follows_the_recalibration_pages_settings(monkeypatch):
    """The Data page's report makes its recalibration section with the settings the Recalibration page has in this
    session (methods, seed, resamples), so the two say the same."""
    from streamlit.testing.v1 import AppTest

    from calib_core.io import load_demo
    from calib_core.recalibration import recommendation
    from calib_core.recalibration.compare import Protocol
    from tests.app_support import APP, DeferredDownloads

    downloads = DeferredDownloads.install(monkeypatch)
    methods = ["Temperature scaling", "Isotonic regression"]
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["demo"] = "breast_cancer_svc"
    at.session_state["recal_boot"] = 50
    at.session_state["recal_seed"] = 3
    at.session_state["methods"] = methods
    at.switch_page("pages/6_Recalibration.py").run()
    assert not at.exception
    at.switch_page("app.py").run()
    assert not at.exception and not at.error
    text = downloads.get(at, "Download report of everything (HTML)").decode()
    p = load_demo("breast_cancer_svc")
    found = recommendation.compare_methods(p.probs, p.labels, logits=p.logits, split=p.split, split_names=p.split_names,
                                    class_names=list(p.class_names), methods=methods, n_boot=50, seed=3,
                                    protocol=Protocol(seed=3)).recommendation
    (entry,) = _data(text)["recalibration"]
    assert entry["verdict"] == found.sentence("breast_cancer_svc", markdown=False)
    assert entry["margin"]["n_boot"] == 50 and "Temperature scaling, Isotonic regression" in text


def test_the_recalibration_section_escapes_names_and_says_when_intervals_are_missing(repo_root):
    p = load_predictions(repo_root / "data" / "demo" / "breast_cancer_svc.csv")
    text = report.build_report([report.ReportModel(HOSTILE, p)], report.ReportSettings(n_boot=0),
                               sections=("recalibration",))
    assert "<script>alert(1)</script>" not in text and html_escaped(HOSTILE) in text
    (entry,) = _data(text)["recalibration"]
    assert entry["margin"] is None and entry["verdict"].startswith(HOSTILE)
    assert html_escaped(entry["verdict"]) in text
    if entry["runner_up"] is not None:
        assert "needs the bootstrap intervals" in entry["comparison"]
    assert "no bootstrap intervals" in entry["note"] and report.chart_count(text) == 1


def test_the_page_and_the_report_write_one_comparison_note():
    """Issue 24: the Recalibration page's report entry and the report's own comparison built the note twice."""
    from calib_core.recalibration.recommendation import compare_methods
    from studio.recalibration import charts

    demo = cc.load_demo("iris_svc")
    found = compare_methods(demo.probs, demo.labels, methods=("Temperature scaling",), n_boot=0, seed=0)
    note = report.comparison_note(found.protocol_sentence, found.ev, found.fits, n_boot=0, seed=0)
    assert note.startswith(found.protocol_sentence) and "no bootstrap intervals." in note
    assert f"{found.ev.labels.size:,} evaluation rows." in note
    assert "200 paired bootstrap resamples, seed 3." in report.comparison_note("", found.ev, found.fits, n_boot=200,
                                                                              seed=3)
    skipped = report.comparison_note("", found.ev, found.fits, n_boot=0, seed=0, skipped_seconds=90.0,
                                     budget_seconds=30.0)
    assert "no bootstrap intervals (predicted 90 s, over the 30 s budget)." in skipped
    assert "report.comparison_note(" in __import__("inspect").getsource(charts.report_entry)


def test_the_reports_metrics_compute_each_estimate_once(demo, monkeypatch):
    """Issue 24: the report's metrics section had metric_report compute every estimate, then metric_interval
    compute it again; the interval now takes the estimate it has (same numbers: test_report_numbers_equal_calib_core)."""
    from tests.registry_support import count_computes

    _, p = demo
    keys = ("ece", "ace", "nll", "ks")
    calls = count_computes(monkeypatch, keys)
    rows = report._metrics(report.ReportModel("rf", p), report.ReportSettings(n_bins=9, n_boot=20, seed=1))
    assert sorted(calls) == sorted(keys)
    assert {row["key"] for row in rows} >= set(keys)


def test_the_reports_comparison_note_flags_exact_zeros():
    """Issue 27: a method that can emit exact zeros is flagged in the report beside its NLL, as on the page."""
    from calib_core.recalibration import compare
    from calib_core.recalibration.recommendation import compare_methods

    demo = cc.load_demo("iris_svc")
    found = compare_methods(demo.probs, demo.labels, methods=("Temperature scaling", "Isotonic regression"),
                            n_boot=0, seed=0)
    note = report.comparison_note(found.protocol_sentence, found.ev, found.fits, n_boot=0, seed=0)
    flags = compare.zero_hazards(found.ev, found.fits)
    assert list(flags) == ["Isotonic regression"] and flags["Isotonic regression"].sentence in note
    assert "Isotonic regression (floored)" in note and "Temperature scaling can" not in note
