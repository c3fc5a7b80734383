"""calib_core.io.formats: one format table and one CSV sniffer for the loader, the streaming engines and the app.

The regression at the heart of it: the streaming engine used its own delimiter sniffer, which knew no decimal
commas, so ``evaluate("preds.csv")`` refused a semicolon-separated file with decimal commas that
``load_predictions`` reads ("class column 'p_a' is not numeric: row 1 holds '0,39...'").
"""
import gzip
import io
import zipfile

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.batches import resolve_files
from calib_core.io.formats import (
    ARRAY_FORMATS,
    FORMATS,
    TABLE_FORMATS,
    CsvDialect,
    column_names,
    format_of,
    sniff_csv,
    sniff_csv_file,
)
from calib_core.metrics.reports import compute_metrics
from calib_core.validation import CalibrationInputError

KEYS = ["accuracy", "ece", "rmsce", "mce", "classwise_ece", "sce", "ks", "brier", "nll"]


def _decimal_comma_frame(n=500, k=3, seed=0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.7), size=n)
    labels = rng.integers(0, k, n)
    frame = pd.DataFrame({"label": labels, **{f"p_{c}": probs[:, j] for j, c in enumerate("abcdefgh"[:k])}})
    frame["split"] = np.where(np.arange(n) % 3 == 0, "calibration", "test")
    return frame


def _write_decimal_comma_csv(path, frame):
    text = frame.to_csv(index=False, sep=";", decimal=",")
    assert "0," in text and "." not in text  # decimal commas only
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _assert_same_numbers(found, predictions):
    expected = compute_metrics(predictions.probs, predictions.labels, keys=KEYS)
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


@pytest.mark.parametrize("name", ["preds.csv", "preds.csv.gz"])
@pytest.mark.parametrize("engine", ["stream", "memory"])
def test_streaming_engine_reads_semicolon_decimal_comma_csv_as_the_loader(tmp_path, name, engine):
    # Failed before the engine used the loader's sniffer: the class columns stayed text ("0,39...").
    path = _write_decimal_comma_csv(tmp_path / name, _decimal_comma_frame())
    predictions = cc.load_predictions(path)
    assert any("decimal commas" in w for w in predictions.warnings)
    result = cc.evaluate(path, engine=engine, batch_rows=97, metrics=KEYS)
    assert result.n_samples == predictions.n_samples and result.class_names == predictions.class_names
    _assert_same_numbers(result.metrics, predictions)
    test = cc.evaluate(path, engine=engine, batch_rows=97, metrics=KEYS, split="test")
    _assert_same_numbers(test.metrics, predictions.select_split("test"))


def test_dask_engine_reads_semicolon_decimal_comma_csv_as_the_loader(tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    path = _write_decimal_comma_csv(tmp_path / "preds.csv", _decimal_comma_frame(300, 4, seed=1))
    predictions = cc.load_predictions(path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        result = cc.evaluate(path, engine="dask", scheduler=client, metrics=KEYS)
    _assert_same_numbers(result.metrics, predictions)


def test_one_format_table_for_the_loader_and_the_engines(tmp_path):
    assert set(FORMATS.values()) == set(TABLE_FORMATS) | set(ARRAY_FORMATS)
    cases = {"a.csv": "csv", "a.TSV": "csv", "a.tsv.gz": "csv", "a.txt": "csv", "a.tab": "csv",
             "a.pq": "parquet", "a.parq.gz": "parquet", "dir.v2/a.parquet": "parquet", "a.npz": "npz",
             "a.npy": "npy", "a.json": None, "a": None, "a.gz": None}
    assert {name: format_of(name) for name in cases} == cases
    # The engines' folder listing takes the table formats of the same table.
    frame = _decimal_comma_frame(20)
    for name in ("x.tab", "y.parq", "z.json"):
        (tmp_path / name).write_text(frame.to_csv(index=False, sep="\t"))
    assert [p.name for p in resolve_files(tmp_path)] == ["x.tab", "y.parq"]


def test_sniffer_delimiters_decimal_marks_and_ties():
    assert sniff_csv("label,p_a,p_b\n0,0.5,0.5\n") == CsvDialect(",", ".", ["label", "p_a", "p_b"])
    dialect = sniff_csv("label;p_a;p_b\n0;1;0\n1;0,25;0,75\n")  # whole numbers first decide nothing
    assert (dialect.delimiter, dialect.decimal) == (";", ",")
    assert sniff_csv("label;p_a;p_b\n1;0,25;0.75\n").decimal == "."  # a decimal point rules commas out
    assert sniff_csv("label\tp_a\tp_b\n1\t0,25\t0,75\n").decimal == ","
    assert sniff_csv("label,p_a\n1,0,25\n").decimal == "."  # with comma delimiters there are no decimal commas
    assert sniff_csv("label\n0\n", hint="x.tsv.gz").delimiter == "\t"  # ties: the suffix's delimiter
    assert sniff_csv("\n\n a ; b \n").header == ["a", "b"]
    with pytest.raises(CalibrationInputError, match="is empty"):
        sniff_csv(" \n\n", display="upload 'x.csv'")


def test_sniff_csv_file_reads_a_header_longer_than_the_sample(tmp_path):
    names = [f"p_class_{k:05d}" for k in range(6_000)]  # about 80 KB of header
    row = ";".join(["1"] + ["0,5"] * 2 + ["0"] * (len(names) - 2))
    path = tmp_path / "wide.csv"
    path.write_text("\ufeff" + ";".join(["label", *names]) + "\n" + row + "\n", encoding="utf-8")
    dialect = sniff_csv_file(path)
    assert dialect.header == ["label", *names] and (dialect.delimiter, dialect.decimal) == (";", ",")
    (tmp_path / "blank.csv").write_text("\nlabel,p_a\n")
    with pytest.raises(CalibrationInputError, match="'blank.csv' is empty"):
        sniff_csv_file(tmp_path / "blank.csv")
    with pytest.raises(CalibrationInputError, match="cannot read"):
        sniff_csv_file(tmp_path / "absent.csv")


def test_column_names_are_the_names_the_loader_reads():
    text = "label; p_a ;p_b;\n0;0,5;0,5;x\n"
    assert column_names(text.encode(), "m.csv") == ["label", "p_a", "p_b"]  # stripped, empty name left out
    assert column_names(gzip.compress(text.encode()), "m.csv.gz") == ["label", "p_a", "p_b"]
    assert column_names(text.encode("utf-16"), "m.txt") == ["label", "p_a", "p_b"]
    assert column_names("label,caf\u00e9\n0,1\n".encode("latin-1"), "m.csv") == ["label", "caf\u00e9"]
    frame = pd.DataFrame({"label": [0, 1], "p_a": [0.2, 0.9]})
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    assert column_names(buffer.getvalue(), "m.csv") == ["label", "p_a"]  # content first, as the loader
    buffer = io.BytesIO()
    np.savez(buffer, probs=np.eye(2), labels=np.arange(2))
    assert column_names(buffer.getvalue(), "m.npz") == ["probs", "labels"]
    buffer = io.BytesIO()
    np.save(buffer, np.eye(2))
    assert column_names(buffer.getvalue(), "m.npy") == []
    with pytest.raises((CalibrationInputError, zipfile.BadZipFile)):
        column_names(b"PK\x03\x04 not a zip", "m.npz")


# ---------------------------------------------------------------------------------------------- decoded size
# Issue 30.1: a 129 KB Parquet of 10,000,000 rows took the server from 0.6 GB to 3.6 GB, and a 1.37 MB gzipped
# CSV (450 MB unpacked, under the byte limit) loaded at 3.3 GB. The byte limit bounds the file, not the table.

from calib_core.io.formats import MAX_CELLS, MAX_ROWS  # noqa: E402

BOMB_ROWS = 10_000_000


@pytest.fixture(scope="module")
def parquet_bomb(tmp_path_factory):
    """The reported upload: ``label`` int8 zeros, ``p_0`` = 0.7, ``p_1`` = 0.3, zstd; 10,000,000 rows, written
    as ten row groups so that making it costs little memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("bomb") / "bomb.parquet"
    block = pa.table({"label": pa.array(np.zeros(BOMB_ROWS // 10, dtype=np.int8)),
                      "p_0": pa.array(np.full(BOMB_ROWS // 10, 0.7)), "p_1": pa.array(np.full(BOMB_ROWS // 10, 0.3))})
    with pq.ParquetWriter(path, block.schema, compression="zstd") as writer:
        for _ in range(10):
            writer.write_table(block)
    assert path.stat().st_size < 1_000_000
    return path


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_small_parquet_of_ten_million_rows_is_refused_from_its_metadata(parquet_bomb, as_bytes):
    source = parquet_bomb.read_bytes() if as_bytes else parquet_bomb
    with pytest.raises(CalibrationInputError, match=r"10,000,000 rows x 3 columns.*--engine stream"):
        cc.load_predictions(source, name="bomb.parquet")


def test_a_gzipped_csv_bomb_is_refused_while_it_is_unpacked(tmp_path):
    import tracemalloc

    text = b"label,p_0,p_1\n" + b"0,0.7,0.3\n" * BOMB_ROWS  # 100 MB of text
    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(text, compresslevel=1))
    del text
    tracemalloc.start()
    try:
        with pytest.raises(CalibrationInputError, match=r"more than 5,000,000 rows.*--engine stream"):
            cc.load_predictions(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Unpacking stops at the row limit: never the whole 100 MB, nor a frame of it.
    assert peak < 80_000_000, peak


def test_a_plain_csv_over_the_limits_is_refused_before_pandas_reads_it(tmp_path, monkeypatch):
    path = tmp_path / "wide.csv"
    n_columns = 1_001
    n_rows = MAX_CELLS // n_columns + 10
    row = ("0," + ",".join(["0"] * (n_columns - 1)) + "\n").encode()
    header = ("label," + ",".join(f"p_{k}" for k in range(n_columns - 1)) + "\n").encode()
    with open(path, "wb") as handle:
        handle.write(header)
        handle.write(row * n_rows)

    def no_read(*args, **kwargs):
        raise AssertionError("pandas was asked to read a table over the limits")

    monkeypatch.setattr(pd, "read_csv", no_read)
    for source in (path, path.read_bytes()):
        with pytest.raises(CalibrationInputError, match=r"1,001 columns.*60,000,000 cells"):
            cc.load_predictions(source, name="wide.csv", max_bytes=None)


def test_an_npy_header_over_the_row_limit_is_refused(tmp_path):
    path = tmp_path / "rows.npy"
    np.save(path, np.zeros((MAX_ROWS + 1, 2), dtype=np.int8))
    with pytest.raises(CalibrationInputError, match=r"5,000,001 rows"):
        cc.load_predictions(path)
    archive = tmp_path / "rows.npz"
    np.savez(archive, probs=np.zeros((MAX_ROWS + 1, 2), dtype=np.int8), labels=np.zeros(MAX_ROWS + 1, np.int8))
    with pytest.raises(CalibrationInputError, match=r"5,000,001 rows"):
        cc.load_predictions(archive)


def test_the_limits_can_be_lifted_and_tables_under_them_load(parquet_bomb):
    import pyarrow.parquet as pq

    small = pq.read_table(parquet_bomb).slice(0, 1_000)
    buffer = io.BytesIO()
    pq.write_table(small, buffer)
    assert cc.load_predictions(buffer.getvalue(), name="small.parquet").n_samples == 1_000
    with pytest.raises(CalibrationInputError, match=r"1,000 rows x 3 columns"):
        cc.load_predictions(buffer.getvalue(), name="small.parquet", max_rows=999)
    with pytest.raises(CalibrationInputError, match=r"3,000 cells"):
        cc.load_predictions(buffer.getvalue(), name="small.parquet", max_cells=2_999)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(CalibrationInputError, match="max_rows"):
            cc.load_predictions(buffer.getvalue(), name="small.parquet", max_rows=bad)


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"])
@pytest.mark.parametrize("packed", [False, True])
def test_rows_are_counted_whatever_the_line_ending(tmp_path, ending, packed):
    """pandas reads old-Mac files (lines ended by CR alone): counting only LF let 1,000 rows past a 10-row limit."""
    data = b"label,p_0,p_1" + ending + (b"0,0.7,0.3" + ending) * 1_000
    data = gzip.compress(data) if packed else data
    name = "cr.csv.gz" if packed else "cr.csv"
    with pytest.raises(CalibrationInputError, match=r"1,000 rows|more than 10 rows"):
        cc.load_predictions(data, name=name, max_rows=10)
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CalibrationInputError, match=r"1,000 rows|more than 10 rows"):
        cc.load_predictions(path, max_rows=10)
    assert cc.load_predictions(data, name=name, max_rows=1_000).n_samples == 1_000


def _nested_parquet(n_rows: int, width: int) -> bytes:
    """A small table of labels and probabilities with a ``list<double>`` column of ``width`` values a row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    embedding = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(n_rows * width)), width)
    table = pa.table({"label": pa.array(np.arange(n_rows) % 2), "p_0": pa.array(np.full(n_rows, 0.7)),
                      "p_1": pa.array(np.full(n_rows, 0.3)), "embedding": pa.ListArray.from_arrays(
                          pa.array(np.arange(n_rows + 1) * width, type=pa.int32()), embedding.flatten())})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def test_a_nested_parquet_column_counts_its_values_against_the_cell_limit():
    data = _nested_parquet(10, 20_000)  # 200,000 floats in a few kilobytes
    with pytest.raises(CalibrationInputError, match=r"200,0\d\d values.*100,000 cells"):
        cc.load_predictions(data, name="nested.parquet", max_cells=100_000)
    assert cc.load_predictions(data, name="nested.parquet", max_cells=300_000).n_samples == 10


def test_column_names_of_a_gzipped_csv_unpack_only_its_head():
    import tracemalloc

    packed = gzip.compress(b"label,p_0\n" + b"0,0.5\n" * 5_000_000, compresslevel=9)  # 30 MB of text
    gzipped_table = io.BytesIO()
    with gzip.GzipFile(fileobj=gzipped_table, mode="wb") as handle:
        pd.DataFrame({"label": [0, 1], "p_a": [0.2, 0.9]}).to_parquet(handle)
    tracemalloc.start()
    try:
        assert column_names(packed, "big.csv.gz") == ["label", "p_0"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000, peak  # the first chunk, never the 30 MB
    assert column_names(gzipped_table.getvalue(), "m.parquet.gz") == ["label", "p_a"]  # a footer needs it all


@pytest.mark.parametrize("packed", [False, True])
def test_a_header_longer_than_the_sniff_counts_all_its_columns_against_the_cell_limit(tmp_path, packed):
    # 6,001 names of 200 characters: the header is longer than the 64 KiB sniff and the 1 MiB gzip chunk.
    n_columns, n_rows = 6_001, 8
    header = ",".join(["label"] + [f"p_{k:0198d}" for k in range(n_columns - 1)]) + "\n"
    text = (header + ("0," + ",".join(["0"] * (n_columns - 1)) + "\n") * n_rows).encode()
    assert len(header) > (1 << 20)
    path = tmp_path / ("wide.csv.gz" if packed else "wide.csv")
    path.write_bytes(gzip.compress(text) if packed else text)
    limit = n_rows * n_columns - 1
    for source in (path, path.read_bytes()):
        with pytest.raises(CalibrationInputError, match=rf"6,001 columns.*{limit:,} cells"):
            cc.load_predictions(source, name=path.name, max_cells=limit)
