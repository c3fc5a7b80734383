"""Every recalibrator's fit(..., sample_weight=): integer weights == repeated rows (issue 28).

Iterates the method registry, so methods added later are covered too.
"""
from __future__ import annotations

import numpy as np
import pytest

from calib_core.recalibration import all_recalibrators
from calib_core.recalibration._base import Recalibrator
from calib_core.validation import CalibrationInputError

NAMES = list(all_recalibrators())
#: Methods whose loss takes weights natively (any non-negative weights, not only whole numbers): those that say so
#: (``Recalibrator.weighted_loss``); every other method fits the repeated rows and refuses fractions.
NATIVE = {m.method for m in all_recalibrators().values() if type(m).weighted_loss}
#: Fitted by L-BFGS to its tolerance (ftol 1e-8): two fits of the same loss summed in another order end a few
#: 1e-3 apart in probability; every other method is closed-form, Newton to 1e-10, or the same repeated rows.
LBFGS = {"vector_scaling", "matrix_scaling", "dirichlet_calibration", "structured_matrix_scaling",
         "structured_vector_scaling", "quadratic_scaling", "spline_calibration"}
#: Not scale-free in the weights: Platt's smoothed targets (N+ + 1) / (N+ + 2), the default bin count
#: optimal_n_bins(N) and the floored twin's histogram count rows (the summed weight), as they do for repeated rows;
#: SMS/SVS's ridge penalties divide by N; and a method that fits whole-number weights as repeated rows
#: (``repeat_whole_weights``: SMS, SVS, spline calibration, whose penalty is chosen on a held-out fold of the
#: repeated rows) compares here a repeated-rows fit with a weighted one (measured: 0.04-0.2 apart).
COUNTS_ROWS = {"platt_scaling", "histogram_binning", "histogram_binning_floored", "structured_matrix_scaling",
               "structured_vector_scaling", "spline_calibration"}


def _tolerance(name):
    return 5e-3 if _method(name).method in LBFGS else 1e-6


@pytest.mark.parametrize("name", [name for name, method in all_recalibrators().items()
                                  if type(method).repeat_whole_weights])
def test_lbfgs_fits_whole_weights_exactly_as_repeated_rows(name):
    """Whole-number weights fit the repeated rows themselves: the same map, not one a tolerance away."""
    probs, labels, weights = _data_for(name, seed=4)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = _method(name).fit(probs, labels, sample_weight=weights).predict_proba(probs)
    repeated = _method(name).fit(probs[rows], labels[rows]).predict_proba(probs)
    np.testing.assert_array_equal(weighted, repeated)


def _data(n=120, k=3, seed=0):
    """Probabilities and labels of a 3-class problem (2 classes for a binary-only method: :func:`_data_for`)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (n, k))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(probs ** 0.7 / (probs ** 0.7).sum(1, keepdims=True), 1)).sum(1)
    labels = np.minimum(labels, k - 1)
    labels[:k] = np.arange(k)
    weights = rng.integers(1, 4, n).astype(float)
    return probs, labels, weights


#: The methods that existed when weights came (issue 28): each must take them.
WEIGHTED_METHODS = NATIVE | {"ensemble_temperature_scaling", "accuracy_preserving_calibrated_map",
                             "metric_optimized_temperature"}
#: Methods that refuse every weight, with the reason in their message: a Venn-Abers predictor's validity rests on
#: equally weighted, exchangeable calibration rows (issue 27), so weights are refused rather than ignored.
REFUSES_WEIGHTS = {"venn_abers"}
#: The methods the equalities below apply to.
TAKES_WEIGHTS = [name for name, method in all_recalibrators().items() if method.method not in REFUSES_WEIGHTS]


def _method(name):
    return all_recalibrators(input="probs")[name]


def _data_for(name, **options):
    return _data(k=2, **options) if getattr(type(_method(name)), "binary_only", False) else _data(**options)


def _fit(name, probs, labels, **kwargs):
    return _method(name).fit(probs, labels, **kwargs)


@pytest.mark.parametrize("name", [name for name, method in all_recalibrators().items()
                                  if method.method in REFUSES_WEIGHTS])
def test_a_method_that_refuses_weights_says_so_for_any_weights(name):
    probs, labels, weights = _data_for(name)
    for given in (weights, np.ones(labels.size), weights + 0.5):
        with pytest.raises(CalibrationInputError, match="sample_weight"):
            _fit(name, probs, labels, sample_weight=given)


@pytest.mark.parametrize("name", TAKES_WEIGHTS)
def test_integer_weights_fit_the_repeated_rows(name):
    probs, labels, weights = _data_for(name)
    rows = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = _fit(name, probs, labels, sample_weight=weights).predict_proba(probs)
    repeated = _method(name).fit(probs[rows], labels[rows]).predict_proba(probs)
    np.testing.assert_allclose(weighted, repeated, atol=_tolerance(name))


@pytest.mark.parametrize("name", TAKES_WEIGHTS)
def test_unit_weights_and_zero_weights(name):
    probs, labels, weights = _data_for(name, seed=1)
    plain = _method(name).fit(probs, labels).predict_proba(probs)
    ones = _fit(name, probs, labels, sample_weight=np.ones(labels.size)).predict_proba(probs)
    np.testing.assert_allclose(ones, plain, atol=1e-12)  # weights of 1: the unweighted loss bit for bit
    weights[::5] = 0.0
    kept = weights > 0
    dropped = _method(name).fit(probs[kept], labels[kept], sample_weight=weights[kept]).predict_proba(probs)
    zeros = _method(name).fit(probs, labels, sample_weight=weights).predict_proba(probs)
    np.testing.assert_allclose(zeros, dropped, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_fractional_weights_fitted_or_refused(name):
    probs, labels, weights = _data_for(name, seed=2)
    method = _method(name)
    if method.method in NATIVE and method.method not in COUNTS_ROWS:
        scaled = method.fit(probs, labels, sample_weight=weights * 0.25).predict_proba(probs)
        whole = _method(name).fit(probs, labels, sample_weight=weights).predict_proba(probs)
        np.testing.assert_allclose(scaled, whole, atol=_tolerance(name))  # a weighted mean loss: scale-free
    elif method.method in NATIVE:
        assert np.isfinite(method.fit(probs, labels, sample_weight=weights + 0.5).predict_proba(probs)).all()
    else:
        wording = "sample_weight" if method.method in REFUSES_WEIGHTS else "whole numbers"
        with pytest.raises(CalibrationInputError, match=wording):
            method.fit(probs, labels, sample_weight=weights + 0.5)


def test_the_methods_of_issue_28_are_registered():
    assert WEIGHTED_METHODS <= {m.method for m in all_recalibrators().values()}


def test_every_registered_method_is_covered():
    assert {cls.method for cls in Recalibrator._registry.values()} <= {m.method for m in all_recalibrators().values()}


def test_bad_weights_refused_by_fit():
    probs, labels, _ = _data()
    with pytest.raises(CalibrationInputError, match="shape"):
        _method(NAMES[0]).fit(probs, labels, sample_weight=np.ones(3))
