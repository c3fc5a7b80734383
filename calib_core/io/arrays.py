"""NPZ archives and NPY arrays: which array holds the labels, the scores, the split and the group.

The array counterpart of :mod:`calib_core.io.columns`: an NPZ archive's arrays
are found by the caller's names, else by known names (:data:`_NPZ_PROB_KEYS`,
``logits``, ``labels``, ``class_names``), else as the one matrix and the one
integer vector of unnamed arrays; a structured NPY array is read as a table
(:func:`~calib_core.io.columns.table_parts`), a plain (N, K + 1) array by the
column that holds whole numbers. Both give :class:`~calib_core.io.columns.Parts`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.columns import Parts, _note_missing_groups, _too_many_classes, group_text, table_parts
from calib_core.io.formats import MAX_CLASSES, Table, _label_text, plain_row_label
from calib_core.io.readers import _check_column_count
from calib_core.validation import ROW_SUM_TOLERANCE, CalibrationInputError

# NPZ array names (lower-case), in order of preference.
_NPZ_PROB_KEYS = ("probs", "probabilities", "proba", "prob", "y_prob", "y_proba", "p",
                  "predictions", "preds", "softmax", "scores", "score", "y_score",
                  "outputs", "output", "confidences")
_NPZ_LOGIT_KEYS = ("logits", "logit")
_NPZ_LABEL_KEYS = ("labels", "label", "y_true", "y", "targets", "target", "true",
                   "truth", "ground_truth", "gt", "true_labels")
_NPZ_NAME_KEYS = ("class_names", "classes", "names", "label_names", "target_names")


def _npz_score_override(class_columns: Sequence[str] | None, score_column: str | None) -> str | None:
    """The score array the caller names: ``score_column=``, or ``class_columns=`` naming one array."""
    if class_columns is None:
        return score_column
    cols = [class_columns] if isinstance(class_columns, str) else list(class_columns)
    if len(cols) != 1:
        raise CalibrationInputError(
            "for NPZ files pass the name of the one array holding the scores, e.g. "
            "`score_column='probs'`."
        )
    return cols[0]


def _npz_keys(arrays: dict[str, NDArray[Any]], display: str, label_column: str | None,
              key_override: str | None, notes: list[str]) -> tuple[str, str | None, str | None]:
    """(label key, probability key, logit key): by the caller's names, else the known names, else the
    one matrix and the one integer vector of unnamed arrays (``np.savez(f, probs, labels)``)."""
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
    if prob_key is None and logit_key is None:
        raise CalibrationInputError(
            f"no probability or logit array found in {display}; it holds: {', '.join(arrays)}. "
            "Name it 'probs' or 'logits', or pass `score_column=` with its name."
        )
    return label_key, prob_key, logit_key


def _npz_scores(arrays: dict[str, NDArray[Any]], key: str, display: str) -> NDArray[Any]:
    """The score array as (N, K) (a vector is one binary score column), refused if not numeric or too wide."""
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
    return scores


def _npz_labels(arrays: dict[str, NDArray[Any]], label_key: str, key: str, n_rows: int,
                display: str) -> NDArray[Any]:
    """The label array as a plain vector of ``n_rows`` (a column vector is flattened), with rows at all."""
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
    if labels.shape[0] != n_rows:
        raise CalibrationInputError(
            f"{display}: {key!r} has {n_rows} rows but {label_key!r} has {labels.shape[0]}."
        )
    if n_rows == 0:
        raise CalibrationInputError(f"{display} has no rows (array {key!r} is empty).")
    return labels


def _npz_split(arrays: dict[str, NDArray[Any]], split_column: str | None, n_rows: int,
               display: str) -> tuple[str | None, NDArray[np.str_] | None]:
    """(split key, split names as text) when the archive holds the split array, else (None, None)."""
    split_key = _pick_key(arrays, None, (str(split_column).lower(),), "split", display) \
        if split_column is not None else None
    if split_key is None:
        return None, None
    split = np.asarray(arrays[split_key])
    if split.dtype.names or split.dtype.kind not in "OUSiub":
        raise CalibrationInputError(
            f"split array {split_key!r} of {display} has dtype {split.dtype}; store the split "
            "names as strings (e.g. 'calibration', 'test')."
        )
    split = np.char.decode(split, "utf-8", errors="replace") if split.dtype.kind == "S" else split.astype(str)
    if split.shape != (n_rows,):
        raise CalibrationInputError(
            f"split array {split_key!r} of {display} has shape {split.shape}, expected ({n_rows},)."
        )
    return split_key, split


def _npz_groups(arrays: dict[str, NDArray[Any]], group_column: str | None, taken: set[str | None], n_rows: int,
                display: str, notes: list[str]) -> tuple[str | None, NDArray[np.str_] | None]:
    """(group key, groups as text) for the array ``group=`` names: a plain vector of ``n_rows`` not already
    in another role (``taken``)."""
    group_key = _pick_key(arrays, group_column, (), "group", display) if group_column is not None else None
    if group_key is None:
        return None, None
    if group_key in taken:
        raise CalibrationInputError(
            f"array {group_key!r} of {display} already holds the labels, scores, split or class names; "
            "choose another array as the group (`group=`)."
        )
    group_array = np.asarray(arrays[group_key])
    if group_array.dtype.names or group_array.ndim != 1 or group_array.shape[0] != n_rows:
        raise CalibrationInputError(
            f"group array {group_key!r} of {display} has shape {group_array.shape} (dtype {group_array.dtype}); "
            f"it must be a plain 1-D array of {n_rows} group names."
        )
    if group_array.dtype.kind == "S":
        group_array = np.char.decode(group_array, "utf-8", errors="replace")
    groups, n_missing = group_text(pd.Series(group_array))
    _note_missing_groups(n_missing, group_key, notes)
    return group_key, groups


def _npz_parts(arrays: dict[str, NDArray[Any]], *, display: str, label_column: str | None,
              class_columns: Sequence[str] | None, score_column: str | None,
              split_column: str | None, notes: list[str], group_column: str | None = None) -> Parts:
    """The parts of an NPZ archive: its label, score (probabilities, else logits), class-name, split and
    group arrays, found by the caller's names or the known ones; logits stored beside probabilities are
    kept, other 1-D arrays of one value per row are attributes."""
    label_key, prob_key, logit_key = _npz_keys(arrays, display, label_column,
                                               _npz_score_override(class_columns, score_column), notes)
    logit_reason = f"the array {logit_key!r} holds logits" if prob_key is None else None
    key = prob_key if prob_key is not None else logit_key
    assert key is not None
    scores = _npz_scores(arrays, key, display)
    logits_kept = logit_key if prob_key is not None and logit_key is not None else None
    n_rows = scores.shape[0]
    labels = _npz_labels(arrays, label_key, key, n_rows, display)
    name_key = _pick_key(arrays, None, _NPZ_NAME_KEYS, "class-name", display)
    class_names = None
    if name_key is not None:
        class_names = [_label_text(v) for v in np.asarray(arrays[name_key]).ravel()]
    split_key, split = _npz_split(arrays, split_column, n_rows, display)
    group_key, groups = _npz_groups(arrays, group_column, {label_key, key, split_key, name_key, logits_kept},
                                    n_rows, display, notes)
    used = {label_key, key, name_key, split_key, logits_kept, group_key}
    attributes = [k for k, a in arrays.items() if k not in used and a.ndim == 1 and not a.dtype.names
                  and a.shape[0] == n_rows and a.dtype.kind in "iubOUS"]
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
    label_index = _npy_label_index(array, label_column, display, notes)
    keep = [j for j in range(n_cols) if j != label_index]
    scores = np.ascontiguousarray(array[:, keep], dtype=np.float64)
    return Parts(scores=scores, raw_labels=array[:, label_index],
                 score_names=[f"column {j}" for j in keep], class_names=None,
                 label_name=f"column {label_index}", logit_reason=None, split=None,
                 row_label=plain_row_label, notes=notes)


def _npy_label_index(array: NDArray[Any], label_column: str | None, display: str, notes: list[str]) -> int:
    """The column of a plain (N, K + 1) array that holds the labels: the number the caller gives, else the
    first or last column when only one of them holds whole numbers 0..K - 1 (or, when both do, only one
    leaves rows summing to 1)."""
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
        return label_index % n_cols

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
    notes.append(f"{display} has no column names; took column {candidates[0]} as the labels.")
    return candidates[0]


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
