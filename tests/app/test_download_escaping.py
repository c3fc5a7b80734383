"""The app's CSV downloads escape formula-like text (calib_core.io.export applied by the Metrics page)."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import Predictions

from tests import app_support

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

HOSTILE = '=HYPERLINK("http://127.0.0.1:9/x","click")'


def rows_of(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"))))


def test_metrics_page_download_escapes_the_model_name(downloads):
    """A file named `=HYPERLINK(...).csv` became the model name and landed unescaped in calibration_metrics.csv."""
    rng = np.random.default_rng(1)
    probs = rng.dirichlet([1, 1, 1], 120)
    labels = (rng.uniform(size=(120, 1)) > probs.cumsum(1)).sum(1).clip(0, 2)  # calibrated
    at = app_support.open_with_model("pages/1_Metrics.py", Predictions(probs, labels, ("a", "b", "c"), name=HOSTILE),
                                     timeout=120)
    app_support.assert_clean(at)
    rows = rows_of(downloads["calibration_metrics.csv"])
    header, body = rows[0], rows[1:]
    models = {row[header.index("model")] for row in body}
    assert models == {"'" + HOSTILE}
    estimates = [row[header.index("estimate")] for row in body]
    negative = [float(v) for v in estimates if v.startswith("-")]
    assert negative, "the unbiased SKCE of this calibrated sample is negative and stays a number"
    assert all(not v.startswith("'") for v in estimates)
    skce = body[[row[header.index("key")] for row in body].index("skce")]
    assert float(skce[header.index("estimate")]) == pytest.approx(cc.skce(probs, labels), rel=1e-9)


def test_streamlits_own_table_download_is_off():
    """Streamlit's dataframe toolbar downloaded a model named =cmd|' calc'!A0 as an unescaped CSV header
    (issue 23, item 9): its export is switched off in the app's config, by an option Streamlit knows."""
    import tomllib
    from pathlib import Path

    from streamlit import config

    path = Path(app_support.APP).parent / ".streamlit" / "config.toml"
    client = tomllib.loads(path.read_text(encoding="utf-8"))["client"]
    assert client.get("disableDataExport") is True
    assert "client.disableDataExport" in config._config_options_template
