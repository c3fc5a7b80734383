"""Estimates first, intervals after: the *Stop* control and the memory of a page's finished intervals.

A page that fills its bootstrap intervals in after drawing every estimate
(Metrics, Recalibration) keeps two things in the session:

- a :class:`StopFlag`: *Stop* reruns the page with the flag holding the
  settings it was pressed at (the run key); while it stands the page
  computes no new interval, shows the finished ones and a button that
  resumes. A change of any setting clears it.
- a :class:`Memory` of the intervals finished so far, so a rerun (a stop,
  a display control, coming back to the page) shows them at once instead
  of drawing them pending first.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import streamlit as st


def run_key(models: Sequence[Any], **settings: Any) -> tuple:
    """What identifies one run of a page's intervals: the models' fingerprints and every setting."""
    return (tuple(m.fingerprint for m in models), *sorted(settings.items()))


class StopFlag:
    """A page's *Stop* flag in ``st.session_state[session_key]``.

    The flag holds the run key it was pressed at, or ``True`` (set by a
    link or a test: "the current settings").
    """

    def __init__(self, session_key: str):
        self.session_key = session_key

    def is_stopped(self, key: tuple) -> bool:
        """Whether the intervals of ``key`` were stopped; a flag left by other settings is cleared."""
        flag = st.session_state.get(self.session_key)
        if flag is True:
            st.session_state[self.session_key] = key
            return True
        if flag is not None and flag != key:
            del st.session_state[self.session_key]
        return flag == key

    def stop(self, key: tuple) -> None:
        """The *Stop* button's callback."""
        st.session_state[self.session_key] = key

    def resume(self) -> None:
        """The *Compute the remaining intervals* button's callback."""
        st.session_state.pop(self.session_key, None)


class Memory:
    """Finished intervals of this session in ``st.session_state[session_key]``: ``{cache key: value}``.

    At most ``limit`` entries (the dict is cleared beyond it; the page's
    ``st.cache_data`` keeps the computations themselves).
    """

    def __init__(self, session_key: str, limit: int = 4096):
        self.session_key, self.limit = session_key, limit

    def get(self, key: Hashable) -> Any:
        return st.session_state.get(self.session_key, {}).get(key)

    def put(self, key: Hashable, value: Any) -> None:
        done = st.session_state.setdefault(self.session_key, {})
        if len(done) >= self.limit:
            done.clear()
        done[key] = value
