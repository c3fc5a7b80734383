"""Centred isotonic regression (CIR), one-vs-rest for K > 2.

References
----------
.. [Oron2017] Oron, A. P. & Flournoy, N. "Centered isotonic regression:
   point and interval estimation for dose-response studies", Statistics in
   Biopharmaceutical Research 9(3), 258-267, 2017, section 2.2 (the CIR
   algorithm: each flat stretch of the isotonic fit collapsed to one point
   at its weighted mean dose; stretches at 0 or 1 kept).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import isotonic_regression

from calib_core.recalibration._base import Recalibrator
from calib_core.recalibration._numeric import column_results, map_columns
from calib_core.recalibration.one_vs_rest import _combine, _target_classes

__all__ = ["CenteredIsotonic", "centered_isotonic_knots"]


def centered_isotonic_knots(values: NDArray[np.float64], targets: NDArray[np.float64],
                            weights: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Interpolation knots of the centred isotonic fit of ``targets`` on ``values``.

    Returns
    -------
    knots_x, knots_y : ndarray
        Increasing ``knots_x``; predict with ``np.interp(v, knots_x, knots_y)``
        (linear between knots, the end values outside them).

    Notes
    -----
    [Oron2017]_ section 2.2: the weighted isotonic (pool adjacent violators)
    fit is computed on the distinct values (ties merged, weights summed);
    each run of equal fitted value ``y`` over rows with values
    ``x_first..x_last`` and weighted mean value ``x_mean`` becomes

    * ``(x_first, y), (x_last, y)`` when ``y`` is 0 or 1 (such a stretch is
      consistent with a boundary and is not centred);
    * ``(x_first, y), (x_mean, y)`` for the first run and
      ``(x_mean, y), (x_last, y)`` for the last (the fit keeps its range);
    * ``(x_mean, y)`` otherwise,

    and the map interpolates linearly between these points, so it is
    strictly increasing between its first and last run. It keeps exact 0s
    and 1s where the isotonic fit has them (as the ``cir-model`` package
    does by default). Rows of weight 0 are left out.
    """
    if weights is not None:
        keep = weights > 0
        values, targets, weights = values[keep], targets[keep], weights[keep]
    order = np.argsort(values, kind="stable")
    v, t = values[order], targets[order]
    w = np.ones(v.size) if weights is None else weights[order]
    tie_start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    tie_weight = np.add.reduceat(w, tie_start)
    fitted = isotonic_regression(np.add.reduceat(w * t, tie_start) / tie_weight, weights=tie_weight,
                                 increasing=True).x
    run_of_tie = np.flatnonzero(np.r_[True, fitted[1:] != fitted[:-1]])
    run_row_start = tie_start[run_of_tie]
    run_row_end = np.r_[run_row_start[1:], v.size] - 1
    run_y = fitted[run_of_tie]
    x_mean = np.add.reduceat(w * v, run_row_start) / np.add.reduceat(w, run_row_start)
    boundary = (run_y == 0.0) | (run_y == 1.0)
    is_first = np.arange(run_y.size) == 0
    is_last = (np.arange(run_y.size) == run_y.size - 1) & ~is_first
    left = np.where(boundary | is_first, v[run_row_start], x_mean)
    right = np.where(boundary | is_last, v[run_row_end], x_mean)
    knots_x = np.column_stack([left, right]).ravel()
    knots_y = np.repeat(run_y, 2)
    keep = np.r_[True, knots_x[1:] > knots_x[:-1]]
    return knots_x[keep], knots_y[keep]


class CenteredIsotonic(Recalibrator):
    """Centred isotonic regression of each class's indicator on its probability (one-vs-rest).

    Parameters
    ----------
    input : {"logits", "probs"}, default "probs"
        Logits are turned into ``softmax(logits)``.

    Attributes
    ----------
    knots_x_, knots_y_ : list of ndarray
        One array per fitted class (class 1 only for K = 2): the knots of
        :func:`centered_isotonic_knots`.

    Notes
    -----
    Isotonic regression fits a step function with flat stretches; CIR
    [Oron2017]_ replaces each flat stretch by one point at the weighted mean
    of its values, ``(x̄_m, ŷ_m)`` with ``x̄_m = sum_{i in m} w_i x_i / sum_{i in m} w_i``,
    and interpolates linearly between them, so the map is strictly
    increasing where isotonic regression was flat. Stretches at exactly 0
    or 1 are kept as they are (the paper's rule and ``cir-model``'s
    default), so CIR can still emit exact 0 or 1 (see
    :attr:`~calib_core.recalibration.Recalibrator.emits_exact_zeros`).
    K > 2: one map per class, outputs divided by their row sum (an all-zero
    row becomes uniform). ``sample_weight`` weighs the isotonic fit and the
    means. Agrees with ``cir_model.CenteredIsotonicRegression`` applied as
    in probmetrics' ``CenteredIsotonicRegressionCalibrator`` (inputs
    clipped to the fitted range), except that scikit-learn also merges
    values closer than 1e-15 and here only exact ties are merged.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.8]); y = np.array([0, 1, 0, 1, 0, 1])
    >>> cir = CenteredIsotonic().fit(np.column_stack([1 - p, p]), y)
    >>> cir.predict_proba(np.column_stack([1 - p, p]))[:, 1].round(3).tolist()
    [0.0, 0.182, 0.364, 0.529, 0.765, 1.0]
    """

    method = "centered_isotonic"
    display_name = "Centred isotonic regression"
    works_on = "probs"
    emits_exact_zeros = True
    #: Weighted pool-adjacent-violators: any non-negative weights, whole ones exactly as repeated rows.
    weighted_loss = True
    _fitted_attributes = ("knots_x_", "knots_y_")

    def __init__(self, *, input: str = "probs") -> None:
        self.input = input

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp], weights: NDArray[np.float64] | None = None,
             ) -> None:
        classes = _target_classes(x.shape[1])
        knots = column_results(
            x if len(classes) == x.shape[1] else x[:, classes],
            lambda j, column: centered_isotonic_knots(column, (labels == classes[j]).astype(np.float64), weights))
        self.knots_x_ = [knots_x for knots_x, _ in knots]
        self.knots_y_ = [knots_y for _, knots_y in knots]

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        classes = _target_classes(x.shape[1])
        return _combine(map_columns(x if len(classes) == x.shape[1] else x[:, classes],
                                    lambda j, column: np.interp(column, self.knots_x_[j], self.knots_y_[j])))
