"""Proper calibration errors, score decompositions and the chain of calibration bounds.

* :func:`kde_ce` - Bregman ("proper") calibration errors CE_KL and CE_2^2 with the
  leave-one-out Dirichlet-kernel estimate of ``E[Y | g(X)]`` (Popordanoska et al.
  2024, eq. 9-15, appendix D-E), canonical or class-wise.
* :func:`score_decomposition` - Brier or log score = calibration + refinement
  = entropy - sharpness + calibration (Gruber & Buettner 2022, Lemma 4.1).
* :func:`calibration_upper_bound` - the root Brier score (Theorem 4.3).
* :func:`bound_chain` - estimates of every term of Gruber & Buettner's eq. 6 and
  which adjacent pairs respect the order.

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
from scipy.special import gammaln, xlogy

from calib_core.metrics.binned import top_label
from calib_core.metrics.kernel import EXP_FLOOR, map_blocks, row_blocks
from calib_core.validation import (
    CalibrationInputError,
    check_binning,
    check_choice,
    check_n_bins,
    check_positive,
    check_probs,
    check_probs_labels,
)

__all__ = [
    "BoundChain",
    "ChainLink",
    "ChainTerm",
    "DEFAULT_BANDWIDTH_GRID",
    "ScoreDecomposition",
    "bound_chain",
    "calibration_upper_bound",
    "kde_bandwidth",
    "kde_ce",
    "kde_conditional_expectation",
    "score_decomposition",
]

#: Probabilities are floored at this value inside the logarithm of the log
#: score in :func:`score_decomposition` and :func:`calibration_upper_bound`,
#: as :func:`calib_core.nll` does. :func:`kde_ce` does not floor them (only
#: an exact 0 becomes the smallest positive double), like the reference code.
LOG_EPSILON = 1e-12

#: Zero probabilities enter the Dirichlet kernel through log(tiny) instead of
#: log(0): the kernel weight ``x^(alpha - 1)`` is then 0 for ``alpha > 1`` and
#: 1 for ``alpha = 1`` (0 * log 0 = 0), the limits of the exact formula.
_LOG_FLOOR = float(np.log(np.finfo(np.float64).tiny))

#: The bandwidth grid of the reference implementation (Popordanoska et al.,
#: ``get_bandwidth``): 50 log-spaced values in [1e-5, 1e-1] and 0.2, 0.4, ..., 1.
DEFAULT_BANDWIDTH_GRID = np.concatenate([np.logspace(-5.0, -1.0, 50), np.linspace(0.2, 1.0, 5)])

#: Above this many rows, the leave-one-out likelihood of a bandwidth is
#: averaged over this many evaluation rows (each still uses all N kernels).
BANDWIDTH_MAX_EVAL_ROWS = 4000

_DIVERGENCES = ("kl", "l2")
_ESTIMATORS = ("direct", "refinement")
_SCORES = ("brier", "log")


# --------------------------------------------------------------------------- kernel
def _log_normalisers(points: NDArray[np.float64], bandwidth: float) -> NDArray[np.float64]:
    """Log normalising constant of the Dirichlet kernel centred at each row.

    ``log k(x_h, x_j) = sum_k (alpha_jk - 1) log x_hk + log C_j`` with
    ``alpha_j = x_j / bandwidth + 1`` and ``log C_j = lgamma(sum_k alpha_jk) -
    sum_k lgamma(alpha_jk)`` (Popordanoska et al. 2024, eq. 42-44).
    """
    alpha = points / bandwidth + 1.0
    log_norm = gammaln(alpha.sum(axis=1)) - gammaln(alpha).sum(axis=1)
    return log_norm


def _log_points(points: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.log(np.maximum(points, np.finfo(np.float64).tiny))


def _loo_log_kernel(log_points: NDArray, points: NDArray, log_norm: NDArray, bandwidth: float,
                    start: int, stop: int) -> NDArray[np.float64]:
    """Rows ``start:stop`` of the log Dirichlet kernel matrix, -inf on the diagonal (leave-one-out)."""
    block = log_points[start:stop] @ points.T
    block *= 1.0 / bandwidth
    block += log_norm[None, :]
    rows = np.arange(stop - start)
    block[rows, start + rows] = -np.inf
    return block


def _loo_conditional_mean(points: NDArray[np.float64], labels: NDArray[np.intp],
                          bandwidth: float) -> NDArray[np.float64]:
    """Leave-one-out Nadaraya-Watson estimate of E[Y | g(x_h)] with the Dirichlet kernel (eq. 11-12, 15)."""
    n, k = points.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), labels] = 1.0
    log_points = _log_points(points)
    log_norm = _log_normalisers(points, bandwidth)

    def block_mean(start: int, stop: int) -> NDArray[np.float64]:
        block = _loo_log_kernel(log_points, points, log_norm, bandwidth, start, stop)
        # log-sum-exp with the row maximum (appendix E.1, eq. 45): every ratio
        # sum_j k_hj y_j / sum_j k_hj is formed from exp(log k_hj - max_j log k_hj).
        block -= block.max(axis=1, keepdims=True)
        np.maximum(block, EXP_FLOOR, out=block)
        np.exp(block, out=block)
        return (block @ onehot) / block.sum(axis=1, keepdims=True)

    return np.concatenate(map_blocks(block_mean, row_blocks(n, n)))


def _likelihood_rows(points: NDArray[np.float64]) -> NDArray[np.intp]:
    """Rows at which the leave-one-out likelihood is evaluated.

    All rows up to :data:`BANDWIDTH_MAX_EVAL_ROWS`; above that, evenly spaced
    ranks of the rows sorted lexicographically, so the choice depends on the
    set of predictions only, not on their order.
    """
    n = points.shape[0]
    if n <= BANDWIDTH_MAX_EVAL_ROWS:
        return np.arange(n)
    order = np.lexsort(points.T[::-1])
    return np.sort(order[np.linspace(0, n - 1, BANDWIDTH_MAX_EVAL_ROWS).round().astype(np.intp)])


def _loo_log_likelihoods(points: NDArray[np.float64], grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean leave-one-out log-likelihood ``log((1/(n-1)) sum_{j != h} k(x_h, x_j))`` for each bandwidth."""
    n = points.shape[0]
    rows = _likelihood_rows(points)
    log_points = _log_points(points)
    log_norms = [_log_normalisers(points, float(b)) for b in grid]

    def block_totals(start: int, stop: int) -> NDArray[np.float64]:
        chosen = rows[start:stop]
        cross = log_points[chosen] @ points.T  # sum_k x_jk log x_hk, the same for every bandwidth
        local = np.arange(chosen.size)
        totals = np.empty(len(grid))
        for index, bandwidth in enumerate(grid):
            block = cross * (1.0 / bandwidth)
            block += log_norms[index][None, :]
            block[local, chosen] = -np.inf
            peak = block.max(axis=1)
            block -= peak[:, None]
            np.maximum(block, EXP_FLOOR, out=block)
            np.exp(block, out=block)
            totals[index] = float(np.sum(peak + np.log(block.sum(axis=1))))
        return totals

    totals = np.sum(map_blocks(block_totals, row_blocks(rows.size, n)), axis=0)
    return totals / rows.size - np.log(n - 1)


def _select_bandwidth(points: NDArray[np.float64], grid: NDArray[np.float64] | None) -> float:
    if grid is not None:
        likelihoods = _loo_log_likelihoods(points, grid)
        return float(grid[int(np.argmax(likelihoods))])
    # Default grid: every third value first, then the neighbours of the best one.
    grid = DEFAULT_BANDWIDTH_GRID
    coarse = np.arange(0, grid.size, 3)
    values = _loo_log_likelihoods(points, grid[coarse])
    best = int(coarse[int(np.argmax(values))])
    fine = np.array([i for i in range(best - 2, best + 3) if 0 <= i < grid.size and i % 3 != 0], dtype=np.intp)
    candidates = np.concatenate([coarse, fine])
    if fine.size:
        values = np.concatenate([values, _loo_log_likelihoods(points, grid[fine])])
    # Ties go to the smaller bandwidth, as a scan from the smallest would give.
    order = np.lexsort((grid[candidates], -values))
    return float(grid[candidates[order[0]]])


def _check_bandwidth(bandwidth: object) -> float | str:
    if isinstance(bandwidth, str):
        if bandwidth != "auto":
            raise CalibrationInputError(f"`bandwidth` must be a positive number or 'auto', got {bandwidth!r}.")
        return bandwidth
    return check_positive(bandwidth, "bandwidth")


def _check_grid(grid: ArrayLike | None) -> NDArray[np.float64] | None:
    if grid is None:
        return None
    values = np.asarray(grid, dtype=np.float64).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise CalibrationInputError(
            f"`bandwidth_grid` must be a non-empty list of positive finite numbers, got {grid!r}."
        )
    return np.unique(values)


def _resolve_bandwidth(points: NDArray[np.float64], bandwidth: float | str,
                       grid: NDArray[np.float64] | None) -> float:
    return _select_bandwidth(points, grid) if bandwidth == "auto" else float(bandwidth)


def _binary(column: NDArray[np.float64]) -> NDArray[np.float64]:
    """One-vs-rest prediction ``[1 - p_k, p_k]`` (class 1 = "is class k")."""
    return np.column_stack([1.0 - column, column])


def _check_min_rows(n: int, name: str) -> None:
    if n < 2:
        raise CalibrationInputError(f"`{name}` needs at least 2 rows (it leaves one out), `probs` has {n}.")


# --------------------------------------------------------------------------- public: E[Y|g(X)]
def kde_bandwidth(probs: ArrayLike, *, bandwidth_grid: ArrayLike | None = None) -> float:
    """Dirichlet-kernel bandwidth that maximises the leave-one-out likelihood of the predictions.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predictions, N >= 2.
    bandwidth_grid : array_like, optional
        Candidate bandwidths, all evaluated. By default the reference grid
        :data:`DEFAULT_BANDWIDTH_GRID` (55 values in [1e-5, 1]) is searched
        coarse-to-fine: every third value, then the neighbours of the best.

    Returns
    -------
    float

    Notes
    -----
    Maximises :math:`\\sum_h \\log \\frac{1}{N-1} \\sum_{j \\ne h} k_{Dir}(g(x_h), g(x_j))`
    (Popordanoska et al. 2024, section 7: "leave-one-out maximum likelihood").
    Each candidate costs one pass over the kernel matrix in row blocks. For
    N > :data:`BANDWIDTH_MAX_EVAL_ROWS` (4000) the mean log-likelihood is
    taken over 4000 evaluation rows (evenly spaced in lexicographic order,
    so the result does not depend on the row order), each against all N
    kernels, which keeps the cost at O(4000 N K) per candidate. When
    many predictions coincide the likelihood grows without bound as the
    bandwidth shrinks and the smallest candidate is returned.
    """
    points = check_probs(probs)
    _check_min_rows(points.shape[0], "kde_bandwidth")
    return _select_bandwidth(points, _check_grid(bandwidth_grid))


def kde_conditional_expectation(probs: ArrayLike, labels: ArrayLike, *, bandwidth: float | str = 0.01,
                                bandwidth_grid: ArrayLike | None = None) -> NDArray[np.float64]:
    """Leave-one-out Dirichlet-kernel estimate of ``E[Y | g(x_h)]`` for every row.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    bandwidth : float or "auto", default 0.01
        Kernel bandwidth ``h``; ``"auto"`` uses :func:`kde_bandwidth`.
    bandwidth_grid : array_like, optional
        Candidates for ``"auto"``.

    Returns
    -------
    ndarray of shape (N, K)
        Row h is :math:`\\sum_{j \\ne h} k(g_h, g_j) e_{y_j} / \\sum_{j \\ne h} k(g_h, g_j)`.

    Notes
    -----
    Popordanoska et al. 2024, eq. 11-12 and 15, with the Dirichlet kernel
    :math:`k(g_h, g_j) = \\Gamma(\\sum_k \\alpha_{jk}) / \\prod_k \\Gamma(\\alpha_{jk})
    \\prod_k g_{hk}^{\\alpha_{jk} - 1}`, :math:`\\alpha_j = g_j / h + 1`,
    computed in log space and normalised with the row maximum (appendix E.1).
    """
    probs, labels = check_probs_labels(probs, labels)
    _check_min_rows(probs.shape[0], "kde_conditional_expectation")
    bandwidth = _resolve_bandwidth(probs, _check_bandwidth(bandwidth), _check_grid(bandwidth_grid))
    return _loo_conditional_mean(probs, labels, bandwidth)


# --------------------------------------------------------------------------- public: kde_ce
def _neg_entropy(points: NDArray[np.float64]) -> NDArray[np.float64]:
    """F(p) = sum_k p_k log p_k with 0 log 0 = 0."""
    return xlogy(points, points).sum(axis=1)


def _bregman_ce(points: NDArray[np.float64], labels: NDArray[np.intp], conditional: NDArray[np.float64],
                divergence: str, estimator: str) -> float:
    """Eq. 9 ("direct") or eq. 14-15 ("refinement") from a conditional-mean estimate."""
    n = points.shape[0]
    rows = np.arange(n)
    if divergence == "l2":
        if estimator == "direct":
            return float(np.mean(np.sum((conditional - points) ** 2, axis=1)))
        # CE = -REF + mean(D_F(y, g) - F(y)) with REF = -mean ||r||^2, D_F = Brier, F(y) = 1.
        brier = np.einsum("ij,ij->i", points, points) - 2.0 * points[rows, labels] + 1.0
        return float(np.mean(np.einsum("ij,ij->i", conditional, conditional)) + np.mean(brier) - 1.0)
    log_points = _log_points(points)
    if estimator == "direct":
        # D_F(r, g) = F(r) - F(g) - <log g + 1, r - g> with F(p) = <p, log p>.
        gradient_term = np.einsum("ij,ij->i", log_points + 1.0, conditional - points)
        return float(np.mean(_neg_entropy(conditional) - _neg_entropy(points) - gradient_term))
    # D_F(y, g) - F(y) = -log g_y (F(onehot) = 0, rows treated as summing to one).
    return float(np.mean(_neg_entropy(conditional)) - np.mean(log_points[rows, labels]))


def kde_ce(probs: ArrayLike, labels: ArrayLike, divergence: str = "kl", bandwidth: float | str = 0.01,
           classwise: bool = False, *, estimator: str = "direct",
           bandwidth_grid: ArrayLike | None = None) -> float:
    """Proper calibration error CE_KL or CE_2^2 with a leave-one-out Dirichlet kernel estimate.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, N >= 2.
    labels : array_like of shape (N,)
        True classes in ``0..K-1``.
    divergence : {"kl", "l2"}, default "kl"
        ``"kl"``: :math:`\\mathrm{CE}_{KL} = E[D_{KL}(E[Y|g(X)] \\| g(X))]`
        (eq. 8, 10); ``"l2"``: the squared :math:`\\mathrm{CE}_2^2 =
        E[\\|E[Y|g(X)] - g(X)\\|_2^2]` (eq. 7, 46).
    bandwidth : float or "auto", default 0.01
        Dirichlet kernel bandwidth h; ``"auto"`` maximises the leave-one-out
        likelihood (:func:`kde_bandwidth`; per class when ``classwise``).
    classwise : bool, default False
        One-vs-rest (appendix D): for each class k, the binary prediction
        ``[1 - p_k, p_k]`` against ``labels == k`` with the Beta kernel (the
        Dirichlet kernel for K = 2), the binary Bregman divergence, and the
        mean over the K classes.
    estimator : {"direct", "refinement"}, default "direct"
        ``"direct"``: eq. 9, the mean Bregman divergence between the kernel
        estimate of E[Y|g(x_h)] and g(x_h); always >= 0. ``"refinement"``:
        eq. 14-15, the empirical risk minus the refinement estimate; can be
        slightly negative for a calibrated model.
    bandwidth_grid : array_like, optional
        Candidate bandwidths for ``bandwidth="auto"``.

    Returns
    -------
    float

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels or options, or fewer than 2 rows.

    Notes
    -----
    With :math:`\\hat r_h` the leave-one-out kernel estimate of
    :math:`E[Y | g(x_h)]` (eq. 11-12, 15, :func:`kde_conditional_expectation`)
    and :math:`F(p) = \\|p\\|^2` (l2) or :math:`\\langle p, \\log p \\rangle` (kl):

    .. math:: \\widehat{\\mathrm{CE}}_F = \\frac{1}{n} \\sum_h D_F(\\hat r_h, g(x_h))
              \\quad (\\text{eq. 9}), \\qquad
              \\widehat{\\mathrm{CE}}_F = \\frac{1}{n}\\sum_h F(\\hat r_h)
              + \\frac{1}{n} \\sum_h \\big(D_F(y_h, g(x_h)) - F(y_h)\\big) \\quad (\\text{eq. 14}).

    For l2 the refinement form is ``mean ||r_h||^2 + Brier - 1``, for kl
    ``mean <r_h, log r_h> + NLL``. Kernel sums are taken in log space with
    the row maximum subtracted (appendix E.1) over row blocks, O(N^2 K)
    time and O(N K) memory. Logarithms of ``g`` are exact; only an exact 0
    is replaced by the smallest positive double (log = -708), so a class
    predicted with probability 0 that nevertheless occurs nearby costs a
    large but finite amount. (:func:`score_decomposition` instead floors at
    1e-12 like :func:`calib_core.nll`; the two agree whenever every
    probability of a true class is >= 1e-12.) Class-wise l2 uses the binary
    :math:`F(q) = q^2 + (1-q)^2`, so each class contributes
    :math:`2 E[(P(Y=k|g_k) - g_k)^2]` (appendix D; the reference code's
    ``l2_norm`` on ``[1 - g_k, g_k]``). The bias is O(1/n) (Proposition 5.2);
    the estimate of a calibrated model is small but positive for "direct".

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]]
    >>> round(kde_ce(p, [0, 0, 1, 1], divergence="l2", bandwidth=0.5), 4)
    0.0127
    """
    probs, labels = check_probs_labels(probs, labels)
    divergence = check_choice(divergence, "divergence", _DIVERGENCES)
    estimator = check_choice(estimator, "estimator", _ESTIMATORS)
    if not isinstance(classwise, (bool, np.bool_)):
        raise CalibrationInputError(f"`classwise` must be True or False, got {classwise!r}.")
    bandwidth = _check_bandwidth(bandwidth)
    grid = _check_grid(bandwidth_grid)
    _check_min_rows(probs.shape[0], "kde_ce")
    if not classwise:
        conditional = _loo_conditional_mean(probs, labels, _resolve_bandwidth(probs, bandwidth, grid))
        return _bregman_ce(probs, labels, conditional, divergence, estimator)
    values = []
    for k in range(probs.shape[1]):
        points = _binary(probs[:, k])
        targets = (labels == k).astype(np.intp)
        conditional = _loo_conditional_mean(points, targets, _resolve_bandwidth(points, bandwidth, grid))
        values.append(_bregman_ce(points, targets, conditional, divergence, estimator))
    return float(np.mean(values))


# --------------------------------------------------------------------------- decomposition
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
    return -_neg_entropy(points)


def _empirical_score(probs: NDArray[np.float64], labels: NDArray[np.intp], score: str) -> float:
    true_prob = probs[np.arange(probs.shape[0]), labels]
    if score == "brier":
        return float(np.mean(np.einsum("ij,ij->i", probs, probs) - 2.0 * true_prob + 1.0))
    return float(-np.mean(np.log(np.maximum(true_prob, LOG_EPSILON))))


def score_decomposition(probs: ArrayLike, labels: ArrayLike, score: str = "brier", *,
                        bandwidth: float | str = 0.01,
                        bandwidth_grid: ArrayLike | None = None) -> ScoreDecomposition:
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
    probs, labels = check_probs_labels(probs, labels)
    score = check_choice(score, "score", _SCORES)
    bandwidth = _check_bandwidth(bandwidth)
    grid = _check_grid(bandwidth_grid)
    _check_min_rows(probs.shape[0], "score_decomposition")
    bandwidth = _resolve_bandwidth(probs, bandwidth, grid)
    conditional = _loo_conditional_mean(probs, labels, bandwidth)
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
        calibration_direct=_bregman_ce(probs, labels, conditional, divergence, "direct"),
        bandwidth=bandwidth,
    )


def calibration_upper_bound(probs: ArrayLike, labels: ArrayLike, *, score: str = "brier") -> float:
    """Calibration upper bound of Gruber & Buettner 2022 (Theorem 4.3): the root Brier score.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    score : {"brier", "log"}, default "brier"
        ``"brier"``: :math:`\\sqrt{\\mathrm{BS}}`, an upper bound of
        :math:`\\mathrm{CE}_2` (eq. 6 with p = 2). ``"log"``: the NLL, an upper
        bound of :math:`\\mathrm{CE}_{KL}`.

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
    value = _empirical_score(probs, labels, score)
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
    """One inequality ``upper >= lower`` of the chain and whether the estimates respect it."""

    upper: str
    lower: str
    upper_value: float
    lower_value: float
    holds: bool

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


#: The inequalities of eq. 6 (p = 2), upper key -> lower key.
CHAIN_LINKS = (
    ("sqrt2", "rbs"), ("rbs", "ce2"), ("ce2", "cwce2"), ("cwce2", "tce2"),
    ("tce2", "tce1"), ("tce1", "ks"), ("tce1", "ece"), ("tce1", "mmce"),
)


def _kde_binary_gap(values: NDArray[np.float64], targets: NDArray[np.intp], bandwidth: float | str,
                    grid: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """``r_h - v_h`` with r_h the leave-one-out Beta-kernel estimate of P(target = 1 | v_h)."""
    points = _binary(values)
    conditional = _loo_conditional_mean(points, targets, _resolve_bandwidth(points, bandwidth, grid))
    return conditional[:, 1] - values


def bound_chain(probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
                estimator: str = "kde", bandwidth: float | str = 0.01,
                bandwidth_grid: ArrayLike | None = None, mmce_bandwidth: float = 0.4,
                atol: float = 1e-12) -> BoundChain:
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
    empirical mean), and with the binned one TCE_1 = ECE.

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

    probs, labels = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    estimator = check_choice(estimator, "estimator", ("kde", "binned"))
    bandwidth = _check_bandwidth(bandwidth)
    grid = _check_grid(bandwidth_grid)
    mmce_bandwidth = check_positive(mmce_bandwidth, "mmce_bandwidth")
    atol = check_positive(atol, "atol", allow_zero=True)
    _check_min_rows(probs.shape[0], "bound_chain")

    ce2_bandwidth = _resolve_bandwidth(probs, bandwidth, grid)
    ce2_squared = _bregman_ce(probs, labels, _loo_conditional_mean(probs, labels, ce2_bandwidth), "l2", "direct")
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
        ChainLink(upper, lower, values[upper], values[lower], bool(values[upper] >= values[lower] - atol))
        for upper, lower in CHAIN_LINKS
    )
    return BoundChain(terms=terms, links=links)
