"""The Dask engine: ``dask.dataframe`` partitions -> per-partition statistics -> tree reduction.

Each partition of the table becomes one mergeable statistics object of
:mod:`calib_core.engines.stats` on a worker; the objects are merged pairwise in
a tree (``log2(partitions)`` levels), so only statistics -- never rows --
travel to the client. Point it at an existing cluster with a scheduler
address (``"tcp://scheduler:8786"``) or a ``distributed.Client``; without
one a :class:`distributed.LocalCluster` with two workers is started and
closed again.

Dask is imported only when this engine is used, so ``calib_core`` works
without it (``pip install "dask[dataframe]" distributed``).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from calib_core.engines.batches import add_batch
from calib_core.validation import CalibrationInputError

__all__ = ["dask_runner", "local_cluster", "partition_stats", "tree_reduce", "warm_up", "worker_environment"]


def _import_engine_modules() -> list[str]:
    """Import what a partition task needs (run on a worker); returns the module names."""
    import dask.dataframe  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import calib_core.engines.batches  # noqa: F401

    return ["calib_core", "dask.dataframe", "pyarrow.parquet"]


def warm_up(client: Any) -> dict[str, list[str]]:
    """Import calib_core and the Parquet reader on every worker of ``client`` ahead of the first evaluation.

    A fresh worker spends about a second importing them inside its first
    task; warming up moves that out of the first evaluation (and keeps the
    scheduler from learning misleading task durations from a small trial
    run). Returns, per worker address, the modules imported.
    """
    return client.run(_import_engine_modules)


def worker_environment() -> dict[str, Any]:
    """Dask's environment for new worker processes, without its ``MALLOC_TRIM_THRESHOLD_``.

    ``distributed`` starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``
    (config ``distributed.nanny.pre-spawn-environ``) so that freed memory
    goes back to the system at once. Setting it also turns off glibc's
    adaptive mmap threshold: every array over 128 KiB is then a fresh
    mapping whose pages fault in one by one. The per-block temporaries of
    the statistics are such arrays, and on a virtual machine where a page
    fault costs microseconds the workers ran the same statistics about 40 %
    slower than a plain process (2.14 s against 1.69 s for ten 1M-row
    partitions, measured for ``bench/bench_scale.py``). Workers started with
    this environment use glibc's defaults, as the streaming engine does.
    """
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return environ


def local_cluster(n_workers: int = 2, **options: Any) -> Any:
    """A :class:`distributed.LocalCluster` of single-threaded worker processes for the statistics.

    Parameters
    ----------
    n_workers : int, default 2
    **options
        Passed on to :class:`distributed.LocalCluster` (defaults:
        ``threads_per_worker=1``, ``dashboard_address=":0"``: any free port, so a second cluster does not
        collide with one on the default 8787).

    Notes
    -----
    The workers get :func:`worker_environment`. To give the workers of an
    existing cluster the same, start them under
    ``dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment()})``
    or unset ``MALLOC_TRIM_THRESHOLD_`` in that config (see ``docs/scale.md``).
    """
    import dask

    _, _, distributed = _import_dask()
    settings = {"threads_per_worker": 1, "dashboard_address": ":0", **options}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment()}):
        return distributed.LocalCluster(n_workers=n_workers, **settings)


def _import_dask():
    try:
        import dask
        import dask.dataframe as dd
        import distributed
    except ImportError as exc:  # pragma: no cover - exercised only without dask
        raise CalibrationInputError(
            'the Dask engine needs dask and distributed: pip install "dask[dataframe]" distributed '
            f"({exc})."
        ) from exc
    return dask, dd, distributed


def partition_stats(frame: Any, factory: Callable[[], Any], plan: Any, split: str | None, display: str,
                    first_row: int = 0) -> Any:
    """Statistics of one partition (a pandas DataFrame), added block by block as the streaming engine does.

    ``display`` and ``first_row`` (the partition's first row in its file,
    0-based) name the place of a bad row in error messages.
    """
    stats = factory()
    add_batch(stats, plan.columns_of_frame(frame, first_row=first_row, display=display, split=split))
    return stats


def _stats_frame(frame: Any, factory: Callable[[], Any], plan: Any, split: str | None,
                 places: list[tuple[str, int]] | None, partition_info: dict[str, Any] | None = None) -> Any:
    """One-row frame holding the statistics of a partition (so reading and adding fuse into one task).

    ``places[i]`` is the file and first row of partition i, when known; Dask
    passes the partition's number in ``partition_info``.
    """
    import pandas as pd

    display, first_row = "a partition of the table", 0
    if places is not None and partition_info is not None and partition_info.get("number") is not None:
        display, first_row = places[partition_info["number"]]
    stats = partition_stats(frame, factory, plan, split, display, first_row)
    return pd.DataFrame({"stats": pd.Series([stats], dtype=object)})


def _partition_places(files: list[Any], n_partitions: int) -> list[tuple[str, int]] | None:
    """File and first row of each partition of Parquet files read one partition per row group; else None."""
    import pyarrow.parquet as pq

    from calib_core.io.formats import format_of

    if any(format_of(path) != "parquet" for path in files):
        return None
    places = []
    for path in files:
        metadata = pq.ParquetFile(path).metadata
        row = 0
        for group in range(metadata.num_row_groups):
            places.append((f"file {path.name!r}", row))
            row += metadata.row_group(group).num_rows
    return places if len(places) == n_partitions else None


def _unpack(frame: Any) -> Any:
    return frame["stats"].iloc[0]


def _merge(left: Any, right: Any) -> Any:
    return left.merge(right)


def tree_reduce(parts: list[Any], merge: Callable[[Any, Any], Any] = _merge) -> Any:
    """Merge delayed statistics pairwise, level by level (a balanced binary tree)."""
    import dask

    if not parts:
        raise CalibrationInputError("the table has no partitions.")
    combine = dask.delayed(merge, pure=True)
    while len(parts) > 1:
        merged = [combine(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            merged.append(parts[-1])
        parts = merged
    return parts[0]


def _read_frame(source: Any, dd: Any) -> Any:
    """The table as a dask DataFrame with the planned columns."""
    from calib_core.io.formats import format_of, sniff_csv_file

    files = [str(p) for p in source.files]
    formats = {format_of(p) for p in source.files}
    columns = source.plan.columns
    if formats == {"parquet"}:
        # One partition per row group: tasks as large as the file's row groups, and work for every worker.
        # split_blocks: one pandas block per column, so the conversion from Arrow copies nothing.
        return dd.read_parquet(files, columns=columns, split_row_groups=True,
                               arrow_to_pandas={"split_blocks": True})
    if formats == {"csv"}:
        dialect = sniff_csv_file(source.files[0])
        blocksize = max(1 << 20, source.batch_rows * 12 * (len(columns) + 1))
        compression = "gzip" if str(files[0]).endswith(".gz") else None
        return dd.read_csv(files, sep=dialect.delimiter, decimal=dialect.decimal, usecols=columns,
                           blocksize=None if compression else blocksize, compression=compression,
                           skipinitialspace=True)
    raise CalibrationInputError("the Dask engine reads CSV or Parquet tables, not a mix of formats.")


@contextlib.contextmanager
def dask_runner(source: Any, *, scheduler: Any = None, progress: Any = None,
                n_workers: int = 2) -> Iterator[Callable[[Callable[[], Any]], Any]]:
    """``run_pass(factory)`` over the partitions of ``source`` on a Dask cluster.

    Parameters
    ----------
    source : calib_core.engines.batches._Source
        Resolved files and their column plan.
    scheduler : str, distributed.Client, distributed.LocalCluster or None
        An address such as ``"tcp://10.0.0.5:8786"``, a connected client, a
        cluster object, or None for a new local cluster of ``n_workers``
        single-threaded worker processes (:func:`local_cluster`, closed on exit).
    progress : callable, optional
        Called as ``progress(rows, rows, pass_number)`` after each pass.
    """
    dask, dd, distributed = _import_dask()
    if source.plan is None:
        raise CalibrationInputError("the Dask engine reads CSV or Parquet tables; load NPZ/NPY files in memory.")
    owned: list[Any] = []
    try:
        if isinstance(scheduler, distributed.Client):
            client = scheduler
        elif scheduler is None:
            cluster = local_cluster(n_workers)
            owned.append(cluster)
            client = distributed.Client(cluster)
            owned.insert(0, client)
        else:
            try:
                client = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise CalibrationInputError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}.") from exc
            owned.append(client)
        counter = {"pass": 0}

        def run_pass(factory: Callable[[], Any]) -> Any:
            counter["pass"] += 1
            import pandas as pd

            frame = _read_frame(source, dd)
            places = _partition_places(source.files, frame.npartitions)
            meta = pd.DataFrame({"stats": pd.Series([], dtype=object)})
            # map_partitions fuses with the reader: each task reads its rows and returns only statistics.
            stats_frames = frame.map_partitions(_stats_frame, factory, source.plan, source.split, places, meta=meta)
            unpack = dask.delayed(_unpack, pure=True)
            parts = [unpack(part) for part in stats_frames.to_delayed()]
            try:
                result = client.compute(tree_reduce(parts)).result()
            except CalibrationInputError:
                raise
            except (OSError, ValueError) as exc:
                raise CalibrationInputError(f"reading the table with Dask failed: {' '.join(str(exc).split())[:300]}.") from exc
            if progress is not None:
                progress(result.n_rows, result.n_rows, counter["pass"])
            return result

        yield run_pass
    finally:
        for resource in owned:
            resource.close()
