"""Browser tests of the Data page's upload fixes (issue 11, item 1), as a user meets them.

`streamlit run app.py` in headless Chromium (Playwright): real uploads through
the file input, real clicks on the fix buttons and on the card's "Read as
probabilities instead". What AppTest cannot check: the HTTP upload path, the
rendered Markdown (a hostile class name must not become an ``<img>`` that makes
the browser fetch a URL) and where on the card the logits notice is drawn.

The files are made from the demo ``digits_logistic_regression.csv`` (10
classes, rows summing to 1): one cell set to -0.001, every value times 100,
every value times 0.8 or 1.3, values replaced by logits. Screenshots of the
Data page go to test-artifacts/ (or to the folder named by ``E2E_SHOTS``).

Uses Debian's chromium (/usr/bin/chromium, or CHROMIUM_PATH) and never
downloads a browser. Skipped when the browser or playwright is missing.
"""
from __future__ import annotations

import io
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.e2e_support import ARTIFACTS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1440, "height": 2400}
TIMEOUT_MS = 30_000

SHOTS = Path(os.environ.get("E2E_SHOTS") or ARTIFACTS)
HOSTILE_CLASS = "![t](http://127.0.0.1:9/t.png)"
HOSTILE_FILE = '=HYPERLINK("x").csv'
#: Python argument names that an app message must never show (it names the app's controls instead).
PYTHON_WORDS = ("renormalize=True", "input_kind=", "percentages=True", "=True", "input_kind", "`")


# ----------------------------------------------------------------------------- files


@pytest.fixture(scope="module")
def digits(demo_dir) -> pd.DataFrame:
    """A valid 10-class probability table (label, p_0 ... p_9, split)."""
    frame = pd.read_csv(demo_dir / "digits_logistic_regression.csv")
    scores = frame[prob_columns(frame)].to_numpy()
    assert scores.shape[1] == 10 and np.allclose(scores.sum(axis=1), 1.0, atol=1e-6) and scores.min() >= 0.0
    return frame


def prob_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.startswith("p_")]


def payload(name: str, frame: pd.DataFrame) -> dict:
    """An upload as Playwright's set_input_files takes it (exact file name, CSV bytes)."""
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return {"name": name, "mimeType": "text/csv", "buffer": buffer.getvalue().encode()}


def scaled(frame: pd.DataFrame, factor: float) -> pd.DataFrame:
    out = frame.copy()
    out[prob_columns(out)] = out[prob_columns(out)] * factor
    return out


# ----------------------------------------------------------------------------- page helpers


def open_data_page(server: str, page) -> None:
    page.goto(server)
    wait_for_app(page)
    page.get_by_role("heading", name="Loaded models (1)").wait_for()  # the default demo


def upload(page, *files: dict) -> None:
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(list(files))
    # chips show shortened names: wait for their number, then for the rerun that handled them
    page.wait_for_function("n => document.querySelectorAll(\"[data-testid='stFileChip']\").length === n",
                           arg=len(files))
    wait_for_app(page)


def click(page, button) -> None:
    button.click()
    wait_for_app(page)


def rejection(page, file_name: str):
    """The error box saying that ``file_name`` was not loaded."""
    box = page.locator("[data-testid='stAlertContentError']").filter(has_text=f"{file_name} was not loaded")
    box.wait_for()
    return box


def main_area(page):
    return page.locator("[data-testid='stMain']")


def card(page, model: str):
    """The bordered card of one loaded model: the innermost block holding its heading and its mapping form."""
    heading = page.get_by_role("heading", name=model, exact=True)
    heading.wait_for()
    return (main_area(page).locator("[data-testid='stVerticalBlock']").filter(has=heading)
            .filter(has=page.locator("[data-testid='stExpander']")).last)


def text_of(locator) -> str:
    """Visible text without Material icon names (``error``, ``build``, ...), blank lines and the invisible
    word joiners that keep URLs in names from becoming links."""
    return re.sub(r"\n\s*\n", "\n", _inner_text_without_icons(locator)).replace("\u2060", "").strip()


def _inner_text_without_icons(locator) -> str:
    return locator.evaluate("""el => {
        const icons = [...el.querySelectorAll("[data-testid='stIconMaterial'], [data-testid='stAlertDynamicIcon']")];
        const shown = icons.map(i => i.style.display);
        icons.forEach(i => { i.style.display = 'none'; });
        const text = el.innerText;
        icons.forEach((i, k) => { i.style.display = shown[k]; });
        return text; }""")


def fix_buttons(page) -> list[str]:
    return [b.strip() for b in main_area(page).locator("[data-testid='stButton'] button")
                                                    .filter(visible=True).all_inner_texts()
            if b.strip() in {"Renormalise rows", "Divide by 100", "Read as logits", "Use this mapping"}]


def assert_label_not_clipped(button) -> None:
    """The button shows its whole label (Streamlit cuts a too long one with an ellipsis)."""
    label = button.locator("[data-testid='stMarkdownContainer']").first
    sizes = label.evaluate("el => ({scroll: el.scrollWidth, client: el.clientWidth})")
    assert sizes["scroll"] <= sizes["client"] + 1, (button.inner_text(), sizes)


def assert_no_python_words(text: str) -> None:
    for word in PYTHON_WORDS:
        assert word not in text, f"{word!r} shown to the user: {text}"


def logit_notice(model_card):
    """The card's "Read as logits, not probabilities, because ..." notice (not the lower-case note below)."""
    notices = model_card.locator("[data-testid='stAlertContentWarning']")
    return notices.filter(has_text=re.compile("Read as logits, not probabilities"))


def assert_first_line_is_logit_notice(page, model: str) -> str:
    """The card's first line says the values were read as logits; returns its text."""
    model_card = card(page, model)
    first_alert = model_card.locator("[data-testid='stAlert']").first
    text = text_of(first_alert)
    assert text.startswith("Read as logits, not probabilities, because"), text
    notice_box = first_alert.bounding_box()
    heading_box = page.get_by_role("heading", name=model, exact=True).bounding_box()
    assert notice_box["y"] + notice_box["height"] <= heading_box["y"] + 1, (notice_box, heading_box)
    assert model_card.get_by_role("button", name="Read as probabilities instead").is_visible()
    assert "logits, turned into probabilities with a softmax" in text_of(model_card)
    return text


# ----------------------------------------------------------------------------- tests


def test_one_negative_cell_is_rejected_naming_the_row_without_python_words(server, page, digits):
    """(a) One cell at -0.001 in a valid probability file: rejected, the row named, never softmaxed."""
    bad = digits.copy()
    bad.loc[5, "p_3"] = -0.001  # 0-based row 5 = row 6, file line 7
    open_data_page(server, page)
    upload(page, payload("digits_one_negative.csv", bad))
    message = text_of(rejection(page, "digits_one_negative.csv"))
    assert "row 6 (file line 7)" in message and "'p_3'" in message and "-0.001" in message, message
    assert "1 of 899 rows" in message, message
    assert_no_python_words(message)
    assert_no_python_words(text_of(main_area(page)))
    # not guessed at: no model was added, and no "read as logits" is offered for a few bad cells
    assert page.get_by_role("heading", name="Loaded models (1)").count() == 1
    assert page.get_by_role("heading", name="digits_one_negative", exact=True).count() == 0
    assert "Read as logits" not in fix_buttons(page)
    assert_no_exception(page)
    page.screenshot(path=str(SHOTS / "upload-fix-a-negative-cell.png"), full_page=True)


def test_percentages_divide_by_100_button_loads_and_the_card_says_so(server, page, digits):
    """(b) Rows summing to 100: 'percentages? divide by 100', a button that does it, the card states it."""
    open_data_page(server, page)
    upload(page, payload("digits_percent.csv", scaled(digits, 100.0)))
    message = text_of(rejection(page, "digits_percent.csv"))
    assert "percentages?" in message and "Divide by 100" in message, message
    assert_no_python_words(message)
    assert fix_buttons(page)[0] == "Divide by 100", fix_buttons(page)
    page.screenshot(path=str(SHOTS / "upload-fix-b-percentages-rejected.png"), full_page=True)

    click(page, main_area(page).get_by_role("button", name="Divide by 100", exact=True))
    model_card = card(page, "digits_percent")
    card_text = text_of(model_card)
    assert "Fix applied: values divided by 100 (read as percentages)." in card_text, card_text
    assert "Input: probabilities" in card_text, card_text
    assert "Rows (N)\n899" in card_text and "Classes (K)\n10" in card_text, card_text
    assert logit_notice(model_card).count() == 0
    # the rejection and its buttons are gone; two models loaded
    assert page.locator("[data-testid='stAlertContentError']").filter(has_text="digits_percent.csv").count() == 0
    assert fix_buttons(page) == []
    assert page.get_by_role("heading", name="Loaded models (2)").count() == 1
    assert_no_python_words(text_of(main_area(page)))
    assert_no_exception(page)
    page.screenshot(path=str(SHOTS / "upload-fix-b-percentages-loaded.png"), full_page=True)


def test_rows_summing_to_a_constant_renormalise_button(server, page, digits):
    """(c) Rows summing to 0.8 (and to 1.3, some cells above 1): rejected; 'Renormalise rows' loads it."""
    open_data_page(server, page)
    upload(page, payload("digits_08.csv", scaled(digits, 0.8)), payload("digits_13.csv", scaled(digits, 1.3)))
    for name, total in (("digits_08.csv", "0.8"), ("digits_13.csv", "1.3")):
        message = text_of(rejection(page, name))
        assert f"every row sums to {total}, not 1" in message, message
        assert_no_python_words(message)
    # one button row per rejected file, in upload order; 1.3 has values above 1, so logits are offered too
    assert fix_buttons(page) == ["Renormalise rows", "Renormalise rows", "Read as logits"], fix_buttons(page)
    for button in main_area(page).locator("[data-testid='stButton'] button").filter(visible=True).all():
        assert_label_not_clipped(button)
    page.screenshot(path=str(SHOTS / "upload-fix-c-constant-sum-rejected.png"), full_page=True)

    click(page, main_area(page).get_by_role("button", name="Renormalise rows", exact=True).first)
    model_card = card(page, "digits_08")
    card_text = text_of(model_card)
    assert "Fix applied: rows renormalised to sum to 1." in card_text, card_text
    assert "Input: probabilities" in card_text and "Rows (N)\n899" in card_text, card_text
    assert logit_notice(model_card).count() == 0
    # only the file whose button was clicked changed
    assert page.locator("[data-testid='stAlertContentError']").filter(has_text="digits_08.csv").count() == 0
    rejection(page, "digits_13.csv")
    assert fix_buttons(page) == ["Renormalise rows", "Read as logits"], fix_buttons(page)
    assert page.get_by_role("heading", name="digits_13", exact=True).count() == 0
    assert_no_python_words(text_of(main_area(page)))
    assert_no_exception(page)
    page.screenshot(path=str(SHOTS / "upload-fix-c-renormalised.png"), full_page=True)


def test_logits_read_untold_say_so_first_and_can_be_refused(server, page, digits):
    """(d) Values that are clearly logits under p_ names, and logit_* names over probabilities.

    Both load as logits with the reason on the card's first line. Refusing the
    first gives a clear error and keeps the logits reading; refusing the second
    reads the values as probabilities and the card says so.
    """
    rng = np.random.default_rng(11)
    logits = digits.copy()
    logits[prob_columns(logits)] = rng.normal(0.0, 4.0, size=(len(logits), 10)).round(4)
    named = digits.rename(columns={c: "logit_" + c[2:] for c in prob_columns(digits)})
    open_data_page(server, page)
    upload(page, payload("digits_logits.csv", logits), payload("digits_named.csv", named))
    page.get_by_role("heading", name="Loaded models (3)").wait_for()

    untold = assert_first_line_is_logit_notice(page, "digits_logits")
    assert "of the values lie outside [0, 1]" in untold, untold
    by_name = assert_first_line_is_logit_notice(page, "digits_named")
    assert "logit_" in by_name, by_name
    assert_no_python_words(untold + by_name)
    page.screenshot(path=str(SHOTS / "upload-fix-d-read-as-logits.png"), full_page=True)

    # refusing real logits: a clear error on the card, the model stays read as logits
    click(page, card(page, "digits_logits").get_by_role("button", name="Read as probabilities instead"))
    logits_card = card(page, "digits_logits")
    refused = logits_card.locator("[data-testid='stAlertContentError']")
    refused.wait_for()
    refused_text = text_of(refused)
    assert refused_text.startswith("digits_logits cannot be read as probabilities:"), refused_text
    assert "It stays read as logits." in refused_text and re.search(r"row \d+", refused_text), refused_text
    assert_no_python_words(refused_text)
    assert logit_notice(logits_card).count() == 1
    assert "logits, turned into probabilities with a softmax" in text_of(logits_card)
    page.screenshot(path=str(SHOTS / "upload-fix-d-refused-logits.png"), full_page=True)

    # refusing logit_* names over valid probabilities: read as probabilities, and the card says so
    click(page, card(page, "digits_named").get_by_role("button", name="Read as probabilities instead"))
    named_card = card(page, "digits_named")
    named_text = text_of(named_card)
    assert logit_notice(named_card).count() == 0, named_text
    assert named_card.get_by_role("button", name="Read as probabilities instead").count() == 0
    assert "Fix applied: values read as probabilities (not as logits)." in named_text, named_text
    assert "Input: probabilities" in named_text, named_text
    assert page.get_by_role("heading", name="Loaded models (3)").count() == 1
    assert_no_python_words(text_of(main_area(page)))
    assert_no_exception(page)
    page.screenshot(path=str(SHOTS / "upload-fix-d-refused-named.png"), full_page=True)
    # last, so that a clipped label does not hide the checks above: the refusal's label is read in full
    assert_label_not_clipped(card(page, "digits_logits").get_by_role("button", name="Read as probabilities instead"))


def upload_hostile_files(server, page) -> str:
    """Upload ``=HYPERLINK("x").csv`` (valid, class ``HOSTILE_CLASS``) and ``hostile_bad.csv`` (rejected,
    its message quotes the hostile column); returns the model name the app shows."""
    rng = np.random.default_rng(5)
    n = 120
    positive = rng.uniform(0.05, 0.95, n)
    labels = np.where(rng.uniform(size=n) < positive, HOSTILE_CLASS, "cat")
    good = pd.DataFrame({"label": labels, "p_cat": 1.0 - positive, f"p_{HOSTILE_CLASS}": positive})
    bad = good.copy()
    bad.loc[3, f"p_{HOSTILE_CLASS}"] = -0.25
    open_data_page(server, page)
    upload(page, payload(HOSTILE_FILE, good), payload("hostile_bad.csv", bad))
    page.get_by_role("heading", name="Loaded models (2)").wait_for()
    # The section heading can be drawn before the cards under it (a CI run on a loaded machine read no card
    # title): wait for the uploaded model's card title itself.
    page.get_by_role("heading", level=4).filter(has_text="HYPERLINK").first.wait_for()
    # Chromium sends '"' in an upload's file name as %22 (the HTML spec's multipart encoding)
    names = [h for h in page.get_by_role("heading", level=4).all_inner_texts() if "HYPERLINK" in h]
    assert len(names) == 1 and re.fullmatch(r'=HYPERLINK\((?:"|%22)x(?:"|%22)\)', names[0]), names
    return names[0]


def test_hostile_class_and_file_names_are_plain_text(server, page):
    """(e) A Markdown image as a class name and a spreadsheet formula as a file name stay text.

    On the card, in the rejected file's message (it quotes the hostile
    column) and in the sidebar: the exact characters, no escaping
    backslash, no ``<img>``, and the browser never requests the URL.
    """
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    model = upload_hostile_files(server, page)
    card_text = text_of(card(page, model))
    assert f"uploaded file {model}.csv" in card_text, card_text
    assert f"Classes: cat, {HOSTILE_CLASS}" in card_text, card_text
    message = text_of(rejection(page, "hostile_bad.csv"))
    assert f"column 'p_{HOSTILE_CLASS}' holds a negative probability (-0.25) in row 4" in message, message
    sidebar = text_of(page.locator("[data-testid='stSidebar']"))
    assert f"{model}: 120 rows" in sidebar, sidebar
    assert "\\" not in card_text + message + sidebar
    page.wait_for_timeout(300)  # give a wrongly made <img> time to start its request
    images = page.evaluate("() => [...document.querySelectorAll('img')].map(i => i.getAttribute('src') || '')")
    assert not [src for src in images if "127.0.0.1:9/" in src], images
    assert not [url for url in requests if "127.0.0.1:9/" in url], requests
    assert_no_exception(page)


def test_hostile_class_name_makes_no_link(server, page):
    """(e) The URL inside the hostile class name is text, not a clickable link (GFM autolinks it)."""
    model = upload_hostile_files(server, page)
    card(page, model)
    rejection(page, "hostile_bad.csv")
    links = page.evaluate("() => [...document.querySelectorAll('a')].map(a => a.getAttribute('href') || '')")
    assert not [href for href in links if "127.0.0.1:9/" in href], links
