"""The command line on a confidence file (issue 26) and with row weights (issue 28): `report` shows the system's
accuracy and the confidence-vs-correct ECE, not a two-class reading, and `--weight-column` weights every number."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from tests.io.test_confidence_files import known_file


def test_report_reads_the_issue_file_as_a_confidence_model(tmp_path, capsys):
    """Before: `report` computed the K-class metrics of [1 - c, c] (accuracy 0.822, ECE 0.022 on this file)."""
    path = tmp_path / "answers.csv"
    path.write_bytes(known_file())
    assert main(["report", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "confidence"
    assert result["metrics"]["conf_accuracy"] == pytest.approx(0.674)
    assert result["metrics"]["conf_ece"] == pytest.approx(0.082)
    assert "accuracy" not in result["metrics"] and "ece" not in result["metrics"]
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert "confidence model" in text and "K=2" not in text


def test_kind_classes_never_reads_a_confidence_file(tmp_path, capsys):
    """`--kind classes` reaches the loader: the same file is then a two-class table without a label column."""
    path = tmp_path / "answers.csv"
    path.write_bytes(known_file())
    assert main(["report", str(path), "--kind", "classes"]) == 2
    assert "label column" in capsys.readouterr().err


def test_weight_column_equals_repeated_rows(tmp_path, capsys):
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(3), size=120)
    labels = rng.integers(0, 3, 120)
    weights = rng.integers(1, 4, 120)
    frame = pd.DataFrame(probs, columns=["p_a", "p_b", "p_c"])
    frame.insert(0, "label", np.array(["a", "b", "c"])[labels])
    frame["w"] = weights
    weighted = tmp_path / "weighted.csv"
    frame.to_csv(weighted, index=False)
    repeated = tmp_path / "repeated.csv"
    frame.loc[frame.index.repeat(weights)].drop(columns="w").to_csv(repeated, index=False)
    assert main(["report", str(weighted), "--json", "--weight-column", "w", "--max-quadratic-rows", "0"]) == 0
    with_weights = json.loads(capsys.readouterr().out)
    assert main(["report", str(repeated), "--json", "--max-quadratic-rows", "0"]) == 0
    with_rows = json.loads(capsys.readouterr().out)
    assert with_weights["weight_column"] == "w"
    for key in ("ece", "ace", "brier", "nll", "classwise_ece", "mmce", "skce"):
        assert with_weights["metrics"][key] == pytest.approx(with_rows["metrics"][key], rel=1e-9, abs=1e-12), key
    assert with_weights["metrics"]["ece"] != pytest.approx(cc.ece(probs, labels))  # the weights were used
    # The stream engine weights its sums too (the uniform-bin metrics), and its summary carries the weights.
    assert main(["report", str(weighted), "--json", "--weight-column", "w", "--engine", "stream"]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert streamed["weight_column"] == "w" and streamed["statistics"]["sum_weight"] == weights.sum()
    for key in ("ece", "rmsce", "mce", "classwise_ece", "accuracy", "brier", "nll"):
        assert streamed["metrics"][key] == pytest.approx(with_rows["metrics"][key], rel=1e-9, abs=1e-12), key
    assert "ace" not in streamed["metrics"] and any("ACE, TACE, KS" in w for w in streamed["warnings"])
    assert main(["report", str(weighted), "--weight-column", "w", "--engine", "stream", "--binning", "adaptive"]) == 2
    assert "memory engine" in capsys.readouterr().err
    # The memory engine's JSON summary is weighted as its metrics are (it was unweighted before).
    summary = cc.load_summary(json.dumps(with_weights["statistics"]))
    assert summary.sum_weight == weights.sum()
    pd.testing.assert_frame_equal(summary.reliability_table(n_bins=15),
                                  cc.load_summary(json.dumps(with_rows["statistics"])).reliability_table(n_bins=15),
                                  check_exact=False, rtol=1e-12)



def test_check_and_compare_read_a_confidence_file_with_its_own_metrics(tmp_path, capsys):
    """Before: `check --metric ece` and `compare` on the issue's file judged the two-class reading (ECE 0.022)."""
    path = tmp_path / "answers.csv"
    path.write_bytes(known_file())
    assert main(["check", str(path), "--metric", "ece", "--max", "0.2"]) == 2
    assert "conf_ece" in capsys.readouterr().err
    assert main(["check", str(path), "--metric", "conf_ece", "--max", "0.2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conditions"][0]["estimate"] == pytest.approx(0.082)
    assert main(["compare", str(path), str(path), "--json", "--n-boot", "50"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "ece" not in result["metrics"] and result["metrics"]["conf_ece"]["models"]
    assert result["metrics"]["conf_accuracy"]["higher_is_better"]
