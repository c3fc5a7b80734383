"""Simplex: the two-dimensional reliability diagram (arrows on a triangle), canonical_ce and its consistency band."""
import streamlit as st

from calib_core import CalibrationInputError
from studio import compute_simplex as cs
from studio import layout
from calib_core.plot.figures_simplex import vertex_titles
from studio.simplex.chart import show_cells, show_chart
from studio.simplex.estimates import DISTANCES, show_estimates
from studio.simplex.vertices import class_label, pick_vertices
from studio.text import md

LENSES = {"canonical": "canonical", "max": "max (top label)", "marginal": "marginal (one class)"}
PARTITIONS = {"uniform": "uniform triangles", "data_dependent": "data-dependent"}
#: Values of the partition setting not in use (so that its cache entries are shared).
UNUSED_N_BINS, UNUSED_MIN_BIN_SIZE = 10, 1000

models = layout.setup_page("Simplex")
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
models = layout.class_models(models, "Simplex", "it needs probabilities over three or more classes, and a "
                             "confidence model has one stated confidence per answer.")

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

# ----------------------------------------------------------------------------- controls
lens_col, marginal_col, distance_col = st.columns([4, 3, 3])
lens = layout.linked(
    lens_col.radio, "Lens", list(LENSES), format_func=LENSES.get, horizontal=True,
    index=list(LENSES).index("canonical"), key="lens",
    help="What must be calibrated. Canonical: the whole predicted distribution. Max: the top probability "
         "against whether the predicted class is right (what the usual ECE checks). Marginal: one class's "
         "probability against whether the row belongs to that class.")
class_index = layout.linked(
    marginal_col.selectbox, "Class of the marginal lens", all_classes,
    format_func=lambda k: class_label(class_names, k), disabled=lens != "marginal", index=0, key="marginal",
    options=all_classes)
class_index = int(class_index) if lens == "marginal" else None
distance = layout.linked(
    distance_col.radio, "Distance", list(DISTANCES), format_func=DISTANCES.get, horizontal=True,
    index=list(DISTANCES).index("tv"), key="distance",
    help="Between a cell's observed frequencies r and mean prediction g: total variation ½·Σ|r−g|, or "
         "squared Euclidean Σ(r−g)².")
vertices = pick_vertices(class_names, lens, LENSES[lens])

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
                            key="colours", help="Colour scale of the number of rows per cell.")

# ----------------------------------------------------------------------------- view, chart, estimates, cells
try:
    view = cs.simplex_view(predictions, model.fingerprint, vertices, lens, class_index, partition, n_bins,
                           min_bin_size, distance)
except CalibrationInputError as exc:
    st.error(f"This view cannot be drawn: {md(exc)} Pick other vertices or settings.", icon=":material/error:")
    st.stop()
titles = vertex_titles(view, lens, class_names, class_index)
with st.container():
    show_chart(model, models, view, titles, lens=lens, partition=partition, n_bins=n_bins, min_bin_size=min_bin_size,
               arrow_scale=arrow_scale, count_scale=count_scale)
show_estimates(model, view, vertices, lens=lens, lens_label=LENSES[lens], class_index=class_index, distance=distance,
               partition=partition, n_bins=n_bins, min_bin_size=min_bin_size)
show_cells(model, view, titles)
