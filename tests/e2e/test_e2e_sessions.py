"""Browser test: two visitors of one server never see each other's models (issue 14, item 6).

Two browser contexts (two visitors, each with its own Streamlit session) upload
different predictions **under the same file name** at the same time. Each must
see only its own model: in the Data page's card (rows, ECE of its own rows),
in the sidebar and on an analysis page. The same file name is the hard case
for the caches: a cache keyed by name instead of content, or a per-session
cache shared by mistake, would show one visitor the other's rows.
"""
from __future__ import annotations

import pytest

import calib_core as cc
from calib_core.io import load_predictions
from tests.e2e_support import ARTIFACTS, DEFAULT_TIMEOUT_MS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 1800}
UPLOAD_NAME = "shared_name.csv"


def _visitor(browser):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(DEFAULT_TIMEOUT_MS)
    return context, page


def _card_metrics(page) -> dict[str, str]:
    """Label -> value of every st.metric on the page (Data page cards)."""
    out = {}
    for metric in page.locator("[data-testid='stMetric']").all():
        label = metric.locator("[data-testid='stMetricLabel']").inner_text().strip()
        out.setdefault(label, []).append(metric.locator("[data-testid='stMetricValue']").inner_text().strip())
    return out


def test_two_visitors_uploading_files_of_one_name_never_see_each_others_models(server, browser, demo_dir,
                                                                              tmp_path):
    files = {}
    for who, demo in (("alice", "wine_svc"), ("bob", "iris_mlp")):
        folder = tmp_path / who
        folder.mkdir()
        files[who] = folder / UPLOAD_NAME
        files[who].write_bytes((demo_dir / f"{demo}.csv").read_bytes())
    expected = {}
    for who, path in files.items():
        preds = load_predictions(path)
        ece = cc.metric_interval("ece", preds.probs, preds.labels, n_bins=15, n_boot=200, seed=0).estimate
        expected[who] = (preds.n_samples, f"{ece:.4f}")
    assert expected["alice"][0] != expected["bob"][0], "the two files must differ in rows"

    contexts, pages = {}, {}
    try:
        for who in files:
            contexts[who], pages[who] = _visitor(browser)
            pages[who].goto(server)
        for who in files:
            wait_for_app(pages[who])
        # Both uploads are sent before either is awaited: the two sessions load at the same time.
        for who, path in files.items():
            pages[who].locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
        for who, page in pages.items():
            page.get_by_role("heading", name="shared_name").wait_for()
            wait_for_app(page)
            assert_no_exception(page)

        for who, page in pages.items():
            other = "bob" if who == "alice" else "alice"
            rows, ece = expected[who]
            metrics = _card_metrics(page)
            assert f"{rows:,}" in metrics["Rows (N)"], (who, metrics)
            assert f"{expected[other][0]:,}" not in metrics["Rows (N)"], (who, metrics)
            assert ece in metrics["ECE, 15 uniform bins"], (who, metrics)
            sidebar = page.locator("[data-testid='stSidebar']")
            assert f"shared_name: {rows:,} rows" in sidebar.inner_text()
            assert f"shared_name: {expected[other][0]:,} rows" not in sidebar.inner_text()
            page.screenshot(path=str(ARTIFACTS / f"sessions-{who}-data.png"))

        # An analysis page of each session (same session: sidebar navigation) shows its own model only.
        for who, page in pages.items():
            other = "bob" if who == "alice" else "alice"
            page.locator("[data-testid='stSidebar'] [data-testid='stPageLink']").get_by_text(
                "Metrics", exact=True).click()
            page.get_by_role("heading", level=1).filter(has_text="Metrics").wait_for()
            wait_for_app(page)
            assert_no_exception(page)
            text = page.locator("[data-testid='stSidebar']").inner_text()
            assert f"shared_name: {expected[who][0]:,} rows" in text
            assert f"shared_name: {expected[other][0]:,} rows" not in text
    finally:
        for context in contexts.values():
            context.close()


def test_a_session_file_carries_an_upload_to_another_browser(server, browser, demo_dir, tmp_path):
    """Issue 14, item 2: the Data page's session file restores an uploaded model in a fresh browser."""
    path = tmp_path / "my_model.csv"
    path.write_bytes((demo_dir / "wine_svc.csv").read_bytes())
    preds = load_predictions(path)
    ece = cc.metric_interval("ece", preds.probs, preds.labels, n_bins=15, n_boot=200, seed=0).estimate
    contexts = []
    try:
        context, page = _visitor(browser)
        contexts.append(context)
        page.goto(server)
        wait_for_app(page)
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
        page.get_by_role("heading", name="my_model").wait_for()
        wait_for_app(page)
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Download session file").click()
        session_file = tmp_path / "calibration-session.zip"
        download_info.value.save_as(str(session_file))
        assert session_file.stat().st_size > 0

        context, other = _visitor(browser)  # another browser: no shared session, cookies or uploads
        contexts.append(context)
        other.goto(server)
        wait_for_app(other)
        assert "my_model" not in other.locator("[data-testid='stSidebar']").inner_text()
        other.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(session_file))
        other.get_by_role("heading", name="my_model").wait_for()
        wait_for_app(other)
        assert_no_exception(other)
        metrics = _card_metrics(other)
        assert f"{preds.n_samples:,}" in metrics["Rows (N)"], metrics
        assert f"{ece:.4f}" in metrics["ECE, 15 uniform bins"], metrics
        sidebar = other.locator("[data-testid='stSidebar']").inner_text()
        assert f"my_model: {preds.n_samples:,} rows" in sidebar
        # The default demo the session file also holds was already loaded here: it is not loaded twice.
        assert "(2)" not in sidebar and other.get_by_role("heading", name="digits_gaussian_nb (2)").count() == 0
        other.screenshot(path=str(ARTIFACTS / "sessions-restored-from-file.png"))
    finally:
        for context in contexts:
            context.close()


def test_a_session_file_replaces_the_models_and_restores_the_reliability_bins(server, browser, tmp_path):
    """Issue 23, item 6: the receiver's default demo is replaced, and the Reliability page opens at the
    sender's bins (set on that page, not on the Data page where the file is saved)."""
    contexts = []
    try:
        context, page = _visitor(browser)
        contexts.append(context)
        page.goto(f"{server}/Reliability?demo=iris_svc&bins=7&binning=adaptive")
        wait_for_app(page)
        assert_no_exception(page)
        page.locator("[data-testid='stSidebar']").get_by_role("link", name="Data").click()
        page.get_by_role("heading", name="iris_svc").wait_for()
        wait_for_app(page)
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Download session file").click()
        session_file = tmp_path / "team-session.zip"
        download_info.value.save_as(str(session_file))

        context, other = _visitor(browser)
        contexts.append(context)
        other.goto(server)
        other.get_by_role("heading", name="digits_gaussian_nb").wait_for()
        wait_for_app(other)
        other.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(session_file))
        other.get_by_role("heading", name="iris_svc").wait_for()
        wait_for_app(other)
        assert_no_exception(other)
        assert other.get_by_role("heading", name="digits_gaussian_nb").count() == 0
        assert "digits_gaussian_nb" not in other.locator("[data-testid='stSidebar']").inner_text()

        other.locator("[data-testid='stSidebar']").get_by_role("link", name="Reliability").click()
        other.get_by_role("heading", level=1).filter(has_text="Reliability").wait_for()
        wait_for_app(other)
        assert_no_exception(other)
        value = other.locator("[data-testid='stSlider']").filter(has_text="Number of bins").locator(
            "[data-testid='stSliderThumbValue']").first.inner_text()
        assert value.strip() == "7", value
        assert other.get_by_role("radio", name="adaptive", exact=True).is_checked()
        assert "session file" not in other.locator("[data-testid='stMain']").inner_text()  # no fallback note
        other.screenshot(path=str(ARTIFACTS / "sessions-restored-reliability.png"))
    finally:
        for context in contexts:
            context.close()
