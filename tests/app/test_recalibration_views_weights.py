"""The Recalibration page's before/after simplex, temperature surface and GCE ranking with a weighted model
(issue 28): each is the weighted calib_core call on the evaluation rows (before: unweighted, and the page said so)."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import Predictions
from calib_core.plot.figures_simplex import ARROW_TRACE_NAME
from calib_core.recalibration import compare, sweeps
from studio import compute_recalibration as cr
from tests import app_support
from tests.app.test_page_recalibration_weights import METHODS, _frame

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/6_Recalibration.py"


def _model() -> Predictions:
    frame = _frame()
    return Predictions.from_arrays(frame[["p_a", "p_b", "p_c"]].to_numpy(), frame["label"].to_numpy(),
                                   split=frame["split"].to_numpy(), sample_weight=frame["w"].to_numpy(float),
                                   name="clinic")


def _arrow_tails(spec) -> np.ndarray:
    (trace,) = [t for t in spec["data"] if t.get("name") == ARROW_TRACE_NAME]
    return np.column_stack([app_support.trace_array(trace[axis]) for axis in "abc"])[0::3]


def test_simplex_surface_and_ranking_are_the_weighted_calls():
    p = _model()
    at = app_support.open_with_model(PAGE, p, timeout=120, session_values={"recal_boot": 0, "methods": [METHODS[0]]})
    app_support.assert_clean(at)
    ev = cr.evaluation_set(p, "fp", compare.Protocol("split_column"))
    assert ev.sample_weight is not None
    specs = app_support.plotly_specs(at)
    simplexes = [s for s in specs if any(t.get("name") == ARROW_TRACE_NAME for t in s["data"])]
    groups = cc.default_groups(3)
    before = cc.simplex_reliability(ev.before, ev.labels, groups=groups, n_bins=10, sample_weight=ev.sample_weight)
    plain = cc.simplex_reliability(ev.before, ev.labels, groups=groups, n_bins=10)
    np.testing.assert_allclose(_arrow_tails(simplexes[0]), before.table.mean_prediction, rtol=0, atol=1e-12)
    assert not np.allclose(before.table.count, plain.table.count)
    text = " ".join(c.value for c in at.caption)
    assert "evaluation rows weighted by their row weights" in text and "Not weighted" not in text
    # The GCE ranking: the heat map's values are the weighted ranking's (last chart).
    heat = specs[-1]["data"][0]
    shown = np.asarray(heat["customdata"], dtype=object)[..., 0].astype(float)
    weighted = sweeps.gce_ranking({compare.BEFORE: ev.before}, ev.labels, sample_weight=ev.sample_weight)
    row = [y.replace("<i>", "").replace("</i>", "") for y in heat["y"]].index(compare.BEFORE)
    np.testing.assert_allclose(shown[row], weighted.values.loc[compare.BEFORE].to_numpy(), rtol=0, atol=1e-12)
    unweighted = sweeps.gce_ranking({compare.BEFORE: ev.before}, ev.labels)
    assert not np.allclose(shown[row], unweighted.values.loc[compare.BEFORE].to_numpy())
    # The temperature surface: each curve's lowest point is the weighted sweep's of the evaluation rows.
    rows = ev.eval_index
    expected = sweeps.temperature_surface(compare.log_scores(p.probs[rows], None), p.labels[rows],
                                          sample_weight=ev.sample_weight)
    lowest = at.dataframe[-1].value
    np.testing.assert_allclose(lowest["Value there"].to_numpy(), expected.minimisers["value"].to_numpy(),
                               rtol=0, atol=1e-12)
