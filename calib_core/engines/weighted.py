"""Row weights in the engines' sums: the per-batch weight check and the weighted sums of one block.

A weight is a frequency (``docs/weights.md``): in
:class:`~calib_core.engines.stats.CalibrationStats` built with
``weighted=True`` every per-cell count becomes a summed weight and every sum
a weighted sum -- the sums :func:`calib_core.binning.bin_statistics` forms with
``sample_weight`` -- so the streamed metrics equal the in-memory weighted
ones to round-off, and integer weights equal repeated rows.

References
----------
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning",
   CVPR Workshops 2019, eq. 1-2 (ECE, SCE), here with frequency weights.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.metrics.scores import NLL_EPSILON
from calib_core.validation import CalibrationInputError

__all__ = [
    "add_weighted_block",
    "check_batch_weights",
    "checked_weights",
]


def checked_weights(stats: Any, sample_weight: ArrayLike | None, n_rows: int) -> NDArray[np.float64] | None:
    """A batch's row weights, checked (finite, ``>= 0``; a batch may weigh 0 in all), or None.

    Statistics built without weights refuse them; statistics built with
    weights read a batch without them as weights 1.
    """
    weighted = bool(getattr(stats, "weighted", False))
    if sample_weight is None:
        return np.ones(n_rows) if weighted else None
    if not weighted:
        raise CalibrationInputError(
            f"`sample_weight` given to {type(stats).__name__} built without weights; build it with weighted=True.")
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_rows,):
        raise CalibrationInputError(f"`sample_weight` must have shape ({n_rows},), one weight per row, got {weights.shape}.")
    return check_batch_weights(weights, "`sample_weight`")


def check_batch_weights(weights: NDArray[np.float64], what: str, row_offset: int = 0,
                        display: str = "") -> NDArray[np.float64]:
    """The weights of one batch of rows: finite and ``>= 0`` (the rule of
    :func:`calib_core.validation.check_sample_weight`; the positive total is
    checked once, on all batches, by :meth:`CalibrationStats.metrics`).

    ``row_offset`` + 1 is the number of the batch's first row in its file.
    """
    for bad, rule in ((~np.isfinite(weights), "a finite number"), (weights < 0, ">= 0")):
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            where = f"{display}: " if display else ""
            raise CalibrationInputError(f"{where}{what} must be {rule} in every row; row {row_offset + row + 1} "
                                        f"holds {weights[row]!r}.")
    return weights


def add_weighted_block(stats: Any, values: NDArray[np.float64], labels: NDArray[np.intp],
                       weights: NDArray[np.float64]) -> None:
    """Add the weighted sums of one checked class-major block ``(K, m)`` to weighted ``stats`` (in place).

    ``stats`` is a :class:`~calib_core.engines.stats.CalibrationStats` built
    with ``weighted=True``; see its ``_add_weighted`` for the sums.
    """
    n_classes, n_rows = values.shape
    n_cells = stats.edges.size - 1
    rows = np.arange(n_rows)
    confidence = values.max(axis=0)
    hit = (values.argmax(axis=0) == labels).astype(np.float64)  # ties: the first maximum, as top_label
    true_value = values[labels, rows]
    cells = stats._index(values) + stats._class_starts[:, None]
    size = n_classes * n_cells
    flat = cells.reshape(-1)
    stats.class_count += np.bincount(flat, weights=np.broadcast_to(weights, values.shape).reshape(-1),
                                    minlength=size).reshape(n_classes, n_cells)
    stats.class_sum_value += np.bincount(flat, weights=(values * weights).reshape(-1),
                                        minlength=size).reshape(n_classes, n_cells)
    stats.class_sum_target += np.bincount(cells[labels, rows], weights=weights,
                                         minlength=size).reshape(n_classes, n_cells)
    top = stats._index(confidence)
    stats.top_count += np.bincount(top, weights=weights, minlength=n_cells)
    stats.top_sum_value += np.bincount(top, weights=weights * confidence, minlength=n_cells)
    stats.top_sum_target += np.bincount(top, weights=weights * hit, minlength=n_cells)
    stats.n_rows += n_rows
    stats.sum_weight += float(weights.sum())
    stats.n_correct += float(weights @ hit)
    brier = np.einsum("ki,ki->i", values, values) - 2.0 * true_value + 1.0
    stats.sum_brier += float(weights @ brier)
    stats.sum_nll -= float(weights @ np.log(np.maximum(true_value, NLL_EPSILON)))
    stats.label_count += np.bincount(labels, weights=weights, minlength=n_classes)
