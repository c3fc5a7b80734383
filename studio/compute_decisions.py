"""The Deployment page's calib_core calls, wrapped in ``st.cache_data``, and the unlabelled file's reader.

Same pattern as :mod:`studio.compute`: a model's predictions are passed as
``_predictions`` (not hashed) with its ``fingerprint``; the small options form
the rest of the key. The deployment file is keyed by a hash of its bytes.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core.io import Predictions
from calib_core.io.unlabelled import load_unlabelled
from studio.memory import RESULT_TTL_SECONDS


def file_key(raw: bytes) -> str:
    """A short hash of an uploaded file's bytes (the cache key of its predictions)."""
    return hashlib.blake2b(raw, digest_size=12).hexdigest()


@st.cache_data(show_spinner=False, max_entries=16, ttl=RESULT_TTL_SECONDS, scope="session")
def read_unlabelled(raw: bytes, file_name: str, class_names: tuple[str, ...]) -> np.ndarray:
    """:func:`unlabelled_probs`, cached for the session that uploaded the file."""
    return unlabelled_probs(raw, file_name, class_names)


def unlabelled_probs(raw: bytes, file_name: str, class_names: tuple[str, ...]) -> np.ndarray:
    """The ``(N, K)`` probabilities of an unlabelled deployment file (:func:`calib_core.io.unlabelled.load_unlabelled`,
    which the command line's ``report --deployment`` reads with too); a label column is ignored."""
    return load_unlabelled(raw, class_names, name=file_name).probs


@st.cache_data(show_spinner="Estimating the deployment prevalence ...", max_entries=64, ttl=RESULT_TTL_SECONDS)
def prevalence(_predictions: Predictions, fingerprint: str, _unlabelled: np.ndarray, unlabelled_key: str,
               method: str, n_boot: int, seed: int, alpha: float) -> cc.PrevalenceEstimate:
    """:func:`calib_core.estimate_prevalence` of the deployment rows; the labelled rows, with the model's row weights
    when it has them, give the source."""
    return cc.estimate_prevalence(_unlabelled, method=method, probs_labelled=_predictions.probs,
                                  labels=_predictions.labels, n_boot=n_boot, seed=seed, alpha=alpha,
                                  sample_weight=_predictions.sample_weight)


#: Registry keys shown re-weighted to the deployment.
REWEIGHTED_METRICS = ("accuracy", "ece", "brier", "nll")


@st.cache_data(show_spinner=False, max_entries=64, ttl=RESULT_TTL_SECONDS)
def reweighted_metrics(_predictions: Predictions, fingerprint: str, class_weights: tuple[float, ...],
                       n_bins: int) -> tuple[pd.DataFrame, str]:
    """The test set's metrics as they are and re-weighted to the deployment, and a note ("" when all computed).

    Each row's weight is its class's ``pi_target / pi_source``
    (:meth:`calib_core.PrevalenceEstimate.sample_weight`), times the row's own weight for a weighted model (whose
    "test set" column is weighted by its row weights; ``report --deployment`` does the same), passed as
    ``sample_weight=`` to the registry's metric functions. A metric that does
    not take weights has no re-weighted value, and the note says so.
    """
    probs, labels = _predictions.probs, _predictions.labels
    own = _predictions.sample_weight  # the row weights; None without
    weights = np.asarray(class_weights)[labels] * (1.0 if own is None else own)
    rows, missing = [], []
    for key in REWEIGHTED_METRICS:
        function = cc.metric_function(key, n_bins=n_bins)
        weighted = np.nan
        try:
            weighted = float(function(probs, labels, sample_weight=weights))
        except TypeError:  # this metric has no sample_weight= yet
            missing.append(cc.metric_name(key, n_bins=n_bins))
        plain = function(probs, labels) if own is None else function(probs, labels, sample_weight=own)
        rows.append({"metric": cc.metric_name(key, n_bins=n_bins), "test set": float(plain),
                     "re-weighted to the deployment": weighted})
    note = ("" if not missing else f"{', '.join(missing)}: no sample_weight= in this version of calib_core, so no "
            "re-weighted value.")
    return pd.DataFrame(rows), note


@st.cache_data(show_spinner="Cross-fitting the recalibration and bootstrapping the decision curve ...",
               max_entries=64, ttl=RESULT_TTL_SECONDS)
def decision_curve(_predictions: Predictions, fingerprint: str, positive_class: int, method: str, n_boot: int,
                   seed: int, alpha: float) -> cc.DecisionCurve:
    """:func:`calib_core.decision_curve` of one class against the rest (binary: class 1), weighted by the model's
    row weights."""
    return cc.decision_curve(_predictions.probs, _predictions.labels, logits=_predictions.logits, method=method,
                             positive_class=positive_class, n_boot=n_boot, seed=seed, alpha=alpha,
                             sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner="Cross-fitting the recalibration ...", max_entries=64, ttl=RESULT_TTL_SECONDS)
def recalibration_value(_predictions: Predictions, fingerprint: str, positive_class: int | None,
                        threshold: float | None, cost_matrix: tuple[tuple[float, ...], ...] | None, units: str,
                        method: str, n_boot: int, seed: int, alpha: float) -> cc.RecalibrationValue:
    """:func:`calib_core.recalibration_value` at a threshold or under a cost matrix (weighted by the row weights)."""
    return cc.recalibration_value(_predictions.probs, _predictions.labels, threshold=threshold,
                                  cost_matrix=None if cost_matrix is None else np.array(cost_matrix),
                                  units=units or None, logits=_predictions.logits, method=method,
                                  positive_class=positive_class, n_boot=n_boot, seed=seed, alpha=alpha,
                                  sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner=False, max_entries=64, ttl=RESULT_TTL_SECONDS)
def label_plan(_predictions: Predictions, fingerprint: str, test: str, temperature: float | None, ece: float | None,
               n: int, repetitions: int, seed: int) -> cc.LabelPlan:
    """:func:`calib_core.plan_labels` on the model's predictions, with its N."""
    return cc.plan_labels(_predictions.probs, temperature=temperature, ece=ece, test=test, n=n,
                          repetitions=repetitions, seed=seed)
