"""A confidence model on the app's surfaces: the HTML report's confidence sections, the Data card, the pages that
do not apply (issue 26). The numbers are those of tests/io/test_confidence_files.py::known_file."""
import pytest

import calib_core as cc
from studio import report
from tests.app_support import assert_clean
from tests.io.test_confidence_files import known_file



@pytest.fixture(scope="module")
def known():
    return cc.load_predictions(known_file(), name="answers.csv")


def test_report_data_of_a_confidence_model(known):
    data = report.report_data([report.ReportModel("answers", known)], report.ReportSettings(n_boot=20),
                              sections=("metrics",))
    entry = data["models"][0]
    assert entry["summary"]["kind"] == "confidence"
    assert entry["summary"]["accuracy"] == pytest.approx(0.674)
    metrics = {row["key"]: row for row in entry["metrics"]}
    assert metrics["conf_ece"]["estimate"] == pytest.approx(0.082)
    assert metrics["conf_accuracy"]["estimate"] == pytest.approx(0.674)
    assert "ece" not in metrics and "accuracy" not in metrics
    assert metrics["conf_overconfidence"]["low"] <= metrics["conf_overconfidence"]["estimate"]


def test_html_report_has_the_confidence_sections_and_no_class_charts(known):
    text = report.build_report([report.ReportModel("answers", known)], report.ReportSettings(n_boot=0),
                               sections=("data", "metrics", "reliability", "per_class", "sensitivity", "simplex",
                                         "recalibration"))
    assert "confidence model" in text and "ECE, 10 equal-width bins (headline)" in text
    assert "Stated confidence (confidence models)" in text
    assert "Per-class ACE (adaptive ranges)" not in text and "Top-label reliability" not in text


def _open(page, model):
    from tests.app_support import open_with_model

    return open_with_model(page, model, timeout=120)


def test_data_card_shows_the_confidence_headline(known):
    app = _open("app.py", known)
    assert_clean(app)
    labels = [m.label for m in app.metric]
    assert "ECE, 10 equal-width bins (headline)" in labels and "Kind" in labels
    assert "Classes (K)" not in labels
    accuracy = next(m for m in app.metric if m.label == "Accuracy")
    assert accuracy.value == "67.4%"  # the system's accuracy, not 82.2 % (predicting correctness)
    ece = next(m for m in app.metric if m.label == "ECE, 10 equal-width bins (headline)")
    assert float(ece.value) == pytest.approx(0.082, abs=5e-5)


def test_metrics_page_shows_the_confidence_metrics(known):
    app = _open("pages/1_Metrics.py", known)
    assert_clean(app)
    shown = " ".join(str(frame.value.to_dict()) for frame in app.dataframe)
    assert "ECE, 10 equal-width bins (headline)" in shown and "Overconfidence" in shown
    assert "Class-wise ECE" not in shown


@pytest.mark.parametrize("page", ["pages/3_Per-class.py", "pages/5_Simplex.py",
                                  "pages/4_Bin_sensitivity.py", "pages/7_Estimators.py"])
def test_pages_that_need_classes_say_why_plainly(page, known):
    app = _open(page, known)
    assert not app.exception, [e.value for e in app.exception]
    assert any("is a confidence model" in info.value for info in app.info)


def test_a_long_upload_adds_one_model_per_system_matched_by_id():
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from studio import state

        names = state.add_upload("long.csv", b"question_id,model,confidence,correct\nq1,a,0.9,1\nq2,a,0.6,0\n"
                                             b"q3,a,0.7,1\nq2,b,0.8,1\nq1,b,0.4,0\n")
        entries = state.get_entries()
        st.text(names)
        for name in names.split(", "):
            st.text(f"{name}:{entries[name].predictions.kind}:{','.join(entries[name].predictions.ids)}")

    app = AppTest.from_function(script, default_timeout=60).run()
    assert not app.exception, [e.value for e in app.exception]
    assert [t.value for t in app.text] == ["a, b", "a:confidence:q1,q2", "b:confidence:q1,q2"]
