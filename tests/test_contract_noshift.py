"""Contract of the no-shift test of estimate_prevalence (issue 28): the result's `shift_statistic`,
`shift_p_value`, `shift_detected` keep their types, and the new `shift_test` (str, last field, default "")
names the test; BBSE has none."""
import dataclasses
import math

import numpy as np

import calib_core as cc
from calib_core.recalibration.label_shift import PrevalenceEstimate


def test_shift_test_is_the_last_field_with_a_default():
    fields = dataclasses.fields(PrevalenceEstimate)
    assert fields[-1].name == "shift_test" and fields[-1].default == ""
    assert [f.name for f in fields[:10]] == ["prevalence", "ci_low", "ci_high", "source_prevalence", "method", "n",
                                            "n_boot", "alpha", "shift_statistic", "shift_p_value"]


def test_result_fields_of_each_path():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 150)
    probs_labelled = cc.softmax(rng.normal(size=(150, 3)) + 2 * np.eye(3)[labels])
    probs = cc.softmax(rng.normal(size=(120, 3)))
    em = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=0)
    assert isinstance(em.shift_statistic, float) and 0 <= em.shift_p_value <= 1
    assert isinstance(em.shift_detected, bool) and "black-box shift detection" in em.shift_test
    lr = cc.estimate_prevalence(probs, labels=labels, n_boot=0)
    assert "likelihood ratio" in lr.shift_test and isinstance(lr.shift_detected, bool)
    bbse = cc.estimate_prevalence(probs, method="bbse", probs_labelled=probs_labelled, labels=labels, n_boot=0)
    assert bbse.shift_test == "" and math.isnan(bbse.shift_p_value) and bbse.shift_detected is None


def test_one_unlabelled_row_has_no_test_and_says_so():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 50)
    probs_labelled = cc.as_probs(np.clip(0.3 + 0.4 * labels + rng.normal(0, 0.1, 50), 0.01, 0.99))
    est = cc.estimate_prevalence(probs_labelled[:1], probs_labelled=probs_labelled, labels=labels, n_boot=0)
    assert est.shift_detected is None and any("no test here" in note for note in est.notes)
