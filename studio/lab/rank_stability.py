"""The Lab's rank-stability tab: does the bin count decide which model looks better calibrated?"""
import pandas as pd
import streamlit as st

from calib_core import CalibrationInputError
from studio import compute_lab as cl
from studio import downloads, layout
from calib_core.plot.figures_lab import correlation_heatmap, variant_heatmap
from studio.lab.jobs import data_page_link
from studio.text import md


def rank_stability(models) -> None:
    st.markdown(
        "Does the bin count decide which model looks better calibrated? For each of the 32 variants of the "
        "general calibration error (GCE: binning, top label or all classes, per class or pooled, threshold, "
        "norm) the loaded models are ranked at every bin count, and the ranks at two bin counts are compared "
        "with Spearman's ρ (Nixon et al. 2019, section 5.3). 1: the ranking never changes; values near 0 or "
        "below: the bin count decides the winner.")
    if len(models) < 2:
        st.info("Load at least two models on the Data page (or show them in the sidebar) to compare their ranking "
                "across bin counts.", icon=":material/info:")
        data_page_link()
        return
    low, high = layout.linked(st.slider, "Bin counts", 2, 100, value=(10, 50), key="lab_rank_bins",
                              help="Every bin count in this range is used (Nixon et al.: 10 to 50).")
    if high <= low:
        st.error("Choose a range of at least two bin counts.", icon=":material/error:")
        return
    bar = None
    if not cl.rank_stability_is_stored(models, low, high):
        bar = st.progress(0.0, text=f"Ranking {len(models)} models under 32 GCE variants × {high - low + 1} "
                                    "bin counts …")
    try:
        result = cl.rank_stability(models, low, high, on_progress=(
            (lambda done, total: bar.progress(done / total, text=f"GCE variant {done} of {total} …"))
            if bar is not None else None))
    except CalibrationInputError as exc:
        st.error(f"The rank stability could not be computed: {md(exc)} Check the loaded models on the Data page.",
                 icon=":material/error:")
        return
    if bar is not None:
        bar.empty()
    by_property = result.by_property.set_index(["property", "setting"])["mean_spearman"]
    cells = st.columns(4)
    for cell, (prop, setting, label) in zip(cells, [("binning", "adaptive", "Adaptive bins"),
                                                    ("binning", "uniform", "Uniform bins"),
                                                    ("max_prob", "True", "Top label only"),
                                                    ("max_prob", "False", "All classes")]):
        value = by_property.get((prop, setting))
        cell.metric(f"Mean ρ, {label.lower()}", "–" if value is None or pd.isna(value) else f"{value:.2f}",
                    help="Mean over the 16 variants with this setting (Nixon et al. report adaptive 0.59, "
                         "uniform 0.37 on CIFAR-10).")
    table = result.table.copy()
    table.insert(1, "GCE variant", [cl.variant_name(row) for _, row in table.iterrows()])
    st.plotly_chart(variant_heatmap(table), theme=None, key="lab_rank_heatmap",
                    config=downloads.chart_config("Lab", *(m.name for m in models), "rank-stability",
                                                  f"{low}-{high} bins"))
    if len(models) == 2:
        st.caption("With two models every correlation is +1 (same winner) or −1 (the winner flips), so the mean "
                   "says how often the bin count flips it. Load more models for a finer picture.")
    st.dataframe(table[["variant", "GCE variant", "mean_spearman", "min_spearman", "pairs"]].rename(
        columns={"mean_spearman": "mean ρ", "min_spearman": "min ρ", "pairs": "pairs of bin counts"}),
        hide_index=True, width="stretch",
        column_config={"mean ρ": st.column_config.NumberColumn(format="%.3f"),
                       "min ρ": st.column_config.NumberColumn(format="%.3f")})
    names = list(table["GCE variant"])
    least_stable = int(table["mean_spearman"].fillna(2.0).to_numpy().argmin())
    variants = list(range(len(names)))
    chosen = layout.linked(st.selectbox, "Correlations between bin counts of one variant", variants,
                           format_func=lambda i: names[i], index=least_stable, key="lab_rank_variant",
                           options=variants, help="At first the least stable variant.")
    st.plotly_chart(correlation_heatmap(result.correlations[int(chosen)], result.bin_counts,
                                        title=names[int(chosen)]), theme=None, key="lab_rank_matrix",
                    config=downloads.chart_config("Lab", *(m.name for m in models), "bin-count-correlations",
                                                  names[int(chosen)], f"{low}-{high} bins"))
