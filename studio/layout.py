"""Page set-up shared by every page: config, models, sidebar.

Every page starts with :func:`setup_page`. Because Streamlit runs a page
file directly when its URL (``/Reliability``) is opened first, ``app.py``
may never run in a session, so nothing here relies on it: each page sets
its own page config, loads the models of a fresh session and draws the
same sidebar.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from studio import nav, state
from studio.text import md

#: Prefix of the widget keys whose values survive a page change (see :func:`keep_widget_values`).
KEEP_PREFIX = "keep:"


def keep_widget_values() -> None:
    """Keep the values of ``keep:``-prefixed widgets when the user switches pages.

    Streamlit forgets a widget's value when a run does not draw it (the page
    changed). Writing the value back into Session State at the top of every
    page turns it into a user value that survives, the documented
    work-around (docs: multipage apps, "widgets").
    """
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and key.startswith(KEEP_PREFIX):
            st.session_state[key] = st.session_state[key]


def default(key: str, value: Any, options: Sequence[Any] | None = None) -> str:
    """Give the persisted widget ``key`` its default value once; returns the key.

    Pages create such widgets with ``key=default("keep:...", value)`` and no
    ``value=`` argument, so Streamlit never sees two competing defaults.
    With ``options``, a kept value that is no longer among them (say class 7
    after loading a 3-class model) falls back to ``value``.
    """
    if key not in st.session_state:
        st.session_state[key] = value
    elif options is not None:
        current = st.session_state[key]
        if isinstance(current, list):
            kept = [v for v in current if v in options]
            if kept != current:
                st.session_state[key] = kept or value
        elif current not in options:
            st.session_state[key] = value
    return key


def setup_page(title: str, icon: str) -> list[state.ModelView]:
    """Configure the page, load the models of a fresh session, draw the sidebar.

    Returns
    -------
    list of studio.state.ModelView
        The models to analyse (shown models, chosen rows).
    """
    st.set_page_config(page_title=f"{title} · Calibration studio", page_icon=icon, layout="wide",
                       initial_sidebar_state="expanded")
    keep_widget_values()
    state.ensure_models_loaded()
    _sidebar(title)
    return state.active_models()


def _sidebar(current: str) -> None:
    with st.sidebar:
        st.markdown("### Calibration studio")
        params = state.link_params()
        for page in nav.available_pages():
            st.page_link(page.path, label=page.label, icon=page.icon, query_params=params or None,
                         disabled=False)
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
            st.radio("Rows", options, key=state.SPLIT_WIDGET, on_change=_split_changed,
                     help="Analyse every row, or only the rows of one split (the files' `split` column).")
        for view in state.active_models():
            st.caption(md(f"{view.name}: {view.predictions.n_samples:,} rows ({view.rows}), "
                          f"{view.predictions.n_classes} classes"))


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
