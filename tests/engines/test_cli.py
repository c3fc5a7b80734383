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
from calib_core.engines.cli import main

REPO = Path(__file__).resolve().parents[2]


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
    for spec in cc.metrics_of_kind("classes"):
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
    # Only Cox's slope and intercept are missing (one prediction value cannot fix a slope): null with the reason.
    assert {k for k, v in result["metrics"].items() if v is None} == set(result["reasons"]) == {"cox_slope",
                                                                                              "cox_intercept"}
    assert "not identifiable" in result["reasons"]["cox_slope"] and result["metrics"]["citl"] is not None
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


@pytest.fixture
def grouped_csv(tmp_path):
    """Group 'a' calibrated, group 'b' over-confident, group 'c' of 12 rows (too small)."""
    rng = np.random.default_rng(3)
    groups = np.array(["a"] * 500 + ["b"] * 500 + ["c"] * 12)
    p1 = rng.uniform(0.05, 0.95, size=groups.size)
    truth = np.where(groups == "b", 0.5 + (p1 - 0.5) * 0.3, p1)
    labels = (rng.uniform(size=groups.size) < truth).astype(int)
    frame = pd.DataFrame({"label": labels, "p_0": 1 - p1, "p_1": p1, "site": groups})
    path = tmp_path / "grouped.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    return path, np.column_stack([1 - p1, p1]), labels, groups


def test_group_by_json_matches_by_group_and_multicalibration(grouped_csv, capsys):
    path, probs, labels, groups = grouped_csv
    assert main(["report", str(path), "--group-by", "site", "--n-bins", "10", "--json"]) == 0
    section = json.loads(capsys.readouterr().out)["groups"]
    assert section["column"] == "site" and section["n_groups"] == 3
    for key, function in (("ece", cc.ece), ("ace", cc.ace)):
        expected = cc.by_group(key, probs, labels, groups, n_boot=200, seed=0, n_bins=10)
        entry = section["metrics"][key]
        assert [row["group"] for row in entry["table"]] == ["a", "b", "c"]
        assert [row["n"] for row in entry["table"]] == [500, 500, 12]
        values = [row["value"] for row in entry["table"]]
        assert values == pytest.approx(expected.table["value"].tolist(), rel=1e-12)
        # value is the metric on that group's rows, computed independently
        assert values[1] == pytest.approx(function(probs[groups == "b"], labels[groups == "b"], n_bins=10), rel=1e-9)
        assert [row["ci_low"] for row in entry["table"]] == pytest.approx(expected.table["ci_low"].tolist())
        assert [row["too_small"] for row in entry["table"]] == [False, False, True]
        assert entry["worst_group"] == "b"
        assert entry["worst_gap"] == pytest.approx(values[1] - entry["overall"])
        assert entry["gap_ci_low"] <= entry["worst_gap"] <= entry["gap_ci_high"]
    multi = cc.multicalibration(probs, labels, groups, n_bins=10)
    assert section["multicalibration"]["max_gap"] == pytest.approx(multi.max_gap)
    assert section["multicalibration"]["group"] == multi.group == "b"
    assert any("too_small" in note for note in section["notes"])


def test_group_by_table_names_the_worst_group_and_flags_small_ones(grouped_csv, capsys):
    path, *_ = grouped_csv
    assert main(["report", str(path), "--group-by", "site"]) == 0
    out = capsys.readouterr().out
    assert "groups by 'site' (3 groups" in out
    assert "worst: 'b', gap +" in out and "too small" in out and "multicalibration: largest" in out


def test_group_by_unknown_column_is_a_one_line_error_and_streams_say_what_is_not_exact(grouped_csv, capsys):
    path, *_ = grouped_csv
    assert main(["report", str(path), "--group-by", "nope"]) == 2
    assert "group column 'nope'" in capsys.readouterr().err
    assert main(["report", str(path), "--group-by", "site", "--engine", "stream"]) == 0
    assert "ace: n/a" in capsys.readouterr().out  # adaptive bins per group need the rows in memory


def test_json_has_a_tests_section_equal_to_calibration_test(predictions_csv, capsys):
    path, probs, labels = predictions_csv
    assert main(["report", str(path), "--json"]) == 0
    tests = json.loads(capsys.readouterr().out)["tests"]
    assert list(tests) == list(cc.TEST_METHODS)
    for method, entry in tests.items():
        expected = cc.calibration_test(probs, labels, method, seed=0)
        assert entry["statistic"] == pytest.approx(expected.statistic, rel=1e-9)
        assert entry["p_value"] == pytest.approx(expected.p_value, rel=1e-9)
        assert entry["verdict"] == expected.verdict and entry["reason"] == expected.verdict_reason
        assert entry["null_distribution"] == expected.null_distribution
        assert entry["measured_size"] == cc.lab.size_power.SIZE_NOTES[method]
    # Labels drawn independently of these Dirichlet predictions: every test sees miscalibration.
    assert tests["spiegelhalter"]["verdict"] == "miscalibrated"


def test_table_has_a_tests_block_and_an_untestable_file_keeps_exit_status_0(tmp_path, capsys):
    path = tmp_path / "constant.csv"
    pd.DataFrame({"label": [0, 1, 1, 0, 1, 0], "p_a": 0.5, "p_b": 0.5}).to_csv(path, index=False)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "calibration tests (alpha = 0.05):" in out
    assert "hosmer_lemeshow" in out and "n/a -- the Hosmer-Lemeshow test cannot be computed" in out
    assert main(["report", str(path), "--json"]) == 0
    tests = json.loads(capsys.readouterr().out)["tests"]
    assert tests["spiegelhalter"]["p_value"] is None and "no variance" in tests["spiegelhalter"]["reason"]


@pytest.mark.parametrize("text, flag", [
    ("label,p_a,p_b\n0,0.7,0.1\n1,0.2,0.6\n", "--renormalize"),
    ("label,p_a,p_b\n0,70,30\n1,20,80\n", "--percentages"),
])
def test_refused_file_names_the_command_line_flag_not_the_python_argument(tmp_path, capsys, text, flag):
    """Review of issue 11 item 1: the CLI said "Pass `renormalize=True`"; it names its own flag, which loads the file."""
    path = tmp_path / "scaled.csv"
    path.write_text(text)
    assert main(["report", str(path)]) == 2
    message = capsys.readouterr().err
    assert flag in message and "renormalize=True" not in message and "percentages=True" not in message
    assert main(["report", str(path), flag, "--json"]) == 0


def test_per_class_fits_left_out_for_size_are_null_free_and_named_in_the_warnings(predictions_csv, capsys,
                                                                                   monkeypatch):
    """Issue 15: as the Metrics page, the report leaves the per-class fits out above MAX_FIT_CELLS and says so."""
    monkeypatch.setitem(cc.metrics.reports.metric_report.__kwdefaults__, "max_fit_cells", 1000)
    path, _, _ = predictions_csv  # 400 rows x 3 classes = 1,200 rows x fits
    assert main(["report", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert not {"ici", "e50", "e90", "cox_slope", "cox_intercept", "citl"} & set(result["metrics"])
    (note,) = [w for w in result["warnings"] if "per-class fits" in w]
    assert "cox_slope" in note and "ici" in note and "400 rows x 3 classes = 1,200 rows x fits" in note


# ------------------------------------------------------------------------------------ the edges (issue 30.6)

def _cli(*args: str, address_space: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m calib_core`` in a subprocess; ``address_space`` caps its virtual memory (bytes) so that an
    unbounded read fails fast instead of taking the machine's memory."""
    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run([sys.executable, "-m", "calib_core", *args], capture_output=True, text=True, cwd=REPO,
                          check=False, timeout=timeout, preexec_fn=limit if address_space else None)


def _in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """``main(args)`` in this process (argument parsing, output and exit status as ``python -m calib_core``
    gives them, without a subprocess's 2.5 s import of calib_core), as a ``CompletedProcess`` for
    :func:`_one_line_error`. The entry point itself runs in a subprocess in ``test_module_entry_point_runs`` and
    ``test_an_endless_stream_is_refused_at_the_size_limit`` (status 2 there)."""
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(["calib_core", *args], status, captured.out, captured.err)


def _one_line_error(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    err = done.stderr
    assert err.startswith("calib-core: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("extra", [(), ("--html", "out.html")])
def test_a_negative_seed_is_a_one_line_error(predictions_csv, tmp_path, capsys, extra):
    """`report good.csv --seed -1` printed numpy's traceback and exited 1."""
    path, _, _ = predictions_csv
    extra = tuple(str(tmp_path / e) if e.endswith(".html") else e for e in extra)
    _one_line_error(_in_process(capsys, "report", str(path), "--seed", "-1", *extra), "--seed", "-1")


@pytest.mark.parametrize("args, words", [
    (("report", "PATH", "--n-bins", "x"), ("--n-bins", "'x'")),
    (("report", "PATH", "--bogus"), ("--bogus",)),
    (("report",), ("path",)),
    ((), ("report",)),
    (("report", "PATH", "--engine", "spark"), ("--engine", "spark")),
])
def test_argument_errors_are_one_line_and_status_2(predictions_csv, capsys, args, words):
    """argparse printed its usage (2 to 11 lines) before the error."""
    path, _, _ = predictions_csv
    _one_line_error(_in_process(capsys, *(str(path) if a == "PATH" else a for a in args)), *words)


@pytest.mark.parametrize("extra", [(), ("--html", "out.html")])
def test_an_endless_stream_is_refused_at_the_size_limit(tmp_path, extra):
    """`report /dev/zero --html out.html` read the whole stream before any size check (MemoryError)."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("needs /dev/zero")
    extra = tuple(str(tmp_path / e) if e.endswith(".html") else e for e in extra)
    done = _cli("report", "/dev/zero", *extra, address_space=3 << 30)
    _one_line_error(done, "/dev/zero", "more than 500,000,000 bytes")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch, capsys):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as handle:  # a sparse file: 600 MB long, no disk used
        handle.write(b"label,p_0,p_1\n")
        handle.truncate(600_000_000)
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda file, *a, **k: opened.append(str(file)) or real_open(file, *a, **k))
    for extra in ([], ["--html", str(tmp_path / "out.html")]):
        assert main(["report", str(path), "--engine", "memory", *extra]) == 2
        err = capsys.readouterr().err
        assert "600,000,000 bytes" in err and "--engine stream" in err and err.count("\n") == 1, err
    assert str(path) not in opened


def test_a_file_rewritten_while_it_is_loaded_does_not_change_the_report(predictions_csv, monkeypatch, capsys):
    """A file rewritten during the read crashed pandas' reader with SIGBUS: the command line reads a regular file
    once, into bytes, and loads those (the report is of the file as it was when read)."""
    import calib_core.engines.cli as cli

    path, probs, labels = predictions_csv
    real_load = cli.load_predictions

    def rewrite_then_load(source, **kwargs):
        path.write_text("label,p_a,p_b,p_c\n0,1,0,0\n")  # rewritten after the read, before the parse
        return real_load(source, **kwargs)

    monkeypatch.setattr(cli, "load_predictions", rewrite_then_load)
    assert main(["report", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_samples"] == 400
    assert result["metrics"]["ece"] == pytest.approx(cc.ece(probs, labels), rel=1e-9)


# ------------------------------------------------------------------- tables over the loader's limits (issue 30.1)

@pytest.fixture
def many_rows_parquet(tmp_path):
    """A small Parquet file of more rows than the loader holds in memory (constant columns compress to little)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from calib_core.io.formats import MAX_ROWS

    n = MAX_ROWS // 4 + 1
    block = pa.table({"label": pa.array(np.zeros(n, dtype=np.int8)), "p_0": pa.array(np.full(n, 0.7)),
                      "p_1": pa.array(np.full(n, 0.3))})
    path = tmp_path / "many.parquet"
    with pq.ParquetWriter(path, block.schema, compression="zstd") as writer:
        for _ in range(4):
            writer.write_table(block)
    return path, 4 * n


def test_a_table_over_the_memory_limits_streams_by_default_and_memory_says_how(many_rows_parquet, capsys):
    path, n_rows = many_rows_parquet
    done = _in_process(capsys, "report", str(path), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["engine"] == "stream" and result["n_samples"] == n_rows
    assert result["metrics"]["ece"] == pytest.approx(0.3)
    _one_line_error(_in_process(capsys, "report", str(path), "--engine", "memory"), f"{n_rows:,} rows",
                    "--engine stream")
def test_an_estimate_outside_its_bounds_is_marked_in_the_json_and_the_table(capsys):
    """Issue 23, item 5: the default demo's CE_KL (16.8) is above its NLL (2.24), which bounds the true CE_KL."""
    path = cc.demo_datasets()["digits_gaussian_nb"]
    assert main(["report", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metrics"]["kde_ce_kl"] > result["metrics"]["nll"]
    demo = cc.load_demo("digits_gaussian_nb")
    assert result["unreliable"] == cc.metric_report(demo.probs, demo.labels).unreliable
    assert result["unreliable"]["kde_ce_kl"].startswith("unreliable at this N and K (N = 899, K = 10)")
    assert main(["report", str(path)]) == 0
    table = capsys.readouterr().out
    line = next(row for row in table.splitlines() if row.startswith("CE_KL (kernel), h = 0.01 "))
    assert line.endswith("(unreliable at this N and K: see below)")
    assert f"CE_KL (kernel), h = 0.01: {result['unreliable']['kde_ce_kl']}" in table
# ---------------------------------------------------------------------------
# Columns decided by names and roles (issue 23 items 1-3, issue 30 item 3): the CLI reads as the loader does
# ---------------------------------------------------------------------------

def _report_json(path, capsys, *extra) -> dict:
    assert main(["report", str(path), "--json", *extra]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_labels_as_names_leave_an_integer_attribute_out_of_the_classes(tmp_path, capsys):
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, 300)
    frame = pd.DataFrame({"label": np.where(rng.uniform(size=300) < p, "Clinton", "Dole"), "Clinton": p,
                          "Dole": 1.0 - p, "educ": rng.integers(1, 8, 300)})
    path = tmp_path / "vote.csv"
    frame.to_csv(path, index=False)
    result = _report_json(path, capsys)
    memory = cc.load_predictions(path)
    assert result["n_classes"] == 2 and result["input_kind"] == "probabilities"
    assert result["metrics"]["ece"] == pytest.approx(cc.ece(memory.probs, memory.labels), abs=1e-12)
    assert any("not used as classes: 'educ' (integers 1-7)" in w and "--group-by" in w and "group=" not in w
               for w in result["warnings"])


def test_an_identifier_is_never_offered_as_logits(tmp_path, capsys):
    path = tmp_path / "qa.csv"
    path.write_text("question_id,confidence,label\n1,0.9,1\n2,0.2,0\n3,0.7,1\n4,0.4,1\n")
    result = _report_json(path, capsys)
    assert result["input_kind"] == "probabilities" and result["metrics"]["accuracy"] == 0.75
    assert any("'confidence'" in w and "class 1" in w for w in result["warnings"])
    path.write_text("question_id,label\n1,1\n2,0\n3,1\n4,1\n")
    assert main(["report", str(path)]) == 2
    assert "--input-kind logits" not in capsys.readouterr().err


def test_labels_that_are_the_columns_names_load_as_they_are(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("label,class_0,class_1\nclass_0,0.8,0.2\nclass_1,0.3,0.7\nclass_1,0.4,0.6\n")
    assert _report_json(path, capsys)["metrics"]["accuracy"] == 1.0


def test_a_proposed_mapping_names_the_class_names_flag_that_applies_it(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("label,a,b\ncat,0.8,0.2\ndog,0.3,0.7\ndog,0.4,0.6\n")
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert "class_names=" not in err and "--class-names cat,dog" in err
    assert err.strip().count("\n") == 0
    result = _report_json(path, capsys, "--class-names", "cat,dog")
    assert result["metrics"]["accuracy"] == 1.0


def test_a_single_column_named_for_class_zero_is_its_probability(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("label,p_0\n0,0.9\n1,0.2\n0,0.8\n")
    assert _report_json(path, capsys)["metrics"]["accuracy"] == 1.0
    path.write_text("label,score\n0,0.1\n1,0.8\n0,0.3\n")
    result = _report_json(path, capsys)
    assert any("'score' was taken as the probability of class 1" in w for w in result["warnings"])
