"""Plotly figures of canonical calibration on the 2-simplex (no streamlit here).

:func:`simplex_figure` draws the two-dimensional reliability diagram of
Vaicenavicius et al. (2019, appendix C.2, Figures 16 and 18) from a
:class:`calib_core.metrics.simplex.SimplexReliability` (or its
:class:`calib_core.metrics.simplex.CellTable`): the cells of the partition colour-coded
by the number of predictions they hold, and one arrow per non-empty cell from
the cell's mean prediction (tail) to its observed label frequency (head).
"""
from __future__ import annotations

import math
import numbers
import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from calib_core.metrics.simplex import CellTable, SimplexReliability, cell_polygons, triangle_keys, triangle_vertices
from calib_core.validation import CalibrationInputError
from calib_core.plot.text import plot_text

__all__ = ["ARROW_TRACE_NAME", "SIMPLEX_HEIGHT", "group_title", "simplex_figure", "vertex_titles"]

#: Height of the Simplex page's chart (px): the triangle is about as wide as the chart is tall.
SIMPLEX_HEIGHT = 720

#: Name of the single trace holding every arrow (tests and pages look it up by name).
ARROW_TRACE_NAME = "arrows"

#: Distinct fill colours used for the count colour scale (one trace each at most).
_COLOUR_LEVELS = 48

#: Vertex titles are wrapped at spaces into lines of at most this many characters, and the margins are
#: made wide enough for the widest line: Plotly centres the bottom titles about 20 px outside their
#: vertex (``_TITLE_SHIFT_PX``) and its 14 px title font is about 7.9 px per character in Chromium
#: (``_TITLE_PX_PER_CHAR`` keeps a little slack). Without this, "p_rep + strong_dem" was cut at the
#: left edge.
_TITLE_LINE_CHARS = 18
_TITLE_PX_PER_CHAR = 8.5
_TITLE_SHIFT_PX = 20
_TITLE_LINE_PX = 18
#: The colour bar sits in the right margin, ``xpad`` px after the plot area (where the triangle ends at
#: the latest), so it never covers the third vertex's title; thickness and room for its tick labels.
_COLOUR_BAR_THICKNESS = 16
_COLOUR_BAR_LABELS_PX = 64

#: Marker sizes (px) of an arrow's tail and head; the head must stay visible on short arrows.
#: (Plotly draws no tail marker: with angleref="previous" the first point of a segment has no
#: direction. The tail's size still sets its hover target.)
_TAIL_SIZE, _HEAD_SIZE = 5, 14


def _vertex_names(result: SimplexReliability | CellTable, class_names: Sequence[str] | None) -> tuple[str, str, str]:
    projection = result.projection if isinstance(result, SimplexReliability) else None
    if class_names is None:
        return projection.vertex_names() if projection is not None else ("0", "1", "2")
    names = [str(name) for name in class_names]
    if projection is not None and len(names) == projection.n_classes:
        return projection.vertex_names(names)
    if len(names) == 3:
        return names[0], names[1], names[2]
    expected = "3" if projection is None else f"3 or {projection.n_classes}"
    raise CalibrationInputError(
        f"`class_names` must hold {expected} names (the vertices, or every class), got {len(names)}."
    )


def _vertex_title(name: str) -> tuple[str, float]:
    """``name`` as a Plotly title wrapped at spaces (lines joined by ``<br>``), and half its widest line in px.

    Each line is plain text (:func:`~calib_core.plot.text.plot_text`); a word longer than a line is cut.
    """
    lines = textwrap.wrap(name, _TITLE_LINE_CHARS, break_on_hyphens=False) or [""]
    return "<br>".join(plot_text(line) for line in lines), max(map(len, lines)) * _TITLE_PX_PER_CHAR / 2


def _fmt(vector: np.ndarray) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in vector) + ")"


def _count_colour_values(count: np.ndarray, count_scale: str) -> tuple[np.ndarray, dict]:
    """Colour coordinate of each count and the colour-bar ticks that label it in counts."""
    top = float(count.max()) if count.size else 1.0
    if count_scale == "linear":
        return count.astype(float), {"title": {"text": "count"}}
    values = np.log10(np.maximum(count, 1.0))
    low = 0.0  # the colour scale starts at a count of 1 (see _cell_traces)
    candidates = np.array([m * 10.0 ** d for d in range(0, math.floor(math.log10(max(top, 1.0))) + 1)
                           for m in (1, 2, 5)])
    shown = candidates[(np.log10(candidates) >= low - 1e-9) & (candidates <= top)]
    if shown.size < 2:
        shown = np.unique(np.round([10 ** low, top]))
    ticks = {
        "title": {"text": "count"},
        "tickvals": np.log10(shown).tolist(),
        "ticktext": [f"{int(v):,}" for v in shown],
    }
    return values, ticks


def _polygon_coordinates(polygons: Sequence[np.ndarray]) -> tuple[list, list, list]:
    """a, b, c lists of closed polygons (each (M, 3) barycentric corners) separated by None."""
    a, b, c = [], [], []
    for polygon in polygons:
        if len(polygon) == 0:  # a region cut to nothing by round-off: nothing to draw
            continue
        for vertex in [*range(len(polygon)), 0]:
            a.append(float(polygon[vertex, 0]))
            b.append(float(polygon[vertex, 1]))
            c.append(float(polygon[vertex, 2]))
        a.append(None)
        b.append(None)
        c.append(None)
    return a, b, c


def _cell_traces(table: CellTable, polygons: Sequence[np.ndarray], colorscale: str, count_scale: str,
                 grid: Sequence[np.ndarray] | None) -> list[go.Scatterternary]:
    """Cells filled by count (one trace per colour level), optional grid lines and the colour bar."""
    traces = []
    if grid is not None:
        a, b, c = _polygon_coordinates(grid)
        traces.append(go.Scatterternary(a=a, b=b, c=c, mode="lines", name="grid",
                                        line={"color": "rgba(120,120,120,0.35)", "width": 0.6},
                                        hoverinfo="skip", showlegend=False))
    corners = list(polygons)
    colour_value, ticks = _count_colour_values(table.count, count_scale)
    if not isinstance(table.n_total, int):  # a weighted table: the counts are summed row weights
        ticks["title"] = {"text": "summed weight"}
    # The scale starts at a count of 1 (log) or 0 (linear), not at the smallest cell: data-dependent cells
    # hold similar counts, and a cell of 87 rows must not look empty beside one of 91.
    low = 0.0
    high = float(colour_value.max()) if colour_value.size else 1.0
    span = high - low if high > low else 1.0
    level = np.minimum(((colour_value - low) / span * _COLOUR_LEVELS).astype(int), _COLOUR_LEVELS - 1)
    palette = sample_colorscale(colorscale, [(i + 0.5) / _COLOUR_LEVELS for i in range(_COLOUR_LEVELS)])
    # One filled trace per colour level: each triangle is a gap-separated segment,
    # which fill="toself" closes on its own.
    # Data-dependent cells have no grid: white outlines show where one cell ends and the next begins.
    outline = {"width": 0} if grid is not None else {"width": 2.0, "color": "white"}
    for lev in np.unique(level):
        a, b, c = _polygon_coordinates([corners[i] for i in np.flatnonzero(level == lev)])
        traces.append(go.Scatterternary(a=a, b=b, c=c, mode="lines", fill="toself", name="cells",
                                        fillcolor=palette[lev], line={"color": palette[lev], **outline},
                                        hoverinfo="skip", showlegend=False, opacity=0.85))
    traces.append(go.Scatterternary(
        a=[1.0 / 3.0, 1.0 / 3.0], b=[1.0 / 3.0, 1.0 / 3.0], c=[1.0 / 3.0, 1.0 / 3.0], mode="markers",
        name="count", showlegend=False, hoverinfo="skip",
        marker={"color": [low, high], "colorscale": colorscale, "cmin": low, "cmax": high, "opacity": 0,
                "showscale": True, "colorbar": {**ticks, "x": 1.0, "xanchor": "left", "len": 0.8,
                                         "thickness": _COLOUR_BAR_THICKNESS}},
    ))
    return traces


def _prediction_dots(result: SimplexReliability, max_points: int, seed: int) -> go.Scatterternary:
    """The predictions as small outlined white dots over the cells (a seeded subset of at most ``max_points``)."""
    points = result.projection.points
    if points.shape[0] > max_points:
        points = points[np.sort(np.random.default_rng(seed).choice(points.shape[0], max_points, replace=False))]
    return go.Scatterternary(a=points[:, 0], b=points[:, 1], c=points[:, 2], mode="markers", name="predictions",
                             marker={"color": "rgba(255,255,255,0.85)", "size": 4,
                                     "line": {"width": 0.6, "color": "rgba(40,40,40,0.8)"}}, hoverinfo="skip",
                             showlegend=False)


def _arrow_trace(table: CellTable, arrow_scale: float, names: tuple[str, str, str]) -> go.Scatterternary:
    tail = table.mean_prediction
    head = tail + arrow_scale * (table.observed_frequency - tail)
    n = table.n_cells
    a = np.full(3 * n, np.nan)
    b = np.full(3 * n, np.nan)
    c = np.full(3 * n, np.nan)
    for coordinate, out in enumerate((a, b, c)):
        out[0::3] = tail[:, coordinate]
        out[1::3] = head[:, coordinate]
    label = ", ".join(names)
    text = []
    for i in range(n):
        count = f"count: {int(table.count[i]):,}" if isinstance(table.n_total, int) else \
            f"summed weight: {table.count[i]:,.6g}"
        info = (f"{count}<br>mean prediction ({label}): {_fmt(tail[i])}"
                f"<br>observed frequency: {_fmt(table.observed_frequency[i])}"
                f"<br>deviation ({table.distance}): {table.deviation[i]:.4f}")
        text.extend([info, info, None])
    symbols = ["circle", "arrow", "circle"] * n
    sizes = [_TAIL_SIZE, _HEAD_SIZE, 0] * n

    def as_list(values: np.ndarray) -> list:
        # None (not NaN) separates the segments of one trace.
        return [None if np.isnan(v) else float(v) for v in values]

    return go.Scatterternary(
        a=as_list(a), b=as_list(b), c=as_list(c), mode="lines+markers", name=ARROW_TRACE_NAME,
        line={"color": "#d62728", "width": 1.6},
        marker={"symbol": symbols, "size": sizes, "angleref": "previous", "color": "#d62728",
                "opacity": 1.0, "line": {"width": 0}},
        text=text, hovertemplate="%{text}<extra></extra>", showlegend=False, connectgaps=False,
        cliponaxis=False,  # heads on a vertex or an edge are drawn whole
    )


def simplex_figure(table_or_result: SimplexReliability | CellTable, *, arrow_scale: float = 1.0,
                   class_names: Sequence[str] | None = None, title: str | None = None,
                   count_scale: str = "log", colorscale: str = "Blues", max_points: int = 5000,
                   seed: int = 0) -> go.Figure:
    """Two-dimensional reliability diagram on the 2-simplex (ternary chart).

    Parameters
    ----------
    table_or_result : SimplexReliability or CellTable
        From :func:`calib_core.simplex_reliability` (or its ``table``; a
        table must have three coordinates).
    arrow_scale : float, default 1.0
        Arrow length multiplier: the head is drawn at
        ``mean + arrow_scale * (observed - mean)``; values > 1 make small
        deviations visible (heads may then leave the triangle).
    class_names : sequence of str, optional
        Names of every original class (the vertex titles join each group's
        names with "+") or exactly three vertex titles. Default: class indices.
        Shown as plain text (escaped with :func:`calib_core.plot.text.plot_text` here:
        pass them raw).
    title : str, optional
        Plotly text: escape user-supplied parts with :func:`calib_core.plot.text.plot_text`.
    count_scale : {"log", "linear"}, default "log"
        Colour scale of the cell counts.
    colorscale : str, default "Blues"
        Plotly colour scale of the counts.
    max_points : int, default 5000
        For the data-dependent partition of a :class:`SimplexReliability`, at
        most this many predictions (a seeded random subset) are drawn as dots.
    seed : int, default 0
        Seed of that subset.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces: for the uniform partition the triangle grid, the filled
        non-empty cells (one trace per colour level) and an invisible marker
        trace carrying the count colour bar; for the data-dependent partition
        the same filled cells (each the region calib_core's recorded splits
        cut out of the triangle, :func:`calib_core.metrics.simplex.cell_polygons`,
        outlined), the colour bar and, for a :class:`SimplexReliability`, the
        predictions as white dots; then one trace named ``"arrows"`` holding
        every arrow as ``tail, head, None`` with an ``"arrow"`` marker
        (``angleref="previous"``) on each head.

    Raises
    ------
    CalibrationInputError
        Wrong input type, a table that is not on the 2-simplex, a partition
        whose cells calib_core cannot give (:func:`~calib_core.metrics.simplex.cell_polygons`),
        a non-positive ``arrow_scale``, bad ``class_names`` or options.

    Examples
    --------
    >>> import calib_core as cc
    >>> rel = cc.simplex_reliability([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], [2, 0], n_bins=5)
    >>> fig = simplex_figure(rel)
    >>> [t.name for t in fig.data if t.name == "arrows"]
    ['arrows']
    """
    if isinstance(table_or_result, SimplexReliability):
        table = table_or_result.table
    elif isinstance(table_or_result, CellTable):
        table = table_or_result
    else:
        raise CalibrationInputError(
            "`table_or_result` must be a SimplexReliability or a CellTable, "
            f"got {type(table_or_result).__name__}."
        )
    if table.mean_prediction.shape[1] != 3:
        raise CalibrationInputError(
            f"the table must describe the 2-simplex (3 coordinates), got {table.mean_prediction.shape[1]}; "
            "use calib_core.simplex_reliability to map the predictions onto three vertices."
        )
    if (isinstance(arrow_scale, bool) or not isinstance(arrow_scale, numbers.Real)
            or not np.isfinite(arrow_scale) or arrow_scale <= 0):
        raise CalibrationInputError(f"`arrow_scale` must be a positive number, got {arrow_scale!r}.")
    if count_scale not in ("log", "linear"):
        raise CalibrationInputError(f"`count_scale` must be 'log' or 'linear', got {count_scale!r}.")
    if isinstance(max_points, bool) or not isinstance(max_points, numbers.Integral) or max_points < 1:
        raise CalibrationInputError(f"`max_points` must be a whole number >= 1, got {max_points!r}.")
    # Vertex titles and the arrows' hover show user-supplied class names: plain text, never markup.
    raw_names = _vertex_names(table_or_result, class_names)
    names = tuple(plot_text(name) for name in raw_names)
    (a_title, _), (b_title, b_half), (c_title, c_half) = (_vertex_title(name) for name in raw_names)

    # The cells' regions as calib_core cut them (the triangles of a uniform partition, the regions of the
    # recorded splits of a data-dependent one); a partition it cannot draw raises, never a silent substitute.
    partition = table.partition
    polygons = cell_polygons(partition)
    if partition.kind == "uniform":
        grid = list(triangle_vertices(triangle_keys(partition.n_bins), partition.n_bins))
        traces = _cell_traces(table, polygons, colorscale, count_scale, grid=grid)
    else:
        traces = _cell_traces(table, polygons, colorscale, count_scale, grid=None)
        if isinstance(table_or_result, SimplexReliability):
            traces.append(_prediction_dots(table_or_result, int(max_points), seed))
    traces.append(_arrow_trace(table, float(arrow_scale), names))

    fig = go.Figure(traces)
    # Every partition is drawn as coloured cells: the colour bar takes the right margin after the third title.
    bar_pad = max(40, math.ceil(c_half) + _TITLE_SHIFT_PX + 4)
    right = bar_pad + _COLOUR_BAR_THICKNESS + _COLOUR_BAR_LABELS_PX
    fig.update_traces(selector={"name": "count"}, marker_colorbar_xpad=bar_pad)
    # No tick labels at 0 and 1: those sit on the vertices, under the vertex titles.
    axis = {"min": 0.0, "linewidth": 1.5, "ticks": "outside", "tickvals": [0.2, 0.4, 0.6, 0.8],
            "tickformat": ".1f", "layer": "below traces"}  # arrows along an edge (binary views) stay visible
    fig.update_layout(
        ternary={
            "sum": 1.0,
            "aaxis": {**axis, "title": {"text": a_title}},
            "baxis": {**axis, "title": {"text": b_title}},
            "caxis": {**axis, "title": {"text": c_title}},
            "bgcolor": "white",
            "domain": {"x": [0.0, 1.0], "y": [0.0, 1.0]},
        },
        title={"text": title} if title else None,
        margin={"l": max(70, math.ceil(b_half) + _TITLE_SHIFT_PX + 4), "r": right,
                "t": (80 if title else 50) + _TITLE_LINE_PX * a_title.count("<br>"),
                "b": 42 + _TITLE_LINE_PX * (max(b_title.count("<br>"), c_title.count("<br>")) + 1)},
        showlegend=False,
    )
    return fig


def group_title(names: Sequence[str], group: Sequence[int]) -> str:
    """What a vertex standing for the classes ``group`` is called: ``"cat + dog"`` (five classes or more: the first
    and the last, and how many)."""
    if not group:
        return ""
    if len(group) <= 4:
        return " + ".join(names[k] for k in group)
    return f"{names[group[0]]} + … + {names[group[-1]]} ({len(group)} classes)"


def vertex_titles(view: SimplexReliability, lens: str, class_names: Sequence[str],
                  class_index: int | None) -> tuple[str, str, str]:
    """What each vertex of the triangle stands for, through ``lens`` (canonical, max or marginal)."""
    if lens == "canonical":
        return tuple(group_title(class_names, group) for group in view.projection.groups)
    if lens == "max":
        return ("predicted class", "another class", "")
    return (f"class {class_names[class_index]}", f"not class {class_names[class_index]}", "")
