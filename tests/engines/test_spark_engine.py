"""The Spark adapter (mapInArrow) in local mode; skipped where PySpark or Java is missing (never in CI)."""
import os
import shutil
import sys

import numpy as np
import pytest

from calib_core.engines.evaluate import evaluate

from tests.engines_support import prediction_frame

if os.environ.get("CALIB_STUDIO_REQUIRE_ALL") == "1":  # CI: a missing PySpark or Java is a failure
    import pyspark  # noqa: F401
    assert shutil.which("java") is not None, "PySpark needs a Java runtime (Debian: default-jre-headless)"
else:
    pyspark = pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime", allow_module_level=True)


#: Java options of the driver (in local mode, the executor too): a JVM that lives a minute. The C1 compiler
#: only (no C2 recompilation of hot code, which a short test never repays) and the serial collector (no GC
#: threads competing with the pytest worker on the same CPU).
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.mark.slow
def test_spark_local_mode_equals_in_memory(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    # The Python workers must run this interpreter (with calib_core and its dependencies), not the first
    # `python3` on the PATH.
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)

    from calib_core.engines.spark_engine import evaluate_spark

    n = 2_000
    frame = prediction_frame(0, n, 3, 0.5, tied_rows=300)
    frame.to_parquet(tmp_path / "preds.parquet")
    # Two files -> at least two partitions, so statistics are merged on the driver.
    (tmp_path / "parts").mkdir()
    frame.iloc[:1_200].to_parquet(tmp_path / "parts" / "a.parquet")
    frame.iloc[1_200:].to_parquet(tmp_path / "parts" / "b.parquet")
    spark = (SparkSession.builder.master("local[1]").appName("calib_core-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
             .config("spark.driver.extraJavaOptions", SHORT_LIVED_JVM).getOrCreate())
    metrics = ["accuracy", "ece", "classwise_ece", "ace", "tace", "brier", "nll"]  # two passes
    # Row weights (issue 28), in the same Spark session: integer weights equal repeated rows.
    weights = np.random.default_rng(1).integers(0, 4, n)
    (tmp_path / "weighted").mkdir()
    frame.assign(w=weights).iloc[:900].to_parquet(tmp_path / "weighted" / "a.parquet")
    frame.assign(w=weights).iloc[900:].to_parquet(tmp_path / "weighted" / "b.parquet")
    frame.loc[frame.index.repeat(weights)].to_parquet(tmp_path / "repeated.parquet")
    try:
        data = spark.read.parquet(str(tmp_path / "parts"))
        on_spark = evaluate_spark(data, binning="adaptive", metrics=metrics)
        weighted = evaluate_spark(spark.read.parquet(str(tmp_path / "weighted")), weight_column="w")
    finally:
        spark.stop()
    repeated = evaluate(tmp_path / "repeated.parquet", engine="memory", metrics=list(weighted.metrics))
    assert weighted.stats.sum_weight == weights.sum() and weighted.weight_column == "w"
    for key, value in repeated.metrics.items():
        assert weighted.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-13), key

    memory = evaluate(tmp_path / "preds.parquet", engine="memory", binning="adaptive", metrics=metrics)
    assert on_spark.engine == "spark" and on_spark.n_samples == n and on_spark.n_passes == 2
    for key, value in memory.metrics.items():
        assert on_spark.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
