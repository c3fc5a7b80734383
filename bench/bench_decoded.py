"""Peak memory of ``load_predictions`` against the decoded table, and how fast the limits refuse bombs (issue 30, item 1).

The decoded table is rows x columns x 8 bytes (every cell as float64, the
label column included). Each load runs in a fresh process; its cost is the
peak resident size (``VmHWM``) minus the resident size after the imports,
so pyarrow's and numpy's allocations count as well as Python's (Linux:
``/proc/self/clear_refs`` resets the peak after the imports). Target: a
load's peak at most :data:`TARGET_MULTIPLE` times the decoded table for
numeric columns. Text columns (class-name labels, a split column) cost a
Python string per cell, about 55 bytes instead of 8: their multiple is
reported, not held to the target.

Then the bombs of the issue, each refused by the default limits
(``calib_core.io.formats.MAX_ROWS``, ``MAX_CELLS``) before the table is
built: a small Parquet file of 10,000,000 constant rows (refused from its
metadata) and a gzipped CSV of 10,000,000 lines (refused while it is
unpacked); the seconds and the peak memory of each refusal.

    python bench/bench_decoded.py                 # about a minute
    python bench/bench_decoded.py --rows 200000   # shorter
"""
from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
TARGET_MULTIPLE = 5.0

_CHILD = """
import json, sys, time
sys.path.insert(0, {repo!r})
import calib_core as cc
task = json.loads(sys.argv[1])
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # reset the peak (VmHWM) to the resident size now: the imports' peak does not count
base = status("VmRSS")
start = time.perf_counter()
try:
    cc.load_predictions(task["path"], max_bytes=None)
    refused = None
except cc.CalibrationInputError as exc:
    refused = str(exc)[:90]
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "extra_bytes": status("VmHWM") - base, "refused": refused}}))
"""


def _measure(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO)), json.dumps({"path": str(path)})],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(rows: int, classes: int, seed: int = 0, text_labels: bool = False, split: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(classes), size=rows)
    labels = rng.integers(0, classes, rows)
    names = [f"c{k}" for k in range(classes)]
    frame = pd.DataFrame(probs, columns=[f"p_{n}" if text_labels else f"p_{k}" for k, n in enumerate(names)])
    frame.insert(0, "label", np.array(names)[labels] if text_labels else labels)
    if split:
        frame["split"] = np.where(np.arange(rows) % 2 == 0, "calibration", "test")
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the narrow tables (1,000,000)")
    args = parser.parse_args()
    rows = args.rows
    cases = [
        ("parquet", rows, 3, {}), ("csv", rows, 3, {}), ("parquet", rows, 3, {"text_labels": True, "split": True}),
        ("csv", rows, 3, {"text_labels": True, "split": True}), ("parquet", max(rows // 50, 100), 100, {}),
        ("npz", rows, 3, {}),
    ]
    print(f"{'format':<8} {'rows':>10} {'cols':>5} {'labels/split':<13} {'decoded MB':>10} {'peak extra MB':>13} "
          f"{'multiple':>8} {'seconds':>7}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, n, k, extra in cases:
            frame = _table(n, k, **extra)
            path = Path(tmp) / f"t.{fmt}"
            if fmt == "parquet":
                frame.to_parquet(path)
            elif fmt == "csv":
                frame.to_csv(path, index=False)
            else:
                np.savez(path, probs=frame.filter(like="p_").to_numpy(), labels=frame["label"].to_numpy())
            decoded = frame.shape[0] * frame.shape[1] * 8
            found = _measure(path)
            multiple = found["extra_bytes"] / decoded
            worst = max(worst, multiple) if not extra else worst
            what = "text+split" if extra else "integer"
            print(f"{fmt:<8} {n:>10,} {frame.shape[1]:>5} {what:<13} {decoded / 1e6:>10.1f} "
                  f"{found['extra_bytes'] / 1e6:>13.1f} {multiple:>8.2f} {found['seconds']:>7.2f}", flush=True)
            path.unlink()
        print(f"worst multiple of the numeric tables {worst:.2f} (target <= {TARGET_MULTIPLE}: "
              f"{'met' if worst <= TARGET_MULTIPLE else 'MISSED'})")

        bomb = Path(tmp) / "bomb.parquet"
        block = pa.table({"label": pa.array(np.zeros(1_000_000, np.int8)), "p_0": pa.array(np.full(1_000_000, 0.7)),
                          "p_1": pa.array(np.full(1_000_000, 0.3))})
        with pq.ParquetWriter(bomb, block.schema, compression="zstd") as writer:
            for _ in range(10):
                writer.write_table(block)
        gz = Path(tmp) / "bomb.csv.gz"
        gz.write_bytes(gzip.compress(b"label,p_0,p_1\n" + b"0,0.7,0.3\n" * 10_000_000, compresslevel=6))
        for path in (bomb, gz):
            found = _measure(path)
            print(f"{path.name} ({path.stat().st_size:,} bytes, 10,000,000 rows): refused in {found['seconds']:.2f} s, "
                  f"peak extra {found['extra_bytes'] / 1e6:.0f} MB -- {found['refused']}...")


if __name__ == "__main__":
    main()
