"""Predictions without labels: a deployment's file, read against the labelled model's classes.

The deployment's class prevalence is estimated from the model's predictions on
unlabelled rows (:func:`calib_core.estimate_prevalence`); the command line's
``report --deployment FILE`` and the Deployment page read such a file here.
"""
from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calib_core.io.columns import LABEL_NAMES
from calib_core.io.formats import MAX_BYTES, MAX_ROWS, sniff_csv
from calib_core.validation import CalibrationInputError, as_probs, check_probs, softmax

__all__ = ["DEPLOYMENT_LOGIT_PREFIXES", "DEPLOYMENT_PREFIXES", "DEPLOYMENT_SCORE_NAMES", "UnlabelledPredictions", "load_unlabelled",
           "read_table", "weight_candidates"]

#: Column-name prefixes recognised for a class's probability (case-insensitive; "" is the bare class name).
DEPLOYMENT_PREFIXES = ("p_", "prob_", "proba_", "probability_", "score_", "")
#: Column-name prefixes of a class's logit (the rows go through the softmax).
DEPLOYMENT_LOGIT_PREFIXES = ("logit_", "logits_")
#: Names of a single P(class 1) column of a binary model.
DEPLOYMENT_SCORE_NAMES = ("score", "p", "prob", "proba", "probability", "p_1", "y_score", "y_prob")


@dataclass(frozen=True)
class UnlabelledPredictions:
    """The probabilities of an unlabelled file (:func:`load_unlabelled`).

    Attributes
    ----------
    probs : ndarray of shape (N, K)
        In the labelled model's class order.
    columns : tuple of str
        The column read for each class (one column for a binary score).
    ignored_labels : tuple of str
        Label columns present in the file and ignored: the rows are treated as unlabelled.
    name : str
        The file's name.
    """

    probs: NDArray[np.float64]
    columns: tuple[str, ...]
    ignored_labels: tuple[str, ...]
    name: str

    @property
    def n_samples(self) -> int:
        return int(self.probs.shape[0])

    @property
    def notes(self) -> tuple[str, ...]:
        """Plain sentences on what was read (a label column ignored)."""
        if not self.ignored_labels:
            return ()
        shown = ", ".join(repr(c) for c in self.ignored_labels)
        return (f"the deployment file's label column {shown} is ignored: its rows are treated as unlabelled "
                "(evaluate a labelled file directly for its calibration).",)


def read_table(raw: bytes, file_name: str, what: str = "the deployment file") -> pd.DataFrame:
    """A CSV/TSV (optionally gzipped) or Parquet file's bytes as a data frame (the loader's CSV sniffer; at most
    :data:`~calib_core.io.formats.MAX_ROWS` + 1 rows); a CalibrationInputError naming ``what`` otherwise."""
    lower = file_name.lower()
    try:
        if lower.endswith((".parquet", ".pq")):
            return pd.read_parquet(io.BytesIO(raw))
        # read at most one byte past the limit: a gzip bomb is refused without being unpacked
        data = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_BYTES + 1) if lower.endswith(".gz") else raw
        if len(data) > MAX_BYTES:
            raise CalibrationInputError(f"{what} holds more than {MAX_BYTES:,} bytes unpacked.")
        dialect = sniff_csv(data[:65536].decode("utf-8", errors="replace"), file_name)  # the loader's sniffer
        return pd.read_csv(io.BytesIO(data), sep=dialect.delimiter, decimal=dialect.decimal, nrows=MAX_ROWS + 1)
    except CalibrationInputError:
        raise
    except Exception as exc:  # noqa: BLE001 -- the boundary where the deployment file enters
        raise CalibrationInputError(f"{what} could not be read as CSV or Parquet ({type(exc).__name__}).") from None


def load_unlabelled(source: bytes | str | os.PathLike[str], class_names: Any, *,
                    name: str | None = None) -> UnlabelledPredictions:
    """The ``(N, K)`` probabilities of an unlabelled file, matched to a labelled model's classes.

    Parameters
    ----------
    source : bytes or path
        A CSV/TSV (optionally gzipped) or Parquet file with one column per
        class, named as the labelled file's (``p_<class>``, ``prob_<class>``,
        ``proba_<class>``, ``probability_<class>``, ``score_<class>`` or the
        class name; case-insensitive), or, for a binary model, one column of
        P(class 1) (``score``, ``p``, ``prob``, ...). Logit columns
        ``logit_<class>`` (every class) go through the softmax, as the
        labelled file's logits do.
    class_names : sequence of str
        The labelled model's classes, in its order.
    name : str, optional
        The file's name (its extension picks the reader; default: the path's).

    Returns
    -------
    UnlabelledPredictions

    Raises
    ------
    CalibrationInputError
        A file over the size or row limits, unreadable, without a column for
        every class, or with values that are not probabilities.

    Notes
    -----
    A label column (:data:`calib_core.io.columns.LABEL_NAMES`) is allowed and
    ignored (:attr:`UnlabelledPredictions.notes` says so): the estimate of the
    deployment's prevalence is the estimate from unlabelled rows.
    """
    if isinstance(source, (bytes, bytearray)):
        raw, file_name = bytes(source), name or "deployment.csv"
    else:
        if os.path.getsize(source) > MAX_BYTES:
            raise CalibrationInputError(f"the deployment file {os.fspath(source)} has more than {MAX_BYTES:,} bytes.")
        with open(source, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
        file_name = name or os.path.basename(os.fspath(source))
    if len(raw) > MAX_BYTES:
        raise CalibrationInputError(f"the deployment file has {len(raw):,} bytes; the limit is {MAX_BYTES:,}.")
    frame = read_table(raw, file_name)
    if len(frame) > MAX_ROWS:
        raise CalibrationInputError(f"the deployment file has more than {MAX_ROWS:,} rows.")
    names = [str(c) for c in class_names]
    columns = {str(c).strip().lower(): c for c in frame.columns}
    ignored = tuple(str(columns[n]) for n in LABEL_NAMES if n in columns and n not in
                    {f"{p}{c}".lower() for p in DEPLOYMENT_PREFIXES for c in names})
    for prefixes, is_logit in ((DEPLOYMENT_PREFIXES, False), (DEPLOYMENT_LOGIT_PREFIXES, True)):
        found = [next((columns[f"{p}{c}".lower()] for p in prefixes if f"{p}{c}".lower() in columns), None)
                 for c in names]
        if all(c is not None for c in found):
            values = frame[found].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
            if is_logit:
                if not np.isfinite(values).all():
                    row = int(np.argwhere(~np.isfinite(values))[0][0])
                    raise CalibrationInputError(f"the deployment file's logit columns hold a missing or infinite "
                                                f"value in row {row + 1}.")
                values = softmax(values)
            probs = check_probs(values, name="the deployment file's class columns")
            return UnlabelledPredictions(probs, tuple(map(str, found)), ignored, file_name)
    if len(names) == 2:
        score = next((columns[s] for s in DEPLOYMENT_SCORE_NAMES if s in columns), None)
        if score is not None:
            values = pd.to_numeric(frame[score], errors="coerce").to_numpy(dtype=np.float64)
            return UnlabelledPredictions(as_probs(values), (str(score),), ignored, file_name)
    wanted = ", ".join(f"p_{c}" for c in names[:6])
    raise CalibrationInputError(
        f"the deployment file needs one column per class named as in the labelled file (e.g. {wanted}), or for a "
        "binary model one column `score` of P(class 1).")


def weight_candidates(raw: bytes, file_name: str, class_names: Any, taken: Any = ()) -> list[str]:
    """The columns of a CSV/Parquet file that can be its row weights (``load_predictions(weight_column=)``).

    A candidate holds numbers only, every one finite and ``>= 0``, with a
    positive sum (what :func:`calib_core.validation.check_sample_weight`
    accepts), and is not a label column (:data:`~calib_core.io.columns.LABEL_NAMES`),
    a class column (a class name, alone or after a prefix of
    :data:`~calib_core.io.columns.CLASS_PREFIXES`), true/false, or one of ``taken``
    (the split, the group). Unreadable files and other formats give ``[]``.
    """
    from calib_core.io.columns import CLASS_PREFIXES

    if not file_name.lower().endswith((".csv", ".tsv", ".txt", ".gz", ".parquet", ".pq")):
        return []
    try:
        frame = read_table(raw, file_name, "the file")
    except CalibrationInputError:
        return []
    classes = {str(c).lower() for c in class_names}
    excluded = {str(t).lower() for t in taken if t} | set(LABEL_NAMES) | classes | {"split"}
    excluded |= {f"{p}{c}" for p in (*CLASS_PREFIXES, *DEPLOYMENT_PREFIXES) for c in classes}
    found = []
    for column in frame.columns:
        values = frame[column]
        if str(column).strip().lower() in excluded or pd.api.types.is_bool_dtype(values) \
                or not pd.api.types.is_numeric_dtype(values):
            continue
        numbers = values.to_numpy(dtype=np.float64)
        if np.isfinite(numbers).all() and (numbers >= 0).all() and numbers.sum() > 0:
            found.append(str(column))
    return found
