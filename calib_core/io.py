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

__all__ = ["Predictions", "load_predictions", "demo_datasets", "load_demo"]

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
        Everything the loader assumed or changed, in plain words.

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
                split = pd.Series(split).fillna("").astype(str).to_numpy(dtype=str)
            else:
                split = split.astype(str)
            if split.shape != (n_rows,):
                raise CalibrationInputError(
                    f"`split` must have shape ({n_rows},) to match `probs`, got {split.shape}."
                )
            split = _readonly(split)
        object.__setattr__(self, "probs", _readonly(probs))
        object.__setattr__(self, "labels", _readonly(labels))
        object.__setattr__(self, "class_names", names)
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "split", split)
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "source_format", str(self.source_format))
        object.__setattr__(self, "warnings", tuple(str(w) for w in self.warnings))

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
                   split=split, name=name, source_format=source_format, warnings=tuple(warnings))

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
            Same class names, name, format and warnings; the rows selected.

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
        """The predictions as a table ``label, p_<class>..., [split]`` that
        :func:`load_predictions` reads back unchanged."""
        frame = pd.DataFrame(self.probs, columns=[f"p_{c}" for c in self.class_names])
        frame.insert(0, "label", self.labels)
        if self.split is not None:
            frame["split"] = self.split
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
        row = next(csv.reader([lines[1]], delimiter=best))
        if any(re.fullmatch(r"\s*-?\d+,\d+(?:[eE][-+]?\d+)?\s*", v) for v in row) and not any(
                re.fullmatch(r"\s*-?\d+\.\d+(?:[eE][-+]?\d+)?\s*", v) for v in row):
            decimal = ","
    return best, decimal, header


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
        return f"row {row + 1}"
    return label


def _read_csv(raw: _Raw) -> tuple[_Table, list[str]]:
    notes: list[str] = []
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

    def read(encoding: str) -> tuple[pd.DataFrame, str, str, list[str]]:
        delimiter, decimal, header = _sniff_csv(head, encoding, raw.hint, raw.display)
        _check_header_is_names(header, raw.display)
        _check_duplicates(header, raw.display)
        source = str(raw.path) if raw.path is not None else io.BytesIO(raw.data or b"")
        with _warnings.catch_warnings():
            # A first row longer than the header makes pandas drop data with only a warning.
            _warnings.simplefilter("error", pd.errors.ParserWarning)
            _warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            frame = pd.read_csv(source, sep=delimiter, decimal=decimal, index_col=False,
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
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        if isinstance(exc, CalibrationInputError):
            raise
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
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
    return _Table(frame=frame, row_label=_csv_line_finder(raw, delimiter, encoding)), notes


def _read_parquet(raw: _Raw) -> _Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with raw.open_binary() as handle:
            parquet = pq.ParquetFile(handle)
            _check_duplicates([str(c).strip() for c in parquet.schema_arrow.names], raw.display)
            table = parquet.read()
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, CalibrationInputError):
            raise
        raise CalibrationInputError(
            f"could not read {raw.display} as Parquet ({exc}). The file may be damaged or "
            "not Parquet; re-export it, or save the predictions as CSV."
        ) from exc
    names = [str(c).strip() for c in table.column_names]
    _check_duplicates(names, raw.display)
    frame = table.to_pandas()
    frame.columns = names
    return _Table(frame=frame, row_label=_plain_row_label)


# ---------------------------------------------------------------------------
# NPZ / NPY
# ---------------------------------------------------------------------------

def _pickle_refused(display: str, what: str) -> CalibrationInputError:
    return CalibrationInputError(
        f"{display} holds pickled Python objects ({what}); loading pickles can run arbitrary "
        "code, so they are refused. Save plain arrays instead, e.g. "
        "np.savez(path, probs=probs, labels=labels) with numeric or fixed-width string arrays."
    )


def _load_numpy(raw: _Raw, max_bytes: int | None) -> Any:
    fmt_name = "NPZ" if raw.head(4) == b"PK\x03\x04" else "NPY"
    if fmt_name == "NPZ":
        try:
            with raw.open_binary() as handle, zipfile.ZipFile(handle) as archive:
                unpacked = sum(info.file_size for info in archive.infolist())
        except zipfile.BadZipFile as exc:
            raise CalibrationInputError(f"{raw.display} is a damaged NPZ (zip) archive: {exc}.") from exc
        if max_bytes is not None and unpacked > max_bytes:
            raise _too_big(f"{raw.display} (unpacked)", unpacked, max_bytes)
    try:
        loaded = np.load(raw.open_binary() if raw.data is not None else raw.path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
            raise _pickle_refused(raw.display, "pickled data or an object array") from exc
        raise CalibrationInputError(f"could not read {raw.display} as {fmt_name}: {exc}.") from exc
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CalibrationInputError(f"could not read {raw.display} as {fmt_name}: {exc}.") from exc
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
            except (OSError, EOFError, zipfile.BadZipFile) as exc:
                raise CalibrationInputError(f"could not read array {key!r} of {display}: {exc}.") from exc
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


def _bad_numeric_value(values: pd.Series) -> tuple[int, Any] | None:
    """First row whose value is present but not a number."""
    as_number = pd.to_numeric(values, errors="coerce")
    bad = as_number.isna().to_numpy() & values.notna().to_numpy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        # Strings such as "NaN" or "" count as missing, not as bad text.
        bad &= ~values.astype(str).str.strip().str.lower().isin(
            ["", "nan", "na", "n/a", "null", "none"]).to_numpy()
    rows = np.flatnonzero(bad)
    return (int(rows[0]), values.iloc[int(rows[0])]) if rows.size else None


def _is_number_column(values: pd.Series) -> bool:
    return values.dtype.kind in "iuf"


def _table_parts(table: _Table, *, display: str, label_column: str | None,
                 class_columns: Sequence[str] | None, score_column: str | None,
                 split_column: str | None, notes: list[str]) -> _Parts:
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
                      and c.lower() not in LABEL_NAMES and c != "" and not c.lower().startswith("unnamed:")]
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
                elif _bad_numeric_value(values) is not None and pd.to_numeric(
                        values, errors="coerce").notna().any():
                    chosen.append(c)  # mostly numbers with some text: reported as an error below
                else:
                    notes.append(f"ignored column {c!r}: it holds text, not probabilities.")
        unused = [c for c in candidates if c not in chosen]
        if best is not None and unused:
            notes.append(f"ignored columns without a class prefix: {', '.join(map(repr, unused))}.")
    if not chosen:
        raise CalibrationInputError(
            f"{display} has no probability or logit columns besides the label {label!r}, so it "
            f"has fewer than 2 classes (columns: {', '.join(repr(c) for c in columns)}). Add one "
            "column per class (p_<class>) or one score column for a binary problem, or pass "
            "`class_columns=`."
        )
    if label in chosen:
        raise CalibrationInputError(f"column {label!r} cannot be both the label and a class column.")
    names, prefix = _strip_common_prefix(chosen)
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
                    f"class column {c!r} is not numeric: {row_label(row)} holds {value!r}. "
                    "Every class column must hold numbers; fix that value, or pass "
                    "`class_columns=` to choose the probability columns."
                )
    if all(_is_number_column(frame[c]) for c in chosen):
        scores = np.ascontiguousarray(frame[chosen].to_numpy(dtype=np.float64, na_value=np.nan))
    else:  # text columns whose only non-numbers are spellings of NaN
        scores = np.column_stack([pd.to_numeric(frame[c], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan) for c in chosen])
    split = None
    if split_name is not None:
        split_values = frame[split_name]
        missing = int(split_values.isna().sum())
        if missing:
            notes.append(f"{missing} rows have no value in the split column {split_name!r}; "
                         "their split is ''.")
        split = split_values.fillna("").astype(str).str.strip().to_numpy(dtype=str)
    return _Parts(scores=scores, raw_labels=frame[label].to_numpy(), score_names=chosen,
                  class_names=names if (prefix is not None or len(chosen) > 1) else None,
                  label_name=label, logit_reason=logit_reason, split=split, row_label=row_label,
                  notes=notes)


def _npz_parts(arrays: dict[str, NDArray[Any]], *, display: str, label_column: str | None,
               class_columns: Sequence[str] | None, score_column: str | None,
               split_column: str | None, notes: list[str]) -> _Parts:
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
    if prob_key is not None and logit_key is not None:
        logits_kept = logit_key
    labels = arrays[label_key]
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
        class_names = [str(v) for v in np.asarray(arrays[name_key]).ravel()]
    split = None
    split_key = _pick_key(arrays, None, (str(split_column).lower(),), "split", display) \
        if split_column is not None else None
    if split_key is not None:
        split = np.asarray(arrays[split_key]).astype(str)
        if split.shape != (scores.shape[0],):
            raise CalibrationInputError(
                f"split array {split_key!r} of {display} has shape {split.shape}, expected ({scores.shape[0]},)."
            )
    used = {label_key, key, name_key, split_key, logits_kept}
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
                  split=split, row_label=_plain_row_label, notes=notes, extra_logits=extra)


def _npy_parts(array: NDArray[Any], *, display: str, label_column: str | None,
               class_columns: Sequence[str] | None, score_column: str | None,
               split_column: str | None, notes: list[str]) -> _Parts:
    if array.dtype.names:
        frame = pd.DataFrame({name: array[name] for name in array.dtype.names})
        return _table_parts(_Table(frame=frame, row_label=_plain_row_label), display=display,
                            label_column=label_column, class_columns=class_columns,
                            score_column=score_column, split_column=split_column, notes=notes)
    if array.ndim != 2 or array.shape[1] < 2:
        raise CalibrationInputError(
            f"{display} holds one array of shape {array.shape} without labels. Save an NPZ with "
            "np.savez(path, probs=probs, labels=labels), or an (N, K + 1) array whose first or "
            "last column holds the labels."
        )
    if array.dtype.kind not in "fiub":
        raise CalibrationInputError(f"{display} is not numeric (dtype {array.dtype}).")
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

_MISSING_STRINGS = frozenset({"", "nan", "na", "n/a", "null", "none"})


def _factorize_text_labels(labels: NDArray[Any],
                           row_label: Callable[[int], str]) -> tuple[NDArray[np.intp], list[str]]:
    """Codes into the distinct label texts (whitespace stripped), refusing missing labels.

    Hash-based (pandas.factorize), so a million string labels cost one pass.
    """
    codes, uniques = pd.factorize(np.asarray(labels, dtype=object), use_na_sentinel=True)
    texts = [str(u).strip() for u in uniques]
    distinct = list(dict.fromkeys(texts))
    remap = np.array([distinct.index(t) for t in texts] + [-1], dtype=np.intp)
    codes = remap[codes]  # -1 (missing) picks the appended -1
    missing_codes = [k for k, t in enumerate(distinct) if t.lower() in _MISSING_STRINGS]
    bad = codes < 0
    for k in missing_codes:
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
    codes, distinct = _factorize_text_labels(labels, row_label)
    index = {str(c): k for k, c in enumerate(class_names)}
    unknown = [k for k, t in enumerate(distinct) if t not in index]
    if unknown:
        row = int(np.flatnonzero(codes == unknown[0])[0])
        shown = ", ".join(map(repr, class_names[:10])) + (", ..." if len(class_names) > 10 else "")
        raise CalibrationInputError(
            f"label {distinct[unknown[0]]!r} in {row_label(row)} is not one of the classes "
            f"({shown}). Name the class columns after the labels (p_<label>) or store class "
            "indices 0..K-1."
        )
    lookup = np.array([index[t] for t in distinct], dtype=np.intp)
    return lookup[codes]


def _generic(names: Sequence[str] | None) -> bool:
    return names is None or all(re.fullmatch(r"-?\d+", n.strip()) for n in names)


def _labels_to_indices(parts: _Parts, n_classes: int, class_names: list[str] | None,
                       notes: list[str]) -> tuple[NDArray[np.intp], list[str]]:
    """Integer labels and the final class names."""
    raw, row_label, column = parts.raw_labels, parts.row_label, parts.label_name
    if raw.dtype == bool:
        raw = raw.astype(np.intp)
        if class_names is None and n_classes == 2:
            class_names = ["False", "True"]
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
        raw = raw.astype(np.intp)
    if raw.dtype.kind in "iu":
        values = raw.astype(np.intp, copy=False)
        names = class_names or [str(k) for k in range(n_classes)]
        low, high = int(values.min()), int(values.max())
        if class_names is not None and _generic(class_names) and [int(n) for n in class_names] != list(
                range(n_classes)):
            # Columns named after the label values (p_1, p_2, p_3 with labels 1..3).
            by_name = {int(n): k for k, n in enumerate(class_names)}
            present = np.unique(values)
            if all(int(v) in by_name for v in present):
                lookup = np.full(high - low + 1, -1, dtype=np.intp)
                for v in present:
                    lookup[int(v) - low] = by_name[int(v)]
                notes.append(f"labels were matched to the class columns by name "
                             f"({', '.join(parts.score_names[:4])}{'...' if n_classes > 4 else ''}).")
                return lookup[values - low], names
        if low < 0 or high >= n_classes:
            bad = (values < 0) | (values >= n_classes)
            row = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(
                f"label {int(values[row])} in {row_label(row)} is outside the classes: with "
                f"{n_classes} class columns ({', '.join(parts.score_names[:6])}"
                f"{', ...' if n_classes > 6 else ''}) labels must be 0..{n_classes - 1}. Check "
                "that every class has a column and that labels count from 0."
            )
        return values, names
    if raw.dtype.kind not in "OUS" and not pd.api.types.is_string_dtype(raw.dtype):
        raise CalibrationInputError(
            f"the label column {column!r} has unsupported values of type {raw.dtype}; use class "
            "indices 0..K-1 or class names."
        )
    if class_names is not None and not _generic(class_names):
        return _map_string_labels(raw, class_names, row_label), class_names
    # Generic or no class names: the sorted distinct labels name the classes.
    codes, texts = _factorize_text_labels(raw, row_label)
    distinct = sorted(texts)
    if class_names is not None and set(distinct) <= set(class_names):
        return _map_string_labels(raw, class_names, row_label), class_names
    if len(distinct) != n_classes:
        raise CalibrationInputError(
            f"the labels are names ({', '.join(map(repr, distinct[:6]))}"
            f"{', ...' if len(distinct) > 6 else ''}: {len(distinct)} distinct) but the "
            f"{n_classes} class columns ({', '.join(parts.score_names[:6])}) are not named after "
            "them. Name each class column p_<label>, or store labels as indices 0..K-1."
        )
    notes.append(f"class columns {', '.join(parts.score_names[:6])} have generic names; "
                 f"assumed they follow the sorted label names {', '.join(map(repr, distinct[:6]))}"
                 f"{', ...' if n_classes > 6 else ''}.")
    lookup = np.array([distinct.index(t) for t in texts], dtype=np.intp)
    return lookup[codes], distinct


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


def _interpret_scores(parts: _Parts, input_kind: str, renormalize: bool,
                      notes: list[str]) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """Checked probabilities (N, K) and the logits they came from (or None)."""
    scores = parts.scores
    binary = scores.shape[1] == 1
    read_as_logits = input_kind == "logits" or (input_kind == "auto" and parts.logit_reason is not None)
    if not binary and not read_as_logits:
        # Fast path: valid probabilities pass the shared validator in one blocked pass;
        # anything else is diagnosed below with file rows and column names.
        try:
            probs, row_sums = check_probs_with_row_sums(scores)
        except CalibrationInputError:
            pass
        else:
            deviation = np.abs(row_sums - 1.0)
            worst = int(np.argmax(deviation))
            if renormalize and deviation[worst] > 0.0:
                changed = int((deviation > 1e-12).sum())
                if changed:
                    notes.append(f"renormalised {changed} row(s) to sum to 1; the largest deviation "
                                 f"was {deviation[worst]:.3g} ({parts.row_label(worst)}).")
                return check_probs(probs / row_sums[:, None]), None
            if deviation[worst] > SILENT_ROW_SUM_DEVIATION:
                notes.append(f"rows sum to 1 only within {deviation[worst]:.3g} "
                             f"({parts.row_label(worst)}); the values were kept as they are. "
                             "Pass renormalize=True to renormalise them.")
            return probs, None
    row_sums = scores.sum(axis=1)
    if not np.isfinite(row_sums).all() and not np.isfinite(scores).all():
        raise _nonfinite_error(parts, scores)
    low, high = float(scores.min()), float(scores.max())
    deviation = np.abs(row_sums - 1.0)
    if read_as_logits:
        if input_kind == "auto":
            notes.append(f"{parts.logit_reason}: read as logits and converted to probabilities with "
                         + ("a sigmoid" if binary else "a softmax") + "; the logits are kept.")
    elif input_kind == "auto" and not (low >= 0.0 and high <= 1.0) and (
            binary or deviation.max() > ROW_SUM_TOLERANCE):
        # Rows that sum to 1 are probabilities with a bad value, not logits.
        read_as_logits = True
        notes.append(f"values outside [0, 1] (min {low:.4g}, max {high:.4g}) were read as logits and "
                     "converted to probabilities with " + ("a sigmoid" if binary else "a softmax")
                     + "; the logits are kept. Pass input_kind='probabilities' to refuse this.")
    if read_as_logits:
        logits = np.column_stack([np.zeros(scores.shape[0]), scores[:, 0]]) if binary else scores
        return softmax(logits), logits
    if low < 0.0:
        row = int(np.flatnonzero((scores < 0.0).any(axis=1))[0])
        col = int(np.argmin(scores[row]))
        raise CalibrationInputError(
            f"column {parts.score_names[col]!r} holds a negative probability ({scores[row, col]:.6g}) "
            f"in {parts.row_label(row)}. Probabilities must lie in [0, 1]; if the values are "
            "logits, pass input_kind='logits'."
        )
    if high > 1.0:
        row = int(np.flatnonzero((scores > 1.0).any(axis=1))[0])
        col = int(np.argmax(scores[row]))
        raise CalibrationInputError(
            f"column {parts.score_names[col]!r} holds a probability above 1 ({scores[row, col]:.6g}) "
            f"in {parts.row_label(row)}. Probabilities must lie in [0, 1]; if the values are "
            "logits, pass input_kind='logits'."
        )
    if binary:
        return check_probs(np.column_stack([1.0 - scores[:, 0], scores[:, 0]])), None
    worst = int(np.argmax(deviation))
    if renormalize:
        if row_sums.min() <= 0.0:
            row = int(np.flatnonzero(row_sums <= 0.0)[0])
            raise CalibrationInputError(
                f"{parts.row_label(row)} sums to 0 ({_describe_row(parts, scores, row)}), so it "
                "cannot be renormalised; fix or remove it."
            )
        changed = int((deviation > 1e-12).sum())
        notes.append(f"renormalised {changed} row(s) to sum to 1; the largest deviation was "
                     f"{deviation[worst]:.3g} ({parts.row_label(worst)}).")
        return check_probs(scores / row_sums[:, None]), None
    off = int((deviation > ROW_SUM_TOLERANCE).sum())
    raise CalibrationInputError(
        f"the class probabilities of {parts.row_label(worst)} sum to {row_sums[worst]:.6g}, not 1 "
        f"({_describe_row(parts, scores, worst)}); {off} of {scores.shape[0]} rows are off by "
        f"more than {ROW_SUM_TOLERANCE:g}. Pass renormalize=True to divide each row by its sum, "
        "or input_kind='logits' if the values are logits."
    )


def _binary_class_names(parts: _Parts, notes: list[str]) -> list[str] | None:
    """Class names for one score column (it gives P(class 1))."""
    raw = parts.raw_labels
    if raw.dtype.kind in "fiub":
        return None
    _, texts = _factorize_text_labels(raw, parts.row_label)
    distinct = sorted(texts)
    positive = parts.class_names[0] if parts.class_names else None
    if positive is not None and positive not in distinct and not _generic([positive]):
        raise CalibrationInputError(
            f"the score column {parts.score_names[0]!r} is named after class {positive!r}, but the "
            f"labels are {', '.join(map(repr, distinct[:6]))}. Rename the column after the class "
            "whose probability it holds, or store labels as 0/1."
        )
    if positive is not None and positive in distinct and len(distinct) == 2:
        other = distinct[0] if distinct[1] == positive else distinct[1]
        return [other, positive]
    if len(distinct) == 2:
        notes.append(f"the score column {parts.score_names[0]!r} was read as P(label == "
                     f"{distinct[1]!r}) (the second label in sorted order).")
        return distinct
    if len(distinct) > 2:
        raise CalibrationInputError(
            f"one score column ({parts.score_names[0]!r}) means a binary problem, but the labels "
            f"have {len(distinct)} values ({', '.join(map(repr, distinct[:6]))}). Add one column "
            "per class (p_<label>)."
        )
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
    split_column: str | None = "split",
    name: str | None = None,
    max_bytes: int | None = 500_000_000,
    file_format: str | None = None,
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
        ``"auto"`` reads the values as logits when the class columns are
        named ``logit_*``/``logits_*`` or a value lies outside [0, 1] while
        the rows do not sum to 1.
    renormalize : bool
        Divide each row by its sum (with a warning) instead of refusing
        probability rows that do not sum to 1.
    split_column : str or None
        Name of the optional column with per-row split names; None ignores it.
    name : str, optional
        Model name; an extension in it (``"resnet.csv"``) also serves as the
        format hint. Default: the file name without extension.
    max_bytes : int or None
        Refuse files larger than this (also after unpacking gzip/NPZ).
    file_format : {"csv", "tsv", "parquet", "npz", "npy"}, optional
        Force a reader.

    Returns
    -------
    Predictions

    Raises
    ------
    CalibrationInputError
        Empty file or no rows, no label column, labels outside the classes,
        NaN/inf values, negative probabilities, rows not summing to 1
        (beyond ``ROW_SUM_TOLERANCE``), fewer than 2 classes, non-numeric
        class columns, duplicate column names, a file over ``max_bytes``,
        an unknown format, pickled NPY/NPZ data, an unreadable file. The
        message names the column and the row (1-based, with its file line
        for CSV).

    Notes
    -----
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
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
                                  or max_bytes <= 0):
        raise CalibrationInputError(f"`max_bytes` must be a positive whole number or None, got {max_bytes!r}.")
    raw = _resolve_source(source, name, max_bytes)
    if raw.size() == 0:
        raise CalibrationInputError(
            f"{raw.display} is empty (0 bytes). Provide a table with a header row, e.g. "
            "'label,p_0,p_1', and one row per prediction."
        )
    raw = _maybe_gunzip(raw, max_bytes)
    fmt = _detect_format(raw, file_format, raw.head(16))
    notes: list[str] = []
    options = dict(display=raw.display, label_column=label_column, class_columns=class_columns,
                   score_column=score_column, split_column=split_column, notes=notes)
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
    probs, logits = _interpret_scores(parts, input_kind, renormalize, notes)
    n_classes = probs.shape[1]
    class_names = parts.class_names
    if parts.scores.shape[1] == 1:
        class_names = _binary_class_names(parts, notes)
    elif class_names is not None and len(class_names) != n_classes:
        raise CalibrationInputError(
            f"{raw.display} gives {len(class_names)} class names but its scores have {n_classes} "
            "columns; store one name per class."
        )
    if class_names is not None and len(set(class_names)) != len(class_names):
        dup = next(c for c in class_names if class_names.count(c) > 1)
        raise CalibrationInputError(
            f"two class columns give the same class name {dup!r} ({', '.join(parts.score_names)}); "
            "rename them so each class has one column."
        )
    labels, class_names = _labels_to_indices(parts, n_classes, class_names, notes)
    extra_logits = parts.extra_logits
    if extra_logits is not None and logits is None:
        if extra_logits.shape == probs.shape and np.isfinite(extra_logits).all() and np.allclose(
                softmax(extra_logits), probs, rtol=0.0, atol=1e-6):
            logits = extra_logits
        else:
            notes.append("the archive's logits are not the logits of its probabilities "
                         "(softmax differs by more than 1e-6); they were ignored.")
    return Predictions._from_checked(
        probs=probs, labels=labels, class_names=tuple(class_names), logits=logits,
        split=parts.split, name=_model_name(raw.hint, name), source_format=fmt,
        warnings=tuple(notes))


# ---------------------------------------------------------------------------
# Demo data
# ---------------------------------------------------------------------------

def _demo_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "demo"


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
    return load_predictions(available[name], name=name)
