"""``report --n-boot``: intervals in the table and the JSON, made as the Metrics page makes them (issue 25,
item 4; the page itself: tests/app/test_seed_agreement.py)."""
from __future__ import annotations

import json

import pytest

import calib_core as cc
from calib_core.engines.cli import main
from tests.engines_support import binary_predictions, write_binary


def test_n_boot_gives_metric_interval_for_every_metric(tmp_path, capsys):
    p, y = binary_predictions(3, 600)
    path = write_binary(tmp_path / "model.v2.csv", p, y)
    assert main(["report", path, "--json", "--n-boot", "100", "--seed", "4", "--n-bins", "10"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model"] == "model.v2" and (result["n_boot"], result["seed"]) == (100, 4)
    probs = cc.as_probs(p)
    for key in ("ece", "ace", "brier", "skce_block"):
        spec = cc.get_metric(key)
        found = cc.metric_interval(key, probs, y, n_bins=10 if spec.uses_bins else 15, n_boot=100, seed=4)
        assert result["intervals"][key]["low"] == pytest.approx(found.low, rel=1e-9), key
        assert result["intervals"][key]["high"] == pytest.approx(found.high, rel=1e-9), key
    assert result["intervals"]["kde_ce_kl"]["low"] is None  # declared without an interval
    assert main(["report", path, "--n-boot", "100", "--seed", "4", "--n-bins", "10"]) == 0
    text = capsys.readouterr().out
    assert "100 bootstrap resamples, seed 4" in text and "(no interval:" in text


def test_without_n_boot_there_is_no_resampling(tmp_path, capsys):
    p, y = binary_predictions(3, 300)
    path = write_binary(tmp_path / "model.csv", p, y)
    assert main(["report", path, "--json"]) == 0
    assert "intervals" not in json.loads(capsys.readouterr().out)
    assert main(["report", path, "--n-boot", "-1"]) == 2
    assert main(["report", path, "--n-boot", "50", "--engine", "stream"]) == 2
    assert "--n-boot" in capsys.readouterr().err
