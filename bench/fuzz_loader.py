"""Fuzz the loader: N generated files, counts per outcome, every foreign exception with its reproducer.

    .venv/bin/python bench/fuzz_loader.py                 # 100,000 cases
    .venv/bin/python bench/fuzz_loader.py --cases 20000 --seed 1

Families (equal shares): random bytes under every extension, random CSV text,
valid CSV/TSV files with one hostile cell, random NPZ archives (some with
flipped bytes), NPY files with honest or lying headers, random Parquet
schemas. Outcomes: ``loaded`` (a valid result; CSV cases also equal an
independent reading), ``error`` (a clean CalibrationInputError), ``net``
(a CalibrationInputError produced by the loader's last-resort boundary from
another exception type: counted separately because it marks a reader path
without its own check), and ``OTHER`` (any other exception type: a bug). Each
OTHER case is written to ``--out`` (default ``fuzz_failures/``) as a file
that reproduces it with ``load_predictions(path.read_bytes(), name=...)``.
"""
from __future__ import annotations

import argparse
import collections
import io
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from calib_core.io import load_predictions  # noqa: E402
from calib_core.validation import CalibrationInputError, softmax  # noqa: E402
from test_loader_fuzz import (HOSTILE_CELLS, MAX_BYTES, _arrow_column, check_load,  # noqa: E402
                              independent_csv, render, table_csv)

EXTENSIONS = ["csv", "tsv", "txt", "parquet", "npz", "npy", "csv.gz", ""]
FAMILIES = ("bytes", "csv_text", "hostile_cell", "npz", "npy", "parquet")


def _bytes(rng):
    data = rng.integers(0, 256, int(rng.integers(0, 600)), dtype=np.uint8).tobytes()
    if rng.random() < 0.3:  # start like a real format
        data = rng.choice([b"PAR1", b"\x93NUMPY", b"PK\x03\x04", b"\x1f\x8b", b"\xff\xfe", b"label,"]) + data
    ext = str(rng.choice(EXTENSIONS))
    return data, f"f.{ext}" if ext else "f"


def _cell(rng):
    if rng.random() < 0.6:
        return str(rng.choice(HOSTILE_CELLS))
    return "".join(chr(int(c)) for c in rng.integers(1, 0x2FF, int(rng.integers(0, 10))))


def _csv_text(rng):
    header = str(rng.choice(["label,p_0,p_1", "label,p_a,p_b,p_c", "y,score", "label;p_a;p_b", ""]))
    rows = []
    for _ in range(int(rng.integers(1, 9))):
        cells = [_cell(rng) if rng.random() < 0.5 else repr(float(rng.normal())) for _ in range(int(rng.integers(1, 6)))]
        rows.append(",".join(cells))
    data = ((header + "\n" if header else "") + "\n".join(rows)).encode("utf-8", errors="surrogatepass")
    return data, str(rng.choice(["f.csv", "f.tsv", "f"]))


def _valid_table(rng):
    n, k = int(rng.integers(1, 12)), int(rng.integers(2, 6))
    raw = rng.integers(1, 1000, (n, k)).astype(float)
    probs = raw / raw.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    if rng.random() < 0.5:
        names = [str(j) for j in range(k)]
    else:
        pool = ["cat", "dog", "NA", "none", "True", "False", "2", "c10", "c2", " sp", "é", "x.y"]
        names = [str(x).strip() for x in rng.choice(pool, size=k, replace=False)]
    return probs, labels, names


def _hostile(rng):
    probs, labels, names = _valid_table(rng)
    cells = table_csv(probs, labels, names)
    hit = rng.random() < 0.9
    if hit:
        cells[int(rng.integers(0, len(cells)))][int(rng.integers(0, len(cells[0])))] = _cell(rng)
    delimiter = str(rng.choice([",", "\t", ";"]))
    return render(cells, delimiter), ("f.tsv" if delimiter == "\t" else "f.csv"), delimiter, hit


def _npz(rng):
    arrays = {}
    for _ in range(int(rng.integers(1, 5))):
        key = str(rng.choice(["probs", "logits", "labels", "class_names", "split", "x", "arr_0"]))
        dtype = np.dtype(rng.choice(["<f8", "<f4", "<i8", "<i1", "?", "<U3", "S2", "<c16", "V4"]))
        shape = tuple(int(s) for s in rng.integers(0, 5, int(rng.integers(1, 4))))
        size = int(np.prod(shape)) * dtype.itemsize
        arrays[key] = np.frombuffer(rng.integers(0, 256, size, dtype=np.uint8).tobytes(), dtype=dtype).reshape(shape)
    buffer = io.BytesIO()
    (np.savez_compressed if rng.random() < 0.5 else np.savez)(buffer, **arrays)
    data = bytearray(buffer.getvalue())
    for _ in range(int(rng.integers(0, 4))):
        data[int(rng.integers(0, len(data)))] ^= int(rng.integers(1, 256))
    return bytes(data), "f.npz"


def _npy(rng):
    dtype = np.dtype(rng.choice(["<f8", "<f4", "<i8", "?", "<U3", "<c16"]))
    shape = tuple(int(s) for s in rng.integers(0, 6, int(rng.integers(1, 4))))
    if rng.random() < 0.3:
        shape = (int(rng.integers(0, 10 ** 13)), int(rng.integers(0, 1000)))
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                  "fortran_order": False, "shape": shape})
    payload = rng.integers(0, 256, int(rng.integers(0, 400)), dtype=np.uint8).tobytes()
    return buffer.getvalue() + payload, "f.npy"


def _parquet(rng):
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = rng.choice(["label", "p_a", "p_b", "p_c", "logit_a", "score", "split", "x", "sample_id"],
                       size=int(rng.integers(1, 6)), replace=False)
    kinds = ["int", "float", "string", "bool", "list", "struct", "map", "dict", "ts", "binary", "null", "prob",
             "label_text", "decimal"]
    n = int(rng.integers(0, 7))
    table = pa.table({str(c): _arrow_column(str(rng.choice(kinds)), n, rng) for c in names})
    if rng.random() < 0.2:
        table = table.replace_schema_metadata({b"pandas": b'{"index_columns": ["missing"], "columns": []}'})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    data = bytearray(buffer.getvalue())
    if rng.random() < 0.3:
        data[int(rng.integers(0, len(data)))] ^= int(rng.integers(1, 256))
    return bytes(data), "f.parquet"


def run_case(family: str, rng) -> tuple[str, bytes, str]:
    if family == "hostile_cell":
        data, name, delimiter, hit = _hostile(rng)
    else:
        data, name = {"bytes": _bytes, "csv_text": _csv_text, "npz": _npz, "npy": _npy,
                      "parquet": _parquet}[family](rng)
    try:
        outcome = check_load(data, name)
    except CalibrationInputError:
        raise
    if outcome == "error":
        try:
            load_predictions(data, name=name, max_bytes=MAX_BYTES)
        except CalibrationInputError as exc:
            cause = exc.__cause__
            if "could not be read (" in str(exc) and cause is not None and not isinstance(
                    cause, CalibrationInputError):
                outcome = "net"
    if family == "hostile_cell" and outcome == "loaded":
        expected = independent_csv(data, delimiter)
        if expected is not None:
            pred = load_predictions(data, name=name)
            np.testing.assert_array_equal(pred.labels, expected[0])
            reference = softmax(expected[1]) if pred.input_kind == "logits" else expected[1]
            np.testing.assert_allclose(pred.probs, reference, rtol=1e-12, atol=0)
    if family == "hostile_cell" and not hit and outcome != "loaded":
        raise AssertionError("a valid file was not loaded")
    return outcome, data, name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz_failures"))
    args = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    failures = 0
    start = time.perf_counter()
    for case in range(args.cases):
        family = FAMILIES[case % len(FAMILIES)]
        rng = np.random.default_rng([args.seed, case])
        try:
            outcome, _, _ = run_case(family, rng)
        except Exception as exc:  # noqa: BLE001 -- a foreign exception type or a wrong reading: report it
            outcome = f"OTHER {type(exc).__name__}"
            failures += 1
            data, name = None, None
            rng = np.random.default_rng([args.seed, case])
            try:
                built = _hostile(rng) if family == "hostile_cell" else {
                    "bytes": _bytes, "csv_text": _csv_text, "npz": _npz, "npy": _npy, "parquet": _parquet}[family](rng)
                data, name = built[0], built[1]
            except Exception:  # noqa: BLE001
                pass
            if data is not None and failures <= 50:
                args.out.mkdir(exist_ok=True)
                path = args.out / f"case{case}_{name}"
                path.write_bytes(data)
                print(f"case {case} ({family}): {type(exc).__name__}: {str(exc)[:200]}\n  reproduce: "
                      f"load_predictions(Path({str(path)!r}).read_bytes(), name={name!r})", flush=True)
                traceback.print_exc(limit=3)
        counts[(family, outcome)] += 1
        if (case + 1) % 10_000 == 0:
            print(f"{case + 1:,} cases, {time.perf_counter() - start:.0f} s", flush=True)
    elapsed = time.perf_counter() - start
    print(f"\n{args.cases:,} cases in {elapsed:.0f} s (seed {args.seed})")
    totals: collections.Counter = collections.Counter()
    for (family, outcome), n in sorted(counts.items()):
        print(f"  {family:<13} {outcome:<28} {n:>7,}")
        totals[outcome] += n
    print("  total:", ", ".join(f"{k} {v:,}" for k, v in sorted(totals.items())))
    print(f"  exceptions other than CalibrationInputError (or wrong readings): {failures:,}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
