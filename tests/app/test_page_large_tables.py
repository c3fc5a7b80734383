"""Large tables page (issue 7, item 6): a CLI summary JSON viewed without the rows."""
from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.engines.evaluate import evaluate_arrays
from calib_core.io import load_demo
from studio.state import DEFAULT_DEMO

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/9_Large_tables.py"


def open_page() -> AppTest:
    return app_support.open_link(PAGE, timeout=60)


def spec(at: AppTest, key_part: str) -> dict:
    for chart in at.get("plotly_chart"):
        if key_part in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no chart {key_part}")


def demo_summary_json() -> bytes:
    demo = load_demo(DEFAULT_DEMO)
    evaluation = evaluate_arrays(demo.probs, demo.labels, class_names=demo.class_names)
    return json.dumps({"statistics": evaluation.summary()}).encode()


def test_page_explains_the_limit_shows_the_demo_summary_and_waits_when_it_is_off():
    at = open_page()
    assert not at.exception and not at.error
    assert any("calib-core report" in c.value for c in at.code)
    assert len(at.get("plotly_chart")) == 3
    at.toggle[0].set_value(False)
    at.run()
    assert any("Upload a summary JSON" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_uploaded_summary_draws_the_same_reliability_table_as_the_rows():
    at = open_page()
    at.file_uploader[0].set_value(("summary.json", demo_summary_json(), "application/json"))
    at.run()
    assert not at.exception and not at.error
    demo = load_demo(DEFAULT_DEMO)
    expected = cc.reliability_table(demo.probs, demo.labels, n_bins=15)
    traces = [t for t in spec(at, "summary_reliability")["data"] if t.get("name") == "summary"]
    assert traces, "reliability trace missing"
    metrics = at.dataframe[0].value
    assert metrics.set_index("metric").loc["ece", "value"] == pytest.approx(cc.ece(demo.probs, demo.labels))
    assert len(at.get("plotly_chart")) == 3
    np.testing.assert_allclose(sorted(expected["count"]), sorted(
        cc.load_summary(demo_summary_json()).reliability_table("top_label", 15)["count"]))


def test_adaptive_bins_and_per_class_ace_come_from_the_summary():
    at = open_page()
    next(r for r in at.radio if r.label == "Bins").set_value("adaptive")
    at.run()
    assert not at.exception and not at.error
    demo = load_demo(DEFAULT_DEMO)
    per_class = spec(at, "summary_per_class")
    ace_trace = per_class["data"][0]
    from tests.app.test_app import values
    np.testing.assert_allclose(values(ace_trace["y"]), cc.ace(demo.probs, demo.labels, per_class=True), atol=1e-12)


@pytest.mark.parametrize("raw", [b"not json", b'{"format": "something else"}', b"{}"])
def test_bad_summary_gives_a_message(raw):
    at = open_page()
    at.file_uploader[0].set_value(("bad.json", raw, "application/json"))
    at.run()
    assert not at.exception
    assert at.error and "could not be read" in at.error[0].value


def test_weighted_summary_says_its_weight_column_and_draws_weighted_counts():
    """A summary written with --weight-column (issue 28) names its column as plain text; counts are weights."""
    demo = load_demo(DEFAULT_DEMO)
    weights = np.arange(demo.labels.size) % 3 + 1.0
    evaluation = evaluate_arrays(demo.probs, demo.labels, class_names=demo.class_names, sample_weight=weights,
                                 weight_column="**w**")
    at = open_page()
    at.file_uploader[0].set_value(("summary.json", json.dumps(evaluation.summary()).encode(), "application/json"))
    at.run()
    assert not at.exception and not at.error
    header = next(m.value for m in at.markdown if "weighted by column" in m.value)
    assert "\\*\\*w\\*\\*" in header and f"{weights.sum():,.6g}" in header
    metrics = at.dataframe[0].value
    assert metrics.set_index("metric").loc["ece", "value"] == pytest.approx(
        cc.ece(demo.probs, demo.labels, sample_weight=weights), rel=1e-12)
