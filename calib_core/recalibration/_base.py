"""The shallow base class of every recalibrator, input handling and JSON I/O.

A recalibrator follows scikit-learn: ``__init__`` stores hyper-parameters
only, ``fit(x, labels)`` validates, sets attributes ending in ``_`` and
returns ``self``, ``predict_proba(x)`` refuses to run before ``fit``.

``x`` is either logits (any finite ``(N, K)`` matrix) or probabilities (rows
on the simplex), as declared by the ``input`` hyper-parameter. A method
whose maths needs logits takes ``log(probs + 1e-12)`` when given
probabilities (:func:`~calib_core.recalibration._numeric.log_probabilities`,
scikit-learn's rule, so exact zeros stay finite and mean the same to every
method); a method that needs probabilities takes ``softmax(logits)`` when
given logits.
"""
from __future__ import annotations

import abc
import importlib
import inspect
import json
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.recalibration._numeric import log_probabilities
from calib_core.validation import (
    CalibrationInputError,
    check_choice,
    check_labels,
    check_logits,
    check_probs,
    check_probs_labels,
    MAX_REPEATED_VALUES,
    check_sample_weight,
    integer_weights,
    repeat_rows,
    row_argmax,
    softmax_unchecked,
)

__all__ = ["NotFittedError", "Recalibrator"]

#: Tag written in every JSON document produced by :meth:`Recalibrator.to_json`.
JSON_FORMAT = "calib_core.recalibrator"
#: Version 2: probabilities are turned into ``log(p + 1e-12)`` (version 1 floored ``log(p)`` at
#: ``log(tiny)`` and Beta calibration clipped at machine epsilon), so a version-1 document of a map
#: fitted on probabilities would predict differently now and is refused with a request to refit.
JSON_VERSION = 2

_INPUTS = ("logits", "probs")


class NotFittedError(CalibrationInputError):
    """Raised by ``predict_proba`` and ``fitted_params`` when ``fit`` has not been called.

    A subclass of :class:`~calib_core.CalibrationInputError` (hence of
    ``ValueError``, like scikit-learn's ``NotFittedError``), so code that
    reports input problems to a user also reports this one.
    """


def _renormalise(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Divide rows by their sums; rows summing to 0 become uniform."""
    sums = values.sum(axis=1, keepdims=True)
    empty = sums[:, 0] <= 0
    if empty.any():
        values[empty] = 1.0
        sums[empty] = values.shape[1]
    values /= sums
    return values


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"ndarray": value.ravel().tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    if isinstance(value, list):
        return {"list": [_encode(item) for item in value]}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return {"float": repr(value)}  # JSON has no inf/nan
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "ndarray" in value:
        return np.asarray(value["ndarray"], dtype=value["dtype"]).reshape(value["shape"])
    if isinstance(value, dict) and "list" in value:
        return [_decode(item) for item in value["list"]]
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    return value


def param_names(cls: type) -> list[str]:
    """The constructor arguments of ``cls`` (scikit-learn's ``_get_param_names``)."""
    signature = inspect.signature(cls.__init__)
    return [name for name, parameter in signature.parameters.items()
            if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]


def get_params(estimator: Any, *, deep: bool) -> dict[str, Any]:
    """scikit-learn's ``get_params``: constructor arguments, and with ``deep`` those of nested estimators."""
    params = {name: getattr(estimator, name) for name in param_names(type(estimator))}
    if deep:
        for name, value in list(params.items()):
            if hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", inner) for key, inner in value.get_params(deep=True).items())
    return params


def set_params(estimator: Any, params: dict[str, Any]) -> Any:
    """scikit-learn's ``set_params``: ``name=value`` and ``name__parameter=value`` for nested estimators."""
    valid = param_names(type(estimator))
    nested: dict[str, dict[str, Any]] = {}
    for key, value in params.items():
        name, nests, inner = key.partition("__")
        if name not in valid:
            raise CalibrationInputError(
                f"{type(estimator).__name__} has no parameter {key!r}; valid parameters: {', '.join(valid)}."
            )
        if nests:
            nested.setdefault(name, {})[inner] = value
        else:
            setattr(estimator, name, value)
    for name, inner_params in nested.items():
        holder = getattr(estimator, name)
        if not hasattr(holder, "set_params") or isinstance(holder, type):
            raise CalibrationInputError(
                f"{type(estimator).__name__} has no parameter {next(iter(inner_params))!r} under {name!r}: "
                f"{name} = {holder!r} has no parameters to set."
            )
        holder.set_params(**inner_params)
    return estimator


def classifier_tags() -> Any:
    """scikit-learn tags of a classifier that takes a 2-D float array (lazy import: sklearn is optional)."""
    from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

    return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                classifier_tags=ClassifierTags(), input_tags=InputTags())


class Recalibrator(abc.ABC):
    """Base class: maps model outputs ``x`` to recalibrated probabilities.

    Subclasses set the class attributes below and implement ``_fit`` and
    ``_predict``; ``fit``/``predict_proba`` do the validation and the
    logits/probabilities conversion, so subclasses only do maths.

    Attributes
    ----------
    method : str
        Identifier written to JSON (``"temperature_scaling"``, ...).
    display_name : str
        Name shown in tables and in the app.
    works_on : {"logits", "probs"}
        What the maths of the method uses.
    preserves_accuracy : bool
        True when the arg-max of every row is unchanged by construction.
    max_default_classes : int or None
        Largest class count K at which the method belongs to the app's
        default set (None: any K). Set for methods whose parameters grow as
        K^2, so that their fit time explodes with K
        (:func:`calib_core.recalibration.defaults.default_methods`).
    emits_exact_zeros : bool
        True for methods whose maps can output a probability of exactly 0
        (or 1): flat steps of isotonic regression, empty-of-positives bins
        of histogram binning. An exact 0 for the true class makes the NLL
        infinite (clipped at 1e-12: 27.6 nats a row), so such methods are
        flagged wherever the NLL is shown and leave the default set above
        :data:`calib_core.recalibration.hazards.ZERO_HAZARD_MAX_CLASSES`
        classes (:mod:`calib_core.recalibration.hazards`).
    n_classes_ : int
        Number of classes seen by ``fit`` (set by ``fit``).
    classes_, n_features_in_
        ``0..K-1`` and K once fitted, for scikit-learn (see :mod:`~calib_core.recalibration.sklearn_compat`).

    Raises
    ------
    NotFittedError
        From ``predict_proba`` when ``fit`` has not been called.
    """

    method: ClassVar[str] = ""
    display_name: ClassVar[str] = ""
    works_on: ClassVar[str] = "logits"
    preserves_accuracy: ClassVar[bool] = False
    max_default_classes: ClassVar[int | None] = None
    emits_exact_zeros: ClassVar[bool] = False
    #: Names of the fitted attributes (all ending in ``_``) that define predictions.
    _fitted_attributes: ClassVar[tuple[str, ...]] = ()
    #: True when ``_fit(x, labels, weights)`` minimises a weighted loss (any non-negative weights); False: weights
    #: are whole numbers of repeated rows (:meth:`_fit_weighted`).
    weighted_loss: ClassVar[bool] = False
    #: True for a method fitted by an iterative optimiser stopped at a tolerance (L-BFGS): whole-number weights
    #: are then fitted on the repeated rows themselves, so they give the repeated rows' map exactly (the weighted
    #: loss, summed in another order, stops a few 1e-3 away); the weighted loss serves the other weights.
    repeat_whole_weights: ClassVar[bool] = False
    _registry: ClassVar[dict[str, type[Recalibrator]]] = {}

    input: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.method:
            Recalibrator._registry[cls.method] = cls

    # -- hyper-parameters -------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        return param_names(cls)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments of this instance, as a dict (scikit-learn's protocol).

        Parameters
        ----------
        deep : bool, default True
            Also list the parameters of parameters that are estimators, as
            ``name__parameter`` (none of the recalibrators holds one; kept
            for scikit-learn, whose ``clone`` and searches pass it).
        """
        return get_params(self, deep=deep)

    def set_params(self, **params: Any) -> Recalibrator:
        """Change constructor arguments (the fitted state, if any, is kept); returns ``self``.

        ``name__parameter`` sets a parameter of a parameter that is an
        estimator, as in scikit-learn.

        Raises
        ------
        CalibrationInputError
            A name that is not a constructor argument.
        """
        return set_params(self, params)

    def clone(self) -> Recalibrator:
        """A new, unfitted instance with the same hyper-parameters."""
        return type(self)(**self.get_params(deep=False))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    # -- scikit-learn protocol ------------------------------------------------
    def __sklearn_tags__(self) -> Any:
        """Tags for scikit-learn (imported here: scikit-learn is not a dependency of calib_core)."""
        return classifier_tags()

    def __sklearn_is_fitted__(self) -> bool:
        return self.is_fitted

    @property
    def classes_(self) -> NDArray[np.intp]:
        """``0..K-1``, the classes ``predict_proba`` gives columns for (scikit-learn's ``classes_``)."""
        if not self.is_fitted:
            raise AttributeError(f"{type(self).__name__} has no `classes_` before `fit`.")
        return np.arange(self.n_classes_)

    @property
    def n_features_in_(self) -> int:
        """Columns of ``x`` (one per class), scikit-learn's ``n_features_in_``."""
        if not self.is_fitted:
            raise AttributeError(f"{type(self).__name__} has no `n_features_in_` before `fit`.")
        return self.n_classes_

    def _check_params(self) -> None:
        """Validate hyper-parameters (called by ``fit``); subclasses extend it."""
        check_choice(self.input, "input", _INPUTS)

    # -- input handling -----------------------------------------------------
    def _read(self, x: ArrayLike, labels: ArrayLike | None = None) -> tuple[NDArray[np.float64], NDArray[np.intp] | None]:
        """Validate ``x`` as declared by ``input`` and convert it to what the maths uses."""
        if self.input == "probs":
            if labels is None:
                matrix, checked = check_probs(x), None
            else:
                matrix, checked = check_probs_labels(x, labels)
            if self.works_on == "logits":
                matrix = log_probabilities(matrix)
        else:
            matrix = check_logits(x)
            checked = None if labels is None else check_labels(labels, matrix.shape[1], n_rows=matrix.shape[0])
            if self.works_on == "probs":
                matrix = softmax_unchecked(matrix)
        return matrix, checked

    # -- public API ---------------------------------------------------------
    def fit(self, x: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Recalibrator:
        """Fit the recalibration map on ``(x, labels)``.

        Parameters
        ----------
        x : array_like of shape (N, K)
            Logits or probabilities, as declared by ``input``.
        labels : array_like of shape (N,)
            Integer classes in ``0..K-1``.
        sample_weight : array_like of shape (N,), optional
            Non-negative row weights: integer weights fit the map of the rows
            repeated that many times (to the optimiser's tolerance); rows of
            weight 0 are left out. A method with a weighted loss
            (:meth:`_fit_weighted` overridden: weighted NLL, weighted least
            squares, weighted bin means) takes any weights; any other method
            is fitted on the repeated rows and refuses non-integer weights.

        Returns
        -------
        self

        Raises
        ------
        CalibrationInputError
            Invalid ``x``, ``labels``, weights or hyper-parameters.
        """
        self._check_params()
        if labels is None:
            raise CalibrationInputError(
                "`labels` is None: fitting a recalibration map needs the true class of every row.")
        matrix, checked = self._read(x, labels)
        weights = check_sample_weight(sample_weight, checked.shape[0])
        if weights is None:
            self._fit(matrix, checked)
        else:
            keep = weights > 0
            self._fit_weighted(matrix[keep], checked[keep], weights[keep])
        self.n_classes_ = int(matrix.shape[1])
        return self

    def _fit_weighted(self, matrix: NDArray[np.float64], labels: NDArray[np.intp],
                      weights: NDArray[np.float64]) -> None:
        """``_fit`` with positive row weights: ``_fit(matrix, labels, weights)`` for a method with a weighted loss
        (:attr:`weighted_loss`), else ``_fit`` of the rows repeated ``weights`` times (whole numbers only)."""
        whole = integer_weights(weights) and float(weights.sum()) * matrix.shape[1] <= MAX_REPEATED_VALUES
        if self.weighted_loss and not (self.repeat_whole_weights and whole):
            self._fit(matrix, labels, weights)
            return
        matrix, labels = repeat_rows(weights, matrix, labels, metric=f"{type(self).__name__}.fit")
        self._fit(matrix, labels)

    def predict_proba(self, x: ArrayLike) -> NDArray[np.float64]:
        """Recalibrated probabilities.

        Parameters
        ----------
        x : array_like of shape (M, K)
            Logits or probabilities, as declared by ``input``, with the same
            K as the fitting data.

        Returns
        -------
        ndarray of shape (M, K)
            Rows on the probability simplex.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        CalibrationInputError
            Invalid ``x`` or a different number of classes.
        """
        self._check_fitted()
        matrix, _ = self._read(x)
        if matrix.shape[1] != self.n_classes_:
            raise CalibrationInputError(
                f"`x` has {matrix.shape[1]} columns but {type(self).__name__} was fitted on "
                f"{self.n_classes_} classes."
            )
        return self._predict(matrix)

    def predict(self, x: ArrayLike) -> NDArray[np.intp]:
        """The class with the highest recalibrated probability in each row (ties: the lowest index).

        Parameters
        ----------
        x : array_like of shape (M, K)
            Logits or probabilities, as declared by ``input``.

        Returns
        -------
        ndarray of shape (M,)
            Classes in ``0..K-1``.
        """
        return row_argmax(self.predict_proba(x))

    def fit_predict_proba(self, x: ArrayLike, labels: ArrayLike, *,
                          sample_weight: ArrayLike | None = None) -> NDArray[np.float64]:
        """``fit(x, labels, sample_weight=...).predict_proba(x)`` (in-sample: optimistic by construction)."""
        return self.fit(x, labels, sample_weight=sample_weight).predict_proba(x)

    @property
    def is_fitted(self) -> bool:
        """Whether ``fit`` has been called."""
        return hasattr(self, "n_classes_")

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet; call `fit(x, labels)` on calibration data "
                "before `predict_proba`."
            )

    def fitted_params(self) -> dict[str, Any]:
        """The fitted parameters (attributes ending in ``_``) as a dict; requires ``fit``."""
        self._check_fitted()
        return {name: getattr(self, name) for name in ("n_classes_", *self._fitted_attributes)}

    # -- subclass hooks -----------------------------------------------------
    @abc.abstractmethod
    def _fit(self, x: NDArray[np.float64], labels: NDArray[np.intp]) -> None:
        """Set the fitted attributes from checked inputs (``x`` in the method's input space)."""

    @abc.abstractmethod
    def _predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """Recalibrated probabilities of checked inputs."""

    # -- JSON ---------------------------------------------------------------
    def _params_to_json(self) -> dict[str, Any]:
        return self.get_params(deep=False)

    @classmethod
    def _params_from_json(cls, params: dict[str, Any]) -> dict[str, Any]:
        return params

    def to_json(self) -> str:
        """Serialise hyper-parameters and (when fitted) fitted parameters to JSON text.

        Floats are written with Python's shortest round-trip repr, so
        :meth:`from_json` restores bit-identical parameters and predictions.
        An unfitted instance gives ``"fitted": null``.
        """
        fitted = None
        if self.is_fitted:
            fitted = {name: _encode(value) for name, value in self.fitted_params().items()}
        payload = {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "method": self.method,
            "params": self._params_to_json(),
            "fitted": fitted,
        }
        return json.dumps(payload, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Recalibrator:
        """Rebuild a recalibrator written by :meth:`to_json`.

        Called on :class:`Recalibrator` it dispatches on the ``"method"``
        field; called on a subclass it also checks that the document is of
        that class.

        Raises
        ------
        CalibrationInputError
            Not JSON, not a recalibrator document, unknown method, a method
            other than ``cls``, or a version-1 document of a map that took
            logarithms of probabilities (fitted on ``input="probs"``, or Beta
            calibration): those would now predict differently, so refit.
        """
        payload = load_document(text, JSON_FORMAT, "recalibrator")
        version = payload.get("version")
        if version not in (1, JSON_VERSION):
            raise CalibrationInputError(
                f"unsupported recalibrator document version {version!r} (expected {JSON_VERSION})."
            )
        method = payload.get("method")
        target = Recalibrator._registry.get(method)
        if target is None:
            known = ", ".join(sorted(Recalibrator._registry))
            raise CalibrationInputError(f"unknown recalibration method {method!r}; known methods: {known}.")
        params = dict(payload.get("params") or {})
        if version == 1 and (params.get("input") == "probs" or method == "beta_calibration"):
            raise CalibrationInputError(
                f"this {target.__name__} document was written by an older calib_core (version 1) that took "
                "logarithms of exact-zero probabilities differently, so its map would now predict other "
                "probabilities; fit it again and export a new document."
            )
        if not issubclass(target, cls):
            raise CalibrationInputError(
                f"the document holds a {target.__name__} ({method!r}), not a {cls.__name__}."
            )
        instance = target(**target._params_from_json(params))
        fitted = payload.get("fitted")
        if fitted is not None:
            for name, value in fitted.items():
                if name not in ("n_classes_", *target._fitted_attributes):
                    raise CalibrationInputError(f"unexpected fitted attribute {name!r} for {target.__name__}.")
                setattr(instance, name, _decode(value))
        return instance


def load_document(text: str, expected_format: str, what: str) -> dict[str, Any]:
    """Parse a calib_core JSON document and check its ``"format"`` tag; :class:`CalibrationInputError` if not."""
    try:
        payload = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"`text` is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != expected_format:
        raise CalibrationInputError(
            f"`text` is not a calib_core {what} document (expected \"format\": {expected_format!r})."
        )
    return payload


def callable_name(function: Any) -> str:
    """``"module:qualname"`` of a function, for JSON."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None)
    if module is None or qualname is None:
        return repr(function)
    return f"{module}:{qualname}"


#: Modules that moved when calib_core was arranged in wings (issue 13): documents written before
#: name a metric by its old module (``"calib_core.binned:ece"``) and must still load.
MOVED_MODULES = {
    "calib_core.binned": "calib_core.metrics.binned", "calib_core.scores": "calib_core.metrics.scores",
    "calib_core.kernel": "calib_core.metrics.kernel", "calib_core.smooth": "calib_core.metrics.smooth",
    "calib_core.debiased": "calib_core.metrics.debiased", "calib_core.canonical": "calib_core.metrics.canonical",
    "calib_core.proper": "calib_core.metrics", "calib_core.clinical": "calib_core.metrics",
    "calib_core.simplex": "calib_core.metrics.simplex", "calib_core.registry": "calib_core.metrics.registry",
}


def resolve_callable(name: str) -> Any:
    """Import ``"module:qualname"``; returns ``name`` itself when it cannot be imported.

    A module that has moved (:data:`MOVED_MODULES`) is looked up at its new place.
    """
    module_name, _, qualname = name.partition(":")
    module_name = MOVED_MODULES.get(module_name, module_name)
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError, ValueError):
        return name
    return target if callable(target) else name
