"""evaluate(): CSV/Parquet files, folders and globs in record batches; summaries read back."""
import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core.engines import batches
from calib_core.engines.batches import choose_engine, resolve_files
from calib_core.engines.evaluate import evaluate, evaluate_arrays
from calib_core.engines.streaming import STREAM_METRICS
from calib_core.engines.summary import load_summary
from calib_core.metrics.reports import compute_metrics
from calib_core.metrics.sensitivity import bin_sensitivity
from calib_core.validation import CalibrationInputError

UNIFORM_AND_KS = ["accuracy", "ece", "rmsce", "mce", "classwise_ece", "sce", "ks", "brier", "nll"]


def _frame(seed, n, k=3):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.6), size=n)
    labels = rng.integers(0, k, n)
    return pd.DataFrame({"label": labels, **{f"p_{j}": probs[:, j] for j in range(k)}}), probs, labels


def _expected(probs, labels, keys=UNIFORM_AND_KS, **options):
    return compute_metrics(probs, labels, keys=keys, **options)


def _close(found, expected):
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=4).filter(lambda s: sum(s) > 0),
       batch_rows=st.one_of(st.just(1), st.integers(1, 60)), seed=st.integers(0, 1000))
def test_streamed_folder_equals_in_memory_over_batch_sizes_and_empty_files(tmp_path_factory, sizes, batch_rows, seed):
    folder = tmp_path_factory.mktemp("parts")
    frame, probs, labels = _frame(seed, sum(sizes))
    start = 0
    for i, size in enumerate(sizes):
        frame.iloc[start:start + size].to_parquet(folder / f"part-{i:02d}.parquet")  # some have 0 rows
        start += size
    result = evaluate(folder, engine="stream", batch_rows=batch_rows, metrics=UNIFORM_AND_KS)
    _close(result.metrics, _expected(probs, labels))
    assert result.n_samples == sum(sizes) and result.files == tuple(str(p) for p in sorted(folder.iterdir()))


@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
def test_every_metric_agrees_across_memory_and_stream(tmp_path, binning):
    frame, probs, labels = _frame(1, 3_000, 4)
    frame.to_parquet(tmp_path / "preds.parquet", row_group_size=700)
    memory = evaluate(tmp_path / "preds.parquet", engine="memory", binning=binning)
    stream = evaluate(tmp_path / "preds.parquet", engine="stream", binning=binning, batch_rows=512,
                      sketch_capacity=64)
    assert list(memory.metrics) == list(STREAM_METRICS)
    _close(stream.metrics, memory.metrics)
    _close(memory.metrics, _expected(probs, labels, keys=list(STREAM_METRICS), binning=binning))
    assert stream.exact and stream.n_passes == 3 and memory.engine == "memory"


def test_csv_gzip_tsv_and_glob_sources(tmp_path):
    frame, probs, labels = _frame(2, 1_000)
    frame.to_csv(tmp_path / "a.csv", index=False)
    with gzip.open(tmp_path / "b.csv.gz", "wt") as handle:
        frame.to_csv(handle, index=False)
    frame.to_csv(tmp_path / "c.tsv", index=False, sep="\t")
    expected = _expected(probs, labels)
    for source in ("a.csv", "b.csv.gz", "c.tsv"):
        _close(evaluate(tmp_path / source, batch_rows=97, metrics=UNIFORM_AND_KS).metrics, expected)
    both = evaluate(str(tmp_path / "*.csv*"), batch_rows=300, metrics=UNIFORM_AND_KS)
    assert both.n_samples == 2_000
    _close(both.metrics, _expected(np.concatenate([probs, probs]), np.concatenate([labels, labels])))


def test_logits_string_labels_and_split_follow_the_loader(tmp_path):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(600, 3)) * 2
    names = np.array(["cat", "dog", "emu"])
    labels = rng.integers(0, 3, 600)
    split = np.where(np.arange(600) % 3 == 0, "test", "calibration")
    frame = pd.DataFrame({"y_true": names[labels], **{f"logit_{n}": logits[:, j] for j, n in enumerate(names)},
                          "split": split})
    frame.to_parquet(tmp_path / "logits.parquet")
    result = evaluate(tmp_path / "logits.parquet", batch_rows=64, split="test", metrics=UNIFORM_AND_KS)
    keep = split == "test"
    _close(result.metrics, _expected(cc.softmax(logits[keep]), labels[keep]))
    assert result.class_names == ("cat", "dog", "emu") and result.input_kind == "logits"
    loaded = cc.load_predictions(tmp_path / "logits.parquet")
    assert loaded.class_names == result.class_names


def test_npz_files_are_read_through_the_loader(tmp_path):
    _, probs, labels = _frame(4, 500)
    np.savez(tmp_path / "arrays.npz", probs=probs, labels=labels)
    result = evaluate(tmp_path / "arrays.npz", batch_rows=33, metrics=UNIFORM_AND_KS)
    _close(result.metrics, _expected(probs, labels))


def test_progress_reports_rows_and_passes(tmp_path):
    frame, _, _ = _frame(5, 1_000)
    frame.to_parquet(tmp_path / "p.parquet")
    calls = []
    evaluate(tmp_path / "p.parquet", batch_rows=250, metrics=["ece", "ks"], progress=lambda *a: calls.append(a))
    assert calls[:4] == [(250, 1_000, 1), (500, 1_000, 1), (750, 1_000, 1), (1_000, 1_000, 1)]
    assert {c[2] for c in calls} == {1, 2, 3}


def test_bad_sources_give_clear_errors(tmp_path):
    frame, _, _ = _frame(6, 50)
    with pytest.raises(CalibrationInputError, match="file not found"):
        evaluate(tmp_path / "missing.parquet")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(CalibrationInputError, match="holds no CSV"):
        evaluate(tmp_path / "empty_dir")
    with pytest.raises(CalibrationInputError, match="no CSV, TSV or Parquet files match"):
        evaluate(str(tmp_path / "nothing-*.parquet"))
    (tmp_path / "notes.xlsx").write_bytes(b"x")
    with pytest.raises(CalibrationInputError, match="unknown file format"):
        evaluate(tmp_path / "notes.xlsx")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    frame.to_parquet(mixed / "a.parquet")
    frame.rename(columns={"p_2": "p_other"}).to_parquet(mixed / "b.parquet")
    with pytest.raises(CalibrationInputError, match=r"schema mismatch: 'b.parquet'.*'p_other'"):
        evaluate(mixed)
    (tmp_path / "garbage.parquet").write_bytes(b"PAR1 not really parquet")
    with pytest.raises(CalibrationInputError, match="could not read 'garbage.parquet' as Parquet"):
        evaluate(tmp_path / "garbage.parquet")
    frame.to_parquet(tmp_path / "whole.parquet")
    data = (tmp_path / "whole.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(CalibrationInputError, match="cut.parquet"):
        evaluate(tmp_path / "cut.parquet")
    frame.iloc[:0].to_parquet(tmp_path / "header_only.parquet")
    with pytest.raises(CalibrationInputError, match="no data rows"):
        evaluate(tmp_path / "header_only.parquet")
    with pytest.raises(CalibrationInputError, match="batch_rows"):
        evaluate(tmp_path / "whole.parquet", batch_rows=0)
    with pytest.raises(CalibrationInputError, match="engine"):
        evaluate(tmp_path / "whole.parquet", engine="spark")
    with pytest.raises(CalibrationInputError, match="metrics"):
        evaluate(tmp_path / "whole.parquet", metrics=["mmce"])
    with pytest.raises(CalibrationInputError, match="no split column"):
        evaluate(tmp_path / "whole.parquet", split="test")


def test_bad_values_name_the_file_and_row(tmp_path):
    frame, _, _ = _frame(7, 100)
    frame.loc[57, "p_1"] = np.nan
    frame.to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(CalibrationInputError, match=r"'nan.parquet'.*row 58"):
        evaluate(tmp_path / "nan.parquet", batch_rows=10)


def test_resolve_files_skips_hidden_and_marker_files(tmp_path):
    frame, _, _ = _frame(8, 10)
    frame.to_parquet(tmp_path / "b.parquet")
    frame.to_parquet(tmp_path / "a.parquet")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".hidden.parquet").write_bytes(b"")
    assert [p.name for p in resolve_files(tmp_path)] == ["a.parquet", "b.parquet"]


def test_auto_engine_streams_large_or_many_files(tmp_path, monkeypatch):
    frame, _, _ = _frame(9, 200)
    frame.to_parquet(tmp_path / "one.parquet")
    frame.to_parquet(tmp_path / "two.parquet")
    assert choose_engine(tmp_path / "one.parquet") == "memory"
    assert choose_engine(tmp_path) == "stream"
    assert choose_engine(tmp_path / "missing.csv") == "memory"
    assert choose_engine(tmp_path / "one.parquet", "dask") == "dask"
    monkeypatch.setattr(batches, "MEMORY_ENGINE_MAX_BYTES", 100)
    assert choose_engine(tmp_path / "one.parquet") == "stream"


def test_evaluate_and_the_cli_choose_the_auto_engine_by_one_rule(tmp_path, monkeypatch):
    """``evaluate(engine="auto")`` follows ``choose_engine`` (the CLI's rule): several files or a large table
    stream; one small table, and one NPZ file of any size (loaded whole by every engine), stay in memory."""
    frame, probs, labels = _frame(9, 200)
    frame.to_parquet(tmp_path / "one.parquet")
    frame.to_parquet(tmp_path / "two.parquet")
    np.savez(tmp_path / "arrays.npz", probs=probs, labels=labels)
    sources = [tmp_path / "one.parquet", tmp_path, [tmp_path / "one.parquet", tmp_path / "two.parquet"],
               tmp_path / "arrays.npz"]
    expected = ["memory", "stream", "stream", "memory"]
    assert [evaluate(s, engine="auto", metrics=["ece"]).engine for s in sources] == expected
    assert [choose_engine(s) for s in sources] == expected
    monkeypatch.setattr(batches, "MEMORY_ENGINE_MAX_BYTES", 100)
    expected = ["stream", "stream", "stream", "memory"]
    assert [evaluate(s, engine="auto", metrics=["ece"]).engine for s in sources] == expected
    assert [choose_engine(s) for s in sources] == expected


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_summary_json_gives_the_diagrams_without_rows(tmp_path, engine):
    frame, probs, labels = _frame(10, 4_000, 4)
    probs[:500] = np.round(probs[:500], 1)  # ties and values on bin edges
    probs[:500] /= probs[:500].sum(axis=1, keepdims=True)
    frame[[f"p_{j}" for j in range(4)]] = probs
    frame.to_parquet(tmp_path / "p.parquet")
    result = evaluate(tmp_path / "p.parquet", engine=engine, batch_rows=999, sweep_bins=(5, 10, 20))
    text = json.dumps(result.summary())
    assert "p_0" not in text or len(text) < 200_000  # statistics, not rows
    summary = load_summary(text)
    assert summary.n_samples == 4_000 and summary.class_names == ("0", "1", "2", "3")
    columns = list(cc.reliability_table(probs, labels).columns)
    for target in ("top_label", 2):
        for binning in ("uniform", "adaptive"):
            expected = cc.reliability_table(probs, labels, 15, binning, target)
            found = summary.reliability_table(target, 15, binning)
            assert list(found.columns) == columns
            np.testing.assert_allclose(found.to_numpy(float), expected.to_numpy(float), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(summary.classwise_ece(n_bins=10).to_numpy(),
                               cc.classwise_ece(probs, labels, n_bins=10, per_class=True), atol=1e-12)
    sweep = summary.bin_sensitivity()
    expected = bin_sensitivity(probs, labels, [5, 10, 15, 20], metrics=["ece", "sce", "ace"], binnings=["uniform"])
    merged = sweep.merge(expected, on=["n_bins", "binning", "metric"])
    assert len(merged) == 12
    np.testing.assert_allclose(merged["value_x"], merged["value_y"], atol=1e-12)
    np.testing.assert_allclose(summary.class_balance["count"], np.bincount(labels, minlength=4))
    assert summary.metrics == pytest.approx(result.metrics)


def test_evaluate_arrays_and_load_summary_errors():
    _, probs, labels = _frame(11, 300)
    summary = load_summary({"statistics": evaluate_arrays(probs, labels, class_names=["a", "b", "c"]).summary()})
    assert summary.reliability_table("b").shape[0] > 0
    with pytest.raises(CalibrationInputError, match="target"):
        summary.reliability_table("zebra")
    with pytest.raises(CalibrationInputError, match="no sums kept for 7 bins"):
        summary.reliability_table(n_bins=7)
    with pytest.raises(CalibrationInputError, match="n_bins=15 only"):
        summary.reliability_table(n_bins=10, binning="adaptive")
    with pytest.raises(CalibrationInputError, match="not valid JSON"):
        load_summary("{")
    with pytest.raises(CalibrationInputError, match="not a calib_core summary"):
        load_summary('{"metrics": {}}')
    with pytest.raises(CalibrationInputError, match="damaged"):
        load_summary({"format": "calib_core.summary/1"})


@pytest.mark.slow
def test_two_million_rows_stream_in_small_batches_with_bounded_memory(tmp_path):
    """A 2,000,000 x 10 Parquet file (176 MB in memory) evaluated in 50,000-row batches in a fresh process."""
    n, k = 2_000_000, 10
    path = tmp_path / "big.parquet"
    rng = np.random.default_rng(12)
    schema = pa.schema([("label", pa.int64())] + [(f"p_{j}", pa.float64()) for j in range(k)])
    with pq.ParquetWriter(path, schema) as writer:
        for _ in range(n // 250_000):
            probs = rng.dirichlet(np.full(k, 0.3), size=250_000)
            labels = rng.integers(0, k, 250_000)
            writer.write_table(pa.table({"label": labels, **{f"p_{j}": probs[:, j] for j in range(k)}}, schema=schema),
                               row_group_size=125_000)
    in_memory_bytes = n * (k + 1) * 8
    script = textwrap.dedent(f"""
        import json, resource, sys, tracemalloc
        import pyarrow as pa
        from calib_core.engines.evaluate import evaluate
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        tracemalloc.start()
        result = evaluate({str(path)!r}, engine="stream", batch_rows=50_000,
                          metrics=["accuracy", "ece", "classwise_ece", "brier", "nll"])
        peak_python = tracemalloc.get_traced_memory()[1]
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline
        print(json.dumps({{"n": result.n_samples, "peak_python": peak_python, "peak_rss": peak_rss,
                          "arrow_peak": pa.default_memory_pool().max_memory(), "ece": result.metrics["ece"]}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["n"] == n, found
    # numpy/Python allocations (tracemalloc), Arrow's pool and the whole-process peak growth
    # all stay far below the 176 MB the table takes in memory.
    assert found["peak_python"] < in_memory_bytes / 5
    assert found["arrow_peak"] < in_memory_bytes / 3  # about two row groups of 11 MB, decoded and raw
    assert found["peak_rss"] < in_memory_bytes / 2
    assert 0.0 <= found["ece"] <= 1.0


def test_a_bad_row_in_a_later_batch_is_named_with_its_row_in_the_file(tmp_path):
    frame, _, _ = _frame(8, 3_000)
    frame.loc[2_345, "p_0"] += 0.3  # this row no longer sums to 1
    frame.to_parquet(tmp_path / "sums.parquet")
    with pytest.raises(CalibrationInputError, match=r"file 'sums.parquet': rows of `probs` must sum to 1.*row 2346 "):
        evaluate(tmp_path / "sums.parquet", batch_rows=1_000)
    frame, _, _ = _frame(8, 3_000)
    frame.loc[2_345, "label"] = 7
    frame.to_parquet(tmp_path / "labels.parquet")
    with pytest.raises(CalibrationInputError, match=r"file 'labels.parquet': .*row 2346 is 7"):
        evaluate(tmp_path / "labels.parquet", batch_rows=1_000)


def test_a_bad_row_in_the_first_batch_is_named_with_its_file(tmp_path):
    frame, _, _ = _frame(9, 500)
    frame.loc[17, "p_1"] += 0.5
    frame.to_csv(tmp_path / "first.csv", index=False)
    with pytest.raises(CalibrationInputError, match=r"^file 'first.csv': .*row 18"):
        evaluate(tmp_path / "first.csv")


# ----------------------------------------------------------------------------- per-group results

@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(n=st.integers(1, 300), n_groups=st.sampled_from([1, 3, 55]), batch_rows=st.integers(1, 80),
       seed=st.integers(0, 1000), files=st.integers(1, 3))
def test_streamed_groups_equal_by_group_in_memory(tmp_path_factory, n, n_groups, batch_rows, seed, files):
    folder = tmp_path_factory.mktemp("grouped")
    frame, probs, labels = _frame(seed, n)
    rng = np.random.default_rng(seed + 1)
    codes = rng.choice(n_groups, size=n, p=rng.dirichlet(np.full(n_groups, 0.8)))
    frame["site"] = np.where(codes % 2 == 0, codes, -codes)  # integers: read back as text "4", "-3"
    for i, part in enumerate(np.array_split(np.arange(n), files)):
        frame.iloc[part].to_parquet(folder / f"part-{i}.parquet")
    groups = cc.load_predictions(folder / "part-0.parquet", group="site").groups if files == 1 else \
        frame["site"].astype(str).to_numpy()
    result = evaluate(folder, engine="stream", batch_rows=batch_rows, group_column="site",
                      metrics=["ece", "classwise_ece", "ace"]).groups
    for key, metric in (("ece", cc.ece), ("classwise_ece", cc.classwise_ece)):
        reference = cc.by_group(metric, probs, labels, groups, n_boot=0)
        table = result.table(key)
        assert list(table["group"]) == list(reference.table["group"])
        assert list(table["n"]) == list(reference.table["n"])
        np.testing.assert_allclose(table["value"], reference.table["value"], rtol=0, atol=1e-12)
        assert result.worst(key)[0] == reference.worst_group
    assert result.merged == (len(set(groups.tolist())) > 50) and result.notes == reference.notes[:len(result.notes)]
    assert "ace" in result.unavailable and "equal-mass" in result.unavailable["ace"]
    with pytest.raises(CalibrationInputError, match="not available"):
        result.table("ace")


def test_group_results_multicalibration_summary_and_memory_engine(tmp_path):
    frame, probs, labels = _frame(5, 2_000)
    groups = np.random.default_rng(6).choice(["north", "south", "east"], size=2_000)
    frame["site"] = groups
    frame["split"] = np.where(np.arange(2_000) % 4 == 0, "calibration", "test")
    frame.to_csv(tmp_path / "g.csv", index=False)
    test = frame["split"].to_numpy() == "test"
    streamed = evaluate(tmp_path / "g.csv", engine="stream", batch_rows=300, group_column="site", split="test")
    memory = evaluate(tmp_path / "g.csv", engine="memory", group_column="site", split="test")
    assert streamed.groups.n.sum() == test.sum() == memory.groups.n.sum()
    reference = cc.multicalibration(probs[test], labels[test], groups[test])
    found = streamed.groups.multicalibration()
    assert (found.group, found.bin, found.count) == (reference.group, reference.bin, reference.count)
    assert found.max_gap == pytest.approx(reference.max_gap, abs=1e-12)
    # The memory engine also gives ACE per group, as by_group does.
    ace = cc.by_group("ace", probs[test], labels[test], groups[test], n_boot=0).table
    np.testing.assert_allclose(memory.groups.table("ace")["value"], ace["value"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(memory.groups.table("ece")["value"], streamed.groups.table("ece")["value"], atol=1e-12)
    # The summary JSON keeps the per-group sums and values.
    summary = load_summary(json.dumps(streamed.summary()))
    pd.testing.assert_frame_equal(summary.groups.table("ece"), streamed.groups.table("ece"))
    assert summary.groups.unavailable == streamed.groups.unavailable
    assert summary.groups.multicalibration().max_gap == found.max_gap
    assert load_summary(json.dumps(evaluate(tmp_path / "g.csv", engine="stream").summary())).groups is None


def test_group_column_errors(tmp_path):
    frame, _, _ = _frame(7, 20)
    frame["site"] = np.arange(20) % 5
    frame.to_parquet(tmp_path / "g.parquet")
    with pytest.raises(CalibrationInputError, match="nope"):
        evaluate(tmp_path / "g.parquet", group_column="nope")
    with pytest.raises(CalibrationInputError, match="more than 4 distinct values"):
        evaluate(tmp_path / "g.parquet", group_column="site", max_distinct_groups=4)
    np.savez(tmp_path / "a.npz", probs=np.array([[0.5, 0.5]]), labels=np.array([0]))
    with pytest.raises(CalibrationInputError, match="group column"):
        evaluate(tmp_path / "a.npz", group_column="site")
    # A numeric group column is not taken as a class column.
    result = evaluate(tmp_path / "g.parquet", group_column="site")
    assert result.n_classes == 3 and result.groups.labels == ("0", "1", "2", "3", "4")


def test_auto_engine_judges_a_nested_parquet_by_its_leaf_values(tmp_path, monkeypatch):
    """Issue 30: ``--engine auto`` sizes a Parquet file as the loader does, counting every element of a
    nested column (a ``list<double>`` embedding), not rows x top-level columns; a file the loader would
    refuse for its decoded size streams instead of failing in memory."""
    from calib_core.io import limits

    frame, _, _ = _frame(5, 50)
    frame["embedding"] = [np.zeros(400) for _ in range(50)]  # 20,000 values in one leaf column
    path = tmp_path / "nested.parquet"
    frame.to_parquet(path)
    cap = 10_000  # rows x columns: 50 x 5 = 250; leaf values: 50 x 4 + 50 x 400 = 20,200
    with pytest.raises(CalibrationInputError, match="leaf columns"):
        cc.load_predictions(path, max_cells=cap)
    monkeypatch.setattr(limits.Decoded.__init__, "__defaults__", (limits.MAX_ROWS, cap))  # Decoded(): the defaults
    assert choose_engine(path) == "stream"
    monkeypatch.undo()
    assert choose_engine(path) == "memory"
