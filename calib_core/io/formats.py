"""File formats: which reader a source needs, the bytes it reads, and the one CSV sniffer.

This is the bottom layer of :mod:`calib_core.io`: bytes or a path in, the
format and the (unpacked) bytes out; the readers of
:mod:`calib_core.io.readers` turn them into a frame (CSV/TSV, Parquet,
structured NPY) or a dict of arrays (NPZ/NPY), within the size limits of
:mod:`calib_core.io.limits`. What the columns mean is decided above them, in
:mod:`calib_core.io.columns` and :mod:`calib_core.io.arrays`.

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
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Union

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.limits import (MAX_BYTES, MAX_CELLS, MAX_ROWS, _READ_CHUNK, Decoded,  # MAX_*: re-exported
                                   first_line_width, line_breaks)
from calib_core.validation import CalibrationInputError

__all__ = ["FORMATS", "TABLE_FORMATS", "ARRAY_FORMATS", "MAX_BYTES", "MAX_CLASSES", "MAX_ROWS", "MAX_CELLS",
           "CsvDialect", "format_of",
           "sniff_csv", "sniff_csv_file", "column_names", "Table", "plain_row_label"]

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
    """A table a reader gives (CSV, Parquet, structured NPY; a streaming batch): the frame and how to
    name its rows; :func:`calib_core.io.columns.table_parts` decides what its columns are."""

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
    """How a message names data row ``i`` (0-based) of a table without file lines: ``row i + 1``."""
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
