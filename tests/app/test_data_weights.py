"""The Data page's "Weight column" (issue 28): the select offers the file's extra columns of numbers >= 0, the
reload reads them as row weights, the weighted pages compute with them and say so, the others say they show
unweighted numbers and why, and the choice survives a session file. Names are plain text."""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from app_support import APP, assert_clean
from calib_core.io import load_predictions
from calib_core.io.unlabelled import weight_candidates
from studio import session_file as sf
from studio import state

TIMEOUT = 120
NAME = "w*ts_[x]"


def _csv(rows: int = 80) -> bytes:
    lines = [f"label,p_a,p_b,{NAME},age,delta,site"]
    for i in range(rows):
        p = 0.2 + 0.6 * ((i * 7) % 10) / 10
        lines.append(f"{int((i * 3) % 5 < 3)},{1 - p:.3f},{p:.3f},{1 + i % 4},{20 + i},{i % 3 - 1},s{i % 2}")
    return ("\n".join(lines) + "\n").encode()


def test_weight_candidates_are_the_extra_columns_of_numbers_at_least_zero():
    assert weight_candidates(_csv(), "f.csv", ("a", "b")) == [NAME, "age"]  # not delta (< 0), site, labels, classes
    assert weight_candidates(_csv(), "f.csv", ("a", "b"), (NAME,)) == ["age"]
    assert weight_candidates(b"\x00\x01", "f.npy", ("a", "b")) == []


def test_data_page_weight_column_reloads_with_weights_and_the_pages_use_them():
    raw = _csv()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    at.file_uploader[0].set_value(("clinic.csv", raw, "text/csv")).run()
    select = at.selectbox(key="data:map:clinic:weights")
    assert select.options == ["(no weights)", NAME, "age"] and select.value == "(no weights)"
    before = at.session_state[state.APP_KEY].models["clinic"].fingerprint
    select.set_value(NAME)
    at.button(key="data:map:clinic:submit").click().run()
    assert_clean(at)
    model = at.session_state[state.APP_KEY].models["clinic"]
    weights = 1 + np.arange(80) % 4
    np.testing.assert_array_equal(model.predictions.sample_weight, weights)
    assert dict(model.options)["weight_column"] == NAME and model.fingerprint != before
    # the Data page says its numbers are weighted, with the column name as plain text
    notes = [c.value for c in at.caption if "Row weights" in c.value]
    assert notes and "w\\*ts\\_\\[x\\]" in notes[0] and "weighted" in notes[0]
    assert any("**Row weights:** column w\\*ts\\_\\[x\\] (total 200)" in m.value for m in at.markdown)

    at.switch_page("pages/2_Reliability.py").run()
    assert_clean(at)
    p = model.predictions
    table = cc.reliability_table(p.probs, p.labels, 15, "uniform", sample_weight=weights)
    unweighted = cc.reliability_table(p.probs, p.labels, 15, "uniform")
    assert not table["count"].equals(unweighted["count"])
    from studio import compute
    shown = compute.reliability(p, model.fingerprint, 15, "uniform")
    np.testing.assert_allclose(shown["count"], table["count"])
    assert compute.reliability_ece(p, model.fingerprint, 15, "uniform") == pytest.approx(
        cc.ece(p.probs, p.labels, sample_weight=weights))

    at.switch_page("pages/1_Metrics.py").run()
    assert_clean(at)
    assert any("Row weights" in c.value for c in at.caption)
    report = compute.metric_estimates(p, model.fingerprint, 15, "uniform")
    assert report.values["brier"] == pytest.approx(cc.brier_score(p.probs, p.labels, sample_weight=weights))
    assert report.values["brier"] != pytest.approx(cc.brier_score(p.probs, p.labels))

    at.switch_page("pages/7_Estimators.py").run()
    warnings = [w.value for w in at.warning if "Row weights" in w.value]
    assert warnings and "unweighted" in warnings[0] and "estimator comparisons" in warnings[0]


def test_the_data_headlines_accuracy_is_weighted_like_its_ece():
    """Before: the Data card's accuracy was the unweighted share of rows beside weighted ECE and ACE (50.0 %
    here instead of the weighted 23.5 %)."""
    lines = ["label,p_a,p_b,w"] + [f"{i % 2},0.3,0.7,{1 + 9 * (i % 2 == 0 and i < 10)}" for i in range(40)]
    raw = ("\n".join(lines) + "\n").encode()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    at.file_uploader[0].set_value(("acc.csv", raw, "text/csv")).run()
    at.selectbox(key="data:map:acc:weights").set_value("w")
    at.button(key="data:map:acc:submit").click().run()
    assert_clean(at)
    p = at.session_state[state.APP_KEY].models["acc"].predictions
    weighted = cc.metric_value("accuracy", p.probs, p.labels, sample_weight=p.sample_weight)
    shown = [m.value for m in at.metric if m.label == "Accuracy"]  # (the other card is the default demo's)
    assert f"{weighted:.1%}" in shown and f"{p.accuracy:.1%}" not in shown


def test_a_session_file_keeps_the_weight_column():
    """Before: `weight_column` was not an allowed load option, so a weighted session could not be restored."""
    raw = _csv()
    options = (("weight_column", NAME),)
    predictions = load_predictions(raw, name="clinic.csv", **dict(options))  # as studio.compute.load_file
    model = sf.SessionModel(name="clinic", origin="upload", file_name="clinic.csv", source=raw, options=options,
                            fixes=(), probs=predictions.probs, labels=predictions.labels.astype(np.int64),
                            class_names=predictions.class_names)
    restored = sf.unpack(sf.pack([model], {})).models[0]
    assert restored.options == options
    again = load_predictions(restored.source, name=restored.file_name, **dict(restored.options))
    np.testing.assert_array_equal(again.sample_weight, predictions.sample_weight)
    assert state.fingerprint(again) == state.fingerprint(predictions) != state.fingerprint(
        load_predictions(raw, name="clinic.csv"))
