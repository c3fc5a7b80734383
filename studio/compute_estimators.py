"""The Estimators page's calib_core calls, wrapped in ``st.cache_data``, and how they are planned.

Same pattern as :mod:`studio.compute`: a model's predictions are passed as
``_predictions`` (not hashed) together with its ``fingerprint``; the
fingerprint and the small, hashable options form the cache key.

Two kinds of estimators:

* **linear-time** ones (MMCE, the linear-time SKCE, smECE, the root-Brier
  bound): computed on all rows by :func:`calib_core.metric_interval`, with
  the interval the registry declares for each (bootstrap or, for the
  linear-time SKCE, the normal interval of its independent block terms).
* **O(N^2)** ones (the unbiased SKCE, ``kde_ce``, the score decompositions,
  the bound chain): on all rows when that is quick (the unbiased SKCE then
  with its variance-formula interval), otherwise on ``R`` disjoint random
  *blocks* of ``m`` rows, as the mean of the block estimates with a
  t-interval from their spread (:mod:`calib_core.inference.blocks` says why
  a bootstrap does not suit them).

:func:`plan_quadratic` and :func:`resolve_n_boot` turn the page's "auto"
choices into concrete settings with a cost model (:func:`quadratic_seconds`,
:func:`bootstrap_seconds`) measured on the 2-core reference machine, so
that the page stays within about :data:`BUDGET_SECONDS` per model and says
how long anything slower would take.

Names and default settings come from :mod:`calib_core.metrics.registry`: at the
page's default settings an estimator has the same name and the same value as
on the Metrics page and in the command line; a changed setting (bandwidth,
estimator, blocks) is part of the name (:func:`estimator_name`).
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
import streamlit as st

import calib_core as cc
from calib_core.inference.blocks import BlockEstimate, block_decomposition, block_indices, block_metric
from calib_core.io import Predictions
from calib_core.metrics.decomposition import BoundChain, ScoreDecomposition
from calib_core.metrics.smooth import SmoothReliabilityCurve
from calib_core.recalibration.fixable import FixablePart, fixable_part
from studio.memory import RESULT_TTL_SECONDS

#: Rows per block offered for the O(N^2) estimators.
BLOCK_SIZES = (500, 1_000, 2_000, 5_000, 10_000, 20_000)
#: Largest numbers of blocks offered.
BLOCK_COUNTS = (5, 10, 20, 50)
#: Bootstrap resamples offered for the linear-time estimators (and the band of the smoothed curve).
BOOT_CHOICES = (0, 100, 200, 500)
#: The page's "choose for me" value of the block size and the number of resamples.
AUTO = "auto"
#: Block-size choice meaning "every row in one estimate".
ALL_ROWS = "all"
#: What the page aims to stay under, per model, when choosing automatically.
BUDGET_SECONDS = 2.0
#: Rows used by the median heuristic of the SKCE bandwidth (exact for smaller N), the
#: registry's rule (:func:`calib_core.metrics.registry.skce_bandwidth`): about 0.5 s at 5,000 rows.
MEDIAN_ROWS = cc.metrics.registry.SKCE_MEDIAN_ROWS
#: Candidate bandwidths evaluated by a coarse-to-fine ``kde_bandwidth`` search (19 coarse + 4 fine).
_BANDWIDTH_CANDIDATES = 23

# Cost model: timings of calib_core on the 2-core reference machine while other sessions kept both
# cores busy (load average 6-8), in seconds. It only decides defaults and the "about N s" messages.
_LOO_PAIR = 6.0e-9          # one leave-one-out Dirichlet pass, per pair of rows ...
_LOO_PAIR_CLASS = 1.5e-10   # ... plus this per pair and class
_SKCE_PAIR_CLASS = 1.0e-9   # unbiased SKCE, per pair of rows and (K + 2)
_MEDIAN_PAIR = 4.0e-8       # median heuristic, per pair of its min(N, MEDIAN_ROWS) rows
_BOOT_ROW = 2.0e-6          # the four linear-time estimators, per resampled row ...
_BOOT_ROW_CLASS = 5.0e-8    # ... plus this per row and class
_BAND_ROW = 4.0e-7          # band of the smoothed reliability curve, per resampled row


# ----------------------------------------------------------------------------- planning

def _loo_seconds(n: int, k: int) -> float:
    return n * n * (_LOO_PAIR + _LOO_PAIR_CLASS * k)


def _bandwidth_seconds(n: int, k: int) -> float:
    return _BANDWIDTH_CANDIDATES * min(n, 4000) * n * (_LOO_PAIR + _LOO_PAIR_CLASS * k)


def quadratic_seconds(n_rows: int, n_classes: int, *, auto_bandwidth: bool, classwise: bool,
                      block_rows: int | None = None, n_blocks: int = 1) -> float:
    """Predicted wall time of the page's O(N^2) work on one model.

    That is: the median heuristic, the Dirichlet bandwidth search (``auto_bandwidth``),
    the unbiased SKCE, ``kde_ce`` (KL and L2, class-wise too with ``classwise``)
    and the Brier and log decompositions on every block (or all rows), and
    the bound chain on one block (``K + 2`` leave-one-out passes).
    """
    k = n_classes
    m = n_rows if block_rows is None else block_rows
    blocks = 1 if block_rows is None else n_blocks
    per_block = 4 * _loo_seconds(m, k) + m * m * (k + 2) * _SKCE_PAIR_CLASS
    if classwise:
        per_block += 2 * k * _loo_seconds(m, 2)
    median_rows = min(n_rows, MEDIAN_ROWS)
    total = blocks * per_block + _loo_seconds(m, k) + (k + 1) * _loo_seconds(m, 2)
    total += median_rows * median_rows * _MEDIAN_PAIR / 2
    if auto_bandwidth:
        total += _bandwidth_seconds(m, k)
    return float(total)


def bootstrap_seconds(n_rows: int, n_classes: int, n_boot: int) -> float:
    """Predicted wall time of ``n_boot`` resamples of the four linear-time estimators."""
    return float(n_boot * n_rows * (_BOOT_ROW + _BOOT_ROW_CLASS * n_classes))


@dataclass(frozen=True)
class Plan:
    """How the O(N^2) estimators run on one model.

    Attributes
    ----------
    n_rows : int
        Rows of the model (N).
    block_rows : int or None
        Rows per block (m); None: all rows in one estimate.
    n_blocks : int
        Number of disjoint blocks (1 with all rows).
    seconds : float
        Predicted wall time (:func:`quadratic_seconds`).
    all_rows_seconds : float
        Predicted wall time with all rows, for the page's message.
    """

    n_rows: int
    block_rows: int | None
    n_blocks: int
    seconds: float
    all_rows_seconds: float

    @property
    def uses_blocks(self) -> bool:
        return self.block_rows is not None

    @property
    def rows_used(self) -> int:
        return self.n_rows if self.block_rows is None else self.block_rows * self.n_blocks

    def describe(self) -> str:
        """E.g. ``"all 899 rows"`` or ``"10 blocks of 2,000 rows"``."""
        if self.block_rows is None:
            return f"all {self.n_rows:,} rows"
        return f"{self.n_blocks} blocks of {self.block_rows:,} rows"


def plan_quadratic(n_rows: int, n_classes: int, choice: str | int, max_blocks: int, *, auto_bandwidth: bool,
                   classwise: bool, budget: float | None = None) -> Plan:
    """Turn the page's block-size choice into a :class:`Plan` for one model.

    ``choice`` is :data:`ALL_ROWS`, a number of rows per block, or
    :data:`AUTO`: all rows when :func:`quadratic_seconds` predicts at most
    ``budget`` seconds, else the largest block size of :data:`BLOCK_SIZES`
    that fits (the smallest if none does). Blocks need ``N >= 2 m`` (at least
    two of them, for an interval); otherwise all rows are used. ``budget``
    defaults to :data:`BUDGET_SECONDS`.
    """
    budget = BUDGET_SECONDS if budget is None else budget
    def cost(block_rows, n_blocks):
        return quadratic_seconds(n_rows, n_classes, auto_bandwidth=auto_bandwidth, classwise=classwise,
                                 block_rows=block_rows, n_blocks=n_blocks)

    everything = cost(None, 1)
    whole = Plan(n_rows, None, 1, everything, everything)
    if choice == ALL_ROWS:
        return whole
    if choice == AUTO:
        if everything <= budget:
            return whole
        sizes = [m for m in BLOCK_SIZES if 2 * m <= n_rows]
        if not sizes:
            return whole
        for m in reversed(sizes):
            blocks = min(max_blocks, n_rows // m)
            if cost(m, blocks) <= budget:
                return Plan(n_rows, m, blocks, cost(m, blocks), everything)
        m = sizes[0]
        blocks = min(max_blocks, n_rows // m)
        return Plan(n_rows, m, blocks, cost(m, blocks), everything)
    m = int(choice)
    if 2 * m > n_rows:
        return whole
    blocks = min(max_blocks, n_rows // m)
    return Plan(n_rows, m, blocks, cost(m, blocks), everything)


def resolve_n_boot(choice: str | int, n_rows: int, n_classes: int, budget: float | None = None) -> int:
    """Bootstrap resamples for one model: the number chosen, or for :data:`AUTO`
    200, else 100, whichever :func:`bootstrap_seconds` keeps within ``budget``
    (default :data:`BUDGET_SECONDS`), else 0."""
    budget = BUDGET_SECONDS if budget is None else budget
    if choice != AUTO:
        return int(choice)
    for n_boot in (200, 100):
        if bootstrap_seconds(n_rows, n_classes, n_boot) <= budget:
            return n_boot
    return 0


def resolve_band_boot(choice: str | int, n_rows: int, budget: float | None = None) -> int:
    """Resamples of the smoothed curve's band: the number chosen, or for :data:`AUTO` 200 when
    they fit in ``budget`` (default :data:`BUDGET_SECONDS`; the band alone is far cheaper
    than the four bootstraps), else 0."""
    budget = BUDGET_SECONDS if budget is None else budget
    if choice != AUTO:
        return int(choice)
    return 200 if 200 * n_rows * _BAND_ROW <= budget else 0


# ----------------------------------------------------------------------------- results

#: The interval column of a single O(N^2) estimate on all rows.
NO_BLOCK_INTERVAL = "none (one O(N²) estimate on all rows; choose a block size for an interval)"


@dataclass(frozen=True)
class Estimate:
    """One row of the page's estimates table: a value, its interval and how it was made.

    Attributes
    ----------
    value : float
        The estimate (the mean of the block estimates with blocks).
    low, high, std : float
        Interval and standard error; NaN when there is none.
    interval : str
        How the interval was obtained, in words.
    rows : int
        Rows the estimate used.
    bandwidth : float
        Kernel bandwidth used (NaN where none).
    seconds : float
        Wall time of the computation, measured when it ran (a cached result
        keeps the time of the run that filled the cache).
    """

    value: float
    low: float
    high: float
    std: float
    interval: str
    rows: int
    bandwidth: float
    seconds: float

    @classmethod
    def of_blocks(cls, found: BlockEstimate, bandwidth: float, seconds: float) -> Estimate:
        """The row of a :class:`calib_core.inference.blocks.BlockEstimate`."""
        note = found.note if found.has_interval else NO_BLOCK_INTERVAL
        return cls(found.value, found.low, found.high, found.std, note, found.rows, bandwidth, seconds)

    @classmethod
    def of_interval(cls, found: cc.MetricInterval, rows: int, bandwidth: float, seconds: float) -> Estimate:
        """The row of a :class:`calib_core.MetricInterval`."""
        return cls(found.estimate, found.low, found.high, found.std, found.note, rows, bandwidth, seconds)


# ----------------------------------------------------------------------------- bandwidths

@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def skce_median_bandwidth(_predictions: Predictions, fingerprint: str) -> float:
    """The registry's SKCE bandwidth (:func:`calib_core.metrics.registry.skce_bandwidth`): the median heuristic."""
    return cc.metrics.registry.skce_bandwidth(_predictions.probs, _predictions.labels)


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def dirichlet_bandwidth(_predictions: Predictions, fingerprint: str, block_rows: int | None, seed: int) -> float:
    """``kde_bandwidth`` (leave-one-out likelihood) on all rows, or on the first block of ``block_rows`` rows.

    With blocks every block has ``block_rows`` rows, so the bandwidth that
    suits one block is used for all of them.
    """
    rows = block_indices(_predictions.n_samples, block_rows, 1, seed)[0]
    return cc.kde_bandwidth(_predictions.probs[rows])


# ----------------------------------------------------------------------------- O(N^2) estimators

#: The O(N^2) estimators of the table: key -> label without settings (registry labels where registered).
QUADRATIC = {
    "skce": cc.get_metric("skce").label,
    "kde_ce_kl": cc.get_metric("kde_ce_kl").label,
    "kde_ce_l2": cc.get_metric("kde_ce_l2").label,
    "kde_ce_kl_classwise": "CE_KL class-wise (kernel)",
    "kde_ce_l2_classwise": "CE_2^2 class-wise (kernel)",
}


def estimator_name(key: str, *, bandwidth: float | None = None, bandwidth_rule: str | None = None,
                   kde_estimator: str = "direct", plan: Plan | None = None) -> str:
    """The table's name of an estimator: the registry's :func:`calib_core.metric_name` plus what the page changed.

    ``bandwidth=None`` is the registry's default bandwidth; a refinement-based
    ``kde_ce`` and an estimate over blocks say so. At the page's default
    settings the name equals the Metrics page's, and so does the value.
    """
    if key.endswith("_classwise"):
        base = cc.metric_name(key.removesuffix("_classwise"), bandwidth=bandwidth, bandwidth_rule=bandwidth_rule)
        name = base.replace(cc.get_metric(key.removesuffix("_classwise")).label, QUADRATIC[key], 1)
    else:
        name = cc.metric_name(key, bandwidth=bandwidth, bandwidth_rule=bandwidth_rule)
    if key.startswith("kde_ce") and kde_estimator == "refinement":
        name += ", refinement-based"
    if plan is not None and plan.uses_blocks:
        name += f", mean of {plan.describe()}"
    return name


def _quadratic_value(key: str, probs: np.ndarray, labels: np.ndarray, *, bandwidth: float, estimator: str) -> float:
    if key == "skce":
        return cc.skce(probs, labels, bandwidth=bandwidth)
    divergence = "kl" if key.startswith("kde_ce_kl") else "l2"
    return cc.kde_ce(probs, labels, divergence, bandwidth, key.endswith("classwise"), estimator=estimator)


@st.cache_data(show_spinner=False, max_entries=1024, ttl=RESULT_TTL_SECONDS)
def quadratic_estimate(_predictions: Predictions, fingerprint: str, key: str, bandwidth: float,
                       block_rows: int | None, n_blocks: int, seed: int, estimator: str = "direct",
                       alpha: float = 0.05) -> Estimate:
    """An O(N^2) estimator (:data:`QUADRATIC`) on all rows or as the mean over disjoint blocks.

    ``estimator`` ("direct" or "refinement") applies to ``kde_ce`` only. On
    all rows the unbiased SKCE comes with the registry's variance-formula
    interval (:func:`calib_core.metric_interval`).
    """
    start = time.perf_counter()
    probs, labels = _predictions.probs, _predictions.labels
    if key == "skce" and block_rows is None:
        found = cc.metric_interval("skce", probs, labels, bandwidth=bandwidth, alpha=alpha)
        return Estimate.of_interval(found, _predictions.n_samples, bandwidth, time.perf_counter() - start)
    found = block_metric(functools.partial(_quadratic_value, key, bandwidth=bandwidth, estimator=estimator),
                         probs, labels, block_rows=block_rows, n_blocks=n_blocks, seed=seed, alpha=alpha)
    return Estimate.of_blocks(found, bandwidth, time.perf_counter() - start)


@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def decomposition(_predictions: Predictions, fingerprint: str, score: str, bandwidth: float,
                  block_rows: int | None, n_blocks: int, seed: int) -> ScoreDecomposition:
    """:func:`calib_core.inference.blocks.block_decomposition`: on all rows or the mean over disjoint blocks."""
    return block_decomposition(_predictions.probs, _predictions.labels, score, bandwidth=bandwidth,
                               block_rows=block_rows, n_blocks=n_blocks, seed=seed)


@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def bound_chain(_predictions: Predictions, fingerprint: str, bandwidth: float, block_rows: int | None, seed: int,
                n_bins: int, binning: str, estimator: str, mmce_bandwidth: float) -> BoundChain:
    """:func:`calib_core.bound_chain` on all rows, or on the first block of ``block_rows`` rows."""
    rows = block_indices(_predictions.n_samples, block_rows, 1, seed)[0]
    return cc.bound_chain(_predictions.probs[rows], _predictions.labels[rows], n_bins=n_bins, binning=binning,
                          estimator=estimator, bandwidth=bandwidth, mmce_bandwidth=mmce_bandwidth)


# ----------------------------------------------------------------------------- linear-time estimators

#: The linear-time estimators of the table: key -> registry label (without settings).
LINEAR = {key: cc.get_metric(key).label for key in ("mmce", "skce_block", "smooth_ece", "calibration_upper_bound")}


@st.cache_data(show_spinner=False, max_entries=2048, ttl=RESULT_TTL_SECONDS)
def linear_estimate(_predictions: Predictions, fingerprint: str, key: str, bandwidth: float | None, n_boot: int,
                    seed: int, alpha: float = 0.05) -> Estimate:
    """A linear-time estimator (:data:`LINEAR`) on all rows, by :func:`calib_core.metric_interval`.

    The value and the interval are the registry's: the Metrics page shows the
    same ones under the same name. ``bandwidth=None`` is the registry's
    default (the median heuristic for the linear-time SKCE, whose pairs do
    not depend on ``seed`` or the row order; the automatic width for smECE,
    chosen again on every resample).
    """
    start = time.perf_counter()
    probs, labels = _predictions.probs, _predictions.labels
    found = cc.metric_interval(key, probs, labels, bandwidth=bandwidth, n_boot=n_boot, alpha=alpha, seed=seed)
    used = found.bandwidth
    if key == "smooth_ece" and bandwidth is None:
        used = cc.smooth_reliability_curve(probs, labels, n_boot=0).bandwidth
    return Estimate.of_interval(found, probs.shape[0], float(used), time.perf_counter() - start)


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def smooth_curve(_predictions: Predictions, fingerprint: str, bandwidth: float | None, n_boot: int,
                 seed: int) -> SmoothReliabilityCurve:
    """:func:`calib_core.smooth_reliability_curve` with a ``n_boot``-resample band (none for 0)."""
    return cc.smooth_reliability_curve(_predictions.probs, _predictions.labels, bandwidth=bandwidth,
                                       n_boot=n_boot, seed=seed)


# ----------------------------------------------------------------------------- bounds and the fixable part

@st.cache_data(show_spinner=False, max_entries=512, ttl=RESULT_TTL_SECONDS)
def calibrated_bias(_predictions: Predictions, fingerprint: str, bandwidth: float, block_rows: int | None,
                    seed: int) -> dict[tuple[str, str], float]:
    """:func:`calib_core.calibrated_bias` (the kernel estimates on labels drawn from the predictions) on all
    rows, or on the first block of ``block_rows`` rows (the bias of an estimate over blocks is that of one block)."""
    rows = block_indices(_predictions.n_samples, block_rows, 1, seed)[0]
    return cc.calibrated_bias(_predictions.probs[rows], bandwidth=bandwidth)


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def bound_limits(_predictions: Predictions, fingerprint: str) -> dict[str, float]:
    """The registry values the estimators' bounds compare with (NLL, Brier score, root Brier score), on all rows."""
    probs, labels = _predictions.probs, _predictions.labels
    return {key: cc.metric_value(key, probs, labels) for key in ("nll", "brier", "calibration_upper_bound")}


@st.cache_data(show_spinner=False, max_entries=256, ttl=RESULT_TTL_SECONDS)
def fixable(_predictions: Predictions, fingerprint: str, n_boot: int, seed: int, alpha: float = 0.05) -> FixablePart:
    """:func:`calib_core.recalibration.fixable.fixable_part`: the recommended default method's cross-fitted drop in
    NLL and Brier score, with ``n_boot`` paired resamples (the same call on the Metrics and Estimators pages and
    in the report)."""
    return fixable_part(_predictions.probs, _predictions.labels, logits=_predictions.logits, n_boot=n_boot,
                        seed=seed, alpha=alpha, sample_weight=_predictions.sample_weight)


def fixable_row(name: str, found: FixablePart) -> dict:
    """One row of the fixable-part table of a page."""
    return {"model": name, "best method": found.method or "none", "brier before": found.brier_before,
            "brier after": found.brier_after, "brier drop": found.brier_drop, "brier drop low": found.brier_drop_low,
            "brier drop high": found.brier_drop_high, "share of the brier score": found.brier_share,
            "nll before": found.nll_before, "nll after": found.nll_after, "nll drop": found.nll_drop,
            "nll drop low": found.nll_drop_low, "nll drop high": found.nll_drop_high}
