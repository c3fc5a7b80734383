"""The HTML report's word on row weights (issue 28): which models are weighted, and which sections are not.

A model loaded with a weight column (``Predictions.sample_weight``) has its metrics, intervals, tests, reliability
and per-class charts weighted in :mod:`studio.report`, by the calls the Metrics, Reliability and Per-class pages
make; the sections whose calib_core functions take no weights say so, with the reasons the pages give
(:data:`studio.weights_reasons.REPORT_UNWEIGHTED`). Without a weighted model the report says nothing about weights.
Pure functions, no streamlit; every name is HTML-escaped.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

from studio.weights_reasons import REPORT_UNWEIGHTED, WEIGHTED_PAGES

__all__ = ["summary_rows", "summary_weights", "unweighted_note", "weights_data", "weights_html"]


def _weighted(models: Sequence) -> list:
    return [m for m in models if getattr(m.predictions, "sample_weight", None) is not None]


def weights_data(models: Sequence) -> dict | None:
    """The report JSON's ``weights``: per weighted model its column and summed weight, and the reason of every
    unweighted section; None when no model has row weights."""
    weighted = _weighted(models)
    if not weighted:
        return None
    return {"models": {m.name: {"column": m.predictions.weight_column, "sum_weight": float(m.predictions.sample_weight
                                                                                             .sum())}
                       for m in weighted},
            "unweighted": {key: reason for key, (_, reason) in REPORT_UNWEIGHTED.items()}}


def weights_html(models: Sequence) -> str:
    """The note under the settings table: which models are weighted and what is (not) weighted; "" without
    weights."""
    weighted = _weighted(models)
    if not weighted:
        return ""
    which = "; ".join(f"{m.name} by column {m.predictions.weight_column or '(array)'} (total weight "
                      f"{float(m.predictions.sample_weight.sum()):,.6g})" for m in weighted)
    return (f"<p class='note weights'><b>Row weights</b>: {html.escape(which)}. The metrics, their intervals, the "
            "calibration tests, the reliability diagrams and the per-class charts are weighted, by the same "
            f"calib_core calls as the app's {', '.join(WEIGHTED_PAGES)} pages (integer weights count as repeated "
            "rows; a metric or test that takes whole-number weights only says why it has no value). Sections "
            "marked Unweighted are not, and say why.</p>")


def unweighted_note(section: str, models: Sequence) -> str:
    """``<p class='note unweighted'>`` under the heading of ``section`` (a key of ``REPORT_UNWEIGHTED``) when a
    model has row weights; "" otherwise."""
    if not _weighted(models) or section not in REPORT_UNWEIGHTED:
        return ""
    return (f"<p class='note unweighted'>Unweighted: {html.escape(REPORT_UNWEIGHTED[section][1])}; this section "
            "counts every row once, whatever its weight.</p>")


def summary_weights(predictions) -> dict:
    """The data summary's ``weight_column`` and ``sum_weight`` ({} for a model without row weights)."""
    if getattr(predictions, "sample_weight", None) is None:
        return {}
    return {"weight_column": predictions.weight_column, "sum_weight": float(predictions.sample_weight.sum())}


def summary_rows(summary: dict) -> list[tuple[str, str]]:
    """The data table's row on the weights (plain text, escaped by the table); [] without weights."""
    if "sum_weight" not in summary:
        return []
    return [("row weights", f"column {summary['weight_column'] or '(array)'}, total weight "
                            f"{summary['sum_weight']:,.6g}; the metrics, tests and charts are weighted, N and the "
                            "accuracy in this table count each row once")]
