"""Reading predictions from files: CSV/TSV, Parquet, NPZ and NPY.

:func:`load_predictions` turns a file of model outputs into a validated
:class:`Predictions` object (probabilities, integer labels, class names,
the logits when the file held logits, an optional split column and a list
of warnings). It accepts the layouts people actually write:

* wide: a label column and one column per class (``label, p_cat, p_dog``);
* binary: a label column and one score column holding P(class 1), or one
  logit column;
* labels as integer indices or as class-name strings matched to the class
  columns' names (``p_cat`` -> ``cat``);
* NPZ archives with arrays such as ``probs``/``logits`` and ``labels``.

Every problem raises :class:`~calib_core.validation.CalibrationInputError`
with a message that names the problem, shows an example row or column and
says how to fix it. Nothing is dropped, clipped or renormalised without a
warning in :attr:`Predictions.warnings`.

:func:`demo_datasets` and :func:`load_demo` give the bundled demo files in
``data/demo`` (see ``scripts/make_demo_data.py``).
"""
from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings as _warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Sequence, Union

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.validation import (
    ROW_SUM_TOLERANCE,
    CalibrationInputError,
    check_choice,
    check_labels,
    check_probs,
    check_probs_with_row_sums,
    softmax,
)

__all__ = ["Predictions", "LoadFix", "PredictionsFileError", "load_predictions", "demo_datasets",
           "load_demo", "MAX_CLASSES", "MISSING_GROUP", "DEMO_GROUP_COLUMNS"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO]

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

_FORMATS = {
    "csv": "csv", "txt": "csv", "tsv": "csv", "tab": "csv",
    "parquet": "parquet", "pq": "parquet", "parq": "parquet",
    "npz": "npz", "npy": "npy",
}
_INPUT_KINDS = ("auto", "probabilities", "logits")

#: Row sums within this distance of 1 are accepted without a warning.
SILENT_ROW_SUM_DEVIATION = 1e-6

_SNIFF_BYTES = 1 << 16

#: Largest number of classes (class columns) a file may have. Loading is linear in
#: the number of columns, but every page draws per-class views; ImageNet-21k's
#: 21,841 classes fit. A file with more class columns is refused with a message.
MAX_CLASSES = 25_000

#: Values read as logits without being told only when at least this share of
#: the cells lies outside [0, 1] (and the rows do not sum to one constant).
AUTO_LOGIT_MIN_SHARE = 0.25

#: The group of rows whose group column is empty (NaN, "", "NA", ...): they are
#: kept, as a group of their own, and a note says how many there are.
MISSING_GROUP = "(missing)"

#: The group column :func:`load_demo` reads for demos that have one.
DEMO_GROUP_COLUMNS = {"fair_logistic_regression": "occupation"}


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


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a 200,000-digit cell stays readable)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 5]}...({len(text):,} characters)"


def _shown(items: Sequence[Any], limit: int = 6, *, quote: bool = True) -> str:
    """At most ``limit`` items joined by commas, then "..." (messages stay short for huge files)."""
    head = [_short(x) if quote else str(x)[:60] for x in list(items[:limit])]
    return ", ".join(head) + (", ..." if len(items) > limit else "")


# ---------------------------------------------------------------------------
# The result object
# ---------------------------------------------------------------------------

def _readonly(array: NDArray[Any]) -> NDArray[Any]:
    """A read-only view: the caller's array stays writeable, ours cannot be changed."""
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False)
class Predictions:
    """A model's predictions on a labelled set, validated.

    Parameters
    ----------
    probs : ndarray of shape (N, K), float64
        Predicted probabilities, rows on the simplex (within
        ``ROW_SUM_TOLERANCE``).
    labels : ndarray of shape (N,), intp
        True classes as indices ``0..K-1``.
    class_names : tuple of str, length K
        Name of each class (column ``k`` of ``probs``).
    logits : ndarray of shape (N, K), float64, optional
        The logits ``probs`` came from (``probs = softmax(logits)``) when the
        source held logits. A single binary logit ``z`` is stored as the
        row ``[0, z]``, whose softmax is ``[1 - sigmoid(z), sigmoid(z)]``.
    split : ndarray of shape (N,), str, optional
        Per-row split name (such as ``"calibration"`` / ``"test"``).
    name : str
        Model name shown in tables and legends.
    source_format : str
        ``"csv"``, ``"parquet"``, ``"npz"``, ``"npy"``, ``"arrays"``.
    warnings : tuple of str
        Everything the loader assumed or changed, in plain words (also
        :attr:`notes`): a fix applied on request (renormalised rows, values
        divided by 100) is stated here.
    logit_reason : str, optional
        Why the values were read as logits *without being told* (class
        columns named ``logit_*``, or values that cannot be probabilities);
        None when they were read as probabilities or the caller asked for
        logits. An app shows it first, with a way to refuse
        (``input_kind="probabilities"``).
    groups : ndarray of shape (N,), str, optional
        Per-row group (a sensitive attribute, a site, a device ...) for the
        subgroup analysis of :func:`calib_core.by_group`; None unless a group
        column was asked for (``load_predictions(..., group=COL)``). Rows
        with no value form the group :data:`MISSING_GROUP`.
    group_column : str, optional
        The column ``groups`` came from (None without groups).
    attribute_columns : tuple of str
        Columns of the file that could serve as the group: text, true/false
        and integer columns that are not the label, the split or a class
        column (an app offers them as choices).

    Notes
    -----
    Construction validates every field with
    :func:`calib_core.validation.check_probs` and
    :func:`~calib_core.validation.check_labels`; the arrays are stored
    read-only so a cached object cannot be changed by accident.

    Examples
    --------
    >>> pred = Predictions.from_arrays(probs=[[0.9, 0.1], [0.2, 0.8]], labels=[0, 0])
    >>> pred.n_samples, pred.n_classes, pred.accuracy
    (2, 2, 0.5)
    """

    probs: NDArray[np.float64]
    labels: NDArray[np.intp]
    class_names: tuple[str, ...] = ()
    logits: NDArray[np.float64] | None = None
    split: NDArray[np.str_] | None = None
    name: str = "model"
    source_format: str = "arrays"
    warnings: tuple[str, ...] = field(default=())
    logit_reason: str | None = None
    groups: NDArray[np.str_] | None = None
    group_column: str | None = None
    attribute_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._normalise(check=True)

    @classmethod
    def _from_checked(cls, **fields: Any) -> "Predictions":
        """Construct from ``probs`` already passed through ``check_probs`` (skips a second pass)."""
        self = cls.__new__(cls)
        for key in ("logits", "split"):
            fields.setdefault(key, None)
        fields.setdefault("class_names", ())
        fields.setdefault("name", "model")
        fields.setdefault("source_format", "arrays")
        fields.setdefault("warnings", ())
        fields.setdefault("logit_reason", None)
        fields.setdefault("groups", None)
        fields.setdefault("group_column", None)
        fields.setdefault("attribute_columns", ())
        for key, value in fields.items():
            object.__setattr__(self, key, value)
        self._normalise(check=False)
        return self

    def _normalise(self, *, check: bool) -> None:
        probs = check_probs(self.probs) if check else self.probs
        n_rows, n_classes = probs.shape
        labels = check_labels(self.labels, n_classes, n_rows=n_rows)
        names = tuple(str(c) for c in self.class_names) if len(self.class_names) else tuple(
            str(k) for k in range(n_classes))
        if len(names) != n_classes:
            raise CalibrationInputError(
                f"`class_names` has {len(names)} names but `probs` has {n_classes} columns."
            )
        if len(set(names)) != n_classes:
            dup = next(c for c in names if names.count(c) > 1)
            raise CalibrationInputError(f"`class_names` must be unique; {dup!r} appears twice.")
        logits = self.logits
        if logits is not None:
            logits = np.asarray(logits, dtype=np.float64)
            if logits.shape != probs.shape:
                raise CalibrationInputError(
                    f"`logits` has shape {logits.shape} but `probs` has shape {probs.shape}."
                )
            if not np.isfinite(logits).all():
                row = int(np.flatnonzero(~np.isfinite(logits).all(axis=1))[0])
                raise CalibrationInputError(f"`logits` contains NaN or infinite values, e.g. row {row}.")
            logits = _readonly(logits)
        split = self.split
        if split is not None:
            split = np.asarray(split)
            if split.dtype == object:
                split = _as_text(pd.Series(split).fillna("")).to_numpy(dtype=str)
            elif split.dtype.kind == "S":
                split = np.char.decode(split, "utf-8", errors="replace")
            else:
                split = split.astype(str)
            if split.shape != (n_rows,):
                raise CalibrationInputError(
                    f"`split` must have shape ({n_rows},) to match `probs`, got {split.shape}."
                )
            split = _readonly(split)
        groups = self.groups
        if groups is not None:
            groups = np.asarray(groups)
            if groups.ndim != 1 or groups.shape[0] != n_rows:
                raise CalibrationInputError(
                    f"`groups` must have shape ({n_rows},) to match `probs`, got {groups.shape}."
                )
            if groups.dtype.kind != "U":
                groups = _group_text(pd.Series(groups.astype(object)))[0]
            elif check:
                groups = np.where(np.char.strip(groups) == "", MISSING_GROUP, groups)
            groups = _readonly(groups)
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "group_column", None if groups is None else str(self.group_column or "group"))
        object.__setattr__(self, "attribute_columns", tuple(str(c) for c in self.attribute_columns))
        object.__setattr__(self, "probs", _readonly(probs))
        object.__setattr__(self, "labels", _readonly(labels))
        object.__setattr__(self, "class_names", names)
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "split", split)
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "source_format", str(self.source_format))
        object.__setattr__(self, "warnings", tuple(str(w) for w in self.warnings))
        if self.logit_reason is not None:
            object.__setattr__(self, "logit_reason", str(self.logit_reason) if logits is not None else None)

    @classmethod
    def from_arrays(
        cls,
        probs: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        logits: ArrayLike | None = None,
        class_names: Sequence[str] | None = None,
        *,
        name: str = "model",
        split: ArrayLike | None = None,
        source_format: str = "arrays",
        warnings: Sequence[str] = (),
        groups: ArrayLike | None = None,
        group_column: str | None = None,
    ) -> "Predictions":
        """Build validated predictions from in-memory arrays.

        Parameters
        ----------
        probs : array_like of shape (N, K), optional
            Probabilities. Omit it when passing ``logits``.
        labels : array_like of shape (N,)
            Class indices ``0..K-1``, or class-name strings when
            ``class_names`` is given.
        logits : array_like of shape (N, K), optional
            Logits; ``probs`` defaults to their softmax. When both are given
            ``probs`` must equal ``softmax(logits)`` within 1e-6.
        class_names : sequence of str, optional
            Defaults to ``"0" .. "K-1"``.
        name, split, source_format, warnings
            Stored as they are (see :class:`Predictions`).
        groups : array_like of shape (N,), optional
            Per-row group, stored as text (missing values become
            :data:`MISSING_GROUP`); ``group_column`` names it (default "group").

        Raises
        ------
        CalibrationInputError
            From the validation module, or when the arrays disagree.

        Examples
        --------
        >>> p = Predictions.from_arrays(logits=[[2.0, 0.0]], labels=["b"], class_names=["a", "b"])
        >>> p.labels.tolist(), p.input_kind
        ([1], 'logits')
        """
        if labels is None:
            raise CalibrationInputError("`labels` is required.")
        if probs is None and logits is None:
            raise CalibrationInputError("Pass `probs` or `logits`.")
        logit_matrix = None
        if logits is not None:
            converted = softmax(logits)
            logit_matrix = np.asarray(logits, dtype=np.float64)
            if probs is None:
                probs = converted
            else:
                probs = check_probs(probs)
                if probs.shape != converted.shape:
                    raise CalibrationInputError(
                        f"`logits` has shape {converted.shape} but `probs` has shape {probs.shape}."
                    )
                gap = np.abs(converted - probs).max(axis=1)
                if gap.max() > 1e-6:
                    row = int(np.argmax(gap))
                    raise CalibrationInputError(
                        f"`probs` is not softmax(`logits`): row {row} differs by {gap[row]:.3g}. "
                        "Pass only one of them."
                    )
        probs_array = check_probs(probs)
        n_classes = probs_array.shape[1]
        names = tuple(str(c) for c in class_names) if class_names is not None else tuple(
            str(k) for k in range(n_classes))
        label_array = np.asarray(labels)
        if label_array.dtype.kind in "OUS":
            label_array = _map_string_labels(label_array, names, lambda i: f"row {i}")
        return cls(probs=probs_array, labels=label_array, class_names=names, logits=logit_matrix,
                   split=split, name=name, source_format=source_format, warnings=tuple(warnings),
                   groups=groups, group_column=group_column)

    @property
    def n_samples(self) -> int:
        """Number of rows N."""
        return int(self.probs.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes K."""
        return int(self.probs.shape[1])

    @property
    def accuracy(self) -> float:
        """Fraction of rows whose arg-max class (ties: lowest index) is the label."""
        return float(np.mean(np.argmax(self.probs, axis=1) == self.labels))

    @property
    def notes(self) -> tuple[str, ...]:
        """The loader's notes: the same sentences as :attr:`warnings`."""
        return self.warnings

    @property
    def input_kind(self) -> str:
        """``"logits"`` when the source held logits, else ``"probabilities"``."""
        return "logits" if self.logits is not None else "probabilities"

    @property
    def split_names(self) -> tuple[str, ...]:
        """Distinct values of :attr:`split` in order of first appearance (empty without a split)."""
        if self.split is None:
            return ()
        values, first = np.unique(self.split, return_index=True)
        return tuple(str(v) for v in values[np.argsort(first)])

    def subset(self, mask_or_indices: ArrayLike) -> "Predictions":
        """Predictions for a subset of rows.

        Parameters
        ----------
        mask_or_indices : array_like
            A boolean mask of length N or integer row indices.

        Returns
        -------
        Predictions
            Same class names, name, format, warnings, group column and
            attribute columns; the rows selected (of ``groups`` too).

        Raises
        ------
        CalibrationInputError
            Wrong mask length, indices out of range, or no row selected.
        """
        index = np.asarray(mask_or_indices)
        if index.dtype == bool:
            if index.shape != (self.n_samples,):
                raise CalibrationInputError(
                    f"a boolean mask must have shape ({self.n_samples},), got {index.shape}."
                )
        elif index.size and not np.issubdtype(index.dtype, np.integer):
            raise CalibrationInputError(
                f"`mask_or_indices` must be a boolean mask or integer indices, got dtype {index.dtype}."
            )
        else:
            index = index.astype(np.intp).ravel()
            if index.size and (index.min() < -self.n_samples or index.max() >= self.n_samples):
                raise CalibrationInputError(
                    f"row indices must lie in 0..{self.n_samples - 1}, got {index.min()}..{index.max()}."
                )
        selected = int(index.sum()) if index.dtype == bool else int(index.size)
        if selected == 0:
            raise CalibrationInputError("the subset selects no rows.")
        return Predictions(
            probs=self.probs[index], labels=self.labels[index], class_names=self.class_names,
            logits=None if self.logits is None else self.logits[index],
            split=None if self.split is None else self.split[index],
            name=self.name, source_format=self.source_format, warnings=self.warnings,
            logit_reason=self.logit_reason, groups=None if self.groups is None else self.groups[index],
            group_column=self.group_column, attribute_columns=self.attribute_columns,
        )

    def select_split(self, value: str) -> "Predictions":
        """The rows whose :attr:`split` equals ``value`` (e.g. ``"test"``)."""
        if self.split is None:
            raise CalibrationInputError(
                f"{self.name!r} has no split column, so there is no {value!r} split."
            )
        mask = self.split == value
        if not mask.any():
            raise CalibrationInputError(
                f"{self.name!r} has no rows with split {value!r}; splits present: "
                f"{', '.join(self.split_names)}."
            )
        return self.subset(mask)

    def to_frame(self) -> pd.DataFrame:
        """The predictions as a table ``label, p_<class>..., [split], [<group column>]`` that
        :func:`load_predictions` reads back unchanged (with ``group=`` for the groups)."""
        frame = pd.DataFrame(self.probs, columns=[f"p_{c}" for c in self.class_names])
        frame.insert(0, "label", self.labels)
        if self.split is not None:
            frame["split"] = self.split
        if self.groups is not None and self.group_column not in frame.columns:
            frame[self.group_column] = self.groups
        return frame

    def __repr__(self) -> str:
        splits = f", splits={list(self.split_names)}" if self.split is not None else ""
        return (f"Predictions(name={self.name!r}, n_samples={self.n_samples}, "
                f"n_classes={self.n_classes}, input_kind={self.input_kind!r}, "
                f"accuracy={self.accuracy:.4f}, source_format={self.source_format!r}{splits}, "
                f"warnings={len(self.warnings)})")


# ---------------------------------------------------------------------------
# Reading the bytes
# ---------------------------------------------------------------------------

@dataclass
class _Raw:
    """A source resolved to a path or to bytes, with what we know about its name."""

    path: Path | None
    data: bytes | None
    hint: str  # the file name or name hint, for the format and messages
    display: str  # how messages refer to the source

    def head(self, n_bytes: int = _SNIFF_BYTES) -> bytes:
        if self.data is not None:
            return self.data[:n_bytes]
        assert self.path is not None
        with open(self.path, "rb") as handle:
            return handle.read(n_bytes)

    def open_binary(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        return open(self.path, "rb")

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        assert self.path is not None
        return self.path.stat().st_size


def _format_bytes(n_bytes: int) -> str:
    return f"{n_bytes:,} bytes"


def _too_big(display: str, n_bytes: int | str, max_bytes: int) -> CalibrationInputError:
    size = n_bytes if isinstance(n_bytes, str) else _format_bytes(n_bytes)
    return CalibrationInputError(
        f"{display} is {size}, over the size limit of {_format_bytes(max_bytes)}. "
        "Pass a larger `max_bytes=` (or None for no limit), or load a sample of the rows."
    )


def _resolve_source(source: Any, name: str | None, max_bytes: int | None) -> _Raw:
    if isinstance(source, (str, os.PathLike)):
        path = Path(os.fspath(source))
        if isinstance(source, str) and ("\n" in source or len(source) > 4096):
            raise CalibrationInputError(
                "`source` is a string that looks like file content, not a path; pass the content "
                "as bytes (e.g. text.encode()) together with name='predictions.csv'."
            )
        if not path.exists():
            raise CalibrationInputError(f"file not found: {str(path)!r}.")
        if path.is_dir():
            raise CalibrationInputError(f"{str(path)!r} is a folder, not a file.")
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise _too_big(f"file {path.name!r}", size, max_bytes)
        return _Raw(path=path, data=None, hint=path.name, display=f"file {path.name!r}")
    from_stream = False
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        hint = name or ""
    elif hasattr(source, "read"):
        from_stream = True
        limit = -1 if max_bytes is None else max_bytes + 1
        data = source.read(limit)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray)):
            raise CalibrationInputError(
                f"reading `source` returned {type(data).__name__}, expected bytes."
            )
        data = bytes(data)
        hint = name or os.path.basename(str(getattr(source, "name", "") or ""))
    else:
        raise CalibrationInputError(
            f"`source` must be a path, bytes or a binary file object, got {type(source).__name__}."
        )
    display = f"upload {hint!r}" if hint else "the uploaded data"
    if max_bytes is not None and len(data) > max_bytes:
        # A stream is read only up to the limit, so its full size is unknown.
        size = f"more than {_format_bytes(max_bytes)}" if from_stream else _format_bytes(len(data))
        raise _too_big(display, size, max_bytes)
    return _Raw(path=None, data=data, hint=hint, display=display)


def _extension(hint: str) -> str:
    suffixes = [s.lower().lstrip(".") for s in Path(hint).suffixes] if hint else []
    if suffixes and suffixes[-1] == "gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _strip_format_suffixes(file_name: str) -> str:
    stem = file_name
    while Path(stem).suffix.lower().lstrip(".") in set(_FORMATS) | {"gz"}:
        stem = stem[: -len(Path(stem).suffix)]
    return stem


def _model_name(hint: str, name: str | None) -> str:
    """``name`` without a format extension, else the file name without it."""
    if name:
        return _strip_format_suffixes(name) or name
    if hint:
        return _strip_format_suffixes(Path(hint).name) or "model"
    return "model"


def _detect_format(raw: _Raw, file_format: str | None, head: bytes) -> str:
    if file_format is not None:
        key = str(file_format).lower().lstrip(".")
        key = key[:-3] if key.endswith(".gz") else key
        if key not in _FORMATS:
            raise CalibrationInputError(
                f"unknown `file_format` {file_format!r}; use one of csv, tsv, parquet, npz, npy."
            )
        return _FORMATS[key]
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PAR1"):
        return "parquet"
    ext = _extension(raw.hint)
    if ext in _FORMATS:
        return _FORMATS[ext]
    if head.startswith(b"PK\x03\x04") and not ext:
        return "npz"
    if ext:
        raise CalibrationInputError(
            f"unknown file format {('.' + ext)!r} ({raw.display}); supported are .csv, .tsv, .txt, "
            ".parquet, .npz and .npy. Export the predictions in one of these, or pass `file_format=`."
        )
    if _utf16_codec(raw.head(4096)) is not None:
        return "csv"
    if b"\x00" in head[:4096]:
        raise CalibrationInputError(
            f"cannot tell the format of {raw.display}: it is binary but not Parquet, NPZ or NPY. "
            "Pass `file_format=` or a `name=` with the file's extension."
        )
    return "csv"


def _maybe_gunzip(raw: _Raw, max_bytes: int | None) -> _Raw:
    head = raw.head(2)
    if head != b"\x1f\x8b":
        return raw
    try:
        with raw.open_binary() as packed, gzip.GzipFile(fileobj=packed) as handle:
            limit = -1 if max_bytes is None else max_bytes + 1
            data = handle.read(limit)
    except (OSError, EOFError) as exc:
        raise CalibrationInputError(f"{raw.display} is a damaged gzip file: {exc}.") from exc
    if max_bytes is not None and len(data) > max_bytes:
        raise _too_big(f"{raw.display} (decompressed)", f"more than {_format_bytes(max_bytes)}", max_bytes)
    hint = raw.hint[:-3] if raw.hint.lower().endswith(".gz") else raw.hint
    return _Raw(path=None, data=data, hint=hint, display=raw.display)


# ---------------------------------------------------------------------------
# Tables: CSV, Parquet, structured NPY
# ---------------------------------------------------------------------------

@dataclass
class _Table:
    frame: pd.DataFrame
    row_label: Callable[[int], str]  # 0-based row -> "row 5 (file line 6)"
    # column name -> its cells as written (no NA parsing), when the reader can give them
    raw_text: Callable[[str], NDArray[Any]] | None = None
    nested: dict[str, str] = field(default_factory=dict)  # column -> nested type (Parquet)


def _utf16_codec(head: bytes) -> str | None:
    """``"utf-16"`` (with a byte-order mark), ``"utf-16-le"``/``"-be"`` (NUL-interleaved text), or None."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[:4096]
    if len(sample) < 8:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.8 * len(odd) and even.count(0) < 0.05 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.8 * len(even) and odd.count(0) < 0.05 * len(odd):
        return "utf-16-be"
    return None


def _transcode_utf16(raw: _Raw) -> tuple[_Raw, str | None]:
    """UTF-16 text (Excel's "Unicode text") re-encoded as UTF-8, with a note; other data unchanged."""
    codec = _utf16_codec(raw.head(4096))
    if codec is None:
        return raw, None
    with raw.open_binary() as handle:
        data = handle.read()
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        raise CalibrationInputError(
            f"{raw.display} looks like UTF-16 text but cannot be decoded as UTF-16 ({exc.reason} at "
            f"byte {exc.start}). UTF-16: save it as UTF-8 (in Excel: CSV UTF-8) and load it again."
        ) from exc
    return (_Raw(path=None, data=text.lstrip("\ufeff").encode("utf-8"), hint=raw.hint, display=raw.display),
            f"{raw.display} is UTF-16 text; it was decoded as UTF-16.")


def _plain_row_label(i: int) -> str:
    return f"row {i + 1}"


def _decode_head(head: bytes, encoding: str) -> str:
    text = head.decode("utf-8-sig" if encoding == "utf-8" else encoding, errors="replace")
    if len(head) < _SNIFF_BYTES:
        return text
    # The sample was cut mid-file; keep only whole lines when there are any.
    cut = text.rfind("\n")
    return text[: cut + 1] if cut > 0 else text


def _sniff_csv(head: bytes, encoding: str, hint: str, display: str) -> tuple[str, str, list[str]]:
    """Delimiter, decimal mark and raw header fields from the first bytes."""
    text = _decode_head(head, encoding)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise CalibrationInputError(
            f"{display} is empty. Provide a table with a header row, e.g. "
            "'label,p_0,p_1' followed by one row per prediction."
        )
    preferred = "\t" if _extension(hint) in ("tsv", "tab") else ","
    best, best_fields = preferred, 1
    for delimiter in (preferred, ",", "\t", ";"):
        fields = next(csv.reader([lines[0]], delimiter=delimiter))
        if len(fields) > best_fields:
            best, best_fields = delimiter, len(fields)
    header = [f.strip() for f in next(csv.reader([lines[0]], delimiter=best))]
    decimal = "."
    if best != "," and len(lines) > 1:
        # Look past rows of whole numbers ("0;1;0"): any decimal comma and no decimal point.
        comma = dot = False
        for row in csv.reader(lines[1:201], delimiter=best):
            comma = comma or any(_COMMA_DECIMAL.fullmatch(v) for v in row)
            dot = dot or any(_DOT_DECIMAL.fullmatch(v) for v in row)
        if comma and not dot:
            decimal = ","
    return best, decimal, header


_COMMA_DECIMAL = re.compile(r"\s*[-+]?\d*,\d+(?:[eE][-+]?\d+)?\s*")
_DOT_DECIMAL = re.compile(r"\s*[-+]?\d*\.\d+(?:[eE][-+]?\d+)?\s*")


def _has_comma_decimals(frame: pd.DataFrame) -> bool:
    """A text column whose values are numbers written with decimal commas (seen past the sniffed rows)."""
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object and not pd.api.types.is_string_dtype(values.dtype):
            continue
        text = _as_text(values.dropna())
        if len(text) and text.str.fullmatch(_COMMA_DECIMAL.pattern).any() and text.str.fullmatch(
                r"\s*[-+]?(?:\d*,\d+|\d+)(?:[eE][-+]?\d+)?\s*").all():
            return True
    return False


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_duplicates(header: Sequence[str], display: str) -> None:
    """Refuse repeated column names (pandas would silently rename `a` to `a.1`)."""
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if column in seen and column != "":
            raise CalibrationInputError(
                f"duplicate column name {column!r} in {display} (columns {seen[column]} and "
                f"{position}); rename one of them so every column has its own name."
            )
        seen.setdefault(column, position)


def _check_header_is_names(header: Sequence[str], display: str) -> None:
    if header and all(_looks_numeric(c) for c in header if c != ""):
        raise CalibrationInputError(
            f"the first line of {display} holds numbers ({', '.join(header[:4])}...), not column "
            "names: add a header row such as 'label,p_0,p_1,...'."
        )


def _csv_line_finder(raw: _Raw, delimiter: str, encoding: str) -> Callable[[int], str]:
    """Map a 0-based data row to a label with its 1-based physical file line.

    Only called on the error path: it scans the file with the csv module,
    which handles quoted newlines and skips blank lines like pandas does.
    """
    def label(row: int) -> str:
        handle = io.TextIOWrapper(raw.open_binary(), encoding=encoding, errors="replace", newline="")
        try:
            with handle:
                reader = csv.reader(handle, delimiter=delimiter)
                previous_end, record = 0, -1  # record -1 is the header
                for fields in reader:
                    start = previous_end + 1
                    previous_end = reader.line_num
                    if not fields or all(not f.strip() for f in fields) and len(fields) == 1:
                        continue
                    if record == row:
                        return f"row {row + 1} (file line {start})"
                    record += 1
        except (csv.Error, OSError, UnicodeError):
            pass  # e.g. a field over the csv module's size limit: the row number alone still helps
        return f"row {row + 1}"
    return label


def _read_csv(raw: _Raw) -> tuple[_Table, list[str]]:
    notes: list[str] = []
    raw, utf16_note = _transcode_utf16(raw)
    if utf16_note:
        notes.append(utf16_note)
    head = raw.head()
    if not head.strip():
        raise CalibrationInputError(
            f"{raw.display} is empty. Provide a table with a header row, e.g. "
            "'label,p_0,p_1' followed by one row per prediction."
        )
    encoding = "utf-8"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not merely a character cut at the sample's end
            encoding = "latin-1"

    def source() -> Any:
        return str(raw.path) if raw.path is not None else io.BytesIO(raw.data or b"")

    def read(encoding: str) -> tuple[pd.DataFrame, str, str, list[str]]:
        delimiter, decimal, header = _sniff_csv(head, encoding, raw.hint, raw.display)
        _check_header_is_names(header, raw.display)
        _check_duplicates(header, raw.display)
        _check_column_count(len(header), raw.display)
        with _warnings.catch_warnings():
            # A first row longer than the header makes pandas drop data with only a warning.
            _warnings.simplefilter("error", pd.errors.ParserWarning)
            _warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            frame = pd.read_csv(source(), sep=delimiter, decimal=decimal, index_col=False,
                                engine="c", encoding=encoding)
            if delimiter != "," and decimal == "." and _has_comma_decimals(frame):
                decimal = ","
                frame = pd.read_csv(source(), sep=delimiter, decimal=decimal, index_col=False,
                                    engine="c", encoding=encoding)
        return frame, delimiter, decimal, header

    try:
        try:
            frame, delimiter, decimal, header = read(encoding)
        except UnicodeDecodeError:
            encoding = "latin-1"
            frame, delimiter, decimal, header = read(encoding)
    except pd.errors.EmptyDataError as exc:
        raise CalibrationInputError(
            f"{raw.display} has no columns. Provide a header row such as 'label,p_0,p_1'."
        ) from exc
    except pd.errors.ParserWarning as exc:
        raise CalibrationInputError(
            f"the first data row of {raw.display} has more values than the header has column "
            "names; every row needs one value per column."
        ) from exc
    except (pd.errors.ParserError, ValueError, OSError, OverflowError, csv.Error) as exc:
        if isinstance(exc, CalibrationInputError):
            raise
        message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        raise CalibrationInputError(
            f"could not read {raw.display} as a delimited table ({message}). Every row must "
            "have one value per header column, separated by a comma, tab or semicolon."
        ) from exc
    if encoding == "latin-1":
        notes.append(f"{raw.display} is not valid UTF-8; it was decoded as Latin-1.")
    if delimiter != ",":
        kind = {"\t": "tab", ";": "semicolon"}[delimiter]
        notes.append(f"read as {kind}-separated values" + (" with decimal commas." if decimal == "," else "."))
    # The raw header keeps empty names empty (pandas writes "Unnamed: 0").
    if len(header) == frame.shape[1]:
        frame.columns = header
    else:
        frame.columns = [str(c).strip() for c in frame.columns]
    positions = {c: k for k, c in enumerate(frame.columns)}

    def raw_text(column: str) -> NDArray[Any]:
        """The column's cells as written: "NA", "none" or "null" may be class names."""
        cells = pd.read_csv(source(), sep=delimiter, decimal=decimal, index_col=False, engine="c",
                            encoding=encoding, usecols=[positions[column]], dtype=str,
                            keep_default_na=False, na_filter=False)
        return cells.iloc[:, 0].to_numpy(dtype=object)

    return _Table(frame=frame, row_label=_csv_line_finder(raw, delimiter, encoding),
                  raw_text=raw_text), notes


def _check_column_count(n_columns: int, display: str) -> None:
    """Refuse more columns than :data:`MAX_CLASSES` allows before any parsing work."""
    if n_columns > MAX_CLASSES + 64:
        raise CalibrationInputError(
            f"{display} has {n_columns:,} columns; at most {MAX_CLASSES:,} classes are supported. "
            "Keep one column per class you want to analyse (or group rare classes), then load it again."
        )


def _read_parquet(raw: _Raw) -> _Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def damaged(exc: BaseException) -> CalibrationInputError:
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        return CalibrationInputError(
            f"could not read {raw.display} as Parquet ({detail}). The file may be damaged or "
            "not Parquet; re-export it, or save the predictions as CSV."
        )

    try:
        with raw.open_binary() as handle:
            parquet = pq.ParquetFile(handle)
            names = [str(c).strip() for c in parquet.schema_arrow.names]
            _check_column_count(len(names), raw.display)
            _check_duplicates(names, raw.display)
            table = parquet.read()
    except CalibrationInputError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # damaged files raise ArrowException, OSError, UnicodeDecodeError, ...
        raise damaged(exc) from exc
    names = [str(c).strip() for c in table.column_names]
    _check_duplicates(names, raw.display)
    # Nested columns (struct, list, map) can hold neither labels nor probabilities: they are
    # replaced by nulls here and refused by name if the mapping asks for them.
    nested: dict[str, str] = {}
    for position, (column, column_type) in enumerate(zip(names, table.schema.types)):
        value_type = column_type.value_type if pa.types.is_dictionary(column_type) else column_type
        if pa.types.is_nested(value_type):
            nested[column] = str(column_type)
            table = table.set_column(position, table.schema.field(position).name, pa.nulls(table.num_rows))
    try:
        # The pandas metadata (a stored index, its column names) is not needed and may lie.
        frame = table.to_pandas(ignore_metadata=True)
    except MemoryError:
        raise
    except Exception as exc:
        raise damaged(exc) from exc
    frame.columns = names
    return _Table(frame=frame, row_label=_plain_row_label, nested=nested)


# ---------------------------------------------------------------------------
# NPZ / NPY
# ---------------------------------------------------------------------------

def _pickle_refused(display: str, what: str) -> CalibrationInputError:
    return CalibrationInputError(
        f"{display} holds pickled Python objects ({what}); loading pickles can run arbitrary "
        "code, so they are refused. Save plain arrays instead, e.g. "
        "np.savez(path, probs=probs, labels=labels) with numeric or fixed-width string arrays."
    )


def _npy_declared_bytes(stream: BinaryIO, available: int, what: str, display: str,
                        max_bytes: int | None) -> None:
    """Check an ``.npy`` header before numpy allocates what it declares.

    A 192-byte file may declare shape ``(10**12, 2)``; numpy would try to
    allocate 16 TB before noticing the data is missing. The declared size
    ``prod(shape) * itemsize`` (exact Python integers) must fit in the bytes
    that follow the header and in ``max_bytes``.
    """
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
        header_end = stream.tell()
    except MemoryError:
        raise
    except Exception as exc:  # ValueError, SyntaxError, tokenize errors from a damaged header
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise CalibrationInputError(
            f"could not read {what} of {display} as NPY: damaged .npy header ({detail})."
        ) from exc
    if dtype.hasobject:
        raise _pickle_refused(display, f"{what} has dtype object")
    count = 1
    for extent in shape:
        count *= int(extent)
    declared = count * int(dtype.itemsize)
    present = available - header_end
    if declared > present:
        raise CalibrationInputError(
            f"{what} of {display} declares shape {tuple(shape)} ({declared:,} bytes) but holds only "
            f"{max(present, 0):,} bytes of data; the file is damaged or truncated. Save it again with np.save."
        )
    if max_bytes is not None and declared > max_bytes:
        raise _too_big(f"{what} of {display}", declared, max_bytes)


def _load_numpy(raw: _Raw, max_bytes: int | None) -> Any:
    fmt_name = "NPZ" if raw.head(4) == b"PK\x03\x04" else "NPY"
    try:
        if fmt_name == "NPZ":
            with raw.open_binary() as handle, zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
                unpacked = sum(info.file_size for info in members)
                if max_bytes is not None and unpacked > max_bytes:
                    raise _too_big(f"{raw.display} (unpacked)", unpacked, max_bytes)
                for info in members:
                    if info.filename.endswith(".npy"):
                        with archive.open(info) as member:
                            _npy_declared_bytes(member, info.file_size, f"array {info.filename[:-4]!r}",
                                                raw.display, max_bytes)
        else:
            head = raw.head(8)
            if not head.startswith(b"\x93NUMPY"):
                if head[:1] == b"\x80":  # a pickle's protocol opcode
                    raise _pickle_refused(raw.display, "a pickle, not an .npy array")
                raise CalibrationInputError(
                    f"could not read {raw.display} as NPY: it does not start with the .npy magic string. "
                    "Save the array with np.save, or the predictions as CSV."
                )
            with raw.open_binary() as handle:
                _npy_declared_bytes(handle, raw.size(), "the array", raw.display, max_bytes)
        loaded = np.load(raw.open_binary() if raw.data is not None else raw.path, allow_pickle=False)
    except CalibrationInputError:
        raise
    except MemoryError:
        raise
    except zipfile.BadZipFile as exc:
        raise CalibrationInputError(f"{raw.display} is a damaged NPZ (zip) archive: {exc}.") from exc
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
            raise _pickle_refused(raw.display, "pickled data or an object array") from exc
        raise CalibrationInputError(f"could not read {raw.display} as {fmt_name}: {str(exc)[:300]}.") from exc
    except Exception as exc:  # zlib.error, EOFError, NotImplementedError (zip features), ...
        raise CalibrationInputError(
            f"could not read {raw.display} as {fmt_name} ({type(exc).__name__}: {str(exc)[:300]}); the "
            "file is damaged. Save it again with np.savez (or np.save)."
        ) from exc
    return loaded


def _npz_arrays(loaded: Any, display: str) -> dict[str, NDArray[Any]]:
    arrays: dict[str, NDArray[Any]] = {}
    try:
        for key in loaded.files:
            try:
                value = loaded[key]
            except ValueError as exc:
                if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
                    raise _pickle_refused(display, f"array {key!r} has dtype object") from exc
                raise CalibrationInputError(f"could not read array {key!r} of {display}: {exc}.") from exc
            except MemoryError:
                raise
            except Exception as exc:  # zlib.error, EOFError, BadZipFile, NotImplementedError, ...
                raise CalibrationInputError(
                    f"could not read array {key!r} of {display} ({type(exc).__name__}: {str(exc)[:300]}); "
                    "the archive is damaged. Save it again with np.savez."
                ) from exc
            if not isinstance(value, np.ndarray):
                raise CalibrationInputError(
                    f"{display} is a zip archive but not an NPZ of arrays (member {key!r} is not "
                    "an .npy array); save it with np.savez."
                )
            arrays[key] = value
    finally:
        loaded.close()
    if not arrays:
        raise CalibrationInputError(
            f"{display} holds no arrays. Save one with np.savez(path, probs=probs, labels=labels)."
        )
    return arrays


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


# ---------------------------------------------------------------------------
# Layout resolution
# ---------------------------------------------------------------------------

@dataclass
class _Parts:
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
    inferred_logit_reason: str | None = None  # set by _interpret_scores when it read logits untold
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


def _as_text(values: pd.Series) -> pd.Series:
    """The cells as text; bytes are decoded as UTF-8 with replacement (never an error)."""
    return pd.Series([_label_text(v) if isinstance(v, (bytes, bytearray)) else str(v) for v in values],
                     index=values.index, dtype=object)


def _group_text(values: pd.Series) -> tuple[NDArray[np.str_], int]:
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


def _table_parts(table: _Table, *, display: str, label_column: str | None,
                 class_columns: Sequence[str] | None, score_column: str | None,
                 split_column: str | None, notes: list[str], group_column: str | None = None) -> _Parts:
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
    # Class columns.
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
        best = _best_prefix(candidates)
        if best is not None:
            chosen = [c for c in candidates if _has_prefix(c, best[0])]
        else:
            chosen = []
            for c in candidates:
                values = frame[c]
                if values.isna().all():
                    notes.append(f"ignored column {c!r}: it is empty.")
                elif _is_number_column(values):
                    chosen.append(c)
                elif values.dtype == bool:
                    notes.append(f"ignored column {c!r}: it holds true/false values, not probabilities.")
                elif _bad_numeric_value(values) is not None and _to_numeric(values).notna().any():
                    chosen.append(c)  # mostly numbers with some text: reported as an error below
                else:
                    notes.append(f"ignored column {c!r}: it holds text, not probabilities.")
        chosen_set = set(chosen)
        unused = [c for c in candidates if c not in chosen_set]
        if best is not None and unused:
            notes.append(f"ignored columns without a class prefix: {_shown(unused, 10)}.")
    if not chosen:
        raise CalibrationInputError(
            f"{display} has no probability or logit columns besides the label {label!r}, so it "
            f"has fewer than 2 classes (columns: {_shown(columns, 10)}). Add one "
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
        groups, n_missing = _group_text(frame[group_name])
        _note_missing_groups(n_missing, group_name, notes)
    not_attributes = set(chosen) | {label, split_name}
    attributes = [c for c in columns if c not in not_attributes and c != "" and c not in table.nested
                  and not c.startswith("__index_level_") and _is_attribute(frame[c])]
    return _Parts(scores=scores, raw_labels=raw_labels, score_names=chosen,
                  class_names=names if (prefix is not None or len(chosen) > 1) else None,
                  label_name=label, logit_reason=logit_reason, split=split, row_label=row_label,
                  notes=notes, raw_label_text=raw_text, groups=groups, group_name=group_name,
                  attributes=attributes)


def _npz_parts(arrays: dict[str, NDArray[Any]], *, display: str, label_column: str | None,
               class_columns: Sequence[str] | None, score_column: str | None,
               split_column: str | None, notes: list[str], group_column: str | None = None) -> _Parts:
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
        groups, n_missing = _group_text(pd.Series(group_array))
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
    return _Parts(scores=np.ascontiguousarray(scores, dtype=np.float64), raw_labels=labels,
                  score_names=[f"{key}[:, {k}]" for k in range(scores.shape[1])],
                  class_names=class_names, label_name=label_key, logit_reason=logit_reason,
                  split=split, row_label=_plain_row_label, notes=notes, extra_logits=extra,
                  groups=groups, group_name=group_key, attributes=attributes)


def _npy_parts(array: NDArray[Any], *, display: str, label_column: str | None,
               class_columns: Sequence[str] | None, score_column: str | None,
               split_column: str | None, notes: list[str], group_column: str | None = None) -> _Parts:
    if array.dtype.names:
        if array.ndim != 1 or any(array.dtype[name].shape or array.dtype[name].names
                                  for name in array.dtype.names):
            raise CalibrationInputError(
                f"{display} is a structured array of shape {array.shape} with nested fields "
                f"({array.dtype}); save one field per column (label, p_0, p_1, ...) or an NPZ."
            )
        _check_column_count(len(array.dtype.names), display)
        frame = pd.DataFrame({name: array[name] for name in array.dtype.names})
        return _table_parts(_Table(frame=frame, row_label=_plain_row_label), display=display,
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
    return _Parts(scores=scores, raw_labels=array[:, label_index],
                  score_names=[f"column {j}" for j in keep], class_names=None,
                  label_name=f"column {label_index}", logit_reason=None, split=None,
                  row_label=_plain_row_label, notes=notes)


# ---------------------------------------------------------------------------
# Interpretation: labels, probabilities or logits
# ---------------------------------------------------------------------------

_MISSING_STRINGS = frozenset({"", "nan", "na", "n/a", "null", "none", "<na>", "#n/a"})


def _label_text(value: Any) -> str:
    """The text of one label value: ``True`` -> "True", ``2.0`` -> "2", ``b"cat"`` -> "cat"."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace").strip()
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


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


def _propose_mapping(parts: _Parts, texts: Sequence[str], n_classes: int,
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


def _labels_to_indices(parts: _Parts, n_classes: int, class_names: list[str] | None,
                       notes: list[str]) -> tuple[NDArray[np.intp], list[str]]:
    """Integer labels and the final class names.

    Labels are mapped by *name* whenever the class columns carry names: a
    label equal to a class's name is that class, whatever its type (``True``
    with ``p_True``, ``2`` with ``p_2`` among ``p_cat``, ``c10`` with
    ``p_c10``). Integer labels ``0..K-1`` that do not all name a column are
    class indices. Text labels that match no column name stop the load with
    a proposed mapping (:class:`PredictionsFileError`), never a guess.
    """
    raw, row_label, column = parts.raw_labels, parts.row_label, parts.label_name
    names = [str(c) for c in class_names] if class_names is not None else None
    name_set = set(names or ())
    if parts.raw_label_text is not None and names is not None:
        missing = pd.isna(pd.Series(raw)).to_numpy()
        if missing.any():
            # pandas reads "NA", "null", "None" as missing; they may be class names here.
            written = parts.raw_label_text()
            if written.shape == raw.shape and all(
                    str(t).strip() in name_set for t in pd.unique(written[missing])):
                raw = written
    if raw.dtype == bool:
        if names is not None and {"True", "False"} & name_set and {
                _label_text(v) for v in np.unique(raw)} <= name_set:
            raw = raw.astype(object)  # mapped by name below
        else:
            raw = raw.astype(np.intp)
            if names is None and n_classes == 2:
                names = ["False", "True"]
    if raw.dtype.kind == "f":
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
        raw = raw.astype(np.intp)
    if raw.dtype.kind in "iu":
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
    if raw.dtype.kind not in "OUS" and not pd.api.types.is_string_dtype(raw.dtype):
        raise CalibrationInputError(
            f"the label column {column!r} has unsupported values of type {raw.dtype}; use class "
            "indices 0..K-1 or class names."
        )
    codes, texts = _factorize_text_labels(raw, row_label, names)
    if names is not None:
        index = {n: k for k, n in enumerate(names)}
        if all(t in index for t in texts):
            lookup = np.array([index[t] for t in texts], dtype=np.intp)
            return lookup[codes], names
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


def _nonfinite_error(parts: _Parts, scores: NDArray[np.float64]) -> CalibrationInputError:
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


def _describe_row(parts: _Parts, scores: NDArray[np.float64], row: int, limit: int = 5) -> str:
    shown = ", ".join(f"{parts.score_names[k]}={scores[row, k]:.6g}"
                      for k in range(min(limit, scores.shape[1])))
    return shown + (", ..." if scores.shape[1] > limit else "")


def _row_list(parts: _Parts, rows: NDArray[np.intp], limit: int = 5) -> str:
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


def _diagnose_scores(parts: _Parts, scores: NDArray[np.float64], input_kind: str,
                     percentages: bool) -> PredictionsFileError:
    """Why these values are not probabilities, with the fixes that would load them."""
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
    if binary:
        rows = np.flatnonzero(outside[:, 0])
        value = float(scores[rows[0], 0])
        kind = "a negative probability" if value < 0.0 else "a probability above 1"
        return _score_error(
            f"the score column {parts.score_names[0]!r} holds {kind} ({value:.6g}) in "
            f"{parts.row_label(int(rows[0]))}; values outside [0, 1] appear in {_row_list(parts, rows)} "
            f"({rows.size:,} of {scores.shape[0]:,} rows). A probability must lie in [0, 1]: fix those values.",
            "If the column holds logits, pass `input_kind='logits'`.", logits_fix, rows,
            "If the column holds logits, read it as logits.")
    constant = _constant_sum(row_sums)
    if scores.shape[0] > 1 and low >= 0.0 and constant is not None and constant > 0.0 \
            and abs(constant - 1.0) > ROW_SUM_TOLERANCE:
        rows = np.arange(min(scores.shape[0], 5))
        return _score_error(
            f"every row sums to {constant:.6g}, not 1 ({parts.row_label(0)}: {_describe_row(parts, scores, 0)}). "
            "The values look like probabilities on another scale; renormalise the rows to read them as "
            "probabilities.",
            "Pass `renormalize=True` to divide each row by its sum.",
            (_FIX_RENORMALIZE, *(logits_fix if high > 1.0 else ())), rows)
    if outside.any():
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


def _interpret_scores(parts: _Parts, input_kind: str, renormalize: bool,
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
    if not read_as_logits and not binary:
        # Fast path: valid probabilities pass the shared validator in one blocked pass
        # (and can never be logits under the rule above: no value lies outside [0, 1]).
        try:
            probs, row_sums = check_probs_with_row_sums(scores)
        except CalibrationInputError:
            pass
        else:
            deviation = np.abs(row_sums - 1.0)
            worst = int(np.argmax(deviation))
            if renormalize and deviation[worst] > 1e-12:
                changed = int((deviation > 1e-12).sum())
                notes.append(f"renormalised {changed} row(s) to sum to 1 (on request); the largest "
                             f"deviation was {deviation[worst]:.3g} ({parts.row_label(worst)}).")
                return check_probs(probs / row_sums[:, None]), None
            if deviation[worst] > SILENT_ROW_SUM_DEVIATION:
                notes.append(f"rows sum to 1 only within {deviation[worst]:.3g} "
                             f"({parts.row_label(worst)}); the values were kept as they are "
                             "(renormalising is available on request).")
            return probs, None
    if not np.isfinite(scores).all():
        raise _nonfinite_error(parts, scores)
    if not read_as_logits and input_kind == "auto" and not percentages:
        outside = (scores < 0.0) | (scores > 1.0)
        share = float(outside.mean())
        constant = None if binary else _constant_sum(scores.sum(axis=1))
        # A constant row sum <= 0 is no probability scale (centred logits, e.g. scikit-learn's
        # multinomial decision_function, sum to 0), so it does not stop the logit reading.
        if share >= AUTO_LOGIT_MIN_SHARE and (
                bool((scores < 0.0).any()) if binary else constant is None or constant <= ROW_SUM_TOLERANCE):
            read_as_logits = True
            parts.inferred_logit_reason = (
                f"{share:.0%} of the values lie outside [0, 1] (min {float(scores.min()):.4g}, max "
                f"{float(scores.max()):.4g})" + ("" if binary else " and the rows do not sum to one positive "
                                                  "constant"))
    if read_as_logits:
        if parts.inferred_logit_reason is not None:
            notes.append(f"read as logits because {parts.inferred_logit_reason}; converted to probabilities "
                         "with " + ("a sigmoid" if binary else "a softmax") + " (the logits are kept).")
        logits = np.column_stack([np.zeros(scores.shape[0]), scores[:, 0]]) if binary else scores
        return softmax(logits), logits
    if binary:
        if bool(((scores < 0.0) | (scores > 1.0)).any()):
            raise _diagnose_scores(parts, scores, input_kind, percentages)
        return check_probs(np.column_stack([1.0 - scores[:, 0], scores[:, 0]])), None
    if renormalize:
        if scores.min() < 0.0:
            raise _diagnose_scores(parts, scores, input_kind, percentages)
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
        return check_probs(scores / row_sums[:, None]), None
    raise _diagnose_scores(parts, scores, input_kind, percentages)


def _binary_class_names(parts: _Parts, notes: list[str]) -> list[str] | None:
    """Class names for one score column (it gives P(class 1)).

    Text labels are matched by name: a score column named after one of the
    two labels (``p_dog``) gives that class's probability. A column whose
    name is not a label stops the load with a proposed mapping (the labels
    in natural order: the second is class 1), never a guess.
    """
    raw = parts.raw_labels
    if raw.dtype.kind in "fiub":
        return None
    _, texts = _factorize_text_labels(raw, parts.row_label)
    distinct = sorted(texts, key=_natural_key)
    if set(distinct) <= {"0", "1"}:
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


def load_predictions(
    source: Source,
    *,
    label_column: str | int | None = None,
    class_columns: Sequence[str] | None = None,
    score_column: str | None = None,
    input_kind: str = "auto",
    renormalize: bool = False,
    percentages: bool = False,
    class_names: Sequence[str] | None = None,
    split_column: str | None = "split",
    name: str | None = None,
    max_bytes: int | None = 500_000_000,
    file_format: str | None = None,
    group: str | None = None,
) -> Predictions:
    """Read a file of predictions into validated :class:`Predictions`.

    Parameters
    ----------
    source : path, bytes or binary file object
        A CSV/TSV (comma, tab or semicolon, optionally gzipped), Parquet,
        NPZ or NPY file. For bytes and file objects, ``file_format`` or the
        extension of ``name`` (or of the object's ``.name``) picks the
        reader; without either the content is sniffed.
    label_column : str, optional
        Column with the true classes. Default: the first column named
        label, labels, y_true, true_label, target, y, class, truth, ...
        (case-insensitive). For a plain NPY array, a column number.
    class_columns : sequence of str, optional
        Columns with one probability (or logit) per class, in class order.
        Default: the columns sharing a prefix such as ``p_``, ``prob_``,
        ``proba_``, ``probs_``, ``score_``, ``logit_``, ``class_`` (or
        ``prob0, prob1, ...``), else
        every remaining numeric column except known non-class columns
        (split, id, index, fold, weight, ...). For NPZ: the array's name.
    score_column : str, optional
        One column holding P(class 1) (or a logit) of a binary problem.
    input_kind : {"auto", "probabilities", "logits"}
        ``"logits"`` reads the values as logits. ``"auto"`` reads them as
        logits only when the class columns are named ``logit_*``/``logits_*``
        or when they cannot be probabilities by a wide margin: at least
        :data:`AUTO_LOGIT_MIN_SHARE` (a quarter) of the values lie outside
        [0, 1] *and* the rows do not sum to one constant (one binary score
        column: some values are negative); :attr:`Predictions.logit_reason`
        then says why. A probability-like file with a few bad values, rows
        summing to 100 or to another constant is refused
        (:class:`PredictionsFileError` with its fixes), never reinterpreted.
    renormalize : bool
        Divide each row by its sum (stated in :attr:`Predictions.notes`)
        instead of refusing probability rows that do not sum to 1.
    percentages : bool
        The values are percentages: divide every value by 100 before the
        checks (stated in :attr:`Predictions.notes`). Combine with
        ``renormalize=True`` for rounded percentages.
    class_names : sequence of str, optional
        The class of each class column, in column order (for one binary
        score column: the negative then the positive class). Labels are
        matched to these names; use it to accept the mapping a
        :class:`PredictionsFileError` proposes for text labels that match no
        column name.
    split_column : str or None
        Name of the optional column with per-row split names; None ignores it.
    name : str, optional
        Model name; an extension in it (``"resnet.csv"``) also serves as the
        format hint. Default: the file name without extension.
    max_bytes : int or None
        Refuse files larger than this (also after unpacking gzip/NPZ).
    file_format : {"csv", "tsv", "parquet", "npz", "npy"}, optional
        Force a reader.
    group : str, optional
        Column (NPZ: array) holding each row's group, kept as text in
        :attr:`Predictions.groups` for :func:`calib_core.by_group` (whole
        numbers as integers: ``3``, not ``3.0``). Rows without a value are
        not refused: they form the group :data:`MISSING_GROUP`
        (``"(missing)"``) and a note says how many there are. The column is
        never read as a class column. Whether or not it is given, the
        candidate columns (text, true/false and integer columns that are not
        the label, split or classes) are listed in
        :attr:`Predictions.attribute_columns`.

    Returns
    -------
    Predictions

    Raises
    ------
    PredictionsFileError
        (a :class:`CalibrationInputError`) for values that are not
        probabilities and labels that match no column name: ``exc.fixes``
        holds :class:`LoadFix` objects whose ``kwargs`` load the file
        (renormalise rows, divide by 100, read as logits, accept a proposed
        label mapping), ``exc.rows`` the offending rows, ``exc.plain`` the
        message without argument names, ``exc.proposed_mapping`` the mapping.
    CalibrationInputError
        Empty file or no rows, no label column, labels outside the classes,
        NaN/inf values, negative probabilities, rows not summing to 1
        (beyond ``ROW_SUM_TOLERANCE``), fewer than 2 classes, non-numeric
        class columns, duplicate column names, a file over ``max_bytes``,
        an unknown format, pickled NPY/NPZ data, an unreadable or damaged
        file (any reader failure ends here, never in another exception
        type), more than :data:`MAX_CLASSES` classes. The message names the
        column and the row (1-based, with its file line for CSV).

    Notes
    -----
    Labels are mapped to classes by name whenever the class columns carry
    names (a label equal to a class's name is that class, whatever its type:
    ``True`` with ``p_True``; ``2`` with ``p_2`` among ``p_cat``); integer
    labels 0..K-1 that do not all name a column are class indices; "NA",
    "none", "null" and "nan" are class names when a column is named so.
    Loading is linear in the number of class columns.

    Logits ``z`` become probabilities with the stable softmax
    ``p_k = exp(z_k - max_j z_j) / sum_i exp(z_i - max_j z_j)``; a single
    binary logit with the sigmoid ``1 / (1 + exp(-z))`` (kept as the logit
    row ``[0, z]``). Probability rows within ``ROW_SUM_TOLERANCE`` of 1 are
    kept exactly as written (so metrics agree with other tools reading the
    same file); a warning says so when a row is off by more than 1e-6.

    Examples
    --------
    >>> pred = load_predictions(b"label,p_cat,p_dog\\ncat,0.8,0.2\\ndog,0.4,0.6\\n", name="m.csv")
    >>> pred.class_names, pred.labels.tolist(), pred.accuracy
    (('cat', 'dog'), [0, 1], 1.0)
    """
    input_kind = {"probs": "probabilities", "proba": "probabilities", "logit": "logits"}.get(
        input_kind, input_kind) if isinstance(input_kind, str) else input_kind
    input_kind = check_choice(input_kind, "input_kind", _INPUT_KINDS)
    for flag, value in (("renormalize", renormalize), ("percentages", percentages)):
        if not isinstance(value, (bool, np.bool_)):
            raise CalibrationInputError(f"`{flag}` must be True or False, got {value!r}.")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
                                  or max_bytes <= 0):
        raise CalibrationInputError(f"`max_bytes` must be a positive whole number or None, got {max_bytes!r}.")
    if class_names is not None:
        if isinstance(class_names, str):
            raise CalibrationInputError("`class_names` must be a sequence of names, not one string.")
        class_names = [str(c).strip() for c in class_names]
        if len(set(class_names)) != len(class_names):
            raise CalibrationInputError("`class_names` must be unique.")
    display = "the file"
    try:
        raw = _resolve_source(source, name, max_bytes)
        display = raw.display
        return _load(raw, label_column=label_column, class_columns=class_columns, score_column=score_column,
                     input_kind=input_kind, renormalize=bool(renormalize), percentages=bool(percentages),
                     class_names=class_names, split_column=split_column, name=name, max_bytes=max_bytes,
                     file_format=file_format, group=group)
    except CalibrationInputError:
        raise
    except MemoryError as exc:
        raise CalibrationInputError(
            f"{display} needs more memory than is available to load; load a sample of its rows."
        ) from exc
    except RecursionError as exc:
        raise CalibrationInputError(f"{display} is nested too deeply to read.") from exc
    except Exception as exc:  # the one boundary where files enter: no other exception type leaves
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise CalibrationInputError(
            f"{display} could not be read ({type(exc).__name__}{': ' + detail if detail else ''}). "
            "Check that it is a CSV, Parquet, NPZ or NPY file of predictions, or re-export it."
        ) from exc


def _load(raw: _Raw, *, label_column: str | int | None, class_columns: Sequence[str] | None,
          score_column: str | None, input_kind: str, renormalize: bool, percentages: bool,
          class_names: list[str] | None, split_column: str | None, name: str | None,
          max_bytes: int | None, file_format: str | None, group: str | None = None) -> Predictions:
    """The body of :func:`load_predictions` once the arguments are checked."""
    if raw.size() == 0:
        raise CalibrationInputError(
            f"{raw.display} is empty (0 bytes). Provide a table with a header row, e.g. "
            "'label,p_0,p_1', and one row per prediction."
        )
    raw = _maybe_gunzip(raw, max_bytes)
    fmt = _detect_format(raw, file_format, raw.head(16))
    notes: list[str] = []
    options = dict(display=raw.display, label_column=label_column, class_columns=class_columns,
                   score_column=score_column, split_column=split_column, notes=notes, group_column=group)
    if fmt == "csv":
        table, read_notes = _read_csv(raw)
        notes.extend(read_notes)
        parts = _table_parts(table, **options)
    elif fmt == "parquet":
        parts = _table_parts(_read_parquet(raw), **options)
    else:
        loaded = _load_numpy(raw, max_bytes)
        if isinstance(loaded, np.ndarray):
            fmt = "npy"
            if loaded.dtype.hasobject:
                raise _pickle_refused(raw.display, "dtype object")
            parts = _npy_parts(loaded, **options)
        else:
            fmt = "npz"
            parts = _npz_parts(_npz_arrays(loaded, raw.display), **options)
    probs, logits = _interpret_scores(parts, input_kind, renormalize, notes, percentages=percentages)
    n_classes = probs.shape[1]
    names = parts.class_names
    if class_names is not None:
        if len(class_names) != n_classes:
            raise CalibrationInputError(
                f"`class_names` gives {len(class_names)} names but {raw.display} has {n_classes} classes "
                f"(columns {_shown(parts.score_names)})."
            )
        names = class_names
        notes.append(f"the classes were named on request: {_shown(class_names, 8)}.")
    elif parts.scores.shape[1] == 1:
        names = _binary_class_names(parts, notes)
    elif names is not None and len(names) != n_classes:
        raise CalibrationInputError(
            f"{raw.display} gives {len(names)} class names but its scores have {n_classes} "
            "columns; store one name per class."
        )
    if names is not None and len(set(names)) != len(names):
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        dup = next(n for n in names if counts[n] > 1)
        raise CalibrationInputError(
            f"two class columns give the same class name {dup!r} ({_shown(parts.score_names)}); "
            "rename them so each class has one column."
        )
    labels, names = _labels_to_indices(parts, n_classes, names, notes)
    extra_logits = parts.extra_logits
    if extra_logits is not None and logits is None:
        if extra_logits.shape == probs.shape and np.isfinite(extra_logits).all() and np.allclose(
                softmax(extra_logits), probs, rtol=0.0, atol=1e-6):
            logits = extra_logits
        else:
            notes.append("the archive's logits are not the logits of its probabilities "
                         "(softmax differs by more than 1e-6); they were ignored.")
    return Predictions._from_checked(
        probs=probs, labels=labels, class_names=tuple(names), logits=logits,
        split=parts.split, name=_model_name(raw.hint, name), source_format=fmt,
        warnings=tuple(notes), logit_reason=parts.inferred_logit_reason if logits is not None else None,
        groups=parts.groups, group_column=parts.group_name, attribute_columns=tuple(parts.attributes))


# ---------------------------------------------------------------------------
# Demo data
# ---------------------------------------------------------------------------

def _demo_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "demo"


def demo_datasets() -> dict[str, Path]:
    """The bundled demo prediction files, by name (file stem), sorted.

    Returns
    -------
    dict of str to Path
        ``{"digits_gaussian_nb": Path(".../data/demo/digits_gaussian_nb.csv"), ...}``;
        empty when the package is installed without the ``data/demo`` folder.
    """
    folder = _demo_dir()
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.csv"))}


def load_demo(name: str) -> Predictions:
    """Load one bundled demo file by name (see :func:`demo_datasets`).

    Demos with a real group attribute (:data:`DEMO_GROUP_COLUMNS`, e.g.
    ``fair_logistic_regression`` grouped by ``occupation``) are loaded with
    that column as :attr:`Predictions.groups`.

    Raises
    ------
    CalibrationInputError
        For an unknown name; the message lists the available ones.

    Examples
    --------
    >>> pred = load_demo("digits_gaussian_nb")
    >>> pred.n_classes, pred.split_names
    (10, ('calibration', 'test'))
    """
    available = demo_datasets()
    if name not in available:
        listing = ", ".join(available) if available else "none (the data/demo folder is missing)"
        raise CalibrationInputError(f"unknown demo {name!r}; available demos: {listing}.")
    return load_predictions(available[name], name=name, group=DEMO_GROUP_COLUMNS.get(name))
