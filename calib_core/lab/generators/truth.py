"""What every generator shares: the true-error keys, the results, the reference-sample truths.

A generator (:mod:`calib_core.lab.generators.logistic`,
:mod:`calib_core.lab.generators.multiclass`) only draws predictions, labels and
the calibration function; this module turns a noise-free reference sample of
them into the population errors (:class:`GroundTruth`, see the package Notes
for how each is computed), and gives every model ``sample``,
``sample_batch``, ``truth`` and ``reference_sample``.

References
----------
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, Definition 3,
   eq. (19) and appendix D.5 (the binned truth).
.. [Kumar2019] Kumar, A., Liang, P. & Ma, T. "Verified Uncertainty Calibration",
   NeurIPS 2019 (the debiasing of the squared error of run means).
.. [Vaicenavicius2019] Vaicenavicius, J. et al. "Evaluating model calibration in
   classification", AISTATS 2019, Theorem 2.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from calib_core.binning import bin_index
from calib_core.validation import CalibrationInputError, check_binning, check_choice, check_count, check_n_bins

__all__ = ["ERROR_KEYS", "FINE_BIN_SIZE", "GroundTruth", "SimulatedData", "TRUTH_KEYS", "binned_truth"]

#: The population quantities a :class:`GroundTruth` holds, and which estimator
#: of calib_core targets each. ``C = argmax_k g_k``, ``c = g_C`` (confidence),
#: ``r(g) = E[Y | g(X) = g]`` (canonical calibration function).
TRUTH_KEYS: Mapping[str, str] = MappingProxyType({
    "accuracy": "P(Y = C); accuracy",
    "tce": "top-label TCE_1 = E|c - P(Y = C | c)|; ece (any binning) and ece_sweep estimate it",
    "tce_l2": "top-label TCE_2 = sqrt(E (c - P(Y = C | c))^2); ece(norm='l2') and debiased_ece estimate it",
    "ks": "top-label KS error (Gupta et al. 2021): sup_t |E[(c - 1{Y = C}) 1{c <= t}]|; ks_error",
    "mmce": "MMCE with the Laplacian kernel exp(-|c - c'| / 0.4) on the confidence; mmce",
    "classwise_tce": "(1/K) sum_k E|g_k - P(Y = k | g_k)|; classwise_ece",
    "classwise_ce_kl": "(1/K) sum_k E[KL(P(Y = k | g_k) || g_k)] (binary KL); kde_ce(kl, classwise=True)",
    "classwise_ce_l2_sq": "(1/K) sum_k 2 E[(P(Y = k | g_k) - g_k)^2]; kde_ce(l2, classwise=True)",
    "canonical_tv": "E[TV(r(g), g)] = E[||r(g) - g||_1] / 2 (eta_TV); canonical_ce(distance='tv')",
    "canonical_sq": "E||r(g) - g||_2^2 = CE_2^2; canonical_ce(distance='sq_euclidean'), kde_ce(l2)",
    "ce_kl": "E[KL(r(g) || g)] = CE_KL; kde_ce(kl)",
    "skce": "SKCE with kernel exp(-||g - g'||_2 / h) I, h = GroundTruth.skce_bandwidth; skce",
})

#: Calibration errors (every key of :data:`TRUTH_KEYS` but the accuracy).
ERROR_KEYS = tuple(key for key in TRUTH_KEYS if key != "accuracy")

#: Reference predictions per run when a conditional expectation given a 1-D
#: summary is estimated by run means (see the module Notes).
FINE_BIN_SIZE = 1000

#: Bandwidth of the MMCE truth (the default of :func:`calib_core.metrics.kernel.mmce`).
MMCE_BANDWIDTH = 0.4

#: Seed of the reference samples behind the Monte Carlo truths, so that the
#: true values are the same numbers in every session.
REFERENCE_SEED = 20240917

#: Elements (rows x classes) of one reference-sample block.
_REFERENCE_ELEMENTS = 4_000_000

Seed = int | np.random.Generator | np.random.SeedSequence | None


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class GroundTruth:
    """Population values of the calibration errors of a model.

    Attributes
    ----------
    values : mapping of str to float
        One entry per key of :data:`TRUTH_KEYS` (NaN where a key is not
        defined, e.g. a KL divergence with a zero prediction).
    method : mapping of str to str
        How each value was computed ("exact", "quadrature", "grid",
        "Monte Carlo", "fine-binned Monte Carlo").
    skce_bandwidth : float
        The bandwidth ``h`` of ``values["skce"]``: the median distance
        ``||g(X) - g(X')||_2`` between two independent predictions.
    mmce_bandwidth : float
        The bandwidth of ``values["mmce"]``.
    n_reference : int
        Size of the noise-free reference sample behind the Monte Carlo values.
    """

    values: Mapping[str, float]
    method: Mapping[str, str]
    skce_bandwidth: float
    mmce_bandwidth: float
    n_reference: int

    def __getitem__(self, key: str) -> float:
        if key not in self.values:
            known = ", ".join(self.values)
            raise CalibrationInputError(f"unknown true error {key!r}; known: {known}.")
        return self.values[key]

    def as_dict(self) -> dict[str, float]:
        """The values as a plain ``{key: value}`` dictionary."""
        return dict(self.values)


@dataclass(frozen=True)
class SimulatedData:
    """One simulated test set with the truth about its model.

    Attributes
    ----------
    probs : ndarray of shape (N, K)
        Predictions ``g(x_i)``.
    labels : ndarray of shape (N,)
        Labels drawn from the data distribution.
    calibrated : ndarray of shape (N, K)
        The calibration function at each prediction, ``E[Y | g(X) = g(x_i)]``.
    model : object
        The generator that drew the sample; ``truth`` (a property) is its
        :class:`GroundTruth`.
    """

    probs: NDArray[np.float64]
    labels: NDArray[np.intp]
    calibrated: NDArray[np.float64]
    model: object

    @property
    def truth(self) -> GroundTruth:
        """Population values of the errors (they describe the model, not this sample); computed on first use."""
        return self.model.truth()

    @property
    def true_values(self) -> dict[str, float]:
        """Shortcut for ``truth.as_dict()``."""
        return self.truth.as_dict()


# --------------------------------------------------------------------------- helpers
def _rng(seed: Seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def sample_categorical(probs: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.intp]:
    """One class index per row of ``probs`` (last axis), drawn with those probabilities.

    Inverse-CDF sampling, vectorised over every leading axis: the label is the
    number of cumulative sums below a uniform draw.
    """
    uniform = rng.random(probs.shape[:-1])
    cumulative = np.cumsum(probs, axis=-1)
    labels = (cumulative < uniform[..., None]).sum(axis=-1)
    return np.minimum(labels, probs.shape[-1] - 1).astype(np.intp)


def _run_statistics(values: NDArray[np.float64], targets: NDArray[np.float64]) -> tuple[float, float, float]:
    """Errors of ``v`` against ``E[t | v]`` estimated from runs of sorted reference values.

    The sorted values are cut into runs of :data:`FINE_BIN_SIZE` (a run is
    extended over tied values, so equal values share a run), and ``E[t | v]``
    is taken as the run mean of ``t``.

    Returns
    -------
    l1 : float
        ``E|v - E[t | v]|``.
    l2_sq : float
        ``E(v - E[t | v])^2``, minus the variance of each run mean (the
        debiasing of Kumar et al. 2019), so Monte Carlo noise does not add to it.
    kl : float
        ``E[KL_bin(E[t | v] || v)]`` for binary outcomes (``v``, ``t`` in [0, 1]).
    """
    n = values.shape[0]
    order = np.argsort(values)
    v, t = values[order], targets[order]
    ends = np.arange(FINE_BIN_SIZE, n, FINE_BIN_SIZE)
    ends = np.unique(np.searchsorted(v, v[ends - 1], side="right"))
    starts = np.concatenate([[0], ends[ends < n]])
    count = np.diff(np.concatenate([starts, [n]])).astype(np.float64)
    gap = v - t
    sum_gap = np.add.reduceat(gap, starts)
    sum_sq = np.add.reduceat(gap * gap, starts)
    mean = sum_gap / count
    l1 = float(np.abs(sum_gap).sum() / n)
    within = np.where(count > 1, (sum_sq - count * mean**2) / np.maximum(count - 1.0, 1.0), 0.0)
    l2_sq = float(np.sum(count * mean**2 - within) / n)
    conditional = np.repeat(np.add.reduceat(t, starts) / count, count.astype(np.intp))
    return l1, max(l2_sq, 0.0), _binary_kl_mean(conditional, v)


def _laplacian_u_statistic(values: NDArray[np.float64], weights: NDArray[np.float64], bandwidth: float) -> float:
    """``sum_{i != j} w_i w_j exp(-|v_i - v_j| / h) / (M (M - 1))`` in O(M log M).

    After sorting, ``sum_{j < i} w_j exp(-(v_i - v_j)/h)`` is a running sum of
    ``w_j exp(v_j / h)`` times ``exp(-v_i / h)``; values lie in [0, 1], so the
    exponentials stay below ``exp(1 / h)``.
    """
    order = np.argsort(values)
    scaled = values[order] / bandwidth
    shift = scaled.max()
    w = weights[order]
    running = np.cumsum(w * np.exp(scaled - shift))
    prefix = np.concatenate([[0.0], running[:-1]]) * np.exp(shift - scaled)
    m = values.shape[0]
    return float(2.0 * np.dot(w, prefix) / (m * (m - 1.0)))


def _reference_truth(points: NDArray[np.float64], calibration: NDArray[np.float64],
                     keys: tuple[str, ...] = tuple(TRUTH_KEYS)) -> tuple[dict, dict, float]:
    """The errors named in ``keys`` from noise-free predictions and their calibration function.

    ``points`` and ``calibration`` are ``(M, K)`` arrays of ``g(x_i)`` and
    ``r(g(x_i))``; the first half of the rows is paired with the second half
    for the double expectation of SKCE and its median-distance bandwidth.
    """
    m, n_classes = points.shape
    rows = np.arange(m)
    top = points.argmax(axis=1)
    confidence = points[rows, top]
    top_calibration = calibration[rows, top]
    values: dict[str, float] = {}
    method: dict[str, str] = {}
    mc = f"Monte Carlo (M={m:,} reference predictions)"
    fine = f"fine-binned Monte Carlo (M={m:,}, runs of {FINE_BIN_SIZE})"
    wanted = set(keys)

    values["accuracy"] = float(top_calibration.mean())
    method["accuracy"] = mc
    if wanted & {"tce", "tce_l2"}:
        tce, tce_sq, _ = _run_statistics(confidence, top_calibration)
        values["tce"], values["tce_l2"] = tce, math.sqrt(tce_sq)
        method["tce"] = method["tce_l2"] = fine
    if "ks" in wanted:
        order = np.argsort(confidence)
        values["ks"] = float(np.abs(np.cumsum((confidence - top_calibration)[order])).max() / m)
        method["ks"] = mc
    if "mmce" in wanted:
        mmce_sq = _laplacian_u_statistic(confidence, top_calibration - confidence, MMCE_BANDWIDTH)
        values["mmce"] = math.sqrt(max(mmce_sq, 0.0))
        method["mmce"] = mc + ", U-statistic"
    if wanted & {"classwise_tce", "classwise_ce_l2_sq", "classwise_ce_kl"}:
        parts = np.array([_run_statistics(points[:, k], calibration[:, k]) for k in range(n_classes)])
        values["classwise_tce"] = float(parts[:, 0].mean())
        values["classwise_ce_l2_sq"] = float(2.0 * parts[:, 1].mean())
        values["classwise_ce_kl"] = float(parts[:, 2].mean())
        method["classwise_tce"] = method["classwise_ce_l2_sq"] = method["classwise_ce_kl"] = fine
    difference = calibration - points
    if wanted & {"canonical_tv", "canonical_sq", "ce_kl"}:
        values["canonical_tv"] = float(0.5 * np.abs(difference).sum(axis=1).mean())
        values["canonical_sq"] = float((difference**2).sum(axis=1).mean())
        values["ce_kl"] = _kl_mean(calibration, points)
        method["canonical_tv"] = method["canonical_sq"] = method["ce_kl"] = mc
    half = m // 2
    distance = np.linalg.norm(points[:half] - points[half: 2 * half], axis=1)
    bandwidth = float(np.median(distance))
    if "skce" in wanted:
        inner = np.einsum("ij,ij->i", difference[:half], difference[half: 2 * half])
        values["skce"] = float(np.mean(np.exp(-distance / bandwidth) * inner)) if bandwidth > 0 else float("nan")
        method["skce"] = f"Monte Carlo ({half:,} independent pairs)"
    return values, method, bandwidth


def _kl_mean(p: NDArray[np.float64], q: NDArray[np.float64]) -> float:
    """Mean over rows of ``KL(p || q) = sum_k p_k log(p_k / q_k)`` (q floored at 1e-12 as kde_ce)."""
    return float(np.mean(np.sum(p * (np.log(np.maximum(p, 1e-300)) - np.log(np.maximum(q, 1e-12))), axis=1)))


def _binary_kl_mean(p: NDArray[np.float64], q: NDArray[np.float64]) -> float:
    """Mean of the binary ``KL((p, 1-p) || (q, 1-q))`` (q floored at 1e-12 as kde_ce)."""
    tiny = 1e-300
    kl = p * (np.log(np.maximum(p, tiny)) - np.log(np.maximum(q, 1e-12)))
    kl += (1.0 - p) * (np.log(np.maximum(1.0 - p, tiny)) - np.log(np.maximum(1.0 - q, 1e-12)))
    return float(kl.mean())


def _zero_truth(accuracy: float, accuracy_method: str, bandwidth: float, n_reference: int) -> GroundTruth:
    values = {key: 0.0 for key in ERROR_KEYS}
    values["accuracy"] = accuracy
    method = {key: "exact (calibrated by construction)" for key in ERROR_KEYS}
    method["accuracy"] = accuracy_method
    return GroundTruth(MappingProxyType(values), MappingProxyType(method), bandwidth, MMCE_BANDWIDTH, n_reference)


def _ordered(values: dict[str, float]) -> dict[str, float]:
    return {key: values.get(key, float("nan")) for key in TRUTH_KEYS}


class _Model:
    """Shared sampling and truth plumbing of the generators (a mixin for frozen dataclasses)."""

    n_classes: int

    # Subclasses implement _draw(n, repetitions, rng) -> (probs, labels, calibrated).
    def sample_batch(self, n: int, repetitions: int = 1, rng: Seed = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Draw ``repetitions`` independent test sets of ``n`` rows at once.

        Parameters
        ----------
        n : int
            Rows per test set.
        repetitions : int, default 1
        rng : int, numpy.random.Generator or SeedSequence, optional

        Returns
        -------
        probs : ndarray of shape (repetitions, n, K)
        labels : ndarray of shape (repetitions, n)
        """
        n = check_count(n, "n")
        repetitions = check_count(repetitions, "repetitions")
        probs, labels, _ = self._draw(n, repetitions, _rng(rng))
        return probs, labels

    def sample(self, n: int, *, seed: Seed = None) -> SimulatedData:
        """One test set of ``n`` rows with its calibration function and the true errors.

        Examples
        --------
        >>> from calib_core.lab.generators import LogisticModel
        >>> data = LogisticModel(0.0, -2.0).sample(1000, seed=0)
        >>> data.probs.shape, data.truth["tce"]
        ((1000, 2), 0.0)
        """
        n = check_count(n, "n")
        probs, labels, calibrated = self._draw(n, 1, _rng(seed))
        return SimulatedData(probs[0], labels[0], calibrated[0], self)

    def truth(self) -> GroundTruth:
        """Population values of every error in :data:`TRUTH_KEYS` (computed once, then cached)."""
        return _cached_truth(self)

    def reference_sample(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The fixed noise-free reference predictions and their calibration function.

        Returns
        -------
        points, calibration : ndarrays of shape (M, K)
            ``M`` is :attr:`n_reference`; the same arrays in every session
            (seeded with :data:`REFERENCE_SEED`).
        """
        return _cached_reference(self)

    @property
    def n_reference(self) -> int:
        """Size of the reference sample (fewer rows for many classes, to bound memory)."""
        return int(min(1_000_000, max(100_000, 2_000_000 // self.n_classes)))

    def _reference(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        m = self.n_reference
        rng = np.random.default_rng(REFERENCE_SEED)
        block = max(1, _REFERENCE_ELEMENTS // self.n_classes)
        points, calibration = [], []
        for start in range(0, m, block):
            p, _, r = self._draw(min(block, m - start), 1, rng, with_labels=False)
            points.append(p[0])
            calibration.append(r[0])
        return np.concatenate(points), np.concatenate(calibration)

    def _truth(self, keys: tuple[str, ...] = ERROR_KEYS) -> GroundTruth:
        """Truth from the reference sample; ``keys`` limits the Monte Carlo work."""
        points, calibration = self.reference_sample()
        m = points.shape[0]
        if self.is_calibrated:
            accuracy = float(calibration[np.arange(m), points.argmax(axis=1)].mean())
            half = m // 2
            bandwidth = float(np.median(np.linalg.norm(points[:half] - points[half: 2 * half], axis=1)))
            return _zero_truth(accuracy, f"Monte Carlo (M={m:,} reference predictions)", bandwidth, m)
        values, method, bandwidth = _reference_truth(points, calibration, keys)
        return GroundTruth(MappingProxyType(_ordered(values)), MappingProxyType(_ordered_text(method)), bandwidth,
                           MMCE_BANDWIDTH, m)


def _ordered_text(method: dict[str, str]) -> dict[str, str]:
    return {key: method.get(key, "not available") for key in TRUTH_KEYS}


@functools.lru_cache(maxsize=16)
def _cached_truth(model: _Model) -> GroundTruth:
    return model._truth()


@functools.lru_cache(maxsize=2)
def _cached_reference(model: _Model) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    points, calibration = model._reference()
    points.setflags(write=False)
    calibration.setflags(write=False)
    return points, calibration


# --------------------------------------------------------------------------- binned truth
def binned_truth(model: _Model, n_bins: int = 15, binning: str = "uniform", *, norm: str = "l1") -> float:
    """Population value of the binned top-label ECE with fixed bins (what ``ece`` converges to).

    Parameters
    ----------
    model : LogisticModel, LogisticNormalModel or UniformSimplexModel
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Adaptive bins use the quantiles of the model's confidence.
    norm : {"l1", "l2"}

    Returns
    -------
    float
        :math:`\\sum_b P(c \\in B_b)\\, |E[c \\mid B_b] - P(Y = C \\mid B_b)|`
        (Gruber & Buettner 2022, Definition 3 and eq. 19; Vaicenavicius et al.
        2019, Theorem 2: it is at most the TCE). 0 for calibrated models.

    Notes
    -----
    For the logistic model with uniform bins, each bin's mass and gap are
    integrals over x (quadrature); otherwise they come from the model's
    noise-free reference sample with the exact calibration function:
    ``P(Y = C | B_b)`` is the mean of ``r_C(g)`` over the bin. Gruber & Buettner (appendix D.5) show that the expected estimate
    exceeds this value and decreases towards it as N grows.

    Examples
    --------
    >>> from calib_core.lab.generators import LogisticModel
    >>> binned_truth(LogisticModel(0.0, -2.0), 15)
    0.0
    """
    if not isinstance(model, _Model):
        raise CalibrationInputError(f"`model` must be a ground-truth generator, got {type(model).__name__}.")
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    norm = check_choice(norm, "norm", ("l1", "l2"))
    if model.is_calibrated:
        return 0.0
    closed_form = getattr(model, "_binned_truth", None)  # the logistic model integrates uniform bins exactly
    if closed_form is not None and binning == "uniform":
        return closed_form(n_bins, norm)
    points, calibration = model.reference_sample()
    rows = np.arange(points.shape[0])
    top = points.argmax(axis=1)
    confidence = points[rows, top]
    gap = confidence - calibration[rows, top]
    index = bin_index(confidence, n_bins, binning)
    count = np.bincount(index, minlength=n_bins)
    sum_gap = np.bincount(index, weights=gap, minlength=n_bins)
    m = points.shape[0]
    if norm == "l1":
        return float(np.abs(sum_gap).sum() / m)
    return float(np.sqrt(np.sum(np.where(count > 0, sum_gap**2 / np.maximum(count, 1), 0.0)) / m))
