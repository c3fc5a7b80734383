"""The verdicts, the model shown in detail, its tables and the change chart."""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from calib_core.recalibration import compare
from calib_core.recalibration.compare import BEFORE, CAUTIONARY
from studio import compute_recalibration as cr
from studio import downloads, layout
from studio.figures_recalibration import change_figure
from studio.recalibration.fitting import ModelResult, interval_text
from studio.text import literal


def show_verdicts(results: dict[str, ModelResult], methods: Sequence[str]) -> None:
    """One verdict per model, with its protocol stated once (every table and chart below is on its rows)."""
    st.subheader("Verdict")
    for name, result in results.items():
        st.markdown(compare.verdict(literal(name), result.table))
        if result.sentence:
            st.info(f"**Protocol:** {result.sentence} Every number and chart below is on these evaluation rows.",
                    icon=":material/rule:")
        if result.note:
            st.info(result.note, icon=":material/shuffle:")
    st.caption("Recommended: among the methods that lower the ECE without raising the Brier score (a proper score, "
               "so sharpness counts too), the one with the lowest Brier score on the evaluation rows"
               + (f"; never {CAUTIONARY}, a baseline." if CAUTIONARY in methods else "."))


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
                f"**{method}** could not be fitted on {literal(name)}: {fit.message} Remove it from the methods "
                "or change the protocol.", icon=":material/warning:")
    if result.boot_note:
        st.warning(result.boot_note, icon=":material/timer:")
    if not result.ok_methods:
        st.error(f"No method could be fitted on {literal(name)}. Choose other methods or another protocol.",
                 icon=":material/error:")
        st.stop()
    if result.ev.input == "probs":
        st.caption(f"{literal(name)} has probabilities only (no logits): methods that work on logits use "
                   "log(p + 10⁻¹²), the logits up to a constant per row; an exact zero counts as log(10⁻¹²) ≈ "
                   "−27.6, as in scikit-learn's temperature scaling.")


def show_tables(result: ModelResult, *, n_boot: int, seed: int) -> None:
    """The summary matrix (best per metric in green), the details with intervals, the change chart."""
    ev, table, view = result.ev, result.table, result.view
    ok_methods = result.ok_methods
    st.subheader(f"Before and after: {literal(view.name)}")
    matrix = compare.summary_matrix(ev, table)
    st.dataframe(cr.styled_summary(matrix, compare.best_methods(table)), width="stretch")
    st.caption(f"Every metric on the {ev.labels.size:,} evaluation rows (15 uniform bins for the binned errors); "
               f"first row: {BEFORE.lower()}. {cr.best_note(ok_methods)}"
               + (f" {cr.MISSING}: could not be computed." if matrix.isna().any().any() else ""))

    st.dataframe(cr.styled_details(table), hide_index=True, width="stretch", column_config=cr.DETAIL_LABELS)
    intervals_missing = table[compare.INTERVAL_COLUMNS].isna()
    st.caption(interval_text(int(n_boot) if not result.boot_note else 0, seed, ev.labels.size)
               + (f" {cr.MISSING}: no interval (the resampled values were not finite)."
                  if intervals_missing.any().any() and not intervals_missing.all().all() else ""))

    st.plotly_chart(change_figure(table, keys=compare.PROBABILITY_SCALE_KEYS,
                                  colors={m: i for i, m in enumerate(ok_methods)},
                                  title="Change of each calibration error (after − before)"),
                    theme=None, key="recal_change",
                    config=downloads.chart_config("Recalibration", view.name, "change", ev.protocol.scheme))
