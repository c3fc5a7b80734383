"""The bootstrap's and the streaming engine's sums: each compiled kernel with its numpy twin beside it.

One public function per kernel of :mod:`calib_core._accel.compiled` whose
numpy path used to live in the module it serves (:mod:`calib_core.inference.resample`,
:mod:`calib_core.inference.bootstrap`, :mod:`calib_core.engines.streaming`).
Each runs the kernel when numba is installed and otherwise its numpy twin,
with the same numbers (bit for bit, or, where said, up to the order of the
additions); ``tests/ground/test_accel_twins.py`` compares each pair, with the
kernel set to None for the numpy half (``tests/compiled_support.py``). Like
:mod:`calib_core._accel.twins` (kept apart only so that neither module grows
past the size limit).

==========================  ========================================================
function                    serves
==========================  ========================================================
:func:`key_sums`            top-label metrics with uniform bins: counts and sums per
                            (bin, correct) key of each resample's drawn rows
:func:`entry_sums`          class-wise metrics with uniform bins: weighted sums of
                            the entries above the first bin
:func:`adaptive_bin_sums`   class-wise metrics with adaptive bins: one sorted column's
                            adaptive bins under each resample's row weights
:func:`entry_sums_pay`      whether :func:`entry_sums` beats the per-column sums
:func:`adaptive_walk_pays`  whether :func:`adaptive_bin_sums` beats the prefix sums
:func:`sorted_draws`        the drawn rows in the stable order of their confidence
:func:`draw_counts`         how often each row is drawn by each resample (numpy only)
:func:`laplace_draw_totals` MMCE's bootstrap: each resample's Laplace-kernel quadratic
                            form of its count-weighted residuals on the sorted rows
:func:`slot_sums`           the exact streaming engine's later passes: one value set
                            added to the slots of the pass-1 brackets (the slot of
                            each value: :func:`lookup_slots`, numpy only)
==========================  ========================================================
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calib_core._accel import compiled

__all__ = ["COMPILED_ENTRY_SHARE", "NUMPY_ENTRY_SHARE", "adaptive_bin_sums", "adaptive_walk_pays", "entry_sums",
           "entry_sums_pay", "draw_counts", "key_sums", "laplace_draw_totals", "lookup_slots", "slot_sums", "sorted_draws"]

#: Largest share of a class-wise metric's entries outside the first uniform bin at which the compiled entry
#: sums beat the per-column sums (``BinnedResampler._few_upper_entries``; bench/bench_bootstrap.py): every
#: case but nearly binary ones (0.33 of the entries at 10 classes, where they are twice as fast at 50,000
#: and 100,000 rows; at 2 classes, 0.82 of them and as fast).
COMPILED_ENTRY_SHARE = 0.75

#: The same share for numpy's bincounts: only with many classes (gathering each entry's weight then costs
#: more; at 100,000 x 10 the column path is about 6x faster, at 50,000 x 1,000 the entry sums are).
NUMPY_ENTRY_SHARE = 1 / 8


def key_sums(indices: NDArray[np.integer], keys: NDArray[np.integer], values: NDArray[np.float64], n_keys: int,
             ) -> tuple[NDArray[np.integer], NDArray[np.float64]]:
    """Per resample, the count and the sum of ``values`` of its drawn rows at each key: two arrays (R, n_keys).

    Resample ``r`` draws the rows ``indices[r]``; ``counts[r] = np.bincount(keys[indices[r]], minlength=n_keys)``
    and ``sums[r]`` the same weighted by ``values[indices[r]]``. The compiled kernel
    (:data:`calib_core._accel.compiled.key_sums`) makes one pass over each resample's drawn rows without
    gathering their keys and values first: the same additions in the same order, so the same sums.
    """
    if compiled.key_sums is not None:
        return compiled.key_sums(indices, keys, values, n_keys)
    counts = np.empty((indices.shape[0], n_keys), dtype=np.int64)
    sums = np.empty((indices.shape[0], n_keys))
    for r, rows in enumerate(indices):
        drawn_keys = np.take(keys, rows, mode="clip")  # rows are in range
        counts[r] = np.bincount(drawn_keys, minlength=n_keys)
        sums[r] = np.bincount(drawn_keys, weights=np.take(values, rows, mode="clip"), minlength=n_keys)
    return counts, sums


def entry_sums(weights: NDArray[np.integer], rows: NDArray[np.intp], slots: NDArray[np.intp],
               values: NDArray[np.float64], targets: NDArray[np.float64], n_slots: int,
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Weighted counts and sums of entries per slot and resample: three float arrays (R, n_slots).

    Entry ``e`` (row ``rows[e]``, slot ``slots[e]``, value ``values[e]``, target
    ``targets[e]``) counts with its row's weight ``w = weights[r, rows[e]]``:
    ``np.bincount(slots, weights=w * x, minlength=n_slots)`` for ``x`` = 1,
    ``values``, ``targets``. The compiled kernel
    (:data:`calib_core._accel.compiled.entry_sums`) reads the integer weights
    directly instead of building three (resamples x entries) float arrays and
    their keys: the same additions in the same order, so the same sums, bit for bit.
    """
    if compiled.entry_sums is not None:
        return compiled.entry_sums(weights, rows, slots, values, targets, n_slots)
    n_res = weights.shape[0]
    picked = weights[:, rows].astype(np.float64)  # (R, M) weights of the entries
    flat = (slots[None, :] + (np.arange(n_res) * n_slots)[:, None]).ravel()
    size = n_res * n_slots
    # float64 also without entries (bincount then returns integers, which would truncate the caller's sums)
    return tuple(np.bincount(flat, weights=(picked * factor).ravel(), minlength=size)
                 .astype(np.float64).reshape(n_res, n_slots) for factor in (1.0, values, targets))


def entry_sums_pay(n_entries: int, n_cells: int) -> bool:
    """Whether :func:`entry_sums` over ``n_entries`` of ``n_cells`` (rows x classes) beats summing every column.

    Below :data:`COMPILED_ENTRY_SHARE` of the cells with the compiled kernel,
    below :data:`NUMPY_ENTRY_SHARE` with numpy's bincounts.
    """
    share = COMPILED_ENTRY_SHARE if compiled.entry_sums is not None else NUMPY_ENTRY_SHARE
    return n_entries < share * n_cells


def adaptive_bin_sums(order: NDArray[np.intp], values: NDArray[np.float64], targets: NDArray[np.float64],
                      tie_end: NDArray[np.intp], weights_by_row: NDArray[np.integer], totals: NDArray[np.float64],
                      start: int, n_bins: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """One sorted column's adaptive bins under each resample's row weights: (count, value, target), each (R, n_bins).

    ``order`` lists the column's rows by ascending value, ``values`` and
    ``targets`` are in that order and ``tie_end[j]`` is the end (exclusive) of
    the run of values equal to the j-th; resample ``r`` gives row ``i`` the
    weight ``weights_by_row[i, r]`` (shape (N + 1, R)), ``totals[r]`` in all.
    Over the positions ``start:`` (the values above a threshold), resample
    ``r``'s ``n_kept`` weighted values fall in the ``np.array_split`` runs of
    :func:`calib_core.binning.array_split_ends`, each bin ending at the end of
    the run of ties that reaches its goal (tied values share a bin; a bin
    swallowed by ties is empty; with nothing kept every bin is empty):
    :func:`calib_core.inference.resample.adaptive_ends`'s bins.

    The compiled kernel (:data:`calib_core._accel.compiled.adaptive_bin_sums`)
    walks the sorted rows once, every resample's running sums together; numpy
    takes the cumulative sums from ``start`` in the same order and finds each
    bin's end by a search. The same bins; counts exact, sums equal up to the
    order of the additions (``tests/ground/test_accel_twins.py``).
    """
    if compiled.adaptive_bin_sums is not None:
        return compiled.adaptive_bin_sums(order, values, targets, tie_end, weights_by_row, totals, start, n_bins)
    n_res = weights_by_row.shape[1]
    drawn = weights_by_row[order[start:]].astype(np.float64)  # (M - start, R)
    cumulative = np.zeros((3, drawn.shape[0] + 1, n_res))
    np.cumsum(drawn, axis=0, out=cumulative[0, 1:])
    np.cumsum(drawn * values[start:, None], axis=0, out=cumulative[1, 1:])
    np.cumsum(drawn * targets[start:, None], axis=0, out=cumulative[2, 1:])
    n_kept = (totals - weights_by_row[order[:start]].sum(axis=0)).astype(np.int64)  # the kernel's count
    runs = np.arange(1, n_bins + 1)
    sums = np.zeros((3, n_res, n_bins))
    for r in np.flatnonzero(n_kept > 0):
        size, extra = divmod(int(n_kept[r]), n_bins)
        goal = runs * size + np.minimum(runs, extra)  # the weight each bin's end must reach, from `start`
        reach = np.searchsorted(cumulative[0, :, r], goal, side="left")  # first prefix reaching the goal
        ends = tie_end[start + reach - 1] - start  # ... moved to the end of its run of ties
        at = cumulative[:, np.concatenate([[0], ends]), r]  # (3, n_bins + 1)
        sums[:, r] = np.diff(at, axis=1)
    return sums[0], sums[1], sums[2]


def adaptive_walk_pays() -> bool:
    """Whether walking each sorted column once per resample (:func:`adaptive_bin_sums`) beats the resampler's
    chunked prefix sums, which serve every adaptive spec of a column at once: with the compiled kernel only
    (its numpy twin, the same bins, is 3-5x slower than the prefix sums at 5,000 x 100 and 20,000 x 20 with
    40 resamples of ACE)."""
    return compiled.adaptive_bin_sums is not None


def sorted_draws(keys: NDArray[np.integer], rows: NDArray[np.integer], n_keys: int) -> NDArray[np.integer]:
    """The drawn ``rows`` in ascending order of ``keys[rows]`` (integers ``0 .. n_keys - 1``), ties in draw order.

    ``rows[np.argsort(keys[rows], kind="stable")]``: a top-label statistic that
    sorts its confidences stably (the KS error, MMCE) then meets sorted data
    and sees the same sequence of values. The compiled kernel
    (:data:`calib_core._accel.compiled.sorted_draws`) does it by one counting
    pass instead of a comparison sort: the same rows.
    """
    if compiled.sorted_draws is not None:
        return compiled.sorted_draws(keys, rows, n_keys)
    return rows[np.argsort(keys[rows], kind="stable")]


def draw_counts(position: NDArray[np.integer], indices: NDArray[np.integer], n_places: int) -> NDArray[np.int64]:
    """``counts[r, p]``: how many of resample ``r``'s drawn rows ``indices[r]`` sit at place ``p = position[row]``,
    an array (R, n_places) (one bincount for all resamples). With ``position`` a row's place in the sorted order
    of a statistic's values, a resample is the sorted data with these counts as its weights."""
    n_draws = indices.shape[0]
    offsets = (np.arange(n_draws) * n_places)[:, None]
    flat = (np.take(position, indices) + offsets).ravel()
    return np.bincount(flat, minlength=n_draws * n_places).reshape(n_draws, n_places)


def laplace_draw_totals(scaled: NDArray[np.float64], residual: NDArray[np.float64], position: NDArray[np.integer],
                        indices: NDArray[np.integer]) -> NDArray[np.float64]:
    """Per resample, ``sum_ij a_i a_j exp(-|s_i - s_j|)`` with ``a = counts * residual``: an array (R,).

    ``scaled`` (N,) ascending (the sorted confidences over the bandwidth) and ``residual`` (N,) in the same
    order; ``position[row]`` is a row's place in that order; resample ``r`` draws the rows ``indices[r]``, so
    row ``i`` of the order counts ``counts[r, i]`` times. The quadratic form of MMCE's V-statistic over the
    repeated rows (:func:`calib_core.metrics.kernel.mmce_of_draws`). The numpy twin splits ``a`` by sign and
    keeps the exclusive prefix ``F_i = sum_{j < i} a_j exp(s_j - s_i)`` in the log domain
    (:func:`numpy.logaddexp.accumulate`, as :func:`calib_core.metrics.kernel.mmce_of_top_label`); the
    compiled kernel (:data:`calib_core._accel.compiled.laplace_draw_totals`) counts each resample's rows in
    one pass and runs ``F_i = (F_{i-1} + a_{i-1}) exp(s_{i-1} - s_i)`` (the same sum up to the order of the
    additions, about 1e-13 relative).
    """
    if compiled.laplace_draw_totals is not None:
        decay = np.exp(np.concatenate([[-np.inf], scaled[:-1] - scaled[1:]]))
        return compiled.laplace_draw_totals(decay, residual, position, indices)
    weighted = draw_counts(position, indices, scaled.shape[0]) * residual
    totals = np.einsum("ij,ij->i", weighted, weighted)
    for sign in (1.0, -1.0):
        part = np.maximum(sign * weighted, 0.0)
        with np.errstate(divide="ignore"):
            log_weight = np.log(part) + scaled  # -inf where the part is 0
        running = np.logaddexp.accumulate(log_weight, axis=1)
        prefix = np.exp(running[:, :-1] - scaled[1:])
        totals += 2.0 * sign * np.einsum("ij,ij->i", weighted[:, 1:], prefix)
    return totals


def lookup_slots(values: NDArray[np.float64], table: NDArray[np.signedinteger], scale: float,
                 points: NDArray[np.float64]) -> NDArray[np.intp]:
    """The slot of each value among the sorted cut ``points``: ``2 * i`` in (P[i-1], P[i]), ``2 * i + 1`` at P[i].

    ``table[int(value * scale)]`` (the index clipped to the table), or, where
    the table holds -1 (a grid cell with a point in it),
    ``2 * searchsorted(points, value)`` plus 1 when the value is that point:
    the numpy statement of :func:`slot_sums`'s slots, also what the streaming
    engine's later passes use to place their collected values.
    """
    cells = np.multiply(values, float(scale), out=np.empty(values.shape, np.intp), casting="unsafe")
    slot = table.take(cells, mode="clip").astype(np.intp)
    unsure = np.flatnonzero(slot < 0)
    if unsure.size:
        at = np.searchsorted(points, values[unsure], side="left")
        slot[unsure] = 2 * at + (points[np.minimum(at, points.size - 1)] == values[unsure])
    return slot


def slot_sums(values: NDArray[np.float64], targets: NDArray[np.float64], labels: NDArray[np.intp], label: int,
              threshold: float, table: NDArray[np.signedinteger], scale: float, points: NDArray[np.float64],
              collect: NDArray[np.bool_], count: NDArray[np.float64], sum_value: NDArray[np.float64],
              sum_target: NDArray[np.float64], kept_values: NDArray[np.float64],
              kept_targets: NDArray[np.float64]) -> int:
    """Add one value set to the slot sums of the exact streaming engine's later passes; return the values kept.

    The set: the ``values`` above ``threshold`` (``-inf``: all) with their
    targets ``targets[i]`` (``label < 0``) or ``labels[i] == label``. Each
    value's slot is ``table[int(value * scale)]`` (the index clipped to the
    table), or, where the table holds -1 (a grid cell with a point in it),
    ``2 * searchsorted(points, value)`` plus 1 when the value is that point.
    The counts and the sums of values and targets per slot are added in row
    order (as ``np.bincount``) into ``count``, ``sum_value`` and
    ``sum_target``; the values and targets of the slots marked in ``collect``
    are written, in row order, to the start of ``kept_values`` and
    ``kept_targets``, and their number is returned. The compiled kernel
    (:data:`calib_core._accel.compiled.slot_sums`) does it in one read of the
    column, numpy in about ten passes: the same sums, bit for bit.
    """
    if compiled.slot_sums is not None:
        return compiled.slot_sums(values, targets, labels, label, threshold, table, scale, points, collect, count,
                                  sum_value, sum_target, kept_values, kept_targets)
    if threshold > -np.inf:
        kept = values > threshold
        values = values[kept]
        chosen = targets[kept] if label < 0 else (labels[kept] == label).astype(np.float64)
    else:
        chosen = targets if label < 0 else (labels == label).astype(np.float64)
    if values.size == 0:
        return 0
    slot = lookup_slots(values, table, scale, points)
    size = count.size
    count += np.bincount(slot, minlength=size)
    sum_value += np.bincount(slot, weights=values, minlength=size)
    sum_target += np.bincount(slot, weights=chosen, minlength=size)
    keep = collect[slot]
    n_kept = int(np.count_nonzero(keep))
    kept_values[:n_kept] = values[keep]
    kept_targets[:n_kept] = chosen[keep]
    return n_kept
