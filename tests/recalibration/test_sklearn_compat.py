"""scikit-learn compatibility (issue 25, item 5): every recalibrator clones, round-trips its
parameters, runs inside a ``Pipeline`` and ``GridSearchCV`` scored by a registry metric, passes the
scikit-learn estimator checks that apply to a calibrator, and ``CalibratedModel`` wraps a fitted
classifier so that its ``predict_proba`` is calibrated."""
from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone, is_classifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402
from sklearn.utils.estimator_checks import _get_check_estimator_ids, estimator_checks_generator  # noqa: E402

import calib_core as cc  # noqa: E402
from calib_core.recalibration import (  # noqa: E402
    RECALIBRATORS,
    CalibratedModel,
    HistogramBinning,
    MetricOptimizedTemperature,
    Recalibrator,
    TemperatureScaling,
    make_calibration_scorer,
)
from calib_core.metrics.registry import metric_value  # noqa: E402
from calib_core.validation import CalibrationInputError  # noqa: E402

ALL = list(RECALIBRATORS.values())
IDS = [cls.__name__ for cls in ALL]


def _logits(n=400, k=3, temperature=2.5, seed=0):
    """Over-confident logits (the true map is division by ``temperature``) and labels drawn from it."""
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, k))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (p.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return temperature * z, labels


def _classes(cls):
    """3 classes, or 2 for a binary-only method (quadratic scaling)."""
    return 2 if getattr(cls, "binary_only", False) else 3


def _non_default(cls):
    """An instance whose parameters differ from the defaults wherever a parameter allows it."""
    method = cls()
    changes = {"n_bins": 7, "reg_mu": 0.5, "reg_lambda": 10.0, "smooth_targets": False, "loss": "nll",
               "grid_size": 9, "max_evaluations": 12, "class_conditional": False, "metric": cc.brier_score}
    return method.set_params(**{k: v for k, v in changes.items() if k in method.get_params()})


@pytest.mark.parametrize("cls", ALL, ids=IDS)
def test_sklearn_clone_of_every_recalibrator(cls):
    x, y = _logits(k=_classes(cls))
    method = _non_default(cls).set_params(input="logits")
    fresh = clone(method)
    assert type(fresh) is cls and fresh is not method
    params = method.get_params(deep=True)
    assert fresh.get_params(deep=True) == params
    method.fit(x, y)
    assert method.get_params(deep=True) == params  # fit leaves the parameters as given
    unfitted = clone(method)
    assert not unfitted.is_fitted
    np.testing.assert_array_equal(unfitted.fit(x, y).predict_proba(x), method.predict_proba(x))


@pytest.mark.parametrize("cls", ALL, ids=IDS)
def test_get_params_deep_round_trips_through_set_params(cls):
    source = _non_default(cls)
    params = source.get_params(deep=True)
    assert params == source.get_params(deep=False) == source.get_params()
    target = cls().set_params(**params)
    assert target.get_params(deep=True) == params
    with pytest.raises(CalibrationInputError, match="no parameter"):
        cls().set_params(input__deep="probs")


@pytest.mark.parametrize("cls", ALL, ids=IDS)
def test_every_recalibrator_is_a_classifier_to_sklearn(cls):
    x, y = _logits(k=_classes(cls))
    method = cls(input="logits") if "input" in cls().get_params() else cls()
    assert is_classifier(method)
    fitted = method.fit(x, y)
    np.testing.assert_array_equal(fitted.classes_, np.arange(_classes(cls)))
    np.testing.assert_array_equal(fitted.predict(x), fitted.predict_proba(x).argmax(axis=1))
    assert not hasattr(cls(), "classes_")


@pytest.mark.parametrize("cls", ALL, ids=IDS)
def test_classes_is_read_only_and_get_params_is_the_constructor_signature(cls):
    """Issue 24, item 4: ``classes_`` is what ``fit`` saw (a property: assigning it raises AttributeError, as
    for any fitted attribute derived from ``fit``), and ``get_params`` lists exactly ``__init__``'s arguments,
    read back from attributes of the same names (scikit-learn's convention, which ``clone`` relies on)."""
    x, y = _logits(k=_classes(cls))
    method = _non_default(cls)
    expected = [name for name in inspect.signature(cls.__init__).parameters if name != "self"]
    assert list(method.get_params(deep=False)) == expected
    assert all(method.get_params()[name] is getattr(method, name) for name in expected)
    assert "get_params" not in vars(cls) or cls is Recalibrator  # one protocol, on the base class
    fitted = method.set_params(**({"input": "logits"} if "input" in expected else {})).fit(x, y)
    with pytest.raises(AttributeError):
        fitted.classes_ = np.arange(7)
    np.testing.assert_array_equal(fitted.classes_, np.arange(_classes(cls)))


def test_scorer_is_minus_the_registry_metric():
    x, y = _logits()
    method = TemperatureScaling().fit(x, y)
    probs = method.predict_proba(x)
    assert make_calibration_scorer("ece", n_bins=10)(method, x, y) == -cc.ece(probs, y, n_bins=10)
    assert make_calibration_scorer("ece", binning="adaptive")(method, x, y) == -cc.ece(probs, y, binning="adaptive")
    assert make_calibration_scorer("accuracy")(method, x, y) == cc.metrics.binned.accuracy(probs, y)
    assert make_calibration_scorer(cc.brier_score)(method, x, y) == -cc.brier_score(probs, y)
    slope = metric_value("cox_slope", probs, y)
    assert make_calibration_scorer("cox_slope")(method, x, y) == -abs(slope - 1.0)
    with pytest.raises(CalibrationInputError, match="unknown metric"):
        make_calibration_scorer("eca")
    with pytest.raises(CalibrationInputError, match="`n_bins`"):
        make_calibration_scorer("ece", n_bins=0)


def test_grid_search_over_a_pipeline_picks_n_bins_by_the_scorer():
    x, y = _logits(n=900, k=2, seed=3)
    pipeline = Pipeline([("probs", FunctionTransformer(cc.softmax)), ("calibrate", HistogramBinning())])
    grid = [2, 5, 30]
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    search = GridSearchCV(pipeline, {"calibrate__n_bins": grid}, scoring=make_calibration_scorer("ece", n_bins=10),
                          cv=folds).fit(x, y)
    # The same folds by hand: mean held-out ECE of each bin count, lowest wins.
    means = []
    for n_bins in grid:
        values = [cc.ece(HistogramBinning(n_bins).fit(cc.softmax(x[fit]), y[fit]).predict_proba(cc.softmax(x[test])),
                         y[test], n_bins=10) for fit, test in folds.split(x, y)]
        means.append(np.mean(values))
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], -np.array(means), rtol=1e-12)
    assert search.best_params_ == {"calibrate__n_bins": grid[int(np.argmin(means))]}
    assert len(set(np.round(means, 12))) == len(grid)  # the choice is not a tie
    best = search.best_estimator_
    np.testing.assert_array_equal(best.predict_proba(x), best.named_steps["calibrate"].predict_proba(cc.softmax(x)))


def _classifier_data(seed=0):
    datasets = pytest.importorskip("sklearn.datasets")
    features, target = datasets.make_classification(n_samples=1200, n_features=8, n_informative=5, n_classes=3,
                                                    random_state=seed)
    names = np.array(["cat", "dog", "emu"])[target]
    return features[:600], names[:600], features[600:900], names[600:900], features[900:], names[900:]


def test_calibrated_model_predict_proba_equals_the_recalibrator_on_the_classifier_output():
    x_train, y_train, x_cal, y_cal, x_test, _ = _classifier_data()
    classifier = LogisticRegression(max_iter=500).fit(x_train, y_train)
    model = CalibratedModel(classifier, TemperatureScaling()).fit(x_cal, y_cal)
    assert is_classifier(model)
    index = np.searchsorted(classifier.classes_, y_cal)
    by_hand = TemperatureScaling().fit(classifier.decision_function(x_cal), index)
    expected = by_hand.predict_proba(classifier.decision_function(x_test))
    np.testing.assert_array_equal(model.predict_proba(x_test), expected)
    np.testing.assert_array_equal(model.predict(x_test), classifier.classes_[expected.argmax(axis=1)])
    np.testing.assert_array_equal(model.classes_, classifier.classes_)
    assert model.recalibrator_.temperature_ == by_hand.temperature_
    assert not model.recalibrator.is_fitted  # the template stays unfitted, as scikit-learn requires

    probs_model = CalibratedModel(classifier, HistogramBinning(5)).fit(x_cal, y_cal)
    expected = HistogramBinning(5).fit(classifier.predict_proba(x_cal), index).predict_proba(
        classifier.predict_proba(x_test))
    np.testing.assert_array_equal(probs_model.predict_proba(x_test), expected)


def test_calibrated_model_binary_decision_function_becomes_two_logits():
    datasets = pytest.importorskip("sklearn.datasets")
    features, target = datasets.make_classification(n_samples=600, n_features=5, random_state=1)
    classifier = LogisticRegression().fit(features[:300], target[:300])
    model = CalibratedModel(classifier, TemperatureScaling()).fit(features[300:], target[300:])
    d = classifier.decision_function(features)
    logits = np.column_stack([np.zeros_like(d), d])
    expected = TemperatureScaling().fit(logits[300:], target[300:]).predict_proba(logits)
    np.testing.assert_array_equal(model.predict_proba(features), expected)


def test_calibrated_model_clone_keeps_the_fitted_classifier():
    x_train, y_train, x_cal, y_cal, x_test, y_test = _classifier_data()
    classifier = LogisticRegression(max_iter=500).fit(x_train, y_train)
    model = CalibratedModel(classifier, HistogramBinning(4)).fit(x_cal, y_cal)
    fresh = clone(model)
    assert fresh.classifier is classifier and not hasattr(fresh, "recalibrator_")
    np.testing.assert_array_equal(fresh.fit(x_cal, y_cal).predict_proba(x_test), model.predict_proba(x_test))
    params = model.get_params(deep=True)
    assert params["recalibrator__n_bins"] == 4 and params["classifier"] is classifier
    fresh.set_params(recalibrator__n_bins=6)
    assert fresh.recalibrator.n_bins == 6 and model.recalibrator.n_bins == 4
    # Cross-validation over the calibration rows: the classifier stays frozen, only the map is refitted.
    scores = cross_val_score(CalibratedModel(classifier, HistogramBinning(4)), x_cal, y_cal, cv=3,
                             scoring=make_calibration_scorer("ece"))
    assert scores.shape == (3,) and np.all(scores <= 0)


def test_calibrated_model_refuses_unknown_labels_and_missing_outputs():
    x_train, y_train, x_cal, y_cal, _, _ = _classifier_data()
    classifier = LogisticRegression(max_iter=500).fit(x_train, y_train)
    bad = y_cal.copy()
    bad[7] = "yak"
    with pytest.raises(CalibrationInputError, match="'yak' \\(row 7\\)"):
        CalibratedModel(classifier, TemperatureScaling()).fit(x_cal, bad)
    with pytest.raises(cc.NotFittedError):
        CalibratedModel(classifier, TemperatureScaling()).predict_proba(x_cal)
    ensemble = pytest.importorskip("sklearn.ensemble")
    forest = ensemble.RandomForestClassifier(n_estimators=5, random_state=0).fit(x_train, y_train)
    with pytest.raises(CalibrationInputError, match="decision_function.*input=\"probs\""):
        CalibratedModel(forest, TemperatureScaling()).fit(x_cal, y_cal)
    CalibratedModel(forest, TemperatureScaling(input="probs")).fit(x_cal, y_cal)


def test_calibrated_model_json_round_trip():
    x_train, y_train, x_cal, y_cal, x_test, _ = _classifier_data()
    classifier = LogisticRegression(max_iter=500).fit(x_train, y_train)
    model = CalibratedModel(classifier, TemperatureScaling()).fit(x_cal, y_cal)
    text = model.to_json()
    payload = json.loads(text)
    # The map inside is an ordinary recalibrator document (what `calib-core apply` reads).
    assert Recalibrator.from_json(json.dumps(payload["recalibrator"])).temperature_ == model.recalibrator_.temperature_
    restored = CalibratedModel.from_json(text, classifier)
    np.testing.assert_array_equal(restored.predict_proba(x_test), model.predict_proba(x_test))
    np.testing.assert_array_equal(restored.predict(x_test), model.predict(x_test))
    other = LogisticRegression(max_iter=500).fit(x_train, np.where(y_train == "emu", "yak", y_train))
    with pytest.raises(CalibrationInputError, match="classes"):
        CalibratedModel.from_json(text, other)
    with pytest.raises(CalibrationInputError, match="not fitted"):
        CalibratedModel(classifier, TemperatureScaling()).to_json()
    with pytest.raises(CalibrationInputError, match="not a calib_core calibrated-model document"):
        CalibratedModel.from_json(TemperatureScaling().to_json(), classifier)


def test_metric_optimized_temperature_grid_search_by_metric():
    x, y = _logits(n=300)
    search = GridSearchCV(MetricOptimizedTemperature(), {"grid_size": [5, 9]},
                          scoring=make_calibration_scorer("brier"), cv=2).fit(x, y)
    assert search.best_params_["grid_size"] in (5, 9)


#: scikit-learn's common checks that do not apply to a recalibrator, each with the reason (docs/sklearn.md lists
#: the same). Every other check runs and passes on every registered method.
_DATA = ("the check fits on features unrelated to its classes (e.g. 2 columns and 3 classes), but a recalibrator's "
         "`x` holds one column per class and `labels` lie in 0..K-1, so fit refuses it with CalibrationInputError")
_WORDING = "refused with a CalibrationInputError (a ValueError) whose message is ours, not scikit-learn's exact wording"
ESTIMATOR_CHECKS_SKIPPED = {
    "check_fit_score_takes_y": "the API contract (calib_core_api.md) names fit's arguments `x, labels`, not `X, y`",
    "check_estimators_overwrite_params": _DATA,
    "check_estimators_fit_returns_self": _DATA + " (fit returning self: tests/recalibration/test_recalibration.py)",
    "check_readonly_memmap_input": _DATA,
    "check_classifier_data_not_an_array": _DATA,
    "check_classifiers_train": _DATA,
    "check_classifiers_classes": "labels are class indices 0..K-1 naming the columns of `x`; string classes are "
                                 "mapped to indices by load_predictions, or by CalibratedModel for a classifier",
    "check_estimators_unfitted": "predict_proba before fit raises calib_core.NotFittedError (a ValueError), not "
                                 "sklearn.exceptions.NotFittedError: scikit-learn is not a dependency of calib_core",
    "check_supervised_y_2d": "calib_core's one label validator takes an (N, 1) column as the labels on purpose, "
                             "without scikit-learn's DataConversionWarning",
    "check_n_features_in_after_fitting": "predict_proba refuses a different column count, " + _WORDING,
    "check_complex_data": "complex input is " + _WORDING,
    "check_dtype_object": "calib_core's validator refuses object arrays instead of converting them",
    "check_estimators_empty_data_messages": "empty input is " + _WORDING,
    "check_estimator_sparse_tag": "dense (N, K) arrays only (the tags say so): sparse input is " + _WORDING,
    "check_estimator_sparse_array": "dense (N, K) arrays only: sparse input is " + _WORDING,
    "check_estimator_sparse_matrix": "dense (N, K) arrays only: sparse input is " + _WORDING,
    "check_classifiers_regression_target": "a continuous target is " + _WORDING,
    "check_fit2d_1feature": "one column is one class; K >= 2 columns are required, and one column is " + _WORDING,
    "check_fit2d_predict1d": "1-D input is " + _WORDING,
    "check_requires_y_none": "fit(x, None) is " + _WORDING,
    # fit(..., sample_weight=) (issue 28): these checks fit on their own data or call fit(X, y=...)
    "check_sample_weights_pandas_series": _DATA,
    "check_sample_weights_not_an_array": _DATA,
    "check_sample_weights_shape": _DATA,
    "check_sample_weights_not_overwritten": _DATA,
    "check_sample_weight_equivalence_on_dense_data": "it calls fit(X, y=..., sample_weight=...), but the API contract "
                                                     "names fit's arguments `x, labels`; the equivalence it checks "
                                                     "(integer weights = repeated rows) is "
                                                     "tests/recalibration/test_recalibration_weights.py's",
}
#: Only for the methods that keep the arg-max of x by construction (Recalibrator.preserves_accuracy).
ONE_LABEL_SKIPPED = {"check_classifiers_one_label": "the method keeps the arg-max of `x` by construction, so after "
                     "fitting on a single label it still predicts the arg-max of `x`, not that label"}


#: Only for binary-only methods (``binary_only = True``: quadratic scaling), which refuse x of other than 2 columns.
BINARY_ONLY_SKIPPED = dict.fromkeys(
    ("check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dont_overwrite_parameters",
     "check_pipeline_consistency", "check_estimators_nan_inf", "check_f_contiguous_array_estimator",
     "check_estimators_pickle", "check_fit2d_1sample", "check_methods_sample_order_invariance",
     "check_methods_subset_invariance", "check_dict_unchanged", "check_sample_weights_list"),
    "the check draws x with more than 2 columns, which a binary-only method refuses (its pickle, invariances "
    "and round trips are tested on binary data in tests/recalibration/test_structured.py)")


#: The sample-weight checks scikit-learn runs on a fit that takes ``sample_weight`` (issue 27's methods): they fit
#: on its own feature matrices, as above.
SAMPLE_WEIGHT_SKIPPED = {name: _DATA for name in (
    "check_sample_weights_pandas_series", "check_sample_weights_not_an_array", "check_sample_weights_list",
    "check_all_zero_sample_weights_error", "check_sample_weights_shape", "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data", "check_classifiers_one_label_sample_weights")}
#: Spline calibration needs three distinct probabilities per class.
ONE_SAMPLE_SKIPPED = {"check_fit2d_1sample": "a spline needs 3 distinct probabilities per class; one row is " + _WORDING}


def _expected_failures(estimator):
    return {**ESTIMATOR_CHECKS_SKIPPED,
            **(ONE_LABEL_SKIPPED if estimator.preserves_accuracy else {}),
            **(BINARY_ONLY_SKIPPED if getattr(estimator, "binary_only", False) else {}),
            **(SAMPLE_WEIGHT_SKIPPED if "sample_weight" in inspect.signature(estimator.fit).parameters else {}),
            **(ONE_SAMPLE_SKIPPED if estimator.method == "spline_calibration" else {})}


def _checked_instance(cls):
    """An instance with input="logits" (the checks draw real-valued matrices: valid logits, not probabilities).
    Spline calibration samples 4 knots instead of 30: its 18 L-BFGS fits per class per check made it 80 % of this
    file's time, and the checks test the estimator's interface, not the spline's fit (tested against splinecalib in
    tests/recalibration/test_splines.py)."""
    return cls(input="logits", knot_sample_size=4) if cls.__name__ == "SplineCalibration" else cls(input="logits")


def _estimator_checks():
    """scikit-learn's checks for each method. A check declared not to apply (``_expected_failures``, each with its
    reason) is skipped with that reason, not run as a non-strict xfail: such a run cannot fail, and it was a third of
    the file's time."""
    for cls in ALL:
        estimator = _checked_instance(cls)
        yield from estimator_checks_generator(estimator, legacy=True,
                                              expected_failed_checks=_expected_failures(estimator), mark="skip")


@pytest.mark.parametrize("estimator, check", list(_estimator_checks()), ids=_get_check_estimator_ids)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_every_skipped_estimator_check_exists_and_gives_a_reason():
    from sklearn.utils.estimator_checks import _yield_all_checks

    names = set()
    for cls in ALL:
        names.update(getattr(check, "func", check).__name__ for check in _yield_all_checks(cls(), legacy=True))
    skipped = {**ESTIMATOR_CHECKS_SKIPPED, **ONE_LABEL_SKIPPED, **BINARY_ONLY_SKIPPED}
    assert set(skipped) <= names
    assert all(len(reason) > 20 for reason in skipped.values())
    docs = (Path(__file__).resolve().parents[2] / "docs" / "sklearn.md").read_text()
    assert [name for name in skipped if f"`{name}`" not in docs] == []


def test_fit_without_labels_is_an_input_error():
    with pytest.raises(CalibrationInputError, match="`labels` is None"):
        TemperatureScaling().fit(np.zeros((3, 2)), None)


def test_calibrated_model_fit_takes_sample_weight_as_its_recalibrator_does():
    # Integer weights fit the repeated calibration rows; the map equals the recalibrator fitted with the weights.
    x_train, y_train, x_cal, y_cal, x_test, _ = _classifier_data()
    classifier = LogisticRegression(max_iter=500).fit(x_train, y_train)
    weights = np.random.default_rng(3).integers(0, 4, size=len(y_cal))
    model = CalibratedModel(classifier, HistogramBinning(5)).fit(x_cal, y_cal, sample_weight=weights)
    repeated = CalibratedModel(classifier, HistogramBinning(5)).fit(np.repeat(x_cal, weights, axis=0),
                                                                   np.repeat(y_cal, weights))
    np.testing.assert_allclose(model.predict_proba(x_test), repeated.predict_proba(x_test), atol=1e-12)
    index = np.searchsorted(classifier.classes_, y_cal)
    by_hand = TemperatureScaling().fit(classifier.decision_function(x_cal), index, sample_weight=weights + 0.5)
    weighted = CalibratedModel(classifier, TemperatureScaling()).fit(x_cal, y_cal, sample_weight=weights + 0.5)
    assert weighted.recalibrator_.temperature_ == by_hand.temperature_
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        CalibratedModel(classifier, TemperatureScaling()).fit(x_cal, y_cal, sample_weight=np.ones(3))
    assert "sample_weight" in inspect.signature(CalibratedModel.fit).parameters
