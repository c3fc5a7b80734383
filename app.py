"""Calibration studio: the Data page (home). Run with ``streamlit run app.py``.

Load one predictions file per model, or pick demo models; see what the
loader detected and correct the column mapping. The other pages live in
``pages/`` (Streamlit's page discovery; each page sets itself up, so deep
links such as ``/Reliability`` work on a fresh session).
"""
import math

import streamlit as st

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.io import demo_datasets
from calib_core.io.formats import MAX_CELLS, MAX_ROWS
from studio import compute, downloads, layout, state
from calib_core.plot import figures
from studio.text import literal, md, plot_text
from studio.weights_reasons import WEIGHTED_PAGES

UPLOAD_TYPES = ["csv", "tsv", "txt", "gz", "parquet", "pq", "npz", "npy", "zip"]  # .zip: a session file
UPLOADS = "data:uploads"
KEEP_MODELS = "data:keep_models"  # restoring a session file keeps the models loaded (default: replaces them)
RESTORED = "data:restored"  # the note shown once after a session file is restored
DEMOS = "data:demos"
DETECT = "(detect)"
NO_SCORE = "(none)"
NO_GROUP = "(no groups)"
NO_WEIGHTS = "(no weights)"
KINDS = {"auto": "Detect", "probabilities": "Probabilities", "logits": "Logits"}
FIX_HINT = ("Fix the file (or save it as a CSV with a `label` column and one `p_<class>` column per class) "
            "and upload it again. The models already loaded are unchanged.")
FIX_BUTTONS_HINT = "Or load it with one of these fixes (the model's card will say which):"
# The headline of each model (its first picture): the Metrics page's default settings, so both show one number.
HEADLINE_N_BINS, HEADLINE_BINNING, HEADLINE_N_BOOT, HEADLINE_SEED, HEADLINE_ALPHA = 15, "uniform", 200, 0, 0.05
HEADLINE_HEIGHT = 300  # pixels: a thumbnail (calib_core.plot.figures.COMPACT_HEIGHT)
# A badge, not an alert box: the card's first alert stays "read as logits" when the loader guessed that.
# A confidence model's headline: the confidence-vs-correct ECE in the LLM papers' bins and the overconfidence gap.
CONFIDENCE_HEADLINE = ("conf_ece", "conf_overconfidence")
CONFIDENCE_HEADLINE_N_BINS = 10  # the bins of conf_ece, so the thumbnail shows the bins of its number
VERDICT_BADGES = {"miscalibrated": ("orange", ":material/warning:"), "consistent": ("green", ":material/check_circle:"),
                  "inconclusive": ("blue", ":material/help:")}


def _load_upload(file, options: tuple = ()) -> tuple[str | None, state.LoadProblem | None]:
    """Load one uploaded file; any failure becomes a LoadProblem (never a traceback)."""
    try:
        if file.name.lower().endswith(".zip"):  # a session file (Data page's "Download session file")
            keep = bool(st.session_state.get(KEEP_MODELS, False))
            names = state.restore_session(file.getvalue(), file_name=file.name, keep=keep)
            st.session_state[RESTORED] = (f"Restored {len(names)} model{'s' if len(names) != 1 else ''} from "
                                          f"{md(file.name)}" + ("" if keep else ", replacing the models loaded "
                                          "before") + ". Each page opens with the settings saved in it.")
            return ", ".join(names), None
        return state.add_upload(file.name, file.getvalue(), options), None
    except Exception as exc:  # noqa: BLE001 -- the boundary where user files enter the app
        return None, state.load_problem(exc, refused=True)


def _uploaded_file(file_id: str):
    return next((f for f in st.session_state.get(UPLOADS) or [] if f.file_id == file_id), None)


def _apply_fix(file_id: str, fix_key: str) -> None:
    """Load a rejected upload again with the overrides of the fix the user chose."""
    file, record = _uploaded_file(file_id), state.upload_record(file_id)
    if file is None or record is None or record[1] is None:
        return
    fix = next((f for f in record[1].fixes if f.key == fix_key), None)
    if fix is not None:  # on top of the columns chosen under the message, if any
        chosen = st.session_state.get(_refused_key(file_id, "options"), {})
        state.remember_upload(file_id, *_load_upload(file, {**chosen, **fix.kwargs}))


def _refused_key(file_id: str, field: str) -> str:
    return f"data:refused:{file_id}:{field}"


def _apply_columns(file_id: str) -> None:
    """Load a refused upload again with the columns chosen under its message."""
    file = _uploaded_file(file_id)
    if file is None:
        return
    label = st.session_state[_refused_key(file_id, "label")]
    score = st.session_state[_refused_key(file_id, "score")]
    options = {"label_column": None if label == DETECT else label,
               "class_columns": list(st.session_state[_refused_key(file_id, "classes")]) or None,
               "score_column": None if score == NO_SCORE else score,
               "input_kind": st.session_state[_refused_key(file_id, "kind")]}
    options = {k: v for k, v in options.items() if v is not None}
    st.session_state[_refused_key(file_id, "options")] = options
    state.remember_upload(file_id, *_load_upload(file, options))


def _refused_columns_form(file) -> None:
    """The column choices of a refused upload, under its message (it has no card to correct them on)."""
    columns = compute.file_columns(file.getvalue(), file.name)
    if not columns:
        return  # no header could be read: the message says how to mend the file
    with st.expander("Choose the columns"):
        with st.form(_refused_key(file.file_id, "form"), border=False):
            st.caption("Leave a field on *detect* to let the loader decide. The file is read again with these "
                       "settings.")
            left, right = st.columns(2)
            left.selectbox("Label column", [DETECT, *columns], key=_refused_key(file.file_id, "label"),
                           help="The column with the true class of each row (an index or a class name).")
            right.selectbox("Binary score column", [NO_SCORE, *columns], key=_refused_key(file.file_id, "score"),
                            help="For a binary problem stored as one column: P(class 1) or one logit.")
            st.multiselect("Class columns, in class order", columns, key=_refused_key(file.file_id, "classes"),
                           help="One probability (or logit) column per class. Empty: detected from names.")
            st.radio("The class columns hold", list(KINDS), format_func=KINDS.get, horizontal=True,
                     key=_refused_key(file.file_id, "kind"))
            st.form_submit_button("Load with these columns", on_click=_apply_columns, args=(file.file_id,),
                                  icon=":material/refresh:", key=_refused_key(file.file_id, "submit"))


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
                st.session_state["data:demo_error"] = (f"The demo {literal(demo)} could not be loaded: "
                                                       f"{md(state.load_problem(exc).message)}")


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
        "percentages": bool(st.session_state[_mapping_key(name, "percentages")]),
        "group": _chosen_group(name),
        "weight_column": _chosen_weights(name),
    }
    entry = state.get_entries().get(name)
    if entry is not None and dict(entry.options).get("class_names"):
        options["class_names"] = dict(entry.options)["class_names"]  # a confirmed mapping stays
    _reload_with(name, options)


def _reload_with(name: str, options: dict, *, slot: str = "error") -> None:
    error_key = _mapping_key(name, slot)
    try:
        state.reload_model(name, options)
        st.session_state[error_key] = None
        st.session_state[_mapping_key(name, "done")] = True
    except Exception as exc:  # noqa: BLE001 -- user files enter here too: a clean message, models stay
        st.session_state[error_key] = state.load_problem(exc).message


def _refuse_logits(name: str) -> None:
    """The card's "read as probabilities instead": reload with the values taken as written."""
    entry = state.get_entries().get(name)
    if entry is not None:
        _reload_with(name, {**dict(entry.options), "input_kind": "probabilities"}, slot="refuse_error")


def _chosen_group(name: str) -> str | None:
    group = st.session_state.get(_mapping_key(name, "group"), NO_GROUP)
    return None if group == NO_GROUP else group


def _group_select(name: str, entry: state.LoadedModel) -> None:
    """The "Group column" select: the loader's candidate attribute columns (default: none, or the current one)."""
    predictions = entry.predictions
    group_options = [NO_GROUP, *predictions.attribute_columns]
    group_now = dict(entry.options).get("group", predictions.group_column or NO_GROUP)
    st.selectbox("Group column", group_options, key=_mapping_key(name, "group"),
                 index=group_options.index(group_now) if group_now in group_options else 0,
                 help="A column whose values split the rows into groups (a site, a device, an attribute): the "
                      "Groups page shows each group's calibration. Offered: text, true/false and integer columns "
                      "that are not the label, the split or a class column. Empty cells form the group '(missing)'.")


def _chosen_weights(name: str) -> str | None:
    column = st.session_state.get(_mapping_key(name, "weights"), NO_WEIGHTS)
    return None if column == NO_WEIGHTS else column


def _weight_select(name: str, entry: state.LoadedModel) -> None:
    """The "Weight column" select: the file's extra columns of numbers >= 0 (default: none, or the current one)."""
    predictions = entry.predictions
    if predictions.kind == "confidence":  # the loader reads no weight column from a confidence file yet
        return
    candidates = compute.weight_columns(entry.source_bytes(), entry.file_name, tuple(predictions.class_names),
                                        (predictions.group_column,))
    options = [NO_WEIGHTS, *candidates]
    now = dict(entry.options).get("weight_column", NO_WEIGHTS)
    st.selectbox("Weight column", options, key=_mapping_key(name, "weights"),
                 index=options.index(now) if now in options else 0,
                 help="A column of row weights (frequencies: a weight of 2 counts the row twice, 0 leaves it out): "
                      f"the {', '.join(WEIGHTED_PAGES[:-1])} and {WEIGHTED_PAGES[-1]} pages weight their numbers "
                      "(each says which parts are not, and why); the other pages say they show unweighted numbers. "
                      "Offered: the file's other columns whose values are all numbers of at least 0. Never guessed "
                      "from a name: a column `weight` may be a feature.")


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
        right.checkbox("Values are percentages (divide by 100)", value=bool(current.get("percentages", False)),
                       key=_mapping_key(name, "percentages"),
                       help="For files whose rows sum to 100.")
        _group_select(name, entry)
        _weight_select(name, entry)
        st.form_submit_button("Reload with these settings", on_click=_reload, args=(name,),
                              icon=":material/refresh:", key=_mapping_key(name, "submit"))
    _reload_feedback(name)


def _reload_feedback(name: str) -> None:
    error = st.session_state.get(_mapping_key(name, "error"))
    if error:
        st.error(md(f"{name} could not be read with these settings: {error} Choose other columns or "
                    "settings; the model shown is unchanged."))
    elif st.session_state.pop(_mapping_key(name, "done"), False):
        st.success("Reloaded with these settings.")


def _headline_interval(entry: state.LoadedModel, key: str) -> tuple[str, str]:
    """A metric of the headline as (value, interval sentence): the Metrics page's number at its defaults.

    The same cached call with the same arguments as :func:`studio.compute.IntervalJob` at the
    Metrics page's default settings, so both pages show one number (and share the cache entry).
    """
    spec = cc.metrics.registry.get_metric(key)
    try:
        found = compute.metric_interval(entry.predictions, entry.fingerprint, key, HEADLINE_N_BINS,
                                        HEADLINE_BINNING if spec.uses_binning else "uniform", HEADLINE_N_BOOT,
                                        HEADLINE_SEED, HEADLINE_ALPHA)
    except CalibrationInputError as exc:
        return "n/a", f"not available: {state.load_problem(exc).message}"
    level = f"{1 - HEADLINE_ALPHA:.0%}"
    if not (math.isfinite(found.low) and math.isfinite(found.high)):
        return f"{found.estimate:.4f}", f"no {level} interval ({found.note})"
    return f"{found.estimate:.4f}", f"{level} interval [{found.low:.4f}, {found.high:.4f}] ({found.note})"


def _headline(name: str, entry: state.LoadedModel) -> None:
    """The first picture of a model: a small reliability diagram, ECE and ACE with intervals, accuracy and
    calib_core's verdict (consistency resampling), with links to the pages that explain them."""
    predictions = entry.predictions
    stated = predictions.kind == "confidence"
    n_bins = CONFIDENCE_HEADLINE_N_BINS if stated else HEADLINE_N_BINS
    chart, numbers = st.columns([2, 3], gap="medium")
    table = compute.reliability(predictions, entry.fingerprint, n_bins, HEADLINE_BINNING)
    figure = figures.reliability_figure(
        {name: table}, colors=state.model_colors(), height=HEADLINE_HEIGHT, n_rows={name: predictions.n_samples},
        x_title="Stated confidence" if stated else "Top-label confidence",
        title=plot_text(f"Reliability, {n_bins} {HEADLINE_BINNING} bins"),
    )
    chart.plotly_chart(figure, theme=None, key=f"data:headline:{name}",
                       config=downloads.chart_config("Data", name, "reliability", n_bins, HEADLINE_BINNING))
    with numbers:
        verdict = compute.consistency_verdict(predictions, entry.fingerprint, HEADLINE_SEED)
        color, icon = VERDICT_BADGES.get(verdict["verdict"], ("gray", ":material/block:"))
        st.markdown(f"**Verdict** :{color}-badge[{icon} {md(verdict['verdict'])}] {md(verdict['reason'])}")
        cells = st.columns(3)
        for cell, key in zip(cells, CONFIDENCE_HEADLINE if stated else ("ece", "ace")):
            value, interval = _headline_interval(entry, key)
            label = cc.metric_name(key, n_bins=HEADLINE_N_BINS, binning=HEADLINE_BINNING)
            cell.metric(label, value, help=md(f"{label}: {interval}. Same number as on the Metrics page at "
                                              "its default settings."))
            cell.caption(md(interval.split(" (")[0]))
        # Weighted like the ECE beside it (the registry's accuracy entry, as on the Metrics page).
        accuracy = cc.metric_value("conf_accuracy" if stated else "accuracy", predictions.probs, predictions.labels,
                                   sample_weight=predictions.sample_weight)
        weighted = "" if predictions.sample_weight is None else ", each row weighted by its weight column"
        cells[2].metric("Accuracy", f"{accuracy:.1%}",
                        help=("The system's accuracy: the share of answers right" if stated else "Accuracy")
                        + f", on all rows of the file{weighted}.")
        links = st.columns(2)
        params = state.link_params() or None
        links[0].page_link("pages/2_Reliability.py", label="Reliability: bins, classes, bands",
                           icon=":material/show_chart:", query_params=params)
        links[1].page_link("pages/1_Metrics.py", label="Metrics: every metric and test",
                           icon=":material/table_chart:", query_params=params)


def _model_card(name: str, entry: state.LoadedModel) -> None:
    predictions = entry.predictions
    with st.container(border=True):
        if predictions.logit_reason is not None:
            # First line: the values were read as logits without being told; one click refuses.
            told, refuse = st.columns([3, 1], vertical_alignment="center")
            told.warning(md(f"Read as logits, not probabilities, because {predictions.logit_reason}."),
                         icon=":material/swap_horiz:")
            refuse.button("Read as probabilities instead", key=f"data:refuse:{name}", on_click=_refuse_logits,
                          args=(name,), width="stretch")
        refused = st.session_state.pop(_mapping_key(name, "refuse_error"), None)
        if refused:
            st.error(md(f"{name} cannot be read as probabilities: {refused} It stays read as logits."))
        head, button = st.columns([5, 1], vertical_alignment="center")
        origin = "demo" if entry.origin == "demo" else "uploaded file"
        head.markdown(f"#### {md(name)}")
        head.caption(f"{origin} {md(entry.file_name)} · read as {predictions.source_format}")
        button.button("Remove", key=f"data:remove:{name}", on_click=state.remove_model, args=(name,),
                      icon=":material/delete:", width="stretch")
        _headline(name, entry)
        if predictions.kind == "confidence":
            _confidence_card(predictions)
            return
        cells = st.columns(3)
        cells[0].metric("Rows (N)", f"{predictions.n_samples:,}")
        cells[1].metric("Classes (K)", predictions.n_classes)
        cells[2].metric("Input", "logits" if predictions.input_kind == "logits" else "probs",
                        help="Logits are turned into probabilities with a softmax (and kept).")
        if predictions.split is not None:
            counts = {s: int((predictions.split == s).sum()) for s in predictions.split_names}
            split_text = " · ".join(f"{s}: {n:,} rows" for s, n in counts.items())
        else:
            split_text = "none (no split column: every row is analysed together)"
        kind = ("logits, turned into probabilities with a softmax" if predictions.input_kind == "logits"
                else "probabilities")
        shown = ", ".join(predictions.class_names[:20]) + (" …" if predictions.n_classes > 20 else "")
        for fix in entry.fixes:
            st.info(md(f"Fix applied: {fix}."), icon=":material/build:")  # a session file's text, too
        weights = ("" if predictions.sample_weight is None else
                   f"  \n**Row weights:** column {md(predictions.weight_column)} (total "
                   f"{float(predictions.sample_weight.sum()):,.6g})")
        st.markdown(f"**Classes:** {md(shown)}  \n**Input:** {kind}  \n**Splits:** {md(split_text)}{weights}")
        for warning in predictions.warnings:
            st.warning(md(state.app_message(warning)), icon=":material/info:")
        with st.expander("Correct the column mapping"):
            _mapping_form(name, entry)


def _confidence_card(predictions) -> None:
    """The rest of a confidence model's card: what it is (not a two-class problem), its items and the notes."""
    cells = st.columns(3)
    cells[0].metric("Items (N)", f"{predictions.n_samples:,}")
    cells[1].metric("Kind", "confidence",
                    help="A stated confidence per item and whether the answer was right (an LLM, a judge, a "
                         "forecaster): its calibration is that of the confidence against the correctness.")
    cells[2].metric("Answers right", f"{int(predictions.labels.sum()):,}")
    if predictions.split is not None:
        counts = {s: int((predictions.split == s).sum()) for s in predictions.split_names}
        split_text = " · ".join(f"{s}: {n:,} rows" for s, n in counts.items())
    else:
        split_text = "none (no split column: every row is analysed together)"
    st.markdown(
        "**Confidence model:** each row is an answer with its stated confidence and whether it was right; it is "
        "not a two-class problem. The headline ECE uses 10 equal-width bins, the convention of the LLM "
        "calibration papers. Pages that need class probabilities (Per-class, Simplex) do not apply to it.  \n"
        f"**Splits:** {md(split_text)}")
    for warning in predictions.warnings:
        st.warning(md(state.app_message(warning)), icon=":material/info:")


layout.setup_page("Data")

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
        "- **Confidence files** (LLM answers, judges, forecasters): `question_id, confidence, correct` (also `conf`, "
        "`p_correct`, `score`, ... and `is_correct`, `hit`, `acc`, ...; 0/1, true/false or yes/no; confidences as "
        "probabilities, percentages or `85%`), optional `task`/group and `model` columns (one model per system). "
        "Read as a **confidence model**, not a two-class problem.\n"
        "- **NPZ**: arrays `probs` (or `logits`) of shape (N, K) and `labels` of shape (N,), optional `class_names`.\n"
        "- **NPY**: one (N, K+1) array whose first or last column holds the labels.\n"
        "- An optional `split` column (e.g. `calibration` / `test`) lets you analyse one split at a time.\n"
        "- Rows of probabilities must sum to 1. Values are read as logits when the columns are named "
        "`logit_*`, when you choose *Logits* under *Correct the column mapping*, or when most values are far "
        "outside [0, 1] and the rows do not sum to one constant; the model's card then says so first. A file "
        "with a few bad values, rows summing to 100 or to another constant is not guessed at: you get the "
        "offending rows and buttons for the fixes (renormalise rows, divide by 100, read as logits).\n"
        f"- Uploads are limited to {int(st.get_option('server.maxUploadSize'))} MB per file, and to "
        f"{MAX_ROWS:,} rows and {MAX_CELLS:,} cells (rows x columns) once read: a small compressed file can "
        "hold many rows. For larger tables, "
        "run `calib-core report PATH --engine stream --json > summary.json` and view the summary on the "
        "*Large tables* page (no rows leave your machine)."
    )

upload_column, demo_column = st.columns([3, 2])
with upload_column:
    st.file_uploader("Upload predictions files (one per model)", type=UPLOAD_TYPES, accept_multiple_files=True,
                     key=UPLOADS, on_change=_handle_uploads,
                     help="CSV, TSV, Parquet, NPZ or NPY; each file becomes one model. A session file (.zip, "
                          "from *Download session file*) restores its models and settings.")
    st.checkbox("Keep the loaded models when restoring a session file", key=KEEP_MODELS, value=False,
                help="A session file (.zip) replaces the models loaded here and this view's settings by its own. "
                     "Tick this to add its models to those already loaded instead (its settings still apply).")
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
restored = st.session_state.pop(RESTORED, None)
if restored:
    st.success(restored, icon=":material/restore:")
demo_error = st.session_state.pop("data:demo_error", None)
if demo_error:
    st.error(f"{demo_error} Pick another demo or upload a file.")

_handle_uploads()  # also covers uploads whose change callback did not run
for file in st.session_state.get(UPLOADS) or []:
    record = state.upload_record(file.file_id)
    if record is None or record[1] is None:
        continue
    problem = record[1]
    # With fix buttons below, the buttons are the advice; otherwise say how to mend the file.
    st.error(f"**{md(file.name)}** was not loaded: {md(problem.message)}"
             + ("" if problem.fixes else f"\n\n{FIX_HINT}"), icon=":material/error:")
    if problem.mapping:
        st.caption("Proposed mapping of labels to class columns (check it before accepting):")
        st.dataframe({"label": [a for a, _ in problem.mapping], "class column": [b for _, b in problem.mapping]},
                     hide_index=True)
    if problem.fixes:
        st.caption(FIX_BUTTONS_HINT)
        buttons = st.columns(max(3, len(problem.fixes)))  # same button width for one fix or three
        for column, fix in zip(buttons, problem.fixes):
            column.button(md(fix.label), key=f"data:fix:{file.file_id}:{fix.key}", help=md(fix.description),
                          on_click=_apply_fix, args=(file.file_id, fix.key), width="stretch")
    if not file.name.lower().endswith(".zip"):  # a session file has no columns to choose
        _refused_columns_form(file)

entries = state.get_entries()
st.subheader(f"Loaded models ({len(entries)})")
session_problem = state.session_file_problem() if entries else None
if session_problem:
    st.caption(f"No session file can be saved: {literal(session_problem)}")
elif entries:
    st.download_button("Download session file", data=state.session_file_packer(), file_name="calibration-session.zip",
                       mime="application/zip", on_click="ignore", icon=":material/save:", key="data:session_file",
                       help="One zip with every loaded model (predictions as Parquet, the files they came from, "
                            "fixes and load options) and this view's settings. Upload it above, on any machine, "
                            "to restore the same models and settings.")
if not entries:
    st.info("No model loaded. Upload a file above or pick a demo model.")
for model_name, model_entry in entries.items():
    _model_card(model_name, model_entry)
downloads.report_button("everything", state.active_models())
