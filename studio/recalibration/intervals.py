"""Each model's paired bootstrap intervals, filled in once every estimate and chart of the page is drawn.

The fits give every number of the tables, the verdict and the charts; the
intervals (200 paired resamples of the "before" predictions and of each
method's, :func:`calib_core.recalibration.compare.intervals`) take longer
than all of that at 100,000 rows. So the page draws everything with the
intervals pending, then :func:`fill` computes them one model at a time
(a progress bar per prediction set, a *Stop* button), and each model's
verdict and, for the model shown in detail, its table are redrawn as they
come. The verdict's choice of method reads the point estimates only; the
intervals add whether the Brier change is beyond bootstrap noise, and
whether the recommended method beats the runner-up beyond it (the paired
interval of their Brier difference, on the same cached resamples).

Stop and resume work as on the Metrics page (:mod:`studio.progressive`):
the intervals finished in this session are remembered, so a rerun shows
them at once.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import streamlit as st

from calib_core.recalibration import compare
from calib_core.recalibration.recommendation import PairedDifference
from studio import compute_recalibration as cr
from studio import progressive
from studio.recalibration.fitting import ALPHA, ModelResult
from studio.text import literal

#: The Recalibration page's stop flag and its finished intervals (one table per model and settings).
STOP = progressive.StopFlag("recal_intervals_stopped")
DONE = progressive.Memory("recal_intervals_done", limit=256)


def _memory_key(result: ModelResult, n_boot: int, seed: int) -> tuple:
    """What one model's interval table depends on: its arrays (fits are cached by the same key), resamples, seed."""
    return (*result.key_base, tuple(result.ok_methods), int(n_boot), int(seed), ALPHA)


def with_intervals(result: ModelResult, found: tuple[pd.DataFrame, tuple[PairedDifference, ...]]) -> ModelResult:
    """``result`` with its table's interval columns and every candidate's margin against the best one:
    ``found`` = (intervals, pairs)."""
    interval_table, pairs = found
    table = compare.results_table(result.ev, result.fits, interval_table)
    return dataclasses.replace(result, table=table, intervals="done", pairs=pairs)


def known(results: Mapping[str, ModelResult], *, n_boot: int, seed: int, stopped: bool) -> dict[str, ModelResult]:
    """The results with the intervals this session already has; the others stay pending, or stopped."""
    out = {}
    for name, result in results.items():
        if result.intervals == "pending":
            found = DONE.get(_memory_key(result, n_boot, seed))
            if found is not None:
                result = with_intervals(result, found)
            elif stopped:
                result = dataclasses.replace(result, intervals="stopped")
        out[name] = result
    return out


def show_stopped(results: Mapping[str, ModelResult], status_slot: Any) -> None:
    """After a stop: how many models still lack intervals, and the button that resumes."""
    waiting = [name for name, result in results.items() if result.intervals == "stopped"]
    if not waiting:
        return
    with status_slot.container():
        st.info(f"Stopped: the bootstrap intervals of {', '.join(literal(name) for name in waiting)} are not "
                "computed yet; every estimate and chart is shown, and the verdict without its noise check.",
                icon=":material/pause_circle:")
        st.button("Compute the remaining intervals", key="recal_intervals_resume", on_click=STOP.resume,
                  icon=":material/play_arrow:")


def fill(results: Mapping[str, ModelResult], *, n_boot: int, seed: int, run: tuple, status_slot: Any,
         on_result: Callable[[ModelResult], None]) -> dict[str, ModelResult]:
    """Compute the pending intervals one model at a time; ``on_result`` redraws each model as it is done.

    ``status_slot`` (an ``st.empty``) shows the progress over every
    prediction set (before and each method, per model) and the *Stop*
    button, which reruns the page with :data:`STOP` set at ``run``.
    """
    out = dict(results)
    pending = [name for name, result in out.items() if result.intervals == "pending"]
    if not pending:
        return out
    total = sum(len(out[name].ok_methods) + 1 for name in pending)
    with status_slot.container():
        bar = st.progress(0.0, text=f"Bootstrap intervals: 0 of {total} prediction sets")
        st.button("Stop", key="recal_intervals_stop", on_click=STOP.stop, args=(run,), icon=":material/stop:",
                  help="Keep every estimate and the intervals finished so far; the rest can be computed later.")
    finished = 0
    for name in pending:
        result = out[name]

        def report(done: int, _: int, name: str = name, before: int = finished) -> None:
            bar.progress((before + done) / total, text=f"Bootstrap intervals of {literal(name)}: "
                                                      f"{before + done} of {total} prediction sets")

        ok = {method: result.fits[method] for method in result.ok_methods}
        table = cr.intervals(result.view.fingerprint, result.ev, ok, n_boot=int(n_boot), seed=int(seed),
                             alpha=ALPHA, on_progress=report)
        full = compare.results_table(result.ev, result.fits, table)
        pairs = cr.paired_differences(result.view.fingerprint, result.ev, ok, full, n_boot=int(n_boot),
                                      seed=int(seed), alpha=ALPHA)
        DONE.put(_memory_key(result, n_boot, seed), (table, pairs))
        out[name] = with_intervals(result, (table, pairs))
        on_result(out[name])
        finished += len(ok) + 1
    status_slot.empty()
    return out
