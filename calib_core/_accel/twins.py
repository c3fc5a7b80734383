"""One public function for each compiled kernel whose numpy twin is written here, next to it.

Each runs :mod:`calib_core._accel.compiled`'s kernel when numba is installed
and otherwise its numpy twin, which gives the same numbers (each pair is
compared by a test, with the kernel set to None for the numpy half:
``tests/compiled_support.py``). The formula module calls the one function
and does not know which path ran.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from calib_core._accel import compiled

__all__ = ["arg_max_by_blocks", "label_search", "laplace_form", "loess_fit_points", "spread", "window_moments"]

#: Entries of one (fit points x data points) tile of the loess weights in the numpy path (fits in cache).
WINDOW_BLOCK_ELEMENTS = 1 << 15
#: The compiled window moments' block size over the square root of the mean window (:func:`moments_block_size`).
MOMENTS_BLOCK_FACTOR = 8.0


def arg_max_by_blocks(n_rows: int, blocks: Iterator[tuple[int, NDArray[np.float64]]],
                      ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Arg-max (ties: lowest index) and maximum of each row, one row block at a time: the top label.

    By blocks, so that the work is done while a block is in cache (after
    :func:`calib_core.validation.check_probs_by_block` checked it), and so
    that a read-only matrix is not copied whole by numpy's ``argmax`` (see
    :func:`calib_core.validation.row_blocks`). A read-only block goes to the
    compiled :data:`calib_core._accel.compiled.row_max` when numba is
    installed (the same indices and values; ``tests/metrics/test_binned.py``).
    """
    predicted = np.empty(n_rows, dtype=np.intp)
    confidence = np.empty(n_rows)
    scratch = rows = None
    for start, block in blocks:
        stop = start + block.shape[0]
        if not block.flags.writeable and compiled.row_max is not None and block.shape[1] > 0:
            # numba: one read of each row instead of a copy, an arg-max and a gather (numpy's SIMD arg-max
            # stays faster on a writeable block already in cache)
            compiled.row_max(block, predicted[start:stop], confidence[start:stop])
            continue
        if rows is None:
            rows = np.arange(block.shape[0])  # the first block is the largest
        if not block.flags.writeable:
            # numpy's argmax would copy a read-only block into a new array each time: reuse one.
            if scratch is None:
                scratch = np.empty_like(block, order="C")
            np.copyto(scratch[: stop - start], block)
            block = scratch[: stop - start]
        block_predicted = block.argmax(axis=1, out=predicted[start:stop])
        confidence[start:stop] = block[rows[: stop - start], block_predicted]
    return predicted, confidence


def label_search(flat: NDArray[np.float64], uniform: NDArray[np.float64], n_classes: int) -> NDArray[np.integer]:
    """Labels of shape (draws, N) drawn from each row's cumulative sums by one uniform each (more than 32 classes).

    ``flat``: every row's cumulative sums shifted by the row number, one sorted array of N x K values
    (:class:`calib_core.inference.draws._LabelSampler`); row ``i``'s label for the uniform ``u`` is the
    number of its K values ``<= u + i``, at most ``K - 1``. numpy searches all rows' sums at once; the
    compiled kernel (:data:`calib_core._accel.compiled.label_search`) searches each row's own K values, with
    the same sums and comparisons, so the same labels (``tests/metrics/test_canonical.py``).
    """
    if compiled.label_search is not None:
        return compiled.label_search(flat, uniform, n_classes)
    rows = np.arange(uniform.shape[1])
    position = np.searchsorted(flat, uniform + rows, side="right")
    return np.minimum(position - rows * n_classes, n_classes - 1)


def spread(values: NDArray[np.float64], weights: NDArray[np.float64], size: int) -> NDArray[np.float64]:
    """Linear-interpolation binning of point masses onto ``size`` grid points over [0, 1].

    ``weights`` may have a leading batch axis ``(B, N)``; the result is ``(B, size)`` (``B = 1`` without
    one). The smooth ECE's grid (:mod:`calib_core.metrics.smooth`); the compiled kernel
    (:data:`calib_core._accel.compiled.spread`) gives the same sums, bit for bit (``tests/metrics/test_smooth.py``).
    """
    if compiled.spread is not None:
        return compiled.spread(values, np.ascontiguousarray(np.atleast_2d(weights)), size)
    position = values * (size - 1)
    left = np.clip(np.floor(position).astype(np.intp), 0, size - 2)
    fraction = position - left
    weights = np.atleast_2d(weights)
    batch = weights.shape[0]
    offsets = (np.arange(batch) * size)[:, None]
    grid = np.bincount((offsets + left).ravel(), weights=(weights * (1.0 - fraction)).ravel(),
                       minlength=batch * size)
    grid += np.bincount((offsets + left + 1).ravel(), weights=(weights * fraction).ravel(),
                        minlength=batch * size)
    return grid.reshape(batch, size)


def _window_moments(centre: NDArray[np.float64], radius: NDArray[np.float64], zero: NDArray[np.bool_],
                    xp: NDArray[np.float64], values: NDArray[np.float64], wp: NDArray[np.float64],
                    n_moments: int) -> NDArray[np.float64]:
    """``sum_j w_ij t_ij^p values_j`` for ``p < n_moments``: (rows, n_moments, 2) tricube-weighted moments.

    ``t_ij = (xp_j - centre_i) / radius_i``; ``w_ij = (1 - |t_ij|^3)^3 wp_j`` for
    ``|t_ij| < 1``, else 0 (rows with ``zero``: ``wp_j`` where ``xp_j == centre_i``).
    """
    t = xp[None, :] - centre[:, None]
    # A window narrower than the spacing of far points (radius ~1e-300 among predictions of 1e-300) sends
    # their t to +-inf; every point with |t| >= 1 has weight 0, so t is capped at +-1, which keeps the
    # tricube and the moments finite (an infinite t times a zero weight would be NaN).
    with np.errstate(over="ignore"):
        t /= radius[:, None]
    np.clip(t, -1.0, 1.0, out=t)
    # Tricube with in-place products (no pow, few temporaries).
    weight = np.abs(t)
    cube = weight * weight
    cube *= weight
    np.subtract(1.0, cube, out=cube)
    np.maximum(cube, 0.0, out=cube)
    np.multiply(cube, cube, out=weight)
    weight *= cube
    if zero.any():
        weight[zero] = (xp[None, :] == centre[zero, None]).astype(np.float64)
    weight *= wp[None, :]
    moments = np.empty((centre.size, n_moments, 2))
    for p in range(n_moments):
        moments[:, p] = weight @ values
        if p < n_moments - 1:
            np.multiply(weight, t, out=weight)
    return moments


def laplace_form(scaled: NDArray[np.float64], residual: NDArray[np.float64]) -> float:
    """``sum_ij a_i a_j exp(-|s_i - s_j|)`` for ascending ``scaled`` values ``s`` and ``residual`` ``a``.

    :func:`calib_core.metrics.kernel.mmce`'s double sum in O(N): with the exclusive running sums
    ``F_i = sum_{j<i} a_j exp(s_j - s_i)`` of the positive and of the negative residuals, it is
    ``sum_i a_i^2 + 2 sum_i a_i (F+_i - F-_i)``. numpy: the running sums as log-sum-exps
    (:func:`numpy.logaddexp.accumulate`, which cannot overflow). The compiled
    :data:`calib_core._accel.compiled.laplace_form` steps ``F_{i+1} = (F_i + a_i) exp(s_i - s_{i+1})``, a
    factor at most 1, so it cannot overflow either: one exponential per row, the same sums up to round-off
    (``tests/ground/test_accel_twins.py``).
    """
    if compiled.laplace_form is not None:
        return float(compiled.laplace_form(np.ascontiguousarray(scaled), np.ascontiguousarray(residual)))
    total = float(np.dot(residual, residual))
    for sign in (1.0, -1.0):
        part = np.where(sign * residual > 0.0, sign * residual, 0.0)
        log_weight = np.full(part.shape, -np.inf)
        positive = part > 0.0
        log_weight[positive] = np.log(part[positive]) + scaled[positive]
        running = np.logaddexp.accumulate(log_weight)
        # Exclusive prefix: F_i = sum_{j < i} part_j exp(scaled_j - scaled_i).
        prefix = np.exp(running[:-1] - scaled[1:])
        total += 2.0 * sign * float(np.dot(residual[1:], prefix))
    return total


def loess_fit_points(distinct: NDArray[np.float64], last_count: int, delta: float) -> NDArray[np.intp]:
    """Indices into ``distinct`` at which loess fits are computed (statsmodels' ``delta`` rule).

    From a fit at ``u_g`` the next fit is at the largest distinct value within
    ``delta`` of it (at least the next value). When every remaining value is
    within ``delta``, statsmodels fits at the second-to-last observation and
    then the last one; that is reproduced (``last_count`` is how many
    observations share the largest value). :func:`calib_core.metrics.ici.loess_smooth`'s
    fit points; the compiled :data:`calib_core._accel.compiled.fit_points` walks the
    values once instead of a search per fit (the same indices).
    """
    m = distinct.size
    if delta <= 0.0 or m <= 2:
        return np.arange(m)
    # The observation before the last one, as an index into the distinct values.
    second_last = m - 1 if last_count >= 2 else m - 2
    if compiled.fit_points is not None:
        return compiled.fit_points(distinct, second_last, float(delta)).astype(np.intp)
    chosen = [0]
    g = 0
    while g < m - 1:
        j = int(np.searchsorted(distinct, distinct[g] + delta, side="right")) - 1
        g = max(second_last if j == m - 1 else j, g + 1)
        chosen.append(g)
    return np.asarray(chosen, dtype=np.intp)


def moments_block_size(widths: NDArray[np.intp]) -> int:
    """Points per block of the compiled :func:`window_moments`: about ``MOMENTS_BLOCK_FACTOR * sqrt(window)``.

    A fit costs about ``window / size`` block shifts (a few hundred multiply-adds each) and ``2 size`` points
    evaluated one by one at the window's ends and centre; this size balances the two.
    """
    mean = float(widths.mean()) if widths.size else 0.0
    return int(min(max(MOMENTS_BLOCK_FACTOR * np.sqrt(mean), 16), 1 << 14))


def window_moments(x_fit: NDArray[np.float64], safe: NDArray[np.float64], zero: NDArray[np.bool_],
                            lo_all: NDArray[np.intp], hi_all: NDArray[np.intp], xp: NDArray[np.float64],
                            yp: NDArray[np.float64], wp: NDArray[np.float64], n_moments: int) -> NDArray[np.float64]:
    """Every loess fit's tricube-weighted window moments: the compiled kernel, or numpy on tiles of bounded size.

    The moments of :func:`calib_core.metrics.ici.loess_smooth`'s local fits
    (``safe`` is the radius with 1 where it is 0); the contract is that of
    :data:`calib_core._accel.compiled.window_moments`, whose loop gives the
    same moments up to the order of the sums (``tests/metrics/test_clinical.py``).
    """
    if compiled.window_moments is not None:  # numba installed: whole blocks by their power sums
        size = moments_block_size(hi_all - lo_all)
        return compiled.window_moments(x_fit, safe, zero, lo_all.astype(np.int64), hi_all.astype(np.int64),
                                       np.ascontiguousarray(xp), np.ascontiguousarray(yp),
                                       np.ascontiguousarray(wp), n_moments, size)
    moments = np.zeros((x_fit.size, n_moments, 2))
    values = np.column_stack([np.ones_like(yp), yp])
    start = 0
    while start < x_fit.size:
        # Rows whose windows overlap, in blocks of a few cache-sized (rows x columns) tiles.
        stop = start + 1
        while stop < x_fit.size and stop - start < 64 and \
                (stop + 1 - start) * (hi_all[stop] - lo_all[start]) <= 64 * WINDOW_BLOCK_ELEMENTS:
            stop += 1
        lo, hi = int(lo_all[start]), int(hi_all[stop - 1])
        step = max(1, WINDOW_BLOCK_ELEMENTS // (stop - start))
        for c0 in range(lo, hi, step):
            c1 = min(hi, c0 + step)
            moments[start:stop] += _window_moments(x_fit[start:stop], safe[start:stop], zero[start:stop],
                                                   xp[c0:c1], values[c0:c1], wp[c0:c1], n_moments)
        start = stop
    return moments


#: Values per row block of :func:`top_label_bin_sums`'s numpy path (a block stays in cache for its checks and arg-max).
TOP_LABEL_BLOCK_VALUES = 1 << 17


class _DoubtfulRow(Exception):
    """A block holds a row that the quick check cannot pass for certain (numpy path of :func:`top_label_bin_sums`)."""


def _passed_blocks(matrix: NDArray, strict: float, check: bool) -> Iterator[tuple[int, NDArray]]:
    """Row blocks of ``matrix``, each after the quick test of ``top_label_bin_sums`` when ``check``."""
    step = max(1, TOP_LABEL_BLOCK_VALUES // matrix.shape[1])
    for start in range(0, matrix.shape[0], step):
        block = matrix[start:start + step]
        if check:
            sums = np.einsum("ij->i", block, dtype=np.float64)
            if not (block.min() >= 0.0 and max(sums.max() - 1.0, 1.0 - sums.min()) <= strict):
                raise _DoubtfulRow
        yield start, block


def top_label_bin_sums(matrix: NDArray, labels: NDArray[np.intp], upper: NDArray[np.float64], *, right: bool,
                       tolerance: float, check: bool,
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None:
    """Per-bin count, confidence sum and correctness sum of the top label, checking the rows on the way.

    The default ECE's one read of the matrix (issue 29): each row is checked
    (with ``check``: no negative value, a finite float64 sum within
    ``tolerance`` of 1), its arg-max (ties: the lowest index) and maximum
    taken and added to its uniform bin (``upper``: the ascending upper edges;
    ``right``: ``(lo, hi]`` bins, else ``[lo, hi)``; the last bin takes what
    lies above). The compiled kernel
    (:data:`calib_core._accel.compiled.top_label_bin_sums`) does it row by
    row without temporaries; numpy by cache-sized blocks and one bincount per
    sum. Both add in row order, so the sums are those of ``np.bincount`` over
    the whole arrays, bit for bit (``tests/metrics/test_fused_ece.py``).

    Parameters
    ----------
    matrix : ndarray of shape (N, K), float64 or float32, C-contiguous
        Shape and type already checked; the values are checked here.
    labels : ndarray of shape (N,), intp
        Checked labels.
    upper : ndarray of shape (B,)
        Upper edges of the uniform bins.
    right : bool
    tolerance : float
        The validator's row-sum tolerance. A row is passed only when its sum
        is within the tolerance by more than the rounding of any order of
        summation (``2 K eps``), so that the validator would pass it too.
    check : bool
        False for a matrix checked already (the arrays of a ``Predictions``).

    Returns
    -------
    (count, sum_value, sum_target) : three ndarrays of shape (B,), or None
        None when a row was not passed: the caller then runs the validator,
        which raises its error for the first bad row (or, for a sum at the
        tolerance's very edge, decides).
    """
    strict = tolerance - 2.0 * matrix.shape[1] * np.finfo(np.float64).eps
    n_bins = upper.shape[0]
    if compiled.top_label_bin_sums is not None:
        sums = np.zeros((3, n_bins))
        if compiled.top_label_bin_sums(matrix, labels, check, strict, upper, right, sums[0], sums[1], sums[2]) >= 0:
            return None
        return sums[0], sums[1], sums[2]
    try:
        predicted, confidence = arg_max_by_blocks(matrix.shape[0], _passed_blocks(matrix, strict, check))
    except _DoubtfulRow:
        return None
    index = np.minimum(np.searchsorted(upper, confidence, side="left" if right else "right"), n_bins - 1)
    return (np.bincount(index, minlength=n_bins).astype(np.float64),
            np.bincount(index, weights=confidence, minlength=n_bins),
            np.bincount(index, weights=(predicted == labels).astype(np.float64), minlength=n_bins))


__all__ += ["top_label_bin_sums"]
