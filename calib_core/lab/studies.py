"""Estimator lab: bias and spread of calibration-error estimators against known truths.

* :func:`run_lab` - draw R test sets of each size from a ground-truth
  generator (:mod:`calib_core.lab.generators`), apply every estimator, and report
  each estimate with its bias and spread around the true value.
* :func:`futami_bounds` - Futami & Fujisawa's (2024) bounds on the bias of the
  binned ECE: statistical ``sqrt(2 B log 2 / n)``, binning ``(1 + L) / B`` and
  their sum, with the optimal bin count.
* :func:`subset_study` - every metric on random subsets of the user's own test
  set, from 100 rows to all of them (Gruber & Buettner 2022, G.2/G.3).
* :func:`bin_rank_stability` - for each of the 32 GCE variants, how stable
  the ranking of several models is across bin counts (Nixon et al. 2019, 5.3).
* :func:`pathologies` - the gallery of cases where a calibration number misleads.

Speed: the test sets of one size are drawn together as ``(R, n, K)`` arrays
(in blocks bounding the memory), and the top-label binned estimators (ECE
with uniform or adaptive bins, RMSCE, debiased ECE, KS) are evaluated on the
whole block at once with :func:`numpy.bincount` and cumulative sums over the
sorted confidences; other estimators are called once per test set.

References
----------
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, eq. (9), (11), (12), (13).
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix D.2,
   D.4 (Proposition D.2), D.5, G.1-G.3.
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning", CVPR
   Workshops 2019, section 5.3, appendix C and Figure 4.
.. [Vaicenavicius2019] Vaicenavicius, J. et al. "Evaluating model calibration in
   classification", AISTATS 2019, appendix A.1 (Examples 3 and 5), C.1.
"""
from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binom, spearmanr

from calib_core.metrics import binned

from calib_core.metrics import scores
from calib_core.binning import bin_statistics, optimal_n_bins
from calib_core.metrics.canonical import canonical_ce
from calib_core.metrics.proper import kde_ce
from calib_core.metrics.kernel import mmce, skce
from calib_core.metrics.smooth import smooth_ece
from calib_core.metrics.debiased import debiased_ece, debiased_squared_terms, ece_sweep
from calib_core.lab.generators import GroundTruth, LogisticNormalModel, gaussian_mixture
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_choice,
    check_n_bins,
    check_positive,
    check_probs_labels,
)

__all__ = [
    "DEFAULT_ESTIMATORS",
    "DEFAULT_SIZES",
    "FutamiBounds",
    "GCE_VARIANTS",
    "LabEstimator",
    "LabResult",
    "Pathology",
    "RankStability",
    "SubsetStudy",
    "bin_rank_stability",
    "ece_estimator",
    "expected_ece",
    "futami_bounds",
    "lab_estimators",
    "pathologies",
    "run_lab",
    "subset_study",
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
        predicted = self.probs.argmax(axis=-1)
        confidence = np.take_along_axis(self.probs, predicted[..., None], axis=-1)[..., 0]
        return confidence, (predicted == self.labels).astype(np.float64)

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
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        index = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, n_bins - 1)
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
        run = np.arange(1, n_bins + 1)
        ends = np.unique(np.minimum(run * (n // n_bins) + np.minimum(run, n % n_bins), n))
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
        confidence, correct = self.top
        for r in np.flatnonzero(tied):  # ties move bin edges: the exact rule, one test set at a time
            stats = bin_statistics(confidence[r], correct[r], n_bins, "adaptive")
            width = stats.count.shape[0]
            count[r], sum_conf[r], sum_correct[r] = 0.0, 0.0, 0.0
            count[r, :width], sum_conf[r, :width], sum_correct[r, :width] = (
                stats.count, stats.sum_value, stats.sum_target)
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
        model_l = getattr(model, "lipschitz", None)
        lipschitz = float(model_l) if model_l is not None and math.isfinite(model_l) else 1.0
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


def _check_sizes(sizes: Iterable[int], minimum: int = 2) -> tuple[int, ...]:
    try:
        values = list(sizes)
    except TypeError as exc:
        raise CalibrationInputError(f"`sizes` must be a sequence of whole numbers, got {sizes!r}.") from exc
    if not values:
        raise CalibrationInputError("`sizes` is empty; give at least one test-set size.")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
            raise CalibrationInputError(f"`sizes` must hold whole numbers >= {minimum}, got {value!r}.")
    return tuple(sorted({int(v) for v in values}))


def _check_count(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise CalibrationInputError(f"`{name}` must be a whole number >= {minimum}, got {value!r}.")
    return int(value)


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
    sizes = _check_sizes(sizes)
    repetitions = _check_count(repetitions, "repetitions")
    block_elements = _check_count(block_elements, "block_elements")
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


# =========================================================================== Futami & Fujisawa bounds
@dataclass(frozen=True)
class FutamiBounds:
    """Futami & Fujisawa's (2024) bounds on the expected bias of the binned ECE.

    Attributes
    ----------
    n : ndarray
        Test-set sizes.
    n_bins : ndarray
        Bin counts B the bounds are evaluated at.
    statistical : ndarray
        Bound on ``E|TCE(f_I) - ECE(f, S)|`` (eq. 9).
    binning : ndarray
        Bound on ``|TCE(f) - TCE(f_I)|`` (eq. 11).
    total : ndarray
        Their sum, the bound on ``E|TCE(f) - ECE(f, S)|`` (eq. 12).
    optimal_n_bins : ndarray
        ``floor((2 n (1 + L)^2 / log 2)^(1/3))``, the minimiser of the
        uniform-width total (eq. 13).
    lipschitz : float
    scheme : str
        ``"uniform"`` (UWB) or ``"adaptive"`` (UMB).
    """

    n: NDArray[np.int64]
    n_bins: NDArray[np.int64]
    statistical: NDArray[np.float64]
    binning: NDArray[np.float64]
    total: NDArray[np.float64]
    optimal_n_bins: NDArray[np.int64]
    lipschitz: float
    scheme: str

    def to_frame(self) -> pd.DataFrame:
        """Columns ``n``, ``n_bins``, ``statistical``, ``binning``, ``total``, ``optimal_n_bins``."""
        return pd.DataFrame({"n": self.n, "n_bins": self.n_bins, "statistical": self.statistical,
                             "binning": self.binning, "total": self.total,
                             "optimal_n_bins": self.optimal_n_bins})


def futami_bounds(n: int | ArrayLike, n_bins: int | ArrayLike | None = None, lipschitz: float = 1.0, *,
                  binning: str = "uniform") -> FutamiBounds:
    """Statistical, binning and total bias bounds of the binned ECE (Futami & Fujisawa 2024).

    Parameters
    ----------
    n : int or array_like of int
        Test-set sizes (>= 2).
    n_bins : int, array_like of int or None
        Bin counts (broadcast against ``n``); ``None`` uses the optimal
        ``optimal_n_bins(n, lipschitz)`` for each n.
    lipschitz : float, default 1.0
        Lipschitz constant L of ``E[Y | f(X) = p]``.
    binning : {"uniform", "adaptive"}, default "uniform"
        Uniform-width (UWB) or uniform-mass (UMB) bins.

    Returns
    -------
    FutamiBounds

    Raises
    ------
    CalibrationInputError
        Sizes below 2, bin counts below 1, adaptive bins with B >= n, or a
        negative Lipschitz constant.

    Notes
    -----
    Uniform-width bins (eq. 9, 11, 12):

    .. math:: \\text{statistical} = \\sqrt{\\frac{2 B \\log 2}{n}}, \\qquad
              \\text{binning} = \\frac{1 + L}{B},

    uniform-mass bins, with :math:`s = \\sqrt{2 B \\log 2 / (n - B)} + 2B / (n - B)`:
    statistical ``s`` and binning ``(1 + L)(1/B + s)``. The total is their
    sum; for UWB it is smallest near ``B = (2 n (1 + L)^2 / log 2)^{1/3}``,
    giving a bias of order :math:`n^{-1/3}` (eq. 13).

    Examples
    --------
    >>> b = futami_bounds(1000, 10)
    >>> round(float(b.statistical[0]), 4), round(float(b.binning[0]), 4)
    (0.1177, 0.2)
    """
    lipschitz = check_positive(lipschitz, "lipschitz", allow_zero=True)
    binning = check_binning(binning)
    sizes = np.atleast_1d(np.asarray(n))
    if sizes.dtype.kind not in "iu" and not (sizes.dtype.kind == "f" and np.all(sizes == np.round(sizes))):
        raise CalibrationInputError(f"`n` must hold whole numbers, got {n!r}.")
    sizes = sizes.astype(np.int64)
    if np.any(sizes < 2):
        raise CalibrationInputError(f"`n` must be >= 2, got {sizes[sizes < 2][0]}.")
    optimal = np.array([optimal_n_bins(int(v), lipschitz) for v in sizes.ravel()], dtype=np.int64).reshape(sizes.shape)
    if n_bins is None:
        bins = optimal
    else:
        bins = np.atleast_1d(np.asarray(n_bins))
        if bins.dtype.kind not in "iu" and not (bins.dtype.kind == "f" and np.all(bins == np.round(bins))):
            raise CalibrationInputError(f"`n_bins` must hold whole numbers, got {n_bins!r}.")
        bins = bins.astype(np.int64)
        if np.any(bins < 1):
            raise CalibrationInputError(f"`n_bins` must be >= 1, got {bins[bins < 1][0]}.")
    sizes, bins, optimal = np.broadcast_arrays(sizes, bins, optimal)
    b = bins.astype(np.float64)
    m = sizes.astype(np.float64)
    if binning == "uniform":
        statistical = np.sqrt(2.0 * b * math.log(2.0) / m)
        bin_bias = (1.0 + lipschitz) / b
    else:
        if np.any(bins >= sizes):
            raise CalibrationInputError("uniform-mass bounds need `n_bins` < `n` (they divide by n - B).")
        statistical = np.sqrt(2.0 * b * math.log(2.0) / (m - b)) + 2.0 * b / (m - b)
        bin_bias = (1.0 + lipschitz) * (1.0 / b + statistical)
    return FutamiBounds(sizes.copy(), bins.copy(), statistical, bin_bias, statistical + bin_bias,
                        optimal.copy(), lipschitz, binning)


def expected_ece(model, n: int | ArrayLike, n_bins: int = 15) -> NDArray[np.float64]:
    """Gruber & Buettner's folded-normal approximation of the expected ECE estimate at size n.

    Parameters
    ----------
    model : ground-truth generator
        :mod:`calib_core.lab.generators` model; its noise-free reference sample
        gives the per-bin quantities.
    n : int or array_like of int
        Test-set sizes.
    n_bins : int, default 15
        Uniform-width bins, as in the paper.

    Returns
    -------
    ndarray
        :math:`\\mu_{(n)}` for each n (shape of ``np.atleast_1d(n)``).

    Notes
    -----
    Gruber & Buettner (2022), appendix D.5, eq. (22)-(24): with bin
    probability :math:`p_i`, true gap :math:`\\mu_i = \\mathrm{conf}_i - \\mathrm{acc}_i`
    and :math:`\\sigma_i^2 = (V^{conf}_i + \\mathrm{acc}_i(1 - \\mathrm{acc}_i)) / n_i`,
    :math:`n_i = n p_i`,

    .. math:: \\mu_{(n)} = \\sum_i p_i \\left\\{ \\sqrt{2/\\pi}\\, \\sigma_i e^{-\\mu_i^2 / (2\\sigma_i^2)}
              + \\mu_i \\left[1 - 2\\Phi(-\\mu_i / \\sigma_i)\\right] \\right\\}
              \\ge \\sum_i p_i |\\mu_i| = \\mathrm{ECE},

    decreasing and convex in n (Proposition 3.3). It treats the bin counts
    as fixed, so it is least accurate when bins hold only a few rows.
    """
    from scipy.stats import norm as normal

    n_bins = check_n_bins(n_bins)
    sizes = np.atleast_1d(np.asarray(n, dtype=np.float64))
    if np.any(sizes < 1) or not np.all(np.isfinite(sizes)):
        raise CalibrationInputError(f"`n` must hold sizes >= 1, got {n!r}.")
    if not hasattr(model, "reference_sample"):
        raise CalibrationInputError(f"`model` must be a ground-truth generator, got {type(model).__name__}.")
    points, calibration = model.reference_sample()
    rows = np.arange(points.shape[0])
    top = points.argmax(axis=1)
    confidence, accuracy = points[rows, top], calibration[rows, top]
    index = np.clip(np.searchsorted(np.linspace(0.0, 1.0, n_bins + 1), confidence, side="left") - 1, 0, n_bins - 1)
    count = np.bincount(index, minlength=n_bins).astype(np.float64)
    filled = count > 0
    safe = np.maximum(count, 1.0)
    p = count / points.shape[0]
    conf = np.bincount(index, weights=confidence, minlength=n_bins) / safe
    acc = np.bincount(index, weights=accuracy, minlength=n_bins) / safe
    var_conf = np.maximum(np.bincount(index, weights=confidence**2, minlength=n_bins) / safe - conf**2, 0.0)
    mu = (conf - acc)[filled]
    spread = (var_conf + acc * (1.0 - acc))[filled]
    p = p[filled]
    n_i = sizes[:, None] * p[None, :]
    sigma = np.sqrt(spread[None, :] / n_i)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sigma > 0, mu[None, :] / sigma, np.sign(mu)[None, :] * np.inf)
        folded = np.where(sigma > 0,
                          np.sqrt(2.0 / np.pi) * sigma * np.exp(-0.5 * ratio**2) + mu * (1.0 - 2.0 * normal.cdf(-ratio)),
                          np.abs(mu)[None, :])
    return (p[None, :] * folded).sum(axis=1)


# =========================================================================== test-set-size study
@dataclass(frozen=True)
class SubsetStudy:
    """Output of :func:`subset_study`.

    Attributes
    ----------
    values : pandas.DataFrame
        Columns ``metric``, ``size``, ``repetition``, ``value``.
    summary : pandas.DataFrame
        One row per (metric, size): ``mean``, ``std``, ``q05``, ``q95``,
        ``full_value`` (the metric on all N rows), ``relative_spread``
        (``std / |full_value|``) and ``repetitions``.
    sizes : tuple of int
    n_rows : int
    stopped : bool
    """

    values: pd.DataFrame
    summary: pd.DataFrame
    sizes: tuple[int, ...]
    n_rows: int
    stopped: bool


def _metric_functions(metrics, n_bins: int, binning: str) -> dict[str, Callable]:
    from calib_core.metrics.registry import get_metric

    if isinstance(metrics, str) or callable(metrics):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        items = list(metrics.items())
    else:
        items = []
        for metric in metrics:
            if isinstance(metric, str):
                items.append((metric, metric))
            elif callable(metric):
                items.append((getattr(metric, "__name__", repr(metric)), metric))
            else:
                raise CalibrationInputError(f"`metrics` must hold metric keys or callables, got {metric!r}.")
    functions: dict[str, Callable] = {}
    for name, metric in items:
        if isinstance(metric, str):
            spec = get_metric(metric)
            functions[str(name)] = partial(lambda p, y, compute: compute(p, y, n_bins, binning), compute=spec.compute)
        elif callable(metric):
            functions[str(name)] = metric
        else:
            raise CalibrationInputError(f"metric {name!r} must be a key or a callable, got {metric!r}.")
    if not functions:
        raise CalibrationInputError("`metrics` is empty; choose at least one metric.")
    return functions


def default_subset_sizes(n_rows: int, n_ticks: int = 10, minimum: int = 100) -> tuple[int, ...]:
    """Sizes equally spaced in log2 from ``minimum`` to ``n_rows`` (Gruber & Buettner, G.2)."""
    if n_rows <= minimum:
        return (int(n_rows),)
    ticks = np.round(np.exp2(np.linspace(math.log2(minimum), math.log2(n_rows), n_ticks))).astype(np.int64)
    ticks[-1] = n_rows
    return tuple(int(v) for v in np.unique(ticks))


def subset_study(probs: ArrayLike, labels: ArrayLike, metrics=("ece", "ace", "sce", "ks", "brier", "nll"),
                 sizes: Iterable[int] | None = None, repetitions: int = 20, seed: int | None = 0, *,
                 n_bins: int = 15, binning: str = "uniform", on_progress: ProgressCallback | None = None,
                 should_stop: StopCallback | None = None) -> SubsetStudy:
    """Every metric on random subsets of a test set, from 100 rows to all of them.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    metrics : sequence of str or callable, or mapping of name to either
        Keys of :data:`calib_core.METRICS` (computed with ``n_bins`` and
        ``binning``) or ``metric(probs, labels) -> float``.
    sizes : iterable of int, optional
        Subset sizes (<= N); default: 10 sizes equally spaced in log2 from
        100 to N (Gruber & Buettner 2022, appendix G.2).
    repetitions : int, default 20
        Random subsets per size (drawn without replacement); the full set is
        evaluated once.
    seed : int, optional
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}, default "uniform"
    on_progress : callable, optional
        ``on_progress(done, total)`` after each size, in evaluated rows.
    should_stop : callable, optional
        Checked before each size.

    Returns
    -------
    SubsetStudy

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels, metrics, sizes or repetitions.

    Notes
    -----
    A metric whose mean moves with the subset size is biased at the small
    sizes (the binned ECE of a well-calibrated model falls roughly like
    ``1 / sqrt(n)``, Gruber & Buettner D.5); its spread says how much one
    test set of that size can be trusted.
    """
    probs, labels = check_probs_labels(probs, labels)
    n_rows = probs.shape[0]
    functions = _metric_functions(metrics, check_n_bins(n_bins), check_binning(binning))
    repetitions = _check_count(repetitions, "repetitions")
    chosen_sizes = default_subset_sizes(n_rows) if sizes is None else _check_sizes(sizes, minimum=1)
    if chosen_sizes[-1] > n_rows:
        raise CalibrationInputError(f"`sizes` must not exceed the {n_rows} rows, got {chosen_sizes[-1]}.")
    rng = np.random.default_rng(seed)
    total = sum(n * (1 if n == n_rows else repetitions) for n in chosen_sizes)
    rows: list[tuple[str, int, int, float]] = []
    done = 0
    stopped = False
    for n in chosen_sizes:
        if should_stop is not None and should_stop():
            stopped = True
            break
        count = 1 if n == n_rows else repetitions
        for r in range(count):
            index = np.arange(n_rows) if n == n_rows else rng.choice(n_rows, size=n, replace=False)
            sub_probs, sub_labels = probs[index], labels[index]
            for name, function in functions.items():
                rows.append((name, n, r, float(function(sub_probs, sub_labels))))
        done += n * count
        if on_progress is not None:
            on_progress(done, total)
    values = pd.DataFrame(rows, columns=["metric", "size", "repetition", "value"])
    full = {name: float(function(probs, labels)) for name, function in functions.items()}
    if values.empty:
        summary = pd.DataFrame(columns=["metric", "size", "mean", "std", "q05", "q95", "full_value",
                                        "relative_spread", "repetitions"])
    else:
        grouped = values.groupby(["metric", "size"], sort=False)["value"]
        summary = grouped.agg(mean="mean", std="std", q05=lambda v: v.quantile(0.05),
                              q95=lambda v: v.quantile(0.95), repetitions="count").reset_index()
        summary["std"] = summary["std"].fillna(0.0)
        summary["full_value"] = summary["metric"].map(full)
        with np.errstate(divide="ignore", invalid="ignore"):
            summary["relative_spread"] = summary["std"] / summary["full_value"].abs()
        summary = summary[["metric", "size", "mean", "std", "q05", "q95", "full_value", "relative_spread",
                           "repetitions"]]
    return SubsetStudy(values, summary, chosen_sizes, n_rows, stopped)


# =========================================================================== bin-count rank stability
#: The 32 GCE variants in the order of Nixon et al. (2019), appendix C:
#: (binning, max_prob, class_conditional, threshold, norm).
GCE_VARIANTS: tuple[tuple[str, bool, bool, float, str], ...] = tuple(
    (binning, max_prob, class_conditional, threshold, norm)
    for binning in ("uniform", "adaptive")
    for max_prob in (True, False)
    for class_conditional in (True, False)
    for threshold in (0.0, 0.01)
    for norm in ("l1", "l2")
)


@dataclass(frozen=True)
class RankStability:
    """Output of :func:`bin_rank_stability`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per GCE variant (``variant`` 0-31 in Nixon et al.'s order):
        ``binning``, ``max_prob``, ``class_conditional``, ``threshold``,
        ``norm``, ``mean_spearman`` (mean over all pairs of bin counts of the
        Spearman correlation of the models' values), ``min_spearman`` and
        ``pairs`` (pairs with a defined correlation).
    by_property : pandas.DataFrame
        ``property``, ``setting`` (as text, e.g. ``"adaptive"``, ``"True"``,
        ``"0.01"``), ``mean_spearman``: the mean over the 16 variants sharing
        each setting (as Nixon et al. report "adaptive 0.59, even 0.37").
    values : ndarray of shape (32, len(bin_counts), len(models))
        The GCE value of every variant, bin count and model (for heatmaps).
    correlations : ndarray of shape (32, len(bin_counts), len(bin_counts))
        Spearman correlation between the model orderings at two bin counts.
    bin_counts : tuple of int
    models : tuple of str
    stopped : bool
    """

    table: pd.DataFrame
    by_property: pd.DataFrame
    values: NDArray[np.float64]
    correlations: NDArray[np.float64]
    bin_counts: tuple[int, ...]
    models: tuple[str, ...]
    stopped: bool


def bin_rank_stability(models: Mapping[str, tuple[ArrayLike, ArrayLike]], bin_counts: Iterable[int] = range(10, 51),
                       *, on_progress: ProgressCallback | None = None,
                       should_stop: StopCallback | None = None) -> RankStability:
    """Stability of the ranking of models across bin counts for the 32 GCE variants (Nixon et al. 5.3).

    Parameters
    ----------
    models : mapping of str to (probs, labels)
        At least two models (or recalibrations) evaluated on their test sets.
    bin_counts : iterable of int, default range(10, 51)
        At least two bin counts.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each variant.
    should_stop : callable, optional
        Checked before each variant; the rows of unfinished variants are NaN.

    Returns
    -------
    RankStability

    Raises
    ------
    CalibrationInputError
        Fewer than two models or bin counts, or invalid predictions/labels.

    Notes
    -----
    For each variant, the models' values at each bin count are ranked, and
    Spearman's rho (:func:`scipy.stats.spearmanr`, average ranks for ties) is
    taken between every pair of bin counts; the table reports the mean over
    the pairs (pairs where every model ties are undefined and skipped). 1
    means the bin count never changes which model looks better calibrated.
    Nixon et al. (2019, section 5.3) find adaptive binning clearly more
    stable than even binning (mean rank correlation 0.59 vs 0.37 on
    CIFAR-10). The values are those of :func:`calib_core.gce` (the tests
    check all 32 variants against it), computed from sets sorted once per
    model so that a bin count costs O(B) per set.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> p = {t: np.column_stack([1 - s, s]) for t, s in
    ...      {"sharp": np.clip(y * 0.8 + 0.1, 0, 1), "soft": np.full(400, 0.5), "mid": np.clip(y * 0.4 + 0.3, 0, 1)}.items()}
    >>> result = bin_rank_stability({k: (v, y) for k, v in p.items()}, bin_counts=[10, 20])
    >>> result.table.shape
    (32, 9)
    """
    if not isinstance(models, Mapping) or len(models) < 2:
        raise CalibrationInputError("`models` must map at least two model names to (probs, labels).")
    checked = {}
    for name, pair in models.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise CalibrationInputError(f"model {name!r} must be given as (probs, labels), got {type(pair).__name__}.")
        try:
            checked[str(name)] = check_probs_labels(*pair)
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"model {name!r}: {exc}") from exc
    counts = _check_sizes(bin_counts, minimum=1)
    if len(counts) < 2:
        raise CalibrationInputError("`bin_counts` must hold at least two different bin counts.")
    names = tuple(checked)
    prepared = {name: _GceSets(*checked[name]) for name in names}
    values = np.full((len(GCE_VARIANTS), len(counts), len(names)), np.nan)
    correlations = np.full((len(GCE_VARIANTS), len(counts), len(counts)), np.nan)
    stopped = False
    upper = np.triu_indices(len(counts), k=1)
    for v, (binning, max_prob, class_conditional, threshold, norm) in enumerate(GCE_VARIANTS):
        if should_stop is not None and should_stop():
            stopped = True
            break
        for m, name in enumerate(names):
            values[v, :, m] = prepared[name].gce(counts, binning, max_prob, class_conditional, threshold, norm)
        correlations[v] = _spearman_matrix(values[v])
        if on_progress is not None:
            on_progress(v + 1, len(GCE_VARIANTS))
    pair_values = correlations[:, upper[0], upper[1]]
    defined = np.isfinite(pair_values)
    with np.errstate(invalid="ignore"):
        mean = np.where(defined.any(axis=1), np.nansum(pair_values, axis=1) / np.maximum(defined.sum(axis=1), 1),
                        np.nan)
        minimum = np.where(defined.any(axis=1), np.nanmin(np.where(defined, pair_values, np.inf), axis=1), np.nan)
    table = pd.DataFrame({
        "variant": np.arange(len(GCE_VARIANTS)),
        "binning": [v[0] for v in GCE_VARIANTS],
        "max_prob": [v[1] for v in GCE_VARIANTS],
        "class_conditional": [v[2] for v in GCE_VARIANTS],
        "threshold": [v[3] for v in GCE_VARIANTS],
        "norm": [v[4] for v in GCE_VARIANTS],
        "mean_spearman": mean,
        "min_spearman": minimum,
        "pairs": defined.sum(axis=1),
    })
    by_property = []
    for column in ("binning", "max_prob", "class_conditional", "threshold", "norm"):
        for setting, group in table.groupby(column, sort=False):
            # Settings as text: 0.0 and False would otherwise merge in an index.
            by_property.append({"property": column, "setting": str(setting),
                                "mean_spearman": float(group["mean_spearman"].mean())})
    return RankStability(table, pd.DataFrame(by_property), values, correlations, counts, names, stopped)


class _GceSets:
    """The sets of values that the GCE variants bin, each sorted once, for fast bin-count sweeps.

    For a sorted set, any bin's count and sums are differences of cumulative
    sums at the bin's end positions, so a bin count costs O(B) per set
    instead of a new sort. The values equal :func:`calib_core.gce`'s
    (uniform bins right-closed, adaptive bins ``array_split`` runs extended
    over ties, values ``<= threshold`` dropped).
    """

    def __init__(self, probs: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        self.probs, self.labels = probs, labels
        self.n_classes = probs.shape[1]
        self._cache: dict[tuple[bool, bool, float], list[tuple[NDArray, NDArray, NDArray, NDArray]]] = {}

    def _sets(self, max_prob: bool, class_conditional: bool, threshold: float):
        key = (max_prob, class_conditional, threshold)
        if key not in self._cache:
            probs, labels = self.probs, self.labels
            raw: list[tuple[NDArray, NDArray]] = []
            if class_conditional:
                predicted = probs.argmax(axis=1)
                for k in range(self.n_classes):
                    keep = probs[:, k] > threshold
                    if max_prob:
                        keep &= predicted == k
                    raw.append((probs[keep, k], (labels[keep] == k).astype(np.float64)))
            else:
                if max_prob:
                    values, targets = binned.top_label(probs, labels)
                else:
                    values = probs.ravel()
                    targets = (np.arange(self.n_classes) == labels[:, None]).ravel().astype(np.float64)
                kept = values > threshold
                raw.append((values[kept], targets[kept]))
            prepared = []
            for values, targets in raw:
                order = np.argsort(values)
                sorted_values = values[order]
                cum_values = np.concatenate([[0.0], np.cumsum(sorted_values)])
                cum_targets = np.concatenate([[0.0], np.cumsum(targets[order])])
                m = sorted_values.shape[0]
                group_ends = np.concatenate([np.flatnonzero(np.diff(sorted_values) > 0) + 1, [m]]) if m else \
                    np.zeros(0, dtype=np.intp)
                prepared.append((sorted_values, cum_values, cum_targets, group_ends))
            self._cache[key] = prepared
        return self._cache[key]

    @staticmethod
    def _part(prepared, n_bins: int, binning: str, norm: str) -> float:
        sorted_values, cum_values, cum_targets, group_ends = prepared
        m = sorted_values.shape[0]
        if m == 0:
            return 0.0
        if binning == "uniform":
            edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
            ends = np.concatenate([np.searchsorted(sorted_values, edges, side="right"), [m]])
        else:
            run = np.arange(1, n_bins + 1)
            ends = np.minimum(run * (m // n_bins) + np.minimum(run, m % n_bins), m)
            ends = group_ends[np.searchsorted(group_ends, ends[ends > 0], side="left")]
        ends = np.unique(ends[ends > 0])
        starts = np.concatenate([[0], ends[:-1]])
        count = (ends - starts).astype(np.float64)
        difference = (cum_values[ends] - cum_values[starts]) - (cum_targets[ends] - cum_targets[starts])
        if norm == "l1":
            return float(np.abs(difference).sum() / m)
        return float(np.sum(difference**2 / count) / m)

    def gce(self, counts: Sequence[int], binning: str, max_prob: bool, class_conditional: bool, threshold: float,
            norm: str) -> NDArray[np.float64]:
        """``calib_core.gce`` of this model at every bin count in ``counts``."""
        sets = self._sets(max_prob, class_conditional, threshold)
        out = np.empty(len(counts))
        for i, n_bins in enumerate(counts):
            parts = [self._part(prepared, n_bins, binning, norm) for prepared in sets]
            value = float(np.mean(parts)) if class_conditional else parts[0]
            out[i] = math.sqrt(value) if norm == "l2" else value
        return out


def _spearman_matrix(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Spearman correlations between the rows (bin counts) of a (counts, models) matrix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant rows (all models tie) give NaN, reported as undefined
        rho = spearmanr(values, axis=1).statistic
    rho = np.atleast_2d(np.asarray(rho, dtype=np.float64))
    if rho.shape != (values.shape[0], values.shape[0]):  # spearmanr returns a scalar for two rows
        scalar = float(rho.ravel()[0])
        rho = np.array([[1.0, scalar], [scalar, 1.0]])
    return rho


# =========================================================================== pathology gallery
@dataclass(frozen=True)
class Pathology:
    """One case of the gallery.

    Attributes
    ----------
    key : str
    title : str
    explanation : str
        What the numbers show, in a few sentences.
    reference : str
        Paper and place.
    compute : callable
        ``compute() -> dict[str, float]``: the case's numbers, computed live.
    documented : mapping of str to float
        Values the paper states, for the keys of ``compute()`` it states.
    """

    key: str
    title: str
    explanation: str
    reference: str
    compute: Callable[[], dict[str, float]] = field(repr=False)
    documented: Mapping[str, float] = field(default_factory=dict)


def nixon_figure4_data() -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The predictions of Nixon et al. (2019), Figure 4: 450 x (0.52 wrong) and 550 x (0.58 right)."""
    probs = np.array([[0.52, 0.48]] * 450 + [[0.58, 0.42]] * 550)
    labels = np.array([1] * 450 + [0] * 550, dtype=np.intp)
    return probs, labels


def _nixon_numbers() -> dict[str, float]:
    probs, labels = nixon_figure4_data()
    confidence, correct = binned.top_label(probs, labels)
    return {
        "ece_10_bins": binned.ece(probs, labels, n_bins=10),
        "ece_100_bins": binned.ece(probs, labels, n_bins=100),
        "mean_confidence": float(confidence.mean()),
        "accuracy": float(correct.mean()),
        "mean_abs_gap_per_prediction": float(np.abs(confidence - correct).mean()),
        "ace": float(binned.ace(probs, labels, n_bins=10)),
        "sce_10_bins": binned.sce(probs, labels, n_bins=10),
    }


#: Vaicenavicius et al. (2019), Example 3 / Table 2: the two equally likely
#: predictions and the true conditional distribution of Y given each.
EXAMPLE3_PREDICTIONS = np.array([[0.5, 0.3, 0.2], [0.5, 0.2, 0.3]])
EXAMPLE3_CONDITIONALS = np.array([[0.5, 0.2, 0.3], [0.5, 0.3, 0.2]])


def _example3_numbers(n: int = 20_000, seed: int = 0) -> dict[str, float]:
    predictions, conditionals = EXAMPLE3_PREDICTIONS, EXAMPLE3_CONDITIONALS
    rng = np.random.default_rng(seed)
    which = rng.integers(0, 2, n)
    probs = predictions[which]
    uniform = rng.random(n)
    labels = (np.cumsum(conditionals[which], axis=1) < uniform[:, None]).sum(axis=1)
    top = predictions.argmax(axis=1)
    numbers = {
        "true_top_label_tce": float(np.mean(np.abs(predictions.max(axis=1) - conditionals[[0, 1], top]))),
        "true_classwise_tce": float(np.mean(np.abs(predictions - conditionals).mean(axis=0))),
        "true_canonical_tv": float(np.mean(0.5 * np.abs(predictions - conditionals).sum(axis=1))),
        "ece_estimate": binned.ece(probs, labels, n_bins=15),
        "classwise_ece_estimate": binned.classwise_ece(probs, labels, n_bins=15),
    }
    numbers["canonical_ce_estimate"] = float(canonical_ce(probs, labels, partition="data_dependent",
                                                          min_bin_size=n // 2))
    return numbers


def _one_bin_estimate(probs: NDArray[np.float64], labels: NDArray[np.intp]) -> float:
    """The expected-miscalibration estimate with a single bin (the canonical CE of one cell).

    For two classes it equals ``|mean prediction of class 0 - frequency of class 0|``.
    """
    return float(canonical_ce(probs, labels, partition="data_dependent", min_bin_size=max(probs.shape[0], 1)))


def _example5_numbers() -> dict[str, float]:
    perfect = np.array([[1.0, 0.0]])
    constant = np.array([[0.5, 0.5]])
    numbers = {
        "perfect_one_point_estimate": _one_bin_estimate(perfect, np.array([0])),
        "constant_one_point_estimate": _one_bin_estimate(constant, np.array([1])),
        "true_eta_tv_both": 0.0,
    }
    # Expected one-bin estimate of the constant model with n points: E|mean(Y) - 1/2|, Y ~ Bernoulli(1/2).
    for n in (1, 10, 100, 1000):
        k = np.arange(n + 1)
        numbers[f"constant_expected_estimate_n{n}"] = float(np.sum(binom.pmf(k, n, 0.5) * np.abs(k / n - 0.5)))
    return numbers


def _accuracy_map(probs: NDArray[np.float64], accuracy: float) -> NDArray[np.float64]:
    """Gruber & Buettner's t^f: the top entry becomes the accuracy, the others share the rest equally."""
    n, k = probs.shape
    mapped = np.full((n, k), (1.0 - accuracy) / (k - 1))
    mapped[np.arange(n), probs.argmax(axis=1)] = accuracy
    return mapped


def _gruber_d2_numbers(n: int = 20_000, seed: int = 0) -> dict[str, float]:
    model = LogisticNormalModel(n_classes=10, temperature=1.0, scale=215.0, model_seed=0)
    data = model.sample(n, seed=seed)
    accuracy = binned.accuracy(data.probs, data.labels)
    mapped = _accuracy_map(data.probs, accuracy)
    # Truth of the mapped model: t(g(X)) reveals only the arg-max C, so
    # E[Y | t(g(X))] = E[p | C], estimated on the noise-free reference sample.
    points, calibration = model.reference_sample()
    top = points.argmax(axis=1)
    population_accuracy = float(calibration[np.arange(points.shape[0]), top].mean())
    class_mean = np.zeros((model.n_classes, model.n_classes))
    for k in range(model.n_classes):
        chosen = top == k
        if chosen.any():
            class_mean[k] = calibration[chosen].mean(axis=0)
    mapped_reference = _accuracy_map(points, population_accuracy)
    numbers = {
        "accuracy_before": accuracy,
        "accuracy_after": binned.accuracy(mapped, data.labels),
        "ece_before": binned.ece(data.probs, data.labels),
        "ece_after": binned.ece(mapped, data.labels),
        "classwise_ece_after": binned.classwise_ece(mapped, data.labels),
        "brier_before": scores.brier_score(data.probs, data.labels),
        "brier_after": scores.brier_score(mapped, data.labels),
        "true_canonical_tv_after": float(0.5 * np.abs(mapped_reference - class_mean[top]).sum(axis=1).mean()),
    }
    numbers["canonical_ce_after"] = float(canonical_ce(mapped, data.labels, partition="data_dependent"))
    return numbers


def _sharp_vs_constant_numbers(n: int = 1000, repetitions: int = 200, seed: int = 0) -> dict[str, float]:
    numbers: dict[str, float] = {}
    estimators = [ece_estimator(10, "uniform", key="ece_10"), ece_estimator(100, "uniform", key="ece_100")]
    for case in ("perfect", "constant"):
        model = gaussian_mixture(case)
        data = model.sample(20_000, seed=seed)
        numbers[f"{case}_accuracy"] = model.truth()["accuracy"]
        numbers[f"{case}_brier"] = scores.brier_score(data.probs, data.labels)
        numbers[f"{case}_true_tce"] = model.truth()["tce"]
        result = run_lab(model, estimators, sizes=[n], repetitions=repetitions, seed=seed)
        means = result.summary.set_index("estimator")["mean"]
        numbers[f"{case}_mean_ece_10_bins_n{n}"] = float(means["ece_10"])
        numbers[f"{case}_mean_ece_100_bins_n{n}"] = float(means["ece_100"])
    return numbers


def pathologies() -> tuple[Pathology, ...]:
    """The gallery of cases where a calibration number misleads, each computed live.

    Returns
    -------
    tuple of Pathology
        ``nixon_cancellation``, ``vaicenavicius_example3``,
        ``vaicenavicius_example5``, ``gruber_accuracy_map``,
        ``sharp_vs_constant``; call ``case.compute()`` for the numbers.

    Examples
    --------
    >>> case = pathologies()[0]
    >>> round(case.compute()["ece_10_bins"], 6)
    0.003
    """
    return (
        Pathology(
            "nixon_cancellation",
            "Over- and under-confidence cancel inside one bin",
            "450 predictions at confidence 0.52 are all wrong and 550 at 0.58 are all right. With 10 bins both "
            "groups share the bin (0.5, 0.6], whose mean confidence 0.553 almost equals its accuracy 0.55, so "
            "the ECE is 0.003 although every single prediction is off by about 0.47. With 100 bins the groups "
            "separate and the ECE jumps to 0.465.",
            "Nixon et al. 2019, Figure 4",
            _nixon_numbers,
            {"ece_10_bins": 0.003},
        ),
        Pathology(
            "vaicenavicius_example3",
            "Top-label calibrated, yet every other class is off",
            "The model predicts (0.5, 0.3, 0.2) or (0.5, 0.2, 0.3), each half of the time, while the true "
            "distributions are (0.5, 0.2, 0.3) and (0.5, 0.3, 0.2). The top class is right half of the time "
            "at confidence 0.5, so ECE and top-label TCE are 0; the second and third classes are mis-stated by "
            "0.1 each time, which only the class-wise and canonical errors see.",
            "Vaicenavicius et al. 2019, appendix A.1, Example 3 (Table 2 reconstructed from the text)",
            _example3_numbers,
            {"true_top_label_tce": 0.0, "true_canonical_tv": 0.1},
        ),
        Pathology(
            "vaicenavicius_example5",
            "Same true error, different estimator bias",
            "On perfectly separable data both the perfect model and the constant model (1/2, 1/2) are "
            "calibrated (true error 0). With one bin and one data point the estimate is always 0 for the "
            "perfect model and always 1/2 for the constant one; with n points the constant model's expected "
            "estimate is E|mean(Y) - 1/2|, which shrinks only like 1/sqrt(n).",
            "Vaicenavicius et al. 2019, appendix A.1, Example 5",
            _example5_numbers,
            {"perfect_one_point_estimate": 0.0, "constant_one_point_estimate": 0.5},
        ),
        Pathology(
            "gruber_accuracy_map",
            "ECE 0 with the same accuracy, but not calibrated",
            "Replace each prediction's top entry by the model's accuracy and spread the rest evenly (the map "
            "t^f of Gruber & Buettner). Accuracy is unchanged and the ECE becomes exactly 0, yet the "
            "prediction now says nothing about which other classes are likely: its canonical (and class-wise) "
            "calibration error is clearly positive and the Brier score gets worse. ECE = 0 does not imply "
            "calibration (Theorem 3.1).",
            "Gruber & Buettner 2022, appendix D.2 (Theorem 3.1) and D.4 (Proposition D.2)",
            _gruber_d2_numbers,
            {"ece_after": 0.0},
        ),
        Pathology(
            "sharp_vs_constant",
            "Two calibrated models: sharp and useless",
            "In the Gaussian-mixture problem the Bayes-optimal model and the constant model (1/2, 1/2) are both "
            "perfectly calibrated, so every calibration error is 0 for both; only accuracy and the Brier score "
            "(sharpness) tell them apart. Their ECE estimates are biased differently: the sharp model spreads "
            "over many bins, so its estimate grows with the bin count, the constant model's does not.",
            "Vaicenavicius et al. 2019, appendix C.1 (Figures 6-7 vs 9-10); Gruber & Buettner 2022, Lemma 4.1",
            _sharp_vs_constant_numbers,
            {"perfect_true_tce": 0.0, "constant_true_tce": 0.0},
        ),
    )
