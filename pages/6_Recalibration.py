"""Recalibration: fit post-hoc methods honestly and compare every metric before and after."""
import re
import time

import streamlit as st

from calib_core import CalibrationInputError
from calib_core.recalibration import RECALIBRATORS
from studio import compute_recalibration as cr
from studio import downloads, layout, report
from studio.figures import reliability_figure
from studio.figures_recalibration import change_figure, gce_rank_figure, temperature_surface_figure
from studio.figures_simplex import simplex_figure
from studio.text import literal

SCHEME_LABELS = {
    "split_column": "Calibration / test split (the file's split column)",
    "random": "Stratified random split",
    "cross_fit": "K-fold cross-fitting",
}
FOLD_CHOICES = [2, 3, 5, 10]
SURFACE_LAYOUTS = {"relative": "one chart (each curve ÷ its minimum)", "panels": "one panel per metric"}
ALPHA = 0.05


def method_label(name: str) -> str:
    return f"{name} — cautionary baseline" if name == cr.CAUTIONARY else name


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def interval_text(n_boot: int, seed: int, n_rows: int) -> str:
    if n_boot == 0:
        return "No bootstrap intervals (choose resamples above to get them)."
    return (f"Intervals: {1 - ALPHA:.0%} percentile bootstrap over the {n_rows:,} evaluation rows, {n_boot:,} "
            f"resamples, seed {seed}; before and after resample the same rows, so the change has its own interval.")


# ----------------------------------------------------------------------------- page
models = layout.setup_page("Recalibration", ":material/auto_fix_high:")
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
        default=list(cr.DEFAULT_METHODS), key="methods", options=all_methods,
        help="Logit-based methods (temperature, vector, matrix scaling ...) use the logits when the file has them, "
             "else the log-probabilities. Platt, beta and isotonic fit one map per class (one-vs-rest) for K > 2.")
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
if cr.CAUTIONARY in methods:
    st.info(f"**{cr.CAUTIONARY}** is a cautionary baseline (Gruber & Buettner 2022, appendix E.1): it replaces "
            "every prediction by the label frequencies of its predicted class, so it is calibrated by construction "
            "while all sharpness within a predicted class is lost. It wins on calibration errors and loses on the "
            "Brier score and NLL; it is shown for comparison, never recommended or marked best below.",
            icon=":material/science:")

protocol = cr.Protocol(scheme, float(test_fraction), seed, int(n_folds), bool(in_sample))

# ----------------------------------------------------------------------------- fitting, per model and method
problems: dict[str, str] = {}
notes: dict[str, list[str]] = {}
for view in models:
    used, note = cr.effective_protocol(view.predictions, protocol)
    notes[view.name] = [note] if note else []
    try:
        cr.evaluation_set(view.predictions, view.fingerprint, used)
    except CalibrationInputError as exc:
        problems[view.name] = str(exc)

status = st.status(f"Fitting {len(methods)} method(s) on {len(models)} model(s) …", expanded=True)
with status:
    bar = st.progress(0.0, text="Starting …")

    def on_progress(model_name: str, method: str, index: int, total: int) -> None:
        if index < total:
            bar.progress(index / total, text=f"{literal(model_name)}: fitting {method} ({index + 1} of {total})")
        else:
            bar.progress(1.0, text=f"All {total} fits done.")

    started = time.perf_counter()
    all_fits = cr.fit_methods(models, methods, protocol, on_progress=on_progress)
    elapsed = time.perf_counter() - started
    for model_name, fits in all_fits.items():
        for method, fit in fits.items():
            if fit.ok:
                st.markdown(f":material/check: {literal(model_name)} · {method}: fitted in {fit.fit_seconds:.2f} s")
            else:
                st.markdown(f":material/warning: {literal(model_name)} · {method}: could not be fitted")
n_failed = sum(not f.ok for fits in all_fits.values() for f in fits.values())
status.update(label=f"Fitted {len(methods)} method(s) on {len(all_fits)} model(s) in {elapsed:.2f} s"
              + (f" ({n_failed} failed, see below)" if n_failed else "") + " · per-method times inside",
              state="complete" if not n_failed else "error", expanded=False)

results = {}
for view in models:
    if view.name in problems:
        st.error(f"{literal(view.name)}: the rows cannot be split for this protocol: {problems[view.name]} "
                 "Choose another protocol above (a random split, or fewer folds).", icon=":material/error:")
        continue
    used, _ = cr.effective_protocol(view.predictions, protocol)
    ev = cr.evaluation_set(view.predictions, view.fingerprint, used)
    fits = all_fits[view.name]
    ok = {name: fit for name, fit in fits.items() if fit.ok}
    interval_table, boot_note = None, None
    if n_boot and ok:
        predicted = cr.bootstrap_seconds(ev, n_boot, len(ok))
        if predicted > cr.BOOT_BUDGET_SECONDS:
            affordable = [n for n in cr.BOOT_CHOICES
                          if n and cr.bootstrap_seconds(ev, n, len(ok)) <= cr.BOOT_BUDGET_SECONDS]
            advice = (f"Choose {max(affordable):,} resamples or fewer" if affordable
                      else "Choose fewer methods, or no resamples")
            boot_note = (f"Bootstrap intervals for {literal(view.name)} skipped: {n_boot:,} resamples would take "
                         f"about {predicted / 60:.0f} min on its {ev.labels.size:,} evaluation rows. {advice} to get "
                         "them.")
        else:
            interval_table = layout.run_with_progress(
                f"{literal(view.name)}: bootstrap intervals",
                lambda report, ev=ev, view=view, ok=ok: cr.intervals(view.fingerprint, ev, ok, n_boot=int(n_boot),
                                                                     seed=seed, alpha=ALPHA, on_progress=report))
    table = cr.results_table(ev, fits, interval_table)
    sentence = next((fit.protocol for fit in ok.values()), "")
    results[view.name] = (view, ev, fits, table, sentence, boot_note)

if not results:
    st.stop()

# ----------------------------------------------------------------------------- verdicts
# Each model's protocol is stated once, here; every table and chart below is on its evaluation rows.
st.subheader("Verdict")
for name, (view, ev, fits, table, sentence, boot_note) in results.items():
    st.markdown(cr.verdict(name, table))
    if sentence:
        st.info(f"**Protocol:** {sentence} Every number and chart below is on these evaluation rows.",
                icon=":material/rule:")
    for note in notes.get(name, []):
        st.info(note, icon=":material/shuffle:")
st.caption("Recommended: among the methods that lower the ECE without raising the Brier score (a proper score, "
           "so sharpness counts too), the one with the lowest Brier score on the evaluation rows"
           + (f"; never {cr.CAUTIONARY}, a baseline." if cr.CAUTIONARY in methods else "."))

# ----------------------------------------------------------------------------- one model in detail
names = list(results)
if len(names) > 1:
    chosen = layout.linked(st.selectbox, "Model shown in detail", names, index=0, key="recal_model", options=names,
                          help="Every model has its own fits; the sections below show one model.")
else:
    chosen = names[0]
view, ev, fits, table, sentence, boot_note = results[chosen]
predictions = view.predictions
ok_methods = [name for name, fit in fits.items() if fit.ok]

for note in ev.notes:
    st.warning(note, icon=":material/warning:")
for name, fit in fits.items():
    if not fit.ok:
        (st.warning if fit.severity == "warning" else st.error)(
            f"**{name}** could not be fitted on {literal(chosen)}: {fit.message} Remove it from the methods or "
            "change the protocol.", icon=":material/warning:")
if boot_note:
    st.warning(boot_note, icon=":material/timer:")
if not ok_methods:
    st.error(f"No method could be fitted on {literal(chosen)}. Choose other methods or another protocol.",
             icon=":material/error:")
    st.stop()
if ev.input == "probs":
    st.caption(f"{literal(chosen)} has probabilities only (no logits): methods that work on logits use "
               "log(p + 10⁻¹²), the logits up to a constant per row; an exact zero counts as log(10⁻¹²) ≈ −27.6, "
               "as in scikit-learn's temperature scaling.")

st.subheader(f"Before and after: {literal(chosen)}")
matrix = cr.summary_matrix(ev, table)
best = cr.best_methods(table)
st.dataframe(cr.styled_summary(matrix, best), width="stretch")
st.caption(f"Every metric on the {ev.labels.size:,} evaluation rows (15 uniform bins for the binned errors); first "
           f"row: {cr.BEFORE.lower()}. {cr.best_note(ok_methods)}"
           + (f" {cr.MISSING}: could not be computed." if matrix.isna().any().any() else ""))

st.dataframe(cr.styled_details(table), hide_index=True, width="stretch", column_config=cr.DETAIL_LABELS)
intervals_missing = table[cr.INTERVAL_COLUMNS].isna()
st.caption(interval_text(int(n_boot) if not boot_note else 0, seed, ev.labels.size)
           + (f" {cr.MISSING}: no interval (the resampled values were not finite)."
              if intervals_missing.any().any() and not intervals_missing.all().all() else ""))

st.plotly_chart(change_figure(table, keys=cr.PROBABILITY_SCALE_KEYS,
                              colors={m: i for i, m in enumerate(ok_methods)},
                              title="Change of each calibration error (after − before)"),
                theme=None, key="recal_change",
                config=downloads.chart_config("Recalibration", view.name, "change", ev.protocol.scheme))

# ----------------------------------------------------------------------------- reliability diagrams
st.subheader("Reliability diagrams, before and after")
picker_col, bins_col, binning_col = st.columns([4, 2, 3])
diagram_method = layout.linked(picker_col.selectbox, "Method", ok_methods, index=0, key="method", options=ok_methods,
                               help="The recalibrated predictions shown on the right (and in the simplex).")
n_bins = layout.linked(bins_col.selectbox, "Bins", [10, 15, 20, 30], index=1, key="recal_bins")
binning = layout.linked(binning_col.radio, "Binning", ["uniform", "adaptive"], horizontal=True, index=0,
                        key="recal_binning")
key_base = (view.fingerprint, ev.input, ev.protocol)
after_probs = fits[diagram_method].probs
before_table = cr.reliability(ev.before, ev.labels, (*key_base, cr.BEFORE), int(n_bins), binning)
after_table = cr.reliability(after_probs, ev.labels, (*key_base, diagram_method), int(n_bins), binning)
after_name = f"After: {diagram_method}"
st.plotly_chart(reliability_figure({"Before": before_table, after_name: after_table}, layout="side_by_side",
                                   colors={"Before": 0, after_name: 2}),
                theme=None, key="recal_reliability",
                config=downloads.chart_config("Recalibration", view.name, diagram_method, n_bins, binning))
st.caption("Top-label reliability: each point is a bin's mean confidence against how often the predicted class "
           "was right, with 95% Wilson intervals; bars below: share of evaluation rows per bin.")
downloads.report_button("recalibration", [view], n_bins=n_bins, binning=binning, recalibration=report.Recalibration(
    view.name, table, {"Before": before_table, after_name: after_table}, note=f"{sentence} {ev.labels.size:,} evaluation rows."))

# ----------------------------------------------------------------------------- simplex
st.subheader("Simplex view, before and after")
class_names = tuple(predictions.class_names) or tuple(str(k) for k in range(predictions.n_classes))
left, right = st.columns(2)
for column, label, probs, key in ((left, "Before", ev.before, cr.BEFORE), (right, after_name, after_probs,
                                                                          diagram_method)):
    with column:
        try:
            simplex_view = cr.simplex(probs, ev.labels, (*key_base, key), 10)
        except CalibrationInputError as exc:
            st.warning(f"The simplex view cannot be drawn: {exc}", icon=":material/warning:")
            continue
        figure = simplex_figure(simplex_view, class_names=class_names, title=label)
        figure.update_layout(height=430)
        st.plotly_chart(figure, theme=None, key=f"recal_simplex_{slug(label)}",
                        config=downloads.chart_config("Recalibration", view.name, "simplex", label, "10 bins"))
st.caption(f"Canonical calibration of the whole distribution (Vaicenavicius et al. 2019) on the {ev.labels.size:,} "
           "evaluation rows: the classes summed into three groups, one arrow per cell from the mean prediction to "
           "the observed frequencies. Short arrows: calibrated. More on the Simplex page.")

# ----------------------------------------------------------------------------- temperature surface
st.subheader("Temperature surface")
marks = cr.fitted_temperatures({name: fits[name] for name in ok_methods
                                if name in ("Temperature scaling", "Metric-optimised temperature")})
t_range = cr.surface_range(list(marks.values()))
surface = cr.temperature_surface(predictions, view.fingerprint, ev.protocol, t_range=t_range)
surface_layout = layout.linked(st.radio, "Layout", list(SURFACE_LAYOUTS), format_func=SURFACE_LAYOUTS.get,
                               horizontal=True, index=list(SURFACE_LAYOUTS).index("relative"), key="surface")
st.plotly_chart(temperature_surface_figure(surface.table, surface.minimisers, layout=surface_layout, marks=marks),
                theme=None, key="recal_surface",
                config=downloads.chart_config("Recalibration", view.name, "temperature-surface", surface_layout))
kde_text = (f"; CE_KL (Dirichlet kernel, bandwidth 0.01) on a random {surface.kde_rows:,} of them"
            if surface.kde_rows else "")
failed_text = f" Left out (not finite): {', '.join(surface.failed)}." if surface.failed else ""
if surface.at_edge:
    failed_text += (f" Lowest at an end of the grid (the minimum may lie beyond it): {', '.join(surface.at_edge)}.")
st.caption(f"Each metric of softmax(z / T) on {surface.n_rows:,} evaluation rows{kde_text}, for "
           f"{cr.T_POINTS} temperatures from {t_range[0]:g} to {t_range[1]:g}. Stars: each curve's lowest point. As in "
           "Nixon et al. (2019, Figure 1 right), the temperature that minimises a calibration error is usually "
           "not the one that minimises the NLL (which temperature scaling fits, on the fitting rows)."
           + failed_text)
lowest = surface.minimisers.rename(columns={"metric": "Metric", "temperature": "Lowest at T", "value": "Value there"})
st.dataframe(lowest, hide_index=True, column_config={"Lowest at T": st.column_config.NumberColumn(format="%.3g"),
                                                     "Value there": st.column_config.NumberColumn(format="%.4g")})

# ----------------------------------------------------------------------------- GCE ranking
st.subheader("Ranking under the 32 GCE variants")
ranked = {cr.BEFORE: ev.before, **{name: fits[name].probs for name in ok_methods}}
ranking = cr.gce_ranking(ranked, ev.labels, (*key_base, tuple(ranked)))
metric_col, text_col = st.columns([1, 3])
if len(ranked) >= 3:
    metric_col.metric("Mean rank correlation", f"{ranking.mean_spearman:.2f}",
                      help="Spearman correlation of the methods' values under two variants, averaged over all "
                           "496 pairs of variants. 1: every variant orders the methods the same way.")
else:
    metric_col.metric("Mean rank correlation", "—",
                      help="Needs at least two methods (three rows with the uncalibrated predictions).")
text_col.markdown(
    "Nixon et al. (2019, Table 5) rank recalibration methods under every combination of binning (uniform or "
    "adaptive), top-label or all probabilities, per class or pooled, keeping values above 0 or above 0.01, and "
    "L1 or L2 norm (the general calibration error, `calib_core.gce`), and find that the ranking changes with the "
    "variant.")
text_col.caption(cr.variant_note(ranking, ev))
st.plotly_chart(gce_rank_figure(ranking.ranks, ranking.values, ranking.variants, highlight=(cr.CAUTIONARY,)),
                theme=None, key="recal_gce",
                config=downloads.chart_config("Recalibration", view.name, "GCE-ranks", ev.protocol.scheme))
st.caption(f"Rank 1 = lowest error under that variant (15 bins, {ranking.n_rows:,} evaluation rows); "
           "hover a cell for the variant's settings and its value.")

# ----------------------------------------------------------------------------- downloads
st.subheader("Downloads")
download_method = layout.linked(st.selectbox, "Method to download", ok_methods, index=0, key="download",
                                options=ok_methods)
fit = fits[download_method]
csv_col, json_col = st.columns(2)
csv_col.download_button(
    "Recalibrated predictions (CSV)", lambda: cr.predictions_csv(predictions, ev, fit),
    file_name=f"{slug(chosen)}_{slug(download_method)}_recalibrated.csv", mime="text/csv", on_click="ignore",
    icon=":material/download:", key="recal_download_csv",
    help="Columns label, split, p_<class>. Holdout: the fitted map applied to every row; `split` says which rows "
         "it was fitted on (calibration) and evaluated on (test). Cross-fitting: the out-of-fold predictions.")
json_col.download_button(
    "Fitted parameters (JSON)", fit.params_json or "", file_name=f"{slug(chosen)}_{slug(download_method)}.json",
    mime="application/json", on_click="ignore", icon=":material/data_object:", key="recal_download_json",
    disabled=not fit.params_json,
    help="Recalibrator.to_json(); load it with calib_core.Recalibrator.from_json(text) and call predict_proba."
         + (" Under cross-fitting: the map refitted on all rows." if ev.cross_fitted else ""))
