"""Input validation shared by every public function of :mod:`calib_core`.

Every public function opens with :func:`check_probs_labels` (or one of the
smaller checks below) and then does its maths without further checks. All
failures raise :class:`CalibrationInputError`, a :class:`ValueError`, with a
message that names the argument, the problem and an example row or value.

Validation once: arrays checked when a :class:`~calib_core.io.Predictions`
is made are frozen and marked (:func:`calib_core._accel.mark_validated`),
and the checks return them at once. Raw arrays are checked in cache-sized row blocks, which
a caller can also consume itself (:func:`check_probs_by_block`) to do its
per-row work in the same pass over memory.
"""
from __future__ import annotations

import numbers
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core._accel import is_validated

__all__ = [
    "CalibrationInputError",
    "ROW_SUM_TOLERANCE",
    "as_probs",
    "MAX_N_BINS",
    "check_labels",
    "check_n_bins",
    "check_probs",
    "check_probs_by_block",
    "check_probs_columns",
    "check_probs_with_row_sums",
    "check_probs_labels",
    "check_binning",
    "check_positive",
    "check_count",
    "check_sizes",
    "check_flag",
    "check_fraction",
    "check_logits",
    "check_real",
    "check_sample_weight",
    "integer_weights",
    "repeat_rows",
    "repeated_probs_labels",
    "row_blocks",
    "softmax",
    "softmax_unchecked",
]

#: Largest accepted deviation of a row sum from 1. Probabilities written as
#: float32 or as 6-decimal CSV text sum to 1 only within ~1e-6 per entry.
ROW_SUM_TOLERANCE = 1e-4

#: Largest accepted bin count (:func:`check_n_bins`). Bounds the work and memory of
#: every binned function: per-bin sums are arrays of ``n_bins`` (``K * n_bins`` for the
#: class-wise metrics). It is far above any bin count a binned estimate can use: the
#: count that balances binning and sampling bias (Futami & Fujisawa 2024, eq. 12,
#: :func:`calib_core.binning.optimal_n_bins`) reaches 10,000 only at about 8.7e10 rows.
MAX_N_BINS = 10_000

#: Rows processed per block when scanning large matrices, so that the
#: sum, min and finiteness checks read each block from cache, not memory.
_BLOCK_ELEMENTS = 1 << 17

class CalibrationInputError(ValueError):
    """Raised when predictions, labels or options are not usable as given.

    The message names the argument, says what is wrong (shape, NaN, row sums,
    label range, ...) and shows an example of the offending value.
    """


def _as_float_matrix(probs: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        array = np.asarray(probs)
    except Exception as exc:  # ragged lists and the like
        raise CalibrationInputError(f"`{name}` could not be read as an array: {exc}") from exc
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.floating)
        or np.issubdtype(array.dtype, np.integer)
        or array.dtype == bool
    ):
        raise CalibrationInputError(
            f"`{name}` must hold numbers, got dtype {array.dtype}."
        )
    if array.ndim != 2:
        raise CalibrationInputError(
            f"`{name}` must be a 2-D array of shape (N, K), got shape {array.shape}; "
            "for a 1-D score of class 1 use `calib_core.as_probs(scores)`."
        )
    if array.shape[1] < 2:
        raise CalibrationInputError(
            f"`{name}` must have at least 2 columns (classes), got shape {array.shape}."
        )
    if array.shape[0] == 0:
        raise CalibrationInputError(f"`{name}` has no rows (shape {array.shape}).")
    return np.ascontiguousarray(array, dtype=np.float64)


def _first_bad_row(mask: NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


def check_probs(probs: ArrayLike, *, name: str = "probs") -> NDArray[np.float64]:
    """Check a matrix of predicted probabilities.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Rows on the probability simplex, ``K >= 2``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray of shape (N, K), float64, C-contiguous

    Raises
    ------
    CalibrationInputError
        Wrong shape, non-numeric values, NaN or infinite values, negative
        values or rows whose sum differs from 1 by more than
        ``ROW_SUM_TOLERANCE``. The message shows the first offending row.

    Notes
    -----
    The matrix is scanned in row blocks that fit in cache, so the checks cost
    about one pass over memory even for ``N * K = 10**8`` entries. A matrix
    marked by :func:`calib_core._accel.mark_validated` (the arrays of a
    :class:`~calib_core.io.Predictions`) is returned at once.
    """
    if is_validated(probs):
        return probs
    return check_probs_with_row_sums(probs, name=name)[0]


def check_probs_with_row_sums(probs: ArrayLike, *, name: str = "probs",
                              row_offset: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`check_probs`, also returning the row sums it computed on the way.

    For callers that report how far rows are from summing to 1 (the loader)
    without a second pass over the matrix.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    name : str
        Argument name used in error messages.
    row_offset : int, default 0
        Added to the row numbers in error messages (for a block of a larger
        table: the number of the block's first row).

    Returns
    -------
    probs : ndarray of shape (N, K)
    row_sums : ndarray of shape (N,)
    """
    matrix = _as_float_matrix(probs, name)
    all_row_sums = np.empty(matrix.shape[0])
    for _ in _checked_row_blocks(matrix, name, row_offset, all_row_sums):
        pass
    return matrix, all_row_sums


def check_probs_by_block(probs: ArrayLike, *, name: str = "probs",
                         ) -> tuple[NDArray[np.float64], Iterator[tuple[int, NDArray[np.float64]]]]:
    """:func:`check_probs` one cache-sized row block at a time, for callers with per-row work.

    A caller that reads every row anyway (the arg-max of
    :func:`calib_core.metrics.binned.top_label`) does its work on each block
    as it is yielded, while the block is still in cache: the check and the
    work then cost about one pass over memory instead of two.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    name : str
        Argument name used in error messages.

    Returns
    -------
    matrix : ndarray of shape (N, K), float64, C-contiguous
        Shape and type are checked at once; the values only as the blocks are read.
    blocks : iterator of (int, ndarray)
        ``(start, matrix[start:stop])`` for consecutive row blocks. Each block
        is checked before it is yielded, so the matrix is valid only once the
        iterator is exhausted; it raises exactly what :func:`check_probs`
        raises, at the first bad block. A matrix marked by
        :func:`calib_core._accel.mark_validated` is yielded without checks.
    """
    if is_validated(probs):
        return probs, row_blocks(probs)
    matrix = _as_float_matrix(probs, name)
    return matrix, _checked_row_blocks(matrix, name, 0, None)


def row_blocks(matrix: NDArray[np.float64]) -> Iterator[tuple[int, NDArray[np.float64]]]:
    """``(start, matrix[start:stop])`` over consecutive row blocks that fit in cache; no checks.

    For per-row work on a large matrix, one block at a time. It also spares a
    whole-matrix copy: numpy's ``argmax(axis=1)`` copies a read-only array
    (such as the arrays of a :class:`~calib_core.io.Predictions`) before it
    starts, which on a block costs a copy in cache instead of one in memory.
    """
    n_rows, n_classes = matrix.shape
    rows_per_block = max(1, _BLOCK_ELEMENTS // n_classes)
    for start in range(0, n_rows, rows_per_block):
        yield start, matrix[start : start + rows_per_block]


def row_argmax(matrix: NDArray[np.float64]) -> NDArray[np.intp]:
    """Arg-max of each row (ties: the lowest index, as :func:`numpy.argmax`), one row block at a time.

    The same as ``matrix.argmax(axis=1)``, without its whole-matrix copy of a
    read-only array (numpy 2.4 copies it first: 20x slower at 1,000,000 x 100),
    which every :class:`~calib_core.io.Predictions` array is.

    Examples
    --------
    >>> row_argmax(np.array([[0.2, 0.8], [0.5, 0.5]])).tolist()
    [1, 0]
    """
    predicted = np.empty(matrix.shape[0], dtype=np.intp)
    for start, block in row_blocks(matrix):
        np.argmax(block, axis=1, out=predicted[start : start + block.shape[0]])
    return predicted


def correct_rows(probs: NDArray[np.float64], labels: NDArray[np.intp]) -> NDArray[np.float64]:
    """1.0 where a row's arg-max class (ties: the lowest index) is its label, else 0.0: the accuracy per row.

    The one definition of "correct" behind the accuracy of every surface
    (:func:`calib_core.accuracy`, ``Predictions.accuracy``, the bootstrap of
    the accuracy, the report). ``probs`` and ``labels`` are checked arrays.

    Examples
    --------
    >>> correct_rows(np.array([[0.2, 0.8], [0.5, 0.5]]), np.array([1, 1])).tolist()
    [1.0, 0.0]
    """
    return (row_argmax(probs) == labels).astype(np.float64)


#: Rows per block of :func:`transposed` (a block's columns stay in cache while they are written).
_TRANSPOSE_ROWS = 256


def transposed(matrix: NDArray, out: NDArray | None = None) -> NDArray:
    """A C-ordered copy of ``matrix.T``, copied 256 rows at a time.

    The same values as ``np.ascontiguousarray(matrix.T)``: copied whole, a
    large transpose misses the cache on nearly every write (1.36 s at
    50,000 x 1,000); by blocks of rows it takes 0.16 s. ``out`` (C-ordered,
    of the transposed shape) receives the copy instead of a new array: a
    loop over blocks of columns then writes to memory it has touched already.

    Examples
    --------
    >>> transposed(np.arange(6.0).reshape(3, 2)).tolist()
    [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    """
    if out is None:
        out = np.empty(matrix.shape[::-1], dtype=matrix.dtype)
    for start in range(0, matrix.shape[0], _TRANSPOSE_ROWS):
        out[:, start : start + _TRANSPOSE_ROWS] = matrix[start : start + _TRANSPOSE_ROWS].T
    return out


def _checked_row_blocks(matrix: NDArray[np.float64], name: str, row_offset: int,
                        all_row_sums: NDArray[np.float64] | None) -> Iterator[tuple[int, NDArray[np.float64]]]:
    """The one implementation of the value checks of :func:`check_probs`, block by block.

    Each block is read from memory once, by its row sums, and is in cache for
    its minimum (and for whatever the caller does with the yielded block).
    ``all_row_sums``, when given, receives the row sums.
    """
    buffer = None if all_row_sums is not None else np.empty(
        min(matrix.shape[0], max(1, _BLOCK_ELEMENTS // matrix.shape[1])))
    for start, block in row_blocks(matrix):
        stop = start + block.shape[0]
        out = all_row_sums[start:stop] if all_row_sums is not None else buffer[: stop - start]
        # einsum is 2-3x faster than .sum(axis=1) on short rows; exactness is not needed here.
        row_sums = np.einsum("ij->i", block, out=out)
        # One test for the three checks below: a NaN anywhere makes the minimum NaN and the test false;
        # +inf makes a row sum fail; -inf the minimum. |s - 1| > tol is s - 1 > tol or 1 - s > tol.
        if not (block.min() >= 0.0
                and max(row_sums.max() - 1.0, 1.0 - row_sums.min()) <= ROW_SUM_TOLERANCE):
            _raise_for_block(matrix, block, row_sums, start, name, row_offset)
        yield start, block


def _raise_for_block(matrix: NDArray[np.float64], block: NDArray[np.float64], row_sums: NDArray[np.float64],
                     start: int, name: str, row_offset: int) -> None:
    """Raise the error for the first bad row of a block that failed the quick test."""
    # A NaN or inf anywhere in a row makes its sum non-finite.
    bad_value = ~np.isfinite(row_sums)
    if bad_value.any():
        row = start + _first_bad_row(bad_value)
        raise CalibrationInputError(
            f"`{name}` contains NaN or infinite values, e.g. row {row_offset + row}: "
            f"{_format_row(matrix[row])}. Remove or fix these rows."
        )
    if block.min() < 0.0:
        row = start + _first_bad_row((block < 0.0).any(axis=1))
        raise CalibrationInputError(
            f"`{name}` contains negative values, e.g. row {row_offset + row}: "
            f"{_format_row(matrix[row])}. If these are logits, declare them as logits."
        )
    off_simplex = np.abs(row_sums - 1.0) > ROW_SUM_TOLERANCE
    if off_simplex.any():
        row = start + _first_bad_row(off_simplex)
        raise CalibrationInputError(
            f"rows of `{name}` must sum to 1 (tolerance {ROW_SUM_TOLERANCE:g}); "
            f"row {row_offset + row} sums to {row_sums[row - start]:.6g}: {_format_row(matrix[row])}. "
            "Declare the values as logits, or renormalise them explicitly."
        )


def check_labels(labels: ArrayLike, n_classes: int, *, n_rows: int | None = None,
                 name: str = "labels", row_offset: int = 0) -> NDArray[np.intp]:
    """Check integer class labels.

    Parameters
    ----------
    labels : array_like of shape (N,)
        Integer class indices in ``0..n_classes-1``. Floats are accepted only
        when they hold whole numbers.
    n_classes : int
        Number of classes K.
    n_rows : int, optional
        Expected N (the number of rows of ``probs``).
    name : str
        Argument name used in error messages.
    row_offset : int, default 0
        Added to the row numbers in error messages.

    Returns
    -------
    ndarray of shape (N,), intp

    Raises
    ------
    CalibrationInputError
        Wrong shape or length, non-integer values, NaN, values out of range.

    Notes
    -----
    Labels marked by :func:`calib_core._accel.mark_validated` for ``n_classes`` (those of a
    :class:`~calib_core.io.Predictions`) are returned without a scan.
    """
    if is_validated(labels, n_classes) and (n_rows is None or labels.shape[0] == n_rows):
        return labels
    array = np.asarray(labels)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise CalibrationInputError(f"`{name}` must be 1-D, got shape {array.shape}.")
    if n_rows is not None and array.shape[0] != n_rows:
        raise CalibrationInputError(
            f"`{name}` has {array.shape[0]} entries but `probs` has {n_rows} rows."
        )
    if array.dtype == bool:
        array = array.astype(np.intp)
    if np.issubdtype(array.dtype, np.floating):
        finite = np.isfinite(array)
        if not finite.all():
            row = _first_bad_row(~finite)
            raise CalibrationInputError(f"`{name}` contains NaN or infinite values, e.g. row {row_offset + row}.")
        whole = array == np.round(array)
        if not whole.all():
            row = _first_bad_row(~whole)
            raise CalibrationInputError(
                f"`{name}` must be integer class indices, row {row_offset + row} is {array[row]!r}."
            )
        array = array.astype(np.intp)
    elif not np.issubdtype(array.dtype, np.integer):
        raise CalibrationInputError(
            f"`{name}` must be integer class indices in 0..{n_classes - 1}, got dtype {array.dtype}; "
            "map class names to indices first (calib_core.load_predictions does this)."
        )
    array = array.astype(np.intp, copy=False)
    if array.size:
        low, high = array.min(), array.max()
        if low < 0 or high >= n_classes:
            out_of_range = (array < 0) | (array >= n_classes)
            row = _first_bad_row(out_of_range)
            raise CalibrationInputError(
                f"`{name}` must lie in 0..{n_classes - 1} for {n_classes} classes; "
                f"row {row_offset + row} is {array[row]}."
            )
    return array


def check_probs_labels(probs: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Check a prediction matrix and its labels together.

    Returns
    -------
    probs : ndarray of shape (N, K), float64
    labels : ndarray of shape (N,), intp
    """
    return _check_rows(probs, labels, 0)


def check_probs_columns(columns: ArrayLike | Sequence[NDArray[np.float64]], labels: ArrayLike, *,
                        row_offset: int = 0) -> tuple[Any, NDArray[np.intp]]:
    """:func:`check_probs_labels` for probabilities stored class-major (one array per class).

    Streaming engines read tables column by column, so they hold the
    probabilities transposed: a ``(K, N)`` array, or the K columns as they
    came from the file. This check reads that layout as it is: per chunk of
    samples, the sum over the K classes and each class's minimum. Only when
    a chunk fails is it checked again row by row, so the error message is
    exactly the one :func:`check_probs` gives.

    Parameters
    ----------
    columns : array_like of shape (K, N), or a sequence of K float64 arrays of length N
        ``columns[k][i]`` is the probability of class k for sample i.
    labels : array_like of shape (N,)
    row_offset : int, default 0
        Added to the row numbers in error messages.

    Returns
    -------
    columns : ndarray of shape (K, N), float64, C-contiguous; or the sequence as given
    labels : ndarray of shape (N,), intp

    Raises
    ------
    CalibrationInputError
        As :func:`check_probs_labels` (rows are samples, i.e. columns here).
    """
    if _is_column_list(columns):
        parts = list(columns)
        checked: Any = columns
    else:
        array = np.asarray(columns)
        if array.ndim != 2 or array.dtype != np.float64 or array.shape[0] < 2 or array.shape[1] == 0:
            probs, labels_checked = _check_rows(array.T if array.ndim == 2 else array, labels, row_offset)
            return transposed(probs), labels_checked
        checked = np.ascontiguousarray(array)
        parts = list(checked)  # rows of a C-contiguous array: contiguous class columns
    n_classes, n_rows = len(parts), parts[0].shape[0]
    # Chunks of 2**16 rows: each class column's chunk is read from memory once, by the add, and is
    # still in cache for its minimum (0.56 ns a value here, against 0.93 with 2**18 rows).
    step = 1 << 16
    row_sums = np.empty(min(step, n_rows))
    for start in range(0, n_rows, step):
        chunk = [part[start:start + step] for part in parts]
        sums = row_sums[:chunk[0].shape[0]]
        np.copyto(sums, chunk[0])
        low = chunk[0].min()
        for values in chunk[1:]:
            np.add(sums, values, out=sums)
            low = min(low, values.min())
        # A NaN makes every test false; +inf makes the row sum fail; -inf the minimum.
        # (max and min of the sums, not abs(sums - 1): no temporary arrays, which cost page faults.)
        worst = max(sums.max() - 1.0, 1.0 - sums.min())
        if not (low >= 0.0 and worst <= ROW_SUM_TOLERANCE):
            # The row-by-row check names the first bad row (it is the authority at the tolerance's edge).
            check_probs_with_row_sums(np.column_stack(chunk), row_offset=row_offset + start)
    return checked, check_labels(labels, n_classes, n_rows=n_rows, row_offset=row_offset)


def _is_column_list(columns: object) -> bool:
    """A list or tuple of at least two float64 1-D arrays of one non-zero length."""
    if not isinstance(columns, (list, tuple)) or len(columns) < 2:
        return False
    first = columns[0]
    return all(isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype == np.float64 for c in columns) \
        and first.shape[0] > 0 and all(c.shape == first.shape for c in columns)


def _check_rows(probs: ArrayLike, labels: ArrayLike, row_offset: int) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    matrix = probs if is_validated(probs) else check_probs_with_row_sums(probs, row_offset=row_offset)[0]
    return matrix, check_labels(labels, matrix.shape[1], n_rows=matrix.shape[0], row_offset=row_offset)


def check_n_bins(n_bins: object, *, name: str = "n_bins", maximum: int | None = MAX_N_BINS) -> int:
    """Check a bin count: a whole number in ``1..maximum``.

    Parameters
    ----------
    n_bins : object
        A Python or numpy integer (``bool`` and floats such as ``15.0`` are refused).
    name : str
        Argument name used in error messages.
    maximum : int or None, default MAX_N_BINS
        Largest accepted value; ``None`` for no upper bound (for counts that are
        not bin counts).

    Returns
    -------
    int

    Raises
    ------
    CalibrationInputError
        Not a whole number, below 1, or above ``maximum`` (:data:`MAX_N_BINS`,
        10,000, for bin counts). The check costs O(1), so absurd values such
        as ``10**9`` or ``2**63`` fail before anything is allocated.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral):
        raise CalibrationInputError(f"`{name}` must be a whole number >= 1, got {n_bins!r}.")
    if n_bins < 1:
        raise CalibrationInputError(f"`{name}` must be >= 1, got {n_bins}.")
    if maximum is not None and n_bins > maximum:
        raise CalibrationInputError(
            f"`{name}` must be at most {maximum:,}, got {n_bins}: per-bin sums take memory in "
            "proportion to the bin count, and no binned estimate needs more bins "
            "(calib_core.optimal_n_bins(N), the count suited to N rows, stays below 10,000 "
            "up to about 8.7e10 rows)."
        )
    return int(n_bins)


def check_binning(binning: object) -> str:
    """Check a binning scheme name: ``"uniform"`` or ``"adaptive"``."""
    if binning not in ("uniform", "adaptive"):
        raise CalibrationInputError(
            f"`binning` must be 'uniform' or 'adaptive', got {binning!r}."
        )
    return str(binning)


def check_right(right: object) -> bool:
    """``right`` (which end of a uniform bin is closed) as a bool; anything but True/False is refused."""
    return check_flag(right, "right")


def check_count(value: object, name: str, minimum: int = 1) -> int:
    """Check a whole number ``>= minimum`` (a count, a size, a seed); ``bool`` and floats are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise CalibrationInputError(f"`{name}` must be a whole number >= {minimum}, got {value!r}.")
    return int(value)


def check_sizes(values: Iterable[object], name: str = "sizes", minimum: int = 2) -> tuple[int, ...]:
    """Check a non-empty collection of whole numbers ``>= minimum`` (test-set sizes, bin counts).

    Returns the distinct values, ascending.
    """
    try:
        items = list(values)
    except TypeError as exc:
        raise CalibrationInputError(f"`{name}` must be a sequence of whole numbers, got {values!r}.") from exc
    if not items:
        raise CalibrationInputError(f"`{name}` is empty; give at least one value.")
    for value in items:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
            raise CalibrationInputError(f"`{name}` must hold whole numbers >= {minimum}, got {value!r}.")
    return tuple(sorted({int(v) for v in items}))


def check_flag(value: object, name: str) -> bool:
    """Check a True/False option (numpy booleans too); anything else, 0 and 1 included, is refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise CalibrationInputError(f"`{name}` must be True or False, got {value!r}.")
    return bool(value)


def check_fraction(value: object, name: str) -> float:
    """Check a real number strictly between 0 and 1 (a level ``alpha``, a share of rows)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value < 1.0:
        raise CalibrationInputError(f"`{name}` must lie strictly between 0 and 1, got {value!r}.")
    return float(value)


def check_real(value: object, name: str) -> float:
    """Check a finite real number (``bool`` is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise CalibrationInputError(f"`{name}` must be a finite number, got {value!r}.")
    return float(value)


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """Check that a string option is one of ``choices``."""
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise CalibrationInputError(f"`{name}` must be one of {options}; got {value!r}.")
    return str(value)


def check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    """Check a finite positive (or non-negative) real number."""
    check_real(value, name)
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise CalibrationInputError(f"`{name}` must be {bound}, got {value!r}.")
    return float(value)


def check_logits(logits: ArrayLike, *, name: str = "logits") -> NDArray[np.float64]:
    """Check a logit (score) matrix: numeric, 2-D with ``K >= 2`` columns, finite.

    Parameters
    ----------
    logits : array_like of shape (N, K)
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray of shape (N, K), float64, C-contiguous

    Raises
    ------
    CalibrationInputError
        Wrong shape or dtype, no rows, NaN or infinite values (the message
        shows the first offending row).
    """
    matrix = _as_float_matrix(logits, name)
    finite = np.isfinite(matrix)
    if not finite.all():
        row = _first_bad_row(~finite.all(axis=1))
        raise CalibrationInputError(
            f"`{name}` contains NaN or infinite values, e.g. row {row}: {_format_row(matrix[row])}."
        )
    return matrix


def softmax(logits: ArrayLike) -> NDArray[np.float64]:
    """Row-wise softmax, stable for large logits (the row maximum is subtracted).

    Raises
    ------
    CalibrationInputError
        If `logits` is not a finite 2-D array with at least 2 columns.
    """
    return softmax_unchecked(check_logits(logits))


#: Values per row block of :func:`softmax_unchecked` on a matrix (1 MiB of float64: each pass stays in cache).
SOFTMAX_BLOCK_VALUES = 1 << 17


def softmax_unchecked(scores: NDArray[np.float64], *, out: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """:func:`softmax` of a float array already checked (or built from checked values), over the last axis.

    ``exp(s - max s) / sum exp(s - max s)``, into ``out`` (default: a new
    array; ``out=scores`` works in place, for a temporary such as
    ``x / T``). ``scores`` is not modified otherwise. A matrix goes by
    blocks of rows, so its four passes run in cache; every row's value is
    the same as a whole-matrix computation's, bit for bit.
    """
    if out is None:
        out = np.empty_like(scores)
    if scores.ndim != 2:
        np.subtract(scores, scores.max(axis=-1, keepdims=True), out=out)
        np.exp(out, out=out)
        out /= out.sum(axis=-1, keepdims=True)
        return out
    step = max(1, SOFTMAX_BLOCK_VALUES // max(scores.shape[1], 1))
    for start in range(0, scores.shape[0], step):
        block = out[start:start + step]
        np.subtract(scores[start:start + step], scores[start:start + step].max(axis=1, keepdims=True), out=block)
        np.exp(block, out=block)
        block /= block.sum(axis=1, keepdims=True)
    return out


def as_probs(scores: ArrayLike) -> NDArray[np.float64]:
    """Turn a 1-D score of class 1 into an ``(N, 2)`` probability matrix.

    Parameters
    ----------
    scores : array_like of shape (N,)
        P(class 1) for each row, in [0, 1]. An ``(N, 2)`` matrix is checked
        and returned as it is.

    Returns
    -------
    ndarray of shape (N, 2)
        Columns ``1 - scores`` and ``scores``.

    Examples
    --------
    >>> as_probs([0.2, 0.9]).tolist()
    [[0.8, 0.2], [0.09999999999999998, 0.9]]
    """
    array = np.asarray(scores, dtype=np.float64) if not isinstance(scores, np.ndarray) else scores
    if array.ndim == 2:
        return check_probs(array)
    if array.ndim != 1:
        raise CalibrationInputError(f"`scores` must be 1-D, got shape {array.shape}.")
    if array.size == 0:
        raise CalibrationInputError("`scores` is empty.")
    array = np.asarray(array, dtype=np.float64)
    bad = ~np.isfinite(array) | (array < 0) | (array > 1)
    if bad.any():
        row = _first_bad_row(bad)
        raise CalibrationInputError(
            f"`scores` must be probabilities in [0, 1]; row {row} is {array[row]!r}."
        )
    return np.column_stack([1.0 - array, array])


def _format_row(row: NDArray[np.float64], limit: int = 6) -> str:
    shown = ", ".join(f"{v:.4g}" for v in row[:limit])
    return f"[{shown}{', ...' if row.size > limit else ''}]"


def named_rng(seed: int | np.random.Generator | None, name: str) -> np.random.Generator:
    """The random stream called ``name`` of ``seed``: independent of every other name's stream.

    Parameters
    ----------
    seed : int, numpy.random.Generator or None
        An integer seed (the one seed a page, the CLI or a report names), a
        generator (returned as it is: its owner chose the stream) or None
        (fresh entropy).
    name : str
        A stable name of the random quantity, e.g. ``"calibration_test/skce/labels"``.

    Returns
    -------
    numpy.random.Generator
        For an integer seed, ``default_rng(SeedSequence(seed, spawn_key=(crc32(name),)))``:
        the same numbers for the same (seed, name) on every surface and
        platform, and adding a new named quantity does not shift another's numbers
        (as drawing it from one shared generator would).

    Examples
    --------
    >>> a = named_rng(0, "calibration_test/skce/labels").random()
    >>> a == named_rng(0, "calibration_test/skce/labels").random() != named_rng(0, "calibration_test/consistency").random()
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise CalibrationInputError(f"`seed` must be a non-negative integer, a numpy Generator or None, got {seed!r}.")
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(name.encode()),)))


# ----------------------------------------------------------------------------- sample weights

#: :func:`repeat_rows` builds at most this many values, rows x columns (400 MB of float64; ``docs/weights.md``).
MAX_REPEATED_VALUES = 50_000_000


def check_sample_weight(sample_weight: ArrayLike | None, n_rows: int, *,
                        name: str = "sample_weight") -> NDArray[np.float64] | None:
    """Check row weights: None, or shape ``(n_rows,)``, finite, ``>= 0``, positive sum; float64 out.

    Weights are frequencies: integer ones repeat rows, 0 drops a row (``docs/weights.md``).

    >>> check_sample_weight([1, 2, 0], 3).tolist()
    [1.0, 2.0, 0.0]
    """
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"`{name}` must be an array of numbers, got {sample_weight!r:.80}.") from exc
    if weights.shape != (n_rows,):
        raise CalibrationInputError(f"`{name}` must have shape ({n_rows},), one weight per row, got {weights.shape}.")
    for bad, rule in ((~np.isfinite(weights), "finite"), (weights < 0, ">= 0")):
        if bad.any():
            row = _first_bad_row(bad)
            raise CalibrationInputError(f"`{name}` must be {rule}; row {row} is {weights[row]}.")
    if not weights.sum() > 0:
        raise CalibrationInputError(f"`{name}` sums to 0 (every weight is zero): a row needs a positive weight.")
    return weights


def integer_weights(weights: NDArray[np.float64]) -> bool:
    """Whether every (checked) weight is a whole number, i.e. a count of repeated rows."""
    return bool(np.all(weights == np.round(weights)))


def repeat_rows(weights: NDArray[np.float64], *arrays: NDArray, metric: str) -> tuple[NDArray, ...]:
    """``arrays`` with row i repeated ``weights[i]`` times (a metric without a weighted formula is defined on
    them); non-integer weights and more than :data:`MAX_REPEATED_VALUES` values raise CalibrationInputError."""
    if not integer_weights(weights):
        raise CalibrationInputError(
            f"`sample_weight` of {metric} must be whole numbers (how many times each row counts): {metric} has "
            f"no weighted formula, so weights are applied by repeating rows; got "
            f"{float(weights[weights != np.round(weights)][0])!r}.")
    if float(weights.sum()) * max(array[:1].size for array in arrays) > MAX_REPEATED_VALUES:
        raise CalibrationInputError(f"`sample_weight` of {metric} sums to {float(weights.sum()):,.0f}: {metric} "
                                    f"repeats rows, at most {MAX_REPEATED_VALUES:,} values (rows x columns).")
    return tuple(np.repeat(array, weights.astype(np.intp), axis=0) for array in arrays)


def repeated_probs_labels(probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None, *,
                          metric: str) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """:func:`check_probs_labels`, then with weights the rows repeated (:func:`repeat_rows`)."""
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    return (probs, labels) if weights is None else repeat_rows(weights, probs, labels, metric=metric)
