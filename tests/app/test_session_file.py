"""Session files (studio/session_file.py): round trip, hostile zips, and the Data page's download -> upload."""
from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from calib_core import CalibrationInputError
from studio import session_file as sf
from studio import state

from app_support import APP


def _model(name="m", n=50, k=3, seed=0, **extra):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    return sf.SessionModel(name=name, origin="upload", file_name=f"{name}.csv", source=b"label,p_a\n",
                           options=(("class_columns", ("p_a", "p_b", "p_c")), ("renormalize", True)),
                           fixes=("rows renormalised to sum to 1",), probs=probs,
                           labels=rng.integers(0, k, n).astype(np.int64), class_names=("a", "b", "NA")[:k],
                           **extra)


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_round_trip_keeps_every_field():
    rng = np.random.default_rng(1)
    split = np.where(rng.random(50) < 0.5, "calibration", "test")
    groups = rng.choice(["x", "(missing)", "ü"], 50)
    logits = rng.normal(size=(50, 3))
    models = [_model("one", split=split, groups=groups, group_column="site", logits=logits),
              _model("two", seed=2, n=7)]
    settings = {"bins": ["10"], "models": ["one", "two"], "split": ["test"]}
    got = sf.unpack(sf.pack(models, settings))
    assert got.settings == settings
    for want, have in zip(models, got.models):
        assert have.name == want.name and have.class_names == want.class_names
        assert np.array_equal(have.probs, want.probs) and np.array_equal(have.labels, want.labels)
        assert have.options == want.options and have.fixes == want.fixes and have.source == want.source
        for field in ("split", "groups", "logits"):
            a, b = getattr(want, field), getattr(have, field)
            assert (a is None and b is None) or np.array_equal(a, b)
    assert got.models[0].group_column == "site" and got.models[1].group_column is None


def test_zip_bomb_is_refused_before_reading():
    bomb = _zip({"manifest.json": b"{}", "sources/0": b"\0" * 5_000_000})
    assert len(bomb) < 50_000
    with pytest.raises(CalibrationInputError, match="unpacks to"):
        sf.unpack(bomb, max_bytes=1_000_000)


def test_packed_size_limit():
    with pytest.raises(CalibrationInputError, match="over the limit"):
        sf.unpack(sf.pack([_model()], {}), max_bytes=100)


def test_too_many_members():
    with pytest.raises(CalibrationInputError, match="members"):
        sf.unpack(_zip({f"sources/{i}": b"x" for i in range(sf.MAX_MEMBERS + 1)}))


@pytest.mark.parametrize("name", ["../evil", "/etc/passwd", "models\\0.parquet", "models/0.pkl", "x.pickle"])
def test_unexpected_member_names(name):
    members = _members(sf.pack([_model()], {}))
    members[name] = pickle.dumps({"a": 1})
    with pytest.raises(CalibrationInputError, match="unexpected member"):
        sf.unpack(_zip(members))


def test_pickle_in_place_of_predictions():
    members = _members(sf.pack([_model()], {}))
    members["models/0.parquet"] = pickle.dumps(np.zeros(3))
    with pytest.raises(CalibrationInputError, match="not a readable Parquet"):
        sf.unpack(_zip(members))


def test_bad_json_wrong_version_missing_member_not_zip():
    members = _members(sf.pack([_model()], {}))
    with pytest.raises(CalibrationInputError, match="not valid JSON"):
        sf.unpack(_zip({**members, "manifest.json": b"{not json"}))
    manifest = json.loads(members["manifest.json"])
    with pytest.raises(CalibrationInputError, match="format version 99"):
        sf.unpack(_zip({**members, "manifest.json": json.dumps({**manifest, "version": 99}).encode()}))
    del members["sources/0"]
    with pytest.raises(CalibrationInputError, match="missing"):
        sf.unpack(_zip(members))
    with pytest.raises(CalibrationInputError, match="not a zip"):
        sf.unpack(b"label,p\n1,0.5\n")


def test_wrong_class_count_in_predictions():
    members = _members(sf.pack([_model()], {}))
    manifest = json.loads(members["manifest.json"])
    manifest["models"][0]["class_names"] = ["a", "b"]
    with pytest.raises(CalibrationInputError, match="exactly 2 class columns"):
        sf.unpack(_zip({**members, "manifest.json": json.dumps(manifest).encode()}))


def _download_bytes(at: AppTest, monkeypatch_storage: list, managers: list) -> bytes:
    """The session file as a click gets it: the button's deferred function runs, outside any script run."""
    button = next(b for b in at.get("download_button") if b.proto.label == "Download session file")
    assert button.proto.deferred_file_id and not button.proto.url  # packed on the click, not on every run
    url = managers[-1].execute_deferred(button.proto.deferred_file_id)
    storage = monkeypatch_storage[-1]
    return storage.get_file(url.rsplit("/", 1)[-1]).content


def test_app_download_then_upload_restores_models(monkeypatch):
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    storages: list = []

    class Recording(MemoryMediaFileStorage):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            storages.append(self)

    monkeypatch.setattr(app_test_module, "MemoryMediaFileStorage", Recording)
    managers: list = []

    class RecordingManager(app_test_module.MediaFileManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            managers.append(self)

    monkeypatch.setattr(app_test_module, "MediaFileManager", RecordingManager)
    first = AppTest.from_file(str(APP), default_timeout=120)
    first.query_params["demo"] = "wine_logistic_regression"
    first.query_params["bins"] = "12"
    first.run()
    assert not first.exception
    data = _download_bytes(first, storages, managers)
    original = first.session_state[state.APP_KEY].models

    second = AppTest.from_file(str(APP), default_timeout=120)
    second.query_params["demo"] = "breast_cancer_gaussian_nb"
    second.run()
    second.file_uploader(key="data:uploads").upload("session.zip", data, "application/zip")
    second.run()
    assert not second.exception and not second.error, [e.value for e in second.error]
    restored = second.session_state[state.APP_KEY].models
    for name, model in original.items():
        assert name in restored
        got = restored[name].predictions
        assert np.array_equal(got.probs, model.predictions.probs)
        assert np.array_equal(got.labels, model.predictions.labels)
        assert got.class_names == model.predictions.class_names
        assert restored[name].fingerprint == model.fingerprint
    assert second.query_params.get("bins") in ("12", ["12"])
