"""The test suite's own helpers: what CI depends on beyond the product."""
from __future__ import annotations

import socket
import threading

import pytest

from tests import e2e_support


@pytest.mark.parametrize("worker", ["gw0", "gw1"])
def test_each_xdist_worker_gets_a_free_port_of_its_own_residue(monkeypatch, worker):
    """CI stalled: free_port asked the kernel for a port (bind to 0) until it had the worker's residue, but
    Linux gives bind() ports of one parity only, so one of two workers waited for ever."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    found: list[int] = []
    finder = threading.Thread(target=lambda: found.extend(e2e_support.free_port() for _ in range(50)), daemon=True)
    finder.start()
    finder.join(timeout=20)
    assert len(found) == 50, "free_port did not return (it waits for a port the kernel never gives)"
    assert {port % 2 for port in found} == {int(worker[2:])}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", found[-1]))  # free indeed


def test_blas_and_openmp_run_one_thread_in_a_test_process():
    """CI ran about 4 threads on its 2 cores: one pytest-xdist worker per CPU, and in each OpenBLAS's and libgomp's
    pools of one thread per CPU, whose idle threads spin. A LogisticRegression fit on the digits took 5 s of CPU
    instead of 0.08 s, a HistGradientBoostingClassifier fit 50 s instead of 4 s (tests/blas_support.py)."""
    import sklearn.ensemble  # noqa: F401  (loads scikit-learn's OpenMP runtime)
    import threadpoolctl

    pools = [(info["user_api"], info["num_threads"]) for info in threadpoolctl.threadpool_info()]
    assert {api for api, _ in pools} >= {"blas", "openmp"} and {threads for _, threads in pools} == {1}, pools
