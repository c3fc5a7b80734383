"""Contract checks of issue 27's parametric recalibrators (calib_core_api.md, third round)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import calib_core as cc


@pytest.mark.parametrize("name", ["StructuredMatrixScaling", "StructuredVectorScaling", "QuadraticScaling"])
def test_exported_with_sklearn_protocol_and_weighted_fit(name):
    assert name in cc.__all__
    cls = getattr(cc, name)
    method = cls()
    params = method.get_params(deep=True)
    assert method.set_params(**params) is method and cls(**params).get_params() == params
    fit = inspect.signature(cls.fit).parameters
    assert fit["sample_weight"].default is None and fit["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY
    k = 2 if name == "QuadraticScaling" else 3
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, k)), np.arange(60) % k
    probs = method.fit(x, y, sample_weight=np.ones(60)).predict_proba(x)
    assert probs.shape == (60, k)


def test_platt_scaling_input_logits_fits_on_logits():
    z = np.array([[0.0, 2.0], [0.0, -1.0], [0.0, 0.5], [0.0, 3.0], [0.0, -2.0], [0.0, 1.0]])
    y = np.array([1, 0, 0, 1, 0, 1])
    platt = cc.PlattScaling(input="logits")
    assert platt.input == "logits" == cc.PlattScaling().input
    q = platt.fit(z, y).predict_proba(z)[:, 1]
    eta = platt.slopes_[0] * (z[:, 1] - z[:, 0]) + platt.intercepts_[0]
    np.testing.assert_allclose(q, 1 / (1 + np.exp(-eta)), rtol=1e-12)
