"""load_predictions(weight_column=) and Predictions.sample_weight (issue 28)."""
from __future__ import annotations

import pytest

import calib_core as cc
from calib_core.io.loading import load_predictions
from calib_core.io.predictions import Predictions
from calib_core.validation import CalibrationInputError

CSV = b"label,p_0,p_1,weight,w\n0,0.8,0.2,70.5,1\n1,0.3,0.7,82.0,3\n1,0.6,0.4,64.0,0\n"


def test_a_weight_column_is_read_only_when_asked():
    plain = load_predictions(CSV, name="m.csv")
    assert plain.sample_weight is None and plain.n_classes == 2  # "weight" is neither weights nor a class
    weighted = load_predictions(CSV, name="m.csv", weight_column="w")
    assert weighted.sample_weight.tolist() == [1.0, 3.0, 0.0]
    assert weighted.weight_column == "w" and weighted.n_classes == 2
    assert not weighted.sample_weight.flags.writeable
    rows = [0, 1, 1, 1]
    assert cc.ece(weighted.probs, weighted.labels, sample_weight=weighted.sample_weight) == pytest.approx(
        cc.ece(weighted.probs[rows], weighted.labels[rows]))


def test_subset_carries_the_weights():
    pred = load_predictions(CSV, name="m.csv", weight_column="w")
    assert pred.subset([1, 0]).sample_weight.tolist() == [3.0, 1.0]


@pytest.mark.parametrize("csv, message", [
    (b"label,p_0,p_1,w\n0,0.8,0.2,1\n1,0.3,0.7,\n", "row 1"),
    (b"label,p_0,p_1,w\n0,0.8,0.2,1\n1,0.3,0.7,-2\n", ">= 0"),
    (b"label,p_0,p_1,w\n0,0.8,0.2,0\n1,0.3,0.7,0\n", "sums to 0"),
    (b"label,p_0,p_1\n0,0.8,0.2\n1,0.3,0.7\n", "not a column"),
])
def test_bad_weight_columns_are_refused(csv, message):
    with pytest.raises(CalibrationInputError, match=message):
        load_predictions(csv, name="m.csv", weight_column="w")


def test_the_label_cannot_be_the_weights():
    with pytest.raises(CalibrationInputError, match="weight"):
        load_predictions(CSV, name="m.csv", weight_column="label")


def test_from_arrays_checks_the_weights():
    pred = Predictions.from_arrays(probs=[[0.9, 0.1], [0.2, 0.8]], labels=[0, 1], sample_weight=[2, 1])
    assert pred.sample_weight.tolist() == [2.0, 1.0]
    with pytest.raises(CalibrationInputError, match="shape"):
        Predictions.from_arrays(probs=[[0.9, 0.1], [0.2, 0.8]], labels=[0, 1], sample_weight=[2])
