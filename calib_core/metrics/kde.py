"""Proper calibration errors CE_KL and CE_2^2 with a leave-one-out Dirichlet kernel.

* :func:`kde_ce` - Bregman ("proper") calibration errors CE_KL and CE_2^2 with the
  leave-one-out Dirichlet-kernel estimate of ``E[Y | g(X)]`` (Popordanoska et al.
  2024, eq. 9-15, appendix D-E), canonical or class-wise.
* :func:`kde_conditional_expectation` - that estimate of ``E[Y | g(x_h)]`` for
  every row (eq. 11-12, 15).
* :func:`kde_bandwidth` - the bandwidth maximising the leave-one-out likelihood
  (section 7).

The helpers without a leading underscore and outside ``__all__`` (the
conditional-mean estimate, the Bregman estimators, the option checks) are
shared with :mod:`calib_core.metrics.decomposition`.

References
----------
.. [Popordanoska2024] Popordanoska, T., Gruber, S. G., Tiulpin, A., Buettner, F. &
   Blaschko, M. B. "Consistent and Asymptotically Unbiased Estimation of Proper
   Calibration Errors", AISTATS 2024.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln, xlogy

from calib_core._accel import map_blocks
from calib_core.metrics.kernel import EXP_FLOOR, row_blocks
from calib_core.validation import (CalibrationInputError, check_choice, check_flag, check_positive, check_probs,
                                   check_probs_labels, repeated_probs_labels)

__all__ = [
    "DEFAULT_BANDWIDTH_GRID",
    "kde_bandwidth",
    "kde_ce",
    "kde_conditional_expectation",
]

#: The bandwidth grid of the reference implementation (Popordanoska et al.,
#: ``get_bandwidth``): 50 log-spaced values in [1e-5, 1e-1] and 0.2, 0.4, ..., 1.
DEFAULT_BANDWIDTH_GRID = np.concatenate([np.logspace(-5.0, -1.0, 50), np.linspace(0.2, 1.0, 5)])

#: Above this many rows, the leave-one-out likelihood of a bandwidth is
#: averaged over this many evaluation rows (each still uses all N kernels).
BANDWIDTH_MAX_EVAL_ROWS = 4000

_DIVERGENCES = ("kl", "l2")
_ESTIMATORS = ("direct", "refinement")


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
    """``log(points)`` with log(tiny) in place of log(0).

    The kernel weight ``x^(alpha - 1)`` of a zero probability is then 0 for
    ``alpha > 1`` and 1 for ``alpha = 1`` (0 * log 0 = 0), the limits of the
    exact formula.
    """
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


def loo_conditional_mean(points: NDArray[np.float64], labels: NDArray[np.intp],
                         bandwidth: float) -> NDArray[np.float64]:
    """Leave-one-out Nadaraya-Watson estimate of E[Y | g(x_h)] with the Dirichlet kernel (eq. 11-12, 15)."""
    return loo_conditional_means(points, labels[None, :], bandwidth)[0]


def loo_conditional_means(points: NDArray[np.float64], label_sets: NDArray[np.intp],
                          bandwidth: float) -> NDArray[np.float64]:
    """:func:`loo_conditional_mean` for each row of ``label_sets`` (shape (R, N)), one kernel pass for all.

    The kernel weights depend on the predictions only, so R sets of labels
    on the same predictions (e.g. labels drawn from the predictions
    themselves, :func:`calib_core.metrics.decomposition.calibrated_bias`)
    share every block; returns shape (R, N, K). Memory: 2 x 8 x N x R x K
    bytes (the one-hot labels and the result) besides the kernel blocks;
    callers with many sets pass them in chunks
    (:func:`calib_core.metrics.decomposition.calibrated_bias`).
    """
    n, k = points.shape
    n_sets = label_sets.shape[0]
    onehot = np.zeros((n, n_sets * k))
    onehot[np.arange(n)[None, :], label_sets + k * np.arange(n_sets)[:, None]] = 1.0
    log_points = _log_points(points)
    log_norm = _log_normalisers(points, bandwidth)

    stacked = np.empty((n, n_sets * k))  # each block writes its rows: no second copy of the result

    def block_mean(start: int, stop: int) -> None:
        block = _loo_log_kernel(log_points, points, log_norm, bandwidth, start, stop)
        # log-sum-exp with the row maximum (appendix E.1, eq. 45): every ratio
        # sum_j k_hj y_j / sum_j k_hj is formed from exp(log k_hj - max_j log k_hj).
        block -= block.max(axis=1, keepdims=True)
        np.maximum(block, EXP_FLOOR, out=block)
        np.exp(block, out=block)
        np.matmul(block, onehot, out=stacked[start:stop])
        stacked[start:stop] /= block.sum(axis=1, keepdims=True)

    map_blocks(block_mean, row_blocks(n, n))
    return stacked.reshape(n, n_sets, k).transpose(1, 0, 2)


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


def check_bandwidth(bandwidth: object) -> float | str:
    """A positive kernel bandwidth, or ``"auto"``."""
    if isinstance(bandwidth, str):
        if bandwidth != "auto":
            raise CalibrationInputError(f"`bandwidth` must be a positive number or 'auto', got {bandwidth!r}.")
        return bandwidth
    return check_positive(bandwidth, "bandwidth")


def check_bandwidth_grid(grid: ArrayLike | None) -> NDArray[np.float64] | None:
    """The distinct candidate bandwidths in increasing order, or None for the default grid."""
    if grid is None:
        return None
    values = np.asarray(grid, dtype=np.float64).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise CalibrationInputError(
            f"`bandwidth_grid` must be a non-empty list of positive finite numbers, got {grid!r}."
        )
    return np.unique(values)


def resolve_bandwidth(points: NDArray[np.float64], bandwidth: float | str,
                      grid: NDArray[np.float64] | None) -> float:
    """The bandwidth to use: the checked number, or the likelihood maximiser for ``"auto"``."""
    return _select_bandwidth(points, grid) if bandwidth == "auto" else float(bandwidth)


def one_vs_rest_points(column: NDArray[np.float64]) -> NDArray[np.float64]:
    """One-vs-rest prediction ``[1 - p_k, p_k]`` (class 1 = "is class k")."""
    return np.column_stack([1.0 - column, column])


def check_min_rows(n: int, name: str) -> None:
    """Refuse fewer than 2 rows: a leave-one-out estimate needs another row."""
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
    check_min_rows(points.shape[0], "kde_bandwidth")
    return _select_bandwidth(points, check_bandwidth_grid(bandwidth_grid))


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
    check_min_rows(probs.shape[0], "kde_conditional_expectation")
    bandwidth = resolve_bandwidth(probs, check_bandwidth(bandwidth), check_bandwidth_grid(bandwidth_grid))
    return loo_conditional_mean(probs, labels, bandwidth)


# --------------------------------------------------------------------------- public: kde_ce
def neg_entropy(points: NDArray[np.float64]) -> NDArray[np.float64]:
    """F(p) = sum_k p_k log p_k with 0 log 0 = 0."""
    return xlogy(points, points).sum(axis=1)


def bregman_ce(points: NDArray[np.float64], labels: NDArray[np.intp], conditional: NDArray[np.float64],
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
        return float(np.mean(neg_entropy(conditional) - neg_entropy(points) - gradient_term))
    # D_F(y, g) - F(y) = -log g_y (F(onehot) = 0, rows treated as summing to one).
    return float(np.mean(neg_entropy(conditional)) - np.mean(log_points[rows, labels]))


def kde_ce(probs: ArrayLike, labels: ArrayLike, divergence: str = "kl", bandwidth: float | str = 0.01,
           classwise: bool = False, *, estimator: str = "direct",
           bandwidth_grid: ArrayLike | None = None,
           sample_weight: ArrayLike | None = None) -> float:
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
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (a leave-one-out estimate:
        the other copies of a row stay in its neighbourhood, as in the repeated data; ``docs/weights.md``).
        Other weights raise :class:`~calib_core.validation.CalibrationInputError`.

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
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`kde_ce`")
    divergence = check_choice(divergence, "divergence", _DIVERGENCES)
    estimator = check_choice(estimator, "estimator", _ESTIMATORS)
    check_flag(classwise, "classwise")
    bandwidth = check_bandwidth(bandwidth)
    grid = check_bandwidth_grid(bandwidth_grid)
    check_min_rows(probs.shape[0], "kde_ce")
    if not classwise:
        conditional = loo_conditional_mean(probs, labels, resolve_bandwidth(probs, bandwidth, grid))
        return bregman_ce(probs, labels, conditional, divergence, estimator)
    values = []
    for k in range(probs.shape[1]):
        points = one_vs_rest_points(probs[:, k])
        targets = (labels == k).astype(np.intp)
        conditional = loo_conditional_mean(points, targets, resolve_bandwidth(points, bandwidth, grid))
        values.append(bregman_ce(points, targets, conditional, divergence, estimator))
    return float(np.mean(values))
