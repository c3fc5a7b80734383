"""Session files: the loaded models and the view's settings in one zip (no streamlit here).

A link cannot carry an upload, so the Data page offers a *session file*: a zip
holding, per model, its predictions as loaded (one Parquet file: ``label``,
``class_0..class_{K-1}``, optional ``logit_*``, ``split`` and ``group``
columns), the file it was loaded from, and a JSON manifest (format version,
model names, member names, load options, fixes applied, and the URL query
parameters of the view). :func:`pack` writes it and :func:`unpack` reads it
back, refusing anything hostile with a :class:`~calib_core.CalibrationInputError`.

Notes
-----
Nothing is unpickled: the Parquet members are read with ``pyarrow`` (plain
columns only) and the source files go through ``calib_core.load_predictions``
(NPZ with ``allow_pickle=False``). Before reading a member the declared
uncompressed sizes are summed and checked against ``max_bytes`` (a zip bomb
stops there), the member count is capped, and every member name must be one
the manifest names (no ``..``, absolute or backslash paths; nothing is ever
written to disk).
"""
from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calib_core import CalibrationInputError

#: The manifest's ``format`` value and the version written by this app.
FORMAT = "calibration-studio-session"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
#: At most this many models (two members each, plus the manifest).
MAX_MODELS = 32
MAX_MEMBERS = 2 * MAX_MODELS + 1
#: Same default as ``calib_core.load_predictions(max_bytes=...)``: the zip and its unpacked total.
DEFAULT_MAX_BYTES = 500_000_000
MAX_MANIFEST_BYTES = 1_000_000
_SAFE_MEMBER = re.compile(r"^(models/\d{1,3}\.parquet|sources/\d{1,3})$")


@dataclass(frozen=True)
class SessionModel:
    """One model of a session file.

    Attributes
    ----------
    name : str
        The model's name in the app.
    origin : {"demo", "upload"}
    file_name : str
        The name of the file it was loaded from (its format comes from the extension).
    source : bytes
        That file's bytes.
    options : tuple of (str, value) pairs
        The ``load_predictions`` overrides it was loaded with.
    fixes : tuple of str
        The fixes applied, as shown on the model's card.
    probs : ndarray of shape (N, K)
    labels : ndarray of shape (N,), int
    class_names : tuple of str, length K
    logits : ndarray of shape (N, K) or None
    split : ndarray of shape (N,), str, or None
    groups : ndarray of shape (N,), str, or None
    group_column : str or None
    demo : str or None
        The demo's name for ``origin == "demo"``.
    """

    name: str
    origin: str
    file_name: str
    source: bytes
    options: tuple[tuple[str, Any], ...]
    fixes: tuple[str, ...]
    probs: NDArray[np.float64]
    labels: NDArray[np.int64]
    class_names: tuple[str, ...]
    logits: NDArray[np.float64] | None = None
    split: NDArray[np.str_] | None = None
    groups: NDArray[np.str_] | None = None
    group_column: str | None = None
    demo: str | None = None


@dataclass(frozen=True)
class Session:
    """The contents of a session file: its models and the URL query parameters (name -> values)."""

    models: tuple[SessionModel, ...]
    settings: dict[str, list[str]]


def _bad(reason: str) -> CalibrationInputError:
    return CalibrationInputError(f"this is not a valid session file: {reason}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise CalibrationInputError(f"load option value {value!r} cannot be stored in a session file.")


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _parquet_bytes(model: SessionModel) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, Any] = {"label": pa.array(np.asarray(model.labels, dtype=np.int64))}
    probs = np.asarray(model.probs, dtype=np.float64)
    for k in range(probs.shape[1]):
        columns[f"class_{k}"] = pa.array(probs[:, k])
    if model.logits is not None:
        logits = np.asarray(model.logits, dtype=np.float64)
        for k in range(logits.shape[1]):
            columns[f"logit_{k}"] = pa.array(logits[:, k])
    if model.split is not None:
        columns["split"] = pa.array(np.asarray(model.split).astype(str).tolist(), type=pa.string())
    if model.groups is not None:
        columns["group"] = pa.array(np.asarray(model.groups).astype(str).tolist(), type=pa.string())
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink, compression="zstd")
    return sink.getvalue()


def pack(models: list[SessionModel] | tuple[SessionModel, ...], settings: dict[str, list[str]]) -> bytes:
    """The session file (zip bytes) of ``models`` and the query parameters ``settings``.

    Parameters
    ----------
    models : sequence of SessionModel
        At most :data:`MAX_MODELS`.
    settings : dict of str -> list of str
        The URL query parameters of the view (``st.query_params``, every value per key).

    Returns
    -------
    bytes
        A deflated zip: ``manifest.json``, ``models/<i>.parquet`` and ``sources/<i>``.
    """
    if len(models) > MAX_MODELS:
        raise CalibrationInputError(f"a session file holds at most {MAX_MODELS} models, not {len(models)}.")
    manifest: dict[str, Any] = {
        "format": FORMAT, "version": FORMAT_VERSION,
        "settings": {str(k): [str(v) for v in vs] for k, vs in settings.items()}, "models": [],
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for i, model in enumerate(models):
            predictions, source = f"models/{i}.parquet", f"sources/{i}"
            archive.writestr(predictions, _parquet_bytes(model))
            archive.writestr(source, model.source)
            manifest["models"].append({
                "name": model.name, "origin": model.origin, "demo": model.demo, "file_name": model.file_name,
                "predictions": predictions, "source": source, "class_names": list(model.class_names),
                "group_column": model.group_column,
                "options": [[k, _jsonable(v)] for k, v in model.options], "fixes": list(model.fixes),
            })
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1))
    return buffer.getvalue()


# ----------------------------------------------------------------------------- reading

def _text(entry: dict, key: str, *, optional: bool = False) -> str | None:
    value = entry.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 1000:
        raise _bad(f"the manifest's model field {key!r} is missing or not a text.")
    return value


def _manifest(archive: zipfile.ZipFile) -> dict[str, Any]:
    try:
        info = archive.getinfo(MANIFEST)
    except KeyError:
        raise _bad(f"it has no {MANIFEST}.") from None
    if info.file_size > MAX_MANIFEST_BYTES:
        raise _bad(f"its {MANIFEST} is larger than {MAX_MANIFEST_BYTES:,} bytes.")
    try:
        manifest = json.loads(archive.read(info).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise _bad(f"its {MANIFEST} is not valid JSON.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _bad(f"its {MANIFEST} does not describe a calibration studio session.")
    version = manifest.get("version")
    if version != FORMAT_VERSION:
        raise CalibrationInputError(
            f"the session file has format version {version!r}; this app reads version {FORMAT_VERSION}. "
            "Save the session again with this version of the app.")
    if not isinstance(manifest.get("models"), list) or not manifest["models"]:
        raise _bad("its manifest lists no models.")
    if len(manifest["models"]) > MAX_MODELS:
        raise _bad(f"it lists {len(manifest['models'])} models (at most {MAX_MODELS}).")
    settings = manifest.get("settings", {})
    if not (isinstance(settings, dict) and len(settings) <= 100
            and all(isinstance(k, str) and isinstance(v, list) and len(v) <= 1000
                    and all(isinstance(x, str) and len(x) <= 10_000 for x in v) for k, v in settings.items())):
        raise _bad("its settings are not a mapping of names to lists of texts.")
    return manifest


def _read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(name)
    with archive.open(info) as handle:
        data = handle.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise _bad(f"the member {name!r} is not the size its header declares.")
    return data


def _column(table: Any, name: str, n_rows: int) -> NDArray | None:
    if name not in table.column_names:
        return None
    column = table.column(name)
    if column.null_count:
        raise _bad(f"the predictions column {name!r} has empty cells.")
    return column.to_numpy(zero_copy_only=False)


def _read_model(archive: zipfile.ZipFile, entry: Any) -> SessionModel:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(entry, dict):
        raise _bad("a model entry of its manifest is not an object.")
    name, origin, file_name = _text(entry, "name"), _text(entry, "origin"), _text(entry, "file_name")
    if origin not in ("demo", "upload"):
        raise _bad(f"model {name!r} has the unknown origin {origin!r}.")
    class_names = entry.get("class_names")
    if not (isinstance(class_names, list) and len(class_names) >= 2 and all(isinstance(c, str) for c in class_names)
            and len(set(class_names)) == len(class_names)):
        raise _bad(f"model {name!r} needs at least two distinct class names.")
    options, fixes = entry.get("options", []), entry.get("fixes", [])
    if not (isinstance(options, list) and all(isinstance(o, list) and len(o) == 2 and isinstance(o[0], str)
                                              for o in options)):
        raise _bad(f"the load options of model {name!r} are not a list of [name, value] pairs.")
    if not (isinstance(fixes, list) and all(isinstance(f, str) for f in fixes)):
        raise _bad(f"the fixes of model {name!r} are not a list of texts.")
    try:
        raw = _read_member(archive, _text(entry, "predictions"))
        source = _read_member(archive, _text(entry, "source"))
    except KeyError as exc:
        raise _bad(f"the member {exc.args[0] if exc.args else ''} named by its manifest is missing.") from None
    try:
        table = pq.read_table(pa.BufferReader(raw))
    except Exception:  # noqa: BLE001 -- any damage in a user's file becomes one clean message
        raise _bad(f"the predictions of model {name!r} are not a readable Parquet table.") from None
    k = len(class_names)
    labels = _column(table, "label", table.num_rows)
    class_columns = [_column(table, f"class_{j}", table.num_rows) for j in range(k)]
    if labels is None or any(c is None for c in class_columns) or f"class_{k}" in table.column_names:
        raise _bad(f"the predictions of model {name!r} need a 'label' column and exactly {k} class columns.")
    if not np.issubdtype(labels.dtype, np.integer) or not all(np.issubdtype(c.dtype, np.floating)
                                                              for c in class_columns):
        raise _bad(f"the predictions of model {name!r} hold labels or probabilities of the wrong type.")
    logit_columns = [_column(table, f"logit_{j}", table.num_rows) for j in range(k)]
    logits = None
    if any(c is not None for c in logit_columns):
        if any(c is None or not np.issubdtype(c.dtype, np.floating) for c in logit_columns):
            raise _bad(f"the logits of model {name!r} are incomplete.")
        logits = np.column_stack(logit_columns).astype(np.float64)
    split, groups = _column(table, "split", table.num_rows), _column(table, "group", table.num_rows)
    return SessionModel(
        name=name, origin=origin, file_name=file_name, source=source,
        options=tuple((key, _frozen(value)) for key, value in options), fixes=tuple(fixes),
        probs=np.column_stack(class_columns).astype(np.float64), labels=labels.astype(np.int64),
        class_names=tuple(class_names), logits=logits,
        split=None if split is None else split.astype(str), groups=None if groups is None else groups.astype(str),
        group_column=_text(entry, "group_column", optional=True), demo=_text(entry, "demo", optional=True),
    )


def unpack(data: bytes, *, max_bytes: int | None = DEFAULT_MAX_BYTES) -> Session:
    """Read a session file written by :func:`pack`, refusing anything else with a clear message.

    Parameters
    ----------
    data : bytes
        The uploaded zip.
    max_bytes : int or None
        Limit on the zip's size and on the sum of its members' declared
        uncompressed sizes (checked before any member is read).

    Returns
    -------
    Session

    Raises
    ------
    CalibrationInputError
        Not a zip, too large (packed or unpacked), more than :data:`MAX_MEMBERS`
        members, a member name that is not one of this format's (path
        traversal, a pickle, anything extra), a missing member, bad JSON, an
        unknown format version, or unreadable predictions.
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise CalibrationInputError(f"the session file is {len(data):,} bytes, over the limit of {max_bytes:,}.")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError):
        raise _bad("it is not a zip archive.") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise _bad(f"it has {len(infos)} members (at most {MAX_MEMBERS}).")
        unpacked = sum(info.file_size for info in infos)
        if max_bytes is not None and unpacked > max_bytes:
            raise _bad(f"it unpacks to {unpacked:,} bytes, over the limit of {max_bytes:,}.")
        for info in infos:
            if info.filename != MANIFEST and not _SAFE_MEMBER.match(info.filename):
                raise _bad(f"it holds the unexpected member {info.filename[:200]!r}.")
        manifest = _manifest(archive)
        named = [m.get(key) for m in manifest["models"] if isinstance(m, dict) for key in ("predictions", "source")]
        if len(set(named)) != len(named):
            raise _bad("its manifest names one member twice.")
        try:
            models = tuple(_read_model(archive, entry) for entry in manifest["models"])
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, RuntimeError,
                NotImplementedError):
            raise _bad("a member is damaged or encrypted.") from None
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise _bad("two models have the same name.")
    return Session(models, {k: list(v) for k, v in manifest.get("settings", {}).items()})
