"""A link made in a session with uploads (issue 23 item 8): it names only models a receiver can load and
points to the session file for the rest."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

from calib_core.io import Predictions
from studio import state

from tests import app_support
from tests.app_support import assert_clean

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

TIMEOUT = 120
IRIS, MLP = "iris_svc", "iris_mlp"
UPLOAD = "my_model"


def link_box(at) -> dict[str, list[str]]:
    codes = [code.value for code in at.sidebar.code]
    assert len(codes) == 1, codes
    return parse_qs(urlsplit(codes[0]).query)


def sidebar_text(at) -> str:
    return " ".join([c.value for c in at.sidebar.caption] + [m.value for m in at.sidebar.markdown])


def with_upload(at):
    """Add an uploaded model to the session of ``at`` (as the Data page's uploader does)."""
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=60)
    p = Predictions(probs=probs, labels=probs.argmax(axis=1), class_names=("a", "b", "c"), name=UPLOAD)
    store = at.session_state[state.APP_KEY]
    store.models[UPLOAD] = state.LoadedModel(p, state.fingerprint(p), "upload", f"{UPLOAD}.csv", raw=b"x")
    return at


def test_the_link_drops_uploaded_models_and_points_to_the_session_file():
    at = app_support.open_link("pages/2_Reliability.py", timeout=TIMEOUT, query={"demo": f"{IRIS},{MLP}"})
    with_upload(at).run()
    # Hide one demo: the URL's ?models= now lists the upload and the other demo.
    at.sidebar.multiselect[0].set_value([IRIS, UPLOAD]).run()
    assert_clean(at)
    assert at.query_params["models"] == [IRIS, UPLOAD], "the session's own URL keeps every shown model"
    link = link_box(at)
    assert link["models"] == [IRIS], link
    assert link["demo"] == [f"{IRIS},{MLP}"]
    text = sidebar_text(at)
    assert "session file" in text and UPLOAD.replace("_", "\\_") in text, text


def test_a_session_of_uploads_only_says_the_link_opens_no_model_of_it():
    predictions = Predictions(probs=np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]]), labels=np.array([0, 1, 1]),
                              class_names=("n", "y"), name=UPLOAD)
    at = app_support.open_with_model("pages/2_Reliability.py", predictions, timeout=TIMEOUT)
    assert_clean(at)
    assert "models" not in link_box(at) and "demo" not in link_box(at)
    text = sidebar_text(at)
    assert "session file" in text and "opens the default demo" in text, text


def test_a_session_of_demos_only_has_no_such_note():
    at = app_support.open_link("pages/2_Reliability.py", timeout=TIMEOUT, query={"demo": f"{IRIS},{MLP}"})
    assert_clean(at)
    assert "session file" not in sidebar_text(at)
