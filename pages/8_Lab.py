"""Lab: how far a calibration number can be trusted.

Simulations with a known truth, a test-set-size study on the user's own data,
bin-count rank stability and a gallery of pathologies. Long runs advance one
chunk per script run with a progress bar and a Stop button (see
:mod:`studio.compute_lab` for why that pattern stops reliably).
"""
import pandas as pd
import streamlit as st

from calib_core import METRICS, CalibrationInputError, csv_bytes
from calib_core.lab.studies import DEFAULT_SIZES
from studio import compute_lab as cl
from studio import downloads, layout, state
from studio.figures_lab import (correlation_heatmap, futami_figure, lab_figure, size_power_figure, subset_figure,
                                variant_heatmap)
from studio.layout import default
from studio.text import md

TABS = ["Simulation lab", "Calibration tests: size and power", "Your data: test-set size", "Bin-count rank stability",
        "Pathology gallery"]
LAB_JOB, STUDY_JOB, TESTS_JOB = "lab:job", "lab:study_job", "lab:tests_job"
VIEWS = {"estimate": "estimates and true values", "error": "error: estimate − true value"}
METRIC_NAMES = {spec.key: spec.label for spec in METRICS}
BINNINGS = {"uniform": "uniform width", "adaptive": "adaptive (equal mass)"}


def stop_job(key: str) -> None:
    """The Stop button's callback: it runs first in the script run that interrupted the computation."""
    job = st.session_state.get(key)
    if job is not None:
        job.stopped = True


def progress_row(key: str, job: cl.Job, text: str):
    """A progress bar and a Stop button; returns the bar."""
    bar_col, stop_col = st.columns([6, 1], vertical_alignment="bottom")
    bar = bar_col.progress(job.fraction(), text=text)
    stop_col.button("Stop", key=f"{key}:stop", on_click=stop_job, args=(key,), icon=":material/stop_circle:",
                    width="stretch", help="Stop after the chunks already finished; they are kept.")
    return bar


def advance(key: str, job: cl.Job, bar, compute, text: str) -> None:
    """Compute the job's next chunk with the bar following calib_core's on_progress, then rerun the script."""
    def on_progress(done: int, total: int) -> None:
        bar.progress(job.fraction(done / total if total else 1.0), text=text)

    job.advance(compute, on_progress)
    st.rerun()


def data_page_link() -> None:
    st.page_link("app.py", label="Go to the Data page", icon=":material/upload_file:",
                 query_params=state.link_params() or None)


def fmt_size(n: int) -> str:
    return f"{n:,}"


# ============================================================================ simulation lab
def apply_preset() -> None:
    b0, b1 = cl.LOGISTIC_PRESETS[st.session_state["keep:lab.preset"]]
    st.session_state["keep:lab.b0"], st.session_state["keep:lab.b1"] = float(b0), float(b1)


def generator_inputs(kind: str) -> dict:
    """The chosen generator's parameters (drawn inside the form)."""
    defaults = cl.GENERATORS[kind][1]
    cols = st.columns(3)
    if kind == "logistic":
        b0 = cols[0].number_input("b0 (intercept)", -10.0, 10.0, step=0.1, format="%.2f",
                                  key=default("keep:lab.b0", defaults["b0"]))
        b1 = cols[1].number_input("b1 (slope)", -10.0, 10.0, step=0.1, format="%.2f",
                                  key=default("keep:lab.b1", defaults["b1"]))
        cols[2].caption("Model P(Y=1 | x) = 1 / (1 + exp(−b0 − b1·x)) on X | Y ~ N(∓1, 1). (0, −2) is the "
                        "Bayes-optimal, calibrated model; b1 between −2 and 0 under-confident, below −2 "
                        "over-confident; b0 ≠ 0 shifts it.")
        return {"b0": b0, "b1": b1}
    if kind == "logistic_normal":
        k = cols[0].number_input("Classes K", 2, 100, step=1, key=default("keep:lab.ln_classes",
                                                                          int(defaults["n_classes"])),
                                 help="The paper uses K = 100; every size then costs ten times as much.")
        t = cols[1].number_input("Temperature T (miscalibration)", 0.05, 20.0, step=0.1, format="%.2f",
                                 key=default("keep:lab.ln_temperature", defaults["temperature"]),
                                 help="1: calibrated. Above 1 the predictions are under-confident, below 1 "
                                      "over-confident; the accuracy does not change.")
        scale = cols[2].number_input("Covariance scale", 0.1, 100_000.0, step=10.0, format="%.1f",
                                     key=default("keep:lab.ln_scale", defaults["scale"]),
                                     help="Scale matrix of the inverse-Wishart draw of the logit covariance; "
                                          "215 gives the paper's 87.6% accuracy with K = 100.")
        return {"n_classes": k, "temperature": t, "scale": scale}
    k = cols[0].number_input("Classes K", 2, 50, step=1, key=default("keep:lab.us_classes",
                                                                     int(defaults["n_classes"])))
    t1 = cols[1].number_input("Sharpening t1", 0.05, 20.0, step=0.05, format="%.2f",
                              key=default("keep:lab.us_t1", defaults["t1"]),
                              help="Temperature of the calibrated predictions (0.9 in the paper).")
    t2 = cols[2].number_input("Miscalibration t2", 0.05, 20.0, step=0.05, format="%.2f",
                              key=default("keep:lab.us_t2", defaults["t2"]),
                              help="Temperature applied after the labels are drawn: 1 calibrated, 0.6 in "
                                   "the paper (over-confident).")
    return {"n_classes": k, "t1": t1, "t2": t2}


def lab_settings() -> tuple[cl.LabParams | None, bool]:
    """The settings and the Run button: the run's parameters (None if invalid) and whether Run was pressed.

    Problems are shown (with ``st.error``) only when Run was pressed.
    """
    kinds = list(cl.GENERATORS)
    kind = st.selectbox("Ground-truth model", kinds, format_func=lambda k: cl.GENERATORS[k][0],
                        key=default("keep:lab.generator", "logistic"),
                        help="Models whose true calibration errors are known, from the papers the lab follows.")
    if kind == "logistic":
        presets = list(cl.LOGISTIC_PRESETS)
        st.selectbox("Start from the parameters of", presets, key=default("keep:lab.preset", presets[0]),
                     on_change=apply_preset, help="Fills in b0 and b1 below.")
    options = cl.estimator_options()
    with st.form("lab:form"):
        params = generator_inputs(kind)
        estimators = st.multiselect(
            "Estimators", list(options), format_func=options.get,
            key=default("keep:lab.estimators", cl.default_estimators(), list(options)),
            help="Optimal B: Futami & Fujisawa's B* = ⌊(2n(1+L)²/log 2)^⅓⌋ at each n. SKCE and the KDE "
                 "estimators cost O(n²) and run up to n = 3,000 only. Smooth ECE has no closed-form truth.")
        cols = st.columns([1, 3, 1, 1])
        fixed_bins = cols[0].number_input("B of the fixed-B ECEs", 1, 1000, step=1,
                                          key=default("keep:lab.fixed_bins", 15))
        sizes = cols[1].multiselect("Test-set sizes n", list(cl.SIZE_OPTIONS), format_func=fmt_size,
                                    key=default("keep:lab.sizes", list(DEFAULT_SIZES), list(cl.SIZE_OPTIONS)))
        repetitions = cols[2].number_input("Repetitions R", 2, 5000, step=10, key=default("keep:lab.repetitions", 50),
                                           help="Test sets drawn at each size.")
        seed = cols[3].number_input("Seed", 0, 2**31 - 1, step=1, key=default("keep:lab.seed", 0))
        submitted = st.form_submit_button("Run", type="primary", icon=":material/play_arrow:", key="lab:run")
    problems = []
    if not estimators:
        problems.append("Choose at least one estimator, then press Run.")
    if not sizes:
        problems.append("Choose at least one test-set size, then press Run.")
    try:
        spec = cl.GeneratorSpec.make(kind, **params)
        spec.build()
    except CalibrationInputError as exc:
        problems.append(f"This model cannot be simulated: {exc} Change its parameters and press Run.")
    else:
        too_big = [n for n in sizes if n * spec.n_classes > cl.MAX_TEST_SET_VALUES]
        if too_big:
            problems.append(f"A test set of n = {max(too_big):,} rows with K = {spec.n_classes} classes holds "
                            f"{max(too_big) * spec.n_classes:,} probabilities, more than the "
                            f"{cl.MAX_TEST_SET_VALUES:,} the lab simulates at once. Remove the sizes above "
                            f"{cl.MAX_TEST_SET_VALUES // spec.n_classes:,} or choose fewer classes, then press Run.")
    if problems:
        if submitted:
            for problem in problems:
                st.error(problem, icon=":material/error:")
        return None, submitted
    return cl.LabParams(spec, tuple(estimators), int(fixed_bins), tuple(sorted(int(n) for n in sizes)),
                        int(repetitions), int(seed)), submitted


def lab_status(job: cl.Job) -> str:
    params: cl.LabParams = job.params
    chunk = job.pending
    if chunk == cl.TRUTH_CHUNK:
        return "Computing the true values of the model (quadrature or a large reference sample) …"
    done = sum(1 for n in params.sizes if n in job.done)
    return (f"Simulating {params.repetitions} test sets of n = {chunk:,} (size {done + 1} of {len(params.sizes)}) "
            "and running the estimators …")


def lab_results(view: cl.LabView, job: cl.Job) -> None:
    params = view.params
    truth = view.truth
    st.subheader(view.model_name)
    targets = [t for t in dict.fromkeys(view.targets.values()) if t]
    cells = st.columns(min(len(targets) + 1, 6))
    cells[0].metric("Accuracy", f"{truth['accuracy']:.3f}", help="P(Y = predicted class) of the model.")
    for cell, target in zip(cells[1:], targets):
        cell.metric(f"True {cl.TARGET_NAMES.get(target, target)}", f"{truth[target]:.4f}",
                    help=f"{cl.TRUTH_KEYS.get(target, '')} ({truth.method.get(target, '')}).")
    if view.summary.empty:
        st.caption("No test-set size finished yet.")
        return
    view_mode = st.radio("Show", list(VIEWS), format_func=VIEWS.get, horizontal=True,
                         key=default("keep:lab.view", "estimate"))
    figure = lab_figure(view.summary, truth.values, cl.TARGET_NAMES, view=view_mode)
    st.plotly_chart(figure, theme=None, key="lab_chart",
                    config=downloads.chart_config("Lab", view.model_name, "simulation", view_mode))
    skipped = sorted({view.labels[e] for e in view.params.estimators}
                     - set(view.summary["label"]))
    limited = [label for key, label in view.labels.items()
               if set(view.summary.loc[view.summary["estimator"] == key, "size"]) != set(view.sizes_done)]
    notes = [f"Each point: the mean of {params.repetitions} estimates on independent test sets of that size; the "
             "band holds the middle 90% of them (5th to 95th percentile). Dashed lines: the true value of "
             "the quantity each estimator targets, so the gap between a line and its estimator is the bias."]
    if limited or skipped:
        notes.append(f"Quadratic-cost estimators run only up to n = 3,000: {', '.join(limited or skipped)}.")
    if any(t is None for t in view.targets.values()):
        notes.append("Smooth ECE has no closed-form truth: no line, and it is left out of the error view.")
    st.caption(" ".join(notes))
    if job.running:  # the rest once the run is over: redrawing it after every size would slow the run down
        return

    st.markdown("**Bias and spread** (bias = mean − truth; mean |error| = E|estimate − truth|)")
    table = view.summary.assign(target=view.summary["target"].map(lambda t: cl.TARGET_NAMES.get(t, t) if t else "–"))
    table = table[["label", "size", "target", "truth", "mean", "bias", "std", "q05", "q95", "mean_abs_error", "rmse",
                   "repetitions"]].rename(columns={"label": "estimator", "size": "n", "mean_abs_error": "mean |error|"})
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in ("truth", "mean", "bias", "std", "q05", "q95", "mean |error|", "rmse")})
    st.download_button("Download every estimate as CSV", csv_bytes(view.estimates),
                       file_name="lab_estimates.csv", mime="text/csv", on_click="ignore",
                       icon=":material/download:")

    st.markdown("**Futami & Fujisawa (2024): bias bounds of the binned ECE and the optimal number of bins**")
    use_fixed = any(k in cl.FIXED_ECE for k in params.estimators)
    optimal, fixed = cl.futami_curves(params.sizes, view.lipschitz, params.fixed_bins if use_fixed else None)
    observed = cl.observed_gap(view)
    st.plotly_chart(futami_figure(optimal, observed, fixed=fixed, fixed_bins=params.fixed_bins
                                  if use_fixed else None, lipschitz=view.lipschitz,
                                  lipschitz_known=view.lipschitz_known),
                    theme=None, key="lab_bounds_chart",
                    config=downloads.chart_config("Lab", view.model_name, "Futami-bounds"))
    source = ("the Lipschitz constant of this model's calibration function" if view.lipschitz_known
              else "L = 1 assumed (this model's L is unknown or unbounded)")
    binary = "" if params.spec.n_classes == 2 else (
        " The bounds are derived for binary classifiers; for K > 2 they are shown for reference.")
    slopes = cl.gap_slopes(observed)
    slope_text = ("; ".join(f"{label} {slope:+.2f}" for label, slope in slopes.items()) if slopes
                  else "need two sizes")
    st.caption("Upper bounds on the expected error of the uniform-width binned ECE with B bins on n points: "
               "statistical √(2B log 2 / n) (eq. 9), binning (1+L)/B (eq. 11), and their sum (eq. 12), here at "
               f"B* (eq. 13), with {source}. At B* the total bound falls like n^(−1/3) (log-log slope −0.33). "
               f"Diamonds: the observed E|estimate − truth| of the binned estimators of a TCE above; their "
               f"log-log slopes: {slope_text}. A steeper slope than the bound's means the bound is loose here."
               f"{binary}")
    with st.expander("True values of this model"):
        st.dataframe(cl.truth_table(truth), hide_index=True, width="stretch",
                     column_config={"value": st.column_config.NumberColumn(format="%.5f")})


def bounds_preview(params: cl.LabParams) -> None:
    """Before a run: the bounds and B* at the chosen sizes (analytic, so shown at once)."""
    lipschitz, known = cl.lipschitz_of(params.spec)
    use_fixed = any(k in cl.FIXED_ECE for k in params.estimators)
    fixed_bins = params.fixed_bins if use_fixed else None
    optimal, fixed = cl.futami_curves(params.sizes, lipschitz, fixed_bins)
    empty = pd.DataFrame(columns=["label", "size", "mean_abs_error"])
    st.markdown("**What the run will be compared with:** Futami & Fujisawa's (2024) bounds on the bias of the "
                "binned ECE at the chosen sizes, and the optimal number of bins B* the *optimal B* estimators use")
    st.plotly_chart(futami_figure(optimal, empty, fixed=fixed, fixed_bins=fixed_bins, lipschitz=lipschitz,
                                  lipschitz_known=known), theme=None, key="lab_bounds_preview",
                    config=downloads.chart_config("Lab", params.spec.kind, "Futami-bounds-preview"))
    sizes = ", ".join(f"n = {n:,}: B* = {b}" for n, b in zip(params.sizes, cl.optimal_bins(params.sizes, lipschitz)))
    st.caption(f"L = {lipschitz:.3g}. {sizes}. Press Run to add the errors the estimators actually make.")


def simulation_lab() -> None:
    st.markdown(
        "Draw many test sets from a model whose **true** calibration error is known, run the estimators on "
        "each, and see how far the estimates fall from the truth: their **bias** (the mean's distance from "
        "the dashed line) and their **spread** (the band) at every test-set size. Settings take effect when "
        "you press **Run**; a finished run is stored, so the same settings come back at once.")
    settings, submitted = lab_settings()
    if submitted and settings is not None:
        st.session_state[LAB_JOB] = cl.lab_job(settings)
    job: cl.Job | None = st.session_state.get(LAB_JOB)
    if job is None:
        st.info("Choose a model and the estimators, then press **Run**. The default run (R = 50 test sets at 8 "
                "sizes from 100 to 100,000, five estimators) takes a few seconds.", icon=":material/science:")
        if settings is not None:
            bounds_preview(settings)
        return
    params: cl.LabParams = job.params
    bar = None
    if job.running:
        if params.simulated_values > 300_000_000:
            st.warning(f"A large run: {params.simulated_values / 1e6:,.0f} million simulated probabilities. It may "
                       "take minutes; stop it at any time and the finished sizes are kept.")
        bar = progress_row(LAB_JOB, job, lab_status(job))
    elif job.error:
        st.error(f"The run stopped with an error: {md(job.error)} Change the estimators, sizes or model and press Run; "
                 "the sizes finished before are shown below.", icon=":material/error:")
    elif job.stopped:
        done = sum(1 for n in params.sizes if n in job.done)
        st.warning(f"Stopped: {done} of {len(params.sizes)} sizes finished. Press **Run** to continue; the finished "
                   "sizes are kept.", icon=":material/pause_circle:")
    else:
        head = f"{params.repetitions} test sets at each of {len(params.sizes)} sizes"
        if job.seconds == 0:
            st.caption(f"{head}; taken from the store of finished runs (these settings ran before).")
        else:
            st.caption(f"{head}; finished in {job.wall_seconds or 0.0:.1f} s ({job.seconds:.1f} s of computing, the "
                       "rest drawing the results as they came in).")
    view = cl.lab_view(job)
    if view is not None:
        lab_results(view, job)
    if job.running:
        advance(LAB_JOB, job, bar, lambda chunk, cb: cl.compute_lab_chunk(params, chunk, cb), lab_status(job))


# ============================================================================ calibration tests: size and power
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
        tests = st.multiselect("Tests", keys, format_func=lambda k: cl.TEST_VARIANTS[k][0],
                               key=default("keep:lab.tests", keys, keys))
        preset = st.selectbox("Miscalibrated model of the power curve", presets,
                              key=default("keep:lab.tests_model", presets[0], presets))
        cols = st.columns([3, 1, 1, 1])
        sizes = cols[0].multiselect("Test-set sizes n of the power curve", list(cl.POWER_SIZE_OPTIONS),
                                    format_func=fmt_size, key=default("keep:lab.tests_sizes",
                                                                      list(cl.DEFAULT_POWER_SIZES),
                                                                      list(cl.POWER_SIZE_OPTIONS)))
        size_n = cols[1].selectbox("n of the size", list(cl.POWER_SIZE_OPTIONS), format_func=fmt_size,
                                   key=default("keep:lab.tests_size_n", cl.DEFAULT_SIZE_N,
                                               list(cl.POWER_SIZE_OPTIONS)))
        repetitions = cols[2].number_input("Repetitions R", 20, 5000, step=50,
                                           key=default("keep:lab.tests_repetitions", cl.DEFAULT_TEST_REPETITIONS),
                                           help="Test sets per point. The default R = 200 keeps the run near "
                                                "10 s; the interval of a size shrinks like 1/√R.")
        seed = cols[3].number_input("Seed", 0, 2**31 - 1, step=1, key=default("keep:lab.tests_seed", 0))
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
    bar = None
    if job.running:
        bar = progress_row(TESTS_JOB, job, tests_status(job))
    elif job.error:
        st.error(f"The run stopped with an error: {md(job.error)} Change the settings and press Run the tests.",
                 icon=":material/error:")
    elif job.stopped:
        st.warning("Stopped. Press **Run the tests** to continue; the finished sizes are kept.",
                   icon=":material/pause_circle:")
    elif job.params != params:
        st.caption("Showing the last run; press **Run the tests** to apply the changed settings.")
    tests_results(job)
    if job.running:
        advance(TESTS_JOB, job, bar, lambda chunk, cb: cl.compute_size_power_chunk(job.params, chunk, cb),
                tests_status(job))


# ============================================================================ your data: test-set size
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
    table = cl.stability_table(summary, rows, tolerance)
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
        metrics = st.multiselect("Metrics", keys, format_func=METRIC_NAMES.get,
                                 key=default("keep:lab.study_metrics", cl.default_study_metrics(), keys),
                                 help="The O(N²) kernel estimators are left out at first: on large test sets "
                                      "they take long.")
        cols = st.columns(4)
        repetitions = cols[0].number_input("Subsets per size", 2, 1000, step=5,
                                           key=default("keep:lab.study_repetitions", 20))
        n_bins = cols[1].number_input("Bins", 1, 1000, step=1, key=default("keep:lab.study_bins", 15))
        binning = cols[2].radio("Binning", list(BINNINGS), format_func=BINNINGS.get,
                                key=default("keep:lab.study_binning", "uniform"),
                                help="For ECE, RMSCE, MCE and class-wise ECE (the others fix their own).")
        seed = cols[3].number_input("Seed", 0, 2**31 - 1, step=1, key=default("keep:lab.study_seed", 0))
        submitted = st.form_submit_button("Run the study", type="primary", icon=":material/play_arrow:",
                                          key="lab:study_run")
    tolerance = st.slider("Call an estimate stable when its relative standard error and drift are below",
                          0.01, 0.5, step=0.01, format="%.2f", key=default("keep:lab.tolerance", 0.1))
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
    bar = None
    if job.running:
        bar = progress_row(STUDY_JOB, job, study_status(job))
    elif job.error:
        st.error(f"The study stopped with an error: {md(job.error)} Change the metrics or bins and run it again.",
                 icon=":material/error:")
    elif job.stopped:
        st.warning("Stopped. Press **Run the study** to continue; the finished sizes are kept.",
                   icon=":material/pause_circle:")
    study_results(job, eligible, tolerance)
    if job.running:
        views = {m.name: m.predictions for m in eligible}
        advance(STUDY_JOB, job, bar, lambda chunk, cb: cl.compute_study_chunk(params, views, chunk, cb),
                study_status(job))


# ============================================================================ rank stability
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
    low, high = st.slider("Bin counts", 2, 100, key=default("keep:lab.rank_bins", (10, 50)),
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
    chosen = st.selectbox("Correlations between bin counts of one variant", range(len(names)),
                          format_func=lambda i: names[i], key=default("keep:lab.rank_variant", least_stable),
                          help="At first the least stable variant.")
    st.plotly_chart(correlation_heatmap(result.correlations[int(chosen)], result.bin_counts,
                                        title=names[int(chosen)]), theme=None, key="lab_rank_matrix",
                    config=downloads.chart_config("Lab", *(m.name for m in models), "bin-count-correlations",
                                                  names[int(chosen)], f"{low}-{high} bins"))


# ============================================================================ pathology gallery
def fmt_number(value: float) -> str:
    return f"{value:.4g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.2e}"


def pathology_gallery() -> None:
    st.markdown("Cases where a calibration number misleads, each with its numbers computed live. Open one.")
    for case in cl.gallery():
        box = st.expander(case.title, key=f"lab:case:{case.key}", on_change="rerun", icon=":material/warning:")
        with box:
            if box.open is False:
                continue
            st.markdown(case.explanation)
            st.caption(f"Source: {case.reference}")
            with st.spinner("Computing …"):
                numbers = cl.pathology_numbers(case.key)
            documented = [k for k in case.documented if k in numbers]
            if documented:
                cells = st.columns(min(len(documented), 4))
                for cell, key in zip(cells, documented):
                    cell.metric(key.replace("_", " "), fmt_number(numbers[key]),
                                help=f"The paper: {case.documented[key]:g}.")
            frame = pd.DataFrame({"quantity": [k.replace("_", " ") for k in numbers],
                                  "computed now": list(numbers.values()),
                                  "stated in the paper": [f"{case.documented[k]:g}" if k in case.documented else ""
                                                          for k in numbers]})
            st.dataframe(frame, hide_index=True, width="stretch", height=35 * (len(frame) + 1) + 3,
                         column_config={"computed now": st.column_config.NumberColumn(format="%.4f")})


# ============================================================================ page
models = layout.setup_page("Lab", ":material/science:")
st.title("Lab: how far can a calibration number be trusted?")
st.markdown(
    "Every calibration error you compute is an *estimate* from a finite test set, and estimators differ in how "
    "wrong they are. Try them on simulated models whose true error is known, check how stable your own "
    "numbers are, and see the classic traps.")
tabs = st.tabs(TABS, key=default("keep:lab.tab", TABS[0], TABS), on_change="rerun")
sections = (simulation_lab, size_power_section, lambda: your_data(models), lambda: rank_stability(models), pathology_gallery)
for tab, section in zip(tabs, sections):
    if tab.open is not False:  # only the open tab runs (None: state tracking off, run all)
        with tab:
            section()
