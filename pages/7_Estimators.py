"""Estimators: kernel and proper-score calibration errors, decompositions, the bound chain, smoothed reliability.

The page reads its settings and lays out the sections; :mod:`studio.estimators` draws them and
:mod:`studio.compute_estimators` holds the cached calib_core calls.
"""
import streamlit as st

import calib_core as cc
from studio import compute_estimators as ce
from studio import layout
from studio.estimators.estimates import compute_estimates, page_steps, show_estimates
from studio.estimators.sections import (chain_intro, chain_section, decomposition_section, notes_section,
                                        smooth_section)
from studio.estimators.settings import (CHAIN_ESTIMATORS, DIRICHLET_MODES, KDE_ESTIMATORS, SKCE_MODES, SMECE_MODES,
                                        Settings, block_label, plan_models, plan_notes)

models = layout.setup_page("Estimators")
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
models = layout.class_models(
    models, "Estimators", "its estimators (kernel, debiased, bound chain) are computed on class probabilities, "
    "which for a confidence model would fold a confidence of 0.3 onto 0.7; the Metrics page has its confidence "
    "metrics.")

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

settings = Settings(block_choice, max_blocks, boot_choice, seed, dirichlet_mode, dirichlet_h, skce_mode, skce_h,
                    mmce_h, smece_mode, smece_h, kde_estimator, classwise)
plans = plan_models(models, settings)
plan_notes(models, settings, plans)

# ----------------------------------------------------------------------------- estimates
steps = page_steps(models, settings, plans)
found = compute_estimates(models, settings, plans, steps)
show_estimates(found)
usable = [m for m in models if m.name not in found.failures]

# ----------------------------------------------------------------------------- decompositions, chain, curve, notes
decomposition_section(usable, settings, plans, found, steps)
chain_intro()
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
chain_section(usable, settings, plans, found, steps, chain_estimator=chain_estimator, chain_bins=chain_bins,
              chain_binning=chain_binning, log_x=log_x)
smooth_section(usable, settings, plans, found, steps)
notes_section()
