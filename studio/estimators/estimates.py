"""The Estimators page's table of binless estimates: the progress bar, the computations and the table."""
from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core import CalibrationInputError
from studio import compute_estimators as ce
from studio import downloads, state
from studio.estimators.settings import ALPHA, Plans, Settings
from calib_core.plot.figures_estimators import estimates_figure
from studio.text import md

#: Rows of the estimates table, in order (class-wise kde_ce only when asked for).
ESTIMATOR_ORDER = ("mmce", "skce", "skce_block", "kde_ce_kl", "kde_ce_l2", "kde_ce_kl_classwise",
                   "kde_ce_l2_classwise", "smooth_ece", "calibration_upper_bound")
#: Columns of the estimates table.
COLUMNS = ["model", "estimator", "estimate", "unreliable", "ci_low", "ci_high", "std", "interval", "rows",
           "bandwidth", "cost", "seconds"]


class Steps:
    """A progress bar over the page's computations.

    It appears when the work is predicted to be slow, or once it has taken
    longer than a moment; cached results come back without one.
    """

    def __init__(self, total: int, *, slow: bool) -> None:
        self.total, self.done = max(total, 1), 0
        self.start = time.perf_counter()
        self.slot = st.empty()
        self.bar = None
        self.slow = slow

    def run(self, text: str, function, *args, **kwargs):
        if self.bar is not None or self.slow or time.perf_counter() - self.start > 0.15:
            label = md(f"{text} (step {self.done + 1} of {self.total})")
            if self.bar is None:
                self.bar = self.slot.progress(self.done / self.total, text=label)
            else:
                self.bar.progress(self.done / self.total, text=label)
        result = function(*args, **kwargs)
        self.done += 1
        return result

    def close(self) -> None:
        self.slot.empty()


def page_steps(models, settings: Settings, plans: Plans) -> Steps:
    """The progress bar of every computation of the page, shown at once when they are predicted to be slow."""
    # Bandwidths, the table's estimators, the bounds' limits and the kernel bias, two decompositions, the
    # decompositions' bias, the fixable part, the chain and the smoothed curve.
    per_model_steps = ((settings.skce_mode == "median") + settings.auto_bandwidth + len(ce.LINEAR)
                       + len(settings.quadratic_keys) + 2 + 2 + 1 + 1 + 1 + 1)
    predicted = sum(plans.quadratic[m.name].seconds + ce.bootstrap_seconds(m.predictions.n_samples,
                                                                           m.predictions.n_classes,
                                                                           plans.boots[m.name]) for m in models)
    return Steps(per_model_steps * len(models), slow=predicted > ce.BUDGET_SECONDS)


@dataclass(frozen=True)
class Estimates:
    """The table's rows, each model's bandwidths, and the models whose estimators failed (name -> message)."""

    table: pd.DataFrame
    bandwidths: dict[str, dict[str, float | None]]
    failures: dict[str, str]


def compute_estimates(models, settings: Settings, plans: Plans, steps: Steps) -> Estimates:
    """Every estimator of :data:`ESTIMATOR_ORDER` on every model (through :mod:`studio.compute_estimators`)."""
    bandwidths: dict[str, dict[str, float | None]] = {}
    estimates: list[dict] = []
    failures: dict[str, str] = {}
    for model in models:
        predictions, fingerprint, plan = model.predictions, model.fingerprint, plans.quadratic[model.name]
        where = f"{model.name}, {plan.describe()}"
        try:
            # The registry's median heuristic (never 0: it falls back to the distance between distinct
            # predictions).
            skce_bandwidth = (steps.run(f"SKCE bandwidth of {model.name}", ce.skce_median_bandwidth, predictions,
                                        fingerprint) if settings.skce_mode == "median" else float(settings.skce_h))
            dirichlet_bandwidth = (steps.run(f"Dirichlet bandwidth of {model.name}", ce.dirichlet_bandwidth,
                                             predictions, fingerprint, plan.block_rows, settings.seed)
                                   if settings.auto_bandwidth else float(settings.dirichlet_h))
            bandwidths[model.name] = {"skce": skce_bandwidth, "dirichlet": dirichlet_bandwidth,
                                      "smece": None if settings.smece_mode == "auto" else float(settings.smece_h)}
            # What the names carry: None is the registry's default (the Metrics page's setting).
            skce_setting = None if settings.skce_mode == "median" else skce_bandwidth
            kde_setting = dirichlet_bandwidth if settings.auto_bandwidth else float(settings.dirichlet_h)
            kde_rule = "leave-one-out" if settings.auto_bandwidth else None
            rows = []
            for key in ESTIMATOR_ORDER:
                if key in ce.LINEAR:
                    bandwidth = {"mmce": float(settings.mmce_h), "skce_block": skce_setting,
                                 "smooth_ece": bandwidths[model.name]["smece"]}.get(key)
                    label = ce.estimator_name(key, bandwidth=bandwidth)
                    estimate = steps.run(f"{label}, {model.name}, all rows", ce.linear_estimate, predictions,
                                         fingerprint, key, bandwidth, plans.boots[model.name], settings.seed,
                                         ALPHA)
                    rows.append((key, label, "linear", estimate))
                elif key in settings.quadratic_keys:
                    is_skce = key == "skce"
                    label = ce.estimator_name(key, bandwidth=skce_setting if is_skce else kde_setting,
                                              bandwidth_rule=None if is_skce else kde_rule,
                                              kde_estimator="direct" if is_skce else settings.kde_estimator,
                                              plan=plan)
                    bandwidth = skce_bandwidth if is_skce else dirichlet_bandwidth
                    estimate = steps.run(f"{label}, {where}", ce.quadratic_estimate, predictions, fingerprint, key,
                                         bandwidth, plan.block_rows, plan.n_blocks, settings.seed,
                                         "direct" if is_skce else settings.kde_estimator, ALPHA)
                    rows.append((key, label, "O(N²)", estimate))
            marks = _bound_marks(model, settings, plan, rows, dirichlet_bandwidth, steps)
            for key, label, cost, estimate in rows:
                estimates.append({
                    "model": model.name, "estimator": label, "estimate": estimate.value,
                    "unreliable": marks.get(key, ""), "ci_low": estimate.low,
                    "ci_high": estimate.high, "std": estimate.std, "interval": estimate.interval,
                    "rows": estimate.rows, "bandwidth": estimate.bandwidth, "cost": cost, "seconds": estimate.seconds,
                })
        except CalibrationInputError as exc:
            failures[model.name] = str(exc)
    return Estimates(pd.DataFrame(estimates, columns=COLUMNS), bandwidths, failures)


def _bound_marks(model, settings: Settings, plan, rows, dirichlet_bandwidth: float, steps: Steps) -> dict[str, str]:
    """``{key: reason}`` of the table's estimates that break a bound (:func:`calib_core.check_estimate`).

    The limits are the model's NLL, Brier score and root Brier score on all rows; a kernel estimate is also held
    against its own bias (:func:`calib_core.calibrated_bias`) at its bandwidth and on the rows it was made on.
    """
    predictions, fingerprint = model.predictions, model.fingerprint
    limits = steps.run(f"NLL and Brier score of {model.name}", ce.bound_limits, predictions, fingerprint)
    biases = {}
    if any(key in ("kde_ce_kl", "kde_ce_l2") for key, *_ in rows):
        bias = steps.run(f"Bias of the kernel estimates, {model.name}", ce.calibrated_bias, predictions, fingerprint,
                         dirichlet_bandwidth, plan.block_rows, settings.seed)
        biases = {"kde_ce_kl": bias["kl", settings.kde_estimator], "kde_ce_l2": bias["l2", settings.kde_estimator]}
    marks = {}
    for key, _, _, estimate in rows:
        reason = cc.check_estimate(key, estimate.value, limits, n_rows=estimate.rows if key not in biases else
                                   (plan.block_rows or plan.n_rows), n_classes=predictions.n_classes, biases=biases,
                                   bandwidth=dirichlet_bandwidth if key in biases else None)
        if reason:
            marks[key] = reason
    return marks


def show_estimates(found: Estimates) -> None:
    """The failures, the chart, the table and its download."""
    failures, table = found.failures, found.table
    st.subheader("Calibration errors without bins")
    for name, message in failures.items():
        st.error(f"The estimators could not be computed for **{md(name)}**: {md(message)} Change "
                 "the bandwidth settings above, or check the model on the Data page.", icon=":material/error:")
    if not table.empty:
        st.plotly_chart(estimates_figure(table, colors=state.model_colors()), theme=None,
                        key="estimators_estimates",
                        config=downloads.chart_config("Estimators", *table["model"].unique(), "binless-estimates"))
        st.dataframe(
            table, hide_index=True, width="stretch", placeholder="–",
            column_config={
                "model": st.column_config.TextColumn("Model"),
                "estimator": st.column_config.TextColumn("Estimator", width="large"),
                "estimate": st.column_config.NumberColumn("Estimate", format="%.5f"),
                "unreliable": st.column_config.TextColumn(
                    "Within its bounds?", width="medium",
                    help="Empty: the estimate is within every bound its true quantity obeys. Otherwise why it is "
                         "unreliable at this N and K, and what would make it reliable."),
                "ci_low": st.column_config.NumberColumn("95% low", format="%.5f"),
                "ci_high": st.column_config.NumberColumn("95% high", format="%.5f"),
                "std": st.column_config.NumberColumn("Std. error", format="%.5f"),
                "interval": st.column_config.TextColumn("Interval", width="medium"),
                "rows": st.column_config.NumberColumn("Rows used", format="%d"),
                "bandwidth": st.column_config.NumberColumn("Bandwidth", format="%.4g"),
                "cost": st.column_config.TextColumn("Cost", help="linear: O(N) or O(N log N); O(N²): all pairs."),
                "seconds": st.column_config.NumberColumn("Seconds", format="%.2f",
                                                         help="Wall time when it was computed (then cached)."),
            },
        )
        st.download_button("Download the estimates as CSV", cc.csv_bytes(table),
                           file_name="calibration_estimators.csv", mime="text/csv", on_click="ignore",
                           icon=":material/download:")
        for row in table[table["unreliable"] != ""].itertuples():
            st.warning(f"**{md(row.model)}**, {md(row.estimator)} = {row.estimate:.4g} is {md(row.unreliable)}",
                       icon=":material/warning:")
        st.caption("SKCE and CE₂² are squared errors and CE_KL is in nats, so their scale differs from the ECE's. "
                   "The unbiased SKCE is negative for many samples of a calibrated model: shown as computed, and "
                   "marked, since the true SKCE is never negative.")
