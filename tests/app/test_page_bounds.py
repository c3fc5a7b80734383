"""Issue 23, item 5 on the pages: estimates outside their own bounds are marked, and the fixable part is measured.

On the default demo the Metrics page showed ``CE_KL (kernel), h = 0.01`` = 16.80 as a plain number beside
NLL = 2.24 (the true CE_KL is at most the NLL); on a calibrated 8-class model the Estimators page labelled most
of the Brier score "calibration" while no recalibration lowers it; every model showed "the estimates break 3 of
8 inequalities".
"""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import Predictions, load_demo
from calib_core.recalibration.fixable import fixable_part
from calib_core.plot import figures_estimators as fe

from tests import app_support
from tests.app_support import assert_clean, plotly_specs

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

METRICS, ESTIMATORS = "pages/1_Metrics.py", "pages/7_Estimators.py"
DIGITS = "digits_gaussian_nb"
CE_KL = "CE_KL (kernel), h = 0.01"
TIMEOUT = 180


def plain(text: str) -> str:
    """Markdown text with its escapes (studio.text.md) removed."""
    return text.replace("\\", "")


def fixable_frame(at):
    (frame,) = [d.value for d in at.dataframe if "brier drop low" in d.value.columns]
    return frame.set_index("model")


def test_metrics_page_marks_the_default_demos_ce_kl_and_shows_the_fixable_part():
    at = app_support.open_link(METRICS, timeout=TIMEOUT)
    assert_clean(at)
    demo = load_demo(DIGITS)
    expected = cc.metric_report(demo.probs, demo.labels).unreliable
    overview = at.dataframe[0].value
    assert overview.loc[CE_KL, DIGITS] == "16.8024 ⚠ unreliable", "not a plain number"
    assert overview.loc["NLL", DIGITS] == f"{cc.nll(demo.probs, demo.labels):.4f}"
    table = at.dataframe[1].value.set_index("key")
    assert table.loc["kde_ce_kl", "unreliable"] == expected["kde_ce_kl"]
    assert table.loc["nll", "unreliable"] == ""
    (warning,) = [plain(w.value) for w in at.warning if "Unreliable at this N and K" in w.value]
    assert "CE_KL (kernel), h = 0.01 = 16.8: unreliable at this N and K" in warning and "NLL = 2.244" in warning
    # The fixable part beside it: the recommended method's cross-fitted drop, with its interval (200 resamples, seed 0).
    found = fixable_part(demo.probs, demo.labels, logits=demo.logits, n_boot=200, seed=0)
    row = fixable_frame(at).loc[DIGITS]
    assert row["best method"] == found.method
    assert (row["brier drop"], row["brier drop low"], row["brier drop high"]) == pytest.approx(
        (found.brier_drop, found.brier_drop_low, found.brier_drop_high), rel=1e-12)
    assert row["nll drop low"] == pytest.approx(found.nll_drop_low, rel=1e-12) and row["brier drop low"] > 0
    assert any("95% interval" in plain(c.value) for c in at.caption)


@pytest.mark.slow
def test_estimators_page_marks_the_default_demo_and_explains_the_chain():
    at = app_support.open_link(ESTIMATORS, timeout=TIMEOUT)
    assert_clean(at)
    demo = load_demo(DIGITS)
    table = at.dataframe[0].value.set_index("estimator")
    assert table.loc[CE_KL, "unreliable"] == cc.metric_report(demo.probs, demo.labels).unreliable["kde_ce_kl"]
    assert table.loc["sqrt(Brier) bound", "unreliable"] == ""
    assert any("CE_KL (kernel), h = 0.01 = 16.8 is unreliable at this N and K" in plain(w.value) for w in at.warning)
    # The chain: three links out of order, each explained as a finite-sample effect, no "break" alarm.
    assert not [w for w in at.warning if "inequalities" in w.value] and not at.error
    (chain,) = [plain(i.value) for i in at.info if "estimated inequalities are out of order" in plain(i.value)]
    assert "3 of 8" in chain and "none signals a bug" in chain and "binned ECE is biased upwards" in chain
    assert list(fixable_frame(at).index) == [DIGITS]


def calibrated_eight_classes(n_rows=1000, seed=0) -> Predictions:
    """Labels drawn from the predictions: calibrated by construction, as the issue's 8-class model nearly is."""
    rng = np.random.default_rng(seed)
    probs = cc.softmax(1.5 * rng.normal(size=(n_rows, 8)))
    labels = (rng.random((n_rows, 1)) > np.cumsum(probs, axis=1)).sum(axis=1).clip(max=7)
    return Predictions(probs, labels, tuple(f"c{k}" for k in range(8)), name="calibrated_8")


@pytest.mark.slow
def test_a_large_kernel_calibration_share_that_recalibration_cannot_fix_is_not_a_plain_number():
    model = calibrated_eight_classes()
    kernel = cc.score_decomposition(model.probs, model.labels, "brier")
    assert kernel.calibration > 0.5 * kernel.empirical_score  # what the page used to present as "calibration"
    at = app_support.open_with_model(ESTIMATORS, model, timeout=TIMEOUT)
    assert_clean(at)
    marked = [plain(w.value) for w in at.warning
              if "Brier score: the calibration term is unreliable at this N and K" in plain(w.value)]
    assert len(marked) == 1 and "labels drawn from the predictions" in marked[0]
    (bar,) = [t for t in plotly_specs(at)[1]["data"] if t.get("name") == fe.CALIBRATION_NAME
              and t.get("xaxis", "x") == "x"]
    assert bar["marker"]["pattern"]["shape"] == ["x"], "the Brier calibration bar is hatched"
    table = at.dataframe[0].value.set_index("estimator")
    assert table.loc["CE_2^2 (kernel), h = 0.01", "unreliable"].startswith("unreliable at this N and K")
    row = fixable_frame(at).loc["calibrated_8"]
    assert row["share of the brier score"] < 0.01
    assert row["best method"] == "none" or row["brier drop low"] < 0.005  # none recommended: nothing fixable


def test_on_large_inputs_the_fixable_part_waits_for_its_toggle(monkeypatch):
    from studio.estimators import sections

    monkeypatch.setattr(sections, "FIXABLE_AUTO_CELLS", 1000)  # the demo's 899 x 10 counts as large
    at = app_support.open_link(METRICS, timeout=TIMEOUT)
    assert_clean(at)
    toggle = at.toggle(key="metric_fixable")
    assert toggle.value is False and "8,990 rows × classes" in toggle.help
    assert not [d for d in at.dataframe if "brier drop low" in d.value.columns]
    toggle.set_value(True).run()
    assert list(fixable_frame(at).index) == [DIGITS]
