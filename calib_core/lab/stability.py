"""How far an estimate still moves with the test-set size.

Two readings of the lab's studies:

* :func:`stability_table` reads a subset study of the user's test set
  (:func:`calib_core.subset_study` at :func:`study_sizes`): is each metric's
  value at the full size N stable, or would another test set of N rows, or a
  larger one, give a different number?
* :func:`gap_slopes` reads a simulation run (:func:`calib_core.run_lab`):
  the log-log slope of the observed mean absolute error of the estimators of
  a TCE (:func:`observed_gap`) against the test-set size, to set beside the
  ``n^(-1/3)`` of Futami & Fujisawa's (2024) bound at the optimal bin count.

References
----------
Gruber, S. & Buettner, F. "Better Uncertainty Calibration via Proper Scores for
Classification and Beyond", NeurIPS 2022, appendix G.2-G.3 (estimates on
subsets of a test set).

Futami, F. & Fujisawa, M. "Information-Theoretic Generalization Analysis for
Expected Calibration Error", NeurIPS 2024, eq. (12)-(13).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from calib_core.lab.subsets import default_subset_sizes

__all__ = ["BOUNDED_TARGETS", "STABILITY_COLUMNS", "gap_slopes", "observed_gap", "stability_table", "study_sizes"]

#: Columns of :func:`stability_table`.
STABILITY_COLUMNS = ("model", "metric", "value", "half", "std_half", "relative_se", "drift", "stable", "verdict")
#: Targets whose estimators Futami & Fujisawa's bound describes (binned ECEs and the sweep, estimating a TCE).
BOUNDED_TARGETS = ("tce", "classwise_tce")


def study_sizes(n_rows: int) -> tuple[int, ...]:
    """Subset sizes of a stability study: :func:`default_subset_sizes` of ``n_rows`` plus ``n_rows // 2``.

    Parameters
    ----------
    n_rows : int
        Rows N of the test set.

    Returns
    -------
    tuple of int
        Increasing sizes from 100 up to N; ``N // 2`` is always among them,
        as :func:`stability_table` needs it.

    Examples
    --------
    >>> study_sizes(899)
    (100, 128, 163, 208, 265, 339, 432, 449, 552, 704, 899)
    """
    return tuple(sorted(set(default_subset_sizes(n_rows)) | {n_rows // 2}))


def _verdict(relative_se: float, drift: float, tolerance: float) -> str:
    if relative_se <= tolerance and drift <= tolerance:
        return "stable"
    if relative_se > tolerance and drift > tolerance:
        return "noisy and still moving with N"
    if relative_se > tolerance:
        return "noisy: another test set of this size could differ"
    return "still moving with N (small-sample bias)"


def _relative(difference: float, scale: float) -> float:
    """``difference / scale``; with ``scale == 0``: 0 when ``difference`` is 0 too, else infinity."""
    if scale > 0:
        return difference / scale
    return 0.0 if difference == 0 else math.inf


def stability_table(summary: pd.DataFrame, n_rows: Mapping[str, int], tolerance: float) -> pd.DataFrame:
    """Which estimates are stable at the full test-set size N: one row per (model, metric).

    Parameters
    ----------
    summary : DataFrame
        :attr:`calib_core.SubsetStudy.summary` of one or more models with a
        ``model`` column: ``model``, ``metric``, ``size``, ``mean``, ``std``,
        ``full_value``. It must hold the sizes ``N // 2`` and ``N`` of each
        model (see :func:`study_sizes`); a (model, metric) without them is
        left out.
    n_rows : mapping of str to int
        Rows N of each model.
    tolerance : float
        Largest relative standard error and drift of a stable estimate.

    Returns
    -------
    DataFrame
        Columns :data:`STABILITY_COLUMNS`: ``model``, ``metric``, ``value``
        (on all N rows), ``half`` (the subset size used, N // 2),
        ``std_half``, ``relative_se``, ``drift``, ``stable`` and ``verdict``
        (in words), in the order of ``summary``.

    Notes
    -----
    Subsets of size n drawn without replacement from N rows vary, for a mean,
    with variance

    .. math:: \\frac{\\sigma^2}{n} \\left(1 - \\frac{n}{N}\\right),

    which equals :math:`\\sigma^2 / N` at :math:`n = N/2`: as much as a whole
    new test set of size N would. So the spread at N/2 is taken as the
    standard error of the estimate at N,

    .. math:: \\text{relative\\_se} = \\frac{s_{N/2}}{|v_N|}, \\qquad
              \\text{drift} = \\frac{|\\bar v_{N/2} - v_N|}{|v_N|},

    and the drift (the change of the mean from N/2 to N) shows an estimate
    still moving with the test-set size (its small-sample bias). With
    :math:`v_N = 0` a ratio is 0 when its numerator is 0 and infinite
    otherwise. An estimate is stable when both are at most ``tolerance``.

    Examples
    --------
    >>> summary = pd.DataFrame({"model": "m", "metric": "ece", "size": [500, 1000], "mean": [0.06, 0.05],
    ...                         "std": [0.01, 0.0], "full_value": 0.05})
    >>> row = stability_table(summary, {"m": 1000}, 0.1).iloc[0]
    >>> round(float(row["relative_se"]), 3), round(float(row["drift"]), 3), row["verdict"]
    (0.2, 0.2, 'noisy and still moving with N')
    """
    rows = []
    for (model, metric), group in summary.groupby(["model", "metric"], sort=False):
        total = n_rows[model]
        half = total // 2
        full = group.loc[group["size"] == total, "full_value"]
        at_half = group.loc[group["size"] == half]
        if full.empty or at_half.empty:
            continue
        value = float(full.iloc[0])
        std_half = float(at_half["std"].iloc[0])
        mean_half = float(at_half["mean"].iloc[0])
        scale = abs(value)
        relative_se = _relative(std_half, scale)
        drift = _relative(abs(mean_half - value), scale)
        verdict = _verdict(relative_se, drift, tolerance)
        rows.append((model, metric, value, half, std_half, relative_se, drift, verdict == "stable", verdict))
    return pd.DataFrame(rows, columns=list(STABILITY_COLUMNS))


def observed_gap(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of a lab summary whose estimators target a TCE (Futami & Fujisawa's "TCE gap").

    Parameters
    ----------
    summary : DataFrame
        :attr:`calib_core.LabResult.summary` with a ``label`` column.

    Returns
    -------
    DataFrame
        Columns ``estimator``, ``label``, ``size``, ``mean_abs_error`` of the
        estimators whose ``target`` is one of :data:`BOUNDED_TARGETS`.
    """
    keep = summary["target"].isin(BOUNDED_TARGETS) if not summary.empty else []
    return summary.loc[keep, ["estimator", "label", "size", "mean_abs_error"]].reset_index(drop=True)


def gap_slopes(observed: pd.DataFrame) -> dict[str, float]:
    """Log-log slope of the observed mean absolute error against the test-set size, per estimator.

    Parameters
    ----------
    observed : DataFrame
        Columns ``label``, ``size`` and ``mean_abs_error`` (e.g.
        :func:`observed_gap`).

    Returns
    -------
    dict of str to float
        Label -> least-squares slope ``a`` of
        :math:`\\log \\mathrm{E}|\\hat\\theta_n - \\theta| = a \\log n + b`,
        over the sizes with an error above 0; an estimator with fewer than two
        such sizes is left out.

    Notes
    -----
    Futami & Fujisawa's (2024) total bound falls like :math:`n^{-1/3}` at the
    optimal bin count (eq. 13), a slope of -1/3; a steeper observed slope
    means the bound is loose for this model.

    Examples
    --------
    >>> sizes = np.array([100, 1000, 10_000])
    >>> observed = pd.DataFrame({"label": "x", "size": sizes, "mean_abs_error": 0.5 * sizes ** -0.5})
    >>> round(gap_slopes(observed)["x"], 6)
    -0.5
    """
    slopes: dict[str, float] = {}
    for label, rows in observed.groupby("label", sort=False):
        rows = rows[rows["mean_abs_error"] > 0]
        if rows["size"].nunique() >= 2:
            x = np.log(rows["size"].to_numpy(dtype=float))
            y = np.log(rows["mean_abs_error"].to_numpy(dtype=float))
            slopes[str(label)] = float(np.polyfit(x, y, 1)[0])
    return slopes
