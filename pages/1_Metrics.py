"""Metrics: every registered metric for every loaded model, with the interval each metric declares.

The estimates are drawn at once; the intervals fill in at the end of the script, one metric at a time, with a
progress bar and a Stop button (:mod:`studio.metrics_page`).
"""
import numpy as np
import streamlit as st

import calib_core as cc
from studio import compute, deployment, downloads, layout, metrics_page, state
from calib_core.plot import figures
from studio.estimators.sections import fixable_section
from studio.systems_section import systems_section
from studio.text import md

models = layout.setup_page("Metrics")
st.title("Metrics")
st.markdown(
    "Every metric for every model, named with the settings that change its value (bins, kernel bandwidth h), "
    "so a name means the same number here, on the Estimators page and in the command line. Each metric has the "
    "interval that suits its estimator (column *Interval*): a percentile bootstrap for the accuracy and the "
    "proper scores, the estimate ± z bootstrap standard errors for the biased binned and kernel errors (their "
    "resamples are biased further, so a percentile interval can miss the estimate; the ICI with at most "
    f"{cc.metrics.registry.LOESS_MAX_BOOT} resamples), a variance formula for SKCE and for Cox's slope, intercept and "
    "calibration-in-the-large (Wald; with more than two classes, a sandwich error of the one-vs-rest mean), "
    "none for the leave-one-out kernel estimates and E50/E90. One seed draws the same resamples for every metric. "
    "Click a column header to sort."
)
layout.require_models(models)

bins_col, binning_col, boot_col, level_col, seed_col = st.columns([3, 2, 2, 2, 2])
n_bins = layout.linked(bins_col.slider, "Bins (binned metrics)", 2, 100, value=15, key="metric_bins",
                         help="Number of bins of ECE, RMSCE, MCE, class-wise ECE, SCE, ACE and TACE.")
binning = layout.linked(binning_col.radio, "Binning of ECE, RMSCE, MCE, class-wise ECE", ["uniform", "adaptive"],
                        index=0, key="metric_binning", horizontal=True,
                            help="SCE always uses uniform bins, ACE and TACE always adaptive ones.")
n_boot = layout.linked(boot_col.selectbox, "Bootstrap resamples", [0, 100, 200, 500, 1000], index=2, key="boot",
                            format_func=lambda n: "none (no bootstrap intervals)" if n == 0 else f"{n:,}",
                            help="For the metrics whose interval is a bootstrap; SKCE's variance-formula "
                                 "interval needs none.")
level = layout.linked(level_col.selectbox, "Interval", [0.90, 0.95, 0.99], index=1, key="level",
                      format_func=lambda p: f"{p:.0%}")
seed = layout.linked(seed_col.number_input, "Seed", min_value=0, max_value=2**31 - 1, step=1, value=0, key="seed")

alpha = round(1 - level, 10)
table, jobs = compute.estimates_table(models, n_bins=n_bins, binning=binning, n_boot=int(n_boot), seed=int(seed),
                                      alpha=alpha)
jobs = metrics_page.fill_known(table, jobs)  # intervals this session already has: shown at once
run = metrics_page.run_key(models, n_bins=n_bins, binning=binning, n_boot=int(n_boot), alpha=alpha, seed=int(seed))
pending = metrics_page.STOPPED if metrics_page.is_stopped(run) else metrics_page.COMPUTING
names = {spec.key: cc.metric_name(spec.key, n_bins=n_bins, binning=binning) for spec in cc.METRICS}
many_fits = [m for m in models if any(cc.get_metric(key).per_class_fit
                                      for key in cc.skipped_for_size(*m.predictions.probs.shape))]
if many_fits:
    st.info(f"{md(', '.join(m.name for m in many_fits))}: more than {cc.MAX_FIT_CELLS:,} rows × per-class fits, "
            "so the one-vs-rest fits (Cox slope, Cox intercept, calibration-in-the-large, ICI, E50, E90: one "
            "regression or loess curve per class) are left out here; `calib_core.cox_calibration` and "
            "`calib_core.ici` compute them.")
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

status_slot = st.empty()  # the progress of the intervals and the Stop button, near the top
st.subheader("Overview")
# One row per metric (its name with its settings), one column per model; an estimate outside its bounds is marked.
wide = metrics_page.overview(table, list(names.values()))
st.dataframe(wide, width="stretch", height=min(36 * (len(wide) + 1) + 3, 720), placeholder="n/a",
             column_config={"_index": st.column_config.TextColumn("Metric (settings)", width="large"),
                            **{model: st.column_config.TextColumn(model) for model in wide.columns}})
unreliable = table[table["unreliable"] != ""]
if not unreliable.empty:
    st.warning("**Unreliable at this N and K** (marked ⚠; the value is kept, but the true quantity cannot be "
               "there):\n\n" + "\n".join(f"- {md(row.model)}, {md(row.name)} = {row.estimate:.4g}: "
                                           f"{md(row.unreliable)}" for row in unreliable.itertuples()),
               icon=":material/warning:")

st.subheader("Estimates and intervals")
st.caption("The estimates come first; the intervals fill in one metric at a time (*Stop* keeps those computed "
           "so far). The CSV download appears when they are all in, or after a stop; then the unfinished rows "
           "have empty interval columns and say so in the *interval* column.")
table_slot, download_slot = st.empty(), st.empty()
metrics_page.show_table(table_slot, metrics_page.marked(table, pending), level)
download_slot.caption("The CSV download appears when the intervals are computed.")

with st.expander("Deployment prevalence"):
    st.markdown(
        "If the model will meet a class more or less often than in this test set (prior shift), Bayes' rule moves "
        "each prediction to the deployment prevalence π′: odds(p′) = odds(p) · odds(π′) / odds(π) (Saerens et al. "
        "2002, eq. 2.4; `calib_core.adjust_prevalence`). Binary models: P(class 1); more classes: one class "
        "against the rest. Both columns are measured against the **test** labels, which keep the test "
        "prevalence: *after* shows how far the deployment predictions sit from the test frequencies. The shift "
        "is a constant on the logit scale, so Cox's slope does not move and the calibration-in-the-large moves by "
        "−log(odds factor).")
    prev_cols = st.columns([3, 3, 2])
    prev_model = layout.linked(prev_cols[0].selectbox, "Model", list(range(len(models))), index=0,
                               key="prevalence_model", options=list(range(len(models))),
                               format_func=lambda i: models[i].name)
    chosen = models[prev_model].predictions
    class_options = [1] if chosen.n_classes == 2 else list(range(chosen.n_classes))
    prev_class = layout.linked(prev_cols[1].selectbox, "Class", class_options, index=0, key="prevalence_class",
                               options=class_options, format_func=lambda k: str(chosen.class_names[k]),
                               disabled=chosen.n_classes == 2)
    target = layout.linked(prev_cols[2].number_input, "Deployment prevalence π′", min_value=0.001, max_value=0.999,
                           value=0.1, step=0.01, format="%.3f", key="prevalence")
    view = compute.prevalence_view(chosen, models[prev_model].fingerprint, int(prev_class), float(target), n_bins)
    class_text = md(chosen.class_names[prev_class])
    if view["error"]:
        st.error(f"Cannot shift class {class_text}: {md(view['error'])}")
    else:
        st.markdown(
            f"Class {class_text}: test prevalence π = {view['source']:.3f}, deployment π′ = {view['target']:.3f}. "
            f"Every prediction's odds are multiplied by **{view['odds_factor']:.4g}**; the mean predicted "
            f"probability moves from {view['mean_before']:.3f} to {view['mean_after']:.3f}.")
        st.dataframe(view["table"], hide_index=True, width="stretch", placeholder="n/a",
                     column_order=["metric", "before", "after", "reason"],
                     column_config={"metric": st.column_config.TextColumn("Metric (settings)", width="large"),
                                    "before": st.column_config.NumberColumn("Before (test π)", format="%.4f"),
                                    "after": st.column_config.NumberColumn("After (π′)", format="%.4f"),
                                    "reason": st.column_config.TextColumn("Not available because")})

st.subheader("Calibration tests")
st.markdown(
    "Is the miscalibration real, or noise? Each test of `calibration_test` at its default settings, at α = 0.05: "
    "small p-values are evidence of miscalibration; the verdict and its reason come from calib_core (the same "
    "rule on every page). The last column is the test's **measured size** on calibrated simulations (the Lab's "
    "*Calibration tests: size and power* tab): how often it rejects a calibrated model when it promises 5%.")
tests = layout.run_with_progress(
    "Running the calibration tests",
    lambda report: compute.tests_table(models, seed=int(seed), on_progress=report),
)
st.dataframe(
    tests, hide_index=True, width="stretch", placeholder="–",
    column_order=["model", "test", "statistic", "p_value", "verdict", "reason", "measured_size"],
    column_config={
        "model": st.column_config.TextColumn("Model"),
        "test": st.column_config.TextColumn("Test"),
        "statistic": st.column_config.NumberColumn("Statistic", format="%.4g"),
        "p_value": st.column_config.NumberColumn("p-value", format="%.4f"),
        "verdict": st.column_config.TextColumn("Verdict"),
        "reason": st.column_config.TextColumn("Why", width="large"),
        "measured_size": st.column_config.TextColumn("Measured size at α = 0.05", width="large"),
    },
)
infinite = tests[np.isinf(tests["statistic"].astype(float))]
if len(infinite):
    st.caption(md(
        "Infinity in the Statistic column (" + ", ".join(f"{row.test} on {row.model}" for row in infinite.itertuples())
        + "): the model gave probability 0 (or 1) to rows whose labels say otherwise; the Why column says which."))
if deployment.has_inconclusive(tests):
    with st.expander("Inconclusive: how many labelled rows would settle it?", icon=":material/help:"):
        deployment.planner_section(models, key="metrics_plan")
flagged = [cc.lab.size_power.TEST_LABELS[m] for m in cc.lab.size_power.FLAGGED_TESTS]
if flagged:
    st.warning(f"Flagged by the Lab: {', '.join(flagged)}: its measured size leaves [0.03, 0.07], so its p-value "
               "is not what it promises (see the last column).", icon=":material/flag:")

systems_slot = st.empty()  # Compare systems (two or more confidence models): filled after the intervals

st.subheader("What recalibration can fix")
fixable_slot = st.empty()  # filled at the end of the page, after the intervals (cross-fitting takes seconds)
fixable_slot.caption("Computed after the intervals.")

st.info("Calibrated on average is not calibrated for everyone: the *Groups* page shows each group's ECE/ACE "
        "with an interval, the worst group and its gap to all rows (pick a group column on the Data page under "
        "*Correct the column mapping*).", icon=":material/groups:")

st.subheader("Calibration errors with intervals")
st.caption(f"Errors on the probability scale of ECE, binned ones with {n_bins} bins ({binning} for ECE, RMSCE, MCE "
           "and class-wise ECE, uniform for SCE, adaptive for ACE and TACE), with the intervals of the table. "
           "Squared errors and divergences (SKCE, CE_KL, CE₂²) are in the tables above and on the Estimators page.")
chart_slot = st.empty()
chart_slot.caption("The chart appears when the intervals are computed.")

st.subheader("What each metric measures")
for spec in cc.METRICS:
    settings = ("bin count and binning" if spec.uses_binning else "bin count" if spec.uses_bins
                else "kernel bandwidth" if spec.bandwidth is not None else "no bins")
    interval = cc.metrics.registry.INTERVAL_METHODS[spec.interval]
    st.markdown(f"**{names[spec.key]}** ({settings}; interval: {interval}). {spec.summary}  \n"
                f"*Pitfalls:* {spec.pitfalls}")
downloads.report_button("metrics", models, n_bins=n_bins, binning=binning, n_boot=n_boot, seed=seed, alpha=alpha)


def finish(final, stopped):
    """The CSV download and the chart, once the intervals are in (or stopped: then with those finished)."""
    with download_slot:
        st.download_button("Download as CSV", cc.csv_bytes(final), file_name="calibration_metrics.csv",
                           mime="text/csv", on_click="ignore", icon=":material/download:")
    with chart_slot:
        st.plotly_chart(figures.metric_interval_figure(final, colors=state.model_colors()), theme=None,
                        key="metrics_chart",
                        config=downloads.chart_config("Metrics", *[m.name for m in models], "intervals", n_bins,
                                                      binning))


metrics_page.fill_intervals(table, jobs, key=run, level=level, table_slot=table_slot, status_slot=status_slot,
                            finish=finish)
with systems_slot.container():
    systems_section(models, n_boot=int(n_boot), seed=int(seed), alpha=alpha)
with fixable_slot.container():
    layout.run_with_progress("Cross-fitting the recalibration methods", lambda report: fixable_section(
        models, n_boot=lambda model: int(n_boot), seed=int(seed), key="metric_fixable", alpha=alpha))
