"""The Large tables page's calls: summaries of ``calib-core report --json``, cached.

A summary holds per-bin sums, never rows (:func:`calib_core.load_summary`),
so it is keyed by the uploaded bytes themselves. An uploaded summary is
cached for its session only (``scope="session"``): it is dropped when the
visitor leaves, and one visitor's file never answers another's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core.engines.evaluate import evaluate_arrays
from calib_core.engines.summary import CalibrationSummary
from studio import state
from studio.memory import RESULT_TTL_SECONDS

#: What a bad summary upload can raise (all are shown to the user as a message).
SUMMARY_ERRORS = (cc.CalibrationInputError,)


@st.cache_data(show_spinner="Reading the summary ...", max_entries=16, ttl=RESULT_TTL_SECONDS, scope="session")
def read_summary(raw: bytes) -> CalibrationSummary:
    """:func:`calib_core.load_summary` of an uploaded JSON file."""
    return cc.load_summary(raw)


@st.cache_data(show_spinner="Summarising the demo model ...", max_entries=4, ttl="24h")
def demo_summary(name: str = state.DEFAULT_DEMO) -> CalibrationSummary:
    """The summary the command line writes for the demo ``name`` (every metric, so adaptive bins too)."""
    predictions = cc.load_demo(name)
    evaluation = evaluate_arrays(predictions.probs, predictions.labels, class_names=predictions.class_names,
                                 files=(f"demo {name}",), input_kind=predictions.input_kind)
    return cc.load_summary(evaluation.summary())


def bin_choices(summary: CalibrationSummary) -> list[int]:
    """The uniform bin counts whose sums the summary kept."""
    return sorted(set(summary.bin_counts) | {summary.n_bins})


def binning_choices(summary: CalibrationSummary, n_bins: int) -> list[str]:
    """``["uniform"]``, plus ``"adaptive"`` when adaptive sums exist for ``n_bins``."""
    return ["uniform", "adaptive"] if summary.adaptive and n_bins == summary.n_bins else ["uniform"]


def per_class(summary: CalibrationSummary, n_bins: int, binning: str) -> pd.DataFrame:
    """The per-class table of :func:`studio.compute.per_class`, from sums (ACE NaN without adaptive sums)."""
    balance = summary.class_balance
    try:
        ace = summary.per_class_ace().to_numpy()
    except cc.CalibrationInputError:
        ace = np.full(summary.n_classes, np.nan)
    return pd.DataFrame({
        "class_index": np.arange(summary.n_classes),
        "class": list(summary.class_names),
        "support": balance["count"].to_numpy(),
        "frequency": balance["share"].to_numpy(),
        "mean_probability": balance["mean_probability"].to_numpy(),
        "ace": ace,
        "classwise_ece": summary.classwise_ece(n_bins, binning).to_numpy(),
    })
