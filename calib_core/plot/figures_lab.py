"""Plotly figures of the Lab page (no streamlit here).

* :func:`lab_figure` - estimates (or errors) against the test-set size, per
  estimator: the mean over the repetitions, a 5-95% band, and the true value
  of each estimated quantity as a dashed horizontal line.
* :func:`futami_figure` - Futami & Fujisawa's (2024) bias bounds and the
  optimal bin count against n, with the observed mean absolute error.
* :func:`subset_figure` - every metric on random subsets of the user's data,
  one panel per metric, one colour per model (Gruber & Buettner 2022, G.2).
* :func:`variant_heatmap`, :func:`correlation_heatmap` - bin-count rank
  stability of the 32 GCE variants (Nixon et al. 2019, 5.3).
* :func:`size_power_figure` - measured size of the calibration tests with
  binomial intervals and the accepted band, and their power against n.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calib_core.plot.text import plot_text

__all__ = ["TRUTH_TRACE_PREFIX", "correlation_heatmap", "futami_figure", "lab_figure", "size_power_figure",
           "subset_figure", "variant_heatmap"]

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
           "#7f7f7f", "#8c564b")
FONT = dict(family="Source Sans Pro, Arial, sans-serif", size=13)
#: Truth lines are named "truth: <quantity>" (tests and the browser look them up by this prefix).
TRUTH_TRACE_PREFIX = "truth: "
_TRUTH_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _rgba(hex_color: str, alpha: float) -> str:
    value = hex_color.lstrip("#")
    r, g, b = (int(value[i: i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _compact(value: float) -> str:
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def log_ticks(low: float, high: float, steps: Sequence[int] | None = (1, 2, 5)) -> dict:
    """Tick values ``steps`` x 10^k between ``low`` and ``high`` for a log axis.

    Plotly's own ticks crowd a short range and label the minor ticks with
    bare digits ("2", "5" between 0.1 and 1). ``steps=None`` picks
    (1, 2, 5) for a range of at most two decades and (1,) above.
    """
    if not (low > 0 and high > 0):
        return {}
    if steps is None:
        steps = (1, 2, 5) if math.log10(high / low) <= 2.0 else (1,)
    values = [m * 10.0**e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
              for m in steps]
    values = [v for v in values if low / 1.001 <= v <= high * 1.001]
    if len(values) < 2:
        values = sorted({float(low), float(high)})
    return dict(tickmode="array", tickvals=values, ticktext=[_compact(v) for v in values])


def _layout(fig: go.Figure, *, height: int, title: str | None = None) -> go.Figure:
    fig.update_layout(
        height=height, font=FONT, template="plotly_white", margin=dict(l=60, r=20, t=60 if title else 30, b=50),
        title=dict(text=title, x=0.0, xanchor="left") if title else None,
        legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0.0),
        hovermode="closest",
    )
    return fig


def _band(fig: go.Figure, x, low, high, color: str, name: str, group: str, **where) -> None:
    """A filled band between ``low`` and ``high`` (one closed polygon, no legend entry)."""
    fig.add_trace(go.Scatter(
        x=np.concatenate([x, x[::-1]]), y=np.concatenate([high, low[::-1]]), mode="lines", fill="toself",
        fillcolor=_rgba(color, 0.18), line=dict(width=0), hoverinfo="skip", showlegend=False,
        name=f"{name} 5-95%", legendgroup=group), **where)


def lab_figure(summary: pd.DataFrame, truth: Mapping[str, float], target_names: Mapping[str, str], *,
               view: str = "estimate", title: str | None = None) -> go.Figure:
    """Estimates against the test-set size (log x), with spread bands and the true values.

    Parameters
    ----------
    summary : DataFrame
        :attr:`calib_core.LabResult.summary` with a ``label`` column:
        ``estimator``, ``label``, ``size``, ``target``, ``truth``, ``mean``,
        ``q05``, ``q95``, ``bias``, ``std``.
    truth : mapping of str to float
        The model's true values (``GroundTruth.values``).
    target_names : mapping of str to str
        Display names of the truth keys.
    view : {"estimate", "error"}
        ``"estimate"``: the estimates and one dashed line per estimated
        quantity at its true value. ``"error"``: estimate minus the truth of
        its own target (bias band around 0), so estimators of different
        quantities share one scale.
    """
    fig = go.Figure()
    keys = list(dict.fromkeys(summary["estimator"]))
    for i, key in enumerate(keys):
        rows = summary[summary["estimator"] == key].sort_values("size")
        label = str(rows["label"].iloc[0])
        color = _color(i)
        x = rows["size"].to_numpy(dtype=float)
        shift = rows["truth"].to_numpy(dtype=float) if view == "error" else np.zeros(len(rows))
        if view == "error" and np.all(np.isnan(shift)):
            continue  # no known truth: nothing to subtract
        mean = rows["mean"].to_numpy(dtype=float) - shift
        low = rows["q05"].to_numpy(dtype=float) - shift
        high = rows["q95"].to_numpy(dtype=float) - shift
        _band(fig, x, low, high, color, label, key)
        custom = np.column_stack([rows["std"].to_numpy(dtype=float), rows["bias"].to_numpy(dtype=float),
                                  low, high])
        fig.add_trace(go.Scatter(
            x=x, y=mean, mode="lines+markers", name=label, legendgroup=key, line=dict(color=color, width=2),
            marker=dict(size=7), customdata=custom,
            hovertemplate=(f"<b>{label}</b><br>n = %{{x:,}}<br>mean = %{{y:.4f}}<br>5-95%: "
                           "%{customdata[2]:.4f} to %{customdata[3]:.4f}<br>std = %{customdata[0]:.4f}"
                           "<br>bias = %{customdata[1]:.4f}<extra></extra>")))
    if view == "estimate":
        targets = [t for t in dict.fromkeys(summary["target"]) if isinstance(t, str) and t in truth]
        if len(summary):
            x_span = [float(summary["size"].min()), float(summary["size"].max())]
        else:
            x_span = [1.0, 10.0]
        for j, target in enumerate(targets):
            value = float(truth[target])
            name = f"{TRUTH_TRACE_PREFIX}{target_names.get(target, target)} = {value:.4f}"
            fig.add_trace(go.Scatter(
                x=x_span, y=[value, value], mode="lines", name=name,
                line=dict(color="#333333", width=1.5, dash=_TRUTH_DASHES[j % len(_TRUTH_DASHES)]),
                hovertemplate=f"{name}<extra></extra>"))
        y_title = "estimate (mean and 5-95% of the repetitions)"
    else:
        fig.add_hline(y=0.0, line=dict(color="#333333", width=1.5, dash="dash"))
        y_title = "estimate − true value"
    ticks = log_ticks(summary["size"].min(), summary["size"].max()) if len(summary) else {}
    fig.update_xaxes(type="log", title_text="test-set size n (log scale)", **ticks)
    fig.update_yaxes(title_text=y_title, zeroline=False)
    return _layout(fig, height=480, title=title)


def futami_figure(optimal, observed: pd.DataFrame, *, fixed=None, fixed_bins: int | None = None,
                  lipschitz: float = 1.0, lipschitz_known: bool = True) -> go.Figure:
    """Futami & Fujisawa's bias bounds (left, log-log) and the optimal bin count (right) against n.

    Parameters
    ----------
    optimal : calib_core.FutamiBounds
        Bounds at the optimal bin count of each n (``futami_bounds(n, None, L)``).
    observed : DataFrame
        ``label``, ``size``, ``mean_abs_error``: the observed E|estimate − truth|
        of the binned estimators, drawn as markers.
    fixed : calib_core.FutamiBounds, optional
        Total bound at the fixed bin count, and ``fixed_bins`` for the right panel.
    """
    source = "the model's" if lipschitz_known else "assumed"
    # Subplot titles are centred over their panel and not wrapped: a title wider than its panel is cut
    # at the figure's edge, so the right one stays short and L goes to its axis title.
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38], horizontal_spacing=0.1,
                        subplot_titles=("Bias bound on E|TCE − ECE| and the observed error",
                                        "Optimal number of bins B*"))
    n = np.asarray(optimal.n, dtype=float)
    for values, name, dash, color in (
        (optimal.statistical, "statistical bound √(2B log2 / n)", "dot", "#0072B2"),
        (optimal.binning, "binning bound (1+L)/B", "dash", "#E69F00"),
        (optimal.total, "total bound (sum), at B*", "solid", "#333333"),
    ):
        fig.add_trace(go.Scatter(x=n, y=values, mode="lines", name=name, line=dict(color=color, dash=dash, width=2),
                                 hovertemplate=f"{name}<br>n = %{{x:,}}<br>%{{y:.4f}}<extra></extra>"),
                      row=1, col=1)
    if fixed is not None:
        fig.add_trace(go.Scatter(x=np.asarray(fixed.n, dtype=float), y=fixed.total, mode="lines",
                                 name=f"total bound at B = {fixed_bins}", line=dict(color="#7f7f7f", width=1.5,
                                                                                    dash="longdash"),
                                 hovertemplate="total bound, fixed B<br>n = %{x:,}<br>%{y:.4f}<extra></extra>"),
                      row=1, col=1)
    for i, (label, rows) in enumerate(observed.groupby("label", sort=False)):
        rows = rows.sort_values("size")
        fig.add_trace(go.Scatter(
            x=rows["size"], y=rows["mean_abs_error"], mode="markers+lines", name=f"observed: {label}",
            line=dict(color=_color(i), width=1), marker=dict(size=8, color=_color(i), symbol="diamond"),
            hovertemplate=f"{label}<br>n = %{{x:,}}<br>E|estimate − TCE| = %{{y:.4f}}<extra></extra>"),
            row=1, col=1)
    fig.add_trace(go.Scatter(x=n, y=optimal.optimal_n_bins, mode="lines", name="B* = ⌊(2n(1+L)²/log 2)^⅓⌋",
                             line=dict(color="#009E73", width=2, shape="hv"),
                             hovertemplate="n = %{x:,}<br>B* = %{y}<extra></extra>"), row=1, col=2)
    if fixed_bins:
        fig.add_trace(go.Scatter(x=[n.min(), n.max()], y=[fixed_bins, fixed_bins], mode="lines",
                                 name=f"fixed B = {fixed_bins}", line=dict(color="#7f7f7f", dash="longdash"),
                                 hovertemplate=f"fixed B = {fixed_bins}<extra></extra>"), row=1, col=2)
    fig.update_xaxes(type="log", title_text="n (log scale)", **log_ticks(n.min(), n.max()), row=1, col=1)
    fig.update_xaxes(type="log", title_text="n (log scale)", **log_ticks(n.min(), n.max(), steps=(1,)), row=1, col=2)
    left = [np.asarray(v, dtype=float) for v in (optimal.statistical, optimal.binning, optimal.total)]
    if fixed is not None:
        left.append(np.asarray(fixed.total, dtype=float))
    left.append(observed["mean_abs_error"].to_numpy(dtype=float) if len(observed) else np.array([]))
    values = np.concatenate(left)
    values = values[np.isfinite(values) & (values > 0)]
    y_ticks = log_ticks(float(values.min()), float(values.max()), steps=None) if values.size else {}
    fig.update_yaxes(type="log", title_text="bias (log scale)", **y_ticks, row=1, col=1)
    fig.update_yaxes(title_text=f"bins (L = {lipschitz:.3g}, {source})", rangemode="tozero", row=1, col=2)
    return _layout(fig, height=460)


def subset_figure(summary: pd.DataFrame, metric_names: Mapping[str, str], *, columns: int = 3) -> go.Figure:
    """One panel per metric: its mean and 5-95% band over random subsets against the subset size, per model.

    Parameters
    ----------
    summary : DataFrame
        :attr:`calib_core.SubsetStudy.summary` of several models with a
        ``model`` column. The full test set is the last point of each line.
    metric_names : mapping of str to str
        Display names of the metric keys.
    """
    metrics = list(dict.fromkeys(summary["metric"]))
    models = list(dict.fromkeys(summary["model"]))
    rows = max(1, math.ceil(len(metrics) / columns))
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=[metric_names.get(m, m) for m in metrics],
                        horizontal_spacing=0.07, vertical_spacing=0.12 if rows > 1 else 0.1)
    for k, metric in enumerate(metrics):
        where = dict(row=k // columns + 1, col=k % columns + 1)
        for i, model in enumerate(models):
            part = summary[(summary["metric"] == metric) & (summary["model"] == model)].sort_values("size")
            if part.empty:
                continue
            color = _color(i)
            x = part["size"].to_numpy(dtype=float)
            label = plot_text(model)
            _band(fig, x, part["q05"].to_numpy(dtype=float), part["q95"].to_numpy(dtype=float), color, label,
                  f"model-{i}", **where)
            fig.add_trace(go.Scatter(
                x=x, y=part["mean"], mode="lines+markers", name=label, legendgroup=f"model-{i}", showlegend=k == 0,
                line=dict(color=color, width=2), marker=dict(size=5),
                customdata=part[["std", "q05", "q95"]].to_numpy(dtype=float),
                hovertemplate=(f"<b>{label}</b><br>{metric_names.get(metric, metric)}<br>n = %{{x:,}}"
                               "<br>mean = %{y:.4f}<br>5-95%: %{customdata[1]:.4f} to %{customdata[2]:.4f}"
                               "<br>std = %{customdata[0]:.4f}<extra></extra>")), **where)
    if len(summary):
        fig.update_xaxes(type="log", **log_ticks(summary["size"].min(), summary["size"].max()))
    for c in range(1, columns + 1):
        fig.update_xaxes(title_text="subset size (log)", row=rows, col=c)
    _layout(fig, height=260 * rows + 90)
    fig.update_layout(legend=dict(y=-0.5 / rows))
    return fig


#: Rows and columns of the 32-variant grid: (binning, max_prob, class_conditional) x (threshold, norm).
_GRID_ROWS = [(b, m, c) for b in ("uniform", "adaptive") for m in (True, False) for c in (True, False)]
_GRID_COLS = [(t, n) for t in (0.0, 0.01) for n in ("l1", "l2")]


def variant_heatmap(table: pd.DataFrame) -> go.Figure:
    """Mean Spearman correlation of the 32 GCE variants on an 8 x 4 grid (Nixon et al. 2019, 5.3).

    Rows: binning, top label or all classes, per class or pooled; columns:
    threshold and norm. Colour from -1 (the ranking reverses) to 1 (the
    bin count never changes the ranking).
    """
    z = np.full((len(_GRID_ROWS), len(_GRID_COLS)), np.nan)
    for _, row in table.iterrows():
        r = _GRID_ROWS.index((row["binning"], bool(row["max_prob"]), bool(row["class_conditional"])))
        c = _GRID_COLS.index((float(row["threshold"]), row["norm"]))
        z[r, c] = row["mean_spearman"]
    y = [f"{b} · {'top label' if m else 'all classes'} · {'per class' if c else 'pooled'}"
         for b, m, c in _GRID_ROWS]
    x = [f"{'no threshold' if t == 0 else f'>{t:g}'} · {n}" for t, n in _GRID_COLS]
    text = [["–" if np.isnan(v) else f"{v:.2f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=y, zmin=-1.0, zmax=1.0, colorscale="RdBu", text=text, texttemplate="%{text}",
        colorbar=dict(title=dict(text="mean ρ")),
        hovertemplate="%{y}<br>%{x}<br>mean Spearman ρ = %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, height=420)


def correlation_heatmap(correlations: np.ndarray, bin_counts: Sequence[int], *, title: str | None = None) -> go.Figure:
    """Spearman correlation of the model ranking between every two bin counts (one GCE variant)."""
    counts = [int(b) for b in bin_counts]
    fig = go.Figure(go.Heatmap(
        z=correlations, x=counts, y=counts, zmin=-1.0, zmax=1.0, colorscale="RdBu",
        colorbar=dict(title=dict(text="ρ")),
        hovertemplate="B = %{x} vs B = %{y}<br>Spearman ρ = %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="bins")
    fig.update_yaxes(title_text="bins", autorange="reversed")
    return _layout(fig, height=420, title=title)


def size_power_figure(size: pd.DataFrame, power: pd.DataFrame, labels: Mapping[str, str], *, alpha: float,
                      band: tuple[float, float], level: float = 0.95) -> go.Figure:
    """Two panels: each test's measured size with its interval and the accepted band; power against n.

    Parameters
    ----------
    size, power : DataFrame
        :attr:`calib_core.SizePowerResult.size` and ``.power`` (``test``,
        ``n``, ``rate``, ``ci_low``, ``ci_high``, ``repetitions``; ``size``
        also ``flagged``).
    labels : mapping of str to str
        Display name of each test key.
    alpha : float
        Nominal size (a dashed line in both panels).
    band : (float, float)
        Accepted range of the measured size (shaded).
    level : float
        Coverage of the intervals (for the hover text).
    """
    fig = make_subplots(rows=1, cols=2, column_widths=[0.4, 0.6], horizontal_spacing=0.1,
                        subplot_titles=("Size: rejections of a calibrated model", "Power: rejections of a "
                                        "miscalibrated model"))
    keys = list(dict.fromkeys([*size["test"], *power["test"]]))
    names = [plot_text(labels.get(k, k)) for k in keys]
    fig.add_hrect(y0=band[0], y1=band[1], fillcolor="rgba(0, 158, 115, 0.15)", line_width=0, row=1, col=1)
    for col in (1, 2):
        fig.add_hline(y=alpha, line=dict(color="#333333", width=1, dash="dash"), row=1, col=col)
    for i, (key, name) in enumerate(zip(keys, names)):
        color = _color(i)
        rows = size[size["test"] == key].sort_values("n")
        if len(rows):
            flagged = rows["flagged"].to_numpy(dtype=bool)
            text = [f"n = {n:,}" for n in rows["n"]]
            fig.add_trace(go.Scatter(
                x=[name] * len(rows), y=rows["rate"].to_numpy(dtype=float), mode="markers", name=name,
                legendgroup=key, marker=dict(color=color, size=11, symbol=np.where(flagged, "x", "circle"),
                                             line=dict(width=1, color="#333333")),
                error_y=dict(type="data", symmetric=False,
                             array=(rows["ci_high"] - rows["rate"]).to_numpy(dtype=float),
                             arrayminus=(rows["rate"] - rows["ci_low"]).to_numpy(dtype=float), color=color),
                customdata=np.column_stack([rows["ci_low"], rows["ci_high"], rows["repetitions"]]), text=text,
                hovertemplate=(f"<b>{name}</b> (%{{text}})<br>size = %{{y:.3f}}<br>{level:.0%} interval "
                               "%{customdata[0]:.3f} to %{customdata[1]:.3f}<br>R = %{customdata[2]}"
                               "<extra></extra>")), row=1, col=1)
        rows = power[power["test"] == key].sort_values("n")
        if len(rows):
            x = rows["n"].to_numpy(dtype=float)
            _band(fig, x, rows["ci_low"].to_numpy(dtype=float), rows["ci_high"].to_numpy(dtype=float), color,
                  name, key, row=1, col=2)
            fig.add_trace(go.Scatter(
                x=x, y=rows["rate"].to_numpy(dtype=float), mode="lines+markers", name=name, legendgroup=key,
                showlegend=not len(size[size["test"] == key]), line=dict(color=color, width=2),
                customdata=np.column_stack([rows["ci_low"], rows["ci_high"]]),
                hovertemplate=(f"<b>{name}</b><br>n = %{{x:,}}<br>power = %{{y:.3f}}<br>{level:.0%} interval "
                               "%{customdata[0]:.3f} to %{customdata[1]:.3f}<extra></extra>")), row=1, col=2)
    top = max(0.2, float(size["ci_high"].max()) * 1.1 if len(size) else 0.2)
    fig.update_yaxes(title_text=f"rejection rate at α = {alpha:g}", range=[0, min(1.0, top)], row=1, col=1)
    fig.update_yaxes(title_text="rejection rate", range=[0, 1.02], row=1, col=2)
    ticks = log_ticks(float(power["n"].min()), float(power["n"].max())) if len(power) else {}
    fig.update_xaxes(type="log", title_text="test-set size n (log scale)", row=1, col=2, **ticks)
    return _layout(fig, height=460)
