"""Venn-Abers predictors: inductive (IVAP) and cross (CVAP), with each prediction's interval (p0, p1).

A Venn-Abers predictor fits isotonic regression twice per test score s:
once on the calibration pairs plus ``(s, 0)`` and once plus ``(s, 1)``; the
two fitted values at s, ``p0 <= p1``, are a multiprobability prediction
that is valid (perfectly calibrated in the sense of Vovk & Petej) whatever
the data distribution, given exchangeability. A single probability is
``p = p1 / (1 - p0 + p1)``, the minimiser of the worst-case log loss.

References
----------
.. [Vovk2014] Vovk, V. & Petej, I. "Venn-Abers predictors", UAI 2014
   (the predictor, section 2; its validity, Theorem 1).
.. [Vovk2015] Vovk, V., Petej, I. & Fedorova, V. "Large-scale probabilistic
   predictors with and without guarantees of validity", NeurIPS 2015
   (arXiv:1511.00213): Algorithms 1-6 (the tables of p0 and p1 from the
   greatest convex minorant of the cumulative sum diagram), eq. (4) the
   log-loss merge ``p = p1 / (1 - p0 + p1)``, section 4 the cross
   Venn-Abers merge with geometric means.
.. [Manokhin2017] Manokhin, V. "Multi-class probabilistic classification
   using inductive and cross Venn-Abers predictors", COPA 2017 (pairwise
   coupling ``p_i = 1 / (sum_{j != i} 1 / p_ij - (K - 2))``).
"""
from __future__ import annotations

import warnings

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.recalibration._base import Recalibrator, _renormalise
from calib_core.validation import CalibrationInputError, check_choice, check_count

__all__ = ["VennAbers", "venn_abers_tables"]

_MULTICLASS = ("one_vs_rest", "one_vs_one")


def venn_abers_tables(scores: NDArray[np.float64],
                      targets: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The IVAP lookup tables of one binary problem: ``(p0, p1, c)``.

    ``c`` holds the distinct calibration scores in increasing order; a test
    score s takes ``p0[searchsorted(c, s, "right")]`` and
    ``p1[searchsorted(c, s, "left")]`` (:func:`_lookup`).

    Notes
    -----
    [Vovk2015]_ Algorithms 1-4: with the cumulative sum diagram
    ``P_j = (sum of weights, sum of targets)`` over the first j distinct
    scores, p1 at position i is the slope of the greatest convex minorant
    of the diagram with a point (1, 1) inserted at i, found from the left
    with a running corner; p0 likewise from the right with a point (1, 0).
    Transcribed from the ``venn-abers`` package's ``calc_p0p1`` (version
    1.5, classification branch), whose results it reproduces.
    """
    order = np.argsort(scores, kind="stable")
    sorted_scores, sorted_targets = scores[order], targets[order]
    c, first = np.unique(sorted_scores, return_index=True)
    weights = np.diff(first, append=sorted_scores.size).astype(np.float64)
    k = c.size
    cumulative = np.cumsum(sorted_targets)
    diagram = np.zeros((k + 2, 2))
    diagram[0, 0] = -1.0
    diagram[2:, 0] = np.cumsum(weights)
    diagram[2:-1, 1] = cumulative[(first - 1)[1:]]
    diagram[-1, 1] = cumulative[-1]
    # 0/0 slopes are NaN and skipped by nanmin/nanmax; a slice of only NaN (a single distinct score) gives NaN,
    # which the callers' merge turns into the rows' rate below (as the reference package's arithmetic does).
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p1 = _upper_slopes(diagram[1:] + 1.0, k)
        p0 = _lower_slopes(diagram[1:].copy(), k)
    return p0, p1, c


def _upper_slopes(points: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """p1 of every insertion position (Algorithms 1-2 of [Vovk2015]_): a running corner from the left."""
    out = np.zeros(k + 1)
    corner, slope = 0, 0.0
    for i in range(k + 1):
        points[i] -= 1.0
        if i == 0:
            slope = np.nanmin(points[:, 1] / points[:, 0])
        else:
            implied = points[corner, 1] + (points[i, 0] - points[corner, 0]) * slope
            if points[i, 1] < implied:
                slopes = (points[i:, 1] - points[i, 1]) / (points[i:, 0] - points[i, 0])
                smallest = np.nanmin(slopes)
                if not np.isnan(smallest):
                    slope = smallest
                corner = i
        out[i] = slope
    out[-1] = 1.0
    return out


def _lower_slopes(points: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """p0 of every insertion position (Algorithms 3-4 of [Vovk2015]_): a running corner from the right."""
    out = np.zeros(k + 1)
    corner, slope = k, 0.0
    for i in range(k, -1, -1):
        points[i, 0] += 1.0
        if i == k:
            slope = np.nanmax((points[:, 1] - points[i, 1]) / (points[:, 0] - points[i, 0]))
            corner = i
        else:
            implied = points[corner, 1] + (points[i, 0] - points[corner, 0]) * slope
            if points[i, 1] < implied:
                slopes = (points[:, 1] - points[i, 1]) / (points[:, 0] - points[i, 0])
                slopes[i:] = 0.0
                slope = np.nanmax(slopes)
                corner = i
        out[i] = slope
    return out


def _lookup(table: tuple[NDArray[np.float64], ...], scores: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """``(p0, p1)`` of test scores from :func:`venn_abers_tables`."""
    p0, p1, c = table
    return p0[np.searchsorted(c, scores, "right")], p1[np.searchsorted(c, scores, "left")]


def _merge(p0: NDArray[np.float64], p1: NDArray[np.float64]) -> NDArray[np.float64]:
    """``p1 / (1 - p0 + p1)``: the probability of least worst-case log loss ([Vovk2015]_ eq. 4)."""
    return p1 / (1.0 - p0 + p1)


class VennAbers(Recalibrator):
    """Inductive or cross Venn-Abers predictor; one-vs-rest or one-vs-one for K > 2.

    Parameters
    ----------
    n_folds : int or None, default None
        ``None``: the inductive predictor (IVAP), fitted on every row given
        to ``fit``. An integer >= 2: the cross predictor (CVAP) with that
        many stratified folds; each fold's rows give one IVAP and the folds'
        ``(p0, p1)`` are merged with geometric means,
        ``p = GM(p1) / (GM(1 - p0) + GM(p1))`` ([Vovk2015]_ section 4; the
        model is fixed, so the folds differ only in their calibration rows).
    multiclass : {"one_vs_rest", "one_vs_one"}, default "one_vs_rest"
        For K > 2: one predictor per class on column k against
        ``labels == k``, outputs divided by their row sum; or one predictor
        per pair of classes on the rows of those two classes, score
        ``p_j / (p_i + p_j)``, coupled by
        ``p_i = 1 / (sum_{j != i} 1 / p_ij - (K - 2))`` and renormalised
        [Manokhin2017]_ (K (K - 1) / 2 predictors: slow above a few dozen
        classes). Both as the ``venn-abers`` package's ``one_vs_all`` and
        ``one_vs_one``.
    seed : int, default 0
        Seeds the folds of the cross predictor.
    input : {"logits", "probs"}, default "probs"

    Attributes
    ----------
    tables_ : list
        Per fold (one for IVAP), per binary problem, the ``(p0, p1, c)``
        tables of :func:`venn_abers_tables`.

    Notes
    -----
    [Vovk2014]_, [Vovk2015]_ Algorithms 1-6: for a test score s,
    ``p0(s)`` (``p1(s)``) is the isotonic regression of the calibration
    labels, with s added labelled 0 (1), evaluated at s; the prediction is
    ``p = p1 / (1 - p0 + p1)`` (eq. 4), strictly between 0 and 1, so the
    method never emits an exact 0 or 1 for K = 2 and one-vs-rest.
    :meth:`predict_interval` returns ``(p0, p1)``. ``sample_weight`` is
    refused: validity rests on exchangeable, equally weighted rows.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=300); y = (rng.uniform(size=300) < p ** 2).astype(int)
    >>> va = VennAbers().fit(np.column_stack([1 - p, p]), y)
    >>> low, high = va.predict_interval(np.array([[0.5, 0.5]]))
    >>> bool(low[0, 1] <= va.predict_proba(np.array([[0.5, 0.5]]))[0, 1] <= high[0, 1])
    True
    """

    method = "venn_abers"
    display_name = "Venn-Abers"
    works_on = "probs"
    _fitted_attributes = ("tables_",)

    def __init__(self, *, n_folds: int | None = None, multiclass: str = "one_vs_rest", seed: int = 0,
                 input: str = "probs") -> None:
        self.n_folds = n_folds
        self.multiclass = multiclass
        self.seed = seed
        self.input = input

    def _check_params(self) -> None:
        super()._check_params()
        check_choice(self.multiclass, "multiclass", _MULTICLASS)
        if self.n_folds is not None:
            check_count(self.n_folds, "n_folds", minimum=2)

    def fit(self, x: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> VennAbers:
        """Fit on ``(x, labels)`` (see :meth:`Recalibrator.fit`).

        Raises
        ------
        CalibrationInputError
            ``sample_weight`` given: a Venn-Abers predictor's validity rests
            on equally weighted, exchangeable rows, so weights are refused
            rather than ignored.
        """
        if sample_weight is not None:
            raise CalibrationInputError(
                "`sample_weight` is not supported by VennAbers: its validity guarantee rests on equally weighted, "
                "exchangeable calibration rows; fit it without weights (or on the rows repeated).")
        return super().fit(x, labels)

    # -- the binary problems ---------------------------------------------------
    def _problems(self, x: NDArray[np.float64], labels: NDArray[np.intp] | None) -> list[tuple[Any, ...]]:
        """Per binary problem: ``(rows, scores, targets)`` (rows: a mask, or None for every row)."""
        n_classes = x.shape[1]
        if n_classes == 2:
            return [(None, x[:, 1], None if labels is None else (labels == 1).astype(np.float64))]
        if self.multiclass == "one_vs_rest":
            return [(None, x[:, k], None if labels is None else (labels == k).astype(np.float64))
                    for k in range(n_classes)]
        problems = []
        for i in range(n_classes - 1):
            for j in range(i + 1, n_classes):
                with np.errstate(divide="ignore", invalid="ignore"):
                    score = x[:, j] / (x[:, i] + x[:, j])
                if labels is None:
                    problems.append((None, score, None))
                else:
                    rows = (labels == i) | (labels == j)
                    problems.append((rows, score[rows], (labels[rows] == j).astype(np.float64)))
        return problems

    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        if self.n_folds is None:
            parts = [np.arange(labels.size)]
        else:
            from calib_core.recalibration.protocol import stratified_folds  # protocol imports the registry

            folds = stratified_folds(labels, int(self.n_folds), seed=self.seed, n_classes=x.shape[1])
            parts = [np.flatnonzero(folds == f) for f in range(int(self.n_folds))]
        tables = []
        for part in parts:
            fold_tables = []
            for _, scores, targets in self._problems(x[part], labels[part]):
                if scores.size == 0:
                    raise CalibrationInputError(
                        "a pair of classes has no calibration rows (one-vs-one Venn-Abers needs rows of every "
                        "pair); use multiclass=\"one_vs_rest\" or more calibration rows.")
                fold_tables.append(list(venn_abers_tables(np.ascontiguousarray(scores), targets)))
            tables.append(fold_tables)
        self.tables_ = tables

    # -- predictions -------------------------------------------------------------
    def _binary_intervals(self, x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(p0, p1)`` of every binary problem, shape (M, problems), merged over folds by geometric means.

        One fold: the IVAP's own ``(p0, p1)``. Several: ``(1 - GM(1 - p0), GM(p1))``, so that
        :func:`_merge` of the result is the CVAP's ``GM(p1) / (GM(1 - p0) + GM(p1))``.
        """
        scores = [score for _, score, _ in self._problems(x, None)]
        lows = np.empty((x.shape[0], len(scores), len(self.tables_)))
        highs = np.empty_like(lows)
        for f, fold_tables in enumerate(self.tables_):
            for b, (score, table) in enumerate(zip(scores, fold_tables)):
                lows[:, b, f], highs[:, b, f] = _lookup(table, score)
        if len(self.tables_) == 1:
            return lows[:, :, 0], highs[:, :, 0]
        n = len(self.tables_)
        with np.errstate(divide="ignore"):
            geo_not_p0 = np.prod(1.0 - lows, axis=2) ** (1.0 / n)
            geo_p1 = np.prod(highs, axis=2) ** (1.0 / n)
        return 1.0 - geo_not_p0, geo_p1

    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        n_classes = x.shape[1]
        p0, p1 = self._binary_intervals(x)
        pair = _merge(p0, p1)
        if n_classes == 2:
            return np.column_stack([1.0 - pair[:, 0], pair[:, 0]])
        if self.multiclass == "one_vs_rest":
            return _renormalise(pair)
        # Pair (i, j) predicts P(j | i or j); class i's share is 1 - that.
        inverse_sums = np.zeros((x.shape[0], n_classes))
        b = 0
        for i in range(n_classes - 1):
            for j in range(i + 1, n_classes):
                inverse_sums[:, i] += 1.0 / (1.0 - pair[:, b])
                inverse_sums[:, j] += 1.0 / pair[:, b]
                b += 1
        return _renormalise(1.0 / (inverse_sums - (n_classes - 2)))

    def predict_interval(self, x: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each prediction's Venn-Abers interval ``(p0, p1)``, per class.

        Parameters
        ----------
        x : array_like of shape (M, K)
            Logits or probabilities, as declared by ``input``.

        Returns
        -------
        p0, p1 : ndarray of shape (M, K)
            Column k: the lower and upper probability of class k from its
            binary predictor (one-vs-rest for K > 2); for K = 2 column 1 is
            the predictor's ``(p0, p1)`` and column 0 its complement
            ``(1 - p1, 1 - p0)``. The cross predictor gives
            ``(1 - GM(1 - p0), GM(p1))`` over its folds. ``p0 <= p1``; the
            point prediction of a binary problem is ``p1 / (1 - p0 + p1)``.

        Raises
        ------
        CalibrationInputError
            Before ``fit``, on invalid ``x``, or for a one-vs-one predictor
            with K > 2 (its intervals are per pair of classes, not per class).
        """
        self._check_fitted()
        matrix, _ = self._read(x)
        if matrix.shape[1] != self.n_classes_:
            raise CalibrationInputError(
                f"`x` has {matrix.shape[1]} columns but VennAbers was fitted on {self.n_classes_} classes.")
        if self.n_classes_ > 2 and self.multiclass == "one_vs_one":
            raise CalibrationInputError(
                "one-vs-one Venn-Abers has an interval per pair of classes, not per class; fit with "
                "multiclass=\"one_vs_rest\" for per-class intervals.")
        p0, p1 = self._binary_intervals(matrix)
        if self.n_classes_ == 2:
            return np.column_stack([1.0 - p1[:, 0], p0[:, 0]]), np.column_stack([1.0 - p0[:, 0], p1[:, 0]])
        return p0, p1
