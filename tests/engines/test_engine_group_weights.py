"""evaluate(..., group_column=, weight_column=) (issue 28): per-group weighted sums on every engine, equal to
calib_core.by_group(sample_weight=) on the rows within 1e-12; integer weights equal the repeated rows."""
from __future__ import annotations

import json

import numpy as np
import pytest

import calib_core as cc
from calib_core.engines.evaluate import evaluate
from calib_core.engines.summary import load_summary

from tests.engines_support import prediction_frame

N, K = 600, 3


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("group_weights")
    frame = prediction_frame(4, N, K, 0.6, tied_rows=80)
    rng = np.random.default_rng(2)
    weights = rng.integers(0, 4, N).astype(np.float64)
    sites = rng.choice(["north", "south", "east", "west"], size=N, p=[0.4, 0.3, 0.2, 0.1])
    weights[sites == "west"] = 0.0  # a group of weight 0 only: by_group leaves it out
    weights[0] = 2.0
    sites[0] = "north"
    frame = frame.assign(w=weights, site=sites)
    frame.to_parquet(path / "weighted.parquet", row_group_size=128)
    frame.loc[frame.index.repeat(weights.astype(int))].drop(columns="w").to_parquet(path / "repeated.parquet")
    probs = frame[[f"p_{j}" for j in range(K)]].to_numpy()
    return path, probs, frame["label"].to_numpy(), sites, weights


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    from tests.engines.test_dask_engine import _local_cluster

    with _local_cluster() as cluster, distributed.Client(cluster) as connected:
        yield connected


# Dask: 3.6 s on a busy 2-core machine (cluster tasks, not the sums), so marked slow.
@pytest.mark.parametrize("engine", ["memory", "stream", pytest.param("dask", marks=pytest.mark.slow)])
def test_weighted_groups_equal_by_group(table, engine, request):
    """Before: evaluate refused weight_column with group_column."""
    path, probs, labels, sites, weights = table
    options = {"scheduler": request.getfixturevalue("dask_client")} if engine == "dask" else {}
    found = evaluate(path / "weighted.parquet", engine=engine, batch_rows=300 if engine == "dask" else 100,
                     group_column="site", weight_column="w", metrics=["ece", "classwise_ece", "brier", "accuracy"], **options).groups
    for key in ("ece", "classwise_ece", "brier", "accuracy"):
        reference = cc.by_group(key, probs, labels, sites, n_boot=0, sample_weight=weights).table
        mine = found.table(key)
        assert list(mine["group"]) == list(reference["group"]) == ["east", "north", "south"]
        assert list(mine["n"]) == list(reference["n"])
        np.testing.assert_allclose(mine["value"], reference["value"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(mine["gap"], reference["gap"], rtol=0, atol=1e-12)
    plain = cc.by_group("ece", probs, labels, sites, n_boot=0).table
    assert not np.allclose(found.table("ece")["value"], plain["value"][:3])
    multi = cc.multicalibration(probs, labels, sites, sample_weight=weights)
    assert found.multicalibration().max_gap == pytest.approx(multi.max_gap, abs=1e-12)


def test_integer_weights_equal_repeated_rows_and_the_summary_keeps_them(table):
    path, *_ = table
    weighted = evaluate(path / "weighted.parquet", engine="stream", batch_rows=64, group_column="site",
                        weight_column="w", metrics=["ece", "nll"])
    repeated = evaluate(path / "repeated.parquet", engine="stream", batch_rows=64, group_column="site",
                        metrics=["ece", "nll"])
    for key in ("ece", "nll"):
        a, b = weighted.groups.table(key), repeated.groups.table(key)
        assert list(a["group"]) == list(b["group"]) and list(a["n"]) == list(b["n"])
        np.testing.assert_allclose(a["value"], b["value"], rtol=0, atol=1e-12)
    summary = load_summary(json.dumps(weighted.summary()))
    np.testing.assert_array_equal(summary.groups.table("ece")["value"], weighted.groups.table("ece")["value"])
    assert list(summary.groups.n) == list(weighted.groups.n)
