"""``calib-core compare A B [C ...]``: paired differences on the same rows (issue 25, item 3)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from tests.engines_support import binary_predictions, write_binary


@pytest.fixture
def models(tmp_path):
    p, y = binary_predictions(3, 2000)
    over = np.clip(0.5 + 1.8 * (p - 0.5), 0.0, 1.0)
    return {"good": write_binary(tmp_path / "good.csv", p, y), "over": write_binary(tmp_path / "over.csv", over, y),
            "p": p, "y": y, "dir": tmp_path}


def _compare(capsys, *args) -> dict:
    assert main(["compare", *map(str, args), "--json", "--n-boot", "300"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_model_against_itself_differs_by_exactly_zero(models, capsys):
    result = _compare(capsys, models["good"], models["good"])
    assert result["models"] == [models["good"], models["good"]]  # same name twice: the paths tell them apart
    for entry in result["metrics"].values():
        (difference,) = entry["differences"]
        assert (difference["difference"], difference["low"], difference["high"]) == (0.0, 0.0, 0.0)
        assert difference["better"] is None


def test_intervals_are_metric_interval_and_the_better_model_is_named(models, capsys):
    result = _compare(capsys, models["good"], models["over"], "--metric", "ece", "--metric", "accuracy")
    ece = result["metrics"]["ece"]
    found = cc.metric_interval("ece", cc.as_probs(models["p"]), models["y"], n_boot=300, seed=0)
    assert ece["models"]["good"]["low"] == pytest.approx(found.low, rel=1e-9)
    assert ece["models"]["good"]["high"] == pytest.approx(found.high, rel=1e-9)
    (difference,) = ece["differences"]
    assert difference["low"] > 0 and difference["better"] == "good"
    assert result["metrics"]["accuracy"]["higher_is_better"] is True


def test_three_models_give_every_pair(models, capsys, tmp_path):
    result = _compare(capsys, models["good"], models["over"], models["good"], "--metric", "brier")
    assert len(result["metrics"]["brier"]["differences"]) == 3


def test_text_output_says_which_is_better(models, capsys):
    assert main(["compare", models["good"], models["over"], "--metric", "ece", "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "over - good" in out and "good better beyond noise" in out


def test_different_rows_are_refused(models, capsys, tmp_path):
    p, y = models["p"], models["y"]
    shuffled = write_binary(tmp_path / "shuffled.csv", p[::-1], y[::-1])
    assert main(["compare", models["good"], shuffled]) == 2
    assert "different labels" in capsys.readouterr().err
    assert main(["compare", models["good"], models["over"], "--metric", "kde_ce_kl"]) == 2
    assert "paired bootstrap" in capsys.readouterr().err


def test_a_missing_id_column_is_named_as_the_id_column(models, capsys):
    assert main(["compare", models["good"], models["over"], "--id-column", "nope"]) == 2
    err = capsys.readouterr().err
    assert "id column 'nope'" in err and "--id-column" in err and "--group-by" not in err


def test_confidence_systems_are_matched_by_item_id_and_judged_on_their_own_correctness(tmp_path, capsys):
    """Before: two systems' files were refused as "not the same rows" because their correctness differs."""
    rng = np.random.default_rng(5)
    n = 400
    c = rng.uniform(0.4, 1.0, n)
    right = (rng.uniform(size=n) < c).astype(int)
    sure_right = (rng.uniform(size=n) < 0.7).astype(int)
    honest = tmp_path / "honest.csv"
    honest.write_text("question_id,confidence,correct\n" + "".join(f"q{i},{c[i]:.4f},{right[i]}\n" for i in range(n)))
    order = rng.permutation(n)[: n - 10]  # another order, and 10 items this system did not answer
    sure = tmp_path / "sure.csv"
    sure.write_text("question_id,confidence,correct\n" + "".join(f"q{i},0.97,{sure_right[i]}\n" for i in order))
    result = _compare(capsys, honest, sure, "--metric", "conf_ece", "--metric", "conf_brier")
    assert result["n_samples"] == n - 10 and "id" in result["matched_by"]
    kept = np.sort(order)
    brier = result["metrics"]["conf_brier"]["models"]
    assert brier["honest"]["estimate"] == pytest.approx(np.mean((np.round(c, 4)[kept] - right[kept]) ** 2))
    assert brier["sure"]["estimate"] == pytest.approx(np.mean((0.97 - sure_right[kept]) ** 2))
    assert result["metrics"]["conf_ece"]["differences"][0]["better"] == "honest"


def test_a_long_file_of_several_systems_is_compared(tmp_path, capsys):
    """Before: refused ("holds 2 systems in column 'model'; load it with load_confidence_models")."""
    lines = ["question_id,model,confidence,correct"]
    lines += [f"q{i},a,0.9,{int(i % 10 != 0)}" for i in range(60)] + [f"q{i},b,0.9,{int(i % 2)}" for i in range(60)]
    path = tmp_path / "long.csv"
    path.write_text("\n".join(lines) + "\n")
    assert main(["compare", str(path), "--json", "--n-boot", "50", "--metric", "conf_accuracy"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["models"] == ["a", "b"] and result["n_samples"] == 60
    assert result["metrics"]["conf_accuracy"]["models"]["a"]["estimate"] == pytest.approx(0.9)
