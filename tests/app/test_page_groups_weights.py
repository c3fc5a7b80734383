"""The Groups page with a weighted model (issue 28): its numbers are calib_core's with ``sample_weight``
(by_group, group_reliability, multicalibration on the same rows), the cache key holds the weights, and
the page says its numbers are weighted instead of warning that they are not."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import load_predictions
from studio import compute_groups, state
from calib_core.plot import figures_groups

from tests import app_support
from tests.app_support import assert_clean, trace_array

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

PAGE = "pages/10_Groups.py"
TIMEOUT = 90


def _weighted_file(rows: int = 240) -> bytes:
    """Two sites; the heavy rows of site s1 are the over-confident ones, so weighting changes the worst gap."""
    rng = np.random.default_rng(3)
    lines = ["label,p_a,p_b,site,w"]
    for i in range(rows):
        p = float(rng.uniform(0.05, 0.95))
        site = f"s{i % 2}"
        heavy = site == "s1" and p > 0.6
        truth = 0.5 if heavy else p
        lines.append(f"{int(rng.uniform() < truth)},{1 - p:.4f},{p:.4f},{site},{4 if heavy else 1 + i % 2}")
    return ("\n".join(lines) + "\n").encode()


def test_groups_page_numbers_are_the_weighted_calib_core_calls():
    """Before: the page called by_group / group_reliability / multicalibration without the weights."""
    predictions = load_predictions(_weighted_file(), name="clinic.csv", group="site", weight_column="w")
    p, w = predictions, predictions.sample_weight
    assert w is not None and p.groups is not None
    at = app_support.open_with_model(PAGE, predictions, timeout=TIMEOUT)
    assert_clean(at)

    expected = cc.by_group("ece", p.probs, p.labels, p.groups, n_boot=200, seed=0, n_bins=15, sample_weight=w)
    unweighted = cc.by_group("ece", p.probs, p.labels, p.groups, n_boot=200, seed=0, n_bins=15)
    assert f"{expected.overall:.4f}" != f"{unweighted.overall:.4f}"
    text = " ".join(m.value for m in at.markdown)
    assert f"{expected.worst_value:.4f} against {expected.overall:.4f}" in text
    assert f"[{expected.gap_low:+.4f}, {expected.gap_high:+.4f}]" in text
    bar = app_support.plotly_specs(at)[0]
    assert trace_array(bar["data"][0]["x"]) == pytest.approx(figures_groups.sorted_by_gap(expected)["value"].to_numpy())
    multi = cc.multicalibration(p.probs, p.labels, p.groups, n_bins=15, sample_weight=w)
    assert f"**{multi.max_gap:.4f}**" in text and f"{multi.count} weighted rows" in text

    fingerprint = state.fingerprint(p)
    table = compute_groups.group_reliability(p, fingerprint, 15, "uniform")
    np.testing.assert_allclose(table["count"], cc.group_reliability(p.probs, p.labels, p.groups, n_bins=15,
                                                                    sample_weight=w)["count"])
    # the page says its numbers are weighted; no "unweighted" warning
    assert any("Row weights" in c.value and "weighted" in c.value for c in at.caption)
    assert not [x.value for x in at.warning if "Row weights" in x.value]


def test_the_weights_are_part_of_the_groups_cache_key():
    weighted = load_predictions(_weighted_file(), name="clinic.csv", group="site", weight_column="w")
    plain = load_predictions(_weighted_file(), name="clinic.csv", group="site")
    values = [compute_groups.group_metric(p, state.fingerprint(p), "ece", 15, "uniform", 0, 0).overall
              for p in (plain, weighted)]
    assert values[0] == pytest.approx(cc.ece(plain.probs, plain.labels))
    assert values[1] == pytest.approx(cc.ece(weighted.probs, weighted.labels, sample_weight=weighted.sample_weight))
    assert values[0] != pytest.approx(values[1])
