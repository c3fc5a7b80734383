"""AppTest tests of the Groups page (pages/10_Groups.py), its cached helpers (studio/compute_groups.py),
its figures (calib_core/plot/figures_groups.py) and the Data page's "Group column" select.

Expected values are computed independently with calib_core on the same rows.
"""
from __future__ import annotations


import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.io import Predictions, load_demo
from studio import state
from calib_core.plot import figures_groups
from studio.text import md

from tests import app_support
from tests.app_support import APP, assert_clean, trace_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/10_Groups.py"
TIMEOUT = 90
DEMO = "fair_logistic_regression"


def open_demo(demo: str, **query: str) -> AppTest:
    return app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": demo, **query})


def grouped_predictions(n_groups: int = 3, rows: int = 300, seed: int = 0) -> Predictions:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=rows)
    p1 = rng.uniform(0.05, 0.95, size=rows)
    truth = np.where(groups == 1, 0.5 + (p1 - 0.5) * 0.2, p1)  # group 1 over-confident
    labels = (rng.uniform(size=rows) < truth).astype(int)
    return Predictions.from_arrays(np.column_stack([1 - p1, p1]), labels, name="grouped",
                                   groups=np.array([f"g<{g}>" for g in groups]), group_column="site")


def test_demo_with_groups_names_the_worst_group_with_its_interval():
    at = open_demo(DEMO, split="test")
    assert_clean(at)
    data = load_demo(DEMO).select_split("test")
    expected = cc.by_group("ece", data.probs, data.labels, data.groups, n_boot=200, seed=0, n_bins=15)
    text = " ".join(m.value for m in at.markdown)
    assert expected.worst_group == "professional"
    assert f"{expected.worst_value:.4f} against {expected.overall:.4f}" in text
    assert f"[{expected.gap_low:+.4f}, {expected.gap_high:+.4f}]" in text
    # the students (10 test rows) are too small: a warning names them
    assert any(md("student (10 rows)") in w.value for w in at.warning)  # Markdown-escaped plain text
    bar, reliability = app_support.plotly_specs(at)[:2]
    values = trace_array(bar["data"][0]["x"])
    ordered = figures_groups.sorted_by_gap(expected)
    assert values == pytest.approx(ordered["value"].to_numpy())
    assert bar["data"][0]["y"][0] == "professional"  # sorted by gap, largest first
    assert "Multicalibration" in [h.value for h in at.subheader]
    multi = cc.multicalibration(data.probs, data.labels, data.groups, n_bins=15)
    assert f"**{multi.max_gap:.4f}**" in text


def test_metric_and_bins_change_the_values():
    at = open_demo(DEMO)
    at.radio(key="group_metric").set_value("ace").run()
    at.slider(key="group_bins").set_value(10).run()
    assert_clean(at)
    data = load_demo(DEMO)
    expected = cc.by_group("ace", data.probs, data.labels, data.groups, n_boot=200, seed=0, n_bins=10)
    values = trace_array(app_support.plotly_specs(at)[0]["data"][0]["x"])
    assert sorted(values) == pytest.approx(sorted(expected.table["value"]))
    at.radio(key="group_layout").set_value("overlay").run()
    reliability = app_support.plotly_specs(at)[1]
    assert {t.get("name") for t in reliability["data"] if t.get("showlegend") is not False} >= {"professional"}


def test_uploaded_model_with_a_group_column_escapes_group_names():
    predictions = grouped_predictions()
    at = app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT)
    assert_clean(at)
    expected = cc.by_group("ece", predictions.probs, predictions.labels, predictions.groups, n_boot=200, seed=0)
    assert expected.worst_group == "g<1>"
    bar = app_support.plotly_specs(at)[0]
    assert bar["data"][0]["y"][0] == "g&lt;1&gt;"  # plot_text: shown as text, never as a tag
    assert "g\\<1\\>" in " ".join(m.value for m in at.markdown)  # md: Markdown-escaped


def test_more_than_fifty_groups_are_merged_and_said():
    predictions = grouped_predictions(n_groups=60, rows=3000, seed=1)
    at = app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT)
    assert_clean(at)
    assert any("More than 50 groups" in i.value and "49 largest" in i.value for i in at.info)
    assert len(app_support.plotly_specs(at)[0]["data"][0]["y"]) == 50


def test_model_without_groups_says_how_to_choose_one():
    at = open_demo("iris_svc")  # the digits demos have a group column (strokes) since issue 29
    assert_clean(at)
    message = at.info[0].value
    assert "has no group column" in message and "Correct the column mapping" in message and "Group column" in message
    assert not at.get("plotly_chart")


def test_data_page_group_column_select_reloads_with_groups_and_the_page_uses_them():
    csv = (b"label,p_a,p_b,hospital,score\n" + b"".join(
        f"{i % 2},{0.3 + 0.4 * (i % 2)},{0.7 - 0.4 * (i % 2)},{'north' if i % 3 else 'south'},{i % 5}\n".encode()
        for i in range(90)))
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    at.file_uploader[0].set_value(("wards.csv", csv, "text/csv")).run()
    select = at.selectbox(key="data:map:wards:group")
    assert select.options == ["(no groups)", "hospital", "score"] and select.value == "(no groups)"
    select.set_value("hospital")
    at.button(key="data:map:wards:submit").click().run()
    assert_clean(at)
    model = at.session_state[state.APP_KEY].models["wards"]
    assert model.predictions.group_column == "hospital" and dict(model.options)["group"] == "hospital"
    assert sorted(set(model.predictions.groups)) == ["north", "south"]
    at.switch_page(PAGE).run()
    at.selectbox(key="group_model").set_value("wards").run()
    assert_clean(at)
    assert sorted(app_support.plotly_specs(at)[0]["data"][0]["y"]) == ["north", "south"]


def test_figures_sort_by_gap_and_draw_one_panel_per_group():
    predictions = grouped_predictions()
    result = cc.by_group("ece", predictions.probs, predictions.labels, predictions.groups, n_boot=20, seed=0)
    ordered = figures_groups.sorted_by_gap(result)
    assert ordered["gap"].is_monotonic_decreasing
    table = cc.group_reliability(predictions.probs, predictions.labels, predictions.groups, n_bins=5)
    panels = figures_groups.group_reliability_figure(table, layout="small multiples")
    assert sum(1 for t in panels.data if t.name) == 3  # one line per group (plus a diagonal per panel)
    assert len(panels.layout.annotations) >= 3
