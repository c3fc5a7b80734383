"""The Metrics page's chart of calibration errors with intervals (calib_core.plot.figures.metric_interval_figure).

Issue 23 item 8: the x labels "ICI (binary: class 1; K > 2: one-vs-rest mean)", "E50 (...)" and
"E90 (...)" ran into each other and off the figure; the axis now shows the short names and says
the shared qualifier once, in the axis title that Plotly places below the tick labels.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import calib_core as cc
from calib_core.plot import figures
from studio.text import plot_text

#: Plotly's 12 px tick font is about 7 px per character; categories of a 700 px chart with 13 metrics
#: are about 45 px apart, so rotated labels of at most this many characters stay clear of each other.
MAX_TICK_CHARS = 14


def chart_table(models=("model A", "model B")) -> pd.DataFrame:
    specs = [s for s in cc.metrics_of_kind("classes") if s.calibration_error and s.probability_scale]
    rows = [{"model": m, "metric": s.label, "estimate": 0.1, "ci_low": 0.05, "ci_high": 0.15,
             "calibration_error": True, "probability_scale": True} for m in models for s in specs]
    return pd.DataFrame(rows)


def test_tick_labels_are_short_and_the_shared_qualifier_is_said_once():
    table = chart_table()
    names = list(dict.fromkeys(table["metric"]))
    assert any(len(n) > 30 for n in names), "the registry still has long names such as ICI's"
    fig = figures.metric_interval_figure(table)
    xaxis = fig.layout.xaxis
    assert list(xaxis.tickvals) == names, "one tick per metric, in the table's order"
    assert len(set(xaxis.ticktext)) == len(names)
    assert max(len(t) for t in xaxis.ticktext) <= MAX_TICK_CHARS, list(xaxis.ticktext)
    # Every long name's qualifier is said once, in the axis title, next to the metrics it belongs to.
    qualifier = plot_text("binary: class 1; K > 2: one-vs-rest mean")
    assert xaxis.title.text.count(qualifier) == 1
    assert "ICI, E50, E90" in xaxis.title.text
    assert xaxis.automargin is True and xaxis.title.standoff >= 10
    # The full name stays in the data (and so in the hover).
    for trace in fig.data:
        assert set(trace.x) == set(names)
        assert "%{x}" in trace.hovertemplate


def test_short_names_that_would_collide_keep_their_qualifier():
    table = chart_table(models=("m",))
    extra = table.iloc[[0]].assign(metric="ECE (debiased)")
    fig = figures.metric_interval_figure(pd.concat([table, extra], ignore_index=True))
    ticks = dict(zip(fig.layout.xaxis.tickvals, fig.layout.xaxis.ticktext))
    assert ticks["ECE (debiased)"] != ticks["ECE"]
    assert np.all([t for t in fig.layout.xaxis.ticktext])


def test_bin_marks_are_the_reference_lines_of_the_page_and_the_report():
    """One home (issue 24): the Bin sensitivity page and the report each wrote these two marks."""
    import inspect

    from studio import report
    from calib_core.plot import figures

    assert figures.bin_marks(899) == {"optimal_n_bins(N)": 21.0, "N^(1/3)": 9.65}
    assert "figures.bin_marks(" in inspect.getsource(report._figures)
