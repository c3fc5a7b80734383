"""Row weights on the engines (issue 28): a weight column read by the column plan, weighted per-bin sums in
every streaming statistic, weighted summaries; integer weights equal repeated rows, and every engine equals the
in-memory weighted metrics (registry ``WEIGHTED``) to round-off."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.evaluate import evaluate, evaluate_arrays
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.streaming import STREAM_METRICS, WEIGHTED_STREAM_METRICS, stream_metrics
from calib_core.engines.summary import load_summary
from calib_core.metrics.registry import WEIGHTED
from calib_core.validation import CalibrationInputError

from tests.engines_support import prediction_frame

N, K = 900, 3


def _weights(seed: int = 1, n: int = N) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.integers(0, 4, n).astype(np.float64)  # zeros included: a weight of 0 drops the row
    weights[0] = 3.0
    return weights


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The same rows weighted (CSV with class-name labels: the loader's path; Parquet: the fast path) and
    repeated ``w`` times (Parquet)."""
    path = tmp_path_factory.mktemp("engine_weights")
    frame = prediction_frame(3, N, K, 0.6, tied_rows=150)
    weights = _weights()
    weighted = frame.assign(w=weights)
    weighted.to_parquet(path / "weighted.parquet", row_group_size=200)
    named = weighted.assign(label=np.array(["a", "b", "c"])[frame["label"]])
    named = named.rename(columns={"p_0": "p_a", "p_1": "p_b", "p_2": "p_c"})
    named.to_csv(path / "weighted.csv", index=False, float_format="%.17g")
    frame.loc[frame.index.repeat(weights.astype(int))].to_parquet(path / "repeated.parquet")
    probs = frame[[f"p_{j}" for j in range(K)]].to_numpy()
    return path, probs, frame["label"].to_numpy(), weights


def _in_memory(key: str, probs, labels, weights, n_bins: int = 15) -> float:
    """The in-memory weighted metric (the registry's declaration), at the engines' settings."""
    if key == "tace":
        return cc.tace(probs, labels, n_bins=n_bins, threshold=0.01, sample_weight=weights)
    return WEIGHTED[key](probs, labels, n_bins, "uniform", None, weights)


@pytest.mark.parametrize("source", ["weighted.parquet", "weighted.csv"])
@pytest.mark.parametrize("key", WEIGHTED_STREAM_METRICS)
def test_stream_engine_weights_equal_repeated_rows_and_in_memory(tables, source, key):
    path, probs, labels, weights = tables
    streamed = evaluate(path / source, engine="stream", weight_column="w", batch_rows=128, metrics=[key])
    repeated = evaluate(path / "repeated.parquet", engine="stream", batch_rows=128, metrics=[key])
    assert streamed.metrics[key] == pytest.approx(repeated.metrics[key], rel=1e-12, abs=1e-13)
    assert streamed.metrics[key] == pytest.approx(_in_memory(key, probs, labels, weights), rel=1e-12, abs=1e-13)
    assert streamed.n_samples == N and streamed.stats.sum_weight == weights.sum()
    assert streamed.weight_column == "w"


@pytest.mark.parametrize("key", STREAM_METRICS)
def test_memory_engine_weights_equal_repeated_rows_and_in_memory(tables, key):
    path, probs, labels, weights = tables
    weighted = evaluate(path / "weighted.parquet", engine="memory", weight_column="w", metrics=[key])
    repeated = evaluate(path / "repeated.parquet", engine="memory", metrics=[key])
    assert weighted.metrics[key] == pytest.approx(repeated.metrics[key], rel=1e-12, abs=1e-13)
    assert weighted.metrics[key] == pytest.approx(_in_memory(key, probs, labels, weights), rel=1e-12, abs=1e-13)


def test_default_metrics_with_weights_on_the_stream_engine_say_what_is_left_out(tables):
    path, probs, labels, weights = tables
    streamed = evaluate(path / "weighted.parquet", engine="stream", weight_column="w")
    assert list(streamed.metrics) == list(WEIGHTED_STREAM_METRICS)
    assert any("ACE, TACE, KS" in note for note in streamed.warnings)
    memory = evaluate(path / "weighted.parquet", engine="memory", weight_column="w")
    assert list(memory.metrics) == list(STREAM_METRICS)
    for key in WEIGHTED_STREAM_METRICS:
        assert streamed.metrics[key] == pytest.approx(memory.metrics[key], rel=1e-12, abs=1e-13), key
    assert streamed.metrics["ece"] != pytest.approx(cc.ece(probs, labels))  # the weights were used


@pytest.mark.parametrize("options", [dict(metrics=["ace"]), dict(metrics=["ks"]), dict(metrics=["tace"]),
                                     dict(binning="adaptive")])
def test_stream_engine_refuses_metrics_needing_weighted_quantiles(tables, options):
    path = tables[0]
    with pytest.raises(CalibrationInputError, match="quantile sketch .* takes no weights"):
        evaluate(path / "weighted.parquet", engine="stream", weight_column="w", **options)


def test_weighted_statistics_keep_no_sketch_and_merge_only_with_weighted():
    with pytest.raises(CalibrationInputError, match="no quantile sketches"):
        CalibrationStats(3, weighted=True, sketch_capacity=64)
    with pytest.raises(CalibrationInputError, match="weighting"):
        CalibrationStats(3, weighted=True).merge(CalibrationStats(3))
    with pytest.raises(CalibrationInputError, match="built without weights"):
        CalibrationStats(3).update([[0.5, 0.3, 0.2]], [0], sample_weight=[2.0])


def test_weighted_statistics_merge_and_round_trip_as_one_pass(tables):
    _, probs, labels, weights = tables
    whole = CalibrationStats(K, weighted=True, sweep_bins=(5, 20)).update(probs, labels, sample_weight=weights)
    parts = [CalibrationStats(K, weighted=True, sweep_bins=(5, 20)).update(probs[rows], labels[rows],
                                                                          sample_weight=weights[rows])
             for rows in np.array_split(np.arange(N), 4)]
    merged = CalibrationStats.from_json(parts[0].merge(parts[1]).merge(parts[2].merge(parts[3])).to_json())
    assert merged.weighted and merged.sum_weight == weights.sum() and merged.n_rows == N
    for key, value in whole.metrics().items():
        assert merged.metrics()[key] == pytest.approx(value, rel=1e-12, abs=1e-13), key
    for n_bins in (5, 20):
        assert merged.metrics(n_bins)["ece"] == pytest.approx(
            cc.ece(probs, labels, n_bins=n_bins, sample_weight=weights), rel=1e-12)


def test_stream_metrics_takes_weighted_batches():
    rng = np.random.default_rng(7)
    probs = rng.dirichlet(np.ones(4), 300)
    labels = rng.integers(0, 4, 300)
    weights = rng.uniform(0, 2, 300)  # fractional weights: the weighted formulas take any

    def run_pass(factory):
        stats = factory()
        for rows in np.array_split(np.arange(300), 3):
            stats.update(probs[rows], labels[rows], sample_weight=weights[rows])
        return stats

    result = stream_metrics(run_pass, 4, weighted=True, metrics=list(WEIGHTED_STREAM_METRICS))
    for key in WEIGHTED_STREAM_METRICS:
        assert result.metrics[key] == pytest.approx(_in_memory(key, probs, labels, weights), rel=1e-12), key


def test_bad_weights_in_a_file_are_refused_with_their_row(tmp_path):
    frame = prediction_frame(0, 50, 3, 1.0).assign(w=1.0)
    frame.loc[37, "w"] = -2.0
    frame.to_csv(tmp_path / "negative.csv", index=False)
    with pytest.raises(CalibrationInputError, match=r"negative.csv.*>= 0 in every row; row 38 "):
        evaluate(tmp_path / "negative.csv", engine="stream", weight_column="w")
    frame["w"] = frame["w"].astype(object)
    frame.loc[37, "w"] = "heavy"
    frame.to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(CalibrationInputError, match=r"text.csv.*finite number in every row; row 38 "):
        evaluate(tmp_path / "text.csv", engine="stream", weight_column="w", batch_rows=10)
    frame.assign(w=0.0).to_csv(tmp_path / "zero.csv", index=False)
    with pytest.raises(CalibrationInputError, match="weights sum to 0"):
        evaluate(tmp_path / "zero.csv", engine="stream", weight_column="w")


def test_split_filter_keeps_each_row_with_its_weight(tmp_path):
    frame = prediction_frame(2, 400, 3, 0.8).assign(w=_weights(5, 400))
    frame["split"] = np.where(np.arange(400) % 3 == 0, "test", "train")
    frame.to_parquet(tmp_path / "split.parquet", row_group_size=64)
    test = frame[frame["split"] == "test"]
    probs, labels = test[["p_0", "p_1", "p_2"]].to_numpy(), test["label"].to_numpy()
    streamed = evaluate(tmp_path / "split.parquet", engine="stream", weight_column="w", split="test", batch_rows=50)
    assert streamed.metrics["ece"] == pytest.approx(cc.ece(probs, labels, sample_weight=test["w"].to_numpy()),
                                                    rel=1e-12)


def test_weighted_summary_reads_back_the_weighted_tables(tables):
    path, probs, labels, weights = tables
    streamed = evaluate(path / "weighted.csv", engine="stream", weight_column="w", sweep_bins=(10,))
    data = json.loads(json.dumps(streamed.summary()))
    assert data["weight_column"] == "w" and data["sum_weight"] == weights.sum()
    summary = load_summary(data)
    assert summary.weight_column == "w" and summary.sum_weight == weights.sum()
    expected = cc.reliability_table(probs, labels, n_bins=10, sample_weight=weights)
    pd.testing.assert_frame_equal(summary.reliability_table(n_bins=10), expected, check_exact=False, rtol=1e-12)
    balance = summary.class_balance
    np.testing.assert_allclose(balance["share"], np.bincount(labels, weights=weights) / weights.sum(), rtol=1e-12)
    np.testing.assert_allclose(balance["mean_probability"], weights @ probs / weights.sum(), rtol=1e-12)


def test_summary_without_weights_still_reads_as_weight_one(tables):
    """Summaries written before weights have no weight keys: every row weighs 1."""
    _, probs, labels, _ = tables
    data = evaluate_arrays(probs, labels).summary()
    assert "sum_weight" not in data and "weighted" not in data["stats"]
    summary = load_summary(json.dumps(data))
    assert summary.weight_column is None and not summary.stats.weighted and summary.sum_weight == N
    assert summary.class_balance["count"].tolist() == np.bincount(labels, minlength=K).tolist()


def test_evaluate_arrays_with_weights_is_the_weighted_memory_summary(tables):
    _, probs, labels, weights = tables
    result = evaluate_arrays(probs, labels, sample_weight=weights, weight_column="w")
    summary = load_summary(result.summary())
    assert result.metrics["ace"] == pytest.approx(cc.ace(probs, labels, sample_weight=weights), rel=1e-12)
    table = summary.reliability_table(binning="adaptive")
    pd.testing.assert_frame_equal(table, cc.reliability_table(probs, labels, binning="adaptive", sample_weight=weights),
                                  check_exact=False, rtol=1e-12)
