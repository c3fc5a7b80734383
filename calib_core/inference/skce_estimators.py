"""SKCE estimators as objects for the calibration test's resampled null: the quadratic and the block U-statistic.

:class:`UnbiasedSKCE` (all pairs) and :class:`BlockSKCE` (disjoint blocks of
rows) are called like any estimator, ``est(probs, labels) -> float``, and
evaluate many label vectors of fixed predictions at once
(``draw_evaluator``), which :func:`calib_core.consistency_resampling` uses.
Widmann, Lindsten & Zachariah (2019), Sections 3-4.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.inference.verdicts import SPARSE_CELL_ROWS, CellOccupancy, cell_occupancy
from calib_core.metrics import kernel
from calib_core.validation import CalibrationInputError, check_positive, check_probs, check_probs_labels

__all__ = ["BlockSKCE", "UnbiasedSKCE", "block_rows_default", "skce_block_groups", "skce_block_statistics",
           "skce_block_weights"]

#: Entries of the float64 working arrays of the resampled SKCE null held at once.
_BLOCK_ELEMENTS = 1 << 21


#: Largest block of the default SKCE test (N >= 10,000): at 100,000 x 10 blocks of sqrt(N) = 317 rows took 27 s, of 100 rows 3 s.
MAX_BLOCK_ROWS = 100


def block_rows_default(n_rows: int) -> int:
    """Rows per block of the default SKCE test: ``ceil(sqrt(N))``, from 2 to :data:`MAX_BLOCK_ROWS` and N // 2.

    The block (B-)test of a degenerate kernel U-statistic (Zaremba, Gretton
    & Blaschko, NeurIPS 2013) needs blocks that grow with N while their
    number grows too; sqrt(N) rows balances the two: the variance of the
    mean over blocks of s rows falls as 1 / (N s) while N / s independent
    blocks keep the mean normal. The cap bounds the
    cost at O(100 N K) for large N.

    Examples
    --------
    >>> block_rows_default(100), block_rows_default(6000), block_rows_default(10**6)
    (10, 78, 100)
    """
    return int(max(2, min(n_rows // 2, MAX_BLOCK_ROWS, math.ceil(math.sqrt(n_rows)))))  # >= 2 blocks


def skce_block_groups(order: NDArray[np.intp], block_rows: int) -> list[NDArray[np.intp]]:
    """The rows of each block: ``order`` cut into ``m = N // block_rows`` blocks of (nearly) equal size.

    Every row is used: with ``q, r = divmod(N, m)`` the first ``r`` blocks hold
    ``q + 1`` rows and the others ``q`` (``q = block_rows`` when ``block_rows``
    divides N, and ``q >= block_rows`` always). Returned as at most two
    arrays of shape (blocks, rows per block), one per block size, the larger
    blocks first (block ``b`` is row ``b`` of the first array, then of the
    second).

    Examples
    --------
    >>> [g.shape for g in skce_block_groups(np.arange(89), 10)]
    [(1, 12), (7, 11)]
    """
    n = order.shape[0]
    n_blocks = max(1, n // block_rows)
    size, longer = divmod(n, n_blocks)
    split = longer * (size + 1)
    groups = [order[:split].reshape(longer, size + 1)] if longer else []
    if n_blocks > longer:
        groups.append(order[split:].reshape(n_blocks - longer, size))
    return groups


def skce_block_weights(probs: NDArray[np.float64], rows: NDArray[np.intp], bandwidth: float) -> NDArray[np.float64]:
    """Kernel weights ``exp(-||p_i - p_j|| / h)`` within each block of ``rows`` (c, s), zero on the diagonal: (c, s, s)."""
    return _block_weights(probs[rows], probs[rows] @ probs[rows].transpose(0, 2, 1), bandwidth)


def skce_block_statistics(probs: NDArray[np.float64], labels: NDArray[np.intp], bandwidth: float,
                          groups: list[NDArray[np.intp]], *, null_variances: bool = False
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The unbiased SKCE U-statistic of each block of rows and, optionally, its variance under calibration.

    Parameters
    ----------
    probs, labels : checked predictions (N, K) and labels (N,)
    bandwidth : float
    groups : list of ndarray
        The blocks' rows, from :func:`skce_block_groups`.
    null_variances : bool, default False
        Also compute each block statistic's variance when the labels are
        drawn from the predictions, and its mean when they are drawn
        uniformly at random (else two empty arrays).

    Returns
    -------
    statistics, variances, uniform_means : ndarray of shape (blocks,)

    Notes
    -----
    Block b with rows :math:`B_b` of size s gives (Widmann et al. 2019, eq. 4
    on the block; their linear estimator is s = 2)

    .. math:: \\hat U_b = \\frac{1}{s(s-1)} \\sum_{i \\ne j \\in B_b} W_{ij} \\langle e_i, e_j \\rangle,
              \\quad W_{ij} = \\exp(-\\|p_i - p_j\\|/h),\\ e_i = \\mathrm{onehot}(y_i) - p_i .

    The blocks are disjoint, so the :math:`\\hat U_b` are independent.
    Under calibration the :math:`e_i` are independent with mean 0 and
    covariance :math:`\\Sigma_i = \\mathrm{diag}(p_i) - p_i p_i^\\top`; only a pair
    of rows covaries with itself, so (Hoeffding 1948, for a degenerate kernel)

    .. math:: \\mathrm{Var}_0(\\hat U_b) = \\frac{2}{(s(s-1))^2} \\sum_{i \\ne j} W_{ij}^2
              \\mathrm{tr}(\\Sigma_i \\Sigma_j),\\quad
              \\mathrm{tr}(\\Sigma_i \\Sigma_j) = a \\cdot b - a^2 \\cdot b - a \\cdot b^2 + (a \\cdot b)^2

    for :math:`a = p_i, b = p_j` (squares entrywise): the exact null variance,
    from the predictions alone. When instead a share :math:`\\varepsilon` of the
    labels is replaced by uniformly random ones, :math:`E[e_i \\mid p_i] = \\varepsilon (u - p_i)`
    with :math:`u = (1/K, \\dots)`, so :math:`E[\\hat U_b] = \\varepsilon^2 \\frac{1}{s(s-1)}
    \\sum_{i \\ne j} W_{ij} (\\langle p_i, p_j \\rangle - 1/K)`: ``uniform_means`` is this
    at :math:`\\varepsilon = 1` (the power of the SKCE test is stated against it).
    O(N s K) time in chunks of blocks whose (s x s) matrices hold at most
    :data:`calib_core.metrics.kernel.BLOCK_ELEMENTS` entries.
    """
    statistics, variances, uniform = [], [], []
    n_classes = probs.shape[1]
    for rows in groups:
        size = rows.shape[1]
        step = max(1, kernel.BLOCK_ELEMENTS // (size * size))
        values = np.empty(rows.shape[0])
        spread = np.empty(rows.shape[0] if null_variances else 0)
        drift = np.empty(rows.shape[0] if null_variances else 0)
        for start in range(0, rows.shape[0], step):
            chunk = rows[start:start + step]
            points = probs[chunk]
            inner = points @ points.transpose(0, 2, 1)  # <p_i, p_j>
            weights = _block_weights(points, inner, bandwidth)
            # <e_i, e_j> = [y_i = y_j] - p_j[y_i] - p_i[y_j] + <p_i, p_j>
            own = labels[chunk]
            cross = np.take_along_axis(points.transpose(0, 2, 1), own[:, :, None], axis=1)  # (c, s_i, s_j): p_j[y_i]
            residual = inner - cross - cross.transpose(0, 2, 1)
            residual += own[:, :, None] == own[:, None, :]
            values[start:start + step] = (residual * weights).sum(axis=(1, 2))
            if null_variances:
                drift[start:start + step] = (weights * (inner - 1.0 / n_classes)).sum(axis=(1, 2))
                squared_left = (points * points) @ points.transpose(0, 2, 1)  # a^2 . b
                trace = inner - squared_left - squared_left.transpose(0, 2, 1) + inner * inner
                weights *= weights
                spread[start:start + step] = 2.0 * (weights * trace).sum(axis=(1, 2))
        statistics.append(values / (size * (size - 1)))
        variances.append(spread / (size * (size - 1)) ** 2)
        uniform.append(drift / (size * (size - 1)))
    return tuple(np.concatenate(parts) if parts else np.empty(0)  # type: ignore[return-value]
                 for parts in (statistics, variances, uniform))


def _block_weights(points: NDArray[np.float64], inner: NDArray[np.float64], bandwidth: float) -> NDArray[np.float64]:
    """``exp(-||p_i - p_j|| / h)`` within each block from its points (c, s, K) and inner products, 0 on the diagonal."""
    norms = np.einsum("cii->ci", inner)
    weights = inner * -2.0
    weights += norms[:, :, None]
    weights += norms[:, None, :]
    np.maximum(weights, 0.0, out=weights)
    np.sqrt(weights, out=weights)
    weights *= -1.0 / bandwidth
    np.maximum(weights, kernel.EXP_FLOOR, out=weights)
    np.exp(weights, out=weights)
    size = points.shape[1]
    weights[:, np.arange(size), np.arange(size)] = 0.0
    return weights


def skce_bandwidth(probs: NDArray[np.float64], bandwidth: float | None) -> float:
    """The SKCE test's kernel width: ``bandwidth`` checked, or the median heuristic of the predictions."""
    if bandwidth is None:  # all pairs of MEDIAN_MAX_ROWS rows up to 10 classes, fewer rows beyond (median_rows)
        return float(kernel.median_heuristic(probs, max_rows=kernel.median_rows(probs.shape[1])))
    return check_positive(bandwidth, "bandwidth")


@dataclass(frozen=True)
class UnbiasedSKCE:
    """The unbiased (quadratic) SKCE estimator with a fixed bandwidth, as an estimator object.

    Calling it is ``calib_core.skce(probs, labels, bandwidth, "unbiased")``;
    :meth:`draw_evaluator` evaluates it for whole blocks of label vectors
    of fixed predictions, which :func:`calib_core.consistency_resampling`
    uses for the resampled null of :func:`calibration_test`.

    Parameters
    ----------
    bandwidth : float
        Width of the kernel ``exp(-||p - q||_2 / bandwidth) * I``.

    Examples
    --------
    >>> est = UnbiasedSKCE(1.0)
    >>> p = [[0.8, 0.2], [0.3, 0.7], [0.5, 0.5]]
    >>> bool(np.isclose(est.evaluate_draws(p, [[1, 0, 0]])[0], est(p, [1, 0, 0])))
    True
    """

    bandwidth: float

    def __call__(self, probs: ArrayLike, labels: ArrayLike) -> float:
        return kernel.skce(probs, labels, self.bandwidth, "unbiased")

    def evaluate_draws(self, probs: ArrayLike, label_draws: ArrayLike) -> NDArray[np.float64]:
        """The estimate for each row of ``label_draws`` (shape (B, N))."""
        return self.draw_evaluator(probs)(label_draws)

    def draw_evaluator(self, probs: ArrayLike) -> Callable[[ArrayLike], NDArray[np.float64]]:
        """A function of label draws (B, N) -> (B,) estimates for fixed predictions.

        Notes
        -----
        With the kernel matrix :math:`W` (zero diagonal) and residuals
        :math:`R = \\mathrm{onehot}(y) - P`,
        :math:`\\sum_{i \\ne j} W_{ij} \\langle R_i, R_j \\rangle
        = \\sum_{i \\ne j} W_{ij} [y_i = y_j] - 2 \\sum_i (WP)_{i, y_i} + \\sum_{i \\ne j} W_{ij} \\langle P_i, P_j\\rangle`.
        Only the first term needs the draws in a product with :math:`W`:
        one (rows x N) @ (N x draws*K) matrix product per row block and
        block of draws, O(N^2 K) per draw.
        """
        probs = check_probs(probs)
        n, k = probs.shape
        if n < 2:
            raise CalibrationInputError(f"the SKCE needs at least 2 rows, `probs` has {n}.")
        bandwidth = check_positive(self.bandwidth, "bandwidth")
        row_block = max(1, _BLOCK_ELEMENTS // n)
        blocks = [(s, min(n, s + row_block)) for s in range(0, n, row_block)]
        squared_norms = np.sum(probs ** 2, axis=1)

        def weights(start: int, stop: int) -> NDArray[np.float64]:
            sq = squared_norms[start:stop, None] + squared_norms[None, :] - 2.0 * probs[start:stop] @ probs.T
            w = np.exp(np.maximum(-np.sqrt(np.maximum(sq, 0.0)) / bandwidth, kernel.EXP_FLOOR))
            w[np.arange(stop - start), np.arange(start, stop)] = 0.0
            return w

        wp = np.empty((n, k))
        constant = 0.0
        for start, stop in blocks:
            w = weights(start, stop)
            wp[start:stop] = w @ probs
            constant += float(np.sum(probs[start:stop] * wp[start:stop]))
        scale = 1.0 / (n * (n - 1))

        def evaluate(label_draws: ArrayLike) -> NDArray[np.float64]:
            draws = _checked_draws(label_draws, n, k)
            draws = draws.astype(np.intp)
            n_draws = draws.shape[0]
            rows = np.arange(n)
            cross = wp[rows[None, :], draws].sum(axis=1)  # sum_i (WP)_{i, y_i} per draw
            same = np.zeros(n_draws)
            draw_block = max(1, _BLOCK_ELEMENTS // (n * k))
            for d0 in range(0, n_draws, draw_block):
                chunk = draws[d0:d0 + draw_block]
                b = chunk.shape[0]
                onehot = np.zeros((n, b * k))
                onehot[rows[:, None], np.arange(b)[None, :] * k + chunk.T] = 1.0
                for start, stop in blocks:
                    product = (weights(start, stop) @ onehot).reshape(stop - start, b, k)
                    picked = np.take_along_axis(product, chunk.T[start:stop, :, None], axis=2)[..., 0]
                    same[d0:d0 + b] += picked.sum(axis=0)
            return scale * (same - 2.0 * cross + constant)

        return evaluate


@dataclass(frozen=True, eq=False)
class BlockSKCE:
    """The block SKCE estimator on fixed blocks of rows, as an estimator object.

    Calling it gives the mean over the blocks of the unbiased SKCE
    U-statistic of each block (:func:`skce_block_statistics`);
    :meth:`draw_evaluator` evaluates it for whole blocks of label vectors of
    fixed predictions, which :func:`calib_core.consistency_resampling` uses for
    the resampled null of the default SKCE test; :meth:`cell_occupancy`
    reports the blocks' sizes to the verdict rule (a block is the set of rows
    each row is compared with).

    Parameters
    ----------
    bandwidth : float
        Width of the kernel ``exp(-||p - q||_2 / bandwidth) * I``.
    groups : list of ndarray
        The blocks' rows (:func:`skce_block_groups`).

    Examples
    --------
    >>> p = np.array([[0.8, 0.2], [0.3, 0.7], [0.5, 0.5], [0.4, 0.6]])
    >>> est = BlockSKCE(1.0, skce_block_groups(np.arange(4), 4))  # one block: the U-statistic
    >>> bool(np.isclose(est(p, [1, 0, 0, 1]), kernel.skce(p, [1, 0, 0, 1], 1.0)))
    True
    """

    bandwidth: float
    groups: list

    @property
    def block_sizes(self) -> NDArray[np.intp]:
        """Rows of each block, in block order."""
        return np.concatenate([np.full(rows.shape[0], rows.shape[1]) for rows in self.groups])

    def statistics(self, probs: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
        """The U-statistic of each block."""
        probs, labels = check_probs_labels(probs, labels)
        return skce_block_statistics(probs, labels, self.bandwidth, self.groups)[0]

    def __call__(self, probs: ArrayLike, labels: ArrayLike) -> float:
        return float(np.mean(self.statistics(probs, labels)))

    def cell_occupancy(self, probs: ArrayLike) -> CellOccupancy:
        """The blocks as cells: fewer than 5 rows per block leaves each row almost nothing to be compared with."""
        sizes = self.block_sizes
        advice = ("more rows per block (`block_rows`; the default ceil(sqrt(N)) gives blocks of 5 or more rows "
                  "from N = 17)") if np.median(sizes) < SPARSE_CELL_ROWS else ""
        return cell_occupancy(sizes, advice)

    def draw_evaluator(self, probs: ArrayLike) -> Callable[[ArrayLike], NDArray[np.float64]]:
        """A function of label draws (B, N) -> (B,) estimates for fixed predictions.

        Notes
        -----
        With the within-block weights :math:`W` (zero diagonal) and residuals
        :math:`e = \\mathrm{onehot}(y) - p`, each block's sum is
        :math:`\\sum_{i \\ne j} W_{ij} [y_i = y_j] - 2 \\sum_i (WP)_{i, y_i} + \\sum_{i \\ne j} W_{ij} \\langle p_i, p_j \\rangle`:
        the last term does not depend on the labels, the middle one is one
        gather per draw, and the first compares the labels of every pair of a
        block, O(N s) per draw for blocks of s rows, whatever K.
        """
        probs = check_probs(probs)
        n, k = probs.shape
        sizes = self.block_sizes
        n_blocks = sizes.size
        row_weight = np.zeros(n)  # 1 / (m s (s - 1)) for the rows of a block of s rows
        by_row = np.zeros((n, k))  # (WP)_i, each row's weighted sum of its block's predictions
        weights = []
        for rows in self.groups:
            size = rows.shape[1]
            w = np.concatenate([skce_block_weights(probs, rows[s:s + 4096], self.bandwidth)
                                for s in range(0, rows.shape[0], 4096)])
            scale = 1.0 / (n_blocks * size * (size - 1))
            by_row[rows] = w @ probs[rows]
            row_weight[rows] = scale
            weights.append(w * scale)
        constant = float(np.sum(row_weight * np.einsum("ij,ij->i", probs, by_row)))

        def evaluate(label_draws: ArrayLike) -> NDArray[np.float64]:
            draws = _checked_draws(label_draws, n, k)
            values = constant - 2.0 * (by_row[np.arange(n)[None, :], draws] * row_weight).sum(axis=1)
            for rows, w in zip(self.groups, weights):
                values += _same_label_sums(draws, rows, w, k)
            return values

        return evaluate


def _checked_draws(label_draws: ArrayLike, n: int, k: int) -> NDArray:
    """``label_draws`` as an array of shape (B, n) of integer labels in ``0..k-1``, or a :class:`CalibrationInputError`."""
    draws = np.asarray(label_draws)
    if draws.ndim != 2 or draws.shape[1] != n:
        raise CalibrationInputError(f"`label_draws` must have shape (B, {n}), got {draws.shape}.")
    if not np.issubdtype(draws.dtype, np.integer) or (draws.size and (draws.min() < 0 or draws.max() >= k)):
        raise CalibrationInputError(f"`label_draws` must hold integer labels in 0..{k - 1}.")
    return draws


def _same_label_sums(draws: NDArray, rows: NDArray[np.intp], weights: NDArray[np.float64],
                     n_classes: int) -> NDArray[np.float64]:
    """``sum_b sum_{i != j in b} W_ij [y_i = y_j]`` for each label draw (B, N), blocks ``rows`` (c, s), weights (c, s, s).

    Up to 32 classes as matrix products with one-hot labels (``W @ onehot``,
    then each row's own class read off: O(N s K) per draw in BLAS); beyond, by
    comparing the labels of every pair (O(N s) per draw, whatever K).
    """
    n_draws = draws.shape[0]
    n_blocks, size = rows.shape
    out = np.zeros(n_draws)
    one_hot = n_classes <= 32
    width = n_classes if one_hot else size
    step = max(1, _BLOCK_ELEMENTS // (size * size))
    for start in range(0, n_blocks, step):
        chunk, w = rows[start:start + step], weights[start:start + step]
        c = chunk.shape[0]
        per_draw = max(1, _BLOCK_ELEMENTS // (c * size * width))
        for d0 in range(0, n_draws, per_draw):
            labels = draws[d0:d0 + per_draw][:, chunk].astype(np.intp)  # (b, c, s)
            b = labels.shape[0]
            if one_hot:
                # (c, s, b K) one-hot columns; W @ them, then row i's entry at its own class in each draw.
                column = (np.arange(b)[:, None, None] * n_classes + labels).transpose(1, 2, 0)  # (c, s, b)
                onehot = np.zeros((c, size, b * n_classes))
                np.put_along_axis(onehot, column, 1.0, axis=2)
                product = w @ onehot
                out[d0:d0 + b] += np.take_along_axis(product, column, axis=2).sum(axis=(0, 1))
            else:
                same = labels[..., :, None] == labels[..., None, :]
                out[d0:d0 + b] += same.reshape(b, -1) @ w.ravel()
    return out
