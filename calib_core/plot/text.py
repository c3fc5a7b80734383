"""User text inside Plotly figures: shown as written, never read as markup (no plotly import here)."""
from __future__ import annotations

__all__ = ["plot_text"]

_PLOTLY_ESCAPES = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord("%"): "&#37;", ord("$"): "&#36;"}


def plot_text(value: object) -> str:
    """``value`` as literal text inside a Plotly title, label, legend entry or hover template.

    Parameters
    ----------
    value : object
        A user-supplied string (or anything; ``str(value)`` is used).

    Returns
    -------
    str
        ``&``, ``<``, ``>``, ``%`` and ``$`` as character references
        (``&amp;``, ``&lt;``, ``&gt;``, ``&#37;``, ``&#36;``): Plotly shows
        them as those characters but never reads a tag, a ``%{...}``
        placeholder or a MathJax formula from them. The mapping is
        one-to-one, so distinct names stay distinct categories.

    Examples
    --------
    >>> plot_text("<img src=x> 5%")
    '&lt;img src=x&gt; 5&#37;'
    """
    return str(value).translate(_PLOTLY_ESCAPES)
