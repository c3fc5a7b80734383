"""The app's figures from Python: compute with calib_core, then draw with the page's own figure builder.

Each function makes the calls the page makes, with the page's defaults, and
returns the figure the page draws for one model (scikit-learn's
``Display.from_predictions``: a pure function computes, a builder draws;
relplot's ``plot(**prepare(...))``). The builders themselves
(:mod:`calib_core.plot.figures` and its siblings) take the computed tables,
for several models at once.

Plotly is an optional extra (``pip install 'calib-core[plot]'``): this module
imports it only when a figure is asked for, so ``import calib_core`` works
without it.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from numpy.typing import ArrayLike

from calib_core.metrics.canonical import lens_view
from calib_core.metrics.reliability import per_class_table, reliability_table
from calib_core.metrics.sensitivity import SENSITIVITY_METRICS, bin_sensitivity as _sweep
from calib_core.metrics.simplex import default_groups, simplex_reliability
from calib_core.validation import check_probs_labels

__all__ = ["BIN_COUNTS", "BINNINGS", "PLOTLY_MISSING", "bin_sensitivity", "per_class", "recalibration", "reliability",
           "simplex"]

#: The Bin sensitivity page's sweep: every bin count from 2 to 200, both binnings.
BIN_COUNTS = tuple(range(2, 201))
BINNINGS = ("uniform", "adaptive")
#: The message when Plotly is missing.
PLOTLY_MISSING = ("calib_core.plot draws with Plotly, an optional extra: install it with "
                  "pip install 'calib-core[plot]' (or pip install plotly).")


def _builders(name: str) -> ModuleType:
    """The figure module ``calib_core.plot.<name>``, once Plotly is known to be importable."""
    try:
        importlib.import_module("plotly.graph_objects")
    except ImportError as exc:
        raise ImportError(PLOTLY_MISSING) from exc
    return importlib.import_module(f"calib_core.plot.{name}")


def _names(class_names: Sequence[str] | None, n_classes: int) -> tuple[str, ...]:
    return tuple(str(c) for c in class_names) if class_names is not None else tuple(str(k) for k in range(n_classes))


def reliability(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, *, binning: str = "uniform",
                target: str | int = "top_label", style: str = "points", histogram_log: bool = False,
                alpha: float = 0.05, class_names: Sequence[str] | None = None, name: str = "model") -> Any:
    """The Reliability page's diagram: observed frequency against mean confidence per bin, with a histogram.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
    target : "top_label" or int
        The event: the top label, or one class's probability.
    style : {"points", "bars"}
    histogram_log : bool
        Log-scale the histogram of rows per bin.
    alpha : float
        The bins' Wilson intervals are ``1 - alpha``.
    class_names : sequence of str, optional
        Shown in the axis title when ``target`` is a class.
    name : str
        The legend entry.

    Returns
    -------
    plotly.graph_objects.Figure
        What :func:`calib_core.plot.figures.reliability_figure` draws from
        :func:`calib_core.reliability_table` (the page's figure).

    Examples
    --------
    >>> import calib_core as cc
    >>> fig = cc.plot.reliability([[0.8, 0.2], [0.3, 0.7]], [0, 1], n_bins=5)  # doctest: +SKIP
    """
    probs, labels = check_probs_labels(probs, labels)
    figures = _builders("figures")
    table = reliability_table(probs, labels, n_bins, binning, target=target, alpha=alpha)
    return figures.reliability_figure(
        {name: table}, layout="overlay", style=style, colors={name: 0},
        x_title=figures.event_axis_title(target, _names(class_names, probs.shape[1])),
        n_rows={name: labels.shape[0]}, histogram_log=histogram_log)


def per_class(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, *, binning: str = "uniform",
              sort_by: str | None = None, top_n: int = 25, class_names: Sequence[str] | None = None,
              name: str = "model") -> Any:
    """The Per-class page's bars: ACE, TACE and class-wise ECE of every class (the worst ones above
    :data:`~calib_core.plot.figures.MANY_CLASSES` classes).

    Parameters
    ----------
    probs, labels : array_like
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Bins of the class-wise ECE (ACE always uses adaptive ranges).
    sort_by : {"class", "ace", "classwise_ece"}, optional
        Default as on the page: class order, or ``"ace"`` with many classes.
    top_n : int
        With many classes: how many of the worst classes are drawn.
    class_names : sequence of str, optional
    name : str

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`calib_core.plot.figures.per_class_figure` (or ``per_class_worst_figure``) of
        :func:`calib_core.per_class_table`.
    """
    probs, labels = check_probs_labels(probs, labels)
    figures = _builders("figures")
    many = probs.shape[1] > figures.MANY_CLASSES
    sort_by = sort_by or ("ace" if many else "class")
    tables = {name: per_class_table(probs, labels, n_bins, binning,
                                    class_names=_names(class_names, probs.shape[1]))}
    if not many:
        return figures.per_class_figure(tables, sort_by=sort_by, colors={name: 0})
    return figures.per_class_worst_figure(tables, sort_by="ace" if sort_by == "class" else sort_by, top_n=top_n,
                                          colors={name: 0})


def bin_sensitivity(probs: ArrayLike, labels: ArrayLike, *, metrics: Sequence[str] = SENSITIVITY_METRICS,
                    binnings: Sequence[str] = BINNINGS, bin_counts: Sequence[int] = BIN_COUNTS,
                    name: str = "model") -> Any:
    """The Bin sensitivity page's panels: each binned metric against the number of bins, both binnings.

    Parameters
    ----------
    probs, labels : array_like
    metrics : sequence of str
        Keys of :data:`calib_core.metrics.sensitivity.SENSITIVITY_METRICS` (default: all).
    binnings : sequence of {"uniform", "adaptive"}
    bin_counts : sequence of int
        Default 2..200, as on the page (the vertical marks are those inside this range).
    name : str

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`calib_core.plot.figures.sensitivity_figure` of :func:`calib_core.bin_sensitivity`.
    """
    probs, labels = check_probs_labels(probs, labels)
    figures = _builders("figures")
    table = _sweep(probs, labels, bin_counts=tuple(bin_counts), metrics=tuple(metrics), binnings=tuple(binnings))
    low, high = min(bin_counts), max(bin_counts)
    shown = table.assign(model=name)
    shown = shown[shown["metric"].isin(list(metrics)) & shown["binning"].isin(list(binnings))
                  & shown["n_bins"].between(low, high)]
    marks = figures.bin_marks(labels.shape[0])
    return figures.sensitivity_figure(shown, marks={k: v for k, v in marks.items() if low <= v <= high},
                                      colors={name: 0})


def simplex(probs: ArrayLike, labels: ArrayLike, *, lens: str = "canonical", class_index: int | None = None,
            groups: Sequence[Sequence[int]] | None = None, partition: str = "uniform", n_bins: int = 10,
            min_bin_size: int = 100, distance: str = "tv", arrow_scale: float = 1.0, count_scale: str = "log",
            class_names: Sequence[str] | None = None) -> Any:
    """The Simplex page's two-dimensional reliability diagram: one arrow per cell of the triangle.

    Parameters
    ----------
    probs, labels : array_like
    lens : {"canonical", "max", "marginal"}
        The whole distribution on three vertices, or the two outcomes of the top label / of class
        ``class_index`` on one edge.
    class_index : int, optional
        The class of the marginal lens.
    groups : three sequences of int, optional
        The classes each vertex adds up (default :func:`calib_core.default_groups`, as on the page).
    partition : {"uniform", "data_dependent"}
    n_bins : int
        Subdivisions per edge of the uniform partition.
    min_bin_size : int
        Largest cell of the data-dependent partition.
    distance : {"tv", "squared"}
    arrow_scale : float
    count_scale : {"log", "linear"}
    class_names : sequence of str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`calib_core.plot.figures_simplex.simplex_figure` of :func:`calib_core.simplex_reliability`.
    """
    probs, labels = check_probs_labels(probs, labels)
    figures_simplex = _builders("figures_simplex")
    if lens == "canonical":
        chosen = tuple(tuple(g) for g in groups) if groups is not None else default_groups(probs.shape[1])
        view = simplex_reliability(probs, labels, groups=chosen, partition=partition, n_bins=n_bins,
                                   min_bin_size=min_bin_size, distance=distance)
    else:
        points, outcomes = lens_view(probs, labels, lens, class_index=class_index)
        view = simplex_reliability(points, outcomes, partition=partition, n_bins=n_bins,
                                   min_bin_size=min_bin_size, distance=distance)
    titles = figures_simplex.vertex_titles(view, lens, _names(class_names, probs.shape[1]), class_index)
    figure = figures_simplex.simplex_figure(view, arrow_scale=arrow_scale, class_names=titles,
                                            count_scale=count_scale)
    return figure.update_layout(height=figures_simplex.SIMPLEX_HEIGHT)


def recalibration(before: ArrayLike, after: Any, labels: ArrayLike, n_bins: int = 15, *,
                  binning: str = "uniform", method: str | None = None) -> Any:
    """The Recalibration page's reliability diagrams before and after, side by side.

    Parameters
    ----------
    before : array_like of shape (N, K)
        The model's probabilities on the evaluation rows.
    after : array_like of shape (N, K), or a fitted recalibrator
        The recalibrated probabilities, or a fitted recalibrator whose ``predict_proba(before)`` gives them.
    labels : array_like of shape (N,)
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
    method : str, optional
        The right panel is titled ``"After: <method>"`` (default: the recalibrator's class name, or
        ``"recalibrated"``).

    Returns
    -------
    plotly.graph_objects.Figure
        :func:`calib_core.plot.figures.reliability_figure` of the two :func:`calib_core.reliability_table`.
    """
    before, labels = check_probs_labels(before, labels)
    if hasattr(after, "predict_proba"):
        method = method or type(after).__name__
        after = after.predict_proba(before)
    after, _ = check_probs_labels(after, labels)
    figures = _builders("figures")
    after_name = f"After: {method or 'recalibrated'}"
    tables = {"Before": reliability_table(before, labels, n_bins, binning),
              after_name: reliability_table(after, labels, n_bins, binning)}
    return figures.reliability_figure(tables, layout="side_by_side", colors={"Before": 0, after_name: 2})
