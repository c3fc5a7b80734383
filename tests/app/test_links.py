"""Every view is a link (issue 14, item 1): AppTest tests of the URL-bound controls of every page.

The controls are bound to the URL by Streamlit (``bind="query-params"``, through
``studio.layout.linked``): the key is the parameter's name, a value equal to the
default leaves the URL, and an invalid value is dropped. These tests open each
page with query parameters, as a shared link does, and check that the controls
take them; that a bad or stale parameter falls back to the default with a
visible note and no exception; that the "Link to this view" box shows the
parameters after a change; and that the values survive a page switch.
The browser round trip is in tests/e2e/test_e2e_links.py.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from tests import app_support
from tests.app_support import APP, assert_clean

TIMEOUT = 180
IRIS = "iris_svc"
FAIR = "fair_logistic_regression"


def open_link(page: str, **params: str | list[str]) -> AppTest:
    """Run ``page`` in a fresh session opened with ``?params`` (a shared link)."""
    return app_support.open_link(page, timeout=TIMEOUT, query=params)


def link_box(at: AppTest) -> dict[str, list[str]]:
    """The query parameters of the URL shown under "Link to this view" in the sidebar."""
    codes = [code.value for code in at.sidebar.code]
    assert len(codes) == 1, codes
    return parse_qs(urlsplit(codes[0]).query)


def notes(at: AppTest) -> list[str]:
    return [info.value for info in at.info]


def widget(at: AppTest, kind: str, key: str):
    return getattr(at, kind)(key=key)


# page, link parameters, the controls they must set: (widget kind, key, value)
LINKS = [
    ("pages/1_Metrics.py",
     {"demo": IRIS, "metric_bins": "20", "metric_binning": "adaptive", "boot": "none (no bootstrap intervals)", "level": "90%", "seed": "7"},
     [("slider", "metric_bins", 20), ("radio", "metric_binning", "adaptive"), ("selectbox", "boot", 0),
      ("selectbox", "level", 0.90), ("number_input", "seed", 7)]),
    ("pages/2_Reliability.py",
     {"demo": IRIS, "bins": "7", "binning": "adaptive", "event": "Class 2: virginica", "style": "bars", "log": "true",
      "bands": "true", "draws": "500"},
     [("slider", "bins", 7), ("radio", "binning", "adaptive"), ("selectbox", "event", 2), ("radio", "style", "bars"),
      ("toggle", "log", True), ("toggle", "bands", True), ("selectbox", "draws", 500)]),
    ("pages/3_Per-class.py",
     {"demo": IRIS, "class_bins": "5", "class_binning": "adaptive", "sort": "ACE (largest first)",
      "cls": "1: versicolor"},
     [("slider", "class_bins", 5), ("radio", "class_binning", "adaptive"), ("radio", "sort", "ace"),
      ("selectbox", "cls", 1)]),
    ("pages/4_Bin_sensitivity.py",
     {"demo": f"{IRIS},iris_mlp", "binnings": "adaptive", "counts": ["5", "60"], "reference": "20 bins"},
     [("multiselect", "binnings", ["adaptive"]), ("slider", "counts", (5, 60)),
      ("select_slider", "reference", 20)]),
    ("pages/5_Simplex.py",
     {"demo": IRIS, "lens": "max (top label)", "distance": "squared Euclidean", "partition": "data-dependent",
      "cell_size": "20", "arrows": "2", "colours": "linear", "resamples": "100", "simplex_seed": "3"},
     [("radio", "lens", "max"), ("radio", "distance", "sq_euclidean"), ("radio", "partition", "data_dependent"),
      ("number_input", "cell_size", 20), ("slider", "arrows", 2.0), ("radio", "colours", "linear"),
      ("selectbox", "resamples", 100), ("number_input", "simplex_seed", 3)]),
    ("pages/5_Simplex.py",
     {"demo": IRIS, "vertices": "three classes", "vertex_a": "2: virginica", "vertex_b": "0: setosa",
      "vertex_c": "1: versicolor", "cells": "6"},
     [("radio", "vertices", "classes"), ("selectbox", "vertex_a", 2), ("selectbox", "vertex_b", 0),
      ("selectbox", "vertex_c", 1), ("slider", "cells", 6)]),
    ("pages/6_Recalibration.py",
     {"demo": IRIS, "methods": ["Temperature scaling", "Platt scaling"], "protocol": "K-fold cross-fitting",
      "folds": "3", "recal_boot": "none", "recal_seed": "4", "recal_bins": "10", "recal_binning": "adaptive",
      "method": "Platt scaling"},
     [("multiselect", "methods", ["Temperature scaling", "Platt scaling"]), ("radio", "protocol", "cross_fit"),
      ("selectbox", "folds", 3), ("selectbox", "recal_boot", 0), ("number_input", "recal_seed", 4),
      ("selectbox", "recal_bins", 10), ("radio", "recal_binning", "adaptive"), ("selectbox", "method", "Platt scaling")]),
    ("pages/7_Estimators.py",
     {"demo": IRIS, "est_boot": "none (no intervals)", "est_seed": "5", "skce": "fixed", "skce_h": "0.3",
      "chain_bins": "8", "chain_binning": "adaptive", "chain_log": "false"},
     [("selectbox", "est_boot", 0), ("number_input", "est_seed", 5), ("radio", "skce", "fixed"),
      ("number_input", "skce_h", 0.3), ("slider", "chain_bins", 8), ("radio", "chain_binning", "adaptive"),
      ("toggle", "chain_log", False)]),
    ("pages/10_Groups.py",
     {"demo": FAIR, "group_metric": "ACE", "group_bins": "9", "group_boot": "0", "group_layout": "overlay"},
     [("radio", "group_metric", "ace"), ("slider", "group_bins", 9), ("select_slider", "group_boot", 0),
      ("radio", "group_layout", "overlay")]),
    ("pages/8_Lab.py",
     {"demo": IRIS, "lab_generator": "Multi-class logistic-normal, tempered (Gruber & Buettner G.1)",
      "lab_ln_classes": "5", "lab_ln_temperature": "2.5", "lab_estimators": ["ECE (uniform, optimal B)", "KS error"],
      "lab_sizes": ["100", "268"], "lab_repetitions": "10", "lab_seed": "7"},
     [("selectbox", "lab_generator", "logistic_normal"), ("number_input", "lab_ln_classes", 5),
      ("number_input", "lab_ln_temperature", 2.5), ("multiselect", "lab_estimators", ["ece_uniform", "ks"]),
      ("multiselect", "lab_sizes", [100, 268]), ("number_input", "lab_repetitions", 10),
      ("number_input", "lab_seed", 7)]),
    ("pages/8_Lab.py",
     {"demo": IRIS, "lab_tool": "Calibration tests: size and power", "lab_tests": "Spiegelhalter's Z",
      "lab_power_model": "Vaicenavicius et al.: uncalibrated (1, 1)", "lab_power_sizes": ["50", "1,000"],
      "lab_size_n": "200", "lab_tests_repetitions": "40", "lab_tests_seed": "3"},
     [("multiselect", "lab_tests", ["spiegelhalter"]),
      ("selectbox", "lab_power_model", "Vaicenavicius et al.: uncalibrated (1, 1)"),
      ("multiselect", "lab_power_sizes", [50, 1000]), ("selectbox", "lab_size_n", 200),
      ("number_input", "lab_tests_repetitions", 40), ("number_input", "lab_tests_seed", 3)]),
    ("pages/8_Lab.py",
     {"demo": IRIS, "lab_tool": "Your data: test-set size", "lab_study_metrics": ["ECE", "Brier score"],
      "lab_study_repetitions": "4", "lab_study_bins": "8", "lab_study_binning": "adaptive (equal mass)",
      "lab_study_seed": "2", "lab_tolerance": "0.2"},
     [("multiselect", "lab_study_metrics", ["ece", "brier"]), ("number_input", "lab_study_repetitions", 4),
      ("number_input", "lab_study_bins", 8), ("radio", "lab_study_binning", "adaptive"),
      ("number_input", "lab_study_seed", 2), ("slider", "lab_tolerance", 0.2)]),
    ("pages/9_Large_tables.py",
     {"demo": IRIS, "summary_binning": "adaptive", "summary_event": "Class 3: 3"},
     [("radio", "summary_binning", "adaptive"), ("selectbox", "summary_event", 3), ("selectbox", "summary_bins", 15)]),
    ("pages/9_Large_tables.py",
     {"demo": IRIS, "summary_bins": "30"},
     [("selectbox", "summary_bins", 30), ("radio", "summary_binning", "uniform")]),
    ("pages/9_Large_tables.py",
     {"demo": IRIS, "summary_demo": "false"},
     [("toggle", "summary_demo", False)]),
]


@pytest.mark.parametrize("page, params, expected", LINKS, ids=[f"{p.split('/')[-1][:-3]}-{i}"
                                                               for i, (p, _, _) in enumerate(LINKS)])
def test_a_link_sets_the_controls_of_its_page(page, params, expected):
    at = open_link(page, **params)
    assert_clean(at)
    assert not [n for n in notes(at) if "link" in n], notes(at)
    for kind, key, value in expected:
        got = widget(at, kind, key).value
        assert (got == pytest.approx(value) if isinstance(value, float) else got == value), (key, got, value)
    # The link box gives the same parameters back (each non-default control, plus the demo).
    shown = link_box(at)
    for key, value in params.items():
        assert shown[key] == (value if isinstance(value, list) else [value]), (key, shown)


def test_default_values_leave_the_link_and_raise_no_note():
    at = open_link("pages/2_Reliability.py", demo=IRIS, bins="15", binning="uniform")
    assert_clean(at)
    assert at.slider(key="bins").value == 15
    assert not notes(at)
    assert link_box(at) == {"demo": [IRIS]}


# Bad or stale parameters, one per kind of control: fall back to the default, say so, never raise.
BAD = [
    ("pages/2_Reliability.py", "slider", "bins", "99", 15),            # out of range
    ("pages/2_Reliability.py", "slider", "bins", "many", 15),          # not a number
    ("pages/2_Reliability.py", "radio", "binning", "quantile", "uniform"),  # unknown option
    ("pages/2_Reliability.py", "selectbox", "event", "Class 7: seven", "top_label"),  # class that does not exist
    ("pages/2_Reliability.py", "toggle", "log", "maybe", False),       # not a boolean
    ("pages/3_Per-class.py", "selectbox", "cls", "5: daisy", 0),       # class that does not exist
    ("pages/5_Simplex.py", "number_input", "simplex_seed", "-4", 0),   # below the minimum
    ("pages/5_Simplex.py", "multiselect", "group_a", "7: lotus", None),  # class that does not exist
    ("pages/6_Recalibration.py", "multiselect", "methods", "Magic scaling", None),  # unknown method
    ("pages/8_Lab.py", "selectbox", "lab_generator", "Magic model", "logistic"),  # unknown generator
    ("pages/8_Lab.py", "number_input", "lab_repetitions", "1", 50),    # below the minimum
    ("pages/8_Lab.py", "multiselect", "lab_sizes", "7", None),         # a size that is not offered
    ("pages/8_Lab.py", "multiselect", "lab_estimators", "Magic ECE", None),  # unknown estimator
    ("pages/9_Large_tables.py", "selectbox", "summary_bins", "999", 15),  # a bin count the summary did not keep
    ("pages/9_Large_tables.py", "selectbox", "summary_event", "Class 12: twelve", "top_label"),  # no such class
    ("pages/9_Large_tables.py", "toggle", "summary_demo", "perhaps", True),  # not a boolean
    # Infinite numbers: Streamlit's integer inputs raised OverflowError on them (issue 30, item 5).
    ("pages/1_Metrics.py", "number_input", "seed", "inf", 0),
    ("pages/6_Recalibration.py", "number_input", "recal_seed", "1e999", 0),
    ("pages/7_Estimators.py", "number_input", "est_seed", "-inf", 0),
    ("pages/5_Simplex.py", "number_input", "simplex_seed", "Infinity", 0),
    ("pages/8_Lab.py", "number_input", "lab_seed", "inf", 0),
    ("pages/8_Lab.py", "number_input", "lab_repetitions", "-1e400", 50),
    ("pages/2_Reliability.py", "slider", "bins", "inf", 15),
    ("pages/1_Metrics.py", "number_input", "prevalence", "inf", 0.1),
]


@pytest.mark.parametrize("page, kind, key, value, default", BAD, ids=[f"{b[2]}={b[3]}" for b in BAD])
def test_a_bad_parameter_falls_back_to_the_default_with_a_note(page, kind, key, value, default):
    at = open_link(page, demo=IRIS, **{key: value})
    assert_clean(at)
    got = widget(at, kind, key).value
    if default is None:  # the page's own default (the recommended methods)
        assert value not in got and got  # the page's own default, never empty
    else:
        assert got == default
    assert any(f"{key}={value}" in note.replace("\\", "") for note in notes(at)), notes(at)
    assert key not in link_box(at)


def test_an_unknown_demo_opens_the_default_demo_with_a_message():
    at = open_link("pages/2_Reliability.py", demo="no_such_demo", bins="20")
    assert not at.exception
    assert any("no_such_demo" in e.value for e in at.error)
    assert at.slider(key="bins").value == 20
    assert link_box(at)["demo"] == ["digits_gaussian_nb"]


def test_models_shown_travel_in_the_link_and_an_unknown_one_is_noted():
    at = open_link("pages/2_Reliability.py", demo=f"{IRIS},iris_mlp", models="iris_mlp")
    assert_clean(at)
    assert at.sidebar.multiselect[0].value == ["iris_mlp"]
    assert link_box(at)["models"] == ["iris_mlp"]
    assert len([m for m in at.main.metric]) == 1

    at = open_link("pages/2_Reliability.py", demo=f"{IRIS},iris_mlp", models="gone_model")
    assert_clean(at)
    assert at.sidebar.multiselect[0].value == [IRIS, "iris_mlp"]
    assert any("gone\\_model" in note for note in notes(at)), notes(at)
    assert "models" not in link_box(at)


def test_hiding_a_model_writes_it_into_the_link():
    at = open_link("pages/2_Reliability.py", demo=f"{IRIS},iris_mlp")
    at.sidebar.multiselect[0].set_value([IRIS]).run()
    assert_clean(at)
    assert link_box(at)["models"] == [IRIS]


def test_a_changed_control_appears_in_the_link_box_and_a_reset_removes_it():
    at = open_link("pages/2_Reliability.py", demo=IRIS)
    assert "bins" not in link_box(at)
    at.slider(key="bins").set_value(30).run()
    assert link_box(at)["bins"] == ["30"]
    at.radio(key="binning").set_value("adaptive").run()
    assert link_box(at)["binning"] == ["adaptive"]
    at.slider(key="bins").set_value(15).run()
    assert "bins" not in link_box(at)
    assert not notes(at)


def test_values_survive_a_page_switch():
    at = open_link("pages/2_Reliability.py", demo=IRIS)
    at.slider(key="bins").set_value(22).run()
    at.switch_page("pages/3_Per-class.py").run()
    assert_clean(at)
    assert at.slider(key="class_bins").value == 15
    at.switch_page("pages/2_Reliability.py").run()
    assert_clean(at)
    assert at.slider(key="bins").value == 22
    assert link_box(at)["bins"] == ["22"]


def test_every_url_parameter_name_is_used_by_one_page_only():
    """A parameter name shared by two pages would share one value between them (one Session State key).

    The bound controls are drawn by the page files and by their modules in studio/ (Simplex, Recalibration,
    Lab); each name must be used by one file only.
    """
    import ast
    from collections import defaultdict
    from pathlib import Path

    from studio import state

    root = Path(APP).parent
    owners: dict[str, set[str]] = defaultdict(set)
    for path in sorted([*(root / "pages").glob("*.py"), *(root / "studio").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("linked", "linked_tabs")):
                for keyword in node.keywords:
                    if keyword.arg == "key" and isinstance(keyword.value, ast.Constant):
                        owners[keyword.value.value].add(str(path.relative_to(root)))
                    elif keyword.arg == "key":  # f-strings (the Simplex vertex pickers) are checked by their page
                        owners[ast.unparse(keyword.value)].add(str(path.relative_to(root)))
    assert len(owners) > 90, sorted(owners)
    assert {"lab_tool", "lab_generator", "lab_rank_bins", "summary_bins"} <= set(owners)
    shared = {key: files for key, files in owners.items() if len(files) > 1}
    assert not shared, shared
    assert not set(owners) & set(state.LINK_KEYS)


def test_another_model_with_other_classes_resets_the_simplex_vertex_pickers():
    at = open_link("pages/5_Simplex.py", demo="iris_svc,digits_svc", group_a=["0: setosa", "1: versicolor"],
                   group_b="2: virginica", group_c="")
    assert_clean(at)
    assert at.multiselect(key="group_a").value == [0, 1]
    at.selectbox(key="model").set_value("digits_svc").run()
    assert_clean(at)
    assert [at.multiselect(key=f"group_{c}").value for c in "abc"] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert "group_a" not in link_box(at)


# ---------------------------------------------------------------------------- the Lab and Large tables
LAB = "pages/8_Lab.py"
LAB_TOOLS = ["Simulation lab", "Calibration tests: size and power", "Your data: test-set size",
             "Bin-count rank stability", "Pathology gallery"]
TWO_DIGITS = "digits_gaussian_nb,digits_random_forest"


def reopen(page: str, at: AppTest) -> AppTest:
    """Open the URL of the link box of ``at`` in a fresh session (as a visitor following a shared link)."""
    params = link_box(at)
    return open_link(page, **{key: values if len(values) > 1 else values[0] for key, values in params.items()})


def test_a_lab_simulation_link_round_trips_and_runs_nothing_until_run_is_pressed():
    at = open_link(LAB, demo=IRIS)
    assert_clean(at)
    at.selectbox(key="lab_generator").set_value("uniform_simplex").run()
    at.multiselect(key="lab_estimators").set_value(["ece_uniform", "ks"])
    at.multiselect(key="lab_sizes").set_value([100, 268])
    at.number_input(key="lab_repetitions").set_value(3)
    at.number_input(key="lab_seed").set_value(11)
    at.button(key="lab:run").click().run()
    assert_clean(at)
    assert "lab:job" in at.session_state
    at.radio(key="lab_view").set_value("error").run()
    shown = link_box(at)
    assert shown["lab_generator"] == ["Uniform simplex, sharpened then tempered (Popordanoska et al. 7.1)"]
    assert shown["lab_estimators"] == ["ECE (uniform, optimal B)", "KS error"]
    assert shown["lab_seed"] == ["11"] and shown["lab_sizes"] == ["100", "268"]
    assert shown["lab_view"] == ["error: estimate − true value"]
    assert "lab_tool" not in shown  # the default tool leaves the link

    fresh = reopen(LAB, at)
    assert_clean(fresh)
    assert not notes(fresh) or not [n for n in notes(fresh) if "link" in n]
    assert fresh.selectbox(key="lab_generator").value == "uniform_simplex"
    assert fresh.multiselect(key="lab_estimators").value == ["ece_uniform", "ks"]
    assert fresh.multiselect(key="lab_sizes").value == [100, 268]
    assert fresh.number_input(key="lab_repetitions").value == 3
    assert fresh.number_input(key="lab_seed").value == 11
    # The link fills in the settings; the simulation still waits for Run (as it does today).
    assert "lab:job" not in fresh.session_state
    assert any("press **Run**" in n for n in notes(fresh))
    fresh.button(key="lab:run").click().run()  # the visitor presses Run: the same run, in the linked view
    assert_clean(fresh)
    assert fresh.radio(key="lab_view").value == "error"
    assert link_box(fresh) == shown
    assert app_support.plotly_specs(fresh)[0]["data"] == app_support.plotly_specs(at)[0]["data"]  # same numbers


def test_a_lab_rank_stability_link_round_trips_the_tool_range_and_variant():
    at = open_link(LAB, demo=TWO_DIGITS)
    at.session_state["lab_tool"] = LAB_TOOLS[3]
    at.run()
    assert_clean(at)
    at.slider(key="lab_rank_bins").set_value((12, 20)).run()
    assert_clean(at)
    picker = at.selectbox(key="lab_rank_variant")
    chosen = (picker.value + 3) % len(picker.options)
    picker.set_value(chosen).run()
    shown = link_box(at)
    assert shown["lab_tool"] == [LAB_TOOLS[3]]
    assert shown["lab_rank_bins"] == ["12", "20"]
    assert shown["lab_rank_variant"] == [at.selectbox(key="lab_rank_variant").options[chosen]]
    assert not [key for key in shown if key in ("lab_generator", "lab_sizes")]  # only the open tool's controls

    fresh = reopen(LAB, at)
    assert_clean(fresh)
    assert fresh.session_state["lab_tool"] == LAB_TOOLS[3]
    assert fresh.slider(key="lab_rank_bins").value == (12, 20)
    assert fresh.selectbox(key="lab_rank_variant").value == chosen
    assert link_box(fresh) == shown


def test_a_bad_lab_tool_or_rank_range_falls_back_with_a_note():
    at = open_link(LAB, demo=IRIS, lab_tool="Crystal ball")
    assert_clean(at)
    assert at.session_state["lab_tool"] == LAB_TOOLS[0]
    assert any("lab_tool=Crystal ball" in note.replace("\\", "") for note in notes(at)), notes(at)
    assert "lab_tool" not in link_box(at)

    at = open_link(LAB, demo=TWO_DIGITS, lab_tool=LAB_TOOLS[3], lab_rank_bins=["1", "500"])
    assert_clean(at)
    assert at.slider(key="lab_rank_bins").value == (10, 50)
    assert any("lab_rank_bins=1, 500" in note.replace("\\", "") for note in notes(at)), notes(at)
    assert "lab_rank_bins" not in link_box(at)


def test_lab_values_survive_a_page_switch():
    at = open_link(LAB, demo=IRIS)
    at.number_input(key="lab_seed").set_value(9)
    at.button(key="lab:run").click()  # the form's values are committed by its button
    at.multiselect(key="lab_sizes").set_value([100])
    at.number_input(key="lab_repetitions").set_value(2)
    at.run()
    at.switch_page("pages/2_Reliability.py").run()
    assert_clean(at)
    at.switch_page(LAB).run()
    assert_clean(at)
    assert at.number_input(key="lab_seed").value == 9
    assert link_box(at)["lab_seed"] == ["9"]


def test_a_large_tables_link_round_trips():
    at = open_link("pages/9_Large_tables.py", demo=IRIS)
    assert_clean(at)
    at.selectbox(key="summary_bins").set_value(25).run()
    at.selectbox(key="summary_event").set_value(4).run()
    assert_clean(at)
    shown = link_box(at)
    assert shown["summary_bins"] == ["25"] and shown["summary_event"] == ["Class 4: 4"]
    fresh = reopen("pages/9_Large_tables.py", at)
    assert_clean(fresh)
    assert fresh.selectbox(key="summary_bins").value == 25
    assert fresh.selectbox(key="summary_event").value == 4
    assert not notes(fresh)
