"""Reading prediction tables in record batches: sources, column plans, the split filter, the engine choice.

What every engine of :func:`calib_core.engines.evaluate.evaluate` shares
before any statistics are computed:

* :func:`resolve_files` -- a CSV/TSV/Parquet file, a folder, a glob pattern
  or a list of them (or one NPZ/NPY file) -> the data files, in a
  reproducible order;
* :class:`ColumnPlan` -- the columns, found once on the first batch with
  the rules of :func:`calib_core.load_predictions` (label column by its
  name, class columns by a shared prefix such as ``p_``, ``prob_`` or
  ``logit_``, logits turned into probabilities with a softmax), then applied
  to every later batch and file with the same columns, classes and input
  kind: pyarrow record batches (stream), pandas partitions (Dask), Arrow
  batches of Spark partitions;
* :meth:`ColumnPlan.split_rows` -- the one split filter (:func:`calib_core.io.columns.split_mask`)
  (the rows whose ``split`` value is the one asked for), used by every
  engine and by the command line;
* :class:`ColumnBatch` and :func:`add_batch` -- the rows of one batch,
  class-major and checked, added block by block to any statistics object
  of :mod:`calib_core.engines.stats`, :mod:`~calib_core.engines.grouped` or
  :mod:`~calib_core.engines.streaming`;
* ``_Source`` / ``_open_source`` -- the resolved input and its batches,
  read one batch ahead in a thread;
* :func:`choose_engine` / :func:`auto_engine` -- the one rule for
  ``engine="auto"`` (used by :func:`~calib_core.engines.evaluate.evaluate`
  and by ``calib-core report``).
"""
from __future__ import annotations

import glob
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.engines.grouped import GroupedStats
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.weighted import check_batch_weights
from calib_core.io.columns import group_text, split_mask, table_parts
from calib_core.io.formats import ARRAY_FORMATS, TABLE_FORMATS, Table, format_of, plain_row_label, sniff_csv_file
from calib_core.io.interpret import binary_class_names, holds_class_zero, interpret_scores, labels_to_indices, round_off
from calib_core.io.limits import Decoded, parquet_over_limits
from calib_core.io.loading import load_predictions
from calib_core.io.readers import check_duplicates
from calib_core.validation import CalibrationInputError, check_choice, check_probs_columns, softmax

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_ROWS",
    "ENGINES",
    "MEMORY_ENGINE_MAX_BYTES",
    "ColumnBatch",
    "ColumnPlan",
    "add_batch",
    "auto_engine",
    "choose_engine",
    "resolve_files",
]

#: Rows per record batch of the streaming engine when none is given: about this many bytes of
#: class values per batch (786,432 rows for 10 float64 classes, 8,192 for 1,000).
DEFAULT_BATCH_BYTES = 64 << 20

#: Rows per record batch for ``batch_rows=None`` with 10 classes (see :data:`DEFAULT_BATCH_BYTES`).
DEFAULT_BATCH_ROWS = None

#: Rows per slice when a batch is added to the statistics of the later passes (exact adaptive
#: bins, KS), so their temporaries stay in the CPU cache.
_SLICE_ROWS = 16384

#: Engines :func:`evaluate` offers.
ENGINES = ("memory", "stream", "dask")

#: Inputs larger than this (bytes on disk) are streamed when no engine is chosen (``engine="auto"``).
MEMORY_ENGINE_MAX_BYTES = 200_000_000

_GLOB_CHARS = set("*?[")

Progress = Callable[[int, Union[int, None], int], None]
SourceLike = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def resolve_files(source: SourceLike) -> list[Path]:
    """The data files of a file, a folder, a glob pattern or a list of them.

    Folders contribute their CSV/TSV/Parquet files (not recursively; names
    starting with ``.`` or ``_``, such as ``_SUCCESS`` or ``_metadata``, are
    skipped); glob patterns may use ``**``. The result is sorted within each
    entry, so the row order is reproducible.

    Raises
    ------
    CalibrationInputError
        A path that does not exist, a folder or pattern without data files,
        or a file of an unsupported format.
    """
    entries = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not entries:
        raise CalibrationInputError("`source` is an empty list; give a file, a folder or a glob pattern.")
    files: list[Path] = []
    for entry in entries:
        if not isinstance(entry, (str, os.PathLike)):
            raise CalibrationInputError(f"`source` entries must be paths, got {type(entry).__name__}.")
        text = os.fspath(entry)
        path = Path(text)
        if path.is_dir():
            found = sorted(p for p in path.iterdir()
                           if p.is_file() and not p.name.startswith((".", "_")) and format_of(p) in TABLE_FORMATS)
            if not found:
                raise CalibrationInputError(f"folder {text!r} holds no CSV, TSV or Parquet files.")
            files.extend(found)
        elif path.is_file():
            if format_of(path) is None:
                raise CalibrationInputError(
                    f"unknown file format of {path.name!r}; supported are .csv, .tsv, .txt, .parquet, .npz and .npy."
                )
            files.append(path)
        elif _GLOB_CHARS & set(text):
            found = sorted(Path(p) for p in glob.glob(text, recursive=True)
                           if Path(p).is_file() and not Path(p).name.startswith((".", "_")) and format_of(Path(p)) is not None)
            if not found:
                raise CalibrationInputError(f"no CSV, TSV or Parquet files match {text!r}.")
            files.extend(found)
        else:
            raise CalibrationInputError(f"file not found: {text!r}.")
    formats = {format_of(p) for p in files}
    if len(files) > 1 and formats & set(ARRAY_FORMATS):
        raise CalibrationInputError("NPZ/NPY files can only be evaluated one at a time; convert them to Parquet.")
    return files


def _schema_names(path: Path) -> list[str]:
    """Column names of a file, without reading its rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fmt = format_of(path)
    if fmt == "parquet":
        try:
            return [str(name).strip() for name in pq.ParquetFile(path).schema_arrow.names]
        except (pa.ArrowException, OSError) as exc:
            raise CalibrationInputError(f"could not read {path.name!r} as Parquet ({_one_line(exc)}); the file may be damaged.") from exc
    return sniff_csv_file(path).header


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


def _file_bytes(files: Sequence[Path]) -> int:
    return sum(p.stat().st_size for p in files)


# ---------------------------------------------------------------------------
# Columns: found once, applied to every batch
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnPlan:
    """How the rows of every batch become ``(probs, labels)``; found on the first batch.

    Attributes
    ----------
    label_column : str
    class_columns : tuple of str
        One column per class, or one score column of a binary problem.
    class_names : tuple of str
    input_kind : {"probabilities", "logits"}
    split_column : str or None
    index_labels : bool
        The labels are the class indices themselves (fast path).
    warnings : tuple of str
        What the loader's rules assumed on the first batch.
    group_column : str or None
        The column whose values are the groups (``evaluate(..., group_column=)``).
    weight_column : str or None
        The column of row weights (``evaluate(..., weight_column=)``; never guessed).
    """

    label_column: str
    class_columns: tuple[str, ...]
    class_names: tuple[str, ...]
    input_kind: str
    split_column: str | None
    index_labels: bool
    warnings: tuple[str, ...] = ()
    group_column: str | None = None
    weight_column: str | None = None

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def columns(self) -> list[str]:
        """The columns to read."""
        names = [self.label_column, *self.class_columns]
        names += [self.split_column] if self.split_column else []
        names += [self.group_column] if self.group_column and self.group_column not in names else []
        return names + ([self.weight_column] if self.weight_column and self.weight_column not in names else [])

    @classmethod
    def detect(cls, frame: pd.DataFrame, *, display: str, label_column: str | None = None,
               input_kind: str = "auto", group_column: str | None = None,
               weight_column: str | None = None) -> "ColumnPlan":
        """Apply the rules of :func:`calib_core.load_predictions` to a first batch."""
        notes: list[str] = []
        if weight_column is not None:
            # The loader's rules find the weight column by its name; its values are checked batch by batch
            # (ColumnBatch.check), since a first batch may weigh 0 in every row while the table does not.
            wanted = str(weight_column).strip().lower()
            frame = frame.assign(**{str(c): 1.0 for c in frame.columns
                                    if c == weight_column or str(c).lower() == wanted})
        parts = table_parts(Table(frame=frame, row_label=plain_row_label), display=display,

                            label_column=label_column, class_columns=None, score_column=None,
                            split_column="split", notes=notes, group_column=group_column,
                            weight_column=weight_column)
        probs, logits = interpret_scores(parts, input_kind, False, notes)
        n_classes = probs.shape[1]
        class_names = parts.class_names
        if parts.scores.shape[1] == 1:
            class_names = binary_class_names(parts, notes)
        labels, class_names = labels_to_indices(parts, n_classes, class_names, notes)
        names = tuple(str(c) for c in class_names)
        raw = np.asarray(parts.raw_labels)
        # (One score column named for class 0 holds P(class 0): the loader's rules, not the fast path, read it.)
        index_labels = raw.dtype.kind in "iu" and names == tuple(str(k) for k in range(n_classes)) \
            and not holds_class_zero(parts)
        split_column = None
        lower = {str(c).lower(): str(c) for c in frame.columns}
        if "split" in lower:
            split_column = lower["split"]
        return cls(label_column=str(parts.label_name), class_columns=tuple(str(c) for c in parts.score_names),
                   class_names=names, input_kind="logits" if logits is not None else "probabilities",
                   split_column=split_column, index_labels=bool(index_labels),
                   warnings=tuple(n for n in notes if not n.startswith("__")
                                  and "have no value in the group column" not in n),
                   group_column=None if group_column is None else str(parts.group_name),
                   weight_column=None if weight_column is None else str(parts.weight_name))

    def _weights_of(self, frame: pd.DataFrame) -> NDArray[np.float64] | None:
        """The weight column of a (split-filtered) frame as floats (not a number: NaN, refused by
        :meth:`ColumnBatch.check` with its row)."""
        if self.weight_column is None:
            return None
        # As the loader reads it (calib_core.io.columns): a cell that is not a number becomes NaN, refused.
        return pd.to_numeric(frame[self.weight_column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)

    def _filters_frame(self) -> bool:
        """Whether the split filter must be applied to the frame itself (group or weight values follow the rows)."""
        return self.group_column is not None or self.weight_column is not None

    def _groups_of(self, frame: pd.DataFrame) -> NDArray[Any] | None:
        """The group column of a (split-filtered) frame as text, as :attr:`calib_core.Predictions.groups`."""
        if self.group_column is None:
            return None
        return group_text(frame[self.group_column].reset_index(drop=True))[0]

    def from_frame(self, frame: pd.DataFrame, *, first_row: int = 0, display: str = "the data",
                   split: str | None = None) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """``(probs, labels)`` of a pandas frame (a batch or a Dask partition)."""
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise CalibrationInputError(
                f"{display} lacks the column(s) {', '.join(map(repr, missing))} that the first file has "
                "(schema mismatch between files)."
            )
        if split is not None:
            frame = self.split_rows(frame, split, display)
        if frame.shape[0] == 0:
            return np.empty((0, self.n_classes)), np.empty(0, dtype=np.intp)
        if self.index_labels and all(frame[c].dtype.kind == "f" for c in self.class_columns) \
                and frame[self.label_column].dtype.kind in "iu":
            scores = frame[list(self.class_columns)].to_numpy(dtype=np.float64)
            return self._to_probs(scores, display, first_row), frame[self.label_column].to_numpy(dtype=np.intp)
        notes: list[str] = []

        def row_label(i: int) -> str:
            return f"row {first_row + i + 1}"

        parts = table_parts(Table(frame=frame.reset_index(drop=True), row_label=row_label),
                            display=display, label_column=self.label_column,
                            class_columns=list(self.class_columns), score_column=None,
                            split_column=None, notes=notes)
        probs, _ = interpret_scores(parts, self.input_kind, False, notes)
        labels, _ = labels_to_indices(parts, self.n_classes, list(self.class_names), notes)
        return probs, labels

    def split_rows(self, rows: Any, split: str, display: str) -> Any:
        """The rows of a pandas frame or a :class:`pyarrow.RecordBatch` whose split column holds ``split``.

        Raises
        ------
        CalibrationInputError
            The plan has no split column.
        """
        if self.split_column is None:
            raise CalibrationInputError(f"split {split!r} requested but {display} has no split column.")
        if isinstance(rows, pd.DataFrame):
            return rows[split_mask(rows[self.split_column], split)]
        return rows.filter(split_mask(rows.column(self.split_column), split))

    def _to_probs(self, scores: NDArray[np.float64], display: str, first_row: int) -> NDArray[np.float64]:
        if not np.isfinite(scores).all():
            row = int(np.flatnonzero(~np.isfinite(scores).all(axis=1))[0])
            raise CalibrationInputError(
                f"{display}: row {first_row + row + 1} has a missing, NaN or infinite class value; "
                "every probability or logit must be a finite number."
            )
        if scores.shape[1] == 1:
            if self.input_kind == "logits":
                return softmax(np.column_stack([np.zeros(scores.shape[0]), scores[:, 0]]))
            return np.column_stack([1.0 - scores[:, 0], scores[:, 0]])
        return softmax(scores) if self.input_kind == "logits" else scores

    def columns_of_frame(self, frame: pd.DataFrame, *, first_row: int = 0, display: str = "the data",
                         split: str | None = None) -> "ColumnBatch":
        """The rows of a pandas frame (a Dask partition), class-major (checked by :meth:`ColumnBatch.check`)."""
        if split is None and self.index_labels and self.input_kind == "probabilities" \
                and len(self.class_columns) == self.n_classes and all(c in frame.columns and frame[c].dtype == np.float64 for c in self.class_columns) \
                and self.label_column in frame.columns and frame[self.label_column].dtype.kind in "iu" \
                and (self.group_column is None or self.group_column in frame.columns) \
                and (self.weight_column is None or self.weight_column in frame.columns):
            columns = [frame[c].to_numpy() for c in self.class_columns]
            return ColumnBatch(columns, frame[self.label_column].to_numpy().astype(np.intp, copy=False),
                               first_row, display, groups=self._groups_of(frame), weights=self._weights_of(frame))
        if split is not None and self._filters_frame() and all(c in frame.columns for c in self.columns):
            frame = self.split_rows(frame, split, display)
            split = None
        probs, labels = self.from_frame(frame, first_row=first_row, display=display, split=split)
        return ColumnBatch(list(probs.T), labels, first_row, display, groups=self._groups_of(frame),
                           weights=self._weights_of(frame))

    def columns_of_batch(self, batch: Any, *, first_row: int = 0, display: str = "the data",
                         split: str | None = None) -> "ColumnBatch":
        """The rows of a :class:`pyarrow.RecordBatch`, class-major, without copying numeric columns.

        Float class columns with integer class-index labels go straight from
        Arrow's buffers; anything else (class names as labels, logits, other
        types) takes the loader's rules through pandas.
        """
        import pyarrow as pa

        names = batch.schema.names
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise CalibrationInputError(
                f"{display} lacks the column(s) {', '.join(map(repr, missing))} that the first file has "
                "(schema mismatch between files)."
            )
        fast = self.index_labels and self.input_kind == "probabilities" and len(self.class_columns) == self.n_classes \
            and pa.types.is_integer(batch.schema.field(self.label_column).type) \
            and all(pa.types.is_float64(batch.schema.field(c).type) for c in self.class_columns)
        if not fast:
            frame = batch.select(self.columns).to_pandas()
            if split is not None and self._filters_frame():
                frame, split = self.split_rows(frame, split, display), None
            probs, labels = self.from_frame(frame, first_row=first_row, display=display, split=split)
            return ColumnBatch(list(probs.T), labels, first_row, display, groups=self._groups_of(frame),
                               weights=self._weights_of(frame))
        if split is not None:
            batch = self.split_rows(batch, split, display)
        label = batch.column(self.label_column)
        if label.null_count:
            row = int(np.flatnonzero(label.is_null().to_numpy(zero_copy_only=False))[0])
            raise CalibrationInputError(f"{display}: the label is missing in row {first_row + row + 1}.")
        # Without nulls, float64 columns are zero-copy views of Arrow's buffers (nulls become NaN: caught later).
        columns = [batch.column(c).to_numpy(zero_copy_only=False) for c in self.class_columns]
        labels = label.to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
        groups = None if self.group_column is None else \
            self._groups_of(pa.table({self.group_column: batch.column(self.group_column)}).to_pandas())
        weights = None if self.weight_column is None else \
            self._weights_of(pa.table({self.weight_column: batch.column(self.weight_column)}).to_pandas())
        return ColumnBatch(columns, labels, first_row, display, groups=groups, weights=weights)


@dataclass(frozen=True)
class ColumnBatch:
    """Rows of one record batch or partition, class-major: what the engines add to the statistics.

    Attributes
    ----------
    columns : list of ndarray
        K float64 arrays of length n, one per class (views of Arrow's or
        pandas' buffers where possible).
    labels : ndarray of shape (n,), intp
        Class indices.
    first_row : int
        Number of the batch's first row in its file (0-based).
    display : str
        Where the rows come from, for error messages (``"file 'a.parquet'"``).
    checked : bool
        Whether :meth:`check` has passed (values and label range).
    groups : ndarray of shape (n,) or None
        The group of each row as text, when a group column is read.
    weights : ndarray of shape (n,) or None
        The weight of each row, when a weight column is read (checked by
        :meth:`check`: finite, ``>= 0``).
    """

    columns: list[NDArray[np.float64]]
    labels: NDArray[np.intp]
    first_row: int
    display: str
    checked: bool = False
    groups: NDArray[Any] | None = None
    weights: NDArray[np.float64] | None = None

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    def check(self) -> "ColumnBatch":
        """This batch with every value and label checked by the shared validator.

        The streaming engine calls it in its read-ahead thread, so the check
        runs while the previous batch is added.

        Raises
        ------
        CalibrationInputError
            Naming the file and the row (counted from 1, as in the file).
        """
        if self.checked or self.n_rows == 0:
            return ColumnBatch(self.columns, self.labels, self.first_row, self.display, True, self.groups, self.weights)
        if self.weights is not None:
            check_batch_weights(self.weights, "the weight column", self.first_row, self.display)
        columns = self.columns
        try:
            _, labels = check_probs_columns(columns, self.labels, row_offset=self.first_row + 1)
            error = None
        except CalibrationInputError as exc:
            error = exc
        # Round-off outside [0, 1] (1 - p = -2.2e-16, 1 + 1e-10) is read as 0 or 1, as the loader does (one
        # tolerance); above 1 the check above lets it through in a row summing to 1, so the maximum is looked at.
        if error is not None or any(float(c.max()) > 1.0 for c in columns):
            rounded = [round_off(c) for c in columns]
            if not any(r is not None for r in rounded):
                raise CalibrationInputError(f"{self.display}: {error}") from None
            columns = [c if r is None else r[0] for c, r in zip(columns, rounded)]
            try:
                _, labels = check_probs_columns(columns, self.labels, row_offset=self.first_row + 1)
            except CalibrationInputError as again:
                raise CalibrationInputError(f"{self.display}: {again}") from None
        return ColumnBatch(columns, labels, self.first_row, self.display, True, self.groups, self.weights)

    def block(self, start: int, stop: int) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Rows ``start:stop`` of a checked batch as a ``(K, m)`` array and labels."""
        if not self.checked:
            raise ValueError("ColumnBatch.block needs a checked batch (call check() first).")
        return np.stack([column[start:stop] for column in self.columns]), self.labels[start:stop]


def add_batch(stats: Any, batch: ColumnBatch) -> None:
    """Add a :class:`ColumnBatch` to any statistics object of the engines, block by block.

    Every engine adds its batches this way: the streaming engine, Dask and
    Spark tasks, and the later passes of exact adaptive bins.
    """
    batch = batch.check()
    if batch.weights is not None and isinstance(stats, GroupedStats) and stats.overall.weighted:
        if batch.groups is None:
            raise CalibrationInputError(f"{batch.display}: per-group statistics need the group column.")
        if batch.n_rows:
            stats.add_columns([np.asarray(c, dtype=np.float64) for c in batch.columns], batch.labels, batch.groups,
                              batch.weights)
        return
    if batch.weights is not None:
        if not isinstance(stats, CalibrationStats) or not stats.weighted:
            raise CalibrationInputError(
                f"{type(stats).__name__} takes no row weights: with a weight column the streaming engines compute "
                "the uniform-bin metrics only (docs/weights.md).")
        if batch.n_rows:
            stats._add_weighted(batch.columns, batch.labels, batch.weights)
        return
    if isinstance(stats, GroupedStats):
        if batch.groups is None:
            raise CalibrationInputError(f"{batch.display}: per-group statistics need the group column.")
        if batch.n_rows:
            stats.add_columns([np.asarray(c, dtype=np.float64) for c in batch.columns], batch.labels, batch.groups)
        return
    if isinstance(stats, CalibrationStats):
        stats._add_class_major(batch.columns, batch.labels)
        return
    for start in range(0, batch.n_rows, _SLICE_ROWS):
        values, labels = batch.block(start, start + _SLICE_ROWS)
        stats._add_checked(values.T, labels)


# ---------------------------------------------------------------------------
# Reading batches
# ---------------------------------------------------------------------------

def _parquet_batches(path: Path, columns: list[str] | None, batch_rows: int) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # Without pre-buffering and one row group at a time, Arrow holds one row group, not the file.
        parquet = pq.ParquetFile(path, pre_buffer=False)
        for group in range(parquet.num_row_groups):
            yield from parquet.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise CalibrationInputError(f"could not read {path.name!r} as Parquet ({_one_line(exc)}); the file may be damaged.") from exc


def _csv_batches(path: Path, columns: list[str] | None, batch_rows: int) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    dialect = sniff_csv_file(path)
    header = dialect.header
    check_duplicates(header, f"file {path.name!r}")
    row_bytes = max(16, 12 * len(header))
    block = int(min(max(batch_rows * row_bytes, 1 << 16), 1 << 28))
    try:
        reader = pacsv.open_csv(
            path, read_options=pacsv.ReadOptions(block_size=block, column_names=header, skip_rows=1),
            parse_options=pacsv.ParseOptions(delimiter=dialect.delimiter),
            convert_options=pacsv.ConvertOptions(include_columns=columns or [], strings_can_be_null=True,
                                                 quoted_strings_can_be_null=True,
                                                 decimal_point=dialect.decimal))
        for batch in reader:
            for start in range(0, batch.num_rows, batch_rows):
                yield batch.slice(start, batch_rows)
    except StopIteration:
        return
    except (pa.ArrowException, OSError) as exc:
        raise CalibrationInputError(f"could not read {path.name!r} as a delimited table ({_one_line(exc)}).") from exc


def _array_batches(path: Path, batch_rows: int, label_column: str | None, input_kind: str) -> Iterator[tuple[NDArray, NDArray]]:
    predictions = load_predictions(path, label_column=label_column, input_kind=input_kind, max_bytes=None,
                                   max_rows=None, max_cells=None)
    for start in range(0, predictions.n_samples, batch_rows):
        yield predictions.probs[start:start + batch_rows], predictions.labels[start:start + batch_rows]


def _record_batches(path: Path, columns: list[str] | None, batch_rows: int) -> Iterator[Any]:
    if format_of(path) == "parquet":
        return _parquet_batches(path, columns, batch_rows)
    return _csv_batches(path, columns, batch_rows)


def _total_rows(files: Sequence[Path]) -> int | None:
    import pyarrow.parquet as pq

    if any(format_of(p) != "parquet" for p in files):
        return None
    try:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    except Exception:  # a damaged file is reported with its name when it is read
        return None


_DONE = object()


#: Record batches the read-ahead thread may hold ready (each about DEFAULT_BATCH_BYTES).
_READ_AHEAD = 2


def _read_ahead(batches: Iterator[Any], depth: int = _READ_AHEAD) -> Iterator[Any]:
    """Yield from ``batches`` while a background thread already reads up to ``depth`` items ahead."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        # One thread runs the next() calls in order, so the futures complete in order.
        pending = deque(pool.submit(next, batches, _DONE) for _ in range(depth))
        while True:
            item = pending.popleft().result()
            if item is _DONE:
                for future in pending:
                    future.cancel()
                return
            pending.append(pool.submit(next, batches, _DONE))
            yield item


@dataclass
class _Source:
    """The resolved input: files, their column plan and how to read them in batches."""

    files: list[Path]
    plan: ColumnPlan | None
    batch_rows: int
    split: str | None
    label_column: str | None
    input_kind: str
    arrays: bool = False  # one NPZ/NPY file, read through load_predictions

    @property
    def n_classes(self) -> int:
        if self.plan is not None:
            return self.plan.n_classes
        first = next(_array_batches(self.files[0], 1, self.label_column, self.input_kind))
        return first[0].shape[1]

    def batches(self) -> Iterator[ColumnBatch]:
        """Every record batch of every file, class-major; table files' batches come checked (read-ahead thread)."""
        if self.arrays:
            if self.split is not None:
                raise CalibrationInputError("`split` is supported for CSV and Parquet tables only.")
            first_row = 0
            for probs, labels in _array_batches(self.files[0], self.batch_rows, self.label_column, self.input_kind):
                yield ColumnBatch(list(probs.T), labels, first_row, f"file {self.files[0].name!r}")
                first_row += labels.shape[0]
            return
        assert self.plan is not None
        for path in self.files:
            # The next record batch is read and converted (pyarrow releases the GIL) while this one is added.
            yield from _read_ahead(self._file_batches(path))

    def _file_batches(self, path: Path) -> Iterator[ColumnBatch]:
        assert self.plan is not None
        first_row = 0
        for batch in _record_batches(path, self.plan.columns, self.batch_rows):
            # Checked here, in the read-ahead thread, while the previous batch is added.
            yield self.plan.columns_of_batch(batch, first_row=first_row, display=f"file {path.name!r}",
                                             split=self.split).check()
            first_row += batch.num_rows


def _open_source(source: SourceLike, *, batch_rows: int, label_column: str | None, input_kind: str,
                 split: str | None, group_column: str | None = None, weight_column: str | None = None) -> _Source:
    files = resolve_files(source)
    if format_of(files[0]) in ARRAY_FORMATS:
        if weight_column is not None:
            raise CalibrationInputError("`weight_column` needs a CSV or Parquet table; for NPZ/NPY arrays pass "
                                        "sample_weight= to the in-memory metrics.")
        if group_column is not None:
            raise CalibrationInputError("`group_column` needs a CSV or Parquet table; NPZ/NPY files have no "
                                        "group column (use calib_core.by_group on the arrays).")
        return _Source(files, None, batch_rows, split, label_column, input_kind, arrays=True)
    names = _schema_names(files[0])
    for path in files[1:]:
        other = _schema_names(path)
        if set(other) != set(names):
            extra = sorted(set(other) - set(names))
            lacking = sorted(set(names) - set(other))
            detail = "; ".join(part for part in (
                f"extra column(s) {', '.join(map(repr, extra))}" if extra else "",
                f"missing column(s) {', '.join(map(repr, lacking))}" if lacking else "") if part)
            raise CalibrationInputError(
                f"schema mismatch: {path.name!r} has other columns than {files[0].name!r} ({detail}); "
                "every file of a folder must have the same columns."
            )
    first = None
    for path in files:
        for batch in _record_batches(path, None, min(batch_rows, 65536)):
            if batch.num_rows:
                first = (path, batch)
                break
        if first is not None:
            break
    if first is None:
        raise CalibrationInputError(
            f"{'the files hold' if len(files) > 1 else f'file {files[0].name!r} has'} a header but no data rows."
        )
    display = f"file {first[0].name!r}"
    try:
        plan = ColumnPlan.detect(first[1].to_pandas(), display=display, label_column=label_column,
                                 input_kind=input_kind, group_column=group_column, weight_column=weight_column)
    except CalibrationInputError as exc:
        if first[0].name in str(exc):
            raise
        raise CalibrationInputError(f"{display}: {exc}") from None  # the loader's rules name the row only
    return _Source(files, plan, batch_rows, split, label_column, input_kind)


def auto_engine(files: Sequence[Path]) -> str:
    """The engine ``engine="auto"`` stands for, given the resolved files (the one rule).

    ``"stream"`` for several files (a folder, a glob or a list: the memory
    engine would hold them all at once), for a CSV/Parquet table of more
    than :data:`MEMORY_ENGINE_MAX_BYTES` bytes on disk, and for a Parquet
    file whose metadata declares more rows (or rows x columns) than the
    loader holds in memory (:data:`~calib_core.io.formats.MAX_ROWS`,
    :data:`~calib_core.io.formats.MAX_CELLS`, nested columns counted by
    every element as the loader counts them; a small file of constant
    columns can hold millions of rows); else ``"memory"``.
    One NPZ/NPY file is ``"memory"`` at any size: every engine loads it
    whole (``load_predictions``), so streaming it saves no memory.
    :func:`~calib_core.engines.evaluate.evaluate` and ``calib-core report``
    (through :func:`choose_engine`) both decide by this rule.
    """
    if len(files) > 1:
        return "stream"
    if format_of(files[0]) in TABLE_FORMATS and _file_bytes(files) > MEMORY_ENGINE_MAX_BYTES:
        return "stream"
    if format_of(files[0]) == "parquet" and _over_memory_limits(files[0]):
        return "stream"
    return "memory"


def _over_memory_limits(path: Path) -> bool:
    """Whether a Parquet file's metadata declares more than the loader's default limits, judged by the
    loader's own rule (:func:`~calib_core.io.limits.parquet_over_limits`: a nested column counts every
    element); False if unreadable: the loader then says why."""
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as parquet:
            return parquet_over_limits(parquet.metadata, len(parquet.schema_arrow.names), Decoded())
    except Exception:  # a damaged file is reported by the reader that opens it
        return False


def choose_engine(source: SourceLike, engine: str = "auto") -> str:
    """The engine ``engine`` stands for on ``source``: ``"auto"`` by :func:`auto_engine`.

    A source that does not resolve to data files is left to the reader that
    reports it: folders and patterns to the streaming reader, a single
    (missing or unknown) file to the loader (``"memory"``).
    """
    engine = check_choice(engine, "engine", ENGINES + ("auto",))
    if engine != "auto":
        return engine
    try:
        files = resolve_files(source)
    except CalibrationInputError:
        # Folders and patterns are for the streaming reader; a single bad file the loader reports itself.
        text = os.fspath(source) if isinstance(source, (str, os.PathLike)) else ""
        return "stream" if not text or Path(text).is_dir() or _GLOB_CHARS & set(text) else "memory"
    return auto_engine(files)
