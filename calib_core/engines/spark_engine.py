"""The Spark engine: ``DataFrame.mapInArrow`` partitions -> per-partition statistics -> merge.

Each Spark partition streams its Arrow record batches through one mergeable
statistics object of :mod:`calib_core.engines.stats` on an executor and returns
it as a single pickled value; the driver merges the few objects (one per
partition) in a balanced tree. Only statistics leave the executors.

PySpark is imported only here (``pip install pyspark``, Java 17+). The
executors need ``calib_core`` importable (installed, or shipped with
``spark.sparkContext.addPyFile``).

Examples
--------
>>> from calib_core.engines.spark_engine import evaluate_spark  # doctest: +SKIP
>>> frame = spark.read.parquet("s3://bucket/predictions/")  # doctest: +SKIP
>>> evaluate_spark(frame).metrics["ece"]  # doctest: +SKIP
"""
from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from calib_core.engines.batches import ColumnPlan, add_batch
from calib_core.engines.evaluate import Evaluation
from calib_core.engines.streaming import STREAM_METRICS, stream_metrics, weighted_metric_keys
from calib_core.validation import CalibrationInputError, check_choice

__all__ = ["evaluate_spark", "spark_runner"]


def _partition_function(factory: Callable[[], Any], plan: Any, split: str | None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def per_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        stats = factory()
        for batch in batches:
            add_batch(stats, plan.columns_of_batch(batch, display="a Spark partition", split=split))
        yield pa.RecordBatch.from_pydict({"stats": [pickle.dumps(stats)]},
                                         schema=pa.schema([("stats", pa.binary())]))

    return per_partition


def spark_runner(frame: Any, plan: Any, *, split: str | None = None) -> Callable[[Callable[[], Any]], Any]:
    """``run_pass(factory)`` over the partitions of a Spark DataFrame (for :func:`~calib_core.engines.streaming.stream_metrics`)."""
    selected = frame.select(*plan.columns)

    def run_pass(factory: Callable[[], Any]) -> Any:
        rows = selected.mapInArrow(_partition_function(factory, plan, split), "stats binary").collect()
        parts = [pickle.loads(row["stats"]) for row in rows]
        if not parts:
            return factory()
        while len(parts) > 1:
            parts = [parts[i].merge(parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        return parts[0]

    return run_pass


def evaluate_spark(frame: Any, *, n_bins: int = 15, binning: str = "uniform", metrics: Sequence[str] | None = None,
                   exact: bool = True, threshold: float = 0.01, sweep_bins: Sequence[int] = (),
                   label_column: str | None = None, input_kind: str = "auto", split: str | None = None,
                   weight_column: str | None = None) -> Any:
    """Calibration metrics of a Spark DataFrame of predictions, computed on the executors.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        One row per prediction, with the columns :func:`calib_core.load_predictions`
        understands (a label column and one column per class).
    n_bins, binning, metrics, exact, threshold, sweep_bins, label_column, input_kind, split, weight_column
        As in :func:`calib_core.engines.evaluate.evaluate` (with ``weight_column``, as its stream engine:
        the uniform-bin metrics, weighted).

    Returns
    -------
    calib_core.engines.evaluate.Evaluation
        With ``engine == "spark"``.

    Raises
    ------
    CalibrationInputError
        No rows, columns the loader cannot interpret, invalid values.
    """
    input_kind = check_choice(input_kind, "input_kind", ("auto", "probabilities", "logits"))
    first = frame.limit(65536).toPandas()
    if first.shape[0] == 0:
        raise CalibrationInputError("the Spark DataFrame has no rows.")
    plan = ColumnPlan.detect(first, display="the Spark DataFrame", label_column=label_column, input_kind=input_kind,
                             weight_column=weight_column)
    notes: list[str] = []
    if plan.weight_column is not None:
        wanted, notes = weighted_metric_keys(metrics, "spark", plan.weight_column)
    else:
        wanted = list(STREAM_METRICS) if metrics is None else list(metrics)
    result = stream_metrics(spark_runner(frame, plan, split=split), plan.n_classes, n_bins=n_bins, binning=binning,
                            metrics=wanted, exact=exact, threshold=threshold, sweep_bins=tuple(sweep_bins),
                            weighted=plan.weight_column is not None)
    return Evaluation(metrics=result.metrics, n_samples=result.stats.n_rows, n_classes=plan.n_classes,
                      class_names=plan.class_names, input_kind=plan.input_kind, files=(), engine="spark",
                      n_bins=result.n_bins, binning=result.binning, split=split, exact=result.exact,
                      error_bounds=result.error_bounds, n_passes=result.n_passes, stats=result.stats,
                      adaptive=result.adaptive, warnings=plan.warnings + tuple(notes),
                      weight_column=plan.weight_column)

