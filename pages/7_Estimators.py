"""Estimators: kernel and proper-score calibration errors, decompositions, the bound chain, smoothed reliability."""
import time

import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core import CalibrationInputError
from studio import compute_estimators as ce
from studio import downloads, layout, state
from studio.figures_estimators import (CHAIN_LABELS, bound_chain_figure, decomposition_figure, estimates_figure,
                                       smooth_reliability_figure)
from studio.text import md

ALPHA = 0.05
DIRICHLET_MODES = {"auto": "leave-one-out likelihood", "fixed": "fixed"}
SKCE_MODES = {"median": "median heuristic", "fixed": "fixed"}
SMECE_MODES = {"auto": "automatic (fixed point)", "fixed": "fixed"}
KDE_ESTIMATORS = {"direct": "direct (eq. 9)", "refinement": "refinement-based (eq. 14-15)"}
CHAIN_ESTIMATORS = {"kde": "kernel (consistent)", "binned": "binned"}
#: Rows of the estimates table, in order (class-wise kde_ce only when asked for).
ESTIMATOR_ORDER = ("mmce", "skce", "skce_block", "kde_ce_kl", "kde_ce_l2", "kde_ce_kl_classwise",
                   "kde_ce_l2_classwise", "smooth_ece", "calibration_upper_bound")


def seconds_text(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.0f} h"


def block_label(choice) -> str:
    if choice == ce.AUTO:
        return f"auto (all rows if under ~{ce.BUDGET_SECONDS:.0f} s)"
    if choice == ce.ALL_ROWS:
        return "all rows"
    return f"blocks of {choice:,} rows"


class Steps:
    """A progress bar over the page's computations.

    It appears when the work is predicted to be slow, or once it has taken
    longer than a moment; cached results come back without one.
    """

    def __init__(self, total: int, *, slow: bool) -> None:
        self.total, self.done = max(total, 1), 0
        self.start = time.perf_counter()
        self.slot = st.empty()
        self.bar = None
        self.slow = slow

    def run(self, text: str, function, *args, **kwargs):
        if self.bar is not None or self.slow or time.perf_counter() - self.start > 0.15:
            label = md(f"{text} (step {self.done + 1} of {self.total})")
            if self.bar is None:
                self.bar = self.slot.progress(self.done / self.total, text=label)
            else:
                self.bar.progress(self.done / self.total, text=label)
        result = function(*args, **kwargs)
        self.done += 1
        return result

    def close(self) -> None:
        self.slot.empty()


models = layout.setup_page("Estimators", ":material/functions:")
st.title("Estimators beyond binning")
st.markdown(
    "Binned calibration errors such as the ECE depend on the bins and are biased. The estimators on this page "
    "need no bins: **kernel** calibration errors (MMCE, SKCE), **proper** calibration errors whose kernel "
    "estimates are consistent (CE_KL and CE₂², Popordanoska et al. 2024), and the **smooth ECE** (Blasiok & "
    "Nakkiran 2023). Below them: how the Brier and the log score split into calibration and refinement, and "
    "the chain of inequalities that orders the calibration errors (Gruber & Buettner 2022). At the default "
    "settings every estimator has the name, the value and the interval it has on the **Metrics** page; a setting "
    "changed here becomes part of its name."
)
layout.require_models(models)

# ----------------------------------------------------------------------------- settings
rows_col, blocks_col, boot_col, seed_col = st.columns([3, 2, 3, 2])
block_choice = layout.linked(
    rows_col.selectbox, "Rows for the O(N²) estimators", [ce.AUTO, ce.ALL_ROWS, *ce.BLOCK_SIZES],
    format_func=block_label, index=0, key="block_rows",
    help="The unbiased SKCE, kde_ce, the decompositions and the bound chain compare every pair of rows. On many "
         "rows they run on disjoint random blocks instead: the estimate is the mean over the blocks, with a "
         "t-interval from their spread (a bootstrap would repeat rows, which these estimators cannot take).")
max_blocks = layout.linked(
    blocks_col.selectbox, "Blocks (at most)", ce.BLOCK_COUNTS, index=list(ce.BLOCK_COUNTS).index(10), key="blocks",
    disabled=block_choice == ce.ALL_ROWS, help="More blocks: a narrower interval and more rows used, slower.")
boot_choice = layout.linked(
    boot_col.selectbox, "Bootstrap resamples (linear-time estimators)", [ce.AUTO, *ce.BOOT_CHOICES],
    index=0, key="est_boot",
    format_func=lambda n: (f"auto (200 if under ~{ce.BUDGET_SECONDS:.0f} s)" if n == ce.AUTO
                           else "none (no intervals)" if n == 0 else f"{n:,}"),
    help="Bootstrap intervals of MMCE, smECE and √Brier (as on the Metrics page), and the band of the smoothed "
         "reliability curve. The linear-time SKCE's interval comes from its variance formula.")
seed = int(layout.linked(seed_col.number_input, "Seed", min_value=0, max_value=2**31 - 1, step=1, value=0,
                         key="est_seed",
                         help="Draws the blocks and the bootstrap resamples. The pairs of the "
                              "linear-time SKCE are fixed by the data, as on the Metrics page."))

with st.container(border=True):
    st.markdown("**Kernel bandwidths**")
    dir_col, skce_col, mmce_col, smece_col = st.columns(4)
    dirichlet_mode = layout.linked(
        dir_col.radio, "Dirichlet kernel (kde_ce, decompositions, chain)", list(DIRICHLET_MODES),
        format_func=DIRICHLET_MODES.get, horizontal=True, index=list(DIRICHLET_MODES).index("fixed"),
        key="dirichlet",
        help="Leave-one-out likelihood: the bandwidth that best predicts each prediction from the others "
             "(Popordanoska et al. 2024, section 7), chosen per model (on the first block with blocks). "
             f"Fixed: the registry's default h = {cc.metrics.registry.KDE_BANDWIDTH:g} unless changed.")
    dirichlet_h = layout.linked(dir_col.number_input, "Dirichlet bandwidth h", min_value=1e-5, max_value=10.0,
                                step=0.001, format="%.5f", value=cc.metrics.registry.KDE_BANDWIDTH, key="dirichlet_h",
                                disabled=dirichlet_mode != "fixed")
    skce_mode = layout.linked(skce_col.radio, "SKCE (Laplacian kernel)", list(SKCE_MODES), format_func=SKCE_MODES.get,
                              horizontal=True, index=list(SKCE_MODES).index("median"), key="skce",
                              help=f"Median heuristic: the median distance between two predictions (of "
                                   f"{ce.MEDIAN_ROWS:,} random rows when there are more).")
    skce_h = layout.linked(skce_col.number_input, "SKCE bandwidth", min_value=1e-3, max_value=10.0, step=0.05,
                           format="%.3f", value=0.5, key="skce_h", disabled=skce_mode != "fixed")
    mmce_h = layout.linked(mmce_col.number_input, "MMCE bandwidth (Laplacian kernel)", min_value=1e-3,
                           max_value=10.0, step=0.05, format="%.3f", value=cc.metrics.registry.MMCE_BANDWIDTH,
                           key="mmce_h", help="Kumar et al. (2018) use 0.4.")
    smece_mode = layout.linked(smece_col.radio, "smECE (Gaussian kernel)", list(SMECE_MODES),
                               format_func=SMECE_MODES.get, horizontal=True, index=list(SMECE_MODES).index("auto"),
                               key="smece",
                               help="Automatic: the width σ at which smECE_σ = σ (Blasiok & Nakkiran 2023).")
    smece_h = layout.linked(smece_col.number_input, "smECE bandwidth σ", min_value=1e-4, max_value=1.0, step=0.01,
                            format="%.4f", value=0.05, key="smece_h", disabled=smece_mode != "fixed")
    kde_col, classwise_col = st.columns([2, 2])
    kde_estimator = layout.linked(
        kde_col.radio, "kde_ce estimator", list(KDE_ESTIMATORS), format_func=KDE_ESTIMATORS.get, horizontal=True,
        index=list(KDE_ESTIMATORS).index("direct"), key="kde",
        help="Direct: the mean divergence between the kernel estimate of P(Y | prediction) and the prediction "
             "(always ≥ 0). Refinement-based: the score minus the estimated refinement (can be slightly "
             "negative for a calibrated model).")
    classwise = layout.linked(
        classwise_col.toggle, "Also class-wise kde_ce (one-vs-rest, Beta kernel)", value=False, key="classwise",
        help="K binary problems, each as costly as the canonical estimate with two classes (appendix D).")

auto_bandwidth = dirichlet_mode == "auto"
plans = {m.name: ce.plan_quadratic(m.predictions.n_samples, m.predictions.n_classes, block_choice, max_blocks,
                                   auto_bandwidth=auto_bandwidth, classwise=classwise) for m in models}
boots = {m.name: ce.resolve_n_boot(boot_choice, m.predictions.n_samples, m.predictions.n_classes) for m in models}
bands = {m.name: ce.resolve_band_boot(boot_choice, m.predictions.n_samples) for m in models}

for model in models:
    plan, n_rows = plans[model.name], model.predictions.n_samples
    if plan.uses_blocks and block_choice == ce.AUTO:
        st.info(f"**{md(model.name)}** has {n_rows:,} rows: the O(N²) estimators on all of them would "
                f"take {seconds_text(plan.all_rows_seconds)}, so they run on **{plan.describe()}** (the mean over the "
                f"blocks, with a 95% t-interval). Choose *all rows* above to use every row, or read the "
                "linear-time SKCE, which uses all rows.", icon=":material/speed:")
    elif not plan.uses_blocks and plan.all_rows_seconds > ce.BUDGET_SECONDS:
        st.warning(f"**{md(model.name)}**: the O(N²) estimators on all {n_rows:,} rows take "
                   f"{seconds_text(plan.all_rows_seconds)}. A block size above gives a faster estimate with an "
                   "interval; the linear-time SKCE uses every row in a fraction of the time.",
                   icon=":material/hourglass_top:")
    if boot_choice == ce.AUTO and boots[model.name] == 0:
        st.info(f"**{md(model.name)}**: bootstrap intervals of the linear-time estimators on {n_rows:,} "
                f"rows would take {seconds_text(ce.bootstrap_seconds(n_rows, model.predictions.n_classes, 100))} "
                "(100 resamples), so the automatic setting leaves them out to keep the page quick. Choose a number "
                "of resamples above to compute them.", icon=":material/speed:")

# ----------------------------------------------------------------------------- computations
quadratic_keys = ["skce", "kde_ce_kl", "kde_ce_l2"] + (["kde_ce_kl_classwise", "kde_ce_l2_classwise"]
                                                       if classwise else [])
# Bandwidths, the table's estimators, two decompositions, the chain and the smoothed curve.
per_model_steps = (skce_mode == "median") + auto_bandwidth + len(ce.LINEAR) + len(quadratic_keys) + 2 + 1 + 1
predicted = sum(plans[m.name].seconds + ce.bootstrap_seconds(m.predictions.n_samples, m.predictions.n_classes,
                                                             boots[m.name]) for m in models)
steps = Steps(per_model_steps * len(models), slow=predicted > ce.BUDGET_SECONDS)
bandwidths: dict[str, dict[str, float | None]] = {}
estimates: list[dict] = []
failures: dict[str, str] = {}
for model in models:
    predictions, fingerprint, plan = model.predictions, model.fingerprint, plans[model.name]
    where = f"{model.name}, {plan.describe()}"
    try:
        # The registry's median heuristic (never 0: it falls back to the distance between distinct predictions).
        skce_bandwidth = (steps.run(f"SKCE bandwidth of {model.name}", ce.skce_median_bandwidth, predictions,
                                    fingerprint) if skce_mode == "median" else float(skce_h))
        dirichlet_bandwidth = (steps.run(f"Dirichlet bandwidth of {model.name}", ce.dirichlet_bandwidth,
                                         predictions, fingerprint, plan.block_rows, seed)
                               if auto_bandwidth else float(dirichlet_h))
        bandwidths[model.name] = {"skce": skce_bandwidth, "dirichlet": dirichlet_bandwidth,
                                  "smece": None if smece_mode == "auto" else float(smece_h)}
        # What the names carry: None is the registry's default (the Metrics page's setting).
        skce_setting = None if skce_mode == "median" else skce_bandwidth
        kde_setting = dirichlet_bandwidth if auto_bandwidth else float(dirichlet_h)
        kde_rule = "leave-one-out" if auto_bandwidth else None
        rows = []
        for key in ESTIMATOR_ORDER:
            if key in ce.LINEAR:
                bandwidth = {"mmce": float(mmce_h), "skce_block": skce_setting,
                             "smooth_ece": bandwidths[model.name]["smece"]}.get(key)
                label = ce.estimator_name(key, bandwidth=bandwidth)
                estimate = steps.run(f"{label}, {model.name}, all rows", ce.linear_estimate, predictions,
                                     fingerprint, key, bandwidth, boots[model.name], seed, ALPHA)
                rows.append((label, "linear", estimate))
            elif key in quadratic_keys:
                is_skce = key == "skce"
                label = ce.estimator_name(key, bandwidth=skce_setting if is_skce else kde_setting,
                                          bandwidth_rule=None if is_skce else kde_rule,
                                          kde_estimator="direct" if is_skce else kde_estimator, plan=plan)
                bandwidth = skce_bandwidth if is_skce else dirichlet_bandwidth
                estimate = steps.run(f"{label}, {where}", ce.quadratic_estimate, predictions, fingerprint, key,
                                     bandwidth, plan.block_rows, plan.n_blocks, seed,
                                     "direct" if is_skce else kde_estimator, ALPHA)
                rows.append((label, "O(N²)", estimate))
        for label, cost, estimate in rows:
            estimates.append({
                "model": model.name, "estimator": label, "estimate": estimate.value, "ci_low": estimate.low,
                "ci_high": estimate.high, "std": estimate.std, "interval": estimate.interval, "rows": estimate.rows,
                "bandwidth": estimate.bandwidth, "cost": cost, "seconds": estimate.seconds,
            })
    except CalibrationInputError as exc:
        failures[model.name] = str(exc)

# ----------------------------------------------------------------------------- estimates
st.subheader("Calibration errors without bins")
for name, message in failures.items():
    st.error(f"The estimators could not be computed for **{md(name)}**: {md(message)} Change "
             "the bandwidth settings above, or check the model on the Data page.", icon=":material/error:")
table = pd.DataFrame(estimates, columns=["model", "estimator", "estimate", "ci_low", "ci_high", "std", "interval",
                                         "rows", "bandwidth", "cost", "seconds"])
if not table.empty:
    st.plotly_chart(estimates_figure(table, colors=state.model_colors()), theme=None, key="estimators_estimates",
                    config=downloads.chart_config("Estimators", *table["model"].unique(), "binless-estimates"))
    st.dataframe(
        table, hide_index=True, width="stretch", placeholder="–",
        column_config={
            "model": st.column_config.TextColumn("Model"),
            "estimator": st.column_config.TextColumn("Estimator", width="large"),
            "estimate": st.column_config.NumberColumn("Estimate", format="%.5f"),
            "ci_low": st.column_config.NumberColumn("95% low", format="%.5f"),
            "ci_high": st.column_config.NumberColumn("95% high", format="%.5f"),
            "std": st.column_config.NumberColumn("Std. error", format="%.5f"),
            "interval": st.column_config.TextColumn("Interval", width="medium"),
            "rows": st.column_config.NumberColumn("Rows used", format="%d"),
            "bandwidth": st.column_config.NumberColumn("Bandwidth", format="%.4g"),
            "cost": st.column_config.TextColumn("Cost", help="linear: O(N) or O(N log N); O(N²): all pairs."),
            "seconds": st.column_config.NumberColumn("Seconds", format="%.2f",
                                                     help="Wall time when it was computed (then cached)."),
        },
    )
    st.download_button("Download the estimates as CSV", cc.csv_bytes(table),
                       file_name="calibration_estimators.csv", mime="text/csv", on_click="ignore",
                       icon=":material/download:")
    st.caption("SKCE and CE₂² are squared errors and CE_KL is in nats, so their scale differs from the ECE's. The "
               "unbiased SKCE is negative for many samples of a calibrated model: shown as computed.")

usable = [m for m in models if m.name not in failures]

# ----------------------------------------------------------------------------- decompositions
st.subheader("Calibration and refinement")
st.markdown(
    "A proper score splits into **calibration** (what recalibration could remove) and **refinement** (what "
    "it cannot), and refinement into **entropy** minus **sharpness**: score = entropy − sharpness + calibration "
    "(Gruber & Buettner 2022, Lemma 4.1). Entropy is the score of always predicting the class frequencies; "
    "sharpness is how much the model's predictions improve on that. Refinement is estimated with the "
    "leave-one-out Dirichlet kernel and calibration is the score minus it (Popordanoska et al. 2024, eq. 13-15), "
    "so the bars add up to the score exactly."
)
decompositions = {}
for model in usable:
    plan = plans[model.name]
    decompositions[model.name] = {
        score: steps.run(f"{score.capitalize()} decomposition, {model.name}, {plan.describe()}", ce.decomposition,
                         model.predictions, model.fingerprint, score, bandwidths[model.name]["dirichlet"],
                         plan.block_rows, plan.n_blocks, seed)
        for score in ("brier", "log")
    }
if decompositions:
    st.plotly_chart(decomposition_figure(decompositions), theme=None, key="estimators_decomposition",
                    config=downloads.chart_config("Estimators", *decompositions, "Brier-and-log-decomposition"))
    frame = pd.DataFrame([{
        "model": name, "score": d.score, "rows": plans[name].describe(), "empirical score": d.empirical_score,
        "calibration": d.calibration, "refinement": d.refinement, "entropy": d.entropy, "sharpness": d.sharpness,
        "calibration (direct, eq. 9)": d.calibration_direct, "bandwidth": d.bandwidth,
    } for name, parts in decompositions.items() for d in parts.values()])
    with st.expander("Decomposition table"):
        st.dataframe(frame, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.5f") for c in frame.columns
                                    if c not in ("model", "score", "rows", "bandwidth")})
    st.caption("The direct calibration estimate (eq. 9) is listed for comparison; it is not part of the sums. "
               "A calibration bar below zero is finite-sample noise of a (nearly) calibrated model.")

# ----------------------------------------------------------------------------- bound chain
st.subheader("The chain of calibration errors")
st.markdown(
    "Gruber & Buettner (2022, eq. 6) prove an order between the calibration errors of a model: "
    "√2 ≥ √BS ≥ CE₂ ≥ CWCE₂ ≥ TCE₂ ≥ TCE₁ ≥ KS, ECE and MMCE. The root Brier score is an upper bound that needs "
    "no estimate at all; the canonical CE₂ looks at the whole distribution, the class-wise and top-label "
    "errors at less of it. Each dot is an estimate, each line an inequality."
)
chain_col, bins_col, binning_col, log_col = st.columns([3, 3, 2, 2])
chain_estimator = layout.linked(
    chain_col.radio, "CWCE₂, TCE₂, TCE₁ estimated", list(CHAIN_ESTIMATORS), format_func=CHAIN_ESTIMATORS.get,
    horizontal=True, index=list(CHAIN_ESTIMATORS).index("kde"), key="chain",
    help="Kernel: leave-one-out Beta-kernel estimates (Popordanoska et al. 2024, appendix D). Binned: the "
         "plug-in binned estimates (TCE₁ is then the ECE).")
chain_bins = int(layout.linked(bins_col.slider, "Bins (ECE and binned terms)", 2, 50, value=15, key="chain_bins"))
chain_binning = layout.linked(binning_col.radio, "Binning", ["uniform", "adaptive"], horizontal=True, index=0,
                              key="chain_binning")
log_x = layout.linked(log_col.toggle, "Log scale", value=True, key="chain_log")
chains = {}
for model in usable:
    plan = plans[model.name]
    rows_text = "all rows" if not plan.uses_blocks else f"a block of {plan.block_rows:,} rows"
    try:
        chains[model.name] = steps.run(f"Bound chain, {model.name}, {rows_text}", ce.bound_chain, model.predictions,
                                       model.fingerprint, bandwidths[model.name]["dirichlet"], plan.block_rows, seed,
                                       chain_bins, chain_binning, chain_estimator, float(mmce_h))
    except CalibrationInputError as exc:
        st.error(f"The chain could not be estimated for **{md(model.name)}**: {md(exc)} "
                 "Change the settings above.",
                 icon=":material/error:")
if chains:
    st.plotly_chart(bound_chain_figure(chains, colors=state.model_colors(), log_x=log_x), theme=None,
                    key="estimators_chain",
                    config=downloads.chart_config("Estimators", *chains, "bound-chain", chain_estimator, chain_bins,
                                                  chain_binning))
    st.markdown(
        "**Why a line can be orange.** The order holds for the true errors. The numbers here are estimates from "
        "a finite sample, each with its own bias and noise: kernel estimates of CE₂ and CWCE₂ smooth "
        "differently, the binned ECE and the MMCE are biased upwards on small samples, and the ECE is below "
        "TCE₁ only in the population. So an estimate can land above the one that must bound it; an orange line "
        "marks such a pair, not an error in the theory."
    )
    for name, chain in chains.items():
        plan = plans[name]
        where = "all rows" if not plan.uses_blocks else f"a random block of {plan.block_rows:,} rows"
        if chain.all_hold:
            st.success(f"**{md(name)}** ({where}): every estimated inequality holds.",
                       icon=":material/check:")
        else:
            broken = "; ".join(
                f"{CHAIN_LABELS[link.lower]} = {link.lower_value:.4f} exceeds {CHAIN_LABELS[link.upper]} = "
                f"{link.upper_value:.4f}"
                for link in chain.broken)
            st.warning(f"**{md(name)}** ({where}): the estimates break {len(chain.broken)} of "
                       f"{len(chain.links)} inequalities: {broken}.", icon=":material/warning:")

# ----------------------------------------------------------------------------- smoothed reliability
st.subheader("Smoothed reliability curve")
st.markdown(
    "Instead of bins, the correctness of every prediction is smoothed over the confidence with a Gaussian "
    "kernel (reflected at 0 and 1); the area between this curve and the diagonal, weighted by the density of "
    "the confidences below, is the **smooth ECE** (Blasiok & Nakkiran 2023). The shaded band is a pointwise "
    "95% bootstrap band at the same bandwidth."
)
curves = {}
for model in usable:
    curves[model.name] = steps.run(f"Smoothed reliability curve, {model.name}", ce.smooth_curve, model.predictions,
                                   model.fingerprint, bandwidths[model.name]["smece"], bands[model.name], seed)
steps.close()
if curves:
    st.plotly_chart(smooth_reliability_figure(curves, colors=state.model_colors()), theme=None,
                    key="estimators_smooth",
                    config=downloads.chart_config("Estimators", *curves, "smooth-reliability"))
    cells = st.columns(min(len(curves), 4))
    for i, (name, curve) in enumerate(curves.items()):
        band = (f"band: {bands[name]} resamples" if bands[name] else "no band (choose bootstrap resamples above)")
        cells[i % len(cells)].metric(f"{md(name)}: smECE", f"{curve.smece:.4f}",
                                     help=f"Bandwidth σ = {curve.bandwidth:.4g}; {band}.")

# ----------------------------------------------------------------------------- notes
st.subheader("What each estimator measures")
st.markdown("""
- **MMCE** (Kumar et al. 2018, eq. 2): a kernel distance between the top-label confidence and correctness over
  all pairs of rows, computed exactly in O(N log N). *Pitfalls:* top label only; a V-statistic, so biased upwards
  on small samples; depends on the kernel width.
- **SKCE** (Widmann et al. 2019): the squared kernel calibration error of the whole predicted distribution. The
  unbiased estimator averages over all N(N−1)/2 pairs; the linear-time one over N/2 disjoint pairs (much
  noisier, but O(N)). *Pitfalls:* squared, so not on the ECE's scale; can be negative; the value depends on the
  kernel width (median heuristic by default; when most predictions are identical, the median distance between
  distinct predictions). *Intervals:* the linear-time estimate is a mean of independent pair terms, so it has a
  normal interval from their spread; on all rows the unbiased one has one from the U-statistic's variance (a
  rough guide for a calibrated model, where the statistic is degenerate).
- **CE_KL and CE₂²** (Popordanoska et al. 2024, eq. 9-15): proper calibration errors of the log and the Brier
  score, with P(Y | prediction) estimated by a leave-one-out Dirichlet kernel. Consistent, with a bias that
  shrinks as 1/N. *Pitfalls:* O(N²); the bandwidth matters (h = 0.01 by default, as on the Metrics page; the
  leave-one-out likelihood of the predictions can choose it above); a class
  predicted with probability 0 that occurs nearby makes CE_KL very large; on blocks the bias is that of the
  block size.
- **smECE** (Blasiok & Nakkiran 2023): the smoothed residuals integrated in absolute value, at the bandwidth
  that equals its own smECE. *Pitfalls:* top label only; smoothing hides narrow regions of miscalibration.
- **√Brier** (Gruber & Buettner 2022, Theorem 4.3): an upper bound of CE₂ that needs no estimate of
  P(Y | prediction). *Pitfalls:* it also holds the refinement, so it is loose unless the accuracy is near 1.
- **Blocks** (for the O(N²) estimators on many rows): the mean over disjoint random blocks of m rows with a
  Student-t interval from their spread. For SKCE this is the block estimator of Widmann et al. (2019) and stays
  unbiased; for kde_ce it estimates what m rows would give.
""")
