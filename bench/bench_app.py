"""Re-render time of every app page after a slider change, on the 10-class digits demo.

Each page runs in a fresh AppTest session (in-process, the same script run
the server performs for a browser, without the websocket and the drawing in
the browser). Then its main slider is moved to new values; every move is a
real recomputation (a value not seen before, so no cache hit), and the
script run that follows is timed. Moving back to a value already seen shows
the cached case.

    python bench/bench_app.py [--repeats 5] [--demo digits_gaussian_nb]

Target (issue 2, item 10): every page re-renders in under 1 s after a slider change.

``--first-chart`` measures instead the time from opening the app on the demo
to its first chart (issue 14, item 5: the Data page's headline diagram), in a
real browser: a fresh ``streamlit run app.py`` and Debian's headless Chromium
driven by Playwright (:func:`first_chart`).

    python bench/bench_app.py --first-chart [--visits 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

# page file -> (widget kind, widget key, the values to move it through)
PAGES = {
    "app.py": ("radio", "studio:split", ["test", "calibration", "All rows", "test", "calibration", "All rows"]),
    "pages/1_Metrics.py": ("slider", "metric_bins", [10, 20, 25, 30, 40, 50, 60, 70]),
    "pages/2_Reliability.py": ("slider", "bins", [10, 20, 25, 30, 40, 50, 60, 70]),
    "pages/3_Per-class.py": ("slider", "class_bins", [10, 20, 25, 30, 40, 45, 50, 35]),
    "pages/4_Bin_sensitivity.py": ("slider", "counts", [(2, 150), (5, 100), (2, 50), (10, 200),
                                                                         (3, 120), (2, 80), (4, 60), (2, 199)]),
}


def timed_run(at: AppTest) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one script run (CPU time is what a busy machine cannot inflate)."""
    start, cpu_start = time.perf_counter(), time.process_time()
    at.run()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if at.exception:
        raise RuntimeError(f"the page raised: {at.exception[0].value}")
    return elapsed, cpu


def bench_page(page: str, demo: str, repeats: int) -> dict[str, float]:
    kind, key, moves = PAGES[page]
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["demo"] = demo
    if page != "app.py":
        at.switch_page(page)
    first, _ = timed_run(at)
    widget = getattr(at.sidebar if page == "app.py" else at, kind)(key=key)
    walls, cpus = [], []
    for value in moves[:repeats]:
        widget.set_value(value)
        wall, cpu = timed_run(at)
        walls.append(wall)
        cpus.append(cpu)
        widget = getattr(at.sidebar if page == "app.py" else at, kind)(key=key)
    widget.set_value(moves[0])  # a value computed before: the cached case
    cached, _ = timed_run(at)
    return {"first": first, "median": statistics.median(walls), "max": max(walls),
            "cpu": statistics.median(cpus), "cached": cached}


def first_chart(visits: int, demo: str | None = None) -> dict[str, float]:
    """Seconds from ``page.goto`` of the app's address to the first Plotly chart drawn (SVG traces present).

    Playwright with Debian's headless Chromium on a fresh server
    (:func:`bench_visitors.serve`). Each visit is a new browser context, so a
    new Streamlit session that loads the default demo (or ``?demo=demo``), as a
    first-time visitor does. The first visit after the server start is
    ``cold`` (imports, the demo read, empty caches); the others are ``warm``
    (results shared between sessions come from the cache); the browser has
    nothing cached in either case. Also returns ``script``: the seconds the
    server's script run takes in an AppTest session (no browser), for scale.
    """
    from playwright.sync_api import sync_playwright

    from bench_visitors import CHROMIUM, CHROMIUM_ARGS, serve

    selector = "[data-testid='stPlotlyChart'] .js-plotly-plot g.trace path"
    query = f"/?demo={demo}" if demo else "/"
    times = []
    with serve(ROOT / "test-artifacts" / "bench-first-chart.log") as (base, _process), \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for _ in range(visits + 1):
            context = browser.new_context(viewport={"width": 1440, "height": 1200})
            page = context.new_page()
            page.set_default_timeout(120_000)
            start = time.perf_counter()
            page.goto(base + query)
            page.wait_for_selector(selector)
            times.append(time.perf_counter() - start)
            context.close()
        browser.close()
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if demo:
        at.query_params["demo"] = demo
    script, _ = timed_run(at)
    return {"cold": times[0], "warm": statistics.median(times[1:]), "warm_max": max(times[1:]), "script": script}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="slider moves per page (default 5)")
    parser.add_argument("--demo", default="digits_gaussian_nb", help="demo to open (default digits_gaussian_nb)")
    parser.add_argument("--first-chart", action="store_true",
                        help="measure the time from opening the app to its first chart (browser) instead")
    parser.add_argument("--visits", type=int, default=5, help="warm visits of --first-chart (default 5)")
    args = parser.parse_args()
    if args.first_chart:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        result = first_chart(args.visits)
        print(f"time from opening the app (default demo) to the first chart drawn, headless Chromium "
              f"(Playwright); {os.cpu_count()} CPUs, load average {load:.1f} at start")
        print(f"cold (first visitor after the server start): {result['cold']:.2f} s; warm (new visitor, "
              f"median of {args.visits}): {result['warm']:.2f} s (slowest {result['warm_max']:.2f} s); "
              f"the Data page's script run alone (AppTest, empty caches): {result['script']:.2f} s")
        return
    AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()  # warm-up: imports, first demo read
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"demo {args.demo}; {args.repeats} slider moves per page; seconds per script run; "
          f"{os.cpu_count()} CPUs, load average {load:.1f} at start")
    print(f"{'page':<28} {'widget':<26} {'first run':>9} {'median':>8} {'max':>8} {'cpu med':>8} {'cached':>8}"
          "  < 1 s?")
    worst = 0.0
    for page in PAGES:
        result = bench_page(page, args.demo, args.repeats)
        worst = max(worst, result["max"])
        print(f"{page:<28} {PAGES[page][1]:<26} {result['first']:9.3f} {result['median']:8.3f} "
              f"{result['max']:8.3f} {result['cpu']:8.3f} {result['cached']:8.3f}  "
              f"{'yes' if result['max'] < 1.0 else 'NO'}")
    print(f"slowest re-render after a slider change: {worst:.3f} s wall clock (target < 1 s); "
          "'cpu med' is the CPU time of the run, which other processes on a busy machine do not inflate")


if __name__ == "__main__":
    main()
