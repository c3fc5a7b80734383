"""Page set-up shared by every page: config, models, sidebar.

Every page starts with :func:`setup_page`. Because Streamlit runs a page
file directly when its URL (``/Reliability``) is opened first, ``app.py``
may never run in a session, so nothing here relies on it: each page sets
its own page config, loads the models of a fresh session and draws the
same sidebar.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import streamlit as st
from streamlit.errors import StreamlitAPIException

from calib_core._accel import blas_single_threaded_for_good
from studio import downloads, memory, nav, state
from studio.text import literal, md
from studio.weights_note import weights_note

#: Session key holding the title of the page drawn by the previous run (see :func:`linked`).
_LAST_PAGE = "studio:last_page"
#: Session key of the flag "this run entered its page" (a fresh session or a page switch).
_ENTERED = "studio:entered_page"


def _default_of(kwargs: dict[str, Any], args: tuple[Any, ...]) -> Any:
    """The default a widget call declares (``value=``, ``index=`` or ``default=``)."""
    if "value" in kwargs:
        return kwargs["value"]
    if "default" in kwargs:
        return kwargs["default"]
    if "index" in kwargs:
        options = list(kwargs.get("options", args[0] if args else ()))
        return options[kwargs["index"]] if kwargs["index"] is not None and options else None
    return None


def _url_text(value: Any, format_func: Callable[[Any], Any] | None) -> list[str]:
    """How Streamlit spells a widget value in the URL: options by their label, one entry per list item."""
    if isinstance(value, bool):
        return [str(value).lower()]
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if format_func is not None:
        return [str(format_func(item)) for item in items]
    return [str(int(v)) if isinstance(v, float) and v.is_integer() else str(v) for v in items]


def linked(widget: Callable[..., Any], label: str, *args: Any, key: str, options: Sequence[Any] | None = None,
           **kwargs: Any) -> Any:
    """Draw ``widget(label, *args, key=key, bind="query-params", **kwargs)``: a control kept in the URL.

    The key is the query parameter's name (``?bins=20``): Streamlit writes
    the value into the URL when it differs from the widget's default
    (``value=``, ``index=`` or ``default=``), seeds the widget from the URL
    when a link is opened and keeps the value across page switches (docs:
    ``bind`` of every input widget). Streamlit drops a value the widget
    cannot take (out of range, an unknown option); when a visitor arrives
    with such a link this shows why the control fell back to its default.

    Parameters
    ----------
    widget : callable
        ``st.slider``, ``column.radio``, ... (any widget that takes ``bind``).
    label, *args, **kwargs
        The widget's own arguments; pass the default as ``value=``,
        ``index=`` or ``default=``, never through Session State.
    key : str
        Short, readable, unique in the app (it is the URL parameter).
    options : sequence, optional
        The options of a widget whose options change with the data (models,
        classes): a value kept from an earlier view that is no longer among
        them is forgotten first, so the widget starts from its default.

    Returns
    -------
    The widget's value.
    """
    if options is not None and key in st.session_state:
        kept = st.session_state[key]
        stale = ([v for v in kept if v not in options] if isinstance(kept, (list, tuple))
                 else kept not in options)
        if stale:
            del st.session_state[key]
    raw, source = _link_raw(key)
    # A link's infinite number is dropped and the widget left unbound for this run, so that it
    # does not read the value at all (see _infinite_in_link); the note below says it fell back.
    bind = None if _infinite_in_link(widget, key) else "query-params"
    value = widget(label, *args, key=key, bind=bind, **kwargs)
    _linked_value(key, label, value, _default_of(kwargs, args), raw, kwargs.get("format_func"), source=source)
    return value


def linked_tabs(tabs: Sequence[str], *, key: str, name: str, default: str | None = None) -> Sequence[Any]:
    """``st.tabs(tabs, key=key, bind="query-params")``: the open tab kept in the URL (``?key=label``).

    Like :func:`linked` for a control; ``name`` says what the tabs choose
    (for the note on a bad link). Only the open tab's ``.open`` is True, so a
    page can run the open tab alone.

    Returns
    -------
    The tab containers.
    """
    raw, source = _link_raw(key)
    note = st.empty()  # above the tabs: a note drawn after them would follow the open tab's content
    containers = st.tabs(list(tabs), key=key, bind="query-params", default=default)
    _linked_value(key, name, st.session_state[key], default or tabs[0], raw, None, note=note, source=source)
    return containers


#: Widgets whose link value Streamlit reads as a number.
_NUMERIC_WIDGETS = frozenset({"number_input", "slider"})


def _infinite_in_link(widget: Callable[..., Any], key: str) -> bool:
    """Whether the link gives numeric ``widget`` an infinite number (``?seed=inf``, ``1e999``); if so, remove it.

    Streamlit reads such a value as ``float("inf")`` and an integer widget
    then raises ``OverflowError`` while seeding itself from the URL (it
    catches only ``ValueError`` and ``TypeError``): its error box instead of
    the note every other bad value gets. Streamlit seeds from the URL the
    page was opened with, so removing the parameter is not enough: the
    caller draws the widget unbound for this run (it starts at its default).
    """
    if getattr(widget, "__name__", "") not in _NUMERIC_WIDGETS or key not in st.query_params:
        return False
    if not any(math.isinf(_as_float(v)) for v in st.query_params.get_all(key)):
        return False
    with contextlib.suppress(StreamlitAPIException):  # bound to a widget of this run already: keep it
        del st.query_params[key]
    return True


def _as_float(text: str) -> float:
    """``float(text)``, NaN for text that is not a number."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def _link_raw(key: str) -> tuple[list[str] | None, str]:
    """The link's values of parameter ``key`` in the run that entered the page (else None), and where they come
    from: a restored session file's value (:func:`studio.state.take_restored`, carried on the links until its
    control is drawn) or the link's."""
    restored = state.take_restored(key)
    if restored is not None:
        return restored, "session file"
    checking = st.session_state.get(_ENTERED, False)
    return (st.query_params.get_all(key) if checking and key in st.query_params else None), "link"


def _linked_value(key: str, label: str, value: Any, default: Any, raw: list[str] | None,
                  format_func: Callable[[Any], Any] | None, note: Any = st, source: str = "link") -> None:
    """Record a bound control's URL value for the link box and the session file; note (in ``note``) a value of
    the link (or of a restored session file, ``source``) that the control refused."""
    _link_values()[key] = None if value == default else _url_text(value, format_func)
    state.remember_control(key, _link_values()[key])
    _show_link()
    if raw:
        after = st.query_params.get_all(key) if key in st.query_params else None
        as_default = raw == _url_text(default, format_func)
        if after != raw and not (value == default and as_default):
            shown = ", ".join(raw)
            note.info(f"The {source}'s {literal(f'{key}={shown}')} is not a valid choice for *{md(label)}* here, "
                    f"so it shows {literal(', '.join(_url_text(value, format_func)))} instead.",
                    icon=":material/link_off:")


#: Session keys of this run's "Link to this view" box and of the URL values of the controls drawn so far.
_LINK_SLOT = "studio:link_slot"
_LINK_VALUES = "studio:link_values"


def _link_values() -> dict[str, list[str] | None]:
    return st.session_state.setdefault(_LINK_VALUES, {})


def view_url() -> str:
    """The URL that reopens the current view: the page's address and its query parameters.

    The browser changes the URL of a bound control at once, but the server's
    ``st.query_params`` learns of it only on the next page load, so the
    controls drawn in this run (see :func:`linked`) give their own values;
    the other parameters (``demo``, ``split``, ``models``) come from
    ``st.query_params``.
    """
    base = str(st.context.url or "").split("?", 1)[0].split("#", 1)[0]
    drawn = _link_values()
    # A receiver cannot load an uploaded model: the link names only the models it reopens (the sidebar
    # points to the session file for the others, see _unlinked_note).
    unlinked = set(_unlinked_models())
    pairs = [(key, value) for key in st.query_params if key not in drawn
             for value in st.query_params.get_all(key) if not (key == "models" and value in unlinked)]
    pairs += [(key, value) for key, values in drawn.items() if values for value in values]
    return base + (f"?{urlencode(pairs)}" if pairs else "")


def _unlinked_models() -> list[str]:
    """Names of the loaded models a link cannot reopen (uploads: only demos travel in ``?demo=``)."""
    return [name for name, model in state.get_entries().items() if model.origin != "demo" or not model.demo]


def _unlinked_note() -> None:
    """Under the link box: which models the link leaves out, and the session file that carries them."""
    unlinked = _unlinked_models()
    if not unlinked:
        return
    demos = len(state.get_entries()) > len(unlinked)
    opens = ("reopens only the demos and this page's settings" if demos
             else "opens the default demo with this page's settings, not these models")
    st.caption(f"Uploaded models ({md(', '.join(unlinked))}) cannot travel in a link: this link {opens}. To "
               "share everything, send the session file (*Download session file* on the Data page): it restores "
               "every model and this view's settings.")
    st.page_link("app.py", label="Data page: Download session file", icon=":material/save:",
                 query_params=state.link_params() or None)


def _show_link() -> None:
    slot = st.session_state.get(_LINK_SLOT)
    if slot is not None:
        slot.code(view_url(), language=None, wrap_lines=True)


#: The browser tab's icon, shipped with the app: a Material icon as ``page_icon`` makes every visitor's
#: browser fetch it from fonts.gstatic.com (an outside host; an offline server has no favicon then).
FAVICON = Path(__file__).with_name("favicon.png")


def setup_page(title: str) -> list[state.ModelView]:
    """Configure the page (title, the shipped :data:`FAVICON`), load the models of a fresh session, draw the sidebar.

    Returns
    -------
    list of studio.state.ModelView
        The models to analyse (shown models, chosen rows).
    """
    st.set_page_config(page_title=f"{title} · Calibration studio", page_icon=FAVICON, layout="wide",
                       initial_sidebar_state="expanded")
    # A link's parameters are checked in the run that opens its page (see linked()); later
    # reruns of the same page may see parameters the browser already dropped.
    st.session_state[_ENTERED] = st.session_state.get(_LAST_PAGE) != title
    st.session_state[_LAST_PAGE] = title
    memory.start_trimming()  # once per process: freed memory goes back to the system
    blas_single_threaded_for_good()  # once per process: visitors' many small BLAS products spin no idle threads
    state.ensure_models_loaded()
    _sidebar(title)
    models = state.active_models()
    weights_note(title, models)
    return models


def _sidebar(current: str) -> None:
    with st.sidebar:
        st.markdown("### Calibration studio")
        params = state.link_params()
        for page in nav.available_pages():
            st.page_link(page.path, label=page.label, icon=page.icon, query_params=params or None,
                         disabled=False)
        st.markdown("**Link to this view**", help="Copy this address (button on the right) to share what the "
                    "page shows: the demo, the rows and every control of this page. Uploaded files cannot "
                    "travel in a link.")
        st.session_state[_LINK_VALUES] = {}
        st.session_state[_LINK_SLOT] = st.empty()
        _show_link()
        _unlinked_note()
        st.radio("Chart downloads", downloads.CHART_FORMATS, key=downloads.CHART_FORMAT_KEY, horizontal=True,
                 help="What each chart's camera button saves: PNG (a picture, twice the screen size) or SVG "
                      "(vector, for papers and slides).")
        st.divider()
        models = state.get_entries()
        if not models:
            st.caption("No model loaded.")
            return
        names = list(models)
        if len(names) > 1:
            st.session_state[state.SHOWN_WIDGET] = state.shown_models()
            st.multiselect("Models shown", names, key=state.SHOWN_WIDGET, on_change=_shown_changed,
                           help="Hide models from the analysis pages without unloading them.")
        else:
            st.markdown(f"**Model:** {md(names[0])}")
        options = state.split_options()
        if len(options) > 1:
            st.session_state[state.SPLIT_WIDGET] = state.get_split()
            # A radio renders its option labels as Markdown: the split values come from the files.
            st.radio("Rows", options, key=state.SPLIT_WIDGET, on_change=_split_changed, format_func=md,
                     help="Analyse every row, or only the rows of one split (the files' `split` column).")
        for view in state.active_models():
            what = ("confidence model" if view.predictions.kind == "confidence"
                    else f"{view.predictions.n_classes} classes")
            st.caption(md(f"{view.name}: {view.predictions.n_samples:,} rows ({view.rows}), {what}"))


def _shown_changed() -> None:
    state.set_shown_models(list(st.session_state[state.SHOWN_WIDGET]))


def _split_changed() -> None:
    state.set_split(st.session_state[state.SPLIT_WIDGET])


def require_models(models: list[state.ModelView]) -> None:
    """Stop the page with a pointer to the Data page when no model is shown."""
    if models:
        return
    if state.get_entries():
        st.info("Every model is hidden. Choose at least one under *Models shown* in the sidebar.")
    else:
        st.info("No model is loaded yet. Upload a predictions file or pick a demo on the Data page.")
        st.page_link("app.py", label="Go to the Data page", icon=":material/upload_file:")
    st.stop()


def class_models(models: list[state.ModelView], page: str, why: str) -> list[state.ModelView]:
    """The models a page about class probabilities can show: confidence models are set aside with one plain
    sentence (``why``: what the page needs), and the page stops when none is left."""
    stated = [m.name for m in models if m.predictions.kind == "confidence"]
    if stated:
        one = len(stated) == 1
        st.info(f"{', '.join(md(n) for n in stated)} {'is a confidence model' if one else 'are confidence models'} "
                f"(a stated confidence and whether each answer was right), so the {page} page does not apply to "
                f"{'it' if one else 'them'}: {why} The Reliability, Metrics and Groups pages show "
                f"{'its' if one else 'their'} calibration.")
    kept = [m for m in models if m.predictions.kind != "confidence"]
    if models and not kept:
        st.stop()
    return kept


class ProgressReporter:
    """``on_progress(done, total)`` that shows a progress bar only when work takes a while.

    Cached results come back in milliseconds; a bar flashing on every rerun
    would be noise. The bar appears once ``delay`` seconds have passed and
    is removed when the work is done (call :meth:`close`).
    """

    def __init__(self, text: str, *, delay: float = 0.15) -> None:
        self._text = text
        self._delay = delay
        self._start = time.perf_counter()
        self._slot = st.empty()
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None and time.perf_counter() - self._start < self._delay:
            return
        fraction = done / max(total, 1)
        label = f"{self._text} ({done} of {total})"
        if self._bar is None:
            self._bar = self._slot.progress(fraction, text=label)
        else:
            self._bar.progress(fraction, text=label)

    def close(self) -> None:
        self._slot.empty()


def run_with_progress(text: str, work: Callable[[Callable[[int, int], None]], Any]) -> Any:
    """Run ``work(on_progress)`` with a :class:`ProgressReporter`, removing the bar afterwards."""
    reporter = ProgressReporter(text)
    try:
        return work(reporter)
    finally:
        reporter.close()
