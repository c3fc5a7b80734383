"""Shared pieces of the browser tests (tests/e2e/test_e2e*.py): a fresh `streamlit run`
per test module (on a port of its own, also under pytest-xdist), Debian's headless
Chromium driven by Playwright, and Streamlit's own wait-for-rerun idiom.
The fixtures that use them live in tests/conftest.py.

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH); never downloads a
browser (no `playwright install`). Tests are skipped with a reason when the
browser or the playwright package is missing.
"""
from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
DEFAULT_VIEWPORT = {"width": 1440, "height": 2400}
DEFAULT_TIMEOUT_MS = 60_000


def require_browser():
    """The playwright sync API, or skip the test when it or Chromium is missing (in CI: fail instead)."""
    required = os.environ.get("CALIB_STUDIO_REQUIRE_ALL") == "1"
    if required:
        import playwright.sync_api as sync_api
    else:
        sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)"
        if required:
            pytest.fail(message)
        pytest.skip(message)
    return sync_api


def free_port() -> int:
    """A port free now. Under pytest-xdist each worker only takes ports of its own residue modulo the
    number of workers, so two workers starting servers at once never get the same one.

    The port is chosen here and tried, not asked of the kernel (``bind(0)``): Linux hands out ports of one
    parity to ``bind`` (the other is kept for ``connect``), so a worker waiting for the other parity waited
    for ever (CI stalled in this function).
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    chooser = random.Random()
    for _ in range(10_000):
        port = chooser.randrange(20_000, 60_000)
        port += (worker - port) % workers
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port of residue {worker} modulo {workers} between 20,000 and 60,000")


def wait_until_healthy(base: str, process: subprocess.Popen, *, timeout: float) -> bool:
    """Poll ``base``'s health endpoint until it answers "ok" (True), or the server exits or ``timeout``
    seconds pass (False). Shared by the browser tests and ``bench/bench_visitors.py``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return True
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.3)


@contextlib.contextmanager
def running_streamlit(log, *, stop_seconds: float, port: int | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """A fresh `streamlit run app.py` on ``port`` (default: a free one) writing to ``log`` (a file or
    ``subprocess.DEVNULL``): yields (base URL, process) as soon as it is started (see :func:`wait_until_healthy`);
    afterwards it is terminated, and killed if it has not stopped within ``stop_seconds``. Shared by the browser tests and ``bench/bench_visitors.py``."""
    port = free_port() if port is None else port
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
               "--server.port", str(port), "--server.address=127.0.0.1", "--browser.gatherUsageStats=false",
               "--server.fileWatcherType=none"]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        try:
            process.wait(timeout=stop_seconds)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def streamlit_server(log_name: str) -> Iterator[str]:
    """A fresh `streamlit run app.py` on a free port; yields its base URL, logs to test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / log_name
    with open(log_path, "wb") as log, running_streamlit(log, stop_seconds=10) as (base, process):
        if not wait_until_healthy(base, process, timeout=60):
            pytest.fail(f"streamlit did not start; see {log_path}:\n{log_path.read_text()[-2000:]}")
        yield base


def wait_for_app(page) -> None:
    """Wait until the app is connected and its script has finished (Streamlit's own e2e helper)."""
    page.wait_for_timeout(155)
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']")
    page.wait_for_selector("[data-testid='stAppViewContainer']")


def assert_no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()
