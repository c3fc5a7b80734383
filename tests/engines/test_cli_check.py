"""``calib-core check``: every exit status on files built for it, the policy file, the baseline, JSON and JUnit
(issue 25, item 1)."""
from __future__ import annotations

import json
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import calib_core as cc
from calib_core.engines import cli_check
from calib_core.engines.cli import main
from tests.engines_support import binary_predictions, write_binary


@pytest.fixture
def files(tmp_path):
    p, y = binary_predictions(3, 3000)
    q, z = binary_predictions(1, 3000, shrink=0.5)
    small_p, small_y = binary_predictions(2, 30)
    return {
        "calibrated": write_binary(tmp_path / "calibrated.csv", p, y),
        "miscalibrated": write_binary(tmp_path / "miscalibrated.csv", q, z),
        "small": write_binary(tmp_path / "small.csv", small_p, small_y),
        "one_class": write_binary(tmp_path / "one_class.csv", p[:500], np.ones(500, dtype=int)),
        # Perfectly separated: Cox's logistic fit has no maximum (the slope cannot be computed).
        "separated": write_binary(tmp_path / "separated.csv", np.where(y == 1, 0.9, 0.1), y),
        "dir": tmp_path,
    }


def _check(capsys, *args) -> tuple[int, dict]:
    status = main(["check", *map(str, args), "--json"])
    out = capsys.readouterr().out
    return status, (json.loads(out) if out else {})


def test_a_calibrated_model_passes_a_loose_bar(files, capsys):
    status, result = _check(capsys, files["calibrated"], "--metric", "ece", "--max", "0.1")
    assert status == 0 and result["status"] == "pass"
    (outcome,) = result["conditions"]
    found = cc.metric_interval("ece", *_arrays(files["calibrated"]), n_boot=1000, seed=0)
    assert outcome["high"] == pytest.approx(found.high, rel=1e-9) and found.high <= 0.1


def test_a_miscalibrated_model_fails(files, capsys):
    status, result = _check(capsys, files["miscalibrated"], "--metric", "ece", "--max", "0.05")
    assert status == 1 and result["conditions"][0]["low"] > 0.05


def test_thirty_rows_are_inconclusive_even_on_the_estimate(files, capsys):
    for on in ("upper", "estimate"):
        status, result = _check(capsys, files["small"], "--metric", "ece", "--max", "0.5", "--on", on)
        assert status == 3, result
        assert "fewer than the minimum" in result["conditions"][0]["reason"]


def test_an_interval_across_the_bar_is_inconclusive_and_the_estimate_decides_alone(files, capsys):
    found = cc.metric_interval("ece", *_arrays(files["miscalibrated"]), n_boot=1000, seed=0)
    status, _ = _check(capsys, files["miscalibrated"], "--metric", "ece", "--max", found.estimate + 1e-6)
    assert status == 3
    status, _ = _check(capsys, files["miscalibrated"], "--metric", "ece", "--max", found.estimate + 1e-6,
                       "--on", "estimate")
    assert status == 0


@pytest.mark.parametrize("case, args", [
    ("one_class", ("--metric", "ece", "--max", "0.5")),
    ("one_class", ("--metric", "ece", "--max", "0.5", "--on", "estimate")),
    ("separated", ("--metric", "cox_slope", "--min", "0.0", "--on", "estimate")),
    ("calibrated", ("--metric", "kde_ce_l2", "--max", "1.0")),  # no interval: --on upper cannot judge
])
def test_degenerate_input_never_passes(files, capsys, case, args):
    status, result = _check(capsys, files[case], *args)
    assert status == 3, result
    assert result["conditions"][0]["reason"]


def test_nan_probabilities_are_invalid_input(files, capsys, tmp_path):
    p, y = binary_predictions(0, 200)
    p[3] = np.nan
    status = main(["check", write_binary(tmp_path / "nan.csv", p, y), "--metric", "ece", "--max", "0.5"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("calib-core: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("args, words", [
    (("--metric", "nope", "--max", "0.1"), "unknown metric"),
    (("--max", "0.1"), "need --metric"),
    ((), "nothing to check"),
    (("--metric", "ece"), "needs a bar"),
    (("--metric", "ece", "--max", "0.1", "--min", "0.0"), "not both"),
    (("--metric", "ece", "--max-increase", "0.1"), "--baseline"),
    (("--metric", "ece", "--max", "0.1", "--n-bins", "0"), "n_bins"),
    (("--metric", "ece", "--max", "0.1", "--alpha", "2"), "--alpha"),
    (("--test", "nope"), "invalid choice"),
])
def test_usage_errors_are_one_line_and_status_2(files, capsys, args, words):
    assert main(["check", files["calibrated"], *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calib-core: error: ") and err.count("\n") == 1 and words in err, err


def test_a_test_verdict_sets_the_status(files, capsys, monkeypatch):
    status, result = _check(capsys, files["miscalibrated"], "--test", "hosmer_lemeshow")
    assert status == 1 and result["conditions"][0]["status"] == "fail"
    verdicts = iter(["inconclusive", "consistent"])
    monkeypatch.setattr(cli_check, "calibration_test", lambda *a, **k: types.SimpleNamespace(
        verdict=next(verdicts), p_value=0.5, verdict_reason="the test's power is low here"))
    assert _check(capsys, files["calibrated"], "--test", "skce")[0] == 3
    assert _check(capsys, files["calibrated"], "--test", "skce")[0] == 0


def test_baseline_gate_on_matched_rows(files, capsys, tmp_path):
    same = _check(capsys, files["calibrated"], "--metric", "ece", "--baseline", files["calibrated"],
                  "--max-increase", "0.01")
    assert same[0] == 0 and same[1]["conditions"][0]["estimate"] == 0.0
    # The same rows as the calibrated file, with miscalibrated probabilities: worse beyond noise.
    p, y = binary_predictions(3, 3000)
    worse = write_binary(tmp_path / "worse.csv", np.clip(0.5 + 1.8 * (p - 0.5), 0.0, 1.0), y)
    status, result = _check(capsys, worse, "--metric", "ece", "--baseline", files["calibrated"],
                            "--max-increase", "0.01")
    assert status == 1 and result["conditions"][0]["low"] > 0.01
    # Accuracy worsens by falling: the same file as the baseline of itself passes.
    assert _check(capsys, worse, "--metric", "accuracy", "--baseline", worse, "--max-increase", "0.0")[0] == 0


def test_baseline_rows_matched_by_id_or_refused(files, capsys, tmp_path):
    p, y = binary_predictions(0, 3000)
    ids = np.arange(3000)
    order = np.random.default_rng(5).permutation(3000)
    new = write_binary(tmp_path / "new.csv", p, y, id=ids)
    shuffled = write_binary(tmp_path / "old.csv", p[order], y[order], id=ids[order])
    args = ("--metric", "ece", "--baseline", shuffled, "--max-increase", "0.001")
    status, result = _check(capsys, new, *args, "--id-column", "id")
    assert status == 0 and result["conditions"][0]["estimate"] == pytest.approx(0.0, abs=1e-15)
    assert main(["check", new, *args]) == 2
    assert "different labels" in capsys.readouterr().err
    short = write_binary(tmp_path / "short.csv", p[:100], y[:100])
    assert main(["check", new, "--metric", "ece", "--baseline", short, "--max-increase", "0.01"]) == 2


def test_policy_with_several_conditions_and_junit(files, capsys, tmp_path):
    policy = tmp_path / "calibration.toml"
    policy.write_text(
        '[defaults]\nseed = 1\nn_boot = 300\n\n'
        '[[condition]]\nmetric = "ece"\nbar = 0.5\n\n'                      # pass
        '[[condition]]\nmetric = "accuracy"\nbar = 0.99\nside = "min"\n\n'  # fail
        '[[condition]]\nmetric = "ece"\nbar = 0.5\nmin_rows = 100000\n',    # inconclusive
        encoding="utf-8")
    junit = tmp_path / "out" / "check.xml"
    junit.parent.mkdir()
    status = main(["check", files["calibrated"], "--policy", str(policy), "--junit", str(junit), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert status == 1
    assert [o["status"] for o in result["conditions"]] == ["pass", "fail", "inconclusive"]
    assert result["conditions"][0]["settings"]["seed"] == 1
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    assert [c.find("failure") is not None for c in cases] == [False, True, False]
    assert [c.find("skipped") is not None for c in cases] == [False, False, True]


@pytest.mark.parametrize("text, words", [
    ('[[condition]]\nmetric = "ece"\nbar = 0.1\nmaxx = 3\n', "unknown key"),
    ('[[condition]]\nmetric = "ece"\nbar = "high"\n', "finite number"),
    ('[[condition]]\nmetric = "ece"\nbar = 0.1\nside = "up"\n', "side"),
    ('metric = "ece"\n', "unknown top-level"),
    ("[[condition]\n", "not valid TOML"),
])
def test_bad_policy_files_are_invalid_input(files, capsys, tmp_path, text, words):
    policy = tmp_path / "p.toml"
    policy.write_text(text, encoding="utf-8")
    assert main(["check", files["calibrated"], "--policy", str(policy)]) == 2
    assert words in capsys.readouterr().err


def test_example_policy_parses_and_runs(files, capsys, repo_root):
    example = repo_root / "docs" / "calibration.example.toml"
    conditions, baseline = cli_check.read_policy(str(example), cli_check.Condition())
    assert len(conditions) >= 3 and baseline is None
    assert {c.kind for c in conditions} == {"metric", "test"}
    status = main(["check", files["calibrated"], "--policy", str(example)])
    out = capsys.readouterr().out
    assert status == 0, out


def test_text_summary_names_each_condition_and_the_status(files, capsys):
    assert main(["check", files["miscalibrated"], "--metric", "ece", "--max", "0.05"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "ECE, 15 uniform bins <= 0.05" in out and "exit status 1" in out


def _arrays(path):
    loaded = cc.load_predictions(path)
    return loaded.probs, loaded.labels


def test_the_readme_policy_parses(repo_root, tmp_path):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    block = readme.split("### Use it in CI", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    policy = tmp_path / "readme.toml"
    policy.write_text(block, encoding="utf-8")
    conditions, _ = cli_check.read_policy(str(policy), cli_check.Condition())
    assert [c.kind for c in conditions] == ["metric", "test", "baseline"]
