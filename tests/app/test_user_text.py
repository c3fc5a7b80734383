"""User strings from a link, a file's split and group columns and a session file shown as plain text
(issue 23, item 9).

tests/app/test_app_hardening.py covers file, model and class names on every page; this module covers
the other doors: the query parameters of a link (``?demo=``, ``?split=``, ``?models=``), the values of
a file's ``split`` and group columns, and the fix sentences a session file carries. Every
Markdown-rendered string of the page (bodies, labels, help texts, captions) must show the hostile
value as text, with no image and no link to the hostile host.
"""
from __future__ import annotations

import numpy as np
import pytest

from calib_core.io import Predictions
from studio import nav, state
from tests.app.test_app_hardening import PAGE_STATE, _plain_text, _rendered_safely, markdown_texts
from tests.app_support import open_link

#: A split value and a group value that are a Markdown image (a request to the hostile host when rendered).
SPLIT = "![s](http://127.0.0.1:9/split.png)"
GROUP = "[g](http://127.0.0.1:9/group) **bold**"
FIX = "![f](http://127.0.0.1:9/fix-pixel.png) [sign in](http://127.0.0.1:9/)"


def _texts(at) -> list[tuple[str, str]]:
    """Every Markdown-rendered string: bodies, labels, help texts, captions and the options of radios
    (``st.radio`` renders its option labels as Markdown, ``st.selectbox`` does not)."""
    return [*markdown_texts(at), *(("Radio.options", option) for radio in at.radio for option in radio.options)]


def _offending(at) -> list[tuple[str, str]]:
    assert not at.exception, [e.value for e in at.exception]
    texts = _texts(at)
    assert texts, "nothing rendered"
    return [(where, text) for where, text in texts if not _rendered_safely(text) or "127.0.0.1" in _links(text)]


def _links(text: str) -> str:
    """The link and image targets CommonMark finds in ``text`` (joined), for a readable assertion."""
    from tests.app.test_app_hardening import _inline_tokens

    return " ".join(str(t.attrGet("href") or t.attrGet("src") or "") for t in _inline_tokens(text)
                    if t.type in ("link_open", "image"))


def _split_group_model(name: str, seed: int, *, with_split: bool) -> Predictions:
    rng = np.random.default_rng(seed)
    n = 240
    probs = rng.dirichlet(np.ones(3) * 0.7, size=n)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    split = np.where(np.arange(n) % 3 == 0, SPLIT, "calibration") if with_split else None
    groups = np.where(np.arange(n) % 2 == 0, GROUP, SPLIT)
    return Predictions.from_arrays(probs=probs, labels=labels, name=name, split=split, groups=groups,
                                   group_column=GROUP)


def _store(split: str) -> state._Store:
    """Two uploads: one with the hostile split and group values (and a hostile fix sentence, as a
    session file may carry), one without that split."""
    store = state._Store(started=True, split=split)
    for i, p in enumerate([_split_group_model("model a", 0, with_split=True),
                           _split_group_model("model b", 1, with_split=False)]):
        store.models[p.name] = state.LoadedModel(p, state.fingerprint(p), "upload", f"{p.name}.csv",
                                                 raw=b"label,p_0\n0,1\n", fixes=(FIX,) if i == 0 else ())
    return store


@pytest.mark.usefixtures("fresh_streamlit_caches")
@pytest.mark.parametrize("page", [p.path for p in nav.PAGES])
def test_every_page_shows_split_group_and_fix_texts_as_plain_text(page):
    """The sidebar's rows note, the Groups page, the Recalibration protocol notes and the Data card's
    fix sentences name hostile split, group and fix values: each must be text."""
    at = open_link(page, timeout=120,
                   session_values={state.APP_KEY: _store(SPLIT), **PAGE_STATE.get(page, {})})
    assert not _offending(at), _offending(at)
    shown = " ".join(_plain_text(text) for _, text in _texts(at))
    assert SPLIT in shown, "the page names the split (as text), so the check above is not vacuous"


@pytest.mark.usefixtures("fresh_streamlit_caches")
@pytest.mark.parametrize("query", [
    {"demo": "x' [Click here to sign in again](http://127.0.0.1:9/) **Your session expired** '"},
    {"demo": "![x](http://127.0.0.1:9/demo.png)"},
    {"split": "![x](http://127.0.0.1:9/split.png)"},
    {"models": "![x](http://127.0.0.1:9/models.png)"},
])
@pytest.mark.parametrize("page", ["app.py", "pages/1_Metrics.py"])
def test_a_links_parameters_are_shown_as_plain_text(page, query):
    """A phishing link: its values land in the app's own notes (unknown demo, split or model)."""
    at = open_link(page, timeout=120, query=query)
    assert not _offending(at), _offending(at)
    value = next(iter(query.values()))
    notes = " ".join(_plain_text(box.value) for box in [*at.error, *at.warning, *at.info])
    assert value in notes, notes
