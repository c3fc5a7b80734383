"""AppTest tests of the Simplex page (pages/5_Simplex.py, its sections in studio/simplex/) and its cached
helpers (studio/compute_simplex.py).

Each test opens the page as a deep link in a fresh session (``switch_page``
before the first run), so the page sets itself up and loads ``?demo=``.
Expected values are computed independently with calib_core on the same data.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.io import Predictions, load_demo
from studio import compute_simplex as cs
from studio import state
from calib_core.plot.figures_simplex import ARROW_TRACE_NAME

from tests import app_support
from tests.app_support import assert_clean, trace_array as as_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/5_Simplex.py"
TIMEOUT = 60
DIGITS, WINE, CANCER = "digits_gaussian_nb", "wine_random_forest", "breast_cancer_svc"


def open_with_model(predictions: Predictions) -> AppTest:
    """The page with one model given as arrays (as after an upload), in a fresh session."""
    return app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT)


def open_page(demo: str | None = None) -> AppTest:
    return app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": demo} if demo else None)






def chart_spec(at: AppTest) -> dict:
    (chart,) = at.get("plotly_chart")
    return json.loads(chart.proto.spec)




def arrows(at: AppTest) -> tuple[np.ndarray, np.ndarray]:
    """Tails and heads of the chart's arrows, shape (n_arrows, 3) each."""
    (trace,) = [t for t in chart_spec(at)["data"] if t.get("name") == ARROW_TRACE_NAME]
    coords = np.column_stack([as_array(trace[axis]) for axis in "abc"])
    assert coords.shape[0] % 3 == 0
    assert np.isnan(coords[2::3]).all(), "arrows are separated by gaps"
    assert list(trace["marker"]["symbol"][1::3]) == ["arrow"] * (coords.shape[0] // 3), "every head is an arrow"
    return coords[0::3], coords[1::3]


def titles(at: AppTest) -> list[str]:
    ternary = chart_spec(at)["layout"]["ternary"]
    return [ternary[f"{axis}axis"]["title"]["text"] for axis in "abc"]


def metric_values(at: AppTest) -> list[float]:
    return [float(m.value) for m in at.metric]


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.main.caption)


# ----------------------------------------------------------------------------- every kind of demo

@pytest.mark.parametrize("demo, n_metrics", [(None, 2), (WINE, 1), (CANCER, 1)],
                         ids=["default-10-class", "3-class", "binary"])
def test_page_runs_and_draws_one_arrow_per_non_empty_cell(demo, n_metrics):
    at = open_page(demo)
    assert_clean(at)
    assert at.title[0].value.startswith("Simplex")
    data = load_demo(demo or state.DEFAULT_DEMO)
    expected = cc.simplex_reliability(data.probs, data.labels, n_bins=10).table
    tails, heads = arrows(at)
    assert tails.shape[0] == expected.n_cells
    np.testing.assert_allclose(tails, expected.mean_prediction, atol=1e-9)
    np.testing.assert_allclose(heads, expected.observed_frequency, atol=1e-9)  # arrow scale 1
    # The estimate beside the chart is canonical_ce on all K classes, with its band.
    assert len(at.metric) == n_metrics
    assert at.metric[0].value == f"{cc.canonical_ce(data.probs, data.labels):.4f}"
    assert "200 consistency resamples" in captions(at) and "p-value" in captions(at)
    if n_metrics == 2:  # ten classes in three groups: the arrows' own estimate too
        assert at.metric[1].value == f"{expected.estimate:.4f}"
    if demo == CANCER:
        assert titles(at) == ["malignant", "benign", ""]
        assert np.allclose(tails[:, 2], 0) and np.allclose(heads[:, 2], 0), "binary: on the edge"


def test_digits_defaults_show_the_groups_of_the_paper_and_an_overconfident_model():
    at = open_page()
    assert titles(at) == ["0 + 1 + 2", "3 + 4 + 5", "6 + 7 + 8 + 9"]
    assert [w.value for w in at.multiselect] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    # Gaussian naive Bayes on digits is far too confident: far above its band.
    data = load_demo(state.DEFAULT_DEMO)
    band = cc.consistency_resampling(data.probs, data.labels, cc.CanonicalCE(), 200, seed=0)
    assert band.verdict == "miscalibrated"
    shown = unescape(at.warning[0].value)
    assert shown == f"**Miscalibrated.** {band.verdict_reason}" and "α = 0.05" in shown
    assert f"**{band.lower:.4f}** and **{band.upper:.4f}**" in captions(at)
    assert f"p-value **{band.p_value:.3f}**" in captions(at)


# ----------------------------------------------------------------------------- widgets

def test_widgets_redraw_the_arrows_and_the_estimates():
    at = open_page(WINE)
    data = load_demo(WINE)
    probs, labels = data.probs, data.labels

    at.slider(key="cells").set_value(4).run()
    assert_clean(at)
    table = cc.simplex_reliability(probs, labels, n_bins=4).table
    tails, heads = arrows(at)
    assert tails.shape[0] == table.n_cells
    assert at.metric[0].value == f"{cc.canonical_ce(probs, labels, n_bins=4):.4f}"

    at.slider(key="arrows").set_value(2.5).run()
    scaled_tails, scaled_heads = arrows(at)
    np.testing.assert_allclose(scaled_tails, tails)
    np.testing.assert_allclose(scaled_heads, tails + 2.5 * (heads - tails), atol=1e-9)
    assert "2.5× their length" in captions(at)

    at.radio(key="distance").set_value("sq_euclidean").run()
    assert at.metric[0].value == f"{cc.canonical_ce(probs, labels, 'sq_euclidean', n_bins=4):.4f}"

    at.radio(key="partition").set_value("data_dependent").run()
    at.number_input(key="cell_size").set_value(10).run()
    assert_clean(at)
    table = cc.simplex_reliability(probs, labels, partition="data_dependent", min_bin_size=10).table
    assert arrows(at)[0].shape[0] == table.n_cells > 1
    expected = cc.canonical_ce(probs, labels, "sq_euclidean", "data_dependent", min_bin_size=10)
    assert at.metric[0].value == f"{expected:.4f}"

    at.selectbox(key="resamples").set_value(100).run()
    at.number_input(key="simplex_seed").set_value(7).run()
    band = cc.consistency_resampling(probs, labels, cc.CanonicalCE("sq_euclidean", "data_dependent", min_bin_size=10),
                                     100, seed=7)
    assert "100 consistency resamples" in captions(at)
    assert f"**{band.lower:.4f}** and **{band.upper:.4f}**" in captions(at)


def test_lenses_change_the_view_and_the_estimate():
    at = open_page(WINE)
    data = load_demo(WINE)
    assert at.selectbox(key="marginal").disabled

    at.radio(key="lens").set_value("max").run()
    assert_clean(at)
    assert titles(at) == ["predicted class", "another class", ""]
    # The max lens with uniform bins is the top-label ECE.
    assert at.metric[0].value == f"{cc.ece(data.probs, data.labels, n_bins=10):.4f}"
    points, outcomes = cc.lens_view(data.probs, data.labels, "max")
    assert arrows(at)[0].shape[0] == cc.simplex_reliability(points, outcomes).table.n_cells
    assert all(w.disabled for w in at.multiselect), "the vertex pickers only apply to the canonical lens"

    at.radio(key="lens").set_value("marginal").run()
    at.selectbox(key="marginal").set_value(2).run()
    assert_clean(at)
    assert titles(at) == ["class class_2", "not class class_2", ""]
    assert at.metric[0].value == f"{cc.canonical_ce(data.probs, data.labels, lens='marginal', class_index=2):.4f}"


def test_three_classes_of_ten():
    at = open_page()
    at.radio(key="vertices").set_value("classes").run()
    for j, k in enumerate((1, 7, 8)):
        at.selectbox(key="vertex_" + "abc"[j]).set_value(k)
    at.run()
    assert_clean(at)
    data = load_demo(state.DEFAULT_DEMO)
    rel = cc.simplex_reliability(data.probs, data.labels, classes=(1, 7, 8))
    assert titles(at) == ["1", "7", "8"]
    assert arrows(at)[0].shape[0] == rel.table.n_cells
    assert f"{rel.projection.n_excluded:,} rows with another label are left out" in captions(at)
    assert at.metric[1].value == f"{rel.estimate:.4f}"


def test_edited_groups_are_used():
    at = open_page()
    at.multiselect(key="group_c").unselect(9)
    at.multiselect(key="group_a").select(9)
    at.run()
    assert_clean(at)
    assert titles(at)[0] == "0 + 1 + 2 + 9"
    data = load_demo(state.DEFAULT_DEMO)
    rel = cc.simplex_reliability(data.probs, data.labels, groups=[[0, 1, 2, 9], [3, 4, 5], [6, 7, 8]])
    np.testing.assert_allclose(arrows(at)[1], rel.table.observed_frequency, atol=1e-9)


# ----------------------------------------------------------------------------- invalid choices

def test_a_class_in_no_group_or_two_groups_is_an_error_not_a_traceback():
    at = open_page()
    at.multiselect(key="group_c").unselect(9).run()
    assert not at.exception
    (error,) = at.error
    assert "exactly one group" in error.value and "class 9 is in no group" in error.value
    assert not at.get("plotly_chart")

    at.multiselect(key="group_b").select(0).run()
    (error,) = at.error
    assert "class 0 is in more than one group" in error.value and "class 9 is in no group" in error.value

    at.multiselect(key="group_b").unselect(0)
    at.multiselect(key="group_c").select(9)
    at.run()
    assert_clean(at)
    assert at.get("plotly_chart")


def test_one_non_empty_group_is_an_error():
    at = open_page(WINE)
    at.multiselect(key="group_a").set_value([0, 1, 2])
    at.multiselect(key="group_b").set_value([])
    at.multiselect(key="group_c").set_value([])
    at.run()
    assert not at.exception
    (error,) = at.error
    assert "at least two groups" in error.value


def test_the_same_class_twice_is_an_error():
    at = open_page()
    at.radio(key="vertices").set_value("classes").run()
    at.selectbox(key="vertex_c").set_value(0).run()
    assert not at.exception
    (error,) = at.error
    assert "three different classes" in error.value and "class 0 is picked more than once" in error.value


def test_classes_without_rows_give_an_error():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=60)
    model = Predictions(probs, np.full(60, 3), ("a", "b", "c", "d"), name="only_d")
    at = open_with_model(model)
    assert_clean(at)
    at.radio(key="vertices").set_value("classes").run()
    assert not at.exception
    (error,) = at.error
    shown = error.value.replace("\\", "")  # calib_core's message is shown as plain text (escaped Markdown)
    assert "cannot be drawn" in shown and "no row has a label among `classes`" in shown


def test_binary_model_offers_groups_only():
    at = open_page(CANCER)
    assert at.radio(key="vertices").options == ["three groups of classes"]
    assert at.radio(key="vertices").disabled
    assert "binary model" in captions(at)


# ----------------------------------------------------------------------------- several models

def test_model_selector_switches_the_chart():
    at = open_page(f"{WINE},{DIGITS}")
    assert_clean(at)
    selector = at.selectbox(key="model")
    assert selector.options == [WINE, DIGITS]
    assert titles(at) == ["class_0", "class_1", "class_2"]
    selector.set_value(DIGITS).run()
    assert_clean(at)
    assert titles(at) == ["0 + 1 + 2", "3 + 4 + 5", "6 + 7 + 8 + 9"]
    data = load_demo(DIGITS)
    assert at.metric[0].value == f"{cc.canonical_ce(data.probs, data.labels):.4f}"


# ----------------------------------------------------------------------------- helpers

def test_group_problems():
    assert cs.group_problems([(0, 1), (2,), (3,)], 4) == ([], [])
    assert cs.group_problems([(0, 1), (1,), ()], 4) == ([1], [2, 3])
    assert cs.group_problems([(), (), ()], 2) == ([], [0, 1])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_whole_model_view_gives_the_same_estimate(n_classes):
    """When view_is_whole_model says so, the arrows' estimate is canonical_ce itself (one metric suffices)."""
    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.ones(n_classes), size=400)
    labels = cc.sample_labels(probs ** 2 / (probs ** 2).sum(axis=1, keepdims=True), seed=1)[0]
    vertices = cs.Vertices("groups", cc.default_groups(n_classes))
    assert cs.view_is_whole_model(vertices, "canonical", n_classes)
    for partition in ("uniform", "data_dependent"):
        for distance in ("tv", "sq_euclidean"):
            view = cc.simplex_reliability(probs, labels, partition=partition, min_bin_size=40, n_bins=7,
                                          distance=distance)
            assert view.estimate == pytest.approx(
                cc.canonical_ce(probs, labels, distance, partition, 7, 40), abs=1e-12)
    assert not cs.view_is_whole_model(cs.Vertices("groups", ((1,), (0,), (2,))), "canonical", 3)
    assert not cs.view_is_whole_model(cs.Vertices("groups", ((0, 1), (2,), (3,))), "canonical", 4)
    assert cs.view_is_whole_model(vertices, "max", n_classes)


def test_large_models_start_with_100_resamples_so_the_band_keeps_up():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), size=60_000)
    labels = np.minimum((probs.cumsum(axis=1) < rng.uniform(size=(60_000, 1))).sum(axis=1), 2)
    at = open_with_model(Predictions.from_arrays(probs=probs, labels=labels, name="large"))
    assert not at.exception and not at.error
    assert at.selectbox(key="resamples").value == 100
    assert "100 consistency resamples" in captions(at)


# ----------------------------------------------------------------------------- verdicts (issue 11, item 2)

def unescape(text: str) -> str:
    return text.replace("\\", "")


def test_digits_random_forest_whole_model_is_inconclusive_not_a_pass():
    """The reported case: canonical_ce 0.2608 below its band showed a green 'no sign of miscalibration'."""
    at = open_page("digits_random_forest")
    assert_clean(at)
    data = load_demo("digits_random_forest")
    whole = cc.consistency_resampling(data.probs, data.labels, cc.CanonicalCE(), 200, seed=0)
    view = cc.simplex_reliability(data.probs, data.labels, groups=cc.default_groups(10))
    arrows_band = cc.consistency_resampling(view.projection.points, view.projection.labels, cc.CanonicalCE(), 200,
                                            seed=0)
    assert (whole.verdict, arrows_band.verdict) == ("inconclusive", "miscalibrated")
    assert not at.success, "no green pass for a test without power"
    texts = [unescape(box.value) for box in at.info]
    assert any(t == f"**Inconclusive.** {whole.verdict_reason}" for t in texts), texts
    assert unescape(at.warning[0].value) == f"**Miscalibrated.** {arrows_band.verdict_reason}"
    # The two verdicts differ, and the page says so next to them.
    assert any("The two tests read differently" in t and "inconclusive" in t and "miscalibrated" in t
               for t in texts)
    assert "no sign of miscalibration" not in " ".join(texts + captions(at).split())


def test_consistent_model_shows_a_consistent_verdict():
    # A calibrated three-class model: labels drawn from its own predictions.
    rng = np.random.default_rng(1)
    probs = rng.dirichlet([2, 2, 2], size=3000)
    labels = cc.sample_labels(probs, seed=2)[0]
    at = open_with_model(Predictions(probs=probs, labels=labels, class_names=("a", "b", "c")))
    assert_clean(at)
    band = cc.consistency_resampling(probs, labels, cc.CanonicalCE(), 200, seed=0)
    assert band.verdict == "consistent"
    assert len(at.success) == 1 and unescape(at.success[0].value) == f"**Consistent with calibration.** {band.verdict_reason}"


def test_data_dependent_partition_on_three_classes_fills_its_cells():
    at = open_page("digits_random_forest")
    next(r for r in at.radio if r.label == "Vertices of the triangle").set_value("classes").run()
    next(r for r in at.radio if r.label == "Partition").set_value("data_dependent").run()
    assert_clean(at)
    data = load_demo("digits_random_forest")
    rel = cc.simplex_reliability(data.probs, data.labels, classes=(0, 1, 2), partition="data_dependent",
                                 min_bin_size=100)
    spec = chart_spec(at)
    cells = [t for t in spec["data"] if t.get("name") == "cells"]
    assert cells and all(t["fill"] == "toself" for t in cells)
    n_polygons = sum(sum(v is None for v in t["a"]) for t in cells)
    assert n_polygons == rel.table.n_cells
    (bar,) = [t for t in spec["data"] if t.get("marker", {}).get("showscale")]
    # The colour scale starts at one row: cells of similar counts (87-91 rows here) must not look empty.
    assert bar["marker"]["cmin"] == 0.0 and bar["marker"]["cmax"] == pytest.approx(np.log10(rel.table.count.max()))
    tails, _ = arrows(at)
    assert tails.shape[0] == rel.table.n_cells
