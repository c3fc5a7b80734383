"""AppTest tests of the Recalibration page (pages/6_Recalibration.py, its sections in studio/recalibration/),
its cached helpers (studio/compute_recalibration.py) and its figures (calib_core/plot/figures_recalibration.py).
The science it shows (calib_core.recalibration.compare and .sweeps) is tested in tests/recalibration/test_compare.py.

Each page test opens the page as a deep link in a fresh session (``switch_page``
before the first run). Expected numbers are computed independently with
calib_core on the same rows: fit on the calibration rows, evaluate on the test rows.
"""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.io import Predictions, load_demo
from calib_core.recalibration import RECALIBRATORS, Recalibrator, TemperatureScaling
from calib_core.recalibration import compare, recommendation, sweeps
from studio import compute_recalibration as cr
from studio import state
from calib_core.plot.figures_recalibration import MINIMISER_PREFIX, change_figure, gce_rank_figure, temperature_surface_figure
from studio.state import ModelView
from studio.text import literal, md, plot_text

from tests import app_support
from tests.app_support import APP, assert_clean
from tests.recalibration.test_compare import BEFORE_VALUES, results_from, with_exact_zeros

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/6_Recalibration.py"
TIMEOUT = 60
DIGITS, WINE, CANCER = "digits_gaussian_nb", "wine_random_forest", "breast_cancer_svc"
#: The registry function behind every metric key of the table, called directly.
DIRECT = {"ece": cc.ece, "ace": cc.ace, "sce": cc.sce, "mce": cc.mce, "ks": cc.ks_error, "nll": cc.nll,
          "brier": cc.brier_score, "accuracy": cc.accuracy}


def open_with_model(predictions: Predictions, *, n_boot: int = 0) -> AppTest:
    """The page with one model given as arrays (as after an upload), in a fresh session."""
    return app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT,
                                       session_values={"recal_boot": n_boot})


def open_page(demo: str | None = None, *, n_boot: int | None = None) -> AppTest:
    return app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": demo} if demo else None,
                                 session_values={"recal_boot": n_boot} if n_boot is not None else None)






def protocol_text(at: AppTest) -> str:
    """The protocol sentence of the info box above the results."""
    (box,) = [i.value for i in at.info if i.value.startswith("**Protocol:**")]
    return box


def summary(at: AppTest) -> pd.DataFrame:
    return at.dataframe[0].value


def details(at: AppTest) -> pd.DataFrame:
    return at.dataframe[1].value


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def all_text(at: AppTest) -> str:
    """Every text element of the main area: markdown, captions, alerts, headings."""
    kinds = ("markdown", "caption", "info", "warning", "error", "success", "subheader", "title")
    return "\n".join(str(element.value) for kind in kinds for element in at.main.get(kind))


def synthetic(n_rows: int = 300, n_classes: int = 4, *, seed: int = 0, logits: bool = False,
              split: bool = False, name: str = "synthetic") -> Predictions:
    """Over-confident predictions: logits of a calibrated model multiplied by 3."""
    rng = np.random.default_rng(seed)
    true_logits = rng.normal(size=(n_rows, n_classes)) * 1.5
    labels = np.array([rng.choice(n_classes, p=p) for p in cc.softmax(true_logits)])
    z = 3.0 * true_logits
    split_column = np.where(np.arange(n_rows) % 2 == 0, "calibration", "test") if split else None
    if logits:
        return Predictions.from_arrays(logits=z, labels=labels, name=name, split=split_column)
    return Predictions.from_arrays(probs=cc.softmax(z), labels=labels, name=name, split=split_column)


# ----------------------------------------------------------------------------- the default demo

def test_page_runs_on_the_default_demo_with_the_default_methods():
    at = open_page()
    assert_clean(at)
    assert at.title[0].value.startswith("Recalibration")
    assert at.multiselect(key="methods").value == list(cr.DEFAULT_METHODS)
    assert at.radio(key="protocol").value == "split_column"
    data = load_demo(DIGITS)
    n_cal, n_test = int((data.split == "calibration").sum()), int((data.split == "test").sum())
    sentence = protocol_text(at)
    assert "Holdout" in sentence and f"{n_cal:,} calibration rows" in sentence
    assert f"{n_test:,} disjoint test rows" in sentence
    # The protocol is stated once (issue 11, item 10: it used to be repeated about eight times).
    assert all_text(at).count("Protocol:") == 1 and all_text(at).count("Holdout:") == 1
    assert list(summary(at).index) == [compare.BEFORE, *cr.DEFAULT_METHODS]
    assert set(details(at)["method"]) == set(cr.DEFAULT_METHODS)
    # change, reliability before/after, two simplex views, temperature surface, GCE ranks
    assert len(at.get("plotly_chart")) == 6
    assert "`digits_gaussian_nb`:" in markdown(at)
    downloads = at.get("download_button")
    assert [d.proto.label for d in downloads] == ["Download report (HTML)", "Recalibrated predictions (CSV)",
                                                  "Fitted parameters (JSON)"]
    # Progress per method: one line per fitted method in the status box.
    for method in cr.DEFAULT_METHODS:
        assert f"`digits_gaussian_nb` · {method}: fitted in" in markdown(at)


def test_temperature_scaling_numbers_agree_with_calib_core():
    at = open_page(n_boot=50)
    assert_clean(at)
    data = load_demo(DIGITS)
    cal, test = data.split == "calibration", data.split == "test"
    model = TemperatureScaling(input="probs").fit(data.probs[cal], data.labels[cal])
    after = model.predict_proba(data.probs[test])
    before, labels = data.probs[test], data.labels[test]
    table = details(at)
    rows = table[table["method"] == "Temperature scaling"].set_index("metric")
    matrix = summary(at)
    for key, function in DIRECT.items():
        label = compare.metric_label(key)
        expected_after, expected_before = function(after, labels), function(before, labels)
        assert rows.loc[label, "after"] == pytest.approx(expected_after, rel=1e-9, abs=1e-12), key
        assert rows.loc[label, "before"] == pytest.approx(expected_before, rel=1e-9, abs=1e-12), key
        assert rows.loc[label, "delta"] == pytest.approx(expected_after - expected_before, rel=1e-9, abs=1e-12)
        assert matrix.loc["Temperature scaling", label] == pytest.approx(expected_after, rel=1e-9, abs=1e-12)
        assert matrix.loc[compare.BEFORE, label] == pytest.approx(expected_before, rel=1e-9, abs=1e-12)
    # The SCE column is also the class-wise ECE (uniform bins).
    assert rows.loc[compare.metric_label("sce"), "after"] == pytest.approx(cc.classwise_ece(after, labels), rel=1e-12)
    # Paired bootstrap intervals (the same seed resamples the same rows before and after), made as on the Metrics
    # page: the ECE's is its estimate +- z bootstrap standard errors, so it holds the estimate.
    ece_before = cc.metric_interval("ece", before, labels, n_boot=50, seed=0)
    ece_after = cc.metric_interval("ece", after, labels, n_boot=50, seed=0)
    assert rows.loc["ECE", "after_low"] == pytest.approx(ece_after.low, rel=1e-9)
    assert rows.loc["ECE", "after_high"] == pytest.approx(ece_after.high, rel=1e-9)
    assert rows.loc["ECE", "before_low"] == pytest.approx(ece_before.low, rel=1e-9)
    differences = (cc.bootstrap_ci(cc.ece, after, labels, n_boot=50, seed=0).samples
                   - cc.bootstrap_ci(cc.ece, before, labels, n_boot=50, seed=0).samples)
    half = 1.959963984540054 * differences.std(ddof=1)
    delta = rows.loc["ECE", "delta"]
    assert (rows.loc["ECE", "delta_low"], rows.loc["ECE", "delta_high"]) == \
        pytest.approx((delta - half, delta + half), rel=1e-9)
    assert "50 resamples, seed 0" in " ".join(c.value for c in at.main.caption)


def test_protocol_choices_random_split_and_cross_fitting():
    at = open_page(n_boot=0)
    at.radio(key="protocol").set_value("random").run()
    assert_clean(at)
    sentence = protocol_text(at)
    assert "stratified random split (seed 0)" in sentence and "test fraction 0.5" in sentence
    data = load_demo(DIGITS)
    split = cc.stratified_split(data.labels, test_fraction=0.3, seed=4)
    at.slider(key="test_fraction").set_value(0.3)
    at.number_input(key="recal_seed").set_value(4)
    at.run()
    assert_clean(at)
    sentence = protocol_text(at)
    assert f"evaluated on {split.eval_index.size:,} disjoint test rows" in sentence and "seed 4" in sentence
    # The table follows the split: temperature scaling fitted on the random fitting rows.
    model = TemperatureScaling(input="probs").fit(data.probs[split.fit_index], data.labels[split.fit_index])
    expected = cc.ece(model.predict_proba(data.probs[split.eval_index]), data.labels[split.eval_index])
    assert summary(at).loc["Temperature scaling", "ECE"] == pytest.approx(expected, rel=1e-9)

    at.radio(key="protocol").set_value("cross_fit").run()
    assert_clean(at)
    assert "5-fold cross-fitting on 899 rows" in protocol_text(at)
    at.selectbox(key="folds").set_value(3).run()
    assert_clean(at)
    assert "3-fold cross-fitting" in protocol_text(at)
    oof = cc.cross_fit(TemperatureScaling(input="probs"), data.probs, data.labels, n_folds=3, seed=4)
    assert summary(at).loc["Temperature scaling", "ECE"] == pytest.approx(cc.ece(oof, data.labels), rel=1e-9)


def test_in_sample_only_behind_the_labelled_checkbox():
    at = open_page(n_boot=0)
    assert "IN-SAMPLE" not in protocol_text(at)
    checkbox = at.checkbox(key="in_sample")
    assert "in-sample" in checkbox.label and "optimistic" in checkbox.label
    checkbox.check().run()
    assert_clean(at)
    sentence = protocol_text(at)
    assert sentence.startswith("**Protocol:** IN-SAMPLE (optimistic)") and "449 rows" in sentence
    assert any("In-sample evaluation is on" in w.value for w in at.warning)
    data = load_demo(DIGITS)
    cal = data.split == "calibration"
    model = TemperatureScaling(input="probs").fit(data.probs[cal], data.labels[cal])
    in_sample = cc.ece(model.predict_proba(data.probs[cal]), data.labels[cal])
    assert summary(at).loc["Temperature scaling", "ECE"] == pytest.approx(in_sample, rel=1e-9)
    at.checkbox(key="in_sample").uncheck().run()
    assert "Holdout" in protocol_text(at)


# ----------------------------------------------------------------------------- other models

def test_many_classes_leave_the_k_squared_methods_out_of_the_default_and_say_why(monkeypatch):
    """Issue 15, item 4: above its class-count limit Dirichlet calibration is not in the default set, the page
    says why, and choosing it anyway warns of the expected time (a lowered limit keeps the test small)."""
    from calib_core.recalibration import DirichletCalibration

    monkeypatch.setattr(DirichletCalibration, "max_default_classes", 10)
    at = open_with_model(synthetic(n_rows=400, n_classes=12, logits=True, name="wide"))
    assert_clean(at)
    assert at.multiselect(key="methods").value == [m for m in cr.DEFAULT_METHODS if m != "Dirichlet calibration"]
    captions = " ".join(c.value for c in at.main.caption)
    assert "**Dirichlet calibration** is left out of the default set above 10 classes" in captions
    assert "156 parameters here" in captions  # 12^2 + 12
    assert all(w.value.startswith("Exact zeros, NLL: ") for w in at.warning)  # issue 27's flags only
    assert "Dirichlet calibration" not in list(summary(at).index)
    at.multiselect(key="methods").set_value([*at.multiselect(key="methods").value, "Dirichlet calibration"]).run()
    assert_clean(at)
    (warning,) = [w.value for w in at.warning if not w.value.startswith("Exact zeros, NLL: ")]
    assert "**Dirichlet calibration** (about" in warning and "12 classes" in warning
    assert "Dirichlet calibration" in list(summary(at).index)


def test_few_classes_keep_the_whole_default_set_without_a_note():
    at = open_with_model(synthetic(n_rows=300, n_classes=4))
    assert at.multiselect(key="methods").value == list(cr.DEFAULT_METHODS)
    assert "left out of the default set" not in all_text(at)


def test_binary_demo_with_every_method():
    at = open_page(CANCER, n_boot=0)
    at.multiselect(key="methods").set_value(list(RECALIBRATORS)).run()
    assert_clean(at)
    # The only warnings: the methods that can emit exact zeros, flagged beside their NLL (issue 27).
    # Beside them, the methods that can emit exact zeros are flagged (issue 27): a warning where a true class got
    # exactly 0 on the evaluation rows, else a caption; no other warning.
    warnings = [w.value for w in at.warning]
    assert all(w.startswith("Exact zeros, NLL: ") for w in warnings), warnings
    flagged = {name for name, cls in RECALIBRATORS.items() if cls.emits_exact_zeros}
    notes = [*warnings, *(c.value for c in at.main.caption if c.value.startswith("Exact zeros, NLL: "))]
    assert {next(m for m in flagged if w.startswith(f"Exact zeros, NLL: {md(m)} ")) for w in notes} == flagged
    assert list(summary(at).index) == [compare.BEFORE, *RECALIBRATORS]
    assert "`breast_cancer_svc`:" in markdown(at)
    # The cautionary baseline is offered, labelled, and never recommended.
    assert any(compare.CAUTIONARY in i.value and "cautionary baseline" in i.value for i in at.info)
    verdict = next(m.value for m in at.markdown if m.value.startswith("`breast_cancer_svc`"))
    assert compare.CAUTIONARY not in verdict


def test_a_fit_stopped_at_its_iteration_cap_is_flagged_on_the_page():
    """digits_mlp: Dirichlet calibration stops at its 150-iteration cap; the page says so (its map is where the
    optimiser stopped, and differs between machines), and the default demo's converged fits get no such warning."""
    at = open_page("digits_mlp", n_boot=0)
    assert_clean(at)
    flagged = [w.value for w in at.warning if "stopped at its iteration cap" in w.value]
    assert len(flagged) == 1 and "**Dirichlet calibration**" in flagged[0] and "150 L-BFGS-B" in flagged[0]
    default = open_page(n_boot=0)
    assert not any("iteration cap" in w.value for w in default.warning)


def test_model_without_split_column_gets_a_random_split_and_downloads():
    predictions = synthetic(240, 3, name="upload_no_split")
    at = open_with_model(predictions)
    assert_clean(at)
    assert at.radio(key="protocol").options == ["Stratified random split", "K-fold cross-fitting"]
    assert "stratified random split (seed 0)" in protocol_text(at)
    assert len(at.get("download_button")) == 3  # the HTML report, the predictions CSV, the fitted parameters
    assert any("probabilities only" in c.value for c in at.main.caption)


def test_a_model_with_logits_uses_them():
    predictions = synthetic(300, 4, logits=True, split=True, name="with_logits")
    at = open_with_model(predictions)
    assert_clean(at)
    cal, test = predictions.split == "calibration", predictions.split == "test"
    model = TemperatureScaling().fit(predictions.logits[cal], predictions.labels[cal])
    expected = cc.nll(model.predict_proba(predictions.logits[test]), predictions.labels[test])
    assert summary(at).loc["Temperature scaling", "NLL"] == pytest.approx(expected, rel=1e-9)
    assert model.temperature_ > 1.5, "the synthetic logits are over-confident"
    assert not any("probabilities only" in c.value for c in at.main.caption)


def test_two_models_each_get_their_own_fits():
    at = open_page(f"{WINE},{CANCER}", n_boot=0)
    assert_clean(at)
    text = markdown(at)
    assert "`wine_random_forest`:" in text and "`breast_cancer_svc`:" in text
    assert at.selectbox(key="recal_model").value == WINE
    wine_ece = summary(at).loc[compare.BEFORE, "ECE"]
    at.selectbox(key="recal_model").set_value(CANCER).run()
    assert_clean(at)
    data = load_demo(CANCER)
    test = data.split == "test"
    assert summary(at).loc[compare.BEFORE, "ECE"] == pytest.approx(cc.ece(data.probs[test], data.labels[test]))
    assert summary(at).loc[compare.BEFORE, "ECE"] != wine_ece


def test_sidebar_split_with_one_split_falls_back_to_a_random_split_without_errors():
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["demo"] = WINE
    at.query_params["split"] = "test"
    at.session_state["recal_boot"] = 0
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert "stratified random split" in protocol_text(at)
    assert at.radio(key="protocol").options == ["Stratified random split", "K-fold cross-fitting"]
    assert any("choose *All rows* in the sidebar" in c.value for c in at.main.caption)


def test_impossible_protocol_and_failing_methods_end_in_messages_not_tracebacks():
    tiny = synthetic(8, 2, name="tiny", seed=3)
    at = open_with_model(tiny)
    at.radio(key="protocol").set_value("cross_fit").run()
    at.selectbox(key="folds").set_value(10).run()
    assert not at.exception
    (error,) = at.error
    shown = error.value.replace("\\", "")  # calib_core's message is shown as plain text (escaped Markdown)
    assert "tiny" in shown and "cannot be split" in shown and "n_folds" in shown


def test_no_method_chosen_is_a_hint():
    at = open_page(n_boot=0)
    at.multiselect(key="methods").set_value([]).run()
    assert_clean(at)
    assert any("at least one method" in i.value for i in at.info)
    assert not at.get("plotly_chart")


# ----------------------------------------------------------------------------- compute helpers

def view_of(predictions: Predictions) -> ModelView:
    return ModelView(predictions.name, predictions, state.fingerprint(predictions), "all rows")


def test_fit_methods_reports_progress_per_method_and_caches_per_method():
    views = [view_of(synthetic(200, 3, name="a")), view_of(synthetic(200, 3, seed=1, name="b"))]
    calls = []
    fits = cr.fit_methods(views, ["Temperature scaling", "Isotonic regression"], compare.Protocol("random"),
                          on_progress=lambda *args: calls.append(args))
    assert calls == [("a", "Temperature scaling", 0, 4), ("a", "Isotonic regression", 1, 4),
                     ("b", "Temperature scaling", 2, 4), ("b", "Isotonic regression", 3, 4), ("", "", 4, 4)]
    assert set(fits) == {"a", "b"} and all(f.ok for model in fits.values() for f in model.values())
    assert fits["a"]["Temperature scaling"].after != fits["b"]["Temperature scaling"].after


def test_cached_fits_and_evaluation_rows_are_shared_read_only_not_copied_per_run():
    """Issue 15: st.cache_data unpickled a fresh 200 MB copy of each fit per re-render at 50,000 x 1,000 (1.7 s)."""
    predictions = synthetic(200, 3, split=True, name="m")
    fingerprint = state.fingerprint(predictions)
    ev = cr.evaluation_set(predictions, fingerprint, compare.Protocol())
    fit = cr.fit_method(predictions, fingerprint, "Temperature scaling", compare.Protocol())
    assert cr.evaluation_set(predictions, fingerprint, compare.Protocol()) is ev
    assert cr.fit_method(predictions, fingerprint, "Temperature scaling", compare.Protocol()) is fit
    for array in (ev.before, ev.labels, ev.fit_index, ev.eval_index, fit.probs):
        assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        fit.probs[0, 0] = 0.5


def test_a_model_without_a_usable_split_column_is_told_why_it_is_split_at_random():
    no_split = synthetic(50, 2)
    used, note = cr.effective_protocol(no_split, compare.Protocol("split_column", 0.25, 3))
    assert used == compare.Protocol("random", 0.25, 3) and "has no `split` column" in note
    with_split = synthetic(50, 2, split=True)
    assert cr.effective_protocol(with_split, compare.Protocol("split_column", 0.25, 3)) == (compare.Protocol(), None)


def test_recalibrated_csv_and_json_round_trip():
    predictions = synthetic(200, 3, split=True, name="m")
    fingerprint = state.fingerprint(predictions)
    protocol = compare.Protocol()
    ev = cr.evaluation_set(predictions, fingerprint, protocol)
    fit = cr.fit_method(predictions, fingerprint, "Vector scaling", protocol)
    frame = pd.read_csv(io.BytesIO(cr.predictions_csv(predictions, ev, fit)))
    assert list(frame.columns) == ["label", "split", "p_0", "p_1", "p_2"]
    assert (frame["split"] == np.where(predictions.split == "calibration", "calibration", "test")).all()
    np.testing.assert_array_equal(frame["label"], predictions.labels)
    restored = Recalibrator.from_json(fit.params_json)
    np.testing.assert_allclose(frame.loc[frame["split"] == "test", ["p_0", "p_1", "p_2"]], fit.probs, rtol=1e-9)
    np.testing.assert_array_equal(restored.predict_proba(predictions.probs[ev.eval_index]), fit.probs)
    # Cross-fitting: the out-of-fold predictions of every row.
    cross = compare.Protocol("cross_fit", n_folds=4)
    ev_cf = cr.evaluation_set(predictions, fingerprint, cross)
    fit_cf = cr.fit_method(predictions, fingerprint, "Temperature scaling", cross)
    frame_cf = compare.recalibrated_frame(predictions.probs, predictions.labels, ev_cf, fit_cf,
                                          class_names=predictions.class_names)
    assert (frame_cf["split"] == "out-of-fold").all()
    oof = cc.cross_fit(TemperatureScaling(input="probs"), predictions.probs, predictions.labels, n_folds=4, seed=0)
    np.testing.assert_allclose(frame_cf[["p_0", "p_1", "p_2"]].to_numpy(), oof, rtol=1e-12)


def test_a_failing_fit_is_returned_with_its_message():
    predictions = synthetic(60, 3, name="m")
    fit = cr.fit_method(predictions, state.fingerprint(predictions), "No such method", compare.Protocol("random"))
    assert not fit.ok and fit.severity == "warning" and "unknown method" in fit.message


# ----------------------------------------------------------------------------- figures

def test_figures_mark_minimisers_and_draw_every_method():
    table = pd.DataFrame({"temperature": np.tile([0.5, 1.0, 2.0], 2), "metric": ["NLL"] * 3 + ["ECE"] * 3,
                          "value": [2.0, 1.0, 1.5, 0.3, 0.2, 0.1]})
    minimisers = pd.DataFrame({"metric": ["NLL", "ECE"], "temperature": [1.0, 2.0], "value": [1.0, 0.1]})
    fig = temperature_surface_figure(table, minimisers, marks={"Temperature scaling": 1.2})
    stars = {t.name: (t.x[0], t.y[0]) for t in fig.data if t.name and t.name.startswith(MINIMISER_PREFIX)}
    assert stars == {f"{MINIMISER_PREFIX}NLL": (1.0, 1.0), f"{MINIMISER_PREFIX}ECE": (2.0, 1.0)}
    ece = next(t for t in fig.data if t.name == "ECE")
    np.testing.assert_allclose(ece.y, [3.0, 2.0, 1.0])  # relative to the minimum
    assert any(t.name == "Temperature scaling: T = 1.2" for t in fig.data)
    panels = temperature_surface_figure(table, minimisers, layout="panels")
    np.testing.assert_allclose(next(t for t in panels.data if t.name == "ECE").y, [0.3, 0.2, 0.1])
    with pytest.raises(ValueError, match="layout"):
        temperature_surface_figure(table, minimisers, layout="grid")

    results = results_from({"A": {**BEFORE_VALUES, "ece": 0.1}, "B": BEFORE_VALUES}, BEFORE_VALUES)
    change = change_figure(results, keys=compare.PROBABILITY_SCALE_KEYS)
    assert [t.name for t in change.data] == ["A", "B"]
    np.testing.assert_allclose(change.data[0].y, [-0.1, 0.0, 0.0, 0.0])

    ranks = pd.DataFrame([[1] * 32, [2] * 32], index=["A", compare.CAUTIONARY], columns=range(32))
    heat = gce_rank_figure(ranks, ranks.astype(float) / 10, sweeps.variant_table(), highlight=(compare.CAUTIONARY,))
    assert list(heat.data[0].y) == ["A", f"<i>{plot_text(compare.CAUTIONARY)}</i>"]  # its "&" as plain text
    assert heat.data[0].x[4] == "4 ECE" and heat.data[0].x[1] == "1"


def test_the_same_probabilities_with_and_without_logits_are_fitted_separately():
    with_logits = synthetic(200, 3, logits=True, name="m")
    as_probs = Predictions.from_arrays(probs=with_logits.probs, labels=with_logits.labels, name="m")
    fingerprint = state.fingerprint(with_logits)
    assert fingerprint != state.fingerprint(as_probs), "the app's fingerprint must include the logits"
    protocol = compare.Protocol("random")
    # Even under one fingerprint the input kind keeps the cached fits apart.
    fit_logits = cr.fit_method(with_logits, fingerprint, "Vector scaling", protocol)
    fit_probs = cr.fit_method(as_probs, fingerprint, "Vector scaling", protocol)
    assert cr.evaluation_set(as_probs, fingerprint, protocol).input == "probs"
    assert json.loads(fit_logits.params_json)["params"]["input"] == "logits"
    assert json.loads(fit_probs.params_json)["params"]["input"] == "probs"
    assert fit_logits.after != fit_probs.after


def test_thin_classes_are_reported_with_what_to_do():
    labels = np.array([0] * 30 + [1] * 30 + [2])  # class 2: one row, so it cannot be in both parts
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=labels.size)
    predictions = Predictions.from_arrays(probs=probs, labels=labels, name="thin")
    fingerprint = state.fingerprint(predictions)
    notes = cr.evaluation_set(predictions, fingerprint, compare.Protocol("random")).notes
    assert any("Too few fitting rows of class 2 (1 row)" in n and "cross-fitting" in n for n in notes)
    assert any("Class 2 does not occur among the evaluation rows" in n for n in notes)
    cross = cr.evaluation_set(predictions, fingerprint, compare.Protocol("cross_fit", n_folds=5)).notes
    assert any("fewer rows than the 5 folds" in n and "Use fewer folds" in n for n in cross)
    at = open_with_model(predictions)
    assert not at.exception
    assert any("Too few fitting rows" in w.value for w in at.warning)


# ----------------------------------------------------------------------------- issue 11: names, texts, exact zeros

def test_heatmap_names_only_variants_equal_to_the_table_metric_on_the_default_demo():
    at = open_page(n_boot=0)
    assert_clean(at)
    heat = app_support.plotly_specs(at)[-1]["data"][0]
    assert heat["type"] == "heatmap"
    x = list(heat["x"])
    assert x[4] == "4 ECE" and x[8] == "8" and x[24] == "24"
    assert not {"SCE", "ACE", "TACE"} & {token for v in x for token in v.replace(",", " ").split()}
    values = np.asarray(heat["customdata"], dtype=object)[..., 0].astype(float)
    methods = [y.replace("<i>", "").replace("</i>", "") for y in heat["y"]]
    matrix = summary(at)
    for i, method in enumerate(methods):  # the ECE column of the heatmap is the ECE of the table above
        assert values[i, 4] == pytest.approx(matrix.loc[method, "ECE"], rel=1e-12)
    note = next(c.value for c in at.main.caption if "Named columns" in c.value)
    assert "4 = ECE" in note and "8 SCE" in note
    assert "variant 8 = 0.0424 against SCE = 0.0299" in note and "variant 24 = 0.0374 against ACE = 0.0280" in note


def test_cautionary_baseline_is_explained_where_it_is_left_unmarked():
    """Issue 11, item 10: "the cautionary baseline is not eligible" was said without saying why."""
    at = open_page(n_boot=0)
    assert "not eligible" not in all_text(at) and compare.CAUTIONARY not in all_text(at)  # not chosen: not mentioned
    at.multiselect(key="methods").set_value(["Temperature scaling", compare.CAUTIONARY]).run()
    assert_clean(at)
    assert "not eligible" not in all_text(at)
    note = next(c.value for c in at.main.caption if "Green: the best method" in c.value)
    assert f"**{compare.CAUTIONARY}** is never marked" in note and "calibrated by construction" in note
    # It has the lowest ECE in the table, yet the ECE winner marked green is temperature scaling.
    matrix = summary(at)
    assert matrix.loc[compare.CAUTIONARY, "ECE"] < matrix.loc["Temperature scaling", "ECE"]
    table = details(at).rename(columns={"metric": "key"})
    table["key"] = table["key"].map({compare.metric_label(k): k for k in compare.METRIC_KEYS})
    assert compare.best_methods(table)["ece"] == ["Temperature scaling"]


def test_tables_show_a_dash_not_none_for_missing_values():
    """Issue 11, item 10: without intervals the table printed a literal "None" in six columns."""
    predictions = synthetic(200, 3, split=True, name="m")
    fingerprint = state.fingerprint(predictions)
    ev = cr.evaluation_set(predictions, fingerprint, compare.Protocol())
    fits = {"Temperature scaling": cr.fit_method(predictions, fingerprint, "Temperature scaling", compare.Protocol())}
    table = compare.results_table(ev, fits)
    assert table[compare.INTERVAL_COLUMNS].isna().all().all()
    shown = cr.styled_details(table)
    assert not set(compare.INTERVAL_COLUMNS) & set(shown.data.columns)  # no intervals: no interval columns
    partial = table.copy()
    partial.loc[0, compare.INTERVAL_COLUMNS] = 0.1  # intervals for one metric only
    html = cr.styled_details(partial).to_html()
    assert cr.MISSING in html and "None" not in html and "nan" not in html
    matrix = compare.summary_matrix(ev, table)
    matrix.iloc[1, 0] = np.nan
    html = cr.styled_summary(matrix, compare.best_methods(table)).to_html()
    assert cr.MISSING in html and "nan" not in html
    at = open_page(n_boot=0)
    assert not set(compare.INTERVAL_COLUMNS) & set(details(at).columns)
    assert "None" not in details(at).astype(str).to_numpy().ravel().tolist()


def test_user_supplied_names_are_plain_text_everywhere_on_the_page():
    name = "**bold** [x](http://y) $z$ <b>h</b> :red[r]"
    predictions = synthetic(240, 3, name=name)
    at = open_with_model(predictions)
    assert not at.exception
    text = all_text(at)
    assert literal(name) in text and f"{literal(name)}:" in markdown(at)
    # Outside its code span the name never appears, so no part of it is read as Markdown or HTML.
    stripped = text.replace(literal(name), "")
    for part in ("**bold**", "[x](http://y)", "$z$", "<b>h</b>", ":red[r]"):
        assert part not in stripped, part


def test_temperature_surface_takes_the_same_logarithm_as_temperature_scaling():
    """Probabilities with exact zeros: softmax(log(p + 1e-12) / T), so the fitted T mark belongs to the curves."""
    probs, labels = with_exact_zeros(600, 4, seed=5)
    predictions = Predictions.from_arrays(probs=probs, labels=labels, name="votes")
    fingerprint = state.fingerprint(predictions)
    protocol = compare.Protocol("random")
    surface = cr.temperature_surface(predictions, fingerprint, protocol, with_kde=False)
    ev = cr.evaluation_set(predictions, fingerprint, protocol)
    p, y = probs[ev.eval_index], labels[ev.eval_index]
    nll = surface.table[surface.table["metric"] == "NLL"]
    expected = [cc.nll(cc.softmax(np.log(p + 1e-12) / t), y) for t in nll["temperature"]]
    np.testing.assert_allclose(nll["value"], expected, rtol=1e-12)
    fit = cr.fit_method(predictions, fingerprint, "Temperature scaling", protocol)
    fitted_t = compare.fitted_temperatures({"Temperature scaling": fit})["Temperature scaling"]
    direct = TemperatureScaling().fit(np.log(probs[ev.fit_index] + 1e-12), labels[ev.fit_index]).temperature_
    assert fitted_t == pytest.approx(direct, rel=1e-9) and fitted_t < 20


def test_temperature_surface_takes_logarithms_of_its_own_rows_only(monkeypatch):
    """Issue 15: at 50,000 x 1,000 the page took the logarithm of every row (0.4 s) for a surface drawn on 1,000 of
    them; it now takes them on the surface's rows only, and the surface is the one of all evaluation rows."""
    monkeypatch.setattr(sweeps, "SURFACE_MAX_ROWS", 40)
    probs, labels = with_exact_zeros(300, 3, seed=2)
    predictions = Predictions.from_arrays(probs=probs, labels=labels, name="subset")
    fingerprint = state.fingerprint(predictions)
    protocol = compare.Protocol("random")
    ev = cr.evaluation_set(predictions, fingerprint, protocol)
    surface = cr.temperature_surface(predictions, fingerprint, protocol, seed=3)
    scores = compare.log_scores(probs, None)[ev.eval_index]
    expected = sweeps.temperature_surface(scores, labels[ev.eval_index], seed=3)
    assert surface.n_rows == 40 < ev.eval_index.size
    pd.testing.assert_frame_equal(surface.table, expected.table, check_exact=True)
    assert surface.kde_rows == expected.kde_rows


# ----------------------------------------------------------------------------- estimates first, intervals after

def expected_intervals(predictions: Predictions, n_boot: int, seed: int = 0) -> pd.DataFrame:
    """The interval table of the default methods under the split column, computed without the page."""
    fingerprint = state.fingerprint(predictions)
    ev = cr.evaluation_set(predictions, fingerprint, compare.Protocol())
    fits = {m: cr.fit_method(predictions, fingerprint, m, compare.Protocol()) for m in cr.DEFAULT_METHODS}
    return compare.intervals(ev, {m: f for m, f in fits.items() if f.ok}, n_boot=n_boot, seed=seed)


def test_every_estimate_and_chart_is_drawn_before_the_intervals_are_computed(monkeypatch):
    """Issue 15, item 2: the intervals (most of a re-render at 100,000 rows) come after everything else."""
    predictions = synthetic(300, 3, split=True, name="m")

    def interrupted(*args, **kwargs):
        raise RuntimeError("intervals reached")

    monkeypatch.setattr(cr, "intervals", interrupted)
    at = open_with_model(predictions, n_boot=50)
    assert at.exception  # the interruption (its message redacted, as every error shown to a visitor)
    # Drawn before: the verdict (without its noise check), both tables, reliability, simplex, surface, ranking.
    assert "`m`:" in markdown(at) and "bootstrap noise" not in markdown(at)
    assert "being computed" in all_text(at)
    assert set(details(at)["method"]) == set(cr.DEFAULT_METHODS)
    assert not set(compare.INTERVAL_COLUMNS) & set(details(at).columns)
    assert len(at.get("plotly_chart")) == 5  # all but the change chart, which waits for its error bars
    assert "The chart of each change with its interval appears when the intervals are in." in all_text(at)


def test_intervals_fill_in_and_a_rerun_reuses_them_without_recomputing(monkeypatch):
    predictions = synthetic(300, 3, split=True, name="m")
    at = open_with_model(predictions, n_boot=50)
    assert_clean(at)
    expected = expected_intervals(predictions, 50).set_index(["method", "key"])
    shown = details(at).assign(key=lambda t: t["metric"].map(
        {compare.metric_label(k): k for k in compare.METRIC_KEYS})).set_index(["method", "key"])
    for column in compare.INTERVAL_COLUMNS:
        assert np.allclose(shown[column], expected.loc[shown.index, column], rtol=1e-12, atol=0), column
    assert "being computed" not in all_text(at) and "bootstrap noise" in markdown(at)
    assert len(at.get("plotly_chart")) == 6
    assert "recal_intervals_stop" not in [b.key for b in at.button], "the progress and Stop are gone when done"
    labels = [d.proto.label for d in at.get("download_button")]
    assert labels[0] == "Download report (HTML)"
    # A display control: the intervals come from this session's memory, drawn at once, nothing recomputed.
    calls = []
    original = cr.intervals
    monkeypatch.setattr(cr, "intervals", lambda *a, **k: calls.append(1) or original(*a, **k))
    at.radio(key="recal_binning").set_value("adaptive").run()
    assert_clean(at)
    assert calls == [] and "bootstrap noise" in markdown(at)
    assert details(at)["after_low"].notna().all()


def test_a_stopped_run_keeps_every_estimate_and_resumes():
    from studio.recalibration import intervals

    predictions = synthetic(300, 3, split=True, name="m")
    at = app_support.open_with_model(
        PAGE, predictions, timeout=TIMEOUT, session_values={"recal_boot": 50, intervals.STOP.session_key: True})
    assert_clean(at)
    assert any("Stopped: the bootstrap intervals of `m` are not computed yet" in i.value for i in at.info)
    assert "were stopped" in all_text(at) and "bootstrap noise is added" not in all_text(at)
    assert not set(compare.INTERVAL_COLUMNS) & set(details(at).columns)
    assert len(at.get("plotly_chart")) == 6  # the change chart without error bars, and the report, after a stop
    assert [d.proto.label for d in at.get("download_button")][0] == "Download report (HTML)"
    at.button(key="recal_intervals_resume").click().run()
    assert_clean(at)
    assert intervals.STOP.session_key not in at.session_state
    assert details(at)["after_low"].notna().all() and "bootstrap noise" in markdown(at)
    assert "were stopped" not in all_text(at)


# ----------------------------------------------------------------------------- the answer in the pickers and report

def _expected_comparison(predictions: Predictions, n_boot: int) -> recommendation.Comparison:
    """The page's comparison made by calib_core directly: its first methods, protocol and seed."""
    return recommendation.compare_methods(predictions.probs, predictions.labels, logits=predictions.logits,
                                   split=predictions.split, split_names=predictions.split_names,
                                   class_names=list(predictions.class_names),
                                   methods=cr.default_methods([ModelView("m", predictions, "", "")]),
                                   n_boot=n_boot, seed=0)


def test_the_recommended_method_is_shown_first_and_the_report_holds_the_verdict_and_its_diagram(monkeypatch):
    """Issue 23, item 7: the report had no verdict line and drew temperature scaling (the first method), and the
    Downloads selector started on temperature scaling; both follow the recommendation now."""
    downloads = app_support.DeferredDownloads.install(monkeypatch)
    at = open_page(n_boot=50)
    assert_clean(at)
    expected = _expected_comparison(load_demo(DIGITS), 50).recommendation
    assert expected.method == "Dirichlet calibration" and expected.method != cr.DEFAULT_METHODS[0]
    assert at.selectbox(key="download").value == expected.method
    assert at.selectbox(key="method").value == expected.method
    # The page's verdict and the winner-against-runner-up sentence with its paired interval.
    page = markdown(at)
    assert expected.sentence(literal(DIGITS)) in page and expected.comparison() in page
    assert expected.pair is not None and f"[{expected.pair.low:+.4f}, {expected.pair.high:+.4f}]" in page
    text = downloads.get(at, "Download report (HTML)").decode()
    import html

    for line in (expected.sentence(DIGITS, markdown=False), expected.comparison(markdown=False)):
        assert html.escape(line, quote=True) in text
    assert f"After: {expected.method}" in text
    data = json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])
    (entry,) = data["recalibration"]
    assert entry["recommended"] == expected.method and entry["runner_up"] == expected.runner_up
    assert entry["margin"]["low"] == pytest.approx(expected.pair.low, abs=1e-12)


def test_rows_test_says_whether_the_winner_beats_the_runner_up():
    """Issue 23, item 8: with Rows = test the recommended method changes; the page says whether it beats the
    runner-up beyond noise, with the paired interval of their Brier difference."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["split"] = "test"
    at.session_state["recal_boot"] = 50
    at.switch_page(PAGE).run()
    assert_clean(at)
    expected = _expected_comparison(load_demo(DIGITS).select_split("test"), 50).recommendation
    pair = expected.pair
    assert (pair.winner, pair.runner_up) == (expected.best, expected.runner_up) and expected.method in expected.tied
    page = markdown(at)
    assert expected.comparison() in page
    interval = f"[{pair.low:+.4f}, {pair.high:+.4f}]"
    assert interval in page
    claim = "beats" if pair.low > 0 else "does not beat"
    assert claim in expected.comparison()


def test_rows_all_and_rows_test_give_the_same_advice_on_the_demo_of_issue_27():
    """Issue 27: on digits_random_forest the lowest Brier score moves between methods when the sidebar's Rows go
    from all to test, within noise; the page's advice (calib_core's tie rule) stays the same, with its verdict."""
    name = "digits_random_forest"
    advised = []
    for split in (None, "test"):
        query = {"demo": name, **({"split": split} if split else {})}
        at = app_support.open_link(PAGE, timeout=TIMEOUT, query=query, session_values={"recal_boot": 50})
        assert_clean(at)
        predictions = load_demo(name) if split is None else load_demo(name).select_split(split)
        expected = _expected_comparison(predictions, 50).recommendation
        page = markdown(at)
        assert expected.sentence(literal(name)) in page and expected.comparison() in page
        assert "Tied within noise" in expected.comparison() and "CalArena" in expected.comparison()
        assert at.selectbox(key="method").value == expected.method
        advised.append((expected.best, expected.method))
    (best_all, advice_all), (best_test, advice_test) = advised
    assert best_all != best_test and advice_all == advice_test == "Temperature scaling"


def test_the_pickers_follow_the_recommendation_until_a_method_is_picked():
    """Switching Rows to "test" changes the recommended method: pickers left alone follow it, a picked one stays."""
    from studio import state

    at = open_page(n_boot=0)
    assert_clean(at)
    on_all = _expected_comparison(load_demo(DIGITS), 0).recommendation.method
    on_test = _expected_comparison(load_demo(DIGITS).select_split("test"), 0).recommendation.method
    assert on_all != on_test
    assert at.selectbox(key="download").value == at.selectbox(key="method").value == on_all
    at.selectbox(key="method").set_value("Isotonic regression").run()
    at.radio(key=state.SPLIT_WIDGET).set_value("test").run()
    assert_clean(at)
    assert at.selectbox(key="download").value == on_test
    assert at.selectbox(key="method").value == "Isotonic regression"


def test_the_page_report_states_the_pages_seed_and_resamples(monkeypatch):
    """The report's settings and verdict use the page's seed and resamples (the report button used seed 0)."""
    downloads = app_support.DeferredDownloads.install(monkeypatch)
    predictions = synthetic(400, 3, name="m", seed=5)
    at = app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT,
                                     session_values={"recal_boot": 50, "recal_seed": 2})
    assert_clean(at)
    text = downloads.get(at, "Download report (HTML)").decode()
    data = json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])
    assert data["settings"]["seed"] == 2 and data["settings"]["n_boot"] == 50
    expected = recommendation.compare_methods(
        predictions.probs, predictions.labels, methods=cr.default_methods([ModelView("m", predictions, "", "")]),
        protocol=compare.Protocol(seed=2), n_boot=50, seed=2).recommendation
    (entry,) = data["recalibration"]
    assert entry["verdict"] == expected.sentence("m", markdown=False)
    assert entry["comparison"] == expected.comparison(markdown=False)
    assert "50 paired bootstrap resamples, seed 2" in entry["note"]
