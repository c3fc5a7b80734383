"""Compiled kernels of the bootstrap's per-resample statistics (loaded by :mod:`calib_core._accel.compiled`).

Kept apart from :mod:`calib_core._accel.compiled` only so that neither module
grows past the size limit; :func:`load` is one more of its loaders and its
kernels are read only through :mod:`calib_core._accel.compiled`.

``laplace_draw_totals``
    The bootstrap of MMCE (:func:`calib_core.metrics.kernel.mmce_of_draws`):
    for each resample, the Laplace-kernel quadratic form
    ``sum_ij a_i a_j exp(-|s_i - s_j|)`` of its rows' count-weighted residuals
    on the data's sorted scaled confidences, by one counting pass over the
    drawn rows and one pass over the sorted rows (the prefix
    ``F_i = (F_{i-1} + a_{i-1}) d_i`` with the fixed decays
    ``d_i = exp(s_{i-1} - s_i)``), instead of a gather, a sort and two
    ``logaddexp.accumulate`` per resample (about 21 ms per resample at
    12,000 rows on a loaded machine; the kernel about 0.05 ms). The same
    sum as the numpy twin (:func:`calib_core._accel.laplace_draw_totals`) up to
    the order of the additions (about 1e-13 relative).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["load"]


def load(cache: bool = True) -> dict[str, Callable] | None:
    """The kernels of this module compiled by numba (None without numba or with ``CALIB_CORE_NO_NUMBA``)."""
    from calib_core._accel.compiled import numba_or_none  # called while compiled loads its kernels

    numba = numba_or_none()
    if numba is None:
        return None

    @numba.njit(cache=cache, nogil=True)
    def laplace_kernel(decay, residual, position, indices):  # pragma: no cover - compiled
        n_draws, n_drawn = indices.shape
        n = residual.shape[0]
        counts = np.zeros(n)
        totals = np.empty(n_draws)
        for r in range(n_draws):
            for j in range(n_drawn):
                counts[position[indices[r, j]]] += 1.0
            total = 0.0
            prefix = 0.0  # F_i = sum_{j < i} a_j exp(s_j - s_i)
            previous = 0.0
            for i in range(n):
                prefix = (prefix + previous) * decay[i]
                a = counts[i] * residual[i]
                total += a * (a + 2.0 * prefix)
                previous = a
                counts[i] = 0.0
            totals[r] = total
        return totals

    return {"laplace_draw_totals": laplace_kernel}
