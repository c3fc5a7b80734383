"""Bin sensitivity: binned errors against the number of bins, and whether the models' ranking flips."""
import pandas as pd
import streamlit as st

from calib_core.io import demo_datasets
from calib_core.metrics.sensitivity import SENSITIVITY_METRICS
from studio import compute, downloads, layout, state
from calib_core.plot import figures
from calib_core.plot.draw import BIN_COUNTS, BINNINGS
from studio.text import md
from studio.weights_reasons import weighted_size

TITLES = {"ece": "ECE", "ace": "ACE", "sce": "SCE", "tace": "TACE"}


def _add_siblings(prefix: str) -> None:
    loaded = {entry.demo for entry in state.get_entries().values() if entry.origin == "demo"}
    for name in demo_datasets():
        if name.startswith(prefix) and name not in loaded:
            state.add_demo(name)


models = layout.setup_page("Bin sensitivity")
st.title("Bin sensitivity")
st.markdown(
    "A binned calibration error depends on the bins as much as on the model. Each panel shows one metric "
    "for 2 to 200 bins, **solid** with uniform-width bins and **dotted** with adaptive (equal-mass) bins. "
    "The canonical definitions are ECE and SCE with uniform bins, ACE and TACE with adaptive ones; the other "
    "line applies the same formula to the other kind of bins. Vertical lines mark `optimal_n_bins(N)` "
    "(Futami & Fujisawa 2024) and N^(1/3)."
)
layout.require_models(models)
models = layout.class_models(
    models, "Bin sensitivity", "it recomputes the K-class binned errors (top label, class-wise, ACE), which on a "
    "confidence model's two columns would fold a confidence of 0.3 onto 0.7; the Metrics page has its ECE at 10 "
    "and 15 bins, equal-width and equal-mass.")

metric_col, binning_col, range_col = st.columns([3, 2, 3])
metrics = layout.linked(metric_col.multiselect, "Metrics", list(SENSITIVITY_METRICS), format_func=TITLES.get,
                        default=list(SENSITIVITY_METRICS), key="metrics")
binnings = layout.linked(binning_col.multiselect, "Binnings", list(BINNINGS), default=list(BINNINGS), key="binnings")
low, high = layout.linked(range_col.slider, "Bin counts shown", 2, 200, value=(2, 200), key="counts")
if not metrics or not binnings:
    st.error("Choose at least one metric and one binning above to draw the curves.")
    st.stop()

tables = layout.run_with_progress(
    "Sweeping 199 bin counts",
    lambda report: compute.sensitivity_tables(models, bin_counts=BIN_COUNTS, metrics=SENSITIVITY_METRICS,
                                              binnings=BINNINGS, on_progress=report),
)
# N of a weighted model is its summed weight, as in its curves (integer weights: the repeated rows).
sizes = {m.name: weighted_size(m.predictions) for m in models}
n_ref = min(sizes.values())
marks = figures.bin_marks(n_ref)
if len(set(sizes.values())) > 1:
    st.caption(f"The models have different numbers of rows (a weighted model: its summed weight); the marks use "
               f"the smallest, N = {n_ref:,}.")

combined = pd.concat([t.assign(model=name) for name, t in tables.items()], ignore_index=True)
shown = combined[combined["metric"].isin(metrics) & combined["binning"].isin(binnings)
                 & combined["n_bins"].between(low, high)]
st.plotly_chart(figures.sensitivity_figure(shown, marks={k: v for k, v in marks.items() if low <= v <= high},
                                           colors=state.model_colors()),
                theme=None, key="sensitivity_chart", config=downloads.chart_config("Bin-sensitivity", *tables))
st.caption(f"N = {n_ref:,}: optimal_n_bins(N) = {marks['optimal_n_bins(N)']:g}, N^(1/3) = {marks['N^(1/3)']:g}.")
downloads.report_button("sensitivity", models)

st.subheader("Does the ranking of the models depend on the bins?")
if len(models) < 2:
    st.info("Load at least two models to see how their ranking changes with the number of bins.")
    demo = next((entry.demo for entry in state.get_entries().values() if entry.origin == "demo"), None)
    if demo:
        prefix = demo.split("_")[0] + "_"
        st.button(f"Compare with the other {prefix[:-1]} demo models", on_click=_add_siblings, args=(prefix,),
                  icon=":material/add:")
    st.stop()

reference = layout.linked(st.select_slider, "Compare every ranking with the ranking at", BIN_COUNTS, value=15,
                          key="reference",
                             format_func=lambda n: f"{n} bins")
key = (tuple((m.name, m.fingerprint) for m in models), BIN_COUNTS, SENSITIVITY_METRICS, BINNINGS)
result = compute.ranking(tables, key, reference)

flips = result.flips
summary_rows = []
for metric in metrics:
    for binning in binnings:
        part = flips[(flips["metric"] == metric) & (flips["binning"] == binning)]
        rho = result.spearman[(result.spearman["metric"] == metric) & (result.spearman["binning"] == binning)]["rho"]
        summary_rows.append({"metric": TITLES[metric], "binning": binning, "order changes": len(part),
                             "first change at": int(part["n_bins"].iloc[0]) if len(part) else None,
                             f"lowest rho vs {reference} bins": rho.min()})
summary = pd.DataFrame(summary_rows)
st.dataframe(summary, hide_index=True, width="stretch",
             column_config={"first change at": st.column_config.NumberColumn(format="%d bins"),
                            f"lowest rho vs {reference} bins": st.column_config.NumberColumn(format="%.2f")})

pick_metric, pick_binning = st.columns(2)
metric = layout.linked(pick_metric.selectbox, "Ranking by", metrics, format_func=TITLES.get, index=0,
                       key="rank_by", options=metrics)
binning = layout.linked(pick_binning.radio, "with bins", binnings, horizontal=True, index=0, key="rank_binning",
                        options=binnings)
chosen = (result.ranks["metric"] == metric) & (result.ranks["binning"] == binning)
ranks = result.ranks[chosen & result.ranks["n_bins"].between(low, high)]
spearman = result.spearman[(result.spearman["metric"] == metric) & (result.spearman["binning"] == binning)
                           & result.spearman["n_bins"].between(low, high)]
changes = flips[(flips["metric"] == metric) & (flips["binning"] == binning)]
if changes.empty:
    st.success(f"By {TITLES[metric]} with {binning} bins the models keep the same order at every bin count "
               f"from 2 to 200: {result.ranks[chosen].sort_values(['n_bins', 'rank']).head(len(models))['model'].map(md).str.cat(sep=' < ')}.")
else:
    listed = "; ".join(f"at {row.n_bins} bins: {md(row.order)}" for row in changes.head(6).itertuples())
    more = f" and {len(changes) - 6} more" if len(changes) > 6 else ""
    st.warning(f"By {TITLES[metric]} with {binning} bins the ranking flips {len(changes)} "
               f"time{'s' if len(changes) > 1 else ''} between 2 and 200 bins ({listed}{more}). "
               "Best (lowest) first.")
st.plotly_chart(figures.rank_figure(ranks, spearman, marks={k: v for k, v in marks.items() if low <= v <= high}),
                theme=None, key="rank_chart",
                config=downloads.chart_config("Bin-sensitivity", "ranks", metric, binning))
with st.expander("Every order change"):
    st.dataframe(flips[flips["metric"].isin(metrics) & flips["binning"].isin(binnings)], hide_index=True,
                 width="stretch")
