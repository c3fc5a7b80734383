"""The loaded models of a session: the one place that touches them in ``st.session_state``.

Everything lives under the single key :data:`APP_KEY`. Pages read the models
through :func:`active_models` (the rows chosen in the sidebar, only the
models chosen for display) or :func:`get_entries`, and change them through
:func:`add_demo`, :func:`add_upload`, :func:`reload_model` and
:func:`remove_model`; they never poke at session keys themselves.

Shareable links: on a fresh session :func:`ensure_models_loaded` opens the
demos named by ``?demo=a,b`` (or the default demo), the rows named by
``?split=`` and, when some models are hidden, shows only those of
``?models=a&models=b``; after every change :func:`sync_query_params` writes
them back into the URL, so copying it reproduces the view (uploads cannot
travel in a link). The pages' own controls are bound to the URL by
Streamlit itself (``studio.layout.linked``), which reports each value drawn
here (:func:`remember_control`), so a session file holds the controls of
every page, not only the open one's; restoring a session file
(:func:`restore_session`) replaces the models and hands its settings to the
pages through the links (:func:`link_params`, :func:`take_restored`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import numpy as np
import streamlit as st
from streamlit.errors import StreamlitAPIException

from calib_core import CalibrationInputError
from calib_core.io import Predictions, SeveralModelsError, demo_datasets
from calib_core.io.demos import DEMO_GROUP_COLUMNS
from calib_core.io.systems import match_by_id
from calib_core.io.interpret import LoadFix
from studio import compute
from studio.text import literal, md

#: The one ``st.session_state`` key owned by the app.
APP_KEY = "calibration_studio"

#: The demos a fresh session opens without ``?demo=``: three models of one real data set (digits, 10 classes)
#: whose calibration differs visibly, so that every page has something to say on a first visit: Gaussian
#: naive Bayes far too confident, a random forest too timid, logistic regression close to calibrated; each
#: with the group column ``strokes`` for the Groups page. ``CALIB_STUDIO_DEFAULT_DEMOS`` (comma-separated demo
#: names) chooses others: a deployment's own, or the test suite's one model (:func:`default_demos`).
BUILT_IN_DEFAULT_DEMOS = ("digits_gaussian_nb", "digits_random_forest", "digits_logistic_regression")
#: The first default demo.
DEFAULT_DEMO = BUILT_IN_DEFAULT_DEMOS[0]


def default_demos() -> tuple[str, ...]:
    """The demos a fresh session opens: ``CALIB_STUDIO_DEFAULT_DEMOS`` if set, else :data:`BUILT_IN_DEFAULT_DEMOS`."""
    configured = os.environ.get("CALIB_STUDIO_DEFAULT_DEMOS", "")
    return tuple(name.strip() for name in configured.split(",") if name.strip()) or BUILT_IN_DEFAULT_DEMOS

#: Split choice meaning "every row".
ALL_ROWS = "All rows"

#: Widget keys of the shared sidebar (kept in sync with the store).
SPLIT_WIDGET = "studio:split"
SHOWN_WIDGET = "studio:shown_models"


@dataclass(frozen=True)
class LoadedModel:
    """A model as loaded: its predictions and how to load it again.

    Attributes
    ----------
    predictions : Predictions
        Every row of the file.
    fingerprint : str
        Hash of probabilities, labels and class names, computed once at load
        time; the cache key of every computation on this model.
    origin : {"demo", "upload"}
    file_name : str
        The uploaded file's name, or the demo file's name.
    raw : bytes or None
        The uploaded bytes (demos are read again from disk).
    demo : str or None
        The demo name, for ``?demo=`` links.
    options : tuple of (str, value) pairs
        The ``load_predictions`` overrides used (empty: everything detected).
    fixes : tuple of str
        The fixes the user applied to load the file (plain sentences, shown
        on the model's card).
    """

    predictions: Predictions
    fingerprint: str
    origin: str
    file_name: str
    raw: bytes | None = None
    demo: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    fixes: tuple[str, ...] = ()

    def source_bytes(self) -> bytes:
        """The file's bytes (read from disk for demos)."""
        if self.raw is not None:
            return self.raw
        return demo_datasets()[self.demo].read_bytes()


@dataclass(frozen=True)
class ModelView:
    """The rows of one model that the pages analyse (after the split filter)."""

    name: str
    predictions: Predictions
    fingerprint: str
    rows: str


@dataclass(frozen=True)
class LoadProblem:
    """Why a file was not loaded, in the app's words, and the fixes it can offer as buttons.

    Attributes
    ----------
    message : str
        Plain language; names the app's controls, never a Python argument.
    fixes : tuple of calib_core.io.interpret.LoadFix
        One button each (renormalise rows, divide by 100, read as logits,
        accept a proposed label mapping).
    mapping : tuple of (label, column) pairs, optional
        A proposed label-to-column mapping to show for confirmation.
    """

    message: str
    fixes: tuple[LoadFix, ...] = ()
    mapping: tuple[tuple[str, str], ...] | None = None


#: Python argument mentions in calib_core messages -> the control of the app that does it.
_CONTROLS = (
    (r"\s*In Python, `max_rows=None, max_cells=None` lift the limit\.", ""),
    (r"[Pp]ass a larger `max_bytes=`[^,.]*(?:\([^)]*\))?,? or ", ""),
    (r"`max_bytes=`", "a smaller file"),
    (r"[Pp]ass `file_format=` or a `name=` with the file's extension\.?",
     "Give the file its extension (.csv, .tsv, .parquet, .npz or .npy) and upload it again."),
    (r"`file_format=`", "the file's extension"),
    (r"`label_column=(?:0|-1)?`", "‘Label column’ under ‘Correct the column mapping’"),
    (r"`class_columns=`", "‘Class columns’ under ‘Correct the column mapping’"),
    (r"`score_column=(?:'[^']*')?`", "‘Binary score column’ under ‘Correct the column mapping’"),
    (r"`split_column=`|split_column=None", "a column named ‘split’"),
    (r"`input_kind='logits'`|input_kind='logits'", "‘Read as logits’ (or ‘Logits’ under ‘Correct the column mapping’)"),
    (r"`input_kind='probabilities'`|input_kind='probabilities'",
     "‘Probabilities’ under ‘Correct the column mapping’"),
    (r"`renormalize=True`|renormalize=True", "‘Renormalise rows’"),
    (r"`percentages=True`|percentages=True", "‘Divide by 100’"),
    (r"`class_names=[^`]*`", "‘Use this mapping’"),
    (r"`group=`", "‘Group column’ under ‘Correct the column mapping’"),
    (r"`name=`", "the file name"),
    (r"\b[Pp]ass (?=‘|a smaller|the file|a column)", "use "),
    (r"`(\w+)=[^`]*`", "the matching setting under ‘Correct the column mapping’"),
)


#: Where a refused upload's column choices are: under its message (it has no card, so no ‘Correct the column
#: mapping’).
REFUSED_MAPPING = "‘Choose the columns’ below this message"


def app_message(text: str, *, refused: bool = False) -> str:
    """A calib_core message in the app's words: controls instead of Python arguments.

    ``"Pass `renormalize=True` to ..."`` becomes ``"use ‘Renormalise rows’
    to ..."``. Messages carried by :class:`calib_core.io.interpret.PredictionsFileError`
    have a ``plain`` form already; this handles every other message. ``refused``:
    the message refuses an upload, whose column choices are :data:`REFUSED_MAPPING`.
    """
    for pattern, replacement in _CONTROLS:
        text = re.sub(pattern, replacement, text)
    if refused:
        text = text.replace("‘Correct the column mapping’", REFUSED_MAPPING)
    return re.sub(r"(^|[.!?]\s+)use ", lambda m: m.group(1) + "Use ", text)


def load_problem(exc: BaseException, *, refused: bool = False) -> LoadProblem:
    """The :class:`LoadProblem` of a loading failure (any exception, never shown raw); ``refused``: of an upload
    that did not load (see :func:`app_message`)."""
    if isinstance(exc, CalibrationInputError):
        fixes = tuple(getattr(exc, "fixes", ()) or ())
        mapping = getattr(exc, "proposed_mapping", None)
        return LoadProblem(app_message(str(getattr(exc, "plain", None) or exc), refused=refused), fixes, mapping)
    return LoadProblem("the file could not be read: it is damaged or not a predictions table in a "
                       "supported format (CSV, TSV, Parquet, NPZ or NPY).")


def fix_sentence(options: dict[str, Any] | tuple[tuple[str, Any], ...]) -> tuple[str, ...]:
    """Plain sentences for the value fixes among ``load_predictions`` overrides (for model cards)."""
    chosen = dict(options)
    sentences = []
    if chosen.get("percentages"):
        sentences.append("values divided by 100 (read as percentages)")
    if chosen.get("renormalize"):
        sentences.append("rows renormalised to sum to 1")
    if chosen.get("input_kind") == "logits":
        sentences.append("values read as logits and turned into probabilities with a softmax")
    if chosen.get("input_kind") == "probabilities":
        sentences.append("values read as probabilities (not as logits)")
    if chosen.get("class_names"):
        sentences.append("labels mapped to the class columns as confirmed")
    return tuple(sentences)


@dataclass
class _Store:
    models: dict[str, LoadedModel] = field(default_factory=dict)
    split: str = ALL_ROWS
    hidden: set[str] = field(default_factory=set)
    started: bool = False
    # file_id of every upload already handled -> (model name or None, LoadProblem or None)
    uploads: dict[str, tuple[str | None, LoadProblem | None]] = field(default_factory=dict)
    views: dict[tuple[str, str, str], ModelView] = field(default_factory=dict)
    # URL values of every bound control drawn in this session (None: at its default), any page; see remember_control
    controls: dict[str, list[str] | None] = field(default_factory=dict)
    # Settings of a restored session file that no page has drawn yet (carried on links; see take_restored)
    restored: dict[str, list[str]] = field(default_factory=dict)


def _store() -> _Store:
    if APP_KEY not in st.session_state:
        st.session_state[APP_KEY] = _Store()
    return st.session_state[APP_KEY]


def fingerprint(predictions: Predictions) -> str:
    """SHA-1 of the probabilities, logits (when kept), labels and class names (the cache key of a model).

    The logits count: methods such as vector scaling fit on them, so the same
    probabilities loaded with and without logits must not share cached fits.
    """
    digest = hashlib.sha1()
    digest.update(str(predictions.probs.shape).encode())
    digest.update(predictions.probs.tobytes())
    digest.update(b"logits" + predictions.logits.tobytes() if predictions.logits is not None else b"no logits")
    digest.update(predictions.labels.astype("int64").tobytes())
    digest.update("\x1f".join(predictions.class_names).encode())
    if predictions.kind != "classes":  # a confidence model is another analysis than a 2-class model of its matrix
        digest.update(b"kind" + predictions.kind.encode())
    if predictions.groups is not None:  # another group column (Data page) is another analysis on the Groups page
        # The labels as text, not the array's bytes: their width (<U6, <U9) depends on how the file was read.
        digest.update(b"groups" + str(predictions.group_column).encode()
                      + "\x1f".join(map(str, predictions.groups.tolist())).encode())
    if predictions.sample_weight is not None:  # weighted rows (Data page's weight column) are another analysis
        digest.update(b"weights" + str(predictions.weight_column).encode()
                      + np.ascontiguousarray(predictions.sample_weight, dtype=np.float64).tobytes())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- reading

def get_entries() -> dict[str, LoadedModel]:
    """Every loaded model with how it was loaded, in loading order."""
    return dict(_store().models)


def model_colors() -> dict[str, int]:
    """A stable colour index per loaded model (its loading position), for every chart."""
    return {name: i for i, name in enumerate(_store().models)}


def split_options() -> list[str]:
    """:data:`ALL_ROWS` followed by every split name found in the loaded models."""
    names: dict[str, None] = {}
    for model in _store().models.values():
        names.update(dict.fromkeys(model.predictions.split_names))
    return [ALL_ROWS, *names]


def get_split() -> str:
    """The split chosen in the sidebar (:data:`ALL_ROWS` if none)."""
    store = _store()
    if store.split not in split_options():
        store.split = ALL_ROWS
    return store.split


def set_split(split: str) -> None:
    """Analyse only the rows of ``split`` (or every row with :data:`ALL_ROWS`)."""
    if split not in split_options():
        raise CalibrationInputError(f"unknown split {split!r}; choose one of {', '.join(split_options())}.")
    _store().split = split
    sync_query_params()


def shown_models() -> list[str]:
    """Names of the models chosen for display (all unless some were hidden)."""
    store = _store()
    return [name for name in store.models if name not in store.hidden]


def set_shown_models(names: list[str]) -> None:
    """Show only ``names`` on the analysis pages (the others stay loaded)."""
    store = _store()
    store.hidden = {name for name in store.models if name not in set(names)}
    sync_query_params()


def active_models() -> list[ModelView]:
    """The shown models restricted to the chosen split, ready for the pages.

    A model without that split keeps all its rows and says so in ``rows``.
    """
    store = _store()
    split = get_split()
    views = []
    for name in shown_models():
        model = store.models[name]
        key = (name, model.fingerprint, split)
        if key not in store.views:
            predictions = model.predictions
            if split != ALL_ROWS and split in predictions.split_names:
                view = ModelView(name, predictions.select_split(split), f"{model.fingerprint}/{split}",
                                 f"{split} rows")
            elif split != ALL_ROWS:
                view = ModelView(name, predictions, model.fingerprint, f"all rows (no {split!r} split)")
            else:
                view = ModelView(name, predictions, model.fingerprint, "all rows")
            store.views[key] = view
        views.append(store.views[key])
    return views


# ----------------------------------------------------------------------------- changing

def _unique_name(base: str, *, replacing: str | None = None) -> str:
    taken = set(_store().models) - {replacing}
    name, i = base, 2
    while name in taken:
        name, i = f"{base} ({i})", i + 1
    return name


def _add(model: LoadedModel) -> str:
    store = _store()
    name = _unique_name(model.predictions.name)
    if name != model.predictions.name:
        model = dataclasses.replace(model, predictions=dataclasses.replace(model.predictions, name=name))
    store.models[name] = model
    sync_query_params()
    return name


def add_model(predictions: Predictions, *, origin: str = "upload", file_name: str | None = None,
              raw: bytes | None = None, demo: str | None = None,
              options: tuple[tuple[str, Any], ...] = ()) -> str:
    """Add already loaded predictions; returns the (possibly de-duplicated) model name."""
    return _add(LoadedModel(predictions, fingerprint(predictions), origin,
                            file_name or predictions.name, raw, demo, options, fix_sentence(options)))


def _freeze(options: dict[str, Any] | tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in dict(options).items()
                        if _is_override(v)))


def read_user_file(raw: bytes, file_name: str, options: tuple[tuple[str, Any], ...] = ()) -> Predictions:
    """The one boundary where user files enter the app.

    Every failure, whatever its type, leaves as a CalibrationInputError with
    a clean message (the loader already does this; this is the app's own
    guarantee), so no traceback or server path reaches a visitor and the
    loaded models stay as they are.
    """
    try:
        return compute.load_file(raw, file_name, options)
    except CalibrationInputError:
        raise
    except Exception as exc:
        raise CalibrationInputError(load_problem(exc).message) from exc


def add_demo(name: str) -> str:
    """Load the bundled demo ``name``; raises CalibrationInputError for unknown names."""
    predictions = compute.load_demo(name)
    # The demo's group column (DEMO_GROUP_COLUMNS) is a load option like an upload's: a session file stores it, so
    # that reading the demo again gives the same predictions, groups included.
    group = DEMO_GROUP_COLUMNS.get(name)
    return add_model(predictions, origin="demo", file_name=demo_datasets()[name].name, demo=name,
                     options=_freeze({"group": group}) if group else ())


def add_upload(file_name: str, raw: bytes, options: dict[str, Any] | tuple[tuple[str, Any], ...] = ()) -> str:
    """Load an uploaded file (one model), with ``load_predictions`` overrides such as a fix's.

    Raises CalibrationInputError for a bad file (see :func:`read_user_file`).
    """
    frozen = _freeze(options)
    try:
        predictions = read_user_file(raw, file_name, frozen)
    except SeveralModelsError as several:  # a long confidence file: one model per system, rows matched by id
        names = [add_model(model, origin="upload", file_name=file_name, raw=raw, options=frozen)
                 for model in match_by_id(several.models)]
        _show_uploads_first()
        return ", ".join(names)
    name = add_model(predictions, origin="upload", file_name=file_name, raw=raw, options=frozen)
    _show_uploads_first()
    return name


def _show_uploads_first() -> None:
    """After an upload the pages show the uploads: the demos stay loaded but hidden (one click away).

    A demo beside an upload is usually the default one the app opened with;
    left shown, pages that compare models would put the visitor's model
    beside a demo of other classes, or not show it at all.
    """
    store = _store()
    demos = {name for name, model in store.models.items() if model.origin == "demo"}
    if demos and len(demos) < len(store.models):
        store.hidden |= demos
        sync_query_params()


def reload_model(name: str, options: dict[str, Any]) -> None:
    """Load model ``name`` again from its file with ``load_predictions`` overrides.

    Raises CalibrationInputError when the file cannot be read that way; the
    model then stays as it was.
    """
    store = _store()
    model = store.models[name]
    frozen = _freeze(options)
    predictions = read_user_file(model.source_bytes(), model.file_name, frozen)
    predictions = dataclasses.replace(predictions, name=name)
    store.models[name] = dataclasses.replace(model, predictions=predictions,
                                             fingerprint=fingerprint(predictions), options=frozen,
                                             fixes=fix_sentence(frozen))


def _is_override(value: Any) -> bool:
    """False for the values that mean "detect it" (None, "auto", False, empty lists)."""
    if value is None or value is False:
        return False
    if isinstance(value, str):
        return value != "auto"
    if isinstance(value, (list, tuple)):
        return len(value) > 0
    return True


def remove_model(name: str) -> None:
    """Unload model ``name`` (no error if it is not loaded)."""
    store = _store()
    store.models.pop(name, None)
    store.hidden.discard(name)
    sync_query_params()


def remember_upload(file_id: str, model_name: str | None, problem: LoadProblem | None) -> None:
    """Record that an uploaded file was handled (so a rerun does not load it twice)."""
    _store().uploads[file_id] = (model_name, problem)


def upload_record(file_id: str) -> tuple[str | None, LoadProblem | None] | None:
    """``(model name, problem)`` for an upload already handled, else None."""
    return _store().uploads.get(file_id)


# ----------------------------------------------------------------------------- links

def _query_demos() -> list[str]:
    names: list[str] = []
    for value in st.query_params.get_all("demo"):
        names.extend(part.strip() for part in value.split(",") if part.strip())
    return list(dict.fromkeys(names))


def ensure_models_loaded() -> None:
    """Load the demos of ``?demo=`` (or the default demos, :func:`default_demos`) once per fresh session.

    An unknown demo name ends in ``st.error`` listing the available names;
    the app then opens the default demo instead.
    """
    store = _store()
    if store.started:
        return
    store.started = True
    # Read the link before loading anything: loading rewrites the query parameters.
    available = demo_datasets()
    wanted = _query_demos()
    split = st.query_params.get("split")
    shown = list(dict.fromkeys(st.query_params.get_all("models")))
    unknown = [name for name in wanted if name not in available]
    if unknown:
        st.error(
            f"The link asks for the demo {', '.join(literal(n) for n in unknown)}, which does not exist. "
            f"Available demos: {', '.join(available) or 'none'}. Pick one on the Data page or fix the "
            "`?demo=` part of the link.",
            icon=":material/link_off:",
        )
    known = [name for name in wanted if name in available]
    if not known and available:
        known = [name for name in default_demos() if name in available] or [next(iter(available))]
    for name in known:
        try:
            add_demo(name)
        except CalibrationInputError as exc:  # a damaged demo file must not break the app
            st.error(f"The demo {literal(name)} could not be loaded: {md(load_problem(exc).message)} "
                     "Upload your own file on the Data page.")
    if split:
        if split in split_options():
            store.split = split
        else:
            st.warning(f"The link asks for the split {literal(split)}, which the loaded models do not have; "
                       "showing all rows. Choose the rows in the sidebar.")
    if shown:
        known_shown = [name for name in shown if name in store.models]
        if known_shown:
            store.hidden = {name for name in store.models if name not in known_shown}
        if len(known_shown) < len(shown):
            missing = ", ".join(name for name in shown if name not in store.models)
            st.info(f"The link shows models that are not loaded ({md(missing)}); "
                    + ("showing the others." if known_shown else "showing every loaded model.")
                    + " Choose them under *Models shown* in the sidebar.", icon=":material/link_off:")
    sync_query_params()


def sync_query_params() -> None:
    """Write the loaded demos (``?demo=``), the split (``?split=``) and the shown models into the URL.

    ``?models=`` (one entry per model) appears only while some loaded model is hidden.
    """
    store = _store()
    demos = ",".join(model.demo for model in store.models.values() if model.origin == "demo" and model.demo)
    split = store.split if store.split != ALL_ROWS else ""
    shown = [name for name in store.models if name not in store.hidden] if store.hidden else []
    for key, value in (("demo", demos), ("split", split), ("models", shown)):
        current = st.query_params.get_all(key) if key in st.query_params else []
        if value and current != (value if isinstance(value, list) else [value]):
            st.query_params[key] = value
        elif not value and key in st.query_params:
            del st.query_params[key]


#: The query parameters that are not bound to a page's widgets (see :func:`sync_query_params`).
LINK_KEYS = ("demo", "split", "models")


def link_params() -> dict[str, str | list[str]]:
    """The query parameters to carry on links between pages.

    Besides ``demo``, ``split`` and ``models``: the settings of a restored
    session file that no page has drawn yet, so that each page opened from a
    link seeds its controls from them, as from a shared link.
    """
    params: dict[str, str | list[str]] = {key: (values if len(values) > 1 else values[0]) for key in LINK_KEYS
                                          if (values := st.query_params.get_all(key))}
    for key, values in _store().restored.items():
        if values and key not in params:
            params[key] = values if len(values) > 1 else values[0]
    return params


def remember_control(key: str, url_values: list[str] | None) -> None:
    """Record the URL value of bound control ``key`` as drawn (None: at its default), for session files.

    A page's controls are in the URL only while that page is open; the session
    file holds the controls of every page drawn in the session (:func:`view_settings`).
    """
    _store().controls[key] = None if url_values is None else list(url_values)


def take_restored(key: str) -> list[str] | None:
    """The restored session file's value of bound control ``key``, once (None when it has none)."""
    return _store().restored.pop(key, None)


def view_settings() -> dict[str, list[str]]:
    """The view's settings for a session file: ``demo``/``split``/``models``, every bound control of every page
    drawn in this session that is not at its default, and the settings of a restored file not yet drawn."""
    store = _store()
    settings = {key: list(st.query_params.get_all(key)) for key in st.query_params}
    settings.update(store.restored)
    for key, values in store.controls.items():
        if values is None:
            settings.pop(key, None)
        else:
            settings[key] = list(values)
    return settings


# ----------------------------------------------------------------------------- session files

def _session_model(name: str, m: LoadedModel, source: bytes):
    """The :class:`studio.session_file.SessionModel` of a loaded model."""
    from studio import session_file

    return session_file.SessionModel(
        name=name, origin=m.origin, file_name=m.file_name, source=source, options=m.options,
        fixes=m.fixes, probs=m.predictions.probs, labels=m.predictions.labels,
        class_names=m.predictions.class_names, logits=m.predictions.logits, split=m.predictions.split,
        groups=m.predictions.groups, group_column=m.predictions.group_column, demo=m.demo)


def session_file_problem() -> str | None:
    """Why the loaded models cannot be saved in a session file (:func:`studio.session_file.unstorable`), or None."""
    from studio import session_file

    return next((problem for name, m in _store().models.items()
                 if (problem := session_file.unstorable(_session_model(name, m, b"")))), None)


def session_file_packer() -> Callable[[], bytes]:
    """The session file (zip) of every loaded model and the view's settings (:func:`view_settings`),
    as a function for ``st.download_button(data=...)``, which calls it only when the button is clicked.

    The models and parameters are read now (in the script run); the packing, about 0.6 s for 100,000 x 10
    rows, happens on the click, once per set of models and parameters (kept in the session).
    """
    from studio import session_file

    store = _store()
    settings = view_settings()
    key = (tuple((n, m.fingerprint, m.options) for n, m in store.models.items()), repr(sorted(settings.items())))
    # A dict of the session: the click's thread has no script-run context, so it writes here, not to session_state.
    packed = st.session_state.setdefault(APP_KEY + ":session_file", {})
    models = dict(store.models)

    def pack() -> bytes:
        if key not in packed:
            records = [_session_model(name, m, m.source_bytes()) for name, m in models.items()]
            packed.clear()  # only the newest set of models is kept
            packed[key] = session_file.pack(records, settings)
        return packed[key]

    return pack


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b))


def restore_session(raw: bytes, *, file_name: str | None = None, keep: bool = False) -> list[str]:
    """Load the models and settings of a session file; returns the names of the models restored.

    Every model is read again from its stored source file with its stored
    (schema-checked) options, through the same path as an upload
    (:func:`read_user_file`), and must give exactly the predictions stored
    beside it. Only then, all or none: the models loaded so far are removed
    (unless ``keep``: then a model already loaded under its name with the
    same predictions, such as the default demo, is kept, not loaded twice),
    the restored models are added, and the view's settings replace the
    visitor's: every bound control is reset, and the file's values are put
    into the URL and kept until a page draws its control (:func:`link_params`,
    :func:`take_restored`), so each page seeds its controls from them as from
    a link, with the same note for a value it cannot take. The fixes shown on
    the cards are derived from the checked options, never taken from the
    file's texts. Raises CalibrationInputError, naming the session file, for
    any bad file.
    """
    from studio import session_file

    label = f"the session file {file_name!r}" if file_name else "the session file"
    limit = min(session_file.DEFAULT_MAX_BYTES, int(st.get_option("server.maxUploadSize")) * 1024 * 1024)
    session = session_file.unpack(raw, name=file_name, max_bytes=limit)
    loaded = []
    for model in session.models:
        try:
            predictions = read_user_file(model.source, model.file_name, model.options)
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"{label} cannot be restored: its model {model.name!r} could not be read "
                                        f"again from its stored file: {load_problem(exc).message}") from None
        if not (predictions.class_names == model.class_names and _same(predictions.probs, model.probs)
                and _same(predictions.labels.astype(np.int64), model.labels) and _same(predictions.logits, model.logits)
                and _same(predictions.split, model.split) and _same(predictions.groups, model.groups)):
            raise CalibrationInputError(f"{label} cannot be restored: the predictions of its model {model.name!r} "
                                        "do not match the file stored with them; it was changed after it was saved.")
        loaded.append((model, dataclasses.replace(predictions, name=model.name)))
    store = _store()
    if not keep:
        store.models.clear()
        store.hidden.clear()
        store.views.clear()
    names = []
    for model, predictions in loaded:
        present = store.models.get(model.name)
        if present is not None and present.fingerprint == fingerprint(predictions):
            names.append(model.name)  # already loaded (e.g. the default demo): restore it once, not twice
            continue
        demo = model.demo if (model.origin == "demo" and model.demo in demo_datasets()
                              and demo_datasets()[model.demo].read_bytes() == model.source) else None
        names.append(_add(LoadedModel(predictions, fingerprint(predictions), "demo" if demo else "upload",
                                      model.file_name, None if demo else model.source, demo, model.options,
                                      fix_sentence(model.options))))
    _restore_settings(session.settings)
    return names


def _restore_settings(settings: dict[str, list[str]]) -> None:
    """Replace the view's settings by a session file's (see :func:`restore_session`)."""
    store = _store()
    controls = {key: values for key, values in settings.items() if key not in LINK_KEYS and values}
    # Every bound control drawn in this session goes back to its default (or the file's value): its page then
    # draws it afresh, seeded from the URL like a link's. Only those keys: a name in the file is never used to
    # delete anything else from the session.
    for key in store.controls:
        if key in st.session_state:
            del st.session_state[key]
    for key in [k for k in st.query_params if k not in LINK_KEYS]:
        del st.query_params[key]
    store.controls = {}
    store.restored = dict(controls)
    for key, values in controls.items():
        try:
            st.query_params[key] = values if len(values) > 1 else values[0]
        except StreamlitAPIException:  # a name Streamlit keeps for itself: the links still carry the value
            pass
    split = (settings.get("split") or [ALL_ROWS])[0]
    store.split = split if split in split_options() else ALL_ROWS
    shown = settings.get("models") or []
    if shown and any(name in store.models for name in shown):
        store.hidden = {name for name in store.models if name not in shown}
    store.started = True
    sync_query_params()
