"""Per-class: ACE per class (Nixon et al. 2019, Figure 1 left) beside class-wise ECE, and one class's diagram.

Up to ``figures.MANY_CLASSES`` classes: one bar per class. Above (ImageNet has 1,000): the worst classes as
bars, histograms of both errors over every class, and a class picker listed worst first that filters as
you type."""
import streamlit as st

from studio import compute, downloads, layout, state
from calib_core.plot import figures
from studio.text import md, plot_text

SORTS = {"class": "class order", "ace": "ACE (largest first)", "classwise_ece": "class-wise ECE (largest first)"}

models = layout.setup_page("Per-class")
st.title("Per-class calibration")
st.markdown(
    "A single number hides which classes are miscalibrated. Left: the adaptive calibration error (ACE) of "
    "each class, its probabilities split into equal-mass ranges (Nixon et al. 2019, Figure 1). Right: the "
    "class-wise ECE of each class. Pick a class below to see its reliability diagram."
)
layout.require_models(models)
models = layout.class_models(models, "Per-class", "it has no classes, only answers that are right or wrong.")

reference = models[0].predictions.class_names
same = [m for m in models if m.predictions.class_names == reference]
others = [m.name for m in models if m not in same]
if others:
    one = len(others) == 1
    st.info(f"{', '.join(md(o) for o in others)} {'has' if one else 'have'} other classes than "
            f"{md(models[0].name)} and {'is' if one else 'are'} not shown; hide {md(models[0].name)} under "
            f"*Models shown* in the sidebar "
            f"to see {'it' if one else 'them'}.")

n_classes = len(reference)
many = n_classes > figures.MANY_CLASSES
bins_col, binning_col, sort_col = st.columns([3, 2, 3])
n_bins = layout.linked(bins_col.slider, "Number of bins (ranges)", 2, 50, value=15, key="class_bins")
binning = layout.linked(binning_col.radio, "Class-wise ECE bins", ["uniform", "adaptive"], horizontal=True,
                        index=0, key="class_binning", help="ACE always uses adaptive (equal-mass) ranges.")
# With many classes the page opens on the worst classes (by ACE); "class order" then lists the first ones.
sort_by = layout.linked(sort_col.radio, "Sort classes by", list(SORTS), format_func=SORTS.get, horizontal=True,
                        index=list(SORTS).index("ace" if many else "class"), key="sort")

tables = {m.name: compute.per_class(m.predictions, m.fingerprint, n_bins, binning) for m in same}
colors = state.model_colors()
if not many:
    st.plotly_chart(figures.per_class_figure(tables, sort_by=sort_by, colors=colors), theme=None,
                    key="perclass_chart", config=downloads.chart_config("Per-class", *tables, n_bins, binning))
else:
    top_n_col, caption_col = st.columns([3, 5], vertical_alignment="bottom")
    top_n = layout.linked(top_n_col.slider, "Classes shown as bars", 5, min(100, n_classes // 5 * 5), value=25,
                          step=5, key="worst_n",
                          help=f"{n_classes:,} bars would not read: the bars show the classes with the largest "
                               "error first, the histograms below every class.")
    key = "ace" if sort_by == "class" else sort_by
    if sort_by == "class":
        shown = list(range(min(top_n, n_classes)))
        caption_col.caption(f"The first {len(shown):,} of {n_classes:,} classes in file order; sort by ACE or class-wise "
                   "ECE to see the worst ones.")
        st.plotly_chart(figures.per_class_worst_figure(tables, order=shown, colors=colors),
                        theme=None, key="perclass_chart",
                        config=downloads.chart_config("Per-class", *tables, n_bins, binning))
    else:
        mean_over = " (mean over the models)" if len(tables) > 1 else ""
        caption_col.caption(f"**{top_n:,} worst of {n_classes:,} classes** by {SORTS[sort_by].split(' (')[0]}{mean_over}, "
                   "worst on top. The histograms below show every class; the dashed line marks where the "
                   "bars stop.")
        st.plotly_chart(figures.per_class_worst_figure(tables, sort_by=key, top_n=top_n, colors=colors),
                        theme=None, key="perclass_chart",
                        config=downloads.chart_config("Per-class", *tables, n_bins, binning))
    st.plotly_chart(figures.per_class_distribution_figure(tables, sort_by=key, top_n=top_n, colors=colors,
                                                          marked=sort_by != "class"),
                    theme=None, key="perclass_distribution_chart",
                    config=downloads.chart_config("Per-class", "distribution", *tables, n_bins, binning))

with st.expander("Per-class table"):
    for name, table in tables.items():
        st.markdown(f"**{md(name)}**")
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in
                                    ("frequency", "mean_probability", "ace", "tace", "classwise_ece")})

st.subheader("One class")
# Options are class positions labelled by name (the label is also the link's value, so it holds no number
# that changes with the bins); with many classes they come worst first and typing filters them.
class_options = (list(range(n_classes)) if not many or sort_by == "class"
                 else [int(k) for k in figures.worst_classes(tables, sort_by).index])
chosen = int(layout.linked(
    st.selectbox, "Class", class_options, index=0, key="cls", options=class_options,
    format_func=lambda k: reference[k] if reference[k] == str(k) else f"{k}: {reference[k]}",
    help="Its reliability diagram: the predicted probability of this class against whether the row is of "
         "this class (one-vs-rest), with the bins chosen above."
         + ("" if not many else " Type to search the class names"
            + ("." if sort_by == "class" else "; the list starts with the worst class.")),
    **({"filter_mode": "contains"} if many else {})))
lines = [f"**{md(name)}**: ACE {table['ace'].iloc[chosen]:.4f} · TACE {table['tace'].iloc[chosen]:.4f} · class-wise "
         f"ECE {table['classwise_ece'].iloc[chosen]:.4f} · {int(table['support'].iloc[chosen]):,} rows of this class"
         for name, table in tables.items()]
st.markdown("  \n".join(lines))
diagrams = {m.name: compute.reliability(m.predictions, m.fingerprint, n_bins, binning, chosen) for m in same}
st.plotly_chart(
    figures.reliability_figure(diagrams, layout="overlay", colors=state.model_colors(), histogram_log=True,
                               x_title=f"Mean predicted probability of class {plot_text(reference[chosen])} in the bin",
                               n_rows={m.name: m.predictions.n_samples for m in same}),
    theme=None, key="perclass_reliability_chart",
    config=downloads.chart_config("Per-class", "class", reference[chosen], *diagrams, n_bins, binning))
st.caption(f"Faded, hollow points labelled n=…: bins with fewer than {figures.MIN_BIN_COUNT} rows. Their observed "
           "frequency is too uncertain to read a gap from (see the wide intervals), so they get no line and no "
           "shading. One-vs-rest probabilities put almost every row near 0 or 1, so most middle bins are sparse.")
downloads.report_button("per_class", models, n_bins=n_bins, binning=binning)
