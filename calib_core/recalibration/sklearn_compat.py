"""scikit-learn interoperability: a registry metric as a scorer, and a fitted classifier wrapped with a map.

Every :class:`~calib_core.recalibration.Recalibrator` already follows
scikit-learn's protocol (``get_params(deep=...)``, ``set_params``,
``sklearn.base.clone``, classifier tags, ``classes_``, ``predict``), so it can
be the last step of a ``Pipeline`` and be tuned by ``GridSearchCV``. This
module adds the two pieces a search and a deployment need:

- :func:`make_calibration_scorer` turns a metric of the registry
  (:data:`calib_core.metrics.registry.METRICS`) into a scorer
  ``scorer(estimator, x, y)``, greater is better, as ``GridSearchCV(scoring=...)``
  and ``cross_val_score`` expect;
- :class:`CalibratedModel` wraps an already fitted classifier with a
  recalibrator fitted on calibration data, so that its ``predict_proba`` is
  calibrated (what ``CalibratedClassifierCV(FrozenEstimator(model))`` does,
  with any method of this package), and saves the map as JSON.

scikit-learn is not a dependency of calib_core: nothing here imports it.

Examples
--------
>>> import numpy as np
>>> from calib_core.recalibration import HistogramBinning
>>> rng = np.random.default_rng(0)
>>> p = rng.dirichlet([1, 1], size=200); y = (rng.uniform(size=200) < p[:, 1] ** 2).astype(int)
>>> scorer = make_calibration_scorer("ece", n_bins=10)
>>> scorer(HistogramBinning(5).fit(p, y), p, y) <= 0
True
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.metrics.registry import get_metric, metric_function
from calib_core.recalibration._base import (NotFittedError, Recalibrator, classifier_tags, get_params,
                                            load_document, set_params)
from calib_core.validation import CalibrationInputError, check_binning, check_n_bins, row_argmax

__all__ = ["CalibratedModel", "CalibrationScorer", "make_calibration_scorer"]

#: Tag written in every JSON document produced by :meth:`CalibratedModel.to_json`.
MODEL_JSON_FORMAT = "calib_core.calibrated_model"
MODEL_JSON_VERSION = 1


def label_indices(y: ArrayLike, classes: ArrayLike) -> NDArray[np.intp]:
    """Positions of ``y``'s values in ``classes`` (an estimator's ``classes_``); other values are refused.

    Raises
    ------
    CalibrationInputError
        A value of ``y`` that is not in ``classes`` (the first one is named).
    """
    values, classes = np.asarray(y), np.asarray(classes)
    order = np.argsort(classes, kind="stable")
    position = np.minimum(np.searchsorted(classes[order], values), classes.size - 1)
    unknown = np.flatnonzero(classes[order][position] != values)
    if unknown.size:
        row = int(unknown[0])
        raise CalibrationInputError(
            f"`y` holds {values[row].tolist()!r} (row {row}), which is not one of the classes "
            f"{classes.tolist()!r}.")
    return order[position]


@dataclass(frozen=True)
class CalibrationScorer:
    """``scorer(estimator, x, y)``: a metric of ``estimator.predict_proba(x)``, greater is better.

    Built by :func:`make_calibration_scorer`; see there.

    Attributes
    ----------
    metric : callable
        ``metric(probs, labels) -> float`` with the settings fixed.
    name : str
        The registry key, or the function's name.
    ideal : float or None
        Scores are ``-|value - ideal|`` when set.
    greater_is_better : bool
        Without ``ideal``: the score is the value (True) or minus it (False).
    """

    metric: Callable[[ArrayLike, ArrayLike], float]
    name: str
    ideal: float | None
    greater_is_better: bool

    def __call__(self, estimator: Any, x: ArrayLike, y: ArrayLike) -> float:
        """The score of ``estimator`` on ``(x, y)``: calls ``estimator.predict_proba(x)``.

        ``y`` is read against ``estimator.classes_`` when there is one (class
        names, as a :class:`CalibratedModel` takes them, become column indices).
        """
        classes = getattr(estimator, "classes_", None)
        labels = y if classes is None else label_indices(y, classes)
        value = float(self.metric(estimator.predict_proba(x), labels))
        if self.ideal is not None:
            return -abs(value - self.ideal)
        return value if self.greater_is_better else -value

    def __repr__(self) -> str:
        return f"make_calibration_scorer({self.name!r})"


def make_calibration_scorer(metric: str | Callable[[ArrayLike, ArrayLike], float], *, n_bins: int = 15,
                            binning: str = "uniform", bandwidth: float | None = None,
                            greater_is_better: bool | None = None) -> CalibrationScorer:
    """A scikit-learn scorer from a registry metric (or any ``metric(probs, labels)``).

    Parameters
    ----------
    metric : str or callable
        A key of :data:`calib_core.metrics.registry.METRICS` (``"ece"``,
        ``"classwise_ece"``, ``"nll"``, ``"cox_slope"``, ...) or a function
        ``metric(probs, labels) -> float``.
    n_bins, binning : bin settings of a binned registry metric (as
        :func:`calib_core.metrics.registry.metric_function`).
    bandwidth : float, optional
        Kernel bandwidth of a kernel registry metric (None: its default).
    greater_is_better : bool, optional
        None infers it: a registry metric with an ideal value (every
        calibration error: 0; Cox's slope: 1) scores ``-|value - ideal|``;
        accuracy scores its value; the proper scores (Brier, NLL) and a
        callable score minus the value. True or False: the value or minus it.

    Returns
    -------
    CalibrationScorer
        ``scorer(estimator, x, y)``, for ``GridSearchCV(scoring=...)``,
        ``cross_val_score`` and the like; it calls ``estimator.predict_proba(x)``.

    Raises
    ------
    CalibrationInputError
        An unknown metric key, invalid bin settings, or a metric that is
        neither a key nor a callable.

    Notes
    -----
    scikit-learn maximises scores, so a calibration error is negated (its
    ideal is 0), as scikit-learn's ``neg_log_loss`` negates the log-loss.
    A metric that cannot be computed on a fold raises from the scorer;
    ``GridSearchCV(error_score=...)`` decides what then happens.

    Examples
    --------
    >>> make_calibration_scorer("ece", n_bins=10)
    make_calibration_scorer('ece')
    """
    if isinstance(metric, str):
        spec = get_metric(metric)
        function = metric_function(metric, n_bins=check_n_bins(n_bins), binning=check_binning(binning),
                                   bandwidth=bandwidth)
        ideal = spec.ideal if greater_is_better is None else None
        greater = (metric == "accuracy") if greater_is_better is None else bool(greater_is_better)
        return CalibrationScorer(function, metric, ideal, greater)
    if not callable(metric):
        raise CalibrationInputError(
            f"`metric` must be a registry key or a callable metric(probs, labels) -> float, got {metric!r}.")
    return CalibrationScorer(metric, getattr(metric, "__name__", repr(metric)), None, bool(greater_is_better))


class CalibratedModel:
    """A fitted classifier whose ``predict_proba`` goes through a recalibration map.

    Parameters
    ----------
    classifier : object
        An already fitted classifier. It is never refitted (nor cloned by
        ``sklearn.base.clone``: only the map is refitted). Its
        ``predict_proba`` feeds a recalibrator with ``input="probs"``; its
        ``decision_function`` one with ``input="logits"`` (a 1-D binary
        decision ``d`` becomes the logits ``(0, d)``, so that softmax gives
        ``sigmoid(d)``).
    recalibrator : Recalibrator
        The unfitted method (a template: ``fit`` fits a clone of it).

    Attributes
    ----------
    recalibrator_ : Recalibrator
        The map fitted by :meth:`fit`.
    classes_ : ndarray of shape (K,)
        The classifier's ``classes_`` (``0..K-1`` when it has none).

    Notes
    -----
    Fit the map on calibration rows the classifier was not trained on: on its
    training rows the classifier looks better calibrated than it is. Which map
    to choose and how to judge it on held-out rows: :mod:`calib_core.recalibration.protocol`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from calib_core.recalibration import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(400, 3)); y = (x[:, 0] + rng.normal(size=400) > 0).astype(int)
    >>> classifier = LogisticRegression().fit(x[:200], y[:200])
    >>> model = CalibratedModel(classifier, TemperatureScaling()).fit(x[200:], y[200:])
    >>> model.predict_proba(x[:2]).shape
    (2, 2)
    """

    def __init__(self, classifier: Any, recalibrator: Recalibrator) -> None:
        self.classifier = classifier
        self.recalibrator = recalibrator

    # -- scikit-learn protocol ------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """``classifier`` and ``recalibrator``, and with ``deep`` their parameters as ``name__parameter``."""
        return get_params(self, deep=deep)

    def set_params(self, **params: Any) -> CalibratedModel:
        """Set ``classifier``, ``recalibrator`` or their parameters (``recalibrator__n_bins=10``); returns ``self``."""
        return set_params(self, params)

    def __sklearn_clone__(self) -> CalibratedModel:
        # The classifier is fitted and frozen: a clone shares it and refits only the map.
        return type(self)(self.classifier, self.recalibrator.clone())

    def __sklearn_tags__(self) -> Any:
        return classifier_tags()

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "recalibrator_")

    def __repr__(self) -> str:
        return f"CalibratedModel({self.classifier!r}, {self.recalibrator!r})"

    # -- fitting and predicting ---------------------------------------------
    def _scores(self, x: ArrayLike, recalibrator: Recalibrator) -> NDArray[np.float64]:
        """The classifier's output that ``recalibrator.input`` declares."""
        if recalibrator.input == "probs":
            return np.asarray(self.classifier.predict_proba(x), dtype=np.float64)
        if not hasattr(self.classifier, "decision_function"):
            raise CalibrationInputError(
                f"{type(self.classifier).__name__} has no `decision_function`, so it gives no logits for "
                f"{type(recalibrator).__name__}(input=\"logits\"); give the recalibrator input=\"probs\" to "
                "recalibrate its `predict_proba`.")
        decision = np.asarray(self.classifier.decision_function(x), dtype=np.float64)
        if decision.ndim == 1:  # binary: the log-odds of class 1
            return np.column_stack([np.zeros_like(decision), decision])
        return decision

    def fit(self, x: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> CalibratedModel:
        """Fit a clone of ``recalibrator`` on the classifier's output for calibration rows.

        Parameters
        ----------
        x : array_like
            Calibration features, as the classifier takes them.
        y : array_like of shape (N,)
            Their classes, as the classifier names them (``classes_``).
        sample_weight : array_like of shape (N,), optional
            Row weights, passed to the recalibrator's ``fit`` (integer weights
            fit the repeated rows; a method that cannot use fractional weights
            refuses them, docs/weights.md). Positional or keyword, as
            scikit-learn's meta-estimators pass it.

        Returns
        -------
        self

        Raises
        ------
        CalibrationInputError
            ``recalibrator`` is not a :class:`Recalibrator`, a class of ``y``
            the classifier does not know, a logits recalibrator for a
            classifier without ``decision_function``, or weights the
            recalibrator refuses (``calib_core.validation.check_sample_weight``).
        """
        if not isinstance(self.recalibrator, Recalibrator):
            raise CalibrationInputError(
                f"`recalibrator` must be a calib_core Recalibrator, got {self.recalibrator!r}.")
        recalibrator = self.recalibrator.clone()
        scores = self._scores(x, recalibrator)
        known = getattr(self.classifier, "classes_", None)
        classes = np.arange(scores.shape[1]) if known is None else np.asarray(known)
        labels = y if known is None else label_indices(y, classes)
        self.recalibrator_ = recalibrator.fit(scores, labels, sample_weight=sample_weight)
        self.classes_ = classes
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "recalibrator_"):
            raise NotFittedError(
                "This CalibratedModel is not fitted yet; call `fit(x, y)` on calibration rows first.")

    def predict_proba(self, x: ArrayLike) -> NDArray[np.float64]:
        """``recalibrator_.predict_proba`` of the classifier's output: ``(M, K)`` calibrated probabilities."""
        self._check_fitted()
        return self.recalibrator_.predict_proba(self._scores(x, self.recalibrator_))

    def predict(self, x: ArrayLike) -> NDArray:
        """The class (from ``classes_``) with the highest calibrated probability (ties: the first)."""
        return self.classes_[row_argmax(self.predict_proba(x))]

    # -- JSON -----------------------------------------------------------------
    def to_json(self) -> str:
        """The fitted map and the class names as JSON (the classifier is saved the way you save it).

        ``"recalibrator"`` holds the recalibrator's own document
        (:meth:`Recalibrator.to_json`), so ``calib-core apply`` and
        :meth:`Recalibrator.from_json` read it too.
        """
        self._check_fitted()
        payload = {"format": MODEL_JSON_FORMAT, "version": MODEL_JSON_VERSION, "classes": self.classes_.tolist(),
                   "recalibrator": json.loads(self.recalibrator_.to_json())}
        return json.dumps(payload, allow_nan=False)

    @classmethod
    def from_json(cls, text: str, classifier: Any) -> CalibratedModel:
        """Rebuild a fitted :class:`CalibratedModel` from :meth:`to_json` around ``classifier``.

        Raises
        ------
        CalibrationInputError
            Not a calibrated-model document, or a classifier whose
            ``classes_`` differ from the saved classes.
        """
        payload = load_document(text, MODEL_JSON_FORMAT, "calibrated-model")
        if payload.get("version") != MODEL_JSON_VERSION:
            raise CalibrationInputError(
                f"unsupported calibrated-model document version {payload.get('version')!r} "
                f"(expected {MODEL_JSON_VERSION}).")
        document = payload.get("recalibrator")
        fitted = Recalibrator.from_json(json.dumps(document))
        if not fitted.is_fitted:
            raise CalibrationInputError("the calibrated-model document holds no fitted map.")
        saved = payload.get("classes")
        known = getattr(classifier, "classes_", None)
        classes = np.asarray(saved) if known is None else np.asarray(known)
        if known is not None and np.asarray(known).tolist() != saved:
            raise CalibrationInputError(
                f"the map was fitted for the classes {saved!r}, but the classifier has classes "
                f"{np.asarray(known).tolist()!r}.")
        model = cls(classifier, Recalibrator.from_json(json.dumps({**document, "fitted": None})))
        model.recalibrator_ = fitted
        model.classes_ = classes
        return model
