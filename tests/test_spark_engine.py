"""The Spark adapter (mapInArrow) in local mode; skipped where PySpark or Java is missing."""
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

from calib_core.engines.evaluate import evaluate

pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("PySpark needs a Java runtime", allow_module_level=True)


@pytest.mark.slow
def test_spark_local_mode_equals_in_memory(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    # The Python workers must run this interpreter (with calib_core and its dependencies), not the first
    # `python3` on the PATH.
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)

    from calib_core.engines.spark_engine import evaluate_spark

    rng = np.random.default_rng(0)
    n, k = 2_000, 3
    probs = rng.dirichlet(np.full(k, 0.5), size=n)
    probs[:300] = np.round(probs[:300], 1)
    probs[:300] /= probs[:300].sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    frame = pd.DataFrame({"label": labels, **{f"p_{j}": probs[:, j] for j in range(k)}})
    frame.to_parquet(tmp_path / "preds.parquet")
    # Two files -> at least two partitions, so statistics are merged on the driver.
    (tmp_path / "parts").mkdir()
    frame.iloc[:1_200].to_parquet(tmp_path / "parts" / "a.parquet")
    frame.iloc[1_200:].to_parquet(tmp_path / "parts" / "b.parquet")
    spark = (SparkSession.builder.master("local[1]").appName("calib_core-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    metrics = ["accuracy", "ece", "classwise_ece", "ace", "tace", "brier", "nll"]  # two passes
    try:
        data = spark.read.parquet(str(tmp_path / "parts"))
        on_spark = evaluate_spark(data, binning="adaptive", metrics=metrics)
    finally:
        spark.stop()
    memory = evaluate(tmp_path / "preds.parquet", engine="memory", binning="adaptive", metrics=metrics)
    assert on_spark.engine == "spark" and on_spark.n_samples == n and on_spark.n_passes == 2
    for key, value in memory.metrics.items():
        assert on_spark.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
