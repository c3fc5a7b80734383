"""SKCE estimators as objects for the calibration test's resampled null: the quadratic and the block U-statistic.

:class:`UnbiasedSKCE` (all pairs) and :class:`BlockSKCE` (disjoint blocks of
rows) are called like any estimator, ``est(probs, labels) -> float``, and
evaluate many label vectors of fixed predictions at once
(``draw_evaluator``), which :func:`calib_core.consistency_resampling` uses.
Widmann, Lindsten & Zachariah (2019), Sections 3-4.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.inference.verdicts import SPARSE_CELL_ROWS, CellOccupancy, cell_occupancy
from calib_core.metrics import kernel
from calib_core.validation import CalibrationInputError, check_positive, check_probs, check_probs_labels

__all__ = ["BlockSKCE", "UnbiasedSKCE"]

#: Entries of the float64 working arrays of the resampled SKCE null held at once.
_BLOCK_ELEMENTS = 1 << 21


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
            draws = np.asarray(label_draws)
            if draws.ndim != 2 or draws.shape[1] != n:
                raise CalibrationInputError(f"`label_draws` must have shape (B, {n}), got {draws.shape}.")
            if not np.issubdtype(draws.dtype, np.integer) or (draws.size and (draws.min() < 0 or draws.max() >= k)):
                raise CalibrationInputError(f"`label_draws` must hold integer labels in 0..{k - 1}.")
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
    U-statistic of each block (:func:`calib_core.metrics.kernel.skce_block_statistics`);
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
        The blocks' rows (:func:`calib_core.metrics.kernel.skce_block_groups`).

    Examples
    --------
    >>> from calib_core.metrics.kernel import skce_block_groups
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
        return kernel.skce_block_statistics(probs, labels, self.bandwidth, self.groups)[0]

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
            w = np.concatenate([kernel.skce_block_weights(probs, rows[s:s + 4096], self.bandwidth)
                                for s in range(0, rows.shape[0], 4096)])
            scale = 1.0 / (n_blocks * size * (size - 1))
            by_row[rows] = w @ probs[rows]
            row_weight[rows] = scale
            weights.append(w * scale)
        constant = float(np.sum(row_weight * np.einsum("ij,ij->i", probs, by_row)))

        def evaluate(label_draws: ArrayLike) -> NDArray[np.float64]:
            draws = np.asarray(label_draws)
            if draws.ndim != 2 or draws.shape[1] != n:
                raise CalibrationInputError(f"`label_draws` must have shape (B, {n}), got {draws.shape}.")
            if not np.issubdtype(draws.dtype, np.integer) or (draws.size and (draws.min() < 0 or draws.max() >= k)):
                raise CalibrationInputError(f"`label_draws` must hold integer labels in 0..{k - 1}.")
            n_draws = draws.shape[0]
            values = constant - 2.0 * (by_row[np.arange(n)[None, :], draws] * row_weight).sum(axis=1)
            for rows, w in zip(self.groups, weights):
                values += _same_label_sums(draws, rows, w, k)
            return values

        return evaluate


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
