"""Every calib_core call the pages make, wrapped in ``st.cache_data``.

A model's :class:`~calib_core.io.Predictions` is passed as ``_predictions``
(not hashed: hashing arrays on every rerun would cost as much as some of the
metrics) together with its ``fingerprint``, a hash of its probabilities and
labels computed once when it was loaded (:func:`studio.state.fingerprint`).
The fingerprint and the remaining, small arguments form the cache key.

Functions that loop over models or metrics take an ``on_progress(done,
total)`` callback so the page can show a progress bar for heavy work.
"""
from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core import io as cio
from calib_core.io import Predictions
from calib_core.sensitivity import BinRanking

Progress = Callable[[int, int], None] | None

#: Columns of :func:`metrics_table`.
METRIC_COLUMNS = ("model", "rows", "metric", "key", "estimate", "ci_low", "ci_high", "std",
                  "n_bins", "binning", "n_boot", "calibration_error", "probability_scale")


# ----------------------------------------------------------------------------- loading

@st.cache_data(show_spinner=False, max_entries=32)
def load_demo(name: str) -> Predictions:
    """A bundled demo model (raises CalibrationInputError for unknown names)."""
    return cio.load_demo(name)


@st.cache_data(show_spinner=False, max_entries=32)
def load_file(raw: bytes, file_name: str, options: tuple[tuple[str, Any], ...]) -> Predictions:
    """``load_predictions`` on uploaded bytes; ``options`` are its keyword overrides."""
    return cio.load_predictions(raw, name=file_name, **dict(options))


def _suffix(file_name: str) -> str:
    suffixes = [s.lower() for s in Path(file_name).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1].lstrip(".") if suffixes else ""


@st.cache_data(show_spinner=False, max_entries=32)
def file_columns(raw: bytes, file_name: str) -> list[str]:
    """Column (or NPZ array) names of a predictions file, for the column-mapping form.

    Returns an empty list when the header cannot be read; the loader's own
    message then explains the problem.
    """
    suffix = _suffix(file_name)
    try:
        if suffix in ("parquet", "pq", "parq"):
            import pyarrow.parquet as pq

            return list(pq.read_schema(io.BytesIO(raw)).names)
        if suffix == "npz":
            with zipfile.ZipFile(io.BytesIO(raw)) as archive:
                return [Path(n).stem for n in archive.namelist() if n.endswith(".npy")]
        if suffix == "npy":
            return []
        data = raw
        if file_name.lower().endswith(".gz"):
            import gzip

            data = gzip.decompress(raw)
        header = pd.read_csv(io.BytesIO(data), sep=None, engine="python", nrows=5)
        return [str(c) for c in header.columns]
    except Exception:  # any unreadable header: the form then offers "detect" only
        return []


# ----------------------------------------------------------------------------- metrics

@st.cache_data(show_spinner=False, max_entries=512)
def metric_estimates(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str) -> dict[str, float]:
    """Every registered metric on all rows of the model."""
    return cc.compute_metrics(_predictions.probs, _predictions.labels, n_bins=n_bins, binning=binning)


@st.cache_data(show_spinner=False, max_entries=4096)
def metric_interval(_predictions: Predictions, fingerprint: str, key: str, n_bins: int, binning: str,
                    n_boot: int, seed: int, alpha: float) -> tuple[float, float, float]:
    """Percentile bootstrap ``(low, high, std)`` of one metric (seeded, so reproducible)."""
    metric = cc.metric_function(key, n_bins=n_bins, binning=binning)
    result = cc.bootstrap_ci(metric, _predictions.probs, _predictions.labels,
                             n_boot=n_boot, alpha=alpha, seed=seed)
    return result.low, result.high, result.std


def metrics_table(models: Sequence[Any], *, n_bins: int, binning: str, n_boot: int, seed: int,
                  alpha: float = 0.05, on_progress: Progress = None) -> pd.DataFrame:
    """Every metric of every model, with bootstrap intervals when ``n_boot >= 2``.

    Parameters
    ----------
    models : sequence of studio.state.ModelView
    n_bins, binning : bin settings of the binned metrics
    n_boot : int
        Bootstrap resamples; 0 skips the intervals.
    seed : int
        The same seed resamples the same rows for every metric (paired intervals).
    alpha : float
        The intervals cover ``1 - alpha``.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each (model, metric).

    Returns
    -------
    pandas.DataFrame
        One row per (model, metric), columns :data:`METRIC_COLUMNS`.
    """
    specs = cc.METRICS
    total = len(models) * len(specs)
    rows = []
    done = 0
    for model in models:
        estimates = metric_estimates(model.predictions, model.fingerprint, n_bins, binning)
        for spec in specs:
            # Settings a metric ignores are normalised so that its cache entry is shared.
            spec_bins = n_bins if spec.uses_bins else 15
            spec_binning = binning if spec.uses_binning else "uniform"
            low = high = std = np.nan
            if spec.key not in estimates:  # an O(N^2) metric left out on many rows
                continue
            if n_boot >= 2 and not spec.quadratic:
                low, high, std = metric_interval(model.predictions, model.fingerprint, spec.key, spec_bins,
                                                 spec_binning, n_boot, seed, alpha)
            rows.append({
                "model": model.name, "rows": model.rows, "metric": spec.label, "key": spec.key,
                "estimate": estimates[spec.key], "ci_low": low, "ci_high": high, "std": std,
                "n_bins": n_bins if spec.uses_bins else None,
                "binning": binning if spec.uses_binning else None,
                "n_boot": n_boot if n_boot >= 2 and not spec.quadratic else 0,
                "calibration_error": spec.calibration_error,
                "probability_scale": spec.probability_scale,
            })
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    table = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
    table["n_bins"] = table["n_bins"].astype("Int64")
    return table


def metric_notes() -> pd.DataFrame:
    """What each registered metric measures and how it misleads (from the registry)."""
    return pd.DataFrame([{
        "metric": spec.label, "key": spec.key, "what it measures": spec.summary, "pitfalls": spec.pitfalls,
        "uses the bin count": spec.uses_bins, "uses the binning": spec.uses_binning,
    } for spec in cc.METRICS])


# ----------------------------------------------------------------------------- reliability and classes

@st.cache_data(show_spinner=False, max_entries=512)
def reliability(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str,
                target: str | int = "top_label", alpha: float = 0.05) -> pd.DataFrame:
    """``calib_core.reliability_table`` for one model (Wilson intervals per bin)."""
    return cc.reliability_table(_predictions.probs, _predictions.labels, n_bins, binning,
                                target=target, alpha=alpha)


@st.cache_data(show_spinner=False, max_entries=256)
def per_class(_predictions: Predictions, fingerprint: str, n_bins: int, binning: str) -> pd.DataFrame:
    """Per-class ACE, TACE and class-wise ECE of one model.

    Returns
    -------
    pandas.DataFrame
        Columns ``class_index``, ``class``, ``support`` (rows of that class),
        ``frequency``, ``mean_probability``, ``ace``, ``tace`` (adaptive
        ranges, Nixon et al. Figure 1 left) and ``classwise_ece`` (with
        ``binning``).
    """
    probs, labels = _predictions.probs, _predictions.labels
    n_classes = probs.shape[1]
    support = np.bincount(labels, minlength=n_classes)
    return pd.DataFrame({
        "class_index": np.arange(n_classes),
        "class": list(_predictions.class_names),
        "support": support,
        "frequency": support / labels.size,
        "mean_probability": probs.mean(axis=0),
        "ace": cc.ace(probs, labels, n_bins=n_bins, per_class=True),
        "tace": cc.tace(probs, labels, n_bins=n_bins, per_class=True),
        "classwise_ece": cc.classwise_ece(probs, labels, n_bins=n_bins, binning=binning, per_class=True),
    })


# ----------------------------------------------------------------------------- bin sensitivity

@st.cache_data(show_spinner=False, max_entries=64)
def sensitivity(_predictions: Predictions, fingerprint: str, bin_counts: tuple[int, ...],
                metrics: tuple[str, ...], binnings: tuple[str, ...]) -> pd.DataFrame:
    """``calib_core.bin_sensitivity`` for one model."""
    return cc.bin_sensitivity(_predictions.probs, _predictions.labels, bin_counts=bin_counts,
                              metrics=metrics, binnings=binnings)


def sensitivity_tables(models: Sequence[Any], *, bin_counts: tuple[int, ...], metrics: tuple[str, ...],
                       binnings: tuple[str, ...], on_progress: Progress = None) -> dict[str, pd.DataFrame]:
    """The sweep of every model, ``{model name: table}``."""
    tables = {}
    for i, model in enumerate(models):
        tables[model.name] = sensitivity(model.predictions, model.fingerprint, bin_counts, metrics, binnings)
        if on_progress is not None:
            on_progress(i + 1, len(models))
    return tables


@st.cache_data(show_spinner=False, max_entries=64)
def ranking(_tables: dict[str, pd.DataFrame], key: tuple, reference_n_bins: int) -> BinRanking:
    """``calib_core.rank_by_bins``; ``key`` identifies the tables (names, fingerprints, settings)."""
    return cc.rank_by_bins(_tables, reference_n_bins=reference_n_bins)


def table_error(table: pd.DataFrame) -> float:
    """``sum(weight * |gap|)`` of a reliability table: the ECE (or class-wise ECE term) it shows."""
    return float((table["weight"] * table["gap"].abs()).sum())


def bin_marks(n_samples: int) -> dict[str, float]:
    """Reference bin counts for N rows: ``optimal_n_bins(N)`` (Futami & Fujisawa 2024) and N^(1/3)."""
    return {"optimal_n_bins(N)": float(cc.optimal_n_bins(int(n_samples))),
            "N^(1/3)": round(float(n_samples) ** (1.0 / 3.0), 2)}
