"""Plotly figure of selective prediction: the risk-coverage curve of each model with its bootstrap band.

:func:`risk_coverage_figure` draws :func:`calib_core.risk_coverage` (one point per distinct confidence, whole
tie groups) and :func:`calib_core.risk_coverage_band` (the pointwise percentile band of the selective risk at
fixed coverages); the abstention threshold of :func:`calib_core.abstention_threshold` is marked when given.
Model names are user data: they go through :func:`calib_core.plot.text.plot_text`. No streamlit here.
"""
from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from calib_core.inference.selective_bands import RiskCoverageBand
from calib_core.metrics.selective import AbstentionThreshold, RiskCoverage
from calib_core.plot.figures import FONT, _colors, _rgba
from calib_core.plot.text import plot_text


def risk_coverage_figure(curves: Mapping[str, RiskCoverage], bands: Mapping[str, RiskCoverageBand], *,
                         colors: Mapping[str, int] | None = None,
                         chosen: Mapping[str, AbstentionThreshold] | None = None,
                         target_risk: float | None = None, height: int = 480) -> go.Figure:
    """Selective risk (error rate among the answers kept) against coverage, most confident answers kept first.

    Parameters
    ----------
    curves : mapping of model name to RiskCoverage
    bands : mapping of model name to RiskCoverageBand
        Drawn as a shaded band behind the model's curve (names without a band get none).
    colors : mapping of model name to palette index, optional
    chosen : mapping of model name to AbstentionThreshold, optional
        Each certified threshold is marked at its coverage and empirical risk.
    target_risk : float, optional
        Drawn as a dotted horizontal line.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
    """
    palette = _colors(list(curves), colors)
    figure = go.Figure()
    for name, curve in curves.items():
        color, label = palette[name], plot_text(name)
        band = bands.get(name)
        if band is not None:
            figure.add_trace(go.Scatter(x=band.coverage, y=band.high, mode="lines", line=dict(width=0),
                                        hoverinfo="skip", showlegend=False, legendgroup=label))
            figure.add_trace(go.Scatter(
                x=band.coverage, y=band.low, mode="lines", line=dict(width=0), fill="tonexty",
                fillcolor=_rgba(color, 0.18), hoverinfo="skip", legendgroup=label,
                name=f"{label}: {1 - band.alpha:.0%} bootstrap band ({band.n_boot} resamples)"))
        # Below the first threshold's coverage the most confident items all tie: no threshold splits them, and
        # in a random order among them the selective risk is their error rate (the band's value there).
        figure.add_trace(go.Scatter(
            x=[0.0, curve.coverage[0]], y=[curve.risk[0], curve.risk[0]], mode="lines", legendgroup=label,
            line=dict(color=color, width=2, dash="dot"), showlegend=False,
            hovertemplate=(f"inside the top tie group (confidence {curve.threshold[0]:.4g}, "
                           f"{curve.coverage[0]:.1%} of items):<br>risk {curve.risk[0]:.3f} in a random order"
                           f"<extra>{label}</extra>")))
        figure.add_trace(go.Scatter(
            x=curve.coverage, y=curve.risk, mode="lines+markers", line=dict(color=color, width=2, shape="linear"),
            marker=dict(size=4), name=label, legendgroup=label, customdata=curve.threshold,
            hovertemplate="confidence ≥ %{customdata:.4g}<br>coverage %{x:.1%}<br>risk %{y:.3f}<extra>"
                          + label + "</extra>"))
        found = (chosen or {}).get(name)
        if found is not None and found.found:
            figure.add_trace(go.Scatter(
                x=[found.coverage], y=[found.risk], mode="markers", legendgroup=label,
                marker=dict(symbol="diamond", size=12, color=color, line=dict(color="black", width=1)),
                name=f"{label}: certified threshold {found.threshold:.4g}",
                hovertemplate=(f"predict when confidence ≥ {found.threshold:.4g}<br>coverage %{{x:.1%}}<br>"
                               f"risk here %{{y:.3f}}, bound {found.risk_upper:.3f}<extra></extra>")))
    if target_risk is not None:
        figure.add_hline(y=target_risk, line=dict(color="black", dash="dot", width=1),
                         annotation_text=f"target risk {target_risk:.3g}", annotation_position="top left")
    figure.update_layout(
        height=height, font=FONT, margin=dict(l=60, r=20, t=30, b=120), plot_bgcolor="white",
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),
        xaxis=dict(title="Coverage (share of items answered, most confident first)", range=[0, 1.01],
                   tickformat=".0%", gridcolor="#e5e5e5"),
        yaxis=dict(title="Selective risk (error rate)", rangemode="tozero", gridcolor="#e5e5e5"))
    return figure
