"""The Estimators page's sections after the table: decompositions, the bound chain, the smoothed curve, notes."""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core import CalibrationInputError
from studio import compute_estimators as ce
from studio import downloads, layout, state
from studio.estimators.estimates import Estimates, Steps
from studio.estimators.settings import Plans, Settings
from calib_core.plot.figures_estimators import (CHAIN_LABELS, SMOOTH_RANGE_NOTE, bound_chain_figure, decomposition_figure,
                                       smooth_reliability_figure)
from studio.text import md

#: The closing notes of the page (Markdown).
NOTES = """
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
"""


def decomposition_section(usable, settings: Settings, plans: Plans, found: Estimates, steps: Steps) -> None:
    """The Brier and log score of each model split into calibration, refinement, entropy and sharpness."""
    st.subheader("Calibration and refinement")
    st.markdown(
        "A proper score splits into **calibration** (what the best possible recalibration would remove) and "
        "**refinement** (what it cannot), and refinement into **entropy** minus **sharpness**: score = entropy − "
        "sharpness + calibration (Gruber & Buettner 2022, Lemma 4.1). Entropy is the score of always predicting the "
        "class frequencies; sharpness is how much the model's predictions improve on that. Refinement is estimated "
        "with the leave-one-out Dirichlet kernel and calibration is the score minus it (Popordanoska et al. 2024, "
        "eq. 13-15), so the bars add up to the score exactly. That kernel estimate is biased upwards with few rows "
        "or many classes; below the chart, what recalibration actually removes on rows it was not fitted on."
    )
    decompositions = {}
    for model in usable:
        plan = plans.quadratic[model.name]
        decompositions[model.name] = {
            score: steps.run(f"{score.capitalize()} decomposition, {model.name}, {plan.describe()}",
                             ce.decomposition, model.predictions, model.fingerprint, score,
                             found.bandwidths[model.name]["dirichlet"], plan.block_rows, plan.n_blocks, settings.seed)
            for score in ("brier", "log")
        }
    marks = {}
    for model in usable:
        plan = plans.quadratic[model.name]
        bias = steps.run(f"Bias of the kernel estimates, {model.name}", ce.calibrated_bias, model.predictions,
                         model.fingerprint, found.bandwidths[model.name]["dirichlet"], plan.block_rows, settings.seed)
        rows = plan.block_rows or plan.n_rows
        for score, d in decompositions[model.name].items():
            key, divergence = ("kde_ce_l2", "l2") if score == "brier" else ("kde_ce_kl", "kl")
            marks[model.name, score] = cc.check_estimate(
                key, d.calibration, {"brier" if score == "brier" else "nll": d.empirical_score}, n_rows=rows,
                n_classes=model.predictions.n_classes, biases={key: bias[divergence, "refinement"]},
                bandwidth=d.bandwidth) or ""
    if decompositions:
        st.plotly_chart(decomposition_figure(decompositions, unreliable=marks), theme=None,
                        key="estimators_decomposition",
                        config=downloads.chart_config("Estimators", *decompositions, "Brier-and-log-decomposition"))
        for (name, score), reason in marks.items():
            if reason:
                st.warning(f"**{md(name)}**, {'Brier' if score == 'brier' else 'log'} score: the calibration term "
                           f"is {md(reason)}", icon=":material/warning:")
        frame = pd.DataFrame([{
            "model": name, "score": d.score, "rows": plans.quadratic[name].describe(),
            "empirical score": d.empirical_score, "calibration": d.calibration,
            "calibration within its bounds?": f"no: {marks[name, d.score]}" if marks[name, d.score] else "yes",
            "refinement": d.refinement, "entropy": d.entropy, "sharpness": d.sharpness,
            "calibration (direct, eq. 9)": d.calibration_direct, "bandwidth": d.bandwidth,
        } for name, parts in decompositions.items() for d in parts.values()])
        with st.expander("Decomposition table"):
            st.dataframe(frame, hide_index=True, width="stretch",
                         column_config={c: st.column_config.NumberColumn(format="%.5f") for c in frame.columns
                                        if c not in ("model", "score", "rows", "bandwidth",
                                                     "calibration within its bounds?")})
        st.caption("The direct calibration estimate (eq. 9) is listed for comparison; it is not part of the sums. "
                   "A calibration bar below zero is finite-sample noise of a (nearly) calibrated model. A hatched "
                   "calibration bar is unreliable at this N and K: the estimator gives about as much on labels "
                   "drawn from the model's own predictions, where the true calibration error is 0.")
    fixable_section(usable, n_boot=lambda model: plans.boots[model.name], seed=settings.seed, key="est_fixable",
                    run=steps.run)


#: What the fixable part is, for the pages (Markdown).
FIXABLE_INTRO = (
    "**What recalibration can fix, measured honestly.** The default recalibration methods are fitted under 5-fold "
    "cross-fitting (each row is predicted by a map fitted without it), and the drop in Brier score and NLL of "
    "the one the Recalibration page would recommend (it lowers the ECE without raising the Brier score; the lowest "
    "Brier score first) is shown with a paired bootstrap interval; with no such method nothing is fixable. No map of the predictions can remove more than the true "
    "calibration term, so this is the part you can act on; a kernel estimate of the calibration term that is "
    "far larger is most likely the estimator's bias (Recalibration page: every method, every metric)."
)


#: Above this many rows x classes (all models together) the fixable part waits for its toggle: five methods
#: cross-fitted on 100,000 x 10 took 41 s on the 2-core reference machine under load (900 x 10: 2-5 s).
FIXABLE_AUTO_CELLS = 500_000


def fixable_section(models, *, n_boot: Callable[[object], int], seed: int, key: str, alpha: float = 0.05,
                    run: Callable | None = None) -> dict[str, cc.recalibration.fixable.FixablePart]:
    """The fixable part of each model's scores (:func:`studio.compute_estimators.fixable`): a table and a sentence.

    On large inputs (more than :data:`FIXABLE_AUTO_CELLS` rows x classes) it is computed when its toggle
    (``key``) is switched on. The intervals cover ``1 - alpha`` (the page's interval level).
    """
    run = run or (lambda text, function, *args: function(*args))
    st.markdown(FIXABLE_INTRO)
    cells = sum(m.predictions.n_samples * m.predictions.n_classes for m in models)
    if not layout.linked(st.toggle, "Measure what recalibration can fix", value=cells <= FIXABLE_AUTO_CELLS, key=key,
                         help=f"{cells:,} rows × classes: five methods cross-fitted five times each take about "
                              f"{max(1, round(41 * cells / 1_000_000))} s here."):
        return {}
    found = {}
    for model in models:
        try:
            found[model.name] = run(f"Cross-fitted recalibration, {model.name}", ce.fixable, model.predictions,
                                    model.fingerprint, int(n_boot(model)), int(seed), float(alpha))
        except CalibrationInputError as exc:
            st.warning(f"**{md(model.name)}**: the fixable part cannot be measured: {md(exc)}",
                       icon=":material/warning:")
    if found:
        frame = pd.DataFrame([ce.fixable_row(name, part) for name, part in found.items()])
        st.dataframe(frame, hide_index=True, width="stretch", placeholder="–",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in frame.columns
                                    if c not in ("model", "best method", "share of the brier score")}
                     | {"share of the brier score": st.column_config.NumberColumn(format="percent")})
        for name, part in found.items():
            st.caption(f"**{md(name)}**: {md(part.sentence())}")
    return found


def chain_intro() -> None:
    """The bound chain's heading and explanation (its settings follow on the page)."""
    st.subheader("The chain of calibration errors")
    st.markdown(
        "Gruber & Buettner (2022, eq. 6) prove an order between the calibration errors of a model: "
        "√2 ≥ √BS ≥ CE₂ ≥ CWCE₂ ≥ TCE₂ ≥ TCE₁ ≥ KS, ECE and MMCE. The root Brier score is an upper bound that needs "
        "no estimate at all; the canonical CE₂ looks at the whole distribution, the class-wise and top-label "
        "errors at less of it. Each dot is an estimate, each line an inequality."
    )


def chain_section(usable, settings: Settings, plans: Plans, found: Estimates, steps: Steps, *,
                  chain_estimator: str, chain_bins: int, chain_binning: str, log_x: bool) -> None:
    """Gruber & Buettner's chain of calibration errors of each model, and which estimated inequalities break."""
    chains = {}
    for model in usable:
        plan = plans.quadratic[model.name]
        rows_text = "all rows" if not plan.uses_blocks else f"a block of {plan.block_rows:,} rows"
        try:
            chains[model.name] = steps.run(f"Bound chain, {model.name}, {rows_text}", ce.bound_chain,
                                           model.predictions, model.fingerprint,
                                           found.bandwidths[model.name]["dirichlet"], plan.block_rows, settings.seed,
                                           chain_bins, chain_binning, chain_estimator, float(settings.mmce_h))
        except CalibrationInputError as exc:
            st.error(f"The chain could not be estimated for **{md(model.name)}**: {md(exc)} "
                     "Change the settings above.",
                     icon=":material/error:")
    if chains:
        st.plotly_chart(bound_chain_figure(chains, colors=state.model_colors(), log_x=log_x), theme=None,
                        key="estimators_chain",
                        config=downloads.chart_config("Estimators", *chains, "bound-chain", chain_estimator,
                                                      chain_bins, chain_binning))
        st.markdown(
            "**Why a line can be orange.** The order holds for the true errors. The numbers here are estimates "
            "from a finite sample, each with its own bias and noise, so an estimate can land above the one that "
            "must bound it: at small N or with many classes that is expected and says nothing about the model. "
            "Only two links hold for the estimates on every sample (√2 ≥ √BS, and TCE₂ ≥ TCE₁, the root "
            "mean square of the same gaps against their mean; with binned estimates also TCE₁ = ECE): a break "
            "there would signal a bug."
        )
        for name, found_chain in chains.items():
            plan = plans.quadratic[name]
            where = "all rows" if not plan.uses_blocks else f"a random block of {plan.block_rows:,} rows"
            if found_chain.all_hold:
                st.success(f"**{md(name)}** ({where}): every estimated inequality holds.",
                           icon=":material/check:")
                continue
            for link in found_chain.bug_breaks:
                st.error(f"**{md(name)}** ({where}): {CHAIN_LABELS[link.lower]} = {link.lower_value:.4f} exceeds "
                         f"{CHAIN_LABELS[link.upper]} = {link.upper_value:.4f}, which the estimates obey on every "
                         f"sample: {link.explanation}. Please report it.", icon=":material/bug_report:")
            expected = found_chain.expected_breaks
            if expected:
                lines = "\n".join(
                    f"- {CHAIN_LABELS[link.lower]} = {link.lower_value:.4f} above {CHAIN_LABELS[link.upper]} = "
                    f"{link.upper_value:.4f}: {link.explanation}." for link in expected)
                st.info(f"**{md(name)}** ({where}): {len(expected)} of {len(found_chain.links)} estimated "
                        "inequalities are out of order, as finite-sample estimators can be; none signals a bug. "
                        f"More rows bring the estimates into order.\n\n{lines}", icon=":material/info:")


def smooth_section(usable, settings: Settings, plans: Plans, found: Estimates, steps: Steps) -> None:
    """The smoothed reliability curves and their smECE (the page's last computation: it closes ``steps``)."""
    st.subheader("Smoothed reliability curve")
    st.markdown(
        "Instead of bins, the correctness of every prediction is smoothed over the confidence with a Gaussian "
        "kernel (reflected at 0 and 1); the area between this curve and the diagonal, weighted by the density of "
        "the confidences below, is the **smooth ECE** (Blasiok & Nakkiran 2023). The shaded band is a pointwise "
        "95% bootstrap band at the same bandwidth. " + SMOOTH_RANGE_NOTE
    )
    curves = {}
    for model in usable:
        curves[model.name] = steps.run(f"Smoothed reliability curve, {model.name}", ce.smooth_curve,
                                       model.predictions, model.fingerprint, found.bandwidths[model.name]["smece"],
                                       plans.bands[model.name], settings.seed)
    steps.close()
    if curves:
        st.plotly_chart(smooth_reliability_figure(curves, colors=state.model_colors()), theme=None,
                        key="estimators_smooth",
                        config=downloads.chart_config("Estimators", *curves, "smooth-reliability"))
        cells = st.columns(min(len(curves), 4))
        for i, (name, curve) in enumerate(curves.items()):
            band = (f"band: {plans.bands[name]} resamples" if plans.bands[name]
                    else "no band (choose bootstrap resamples above)")
            cells[i % len(cells)].metric(f"{md(name)}: smECE", f"{curve.smece:.4f}",
                                         help=f"Bandwidth σ = {curve.bandwidth:.4g}; {band}.")


def notes_section() -> None:
    """What each estimator measures, and its pitfalls."""
    st.subheader("What each estimator measures")
    st.markdown(NOTES)
