"""Contract of the names added for several systems on the same items (issue 26): they must keep working."""
from __future__ import annotations

import inspect

import numpy as np
import pandas as pd

import calib_core as cc
from calib_core.io.confidence import is_confidence_frame
from calib_core.io.systems import match_by_id


def test_compare_systems_signature_and_result():
    parameters = inspect.signature(cc.compare_systems).parameters
    assert list(parameters)[:2] == ["probs_list", "labels"]
    assert {"names", "keys", "kind", "n_boot", "seed", "alpha"} <= set(parameters)
    c = np.linspace(0.2, 0.95, 40)
    y = (np.arange(40) % 3 != 0).astype(int)
    found = cc.compare_systems([np.column_stack([1 - c, c])] * 2, np.stack([y, y]), names=["a", "b"],
                               keys=["conf_brier"], kind="confidence", n_boot=10)
    assert isinstance(found, cc.SystemsComparison)
    assert list(found.table().columns) == ["metric", "key", "a", "b", "difference", "low", "high", "verdict"]
    assert list(found.values().columns) == ["metric", "key", "model", "estimate", "low", "high"]


def test_the_new_confidence_entries_and_loader_names():
    keys = {spec.key for spec in cc.metrics_of_kind("confidence")}
    assert {"conf_auroc", "conf_aurc", "conf_eaurc", "conf_augrc"} <= keys
    assert is_confidence_frame(pd.DataFrame({"label": ["a"], "score": [0.5], "correct": [1]}))
    assert "names" in inspect.signature(match_by_id).parameters
