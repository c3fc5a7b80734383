"""Large tables: evaluate with the command line, then view its summary JSON here (no rows uploaded)."""
import json

import pandas as pd
import streamlit as st

from calib_core.io.export import csv_bytes
from studio import compute_summary, downloads, layout
from calib_core.plot import figures
from studio.text import md

layout.setup_page("Large tables")
st.title("Tables too large to upload")

upload_limit = int(st.get_option("server.maxUploadSize"))
st.markdown(
    f"A browser upload is limited to **{upload_limit} MB per file** and is held in memory as a whole. "
    "Binned calibration statistics are sums over rows, so a table of any size can be evaluated exactly in "
    "one streaming pass on your machine (or on a Dask cluster), and only the **summary** (per-bin sums, "
    "no rows) comes here:"
)
st.code(
    "pip install .                                   # from a clone of this repository\n"
    "calib-core report predictions.parquet --engine stream --json > summary.json\n"
    "calib-core report 'preds/*.parquet' --engine dask --scheduler tcp://scheduler:8786 --json > summary.json\n"
    "calib-core report predictions.parquet --engine stream --weight-column w --json > summary.json  # row weights",
    language="bash",
)
st.caption("A folder or glob of CSV/Parquet files is read in record batches (`--batch-rows`); memory stays "
           "bounded whatever the row count. `--engine auto` streams inputs over 200 MB. Upload the JSON below "
           "to see its reliability diagrams, per-class bars and bin sensitivity (uniform bins). "
           "Running the studio on your own machine instead? `streamlit run app.py --server.maxUploadSize 1000` "
           f"raises the {upload_limit} MB limit to 1,000 MB (the file is then held in the server's memory, a few "
           "times its size once read; `docs/deploy.md`).")

upload_col, demo_col = st.columns([3, 2])
uploaded = upload_col.file_uploader("Summary JSON from `calib-core report --json`", type=["json"],
                                    key="summary_upload")
use_demo = layout.linked(demo_col.toggle, "Show the summary of the demo model", value=True, key="summary_demo",
                         help="The same summary the command line writes, computed from the default demo.")

summary = None
if uploaded is not None:
    try:
        summary = compute_summary.read_summary(uploaded.getvalue())
    except compute_summary.SUMMARY_ERRORS as exc:
        st.error(f"**{md(uploaded.name)}** could not be read: {md(exc)} Upload the file that "
                 "`calib-core report PATH --json` printed (or its `statistics` entry).")
elif use_demo:
    summary = compute_summary.demo_summary()
if summary is None:
    st.info("Upload a summary JSON, or switch on the demo model's summary, to see the diagrams.")
    st.stop()

# Everything read from the JSON (file names, engine, warnings) was written by someone else: plain text.
source = ", ".join(md(f) for f in summary.files) or "demo predictions"
st.markdown(f"**{source}**: N = {summary.n_samples:,} rows, K = {summary.n_classes} classes, "
            f"{md(summary.input_kind or 'probabilities')}; engine {md(summary.engine or 'memory')}; "
            f"{'exact' if summary.exact else 'approximate (quantile sketch)'} statistics"
            + (f"; weighted by column **{md(summary.weight_column)}** (summed weight W = {summary.sum_weight:,.6g}: "
               "every count below is a summed weight)." if summary.weight_column else "."))
for warning in summary.warnings:
    st.warning(md(warning))
if not summary.exact and summary.error_bounds:
    st.caption("Error bounds of the one-pass estimates: "
               + ", ".join(f"{md(k)} ± {v:.2g}" for k, v in summary.error_bounds.items()))

metrics = pd.DataFrame({"metric": list(summary.metrics), "value": list(summary.metrics.values())})
st.dataframe(metrics, hide_index=True, column_config={"value": st.column_config.NumberColumn(format="%.6f")})
st.download_button("Download metrics as CSV", csv_bytes(metrics), file_name="summary_metrics.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")

st.subheader("Reliability")
summary_name = uploaded.name.removesuffix(".json") if uploaded is not None else "demo-summary"  # chart file names
bins_col, binning_col, target_col = st.columns(3)
bin_choices = compute_summary.bin_choices(summary)
n_bins = layout.linked(bins_col.selectbox, "Number of bins", bin_choices, index=bin_choices.index(summary.n_bins),
                       key="summary_bins", options=bin_choices)
binnings = compute_summary.binning_choices(summary, n_bins)
binning = layout.linked(binning_col.radio, "Bins", binnings, horizontal=True, index=binnings.index("uniform"),
                        key="summary_binning", options=binnings,
                        help="Adaptive bins are kept only for the bin count the report ran with.")
targets = ["top_label", *range(summary.n_classes)]
target = layout.linked(target_col.selectbox, "Event", targets, index=0, key="summary_event", options=targets,
                       format_func=lambda t: "Top label" if t == "top_label"
                       else f"Class {t}: {summary.class_names[t]}")
table = summary.reliability_table(target, n_bins, binning)
st.plotly_chart(figures.reliability_figure({"summary": table}, histogram_log=target != "top_label",
                                           n_rows={"summary": summary.n_samples}),
                theme=None, key="summary_reliability",
                config=downloads.chart_config("Large-tables", summary_name, "reliability",
                                              "top-label" if target == "top_label"
                                              else f"class {summary.class_names[target]}", n_bins, binning))

st.subheader("Per class")
st.plotly_chart(figures.per_class_figure({"summary": compute_summary.per_class(summary, n_bins, binning)}),
                theme=None, key="summary_per_class",
                config=downloads.chart_config("Large-tables", summary_name, "per-class", n_bins, binning))

st.subheader("Bin sensitivity (uniform bins)")
sensitivity = summary.bin_sensitivity(metrics=("ece", "sce")).assign(model="summary")
st.plotly_chart(figures.sensitivity_figure(sensitivity), theme=None, key="summary_sensitivity",
                config=downloads.chart_config("Large-tables", summary_name, "bin-sensitivity", "uniform"))
with st.expander("Summary JSON"):
    st.code(json.dumps({k: summary.metrics[k] for k in summary.metrics}, indent=2), language="json")
