"""The browser tab's icon ships with the app (issue 30, item 9): a Material icon as ``page_icon`` made every
visitor's browser fetch it from fonts.gstatic.com, an outside host (an offline server showed none)."""
from __future__ import annotations

from pathlib import Path

import pytest
import streamlit

from studio import nav
from tests.app_support import open_link


@pytest.mark.usefixtures("fresh_streamlit_caches")
@pytest.mark.parametrize("page", [p.path for p in nav.PAGES])
def test_every_page_sets_the_shipped_favicon(monkeypatch, page):
    icons = []
    real = streamlit.set_page_config

    def recording(*args, **kwargs):
        icons.append(kwargs.get("page_icon"))
        return real(*args, **kwargs)

    monkeypatch.setattr(streamlit, "set_page_config", recording)
    at = open_link(page, timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    assert icons, "the page sets its config"
    for icon in icons:
        assert isinstance(icon, (str, Path)) and not str(icon).startswith(":"), icon  # no Material icon or emoji code
        path = Path(icon)
        assert path.is_file() and path.stat().st_size < 4096, icon  # a small file in the repository
