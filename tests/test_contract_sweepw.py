"""Contract of the names issue 28's sweepw work added: sample_weight= (keyword, default None) on consistency
resampling, CanonicalCE and the Recalibration page's sweeps; the existing parameters keep their order."""
from __future__ import annotations

import inspect

import calib_core as cc
from calib_core.inference import CanonicalCE
from calib_core.metrics.sensitivity import gce_variants
from calib_core.recalibration import sweeps


def _keyword_none(function, name: str = "sample_weight") -> None:
    parameter = inspect.signature(function).parameters[name]
    assert parameter.default is None


def test_sample_weight_keywords():
    params = list(inspect.signature(cc.consistency_resampling).parameters)
    assert params[:5] == ["probs", "labels", "estimator", "n_resamples", "seed"]
    assert inspect.signature(cc.consistency_resampling).parameters["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY
    for function in (cc.consistency_resampling, CanonicalCE.__call__, gce_variants, sweeps.temperature_surface,
                     sweeps.gce_ranking):
        _keyword_none(function)
    assert list(inspect.signature(CanonicalCE.weighted_draw_evaluator).parameters) == ["self", "probs",
                                                                                        "sample_weight"]
    assert sweeps.TemperatureSurface.__dataclass_fields__["not_weighted"].default == ""
