"""The room for speed (``calib_core._accel``): the block threads; the memo and the marks are tested with the
checks that use them (``tests/ground/test_validation.py``), each compiled kernel with the formula it speeds up
(``tests/compiled_support.py`` runs both paths)."""
import numpy as np
import pytest

import calib_core as cc
from calib_core._accel import threads


def test_map_blocks_finds_the_blas_libraries_once(monkeypatch):
    """Issue 15: threadpool_limits scanned the process's shared libraries at every map_blocks call (1.5 ms in
    the app, 1,001 times per Estimators re-render at 1,000 classes); one controller now serves every call,
    and BLAS is still held to one thread inside."""
    pytest.importorskip("threadpoolctl")
    made = []
    real = threads.ThreadpoolController
    monkeypatch.setattr(threads, "ThreadpoolController", lambda: made.append(1) or real())
    threads._blas_controller.cache_clear()
    try:
        seen = []
        for _ in range(3):
            threads.map_blocks(lambda start, stop: seen.append(
                [info["num_threads"] for info in real().info() if info["user_api"] == "blas"]), [(0, 1), (1, 2)])
        assert len(made) == 1
        assert all(threads == 1 for found in seen for threads in found)
    finally:
        threads._blas_controller.cache_clear()


@pytest.mark.parametrize("use_ici", [False, True])
def test_parallel_work_during_interpreter_shutdown_runs_serially(monkeypatch, use_ici):
    """Issue 30, item 9: a server stopped by SIGTERM while a script computes shuts the thread pools down
    (concurrent.futures' exit hook runs before the script's thread is joined); the script's next
    map_blocks raised "cannot schedule new futures after interpreter shutdown" into the server log.
    The work now finishes on the calling thread, with the same results."""
    import concurrent.futures.thread as pool_thread

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3), size=300)
    labels = rng.integers(0, 3, 300)
    if use_ici:
        work = lambda: cc.ici(probs, labels).ici  # noqa: E731 -- its classes on a pool of its own
    else:
        work = lambda: threads.map_blocks(lambda a, b: a * b, [(1, 2), (3, 4), (5, 6)])  # noqa: E731
    expected = work()
    monkeypatch.setattr(threads, "WORKERS", 2)
    monkeypatch.setattr(pool_thread, "_shutdown", True)
    assert np.array_equal(np.asarray(work()), np.asarray(expected))
