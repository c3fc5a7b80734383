"""The app runs BLAS on one thread for good (issue 29).

A visitor's intervals make thousands of small BLAS products (one per resample); with a BLAS thread per core,
OpenBLAS wakes its idle threads for each and they spin on the cores the other computations need (the AUROC
interval at 12,000 rows: 8.0 s of CPU against 0.9 s on one thread). ``studio.layout.setup_page`` limits the
server process at every page's first run.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import threadpoolctl
from app_support import APP

from calib_core._accel import blas_single_threaded, blas_single_threaded_for_good
from tests.blas_support import THREAD_LIMITS, pinned_environment


def _blas_thread_counts() -> set[int]:
    return {info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"}


def test_blas_stays_on_one_thread_for_good_even_after_a_context_ends():
    blas_single_threaded_for_good.cache_clear()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):  # a process that had two threads
        assert _blas_thread_counts() == {2}
        assert blas_single_threaded_for_good() is True
        assert _blas_thread_counts() == {1}
        with blas_single_threaded():
            pass
        assert _blas_thread_counts() == {1}
    blas_single_threaded_for_good.cache_clear()


def test_a_page_run_leaves_the_server_with_one_blas_thread():
    """In a fresh process whose BLAS starts with two threads (a server on 2 CPUs, unlike a test process, whose
    single thread pinned at load would hide the limit), one run of the Data page leaves one thread, for the main
    thread and for a new thread (Streamlit runs each page run in a new one)."""
    script = textwrap.dedent(f"""
        import threading
        import threadpoolctl
        import numpy, scipy.linalg
        def counts():
            return sorted({{i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}})
        before = counts()
        from streamlit.testing.v1 import AppTest
        AppTest.from_file({str(APP)!r}, default_timeout=120).run()
        seen = []
        reader = threading.Thread(target=lambda: seen.append(counts()))
        reader.start()
        reader.join()
        print(before, counts(), seen[0])
    """)
    env = pinned_environment()
    for name in THREAD_LIMITS:
        env.pop(name, None)
    env["OPENBLAS_NUM_THREADS"] = "2"  # as a server has on 2 CPUs, whatever this machine has
    env["PYTHONPATH"] = os.pathsep.join([str(APP.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                          cwd=APP.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    before, after, in_a_new_thread = done.stdout.strip().splitlines()[-1].split("] ")
    assert before != "[1", "BLAS started with one thread: the check cannot tell"
    assert (after + "]", in_a_new_thread) == ("[1]", "[1]")
