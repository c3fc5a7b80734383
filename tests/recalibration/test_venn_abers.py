"""VennAbers against the venn-abers package (Vovk & Petej 2014; Vovk, Petej & Fedorova 2015)."""
from __future__ import annotations

import numpy as np
import pytest
import venn_abers
from sklearn.base import BaseEstimator, ClassifierMixin

from calib_core import CalibrationInputError
from calib_core.recalibration import Recalibrator, VennAbers
from calib_core.recalibration.protocol import stratified_folds
from tests.recalibration.nonparametric_support import REAL_SETS, halves, thousand_classes

#: The tables are the package's algorithm transcribed: agreement to rounding.
TOLERANCE = 1e-12


def reference(fit_probs, fit_labels, eval_probs, va_type):
    if fit_probs.shape[1] == 2:
        return venn_abers.VennAbers().fit(fit_probs, fit_labels).predict_proba(eval_probs)
    return venn_abers.venn_abers.predict_proba_prefitted_va(fit_probs, fit_labels, eval_probs, va_tpe=va_type)


@pytest.mark.parametrize("name", REAL_SETS)
@pytest.mark.parametrize("multiclass, va_type", [("one_vs_rest", "one_vs_all"), ("one_vs_one", "one_vs_one")])
def test_inductive_venn_abers_agrees_with_the_package_on_real_sets(name, multiclass, va_type):
    fit_probs, fit_labels, eval_probs = halves(name)
    ours = VennAbers(multiclass=multiclass).fit(fit_probs, fit_labels).predict_proba(eval_probs)
    ref, p0_p1 = reference(fit_probs, fit_labels, eval_probs, va_type)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=TOLERANCE)
    if fit_probs.shape[1] == 2:
        low, high = VennAbers().fit(fit_probs, fit_labels).predict_interval(eval_probs)
        np.testing.assert_allclose(low[:, 1], p0_p1[:, 0], rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(high[:, 1], p0_p1[:, 1], rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(low[:, 0], 1 - p0_p1[:, 1], rtol=0, atol=TOLERANCE)


def test_the_one_vs_rest_maps_agree_with_the_package_at_1000_classes():
    """Each class's map on the real 1,000-class set (next words: "the", the eighth word and ``<other>``).

    The whole K = 1,000 fit is left out: both implementations take minutes there (the tables'
    running corner recomputes a slope over the remaining points at each violation, O(k^2) at worst per
    class); the renormalisation of the one-vs-rest outputs is checked on the 10-class set above.
    """
    fit_probs, fit_labels, eval_probs = thousand_classes()
    for k in (0, 7, 999):
        fit_k = np.column_stack([1 - fit_probs[:, k], fit_probs[:, k]])
        eval_k = np.column_stack([1 - eval_probs[:, k], eval_probs[:, k]])
        model = VennAbers().fit(fit_k, fit_labels == k)
        ref, p0_p1 = reference(fit_k, (fit_labels == k).astype(int), eval_k, "one_vs_all")
        np.testing.assert_allclose(model.predict_proba(eval_k), ref, rtol=0, atol=TOLERANCE)
        low, high = model.predict_interval(eval_k)
        np.testing.assert_allclose(low[:, 1], p0_p1[:, 0], rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(high[:, 1], p0_p1[:, 1], rtol=0, atol=TOLERANCE)
        assert (low <= high).all() and (model.predict_proba(eval_k) > 0).all()


class _Identity(ClassifierMixin, BaseEstimator):
    """A "model" whose probabilities are its input: the venn-abers package's CVAP on fixed scores."""

    def fit(self, x, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, x):
        return np.asarray(x)


def test_cross_venn_abers_agrees_with_the_package_on_the_same_folds(monkeypatch):
    fit_probs, fit_labels, eval_probs = halves(REAL_SETS[0])
    folds = stratified_folds(fit_labels, 5, seed=3, n_classes=2)

    class SameFolds:
        def __init__(self, **kwargs):
            pass

        def split(self, x, y):
            for f in range(5):
                yield np.flatnonzero(folds != f), np.flatnonzero(folds == f)

    monkeypatch.setattr(venn_abers.venn_abers, "StratifiedKFold", SameFolds)
    cvap = venn_abers.VennAbersCV(_Identity(), inductive=False, n_splits=5)
    cvap.fit(fit_probs, fit_labels)  # returns None
    ref = cvap.predict_proba(eval_probs)
    model = VennAbers(n_folds=5, seed=3).fit(fit_probs, fit_labels)
    np.testing.assert_allclose(model.predict_proba(eval_probs), ref, rtol=0, atol=TOLERANCE)
    # The merged interval gives the point prediction by the IVAP formula p1 / (1 - p0 + p1).
    low, high = model.predict_interval(eval_probs)
    np.testing.assert_allclose(high[:, 1] / (1 - low[:, 1] + high[:, 1]), ref[:, 1], rtol=0, atol=TOLERANCE)


def test_json_round_trip_and_refused_weights():
    fit_probs, fit_labels, eval_probs = halves(REAL_SETS[1])
    for model in (VennAbers(), VennAbers(n_folds=3, multiclass="one_vs_one")):
        model.fit(fit_probs, fit_labels)
        again = Recalibrator.from_json(model.to_json())
        np.testing.assert_array_equal(again.predict_proba(eval_probs), model.predict_proba(eval_probs))
    with pytest.raises(CalibrationInputError, match="`sample_weight` is not supported by VennAbers"):
        VennAbers().fit(fit_probs, fit_labels, sample_weight=np.ones(fit_labels.size))
    with pytest.raises(CalibrationInputError, match="per pair of classes"):
        VennAbers(multiclass="one_vs_one").fit(fit_probs, fit_labels).predict_interval(eval_probs)
    with pytest.raises(CalibrationInputError, match="`multiclass`"):
        VennAbers(multiclass="ovr").fit(fit_probs, fit_labels)
