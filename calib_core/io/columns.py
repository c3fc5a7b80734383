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

from calib_core.io.formats import MAX_CLASSES, Table, _as_text, _label_text
from calib_core.validation import ROW_SUM_TOLERANCE, CalibrationInputError, check_sample_weight

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
    weights: NDArray[np.float64] | None = None  # the weight column's values (weight_column=), checked
    weight_name: str | None = None


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


@dataclass(frozen=True)
class _ClassChoice:
    """The class columns chosen for a table, and what the choice learned on the way."""

    chosen: list[str]
    label_of: dict[str, str] = field(default_factory=dict)  # column -> class, when the labels name columns
    identifiers: list[str] = field(default_factory=list)  # columns that identify rows (never classes)
    refused: list[str] = field(default_factory=list)  # columns that could have been the score, and why not

    @property
    def by_names(self) -> bool:
        """Whether the labels' own names chose the class columns (``Dole``, ``p_Dole``)."""
        return bool(self.label_of)


def _require_rows(columns: Sequence[str], n_rows: int, display: str) -> None:
    """Refuse a table with a header but no data rows."""
    if n_rows == 0:
        raise CalibrationInputError(
            f"{display} has a header ({', '.join(columns[:8])}) but no data rows; "
            "add one row per prediction."
        )


def _label_column(columns: Sequence[str], label_column: str | None, display: str, notes: list[str]) -> str:
    """The label column: the one the caller names, else the first of :data:`LABEL_NAMES` present (a note
    says so when several are)."""
    if label_column is not None:
        return _find_column(columns, label_column, "label column", "label_column")
    lower = {c.lower(): c for c in columns}
    found = [lower[n] for n in LABEL_NAMES if n in lower]
    if not found:
        raise CalibrationInputError(
            f"no label column found in {display}; the columns are: "
            f"{', '.join(repr(c) for c in columns)}. Name the true-class column 'label' "
            "(or y, y_true, target, class, ...) or pass `label_column=` with its name."
        )
    if len(found) > 1:
        notes.append(f"several columns could be the label ({', '.join(found)}); used {found[0]!r}. "
                     "Pass `label_column=` to choose another.")
    return found[0]


def _split_column(columns: Sequence[str], split_column: str | None) -> str | None:
    """The split column, if any: the default name ``split`` may be absent, a name the caller gives may not."""
    if split_column is None:
        return None
    lower = {c.lower(): c for c in columns}
    split_name = split_column if split_column in columns else lower.get(str(split_column).lower())
    if split_name is None and split_column != "split":
        raise CalibrationInputError(
            f"split column {split_column!r} (from `split_column=`) is not a column; the "
            f"columns are: {', '.join(repr(c) for c in columns)}. Pass split_column=None "
            "to ignore splits."
        )
    return split_name


def _group_column(table: Table, columns: Sequence[str], group_column: str | None, label: str,
                  taken: set[str], display: str) -> str | None:
    """The group column the caller names (``group=``): neither the label nor the split, and not nested."""
    if group_column is None:
        return None
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
    return group_name


def _class_columns(table: Table, columns: Sequence[str], label: str, taken: set[str],
                   class_columns: Sequence[str] | None, score_column: str | None, notes: list[str]) -> _ClassChoice:
    """The class columns: chosen by the caller (``score_column=`` or ``class_columns=``), else inferred
    (:func:`_inferred_class_columns`)."""
    if score_column is not None and class_columns is not None:
        raise CalibrationInputError("pass either `score_column=` (binary) or `class_columns=`, not both.")
    if score_column is not None:
        return _ClassChoice([_find_column(columns, score_column, "score column", "score_column")])
    if class_columns is not None:
        if isinstance(class_columns, str):
            class_columns = [class_columns]
        chosen = [_find_column(columns, c, "class column", "class_columns") for c in class_columns]
        if len(set(chosen)) != len(chosen):
            raise CalibrationInputError("`class_columns` names the same column twice.")
        return _ClassChoice(chosen)
    return _inferred_class_columns(table, columns, label, taken, notes)


def _candidate_columns(table: Table, columns: Sequence[str], taken: set[str],
                       notes: list[str]) -> tuple[list[str], list[str]]:
    """(candidates, identifiers): the columns that may hold a class's score, and the row identifiers set
    aside. Known non-class names, unnamed and index columns are never candidates; nested columns and
    identifiers are left out with a note."""
    frame = table.frame
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
    return [c for c in candidates if c not in dropped], identifiers


def _numeric_columns(frame: pd.DataFrame, candidates: Sequence[str], notes: list[str]) -> list[str]:
    """The candidates that hold numbers (or mostly numbers: their text is reported as an error later); an
    empty, true/false or text column is ignored with a note."""
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
    return numeric


def _inferred_class_columns(table: Table, columns: Sequence[str], label: str, taken: set[str],
                            notes: list[str]) -> _ClassChoice:
    """Class columns the caller did not name: by names (a class prefix; the labels' own names), else by
    values, else a lone ``confidence`` column. Identifiers are never classes; numeric columns left over
    are attributes, listed in a note."""
    frame = table.frame
    candidates, identifiers = _candidate_columns(table, columns, taken, notes)
    refused: list[str] = []
    label_of: dict[str, str] = {}
    best = _best_prefix(candidates)
    if best is not None:
        chosen = [c for c in candidates if _has_prefix(c, best[0])]
        prefixed = set(chosen)
        numeric = [c for c in candidates if c not in prefixed and _is_number_column(frame[c])]
    else:
        numeric = _numeric_columns(frame, candidates, notes)
        label_of = _named_by_labels(frame[label], numeric)
        chosen = _chosen_by_names(frame, label, numeric, label_of) if label_of else _chosen_by_values(frame, numeric)
        if not chosen:
            chosen = _confidence_column(frame, columns, taken, notes, refused)
    _note_unused_columns(frame, candidates, numeric, chosen, best is not None, notes)
    return _ClassChoice(chosen, label_of=label_of, identifiers=identifiers, refused=refused)


def _note_unused_columns(frame: pd.DataFrame, candidates: Sequence[str], numeric: Sequence[str],
                         chosen: Sequence[str], prefixed: bool, notes: list[str]) -> None:
    """Notes on the candidates not chosen: numeric ones are attributes (perhaps a group column); with a
    class prefix, the rest lack it."""
    chosen_set = set(chosen)
    attributes_left = [c for c in numeric if c not in chosen_set]
    if attributes_left:
        groups_too = any(_is_attribute(frame[c]) for c in attributes_left)
        notes.append("not used as classes: " + _shown(
            [f"{c!r} ({_describe(frame[c])})" for c in attributes_left], 10, quote=False) + "."
            + (" A column of integers can be the group column (`group=`)." if groups_too else ""))
    left = set(attributes_left)
    unused = [c for c in candidates if c not in chosen_set and c not in left]
    if prefixed and unused:
        notes.append(f"ignored columns without a class prefix: {_shown(unused, 10)}.")


def _check_roles(table: Table, display: str, columns: Sequence[str], choice: _ClassChoice, label: str,
                 split_name: str | None, group_name: str | None) -> None:
    """Refuse a choice of columns that cannot be read: no class column, a column in two roles, too many
    classes, or a nested column in any role."""
    chosen = choice.chosen
    if not chosen:
        raise CalibrationInputError(
            f"{display} has no probability or logit columns besides the label {label!r}, so it "
            f"has fewer than 2 classes (columns: {_shown(columns, 10)}"
            + "".join(f"; {r}" for r in choice.refused) + "). Add one "
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


def _class_names(choice: _ClassChoice) -> tuple[list[str] | None, str | None]:
    """(class names, logit reason): names from a common class prefix (``p_cat`` -> ``cat``, stripped) or
    the labels (None for one unprefixed score column); the reason is set when the prefix says logits."""
    chosen = choice.chosen
    names, prefix = _strip_common_prefix(chosen)
    names = [n.strip() for n in names]  # "p_ cat" is class "cat", as labels are stripped too
    if choice.by_names:
        names = [choice.label_of.get(c, n) for c, n in zip(chosen, names)]
    logit_reason = None
    if prefix in _LOGIT_PREFIXES:
        shown = ", ".join(chosen[:3]) + (", ..." if len(chosen) > 3 else "")
        logit_reason = f"the class columns ({shown}) are named {prefix}*"
    named = prefix is not None or len(chosen) > 1 or choice.by_names
    return (names if named else None), logit_reason


def _score_matrix(frame: pd.DataFrame, chosen: Sequence[str], row_label: Callable[[int], str]) -> NDArray[np.float64]:
    """The (N, K) scores, after checking one column at a time so a column holding text is named with its row."""
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
        return np.ascontiguousarray(frame[list(chosen)].to_numpy(dtype=np.float64, na_value=np.nan))
    # text columns whose only non-numbers are spellings of NaN
    return np.column_stack([_to_numeric(frame[c]).to_numpy(dtype=np.float64, na_value=np.nan) for c in chosen])


def _split_values(frame: pd.DataFrame, split_name: str | None, notes: list[str]) -> NDArray[np.str_] | None:
    """The split column as stripped text; a missing value is split ``''`` (a note counts them)."""
    if split_name is None:
        return None
    split_values = frame[split_name]
    missing = int(split_values.isna().sum())
    if missing:
        notes.append(f"{missing} rows have no value in the split column {split_name!r}; "
                     "their split is ''.")
    return _as_text(split_values.fillna("")).str.strip().to_numpy(dtype=str)


def _attribute_columns(table: Table, columns: Sequence[str], not_attributes: set[str | None]) -> list[str]:
    """The columns that could be a group (:func:`_is_attribute`), less those with another role."""
    frame = table.frame
    return [c for c in columns if c not in not_attributes and c != "" and c not in table.nested
            and not c.startswith("__index_level_") and _is_attribute(frame[c])]


def table_parts(table: Table, *, display: str, label_column: str | None,
                class_columns: Sequence[str] | None, score_column: str | None,
                split_column: str | None, notes: list[str], group_column: str | None = None,
                weight_column: str | None = None) -> Parts:
    """The parts of a table (CSV, Parquet, structured NPY; a streaming engine's first batch), before
    interpretation.

    One step per role, in the order their notes and errors come: rows, the label column, the split,
    the group, the class columns (named by the caller, else inferred), the checks on those roles, the
    class names, then the values. ``notes`` receives what was decided without the caller's word.

    Raises
    ------
    CalibrationInputError
        When a role cannot be filled or a column cannot fill it; the message names the column.
    """
    frame, row_label = table.frame, table.row_label
    columns = [str(c) for c in frame.columns]
    _require_rows(columns, frame.shape[0], display)
    label = _label_column(columns, label_column, display, notes)
    split_name = _split_column(columns, split_column)
    taken = {label} | ({split_name} if split_name else set())
    group_name = _group_column(table, columns, group_column, label, taken, display)
    if group_name is not None:
        taken.add(group_name)
    weight_name = _weight_column(table, columns, weight_column, taken, display)
    if weight_name is not None:
        taken.add(weight_name)
    choice = _class_columns(table, columns, label, taken, class_columns, score_column, notes)
    _check_roles(table, display, columns, choice, label, split_name, group_name)
    chosen = choice.chosen
    class_names, logit_reason = _class_names(choice)
    scores = _score_matrix(frame, chosen, row_label)
    split = _split_values(frame, split_name, notes)
    raw_text = None
    if table.raw_text is not None and pd.isna(frame[label]).any():
        raw_text = lambda: table.raw_text(label)  # noqa: E731 -- read only when needed
    groups = None
    if group_name is not None:
        groups, n_missing = group_text(frame[group_name])
        _note_missing_groups(n_missing, group_name, notes)
    attributes = _attribute_columns(table, columns, set(chosen) | {label, split_name} | set(choice.identifiers))
    weights = None if weight_name is None else _weight_values(frame[weight_name], weight_name, display)
    return Parts(scores=scores, raw_labels=frame[label].to_numpy(), score_names=chosen,
                 class_names=class_names, label_name=label, logit_reason=logit_reason, split=split,
                 row_label=row_label, notes=notes, raw_label_text=raw_text, groups=groups,
                 group_name=group_name, attributes=attributes, weights=weights, weight_name=weight_name)


def _weight_column(table: Table, columns: Sequence[str], weight_column: str | None, taken: set[str | None],
                   display: str) -> str | None:
    """The row-weight column the caller names (``weight_column=``); never guessed from a name such as
    ``weight``, which may be a feature (a patient's body weight), not a frequency."""
    if weight_column is None:
        return None
    name = _find_column(columns, weight_column, "weight column", "weight_column")
    if name in taken:
        raise CalibrationInputError(
            f"column {name!r} of {display} already holds the labels, the split or the group; choose another "
            f"column as the row weights (`weight_column=`).")
    if name in table.nested:
        raise CalibrationInputError(f"the weight column {name!r} of {display} holds nested values; row weights "
                                    f"must be plain numbers.")
    return name


def _weight_values(values: pd.Series, name: str, display: str) -> NDArray[np.float64]:
    """The weight column as checked floats (:func:`calib_core.validation.check_sample_weight`); an empty or
    non-numeric cell is refused with its row, never read as 0."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    missing = np.isnan(numbers)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise CalibrationInputError(
            f"the weight column {name!r} of {display} must hold a number in every row; row {row} holds "
            f"{values.iloc[row]!r}.")
    return check_sample_weight(numbers, numbers.shape[0], name=name)


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
