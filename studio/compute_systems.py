"""The *Compare systems* section's calib_core calls, wrapped in ``st.cache_data`` (pattern of :mod:`studio.compute`).

Confidence models' rows are matched by item id (:func:`calib_core.io.systems.match_by_id`), then compared with
paired intervals (:func:`calib_core.recalibration.paired.compare_systems`); the models' fingerprints and the
small options form the cache key.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

from calib_core.io import Predictions
from calib_core.io.systems import match_by_id
from calib_core.recalibration.paired import SystemsComparison, compare_systems
from calib_core.validation import CalibrationInputError
from studio.memory import RESULT_TTL_SECONDS


@dataclass(frozen=True)
class SystemsView:
    """What the section shows: the comparison, or why there is none; the items matched and how."""

    comparison: SystemsComparison | None
    error: str
    n_matched: int
    rows: tuple[int, ...]
    by_id: bool


def matched_systems(predictions: Sequence[Predictions], names: Sequence[str], *, n_boot: int, seed: int,
                    alpha: float) -> SystemsView:
    """Confidence models matched by id and compared; a refusal (ids that do not match) becomes ``error``."""
    rows = tuple(int(p.n_samples) for p in predictions)
    by_id = all(p.ids is not None for p in predictions)
    try:
        matched = match_by_id(list(predictions), names=list(names))
        found = compare_systems([p.probs for p in matched], np.stack([p.labels for p in matched]), names=names,
                                kind="confidence", n_boot=n_boot, seed=seed, alpha=alpha)
    except CalibrationInputError as exc:
        return SystemsView(None, str(exc), 0, rows, by_id)
    return SystemsView(found, "", int(matched[0].n_samples), rows, by_id)


@st.cache_data(show_spinner="Comparing the systems (paired bootstrap) ...", max_entries=16, ttl=RESULT_TTL_SECONDS)
def systems_comparison(_predictions: Sequence[Predictions], fingerprints: tuple[str, ...], names: tuple[str, ...],
                       n_boot: int, seed: int, alpha: float) -> SystemsView:
    """:func:`matched_systems`, cached by the models' fingerprints."""
    return matched_systems(_predictions, names, n_boot=n_boot, seed=seed, alpha=alpha)
