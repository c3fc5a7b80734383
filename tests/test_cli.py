"""Tests for the command line (`python -m calib_core report`)."""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def predictions_csv(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=400)
    labels = rng.integers(0, 3, size=400)
    frame = pd.DataFrame(probs, columns=["p_a", "p_b", "p_c"])
    frame.insert(0, "label", labels)
    frame["split"] = np.where(np.arange(400) < 150, "calibration", "test")
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    return path, probs, labels


def test_json_report_matches_the_library(predictions_csv, capsys):
    path, probs, labels = predictions_csv
    assert main(["report", str(path), "--n-bins", "10", "--binning", "adaptive", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_samples"] == 400 and result["n_classes"] == 3
    assert result["metrics"]["ece"] == pytest.approx(cc.ece(probs, labels, n_bins=10, binning="adaptive"), rel=1e-9)
    assert result["metrics"]["ace"] == pytest.approx(cc.ace(probs, labels, n_bins=10), rel=1e-9)
    assert result["metrics"]["brier"] == pytest.approx(cc.brier_score(probs, labels), rel=1e-9)


def test_table_report_lists_every_metric(predictions_csv, capsys):
    path, probs, labels = predictions_csv
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    for spec in cc.METRICS:
        assert spec.label in out
    assert f"{cc.ece(probs, labels):.6f}" in out


def test_split_option_restricts_rows(predictions_csv, capsys):
    path, probs, labels = predictions_csv
    assert main(["report", str(path), "--split", "test", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_samples"] == 250
    assert result["metrics"]["ece"] == pytest.approx(cc.ece(probs[150:], labels[150:]), rel=1e-9)


@pytest.mark.parametrize("content, message", [
    ("label,p_a,p_b\n0,0.5,0.6\n", "not 1"),
    ("label,p_a,p_b\n0,0.5,nan\n", "NaN"),
    ("", "empty"),
])
def test_bad_input_gives_one_line_error_and_status_2(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calib-core: error:") and message.lower() in err.lower()
    assert err.strip().count("\n") == 0


def test_missing_file_gives_status_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.csv")]) == 2
    assert "calib-core: error:" in capsys.readouterr().err


def test_unknown_split_says_which_exist(predictions_csv, capsys):
    path, _, _ = predictions_csv
    assert main(["report", str(path), "--split", "validation"]) == 2
    assert "calibration, test" in capsys.readouterr().err


def test_module_entry_point_runs(predictions_csv):
    path, _, _ = predictions_csv
    done = subprocess.run([sys.executable, "-m", "calib_core", "report", str(path), "--json"],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert "ece" in json.loads(done.stdout)["metrics"]


def test_quadratic_metrics_are_left_out_above_the_row_limit(predictions_csv, capsys):
    path, probs, labels = predictions_csv
    assert main(["report", str(path), "--json", "--max-quadratic-rows", "100"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "skce" not in result["metrics"] and "kde_ce_kl" not in result["metrics"]
    assert any("left out the O(N^2) metrics" in w for w in result["warnings"])
    assert main(["report", str(path), "--json", "--max-quadratic-rows", "0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metrics"]["skce"] == pytest.approx(cc.skce(probs, labels), rel=1e-9)


# ----------------------------------------------------------------------------- one failing metric, limits, pipes

def test_one_row_file_reports_the_kernel_metrics_as_not_available(tmp_path, capsys):
    """`skce` needs 2 rows; the report used to stop with exit 2 instead of giving the other metrics."""
    path = tmp_path / "one.csv"
    path.write_text("label,p_a,p_b\n0,0.7,0.3\n")
    assert main(["report", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metrics"]["skce"] is None and result["metrics"]["kde_ce_kl"] is None
    assert "at least 2 rows" in result["reasons"]["skce"]
    assert set(result["reasons"]) == {k for k, v in result["metrics"].items() if v is None}
    assert result["metrics"]["ece"] == pytest.approx(0.3)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    (line,) = [row for row in out.splitlines() if row.startswith("SKCE (unbiased)")]
    assert "n/a -- `skce` needs at least 2 rows" in line
    assert "ECE, 15 uniform bins" in out


def test_constant_predictions_give_a_full_report(tmp_path, capsys):
    """Issue: all-equal predictions exited 2 with "the median pairwise distance of probs is 0 ... pass bandwidth"."""
    path = tmp_path / "constant.csv"
    pd.DataFrame({"label": [0, 1, 1, 0, 1], "p_a": [0.2] * 5, "p_b": [0.8] * 5}).to_csv(path, index=False)
    assert main(["report", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert not result["reasons"] and None not in result["metrics"].values()
    probs, labels = np.tile([0.2, 0.8], (5, 1)), np.array([0, 1, 1, 0, 1])
    assert result["metrics"]["skce"] == pytest.approx(cc.skce(probs, labels, bandwidth=1.0), abs=1e-15)


def test_negative_max_quadratic_rows_is_refused(predictions_csv, capsys):
    """It was accepted and silently dropped the kernel metrics."""
    path, _, _ = predictions_csv
    assert main(["report", str(path), "--max-quadratic-rows", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--max-quadratic-rows must be 0 (no limit) or a positive number of rows, got -1" in err


def test_names_in_the_json_carry_the_settings(predictions_csv, capsys):
    path, _, _ = predictions_csv
    assert main(["report", str(path), "--json", "--n-bins", "7"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metric_names"]["ece"] == "ECE, 7 uniform bins"
    assert result["metric_names"]["kde_ce_kl"] == cc.metric_name("kde_ce_kl") == "CE_KL (kernel), h = 0.01"
    assert result["metric_labels"]["ece"] == "ECE"


def _feed_fifo(path: Path, text: str) -> threading.Thread:
    def write():
        with open(path, "w") as handle:
            handle.write(text)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_named_pipe_is_read_once_in_memory(tmp_path, capsys):
    """`report` on a FIFO said the file was empty (memory) or "file not found" (stream)."""
    fifo = tmp_path / "preds.csv"
    os.mkfifo(fifo)
    writer = _feed_fifo(fifo, "label,p_a,p_b\n0,0.8,0.2\n1,0.3,0.7\n1,0.4,0.6\n")
    assert main(["report", str(fifo), "--json"]) == 0
    writer.join(5)
    result = json.loads(capsys.readouterr().out)
    assert result["n_samples"] == 3
    probs, labels = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]), np.array([0, 1, 1])
    assert result["metrics"]["ece"] == pytest.approx(cc.ece(probs, labels))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
@pytest.mark.parametrize("engine", ["stream", "dask"])
def test_a_named_pipe_and_a_multi_pass_engine_give_a_clear_message(tmp_path, capsys, engine):
    fifo = tmp_path / "preds.csv"
    os.mkfifo(fifo)
    assert main(["report", str(fifo), "--engine", engine]) == 2  # refused before the pipe is opened
    err = capsys.readouterr().err
    assert "is a pipe (FIFO), which can be read only once" in err and "--engine memory" in err
    assert "not found" not in err
