"""Simplex geometry: 2-simplex views of K-class predictions and partitions of the simplex.

A prediction of a K-class model is a point of the probability simplex
:math:`\\Delta^{K-1}`. This module

* maps predictions onto the 2-simplex (:func:`simplex_projection`) by grouping
  the K classes into three groups, as the two-dimensional reliability
  diagrams of Vaicenavicius et al. (2019, Figures 16 and 18) do, or by
  looking at three chosen classes;
* partitions a simplex of any dimension into cells, either uniformly
  (:func:`uniform_partition`: a per-coordinate grid, on the 2-simplex the
  ``n**2`` congruent triangles of ``n`` subdivisions per edge) or data-
  dependently (:func:`data_dependent_partition`, appendix B of that paper);
* summarises each cell (:func:`cell_table`): count, mean prediction, observed
  label frequency and the distance between the two, whose count-weighted
  mean is the binned estimate of the expected miscalibration (eq. 6 of the
  paper) that :func:`calib_core.canonical_ce` reports.

References
----------
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schon, T. B. "Evaluating model calibration in classification",
   AISTATS 2019. Section 4.1, eq. (6) (binned estimator), appendix B (binning
   schemes), appendix C.2 (two-dimensional reliability diagrams).
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.binning import bin_index
from calib_core.validation import (
    CalibrationInputError,
    check_choice,
    check_count,
    check_n_bins,
    check_probs,
    check_probs_labels,
    row_blocks,
)

__all__ = [
    "DISTANCES",
    "CellTable",
    "Partition",
    "SimplexProjection",
    "SimplexReliability",
    "cell_table",
    "data_dependent_partition",
    "default_groups",
    "simplex_distance",
    "simplex_projection",
    "simplex_reliability",
    "triangle_keys",
    "triangle_vertices",
    "uniform_partition",
]

#: Distances between a mean prediction and an observed label frequency.
#: ``"tv"`` is the total variation distance ``0.5 * sum_k |p_k - q_k|``,
#: ``"sq_euclidean"`` the squared Euclidean distance ``sum_k (p_k - q_k)**2``
#: and ``"euclidean"`` its square root.
DISTANCES = ("tv", "sq_euclidean", "euclidean")

_PARTITIONS = ("uniform", "data_dependent")


# ----------------------------------------------------------------------------
# Result objects
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SimplexProjection:
    """Predictions mapped onto the 2-simplex.

    Attributes
    ----------
    points : ndarray of shape (M, 3)
        Barycentric coordinates (rows sum to 1) of the kept rows.
    labels : ndarray of shape (M,)
        The vertex (0, 1 or 2) of each kept row's label: its group, or its
        position in ``classes``.
    groups : tuple of three tuples of int
        The original classes behind each vertex (an empty tuple for the unused
        third vertex of a binary problem).
    mode : {"groups", "classes"}
        How the vertices were formed: summed groups or three chosen classes.
    n_classes : int
        K of the original predictions.
    kept : ndarray of shape (N,), bool
        Which original rows are in ``points``. Only ``mode="classes"`` drops
        rows (those whose label is not one of the three classes, and those
        that give the three classes probability 0 together).
    """

    points: NDArray[np.float64]
    labels: NDArray[np.intp]
    groups: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    mode: str
    n_classes: int
    kept: NDArray[np.bool_]

    @property
    def n_excluded(self) -> int:
        """Number of original rows left out of the view."""
        return int(self.kept.size - np.count_nonzero(self.kept))

    def vertex_names(self, class_names: Sequence[str] | None = None) -> tuple[str, str, str]:
        """Names of the three vertices, e.g. ``"{0, 1, 2}"`` or ``"cat + dog"``.

        Parameters
        ----------
        class_names : sequence of K str, optional
            Names of the original classes; default: the class indices.
        """
        if class_names is not None and len(class_names) != self.n_classes:
            raise CalibrationInputError(
                f"`class_names` must have {self.n_classes} entries (one per class), got {len(class_names)}."
            )
        names = []
        for group in self.groups:
            if not group:
                names.append("(none)")
            elif class_names is None:
                names.append(str(group[0]) if len(group) == 1 else "{" + ", ".join(map(str, group)) + "}")
            else:
                names.append(" + ".join(str(class_names[k]) for k in group))
        return names[0], names[1], names[2]


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


@dataclass(frozen=True)
class CellTable:
    """Per-cell reliability data and the binned expected miscalibration.

    Attributes
    ----------
    count : ndarray of shape (M,)
        Number of predictions in each (non-empty) cell.
    mean_prediction : ndarray of shape (M, m)
        Average predicted distribution in the cell, :math:`\\hat g^{(i)}`.
    observed_frequency : ndarray of shape (M, m)
        Relative frequency of each outcome in the cell, :math:`\\hat r^{(i)}`.
    deviation : ndarray of shape (M,)
        ``d(observed_frequency, mean_prediction)`` for ``distance``.
    distance : str
        One of :data:`DISTANCES`.
    estimate : float
        :math:`\\sum_i (n_i / N)\\, d(\\hat r^{(i)}, \\hat g^{(i)})`, eq. (6) of
        Vaicenavicius et al. (2019).
    n_total : int
        N, the number of predictions.
    partition : Partition
        The partition the table summarises (``partition.cell_index`` links
        each prediction to its row of the table).
    """

    count: NDArray[np.float64]
    mean_prediction: NDArray[np.float64]
    observed_frequency: NDArray[np.float64]
    deviation: NDArray[np.float64]
    distance: str
    estimate: float
    n_total: int
    partition: Partition

    @property
    def n_cells(self) -> int:
        """Number of non-empty cells."""
        return int(self.count.shape[0])

    @property
    def weight(self) -> NDArray[np.float64]:
        """Share ``n_i / N`` of the predictions in each cell."""
        return self.count / self.n_total

    def to_frame(self):
        """The table as a :class:`pandas.DataFrame`, one row per cell.

        Columns ``count``, ``weight``, ``deviation``, ``mean_prediction_k`` and
        ``observed_frequency_k`` for each coordinate k (and ``key_k`` for the
        uniform partition).
        """
        import pandas as pd

        columns: dict[str, NDArray] = {"count": self.count, "weight": self.weight, "deviation": self.deviation}
        for k in range(self.mean_prediction.shape[1]):
            columns[f"mean_prediction_{k}"] = self.mean_prediction[:, k]
        for k in range(self.observed_frequency.shape[1]):
            columns[f"observed_frequency_{k}"] = self.observed_frequency[:, k]
        if self.partition.keys is not None:
            for k in range(self.partition.keys.shape[1]):
                columns[f"key_{k}"] = self.partition.keys[:, k]
        return pd.DataFrame(columns)


@dataclass(frozen=True)
class SimplexReliability:
    """Everything a two-dimensional reliability diagram needs.

    Attributes
    ----------
    projection : SimplexProjection
        The predictions on the 2-simplex.
    table : CellTable
        Per-cell count, mean prediction, observed frequency and deviation of
        the projected predictions; ``table.estimate`` is the expected
        miscalibration of the three-vertex view.
    """

    projection: SimplexProjection
    table: CellTable

    @property
    def partition(self) -> Partition:
        """The partition of the 2-simplex."""
        return self.table.partition

    @property
    def estimate(self) -> float:
        """Binned expected miscalibration of the three-vertex view."""
        return self.table.estimate


# ----------------------------------------------------------------------------
# Projection onto the 2-simplex
# ----------------------------------------------------------------------------

def default_groups(n_classes: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Three groups of near-equal size of the classes ``0..n_classes-1``, in class order.

    Larger groups come last, as in Vaicenavicius et al. (2019, Figures 16 and
    18): 10 classes give ``{0, 1, 2}, {3, 4, 5}, {6, 7, 8, 9}``. Two classes
    give ``(0,), (1,), ()``: the predictions lie on the edge between the first
    two vertices.

    Parameters
    ----------
    n_classes : int
        K >= 2.

    Returns
    -------
    tuple of three tuples of int

    Examples
    --------
    >>> default_groups(10)
    ((0, 1, 2), (3, 4, 5), (6, 7, 8, 9))
    >>> default_groups(4)
    ((0,), (1,), (2, 3))
    """
    n_classes = check_count(n_classes, "n_classes", 2)
    if n_classes == 2:
        return (0,), (1,), ()
    base, extra = divmod(n_classes, 3)
    sizes = [base + (i >= 3 - extra) for i in range(3)]
    ends = np.cumsum(sizes)
    starts = ends - sizes
    return tuple(tuple(range(s, e)) for s, e in zip(starts.tolist(), ends.tolist()))  # type: ignore[return-value]


def _check_class_list(values: object, name: str, n_classes: int) -> tuple[int, ...]:
    try:
        items = list(values)  # type: ignore[call-overload]
    except TypeError:
        raise CalibrationInputError(f"`{name}` must be a list of class indices, got {values!r}.") from None
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, numbers.Integral):
            raise CalibrationInputError(f"`{name}` must hold integer class indices, got {item!r}.")
        if not 0 <= item < n_classes:
            raise CalibrationInputError(
                f"`{name}` holds class {item}, outside 0..{n_classes - 1} for {n_classes} classes."
            )
        out.append(int(item))
    return tuple(out)


def simplex_projection(probs: ArrayLike, labels: ArrayLike, *,
                       classes: Sequence[int] | None = None,
                       groups: Sequence[Sequence[int]] | None = None) -> SimplexProjection:
    """Map K-class predictions onto the 2-simplex.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    classes : sequence of 3 distinct int, optional
        Look at three chosen classes ``(a, b, c)``: keep the rows whose label
        is one of them and renormalise their three probabilities,
        ``q = (p_a, p_b, p_c) / (p_a + p_b + p_c)``.
    groups : sequence of 3 sequences of int, optional
        Group all K classes into three groups (each class in exactly one
        group; a group may be empty) and sum the probabilities within each
        group. Default (when neither option is given):
        :func:`default_groups`, which maps 3-class predictions to themselves
        and binary predictions onto an edge.

    Returns
    -------
    SimplexProjection

    Raises
    ------
    CalibrationInputError
        Invalid predictions or labels; both ``classes`` and ``groups`` given;
        ``classes`` not three distinct valid classes; ``groups`` not three
        groups that together hold every class exactly once; no row left for
        ``classes``.

    Notes
    -----
    Grouping: with groups :math:`G_1, G_2, G_3`, the point is
    :math:`(\\sum_{k \\in G_j} p_k)_j` and the label is the group of the true
    class. Summing within groups keeps calibration: if
    :math:`P(Y = k \\mid g(X)) = g_k(X)` then the grouped model is calibrated
    for the grouped label too (Proposition 1 of Vaicenavicius et al. 2019
    with ``h`` the grouped prediction).

    Three chosen classes: the view is the conditional distribution of the
    label given that it is one of the three, which is again calibrated when
    the model is: :math:`P(Y = a \\mid q, Y \\in S) = q_a`. Rows with another
    label are left out (``kept`` says which, ``n_excluded`` how many), and so
    are rows giving the three classes probability 0 together, since their
    conditional distribution is undefined.

    Examples
    --------
    >>> view = simplex_projection([[0.1, 0.2, 0.3, 0.4]], [3], groups=[[0], [1, 2], [3]])
    >>> view.points.round(2).tolist(), view.labels.tolist()
    ([[0.1, 0.5, 0.4]], [2])
    """
    probs, labels = check_probs_labels(probs, labels)
    n_rows, n_classes = probs.shape
    if classes is not None and groups is not None:
        raise CalibrationInputError("give either `classes` or `groups`, not both.")
    if classes is not None:
        chosen = _check_class_list(classes, "classes", n_classes)
        if len(chosen) != 3 or len(set(chosen)) != 3:
            raise CalibrationInputError(f"`classes` must be three distinct class indices, got {classes!r}.")
        columns = probs[:, chosen]
        mass = columns.sum(axis=1)
        position = np.full(n_classes, -1, dtype=np.intp)
        position[list(chosen)] = np.arange(3)
        vertex = position[labels]
        kept = (vertex >= 0) & (mass > 0)
        if not kept.any():
            raise CalibrationInputError(
                f"no row has a label among `classes` {chosen} with positive probability for them; "
                "choose other classes."
            )
        points = columns[kept] / mass[kept, None]
        return SimplexProjection(points, vertex[kept], tuple((k,) for k in chosen),  # type: ignore[arg-type]
                                 "classes", n_classes, kept)
    if groups is None:
        group_lists = default_groups(n_classes)
    else:
        try:
            raw_groups = list(groups)
        except TypeError:
            raise CalibrationInputError(f"`groups` must be a list of three lists of classes, got {groups!r}.") from None
        if len(raw_groups) != 3:
            raise CalibrationInputError(f"`groups` must hold exactly three groups, got {len(raw_groups)}.")
        group_lists = tuple(_check_class_list(g, "groups", n_classes) for g in raw_groups)  # type: ignore[assignment]
        flat = [k for g in group_lists for k in g]
        if len(flat) != len(set(flat)):
            repeated = sorted({k for k in flat if flat.count(k) > 1})
            raise CalibrationInputError(f"`groups` must hold each class once; class(es) {repeated} appear twice.")
        missing = sorted(set(range(n_classes)) - set(flat))
        if missing:
            raise CalibrationInputError(
                f"`groups` must hold every class; class(es) {missing} are in no group."
            )
    group_of = np.empty(n_classes, dtype=np.intp)
    points = np.zeros((n_rows, 3))
    members = [list(group) for group in group_lists]
    for j, group in enumerate(members):
        group_of[group] = j
    # Row block by row block: the groups' columns of a block are gathered in cache (gathering them for all rows
    # at once copied the whole matrix: 400 MB at 50,000 x 1,000); each row sums the same values in the same order.
    for start, block in row_blocks(probs):
        for j, group in enumerate(members):
            if group:
                points[start:start + block.shape[0], j] = block[:, group].sum(axis=1)
    return SimplexProjection(points, group_of[labels], tuple(tuple(g) for g in group_lists),  # type: ignore[arg-type]
                             "groups", n_classes, np.ones(n_rows, dtype=bool))


# ----------------------------------------------------------------------------
# Partitions
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


def data_dependent_partition(points: ArrayLike, min_bin_size: int = 1000) -> Partition:
    """Recursive partition at the mean of the highest-variance coordinate (appendix B).

    Parameters
    ----------
    points : array_like of shape (N, m)
        Points of the simplex (rows sum to 1).
    min_bin_size : int, default 1000
        A cell holding more than ``min_bin_size`` points is split.

    Returns
    -------
    Partition
        Cells numbered in depth-first order, lower half first.

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
    cell_index, n_cells = _split_at_means(points, min_bin_size)
    return Partition("data_dependent", cell_index, n_cells, None, min_bin_size=min_bin_size)


def _split_at_means(points: NDArray[np.float64], min_bin_size: int) -> tuple[NDArray[np.intp], int]:
    """Cell of each point under the recursive mean split, all cells of a depth at once.

    Each round splits every cell that is still larger than ``min_bin_size``;
    per-cell means and variances come from :func:`numpy.bincount` over the
    rows still in play, so the loop runs over depths, not over cells or rows.
    Cells are renumbered after each round so that the two halves of a split
    cell take consecutive numbers (lower half first): the final numbering is
    the depth-first order of the split tree.
    """
    n_rows, dim = points.shape
    cell = np.zeros(n_rows, dtype=np.intp)
    n_cells = 1
    active = np.arange(n_rows)
    while active.size:
        c = cell[active]
        count = np.bincount(c, minlength=n_cells).astype(np.float64)
        candidate = count > min_bin_size
        in_play = candidate[c]
        if not in_play.any():
            break
        active, c = active[in_play], c[in_play]
        x = points[active]
        safe = np.maximum(count, 1.0)[:, None]
        slot = (c[:, None] * dim + np.arange(dim)).ravel()  # (cell, coordinate) of each entry
        mean = np.bincount(slot, weights=x.ravel(), minlength=n_cells * dim).reshape(n_cells, dim) / safe
        centred = x - mean[c]
        variance = np.bincount(slot, weights=(centred * centred).ravel(),
                               minlength=n_cells * dim).reshape(n_cells, dim) / safe
        widest = variance.argmax(axis=1)  # ties: lowest coordinate
        rows = np.arange(active.size)
        lower = centred[rows, widest[c]] <= 0.0  # x_d <= mean_d of the cell
        n_lower = np.bincount(c, weights=lower, minlength=n_cells)
        split = (candidate & (variance[np.arange(n_cells), widest] > 0.0)
                 & (n_lower > 0) & (n_lower < count))
        if not split.any():
            break
        upper_half = np.zeros(n_rows, dtype=np.intp)
        upper_half[active] = ~lower
        width = 1 + split.astype(np.intp)
        first = np.cumsum(width) - width
        cell = first[cell] + split[cell] * upper_half
        n_cells = int(width.sum())
        active = active[split[c]]
    return cell, n_cells


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
# Per-cell statistics
# ----------------------------------------------------------------------------

def simplex_distance(p: ArrayLike, q: ArrayLike, distance: str = "tv") -> NDArray[np.float64]:
    """Row-wise distance between distributions (last axis).

    Parameters
    ----------
    p, q : array_like of shape (..., m)
    distance : {"tv", "sq_euclidean", "euclidean"}
        ``tv``: :math:`\\tfrac12 \\sum_k |p_k - q_k|`; ``sq_euclidean``:
        :math:`\\sum_k (p_k - q_k)^2`; ``euclidean``: its square root.

    Returns
    -------
    ndarray of shape (...)

    Examples
    --------
    >>> simplex_distance([0.5, 0.5], [1.0, 0.0]).item()
    0.5
    """
    distance = check_choice(distance, "distance", DISTANCES)
    diff = np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)
    if distance == "tv":
        return 0.5 * np.abs(diff).sum(axis=-1)
    squared = np.einsum("...k,...k->...", diff, diff)
    return squared if distance == "sq_euclidean" else np.sqrt(squared)


def _squared_norm_sum(points: NDArray[np.float64], rows: NDArray[np.intp]) -> float:
    """``sum_{i in rows} |points_i|^2``, gathering the rows in blocks (no copy of them all: 360 MB for the
    single-row cells of 50,000 x 1,000 predictions)."""
    total = 0.0
    step = max(1, _GATHER_BLOCK_VALUES // max(points.shape[1], 1))
    for start in range(0, rows.shape[0], step):
        block = points[rows[start:start + step]]
        total += float(np.einsum("ij,ij->", block, block))
    return total


#: Values per block of :func:`_squared_norm_sum`.
_GATHER_BLOCK_VALUES = 1 << 16


def _cell_means(points: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int,
                safe_count: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean point of each cell, from one bincount over (cell, coordinate) slots."""
    dim = points.shape[1]
    slot = (cells[:, None] * dim + np.arange(dim)).ravel()
    sums = np.bincount(slot, weights=points.ravel(), minlength=n_cells * dim).reshape(n_cells, dim)
    return sums / safe_count[:, None]


def _cell_sums(points: NDArray[np.float64], outcomes: NDArray[np.intp], partition: Partition):
    """Count, mean prediction and observed frequency per cell (bincount, one pass per coordinate)."""
    cells, n_cells = partition.cell_index, partition.n_cells
    dim = points.shape[1]
    count = np.bincount(cells, minlength=n_cells).astype(np.float64)
    safe = np.maximum(count, 1.0)
    mean_prediction = _cell_means(points, cells, n_cells, safe)
    hits = np.bincount(cells * dim + outcomes, minlength=n_cells * dim).reshape(n_cells, dim)
    return count, mean_prediction, hits / safe[:, None]


def _table_from_assignment(points: NDArray[np.float64], outcomes: NDArray[np.intp], partition: Partition,
                           distance: str) -> CellTable:
    count, mean_prediction, observed = _cell_sums(points, outcomes, partition)
    deviation = simplex_distance(observed, mean_prediction, distance)
    estimate = float(count @ deviation / points.shape[0])
    return CellTable(count, mean_prediction, observed, deviation, distance, estimate,
                     int(points.shape[0]), partition)


def cell_table(points: ArrayLike, labels: ArrayLike, partition: Partition, distance: str = "tv") -> CellTable:
    """Per-cell count, mean prediction, observed frequency and deviation.

    Parameters
    ----------
    points : array_like of shape (N, m)
        Predictions on the simplex.
    labels : array_like of shape (N,)
        Outcomes in ``0..m-1``.
    partition : Partition
        From :func:`uniform_partition` or :func:`data_dependent_partition` of
        the same ``points``.
    distance : {"tv", "sq_euclidean", "euclidean"}, default "tv"

    Returns
    -------
    CellTable

    Notes
    -----
    For cell :math:`\\Phi^{(i)}` with :math:`n_i` predictions,
    :math:`\\hat g^{(i)}` is their mean, :math:`\\hat r^{(i)}` the relative
    frequency of each outcome, and the estimate of the expected miscalibration
    :math:`\\eta_d = E[d(r(g(X)), g(X))]` is (Vaicenavicius et al. 2019, eq. 6)

    .. math:: \\hat\\eta_d = \\sum_i \\frac{n_i}{N} d(\\hat r^{(i)}, \\hat g^{(i)}).

    Examples
    --------
    >>> pts = [[0.6, 0.4], [0.6, 0.4]]
    >>> round(cell_table(pts, [0, 1], uniform_partition(pts, 10)).estimate, 12)
    0.1
    """
    points, outcomes = check_probs_labels(points, labels)
    distance = check_choice(distance, "distance", DISTANCES)
    if not isinstance(partition, Partition):
        raise CalibrationInputError(f"`partition` must be a Partition, got {type(partition).__name__}.")
    if partition.cell_index.shape[0] != points.shape[0]:
        raise CalibrationInputError(
            f"`partition` covers {partition.cell_index.shape[0]} points but `points` has {points.shape[0]} rows."
        )
    return _table_from_assignment(points, outcomes, partition, distance)


def _check_partition(partition: object, n_bins: object, min_bin_size: object) -> tuple[str, int, int]:
    """The checked partition options of :func:`simplex_reliability` and :func:`calib_core.canonical_ce`."""
    return (check_choice(partition, "partition", _PARTITIONS), check_n_bins(n_bins),
            check_count(min_bin_size, "min_bin_size"))


def _make_partition(points: NDArray[np.float64], partition: str, n_bins: int, min_bin_size: int) -> Partition:
    if partition == "uniform":
        return uniform_partition(points, n_bins)
    return data_dependent_partition(points, min_bin_size)


def simplex_reliability(probs: ArrayLike, labels: ArrayLike, *, classes: Sequence[int] | None = None,
                        groups: Sequence[Sequence[int]] | None = None, partition: str = "uniform",
                        n_bins: int = 10, min_bin_size: int = 1000, distance: str = "tv") -> SimplexReliability:
    """Two-dimensional reliability diagram data: projection, partition and cell table.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    classes, groups :
        The three vertices, see :func:`simplex_projection`.
    partition : {"uniform", "data_dependent"}, default "uniform"
        ``n_bins**2`` triangles, or the recursive partition of appendix B.
    n_bins : int, default 10
        Subdivisions per edge for the uniform partition.
    min_bin_size : int, default 1000
        Largest unsplit cell of the data-dependent partition.
    distance : {"tv", "sq_euclidean", "euclidean"}, default "tv"

    Returns
    -------
    SimplexReliability

    Notes
    -----
    The arrows of Vaicenavicius et al. (2019, Figures 16 and 18) go from each
    cell's mean prediction (tail) to its observed label frequency (head);
    ``table.estimate`` is eq. (6) of the paper for the three-vertex view.

    Examples
    --------
    >>> rel = simplex_reliability([[0.2, 0.3, 0.5]] * 2, [2, 0], n_bins=4)
    >>> rel.table.count.tolist(), rel.table.observed_frequency.tolist()
    ([2.0], [[0.5, 0.0, 0.5]])
    """
    projection = simplex_projection(probs, labels, classes=classes, groups=groups)
    partition, n_bins, min_bin_size = _check_partition(partition, n_bins, min_bin_size)
    distance = check_choice(distance, "distance", DISTANCES)
    part = _make_partition(projection.points, partition, n_bins, min_bin_size)
    table = _table_from_assignment(projection.points, projection.labels, part, distance)
    return SimplexReliability(projection, table)
