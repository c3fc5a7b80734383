"""Reliability: observed frequency against confidence per bin, with intervals and a histogram."""
import pandas as pd
import streamlit as st

from calib_core.io.export import csv_bytes
from studio import compute, compute_estimators, compute_simplex, downloads, layout, state
from calib_core.plot import figures, figures_estimators
from studio.selective_section import selective_section
from studio.text import md

models = layout.setup_page("Reliability")
st.title("Reliability diagram")
st.markdown(
    "Each point is one bin: the mean predicted probability of its rows (x) against how often the event "
    "happened (y), with a 95% Wilson interval. Points below the diagonal mean **over-confidence**. "
    "The bars underneath show how many rows fall in each bin."
)
layout.require_models(models)

max_classes = max(m.predictions.n_classes for m in models)
class_names: dict[int, str] = {}
for model in models:
    for k, name in enumerate(model.predictions.class_names):
        class_names.setdefault(k, name)

target_col, binning_col, bins_col, layout_col, style_col, log_col = st.columns([3, 2, 3, 2, 2, 2])
targets = ["top_label", *range(max_classes)]
target = layout.linked(
    target_col.selectbox, "Event", targets, index=0, key="event", options=targets,
    format_func=lambda t: "Top label" if t == "top_label"
    else f"Class {t}: {class_names[t]}",
    help="Top label bins each row's highest probability against whether that class is correct; "
         "a class bins that class's probability against whether the row belongs to it."
         + (" Type to search the class names." if max_classes > figures.MANY_CLASSES else ""),
    **({"filter_mode": "contains"} if max_classes > figures.MANY_CLASSES else {}))
binning = layout.linked(binning_col.radio, "Bins", ["uniform", "adaptive"], index=0, key="binning",
                        horizontal=True, help="Uniform: equal widths. Adaptive: equal numbers of rows.")
n_bins = layout.linked(bins_col.slider, "Number of bins", 2, 50, value=15, key="bins")
arrangement = layout.linked(layout_col.radio, "Models", ["overlay", "side_by_side"], horizontal=True,
                               index=0, key="layout",
                               format_func={"overlay": "overlaid", "side_by_side": "side by side"}.get,
                               disabled=len(models) < 2)
style = layout.linked(style_col.radio, "Draw bins as", ["points", "bars"], horizontal=True, index=0, key="style")
histogram_log = layout.linked(log_col.toggle, "Log scale", value=False, key="log",
                               help="Log-scale the histogram: useful when almost every row falls into one bin.")

usable = [m for m in models if target == "top_label" or target < m.predictions.n_classes]
skipped = [m.name for m in models if m not in usable]
if skipped:
    st.info(f"{', '.join(md(name) for name in skipped)} {'has' if len(skipped) == 1 else 'have'} no class {target}; "
            "choose another event to include them.")
tables = {m.name: compute.reliability(m.predictions, m.fingerprint, n_bins, binning, target) for m in usable}
stated = any(m.predictions.kind == "confidence" for m in usable)
figure = figures.reliability_figure(
    tables, layout=arrangement if len(tables) > 1 else "overlay", style=style, colors=state.model_colors(),
    x_title=figures.event_axis_title(target, class_names, stated), n_rows={m.name: m.predictions.n_samples for m in usable},
    histogram_log=histogram_log,
)
band_col, band_draws_col, lens_col, smooth_col = st.columns([3, 2, 3, 3])
show_bands = layout.linked(
    band_col.toggle, "Consistency bands", value=False, key="bands",
    help="Red bars: where each bin's observed frequency falls (5th-95th percentile) when labels are drawn from "
         "the predictions themselves, i.e. for a perfectly calibrated model (Vaicenavicius et al. 2019, "
         "Figures 8-15). A point outside its bar is unlikely to be noise.")
band_draws = layout.linked(band_draws_col.selectbox, "Resamples", [200, 500, 1000], index=0, key="draws",
                           disabled=not show_bands)
show_lenses = layout.linked(
    lens_col.toggle, "Canonical / max lens estimates", value=False, key="lenses",
    help="Expected miscalibration of the whole predicted distribution (canonical lens) and of the top label "
         "(max lens), with the value expected under perfect calibration (Vaicenavicius et al. 2019, Tables 3-5).")
show_smooth = layout.linked(
    smooth_col.toggle, "Smoothed curve (smECE)", value=False, key="smooth", disabled=target != "top_label",
    help="Kernel-smoothed reliability curve of the top label with a 95% bootstrap band and its smooth ECE "
         "(Blasiok & Nakkiran 2023): no bins to choose.")
if show_smooth and target == "top_label":
    curves = {m.name: compute_estimators.smooth_curve(m.predictions, m.fingerprint, None, 200, 0) for m in usable}
    figures_estimators.add_smooth_overlay(figure, curves, colors=state.model_colors())
if show_bands:
    bands = {m.name: compute_simplex.reliability_bands(m.predictions, m.fingerprint, n_bins, binning, target,
                                                       band_draws, 0) for m in usable}
    figures.add_consistency_bands(figure, bands, layout=arrangement if len(tables) > 1 else "overlay")
st.plotly_chart(figure, theme=None, key="reliability_chart",
                config=downloads.chart_config("Reliability", *[m.name for m in models], n_bins, binning))
if show_smooth and target == "top_label":
    st.caption(figures_estimators.SMOOTH_RANGE_NOTE)
downloads.report_button("reliability", models, n_bins=n_bins, binning=binning)
if show_bands:
    outside = {name: int(band.outside.sum()) for name, band in bands.items()}
    st.caption("Bins outside their consistency band: "
               + ", ".join(f"{md(name)}: {count} of {len(bands[name].count)}" for name, count in outside.items())
               + f" ({band_draws} label draws from the predictions, seed 0). Each band holds 90% of a calibrated "
               "model's frequencies, so about 1 bin in 10 falls outside by chance; for a verdict on the whole "
               "model see the lens estimates below or the Simplex page.")

summary = st.columns(min(len(tables), 4) or 1)
for i, m in enumerate(usable):
    label = "ECE" if target == "top_label" else f"Class-{md(class_names[target])} ECE"
    error = compute.reliability_ece(m.predictions, m.fingerprint, n_bins, binning, target)
    summary[i % len(summary)].metric(f"{md(m.name)}: {label} ({n_bins} {binning} bins)", f"{error:.4f}",
                                     help="Sum over bins of (share of rows) × |confidence − frequency|.")

with st.expander("Per-bin table"):
    for name, table in tables.items():
        st.markdown(f"**{md(name)}**")
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in
                                    ("lower", "upper", "weight", "mean_confidence", "observed_frequency", "gap",
                                     "ci_low", "ci_high")})
        st.download_button(f"Download {md(name)} bins as CSV", csv_bytes(table),
                           file_name=f"reliability_{name}.csv", mime="text/csv", on_click="ignore",
                           key=f"reliability_download:{name}", icon=":material/download:")

if show_lenses:
    st.subheader("Lens estimates (Vaicenavicius et al. 2019, Tables 3-5)")
    st.markdown(
        "Expected miscalibration over a partition of the simplex: the **canonical** lens looks at the whole "
        "predicted distribution, the **max** lens at the top label only. *Under calibration* is the value the "
        "estimator gives when labels are drawn from the predictions (its bias for a perfectly calibrated "
        "model); the p-value says how unusual the estimate is for a calibrated model, and the verdict reads it. "
        "Bootstrap s.d.: 50 resamples."
    )
    lens_bins_col, lens_size_col = st.columns(2)
    lens_bins = layout.linked(lens_bins_col.slider, "Bins per coordinate (uniform partition)", 2, 20, value=10,
                              key="lens_bins")
    lens_min_size = layout.linked(lens_size_col.number_input, "Minimum cell size (data-dependent partition)", 10,
                                  100_000, value=100, key="min_cell", step=10)
    rows = []
    for model in models:
        frame = compute_simplex.lens_table(model.predictions, model.fingerprint, lens_bins, int(lens_min_size),
                                           200, 50, 0)
        rows.append(frame.assign(model=model.name))
    lens_frame = pd.concat(rows, ignore_index=True)[
        ["model", "lens", "distance", "partition", "verdict", "estimate", "p_value", "resampled_mean", "estimate_sd",
         "resampled_sd", "verdict_reason"]]
    st.dataframe(lens_frame, hide_index=True, width="stretch", column_config={
        "estimate_sd": st.column_config.NumberColumn("bootstrap s.d.", format="%.4f"),
        "resampled_mean": st.column_config.NumberColumn("under calibration", format="%.4f"),
        "resampled_sd": st.column_config.NumberColumn("s.d. under calibration", format="%.4f"),
        "estimate": st.column_config.NumberColumn(format="%.4f"),
        "p_value": st.column_config.NumberColumn("p-value", format="%.3f"),
        "verdict": st.column_config.TextColumn("verdict (α = 0.05)"),
        "verdict_reason": st.column_config.TextColumn("why", width="large"),
    })
    st.caption("Verdicts from calib_core (ConsistencyResult.verdict): an estimate below its calibrated band, or "
               "cells that mostly hold fewer than 5 rows, is inconclusive rather than a pass; hover a reason to "
               "read it whole.")

if layout.linked(st.toggle, "Selective prediction: risk-coverage curve and abstention threshold", value=False,
                 key="selective", help="Error rate among the most confident answers at each coverage, and a "
                                       "confidence threshold certified for a target error rate (top label)."):
    selective_section(models)
