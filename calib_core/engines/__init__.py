"""Evaluating files too large for memory: the streaming engine, plans and summaries, Dask and Spark, the CLI."""
from calib_core.engines.streaming import CalibrationStats, QuantileSketch, stream_metrics
from calib_core.engines.evaluate import CalibrationSummary, Evaluation, evaluate, load_summary

__all__ = ["CalibrationStats", "QuantileSketch", "stream_metrics", "CalibrationSummary", "Evaluation", "evaluate",
           "load_summary"]
