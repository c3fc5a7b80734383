"""What each page does with a model's row weights (the Data page's "Weight column"), said at the top of the page.

The pages that pass ``sample_weight`` to calib_core (through :mod:`studio.compute`) say that their numbers are
weighted; the others say that they show unweighted numbers, and why. Every name is shown as plain text.
"""
from __future__ import annotations

import streamlit as st

from studio.text import md

__all__ = ["UNWEIGHTED", "WEIGHTED_PAGES", "weights_note"]

#: Pages whose numbers are weighted (their calls in studio/compute.py pass ``sample_weight``).
WEIGHTED_PAGES = ("Data", "Metrics", "Reliability", "Per-class", "Groups", "Bin sensitivity")

#: Why each other page shows unweighted numbers (docs/weights.md, "Not (yet) weighted").
UNWEIGHTED = {
    "Simplex": "calib_core.simplex_reliability takes no sample_weight yet",
    "Recalibration": "the comparison of methods (calib_core.recalibration.compare: cross-fitting, the paired "
                     "bootstrap and the recommendation) scores unweighted rows",
    "Estimators": "the estimator comparisons resample unweighted rows",
    "Lab": "the Lab simulates from the predictions, one row per prediction",
    "Deployment": "calib_core.estimate_prevalence, decision_curve and plan_labels count rows (no sample_weight)",
    "Large tables": "this page shows summaries written by the command line, not the loaded models (a summary "
                    "made with --weight-column is weighted and says so)",
}


def weights_note(page: str, models) -> None:
    """One line at the top of ``page`` when a shown model has row weights; nothing otherwise."""
    weighted = [m for m in models if getattr(m.predictions, "sample_weight", None) is not None]
    if not weighted:
        return
    which = "; ".join(f"{md(m.name)} by column {md(m.predictions.weight_column)}" for m in weighted)
    if page in WEIGHTED_PAGES:
        st.caption(f":material/balance: Row weights: {which}. Every number on this page is weighted (integer "
                   "weights count as repeated rows; a metric that takes whole-number weights only says so); the "
                   "HTML report's numbers are not weighted yet.")
        return
    reason = UNWEIGHTED.get(page, "this page is not wired to the weights")
    st.warning(f"Row weights: {which}. This page shows **unweighted** numbers: {md(reason)}.",
               icon=":material/balance:")
