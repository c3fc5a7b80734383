"""Tests of the Estimators page (pages/7_Estimators.py), its helpers (studio/compute_estimators.py)
and its figures (calib_core/plot/figures_estimators.py, built and checked without a browser).

Page tests open the page as a deep link in a fresh session (``switch_page``
before the first run), so the page sets itself up and loads ``?demo=``.
Expected values are computed independently with calib_core on the same data.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.inference.blocks import block_estimate, block_indices
from calib_core.io import Predictions, load_demo
from studio import compute_estimators as ce
from calib_core.plot import figures
from calib_core.plot import figures_estimators as fe

from tests import app_support
from tests.app_support import APP, assert_clean, plotly_specs as specs, trace_array as as_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/7_Estimators.py"
TIMEOUT = 120
DIGITS, WINE, CANCER = "digits_gaussian_nb", "wine_random_forest", "breast_cancer_svc"
ESTIMATES, DECOMPOSITION, CHAIN, SMOOTH = range(4)
#: The registry's default Dirichlet bandwidth, the page's default too.
H = cc.metrics.registry.KDE_BANDWIDTH
#: The estimates table's names at the default settings: the registry's (the Metrics page's) names.
MMCE, SKCE, SKCE_LINEAR = "MMCE, h = 0.4", "SKCE (unbiased), h = median distance", \
    "SKCE (linear-time), h = median distance"
CE_KL, CE_L2, SMECE, ROOT_BRIER = "CE_KL (kernel), h = 0.01", "CE_2^2 (kernel), h = 0.01", "smECE, h = auto", \
    "sqrt(Brier) bound"


def open_with_model(predictions: Predictions) -> AppTest:
    """The page with one model given as arrays (as after an upload), in a fresh session."""
    return app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT)


def open_page(demo: str | None = None) -> AppTest:
    return app_support.open_link(PAGE, timeout=TIMEOUT, query={"demo": demo} if demo else None)










def traces(spec: dict, name: str) -> list[dict]:
    return [t for t in spec["data"] if t.get("name") == name]


def estimates(at: AppTest) -> pd.DataFrame:
    return at.dataframe[0].value.set_index("estimator")


def synthetic(n: int, k: int, seed: int = 0, name: str = "synthetic") -> Predictions:
    """Over-confident softmax predictions (temperature 0.5) with labels drawn from the calibrated ones."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1.5
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(0, k - 1)
    sharp = np.exp(2.0 * logits)
    return Predictions(sharp / sharp.sum(axis=1, keepdims=True), labels, tuple(f"c{i}" for i in range(k)),
                       name=name)


def decomposition_bars(spec: dict) -> dict[tuple[str, str], dict[str, float]]:
    """``{(axis, model): {part: value}}`` read off the stacked bars and the two markers."""
    bars: dict[tuple[str, str], dict[str, float]] = {}
    for name, part in ((fe.REFINEMENT_NAME, "refinement"), (fe.CALIBRATION_NAME, "calibration"),
                       (fe.SHARPNESS_NAME, "sharpness"), (fe.SCORE_NAME, "score"), (fe.ENTROPY_NAME, "entropy")):
        for trace in traces(spec, name):
            models, which = trace["x"]
            for model, bar, value in zip(models, which, as_array(trace["y"])):
                key = part if part != "refinement" else f"refinement under {bar}"
                bars.setdefault((trace.get("xaxis", "x"), model), {})[key] = value
    return bars


def check_decomposition(spec: dict, models: dict[str, Predictions], bandwidths: dict[str, float]) -> None:
    bars = decomposition_bars(spec)
    for (axis, name), parts in bars.items():
        probs, labels = models[name].probs, models[name].labels
        score = "brier" if axis == "x" else "log"
        empirical = cc.brier_score(probs, labels) if score == "brier" else cc.nll(probs, labels)
        # The bars add up to the score (and to the entropy), to rounding.
        assert parts["refinement under score"] + parts["calibration"] == pytest.approx(empirical, abs=1e-10)
        assert parts["score"] == pytest.approx(empirical, abs=1e-12)
        assert parts["refinement under entropy"] + parts["sharpness"] == pytest.approx(parts["entropy"], abs=1e-10)
        expected = cc.score_decomposition(probs, labels, score, bandwidth=bandwidths[name])
        assert parts["calibration"] == pytest.approx(expected.calibration, abs=1e-12)
    assert {name for _, name in bars} == set(models) and {axis for axis, _ in bars} == {"x", "x2"}


def chain_segments(spec: dict, name: str) -> int:
    found = traces(spec, name)
    return sum(int(np.isnan(as_array(t["x"])).sum()) for t in found)


# ----------------------------------------------------------------------------- the page on the demos

@pytest.mark.slow
def test_default_demo_matches_calib_core_and_draws_every_view():
    at = open_page()
    assert_clean(at)
    assert at.title[0].value == "Estimators beyond binning"
    data = load_demo(DIGITS)
    probs, labels = data.probs, data.labels
    h = H
    skce_h = cc.median_pairwise_distance(probs)  # 899 rows: the exact median of all pairs

    table = estimates(at)
    assert list(table.index) == [MMCE, SKCE, SKCE_LINEAR, CE_KL, CE_L2, SMECE, ROOT_BRIER]
    assert table.loc[MMCE, "estimate"] == pytest.approx(cc.mmce(probs, labels), abs=1e-12)
    assert table.loc[SKCE, "estimate"] == pytest.approx(cc.skce(probs, labels), abs=1e-12)
    assert table.loc[SKCE, "bandwidth"] == pytest.approx(skce_h)
    assert table.loc[CE_KL, "estimate"] == pytest.approx(cc.kde_ce(probs, labels, "kl", h), rel=1e-10)
    assert table.loc[CE_L2, "estimate"] == pytest.approx(cc.kde_ce(probs, labels, "l2", h), rel=1e-10)
    assert table.loc[SMECE, "estimate"] == pytest.approx(cc.smooth_ece(probs, labels), abs=1e-12)
    bound = table.loc[ROOT_BRIER]
    assert bound["estimate"] == pytest.approx(np.sqrt(cc.brier_score(probs, labels)), abs=1e-12)
    # The root Brier score's interval: a seeded percentile bootstrap (200 resamples), reproduced here.
    expected = cc.bootstrap_ci(cc.calibration_upper_bound, probs, labels, n_boot=200, seed=0)
    assert (bound["ci_low"], bound["ci_high"]) == pytest.approx((expected.low, expected.high), abs=1e-12)
    # 899 rows: every O(N^2) estimator on all rows; the unbiased SKCE has its variance-formula interval.
    found = cc.skce_estimate(probs, labels)
    assert table.loc[SKCE, "ci_high"] - table.loc[SKCE, "estimate"] == pytest.approx(1.959963984540054
                                                                                      * found.std_error)
    assert np.isnan(table.loc[CE_KL, "ci_low"]) and (table["rows"] == 899).all()
    assert (table["ci_low"].dropna() <= table["estimate"][table["ci_low"].notna()]).all()
    assert not [i for i in at.info if "block" in i.value], "no subsample for 899 rows"

    charts = specs(at)
    assert len(charts) == 4
    check_decomposition(charts[DECOMPOSITION], {DIGITS: data}, {DIGITS: h})
    # The bound chain: one link per inequality, the broken ones highlighted and listed.
    chain = cc.bound_chain(probs, labels, bandwidth=h)
    assert chain_segments(charts[CHAIN], fe.HELD_NAME) == len(chain.links) - len(chain.broken)
    assert chain_segments(charts[CHAIN], fe.BROKEN_NAME) == len(chain.broken) > 0
    (dots,) = [t for t in charts[CHAIN]["data"] if t.get("name") == DIGITS]
    np.testing.assert_allclose([c[0] for c in dots["customdata"]], [t.value for t in chain.terms], rtol=1e-12)
    (explained,) = [i.value for i in at.info if "estimated inequalities are out of order" in i.value]
    assert f"{len(chain.broken)} of 8 estimated inequalities" in explained and "none signals a bug" in explained
    assert "finite sample" in " ".join(m.value for m in at.markdown)
    # The smoothed curve, with smECE printed.
    curve = cc.smooth_reliability_curve(probs, labels, n_boot=0)
    assert traces(charts[SMOOTH], f"{DIGITS}: smoothed (smECE {curve.smece:.4f})")
    assert at.metric[0].value == f"{curve.smece:.4f}"


@pytest.mark.slow
def test_binary_demo():
    at = open_page(CANCER)
    assert_clean(at)
    data = load_demo(CANCER)
    table = estimates(at)
    assert len(table) == 7
    assert table.loc[SKCE, "estimate"] == pytest.approx(cc.skce(data.probs, data.labels), abs=1e-12)
    charts = specs(at)
    check_decomposition(charts[DECOMPOSITION], {CANCER: data}, {CANCER: H})
    chain = cc.bound_chain(data.probs, data.labels, bandwidth=H)
    assert chain.all_hold
    assert chain_segments(charts[CHAIN], fe.HELD_NAME) == 8 and not traces(charts[CHAIN], fe.BROKEN_NAME)
    assert "every estimated inequality holds" in at.success[0].value


@pytest.mark.slow
def test_large_upload_runs_the_quadratic_estimators_on_blocks():
    data = synthetic(12_000, 4, name="big_upload")
    plan = ce.plan_quadratic(12_000, 4, ce.AUTO, 10, auto_bandwidth=False, classwise=False)
    assert plan.uses_blocks and plan.all_rows_seconds > ce.BUDGET_SECONDS >= plan.seconds
    at = open_with_model(data)
    assert_clean(at)
    notes = " ".join(i.value for i in at.info)
    assert f"run on **{plan.describe()}**" in notes and "all rows" in notes
    assert "bootstrap intervals of the linear-time estimators" in notes  # 12,000 rows: left out by "auto"
    table = estimates(at)
    row = table.loc[f"{SKCE}, mean of {plan.describe()}"]
    assert row["interval"] == f"t-interval over {plan.n_blocks} blocks of {plan.block_rows:,} rows"
    assert row["rows"] == plan.rows_used
    # Independently: the same disjoint blocks, the U-statistic on each, their mean and t-interval.
    h = cc.metrics.registry.skce_bandwidth(data.probs, data.labels)
    blocks = block_indices(12_000, plan.block_rows, plan.n_blocks, seed=0)
    values = np.array([cc.skce(data.probs[b], data.labels[b], bandwidth=h) for b in blocks])
    assert row["estimate"] == pytest.approx(values.mean(), abs=1e-14)
    half = row["ci_high"] - row["estimate"]
    assert half == pytest.approx(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size))
    # The linear-time SKCE uses every row.
    assert table.loc[SKCE_LINEAR, "rows"] == 12_000
    bars = decomposition_bars(specs(at)[DECOMPOSITION])
    for parts in bars.values():
        assert parts["refinement under score"] + parts["calibration"] == pytest.approx(parts["score"], abs=1e-10)


@pytest.mark.slow
def test_settings_recompute_the_estimates():
    at = open_page(WINE)
    assert_clean(at)
    data = load_demo(WINE)
    probs, labels = data.probs, data.labels

    at.number_input(key="dirichlet_h").set_value(0.05)
    at.radio(key="kde").set_value("refinement")
    at.toggle(key="classwise").set_value(True)
    at.number_input(key="mmce_h").set_value(0.2)
    at.selectbox(key="est_boot").set_value(0)
    at.run()
    assert_clean(at)
    table = estimates(at)
    assert table.loc["CE_KL (kernel), h = 0.05, refinement-based", "estimate"] == pytest.approx(
        cc.kde_ce(probs, labels, "kl", 0.05, estimator="refinement"), rel=1e-10)
    assert table.loc["CE_2^2 class-wise (kernel), h = 0.05, refinement-based", "estimate"] == pytest.approx(
        cc.kde_ce(probs, labels, "l2", 0.05, True, estimator="refinement"), rel=1e-10)
    assert table.loc["MMCE, h = 0.2", "estimate"] == pytest.approx(cc.mmce(probs, labels, bandwidth=0.2), abs=1e-12)
    assert table.drop(index=[SKCE, SKCE_LINEAR])["ci_low"].isna().all(), "no bootstrap; SKCE needs none"
    check_decomposition(specs(at)[DECOMPOSITION], {WINE: data}, {WINE: 0.05})

    # Blocks of 500 rows do not fit into 89 rows: all rows are used.
    at.selectbox(key="block_rows").set_value(500).run()
    assert_clean(at)
    assert (estimates(at)["rows"] == 89).all()

    # The binned chain: TCE_1 is then the ECE itself.
    at.radio(key="chain").set_value("binned")
    at.slider(key="chain_bins").set_value(10)
    at.run()
    assert_clean(at)
    chain = cc.bound_chain(probs, labels, estimator="binned", n_bins=10, bandwidth=0.05, mmce_bandwidth=0.2)
    (dots,) = [t for t in specs(at)[CHAIN]["data"] if t.get("name") == WINE]
    np.testing.assert_allclose([c[0] for c in dots["customdata"]], [t.value for t in chain.terms], rtol=1e-12)

    at.radio(key="smece").set_value("fixed").run()
    at.number_input(key="smece_h").set_value(0.1)
    at.run()
    assert at.metric[0].value == f"{cc.smooth_ece(probs, labels, bandwidth=0.1):.4f}"


def test_slow_settings_are_announced_and_blocks_offered(monkeypatch):
    """With a tiny time budget even a demo counts as slow: the page says so and offers blocks."""
    monkeypatch.setattr(ce, "BUDGET_SECONDS", 1e-6)
    at = open_page(CANCER)
    assert not at.exception
    # 285 rows cannot hold two blocks of the smallest size (500): all rows, with a warning and the offer.
    (warning,) = [w.value for w in at.warning if "O(N²) estimators on all 285 rows take" in w.value]
    assert "A block size above gives a faster estimate with an interval" in warning
    assert any("bootstrap intervals of the linear-time estimators" in i.value for i in at.info)
    assert estimates(at).loc[[MMCE, SMECE, ROOT_BRIER], "ci_low"].isna().all(), "auto left the bootstrap out"
    at.selectbox(key="est_boot").set_value(100).run()
    table = estimates(at)
    assert table.loc[MMCE, "interval"] == "estimate +- 1.96 bootstrap standard errors (100 resamples)"
    assert table.loc[ROOT_BRIER, "interval"] == "percentile bootstrap, 100 resamples"
    assert not any("bootstrap intervals" in i.value for i in at.info)


def test_identical_predictions_get_every_estimate():
    """Constant predictions: every pairwise distance is 0, so the SKCE kernel is 1 whatever the bandwidth.

    The page used to stop with "median distance is 0; set a fixed SKCE bandwidth"; the registry's median
    heuristic now falls back to 1.0, where any bandwidth gives the same SKCE.
    """
    probs = np.tile([0.7, 0.3], (40, 1))
    labels = np.array([0, 1] * 20)
    at = open_with_model(Predictions(probs, labels, ("a", "b"), name="constant"))
    assert_clean(at)
    table = estimates(at)
    assert table.loc[SKCE, "bandwidth"] == 1.0
    assert table.loc[SKCE, "estimate"] == pytest.approx(cc.skce(probs, labels, bandwidth=0.3), abs=1e-15)
    pairs = cc.metrics.registry.skce_pair_order(probs, labels)
    assert table.loc[SKCE_LINEAR, "estimate"] == pytest.approx(
        cc.skce(probs[pairs], labels[pairs], bandwidth=7.0, estimator="block"), abs=1e-15)


def test_same_name_same_number_on_the_metrics_and_the_estimators_page():
    """Issue: the Metrics page showed SKCE (linear-time) 0.0162, CE_KL 16.80, CE_2^2 0.0291 on the default demo,
    the Estimators page 0.00477, 14.79, 0.0719 under the same names. Every name both pages show at their
    default settings must have one value and one interval."""
    metrics = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    metrics.switch_page("pages/1_Metrics.py")
    metrics.run()
    assert_clean(metrics)
    on_metrics = metrics.dataframe[1].value.set_index("name")
    on_estimators = estimates(open_page())
    shared = sorted(set(on_metrics.index) & set(on_estimators.index))
    assert shared == sorted([MMCE, SKCE, SKCE_LINEAR, CE_KL, CE_L2, SMECE, ROOT_BRIER]), "every estimator shared"
    for name in shared:
        assert on_estimators.loc[name, "estimate"] == pytest.approx(on_metrics.loc[name, "estimate"],
                                                                    rel=1e-12, abs=1e-15), name
        for end in ("ci_low", "ci_high"):
            assert on_estimators.loc[name, end] == pytest.approx(on_metrics.loc[name, end], rel=1e-12,
                                                                 abs=1e-15, nan_ok=True), (name, end)
    data = load_demo(DIGITS)
    assert on_metrics.loc[CE_KL, "estimate"] == pytest.approx(cc.kde_ce(data.probs, data.labels, "kl"), rel=1e-12)


def test_a_changed_setting_is_part_of_the_name():
    at = open_page(WINE)
    at.radio(key="dirichlet").set_value("auto")
    at.radio(key="skce").set_value("fixed").run()
    at.number_input(key="skce_h").set_value(0.25).run()
    assert_clean(at)
    data = load_demo(WINE)
    h = cc.kde_bandwidth(data.probs)
    table = estimates(at)
    assert table.loc[f"CE_KL (kernel), h = {h:.3g} (leave-one-out)", "estimate"] == pytest.approx(
        cc.kde_ce(data.probs, data.labels, "kl", h), rel=1e-10)
    assert table.loc["SKCE (unbiased), h = 0.25", "estimate"] == pytest.approx(
        cc.skce(data.probs, data.labels, bandwidth=0.25), abs=1e-14)
    assert CE_KL not in table.index and SKCE not in table.index


# ----------------------------------------------------------------------------- planning helpers

def test_plan_uses_all_rows_when_quick_and_blocks_otherwise():
    small = ce.plan_quadratic(899, 10, ce.AUTO, 10, auto_bandwidth=True, classwise=False)
    assert not small.uses_blocks and small.describe() == "all 899 rows" and small.rows_used == 899
    big = ce.plan_quadratic(200_000, 10, ce.AUTO, 10, auto_bandwidth=True, classwise=False)
    assert big.uses_blocks and big.seconds <= ce.BUDGET_SECONDS < big.all_rows_seconds
    assert big.describe() == f"{big.n_blocks} blocks of {big.block_rows:,} rows"
    assert ce.plan_quadratic(200_000, 10, ce.ALL_ROWS, 10, auto_bandwidth=True, classwise=False).block_rows is None
    chosen = ce.plan_quadratic(200_000, 10, 5_000, 20, auto_bandwidth=False, classwise=False)
    assert (chosen.block_rows, chosen.n_blocks, chosen.rows_used) == (5_000, 20, 100_000)
    few = ce.plan_quadratic(12_000, 3, 5_000, 20, auto_bandwidth=False, classwise=False)
    assert few.n_blocks == 2, "no more blocks than fit"
    assert ce.plan_quadratic(9_000, 3, 5_000, 20, auto_bandwidth=False, classwise=False).block_rows is None
    # The cost grows with the rows, the classes and the class-wise estimates.
    cost = ce.quadratic_seconds
    assert cost(4000, 3, auto_bandwidth=False, classwise=False) < cost(8000, 3, auto_bandwidth=False, classwise=False)
    assert cost(4000, 3, auto_bandwidth=False, classwise=False) < cost(4000, 30, auto_bandwidth=False, classwise=False)
    assert cost(4000, 3, auto_bandwidth=False, classwise=False) < cost(4000, 3, auto_bandwidth=True, classwise=False)
    assert cost(4000, 3, auto_bandwidth=False, classwise=False) < cost(4000, 3, auto_bandwidth=False, classwise=True)


def test_resolve_n_boot():
    assert ce.resolve_n_boot(ce.AUTO, 899, 10) == 200
    assert ce.resolve_n_boot(ce.AUTO, 1_000_000, 10) == 0
    assert ce.resolve_n_boot(500, 1_000_000, 10) == 500
    assert ce.resolve_band_boot(ce.AUTO, 12_000) == 200 and ce.resolve_band_boot(ce.AUTO, 10**7) == 0
    assert ce.resolve_band_boot(0, 100) == 0


def test_a_block_estimate_becomes_a_table_row():
    """calib_core's BlockEstimate (tested in tests/inference/test_blocks.py) with the page's interval text."""
    blocked = ce.Estimate.of_blocks(block_estimate([0.1, 0.12, 0.11], block_rows=200, n_rows=1000), 0.5, 1.5)
    assert blocked.interval == "t-interval over 3 blocks of 200 rows" and blocked.rows == 600
    assert (blocked.bandwidth, blocked.seconds) == (0.5, 1.5)
    single = ce.Estimate.of_blocks(block_estimate([0.3], block_rows=None, n_rows=80), 0.5, 0.0)
    assert single.interval == ce.NO_BLOCK_INTERVAL and single.rows == 80 and np.isnan(single.low)


# ----------------------------------------------------------------------------- figures (no browser)

@pytest.fixture(scope="module")
def two_models():
    return {WINE: load_demo(WINE), CANCER: load_demo(CANCER)}


def test_decomposition_figure_bars_add_up(two_models):
    parts = {name: {s: cc.score_decomposition(d.probs, d.labels, s, bandwidth=0.05) for s in ("brier", "log")}
             for name, d in two_models.items()}
    spec = json.loads(fe.decomposition_figure(parts).to_json())
    check_decomposition(spec, two_models, {WINE: 0.05, CANCER: 0.05})
    assert spec["layout"]["barmode"] == "relative"


def test_bound_chain_figure_highlights_broken_links():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet([1, 1, 1], 60)
    labels = rng.integers(0, 3, 60)
    chain = cc.bound_chain(probs, labels, bandwidth=0.05)
    assert chain.broken, "small random samples break the order"
    fig = fe.bound_chain_figure({"m": chain}, log_x=True)
    spec = json.loads(fig.to_json())
    assert chain_segments(spec, fe.BROKEN_NAME) == len(chain.broken)
    assert chain_segments(spec, fe.HELD_NAME) == len(chain.links) - len(chain.broken)
    (broken,) = traces(spec, fe.BROKEN_NAME)
    assert broken["line"]["color"] == fe.BROKEN_COLOR and broken["line"]["width"] > 2
    assert spec["layout"]["xaxis"]["type"] == "log"
    assert list(spec["layout"]["yaxis"]["categoryarray"])[::-1][:2] == ["√2", "√BS (bound)"]
    linear = json.loads(fe.bound_chain_figure({"m": chain}, log_x=False).to_json())
    assert linear["layout"]["xaxis"].get("type") != "log"


def test_estimates_figure_one_panel_per_estimator():
    table = pd.DataFrame({
        "model": ["a", "b", "a", "b"], "estimator": ["MMCE", "MMCE", "SKCE", "SKCE"],
        "estimate": [0.1, 0.2, 0.003, 0.004], "ci_low": [0.05, 0.15, np.nan, np.nan],
        "ci_high": [0.15, 0.25, np.nan, np.nan], "interval": ["boot"] * 2 + ["none"] * 2,
    })
    spec = json.loads(fe.estimates_figure(table).to_json())
    assert [a["text"] for a in spec["layout"]["annotations"]] == ["MMCE", "SKCE"]
    first = spec["data"][0]
    assert first["error_x"]["visible"] and first["error_x"]["array"] == [pytest.approx(0.05)]
    assert not spec["data"][2]["error_x"]["visible"]
    low, high = spec["layout"]["xaxis2"]["range"]
    assert low < 0.003 < 0.004 < high and high - low < 0.01, "a range around the values, not around 0"


def test_smooth_overlay_goes_onto_each_models_reliability_axes(two_models):
    curves = {name: cc.smooth_reliability_curve(d.probs, d.labels, n_boot=50, seed=0)
              for name, d in two_models.items()}
    tables = {name: cc.reliability_table(d.probs, d.labels, 10, "uniform") for name, d in two_models.items()}
    for arrangement, axes in (("overlay", {WINE: ("x", "y"), CANCER: ("x", "y")}),
                              ("side_by_side", {WINE: ("x", "y"), CANCER: ("x2", "y2")})):
        fig = figures.reliability_figure(tables, layout=arrangement, colors={WINE: 0, CANCER: 1})
        before = len(fig.data)
        assert fe.add_smooth_overlay(fig, curves) is fig
        added = fig.data[before:]
        for name, curve in curves.items():
            (line,) = [t for t in added if t.name == f"{name}: smoothed (smECE {curve.smece:.4f})"]
            assert (line.xaxis, line.yaxis) == axes[name]
            assert line.line.color == figures.color_for(0 if name == WINE else 1), "the model's own colour"
            assert line.line.dash == "dash"
            # Drawn over the range of the confidences only, clipped to [0, 1] (tests/app/test_figures_smooth.py).
            x = np.asarray(line.x, dtype=float)
            assert (x[0], x[-1]) == (curve.confidence_min, curve.confidence_max)
            dense = np.interp(x, curve.mesh, curve.density) >= fe.SPARSE_DENSITY
            np.testing.assert_allclose(np.asarray(line.y, dtype=float)[dense],
                                       np.clip(np.interp(x, curve.mesh, curve.accuracy), 0, 1)[dense])
            assert np.isnan(np.asarray(line.y, dtype=float)[~dense]).all()
            (band,) = [t for t in added if t.name == f"{name}: smoothed band"]
            assert band.fill == "tonexty" and (band.xaxis, band.yaxis) == axes[name]
            np.testing.assert_allclose(band.y, np.interp(x, curve.mesh, np.clip(curve.lower, 0, 1)))
            (upper,) = [t for t in added if t.name == f"{name}: smoothed band (upper)"]
            np.testing.assert_allclose(upper.y, np.interp(x, curve.mesh, np.clip(curve.upper, 0, 1)))
            # Legend entries toggle the binned and the smoothed curve together.
            (binned,) = [t for t in fig.data[:before] if t.name == name]
            assert line.legendgroup == binned.legendgroup
    # Without a band, for a model the figure does not show: the first axes and the colour asked for.
    fig = figures.reliability_figure({WINE: tables[WINE]})
    before = len(fig.data)
    fe.add_smooth_overlay(fig, {"other": curves[CANCER]}, band=False, colors={"other": 3})
    added = fig.data[before:]
    assert {t.name for t in added} <= {f"other: smoothed (smECE {curves[CANCER].smece:.4f})",
                                       "other: smoothed, few predictions"}
    assert all((t.xaxis, t.yaxis) == ("x", "y") for t in added)
    assert added[0].line.color == figures.color_for(3)


def test_smooth_reliability_figure_splits_sparse_regions():
    data = load_demo(DIGITS)
    curve = cc.smooth_reliability_curve(data.probs, data.labels, n_boot=0)
    spec = json.loads(fe.smooth_reliability_figure({DIGITS: curve}).to_json())
    (faint,) = traces(spec, f"{DIGITS}: smoothed, {fe.SPARSE_SUFFIX}")
    assert faint["line"]["dash"] == "dot" and faint["showlegend"] is False
    assert not traces(spec, f"{DIGITS}: smoothed band"), "no band without resamples"
    (density,) = traces(spec, f"{DIGITS}: density")
    assert density["yaxis"] == "y2"
    np.testing.assert_allclose(as_array(density["y"]), curve.density)


def test_model_names_in_hover_text_are_not_markup():
    name = '<a href="http://127.0.0.1:9/">x</a> 100%{x}'
    table = pd.DataFrame({"model": [name], "estimator": ["MMCE, h = 0.4"], "estimate": [0.1], "ci_low": [0.05],
                          "ci_high": [0.15], "interval": ["boot"]})
    template = json.loads(fe.estimates_figure(table).to_json())["data"][0]["hovertemplate"]
    assert "<a href" not in template and "%{x}</b>" not in template
    assert "&lt;a href=\"http://127.0.0.1:9/\"&gt;x&lt;/a&gt; 100&#37;{x}" in template
