"""Exact zeros (issue 27, item 3): flagged wherever the NLL is shown, floored on demand, out of the default set at K > 100."""
from __future__ import annotations

import numpy as np
import pytest

from calib_core import CalibrationInputError, softmax
from calib_core.recalibration import (RECALIBRATORS, FlooredHistogramBinning, FlooredIsotonic, HistogramBinning,
                                      IsotonicCalibration, Recalibrator, compare, defaults, hazards)


def imagenet_shaped(n_rows: int = 3000, n_classes: int = 1000, seed: int = 0):
    """Logits of a 1,000-class model that is right about 70% of the time (a few rows per class)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n_rows)
    logits = rng.normal(size=(n_rows, n_classes))
    logits[np.arange(n_rows), labels] += rng.normal(4.0, 1.5, n_rows)
    return logits, labels


def test_at_1000_classes_the_exact_zero_method_is_flagged_and_not_in_the_default_set():
    logits, labels = imagenet_shaped()
    ev = compare.evaluation_set(logits, softmax(logits), labels, compare.Protocol("random", seed=0), input="logits")
    fits = {m: compare.fit_method(m, logits, labels, ev)
            for m in ("Temperature scaling", "Isotonic regression", "Isotonic regression (floored)")}
    assert all(fit.ok for fit in fits.values())
    # The exact zeros are real: many evaluation rows give their true class exactly 0 under isotonic regression.
    zero_rows = hazards.exact_zero_rows(fits["Isotonic regression"].probs, ev.labels)
    assert zero_rows > 0.05 * ev.labels.size
    flags = compare.zero_hazards(ev, fits)
    assert list(flags) == ["Isotonic regression"]
    assert flags["Isotonic regression"].rows == zero_rows
    assert f"on {zero_rows:,} of {ev.labels.size:,} evaluation rows" in flags["Isotonic regression"].sentence
    assert "Isotonic regression (floored)" in flags["Isotonic regression"].sentence
    # ... and the floored twin pays for none of them: its NLL is far below the unfloored map's.
    assert fits["Isotonic regression (floored)"].after["nll"] < fits["Isotonic regression"].after["nll"] - 1.0
    chosen = defaults.default_methods(1000)
    assert "Isotonic regression" not in chosen and "Histogram binning" not in chosen
    assert "Isotonic regression (floored)" in chosen and "Histogram binning (floored)" in chosen
    assert "exactly 0" in defaults.default_note(1000)
    # At 100 classes and below the default set is unchanged.
    assert defaults.default_methods(100) == defaults.DEFAULT_METHODS
    assert defaults.zero_note(100) is None


def test_every_registered_method_that_can_emit_zeros_has_the_flag():
    flagged = {name for name, cls in RECALIBRATORS.items() if cls.emits_exact_zeros}
    assert {"Isotonic regression", "Histogram binning", "Centred isotonic regression"} <= flagged
    assert not flagged & {"Isotonic regression (floored)", "Histogram binning (floored)", "Venn-Abers",
                          "Spline calibration", "Temperature scaling"}
    assert set(hazards.FLOORED_TWINS) <= flagged


@pytest.mark.parametrize("plain, floored", [(IsotonicCalibration, FlooredIsotonic),
                                            (HistogramBinning, FlooredHistogramBinning)])
def test_the_floored_twin_is_the_stated_mix_and_has_no_zeros(plain, floored):
    logits, labels = imagenet_shaped(n_rows=2000, n_classes=200, seed=1)
    probs = softmax(logits)
    raw = plain(input="probs").fit(probs, labels).predict_proba(probs)
    mixed = floored(input="probs", epsilon=0.05).fit(probs, labels).predict_proba(probs)
    assert (raw == 0).any()
    np.testing.assert_allclose(mixed, 0.95 * raw + 0.05 * probs, rtol=0, atol=1e-15)
    assert (mixed > 0).all()
    np.testing.assert_allclose(mixed.sum(axis=1), 1.0, atol=1e-12)
    # The stated bound: no row's log loss exceeds the model's own plus log(1 / epsilon).
    rows = np.arange(labels.size)
    assert (-np.log(mixed[rows, labels]) <= -np.log(probs[rows, labels]) + np.log(1 / 0.05) + 1e-9).all()
    again = Recalibrator.from_json(floored(epsilon=0.05).fit(probs, labels).to_json())
    np.testing.assert_array_equal(again.predict_proba(probs), mixed)


def test_mix_with_uncalibrated_checks_epsilon():
    with pytest.raises(CalibrationInputError, match="`epsilon` must lie strictly between 0 and 1"):
        hazards.mix_with_uncalibrated([[1.0, 0.0]], [[0.5, 0.5]], 1.0)
    with pytest.raises(CalibrationInputError, match="`epsilon`"):
        FlooredIsotonic(epsilon=0.0).fit([[0.2, 0.8], [0.7, 0.3]], [1, 0])


def test_slow_one_map_per_class_methods_are_announced_with_their_time():
    """Spline calibration fits 18 penalised splines per class: at ImageNet size that is hours, said before fitting."""
    note = defaults.slow_note(["Temperature scaling", "Spline calibration", "Venn-Abers"], 25_000, 1000)
    assert "**Spline calibration** (about 17 h)" in note and "**Venn-Abers** (about 42 min)" in note
    assert "Temperature" not in note
    assert defaults.slow_note(["Spline calibration", "Venn-Abers"], 900, 10) is None
