"""Plotly figures of the Groups page, built from :mod:`calib_core.inference.groups` results.

:func:`group_bar_figure` draws :func:`calib_core.by_group` (one bar per
group with its bootstrap interval, sorted by the gap to the overall value);
:func:`group_reliability_figure` draws :func:`calib_core.group_reliability`
(the groups' reliability diagrams overlaid or as small multiples). Group
names are user data: every one goes through :func:`calib_core.plot.text.plot_text`.
No streamlit here.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calib_core.inference.groups import GroupResult
from calib_core.plot.figures import DIAGONAL_COLOR, FONT, PALETTE, _rgba, count_opacity
from calib_core.plot.text import plot_text

#: Bar colours: a group large enough to compare, and one flagged too small (faded, hatched).
BAR_COLOR = PALETTE[0]
WORST_COLOR = PALETTE[5]
#: Small multiples per row.
PANELS_PER_ROW = 4


def sorted_by_gap(result: GroupResult) -> pd.DataFrame:
    """The result's table sorted by gap to the overall value, largest first (no value last)."""
    table = result.table.copy()
    table["_order"] = table["gap"].fillna(-np.inf)
    return table.sort_values("_order", ascending=False, kind="stable").drop(columns="_order").reset_index(drop=True)


def group_bar_figure(result: GroupResult, *, metric_label: str, height: int | None = None) -> go.Figure:
    """One bar per group: its value with the bootstrap interval, sorted by gap to the overall value.

    Parameters
    ----------
    result : calib_core.inference.groups.GroupResult
    metric_label : str
        Axis title, e.g. ``"ECE, 15 uniform bins"``.

    Returns
    -------
    plotly.graph_objects.Figure
        Horizontal bars (the largest gap on top), error bars from
        ``ci_low``/``ci_high``, the overall value as a dashed line; groups
        flagged ``too_small`` faded and hatched, the worst group in orange.
    """
    table = sorted_by_gap(result)
    names = [plot_text(g) for g in table["group"]]
    value = table["value"].to_numpy(dtype=float)
    low, high = table["ci_low"].to_numpy(dtype=float), table["ci_high"].to_numpy(dtype=float)
    small = table["too_small"].to_numpy(dtype=bool)
    worst = np.array([g == result.worst_group for g in table["group"]])
    colors = [WORST_COLOR if w else BAR_COLOR for w in worst]
    fig = go.Figure(go.Bar(
        y=names, x=value, orientation="h",
        marker=dict(color=[_rgba(c, 0.35 if s else 0.85) for c, s in zip(colors, small)],
                    pattern=dict(shape=["/" if s else "" for s in small])),
        error_x=dict(type="data", symmetric=False, array=np.nan_to_num(high - value),
                     arrayminus=np.nan_to_num(value - low), color="#333333", thickness=1.2, width=4),
        customdata=np.column_stack([low, high, table["n"].to_numpy(), table["gap"].to_numpy(dtype=float),
                                    np.where(small, "too small to say much", "")]),
        hovertemplate=("%{y}<br>" + plot_text(metric_label) + " %{x:.4f}<br>95% interval [%{customdata[0]:.4f}, "
                       "%{customdata[1]:.4f}]<br>gap to overall %{customdata[3]:+.4f}<br>%{customdata[2]} rows "
                       "%{customdata[4]}<extra></extra>"),
        showlegend=False,
    ))
    fig.add_vline(x=result.overall, line=dict(color=DIAGONAL_COLOR, dash="dash"),
                  annotation=dict(text=f"overall {result.overall:.4f}", font=dict(size=12)),
                  annotation_position="top")
    fig.update_layout(
        template="plotly_white", font=FONT, height=height or max(260, 90 + 28 * len(names)),
        margin=dict(l=60, r=20, t=40, b=50), bargap=0.25,
        xaxis=dict(title=plot_text(metric_label) + " of the group (bars) and of all rows (dashed)", rangemode="tozero"),
        yaxis=dict(title=None, autorange="reversed", type="category", automargin=True),
    )
    return fig


def group_reliability_figure(table: pd.DataFrame, *, layout: str = "overlay", min_count: int = 10,
                             title_x: str = "Mean top-label confidence in the bin") -> go.Figure:
    """Reliability diagrams of the groups of :func:`calib_core.group_reliability`.

    Parameters
    ----------
    table : pandas.DataFrame
        ``group_reliability`` output (possibly restricted to some groups).
    layout : {"overlay", "small multiples"}
        One chart with a line per group, or one panel per group (with its
        Wilson intervals).
    min_count : int
        Bins with fewer rows are drawn faded (their frequency says little).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    groups = list(dict.fromkeys(table["group"]))
    if layout == "small multiples":
        columns = min(PANELS_PER_ROW, max(len(groups), 1))
        rows = max(1, math.ceil(len(groups) / columns))
        fig = make_subplots(rows=rows, cols=columns, shared_xaxes=True, shared_yaxes=True,
                            subplot_titles=[plot_text(g) for g in groups], horizontal_spacing=0.04,
                            vertical_spacing=0.12 if rows > 1 else 0.05)
        cells = [(1 + i // columns, 1 + i % columns) for i in range(len(groups))]
    else:
        fig, cells = go.Figure(), [None] * len(groups)
    for cell in cells if layout == "small multiples" else [None]:
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color=DIAGONAL_COLOR, dash="dot"),
                                 hoverinfo="skip", showlegend=False),
                      **(dict(row=cell[0], col=cell[1]) if cell else {}))
    for i, (group, cell) in enumerate(zip(groups, cells)):
        part = table[table["group"] == group]
        color = PALETTE[i % len(PALETTE)]
        count = part["count"].to_numpy()
        error = dict(type="data", symmetric=False, array=part["ci_high"] - part["accuracy"],
                     arrayminus=part["accuracy"] - part["ci_low"], color=_rgba(color, 0.5), thickness=1)
        fig.add_trace(go.Scatter(
            x=part["confidence"], y=part["accuracy"], mode="lines+markers", name=plot_text(group),
            line=dict(color=color, width=1.5), error_y=error if cell else None,
            marker=dict(color=color, size=7, opacity=count_opacity(count, min_count)),
            customdata=np.column_stack([count, part["ci_low"], part["ci_high"]]),
            hovertemplate=(plot_text(group) + "<br>confidence %{x:.3f}<br>accuracy %{y:.3f} [%{customdata[1]:.3f}, "
                           "%{customdata[2]:.3f}]<br>%{customdata[0]} rows<extra></extra>"),
            showlegend=cell is None,
        ), **(dict(row=cell[0], col=cell[1]) if cell else {}))
    n_rows = max((c[0] for c in cells if c), default=0)
    height = 80 + 230 * n_rows if n_rows else 440
    fig.update_layout(template="plotly_white", font=FONT, height=height, margin=dict(l=70, r=20, t=60, b=60),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
                      hovermode="closest")
    fig.update_xaxes(range=[0, 1.02])
    fig.update_yaxes(range=[0, 1.02])
    if n_rows:
        for row in range(1, n_rows + 1):
            fig.update_yaxes(title_text="Accuracy" if n_rows > 1 else "Observed accuracy", row=row, col=1)
        fig.add_annotation(text=title_x, x=0.5, y=0, yshift=-45, xref="paper", yref="paper", showarrow=False)
    else:
        fig.update_layout(xaxis_title=title_x, yaxis_title="Observed accuracy in the bin")
    return fig
