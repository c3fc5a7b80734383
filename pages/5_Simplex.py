"""Simplex: the two-dimensional reliability diagram (arrows on a triangle), canonical_ce and its consistency band."""
import streamlit as st

from calib_core import CalibrationInputError, csv_bytes, default_groups
from studio import compute_simplex as cs
from studio import downloads, layout
from studio.figures_simplex import simplex_figure
from studio.text import md

LENSES = {"canonical": "canonical", "max": "max (top label)", "marginal": "marginal (one class)"}
DISTANCES = {"tv": "total variation", "sq_euclidean": "squared Euclidean"}
PARTITIONS = {"uniform": "uniform triangles", "data_dependent": "data-dependent"}
MODES = {"groups": "three groups of classes", "classes": "three classes"}
RESAMPLES = [100, 200, 500, 1000]
#: Above this many rows the band starts at 100 resamples, so a control change recomputes it in under 1 s.
LARGE_MODEL_ROWS = 50_000
VERTEX_LETTERS = "ABC"
#: Height of the chart (px): the triangle is about as wide as the chart is tall.
CHART_HEIGHT = 720
#: Values of the partition setting not in use (so that its cache entries are shared).
UNUSED_N_BINS, UNUSED_MIN_BIN_SIZE = 10, 1000
TWO_OUTCOMES = cs.Vertices("groups", ((0,), (1,), ()))


def class_label(names: tuple[str, ...], k: int) -> str:
    return str(k) if names[k] == str(k) else f"{k}: {names[k]}"


def vertex_title(names: tuple[str, ...], group: tuple[int, ...]) -> str:
    if not group:
        return ""
    if len(group) <= 4:
        return " + ".join(names[k] for k in group)
    return f"{names[group[0]]} + … + {names[group[-1]]} ({len(group)} classes)"


def plural(items: list[int], names: tuple[str, ...]) -> str:
    shown = ", ".join(class_label(names, k) for k in items)
    return f"class {shown} is" if len(items) == 1 else f"classes {shown} are"


#: How each verdict of calib_core (ConsistencyResult.verdict) is shown; the text is its verdict_reason.
VERDICT_BOX = {
    "miscalibrated": (st.warning, "Miscalibrated", ":material/warning:"),
    "consistent": (st.success, "Consistent with calibration", ":material/check_circle:"),
    "inconclusive": (st.info, "Inconclusive", ":material/help:"),
}


def band_caption(result, what: str) -> str:
    return (f"{what}: for a perfectly calibrated model with these predictions ({result.n_resamples:,} "
            f"consistency resamples) the estimate falls between **{result.lower:.4f}** and **{result.upper:.4f}** "
            f"(5th–95th percentile), **{result.resampled_mean:.4f}** on average (its bias at calibration, "
            f"η̂_id). p-value **{result.p_value:.3f}**.")


def show_verdict(result) -> None:
    """The verdict and its reason, both from calib_core (this page computes no verdict)."""
    box, title, icon = VERDICT_BOX[result.verdict]
    box(f"**{title}.** {md(result.verdict_reason)}", icon=icon)


class EstimateSlot:
    """An estimate shown at once; its consistency band and verdict are filled in when the resampling is done."""

    def __init__(self, label: str, value: float, help_text: str, what: str) -> None:
        self.label, self.help, self.what = label, help_text, what
        self.metric = st.empty()
        self.band = st.empty()
        self.metric.metric(label, f"{value:.4f}", help=help_text)
        self.band.caption("Consistency band: drawing labels from the predictions …")

    def fill(self, result) -> None:
        # No green arrow for an estimate below its band: the verdict (inconclusive) says why.
        self.metric.metric(self.label, f"{result.observed:.4f}", delta=f"{result.excess:+.4f} vs. calibrated mean",
                           delta_color="off" if result.verdict == "inconclusive" else "inverse", help=self.help)
        with self.band.container():
            st.caption(band_caption(result, self.what))
            show_verdict(result)


models = layout.setup_page("Simplex", ":material/change_history:")
st.title("Simplex: calibration of the whole distribution")
st.markdown(
    "A model is calibrated in the *canonical* sense when its whole predicted distribution is right, not only "
    "its top probability. This page maps every prediction onto a triangle (three classes, or all classes "
    "summed into three groups), splits the triangle into cells, and draws **one arrow per cell: from the "
    "cell's average prediction (tail) to how often each vertex actually occurred there (head)**. A calibrated "
    "model has arrows of almost no length; long arrows point to the outcomes that happen more often than "
    "predicted. This is the two-dimensional reliability diagram of Vaicenavicius et al. (2019, *Evaluating "
    "model calibration in classification*, Figures 16 and 18). Beside it, `canonical_ce` is their estimate "
    "of the expected miscalibration (eq. 6). It is positive even for a calibrated model, so it is compared "
    "with its values when the labels are drawn from the predictions themselves (*consistency resampling*)."
)
layout.require_models(models)

names = [m.name for m in models]
if len(models) > 1:
    chosen = layout.linked(st.selectbox, "Model", names, index=0, key="model", options=names,
                          help="The models shown in the sidebar; one at a time on this page.")
else:
    chosen = names[0]
model = next(m for m in models if m.name == chosen)
predictions = model.predictions
n_classes = predictions.n_classes
class_names = tuple(predictions.class_names) or tuple(str(k) for k in range(n_classes))
all_classes = list(range(n_classes))


def label(k: int) -> str:
    return class_label(class_names, k)


# ----------------------------------------------------------------------------- controls
lens_col, marginal_col, distance_col = st.columns([4, 3, 3])
lens = layout.linked(
    lens_col.radio, "Lens", list(LENSES), format_func=LENSES.get, horizontal=True,
    index=list(LENSES).index("canonical"), key="lens",
    help="What must be calibrated. Canonical: the whole predicted distribution. Max: the top probability "
         "against whether the predicted class is right (what the usual ECE checks). Marginal: one class's "
         "probability against whether the row belongs to that class.")
class_index = layout.linked(
    marginal_col.selectbox, "Class of the marginal lens", all_classes, format_func=label,
    disabled=lens != "marginal", index=0, key="marginal", options=all_classes)
class_index = int(class_index) if lens == "marginal" else None
distance = layout.linked(
    distance_col.radio, "Distance", list(DISTANCES), format_func=DISTANCES.get, horizontal=True,
    index=list(DISTANCES).index("tv"), key="distance",
    help="Between a cell's observed frequencies r and mean prediction g: total variation ½·Σ|r−g|, or "
         "squared Euclidean Σ(r−g)².")

canonical = lens == "canonical"
mode_options = list(MODES) if n_classes >= 3 else ["groups"]
# The vertex pickers' values belong to one number of classes: another model with another K starts from
# its defaults (set, not deleted: a deleted bound widget would be seeded again from the opening link).
if st.session_state.get("studio:simplex_classes") != n_classes:
    if "studio:simplex_classes" in st.session_state:
        for j, group in enumerate(default_groups(n_classes)):
            st.session_state[f"group_{VERTEX_LETTERS[j].lower()}"] = list(group)
            st.session_state[f"vertex_{VERTEX_LETTERS[j].lower()}"] = min(j, n_classes - 1)
    st.session_state["studio:simplex_classes"] = n_classes
mode = layout.linked(
    st.radio, "Vertices of the triangle", mode_options, format_func=MODES.get, horizontal=True,
    index=0, key="vertices", options=mode_options, disabled=not canonical or n_classes < 3,
    help="Groups: the probabilities of each group's classes are added up (every class in exactly one group). "
         "Three classes: only the rows whose label is one of them, with the three probabilities rescaled to "
         "sum to 1.")
picker_cols = st.columns(3)
if mode == "groups":
    suggested = default_groups(n_classes)
    groups = []
    for j, column in enumerate(picker_cols):
        picked = layout.linked(
            column.multiselect, f"Vertex {VERTEX_LETTERS[j]}: classes added up", all_classes, format_func=label,
            default=list(suggested[j]), key=f"group_{VERTEX_LETTERS[j].lower()}", options=all_classes,
            disabled=not canonical, placeholder="no class")
        groups.append(tuple(sorted(int(k) for k in picked)))
    members = tuple(groups)
else:
    members = tuple(int(layout.linked(
        column.selectbox, f"Vertex {VERTEX_LETTERS[j]}", all_classes, format_func=label, index=j,
        key=f"vertex_{VERTEX_LETTERS[j].lower()}", options=all_classes, disabled=not canonical))
        for j, column in enumerate(picker_cols))
if n_classes == 2 and canonical:
    st.caption("A binary model: its predictions lie on the edge between the two classes.")
if not canonical:
    st.caption(f"The {LENSES[lens]} lens asks a yes/no question, so its predictions lie on the edge between "
               "the first two vertices; the vertex choice above applies to the canonical lens.")

if canonical and mode == "groups":
    repeated, missing = cs.group_problems(members, n_classes)
    problems = []
    if repeated:
        problems.append(f"{plural(repeated, class_names)} in more than one group: remove "
                        f"{'it' if len(repeated) == 1 else 'them'} from all groups but one")
    if missing:
        problems.append(f"{plural(missing, class_names)} in no group: add "
                        f"{'it' if len(missing) == 1 else 'each'} to one of the three groups")
    if problems:
        st.error("Every class must be in exactly one group. " + "; ".join(problems) + ".",
                 icon=":material/error:")
        st.stop()
    if sum(1 for g in members if g) < 2:
        st.error("Put classes into at least two groups: with one group every prediction sits on its vertex "
                 "and there is nothing to see.", icon=":material/error:")
        st.stop()
if canonical and mode == "classes" and len(set(members)) < 3:
    twice = sorted({k for k in members if members.count(k) > 1})
    st.error(f"Choose three different classes: {plural(twice, class_names)} picked more than once. "
             "Change one of the vertex pickers.", icon=":material/error:")
    st.stop()
vertices = cs.Vertices(mode, members) if canonical else TWO_OUTCOMES

part_col, size_col, scale_col, count_col = st.columns([3, 3, 3, 2])
partition = layout.linked(
    part_col.radio, "Partition", list(PARTITIONS), format_func=PARTITIONS.get, horizontal=True,
    index=list(PARTITIONS).index("uniform"), key="partition",
    help="Uniform: every edge cut into n parts, n² equal triangles (in K dimensions: n bins per "
         "probability). Data-dependent (appendix B of the paper): a cell is split at the mean of its "
         "most variable coordinate while it holds more rows than the minimum cell size.")
if partition == "uniform":
    n_bins = int(layout.linked(size_col.slider, "Subdivisions per edge (n)", 1, 40, value=10, key="cells"))
    min_bin_size = UNUSED_MIN_BIN_SIZE
else:
    min_bin_size = int(layout.linked(
        size_col.number_input, "Minimum cell size", min_value=1, max_value=10_000_000, step=10, value=100,
        key="cell_size",
        help="Cells holding more rows than this are split (the paper used 1,000)."))
    n_bins = UNUSED_N_BINS
arrow_scale = float(layout.linked(
    scale_col.slider, "Arrow scale", 0.25, 5.0, step=0.25, value=1.0, key="arrows",
    help="Draws the head at tail + scale × (observed − mean), to make short arrows visible. The hover "
         "shows the true values."))
count_scale = layout.linked(count_col.radio, "Cell colours", ["log", "linear"], horizontal=True, index=0,
                            key="colours",
                              help="Colour scale of the number of rows per cell.")

# ----------------------------------------------------------------------------- view and chart
try:
    view = cs.simplex_view(predictions, model.fingerprint, vertices, lens, class_index, partition, n_bins,
                           min_bin_size, distance)
except CalibrationInputError as exc:
    st.error(f"This view cannot be drawn: {exc} Pick other vertices or settings.", icon=":material/error:")
    st.stop()

if canonical:
    titles = tuple(vertex_title(class_names, group) for group in view.projection.groups)
elif lens == "max":
    titles = ("predicted class", "another class", "")
else:
    titles = (f"class {class_names[class_index]}", f"not class {class_names[class_index]}", "")

chart_col = st.container()
with chart_col:
    figure = simplex_figure(view, arrow_scale=arrow_scale, class_names=titles, count_scale=count_scale)
    figure.update_layout(height=CHART_HEIGHT)
    st.plotly_chart(figure, theme=None, key="simplex_chart",
                    config=downloads.chart_config("Simplex", model.name, lens, partition, n_bins))
    downloads.report_button("simplex", models)
    table = view.table
    kept = int(view.projection.kept.sum())
    rows_text = f"{kept:,} rows"
    if view.projection.n_excluded:
        rows_text += (f" whose label is one of the three classes ({view.projection.n_excluded:,} rows with "
                      "another label are left out)")
    if partition == "uniform":
        cells_text = (f"{n_bins}² = {n_bins * n_bins} triangles, {table.n_cells} of them non-empty, one arrow "
                      "each; cell colour = number of rows")
    else:
        cells_text = (f"{table.n_cells} cells of at most {min_bin_size:,} rows (each the region its splits cut "
                      "out of the triangle), one arrow each; cell colour = number of rows, dots = predictions")
    scale_text = "" if arrow_scale == 1.0 else f" Arrows drawn {arrow_scale:g}× their length."
    st.caption(f"{md(model.name)}: {rows_text}; {cells_text}. Hover an arrow for its count, mean prediction and "
               f"observed frequency.{scale_text}")

# ----------------------------------------------------------------------------- estimates
st.subheader("Is the miscalibration real? Consistency resampling")
settings_col, whole_col, arrows_col = st.columns([2, 4, 4], gap="medium")
with settings_col:
    n_resamples = int(layout.linked(
        st.selectbox, "Consistency resamples", RESAMPLES, key="resamples",
        index=RESAMPLES.index(100 if model.predictions.n_samples > LARGE_MODEL_ROWS else 200),
        format_func=lambda n: f"{n:,}",
        help="Label vectors drawn from the predictions (a perfectly calibrated model). More: a steadier band, "
             f"slower. Models over {LARGE_MODEL_ROWS:,} rows start at 100 so that the band follows each change "
             "within a second."))
    seed = int(layout.linked(st.number_input, "Seed", min_value=0, max_value=2**31 - 1, step=1, value=0,
                             key="simplex_seed"))
    noun = ("all " + str(n_classes) + " classes" if canonical else
            "top label" if lens == "max" else f"class {class_names[class_index]}")
    distance_text = DISTANCES[distance]
    settings = (f"{n_bins} bins per probability" if partition == "uniform"
                else f"data-dependent cells of at most {min_bin_size:,} rows")
    same_view = cs.view_is_whole_model(vertices, lens, n_classes)
    try:
        value = cs.lens_estimate(predictions, model.fingerprint, distance, partition, n_bins, min_bin_size, lens,
                                 class_index)
    except CalibrationInputError as exc:
        st.error(f"The estimate could not be computed: {exc} Pick other settings.", icon=":material/error:")
        st.stop()
# The numbers first, the bands (consistency resampling, the slow part) when they are ready.
with whole_col:
    whole_slot = EstimateSlot(
        f"canonical_ce, {LENSES[lens]} lens ({noun})", value,
        f"Σ over cells of (share of rows) × {distance_text} between observed frequencies and mean "
        f"prediction, on the model's {noun} ({settings}); Vaicenavicius et al. 2019, eq. 6.", "Band")
    if canonical and n_classes > 3:
        st.caption(f"canonical_ce partitions all {n_classes} dimensions with the same setting; there most "
                   "cells hold few rows, which inflates the estimate: compare it with the band, not with 0.")
arrows_slot = None
if not same_view:
    with arrows_col:
        arrows_slot = EstimateSlot(
            "The arrows: estimate on this triangle", view.estimate,
            "The same estimate on the three-vertex view the chart shows: Σ over cells of (share of rows) × "
            f"{distance_text} between arrow head and tail.", "Band of the triangle view")
whole = cs.lens_consistency(predictions, model.fingerprint, distance, partition, n_bins, min_bin_size, lens,
                            class_index, n_resamples, seed)
whole_slot.fill(whole)
if arrows_slot is not None:
    arrows = cs.view_consistency(predictions, model.fingerprint, vertices, partition, n_bins, min_bin_size,
                                 distance, n_resamples, seed)
    arrows_slot.fill(arrows)
    if arrows.verdict != whole.verdict:
        # Both verdicts come from calib_core; say why two tests of one model can read differently.
        st.info(
            f"**The two tests read differently** (whole model: {whole.verdict}; triangle view: "
            f"{arrows.verdict}). They test different things: the whole model's {n_classes}-class predictions on "
            f"{whole.occupancy.n_cells if whole.occupancy else 'its'} cells, and the three-vertex view on "
            f"{arrows.occupancy.n_cells if arrows.occupancy else 'its'} cells. A test that finds miscalibration "
            "is evidence whatever the other says (grouping classes keeps a calibrated model calibrated, so "
            "miscalibration of the view is miscalibration of the model); an inconclusive test is not evidence "
            "of calibration. Each verdict above says why it reads as it does.",
            icon=":material/compare_arrows:")

with st.expander("Per-cell table"):
    frame = table.to_frame()
    renamed = {}
    for k, title in enumerate(titles):
        name = title or f"vertex {VERTEX_LETTERS[k]}"
        renamed[f"mean_prediction_{k}"] = f"mean prediction: {name}"
        renamed[f"observed_frequency_{k}"] = f"observed: {name}"
    frame = frame.rename(columns=renamed)
    st.dataframe(frame, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.4f") for c in frame.columns
                                if c not in ("count",) and not c.startswith("key_")})
    st.download_button("Download the cells as CSV", csv_bytes(frame),
                       file_name=f"simplex_cells_{model.name}.csv", mime="text/csv", on_click="ignore",
                       icon=":material/download:")
