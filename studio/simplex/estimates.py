"""canonical_ce of the model and of the triangle view, with their consistency bands and verdicts.

The estimates appear at once; their bands (consistency resampling, the slow
part) and the verdicts of calib_core fill in when ready. This page computes
no verdict: each is :attr:`calib_core.ConsistencyResult.verdict` with its
``verdict_reason``.
"""
from __future__ import annotations

import streamlit as st

from calib_core import CalibrationInputError
from studio import compute_simplex as cs
from studio import layout
from studio.state import ModelView
from studio.text import md

RESAMPLES = [100, 200, 500, 1000]
#: Above this many rows the band starts at 100 resamples, so a control change recomputes it in under 1 s.
LARGE_MODEL_ROWS = 50_000
DISTANCES = {"tv": "total variation", "sq_euclidean": "squared Euclidean"}
#: How each verdict of calib_core (ConsistencyResult.verdict) is shown; the text is its verdict_reason.
VERDICT_BOX = {
    "miscalibrated": (st.warning, "Miscalibrated", ":material/warning:"),
    "consistent": (st.success, "Consistent with calibration", ":material/check_circle:"),
    "inconclusive": (st.info, "Inconclusive", ":material/help:"),
}


def band_caption(result, what: str) -> str:
    return (f"{what}: for a perfectly calibrated model with these predictions ({result.n_resamples:,} "
            f"consistency resamples) the estimate falls between **{result.lower:.4f}** and **{result.upper:.4f}** "
            f"(5th–95th percentile), **{result.resampled_mean:.4f}** on average (its bias at calibration, "
            f"η̂_id). p-value **{result.p_value:.3f}**.")


def show_verdict(result) -> None:
    """The verdict and its reason, both from calib_core (this page computes no verdict)."""
    box, title, icon = VERDICT_BOX[result.verdict]
    box(f"**{title}.** {md(result.verdict_reason)}", icon=icon)


class EstimateSlot:
    """An estimate shown at once; its consistency band and verdict are filled in when the resampling is done."""

    def __init__(self, label: str, value: float, help_text: str, what: str) -> None:
        self.label, self.help, self.what = label, help_text, what
        self.metric = st.empty()
        self.band = st.empty()
        self.metric.metric(label, f"{value:.4f}", help=help_text)
        self.band.caption("Consistency band: drawing labels from the predictions …")

    def fill(self, result) -> None:
        # No green arrow for an estimate below its band: the verdict (inconclusive) says why.
        self.metric.metric(self.label, f"{result.observed:.4f}", delta=f"{result.excess:+.4f} vs. calibrated mean",
                           delta_color="off" if result.verdict == "inconclusive" else "inverse", help=self.help)
        with self.band.container():
            st.caption(band_caption(result, self.what))
            show_verdict(result)


def show_estimates(model: ModelView, view, vertices: cs.Vertices, *, lens: str, lens_label: str,
                   class_index: int | None, distance: str, partition: str, n_bins: int, min_bin_size: int) -> None:
    """The resampling settings, both estimates at once, then their bands and verdicts (and why they differ)."""
    predictions = model.predictions
    n_classes = predictions.n_classes
    class_names = tuple(predictions.class_names) or tuple(str(k) for k in range(n_classes))
    canonical = lens == "canonical"
    st.subheader("Is the miscalibration real? Consistency resampling")
    settings_col, whole_col, arrows_col = st.columns([2, 4, 4], gap="medium")
    with settings_col:
        n_resamples = int(layout.linked(
            st.selectbox, "Consistency resamples", RESAMPLES, key="resamples",
            index=RESAMPLES.index(100 if predictions.n_samples > LARGE_MODEL_ROWS else 200),
            format_func=lambda n: f"{n:,}",
            help="Label vectors drawn from the predictions (a perfectly calibrated model). More: a steadier band, "
                 f"slower. Models over {LARGE_MODEL_ROWS:,} rows start at 100 so that the band follows each change "
                 "within a second."))
        seed = int(layout.linked(st.number_input, "Seed", min_value=0, max_value=2**31 - 1, step=1, value=0,
                                 key="simplex_seed"))
        noun = ("all " + str(n_classes) + " classes" if canonical else
                "top label" if lens == "max" else f"class {class_names[class_index]}")
        distance_text = DISTANCES[distance]
        settings = (f"{n_bins} bins per probability" if partition == "uniform"
                    else f"data-dependent cells of at most {min_bin_size:,} rows")
        # A weighted model's estimates and bands are weighted: the bands draw one label per row and weigh
        # each draw's estimate (calib_core.consistency_resampling with sample_weight=).
        weighted = predictions.sample_weight is not None
        same_view = cs.view_is_whole_model(vertices, lens, n_classes)
        try:
            value = cs.lens_estimate(predictions, model.fingerprint, distance, partition, n_bins, min_bin_size, lens,
                                     class_index)
        except CalibrationInputError as exc:
            st.error(f"The estimate could not be computed: {md(exc)} Pick other settings.", icon=":material/error:")
            st.stop()
    # The numbers first, the bands (consistency resampling, the slow part) when they are ready.
    with whole_col:
        whole_slot = EstimateSlot(
            f"canonical_ce, {lens_label} lens ({noun}){', weighted' if weighted else ''}", value,
            f"Σ over cells of (share of {'summed weight' if weighted else 'rows'}) × {distance_text} between "
            f"observed frequencies and mean prediction, on the model's {noun} ({settings}); Vaicenavicius et "
            "al. 2019, eq. 6.", "Band")
        if canonical and n_classes > 3:
            st.caption(f"canonical_ce partitions all {n_classes} dimensions with the same setting; there most "
                       "cells hold few rows, which inflates the estimate: compare it with the band, not with 0.")
    arrows_slot = None
    if not same_view:
        with arrows_col:
            arrows_slot = EstimateSlot(
                f"The arrows: estimate on this triangle{', weighted' if weighted else ''}", view.estimate,
                f"The same estimate on the three-vertex view the chart shows: Σ over cells of (share of "
                f"{'summed weight' if weighted else 'rows'}) × {distance_text} between arrow head and tail.",
                "Band of the triangle view")
    whole = cs.lens_consistency(predictions, model.fingerprint, distance, partition, n_bins, min_bin_size, lens,
                                class_index, n_resamples, seed)
    whole_slot.fill(whole)
    if arrows_slot is None:
        return
    arrows = cs.view_consistency(predictions, model.fingerprint, vertices, partition, n_bins, min_bin_size,
                                 distance, n_resamples, seed)
    arrows_slot.fill(arrows)
    if arrows.verdict != whole.verdict:
        # Both verdicts come from calib_core; say why two tests of one model can read differently.
        st.info(
            f"**The two tests read differently** (whole model: {whole.verdict}; triangle view: "
            f"{arrows.verdict}). They test different things: the whole model's {n_classes}-class predictions on "
            f"{whole.occupancy.n_cells if whole.occupancy else 'its'} cells, and the three-vertex view on "
            f"{arrows.occupancy.n_cells if arrows.occupancy else 'its'} cells. A test that finds miscalibration "
            "is evidence whatever the other says (grouping classes keeps a calibrated model calibrated, so "
            "miscalibration of the view is miscalibration of the model); an inconclusive test is not evidence "
            "of calibration. Each verdict above says why it reads as it does.",
            icon=":material/compare_arrows:")
