"""The HTML report opens offline in headless Chromium and draws every chart (issue 14, item 3)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e_support import ARTIFACTS, REPO_ROOT

pytestmark = pytest.mark.e2e

DEMOS = ("digits_random_forest.csv", "breast_cancer_svc.csv")


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    files = [str(REPO_ROOT / "data" / "demo" / name) for name in DEMOS]
    done = subprocess.run([sys.executable, "-m", "calib_core", "report", *files, "--html", str(out), "--n-boot", "50"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_report_opens_offline_and_draws_every_chart(browser, report_file):
    out, stdout = report_file
    text = out.read_text(encoding="utf-8")
    data = json.loads(text.split("id='report-data'>", 1)[1].split("</script>", 1)[0])
    k = {entry["summary"]["name"]: entry["summary"]["n_classes"] for entry in data["models"]}
    assert k == {"digits_random_forest": 10, "breast_cancer_svc": 2}  # named as in the app: no extension (issue 25)
    # top label per class group (10 + 2 classes, separate class sets), one per-class bar chart per class set,
    # one bin-sensitivity chart, one simplex for the 10-class model, one recalibration before/after per model,
    # one risk-coverage chart of both models (selective prediction, issue 26: a K-class model by its top label).
    expected = 1 + 10 + 2 + 2 + 1 + 1 + 2 + 1
    assert [entry["model"] for entry in data["recalibration"]] == list(k)
    assert f"wrote {out}: {expected} charts" in stdout

    context = browser.new_context(viewport={"width": 1300, "height": 900})
    attempted, errors = [], []

    def block(route):
        if not route.request.url.startswith("file://"):
            attempted.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    context.route("**/*", block)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        page.goto(out.as_uri(), wait_until="load", timeout=120_000)
        page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {expected}",
                               timeout=120_000)
        page.wait_for_timeout(500)
        assert page.locator(".js-plotly-plot").count() == expected
        assert page.locator("div.chart").count() == expected
        # every chart really drew its SVG (an empty div would also carry the class)
        assert page.locator(".js-plotly-plot .main-svg").count() >= expected
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report_top.png"))
        page.locator("div.chart").nth(1).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "report_class_chart.png"))
    finally:
        context.close()
    assert attempted == [], f"the report tried to load {attempted}"
    assert errors == [], errors
