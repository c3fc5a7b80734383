"""Proper-score decompositions and the chain of calibration bounds.

* :func:`score_decomposition` - Brier or log score = calibration + refinement
  = entropy - sharpness + calibration (Gruber & Buettner 2022, Lemma 4.1), with
  the leave-one-out Dirichlet-kernel estimate of ``E[Y | g(X)]`` of
  :mod:`calib_core.metrics.kde` (Popordanoska et al. 2024, eq. 3-5, 13-15).
* :func:`calibration_upper_bound` - the root Brier score (Theorem 4.3).
* :func:`calibrated_bias` - what those kernel estimates give on labels drawn
  from the predictions themselves, where the true calibration error is 0: the
  estimator's bias at this N, K and bandwidth.
* :func:`bound_chain` - estimates of every term of Gruber & Buettner's eq. 6,
  which adjacent pairs respect the order, and which broken pairs finite-sample
  estimators explain (:attr:`ChainLink.exact`).

References
----------
.. [Popordanoska2024] Popordanoska, T., Gruber, S. G., Tiulpin, A., Buettner, F. &
   Blaschko, M. B. "Consistent and Asymptotically Unbiased Estimation of Proper
   Calibration Errors", AISTATS 2024.
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core.metrics.binned import top_label
from calib_core.metrics.kde import (
    bregman_ce,
    check_bandwidth,
    check_bandwidth_grid,
    check_min_rows,
    loo_conditional_mean,
    loo_conditional_means,
    neg_entropy,
    one_vs_rest_points,
    resolve_bandwidth,
)
from calib_core.validation import (check_binning, check_choice, check_n_bins, check_positive, check_probs,
                                   check_probs_labels, check_sample_weight, repeated_probs_labels)

__all__ = [
    "BoundChain",
    "CALIBRATED_DRAWS",
    "ChainLink",
    "ChainTerm",
    "ScoreDecomposition",
    "bound_chain",
    "calibrated_bias",
    "calibration_upper_bound",
    "score_decomposition",
]

#: score in :func:`score_decomposition` and :func:`calibration_upper_bound`,
#: as :func:`calib_core.nll` does. :func:`kde_ce` does not floor them (only
#: an exact 0 becomes the smallest positive double), like the reference code.
LOG_EPSILON = 1e-12

_SCORES = ("brier", "log")


# --------------------------------------------------------------------------- decomposition
@compact_display
@dataclass(frozen=True)
class ScoreDecomposition:
    """Calibration-sharpness decomposition of an empirical Brier or log score.

    Attributes
    ----------
    score : str
        ``"brier"`` or ``"log"``.
    empirical_score : float
        Mean score of the predictions: the Brier score (:func:`calib_core.brier_score`)
        or the negative log-likelihood (:func:`calib_core.nll`).
    entropy : float
        Generalised entropy :math:`g_S(\\bar y)` of the class frequencies
        :math:`\\bar y` (``1 - ||ybar||^2`` or Shannon entropy in nats): the
        score of always predicting the base rates.
    sharpness : float
        ``entropy - refinement`` (for the log score an estimate of the mutual
        information between prediction and label).
    refinement : float
        :math:`\\frac1n\\sum_h g_S(\\hat r_h)`, the mean generalised entropy of
        the kernel estimates :math:`\\hat r_h` of E[Y | g(x_h)].
    calibration : float
        ``empirical_score - refinement``: the refinement-based calibration
        error of eq. 14 (``kde_ce(..., estimator="refinement")``).
    calibration_direct : float
        The direct estimate of eq. 9 (``kde_ce(..., estimator="direct")``),
        for comparison; it is not part of the sums.
    bandwidth : float
        Dirichlet kernel bandwidth used for :math:`\\hat r_h`.
    """

    score: str
    empirical_score: float
    entropy: float
    sharpness: float
    refinement: float
    calibration: float
    calibration_direct: float
    bandwidth: float


def _generalized_entropy(points: NDArray[np.float64], score: str) -> NDArray[np.float64]:
    if score == "brier":
        return 1.0 - np.einsum("ij,ij->i", points, points)
    return -neg_entropy(points)


def _empirical_score(probs: NDArray[np.float64], labels: NDArray[np.intp], score: str,
                     weights: NDArray[np.float64] | None = None) -> float:
    """The mean Brier or log score of the rows (weighted by checked ``weights``: integer weights repeat rows)."""
    true_prob = probs[np.arange(probs.shape[0]), labels]
    if score == "brier":
        rows = np.einsum("ij,ij->i", probs, probs) - 2.0 * true_prob + 1.0
    else:
        rows = -np.log(np.maximum(true_prob, LOG_EPSILON))
    return float(np.mean(rows)) if weights is None else float(np.dot(weights, rows) / weights.sum())


def score_decomposition(probs: ArrayLike, labels: ArrayLike, score: str = "brier", *,
                        bandwidth: float | str = 0.01,
                        bandwidth_grid: ArrayLike | None = None,
                        sample_weight: ArrayLike | None = None) -> ScoreDecomposition:
    """Split an empirical Brier or log score into calibration, refinement and sharpness.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, N >= 2.
    labels : array_like of shape (N,)
        True classes.
    score : {"brier", "log"}, default "brier"
    bandwidth : float or "auto", default 0.01
        Dirichlet kernel bandwidth of the estimate of E[Y | g(X)].
    bandwidth_grid : array_like, optional
        Candidates for ``bandwidth="auto"``.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (its calibration term is a
        leave-one-out kernel estimate, whose copies of a row stay neighbours; ``docs/weights.md``). Other
        weights raise :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    ScoreDecomposition
        ``empirical_score == calibration + refinement
        == entropy - sharpness + calibration`` up to rounding (1e-12).

    Notes
    -----
    Population identity (Gruber & Buettner 2022, Lemma 4.1; Popordanoska et
    al. 2024, eq. 3-5 and 53):

    .. math:: E[S(g(X), Y)] = \\underbrace{g_S(P_Y)}_{\\text{entropy}}
              - \\underbrace{E[d_S(P_Y, P_{Y|g(X)})]}_{\\text{sharpness}}
              + \\underbrace{E[d_S(g(X), P_{Y|g(X)})]}_{\\text{calibration}},
              \\qquad \\text{refinement} = E[g_S(P_{Y|g(X)})] = \\text{entropy} - \\text{sharpness}.

    Estimates: :math:`P_{Y|g(x_h)}` is replaced by the leave-one-out
    Dirichlet-kernel estimate :math:`\\hat r_h` (eq. 11-12, 15;
    :func:`kde_conditional_expectation`) and :math:`P_Y` by the class
    frequencies :math:`\\bar y`. Refinement is the plug-in mean
    :math:`\\frac1n \\sum_h g_S(\\hat r_h)` (eq. 15, up to the constant
    :math:`E[F(Y)]`, which is 1 for Brier and 0 for log); calibration is the
    refinement-based estimator of eq. 14, ``empirical_score - refinement``;
    sharpness is ``entropy - refinement`` (eq. 5). The terms therefore add up
    by the identity of eq. 13 (score = calibration + refinement), exactly in
    exact arithmetic. The direct plug-ins :math:`\\frac1n\\sum_h
    d_S(g(x_h), \\hat r_h)` and :math:`\\frac1n\\sum_h d_S(\\bar y, \\hat r_h)`
    would not add up, because the mean of the leave-one-out estimates
    differs from :math:`\\bar y`; the direct calibration estimate (eq. 9) is
    reported separately as ``calibration_direct``. Calibration may be
    slightly negative for a calibrated model (finite-sample noise). The log
    score floors probabilities at 1e-12 inside the logarithm (as ``nll``).

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]]
    >>> d = score_decomposition(p, [0, 0, 1, 1], "brier", bandwidth=0.5)
    >>> round(d.calibration + d.refinement - d.empirical_score, 12)
    0.0
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`score_decomposition`")
    score = check_choice(score, "score", _SCORES)
    bandwidth = check_bandwidth(bandwidth)
    grid = check_bandwidth_grid(bandwidth_grid)
    check_min_rows(probs.shape[0], "score_decomposition")
    bandwidth = resolve_bandwidth(probs, bandwidth, grid)
    conditional = loo_conditional_mean(probs, labels, bandwidth)
    empirical = _empirical_score(probs, labels, score)
    frequencies = np.bincount(labels, minlength=probs.shape[1]) / probs.shape[0]
    entropy = float(_generalized_entropy(frequencies[None, :], score)[0])
    refinement = float(np.mean(_generalized_entropy(conditional, score)))
    divergence = "l2" if score == "brier" else "kl"
    return ScoreDecomposition(
        score=score,
        empirical_score=empirical,
        entropy=entropy,
        sharpness=entropy - refinement,
        refinement=refinement,
        calibration=empirical - refinement,
        calibration_direct=bregman_ce(probs, labels, conditional, divergence, "direct"),
        bandwidth=bandwidth,
    )


#: Label draws of :func:`calibrated_bias` (its value is a mean over them; the bias is systematic, so a few
#: draws pin it down: over 20 seeds on the 899-row digits demo the 4-draw mean moved by under 10 % of itself).
CALIBRATED_DRAWS = 4

#: Bytes of the label draws :func:`calibrated_bias` sends through one kernel pass: their one-hot labels and
#: conditional means, 2 x 8 x N x K bytes per draw (at 3,000 x 300 all four draws at once peaked at 101 MB,
#: 3.5 times CE_KL's own 29 MB). At least one draw per pass: above N x K = 262,144 each draw has its own pass
#: (4 kernel passes instead of 1: memory bounded, time x 4 for the bias check at that size).
DRAW_CHUNK_BYTES = 1 << 23


def calibrated_bias(probs: ArrayLike, *, bandwidth: float = 0.01, n_draws: int = CALIBRATED_DRAWS,
                    seed: int = 0) -> dict[tuple[str, str], float]:
    """The kernel calibration estimates on labels drawn from the predictions: their bias at this N, K and h.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, N >= 2.
    bandwidth : float, default 0.01
        Dirichlet kernel bandwidth (as given to :func:`calib_core.kde_ce` and
        :func:`score_decomposition`).
    n_draws : int, default CALIBRATED_DRAWS
        Sets of labels drawn; the result is the mean over them.
    seed : int, default 0
        Seeds the draws.

    Returns
    -------
    dict
        ``{(divergence, estimator): mean estimate}`` for divergence ``"kl"``
        and ``"l2"`` and estimator ``"direct"`` (eq. 9, :func:`kde_ce`) and
        ``"refinement"`` (eq. 14, the ``calibration`` of
        :func:`score_decomposition`).

    Notes
    -----
    Labels drawn as :math:`y^*_h \\sim \\mathrm{Cat}(g(x_h))` make the model
    calibrated by construction, :math:`P(Y^* | g(X)) = g(X)`, so every true
    calibration error of ``(probs, y*)`` is 0 and whatever an estimator
    returns on them is its bias at these predictions (consistency resampling:
    Broecker & Smith 2007; Vaicenavicius et al. 2019, section 4). The
    leave-one-out Dirichlet estimate (Popordanoska et al. 2024, eq. 11-15) is
    consistent with an O(1/N) bias (Proposition 5.2), but at a small
    bandwidth and many classes each row borrows the labels of a few
    neighbours, so :math:`\\hat r_h` is close to one-hot and both estimates of
    CE_2^2 approach the Brier score itself. The draws share passes over the
    kernel (:func:`calib_core.metrics.kde.loo_conditional_means`), as many
    per pass as :data:`DRAW_CHUNK_BYTES` allows (the memory of one pass grows
    with the draws it holds; the numbers do not depend on the chunks).

    Examples
    --------
    >>> import numpy as np
    >>> p = np.random.default_rng(0).dirichlet(np.ones(3), 200)
    >>> bias = calibrated_bias(p, bandwidth=0.1)
    >>> sorted(bias)
    [('kl', 'direct'), ('kl', 'refinement'), ('l2', 'direct'), ('l2', 'refinement')]
    """
    probs = check_probs(probs)
    bandwidth = check_positive(bandwidth, "bandwidth")
    n_draws = int(check_positive(n_draws, "n_draws"))
    check_min_rows(probs.shape[0], "calibrated_bias")
    rng = np.random.default_rng(seed)
    n_rows, n_classes = probs.shape
    cumulative = np.cumsum(probs, axis=1)
    uniforms = rng.random((n_draws, n_rows, 1))  # all drawn first: the same labels whatever the chunks
    chunk = max(1, DRAW_CHUNK_BYTES // (2 * 8 * n_rows * n_classes))
    keys = [(divergence, estimator) for divergence in ("kl", "l2") for estimator in ("direct", "refinement")]
    values: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
    for start in range(0, n_draws, chunk):
        draws = (uniforms[start:start + chunk] > cumulative[None, :, :]).sum(axis=2)
        draws = np.minimum(draws, n_classes - 1).astype(np.intp)
        for labels, conditional in zip(draws, loo_conditional_means(probs, draws, bandwidth)):
            for divergence, estimator in keys:
                values[divergence, estimator].append(bregman_ce(probs, labels, conditional, divergence, estimator))
    return {key: float(np.mean(values[key])) for key in keys}


def calibration_upper_bound(probs: ArrayLike, labels: ArrayLike, *, score: str = "brier",
                            sample_weight: ArrayLike | None = None) -> float:
    """Calibration upper bound of Gruber & Buettner 2022 (Theorem 4.3): the root Brier score.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    score : {"brier", "log"}, default "brier"
        ``"brier"``: :math:`\\sqrt{\\mathrm{BS}}`, an upper bound of
        :math:`\\mathrm{CE}_2` (eq. 6 with p = 2). ``"log"``: the NLL, an upper
        bound of :math:`\\mathrm{CE}_{KL}`.
    sample_weight : array_like of shape (N,), optional
        Row weights: the score is their weighted mean (integer weights repeat rows).

    Returns
    -------
    float

    Notes
    -----
    :math:`\\mathcal U_S(f) = E[S(f(X), Y)] - \\inf_P g_S(P) \\ge \\mathrm{CE}_S(f)`
    (Theorem 4.3, proof eq. 35). The generalised entropies of the Brier and
    log scores are 0 at the vertices of the simplex, so :math:`\\mathcal U`
    is the score itself: :math:`\\mathrm{BS} \\ge \\mathrm{CE}_2^2` and
    :math:`\\mathrm{NLL} \\ge \\mathrm{CE}_{KL}`. The bound becomes tight as the
    accuracy goes to 1, and changes under injective recalibration exactly as
    the calibration error does (Proposition 4.5). The empirical Brier score
    is the minimum-variance unbiased estimate of BS; its square root is
    consistent for RBS.

    Examples
    --------
    >>> round(calibration_upper_bound([[0.8, 0.2], [0.5, 0.5]], [0, 1]), 6)  # sqrt(0.29)
    0.538516
    """
    probs, labels = check_probs_labels(probs, labels)
    score = check_choice(score, "score", _SCORES)
    value = _empirical_score(probs, labels, score, check_sample_weight(sample_weight, labels.size))
    return float(np.sqrt(value)) if score == "brier" else value


# --------------------------------------------------------------------------- bound chain
@dataclass(frozen=True)
class ChainTerm:
    """One term of the chain of calibration errors (Gruber & Buettner 2022, eq. 6).

    Attributes
    ----------
    key : str
        ``"sqrt2"``, ``"rbs"``, ``"ce2"``, ``"cwce2"``, ``"tce2"``, ``"tce1"``,
        ``"ks"``, ``"ece"`` or ``"mmce"``.
    label : str
        Display name, e.g. ``"CE_2"``.
    value : float
        The estimate.
    estimator : str
        How it was estimated.
    """

    key: str
    label: str
    value: float
    estimator: str


@dataclass(frozen=True)
class ChainLink:
    """One inequality ``upper >= lower`` of the chain and whether the estimates respect it.

    Attributes
    ----------
    upper, lower : str
        Term keys.
    upper_value, lower_value : float
    holds : bool
        ``upper_value >= lower_value`` (within ``atol``).
    exact : bool
        The estimates obey the inequality on every sample, not only the true
        quantities: a break would signal a bug, not a finite-sample effect.
    explanation : str
        In plain words, why estimates may break it (or why they never can).
    """

    upper: str
    lower: str
    upper_value: float
    lower_value: float
    holds: bool
    exact: bool = False
    explanation: str = ""

    @property
    def gap(self) -> float:
        """``upper_value - lower_value`` (negative where the order is broken)."""
        return self.upper_value - self.lower_value


@dataclass(frozen=True)
class BoundChain:
    """Estimates of every term of Gruber & Buettner's eq. 6 and the order between them.

    Attributes
    ----------
    terms : tuple of ChainTerm
        From the top of the chain to the bottom.
    links : tuple of ChainLink
        Each adjacent inequality of the chain.
    """

    terms: tuple[ChainTerm, ...]
    links: tuple[ChainLink, ...]

    @property
    def values(self) -> dict[str, float]:
        """``{key: value}`` of all terms."""
        return {term.key: term.value for term in self.terms}

    @property
    def all_hold(self) -> bool:
        """True when every estimated inequality holds."""
        return all(link.holds for link in self.links)

    @property
    def broken(self) -> tuple[ChainLink, ...]:
        """The links whose estimates violate the population order."""
        return tuple(link for link in self.links if not link.holds)

    @property
    def expected_breaks(self) -> tuple[ChainLink, ...]:
        """Broken links that finite-sample estimators explain (biased or differently smoothed estimates)."""
        return tuple(link for link in self.broken if not link.exact)

    @property
    def bug_breaks(self) -> tuple[ChainLink, ...]:
        """Broken links that the estimates obey on every sample: each would signal a bug."""
        return tuple(link for link in self.broken if link.exact)


#: The inequalities of eq. 6 (p = 2), upper key -> lower key.
CHAIN_LINKS = (
    ("sqrt2", "rbs"), ("rbs", "ce2"), ("ce2", "cwce2"), ("cwce2", "tce2"),
    ("tce2", "tce1"), ("tce1", "ks"), ("tce1", "ece"), ("tce1", "mmce"),
)

#: Why each link's estimates may break it, in plain words (``{rows}``: the rows it was estimated on).
_UPWARD = "biased upwards on few rows"
CHAIN_EXPLANATIONS = {
    ("sqrt2", "rbs"): "a Brier score is at most 2 for any data, so this never breaks; a break would be a bug",
    ("rbs", "ce2"): ("√BS is exact, CE₂ a kernel estimate: with few rows per region of the simplex (small N, many "
                     "classes, a small bandwidth) it is biased upwards and can pass √BS; CE₂ is then unreliable "
                     "here, the model is not to blame"),
    ("ce2", "cwce2"): ("CE₂ and CWCE₂ are estimated with different kernels (one on the whole simplex, one per "
                       "class), each with its own bias; on a finite sample the class-wise one can come out larger"),
    ("cwce2", "tce2"): ("class-wise and top-label errors are estimated on different quantities with their own "
                        "smoothing; on a finite sample their order can flip"),
    ("tce2", "tce1"): ("the root mean square of the same gaps is never below their mean (Jensen's inequality), for "
                       "the estimates too; a break would be a bug"),
    ("tce1", "ks"): ("the KS error is another estimator, noisier on few rows, while the kernel TCE₁ smooths the gaps "
                     "and so shrinks them: the KS error can come out larger on a finite sample"),
    ("tce1", "ece"): (f"the binned ECE is {_UPWARD} per bin, while the kernel TCE₁ smooths the gaps and so shrinks "
                      "them: the ECE can come out larger on a finite sample"),
    ("tce1", "mmce"): (f"the MMCE is a V-statistic, {_UPWARD}, while the kernel TCE₁ shrinks the gaps: the MMCE "
                       "can come out larger on a finite sample"),
}


def _exact_link(upper: str, lower: str, estimator: str) -> tuple[bool, str]:
    """Whether the estimates of ``upper >= lower`` obey it on every sample, and why they may break it."""
    if (upper, lower) == ("tce1", "ece") and estimator == "binned":
        return True, "with binned estimates TCE₁ is the ECE itself; a break would be a bug"
    return (upper, lower) in (("sqrt2", "rbs"), ("tce2", "tce1")), CHAIN_EXPLANATIONS[upper, lower]


def _kde_binary_gap(values: NDArray[np.float64], targets: NDArray[np.intp], bandwidth: float | str,
                    grid: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """``r_h - v_h`` with r_h the leave-one-out Beta-kernel estimate of P(target = 1 | v_h)."""
    points = one_vs_rest_points(values)
    conditional = loo_conditional_mean(points, targets, resolve_bandwidth(points, bandwidth, grid))
    return conditional[:, 1] - values


def bound_chain(probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                estimator: str = "kde", bandwidth: float | str = 0.01,
                bandwidth_grid: ArrayLike | None = None, mmce_bandwidth: float = 0.4,
                atol: float = 1e-12,
                sample_weight: ArrayLike | None = None) -> BoundChain:
    """Estimate every term of Gruber & Buettner's chain of calibration errors (eq. 6, p = 2).

    .. math:: \\sqrt 2 \\ge \\sqrt{\\mathrm{BS}} \\ge \\mathrm{CE}_2 \\ge \\mathrm{CWCE}_2
              \\ge \\mathrm{TCE}_2 \\ge \\mathrm{TCE}_1 \\ge
              \\{\\mathrm{KS},\\ \\mathrm{ECE},\\ c \\cdot \\mathrm{MMCE}\\}

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, N >= 2.
    labels : array_like of shape (N,)
        True classes.
    n_bins : int, default 15
        Bins of the ECE (and of the binned CWCE_2, TCE_2, TCE_1).
    binning : {"uniform", "adaptive"}, default "uniform"
    estimator : {"kde", "binned"}, default "kde"
        Estimator of CWCE_2, TCE_2 and TCE_1. ``"kde"``: leave-one-out
        Beta-kernel estimates of P(Y = k | g_k) and P(Y = C | g_C) (the
        consistent estimators of Popordanoska et al. 2024, appendix D), so
        that TCE_1 and the binned ECE are different estimates. ``"binned"``:
        the plug-in binned estimates (``classwise_ece`` and ``ece`` with
        ``norm="l2"`` / ``"l1"``); TCE_1 then equals the ECE estimate.
    bandwidth : float or "auto", default 0.01
        Kernel bandwidth for CE_2 (Dirichlet) and the kde terms (Beta).
    bandwidth_grid : array_like, optional
        Candidates for ``bandwidth="auto"``.
    mmce_bandwidth : float, default 0.4
        Bandwidth of :func:`calib_core.mmce`.
    atol : float, default 1e-12
        An inequality counts as respected when ``upper >= lower - atol``.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (its kernel terms are leave-
        one-out estimates; ``docs/weights.md``). Other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    BoundChain

    Notes
    -----
    Terms (Gruber & Buettner 2022, appendix C definitions; D.2 Theorem 3.1):

    * ``sqrt2``: :math:`\\sqrt 2`, the largest possible :math:`\\sqrt{\\mathrm{BS}}`.
    * ``rbs``: root of the empirical Brier score, the calibration upper bound
      of Theorem 4.3 (:func:`calibration_upper_bound`).
    * ``ce2``: canonical :math:`\\mathrm{CE}_2 = \\sqrt{E\\|E[Y|g(X)] - g(X)\\|_2^2}`,
      the root of ``kde_ce(..., divergence="l2")`` (Dirichlet kernel, eq. 9).
    * ``cwce2``: :math:`\\mathrm{CWCE}_2 = (\\sum_k E[(g_k - P(Y=k|g_k))^2])^{1/2}`
      (definition C.1: a sum over classes, no 1/K).
    * ``tce2``, ``tce1``: :math:`\\mathrm{TCE}_p = (E|g_C - P(Y=C|g_C)|^p)^{1/p}`
      on the top-label confidence :math:`g_C`.
    * ``ks``: :func:`calib_core.ks_error`; ``ece``: :func:`calib_core.ece`
      with ``n_bins`` and ``binning``; ``mmce``: :func:`calib_core.mmce` with
      :math:`c = \\sqrt{\\max_r k(r, r)} = 1` for its Laplacian kernel.

    The population quantities always respect the order. Estimates need not:
    kernel estimates of CE_2 and CWCE_2 smooth differently, the MMCE and
    binned estimates are biased upwards for small samples (Proposition
    3.3), the ECE is a lower bound of TCE_1 only in the population. With the
    kde estimator TCE_2 >= TCE_1 holds for the estimates too (Jensen on the
    empirical mean), and with the binned one TCE_1 = ECE. Each link says
    which (:attr:`ChainLink.exact`: a break of such a link signals a bug;
    :attr:`BoundChain.expected_breaks` are the others) and why, in words
    (:attr:`ChainLink.explanation`).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet([1, 1, 1], 300)
    >>> y = np.array([rng.choice(3, p=row) for row in p])
    >>> chain = bound_chain(p, y)
    >>> [t.key for t in chain.terms][:3]
    ['sqrt2', 'rbs', 'ce2']
    """
    from calib_core.metrics.binned import classwise_ece, ece
    from calib_core.metrics.kernel import mmce
    from calib_core.metrics.scores import ks_error

    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`bound_chain`")
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    estimator = check_choice(estimator, "estimator", ("kde", "binned"))
    bandwidth = check_bandwidth(bandwidth)
    grid = check_bandwidth_grid(bandwidth_grid)
    mmce_bandwidth = check_positive(mmce_bandwidth, "mmce_bandwidth")
    atol = check_positive(atol, "atol", allow_zero=True)
    check_min_rows(probs.shape[0], "bound_chain")

    ce2_bandwidth = resolve_bandwidth(probs, bandwidth, grid)
    ce2_squared = bregman_ce(probs, labels, loo_conditional_mean(probs, labels, ce2_bandwidth), "l2", "direct")
    kernel_name = f"leave-one-out Dirichlet kernel, h = {ce2_bandwidth:g}"
    if estimator == "kde":
        class_gaps = np.stack([
            _kde_binary_gap(probs[:, k], (labels == k).astype(np.intp), bandwidth, grid)
            for k in range(probs.shape[1])
        ])
        cwce2 = float(np.sqrt(np.sum(np.mean(class_gaps ** 2, axis=1))))
        confidence, correct = top_label(probs, labels)
        top_gap = _kde_binary_gap(confidence, correct.astype(np.intp), bandwidth, grid)
        tce2 = float(np.sqrt(np.mean(top_gap ** 2)))
        tce1 = float(np.mean(np.abs(top_gap)))
        how = "leave-one-out Beta kernel (one-vs-rest)"
        how_top = "leave-one-out Beta kernel on the top-label confidence"
    else:
        per_class = classwise_ece(probs, labels, n_bins=n_bins, binning=binning, norm="l2", per_class=True)
        cwce2 = float(np.sqrt(np.sum(np.asarray(per_class) ** 2)))
        tce2 = ece(probs, labels, n_bins=n_bins, binning=binning, norm="l2")
        tce1 = ece(probs, labels, n_bins=n_bins, binning=binning, norm="l1")
        how = f"binned, {n_bins} {binning} bins per class, summed over classes"
        how_top = f"binned, {n_bins} {binning} bins"
    terms = (
        ChainTerm("sqrt2", "sqrt(2)", float(np.sqrt(2.0)), "largest possible root Brier score"),
        ChainTerm("rbs", "sqrt(BS)", calibration_upper_bound(probs, labels), "root of the empirical Brier score"),
        ChainTerm("ce2", "CE_2", float(np.sqrt(max(ce2_squared, 0.0))), f"root of kde_ce l2 ({kernel_name})"),
        ChainTerm("cwce2", "CWCE_2", cwce2, how),
        ChainTerm("tce2", "TCE_2", tce2, how_top),
        ChainTerm("tce1", "TCE_1", tce1, how_top),
        ChainTerm("ks", "KS", ks_error(probs, labels), "Kolmogorov-Smirnov on the top-label confidence"),
        ChainTerm("ece", "ECE", ece(probs, labels, n_bins=n_bins, binning=binning),
                  f"binned, {n_bins} {binning} bins"),
        ChainTerm("mmce", "MMCE", mmce(probs, labels, bandwidth=mmce_bandwidth),
                  f"V-statistic, Laplacian kernel, bandwidth {mmce_bandwidth:g} (c = 1)"),
    )
    values = {term.key: term.value for term in terms}
    links = tuple(
        ChainLink(upper, lower, values[upper], values[lower], bool(values[upper] >= values[lower] - atol),
                  *_exact_link(upper, lower, estimator))
        for upper, lower in CHAIN_LINKS
    )
    return BoundChain(terms=terms, links=links)
