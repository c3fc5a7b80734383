"""Systems on the same items compared with paired intervals (issue 26): calib_core.recalibration.paired."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import calib_core as cc
from calib_core.metrics import selective
from calib_core.recalibration.paired import compare_systems


def _pair(c):
    return np.column_stack([1.0 - c, c])


def _systems(n=600, seed=0):
    """An honest system (confidence = chance of being right), one stating 0.95 always, one with noise for a
    confidence (uninformative about being right), all answering the same items."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.3, 1.0, n)
    right = (rng.uniform(size=n) < c).astype(int)
    return c, right, {"honest": _pair(c), "always_sure": _pair(np.full(n, 0.95)),
                      "noise": _pair(np.round(rng.uniform(0.3, 1.0, n), 1))}


def test_ranking_entries_read_the_stated_confidence_not_its_top_label():
    """Before: no confidence entry for AUROC/AURC; the top-label entry on [1 - c, c] reads max(c, 1 - c)."""
    rng = np.random.default_rng(1)
    c = np.round(rng.uniform(0.0, 1.0, 300), 1)  # ties, and confidences below one half
    y = (rng.uniform(size=300) < c).astype(int)
    probs = _pair(c)
    assert cc.metric_function("conf_auroc")(probs, y) == pytest.approx(roc_auc_score(y, c), abs=1e-12)
    assert cc.metric_function("conf_aurc")(probs, y) == pytest.approx(selective.aurc(c, y), abs=1e-12)
    assert cc.metric_function("conf_eaurc")(probs, y) == pytest.approx(selective.eaurc(c, y), abs=1e-12)
    assert cc.metric_function("conf_augrc")(probs, y) == pytest.approx(selective.augrc(c, y), abs=1e-12)
    assert cc.metric_function("auroc_correct")(probs, y) != pytest.approx(roc_auc_score(y, c))  # the wrong reading
    assert {"conf_auroc", "conf_aurc", "conf_eaurc", "conf_augrc"} <= {s.key for s in cc.metrics_of_kind("confidence")}


def test_a_system_against_itself_differs_by_exactly_zero():
    c, y, systems = _systems()
    found = compare_systems([systems["honest"], systems["honest"].copy()], np.stack([y, y]), names=["a", "b"], kind="confidence",
                            n_boot=50)
    assert [m.key for m in found.metrics] == ["conf_ece", "conf_brier", "conf_auroc", "conf_aurc", "conf_accuracy"]
    for d in found.differences:
        assert (d.difference, d.low, d.high, d.better) == (0.0, 0.0, 0.0, None)
        assert "no difference beyond noise" in d.sentence()


def test_better_calibrated_and_better_at_knowing_when_wrong_are_named():
    c, y, systems = _systems()
    names = list(systems)
    found = compare_systems(list(systems.values()), y, names=names, kind="confidence", n_boot=100,
                            keys=["conf_ece", "conf_auroc", "conf_aurc"])
    by = {(d.key, d.a, d.b): d for d in found.differences}
    assert len(found.differences) == 3 * 3  # every pair of three, per metric
    ece = by[("conf_ece", "honest", "always_sure")]
    assert ece.better == "honest" and ece.low > 0  # always_sure - honest > 0: honest is lower
    assert "honest is better calibrated than always_sure beyond noise" in ece.sentence()
    auroc = by[("conf_auroc", "honest", "noise")]
    assert auroc.better == "honest" and auroc.high < 0 and auroc.higher_is_better
    assert "better at knowing when it is wrong" in auroc.sentence()
    # the difference is the difference of the estimates; its interval is the paired bootstrap's
    honest, noise = (cc.metric_function("conf_auroc")(systems[k], y) for k in ("honest", "noise"))
    assert auroc.difference == pytest.approx(noise - honest, abs=1e-12)
    values = found.values()
    assert set(values["model"]) == set(names) and len(found.table()) == 9


def test_refusals_name_the_problem():
    c, y, systems = _systems(n=100)
    with pytest.raises(cc.CalibrationInputError, match="at least two"):
        compare_systems([systems["honest"]], y, names=["a"], kind="confidence", n_boot=20)
    with pytest.raises(cc.CalibrationInputError, match="one name per model"):
        compare_systems([systems["honest"]] * 2, y, names=["a"], kind="confidence", n_boot=20)
    with pytest.raises(cc.CalibrationInputError, match="for classes models"):
        compare_systems([systems["honest"]] * 2, y, names=["a", "b"], keys=["ece"], kind="confidence", n_boot=20)


def test_each_system_is_judged_on_its_own_correctness():
    """Systems answering the same items are each right or wrong: labels (M, N), one row per system."""
    rng = np.random.default_rng(3)
    c1, c2 = rng.uniform(0.5, 1.0, 300), rng.uniform(0.5, 1.0, 300)
    y1, y2 = (rng.uniform(size=300) < c1).astype(int), (rng.uniform(size=300) < c2).astype(int)
    found = compare_systems([_pair(c1), _pair(c2)], np.stack([y1, y2]), names=["one", "two"], kind="confidence",
                            keys=["conf_brier"], n_boot=40)
    assert found.metrics[0].estimates.tolist() == pytest.approx([np.mean((c1 - y1) ** 2), np.mean((c2 - y2) ** 2)])
    assert found.metrics[0].samples.shape == (2, 40)
    with pytest.raises(cc.CalibrationInputError, match=r"shape \(N,\) or \(M, N\)"):
        compare_systems([_pair(c1), _pair(c2)], np.stack([y1, y2, y1]), names=["one", "two"], kind="confidence",
                        keys=["conf_brier"], n_boot=40)
