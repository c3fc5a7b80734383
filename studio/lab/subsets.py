"""The Lab's test-set-size tab: every metric on random subsets of the user's data, and which are stable."""
import streamlit as st

from calib_core import METRICS, csv_bytes
from calib_core.lab.stability import stability_table
from studio import compute_lab as cl
from studio import downloads, layout
from calib_core.plot.figures_lab import subset_figure
from studio.lab.jobs import advance, data_page_link, job_state
from studio.text import md

STUDY_JOB = "lab:study_job"
METRIC_NAMES = {spec.key: spec.label for spec in METRICS}
BINNINGS = {"uniform": "uniform width", "adaptive": "adaptive (equal mass)"}


def study_status(job: cl.Job) -> str:
    name = job.pending
    done = sum(1 for c in job.chunks if c in job.done)
    return (f"{name} (model {done + 1} of {len(job.chunks)}): every metric on {job.params.repetitions} random "
            "subsets of each size …")


def study_results(job: cl.Job, models, tolerance: float) -> None:
    summary = cl.study_summary(job)
    if summary.empty:
        return
    st.plotly_chart(subset_figure(summary, METRIC_NAMES), theme=None, key="lab_study_chart",
                    config=downloads.chart_config("Lab", *(name for name, _, _ in job.params.models),
                                                  "test-set-size", job.params.n_bins, job.params.binning))
    st.caption(f"Each point: the mean of the metric over {job.params.repetitions} random subsets of that size "
               "(drawn without replacement); the band holds the middle 90%. The last point of each line is "
               "the whole test set. A line that still slopes at the right end means the estimate depends on N.")
    rows = {m.name: m.predictions.n_samples for m in models}
    table = stability_table(summary, rows, tolerance)
    if table.empty:
        return
    st.markdown(f"**Which estimates are stable at your N?** (standard error and drift below {tolerance:.0%})")
    for model, part in table.groupby("model", sort=False):
        stable = [METRIC_NAMES.get(m, m) for m in part.loc[part["stable"], "metric"]]
        unstable = [f"{METRIC_NAMES.get(m, m)} (std. error {se:.1%}, drift {d:.1%})"
                    for m, se, d in part.loc[~part["stable"], ["metric", "relative_se", "drift"]].itertuples(
                        index=False)]
        if not unstable:
            st.markdown(f"**{md(model)}** (N = {rows[model]:,}): every metric is stable: {', '.join(stable)}.")
        else:
            st.markdown(f"**{md(model)}** (N = {rows[model]:,}): stable: {', '.join(stable) or 'none'}; "
                        f"not stable: {', '.join(unstable)}.")
    shown = table.assign(metric=table["metric"].map(lambda m: METRIC_NAMES.get(m, m)))
    st.dataframe(shown.rename(columns={"value": "value at N", "half": "N/2", "std_half": "std at N/2",
                                       "relative_se": "relative std. error", "drift": "drift N/2 → N"}),
                 hide_index=True, width="stretch",
                 column_config={"value at N": st.column_config.NumberColumn(format="%.4f"),
                                "std at N/2": st.column_config.NumberColumn(format="%.4f"),
                                "relative std. error": st.column_config.NumberColumn(format="percent"),
                                "drift N/2 → N": st.column_config.NumberColumn(format="percent")})
    st.caption("Subsets of half the rows vary about as much as a whole new test set of N rows would (for a "
               "mean, σ²/n·(1 − n/N) = σ²/N at n = N/2), so their spread is taken as the standard error at N. "
               "The drift is how much the mean still changes from N/2 to N: an estimate biased at small sizes, "
               "like the binned ECE, keeps moving (Gruber & Buettner 2022, appendix G.2-G.3).")
    st.download_button("Download the study as CSV", csv_bytes(summary),
                       file_name="test_set_size_study.csv", mime="text/csv", on_click="ignore",
                       icon=":material/download:")


def your_data(models) -> None:
    if not models:
        st.info("Load or show at least one model on the Data page to study how its estimates depend on the "
                "test-set size.")
        data_page_link()
        return
    st.markdown(
        "How much would your numbers change with another test set, or a bigger one? Every metric is computed "
        "on random subsets of your test set, from 100 rows up to all N of them, many times at each size "
        "(Gruber & Buettner 2022, appendix G.2).")
    keys = list(METRIC_NAMES)
    with st.form("lab:study_form"):
        metrics = layout.linked(st.multiselect, "Metrics", keys, format_func=METRIC_NAMES.get,
                                default=list(cl.default_study_metrics()), key="lab_study_metrics",
                                help="The O(N²) kernel estimators are left out at first: on large test sets "
                                      "they take long.")
        cols = st.columns(4)
        repetitions = layout.linked(cols[0].number_input, "Subsets per size", 2, 1000, value=20, step=5,
                                    key="lab_study_repetitions")
        n_bins = layout.linked(cols[1].number_input, "Bins", 1, 1000, value=15, step=1, key="lab_study_bins")
        binning = layout.linked(cols[2].radio, "Binning", list(BINNINGS), format_func=BINNINGS.get, index=0,
                                key="lab_study_binning",
                                help="For ECE, RMSCE, MCE and class-wise ECE (the others fix their own).")
        seed = layout.linked(cols[3].number_input, "Seed", 0, 2**31 - 1, value=0, step=1, key="lab_study_seed")
        submitted = st.form_submit_button("Run the study", type="primary", icon=":material/play_arrow:",
                                          key="lab:study_run")
    tolerance = layout.linked(st.slider, "Call an estimate stable when its relative standard error and drift are "
                              "below", 0.01, 0.5, value=0.1, step=0.01, format="%.2f", key="lab_tolerance")
    eligible = [m for m in models if m.predictions.n_samples >= cl.MIN_STUDY_ROWS]
    for m in models:
        if m not in eligible:
            st.warning(f"{md(m.name)} has {m.predictions.n_samples:,} rows ({md(m.rows)}); the study needs at least "
                       f"{cl.MIN_STUDY_ROWS} (subsets from 100 rows up, and half of all rows). Load a larger "
                       "test set to include it.", icon=":material/info:")
    if not eligible:
        return
    if not metrics:
        st.error("Choose at least one metric, then press Run the study.", icon=":material/error:")
        return
    params = cl.StudyParams(tuple((m.name, m.fingerprint, m.predictions.n_samples) for m in eligible),
                            tuple(metrics), int(repetitions), int(n_bins), binning, int(seed))
    job: cl.Job | None = st.session_state.get(STUDY_JOB)
    if job is None or job.params != params or (submitted and job.stopped):
        job = cl.study_job(params)
        st.session_state[STUDY_JOB] = job
    bar = job_state(STUDY_JOB, job, study_status, what="study",
                    fix="Change the metrics or bins and run it again.", button="Run the study")
    study_results(job, eligible, tolerance)
    if job.running:
        views = {m.name: m.predictions for m in eligible}
        advance(STUDY_JOB, job, bar, lambda chunk, cb: cl.compute_study_chunk(params, views, chunk, cb),
                study_status(job))
