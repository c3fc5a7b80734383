"""Groups: is the model calibrated for every group of rows, or only on average? (calib_core.inference.groups)"""
import streamlit as st

from calib_core.inference.groups import MAX_GROUPS, MIN_GROUP_ROWS
from calib_core.metrics.registry import metric_name
from studio import compute_groups, downloads, layout
from calib_core.plot import figures_groups
from studio.text import md

METRICS = compute_groups.GROUP_METRICS
LAYOUTS = ["overlay", "small multiples"]
#: Reliability diagrams drawn at once (the largest groups, plus the worst).
MAX_DIAGRAMS = 8
SEED = 0

models = layout.setup_page("Groups")
st.title("Calibration by group")
st.markdown(
    "A model can be calibrated on average and miscalibrated for every group of users taken alone: the groups' "
    "errors cancel in the overall bins. Pick a group column (a site, a device, a demographic attribute) and see "
    "each group's calibration error with a 95 % bootstrap interval, which group is worst and by how much, and "
    "the groups' reliability diagrams."
)
layout.require_models(models)

names = [m.name for m in models]
model_col, metric_col, bins_col, boot_col = st.columns([3, 2, 3, 2])
chosen = layout.linked(model_col.selectbox, "Model", names, index=0, key="group_model", options=names)
view = next(m for m in models if m.name == chosen)
predictions = view.predictions

if predictions.groups is None:
    candidates = ", ".join(md(c) for c in predictions.attribute_columns)
    st.info(
        f"{md(chosen)} has no group column. To choose one, go to the **Data** page, open **Correct the column "
        "mapping** on this model's card, pick a **Group column** and press *Reload with these settings*. "
        + (f"Columns that can serve as the group: {candidates}." if candidates else
           "This file has no text or integer column besides the label, the split and the classes: add one "
           "(e.g. `site` or `group`) to the file and upload it again."),
        icon=":material/groups:",
    )
    st.stop()

METRICS = compute_groups.group_metrics(predictions)
metric = layout.linked(metric_col.radio, "Metric", list(METRICS), format_func=METRICS.get, horizontal=True,
                       index=0, key="group_metric" if predictions.kind == "classes" else "group_conf_metric",
                          help="ECE: uniform bins of the top-label confidence; ACE: adaptive (equal-mass) ranges "
                               "per class (Nixon et al. 2019).")
n_bins = layout.linked(bins_col.slider, "Number of bins", 2, 50, value=15, key="group_bins")
n_boot = layout.linked(boot_col.select_slider, "Bootstrap resamples", [0, 100, 200, 500, 1000], value=200,
                       key="group_boot",
                                help="Per group, for its interval; 0 leaves the intervals out.")
binning = "uniform" if metric == "ece" else "adaptive"
label = metric_name(metric, n_bins=n_bins, binning=binning)

#: With row weights a group's size, and a cell's, is its summed weight (whole weights: the repeated rows).
rows_word = "rows" if predictions.sample_weight is None else "weighted rows"


def size_text(n) -> str:
    """A row count, or a summed weight (two decimals unless whole)."""
    return f"{int(n)}" if float(n).is_integer() else f"{float(n):.2f}"


result = compute_groups.group_metric(predictions, view.fingerprint, metric, n_bins, binning, n_boot, SEED)
table = result.table
n_groups = len(table)
st.caption(md(f"Group column: {predictions.group_column} · {n_groups} groups · {predictions.n_samples:,} rows "
              f"({view.rows})"))
merged = [note for note in result.notes if "merged into" in note]
if merged:
    st.info(md(f"More than {MAX_GROUPS} groups: the {MAX_GROUPS - 1} largest are shown and the rest are merged "
               f"into one group. {merged[0]}"), icon=":material/merge:")

small = table[table["too_small"]]
if len(small):
    shown = ", ".join(f"{g} ({size_text(n)} {rows_word})" for g, n in zip(small["group"], small["n"]))
    st.warning(md(f"Too small to say anything: {shown}. With fewer than {MIN_GROUP_ROWS} {rows_word} (or fewer "
                  f"{rows_word} than bins) a group's {METRICS[metric]} is mostly noise; these groups are drawn faded "
                  "and hatched and are not chosen as the worst group."), icon=":material/warning:")

if result.worst_group is None:
    st.error("No group has a value: every group is too small for this metric. Use fewer bins or load more rows.")
else:
    cells = st.columns(3)
    cells[0].metric(f"{METRICS[metric]} on all rows", f"{result.overall:.4f}",
                    help=None if n_boot == 0 else f"95 % interval [{result.overall_low:.4f}, {result.overall_high:.4f}]")
    cells[1].metric(f"Worst group: {md(result.worst_group)}", f"{result.worst_value:.4f}")
    cells[2].metric("Its gap to all rows", f"{result.worst_gap:+.4f}",
                    help="The worst group's value minus the value on all rows.")
    interval = ("" if n_boot == 0 else
                f" (95 % interval of the gap [{result.gap_low:+.4f}, {result.gap_high:+.4f}], {n_boot} stratified "
                "bootstrap resamples: every group resampled within itself)")
    st.markdown(
        f"The worst group is **{md(result.worst_group)}**: {md(label)} {result.worst_value:.4f} against "
        f"{result.overall:.4f} on all rows, a gap of {result.worst_gap:+.4f}{interval}. The group was picked "
        "on these rows, so the interval is optimistic when several groups have similar values."
    )

st.subheader(f"{METRICS[metric]} of each group")
st.plotly_chart(figures_groups.group_bar_figure(result, metric_label=label), theme=None, key="groups_bar_chart",
                config=downloads.chart_config("Groups", view.name, predictions.group_column, label))
st.caption("Bars sorted by the gap to the value on all rows (dashed line), largest first; whiskers: 95 % percentile "
           "bootstrap intervals within each group. Orange: the worst group. Faded and hatched: too small.")
with st.expander("Table"):
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.4f") for c in
                                ("value", "ci_low", "ci_high", "gap")})

st.subheader("Reliability diagram of each group")
reliability = compute_groups.group_reliability(predictions, view.fingerprint, n_bins, "uniform")
by_size = table.sort_values("n", ascending=False, kind="stable")["group"].tolist()
preferred = ([result.worst_group] if result.worst_group is not None else []) + by_size
drawn_default = list(dict.fromkeys(preferred))[:MAX_DIAGRAMS]
options = table["group"].tolist()
layout_col, groups_col = st.columns([1, 3])
diagram_layout = layout.linked(layout_col.radio, "Layout", LAYOUTS, horizontal=True, index=1, key="group_layout")
drawn = layout.linked(groups_col.multiselect, f"Groups drawn (at most {MAX_DIAGRAMS})", options,
                      max_selections=MAX_DIAGRAMS, default=drawn_default, key="groups", options=options,
                      format_func=str)
if drawn:
    shown_table = reliability[reliability["group"].isin(drawn)]
    order = {g: i for i, g in enumerate(drawn)}
    shown_table = shown_table.sort_values("group", key=lambda s: s.map(order), kind="stable")
    st.plotly_chart(figures_groups.group_reliability_figure(shown_table, layout=diagram_layout), theme=None,
                    key="groups_reliability_chart",
                    config=downloads.chart_config("Groups", view.name, predictions.group_column, "reliability",
                                                  n_bins, "uniform"))
    event = "Stated confidence" if predictions.kind == "confidence" else "Top label"
    st.caption(f"{event}, {n_bins} uniform bins, the same bins in every group. Faded points: bins with fewer "
               "than 10 rows; small multiples show Wilson 95 % intervals of each bin's accuracy.")
else:
    st.info("Choose at least one group to draw its reliability diagram.")

st.subheader("Multicalibration")
multi = compute_groups.multicalibration(predictions, view.fingerprint, n_bins, "uniform", MIN_GROUP_ROWS)
if multi.group is None:
    st.info(md(f"No multicalibration summary: {multi.reason} Use fewer bins."))
else:
    direction = "over-confident" if multi.gap > 0 else "under-confident"
    st.markdown(
        f"The largest gap between confidence and accuracy over all (group, bin) cells with at least {multi.min_count} "
        f"{rows_word} is **{multi.max_gap:.4f}**, in group **{md(multi.group)}**, bin {multi.bin} "
        f"({multi.lower:.3f}, {multi.upper:.3f}]: {size_text(multi.count)} {rows_word}, mean confidence "
        f"{multi.confidence:.3f}, accuracy {multi.accuracy:.3f} ({direction}). {multi.n_cells_used} of "
        f"{multi.n_cells} cells have enough {rows_word}. A model is alpha-multicalibrated when this is at most "
        "alpha in every such cell (Hebert-Johnson et al. 2018, Definition 2.1)."
    )
