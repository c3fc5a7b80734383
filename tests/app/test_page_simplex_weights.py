"""The Simplex page and the report's simplex section with a weighted model (issue 28): the arrows, cell counts
and the triangle's estimate are calib_core.simplex_reliability with the model's sample_weight; the consistency
resampling's band and the whole model's canonical_ce beside it are weighted too (labels drawn per row, each
draw's estimate weighted)."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.inference import CanonicalCE
from calib_core.io import load_predictions
from calib_core.plot.figures_simplex import ARROW_TRACE_NAME
from studio import report

from tests import app_support
from tests.app_support import assert_clean, trace_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/5_Simplex.py"


def _weighted_file(rows: int = 150) -> bytes:
    return app_support.three_class_weighted_csv(rows, fractional=True)


def _arrows(figure_data) -> tuple[np.ndarray, np.ndarray]:
    (trace,) = [t for t in figure_data if t.get("name") == ARROW_TRACE_NAME]
    coords = np.column_stack([trace_array(trace[axis]) for axis in "abc"])
    return coords[0::3], coords[1::3]


def test_simplex_page_draws_the_weighted_arrows():
    """Before: the page drew the unweighted cells (and warned that it did)."""
    p = load_predictions(_weighted_file(), name="clinic.csv", weight_column="w")
    at = app_support.open_with_model(PAGE, p, timeout=90)
    assert_clean(at)
    expected = cc.simplex_reliability(p.probs, p.labels, n_bins=10, sample_weight=p.sample_weight).table
    plain = cc.simplex_reliability(p.probs, p.labels, n_bins=10).table
    tails, heads = _arrows(app_support.plotly_specs(at)[0]["data"])
    np.testing.assert_allclose(tails, expected.mean_prediction, rtol=0, atol=1e-12)
    np.testing.assert_allclose(heads, expected.observed_frequency, rtol=0, atol=1e-12)
    assert expected.estimate != pytest.approx(plain.estimate)  # the weights move the view
    values = [m.value for m in at.metric]
    # Three classes on their own vertices: one estimate, the whole model's, weighted as the arrows (before: the
    # whole model's canonical_ce and its band counted rows, shown apart as "unweighted").
    assert values == [f"{expected.estimate:.4f}"]
    assert [m.label for m in at.metric] == ["canonical_ce, canonical lens (all 3 classes), weighted"]
    band = cc.consistency_resampling(p.probs, p.labels, CanonicalCE(), 200, 0, sample_weight=p.sample_weight)
    assert band.observed == pytest.approx(expected.estimate, abs=1e-12)
    text = " ".join(c.value for c in at.caption)
    assert f"**{band.lower:.4f}** and **{band.upper:.4f}**" in text and f"p-value **{band.p_value:.3f}**" in text
    plain = cc.consistency_resampling(p.probs, p.labels, CanonicalCE(), 200, 0)
    assert f"**{plain.lower:.4f}** and **{plain.upper:.4f}**" not in text
    assert "Row weights" in text and "Simplex consistency resampling" not in text
    assert not [x.value for x in at.warning if "Row weights" in x.value]


def test_report_simplex_section_is_the_pages_weighted_view():
    """Before: the report drew cc.simplex_reliability without the weights and said 'Unweighted'."""
    p = load_predictions(_weighted_file(), name="clinic.csv", weight_column="w")
    settings = report.ReportSettings(simplex_bins=4)
    charts = report._figures([report.ReportModel("clinic", p)], settings, ("simplex",))
    (figure,) = [fig for section, _, fig in charts if section == "simplex"]
    expected = cc.simplex_reliability(p.probs, p.labels, groups=((0,), (1,), (2,)), n_bins=4,
                                      sample_weight=p.sample_weight).table
    tails, heads = _arrows([t.to_plotly_json() for t in figure.data])
    np.testing.assert_allclose(tails, expected.mean_prediction, rtol=0, atol=1e-12)
    np.testing.assert_allclose(heads, expected.observed_frequency, rtol=0, atol=1e-12)
    text = report.build_report([report.ReportModel("clinic", p)], settings, sections=("simplex",))
    assert "note unweighted" not in text


def test_weighted_cells_are_labelled_as_summed_weights():
    from calib_core.plot.figures_simplex import simplex_figure

    p = load_predictions(_weighted_file(), name="clinic.csv", weight_column="w")
    figure = simplex_figure(cc.simplex_reliability(p.probs, p.labels, n_bins=4, sample_weight=p.sample_weight))
    titles = [t.marker.colorbar.title.text for t in figure.data
              if getattr(t, "marker", None) is not None and t.marker.colorbar.title.text]
    assert titles == ["summed weight"]
    hover = next(t for t in figure.data if t.name == ARROW_TRACE_NAME).text
    assert any(h and h.startswith("summed weight: ") for h in hover)
