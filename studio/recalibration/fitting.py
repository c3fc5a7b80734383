"""Fitting every chosen method on every model, with progress (the intervals come after: :mod:`.intervals`)."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from calib_core import CalibrationInputError
from calib_core.recalibration import compare
from calib_core.recalibration import confidence as confidence_maps
from calib_core.recalibration.compare import EvaluationSet, MethodFit, Protocol
from calib_core.recalibration.recommendation import Comparison, PairedDifference, Recommendation, recommend
from studio import compute_recalibration as cr
from studio.state import ModelView
from studio.text import literal, md

#: The intervals cover 1 - ALPHA.
ALPHA = 0.05


@dataclass(frozen=True)
class ModelResult:
    """One model's fits under the page's protocol, on its evaluation rows.

    Attributes
    ----------
    view : studio.state.ModelView
    ev : EvaluationSet
    fits : dict of str to MethodFit
        Every chosen method, failed ones included.
    table : pandas.DataFrame
        :func:`calib_core.recalibration.compare.results_table`, its interval
        columns NaN until :mod:`studio.recalibration.intervals` fills them in.
    sentence : str
        The protocol sentence of the fits ("" when none was fitted).
    boot_note : str or None
        Why the bootstrap was skipped (too slow), Markdown.
    note : str or None
        Why the model's protocol differs from the chosen one, Markdown.
    intervals : str
        Where the intervals stand: ``"none"`` (no resamples chosen, none
        fitted, or skipped: ``boot_note``), ``"pending"``, ``"stopped"``
        (the *Stop* button) or ``"done"``.
    pairs : tuple of PairedDifference
        Every other candidate's margin against the best method with its
        paired interval (:func:`calib_core.recalibration.recommendation.paired_differences`:
        the first is the runner-up's), once the intervals are in.
    """

    view: ModelView
    ev: EvaluationSet
    fits: dict
    table: pd.DataFrame
    sentence: str
    boot_note: str | None
    note: str | None
    intervals: str = "none"
    chosen: tuple[str, ...] = ()
    pairs: tuple[PairedDifference, ...] = ()

    @property
    def recommendation(self) -> Recommendation:
        """:func:`calib_core.recalibration.recommendation.recommend`: what the verdict, the pickers and the
        report say."""
        return recommend(self.table, pairs=self.pairs, n_classes=self.ev.before.shape[1])

    @property
    def ok_methods(self) -> list[str]:
        return [name for name, fit in self.fits.items() if fit.ok]

    @property
    def stated(self) -> bool:
        """A confidence model's comparison (its metrics are the ``conf_*`` entries, no accuracy)."""
        return confidence_maps.is_confidence_comparison(self.ev.metric_keys)

    @property
    def accuracy_note(self) -> str:
        """Why a confidence model's comparison reports no accuracy change (plain text)."""
        return confidence_maps.unchanged_accuracy_sentence(self.ev.labels)

    @property
    def comparison_view(self) -> Comparison:
        """This result as a :class:`~calib_core.recalibration.recommendation.Comparison` (for calib_core's
        functions of a whole comparison)."""
        return Comparison(self.ev, self.fits, self.table, self.recommendation, 0, 0)

    @property
    def key_base(self) -> tuple:
        """What names this model's evaluation arrays in cache keys."""
        return (self.view.fingerprint, self.ev.input, self.ev.protocol)


def interval_text(result: ModelResult, n_boot: int, seed: int) -> str:
    """The caption under the details table: how its intervals were made, or where they stand."""
    n_rows = result.ev.labels.size
    if n_boot == 0 or result.boot_note or not result.ok_methods:
        return "No bootstrap intervals (choose resamples above to get them)."
    kinds = ("percentiles for the NLL and Brier score, the estimate ± 1.96 bootstrap standard errors for the ECEs "
             "and the AURC (the ECE's resamples are biased upwards)" if result.stated else
             "percentiles for the NLL, Brier score and accuracy, the estimate ± 1.96 bootstrap standard errors for "
             "the binned and KS errors (their resamples are biased upwards)")
    how = (f"{1 - ALPHA:.0%} bootstrap intervals over the {n_rows:,} evaluation rows{cr.weighting_text(result.ev)}, "
           f"{n_boot:,} resamples, "
           f"seed {seed}, made as on the Metrics page: {kinds}; before and after resample the same rows, so the "
           "change has its own interval.")
    if result.intervals == "pending":
        return f"Intervals: being computed (progress at the top of the page): {how}"
    if result.intervals == "stopped":
        return f"Intervals: stopped before they were computed (resume at the top of the page): {how}"
    return f"Intervals: {how}"


def _fit_with_status(models: Sequence[ModelView], methods: Sequence[str],
                     protocol: Protocol) -> dict[str, dict[str, MethodFit]]:
    status = st.status(f"Fitting {len(methods)} method(s) on {len(models)} model(s) …", expanded=True)
    with status:
        bar = st.progress(0.0, text="Starting …")

        def on_progress(model_name: str, method: str, index: int, total: int) -> None:
            if index < total:
                bar.progress(index / total, text=f"{literal(model_name)}: fitting {method} ({index + 1} of {total})")
            else:
                bar.progress(1.0, text=f"All {total} fits done.")

        started = time.perf_counter()
        all_fits = cr.fit_methods(models, methods, protocol, on_progress=on_progress)
        elapsed = time.perf_counter() - started
        for model_name, fits in all_fits.items():
            for method, fit in fits.items():
                if fit.ok:
                    st.markdown(f":material/check: {literal(model_name)} · {method}: fitted in "
                                f"{fit.fit_seconds:.2f} s")
                else:
                    st.markdown(f":material/warning: {literal(model_name)} · {method}: could not be fitted")
    n_failed = sum(not f.ok for fits in all_fits.values() for f in fits.values())
    status.update(label=f"Fitted {len(methods)} method(s) on {len(all_fits)} model(s) in {elapsed:.2f} s"
                  + (f" ({n_failed} failed, see below)" if n_failed else "") + " · per-method times inside",
                  state="complete" if not n_failed else "error", expanded=False)
    return all_fits


def _bootstrap_note(view: ModelView, ev: EvaluationSet, n_ok: int, n_boot: int) -> str | None:
    """Why the bootstrap is skipped (its predicted time is over the budget), or ``None``."""
    predicted = compare.bootstrap_seconds(ev, n_boot, n_ok)
    if predicted <= cr.BOOT_BUDGET_SECONDS:
        return None
    affordable = [n for n in cr.BOOT_CHOICES
                  if n and compare.bootstrap_seconds(ev, n, n_ok) <= cr.BOOT_BUDGET_SECONDS]
    advice = (f"Choose {max(affordable):,} resamples or fewer" if affordable
              else "Choose fewer methods, or no resamples")
    return (f"Bootstrap intervals for {literal(view.name)} skipped: {n_boot:,} resamples would take "
            f"about {predicted / 60:.0f} min on its {ev.labels.size:,} evaluation rows. {advice} to get them.")


def fit_all(models: Sequence[ModelView], methods: Sequence[str], protocol: Protocol, *,
            n_boot: int) -> dict[str, ModelResult]:
    """Fit every method on every model (a status box with progress); the tables without intervals.

    A model whose rows the protocol cannot split gets an error message and no
    result. With ``n_boot`` resamples, a model's intervals are ``"pending"``
    (:func:`studio.recalibration.intervals.fill` computes them) unless their
    predicted time is over the budget (then ``boot_note`` says so).
    """
    problems: dict[str, str] = {}
    for view in models:
        used, _ = cr.effective_protocol(view.predictions, protocol)
        try:
            cr.evaluation_set(view.predictions, view.fingerprint, used)
        except CalibrationInputError as exc:
            problems[view.name] = str(exc)
    all_fits = _fit_with_status(models, methods, protocol)
    results = {}
    for view in models:
        if view.name in problems:
            st.error(f"{literal(view.name)}: the rows cannot be split for this protocol: {md(problems[view.name])} "
                     "Choose another protocol above (a random split, or fewer folds).", icon=":material/error:")
            continue
        used, note = cr.effective_protocol(view.predictions, protocol)
        ev = cr.evaluation_set(view.predictions, view.fingerprint, used)
        fits = all_fits[view.name]
        ok = {name: fit for name, fit in fits.items() if fit.ok}
        boot_note = _bootstrap_note(view, ev, len(ok), n_boot) if n_boot and ok else None
        table = compare.results_table(ev, fits)
        sentence = next((fit.protocol for fit in ok.values()), "")
        state = "pending" if n_boot and ok and boot_note is None else "none"
        results[view.name] = ModelResult(view, ev, fits, table, sentence, boot_note, note, state, chosen=tuple(methods))
    return results
