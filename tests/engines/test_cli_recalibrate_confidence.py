"""``calib-core recalibrate`` and ``apply`` on a confidence file (issue 26, deliverable 3)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calib_core.engines.cli import main
from calib_core.recalibration.compare import Protocol
from calib_core.recalibration.confidence import apply_confidence_map, compare_confidence, fit_confidence_map


@pytest.fixture
def confidence_file(tmp_path):
    rng = np.random.default_rng(7)
    n = 400
    confidence = np.round(rng.uniform(0.5, 1.0, n), 2)  # stated in steps of 1 %: ties, as verbalised confidences
    correct = (rng.random(n) < 0.3 + 0.6 * (confidence - 0.5)).astype(int)  # overconfident
    split = np.where(np.arange(n) % 2 == 0, "calibration", "test")
    ids = np.array([f"q{i:04d}" for i in range(n)])
    frame = pd.DataFrame({"question_id": ids, "confidence": confidence, "correct": correct, "split": split})
    path = tmp_path / "answers.csv"
    frame.to_csv(path, index=False)
    return path, ids, confidence, correct, split


def test_recalibrate_then_apply_round_trip_on_a_confidence_file(confidence_file, tmp_path, capsys):
    path, ids, confidence, correct, split = confidence_file
    out, saved, applied = tmp_path / "out.csv", tmp_path / "map.json", tmp_path / "applied.csv"
    assert main(["recalibrate", str(path), "--method", "platt_scaling", "--out", str(out), "--save-map", str(saved),
                 "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    assert "accuracy" not in printed.lower().replace("the accuracy (", "")  # no accuracy change is claimed
    assert "ECE" in printed and "AURC" in printed
    written = pd.read_csv(out, dtype={"question_id": str})
    assert list(written.columns[:3]) == ["question_id", "confidence", "correct"]
    assert written["question_id"].tolist() == ids.tolist()
    assert written["fitted"].tolist() == (split == "calibration").tolist()
    fit_rows = split == "calibration"
    expected = apply_confidence_map(fit_confidence_map("Platt scaling", confidence[fit_rows], correct[fit_rows]),
                                    confidence)
    np.testing.assert_allclose(written["confidence"], expected, rtol=1e-12)
    assert main(["apply", str(saved), str(path), "--out", str(applied)]) == 0
    again = pd.read_csv(applied, dtype={"question_id": str})
    assert again["question_id"].tolist() == ids.tolist()
    np.testing.assert_allclose(again["confidence"], written["confidence"], rtol=1e-15)
    # the output is itself a confidence file: it loads as one
    assert main(["recalibrate", str(applied), "--method", "isotonic_calibration", "--out",
                 str(tmp_path / "twice.csv"), "--n-boot", "0"]) == 0


def test_auto_takes_the_confidence_recommendation_and_json_has_no_accuracy(confidence_file, tmp_path, capsys):
    path, ids, confidence, correct, split = confidence_file
    assert main(["recalibrate", str(path), "--method", "auto", "--out", str(tmp_path / "auto.csv"), "--n-boot", "0",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    found = compare_confidence(confidence, correct, split=split, split_names=["calibration", "test"], n_boot=0,
                               protocol=Protocol("split_column", test_fraction=0.5))
    assert result["method"] == found.recommendation.method
    assert result["kind"] == "confidence"
    assert "conf_ece" in result["metrics"] and not any("accuracy" in key for key in result["metrics"])
    assert "accuracy +" not in result["why"] and "accuracy -" not in result["why"]
    assert result["order"]  # whether the chosen map keeps the confidences' order (AURC)


def test_a_method_that_does_not_apply_to_a_confidence_is_refused(confidence_file, tmp_path, capsys):
    path = confidence_file[0]
    assert main(["recalibrate", str(path), "--method", "vector_scaling", "--out", str(tmp_path / "v.csv")]) != 0
    assert "does not recalibrate a stated confidence" in capsys.readouterr().err
