"""How result objects show themselves: a short ``repr`` and a small HTML table in Jupyter (``_repr_html_``).

:func:`compact_display` decorates a result dataclass: scalars are shown with
four significant digits, an array by its shape and a few values, a table by
its shape and columns, text shortened, so the ``repr`` of a bootstrap with
thousands of resamples is one line. The HTML table escapes every value
(:func:`html.escape`): names of classes, groups and models come from users'
files.
"""
from __future__ import annotations

import dataclasses
import html
import numbers
from typing import Any, TypeVar

import numpy as np

__all__ = ["MAX_VALUE_CHARS", "compact_display", "short_value"]

#: The longest text a field's value is shown with (longer text is cut and ends with "...").
MAX_VALUE_CHARS = 60
_ARRAY_ITEMS = 4  # an array shows this many leading values
_HTML_DICT_ROWS = 40  # a dict of scalars up to this size is a nested table in the HTML

T = TypeVar("T")


def _cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_value(value: Any) -> str:
    """One field's value in at most :data:`MAX_VALUE_CHARS` characters.

    Examples
    --------
    >>> short_value(np.arange(1000.0))
    'array(1000,) [0, 1, 2, 3, ...]'
    >>> short_value(0.123456789)
    '0.1235'
    """
    if value is None or isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.4g}"
    if isinstance(value, str):
        return _cut(repr(value))
    if isinstance(value, np.ndarray):
        shape = "x".join(str(n) for n in value.shape) if value.ndim != 1 else f"{value.shape[0]},"
        head = value.ravel()[:_ARRAY_ITEMS]
        items = ", ".join(short_value(v.item() if hasattr(v, "item") else v) for v in head)
        more = ", ..." if value.size > _ARRAY_ITEMS else ""
        return _cut(f"array({shape}) [{items}{more}]")
    if hasattr(value, "shape") and hasattr(value, "columns"):  # a DataFrame, without importing pandas
        rows, columns = value.shape
        return _cut(f"table {rows}x{columns} ({', '.join(str(c) for c in list(value.columns)[:4])}"
                    f"{', ...' if columns > 4 else ''})")
    if isinstance(value, (list, tuple)):
        if len(value) <= _ARRAY_ITEMS and all(isinstance(v, (str, numbers.Number)) or v is None for v in value):
            items = ", ".join(short_value(v) for v in value)
            return _cut(f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})")
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        if 0 < len(value) <= 2 and all(isinstance(v, (str, numbers.Number)) or v is None for v in value.values()):
            return _cut("{" + ", ".join(f"{short_value(k)}: {short_value(v)}" for k, v in value.items()) + "}")
        return f"dict of {len(value)}"
    if dataclasses.is_dataclass(value):
        return f"{type(value).__name__}(...)"
    return _cut(repr(value))


def _shown_fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr]


def _compact_repr(self: Any) -> str:
    return f"{type(self).__name__}(" + ", ".join(f"{name}={short_value(value)}"
                                                  for name, value in _shown_fields(self)) + ")"


def _html_cell(value: Any) -> str:
    """A value as HTML: a small dict of scalars (a report's values by metric) as a nested table."""
    if (isinstance(value, dict) and 0 < len(value) <= _HTML_DICT_ROWS
            and all(isinstance(v, (str, numbers.Number)) or v is None for v in value.values())):
        return _html_table(None, [(str(k), v) for k, v in value.items()])
    return html.escape(short_value(value))


def _html_table(caption: str | None, rows: list[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th style=\"text-align:left\">{html.escape(_cut(name))}</th>"
                   f"<td style=\"text-align:left\">{_html_cell(value)}</td></tr>" for name, value in rows)
    head = f"<caption>{html.escape(caption)}</caption>" if caption is not None else ""
    return f"<table>{head}{body}</table>"


def _repr_html(self: Any) -> str:
    return _html_table(type(self).__name__, _shown_fields(self))


def compact_display(cls: type[T]) -> type[T]:
    """Give a result dataclass a one-line ``repr`` and a small HTML table for Jupyter (fields as
    :func:`short_value` shows them; every value HTML-escaped). Put it above ``@dataclass``."""
    setattr(cls, "__repr__", _compact_repr)
    setattr(cls, "_repr_html_", _repr_html)
    return cls


