"""Expired results leave the server's memory without a visitor (issue 30, item 8: back near idle).

Streamlit's caches and :class:`studio.memory.ResultStore` dropped an expired
result only when the same cache was next used, so after the last visitor the
results of the last hour stayed in the process for good. The trimming thread
now sweeps them (:func:`studio.memory.sweep_expired`); these tests pin that,
including the Streamlit internals the sweep relies on.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import streamlit as st
from streamlit.runtime.caching.global_cache_budget import get_global_cache_budget

from studio import memory


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_result_lifetime_is_an_hour_unless_the_host_sets_it():
    assert memory.result_ttl_seconds({}) == 3600.0
    assert memory.result_ttl_seconds({memory.RESULT_TTL_VARIABLE: "120"}) == 120.0
    for bad in ("0", "-5", "inf", "nan", "an hour"):
        with pytest.raises(ValueError, match=memory.RESULT_TTL_VARIABLE):
            memory.result_ttl_seconds({memory.RESULT_TTL_VARIABLE: bad})


def test_a_sweep_frees_a_stores_expired_results_without_anyone_using_the_store():
    clock = _Clock()
    store = memory.ResultStore(ttl_seconds=10.0, clock=clock)
    store.put("fit", np.zeros(1000))
    assert store._bytes == 8000
    clock.now = 11.0
    assert store._bytes == 8000  # nobody asked: still held
    entries, freed = memory.sweep_expired()
    assert freed >= 8000
    assert store._bytes == 0 and len(store) == 0


def test_a_sweep_keeps_results_that_have_not_expired():
    clock = _Clock()
    store = memory.ResultStore(ttl_seconds=10.0, clock=clock)
    store.put("fit", np.zeros(10))
    clock.now = 5.0
    memory.sweep_expired()
    assert store.get("fit") is not None


def test_a_sweep_empties_expired_streamlit_cache_entries_and_their_share_of_the_global_budget():
    calls = []

    @st.cache_data(ttl=0.3, show_spinner=False)
    def cached_block(seed: int) -> np.ndarray:
        calls.append(seed)
        return np.full(50_000, seed, dtype=np.float64)

    cached_block.clear()
    cached_block(1)
    cached_block(2)
    storages = [s for s in memory._streamlit_data_storages() if "cached_block" in s.function_display_name]
    assert storages, "the sweep no longer finds Streamlit's cache_data storages (Streamlit changed?)"
    held = sum(len(s._mem_cache._data) for s in storages)
    assert held == 2
    budget = get_global_cache_budget()
    bytes_before = budget.total_bytes
    time.sleep(0.4)
    assert sum(len(s._mem_cache._data) for s in storages) == 2  # expired, but Streamlit only reaps on use
    entries, _ = memory.sweep_expired()
    assert entries >= 2
    assert sum(len(s._mem_cache._data) for s in storages) == 0
    if budget.is_enabled:
        assert budget.total_bytes <= bytes_before - 2 * 400_000
    cached_block(1)  # the cache still works after a sweep: recomputed, since it expired
    assert calls == [1, 2, 1]


def test_the_sweep_runs_where_the_c_library_cannot_trim(monkeypatch):
    """Review of issue 30's sweep: start_trimming returned before starting its thread where glibc's malloc_trim is
    missing (musl, macOS), so expired results were never swept there."""
    import threading

    clock = _Clock()
    store = memory.ResultStore(ttl_seconds=1.0, clock=clock)
    store.put("fit", np.zeros(100))
    clock.now = 2.0
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)
    monkeypatch.setattr(memory, "_trimmer", None)
    assert memory.start_trimming(interval=0.5) is False  # nothing to give back to the system ...
    deadline = time.monotonic() + 10
    while store._bytes and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store._bytes == 0  # ... but the expired result was swept
    assert any(t.name == "studio-malloc-trim" for t in threading.enumerate())
