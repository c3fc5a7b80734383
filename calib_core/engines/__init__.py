"""Evaluating files too large for memory: the streaming engine, plans and summaries, Dask and Spark, the CLI.

====================  ==================================================================
module                what lives there
====================  ==================================================================
``sketch``            the mergeable quantile sketch (``QuantileSketch``)
``weighted``          row weights in the sums: the per-batch weight check, one block's weighted sums
``stats``             one pass, exact: ``CalibrationStats`` (uniform-bin and scalar sums)
``grouped``           ``GroupedStats``: one ``CalibrationStats`` per group value
``streaming``         the passes over any engine: ``stream_metrics``, exact adaptive bins, KS
``batches``           files, column plans, record batches, the split filter, ``engine="auto"``
``dask_engine``       Dask partitions -> statistics -> tree reduction
``group_evaluation``  per-group results (``GroupEvaluation``)
``summary``           reading a summary back (``CalibrationSummary``, ``load_summary``)
``evaluate``          the entry point ``evaluate`` and its ``Evaluation``
``spark_engine``      Spark partitions (``mapInArrow``) -> statistics -> merge
``cli``               the command line ``calib-core``
====================  ==================================================================

A module imports only modules above it in this table (no import loop).
"""
from calib_core.engines.sketch import QuantileSketch
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.streaming import WEIGHTED_STREAM_METRICS, stream_metrics
from calib_core.engines.summary import CalibrationSummary, load_summary
from calib_core.engines.evaluate import Evaluation, evaluate

__all__ = ["CalibrationStats", "QuantileSketch", "stream_metrics", "CalibrationSummary", "Evaluation", "evaluate",
           "load_summary", "WEIGHTED_STREAM_METRICS"]
