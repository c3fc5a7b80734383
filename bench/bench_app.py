"""Re-render time of every app page after a slider change, on the 10-class digits demo.

Each page runs in a fresh AppTest session (in-process, the same script run
the server performs for a browser, without the websocket and the drawing in
the browser). Then its main slider is moved to new values; every move is a
real recomputation (a value not seen before, so no cache hit), and the
script run that follows is timed. Moving back to a value already seen shows
the cached case.

    python bench/bench_app.py [--repeats 5] [--demo digits_gaussian_nb]

Target (issue 2, item 10): every page re-renders in under 1 s after a slider change.
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
    "pages/1_Metrics.py": ("slider", "keep:metrics.n_bins", [10, 20, 25, 30, 40, 50, 60, 70]),
    "pages/2_Reliability.py": ("slider", "keep:reliability.n_bins", [10, 20, 25, 30, 40, 50, 60, 70]),
    "pages/3_Per-class.py": ("slider", "keep:perclass.n_bins", [10, 20, 25, 30, 40, 45, 50, 35]),
    "pages/4_Bin_sensitivity.py": ("slider", "keep:sensitivity.range", [(2, 150), (5, 100), (2, 50), (10, 200),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="slider moves per page (default 5)")
    parser.add_argument("--demo", default="digits_gaussian_nb", help="demo to open (default digits_gaussian_nb)")
    args = parser.parse_args()
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
