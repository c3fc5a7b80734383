"""Plotly figures of the Deployment page, built from calib_core results.

:func:`decision_curve_figure` draws :func:`calib_core.decision_curve` (net
benefit against threshold before and after recalibration, with bands, and
the treat-all / treat-none references); :func:`prevalence_figure` draws
:func:`calib_core.estimate_prevalence` (test-set and estimated deployment
prevalence per class, with intervals); :func:`power_figure` draws
:func:`calib_core.plan_labels` (measured power against rows). Class names are
user data: every one goes through :func:`calib_core.plot.text.plot_text`. No streamlit here.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from calib_core.lab.planner import LabelPlan
from calib_core.recalibration.decisions import DecisionCurve
from calib_core.recalibration.label_shift import PrevalenceEstimate
from calib_core.plot.figures import DIAGONAL_COLOR, FONT, PALETTE, _rgba
from calib_core.plot.text import plot_text

BEFORE_COLOR, AFTER_COLOR = PALETTE[0], PALETTE[2]
HEIGHT = 420


def _layout(fig: go.Figure, *, title: str, x: str, y: str, height: int = HEIGHT) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=height, font=FONT, template="plotly_white",
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), margin=dict(t=80, l=60, r=20, b=50))
    return fig


def _band(fig: go.Figure, x: np.ndarray, low: np.ndarray, high: np.ndarray, color: str, name: str) -> None:
    if not np.isfinite(low).any():
        return
    fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[high, low[::-1]], fill="toself", line=dict(width=0),
                             fillcolor=_rgba(color, 0.18), hoverinfo="skip", name=name, showlegend=False))


def decision_curve_figure(curve: DecisionCurve, *, class_name: str = "1") -> go.Figure:
    """Net benefit against threshold: current and recalibrated predictions with bands, treat all, treat none.

    The y-axis is cut below at minus the largest model net benefit (treat-all
    plunges towards minus infinity at high thresholds and would flatten the curves).
    """
    t = curve.table
    x = t["threshold"].to_numpy()
    fig = go.Figure()
    level = f"{1 - curve.alpha:.0%}"
    for name, color, label in (("before", BEFORE_COLOR, "Current probabilities"),
                               ("after", AFTER_COLOR, f"Recalibrated ({curve.method}, cross-fitted)")):
        _band(fig, x, t[f"{name}_low"].to_numpy(), t[f"{name}_high"].to_numpy(), color, f"{label} {level}")
        fig.add_trace(go.Scatter(x=x, y=t[name], mode="lines", line=dict(color=color, width=2.5), name=label,
                                 hovertemplate="t = %{x:.2f}<br>net benefit %{y:.4f}<extra>" + label + "</extra>"))
    fig.add_trace(go.Scatter(x=x, y=t["treat_all"], mode="lines", line=dict(color=DIAGONAL_COLOR, dash="dash"),
                             name="Treat all"))
    fig.add_trace(go.Scatter(x=x, y=t["treat_none"], mode="lines", line=dict(color="black", width=1),
                             name="Treat none"))
    top = float(np.nanmax(t[["before", "after", "treat_all"]].to_numpy()))
    fig.update_yaxes(range=[-0.1 * max(top, 0.01) - 0.02, 1.1 * max(top, 0.01)])
    return _layout(fig, title=f"Decision curve, acting on class {plot_text(class_name)} when P >= t",
                   x="threshold probability t", y="net benefit (per row or unit of weight)")


def prevalence_figure(estimate: PrevalenceEstimate, class_names: Sequence[object]) -> go.Figure:
    """Per class: the test set's prevalence and the estimated deployment prevalence with its interval."""
    names = [plot_text(c) for c in class_names]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=estimate.source_prevalence, name="Test set (labelled)", marker_color=PALETTE[7],
                         opacity=0.45))
    error = None
    if np.isfinite(estimate.ci_low).all():
        error = dict(type="data", symmetric=False, array=estimate.ci_high - estimate.prevalence,
                     arrayminus=estimate.prevalence - estimate.ci_low)
    label = "EM" if estimate.method == "em" else "BBSE"
    fig.add_trace(go.Bar(x=names, y=estimate.prevalence, name=f"Deployment, estimated ({label})",
                         marker_color=PALETTE[0], error_y=error))
    fig.update_layout(barmode="group")
    return _layout(fig, title="Class prevalence: test set and deployment", x="class", y="prevalence")


def power_figure(plan: LabelPlan) -> go.Figure:
    """Measured power of the test against rows, with Clopper-Pearson bars and the target power."""
    c = plan.curve
    fig = go.Figure(go.Scatter(
        x=c["n"], y=c["power"], mode="lines+markers", name=f"{plan.test} test", line=dict(color=PALETTE[0]),
        error_y=dict(type="data", symmetric=False, array=c["ci_high"] - c["power"], arrayminus=c["power"] - c["ci_low"])))
    fig.add_hline(y=plan.power, line=dict(color=DIAGONAL_COLOR, dash="dash"),
                  annotation_text=f"power {plan.power:.0%}")
    if np.isfinite(plan.n_required):  # a trace, not add_vline: a shape on a log axis takes log10 units
        fig.add_trace(go.Scatter(x=[plan.n_required, plan.n_required], y=[0, 1.05], mode="lines",
                                 line=dict(color=PALETTE[5], dash="dot"),
                                 name=f"about {plan.n_required:,.0f} rows for {plan.power:.0%}"))
    fig.update_xaxes(type="log")
    fig.update_yaxes(range=[0, 1.05])
    return _layout(fig, title=f"Power to detect temperature {plan.temperature:.3g} (top-label error {plan.ece:.3f})",
                   x="labelled rows (log scale)", y="power", height=360)
