"""The Reliability page's selective-prediction section: risk-coverage curve with its band, selective risk at a
chosen coverage, and an abstention threshold certified for a target risk (calib_core.metrics.selective)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from studio import compute_selective, downloads, layout, state
from calib_core.plot.figures_selective import risk_coverage_figure
from studio.text import md

#: Bootstrap resamples of the band.
BAND_RESAMPLES = 200

INTRO = (
    "Answer only the most confident items and abstain on the rest: the curve shows the **error rate among the "
    "items answered** (selective risk) at each **coverage**, keeping items from the most confident down; tied "
    "confidences are kept or dropped together (dotted: inside the most confident tie group, which only a random "
    "order could split). Shaded: a 95% pointwise bootstrap band. A confidence model enters through its stated "
    "confidence, a K-class model through its top label (confidence = largest probability, correct = arg-max is "
    "the label). AURC, E-AURC, "
    "AUGRC and the AUROC of confidence for correctness, with intervals, are on the Metrics page."
)


def selective_section(models) -> None:
    """Draw the section for ``models`` (the loaded models of :func:`studio.layout.setup_page`)."""
    st.subheader("Selective prediction: when to abstain")
    st.markdown(INTRO)
    coverage_col, risk_col, delta_col = st.columns(3)
    coverage = layout.linked(coverage_col.slider, "Coverage", 0.05, 1.0, value=0.8, step=0.05, key="sel_coverage",
                             help="Share of the items answered, most confident first: the table gives the error "
                                  "rate among them.")
    target = layout.linked(risk_col.number_input, "Target risk", 0.01, 0.5, value=0.1, step=0.01,
                           key="sel_risk", help="The largest acceptable error rate among the items answered.")
    delta = layout.linked(delta_col.selectbox, "Allowed failure probability δ", [0.01, 0.05, 0.1], index=1,
                          key="sel_delta", help="The certified threshold keeps the error rate at or below the "
                                                "target with probability at least 1 − δ.")
    curves, bands, chosen, rows, reasons = {}, {}, {}, [], {}
    for model in models:
        curves[model.name], bands[model.name] = compute_selective.curve_and_band(
            model.predictions, model.fingerprint, BAND_RESAMPLES, 0)
        risk, reachable, found = compute_selective.selective_numbers(model.predictions, model.fingerprint,
                                                                     float(coverage), float(target), float(delta))
        if isinstance(found, str):  # calib_core's reason (fractional row weights): no threshold
            reasons[model.name] = found
            rows.append({"model": model.name, "risk at coverage": risk, "coverage at target (these rows)": reachable,
                         "certified threshold": None, "certified coverage": None, "risk bound": None})
            continue
        chosen[model.name] = found
        rows.append({"model": model.name, "risk at coverage": risk, "coverage at target (these rows)": reachable,
                     "certified threshold": found.threshold if found.found else None,
                     "certified coverage": found.coverage, "risk bound": found.risk_upper if found.found else None})
    figure = risk_coverage_figure(curves, bands, colors=state.model_colors(), chosen=chosen, target_risk=target)
    st.plotly_chart(figure, theme=None, key="risk_coverage_chart",
                    config=downloads.chart_config("Risk-coverage", *[m.name for m in models]))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
        "risk at coverage": st.column_config.NumberColumn(f"risk at {coverage:.0%} coverage", format="%.4f"),
        "coverage at target (these rows)": st.column_config.NumberColumn("coverage at target", format="percent"),
        "certified threshold": st.column_config.NumberColumn("certified: confidence ≥", format="%.4g"),
        "certified coverage": st.column_config.NumberColumn(format="percent"),
        "risk bound": st.column_config.NumberColumn("risk bound", format="%.4f"),
    })
    st.caption(
        "**Coverage at target** is read off these rows' curve: optimistic, no guarantee. The **certified "
        "threshold** is the lowest of a grid of thresholds fixed in advance whose exact binomial test, "
        "Bonferroni-corrected over the grid, shows an error rate at or below the target (Learn then Test, "
        f"Angelopoulos et al. 2021): with probability at least {1 - delta:.0%} over the draw of these rows, "
        "assumed i.i.d. like future items, the error rate among future items at or above it is at most "
        f"{target:.3g}. Its coverage is measured on these rows, not guaranteed; nothing holds under a shift. "
        "Certify on held-out rows, not on the rows the model was tuned on. Risk bound: the Clopper-Pearson upper "
        "bound at the certified threshold, simultaneous over the grid.")
    for name, reason in reasons.items():
        st.info(f"{md(name)}: no certified threshold: {md(reason)}", icon=":material/info:")
    for model in models:
        found = chosen.get(model.name)
        if found is not None and not found.found:
            st.info(f"{md(model.name)}: {found.guarantee}", icon=":material/info:")
