"""Readers: a CSV, Parquet, NPZ or NPY source, found by :mod:`calib_core.io.formats`, to a table or arrays.

* :func:`_read_csv` reads a CSV/TSV with the dialect :func:`~calib_core.io.formats.sniff_csv`
  finds, counting its rows against the limits first (:func:`~calib_core.io.limits.count_csv_rows`);
  a bad row is named with its file line.
* :func:`_read_parquet` checks the footer against the limits
  (:func:`~calib_core.io.limits.check_parquet`) before it decodes any column; nested columns
  are kept by name only, to be refused if a role asks for them.
* :func:`_load_numpy` and :func:`_npz_arrays` read NPY/NPZ from their headers first, and refuse
  pickled objects.
* :func:`read_frame` reads a table in memory (pandas, Arrow, polars: :func:`frame_kind`) as a
  file of it reads: through Arrow and the Parquet reader's conversion, text cells parsed as the
  CSV reader parses them.

Every reader refuses repeated column names (:func:`check_duplicates`) and raises
:class:`~calib_core.validation.CalibrationInputError` naming the file.
"""
from __future__ import annotations

import csv
import io
import warnings as _warnings
import zipfile
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.formats import (MAX_CLASSES, Table, _Raw, _SNIFF_BYTES, _decode_head, _has_comma_decimals,
                                   _head_encoding, _too_big, _transcode_utf16, plain_row_label, sniff_csv)
from calib_core.io.limits import Decoded, _npy_table_shape, check_parquet, count_csv_rows, csv_header
from calib_core.validation import CalibrationInputError

__all__ = ["FRAME_KINDS", "InMemory", "check_duplicates", "frame_kind", "read_frame"]

# ---------------------------------------------------------------------------
# Reading CSV and Parquet tables
# ---------------------------------------------------------------------------

def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_duplicates(header: Sequence[str], display: str) -> None:
    """Refuse repeated column names (pandas would silently rename `a` to `a.1`)."""
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if column in seen and column != "":
            raise CalibrationInputError(
                f"duplicate column name {column!r} in {display} (columns {seen[column]} and "
                f"{position}); rename one of them so every column has its own name."
            )
        seen.setdefault(column, position)


def _check_header_is_names(header: Sequence[str], display: str) -> None:
    if header and all(_looks_numeric(c) for c in header if c != ""):
        raise CalibrationInputError(
            f"the first line of {display} holds numbers ({', '.join(header[:4])}...), not column "
            "names: add a header row such as 'label,p_0,p_1,...'."
        )


def _csv_line_finder(raw: _Raw, delimiter: str, encoding: str) -> Callable[[int], str]:
    """Map a 0-based data row to a label with its 1-based physical file line.

    Only called on the error path: it scans the file with the csv module,
    which handles quoted newlines and skips blank lines like pandas does.
    """
    def label(row: int) -> str:
        handle = io.TextIOWrapper(raw.open_binary(), encoding=encoding, errors="replace", newline="")
        try:
            with handle:
                reader = csv.reader(handle, delimiter=delimiter)
                previous_end, record = 0, -1  # record -1 is the header
                for fields in reader:
                    start = previous_end + 1
                    previous_end = reader.line_num
                    if not fields or all(not f.strip() for f in fields) and len(fields) == 1:
                        continue
                    if record == row:
                        return f"row {row + 1} (file line {start})"
                    record += 1
        except (csv.Error, OSError, UnicodeError):
            return f"row {row + 1}"  # e.g. a field over the csv module's size limit: the row number still helps
        return f"row {row + 1}"
    return label


def _read_csv(raw: _Raw, limits: Decoded = Decoded()) -> tuple[Table, list[str]]:
    notes: list[str] = []
    raw, utf16_note = _transcode_utf16(raw)
    if utf16_note:
        notes.append(utf16_note)
    head = raw.head()
    if not head.strip():
        raise CalibrationInputError(
            f"{raw.display} is empty. Provide a table with a header row, e.g. "
            "'label,p_0,p_1' followed by one row per prediction."
        )
    encoding = _head_encoding(head)

    def source() -> Any:
        return str(raw.path) if raw.path is not None else io.BytesIO(raw.data or b"")

    def read(encoding: str) -> tuple[pd.DataFrame, str, str, list[str]]:
        dialect = sniff_csv(_decode_head(head, encoding), raw.hint, raw.display)
        delimiter, decimal, header = dialect.delimiter, dialect.decimal, dialect.header
        if len(head) >= _SNIFF_BYTES and b"\n" not in head and b"\r" not in head:  # a header longer than the sniff
            header = csv_header(raw.open_binary(), delimiter, encoding)
        _check_header_is_names(header, raw.display)
        check_duplicates(header, raw.display)
        _check_column_count(len(header), raw.display)
        count_csv_rows(raw.data, raw.path, len(header), limits, raw.display)
        with _warnings.catch_warnings():
            # A first row longer than the header makes pandas drop data with only a warning.
            _warnings.simplefilter("error", pd.errors.ParserWarning)
            _warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            frame = pd.read_csv(source(), sep=delimiter, decimal=decimal, index_col=False,
                                engine="c", encoding=encoding)
            if delimiter != "," and decimal == "." and _has_comma_decimals(frame):
                decimal = ","
                frame = pd.read_csv(source(), sep=delimiter, decimal=decimal, index_col=False,
                                    engine="c", encoding=encoding)
        return frame, delimiter, decimal, header

    try:
        try:
            frame, delimiter, decimal, header = read(encoding)
        except UnicodeDecodeError:
            encoding = "latin-1"
            frame, delimiter, decimal, header = read(encoding)
    except pd.errors.EmptyDataError as exc:
        raise CalibrationInputError(
            f"{raw.display} has no columns. Provide a header row such as 'label,p_0,p_1'."
        ) from exc
    except pd.errors.ParserWarning as exc:
        raise CalibrationInputError(
            f"the first data row of {raw.display} has more values than the header has column "
            "names; every row needs one value per column."
        ) from exc
    except (pd.errors.ParserError, ValueError, OSError, OverflowError, csv.Error) as exc:
        if isinstance(exc, CalibrationInputError):
            raise
        message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        raise CalibrationInputError(
            f"could not read {raw.display} as a delimited table ({message}). Every row must "
            "have one value per header column, separated by a comma, tab or semicolon."
        ) from exc
    if encoding == "latin-1":
        notes.append(f"{raw.display} is not valid UTF-8; it was decoded as Latin-1.")
    if delimiter != ",":
        kind = {"\t": "tab", ";": "semicolon"}[delimiter]
        notes.append(f"read as {kind}-separated values" + (" with decimal commas." if decimal == "," else "."))
    # The raw header keeps empty names empty (pandas writes "Unnamed: 0").
    if len(header) != frame.shape[1]:
        # The sniffer saw only the head of a long header line: check every name (pandas renames a
        # repeated `p_3` to `p_3.1` without a word).
        header = csv_header(raw.open_binary(), delimiter, encoding)
        check_duplicates(header, raw.display)
    if len(header) == frame.shape[1]:
        frame.columns = header
    else:
        frame.columns = [str(c).strip() for c in frame.columns]
    positions = {c: k for k, c in enumerate(frame.columns)}

    def raw_text(column: str) -> NDArray[Any]:
        """The column's cells as written: "NA", "none" or "null" may be class names."""
        cells = pd.read_csv(source(), sep=delimiter, decimal=decimal, index_col=False, engine="c",
                            encoding=encoding, usecols=[positions[column]], dtype=str,
                            keep_default_na=False, na_filter=False)
        return cells.iloc[:, 0].to_numpy(dtype=object)

    return Table(frame=frame, row_label=_csv_line_finder(raw, delimiter, encoding),
                  raw_text=raw_text), notes


def _check_column_count(n_columns: int, display: str) -> None:
    """Refuse more columns than :data:`MAX_CLASSES` allows before any parsing work."""
    if n_columns > MAX_CLASSES + 64:
        raise CalibrationInputError(
            f"{display} has {n_columns:,} columns; at most {MAX_CLASSES:,} classes are supported. "
            "Keep one column per class you want to analyse (or group rare classes), then load it again."
        )


def _read_parquet(raw: _Raw, limits: Decoded = Decoded()) -> Table:
    import pyarrow.parquet as pq

    def damaged(exc: BaseException) -> CalibrationInputError:
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        return CalibrationInputError(
            f"could not read {raw.display} as Parquet ({detail}). The file may be damaged or "
            "not Parquet; re-export it, or save the predictions as CSV."
        )

    try:
        with raw.open_binary() as handle:
            parquet = pq.ParquetFile(handle)
            names = [str(c).strip() for c in parquet.schema_arrow.names]
            _check_column_count(len(names), raw.display)
            check_duplicates(names, raw.display)
            check_parquet(parquet.metadata, len(names), limits, raw.display)
            table = parquet.read()
    except CalibrationInputError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # damaged files raise ArrowException, OSError, UnicodeDecodeError, ...
        raise damaged(exc) from exc
    names = [str(c).strip() for c in table.column_names]
    check_duplicates(names, raw.display)
    try:
        frame, nested = _arrow_frame(table, names)
    except MemoryError:
        raise
    except Exception as exc:
        raise damaged(exc) from exc
    return Table(frame=frame, row_label=plain_row_label, nested=nested)


def _arrow_frame(table: Any, names: list[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """An Arrow table as the pandas frame a CSV of it reads to, and its nested columns.

    Nested columns (struct, list, map) can hold neither labels nor probabilities: they are
    replaced by nulls here and refused by name if the mapping asks for them. Dictionary
    (categorical) columns are decoded to their values, as a CSV of them would hold them.
    """
    import pyarrow as pa

    nested: dict[str, str] = {}
    for position, (column, column_type) in enumerate(zip(names, table.schema.types)):
        value_type = column_type.value_type if pa.types.is_dictionary(column_type) else column_type
        field_name = table.schema.field(position).name
        if pa.types.is_nested(value_type):
            nested[column] = str(column_type)
            table = table.set_column(position, field_name, pa.nulls(table.num_rows))
        elif value_type is not column_type:
            table = table.set_column(position, field_name, table.column(position).cast(value_type))
    # The pandas metadata (a stored index, its column names) is not needed and may lie.
    frame = table.to_pandas(ignore_metadata=True)
    frame.columns = names
    return frame, nested


# ---------------------------------------------------------------------------
# Tables in memory: a pandas DataFrame, an Arrow table, a polars DataFrame
# ---------------------------------------------------------------------------

#: How messages name each kind of in-memory table :func:`calib_core.load_predictions` reads
#: (its :attr:`~calib_core.Predictions.source_format`).
FRAME_KINDS = {"pandas": "the pandas DataFrame", "arrow": "the Arrow table", "polars": "the polars DataFrame"}


def frame_kind(source: Any) -> str | None:
    """``"pandas"``, ``"arrow"`` or ``"polars"`` when ``source`` is a table in memory, else None.

    polars is recognised by its module name, never imported: it stays optional.
    """
    if isinstance(source, pd.DataFrame):
        return "pandas"
    module = type(source).__module__ or ""
    if module.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(source, (pa.Table, pa.RecordBatch)):
            return "arrow"
    if module.split(".")[0] == "polars":
        if type(source).__name__ == "DataFrame":
            return "polars"
        if type(source).__name__ == "LazyFrame":
            raise CalibrationInputError(
                "`source` is a polars LazyFrame; collect it first: load_predictions(frame.collect())."
            )
    return None


@dataclass(frozen=True)
class InMemory:
    """A table in memory given to :func:`calib_core.load_predictions`, as its loader sees a source."""

    source: Any
    kind: str  # a key of FRAME_KINDS
    hint: str = ""  # no file name: the model is named by `name=` or "model"

    @property
    def display(self) -> str:
        return FRAME_KINDS[self.kind]


def _index_row_label(index: pd.Index) -> Callable[[int], str]:
    """Name rows by position and, for an index other than 0, 1, 2, ..., by their index label."""
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return plain_row_label

    def label(row: int) -> str:
        value = index[row]
        shown = repr(value) if isinstance(value, str) else str(value)
        return f"row {row + 1} (index {shown[:60]})"
    return label


def _pandas_to_arrow(frame: pd.DataFrame) -> Any:
    """The columns of a pandas frame as Arrow arrays (its index left out): categorical and nullable
    columns keep their values and their gaps; a column of mixed Python objects becomes text, as a CSV
    of it would read."""
    import pyarrow as pa

    arrays = []
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        try:
            arrays.append(pa.array(column, from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            arrays.append(pa.array(column.astype("string"), from_pandas=True))
    return pa.Table.from_arrays(arrays, names=[f"c{k}" for k in range(len(arrays))])


def read_frame(source: Any, kind: str, limits: Decoded = Decoded()) -> Table:
    """A table in memory (:func:`frame_kind`) as the :class:`Table` a file of it gives.

    The column rules are the files' own (:func:`calib_core.io.columns.table_parts`): the
    frame goes through Arrow and the Parquet reader's conversion (:func:`_arrow_frame`), so
    categorical, nullable and Arrow-backed string columns read as their plain values. A
    pandas index is not a column; a non-default one names the rows in messages.
    """
    import pyarrow as pa

    display = FRAME_KINDS[kind]
    if kind == "arrow" and isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    n_rows, n_columns = (source.num_rows, source.num_columns) if kind == "arrow" else source.shape
    names = [str(c).strip() for c in (source.column_names if kind == "arrow" else source.columns)]
    _check_column_count(n_columns, display)
    check_duplicates(names, display)
    limits.check(int(n_rows), int(n_columns), display)
    row_label = plain_row_label
    if kind == "pandas":
        table, row_label = _pandas_to_arrow(source), _index_row_label(source.index)
    elif kind == "polars":
        table = source.to_arrow()
    else:
        table = source
    frame, nested = _arrow_frame(table, names)
    frame, raw_text = _text_as_in_a_csv(frame)
    return Table(frame=frame, row_label=row_label, raw_text=raw_text, nested=nested)


def _text_as_in_a_csv(frame: pd.DataFrame) -> tuple[pd.DataFrame, Callable[[str], NDArray[Any]]]:
    """Text columns read as the CSV reader reads the same cells, and their cells as written.

    A CSV cannot tell a blank cell, ``"NA"`` or ``"nan"`` from a missing value, nor ``"3"``
    from the number 3: its reader decides (:func:`_read_csv`), and a label written ``NA`` is
    the class ``NA`` only when a class column is named so (``raw_text``). A table's text
    columns go through the same parser, so a table and a CSV of it load alike.
    """
    positions = [k for k in range(frame.shape[1])
                 if pd.api.types.is_string_dtype(frame.dtypes.iloc[k])
                 and all(isinstance(v, str) for v in frame.iloc[:, k].dropna())]
    written = {frame.columns[k]: frame.iloc[:, k].fillna("").to_numpy(dtype=object) for k in positions}
    if positions:
        cells = frame.iloc[:, positions].to_csv(index=False, header=False, lineterminator="\n")
        parsed = pd.read_csv(io.StringIO(cells), header=None, names=range(len(positions)), index_col=False,
                             skip_blank_lines=False, engine="c")
        frame = frame.copy()
        for j, k in enumerate(positions):
            frame.isetitem(k, parsed.iloc[:, j].to_numpy())
    def raw_text(column: str) -> NDArray[Any]:
        if column in written:
            return written[column]
        return np.array(["" if pd.isna(v) else str(v) for v in frame[column]], dtype=object)
    return frame, raw_text


# ---------------------------------------------------------------------------
# NPZ / NPY
# ---------------------------------------------------------------------------

def _pickle_refused(display: str, what: str) -> CalibrationInputError:
    return CalibrationInputError(
        f"{display} holds pickled Python objects ({what}); loading pickles can run arbitrary "
        "code, so they are refused. Save plain arrays instead, e.g. "
        "np.savez(path, probs=probs, labels=labels) with numeric or fixed-width string arrays."
    )


def _npy_declared_bytes(stream: BinaryIO, available: int, what: str, display: str,
                        max_bytes: int | None) -> tuple[int, int]:
    """Check an ``.npy`` header before numpy allocates what it declares.

    A 192-byte file may declare shape ``(10**12, 2)``; numpy would try to
    allocate 16 TB before noticing the data is missing. The declared size
    ``prod(shape) * itemsize`` (exact Python integers) must fit in the bytes
    that follow the header and in ``max_bytes``.
    """
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
        header_end = stream.tell()
    except MemoryError:
        raise
    except Exception as exc:  # ValueError, SyntaxError, tokenize errors from a damaged header
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise CalibrationInputError(
            f"could not read {what} of {display} as NPY: damaged .npy header ({detail})."
        ) from exc
    if dtype.hasobject:
        raise _pickle_refused(display, f"{what} has dtype object")
    count = 1
    for extent in shape:
        count *= int(extent)
    declared = count * int(dtype.itemsize)
    present = available - header_end
    if declared > present:
        raise CalibrationInputError(
            f"{what} of {display} declares shape {tuple(shape)} ({declared:,} bytes) but holds only "
            f"{max(present, 0):,} bytes of data; the file is damaged or truncated. Save it again with np.save."
        )
    if max_bytes is not None and declared > max_bytes:
        raise _too_big(f"{what} of {display}", declared, max_bytes)
    return _npy_table_shape(tuple(int(x) for x in shape), dtype)


def _load_numpy(raw: _Raw, max_bytes: int | None, limits: Decoded = Decoded()) -> Any:
    """The arrays of an NPY/NPZ file, once every header is checked: no pickles, declared sizes within the
    data present, ``max_bytes`` and ``limits`` (an NPZ: the longest array's rows x all arrays' columns)."""
    fmt_name = "NPZ" if raw.head(4) == b"PK\x03\x04" else "NPY"
    try:
        if fmt_name == "NPZ":
            with raw.open_binary() as handle, zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
                unpacked = sum(info.file_size for info in members)
                if max_bytes is not None and unpacked > max_bytes:
                    raise _too_big(f"{raw.display} (unpacked)", unpacked, max_bytes)
                n_rows = n_columns = 0
                for info in members:
                    if info.filename.endswith(".npy"):
                        with archive.open(info) as member:
                            rows, columns = _npy_declared_bytes(member, info.file_size,
                                                                f"array {info.filename[:-4]!r}", raw.display, max_bytes)
                        n_rows, n_columns = max(n_rows, rows), n_columns + columns
                limits.check(n_rows, n_columns, raw.display)
        else:
            head = raw.head(8)
            if not head.startswith(b"\x93NUMPY"):
                if head[:1] == b"\x80":  # a pickle's protocol opcode
                    raise _pickle_refused(raw.display, "a pickle, not an .npy array")
                raise CalibrationInputError(
                    f"could not read {raw.display} as NPY: it does not start with the .npy magic string. "
                    "Save the array with np.save, or the predictions as CSV."
                )
            with raw.open_binary() as handle:
                limits.check(*_npy_declared_bytes(handle, raw.size(), "the array", raw.display, max_bytes),
                             raw.display)
        loaded = np.load(raw.open_binary() if raw.data is not None else raw.path, allow_pickle=False)
    except CalibrationInputError:
        raise
    except MemoryError:
        raise
    except zipfile.BadZipFile as exc:
        raise CalibrationInputError(f"{raw.display} is a damaged NPZ (zip) archive: {exc}.") from exc
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
            raise _pickle_refused(raw.display, "pickled data or an object array") from exc
        raise CalibrationInputError(f"could not read {raw.display} as {fmt_name}: {str(exc)[:300]}.") from exc
    except Exception as exc:  # zlib.error, EOFError, NotImplementedError (zip features), ...
        raise CalibrationInputError(
            f"could not read {raw.display} as {fmt_name} ({type(exc).__name__}: {str(exc)[:300]}); the "
            "file is damaged. Save it again with np.savez (or np.save)."
        ) from exc
    return loaded


def _npz_arrays(loaded: Any, display: str) -> dict[str, NDArray[Any]]:
    arrays: dict[str, NDArray[Any]] = {}
    try:
        for key in loaded.files:
            try:
                value = loaded[key]
            except ValueError as exc:
                if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
                    raise _pickle_refused(display, f"array {key!r} has dtype object") from exc
                raise CalibrationInputError(f"could not read array {key!r} of {display}: {exc}.") from exc
            except MemoryError:
                raise
            except Exception as exc:  # zlib.error, EOFError, BadZipFile, NotImplementedError, ...
                raise CalibrationInputError(
                    f"could not read array {key!r} of {display} ({type(exc).__name__}: {str(exc)[:300]}); "
                    "the archive is damaged. Save it again with np.savez."
                ) from exc
            if not isinstance(value, np.ndarray):
                raise CalibrationInputError(
                    f"{display} is a zip archive but not an NPZ of arrays (member {key!r} is not "
                    "an .npy array); save it with np.savez."
                )
            arrays[key] = value
    finally:
        loaded.close()
    if not arrays:
        raise CalibrationInputError(
            f"{display} holds no arrays. Save one with np.savez(path, probs=probs, labels=labels)."
        )
    return arrays
