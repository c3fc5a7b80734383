"""What each page does with a model's row weights (the Data page's "Weight column"), said at the top of the page.

The pages that pass ``sample_weight`` to calib_core (through :mod:`studio.compute`) say that their numbers are
weighted; the others say that they show unweighted numbers, and why. Every name is shown as plain text.
"""
from __future__ import annotations

import streamlit as st

from studio.text import md
from studio.weights_reasons import UNWEIGHTED, UNWEIGHTED_PARTS, WEIGHTED_PAGES

__all__ = ["PAGE_PARTS", "UNWEIGHTED", "WEIGHTED_PAGES", "weights_note"]

#: The parts of a weighted page that show unweighted numbers (their reasons: ``UNWEIGHTED_PARTS``).
PAGE_PARTS = {"Metrics": ("Compare systems",), "Deployment": ("How many labels",)}


def weights_note(page: str, models) -> None:
    """One line at the top of ``page`` when a shown model has row weights; nothing otherwise."""
    weighted = [m for m in models if getattr(m.predictions, "sample_weight", None) is not None]
    if not weighted:
        return
    which = "; ".join(f"{md(m.name)} by column {md(m.predictions.weight_column)}" for m in weighted)
    if page in WEIGHTED_PAGES:
        parts = "".join(f" Not weighted: {part} ({md(UNWEIGHTED_PARTS[part])})." for part in PAGE_PARTS.get(page, ()))
        st.caption(f":material/balance: Row weights: {which}. The numbers on this page are weighted (integer "
                   "weights count as repeated rows; a metric that takes whole-number weights only says so), and so "
                   f"are the same numbers in its HTML report.{parts}")
        return
    reason = UNWEIGHTED.get(page, "this page is not wired to the weights")
    st.warning(f"Row weights: {which}. This page shows **unweighted** numbers: {md(reason)}.",
               icon=":material/balance:")
