"""Plotly figures of the Estimators page, built from calib_core results (no streamlit here).

* :func:`estimates_figure` - every estimator's value and interval per model,
  one small panel per estimator (their scales differ).
* :func:`decomposition_figure` - stacked bars: score = refinement + calibration
  beside entropy = refinement + sharpness, for the Brier and the log score
  (Gruber & Buettner 2022, Lemma 4.1).
* :func:`bound_chain_figure` - the chain of eq. 6 of Gruber & Buettner (2022):
  one dot per term on a common axis, each inequality a link, broken links
  highlighted.
* :func:`smooth_reliability_figure` - smoothed reliability curves with their
  bands and the density of the confidences (Blasiok & Nakkiran 2023).
* :func:`add_smooth_overlay` - the smoothed curve and band on an existing
  reliability diagram (:func:`calib_core.plot.figures.reliability_figure`).

Colours follow :mod:`calib_core.plot.figures`: a model keeps its palette colour
(its loading position) on every page. Model names are user-supplied: every
figure shows them as plain text (:func:`calib_core.plot.text.plot_text`), in trace
names, categories, panel titles and hover labels alike.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray
from plotly.subplots import make_subplots

from calib_core.metrics.decomposition import BoundChain, ScoreDecomposition
from calib_core.metrics.smooth import SmoothReliabilityCurve
from calib_core.plot.figures import DIAGONAL_COLOR, FONT, color_for
from calib_core.plot.text import plot_text

#: Colours of the decomposition's parts (Okabe-Ito).
REFINEMENT_COLOR = "#56B4E9"
CALIBRATION_COLOR = "#D55E00"
SHARPNESS_COLOR = "#009E73"
#: Colours of the bound chain's links.
HELD_COLOR = "#9aa5b1"
BROKEN_COLOR = "#D55E00"

#: Trace names the tests (and the browser test) look for.
REFINEMENT_NAME = "Refinement"
CALIBRATION_NAME = "Calibration"
SHARPNESS_NAME = "Sharpness"
SCORE_NAME = "Score"
ENTROPY_NAME = "Entropy (score of the base rates)"
HELD_NAME = "order holds"
BROKEN_NAME = "out of order in these estimates"
SMOOTH_SUFFIX = "smoothed"
BAND_SUFFIX = "band"
SPARSE_SUFFIX = "few predictions"
#: Below this density of the confidences (1 = uniform on [0, 1]) the smoothed curve is drawn faint.
SPARSE_DENSITY = 0.1
#: What the pages say under a smoothed curve (:func:`_curve_traces` draws it so).
SMOOTH_RANGE_NOTE = ("The smoothed curve is drawn only between each model's smallest and largest confidence (beyond "
                     "them it would be an extrapolation), and an estimate outside [0, 1] is drawn at 0 or 1.")

#: Display names of the chain's terms (Gruber & Buettner 2022, eq. 6).
CHAIN_LABELS = {
    "sqrt2": "√2", "rbs": "√BS (bound)", "ce2": "CE₂", "cwce2": "CWCE₂", "tce2": "TCE₂", "tce1": "TCE₁",
    "ks": "KS (≤ TCE₁)", "ece": "ECE (≤ TCE₁)", "mmce": "MMCE (≤ TCE₁)",
}
#: Ticks of the chain's logarithmic axis.
_LOG_TICKS = [m * 10.0 ** e for e in range(-5, 1) for m in (1, 2, 5)] + [np.sqrt(2.0)]
SCORE_TITLES = {"brier": "Brier score", "log": "Log score (nats)"}


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _palette(names: Sequence[str], colors: Mapping[str, int] | None) -> dict[str, str]:
    return {name: color_for(colors[name] if colors and name in colors else i) for i, name in enumerate(names)}


def _layout(fig: go.Figure, *, height: int, top: int = 50) -> go.Figure:
    """Shared look; the legend sits at the top of the figure, above any panel titles."""
    fig.update_layout(template="plotly_white", height=height, font=FONT, hovermode="closest",
                      margin=dict(l=60, r=20, t=top, b=50),
                      legend=dict(orientation="h", yref="container", y=0.995, yanchor="top", xanchor="left", x=0))
    fig.update_yaxes(automargin=True)
    return fig


# ----------------------------------------------------------------------------- estimates

#: Hover note of an estimate outside its bounds (:func:`estimates_figure`, drawn as an x).
UNRELIABLE_POINT = "<br>⚠ unreliable at this N and K (see the table)"


def estimates_figure(table: pd.DataFrame, *, colors: Mapping[str, int] | None = None,
                     n_columns: int = 2) -> go.Figure:
    """One panel per estimator: each model's estimate as a dot with its interval.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``model``, ``estimator`` (label), ``estimate``, ``ci_low``,
        ``ci_high`` and ``interval`` (text); intervals may be NaN. An optional
        ``unreliable`` column (a reason, or empty) draws that estimate as an x
        with a note in its hover.
    colors : mapping of model name to colour index, optional
    n_columns : int, default 2

    Returns
    -------
    plotly.graph_objects.Figure
        Trace ``i`` of a panel is the model; its x is the estimate, the
        error bar the interval, the hover the interval's method.
    """
    labels = list(dict.fromkeys(table["estimator"]))
    names = list(dict.fromkeys(table["model"]))
    palette = _palette(names, colors)
    n_rows = max(1, math.ceil(len(labels) / n_columns))
    panel = 48 + 24 * len(names)
    gap = 62
    height = n_rows * panel + (n_rows - 1) * gap
    fig = make_subplots(rows=n_rows, cols=n_columns, subplot_titles=labels, horizontal_spacing=0.08,
                        vertical_spacing=gap / height if n_rows > 1 else 0.0)
    for index, label in enumerate(labels):
        row, col = index // n_columns + 1, index % n_columns + 1
        part = table[table["estimator"] == label]
        ends = []
        for name in names:
            rows = part[part["model"] == name]
            if rows.empty:
                continue
            value = float(rows["estimate"].iloc[0])
            low, high = float(rows["ci_low"].iloc[0]), float(rows["ci_high"].iloc[0])
            has_ci = bool(np.isfinite(low) and np.isfinite(high))
            ends += [value, low, high] if has_ci else [value]
            unreliable = "unreliable" in rows and bool(rows["unreliable"].iloc[0])
            fig.add_trace(go.Scatter(
                x=[value], y=[plot_text(name)], mode="markers", name=plot_text(name), legendgroup=str(name),
                showlegend=index == 0, marker=dict(color=palette[name], size=10,
                                                   symbol="x-thin-open" if unreliable else "diamond",
                                                   line=dict(width=2, color=palette[name])),
                text=[UNRELIABLE_POINT if unreliable else ""],
                error_x=dict(type="data", array=[high - value if has_ci else 0.0],
                             arrayminus=[value - low if has_ci else 0.0], visible=has_ci,
                             color=palette[name], thickness=1.5, width=5),
                customdata=[[low, high, str(rows["interval"].iloc[0])]],
                hovertemplate=(f"<b>{plot_text(name)}</b><br>{label}: %{{x:.5f}}"
                               + ("<br>interval [%{customdata[0]:.5f}, %{customdata[1]:.5f}]" if has_ci else "")
                               + "<br>%{customdata[2]}%{text}<extra></extra>"),
            ), row=row, col=col)
        fig.update_yaxes(autorange="reversed", row=row, col=col, showticklabels=False)
        fig.update_xaxes(range=_padded_range(ends), zeroline=True, zerolinecolor="#bbbbbb", row=row, col=col)
    return _layout(fig, height=height + 110, top=80)


def _padded_range(values: Sequence[float]) -> list[float] | None:
    """An x range around ``values`` with 12% room each side (a single value gets +-10% of itself)."""
    values = [v for v in values if np.isfinite(v)]
    if not values:
        return None
    low, high = min(values), max(values)
    span = high - low
    if span <= 1e-12 * max(abs(high), 1e-300):
        span = max(abs(high) * 0.2, 1e-6)
    return [low - 0.12 * span, high + 0.12 * span]


# ----------------------------------------------------------------------------- decomposition

def decomposition_figure(decompositions: Mapping[str, Mapping[str, ScoreDecomposition]], *,
                         unreliable: Mapping[tuple[str, str], str] | None = None) -> go.Figure:
    """Stacked bars of the calibration-sharpness decomposition, one panel per score.

    Parameters
    ----------
    decompositions : mapping of model name to ``{"brier": ..., "log": ...}``
        :class:`calib_core.ScoreDecomposition` results (either score may be missing).
    unreliable : mapping of (model name, score) to str, optional
        A non-empty reason (:func:`calib_core.check_estimate`) draws that
        calibration bar hatched and says "unreliable at this N and K" in its hover.

    Returns
    -------
    plotly.graph_objects.Figure
        Per model two bars on a two-level x axis: *score* = refinement +
        calibration (the empirical score, marked by a black tick) and
        *entropy* = refinement + sharpness (the score of always predicting the
        class frequencies). A negative calibration estimate (possible for a
        calibrated model) is drawn below zero; the tick still marks the score.
    """
    names = list(decompositions)
    scores = [s for s in SCORE_TITLES if any(s in decompositions[n] for n in names)]
    fig = make_subplots(rows=1, cols=max(1, len(scores)), subplot_titles=[SCORE_TITLES[s] for s in scores],
                        horizontal_spacing=0.1)
    for col, score in enumerate(scores, start=1):
        parts = {n: decompositions[n][score] for n in names if score in decompositions[n]}
        models = [plot_text(n) for n in parts]  # the x categories: model names as plain text
        both = [[m for m in models for _ in (0, 1)], ["score", "entropy"] * len(models)]
        first = col == 1
        hover = "<b>%{x}</b><br>%{fullData.name}: %{y:.4f}<extra></extra>"
        fig.add_trace(go.Bar(
            x=both, y=[parts[n].refinement for n in parts for _ in (0, 1)], name=REFINEMENT_NAME,
            legendgroup="refinement", showlegend=first, marker_color=REFINEMENT_COLOR, hovertemplate=hover,
        ), row=1, col=col)
        marked = [bool((unreliable or {}).get((n, score))) for n in parts]
        fig.add_trace(go.Bar(
            x=[models, ["score"] * len(models)], y=[parts[n].calibration for n in parts], name=CALIBRATION_NAME,
            legendgroup="calibration", showlegend=first, hovertemplate=hover.replace(
                "<extra>", "%{customdata}<extra>"),
            customdata=[f"<br>{UNRELIABLE_NOTE}" if m else "" for m in marked],
            marker=dict(color=CALIBRATION_COLOR, pattern=dict(shape=["x" if m else "" for m in marked],
                                                              fgcolor="white")),
        ), row=1, col=col)
        fig.add_trace(go.Bar(
            x=[models, ["entropy"] * len(models)], y=[parts[n].sharpness for n in parts], name=SHARPNESS_NAME,
            legendgroup="sharpness", showlegend=first, hovertemplate=hover,
            marker=dict(color=_rgba(SHARPNESS_COLOR, 0.55), line=dict(color=SHARPNESS_COLOR, width=1),
                        pattern=dict(shape="/", fgcolor=SHARPNESS_COLOR)),
        ), row=1, col=col)
        fig.add_trace(_level_marks(
            models, "score", [parts[n].empirical_score for n in parts], SCORE_NAME, "black", 3, showlegend=first,
            customdata=[[parts[n].calibration_direct, parts[n].bandwidth] for n in parts],
            hovertemplate=("<b>%{x}</b><br>score: %{y:.4f}<br>direct calibration estimate (eq. 9): "
                           "%{customdata[0]:.4f}<br>kernel bandwidth %{customdata[1]:.3g}<extra></extra>"),
        ), row=1, col=col)
        fig.add_trace(_level_marks(
            models, "entropy", [parts[n].entropy for n in parts], ENTROPY_NAME, "#555555", 2, showlegend=first,
            hovertemplate="<b>%{x}</b><br>entropy: %{y:.4f}<extra></extra>",
        ), row=1, col=col)
        fig.update_yaxes(rangemode="tozero", row=1, col=col)
    fig.update_layout(barmode="relative", bargap=0.25)
    return _layout(fig, height=460, top=90)


#: Hover note of a hatched calibration bar (:func:`decomposition_figure`).
UNRELIABLE_NOTE = "unreliable at this N and K: mostly the estimator's bias (see the warning below the chart)"


def _level_marks(models: list[str], column: str, values: list[float], name: str, color: str, width: float,
                 **trace) -> go.Scatter:
    """A horizontal tick at each model's ``values`` in its ``column`` bar (``"score"`` or ``"entropy"``),
    labelled with the value above it."""
    return go.Scatter(
        x=[models, [column] * len(models)], y=values, name=name, legendgroup=column, mode="markers+text",
        marker=dict(symbol="line-ew-open", size=34, color=color, line=dict(width=width)),
        text=[f"{v:.3f}" for v in values], textposition="top center", **trace,
    )


# ----------------------------------------------------------------------------- bound chain

def _chain_label(term) -> str:
    return CHAIN_LABELS.get(term.key, term.label)


def bound_chain_figure(chains: Mapping[str, BoundChain], *, colors: Mapping[str, int] | None = None,
                       log_x: bool = True, n_columns: int = 3) -> go.Figure:
    """The chain of calibration errors of Gruber & Buettner (2022, eq. 6), one panel per model.

    Parameters
    ----------
    chains : mapping of model name to :class:`calib_core.BoundChain`
    colors : mapping of model name to colour index, optional
    log_x : bool, default True
        Logarithmic value axis (the terms span two orders of magnitude).
        Zero estimates are then drawn at the panel's smallest positive value
        / 2 (their hover shows 0).
    n_columns : int, default 3

    Returns
    -------
    plotly.graph_objects.Figure
        Terms from the top of the chain (√2) down, values on x. Each
        inequality ``upper >= lower`` is a line from the upper to the lower
        term: grey (:data:`HELD_NAME`) where the estimates respect it, thick
        orange (:data:`BROKEN_NAME`) where the lower estimate is larger.
    """
    names = list(chains)
    palette = _palette(names, colors)
    n_cols = max(1, min(n_columns, len(names)))
    n_rows = max(1, math.ceil(len(names) / n_cols))
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=[plot_text(n) for n in names], shared_yaxes=True,
                        horizontal_spacing=0.04, vertical_spacing=min(0.3 / n_rows, 0.12))
    held_shown = broken_shown = False
    for index, name in enumerate(names):
        chain = chains[name]
        row, col = index // n_cols + 1, index % n_cols + 1
        values = {t.key: t.value for t in chain.terms}
        labels = {t.key: _chain_label(t) for t in chain.terms}
        positive = [v for v in values.values() if v > 0]
        floor = min(positive) / 2 if positive else 1e-6
        shown = {k: (max(v, floor) if log_x else v) for k, v in values.items()}
        for holds in (True, False):
            links = [link for link in chain.links if link.holds == holds]
            if not links:
                continue
            xs, ys, custom = [], [], []
            for link in links:
                xs += [shown[link.upper], shown[link.lower], None]
                ys += [labels[link.upper], labels[link.lower], None]
                text = (f"{labels[link.upper]} ≥ {labels[link.lower]}: {link.upper_value:.4f} vs "
                        f"{link.lower_value:.4f}")
                custom += [text, text, None]
            first = not held_shown if holds else not broken_shown
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", name=HELD_NAME if holds else BROKEN_NAME,
                legendgroup="held" if holds else "broken", showlegend=first,
                line=dict(color=HELD_COLOR if holds else BROKEN_COLOR, width=2 if holds else 5),
                customdata=custom, hovertemplate="%{customdata}<extra></extra>",
            ), row=row, col=col)
            if holds:
                held_shown = True
            else:
                broken_shown = True
        terms = list(chain.terms)
        fig.add_trace(go.Scatter(
            x=[shown[t.key] for t in terms], y=[labels[t.key] for t in terms], mode="markers", name=plot_text(name),
            showlegend=False, marker=dict(color=palette[name], size=11, line=dict(color="white", width=1)),
            customdata=[[t.value, t.estimator] for t in terms],
            hovertemplate=(f"<b>{plot_text(name)}</b><br>%{{y}} = %{{customdata[0]:.4f}}<br>%{{customdata[1]}}"
                           "<extra></extra>"),
        ), row=row, col=col)
        if log_x:
            fig.update_xaxes(type="log", tickvals=_LOG_TICKS, ticktext=[f"{v:.3g}" for v in _LOG_TICKS],
                             row=row, col=col)
        fig.update_xaxes(title_text="estimate" if row == n_rows else None, row=row, col=col)
    order = list(dict.fromkeys(CHAIN_LABELS.values()))
    fig.update_yaxes(categoryorder="array", categoryarray=order[::-1])
    return _layout(fig, height=80 + n_rows * 330, top=80)


# ----------------------------------------------------------------------------- smoothed reliability

def _on_data_range(curve: SmoothReliabilityCurve, *values: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """``[x, *values]`` read between the smallest and largest confidence of the data (both ends included).

    Beyond the data the smoothed accuracy is an extrapolation that drifts away
    from [0, 1] (the term ``t - local mean confidence`` grows with the distance),
    so it is not drawn there.
    """
    low, high = curve.confidence_min, curve.confidence_max
    inside = curve.mesh[(curve.mesh > low) & (curve.mesh < high)]
    x = np.concatenate([[low], inside, [high]]) if high > low else np.array([low])
    return [x, *(np.interp(x, curve.mesh, v) for v in values)]


def _band_traces(name: str, curve: SmoothReliabilityCurve, color: str, legendgroup: str) -> list[go.Scatter]:
    """The bootstrap band (clipped to [0, 1], over the data range) as an invisible upper edge and a lower
    edge filled up to it.

    ``name`` is the model's name as given (user text); the traces show it as plain text.
    """
    if not (np.all(np.isfinite(curve.lower)) and np.all(np.isfinite(curve.upper))):
        return []
    label = plot_text(name)
    band_name = f"{label}: {SMOOTH_SUFFIX} {BAND_SUFFIX}"
    level = f"{1 - curve.alpha:.0%}"
    x, lower, upper = _on_data_range(curve, np.clip(curve.lower, 0.0, 1.0), np.clip(curve.upper, 0.0, 1.0))
    return [
        go.Scatter(x=x, y=upper, mode="lines", line=dict(width=0),
                   showlegend=False, hoverinfo="skip", legendgroup=legendgroup, name=f"{band_name} (upper)"),
        go.Scatter(x=x, y=lower, mode="lines", line=dict(width=0),
                   fill="tonexty", fillcolor=_rgba(color, 0.2), showlegend=False, legendgroup=legendgroup,
                   name=band_name, customdata=upper,
                   hovertemplate=(f"{level} band at %{{x:.2f}}: [%{{y:.3f}}, %{{customdata:.3f}}]"
                                  f"<extra>{label}</extra>")),
    ]


def _curve_traces(name: str, curve: SmoothReliabilityCurve, color: str, legendgroup: str, *,
                  dash: str = "solid") -> list[go.Scatter]:
    """The curve where the confidences are dense enough (:data:`SPARSE_DENSITY`), and a faint rest.

    Where almost no prediction falls, the smoothed accuracy is a ratio of two
    tiny numbers and swings far; that part is drawn thin and dotted so that it
    does not read as evidence. The curve is drawn only over the range of the
    confidences and clipped to [0, 1] (:data:`SMOOTH_RANGE_NOTE`); the hover
    gives the estimate itself where it was clipped. ``name`` is the model's
    name as given (user text); the traces show it as plain text.
    """
    label = plot_text(name)
    x, accuracy, density = _on_data_range(curve, curve.accuracy, curve.density)
    shown = np.clip(accuracy, 0.0, 1.0)
    estimate = np.array([f"{a:.3f}" if a == s else f"{a:.3f} (outside [0, 1]: drawn at {s:.0f})"
                         for a, s in zip(accuracy, shown)])
    dense = density >= SPARSE_DENSITY
    # Widen the sparse part by one mesh point each side so that the two parts meet.
    sparse = np.convolve((~dense).astype(np.float64), np.ones(3), mode="same") > 0
    hover = (f"<b>{label}</b> (smoothed, bandwidth {curve.bandwidth:.3g})<br>confidence %{{x:.3f}}"
             "<br>smoothed accuracy %{text}<br>density %{customdata:.3f}"
             f"<br>drawn over the confidences' range {curve.confidence_min:.2f}-{curve.confidence_max:.2f};"
             "<br>an estimate outside [0, 1] is drawn at 0 or 1<extra></extra>")
    traces = [go.Scatter(
        x=x, y=np.where(dense, shown, np.nan), mode="lines", customdata=density, text=estimate,
        name=f"{label}: {SMOOTH_SUFFIX} (smECE {curve.smece:.4f})", legendgroup=legendgroup,
        line=dict(color=color, width=2.5, dash=dash), hovertemplate=hover,
    )]
    if sparse.any():
        traces.append(go.Scatter(
            x=x, y=np.where(sparse, shown, np.nan), mode="lines", customdata=density, text=estimate,
            name=f"{label}: {SMOOTH_SUFFIX}, {SPARSE_SUFFIX}", legendgroup=legendgroup, showlegend=False,
            line=dict(color=_rgba(color, 0.45), width=1, dash="dot"), hovertemplate=hover,
        ))
    return traces


def smooth_reliability_figure(curves: Mapping[str, SmoothReliabilityCurve], *,
                              colors: Mapping[str, int] | None = None) -> go.Figure:
    """Smoothed reliability curves with their bootstrap bands, and the densities of the confidences below.

    Parameters
    ----------
    curves : mapping of model name to :class:`calib_core.SmoothReliabilityCurve`
    colors : mapping of model name to colour index, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Row 1: the diagonal and per model the band (if computed) and the
        curve, named ``"<model>: smoothed (smECE 0.0123)"``. Row 2: the
        kernel density of the top-label confidence per model.
    """
    names = list(curves)
    palette = _palette(names, colors)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26], vertical_spacing=0.05)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="Perfect calibration", hoverinfo="skip",
                             line=dict(color=DIAGONAL_COLOR, dash="dash", width=1.5)), row=1, col=1)
    for i, name in enumerate(names):
        curve, color, group = curves[name], palette[name], f"smooth-{i}"
        for trace in _band_traces(str(name), curve, color, group):
            fig.add_trace(trace, row=1, col=1)
        for trace in _curve_traces(str(name), curve, color, group):
            fig.add_trace(trace, row=1, col=1)
        fig.add_trace(go.Scatter(
            x=curve.mesh, y=curve.density, mode="lines", name=f"{plot_text(name)}: density", legendgroup=group,
            showlegend=False, line=dict(color=color, width=1.5), fill="tozeroy", fillcolor=_rgba(color, 0.12),
            hovertemplate=f"<b>{plot_text(name)}</b><br>confidence %{{x:.3f}}<br>density %{{y:.2f}}<extra></extra>",
        ), row=2, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=1, showticklabels=False)
    fig.update_xaxes(range=[0, 1], row=2, col=1, title_text="Top-label confidence")
    fig.update_yaxes(range=[-0.02, 1.02], row=1, col=1, title_text="Smoothed accuracy")
    fig.update_yaxes(rangemode="tozero", row=2, col=1, title_text="Density")
    return _layout(fig, height=600)


def _axes_of(fig: go.Figure, name: object) -> tuple[str, str, str | None, str | None]:
    """``(xaxis, yaxis, colour, legendgroup)`` of model ``name``'s reliability trace (defaults: first axes).

    The diagram names that trace ``plot_text(name)`` (:func:`calib_core.plot.figures.reliability_figure`), so
    that is what is looked for: a name with ``&``, ``<``, ``>``, ``%`` or ``$`` is found too.
    """
    label = plot_text(name)
    for trace in fig.data:
        if trace.name == label and trace.type in ("scatter", "bar") and trace.showlegend is not False:
            color = None
            if trace.type == "scatter" and trace.line is not None and trace.line.color:
                color = trace.line.color
            elif trace.marker is not None and isinstance(trace.marker.line.color, str):
                color = trace.marker.line.color
            return trace.xaxis or "x", trace.yaxis or "y", color, trace.legendgroup
    return "x", "y", None, None


def add_smooth_overlay(fig: go.Figure, curves: Mapping[str, SmoothReliabilityCurve], *,
                       colors: Mapping[str, int] | None = None, band: bool = True) -> go.Figure:
    """Add smoothed reliability curves (and their bands) to an existing reliability diagram.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        A reliability diagram, e.g. :func:`calib_core.plot.figures.reliability_figure`
        (overlaid or side by side). Each model's curve goes onto the axes of
        the trace named after the model (``plot_text(name)``, as that figure names
        it), in that trace's colour and legend group; a model without such a
        trace goes onto the first axes.
    curves : mapping of model name to :class:`calib_core.SmoothReliabilityCurve`
        Top-label curves (the smoothed curve is of the top-label confidence).
    colors : mapping of model name to colour index, optional
        Overrides the colour taken from the figure.
    band : bool, default True
        Also draw the bootstrap band (when the curve has one).

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig`` itself, with per model a dashed curve named
        ``"<model>: smoothed (smECE ...)"`` (where the confidences are dense),
        a faint dotted rest ``"<model>: smoothed, few predictions"`` and two
        band traces (``"<model>: smoothed band"`` and its upper edge).
    """
    names = list(curves)
    fallback = _palette(names, colors)
    for name in names:
        xaxis, yaxis, color, group = _axes_of(fig, name)
        if (colors and name in colors) or color is None:
            color = fallback[name]
        group = group or f"smooth-{name}"
        traces = _band_traces(str(name), curves[name], color, group) if band else []
        traces += _curve_traces(str(name), curves[name], color, group, dash="dash")
        for trace in traces:
            trace.update(xaxis=xaxis, yaxis=yaxis)
            fig.add_trace(trace)
    return fig
