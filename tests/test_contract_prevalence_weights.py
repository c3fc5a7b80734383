"""Contract of estimate_prevalence's sample_weight= (issue 28): keyword-only, default None, last; the public
signature of /work/shared/calib_core_api.md keeps working positionally."""
import inspect

import numpy as np

import calib_core as cc


def test_sample_weight_is_keyword_only_last_and_defaults_to_none():
    params = inspect.signature(cc.estimate_prevalence).parameters
    assert list(params)[-1] == "sample_weight"
    assert params["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY and params["sample_weight"].default is None
    assert list(params)[:3] == ["probs_unlabelled", "source_prevalence", "method"]


def test_public_call_returns_the_documented_fields():
    probs = cc.softmax(np.random.default_rng(0).normal(size=(40, 3)))
    est = cc.estimate_prevalence(probs, None, "em")
    assert est.prevalence.shape == est.ci_low.shape == est.ci_high.shape == (3,)
