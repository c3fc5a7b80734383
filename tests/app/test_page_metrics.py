"""AppTest tests of the Metrics page (pages/1_Metrics.py) beyond tests/app/test_app.py."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import Predictions

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/1_Metrics.py"


def open_with(predictions: Predictions):
    return app_support.open_with_model(PAGE, predictions, timeout=120)


def test_a_metric_that_cannot_be_computed_gets_a_note_and_the_rest_is_shown():
    """One row: SKCE and the kernel CEs need two; the page used to fail as a whole (compute_metrics raised)."""
    name = "one_row ![t](http://127.0.0.1:9/t.png)"
    at = open_with(Predictions(np.array([[0.7, 0.3]]), np.array([0]), ("a", "b"), name=name))
    assert not at.exception
    (note,) = [w.value for w in at.warning if "Not available" in w.value]
    assert "SKCE \\(unbiased\\)" in note and "needs at least 2 rows" in note
    assert "![t](http" not in note, "the model name is plain text, not an image"
    table = at.dataframe[1].value.set_index("key")
    assert np.isnan(table.loc["skce", "estimate"]) and "at least 2 rows" in table.loc["skce", "reason"]
    assert table.loc["ece", "estimate"] == pytest.approx(0.3) and table.loc["ece", "reason"] == ""


def test_names_carry_the_bin_settings_and_intervals_contain_the_estimates():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet([1, 1, 1], 300)
    labels = (rng.uniform(size=(300, 1)) > probs.cumsum(1)).sum(1).clip(0, 2)
    at = open_with(Predictions(probs, labels, ("a", "b", "c"), name="calibrated"))
    assert not at.exception and not at.error
    at.slider(key="metric_bins").set_value(8).run()
    table = at.dataframe[1].value.set_index("key")
    assert table.loc["ece", "name"] == "ECE, 8 uniform bins" and table.loc["ace", "name"] == "ACE, 8 adaptive bins"
    assert table.loc["kde_ce_kl", "name"] == "CE_KL (kernel), h = 0.01"
    assert list(at.dataframe[0].value.index) == [cc.metric_name(s.key, n_bins=8) for s in cc.metrics_of_kind("classes")]
    has = table["ci_low"].notna()
    assert (table.loc[has, "ci_low"] <= table.loc[has, "estimate"]).all()
    assert (table.loc[has, "estimate"] <= table.loc[has, "ci_high"]).all()
    # The page's intervals are calib_core's (200 resamples, seed 0 by default).
    for key in ("ace", "skce_block", "nll"):
        expected = cc.metric_interval(key, probs, labels, n_bins=8, n_boot=200, seed=0)
        assert (table.loc[key, "ci_low"], table.loc[key, "ci_high"]) == pytest.approx((expected.low, expected.high))
        assert table.loc[key, "interval"] == expected.note


def test_tests_table_shows_calib_core_verdicts_and_the_measured_size_flag():
    rng = np.random.default_rng(1)
    p1 = rng.uniform(0.05, 0.95, 400)
    labels = (rng.uniform(size=400) < p1 ** 2).astype(int)  # over-confident: miscalibrated
    probs = np.column_stack([1 - p1, p1])
    at = open_with(Predictions(probs, labels, ("no", "yes"), name="overconfident"))
    assert not at.exception and not at.error
    (tests,) = [d.value for d in at.dataframe if "p_value" in d.value.columns]
    tests = tests.set_index("method")
    assert list(tests.index) == list(cc.TEST_METHODS)
    for method in cc.TEST_METHODS:
        expected = cc.calibration_test(probs, labels, method, seed=0)
        assert tests.loc[method, "p_value"] == pytest.approx(expected.p_value)
        assert tests.loc[method, "verdict"] == expected.verdict
        assert tests.loc[method, "reason"] == expected.verdict_reason
        assert tests.loc[method, "measured_size"] == cc.lab.size_power.SIZE_NOTES[method]
    assert tests.loc["hosmer_lemeshow", "verdict"] == "miscalibrated"
    flags = [w.value for w in at.warning if "Flagged by the Lab" in w.value]
    assert len(flags) == 1 and "Hosmer-Lemeshow" in flags[0]


def test_deployment_prevalence_states_the_odds_factor_and_shifts_only_the_intercepts():
    rng = np.random.default_rng(3)
    p1 = rng.uniform(0.05, 0.95, 600)
    labels = (rng.uniform(size=600) < p1).astype(int)
    probs = np.column_stack([1 - p1, p1])
    name = "model ![t](http://127.0.0.1:9/t.png)"
    at = open_with(Predictions(probs, labels, ("neg", "pos **bold**"), name=name))
    assert not at.exception and not at.error
    at.number_input(key="prevalence").set_value(0.05).run()
    assert not at.exception and not at.error
    pi = labels.mean()
    factor = (0.05 / 0.95) / (pi / (1 - pi))
    (stated,) = [m.value for m in at.markdown if "odds are multiplied by" in m.value]
    assert f"**{factor:.4g}**" in stated and f"π = {pi:.3f}" in stated
    assert "pos \\*\\*bold\\*\\*" in stated, "the class name is plain text"
    (table,) = [d.value for d in at.dataframe if "after" in d.value.columns]
    table = table.set_index("key")
    shifted = cc.adjust_prevalence(probs, 0.05, labels=labels)
    assert table.loc["ici", "before"] == pytest.approx(cc.ici(probs, labels).ici)
    assert table.loc["ici", "after"] == pytest.approx(cc.ici(shifted.probs, labels).ici)
    assert table.loc["ece", "after"] == pytest.approx(cc.ece(shifted.probs, labels, n_bins=15))
    # Bayes' rule adds log(factor) to every logit: the slope stays, the calibration-in-the-large drops by it.
    assert table.loc["cox_slope", "after"] == pytest.approx(table.loc["cox_slope", "before"], rel=1e-6)
    assert table.loc["citl", "before"] - table.loc["citl", "after"] == pytest.approx(np.log(factor), rel=1e-6)


def test_deployment_prevalence_of_one_class_of_a_multiclass_model():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet([1, 1, 1], 300)
    labels = (rng.uniform(size=(300, 1)) > probs.cumsum(1)).sum(1).clip(0, 2)
    at = open_with(Predictions(probs, labels, ("a", "b", "c"), name="three"))
    at.selectbox(key="prevalence_class").set_value(2).run()
    assert not at.exception and not at.error
    (table,) = [d.value for d in at.dataframe if "after" in d.value.columns]
    view = cc.as_probs(probs[:, 2])
    shifted = cc.adjust_prevalence(view, 0.1, labels=labels == 2)
    assert table.set_index("key").loc["ece", "after"] == pytest.approx(cc.ece(shifted.probs, labels == 2))
    (stated,) = [m.value for m in at.markdown if "odds are multiplied by" in m.value]
    assert stated.startswith("Class c:")


def small_model(n=120, seed=5):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([1, 1, 1], n)
    labels = (rng.uniform(size=(n, 1)) > probs.cumsum(1)).sum(1).clip(0, 2)
    return Predictions(probs, labels, ("a", "b", "c"), name="small")


def expected_row(p, key, n_bins=15):
    return cc.metric_interval(key, p.probs, p.labels, n_bins=n_bins, binning="uniform", n_boot=200, seed=0)


def test_the_intervals_filled_in_one_at_a_time_are_todays_numbers_and_the_csv_has_them_all(downloads):
    p = small_model()
    at = open_with(p)
    assert not at.exception and not at.error
    table = at.dataframe[1].value.set_index("key")
    assert list(table.index) == [s.key for s in cc.metrics_of_kind("classes")]
    stop = [b for b in at.button if b.key != "metrics_plan_button"]  # the planner's button stays (inconclusive)
    assert not at.get("progress") and not stop, "the bar and the Stop button go once every interval is in"
    for spec in cc.metrics_of_kind("classes"):
        found = expected_row(p, spec.key)
        row = table.loc[spec.key]
        assert row["estimate"] == pytest.approx(found.estimate, rel=1e-12, nan_ok=True)
        for column, value in (("ci_low", found.low), ("ci_high", found.high), ("std", found.std)):
            assert row[column] == value or (np.isnan(row[column]) and np.isnan(value)), (spec.key, column)
        assert row["interval"] == found.note
    csv = downloads["calibration_metrics.csv"].decode()
    assert "pending" not in csv and "stopped" not in csv
    assert at.get("plotly_chart"), "the interval chart is drawn once the intervals are in"


def test_a_stopped_session_shows_estimates_with_pending_intervals_and_resumes(downloads):
    from studio import compute, metrics_page

    p = small_model()
    # Stopped after ECE's interval: the session remembers that one.
    ece = expected_row(p, "ece")
    fingerprint = app_support.state.fingerprint(p)
    done = {(fingerprint, "ece", 15, "uniform", 200, 0, 0.05): ece}
    at = app_support.open_with_model(PAGE, p, timeout=120, session_values={metrics_page.STOP_KEY: True,
                                                                           metrics_page.DONE_KEY: done})
    assert not at.exception and not at.error
    table = at.dataframe[1].value.set_index("key")
    report = cc.metric_report(p.probs, p.labels, n_bins=15)
    for key, value in report.values.items():
        assert table.loc[key, "estimate"] == pytest.approx(value)
    assert (table.loc["ece", "ci_low"], table.loc["ece", "ci_high"]) == (ece.low, ece.high)
    others = table.drop(index="ece")
    assert others["ci_low"].isna().all() and (others["interval"] == metrics_page.STOPPED).all()
    assert any(f"Stopped: {len(cc.metrics_of_kind('classes')) - 1} interval(s)" in i.value for i in at.info)
    # The CSV holds the finished interval and says which are pending.
    lines = downloads.pop("calibration_metrics.csv").decode().splitlines()
    assert sum(metrics_page.STOPPED in line for line in lines) == len(cc.metrics_of_kind("classes")) - 1
    assert at.get("plotly_chart")

    at.button(key="metric_intervals_resume").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[1].value.set_index("key")
    for key in ("ece", "ace", "nll", "skce_block"):
        found = expected_row(p, key)
        assert (table.loc[key, "ci_low"], table.loc[key, "ci_high"]) == (found.low, found.high)
    assert compute.PENDING not in set(table["interval"]) and metrics_page.STOPPED not in set(table["interval"])
    assert metrics_page.STOP_KEY not in at.session_state


def test_a_rerun_computes_only_the_missing_intervals(monkeypatch):
    from studio import metrics_page

    p = small_model(n=80)
    at = open_with(p)
    assert not at.exception
    calls = []
    original = cc.metric_interval

    def counted(key, *args, **kwargs):
        calls.append(key)
        return original(key, *args, **kwargs)

    monkeypatch.setattr(cc, "metric_interval", counted)
    at.slider(key="metric_bins").set_value(8).run()
    assert not at.exception
    uses_bins = {s.key for s in cc.metrics_of_kind("classes") if s.uses_bins}
    assert set(calls) == uses_bins, "intervals that do not depend on the bins come from the cache"
    calls.clear()
    at.slider(key="metric_bins").set_value(15).run()
    assert calls == [] and not at.get("progress")
    # A stop flag set at other settings does not stop these.
    at.session_state[metrics_page.STOP_KEY] = ("other settings",)
    at.selectbox(key="boot").set_value(100).run()
    assert not at.exception and metrics_page.STOP_KEY not in at.session_state
    table = at.dataframe[1].value.set_index("key")
    found = cc.metric_interval("ece", p.probs, p.labels, n_bins=15, n_boot=100, seed=0)
    assert (table.loc["ece", "ci_low"], table.loc["ece", "ci_high"]) == (found.low, found.high)


def test_per_class_fits_left_out_for_size_are_named_in_a_note_and_have_no_rows(monkeypatch):
    """Issue 15: above MAX_FIT_CELLS (rows x per-class fits; 50,000 x 1,000 is 50 million) the Cox terms and the
    loess summaries are left out, and the page says so (the limit is lowered here to fit a small model)."""
    from calib_core.metrics import reports
    for function in (reports.metric_report, reports.skipped_for_size):
        monkeypatch.setitem(function.__kwdefaults__, "max_fit_cells", 500)
    rng = np.random.default_rng(2)
    probs = rng.dirichlet([1, 1, 1], 300)
    at = open_with(Predictions(probs, rng.integers(0, 3, 300), ("a", "b", "c"), name="three classes"))
    assert not at.exception and not at.error
    (note,) = [i.value for i in at.info if "per-class fits" in i.value]
    assert "three classes" in note and "ICI" in note
    keys = set(at.dataframe[1].value["key"])
    assert "ece" in keys and not keys & {"ici", "e50", "e90", "cox_slope", "cox_intercept", "citl"}


def test_estimates_in_two_cached_halves_are_one_metric_report():
    """Issue 15: the binned metrics and the others are cached apart (a bins change recomputes only the binned
    half); merged they are exactly the report of one metric_report call, in registry order."""
    from studio import compute
    data = cc.load_demo("wine_logistic_regression")
    for n_bins, binning in ((15, "uniform"), (7, "adaptive")):
        merged = compute.metric_estimates(data, "wine", n_bins, binning)
        whole = cc.metric_report(data.probs, data.labels, n_bins=n_bins, binning=binning)
        assert list(merged.values) == list(whole.values)
        assert merged.values == whole.values and merged.reasons == whole.reasons and merged.skipped == whole.skipped


def test_the_report_and_the_fixable_part_use_the_pages_interval_level(monkeypatch):
    """Issue 23 review: at the 90 % Interval setting the page's HTML report and its fixable part were made at 95 %."""
    from studio import compute_estimators, report

    settings, alphas = [], []
    real_settings, real_fixable = report.ReportSettings, compute_estimators.fixable

    def recorded_settings(*args, **kwargs):
        settings.append(real_settings(*args, **kwargs))
        return settings[-1]

    def recorded_fixable(*args, **kwargs):
        alphas.append(kwargs.get("alpha", args[4] if len(args) > 4 else None))
        return real_fixable(*args, **kwargs)

    monkeypatch.setattr(report, "ReportSettings", recorded_settings)
    monkeypatch.setattr(compute_estimators, "fixable", recorded_fixable)
    at = open_with(small_model(n=120))
    assert not at.exception
    settings.clear(), alphas.clear()
    at.selectbox(key="level").set_value(0.90).run()
    assert not at.exception
    assert settings and all(s.alpha == pytest.approx(0.1) for s in settings)
    assert alphas and all(a == pytest.approx(0.1) for a in alphas)


def test_a_render_computes_each_estimate_once(monkeypatch):
    """Issue 24: the Metrics page had metric_report compute every estimate, then each interval compute it again
    (0.7 s for ACE at 50,000 x 1,000); each interval job now carries the table's estimate. Same numbers."""
    from types import SimpleNamespace

    from studio import compute
    from tests.registry_support import count_computes

    counted_keys = ("ece", "ace", "nll", "ks")
    calls = count_computes(monkeypatch, counted_keys)
    p = small_model(n=90, seed=7)
    model = SimpleNamespace(predictions=p, fingerprint="estimate-once", name="once", rows=p.n_samples)
    table, jobs = compute.estimates_table([model], n_bins=9, binning="uniform", n_boot=30, seed=0)
    for job in jobs:
        compute.fill_interval(table, job, job.compute())
    assert sorted(calls) == sorted(counted_keys)
    table = table.set_index("key")
    for key in counted_keys:
        found = cc.metric_interval(key, p.probs, p.labels, n_bins=9, n_boot=30, seed=0)
        assert (table.loc[key, "estimate"], table.loc[key, "ci_low"], table.loc[key, "ci_high"]) == (
            found.estimate, found.low, found.high)
