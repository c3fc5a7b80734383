"""Simplex geometry: 2-simplex views of K-class predictions and partitions of the simplex.

A prediction of a K-class model is a point of the probability simplex
:math:`\\Delta^{K-1}`. This module

* maps predictions onto the 2-simplex (:func:`simplex_projection`) by grouping
  the K classes into three groups, as the two-dimensional reliability
  diagrams of Vaicenavicius et al. (2019, Figures 16 and 18) do, or by
  looking at three chosen classes;
* partitions a simplex of any dimension into cells (re-exported from
  :mod:`calib_core.metrics.partitions`), either uniformly
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

from calib_core.display import compact_display
from calib_core.metrics.partitions import (
    PARTITIONS,
    Partition,
    SplitPartition,
    SplitTree,
    cell_polygons,
    data_dependent_partition,
    triangle_keys,
    triangle_vertices,
    uniform_partition,
)
from calib_core.validation import (
    CalibrationInputError,
    check_choice,
    check_count,
    check_n_bins,
    check_probs_labels,
    check_sample_weight,
    row_blocks,
)

__all__ = [
    "DISTANCES",
    "CellTable",
    "SimplexProjection",
    "SimplexReliability",
    "cell_means",
    "cell_sums",
    "cell_table",
    "default_groups",
    "simplex_distance",
    "simplex_projection",
    "simplex_reliability",
    "squared_norm_sum",
    # The partitions (calib_core.metrics.partitions), re-exported: the cell tables summarise their cells.
    "PARTITIONS",
    "Partition",
    "SplitPartition",
    "SplitTree",
    "cell_polygons",
    "data_dependent_partition",
    "triangle_keys",
    "triangle_vertices",
    "uniform_partition",
]

#: Distances between a mean prediction and an observed label frequency.
#: ``"tv"`` is the total variation distance ``0.5 * sum_k |p_k - q_k|``,
#: ``"sq_euclidean"`` the squared Euclidean distance ``sum_k (p_k - q_k)**2``
#: and ``"euclidean"`` its square root.
DISTANCES = ("tv", "sq_euclidean", "euclidean")

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
        that give the three classes probability 0 together), and
        :func:`simplex_reliability` with ``sample_weight`` the rows of weight 0.
    weights : ndarray of shape (M,) or None
        The row weights of the kept rows (:func:`simplex_reliability` with
        ``sample_weight``); None: every row counts once.
    """

    points: NDArray[np.float64]
    labels: NDArray[np.intp]
    groups: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    mode: str
    n_classes: int
    kept: NDArray[np.bool_]
    weights: NDArray[np.float64] | None = None

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
class CellTable:
    """Per-cell reliability data and the binned expected miscalibration.

    Attributes
    ----------
    count : ndarray of shape (M,)
        Number of predictions in each (non-empty) cell; with row weights,
        their summed weight.
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
    n_total : int or float
        N, the number of predictions (an int); with row weights W, their
        summed weight (a float).
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


@compact_display
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


def squared_norm_sum(points: NDArray[np.float64], rows: NDArray[np.intp]) -> float:
    """``sum_{i in rows} |points_i|^2``, gathering the rows in blocks (no copy of them all: 360 MB for the
    single-row cells of 50,000 x 1,000 predictions)."""
    total = 0.0
    step = max(1, _GATHER_BLOCK_VALUES // max(points.shape[1], 1))
    for start in range(0, rows.shape[0], step):
        block = points[rows[start:start + step]]
        total += float(np.einsum("ij,ij->", block, block))
    return total


#: Values per block of :func:`squared_norm_sum`.
_GATHER_BLOCK_VALUES = 1 << 16


def cell_means(points: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int,
                safe_count: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean point of each cell, from one bincount over (cell, coordinate) slots."""
    dim = points.shape[1]
    slot = (cells[:, None] * dim + np.arange(dim)).ravel()
    sums = np.bincount(slot, weights=points.ravel(), minlength=n_cells * dim).reshape(n_cells, dim)
    return sums / safe_count[:, None]


def cell_sums(points: NDArray[np.float64], outcomes: NDArray[np.intp], partition: Partition,
              weights: NDArray[np.float64] | None = None):
    """Count, mean prediction and observed frequency per cell (bincount, one pass per coordinate).

    With ``weights`` (checked, positive) the count is the summed weight and the means are weighted means.
    """
    cells, n_cells = partition.cell_index, partition.n_cells
    dim = points.shape[1]
    count = np.bincount(cells, weights=weights, minlength=n_cells).astype(np.float64)
    if weights is None:
        safe = np.maximum(count, 1.0)
        mean_prediction = cell_means(points, cells, n_cells, safe)
    else:  # a cell's summed weight can be below 1
        safe = np.where(count > 0, count, 1.0)
        mean_prediction = cell_means(points * weights[:, None], cells, n_cells, safe)
    hits = np.bincount(cells * dim + outcomes, weights=weights, minlength=n_cells * dim).reshape(n_cells, dim)
    return count, mean_prediction, hits / safe[:, None]


def _table_from_assignment(points: NDArray[np.float64], outcomes: NDArray[np.intp], partition: Partition,
                           distance: str, weights: NDArray[np.float64] | None = None) -> CellTable:
    count, mean_prediction, observed = cell_sums(points, outcomes, partition, weights)
    deviation = simplex_distance(observed, mean_prediction, distance)
    n_total = int(points.shape[0]) if weights is None else float(weights.sum())
    estimate = float(count @ deviation / (points.shape[0] if weights is None else n_total))
    return CellTable(count, mean_prediction, observed, deviation, distance, estimate, n_total, partition)


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
    return (check_choice(partition, "partition", PARTITIONS), check_n_bins(n_bins),
            check_count(min_bin_size, "min_bin_size"))


def _make_partition(points: NDArray[np.float64], partition: str, n_bins: int, min_bin_size: int,
                    weights: NDArray[np.float64] | None = None) -> Partition:
    if partition == "uniform":
        return uniform_partition(points, n_bins)
    return data_dependent_partition(points, min_bin_size, sample_weight=weights)


def simplex_reliability(probs: ArrayLike, labels: ArrayLike, *, classes: Sequence[int] | None = None,
                        groups: Sequence[Sequence[int]] | None = None, partition: str = "uniform",
                        n_bins: int = 10, min_bin_size: int = 1000, distance: str = "tv",
                        sample_weight: ArrayLike | None = None) -> SimplexReliability:
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
    sample_weight : array_like of shape (N,), optional
        Row weights (frequencies, ``docs/weights.md``): rows of weight 0 leave
        the view (``projection.kept``), the others carry their weight
        (``projection.weights``). A cell's count is its summed weight, its
        mean prediction and observed frequency are weighted means, N is the
        summed weight W, and the data-dependent partition splits on weighted
        counts, means and variances. Whole-number weights give exactly the
        diagram of the rows repeated that many times.

    Returns
    -------
    SimplexReliability

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels, options or weights.

    Notes
    -----
    With row weights :math:`w_j`, cell :math:`\\Phi^{(i)}` has
    :math:`n_i = \\sum_{j \\in i} w_j`,
    :math:`\\hat g^{(i)} = \\sum_{j \\in i} w_j g_j / n_i`,
    :math:`\\hat r^{(i)}_k = \\sum_{j \\in i} w_j [y_j = k] / n_i` and eq. (6)
    of Vaicenavicius et al. (2019) with :math:`N = W = \\sum_j w_j`.

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
    weights = check_sample_weight(sample_weight, projection.kept.size)
    if weights is not None:
        projection = _weighted_projection(projection, weights)
    part = _make_partition(projection.points, partition, n_bins, min_bin_size, projection.weights)
    table = _table_from_assignment(projection.points, projection.labels, part, distance, projection.weights)
    return SimplexReliability(projection, table)


def _weighted_projection(projection: SimplexProjection, weights: NDArray[np.float64]) -> SimplexProjection:
    """``projection`` without its rows of weight 0, carrying the others' weights."""
    kept_weights = weights[projection.kept]
    positive = kept_weights > 0
    if not positive.any():
        raise CalibrationInputError("every row in the view has `sample_weight` 0: give a row of the view a "
                                    "positive weight.")
    kept = projection.kept.copy()
    kept[kept] = positive
    return SimplexProjection(projection.points[positive], projection.labels[positive], projection.groups,
                             projection.mode, projection.n_classes, kept, kept_weights[positive])
