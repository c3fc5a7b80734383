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
        # Two BLAS threads outside (tests/blas_support.py gives a test process one), so that one inside is seen.
        with real().limit(limits=2, user_api="blas"):
            assert {info["num_threads"] for info in real().info() if info["user_api"] == "blas"} == {2}
            for _ in range(3):
                threads.map_blocks(lambda start, stop: seen.append(
                    [info["num_threads"] for info in real().info() if info["user_api"] == "blas"]),
                    [(0, 1), (1, 2)])
        assert len(made) == 1
        assert seen and all(threads == 1 for found in seen for threads in found)
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


def test_kernels_load_in_memory_when_numba_has_no_writable_cache_folder():
    """Issue 29: in a container whose folders are all read-only, numba refuses to define a cached kernel
    ("cannot cache function ...: no locator available") and ``import calib_core`` crashed; the kernels are now
    compiled in memory, with a warning that says how to keep them."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("numba")
    script = (
        "import warnings, numba.core.caching as caching\n"
        "caching.CacheImpl._locator_classes = []  # no folder numba could write its cache in\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from calib_core._accel import compiled\n"
        "import numpy as np\n"
        "predicted, confidence = np.empty(2, np.intp), np.empty(2)\n"
        "compiled.row_max(np.array([[0.2, 0.8], [0.6, 0.4]]), predicted, confidence)\n"
        "print(predicted.tolist(), [str(w.message)[:36] for w in caught if w.category is RuntimeWarning])\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in __import__("os").environ.items() if k != "CALIB_CORE_NO_NUMBA"}
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1, 0] ['calib_core: numba cannot write its k']"


def test_kept_values_find_objects_by_identity_and_forget_freed_ones():
    """The one memo of derived quantities (issue 24): newest first, bounded, found by identity, and an entry goes
    with its key objects."""
    import gc

    from calib_core._accel import KeptValues
    kept = KeptValues(capacity=2)
    first, second, third = np.zeros(3), np.ones(3), np.ones(3)
    kept.put((first,), "a", 1)
    kept.put((second,), "a", 2)
    assert kept.get((first,), "a") == 1 and kept.get((second,), "a") == 2
    assert kept.get((third,), "a") is None  # equal data, another object
    assert kept.get((first,), "b") is None  # other settings
    kept.put((third,), "a", 3)
    assert kept.get((first,), "a") is None and len(kept) == 2  # the oldest dropped
    del second
    gc.collect()
    assert len(kept) == 1 and kept.objects() == [(third,)]


def _registry_metric_and_interval(metric):
    return lambda probs, labels: (cc.metric_value(metric, probs, labels),
                                  cc.metric_interval(metric, probs, labels, n_boot=20, seed=0))


USES_OF_THE_MEMOS = {
    "shared fit": _registry_metric_and_interval("ici"),
    "Cox fit": _registry_metric_and_interval("cox_slope"),
    "partition, sampler and draws": lambda probs, labels: cc.consistency_resampling(
        probs, labels, cc.CanonicalCE(n_bins=3, min_bin_size=5), 20, 7),
    "two-class cells": lambda probs, labels: cc.consistency_resampling(probs, labels, cc.CanonicalCE(n_bins=4), 20, 7),
}


@pytest.mark.parametrize("use", sorted(USES_OF_THE_MEMOS))
def test_no_memo_keeps_a_models_predictions_alive(use):
    """Issue 30's memory after visitors leave: module-level last-value memos (the shared loess/Cox fit, the
    partitions, the label sampler and draws, the cells of a resampling) held the arrays of the last model they
    saw, so a visitor's predictions outlived the visitor. They now hold them weakly."""
    import gc
    import weakref

    rng = np.random.default_rng(3)
    n_classes = 2 if use == "two-class cells" else 3
    probs = rng.dirichlet(np.ones(n_classes), size=400)
    labels = rng.integers(0, n_classes, 400)
    pred = cc.Predictions.from_arrays(probs.tolist(), labels.tolist())
    USES_OF_THE_MEMOS[use](pred.probs, pred.labels)
    gone = weakref.ref(pred.probs)
    del pred
    gc.collect()
    assert gone() is None


def test_loess_fits_go_to_threads_only_with_the_compiled_window_moments(monkeypatch):
    """Issue 24: the ICI read the compiled kernel itself to decide whether its classes' fits run on threads; the
    choice is now ``_accel.loess_workers``: every core (at most one per fit) when the compiled loess kernel runs,
    which releases the GIL, one thread with the numpy twin."""
    from calib_core import _accel
    from calib_core._accel import compiled

    monkeypatch.setattr(threads.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(compiled, "window_moments", lambda *args: None)
    assert [_accel.loess_workers(n) for n in (1, 3, 10)] == [1, 3, 4]
    monkeypatch.setattr(threads.os, "cpu_count", lambda: None)  # unknown: one core
    assert _accel.loess_workers(10) == 1
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(compiled, "window_moments", None)
    assert _accel.loess_workers(10) == 1


def test_no_cached_kernel_holds_a_kernel_in_its_closure():
    """numba keys a cached kernel by the pickled contents of its closure too, and a dispatcher pickles differently
    in every process: a kernel whose closure held the loess helpers was compiled anew by every process (4.5 s at
    the first ICI of each command-line call and of each new container, issue 29). Helpers it calls are module
    globals instead."""
    numba = pytest.importorskip("numba")
    from calib_core._accel import compiled

    assert compiled._KERNELS, "numba is installed but no kernel loaded"
    for name, kernel in compiled._KERNELS.items():
        cells = kernel.py_func.__closure__ or ()
        held = [cell.cell_contents for cell in cells
                if isinstance(cell.cell_contents, numba.core.dispatcher.Dispatcher)]
        assert not held, f"{name} holds kernels in its closure: {held}"
