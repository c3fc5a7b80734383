"""Calibration studio: the Data page (home). Run with ``streamlit run app.py``.

Load one predictions file per model, or pick demo models; see what the
loader detected and correct the column mapping. The other pages live in
``pages/`` (Streamlit's page discovery; each page sets itself up, so deep
links such as ``/Reliability`` work on a fresh session).
"""
import streamlit as st

from calib_core import CalibrationInputError
from calib_core.io import demo_datasets
from studio import compute, layout, state

UPLOAD_TYPES = ["csv", "tsv", "txt", "gz", "parquet", "pq", "npz", "npy"]
UPLOADS = "data:uploads"
DEMOS = "data:demos"
DETECT = "(detect)"
NO_SCORE = "(none)"
KINDS = {"auto": "Detect", "probabilities": "Probabilities", "logits": "Logits"}
FIX_HINT = ("Fix the file (or save it as a CSV with a `label` column and one `p_<class>` column per class) "
            "and upload it again. The models already loaded are unchanged.")


def _load_upload(file) -> tuple[str | None, str | None]:
    try:
        return state.add_upload(file.name, file.getvalue()), None
    except CalibrationInputError as exc:
        return None, str(exc)
    except Exception as exc:  # a reader failing in a way the loader did not foresee
        return None, f"the file could not be read ({type(exc).__name__}: {exc})."


def _handle_uploads() -> None:
    for file in st.session_state.get(UPLOADS) or []:
        if state.upload_record(file.file_id) is None:
            state.remember_upload(file.file_id, *_load_upload(file))


def _demos_changed() -> None:
    wanted = list(st.session_state[DEMOS])
    loaded = {entry.demo: name for name, entry in state.get_entries().items() if entry.origin == "demo"}
    for demo, name in loaded.items():
        if demo not in wanted:
            state.remove_model(name)
    for demo in wanted:
        if demo not in loaded:
            try:
                state.add_demo(demo)
            except CalibrationInputError as exc:
                st.session_state["data:demo_error"] = f"The demo {demo!r} could not be loaded: {exc}"


def _mapping_key(name: str, field: str) -> str:
    return f"data:map:{name}:{field}"


def _reload(name: str) -> None:
    label = st.session_state[_mapping_key(name, "label")]
    score = st.session_state[_mapping_key(name, "score")]
    options = {
        "label_column": None if label == DETECT else label,
        "class_columns": list(st.session_state[_mapping_key(name, "classes")]) or None,
        "score_column": None if score == NO_SCORE else score,
        "input_kind": st.session_state[_mapping_key(name, "kind")],
        "renormalize": bool(st.session_state[_mapping_key(name, "renormalize")]),
    }
    error_key = _mapping_key(name, "error")
    try:
        state.reload_model(name, options)
        st.session_state[error_key] = None
        st.session_state[_mapping_key(name, "done")] = True
    except CalibrationInputError as exc:
        st.session_state[error_key] = str(exc)


def _mapping_form(name: str, entry: state.LoadedModel) -> None:
    columns = compute.file_columns(entry.source_bytes(), entry.file_name)
    current = dict(entry.options)
    with st.form(_mapping_key(name, "form"), border=False):
        st.caption("Leave a field on *detect* to let the loader decide. The file is read again with "
                   "these settings; if that fails, the model stays as it is.")
        left, right = st.columns(2)
        # A plain NPY array has no column names: its label column is given by number.
        label_options = [DETECT, "0", "-1"] if entry.predictions.source_format == "npy" else [DETECT, *columns]
        label_now = current.get("label_column", DETECT)
        left.selectbox("Label column", label_options, key=_mapping_key(name, "label"),
                       index=label_options.index(label_now) if label_now in label_options else 0,
                       help="The column with the true class of each row (an index or a class name).")
        score_options = [NO_SCORE, *columns]
        score_now = current.get("score_column", NO_SCORE)
        right.selectbox("Binary score column", score_options, key=_mapping_key(name, "score"),
                        index=score_options.index(score_now) if score_now in score_options else 0,
                        help="For a binary problem stored as one column: P(class 1) or one logit.")
        st.multiselect("Class columns, in class order", columns, key=_mapping_key(name, "classes"),
                       default=[c for c in current.get("class_columns", ()) if c in columns],
                       help="One probability (or logit) column per class. Empty: detected from names "
                            "such as p_*, prob_*, logit_*.")
        left, right = st.columns(2)
        kind_now = current.get("input_kind", "auto")
        left.radio("The class columns hold", list(KINDS), format_func=KINDS.get, horizontal=True,
                   index=list(KINDS).index(kind_now), key=_mapping_key(name, "kind"))
        right.checkbox("Renormalise rows that do not sum to 1", value=bool(current.get("renormalize", False)),
                       key=_mapping_key(name, "renormalize"),
                       help="Divide each row by its sum (a warning lists how far off the rows were).")
        st.form_submit_button("Reload with these settings", on_click=_reload, args=(name,),
                              icon=":material/refresh:", key=_mapping_key(name, "submit"))
    error = st.session_state.get(_mapping_key(name, "error"))
    if error:
        st.error(f"{name} could not be read with these settings: {error} Choose other columns or settings; "
                 "the model shown above is unchanged.")
    elif st.session_state.pop(_mapping_key(name, "done"), False):
        st.success("Reloaded with these settings.")


def _model_card(name: str, entry: state.LoadedModel) -> None:
    predictions = entry.predictions
    with st.container(border=True):
        head, button = st.columns([5, 1], vertical_alignment="center")
        origin = "demo" if entry.origin == "demo" else "uploaded file"
        head.markdown(f"#### {name}")
        head.caption(f"{origin} `{entry.file_name}` · read as {predictions.source_format}")
        button.button("Remove", key=f"data:remove:{name}", on_click=state.remove_model, args=(name,),
                      icon=":material/delete:", width="stretch")
        cells = st.columns(4)
        cells[0].metric("Rows (N)", f"{predictions.n_samples:,}")
        cells[1].metric("Classes (K)", predictions.n_classes)
        cells[2].metric("Accuracy", f"{predictions.accuracy:.1%}", help="On all rows of the file.")
        cells[3].metric("Input", "logits" if predictions.input_kind == "logits" else "probs",
                        help="Logits are turned into probabilities with a softmax (and kept).")
        if predictions.split is not None:
            counts = {s: int((predictions.split == s).sum()) for s in predictions.split_names}
            split_text = " · ".join(f"{s}: {n:,} rows" for s, n in counts.items())
        else:
            split_text = "none (no `split` column: every row is analysed together)"
        kind = ("logits, turned into probabilities with a softmax" if predictions.input_kind == "logits"
                else "probabilities")
        shown = ", ".join(predictions.class_names[:20]) + (" …" if predictions.n_classes > 20 else "")
        st.markdown(f"**Classes:** {shown}  \n**Input:** {kind}  \n**Splits:** {split_text}")
        for warning in predictions.warnings:
            st.warning(warning, icon=":material/info:")
        with st.expander("Correct the column mapping"):
            _mapping_form(name, entry)


layout.setup_page("Data", ":material/upload_file:")

st.title("Data")
st.markdown(
    "Load the predictions of one or several models: **one file per model**, each with the true label "
    "and one probability (or logit) per class for every row. Or start from a demo model. "
    "Every other page then analyses the loaded models."
)
with st.expander("Which files work?"):
    st.markdown(
        "- **CSV/TSV** (also gzipped) or **Parquet**: a label column (`label`, `y_true`, `target`, ...) and one "
        "column per class (`p_cat`, `p_dog`, ... or `logit_0`, `logit_1`, ...). Labels may be class indices "
        "or class names. A binary problem may have a single score column (P(class 1)).\n"
        "- **NPZ**: arrays `probs` (or `logits`) of shape (N, K) and `labels` of shape (N,), optional `class_names`.\n"
        "- **NPY**: one (N, K+1) array whose first or last column holds the labels.\n"
        "- An optional `split` column (e.g. `calibration` / `test`) lets you analyse one split at a time.\n"
        "- Rows of probabilities must sum to 1; logits are detected from `logit_*` names or from values "
        "outside [0, 1], or set under *Correct the column mapping*.\n"
        f"- Uploads are limited to {int(st.get_option('server.maxUploadSize'))} MB per file. For larger tables, "
        "run `calib-core report PATH --engine stream --json > summary.json` and view the summary on the "
        "*Large tables* page (no rows leave your machine)."
    )

upload_column, demo_column = st.columns([3, 2])
with upload_column:
    st.file_uploader("Upload predictions files (one per model)", type=UPLOAD_TYPES, accept_multiple_files=True,
                     key=UPLOADS, on_change=_handle_uploads,
                     help="CSV, TSV, Parquet, NPZ or NPY; each file becomes one model.")
with demo_column:
    available = demo_datasets()
    if available:
        st.session_state[DEMOS] = [entry.demo for entry in state.get_entries().values()
                                   if entry.origin == "demo" and entry.demo in available]
        st.multiselect("Demo models", list(available), key=DEMOS, on_change=_demos_changed,
                       help="Held-out predictions of scikit-learn models on datasets that ship with "
                            "scikit-learn (digits: 10 classes, wine: 3, breast cancer: 2).")
    else:
        st.caption("No demo files found (the data/demo folder is missing).")
demo_error = st.session_state.pop("data:demo_error", None)
if demo_error:
    st.error(f"{demo_error} Pick another demo or upload a file.")

_handle_uploads()  # also covers uploads whose change callback did not run
for file in st.session_state.get(UPLOADS) or []:
    record = state.upload_record(file.file_id)
    if record is not None and record[1]:
        st.error(f"**{file.name}** was not loaded: {record[1]}\n\n{FIX_HINT}", icon=":material/error:")

entries = state.get_entries()
st.subheader(f"Loaded models ({len(entries)})")
if not entries:
    st.info("No model loaded. Upload a file above or pick a demo model.")
for model_name, model_entry in entries.items():
    _model_card(model_name, model_entry)
