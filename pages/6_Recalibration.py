"""Recalibration: fit post-hoc methods honestly and compare every metric before and after."""
import streamlit as st

from calib_core.recalibration import RECALIBRATORS
from calib_core.recalibration import defaults, hazards
from calib_core.recalibration.compare import CAUTIONARY, Protocol
from studio import compute_recalibration as cr
from studio import layout, progressive
from studio.recalibration import charts, intervals, results
from studio.recalibration.fitting import fit_all

SCHEME_LABELS = {
    "split_column": "Calibration / test split (the file's split column)",
    "random": "Stratified random split",
    "cross_fit": "K-fold cross-fitting",
}
FOLD_CHOICES = [2, 3, 5, 10]


def method_label(name: str) -> str:
    return f"{name} — cautionary baseline" if name == CAUTIONARY else name


# ----------------------------------------------------------------------------- page
models = layout.setup_page("Recalibration")
st.title("Recalibration: which fix helps?")
st.markdown(
    "Fit post-hoc recalibration methods and compare **every metric before and after**. The comparison is "
    "honest by default: a method is fitted on some rows and judged on **other rows** (the file's calibration "
    "and test split, a random split, or cross-fitting), because a map always looks good on the rows it has "
    "seen. Which method is best depends on the metric: Nixon et al. (2019, Table 5) show the ranking of "
    "recalibration methods flipping between calibration measures, and Popordanoska et al. (2024, Table 2) "
    "find temperature scaling ahead on CE_KL but isotonic regression ahead on CE₂². So the page shows "
    "all of them, with bootstrap intervals, and the ranking under all 32 GCE variants."
)
layout.require_models(models)

# ----------------------------------------------------------------------------- settings
all_methods = list(RECALIBRATORS)
with st.container(border=True):
    methods = layout.linked(
        st.multiselect, "Methods", all_methods, format_func=method_label,
        default=cr.default_methods(models), key="methods", options=all_methods,
        help="Logit-based methods (temperature, vector, matrix scaling ...) use the logits when the file has them, "
             "else the log-probabilities. Platt, beta, isotonic, centred isotonic, spline and Venn-Abers fit one map "
             f"per class (one-vs-rest) for K > 2. The \"(floored)\" methods mix {hazards.DEFAULT_EPSILON:.0%} of the "
             "model's probabilities "
             "back in, so they never give a class exactly 0 (an infinite log loss).")
    default_note = defaults.default_note(cr.largest_class_count(models))
    if default_note:
        st.caption(default_note)
    slow_note = cr.slow_methods_note(models, methods)
    if slow_note:
        st.warning(slow_note, icon=":material/hourglass_top:")
    any_split = any(cr.split_column_ready(m.predictions) for m in models)
    schemes = (["split_column"] if any_split else []) + ["random", "cross_fit"]
    scheme_col, fraction_col, folds_col, seed_col, boot_col = st.columns([5, 3, 2, 2, 2])
    scheme = layout.linked(
        scheme_col.radio, "Protocol: fit on … evaluate on …", schemes, format_func=SCHEME_LABELS.get,
        index=0, key="protocol", options=schemes,
        help="Split column: fit on the rows marked calibration (or val), evaluate on the rows marked test. "
             "Random split: a stratified split with the test fraction and seed. Cross-fitting: every row is "
             "recalibrated by a map fitted on the other folds, so all rows are evaluated out of sample.")
    test_fraction = layout.linked(
        fraction_col.slider, "Test fraction (random split)", 0.1, 0.9, step=0.05, value=0.5, key="test_fraction",
        disabled=scheme == "cross_fit",
        help="Share of each class held out for evaluation; also used for models without a split column.")
    n_folds = layout.linked(folds_col.selectbox, "Folds", FOLD_CHOICES, index=list(FOLD_CHOICES).index(5),
                            key="folds", disabled=scheme != "cross_fit", help="Folds of cross-fitting.")
    seed = int(layout.linked(seed_col.number_input, "Seed", min_value=0, max_value=2**31 - 1, step=1, value=0,
                             key="recal_seed",
                                     help="Seeds the random split, the folds and the bootstrap."))
    n_boot = layout.linked(
        boot_col.selectbox, "Bootstrap resamples", list(cr.BOOT_CHOICES), index=list(cr.BOOT_CHOICES).index(200),
        key="recal_boot",
        format_func=lambda n: "none" if n == 0 else f"{n:,}",
        help="Percentile intervals of every metric before and after, and of the change (paired resamples).")
    if not any_split and any(m.predictions.split is not None for m in models):
        st.caption("The rows shown hold one split only, so the file's calibration / test split cannot be used "
                   "here: choose *All rows* in the sidebar to fit on the calibration rows and evaluate on the test "
                   "rows.")
    in_sample = layout.linked(
        st.checkbox, "Evaluate on the fitting rows instead (in-sample: optimistic, for comparison only)",
        value=False, key="in_sample",
        help="Each method is judged on the rows it was fitted on. Its 'after' numbers then overstate how well it "
             "works on new data, most of all for flexible methods (histogram binning, isotonic regression).")

if in_sample:
    st.warning("**In-sample evaluation is on.** The methods are judged on the rows they were fitted on; the "
               "numbers below are optimistic. Untick the box for an honest comparison.", icon=":material/warning:")
if not methods:
    st.info("Choose at least one method above.")
    st.stop()
if CAUTIONARY in methods:
    st.info(f"**{CAUTIONARY}** is a cautionary baseline (Gruber & Buettner 2022, appendix E.1): it replaces "
            "every prediction by the label frequencies of its predicted class, so it is calibrated by construction "
            "while all sharpness within a predicted class is lost. It wins on calibration errors and loses on the "
            "Brier score and NLL; it is shown for comparison, never recommended or marked best below.",
            icon=":material/science:")

protocol = Protocol(scheme, float(test_fraction), seed, int(n_folds), bool(in_sample))

# ----------------------------------------------------------------------------- fits, verdicts, one model in detail
# Every estimate, verdict and chart is drawn first; the bootstrap intervals fill in at the end (progress and a
# Stop button at the top), redrawing each model's verdict and the details table as they come.
model_results = fit_all(models, methods, protocol, n_boot=int(n_boot))
if not model_results:
    st.stop()
run = progressive.run_key(models, methods=tuple(methods), protocol=protocol, n_boot=int(n_boot))
model_results = intervals.known(model_results, n_boot=int(n_boot), seed=seed,
                                stopped=intervals.STOP.is_stopped(run))
status_slot = st.empty()
verdict_slots = results.show_verdicts(model_results, methods)
result = results.choose_model(model_results)
results.show_problems(result)
table_slots = results.show_tables(result, n_boot=int(n_boot), seed=seed)

# ----------------------------------------------------------------------------- charts and downloads
diagram_method, draw_report = charts.show_reliability(result, n_boot=int(n_boot), seed=seed)
if not result.stated:  # the simplex, temperature surface and GCE ranking are views of class probabilities
    charts.show_simplex(result, diagram_method)
    charts.show_surface(result)
    charts.show_ranking(result)
charts.show_downloads(result)

# ----------------------------------------------------------------------------- the intervals, last
intervals.show_stopped(model_results, status_slot)
current = dict(model_results)
if not any(r.intervals == "pending" for r in current.values()):
    draw_report(current)


def redraw(updated):
    """A model's intervals are in: its verdict, for the model shown in detail its table and chart, and once every
    model's are in, the report (every model's verdict)."""
    current[updated.view.name] = updated
    results.draw_verdict(verdict_slots[updated.view.name], updated)
    if updated.view.name == result.view.name:
        table_slots.draw_details(updated)
        table_slots.draw_change(updated)
    if not any(r.intervals == "pending" for r in current.values()):
        draw_report(current)


filled = intervals.fill(model_results, n_boot=int(n_boot), seed=seed, run=run, status_slot=status_slot,
                       on_result=redraw)
# The intervals can change the advice (a method within noise of a simpler one gives way to it): the pickers and
# diagrams drawn before them then start again on the advised method (the intervals are kept, so once only).
if filled[result.view.name].recommendation.method != result.recommendation.method:
    st.rerun()
