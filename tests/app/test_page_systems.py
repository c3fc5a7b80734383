"""The Metrics page's *Compare systems* section (issue 26): confidence models answering the same items, matched by
id, with paired differences, intervals and the verdicts of calib_core.recalibration.paired.compare_systems."""
from __future__ import annotations

import numpy as np
import pytest

import calib_core as cc
from studio import compute_systems, state
from tests.app_support import assert_clean, open_link


def _system(name, confidence, correct, ids=None):
    return cc.Predictions.from_confidence(confidence, correct, name=name,
                                          ids=None if ids is None else np.asarray(ids, dtype=str))


def _two_systems(n=240, with_ids=True, drop=0):
    rng = np.random.default_rng(2)
    c = rng.uniform(0.4, 1.0, n)
    right = (rng.uniform(size=n) < c).astype(int)
    sure_right = (rng.uniform(size=n) < 0.7).astype(int)
    ids = [f"q{i}" for i in range(n)]
    order = rng.permutation(n)[: n - drop]
    honest = _system("honest", c, right, ids if with_ids else None)
    sure = _system("sure", np.full(order.size, 0.97), sure_right[order],
                   [ids[i] for i in order] if with_ids else None)
    return honest, sure


def _open(models):
    store = state._Store(started=True)
    for p in models:
        store.models[p.name] = state.LoadedModel(p, state.fingerprint(p), "upload", f"{p.name}.csv")
    return open_link("pages/1_Metrics.py", timeout=180, session_values={state.APP_KEY: store})


def test_matched_systems_are_compared_with_calib_cores_numbers():
    honest, sure = _two_systems(drop=15)
    view = compute_systems.matched_systems([honest, sure], ["honest", "sure"], n_boot=50, seed=0, alpha=0.05)
    assert view.error == "" and view.n_matched == 225 and view.rows == (240, 225) and view.by_id
    ece = next(d for d in view.comparison.differences if d.key == "conf_ece")
    assert ece.better == "honest"


def test_systems_that_cannot_be_matched_are_refused_with_the_reason():
    honest, sure = _two_systems(with_ids=False, drop=15)
    view = compute_systems.matched_systems([honest, sure], ["honest", "sure"], n_boot=50, seed=0, alpha=0.05)
    assert view.comparison is None and "different numbers of items" in view.error


@pytest.mark.slow
def test_metrics_page_shows_the_section_with_matched_items_and_verdicts():
    honest, sure = _two_systems(drop=15)
    app = _open([honest, sure])
    assert_clean(app)
    assert any(h.value == "Compare systems" for h in app.subheader)
    text = " ".join(m.value for m in app.markdown)
    assert "225 items matched" in text and "by item id" in text
    assert "honest is better calibrated than sure beyond noise" in text.replace("\\", "")
    frames = [f.value for f in app.dataframe if {"a", "b", "verdict"} <= set(f.value.columns)]
    assert frames and set(frames[0]["metric"]) >= {"ECE, 10 equal-width bins (headline)",
                                                    "AUROC of confidence for correctness"}
