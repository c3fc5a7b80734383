"""Vector scaling at many classes (issue 27, item 5): classes absent from the fitting rows get a stated finite
map instead of a bias crawling towards minus infinity, and the app's default set leaves vector scaling out above
its class-count limit, saying why, while structured vector scaling (its penalised form) stays."""
from __future__ import annotations

import numpy as np
import pytest

from calib_core.recalibration import Recalibrator, defaults
from calib_core.recalibration import scaling
from calib_core.recalibration.scaling import TemperatureScaling, VectorScaling


def _absent_last_class(n_rows: int = 300, n_classes: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_rows, n_classes))
    labels = rng.integers(0, n_classes - 1, n_rows)  # the last class never occurs
    logits[np.arange(n_rows), labels] += 1.0
    return logits, labels


@pytest.mark.parametrize("weighted", [False, True])
def test_an_unseen_class_gets_the_stated_krichevsky_trofimov_share(weighted):
    """Its MLE does not exist (b -> -inf); before, L-BFGS-B stopped at b = -17 (probability ~1e-9), wherever
    the tolerance caught it. Now: the class is named, and its mean probability on the fitting rows is about
    tau = 0.5 / (N + K / 2) (N = the total weight), the seen classes taking the rest."""
    logits, labels = _absent_last_class()
    weights = np.random.default_rng(1).uniform(0.5, 2.0, labels.size) if weighted else None
    model = VectorScaling().fit(logits, labels, sample_weight=weights)
    probs = model.predict_proba(logits)
    n_total = labels.size if weights is None else weights.sum()
    share = probs[:, 5].mean() if weights is None else weights @ probs[:, 5] / n_total
    tau = 0.5 / (n_total + 6 / 2)
    assert share == pytest.approx(tau, rel=0.02)  # the final softmax over all K moves it by about tau
    assert model.unseen_classes_.tolist() == [5]
    assert model.converged_ and np.all(np.isfinite(model.bias_))
    temperature = TemperatureScaling().fit(logits, labels, sample_weight=weights).temperature_
    assert model.weights_[5] == pytest.approx(1.0 / temperature, rel=1e-6)  # the unseen slope: 1 / T


def test_the_unseen_class_rule_keeps_the_seen_classes_fit_and_survives_json():
    logits, labels = _absent_last_class()
    model = VectorScaling().fit(logits, labels)
    # The infimum's fit: the seen classes alone (from another start, T of 6 columns: to the optimiser's tolerance).
    seen = VectorScaling().fit(logits[:, :5], labels)
    np.testing.assert_allclose(model.weights_[:5], seen.weights_, rtol=1e-4)
    np.testing.assert_allclose(model.bias_[:5] - model.bias_[:5].mean(), seen.bias_ - seen.bias_.mean(), atol=1e-4)
    loaded = Recalibrator.from_json(model.to_json())
    np.testing.assert_array_equal(loaded.predict_proba(logits), model.predict_proba(logits))
    # Every class seen (every bundled demo): nothing is unseen.
    every = VectorScaling().fit(logits[:, :5], labels)
    assert every.unseen_classes_.size == 0


def test_vector_scaling_leaves_the_default_set_above_its_limit_and_the_page_says_why():
    assert VectorScaling.max_default_classes == 100
    assert scaling.MAX_DEFAULT_CLASSES_VECTOR == 100
    assert "Vector scaling" in defaults.default_methods(100)
    wide = defaults.default_methods(1000)
    assert "Vector scaling" not in wide and "Structured vector scaling" in wide
    note = defaults.default_note(1000)
    assert "**Vector scaling** is left out of the default set above 100 classes" in note
    assert "maximum-likelihood" in note and "**Structured vector scaling**" in note
    assert note.startswith("**Dirichlet calibration** is left out")  # the matrix sentence keeps its place
    # Chosen by hand: a warning with the expected time (its iteration cap, O(N K) each).
    warning = defaults.slow_note(["Temperature scaling", "Vector scaling"], 25_000, 1000)
    assert "**Vector scaling** (about 2 min)" in warning and "iteration cap" in warning
    assert "K x K matrix" not in warning and "Temperature" not in warning
    assert defaults.slow_note(["Vector scaling"], 25_000, 100) is None
