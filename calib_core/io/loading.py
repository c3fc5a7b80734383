"""Reading a file or a table in memory into a :class:`~calib_core.io.predictions.Predictions`: :func:`load_predictions`.

The layouts it accepts and the layers below it are described in
:mod:`calib_core.io.predictions`; confidence files (a stated confidence and
whether the answer was right) in :mod:`calib_core.io.confidence`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from calib_core.io.arrays import _npy_parts, _npz_parts
from calib_core.io.confidence import confidence_models, is_confidence_frame
from calib_core.io.columns import Parts, _shown, table_parts
from calib_core.io.formats import (MAX_BYTES, MAX_CELLS, MAX_ROWS, Decoded, Source, Table, _detect_format,
                                   _maybe_gunzip, _model_name, _Raw, _resolve_source)
from calib_core.io.readers import (FRAME_KINDS, InMemory, _load_numpy, _npz_arrays, _pickle_refused, _read_csv,
                                   _read_parquet, frame_kind, read_frame)
from calib_core.io.interpret import _INPUT_KINDS, binary_class_names, interpret_scores, labels_to_indices
from calib_core.io.predictions import Predictions
from calib_core.validation import CalibrationInputError, check_choice, softmax

__all__ = ["LOAD_KINDS", "load_predictions"]

#: The values of ``load_predictions(kind=...)``.
LOAD_KINDS = ("auto", "classes", "confidence")


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
    max_bytes: int | None = MAX_BYTES,
    file_format: str | None = None,
    group: str | None = None,
    max_rows: int | None = MAX_ROWS,
    max_cells: int | None = MAX_CELLS,
    kind: str = "auto",
    weight_column: str | None = None,
) -> Predictions:
    """Read a file of predictions into validated :class:`Predictions`.

    Parameters
    ----------
    source : path, bytes, binary file object, or a table in memory
        A CSV/TSV (comma, tab or semicolon, optionally gzipped), Parquet,
        NPZ or NPY file. For bytes and file objects, ``file_format`` or the
        extension of ``name`` (or of the object's ``.name``) picks the
        reader; without either the content is sniffed. A pandas DataFrame,
        a pyarrow Table (or RecordBatch) or a polars DataFrame (polars is
        optional, never imported unless given) is read by the same column
        rules, with the same refusals, as a CSV file of it: categorical,
        nullable and Arrow string columns count by their values, text cells
        are read as a CSV's are (blank and ``NA`` cells are missing unless a
        class is named so), the pandas index is not a column (a non-default
        one names rows in messages), and ``source_format`` is ``"pandas"``,
        ``"arrow"`` or ``"polars"``. ``max_bytes`` and ``file_format`` are
        for files; ``max_rows``/``max_cells`` apply.
    label_column : str, optional
        Column with the true classes. Default: the first column named
        label, labels, y_true, true_label, target, y, class, truth, ...
        (case-insensitive). For a plain NPY array, a column number.
    class_columns : sequence of str, optional
        Columns with one probability (or logit) per class, in class order.
        Default, by names first: the columns sharing a prefix such as
        ``p_``, ``prob_``, ``proba_``, ``probs_``, ``score_``, ``logit_``,
        ``class_`` (or ``prob0, prob1, ...``); else, when the labels are
        names, the columns they name (``Dole`` or ``p_Dole``), with unnamed
        probability columns only if the rows need them to sum to 1; else
        the numeric columns except integer attributes beside probability
        columns (``educ`` 1..7); else a lone ``confidence`` column as a
        binary score. Never known non-class columns (split, fold, weight,
        ...) nor identifiers (``id``, ``*_id``, ``index``, ``row``, ... or
        distinct consecutive integers). Numeric columns left over are named
        in :attr:`Predictions.warnings`. For NPZ: the array's name.
    score_column : str, optional
        One column holding the probability (or logit) of a binary problem's
        class 1, or of class 0 when it is named so (``p_0``).
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
    max_rows, max_cells : int or None
        Refuse files that decode to more rows, or more rows x columns, than
        this (defaults :data:`~calib_core.io.formats.MAX_ROWS`, 5,000,000,
        and :data:`~calib_core.io.formats.MAX_CELLS`, 60,000,000), checked
        before the table is built: from Parquet metadata, NPY/NPZ headers,
        and the line count of a CSV (counted while it is read or unpacked).
        The message offers the streaming engine (``calib-core report FILE
        --engine stream``), whose memory is bounded at any size. None lifts
        a limit. A load's peak memory is measured by
        ``bench/bench_decoded.py``.
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
    kind : {"auto", "classes", "confidence"}, default "auto"
        ``"confidence"`` reads a *confidence file* (``question_id,
        confidence, correct``: a stated confidence and whether the answer was
        right, :mod:`calib_core.io.confidence`) into a confidence model
        (:attr:`Predictions.kind`); ``"auto"`` does so when the column names
        say so (a correctness column such as ``correct``/``is_correct``/
        ``hit``, a confidence column such as ``confidence``/``p_correct``/
        ``score``, and no label column); ``"classes"`` never does. A long
        file of several systems (a ``model`` column with several values)
        raises :class:`SeveralModelsError`, which carries the models
        (:func:`calib_core.io.systems.load_confidence_models` returns them).
    weight_column : str, optional
        Column (CSV or Parquet) holding each row's weight, kept in
        :attr:`Predictions.sample_weight` (finite numbers >= 0 in every row,
        not all 0). Only when asked: a column named ``weight`` is never taken
        as row weights on its own (it may be a feature), nor as a class.

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
    for keyword, limit in (("max_rows", max_rows), ("max_cells", max_cells)):
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit <= 0):
            raise CalibrationInputError(f"`{keyword}` must be a positive whole number or None, got {limit!r}.")
    if class_names is not None:
        if isinstance(class_names, str):
            raise CalibrationInputError("`class_names` must be a sequence of names, not one string.")
        class_names = [str(c).strip() for c in class_names]
        if len(set(class_names)) != len(class_names):
            raise CalibrationInputError("`class_names` must be unique.")
    kind = check_choice(kind, "kind", LOAD_KINDS)
    display = "the file"
    try:
        frame = frame_kind(source)
        if frame is not None and file_format is not None:
            raise CalibrationInputError(
                f"`file_format` chooses a file reader; {FRAME_KINDS[frame]} is read as a table: leave it out."
            )
        raw = InMemory(source, frame) if frame is not None else _resolve_source(source, name, max_bytes)
        display = raw.display
        return _load(raw, label_column=label_column, class_columns=class_columns, score_column=score_column,
                     input_kind=input_kind, renormalize=bool(renormalize), percentages=bool(percentages),
                     class_names=class_names, split_column=split_column, name=name, max_bytes=max_bytes,
                     file_format=file_format, group=group, kind=kind, weight_column=weight_column,
                     limits=Decoded(None if max_rows is None else int(max_rows),
                                    None if max_cells is None else int(max_cells)))
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


def _load(raw: _Raw | InMemory, *, label_column: str | int | None, class_columns: Sequence[str] | None,
          score_column: str | None, input_kind: str, renormalize: bool, percentages: bool,
          class_names: list[str] | None, split_column: str | None, name: str | None,
          max_bytes: int | None, file_format: str | None, group: str | None = None,
          limits: Decoded = Decoded(), kind: str = "auto", weight_column: str | None = None) -> Predictions:
    """The body of :func:`load_predictions` once the arguments are checked."""
    notes: list[str] = []
    options = dict(display=raw.display, label_column=label_column, class_columns=class_columns,
                   score_column=score_column, split_column=split_column, notes=notes, group_column=group)
    if isinstance(raw, InMemory):
        fmt, table, parts = raw.kind, read_frame(raw.source, raw.kind, limits), None
    else:
        fmt, table, parts = _file_table(raw, max_bytes, file_format, limits, notes, options)
    if weight_column is not None and table is None:
        raise CalibrationInputError(
            f"`weight_column` applies to tables (CSV, Parquet, a data frame); for {raw.display} ({fmt}) pass the "
            "weights as an array: Predictions.from_arrays(..., sample_weight=w) or sample_weight= on each function.")
    if table is not None:
        if kind == "confidence" or (kind == "auto" and label_column is None and class_columns is None
                                    and score_column is None and is_confidence_frame(table.frame)):
            if weight_column is not None:
                raise CalibrationInputError(
                    "`weight_column` is not supported for confidence files yet: pass sample_weight= to the "
                    "confidence metrics instead.")
            return confidence_models(table, raw.display, _model_name(raw.hint, name), fmt, name_given=bool(name),
                                     factory=Predictions.from_confidence, split_column=split_column,
                                     group=group, notes=notes)
        parts = table_parts(table, **options, weight_column=weight_column)
    elif kind == "confidence":
        raise CalibrationInputError(
            f"{raw.display} is a {fmt.upper()} file; a confidence file is a table (CSV or Parquet) with a "
            "confidence and a correctness column.")
    probs, logits = interpret_scores(parts, input_kind, renormalize, notes, percentages=percentages)
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
        names = binary_class_names(parts, notes)
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
    labels, names = labels_to_indices(parts, n_classes, names, notes)
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
        groups=parts.groups, group_column=parts.group_name, attribute_columns=tuple(parts.attributes),
        sample_weight=parts.weights, weight_column=parts.weight_name)


def _file_table(raw: _Raw, max_bytes: int | None, file_format: str | None, limits: Decoded,
                notes: list[str], options: dict[str, Any]) -> tuple[str, Table | None, Parts | None]:
    """A file's format and its table (CSV, Parquet) or, for NumPy files, its parts, before interpretation."""
    if raw.size() == 0:
        raise CalibrationInputError(
            f"{raw.display} is empty (0 bytes). Provide a table with a header row, e.g. "
            "'label,p_0,p_1', and one row per prediction."
        )
    raw = _maybe_gunzip(raw, max_bytes, limits)
    fmt = _detect_format(raw, file_format, raw.head(16))
    if fmt == "csv":
        table, read_notes = _read_csv(raw, limits)
        notes.extend(read_notes)
        return fmt, table, None
    if fmt == "parquet":
        return fmt, _read_parquet(raw, limits), None
    else:
        loaded = _load_numpy(raw, max_bytes, limits)
        if isinstance(loaded, np.ndarray):
            fmt = "npy"
            if loaded.dtype.hasobject:
                raise _pickle_refused(raw.display, "dtype object")
            parts = _npy_parts(loaded, **options)
        else:
            fmt = "npz"
            parts = _npz_parts(_npz_arrays(loaded, raw.display), **options)
    return fmt, None, parts
