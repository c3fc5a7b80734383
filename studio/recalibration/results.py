"""The verdicts, the model shown in detail, its tables and the change chart."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from calib_core.recalibration import compare
from calib_core.recalibration import confidence as confidence_maps
from calib_core.recalibration.compare import BEFORE, CAUTIONARY
from studio import compute_recalibration as cr
from studio import downloads, layout
from calib_core.plot.figures_recalibration import change_figure
from studio.recalibration.fitting import ModelResult, interval_text
from studio.text import literal, md


def show_verdicts(results: dict[str, ModelResult], methods: Sequence[str]) -> dict[str, Any]:
    """One verdict per model, with its protocol stated once (every table and chart below is on its rows).

    Returns each model's verdict slots, for :func:`draw_verdict` once its intervals are in.
    """
    st.subheader("Verdict")
    slots = {}
    for name, result in results.items():
        slots[name] = (st.empty(), st.empty())
        draw_verdict(slots[name], result)
        if result.sentence:
            st.info(f"**Protocol:** {result.sentence} Every number and chart below is on these evaluation rows.",
                    icon=":material/rule:")
        if result.note:
            st.info(result.note, icon=":material/shuffle:")
    st.caption("Best: among the methods that lower the ECE without raising the Brier score (a proper score, "
               "so sharpness counts too), the one with the lowest Brier score on the evaluation rows"
               + (f"; never {CAUTIONARY}, a baseline." if CAUTIONARY in methods else ".")
               + " Each other method's Brier difference from it gets an interval made on the same resamples of the "
                 "evaluation rows for both; the methods whose interval reaches 0 are tied with it within noise, and "
                 "the simplest of the tied ones (fewest parameters) is advised, so the advice does not flip with "
                 "the protocol or the rows while the data cannot tell the methods apart.")
    return slots


def draw_verdict(slots: tuple[Any, Any], result: ModelResult) -> None:
    """One model's verdict sentence into ``slots[0]``; into ``slots[1]``, while its intervals are missing, why.

    One element per ``st.empty`` slot: a slot redrawn with fewer elements
    than it held would keep the others on screen until the run ends.
    """
    sentence_slot, note_slot = slots
    recommendation = result.recommendation
    comparison = recommendation.comparison()
    sentence_slot.markdown(recommendation.sentence(literal(result.view.name))
                           + (f"\n\n{comparison}" if comparison else ""))
    if result.intervals == "pending":
        note_slot.caption(":material/hourglass_top: Its bootstrap intervals are being computed: whether the Brier "
                          "change, and the margin over the runner-up, are beyond bootstrap noise is added when they "
                          "are in.")
    elif result.intervals == "stopped":
        note_slot.caption(":material/pause_circle: Its bootstrap intervals were stopped, so this verdict does not "
                          "say whether the Brier change, or the margin over the runner-up, is beyond bootstrap "
                          "noise.")
    else:
        note_slot.empty()


def choose_model(results: dict[str, ModelResult]) -> ModelResult:
    """The model shown in detail (a picker when there are several)."""
    names = list(results)
    if len(names) > 1:
        chosen = layout.linked(st.selectbox, "Model shown in detail", names, index=0, key="recal_model",
                               options=names, help="Every model has its own fits; the sections below show one model.")
    else:
        chosen = names[0]
    return results[chosen]


def show_problems(result: ModelResult) -> None:
    """Thin classes, failed fits, a skipped bootstrap; stops the page when no method could be fitted."""
    name = result.view.name
    for note in result.ev.notes:
        st.warning(note, icon=":material/warning:")
    for method, fit in result.fits.items():
        if not fit.ok:
            (st.warning if fit.severity == "warning" else st.error)(
                f"**{method}** could not be fitted on {literal(name)}: {md(fit.message)} Remove it from the methods "
                "or change the protocol.", icon=":material/warning:")
    for method, n_iter in compare.unconverged_fits(result.fits).items():
        st.warning(f"**{method}** on {literal(name)} stopped at its iteration cap ({n_iter} L-BFGS-B iterations) "
                   "before meeting its tolerance: its objective is flat along some directions (near-separable "
                   "fitting rows), so its map is where the optimiser stopped and can differ slightly between "
                   "machines. Read its numbers with care, or prefer a method with fewer parameters.",
                   icon=":material/warning:")
    for hazard in compare.zero_hazards(result.ev, result.fits).values():
        if hazard.rows:
            st.warning(f"Exact zeros, NLL: {md(hazard.sentence)}", icon=":material/warning:")
        else:
            st.caption(f"Exact zeros, NLL: {md(hazard.sentence)}")
    if result.boot_note:
        st.warning(result.boot_note, icon=":material/timer:")
    if result.stated:  # before a stop: it says which chosen methods do not apply to a confidence model
        show_confidence_notes(result)
    if not result.ok_methods:
        st.error(f"No method could be fitted on {literal(name)}. Choose other methods or another protocol.",
                 icon=":material/error:")
        st.stop()
    if result.ev.input == "probs" and not result.stated:
        st.caption(f"{literal(name)} has probabilities only (no logits): methods that work on logits use "
                   "log(p + 10⁻¹²), the logits up to a constant per row; an exact zero counts as log(10⁻¹²) ≈ "
                   "−27.6, as in scikit-learn's temperature scaling.")


def show_confidence_notes(result: ModelResult) -> None:
    """A confidence model: why no accuracy is reported, which chosen methods do not map a stated confidence, and
    whether each fitted map keeps the confidences' order (so the AURC) -- sentences made by calib_core."""
    name = literal(result.view.name)
    skipped = [m for m in result.chosen if m not in confidence_maps.CONFIDENCE_METHODS]
    text = (f"{name} is a confidence model: each method is a map of its stated confidence c to P(correct | c), "
            f"fitted on the matrix [1 − c, c] with the correctness as labels. {md(result.accuracy_note)}")
    if skipped:
        text += (f" Not fitted on it: {', '.join(skipped)} (they need class probabilities or logits; a stated "
                 f"confidence is mapped by {', '.join(confidence_maps.CONFIDENCE_METHODS)}).")
    st.info(text, icon=":material/psychology:")
    changes = confidence_maps.order_changes(result.comparison_view)
    if changes:
        st.caption("Ranking (AURC): " + " ".join(md(change.sentence) for change in changes.values()))


@dataclass(frozen=True)
class TableSlots:
    """Where :func:`show_tables` drew the details table and the change chart, to complete them later."""

    details: Any
    details_caption: Any
    change: Any
    n_boot: int
    seed: int

    def draw_details(self, result: ModelResult) -> None:
        """The details table with its intervals (as far as they are in) and the caption saying how they were made."""
        table = result.table
        self.details.dataframe(cr.styled_details(table), hide_index=True, width="stretch",
                               column_config=cr.DETAIL_LABELS)
        intervals_missing = table[compare.INTERVAL_COLUMNS].isna()
        self.details_caption.caption(interval_text(result, self.n_boot, self.seed)
                                     + (f" {cr.MISSING}: no interval (the resampled values were not finite)."
                                        if result.intervals == "done" and intervals_missing.any().any()
                                        and not intervals_missing.all().all() else ""))

    def draw_change(self, result: ModelResult) -> None:
        """The change chart, drawn once per run: when the intervals are in, stopped, or not asked for."""
        with self.change:
            keys = confidence_maps.CONFIDENCE_CHANGE_KEYS if result.stated else compare.PROBABILITY_SCALE_KEYS
            st.plotly_chart(change_figure(result.table, keys=keys,
                                          colors={m: i for i, m in enumerate(result.ok_methods)},
                                          title="Change of each calibration error (after − before)"),
                            theme=None, key="recal_change",
                            config=downloads.chart_config("Recalibration", result.view.name, "change",
                                                          result.ev.protocol.scheme))


def show_tables(result: ModelResult, *, n_boot: int, seed: int) -> TableSlots:
    """The summary matrix (best per metric in green), the details with intervals, the change chart.

    The change chart waits for the intervals (its error bars): while they are
    pending, a caption holds its place.
    """
    ev, table, view = result.ev, result.table, result.view
    st.subheader(f"Before and after: {literal(view.name)}")
    matrix = compare.summary_matrix(ev, table)
    st.dataframe(cr.styled_summary(matrix, compare.best_methods(table)), width="stretch")
    bins = ("the stated confidence against the correctness: ECE with 10 equal-width and 10 equal-mass bins, Brier "
            "score, NLL and AURC; no accuracy column, since no answer changes" if result.stated
            else "15 uniform bins for the binned errors")
    st.caption(f"Every metric on the {ev.labels.size:,} evaluation rows{cr.weighting_text(ev)} ({bins}); "
               f"first row: {BEFORE.lower()}. {cr.best_note(result.ok_methods)}"
               + (f" {cr.MISSING}: could not be computed." if matrix.isna().any().any() else ""))
    slots = TableSlots(st.empty(), st.empty(), st.empty(), int(n_boot), int(seed))
    slots.draw_details(result)
    if result.intervals == "pending":
        slots.change.caption("The chart of each change with its interval appears when the intervals are in.")
    else:
        slots.draw_change(result)
    return slots
