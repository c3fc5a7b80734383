"""What the Lab's long-running tools share: a progress bar with a Stop button, one chunk per script run.

The pattern (and why it stops reliably) is described in :mod:`studio.compute_lab`.
"""
import streamlit as st

from studio import compute_lab as cl
from studio import state
from studio.text import md


def stop_job(key: str) -> None:
    """The Stop button's callback: it runs first in the script run that interrupted the computation."""
    job = st.session_state.get(key)
    if job is not None:
        job.stopped = True


def progress_row(key: str, job: cl.Job, text: str):
    """A progress bar and a Stop button; returns the bar."""
    bar_col, stop_col = st.columns([6, 1], vertical_alignment="bottom")
    bar = bar_col.progress(job.fraction(), text=text)
    stop_col.button("Stop", key=f"{key}:stop", on_click=stop_job, args=(key,), icon=":material/stop_circle:",
                    width="stretch", help="Stop after the chunks already finished; they are kept.")
    return bar


def job_state(key: str, job: cl.Job, status, *, what: str, fix: str, button: str):
    """The progress row of a running job (text ``status(job)``), or why it stopped: an error (with ``fix``,
    how to go on) or the Stop button (press ``button`` to continue). Returns the bar (None unless running)."""
    if job.running:
        return progress_row(key, job, status(job))
    if job.error:
        st.error(f"The {what} stopped with an error: {md(job.error)} {fix}", icon=":material/error:")
    elif job.stopped:
        st.warning(f"Stopped. Press **{button}** to continue; the finished sizes are kept.",
                   icon=":material/pause_circle:")
    return None


def advance(key: str, job: cl.Job, bar, compute, text: str) -> None:
    """Compute the job's next chunk with the bar following calib_core's on_progress, then rerun the script."""
    def on_progress(done: int, total: int) -> None:
        bar.progress(job.fraction(done / total if total else 1.0), text=text)

    job.advance(compute, on_progress)
    st.rerun()


def data_page_link() -> None:
    st.page_link("app.py", label="Go to the Data page", icon=":material/upload_file:",
                 query_params=state.link_params() or None)


def fmt_size(n: int) -> str:
    return f"{n:,}"
