"""Partitions of the probability simplex: uniform grids, the recursive data-dependent split, and their cells.

A partition assigns each point of a simplex :math:`\\Delta^{m-1}` to a cell,
either uniformly (:func:`uniform_partition`: a per-coordinate grid, on the
2-simplex the ``n**2`` congruent triangles of ``n`` subdivisions per edge) or
data-dependently (:func:`data_dependent_partition`, appendix B of
Vaicenavicius et al. 2019). On the 2-simplex :func:`cell_polygons` gives the
region of each cell, as a two-dimensional reliability diagram draws it.
:mod:`calib_core.metrics.simplex` summarises the cells.

References
----------
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schon, T. B. "Evaluating model calibration in classification",
   AISTATS 2019. Section 4.1, eq. (6) (binned estimator), appendix B (binning
   schemes), appendix C.2 (two-dimensional reliability diagrams).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import bin_index
from calib_core.validation import CalibrationInputError, check_count, check_n_bins, check_probs, check_sample_weight

__all__ = [
    "PARTITIONS",
    "Partition",
    "SplitPartition",
    "SplitTree",
    "cell_polygons",
    "data_dependent_partition",
    "split_at_means",
    "triangle_keys",
    "triangle_vertices",
    "uniform_partition",
]

#: The partitions of :func:`calib_core.canonical_ce` and :func:`calib_core.simplex_reliability`.
PARTITIONS = ("uniform", "data_dependent")


@dataclass(frozen=True)
class SplitTree:
    """The recursive splits of a data-dependent partition, one entry per node (node 0: the whole simplex).

    Attributes
    ----------
    dim : int
        Coordinates of the partitioned points (m).
    coordinate : ndarray of shape (n_nodes,), intp
        The coordinate a node is split on; -1 for a leaf (a cell).
    threshold : ndarray of shape (n_nodes,)
        Where a node is split: its lower child holds the points with
        ``p[coordinate] <= threshold``, its upper child the others (NaN for a leaf).
    children : ndarray of shape (n_nodes, 2), intp
        The lower and upper child of a split node (-1 for a leaf).
    cell : ndarray of shape (n_nodes,), intp
        The cell (``Partition.cell_index`` value) of a leaf; -1 for a split node.
    """

    dim: int
    coordinate: NDArray[np.intp]
    threshold: NDArray[np.float64]
    children: NDArray[np.intp]
    cell: NDArray[np.intp]


@dataclass(frozen=True)
class Partition:
    """Assignment of points of a simplex to the cells of a partition.

    Attributes
    ----------
    kind : {"uniform", "data_dependent"}
    cell_index : ndarray of shape (N,), intp
        The cell of each point, in ``0..n_cells-1``; every cell holds at least
        one point.
    n_cells : int
        Number of non-empty cells.
    keys : ndarray of shape (n_cells, m), integer, or None
        For the uniform partition, the per-coordinate grid index of each cell
        (cell ``c`` is the set of points ``p`` with ``p_k`` in the uniform
        bin ``keys[c, k]`` of ``n_bins`` bins); ``None`` otherwise. intp up
        to 32 coordinates; above, the smallest unsigned type that holds
        ``n_bins - 1`` (uint8 up to 256 bins): at 50,000 x 1,000 nearly every
        row is its own cell, and intp keys took 400 MB and 0.1-0.7 s to write.
    n_bins : int or None
        Subdivisions per coordinate (uniform partition).
    min_bin_size : int or None
        Largest cell size that is not split further (data-dependent partition).
    """

    kind: str
    cell_index: NDArray[np.intp]
    n_cells: int
    keys: NDArray[np.intp] | None
    n_bins: int | None = None
    min_bin_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class SplitPartition(Partition):
    """A :class:`Partition` made by :func:`data_dependent_partition`, with the splits that made it.

    Attributes
    ----------
    tree : SplitTree
        The recursive splits (what :func:`cell_polygons` draws); the other
        attributes as :class:`Partition`.
    """

    tree: SplitTree


# ----------------------------------------------------------------------------
# Uniform and data-dependent partitions
# ----------------------------------------------------------------------------

def _grid_keys(points: NDArray[np.float64], n_bins: int) -> NDArray[np.intp]:
    """Per-coordinate uniform bin of every coordinate, moved onto a full-dimensional cell."""
    n_rows, dim = points.shape
    # Values below 1/n are in the first bin: only the others are binned (a few per row with many classes).
    # Small integers: the keys of 50,000 x 1,000 predictions take 50 MB, not 400.
    dtype = np.uint8 if n_bins <= 1 << 8 else np.uint16 if n_bins <= 1 << 16 else np.intp
    keys = np.zeros((n_rows, dim), dtype=dtype)
    rows, columns = np.nonzero(points >= (1.0 - 1e-9) / n_bins)
    keys[rows, columns] = bin_index(points[rows, columns], n_bins, "uniform")
    # A cube of the grid meets the simplex in a set of full dimension iff
    # n - dim < sum(keys) < n. The sum falls outside only for points whose
    # every coordinate is a positive multiple of 1/n (then sum = n - dim), or
    # by rounding in rows that sum to 1 only within tolerance. Such points lie
    # on the boundary of a full cell; moving the last coordinates' bins by the
    # missing amount puts them into one, so that the cells of the 2-simplex are
    # exactly the n**2 triangles and a binary prediction's cell is the bin of
    # its first coordinate.
    low, high = max(n_bins - dim + 1, 0), n_bins - 1
    total = keys.sum(axis=1, dtype=np.intp)
    bad = (total < low) | (total > high)
    if bad.any():
        rows = np.flatnonzero(bad)
        fix = keys[rows].astype(np.intp)
        need = np.where(total[rows] < low, low - total[rows], high - total[rows])
        for k in range(dim - 1, -1, -1):
            moved = np.clip(fix[:, k] + need, 0, n_bins - 1)
            need -= moved - fix[:, k]
            fix[:, k] = moved
        keys[rows] = fix
    return keys


def uniform_partition(points: ArrayLike, n_bins: int = 10) -> Partition:
    """Uniform partition of the simplex: a grid of ``n_bins`` bins per coordinate.

    Parameters
    ----------
    points : array_like of shape (N, m)
        Points of the simplex :math:`\\Delta^{m-1}` (rows sum to 1), m >= 2.
    n_bins : int, default 10
        Subdivisions of [0, 1] per coordinate (of each edge of the simplex).

    Returns
    -------
    Partition
        ``keys[c]`` holds the uniform bin of each coordinate for cell ``c``.

    Notes
    -----
    Each coordinate is binned by the uniform convention of
    :func:`calib_core.bin_index`, right-closed ``(lo, hi]`` bins with 0 in the
    first, and a cell is a tuple of bins, as ``UniformBinning`` of
    CalibrationErrors.jl (the estimator behind Vaicenavicius et al. 2019)
    does. The cubes that meet the simplex in a set of full dimension are
    those whose keys sum to between ``n - m + 1`` and ``n - 1``. On the
    2-simplex they are the ``n**2`` congruent triangles of ``n``
    subdivisions per edge: keys summing to ``n - 1`` are the upward
    triangles, keys summing to ``n - 2`` the downward ones
    (:func:`triangle_vertices`). For two coordinates a cell is the uniform
    bin of the first coordinate. The few points on the boundary of several
    cells whose keys do not name a full cell (every coordinate a positive
    multiple of ``1/n``) are moved into a neighbouring full cell by raising
    the bin of the last coordinate, so that every point is in exactly one
    full cell. Only non-empty cells are numbered.

    Examples
    --------
    >>> part = uniform_partition([[0.9, 0.05, 0.05], [0.1, 0.1, 0.8], [0.85, 0.1, 0.05]], 2)
    >>> part.n_cells, part.cell_index.tolist(), part.keys.tolist()
    (2, [1, 0, 1], [[0, 0, 1], [1, 0, 0]])
    """
    points = check_probs(points, name="points")
    n_bins = check_n_bins(n_bins)
    keys = _grid_keys(points, n_bins)
    dim = points.shape[1]
    if dim * np.log2(max(n_bins, 2)) < 62:
        radix = n_bins ** np.arange(dim - 1, -1, -1, dtype=np.int64)
        codes = keys.astype(np.int64) @ radix
        unique_codes, first, cell_index = np.unique(codes, return_index=True, return_inverse=True)
        cell_keys = keys[first]
    elif n_bins <= 1 << 16:
        # Too many coordinates for one int64 code: each row's bins as one byte string (one byte per bin, or
        # two big-endian ones), whose byte order is the keys' lexicographic order: np.unique(keys, axis=0),
        # 100x faster (8.4 s -> 0.09 s at 50,000 x 1,000).
        small = np.ascontiguousarray(keys.astype(np.uint8 if n_bins <= 256 else ">u2"))
        rows = small.view(np.dtype((np.void, small.itemsize * dim))).ravel()
        _, first, cell_index = np.unique(rows, return_index=True, return_inverse=True)
        cell_keys = keys[first]
    else:
        cell_keys, cell_index = np.unique(keys, axis=0, return_inverse=True)
    return Partition("uniform", cell_index.astype(np.intp).ravel(), int(cell_keys.shape[0]),
                     cell_keys.astype(np.intp) if dim <= _INTP_KEYS_MAX_DIM else cell_keys, n_bins=n_bins)


#: Most coordinates whose uniform-partition keys are intp (above, they keep the grid's small unsigned type).
_INTP_KEYS_MAX_DIM = 32


def data_dependent_partition(points: ArrayLike, min_bin_size: int = 1000, *,
                             sample_weight: ArrayLike | None = None) -> SplitPartition:
    """Recursive partition at the mean of the highest-variance coordinate (appendix B).

    Parameters
    ----------
    points : array_like of shape (N, m)
        Points of the simplex (rows sum to 1).
    min_bin_size : int, default 1000
        A cell holding more than ``min_bin_size`` points is split.
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies): a cell's size is its summed weight, its mean
        and variance are weighted, so whole-number weights give the partition
        of the repeated points (``docs/weights.md``).

    Returns
    -------
    SplitPartition
        Cells numbered in depth-first order, lower half first; ``tree`` holds
        the splits (:func:`cell_polygons` reads them).

    Notes
    -----
    Starting from the whole simplex, a cell holding more than
    ``min_bin_size`` points is split into the points whose coordinate
    :math:`d = \\arg\\max_k \\operatorname{Var}(p_k)` is ``<=`` the cell's mean
    of that coordinate and the rest; ties between coordinates go to the lowest
    index. A cell whose points are all equal (variance 0) or whose split would
    leave one side empty stays whole. This is the "simple recursive
    partitioning scheme" of Vaicenavicius et al. (2019), appendix B: "split
    predictions along the mean of the dimension with highest variance as long
    as the number of predictions per bin was above a given threshold value,
    which was typically set to 1000". The result does not depend on the
    order of the rows. The loop runs over cells, each split is vectorised.

    Examples
    --------
    >>> part = data_dependent_partition([[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9]], 2)
    >>> part.n_cells, part.cell_index.tolist()
    (2, [1, 1, 0, 0])
    """
    points = check_probs(points, name="points")
    min_bin_size = check_count(min_bin_size, "min_bin_size")
    return split_at_means(points, min_bin_size, check_sample_weight(sample_weight, points.shape[0]))


def split_at_means(points: NDArray[np.float64], min_bin_size: int,
                   weights: NDArray[np.float64] | None = None) -> SplitPartition:
    """:func:`data_dependent_partition` of checked ``points`` and ``min_bin_size``, all cells of a depth at once.

    Each round splits every cell that is still larger than ``min_bin_size``;
    per-cell means and variances come from :func:`numpy.bincount` over the
    rows still in play, so the loop runs over depths, not over cells or rows.
    Cells are renumbered after each round so that the two halves of a split
    cell take consecutive numbers (lower half first): the final numbering is
    the depth-first order of the split tree. Each split is recorded in the
    partition's :class:`SplitTree` (O(number of cells)). ``weights`` (checked,
    or None) make every count, mean and variance a weighted one.
    """
    n_rows, dim = points.shape
    cell = np.zeros(n_rows, dtype=np.intp)
    n_cells = 1
    node_of = np.zeros(1, dtype=np.intp)  # the tree node of each current cell (node 0: the whole simplex)
    rounds = []  # per round: the split nodes, their coordinates and thresholds
    n_nodes = 1
    active = np.arange(n_rows)
    while active.size:
        c = cell[active]
        w = None if weights is None else weights[active]
        count = np.bincount(c, weights=w, minlength=n_cells).astype(np.float64)
        candidate = count > min_bin_size
        in_play = candidate[c]
        if not in_play.any():
            break
        active, c = active[in_play], c[in_play]
        x = points[active]
        w = None if weights is None else weights[active][:, None]
        safe = np.maximum(count, 1.0)[:, None] if weights is None else np.where(count > 0, count, 1.0)[:, None]
        slot = (c[:, None] * dim + np.arange(dim)).ravel()  # (cell, coordinate) of each entry
        mean = np.bincount(slot, weights=(x if w is None else w * x).ravel(),
                           minlength=n_cells * dim).reshape(n_cells, dim) / safe
        centred = x - mean[c]
        squares = centred * centred
        variance = np.bincount(slot, weights=(squares if w is None else w * squares).ravel(),
                               minlength=n_cells * dim).reshape(n_cells, dim) / safe
        widest = variance.argmax(axis=1)  # ties: lowest coordinate
        rows = np.arange(active.size)
        lower = centred[rows, widest[c]] <= 0.0  # x_d <= mean_d of the cell
        n_lower = np.bincount(c, weights=lower if w is None else lower * w[:, 0], minlength=n_cells)
        split = (candidate & (variance[np.arange(n_cells), widest] > 0.0)
                 & (n_lower > 0) & (n_lower < count))
        if not split.any():
            break
        upper_half = np.zeros(n_rows, dtype=np.intp)
        upper_half[active] = ~lower
        width = 1 + split.astype(np.intp)
        first = np.cumsum(width) - width
        # x_d - mean_d <= 0 exactly when x_d <= mean_d: the threshold is the mean itself.
        split_cells = np.flatnonzero(split)
        children = n_nodes + 2 * np.arange(split_cells.size)
        rounds.append((node_of[split_cells], widest[split_cells], mean[split_cells, widest[split_cells]]))
        n_nodes += 2 * split_cells.size
        new_node_of = np.empty(int(width.sum()), dtype=np.intp)
        new_node_of[first] = node_of
        new_node_of[first[split_cells]] = children
        new_node_of[first[split_cells] + 1] = children + 1
        node_of = new_node_of
        cell = first[cell] + split[cell] * upper_half
        n_cells = int(width.sum())
        active = active[split[c]]
    coordinate = np.full(n_nodes, -1, dtype=np.intp)
    threshold = np.full(n_nodes, np.nan)
    child = np.full((n_nodes, 2), -1, dtype=np.intp)
    base = 1
    for parents, coordinates, thresholds in rounds:
        coordinate[parents], threshold[parents] = coordinates, thresholds
        child[parents] = base + 2 * np.arange(parents.size)[:, None] + np.arange(2)
        base += 2 * parents.size
    leaf_cell = np.full(n_nodes, -1, dtype=np.intp)
    leaf_cell[node_of] = np.arange(n_cells)
    return SplitPartition("data_dependent", cell, n_cells, None, min_bin_size=min_bin_size,
                          tree=SplitTree(dim, coordinate, threshold, child, leaf_cell))


def triangle_keys(n_bins: int) -> NDArray[np.intp]:
    """Keys of all ``n_bins**2`` cells of the uniform partition of the 2-simplex.

    Returns
    -------
    ndarray of shape (n_bins**2, 3)
        The ``n(n+1)/2`` upward triangles (keys summing to ``n - 1``) first,
        then the ``n(n-1)/2`` downward ones (summing to ``n - 2``).
    """
    n = check_n_bins(n_bins)
    rows = []
    for total in (n - 1, n - 2):
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        keep = (i + j <= total)
        rows.append(np.column_stack([i[keep], j[keep], total - i[keep] - j[keep]]))
    return np.concatenate(rows).astype(np.intp)


def triangle_vertices(keys: ArrayLike, n_bins: int) -> NDArray[np.float64]:
    """Corners of uniform cells of the 2-simplex from their keys.

    Parameters
    ----------
    keys : array_like of shape (M, 3)
        Per-coordinate bins of cells, as in ``Partition.keys``.
    n_bins : int

    Returns
    -------
    ndarray of shape (M, 3, 3)
        ``out[c, v]`` is the barycentric position of corner ``v`` of cell ``c``.
        An upward cell ``(i, j, k)`` (``i + j + k = n - 1``) has corners
        ``(i+1, j, k)/n, (i, j+1, k)/n, (i, j, k+1)/n``; a downward cell
        (``i + j + k = n - 2``) has ``(i, j+1, k+1)/n, (i+1, j, k+1)/n,
        (i+1, j+1, k)/n``.
    """
    n = check_n_bins(n_bins)
    keys = np.asarray(keys, dtype=np.intp)
    if keys.ndim != 2 or keys.shape[1] != 3:
        raise CalibrationInputError(f"`keys` must have shape (M, 3), got {keys.shape}.")
    total = keys.sum(axis=1)
    if not np.isin(total, (n - 1, n - 2)).all():
        row = int(np.flatnonzero(~np.isin(total, (n - 1, n - 2)))[0])
        raise CalibrationInputError(
            f"`keys` row {row} ({keys[row].tolist()}) is not a cell of the {n}-subdivided 2-simplex."
        )
    eye = np.eye(3, dtype=np.intp)
    up = (total == n - 1)[:, None, None]
    corners = np.where(up, keys[:, None, :] + eye[None], keys[:, None, :] + 1 - eye[None])
    return corners / n


# ----------------------------------------------------------------------------
# Cells of the 2-simplex
# ----------------------------------------------------------------------------

_TRIANGLE = np.eye(3)


def _clip(polygon: NDArray[np.float64], coordinate: int, threshold: float, keep_lower: bool) -> NDArray[np.float64]:
    """The part of a convex polygon (barycentric corners) with ``p[coordinate] <= threshold`` (or ``>``)."""
    sign = 1.0 if keep_lower else -1.0
    value = sign * (polygon[:, coordinate] - threshold)
    out = []
    for i in range(len(polygon)):
        j = (i + 1) % len(polygon)
        if value[i] <= 0:
            out.append(polygon[i])
        if (value[i] <= 0) != (value[j] <= 0):
            t = value[i] / (value[i] - value[j])
            out.append(polygon[i] + t * (polygon[j] - polygon[i]))
    return np.array(out) if out else np.empty((0, 3))


def cell_polygons(partition: Partition) -> list[NDArray[np.float64]]:
    """The region of the 2-simplex each cell of a partition covers, in cell order.

    Parameters
    ----------
    partition : Partition
        A partition of points of the 2-simplex (three coordinates), from
        :func:`uniform_partition` or :func:`data_dependent_partition`.

    Returns
    -------
    list of ndarray of shape (M_c, 3)
        For cell ``c``, the barycentric corners of its convex region in order
        around it: the triangle of :func:`triangle_vertices` for a uniform
        cell; for a data-dependent cell, the triangle cut by the half-planes
        of the splits on its path (``p_d <= t`` or ``p_d > t``), read from
        the tree of a :class:`SplitPartition`, so every point of the cell lies in its region.

    Raises
    ------
    CalibrationInputError
        Not a partition of the 2-simplex, or a partition without the keys or
        the split tree its cells are read from.

    Examples
    --------
    >>> part = data_dependent_partition([[0.9, 0.1, 0.0], [0.1, 0.9, 0.0]], 1)
    >>> cells = cell_polygons(part)  # one split at p_0 = 0.5: cell 0 has p_0 <= 0.5, cell 1 the rest
    >>> cells[1].round(2).tolist()
    [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5]]
    """
    if not isinstance(partition, Partition):
        raise CalibrationInputError(f"`partition` must be a Partition, got {type(partition).__name__}.")
    if partition.kind == "uniform":
        if partition.keys is None or partition.n_bins is None or partition.keys.shape[1] != 3:
            raise CalibrationInputError("`partition` must be a uniform partition of the 2-simplex (keys of 3 "
                                        "coordinates and its n_bins).")
        return list(triangle_vertices(partition.keys, partition.n_bins))
    tree = partition.tree if isinstance(partition, SplitPartition) else None
    if tree is None or tree.dim != 3:
        raise CalibrationInputError("`partition` must be a data-dependent partition of the 2-simplex made by "
                                    "data_dependent_partition (its split tree, 3 coordinates).")
    regions: list[NDArray[np.float64] | None] = [None] * partition.n_cells
    stack = [(0, _TRIANGLE)]
    while stack:
        node, polygon = stack.pop()
        d = int(tree.coordinate[node])
        if d < 0:
            regions[int(tree.cell[node])] = polygon
            continue
        t = float(tree.threshold[node])
        lower, upper = tree.children[node]
        stack.append((int(upper), _clip(polygon, d, t, keep_lower=False)))
        stack.append((int(lower), _clip(polygon, d, t, keep_lower=True)))
    return regions  # type: ignore[return-value]
