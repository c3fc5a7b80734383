"""CSV export that spreadsheets cannot run as formulas (CSV/formula injection).

A model name comes from a file name and a class name from a file's header,
so a cell of an exported table can hold user-supplied text such as
``=HYPERLINK("http://...")``; a spreadsheet opening the CSV would run it.
Every CSV the app or the command line writes goes through :func:`csv_bytes`.

References
----------
.. [OWASP] OWASP, "CSV Injection",
   https://owasp.org/www-community/attacks/CSV_Injection: prefix every cell
   that begins with ``=``, ``+``, ``-``, ``@``, tab (0x09) or carriage return
   (0x0D) with a single quote, and quote the cells (the CSV writer quotes
   cells holding the delimiter, quotes or line breaks and doubles the quotes
   inside).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["FORMULA_PREFIXES", "csv_bytes", "escape_csv_cell", "escape_csv_frame"]

#: First characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def escape_csv_cell(value: Any) -> Any:
    """``value`` with a single quote in front when it is text that starts like a formula.

    Only text is escaped: numbers (``-1.5``, ``np.float64(-2)``), booleans,
    missing values and other non-text objects come back unchanged, so a
    negative number stays a number. Text that merely looks like a number
    (``"-1+2"``, ``"-3"``) is text and is escaped.

    Parameters
    ----------
    value : object

    Returns
    -------
    object
        ``"'" + value`` for a ``str`` starting with one of
        :data:`FORMULA_PREFIXES`, else ``value``.

    Examples
    --------
    >>> escape_csv_cell('=HYPERLINK("http://x")')
    '\\'=HYPERLINK("http://x")'
    >>> escape_csv_cell(-1.5), escape_csv_cell("-1+2"), escape_csv_cell("ECE")
    (-1.5, "'-1+2", 'ECE')
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _escape_labels(labels: pd.Index) -> pd.Index:
    if isinstance(labels, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(escape_csv_cell(v) for v in entry) for entry in labels],
                                         names=[escape_csv_cell(n) for n in labels.names])
    return pd.Index([escape_csv_cell(v) for v in labels], name=escape_csv_cell(labels.name))


def escape_csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell, column name and index label escaped (:func:`escape_csv_cell`).

    Columns of numbers are left as they are; in columns that hold text
    (``object``, ``string`` or ``category`` dtype) each text cell is escaped
    and every other cell is kept.
    """
    escaped = frame.copy()
    for position in range(escaped.shape[1]):
        column = escaped.iloc[:, position]
        if isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(object)
        elif not (pd.api.types.is_object_dtype(column.dtype) or pd.api.types.is_string_dtype(column.dtype)):
            continue
        escaped.isetitem(position, column.map(escape_csv_cell, na_action="ignore").astype(object))
    escaped.columns = _escape_labels(escaped.columns)
    escaped.index = _escape_labels(escaped.index)
    return escaped


def csv_bytes(frame: pd.DataFrame, *, index: bool = False, float_format: str | None = None) -> bytes:
    """``frame`` as UTF-8 CSV bytes with formula-like text cells escaped (OWASP).

    Parameters
    ----------
    frame : pandas.DataFrame
    index : bool, default False
        Write the index as the first column(s).
    float_format : str, optional
        As :meth:`pandas.DataFrame.to_csv` (e.g. ``"%.10g"``).

    Returns
    -------
    bytes

    Examples
    --------
    >>> csv_bytes(pd.DataFrame({"model": ["=1+1", "ok"], "value": [-0.5, 2.0]})).decode()
    "model,value\\n'=1+1,-0.5\\nok,2.0\\n"
    """
    return escape_csv_frame(frame).to_csv(index=index, float_format=float_format).encode("utf-8")
