"""Tests for calib_core.inference.intervals: each metric's interval, made as its registry entry declares."""
import sys

import numpy as np
import pytest

import calib_core as cc
from calib_core import validation
from tests.registry_support import count_computes


def predictions(seed=0, n=300, k=3):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    return probs, rng.integers(0, k, size=n)


@pytest.fixture
def n_bins_checks(monkeypatch):
    """Every call of validation.check_n_bins, wherever a module imported it."""
    calls = []
    original = validation.check_n_bins

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("calib_core") and getattr(module, "check_n_bins", None) is original:
            monkeypatch.setattr(module, "check_n_bins", counted)
    return calls


@pytest.mark.parametrize("key", ["ece", "classwise_ece", "ace", "tace", "mce"])
def test_the_bin_settings_are_checked_once_per_interval(key, n_bins_checks):
    """Issue 24: check_n_bins ran 4-5 times per metric_interval call (the estimate, metric_function's partial,
    boot_cap's and the bootstrap's binned_spec, each binding the partial again). Now the interval adds no check
    to the metric's own (the public function and its binning helper check what they are given), and with the
    estimate given (the Metrics page) the settings are checked exactly once."""
    probs, labels = predictions()
    cc.metric_value(key, probs, labels, n_bins=10)
    own = len(n_bins_checks)
    n_bins_checks.clear()
    found = cc.metric_interval(key, probs, labels, n_bins=10, binning="uniform", n_boot=20, seed=0)
    assert len(n_bins_checks) == own, n_bins_checks
    assert found.method == "bootstrap_se" and found.low <= found.estimate <= found.high
    n_bins_checks.clear()
    cc.metric_interval(key, probs, labels, n_bins=10, binning="uniform", n_boot=20, seed=0, estimate=found.estimate)
    assert len(n_bins_checks) == 1


def test_an_estimate_given_is_not_computed_again_and_gives_the_same_interval(monkeypatch, n_bins_checks):
    """Issue 24: the Metrics page had metric_report compute every estimate, then metric_interval compute it
    again; given the estimate, the interval does not compute the metric on all rows (still one settings check)."""
    probs, labels = predictions(1)
    expected = {key: cc.metric_interval(key, probs, labels, n_bins=8, n_boot=30, seed=2)
                for key in ("ece", "sce", "nll", "ks", "e50")}
    calls = count_computes(monkeypatch, expected)
    assert cc.metric_value("ece", probs, labels) and calls == ["ece"]
    calls.clear()
    n_bins_checks.clear()
    for key, interval in expected.items():
        again = cc.metric_interval(key, probs, labels, n_bins=8, n_boot=30, seed=2, estimate=interval.estimate)
        assert again == interval
    assert calls == []
    assert len(n_bins_checks) == 2  # ECE's and SCE's settings, once each
    with pytest.raises(cc.CalibrationInputError, match="n_bins"):
        cc.metric_interval("ece", probs, labels, n_bins=0, estimate=0.1)
