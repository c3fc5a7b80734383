"""Does the hosted demo hold its visitors? Page settle times under concurrency, and server memory (issue 14, item 6).

Drives a real ``streamlit run app.py`` (a fresh server per phase, on a free
port) with Debian's headless Chromium through Playwright (``/usr/bin/chromium``
or ``CHROMIUM_PATH``; never downloads a browser). A visitor is a browser
context (its own Streamlit session) that opens the Data page and then clicks
every page of the sidebar in turn, as a person would (same session).

A page's **settle time**: from the click on its sidebar link until the URL
is the page's and Streamlit reports the script as finished (``wait_for_app``
of ``tests/e2e_support.py``, which waits 155 ms first, so no figure is below
0.155 s); the charts the script sent are then drawn by the browser.

Phases
------
1. ``single``: one visitor on the demo, twice (a cold pass, then a warm one,
   the caches filled by the first).
2. ``concurrent``: ``--visitors`` (default 5) visitors at once on the demo,
   on the warm server; median and 95th percentile beside the single
   visitor's warm figures, and every exception or ``st.error`` counted.
3. ``memory``: a fresh server; ``--sessions`` (default 30) visitors in turn,
   each uploading a different ``--rows``-row file (default 20,000 rows,
   ``--classes`` 3, with a calibration/test split) and visiting every page.
   The server's RSS is sampled every 0.25 s (``/proc/PID/status``:
   ``VmRSS``; ``VmHWM`` is the kernel's own peak); reported: idle RSS
   (after one warm-up visit on the demo), the peak over the sessions, and
   the RSS when the last session ends and again after ``--settle`` seconds
   (Streamlit drops a disconnected session after ``server.disconnectedSessionTTL``,
   120 s by default). ``--budget-minutes`` stops starting new sessions when
   the time is up; the report says how many ran. ``--result-ttl SECONDS``
   starts the server with that result lifetime
   (``CALIB_STUDIO_RESULT_TTL_SECONDS``, an hour by default) and adds a last
   figure: the RSS once every cached result has expired and been swept
   (lifetime + one trimming round after the last session), to compare with idle.
4. ``upload``: a fresh server; one visitor uploads one large file
   (``--upload-mb``, default 150 MB: 3 classes and a split column) on the
   Data page and waits for its card; the server's RSS before, its peak while
   the file is read and its RSS afterwards (issue 30: a 150 MB upload peaked
   at 2.5 GB).

    python bench/bench_visitors.py                      # all phases
    python bench/bench_visitors.py --phases single concurrent
    python bench/bench_visitors.py --phases memory --sessions 30 --budget-minutes 15
    python bench/bench_visitors.py --phases memory --sessions 10 --result-ttl 300   # back near idle?
    python bench/bench_visitors.py --phases memory --sessions 3 --settle 130 --result-ttl 120 --port 8518  # short
    python bench/bench_visitors.py --phases upload --upload-mb 150

Target: no exception with 5 visitors at once; peak RSS under 1.5 GB over 30 sessions.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from studio.nav import available_pages  # noqa: E402
from tests.e2e_support import (  # noqa: E402  (the browser tests' server and browser helpers)
    CHROMIUM,
    CHROMIUM_ARGS,
    running_streamlit,
    wait_until_healthy,
)

VIEWPORT = {"width": 1440, "height": 1200}
PAGE_TIMEOUT_MS = 300_000
TARGET_PEAK_GB = 1.5
#: The servers' port (``--port``; None: a free one).
PORT: int | None = None


# ----------------------------------------------------------------------------- server and its memory



@contextlib.contextmanager
def serve(log_path: Path | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """A fresh ``streamlit run app.py`` on :data:`PORT` (a free port if None): yields (base URL, process); stops it."""
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    try:
        with running_streamlit(log, stop_seconds=15, port=PORT) as (base, process):
            if not wait_until_healthy(base, process, timeout=90):
                raise RuntimeError(f"streamlit did not start (log: {log_path})")
            yield base, process
    finally:
        if log_path:
            log.close()


def _status_kib(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


class RssSampler:
    """Samples a process's resident set size every ``interval`` seconds in a thread (peak and last, in MiB)."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval = pid, interval
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now_mib(self) -> float:
        return _status_kib(self.pid, "VmRSS") / 1024

    def hwm_mib(self) -> float:
        """The kernel's peak RSS of the process since it started (``VmHWM``)."""
        return _status_kib(self.pid, "VmHWM") / 1024

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                self.peak_mib = max(self.peak_mib, self.now_mib())
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# ----------------------------------------------------------------------------- one visitor

def url_path(page_file: str) -> str:
    """Streamlit's URL path of a page file (``pages/4_Bin_sensitivity.py`` -> ``Bin_sensitivity``; app.py -> "")."""
    if page_file == "app.py":
        return ""
    stem = Path(page_file).stem
    return stem.split("_", 1)[1] if stem.split("_", 1)[0].isdigit() else stem


@dataclass
class Visit:
    """What one visitor saw: settle seconds per page label, and the pages that showed an exception or error."""

    times: dict[str, float] = field(default_factory=dict)
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _on_page(url: str, path: str) -> bool:
    """Whether the browser's ``url`` is the page at ``path`` ("" is the Data page) of a server at its root."""
    shown = urlparse(url).path.rstrip("/")
    return shown.endswith(f"/{path}") if path else shown == ""


async def _settled(page) -> None:
    """Streamlit's own wait-for-rerun idiom (tests/e2e_support.wait_for_app), async."""
    await page.wait_for_timeout(155)
    await page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']")
    await page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']")
    await page.wait_for_selector("[data-testid='stAppViewContainer']")


async def _check(page, label: str, visit: Visit) -> None:
    if await page.locator("[data-testid='stException']").count():
        visit.exceptions.append(label)
    if await page.locator("[data-testid='stAlertContentError']").count():
        visit.errors.append(label)


async def visit_every_page(context, base: str, *, query: str = "", upload: Path | None = None) -> Visit:
    """Open the Data page (optionally upload a file), then click through every sidebar page in turn."""
    visit = Visit()
    page = await context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    start = time.perf_counter()
    await page.goto(f"{base}/{query}")
    await _settled(page)
    visit.times["Data (open)"] = time.perf_counter() - start
    await _check(page, "Data (open)", visit)
    if upload is not None:
        start = time.perf_counter()
        await page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(upload))
        await page.get_by_role("heading", name=upload.stem).wait_for()
        await _settled(page)
        visit.times["Data (upload)"] = time.perf_counter() - start
        await _check(page, "Data (upload)", visit)
    for nav_page in available_pages()[1:] + available_pages()[:1]:  # every page, then back to Data
        path = url_path(nav_page.path)
        start = time.perf_counter()
        await page.locator("[data-testid='stSidebar'] [data-testid='stPageLink']").get_by_text(
            nav_page.label, exact=True).click()
        await page.wait_for_url(lambda url, p=path: _on_page(url, p))
        await _settled(page)
        visit.times[nav_page.label] = time.perf_counter() - start
        await _check(page, nav_page.label, visit)
    await page.close()
    return visit


# ----------------------------------------------------------------------------- phases

def _quantile(values: list[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=float), q)) if values else float("nan")


def _row(label: str, values: list[float]) -> str:
    return (f"{label:<34} {len(values):>5} {statistics.median(values):>8.2f} {_quantile(values, 0.95):>8.2f} "
            f"{max(values):>8.2f}")


async def phase_single_and_concurrent(visitors: int, demo: str, phases: set[str]) -> None:
    from playwright.async_api import async_playwright

    log = ROOT / "test-artifacts" / "bench-visitors-concurrency.log"
    log.parent.mkdir(exist_ok=True)
    with serve(log) as (base, process):
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            query = f"?demo={demo}"
            single: list[Visit] = []
            for _ in range(2):  # cold, then warm
                context = await browser.new_context(viewport=VIEWPORT)
                single.append(await visit_every_page(context, base, query=query))
                await context.close()
            print(f"\nsingle visitor on the demo {demo} (settle seconds per page; cold = first visit after the "
                  "server start, warm = second visit)")
            print(f"{'page':<22} {'cold':>8} {'warm':>8}")
            for label in single[1].times:
                print(f"{label:<22} {single[0].times[label]:8.2f} {single[1].times[label]:8.2f}")
            warm = list(single[1].times.values())
            print(f"single visitor, warm: median {statistics.median(warm):.2f} s, 95th percentile "
                  f"{_quantile(warm, 0.95):.2f} s, slowest {max(warm):.2f} s; exceptions "
                  f"{sum(len(v.exceptions) for v in single)}, errors {sum(len(v.errors) for v in single)}")
            if "concurrent" in phases:
                contexts = [await browser.new_context(viewport=VIEWPORT) for _ in range(visitors)]
                start = time.perf_counter()
                results = await asyncio.gather(*(visit_every_page(c, base, query=query) for c in contexts),
                                               return_exceptions=True)
                wall = time.perf_counter() - start
                for context in contexts:
                    await context.close()
                failed = [r for r in results if isinstance(r, BaseException)]
                done = [r for r in results if isinstance(r, Visit)]
                together = [t for v in done for t in v.times.values()]
                print(f"\n{visitors} visitors at once on the demo {demo}, every page each ({wall:.1f} s wall "
                      f"clock for all; {os.cpu_count()} CPUs)")
                print(f"{'':<34} {'pages':>5} {'median':>8} {'p95':>8} {'max':>8}")
                print(_row("single visitor (warm)", warm))
                print(_row(f"{visitors} visitors at once", together))
                per_page = {label: [v.times[label] for v in done if label in v.times] for label in single[1].times}
                for label, values in per_page.items():
                    if values:
                        print(_row(f"  {label}", values))
                print(f"visitors that failed (timeout or browser error): {len(failed)} "
                      + (f"({failed[0]!r})" if failed else ""))
                print(f"pages with an exception: {sum(len(v.exceptions) for v in done)} "
                      f"{[e for v in done for e in v.exceptions]}; pages with st.error: "
                      f"{sum(len(v.errors) for v in done)} {[e for v in done for e in v.errors]}")
            await browser.close()
        print(f"server RSS after these phases: {_status_kib(process.pid, 'VmRSS') / 1024:.0f} MiB "
              f"(peak {_status_kib(process.pid, 'VmHWM') / 1024:.0f} MiB)")


def synthetic_file(folder: Path, index: int, rows: int, classes: int) -> Path:
    """A different over-confident ``rows`` x ``classes`` model per ``index`` (seeded), with a split column."""
    rng = np.random.default_rng(1000 + index)
    logits = rng.normal(scale=2.0, size=(rows, classes))
    truth = np.exp(logits - logits.max(axis=1, keepdims=True))
    truth /= truth.sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(rows, 1)) > np.cumsum(truth, axis=1)).sum(axis=1)
    sharp = np.exp(1.6 * (logits - logits.max(axis=1, keepdims=True)))  # over-confident: temperature 1/1.6
    probs = sharp / sharp.sum(axis=1, keepdims=True)
    split = np.where(rng.uniform(size=rows) < 0.5, "calibration", "test")
    buffer = io.StringIO()
    buffer.write("label," + ",".join(f"p_{k}" for k in range(classes)) + ",split\n")
    body = np.column_stack([labels.astype(str), np.char.mod("%.6f", probs), split])
    buffer.write("\n".join(",".join(row) for row in body) + "\n")
    path = folder / f"visitor_{index:02d}.csv"
    path.write_text(buffer.getvalue())
    return path


async def phase_memory(sessions: int, rows: int, classes: int, budget_s: float, settle_s: float,
                       demo: str, result_ttl_s: float | None = None) -> None:
    from playwright.async_api import async_playwright

    from studio.memory import RESULT_TTL_VARIABLE, TRIM_SECONDS

    if result_ttl_s is not None:
        os.environ[RESULT_TTL_VARIABLE] = f"{result_ttl_s:g}"  # the server inherits it

    log = ROOT / "test-artifacts" / "bench-visitors-memory.log"
    log.parent.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, serve(log) as (base, process):
        start_rss = _status_kib(process.pid, "VmRSS") / 1024
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            context = await browser.new_context(viewport=VIEWPORT)
            await visit_every_page(context, base, query=f"?demo={demo}")  # warm-up: imports, demo caches
            await context.close()
            await asyncio.sleep(2)
            idle = _status_kib(process.pid, "VmRSS") / 1024
            print(f"\nmemory: fresh server {start_rss:.0f} MiB at start, {idle:.0f} MiB idle after one demo visit")
            print(f"{'session':>7} {'rows':>7} {'seconds':>8} {'RSS MiB':>8} {'peak MiB':>9}  exceptions/errors")
            began = time.perf_counter()
            ran = 0
            with RssSampler(process.pid) as sampler:
                for index in range(sessions):
                    if time.perf_counter() - began > budget_s:
                        break
                    upload = synthetic_file(Path(tmp), index, rows, classes)
                    context = await browser.new_context(viewport=VIEWPORT)
                    t0 = time.perf_counter()
                    visit = await visit_every_page(context, base, upload=upload)
                    await context.close()
                    upload.unlink()
                    ran += 1
                    print(f"{index + 1:>7} {rows:>7,} {time.perf_counter() - t0:8.1f} {sampler.now_mib():8.0f} "
                          f"{sampler.peak_mib:9.0f}  {visit.exceptions or '-'} / {visit.errors or '-'}", flush=True)
                end_rss = sampler.now_mib()
                ended = time.perf_counter()
                await browser.close()
                print(f"sessions run: {ran} of {sessions} in {time.perf_counter() - began:.0f} s "
                      f"(budget {budget_s:.0f} s)")
                print(f"RSS when the last session ended: {end_rss:.0f} MiB; waiting {settle_s:.0f} s "
                      "(server.disconnectedSessionTTL is 120 s) ...", flush=True)
                await asyncio.sleep(settle_s)
                after = sampler.now_mib()
                expired = None
                if result_ttl_s is not None:
                    wait = result_ttl_s + 2 * TRIM_SECONDS + 5 - (time.perf_counter() - ended)
                    print(f"waiting {max(wait, 0):.0f} s more: results live {result_ttl_s:g} s, swept every "
                          f"{TRIM_SECONDS:g} s ...", flush=True)
                    await asyncio.sleep(max(wait, 0))
                    expired = sampler.now_mib()
                peak = max(sampler.peak_mib, sampler.hwm_mib())
            print(f"server peak RSS {peak:.0f} MiB ({'under' if peak < TARGET_PEAK_GB * 1024 else 'OVER'} the "
                  f"{TARGET_PEAK_GB} GB target); idle {idle:.0f} MiB; after the sessions ended {end_rss:.0f} MiB, "
                  f"{settle_s:.0f} s later {after:.0f} MiB")
            if expired is not None:
                print(f"after the result lifetime ({result_ttl_s:g} s) and a sweep: {expired:.0f} MiB, "
                      f"{expired - idle:+.0f} MiB from idle")


async def phase_upload(upload_mb: float) -> None:
    from playwright.async_api import async_playwright

    rows = int(upload_mb * 1e6 / 41)  # "2,0.123456,0.234567,0.642000,calibration" is about 41 bytes a row
    log = ROOT / "test-artifacts" / "bench-visitors-upload.log"
    log.parent.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        upload = synthetic_file(Path(tmp), 99, rows, 3)
        size_mb = upload.stat().st_size / 1e6
        with serve(log) as (base, process):
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                           headless=True)
                context = await browser.new_context(viewport=VIEWPORT)
                page = await context.new_page()
                page.set_default_timeout(PAGE_TIMEOUT_MS)
                await page.goto(base)
                await _settled(page)
                await asyncio.sleep(2)
                with RssSampler(process.pid) as sampler:
                    before = sampler.now_mib()
                    start = time.perf_counter()
                    await page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(upload))
                    await page.get_by_role("heading", name=upload.stem).wait_for(timeout=3_600_000)
                    seconds = time.perf_counter() - start
                    loaded_peak = max(sampler.peak_mib, sampler.hwm_mib())
                    page.set_default_timeout(3_600_000)  # the Data page's headline of a large table takes a while
                    await _settled(page)
                    settled = time.perf_counter() - start
                    visit = Visit()
                    await _check(page, "Data (upload)", visit)
                    await asyncio.sleep(2 * 20.0)  # two trimming rounds
                    after = sampler.now_mib()
                    peak = max(sampler.peak_mib, sampler.hwm_mib())
                await browser.close()
    print(f"\nupload: {size_mb:.0f} MB CSV, {rows:,} rows x 3 classes + split; its card after {seconds:.0f} s, "
          f"the page settled after {settled:.0f} s; exceptions/errors {visit.exceptions or '-'} / "
          f"{visit.errors or '-'}")
    print(f"server RSS {before:.0f} MiB before; peak while the file was read {loaded_peak:.0f} MiB "
          f"({loaded_peak - before:+.0f} MiB, {(loaded_peak - before) / size_mb:.1f}x the file); peak until the page "
          f"settled {peak:.0f} MiB ({peak - before:+.0f} MiB); {after:.0f} MiB 40 s after it settled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", nargs="+", default=["single", "concurrent", "memory"],
                        choices=["single", "concurrent", "memory", "upload"])
    parser.add_argument("--visitors", type=int, default=5, help="visitors at once (default 5)")
    parser.add_argument("--demo", default="digits_gaussian_nb", help="demo of the single/concurrent phases")
    parser.add_argument("--sessions", type=int, default=30, help="sessions in turn in the memory phase (30)")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of each uploaded file (20,000)")
    parser.add_argument("--classes", type=int, default=3, help="classes of each uploaded file (3)")
    parser.add_argument("--budget-minutes", type=float, default=60.0,
                        help="stop starting memory sessions after this many minutes (60)")
    parser.add_argument("--settle", type=float, default=150.0,
                        help="seconds to wait after the last session before the final RSS (150)")
    parser.add_argument("--result-ttl", type=float, default=None,
                        help="result lifetime of the server in seconds (default: the app's hour); "
                             "adds the RSS once every result has expired")
    parser.add_argument("--upload-mb", type=float, default=150.0, help="size of the upload phase's file (150 MB)")
    parser.add_argument("--port", type=int, default=None, help="port of the servers (default: a free one)")
    args = parser.parse_args()
    global PORT
    PORT = args.port
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at start; chromium {CHROMIUM}")
    phases = set(args.phases)
    if phases & {"single", "concurrent"}:
        asyncio.run(phase_single_and_concurrent(args.visitors, args.demo, phases))
    if "memory" in phases:
        asyncio.run(phase_memory(args.sessions, args.rows, args.classes, args.budget_minutes * 60, args.settle,
                                 args.demo, args.result_ttl))
    if "upload" in phases:
        asyncio.run(phase_upload(args.upload_mb))


if __name__ == "__main__":
    main()
