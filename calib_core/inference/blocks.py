"""Estimates over disjoint random blocks of rows, with a Student-t interval from their spread.

The O(N^2) estimators (the unbiased SKCE, ``kde_ce``, the score
decompositions, the bound chain) compare every pair of rows. On many rows
they run on ``R`` disjoint random blocks of ``m`` rows instead. A bootstrap
does not suit them: a resample repeats rows, and a repeated row is its own
nearest neighbour in a leave-one-out kernel estimate or a U-statistic.
Disjoint blocks are independent samples of size ``m``, so the mean of the
block estimates comes with a t-interval from their spread (:func:`block_estimate`).

For SKCE this is the block estimator of Widmann et al. (2019) with blocks of
``m`` rows (the linear-time estimator is the case ``m = 2``) and stays
unbiased; the kernel estimates of ``kde_ce`` carry the bias of ``m`` rows,
larger than that of all ``N``.

References
----------
Widmann, D., Lindsten, F. & Zachariah, D. "Calibration tests in multi-class
classification: A unifying framework", NeurIPS 2019 (block estimators of the SKCE).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calib_core.metrics.decomposition import ScoreDecomposition, score_decomposition
from calib_core.validation import CalibrationInputError, check_probs_labels

__all__ = ["BlockEstimate", "block_decomposition", "block_estimate", "block_indices", "block_metric"]


def block_indices(n_rows: int, block_rows: int | None, n_blocks: int,
                  seed: int | np.random.Generator | None = 0) -> list[NDArray[np.intp]]:
    """Row indices of ``n_blocks`` disjoint random blocks of ``block_rows`` rows.

    Parameters
    ----------
    n_rows : int
        Rows N to draw from.
    block_rows : int or None
        Rows m per block; ``None`` gives one block of every row in file order.
    n_blocks : int
        Number of blocks R (ignored with ``block_rows=None``).
    seed : int, numpy.random.Generator or None, default 0
        The blocks are the first ``R m`` entries of
        ``np.random.default_rng(seed).permutation(n_rows)``, cut in order.

    Returns
    -------
    list of ndarray of int
        ``R`` index arrays, each sorted.

    Raises
    ------
    CalibrationInputError
        ``n_blocks < 1`` or ``R m > N`` (the blocks do not fit).

    Examples
    --------
    >>> [b.size for b in block_indices(1000, 100, 3, seed=0)]
    [100, 100, 100]
    """
    if block_rows is None:
        return [np.arange(n_rows)]
    if n_blocks < 1 or block_rows * n_blocks > n_rows:
        raise CalibrationInputError(f"{n_blocks} blocks of {block_rows} rows do not fit in {n_rows} rows.")
    order = np.random.default_rng(seed).permutation(n_rows)
    return [np.sort(order[i * block_rows:(i + 1) * block_rows]) for i in range(n_blocks)]


@dataclass(frozen=True)
class BlockEstimate:
    """The mean of independent block estimates and its interval.

    Attributes
    ----------
    value : float
        The mean of the block estimates (the one estimate with one block).
    low, high : float
        The ``1 - alpha`` Student-t interval; NaN with one block.
    std : float
        Standard error of the mean; NaN with one block.
    rows : int
        Rows the estimate used: ``R m`` with blocks, N with one block of all rows.
    n_blocks : int
        Number of block estimates R.
    block_rows : int or None
        Rows m per block (None: one estimate on all rows).
    alpha : float
    note : str
        How the interval was obtained, in words.
    """

    value: float
    low: float
    high: float
    std: float
    rows: int
    n_blocks: int
    block_rows: int | None
    alpha: float
    note: str

    @property
    def has_interval(self) -> bool:
        return self.n_blocks > 1


def block_estimate(values: ArrayLike, *, block_rows: int | None, n_rows: int, alpha: float = 0.05) -> BlockEstimate:
    """Mean of independent block estimates with a Student-t interval.

    Parameters
    ----------
    values : array_like of shape (R,)
        One estimate per disjoint block of ``block_rows`` rows.
    block_rows : int or None
        Rows m per block (None with a single estimate on all rows).
    n_rows : int
        Rows N of the data (the rows used when there is a single estimate).
    alpha : float, default 0.05
        The interval covers ``1 - alpha``.

    Returns
    -------
    BlockEstimate
        With one value: that value and no interval (NaN).

    Notes
    -----
    With block estimates :math:`v_1, \\dots, v_R`,

    .. math:: \\bar v = \\frac1R \\sum_r v_r, \\qquad
              \\mathrm{se} = \\frac{s}{\\sqrt R}, \\qquad
              \\bar v \\pm t_{1 - \\alpha/2,\\, R - 1}\\, \\mathrm{se},

    where :math:`s` is the sample standard deviation (``ddof=1``). The blocks
    are disjoint, so the :math:`v_r` are independent.

    Examples
    --------
    >>> e = block_estimate([0.10, 0.12, 0.11, 0.13, 0.09], block_rows=200, n_rows=1000)
    >>> round(e.value, 6), round(e.high - e.value, 6), e.rows
    (0.11, 0.019632, 1000)
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 1:
        return BlockEstimate(float(values[0]), np.nan, np.nan, np.nan, n_rows, 1, block_rows, alpha,
                             "none (one estimate on all rows)")
    mean = float(values.mean())
    std = float(values.std(ddof=1) / math.sqrt(values.size))
    half = float(stats.t.ppf(1.0 - alpha / 2.0, values.size - 1)) * std
    return BlockEstimate(mean, mean - half, mean + half, std, int(values.size * block_rows), int(values.size),
                         block_rows, alpha, f"t-interval over {values.size} blocks of {block_rows:,} rows")


def block_metric(metric: Callable[[NDArray[np.float64], NDArray[np.intp]], float], probs: ArrayLike,
                 labels: ArrayLike, *, block_rows: int | None, n_blocks: int = 1,
                 seed: int | np.random.Generator | None = 0, alpha: float = 0.05) -> BlockEstimate:
    """``metric`` on disjoint random blocks of rows, as the mean of the blocks with a t-interval.

    Parameters
    ----------
    metric : callable
        ``metric(probs, labels) -> float``, e.g. ``functools.partial(calib_core.skce, bandwidth=0.5)``.
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    block_rows : int or None
        Rows m per block; None: one estimate on all rows (no interval).
    n_blocks : int, default 1
        Number of blocks R.
    seed : int, numpy.random.Generator or None, default 0
        Draws the blocks (:func:`block_indices`).
    alpha : float, default 0.05

    Returns
    -------
    BlockEstimate
        :func:`block_estimate` of the block values.

    Raises
    ------
    CalibrationInputError
        Invalid ``probs``/``labels`` or blocks that do not fit.
    """
    probs, labels = check_probs_labels(probs, labels)
    n_rows = probs.shape[0]
    values = [metric(probs[rows], labels[rows]) for rows in block_indices(n_rows, block_rows, n_blocks, seed)]
    return block_estimate(values, block_rows=block_rows, n_rows=n_rows, alpha=alpha)


def _mean_decomposition(parts: Sequence[ScoreDecomposition]) -> ScoreDecomposition:
    """The term-by-term mean of block decompositions (score and bandwidth from the first)."""
    if len(parts) == 1:
        return parts[0]
    means = {f.name: float(np.mean([getattr(p, f.name) for p in parts]))
             for f in fields(ScoreDecomposition) if f.name != "score"}
    return replace(parts[0], **means)


def block_decomposition(probs: ArrayLike, labels: ArrayLike, score: str = "brier", *, bandwidth: float,
                        block_rows: int | None = None, n_blocks: int = 1,
                        seed: int | np.random.Generator | None = 0) -> ScoreDecomposition:
    """:func:`calib_core.score_decomposition` on all rows, or the mean of its terms over disjoint blocks.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    score : {"brier", "log"}, default "brier"
    bandwidth : float
        Dirichlet kernel bandwidth (the same on every block).
    block_rows : int or None, default None
        Rows m per block; None: all rows.
    n_blocks : int, default 1
    seed : int, numpy.random.Generator or None, default 0
        Draws the blocks (:func:`block_indices`).

    Returns
    -------
    ScoreDecomposition
        Every term (and the bandwidth) is the mean over the blocks.

    Notes
    -----
    Every block's terms add up to that block's score
    (``score = calibration + refinement = entropy - sharpness + calibration``),
    and means are linear, so the mean terms add up to the mean score over the
    blocks: the score of the rows used.
    """
    probs, labels = check_probs_labels(probs, labels)
    parts = [score_decomposition(probs[rows], labels[rows], score, bandwidth=bandwidth)
             for rows in block_indices(probs.shape[0], block_rows, n_blocks, seed)]
    return _mean_decomposition(parts)
