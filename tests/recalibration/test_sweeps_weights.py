"""The Recalibration page's temperature surface and GCE ranking with row weights (issue 28): every curve and
every variant is the weighted metric; whole-number weights give the repeated rows' numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.metrics.sensitivity import GCE_VARIANTS, gce_variants
from calib_core.recalibration import sweeps


def _data(n=60, k=3, seed=2):
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.normal(size=(n, k))
    labels = (rng.random(n)[:, None] > np.cumsum(cc.softmax(logits / 2.0), 1)).sum(1)
    weights = rng.integers(0, 4, size=n).astype(float)
    return logits, labels, weights, np.repeat(np.arange(n), weights.astype(int))


def test_weighted_surface_is_the_repeated_rows_surface_and_differs_from_the_plain_one():
    logits, labels, weights, rep = _data()
    weighted = sweeps.temperature_surface(logits, labels, sample_weight=weights)
    repeated = sweeps.temperature_surface(logits[rep], labels[rep])
    plain = sweeps.temperature_surface(logits, labels)
    assert set(weighted.table["metric"]) == {"NLL", "ECE", "ACE", "SCE", "CE_KL (kernel)"}
    pd.testing.assert_frame_equal(weighted.table, repeated.table, check_exact=False, rtol=0, atol=1e-10)
    assert not np.allclose(weighted.table["value"], plain.table["value"])
    nll = weighted.table[weighted.table["metric"] == "NLL"]
    t = nll["temperature"].iloc[7]
    assert nll["value"].iloc[7] == pytest.approx(cc.nll(cc.softmax(logits / t), labels, sample_weight=weights))


def test_fractional_weights_keep_every_curve_but_the_kernel_one():
    logits, labels, weights, _ = _data()
    surface = sweeps.temperature_surface(logits, labels, sample_weight=weights + 0.25)
    assert surface.failed == () and surface.kde_rows == 0  # kde_ce takes whole-number weights only, and it says so
    assert "CE_KL (kernel)" not in set(surface.table["metric"]) and "whole-number" in surface.not_weighted
    ece = surface.table[surface.table["metric"] == "ECE"]
    t = ece["temperature"].iloc[3]
    assert ece["value"].iloc[3] == pytest.approx(cc.ece(cc.softmax(logits / t), labels, sample_weight=weights + 0.25))


def test_weighted_gce_ranking_is_the_repeated_rows_ranking():
    logits, labels, weights, rep = _data()
    probs = {name: cc.softmax(logits / t) for name, t in (("before", 1.0), ("a", 2.0), ("b", 0.5))}
    weighted = sweeps.gce_ranking(probs, labels, sample_weight=weights)
    repeated = sweeps.gce_ranking({k: v[rep] for k, v in probs.items()}, labels[rep])
    plain = sweeps.gce_ranking(probs, labels)
    np.testing.assert_allclose(weighted.values.to_numpy(), repeated.values.to_numpy(), rtol=0, atol=1e-12)
    assert not np.allclose(weighted.values.to_numpy(), plain.values.to_numpy())
    fractional = weights + 0.5
    variants = gce_variants(probs["a"], labels, 15, sample_weight=fractional)
    assert variants[4] == pytest.approx(cc.gce(probs["a"], labels, n_bins=15, sample_weight=fractional), abs=1e-15)
    for index in (13, 31):
        binning, max_prob, class_conditional, threshold, norm = GCE_VARIANTS[index]
        assert variants[index] == pytest.approx(cc.gce(
            probs["a"], labels, n_bins=15, binning=binning, max_prob=max_prob, class_conditional=class_conditional,
            threshold=threshold, norm=norm, sample_weight=fractional), abs=1e-15)
