"""Tests of calib_core.metrics.simplex (projection, partitions, cell tables)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core.metrics.simplex import (
    simplex_distance,
    triangle_keys,
    triangle_vertices,
)

CIE = cc.CalibrationInputError


def dirichlet(n, k, seed, alpha=1.0):
    return np.random.default_rng(seed).dirichlet(np.full(k, alpha), size=n)


# ----------------------------------------------------------------------------
# default_groups / simplex_projection
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("n_classes, expected", [
    (10, ((0, 1, 2), (3, 4, 5), (6, 7, 8, 9))),
    (3, ((0,), (1,), (2,))),
    (4, ((0,), (1,), (2, 3))),
    (5, ((0,), (1, 2), (3, 4))),
    (6, ((0, 1), (2, 3), (4, 5))),
    (2, ((0,), (1,), ())),
])
def test_default_groups(n_classes, expected):
    assert cc.default_groups(n_classes) == expected


@pytest.mark.parametrize("bad", [1, 0, -3, 2.5, True, "10"])
def test_default_groups_rejects(bad):
    with pytest.raises(CIE, match="n_classes"):
        cc.default_groups(bad)


def test_projection_sums_groups_and_maps_labels():
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])
    view = cc.simplex_projection(probs, [3, 1], groups=[[0], [1, 2], [3]])
    np.testing.assert_allclose(view.points, [[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    assert view.labels.tolist() == [2, 1]
    assert view.mode == "groups" and view.n_excluded == 0
    assert view.vertex_names() == ("0", "{1, 2}", "3")
    assert view.vertex_names(["a", "b", "c", "d"]) == ("a", "b + c", "d")


def test_projection_default_groups_ten_classes():
    probs = dirichlet(50, 10, 0)
    labels = np.arange(50) % 10
    view = cc.simplex_projection(probs, labels)
    np.testing.assert_allclose(view.points[:, 0], probs[:, :3].sum(1))
    np.testing.assert_allclose(view.points[:, 2], probs[:, 6:].sum(1))
    assert view.labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2] * 5
    np.testing.assert_allclose(view.points.sum(1), 1.0)


def test_projection_three_and_two_classes_map_directly():
    probs = dirichlet(20, 3, 1)
    labels = np.arange(20) % 3
    view = cc.simplex_projection(probs, labels)
    np.testing.assert_array_equal(view.points, probs)
    np.testing.assert_array_equal(view.labels, labels)
    binary = cc.as_probs(np.linspace(0, 1, 11))
    edge = cc.simplex_projection(binary, np.arange(11) % 2)
    np.testing.assert_array_equal(edge.points[:, :2], binary)
    assert (edge.points[:, 2] == 0).all()
    assert edge.vertex_names()[2] == "(none)"


def test_projection_three_classes_renormalises_and_reports_dropped_rows():
    probs = np.array([[0.1, 0.2, 0.3, 0.4],
                      [0.5, 0.0, 0.0, 0.5],
                      [0.0, 0.0, 0.0, 1.0],
                      [0.2, 0.2, 0.2, 0.4]])
    labels = [1, 0, 2, 3]  # row 2 gives the classes mass 0, row 3's label is not chosen
    view = cc.simplex_projection(probs, labels, classes=(2, 0, 1))
    np.testing.assert_allclose(view.points, [[0.5, 1 / 6, 1 / 3], [0.0, 1.0, 0.0]])
    assert view.labels.tolist() == [2, 1]
    assert view.kept.tolist() == [True, True, False, False]
    assert view.n_excluded == 2 and view.mode == "classes"
    assert view.groups == ((2,), (0,), (1,))


def test_projection_of_calibrated_model_is_calibrated():
    # Grouping keeps calibration: labels drawn from the predictions give a
    # small three-vertex estimate, of the size of its resampling noise.
    probs = dirichlet(60_000, 7, 2, alpha=0.5)
    labels = cc.sample_labels(probs, seed=3)[0]
    for kwargs in ({}, {"classes": (0, 3, 5)}):
        rel = cc.simplex_reliability(probs, labels, n_bins=4, **kwargs)
        assert rel.estimate < 0.02


@pytest.mark.parametrize("kwargs, match", [
    ({"classes": (0, 1, 2), "groups": [[0], [1], [2, 3]]}, "not both"),
    ({"classes": (0, 1)}, "three distinct"),
    ({"classes": (0, 1, 1)}, "three distinct"),
    ({"classes": (0, 1, 7)}, "outside 0..3"),
    ({"classes": (0, 1, 2.0)}, "integer class"),
    ({"classes": 3}, "list of class indices"),
    ({"groups": [[0], [1, 2]]}, "exactly three"),
    ({"groups": [[0], [1], [2]]}, r"class\(es\) \[3\] are in no group"),
    ({"groups": [[0, 1], [1], [2, 3]]}, "appear twice"),
    ({"groups": 5}, "three lists"),
])
def test_projection_rejects_bad_options(kwargs, match):
    probs = dirichlet(5, 4, 0)
    with pytest.raises(CIE, match=match):
        cc.simplex_projection(probs, [0, 1, 2, 3, 0], **kwargs)


def test_projection_rejects_when_no_row_left():
    with pytest.raises(CIE, match="no row"):
        cc.simplex_projection(dirichlet(3, 4, 0), [3, 3, 3], classes=(0, 1, 2))


def test_projection_validates_inputs():
    with pytest.raises(CIE, match="sum to 1"):
        cc.simplex_projection([[0.5, 0.6, 0.1]], [0])
    with pytest.raises(CIE, match="labels"):
        cc.simplex_projection([[0.5, 0.4, 0.1]], [3])


# ----------------------------------------------------------------------------
# Uniform partition
# ----------------------------------------------------------------------------

def test_triangle_keys_are_the_n_squared_cells():
    for n in (1, 2, 3, 10):
        keys = triangle_keys(n)
        assert keys.shape == (n * n, 3)
        assert len({tuple(k) for k in keys.tolist()}) == n * n
        assert set(keys.sum(1).tolist()) <= {n - 1, n - 2}


def test_triangles_are_congruent_and_tile_the_simplex():
    n = 6
    corners = triangle_vertices(triangle_keys(n), n)
    np.testing.assert_allclose(corners.sum(axis=2), 1.0)
    # Every edge has barycentric length sqrt(2)/n, as the big triangle's edges have sqrt(2).
    for u, v in ((0, 1), (1, 2), (0, 2)):
        np.testing.assert_allclose(np.linalg.norm(corners[:, u] - corners[:, v], axis=1), np.sqrt(2) / n)
    # The centroid of each triangle is assigned to that very triangle.
    part = cc.uniform_partition(corners.mean(axis=1), n)
    assert part.n_cells == n * n
    np.testing.assert_array_equal(part.keys[part.cell_index], triangle_keys(n))


def test_uniform_partition_hand_case():
    points = [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.2, 0.3, 0.5]]
    part = cc.uniform_partition(points, 2)
    keys = part.keys[part.cell_index].tolist()
    # Vertices fall in the corner triangles; (0.5, 0.5, 0) in the middle
    # (downward) triangle; the centre-ish points with c = 0.5 in bin 0 of c.
    assert keys[0] == [1, 0, 0]
    assert keys[1] == [0, 0, 1]
    assert keys[2] == [0, 0, 0]
    assert keys[3] == [0, 0, 0]
    assert keys[4] == [0, 0, 0]
    # A grid vertex inside the simplex is moved into a full cell (raising the last coordinate).
    vertex = cc.uniform_partition([[0.25, 0.25, 0.5]], 4)
    assert vertex.keys.tolist() == [[0, 0, 2]]


def test_uniform_partition_binary_is_binning_of_first_coordinate():
    values = np.concatenate([np.linspace(0, 1, 21), np.random.default_rng(0).random(200)])
    probs = np.column_stack([values, 1 - values])
    for n in (1, 3, 10):
        part = cc.uniform_partition(probs, n)
        np.testing.assert_array_equal(part.keys[part.cell_index][:, 0], cc.bin_index(values, n, "uniform"))
        np.testing.assert_array_equal(part.keys.sum(1), n - 1)


@st.composite
def simplex_points(draw):
    """Points on a simplex, half of them on grid lines or grid vertices."""
    dim = draw(st.integers(2, 6))
    n_bins = draw(st.integers(1, 12))
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    points = rng.dirichlet(np.full(dim, 0.7), size=n)
    grid = rng.multinomial(n_bins, np.full(dim, 1.0 / dim), size=n) / n_bins
    on_grid = rng.random(n) < 0.5
    points[on_grid] = grid[on_grid]
    return points, n_bins


@settings(max_examples=80, deadline=None)
@given(simplex_points())
def test_uniform_partition_covers_every_point_once(case):
    points, n_bins = case
    part = cc.uniform_partition(points, n_bins)
    dim = points.shape[1]
    assert part.cell_index.shape == (points.shape[0],)
    assert part.cell_index.min() >= 0 and part.cell_index.max() < part.n_cells
    counts = np.bincount(part.cell_index, minlength=part.n_cells)
    assert (counts > 0).all() and counts.sum() == points.shape[0]
    assert len({tuple(k) for k in part.keys.tolist()}) == part.n_cells
    keys = part.keys[part.cell_index]
    total = keys.sum(1)
    # A full-dimensional cell of the grid, and the point lies in its closure.
    assert (total >= max(n_bins - dim + 1, 0)).all() and (total <= n_bins - 1).all()
    assert (keys / n_bins <= points + 1e-12).all()
    assert (points <= (keys + 1) / n_bins + 1e-12).all()
    if dim == 3:
        corners = triangle_vertices(part.keys, n_bins)
        assert corners.shape == (part.n_cells, 3, 3)


# ----------------------------------------------------------------------------
# Data-dependent partition
# ----------------------------------------------------------------------------

def reference_split(points, min_bin_size):
    """Plain recursive version of appendix B, for comparison (sets of row indices)."""
    cells = []

    def visit(rows):
        if rows.size > min_bin_size:
            x = points[rows]
            var = x.var(axis=0)
            d = int(np.argmax(var))
            if var[d] > 0:
                lower = x[:, d] <= x[:, d].mean()
                if 0 < lower.sum() < rows.size:
                    visit(rows[lower])
                    visit(rows[~lower])
                    return
        cells.append(frozenset(rows.tolist()))

    visit(np.arange(points.shape[0]))
    return cells


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(1, 400), st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_data_dependent_partition_matches_reference(dim, n, min_bin_size, seed):
    points = np.random.default_rng(seed).dirichlet(np.full(dim, 0.5), size=n)
    part = cc.data_dependent_partition(points, min_bin_size)
    mine = [frozenset(np.flatnonzero(part.cell_index == c).tolist()) for c in range(part.n_cells)]
    assert mine == reference_split(points, min_bin_size)  # same cells, same depth-first order
    sizes = np.bincount(part.cell_index)
    assert sizes.sum() == n and (sizes > 0).all()
    assert (sizes <= min_bin_size).all()  # continuous data: every big cell can be split


def test_data_dependent_partition_hand_case_and_ties():
    points = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9]]
    part = cc.data_dependent_partition(points, 2)
    assert part.n_cells == 2 and part.cell_index.tolist() == [1, 1, 0, 0]
    assert part.kind == "data_dependent" and part.keys is None and part.min_bin_size == 2
    # Identical predictions cannot be split, whatever their number.
    same = cc.data_dependent_partition(np.tile([0.3, 0.7], (50, 1)), 5)
    assert same.n_cells == 1
    # N <= min_bin_size: one cell.
    assert cc.data_dependent_partition(dirichlet(100, 3, 0), 1000).n_cells == 1


def test_data_dependent_partition_row_order_free():
    points = dirichlet(3000, 4, 5, alpha=0.3)
    perm = np.random.default_rng(1).permutation(3000)
    a = cc.data_dependent_partition(points, 100)
    b = cc.data_dependent_partition(points[perm], 100)
    np.testing.assert_array_equal(a.cell_index[perm], b.cell_index)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_data_dependent_partition_rejects_min_bin_size(bad):
    with pytest.raises(CIE, match="min_bin_size"):
        cc.data_dependent_partition(dirichlet(10, 3, 0), bad)


@pytest.mark.parametrize("bad", [0, 1.5, False])
def test_uniform_partition_rejects_n_bins(bad):
    with pytest.raises(CIE, match="n_bins"):
        cc.uniform_partition(dirichlet(10, 3, 0), bad)


def test_partitions_validate_points():
    with pytest.raises(CIE, match="points"):
        cc.uniform_partition([[0.5, 0.7]], 3)
    with pytest.raises(CIE, match="points"):
        cc.data_dependent_partition([[np.nan, 1.0]], 3)


# ----------------------------------------------------------------------------
# Cell tables and distances
# ----------------------------------------------------------------------------

def test_simplex_distance_values():
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    assert simplex_distance(p, q, "tv") == pytest.approx(0.3)
    assert simplex_distance(p, q, "sq_euclidean") == pytest.approx(0.18)
    assert simplex_distance(p, q, "euclidean") == pytest.approx(np.sqrt(0.18))
    with pytest.raises(CIE, match="distance"):
        simplex_distance(p, q, "l1")


def test_cell_table_hand_case():
    points = np.array([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.2, 0.1, 0.7]])
    labels = [0, 1, 2, 0]
    part = cc.uniform_partition(points, 2)
    table = cc.cell_table(points, labels, part, "tv")
    order = np.argsort(table.count)
    np.testing.assert_array_equal(table.count[order], [2, 2])
    first = part.cell_index[0]
    np.testing.assert_allclose(table.mean_prediction[first], [0.6, 0.3, 0.1])
    np.testing.assert_allclose(table.observed_frequency[first], [0.5, 0.5, 0.0])
    assert table.deviation[first] == pytest.approx(0.5 * (0.1 + 0.2 + 0.1))
    second = part.cell_index[2]
    np.testing.assert_allclose(table.mean_prediction[second], [0.15, 0.1, 0.75])
    np.testing.assert_allclose(table.observed_frequency[second], [0.5, 0.0, 0.5])
    assert table.deviation[second] == pytest.approx(0.5 * (0.35 + 0.1 + 0.25))
    assert table.estimate == pytest.approx(0.5 * 0.2 + 0.5 * 0.35)
    assert table.n_total == 4 and table.n_cells == 2
    np.testing.assert_allclose(table.weight, [0.5, 0.5])
    frame = table.to_frame()
    assert {"count", "deviation", "mean_prediction_2", "observed_frequency_0", "key_1"} <= set(frame.columns)
    sq = cc.cell_table(points, labels, part, "sq_euclidean")
    assert sq.estimate == pytest.approx(0.5 * (0.01 + 0.04 + 0.01) + 0.5 * (0.35**2 + 0.01 + 0.25**2))


def test_cell_table_rejects_mismatch():
    points = dirichlet(10, 3, 0)
    part = cc.uniform_partition(points, 3)
    with pytest.raises(CIE, match="covers 10 points"):
        cc.cell_table(points[:5], np.zeros(5, dtype=int), part)
    with pytest.raises(CIE, match="Partition"):
        cc.cell_table(points, np.zeros(10, dtype=int), "uniform")
    with pytest.raises(CIE, match="distance"):
        cc.cell_table(points, np.zeros(10, dtype=int), part, "kl")


def test_simplex_reliability_matches_canonical_ce_of_the_view():
    probs = dirichlet(3000, 10, 4, alpha=0.3)
    labels = np.random.default_rng(5).integers(0, 10, 3000)
    for partition in ("uniform", "data_dependent"):
        rel = cc.simplex_reliability(probs, labels, partition=partition, n_bins=5, min_bin_size=200,
                                     distance="sq_euclidean")
        view = cc.simplex_projection(probs, labels)
        expected = cc.canonical_ce(view.points, view.labels, "sq_euclidean", partition, 5, 200)
        assert rel.estimate == pytest.approx(expected)
        assert rel.partition.kind == partition
        assert rel.table.count.sum() == 3000


def test_simplex_reliability_rejects_options():
    probs = dirichlet(10, 3, 0)
    with pytest.raises(CIE, match="partition"):
        cc.simplex_reliability(probs, np.zeros(10, dtype=int), partition="kmeans")
    with pytest.raises(CIE, match="distance"):
        cc.simplex_reliability(probs, np.zeros(10, dtype=int), distance="tvd")
    with pytest.raises(CIE, match="min_bin_size"):
        cc.simplex_reliability(probs, np.zeros(10, dtype=int), min_bin_size=0)


def mean_arrow_length(n, seed):
    probs = dirichlet(n, 10, seed, alpha=0.4)
    labels = cc.sample_labels(probs, seed=seed + 1)[0]
    return cc.simplex_reliability(probs, labels, n_bins=5, distance="euclidean").estimate


def test_arrows_shrink_as_n_grows_under_calibration():
    small = np.mean([mean_arrow_length(1_000, s) for s in range(3)])
    large = np.mean([mean_arrow_length(100_000, s) for s in range(3)])
    # Noise-only arrows scale like 1/sqrt(n per cell): 100x the data, ~1/10 the length.
    assert large < small / 5
    assert large < 0.01


def test_arrows_do_not_shrink_when_miscalibrated():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(100_000, 10)) * 2
    probs = cc.softmax(logits)
    labels = cc.sample_labels(cc.softmax(logits / 2.0), seed=1)[0]  # model twice too confident
    assert cc.simplex_reliability(probs, labels, n_bins=5, distance="euclidean").estimate > 0.05


@pytest.mark.parametrize("dim, n_bins", [(3, 10), (3, 1), (12, 7), (60, 10), (40, 300)])
def test_grid_keys_bin_only_the_values_outside_the_first_bin(dim, n_bins):
    """Issue 15: with many classes most values are below 1/n; only the others are binned, into small integers
    (50 MB of keys at 50,000 x 1,000, not 400). The keys are those of binning every value."""
    from calib_core.binning import bin_index
    from calib_core.metrics.partitions import _grid_keys
    rng = np.random.default_rng(dim)
    points = rng.dirichlet(np.full(dim, 0.3), size=500)
    grid = np.linspace(0, 1, n_bins + 1)
    points[:20] = 0.0
    points[:20, 0] = 1.0
    if dim == 3:  # points on the grid: every coordinate a multiple of 1/n, moved onto a full cell
        points[20:40] = rng.multinomial(n_bins, np.ones(3) / 3, size=20) / n_bins
        points[40:60, :2] = grid[rng.integers(0, n_bins + 1, size=(20, 2))] / 2
        points[40:60, 2] = 1.0 - points[40:60, :2].sum(axis=1)
    keys = _grid_keys(points, n_bins)
    dense = bin_index(points.ravel(), n_bins, "uniform").reshape(points.shape)
    low, high = max(n_bins - dim + 1, 0), n_bins - 1
    fine = (dense.sum(axis=1) >= low) & (dense.sum(axis=1) <= high)
    np.testing.assert_array_equal(keys[fine], dense[fine])  # the rows the fix-up leaves alone
    total = keys.astype(np.intp).sum(axis=1)
    assert ((total >= low) & (total <= high)).all()  # every point in a full cell
    assert keys.dtype == (np.uint8 if n_bins <= 256 else np.uint16)
