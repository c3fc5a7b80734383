"""The Lab's calibration-tests tab: the measured size and power of each test of ``calibration_test``."""
import pandas as pd
import streamlit as st

from calib_core import csv_bytes
from studio import compute_lab as cl
from studio import downloads, layout
from calib_core.plot.figures_lab import size_power_figure
from studio.lab.jobs import advance, fmt_size, job_state

TESTS_JOB = "lab:tests_job"


def tests_status(job: cl.Job) -> str:
    role, n = job.pending
    what = "a calibrated model (size)" if role == "size" else "the miscalibrated model (power)"
    return f"Running every chosen test on {job.params.repetitions} test sets of n = {n:,} from {what} …"


def tests_results(job: cl.Job) -> None:
    params: cl.SizePowerParams = job.params
    result = cl.size_power_view(job)
    if result.size.empty and result.power.empty:
        return
    labels = {key: cl.TEST_VARIANTS[key][0] for key in params.tests}
    st.plotly_chart(size_power_figure(result.size, result.power, labels, alpha=result.alpha, band=result.band,
                                      level=result.level), theme=None, key="lab_tests_chart",
                    config=downloads.chart_config("Lab", "size-and-power", f"size at n={params.size_n}",
                                                  f"{params.repetitions} repetitions"))
    st.caption(f"Left: the share of {params.repetitions} test sets of n = {params.size_n:,} rows from a calibrated "
               f"model ({result.calibrated}) on which each test rejects at α = {result.alpha:g}, with its "
               f"{result.level:.0%} Clopper-Pearson interval; green: the accepted band "
               f"{result.band[0]:g}-{result.band[1]:g}; a cross marks a flagged test. Right: the same share on "
               f"{result.miscalibrated}, against n (its power). R = {params.repetitions} test sets per point: "
               f"an interval at R = 200 is about ±3 points wide around 0.05.")
    for key, sentence in result.flags.items():
        st.warning(f"**Flagged: {labels[key]}.** {sentence}", icon=":material/flag:")
    if not result.size.empty and not result.flags:
        st.success("No test's measured size leaves the band at these settings.", icon=":material/check_circle:")
    if job.running:
        return
    table = pd.concat([result.size.assign(kind="size (calibrated)"), result.power.assign(kind="power")],
                      ignore_index=True)
    table["test"] = table["test"].map(labels)
    st.dataframe(table[["kind", "test", "n", "repetitions", "rejections", "rate", "ci_low", "ci_high", "flagged"]],
                 hide_index=True, width="stretch",
                 column_config={"rate": st.column_config.NumberColumn("rejection rate", format="%.3f"),
                                "ci_low": st.column_config.NumberColumn(f"{result.level:.0%} low", format="%.3f"),
                                "ci_high": st.column_config.NumberColumn(f"{result.level:.0%} high",
                                                                         format="%.3f"),
                                "flagged": st.column_config.CheckboxColumn("size flagged")})
    st.download_button("Download every p-value as CSV", csv_bytes(result.p_values), file_name="test_p_values.csv",
                       mime="text/csv", on_click="ignore", icon=":material/download:", key="lab:tests_download")


def size_power_section() -> None:
    st.markdown(
        "A calibration test promises to reject a calibrated model in a share α of test sets (its **size**) and "
        "to reject a miscalibrated one more and more often as n grows (its **power**). Here each test of "
        "`calibration_test` runs on many simulated test sets whose calibration is known. A test whose measured "
        "size leaves [0.03, 0.07] at α = 0.05 is flagged (see docs/tests.md for the figures at large R).")
    keys = list(cl.TEST_VARIANTS)
    presets = list(cl.POWER_PRESETS)
    with st.form("lab:tests_form"):
        tests = layout.linked(st.multiselect, "Tests", keys, format_func=lambda k: cl.TEST_VARIANTS[k][0],
                              default=keys, key="lab_tests")
        preset = layout.linked(st.selectbox, "Miscalibrated model of the power curve", presets, index=0,
                               key="lab_power_model")
        cols = st.columns([3, 1, 1, 1])
        size_options = list(cl.POWER_SIZE_OPTIONS)
        sizes = layout.linked(cols[0].multiselect, "Test-set sizes n of the power curve", size_options,
                              format_func=fmt_size, default=list(cl.DEFAULT_POWER_SIZES), key="lab_power_sizes")
        size_n = layout.linked(cols[1].selectbox, "n of the size", size_options, format_func=fmt_size,
                               index=size_options.index(cl.DEFAULT_SIZE_N), key="lab_size_n")
        repetitions = layout.linked(cols[2].number_input, "Repetitions R", 20, 5000,
                                    value=cl.DEFAULT_TEST_REPETITIONS, step=50, key="lab_tests_repetitions",
                                    help="Test sets per point. The default R = 200 keeps the run near "
                                                "10 s; the interval of a size shrinks like 1/√R.")
        seed = layout.linked(cols[3].number_input, "Seed", 0, 2**31 - 1, value=0, step=1, key="lab_tests_seed")
        submitted = st.form_submit_button("Run the tests", type="primary", icon=":material/play_arrow:",
                                          key="lab:tests_run")
    if not tests or not sizes:
        if submitted:
            st.error("Choose at least one test and one size of the power curve, then press Run the tests.",
                     icon=":material/error:")
        return
    params = cl.SizePowerParams(tuple(tests), tuple(float(v) for v in cl.POWER_PRESETS[preset]), int(size_n),
                                tuple(sorted(int(n) for n in sizes)), int(repetitions), int(seed))
    job: cl.Job | None = st.session_state.get(TESTS_JOB)
    if submitted and (job is None or job.params != params or job.stopped):
        job = cl.size_power_job(params)
        st.session_state[TESTS_JOB] = job
    if job is None:
        st.info(f"Press **Run the tests**. The default run (R = {cl.DEFAULT_TEST_REPETITIONS} test sets for the "
                f"size at n = {cl.DEFAULT_SIZE_N} and for each of "
                f"{len(cl.DEFAULT_POWER_SIZES)} sizes of the power curve) takes about 10 s.",
                icon=":material/science:")
        return
    bar = job_state(TESTS_JOB, job, tests_status, what="run", fix="Change the settings and press Run the tests.",
                    button="Run the tests")
    if not (job.running or job.error or job.stopped) and job.params != params:
        st.caption("Showing the last run; press **Run the tests** to apply the changed settings.")
    tests_results(job)
    if job.running:
        advance(TESTS_JOB, job, bar, lambda chunk, cb: cl.compute_size_power_chunk(job.params, chunk, cb),
                tests_status(job))
