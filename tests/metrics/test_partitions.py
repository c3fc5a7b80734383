"""Tests of calib_core.metrics.partitions: the split tree of the data-dependent partition and the cells' regions."""
import numpy as np
import pytest

from calib_core import CalibrationInputError
from calib_core.metrics.partitions import (Partition, cell_polygons, data_dependent_partition, triangle_vertices,
                                           uniform_partition)


def _inside(point, polygon, tol=1e-12):
    """Whether a barycentric point lies in a convex polygon of the 2-simplex (corners in order)."""
    xy = lambda p: np.array([p[..., 1] + 0.5 * p[..., 2], p[..., 2] * np.sqrt(3) / 2]).T  # noqa: E731
    q, corners = xy(point), xy(polygon)
    edges = np.roll(corners, -1, axis=0) - corners
    cross = edges[:, 0] * (q[1] - corners[:, 1]) - edges[:, 1] * (q[0] - corners[:, 0])
    return bool((cross >= -tol).all() or (cross <= tol).all())


@pytest.mark.parametrize("min_bin_size", [1, 7, 40, 1000])
def test_each_data_dependent_cell_region_holds_exactly_its_points(min_bin_size):
    """Issue 24: the regions come from the recorded splits (the figure replayed them and gave up on a mismatch)."""
    rng = np.random.default_rng(min_bin_size)
    points = np.vstack([rng.dirichlet([0.4, 0.7, 1.5], size=300), np.full((20, 3), 1.0 / 3.0),
                        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]])
    part = data_dependent_partition(points, min_bin_size)
    regions = cell_polygons(part)
    assert len(regions) == part.n_cells and all(len(r) >= 3 for r in regions)
    tree = part.tree
    for row, cell in enumerate(part.cell_index):
        # The split tree sends every point to its cell ...
        node = 0
        while tree.coordinate[node] >= 0:
            node = tree.children[node, int(points[row, tree.coordinate[node]] > tree.threshold[node])]
        assert tree.cell[node] == cell
        # ... and the point lies in its cell's region.
        assert _inside(points[row], regions[cell])
    def area_of(r):  # shoelace formula in the (p_0, p_1) plane
        x, y = r[:, 0], r[:, 1]
        return 0.5 * abs(float(x @ np.roll(y, -1) - y @ np.roll(x, -1)))

    area = sum(area_of(r) for r in regions)
    assert area == pytest.approx(0.5)  # the regions tile the triangle (area in the (p_0, p_1) plane)


def test_uniform_cells_are_the_triangles_of_their_keys():
    rng = np.random.default_rng(0)
    part = uniform_partition(rng.dirichlet(np.ones(3), size=200), 4)
    np.testing.assert_array_equal(np.array(cell_polygons(part)), triangle_vertices(part.keys, 4))
    assert not hasattr(part, "tree")


def test_cells_need_a_partition_of_the_2_simplex_with_its_splits():
    with pytest.raises(CalibrationInputError, match="2-simplex"):
        cell_polygons(data_dependent_partition(np.random.default_rng(0).dirichlet(np.ones(4), size=50), 5))
    with pytest.raises(CalibrationInputError, match="split tree"):
        cell_polygons(Partition("data_dependent", np.zeros(3, dtype=np.intp), 1, None, min_bin_size=5))
    with pytest.raises(CalibrationInputError, match="Partition"):
        cell_polygons("uniform")
