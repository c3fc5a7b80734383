"""The checks of settings (bin counts, choices, numbers), the named random streams and the sample-weight checks.

See :mod:`calib_core.validation`; every failure raises
:class:`~calib_core.validation.CalibrationInputError`.
"""
from __future__ import annotations

import numbers
import zlib
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core.validation.arrays import MAX_N_BINS, CalibrationInputError, _first_bad_row, check_probs_labels

__all__ = ["MAX_REPEATED_VALUES", "check_binning", "check_choice", "check_count", "check_flag", "check_fraction",
           "check_n_bins", "check_positive", "check_real", "check_right", "check_sample_weight", "check_sizes",
           "integer_weights", "named_rng", "repeat_rows", "repeated_probs_labels"]


def check_n_bins(n_bins: object, *, name: str = "n_bins", maximum: int | None = MAX_N_BINS) -> int:
    """Check a bin count: a whole number in ``1..maximum``.

    Parameters
    ----------
    n_bins : object
        A Python or numpy integer (``bool`` and floats such as ``15.0`` are refused).
    name : str
        Argument name used in error messages.
    maximum : int or None, default MAX_N_BINS
        Largest accepted value; ``None`` for no upper bound (for counts that are
        not bin counts).

    Returns
    -------
    int

    Raises
    ------
    CalibrationInputError
        Not a whole number, below 1, or above ``maximum`` (:data:`MAX_N_BINS`,
        10,000, for bin counts). The check costs O(1), so absurd values such
        as ``10**9`` or ``2**63`` fail before anything is allocated.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral):
        raise CalibrationInputError(f"`{name}` must be a whole number >= 1, got {n_bins!r}.")
    if n_bins < 1:
        raise CalibrationInputError(f"`{name}` must be >= 1, got {n_bins}.")
    if maximum is not None and n_bins > maximum:
        raise CalibrationInputError(
            f"`{name}` must be at most {maximum:,}, got {n_bins}: per-bin sums take memory in "
            "proportion to the bin count, and no binned estimate needs more bins "
            "(calib_core.optimal_n_bins(N), the count suited to N rows, stays below 10,000 "
            "up to about 8.7e10 rows)."
        )
    return int(n_bins)


def check_binning(binning: object) -> str:
    """Check a binning scheme name: ``"uniform"`` or ``"adaptive"``."""
    if binning not in ("uniform", "adaptive"):
        raise CalibrationInputError(
            f"`binning` must be 'uniform' or 'adaptive', got {binning!r}."
        )
    return str(binning)


def check_right(right: object) -> bool:
    """``right`` (which end of a uniform bin is closed) as a bool; anything but True/False is refused."""
    return check_flag(right, "right")


def check_count(value: object, name: str, minimum: int = 1) -> int:
    """Check a whole number ``>= minimum`` (a count, a size, a seed); ``bool`` and floats are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise CalibrationInputError(f"`{name}` must be a whole number >= {minimum}, got {value!r}.")
    return int(value)


def check_sizes(values: Iterable[object], name: str = "sizes", minimum: int = 2) -> tuple[int, ...]:
    """Check a non-empty collection of whole numbers ``>= minimum`` (test-set sizes, bin counts).

    Returns the distinct values, ascending.
    """
    try:
        items = list(values)
    except TypeError as exc:
        raise CalibrationInputError(f"`{name}` must be a sequence of whole numbers, got {values!r}.") from exc
    if not items:
        raise CalibrationInputError(f"`{name}` is empty; give at least one value.")
    for value in items:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
            raise CalibrationInputError(f"`{name}` must hold whole numbers >= {minimum}, got {value!r}.")
    return tuple(sorted({int(v) for v in items}))


def check_flag(value: object, name: str) -> bool:
    """Check a True/False option (numpy booleans too); anything else, 0 and 1 included, is refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise CalibrationInputError(f"`{name}` must be True or False, got {value!r}.")
    return bool(value)


def check_fraction(value: object, name: str) -> float:
    """Check a real number strictly between 0 and 1 (a level ``alpha``, a share of rows)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value < 1.0:
        raise CalibrationInputError(f"`{name}` must lie strictly between 0 and 1, got {value!r}.")
    return float(value)


def check_real(value: object, name: str) -> float:
    """Check a finite real number (``bool`` is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise CalibrationInputError(f"`{name}` must be a finite number, got {value!r}.")
    return float(value)


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """Check that a string option is one of ``choices``."""
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise CalibrationInputError(f"`{name}` must be one of {options}; got {value!r}.")
    return str(value)


def check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    """Check a finite positive (or non-negative) real number."""
    check_real(value, name)
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise CalibrationInputError(f"`{name}` must be {bound}, got {value!r}.")
    return float(value)


def named_rng(seed: int | np.random.Generator | None, name: str) -> np.random.Generator:
    """The random stream called ``name`` of ``seed``: independent of every other name's stream.

    Parameters
    ----------
    seed : int, numpy.random.Generator or None
        An integer seed (the one seed a page, the CLI or a report names), a
        generator (returned as it is: its owner chose the stream) or None
        (fresh entropy).
    name : str
        A stable name of the random quantity, e.g. ``"calibration_test/skce/labels"``.

    Returns
    -------
    numpy.random.Generator
        For an integer seed, ``default_rng(SeedSequence(seed, spawn_key=(crc32(name),)))``:
        the same numbers for the same (seed, name) on every surface and
        platform, and adding a new named quantity does not shift another's numbers
        (as drawing it from one shared generator would).

    Examples
    --------
    >>> a = named_rng(0, "calibration_test/skce/labels").random()
    >>> a == named_rng(0, "calibration_test/skce/labels").random() != named_rng(0, "calibration_test/consistency").random()
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise CalibrationInputError(f"`seed` must be a non-negative integer, a numpy Generator or None, got {seed!r}.")
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(name.encode()),)))


# ----------------------------------------------------------------------------- sample weights

#: :func:`repeat_rows` builds at most this many values, rows x columns (400 MB of float64; ``docs/weights.md``).
MAX_REPEATED_VALUES = 50_000_000


def check_sample_weight(sample_weight: ArrayLike | None, n_rows: int, *,
                        name: str = "sample_weight") -> NDArray[np.float64] | None:
    """Check row weights: None, or shape ``(n_rows,)``, finite, ``>= 0``, positive sum; float64 out.

    Weights are frequencies: integer ones repeat rows, 0 drops a row (``docs/weights.md``).

    >>> check_sample_weight([1, 2, 0], 3).tolist()
    [1.0, 2.0, 0.0]
    """
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"`{name}` must be an array of numbers, got {sample_weight!r:.80}.") from exc
    if weights.shape != (n_rows,):
        raise CalibrationInputError(f"`{name}` must have shape ({n_rows},), one weight per row, got {weights.shape}.")
    for bad, rule in ((~np.isfinite(weights), "finite"), (weights < 0, ">= 0")):
        if bad.any():
            row = _first_bad_row(bad)
            raise CalibrationInputError(f"`{name}` must be {rule}; row {row} is {weights[row]}.")
    if not weights.sum() > 0:
        raise CalibrationInputError(f"`{name}` sums to 0 (every weight is zero): a row needs a positive weight.")
    return weights


def integer_weights(weights: NDArray[np.float64]) -> bool:
    """Whether every (checked) weight is a whole number, i.e. a count of repeated rows."""
    return bool(np.all(weights == np.round(weights)))


def repeat_rows(weights: NDArray[np.float64], *arrays: NDArray, metric: str) -> tuple[NDArray, ...]:
    """``arrays`` with row i repeated ``weights[i]`` times (a metric without a weighted formula is defined on
    them); non-integer weights and more than :data:`MAX_REPEATED_VALUES` values raise CalibrationInputError."""
    if not integer_weights(weights):
        raise CalibrationInputError(
            f"`sample_weight` of {metric} must be whole numbers (how many times each row counts): {metric} has "
            f"no weighted formula, so weights are applied by repeating rows; got "
            f"{float(weights[weights != np.round(weights)][0])!r}.")
    if float(weights.sum()) * max(array[:1].size for array in arrays) > MAX_REPEATED_VALUES:
        raise CalibrationInputError(f"`sample_weight` of {metric} sums to {float(weights.sum()):,.0f}: {metric} "
                                    f"repeats rows, at most {MAX_REPEATED_VALUES:,} values (rows x columns).")
    return tuple(np.repeat(array, weights.astype(np.intp), axis=0) for array in arrays)


def repeated_probs_labels(probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None, *,
                          metric: str) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """:func:`check_probs_labels`, then with weights the rows repeated (:func:`repeat_rows`)."""
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    return (probs, labels) if weights is None else repeat_rows(weights, probs, labels, metric=metric)
