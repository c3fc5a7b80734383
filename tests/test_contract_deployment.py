"""Contract (third round) of the deployment names: estimate_prevalence and net_benefit, exactly as named."""
import inspect

import numpy as np
import pandas as pd

import calib_core as cc


def test_names_are_exported_from_the_root():
    for name in ("estimate_prevalence", "net_benefit", "decision_curve", "recalibration_value", "plan_labels"):
        assert name in cc.__all__ and callable(getattr(cc, name))


def test_estimate_prevalence_signature_and_result():
    params = list(inspect.signature(cc.estimate_prevalence).parameters.values())
    assert [p.name for p in params[:3]] == ["probs_unlabelled", "source_prevalence", "method"]
    assert params[1].default is None and params[2].default == "em"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[3:])
    rng = np.random.default_rng(0)
    probs = cc.softmax(rng.normal(size=(200, 3)))
    result = cc.estimate_prevalence(probs, [0.3, 0.3, 0.4])
    for field in ("prevalence", "ci_low", "ci_high"):
        assert getattr(result, field).shape == (3,)
    assert abs(result.prevalence.sum() - 1) < 1e-9
    assert (result.ci_low <= result.prevalence + 1e-12).all() and (result.prevalence <= result.ci_high + 1e-12).all()


def test_net_benefit_signature_and_columns():
    assert list(inspect.signature(cc.net_benefit).parameters)[:3] == ["probs", "labels", "thresholds"]
    table = cc.net_benefit(cc.as_probs(np.array([0.2, 0.7, 0.9])), [0, 1, 0], [0.1, 0.5])
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["threshold", "net_benefit", "treat_all", "treat_none"]
    # 0.5: rows 0.7 (TP) and 0.9 (FP): 1/3 - 1/3
    np.testing.assert_allclose(table["net_benefit"], [1 / 3 - 2 / 3 / 9, 0.0], atol=1e-12)
