"""The Lab's simulation tab: estimators on models whose true calibration error is known."""
import pandas as pd
import streamlit as st

from calib_core import CalibrationInputError, csv_bytes
from calib_core.lab.estimators import DEFAULT_SIZES
from calib_core.lab.stability import gap_slopes, observed_gap
from studio import compute_lab as cl
from studio import downloads, layout
from calib_core.plot.figures_lab import futami_figure, lab_figure
from studio.lab.jobs import advance, fmt_size, progress_row
from studio.text import md

LAB_JOB = "lab:job"
VIEWS = {"estimate": "estimates and true values", "error": "error: estimate − true value"}


def apply_preset() -> None:
    b0, b1 = cl.LOGISTIC_PRESETS[st.session_state["lab_preset"]]
    st.session_state["lab_b0"], st.session_state["lab_b1"] = float(b0), float(b1)


def generator_inputs(kind: str) -> dict:
    """The chosen generator's parameters (drawn inside the form)."""
    defaults = cl.GENERATORS[kind][1]
    cols = st.columns(3)
    if kind == "logistic":
        b0 = layout.linked(cols[0].number_input, "b0 (intercept)", -10.0, 10.0, value=float(defaults["b0"]),
                           step=0.1, format="%.2f", key="lab_b0")
        b1 = layout.linked(cols[1].number_input, "b1 (slope)", -10.0, 10.0, value=float(defaults["b1"]),
                           step=0.1, format="%.2f", key="lab_b1")
        cols[2].caption("Model P(Y=1 | x) = 1 / (1 + exp(−b0 − b1·x)) on X | Y ~ N(∓1, 1). (0, −2) is the "
                        "Bayes-optimal, calibrated model; b1 between −2 and 0 under-confident, below −2 "
                        "over-confident; b0 ≠ 0 shifts it.")
        return {"b0": b0, "b1": b1}
    if kind == "logistic_normal":
        k = layout.linked(cols[0].number_input, "Classes K", 2, 100, value=int(defaults["n_classes"]), step=1,
                          key="lab_ln_classes", help="The paper uses K = 100; every size then costs ten times as much.")
        t = layout.linked(cols[1].number_input, "Temperature T (miscalibration)", 0.05, 20.0,
                          value=float(defaults["temperature"]), step=0.1, format="%.2f", key="lab_ln_temperature",
                          help="1: calibrated. Above 1 the predictions are under-confident, below 1 "
                                      "over-confident; the accuracy does not change.")
        scale = layout.linked(cols[2].number_input, "Covariance scale", 0.1, 100_000.0,
                              value=float(defaults["scale"]), step=10.0, format="%.1f", key="lab_ln_scale",
                              help="Scale matrix of the inverse-Wishart draw of the logit covariance; "
                                          "215 gives the paper's 87.6% accuracy with K = 100.")
        return {"n_classes": k, "temperature": t, "scale": scale}
    k = layout.linked(cols[0].number_input, "Classes K", 2, 50, value=int(defaults["n_classes"]), step=1,
                      key="lab_us_classes")
    t1 = layout.linked(cols[1].number_input, "Sharpening t1", 0.05, 20.0, value=float(defaults["t1"]), step=0.05,
                       format="%.2f", key="lab_us_t1",
                       help="Temperature of the calibrated predictions (0.9 in the paper).")
    t2 = layout.linked(cols[2].number_input, "Miscalibration t2", 0.05, 20.0, value=float(defaults["t2"]), step=0.05,
                       format="%.2f", key="lab_us_t2",
                       help="Temperature applied after the labels are drawn: 1 calibrated, 0.6 in "
                                   "the paper (over-confident).")
    return {"n_classes": k, "t1": t1, "t2": t2}


def lab_settings() -> tuple[cl.LabParams | None, bool]:
    """The settings and the Run button: the run's parameters (None if invalid) and whether Run was pressed.

    Problems are shown (with ``st.error``) only when Run was pressed.
    """
    kinds = list(cl.GENERATORS)
    kind = layout.linked(st.selectbox, "Ground-truth model", kinds, format_func=lambda k: cl.GENERATORS[k][0],
                         index=kinds.index("logistic"), key="lab_generator",
                         help="Models whose true calibration errors are known, from the papers the lab follows.")
    if kind == "logistic":
        presets = list(cl.LOGISTIC_PRESETS)
        layout.linked(st.selectbox, "Start from the parameters of", presets, index=0, key="lab_preset",
                      on_change=apply_preset, help="Fills in b0 and b1 below.")
    options = cl.estimator_options()
    with st.form("lab:form"):
        params = generator_inputs(kind)
        estimators = layout.linked(
            st.multiselect, "Estimators", list(options), format_func=options.get,
            default=list(cl.default_estimators()), key="lab_estimators",
            help="Optimal B: Futami & Fujisawa's B* = ⌊(2n(1+L)²/log 2)^⅓⌋ at each n. SKCE and the KDE "
                 "estimators cost O(n²) and run up to n = 3,000 only. Smooth ECE has no closed-form truth.")
        cols = st.columns([1, 3, 1, 1])
        fixed_bins = layout.linked(cols[0].number_input, "B of the fixed-B ECEs", 1, 1000, value=15, step=1,
                                   key="lab_fixed_bins")
        sizes = layout.linked(cols[1].multiselect, "Test-set sizes n", list(cl.SIZE_OPTIONS), format_func=fmt_size,
                              default=list(DEFAULT_SIZES), key="lab_sizes")
        repetitions = layout.linked(cols[2].number_input, "Repetitions R", 2, 5000, value=50, step=10,
                                    key="lab_repetitions", help="Test sets drawn at each size.")
        seed = layout.linked(cols[3].number_input, "Seed", 0, 2**31 - 1, value=0, step=1, key="lab_seed")
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
    view_mode = layout.linked(st.radio, "Show", list(VIEWS), format_func=VIEWS.get, horizontal=True, index=0,
                              key="lab_view")
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
    observed = observed_gap(view.summary)
    st.plotly_chart(futami_figure(optimal, observed, fixed=fixed, fixed_bins=params.fixed_bins
                                  if use_fixed else None, lipschitz=view.lipschitz,
                                  lipschitz_known=view.lipschitz_known),
                    theme=None, key="lab_bounds_chart",
                    config=downloads.chart_config("Lab", view.model_name, "Futami-bounds"))
    source = ("the Lipschitz constant of this model's calibration function" if view.lipschitz_known
              else "L = 1 assumed (this model's L is unknown or unbounded)")
    binary = "" if params.spec.n_classes == 2 else (
        " The bounds are derived for binary classifiers; for K > 2 they are shown for reference.")
    slopes = gap_slopes(observed)
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
