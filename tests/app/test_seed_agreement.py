"""One seed, the same randomised numbers everywhere: the calibration tests on the Metrics page, in the CLI's text
and JSON output and in both HTML reports (the Data page's "report of everything" and ``report --html``).

Issue 23, item 4: the default demo's SKCE test gave p = 0.039 on the Metrics page and in ``report``, 0.548 in the
Data page's report and 0.070 / 0.273 / 0.373 in ``report --html`` with ``--n-boot`` 50 / 200 / 1000 (the report
ran the test without a seed).
"""
from __future__ import annotations

import json
import math

import pytest
import streamlit as st

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.io import load_demo
from studio.state import DEFAULT_DEMO

from tests import app_support

pytestmark = [pytest.mark.usefixtures("fresh_streamlit_caches"), pytest.mark.slow]

#: The tests whose numbers depend on the seed (resampled null, random blocks).
RANDOMISED = ("consistency", "skce")


def _report_tests(html: str) -> dict[str, dict]:
    data = json.loads(html.split("id='report-data'>", 1)[1].split("</script>", 1)[0])
    return {row["method"]: row for row in data["models"][0]["verdicts"]}


def _cli_text_p_values(text: str) -> dict[str, str]:
    """``{method: "p = 0.0391"}`` from the table report's test lines."""
    lines = text.split("calibration tests", 1)[1].splitlines()[1:]
    found = {}
    for line in lines:
        parts = line.split()
        if parts and parts[0] in cc.TEST_METHODS and parts[1] == "p":
            found[parts[0]] = " ".join(parts[1:5])
    return found


def test_one_seed_gives_every_surface_the_same_test_numbers(repo_root, tmp_path, capsys, monkeypatch):
    path = repo_root / "data" / "demo" / f"{DEFAULT_DEMO}.csv"
    predictions = load_demo(DEFAULT_DEMO)
    expected = {m: cc.calibration_test(predictions.probs, predictions.labels, m, seed=0) for m in cc.TEST_METHODS}

    # The Metrics page (its seed control at its default, 0).
    at = app_support.open_with_model("pages/1_Metrics.py", predictions, timeout=180)
    app_support.assert_clean(at)
    (page,) = [d.value for d in at.dataframe if "p_value" in d.value.columns]
    page = page.set_index("method")

    # The CLI: JSON, text, and the HTML report at two --n-boot (the tests must not depend on it).
    assert main(["report", str(path), "--json"]) == 0
    cli_json = json.loads(capsys.readouterr().out)["tests"]
    assert main(["report", str(path)]) == 0
    cli_text = _cli_text_p_values(capsys.readouterr().out)
    cli_html = []
    for n_boot in ("50", "200"):
        out = tmp_path / f"report_{n_boot}.html"
        assert main(["report", str(path), "--html", str(out), "--n-boot", n_boot]) == 0
        cli_html.append(_report_tests(out.read_text(encoding="utf-8")))
    capsys.readouterr()

    # The Data page's "report of everything" (the default demo, as a fresh session opens it).
    built = {}
    original = st.download_button

    def capture(label, data=None, *args, **kwargs):
        built[kwargs.get("key")] = data
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", capture)
    data_page = app_support.open_link("app.py", timeout=180)
    app_support.assert_clean(data_page)
    everything = built["report_html_everything"]
    app_report = _report_tests(everything() if callable(everything) else everything)

    for method in cc.TEST_METHODS:
        want = expected[method]
        assert page.loc[method, "p_value"] == want.p_value, method
        assert page.loc[method, "statistic"] == want.statistic, method
        assert page.loc[method, "verdict"] == want.verdict, method
        # The null's description holds the seeded numbers (the resampled band, the blocks' null spread).
        assert page.loc[method, "null_distribution"] == want.null_distribution, method
        assert cli_json[method]["p_value"] == want.p_value and cli_json[method]["verdict"] == want.verdict, method
        assert cli_json[method]["null_distribution"] == want.null_distribution, method
        assert cli_text[method] == f"p = {want.p_value:.4g} {want.verdict}", method
        for report in (*cli_html, app_report):
            assert report[method]["p_value"] == want.p_value, method
            # The report's JSON holds a non-finite statistic (Hosmer-Lemeshow's infinity) as null.
            assert report[method]["statistic"] == (want.statistic if math.isfinite(want.statistic) else None), method
            assert report[method]["verdict"] == want.verdict and report[method]["reason"] == want.verdict_reason
            assert report[method]["null_distribution"] == want.null_distribution, method
    # The randomised tests do depend on the seed (so the agreement above is not that of constants).
    for method in RANDOMISED:
        other = cc.calibration_test(predictions.probs, predictions.labels, method, seed=1)
        assert other.null_distribution != expected[method].null_distribution, method


def test_report_n_boot_gives_the_metrics_pages_intervals(repo_root, capsys):
    """Issue 25, item 4: ``report --n-boot 200`` (the page's default resamples, seed 0) prints the Metrics page's
    interval of every metric, in the JSON and in the table."""
    path = repo_root / "data" / "demo" / f"{DEFAULT_DEMO}.csv"
    predictions = load_demo(DEFAULT_DEMO)
    at = app_support.open_with_model("pages/1_Metrics.py", predictions, timeout=180)
    app_support.assert_clean(at)
    (page,) = [d.value for d in at.dataframe if {"key", "ci_low", "ci_high"} <= set(d.value.columns)]
    page = page.set_index("key")

    assert main(["report", str(path), "--json", "--n-boot", "200", "--seed", "0"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert main(["report", str(path), "--n-boot", "200"]) == 0
    text = capsys.readouterr().out
    compared = 0
    for key, interval in cli["intervals"].items():
        if key not in page.index or not math.isfinite(page.loc[key, "ci_low"]):
            continue
        assert interval["low"] == pytest.approx(page.loc[key, "ci_low"], rel=1e-9, abs=1e-12), key
        assert interval["high"] == pytest.approx(page.loc[key, "ci_high"], rel=1e-9, abs=1e-12), key
        assert f"[{interval['low']:.6f}, {interval['high']:.6f}]" in text, key
        compared += 1
    assert compared >= 10
    assert cli["model"] == DEFAULT_DEMO  # named as the app names it: without the extension
