"""Verdict reasons read by practitioners say what to conclude, not statistics jargon (issue 23 item 8:
the Data card's "a rejection is valid at any power")."""
from __future__ import annotations

import re

import numpy as np

import calib_core as cc
from calib_core.inference.verdicts import cell_occupancy, read_test
from calib_core.io import load_demo

from tests import app_support

#: Phrases a reader without a statistics course cannot act on.
JARGON = ("at any power", "give the test power", "Holm-adjusted one", "= Bonferroni", "adjusted p <",
          "bias at calibration dominates")


def jargon_in(text: str) -> list[str]:
    return [phrase for phrase in JARGON if phrase in text]


def all_reasons() -> list[str]:
    sparse = cell_occupancy([1] * 30 + [40], advice="fewer bins (n_bins=5)")
    reasons = [read_test(0.01, test="t", occupancy=sparse).reason,
               read_test(0.3, test="t", occupancy=sparse).reason,
               read_test(0.97, test="t", below_null="the estimate 0.1 lies below its band 0.2-0.3").reason,
               read_test(0.97, test="t", below_null="the estimate 0.1 lies below its band 0.2-0.3",
                         occupancy=sparse).reason]
    for demo in ("digits_gaussian_nb", "digits_random_forest", "wine_random_forest"):
        data = load_demo(demo)
        for method in ("consistency", "hosmer_lemeshow", "spiegelhalter"):
            reasons.append(cc.calibration_test(data.probs, data.labels, method, seed=0).verdict_reason)
    return reasons


def test_no_reason_uses_jargon():
    found = {reason: jargon_in(reason) for reason in all_reasons()}
    assert not any(found.values()), {r: j for r, j in found.items() if j}


def test_a_rejection_in_sparse_cells_says_it_stands_and_why():
    sparse = cell_occupancy([1] * 30 + [40])
    reason = read_test(0.01, test="t", occupancy=sparse).reason
    assert "less sensitive, not less trustworthy" in reason


def test_an_inconclusive_reason_says_what_would_let_the_test_detect_miscalibration():
    sparse = cell_occupancy([1] * 30 + [40], advice="fewer bins (n_bins=5)")
    reason = read_test(0.3, test="t", occupancy=sparse).reason
    assert "To let the test detect miscalibration, try fewer bins (n_bins=5)." in reason


def test_one_vs_rest_note_names_the_flagged_classes_plainly():
    data = load_demo("digits_random_forest")
    reason = cc.calibration_test(data.probs, data.labels, "spiegelhalter").verdict_reason
    assert "corrected for testing 10 classes" in reason and "Classes flagged: 0, 1," in reason


def test_data_card_verdict_is_plain():
    at = app_support.open_link("app.py", timeout=60)
    app_support.assert_clean(at)
    lines = [re.sub(r"\\(.)", r"\1", m.value) for m in at.markdown if m.value.startswith("**Verdict**")]
    assert lines, "the card shows a verdict"
    data = load_demo(app_support.state.DEFAULT_DEMO)
    test = cc.calibration_test(data.probs, data.labels, "consistency", seed=0)
    assert any(test.verdict_reason in line.replace("\u2060", "") for line in lines), lines
    assert "less sensitive, not less trustworthy" in test.verdict_reason, "the default demo's cells are sparse"
    assert not any(jargon_in(line) for line in lines), lines


def test_metrics_page_says_why_a_statistic_reads_infinity():
    """Hosmer-Lemeshow's statistic is infinite on the default demo: the table shows "Infinity", the page says
    where to read why, and the reason (from calib_core) starts its explanation right after the verdict."""
    at = app_support.open_link("pages/1_Metrics.py", timeout=180)
    app_support.assert_clean(at)
    frame = next(f.value for f in at.dataframe if "reason" in f.value.columns and "statistic" in f.value.columns)
    row = frame[np.isinf(frame["statistic"].astype(float))].iloc[0]
    assert row["reason"].split(". ", 2)[1].startswith("The statistic is infinite")
    captions = " ".join(c.value for c in at.caption)
    assert "Infinity" in captions and "Hosmer" in captions, captions
