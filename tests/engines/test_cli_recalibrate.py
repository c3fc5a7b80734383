"""``calib-core recalibrate`` and ``calib-core apply`` reproduce the Python API (issue 25, item 2)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.recalibration import RECALIBRATORS
from calib_core.recalibration.compare import Protocol
from calib_core.recalibration.recommendation import compare_methods


@pytest.fixture
def logits_file(tmp_path):
    rng = np.random.default_rng(4)
    n, k = 900, 3
    labels = rng.integers(0, k, n)
    logits = 2.5 * (rng.normal(size=(n, k)) + 1.2 * np.eye(k)[labels])  # overconfident
    split = np.where(np.arange(n) % 3 == 0, "calibration", "test")
    frame = pd.DataFrame(logits, columns=[f"logit_{c}" for c in ("a", "b", "c")])
    frame.insert(0, "label", np.array(["a", "b", "c"])[labels])
    frame["split"] = split
    path = tmp_path / "model.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    return path, logits, labels, split


def _probs(frame: pd.DataFrame) -> np.ndarray:
    return frame[[c for c in frame.columns if c.startswith("p_")]].to_numpy()


def test_recalibrate_and_apply_equal_the_python_api(logits_file, tmp_path, capsys):
    path, logits, labels, split = logits_file
    out, saved, applied = tmp_path / "out.csv", tmp_path / "map.json", tmp_path / "applied.parquet"
    assert main(["recalibrate", str(path), "--method", "temperature_scaling", "--out", str(out),
                 "--save-map", str(saved), "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    assert "ECE" in printed and "->" in printed and "held-out" in printed
    written = pd.read_csv(out)
    fit_rows = split == "calibration"
    assert written["fitted"].tolist() == fit_rows.tolist()
    assert list(written["label"]) == list(np.array(["a", "b", "c"])[labels])
    expected = cc.TemperatureScaling().fit(logits[fit_rows], labels[fit_rows]).predict_proba(logits)
    np.testing.assert_allclose(_probs(written), expected, rtol=1e-9, atol=1e-12)
    from_map = cc.Recalibrator.from_json(saved.read_text(encoding="utf-8")).predict_proba(logits)
    np.testing.assert_allclose(_probs(written), from_map, rtol=1e-15, atol=0)  # 17 digits: exact
    assert main(["apply", str(saved), str(path), "--out", str(applied)]) == 0
    np.testing.assert_allclose(_probs(pd.read_parquet(applied)), from_map, rtol=1e-15, atol=0)


def test_without_a_split_column_a_seeded_fraction_is_fitted(logits_file, tmp_path, capsys):
    path, logits, labels, _ = logits_file
    plain = tmp_path / "plain.csv"
    pd.read_csv(path).drop(columns="split").to_csv(plain, index=False, float_format="%.17g")
    runs = []
    for name in ("a.parquet", "b.parquet"):
        assert main(["recalibrate", str(plain), "--method", "Isotonic regression", "--fit-fraction", "0.7",
                     "--seed", "3", "--out", str(tmp_path / name), "--n-boot", "0", "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    first, second = (pd.read_parquet(tmp_path / n) for n in ("a.parquet", "b.parquet"))
    assert first.equals(second)
    assert first["fitted"].sum() == runs[0]["n_fitted"] == pytest.approx(0.7 * len(labels), abs=3)


def test_auto_takes_the_pages_recommendation_and_says_why(logits_file, tmp_path, capsys):
    path, logits, labels, split = logits_file
    assert main(["recalibrate", str(path), "--method", "auto", "--out", str(tmp_path / "o.csv"), "--json",
                 "--n-boot", "50"]) == 0
    result = json.loads(capsys.readouterr().out)
    loaded = cc.load_predictions(path)
    page = compare_methods(loaded.probs, loaded.labels, logits=loaded.logits, split=loaded.split,
                           split_names=sorted(set(split)), class_names=loaded.class_names, n_boot=50, seed=0,
                           protocol=Protocol("split_column"))
    assert result["method"] == page.recommendation.method
    # The advice and its text are calib_core's (the page shows the same verdict): tie rule and published standing.
    assert result["why"] == page.recommendation.verdict("model", markdown=False)
    assert "CalArena" in result["why"] and page.recommendation.method in page.recommendation.tied


def test_every_registered_method_is_offered_by_its_json_name():
    from calib_core.engines.cli_recalibrate import method_names

    names = method_names()
    assert all(names[cls.method] == display for display, cls in RECALIBRATORS.items())


@pytest.mark.parametrize("args, words", [
    (("--method", "nope", "--out", "o.csv"), "unknown --method"),
    (("--method", "temperature_scaling", "--out", "o.txt"), ".csv or .parquet"),
    (("--method", "temperature_scaling", "--out", "o.csv", "--fit-fraction", "1.5"), "fit-fraction"),
    (("--method", "temperature_scaling", "--out", "o.csv", "--fit-split", "holdout"), "--fit-split"),
])
def test_recalibrate_usage_errors(logits_file, tmp_path, capsys, args, words):
    path = logits_file[0]
    assert main(["recalibrate", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calib-core: error: ") and err.count("\n") == 1 and words in err, err


def test_apply_refuses_a_logit_map_on_probabilities_and_a_broken_map(logits_file, tmp_path, capsys):
    path, logits, labels, _ = logits_file
    saved = tmp_path / "map.json"
    assert main(["recalibrate", str(path), "--method", "temperature_scaling", "--out", str(tmp_path / "o.csv"),
                 "--save-map", str(saved), "--n-boot", "0"]) == 0
    probs_file = tmp_path / "probs.csv"
    pd.DataFrame({"label": labels, **{f"p_{k}": cc.softmax(logits)[:, k] for k in range(3)}}).to_csv(probs_file,
                                                                                                    index=False)
    capsys.readouterr()
    assert main(["apply", str(saved), str(probs_file), "--out", str(tmp_path / "x.csv")]) == 2
    assert "fitted on logits" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert main(["apply", str(broken), str(path), "--out", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
