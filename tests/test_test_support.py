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
