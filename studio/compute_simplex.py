"""The Simplex page's calib_core calls, wrapped in ``st.cache_data``.

Same pattern as :mod:`studio.compute`: a model's predictions are passed as
``_predictions`` (not hashed) together with its ``fingerprint``; the
fingerprint and the small, hashable options form the cache key. The heavy
calls (consistency resampling) show a spinner while they run; cached
results come back without one.

The page shows one model through one *view*: a calibration lens
(:func:`calib_core.lens_view`) followed by the map onto the 2-simplex
(:func:`calib_core.simplex_projection`). With the canonical lens the three
vertices are three classes or three groups of classes; the max and
marginal lenses are two-outcome problems whose predictions lie on the edge
between the first two vertices.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

import calib_core as cc
from calib_core.inference import CanonicalCE, ConsistencyResult
from calib_core.io import Predictions
from calib_core.metrics.simplex import SimplexReliability
from studio.memory import RESULT_TTL_SECONDS


@dataclass(frozen=True)
class Vertices:
    """How the K classes become the three vertices of the triangle (hashable, a cache key).

    Attributes
    ----------
    mode : {"groups", "classes"}
        Sum the probabilities of three groups of classes, or look at three classes.
    members : tuple
        ``mode="groups"``: three tuples of class indices; ``mode="classes"``:
        three class indices.
    """

    mode: str
    members: tuple

    def keywords(self) -> dict:
        """``classes=`` or ``groups=`` for :func:`calib_core.simplex_reliability`."""
        return {"groups": self.members} if self.mode == "groups" else {"classes": self.members}


def group_problems(groups: Sequence[Sequence[int]], n_classes: int) -> tuple[list[int], list[int]]:
    """Classes that are in more than one group, and classes in none (both sorted).

    The groups are valid, every class in exactly one group, when both lists are empty.
    """
    seen: dict[int, int] = {}
    for group in groups:
        for k in group:
            seen[k] = seen.get(k, 0) + 1
    repeated = sorted(k for k, times in seen.items() if times > 1)
    missing = sorted(set(range(n_classes)) - set(seen))
    return repeated, missing


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def simplex_view(_predictions: Predictions, fingerprint: str, vertices: Vertices, lens: str,
                 class_index: int | None, partition: str, n_bins: int, min_bin_size: int,
                 distance: str, weighted: bool = True) -> SimplexReliability:
    """The lens's view of the model on the 2-simplex: projection, partition and cell table.

    With the canonical lens the vertices are ``vertices``; the max and
    marginal lenses give two-outcome predictions, mapped onto the edge
    between the first two vertices (``vertices`` is then not used). A
    weighted model's view is weighted (``sample_weight=``, the arrows and
    the cell counts); ``weighted=False`` gives the unweighted view.
    """
    probs, labels = _predictions.probs, _predictions.labels
    weights = _predictions.sample_weight if weighted else None
    if lens == "canonical":
        return cc.simplex_reliability(probs, labels, partition=partition, n_bins=n_bins, min_bin_size=min_bin_size,
                                      distance=distance, sample_weight=weights, **vertices.keywords())
    points, outcomes = cc.lens_view(probs, labels, lens, class_index=class_index)
    return cc.simplex_reliability(points, outcomes, partition=partition, n_bins=n_bins,
                                  min_bin_size=min_bin_size, distance=distance, sample_weight=weights)


@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def lens_estimate(_predictions: Predictions, fingerprint: str, distance: str, partition: str, n_bins: int,
                  min_bin_size: int, lens: str, class_index: int | None) -> float:
    """:func:`calib_core.canonical_ce` of the model (all K classes, through ``lens``); a weighted model's is
    weighted (:class:`calib_core.inference.CanonicalCE` with ``sample_weight``).

    Shown before the (slower) consistency band of :func:`lens_consistency` is ready.
    """
    estimator = CanonicalCE(distance, partition, n_bins, min_bin_size, lens, class_index)
    return estimator(_predictions.probs, _predictions.labels, sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner="Consistency resampling: drawing labels from the predictions ...", max_entries=256, ttl=RESULT_TTL_SECONDS)
def lens_consistency(_predictions: Predictions, fingerprint: str, distance: str, partition: str, n_bins: int,
                     min_bin_size: int, lens: str, class_index: int | None, n_resamples: int,
                     seed: int) -> ConsistencyResult:
    """Consistency band of :func:`lens_estimate` (``observed`` is that estimate; a weighted model's band
    draws a label per row and weighs each draw's estimate, ``sample_weight=``)."""
    estimator = CanonicalCE(distance, partition, n_bins, min_bin_size, lens, class_index)
    return cc.consistency_resampling(_predictions.probs, _predictions.labels, estimator, n_resamples, seed,
                                     sample_weight=_predictions.sample_weight)


@st.cache_data(show_spinner="Consistency resampling of the triangle view ...", max_entries=256, ttl=RESULT_TTL_SECONDS)
def view_consistency(_predictions: Predictions, fingerprint: str, vertices: Vertices, partition: str,
                     n_bins: int, min_bin_size: int, distance: str, n_resamples: int,
                     seed: int) -> ConsistencyResult:
    """Consistency band of the estimate the arrows show (canonical lens, three vertices).

    Labels are drawn from the projected predictions themselves: summing
    classes into groups, or conditioning on three classes, keeps a
    calibrated model calibrated (see :func:`calib_core.simplex_projection`),
    so this is the estimate's distribution when the model is calibrated.
    A weighted model's view is weighted (the rows it keeps, with their weights).
    """
    view = simplex_view(_predictions, fingerprint, vertices, "canonical", None, partition, n_bins,
                        min_bin_size, distance)
    estimator = CanonicalCE(distance, partition, n_bins, min_bin_size)
    return cc.consistency_resampling(view.projection.points, view.projection.labels, estimator, n_resamples, seed,
                                     sample_weight=view.projection.weights)


def view_is_whole_model(vertices: Vertices, lens: str, n_classes: int) -> bool:
    """True when the triangle shows the lens's problem itself, so one estimate describes both.

    That holds for the two-outcome lenses, and for the canonical lens when
    the vertices are all K <= 3 classes in class order, one per vertex.
    """
    if lens != "canonical":
        return True
    if n_classes > 3:
        return False
    if vertices.mode == "classes":
        return tuple(vertices.members) == (0, 1, 2)
    return tuple(tuple(g) for g in vertices.members) == cc.default_groups(n_classes)


@st.cache_data(show_spinner="Consistency bands: drawing labels from the predictions ...", max_entries=256, ttl=RESULT_TTL_SECONDS)
def reliability_bands(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str,
                      target: str | int, n_resamples: int, seed: int) -> cc.ConsistencyBands:
    """Per-bin 5th-95th percentile of the observed frequency under perfect calibration.

    The red bars of Vaicenavicius et al. (2019), Figures 8-15, for the
    Reliability page (:func:`calib_core.consistency_bands`).
    """
    return cc.consistency_bands(_predictions.probs, _predictions.labels, n_bins=n_bins, binning=binning,
                                target=target, n_resamples=n_resamples, seed=seed)


@st.cache_data(show_spinner="Lens estimates: consistency resampling and bootstrap ...", max_entries=64, ttl=RESULT_TTL_SECONDS)
def lens_table(_predictions: Predictions, fingerprint: str, n_bins: int, min_bin_size: int, n_resamples: int,
               n_bootstrap: int, seed: int):
    """Tables 3-5 of Vaicenavicius et al. (2019) for one model, as a DataFrame."""
    estimates = cc.lens_estimates(_predictions.probs, _predictions.labels, n_resamples=n_resamples,
                                  n_bootstrap=n_bootstrap, seed=seed, n_bins=n_bins, min_bin_size=min_bin_size)
    return estimates.to_frame()
