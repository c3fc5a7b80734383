"""File formats: which reader a source needs, the one CSV sniffer, and the readers.

This is the bottom layer of :mod:`calib_core.io`: bytes or a path in, a
frame (CSV/TSV, Parquet, structured NPY) or a dict of arrays (NPZ/NPY) out.
What the columns mean is decided above it, in :mod:`calib_core.io.columns`.

* :data:`FORMATS` maps a file suffix (without a trailing ``.gz``) to its
  reader; :func:`format_of` applies it to a file name. The loader, the
  streaming engine (:mod:`calib_core.engines.evaluate`) and the app
  (:mod:`studio.compute`) all use it.
* :func:`sniff_csv` is the one CSV sniffer: the delimiter (comma, tab or
  semicolon, by the most fields in the header line), the decimal mark (a
  comma when the data rows hold numbers written with decimal commas and
  none with decimal points) and the header fields.
  :func:`sniff_csv_file` applies it to a file on disk (the streaming
  engines), :func:`column_names` to uploaded bytes (the app).

Every problem raises :class:`~calib_core.validation.CalibrationInputError`
naming the file.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings as _warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Sequence, Union

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.limits import (MAX_BYTES, MAX_CELLS, MAX_ROWS, _READ_CHUNK, Decoded, _npy_table_shape,  # MAX_*
                                   check_parquet, count_csv_rows, csv_header, first_line_width, line_breaks)
from calib_core.validation import CalibrationInputError

__all__ = ["FORMATS", "TABLE_FORMATS", "ARRAY_FORMATS", "MAX_BYTES", "MAX_CLASSES", "MAX_ROWS", "MAX_CELLS",
           "CsvDialect", "format_of",
           "sniff_csv", "sniff_csv_file", "column_names", "Table", "check_duplicates", "plain_row_label"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO]

#: Reader of each file suffix (lower-case, without the dot; a trailing ``.gz`` is ignored).
FORMATS = {
    "csv": "csv", "txt": "csv", "tsv": "csv", "tab": "csv",
    "parquet": "parquet", "pq": "parquet", "parq": "parquet",
    "npz": "npz", "npy": "npy",
}

#: Formats read as tables, which the streaming engines read in record batches.
TABLE_FORMATS = ("csv", "parquet")

#: Formats holding arrays, read whole by :func:`calib_core.load_predictions`.
ARRAY_FORMATS = ("npz", "npy")

_SNIFF_BYTES = 1 << 16

#: Largest number of classes (class columns) a file may have. Loading is linear in
#: the number of columns, but every page draws per-class views; ImageNet-21k's
#: 21,841 classes fit. A file with more class columns is refused with a message.
MAX_CLASSES = 25_000

# ---------------------------------------------------------------------------
# Text of cells
# ---------------------------------------------------------------------------

def _label_text(value: Any) -> str:
    """The text of one label value: ``True`` -> "True", ``2.0`` -> "2", ``b"cat"`` -> "cat"."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace").strip()
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def _as_text(values: pd.Series) -> pd.Series:
    """The cells as text; bytes are decoded as UTF-8 with replacement (never an error)."""
    return pd.Series([_label_text(v) if isinstance(v, (bytes, bytearray)) else str(v) for v in values],
                     index=values.index, dtype=object)


# ---------------------------------------------------------------------------
# Reading the bytes
# ---------------------------------------------------------------------------

@dataclass
class _Raw:
    """A source resolved to a path or to bytes, with what we know about its name."""

    path: Path | None
    data: bytes | None
    hint: str  # the file name or name hint, for the format and messages
    display: str  # how messages refer to the source

    def head(self, n_bytes: int = _SNIFF_BYTES) -> bytes:
        if self.data is not None:
            return self.data[:n_bytes]
        assert self.path is not None
        with open(self.path, "rb") as handle:
            return handle.read(n_bytes)

    def open_binary(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        return open(self.path, "rb")

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        assert self.path is not None
        return self.path.stat().st_size


def _format_bytes(n_bytes: int) -> str:
    return f"{n_bytes:,} bytes"


def _too_big(display: str, n_bytes: int | str, max_bytes: int) -> CalibrationInputError:
    size = n_bytes if isinstance(n_bytes, str) else _format_bytes(n_bytes)
    return CalibrationInputError(
        f"{display} is {size}, over the size limit of {_format_bytes(max_bytes)}. "
        "Pass a larger `max_bytes=` (or None for no limit), or load a sample of the rows."
    )


def _resolve_source(source: Any, name: str | None, max_bytes: int | None) -> _Raw:
    if isinstance(source, (str, os.PathLike)):
        path = Path(os.fspath(source))
        if isinstance(source, str) and ("\n" in source or len(source) > 4096):
            raise CalibrationInputError(
                "`source` is a string that looks like file content, not a path; pass the content "
                "as bytes (e.g. text.encode()) together with name='predictions.csv'."
            )
        if not path.exists():
            raise CalibrationInputError(f"file not found: {str(path)!r}.")
        if path.is_dir():
            raise CalibrationInputError(f"{str(path)!r} is a folder, not a file.")
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise _too_big(f"file {path.name!r}", size, max_bytes)
        return _Raw(path=path, data=None, hint=path.name, display=f"file {path.name!r}")
    from_stream = False
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        hint = name or ""
    elif hasattr(source, "read"):
        from_stream = True
        limit = -1 if max_bytes is None else max_bytes + 1
        data = source.read(limit)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray)):
            raise CalibrationInputError(
                f"reading `source` returned {type(data).__name__}, expected bytes."
            )
        data = bytes(data)
        hint = name or os.path.basename(str(getattr(source, "name", "") or ""))
    else:
        raise CalibrationInputError(
            f"`source` must be a path, bytes or a binary file object, got {type(source).__name__}."
        )
    # A file object that names its file (an open file, or bytes read from one with ``.name`` set) is a file.
    named = from_stream and isinstance(getattr(source, "name", None), str) and bool(hint)
    display = f"file {hint!r}" if named else f"upload {hint!r}" if hint else "the uploaded data"
    if max_bytes is not None and len(data) > max_bytes:
        # A stream is read only up to the limit, so its full size is unknown.
        size = f"more than {_format_bytes(max_bytes)}" if from_stream else _format_bytes(len(data))
        raise _too_big(display, size, max_bytes)
    return _Raw(path=None, data=data, hint=hint, display=display)


def _extension(hint: str) -> str:
    suffixes = [s.lower().lstrip(".") for s in Path(hint).suffixes] if hint else []
    if suffixes and suffixes[-1] == "gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def format_of(file_name: str | os.PathLike[str]) -> str | None:
    """The reader a file's name asks for: ``"csv"``, ``"parquet"``, ``"npz"``, ``"npy"`` or None.

    The last suffix decides (see :data:`FORMATS`), a trailing ``.gz`` aside:
    ``preds.tsv.gz`` is ``"csv"``, ``preds.json`` is None.
    """
    return FORMATS.get(_extension(os.fspath(file_name)))


def _strip_format_suffixes(file_name: str) -> str:
    stem = file_name
    while Path(stem).suffix.lower().lstrip(".") in set(FORMATS) | {"gz"}:
        stem = stem[: -len(Path(stem).suffix)]
    return stem


def _model_name(hint: str, name: str | None) -> str:
    """``name`` without a format extension, else the file name without it."""
    if name:
        return _strip_format_suffixes(name) or name
    if hint:
        return _strip_format_suffixes(Path(hint).name) or "model"
    return "model"


def _detect_format(raw: _Raw, file_format: str | None, head: bytes) -> str:
    if file_format is not None:
        key = str(file_format).lower().lstrip(".")
        key = key[:-3] if key.endswith(".gz") else key
        if key not in FORMATS:
            raise CalibrationInputError(
                f"unknown `file_format` {file_format!r}; use one of csv, tsv, parquet, npz, npy."
            )
        return FORMATS[key]
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PAR1"):
        return "parquet"
    ext = _extension(raw.hint)
    if ext in FORMATS:
        return FORMATS[ext]
    if head.startswith(b"PK\x03\x04") and not ext:
        return "npz"
    if ext:
        raise CalibrationInputError(
            f"unknown file format {('.' + ext)!r} ({raw.display}); supported are .csv, .tsv, .txt, "
            ".parquet, .npz and .npy. Export the predictions in one of these, or pass `file_format=`."
        )
    if _utf16_codec(raw.head(4096)) is not None:
        return "csv"
    if b"\x00" in head[:4096]:
        raise CalibrationInputError(
            f"cannot tell the format of {raw.display}: it is binary but not Parquet, NPZ or NPY. "
            "Pass `file_format=` or a `name=` with the file's extension."
        )
    return "csv"


def _maybe_gunzip(raw: _Raw, max_bytes: int | None, limits: Decoded = Decoded(), head_only: bool = False) -> _Raw:
    """The unpacked bytes of gzip data (else ``raw`` itself), unpacked in chunks.

    Unpacking stops at ``max_bytes``, for text once the lines so far times the header's fields pass
    ``limits`` (a gzipped CSV bomb is refused after about the limit's worth of rows), and with
    ``head_only`` after the first chunk unless it is Parquet or NPZ (whose footer ends the file).
    """
    head = raw.head(2)
    if head != b"\x1f\x8b":
        return raw
    parts: list[bytes] = []
    unpacked = lines = 0
    width: int | None = None
    try:
        with raw.open_binary() as packed, gzip.GzipFile(fileobj=packed) as handle:
            while True:
                chunk = handle.read(_READ_CHUNK)
                if not chunk:
                    break
                parts.append(chunk)
                if width is None:  # the header's fields once its line ends (0: not text)
                    width = first_line_width(parts)
                unpacked += len(chunk)
                if head_only and not parts[0].startswith((b"PAR1", b"PK\x03\x04")):
                    break
                if max_bytes is not None and unpacked > max_bytes:
                    raise _too_big(f"{raw.display} (decompressed)", f"more than {_format_bytes(max_bytes)}",
                                   max_bytes)
                if width:
                    lines += line_breaks(chunk)
                    if limits.over(lines - 1, width):  # the header line is not a row
                        limits.check(lines - 1, width, f"{raw.display} (decompressed)", at_least=True)
    except (OSError, EOFError) as exc:
        raise CalibrationInputError(f"{raw.display} is a damaged gzip file: {exc}.") from exc
    data = b"".join(parts)
    del parts
    hint = raw.hint[:-3] if raw.hint.lower().endswith(".gz") else raw.hint
    return _Raw(path=None, data=data, hint=hint, display=raw.display)



# ---------------------------------------------------------------------------
# Tables: what the CSV, Parquet and structured NPY readers give
# ---------------------------------------------------------------------------

@dataclass
class Table:
    frame: pd.DataFrame
    row_label: Callable[[int], str]  # 0-based row -> "row 5 (file line 6)"
    # column name -> its cells as written (no NA parsing), when the reader can give them
    raw_text: Callable[[str], NDArray[Any]] | None = None
    nested: dict[str, str] = field(default_factory=dict)  # column -> nested type (Parquet)


def _utf16_codec(head: bytes) -> str | None:
    """``"utf-16"`` (with a byte-order mark), ``"utf-16-le"``/``"-be"`` (NUL-interleaved text), or None."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[:4096]
    if len(sample) < 8:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.8 * len(odd) and even.count(0) < 0.05 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.8 * len(even) and odd.count(0) < 0.05 * len(odd):
        return "utf-16-be"
    return None


def _transcode_utf16(raw: _Raw) -> tuple[_Raw, str | None]:
    """UTF-16 text (Excel's "Unicode text") re-encoded as UTF-8, with a note; other data unchanged."""
    codec = _utf16_codec(raw.head(4096))
    if codec is None:
        return raw, None
    with raw.open_binary() as handle:
        data = handle.read()
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        raise CalibrationInputError(
            f"{raw.display} looks like UTF-16 text but cannot be decoded as UTF-16 ({exc.reason} at "
            f"byte {exc.start}). UTF-16: save it as UTF-8 (in Excel: CSV UTF-8) and load it again."
        ) from exc
    return (_Raw(path=None, data=text.lstrip("\ufeff").encode("utf-8"), hint=raw.hint, display=raw.display),
            f"{raw.display} is UTF-16 text; it was decoded as UTF-16.")


def plain_row_label(i: int) -> str:
    return f"row {i + 1}"


# ---------------------------------------------------------------------------
# The CSV sniffer
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CsvDialect:
    """How a delimited text file is written, as :func:`sniff_csv` finds it.

    Attributes
    ----------
    delimiter : str
        ``","``, ``"\\t"`` or ``";"``.
    decimal : str
        ``"."``, or ``","`` for numbers written with decimal commas (only
        with a tab or semicolon delimiter).
    header : list of str
        The fields of the header line, stripped (an empty name stays empty).
    """

    delimiter: str
    decimal: str
    header: list[str]


_COMMA_DECIMAL = re.compile(r"\s*[-+]?\d*,\d+(?:[eE][-+]?\d+)?\s*")
_DOT_DECIMAL = re.compile(r"\s*[-+]?\d*\.\d+(?:[eE][-+]?\d+)?\s*")


def _whole_lines(text: str, cut: bool) -> str:
    """``text`` without its last line when the sample was ``cut`` mid-file (and holds whole lines)."""
    if not cut:
        return text
    end = text.rfind("\n")
    return text[: end + 1] if end > 0 else text


def _decode_head(head: bytes, encoding: str) -> str:
    text = head.decode("utf-8-sig" if encoding == "utf-8" else encoding, errors="replace")
    return _whole_lines(text, len(head) >= _SNIFF_BYTES)


def _head_encoding(head: bytes) -> str:
    """``"utf-8"``, or ``"latin-1"`` when the first bytes are not UTF-8."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not merely a character cut at the sample's end
            return "latin-1"
    return "utf-8"


def sniff_csv(text: str, hint: str = "", display: str = "the data") -> CsvDialect:
    """Delimiter, decimal mark and header of delimited text: the one CSV sniffer.

    Parameters
    ----------
    text : str
        The start of the file (the header line and some data rows; 64 KiB
        are read by the callers).
    hint : str
        The file name: a ``.tsv``/``.tab`` suffix makes the tab win ties.
    display : str
        How messages name the source.

    Returns
    -------
    CsvDialect
        The delimiter is the one of comma, tab and semicolon that splits
        the first non-blank line into the most fields (the preferred one on
        ties). With a tab or semicolon delimiter the decimal mark is a comma
        when the first 200 data rows hold a number with a decimal comma and
        none with a decimal point (rows of whole numbers such as ``0;1;0``
        decide nothing).

    Raises
    ------
    CalibrationInputError
        When the text holds no non-blank line.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise CalibrationInputError(
            f"{display} is empty. Provide a table with a header row, e.g. "
            "'label,p_0,p_1' followed by one row per prediction."
        )
    preferred = "\t" if _extension(hint) in ("tsv", "tab") else ","
    best, best_fields = preferred, 1
    for delimiter in (preferred, ",", "\t", ";"):
        fields = next(csv.reader([lines[0]], delimiter=delimiter))
        if len(fields) > best_fields:
            best, best_fields = delimiter, len(fields)
    header = [f.strip() for f in next(csv.reader([lines[0]], delimiter=best))]
    decimal = "."
    if best != "," and len(lines) > 1:
        # Look past rows of whole numbers ("0;1;0"): any decimal comma and no decimal point.
        comma = dot = False
        for row in csv.reader(lines[1:201], delimiter=best):
            comma = comma or any(_COMMA_DECIMAL.fullmatch(v) for v in row)
            dot = dot or any(_DOT_DECIMAL.fullmatch(v) for v in row)
        if comma and not dot:
            decimal = ","
    return CsvDialect(best, decimal, header)


def sniff_csv_file(path: str | os.PathLike[str]) -> CsvDialect:
    """:func:`sniff_csv` of a file on disk (gzip-compressed when its name ends in ``.gz``).

    Reads the whole header line, however long, and the next 64 KiB, as
    UTF-8 (a byte-order mark is dropped). The streaming engines use it
    before they read the rows with pyarrow or Dask.

    Raises
    ------
    CalibrationInputError
        When the file cannot be read or its first line is blank.
    """
    path = Path(path)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as handle:
            first = handle.readline()
            rest = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        raise CalibrationInputError(f"cannot read {path.name!r}: {exc.strerror or exc}.") from exc
    if not first.strip():
        raise CalibrationInputError(f"file {path.name!r} is empty; it needs a header row such as 'label,p_0,p_1'.")
    return sniff_csv(first + _whole_lines(rest, len(rest) >= _SNIFF_BYTES), path.name, f"file {path.name!r}")


def _has_comma_decimals(frame: pd.DataFrame) -> bool:
    """A text column whose values are numbers written with decimal commas (seen past the sniffed rows)."""
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object and not pd.api.types.is_string_dtype(values.dtype):
            continue
        text = _as_text(values.dropna())
        if len(text) and text.str.fullmatch(_COMMA_DECIMAL.pattern).any() and text.str.fullmatch(
                r"\s*[-+]?(?:\d*,\d+|\d+)(?:[eE][-+]?\d+)?\s*").all():
            return True
    return False


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
            pass  # e.g. a field over the csv module's size limit: the row number alone still helps
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
    import pyarrow as pa
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
    # Nested columns (struct, list, map) can hold neither labels nor probabilities: they are
    # replaced by nulls here and refused by name if the mapping asks for them.
    nested: dict[str, str] = {}
    for position, (column, column_type) in enumerate(zip(names, table.schema.types)):
        value_type = column_type.value_type if pa.types.is_dictionary(column_type) else column_type
        if pa.types.is_nested(value_type):
            nested[column] = str(column_type)
            table = table.set_column(position, table.schema.field(position).name, pa.nulls(table.num_rows))
    try:
        # The pandas metadata (a stored index, its column names) is not needed and may lie.
        frame = table.to_pandas(ignore_metadata=True)
    except MemoryError:
        raise
    except Exception as exc:
        raise damaged(exc) from exc
    frame.columns = names
    return Table(frame=frame, row_label=plain_row_label, nested=nested)


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


# ---------------------------------------------------------------------------
# Column names without the rows
# ---------------------------------------------------------------------------

def column_names(data: bytes, name: str = "") -> list[str]:
    """Column (or NPZ array) names of a predictions file held in memory, without reading its rows.

    The format is found as :func:`calib_core.load_predictions` finds it
    (gzip and the content's magic bytes first, then the suffix of
    ``name``); a CSV header is the one :func:`sniff_csv` reads (UTF-16 and
    Latin-1 text as the loader decodes it). Empty names are left out; a
    plain NPY array has no names (empty list). The app offers these names
    in its column-mapping form.

    Raises
    ------
    CalibrationInputError
        When the format cannot be told or the header cannot be read.
    """
    raw = _maybe_gunzip(_Raw(path=None, data=bytes(data), hint=name,
                             display=f"upload {name!r}" if name else "the uploaded data"), MAX_BYTES, head_only=True)
    fmt = _detect_format(raw, None, raw.head(16))
    if fmt == "parquet":
        import pyarrow.parquet as pq

        names = [str(c) for c in pq.read_schema(raw.open_binary()).names]
    elif fmt == "npz":
        with raw.open_binary() as handle, zipfile.ZipFile(handle) as archive:
            names = [Path(n).stem for n in archive.namelist() if n.endswith(".npy")]
    elif fmt == "npy":
        names = []
    else:
        raw, _ = _transcode_utf16(raw)
        head = raw.head()
        names = sniff_csv(_decode_head(head, _head_encoding(head)), raw.hint, raw.display).header
    return [n for n in names if n != ""]
