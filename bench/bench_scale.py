"""Speed and memory of the out-of-core engines, as ratios measured in the same run (issue 7).

Targets:
* streaming ECE + class-wise ECE over an N x 10 Parquet file at no less than
  half the speed at which pyarrow alone reads the same columns (ratio of
  times <= 2);
* Dask with 2 workers within 1.5x of the single-process streaming path;
* peak memory (resident set of the evaluating process) under 1 GB,
  whatever the row count.

Run by hand (CI does not): ``python bench/bench_scale.py`` (20,000,000 rows,
writes a ~1.8 GB file to a temporary folder) or ``--rows 2000000`` for a
shorter run. ``--full`` also times the complete exact report (all metrics,
adaptive bins and KS: three passes). Each engine runs in a fresh process so
its peak memory is its own. Imports and first-call costs count as start-up,
as the cluster's start does: the streaming process evaluates a small file of
the same layout before the timed run, and the Dask workers import calib_core
(:func:`calib_core.engines.dask_engine.warm_up`). On a shared machine the wall times move with the
load of other processes; the CPU seconds of the evaluating process are shown
next to them (for Dask they exclude the workers). Every engine, and the
pyarrow read, runs ``--repeat`` times in its process and the best run counts.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {repo!r})
import pyarrow.parquet as pq
from calib_core.engines.evaluate import evaluate
task = json.loads(sys.argv[1])
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
def read():
    rows = 0
    parquet = pq.ParquetFile(task["path"], pre_buffer=False)
    for group in range(parquet.num_row_groups):
        for batch in parquet.iter_batches(batch_size=task["batch_rows"] or 786432, row_groups=[group],
                                          columns=task["columns"]):
            rows += batch.num_rows
    return {{"rows": rows}}
scheduler = None
if task["kind"] == "evaluate":
    # Imports and first-call costs are start-up, not evaluation (as is the cluster's start): the streaming
    # engine evaluates a small file of the same layout first; the Dask workers import calib_core (a trial
    # run would teach the scheduler that these tasks are short, and it would then give all to one worker).
    if task["engine"] == "dask":
        import distributed
        from calib_core.engines.dask_engine import local_cluster, warm_up
        cluster = local_cluster(task["workers"])  # workers with glibc's allocator defaults, as this process
        scheduler = distributed.Client(cluster)
        warm_up(scheduler)
    else:
        evaluate(task["warmup"], engine=task["engine"], metrics=task["metrics"])
def run():
    if task["kind"] == "pyarrow":
        return read()
    evaluation = evaluate(task["path"], engine=task["engine"], batch_rows=task["batch_rows"], scheduler=scheduler,
                          metrics=task["metrics"])
    return {{"rows": evaluation.n_samples, "metrics": evaluation.metrics, "passes": evaluation.n_passes}}
times = []
for _ in range(task["repeat"]):
    start, cpu_start = time.perf_counter(), cpu()
    result = run()
    times.append((time.perf_counter() - start, cpu() - cpu_start))
result["seconds"], result["cpu_seconds"] = min(times)  # best of the runs; CPU of this process only
result["all_seconds"] = [round(t, 3) for t, _ in times]
result["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if scheduler is not None:
    scheduler.close()
    cluster.close()
print(json.dumps(result))
"""


def workload(n_rows: int, n_classes: int, seed: int = 0, chunk: int = 1_000_000):
    """Dirichlet(0.3) probabilities and labels, ``(probs, labels)`` in chunks of ``chunk`` rows (the bench
    table; ``bench_sketch.py`` reads it too)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n_rows, chunk):
        size = min(chunk, n_rows - start)
        probs = rng.dirichlet(np.full(n_classes, 0.3), size=size)
        # Slightly over-confident: labels follow flattened probabilities.
        flat = np.sqrt(probs)
        flat /= flat.sum(axis=1, keepdims=True)
        labels = (rng.random(size)[:, None] > np.cumsum(flat, axis=1)).sum(axis=1).clip(0, n_classes - 1)
        yield probs, labels


def write_table(path: Path, n_rows: int, n_classes: int, seed: int = 0, chunk: int = 1_000_000) -> None:
    """An N x K Parquet file of :func:`workload`'s probabilities and labels, written in chunks of rows."""
    schema = pa.schema([("label", pa.int64())] + [(f"p_{k}", pa.float64()) for k in range(n_classes)])
    with pq.ParquetWriter(path, schema) as writer:
        for probs, labels in workload(n_rows, n_classes, seed, chunk):
            writer.write_table(pa.table({"label": labels, **{f"p_{k}": probs[:, k] for k in range(n_classes)}},
                                        schema=schema))


def run_child(task: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO)), json.dumps(task)],
                         capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def line(name: str, result: dict, baseline_name: str | None = None, baseline: dict | None = None,
         target: float | None = None) -> None:
    text = (f"{name:<42} {result['seconds']:8.2f} s (CPU {result['cpu_seconds']:6.2f} s)  "
            f"peak RSS {result['peak_rss'] / 2**20:5.0f} MiB")
    if len(result.get("all_seconds", ())) > 1:
        text += f"  runs {result['all_seconds']}"
    if baseline is not None:
        ratio = result["seconds"] / baseline["seconds"]
        verdict = "ok" if ratio <= target else "MISSED"
        text += f"   {ratio:5.2f}x {baseline_name} (target <= {target:g}) {verdict}"
    print(text, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000, help="rows of the table (default 20,000,000)")
    parser.add_argument("--classes", type=int, default=10, help="classes (default 10)")
    parser.add_argument("--batch-rows", type=int, default=None,
                        help="rows per record batch (default: about 64 MiB of class values)")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers (default 2)")
    parser.add_argument("--dir", default=None, help="folder for the generated file (default: a temporary folder)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed runs per engine in its process; the best counts (default 3)")
    parser.add_argument("--skip-dask", action="store_true", help="do not time the Dask engine")
    parser.add_argument("--full", action="store_true", help="also time every metric, exact (three passes)")
    args = parser.parse_args()

    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_scale_"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"preds_{args.rows}x{args.classes}.parquet"
    try:
        if not path.exists():
            start = time.perf_counter()
            write_table(path, args.rows, args.classes)
            print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB on disk, "
                  f"{args.rows * (args.classes + 1) * 8 / 2**20:.0f} MiB in memory) in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        warmup = folder / f"warmup_{args.classes}.parquet"
        if not warmup.exists():
            write_table(warmup, 50_000, args.classes, seed=1)
        columns = ["label"] + [f"p_{k}" for k in range(args.classes)]
        common = {"path": str(path), "batch_rows": args.batch_rows, "workers": args.workers, "warmup": str(warmup),
                  "repeat": args.repeat}
        run_child({**common, "kind": "pyarrow", "columns": columns, "repeat": 1})  # warm the page cache
        read = run_child({**common, "kind": "pyarrow", "columns": columns})
        line("pyarrow reads label + class columns", read)
        metrics = ["ece", "classwise_ece"]
        stream = run_child({**common, "kind": "evaluate", "engine": "stream", "metrics": metrics})
        line("stream: ECE + class-wise ECE", stream, "pyarrow read", read, 2.0)
        print(f"{'':<42} peak RSS under 1 GiB: {'ok' if stream['peak_rss'] < 2**30 else 'MISSED'}; "
              f"ECE {stream['metrics']['ece']:.6f}, class-wise ECE {stream['metrics']['classwise_ece']:.6f}")
        if not args.skip_dask:
            on_dask = run_child({**common, "kind": "evaluate", "engine": "dask", "metrics": metrics})
            line(f"dask ({args.workers} workers): ECE + class-wise ECE", on_dask, "stream", stream, 1.5)
            same = all(abs(on_dask["metrics"][k] - stream["metrics"][k]) <= 1e-12 for k in metrics)
            print(f"{'':<42} same numbers as stream: {'yes' if same else 'NO'}")
        if args.full:
            full = run_child({**common, "kind": "evaluate", "engine": "stream", "metrics": None})
            line(f"stream: every metric, exact ({full['passes']} passes)", full, "pyarrow read", read, float("inf"))
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
