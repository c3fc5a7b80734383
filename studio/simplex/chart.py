"""The two-dimensional reliability diagram (arrows on the triangle), its caption and the per-cell table."""
from __future__ import annotations

import streamlit as st

from calib_core import csv_bytes
from calib_core.metrics.simplex import SimplexReliability
from studio import downloads
from calib_core.plot.figures_simplex import SIMPLEX_HEIGHT as CHART_HEIGHT, simplex_figure
from studio.simplex.vertices import VERTEX_LETTERS
from studio.state import ModelView
from studio.text import md


def show_chart(model: ModelView, models: list[ModelView], view: SimplexReliability, titles: tuple[str, str, str], *,
               lens: str, partition: str, n_bins: int, min_bin_size: int, arrow_scale: float,
               count_scale: str) -> None:
    """The chart, the report button and a caption saying what the cells and arrows are."""
    figure = simplex_figure(view, arrow_scale=arrow_scale, class_names=titles, count_scale=count_scale)
    figure.update_layout(height=CHART_HEIGHT)
    st.plotly_chart(figure, theme=None, key="simplex_chart",
                    config=downloads.chart_config("Simplex", model.name, lens, partition, n_bins))
    downloads.report_button("simplex", models)
    table = view.table
    kept = int(view.projection.kept.sum())
    weighted = view.projection.weights is not None
    rows_text = f"{kept:,} rows" + (f" (total weight {table.n_total:,.6g})" if weighted else "")
    three = view.projection.mode == "classes"
    if view.projection.n_excluded and weighted:
        rows_text += (f" of positive weight{' whose label is one of the three classes' if three else ''} "
                      f"({view.projection.n_excluded:,} rows left out: {'another label or ' if three else ''}"
                      "weight 0)")
    elif view.projection.n_excluded:
        rows_text += (f" whose label is one of the three classes ({view.projection.n_excluded:,} rows with "
                      "another label are left out)")
    size = "summed row weight" if weighted else "number of rows"
    if partition == "uniform":
        cells_text = (f"{n_bins}² = {n_bins * n_bins} triangles, {table.n_cells} of them non-empty, one arrow "
                      f"each; cell colour = {size}")
    else:
        cells_text = (f"{table.n_cells} cells of at most {min_bin_size:,} {'in weight' if weighted else 'rows'} "
                      "(each the region its splits cut out of the triangle), one arrow each; cell colour = "
                      f"{size}, dots = predictions")
    scale_text = "" if arrow_scale == 1.0 else f" Arrows drawn {arrow_scale:g}× their length."
    st.caption(f"{md(model.name)}: {rows_text}; {cells_text}. Hover an arrow for its count, mean prediction and "
               f"observed frequency.{scale_text}")


def show_cells(model: ModelView, view: SimplexReliability, titles: tuple[str, str, str]) -> None:
    """The per-cell table (in an expander) and its CSV download."""
    with st.expander("Per-cell table"):
        frame = view.table.to_frame()
        renamed = {}
        for k, title in enumerate(titles):
            name = title or f"vertex {VERTEX_LETTERS[k]}"
            renamed[f"mean_prediction_{k}"] = f"mean prediction: {name}"
            renamed[f"observed_frequency_{k}"] = f"observed: {name}"
        frame = frame.rename(columns=renamed)
        st.dataframe(frame, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in frame.columns
                                    if c not in ("count",) and not c.startswith("key_")})
        st.download_button("Download the cells as CSV", csv_bytes(frame),
                           file_name=f"simplex_cells_{model.name}.csv", mime="text/csv", on_click="ignore",
                           icon=":material/download:")
