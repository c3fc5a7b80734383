"""Interpretation: labels to class indices, scores to probabilities (or logits).

:func:`labels_to_indices` maps labels to classes by name whenever the
class columns carry names, else reads integer labels as class indices;
text labels that match no class name stop the load with a proposed mapping.
:func:`interpret_scores` decides the input kind: values are read as logits
when asked, when the class columns are named ``logit_*``, or when they
cannot be probabilities by a wide margin (:data:`AUTO_LOGIT_MIN_SHARE`);
logits become probabilities with the stable softmax
``p_k = exp(z_k - max_j z_j) / sum_i exp(z_i - max_j z_j)``. Anything else
that is not a probability matrix raises :class:`PredictionsFileError`
with the :class:`LoadFix` objects that would load it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.columns import Parts, _short, _shown
from calib_core.io.formats import _label_text
from calib_core.validation import (
    ROW_SUM_TOLERANCE,
    CalibrationInputError,
    check_probs,
    check_probs_with_row_sums,
    softmax,
)

__all__ = ["LoadFix", "PredictionsFileError", "AUTO_LOGIT_MIN_SHARE", "SILENT_ROW_SUM_DEVIATION", "binary_class_names",
           "interpret_scores", "labels_to_indices"]

_INPUT_KINDS = ("auto", "probabilities", "logits")

#: Row sums within this distance of 1 are accepted without a warning.
SILENT_ROW_SUM_DEVIATION = 1e-6

#: Values read as logits without being told only when at least this share of
#: the cells lies outside [0, 1] (and the rows do not sum to one constant).
AUTO_LOGIT_MIN_SHARE = 0.25


# ---------------------------------------------------------------------------
# Errors that carry their fixes
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LoadFix:
    """One way to load a rejected file: the :func:`load_predictions` keywords that apply it.

    Attributes
    ----------
    key : str
        ``"renormalize"``, ``"percentages"``, ``"logits"``, ``"probabilities"``
        or ``"class_names"`` (accept a proposed label-to-column mapping).
    label : str
        A short button label in plain words ("Renormalise rows").
    overrides : tuple of (str, value) pairs
        Keyword arguments of :func:`load_predictions` that apply the fix,
        e.g. ``(("renormalize", True),)``.
    description : str
        One plain sentence saying what the fix does to the values.

    Examples
    --------
    >>> fix = LoadFix("percentages", "Divide by 100", (("percentages", True),), "Divides every value by 100.")
    >>> fix.kwargs
    {'percentages': True}
    """

    key: str
    label: str
    overrides: tuple[tuple[str, Any], ...]
    description: str

    @property
    def kwargs(self) -> dict[str, Any]:
        """The overrides as a dict, ready for ``load_predictions(source, **fix.kwargs)``."""
        return dict(self.overrides)


class PredictionsFileError(CalibrationInputError):
    """A :class:`CalibrationInputError` that also says how the file could be loaded.

    Attributes
    ----------
    fixes : tuple of LoadFix
        The fixes that would load this file (best first); empty when the file
        itself must change.
    rows : tuple of int
        0-based rows showing the problem (the first few).
    plain : str
        The message without Python argument names, for an app (it names
        what the fix does instead).
    proposed_mapping : tuple of (str, str) pairs, optional
        For labels that match no class column: ``(label, column)`` pairs of
        the mapping a fix would apply (shown for confirmation, never applied
        silently).
    """

    def __init__(self, message: str, *, fixes: Sequence[LoadFix] = (), rows: Sequence[int] = (),
                 plain: str | None = None,
                 proposed_mapping: Sequence[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.fixes = tuple(fixes)
        self.rows = tuple(int(r) for r in rows)
        self.plain = plain if plain is not None else message
        self.proposed_mapping = None if proposed_mapping is None else tuple(
            (str(a), str(b)) for a, b in proposed_mapping)


_FIX_RENORMALIZE = LoadFix("renormalize", "Renormalise rows", (("renormalize", True),),
                           "Divides each row by its sum so that it sums to 1.")
_FIX_PERCENTAGES = LoadFix("percentages", "Divide by 100", (("percentages", True),),
                           "Reads the values as percentages and divides them by 100.")
_FIX_LOGITS = LoadFix("logits", "Read as logits", (("input_kind", "logits"),),
                      "Reads the values as logits and turns each row into probabilities with a softmax.")
_FIX_PROBABILITIES = LoadFix("probabilities", "Read as probabilities instead",
                             (("input_kind", "probabilities"),),
                             "Reads the values as probabilities, as written.")



# ---------------------------------------------------------------------------
# Interpretation: labels, probabilities or logits
# ---------------------------------------------------------------------------

_MISSING_STRINGS = frozenset({"", "nan", "na", "n/a", "null", "none", "<na>", "#n/a"})


def _natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key that orders "c2" before "c10" (ASCII digit runs compare as numbers).

    A digit run compares by its length without leading zeros, then as text:
    the numeric order, without converting a 5,000-digit run to an int.
    """
    key = []
    for part in re.split(r"([0-9]+)", text):
        if part.isascii() and part.isdigit():
            digits = part.lstrip("0") or "0"
            key.append((0, len(digits), digits))
        elif part:
            key.append((1, 0, part))
    return tuple(key)


def _factorize_text_labels(labels: NDArray[Any], row_label: Callable[[int], str],
                           class_names: Sequence[str] | None = None) -> tuple[NDArray[np.intp], list[str]]:
    """Codes into the distinct label texts (whitespace stripped), refusing missing labels.

    Hash-based (pandas.factorize plus one dict), so a million string labels
    over many classes cost one pass. A text such as "NA", "none" or "null"
    is a missing label unless it is one of ``class_names``.
    """
    try:
        codes, uniques = pd.factorize(np.asarray(labels, dtype=object), use_na_sentinel=True)
    except TypeError as exc:  # unhashable cells: lists, dicts
        raise CalibrationInputError(
            "the label column holds nested values (lists or records); labels must be class indices or names."
        ) from exc
    texts = [_label_text(u) for u in uniques]
    position: dict[str, int] = {}
    remap = np.empty(len(texts) + 1, dtype=np.intp)
    for k, text in enumerate(texts):
        remap[k] = position.setdefault(text, len(position))
    remap[-1] = -1
    codes = remap[codes]  # -1 (missing) picks the appended -1
    distinct = list(position)
    names = set(class_names or ())
    bad = codes < 0
    for k, text in enumerate(distinct):
        if text.lower() in _MISSING_STRINGS and text not in names:
            bad |= codes == k
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"the label is missing in {row_label(row)}; every row needs a true class. "
            "Fill in or remove that row."
        )
    return codes, distinct


def _map_string_labels(labels: NDArray[Any], class_names: Sequence[str],
                       row_label: Callable[[int], str]) -> NDArray[np.intp]:
    """Class indices of label texts matched exactly (after stripping) to ``class_names``."""
    codes, distinct = _factorize_text_labels(labels, row_label, class_names)
    index = {str(c): k for k, c in enumerate(class_names)}
    unknown = [k for k, t in enumerate(distinct) if t not in index]
    if unknown:
        row = int(np.flatnonzero(codes == unknown[0])[0])
        raise CalibrationInputError(
            f"label {_short(distinct[unknown[0]])} in {row_label(row)} is not one of the classes "
            f"({_shown(list(class_names), 10)}). Name the class columns after the labels (p_<label>) "
            "or store class indices 0..K-1."
        )
    lookup = np.array([index[t] for t in distinct], dtype=np.intp)
    return lookup[codes]


def _generic(names: Sequence[str] | None) -> bool:
    return names is None or all(re.fullmatch(r"-?\d+", n.strip()) for n in names)


def _propose_mapping(parts: Parts, texts: Sequence[str], n_classes: int,
                     class_names: Sequence[str] | None) -> CalibrationInputError:
    """Text labels that match no class column: refuse, showing the mapping a fix would apply."""
    columns = parts.score_names
    ordered = sorted(texts, key=_natural_key)
    what = (f"the {n_classes} class columns ({_shown(columns)})" if class_names is None or _generic(class_names)
            else f"the class names of the columns ({_shown(list(class_names))})")
    core = (f"the labels are names ({_shown(ordered)}: {len(ordered)} distinct) that match none of "
            f"{what}.")
    if len(ordered) != n_classes:
        return CalibrationInputError(
            f"{core} With {len(ordered)} distinct labels and {n_classes} class columns no mapping can be "
            "proposed. Name each class column p_<label>, or store labels as indices 0..K-1."
        )
    pairs = list(zip(ordered, columns))
    shown = ", ".join(f"{a!r} -> {b!r}" for a, b in pairs[:8]) + (", ..." if len(pairs) > 8 else "")
    fix = LoadFix("class_names", "Use this mapping", (("class_names", tuple(ordered)),),
                  "Maps the labels, in natural order, to the class columns in file order.")
    proposal = f"Proposed mapping (labels in natural order to the columns in file order): {shown}."
    return PredictionsFileError(
        f"{core} {proposal} Nothing was guessed: pass `class_names=` with the class of each column "
        "(in column order) to accept it, or name each class column p_<label>.",
        fixes=(fix,), proposed_mapping=pairs,
        plain=f"{core} {proposal} Nothing was guessed: accept the proposed mapping if it is right, "
              "or name each class column p_<label> and load the file again.")


def labels_to_indices(parts: Parts, n_classes: int, class_names: list[str] | None,
                      notes: list[str]) -> tuple[NDArray[np.intp], list[str]]:
    """Integer labels and the final class names.

    Labels are mapped by *name* whenever the class columns carry names: a
    label equal to a class's name is that class, whatever its type (``True``
    with ``p_True``, ``2`` with ``p_2`` among ``p_cat``, ``c10`` with
    ``p_c10``). Integer labels ``0..K-1`` that do not all name a column are
    class indices. Text labels that match no column name stop the load with
    a proposed mapping (:class:`PredictionsFileError`), never a guess.

    One step per kind of label, in this order: cells pandas read as missing
    that are class names (:func:`_written_labels`), true/false
    (:func:`_bool_labels`), whole floats (:func:`_whole_float_labels`),
    integers (:func:`_integer_labels`), text (:func:`_text_labels`).
    """
    names = [str(c) for c in class_names] if class_names is not None else None
    raw = _written_labels(parts, names)
    raw, names = _bool_labels(raw, names, n_classes)
    if raw.dtype.kind == "f":
        raw = _whole_float_labels(raw, parts.label_name, parts.row_label)
    if raw.dtype.kind in "iu":
        return _integer_labels(raw, parts, n_classes, names, notes)
    return _text_labels(raw, parts, n_classes, names)


def _written_labels(parts: Parts, names: list[str] | None) -> NDArray[Any]:
    """The labels as read, or as written when every cell pandas read as missing ("NA", "null", "None")
    is a class name."""
    raw = parts.raw_labels
    if parts.raw_label_text is None or names is None:
        return raw
    missing = pd.isna(pd.Series(raw)).to_numpy()
    if missing.any():
        name_set = set(names)
        written = parts.raw_label_text()
        if written.shape == raw.shape and all(str(t).strip() in name_set for t in pd.unique(written[missing])):
            return written
    return raw


def _bool_labels(raw: NDArray[Any], names: list[str] | None,
                 n_classes: int) -> tuple[NDArray[Any], list[str] | None]:
    """True/false labels: by name when the classes are named ``True``/``False``, else class indices 0/1
    (named ``False``, ``True`` for two unnamed classes). Other labels pass through."""
    if raw.dtype != bool:
        return raw, names
    name_set = set(names or ())
    if names is not None and {"True", "False"} & name_set and {_label_text(v) for v in np.unique(raw)} <= name_set:
        return raw.astype(object), names  # mapped by name, as text
    if names is None and n_classes == 2:
        names = ["False", "True"]
    return raw.astype(np.intp), names


def _whole_float_labels(raw: NDArray[np.float64], column: str, row_label: Callable[[int], str]) -> NDArray[np.intp]:
    """Float labels as integers, refused (by row) when missing, infinite, fractional or too large."""
    finite = np.isfinite(raw)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        what = "missing (NaN)" if np.isnan(raw[row]) else "infinite"
        raise CalibrationInputError(
            f"the label in column {column!r} is {what} in {row_label(row)}; every row needs "
            "a true class. Fill in or remove that row."
        )
    whole = raw == np.round(raw)
    if not whole.all():
        row = int(np.flatnonzero(~whole)[0])
        raise CalibrationInputError(
            f"label {float(raw[row]):g} in {row_label(row)} (column {column!r}) is not a class index; "
            "labels must be whole numbers 0..K-1 or class names."
        )
    if np.abs(raw).max() > 2.0 ** 62:
        row = int(np.argmax(np.abs(raw)))
        raise CalibrationInputError(
            f"label {float(raw[row]):g} in {row_label(row)} (column {column!r}) is not a class index; "
            "labels must be whole numbers 0..K-1 or class names."
        )
    return raw.astype(np.intp)


def _integer_labels(raw: NDArray[Any], parts: Parts, n_classes: int, names: list[str] | None,
                    notes: list[str]) -> tuple[NDArray[np.intp], list[str]]:
    """Integer labels: by name when every value names a class column (``p_1, p_2, p_3`` with labels 1..3),
    else class indices, refused (by row) outside ``0..n_classes - 1``."""
    column, row_label = parts.label_name, parts.row_label
    if raw.dtype.kind == "u" and raw.size and int(raw.max()) > np.iinfo(np.intp).max:
        raise CalibrationInputError(
            f"label {int(raw.max())} (column {column!r}) is outside the classes 0..{n_classes - 1}."
        )
    values = raw.astype(np.intp, copy=False)
    low, high = int(values.min()), int(values.max())
    if names is not None and names != [str(k) for k in range(n_classes)]:
        present = np.unique(values)
        by_name = {n: k for k, n in enumerate(names)}
        if all(str(int(v)) in by_name for v in present):
            # Columns named after the label values (p_1, p_2, p_3 with labels 1..3; p_2 among p_cat).
            lookup = np.array([by_name[str(int(v))] for v in present], dtype=np.intp)
            notes.append(f"labels were matched to the class columns by name "
                         f"({_shown(parts.score_names, 4, quote=False)}).")
            return lookup[np.searchsorted(present, values)], names
    names = names or [str(k) for k in range(n_classes)]
    if low < 0 or high >= n_classes:
        bad = (values < 0) | (values >= n_classes)
        row = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"label {int(values[row])} in {row_label(row)} is outside the classes: with "
            f"{n_classes} class columns ({_shown(parts.score_names, 6, quote=False)}) labels must be "
            f"0..{n_classes - 1}. Check that every class has a column and that labels count from 0."
        )
    return values, names


def _text_labels(raw: NDArray[Any], parts: Parts, n_classes: int,
                 names: list[str] | None) -> tuple[NDArray[np.intp], list[str]]:
    """Text labels: by the class names, else by the class columns' names as written, else integers written
    as text; a label that is no class stops the load, with a proposed mapping when none matches."""
    column, row_label = parts.label_name, parts.row_label
    if raw.dtype.kind not in "OUS" and not pd.api.types.is_string_dtype(raw.dtype):
        raise CalibrationInputError(
            f"the label column {column!r} has unsupported values of type {raw.dtype}; use class "
            "indices 0..K-1 or class names."
        )
    name_set = set(names or ())
    codes, texts = _factorize_text_labels(raw, row_label, names)
    if names is not None:
        index = {n: k for k, n in enumerate(names)}
        if all(t in index for t in texts):
            lookup = np.array([index[t] for t in texts], dtype=np.intp)
            return lookup[codes], names
        # Labels that are the class columns' names as written (label class_0, column class_0): those names.
        written = [str(c).strip() for c in parts.score_names]
        index = {n: k for k, n in enumerate(written)}
        if len(index) == n_classes and all(t in index for t in texts):
            lookup = np.array([index[t] for t in texts], dtype=np.intp)
            return lookup[codes], written
    if all(re.fullmatch(r"[-+]?[0-9]{1,18}", t) for t in texts) and not any(t in name_set for t in texts):
        # Integer labels stored as text ("0", "1") with no column named by them: class indices.
        values = np.array([int(t) for t in texts], dtype=object)
        if all(0 <= v < n_classes for v in values):
            return values.astype(np.intp)[codes], names or [str(k) for k in range(n_classes)]
    if names is not None and not _generic(names) and any(t in name_set for t in texts):
        unknown = next(t for t in texts if t not in name_set)
        row = int(np.flatnonzero(codes == texts.index(unknown))[0])
        raise CalibrationInputError(
            f"label {_short(unknown)} in {row_label(row)} is not one of the classes "
            f"({_shown(names, 10)}). Name the class columns after the labels (p_<label>) "
            "or store class indices 0..K-1."
        )
    raise _propose_mapping(parts, texts, n_classes, names)


def _nonfinite_error(parts: Parts, scores: NDArray[np.float64]) -> CalibrationInputError:
    bad_rows = ~np.isfinite(scores).all(axis=1)
    row = int(np.flatnonzero(bad_rows)[0])
    col = int(np.flatnonzero(~np.isfinite(scores[row]))[0])
    value = scores[row, col]
    what = "a missing or NaN value" if np.isnan(value) else f"an infinite value ({value})"
    return CalibrationInputError(
        f"column {parts.score_names[col]!r} has {what} in {parts.row_label(row)}; "
        f"{int(bad_rows.sum())} row(s) are affected. Every probability or logit must be a finite "
        "number: fill in or remove those rows."
    )


def _describe_row(parts: Parts, scores: NDArray[np.float64], row: int, limit: int = 5) -> str:
    shown = ", ".join(f"{parts.score_names[k]}={scores[row, k]:.6g}"
                      for k in range(min(limit, scores.shape[1])))
    return shown + (", ..." if scores.shape[1] > limit else "")


def _row_list(parts: Parts, rows: NDArray[np.intp], limit: int = 5) -> str:
    shown = ", ".join(parts.row_label(int(r)) for r in rows[:limit])
    return shown + (f" and {rows.size - limit:,} more" if rows.size > limit else "")


def _constant_sum(row_sums: NDArray[np.float64]) -> float | None:
    """The common row sum when every row sums to one constant, else None.

    "One constant" allows 1 % relative spread (plus ``ROW_SUM_TOLERANCE``):
    rounded percentages (33.3 + 33.3 + 33.3) still count; logits' row sums
    spread far more.
    """
    middle = float(np.median(row_sums))
    spread = float(row_sums.max() - row_sums.min())
    return middle if spread <= ROW_SUM_TOLERANCE + 1e-2 * abs(middle) else None


def _score_error(core: str, python_hint: str, fixes: Sequence[LoadFix], rows: NDArray[np.intp],
                 app_hint: str = "") -> PredictionsFileError:
    return PredictionsFileError(f"{core} {python_hint}".strip(), fixes=fixes, rows=rows[:20].tolist(),
                                plain=f"{core} {app_hint}".strip())


def _diagnose_scores(parts: Parts, scores: NDArray[np.float64], input_kind: str,
                     percentages: bool) -> PredictionsFileError:
    """Why these values are not probabilities, with the fixes that would load them: the first diagnosis that
    fits of percentages, a binary score outside [0, 1], rows summing to another constant, values outside [0, 1],
    rows not summing to 1."""
    binary = scores.shape[1] == 1
    row_sums = scores.sum(axis=1)
    low, high = float(scores.min()), float(scores.max())
    outside = (scores < 0.0) | (scores > 1.0)
    share = float(outside.mean())
    logits_fix = () if input_kind == "logits" else (_FIX_LOGITS,)
    # Rows summing to ~100 with values in [0, 100]: percentages.
    if not percentages and low >= 0.0 and high <= 100.0 and high > 1.0 and (
            (high >= 5.0 and share >= AUTO_LOGIT_MIN_SHARE) if binary
            else bool(np.all(np.abs(row_sums - 100.0) <= 1.0))):
        return _percentages_error(parts, scores, row_sums, high)
    if binary:
        return _binary_range_error(parts, scores, outside, logits_fix)
    constant = _constant_sum(row_sums)
    if scores.shape[0] > 1 and low >= 0.0 and constant is not None and constant > 0.0 \
            and abs(constant - 1.0) > ROW_SUM_TOLERANCE:
        return _scale_error(parts, scores, constant, high, logits_fix)
    if outside.any():
        return _range_error(parts, scores, outside, share, input_kind, logits_fix)
    return _row_sum_error(parts, scores, row_sums, logits_fix)


def _percentages_error(parts: Parts, scores: NDArray, row_sums: NDArray, high: float) -> PredictionsFileError:
    """Values in [0, 100] (one binary score) or rows summing to about 100: divide by 100 (and renormalise)."""
    binary = scores.shape[1] == 1
    off = np.abs(row_sums / 100.0 - 1.0) > ROW_SUM_TOLERANCE
    fix = _FIX_PERCENTAGES if binary or not off.any() else LoadFix(
        "percentages", "Divide by 100", (("percentages", True), ("renormalize", True)),
        "Reads the values as percentages, divides them by 100 and renormalises each row to sum to 1.")
    what = (f"the values lie in [0, 100] (max {high:.6g})" if binary
            else f"every row sums to about 100 ({parts.row_label(0)}: {row_sums[0]:.6g})")
    return _score_error(
        f"{what}: percentages? Divide by 100 to read them as probabilities.",
        "Pass `percentages=True` to divide every value by 100"
        + (" (with `renormalize=True` for rows not summing to exactly 100)." if fix is not _FIX_PERCENTAGES
           else "."), (fix,), np.arange(min(scores.shape[0], 5)))


def _binary_range_error(parts: Parts, scores: NDArray, outside: NDArray, logits_fix: tuple) -> PredictionsFileError:
    """One binary score column with values outside [0, 1]: the rows, and logits as the likely fix."""
    rows = np.flatnonzero(outside[:, 0])
    value = float(scores[rows[0], 0])
    kind = "a negative probability" if value < 0.0 else "a probability above 1"
    return _score_error(
        f"the score column {parts.score_names[0]!r} holds {kind} ({value:.6g}) in "
        f"{parts.row_label(int(rows[0]))}; values outside [0, 1] appear in {_row_list(parts, rows)} "
        f"({rows.size:,} of {scores.shape[0]:,} rows). A probability must lie in [0, 1]: fix those values.",
        "If the column holds logits, pass `input_kind='logits'`.", logits_fix, rows,
        "If the column holds logits, read it as logits.")


def _scale_error(parts: Parts, scores: NDArray, constant: float, high: float, logits_fix: tuple,
                 ) -> PredictionsFileError:
    """Non-negative rows that all sum to one constant other than 1: probabilities on another scale."""
    rows = np.arange(min(scores.shape[0], 5))
    return _score_error(
        f"every row sums to {constant:.6g}, not 1 ({parts.row_label(0)}: {_describe_row(parts, scores, 0)}). "
        "The values look like probabilities on another scale; renormalise the rows to read them as "
        "probabilities.",
        "Pass `renormalize=True` to divide each row by its sum.",
        (_FIX_RENORMALIZE, *(logits_fix if high > 1.0 else ())), rows)


def _range_error(parts: Parts, scores: NDArray[np.float64], outside: NDArray[np.bool_], share: float,
                 input_kind: str, logits_fix: tuple[LoadFix, ...]) -> PredictionsFileError:
    """Class values outside [0, 1]: the first of them and its rows; logits offered when many cells are out."""
    rows = np.flatnonzero(outside.any(axis=1))
    row = int(rows[0])
    col = int(np.flatnonzero(outside[row])[0])
    kind = "a negative probability" if scores[row, col] < 0.0 else "a probability above 1"
    core = (f"column {parts.score_names[col]!r} holds {kind} ({scores[row, col]:.6g}) in "
            f"{parts.row_label(row)}; values outside [0, 1] appear in {_row_list(parts, rows)} "
            f"({rows.size:,} of {scores.shape[0]:,} rows). Probabilities must lie in [0, 1]: fix those "
            "values.")
    many = share >= 0.05
    return _score_error(
        core, "If the values are logits, pass `input_kind='logits'`." if many and logits_fix else "",
        logits_fix if many else (), rows,
        # In the app a user who just chose "probabilities" is not told to read them as logits again.
        "If the values are logits, read them as logits." if many and logits_fix
        and input_kind != "probabilities" else "")


def _row_sum_error(parts: Parts, scores: NDArray, row_sums: NDArray, logits_fix: tuple) -> PredictionsFileError:
    """Values in [0, 1] whose rows do not sum to 1: the worst row and how many are off."""
    deviation = np.abs(row_sums - 1.0)
    rows = np.flatnonzero(deviation > ROW_SUM_TOLERANCE)
    worst = int(np.argmax(deviation))
    fixes = (_FIX_RENORMALIZE, *logits_fix) if row_sums.min() > 0.0 else logits_fix
    return _score_error(
        f"the class probabilities of {parts.row_label(worst)} sum to {row_sums[worst]:.6g}, not 1 "
        f"({_describe_row(parts, scores, worst)}); {rows.size:,} of {scores.shape[0]:,} rows are off by "
        f"more than {ROW_SUM_TOLERANCE:g} ({_row_list(parts, rows)}).",
        "Pass `renormalize=True` to divide each row by its sum, or `input_kind='logits'` if the values "
        "are logits.", fixes, rows)


def round_off(values: NDArray[np.float64]) -> tuple[NDArray[np.float64], str] | None:
    """Probabilities off [0, 1] by no more than :data:`~calib_core.validation.ROW_SUM_TOLERANCE`, set on it.

    A value such as ``1 - p = -2.2e-16`` (or ``1 + 1e-10``) is floating-point
    round-off, as a row summing to ``1 + 1e-5`` is: one tolerance decides
    both, at both ends of [0, 1], for one binary score column and for class
    columns alike (in a class row summing to 1 within the tolerance, no value
    can exceed 1 by more). Values further out are left for the checks to refuse.

    Returns
    -------
    (ndarray, str) or None
        A corrected copy and the note that says so, or None when nothing is
        within the tolerance and outside [0, 1] (then ``values`` is left as it is).
    """
    low = values.min() if values.size else 0.0
    high = values.max() if values.size else 1.0
    if not (-ROW_SUM_TOLERANCE <= low and high <= 1.0 + ROW_SUM_TOLERANCE) or (low >= 0.0 and high <= 1.0):
        return None  # NaN fails the first test: nothing to round, the checks report it
    changed = int(np.count_nonzero(values < 0.0) + np.count_nonzero(values > 1.0))
    worst = f"1 - p = {float(low):.3g}" if low < 0.0 else f"p = 1 + {float(high) - 1.0:.3g}"
    ends = "0 or 1" if low < 0.0 and high > 1.0 else ("0" if low < 0.0 else "1")
    return np.clip(values, 0.0, 1.0), (
        f"{changed:,} value(s) outside [0, 1] by at most {ROW_SUM_TOLERANCE:g} (round-off such as {worst}) "
        f"were read as {ends}: the same tolerance rows may miss a sum of 1 by.")


def holds_class_zero(parts: Parts) -> bool:
    """Whether one score column is named for class 0 of 0/1 labels (``label,p_0``): it holds P(class 0)."""
    if parts.scores.shape[1] != 1 or not parts.class_names or str(parts.class_names[0]).strip() != "0":
        return False
    raw = parts.raw_labels
    if raw.dtype.kind in "iuf":
        return True
    if raw.dtype.kind == "b":
        return False
    texts = {_label_text(v) for v in pd.unique(pd.Series(raw).dropna())}
    return texts <= {"0", "1"}


def interpret_scores(parts: Parts, input_kind: str, renormalize: bool,
                     notes: list[str], *, percentages: bool = False,
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """Checked probabilities (N, K) and the logits they came from (or None).

    Values are read as logits only when the caller says so
    (``input_kind="logits"``), when the class columns are named ``logit_*``,
    or (``input_kind="auto"``) when they cannot be probabilities by a wide
    margin: at least :data:`AUTO_LOGIT_MIN_SHARE` of the cells lie outside
    [0, 1] *and* the rows do not sum to one constant (for a single binary
    score column: some values are negative). Anything else that is not a
    probability matrix raises :class:`PredictionsFileError` naming the rows,
    with the fixes that would load it. The reason for reading logits without
    being told is stored in ``parts.inferred_logit_reason``.

    The steps, in order: the shape, percentages, round-off of one binary
    column, valid probabilities (:func:`_checked_probabilities`), finiteness,
    logits read untold (:func:`_untold_logit_reason`), then logits
    (:func:`_from_logits`), one binary score, rows renormalised on request
    (:func:`_renormalised`), or the diagnosis of what is wrong.
    """
    scores = parts.scores
    if scores.ndim != 2 or scores.size == 0:
        raise CalibrationInputError(
            f"the scores ({_shown(parts.score_names, 4)}) have shape {scores.shape}: no rows or no class "
            "columns. Store one row per prediction and one column per class (or one binary score)."
        )
    binary = scores.shape[1] == 1
    if percentages:
        if input_kind == "logits":
            raise CalibrationInputError("`percentages=True` divides probabilities by 100; it cannot be "
                                        "combined with `input_kind='logits'`.")
        scores = scores / 100.0
        notes.append("the values were read as percentages and divided by 100 (on request).")
    read_as_logits = input_kind == "logits" or (input_kind == "auto" and parts.logit_reason is not None)
    if read_as_logits and input_kind == "auto":
        parts.inferred_logit_reason = f"{parts.logit_reason}"
    if not read_as_logits and binary:
        rounded = round_off(scores)
        if rounded is not None:
            scores, note = rounded
            notes.append(note)
    if not read_as_logits and not binary:
        scores, probs = _checked_probabilities(scores, parts, renormalize, notes)
        if probs is not None:
            return probs, None
    if not np.isfinite(scores).all():
        raise _nonfinite_error(parts, scores)
    if not read_as_logits and input_kind == "auto" and not percentages:
        reason = _untold_logit_reason(scores, binary)
        if reason is not None:
            read_as_logits = True
            parts.inferred_logit_reason = reason
    if read_as_logits:
        return _from_logits(scores, parts, binary, notes)
    if binary:
        if bool(((scores < 0.0) | (scores > 1.0)).any()):
            raise _diagnose_scores(parts, scores, input_kind, percentages)
        pair = [scores[:, 0], 1.0 - scores[:, 0]] if holds_class_zero(parts) else [1.0 - scores[:, 0], scores[:, 0]]
        return check_probs(np.column_stack(pair)), None
    if renormalize:
        if scores.min() < 0.0:
            raise _diagnose_scores(parts, scores, input_kind, percentages)
        return _renormalised(scores, parts, notes), None
    raise _diagnose_scores(parts, scores, input_kind, percentages)


def _checked_probabilities(scores: NDArray[np.float64], parts: Parts, renormalize: bool,
                           notes: list[str]) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """(scores, probabilities): the probabilities when the scores (after round-off) pass the shared
    validator, renormalised on request or kept with a note on how far rows are from 1; else None, and the
    scores (perhaps rounded) for the slower rules.

    Fast path: valid probabilities pass the shared validator in one blocked pass (and can never be
    logits under the untold-logit rule: no value lies outside [0, 1]). Round-off below 0 is looked for
    only when that check fails; above 1 (which that check lets through in a row summing to 1) by one
    more pass, the maximum.
    """
    try:
        probs, row_sums = check_probs_with_row_sums(scores)
        above = bool(probs.max() > 1.0)
    except CalibrationInputError:
        probs, above = None, True
    if above:
        rounded = round_off(scores)
        if rounded is not None:
            scores, note = rounded
            notes.append(note)
            try:
                probs, row_sums = check_probs_with_row_sums(scores)
            except CalibrationInputError:
                pass
    if probs is None:
        return scores, None
    deviation = np.abs(row_sums - 1.0)
    worst = int(np.argmax(deviation))
    if renormalize and deviation[worst] > 1e-12:
        changed = int((deviation > 1e-12).sum())
        notes.append(f"renormalised {changed} row(s) to sum to 1 (on request); the largest "
                     f"deviation was {deviation[worst]:.3g} ({parts.row_label(worst)}).")
        return scores, check_probs(probs / row_sums[:, None])
    if deviation[worst] > SILENT_ROW_SUM_DEVIATION:
        notes.append(f"rows sum to 1 only within {deviation[worst]:.3g} "
                     f"({parts.row_label(worst)}); the values were kept as they are "
                     "(renormalising is available on request).")
    return scores, probs


def _untold_logit_reason(scores: NDArray[np.float64], binary: bool) -> str | None:
    """Why finite scores must be logits though nobody said so (None when they may be probabilities): at
    least :data:`AUTO_LOGIT_MIN_SHARE` of the values lie outside [0, 1], and the rows do not sum to one
    positive constant (one binary column: some values are negative)."""
    outside = (scores < 0.0) | (scores > 1.0)
    share = float(outside.mean())
    constant = None if binary else _constant_sum(scores.sum(axis=1))
    # A constant row sum <= 0 is no probability scale (centred logits, e.g. scikit-learn's
    # multinomial decision_function, sum to 0), so it does not stop the logit reading.
    if share >= AUTO_LOGIT_MIN_SHARE and (
            bool((scores < 0.0).any()) if binary else constant is None or constant <= ROW_SUM_TOLERANCE):
        return (f"{share:.0%} of the values lie outside [0, 1] (min {float(scores.min()):.4g}, max "
                f"{float(scores.max()):.4g})" + ("" if binary else " and the rows do not sum to one positive "
                                                  "constant"))
    return None


def _from_logits(scores: NDArray[np.float64], parts: Parts, binary: bool,
                 notes: list[str]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(probabilities, logits): the softmax of the logits; one binary column is the logit of the class
    :func:`holds_class_zero` says, against a zero (a sigmoid). A note says why, when nobody said so."""
    if parts.inferred_logit_reason is not None:
        notes.append(f"read as logits because {parts.inferred_logit_reason}; converted to probabilities "
                     "with " + ("a sigmoid" if binary else "a softmax") + " (the logits are kept).")
    logits = scores
    if binary:
        zeros = np.zeros(scores.shape[0])
        logits = np.column_stack([scores[:, 0], zeros] if holds_class_zero(parts) else [zeros, scores[:, 0]])
    return softmax(logits), logits


def _renormalised(scores: NDArray[np.float64], parts: Parts, notes: list[str]) -> NDArray[np.float64]:
    """Non-negative scores divided by their row sums (on request), refused for a row summing to 0."""
    row_sums = scores.sum(axis=1)
    if row_sums.min() <= 0.0:
        row = int(np.flatnonzero(row_sums <= 0.0)[0])
        raise CalibrationInputError(
            f"{parts.row_label(row)} sums to 0 ({_describe_row(parts, scores, row)}), so it "
            "cannot be renormalised; fix or remove it."
        )
    deviation = np.abs(row_sums - 1.0)
    worst = int(np.argmax(deviation))
    changed = int((deviation > 1e-12).sum())
    if changed:
        notes.append(f"renormalised {changed} row(s) to sum to 1 (on request); the largest deviation was "
                     f"{deviation[worst]:.3g} ({parts.row_label(worst)}).")
    return check_probs(scores / row_sums[:, None])


def binary_class_names(parts: Parts, notes: list[str]) -> list[str] | None:
    """Class names for one score column (it gives P(class 1)).

    Text labels are matched by name: a score column named after one of the
    two labels (``p_dog``) gives that class's probability. A column whose
    name is not a label stops the load with a proposed mapping (the labels
    in natural order: the second is class 1), never a guess.
    """
    raw = parts.raw_labels
    column = parts.score_names[0]
    named = parts.class_names[0].strip() if parts.class_names else None
    said = (f"the score column {column!r} was taken as the probability of class 1 "
            + ("(its name names no class)." if named is None else f"(its name names class {named!r}, not a label).")
            + " If it holds another class's probability, name it p_<class>.")
    if raw.dtype.kind in "fiub":
        if raw.dtype.kind != "b" and named not in ("0", "1"):
            notes.append(said)
        return None
    _, texts = _factorize_text_labels(raw, parts.row_label)
    distinct = sorted(texts, key=_natural_key)
    if set(distinct) <= {"0", "1"}:
        if named not in ("0", "1"):
            notes.append(said)
        return None  # 0/1 written as text: class indices
    positive = parts.class_names[0].strip() if parts.class_names else None
    if positive is not None and positive not in distinct and not _generic([positive]) and parts.class_names \
            and parts.score_names[0] != positive:
        raise CalibrationInputError(
            f"the score column {parts.score_names[0]!r} is named after class {positive!r}, but the "
            f"labels are {_shown(distinct)}. Rename the column after the class whose probability it "
            "holds, or store labels as 0/1."
        )
    if positive is not None and positive in distinct and len(distinct) == 2:
        other = distinct[0] if distinct[1] == positive else distinct[1]
        return [other, positive]
    if len(distinct) > 2:
        raise CalibrationInputError(
            f"one score column ({parts.score_names[0]!r}) means a binary problem, but the labels "
            f"have {len(distinct)} values ({_shown(distinct)}). Add one column per class (p_<label>)."
        )
    if len(distinct) == 2:
        negative, positive_label = distinct
        core = (f"the score column {parts.score_names[0]!r} is not named after either label "
                f"({negative!r}, {positive_label!r}), so which class it gives the probability of is unknown.")
        proposal = (f"Proposed mapping: the column holds P({positive_label!r}) and 1 minus it is "
                    f"P({negative!r}) (labels in natural order).")
        fix = LoadFix("class_names", "Use this mapping", (("class_names", (negative, positive_label)),),
                      f"Reads the score column as the probability of {positive_label!r}.")
        return_error = PredictionsFileError(
            f"{core} {proposal} Nothing was guessed: pass `class_names=({negative!r}, {positive_label!r})` "
            "to accept it, or name the column p_<label> after its class.",
            fixes=(fix,), proposed_mapping=[(negative, f"1 - {parts.score_names[0]}"),
                                            (positive_label, parts.score_names[0])],
            plain=f"{core} {proposal} Nothing was guessed: accept the proposed mapping if it is right, or "
                  "name the column p_<label> after its class and load the file again.")
        raise return_error
    raise CalibrationInputError(
        f"all labels are {distinct[0]!r}, so the name of the other class of the binary score "
        f"column {parts.score_names[0]!r} is unknown; store labels as 0/1."
    )

