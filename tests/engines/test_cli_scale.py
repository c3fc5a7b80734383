"""The command line on large inputs: --engine, --scheduler, --batch-rows, folders, globs, summary JSON."""
import json

import distributed
import numpy as np
import pandas as pd
import pytest

from calib_core.engines import batches
from calib_core.engines.cli import main
from calib_core.engines.summary import load_summary

from tests.engines_support import prediction_frame


@pytest.fixture
def folder(tmp_path):
    n = 3_000
    frame = prediction_frame(0, n, 3, 0.5)
    parts = tmp_path / "preds"
    parts.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(n), 3)):
        frame.iloc[rows].to_parquet(parts / f"part-{i}.parquet")
    frame.to_parquet(tmp_path / "all.parquet")
    return parts, tmp_path / "all.parquet"


def _report(capsys, *args):
    status = main(["report", *map(str, args), "--json"])
    out = capsys.readouterr()
    assert status == 0, out.err
    return json.loads(out.out)


def test_memory_stream_and_dask_give_identical_numbers(folder, capsys):
    parts, whole = folder
    memory = _report(capsys, whole, "--engine", "memory")
    stream = _report(capsys, parts, "--engine", "stream", "--batch-rows", "128")
    glob = _report(capsys, str(parts / "part-*.parquet"), "--batch-rows", "1000")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        on_dask = _report(capsys, parts, "--engine", "dask", "--scheduler", cluster.scheduler_address)
    assert (memory["engine"], stream["engine"], glob["engine"], on_dask["engine"]) == ("memory", "stream", "stream", "dask")
    for other in (stream, glob, on_dask):
        assert other["n_samples"] == memory["n_samples"] == 3_000
        for key, value in memory["metrics"].items():
            if key in other["metrics"]:
                assert other["metrics"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        assert set(other["metrics"]) >= {"ece", "classwise_ece", "ace", "tace", "ks", "brier", "nll"}


def test_summary_json_loads_back_for_diagrams(folder, capsys):
    parts, whole = folder
    for args in ((whole,), (parts, "--engine", "stream")):
        result = _report(capsys, *args)
        summary = load_summary(json.dumps(result))
        assert summary.n_samples == 3_000 and summary.bin_counts == (5, 10, 15, 20, 25, 30, 40, 50)
        table = summary.reliability_table("top_label")
        assert table["count"].sum() == 3_000
        assert summary.metrics["ece"] == pytest.approx(result["metrics"]["ece"])
        # Statistics, not rows: the JSON has a fixed size (cells x classes), whatever N is.
        assert len(json.dumps(result["statistics"])) < 60_000


def test_auto_engine_streams_large_inputs(folder, capsys, monkeypatch):
    _, whole = folder
    assert _report(capsys, whole)["engine"] == "memory"
    monkeypatch.setattr(batches, "MEMORY_ENGINE_MAX_BYTES", 1_000)
    assert _report(capsys, whole)["engine"] == "stream"


def test_table_output_of_the_stream_engine(folder, capsys):
    parts, _ = folder
    assert main(["report", str(parts), "--batch-rows", "500"]) == 0
    out = capsys.readouterr().out
    assert "N=3000, K=3" in out and "ECE" in out and "KS error" in out


@pytest.mark.parametrize("make, args, message", [
    (lambda d: None, ["missing_folder", "--engine", "stream"], "file not found"),
    (lambda d: (d / "empty").mkdir(), ["empty"], "holds no CSV"),
    (lambda d: (d / "bad.parquet").write_bytes(b"PAR1 broken"), ["bad.parquet", "--engine", "stream"], "as Parquet"),
    (lambda d: None, ["preds", "--batch-rows", "0"], "batch_rows"),
    (lambda d: None, ["preds", "--engine", "dask", "--scheduler", "nonsense://host"], "Dask scheduler"),
])
def test_bad_inputs_give_one_line_errors_and_status_2(folder, tmp_path, capsys, make, args, message):
    make(tmp_path)
    args = [str(tmp_path / args[0]), *args[1:]]
    assert main(["report", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calib-core: error:") and message in err and err.count("\n") == 1


def test_schema_mismatch_between_files_of_a_folder(folder, capsys):
    parts, _ = folder
    pd.DataFrame({"label": [0], "p_0": [0.2], "p_1": [0.3], "p_2": [0.5], "extra": [1]}).to_parquet(parts / "part-9.parquet")
    assert main(["report", str(parts)]) == 2
    err = capsys.readouterr().err
    assert "schema mismatch" in err and "'part-9.parquet'" in err and "'extra'" in err and err.count("\n") == 1


def test_progress_line_on_a_terminal(folder, capsys, monkeypatch):
    parts, _ = folder
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert main(["report", str(parts), "--batch-rows", "1000"]) == 0
    err = capsys.readouterr().err
    assert "\rpass 1: 3,000 rows (100%)" in err and "pass 3:" in err
