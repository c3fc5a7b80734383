"""Confidence models' metrics (calib_core.metrics.confidence, the registry's kind="confidence" entries), each
against an independent numpy transcription of its definition, with tied confidences (verbalised steps of 0.1)."""
import numpy as np
import pytest

import calib_core as cc
from calib_core.inference.intervals import metric_interval
from calib_core.metrics import confidence as conf
from calib_core.metrics.registry import get_metric
from calib_core.metrics.reports import metrics_of_kind
from calib_core.metrics.reports import metric_report


def _tied(n=400, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.choice(np.arange(0, 11) / 10, n)  # steps of 10 %: many ties, values on bin edges
    y = (rng.random(n) < 0.8 * c + 0.05).astype(int)
    return c, y


def _continuous(n=300, seed=1):
    rng = np.random.default_rng(seed)
    c = rng.beta(4, 2, n)
    return c, (rng.random(n) < c ** 1.5).astype(int)


def _ece_uniform(c, y, n_bins):
    """Bins (lo, hi] with 0 in the first: the bin of c is ceil(c * n) - 1, floored at 0 (edges as numpy writes them)."""
    edges = np.linspace(0, 1, n_bins + 1)
    total = 0.0
    for b in range(n_bins):
        lo, hi = edges[b], edges[b + 1]
        inside = (c > lo) & (c <= hi) if b else (c >= lo) & (c <= hi)
        if inside.any():
            total += inside.sum() / c.size * abs(c[inside].mean() - y[inside].mean())
    return total


def _ece_equal_mass(c, y, n_bins):
    """Sorted values cut into array_split runs; each run's last value is an upper edge; a value goes to the first
    bin whose edge is >= it (tied values share a bin)."""
    upper = [run[-1] for run in np.array_split(np.sort(c), n_bins) if run.size]
    bins = {}
    for value, hit in zip(c, y):
        b = next(k for k, edge in enumerate(upper) if edge >= value)
        bins.setdefault(b, []).append((value, hit))
    return sum(len(v) / c.size * abs(np.mean([a for a, _ in v]) - np.mean([h for _, h in v])) for v in bins.values())


def _pav(x, y):
    """Pool-adjacent-violators on the distinct x (ties pooled first), a plain loop; the fitted value per row."""
    xs = np.unique(x)
    blocks = [[float(y[x == v].sum()), float((x == v).sum()), [v]] for v in xs]
    k = 0
    while k < len(blocks) - 1:
        if blocks[k][0] / blocks[k][1] > blocks[k + 1][0] / blocks[k + 1][1]:
            s, n, vs = blocks.pop(k + 1)
            blocks[k][0] += s
            blocks[k][1] += n
            blocks[k][2] += vs
            k = max(k - 1, 0)
        else:
            k += 1
    value = {v: b[0] / b[1] for b in blocks for v in b[2]}
    return np.array([value[v] for v in x])


@pytest.mark.parametrize("data", [_tied, _continuous])
@pytest.mark.parametrize("n_bins", [10, 15])
def test_ece_matches_transcription(data, n_bins):
    c, y = data()
    assert conf.confidence_ece(c, y, n_bins) == pytest.approx(_ece_uniform(c, y, n_bins), abs=1e-12)
    assert conf.confidence_ece(c, y, n_bins, "adaptive") == pytest.approx(_ece_equal_mass(c, y, n_bins), abs=1e-12)


def test_registry_eces_are_the_stated_settings():
    c, y = _tied()
    probs = conf.confidence_probs(c)
    values = metric_report(probs, y, kind="confidence").values
    assert values["conf_ece"] == pytest.approx(_ece_uniform(c, y, 10), abs=1e-12)
    assert values["conf_ece_15"] == pytest.approx(_ece_uniform(c, y, 15), abs=1e-12)
    assert values["conf_ece_mass_10"] == pytest.approx(_ece_equal_mass(c, y, 10), abs=1e-12)
    assert values["conf_ece_mass_15"] == pytest.approx(_ece_equal_mass(c, y, 15), abs=1e-12)
    assert values["conf_accuracy"] == pytest.approx(y.mean())
    assert values["conf_overconfidence"] == pytest.approx(c.mean() - y.mean())
    assert values["conf_brier"] == pytest.approx(np.mean((c - y) ** 2))
    clipped = np.clip(c, 1e-12, 1 - 1e-12)
    assert values["conf_nll"] == pytest.approx(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped)))


def test_confidence_below_half_is_not_folded():
    """The ECE of stated confidence keeps c < 0.5 where it is; the top-label ECE of [1 - c, c] folds it onto 1 - c
    and pools it with the confident answers (the issue's 0.1221 against 0.1254)."""
    c = np.array([0.3] * 10 + [0.7] * 10)
    y = np.array([1] * 5 + [0] * 5 + [1] * 9 + [0])  # both underconfident by 0.2
    assert conf.confidence_ece(c, y) == pytest.approx(0.2)
    assert cc.ece(conf.confidence_probs(c), y, n_bins=10) == pytest.approx(0.0, abs=1e-12)  # folded: they cancel


@pytest.mark.parametrize("data", [_tied, _continuous])
def test_corp_decomposition_matches_pav_transcription(data):
    c, y = data()
    fitted = _pav(c, y)
    assert np.allclose(conf.pav_calibrated(c, y), fitted, atol=1e-12)
    brier = np.mean((c - y) ** 2)
    base = y.mean()
    found = conf.brier_decomposition(c, y, method="corp")
    assert found.reliability == pytest.approx(brier - np.mean((fitted - y) ** 2), abs=1e-12)
    assert found.resolution == pytest.approx(np.mean((base - y) ** 2) - np.mean((fitted - y) ** 2), abs=1e-12)
    assert found.uncertainty == pytest.approx(base * (1 - base), abs=1e-12)
    assert found.reliability - found.resolution + found.uncertainty == pytest.approx(brier, abs=1e-12)
    assert found.within_bin == pytest.approx(0.0, abs=1e-12)


def test_tied_confidences_share_one_recalibrated_value():
    c = np.array([0.8, 0.8, 0.8, 0.2, 0.2])
    y = np.array([1, 0, 0, 1, 1])  # the ties violate monotonicity together: one pooled block
    assert np.allclose(conf.pav_calibrated(c, y), 0.6)


@pytest.mark.parametrize("data", [_tied, _continuous])
def test_binned_murphy_matches_transcription(data):
    c, y = data()
    edges = np.linspace(0, 1, 11)
    rel = res = 0.0
    for b in range(10):
        inside = (c > edges[b]) & (c <= edges[b + 1]) if b else (c <= edges[1])
        if inside.any():
            rel += inside.sum() / c.size * (c[inside].mean() - y[inside].mean()) ** 2
            res += inside.sum() / c.size * (y[inside].mean() - y.mean()) ** 2
    found = conf.brier_decomposition(c, y, method="binned")
    assert found.reliability == pytest.approx(rel, abs=1e-12)
    assert found.resolution == pytest.approx(res, abs=1e-12)
    assert found.brier == pytest.approx(found.reliability - found.resolution + found.uncertainty + found.within_bin)


def test_smooth_ece_is_smece_of_the_same_pairs():
    """Where the top label of a 2-class matrix is the stated confidence (c >= 0.5), both estimators see the same
    (confidence, correct) pairs, so they agree (smooth_ece is pinned to relplot's smECE elsewhere)."""
    rng = np.random.default_rng(3)
    c = rng.uniform(0.5, 1.0, 300)
    y = (rng.random(300) < c).astype(int)
    matrix = np.column_stack([c, 1 - c])  # top label: class 0 with confidence c; right when label 0
    assert conf.confidence_smooth_ece(c, y) == pytest.approx(cc.smooth_ece(matrix, 1 - y), abs=1e-12)


def test_overconfidence_has_an_interval_around_it():
    c, y = _tied()
    found = metric_interval("conf_overconfidence", conf.confidence_probs(c), y, n_boot=200)
    assert found.low <= c.mean() - y.mean() <= found.high
    assert found.high - found.low > 0


@pytest.mark.parametrize("key", [spec.key for spec in metrics_of_kind("confidence")])
def test_every_confidence_entry_has_an_interval_containing_it(key):
    c, y = _tied(200)
    found = metric_interval(key, conf.confidence_probs(c), y, n_boot=50)
    assert found.low <= found.estimate <= found.high


def test_confidence_entries_refuse_a_k_class_matrix():
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    with pytest.raises(cc.CalibrationInputError, match="top-label confidence"):
        get_metric("conf_ece").compute(probs, np.array([0, 2]), 10, "uniform")


def test_default_report_of_a_k_class_model_is_unchanged():
    keys = [spec.key for spec in metrics_of_kind("classes")]
    assert not any(key.startswith("conf_") for key in keys)
    probs = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])
    assert list(metric_report(probs, [0, 1, 1]).values) == keys


def test_checks_name_the_problem():
    with pytest.raises(cc.CalibrationInputError, match="`correct` must be 0 or 1"):
        conf.confidence_ece([0.5, 0.6], [1, 2])
    with pytest.raises(cc.CalibrationInputError, match=r"\[0, 1\]"):
        conf.confidence_brier([50, 60], [1, 0])


# ----------------------------------------------------------------------------- registry invariants (kind="confidence")

CONFIDENCE_SPECS = metrics_of_kind("confidence")


@pytest.mark.parametrize("spec", CONFIDENCE_SPECS, ids=lambda spec: spec.key)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_confidence_metric_is_finite_non_negative_and_ignores_row_order(spec, seed):
    c, y = _tied(37, seed)
    probs = conf.confidence_probs(c)
    perm = np.random.default_rng(seed).permutation(c.size)
    value = spec.compute(probs, y, 15, "uniform")
    assert np.isfinite(value) and (value >= 0 or spec.signed)
    assert spec.compute(probs[perm], y[perm], 15, "uniform") == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert spec.compute(probs, y, 7, "adaptive") == value  # settings are part of the key, not the page's bins


@pytest.mark.parametrize("key", [spec.key for spec in CONFIDENCE_SPECS if spec.ideal is not None])
def test_every_confidence_error_is_nearer_its_ideal_for_calibrated_confidence(key):
    rng = np.random.default_rng(5)
    c = rng.uniform(0.3, 1.0, 40_000)
    y = (rng.random(c.size) < c).astype(int)
    spec = get_metric(key)
    calibrated = abs(spec.compute(conf.confidence_probs(c), y, 10, "uniform") - spec.ideal)
    stated = np.minimum(c + 0.15, 1.0)  # overconfident by up to 15 points
    assert abs(spec.compute(conf.confidence_probs(stated), y, 10, "uniform") - spec.ideal) > calibrated


@pytest.mark.parametrize("key", [spec.key for spec in CONFIDENCE_SPECS if spec.resampling.kind == "row_mean"])
def test_declared_row_means_give_the_metric_of_the_materialised_resamples(key):
    from calib_core.metrics.registry import metric_function

    c, y = _tied(150, 4)
    probs = conf.confidence_probs(c)
    metric = metric_function(key)
    declared = cc.bootstrap_ci(metric, probs, y, n_boot=30, seed=3)
    materialised = cc.bootstrap_ci(lambda p, t: metric(p, t), probs, y, n_boot=30, seed=3)
    assert declared.estimate == materialised.estimate
    assert np.allclose(declared.samples, materialised.samples)
