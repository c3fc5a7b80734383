"""Confidence files: ``question_id, confidence, correct`` (LLM answers, judges, forecasters).

A confidence file holds, per item, a stated confidence that the answer is
right and whether it was right; optionally an item identifier, a group or
task, a split and the system (``model``) that answered. It is recognised by
its column names, without options (:func:`is_confidence_table`): a
correctness column (:data:`CORRECT_NAMES`), a confidence column
(:data:`CONFIDENCE_NAMES`) and no label column (:data:`~calib_core.io.columns.LABEL_NAMES`);
``load_predictions(..., kind="confidence")`` forces the reading.

Values:

* correctness: 0/1, true/false, yes/no, right/wrong, correct/incorrect
  (any case); anything else is refused by row.
* confidence: probabilities in [0, 1]; percentages (some value above 1, all
  within [0, 100]) or text with a percent sign (``"85%"``) are divided by
  100 and a note says so. Values outside both scales are refused by row.

:func:`confidence_parts` returns the arrays; :mod:`calib_core.io.predictions`
stores them as a confidence model (``probs = [1 - c, c]``, ``labels =
correct``; :mod:`calib_core.metrics.confidence`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.io.columns import (LABEL_NAMES, _find_column, _shown, _split_column, _split_values, group_text,
                                   _note_missing_groups, _attribute_columns)
from calib_core.io.formats import Table, _as_text
from calib_core.validation import CalibrationInputError, check_confidence_correct, correct_rows

__all__ = ["CONFIDENCE_CLASSES", "CONFIDENCE_NAMES", "CORRECT_NAMES", "ID_NAMES", "MODEL_NAMES", "ConfidenceAccess",
           "ConfidenceParts", "SeveralModelsError", "confidence_models", "confidence_parts", "is_confidence_frame",
           "is_confidence_table"]

#: The class names of a confidence model's matrix ``[1 - c, c]`` (labels: 0 wrong, 1 right).
CONFIDENCE_CLASSES = ("wrong", "right")

#: Column names (lower-case) of a stated confidence, in order of preference.
CONFIDENCE_NAMES = (
    "confidence", "conf", "p_correct", "prob_correct", "probability_correct", "p_right", "prob_right",
    "confidence_score", "stated_confidence", "verbalized_confidence", "verbalised_confidence", "p_true",
    "p_yes", "certainty", "score", "prob", "probability",
)
#: Column names (lower-case) of the correctness, in order of preference.
CORRECT_NAMES = (
    "correct", "is_correct", "correctness", "was_correct", "right", "is_right", "hit", "acc", "accuracy",
    "exact_match", "em", "match", "success", "passed", "pass",
)
#: Column names (lower-case) of the item identifier that matches the rows of several systems.
ID_NAMES = ("question_id", "item_id", "id", "qid", "example_id", "sample_id", "doc_id", "task_id", "problem_id",
            "uid", "index", "idx")
#: Column names (lower-case) of the system that answered (a long file of several systems).
MODEL_NAMES = ("model", "system", "model_name", "llm", "forecaster", "judge")

_TRUE = frozenset({"1", "1.0", "true", "t", "yes", "y", "right", "correct"})
_FALSE = frozenset({"0", "0.0", "false", "f", "no", "n", "wrong", "incorrect"})


@dataclass
class ConfidenceParts:
    """What a confidence file holds, checked: one entry per row."""

    confidence: NDArray[np.float64]
    correct: NDArray[np.intp]
    confidence_name: str
    correct_name: str
    ids: NDArray[np.str_] | None = None
    id_name: str | None = None
    models: NDArray[np.str_] | None = None
    model_name: str | None = None
    split: NDArray[np.str_] | None = None
    groups: NDArray[np.str_] | None = None
    group_name: str | None = None
    attributes: list[str] = field(default_factory=list)


def _first(columns: Sequence[str], names: Sequence[str]) -> str | None:
    lower = {c.strip().lower(): c for c in reversed(list(columns))}
    return next((lower[n] for n in names if n in lower), None)


def is_confidence_table(columns: Sequence[str]) -> bool:
    """Whether a table's column names make it a confidence file: a correctness and a confidence column, no label.

    Examples
    --------
    >>> is_confidence_table(["question_id", "confidence", "correct"]), is_confidence_table(["label", "confidence"])
    (True, False)
    """
    names = [str(c) for c in columns]
    return (_first(names, CORRECT_NAMES) is not None and _first(names, CONFIDENCE_NAMES) is not None
            and _first(names, LABEL_NAMES) is None)


def is_confidence_frame(frame: pd.DataFrame) -> bool:
    """Whether a table is a confidence file, by its names and, beside a label column, by its values.

    Without a label column, :func:`is_confidence_table` (names only). With one
    (``label,score,correct``: the task's labels beside what a judge or an LLM
    stated), a confidence file needs both a correctness-named column whose
    every value is 0/1, true/false, yes/no (:data:`CORRECT_NAMES`) and exactly
    one confidence-named column (:data:`CONFIDENCE_NAMES`) among the others.
    Class columns that happen to be named like correctness (``right,left``,
    ``correct,incorrect`` holding probabilities) fail one of the two and are
    read as classes, as before.

    Examples
    --------
    >>> is_confidence_frame(pd.DataFrame({"label": ["a", "b"], "score": [0.9, 0.2], "correct": [1, 0]}))
    True
    >>> is_confidence_frame(pd.DataFrame({"label": [0, 1], "correct": [0.9, 0.2], "incorrect": [0.1, 0.8]}))
    False
    """
    names = [str(c) for c in frame.columns]
    if is_confidence_table(names):
        return True
    label, correct = _first(names, LABEL_NAMES), _first(names, CORRECT_NAMES)
    if label is None or correct is None:
        return False
    stated = [c for c in names if c not in (label, correct) and c.strip().lower() in CONFIDENCE_NAMES]
    if len(stated) != 1:
        return False
    values = frame[correct]
    if values.dtype == bool:
        return True
    text = _as_text(values).str.strip().str.lower()
    return bool(values.notna().all() and text.isin(_TRUE | _FALSE).all())


def _correct_values(values: pd.Series, column: str, row_label) -> NDArray[np.intp]:
    """0/1 from 0/1, true/false, yes/no, right/wrong (any case); refused by row otherwise."""
    if values.dtype == bool:
        return values.to_numpy().astype(np.intp)
    missing = values.isna().to_numpy()
    text = _as_text(values).str.strip().str.lower().to_numpy(dtype=object)
    hits = np.isin(text, list(_TRUE))
    misses = np.isin(text, list(_FALSE))
    bad = missing | ~(hits | misses)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = "missing" if missing[row] else repr(values.iloc[row])
        raise CalibrationInputError(
            f"the correctness column {column!r} is {what} in {row_label(row)}; it must be 0/1, true/false or "
            "yes/no for every row. Fill in or remove that row.")
    return hits.astype(np.intp)


def _confidence_values(values: pd.Series, column: str, row_label, notes: list[str]) -> NDArray[np.float64]:
    """Confidences in [0, 1]: numbers as written, percentages (a value above 1, all within [0, 100]) or
    ``"85%"`` divided by 100 with a note; refused by row otherwise."""
    percent_signs = False
    if values.dtype.kind in "iuf":
        numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = _as_text(values).str.strip()
        signed = text.str.endswith("%").to_numpy() & values.notna().to_numpy()
        percent_signs = bool(signed.any())
        numbers = np.array(pd.to_numeric(text.str.rstrip("%").str.strip(), errors="coerce"), dtype=np.float64)
        numbers[signed] /= 100.0
        numbers[values.isna().to_numpy()] = np.nan
        if percent_signs and not signed.all():
            row = int(np.flatnonzero(~signed)[0])
            raise CalibrationInputError(
                f"the confidence column {column!r} mixes percentages ('85%') with plain numbers "
                f"({values.iloc[row]!r} in {row_label(row)}); write every confidence the same way.")
    bad = ~np.isfinite(numbers)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"the confidence column {column!r} holds {values.iloc[row]!r} in {row_label(row)}, not a number; "
            "every row needs a confidence in [0, 1] (or a percentage).")
    low, high = float(numbers.min()), float(numbers.max())
    if percent_signs:
        notes.append(f"the confidences in {column!r} were written as percentages ('85%') and divided by 100.")
    elif high > 1.0 and low >= 0.0 and high <= 100.0:
        numbers = numbers / 100.0
        notes.append(f"the confidences in {column!r} lie in [0, 100] (largest {high:g}), so they were read as "
                     "percentages and divided by 100.")
    outside = (numbers < 0.0) | (numbers > 1.0)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise CalibrationInputError(
            f"the confidence in {row_label(row)} ({values.iloc[row]!r}, column {column!r}) is outside [0, 1] "
            "(and the column is not on a 0-100 percentage scale); a confidence is a probability that the answer "
            "is right.")
    return numbers


def _text_column(values: pd.Series) -> NDArray[np.str_]:
    return group_text(values)[0]


def confidence_parts(table: Table, *, display: str, notes: list[str], split_column: str | None = "split",
                     group_column: str | None = None, confidence_column: str | None = None,
                     correct_column: str | None = None) -> ConfidenceParts:
    """The confidence, correctness, id, system, split and group of a confidence file, checked.

    Raises
    ------
    CalibrationInputError
        No correctness or confidence column (the message lists the names
        looked for), a value that is not 0/1 or not a confidence, a column
        in two roles.
    """
    frame, row_label = table.frame, table.row_label
    columns = [str(c) for c in frame.columns]
    if frame.shape[0] == 0:
        raise CalibrationInputError(f"{display} has a header ({_shown(columns, 8)}) but no data rows.")
    confidence = (_find_column(columns, confidence_column, "confidence column", "confidence_column")
                  if confidence_column is not None else _first(columns, CONFIDENCE_NAMES))
    correct = (_find_column(columns, correct_column, "correctness column", "correct_column")
               if correct_column is not None else _first(columns, CORRECT_NAMES))
    if confidence is None or correct is None:
        missing = [what for what, found in (("correctness", correct), ("confidence", confidence)) if found is None]
        raise CalibrationInputError(
            f"{display} is read as a confidence file but has no {' or '.join(missing)} column (columns: "
            f"{_shown(columns, 10)}). Name the confidence column {', '.join(CONFIDENCE_NAMES[:4])} ... and the "
            f"correctness column {', '.join(CORRECT_NAMES[:4])} ...")
    if confidence == correct:
        raise CalibrationInputError(f"column {confidence!r} cannot be both the confidence and the correctness.")
    hits = _correct_values(frame[correct], correct, row_label)
    values = _confidence_values(frame[confidence], confidence, row_label, notes)
    parts = ConfidenceParts(values, hits, confidence, correct)
    taken = {confidence, correct}
    parts.id_name = _first([c for c in columns if c not in taken], ID_NAMES) or next(
        (c for c in columns if c not in taken and c.strip().lower().endswith("_id")), None)
    if parts.id_name is not None:
        parts.ids = _text_column(frame[parts.id_name])
        taken.add(parts.id_name)
    parts.model_name = _first([c for c in columns if c not in taken], MODEL_NAMES)
    if parts.model_name is not None:
        parts.models = _text_column(frame[parts.model_name])
        taken.add(parts.model_name)
    split_name = _split_column(columns, split_column)
    if split_name is not None and split_name not in taken:
        parts.split = _split_values(frame, split_name, notes)
        taken.add(split_name)
    if group_column is not None:
        group_name = _find_column(columns, group_column, "group column", "group")
        if group_name in taken:
            raise CalibrationInputError(
                f"column {group_name!r} already has a role in this confidence file; choose another group column.")
        parts.groups, n_missing = group_text(frame[group_name])
        parts.group_name = group_name
        _note_missing_groups(n_missing, group_name, notes)
        taken.add(group_name)
    parts.attributes = _attribute_columns(table, columns, taken | {parts.group_name})
    label = _first([c for c in columns if c not in taken], LABEL_NAMES)
    if label is not None:
        notes.append(f"column {label!r} is kept as an attribute (the items' labels or tasks; it can be the group), "
                     "not read as classes: a confidence file needs no label.")
    notes.append(f"read as a confidence file: {confidence!r} is the stated confidence and {correct!r} whether the "
                 "answer was right" + (f"; {parts.id_name!r} identifies the items" if parts.id_name else "") + ".")
    return parts


class SeveralModelsError(CalibrationInputError):
    """A confidence file holding several systems (a ``model`` column): ``models`` holds one per system.

    Attributes
    ----------
    models : tuple of Predictions
        One confidence model per system, in order of first appearance, named
        after the system (rows not yet matched by id: :func:`load_confidence_models` does that).
    """

    def __init__(self, message: str, models: Sequence[Any]) -> None:
        super().__init__(message)
        self.models = tuple(models)


def confidence_models(table: Table, display: str, model_name: str, fmt: str, *, name_given: bool,
                      factory: Callable[..., Any], split_column: str | None, group: str | None,
                      notes: list[str]) -> Any:
    """The confidence model of a confidence file, made by ``factory`` (``Predictions.from_confidence``); a file
    of several systems raises :class:`SeveralModelsError` with one model each."""
    parts = confidence_parts(table, display=display, notes=notes, split_column=split_column, group_column=group)

    def build(rows: NDArray[np.bool_] | slice, label: str, extra: tuple[str, ...] = ()) -> Any:
        pick = (lambda a: None if a is None else a[rows])
        model = factory(
            parts.confidence[rows], parts.correct[rows], name=label, ids=pick(parts.ids), split=pick(parts.split),
            groups=pick(parts.groups), group_column=parts.group_name, source_format=fmt, id_column=parts.id_name,
            warnings=tuple(notes) + extra)
        object.__setattr__(model, "attribute_columns", tuple(parts.attributes))
        return model

    systems = [] if parts.models is None else [str(s) for s in pd.unique(parts.models)]
    if len(systems) <= 1:
        label = model_name if not systems or name_given else f"{model_name}: {systems[0]}"
        return build(slice(None), label)
    models = [build(parts.models == system, system, (f"system {system!r} of the column {parts.model_name!r}.",))
              for system in systems]
    raise SeveralModelsError(
        f"{display} holds {len(systems)} systems in column {parts.model_name!r} ({_shown(systems, 6)}); "
        "load it with calib_core.io.systems.load_confidence_models, which returns one model per system with their rows "
        "matched by id.", models)


class ConfidenceAccess:
    """What every :class:`~calib_core.io.Predictions` offers about confidence and correctness (its base class).

    A confidence model is stored as ``probs = [1 - c, c]`` with ``labels = correct`` (``kind="confidence"``);
    :attr:`confidence` and :attr:`correct` read the pair back for it, and give the top-label confidence and
    correctness of a K-class model, so pages and metrics needing ``(confidence, correct)`` work for both.
    """

    @classmethod
    def from_confidence(cls, confidence: ArrayLike, correct: ArrayLike, *, name: str = "model",
                        ids: ArrayLike | None = None, split: ArrayLike | None = None,
                        groups: ArrayLike | None = None, group_column: str | None = None,
                        source_format: str = "arrays", warnings: Sequence[str] = (),
                        id_column: str | None = None) -> "ConfidenceAccess":
        """A confidence model from its stated confidences and their correctness.

        Parameters
        ----------
        confidence : array_like of shape (N,)
            Stated probability that each answer is right, in [0, 1].
        correct : array_like of shape (N,)
            1/True where the answer was right, 0/False where wrong.
        name, ids, split, groups, group_column, source_format, warnings, id_column
            As in :class:`Predictions` (``id_column`` is kept only with ``ids``).

        Examples
        --------
        >>> from calib_core import Predictions
        >>> pred = Predictions.from_confidence([0.9, 0.3, 0.8], [1, 0, 0])
        >>> pred.kind, round(pred.accuracy, 4), pred.confidence.tolist()
        ('confidence', 0.3333, [0.9, 0.3, 0.8])
        """
        values, hits = check_confidence_correct(confidence, correct)
        return cls(probs=np.column_stack([1.0 - values, values]), labels=hits.astype(np.intp),
                   class_names=CONFIDENCE_CLASSES, name=name, split=split, source_format=source_format,
                   warnings=tuple(warnings), groups=groups, group_column=group_column, kind="confidence",
                   ids=ids, id_column=None if ids is None else id_column)

    @property
    def confidence(self) -> NDArray[np.float64]:
        """Per-row confidence that the prediction is right: the stated confidence of a confidence model,
        the top-label probability ``max_k probs[i, k]`` of a K-class model."""
        if self.kind == "confidence":
            return self.probs[:, 1]
        return self.probs.max(axis=1)

    @property
    def correct(self) -> NDArray[np.float64]:
        """Per-row 1.0 where the prediction was right, else 0.0: a confidence model's outcome, a K-class
        model's arg-max class (ties: lowest index) against the label (:func:`calib_core.validation.correct_rows`)."""
        if self.kind == "confidence":
            return self.labels.astype(np.float64)
        return correct_rows(self.probs, self.labels)

    def as_confidence(self) -> "ConfidenceAccess":
        """This model as a confidence model: its :attr:`confidence` and :attr:`correct` (itself when it is one).

        A K-class model keeps only its top label, so the confidence metrics
        (ECE of confidence vs correctness, AURC, ...) apply to it.
        """
        if self.kind == "confidence":
            return self
        return type(self).from_confidence(
            self.confidence, self.correct, name=self.name, ids=self.ids, split=self.split, groups=self.groups,
            group_column=self.group_column, source_format=self.source_format, id_column=self.id_column,
            warnings=self.warnings + ("the top-label confidence and correctness of a K-class model.",))
