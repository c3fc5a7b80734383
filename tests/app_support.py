"""Helpers shared by the AppTest tests of the pages (tests/app/test_app.py, tests/test_page_*.py)."""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
from streamlit.testing.v1 import AppTest

from calib_core.io import Predictions
from studio import state

APP = Path(__file__).resolve().parent.parent / "app.py"


def open_link(page: str, *, timeout: float, query: dict[str, Any] | None = None,
              session_values: dict[str, Any] | None = None) -> AppTest:
    """Run ``page`` in a fresh session opened with ``?query`` (a deep link unless ``page`` is app.py),
    with ``session_values`` in its session state."""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in (session_values or {}).items():
        at.session_state[key] = value
    if page != "app.py":
        at.switch_page(page)
    return at.run()


def open_with_model(page: str, predictions: Predictions, *, timeout: float,
                    session_values: dict[str, Any] | None = None) -> AppTest:
    """Run ``page`` in a fresh session holding one model given as arrays (as after an upload)."""
    model = state.LoadedModel(predictions, state.fingerprint(predictions), "upload", f"{predictions.name}.csv")
    store = state._Store(models={predictions.name: model}, started=True)
    return open_link(page, timeout=timeout, session_values={state.APP_KEY: store, **(session_values or {})})


def open_with_uploads(page: str, models: list[Predictions], *, timeout: float,
                      session_values: dict[str, Any] | None = None) -> AppTest:
    """Run ``page`` in a fresh session holding ``models`` as uploads, each with its file's CSV bytes
    (so the Data page's column mapping has a file to read); the file is named after the model."""
    import pandas as pd

    store = state._Store(started=True)
    for p in models:
        raw = pd.DataFrame(p.probs, columns=list(p.class_names)).assign(
            label=[p.class_names[k] for k in p.labels]).to_csv(index=False).encode()
        store.models[p.name] = state.LoadedModel(p, state.fingerprint(p), "upload", p.name, raw=raw)
    return open_link(page, timeout=timeout, session_values={state.APP_KEY: store, **(session_values or {})})


def assert_clean(at: AppTest) -> None:
    """No exception and no st.error on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def plotly_specs(at: AppTest) -> list[dict]:
    """The figure JSON of every Plotly chart on the page, in order."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def trace_array(data) -> np.ndarray:
    """A trace array from plotly JSON as floats (a list with None gaps, or base64 "bdata")."""
    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"])).astype(float)
    return np.array([np.nan if v is None else v for v in data], dtype=float)


class DeferredDownloads:
    """What a click on a download button gets, for AppTests: the button's deferred function, run outside the script.

    Install with :meth:`install` before the AppTest is created (it records the
    media file manager and storage the test run uses).
    """

    def __init__(self) -> None:
        self.storages: list = []
        self.managers: list = []

    @classmethod
    def install(cls, monkeypatch) -> DeferredDownloads:
        import streamlit.testing.v1.app_test as app_test_module
        from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

        recorder = cls()

        class Storage(MemoryMediaFileStorage):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                recorder.storages.append(self)

        class Manager(app_test_module.MediaFileManager):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                recorder.managers.append(self)

        monkeypatch.setattr(app_test_module, "MemoryMediaFileStorage", Storage)
        monkeypatch.setattr(app_test_module, "MediaFileManager", Manager)
        return recorder

    def get(self, at: AppTest, label: str) -> bytes:
        """The bytes of the (deferred) download button labelled ``label``."""
        button = next(b for b in at.get("download_button") if b.proto.label == label)
        url = self.managers[-1].execute_deferred(button.proto.deferred_file_id)
        return self.storages[-1].get_file(url.rsplit("/", 1)[-1]).content


def three_class_weighted_csv(rows: int = 150, *, fractional: bool = False) -> bytes:
    """A 3-class CSV (``label,p_a,p_b,p_c,w``) over-confident in class c, with a weight column ``w`` of whole
    numbers 0-3 (``fractional``: class-c rows get another 0.5), for the weighted pages' tests."""
    rng = np.random.default_rng(5)
    lines = ["label,p_a,p_b,p_c,w"]
    for _ in range(rows):
        p = np.round(rng.dirichlet([1.0, 1.0, 1.0]), 3)
        p[2] = round(1 - p[0] - p[1], 3)
        label = rng.choice(3, p=p / p.sum() if p[2] < 0.5 else [0.45, 0.45, 0.1])
        weight = rng.integers(0, 4) + (0.5 * (label == 2) if fractional else 0)
        lines.append(f"{label},{p[0]:.3f},{p[1]:.3f},{p[2]:.3f},{weight}")
    return ("\n".join(lines) + "\n").encode()
