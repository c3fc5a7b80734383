"""CenteredIsotonic against cir-model's CenteredIsotonicRegression, applied as probmetrics applies it."""
from __future__ import annotations

import numpy as np
import pytest

from calib_core.recalibration import CenteredIsotonic, IsotonicCalibration, Recalibrator
from tests.recalibration.nonparametric_support import REAL_SETS, halves, thousand_classes

cir_model = pytest.importorskip("cir_model", reason="cir-model is a test dependency (requirements-dev.txt)")

#: Agreement to rounding. Inputs are rounded to 12 decimals first: scikit-learn's isotonic regression (under
#: cir-model) also merges values closer than 1e-15, here only exact ties are merged, and the two differ on
#: the runs of probabilities below 1e-15 of real sets (0.07 apart on digits_gaussian_nb unrounded).
TOLERANCE = 1e-9


def reference(fit_probs, fit_labels, eval_probs):
    """probmetrics' CenteredIsotonicRegressionCalibrator, one-vs-rest as its MulticlassOneVsRestCalibrator."""
    columns = [1] if fit_probs.shape[1] == 2 else range(fit_probs.shape[1])
    out = np.empty((eval_probs.shape[0], len(columns)))
    for j, k in enumerate(columns):
        model = cir_model.CenteredIsotonicRegression().fit(fit_probs[:, k], (fit_labels == k).astype(float))
        clipped = np.clip(eval_probs[:, k], fit_probs[:, k].min(), fit_probs[:, k].max())
        out[:, j] = np.clip(model.transform(clipped), 0.0, 1.0)
    if fit_probs.shape[1] == 2:
        return np.column_stack([1 - out[:, 0], out[:, 0]])
    out = np.clip(out, 1e-30, None)
    return out / out.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("source", REAL_SETS)
def test_centred_isotonic_agrees_with_cir_model(source):
    fit_probs, fit_labels, eval_probs = halves(source)
    fit_probs, eval_probs = np.round(fit_probs, 12), np.round(eval_probs, 12)
    ours = CenteredIsotonic().fit(fit_probs, fit_labels).predict_proba(eval_probs)
    np.testing.assert_allclose(ours, reference(fit_probs, fit_labels, eval_probs), rtol=0, atol=TOLERANCE)


def test_the_one_vs_rest_maps_agree_with_cir_model_at_1000_classes():
    """Four classes' maps on the real 1,000-class set ("the", the eighth word, ``<other>`` and a word absent
    from the fitting half). The whole K = 1,000 fit is left out for CI's time (the reference's 1,000
    fits take 7-10 s; they agreed within 3e-16 on this set); the renormalisation of the one-vs-rest
    outputs is checked on the 10-class set above."""
    fit_probs, fit_labels, eval_probs = thousand_classes()
    fit_probs, eval_probs = np.round(fit_probs, 12), np.round(eval_probs, 12)
    absent = np.setdiff1d(np.arange(fit_probs.shape[1]), fit_labels)[0]
    for k in (0, 7, 999, absent):
        fit_k = np.column_stack([1 - fit_probs[:, k], fit_probs[:, k]])
        eval_k = np.column_stack([1 - eval_probs[:, k], eval_probs[:, k]])
        ours = CenteredIsotonic().fit(fit_k, (fit_labels == k).astype(int)).predict_proba(eval_k)
        np.testing.assert_allclose(ours, reference(fit_k, (fit_labels == k).astype(int), eval_k), rtol=0,
                                   atol=TOLERANCE)


def test_centred_isotonic_is_strictly_increasing_between_its_boundary_steps():
    """Where isotonic regression is flat strictly inside (0, 1), CIR is not: no flat step but at 0 and 1."""
    fit_probs, fit_labels, _ = halves(REAL_SETS[0])
    grid = np.linspace(0, 1, 2001)
    x = np.column_stack([1 - grid, grid])
    cir = CenteredIsotonic().fit(fit_probs, fit_labels).predict_proba(x)[:, 1]
    iso = IsotonicCalibration().fit(fit_probs, fit_labels).predict_proba(x)[:, 1]
    inner = (cir > 0) & (cir < 1)
    inside = (grid >= fit_probs[:, 1].min()) & (grid <= fit_probs[:, 1].max())
    steps = np.diff(cir[inner & inside])
    assert (steps > 0).all()
    assert (np.diff(iso[(iso > 0) & (iso < 1) & inside]) == 0).any()  # what CIR removes


def test_weights_are_repeated_rows_and_json_round_trips():
    fit_probs, fit_labels, eval_probs = halves(REAL_SETS[1])
    weights = np.random.default_rng(0).integers(0, 4, fit_labels.size)
    weighted = CenteredIsotonic().fit(fit_probs, fit_labels, sample_weight=weights)
    repeated = CenteredIsotonic().fit(np.repeat(fit_probs, weights, axis=0), np.repeat(fit_labels, weights))
    np.testing.assert_allclose(weighted.predict_proba(eval_probs), repeated.predict_proba(eval_probs),
                               rtol=0, atol=1e-12)
    again = Recalibrator.from_json(weighted.to_json())
    np.testing.assert_array_equal(again.predict_proba(eval_probs), weighted.predict_proba(eval_probs))
