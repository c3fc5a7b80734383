"""Optional compiled kernels (``pip install calib-core[fast]``: numba), each with a numpy path that gives the same numbers.

``window_moments``
    The tricube-weighted window moments of :func:`calib_core.metrics.ici.loess_smooth`'s
    local fits. numpy: dense (fits x rows) tiles, about fifteen passes over memory per
    weight. The kernel takes whole blocks of points (about ``8 sqrt(window)``) from their
    power sums about a block end, by a binomial shift whose terms have one sign, with the
    tricube expanded in ``t`` for a block within ``|t| <= 0.85`` and in ``e = 1 - |t|`` for
    one within ``|t| >= 0.4`` (where the weight goes to 0); only the points of the blocks cut
    by the window's ends and centre go one by one (``docs/scale.md``). 0.21 -> 0.03 s CPU per
    curve at 100,000 rows; the moments agree to about 1e-13 of the window's weight.
``fit_points``
    The loess fit points of the ``delta`` rule (:func:`calib_core._accel.loess_fit_points`):
    one walk over the sorted distinct values, not a search and a Python step per fit.
``label_search``
    The consistency resampling's label draws for more than 32 classes
    (:class:`calib_core.inference.draws._LabelSampler`): numpy searches
    all rows' cumulative sums at once (``i + u`` in one sorted array of N x K
    values, 25 s for 1,000 draws at 50,000 x 1,000); the kernel searches each
    row's own K values, with the same sums and comparisons, so the same labels.
``key_sums``
    The bootstrap of top-label metrics with uniform bins
    (:meth:`calib_core.inference.resample.BinnedResampler._top_label_uniform`):
    each resample's counts and confidence sums per (bin, correct) key in one
    pass over its drawn rows, instead of two gathers and two bincounts (the
    same additions in the same order, so the same sums).
``sweep_reductions``
    The bin-count sweep of :func:`calib_core.bin_sensitivity` over class
    columns: numpy gathers every bin's count and sums for every bin count
    (1,000 x 20,099 values, three arrays, at 1,000 classes and 2-200 bins)
    and then reduces them; the kernel walks each sorted column's bins once
    and keeps only the two reductions (the L1 sum and the mean gap over the
    non-empty bins). The same differences of the same prefix sums, added in
    bin order (agrees with numpy to about 1e-15).

``adaptive_bin_sums``
    The bootstrap of class-wise metrics with adaptive bins (ACE, TACE,
    class-wise ECE with ``binning="adaptive"``;
    :class:`calib_core.inference.resample.BinnedResampler`): numpy gathers
    each resample's row weights along each sorted column, sums them per chunk
    by a matrix product and searches the chunks for the bin ends (about 7 s
    for 40 resamples at 50,000 x 1,000); the kernel walks each column's
    sorted rows once per resample, closing a bin at the end of the run of
    ties that reaches its goal. The same bins; the sums differ from numpy's
    chunked ones only in the order of the additions.

``entry_sums``
    The bootstrap of class-wise metrics with uniform bins at many classes
    (:meth:`calib_core.inference.resample.BinnedResampler._classwise_uniform`):
    each resample's weighted counts and sums of the entries above the first
    bin, read from the row weights directly instead of through three
    (resamples x entries) float arrays and their keys (the same sums, bit
    for bit).

``spread``
    The smooth ECE's linear binning of point masses onto its grid
    (:func:`calib_core._accel.spread`), evaluated about a dozen
    times per estimate while the bandwidth is searched, so 2,400 times for a
    200-resample interval: numpy builds four arrays of N values and two
    bincounts each time; the kernel reads each value once. The same sums,
    bit for bit.

``sorted_draws``
    The bootstrap of the KS error, MMCE and smooth ECE
    (:func:`calib_core.inference.bootstrap._resampled`): each resample's
    rows are put in the stable order of their confidence by a counting sort
    on the confidences' ranks (computed once), so the metric's own stable
    sort meets sorted data (about 0.05 ms instead of 3.5 ms at 50,000 rows).
    The metric sees the same sequence of values, so the same numbers.

``slot_sums``
    The later passes of the exact streaming engine
    (:class:`calib_core.engines.streaming.SecondPass`): for each of the 21
    value sets of a block (top label, each class column, each column above
    the TACE threshold), each value's slot among the pass-1 brackets, the
    counts and sums per slot and the values to collect, in one read of the
    column; numpy built the set, its targets, the slots and three
    bincounts, about ten passes. The same sums, bit for bit.

``row_max``
    The top label of every row (:func:`calib_core.metrics.binned.top_label`
    and the ECE's checked pass): numpy copies each block of a read-only
    matrix before its ``argmax`` and then gathers the maxima; the kernel reads
    each row once (the same indices and values).

``top_label_bin_sums``
    The default ECE (uniform bins, no weights; :func:`calib_core.ece`,
    :func:`calib_core.mce`) on a raw matrix, float64 or float32: each row read
    once to check it (no negative value, a finite sum within the row-sum
    tolerance), take its top label and confidence and add them to the per-bin
    count and sums, with no (N,) or (N, K) temporaries; numpy checked the
    blocks, took their arg-max, gathered the maxima and binned them by three
    bincounts (1.1x a plain numpy arg-max ECE instead of 1.6x at float32
    1,000,000 x 100; 0.2x instead of 1.5x at 10,000,000 x 2). The same bins
    and the sums added in row order, so the same numbers bit for bit. A row it
    cannot pass for certain stops it, and the caller runs the validator. Its
    numpy twin is :func:`calib_core._accel.top_label_bin_sums`.

Each runs on one thread and release the GIL (``nogil``): the app may call them
from several sessions at once, which numba's default parallel back-end does
not allow. Each is ``None`` when numba is not installed or the environment
variable ``CALIB_CORE_NO_NUMBA`` is set to a non-empty value other than ``0``;
the numpy path is then used. Compiled code is cached on disk (numba's
``cache=True``; ``NUMBA_CACHE_DIR`` moves the cache when the package folder
is read-only). Where no folder numba could cache in is writable (a read-only
container without a writable ``/tmp``), the kernels are compiled in memory
on first use instead, with a ``RuntimeWarning`` saying so (numba itself
refuses to define a cached kernel there).

Where the numpy path is: beside each kernel, in the one function the
formula modules call: ``row_max``, ``window_moments``, ``fit_points``,
``laplace_form``, ``label_search`` and ``spread`` in :mod:`calib_core._accel.twins`; ``sweep_reductions`` in
:mod:`calib_core._accel.sweep`; ``key_sums``, ``entry_sums``,
``adaptive_bin_sums``, ``sorted_draws`` and ``slot_sums`` in
:mod:`calib_core._accel.sums` (``tests/ground/test_accel_twins.py``).

References
----------
Lam, S. K., Pitrou, A. & Seibert, S. "Numba: a LLVM-based Python JIT
compiler", LLVM-HPC 2015.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import numpy as np

from calib_core._accel import compiled_draws

__all__ = ["adaptive_bin_sums", "entry_sums", "fit_points", "key_sums", "laplace_form", "label_search", "row_max",
           "slot_sums", "sorted_draws",
           "spread", "sweep_reductions", "window_moments"]


def _load(cache: bool = True) -> dict[str, Callable] | None:
    numba = numba_or_none()
    if numba is None:
        return None
    # The helpers the loess kernel calls are module globals, not closure variables: numba keys a cached kernel
    # by its closure's pickled contents too, and a dispatcher pickles differently in every process, so a kernel
    # calling closure dispatchers was compiled anew by every process (4.5 s at the first ICI; issue 29).
    global _element_moments, _block_shift, _blocks_of

    @numba.njit(cache=cache, nogil=True, fastmath={"contract", "reassoc"})
    def _element_moments(xp, yp, wp, start, stop, centre, scale, acc):  # pragma: no cover - compiled
        # Each point's tricube weight evaluated: up to five moments in registers (the loop vectorises).
        w0 = w1 = w2 = w3 = w4 = 0.0
        v0 = v1 = v2 = v3 = v4 = 0.0
        for j in range(start, stop):
            t = min(max((xp[j] - centre) / scale, -1.0), 1.0)  # as numpy: divide, then clip
            a = abs(t)
            cube = max(1.0 - a * a * a, 0.0)
            weight = cube * cube * cube * wp[j]
            wy = weight * yp[j]
            t2 = t * t
            w0 += weight
            v0 += wy
            w1 += weight * t
            v1 += wy * t
            w2 += weight * t2
            v2 += wy * t2
            w3 += weight * t2 * t
            v3 += wy * t2 * t
            w4 += weight * t2 * t2
            v4 += wy * t2 * t2
        acc[0, 0] += w0
        acc[1, 0] += w1
        acc[2, 0] += w2
        acc[3, 0] += w3
        acc[4, 0] += w4
        acc[0, 1] += v0
        acc[1, 1] += v1
        acc[2, 1] += v2
        acc[3, 1] += v3
        acc[4, 1] += v4

    @numba.njit(cache=cache, nogil=True, fastmath={"contract", "reassoc"})
    def _block_shift(sums, b, s, flip, inverse_powers, binom, powers, shifted):  # pragma: no cover - compiled
        # sum_j wp_j z_j^m (and times yp_j) over block b from its power sums of u_j about an anchor, where
        # z_j = s + flip * u_j / scale: z^m = sum_k C(m, k) s^(m-k) (flip u / scale)^k. The anchor is chosen so
        # that s and flip * u have one sign: the terms then add without cancellation.
        top = powers.shape[0]
        powers[0] = 1.0
        for m in range(1, top):
            powers[m] = powers[m - 1] * s
        sign = 1.0
        for k in range(top):
            q0 = sums[b, k, 0] * inverse_powers[k] * sign
            q1 = sums[b, k, 1] * inverse_powers[k] * sign
            sign *= flip
            for m in range(k, top):
                factor = binom[m, k] * powers[m - k]
                shifted[m, 0] += factor * q0
                shifted[m, 1] += factor * q1

    @numba.njit(cache=cache, nogil=True)
    def _blocks_of(start, stop, size):  # pragma: no cover - compiled
        # The whole blocks inside [start, stop): blocks first..end-1, or none (first >= end).
        return (start + size - 1) // size, stop // size

    @numba.njit(cache=cache, nogil=True, fastmath={"contract", "reassoc"})
    def moments_kernel(x_fit, radius, zero, lo, hi, xp, yp, wp, n_moments, size):  # pragma: no cover - compiled
        n_fits, n = x_fit.shape[0], xp.shape[0]
        out = np.zeros((n_fits, n_moments, 2))
        top = n_moments + 9  # (1 -+ t^3)^3 t^p: powers up to p + 9
        n_blocks = (n + size - 1) // size
        # Each block's power sums about its first value and about its last one.
        after = np.zeros((n_blocks, top, 2))
        before = np.zeros((n_blocks, top, 2))
        for b in range(n_blocks):
            b0, b1 = b * size, min(n, (b + 1) * size)
            first, last = xp[b0], xp[b1 - 1]
            for j in range(b0, b1):
                w = wp[j]
                wy = w * yp[j]
                u, v = xp[j] - first, xp[j] - last
                pu = pv = 1.0
                for k in range(top):
                    after[b, k, 0] += w * pu
                    after[b, k, 1] += wy * pu
                    before[b, k, 0] += w * pv
                    before[b, k, 1] += wy * pv
                    pu *= u
                    pv *= v
        binom = np.zeros((top, top))
        for m in range(top):
            binom[m, 0] = 1.0
            for k in range(1, m + 1):
                binom[m, k] = binom[m - 1, k - 1] + binom[m - 1, k]
        # The tricube times t^p as polynomials: near the centre in t (t >= 0: 1 - 3t^3 + 3t^6 - t^9; t < 0:
        # 1 + 3t^3 + 3t^6 + t^9), near the ends in e = 1 - |t|: (1 - |t|^3)^3 |t|^p = e^3 (3 - 3e + e^2)^3
        # (1 - e)^p, which keeps its relative precision where the weight goes to 0.
        edge = np.zeros((n_moments, top))
        base = np.zeros(top)
        base[0] = 1.0
        for _ in range(3):  # (3 - 3e + e^2)^3
            grown = np.zeros(top)
            for m in range(top - 2):
                grown[m] += 3.0 * base[m]
                grown[m + 1] -= 3.0 * base[m]
                grown[m + 2] += base[m]
            base = grown
        for p in range(n_moments):
            for m in range(top - 3):
                edge[p, m + 3] = base[m]  # times e^3
            base_p = edge[p].copy()
            for _ in range(p):  # times (1 - e)
                shifted_p = base_p.copy()
                for m in range(1, top):
                    shifted_p[m] -= base_p[m - 1]
                base_p = shifted_p
            edge[p] = base_p
        acc = np.zeros((5, 2))
        powers = np.empty(top)
        inverse_powers = np.empty(top)
        sums = np.zeros((4, top, 2))  # centre right, centre left, end right, end left
        for i in range(n_fits):
            centre = x_fit[i]
            if zero[i]:  # a window of one value: weight wp where xp == centre, t = 0
                for j in range(lo[i], hi[i]):
                    if xp[j] == centre:
                        out[i, 0, 0] += wp[j]
                        out[i, 0, 1] += wp[j] * yp[j]
                continue
            scale = radius[i]
            low, high = lo[i], hi[i]
            acc[:] = 0.0
            if scale < 1e-20:  # a window too narrow for the powers of 1 / scale: point by point
                _element_moments(xp, yp, wp, low, high, centre, scale, acc)
                for p in range(n_moments):
                    out[i, p, 0], out[i, p, 1] = acc[p, 0], acc[p, 1]
                continue
            inverse_powers[0] = 1.0
            for k in range(1, top):
                inverse_powers[k] = inverse_powers[k - 1] / scale
            sums[:] = 0.0
            # Left of the centre (t < 0) and from it on; each whole block by the expansion that suits it: in t
            # where |t| <= 0.85 throughout, in e = 1 - |t| where |t| >= 0.4 throughout, else point by point.
            middle = low + np.searchsorted(xp[low:high], centre)
            for side in range(2):
                start, stop = (low, middle) if side == 0 else (middle, high)
                first, end = _blocks_of(start, stop, size)
                if first >= end:
                    _element_moments(xp, yp, wp, start, stop, centre, scale, acc)
                    continue
                _element_moments(xp, yp, wp, start, first * size, centre, scale, acc)
                _element_moments(xp, yp, wp, end * size, stop, centre, scale, acc)
                for b in range(first, end):
                    b_first, b_last = xp[b * size], xp[(b + 1) * size - 1]
                    near = (b_last - centre if side else centre - b_first) / scale  # the block's largest |t|
                    far = (b_first - centre if side else centre - b_last) / scale  # and its smallest
                    if near <= 0.85 and side == 1:  # t = (first - centre) / scale + u / scale, both >= 0
                        _block_shift(after, b, far, 1.0, inverse_powers, binom, powers, sums[0])
                    elif near <= 0.85:  # t = (last - centre) / scale + v / scale, both < 0
                        _block_shift(before, b, -far, 1.0, inverse_powers, binom, powers, sums[1])
                    elif far >= 0.4 and side == 1:  # e = (centre + scale - last) / scale - v / scale, both >= 0
                        _block_shift(before, b, (centre + scale - b_last) / scale, -1.0, inverse_powers, binom,
                                    powers, sums[2])
                    elif far >= 0.4:  # e = (first - (centre - scale)) / scale + u / scale, both >= 0
                        _block_shift(after, b, (b_first - (centre - scale)) / scale, 1.0, inverse_powers, binom,
                                    powers, sums[3])
                    else:
                        _element_moments(xp, yp, wp, b * size, (b + 1) * size, centre, scale, acc)
            for p in range(n_moments):
                sign = -1.0 if p % 2 else 1.0  # t^p = (-1)^p |t|^p left of the centre
                for c in range(2):
                    total = acc[p, c]
                    total += (sums[0, p, c] - 3.0 * sums[0, p + 3, c] + 3.0 * sums[0, p + 6, c]
                              - sums[0, p + 9, c])
                    total += (sums[1, p, c] + 3.0 * sums[1, p + 3, c] + 3.0 * sums[1, p + 6, c]
                              + sums[1, p + 9, c])
                    for m in range(top):
                        total += edge[p, m] * (sums[2, m, c] + sign * sums[3, m, c])
                    out[i, p, c] = total
        return out

    @numba.njit(cache=cache, nogil=True)
    def fit_points_kernel(distinct, second_last, delta):  # pragma: no cover - compiled
        m = distinct.shape[0]
        chosen = np.empty(m, dtype=np.int64)
        chosen[0] = 0
        count, g, j = 1, 0, 0
        while g < m - 1:
            target = distinct[g] + delta
            while j + 1 < m and distinct[j + 1] <= target:  # the last value <= target (it only moves on)
                j += 1
            g = max(second_last if j == m - 1 else j, g + 1)
            chosen[count] = g
            count += 1
        return chosen[:count]


    @numba.njit(cache=cache, nogil=True)
    def label_kernel(flat, uniform, n_classes):  # pragma: no cover - compiled
        n_draws, n_rows = uniform.shape
        out = np.empty((n_draws, n_rows), dtype=np.int64)
        for i in range(n_rows):  # row by row: the row's K values stay in cache for all its draws
            for b in range(n_draws):
                needle = uniform[b, i] + i  # the sum numpy's search compares
                low, high = i * n_classes, (i + 1) * n_classes
                while low < high:  # first position whose value exceeds the needle (side="right")
                    middle = (low + high) // 2
                    if flat[middle] <= needle:
                        low = middle + 1
                    else:
                        high = middle
                out[b, i] = min(low - i * n_classes, n_classes - 1)
        return out

    @numba.njit(cache=cache, nogil=True)
    def key_sums_kernel(indices, keys, values, n_keys):  # pragma: no cover - compiled
        n_res, n_drawn = indices.shape
        counts = np.zeros((n_res, n_keys), dtype=np.int64)
        sums = np.zeros((n_res, n_keys))
        for r in range(n_res):
            for j in range(n_drawn):  # in draw order, as np.bincount adds its weights
                row = indices[r, j]
                key = keys[row]
                counts[r, key] += 1
                sums[r, key] += values[row]
        return counts, sums


    @numba.njit(cache=cache, nogil=True)
    def sweep_kernel(values, cum_values, cum_targets, counts, edges, which, right, adaptive, first):  # pragma: no cover
        n_sets, m = values.shape
        n_counts = counts.shape[0]
        l1 = np.zeros((n_sets, n_counts))
        gap = np.zeros((n_sets, n_counts))
        positions = np.empty(edges.shape[0] + 1, dtype=np.intp)
        group_end = np.empty(m + 1, dtype=np.intp)
        for c in range(n_sets):
            if adaptive:  # group_end[i]: the first tie-group end at or after position i
                group_end[m] = m
                for i in range(m - 1, -1, -1):
                    group_end[i] = i if (i == 0 or values[c, i] > values[c, i - 1]) else group_end[i + 1]
            else:  # np.searchsorted(values[c], edges, side) by one merge of two sorted arrays
                i = 0
                for e in range(edges.shape[0]):
                    if i == m:  # every later edge lies above the column's largest value
                        positions[e:] = m
                        break
                    if right:
                        while i < m and values[c, i] <= edges[e]:
                            i += 1
                    else:
                        while i < m and values[c, i] < edges[e]:
                            i += 1
                    positions[e] = i
                positions[edges.shape[0]] = m
            start = first[c]
            n_kept = m - start
            offset = 0
            for j in range(n_counts):
                n_bins = counts[j]
                size, extra = n_kept // n_bins, n_kept % n_bins
                previous = start
                total = 0.0
                gaps = 0.0
                nonempty = 0
                for r in range(n_bins):
                    if previous == m:  # every later bin is empty: it adds nothing
                        break
                    if adaptive:
                        run = r + 1
                        end = group_end[run * size + min(run, extra) + start]
                    else:
                        end = max(positions[which[offset + r]], start)
                    if end == previous:  # an empty bin: no gap
                        continue
                    difference = abs((cum_values[c, end] - cum_values[c, previous])
                                     - (cum_targets[c, end] - cum_targets[c, previous]))
                    total += difference
                    gaps += difference / (end - previous)
                    nonempty += 1
                    previous = end
                l1[c, j] = total
                gap[c, j] = gaps / nonempty if nonempty else 0.0
                offset += n_bins
        return l1, gap

    @numba.njit(cache=cache, nogil=True)
    def adaptive_kernel(order, values, targets, tie_end, weights_by_row, totals, start, n_bins):  # pragma: no cover
        n_res = weights_by_row.shape[1]
        m = order.shape[0]
        count = np.zeros((n_res, n_bins))
        value = np.zeros((n_res, n_bins))
        target = np.zeros((n_res, n_bins))
        # One position's weights in all resamples are one row of weights_by_row (a cache line),
        # so every resample's running sums advance together, position by position.
        drawn = np.zeros(n_res)
        sum_value = np.zeros(n_res)
        sum_target = np.zeros(n_res)
        for j in range(start):
            row = weights_by_row[order[j]]
            for r in range(n_res):
                drawn[r] += row[r]
        before = drawn.copy()
        size = np.zeros(n_res, dtype=np.int64)
        extra = np.zeros(n_res, dtype=np.int64)
        goal = np.zeros(n_res)
        b = np.zeros(n_res, dtype=np.int64)
        last = np.zeros((n_res, 3))
        unfinished = 0
        for r in range(n_res):
            n_kept = int(totals[r] - before[r])
            last[r, 0] = before[r]
            if n_kept == 0:  # nothing above the threshold: every bin empty
                b[r] = n_bins
                continue
            unfinished += 1
            size[r], extra[r] = n_kept // n_bins, n_kept % n_bins
            goal[r] = before[r] + size[r] + min(1, extra[r])
        # No resample reaches its next goal before the weights added since the last check exceed
        # `slack`, the smallest distance to a goal: until then the goals are not looked at.
        slack = 0.0
        j = start
        while j < m and unfinished > 0:
            end = tie_end[j]  # a run of tied values: it falls in one bin
            for i in range(j, end):
                row = weights_by_row[order[i]]
                v, t = values[i], targets[i]
                largest = 0
                for r in range(n_res):
                    w = row[r]
                    largest = max(largest, w)
                    drawn[r] += w
                    sum_value[r] += w * v
                    sum_target[r] += w * t
                slack -= largest
            j = end
            if slack > 0.0:
                continue
            slack = np.inf
            for r in range(n_res):
                while b[r] < n_bins and drawn[r] >= goal[r]:  # bin b ends after this run (later ones may be empty)
                    k = b[r]
                    count[r, k] = drawn[r] - last[r, 0]
                    value[r, k] = sum_value[r] - last[r, 1]
                    target[r, k] = sum_target[r] - last[r, 2]
                    last[r, 0], last[r, 1], last[r, 2] = drawn[r], sum_value[r], sum_target[r]
                    b[r] = k + 1
                    goal[r] = before[r] + (k + 2) * size[r] + min(k + 2, extra[r])
                    if b[r] == n_bins:
                        unfinished -= 1
                if b[r] < n_bins:
                    slack = min(slack, goal[r] - drawn[r])
        return count, value, target

    @numba.njit(cache=cache, nogil=True)
    def entry_kernel(weights, rows, slots, values, targets, n_slots):  # pragma: no cover - compiled
        n_res = weights.shape[0]
        count = np.zeros((n_res, n_slots))
        value = np.zeros((n_res, n_slots))
        target = np.zeros((n_res, n_slots))
        for r in range(n_res):
            for e in range(rows.shape[0]):  # in entry order, as np.bincount adds its weights
                w = float(weights[r, rows[e]])
                slot = slots[e]
                count[r, slot] += w
                value[r, slot] += w * values[e]
                target[r, slot] += w * targets[e]
        return count, value, target

    @numba.njit(cache=cache, nogil=True)
    def spread_kernel(values, weights, size):  # pragma: no cover - compiled
        batch, n = weights.shape
        # Left and right shares summed apart, then added: numpy's two bincounts, in the same order.
        left_grid = np.zeros((batch, size))
        right_grid = np.zeros((batch, size))
        for i in range(n):
            position = values[i] * (size - 1)
            left = min(max(int(np.floor(position)), 0), size - 2)
            fraction = position - left
            for b in range(batch):
                left_grid[b, left] += weights[b, i] * (1.0 - fraction)
                right_grid[b, left + 1] += weights[b, i] * fraction
        return left_grid + right_grid

    @numba.njit(cache=cache, nogil=True)
    def counting_kernel(keys, rows, n_keys):  # pragma: no cover - compiled
        n = rows.shape[0]
        start = np.zeros(n_keys + 1, dtype=np.int64)
        for j in range(n):
            start[keys[rows[j]] + 1] += 1
        for k in range(n_keys):
            start[k + 1] += start[k]
        out = np.empty(n, dtype=np.int64)
        for j in range(n):  # in draw order within each key: a stable sort
            key = keys[rows[j]]
            out[start[key]] = rows[j]
            start[key] += 1
        return out

    @numba.njit(cache=cache, nogil=True)
    def argmax_kernel(block, predicted, confidence):  # pragma: no cover - compiled
        for i in range(block.shape[0]):
            best, value = 0, block[i, 0]
            for k in range(1, block.shape[1]):
                if block[i, k] > value:  # strictly: ties keep the lowest index, as np.argmax
                    best, value = k, block[i, k]
            predicted[i] = best
            confidence[i] = value

    @numba.njit(cache=cache, nogil=True)
    def slot_kernel(values, targets, labels, label, threshold, table, scale, points, collect,
                    count, sum_value, sum_target, kept_values, kept_targets):  # pragma: no cover - compiled
        size = table.shape[0]
        n_points = points.shape[0]
        n_kept = 0
        for i in range(values.shape[0]):
            value = values[i]
            if value <= threshold:  # a set of the values above the threshold (-inf: every value)
                continue
            target = targets[i] if label < 0 else (1.0 if labels[i] == label else 0.0)
            cell = int(value * scale)  # truncation, as numpy's unsafe cast; then take(mode="clip")
            slot = table[min(max(cell, 0), size - 1)]
            if slot < 0:  # a grid cell holding a point: searchsorted(points, value, "left")
                at = np.searchsorted(points, value)
                slot = 2 * at + (1 if points[min(at, n_points - 1)] == value else 0)
            count[slot] += 1.0
            sum_value[slot] += value
            sum_target[slot] += target
            if collect[slot]:
                kept_values[n_kept] = value
                kept_targets[n_kept] = target
                n_kept += 1
        return n_kept

    return {"adaptive_bin_sums": adaptive_kernel, "slot_sums": slot_kernel, "row_max": argmax_kernel, "sorted_draws": counting_kernel, "spread": spread_kernel, "entry_sums": entry_kernel, "window_moments": moments_kernel, "fit_points": fit_points_kernel, "label_search": label_kernel,
            "key_sums": key_sums_kernel, "sweep_reductions": sweep_kernel}


def _load_fused(cache: bool = True) -> dict[str, Callable] | None:
    """The fused top-label kernel (issue 29), compiled as :func:`_load` compiles the others."""
    numba = numba_or_none()
    if numba is None:
        return None

    @numba.njit(cache=cache, nogil=True)
    def top_label_kernel(matrix, labels, check, strict, upper, right, count, sum_value, sum_target):  # pragma: no cover
        # Two row loops, each with the whole row's work written out in it: a test per row, or helper functions
        # (called per row), made the two-column case 2-10x slower. After each row's sum, sign and arg-max: a NaN
        # makes the sum NaN and the test false, +-inf makes the sum fail too; then the row's bin is that of
        # uniform_index (guessed from c * n_bins, then moved until the comparisons with the edges hold:
        # searchsorted(upper, c, "left" if right else "right"), at most n_bins - 1), added in row order as
        # np.bincount adds.
        n_rows, n = matrix.shape
        n_bins = upper.shape[0]
        if n >= 8:
            for i in range(n_rows):
                # Four independent lanes (columns k mod 4) merged at the end: four comparison chains at once,
                # about 10 % faster at 100 columns. The same arg-max (the largest value, among ties the lowest
                # index, as np.argmax); the sum differs only in its order.
                row = matrix[i]
                s0 = s1 = s2 = s3 = 0.0
                negative = False
                m0 = m1 = m2 = m3 = row[0]
                b0 = b1 = b2 = b3 = 0
                k = 0
                while k + 4 <= n:
                    v0, v1, v2, v3 = row[k], row[k + 1], row[k + 2], row[k + 3]
                    s0 += np.float64(v0)
                    s1 += np.float64(v1)
                    s2 += np.float64(v2)
                    s3 += np.float64(v3)
                    negative |= (v0 < 0.0) | (v1 < 0.0) | (v2 < 0.0) | (v3 < 0.0)
                    if v0 > m0:
                        m0, b0 = v0, k
                    if v1 > m1:
                        m1, b1 = v1, k + 1
                    if v2 > m2:
                        m2, b2 = v2, k + 2
                    if v3 > m3:
                        m3, b3 = v3, k + 3
                    k += 4
                while k < n:
                    v0 = row[k]
                    s0 += np.float64(v0)
                    negative |= v0 < 0.0
                    if v0 > m0:
                        m0, b0 = v0, k
                    k += 1
                best, value = b0, m0
                if m1 > value or (m1 == value and b1 < best):
                    best, value = b1, m1
                if m2 > value or (m2 == value and b2 < best):
                    best, value = b2, m2
                if m3 > value or (m3 == value and b3 < best):
                    best, value = b3, m3
                total = (s0 + s1) + (s2 + s3)
                if check and not (not negative and abs(total - 1.0) <= strict):
                    return i
                c = np.float64(value)
                b = int(np.ceil(c * n_bins)) - 1 if right else int(np.floor(c * n_bins))
                b = min(max(b, 0), n_bins - 1)
                if right:
                    while b < n_bins - 1 and c > upper[b]:
                        b += 1
                    while b > 0 and c <= upper[b - 1]:
                        b -= 1
                else:
                    while b < n_bins - 1 and c >= upper[b]:
                        b += 1
                    while b > 0 and c < upper[b - 1]:
                        b -= 1
                count[b] += 1.0
                sum_value[b] += c
                sum_target[b] += 1.0 if best == labels[i] else 0.0
        else:
            for i in range(n_rows):
                row = matrix[i]
                total = 0.0
                negative = False
                best, value = 0, row[0]
                for k in range(n):
                    v = row[k]
                    total += np.float64(v)
                    negative |= v < 0.0
                    if v > value:  # strictly: ties keep the lowest index, as np.argmax
                        best, value = k, v
                if check and not (not negative and abs(total - 1.0) <= strict):
                    return i
                c = np.float64(value)
                b = int(np.ceil(c * n_bins)) - 1 if right else int(np.floor(c * n_bins))
                b = min(max(b, 0), n_bins - 1)
                if right:
                    while b < n_bins - 1 and c > upper[b]:
                        b += 1
                    while b > 0 and c <= upper[b - 1]:
                        b -= 1
                else:
                    while b < n_bins - 1 and c >= upper[b]:
                        b += 1
                    while b > 0 and c < upper[b - 1]:
                        b -= 1
                count[b] += 1.0
                sum_value[b] += c
                sum_target[b] += 1.0 if best == labels[i] else 0.0
        return -1

    return {"top_label_bin_sums": top_label_kernel}


def numba_or_none():
    """The numba module, or None without numba or with ``CALIB_CORE_NO_NUMBA`` set (for the loaders of other
    ``_accel`` modules, :func:`calib_core._accel.compiled_draws.load`)."""
    if os.environ.get("CALIB_CORE_NO_NUMBA", "") not in ("", "0"):
        return None
    try:
        import numba
    except ImportError:
        return None
    return numba


#: ``window_moments(x_fit, radius, zero, lo, hi, xp, yp, wp, n_moments) -> (fits, n_moments, 2)``, or None.
#: Fit ``i`` sums over ``xp[lo[i]:hi[i]]``: ``w t^p`` and ``w t^p y`` with ``t = (xp - x_fit[i]) / radius[i]``
#: clipped to [-1, 1], ``w = (1 - |t|^3)^3 wp`` (``zero[i]``: ``wp`` where ``xp == x_fit[i]``, ``t = 0``).
def _load_with_or_without_cache(*loads: Callable) -> dict[str, Callable] | None:
    """The kernels of ``loads`` (:func:`_load`, ...) with numba's disk cache, or in memory when numba has nowhere to
    write it."""
    def load(cache: bool) -> dict[str, Callable] | None:
        kernels = [one(cache=cache) for one in loads]
        return None if any(k is None for k in kernels) else {name: k for one in kernels for name, k in one.items()}

    try:
        return load(cache=True)
    except RuntimeError as error:  # numba: "cannot cache function ...: no locator available for file ..."
        if "cannot cache" not in str(error):
            raise
        warnings.warn(f"calib_core: numba cannot write its kernel cache ({error}); the kernels are compiled in "
                      "memory on first use. Set NUMBA_CACHE_DIR to a writable folder to keep them.",
                      RuntimeWarning, stacklevel=2)
        return load(cache=False)


_KERNELS = _load_with_or_without_cache(_load, _load_fused, compiled_draws.load) or {}
window_moments = _KERNELS.get("window_moments")
#: ``fit_points(distinct, second_last, delta) -> int64 indices``, or None: the loess fit points of the ``delta``
#: rule (:func:`calib_core._accel.loess_fit_points`; ``delta > 0``, at least three sorted distinct values).
fit_points = _KERNELS.get("fit_points")
#: ``laplace_form(scaled, residual) -> float``, or None: ``sum_ij a_i a_j exp(-|s_i - s_j|)`` for ascending
#: ``scaled`` (MMCE's kernel sum; :func:`calib_core._accel.laplace_form`), by running sums in one pass (kernel in :mod:`calib_core._accel.compiled_draws`).
laplace_form = _KERNELS.get("laplace_form")
#: ``label_search(flat, uniform, n_classes) -> (draws, N) int64``, or None: for each uniform ``u`` of row ``i``,
#: the number of values of ``flat[i K:(i + 1) K]`` that are ``<= u + i``, at most ``K - 1``: what
#: ``np.searchsorted(flat, uniform + i, side="right") - i K`` gives, capped as the sampler caps it.
label_search = _KERNELS.get("label_search")
#: ``key_sums(indices, keys, values, n_keys) -> (counts, sums)`` of shape (R, n_keys), or None: for each resample
#: ``r``, ``np.bincount(keys[indices[r]], minlength=n_keys)`` and the same with ``weights=values[indices[r]]``
#: (the same additions in the same order), without gathering the drawn rows' keys and values first.
key_sums = _KERNELS.get("key_sums")
#: ``sweep_reductions(values, cum_values, cum_targets, counts, edges, which, right, adaptive, first) -> (l1, gap)``
#: of shape (C, len(counts)), or None: for each sorted row of a :class:`calib_core.binning.SortedColumns` and each
#: bin count, the bins of :func:`calib_core.binning.sorted_columns_bin_sums` (uniform: ``edges``/``which`` of its
#: sweep plan; adaptive: ``array_split`` runs moved to the end of their tie group; values before ``first[c]``
#: dropped), reduced in one loop to ``sum_b |sum_value - sum_target|`` and the mean of ``|...| / count`` over the
#: non-empty bins, without materialising the (C, sum(counts)) bin sums.
sweep_reductions = _KERNELS.get("sweep_reductions")
#: ``adaptive_bin_sums(order, values, targets, tie_end, weights_by_row, totals, start, n_bins) -> (count, value,
#: target)`` of shape (R, n_bins), or None: for one sorted column (``order`` its rows ascending, ``values`` and
#: ``targets`` in that order, ``tie_end`` the end of each run of ties) and each resample's row weights
#: ``weights_by_row[:, r]`` (shape (N + 1, R): a row's weights in all resamples together; ``totals[r]`` their sum), the
#: weighted count and sums of the adaptive bins over the positions ``start:`` (the ``array_split`` runs of the
#: resample's kept values, each bin ending at the end of the run of ties that reaches its goal), as
#: :func:`calib_core.inference.resample._adaptive_ends` and ``_stats`` give them.
adaptive_bin_sums = _KERNELS.get("adaptive_bin_sums")
#: ``entry_sums(weights, rows, slots, values, targets, n_slots) -> (count, value, target)`` of shape (R, n_slots),
#: or None: for each resample ``r``, ``np.bincount(slots, weights=w * x, minlength=n_slots)`` with
#: ``w = weights[r, rows]`` and ``x`` = 1, ``values``, ``targets`` (the same additions in the same order).
entry_sums = _KERNELS.get("entry_sums")
#: ``spread(values, weights, size) -> (B, size)``, or None: :func:`calib_core._accel.spread` of
#: ``weights`` (B, N) at ``values`` (N,), each mass split linearly between its two grid points, in one pass
#: (the left and the right shares summed apart in point order and then added, as numpy's two bincounts).
spread = _KERNELS.get("spread")
#: ``sorted_draws(keys, rows, n_keys) -> rows`` reordered, or None: the drawn ``rows`` in ascending order of
#: ``keys[rows]`` (integers in ``0..n_keys-1``), ties in draw order: ``rows[np.argsort(keys[rows], kind="stable")]``,
#: by one counting pass instead of a comparison sort.
sorted_draws = _KERNELS.get("sorted_draws")
#: ``slot_sums(values, targets, labels, label, threshold, table, scale, points, collect, count, sum_value, sum_target,
#: kept_values, kept_targets) -> n_kept``, or None: one value set of a block added to the slot sums of
#: :class:`calib_core.engines.streaming._Slots` in one pass: the values above ``threshold`` (``-inf``: all), their
#: targets ``targets[i]`` (``label < 0``) or ``labels[i] == label``, each value's slot by the lookup ``table`` at
#: ``int(value * scale)`` (clipped) or, where the table says -1, by ``searchsorted(points)``; counts and sums added
#: in row order (as ``np.bincount``) into the given zeroed arrays, and the values and targets of ``collect`` slots
#: written to ``kept_values`` / ``kept_targets`` in row order.
slot_sums = _KERNELS.get("slot_sums")
#: ``row_max(block, predicted, confidence)``, or None: writes each row's arg-max (ties: the lowest index, as
#: :func:`numpy.argmax`) and maximum of a block of a checked (NaN-free) matrix, read-only or not, in one pass.
row_max = _KERNELS.get("row_max")


#: ``top_label_bin_sums(matrix, labels, check, strict, upper, right, count, sum_value, sum_target) -> int``, or None:
#: for each row of a C-contiguous (N, K) float64 or float32 ``matrix`` in order: with ``check``, the row's index is
#: returned at once when it has a negative value or ``|sum - 1| > strict`` (NaN, inf; the sum in float64); then
#: its arg-max (ties: the lowest index) ``a`` and maximum ``c`` (in float64) are added to the uniform bin of
#: ``c`` (``upper``: the bins' ascending upper edges; ``right``: ``(lo, hi]`` or ``[lo, hi)``): ``count[b] += 1``,
#: ``sum_value[b] += c``, ``sum_target[b] += (a == labels[i])``, into the given zeroed arrays. -1 when every row
#: passed.
top_label_bin_sums = _KERNELS.get("top_label_bin_sums")
__all__ += ["top_label_bin_sums"]
#: ``laplace_draw_totals(decay, residual, position, indices) -> (R,)``, or None: for each resample ``r`` (drawn rows
#: ``indices[r]``; ``position[row]`` a row's place in the sorted order), ``sum_ij a_i a_j prod_{k=j+1..i} decay_k``
#: (``i >= j``, twice for ``i > j``) with ``a = counts * residual`` in the sorted order
#: (:mod:`calib_core._accel.compiled_draws`).
laplace_draw_totals = _KERNELS.get("laplace_draw_totals")
__all__ += ["laplace_draw_totals"]
