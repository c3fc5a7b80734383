"""``report --html`` against ``report --json`` on the same file, as a ratio measured in one run.

Target (issue 29, item 3): ``python -m calib_core report FILE --html OUT.html``
within 3x ``python -m calib_core report FILE --json`` on the same file. Each
command runs in its own process, alternately (``--repeats`` times each), on a
synthetic Parquet file of ``--rows`` x ``--classes`` (that of
``bench/bench_app.py``'s upload mode); the figures are each command's best
CPU time (the process and its children), which other processes on a busy
machine do not inflate, and its wall clock.

    python bench/bench_report.py [--rows 100000] [--classes 10] [--repeats 1]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_app import synthetic_parquet  # noqa: E402

TARGET = 3.0


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run of ``command``; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=str(ROOT), capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each command (best taken), default 1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as folder:
        file = Path(folder) / f"synthetic_{args.rows}x{args.classes}.parquet"
        synthetic_parquet(file, args.rows, args.classes, float32=False)
        report = [sys.executable, "-m", "calib_core", "report", str(file)]
        commands = {"--json": report + ["--json"], "--html": report + ["--html", str(Path(folder) / "out.html")]}
        best = {name: (float("inf"), float("inf")) for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():
                wall, cpu = timed(command)
                best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"report on a synthetic {args.rows:,} x {args.classes} Parquet file; best of {args.repeats}; "
              f"{os.cpu_count()} CPUs, load average {load:.1f} at the end")
        for name, (wall, cpu) in best.items():
            print(f"report {name:<7} wall {wall:7.2f} s   cpu {cpu:7.2f} s")
        ratio = best["--html"][1] / best["--json"][1]
        print(f"--html / --json (CPU): {ratio:.2f} (target <= {TARGET:g}: {'ok' if ratio <= TARGET else 'MISSED'}); "
              f"wall clock ratio {best['--html'][0] / best['--json'][0]:.2f}")


if __name__ == "__main__":
    main()
