"""The Groups page's calib_core calls, wrapped in ``st.cache_data``.

Same pattern as :mod:`studio.compute`: a model's predictions are passed as
``_predictions`` (not hashed) together with its ``fingerprint``, which
covers the groups and the row weights too (:func:`studio.state.fingerprint`),
so choosing another group or weight column on the Data page computes again.
Every call passes the model's ``sample_weight`` (the Data page's weight column). The small options
form the rest of the key; every cache is bounded by entries and a ttl.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core.inference.groups import GroupResult, MulticalibrationResult
from calib_core.io import Predictions
from studio.memory import RESULT_TTL_SECONDS

#: The metrics the page offers, by registry key.
GROUP_METRICS = {"ece": "ECE", "ace": "ACE"}
#: The metrics it offers for a confidence model (stated confidence against correctness, settings in the key).
CONFIDENCE_GROUP_METRICS = {"conf_ece": "ECE (10 equal-width bins)", "conf_ece_mass_10": "ECE (10 equal-mass bins)"}


def group_metrics(predictions: Predictions) -> dict[str, str]:
    """The metrics offered for this model: the confidence ones for a confidence model (never its folded top label)."""
    return CONFIDENCE_GROUP_METRICS if predictions.kind == "confidence" else GROUP_METRICS


def _target(predictions: Predictions) -> str | int:
    """A confidence model's reliability is column 1 of ``[1 - c, c]`` (stated confidence vs correct)."""
    return 1 if predictions.kind == "confidence" else "top_label"


@st.cache_data(show_spinner="Computing each group's value and bootstrap interval ...", max_entries=256, ttl=RESULT_TTL_SECONDS)
def group_metric(_predictions: Predictions, fingerprint: str, metric: str, n_bins: int, binning: str,
                 n_boot: int, seed: int) -> GroupResult:
    """:func:`calib_core.by_group` of ``metric`` (a registry key) on the model's groups."""
    return cc.by_group(metric, _predictions.probs, _predictions.labels, _predictions.groups, n_bins=n_bins,
                       binning=binning, n_boot=n_boot, seed=seed, sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def group_reliability(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str) -> pd.DataFrame:
    """:func:`calib_core.group_reliability` (top label) of the model's groups."""
    return cc.group_reliability(_predictions.probs, _predictions.labels, _predictions.groups, n_bins=n_bins,
                                binning=binning, target=_target(_predictions),
                                sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def multicalibration(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str,
                     min_count: int) -> MulticalibrationResult:
    """:func:`calib_core.multicalibration` (top label) of the model's groups."""
    return cc.multicalibration(_predictions.probs, _predictions.labels, _predictions.groups, n_bins=n_bins,
                               binning=binning, min_count=min_count, target=_target(_predictions),
                               sample_weight=_predictions.sample_weight)
