"""The Metrics page's table: point estimates at once, intervals filled in one metric at a time.

:func:`studio.compute.estimates_table` gives every metric's estimate (one
``metric_report`` per model, fast); the page draws that table straight away
with the interval cells marked as pending. :func:`fill_intervals`, called at
the end of the page (so every other section is drawn first), then computes
the intervals one (model, metric) at a time by the cached
:func:`studio.compute.metric_interval` (the same call with the same seed and
resamples as before, so the same numbers), redrawing the table after each,
with a progress bar and a *Stop* button.

Stop and resume
    *Stop* reruns the page with a stop flag (:data:`STOP_KEY`) holding the
    settings it was pressed at: the intervals finished so far are kept (this
    session remembers them under :data:`DONE_KEY`), the others show
    :data:`STOPPED`, and *Compute the remaining intervals* clears the flag. A
    change of the settings (bins, binning, resamples, level, seed, models)
    clears it too; any rerun reuses the intervals already computed and
    computes only the missing ones.

CSV download
    The button appears once every interval is computed, or after a stop; in
    the meantime a caption stands in its place. After a stop the CSV holds
    the finished intervals, and each unfinished row has empty interval
    columns and :data:`STOPPED` in its ``interval`` column.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from studio import compute, progressive

#: Session-state key of the stop flag: the settings tuple the run was stopped at (or ``True``: the current ones).
STOP_KEY = "metric_intervals_stopped"
#: Session-state key of the intervals this session has computed: ``{IntervalJob.cache_key: MetricInterval}``.
DONE_KEY = "metric_intervals_done"
#: At most this many remembered intervals per session (the dict is cleared beyond it; the cache stays).
MAX_REMEMBERED = 4096
#: ``interval`` text of a row whose interval is being computed.
COMPUTING = "pending: being computed"
#: ``interval`` text of a row whose interval was not computed because the run was stopped.
STOPPED = "stopped: press “Compute the remaining intervals”"


#: The page's stop flag and the intervals this session has computed (:mod:`studio.progressive`).
STOP = progressive.StopFlag(STOP_KEY)
DONE = progressive.Memory(DONE_KEY, MAX_REMEMBERED)
run_key = progressive.run_key
is_stopped = STOP.is_stopped


def fill_known(table: pd.DataFrame, jobs: list[compute.IntervalJob]) -> list[compute.IntervalJob]:
    """Fill the intervals this session has already computed into ``table``; return the jobs still to do."""
    left = []
    for job in jobs:
        found = DONE.get(job.cache_key)
        if found is None:
            left.append(job)
        else:
            compute.fill_interval(table, job, found)
    return left


def marked(table: pd.DataFrame, text: str) -> pd.DataFrame:
    """``table`` with the ``interval`` of each pending row replaced by ``text``."""
    return table.assign(interval=table["interval"].replace(compute.PENDING, text))


def show_table(slot: Any, table: pd.DataFrame, level: float) -> None:
    """The "Estimates and intervals" table, drawn into ``slot`` (an ``st.empty``)."""
    shown = table[["model", "metric", "key", "name", "estimate", "unreliable", "ci_low", "ci_high", "std", "interval",
                   "n_bins", "binning", "rows", "reason"]]
    slot.dataframe(
        shown, hide_index=True, width="stretch", height=min(36 * (len(shown) + 1) + 3, 720),
        placeholder="–",  # a missing interval or value, not "None"
        column_order=["model", "name", "estimate", "unreliable", "ci_low", "ci_high", "std", "interval", "rows",
                      "reason"],
        column_config={
            "model": st.column_config.TextColumn("Model"),
            "name": st.column_config.TextColumn("Metric (settings)", width="large"),
            "estimate": st.column_config.NumberColumn("Estimate", format="%.4f"),
            "unreliable": st.column_config.TextColumn(
                "Within its bounds?", width="medium",
                help="Empty: the estimate is within every bound its true quantity obeys (calib_core's registry). "
                     "Otherwise why it is unreliable at this N and K, and what would make it reliable."),
            "ci_low": st.column_config.NumberColumn(f"{level:.0%} low", format="%.4f"),
            "ci_high": st.column_config.NumberColumn(f"{level:.0%} high", format="%.4f"),
            "std": st.column_config.NumberColumn("Std. error", format="%.4f",
                                                 help="Bootstrap or variance-formula standard error."),
            "interval": st.column_config.TextColumn("Interval", width="medium",
                                                    help="How the interval was made for this metric."),
            "rows": st.column_config.TextColumn("Rows"),
            "reason": st.column_config.TextColumn("Not available because", width="medium"),
        },
    )


#: Appended to an overview value that breaks a bound of its true quantity (:func:`overview`).
UNRELIABLE_MARK = " ⚠ unreliable"


def overview(table: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """One row per metric (its name with settings), one column per model: the estimate as text, 4 decimals,
    with :data:`UNRELIABLE_MARK` when it breaks a bound (calib_core's ``check_bounds``), empty when not available."""
    text = table.assign(shown=[
        "" if pd.isna(value) else f"{value:.4f}" + (UNRELIABLE_MARK if mark else "")
        for value, mark in zip(table["estimate"], table["unreliable"])])
    wide = text.pivot(index="name", columns="model", values="shown").reindex(
        index=[n for n in names if n in set(table["name"])], columns=list(dict.fromkeys(table["model"])))
    wide.index.name = "Metric (settings)"
    return wide


def fill_intervals(table: pd.DataFrame, jobs: list[compute.IntervalJob], *, key: tuple, level: float,
                   table_slot: Any, status_slot: Any, finish: Callable[[pd.DataFrame, bool], None]) -> pd.DataFrame:
    """Compute the intervals of ``jobs`` one at a time into ``table``, redrawing it in ``table_slot``.

    ``status_slot`` shows the progress bar and the *Stop* button while the
    intervals are computed, and after a stop how many are missing with the
    button that resumes. ``finish(table, stopped)`` is called at the end
    (the CSV download and the chart). Returns the table (complete unless
    the run was stopped; then pending rows say :data:`STOPPED`).
    """
    if is_stopped(key):
        if jobs:
            with status_slot.container():
                st.info(f"Stopped: {len(jobs)} interval(s) are not computed yet; the estimates and every "
                        "finished interval are shown.", icon=":material/pause_circle:")
                st.button("Compute the remaining intervals", key="metric_intervals_resume", on_click=STOP.resume,
                          icon=":material/play_arrow:")
        table = marked(table, STOPPED)
        show_table(table_slot, table, level)
        finish(table, True)
        return table
    if jobs:
        with status_slot.container():
            bar = st.progress(0.0, text=f"Computing the intervals (0 of {len(jobs)})")
            st.button("Stop", key="metric_intervals_stop", on_click=STOP.stop, args=(key,), icon=":material/stop:",
                      help="Keep the estimates and the intervals computed so far; the rest can be computed later.")
        for done, job in enumerate(jobs, start=1):
            found = job.compute()
            DONE.put(job.cache_key, found)
            compute.fill_interval(table, job, found)
            bar.progress(done / len(jobs), text=f"Computing the intervals ({done} of {len(jobs)})")
            show_table(table_slot, marked(table, COMPUTING), level)
        status_slot.empty()
    show_table(table_slot, table, level)
    finish(table, False)
    return table
