"""The Recalibration page on a confidence model (issue 26, deliverable 3): maps of the stated confidence, judged by
the ECE, Brier score, NLL and AURC of confidence against correctness, with no accuracy change."""
from __future__ import annotations

import pytest

from calib_core.io import load_demo
from calib_core.recalibration.compare import Protocol
from calib_core.recalibration.confidence import DEFAULT_CONFIDENCE_METHODS, compare_confidence
from tests import app_support
from tests.app_support import assert_clean

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

DEMO = "confidence_digits_random_forest"


@pytest.fixture(scope="module")
def page():
    app = app_support.open_link("pages/6_Recalibration.py", timeout=120, query={"demo": DEMO},
                                session_values={"recal_boot": 0})
    assert_clean(app)
    return app


def test_the_page_recalibrates_a_confidence_model_with_its_own_metrics(page):
    summary = page.dataframe[0].value
    summary = getattr(summary, "data", summary)  # a Styler's frame
    assert "Δ accuracy" not in summary.columns and not any("ccuracy" in str(c) for c in summary.columns)
    assert "ECE, 10 equal-width bins (headline)" in summary.columns and "AURC (confidence)" in summary.columns
    assert set(DEFAULT_CONFIDENCE_METHODS) <= set(summary.index)
    demo = load_demo(DEMO)
    found = compare_confidence(demo.confidence, demo.correct, split=demo.split, split_names=demo.split_names,
                               n_boot=0, protocol=Protocol())
    verdict = " ".join(m.value for m in page.markdown)
    assert f"**{found.recommendation.method}** helps most" in verdict
    assert "accuracy +" not in verdict and "accuracy −" not in verdict and "accuracy -" not in verdict
    assert summary.loc[found.recommendation.method, "ECE, 10 equal-width bins (headline)"] == pytest.approx(
        found.recommendation.after["ece"])


def test_the_page_says_why_no_accuracy_changes_and_how_each_map_treats_the_ranking(page):
    infos = " ".join(i.value for i in page.info)
    assert "is a confidence model" in infos and "cannot change" in infos
    captions = " ".join(c.value for c in page.caption)
    assert "keeps the order of the confidences" in captions and "AURC" in captions
    assert "Reliability of the stated confidence" in captions
    assert not any(s.value == "Temperature surface" for s in page.subheader)  # a view of class probabilities


def test_the_html_report_recalibrates_a_confidence_model_without_an_accuracy_claim():
    from studio import report

    demo = load_demo(DEMO)
    made = report.recalibration_of(report.ReportModel("answers", demo), report.ReportSettings(n_boot=0))
    assert set(made.table["key"]) >= {"conf_ece", "conf_brier", "conf_aurc"} and "accuracy" not in set(made.table["key"])
    assert "accuracy" not in made.recommendation.sentence("answers", markdown=False)
    found = compare_confidence(demo.confidence, demo.correct, split=demo.split, split_names=demo.split_names, n_boot=0)
    assert made.recommendation.method == found.recommendation.method


def test_methods_that_need_class_probabilities_are_named_as_not_fitted():
    app = app_support.open_link("pages/6_Recalibration.py", timeout=120, query={"demo": DEMO},
                                session_values={"recal_boot": 0, "methods": ["Vector scaling"]})
    assert not app.exception, [e.value for e in app.exception]
    infos = " ".join(i.value for i in app.info)
    assert "Not fitted on it: Vector scaling" in infos
    assert any("No method could be fitted" in e.value for e in app.error)
