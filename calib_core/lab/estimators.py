"""Estimator lab: bias and spread of calibration-error estimators against known truths.

:func:`run_lab` draws R test sets of each size from a ground-truth generator
(:mod:`calib_core.lab.generators`), applies every estimator
(:func:`lab_estimators`, :func:`ece_estimator`), and reports each estimate
with its bias and spread around the true value.

Speed: the test sets of one size are drawn together as ``(R, n, K)`` arrays
(in blocks bounding the memory), and the top-label binned estimators (ECE
with uniform or adaptive bins, RMSCE, debiased ECE, KS) are evaluated on the
whole block at once with :func:`numpy.bincount` and cumulative sums over the
sorted confidences (the sorted-values sweep of :mod:`calib_core.binning`);
other estimators are called once per test set.

References
----------
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, eq. (13) (the optimal
   bin count) and Figure 1 (the "TCE gap" ``E|estimate - truth|``).
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix G.1.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.binning import array_split_ends, optimal_n_bins, sort_values, sorted_bin_sums, uniform_index
from calib_core.metrics import binned, scores
from calib_core.metrics.canonical import canonical_ce
from calib_core.metrics.debiased import debiased_ece, debiased_squared_terms, ece_sweep
from calib_core.metrics.kernel import mmce, skce
from calib_core.metrics.kde import kde_ce
from calib_core.metrics.smooth import smooth_ece
from calib_core.lab.bounds import model_lipschitz
from calib_core.lab.generators import GroundTruth
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_choice,
    check_count,
    check_n_bins,
    check_positive,
    check_sizes,
)

__all__ = [
    "DEFAULT_ESTIMATORS",
    "DEFAULT_SIZES",
    "LabEstimator",
    "LabResult",
    "ece_estimator",
    "lab_estimators",
    "run_lab",
]

#: Sizes of the default lab run: 8 log-spaced sizes from 100 to 100,000.
DEFAULT_SIZES: tuple[int, ...] = tuple(int(n) for n in np.unique(np.round(np.logspace(2, 5, 8)).astype(int)))

#: Estimators of the default lab run.
DEFAULT_ESTIMATORS: tuple[str, ...] = ("ece_uniform", "ece_adaptive", "debiased_ece", "ece_sweep", "ks")

#: Largest number of (rows x classes) entries of one block of simulated test sets.
BLOCK_ELEMENTS = 1_000_000

ProgressCallback = Callable[[int, int], None]
StopCallback = Callable[[], bool]


# =========================================================================== estimators
class _Block:
    """R test sets of one size, with the top-label quantities shared by the batched estimators."""

    def __init__(self, probs: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        self.probs = probs
        self.labels = labels
        self.repetitions, self.n = labels.shape
        self._sums: dict[tuple[str, int], tuple[NDArray, NDArray, NDArray]] = {}

    @cached_property
    def top(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Top-label confidence and correctness, each ``(R, n)``: :func:`calib_core.metrics.binned.top_label`
        (the one arg-max, ties to the lowest class) of the R test sets stacked."""
        n_classes = self.probs.shape[-1]
        confidence, correct = binned.top_label(self.probs.reshape(-1, n_classes), self.labels.reshape(-1))
        return confidence.reshape(self.labels.shape), correct.reshape(self.labels.shape)

    @cached_property
    def sorted_top(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
        confidence, correct = self.top
        order = np.argsort(confidence, axis=1)  # ties are handled at tie-group ends
        sorted_conf = np.take_along_axis(confidence, order, axis=1)
        sorted_correct = np.take_along_axis(correct, order, axis=1)
        tied = np.any(sorted_conf[:, 1:] == sorted_conf[:, :-1], axis=1)
        return sorted_conf, sorted_correct, tied

    def bin_sums(self, n_bins: int, binning: str) -> tuple[NDArray, NDArray, NDArray]:
        """Per-bin count, sum of confidence and sum of correctness, each ``(R, n_bins)``.

        The same bins as :func:`calib_core.binning.bin_statistics` (uniform:
        right-closed; adaptive: ``array_split`` runs, ties sharing a bin).
        """
        key = (binning, n_bins)
        if key not in self._sums:
            self._sums[key] = self._uniform(n_bins) if binning == "uniform" else self._adaptive(n_bins)
        return self._sums[key]

    def _uniform(self, n_bins):
        confidence, correct = self.top
        index = uniform_index(confidence, n_bins)
        flat = (index + (np.arange(self.repetitions) * n_bins)[:, None]).ravel()
        size = self.repetitions * n_bins
        shape = (self.repetitions, n_bins)
        count = np.bincount(flat, minlength=size).astype(np.float64).reshape(shape)
        sum_conf = np.bincount(flat, weights=confidence.ravel(), minlength=size).reshape(shape)
        sum_correct = np.bincount(flat, weights=correct.ravel(), minlength=size).reshape(shape)
        return count, sum_conf, sum_correct

    def _adaptive(self, n_bins):
        sorted_conf, sorted_correct, tied = self.sorted_top
        n, reps = self.n, self.repetitions
        # Without ties the bins are the array_split runs, at the same positions in every test set.
        ends = np.unique(array_split_ends(n, n_bins))
        ends = ends[ends > 0]
        starts = np.concatenate([[0], ends[:-1]])
        cum_conf = np.concatenate([np.zeros((reps, 1)), np.cumsum(sorted_conf, axis=1)], axis=1)
        cum_correct = np.concatenate([np.zeros((reps, 1)), np.cumsum(sorted_correct, axis=1)], axis=1)
        count = np.zeros((reps, n_bins))
        sum_conf = np.zeros((reps, n_bins))
        sum_correct = np.zeros((reps, n_bins))
        width = ends.shape[0]
        count[:, :width] = ends - starts
        sum_conf[:, :width] = cum_conf[:, ends] - cum_conf[:, starts]
        sum_correct[:, :width] = cum_correct[:, ends] - cum_correct[:, starts]
        for r in np.flatnonzero(tied):  # ties move bin edges: the shared sweep, one test set at a time
            sums = sorted_bin_sums(sort_values(sorted_conf[r], sorted_correct[r]), n_bins, "adaptive")
            width = sums[0].shape[0]
            count[r], sum_conf[r], sum_correct[r] = 0.0, 0.0, 0.0
            count[r, :width], sum_conf[r, :width], sum_correct[r, :width] = sums
        return count, sum_conf, sum_correct


def _resolve_bins(n_bins: int | str, n: int, lipschitz: float) -> int:
    return optimal_n_bins(n, lipschitz) if n_bins == "optimal" else int(n_bins)


def _ece_one(probs, labels, *, n_bins, binning, norm, lipschitz, classwise):
    bins = _resolve_bins(n_bins, probs.shape[0], lipschitz)
    if classwise:
        return binned.classwise_ece(probs, labels, n_bins=bins, binning=binning, norm=norm)
    return binned.ece(probs, labels, n_bins=bins, binning=binning, norm=norm)


def _ece_block(block: _Block, *, n_bins, binning, norm, lipschitz):
    count, sum_conf, sum_correct = block.bin_sums(_resolve_bins(n_bins, block.n, lipschitz), binning)
    if norm == "l1":
        return np.abs(sum_conf - sum_correct).sum(axis=1) / block.n
    squared = np.where(count > 0, (sum_conf - sum_correct) ** 2 / np.maximum(count, 1.0), 0.0)
    return np.sqrt(squared.sum(axis=1) / block.n)


def _debiased_one(probs, labels, *, n_bins, binning, lipschitz):
    return debiased_ece(probs, labels, n_bins=_resolve_bins(n_bins, probs.shape[0], lipschitz), binning=binning)


def _debiased_block(block: _Block, *, n_bins, binning, lipschitz):
    count, sum_conf, sum_correct = block.bin_sums(_resolve_bins(n_bins, block.n, lipschitz), binning)
    return np.sqrt(np.maximum(debiased_squared_terms(count, sum_conf, sum_correct, float(block.n)), 0.0))


def _ks_block(block: _Block):
    sorted_conf, sorted_correct, _ = block.sorted_top
    difference = np.cumsum(sorted_conf - sorted_correct, axis=1)
    # Compare only at the end of each group of tied confidences (as ks_error).
    group_end = np.ones_like(sorted_conf, dtype=bool)
    group_end[:, :-1] = sorted_conf[:, 1:] != sorted_conf[:, :-1]
    return np.where(group_end, np.abs(difference), 0.0).max(axis=1) / block.n


@dataclass(frozen=True)
class LabEstimator:
    """An estimator the lab can run.

    Attributes
    ----------
    key : str
        Identifier in tables.
    label : str
        Display name.
    target : str or None
        Key of :data:`calib_core.lab.generators.TRUTH_KEYS` it estimates (None:
        no known population value, so no bias is reported).
    compute : callable
        ``compute(probs, labels) -> float`` on one test set.
    batch : callable, optional
        ``batch(block) -> ndarray (R,)`` on a block of R test sets; must equal
        ``compute`` on each of them.
    max_n : int, optional
        Largest test-set size it is run at (quadratic estimators); larger
        sizes are left out of its rows.
    """

    key: str
    label: str
    target: str | None
    compute: Callable[[NDArray[np.float64], NDArray[np.intp]], float]
    batch: Callable[[_Block], NDArray[np.float64]] | None = field(default=None, repr=False)
    max_n: int | None = None


def ece_estimator(n_bins: int | str = "optimal", binning: str = "uniform", *, norm: str = "l1",
                  lipschitz: float = 1.0, classwise: bool = False, key: str | None = None) -> LabEstimator:
    """A binned ECE for the lab, at a fixed or at Futami & Fujisawa's optimal bin count.

    Parameters
    ----------
    n_bins : int or "optimal", default "optimal"
        ``"optimal"``: ``optimal_n_bins(n, lipschitz)`` at each test-set size n.
    binning : {"uniform", "adaptive"}
    norm : {"l1", "l2"}
        l1 estimates the TCE, l2 (RMSCE) the TCE_2.
    lipschitz : float, default 1.0
        L of the optimal bin count.
    classwise : bool, default False
        Class-wise ECE (for two classes the binary ECE of Futami & Fujisawa,
        whose truth is the canonical TCE) instead of the top-label ECE.
    key : str, optional
        Identifier; a default is built from the options.

    Returns
    -------
    LabEstimator
    """
    if n_bins != "optimal":
        n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    norm = check_choice(norm, "norm", ("l1", "l2"))
    lipschitz = check_positive(lipschitz, "lipschitz", allow_zero=True)
    name = "classwise_ece" if classwise else ("rmsce" if norm == "l2" else "ece")
    bins_text = "" if n_bins == "optimal" else f"_{n_bins}"
    key = key or f"{name}_{binning}{bins_text}"
    label = f"{'Class-wise ECE' if classwise else ('RMSCE' if norm == 'l2' else 'ECE')} ({binning}, " + (
        "optimal B)" if n_bins == "optimal" else f"B={n_bins})")
    if classwise:
        target = "classwise_tce" if norm == "l1" else None
    else:
        target = "tce" if norm == "l1" else "tce_l2"
    options = dict(n_bins=n_bins, binning=binning, norm=norm, lipschitz=lipschitz)
    batch = None if classwise else partial(_ece_block, **options)
    return LabEstimator(key, label, target, partial(_ece_one, classwise=classwise, **options), batch)


def lab_estimators(model: object | None = None, *, lipschitz: float | None = None,
                   quadratic_max_n: int = 3000) -> dict[str, LabEstimator]:
    """Every estimator the lab can run, keyed by its identifier.

    Parameters
    ----------
    model : ground-truth generator, optional
        Fixes the SKCE bandwidth to the model's population median distance
        (``truth().skce_bandwidth``) so that SKCE estimates exactly its truth,
        and the Lipschitz constant of the optimal bin count when the model
        knows it (:class:`LogisticModel`).
    lipschitz : float, optional
        Overrides the Lipschitz constant (default: the model's if finite, else 1).
    quadratic_max_n : int, default 3000
        Largest test-set size for the O(N^2) estimators (SKCE, KDE-CE).

    Returns
    -------
    dict of str to LabEstimator
        Always: ``ece_uniform``, ``ece_adaptive`` (optimal B), ``ece_uniform_15``,
        ``ece_adaptive_15``, ``rmsce_uniform``, ``classwise_ece_uniform``,
        ``debiased_ece``, ``ece_sweep``, ``ks``. When their modules are present:
        ``mmce``, ``skce``, ``kde_ce_kl``, ``kde_ce_l2``, ``kde_ce_kl_classwise``,
        ``kde_ce_l2_classwise``, ``canonical_ce``, ``smooth_ece``.
    """
    if lipschitz is None:
        lipschitz, _ = model_lipschitz(model)
    lipschitz = check_positive(lipschitz, "lipschitz", allow_zero=True)
    quadratic_max_n = int(check_n_bins(quadratic_max_n, name="quadratic_max_n", maximum=None))
    found: dict[str, LabEstimator] = {}
    for estimator in (
        ece_estimator("optimal", "uniform", lipschitz=lipschitz, key="ece_uniform"),
        ece_estimator("optimal", "adaptive", lipschitz=lipschitz, key="ece_adaptive"),
        ece_estimator(15, "uniform", key="ece_uniform_15"),
        ece_estimator(15, "adaptive", key="ece_adaptive_15"),
        ece_estimator("optimal", "uniform", norm="l2", lipschitz=lipschitz, key="rmsce_uniform"),
        ece_estimator("optimal", "uniform", lipschitz=lipschitz, classwise=True, key="classwise_ece_uniform"),
    ):
        found[estimator.key] = estimator
    options = dict(n_bins="optimal", binning="adaptive", lipschitz=lipschitz)
    found["debiased_ece"] = LabEstimator("debiased_ece", "Debiased ECE (Kumar et al., adaptive, optimal B)",
                                         "tce_l2", partial(_debiased_one, **options),
                                         partial(_debiased_block, **options))
    found["ece_sweep"] = LabEstimator("ece_sweep", "ECE sweep (Roelofs et al., equal mass)", "tce", ece_sweep)
    found["ks"] = LabEstimator("ks", "KS error", "ks", scores.ks_error, _ks_block)

    found["mmce"] = LabEstimator("mmce", "MMCE (bandwidth 0.4)", "mmce", mmce)
    bandwidth = None
    if model is not None and hasattr(model, "truth"):
        bandwidth = model.truth().skce_bandwidth or None
    label = "SKCE (unbiased" + (f", h={bandwidth:.3g})" if bandwidth else ", median heuristic)")
    found["skce"] = LabEstimator("skce", label, "skce", partial(skce, bandwidth=bandwidth), max_n=quadratic_max_n)
    for divergence, target in (("kl", "ce_kl"), ("l2", "canonical_sq")):
        found[f"kde_ce_{divergence}"] = LabEstimator(
            f"kde_ce_{divergence}", f"KDE CE_{divergence.upper()} (Dirichlet kernel, h=0.01)", target,
            partial(kde_ce, divergence=divergence), max_n=quadratic_max_n)
        found[f"kde_ce_{divergence}_classwise"] = LabEstimator(
            f"kde_ce_{divergence}_classwise", f"KDE CE_{divergence.upper()} class-wise", f"classwise_{target}"
            if divergence == "kl" else "classwise_ce_l2_sq",
            partial(kde_ce, divergence=divergence, classwise=True), max_n=quadratic_max_n)
    found["canonical_ce"] = LabEstimator("canonical_ce", "Canonical CE (TV, 10 uniform bins per axis)",
                                         "canonical_tv", canonical_ce)
    found["smooth_ece"] = LabEstimator("smooth_ece", "Smooth ECE (no closed-form truth)", None, smooth_ece)
    return found


# =========================================================================== run_lab
@dataclass(frozen=True)
class LabResult:
    """Output of :func:`run_lab`.

    Attributes
    ----------
    estimates : pandas.DataFrame
        Columns ``estimator``, ``size``, ``repetition``, ``estimate``: one row
        per estimator, test-set size and repetition.
    summary : pandas.DataFrame
        One row per (estimator, size): ``target`` (truth key), ``truth``,
        ``mean``, ``std``, ``q05``, ``q95``, ``bias`` (mean - truth),
        ``mean_abs_error`` (E|estimate - truth|, Futami & Fujisawa's gap),
        ``rmse`` and ``repetitions``.
    truth : GroundTruth
    model_name : str
    estimators : tuple of str
    sizes : tuple of int
    stopped : bool
        True when ``should_stop`` ended the run early (the tables then hold
        the blocks finished so far).
    seconds : float
        Wall-clock time.
    """

    estimates: pd.DataFrame
    summary: pd.DataFrame
    truth: GroundTruth
    model_name: str
    estimators: tuple[str, ...]
    sizes: tuple[int, ...]
    stopped: bool
    seconds: float


def _resolve_estimators(estimators, model) -> list[LabEstimator]:
    if isinstance(estimators, (str, LabEstimator)):
        estimators = [estimators]
    if isinstance(estimators, Mapping):
        estimators = list(estimators.values())
    resolved: list[LabEstimator] = []
    available: dict[str, LabEstimator] | None = None
    for item in estimators:
        if isinstance(item, LabEstimator):
            resolved.append(item)
            continue
        if available is None:
            available = lab_estimators(model)
        if item not in available:
            raise CalibrationInputError(
                f"unknown lab estimator {item!r}; available: {', '.join(available)}."
            )
        resolved.append(available[item])
    if not resolved:
        raise CalibrationInputError("`estimators` is empty; choose at least one estimator.")
    keys = [e.key for e in resolved]
    if len(set(keys)) != len(keys):
        raise CalibrationInputError(f"`estimators` repeats a key: {keys}.")
    return resolved


def _summarise(estimates: pd.DataFrame, estimators: Sequence[LabEstimator], truth: GroundTruth) -> pd.DataFrame:
    columns = ["estimator", "size", "target", "truth", "mean", "std", "q05", "q95", "bias",
               "mean_abs_error", "rmse", "repetitions"]
    if estimates.empty:
        return pd.DataFrame(columns=columns)
    targets = {e.key: e.target for e in estimators}
    grouped = estimates.groupby(["estimator", "size"], sort=False)["estimate"]
    summary = grouped.agg(mean="mean", std="std", q05=lambda v: v.quantile(0.05),
                          q95=lambda v: v.quantile(0.95), repetitions="count").reset_index()
    summary["target"] = summary["estimator"].map(targets)
    summary["truth"] = [truth.values.get(t, np.nan) if t else np.nan for t in summary["target"]]
    joined = estimates.merge(summary[["estimator", "size", "truth"]], on=["estimator", "size"])
    joined["error"] = joined["estimate"] - joined["truth"]
    errors = joined.groupby(["estimator", "size"], sort=False)["error"]
    extra = errors.agg(mean_abs_error=lambda v: v.abs().mean(), rmse=lambda v: math.sqrt((v**2).mean()))
    summary = summary.merge(extra.reset_index(), on=["estimator", "size"])
    summary["bias"] = summary["mean"] - summary["truth"]
    return summary[columns]


def run_lab(generator, estimators: Sequence[str | LabEstimator] | Mapping = DEFAULT_ESTIMATORS,
            sizes: Iterable[int] = DEFAULT_SIZES, repetitions: int = 50, seed: int | None = 0,
            on_progress: ProgressCallback | None = None, should_stop: StopCallback | None = None, *,
            block_elements: int = BLOCK_ELEMENTS) -> LabResult:
    """Bias and spread of calibration-error estimators on test sets drawn from a known model.

    Parameters
    ----------
    generator : LogisticModel, LogisticNormalModel or UniformSimplexModel
        The ground-truth model (:mod:`calib_core.lab.generators`).
    estimators : sequence of str or LabEstimator, default :data:`DEFAULT_ESTIMATORS`
        Keys of :func:`lab_estimators` (resolved for this generator) or
        estimator objects (e.g. :func:`ece_estimator`).
    sizes : iterable of int, default :data:`DEFAULT_SIZES`
        Test-set sizes (>= 2).
    repetitions : int, default 50
        Test sets drawn per size.
    seed : int, optional
        The same seed, sizes, repetitions and generator give the same estimates.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each block, in simulated rows.
    should_stop : callable, optional
        Checked before each block; returning True ends the run early with
        the blocks finished so far (``stopped=True``).
    block_elements : int, default :data:`BLOCK_ELEMENTS`
        Bound on ``repetitions_in_block * n * K`` of one block.

    Returns
    -------
    LabResult

    Raises
    ------
    CalibrationInputError
        An unknown estimator, invalid sizes or repetitions, or a generator
        without ``sample_batch`` and ``truth``.

    Notes
    -----
    For each size n the R test sets are drawn in blocks of
    ``max(1, block_elements // (n K))`` at once from independent streams
    (``numpy.random.SeedSequence(seed)`` spawned per size and block). Batched
    estimators process a whole block with vectorised numpy; the others are
    called per test set. An estimator with ``max_n`` skips larger sizes.
    The summary compares every estimate with the population value of the
    quantity the estimator targets (``truth``), giving the bias, the spread
    and Futami & Fujisawa's "TCE gap" ``mean_abs_error``.

    Examples
    --------
    >>> from calib_core.lab.generators import LogisticModel
    >>> result = run_lab(LogisticModel(0.5, -1.5), ["ece_uniform"], sizes=[200, 2000], repetitions=5)
    >>> result.summary[["size", "repetitions"]].values.tolist()
    [[200, 5], [2000, 5]]
    """
    if not (hasattr(generator, "sample_batch") and hasattr(generator, "truth")):
        raise CalibrationInputError(
            f"`generator` must be a ground-truth model from calib_core.lab.generators, got {type(generator).__name__}."
        )
    started = time.perf_counter()
    sizes = check_sizes(sizes)
    repetitions = check_count(repetitions, "repetitions")
    block_elements = check_count(block_elements, "block_elements")
    chosen = _resolve_estimators(estimators, generator)
    truth = generator.truth()
    n_classes = int(generator.n_classes)

    plan = []
    for n in sizes:
        per_block = max(1, min(repetitions, block_elements // (n * n_classes)))
        plan.append((n, [(start, min(per_block, repetitions - start)) for start in range(0, repetitions, per_block)]))
    total = sum(n * repetitions for n in sizes)
    streams = np.random.SeedSequence(seed).spawn(len(sizes))

    parts: list[pd.DataFrame] = []
    done = 0
    stopped = False
    for (n, blocks), stream in zip(plan, streams):
        block_streams = stream.spawn(len(blocks))
        for (start, count), block_stream in zip(blocks, block_streams):
            if should_stop is not None and should_stop():
                stopped = True
                break
            probs, labels = generator.sample_batch(n, count, np.random.default_rng(block_stream))
            block = _Block(probs, labels)
            for estimator in chosen:
                if estimator.max_n is not None and n > estimator.max_n:
                    continue
                if estimator.batch is not None:
                    values = np.asarray(estimator.batch(block), dtype=np.float64)
                else:
                    values = np.array([estimator.compute(probs[r], labels[r]) for r in range(count)])
                parts.append(pd.DataFrame({"estimator": estimator.key, "size": n,
                                           "repetition": np.arange(start, start + count), "estimate": values}))
            done += n * count
            if on_progress is not None:
                on_progress(done, total)
        if stopped:
            break
    columns = ["estimator", "size", "repetition", "estimate"]
    estimates = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    if not estimates.empty:
        order = {e.key: i for i, e in enumerate(chosen)}
        estimates = estimates.sort_values(["estimator", "size", "repetition"],
                                          key=lambda c: c.map(order) if c.name == "estimator" else c,
                                          kind="stable").reset_index(drop=True)
        estimates["size"] = estimates["size"].astype(np.int64)
        estimates["repetition"] = estimates["repetition"].astype(np.int64)
    summary = _summarise(estimates, chosen, truth)
    return LabResult(estimates[columns], summary, truth, getattr(generator, "name", type(generator).__name__),
                     tuple(e.key for e in chosen), sizes, stopped, time.perf_counter() - started)

