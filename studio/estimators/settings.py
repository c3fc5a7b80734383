"""The Estimators page's settings as one object, and how each model's O(N^2) work is planned."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from studio import compute_estimators as ce
from studio.text import md

ALPHA = 0.05
DIRICHLET_MODES = {"auto": "leave-one-out likelihood", "fixed": "fixed"}
SKCE_MODES = {"median": "median heuristic", "fixed": "fixed"}
SMECE_MODES = {"auto": "automatic (fixed point)", "fixed": "fixed"}
KDE_ESTIMATORS = {"direct": "direct (eq. 9)", "refinement": "refinement-based (eq. 14-15)"}
CHAIN_ESTIMATORS = {"kde": "kernel (consistent)", "binned": "binned"}


def seconds_text(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.0f} h"


def block_label(choice) -> str:
    if choice == ce.AUTO:
        return f"auto (all rows if under ~{ce.BUDGET_SECONDS:.0f} s)"
    if choice == ce.ALL_ROWS:
        return "all rows"
    return f"blocks of {choice:,} rows"


@dataclass(frozen=True)
class Settings:
    """The values of the page's settings widgets (rows, resamples, seed, bandwidths, kde_ce options)."""

    block_choice: str | int
    max_blocks: int
    boot_choice: str | int
    seed: int
    dirichlet_mode: str
    dirichlet_h: float
    skce_mode: str
    skce_h: float
    mmce_h: float
    smece_mode: str
    smece_h: float
    kde_estimator: str
    classwise: bool

    @property
    def auto_bandwidth(self) -> bool:
        return self.dirichlet_mode == "auto"

    @property
    def quadratic_keys(self) -> list[str]:
        """The O(N^2) estimators of the table (class-wise kde_ce only when asked for)."""
        return ["skce", "kde_ce_kl", "kde_ce_l2"] + (["kde_ce_kl_classwise", "kde_ce_l2_classwise"]
                                                     if self.classwise else [])


@dataclass(frozen=True)
class Plans:
    """Per model: the O(N^2) plan, the bootstrap resamples and the band's resamples."""

    quadratic: dict[str, ce.Plan]
    boots: dict[str, int]
    bands: dict[str, int]


def plan_models(models, settings: Settings) -> Plans:
    """Turn the "auto" choices into concrete settings for each model (:mod:`studio.compute_estimators`)."""
    return Plans(
        {m.name: ce.plan_quadratic(m.predictions.n_samples, m.predictions.n_classes, settings.block_choice,
                                   settings.max_blocks, auto_bandwidth=settings.auto_bandwidth,
                                   classwise=settings.classwise) for m in models},
        {m.name: ce.resolve_n_boot(settings.boot_choice, m.predictions.n_samples, m.predictions.n_classes)
         for m in models},
        {m.name: ce.resolve_band_boot(settings.boot_choice, m.predictions.n_samples) for m in models})


def plan_notes(models, settings: Settings, plans: Plans) -> None:
    """Say which models run on blocks, which would be slow on all rows, and which have no bootstrap."""
    for model in models:
        plan, n_rows = plans.quadratic[model.name], model.predictions.n_samples
        if plan.uses_blocks and settings.block_choice == ce.AUTO:
            st.info(f"**{md(model.name)}** has {n_rows:,} rows: the O(N²) estimators on all of them would "
                    f"take {seconds_text(plan.all_rows_seconds)}, so they run on **{plan.describe()}** (the mean "
                    f"over the blocks, with a 95% t-interval). Choose *all rows* above to use every row, or read the "
                    "linear-time SKCE, which uses all rows.", icon=":material/speed:")
        elif not plan.uses_blocks and plan.all_rows_seconds > ce.BUDGET_SECONDS:
            st.warning(f"**{md(model.name)}**: the O(N²) estimators on all {n_rows:,} rows take "
                       f"{seconds_text(plan.all_rows_seconds)}. A block size above gives a faster estimate with an "
                       "interval; the linear-time SKCE uses every row in a fraction of the time.",
                       icon=":material/hourglass_top:")
        if settings.boot_choice == ce.AUTO and plans.boots[model.name] == 0:
            st.info(f"**{md(model.name)}**: bootstrap intervals of the linear-time estimators on {n_rows:,} "
                    f"rows would take {seconds_text(ce.bootstrap_seconds(n_rows, model.predictions.n_classes, 100))} "
                    "(100 resamples), so the automatic setting leaves them out to keep the page quick. Choose a number "
                    "of resamples above to compute them.", icon=":material/speed:")
