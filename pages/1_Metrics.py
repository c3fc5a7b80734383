"""Metrics: every registered metric for every loaded model, with bootstrap intervals."""
import streamlit as st

import calib_core as cc
from studio import compute, figures, layout, state
from studio.layout import default

models = layout.setup_page("Metrics", ":material/table_chart:")
st.title("Metrics")
st.markdown(
    "Every metric for every model, with a percentile bootstrap interval: the rows are resampled with "
    "replacement, and one seed draws the same resamples for every metric, so the intervals are comparable. "
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
                            format_func=lambda n: "none (no intervals)" if n == 0 else f"{n:,}")
level = level_col.selectbox("Interval", [0.90, 0.95, 0.99], key=default("keep:metrics.level", 0.95),
                            format_func=lambda p: f"{p:.0%}")
seed = seed_col.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1,
                             key=default("keep:metrics.seed", 0))

table = layout.run_with_progress(
    "Bootstrapping the metrics",
    lambda report: compute.metrics_table(models, n_bins=n_bins, binning=binning, n_boot=int(n_boot),
                                         seed=int(seed), alpha=round(1 - level, 10), on_progress=report),
)
notes = {spec.label: spec for spec in cc.METRICS}
large = [m for m in models if cc.skipped_quadratic(m.predictions.n_samples)]
if large:
    st.info(f"{', '.join(m.name for m in large)}: more than {cc.MAX_QUADRATIC_ROWS:,} rows, so the O(N²) kernel "
            "metrics (SKCE, CE_KL, CE₂²) are left out here; the **Estimators** page computes them on subsamples "
            "with intervals.")

st.subheader("Overview")
wide = table.pivot(index="model", columns="metric", values="estimate").reindex(
    index=list(dict.fromkeys(table["model"])), columns=list(notes))
st.dataframe(
    wide, width="stretch",
    column_config={label: st.column_config.NumberColumn(label, help=spec.summary, format="%.4f")
                   for label, spec in notes.items()},
)

st.subheader("Estimates and intervals")
shown = table[["model", "metric", "estimate", "ci_low", "ci_high", "std", "n_bins", "binning", "rows"]]
st.dataframe(
    shown, hide_index=True, width="stretch", height=min(36 * (len(shown) + 1) + 3, 720),
    column_config={
        "model": st.column_config.TextColumn("Model"),
        "metric": st.column_config.TextColumn("Metric"),
        "estimate": st.column_config.NumberColumn("Estimate", format="%.4f"),
        "ci_low": st.column_config.NumberColumn(f"{level:.0%} low", format="%.4f"),
        "ci_high": st.column_config.NumberColumn(f"{level:.0%} high", format="%.4f"),
        "std": st.column_config.NumberColumn("Bootstrap SE", format="%.4f",
                                             help="Standard deviation of the resampled values."),
        "n_bins": st.column_config.NumberColumn("Bins"),
        "binning": st.column_config.TextColumn("Binning"),
        "rows": st.column_config.TextColumn("Rows"),
    },
)
st.download_button("Download as CSV", table.to_csv(index=False).encode("utf-8"),
                   file_name="calibration_metrics.csv", mime="text/csv", on_click="ignore",
                   icon=":material/download:")

st.subheader("Calibration errors with intervals")
st.caption("Errors on the probability scale of ECE; squared errors and divergences (SKCE, CE_KL, CE₂²) are in "
           "the tables above and on the Estimators page.")
st.plotly_chart(figures.metric_interval_figure(table, colors=state.model_colors()), theme=None,
                key="metrics_chart")

st.subheader("What each metric measures")
for spec in cc.METRICS:
    settings = ("bin count and binning" if spec.uses_binning else "bin count" if spec.uses_bins
                else "no bins")
    st.markdown(f"**{spec.label}** ({settings}). {spec.summary}  \n*Pitfalls:* {spec.pitfalls}")
