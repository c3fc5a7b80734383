"""Result objects show themselves compactly (issue 25, item 7): a one-line ``repr`` of bounded length whatever the
data size, and a small HTML table for Jupyter in which every value is escaped."""
from __future__ import annotations

import html
import re

import numpy as np
import pytest

import calib_core as cc
from calib_core.display import MAX_VALUE_CHARS, short_value

#: A repr stays within this many characters (a field is at most MAX_VALUE_CHARS; no result has 20 fields).
MAX_REPR_CHARS = 20 * (MAX_VALUE_CHARS + 24)
HOSTILE = '<script>alert("x")</script> & <b>'

RNG = np.random.default_rng(0)
PROBS = RNG.dirichlet([1.0, 1.0, 1.0], size=400)
LABELS = np.array([RNG.choice(3, p=p) for p in PROBS])
BINARY = PROBS[:, :2] / PROBS[:, :2].sum(axis=1, keepdims=True)
BINARY_LABELS = (RNG.random(400) < BINARY[:, 1]).astype(int)
GROUPS = np.where(PROBS.argmax(axis=1) != LABELS, HOSTILE, "plain")  # the hostile group is the worst

RESULTS = {
    "bootstrap_ci": lambda: cc.bootstrap_ci(cc.ece, PROBS, LABELS, n_boot=2000, seed=0),
    "metric_interval": lambda: cc.metric_interval("ece", PROBS, LABELS, n_boot=50, seed=0),
    "metric_report": lambda: cc.metric_report(PROBS, LABELS),
    "calibration_test": lambda: cc.calibration_test(PROBS, LABELS, method="consistency", n_resamples=50, seed=0),
    "by_group": lambda: cc.by_group("ece", PROBS, LABELS, GROUPS, n_boot=20, seed=0),
    "simplex_reliability": lambda: cc.simplex_reliability(PROBS, LABELS),
    "smooth_reliability": lambda: cc.smooth_reliability_curve(PROBS, LABELS),
    "ici": lambda: cc.ici(BINARY, BINARY_LABELS),
    "bin_statistics": lambda: cc.bin_statistics(PROBS.max(axis=1), (PROBS.argmax(axis=1) == LABELS).astype(float), 15),
}


@pytest.mark.parametrize("make", list(RESULTS))
def test_the_repr_is_one_short_line_and_the_html_a_table(make):
    result = RESULTS[make]()
    text = repr(result)
    assert "\n" not in text and len(text) <= MAX_REPR_CHARS, text
    assert text.startswith(type(result).__name__ + "(")
    page = result._repr_html_()
    assert page.startswith("<table><caption>") and page.endswith("</table>")


def test_a_bootstrap_repr_does_not_print_its_resamples():
    large = cc.bootstrap_ci(cc.ece, PROBS, LABELS, n_boot=2000, seed=0)
    assert len(repr(large)) < 250 and "array(2000,)" in repr(large)
    assert large.samples.shape == (2000,)  # the resamples are all kept, only not printed


def test_user_text_is_escaped_in_the_html():
    result = cc.by_group("ece", PROBS, LABELS, GROUPS, n_boot=20, seed=0)
    assert result.worst_group == HOSTILE
    page = result._repr_html_()
    assert "<script>" not in page and "<b>" not in page
    assert html.escape(short_value(HOSTILE)) in page
    # Stripping the table's own tags leaves the escaped text, which reads back as the group's name.
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page)
    assert any(html.unescape(cell) == short_value(HOSTILE) for cell in cells)


def test_short_value_bounds_every_kind_of_field():
    values = [np.zeros((300, 300)), "x" * 1000, list(range(1000)), {str(k): k for k in range(1000)}, 1e-12,
              np.float32(0.5), None, True, ("a", "b")]
    for value in values:
        assert len(short_value(value)) <= MAX_VALUE_CHARS
    assert short_value(("a", "b")) == "('a', 'b')"


def test_a_report_shows_its_values_by_metric_in_the_html():
    report = cc.metric_report(PROBS, LABELS)
    page = report._repr_html_()
    assert page.count("<table>") == 1 + sum(1 for v in (report.values, report.reasons, report.unreliable,
                                                         report.biases) if 0 < len(v) <= 40)
    assert "<th style=\"text-align:left\">ece</th>" in page
