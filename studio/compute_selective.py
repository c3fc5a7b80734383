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
    """:func:`calib_core.risk_coverage` and :func:`calib_core.risk_coverage_band` of the top label (weighted by
    the model's row weights)."""
    confidence, correct = _top_label(_predictions)
    weights = _predictions.sample_weight
    return (cc.risk_coverage(confidence, correct, sample_weight=weights),
            cc.risk_coverage_band(confidence, correct, n_boot=n_boot, seed=seed, sample_weight=weights))


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def selective_numbers(_predictions: Predictions, fingerprint: str, coverage: float, target_risk: float,
                      delta: float) -> tuple[float, float, cc.AbstentionThreshold | str]:
    """Selective risk at ``coverage``, coverage at ``target_risk`` (on these rows) and the certified threshold,
    weighted by the model's row weights; instead of the threshold, calib_core's reason when it cannot take the
    weights (fractional ones)."""
    confidence, correct = _top_label(_predictions)
    weights = _predictions.sample_weight
    risk = float(cc.selective_risk(confidence, correct, [coverage], sample_weight=weights)[0])
    try:
        found: cc.AbstentionThreshold | str = cc.abstention_threshold(confidence, correct, target_risk, delta=delta,
                                                                      sample_weight=weights)
    except cc.CalibrationInputError as exc:
        found = str(exc)
    return risk, cc.coverage_at_risk(confidence, correct, target_risk, sample_weight=weights), found
