"""What a predictions file may cost to load: its bytes, and the rows and cells it decodes to.

A file's size bounds neither its rows nor its cells: a 129 KB Parquet file holds
10,000,000 rows of constant columns, and a 1.4 MB gzipped CSV unpacks to 450 MB.
The readers of :mod:`calib_core.io.formats` check the decoded size before they
build the table: Parquet from its metadata, NPY/NPZ from their headers, a CSV by
counting its lines (:func:`count_csv_rows`; a gzipped one while it is unpacked).
Tables over the limits are for the streaming engines (``calib-core report FILE
--engine stream``), whose memory is bounded at any size.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from calib_core.validation import CalibrationInputError

__all__ = ["MAX_BYTES", "MAX_ROWS", "MAX_CELLS", "count_csv_rows", "line_breaks", "parquet_cells",
           "first_line_width", "csv_header", "Decoded", "check_parquet",
           "parquet_over_limits"]

#: Largest file (and unpacked gzip/NPZ data) read by default: ``load_predictions(max_bytes=...)``.
MAX_BYTES = 500_000_000

#: Largest number of rows a file may decode to in memory (the default of
#: ``load_predictions(max_rows=...)``). Rows cost more than columns in the app: every
#: page's bootstrap, binning and per-row caches scale with them.
MAX_ROWS = 5_000_000

#: Largest number of cells (rows x columns) a file may decode to in memory (the default of
#: ``load_predictions(max_cells=...)``): 480 MB as float64; 50,000 rows x 1,000 classes fit.
MAX_CELLS = 60_000_000

_READ_CHUNK = 1 << 20


@dataclass(frozen=True)
class Decoded:
    """The limits on what a file decodes to (rows, and rows x columns); None lifts a limit."""

    max_rows: int | None = MAX_ROWS
    max_cells: int | None = MAX_CELLS

    def over(self, n_rows: int, n_columns: int) -> bool:
        return ((self.max_rows is not None and n_rows > self.max_rows)
                or (self.max_cells is not None and n_rows * max(n_columns, 1) > self.max_cells))

    def check(self, n_rows: int, n_columns: int, display: str, *, at_least: bool = False) -> None:
        """Refuse ``n_rows`` x ``n_columns`` over a limit (``at_least``: a count stopped early, so the
        message names the limit passed rather than the partial count)."""
        if not self.over(n_rows, n_columns):
            return
        if not at_least:
            size = f"{n_rows:,} rows x {n_columns:,} columns ({n_rows * n_columns:,} cells)"
        elif self.max_rows is not None and n_rows > self.max_rows:
            size = f"more than {self.max_rows:,} rows x {n_columns:,} columns"
        else:
            size = f"{n_columns:,} columns and more than {self.max_cells:,} cells"
        self.refuse(size, display)

    def refuse(self, size: str, display: str) -> None:
        """Raise the one message of a table over the limits; ``size`` says what it holds."""
        raise CalibrationInputError(
            f"{display} holds {size}, over the limit of {_limit_text(self.max_rows, 'rows')} and "
            f"{_limit_text(self.max_cells, 'cells')} that are loaded into memory. Evaluate it in record batches, "
            "with memory bounded at any size: `calib-core report FILE --engine stream --json > summary.json` "
            "(the Large tables page draws that summary), or load a sample of the rows. "
            "In Python, `max_rows=None, max_cells=None` lift the limit."
        )


def parquet_cells(metadata: Any, n_columns: int) -> tuple[int, int]:
    """(cells, values) a Parquet file decodes to, from its footer alone: ``cells`` is rows x
    ``n_columns``; ``values`` sums ``num_values`` of every leaf column over every row group, so a
    nested column (a ``list<double>`` embedding) counts every element it holds, not one per row."""
    values = sum(metadata.row_group(i).column(j).num_values
                 for i in range(metadata.num_row_groups) for j in range(metadata.num_columns))
    return int(metadata.num_rows) * max(n_columns, 1), int(values)


def parquet_over_limits(metadata: Any, n_columns: int, limits: Decoded) -> bool:
    """Whether a Parquet file (its footer, ``n_columns`` top-level columns) is over ``limits``: the rule
    :func:`check_parquet` refuses by, and the one ``--engine auto`` streams by."""
    _, values = parquet_cells(metadata, n_columns)
    return (limits.over(int(metadata.num_rows), n_columns)
            or (limits.max_cells is not None and values > limits.max_cells))


def check_parquet(metadata: Any, n_columns: int, limits: Decoded, display: str) -> None:
    """Refuse a Parquet file whose rows, rows x columns or leaf values (:func:`parquet_cells`) are
    over ``limits`` (:func:`parquet_over_limits`) before any column is decoded."""
    if not parquet_over_limits(metadata, n_columns, limits):
        return
    limits.check(int(metadata.num_rows), n_columns, display)
    _, values = parquet_cells(metadata, n_columns)
    if limits.max_cells is not None and values > limits.max_cells:
        limits.refuse(f"{values:,} values in its {metadata.num_columns:,} leaf columns (nested columns count "
                      "every element)", display)


def _limit_text(limit: int | None, what: str) -> str:
    return f"no limit on {what}" if limit is None else f"{limit:,} {what}"


def _header_width(head: bytes) -> int:
    """The fields of the first line of text (the most of comma, tab and semicolon, as the sniffer
    splits it), or 0 when ``head`` is not plain text (Parquet, NPY, zip, UTF-16)."""
    if head.startswith((b"PAR1", b"\x93NUMPY", b"PK\x03\x04")) or b"\x00" in head[:4096]:
        return 0
    line = head.replace(b"\r", b"\n").split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
    if not line:
        return 0
    return max(_fields(line, d) for d in (",", "\t", ";"))


def _fields(line: str, delimiter: str) -> int:
    try:
        return len(next(csv.reader([line], delimiter=delimiter)))
    except csv.Error:  # a field over the csv module's size limit: count the delimiters
        return line.count(delimiter) + 1


def first_line_width(parts: list[bytes]) -> int | None:
    """:func:`_header_width` of the text unpacked so far (``parts``, the newest last), or None
    while its first line has not ended: a header longer than a chunk is counted whole."""
    if len(parts) > 1 and b"\n" not in parts[-1] and b"\r" not in parts[-1]:
        return None  # still inside the first line (earlier parts held no line break either)
    head = b"".join(parts) if len(parts) > 1 else parts[0]
    width = _header_width(head)
    return None if width and b"\n" not in head and b"\r" not in head else width


def csv_header(handle: BinaryIO, delimiter: str, encoding: str) -> list[str]:
    """The whole first record of a delimited file, its names stripped: the header the loader
    counts when it is longer than the sniffed head (its size is bounded by the byte limit)."""
    with io.TextIOWrapper(handle, encoding=encoding, errors="replace", newline="") as text:
        return [c.strip() for c in next(csv.reader(text, delimiter=delimiter), [])]


def line_breaks(data: bytes) -> int:
    """Line breaks in ``data`` as pandas and the csv module count them: LF, CR LF, or CR alone."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def count_csv_rows(data: bytes | None, path: Path | None, n_columns: int, limits: Decoded, display: str) -> None:
    """Count the lines of a CSV (bytes, or a file in 1 MiB chunks, stopping early) and refuse it over
    ``limits`` before pandas parses it.

    Every line after the header counts as a row: blank lines and line breaks inside quoted
    cells count too, so the count is an upper bound (exact for the files tools write).

    Raises
    ------
    CalibrationInputError
        When the rows, or the rows times ``n_columns``, are over ``limits``.
    """
    if limits.max_rows is None and limits.max_cells is None:
        return
    caps = [limits.max_rows, None if limits.max_cells is None else limits.max_cells // max(n_columns, 1)]
    stop = min(c for c in caps if c is not None) + 1  # lines: the rows allowed and the header
    if data is not None:
        lines, last = line_breaks(data), data[-1:]
    else:
        assert path is not None
        lines, last = 0, b""
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_READ_CHUNK), b""):
                lines, last = lines + line_breaks(chunk), chunk[-1:]
                if lines > stop:
                    limits.check(lines - 1, n_columns, display, at_least=True)
    rows = lines - 1 + (last not in (b"\n", b"\r", b""))  # a last line without a line break is a row too
    limits.check(max(rows, 0), n_columns, display)


def _npy_table_shape(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, int]:
    """(rows, columns) of an array read as a table: the first axis is rows, the others and the fields of a
    structured dtype are columns."""
    rows = shape[0] if shape else 1
    columns = 1
    for extent in shape[1:]:
        columns *= extent
    return rows, columns * max(len(dtype.names or ()), 1)
