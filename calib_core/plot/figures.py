"""Plotly figures for the app's foundation pages, built from calib_core results.

Every function takes result tables (``reliability_table``, the per-class
table of :func:`calib_core.per_class_table`, ``bin_sensitivity`` and
``rank_by_bins`` output) and returns a :class:`plotly.graph_objects.Figure`.
Nothing here imports streamlit, so the figures are testable without a
browser and reusable in exported reports. Pages show them with
``st.plotly_chart(fig, theme=None)`` so these colours are kept.

Colours: the Okabe-Ito palette (distinguishable with the common colour
vision deficiencies); a model keeps its colour on every page because the
pages pass its loading position as its colour index.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from calib_core.binning import optimal_n_bins
from plotly.subplots import make_subplots

from calib_core.plot.text import plot_text

#: Okabe & Ito (2008) colour-blind-safe palette (black moved last).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
DIAGONAL_COLOR = "#7f7f7f"
GAP_OVER = "rgba(213, 94, 0, 0.45)"   # over-confident: confidence above observed frequency
GAP_UNDER = "rgba(255, 255, 255, 0.45)"  # under-confident: a lighter, hatched part of the bar
FONT = dict(family="Source Sans Pro, Arial, sans-serif", size=13)
_BINNING_DASH = {"uniform": "solid", "adaptive": "dot"}
_METRIC_TITLES = {"ece": "ECE", "ace": "ACE", "sce": "SCE", "tace": "TACE"}

#: Reliability-diagram bins holding fewer rows than this are drawn faded, with their row count, and
#: get no gap shading and no connecting line. With fewer than 10 rows the 95% Wilson interval of the
#: observed frequency is about +-0.26 wide or wider (at a frequency of 0.5), so the gap of such a bin
#: says little; shading it drew a large triangle for a class whose class-wise ECE is 0.003.
MIN_BIN_COUNT = 10
#: A :func:`reliability_figure` lower than this many pixels is drawn as a compact thumbnail.
COMPACT_HEIGHT = 400
#: Marker opacity of a bin with one row and with ``MIN_BIN_COUNT - 1`` rows (linear in between).
SPARSE_OPACITY = (0.25, 0.65)


def color_for(index: int) -> str:
    """The palette colour of the model at loading position ``index``."""
    return PALETTE[index % len(PALETTE)]


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _colors(names: Sequence[str], colors: Mapping[str, int] | None) -> dict[str, str]:
    return {name: color_for(colors[name] if colors and name in colors else i) for i, name in enumerate(names)}


def _base_layout(fig: go.Figure, *, height: int, title: str | None, panel_titles: bool = False) -> go.Figure:
    """Shared look. With ``panel_titles`` the legend moves to the top of the figure (container
    coordinates) and the top margin grows, so legend and subplot titles do not overlap."""
    extra = 45 if panel_titles else 0
    fig.update_layout(
        template="plotly_white", height=height + extra, font=FONT, hovermode="closest",
        margin=dict(l=60, r=20, t=(70 if title else 40) + extra, b=50),
        legend=(dict(orientation="h", yref="container", y=0.995, yanchor="top", xanchor="left", x=0)
                if panel_titles else dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0)),
        title=dict(text=title, x=0, xanchor="left") if title else None,
    )
    fig.update_yaxes(automargin=True)
    return fig


def count_opacity(count: np.ndarray, min_count: int = MIN_BIN_COUNT) -> np.ndarray:
    """Marker opacity of each bin: 1 from ``min_count`` rows on, fading linearly to
    ``SPARSE_OPACITY[0]`` for a bin of one row (``SPARSE_OPACITY[1]`` at ``min_count - 1``)."""
    count = np.asarray(count, dtype=float)
    low, high = SPARSE_OPACITY
    ramp = low + (high - low) * (count - 1) / max(min_count - 2, 1)
    return np.where(count >= min_count, 1.0, np.clip(ramp, low, high))


def _runs(mask: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the maximal runs of consecutive True values of ``mask``."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)


def _gap_polygons(conf: np.ndarray, obs: np.ndarray, mask: np.ndarray) -> tuple[list, list]:
    """Closed outlines of the area between the diagonal and the observed frequencies, one per run
    of consecutive bins in ``mask`` (separated by ``None``, for a ``fill="toself"`` trace)."""
    xs: list = []
    ys: list = []
    for run in _runs(mask):
        if run.size < 2:
            continue  # a single bin encloses no area
        xs += [*conf[run], *conf[run][::-1], conf[run][0], None]
        ys += [*obs[run], *conf[run][::-1], obs[run][0], None]
    return xs, ys


def percent_text(value: float) -> str:
    """A share as a percentage with the digits it needs: 0.001 -> "0.1%", 0.5 -> "50%", 1 -> "100%"."""
    return f"{round(100.0 * float(value), 10):g}%"


def share_log_axis(shares: np.ndarray) -> dict:
    """Range and ticks of a log-scale axis of shares in (0, 1] (Plotly's ``tickformat=".0%"`` on a log
    axis wrote 0.1% as "0%" and put ticks at 1000%).

    Returns
    -------
    dict
        ``type="log"``, a ``range`` (log10 units) from a little below the smallest positive share, at
        least one decade, to just above 100%, and ``tickvals``/``ticktext`` at 1, 2 and 5 x 10^k (only
        10^k when the range spans more than two decades) written by :func:`percent_text`.
    """
    shares = np.asarray(shares, dtype=float)
    positive = shares[np.isfinite(shares) & (shares > 0)]
    smallest = float(positive.min()) if positive.size else 0.1
    low = min(np.log10(smallest) - 0.15, -1.0)
    high = 0.05
    steps = (1, 2, 5) if high - low <= 2.2 else (1,)
    values = [m * 10.0 ** e for e in range(int(np.floor(low)), 1) for m in steps]
    values = [v for v in values if low <= np.log10(v) <= high]
    return dict(type="log", range=[low, high], tickmode="array", tickvals=values,
                ticktext=[percent_text(v) for v in values])


# ----------------------------------------------------------------------------- reliability

def event_axis_title(target: str | int, class_names: Sequence[str] | Mapping[int, str], stated: bool = False) -> str:
    """The x-axis title of a reliability diagram of ``target`` (``"top_label"`` or a class index).

    ``stated``: a confidence model (its stated confidence against correctness) is among the models drawn.
    """
    top = ("confidence (stated, for a confidence model; top label otherwise)" if stated
           else "top-label confidence")
    event = (top if target == "top_label"
             else f"predicted probability of class {plot_text(class_names[target])}")
    return f"Mean {event} in the bin"


def reliability_figure(tables: Mapping[str, pd.DataFrame], *, layout: str = "overlay", style: str = "points",
                       colors: Mapping[str, int] | None = None, title: str | None = None,
                       x_title: str = "Confidence (mean predicted probability in the bin)",
                       n_rows: Mapping[str, int] | None = None, histogram_log: bool = False,
                       min_count: int = MIN_BIN_COUNT, height: int | None = None) -> go.Figure:
    """Reliability diagram(s) with per-bin Wilson intervals and a confidence histogram below.

    Parameters
    ----------
    tables : mapping of model name to DataFrame
        ``calib_core.reliability_table`` output, one per model.
    layout : {"overlay", "side_by_side"}
        All models on one diagram, or one column per model.
    style : {"points", "bars"}
        ``"points"``: the observed frequency at each bin's mean confidence,
        joined by a line, the area between it and the diagonal shaded.
        ``"bars"``: one bar per bin (its width is the bin's range) up to the
        observed frequency, and a hatched gap bar from there to the bin's
        mean confidence (Guo et al. 2017, Figure 1).
    colors : mapping of model name to colour index, optional
    title : str, optional
    x_title : str
        Plotly text: escape user-supplied parts with :func:`calib_core.plot.text.plot_text`.
    n_rows : mapping of model name to N, optional
        Shown in the hover of the histogram.
    histogram_log : bool, default False
        Log-scale the histogram's y axis (one-vs-rest probabilities and
        confident models pile almost every row into one bin); ticks at
        1, 2, 5 x 10^k percent (:func:`share_log_axis`).
    min_count : int, default MIN_BIN_COUNT
        Bins with fewer rows are de-emphasised: faded markers (bars) whose
        opacity grows with the count (:func:`count_opacity`), labelled
        ``n=<count>``, not joined by the line and not shaded; their Wilson
        interval is still drawn (faded), since it shows how little such a bin says.
    height : int, optional
        Height in pixels. None: the full-size diagram of the Reliability page
        (640 px). Below 400 px a compact thumbnail is drawn (the Data page's
        first picture): no legend, no axis titles, smaller markers and
        margins; the hover still names every bin.

    Returns
    -------
    plotly.graph_objects.Figure
        Row 1: the diagonal, the per-model reliability traces with Wilson
        error bars (hover: bin range, count, confidence, frequency, gap,
        interval). Row 2: share of rows per bin (bars as wide as the bins)
        on the same x axis. Model names are shown as plain text.
    """
    if layout not in ("overlay", "side_by_side"):
        raise ValueError(f"`layout` must be 'overlay' or 'side_by_side', got {layout!r}.")
    if style not in ("points", "bars"):
        raise ValueError(f"`style` must be 'points' or 'bars', got {style!r}.")
    names = list(tables)
    palette = _colors(names, colors)
    n_cols = len(names) if layout == "side_by_side" and names else 1
    fig = make_subplots(
        rows=2, cols=n_cols, shared_xaxes=True, row_heights=[0.74, 0.26], vertical_spacing=0.05,
        horizontal_spacing=0.05 if n_cols > 1 else 0.02,
        subplot_titles=[plot_text(n) for n in names] + [""] * n_cols if n_cols > 1 else None,
    )
    for col in range(1, n_cols + 1):
        fig.add_trace(go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", name="Perfect calibration", legendgroup="diagonal",
            showlegend=col == 1, hoverinfo="skip", line=dict(color=DIAGONAL_COLOR, dash="dash", width=1.5),
        ), row=1, col=col)
    gap_legend_shown = False
    shares = []
    sparse_note = (f"<br><i>fewer than {min_count} rows: too few to read the gap</i>")
    for i, name in enumerate(names):
        table = tables[name]
        label = plot_text(name)
        col = i + 1 if n_cols > 1 else 1
        color = palette[name]
        conf = table["mean_confidence"].to_numpy(dtype=float)
        obs = table["observed_frequency"].to_numpy(dtype=float)
        count = table["count"].to_numpy()
        low, high = table["ci_low"].to_numpy(), table["ci_high"].to_numpy()
        lower, upper = table["lower"].to_numpy(), table["upper"].to_numpy()
        solid = count >= min_count
        opacity = count_opacity(count, min_count)
        customdata = np.column_stack([lower, upper, count, table["gap"].to_numpy(),
                                      low, high, conf, obs])
        hover = (f"<b>{label}</b><br>bin (%{{customdata[0]:.3f}}, %{{customdata[1]:.3f}}]"
                 "<br>rows: %{customdata[2]:,}<br>mean confidence: %{customdata[6]:.3f}"
                 "<br>observed frequency: %{customdata[7]:.3f}"
                 "<br>gap (conf. - freq.): %{customdata[3]:+.3f}"
                 "<br>95% interval: [%{customdata[4]:.3f}, %{customdata[5]:.3f}]")
        error_plus, error_minus = np.clip(high - obs, 0, None), np.clip(obs - low, 0, None)
        error = dict(type="data", array=error_plus, arrayminus=error_minus,
                     visible=True, color=color, thickness=1.2, width=3)
        sparse_text = [f"n={c:,}" if c < min_count else "" for c in count]
        group = f"model-{i}"
        if style == "points":
            # Shade between the diagonal (y = confidence) and the observed frequency, bins with enough rows only.
            gap_x, gap_y = _gap_polygons(conf, obs, solid)
            fig.add_trace(go.Scatter(x=gap_x, y=gap_y, mode="lines", line=dict(width=0), fill="toself",
                                     fillcolor=_rgba(color, 0.18), showlegend=False, hoverinfo="skip",
                                     legendgroup=group, name=f"{label} gap"), row=1, col=col)
            # The model's line joins consecutive bins with enough rows (None breaks it at the others).
            fig.add_trace(go.Scatter(
                x=conf, y=np.where(solid, obs, np.nan), mode="lines+markers", name=label,
                legendgroup=group, connectgaps=False,
                line=dict(color=color, width=2), marker=dict(color=color, size=8, line=dict(color="white", width=1)),
                error_y=error, customdata=customdata, hovertemplate=hover + "<extra></extra>",
            ), row=1, col=col)
            if (~solid).any():
                few = ~solid
                fig.add_trace(go.Scatter(
                    x=conf[few], y=obs[few], mode="markers+text", name=f"{label}: bins under {min_count} rows",
                    legendgroup=group, showlegend=False, text=[t for t, f in zip(sparse_text, few) if f],
                    textposition="top center", textfont=dict(size=10, color=_rgba(color, 0.8)),
                    marker=dict(color=color, size=8, opacity=opacity[few], symbol="circle-open",
                                line=dict(color=color, width=1.5)),
                    error_y=dict(type="data", array=error_plus[few], arrayminus=error_minus[few], visible=True,
                                 color=_rgba(color, 0.35), thickness=1, width=2),
                    customdata=customdata[few], hovertemplate=hover + sparse_note + "<extra></extra>",
                    cliponaxis=False,
                ), row=1, col=col)
        else:
            mid, width = (lower + upper) / 2, upper - lower
            fig.add_trace(go.Bar(
                x=mid, y=obs, width=width, name=label, legendgroup=group,
                marker=dict(color=_rgba(color, 0.75), line=dict(color=color, width=1), opacity=opacity),
                text=sparse_text, textposition="outside", textfont=dict(size=10), cliponaxis=False,
                error_y=error, customdata=customdata,
                hovertemplate=[hover + ("" if s else sparse_note) + "<extra></extra>" for s in solid],
            ), row=1, col=col)
            gap = conf - obs
            fig.add_trace(go.Bar(
                x=mid, y=gap, base=obs, width=width, name="Gap (confidence - frequency)",
                legendgroup="gap", showlegend=not gap_legend_shown,
                marker=dict(color=np.where(gap > 0, GAP_OVER, GAP_UNDER).tolist(), opacity=opacity,
                            line=dict(color="rgba(120, 40, 0, 0.8)", width=1), pattern=dict(shape="/")),
                customdata=customdata, hovertemplate=hover + "<extra></extra>",
            ), row=1, col=col)
            gap_legend_shown = True
        n_total = (n_rows or {}).get(name)
        weight = table["weight"].to_numpy(dtype=float)
        shares.append(weight)
        fig.add_trace(go.Bar(
            x=(lower + upper) / 2, y=weight, width=upper - lower,
            name=f"{label} rows per bin", legendgroup=group, showlegend=False,
            marker=dict(color=_rgba(color, 0.55 if n_cols == 1 and len(names) > 1 else 0.8),
                        line=dict(color=color, width=0.5)),
            customdata=np.column_stack([lower, upper, count]),
            hovertemplate=(f"<b>{label}</b><br>bin (%{{customdata[0]:.3f}}, %{{customdata[1]:.3f}}]"
                           "<br>rows: %{customdata[2]:,}" + (f" of {n_total:,}" if n_total else "")
                           + "<br>share: %{y:.2%}<extra></extra>"),
        ), row=2, col=col)
    fig.update_layout(barmode="overlay", bargap=0)
    share_axis = share_log_axis(np.concatenate(shares) if shares else np.array([]))
    for col in range(1, n_cols + 1):
        # A little room beyond [0, 1] so that markers at confidence 1 are not cut in half.
        fig.update_xaxes(range=[-0.01, 1.015], row=1, col=col, showticklabels=False)
        fig.update_xaxes(range=[-0.01, 1.015], row=2, col=col,
                         title_text=x_title if col == 1 or n_cols > 1 else None, title_font=dict(size=12))
        fig.update_yaxes(range=[-0.03, 1.03], row=1, col=col,
                         title_text="Observed frequency" if col == 1 else None)
        if histogram_log:
            fig.update_yaxes(row=2, col=col, **share_axis,
                             title_text="Share of rows (log)" if col == 1 else None)
        else:
            fig.update_yaxes(row=2, col=col, tickformat=".0%", rangemode="tozero",
                             title_text="Share of rows" if col == 1 else None)
    if height is None:
        return _base_layout(fig, height=640, title=title, panel_titles=n_cols > 1)
    if isinstance(height, bool) or not isinstance(height, (int, np.integer)) or height < 120:
        raise ValueError(f"`height` must be a whole number of pixels >= 120 or None, got {height!r}.")
    fig = _base_layout(fig, height=int(height), title=title, panel_titles=n_cols > 1)
    if height < COMPACT_HEIGHT:
        fig.update_layout(showlegend=False, font=dict(FONT, size=11),
                          margin=dict(l=40, r=10, t=30 if title else 8, b=24))
        fig.update_xaxes(title_text=None)
        fig.update_yaxes(title_text=None, nticks=4)
        fig.update_traces(marker_size=6, selector=dict(type="scatter", mode="lines+markers"))
    return fig


# ----------------------------------------------------------------------------- per class

CONSISTENCY_COLOR = "rgba(200, 30, 30, 0.85)"


def add_consistency_bands(fig: go.Figure, bands: Mapping[str, object], *, layout: str = "overlay") -> go.Figure:
    """Draw consistency bands on a :func:`reliability_figure` (in place; returns it).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        Built by :func:`reliability_figure` with the same models, in the same order.
    bands : mapping of model name to calib_core.ConsistencyBands
        Per non-empty bin: ``mean_value`` (x) and the ``frequency_low`` /
        ``frequency_high`` quantiles of the observed frequency under perfect
        calibration (Vaicenavicius et al. 2019, Figures 8-15, red bars).
    layout : {"overlay", "side_by_side"}
        As given to :func:`reliability_figure`.

    Notes
    -----
    A bin whose observed frequency lies outside its band is unlikely for a
    calibrated model with these predictions; one inside says the gap can be
    noise. Each band is one vertical segment; all segments of a model form
    one trace (separated by ``None``).
    """
    for i, (name, band) in enumerate(bands.items()):
        col = i + 1 if layout == "side_by_side" and len(bands) > 1 else 1
        x = np.repeat(band.mean_value, 3).astype(object)
        y = np.column_stack([band.frequency_low, band.frequency_high,
                             np.full(band.mean_value.shape, np.nan)]).ravel().astype(object)
        x[2::3] = None
        y[2::3] = None
        q_low, q_high = (100 * q for q in band.quantiles)
        label = plot_text(name)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines+markers", name=f"{label}: {q_low:g}-{q_high:g}% if calibrated",
            legendgroup=f"consistency-{i}", line=dict(color=CONSISTENCY_COLOR, width=5),
            marker=dict(symbol="line-ew", size=10, color=CONSISTENCY_COLOR, line=dict(width=2, color=CONSISTENCY_COLOR)),
            opacity=0.75, hovertemplate=(f"<b>{label}</b><br>{q_low:g}-{q_high:g}% of a calibrated model's"
                                         " frequencies<br>%{y:.3f}<extra></extra>"),
        ), row=1, col=col)
    return fig


def per_class_figure(tables: Mapping[str, pd.DataFrame], *, sort_by: str = "class",
                     colors: Mapping[str, int] | None = None, title: str | None = None) -> go.Figure:
    """Per-class ACE bars (Nixon et al. 2019, Figure 1 left) beside class-wise ECE bars.

    Parameters
    ----------
    tables : mapping of model name to DataFrame
        :func:`calib_core.per_class_table` output (columns ``class``, ``ace``,
        ``classwise_ece``, ``support`` ...), one per model; grouped bars
        when there are several.
    sort_by : {"class", "ace", "classwise_ece"}
        Class order on both panels: as in the file, or by decreasing value
        (the mean over models).
    colors : mapping of model name to colour index, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Two panels sharing the class order: ACE per class (left) and
        class-wise ECE per class (right).
    """
    if sort_by not in ("class", "ace", "classwise_ece"):
        raise ValueError(f"`sort_by` must be 'class', 'ace' or 'classwise_ece', got {sort_by!r}.")
    names = list(tables)
    palette = _colors(names, colors)
    first = tables[names[0]] if names else pd.DataFrame(columns=["class", "ace", "classwise_ece"])
    # Class names are categories of the x axis: shown as plain text (escaping is one-to-one, so they stay distinct).
    order = [plot_text(c) for c in first["class"]]
    if sort_by != "class" and names:
        mean = pd.concat([t.set_index(t["class"].map(plot_text))[sort_by] for t in tables.values()],
                         axis=1).mean(axis=1)
        order = mean.sort_values(ascending=False, kind="stable").index.tolist()
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=["ACE per class (adaptive ranges)", "Class-wise ECE per class"])
    for i, name in enumerate(names):
        table = tables[name].assign(**{"class": lambda t: t["class"].map(plot_text)}).set_index("class").reindex(order)
        label = plot_text(name)
        for col, column in ((1, "ace"), (2, "classwise_ece")):
            customdata = np.column_stack([table["support"].to_numpy(), table["mean_probability"].to_numpy(),
                                          table["tace"].to_numpy() if "tace" in table else np.full(len(table), np.nan)])
            fig.add_trace(go.Bar(
                x=order, y=table[column].to_numpy(), name=label, legendgroup=f"model-{i}",
                showlegend=col == 1 and len(names) > 1, marker=dict(color=palette[name]),
                customdata=customdata,
                hovertemplate=(f"<b>{label}</b><br>class %{{x}}<br>{'ACE' if col == 1 else 'class-wise ECE'}: "
                               "%{y:.4f}<br>rows of this class: %{customdata[0]:,}"
                               "<br>mean predicted probability: %{customdata[1]:.3f}<extra></extra>"),
            ), row=1, col=col)
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order, title_text="Class")
    fig.update_yaxes(rangemode="tozero", title_text="Calibration error", col=1)
    fig.update_yaxes(rangemode="tozero", col=2)
    return _base_layout(fig, height=420, title=title, panel_titles=True)


#: Above this many classes the Per-class page shows the worst classes and the distribution over all
#: classes (:func:`per_class_worst_figure`, :func:`per_class_distribution_figure`) instead of one bar
#: per class: 40 grouped bars per panel are about the most a 600-pixel-wide panel can label.
MANY_CLASSES = 40
#: Tick labels of class names longer than this are cut (with an ellipsis); hover shows the whole name.
CLASS_LABEL_CHARS = 32
_PER_CLASS_TITLES = {"ace": "ACE per class (adaptive ranges)", "classwise_ece": "Class-wise ECE per class"}


def worst_classes(tables: Mapping[str, pd.DataFrame], sort_by: str) -> pd.Series:
    """Class positions (rows of the tables) from worst to best: by ``sort_by`` (``"ace"`` or ``"classwise_ece"``) averaged over
    the models, ties (and NaN, last) in class order; the values are that mean."""
    if sort_by not in _PER_CLASS_TITLES:
        raise ValueError(f"`sort_by` must be 'ace' or 'classwise_ece', got {sort_by!r}.")
    mean = pd.concat([t[sort_by].reset_index(drop=True) for t in tables.values()], axis=1).mean(axis=1)
    return mean.sort_values(ascending=False, kind="stable", na_position="last")


def _short(name: object, limit: int = CLASS_LABEL_CHARS) -> str:
    """``name`` on one line, cut in the middle to ``limit`` characters: the start and the end are kept, as
    names that differ only at the end (``... 12``, ``... 13``) would otherwise read alike."""
    text = " ".join(str(name).split())
    if len(text) <= limit:
        return text
    tail = limit // 3
    return text[:limit - tail - 1] + "\u2026" + text[-tail:]


def per_class_worst_figure(tables: Mapping[str, pd.DataFrame], *, sort_by: str = "ace", top_n: int = 25,
                           order: Sequence[int] | None = None, colors: Mapping[str, int] | None = None,
                           title: str | None = None) -> go.Figure:
    """The ``top_n`` worst classes as horizontal bars, worst on top: ACE (left) and class-wise ECE (right).

    For many classes (Nixon et al. 2019 evaluate ACE per class on ImageNet's
    1,000 classes), one bar per class no longer reads; the classes with the
    largest error come first, the rest are summarised by
    :func:`per_class_distribution_figure`.

    Parameters
    ----------
    tables : mapping of model name to DataFrame
        :func:`calib_core.per_class_table` output, one per model (same classes).
    sort_by : {"ace", "classwise_ece"}
        Which error picks and orders the classes (the mean over models).
    top_n : int
        How many classes to show.
    order : sequence of int, optional
        The class positions to show, top to bottom, instead of the
        ``top_n`` worst (``sort_by`` and ``top_n`` are then unused).
    colors : mapping of model name to colour index, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Two panels sharing the class axis (category axis of the escaped
        class names; tick labels cut to ``CLASS_LABEL_CHARS`` characters).
    """
    names = list(tables)
    palette = _colors(names, colors)
    order = (np.asarray(order, dtype=int) if order is not None
             else worst_classes(tables, sort_by).index[:max(int(top_n), 1)].to_numpy())
    raw = tables[names[0]]["class"].iloc[order].tolist()
    categories = [plot_text(c) for c in raw]  # escaping is one-to-one, so the categories stay distinct
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[_PER_CLASS_TITLES["ace"], _PER_CLASS_TITLES["classwise_ece"]])
    for i, name in enumerate(names):
        table = tables[name].reset_index(drop=True).reindex(order)
        label = plot_text(name)
        customdata = np.column_stack([table["support"].to_numpy(), table["mean_probability"].to_numpy()])
        for col, column in ((1, "ace"), (2, "classwise_ece")):
            fig.add_trace(go.Bar(
                y=categories, x=table[column].to_numpy(), orientation="h", name=label,
                legendgroup=f"model-{i}", showlegend=col == 1 and len(names) > 1,
                marker=dict(color=palette[name]), customdata=customdata,
                hovertemplate=(f"<b>{label}</b><br>class %{{y}}<br>{'ACE' if col == 1 else 'class-wise ECE'}: "
                               "%{x:.4f}<br>rows of this class: %{customdata[0]:,}"
                               "<br>mean predicted probability: %{customdata[1]:.3f}<extra></extra>"),
            ), row=1, col=col)
    ticks = [plot_text(_short(c)) for c in raw]
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=categories[::-1],
                     tickmode="array", tickvals=categories, ticktext=ticks)
    fig.update_xaxes(rangemode="tozero", title_text="Calibration error")
    per_class = 14 * max(len(names), 1) + 8
    return _base_layout(fig, height=max(260, 90 + per_class * len(order)), title=title,
                        panel_titles=len(names) > 1)


def per_class_distribution_figure(tables: Mapping[str, pd.DataFrame], *, sort_by: str = "ace", top_n: int = 25,
                                  marked: bool = True, colors: Mapping[str, int] | None = None,
                                  title: str | None = None) -> go.Figure:
    """Histograms of ACE (left) and class-wise ECE (right) over all classes, the worst-``top_n`` threshold marked.

    Parameters
    ----------
    tables, sort_by, top_n, colors, title
        As for :func:`per_class_worst_figure`; the dashed line on the
        ``sort_by`` panel is the ``top_n``-th largest value (of the mean over
        models), so the classes right of it are the bars above.
    marked : bool
        Whether to draw that line.

    Returns
    -------
    plotly.graph_objects.Figure
        Two panels, one overlaid histogram per model (the number of classes
        per error range).
    """
    names = list(tables)
    palette = _colors(names, colors)
    ranked = worst_classes(tables, sort_by).dropna()
    n_classes = max((len(t) for t in tables.values()), default=0)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=[f"ACE over all {n_classes:,} classes",
                                        f"Class-wise ECE over all {n_classes:,} classes"])
    for i, name in enumerate(names):
        label = plot_text(name)
        for col, column in ((1, "ace"), (2, "classwise_ece")):
            values = tables[name][column].to_numpy(dtype=float)
            fig.add_trace(go.Histogram(
                x=values[np.isfinite(values)], nbinsx=40, name=label, legendgroup=f"model-{i}",
                showlegend=col == 1 and len(names) > 1, marker=dict(color=palette[name]),
                opacity=0.6 if len(names) > 1 else 0.85,
                hovertemplate=(f"<b>{label}</b><br>{'ACE' if col == 1 else 'class-wise ECE'} %{{x}}"
                               "<br>%{y:,} classes<extra></extra>"),
            ), row=1, col=col)
    if marked and 0 < top_n < len(ranked):
        threshold = float(ranked.iloc[int(top_n) - 1])
        fig.add_vline(x=threshold, line=dict(color=DIAGONAL_COLOR, dash="dash", width=1.5),
                      row=1, col=1 if sort_by == "ace" else 2)
        fig.add_annotation(x=threshold, y=1, yref="y domain" if sort_by == "ace" else "y2 domain",
                           xref="x" if sort_by == "ace" else "x2", text=f"{int(top_n):,} worst \u2192",
                           showarrow=False, xanchor="left", yanchor="top", font=dict(size=12))
    fig.update_layout(barmode="overlay", bargap=0.05)
    fig.update_xaxes(rangemode="tozero", title_text="Calibration error")
    fig.update_yaxes(title_text="Classes", col=1)
    return _base_layout(fig, height=300, title=title, panel_titles=len(names) > 1)


# ----------------------------------------------------------------------------- bin sensitivity

def bin_marks(n_samples: int) -> dict[str, float]:
    """The reference lines of :func:`sensitivity_figure` for N rows: ``optimal_n_bins(N)`` (Futami &
    Fujisawa 2024) and N^(1/3) (the Bin sensitivity page and the report)."""
    return {"optimal_n_bins(N)": float(optimal_n_bins(int(n_samples))),
            "N^(1/3)": round(float(n_samples) ** (1.0 / 3.0), 2)}


def sensitivity_figure(table: pd.DataFrame, *, marks: Mapping[str, float] | None = None,
                       colors: Mapping[str, int] | None = None, title: str | None = None) -> go.Figure:
    """Binned errors against the number of bins, one panel per metric.

    Parameters
    ----------
    table : pandas.DataFrame
        ``bin_sensitivity`` output with an added ``model`` column (several
        models concatenated).
    marks : mapping of label to bin count, optional
        Vertical reference lines, e.g. ``{"optimal_n_bins(N)": 22, "N^(1/3)": 9.7}``.
    colors : mapping of model name to colour index, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        A 2 x 2 grid (one panel per metric present); colour = model, solid
        line = uniform bins, dotted = adaptive bins.
    """
    metrics = list(dict.fromkeys(table["metric"]))
    names = list(dict.fromkeys(table["model"]))
    palette = _colors(names, colors)
    n_cols = 2 if len(metrics) > 1 else 1
    n_rows_grid = int(np.ceil(len(metrics) / n_cols)) if metrics else 1
    fig = make_subplots(rows=n_rows_grid, cols=n_cols, shared_xaxes=True, vertical_spacing=0.12,
                        horizontal_spacing=0.08, subplot_titles=[_METRIC_TITLES.get(m, m) for m in metrics])
    shown = set()
    for j, metric in enumerate(metrics):
        row, col = j // n_cols + 1, j % n_cols + 1
        part = table[table["metric"] == metric]
        for k, name in enumerate(names):
            label = plot_text(name)
            for binning, lines in part[part["model"] == name].groupby("binning", sort=False):
                legend = (name, binning)
                fig.add_trace(go.Scatter(
                    x=lines["n_bins"], y=lines["value"], mode="lines", name=f"{label} · {binning}",
                    legendgroup=f"model-{k}-{binning}", showlegend=legend not in shown,
                    line=dict(color=palette[name], dash=_BINNING_DASH.get(binning, "dash"), width=1.8),
                    hovertemplate=(f"<b>{label}</b> · {binning}<br>{_METRIC_TITLES.get(metric, metric)} "
                                   "with %{x} bins: %{y:.4f}<extra></extra>"),
                ), row=row, col=col)
                shown.add(legend)
    _add_marks(fig, marks, [(k // n_cols + 1, k % n_cols + 1) for k in range(len(metrics))])
    fig.update_xaxes(title_text="Number of bins", row=n_rows_grid)
    fig.update_yaxes(rangemode="tozero")
    return _base_layout(fig, height=300 * n_rows_grid + 120, title=title, panel_titles=True)


def _add_marks(fig: go.Figure, marks: Mapping[str, float] | None, cells: Sequence[tuple[int, int]]) -> None:
    """Vertical reference lines in every panel, each explained by a legend entry (no overlapping labels)."""
    for j, (label, position) in enumerate((marks or {}).items()):
        line = dict(color=("#333333", "#8c8c8c")[j % 2], dash=("dash", "dashdot")[j % 2], width=1.2)
        for row, col in cells:
            fig.add_vline(x=position, row=row, col=col, line=line)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, name=f"{label} = {position:g}",
                                 legendgroup=f"mark-{j}", hoverinfo="skip"), row=cells[0][0], col=cells[0][1])


def rank_figure(ranks: pd.DataFrame, spearman: pd.DataFrame | None = None, *,
                marks: Mapping[str, float] | None = None, title: str | None = None) -> go.Figure:
    """Heatmap of the models' ranks at every bin count (1 = lowest error), Spearman's rho below.

    Parameters
    ----------
    ranks : pandas.DataFrame
        ``BinRanking.ranks`` restricted to one metric and binning.
    spearman : pandas.DataFrame, optional
        ``BinRanking.spearman`` for the same metric and binning: a second
        row shows rho against the reference bin count.
    marks : mapping of label to bin count, optional
        Vertical reference lines.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    names = list(dict.fromkeys(ranks["model"]))
    bins = np.sort(ranks["n_bins"].unique())
    z = ranks.pivot(index="model", columns="n_bins", values="rank").reindex(index=names, columns=bins)
    values = ranks.pivot(index="model", columns="n_bins", values="value").reindex(index=names, columns=bins)
    with_rho = spearman is not None and len(spearman) > 0
    fig = make_subplots(rows=2 if with_rho else 1, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[0.68, 0.32] if with_rho else None)
    n_models = max(len(names), 1)
    fig.add_trace(go.Heatmap(
        x=bins, y=[plot_text(n) for n in names], z=z.to_numpy(dtype=float), zmin=1, zmax=max(n_models, 2),
        colorscale=[[0.0, "#1a9850"], [0.5, "#fee08b"], [1.0, "#d73027"]],
        customdata=values.to_numpy(dtype=float), xgap=0, ygap=2,
        colorbar=dict(title="Rank", tickvals=list(range(1, n_models + 1)), len=0.6 if with_rho else 1,
                      y=1, yanchor="top"),
        hovertemplate="<b>%{y}</b><br>%{x} bins: rank %{z}<br>value %{customdata:.4f}<extra></extra>",
    ), row=1, col=1)
    if with_rho:
        ordered = spearman.sort_values("n_bins")
        reference = int(ordered["reference_n_bins"].iloc[0])
        fig.add_trace(go.Scatter(
            x=ordered["n_bins"], y=ordered["rho"], mode="lines", line=dict(color="#333333", width=1.5),
            name=f"Spearman rho vs {reference} bins", showlegend=False,
            hovertemplate=f"%{{x}} bins: rho = %{{y:.2f}} against {reference} bins<extra></extra>",
        ), row=2, col=1)
        fig.update_yaxes(range=[-1.08, 1.08], title_text=f"rho vs {reference} bins", row=2, col=1)
    _add_marks(fig, marks, [(r, 1) for r in range(1, 3 if with_rho else 2)])
    fig.update_yaxes(autorange="reversed", ticksuffix="  ", row=1, col=1)
    fig.update_xaxes(title_text="Number of bins", row=2 if with_rho else 1, col=1)
    return _base_layout(fig, height=max(260, 46 * n_models + 120) + (170 if with_rho else 0), title=title)


# ----------------------------------------------------------------------------- metrics

def metric_interval_figure(table: pd.DataFrame, *, colors: Mapping[str, int] | None = None,
                           title: str | None = None) -> go.Figure:
    """Estimates with bootstrap intervals of the calibration errors, models side by side.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`studio.compute.estimates_table` output (intervals filled); only rows with
        ``calibration_error`` and ``probability_scale`` true are drawn (they
        share ECE's 0..1 scale; squared errors and divergences would squash them).
    colors : mapping of model name to colour index, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    on_scale = table["calibration_error"].astype(bool)
    if "probability_scale" in table:
        on_scale &= table["probability_scale"].astype(bool)
    part = table[on_scale]
    names = list(dict.fromkeys(part["model"]))
    palette = _colors(names, colors)
    fig = go.Figure()
    for name in names:
        rows = part[part["model"] == name]
        est = rows["estimate"].to_numpy(dtype=float)
        low, high = rows["ci_low"].to_numpy(dtype=float), rows["ci_high"].to_numpy(dtype=float)
        has_ci = np.isfinite(low) & np.isfinite(high)
        label = plot_text(name)
        fig.add_trace(go.Scatter(
            x=rows["metric"], y=est, mode="markers", name=label,
            marker=dict(color=palette[name], size=10, symbol="diamond"),
            error_y=dict(type="data", array=np.where(has_ci, high - est, 0), arrayminus=np.where(has_ci, est - low, 0),
                         visible=bool(has_ci.any()), color=palette[name], thickness=1.5, width=5),
            customdata=np.column_stack([low, high]),
            hovertemplate=(f"<b>{label}</b><br>%{{x}}: %{{y:.4f}}"
                           "<br>interval [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra></extra>"),
        ))
    fig.update_layout(scattermode="group", scattergap=0.6)
    metrics = list(dict.fromkeys(part["metric"]))
    ticks, note = _short_metric_names(metrics)
    fig.update_xaxes(tickmode="array", tickvals=metrics, ticktext=ticks, automargin=True,
                     title=dict(text=note, standoff=12, font=dict(size=12)))
    fig.update_yaxes(rangemode="tozero", title_text="Calibration error (lower is better)")
    return _base_layout(fig, height=380, title=title)


def _short_metric_names(names: Sequence[str]) -> tuple[list[str], str]:
    """Tick labels without the parenthesised qualifiers, and one line saying each qualifier once.

    ``"ICI (binary: class 1; K > 2: one-vs-rest mean)"`` becomes ``"ICI"`` and the note
    ``"ICI, E50, E90: binary: class 1; K > 2: one-vs-rest mean"`` (spelled out side by side, the long
    names ran into each other). A name whose short form another name already has keeps its qualifier.
    """
    short = [name.split(" (", 1)[0] if name.endswith(")") else name for name in names]
    counts = {label: short.count(label) for label in short}
    qualifiers: dict[str, list[str]] = {}
    ticks = []
    for name, label in zip(names, short):
        if label == name or counts[label] > 1:
            ticks.append(plot_text(name))
            continue
        ticks.append(plot_text(label))
        qualifiers.setdefault(name[len(label) + 2:-1], []).append(label)
    note = "<br>".join(f"{plot_text(', '.join(labels))}: {plot_text(qualifier)}"
                       for qualifier, labels in qualifiers.items())
    return ticks, note
