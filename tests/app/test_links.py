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
    """A parameter name shared by two pages would share one value between them (one Session State key)."""
    import ast
    from collections import defaultdict
    from pathlib import Path

    from studio import state

    owners: dict[str, set[str]] = defaultdict(set)
    for path in sorted((Path(APP).parent / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "linked"):
                for keyword in node.keywords:
                    if keyword.arg == "key" and isinstance(keyword.value, ast.Constant):
                        owners[keyword.value.value].add(path.name)
                    elif keyword.arg == "key":  # f-strings (the Simplex vertex pickers) are checked by their page
                        owners[ast.unparse(keyword.value)].add(path.name)
    assert len(owners) > 60, sorted(owners)
    shared = {key: pages for key, pages in owners.items() if len(pages) > 1}
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
