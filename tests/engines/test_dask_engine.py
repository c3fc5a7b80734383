"""The Dask engine: partitions -> statistics -> tree reduction, on a small in-process LocalCluster."""
import numpy as np
import pandas as pd
import pytest

import dask
import distributed

from calib_core.engines.dask_engine import tree_reduce
from calib_core.engines.evaluate import evaluate
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.streaming import STREAM_METRICS
from calib_core.validation import CalibrationInputError

from tests.engines_support import prediction_frame


def _local_cluster(attempts: int = 3) -> distributed.LocalCluster:
    """An in-process LocalCluster; retried because distributed gives its IO-loop thread only
    10 s to start, which a busy 2-core CI machine has been seen to miss."""
    for attempt in range(attempts):
        try:
            return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                            dashboard_address=":0")
        except AssertionError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def client():
    # Threads, not processes: starts in well under a second and needs no pickling across processes.
    with _local_cluster() as cluster, distributed.Client(cluster) as connected:
        yield connected


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask_parts")
    n = 6_000
    frame = prediction_frame(0, n, 4, 0.4, tied_rows=400)
    for i, part in enumerate(np.array_split(np.arange(n), 5)):
        frame.iloc[part].to_parquet(path / f"part-{i}.parquet", row_group_size=500)
    frame.to_csv(path.parent / "dask_all.csv", index=False)
    return path


@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
def test_dask_on_a_local_cluster_equals_in_memory(client, folder, binning):
    memory = evaluate(folder, engine="memory", binning=binning)
    on_dask = evaluate(folder, engine="dask", scheduler=client, binning=binning, sketch_capacity=64)
    assert on_dask.engine == "dask" and on_dask.n_samples == 6_000 and on_dask.n_passes == 3
    assert list(on_dask.metrics) == list(STREAM_METRICS)
    for key, value in memory.metrics.items():
        assert on_dask.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_dask_reads_csv_and_reports_progress(client, folder):
    calls = []
    memory = evaluate(folder.parent / "dask_all.csv", engine="memory", metrics=["ece", "sce", "ks"])
    on_dask = evaluate(folder.parent / "dask_all.csv", engine="dask", scheduler=client, metrics=["ece", "sce", "ks"],
                       batch_rows=1_000, progress=lambda *a: calls.append(a))
    for key, value in memory.metrics.items():
        assert on_dask.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert calls and calls[0] == (6_000, 6_000, 1)


def test_dask_errors_are_one_clear_error(client, tmp_path):
    frame = pd.DataFrame({"label": [0, 1], "p_0": [0.5, np.nan], "p_1": [0.5, 0.5]})
    frame.to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(CalibrationInputError, match="NaN"):
        evaluate(tmp_path / "nan.parquet", engine="dask", scheduler=client)
    np.savez(tmp_path / "a.npz", probs=np.array([[0.5, 0.5]]), labels=np.array([0]))
    with pytest.raises(CalibrationInputError, match="CSV or Parquet"):
        evaluate(tmp_path / "a.npz", engine="dask", scheduler=client)


def test_tree_reduce_merges_every_part_once():
    rng = np.random.default_rng(1)
    parts = []
    whole = CalibrationStats(3)
    for size in (5, 1, 7, 3, 9):
        probs = rng.dirichlet(np.ones(3), size=size)
        labels = rng.integers(0, 3, size)
        parts.append(dask.delayed(CalibrationStats(3).update(probs, labels)))
        whole.update(probs, labels)
    merged = tree_reduce(parts).compute(scheduler="sync")
    assert merged.n_rows == whole.n_rows == 25
    np.testing.assert_allclose(merged.class_sum_value, whole.class_sum_value)
    with pytest.raises(CalibrationInputError, match="no partitions"):
        tree_reduce([])


@pytest.mark.slow
def test_default_local_cluster_of_worker_processes(folder):
    """scheduler=None starts (and closes) a LocalCluster of two worker processes: statistics are pickled."""
    memory = evaluate(folder, engine="memory", metrics=["ece", "classwise_ece", "ace", "ks", "nll"])
    on_dask = evaluate(folder, engine="dask", metrics=["ece", "classwise_ece", "ace", "ks", "nll"])
    for key, value in memory.metrics.items():
        assert on_dask.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_dask_errors_name_the_file_and_row_of_a_parquet_partition(client, folder, tmp_path):
    frame = pd.concat([pd.read_parquet(folder / f"part-{i}.parquet") for i in range(2)], ignore_index=True)
    frame.loc[1_234, "p_2"] = np.nan  # row 1,235 of the file, in its third row group of 500
    frame.to_parquet(tmp_path / "bad.parquet", row_group_size=500)
    with pytest.raises(CalibrationInputError, match=r"file 'bad.parquet': .*NaN.* row 1235:"):
        evaluate(tmp_path / "bad.parquet", engine="dask", scheduler=client)


def test_dask_per_group_statistics_equal_by_group_in_memory(client, tmp_path):
    import calib_core as cc

    rng = np.random.default_rng(3)
    n, k = 3_000, 3
    probs = rng.dirichlet(np.full(k, 0.5), size=n)
    labels = rng.integers(0, k, n)
    groups = rng.choice([f"site-{i}" for i in range(60)], size=n, p=rng.dirichlet(np.ones(60)))
    frame = pd.DataFrame({"label": labels, **{f"p_{j}": probs[:, j] for j in range(k)}, "site": groups})
    frame.to_parquet(tmp_path / "g.parquet", row_group_size=400)  # 8 partitions, merged in a tree
    on_dask = evaluate(tmp_path / "g.parquet", engine="dask", scheduler=client, group_column="site",
                       metrics=["ece", "classwise_ece", "ace"]).groups
    assert on_dask.merged and on_dask.labels[-1] == "other" and on_dask.n_distinct == len(set(groups))
    for key, metric in (("ece", cc.ece), ("classwise_ece", cc.classwise_ece)):
        reference = cc.by_group(metric, probs, labels, groups, n_boot=0).table
        table = on_dask.table(key)
        assert list(table["group"]) == list(reference["group"]) and list(table["n"]) == list(reference["n"])
        np.testing.assert_allclose(table["value"], reference["value"], rtol=0, atol=1e-12)
    assert "ace" in on_dask.unavailable


def test_dask_weight_column_equals_in_memory_and_repeated_rows(client, tmp_path):
    """Issue 28: a weight column on the Dask engine weights every per-bin sum; integer weights repeat rows."""
    frame = prediction_frame(5, 1_500, 3, 0.5, tied_rows=200)
    weights = np.random.default_rng(2).integers(0, 4, 1_500)
    for i, part in enumerate(np.array_split(np.arange(1_500), 3)):
        frame.iloc[part].assign(w=weights[part]).to_parquet(tmp_path / f"part-{i}.parquet")
    frame.loc[frame.index.repeat(weights)].to_parquet(tmp_path.parent / f"{tmp_path.name}_repeated.parquet")
    on_dask = evaluate(tmp_path, engine="dask", scheduler=client, weight_column="w")
    repeated = evaluate(tmp_path.parent / f"{tmp_path.name}_repeated.parquet", engine="memory")
    memory = evaluate(tmp_path, engine="memory", weight_column="w")
    assert on_dask.stats.sum_weight == weights.sum() and on_dask.n_samples == 1_500
    for key, value in on_dask.metrics.items():
        assert value == pytest.approx(repeated.metrics[key], rel=1e-12, abs=1e-13), key
        assert value == pytest.approx(memory.metrics[key], rel=1e-12, abs=1e-13), key
