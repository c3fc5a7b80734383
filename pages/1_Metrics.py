"""Metrics: every registered metric for every loaded model, with the interval each metric declares."""
import streamlit as st

import calib_core as cc
from studio import compute, figures, layout, state
from studio.layout import default
from studio.text import md

models = layout.setup_page("Metrics", ":material/table_chart:")
st.title("Metrics")
st.markdown(
    "Every metric for every model, named with the settings that change its value (bins, kernel bandwidth h), "
    "so a name means the same number here, on the Estimators page and in the command line. Each metric has the "
    "interval that suits its estimator (column *Interval*): a percentile bootstrap for the accuracy and the "
    "proper scores, the estimate ± z bootstrap standard errors for the biased binned and kernel errors (their "
    "resamples are biased further, so a percentile interval can miss the estimate), a variance formula for "
    "SKCE, none for the leave-one-out kernel estimates. One seed draws the same resamples for every metric. "
    "Click a column header to sort."
)
layout.require_models(models)

bins_col, binning_col, boot_col, level_col, seed_col = st.columns([3, 2, 2, 2, 2])
n_bins = bins_col.slider("Bins (binned metrics)", 2, 100, key=default("keep:metrics.n_bins", 15),
                         help="Number of bins of ECE, RMSCE, MCE, class-wise ECE, SCE, ACE and TACE.")
binning = binning_col.radio("Binning of ECE, RMSCE, MCE, class-wise ECE", ["uniform", "adaptive"],
                            key=default("keep:metrics.binning", "uniform"), horizontal=True,
                            help="SCE always uses uniform bins, ACE and TACE always adaptive ones.")
n_boot = boot_col.selectbox("Bootstrap resamples", [0, 100, 200, 500, 1000],
                            key=default("keep:metrics.n_boot", 200),
                            format_func=lambda n: "none (no bootstrap intervals)" if n == 0 else f"{n:,}",
                            help="For the metrics whose interval is a bootstrap; SKCE's variance-formula "
                                 "interval needs none.")
level = level_col.selectbox("Interval", [0.90, 0.95, 0.99], key=default("keep:metrics.level", 0.95),
                            format_func=lambda p: f"{p:.0%}")
seed = seed_col.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1,
                             key=default("keep:metrics.seed", 0))

table = layout.run_with_progress(
    "Computing the metrics and their intervals",
    lambda report: compute.metrics_table(models, n_bins=n_bins, binning=binning, n_boot=int(n_boot),
                                         seed=int(seed), alpha=round(1 - level, 10), on_progress=report),
)
names = {spec.key: cc.metric_name(spec.key, n_bins=n_bins, binning=binning) for spec in cc.METRICS}
large = [m for m in models if cc.skipped_quadratic(m.predictions.n_samples)]
if large:
    st.info(f"{md(', '.join(m.name for m in large))}: more than {cc.MAX_QUADRATIC_ROWS:,} rows, so "
            "the O(N²) kernel metrics (SKCE unbiased, CE_KL, CE₂²) are left out here; the **Estimators** page "
            "computes them on subsamples with intervals.")
missing = table[table["reason"] != ""]
if not missing.empty:
    lines = "\n".join(f"- {md(row.model)}, {md(row.name)}: {md(row.reason)}"
                      for row in missing.itertuples())
    st.warning("**Not available** (left empty in the tables; every other metric is computed as usual):\n\n"
               + lines, icon=":material/info:")

st.subheader("Overview")
# One row per metric (its name with its settings), one column per model.
wide = table.pivot(index="name", columns="model", values="estimate").reindex(
    index=[n for n in names.values() if n in set(table["name"])], columns=list(dict.fromkeys(table["model"])))
wide.index.name = "Metric (settings)"
st.dataframe(wide, width="stretch", height=min(36 * (len(wide) + 1) + 3, 720), placeholder="n/a",
             column_config={model: st.column_config.NumberColumn(model, format="%.4f") for model in wide.columns})

st.subheader("Estimates and intervals")
shown = table[["model", "metric", "key", "name", "estimate", "ci_low", "ci_high", "std", "interval", "n_bins",
               "binning", "rows", "reason"]]
st.dataframe(
    shown, hide_index=True, width="stretch", height=min(36 * (len(shown) + 1) + 3, 720),
    placeholder="–",  # a missing interval or value, not "None"
    column_order=["model", "name", "estimate", "ci_low", "ci_high", "std", "interval", "rows", "reason"],
    column_config={
        "model": st.column_config.TextColumn("Model"),
        "name": st.column_config.TextColumn("Metric (settings)", width="large"),
        "estimate": st.column_config.NumberColumn("Estimate", format="%.4f"),
        "ci_low": st.column_config.NumberColumn(f"{level:.0%} low", format="%.4f"),
        "ci_high": st.column_config.NumberColumn(f"{level:.0%} high", format="%.4f"),
        "std": st.column_config.NumberColumn("Std. error", format="%.4f",
                                             help="Bootstrap or variance-formula standard error."),
        "interval": st.column_config.TextColumn("Interval", width="medium",
                                                help="How the interval was made for this metric."),
        "rows": st.column_config.TextColumn("Rows"),
        "reason": st.column_config.TextColumn("Not available because", width="medium"),
    },
)
st.download_button("Download as CSV", cc.csv_bytes(table), file_name="calibration_metrics.csv", mime="text/csv",
                   on_click="ignore", icon=":material/download:")

st.subheader("Calibration errors with intervals")
st.caption(f"Errors on the probability scale of ECE, binned ones with {n_bins} bins ({binning} for ECE, RMSCE, MCE "
           "and class-wise ECE, uniform for SCE, adaptive for ACE and TACE), with the intervals of the table. "
           "Squared errors and divergences (SKCE, CE_KL, CE₂²) are in the tables above and on the Estimators page.")
st.plotly_chart(figures.metric_interval_figure(table, colors=state.model_colors()), theme=None,
                key="metrics_chart")

st.subheader("What each metric measures")
for spec in cc.METRICS:
    settings = ("bin count and binning" if spec.uses_binning else "bin count" if spec.uses_bins
                else "kernel bandwidth" if spec.bandwidth is not None else "no bins")
    interval = cc.registry.INTERVAL_METHODS[spec.interval]
    st.markdown(f"**{names[spec.key]}** ({settings}; interval: {interval}). {spec.summary}  \n"
                f"*Pitfalls:* {spec.pitfalls}")
