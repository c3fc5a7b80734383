"""Kernel calibration errors: MMCE (Kumar et al. 2018) and SKCE (Widmann et al. 2019).

Both compare the residuals ``onehot(y) - p`` (or ``correct - confidence``) of
pairs of predictions weighted by a kernel on the predictions. The pairwise
sums are O(N^2); they are computed over row blocks whose float64 matrices
stay far below 256 MB (see :data:`BLOCK_ELEMENTS`), on two threads
(:func:`calib_core._accel.map_blocks`), and the one-dimensional MMCE uses
an exact O(N log N) recursion instead.

References
----------
.. [Kumar2018] Kumar, A., Sarawagi, S. & Jain, U. "Trainable Calibration Measures
   for Neural Networks from Kernel Mean Embeddings", ICML 2018, eq. 1-2.
.. [Widmann2019] Widmann, D., Lindsten, F. & Zachariah, D. "Calibration tests in
   multi-class classification: A unifying framework", NeurIPS 2019, section 3
   and Lemma 2 (unbiased and linear-time estimators of SKCE).
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix C
   (definitions C.3-C.4) and F (SKCE as a proper U-score calibration error).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core._accel import laplace_draw_totals, laplace_form, map_blocks
from calib_core.metrics.binned import top_label
from calib_core.validation import (CalibrationInputError, check_choice, check_positive, check_probs,
                                   check_probs_labels, check_sample_weight, repeated_probs_labels)

__all__ = ["SKCEEstimate", "median_heuristic", "median_pairwise_distance", "mmce", "skce", "skce_block_terms",
           "skce_estimate"]

#: Entries of one (rows x columns) float64 working block of the pairwise
#: estimators: 2**18 entries = 2 MiB, small enough for the handful of
#: temporaries of a block to stay in cache and far below the 256 MB limit
#: for an N x N matrix.
BLOCK_ELEMENTS = 1 << 18

#: Above this many rows, ``skce(..., estimator="block", bandwidth=None)`` takes
#: the median over the pairs of a random subset of this many rows, so that the
#: linear-time estimator does not pay for an all-pairs median.
MEDIAN_MAX_ROWS = 5_000

#: Coordinates read by that median: pairs x classes at :data:`MEDIAN_MAX_ROWS` rows and 10 classes. With more
#: classes each distance costs more, and :func:`median_rows` takes fewer rows (500 at 1,000 classes: the
#: median of 5,000 rows of 1,000 classes took 25 s here).
MEDIAN_MAX_CELLS = MEDIAN_MAX_ROWS ** 2 * 10


def median_rows(n_classes: int) -> int:
    """Rows whose pairs the default median heuristic uses for ``n_classes`` classes.

    :data:`MEDIAN_MAX_ROWS` up to 10 classes, then ``sqrt(MEDIAN_MAX_CELLS / K)``
    (at least 100), so that the all-pairs median reads about the same number of coordinates.

    Examples
    --------
    >>> median_rows(3), median_rows(10), median_rows(100), median_rows(1000)
    (5000, 5000, 1581, 500)
    """
    return int(max(100, min(MEDIAN_MAX_ROWS, np.sqrt(MEDIAN_MAX_CELLS / max(int(n_classes), 1)))))

#: Rows whose pairs :func:`median_heuristic` uses when the plain median is 0 and it
#: falls back to the median distance between distinct predictions (2 million pairs).
DISTINCT_MAX_ROWS = 2_000

#: Distances below this count as 0 in :func:`median_heuristic`: the blocked distances
#: ``sqrt(|p|^2 + |q|^2 - 2 p.q)`` of two identical rows come out as up to about 3e-8
#: after rounding, and a bandwidth that small would turn the kernel into noise.
DISTANCE_TOLERANCE = 1e-6

#: Exponents are clipped here before ``np.exp``: below about -708 the result
#: is subnormal or underflows, which x86 computes up to 40x slower, while
#: exp(-700) = 1e-304 is already nothing next to the kernel's other terms.
EXP_FLOOR = -700.0

_ESTIMATORS = ("unbiased", "block")


# --------------------------------------------------------------------------- blocks
def row_blocks(n_rows: int, n_cols: int, *, triangular: bool = False,
               block_elements: int | None = None) -> Iterator[tuple[int, int]]:
    """Yield ``(start, stop)`` row ranges whose blocks hold at most ``block_elements``.

    ``block_elements`` defaults to :data:`BLOCK_ELEMENTS`; a block has at
    least one row, so a single row wider than that is the one exception.
    With ``triangular=True`` the block of rows ``start:stop`` is paired with the
    columns ``start:n_cols`` only (the upper triangle of a symmetric pairwise
    sum), so later blocks may hold more rows.
    """
    if block_elements is None:
        block_elements = BLOCK_ELEMENTS
    start = 0
    while start < n_rows:
        width = n_cols - start if triangular else n_cols
        rows = max(1, block_elements // max(width, 1))
        stop = min(n_rows, start + rows)
        yield start, stop
        start = stop


def _distance_factors(points: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Factors ``A, B`` with ``A_i . B_j = ||p_i - p_j||^2``: ``A = [p, |p|^2, 1]``, ``B = [-2p, 1, |p|^2]``.

    One (rows x (K+2)) @ ((K+2) x columns) product then gives a block of
    squared distances without further passes over it.
    """
    squared_norms = np.einsum("ij,ij->i", points, points)[:, None]
    ones = np.ones_like(squared_norms)
    left = np.hstack([points, squared_norms, ones])
    right = np.ascontiguousarray(np.hstack([-2.0 * points, ones, squared_norms]).T)
    return left, right


def _squared_distances(factors: tuple[NDArray[np.float64], NDArray[np.float64]],
                       start: int, stop: int, col_start: int = 0) -> NDArray[np.float64]:
    """Squared Euclidean distances between rows ``start:stop`` and rows ``col_start:``."""
    left, right = factors
    block = left[start:stop] @ right[:, col_start:]
    return np.maximum(block, 0.0, out=block)  # rounding can make tiny squared distances negative


def _pairwise_distances(factors: tuple[NDArray[np.float64], NDArray[np.float64]],
                        start: int, stop: int, col_start: int = 0) -> NDArray[np.float64]:
    """Euclidean distances between rows ``start:stop`` and rows ``col_start:``."""
    block = _squared_distances(factors, start, stop, col_start)
    return np.sqrt(block, out=block)


def _upper_triangle_mask(n_rows: int, n_cols: int) -> NDArray[np.bool_]:
    """Mask of a ``(n_rows, n_cols)`` block starting on the diagonal: True where column > row."""
    return np.arange(n_cols)[None, :] > np.arange(n_rows)[:, None]


# --------------------------------------------------------------------------- median
def median_pairwise_distance(probs: ArrayLike, *, max_rows: int | None = None,
                             seed: int | np.random.Generator | None = 0) -> float:
    """Median Euclidean distance over all pairs ``i < j`` of prediction rows.

    The median heuristic for the SKCE bandwidth (Widmann et al. 2019,
    section 5; Gretton et al. 2012). For an even number of pairs it is the
    mean of the two middle distances, as :func:`numpy.median` gives.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predictions, N >= 2.
    max_rows : int, optional
        If given and ``N > max_rows``, the median is taken over the pairs of
        ``max_rows`` rows drawn without replacement with ``seed``.
    seed : int or numpy.random.Generator, default 0
        Used only for that subset and to place a search bracket; the result
        on all rows does not depend on it.

    Returns
    -------
    float

    Notes
    -----
    The N(N-1)/2 distances are never stored. A bracket around the median is
    read off 10**6 randomly drawn pairs; one blocked pass over all pairs
    counts the distances below the bracket and keeps those inside it, and the
    exact median is selected among the kept ones. If the bracket misses (a
    practically impossible event for a 6-sigma margin), a wider one is tried.

    Examples
    --------
    >>> median_pairwise_distance([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    0.7071067811865476
    """
    points = check_probs(probs)
    if points.shape[0] < 2:
        raise CalibrationInputError(
            f"the median pairwise distance needs at least 2 rows, `probs` has {points.shape[0]}."
        )
    rng = np.random.default_rng(seed)
    if max_rows is not None and points.shape[0] > max_rows:
        points = points[np.sort(rng.choice(points.shape[0], size=max_rows, replace=False))]
    return _exact_median_distance(points, rng)


def _exact_median_distance(points: NDArray[np.float64], rng: np.random.Generator) -> float:
    n = points.shape[0]
    n_pairs = n * (n - 1) // 2
    factors = _distance_factors(points)
    if n_pairs <= 4_000_000:
        return float(np.median(_all_pair_distances(factors, n)))
    ranks = ((n_pairs - 1) // 2, n_pairs // 2)  # the middle order statistics (0-based)
    n_sample = 1_000_000
    first = rng.integers(0, n, size=n_sample)
    second = (first + rng.integers(1, n, size=n_sample)) % n  # never equal to `first`
    sample = np.sqrt(np.sum((points[first] - points[second]) ** 2, axis=1))
    margin = 6.0 * 0.5 / np.sqrt(n_sample)
    while True:
        low, high = np.quantile(sample, [max(0.0, 0.5 - margin), min(1.0, 0.5 + margin)])
        if margin >= 0.5:
            low, high = -np.inf, np.inf
        # Compare squared distances (no square root over all pairs); keep the bracket's values.
        low2 = np.sign(low) * low * low
        high2 = high * high

        def scan(start: int, stop: int) -> tuple[int, NDArray[np.float64]]:
            squared = _squared_distances(factors, start, stop, col_start=start)
            rows = stop - start
            square = squared[:, :rows][_upper_triangle_mask(rows, rows)]
            rest = squared[:, rows:]
            below = int(np.count_nonzero(square < low2)) + int(np.count_nonzero(rest < low2))
            kept = np.concatenate([square[(square >= low2) & (square <= high2)],
                                   rest[(rest >= low2) & (rest <= high2)]])
            return below, np.sqrt(kept)

        scanned = map_blocks(scan, row_blocks(n, n, triangular=True))
        below = sum(count for count, _ in scanned)
        kept = [values for _, values in scanned]
        inside = np.concatenate(kept)
        if below <= ranks[0] and ranks[1] < below + inside.size:
            local = [ranks[0] - below, ranks[1] - below]
            middle = np.partition(inside, local)[local]
            return float(middle.mean())
        margin *= 4.0


def _all_pair_distances(factors: tuple[NDArray[np.float64], NDArray[np.float64]], n: int) -> NDArray[np.float64]:
    parts = []
    for start, stop in row_blocks(n, n, triangular=True):
        distances = _pairwise_distances(factors, start, stop, col_start=start)
        parts.append(distances[_upper_triangle_mask(stop - start, n - start)])
    return np.concatenate(parts)


def median_heuristic(probs: ArrayLike, *, max_rows: int | None = MEDIAN_MAX_ROWS,
                     seed: int | np.random.Generator | None = 0) -> float:
    """SKCE bandwidth by the median heuristic, defined for every input of two or more rows.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predictions, N >= 2.
    max_rows : int or None, default MEDIAN_MAX_ROWS
        Passed to :func:`median_pairwise_distance` (None: all pairs).
    seed : int or numpy.random.Generator, default 0
        Picks the subsets of rows when N exceeds ``max_rows`` or
        :data:`DISTINCT_MAX_ROWS`.

    Returns
    -------
    float
        A positive bandwidth.

    Notes
    -----
    1. The median pairwise distance (Widmann et al. 2019, section 5;
       Gretton et al. 2012, section 8), as :func:`median_pairwise_distance`.
    2. If that is 0 (more than half of the pairs of rows are identical, as
       for a model that often repeats one prediction; "0" is anything below
       :data:`DISTANCE_TOLERANCE`, the rounding of the distance between
       identical rows), the median distance between *distinct* predictions:
       the rows of ``np.unique(probs, axis=0)`` (at most
       :data:`DISTINCT_MAX_ROWS` of them, drawn with ``seed``). This is the
       scale at which the predictions differ at all.
    3. If every row is the same prediction, every pairwise distance is 0
       and the kernel ``exp(-0 / h) = 1`` for every ``h``: the SKCE does not
       depend on the bandwidth, and 1.0 is returned.

    Examples
    --------
    >>> median_heuristic([[0.7, 0.3]] * 5)
    1.0
    >>> round(median_heuristic([[0.7, 0.3]] * 6 + [[0.2, 0.8], [0.5, 0.5]]), 6)
    0.424264
    """
    points = check_probs(probs)
    median = median_pairwise_distance(points, max_rows=max_rows, seed=seed)
    if median > DISTANCE_TOLERANCE:
        return median
    distinct = np.unique(points, axis=0)
    if distinct.shape[0] < 2:
        return 1.0
    rng = np.random.default_rng(seed)
    if distinct.shape[0] > DISTINCT_MAX_ROWS:
        distinct = distinct[np.sort(rng.choice(distinct.shape[0], size=DISTINCT_MAX_ROWS, replace=False))]
    distances = _all_pair_distances(_distance_factors(distinct), distinct.shape[0])
    positive = distances[distances > DISTANCE_TOLERANCE]  # rows that differ by rounding only are not distinct
    return float(np.median(positive)) if positive.size else 1.0


# --------------------------------------------------------------------------- MMCE
def mmce(probs: ArrayLike, labels: ArrayLike, bandwidth: float = 0.4, *,
         sample_weight: ArrayLike | None = None) -> float:
    """Maximum mean calibration error (Kumar et al. 2018) of the top-label confidence.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities.
    labels : array_like of shape (N,)
        True classes in ``0..K-1``.
    bandwidth : float, default 0.4
        Width of the Laplacian kernel ``exp(-|r_i - r_j| / bandwidth)``.
    sample_weight : array_like of shape (N,), optional
        Non-negative row weights: the V-statistic becomes
        :math:`\\frac{1}{W}\\sqrt{\\sum_{i,j} w_i w_j (c_i - r_i)(c_j - r_j) k_{ij}}`
        with :math:`W = \\sum_i w_i`. A V-statistic sums over all ordered
        pairs, the pairs of a row with itself included, so this is exactly
        the value of the rows repeated ``w`` times (the copies' pairs have
        kernel 1, as every diagonal pair).

    Returns
    -------
    float
        The square root of the V-statistic, >= 0.

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels or bandwidth.

    Notes
    -----
    With confidences :math:`r_i = \\max_k p_{ik}` and correctness
    :math:`c_i` (Kumar et al. 2018, eq. 2; Gruber & Buettner 2022, def. C.3):

    .. math:: \\mathrm{MMCE} = \\frac{1}{N}\\sqrt{\\sum_{i,j} (c_i - r_i)(c_j - r_j)
              \\exp(-|r_i - r_j| / h)}

    The double sum is a quadratic form of a positive definite kernel, so it is
    >= 0; a rounding residue below zero is returned as 0. Because the
    Laplacian kernel on a line factorises along sorted values, the sum is
    computed exactly in O(N log N): after sorting, the partial sums
    :math:`F_i = \\sum_{j<i} a_j e^{(r_j - r_i)/h}` of the positive and the
    negative residuals (:func:`calib_core._accel.laplace_form`: the step
    :math:`F_{i+1} = (F_i + a_i) e^{(r_i - r_{i+1})/h}`, a factor at most 1,
    compiled; numpy's twin takes running log-sum-exps), which cannot overflow
    for any bandwidth. With
    :math:`c = \\sqrt{\\max_r k(r, r)} = 1`, Gruber & Buettner 2022 (eq. 6)
    have :math:`\\mathrm{TCE}_1 \\ge c \\cdot \\mathrm{MMCE}` for the population quantities.

    Examples
    --------
    >>> round(mmce([[0.8, 0.2], [0.6, 0.4]], [0, 1]), 6)
    0.252207
    """
    probs, labels = check_probs_labels(probs, labels)
    bandwidth = check_positive(bandwidth, "bandwidth")
    weights = check_sample_weight(sample_weight, labels.size)
    return mmce_of_top_label(*top_label(probs, labels), bandwidth, sample_weight=weights)


def mmce_of_top_label(confidence: NDArray[np.float64], correct: NDArray[np.float64], bandwidth: float, *,
                      sample_weight: NDArray[np.float64] | None = None) -> float:
    """:func:`mmce` from the top-label confidences and correctness (checked; ``bandwidth`` > 0).

    What :func:`mmce` computes after :func:`calib_core.metrics.binned.top_label`;
    the bootstrap resamples these two arrays instead of the whole matrix.
    """
    order = np.argsort(confidence, kind="stable")
    scaled = confidence[order] / bandwidth
    residual = (correct - confidence)[order]
    n = confidence.shape[0]
    if sample_weight is not None:  # each row's residual counted w times: the V-statistic of the repeated rows
        residual = residual * sample_weight[order]
        n = float(sample_weight.sum())
    total = laplace_form(scaled, residual)
    return float(np.sqrt(max(total, 0.0)) / n)



def mmce_of_draws(confidence: NDArray[np.float64], correct: NDArray[np.float64], indices: NDArray[np.integer],
                  bandwidth: float) -> NDArray[np.float64]:
    """:func:`mmce_of_top_label` of each resample ``confidence[indices[r]], correct[indices[r]]``, all at once.

    A resample is the data's rows, row ``i`` repeated ``c_i`` times; MMCE's
    V-statistic over the repeated rows is ``sqrt(sum_ij c_i r_i c_j r_j
    k(s_i, s_j)) / N`` with ``r = correct - confidence`` (Kumar et al. 2018,
    eq. 2, the Laplace kernel ``k(s, t) = exp(-|s - t| / bandwidth)``), the
    weighted form of :func:`mmce_of_top_label`, on the data's rows sorted once
    (:func:`calib_core._accel.laplace_draw_totals`: no resample is gathered or
    sorted). Equal to :func:`mmce_of_top_label` of each materialised resample
    up to the order of the additions.

    Parameters
    ----------
    confidence, correct : ndarray of shape (N,)
        Checked top-label arrays (:func:`calib_core.metrics.binned.top_label`).
    indices : ndarray of shape (R, N)
        The drawn rows of R resamples (:func:`calib_core.inference.resample.index_blocks`).
    bandwidth : float
        > 0.

    Returns
    -------
    ndarray of shape (R,)
    """
    order = np.argsort(confidence, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    totals = laplace_draw_totals(confidence[order] / bandwidth, (correct - confidence)[order], position, indices)
    return np.sqrt(np.maximum(totals, 0.0)) / indices.shape[1]


# --------------------------------------------------------------------------- SKCE
def skce(probs: ArrayLike, labels: ArrayLike, bandwidth: float | None = None,
         estimator: str = "unbiased", *, seed: int | np.random.Generator | None = 0,
         sample_weight: ArrayLike | None = None) -> float:
    """Squared kernel calibration error (Widmann et al. 2019) of the whole prediction.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, N >= 2.
    labels : array_like of shape (N,)
        True classes in ``0..K-1``.
    bandwidth : float, optional
        Width of the kernel ``k(p, q) = exp(-||p - q||_2 / bandwidth) * I_K``.
        ``None`` uses the median pairwise distance of the rows of ``probs``
        (:func:`median_pairwise_distance`).
    estimator : {"unbiased", "block"}, default "unbiased"
        ``"unbiased"``: the U-statistic over all N(N-1)/2 pairs, O(N^2) time
        in row blocks. ``"block"``: the linear-time estimator with blocks of
        2, the mean of ``h`` over the pairs ``(0, 1), (2, 3), ...`` (a last
        odd row is left out); also unbiased, with a larger variance.
    seed : int or numpy.random.Generator, default 0
        Only used when ``estimator="block"``, ``bandwidth=None`` and
        ``N > median_rows(K)``: the median heuristic then uses the pairs of
        ``median_rows(K)`` randomly chosen rows instead of all pairs
        (:data:`MEDIAN_MAX_ROWS` up to 10 classes, fewer beyond).
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (a U-statistic: the pairs of
        two copies of one row count as pairs, as in the repeated data, and the default bandwidth is the median
        distance of the repeated rows; ``docs/weights.md``). Other weights raise
        :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float
        An unbiased estimate of SKCE; it can be negative when the model is
        (nearly) calibrated.

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels, estimator or bandwidth, fewer than 2
        rows, or a zero median distance (all predictions identical).

    Notes
    -----
    With residuals :math:`e_i = \\mathrm{onehot}(y_i) - p_i` and the matrix
    kernel :math:`k(p, q) = \\kappa(p, q) I_K`, the U-statistic is
    (Widmann et al. 2019, Lemma 2 and eq. 4; Gruber & Buettner 2022, eq. 52-55)

    .. math:: \\widehat{\\mathrm{SKCE}} = \\binom{N}{2}^{-1} \\sum_{i<j}
              \\exp(-\\|p_i - p_j\\|_2 / h)\\, \\langle e_i, e_j \\rangle .

    Each block of rows costs two (rows x K) @ (K x columns) products, one for
    the Gram matrix behind the distances and one for the residual inner
    products; only the upper triangle is visited.

    Examples
    --------
    >>> p = [[0.8, 0.2], [0.3, 0.7]]
    >>> round(skce(p, [1, 0]), 6)  # exp(-1) * <(-0.8, 0.8), (0.7, -0.7)>
    -0.412025
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`skce`")
    probs, labels, residual, bandwidth = _skce_inputs(probs, labels, bandwidth, estimator, seed)
    if estimator == "block":
        return float(np.mean(_block_terms(probs, labels, bandwidth)))
    return _u_statistic(probs, residual, bandwidth, moments=False)[0]


def _skce_inputs(probs: ArrayLike, labels: ArrayLike, bandwidth: float | None, estimator: str,
                 seed: int | np.random.Generator | None):
    """Validated inputs, the residuals ``onehot(y) - p`` (None for the block estimator, which forms the
    residuals of its pairs only) and the bandwidth of :func:`skce`."""
    probs, labels = check_probs_labels(probs, labels)
    check_choice(estimator, "estimator", _ESTIMATORS)
    n = probs.shape[0]
    if n < 2:
        raise CalibrationInputError(f"`skce` needs at least 2 rows, `probs` has {n}.")
    if bandwidth is None:
        max_rows = median_rows(probs.shape[1]) if estimator == "block" else None
        bandwidth = median_pairwise_distance(probs, max_rows=max_rows, seed=seed)
        if bandwidth <= 0.0:
            raise CalibrationInputError(
                "the median pairwise distance of `probs` is 0 (more than half of the pairs of "
                "predictions are identical); pass `bandwidth` explicitly."
            )
    else:
        bandwidth = check_positive(bandwidth, "bandwidth")
    if estimator == "block":
        return probs, labels, None, float(bandwidth)
    residual = -probs
    residual[np.arange(n), labels] += 1.0
    return probs, labels, residual, float(bandwidth)


#: Probabilities per block of :func:`pair_terms` (the two rows of each pair gathered, then their residuals).
_PAIR_BLOCK_VALUES = 1 << 16


def pair_terms(probs: NDArray[np.float64], labels: NDArray[np.intp], first: NDArray[np.intp],
               second: NDArray[np.intp], bandwidth: float) -> NDArray[np.float64]:
    """``h(i, j) = exp(-||p_i - p_j|| / h) <e_i, e_j>`` of the pairs ``(first[m], second[m])``, checked inputs.

    ``e = onehot(y) - p`` (Widmann et al. 2019, eq. 3 with the Laplacian
    kernel). The pairs' rows are gathered block by block, so neither the
    (N, K) residuals nor a reordered copy of ``probs`` is made (each took
    about 0.4 s at 50,000 x 1,000); the arithmetic of each term is the same.
    """
    terms = np.empty(first.shape[0])
    step = max(1, _PAIR_BLOCK_VALUES // max(probs.shape[1], 1))
    for start in range(0, first.shape[0], step):
        rows_a, rows_b = first[start:start + step], second[start:start + step]
        a, b = probs[rows_a], probs[rows_b]
        distance = np.sqrt(np.sum((a - b) ** 2, axis=1))
        inside = np.arange(rows_a.shape[0])
        np.negative(a, out=a)
        a[inside, labels[rows_a]] += 1.0
        np.negative(b, out=b)
        b[inside, labels[rows_b]] += 1.0
        terms[start:start + step] = np.exp(-distance / bandwidth) * np.einsum("ij,ij->i", a, b)
    return terms


def _block_terms(probs: NDArray[np.float64], labels: NDArray[np.intp], bandwidth: float) -> NDArray[np.float64]:
    """``h`` of the pairs of rows ``(0, 1), (2, 3), ...`` (a last odd row is left out)."""
    half = probs.shape[0] // 2
    return pair_terms(probs, labels, np.arange(0, 2 * half, 2), np.arange(1, 2 * half, 2), bandwidth)


def block_estimate(terms: NDArray[np.float64], bandwidth: float) -> SKCEEstimate:
    """The linear-time estimate from its pair terms, with standard error ``sd(h) / sqrt(m)`` (see :func:`skce_estimate`)."""
    std_error = float(terms.std(ddof=1) / math.sqrt(terms.size)) if terms.size >= 2 else math.nan
    return SKCEEstimate(float(terms.mean()), std_error, bandwidth, "block", int(terms.size))


def _u_statistic(probs: NDArray[np.float64], residual: NDArray[np.float64], bandwidth: float, *,
                 moments: bool) -> tuple[float, float]:
    """The U-statistic and, with ``moments``, its estimated variance (else NaN)."""
    n = probs.shape[0]
    factors = _distance_factors(probs)

    def weights_of(start: int, stop: int) -> NDArray[np.float64]:
        weights = _pairwise_distances(factors, start, stop, col_start=start)
        weights *= -1.0 / bandwidth
        np.maximum(weights, EXP_FLOOR, out=weights)
        np.exp(weights, out=weights)
        rows = stop - start
        # The leading rows x rows square holds the diagonal and the lower triangle, which do not count.
        weights[:, :rows][~_upper_triangle_mask(rows, rows)] = 0.0
        return weights

    def block_sum(start: int, stop: int) -> float:
        weights = weights_of(start, stop)
        # sum_{j} w_ij <e_i, e_j> = <e_i, sum_j w_ij e_j>: one product instead of an N-wide inner-product block.
        return float(np.sum(residual[start:stop] * (weights @ residual[start:])))

    def block_moments(start: int, stop: int) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        terms = weights_of(start, stop)
        terms *= residual[start:stop] @ residual[start:].T  # h_ij of every pair i < j in the block
        return terms.sum(axis=1), terms.sum(axis=0), float(np.sum(terms * terms))

    blocks = row_blocks(n, n, triangular=True)
    n_pairs = n * (n - 1) / 2.0
    if not moments:
        return sum(map_blocks(block_sum, blocks)) / n_pairs, math.nan
    row_sums = np.zeros(n)
    sum_squares = 0.0
    for (start, stop), (rows, cols, squares) in zip(list(row_blocks(n, n, triangular=True)),
                                                     map_blocks(block_moments, blocks)):
        row_sums[start:stop] += rows
        row_sums[start:] += cols
        sum_squares += squares
    estimate = float(row_sums.sum() / 2.0 / n_pairs)
    if n < 4:
        return estimate, math.nan
    # Hoeffding (1948): Var(U) = 2 / (n (n - 1)) * (2 (n - 2) zeta_1 + zeta_2). The spread of the row means
    # h_i. holds zeta_1 plus (zeta_2 - zeta_1) / (n - 1) of noise, which is taken off.
    zeta_2 = max(sum_squares / n_pairs - estimate ** 2, 0.0)
    spread = float(np.sum((row_sums / (n - 1) - estimate) ** 2) / (n - 1))
    zeta_1 = max(((n - 1) * spread - zeta_2) / (n - 2), 0.0)
    return estimate, 2.0 / (n * (n - 1)) * (2.0 * (n - 2) * zeta_1 + zeta_2)


def skce_block_terms(probs: ArrayLike, labels: ArrayLike, bandwidth: float) -> NDArray[np.float64]:
    """The terms of the linear-time SKCE estimator, one per pair of rows ``(0, 1), (2, 3), ...``.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predictions, N >= 2.
    labels : array_like of shape (N,)
    bandwidth : float
        Width of the Laplacian kernel (positive).

    Returns
    -------
    ndarray of shape (N // 2,)
        ``h_i = exp(-||p_{2i} - p_{2i+1}|| / h) <e_{2i}, e_{2i+1}>``; their mean
        is ``skce(probs, labels, bandwidth, estimator="block")``.

    Examples
    --------
    >>> skce_block_terms([[0.8, 0.2], [0.3, 0.7]], [1, 0], bandwidth=1.0).round(6)
    array([-0.552237])
    """
    probs, labels, _, bandwidth = _skce_inputs(probs, labels, bandwidth, "block", 0)
    return _block_terms(probs, labels, bandwidth)


@compact_display
@dataclass(frozen=True)
class SKCEEstimate:
    """An SKCE estimate with its standard error.

    Attributes
    ----------
    estimate : float
        As :func:`skce` gives it.
    std_error : float
        Estimated standard deviation of the estimator; NaN when too few rows
        (fewer than 4 for ``"unbiased"``, fewer than 2 pairs for ``"block"``).
    bandwidth : float
        The kernel width used.
    estimator : str
        ``"unbiased"`` or ``"block"``.
    n_terms : int
        Pairs of rows averaged: ``N (N - 1) / 2`` or ``N // 2``.
    """

    estimate: float
    std_error: float
    bandwidth: float
    estimator: str
    n_terms: int


def skce_estimate(probs: ArrayLike, labels: ArrayLike, bandwidth: float | None = None,
                  estimator: str = "unbiased", *, seed: int | np.random.Generator | None = 0,
                  sample_weight: ArrayLike | None = None) -> SKCEEstimate:
    """:func:`skce` together with the standard error of the estimator.

    Parameters are those of :func:`skce`.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (as in :func:`skce`; the
        standard error is that of the repeated rows, which treats copies as independent rows;
        ``docs/weights.md``). Other weights raise :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    SKCEEstimate

    Notes
    -----
    ``"block"``: the terms ``h_i`` of the ``m = N // 2`` disjoint pairs are
    independent and identically distributed, so the estimate is asymptotically
    normal with standard error ``sd(h) / sqrt(m)`` (sample standard deviation,
    ``ddof=1``): Widmann et al. (2019), section 4, after the linear-time
    MMD statistic of Gretton et al. (2012, JMLR 13, section 6, Corollary 16).

    ``"unbiased"``: the U-statistic with kernel ``h_ij`` has variance
    (Hoeffding 1948; Serfling 1980, section 5.2.1, Lemma A)

    .. math:: \\mathrm{Var}(U) = \\frac{2}{N(N-1)} \\left(2(N-2)\\zeta_1 + \\zeta_2\\right),

    estimated with :math:`\\hat\\zeta_2 = \\binom{N}{2}^{-1}\\sum_{i<j} h_{ij}^2 - U^2` and
    :math:`\\hat\\zeta_1 = ((N-1) s^2 - \\hat\\zeta_2) / (N-2)`, where
    :math:`s^2 = \\frac{1}{N-1}\\sum_i (\\bar h_i - U)^2` is the spread of the row
    means :math:`\\bar h_i = \\frac{1}{N-1}\\sum_{j \\ne i} h_{ij}` (whose expectation is
    :math:`\\zeta_1 + (\\zeta_2 - \\zeta_1)/(N-1)` to first order); both are clipped at 0.
    For a miscalibrated model :math:`\\zeta_1 > 0` and U is asymptotically
    normal (Widmann et al. 2019, section 4); for a calibrated one
    :math:`\\zeta_1 = 0`, the statistic is degenerate and only the
    :math:`\\zeta_2` term remains, so a normal interval is then a rough guide.
    The moments need one more (rows x columns) product per block than
    :func:`skce`, about twice its time.

    Examples
    --------
    >>> r = skce_estimate([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]], [1, 0, 0, 1], bandwidth=1.0)
    >>> round(r.estimate, 6) == round(skce([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]], [1, 0, 0, 1], 1.0), 6)
    True
    """
    estimator = check_choice(estimator, "estimator", _ESTIMATORS)
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`skce_estimate`")
    probs, labels, residual, bandwidth = _skce_inputs(probs, labels, bandwidth, estimator, seed)
    n = probs.shape[0]
    if estimator == "block":
        return block_estimate(_block_terms(probs, labels, bandwidth), bandwidth)
    estimate, variance = _u_statistic(probs, residual, bandwidth, moments=True)
    return SKCEEstimate(estimate, math.sqrt(variance), bandwidth, estimator, n * (n - 1) // 2)
