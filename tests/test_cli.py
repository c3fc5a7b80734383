"""Tests for the command line (`python -m calib_core report`)."""
import json
import subprocess
import sys
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
    ("label,p_a,p_b\n0,0.5,0.6\n", "sum to 1"),
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
