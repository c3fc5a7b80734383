"""Validation once: the weak registry of checked, frozen arrays and the last-value memo built on it.

:class:`~calib_core.io.Predictions` freezes the arrays it owns and marks
them (:func:`mark_validated`); the checks of :mod:`calib_core.validation`
return a marked array at once (:func:`is_validated`), and functions wrapped
in :func:`remembered` keep their last value for marked arrays. Both trust
one rule: data frozen by calib_core stay frozen.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["KeptValues", "freeze_and_mark", "is_validated", "mark_validated", "marked_copy", "remembered"]

#: Arrays known to be valid (see :func:`mark_validated`): ``(id(array), n_classes)`` -> array,
#: with ``n_classes`` None for a probability matrix. Entries vanish with their arrays.
_VALIDATED: "weakref.WeakValueDictionary[tuple[int, int | None], np.ndarray]" = weakref.WeakValueDictionary()

def mark_validated(array: NDArray[Any], n_classes: int | None = None) -> NDArray[Any]:
    """A read-only view of a checked array, remembered as valid when its data cannot change.

    Later :func:`check_probs`, :func:`check_labels` and
    :func:`check_probs_labels` calls given *this same view* return it without
    scanning it again (:func:`is_validated`). :class:`~calib_core.io.Predictions`
    marks its arrays, so metrics of a loaded file skip the validation pass.

    Parameters
    ----------
    array : ndarray
        The output of :func:`check_probs` (``n_classes`` None) or of
        :func:`check_labels` (``n_classes`` the class count it was checked for).
        The caller must own the data and have frozen it: the view is
        remembered only if the array and every array it is a view of are
        read-only, and the data belong to numpy (or to an immutable ``bytes``).
        Otherwise the view is returned unmarked and is checked as usual.
    n_classes : int, optional

    Returns
    -------
    ndarray
        A read-only view of ``array``.

    Notes
    -----
    The mark is the view's identity (``id``, in a weak dictionary that
    forgets the view when it is freed) and the read-only flags of its base
    chain, tested at every lookup. A copy of the view, or a new view of its
    data, is a new object and is checked in full; so is the view once anyone
    makes its data writeable again.
    """
    view = array.view()
    view.flags.writeable = False
    if _sealed(view):
        _VALIDATED[(id(view), n_classes)] = view
    return view


def marked_copy(array: NDArray[Any], n_classes: int | None = None, dtype: Any = None) -> NDArray[Any]:
    """A frozen, C-ordered copy of a checked array, marked by :func:`mark_validated` (``dtype`` optional).

    For rows taken out of checked arrays (an evaluation split): every check
    given the copy later skips its scan.
    """
    copy = np.array(array, dtype=dtype, order="C")
    copy.flags.writeable = False
    return mark_validated(copy, n_classes)


def freeze_and_mark(array: NDArray[Any], owned: bool, n_classes: int | None = None) -> NDArray[Any]:
    """A read-only view of a checked array, frozen for good when ``owned`` and then marked (:func:`mark_validated`).

    ``owned``: the data belong to the caller's object (a copy made by a
    check, a subset, a loaded file, an array unpickled from Streamlit's
    cache), so the array and every array it views are made read-only for
    good. An array someone else may still write to is not frozen, and so not
    marked (unless it was read-only already): it is checked again by every
    call that receives it. :class:`~calib_core.io.Predictions` seals its
    probabilities and labels with it when it is made and when it is unpickled
    (``st.cache_data`` hands out unpickled copies, whose flags pickling lost).
    """
    if owned:
        current: object = array
        while isinstance(current, np.ndarray):
            current.flags.writeable = False
            current = current.base
        if current is not None and not isinstance(current, bytes):
            # A view of memory numpy does not own (an Arrow buffer of a Parquet file's labels): it could not be
            # marked, so every call would check it again. A copy of our own can.
            array = array.copy()
            array.flags.writeable = False
    return mark_validated(array, n_classes)


def is_validated(array: object, n_classes: int | None = None) -> bool:
    """Whether ``array`` is a view marked by :func:`mark_validated` whose data are still read-only."""
    return (isinstance(array, np.ndarray) and _VALIDATED.get((id(array), n_classes)) is array
            and _sealed(array))


class KeptValues:
    """The last few values computed from some objects (arrays, partitions), found again by the objects' identity.

    The one memo of calib_core's derived quantities (a sampler's cumulative
    sums, a partition, a loess fit, label draws): newest first, at most
    ``capacity`` entries. The objects are held **weakly**: an entry goes as
    soon as one of its objects is freed, so a memo never keeps a visitor's
    model alive after its session ends (module-level last-value memos that
    held their arrays did: up to one matrix per memo, and the one-hot
    matrix of a two-class resampling, per server process). A kept value must
    therefore not refer to its key objects itself, or they would never be
    freed.

    The caller decides what may be kept: identity finds the same object, not
    the same data, so only values of objects that cannot change (arrays marked
    by :func:`mark_validated`) or values used within one computation (the
    blocks of one resampling) belong here.

    Parameters
    ----------
    capacity : int
        Most entries kept.
    """

    def __init__(self, capacity: int = 1):
        self.capacity = capacity
        self._entries: list[tuple[tuple[weakref.ref, ...], Any, Any]] = []

    def get(self, objects: tuple, settings: Any = (), default: Any = None) -> Any:
        """The value kept for these very ``objects`` (by identity) and equal ``settings``, else ``default``."""
        for references, kept_settings, value in self._entries:
            if (len(references) == len(objects) and all(ref() is obj for ref, obj in zip(references, objects))
                    and kept_settings == settings):
                return value
        return default

    def put(self, objects: tuple, settings: Any, value: Any) -> Any:
        """Keep ``value`` for ``objects`` and ``settings`` (dropping the oldest entry beyond ``capacity``)."""
        references = tuple(weakref.ref(obj, self._forget_freed) for obj in objects)
        # One assignment of a new list: a reader in another thread sees the old list or the new one.
        self._entries = [(references, settings, value), *self._live()[: self.capacity - 1]]
        return value

    def objects(self) -> list[tuple]:
        """The key objects of the live entries, newest first."""
        return [tuple(ref() for ref in entry[0]) for entry in self._live()]

    def clear(self) -> None:
        """Forget every entry."""
        self._entries = []

    def __len__(self) -> int:
        return len(self._live())

    def _live(self) -> list:
        return [entry for entry in self._entries if all(ref() is not None for ref in entry[0])]

    def _forget_freed(self, _reference: weakref.ref) -> None:
        self._entries = self._live()


#: The last value of each :func:`remembered` function, by the function's qualified name.
_REMEMBERED: dict[str, KeptValues] = {}


def remembered(function):
    """Keep the last value of ``function(probs, labels, *settings)`` for marked (validated, read-only) arrays.

    A page shows one model's metrics, intervals and tests in turn, and several
    of them need the same derived quantity (the top label at 50,000 x 1,000:
    45 ms, about 20 times; the SKCE bandwidth: 0.4 s, 3 times). When both
    arrays are marked by :func:`mark_validated` (so they cannot change), the
    last result is kept (with weak references to the arrays, so that it
    keeps no model alive) and returned for the same two objects and
    settings; any other call computes as usual. Array results are made
    read-only, so no caller can change the kept value. Like the mark itself,
    this trusts that frozen data stay frozen: data made writeable, changed
    and frozen again by hand (never done by calib_core) would get the value
    kept from before.
    """
    name = f"{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def wrapper(probs, labels, *settings):
        if not (is_validated(probs) and is_validated(labels, probs.shape[1])):
            return function(probs, labels, *settings)
        kept = _REMEMBERED.setdefault(name, KeptValues())
        missing = object()
        value = kept.get((probs, labels), settings, missing)
        if value is not missing:
            return value
        value = function(probs, labels, *settings)
        for part in (value if isinstance(value, tuple) else (value,)):
            if isinstance(part, np.ndarray):
                part.flags.writeable = False
        return kept.put((probs, labels), settings, value)

    return wrapper


def _sealed(array: NDArray[Any]) -> bool:
    """The array and every array it views are read-only; the data belong to numpy or to ``bytes``."""
    current: object = array
    while isinstance(current, np.ndarray):
        if current.flags.writeable:
            return False
        current = current.base
    return current is None or isinstance(current, bytes)
