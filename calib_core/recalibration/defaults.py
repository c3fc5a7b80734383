"""Which recalibration methods the app fits by default at K classes, and why some are left out.

The default set (:data:`DEFAULT_METHODS`) is what the Recalibration page
fits on a first visit. A method declares the largest class count at which
it belongs to it (:attr:`calib_core.recalibration.Recalibrator.max_default_classes`):
matrix scaling and Dirichlet calibration fit a full K x K matrix, ``K^2 + K``
parameters (Kull et al. 2019), and each step of their L-BFGS fit costs
O(N K^2), so at K = 1,000 (an ImageNet-sized file, 10^6 parameters) they
alone take minutes. Above their limit they are left out of the default set
with a sentence saying why (:func:`default_note`); chosen by hand, they get a
warning with the expected time (:func:`slow_note`).

Examples
--------
>>> from calib_core.recalibration import defaults
>>> defaults.default_methods(1000)  # doctest: +NORMALIZE_WHITESPACE
('Temperature scaling', 'Isotonic regression (floored)', 'Histogram binning (floored)',
 'Structured vector scaling')

Vector scaling leaves the default set above its limit too
(:data:`~calib_core.recalibration.scaling.MAX_DEFAULT_CLASSES_VECTOR`), for another reason
(:data:`LIMIT_REASONS`): unpenalised, it has no maximum-likelihood fit when a class is absent from the
fitting rows or seen so rarely that its scores separate it, as happens at K = 1,000 on real data, so its
fit runs to its iteration cap (145 s, 117 s of CPU, at 25,000 x 1,000 on a real next-word set, against the
page's 30 s for all its fits).
Structured vector scaling, its ridge-penalised form, stays.

Methods that can emit exact zeros (:attr:`calib_core.recalibration.Recalibrator.emits_exact_zeros`:
one-vs-rest isotonic regression, histogram binning) leave the default set above
:data:`~calib_core.recalibration.hazards.ZERO_HAZARD_MAX_CLASSES` classes and their floored twins
(:mod:`calib_core.recalibration.hazards`) take their places: with N / K positives per class their maps
give many true classes a probability of exactly 0, each an infinite log loss (CalArena's ImageNet runs:
mean log loss 5.4-6.7 against 0.76 uncalibrated).
"""
from __future__ import annotations

from collections.abc import Sequence

from calib_core.recalibration import RECALIBRATORS
from calib_core.recalibration.hazards import DEFAULT_EPSILON, FLOORED_TWINS, ZERO_HAZARD_MAX_CLASSES

__all__ = ["CAPPED_FIT_SECONDS_PER_ROW_CLASS", "DEFAULT_METHODS", "LIMIT_REASONS", "MULTICLASS_DEFAULTS", "PER_CLASS_FIT_SECONDS", "default_methods", "default_note", "expected_fit_seconds", "slow_note", "zero_note"]

#: The default set of methods (first visit of the page), before the class-count rule of :func:`default_methods`.
#: Structured vector scaling (Berta et al. 2026) is second only to structured matrix scaling on CalArena's
#: multi-class benchmarks and, unlike it, fits at K = 1,000 (issue 27).
DEFAULT_METHODS = ("Temperature scaling", "Vector scaling", "Isotonic regression", "Histogram binning",
                   "Dirichlet calibration", "Structured vector scaling")
#: Methods of the default set for multi-class models only: at K = 2 structured vector scaling is vector
#: scaling with a redundant temperature (``softmax((1 + v) z / T + b)``), and CalArena compares it on
#: multi-class benchmarks only. They can still be chosen by hand.
MULTICLASS_DEFAULTS = ("Structured vector scaling",)


def _limits(methods: Sequence[str]) -> dict[str, int | None]:
    return {m: RECALIBRATORS[m].max_default_classes if m in RECALIBRATORS else None for m in methods}


def default_methods(n_classes: int, methods: Sequence[str] = DEFAULT_METHODS) -> tuple[str, ...]:
    """The methods of ``methods`` in the default set at ``n_classes`` classes.

    A method whose ``max_default_classes``
    (:attr:`calib_core.recalibration.Recalibrator.max_default_classes`) is
    below ``n_classes`` is left out: matrix and Dirichlet scaling carry
    ``K^2 + K`` parameters (10^6 at K = 1,000), so their fit time explodes
    with K. It can still be chosen by hand.

    Examples
    --------
    Above :data:`~calib_core.recalibration.hazards.ZERO_HAZARD_MAX_CLASSES`
    classes a method that can emit exact zeros is replaced by its floored
    twin (:data:`~calib_core.recalibration.hazards.FLOORED_TWINS`), or left
    out when it has none.

    >>> "Dirichlet calibration" in default_methods(10), "Dirichlet calibration" in default_methods(1000)
    (True, False)
    """
    chosen = []
    for method, limit in _limits(methods).items():
        if limit is not None and int(n_classes) > limit or int(n_classes) == 2 and method in MULTICLASS_DEFAULTS:
            continue
        if int(n_classes) > ZERO_HAZARD_MAX_CLASSES and _emits_zeros(method):
            method = FLOORED_TWINS.get(method)
        if method is not None and method not in chosen:
            chosen.append(method)
    return tuple(chosen)


def _emits_zeros(method: str) -> bool:
    return method in RECALIBRATORS and RECALIBRATORS[method].emits_exact_zeros


#: Why a method with a class-count limit leaves the default set, for the methods whose reason is not the full
#: K x K matrix of matrix and Dirichlet scaling (the sentence of :func:`default_note` for all others).
LIMIT_REASONS = {
    "Vector scaling": (
        "unpenalised, it has no maximum-likelihood fit when a class is absent from the fitting rows or seen so "
        "rarely that its scores separate it (common at this many classes), so its fit runs to its iteration cap "
        "(500 L-BFGS-B steps; 145 s, 117 s of CPU, on 25,000 rows x 1,000 classes of a real next-word set, "
        "against the page's 30 s for all its fits). "
        "**Structured vector scaling**, its ridge-penalised form, stays"),
}


def default_note(n_classes: int, methods: Sequence[str] = DEFAULT_METHODS) -> str | None:
    """Why methods of ``methods`` are left out of the default set at ``n_classes`` (Markdown), else None."""
    over = {m: limit for m, limit in _limits(methods).items() if limit is not None and int(n_classes) > limit}
    left_out = {m: limit for m, limit in over.items() if m not in LIMIT_REASONS}
    notes = [f"**{m}** is left out of the default set above {limit:,} classes: {LIMIT_REASONS[m]}. Choose **{m}** "
             "above to fit it anyway." for m, limit in over.items() if m in LIMIT_REASONS]
    zeros = zero_note(n_classes, methods)
    if left_out:
        names = " and ".join(f"**{m}**" for m in left_out)
        limit = min(left_out.values())
        params = int(n_classes) ** 2 + int(n_classes)
        is_, it = ("is", "it") if len(left_out) == 1 else ("are", "them")
        notes.insert(0, f"{names} {is_} left out of the default set above {limit:,} classes: "
                     f"{'it fits' if len(left_out) == 1 else 'they fit'} a full {n_classes:,} x {n_classes:,} "
                     f"matrix ({params:,} parameters here, K² + K), so the fit time grows with the square of the "
                     f"class count. Choose {it} above to fit {it} anyway.")
    return " ".join([*notes, *([zeros] if zeros else [])]) or None


def zero_note(n_classes: int, methods: Sequence[str] = DEFAULT_METHODS) -> str | None:
    """Why methods that can emit exact zeros are replaced by their floored twins at ``n_classes`` (Markdown), else None."""
    if int(n_classes) <= ZERO_HAZARD_MAX_CLASSES:
        return None
    swapped = [m for m in methods if _emits_zeros(m)]
    if not swapped:
        return None
    names = " and ".join(f"**{m}**" for m in swapped)
    return (f"Above {ZERO_HAZARD_MAX_CLASSES} classes {names} can give a true class a probability of exactly 0 "
            "(an infinite log loss, counted at 27.6 nats by the clipped NLL), so the default set fits their "
            f"floored twins instead (mixed with the model's own probabilities: q' = {1 - DEFAULT_EPSILON:g} q + "
            f"{DEFAULT_EPSILON:g} p).")


#: Fit seconds of a method with a class-count limit (matrix and Dirichlet scaling, O(N K^2) per
#: iteration) per fitting row and squared class count: the basis of :func:`expected_fit_seconds`.
#: Dirichlet calibration on 10,000 fitting rows x 1,000 classes took 422 s on a 2-core machine under a
#: load of 6 (bench/bench_recalibration.py --page 20000x1000), about 170 s unloaded (issue 15: 195 s
#: for the whole default set then).
FULL_FIT_SECONDS_PER_ROW_CLASS2 = 2.0e-8


#: Fit seconds per fitting row and class of the methods of :data:`LIMIT_REASONS` above their limit, where they
#: run to their iteration cap (O(N K) per iteration). Vector scaling: 117 s CPU (145 s wall under a load of 4;
#: 437 s under a load of 10 before its unseen classes were set aside) on 25,000 x 1,000 of the real next-word set,
#: 500 iterations (bench/bench_recalibration.py --data next-word --page 50000x1000 --methods "Vector scaling").
CAPPED_FIT_SECONDS_PER_ROW_CLASS = {"Vector scaling": 5e-6}


def expected_fit_seconds(method: str, n_rows: int, n_classes: int) -> float | None:
    """Rough fit time of ``method`` on ``n_rows`` x ``n_classes`` (None for methods without a class-count limit).

    ``FULL_FIT_SECONDS_PER_ROW_CLASS2 * N * K^2``: the L-BFGS fit of a full
    K x K matrix costs O(N K^2) per iteration. For the methods of
    :data:`CAPPED_FIT_SECONDS_PER_ROW_CLASS` (vector scaling), ``rate * N * K``:
    their cap of iterations of O(N K) each.
    """
    if method not in RECALIBRATORS or RECALIBRATORS[method].max_default_classes is None:
        return None
    if method in CAPPED_FIT_SECONDS_PER_ROW_CLASS:
        return CAPPED_FIT_SECONDS_PER_ROW_CLASS[method] * float(n_rows) * float(n_classes)
    return FULL_FIT_SECONDS_PER_ROW_CLASS2 * float(n_rows) * float(n_classes) ** 2


#: Fit seconds per fitting row and class of the one-map-per-class methods whose fit is slow (issue 27),
#: measured on a loaded 2-core machine: spline calibration's 18 penalised L-BFGS fits per class took 0.7-1.2 s
#: at 450 rows (tests/recalibration/test_splines.py); Venn-Abers' tables 95 s at 1,000 rows x 1,000 classes.
PER_CLASS_FIT_SECONDS = {"Spline calibration": 2.5e-3, "Venn-Abers": 1e-4}
#: Chosen methods expected to fit for longer than this get a warning (:func:`slow_note`).
SLOW_FIT_SECONDS = 60.0


def _when(seconds: float) -> str:
    if seconds >= 5400:
        return f"about {seconds / 3600:.0f} h"
    return f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {max(seconds, 1):.0f} s"


def slow_note(methods: Sequence[str], n_rows: int, n_classes: int) -> str | None:
    """A warning for each chosen method above its class-count limit, with its expected fit time (Markdown).

    Also for the one-map-per-class methods of :data:`PER_CLASS_FIT_SECONDS` when their expected fit time
    (``rate * N * K``) is above :data:`SLOW_FIT_SECONDS`.
    """
    slow = [m for m, limit in _limits(methods).items() if limit is not None and int(n_classes) > limit]
    long = {m: PER_CLASS_FIT_SECONDS[m] * float(n_rows) * int(n_classes) for m in methods
            if m in PER_CLASS_FIT_SECONDS}
    long = {m: seconds for m, seconds in long.items() if seconds > SLOW_FIT_SECONDS}
    notes = []
    if slow:
        parts = [f"**{m}** ({_when(expected_fit_seconds(m, n_rows, n_classes))})" for m in slow]
        matrix = any(m not in LIMIT_REASONS for m in slow)
        notes.append(f"Chosen above their class-count limit at {n_classes:,} classes: {', '.join(parts)} to fit on "
                     f"up to {n_rows:,} rows, per model and protocol"
                     + (f"; a K x K matrix has {n_classes ** 2 + n_classes:,} parameters here." if matrix else ".")
                     + (" Vector scaling runs to its iteration cap (no maximum-likelihood fit when classes are "
                        "absent or separated)." if "Vector scaling" in slow else ""))
    if long:
        parts = [f"**{m}** ({_when(seconds)})" for m, seconds in long.items()]
        notes.append(f"Slow at {n_classes:,} classes: {', '.join(parts)} to fit on up to {n_rows:,} rows, per model "
                     "and protocol (one map per class, each fitted on every row).")
    return " ".join(notes) or None
