"""Several systems answering the same items: confidence models whose rows are matched by item id.

One file per system, or one long file with a system column (``model``, ``system``, ...), loaded by
:func:`load_confidence_models`; :func:`match_by_id` keeps the items every system answered, in one order, so
paired comparisons (which system is better calibrated, beyond noise) compare the same items.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from calib_core.io.confidence import ID_NAMES, SeveralModelsError
from calib_core.io.formats import Source
from calib_core.io.loading import load_predictions
from calib_core.io.predictions import Predictions
from calib_core.validation import CalibrationInputError

__all__ = ["load_confidence_models", "match_by_id"]


def load_confidence_models(sources: Source | Sequence[Source], *, names: Sequence[str] | None = None,
                           **load_options: Any) -> list[Predictions]:
    """Several systems answering the same items, as confidence models whose rows are matched by id.

    Parameters
    ----------
    sources : path, bytes, file object, or a sequence of them
        One file per system, or one long file with a system column
        (``model``, ``system``, ...: :data:`calib_core.io.confidence.MODEL_NAMES`),
        or a mix.
    names : sequence of str, optional
        One name per source (the file names by default; a long file's
        systems are named by their column's values).
    **load_options
        Passed to :func:`load_predictions` (``kind`` is always ``"confidence"``).

    Returns
    -------
    list of Predictions
        Confidence models with the same items in the same order: sorted by
        the first model's order of its ids. Items that some system did not
        answer are left out, and a note on each model says how many.

    Raises
    ------
    CalibrationInputError
        A file without an id column while the systems must be matched (more
        than one model whose rows differ in number), a repeated id within a
        system, no item common to all systems, two systems with one name.

    Examples
    --------
    >>> a = b"question_id,confidence,correct\\nq1,0.9,1\\nq2,0.6,0\\n"
    >>> b = b"question_id,confidence,correct\\nq2,0.8,1\\nq1,0.7,1\\n"
    >>> models = load_confidence_models([a, b], names=["a.csv", "b.csv"])
    >>> [m.ids.tolist() for m in models], models[1].confidence.tolist()
    ([['q1', 'q2'], ['q1', 'q2']], [0.7, 0.8])
    """
    load_options.pop("kind", None)
    many = isinstance(sources, (list, tuple))
    items = list(sources) if many else [sources]
    if names is not None and len(names) != len(items):
        raise CalibrationInputError(f"`names` gives {len(names)} names for {len(items)} sources.")
    models: list[Predictions] = []
    for k, source in enumerate(items):
        options = dict(load_options, name=names[k]) if names is not None else load_options
        try:
            models.append(load_predictions(source, kind="confidence", **options))
        except SeveralModelsError as several:
            models.extend(several.models)
    return match_by_id(models)


def match_by_id(models: Sequence[Predictions], *, names: Sequence[str] | None = None) -> list[Predictions]:
    """Confidence models of several systems with their rows matched by :attr:`Predictions.ids`.

    The items every system answered, in the first model's order; a note on each model says how many of its
    items were left out. Without ids, models with the same number of rows are matched by position.
    ``names`` (one per model) name the systems in the messages instead of :attr:`Predictions.name` (the app's
    model names). See :func:`load_confidence_models` for the errors.
    """
    models = list(models)
    if names is not None and len(names) != len(models):
        raise CalibrationInputError(f"`names` gives {len(names)} names for {len(models)} models.")
    seen = [str(n) for n in names] if names is not None else [m.name for m in models]
    if len(set(seen)) != len(seen):
        dup = next(n for n in seen if seen.count(n) > 1)
        raise CalibrationInputError(f"two systems are named {dup!r}; give each source its own name (`names=`).")
    if len(models) == 1:
        return models
    if any(m.ids is None for m in models):
        if len({m.n_samples for m in models}) == 1:
            return models  # no ids: rows are matched by position, as the files give them
        raise CalibrationInputError(
            "the systems answered different numbers of items and at least one file has no id column "
            f"({', '.join(ID_NAMES[:3])}, ...), so their rows cannot be matched.")
    for m, name in zip(models, seen):
        if len(np.unique(m.ids)) != m.n_samples:
            values, counts = np.unique(m.ids, return_counts=True)
            raise CalibrationInputError(
                f"item id {str(values[counts > 1][0])!r} appears more than once for system {name!r}; "
                "each system answers each item once.")
    common = models[0].ids
    for m in models[1:]:
        common = common[np.isin(common, m.ids)]
    if common.size == 0:
        raise CalibrationInputError("the systems have no item id in common, so their rows cannot be matched.")
    matched = []
    for m, name in zip(models, seen):
        order = pd.Index(m.ids).get_indexer(common)
        left_out = m.n_samples - common.size
        subset = m.subset(order)
        if left_out:
            note = (f"{left_out:,} of {m.n_samples:,} items of {name!r} were left out: not every system "
                    "answered them (rows matched by id).")
            object.__setattr__(subset, "warnings", subset.warnings + (note,))
        matched.append(subset)
    return matched
