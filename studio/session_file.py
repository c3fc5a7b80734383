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
The file is data from a stranger. Nothing is unpickled: the Parquet members are
read with ``pyarrow`` (plain columns only) and the source files go through
``calib_core.load_predictions`` (NPZ with ``allow_pickle=False``). Before any
member is read, the zip's directory is checked (member count, names, no
encryption, only stored or deflated members, declared uncompressed sizes
summed against ``max_bytes``, so a zip bomb stops there) and the whole manifest
is parsed against an allow-list schema (:func:`_manifest`): known keys only,
each of its type and range; the per-model load options are the few
``load_predictions`` overrides the app itself writes (:data:`LOAD_OPTIONS`, :data:`LIMIT_OPTIONS`),
and a limit among them (``max_bytes``) can only be tightened, never lifted;
the class count is capped as for uploads (``calib_core.io.formats.MAX_CLASSES``)
before a member is read. A Parquet member's decoded size (rows x columns x 8
bytes, from its footer) must fit in ``max_bytes`` too. Every failure is one
:class:`~calib_core.CalibrationInputError` that names the session file and
says what is wrong. The work is linear in the size of the manifest and of the
members (one pass over the columns).

The ``fixes`` texts are kept as data: validated as short texts, never shown
(:func:`studio.state.restore_session` derives the sentences from the
validated options, as for an upload).
"""
from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calib_core import CalibrationInputError
from calib_core.io.formats import MAX_CLASSES
from calib_core.io.limits import MAX_CELLS, parquet_cells

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
#: Longest text the manifest may hold (a name, a file name, a class name, a fix).
MAX_TEXT = 1_000
#: At most this many view settings (URL query parameters), values per setting, fixes per model.
MAX_SETTINGS, MAX_SETTING_VALUES, MAX_FIXES = 200, 100, 20
_SAFE_MEMBER = re.compile(r"^(models/\d{1,3}\.parquet|sources/\d{1,3})$")
#: A setting's name: a URL query parameter of a bound control (``bins``, ``lab_seed``, ...).
_SETTING_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
#: Query parameters Streamlit reserves (they cannot be set or bound by the app).
_RESERVED_SETTINGS = frozenset({"embed", "embed_options"})


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


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise CalibrationInputError(f"load option value {value!r} cannot be stored in a session file.")


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
        The URL query parameters of the view (every value per key); those a
        session file cannot hold (see :func:`storable_settings`) are left out.

    Returns
    -------
    bytes
        A deflated zip: ``manifest.json``, ``models/<i>.parquet`` and ``sources/<i>``.
    """
    if len(models) > MAX_MODELS:
        raise CalibrationInputError(f"a session file holds at most {MAX_MODELS} models, not {len(models)}.")
    manifest: dict[str, Any] = {
        "format": FORMAT, "version": FORMAT_VERSION,
        "settings": storable_settings(settings), "models": [],
    }
    problems = [problem for problem in map(unstorable, models) if problem]
    if problems:
        raise CalibrationInputError(problems[0])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for i, model in enumerate(models):
            entry = _manifest_entry(model, i)
            archive.writestr(entry["predictions"], _parquet_bytes(model))
            archive.writestr(entry["source"], model.source)
            manifest["models"].append(entry)
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1))
    return buffer.getvalue()


def _manifest_entry(model: SessionModel, i: int) -> dict[str, Any]:
    """The manifest's entry of model ``i`` (what :func:`unpack` checks with its schema)."""
    return {"name": model.name, "origin": model.origin, "demo": model.demo, "file_name": model.file_name,
            "predictions": f"models/{i}.parquet", "source": f"sources/{i}", "class_names": list(model.class_names),
            "group_column": model.group_column, "options": [[k, _jsonable(v)] for k, v in model.options],
            "fixes": list(model.fixes)}


def unstorable(model: SessionModel) -> str | None:
    """Why ``model`` cannot be saved in a session file that :func:`unpack` would restore (None: it can).

    The manifest entry :func:`pack` would write is checked with the schema :func:`unpack` applies (e.g. a name
    or class name longer than :data:`MAX_TEXT` characters), so a session that is saved can be restored.
    """
    try:
        _entry(_manifest_entry(model, 0), 0, None)
    except (_Invalid, CalibrationInputError) as exc:
        return f"model {model.name[:100]!r} cannot be saved in a session file: {exc}"
    return None


def storable_settings(settings: dict[str, list[str]]) -> dict[str, list[str]]:
    """The view settings a session file holds: those :func:`unpack` accepts (names of URL parameters of
    bound controls, short texts); anything else in a URL (a tracking parameter, Streamlit's ``embed``) is
    left out, so a saved file is never refused for it."""
    kept: dict[str, list[str]] = {}
    for key, values in settings.items():
        values = [str(v) for v in values]
        if (len(kept) < MAX_SETTINGS and _setting_name_ok(key) and len(values) <= MAX_SETTING_VALUES
                and all(len(v) <= MAX_TEXT for v in values)):
            kept[key] = values
    return kept


def _setting_name_ok(key: Any) -> bool:
    return isinstance(key, str) and bool(_SETTING_NAME.match(key)) and key.lower() not in _RESERVED_SETTINGS


# ----------------------------------------------------------------------------- reading

class _Invalid(Exception):
    """What is wrong with a session file (one sentence); :func:`unpack` names the file in front of it."""


def _text(value: Any, what: str, *, optional: bool = False, limit: int = MAX_TEXT) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise _Invalid(f"{what} is {'missing or ' if value is None else ''}not a text of 1 to {limit:,} characters.")
    return value


def _texts(value: Any, what: str, *, low: int, high: int, distinct: bool = False,
           limit: int = MAX_TEXT) -> tuple[str, ...]:
    """A list of ``low`` to ``high`` texts (checked in one pass; the count first)."""
    if not isinstance(value, list):
        raise _Invalid(f"{what} is not a list of texts.")
    if not low <= len(value) <= high:
        raise _Invalid(f"{what} holds {len(value):,} entries; {low:,} to {high:,} are allowed.")
    if not all(isinstance(v, str) and len(v) <= limit for v in value):
        raise _Invalid(f"{what} is not a list of texts of at most {limit:,} characters.")
    if distinct and len(set(value)) != len(value):
        raise _Invalid(f"{what} names one entry twice.")
    return tuple(value)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"{what} is not true or false.")
    return value


def _choice(*allowed: str) -> Callable[[Any, str], str]:
    def check(value: Any, what: str) -> str:
        if value not in allowed:
            raise _Invalid(f"{what} is not one of {', '.join(allowed)}.")
        return value
    return check


def _label_column(value: Any, what: str) -> str | int:
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, -1):
        return value  # a plain NPY array's label column, by number
    return _text(value, what)


def _columns(value: Any, what: str) -> tuple[str, ...]:
    return _texts(value, what, low=1, high=MAX_CLASSES, distinct=True)


def _optional_text(value: Any, what: str) -> str | None:
    return _text(value, what, optional=True)


#: The ``load_predictions`` overrides a session file may carry (those the app writes: the column
#: mapping, the fixes, a forced format) and how each is checked. ``max_bytes`` is checked by
#: :func:`_options` against the limit of this upload (:data:`LIMIT_OPTIONS`): it can only be tightened.
LOAD_OPTIONS: dict[str, Callable[[Any, str], Any]] = {
    "label_column": _label_column,
    "class_columns": _columns,
    "score_column": _text,
    "input_kind": _choice("auto", "probabilities", "logits"),
    "renormalize": _flag,
    "percentages": _flag,
    "class_names": _columns,
    "split_column": _optional_text,
    "group": _text,
    "weight_column": _text,
    "file_format": _choice("csv", "tsv", "parquet", "npz", "npy"),
}
#: The one limit among the load options: a session file may lower it (see :func:`_options`), never raise it.
LIMIT_OPTIONS = ("max_bytes",)


def _options(value: Any, model: str, max_bytes: int | None) -> tuple[tuple[str, Any], ...]:
    what = f"the load options of model {model!r}"
    most = len(LOAD_OPTIONS) + len(LIMIT_OPTIONS)
    if not (isinstance(value, list) and len(value) <= most
            and all(isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) for o in value)):
        raise _Invalid(f"{what} are not a list of at most {most} [name, value] pairs.")
    keys = [key for key, _ in value]
    known = (*LOAD_OPTIONS, *LIMIT_OPTIONS)
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise _Invalid(f"{what} name {unknown[0][:100]!r}, which is not one of {', '.join(known)}.")
    if len(set(keys)) != len(keys):
        raise _Invalid(f"{what} give one option twice.")
    checked = []
    for key, option in value:
        if key == "max_bytes":
            ceiling = max_bytes if max_bytes is not None else DEFAULT_MAX_BYTES
            if not (isinstance(option, int) and not isinstance(option, bool) and 1 <= option <= ceiling):
                raise _Invalid(f"{what} set max_bytes to {str(option)[:40]}; a session file can only tighten "
                               f"the upload limit (a whole number of bytes from 1 to {ceiling:,}).")
            checked.append((key, option))
        else:
            checked.append((key, LOAD_OPTIONS[key](option, f"{what}: {key}")))
    return tuple(checked)


_MODEL_KEYS = frozenset({"name", "origin", "demo", "file_name", "predictions", "source", "class_names",
                         "group_column", "options", "fixes"})
_MANIFEST_KEYS = frozenset({"format", "version", "settings", "models"})


@dataclass(frozen=True)
class _Entry:
    """One model entry of a manifest, checked against the schema (no member read yet)."""

    name: str
    origin: str
    demo: str | None
    file_name: str
    predictions: str
    source: str
    class_names: tuple[str, ...]
    group_column: str | None
    options: tuple[tuple[str, Any], ...]
    fixes: tuple[str, ...]


def _unknown_keys(entry: dict, known: frozenset[str], where: str) -> None:
    extra = sorted(str(k)[:100] for k in entry if k not in known)
    if extra:
        raise _Invalid(f"{where} has the unknown field {extra[0]!r} (known: {', '.join(sorted(known))}).")


def _entry(entry: Any, i: int, max_bytes: int | None) -> _Entry:
    if not isinstance(entry, dict):
        raise _Invalid(f"model entry {i + 1} of its {MANIFEST} is not an object.")
    _unknown_keys(entry, _MODEL_KEYS, f"model entry {i + 1} of its {MANIFEST}")
    name = _text(entry.get("name"), f"the name of model entry {i + 1}")
    # The class cap of uploads, first: nothing else of a model is looked at before it.
    class_names = entry.get("class_names")
    if isinstance(class_names, list) and len(class_names) > MAX_CLASSES:
        raise _Invalid(f"model {name!r} has {len(class_names):,} classes; at most {MAX_CLASSES:,} classes are "
                       "supported (the same limit as for uploads).")
    class_names = _texts(class_names, f"the class names of model {name!r}", low=2, high=MAX_CLASSES,
                         distinct=True)
    origin = _choice("demo", "upload")(entry.get("origin"), f"the origin of model {name!r}")
    members = []
    for key in ("predictions", "source"):
        member = _text(entry.get(key), f"the {key} member of model {name!r}")
        if not _SAFE_MEMBER.match(member) or (key == "predictions") != member.startswith("models/"):
            raise _Invalid(f"the {key} member of model {name!r} is {member[:100]!r}, not a member name of "
                           "this format.")
        members.append(member)
    fixes = entry.get("fixes", [])
    return _Entry(
        name=name, origin=origin, demo=_text(entry.get("demo"), f"the demo of model {name!r}", optional=True),
        file_name=_text(entry.get("file_name"), f"the file name of model {name!r}"),
        predictions=members[0], source=members[1], class_names=class_names,
        group_column=_text(entry.get("group_column"), f"the group column of model {name!r}", optional=True),
        options=_options(entry.get("options", []), name, max_bytes),
        fixes=_texts(fixes, f"the fixes of model {name!r}", low=0, high=MAX_FIXES, limit=300),
    )


def _settings(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, dict) or len(value) > MAX_SETTINGS:
        raise _Invalid(f"its settings are not a mapping of at most {MAX_SETTINGS} names to lists of texts.")
    for key, values in value.items():
        if not _setting_name_ok(key):
            raise _Invalid(f"its settings name {str(key)[:100]!r}, which is not the name of a control "
                           "(letters, digits and _; not embed or embed_options).")
        _texts(values, f"its setting {key!r}", low=0, high=MAX_SETTING_VALUES)
    return {key: list(values) for key, values in value.items()}


def _manifest(archive: zipfile.ZipFile, max_bytes: int | None) -> tuple[dict[str, list[str]], tuple[_Entry, ...]]:
    """The manifest's settings and model entries, checked against the schema; no other member is read."""
    info = archive.getinfo(MANIFEST)
    if info.file_size > MAX_MANIFEST_BYTES:
        raise _Invalid(f"its {MANIFEST} is larger than {MAX_MANIFEST_BYTES:,} bytes.")
    try:
        manifest = json.loads(_read_member(archive, MANIFEST).decode("utf-8"),
                              parse_constant=lambda c: _reject_constant(c))
    except (ValueError, UnicodeDecodeError):
        raise _Invalid(f"its {MANIFEST} is not valid JSON text.") from None
    except RecursionError:
        raise _Invalid(f"its {MANIFEST} is nested too deeply to be a manifest.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _Invalid(f"its {MANIFEST} does not describe a calibration studio session.")
    version = manifest.get("version")
    if not (isinstance(version, int) and not isinstance(version, bool) and version == FORMAT_VERSION):
        raise _Invalid(f"its {MANIFEST} has format version {str(version)[:40]}; this app reads version "
                       f"{FORMAT_VERSION}. Save the session again with this version of the app.")
    _unknown_keys(manifest, _MANIFEST_KEYS, f"its {MANIFEST}")
    models = manifest.get("models")
    if not isinstance(models, list) or not models:
        raise _Invalid(f"its {MANIFEST} lists no models.")
    if len(models) > MAX_MODELS:
        raise _Invalid(f"it lists {len(models)} models (at most {MAX_MODELS}).")
    entries = tuple(_entry(entry, i, max_bytes) for i, entry in enumerate(models))
    named = [member for e in entries for member in (e.predictions, e.source)]
    if len(set(named)) != len(named):
        raise _Invalid(f"its {MANIFEST} names one member for two purposes.")
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise _Invalid("two models have the same name.")
    return _settings(manifest.get("settings", {})), entries


def _reject_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(name)
    with archive.open(info) as handle:
        data = handle.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise _Invalid(f"the member {name!r} is not the size its header declares.")
    return data


def _read_model(archive: zipfile.ZipFile, entry: _Entry, max_bytes: int | None,
                max_cells: int | None, spent: int) -> tuple[SessionModel, int]:
    """Read the members of one checked entry; linear in the number of columns (one index of names).

    ``max_cells`` is one budget for the whole session file: ``spent`` cells were decoded for the
    models before this one; the total with this model's is returned."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name, k = entry.name, len(entry.class_names)
    present = set(archive.namelist())
    for member in (entry.predictions, entry.source):
        if member not in present:
            raise _Invalid(f"its {MANIFEST} names the member {member!r} for model {name!r}, but the zip has no "
                           "such member.")
    raw = _read_member(archive, entry.predictions)
    expected = {"label", "split", "group", *(f"class_{j}" for j in range(k)), *(f"logit_{j}" for j in range(k))}
    try:
        footer = pq.ParquetFile(pa.BufferReader(raw)).metadata
        columns = footer.schema.to_arrow_schema().names
    except Exception:  # noqa: BLE001 -- any damage in a stranger's file becomes one clean message
        raise _Invalid(f"the predictions of model {name!r} are not a readable Parquet table.") from None
    unexpected = [c for c in columns if c not in expected]
    if unexpected or len(set(columns)) != len(columns):
        raise _Invalid(f"the predictions of model {name!r} hold the unexpected column "
                       f"{(unexpected or columns)[0][:100]!r}.")
    decoded = footer.num_rows * max(len(columns), 1) * 8
    limit = max_bytes if max_bytes is not None else DEFAULT_MAX_BYTES
    if decoded > limit:
        raise _Invalid(f"the predictions of model {name!r} ({footer.num_rows:,} rows x {len(columns):,} columns) "
                       f"decode to about {decoded:,} bytes, over the limit of {limit:,}.")
    cells = max(parquet_cells(footer, len(columns)))
    if max_cells is not None and spent + cells > max_cells:
        before = f", {spent + cells:,} with the models before it" if spent else ""
        raise _Invalid(f"the predictions of model {name!r} hold {cells:,} values (nested columns count every "
                       f"element){before}, over the limit of {max_cells:,} cells for the whole session file.")
    try:
        table = pq.read_table(pa.BufferReader(raw))
    except Exception:  # noqa: BLE001
        raise _Invalid(f"the predictions of model {name!r} are not a readable Parquet table.") from None
    index = {column: i for i, column in enumerate(table.column_names)}

    def column(key: str) -> NDArray | None:
        if key not in index:
            return None
        values = table.column(index[key])
        if values.null_count:
            raise _Invalid(f"the predictions column {key!r} of model {name!r} has empty cells.")
        return values.to_numpy(zero_copy_only=False)

    labels = column("label")
    class_columns = [column(f"class_{j}") for j in range(k)]
    if labels is None or any(c is None for c in class_columns):
        raise _Invalid(f"the predictions of model {name!r} need a 'label' column and exactly {k} class columns "
                       "(one per class name).")
    if not np.issubdtype(labels.dtype, np.integer) or not all(np.issubdtype(c.dtype, np.floating)
                                                              for c in class_columns):
        raise _Invalid(f"the predictions of model {name!r} hold labels or probabilities of the wrong type.")
    logits = None
    if any(f"logit_{j}" in index for j in range(k)):
        logit_columns = [column(f"logit_{j}") for j in range(k)]
        if any(c is None or not np.issubdtype(c.dtype, np.floating) for c in logit_columns):
            raise _Invalid(f"the logits of model {name!r} are incomplete.")
        logits = np.column_stack(logit_columns).astype(np.float64)
    split, groups = column("split"), column("group")
    model = SessionModel(
        name=name, origin=entry.origin, file_name=entry.file_name, source=_read_member(archive, entry.source),
        options=entry.options, fixes=entry.fixes,
        probs=np.column_stack(class_columns).astype(np.float64), labels=labels.astype(np.int64),
        class_names=entry.class_names, logits=logits,
        split=None if split is None else split.astype(str), groups=None if groups is None else groups.astype(str),
        group_column=entry.group_column, demo=entry.demo,
    )
    return model, spent + cells


def _check_directory(archive: zipfile.ZipFile, max_bytes: int | None) -> None:
    """The zip's directory, before any member is read: count, names, encryption, method, unpacked size."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Invalid(f"it has {len(infos)} members (at most {MAX_MEMBERS}).")
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise _Invalid("it holds one member name twice.")
    for info in infos:
        if info.filename != MANIFEST and not _SAFE_MEMBER.match(info.filename):
            raise _Invalid(f"it holds the unexpected member {info.filename[:200]!r}.")
        if info.flag_bits & 0x1:
            raise _Invalid(f"its member {info.filename!r} is encrypted (session files never are).")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _Invalid(f"its member {info.filename!r} uses compression method {info.compress_type}; session "
                           "files are stored or deflated only.")
    unpacked = sum(info.file_size for info in infos)
    if max_bytes is not None and unpacked > max_bytes:
        raise _Invalid(f"it unpacks to {unpacked:,} bytes, over the limit of {max_bytes:,}.")
    if MANIFEST not in names:
        raise _Invalid(f"it has no {MANIFEST}.")


def unpack(data: bytes, *, name: str | None = None, max_bytes: int | None = DEFAULT_MAX_BYTES,
           max_cells: int | None = MAX_CELLS) -> Session:
    """Read a session file written by :func:`pack`, refusing anything else with a clear message.

    Parameters
    ----------
    data : bytes
        The uploaded zip.
    name : str, optional
        The uploaded file's name, for the messages (``the session file 'team.zip' ...``).
    max_bytes : int or None
        Limit on the zip's size, on the sum of its members' declared
        uncompressed sizes (checked before any member is read), on each
        Parquet member's decoded size, and the highest ``max_bytes`` load
        option a model may carry (a session file can tighten the limit of
        its source files, never lift it).
    max_cells : int or None
        Limit on the values all the Parquet members decode to together (one
        budget for the whole file, as for one upload), counted from each
        footer before that member is read (a nested column counts every
        element; see :func:`calib_core.io.limits.parquet_cells`).

    Returns
    -------
    Session

    Raises
    ------
    CalibrationInputError
        Naming the session file and what is wrong: not a zip, too large
        (packed, unpacked or decoded), more than :data:`MAX_MEMBERS` members,
        a member name that is not one of this format's (path traversal, a
        pickle, anything extra), an encrypted member or one compressed other
        than by deflate, a damaged member, a missing member, a manifest that
        is not JSON or breaks the schema (an unknown field or load option, a
        value of the wrong type or range, more than ``MAX_CLASSES`` classes),
        an unknown format version, or unreadable predictions.

    Notes
    -----
    The time is linear in the size of the file: the class cap is checked
    before any member is read, and each Parquet member's columns are looked
    up through one index of their names.
    """
    label = f"the session file {name!r}" if name else "the session file"
    try:
        if max_bytes is not None and len(data) > max_bytes:
            raise _Invalid(f"it is {len(data):,} bytes, over the limit of {max_bytes:,}.")
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
            raise _Invalid("it is not a zip archive (or an incomplete one).") from None
        with archive:
            _check_directory(archive, max_bytes)
            settings, entries = _manifest(archive, max_bytes)
            models, spent = [], 0
            for entry in entries:
                model, spent = _read_model(archive, entry, max_bytes, max_cells, spent)
                models.append(model)
    except _Invalid as exc:
        raise CalibrationInputError(f"{label} cannot be restored: {exc}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError):
        raise CalibrationInputError(f"{label} cannot be restored: it is damaged (a member's compressed data or "
                                    "checksum is wrong; the file was cut short or changed).") from None
    except Exception:  # noqa: BLE001 -- RuntimeError, NotImplementedError, an Arrow error: one message, never raw
        raise CalibrationInputError(f"{label} cannot be restored: a member could not be read (damaged, "
                                    "encrypted or written in a way session files never are).") from None
    return Session(tuple(models), settings)
