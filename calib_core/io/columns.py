"""Column rules: which column (or NPZ array) holds the labels, the classes, the split and the group.

A reader of :mod:`calib_core.io.formats` gives a frame or a dict of arrays;
the functions here find the label column (by name, :data:`LABEL_NAMES`)
and the class columns, by names first and by values only where names
cannot tell: the columns the caller names; else the columns sharing a class
prefix such as ``p_`` or ``logit_`` (:data:`CLASS_PREFIXES`); else, when the
labels are names, the columns they name (``Dole``, ``p_Dole``); else the
numeric columns, less integer columns beside float ones (attributes); else a
lone ``confidence`` column as a binary score. Identifiers
(:data:`IDENTIFIER_NAMES`, ``*_id``, distinct consecutive integers) and known
non-class columns (:data:`NON_CLASS_NAMES`) are never classes; numeric
columns left over are listed as attributes. The streaming engines apply the
same rules to their first batch. The parts go to :mod:`calib_core.io.interpret`
as :class:`Parts`; class columns named ``logit_*`` record why they are logits.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.formats import (
    MAX_CLASSES,
    _as_text,
    _check_column_count,
    _label_text,
    plain_row_label,
    Table,
)
from calib_core.validation import ROW_SUM_TOLERANCE, CalibrationInputError

__all__ = ["LABEL_NAMES", "CLASS_PREFIXES", "NON_CLASS_NAMES", "IDENTIFIER_NAMES", "MISSING_GROUP", "Parts", "group_text",
           "split_mask", "table_parts"]

#: Column names (lower-case) taken as the label column, in order of preference.
LABEL_NAMES = (
    "label", "labels", "y_true", "true_label", "true_labels", "target", "targets",
    "y", "class", "truth", "ground_truth", "gt", "true_class", "true", "y_test",
    "actual", "outcome",
)

#: Prefixes (lower-case) that mark a column as one class's probability or logit.
CLASS_PREFIXES = (
    "p_", "prob_", "proba_", "probs_", "probability_", "prob", "y_prob_", "y_proba_",
    "score_", "scores_", "logit_", "logits_", "class_",
)
_LOGIT_PREFIXES = frozenset({"logit_", "logits_"})

#: Column names (lower-case) that never hold a class's probability.
NON_CLASS_NAMES = frozenset({
    "split", "id", "idx", "index", "row", "row_id", "rowid", "sample", "sample_id",
    "sample_idx", "uid", "uuid", "fold", "weight", "weights", "sample_weight", "group",
    "groups", "pred", "preds", "prediction", "predictions", "predicted", "predicted_label",
    "predicted_class", "pred_label", "pred_class", "y_pred", "y_hat", "yhat", "confidence",
    "conf", "max_prob", "seed", "epoch", "model", "dataset", "filename", "file", "path",
    "image", "image_id", "name",
})

# NPZ array names (lower-case), in order of preference.
_NPZ_PROB_KEYS = ("probs", "probabilities", "proba", "prob", "y_prob", "y_proba", "p",
                  "predictions", "preds", "softmax", "scores", "score", "y_score",
                  "outputs", "output", "confidences")
_NPZ_LOGIT_KEYS = ("logits", "logit")
_NPZ_LABEL_KEYS = ("labels", "label", "y_true", "y", "targets", "target", "true",
                   "truth", "ground_truth", "gt", "true_labels")
_NPZ_NAME_KEYS = ("class_names", "classes", "names", "label_names", "target_names")

#: The group of rows whose group column is empty (NaN, "", "NA", ...): they are
#: kept, as a group of their own, and a note says how many there are.
MISSING_GROUP = "(missing)"


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a 200,000-digit cell stays readable)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 5]}...({len(text):,} characters)"


def _shown(items: Sequence[Any], limit: int = 6, *, quote: bool = True) -> str:
    """At most ``limit`` items joined by commas, then "..." (messages stay short for huge files)."""
    head = [_short(x) if quote else str(x)[:60] for x in list(items[:limit])]
    return ", ".join(head) + (", ..." if len(items) > limit else "")


# ---------------------------------------------------------------------------
# Layout resolution
# ---------------------------------------------------------------------------

@dataclass
class Parts:
    """What a reader found, before interpretation."""

    scores: NDArray[np.float64]  # (N, K) or (N, 1) for one binary column
    raw_labels: NDArray[Any]
    score_names: list[str]  # column names (for messages), one per score column
    class_names: list[str] | None  # names derived from columns, if any
    label_name: str
    logit_reason: str | None  # why the names say "logits", e.g. "columns named logit_*"
    split: NDArray[Any] | None
    row_label: Callable[[int], str]
    notes: list[str]
    extra_logits: NDArray[np.float64] | None = None  # NPZ logits stored next to probabilities
    # The label cells as written (CSV), read only when pandas found missing labels: "NA",
    # "none", "null" may be class names.
    raw_label_text: Callable[[], NDArray[Any]] | None = None
    inferred_logit_reason: str | None = None  # set by interpret_scores when it read logits untold
    groups: NDArray[np.str_] | None = None  # the group column's values as text (group=)
    group_name: str | None = None
    attributes: list[str] = field(default_factory=list)  # candidate group columns


def _find_column(columns: Sequence[str], wanted: str, what: str, override_name: str) -> str:
    if wanted in columns:
        return wanted
    lower = {c.lower(): c for c in columns}
    if str(wanted).strip().lower() in lower:
        return lower[str(wanted).strip().lower()]
    raise CalibrationInputError(
        f"{what} {wanted!r} (from `{override_name}=`) is not a column; the columns are: "
        f"{', '.join(repr(c) for c in columns)}."
    )


def _has_prefix(column: str, prefix: str) -> bool:
    if not column.lower().startswith(prefix) or len(column) == len(prefix):
        return False
    # "prob" without "_" only before a number (prob0, prob1): "proba" is not class "a".
    return prefix.endswith("_") or column[len(prefix):].isdigit()


def _best_prefix(columns: Sequence[str]) -> tuple[str, int] | None:
    """The class prefix most columns share (the longer prefix on ties) and its count."""
    best: tuple[int, int, str] | None = None
    for prefix in CLASS_PREFIXES:
        hits = sum(1 for c in columns if _has_prefix(c, prefix))
        if hits and (best is None or (hits, len(prefix)) > best[:2]):
            best = (hits, len(prefix), prefix)
    return None if best is None else (best[2], best[0])


def _strip_common_prefix(columns: Sequence[str]) -> tuple[list[str], str | None]:
    """Class names from columns that all share one known prefix (``p_cat`` -> ``cat``)."""
    found = _best_prefix(columns)
    if found is None or found[1] != len(columns):
        return list(columns), None
    prefix = found[0]
    return [c[len(prefix):] for c in columns], prefix


def _too_many_classes(n_classes: int, display: str) -> CalibrationInputError:
    return CalibrationInputError(
        f"{display} has {n_classes:,} class columns; at most {MAX_CLASSES:,} classes are supported. "
        "Keep one column per class you want to analyse (or group rare classes), then load it again."
    )


def _to_numeric(values: pd.Series) -> pd.Series:
    """``pd.to_numeric(errors="coerce")`` that also survives numbers too long for a float.

    pandas raises OverflowError on a cell of 400 digits; Python's ``float``
    reads it as infinity, which the finiteness check then reports by row.
    """
    try:
        return pd.to_numeric(values, errors="coerce")
    except (OverflowError, TypeError, ValueError):
        def one(value: Any) -> float:
            try:
                return float(value)
            except (TypeError, ValueError, OverflowError):
                return float("nan")
        return pd.Series([one(v) for v in values], index=values.index, dtype=np.float64)


def group_text(values: pd.Series) -> tuple[NDArray[np.str_], int]:
    """A group column as text, and how many rows had no value (they become :data:`MISSING_GROUP`).

    Whole floats are written as integers (a column of integers with a gap is
    read as floats: group ``3``, not ``3.0``); text is stripped; NaN, None
    and blank cells are missing.
    """
    missing = values.isna().to_numpy()
    present = values[~missing].infer_objects()
    if present.dtype.kind == "f" and present.size and bool((present == np.round(present)).all()):
        present = present.astype(np.int64)
    text = _as_text(present).str.strip()
    blank = (text == "").to_numpy()
    out = np.full(values.shape[0], MISSING_GROUP, dtype=object)
    out[np.flatnonzero(~missing)[~blank]] = text[~blank].to_numpy()
    n_missing = int(missing.sum() + blank.sum())
    return out.astype(str), n_missing


def _note_missing_groups(n_missing: int, column: str, notes: list[str]) -> None:
    if n_missing:
        notes.append(f"{n_missing} rows have no value in the group column {column!r}; they form the group "
                     f"{MISSING_GROUP!r}.")


def _is_attribute(values: pd.Series) -> bool:
    """Whether a column could be a group: text, true/false, categories or integers, not all empty."""
    kind = values.dtype.kind
    if kind == "f" or kind == "c" or kind == "M" or kind == "m":
        return False
    return not bool(values.isna().all())


def _bad_numeric_value(values: pd.Series) -> tuple[int, Any] | None:
    """First row whose value is present but not a number."""
    as_number = _to_numeric(values)
    bad = as_number.isna().to_numpy() & values.notna().to_numpy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        # Strings such as "NaN" or "" count as missing, not as bad text.
        bad &= ~_as_text(values).str.strip().str.lower().isin(
            ["", "nan", "na", "n/a", "null", "none"]).to_numpy()
    rows = np.flatnonzero(bad)
    return (int(rows[0]), values.iloc[int(rows[0])]) if rows.size else None


def _is_number_column(values: pd.Series) -> bool:
    return values.dtype.kind in "iuf"


#: Column names (lower-case) of row identifiers: never a score or a class, whatever they hold.
IDENTIFIER_NAMES = frozenset({
    "id", "idx", "index", "row", "rowid", "row_id", "row_idx", "row_index", "row_number", "row_num", "rownum",
    "uid", "uuid", "key", "sample", "sample_id", "sample_idx", "sample_index", "record", "record_id",
})
_IDENTIFIER_PATTERN = re.compile(r"(?:^|[_\-\s.])(?:id|idx|index|uid|uuid|key)$|^(?:id|idx)[_\-\s.]")
_CAMEL_ID = re.compile(r"[a-z0-9](?:ID|Id|Idx)$")  # questionId, QuestionID

#: Columns read as the one score of a binary problem when nothing else can be (`question_id,confidence,label`).
_CONFIDENCE_NAMES = ("confidence", "conf")


def _is_identifier(column: str, values: pd.Series | None) -> bool:
    """Whether a column identifies rows: named so (``id``, ``*_id``, ``index``, ``row``, ...) or holding
    distinct consecutive integers (at least 3 rows: two rows 0/1 may be hard probabilities)."""
    name = column.strip()
    if name.lower() in IDENTIFIER_NAMES or _IDENTIFIER_PATTERN.search(name.lower()) or _CAMEL_ID.search(name):
        return True
    if values is None or values.dtype.kind not in "iu" or values.shape[0] < 3:
        return False
    array = values.to_numpy()
    low, high = int(array.min()), int(array.max())
    return high - low == array.shape[0] - 1 and np.unique(array).shape[0] == array.shape[0]


def _describe(values: pd.Series, *, identifier: bool = False) -> str:
    """What a column not used as a class holds, in a few words: ``integers 1-7``."""
    kind = values.dtype.kind
    if kind in "iu" and values.shape[0]:
        span = f"integers {int(values.min())}-{int(values.max())}"
        return f"an identifier: {span}" if identifier else span
    if identifier:
        return "an identifier"
    numbers = _to_numeric(values)
    if kind == "f" and numbers.notna().any():
        return f"numbers {float(numbers.min()):.4g} to {float(numbers.max()):.4g}"
    return "numbers and text"


def _named_by_labels(labels: pd.Series, numeric: Sequence[str]) -> dict[str, str]:
    """The numeric columns the label values name, each with its class: ``Dole`` or ``p_Dole`` for label ``Dole``.

    Empty when no column is named after a label (or the labels are too many to be classes).
    """
    uniques = pd.unique(labels.dropna())
    if not numeric or uniques.shape[0] > MAX_CLASSES:
        return {}
    texts = {_label_text(u) for u in uniques} - {""}
    found: dict[str, str] = {}
    for column in numeric:
        name = column.strip()
        if name in texts:
            found[column] = name
            continue
        for prefix in CLASS_PREFIXES:
            if _has_prefix(name, prefix) and name[len(prefix):].strip() in texts:
                found[column] = name[len(prefix):].strip()
                break
    return found


def _sums_to_one(frame: pd.DataFrame, columns: Sequence[str]) -> bool:
    """Whether every row of ``columns`` is a probability vector (within ``ROW_SUM_TOLERANCE``)."""
    try:
        values = frame[list(columns)].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        return False
    sums = values.sum(axis=1)
    return bool(np.isfinite(sums).all() and values.min() >= -ROW_SUM_TOLERANCE
                and np.abs(sums - 1.0).max() <= ROW_SUM_TOLERANCE)


def _chosen_by_names(frame: pd.DataFrame, label: str, numeric: Sequence[str], label_of: dict[str, str]) -> list[str]:
    """Class columns when the labels name some columns: those, plus the unnamed float columns only if the
    rows need them to sum to 1 (a class no label shows); every other numeric column is an attribute."""
    named = [c for c in numeric if c in label_of]
    rest = [c for c in numeric if c not in label_of]
    if not rest or _sums_to_one(frame, named) or len(named) == 1 and pd.unique(frame[label].dropna()).shape[0] <= 2:
        return named  # (one column named for one of two classes is that class's probability)
    floats = [c for c in rest if frame[c].dtype.kind == "f"]
    extra = set(floats)
    wider = [c for c in numeric if c in label_of or c in extra]
    return wider if floats and _sums_to_one(frame, wider) else named


def _chosen_by_values(frame: pd.DataFrame, numeric: Sequence[str]) -> list[str]:
    """Class columns when names cannot tell: the numeric columns, less integer columns beside float ones
    whose values leave [0, 1] (an attribute such as ``educ`` 1..7 or ``age`` 18..89), whatever the float
    columns hold: probabilities or logits (an attribute must not make the file read as logits). When
    every column holds integers they stay classes (logits written as integers); a prefix or the labels'
    names choose classes before this rule does."""
    if not any(frame[c].dtype.kind == "f" for c in numeric):
        return list(numeric)
    return [c for c in numeric if not (frame[c].dtype.kind in "iu" and frame[c].shape[0]
                                       and (int(frame[c].min()) < 0 or int(frame[c].max()) > 1))]


def _confidence_column(frame: pd.DataFrame, columns: Sequence[str], taken: set[str], notes: list[str],
                       refused: list[str]) -> list[str]:
    """The one ``confidence`` column as the score of a binary problem, when no other column can be.

    An identifier (distinct consecutive integers, :func:`_is_identifier`) is never the score: it is
    described in ``refused`` for the error that follows."""
    lower = {c.strip().lower(): c for c in columns if c not in taken}
    found = [lower[n] for n in _CONFIDENCE_NAMES if n in lower and _is_number_column(frame[lower[n]])]
    identifiers = [c for c in found if _is_identifier(c, frame[c])]
    refused.extend(f"{c!r} holds {_describe(frame[c], identifier=True)}, not a score" for c in identifiers)
    found = [c for c in found if c not in identifiers]
    if len(found) != 1:
        return []
    notes.append(f"no other column holds probabilities, so {found[0]!r} is the score.")
    return found


def table_parts(table: Table, *, display: str, label_column: str | None,
                 class_columns: Sequence[str] | None, score_column: str | None,
                 split_column: str | None, notes: list[str], group_column: str | None = None) -> Parts:
    frame, row_label = table.frame, table.row_label
    columns = [str(c) for c in frame.columns]
    if frame.shape[0] == 0:
        raise CalibrationInputError(
            f"{display} has a header ({', '.join(columns[:8])}) but no data rows; "
            "add one row per prediction."
        )
    # Label column.
    if label_column is not None:
        label = _find_column(columns, label_column, "label column", "label_column")
    else:
        lower = {c.lower(): c for c in columns}
        found = [lower[n] for n in LABEL_NAMES if n in lower]
        if not found:
            raise CalibrationInputError(
                f"no label column found in {display}; the columns are: "
                f"{', '.join(repr(c) for c in columns)}. Name the true-class column 'label' "
                "(or y, y_true, target, class, ...) or pass `label_column=` with its name."
            )
        label = found[0]
        if len(found) > 1:
            notes.append(f"several columns could be the label ({', '.join(found)}); used {label!r}. "
                         "Pass `label_column=` to choose another.")
    # Split column.
    split_name = None
    if split_column is not None:
        lower = {c.lower(): c for c in columns}
        split_name = split_column if split_column in columns else lower.get(str(split_column).lower())
        if split_name is None and split_column != "split":
            raise CalibrationInputError(
                f"split column {split_column!r} (from `split_column=`) is not a column; the "
                f"columns are: {', '.join(repr(c) for c in columns)}. Pass split_column=None "
                "to ignore splits."
            )
    taken = {label} | ({split_name} if split_name else set())
    group_name = None
    if group_column is not None:
        group_name = _find_column(columns, group_column, "group column", "group")
        if group_name in taken:
            what = "label" if group_name == label else "split"
            raise CalibrationInputError(
                f"column {group_name!r} is the {what} column; choose another column as the group (`group=`)."
            )
        if group_name in table.nested:
            raise CalibrationInputError(
                f"the group column {group_name!r} of {display} holds nested values "
                f"({table.nested[group_name][:80]}); a group column must hold plain text or numbers."
            )
        taken.add(group_name)
    # Class columns: chosen by the caller, else by names (a class prefix; the labels' own names), else by
    # values. Identifiers are never classes, and numeric columns left over are attributes.
    by_names = False
    refused: list[str] = []  # columns that could have been the score, and why they are not
    identifiers: list[str] = []
    label_of: dict[str, str] = {}
    if score_column is not None and class_columns is not None:
        raise CalibrationInputError("pass either `score_column=` (binary) or `class_columns=`, not both.")
    if score_column is not None:
        chosen = [_find_column(columns, score_column, "score column", "score_column")]
    elif class_columns is not None:
        if isinstance(class_columns, str):
            class_columns = [class_columns]
        chosen = [_find_column(columns, c, "class column", "class_columns") for c in class_columns]
        if len(set(chosen)) != len(chosen):
            raise CalibrationInputError("`class_columns` names the same column twice.")
    else:
        candidates = [c for c in columns if c not in taken and c.lower() not in NON_CLASS_NAMES
                      and c.lower() not in LABEL_NAMES and c != "" and not c.lower().startswith("unnamed:")
                      and not c.startswith("__index_level_")]
        for c in [c for c in candidates if c in table.nested]:
            notes.append(f"ignored column {c!r}: it holds nested values ({table.nested[c][:80]}), "
                         "not probabilities.")
        candidates = [c for c in candidates if c not in table.nested]
        kinds = dict(zip(columns, frame.dtypes.map(lambda t: t.kind)))  # one pass: frame[c] is slow on 10^4 columns
        identifiers = [c for c in candidates if _is_identifier(c, frame[c] if kinds.get(c) in ("i", "u") else None)]
        if identifiers:
            notes.append("not used as scores or classes: " + _shown(
                [f"{c!r} ({_describe(frame[c], identifier=True)})" for c in identifiers], 10, quote=False) + ".")
        dropped = set(identifiers)
        candidates = [c for c in candidates if c not in dropped]
        best = _best_prefix(candidates)
        if best is not None:
            chosen = [c for c in candidates if _has_prefix(c, best[0])]
            prefixed = set(chosen)
            numeric = [c for c in candidates if c not in prefixed and _is_number_column(frame[c])]
        else:
            numeric = []
            for c in candidates:
                values = frame[c]
                if values.isna().all():
                    notes.append(f"ignored column {c!r}: it is empty.")
                elif _is_number_column(values):
                    numeric.append(c)
                elif values.dtype == bool:
                    notes.append(f"ignored column {c!r}: it holds true/false values, not probabilities.")
                elif _bad_numeric_value(values) is not None and _to_numeric(values).notna().any():
                    numeric.append(c)  # mostly numbers with some text: reported as an error below
                else:
                    notes.append(f"ignored column {c!r}: it holds text, not probabilities.")
            label_of = _named_by_labels(frame[label], numeric)
            by_names = bool(label_of)
            chosen = _chosen_by_names(frame, label, numeric, label_of) if by_names else _chosen_by_values(frame, numeric)
            if not chosen:
                chosen = _confidence_column(frame, columns, taken, notes, refused)
        chosen_set = set(chosen)
        attributes_left = [c for c in numeric if c not in chosen_set]
        if attributes_left:
            groups_too = any(_is_attribute(frame[c]) for c in attributes_left)
            notes.append("not used as classes: " + _shown(
                [f"{c!r} ({_describe(frame[c])})" for c in attributes_left], 10, quote=False) + "."
                + (" A column of integers can be the group column (`group=`)." if groups_too else ""))
        left = set(attributes_left)
        unused = [c for c in candidates if c not in chosen_set and c not in left]
        if best is not None and unused:
            notes.append(f"ignored columns without a class prefix: {_shown(unused, 10)}.")
    if not chosen:
        raise CalibrationInputError(
            f"{display} has no probability or logit columns besides the label {label!r}, so it "
            f"has fewer than 2 classes (columns: {_shown(columns, 10)}"
            + "".join(f"; {r}" for r in refused) + "). Add one "
            "column per class (p_<class>) or one score column for a binary problem, or pass "
            "`class_columns=`."
        )
    if label in set(chosen):
        raise CalibrationInputError(f"column {label!r} cannot be both the label and a class column.")
    if group_name is not None and group_name in set(chosen):
        raise CalibrationInputError(f"column {group_name!r} cannot be both the group and a class column.")
    if len(chosen) > MAX_CLASSES:
        raise _too_many_classes(len(chosen), display)
    for what, column in [("label", label), ("split", split_name), *(("class", c) for c in chosen)]:
        if column is not None and column in table.nested:
            raise CalibrationInputError(
                f"the {what} column {column!r} of {display} holds nested values "
                f"({table.nested[column][:80]}); a {what} column must hold plain "
                + ("numbers." if what == "class" else "class indices or names.")
            )
    names, prefix = _strip_common_prefix(chosen)
    names = [n.strip() for n in names]  # "p_ cat" is class "cat", as labels are stripped too
    if by_names:
        names = [label_of.get(c, n) for c, n in zip(chosen, names)]
    logit_reason = None
    if prefix in _LOGIT_PREFIXES:
        shown = ", ".join(chosen[:3]) + (", ..." if len(chosen) > 3 else "")
        logit_reason = f"the class columns ({shown}) are named {prefix}*"
    # Score matrix, one column at a time so a bad column is named.
    for c in chosen:
        values = frame[c]
        if not _is_number_column(values):
            bad = _bad_numeric_value(values)
            if bad is not None or values.dtype == bool:
                row, value = bad if bad is not None else (0, values.iloc[0])
                raise CalibrationInputError(
                    f"class column {c!r} is not numeric: {row_label(row)} holds {_short(value)}. "
                    "Every class column must hold numbers; fix that value, or pass "
                    "`class_columns=` to choose the probability columns."
                )
    if all(_is_number_column(frame[c]) for c in chosen):
        scores = np.ascontiguousarray(frame[chosen].to_numpy(dtype=np.float64, na_value=np.nan))
    else:  # text columns whose only non-numbers are spellings of NaN
        scores = np.column_stack([_to_numeric(frame[c]).to_numpy(
            dtype=np.float64, na_value=np.nan) for c in chosen])
    split = None
    if split_name is not None:
        split_values = frame[split_name]
        missing = int(split_values.isna().sum())
        if missing:
            notes.append(f"{missing} rows have no value in the split column {split_name!r}; "
                         "their split is ''.")
        split = _as_text(split_values.fillna("")).str.strip().to_numpy(dtype=str)
    raw_labels = frame[label].to_numpy()
    raw_text = None
    if table.raw_text is not None and pd.isna(frame[label]).any():
        raw_text = lambda: table.raw_text(label)  # noqa: E731 -- read only when needed
    groups = None
    if group_name is not None:
        groups, n_missing = group_text(frame[group_name])
        _note_missing_groups(n_missing, group_name, notes)
    not_attributes = set(chosen) | {label, split_name} | set(identifiers)
    attributes = [c for c in columns if c not in not_attributes and c != "" and c not in table.nested
                  and not c.startswith("__index_level_") and _is_attribute(frame[c])]
    return Parts(scores=scores, raw_labels=raw_labels, score_names=chosen,
                  class_names=names if (prefix is not None or len(chosen) > 1 or by_names) else None,
                  label_name=label, logit_reason=logit_reason, split=split, row_label=row_label,
                  notes=notes, raw_label_text=raw_text, groups=groups, group_name=group_name,
                  attributes=attributes)


def _npz_parts(arrays: dict[str, NDArray[Any]], *, display: str, label_column: str | None,
               class_columns: Sequence[str] | None, score_column: str | None,
               split_column: str | None, notes: list[str], group_column: str | None = None) -> Parts:
    key_override = score_column
    if class_columns is not None:
        cols = [class_columns] if isinstance(class_columns, str) else list(class_columns)
        if len(cols) != 1:
            raise CalibrationInputError(
                "for NPZ files pass the name of the one array holding the scores, e.g. "
                "`score_column='probs'`."
            )
        key_override = cols[0]
    label_key = _pick_key(arrays, label_column, _NPZ_LABEL_KEYS, "label", display)
    logit_key = _pick_key(arrays, None, _NPZ_LOGIT_KEYS, "logit", display) if key_override is None else None
    prob_key = _pick_key(arrays, key_override, _NPZ_PROB_KEYS, "score", display)
    if prob_key is None and logit_key is None or label_key is None:
        # Unnamed arrays (np.savez(f, probs, labels) -> arr_0, arr_1): one matrix + one integer vector.
        matrices = [k for k, a in arrays.items() if a.ndim == 2 and a.dtype.kind in "fiu"]
        vectors = [k for k, a in arrays.items() if a.ndim == 1 and a.dtype.kind in "iub"]
        if label_key is None and len(vectors) == 1 and prob_key is None and logit_key is None \
                and len(matrices) == 1:
            prob_key, label_key = matrices[0], vectors[0]
            notes.append(f"{display} has no named arrays; took {prob_key!r} as the scores and "
                         f"{label_key!r} as the labels.")
    if label_key is None:
        raise CalibrationInputError(
            f"no label array found in {display}; it holds: {', '.join(arrays)}. Name the true "
            "classes 'labels' (or y, targets) or pass `label_column=` with the array's name."
        )
    logits_kept = None
    if prob_key is None and logit_key is None:
        raise CalibrationInputError(
            f"no probability or logit array found in {display}; it holds: {', '.join(arrays)}. "
            "Name it 'probs' or 'logits', or pass `score_column=` with its name."
        )
    logit_reason = f"the array {logit_key!r} holds logits" if prob_key is None else None
    key = prob_key if prob_key is not None else logit_key
    assert key is not None
    scores = arrays[key]
    if scores.dtype.kind not in "fiub":
        raise CalibrationInputError(
            f"array {key!r} of {display} is not numeric (dtype {scores.dtype}); it must hold numbers."
        )
    if scores.ndim == 2 and scores.shape[1] == 1 or scores.ndim == 1:
        scores = scores.reshape(-1, 1)
    if scores.ndim != 2:
        raise CalibrationInputError(
            f"array {key!r} of {display} must have shape (N, K), got {scores.shape}."
        )
    if scores.shape[1] > MAX_CLASSES:
        raise _too_many_classes(scores.shape[1], display)
    if prob_key is not None and logit_key is not None:
        logits_kept = logit_key
    labels = arrays[label_key]
    if labels.dtype.names or labels.dtype.kind == "V":
        raise CalibrationInputError(
            f"label array {label_key!r} of {display} is a structured array (dtype {labels.dtype}); "
            "store the labels as one plain array of class indices or names."
        )
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise CalibrationInputError(
            f"label array {label_key!r} of {display} must be 1-D, got shape {labels.shape}; "
            "store class indices, not one-hot rows."
        )
    if labels.shape[0] != scores.shape[0]:
        raise CalibrationInputError(
            f"{display}: {key!r} has {scores.shape[0]} rows but {label_key!r} has {labels.shape[0]}."
        )
    if scores.shape[0] == 0:
        raise CalibrationInputError(f"{display} has no rows (array {key!r} is empty).")
    name_key = _pick_key(arrays, None, _NPZ_NAME_KEYS, "class-name", display)
    class_names = None
    if name_key is not None:
        class_names = [_label_text(v) for v in np.asarray(arrays[name_key]).ravel()]
    split = None
    split_key = _pick_key(arrays, None, (str(split_column).lower(),), "split", display) \
        if split_column is not None else None
    if split_key is not None:
        split = np.asarray(arrays[split_key])
        if split.dtype.names or split.dtype.kind not in "OUSiub":
            raise CalibrationInputError(
                f"split array {split_key!r} of {display} has dtype {split.dtype}; store the split "
                "names as strings (e.g. 'calibration', 'test')."
            )
        split = np.char.decode(split, "utf-8", errors="replace") if split.dtype.kind == "S" else split.astype(str)
        if split.shape != (scores.shape[0],):
            raise CalibrationInputError(
                f"split array {split_key!r} of {display} has shape {split.shape}, expected ({scores.shape[0]},)."
            )
    group_key = _pick_key(arrays, group_column, (), "group", display) if group_column is not None else None
    groups = None
    if group_key is not None:
        if group_key in {label_key, key, split_key, name_key, logits_kept}:
            raise CalibrationInputError(
                f"array {group_key!r} of {display} already holds the labels, scores, split or class names; "
                "choose another array as the group (`group=`)."
            )
        group_array = np.asarray(arrays[group_key])
        if group_array.dtype.names or group_array.ndim != 1 or group_array.shape[0] != scores.shape[0]:
            raise CalibrationInputError(
                f"group array {group_key!r} of {display} has shape {group_array.shape} (dtype {group_array.dtype}); "
                f"it must be a plain 1-D array of {scores.shape[0]} group names."
            )
        if group_array.dtype.kind == "S":
            group_array = np.char.decode(group_array, "utf-8", errors="replace")
        groups, n_missing = group_text(pd.Series(group_array))
        _note_missing_groups(n_missing, group_key, notes)
    used = {label_key, key, name_key, split_key, logits_kept, group_key}
    attributes = [k for k, a in arrays.items() if k not in used and a.ndim == 1 and not a.dtype.names
                  and a.shape[0] == scores.shape[0] and a.dtype.kind in "iubOUS"]
    unused = [k for k in arrays if k not in used]
    if unused:
        notes.append(f"ignored arrays in {display}: {', '.join(map(repr, unused))}.")
    extra = None
    if logits_kept is not None:
        extra = np.asarray(arrays[logits_kept])
        extra = extra.astype(np.float64) if extra.dtype.kind in "fiu" else None
    return Parts(scores=np.ascontiguousarray(scores, dtype=np.float64), raw_labels=labels,
                  score_names=[f"{key}[:, {k}]" for k in range(scores.shape[1])],
                  class_names=class_names, label_name=label_key, logit_reason=logit_reason,
                  split=split, row_label=plain_row_label, notes=notes, extra_logits=extra,
                  groups=groups, group_name=group_key, attributes=attributes)


def _npy_parts(array: NDArray[Any], *, display: str, label_column: str | None,
               class_columns: Sequence[str] | None, score_column: str | None,
               split_column: str | None, notes: list[str], group_column: str | None = None) -> Parts:
    if array.dtype.names:
        if array.ndim != 1 or any(array.dtype[name].shape or array.dtype[name].names
                                  for name in array.dtype.names):
            raise CalibrationInputError(
                f"{display} is a structured array of shape {array.shape} with nested fields "
                f"({array.dtype}); save one field per column (label, p_0, p_1, ...) or an NPZ."
            )
        _check_column_count(len(array.dtype.names), display)
        frame = pd.DataFrame({name: array[name] for name in array.dtype.names})
        return table_parts(Table(frame=frame, row_label=plain_row_label), display=display,
                            label_column=label_column, class_columns=class_columns,
                            score_column=score_column, split_column=split_column, notes=notes,
                            group_column=group_column)
    if group_column is not None:
        raise CalibrationInputError(
            f"{display} is a plain array without column names, so it has no group column {group_column!r}; "
            "save a CSV, Parquet or NPZ file with the group as a named column (or array)."
        )
    if array.ndim != 2 or array.shape[1] < 2:
        raise CalibrationInputError(
            f"{display} holds one array of shape {array.shape} without labels. Save an NPZ with "
            "np.savez(path, probs=probs, labels=labels), or an (N, K + 1) array whose first or "
            "last column holds the labels."
        )
    if array.dtype.kind not in "fiub":
        raise CalibrationInputError(f"{display} is not numeric (dtype {array.dtype}).")
    if array.shape[1] - 1 > MAX_CLASSES:
        raise _too_many_classes(array.shape[1] - 1, display)
    if array.shape[0] == 0:
        raise CalibrationInputError(f"{display} has no rows (shape {array.shape}).")
    n_cols = array.shape[1]
    if label_column is not None:
        try:
            label_index = int(label_column)
        except (TypeError, ValueError) as exc:
            raise CalibrationInputError(
                f"{display} has no column names; pass `label_column=` as a column number "
                f"(0 or -1), got {label_column!r}."
            ) from exc
        if not -n_cols <= label_index < n_cols:
            raise CalibrationInputError(
                f"`label_column={label_index}` is outside the {n_cols} columns of {display}."
            )
        label_index %= n_cols
    else:
        def whole(col: NDArray[Any]) -> bool:
            return bool(np.isfinite(col).all() and (col == np.round(col)).all()
                        and col.min() >= 0 and col.max() <= max(n_cols - 2, 1))
        candidates = [j for j in (0, n_cols - 1) if whole(array[:, j])]
        if len(candidates) == 2:
            rest_sums = [np.abs(np.delete(array, j, axis=1).sum(axis=1) - 1).max() for j in candidates]
            fits = [j for j, s in zip(candidates, rest_sums) if s <= ROW_SUM_TOLERANCE]
            candidates = fits if len(fits) == 1 else candidates
        if len(candidates) != 1:
            raise CalibrationInputError(
                f"{display} is a plain (N, {n_cols}) array; cannot tell which column holds the "
                "labels. Pass `label_column=0` or `label_column=-1`, or save an NPZ with "
                "probs= and labels=."
            )
        label_index = candidates[0]
        notes.append(f"{display} has no column names; took column {label_index} as the labels.")
    keep = [j for j in range(n_cols) if j != label_index]
    scores = np.ascontiguousarray(array[:, keep], dtype=np.float64)
    return Parts(scores=scores, raw_labels=array[:, label_index],
                  score_names=[f"column {j}" for j in keep], class_names=None,
                  label_name=f"column {label_index}", logit_reason=None, split=None,
                  row_label=plain_row_label, notes=notes)


def _pick_key(arrays: dict[str, Any], override: str | None, candidates: Sequence[str],
              what: str, display: str) -> str | None:
    lower = {k.lower(): k for k in arrays}
    if override is not None:
        if override in arrays:
            return override
        if override.lower() in lower:
            return lower[override.lower()]
        raise CalibrationInputError(
            f"{what} array {override!r} not found in {display}; it holds: {', '.join(arrays)}."
        )
    for candidate in candidates:
        if candidate in lower:
            return lower[candidate]
    return None


def split_mask(values: Any, split: str) -> NDArray[np.bool_]:
    """Which rows belong to split ``split``: the one split filter of the loader, the engines and the command line.

    A row belongs to it when its split value, as text with surrounding
    whitespace stripped, equals ``split``; a missing value belongs to no
    split.

    Parameters
    ----------
    values : pandas.Series, pyarrow.Array or pyarrow.ChunkedArray or array_like
        The split column of a batch, a partition or :attr:`calib_core.Predictions.split`.
        pandas values become text as pandas writes them (``astype("string")``),
        Arrow values as Arrow casts them.
    split : str

    Returns
    -------
    ndarray of bool
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(pd.Series(values).astype("string"))
    text = pc.utf8_trim_whitespace(pc.cast(values, pa.string()))
    return pc.fill_null(pc.equal(text, split), False).to_numpy(zero_copy_only=False)
