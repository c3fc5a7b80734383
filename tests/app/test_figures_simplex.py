"""Tests of calib_core.plot.figures_simplex: the simplex reliability figure drawn from calib_core's results."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.plot.figures_simplex import ARROW_TRACE_NAME, simplex_figure

CIE = cc.CalibrationInputError


def dirichlet(n, k, seed, alpha=1.0):
    return np.random.default_rng(seed).dirichlet(np.full(k, alpha), size=n)


# ----------------------------------------------------------------------------
# Figure
# ----------------------------------------------------------------------------

def arrow_trace(fig):
    traces = [t for t in fig.data if t.name == ARROW_TRACE_NAME]
    assert len(traces) == 1
    return traces[0]


def test_simplex_figure_uniform_has_one_arrow_per_cell():
    probs = dirichlet(2000, 10, 7, alpha=0.5)
    labels = np.random.default_rng(8).integers(0, 10, 2000)
    rel = cc.simplex_reliability(probs, labels, n_bins=4)
    fig = simplex_figure(rel, arrow_scale=2.0, title="model A")
    arrows = arrow_trace(fig)
    n = rel.table.n_cells
    assert len(arrows.a) == 3 * n
    assert sum(v is None for v in arrows.a) == n
    assert list(arrows.marker.symbol[1::3]) == ["arrow"] * n
    assert arrows.marker.angleref == "previous"
    # Tails at the mean prediction, heads at mean + 2 * (observed - mean).
    tail = rel.table.mean_prediction
    head = tail + 2.0 * (rel.table.observed_frequency - tail)
    np.testing.assert_allclose(np.array(arrows.a[0::3], dtype=float), tail[:, 0])
    np.testing.assert_allclose(np.array(arrows.c[1::3], dtype=float), head[:, 2])
    assert "count: " in arrows.text[0] and "observed frequency" in arrows.text[0]
    # Filled cells: every non-empty triangle drawn once, plus the colour-bar trace.
    filled = [t for t in fig.data if t.name == "cells"]
    assert sum(sum(v is None for v in t.a) for t in filled) == n
    bar = [t for t in fig.data if t.name == "count"][0]
    assert bar.marker.showscale and bar.marker.opacity == 0
    assert fig.layout.ternary.aaxis.title.text == "{0, 1, 2}"
    assert fig.layout.ternary.caxis.title.text == "{6, 7, 8, 9}"
    assert fig.layout.title.text == "model A"


def test_simplex_figure_data_dependent_and_table_only():
    probs = dirichlet(3000, 3, 9)
    labels = cc.sample_labels(probs, seed=1)[0]
    rel = cc.simplex_reliability(probs, labels, partition="data_dependent", min_bin_size=300)
    fig = simplex_figure(rel, class_names=["cat", "dog", "bird"], max_points=500)
    assert len(arrow_trace(fig).a) == 3 * rel.table.n_cells
    points = [t for t in fig.data if t.name == "predictions"][0]
    assert len(points.a) == 500
    assert fig.layout.ternary.baxis.title.text == "dog"
    fig_table = simplex_figure(rel.table)
    assert len(arrow_trace(fig_table).a) == 3 * rel.table.n_cells


def _drawn_polygons(fig):
    """The filled cells of a figure as (M, 3) arrays, sorted so that figures can be compared."""
    out = []
    for trace in (t for t in fig.data if t.name == "cells"):
        corners = []
        for a, b, c in zip(trace.a, trace.b, trace.c):
            if a is None:
                out.append(np.round(np.array(corners[:-1]), 9))
                corners = []
            else:
                corners.append((a, b, c))
    return sorted(out, key=lambda p: (len(p), p.tolist()))


@pytest.mark.parametrize("shown", ["result", "table"])
def test_data_dependent_cells_are_the_regions_calib_core_gives(shown):
    """Issue 24: the figure replayed the partition and fell back to coloured dots when it disagreed (always for a
    bare table); it now draws the regions calib_core returns, for a result and for its table alike."""
    from calib_core.metrics.simplex import cell_polygons

    probs = dirichlet(3000, 3, 9)
    labels = cc.sample_labels(probs, seed=1)[0]
    rel = cc.simplex_reliability(probs, labels, partition="data_dependent", min_bin_size=300)
    fig = simplex_figure(rel if shown == "result" else rel.table)
    expected = sorted((np.round(p, 9) for p in cell_polygons(rel.partition)), key=lambda p: (len(p), p.tolist()))
    drawn = _drawn_polygons(fig)
    assert len(drawn) == rel.table.n_cells
    assert all(np.array_equal(d, e) for d, e in zip(drawn, expected))
    assert [t for t in fig.data if t.name == "count"][0].marker.showscale


def test_a_partition_without_its_cells_is_refused_not_drawn_as_dots():
    import dataclasses

    probs = dirichlet(600, 3, 2)
    rel = cc.simplex_reliability(probs, cc.sample_labels(probs, seed=0)[0], partition="data_dependent",
                                 min_bin_size=100)
    part = rel.partition  # the same cells, without the splits that made them
    plain = cc.Partition(part.kind, part.cell_index, part.n_cells, None, min_bin_size=part.min_bin_size)
    bare = dataclasses.replace(rel.table, partition=plain)
    with pytest.raises(CIE, match="split tree"):
        simplex_figure(bare)


def test_simplex_figure_class_names_of_all_classes():
    probs = dirichlet(200, 5, 0)
    rel = cc.simplex_reliability(probs, np.arange(200) % 5, n_bins=3)
    fig = simplex_figure(rel, class_names=list("abcde"))
    assert fig.layout.ternary.caxis.title.text == "d + e"


def test_simplex_figure_rejects_bad_input():
    probs = dirichlet(100, 3, 0)
    rel = cc.simplex_reliability(probs, np.arange(100) % 3)
    with pytest.raises(CIE, match="arrow_scale"):
        simplex_figure(rel, arrow_scale=0)
    with pytest.raises(CIE, match="class_names"):
        simplex_figure(rel, class_names=["a", "b"])
    with pytest.raises(CIE, match="SimplexReliability or a CellTable"):
        simplex_figure({"count": 1})
    with pytest.raises(CIE, match="3 coordinates"):
        simplex_figure(cc.canonical_ce_table(dirichlet(50, 4, 0), np.arange(50) % 4))
    with pytest.raises(CIE, match="count_scale"):
        simplex_figure(rel, count_scale="sqrt")
    with pytest.raises(CIE, match="max_points"):
        simplex_figure(rel, max_points=0)


# ----------------------------------------------------------------------------
# Vertex titles inside the figure (issue 23 item 8: "p_rep + strong_dem" was cut at the left edge)
# ----------------------------------------------------------------------------

#: Measured in Chromium: Plotly's 14 px axis-title font is 7.9 px per character of "p_rep + strong_dem"
#: (142 px), and the bottom titles are centred about 20 px outside their vertex (tick label + tick).
TITLE_PX_PER_CHAR, TITLE_SHIFT_PX = 8.0, 20.0
ANES = ["p_rep", "strong_dem", "ind", "weak_dem", "lean_rep"]


def title_half_width(text: str) -> float:
    return max(len(line) for line in text.split("<br>")) * TITLE_PX_PER_CHAR / 2


def title_words(text: str) -> str:
    return " ".join(text.replace("<br>", " ").split())


@pytest.mark.parametrize("partition", ["uniform", "data_dependent", "table"])
@pytest.mark.parametrize("groups", [[[0, 1], [2], [3, 4]], [[2], [0, 1], [3, 4]], [[2], [3, 4], [0, 1]],
                                    [[0], [1, 2, 3], [4]]])
def test_bottom_vertex_titles_fit_in_the_margins(partition, groups):
    """The bottom-left title reaches ``shift + half width`` left of its vertex, which is at least at the left
    margin; the bottom-right one as far right, where the colour bar (if any) starts after its padding."""
    probs = dirichlet(3000, 5, 3)
    labels = cc.sample_labels(probs, seed=1)[0]
    kwargs = {"partition": "data_dependent", "min_bin_size": 300} if partition == "data_dependent" else {"n_bins": 5}
    rel = cc.simplex_reliability(probs, labels, groups=groups, **kwargs)
    if partition == "table":  # a bare cell table knows no classes: the three vertex titles are given
        fig = simplex_figure(rel.table, class_names=[" + ".join(ANES[k] for k in group) for group in groups])
    else:
        fig = simplex_figure(rel, class_names=ANES)
    ternary, margin = fig.layout.ternary, fig.layout.margin
    # Every class name is still there, in order, whatever the line breaks.
    for axis, group in zip((ternary.aaxis, ternary.baxis, ternary.caxis), groups):
        assert title_words(axis.title.text) == " + ".join(ANES[k] for k in group)
    assert ternary.domain.x[0] >= 0 and ternary.domain.x[1] <= 1
    assert title_half_width(ternary.baxis.title.text) + TITLE_SHIFT_PX <= margin.l
    right = title_half_width(ternary.caxis.title.text) + TITLE_SHIFT_PX
    bars = [t for t in fig.data if t.name == "count"]
    if bars:
        colorbar = bars[0].marker.colorbar
        # The bar starts at the plot area's right end (where the triangle ends at the latest) plus its padding.
        assert colorbar.x == 1.0 and colorbar.xanchor == "left" and ternary.domain.x[1] == 1.0
        assert right <= colorbar.xpad
        assert colorbar.xpad + colorbar.thickness + 60 <= margin.r, "the bar and its tick labels fit too"
    else:
        assert right <= margin.r
    lines = max(axis.title.text.count("<br>") for axis in (ternary.baxis, ternary.caxis)) + 1
    assert margin.b >= 40 + 18 * lines, "the lines of a wrapped bottom title stay above the bottom edge"
