"""Contract of what issue 28's interval work added to estimate_prevalence: the keyword-only `recalibrator`
(default None, after the existing parameters, which keep their order and defaults) and the result's
`em_bias` (K,) and `interval_holds` (bool or None)."""
import inspect

import numpy as np

import calib_core as cc


def test_existing_parameters_keep_their_order_and_defaults_and_recalibrator_is_keyword_only_last():
    params = inspect.signature(cc.estimate_prevalence).parameters
    # sample_weight= (keyword-only, issue 28) comes after them: tests/test_contract_prevalence_weights.py
    assert list(params)[:11] == ["probs_unlabelled", "source_prevalence", "method", "probs_labelled", "labels",
                                 "n_boot", "alpha", "seed", "max_iter", "tol", "recalibrator"]
    defaults = {name: p.default for name, p in params.items()
                if p.default is not inspect.Parameter.empty and name != "sample_weight"}
    assert defaults == {"source_prevalence": None, "method": "em", "probs_labelled": None, "labels": None,
                        "n_boot": 200, "alpha": 0.05, "seed": 0, "max_iter": 1000, "tol": 1e-8, "recalibrator": None}
    assert params["recalibrator"].kind is inspect.Parameter.KEYWORD_ONLY


def test_result_fields():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 150)
    probs_labelled = cc.softmax(rng.normal(size=(150, 3)) + 2 * np.eye(3)[labels])
    probs = cc.softmax(rng.normal(size=(120, 3)))
    em = cc.estimate_prevalence(probs, probs_labelled=probs_labelled, labels=labels, n_boot=20)
    assert em.em_bias.shape == (3,) and isinstance(em.interval_holds, bool)
    bbse = cc.estimate_prevalence(probs, method="bbse", probs_labelled=probs_labelled, labels=labels, n_boot=0)
    assert bbse.interval_holds is None and np.isnan(bbse.em_bias).all()
