"""The Metrics page's *Compare systems* section: confidence models answering the same items, matched by item id,
with the paired difference of every two on each metric, its interval and the verdict
(:func:`calib_core.recalibration.paired.compare_systems`; the same numbers as ``calib-core compare``)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calib_core.recalibration.paired import CONFIDENCE_SYSTEM_KEYS
from studio import compute_systems
from studio.text import md

INTRO = (
    "Several systems answering the same items (one file per system, or one file with a `model` column): which is "
    "better calibrated (ECE of stated confidence against correctness, Brier score) and which is better at knowing "
    "when it is wrong (AUROC of confidence for correctness, AURC), beyond noise. Items are matched by their id "
    "column; every system is resampled on the same items (paired bootstrap), so the interval of a difference "
    "keeps what the systems share. A difference is called only when its interval excludes 0 (no correction for "
    "the number of pairs and metrics). The same numbers: `calib-core compare A.csv B.csv`."
)


def systems_section(models, *, n_boot: int, seed: int, alpha: float) -> None:
    """Draw the section for the confidence models among ``models`` (nothing when there are fewer than two)."""
    systems = [m for m in models if m.predictions.kind == "confidence"]
    if len(systems) < 2:
        return
    st.subheader("Compare systems")
    st.markdown(INTRO)
    if n_boot < 2:
        st.info("Choose a number of bootstrap resamples above to compare the systems with intervals.",
                icon=":material/info:")
        return
    names = tuple(m.name for m in systems)
    view = compute_systems.systems_comparison([m.predictions for m in systems],
                                              tuple(m.fingerprint for m in systems), names, int(n_boot), int(seed),
                                              float(alpha))
    if view.comparison is None:
        st.error(f"These systems cannot be compared: {md(view.error)} Load files whose items share an id column "
                 "(question_id, item_id, id, ...), or files of the same items in the same order.",
                 icon=":material/error:")
        return
    found = view.comparison
    how = "by item id" if view.by_id else "by position (no id column; the files have the same number of rows)"
    left = ", ".join(f"{md(name)} {rows:,}" for name, rows in zip(names, view.rows))
    st.markdown(f"**{view.n_matched:,} items matched** {how}, out of {left}; {found.n_boot:,} paired resamples, "
                f"seed {found.seed}, {1 - found.alpha:.0%} intervals.")
    table = found.table().drop(columns="key")
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "metric": st.column_config.TextColumn("Metric", width="medium"),
        "a": st.column_config.TextColumn("A"), "b": st.column_config.TextColumn("B"),
        "difference": st.column_config.NumberColumn("B − A", format="%+.4f"),
        "low": st.column_config.NumberColumn("interval low", format="%+.4f"),
        "high": st.column_config.NumberColumn("interval high", format="%+.4f"),
        "verdict": st.column_config.TextColumn("Verdict", width="medium")})
    for sentence in found.sentences():
        st.markdown(f"- {md(sentence)}")
    with st.expander("Each system's values with their intervals"):
        values = found.values()
        st.dataframe(pd.DataFrame(values.drop(columns="key")), hide_index=True, width="stretch", column_config={
            c: st.column_config.NumberColumn(format="%.4f") for c in ("estimate", "low", "high")})
    st.caption(f"Metrics compared: {', '.join(CONFIDENCE_SYSTEM_KEYS)} (registry keys). AURC also moves with the "
               "accuracy: a more accurate system has a lower AURC with the same ranking; AUROC does not.")
