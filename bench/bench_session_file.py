"""Session files with many classes: time to read one back, by class count (issue 30, item 2).

A session file holds, per model, its predictions as one Parquet member
(``label``, ``class_0..class_{K-1}``) and the file they came from. Before the
fix, ``studio.session_file.unpack`` looked each of the K class columns up by
name in a fresh list of the table's column names (quadratic: 6 s at 2,500
classes, 24 s at 5,000, 108 s at 10,000, and 60,000 classes did not finish in
600 s); now one index of the names makes it one pass over the columns, and the
class cap of uploads (``calib_core.io.formats.MAX_CLASSES``) is checked from
the manifest before any member is read.

For each class count this prints the session file's size, the time to pack it,
to unpack it (best of ``--repeat``), the time to load its source CSV again
through ``calib_core.load_predictions`` (what a restore does next), each
divided by its time at the smallest count (linear: the ratio follows K), and
the time to refuse a file over the cap (manifest only).

Run: ``python bench/bench_session_file.py`` (about 40 s; add ``--classes ... 25000`` for the cap itself) or
``--classes 1000 10000`` for a shorter run.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from calib_core import CalibrationInputError  # noqa: E402
from calib_core.io import load_predictions  # noqa: E402
from calib_core.io.formats import MAX_CLASSES  # noqa: E402
from studio import session_file as sf  # noqa: E402


def _source(probs: np.ndarray, labels: np.ndarray) -> bytes:
    header = "label," + ",".join(f"p_c{j}" for j in range(probs.shape[1]))
    rows = [f"{label}," + ",".join(f"{v:.17g}" for v in row) for label, row in zip(labels, probs)]
    return ("\n".join([header, *rows]) + "\n").encode()


def session(k: int, n: int) -> tuple[bytes, bytes]:
    """A session file of one model with ``k`` classes and ``n`` rows, and its source CSV."""
    rng = np.random.default_rng(k)
    probs, labels = rng.dirichlet(np.ones(k), size=n), rng.integers(0, k, n)
    source = _source(probs, labels)
    model = sf.SessionModel(name="wide", origin="upload", file_name="wide.csv", source=source, options=(),
                            fixes=(), probs=probs, labels=labels, class_names=tuple(f"c{j}" for j in range(k)))
    return sf.pack([model], {}), source


def _best(work, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def over_the_cap(data: bytes) -> bytes:
    """``data`` with MAX_CLASSES + 1 class names in its manifest."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["models"][0]["class_names"] = [f"c{j}" for j in range(MAX_CLASSES + 1)]
    members["manifest.json"] = json.dumps(manifest).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, member in members.items():
            archive.writestr(name, member)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--classes", type=int, nargs="+", default=[1_000, 2_500, 5_000, 10_000])
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"{'classes':>8} {'file KB':>8} {'pack s':>7} {'unpack s':>9} {'ratio':>6} {'load CSV s':>11} {'ratio':>6}")
    base = None
    data = b""
    for k in args.classes:
        start = time.perf_counter()
        data, source = session(k, args.rows)
        pack = time.perf_counter() - start
        unpack = _best(lambda: sf.unpack(data), args.repeat)
        load = _best(lambda: load_predictions(source, name="wide.csv"), 1)
        base = base or (unpack, load, k)
        print(f"{k:>8,} {len(data) / 1024:>8.0f} {pack:>7.2f} {unpack:>9.2f} {unpack / base[0]:>6.1f} "
              f"{load:>11.2f} {load / base[1]:>6.1f}   (K ratio {k / base[2]:.1f})")
    capped = over_the_cap(data)
    start = time.perf_counter()
    try:
        sf.unpack(capped)
    except CalibrationInputError as exc:
        print(f"{MAX_CLASSES + 1:,} classes refused in {time.perf_counter() - start:.2f} s: {exc}")


if __name__ == "__main__":
    main()
