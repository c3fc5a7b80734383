"""Fuzz tests of :func:`calib_core.load_predictions` (issue 12, "Deliver as well").

Every generated file must end one of two ways: a :class:`CalibrationInputError`
with a non-empty message, or a load whose labels and probabilities equal an
independent reading of the same bytes (pandas/numpy/pyarrow by hand). Any
other exception type fails the test. The families: random bytes, random CSV
text, valid files with one hostile cell, random NPZ/NPY archives (also
with corrupted bytes) and random Parquet schemas.

CI runs a few thousand cases in well under a minute; ``bench/fuzz_loader.py``
runs 100,000 with the same oracle (:func:`check_load`).
"""
from __future__ import annotations

import gzip
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calib_core.io import load_predictions
from calib_core.validation import ROW_SUM_TOLERANCE, CalibrationInputError, softmax

FUZZ = settings(max_examples=600, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MAX_BYTES = 2_000_000
EXTENSIONS = ["csv", "tsv", "txt", "parquet", "npz", "npy", "csv.gz", ""]

HOSTILE_CELLS = [
    "-0.001", "1.3", "100", "nan", "NaN", "NA", "none", "null", "", " ", "inf", "-inf", "1e400", "9" * 400,
    "1" * 5000, "0x10", "1,5", "0,5", '"', '""', "'", "\x00", "\ufeff", "😀", "=HYPERLINK(\"x\")", "True",
    "False", "[1, 2]", "{}", "1e-400", "-0", "+0.5", " 0.5 ", "0.5\r", "1_000", "²", "٣", "ⅷ", "NaT",
    "\\N", "#N/A", "-1", "2", "1.0000001", "0.99999", "label", "p_0", ";", "\t", "\n", "\r\n",
]


def check_load(data: bytes, name: str) -> str:
    """Load ``data``; return "error" (a clean CalibrationInputError) or "loaded" (a valid result).

    Any other exception propagates, so the caller sees it with its reproducer.
    """
    try:
        pred = load_predictions(data, name=name, max_bytes=MAX_BYTES)
    except CalibrationInputError as exc:
        assert str(exc).strip(), "empty message"
        return "error"
    probs, labels = pred.probs, pred.labels
    assert probs.ndim == 2 and probs.shape[1] >= 2 and probs.shape[0] == labels.shape[0] >= 1
    assert np.isfinite(probs).all() and (probs >= 0).all()
    assert np.abs(probs.sum(axis=1) - 1.0).max() <= ROW_SUM_TOLERANCE
    assert labels.min() >= 0 and labels.max() < probs.shape[1]
    assert len(pred.class_names) == probs.shape[1]
    return "loaded"


def independent_csv(data: bytes, delimiter: str = ",") -> tuple[np.ndarray, np.ndarray] | None:
    """Labels and values of a ``label,p_<name>...`` CSV read by hand, or None when not clean.

    Every cell read as text (no NA guessing), values with ``float``, labels
    matched to the class names after ``p_`` (or as indices when no name
    matches), rows summing to 1 within the tolerance: the rules of the README,
    written out independently of calib_core.
    """
    try:
        frame = pd.read_csv(io.BytesIO(data), sep=delimiter, dtype=str, keep_default_na=False,
                            na_filter=False, index_col=False)
    except Exception:
        return None
    columns = [str(c).strip() for c in frame.columns]
    if not columns or columns[0] != "label" or len(columns) < 3 or frame.shape[0] == 0:
        return None
    names = [c[2:].strip() for c in columns[1:]]
    if not all(c.startswith("p_") for c in columns[1:]) or len(set(names)) != len(names):
        return None
    try:
        values = np.array([[float(v) for v in row] for row in frame.iloc[:, 1:].to_numpy()], dtype=float)
    except ValueError:
        return None
    if not np.isfinite(values).all() or (values < 0).any() or (values > 1).any():
        return None
    if np.abs(values.sum(axis=1) - 1.0).max() > ROW_SUM_TOLERANCE:
        return None
    texts = [str(t).strip() for t in frame.iloc[:, 0]]
    if all(t in names for t in texts):
        labels = np.array([names.index(t) for t in texts])
    elif all(t.isdigit() and int(t) < len(names) for t in texts):
        labels = np.array([int(t) for t in texts])
    else:
        return None
    return labels, values


# ----------------------------------------------------------------------------- strategies

@st.composite
def valid_tables(draw) -> tuple[np.ndarray, np.ndarray, list[str]]:
    n_rows = draw(st.integers(1, 12))
    n_classes = draw(st.integers(2, 6))
    raw = np.array(draw(st.lists(st.lists(st.integers(0, 1000), min_size=n_classes, max_size=n_classes),
                                 min_size=n_rows, max_size=n_rows)), dtype=float) + 1.0
    probs = raw / raw.sum(axis=1, keepdims=True)
    labels = np.array(draw(st.lists(st.integers(0, n_classes - 1), min_size=n_rows, max_size=n_rows)))
    names = draw(st.one_of(
        st.just([str(k) for k in range(n_classes)]),
        st.lists(st.text("abcxyzNA01 _-.é", min_size=1, max_size=6).map(str.strip).filter(bool),
                 min_size=n_classes, max_size=n_classes, unique=True),
    ))
    return probs, labels, names


def table_csv(probs: np.ndarray, labels: np.ndarray, names: list[str], delimiter: str = ",") -> list[list[str]]:
    header = ["label", *(f"p_{n}" for n in names)]
    rows = [[names[int(y)], *(repr(float(v)) for v in row)] for row, y in zip(probs, labels)]
    return [header, *rows]


def render(cells: list[list[str]], delimiter: str) -> bytes:
    import csv

    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(cells)
    return out.getvalue().encode("utf-8")


csv_text = st.lists(
    st.lists(st.one_of(st.sampled_from(HOSTILE_CELLS), st.text(max_size=8),
                       st.floats(allow_nan=True).map(repr), st.integers(-5, 5).map(str)),
             min_size=1, max_size=6),
    min_size=1, max_size=8,
).map(lambda rows: "\n".join(",".join(r) for r in rows))


# ----------------------------------------------------------------------------- tests

@FUZZ
@given(data=st.binary(max_size=600), extension=st.sampled_from(EXTENSIONS))
def test_random_bytes(data: bytes, extension: str) -> None:
    check_load(data, f"f.{extension}" if extension else "f")


@FUZZ
@given(text=csv_text, header=st.sampled_from(["label,p_0,p_1", "label,p_a,p_b,p_c", "y,score", ""]),
       extension=st.sampled_from(["csv", "tsv", ""]))
def test_random_csv_text(text: str, header: str, extension: str) -> None:
    data = ((header + "\n" if header else "") + text).encode("utf-8", errors="surrogatepass")
    check_load(data, f"f.{extension}" if extension else "f")


@FUZZ
@given(table=valid_tables(), cell=st.one_of(st.sampled_from(HOSTILE_CELLS), st.text(max_size=12)),
       where=st.tuples(st.integers(0, 20), st.integers(0, 10)), delimiter=st.sampled_from([",", "\t", ";"]),
       hit=st.booleans())
def test_valid_file_with_one_hostile_cell(table, cell, where, delimiter, hit) -> None:
    probs, labels, names = table
    cells = table_csv(probs, labels, names)
    if hit:
        row, col = where[0] % len(cells), where[1] % len(cells[0])
        cells[row][col] = cell
    data = render(cells, delimiter)
    name = {",": "f.csv", "\t": "f.tsv", ";": "f.csv"}[delimiter]
    outcome = check_load(data, name)
    expected = independent_csv(data, delimiter)
    if not hit:
        assert expected is not None and outcome == "loaded"
    if outcome == "loaded" and expected is not None:
        pred = load_predictions(data, name=name)
        np.testing.assert_array_equal(pred.labels, expected[0])
        if pred.input_kind == "logits":
            np.testing.assert_allclose(pred.probs, softmax(expected[1]), rtol=1e-12)
        else:
            np.testing.assert_array_equal(pred.probs, expected[1])
    if outcome == "loaded" and not hit:
        assert expected is not None


_dtypes = st.sampled_from(["<f8", "<f4", "<i8", "<i1", "<u2", "?", "<U3", "S2", "<c16", "<M8[s]",
                           [("a", "<i4"), ("b", "<f8")]])


@st.composite
def npz_archives(draw) -> bytes:
    n_arrays = draw(st.integers(1, 4))
    arrays = {}
    for _ in range(n_arrays):
        key = draw(st.sampled_from(["probs", "logits", "labels", "class_names", "split", "x", "arr_0"]))
        dtype = np.dtype(draw(_dtypes))
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
        size = int(np.prod(shape))
        raw = np.frombuffer(draw(st.binary(min_size=size * dtype.itemsize, max_size=size * dtype.itemsize)),
                            dtype=np.uint8)
        arrays[key] = raw.view(dtype).reshape(shape) if dtype.itemsize else np.zeros(shape, dtype)
    buffer = io.BytesIO()
    (np.savez_compressed if draw(st.booleans()) else np.savez)(buffer, **arrays)
    return buffer.getvalue()


@FUZZ
@given(archive=npz_archives(), flips=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(1, 255)),
                                              max_size=3))
def test_random_npz_and_corrupted_archives(archive: bytes, flips) -> None:
    data = bytearray(archive)
    for offset, mask in flips:
        data[offset % len(data)] ^= mask
    check_load(bytes(data), "f.npz")


@FUZZ
@given(dtype=_dtypes, shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), payload=st.binary(max_size=400),
       declared=st.one_of(st.none(), st.tuples(st.integers(0, 10 ** 13), st.integers(0, 10 ** 3))))
def test_random_npy_with_honest_or_lying_headers(dtype, shape, payload, declared) -> None:
    dtype = np.dtype(dtype)
    buffer = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
              "shape": tuple(declared) if declared is not None else tuple(shape)}
    np.lib.format.write_array_header_1_0(buffer, header)
    outcome = check_load(buffer.getvalue() + payload, "f.npy")
    if outcome == "loaded":
        array = np.load(io.BytesIO(buffer.getvalue() + payload), allow_pickle=False)
        assert array.shape[0] >= 1


_arrow_columns = st.sampled_from(["int", "float", "string", "bool", "list", "struct", "map", "dict", "ts",
                                  "binary", "null", "prob", "label_text", "decimal"])


def _arrow_column(kind: str, n: int, rng: np.random.Generator):
    import decimal

    import pyarrow as pa

    if kind == "int":
        return pa.array(rng.integers(-2, 4, n))
    if kind in ("float", "prob"):
        return pa.array(rng.random(n) if kind == "prob" else rng.normal(size=n))
    if kind == "string":
        return pa.array([rng.choice(["a", "b", "NA", "", "c1"]) for _ in range(n)])
    if kind == "label_text":
        return pa.array([rng.choice(["x", "y"]) for _ in range(n)])
    if kind == "bool":
        return pa.array(rng.random(n) > 0.5)
    if kind == "list":
        return pa.array([[int(v)] for v in rng.integers(0, 3, n)])
    if kind == "struct":
        return pa.array([{"x": int(v)} for v in rng.integers(0, 3, n)])
    if kind == "map":
        return pa.array([[("k", int(v))] for v in rng.integers(0, 3, n)], type=pa.map_(pa.string(), pa.int64()))
    if kind == "dict":
        return pa.array([rng.choice(["a", "b"]) for _ in range(n)]).dictionary_encode()
    if kind == "ts":
        return pa.array(rng.integers(0, 10 ** 9, n).astype("datetime64[s]"))
    if kind == "binary":
        return pa.array([bytes([int(v)]) for v in rng.integers(0, 255, n)])
    if kind == "decimal":
        return pa.array([decimal.Decimal("0.5")] * n)
    return pa.nulls(n)


@FUZZ
@given(kinds=st.lists(st.tuples(st.sampled_from(["label", "p_a", "p_b", "p_c", "logit_a", "score", "split",
                                                 "x", "sample_id"]), _arrow_columns),
                      min_size=1, max_size=5, unique_by=lambda t: t[0]),
       n_rows=st.integers(0, 6), seed=st.integers(0, 2 ** 32 - 1), index=st.booleans())
def test_random_parquet_schemas(kinds, n_rows, seed, index) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    table = pa.table({name: _arrow_column(kind, n_rows, rng) for name, kind in kinds})
    if index:
        meta = {b"pandas": b'{"index_columns": ["missing"], "columns": []}'}
        table = table.replace_schema_metadata(meta)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    outcome = check_load(buffer.getvalue(), "f.parquet")
    if outcome == "loaded" and dict(kinds).get("label") == "int" and all(
            dict(kinds).get(c) == "prob" for c in ("p_a", "p_b") if c in dict(kinds)):
        pred = load_predictions(buffer.getvalue(), name="f.parquet")
        np.testing.assert_array_equal(pred.labels, table.column("label").to_numpy())


def test_fuzz_oracle_is_not_vacuous(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle lets a foreign exception type through, and the independent reading is right."""
    import sys

    def broken(*args, **kwargs):
        raise TypeError("not a CalibrationInputError")

    monkeypatch.setattr(sys.modules[__name__], "load_predictions", broken)
    with pytest.raises(TypeError):
        check_load(b"label,p_a,p_b\n0,0.5,0.5\n", "f.csv")
    monkeypatch.undo()
    assert check_load(b"label,p_a,p_b\n0,0.5,0.5\n", "f.csv") == "loaded"
    assert check_load(b"\x00\x01", "f.npy") == "error"
    assert independent_csv(b"label,p_a,p_b\nb,0.25,0.75\n")[0].tolist() == [1]
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("probs.npy", b"\x93NUMPY garbage")
    assert check_load(zipped.getvalue(), "f.npz") == "error"


# ------------------------------------------------------------------ decoded size and long headers (issue 30)

def _constant_table_bytes(fmt: str, n_rows: int, n_classes: int, name_width: int) -> tuple[bytes, str, int]:
    """A valid file of ``n_rows`` rows (uniform probabilities, labels cycling) and its name and column count."""
    probs = np.full((n_rows, n_classes), 1.0 / n_classes)
    labels = np.arange(n_rows) % n_classes
    names = [f"p_{k}_" + "x" * name_width for k in range(n_classes)]
    if fmt in ("csv", "csv.gz"):
        row = ",".join(repr(1.0 / n_classes) for _ in range(n_classes))
        text = "label," + ",".join(names) + "\n" + "".join(f"{names[y][2:]},{row}\n" for y in labels)
        data = text.encode()
        return (gzip.compress(data, compresslevel=1) if fmt == "csv.gz" else data), f"f.{fmt}", n_classes + 1
    buffer = io.BytesIO()
    if fmt == "parquet":
        frame = pd.DataFrame(probs, columns=names)
        frame.insert(0, "label", labels)
        frame.to_parquet(buffer)
    elif fmt == "npz":
        np.savez(buffer, probs=probs, labels=labels)
    else:
        np.save(buffer, np.column_stack([probs, labels]))
    return buffer.getvalue(), f"f.{fmt}", n_classes + 1


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(["csv", "csv.gz", "parquet", "npz", "npy"]), n_rows=st.integers(1, 3_000),
       n_classes=st.integers(2, 40), name_width=st.sampled_from([0, 0, 40, 2_000]),
       row_slack=st.integers(-3, 3), cell_slack=st.integers(-50, 50), which=st.sampled_from(["rows", "cells", "none"]))
def test_decoded_size_limits_refuse_exactly_what_is_over_them(fmt, n_rows, n_classes, name_width, row_slack,
                                                            cell_slack, which) -> None:
    """Tables around the row and cell limits, with headers up to 80 KB long: refused (naming the streaming engine)
    exactly when over a limit, else loaded whole with every class of the header."""
    if fmt in ("npz", "npy"):
        name_width = 0  # arrays have no column names
    data, name, n_columns = _constant_table_bytes(fmt, n_rows, n_classes, name_width)
    max_rows = max(1, n_rows + row_slack) if which == "rows" else None
    max_cells = max(1, n_rows * n_columns + cell_slack) if which == "cells" else None
    over = (max_rows is not None and n_rows > max_rows) or (max_cells is not None and n_rows * n_columns > max_cells)
    try:
        pred = load_predictions(data, name=name, max_rows=max_rows, max_cells=max_cells, max_bytes=None)
    except CalibrationInputError as exc:
        assert over, f"refused under the limits: {exc}"
        assert "--engine stream" in str(exc) and ("rows" in str(exc) or "cells" in str(exc))
        return
    assert not over, "loaded over a limit"
    assert pred.n_samples == n_rows and pred.n_classes == n_classes
