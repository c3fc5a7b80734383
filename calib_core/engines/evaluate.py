"""Evaluate prediction tables larger than memory: CSV or Parquet files, folders or globs.

:func:`evaluate` reads a table in record batches with pyarrow, feeds them
to the mergeable statistics of :mod:`calib_core.engines.streaming` and returns the
same numbers the in-memory metrics give (to float64 round-off). Memory is
bounded by the batch size, not by the table. Three engines:

* ``"memory"``: read everything, then call the in-memory metrics (the
  reference);
* ``"stream"``: one Python process, batch after batch;
* ``"dask"``: ``dask.dataframe`` partitions on a ``dask.distributed``
  cluster (see :mod:`calib_core.engines.dask_engine`).

The columns are found once, on the first batch, with the rules of
:func:`calib_core.load_predictions` (label column by its name, class
columns by a shared prefix such as ``p_``, ``prob_`` or ``logit_``, logits
turned into probabilities with a softmax), and every later batch and file
is read with the same columns, classes and input kind.

The reading (files, column plans, batches, the split filter and the
``engine="auto"`` rule) is :mod:`calib_core.engines.batches`; per-group
results are :mod:`calib_core.engines.group_evaluation`; reading a summary
back is :mod:`calib_core.engines.summary`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calib_core.binning import bin_statistics
from calib_core.engines.batches import (DEFAULT_BATCH_BYTES, DEFAULT_BATCH_ROWS, ENGINES, Progress, SourceLike, _Source,
                                        _open_source, _total_rows, add_batch, auto_engine)
from calib_core.engines.dask_engine import dask_runner
from calib_core.engines.group_evaluation import GroupEvaluation, _group_evaluation
from calib_core.engines.grouped import MAX_STREAM_GROUPS, GroupedStats
from calib_core.engines.sketch import DEFAULT_SKETCH_CAPACITY
from calib_core.engines.stats import CalibrationStats
from calib_core.engines.streaming import (STREAM_METRICS, StreamResult, _pad_binstats, _stack_binstats, stream_metrics,
                                          weighted_metric_keys)
from calib_core.engines.summary import _SUMMARY_FORMAT
from calib_core.io.loading import load_predictions
from calib_core.metrics.binned import top_label
from calib_core.metrics.reports import compute_metrics
from calib_core.validation import CalibrationInputError, check_choice, check_probs_labels, check_sample_weight

__all__ = [
    "Evaluation",
    "SUMMARY_SWEEP_BINS",
    "evaluate",
    "evaluate_arrays",
]

#: Uniform bin counts whose sums ``calib-core report --json`` keeps for the sensitivity view.
SUMMARY_SWEEP_BINS = (5, 10, 15, 20, 25, 30, 40, 50)


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Evaluation:
    """Metrics of a table evaluated by :func:`evaluate`, with the statistics behind them.

    Attributes
    ----------
    metrics : dict of str to float
    n_samples, n_classes : int
    class_names : tuple of str
    input_kind : str
    files : tuple of str
    engine : str
    n_bins : int
    binning : str
    split : str or None
    exact : bool
    error_bounds : dict of str to float
    n_passes : int
    stats : CalibrationStats
        Uniform-bin sums of every class and the scalar sums (no rows).
    adaptive : dict
        Adaptive-bin sums (see :class:`calib_core.engines.streaming.StreamResult`).
    warnings : tuple of str
    groups : GroupEvaluation or None
        Per-group results with ``evaluate(..., group_column=COL)``.
    weight_column : str or None
        The column of row weights (``evaluate(..., weight_column=COL)``):
        the metrics and every sum of :attr:`stats` are weighted, and
        ``stats.sum_weight`` is the summed weight (``n_samples`` counts rows).
    """

    metrics: dict[str, float]
    n_samples: int
    n_classes: int
    class_names: tuple[str, ...]
    input_kind: str
    files: tuple[str, ...]
    engine: str
    n_bins: int
    binning: str
    split: str | None
    exact: bool
    error_bounds: dict[str, float]
    n_passes: int
    stats: CalibrationStats
    adaptive: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    groups: "GroupEvaluation | None" = None
    weight_column: str | None = None

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (statistics, not rows); :func:`calib_core.load_summary` reads it back."""
        result = StreamResult(self.metrics, self.stats, self.adaptive, self.exact, self.error_bounds,
                              self.n_passes, self.n_bins, self.binning, self.stats.threshold)
        summary = result.summary()
        summary.update({"format": _SUMMARY_FORMAT, "files": list(self.files), "engine": self.engine,
                        "n_samples": self.n_samples, "n_classes": self.n_classes,
                        "class_names": list(self.class_names), "input_kind": self.input_kind,
                        "split": self.split, "warnings": list(self.warnings)})
        if self.groups is not None:
            summary["groups"] = self.groups.to_dict()
        if self.stats.weighted:
            # Absent from unweighted summaries (and from those written before weights): every weight 1.
            summary.update({"weight_column": self.weight_column, "sum_weight": self.stats.sum_weight})
        return summary


def _stream_runner(source: _Source, progress: Progress | None, total: int | None) -> Callable[[Callable[[], Any]], Any]:
    counter = {"pass": 0}

    def run_pass(factory: Callable[[], Any]) -> Any:
        counter["pass"] += 1
        stats = factory()
        done = 0
        # The read-ahead thread decodes the next record batch while this one is added.
        for batch in source.batches():
            add_batch(stats, batch)
            done += batch.n_rows
            if progress is not None:
                progress(done, total, counter["pass"])
        return stats

    return run_pass


def evaluate(source: SourceLike, *, engine: str = "stream", batch_rows: int | None = DEFAULT_BATCH_ROWS,
             scheduler: Any = None, n_bins: int = 15, binning: str = "uniform",
             metrics: Sequence[str] | None = None, exact: bool = True, threshold: float = 0.01,
             sweep_bins: Sequence[int] = (), label_column: str | None = None, input_kind: str = "auto",
             split: str | None = None, progress: Progress | None = None,
             sketch_capacity: int = DEFAULT_SKETCH_CAPACITY, group_column: str | None = None,
             max_groups: int = 50, max_distinct_groups: int = MAX_STREAM_GROUPS,
             weight_column: str | None = None) -> Evaluation:
    """Calibration metrics of a CSV/Parquet table, folder or glob, without loading it whole.

    Parameters
    ----------
    source : path, glob pattern or list of them
        A CSV/TSV (optionally ``.gz``) or Parquet file, a folder of them, a
        pattern such as ``"preds/part-*.parquet"``, or one NPZ/NPY file.
    engine : {"stream", "memory", "dask", "auto"}, default "stream"
        ``"auto"``: :func:`~calib_core.engines.batches.auto_engine`, the rule of
        ``calib-core report`` too (``"stream"`` for several files or CSV/Parquet
        tables over :data:`~calib_core.engines.batches.MEMORY_ENGINE_MAX_BYTES`).
    batch_rows : int or None, default None
        Rows per record batch (stream) or per partition of CSV input (Dask);
        None gives batches of about :data:`DEFAULT_BATCH_BYTES` (64 MiB) of
        class values. Memory is about two batches plus one Parquet row
        group (as the file was written), whatever the number of rows.
    scheduler : str, distributed.Client or None
        Dask only: a scheduler address (``"tcp://host:8786"``), a client, or
        None for a local cluster with two workers.
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Bins of ECE, RMSCE, MCE and class-wise ECE.
    metrics : sequence of str, optional
        Subset of :data:`calib_core.engines.streaming.STREAM_METRICS`; default all.
    exact : bool, default True
        False computes adaptive bins and KS from one-pass sketches (see
        :func:`calib_core.engines.streaming.stream_metrics`).
    threshold : float, default 0.01
        TACE threshold.
    sweep_bins : sequence of int
        Extra uniform bin counts whose sums go into the summary.
    label_column, input_kind
        As in :func:`calib_core.load_predictions`.
    split : str, optional
        Evaluate only the rows whose ``split`` column has this value.
    progress : callable, optional
        ``progress(rows_done, rows_total_or_None, pass_number)`` after each batch.
    sketch_capacity : int
        Capacity of the quantile sketches (adaptive bins and KS).
    group_column : str, optional
        Also compute the metrics per value of this column
        (:attr:`Evaluation.groups`, a :class:`GroupEvaluation`): every engine
        keeps one mergeable :class:`~calib_core.engines.stats.CalibrationStats`
        per group value (:class:`~calib_core.engines.grouped.GroupedStats`), in the
        same pass as the overall sums. Exact in every engine (equal to
        :func:`calib_core.by_group` on the rows to round-off): accuracy,
        Brier, NLL, SCE, and with uniform bins ECE, RMSCE, MCE, class-wise
        ECE and :meth:`GroupEvaluation.multicalibration`. ACE, TACE, KS and
        adaptive bins per group need every group's exact order statistics:
        the memory engine computes them, the stream and Dask engines report
        them in :attr:`GroupEvaluation.unavailable` with the reason.
    max_groups : int, default 50
        More groups: the ``max_groups - 1`` largest and "other" (chosen at
        the end from the exact counts, as :func:`calib_core.by_group` does).
    max_distinct_groups : int, default :data:`calib_core.engines.grouped.MAX_STREAM_GROUPS`
        Stream and Dask: distinct group values kept while reading; more
        raise :class:`CalibrationInputError`.
    weight_column : str, optional
        Column (CSV or Parquet) of row weights, read as
        ``load_predictions(weight_column=)`` reads it (finite numbers
        ``>= 0``, not all 0; never guessed). Every per-bin count and sum
        becomes a weighted sum, so the metrics equal the in-memory metrics
        with ``sample_weight`` (integer weights: the repeated rows) to
        round-off. The memory engine computes every metric; the stream and
        Dask engines :data:`~calib_core.engines.streaming.WEIGHTED_STREAM_METRICS`
        with uniform bins (the default set with weights, a note says so;
        asking for ACE, TACE, KS or adaptive bins raises
        :class:`CalibrationInputError`: the quantile sketch takes no
        weights). With ``group_column`` every group's sums are weighted too
        (rows of weight 0 in no group), so each group's value, ``n`` (its
        summed weight) and the worst group equal
        :func:`calib_core.by_group` with ``sample_weight=`` to round-off.

    Returns
    -------
    Evaluation

    Raises
    ------
    CalibrationInputError
        Bad paths, files with different columns, damaged Parquet, bad values
        (the message names the file and the row).

    Examples
    --------
    >>> result = evaluate("predictions/", engine="stream", batch_rows=100_000)  # doctest: +SKIP
    >>> result.metrics["ece"]  # doctest: +SKIP
    """
    engine = check_choice(engine, "engine", ENGINES + ("auto",))
    if batch_rows is not None and (isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer))
                                   or batch_rows < 1):
        raise CalibrationInputError(f"`batch_rows` must be a whole number >= 1 or None, got {batch_rows!r}.")
    input_kind = check_choice(input_kind, "input_kind", ("auto", "probabilities", "logits"))
    opened = _open_source(source, batch_rows=int(batch_rows or 65536), label_column=label_column,
                          input_kind=input_kind, split=split, group_column=group_column, weight_column=weight_column)
    if batch_rows is None:
        opened.batch_rows = max(1024, DEFAULT_BATCH_BYTES // (8 * max(opened.n_classes, 1)))
    if engine == "auto":
        engine = auto_engine(opened.files)
    streamed_weights = weight_column is not None and engine != "memory"
    weight_notes: list[str] = []
    if streamed_weights:
        assert opened.plan is not None and opened.plan.weight_column is not None
        wanted, weight_notes = weighted_metric_keys(metrics, engine, opened.plan.weight_column)
    else:
        wanted = list(STREAM_METRICS) if metrics is None else list(dict.fromkeys(metrics))
    for key in wanted:
        check_choice(key, "metrics", STREAM_METRICS)
    n_classes = opened.n_classes
    total = _total_rows(opened.files) if split is None else None
    options = dict(n_bins=n_bins, binning=binning, metrics=wanted, exact=exact, threshold=threshold,
                   sweep_bins=tuple(sweep_bins), sketch_capacity=sketch_capacity)
    if streamed_weights:
        options["weighted"] = True
    grouped: list[GroupedStats] = []
    if group_column is not None and not (isinstance(max_groups, (int, np.integer)) and max_groups >= 2):
        raise CalibrationInputError(f"`max_groups` must be a whole number >= 2, got {max_groups!r}.")
    group_rows: dict[str, Any] = {}
    if engine == "memory":
        result = _memory_result(opened, wanted, n_classes, options, group_rows)
    elif engine == "stream":
        run_pass = _stream_runner(opened, progress, total)
        if group_column is not None:
            run_pass = _grouped_runner(run_pass, grouped, max_distinct_groups)
        result = stream_metrics(run_pass, n_classes, **options)
    else:

        with dask_runner(opened, scheduler=scheduler, progress=progress) as run_pass:
            if group_column is not None:
                run_pass = _grouped_runner(run_pass, grouped, max_distinct_groups)
            result = stream_metrics(run_pass, n_classes, **options)
    groups = None
    if group_column is not None:
        assert opened.plan is not None and opened.plan.group_column is not None
        groups = _group_evaluation(opened.plan.group_column, result, wanted, engine, grouped[0] if grouped else None,
                                   group_rows, int(max_groups), int(max_distinct_groups))
    plan = opened.plan
    if plan is not None:
        class_names, kind, notes = plan.class_names, plan.input_kind, plan.warnings
    else:
        predictions = load_predictions(opened.files[0], label_column=label_column, input_kind=input_kind,
                                       max_bytes=None, max_rows=None, max_cells=None)
        class_names, kind, notes = predictions.class_names, predictions.input_kind, predictions.warnings
    return Evaluation(metrics=result.metrics, n_samples=result.stats.n_rows, n_classes=n_classes,
                      class_names=tuple(class_names), input_kind=kind, files=tuple(str(p) for p in opened.files),
                      engine=engine, n_bins=result.n_bins, binning=result.binning, split=split,
                      exact=result.exact, error_bounds=result.error_bounds, n_passes=result.n_passes,
                      stats=result.stats, adaptive=result.adaptive, warnings=tuple(notes) + tuple(weight_notes),
                      groups=groups, weight_column=None if plan is None else plan.weight_column)


def _grouped_stats(factory: Callable[[], Any], max_distinct: int) -> GroupedStats:
    return GroupedStats(factory(), max_distinct=max_distinct)


def _grouped_runner(run_pass: Callable[[Callable[[], Any]], Any], holder: list,
                    max_distinct: int) -> Callable[[Callable[[], Any]], Any]:
    """``run_pass`` whose first pass also keeps the per-group sums (in ``holder``); later passes unchanged."""
    def run(factory: Callable[[], Any]) -> Any:
        if holder:
            return run_pass(factory)
        grouped = run_pass(partial(_grouped_stats, factory, max_distinct))
        holder.append(grouped)
        return grouped.overall

    return run


def _memory_result(source: _Source, wanted: list[str], n_classes: int, options: dict[str, Any],
                   group_rows: dict[str, Any] | None = None) -> StreamResult:
    """Read every batch, concatenate, and compute with the in-memory metrics (the reference).

    With a group column, ``group_rows`` receives ``probs``, ``labels`` and ``groups`` (the rows).
    """
    batches = [batch.check() for batch in source.batches() if batch.n_rows]
    blocks = [batch.block(0, batch.n_rows) for batch in batches]
    if not blocks:
        raise CalibrationInputError("no rows to evaluate" + (f" with split {source.split!r}." if source.split else "."))
    probs = np.concatenate([values.T for values, _ in blocks])
    labels = np.concatenate([labels for _, labels in blocks])
    weights = None
    if source.plan is not None and source.plan.weight_column is not None:
        weights = check_sample_weight(np.concatenate([b.weights for b in batches]), labels.size,
                                      name=f"weight column {source.plan.weight_column!r}")
    if group_rows is not None and source.plan is not None and source.plan.group_column is not None:
        group_rows.update(probs=probs, labels=labels, groups=np.concatenate([b.groups for b in batches]),
                          weights=weights)
    return _arrays_result(probs, labels, wanted, options, weights)


def _arrays_result(probs: NDArray[np.float64], labels: NDArray[np.intp], wanted: list[str],
                   options: dict[str, Any], sample_weight: NDArray[np.float64] | None = None) -> StreamResult:

    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    n_classes = probs.shape[1]
    n_bins, threshold = options["n_bins"], options["threshold"]
    values = compute_metrics(probs, labels, n_bins=n_bins, binning=options["binning"], keys=wanted,
                             sample_weight=weights)
    # The summary statistics of the same rows, for the JSON output.
    stats = CalibrationStats(n_classes, n_bins=n_bins, sweep_bins=options["sweep_bins"], threshold=threshold,
                             weighted=weights is not None)
    stats.update(probs, labels, sample_weight=weights)
    if weights is not None:  # rows of weight 0 are absent (as in bin_statistics)
        probs, labels, weights = probs[weights > 0], labels[weights > 0], weights[weights > 0]
    confidence, correct = top_label(probs, labels)

    def per_class(keep: NDArray[np.bool_] | None) -> Any:
        # One bin_statistics call per class column (the same per-class sums as the streaming passes).
        parts = []
        for k in range(n_classes):
            rows = slice(None) if keep is None else keep[:, k]
            kept = None if weights is None else weights[rows]
            stats = bin_statistics(probs[rows, k], labels[rows] == k, n_bins, "adaptive",
                                   sample_weight=kept if kept is not None and kept.size else None)

            parts.append(_pad_binstats(stats, n_bins))
        return _stack_binstats(parts)


    adaptive = {"top_label": bin_statistics(confidence, correct, n_bins, "adaptive", sample_weight=weights),
                "classwise": per_class(None), "classwise_above": per_class(probs > threshold)}
    return StreamResult({key: values[key] for key in wanted}, stats, adaptive, True, {}, 1, n_bins,
                        options["binning"], threshold)


def evaluate_arrays(probs: Any, labels: Any, *, n_bins: int = 15, binning: str = "uniform",
                    metrics: Sequence[str] | None = None, threshold: float = 0.01,
                    sweep_bins: Sequence[int] = SUMMARY_SWEEP_BINS, class_names: Sequence[str] | None = None,
                    input_kind: str = "probabilities", files: Sequence[str] = (), split: str | None = None,
                    warnings: Sequence[str] = (), sample_weight: Any = None,
                    weight_column: str | None = None) -> Evaluation:
    """:class:`Evaluation` (metrics and summary statistics) of predictions already in memory.

    The metrics are those of the in-memory functions; the statistics let
    :func:`load_summary` draw the diagrams of these predictions later.
    ``sample_weight`` (shape ``(N,)``) weighs the metrics and every sum, as
    :func:`evaluate` with ``weight_column`` does (``weight_column`` names it).
    """
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    wanted = list(STREAM_METRICS) if metrics is None else [check_choice(m, "metrics", STREAM_METRICS) for m in metrics]
    options = dict(n_bins=n_bins, binning=binning, threshold=threshold, sweep_bins=tuple(sweep_bins))
    result = _arrays_result(probs, labels, wanted, options, weights)
    names = tuple(str(c) for c in class_names) if class_names is not None else tuple(str(k) for k in range(probs.shape[1]))
    return Evaluation(metrics=result.metrics, n_samples=probs.shape[0], n_classes=probs.shape[1], class_names=names,
                      input_kind=input_kind, files=tuple(files), engine="memory", n_bins=result.n_bins,
                      binning=result.binning, split=split, exact=True, error_bounds={}, n_passes=1,
                      stats=result.stats, adaptive=result.adaptive, warnings=tuple(warnings),
                      weight_column=None if weights is None else str(weight_column or "weight"))

