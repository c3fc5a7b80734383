"""Plotly figures of the Recalibration page (no streamlit here).

* :func:`temperature_surface_figure`: calibration metrics against the
  temperature T, each curve's minimiser marked (Nixon et al. 2019, Figure 1
  right: the T that minimises a calibration error is not the one that
  minimises the NLL).
* :func:`gce_rank_figure`: the rank of every method under each of the 32
  general calibration error variants (their Table 5).
* :func:`change_figure`: the change of each calibration error per method,
  with paired bootstrap intervals.

The before/after reliability diagrams and simplex views reuse
:func:`calib_core.plot.figures.reliability_figure` and
:func:`calib_core.plot.figures_simplex.simplex_figure`.

Metric and method names are shown as plain text (:func:`calib_core.plot.text.plot_text`)
in trace names, panel titles, tick labels and hover labels; titles passed in
are Plotly text (escape user-supplied parts).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calib_core.plot.figures import DIAGONAL_COLOR, FONT, PALETTE
from calib_core.plot.text import plot_text

__all__ = ["change_figure", "gce_rank_figure", "temperature_surface_figure"]

#: Colours of the surface's curves, by metric display name (the kernel estimate last).
SURFACE_COLORS = {"NLL": "#000000", "ECE": PALETTE[0], "ACE": PALETTE[1], "SCE": PALETTE[2],
                  "CE_KL (kernel)": PALETTE[3]}
#: Line styles of the fitted-temperature marks.
MARK_DASHES = ("dash", "dashdot", "longdash", "dot")
#: Name of the trace of minimiser markers of a metric: MINIMISER_PREFIX + metric.
MINIMISER_PREFIX = "lowest "


def _layout(fig: go.Figure, *, height: int, title: str | None, top: int = 40) -> go.Figure:
    fig.update_layout(
        template="plotly_white", height=height, font=FONT, hovermode="closest",
        margin=dict(l=70, r=20, t=(top + 30) if title else top, b=55),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        title=dict(text=title, x=0, xanchor="left") if title else None,
    )
    fig.update_yaxes(automargin=True)
    return fig


def _ticks_125(low: float, high: float) -> list[float]:
    """1-2-5 tick values covering ``[low, high]`` (log axes)."""
    start, stop = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return [m * 10.0**e for e in range(start, stop + 1) for m in (1, 2, 5) if low <= m * 10.0**e <= high]


def _metric_color(name: str, index: int) -> str:
    return SURFACE_COLORS.get(name, PALETTE[index % len(PALETTE)])


def temperature_surface_figure(table: pd.DataFrame, minimisers: pd.DataFrame, *, layout: str = "relative",
                               marks: Mapping[str, float] | None = None, title: str | None = None) -> go.Figure:
    """Calibration metrics of ``softmax(z / T)`` against the temperature, minimisers marked.

    Parameters
    ----------
    table : pandas.DataFrame
        ``temperature``, ``metric``, ``value`` (``TemperatureSurface.table``).
    minimisers : pandas.DataFrame
        ``metric``, ``temperature``, ``value``: each curve's lowest point.
    layout : {"relative", "panels"}
        ``"relative"``: one chart, each curve divided by its own minimum
        (log y axis; every curve touches 1 at its minimiser), so curves on
        different scales share an axis. ``"panels"``: one panel per metric
        with its raw values.
    marks : mapping of label to temperature, optional
        Fitted temperatures drawn as vertical lines (e.g. temperature scaling's T).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per metric (named by the metric), one marker trace per
        minimiser (named ``"lowest <metric>"``), a line at T = 1 (the model as
        it is) and one line per mark. The x axis is logarithmic.
    """
    if layout not in ("relative", "panels"):
        raise ValueError(f"`layout` must be 'relative' or 'panels', got {layout!r}.")
    names = list(dict.fromkeys(table["metric"]))
    best = minimisers.set_index("metric")
    panels = layout == "panels" and len(names) > 1
    n_rows = len(names) if panels else 1
    fig = make_subplots(rows=n_rows, cols=1, shared_xaxes=True, vertical_spacing=0.035 if panels else 0.02,
                        subplot_titles=[plot_text(n) for n in names] if panels else None)
    for i, name in enumerate(names):
        shown = plot_text(name)
        part = table[table["metric"] == name].sort_values("temperature")
        row = i + 1 if panels else 1
        color = _metric_color(name, i)
        raw = part["value"].to_numpy(dtype=float)
        low = float(best.loc[name, "value"]) if name in best.index else np.nan
        scale = max(low, 1e-12) if layout == "relative" else 1.0
        y = raw / scale
        fig.add_trace(go.Scatter(
            x=part["temperature"], y=y, mode="lines", name=shown, legendgroup=name, line=dict(color=color, width=2),
            customdata=raw,
            hovertemplate=f"<b>{shown}</b><br>T = %{{x:.3g}}<br>value %{{customdata:.4g}}<extra></extra>",
            showlegend=not panels,
        ), row=row, col=1)
        if name in best.index:
            t_best = float(best.loc[name, "temperature"])
            fig.add_trace(go.Scatter(
                x=[t_best], y=[low / scale], mode="markers", name=f"{MINIMISER_PREFIX}{shown}", legendgroup=name,
                showlegend=False, marker=dict(symbol="star", size=15, color=color, line=dict(color="white", width=1)),
                hovertemplate=f"<b>{shown}</b> is lowest at T = {t_best:.3g}<br>value {low:.4g}<extra></extra>",
            ), row=row, col=1)
    cells = [(r, 1) for r in range(1, n_rows + 1)]
    for row, col in cells:
        fig.add_vline(x=1.0, row=row, col=col, line=dict(color=DIAGONAL_COLOR, width=1))
    for j, (label, temperature) in enumerate((marks or {}).items()):
        line = dict(color="#333333", dash=MARK_DASHES[j % len(MARK_DASHES)], width=1.3)
        for row, col in cells:
            fig.add_vline(x=float(temperature), row=row, col=col, line=line)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line,
                                 name=f"{plot_text(label)}: T = {temperature:.3g}",
                                 hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="each curve's lowest point",
                             marker=dict(symbol="star", size=12, color="#666666"), hoverinfo="skip"), row=1, col=1)
    temperatures = table["temperature"].to_numpy(dtype=float)
    t_low, t_high = (float(temperatures.min()), float(temperatures.max())) if temperatures.size else (0.1, 10.0)
    fig.update_xaxes(type="log", range=[math.log10(t_low) - 0.02, math.log10(t_high) + 0.02],
                     tickvals=_ticks_125(t_low, t_high), tickformat="~g", minor=dict(showgrid=False))
    fig.update_xaxes(row=n_rows, col=1, title_text="Temperature T (log scale; T = 1: the model as it is)")
    if panels:
        for row in range(1, n_rows + 1):
            fig.update_yaxes(row=row, col=1, nticks=4)
        height = 150 * n_rows + 120
    else:
        curves = {plot_text(n) for n in names}
        ratios = [trace.y for trace in fig.data if trace.name in curves]
        top = max((float(np.nanmax(np.asarray(y, dtype=float))) for y in ratios if len(y)), default=10.0)
        top = max(top, 2.0) if math.isfinite(top) else 10.0
        fig.update_yaxes(type="log", range=[-0.03, math.log10(top) + 0.05], tickvals=_ticks_125(1.0, top),
                         tickformat="~g", title_text="Value ÷ the curve's minimum (log)")
        height = 470
    return _layout(fig, height=height, title=title, top=60)


def gce_rank_figure(ranks: pd.DataFrame, values: pd.DataFrame, variants: pd.DataFrame, *,
                    highlight: Sequence[str] = (), title: str | None = None) -> go.Figure:
    """Heatmap of the rank of every method under each GCE variant (1 = lowest error).

    Parameters
    ----------
    ranks, values : pandas.DataFrame
        Index: methods; columns: variant numbers 0-31 (``GceRanking``).
    variants : pandas.DataFrame
        ``variant``, ``label`` (the settings in words), ``name``: a metric's name
        (e.g. "ECE") only where the variant equals that metric, else "".
    highlight : sequence of str
        Methods whose row label is set in italics (e.g. the cautionary baseline).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap; the cell text is the rank, the hover gives the variant's
        settings and the GCE value.
    """
    methods = list(ranks.index)
    columns = list(ranks.columns)
    info = variants.set_index("variant")
    x = [f"{v} {info.loc[v, 'name']}".strip() for v in columns]
    y = [f"<i>{plot_text(m)}</i>" if m in highlight else plot_text(m) for m in methods]
    labels = np.array([[info.loc[v, "label"] for v in columns] for _ in methods])
    z = ranks.to_numpy(dtype=float)
    customdata = np.dstack([values.to_numpy(dtype=float), labels.astype(object)])
    n = max(len(methods), 2)
    fig = go.Figure(go.Heatmap(
        x=x, y=y, z=z, zmin=1, zmax=n, text=ranks.to_numpy().astype(str), texttemplate="%{text}",
        textfont=dict(size=11), colorscale=[[0.0, "#1a9850"], [0.5, "#fee08b"], [1.0, "#d73027"]],
        xgap=1, ygap=2, customdata=customdata,
        colorbar=dict(title="Rank", tickvals=list(range(1, n + 1)), len=1.0),
        hovertemplate=("<b>%{y}</b><br>variant %{x}: %{customdata[1]}<br>GCE %{customdata[0]:.4f}"
                       "<br>rank %{z:.0f}<extra></extra>"),
    ))
    fig.update_yaxes(autorange="reversed", ticksuffix="  ")
    fig.update_xaxes(title_text="GCE variant (Nixon et al. 2019, appendix C order; a name only where the variant "
                                "equals that metric)",
                     tickangle=-60, type="category")
    return _layout(fig, height=max(300, 38 * len(methods) + 200), title=title)


def change_figure(table: pd.DataFrame, *, keys: Sequence[str], colors: Mapping[str, int] | None = None,
                  title: str | None = None) -> go.Figure:
    """The change (after - before) of each calibration error per method, with bootstrap intervals.

    Parameters
    ----------
    table : pandas.DataFrame
        ``results_table`` output: ``method``, ``metric``, ``key``, ``delta``,
        ``delta_low``, ``delta_high``.
    keys : sequence of str
        Metric keys to draw (errors on one scale, e.g. ECE, ACE, SCE ...).
    colors : mapping of method to palette index, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One marker trace per method (named by the method), metrics on the x axis,
        a line at 0.
    """
    part = table[table["key"].isin(keys)]
    order = [k for k in keys if k in set(part["key"])]
    fig = go.Figure()
    for i, method in enumerate(dict.fromkeys(part["method"])):
        rows = part[part["method"] == method].set_index("key").reindex(order)
        delta = rows["delta"].to_numpy(dtype=float)
        low, high = rows["delta_low"].to_numpy(dtype=float), rows["delta_high"].to_numpy(dtype=float)
        has_ci = np.isfinite(low) & np.isfinite(high)
        color = PALETTE[(colors or {}).get(method, i) % len(PALETTE)]
        fig.add_trace(go.Scatter(
            x=rows["metric"].map(plot_text, na_action="ignore"), y=delta, mode="markers", name=plot_text(method),
            marker=dict(color=color, size=10, symbol="diamond"),
            error_y=dict(type="data", array=np.where(has_ci, high - delta, 0),
                         arrayminus=np.where(has_ci, delta - low, 0), visible=bool(has_ci.any()), color=color,
                         thickness=1.5, width=4),
            customdata=np.column_stack([low, high]),
            hovertemplate=(f"<b>{plot_text(method)}</b><br>%{{x}}: change %{{y:+.4f}}"
                           "<br>interval [%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]<extra></extra>"),
        ))
    fig.add_hline(y=0, line=dict(color=DIAGONAL_COLOR, width=1.2))
    fig.update_layout(scattermode="group", scattergap=0.5)
    fig.update_yaxes(title_text="After − before (below 0: lower error)", zeroline=False)
    return _layout(fig, height=400, title=title)
