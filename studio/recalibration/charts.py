"""Reliability diagrams and simplex views before and after, the temperature surface, the GCE ranking, downloads."""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import streamlit as st

from calib_core import CalibrationInputError
from calib_core.recalibration import compare, sweeps
from calib_core.recalibration.confidence import reliability_target
from calib_core.recalibration.compare import BEFORE, CAUTIONARY
from studio import compute_recalibration as cr
from studio import downloads, layout, report
from calib_core.plot.figures import reliability_figure
from calib_core.plot.figures_recalibration import gce_rank_figure, temperature_surface_figure
from calib_core.plot.figures_simplex import simplex_figure
from studio.recalibration.fitting import ModelResult
from studio.text import md

#: Layouts of the temperature surface.
SURFACE_LAYOUTS = {"relative": "one chart (each curve ÷ its minimum)", "panels": "one panel per metric"}
#: Fitted temperatures marked on the surface.
TEMPERATURE_METHODS = ("Temperature scaling", "Metric-optimised temperature")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


#: Session key prefix of the recommended method each picker last started on.
_STARTED_ON = "recal:started_on:"


def _recommended_index(result: ModelResult, key: str) -> int:
    """Where the recommended method stands among the fitted ones (the picker ``key``'s default), else 0.

    A picker left on the method it started on follows the recommendation
    when that changes (other rows, another protocol or seed): its kept value
    is forgotten, so it starts again from the new default. A method the
    visitor picked stays.
    """
    best = result.recommendation.method
    started_on = st.session_state.get(_STARTED_ON + key)
    if started_on is not None and started_on != best and st.session_state.get(key) == started_on:
        del st.session_state[key]
    st.session_state[_STARTED_ON + key] = best
    return result.ok_methods.index(best) if best in result.ok_methods else 0


def report_entry(result: ModelResult, n_bins: int, binning: str, picked: str | None = None, *, n_boot: int = 0,
                 seed: int = 0) -> report.Recalibration:
    """One model's comparison for the HTML report: its table, the verdict object the page shows, and the
    reliability tables before and after the recommended method (and ``picked``, the method shown on the page)."""
    ev, found = result.ev, result.recommendation
    target = reliability_target(ev)
    diagrams = {"Before": cr.reliability(ev.before, ev.labels, (*result.key_base, BEFORE), int(n_bins), binning,
                                         target, _weights=ev.sample_weight)}
    for method in dict.fromkeys(m for m in (found.method, picked) if m in result.ok_methods):
        diagrams[f"After: {method}"] = cr.reliability(result.fits[method].probs, ev.labels,
                                                      (*result.key_base, method), int(n_bins), binning, target,
                                                      _weights=ev.sample_weight)
    note = report.comparison_note(result.sentence, ev, result.fits, n_boot=n_boot if result.intervals == "done" else 0,
                                  seed=seed)
    return report.Recalibration(result.view.name, result.table, diagrams, note=note, recommendation=found)


def show_reliability(result: ModelResult, *, n_boot: int,
                     seed: int) -> tuple[str, Callable[[dict[str, ModelResult]], None]]:
    """Reliability diagrams before and after the method picked here (first: the recommended one), and the report
    button.

    Returns the method and a function that draws the report button for the
    page's results (the report holds every model's verdict and table, so
    while intervals are pending a caption holds its place; the page calls it
    when they are all in).
    """
    view, ev, fits, ok_methods = result.view, result.ev, result.fits, result.ok_methods
    st.subheader("Reliability diagrams, before and after")
    picker_col, bins_col, binning_col = st.columns([4, 2, 3])
    method = layout.linked(picker_col.selectbox, "Method", ok_methods, index=_recommended_index(result, "method"), key="method",
                           options=ok_methods,
                           help="The recalibrated predictions shown on the right (and in the simplex); first shown: "
                                "the recommended method.")
    n_bins = layout.linked(bins_col.selectbox, "Bins", [10, 15, 20, 30], index=1, key="recal_bins")
    binning = layout.linked(binning_col.radio, "Binning", ["uniform", "adaptive"], horizontal=True, index=0,
                            key="recal_binning")
    target = reliability_target(ev)
    before_table = cr.reliability(ev.before, ev.labels, (*result.key_base, BEFORE), int(n_bins), binning, target,
                                  _weights=ev.sample_weight)
    after_table = cr.reliability(fits[method].probs, ev.labels, (*result.key_base, method), int(n_bins), binning,
                                 target, _weights=ev.sample_weight)
    after_name = f"After: {method}"
    st.plotly_chart(reliability_figure({"Before": before_table, after_name: after_table}, layout="side_by_side",
                                       colors={"Before": 0, after_name: 2}),
                    theme=None, key="recal_reliability",
                    config=downloads.chart_config("Recalibration", view.name, method, n_bins, binning))
    st.caption(("Reliability of the stated confidence: each point is a bin's mean confidence (before, and as the "
                "method maps it) against how often the answers in it were right" if result.stated else
                "Top-label reliability: each point is a bin's mean confidence against how often the predicted class "
                "was right") + ", with 95% Wilson intervals; bars below: share of evaluation rows per bin.")
    report_slot = st.empty()

    def draw_report(finals: dict[str, ModelResult]) -> None:
        with report_slot:
            entries = [report_entry(final, n_bins, binning, method if name == view.name else None, n_boot=n_boot,
                                    seed=seed) for name, final in finals.items()]
            downloads.report_button("recalibration", [final.view for final in finals.values()], n_bins=n_bins,
                                    binning=binning, n_boot=n_boot, seed=seed, recalibration=entries)

    report_slot.caption("The report download appears when the bootstrap intervals are in.")
    return method, draw_report


def show_simplex(result: ModelResult, method: str) -> None:
    """Canonical calibration on the simplex (three groups of classes), before and after ``method``."""
    view, ev, predictions = result.view, result.ev, result.view.predictions
    st.subheader("Simplex view, before and after")
    class_names = tuple(predictions.class_names) or tuple(str(k) for k in range(predictions.n_classes))
    after_name = f"After: {method}"
    left, right = st.columns(2)
    for column, label, probs, key in ((left, "Before", ev.before, BEFORE),
                                      (right, after_name, result.fits[method].probs, method)):
        with column:
            try:
                simplex_view = cr.simplex(probs, ev.labels, (*result.key_base, key), 10, _weights=ev.sample_weight)
            except CalibrationInputError as exc:
                st.warning(f"The simplex view cannot be drawn: {md(exc)}", icon=":material/warning:")
                continue
            figure = simplex_figure(simplex_view, class_names=class_names, title=label)
            figure.update_layout(height=430)
            st.plotly_chart(figure, theme=None, key=f"recal_simplex_{slug(label)}",
                            config=downloads.chart_config("Recalibration", view.name, "simplex", label, "10 bins"))
    st.caption(f"Canonical calibration of the whole distribution (Vaicenavicius et al. 2019) on the "
               f"{ev.labels.size:,} evaluation rows{cr.weighting_text(ev)}: the classes summed into three groups, one arrow per cell from the "
               "mean prediction to the observed frequencies. Short arrows: calibrated. More on the Simplex page.")


def show_surface(result: ModelResult) -> None:
    """Each metric of softmax(z / T) against T, with the fitted temperatures marked."""
    view, ev, fits = result.view, result.ev, result.fits
    st.subheader("Temperature surface")
    marks = compare.fitted_temperatures({name: fits[name] for name in result.ok_methods
                                         if name in TEMPERATURE_METHODS})
    t_range = sweeps.surface_range(list(marks.values()))
    surface = cr.temperature_surface(view.predictions, view.fingerprint, ev.protocol, t_range=t_range)
    surface_layout = layout.linked(st.radio, "Layout", list(SURFACE_LAYOUTS), format_func=SURFACE_LAYOUTS.get,
                                   horizontal=True, index=list(SURFACE_LAYOUTS).index("relative"), key="surface")
    st.plotly_chart(temperature_surface_figure(surface.table, surface.minimisers, layout=surface_layout, marks=marks),
                    theme=None, key="recal_surface",
                    config=downloads.chart_config("Recalibration", view.name, "temperature-surface", surface_layout))
    kde_text = (f"; CE_KL (Dirichlet kernel, bandwidth 0.01) on a random {surface.kde_rows:,} of them"
                if surface.kde_rows else "")
    failed_text = f" Left out (not finite): {', '.join(surface.failed)}." if surface.failed else ""
    if surface.not_weighted:
        failed_text += f" {surface.not_weighted}."
    if surface.at_edge:
        failed_text += f" Lowest at an end of the grid (the minimum may lie beyond it): {', '.join(surface.at_edge)}."
    st.caption(f"Each metric of softmax(z / T) on {cr.rows_text(surface.n_rows, ev)}{kde_text}, for "
               f"{sweeps.T_POINTS} temperatures from {t_range[0]:g} to {t_range[1]:g}. Stars: each curve's lowest "
               "point. As in Nixon et al. (2019, Figure 1 right), the temperature that minimises a calibration error "
               "is usually not the one that minimises the NLL (which temperature scaling fits, on the fitting rows)."
               + failed_text)
    lowest = surface.minimisers.rename(columns={"metric": "Metric", "temperature": "Lowest at T",
                                                "value": "Value there"})
    st.dataframe(lowest, hide_index=True, column_config={
        "Lowest at T": st.column_config.NumberColumn(format="%.3g"),
        "Value there": st.column_config.NumberColumn(format="%.4g")})


def show_ranking(result: ModelResult) -> None:
    """The rank of every method under each of the 32 GCE variants, and their mean rank correlation."""
    view, ev, fits = result.view, result.ev, result.fits
    st.subheader("Ranking under the 32 GCE variants")
    ranked: dict[str, np.ndarray] = {BEFORE: ev.before, **{name: fits[name].probs for name in result.ok_methods}}
    ranking = cr.gce_ranking(ranked, ev.labels, (*result.key_base, tuple(ranked)), _weights=ev.sample_weight)
    metric_col, text_col = st.columns([1, 3])
    if len(ranked) >= 3:
        metric_col.metric("Mean rank correlation", f"{ranking.mean_spearman:.2f}",
                          help="Spearman correlation of the methods' values under two variants, averaged over all "
                               "496 pairs of variants. 1: every variant orders the methods the same way.")
    else:
        metric_col.metric("Mean rank correlation", "—",
                          help="Needs at least two methods (three rows with the uncalibrated predictions).")
    text_col.markdown(
        "Nixon et al. (2019, Table 5) rank recalibration methods under every combination of binning (uniform or "
        "adaptive), top-label or all probabilities, per class or pooled, keeping values above 0 or above 0.01, and "
        "L1 or L2 norm (the general calibration error, `calib_core.gce`), and find that the ranking changes with the "
        "variant.")
    text_col.caption(cr.variant_note(ranking, ev))
    st.plotly_chart(gce_rank_figure(ranking.ranks, ranking.values, ranking.variants, highlight=(CAUTIONARY,)),
                    theme=None, key="recal_gce",
                    config=downloads.chart_config("Recalibration", view.name, "GCE-ranks", ev.protocol.scheme))
    st.caption(f"Rank 1 = lowest error under that variant (15 bins, {cr.rows_text(ranking.n_rows, ev)}); "
               "hover a cell for the variant's settings and its value.")


def show_downloads(result: ModelResult) -> None:
    """The recalibrated predictions (CSV) and the fitted parameters (JSON) of one method."""
    view, ev, ok_methods = result.view, result.ev, result.ok_methods
    st.subheader("Downloads")
    method = layout.linked(st.selectbox, "Method to download", ok_methods, index=_recommended_index(result, "download"),
                           key="download", options=ok_methods, help="First shown: the recommended method.")
    fit = result.fits[method]
    csv_col, json_col = st.columns(2)
    csv_col.download_button(
        "Recalibrated predictions (CSV)", lambda: cr.predictions_csv(view.predictions, ev, fit),
        file_name=f"{slug(view.name)}_{slug(method)}_recalibrated.csv", mime="text/csv", on_click="ignore",
        icon=":material/download:", key="recal_download_csv",
        help=("Columns id (when the file has one), confidence (recalibrated), correct, split. " if result.stated
              else "Columns label, split, p_<class>. ")
        + "Holdout: the fitted map applied to every row; `split` says which rows it was fitted on (calibration) and "
          "evaluated on (test). Cross-fitting: the out-of-fold predictions.")
    json_col.download_button(
        "Fitted parameters (JSON)", fit.params_json or "", file_name=f"{slug(view.name)}_{slug(method)}.json",
        mime="application/json", on_click="ignore", icon=":material/data_object:", key="recal_download_json",
        disabled=not fit.params_json,
        help="Recalibrator.to_json(); load it with calib_core.Recalibrator.from_json(text) and call predict_proba."
             + (" Under cross-fitting: the map refitted on all rows." if ev.cross_fitted else ""))
