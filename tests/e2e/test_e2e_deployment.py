"""Browser test of the Deployment page's upload of unlabelled predictions (issue 28, item 2).

What AppTest cannot do: upload a file. A real `streamlit run app.py` in headless Chromium (Playwright): the
Deployment page on a demo, its "Deployment prevalence" tab, an unlabelled CSV of that demo's predictions drawn
with a known shift uploaded through the file input; the page must state calib_core's estimate and draw the
prevalence chart; a file without class columns is refused with a sentence, not a traceback.
Screenshots go to test-artifacts/. Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH).
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1300, "height": 2000}
TIMEOUT_MS = 90_000
DEMO = "breast_cancer_gaussian_nb"


def _csv(frame: pd.DataFrame, name: str) -> dict:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return {"name": name, "mimeType": "text/csv", "buffer": buffer.getvalue().encode()}


def test_unlabelled_upload_gives_the_estimated_prevalence(server, page):
    data = cc.load_demo(DEMO)
    rng = np.random.default_rng(0)
    rows = np.r_[rng.choice(np.flatnonzero(data.labels == 1), 150), rng.choice(np.flatnonzero(data.labels == 0), 30)]
    frame = pd.DataFrame(data.probs[rows], columns=[f"p_{c}" for c in data.class_names])
    expected = cc.estimate_prevalence(data.probs[rows], probs_labelled=data.probs, labels=data.labels, n_boot=200,
                                      seed=0)
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{server}/Deployment?demo={DEMO}&deployment_tool=Deployment+prevalence", timeout=TIMEOUT_MS)
    wait_for_app(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files([_csv(frame, "deployment.csv")])
    page.get_by_text("Deployment prevalence by EM").wait_for(timeout=TIMEOUT_MS)
    wait_for_app(page)
    assert_no_exception(page)
    text = page.locator("[data-testid='stMainBlockContainer']").inner_text()
    assert f"benign: {expected.prevalence[1]:.3f}" in text
    assert f"{expected.ci_low[1]:.3f} to {expected.ci_high[1]:.3f}" in text
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "deployment_prevalence.png"), full_page=True)

    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        [_csv(pd.DataFrame({"x": [1, 2], "y": [3, 4]}), "wrong.csv")])
    page.get_by_text("needs one column per class").wait_for(timeout=TIMEOUT_MS)
    assert_no_exception(page)
