"""Showing user-supplied text (file, model, class and column names) as plain text, never as markup.

Two renderers interpret text in this app:

* **Streamlit Markdown** -- ``st.markdown``, ``st.caption``, ``st.info`` /
  ``warning`` / ``error`` / ``success``, titles, widget labels and help
  texts, metric labels, expander and tab labels. A class named
  ``![t](http://host/t.png)`` would make every visitor's browser fetch that
  URL, ``[x](http://host)`` would become a link, ``:red[...]``, ``$...$`` and
  ``**`` would change the look. :func:`md` backslash-escapes every ASCII
  punctuation character (CommonMark, section 2.4: "any ASCII punctuation
  character may be backslash-escaped"), so the renderer shows each one
  literally, and folds line breaks into spaces so a name cannot start a new
  block (a heading, a list, a code block). :func:`literal` is the other way to
  put a name into Markdown: as a code span (monospace), shown verbatim.
* **Plotly** -- titles, axis titles, tick labels, legend entries and hover
  labels accept a subset of HTML (``<b>``, ``<a href>``, ``<span style>``,
  ``<br>``) and ``%{...}`` placeholders in hover templates. :func:`plot_text`
  writes ``& < > % $`` as HTML character references, which Plotly turns back
  into the characters as text (never into tags, placeholders or MathJax).

Option labels of ``st.selectbox`` / ``st.multiselect`` and the cells of
``st.dataframe`` are plain text already; ``st.code`` and ``st.text`` show
their argument as written. The option labels of ``st.radio`` are Markdown:
pass ``format_func=md`` when they come from a file.

All three functions accept any object (``str()`` of it), so a page can pass a
class name that happens to be a number.
"""
from __future__ import annotations

import re
import string

from calib_core.plot.text import plot_text  # noqa: F401 -- the app's pages use it from here too

__all__ = ["literal", "md", "plot_text"]

_MARKDOWN_ESCAPES = {ord(c): "\\" + c for c in string.punctuation}


def md(value: object) -> str:
    """``value`` as literal text inside Streamlit Markdown.

    Parameters
    ----------
    value : object
        A user-supplied string (or anything; ``str(value)`` is used).

    Returns
    -------
    str
        Every ASCII punctuation character preceded by a backslash, white
        space (line breaks included) collapsed to single spaces and
        non-printable characters (bidi overrides, zero-width characters)
        shown as U+FFFD. Rendered, it reads as ``value`` on one line.

    Examples
    --------
    >>> md("![t](t.png)")
    '\\\\!\\\\[t\\\\]\\\\(t\\\\.png\\\\)'
    >>> md("http://h") == "http\\\\:\\u2060\\\\/\\\\/h"  # no autolink either
    True
    """
    return _break_autolinks(_one_line(value).translate(_MARKDOWN_ESCAPES))


def _one_line(value: object) -> str:
    """``str(value)`` on one line: runs of white space (line breaks included) folded to one space and
    non-printable characters (e.g. bidi overrides, zero-width joiners) shown as U+FFFD."""
    return "".join(c if c.isprintable() else "\ufffd" for c in " ".join(str(value).split()))


#: Streamlit's Markdown (GitHub's autolink extension) turns bare ``http://``, ``www.`` and e-mail
#: addresses into links even when every character is backslash-escaped; a WORD JOINER (U+2060,
#: invisible, zero width) inside each trigger keeps them plain text.
_AUTOLINK_TRIGGERS = re.compile(r"(\\:)(?=\\/\\/)|(?<=w)(?=ww\\\.)|(?=\\@)", re.IGNORECASE)


def _break_autolinks(escaped: str) -> str:
    """``escaped`` (output of the punctuation escapes) with a word joiner inside every autolink trigger."""
    return _AUTOLINK_TRIGGERS.sub(lambda m: (m.group(1) or "") + "\u2060", escaped)


def literal(value: object) -> str:
    """``value`` as a Markdown code span: shown exactly as typed (monospace), never read as Markdown or HTML.

    The code-span form of :func:`md`, for names that read better set apart
    (model, class and split names on the Recalibration page). CommonMark,
    section 6.1: a code span opens and closes with backtick strings of equal
    length and its content is shown literally (no emphasis, links, LaTeX,
    emoji or colour directives).

    Parameters
    ----------
    value : object
        A user-supplied string (or anything; ``str(value)`` is used).

    Returns
    -------
    str
        ``value`` with runs of white space (line breaks included) folded to one
        space, non-printable characters shown as U+FFFD, fenced by one backtick
        more than its longest run of backticks (padded with a space when it
        starts or ends with a backtick, or is empty). ``:material/`` gets a
        zero-width space after its colon because Streamlit expands icon codes
        even inside code spans.

    Examples
    --------
    >>> literal("**model** v2")
    '`**model** v2`'
    >>> literal("a`b")
    '``a`b``'
    """
    text = _one_line(value).replace(":material/", ":\u200bmaterial/")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"
