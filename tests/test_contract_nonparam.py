"""Contract (third round) of the non-parametric recalibrators: names, signatures, scikit-learn protocol."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import clone

import calib_core as cc

NAMES = ("SplineCalibration", "CenteredIsotonic", "VennAbers")


@pytest.mark.parametrize("name", NAMES)
def test_exported_with_sample_weight_and_the_sklearn_protocol(name):
    assert name in cc.__all__
    cls = getattr(cc, name)
    assert inspect.signature(cls.fit).parameters["sample_weight"].default is None
    assert inspect.signature(cls.fit).parameters["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY
    model = cls()
    params = model.get_params(deep=True)
    assert params == model.get_params(deep=False) and params["input"] == "probs"
    assert model.set_params(input="logits") is model and model.input == "logits"
    copy = clone(model)
    assert type(copy) is cls and copy.get_params() == model.get_params() and copy is not model
    assert cls.display_name in cc.RECALIBRATORS


def test_venn_abers_predict_interval_returns_p0_p1_arrays():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(400, 3))
    probs = p / p.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 3, 400)
    model = cc.VennAbers().fit(probs, labels)
    p0, p1 = model.predict_interval(probs[:5])
    assert isinstance(p0, np.ndarray) and isinstance(p1, np.ndarray)
    assert p0.shape == p1.shape == (5, 3) and (p0 <= p1).all()
    p0, p1 = cc.VennAbers().fit(probs[:, :2] / probs[:, :2].sum(1, keepdims=True), labels % 2).predict_interval(
        probs[:5, :2] / probs[:5, :2].sum(1, keepdims=True))
    assert p0.shape == p1.shape == (5, 2)
