"""The server's memory: byte-bounded shared results, and freed memory given back to the system.

Budget (``docs/deploy.md``, measured by ``bench/bench_visitors.py``):

* ``st.cache_data`` entries of every function and session together: at most
  ``server.maxCacheDataSize`` pickled bytes (``.streamlit/config.toml``),
  least recently used first out; Streamlit enforces it.
* Objects shared unpickled between sessions (the Recalibration page's
  evaluation sets and fits, the Lab's chunks): ``st.cache_resource`` bounds
  only entries and age, so they live in a :class:`ResultStore`, bounded in
  bytes as well (:data:`SHARED_BYTES` each).
* Expired results: Streamlit's caches and :class:`ResultStore` drop an
  expired entry only when that cache is next used, so after the last visitor
  an hour-old result would stay for good; :func:`sweep_expired` drops them.
* Freed memory: glibc keeps the heap pages of freed arrays (the server's RSS
  stayed at 944 MB after five visitors had left); :func:`start_trimming`
  sweeps expired results and returns the freed pages every
  :data:`TRIM_SECONDS` seconds, and bounds glibc's arenas and thresholds
  (:func:`bound_allocator`) so that the arenas of Streamlit's script threads
  do not keep freed arrays either (+293 MiB after six visitors otherwise).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pandas as pd

#: Bytes of the shared objects each :class:`ResultStore` of the app may hold (arrays counted by ``nbytes``).
SHARED_BYTES = 256 * 2**20

#: Seconds between two calls of glibc's ``malloc_trim`` by the server's trimming thread.
TRIM_SECONDS = 20.0

#: glibc's mmap and trim thresholds (``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``): an array of this many
#: bytes or more gets pages of its own, unmapped when it is freed, and an arena's free top beyond it goes back.
MALLOC_THRESHOLD_BYTES = 8 * 2**20

#: glibc arenas (``M_ARENA_MAX``): the main one, whose free top ``malloc_trim`` returns, and one more.
MALLOC_ARENAS = 2

#: Environment variable that shortens (or lengthens) how long cached results are kept, in seconds.
RESULT_TTL_VARIABLE = "CALIB_STUDIO_RESULT_TTL_SECONDS"

_LOGGER = logging.getLogger(__name__)


def result_ttl_seconds(environ: dict[str, str] | None = None) -> float:
    """How long a cached or stored result is kept, in seconds: an hour, or :data:`RESULT_TTL_VARIABLE`.

    One value for every ``st.cache_data`` of visitors' results and every
    :class:`ResultStore`, so a host (or ``bench/bench_visitors.py``) can check
    that memory goes back near idle within the stated lifetime. A value that is
    not a positive finite number is refused with a ``ValueError`` naming the variable.
    """
    text = (os.environ if environ is None else environ).get(RESULT_TTL_VARIABLE)
    if text is None or not text.strip():
        return 3600.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{RESULT_TTL_VARIABLE} must be a positive number of seconds, not {text!r}")
    return seconds


#: How long a stored or cached result is kept (seconds): an hour covers a working session.
RESULT_TTL_SECONDS = result_ttl_seconds()


def nbytes(value: Any, _seen: set[int] | None = None) -> int:
    """The bytes held by ``value``'s arrays, frames, byte strings and those of what it contains.

    Walks containers, dataclasses and plain objects (their ``__dict__``) once
    each; counts ``ndarray.nbytes`` (a view counts its base once), the values
    of pandas objects, and ``bytes``. Python scalars and strings count 0: the
    arrays are what grows with a visitor's rows and classes.
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base is not value:
            return nbytes(base, seen)
        return int(value.nbytes)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if isinstance(value, (pd.DataFrame, pd.Series, pd.Index)):
        usage = value.memory_usage(index=True, deep=False)
        return int(usage.sum() if hasattr(usage, "sum") else usage)
    if isinstance(value, dict):
        return sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(nbytes(v, seen) for v in value)
    if isinstance(value, (str, int, float, complex, bool, type(None))):
        return 0
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name, None), seen) for f in dataclasses.fields(value))
    state = getattr(value, "__dict__", None)
    return nbytes(state, seen) if isinstance(state, dict) else 0


class ResultStore:
    """A bounded, thread-safe mapping from a result's parameters to the result, shared by every session.

    Holds at most ``max_entries`` results and ``max_bytes`` bytes of them
    (:func:`nbytes`; the least recently used go first) and drops a result
    ``ttl_seconds`` after it was stored, as ``st.cache_data`` does with
    ``max_entries``, ``max_size`` and ``ttl``. A result larger than
    ``max_bytes`` on its own is not stored (it is recomputed when asked
    again), so the bound holds.
    """

    def __init__(self, max_entries: int = 512, ttl_seconds: float = RESULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic, max_bytes: int | None = SHARED_BYTES) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.max_bytes = max_bytes
        self._clock = clock
        self._items: OrderedDict[Hashable, tuple[float, int, Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _stores.add(self)

    def _expire(self) -> None:
        """Drop the results stored more than ``ttl_seconds`` ago (call with the lock held)."""
        deadline = self._clock() - self.ttl_seconds
        for key in [k for k, (stored, _, _) in self._items.items() if stored <= deadline]:
            self._bytes -= self._items.pop(key)[1]

    def sweep(self) -> int:
        """Drop the expired results now (not only when the store is next used); returns the bytes freed."""
        with self._lock:
            before = self._bytes
            self._expire()
            return before - self._bytes

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            self._expire()
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key][2]

    def put(self, key: Hashable, value: Any) -> None:
        size = nbytes(value)
        with self._lock:
            self._expire()
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            if self.max_bytes is not None and size > self.max_bytes:
                return
            self._items[key] = (self._clock(), size, value)
            self._bytes += size
            while len(self._items) > self.max_entries or (self.max_bytes is not None and self._bytes > self.max_bytes):
                self._bytes -= self._items.popitem(last=False)[1][1]

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The stored result of ``key``, else ``compute()`` stored (two sessions may both compute it)."""
        found = self.get(key)
        if found is None:
            found = compute()
            self.put(key, found)
        return found

    @property
    def size_bytes(self) -> int:
        """Bytes of the results held now."""
        with self._lock:
            self._expire()
            return self._bytes

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            self._expire()
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._items)


#: Every live :class:`ResultStore`, for :func:`sweep_expired`.
_stores: weakref.WeakSet[ResultStore] = weakref.WeakSet()


# ----------------------------------------------------------------------------- expired results

def _streamlit_data_storages() -> list[Any]:
    """The in-memory storages of every ``st.cache_data`` function and session cache of this process.

    Streamlit has no public way to reap expired entries: its TTL cache removes
    them only on a write to the same function's cache or a length query. This
    reads ``cache_data_api._data_caches`` (Streamlit 1.5x-1.6x); if Streamlit
    changes it, this returns nothing and ``tests/app/test_memory_sweep.py`` fails.
    """
    try:
        from streamlit.runtime.caching import cache_data_api
    except ImportError:  # pragma: no cover - streamlit is a dependency of the app
        return []
    caches = getattr(cache_data_api, "_data_caches", None)
    lock, by_session = getattr(caches, "_caches_lock", None), getattr(caches, "_function_caches", None)
    if lock is None or not isinstance(by_session, dict):
        return []
    with lock:
        return [cache.storage for session in by_session.values() for cache in session.values()]


def _reap_streamlit_storage(storage: Any) -> int:
    """Remove the expired entries of one Streamlit in-memory cache storage; returns how many.

    Does what Streamlit itself does around a removal
    (``InMemoryCacheStorageWrapper._remove_from_mem_cache``): under the
    storage's lock, the TTL cache's ``expire()``, then the removals reported to
    the global ``server.maxCacheDataSize`` budget so its byte count stays right.
    """
    memory, lock = getattr(storage, "_mem_cache", None), getattr(storage, "_mem_cache_lock", None)
    take, report = getattr(storage, "_take_pending_removals", None), getattr(storage, "_report_removals", None)
    if memory is None or lock is None or not hasattr(memory, "expire") or take is None or report is None:
        return 0
    with lock:
        removed = memory.expire()
        report(take())
    return len(removed)


def sweep_expired() -> tuple[int, int]:
    """Drop every expired result now: ``(Streamlit cache entries removed, ResultStore bytes freed)``.

    Called by the trimming thread (:func:`start_trimming`) so that after the
    last visitor the server's caches empty within :data:`RESULT_TTL_SECONDS`
    (plus :data:`TRIM_SECONDS`) instead of keeping their last results for good.
    """
    entries = 0
    for storage in _streamlit_data_storages():
        entries += _reap_streamlit_storage(storage)
    freed = sum(store.sweep() for store in list(_stores))
    return entries, freed


# ----------------------------------------------------------------------------- freed memory

def _glibc_function(name: str, argtypes: list) -> Callable[..., int] | None:
    """glibc's function ``name`` (returning an int), or None on other C libraries (macOS, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function


def _malloc_trim() -> Callable[[], Any] | None:
    """glibc's ``malloc_trim(0)``, or None on other C libraries (macOS, musl)."""
    trim = _glibc_function("malloc_trim", [ctypes.c_size_t])
    return None if trim is None else (lambda: trim(0))


#: glibc's ``mallopt`` parameters (malloc.h) and the environment variables with which a host sets them itself.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_MALLOC_VARIABLES = {_M_MMAP_THRESHOLD: ("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold"),
                     _M_TRIM_THRESHOLD: ("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold"),
                     _M_ARENA_MAX: ("MALLOC_ARENA_MAX", "glibc.malloc.arena_max")}


def bound_allocator(environ: dict[str, str] | None = None) -> dict[int, int]:
    """Fix glibc's arena count and its mmap and trim thresholds (:data:`MALLOC_ARENAS`, :data:`MALLOC_THRESHOLD_BYTES`).

    By default glibc gives threads up to eight arenas per core and raises its
    mmap threshold to the size of each large block freed (up to 32 MiB) and
    its trim threshold to twice that, so after the first large array is
    freed, arrays of up to 32 MiB come from the arena of the thread that made
    them and up to 64 MiB of freed memory stays at the top of each arena.
    ``malloc_trim`` returns the free blocks inside every arena but the free
    top of the main arena only. Streamlit runs every script run in a new
    thread: the server kept +293 MiB after six visitors had left and every
    cache had been emptied, with no array reachable from Python
    (``docs/deploy.md``). With two arenas and both thresholds fixed at 8 MiB,
    a larger array is unmapped when freed and an arena keeps at most 8 MiB of
    free top; arrays below 8 MiB still reuse arena memory (a 1 MiB threshold
    cost 70 % more CPU time on a metric report). Arenas made before this call
    stay in use. A setting the host made itself (``MALLOC_ARENA_MAX``,
    ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``GLIBC_TUNABLES``)
    is left as it is.

    Returns
    -------
    dict
        The ``mallopt`` parameters set and their values; empty where the C
        library is not glibc.
    """
    env = os.environ if environ is None else environ
    mallopt = _glibc_function("mallopt", [ctypes.c_int, ctypes.c_int])
    if mallopt is None:
        return {}
    chosen = {_M_ARENA_MAX: MALLOC_ARENAS, _M_MMAP_THRESHOLD: MALLOC_THRESHOLD_BYTES,
              _M_TRIM_THRESHOLD: MALLOC_THRESHOLD_BYTES}
    done = {}
    for parameter, value in chosen.items():
        variable, tunable = _MALLOC_VARIABLES[parameter]
        if variable in env or tunable in env.get("GLIBC_TUNABLES", ""):
            continue
        if mallopt(parameter, value) == 1:
            done[parameter] = value
    return done


_trimmer: threading.Thread | None = None
_trimmer_lock = threading.Lock()


def release_freed_memory() -> bool:
    """Give the pages of freed memory back to the system now (glibc); False where it cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim()
    return True


def start_trimming(interval: float = TRIM_SECONDS) -> bool:
    """Start (once per process) a thread that sweeps expired results and returns freed memory every ``interval`` s.

    Each round calls :func:`sweep_expired`, then :func:`release_freed_memory`;
    glibc's arenas and thresholds are bounded once first (:func:`bound_allocator`).

    glibc returns a freed block to the system only when it sits at the top of
    the heap or was mapped on its own; the blocks of the arrays a visitor's
    pages freed stay in the process otherwise, and the server's resident size
    only grows. ``malloc_trim(0)`` hands back every free page; on an idle heap
    it takes well under a millisecond. Pyarrow's own allocator (mimalloc or
    jemalloc) keeps its freed memory too, so the app reads files through the
    system allocator (:func:`use_system_allocator`). The sweep runs on every
    platform; returns whether freed memory is returned too (glibc only).
    """
    global _trimmer
    can_trim = _malloc_trim() is not None
    with _trimmer_lock:
        if _trimmer is None or not _trimmer.is_alive():
            def run() -> None:
                while True:
                    time.sleep(interval)
                    try:
                        sweep_expired()
                    except Exception:  # a sweep must never stop the trimming  # noqa: BLE001
                        _LOGGER.warning("sweeping expired results failed", exc_info=True)
                    release_freed_memory()

            if can_trim:
                bound_allocator()
                use_system_allocator()
            _trimmer = threading.Thread(target=run, name="studio-malloc-trim", daemon=True)
            _trimmer.start()
    return can_trim


def use_system_allocator() -> None:
    """Let pyarrow allocate with the C library's malloc, whose freed pages :func:`start_trimming` returns."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return
    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
