"""Selective prediction's calib_core calls, wrapped in ``st.cache_data`` (pattern of :mod:`studio.compute`).

A K-class model enters through its top label (confidence = largest probability, correct = arg-max == label), a
confidence model through its stated confidence (:attr:`~calib_core.io.Predictions.confidence`);
the model's ``fingerprint`` and the small options form the cache key.
"""
from __future__ import annotations

import streamlit as st

import calib_core as cc
from calib_core.io import Predictions
from studio.memory import RESULT_TTL_SECONDS


def _top_label(predictions: Predictions):
    """The confidence and correctness: a K-class model's top label, a confidence model's stated confidence (its
    ``[1 - c, c]`` read as two classes would give ``max(c, 1 - c)``)."""
    return predictions.confidence, predictions.correct


@st.cache_data(show_spinner="Resampling the risk-coverage curve ...", max_entries=64, ttl=RESULT_TTL_SECONDS)
def curve_and_band(_predictions: Predictions, fingerprint: str, n_boot: int,
                   seed: int) -> tuple[cc.RiskCoverage, cc.RiskCoverageBand]:
    """:func:`calib_core.risk_coverage` and :func:`calib_core.risk_coverage_band` of the top label."""
    confidence, correct = _top_label(_predictions)
    return (cc.risk_coverage(confidence, correct),
            cc.risk_coverage_band(confidence, correct, n_boot=n_boot, seed=seed))


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def selective_numbers(_predictions: Predictions, fingerprint: str, coverage: float, target_risk: float,
                      delta: float) -> tuple[float, float, cc.AbstentionThreshold]:
    """Selective risk at ``coverage``, coverage at ``target_risk`` (on these rows) and the certified threshold."""
    confidence, correct = _top_label(_predictions)
    risk = float(cc.selective_risk(confidence, correct, [coverage])[0])
    return (risk, cc.coverage_at_risk(confidence, correct, target_risk),
            cc.abstention_threshold(confidence, correct, target_risk, delta=delta))
