"""A weighted model on the Recalibration page, in the report's recalibration and fixable sections and in
``calib-core recalibrate --weight-column`` (issue 28, item 1): every surface shows the weighted comparison of
calib_core (compare_methods / fixable_part with ``sample_weight``), not the unweighted one they showed before."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.engines.cli import main
from calib_core.io import Predictions, load_predictions
from calib_core.recalibration.compare import Protocol
from calib_core.recalibration.fixable import fixable_part
from calib_core.recalibration.recommendation import compare_methods
from studio import report
from studio.weights_reasons import REPORT_UNWEIGHTED, UNWEIGHTED, UNWEIGHTED_PARTS, WEIGHTED_PAGES
from tests import app_support

PAGE = "pages/6_Recalibration.py"
METHODS = ("Temperature scaling", "Isotonic regression")
SETTINGS = report.ReportSettings(n_bins=10, binning="uniform", n_boot=10, seed=4, n_resamples=100,
                                 sensitivity_bins=(5, 10), simplex_bins=4)


def _frame(n: int = 240, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    true_logits = 1.5 * rng.normal(size=(n, 3))
    labels = (rng.random(n)[:, None] > np.cumsum(cc.softmax(true_logits), 1)).sum(1)
    probs = cc.softmax(3.0 * true_logits)  # over-confident
    # weights that favour the over-confident, wrong rows: they move every number of the comparison
    weights = 1 + 3 * (probs.argmax(1) != labels) + np.arange(n) % 2
    return pd.DataFrame({"p_a": probs[:, 0], "p_b": probs[:, 1], "p_c": probs[:, 2], "label": labels,
                         "split": np.where(np.arange(n) % 2 == 0, "calibration", "test"), "w": weights})


@pytest.fixture(scope="module")
def weighted() -> Predictions:
    frame = _frame()
    return Predictions.from_arrays(frame[["p_a", "p_b", "p_c"]].to_numpy(), frame["label"].to_numpy(),
                                   split=frame["split"].to_numpy(), sample_weight=frame["w"].to_numpy(float),
                                   name="clinic")


def _weighted_call(p: Predictions, n_boot: int, seed: int = 0, methods=METHODS):
    return compare_methods(p.probs, p.labels, logits=p.logits, split=p.split, split_names=p.split_names,
                           methods=methods, n_boot=n_boot, seed=seed, sample_weight=p.sample_weight)


def test_the_page_shows_the_weighted_comparison_of_calib_core(weighted):
    """Before: the page fitted and scored the rows unweighted (and said so in a warning)."""
    at = app_support.open_with_model(PAGE, weighted, timeout=120,
                                     session_values={"recal_boot": 50, "methods": list(METHODS)})
    app_support.assert_clean(at)
    expected = _weighted_call(weighted, n_boot=50)
    plain = compare_methods(weighted.probs, weighted.labels, split=weighted.split, split_names=weighted.split_names,
                            methods=METHODS, n_boot=0)
    details = at.dataframe[1].value
    for method in METHODS:
        shown = details[details["method"] == method].set_index("metric")
        want = expected.table[expected.table["method"] == method].set_index("metric")
        for column in ("before", "after", "delta", "after_low", "after_high", "delta_low", "delta_high"):
            np.testing.assert_allclose(shown.loc[want.index, column].to_numpy(float), want[column].to_numpy(float),
                                       rtol=1e-9, atol=1e-12, err_msg=f"{method} {column}")
    assert not np.isclose(expected.table["before"].iloc[0], plain.table["before"].iloc[0])
    text = "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning")
                     for e in at.main.get(kind))
    assert "sample weights" in text  # the protocol sentence says the rows are weighted
    total = f"{float(weighted.sample_weight[weighted.split == 'test'].sum()):,.6g}"
    assert f"evaluation rows weighted by their row weights (total weight {total})" in text  # tables' captions
    assert "shows **unweighted** numbers" not in text
    verdict = expected.recommendation.sentence("x", markdown=False).split(": ", 1)[1]
    assert verdict.split(",")[0] in text.replace("**", "")


def test_the_reports_recalibration_and_fixable_sections_are_weighted(weighted):
    """Before: the report compared and measured the fixable part on unweighted rows, marked "Unweighted"."""
    model = report.ReportModel("clinic", weighted)
    made = report.recalibration_of(model, SETTINGS, report.RecalibrationSettings(methods=METHODS))
    expected = _weighted_call(weighted, n_boot=SETTINGS.n_boot, seed=SETTINGS.seed)
    pd.testing.assert_frame_equal(made.table.drop(columns="fit_seconds"),
                                  expected.table.drop(columns="fit_seconds"), rtol=1e-9)
    best = expected.recommendation.method
    after = expected.fits[best].probs
    table = cc.reliability_table(after, expected.ev.labels, 10, "uniform", sample_weight=expected.ev.sample_weight)
    np.testing.assert_allclose(made.diagrams[f"After: {best}"]["observed_frequency"], table["observed_frequency"])
    fixable = report._fixable(model, SETTINGS)
    found = fixable_part(weighted.probs, weighted.labels, n_boot=SETTINGS.n_boot, seed=SETTINGS.seed,
                         sample_weight=weighted.sample_weight)
    assert fixable["sentence"] == found.sentence() and "Unweighted" not in fixable["sentence"]
    assert "fixable" not in REPORT_UNWEIGHTED and "recalibration" not in REPORT_UNWEIGHTED


def test_cli_recalibrate_with_a_weight_column_prints_the_pages_weighted_numbers(tmp_path, capsys):
    """Before: recalibrate had no --weight-column (argparse refused it)."""
    path = tmp_path / "w.csv"
    _frame().to_csv(path, index=False)
    args = ["recalibrate", str(path), "--method", "auto", "--n-boot", "20", "--json", "--out", str(tmp_path / "o.csv")]
    assert main([*args, "--weight-column", "w"]) == 0
    result = json.loads(capsys.readouterr().out)
    p = load_predictions(path, weight_column="w")
    expected = compare_methods(p.probs, p.labels, split=p.split, split_names=p.split_names, n_boot=20, seed=0,
                               protocol=Protocol("split_column", test_fraction=0.5, seed=0),
                               sample_weight=p.sample_weight)
    assert result["method"] == expected.recommendation.method
    rows = expected.table[expected.table["method"] == result["method"]].set_index("key")
    for key, metric in result["metrics"].items():
        for column in ("before", "after", "delta_low", "delta_high"):
            assert metric[column] == pytest.approx(float(rows.loc[key, column]), rel=1e-9, abs=1e-12), (key, column)
    assert result["weight_column"] == "w" and result["sum_weight"] == float(p.sample_weight.sum())
    assert "sample weights" in result["protocol"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["metrics"]["brier"]["before"] != result["metrics"]["brier"]["before"]
    assert plain["weight_column"] is None


def test_the_recalibration_page_and_fixable_part_are_listed_as_weighted():
    assert "Recalibration" in WEIGHTED_PAGES and "Recalibration" not in UNWEIGHTED
    assert "What recalibration can fix" not in UNWEIGHTED_PARTS
