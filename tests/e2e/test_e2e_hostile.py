"""Hostile values through every door, in a real browser (issue 23, item 9; issue 30, item 9).

`streamlit run app.py` in headless Chromium. A visitor opens phishing links
(``?demo=``, ``?split=``, ``?models=`` holding Markdown links and images),
uploads a predictions file whose file name, class names, class columns and
split values are Markdown, restores a session file whose group values and
fix sentences are Markdown, picks the hostile split in the sidebar and
walks through every page. Every hostile value points at 127.0.0.1:9 (no
server there): the browser must never request it, nor any host other than
the app (the favicon used to come from fonts.gstatic.com), and the page must
hold no link or image to it. Streamlit's own table download (which wrote
names such as ``=cmd|' calc'!A0`` into its CSV unescaped) must be absent.

The second test stops a server with SIGTERM while a page computes and
checks that it shuts down quietly (no traceback in its log).

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH) and never
downloads a browser. Skipped when the browser or playwright is missing.
"""
from __future__ import annotations

import re
import signal
import subprocess
import time
from urllib.parse import quote, urlsplit

import numpy as np
import pandas as pd
import pytest

from studio import nav
from tests.e2e_support import (ARTIFACTS, DEFAULT_TIMEOUT_MS, assert_no_exception, require_browser,
                               running_streamlit, wait_for_app, wait_until_healthy)

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 2000}
HOST = "127.0.0.1:9"
CLASSES = (f"![c](http://{HOST}/class.png)", f"<img src=http://{HOST}/img.png>", f"[k](http://{HOST}/k) **b**")
SPLIT = f"![s](http://{HOST}/split.png)"
GROUPS = (f"![g](http://{HOST}/group.png)", f"[g](http://{HOST}/group) :red[r]")
FILE_NAME = f"=cmd|' calc'!A0 ![f](http:{HOST}/file.png).csv"
SESSION_MODEL = f"![m](http://{HOST}/session-model.png)"
FIX = f"![f](http://{HOST}/fix-pixel.png) [Click here to sign in again](http://{HOST}/)"
LINKS = (
    {"demo": f"x' [Click here to sign in again](http://{HOST}/) **Your session expired** '"},
    {"demo": f"![x](http://{HOST}/demo.png)", "split": f"![x](http://{HOST}/split-link.png)",
     "models": f"![x](http://{HOST}/models.png)", "seed": "inf"},
)


def _csv(seed: int) -> bytes:
    """300 rows of three hostile classes (labels as names), a hostile split value and a group column."""
    rng = np.random.default_rng(seed)
    n = 300
    probs = rng.dirichlet(np.ones(3), size=n)
    labels = (rng.uniform(size=(n, 1)) > probs.cumsum(axis=1)).sum(axis=1).clip(0, 2)
    frame = pd.DataFrame(probs, columns=[f"p_{c}" for c in CLASSES])
    frame.insert(0, "label", [CLASSES[k] for k in labels])
    frame["split"] = np.where(np.arange(n) % 2 == 0, "calibration", SPLIT)
    frame["site"] = np.where(np.arange(n) % 3 == 0, GROUPS[0], GROUPS[1])
    return frame.to_csv(index=False).encode()


def _session_file() -> bytes:
    """A session file as the app writes it: one model grouped by the hostile ``site`` values, whose card
    lists a hostile fix sentence (a session file carries the fix sentences as text)."""
    from calib_core.io import load_predictions
    from studio import session_file

    raw, options = _csv(1), (("group", "site"),)
    predictions = load_predictions(raw, name="session.csv", **dict(options))  # as the app reads an upload
    record = session_file.SessionModel(
        name=SESSION_MODEL, origin="upload", file_name="session.csv", source=raw, options=options, fixes=(FIX,),
        probs=predictions.probs, labels=predictions.labels, class_names=predictions.class_names,
        logits=predictions.logits, split=predictions.split, groups=predictions.groups,
        group_column=predictions.group_column, demo=None)
    return session_file.pack([record], {})


class Watch:
    """Every request the page makes to a host other than the app, and every link or image to HOST."""

    def __init__(self, page, base: str) -> None:
        self.page, self.app = page, urlsplit(base).netloc
        self.outside: list[str] = []
        page.on("request", self._record)

    def _record(self, request) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != self.app:
            self.outside.append(request.url)

    def check(self, where: str) -> None:
        wait_for_app(self.page)
        self.page.wait_for_timeout(300)  # images start loading once rendered
        assert_no_exception(self.page)
        found = self.page.evaluate(
            """host => [...document.querySelectorAll('a[href], img[src], image, [style*="url("]')]
                   .map(e => e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('xlink:href')
                             || e.getAttribute('style') || '')
                   .filter(u => u.includes(host))""", HOST)
        assert not found, (where, found)
        assert not self.outside, (where, self.outside)


def _shown(page) -> str:
    """The page's text as a reader sees it (without the invisible word joiners that keep URLs from linking)."""
    return page.locator("[data-testid='stAppViewContainer']").inner_text().replace("\u2060", "")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"hostile-{name}.png"))


def test_hostile_values_never_become_links_images_or_requests(server, page):
    watch = Watch(page, server)
    for i, params in enumerate(LINKS):
        page.goto(f"{server}/?" + "&".join(f"{k}={quote(v)}" for k, v in params.items()))
        watch.check(f"link {i}")
        assert params["demo"] in _shown(page), "the value is shown, as text"
        _shot(page, f"link-{i}")
    page.goto(f"{server}/Metrics?seed=inf")
    watch.check("seed=inf")
    assert page.get_by_text("seed=inf").count() > 0, "the fallback note names the link's value"

    page.goto(server)
    wait_for_app(page)
    # Keep the upload beside the session file's model (a restore replaces the loaded models by default).
    page.get_by_text("Keep the loaded models when restoring a session file").click()
    wait_for_app(page)
    uploader = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    uploader.set_input_files([{"name": FILE_NAME, "mimeType": "text/csv", "buffer": _csv(0)},
                              {"name": "session.zip", "mimeType": "application/zip", "buffer": _session_file()}])
    watch.check("Data page after the uploads")
    page.get_by_text("Restored 1 model from").first.wait_for()
    watch.check("Data page after the restore")
    assert SESSION_MODEL in _shown(page), "the session file's model name is shown as text"
    # The manifest's fix sentences are checked as data and never shown: a card's fixes come from its load options.
    assert FIX not in _shown(page)
    _shot(page, "data")

    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_text(re.compile(r"^!\[s\]\(http.*split\.png\)$")).click()  # the Rows radio: the split, as text
    watch.check("hostile split chosen")
    for entry in nav.PAGES:
        sidebar.get_by_role("link", name=entry.label, exact=True).click()
        watch.check(entry.label)
        if entry.label == "Groups":  # the session file's model has the group column
            page.locator("[data-testid='stSelectbox']").filter(has_text="Model").click()
            page.get_by_role("option", name=re.compile("session-model")).click()
            watch.check("Groups of the session file's model")
            assert GROUPS[0] in _shown(page), "the group values are shown as text"
        _shot(page, entry.path.rsplit("/", 1)[-1].removesuffix(".py"))

    sidebar.get_by_role("link", name="Metrics", exact=True).click()
    wait_for_app(page)
    table = page.locator("[data-testid='stDataFrame']").first
    table.hover()
    toolbar = page.locator("[data-testid='stElementToolbar']").first
    toolbar.wait_for()  # the table's toolbar is shown on hover (search, full screen)
    assert toolbar.get_by_role("button", name="Download as CSV").count() == 0, "Streamlit's unescaped export"


def test_sigterm_while_a_page_computes_stops_quietly(browser, tmp_path):
    """Issue 30, item 9: scripts running at SIGTERM logged "cannot schedule new futures" tracebacks."""
    require_browser()
    log_path = tmp_path / "streamlit.log"
    with open(log_path, "wb") as log, running_streamlit(log, stop_seconds=30) as (base, process):
        assert wait_until_healthy(base, process, timeout=60), log_path.read_text()
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            page.set_default_timeout(DEFAULT_TIMEOUT_MS)
            page.goto(f"{base}/Recalibration?demo=digits_random_forest")
            page.wait_for_selector("[data-testid='stApp'][data-test-script-state='running']")
            time.sleep(2.0)  # inside the fits
            process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pytest.fail("the server did not stop within 30 s of SIGTERM")
        finally:
            context.close()
    text = log_path.read_text(errors="replace")
    assert code == 0, text[-2000:]
    assert "Traceback" not in text and "cannot schedule new futures" not in text, text[-3000:]
