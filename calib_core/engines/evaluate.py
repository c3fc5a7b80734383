"""Evaluate prediction tables larger than memory: CSV or Parquet files, folders or globs.

:func:`evaluate` reads a table in record batches with pyarrow, feeds them
to the mergeable statistics of :mod:`calib_core.engines.streaming` and returns the
same numbers the in-memory metrics give (to float64 round-off). Memory is
bounded by the batch size, not by the table. Three engines:

* ``"memory"``: read everything, then call the in-memory metrics (the
  reference);
* ``"stream"``: one Python process, batch after batch;
* ``"dask"``: ``dask.dataframe`` partitions on a ``dask.distributed``
  cluster (see :mod:`calib_core.engines.dask_engine`).

The columns are found once, on the first batch, with the rules of
:func:`calib_core.load_predictions` (label column by its name, class
columns by a shared prefix such as ``p_``, ``prob_`` or ``logit_``, logits
turned into probabilities with a softmax), and every later batch and file
is read with the same columns, classes and input kind.
"""
from __future__ import annotations

import csv
import glob
import gzip
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io import loader as _io
from calib_core.engines.streaming import (
    DEFAULT_SKETCH_CAPACITY,
    MAX_STREAM_GROUPS,
    STREAM_METRICS,
    CalibrationStats,
    GroupedStats,
    StreamResult,
    stream_metrics,
)
from calib_core.validation import CalibrationInputError, check_choice, check_probs_columns, softmax

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_ROWS",
    "ENGINES",
    "MEMORY_ENGINE_MAX_BYTES",
    "CalibrationSummary",
    "ColumnPlan",
    "Evaluation",
    "GroupEvaluation",
    "SUMMARY_SWEEP_BINS",
    "choose_engine",
    "evaluate",
    "evaluate_arrays",
    "load_summary",
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

#: Uniform bin counts whose sums ``calib-core report --json`` keeps for the sensitivity view.
SUMMARY_SWEEP_BINS = (5, 10, 15, 20, 25, 30, 40, 50)

#: Inputs larger than this (bytes on disk) are streamed when no engine is chosen (``engine="auto"``).
MEMORY_ENGINE_MAX_BYTES = 200_000_000

_TABLE_FORMATS = {"csv": "csv", "tsv": "csv", "txt": "csv", "tab": "csv",
                  "parquet": "parquet", "pq": "parquet", "parq": "parquet"}
_ARRAY_FORMATS = {"npz": "npz", "npy": "npy"}
_GLOB_CHARS = set("*?[")

Progress = Callable[[int, Union[int, None], int], None]
SourceLike = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def _format_of(path: Path) -> str | None:
    suffixes = [s.lower().lstrip(".") for s in path.suffixes]
    if suffixes and suffixes[-1] == "gz":
        suffixes = suffixes[:-1]
    if not suffixes:
        return None
    return _TABLE_FORMATS.get(suffixes[-1]) or _ARRAY_FORMATS.get(suffixes[-1])


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
                           if p.is_file() and not p.name.startswith((".", "_")) and _format_of(p) in _TABLE_FORMATS.values())
            if not found:
                raise CalibrationInputError(f"folder {text!r} holds no CSV, TSV or Parquet files.")
            files.extend(found)
        elif path.is_file():
            if _format_of(path) is None:
                raise CalibrationInputError(
                    f"unknown file format of {path.name!r}; supported are .csv, .tsv, .txt, .parquet, .npz and .npy."
                )
            files.append(path)
        elif _GLOB_CHARS & set(text):
            found = sorted(Path(p) for p in glob.glob(text, recursive=True)
                           if Path(p).is_file() and not Path(p).name.startswith((".", "_")) and _format_of(Path(p)) is not None)
            if not found:
                raise CalibrationInputError(f"no CSV, TSV or Parquet files match {text!r}.")
            files.extend(found)
        else:
            raise CalibrationInputError(f"file not found: {text!r}.")
    formats = {_format_of(p) for p in files}
    if len(files) > 1 and formats & set(_ARRAY_FORMATS.values()):
        raise CalibrationInputError("NPZ/NPY files can only be evaluated one at a time; convert them to Parquet.")
    return files


def _sniff_delimiter(path: Path) -> str:
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
            head = handle.readline()
    except OSError as exc:
        raise CalibrationInputError(f"cannot read {path.name!r}: {exc.strerror or exc}.") from exc
    if not head.strip():
        raise CalibrationInputError(f"file {path.name!r} is empty; it needs a header row such as 'label,p_0,p_1'.")
    preferred = "\t" if _format_of(path) == "csv" and path.suffix.lower() in (".tsv", ".tab") else ","
    counts = {d: len(next(csv.reader([head], delimiter=d))) for d in (preferred, ",", "\t", ";")}
    return max(counts, key=lambda d: (counts[d], d == preferred))


def _schema_names(path: Path) -> list[str]:
    """Column names of a file, without reading its rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fmt = _format_of(path)
    if fmt == "parquet":
        try:
            return [str(name).strip() for name in pq.ParquetFile(path).schema_arrow.names]
        except (pa.ArrowException, OSError) as exc:
            raise CalibrationInputError(f"could not read {path.name!r} as Parquet ({_one_line(exc)}); the file may be damaged.") from exc
    delimiter = _sniff_delimiter(path)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as handle:
        return [c.strip() for c in next(csv.reader([handle.readline()], delimiter=delimiter))]


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
    """

    label_column: str
    class_columns: tuple[str, ...]
    class_names: tuple[str, ...]
    input_kind: str
    split_column: str | None
    index_labels: bool
    warnings: tuple[str, ...] = ()
    group_column: str | None = None

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def columns(self) -> list[str]:
        """The columns to read."""
        names = [self.label_column, *self.class_columns]
        names += [self.split_column] if self.split_column else []
        return names + ([self.group_column] if self.group_column and self.group_column not in names else [])

    @classmethod
    def detect(cls, frame: pd.DataFrame, *, display: str, label_column: str | None = None,
               input_kind: str = "auto", group_column: str | None = None) -> "ColumnPlan":
        """Apply the rules of :func:`calib_core.load_predictions` to a first batch."""
        notes: list[str] = []
        parts = _io._table_parts(_io._Table(frame=frame, row_label=_io._plain_row_label), display=display,
                                 label_column=label_column, class_columns=None, score_column=None,
                                 split_column="split", notes=notes, group_column=group_column)
        probs, logits = _io._interpret_scores(parts, input_kind, False, notes)
        n_classes = probs.shape[1]
        class_names = parts.class_names
        if parts.scores.shape[1] == 1:
            class_names = _io._binary_class_names(parts, notes)
        labels, class_names = _io._labels_to_indices(parts, n_classes, class_names, notes)
        names = tuple(str(c) for c in class_names)
        raw = np.asarray(parts.raw_labels)
        index_labels = raw.dtype.kind in "iu" and names == tuple(str(k) for k in range(n_classes))
        split_column = None
        lower = {str(c).lower(): str(c) for c in frame.columns}
        if "split" in lower:
            split_column = lower["split"]
        return cls(label_column=str(parts.label_name), class_columns=tuple(str(c) for c in parts.score_names),
                   class_names=names, input_kind="logits" if logits is not None else "probabilities",
                   split_column=split_column, index_labels=bool(index_labels),
                   warnings=tuple(n for n in notes if not n.startswith("__")
                                  and "have no value in the group column" not in n),
                   group_column=None if group_column is None else str(parts.group_name))

    def _groups_of(self, frame: pd.DataFrame) -> NDArray[Any] | None:
        """The group column of a (split-filtered) frame as text, as :attr:`calib_core.Predictions.groups`."""
        if self.group_column is None:
            return None
        return _io._group_text(frame[self.group_column].reset_index(drop=True))[0]

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
            frame = self._split_rows(frame, split, display)
        if frame.shape[0] == 0:
            return np.empty((0, self.n_classes)), np.empty(0, dtype=np.intp)
        if self.index_labels and all(frame[c].dtype.kind == "f" for c in self.class_columns) \
                and frame[self.label_column].dtype.kind in "iu":
            scores = frame[list(self.class_columns)].to_numpy(dtype=np.float64)
            return self._to_probs(scores, display, first_row), frame[self.label_column].to_numpy(dtype=np.intp)
        notes: list[str] = []

        def row_label(i: int) -> str:
            return f"row {first_row + i + 1}"

        parts = _io._table_parts(_io._Table(frame=frame.reset_index(drop=True), row_label=row_label),
                                 display=display, label_column=self.label_column,
                                 class_columns=list(self.class_columns), score_column=None,
                                 split_column=None, notes=notes)
        probs, _ = _io._interpret_scores(parts, self.input_kind, False, notes)
        labels, _ = _io._labels_to_indices(parts, self.n_classes, list(self.class_names), notes)
        return probs, labels

    def _split_rows(self, frame: pd.DataFrame, split: str, display: str) -> pd.DataFrame:
        if self.split_column is None:
            raise CalibrationInputError(f"split {split!r} requested but {display} has no split column.")
        values = frame[self.split_column].astype("string").str.strip()
        return frame[(values == split).fillna(False).to_numpy(dtype=bool)]

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
                and all(c in frame.columns and frame[c].dtype == np.float64 for c in self.class_columns) \
                and self.label_column in frame.columns and frame[self.label_column].dtype.kind in "iu" \
                and (self.group_column is None or self.group_column in frame.columns):
            columns = [frame[c].to_numpy() for c in self.class_columns]
            return ColumnBatch(columns, frame[self.label_column].to_numpy().astype(np.intp, copy=False),
                               first_row, display, groups=self._groups_of(frame))
        if split is not None and self.group_column is not None and self.group_column in frame.columns:
            frame = self._split_rows(frame, split, display)
            split = None
        probs, labels = self.from_frame(frame, first_row=first_row, display=display, split=split)
        return ColumnBatch(list(probs.T), labels, first_row, display, groups=self._groups_of(frame))

    def columns_of_batch(self, batch: Any, *, first_row: int = 0, display: str = "the data",
                         split: str | None = None) -> "ColumnBatch":
        """The rows of a :class:`pyarrow.RecordBatch`, class-major, without copying numeric columns.

        Float class columns with integer class-index labels go straight from
        Arrow's buffers; anything else (class names as labels, logits, other
        types) takes the loader's rules through pandas.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        names = batch.schema.names
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise CalibrationInputError(
                f"{display} lacks the column(s) {', '.join(map(repr, missing))} that the first file has "
                "(schema mismatch between files)."
            )
        fast = self.index_labels and self.input_kind == "probabilities" \
            and pa.types.is_integer(batch.schema.field(self.label_column).type) \
            and all(pa.types.is_float64(batch.schema.field(c).type) for c in self.class_columns)
        if not fast:
            frame = batch.select(self.columns).to_pandas()
            if split is not None and self.group_column is not None:
                frame, split = self._split_rows(frame, split, display), None
            probs, labels = self.from_frame(frame, first_row=first_row, display=display, split=split)
            return ColumnBatch(list(probs.T), labels, first_row, display, groups=self._groups_of(frame))
        if split is not None:
            if self.split_column is None:
                raise CalibrationInputError(f"split {split!r} requested but {display} has no split column.")
            column = pc.utf8_trim_whitespace(pc.cast(batch.column(self.split_column), pa.string()))
            batch = batch.filter(pc.fill_null(pc.equal(column, split), False))
        label = batch.column(self.label_column)
        if label.null_count:
            row = int(np.flatnonzero(label.is_null().to_numpy(zero_copy_only=False))[0])
            raise CalibrationInputError(f"{display}: the label is missing in row {first_row + row + 1}.")
        # Without nulls, float64 columns are zero-copy views of Arrow's buffers (nulls become NaN: caught later).
        columns = [batch.column(c).to_numpy(zero_copy_only=False) for c in self.class_columns]
        labels = label.to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
        groups = None if self.group_column is None else \
            self._groups_of(pa.table({self.group_column: batch.column(self.group_column)}).to_pandas())
        return ColumnBatch(columns, labels, first_row, display, groups=groups)


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
    """

    columns: list[NDArray[np.float64]]
    labels: NDArray[np.intp]
    first_row: int
    display: str
    checked: bool = False
    groups: NDArray[Any] | None = None

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
            return ColumnBatch(self.columns, self.labels, self.first_row, self.display, True, self.groups)
        try:
            _, labels = check_probs_columns(self.columns, self.labels, row_offset=self.first_row + 1)
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"{self.display}: {exc}") from None
        return ColumnBatch(self.columns, labels, self.first_row, self.display, True, self.groups)

    def block(self, start: int, stop: int, scratch: Any = None) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Rows ``start:stop`` of a checked batch as a ``(K, m)`` array (in ``scratch`` if given) and labels."""
        if not self.checked:
            raise ValueError("ColumnBatch.block needs a checked batch (call check() first).")
        parts = [column[start:stop] for column in self.columns]
        values = scratch.load(parts) if scratch is not None else np.stack(parts)
        return values, self.labels[start:stop]


def add_batch(stats: Any, batch: ColumnBatch) -> None:
    """Add a :class:`ColumnBatch` to any statistics object of :mod:`calib_core.engines.streaming`, block by block.

    Every engine adds its batches this way: the streaming engine, Dask and
    Spark tasks, and the later passes of exact adaptive bins.
    """
    batch = batch.check()
    if isinstance(stats, GroupedStats):
        if batch.groups is None:
            raise CalibrationInputError(f"{batch.display}: per-group statistics need the group column.")
        if batch.n_rows:
            stats.add_columns([np.asarray(c, dtype=np.float64) for c in batch.columns], batch.labels, batch.groups)
        return
    if isinstance(stats, CalibrationStats):
        scratch = stats._scratch_space()
        for start in range(0, batch.n_rows, stats.block_rows):
            values, labels = batch.block(start, start + stats.block_rows, scratch)
            stats._add_prepared(stats._prepare(values, labels, scratch))
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

    delimiter = _sniff_delimiter(path)
    header = _schema_names(path)
    _io._check_duplicates(header, f"file {path.name!r}")
    row_bytes = max(16, 12 * len(header))
    block = int(min(max(batch_rows * row_bytes, 1 << 16), 1 << 28))
    try:
        reader = pacsv.open_csv(
            path, read_options=pacsv.ReadOptions(block_size=block, column_names=header, skip_rows=1),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(include_columns=columns or [], strings_can_be_null=True,
                                                 quoted_strings_can_be_null=True))
        for batch in reader:
            for start in range(0, batch.num_rows, batch_rows):
                yield batch.slice(start, batch_rows)
    except StopIteration:
        return
    except (pa.ArrowException, OSError) as exc:
        raise CalibrationInputError(f"could not read {path.name!r} as a delimited table ({_one_line(exc)}).") from exc


def _array_batches(path: Path, batch_rows: int, label_column: str | None, input_kind: str) -> Iterator[tuple[NDArray, NDArray]]:
    predictions = _io.load_predictions(path, label_column=label_column, input_kind=input_kind, max_bytes=None)
    for start in range(0, predictions.n_samples, batch_rows):
        yield predictions.probs[start:start + batch_rows], predictions.labels[start:start + batch_rows]


def _record_batches(path: Path, columns: list[str] | None, batch_rows: int) -> Iterator[Any]:
    if _format_of(path) == "parquet":
        return _parquet_batches(path, columns, batch_rows)
    return _csv_batches(path, columns, batch_rows)


def _total_rows(files: Sequence[Path]) -> int | None:
    import pyarrow.parquet as pq

    if any(_format_of(p) != "parquet" for p in files):
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
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

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
                 split: str | None, group_column: str | None = None) -> _Source:
    files = resolve_files(source)
    if _format_of(files[0]) in _ARRAY_FORMATS.values():
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
                                 input_kind=input_kind, group_column=group_column)
    except CalibrationInputError as exc:
        if first[0].name in str(exc):
            raise
        raise CalibrationInputError(f"{display}: {exc}") from None  # the loader's rules name the row only
    return _Source(files, plan, batch_rows, split, label_column, input_kind)


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Evaluation:
    """Metrics of a table evaluated by :func:`evaluate`, with the statistics behind them.

    Attributes
    ----------
    metrics : dict of str to float
    n_samples, n_classes : int
    class_names : tuple of str
    input_kind : str
    files : tuple of str
    engine : str
    n_bins : int
    binning : str
    split : str or None
    exact : bool
    error_bounds : dict of str to float
    n_passes : int
    stats : CalibrationStats
        Uniform-bin sums of every class and the scalar sums (no rows).
    adaptive : dict
        Adaptive-bin sums (see :class:`calib_core.engines.streaming.StreamResult`).
    warnings : tuple of str
    groups : GroupEvaluation or None
        Per-group results with ``evaluate(..., group_column=COL)``.
    """

    metrics: dict[str, float]
    n_samples: int
    n_classes: int
    class_names: tuple[str, ...]
    input_kind: str
    files: tuple[str, ...]
    engine: str
    n_bins: int
    binning: str
    split: str | None
    exact: bool
    error_bounds: dict[str, float]
    n_passes: int
    stats: CalibrationStats
    adaptive: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    groups: "GroupEvaluation | None" = None

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (statistics, not rows); :func:`calib_core.load_summary` reads it back."""
        result = StreamResult(self.metrics, self.stats, self.adaptive, self.exact, self.error_bounds,
                              self.n_passes, self.n_bins, self.binning, self.stats.threshold)
        summary = result.summary()
        summary.update({"format": "calib_core.summary/1", "files": list(self.files), "engine": self.engine,
                        "n_samples": self.n_samples, "n_classes": self.n_classes,
                        "class_names": list(self.class_names), "input_kind": self.input_kind,
                        "split": self.split, "warnings": list(self.warnings)})
        if self.groups is not None:
            summary["groups"] = self.groups.to_dict()
        return summary


def _stream_runner(source: _Source, progress: Progress | None, total: int | None) -> Callable[[Callable[[], Any]], Any]:
    counter = {"pass": 0}

    def run_pass(factory: Callable[[], Any]) -> Any:
        counter["pass"] += 1
        stats = factory()
        done = 0
        # The read-ahead thread decodes the next record batch while this one is added.
        for batch in source.batches():
            add_batch(stats, batch)
            done += batch.n_rows
            if progress is not None:
                progress(done, total, counter["pass"])
        return stats

    return run_pass


def evaluate(source: SourceLike, *, engine: str = "stream", batch_rows: int | None = DEFAULT_BATCH_ROWS,
             scheduler: Any = None, n_bins: int = 15, binning: str = "uniform",
             metrics: Sequence[str] | None = None, exact: bool = True, threshold: float = 0.01,
             sweep_bins: Sequence[int] = (), label_column: str | None = None, input_kind: str = "auto",
             split: str | None = None, progress: Progress | None = None,
             sketch_capacity: int = DEFAULT_SKETCH_CAPACITY, group_column: str | None = None,
             max_groups: int = 50, max_distinct_groups: int = MAX_STREAM_GROUPS) -> Evaluation:
    """Calibration metrics of a CSV/Parquet table, folder or glob, without loading it whole.

    Parameters
    ----------
    source : path, glob pattern or list of them
        A CSV/TSV (optionally ``.gz``) or Parquet file, a folder of them, a
        pattern such as ``"preds/part-*.parquet"``, or one NPZ/NPY file.
    engine : {"stream", "memory", "dask", "auto"}, default "stream"
        ``"auto"`` streams inputs larger than :data:`MEMORY_ENGINE_MAX_BYTES`.
    batch_rows : int or None, default None
        Rows per record batch (stream) or per partition of CSV input (Dask);
        None gives batches of about :data:`DEFAULT_BATCH_BYTES` (64 MiB) of
        class values. Memory is about two batches plus one Parquet row
        group (as the file was written), whatever the number of rows.
    scheduler : str, distributed.Client or None
        Dask only: a scheduler address (``"tcp://host:8786"``), a client, or
        None for a local cluster with two workers.
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Bins of ECE, RMSCE, MCE and class-wise ECE.
    metrics : sequence of str, optional
        Subset of :data:`calib_core.engines.streaming.STREAM_METRICS`; default all.
    exact : bool, default True
        False computes adaptive bins and KS from one-pass sketches (see
        :func:`calib_core.engines.streaming.stream_metrics`).
    threshold : float, default 0.01
        TACE threshold.
    sweep_bins : sequence of int
        Extra uniform bin counts whose sums go into the summary.
    label_column, input_kind
        As in :func:`calib_core.load_predictions`.
    split : str, optional
        Evaluate only the rows whose ``split`` column has this value.
    progress : callable, optional
        ``progress(rows_done, rows_total_or_None, pass_number)`` after each batch.
    sketch_capacity : int
        Capacity of the quantile sketches (adaptive bins and KS).
    group_column : str, optional
        Also compute the metrics per value of this column
        (:attr:`Evaluation.groups`, a :class:`GroupEvaluation`): every engine
        keeps one mergeable :class:`~calib_core.engines.streaming.CalibrationStats`
        per group value (:class:`~calib_core.engines.streaming.GroupedStats`), in the
        same pass as the overall sums. Exact in every engine (equal to
        :func:`calib_core.by_group` on the rows to round-off): accuracy,
        Brier, NLL, SCE, and with uniform bins ECE, RMSCE, MCE, class-wise
        ECE and :meth:`GroupEvaluation.multicalibration`. ACE, TACE, KS and
        adaptive bins per group need every group's exact order statistics:
        the memory engine computes them, the stream and Dask engines report
        them in :attr:`GroupEvaluation.unavailable` with the reason.
    max_groups : int, default 50
        More groups: the ``max_groups - 1`` largest and "other" (chosen at
        the end from the exact counts, as :func:`calib_core.by_group` does).
    max_distinct_groups : int, default :data:`calib_core.engines.streaming.MAX_STREAM_GROUPS`
        Stream and Dask: distinct group values kept while reading; more
        raise :class:`CalibrationInputError`.

    Returns
    -------
    Evaluation

    Raises
    ------
    CalibrationInputError
        Bad paths, files with different columns, damaged Parquet, bad values
        (the message names the file and the row).

    Examples
    --------
    >>> result = evaluate("predictions/", engine="stream", batch_rows=100_000)  # doctest: +SKIP
    >>> result.metrics["ece"]  # doctest: +SKIP
    """
    engine = check_choice(engine, "engine", ENGINES + ("auto",))
    if batch_rows is not None and (isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer))
                                   or batch_rows < 1):
        raise CalibrationInputError(f"`batch_rows` must be a whole number >= 1 or None, got {batch_rows!r}.")
    input_kind = check_choice(input_kind, "input_kind", ("auto", "probabilities", "logits"))
    opened = _open_source(source, batch_rows=int(batch_rows or 65536), label_column=label_column,
                          input_kind=input_kind, split=split, group_column=group_column)
    if batch_rows is None:
        opened.batch_rows = max(1024, DEFAULT_BATCH_BYTES // (8 * max(opened.n_classes, 1)))
    if engine == "auto":
        engine = "stream" if _file_bytes(opened.files) > MEMORY_ENGINE_MAX_BYTES else "memory"
    wanted = list(STREAM_METRICS) if metrics is None else list(dict.fromkeys(metrics))
    for key in wanted:
        check_choice(key, "metrics", STREAM_METRICS)
    n_classes = opened.n_classes
    total = _total_rows(opened.files) if split is None else None
    options = dict(n_bins=n_bins, binning=binning, metrics=wanted, exact=exact, threshold=threshold,
                   sweep_bins=tuple(sweep_bins), sketch_capacity=sketch_capacity)
    grouped: list[GroupedStats] = []
    if group_column is not None and not (isinstance(max_groups, (int, np.integer)) and max_groups >= 2):
        raise CalibrationInputError(f"`max_groups` must be a whole number >= 2, got {max_groups!r}.")
    group_rows: dict[str, Any] = {}
    if engine == "memory":
        result = _memory_result(opened, wanted, n_classes, options, group_rows)
    elif engine == "stream":
        run_pass = _stream_runner(opened, progress, total)
        if group_column is not None:
            run_pass = _grouped_runner(run_pass, grouped, max_distinct_groups)
        result = stream_metrics(run_pass, n_classes, **options)
    else:
        from calib_core.engines.dask_engine import dask_runner

        with dask_runner(opened, scheduler=scheduler, progress=progress) as run_pass:
            if group_column is not None:
                run_pass = _grouped_runner(run_pass, grouped, max_distinct_groups)
            result = stream_metrics(run_pass, n_classes, **options)
    groups = None
    if group_column is not None:
        assert opened.plan is not None and opened.plan.group_column is not None
        groups = _group_evaluation(opened.plan.group_column, result, wanted, engine, grouped[0] if grouped else None,
                                   group_rows, int(max_groups), int(max_distinct_groups))
    plan = opened.plan
    if plan is not None:
        class_names, kind, notes = plan.class_names, plan.input_kind, plan.warnings
    else:
        predictions = _io.load_predictions(opened.files[0], label_column=label_column, input_kind=input_kind,
                                           max_bytes=None)
        class_names, kind, notes = predictions.class_names, predictions.input_kind, predictions.warnings
    return Evaluation(metrics=result.metrics, n_samples=result.stats.n_rows, n_classes=n_classes,
                      class_names=tuple(class_names), input_kind=kind, files=tuple(str(p) for p in opened.files),
                      engine=engine, n_bins=result.n_bins, binning=result.binning, split=split,
                      exact=result.exact, error_bounds=result.error_bounds, n_passes=result.n_passes,
                      stats=result.stats, adaptive=result.adaptive, warnings=tuple(notes), groups=groups)


def _grouped_stats(factory: Callable[[], Any], max_distinct: int) -> GroupedStats:
    return GroupedStats(factory(), max_distinct=max_distinct)


def _grouped_runner(run_pass: Callable[[Callable[[], Any]], Any], holder: list,
                    max_distinct: int) -> Callable[[Callable[[], Any]], Any]:
    """``run_pass`` whose first pass also keeps the per-group sums (in ``holder``); later passes unchanged."""
    from functools import partial

    def run(factory: Callable[[], Any]) -> Any:
        if holder:
            return run_pass(factory)
        grouped = run_pass(partial(_grouped_stats, factory, max_distinct))
        holder.append(grouped)
        return grouped.overall

    return run


def _memory_result(source: _Source, wanted: list[str], n_classes: int, options: dict[str, Any],
                   group_rows: dict[str, Any] | None = None) -> StreamResult:
    """Read every batch, concatenate, and compute with the in-memory metrics (the reference).

    With a group column, ``group_rows`` receives ``probs``, ``labels`` and ``groups`` (the rows).
    """
    batches = [batch.check() for batch in source.batches() if batch.n_rows]
    blocks = [batch.block(0, batch.n_rows) for batch in batches]
    if not blocks:
        raise CalibrationInputError("no rows to evaluate" + (f" with split {source.split!r}." if source.split else "."))
    probs = np.concatenate([values.T for values, _ in blocks])
    labels = np.concatenate([labels for _, labels in blocks])
    if group_rows is not None and source.plan is not None and source.plan.group_column is not None:
        group_rows.update(probs=probs, labels=labels, groups=np.concatenate([b.groups for b in batches]))
    return _arrays_result(probs, labels, wanted, options)


def _arrays_result(probs: NDArray[np.float64], labels: NDArray[np.intp], wanted: list[str],
                   options: dict[str, Any]) -> StreamResult:
    from calib_core.metrics.binned import top_label
    from calib_core.binning import bin_statistics
    from calib_core.metrics.registry import compute_metrics
    from calib_core.validation import check_probs_labels

    probs, labels = check_probs_labels(probs, labels)
    n_classes = probs.shape[1]
    n_bins, threshold = options["n_bins"], options["threshold"]
    values = compute_metrics(probs, labels, n_bins=n_bins, binning=options["binning"], keys=wanted)
    # The summary statistics of the same rows, for the JSON output.
    stats = CalibrationStats(n_classes, n_bins=n_bins, sweep_bins=options["sweep_bins"], threshold=threshold)
    stats.update(probs, labels)
    confidence, correct = top_label(probs, labels)
    from calib_core.engines.streaming import _pad_binstats, _stack_binstats

    def per_class(keep: NDArray[np.bool_] | None) -> Any:
        # One bin_statistics call per class column (the same per-class sums as the streaming passes).
        parts = []
        for k in range(n_classes):
            rows = slice(None) if keep is None else keep[:, k]
            stats = bin_statistics(probs[rows, k], labels[rows] == k, n_bins, "adaptive")
            parts.append(_pad_binstats(stats, n_bins))
        return _stack_binstats(parts)

    adaptive = {"top_label": bin_statistics(confidence, correct, n_bins, "adaptive"),
                "classwise": per_class(None), "classwise_above": per_class(probs > threshold)}
    return StreamResult({key: values[key] for key in wanted}, stats, adaptive, True, {}, 1, n_bins,
                        options["binning"], threshold)


def evaluate_arrays(probs: Any, labels: Any, *, n_bins: int = 15, binning: str = "uniform",
                    metrics: Sequence[str] | None = None, threshold: float = 0.01,
                    sweep_bins: Sequence[int] = SUMMARY_SWEEP_BINS, class_names: Sequence[str] | None = None,
                    input_kind: str = "probabilities", files: Sequence[str] = (), split: str | None = None,
                    warnings: Sequence[str] = ()) -> Evaluation:
    """:class:`Evaluation` (metrics and summary statistics) of predictions already in memory.

    The metrics are those of the in-memory functions; the statistics let
    :func:`load_summary` draw the diagrams of these predictions later.
    """
    from calib_core.validation import check_probs_labels

    probs, labels = check_probs_labels(probs, labels)
    wanted = list(STREAM_METRICS) if metrics is None else [check_choice(m, "metrics", STREAM_METRICS) for m in metrics]
    options = dict(n_bins=n_bins, binning=binning, threshold=threshold, sweep_bins=tuple(sweep_bins))
    result = _arrays_result(probs, labels, wanted, options)
    names = tuple(str(c) for c in class_names) if class_names is not None else tuple(str(k) for k in range(probs.shape[1]))
    return Evaluation(metrics=result.metrics, n_samples=probs.shape[0], n_classes=probs.shape[1], class_names=names,
                      input_kind=input_kind, files=tuple(files), engine="memory", n_bins=result.n_bins,
                      binning=result.binning, split=split, exact=True, error_bounds={}, n_passes=1,
                      stats=result.stats, adaptive=result.adaptive, warnings=tuple(warnings))


def choose_engine(source: SourceLike, engine: str = "auto") -> str:
    """The engine ``"auto"`` stands for: ``"stream"`` for several files or more than
    :data:`MEMORY_ENGINE_MAX_BYTES` of CSV/Parquet, else ``"memory"``."""
    engine = check_choice(engine, "engine", ENGINES + ("auto",))
    if engine != "auto":
        return engine
    try:
        files = resolve_files(source)
    except CalibrationInputError:
        # Folders and patterns are for the streaming reader; a single bad file the loader reports itself.
        text = os.fspath(source) if isinstance(source, (str, os.PathLike)) else ""
        return "stream" if not text or Path(text).is_dir() or _GLOB_CHARS & set(text) else "memory"
    if len(files) > 1:
        return "stream"
    if _format_of(files[0]) in _TABLE_FORMATS.values() and _file_bytes(files) > MEMORY_ENGINE_MAX_BYTES:
        return "stream"
    return "memory"


# ---------------------------------------------------------------------------
# Per-group results
# ---------------------------------------------------------------------------

#: Per-group metrics the streaming engines compute exactly from per-group uniform-bin sums
#: (the binned ones only with ``binning="uniform"``).
GROUP_STREAM_EXACT = ("accuracy", "sce", "brier", "nll")
_GROUP_UNIFORM_BINNED = ("ece", "rmsce", "mce", "classwise_ece")
_NO_ROWS = ("the stream and Dask engines keep per-bin sums per group, not rows; "
            "use engine='memory' (--engine memory) for it")
_GROUP_REASONS = {
    "ace": "per-group ACE needs exact equal-mass bin edges within every group (order statistics of each group's "
           f"class values, a sketch and an extra pass per group); {_NO_ROWS}",
    "tace": "per-group TACE needs exact equal-mass bin edges within every group, as ACE; " + _NO_ROWS,
    "ks": "per-group KS error needs every group's rows sorted by confidence; " + _NO_ROWS,
    "adaptive": "adaptive bins per group need exact equal-mass edges within every group; " + _NO_ROWS,
}


def _nan_to_none(values: Sequence[float]) -> list[float | None]:
    return [None if v is None or not np.isfinite(v) else float(v) for v in values]


@dataclass(frozen=True)
class GroupEvaluation:
    """Metrics per group of a column, from :func:`evaluate` with ``group_column=`` (or a summary).

    Attributes
    ----------
    column : str
        The group column.
    labels : tuple of str
        The groups as :func:`calib_core.by_group` orders them: sorted, at
        most ``max_groups``, the merged group "other" last.
    stats : tuple of CalibrationStats
        Each group's uniform-bin sums (``n_bins`` bins), aligned with ``labels``.
    values : dict of str to tuple of float
        Metric key -> value per group (NaN: not computable on that group).
    overall : dict of str to float
        The metrics on all rows.
    unavailable : dict of str to str
        Metric key -> why this engine does not give it per group.
    n_distinct : int
        Distinct group values before merging.
    merged : bool
    notes : tuple of str
    n_bins : int
    binning : str
    engine : str

    Notes
    -----
    Group g's value of a binned metric is the metric of the sums over the
    rows of g only (Nixon et al. 2019, eq. 1-2: ``ECE_g = sum_b n_gb / n_g
    |acc_gb - conf_gb|``), so it equals ``by_group(metric, ...)`` on the rows.
    No bootstrap intervals: they need the rows (``ci_low``/``ci_high`` are NaN).
    """

    column: str
    labels: tuple[str, ...]
    stats: tuple[CalibrationStats, ...]
    values: dict[str, tuple[float, ...]]
    overall: dict[str, float]
    unavailable: dict[str, str]
    n_distinct: int
    merged: bool
    notes: tuple[str, ...]
    n_bins: int
    binning: str
    engine: str

    @property
    def n(self) -> NDArray[np.int64]:
        """Rows per group, aligned with :attr:`labels`."""
        return np.array([s.n_rows for s in self.stats], dtype=np.int64)

    def _values(self, metric: str) -> NDArray[np.float64]:
        if metric in self.unavailable:
            raise CalibrationInputError(f"{metric!r} per group is not available: {self.unavailable[metric]}.")
        if metric not in self.values:
            raise CalibrationInputError(
                f"no per-group values of {metric!r}; available: {', '.join(self.values) or 'none'}.")
        return np.asarray(self.values[metric], dtype=np.float64)

    def table(self, metric: str = "ece", *, min_rows: int = 30) -> pd.DataFrame:
        """The table of :func:`calib_core.by_group` (``group, value, ci_low, ci_high, n, gap, too_small,
        note``) with NaN intervals."""
        values = self._values(metric)
        sizes = self.n
        too_small = (sizes < min_rows) | (sizes < self.n_bins)
        notes = []
        for g in range(len(self.labels)):
            parts = []
            if too_small[g]:
                reason = f"fewer than {min_rows} rows" if sizes[g] < min_rows else f"fewer rows than bins ({self.n_bins})"
                parts.append(f"too small to say much: {reason}")
            if not np.isfinite(values[g]):
                parts.append("not computable on this group")
            notes.append("; ".join(parts))
        nan = np.full(len(self.labels), np.nan)
        return pd.DataFrame({"group": pd.Series(list(self.labels), dtype=object), "value": values, "ci_low": nan,
                             "ci_high": nan.copy(), "n": sizes, "gap": values - self.overall[metric],
                             "too_small": too_small, "note": notes})

    def worst(self, metric: str = "ece", *, worst: str = "max", min_rows: int = 30) -> tuple[str | None, float, float]:
        """``(group, value, gap to overall)`` of the worst group, chosen as :func:`calib_core.by_group` does."""
        from calib_core.inference.groups import _choose_worst

        table = self.table(metric, min_rows=min_rows)
        eligible = ~table["too_small"].to_numpy()
        if self.merged:
            eligible[-1] = False
        values = table["value"].to_numpy()
        index = _choose_worst(values, self.overall[metric], eligible, check_choice(worst, "worst", ("max", "min", "farthest")))
        if index is None:
            return None, float("nan"), float("nan")
        return self.labels[index], float(values[index]), float(values[index] - self.overall[metric])

    def reliability_table(self, target: str | int = "top_label", *, alpha: float = 0.05) -> pd.DataFrame:
        """:func:`calib_core.group_reliability` with uniform bins, from the sums."""
        from calib_core.metrics.reliability import reliability_frame

        frames = []
        for label, stats in zip(self.labels, self.stats):
            frame = reliability_frame(stats.bin_stats(target), alpha=alpha)
            frame.insert(0, "group", pd.Series([label] * len(frame), dtype=object))
            frames.append(frame)
        table = pd.concat(frames, ignore_index=True)
        table = table.rename(columns={"mean_confidence": "confidence", "observed_frequency": "accuracy"})
        first = ["group", "bin", "count", "confidence", "accuracy", "gap"]
        return table[first + [c for c in table.columns if c not in first]]

    def multicalibration(self, target: str | int = "top_label", *, min_count: int = 30) -> Any:
        """:func:`calib_core.multicalibration` with uniform bins, from the sums (a ``MulticalibrationResult``)."""
        from calib_core.inference.groups import multicalibration_from_table

        return multicalibration_from_table(self.reliability_table(target), min_count)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (per-group sums, no rows); :func:`load_summary` reads it back."""
        return {"column": self.column, "labels": list(self.labels), "n": self.n.tolist(),
                "stats": [_stats_without_sketches(s) for s in self.stats],
                "values": {k: _nan_to_none(v) for k, v in self.values.items()},
                "overall": {k: (None if not np.isfinite(v) else float(v)) for k, v in self.overall.items()},
                "unavailable": dict(self.unavailable), "n_distinct": self.n_distinct, "merged": self.merged,
                "notes": list(self.notes), "n_bins": self.n_bins, "binning": self.binning, "engine": self.engine}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupEvaluation":
        """Inverse of :meth:`to_dict`."""
        labels = tuple(str(x) for x in data["labels"])
        stats = tuple(CalibrationStats.from_dict(s) for s in data["stats"])
        if len(stats) != len(labels):
            raise CalibrationInputError("damaged calib_core summary: group labels and statistics differ in length.")
        values = {str(k): tuple(np.nan if x is None else float(x) for x in v) for k, v in data["values"].items()}
        return cls(column=str(data["column"]), labels=labels, stats=stats, values=values,
                   overall={str(k): (np.nan if v is None else float(v)) for k, v in data["overall"].items()},
                   unavailable={str(k): str(v) for k, v in data["unavailable"].items()},
                   n_distinct=int(data["n_distinct"]), merged=bool(data["merged"]), notes=tuple(data["notes"]),
                   n_bins=int(data["n_bins"]), binning=str(data["binning"]), engine=str(data["engine"]))

    def report_section(self, metrics: Sequence[str] = ("ece", "ace"), *, min_count: int = 30) -> dict[str, Any]:
        """The ``groups`` section of ``calib-core report`` (as ``--engine memory`` writes it, without intervals):
        a metric this engine cannot give per group is under ``unavailable`` with the reason."""
        from calib_core.metrics.registry import metric_name

        section: dict[str, Any] = {}
        unavailable = {}
        for key in metrics:
            if key in self.unavailable or key not in self.values:
                unavailable[key] = self.unavailable.get(key, "not computed")
                continue
            table = self.table(key)
            label, value, gap = self.worst(key)
            section[key] = {
                "name": metric_name(key, n_bins=self.n_bins, binning=self.binning),
                "overall": _nan_to_none([self.overall[key]])[0], "overall_ci_low": None, "overall_ci_high": None,
                "worst_group": label, "worst_value": _nan_to_none([value])[0], "worst_gap": _nan_to_none([gap])[0],
                "gap_ci_low": None, "gap_ci_high": None,
                "table": [{"group": str(row.group), "value": _nan_to_none([row.value])[0], "ci_low": None,
                           "ci_high": None, "n": int(row.n), "gap": _nan_to_none([row.gap])[0],
                           "too_small": bool(row.too_small), "note": row.note}
                          for row in table.itertuples(index=False)],
            }
        if self.binning == "uniform":
            multi = self.multicalibration(min_count=min_count)
            multicalibration: dict[str, Any] = {
                "max_gap": _nan_to_none([multi.max_gap])[0], "gap": _nan_to_none([multi.gap])[0],
                "group": None if multi.group is None else str(multi.group), "bin": int(multi.bin),
                "lower": _nan_to_none([multi.lower])[0], "upper": _nan_to_none([multi.upper])[0],
                "count": int(multi.count), "confidence": _nan_to_none([multi.confidence])[0],
                "accuracy": _nan_to_none([multi.accuracy])[0], "n_cells": int(multi.n_cells),
                "n_cells_used": int(multi.n_cells_used), "min_count": int(multi.min_count), "reason": multi.reason}
        else:
            multicalibration = {"max_gap": None, "reason": _GROUP_REASONS["adaptive"]}
        notes = list(self.notes) + ["no bootstrap intervals: they resample rows, which the "
                                    f"{self.engine} engine does not keep; use --engine memory for them"]
        return {"column": self.column, "n_groups": len(self.labels), "n_boot": 0, "seed": None, "alpha": None,
                "engine": self.engine, "metrics": section, "unavailable": unavailable, "notes": notes,
                "multicalibration": multicalibration}


def _stats_without_sketches(stats: CalibrationStats) -> dict[str, Any]:
    data = stats.to_dict()
    data["sketches"] = None
    return data


def _group_evaluation(column: str, result: StreamResult, wanted: list[str], engine: str,
                      grouped: GroupedStats | None, group_rows: dict[str, Any], max_groups: int,
                      max_distinct: int) -> GroupEvaluation:
    """Fold the per-group sums (or, in memory, the rows) into a :class:`GroupEvaluation`."""
    n_bins, binning = result.n_bins, result.binning
    if grouped is None:  # the memory engine: the rows are here
        from calib_core.inference.groups import _group_codes
        from calib_core.metrics.registry import compute_metrics

        probs, labels, groups = group_rows["probs"], group_rows["labels"], group_rows["groups"]
        n_distinct = int(np.unique(groups).size)
        grouped = GroupedStats(CalibrationStats(probs.shape[1], n_bins=n_bins, threshold=result.threshold),
                               max_distinct=max(max_distinct, n_distinct))
        grouped.update(probs, labels, groups)
        names, stats, merged, notes = grouped.folded(max_groups)
        codes = _group_codes(groups, probs.shape[0], max_groups)
        per_group = [compute_metrics(probs[rows], labels[rows], n_bins=n_bins, binning=binning, keys=wanted)
                     for rows in codes.rows]
        values = {key: tuple(float(found[key]) for found in per_group) for key in wanted}
        unavailable: dict[str, str] = {}
    else:
        n_distinct = len(grouped.groups)
        names, stats, merged, notes = grouped.folded(max_groups)
        exact = list(GROUP_STREAM_EXACT) + (list(_GROUP_UNIFORM_BINNED) if binning == "uniform" else [])
        found = [s.metrics() for s in stats]
        values = {key: tuple(float(f[key]) for f in found) for key in wanted if key in exact}
        unavailable = {key: _GROUP_REASONS.get(key, _GROUP_REASONS["adaptive"]) for key in wanted if key not in exact}
    return GroupEvaluation(column=column, labels=tuple(names), stats=tuple(stats), values=values,
                           overall={key: float(result.metrics[key]) for key in wanted}, unavailable=unavailable,
                           n_distinct=n_distinct, merged=merged, notes=tuple(notes), n_bins=n_bins,
                           binning=binning, engine=engine)


# ---------------------------------------------------------------------------
# Reading a summary back: diagrams without the rows
# ---------------------------------------------------------------------------

_SUMMARY_FORMAT = "calib_core.summary/1"


def _binstats_from_dict(data: dict[str, Any]) -> Any:
    from calib_core.binning import BinStats

    return BinStats(np.asarray(data["count"], dtype=np.float64), np.asarray(data["sum_value"], dtype=np.float64),
                    np.asarray(data["sum_target"], dtype=np.float64),
                    _nan_array(data["lower"]), _nan_array(data["upper"]),
                    np.asarray(data["n_total"], dtype=np.float64) if np.ndim(data["n_total"]) else float(data["n_total"]))


def _nan_array(values: Any) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=object)
    return np.where(array == None, np.nan, array).astype(np.float64)  # noqa: E711 - JSON nulls


@dataclass(frozen=True)
class CalibrationSummary:
    """A summary written by :meth:`Evaluation.summary` (or ``calib-core report --json``), read back.

    Everything a reliability diagram, per-class bars and a uniform-bin
    sensitivity sweep need, computed from per-bin sums instead of rows.

    Attributes
    ----------
    metrics : dict of str to float
    n_samples, n_classes : int
    class_names : tuple of str
    n_bins : int
    binning : str
    bin_counts : tuple of int
        The uniform bin counts whose sums the summary holds.
    stats : CalibrationStats
    adaptive : dict of str to BinStats
        ``"top_label"``, ``"classwise"``, ``"classwise_above"`` when present.
    files : tuple of str
    engine, input_kind : str
    exact : bool
    error_bounds : dict of str to float
    warnings : tuple of str
    groups : GroupEvaluation or None
        Per-group sums and metrics when the run had a group column.
    """

    metrics: dict[str, float]
    n_samples: int
    n_classes: int
    class_names: tuple[str, ...]
    n_bins: int
    binning: str
    bin_counts: tuple[int, ...]
    stats: CalibrationStats
    adaptive: dict[str, Any]
    files: tuple[str, ...] = ()
    engine: str = ""
    input_kind: str = ""
    exact: bool = True
    error_bounds: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    groups: GroupEvaluation | None = None

    def _class_index(self, target: str | int) -> int | str:
        if isinstance(target, str) and target == "top_label":
            return target
        if isinstance(target, str) and target in self.class_names:
            return self.class_names.index(target)
        if isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < self.n_classes:
            return int(target)
        raise CalibrationInputError(
            f"`target` must be 'top_label', a class index in 0..{self.n_classes - 1} or a class name, got {target!r}."
        )

    def bin_stats(self, target: str | int = "top_label", n_bins: int | None = None,
                  binning: str = "uniform") -> Any:
        """Per-bin sums of the top label or one class (:class:`~calib_core.binning.BinStats`)."""
        from calib_core.binning import BinStats
        from calib_core.validation import check_binning

        target = self._class_index(target)
        if check_binning(binning) == "uniform":
            return self.stats.bin_stats(target, n_bins)
        if n_bins is not None and n_bins != self.n_bins:
            raise CalibrationInputError(
                f"adaptive bins are kept for n_bins={self.n_bins} only, got {n_bins}."
            )
        key = "top_label" if target == "top_label" else "classwise"
        if key not in self.adaptive:
            raise CalibrationInputError(f"the summary holds no adaptive bins for {target!r}; re-run with every metric.")
        stats = self.adaptive[key]
        if target == "top_label":
            return stats
        k = int(target)
        return BinStats(stats.count[k], stats.sum_value[k], stats.sum_target[k], stats.lower[k], stats.upper[k],
                        float(np.asarray(stats.n_total)[k]))

    def reliability_table(self, target: str | int = "top_label", n_bins: int | None = None,
                          binning: str = "uniform", *, alpha: float = 0.05) -> pd.DataFrame:
        """The table :func:`calib_core.reliability_table` gives on the rows, from the sums.

        Columns ``bin, lower, upper, count, weight, mean_confidence,
        observed_frequency, gap, ci_low, ci_high``; one row per non-empty bin;
        the interval is the ``1 - alpha`` Wilson score interval.
        """
        from calib_core.metrics.reliability import reliability_frame

        return reliability_frame(self.bin_stats(target, n_bins, binning), alpha=alpha)

    def classwise_ece(self, n_bins: int | None = None, binning: str = "uniform", norm: str = "l1") -> pd.Series:
        """Per-class ECE (``probs[:, k]`` against ``labels == k``), indexed by class name."""
        from calib_core.binning import binned_error
        from calib_core.validation import check_binning

        norm = check_choice(norm, "norm", ("l1", "l2", "max"))
        if check_binning(binning) == "uniform":
            stats = self.stats.bin_stats("classwise", n_bins)
        else:
            self.bin_stats(0, n_bins, "adaptive")  # checks that the adaptive sums exist
            stats = self.adaptive["classwise"]
        return pd.Series(binned_error(stats, norm), index=list(self.class_names), name="classwise_ece")

    def per_class_ace(self) -> pd.Series:
        """Per-class ACE (Nixon et al. 2019, eq. 3) from the adaptive class-wise sums.

        Available for the run's ``n_bins`` when the report kept adaptive
        class-wise bins (every metric requested); indexed by class name.
        """
        from calib_core.binning import mean_abs_gap

        self.bin_stats(0, self.n_bins, "adaptive")  # checks that the adaptive sums exist
        return pd.Series(mean_abs_gap(self.adaptive["classwise"]), index=list(self.class_names), name="ace")

    def bin_sensitivity(self, metrics: Sequence[str] = ("ece", "sce", "ace")) -> pd.DataFrame:
        """Uniform-bin sensitivity over the kept bin counts, like :func:`calib_core.bin_sensitivity`.

        Columns ``n_bins, binning, metric, value`` with ``binning ==
        "uniform"``; metrics ``ece`` (top label), ``sce`` (class-wise,
        count-weighted) and ``ace`` (class-wise, unweighted mean over
        non-empty bins).
        """
        from calib_core.binning import binned_error, mean_abs_gap

        metrics = [check_choice(m, "metrics", ("ece", "sce", "ace")) for m in metrics]
        rows = []
        for n_bins in self.bin_counts:
            top = self.stats.bin_stats("top_label", n_bins)
            classwise = self.stats.bin_stats("classwise", n_bins)
            found = {"ece": float(binned_error(top, "l1")), "sce": float(binned_error(classwise, "l1").mean()),
                     "ace": float(mean_abs_gap(classwise).mean())}
            rows += [(n_bins, "uniform", m, found[m]) for m in metrics]
        return pd.DataFrame(rows, columns=["n_bins", "binning", "metric", "value"])

    @property
    def class_balance(self) -> pd.DataFrame:
        """Per class: label count, share of rows and mean predicted probability."""
        n = float(self.stats.n_rows)
        return pd.DataFrame({"class": list(self.class_names), "count": self.stats.label_count,
                             "share": self.stats.label_count / n, "mean_probability": self.stats.prob_sum / n})


def load_summary(json_text: str | bytes | dict[str, Any]) -> CalibrationSummary:
    """Read the summary JSON of ``calib-core report --json`` (or :meth:`Evaluation.summary`).

    Parameters
    ----------
    json_text : str, bytes or dict
        The JSON text (or its parsed dict): the CLI output, whose
        ``"statistics"`` entry is the summary, or the summary itself.

    Returns
    -------
    CalibrationSummary

    Raises
    ------
    CalibrationInputError
        Not JSON, or not a calib_core summary, or damaged.

    Examples
    --------
    >>> summary = load_summary(open("report.json").read())  # doctest: +SKIP
    >>> summary.reliability_table("top_label", n_bins=15)  # doctest: +SKIP
    """
    import json

    if isinstance(json_text, dict):
        data = json_text
    else:
        try:
            data = json.loads(json_text)
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            raise CalibrationInputError(f"the summary is not valid JSON: {exc}.") from exc
    if isinstance(data, dict) and isinstance(data.get("statistics"), dict):
        data = data["statistics"]
    if not isinstance(data, dict) or data.get("format") != _SUMMARY_FORMAT:
        raise CalibrationInputError(
            "not a calib_core summary: expected the JSON written by `calib-core report --json` "
            f"(format {_SUMMARY_FORMAT!r})."
        )
    try:
        stats = CalibrationStats.from_dict(data["stats"])
        adaptive = {key: _binstats_from_dict(value) for key, value in (data.get("adaptive") or {}).items()}
        return CalibrationSummary(
            metrics={str(k): float(v) for k, v in data["metrics"].items()},
            n_samples=int(data["n_samples"]), n_classes=int(data["n_classes"]),
            class_names=tuple(str(c) for c in data["class_names"]), n_bins=int(data["n_bins"]),
            binning=str(data["binning"]), bin_counts=stats.bin_counts, stats=stats, adaptive=adaptive,
            files=tuple(data.get("files", ())), engine=str(data.get("engine", "")),
            input_kind=str(data.get("input_kind", "")), exact=bool(data.get("exact", True)),
            error_bounds={str(k): float(v) for k, v in (data.get("error_bounds") or {}).items()},
            warnings=tuple(data.get("warnings", ())),
            groups=None if data.get("groups") is None else GroupEvaluation.from_dict(data["groups"]))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CalibrationInputError):
            raise
        raise CalibrationInputError(f"damaged calib_core summary: {type(exc).__name__}: {exc}.") from exc
