"""Piecewise-constant maps: uniform-mass histogram binning and the
accuracy-preserving calibrated map of Gruber & Buettner (a cautionary baseline).

References
----------
.. [Zadrozny2001] Zadrozny, B. & Elkan, C. "Obtaining calibrated probability
   estimates from decision trees and naive Bayesian classifiers", ICML 2001
   (histogram binning).
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning", CVPR
   Workshops 2019, section 5.1 (class-conditional histogram binning).
.. [Gupta2021] Gupta, C. & Ramdas, A. "Top-label calibration and multiclass-to-
   binary reductions", ICLR 2022 (top-label histogram binning).
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, section 4.3, eq.
   (21)-(23) (uniform-mass recalibration) and the optimal bin count.
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix E.1,
   eq. (40) and (42).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calib_core.binning import adaptive_upper_edges, optimal_n_bins, weighted_upper_edges
from calib_core.recalibration._base import Recalibrator, _renormalise
from calib_core.recalibration._numeric import column_results, map_columns
from calib_core.metrics.binned import top_label
from calib_core.validation import check_flag, check_n_bins, row_argmax

__all__ = ["AccuracyPreservingCalibratedMap", "HistogramBinning"]


def _fit_bins(values: NDArray[np.float64], targets: NDArray[np.float64],
              n_bins: int, weights: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Uniform-mass bin upper edges of ``values`` and the mean target in each bin.

    Edges follow the package convention (``np.array_split`` runs of the
    sorted values, each run's last value as upper edge); repeated edges
    (ties) are merged, so every bin holds at least one value. With
    ``weights`` (positive) the edges are the weighted ones
    (:func:`calib_core.binning.weighted_upper_edges`) and the means weighted:
    integer weights give the bins of the repeated rows.
    """
    if weights is not None:
        edges = np.unique(weighted_upper_edges(values, weights, n_bins))
        index = _bin_of(values, edges)
        counts = np.bincount(index, weights=weights, minlength=edges.size)
        return edges, np.bincount(index, weights=weights * targets, minlength=edges.size) / counts
    sorted_values = np.sort(values)
    edges = np.unique(adaptive_upper_edges(sorted_values, n_bins))
    # Bin j holds the values in (edges[j - 1], edges[j]]: counted along the sorted values (every edge is one
    # of them, the last the largest). Targets are 0/1, so their sums need only the rows with target 1.
    counts = np.diff(np.searchsorted(sorted_values, edges, side="right"), prepend=0)
    hit = np.flatnonzero(targets)
    sums = np.bincount(_bin_of(values[hit], edges), weights=targets[hit], minlength=edges.size)
    return edges, sums / counts


def _bin_of(values: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """First bin whose upper edge is >= the value; values above the last edge go to the last bin."""
    return np.minimum(np.searchsorted(edges, values, side="left"), edges.size - 1)


class HistogramBinning(Recalibrator):
    """Uniform-mass histogram binning: each probability becomes the observed frequency of its bin.

    Parameters
    ----------
    n_bins : int or None, default None
        Bins per map; ``None`` means :func:`calib_core.optimal_n_bins` of the
        number of fitting rows, ``floor((8 N / log 2)^(1/3))`` [Futami2024]_.
    class_conditional : bool, default True
        True: one map per class (class 1 only for K = 2), fitted on column k
        against ``labels == k``, outputs renormalised per row — the
        class-conditional histogram binning of [Nixon2019]_ section 5.1.
        False: one top-label map pooled over all predicted classes, fitted on
        the confidence ``max_k p_k`` against correctness [Gupta2021]_; the
        confidence is replaced by its bin's accuracy and the other classes
        are rescaled to share the rest (uniformly when they were all 0).
    input : {"logits", "probs"}, default "probs"

    Attributes
    ----------
    n_bins_ : int
        Bin count used.
    edges_ : list of ndarray
        Upper edges of the bins of each map (one array per map).
    values_ : list of ndarray
        Observed frequency in each bin (the map's output).

    Notes
    -----
    With bins :math:`I_b` fitted on the calibration set S,
    :math:`h(p) = \\sum_b \\bar y_{b,S}\\, 1[p \\in I_b]` [Futami2024]_ eq. (21).
    Bins are the package's adaptive (uniform-mass) bins of the fitting
    values (``np.array_split`` runs, tied values share a bin); a new value
    goes to the first bin whose upper edge is >= it, values above the last
    edge to the last bin. Class-conditional outputs are divided by their row
    sum (an all-zero row becomes uniform), so they are not exactly the bin
    frequencies for K > 2. Histogram binning optimises the binned error it
    is measured with; judge it with class-wise or bin-free metrics on a test
    split [Nixon2019]_.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9]); y = np.array([0, 0, 1, 0, 1, 1])
    >>> hb = HistogramBinning(2).fit(np.column_stack([1 - p, p]), y)
    >>> hb.values_[0].round(3).tolist()
    [0.333, 0.667]
    """

    method = "histogram_binning"
    display_name = "Histogram binning"
    works_on = "probs"
    weighted_loss = True
    emits_exact_zeros = True
    _fitted_attributes = ("n_bins_", "edges_", "values_")

    def __init__(self, n_bins: int | None = None, *, class_conditional: bool = True,
                 input: str = "probs") -> None:
        self.n_bins = n_bins
        self.class_conditional = class_conditional
        self.input = input

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_bins is not None:
            check_n_bins(self.n_bins)
        check_flag(self.class_conditional, "class_conditional")

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp],
             weights: NDArray[np.float64] | None = None) -> None:
        n_rows, n_classes = x.shape
        # with weights the default bin count is that of the summed weight (the repeated rows' count), at least 1 row
        size = n_rows if weights is None else max(1, int(round(float(weights.sum()))))
        n_bins = optimal_n_bins(size) if self.n_bins is None else int(self.n_bins)
        self.n_bins_ = n_bins
        if not self.class_conditional:
            fitted = [_fit_bins(*top_label(x, labels), n_bins, weights)]
        elif n_classes == 2:
            fitted = [_fit_bins(np.ascontiguousarray(x[:, 1]), (labels == 1).astype(np.float64), n_bins, weights)]
        else:  # each class column contiguous, by blocks of columns
            fitted = column_results(x, lambda k, column: _fit_bins(column, (labels == k).astype(np.float64), n_bins,
                                                                   weights))
        self.edges_ = [edges for edges, _ in fitted]
        self.values_ = [means for _, means in fitted]

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        n_rows, n_classes = x.shape
        if not self.class_conditional:
            rows = np.arange(n_rows)
            predicted = row_argmax(x)
            confidence = x[rows, predicted]
            new_confidence = self.values_[0][_bin_of(confidence, self.edges_[0])]
            rest = 1.0 - confidence
            out = x.copy()
            out[rows, predicted] = 0.0
            has_rest = rest > 0
            scale = np.where(has_rest, (1.0 - new_confidence) / np.where(has_rest, rest, 1.0), 0.0)
            out *= scale[:, None]
            # When the other classes held no mass, they share the new remainder equally.
            out += np.where(has_rest, 0.0, (1.0 - new_confidence) / (n_classes - 1))[:, None]
            out[rows, predicted] = new_confidence
            return _renormalise(out)
        if n_classes == 2:
            q = self.values_[0][_bin_of(x[:, 1], self.edges_[0])]
            return np.column_stack([1.0 - q, q])
        # Column by column, each contiguous (map_columns: blocks of columns, no transposed copy).
        return _renormalise(map_columns(x, lambda k, column: self.values_[k][_bin_of(column, self.edges_[k])]))


class AccuracyPreservingCalibratedMap(Recalibrator):
    """Gruber & Buettner's calibrated, accuracy-preserving map — a cautionary baseline.

    Every prediction is replaced by the label distribution of the fitting
    rows that had the same predicted class:
    ``t(p) = P(Y | argmax f(X) = argmax p)``.

    Parameters
    ----------
    input : {"logits", "probs"}, default "probs"

    Attributes
    ----------
    class_distributions_ : ndarray of shape (K, K)
        Row a: the label frequencies among fitting rows predicted as class a.
    counts_ : ndarray of shape (K,)
        Number of fitting rows predicted as each class.

    Notes
    -----
    [Gruber2022]_ appendix E.1.2, eq. (42): with ``r(p) = e_{argmax p}``,
    ``t(p) = P(Y | r(f(X)) = r(p))``, estimated by
    ``P_a = (1 / |I_a|) sum_{i in I_a} e_{y_i}``, ``I_a = {i : r(f(x_i)) = a}``.
    By Lemma E.1 the result is calibrated (eq. 43) — ECE, class-wise ECE and
    every canonical calibration error are ~0 — and it keeps the accuracy
    whenever, for every predicted class, that class is the most frequent
    label. But it only outputs K distinct vectors: all the sharpness
    (resolution, refinement) of the model within a predicted class is
    destroyed (Proposition E.2). It shows that "calibrated" alone is not
    "good": compare proper scores (Brier, NLL), not calibration errors only.

    For K = 2 the predicted class is 1 when ``x[:, 1] >= x[:, 0]``
    (``p_1 >= 0.5``, eq. 40); otherwise the arg-max, ties to the lowest
    index. A class never predicted on the fitting data maps to the overall
    label frequencies of the fitting data.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.1, 0.9]]); y = np.array([0, 1, 1, 1])
    >>> m = AccuracyPreservingCalibratedMap().fit(p, y)
    >>> m.predict_proba(p).tolist()
    [[0.5, 0.5], [0.5, 0.5], [0.0, 1.0], [0.0, 1.0]]
    """

    method = "accuracy_preserving_calibrated_map"
    display_name = "Calibrated map (Gruber & Buettner E.1)"
    works_on = "probs"
    emits_exact_zeros = True
    _fitted_attributes = ("class_distributions_", "counts_")

    def __init__(self, *, input: str = "probs") -> None:
        self.input = input

    @staticmethod
    def _predicted(x: NDArray[np.float64]) -> NDArray[np.intp]:
        if x.shape[1] == 2:
            return (x[:, 1] >= x[:, 0]).astype(np.intp)
        return row_argmax(x)

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        n_classes = x.shape[1]
        predicted = self._predicted(x)
        joint = np.bincount(predicted * n_classes + labels, minlength=n_classes * n_classes)
        joint = joint.reshape(n_classes, n_classes).astype(np.float64)
        counts = joint.sum(axis=1)
        marginal = np.bincount(labels, minlength=n_classes) / labels.size
        seen = counts > 0
        distributions = np.where(seen[:, None], joint / np.where(seen, counts, 1.0)[:, None], marginal)
        self.class_distributions_ = distributions
        self.counts_ = counts

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.class_distributions_[self._predicted(x)].copy()
