"""Threads for row blocks: :func:`map_blocks`, :func:`parallel_map` and the BLAS limit they run under.

The O(N^2) kernel sums (:mod:`calib_core.metrics.kernel`,
:mod:`calib_core.metrics.kde`), the loess fits of the ICI, the class-wise
bootstrap and the recalibrators' block sums all split their work into
blocks and run them here. Each result is combined in block order, so the
numbers do not depend on the number of threads.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import TypeVar

try:  # installed with scikit-learn; optional here
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - then BLAS keeps its own threads
    ThreadpoolController = None

from calib_core._accel import compiled

__all__ = ["WORKERS", "blas_single_threaded", "blas_single_threaded_for_good", "loess_workers", "map_blocks",
           "parallel_map"]

#: Threads that process row blocks at once. NumPy releases the GIL inside
#: its array loops and BLAS calls, so blocks run in parallel; each block's
#: result is combined in block order, so the result does not depend on it.
WORKERS = max(1, min(2, os.cpu_count() or 1))

_T = TypeVar("_T")
_S = TypeVar("_S")


def map_blocks(function: Callable[[int, int], _T], blocks: Iterable[tuple[int, int]]) -> list[_T]:
    """``[function(start, stop) for start, stop in blocks]``, on :data:`WORKERS` threads.

    BLAS is held to one thread meanwhile: the products here have an inner
    dimension of K (a few classes), where OpenBLAS's own threads cost far
    more than they give, especially on a busy machine (40x slower measured
    on 2 cores); the parallelism comes from the block threads instead.
    """
    blocks = list(blocks)
    with blas_single_threaded():
        if WORKERS == 1 or len(blocks) < 2:
            return [function(start, stop) for start, stop in blocks]
        return parallel_map(lambda block: function(*block), blocks, WORKERS)


def parallel_map(function: Callable[[_S], _T], items: Sequence[_S], workers: int) -> list[_T]:
    """``[function(item) for item in items]`` on ``workers`` threads, results in order.

    When no thread can be started because the interpreter is shutting down
    (a server stopped by SIGTERM while a script computes: concurrent.futures'
    exit hook runs before the script's thread is joined, and every later
    ``submit`` raises "cannot schedule new futures after interpreter
    shutdown"), the items run on the calling thread instead, so the work
    ends quietly with the same results.
    """
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            futures = [pool.submit(function, item) for item in items]
        except RuntimeError as exc:
            if "interpreter shutdown" not in str(exc):
                raise
            futures = None
        if futures is not None:
            return [future.result() for future in futures]
    return [function(item) for item in items]


def loess_workers(n_fits: int) -> int:
    """Threads on which to run ``n_fits`` independent loess fits (:func:`parallel_map`; the ICI's classes).

    One per fit up to the cores when the compiled
    :data:`calib_core._accel.compiled.window_moments` runs (it releases the
    GIL for a whole fit), else 1: the fits of the numpy twin
    (:func:`calib_core._accel.window_moments`) run one after the other.
    Each fit is the same on either side, so only the speed depends on it.
    """
    if compiled.window_moments is None:
        return 1
    return max(1, min(n_fits, os.cpu_count() or 1))


def blas_single_threaded():
    """A context in which BLAS runs on one thread (threadpoolctl; a no-op without it).

    :func:`map_blocks` enters it for its blocks. A caller that calls
    :func:`map_blocks` many times in a row (an optimiser evaluating its loss
    30 times) holds it around the loop: each time BLAS gets its threads back,
    OpenBLAS wakes them and they spin for a while, on the very cores the next
    blocks need (vector scaling at 25,000 x 1,000: 2.0 s with the limit
    entered per call, 1.3 s held around the fit, on 2 cores).
    """
    controller = _blas_controller()
    return controller.limit(limits=1, user_api="blas") if controller is not None else nullcontext()


@functools.lru_cache(maxsize=1)
def blas_single_threaded_for_good() -> bool:
    """BLAS on one thread for the rest of the process (once per process); False without threadpoolctl.

    For a server that runs many visitors' computations side by side (the app): their BLAS calls are
    small products made thousands of times (one per bootstrap resample), and for each OpenBLAS wakes a
    thread per core that spins on the cores the other computations need. The AUROC interval at 12,000
    rows took 8.0 s of CPU with the default threads, 0.9 s on one (issue 29). The limit is never lifted:
    a later :func:`blas_single_threaded` restores one thread when it ends.
    """
    controller = _blas_controller()
    if controller is None:
        return False
    controller.limit(limits=1, user_api="blas")  # kept: the limiter is not used as a context
    return True


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """One threadpoolctl controller for the process (None without threadpoolctl).

    ``threadpool_limits`` finds the loaded libraries anew at every call: in the
    app (about 240 shared libraries) 1.5 ms, paid by each of the 1,001 kernel
    regressions of an Estimators-page re-render at 1,000 classes.
    """
    return ThreadpoolController() if ThreadpoolController is not None else None
