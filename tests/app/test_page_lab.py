"""AppTest tests of the Lab page (pages/8_Lab.py), its helpers (studio/compute_lab.py) and its figures.

Each page test opens the page as a deep link in a fresh session (``switch_page``
before the first run). The Lab's runs advance one chunk per script run and call
``st.rerun()``; AppTest follows those reruns, so one ``.run()`` returns the
finished run. Expected values are computed independently with calib_core.
"""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.io import load_demo
from calib_core.lab.estimators import DEFAULT_SIZES
from calib_core.lab.stability import stability_table, study_sizes
from studio import compute_lab as cl
from calib_core.plot import figures_lab as fl
from studio import state
from studio.text import md

from tests import app_support
from tests.app_support import assert_clean, plotly_specs as specs, trace_array as as_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/8_Lab.py"
TIMEOUT = 60
TABS = ["Simulation lab", "Calibration tests: size and power", "Your data: test-set size", "Bin-count rank stability",
        "Pathology gallery", "How many labels"]
TWO_DIGITS = "digits_gaussian_nb,digits_random_forest"


def open_page(demo: str | None = None, tab: str | None = None, **state_values) -> AppTest:
    return app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": demo} if demo else None,
                                 session_values={**({"lab_tool": tab} if tab else {}), **state_values})








def as_matrix(data) -> np.ndarray:
    """A 2-D trace array (a list of rows, or base64 "bdata" with a "shape")."""
    if isinstance(data, dict) and "bdata" in data:
        shape = tuple(int(v) for v in str(data["shape"]).split(","))
        return as_array(data).reshape(shape)
    return np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)


def traces(spec: dict, prefix: str = "") -> list[dict]:
    return [t for t in spec["data"] if str(t.get("name", "")).startswith(prefix)]


def run_tiny_lab(at: AppTest, sizes=(100, 268), repetitions: int = 3, **widgets) -> AppTest:
    at.multiselect(key="lab_sizes").set_value(list(sizes))
    at.number_input(key="lab_repetitions").set_value(repetitions)
    for key, value in widgets.items():
        at.session_state[key] = value
    return at.button(key="lab:run").click().run()


def expected_summary(spec: cl.GeneratorSpec, keys, sizes, repetitions, seed=0, fixed_bins=15) -> pd.DataFrame:
    """calib_core.run_lab size by size with the page's per-size seeds."""
    model = spec.build()
    estimators = cl.resolve_estimators(spec, keys, fixed_bins)
    parts = [cc.run_lab(model, estimators, sizes=[n], repetitions=repetitions, seed=cl.chunk_seed(seed, n)).summary
             for n in sizes]
    return pd.concat(parts, ignore_index=True)


# ============================================================================ the page
def test_page_opens_on_the_default_demo_with_six_tabs_and_runs_nothing():
    at = open_page()
    assert_clean(at)
    assert at.title[0].value.startswith("Lab")
    assert [t.label for t in at.tabs] == TABS
    assert "press **Run**" in at.info[0].value
    # Before a run: only the analytic bounds at the chosen sizes, no estimates.
    (preview,) = specs(at)
    assert traces(preview, "total bound") and not traces(preview, "observed: ")
    lipschitz = cc.LogisticModel(0.5, -1.5).lipschitz
    first = f"n = 100: B* = {cc.optimal_n_bins(100, lipschitz)}"
    assert first in " ".join(c.value for c in at.caption)
    assert "lab:job" not in at.session_state
    assert at.multiselect(key="lab_sizes").value == list(DEFAULT_SIZES)
    assert at.number_input(key="lab_repetitions").value == 50
    assert at.multiselect(key="lab_estimators").value == list(cc.lab.estimators.DEFAULT_ESTIMATORS)


def test_tiny_run_draws_estimates_bands_and_the_truth_lines():
    at = open_page()
    at = run_tiny_lab(at)
    assert_clean(at)
    spec = cl.GeneratorSpec.make("logistic", b0=0.5, b1=-1.5)
    truth = spec.build().truth()
    main, bounds = specs(at)

    # One dashed line per estimated quantity, at its true value, across the sizes run.
    lines = {t["name"]: t for t in traces(main, fl.TRUTH_TRACE_PREFIX)}
    assert set(lines) == {f"truth: TCE = {truth['tce']:.4f}", f"truth: TCE₂ = {truth['tce_l2']:.4f}",
                          f"truth: KS = {truth['ks']:.4f}"}
    tce_line = lines[f"truth: TCE = {truth['tce']:.4f}"]
    np.testing.assert_allclose(as_array(tce_line["y"]), [truth["tce"]] * 2)
    np.testing.assert_allclose(as_array(tce_line["x"]), [100, 268])
    assert tce_line["line"]["dash"] == "dash"

    # The means are calib_core.run_lab's, with the page's seeds.
    keys = list(cc.lab.estimators.DEFAULT_ESTIMATORS)
    expected = expected_summary(spec, keys, [100, 268], 3)
    for key in keys:
        label = cl.estimator_options()[key] if key in cl.estimator_options() else key
        (mean_trace,) = [t for t in main["data"] if t.get("name") == label]
        rows = expected[expected["estimator"] == key]
        np.testing.assert_allclose(as_array(mean_trace["x"]), [100, 268])
        np.testing.assert_allclose(as_array(mean_trace["y"]), rows["mean"], rtol=1e-12)
        (band,) = [t for t in main["data"] if t.get("name") == f"{label} 5-95%"]
        np.testing.assert_allclose(as_array(band["y"]), np.concatenate([rows["q95"], rows["q05"][::-1]]), rtol=1e-12)
    assert main["layout"]["xaxis"]["type"] == "log"

    # The bias table and the bounds chart.
    (table,) = [d.value for d in at.dataframe if "bias" in d.value.columns]
    assert len(table) == len(keys) * 2
    first = expected.iloc[0]
    np.testing.assert_allclose(table.iloc[0][["truth", "mean", "bias", "std"]].astype(float),
                               first[["truth", "mean", "bias", "std"]].astype(float), rtol=1e-12)
    optimal = cc.futami_bounds(as_array(traces(bounds, "total bound")[0]["x"]).astype(int), None,
                               spec.build().lipschitz)
    np.testing.assert_allclose(as_array(traces(bounds, "total bound")[0]["y"]), optimal.total)
    np.testing.assert_allclose(as_array(traces(bounds, "B*")[0]["y"]), optimal.optimal_n_bins)
    assert [t["name"] for t in traces(bounds, "observed: ")] == [
        "observed: ECE (uniform, optimal B)", "observed: ECE (adaptive, optimal B)",
        "observed: ECE sweep (Roelofs et al., equal mass)"]
    assert "3 test sets at each of 2 sizes; finished in" in " ".join(c.value for c in at.caption)
    assert [m.value for m in at.metric][:2] == [f"{truth['accuracy']:.3f}", f"{truth['tce']:.4f}"]


def test_the_same_settings_come_back_from_the_store_and_the_error_view():
    at = run_tiny_lab(open_page(), sizes=(100,), repetitions=2)
    assert_clean(at)
    first = specs(at)[0]
    at = at.button(key="lab:run").click().run()
    assert "taken from the store of finished runs" in " ".join(c.value for c in at.caption)
    assert specs(at)[0]["data"] == first["data"]

    at.radio(key="lab_view").set_value("error").run()
    assert_clean(at)
    main = specs(at)[0]
    assert not traces(main, fl.TRUTH_TRACE_PREFIX)
    assert main["layout"]["shapes"][0]["y0"] == 0.0  # the zero line
    summary = expected_summary(cl.GeneratorSpec.make("logistic", b0=0.5, b1=-1.5),
                               list(cc.lab.estimators.DEFAULT_ESTIMATORS), [100], 2)
    (ece_trace,) = [t for t in main["data"] if t.get("name") == "ECE (uniform, optimal B)"]
    np.testing.assert_allclose(as_array(ece_trace["y"]), summary["bias"].iloc[:1], rtol=1e-12)


def test_a_stopped_run_shows_its_finished_sizes_and_run_continues_it():
    params = cl.LabParams(cl.GeneratorSpec.make("logistic", b0=0.5, b1=-1.5), ("ece_uniform", "ks"), 15,
                          (100, 268), 3, 0)
    job = cl.lab_job(params)
    job.advance(lambda chunk, cb: cl.compute_lab_chunk(params, chunk, cb))  # the true values
    job.advance(lambda chunk, cb: cl.compute_lab_chunk(params, chunk, cb))  # n = 100
    job.stopped = True
    at = open_page(**{"lab:job": job})
    assert not at.exception
    assert "Stopped: 1 of 2 sizes finished" in at.warning[0].value
    (mean_trace,) = [t for t in specs(at)[0]["data"] if t.get("name") == "KS error"]
    np.testing.assert_allclose(as_array(mean_trace["x"]), [100])

    at.multiselect(key="lab_estimators").set_value(["ece_uniform", "ks"])
    at = run_tiny_lab(at)
    assert_clean(at)
    (mean_trace,) = [t for t in specs(at)[0]["data"] if t.get("name") == "KS error"]
    np.testing.assert_allclose(as_array(mean_trace["x"]), [100, 268])
    assert at.session_state["lab:job"].done[100] is job.done[100], "the finished size came from the store"


def test_stop_callback_marks_the_job_and_a_failing_chunk_is_an_error_not_a_traceback():
    params = cl.LabParams(cl.GeneratorSpec.make("logistic", b0=0.5, b1=-1.5), ("ece_uniform",), 15, (100,), 2, 0)
    job = cl.lab_job(params)

    def failing(chunk, on_progress):
        raise cc.CalibrationInputError("`sizes` must hold whole numbers >= 2, got 1.")

    job.advance(failing)
    assert job.stopped and "whole numbers" in job.error and not job.done
    at = open_page(**{"lab:job": job})
    assert not at.exception
    (error,) = at.error
    assert "The run stopped with an error" in error.value and "press Run" in error.value


@pytest.mark.parametrize("widget, message", [("lab_estimators", "Choose at least one estimator"),
                                             ("lab_sizes", "Choose at least one test-set size")])
def test_empty_choices_are_errors_that_say_what_to_do(widget, message):
    at = open_page()
    at.multiselect(key=widget).set_value([])
    at = at.button(key="lab:run").click().run()
    assert not at.exception
    (error,) = at.error
    assert message in error.value
    assert "lab:job" not in at.session_state


def test_a_test_set_too_large_for_memory_is_refused():
    at = open_page()
    at.selectbox(key="lab_generator").set_value("logistic_normal").run()
    at.number_input(key="lab_ln_classes").set_value(100)
    at = run_tiny_lab(at, sizes=(100, 200_000), repetitions=2)
    assert not at.exception
    (error,) = at.error
    assert "n = 200,000 rows with K = 100 classes" in error.value and "Remove the sizes above 100,000" in error.value
    assert "lab:job" not in at.session_state


def test_preset_fills_the_logistic_parameters_and_other_generators_run():
    at = open_page()
    at.selectbox(key="lab_preset").set_value("Vaicenavicius et al.: perfect, Bayes-optimal (0, -2)").run()
    assert at.number_input(key="lab_b0").value == 0.0
    assert at.number_input(key="lab_b1").value == -2.0

    at.selectbox(key="lab_generator").set_value("uniform_simplex").run()
    at.multiselect(key="lab_estimators").set_value(["ece_uniform_fixed", "canonical_ce"])
    at.number_input(key="lab_fixed_bins").set_value(10)
    at = run_tiny_lab(at, sizes=(200,), repetitions=2)
    assert_clean(at)
    assert at.subheader[0].value == "Uniform-simplex model (K=3, t1=0.9, t2=0.6)"
    truth = cc.UniformSimplexModel().truth()
    names = {t["name"] for t in traces(specs(at)[0], fl.TRUTH_TRACE_PREFIX)}
    assert names == {f"truth: TCE = {truth['tce']:.4f}", f"truth: canonical CE (TV) = {truth['canonical_tv']:.4f}"}
    assert {t["name"] for t in specs(at)[0]["data"]} >= {"ECE (uniform, B=10)"}
    bounds = specs(at)[1]
    assert traces(bounds, "total bound at B = 10"), "the fixed-B bound is drawn when a fixed-B ECE runs"
    assert "L = 1 assumed" in " ".join(c.value for c in at.caption)


# ============================================================================ your data
def test_test_set_size_study_on_the_default_demo():
    at = open_page(tab=TABS[2], **{"lab_study_metrics": ["ece", "brier"],
                                   "lab_study_repetitions": 5})
    assert_clean(at)
    data = load_demo(state.DEFAULT_DEMO)
    sizes = study_sizes(data.n_samples)
    assert data.n_samples // 2 in sizes and sizes[0] == 100 and sizes[-1] == data.n_samples
    study = cc.subset_study(data.probs, data.labels, ["ece", "brier"], sizes=sizes, repetitions=5, seed=0)
    (spec,) = specs(at)
    (ece_line,) = [t for t in spec["data"] if t.get("name") == state.DEFAULT_DEMO and t.get("xaxis") in (None, "x")]
    rows = study.summary[study.summary["metric"] == "ece"]
    np.testing.assert_allclose(as_array(ece_line["x"]), rows["size"])
    np.testing.assert_allclose(as_array(ece_line["y"]), rows["mean"], rtol=1e-12)
    verdict = " ".join(m.value for m in at.markdown)
    assert f"**{md(state.DEFAULT_DEMO)}** (N = {data.n_samples:,})" in verdict  # names shown as plain text
    (table,) = [d.value for d in at.dataframe if "verdict" in d.value.columns]
    expected = stability_table(study.summary.assign(model=state.DEFAULT_DEMO), {state.DEFAULT_DEMO:
                                                                                   data.n_samples}, 0.1)
    np.testing.assert_allclose(table["relative std. error"], expected["relative_se"], rtol=1e-12)
    assert list(table["verdict"]) == list(expected["verdict"])


def test_study_warns_about_models_too_small():
    at = open_page("iris_svc", tab=TABS[2])
    assert not at.exception
    assert f"{md('iris_svc')} has 75 rows" in at.warning[0].value and "at least 200" in at.warning[0].value
    assert not at.get("plotly_chart")


# ============================================================================ rank stability
def test_rank_stability_asks_for_a_second_model():
    at = open_page(tab=TABS[3])
    assert_clean(at)
    assert "Load at least two models on the Data page" in at.info[0].value
    (link,) = at.main.get("page_link")
    assert link.proto.page.endswith("app.py") or link.proto.label == "Go to the Data page"


def test_rank_stability_of_two_demos():
    at = open_page(TWO_DIGITS, tab=TABS[3], **{"lab_rank_bins": (10, 20)})
    assert_clean(at)
    models = {name: (load_demo(name).probs, load_demo(name).labels) for name in TWO_DIGITS.split(",")}
    expected = cc.bin_rank_stability(models, range(10, 21))
    (table,) = [d.value for d in at.dataframe if "mean ρ" in d.value.columns]
    assert len(table) == 32
    np.testing.assert_allclose(table["mean ρ"], expected.table["mean_spearman"], equal_nan=True)
    assert table["GCE variant"].iloc[0] == "uniform · top label · per class · no threshold · l1"
    heatmap, matrix = specs(at)
    z = as_matrix(heatmap["data"][0]["z"])
    assert z.shape == (8, 4)
    np.testing.assert_allclose(np.sort(z.ravel()), np.sort(expected.table["mean_spearman"]), equal_nan=True)
    assert as_matrix(matrix["data"][0]["z"]).shape == (11, 11)
    least = int(expected.table["mean_spearman"].fillna(2.0).to_numpy().argmin())
    assert matrix["layout"]["title"]["text"] == table["GCE variant"].iloc[least], "the least stable variant first"
    np.testing.assert_allclose(as_matrix(matrix["data"][0]["z"]), expected.correlations[least], equal_nan=True)
    assert "With two models every correlation is +1" in " ".join(c.value for c in at.caption)


def test_rank_stability_needs_two_bin_counts():
    at = open_page(TWO_DIGITS, tab=TABS[3], **{"lab_rank_bins": (12, 12)})
    assert not at.exception
    assert "at least two bin counts" in at.error[0].value


# ============================================================================ gallery
def test_gallery_shows_nixon_0_003_when_opened():
    at = open_page(tab=TABS[4])
    assert_clean(at)
    assert [e.label for e in at.expander] == [case.title for case in cc.pathologies()]
    assert not at.metric, "nothing is computed before a case is opened"
    at.session_state["lab:case:nixon_cancellation"] = True
    at.run()
    assert_clean(at)
    values = {m.label: m.value for m in at.metric}
    assert values["ece 10 bins"] == "0.003"
    (table,) = at.dataframe
    frame = table.value.set_index("quantity")
    assert frame.loc["ece 100 bins", "computed now"] == pytest.approx(0.465)
    assert frame.loc["ece 10 bins", "stated in the paper"] == "0.003"
    assert frame.loc["ece 100 bins", "stated in the paper"] == ""


@pytest.mark.slow
def test_every_gallery_case_opens():
    at = open_page(tab=TABS[4], **{f"lab:case:{case.key}": True for case in cc.pathologies()})
    assert_clean(at)
    assert len(at.dataframe) == len(cc.pathologies())
    values = {m.label: m.value for m in at.metric}
    assert float(values["ece after"]) < 1e-9, "Gruber & Buettner's map: ECE 0"


# ============================================================================ helpers
def test_job_progress_and_chunk_order():
    job = cl.Job("p", ("a", "b", "c"), (1.0, 1.0, 2.0))
    assert job.pending == "a" and job.fraction() == 0.0 and job.running
    job.advance(lambda chunk, cb: chunk.upper())
    assert job.done == {"a": "A"} and job.pending == "b"
    assert job.fraction(0.5) == pytest.approx(1.5 / 4)
    job.advance(lambda chunk, cb: 1)
    job.advance(lambda chunk, cb: 2)
    assert job.finished and not job.running and job.fraction() == 1.0 and job.wall_seconds >= 0
    job.advance(lambda chunk, cb: pytest.fail("nothing left to compute"))


def test_store_keeps_the_most_recently_used():
    store = cl.ResultStore(max_entries=2)
    store.put("a", 1)
    store.put("b", 2)
    assert store.get("a") == 1  # now b is the oldest
    store.put("c", 3)
    assert "b" not in store and store.get("a") == 1 and store.get("c") == 3 and len(store) == 2


def test_chunk_seeds_are_reproducible_and_differ_by_size_and_seed():
    assert cl.chunk_seed(0, 100) == cl.chunk_seed(0, 100)
    assert len({cl.chunk_seed(0, 100), cl.chunk_seed(0, 101), cl.chunk_seed(1, 100)}) == 3


def test_generator_specs_build_each_model():
    assert cl.GeneratorSpec.make("logistic", b0=0.0, b1=-2.0).build().is_calibrated
    normal = cl.GeneratorSpec.make("logistic_normal", n_classes=4, temperature=2.0, scale=10.0)
    assert normal.build().n_classes == 4 and normal.n_classes == 4
    assert normal.build() is normal.build(), "built once per spec"
    assert cl.lipschitz_of(normal) == (1.0, False)
    lipschitz, known = cl.lipschitz_of(cl.GeneratorSpec.make("logistic", b0=0.5, b1=-1.5))
    assert known and lipschitz == pytest.approx(cc.LogisticModel(0.5, -1.5).lipschitz)
    with pytest.raises(cc.CalibrationInputError, match="unknown generator"):
        cl.GeneratorSpec.make("nope")
    with pytest.raises(cc.CalibrationInputError, match="t2"):
        cl.GeneratorSpec.make("uniform_simplex", n_classes=3, t1=0.9, t2=0.0).build()


def test_fixed_bin_estimators_replace_the_15_bin_ones():
    options = cl.estimator_options()
    assert "ece_uniform_15" not in options and "ece_uniform_fixed" in options
    assert list(options).index("ece_uniform_fixed") == list(options).index("ece_adaptive") + 1
    spec = cl.GeneratorSpec.make("logistic", b0=0.5, b1=-1.5)
    (fixed,) = cl.resolve_estimators(spec, ["ece_adaptive_fixed"], 7)
    data = spec.build().sample(500, seed=1)
    assert fixed.compute(data.probs, data.labels) == pytest.approx(
        cc.ece(data.probs, data.labels, n_bins=7, binning="adaptive"))
    with pytest.raises(cc.CalibrationInputError, match="unknown lab estimator"):
        cl.resolve_estimators(spec, ["nope"], 15)


def test_variant_heatmap_places_each_variant():
    table = pd.DataFrame(cc.metrics.sensitivity.GCE_VARIANTS, columns=["binning", "max_prob", "class_conditional", "threshold",
                                                       "norm"])
    table["mean_spearman"] = np.linspace(-1, 1, 32)
    z = np.array(fl.variant_heatmap(table).data[0].z, dtype=float)
    assert z[0, 0] == -1.0 and z[-1, -1] == 1.0
    assert z[4, 0] == table.loc[16, "mean_spearman"], "row 4 starts the adaptive variants"
    assert not np.isnan(z).any()


def test_log_ticks_are_one_two_five():
    ticks = fl.log_ticks(100, 100_000)
    assert ticks["tickvals"][:4] == [100, 200, 500, 1000] and ticks["tickvals"][-1] == 100_000
    assert ticks["ticktext"][-1] == "100k" and ticks["ticktext"][3] == "1k"
    assert fl.log_ticks(120, 180)["tickvals"] == [120.0, 180.0]


# ============================================================================ calibration tests: size and power
def test_size_and_power_tab_runs_shows_the_chart_and_flags_hosmer_lemeshow():
    """A small run: the chart's size points are calib_core's rates, and HL (g - 2 dof) is flagged on the page."""
    at = open_page(tab=TABS[1])
    assert_clean(at)
    assert "Run the tests" in at.info[0].value and "R = 200" in at.info[0].value
    at.multiselect(key="lab_tests").set_value(["hosmer_lemeshow", "spiegelhalter"])
    at.multiselect(key="lab_power_sizes").set_value([100, 500])
    at.number_input(key="lab_tests_repetitions").set_value(300)
    at.button(key="lab:tests_run").click().run()
    assert_clean(at)
    params = at.session_state["lab:tests_job"].params
    expected_size = cc.simulate_p_values(cc.gaussian_mixture("perfect"), 500, params.variants(), 300,
                                         seed=cc.lab.size_power.cell_seed(0, "size", 500))
    expected = cc.summarise_size_power(expected_size)
    (spec,) = specs(at)  # only the open tab runs
    points = {t["name"]: as_array(t["y"]) for t in spec["data"] if t.get("xaxis", "x") == "x"
              and t.get("mode") == "markers"}
    rates = expected.size.set_index("test")["rate"]
    assert points[cl.TEST_VARIANTS["hosmer_lemeshow"][0]] == pytest.approx([rates["hosmer_lemeshow"]])
    assert points[cl.TEST_VARIANTS["spiegelhalter"][0]] == pytest.approx([rates["spiegelhalter"]])
    flags = [w.value for w in at.warning if w.value.startswith("**Flagged")]
    assert any("Hosmer-Lemeshow (g − 2 dof" in f for f in flags), flags
    assert rates["hosmer_lemeshow"] > 0.07
    table = at.dataframe[0].value
    assert set(table["n"]) == {100, 500} and len(table) == 2 + 2 * 2
