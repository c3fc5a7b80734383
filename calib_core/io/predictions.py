"""The :class:`Predictions` object; :func:`~calib_core.io.loading.load_predictions` reads a file into one.

:func:`~calib_core.io.loading.load_predictions` turns a file of model outputs into a validated
:class:`Predictions` object (probabilities, integer labels, class names,
the logits when the file held logits, an optional split column and a list
of warnings). It accepts the layouts people actually write:

* wide: a label column and one column per class (``label, p_cat, p_dog``);
* binary: a label column and one score column holding the probability of
  the class it is named for (``p_0``: class 0), else P(class 1); or one
  logit column;
* labels as integer indices or as class-name strings matched to the class
  columns' names (``p_cat`` -> ``cat``);
* NPZ archives with arrays such as ``probs``/``logits`` and ``labels``.

The layers below it: :mod:`calib_core.io.formats` (file formats, CSV
sniffing, readers), :mod:`calib_core.io.columns` (which column is what),
:mod:`calib_core.io.interpret` (labels to classes, scores to
probabilities, the fixes of a refused file).

Every problem raises :class:`~calib_core.validation.CalibrationInputError`
with a message that names the problem, shows an example row or column and
says how to fix it. Nothing is dropped, clipped or renormalised without a
warning in :attr:`Predictions.warnings`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.io.confidence import ConfidenceAccess, SeveralModelsError
from calib_core.io.columns import MISSING_GROUP, group_text, split_mask
from calib_core.io.formats import _as_text
from calib_core.io.interpret import _map_string_labels
from calib_core.validation import (CalibrationInputError, check_choice, check_labels, check_probs, check_sample_weight,
                                   softmax)
from calib_core._accel import freeze_and_mark as _sealed, is_validated

__all__ = ["Predictions", "SeveralModelsError"]


def _readonly(array: NDArray[Any]) -> NDArray[Any]:
    """A read-only view: the caller's array stays writeable, ours cannot be changed."""
    view = array.view()
    view.flags.writeable = False
    return view


def _is_private_copy(checked: NDArray[Any], given: object) -> bool:
    """Whether a check made ``checked`` as a new array (not the caller's data, nor a view of it)."""
    if isinstance(given, np.ndarray):
        return not np.may_share_memory(checked, given)
    return isinstance(given, (list, tuple))


def _class_names(class_names: Sequence[Any], n_classes: int) -> tuple[str, ...]:
    """``class_names`` as text, ``"0" .. "K-1"`` when empty; one unique name per column."""
    names = tuple(str(c) for c in class_names) if len(class_names) else tuple(str(k) for k in range(n_classes))
    if len(names) != n_classes:
        raise CalibrationInputError(
            f"`class_names` has {len(names)} names but `probs` has {n_classes} columns."
        )
    if len(set(names)) != n_classes:
        dup = next(c for c in names if names.count(c) > 1)
        raise CalibrationInputError(f"`class_names` must be unique; {dup!r} appears twice.")
    return names


def _checked_logits(logits: ArrayLike | None, shape: tuple[int, int]) -> NDArray[np.float64] | None:
    """The logits as a read-only float array of the probabilities' ``shape``, all finite (or None)."""
    if logits is None:
        return None
    logits = np.asarray(logits, dtype=np.float64)
    if logits.shape != shape:
        raise CalibrationInputError(
            f"`logits` has shape {logits.shape} but `probs` has shape {shape}."
        )
    if not np.isfinite(logits).all():
        row = int(np.flatnonzero(~np.isfinite(logits).all(axis=1))[0])
        raise CalibrationInputError(f"`logits` contains NaN or infinite values, e.g. row {row}.")
    return _readonly(logits)


def _split_text(split: ArrayLike | None, n_rows: int) -> NDArray[np.str_] | None:
    """The split column as read-only text of shape ``(n_rows,)`` (missing values: ""; bytes decoded as UTF-8)."""
    if split is None:
        return None
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
    return _readonly(split)


def _group_text(groups: ArrayLike | None, n_rows: int, *, check: bool) -> NDArray[np.str_] | None:
    """The group column as read-only text of shape ``(n_rows,)``: non-text values by :func:`group_text`, blank
    text as :data:`MISSING_GROUP` (``check``; arrays that were stored before are text already)."""
    if groups is None:
        return None
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n_rows:
        raise CalibrationInputError(
            f"`groups` must have shape ({n_rows},) to match `probs`, got {groups.shape}."
        )
    if groups.dtype.kind != "U":
        groups = group_text(pd.Series(groups.astype(object)))[0]
    elif check:
        groups = np.where(np.char.strip(groups) == "", MISSING_GROUP, groups)
    return _readonly(groups)


@dataclass(frozen=True, eq=False)
class Predictions(ConfidenceAccess):
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
        ``"csv"``, ``"parquet"``, ``"npz"``, ``"npy"``, ``"arrays"``; for a table in
        memory ``"pandas"``, ``"arrow"`` or ``"polars"``.
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
    kind : {"classes", "confidence"}
        ``"classes"``: a K-class model (``probs`` are its class
        probabilities). ``"confidence"``: a *confidence model* (an LLM, a
        judge, a forecaster) that states, per item, a confidence ``c`` that
        its answer is right, with the outcome ``correct``; it is stored as
        ``probs = [1 - c, c]`` (classes ``"wrong"``, ``"right"``) and
        ``labels = correct``, and is never a two-class problem: its
        :attr:`accuracy` is the share of answers right, its metrics are the
        registry's confidence entries (``metric_report(..., kind=pred.kind)``),
        and the top label of ``probs`` (``max(c, 1 - c)``) means nothing.
        Use :attr:`confidence` and :attr:`correct`, defined for both kinds.
    ids : ndarray of shape (N,), str, optional
        Per-row item identifier (a confidence file's ``question_id``), used
        to match the rows of several systems (:func:`load_confidence_models`).
    id_column : str, optional
        The column ``ids`` came from (None without ids, or ids given as arrays):
        what :meth:`to_frame` and the command line's ``recalibrate`` name it.
    sample_weight : ndarray of shape (N,), float64, optional
        Per-row weights (frequencies: integer weights stand for repeated
        rows), checked by :func:`calib_core.validation.check_sample_weight`;
        pass them on as ``sample_weight=pred.sample_weight``. None unless a
        weight column was asked for (``load_predictions(...,
        weight_column=COL)``: never guessed, a column named ``weight`` may be
        a feature) or given to :meth:`from_arrays`.
    weight_column : str, optional
        The column ``sample_weight`` came from (None without weights).

    Notes
    -----
    Construction validates every field with
    :func:`calib_core.validation.check_probs` and
    :func:`~calib_core.validation.check_labels`; the arrays are stored
    read-only so a cached object cannot be changed by accident. Probabilities
    and labels whose data this object owns (a loaded file, a subset, a
    converted or copied input; labels are always copied) are frozen and
    marked validated, so metrics given ``pred.probs, pred.labels`` skip the
    validation pass (:func:`calib_core._accel.mark_validated`). An input
    array used as it is stays writeable for its owner and is checked again
    by every call.

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
    kind: str = "classes"
    ids: NDArray[np.str_] | None = None
    id_column: str | None = None
    sample_weight: NDArray[np.float64] | None = None
    weight_column: str | None = None

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
        fields.setdefault("kind", "classes")
        fields.setdefault("ids", None)
        fields.setdefault("id_column", None)
        fields.setdefault("sample_weight", None)
        fields.setdefault("weight_column", None)
        for key, value in fields.items():
            object.__setattr__(self, key, value)
        self._normalise(check=False)
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle (``st.cache_data`` hands out unpickled copies) with the arrays read-only and marked again.

        Pickling keeps the values, not the read-only flags. New arrays (from
        unpickling or a deep copy) belong to this object and were validated
        before pickling: they are frozen and marked without a new scan. Arrays
        shared with another object (a shallow copy) are already read-only and
        are left as they are.
        """
        state = {"kind": "classes", "ids": None, "id_column": None, **state}  # objects pickled before these fields existed
        for key, value in state.items():
            object.__setattr__(self, key, value)
        for key in ("probs", "labels", "logits", "split", "groups", "ids", "sample_weight"):
            value = getattr(self, key)
            if isinstance(value, np.ndarray):
                n_classes = self.probs.shape[1] if key == "labels" else None
                object.__setattr__(self, key, _sealed(value, value.flags.writeable, n_classes)
                                   if key in ("probs", "labels") else _readonly(value))

    def _normalise(self, *, check: bool) -> None:
        """Check every field (``check``: the probabilities too) and store them read-only, in a fixed order of checks:
        probabilities and labels, class names, logits, split, groups, kind and ids, weights."""
        probs, owned, labels = self._checked_probs_labels(check=check)
        n_rows, n_classes = probs.shape
        names = _class_names(self.class_names, n_classes)
        logits = _checked_logits(self.logits, probs.shape)
        split = _split_text(self.split, n_rows)
        groups = _group_text(self.groups, n_rows, check=check)
        object.__setattr__(self, "groups", groups)
        self._normalise_kind(n_rows)
        weights = None if self.sample_weight is None else _readonly(check_sample_weight(self.sample_weight, n_rows))
        object.__setattr__(self, "sample_weight", weights)
        object.__setattr__(self, "weight_column", None if weights is None else str(self.weight_column or "weight"))
        object.__setattr__(self, "group_column", None if groups is None else str(self.group_column or "group"))
        object.__setattr__(self, "attribute_columns", tuple(str(c) for c in self.attribute_columns))
        object.__setattr__(self, "probs", _sealed(probs, owned))
        object.__setattr__(self, "labels", _sealed(labels, True, n_classes))
        object.__setattr__(self, "class_names", names)
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "split", split)
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "source_format", str(self.source_format))
        object.__setattr__(self, "warnings", tuple(str(w) for w in self.warnings))
        if self.logit_reason is not None:
            object.__setattr__(self, "logit_reason", str(self.logit_reason) if logits is not None else None)

    def _checked_probs_labels(self, *, check: bool) -> tuple[NDArray[np.float64], bool, NDArray[np.intp]]:
        """The probabilities (checked when ``check``), whether they are this object's own copy, and the labels.

        Labels that share memory with the caller's unchecked array are copied
        (N integers: cheap), so that sealing them read-only does not freeze
        the caller's array.
        """
        probs = check_probs(self.probs) if check else self.probs
        owned = not check or _is_private_copy(probs, self.probs)
        n_rows, n_classes = probs.shape
        labels = check_labels(self.labels, n_classes, n_rows=n_rows)
        if check and isinstance(self.labels, np.ndarray) and np.may_share_memory(labels, self.labels) \
                and not is_validated(labels, n_classes):
            labels = labels.copy()  # N integers: cheap, and then they are ours to freeze
        return probs, owned, labels

    def _normalise_kind(self, n_rows: int) -> None:
        """Check :attr:`kind` (a confidence model is ``(N, 2)``) and store :attr:`ids` as read-only text."""
        kind = check_choice(self.kind, "kind", ("classes", "confidence"))
        if kind == "confidence" and self.probs.shape[1] != 2:
            raise CalibrationInputError(
                f"a confidence model is stored as (N, 2) probabilities [1 - c, c]; got {self.probs.shape[1]} columns.")
        object.__setattr__(self, "kind", kind)
        ids = self.ids
        if ids is not None:
            ids = np.asarray(ids)
            if ids.shape != (n_rows,):
                raise CalibrationInputError(f"`ids` must have shape ({n_rows},) to match `probs`, got {ids.shape}.")
            object.__setattr__(self, "ids", _readonly(ids.astype(str)))

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
        sample_weight: ArrayLike | None = None,
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
        given_probs = probs
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
        # Ours when made here (the softmax of the logits, a converted copy): sealed, not checked again below.
        probs_array = _sealed(probs_array, given_probs is None or _is_private_copy(probs_array, given_probs))
        n_classes = probs_array.shape[1]
        names = tuple(str(c) for c in class_names) if class_names is not None else tuple(
            str(k) for k in range(n_classes))
        label_array = np.asarray(labels)
        if label_array.dtype.kind in "OUS":
            label_array = _map_string_labels(label_array, names, lambda i: f"row {i}")
        return cls(probs=probs_array, labels=label_array, class_names=names, logits=logit_matrix,
                   split=split, name=name, source_format=source_format, warnings=tuple(warnings),
                   groups=groups, group_column=group_column, sample_weight=sample_weight)

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
        """Fraction of rows whose arg-max class (ties: lowest index) is the label; for a confidence model,
        the share of answers right (not the accuracy of predicting correctness)."""
        return float(np.mean(self.correct))

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
            attribute columns; the rows selected (of ``groups`` and ``sample_weight`` too).

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
        # The selected rows are new arrays of valid rows: frozen and marked, they are not checked again.
        return Predictions(
            probs=_sealed(self.probs[index], True), labels=_sealed(self.labels[index], True, self.n_classes),
            class_names=self.class_names,
            logits=None if self.logits is None else self.logits[index],
            split=None if self.split is None else self.split[index],
            name=self.name, source_format=self.source_format, warnings=self.warnings,
            logit_reason=self.logit_reason, groups=None if self.groups is None else self.groups[index],
            group_column=self.group_column, attribute_columns=self.attribute_columns,
            kind=self.kind, ids=None if self.ids is None else self.ids[index], id_column=self.id_column,
            sample_weight=None if self.sample_weight is None else self.sample_weight[index],
            weight_column=self.weight_column,
        )

    def select_split(self, value: str) -> "Predictions":
        """The rows whose :attr:`split` equals ``value`` (e.g. ``"test"``)."""
        if self.split is None:
            raise CalibrationInputError(
                f"{self.name!r} has no split column, so there is no {value!r} split."
            )
        mask = split_mask(self.split, value)
        if not mask.any():
            raise CalibrationInputError(
                f"{self.name!r} has no rows with split {value!r}; splits present: "
                f"{', '.join(self.split_names)}."
            )
        return self.subset(mask)

    def to_frame(self) -> pd.DataFrame:
        """The predictions as a table ``label, p_<class>..., [split], [<group column>]`` (a confidence model:
        ``[<id column, else question_id>], confidence, correct, ...``) that :func:`load_predictions` reads back (``group=``: groups)."""
        if self.kind == "confidence":
            frame = pd.DataFrame({"confidence": self.probs[:, 1], "correct": self.labels})
            if self.ids is not None:
                frame.insert(0, self.id_column or "question_id", self.ids)
        else:
            frame = pd.DataFrame(self.probs, columns=[f"p_{c}" for c in self.class_names])
            frame.insert(0, "label", self.labels)
        if self.split is not None:
            frame["split"] = self.split
        if self.groups is not None and self.group_column not in frame.columns:
            frame[self.group_column] = self.groups
        return frame

    def __repr__(self) -> str:
        splits = f", splits={list(self.split_names)}" if self.split is not None else ""
        kind = ", kind='confidence'" if self.kind == "confidence" else ""
        return (f"Predictions(name={self.name!r}, n_samples={self.n_samples}{kind}, "
                f"n_classes={self.n_classes}, input_kind={self.input_kind!r}, "
                f"accuracy={self.accuracy:.4f}, source_format={self.source_format!r}{splits}, "
                f"warnings={len(self.warnings)})")
