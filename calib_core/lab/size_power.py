"""Size and power of the calibration tests, measured on ground-truth generators.

A calibration test promises that it rejects a calibrated model with
probability ``alpha`` (its **size**) and, ideally, a miscalibrated one with a
probability that grows to 1 with the test-set size N (its **power**). Neither
promise is checked by the p-value itself: an asymptotic null distribution, a
wrong number of degrees of freedom or a resampling shortcut can make a test
reject far more (or less) often than ``alpha``. This module measures both on
the package's generators (:mod:`calib_core.lab.generators`), whose calibration is
known:

* :func:`simulate_p_values` - R test sets of N rows from one generator, every
  test of :func:`calib_core.calibration_test` on each; the p-values.
* :func:`summarise_size_power` - rejection rates at ``alpha`` with
  Clopper-Pearson (or Wilson) intervals; a test whose measured size leaves
  :data:`SIZE_BAND` is flagged.
* :func:`size_and_power` - both on a calibrated and a miscalibrated
  generator (seeded, stoppable).

Notes
-----
With R independent test sets and ``k`` rejections the measured size is
``k / R``; its exact (Clopper & Pearson 1934) ``1 - level`` interval is

.. math:: \\left[B\\left(\\tfrac{a}{2}; k, R - k + 1\\right),\\;
          B\\left(1 - \\tfrac{a}{2}; k + 1, R - k\\right)\\right],\\quad a = 1 - \\text{level},

with ``B(q; a, b)`` the q-quantile of the Beta(a, b) distribution (the lower
end is 0 when k = 0, the upper 1 when k = R). The Wilson (1927) score
interval is :math:`\\frac{\\hat p + z^2/2R \\pm z\\sqrt{\\hat p(1-\\hat p)/R + z^2/4R^2}}{1 + z^2/R}`.
A test is **flagged** when its measured size ``k / R`` lies outside
``[0.03, 0.07]`` (the band of the issue: within 40 % of ``alpha = 0.05``),
and the flag is **conclusive** when the whole interval lies outside the band
(with small R a correct test is flagged by chance about one time in eight at
R = 200; a conclusive flag is a real defect).

Every (generator, N) cell draws from its own stream,
``SeedSequence([seed, role, N])`` (role 0: calibrated, 1: miscalibrated), so a
cell's result does not depend on which other cells were run.

References
----------
.. [ClopperPearson1934] Clopper, C. J. & Pearson, E. S. "The use of confidence or
   fiducial limits illustrated in the case of the binomial", Biometrika 26(4), 1934.
.. [Wilson1927] Wilson, E. B. "Probable inference, the law of succession, and
   statistical inference", JASA 22(158), 1927.
.. [HosmerLemeshow1980] Hosmer, D. W. & Lemeshow, S. (1980); Hosmer, Lemeshow &
   Sturdivant, *Applied Logistic Regression*, 3rd ed. 2013, Section 5.2.2: the
   g - 2 degrees of freedom hold for a model fitted on the same data; for
   external validation the statistic is closer to chi-square with g.
.. [Widmann2019] Widmann, D., Lindsten, F. & Zachariah, D. "Calibration tests in
   multi-class classification: A unifying framework", NeurIPS 2019, Section 5
   (empirical size and power of the tests).
"""
from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calib_core.inference.calibration_tests import TEST_METHODS, calibration_test
from calib_core.lab.generators import futami_logistic, gaussian_mixture
from calib_core.metrics.reliability import wilson_interval
from calib_core.validation import CalibrationInputError, check_choice, check_count
from calib_core.inference.verdicts import DEFAULT_ALPHA, check_alpha

__all__ = ["DEFAULT_POWER_SIZES", "FLAGGED_TESTS", "SIZE_BAND", "SIZE_NOTES", "TEST_LABELS", "SizePowerResult", "binomial_interval", "size_and_power",
           "cell_seed", "resolve_tests", "simulate_p_values",
           "summarise_size_power"]

#: A test whose measured size at alpha = 0.05 leaves this band is flagged.
SIZE_BAND: tuple[float, float] = (0.03, 0.07)

#: Test-set sizes of the default power curve.
DEFAULT_POWER_SIZES: tuple[int, ...] = (100, 200, 500, 1000, 2000)

#: Intervals of :func:`binomial_interval`.
INTERVAL_METHODS = ("clopper_pearson", "wilson")

#: Largest number of (rows x classes) entries of one block of simulated test sets.
_BLOCK_ELEMENTS = 1_000_000

ProgressCallback = Callable[[int, int], None]
StopCallback = Callable[[], bool]
Variants = Mapping[str, tuple[str, Mapping[str, object]]]


# =========================================================================== intervals
def binomial_interval(successes: ArrayLike, trials: ArrayLike, *, level: float = 0.95,
                      method: str = "clopper_pearson") -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Interval for a binomial proportion ``successes / trials`` (vectorised).

    Parameters
    ----------
    successes, trials : array_like of int
        ``0 <= successes <= trials``, ``trials >= 1`` (broadcast together).
    level : float, default 0.95
        Coverage, in (0, 1).
    method : {"clopper_pearson", "wilson"}
        Exact Clopper-Pearson (Beta quantiles) or the Wilson score interval.

    Returns
    -------
    low, high : ndarray of float

    Notes
    -----
    See the module Notes for both formulas.

    Examples
    --------
    >>> low, high = binomial_interval(10, 200)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0242, 0.09)
    """
    k = np.asarray(successes)
    n = np.asarray(trials)
    if not (np.issubdtype(k.dtype, np.integer) and np.issubdtype(n.dtype, np.integer)):
        raise CalibrationInputError("`successes` and `trials` must be whole numbers.")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise CalibrationInputError(f"need 0 <= successes <= trials and trials >= 1, got {k!r} of {n!r}.")
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0.0 < level < 1.0:
        raise CalibrationInputError(f"`level` must be a number in (0, 1), got {level!r}.")
    method = check_choice(method, "method", INTERVAL_METHODS)
    k, n = np.broadcast_arrays(k.astype(np.float64), n.astype(np.float64))
    tail = (1.0 - level) / 2.0
    if method == "clopper_pearson":
        with np.errstate(invalid="ignore"):
            low = np.where(k > 0, stats.beta.ppf(tail, k, n - k + 1.0), 0.0)
            high = np.where(k < n, stats.beta.ppf(1.0 - tail, k + 1.0, n - k), 1.0)
        return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    return wilson_interval(k, n, 1.0 - level)


# =========================================================================== simulation
def resolve_tests(methods: Sequence[str] | Variants = TEST_METHODS) -> dict[str, tuple[str, dict[str, object]]]:
    """Normalise ``methods`` to ``{key: (method, options)}``.

    Parameters
    ----------
    methods : sequence of str or mapping
        Methods of :func:`calib_core.calibration_test` (each at its default
        settings, keyed by its name), or ``{key: (method, options)}`` with
        keyword options of ``calibration_test`` (e.g. ``{"hl_g": ("hosmer_lemeshow",
        {"dof_offset": 0})}``).

    Returns
    -------
    dict
    """
    if isinstance(methods, str):
        methods = [methods]
    if isinstance(methods, Mapping):
        items = list(methods.items())
    else:
        items = [(m, (m, {})) for m in methods]
    if not items:
        raise CalibrationInputError("`methods` is empty; choose at least one calibration test.")
    variants: dict[str, tuple[str, dict[str, object]]] = {}
    for key, value in items:
        if not isinstance(value, tuple) or len(value) != 2 or not isinstance(value[1], Mapping):
            raise CalibrationInputError(f"`methods[{key!r}]` must be (method, options), got {value!r}.")
        method = check_choice(value[0], "method", TEST_METHODS)
        options = dict(value[1])
        for forbidden in ("alpha", "seed"):
            if forbidden in options:
                raise CalibrationInputError(f"`{forbidden}` is set by the lab, not in the options of {key!r}.")
        if key in variants:
            raise CalibrationInputError(f"`methods` repeats {key!r}.")
        variants[str(key)] = (method, options)
    return variants


def _check_generator(generator: object, name: str) -> None:
    if not hasattr(generator, "sample_batch"):
        raise CalibrationInputError(
            f"`{name}` must be a ground-truth model from calib_core.lab.generators, got {type(generator).__name__}.")


_P_COLUMNS = ["test", "method", "n", "repetition", "statistic", "p_value"]


def simulate_p_values(generator, n: int, methods: Sequence[str] | Variants = TEST_METHODS,
                      repetitions: int = 200, *, seed: int | np.random.SeedSequence | None = 0,
                      on_progress: ProgressCallback | None = None,
                      should_stop: StopCallback | None = None) -> pd.DataFrame:
    """p-values of the calibration tests on ``repetitions`` test sets of ``n`` rows from ``generator``.

    Parameters
    ----------
    generator : a model of :mod:`calib_core.lab.generators`
    n : int
        Rows per test set (>= 4, the SKCE test's minimum).
    methods : sequence of str or mapping, default every method
        See :func:`resolve_tests`.
    repetitions : int, default 200
    seed : int or SeedSequence, optional
        Draws the test sets (in blocks, vectorised through ``sample_batch``)
        and the seeds of the tests' own randomness.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each block, in test sets.
    should_stop : callable, optional
        Checked before each block; True ends the run with the blocks done.

    Returns
    -------
    pandas.DataFrame
        Columns ``test`` (variant key), ``method``, ``n``, ``repetition``,
        ``statistic``, ``p_value``: one row per (test, repetition). A test that
        cannot be computed on a test set (e.g. Hosmer-Lemeshow with fewer
        than 3 distinct risks) has p-value NaN there; it counts as not
        rejecting.
    """
    _check_generator(generator, "generator")
    n = check_count(n, "n", 4)
    repetitions = check_count(repetitions, "repetitions")
    variants = resolve_tests(methods)
    stream = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    per_block = max(1, min(repetitions, _BLOCK_ELEMENTS // (n * int(generator.n_classes))))
    starts = list(range(0, repetitions, per_block))
    rows: list[tuple] = []
    done = 0
    for start, block_stream in zip(starts, stream.spawn(len(starts))):
        if should_stop is not None and should_stop():
            break
        count = min(per_block, repetitions - start)
        data_stream, test_stream = block_stream.spawn(2)
        probs, labels = generator.sample_batch(n, count, np.random.default_rng(data_stream))
        test_seeds = np.random.default_rng(test_stream).integers(0, 2**63 - 1, size=(count, len(variants)))
        for r in range(count):
            for v, (key, (method, options)) in enumerate(variants.items()):
                try:
                    result = calibration_test(probs[r], labels[r], method, alpha=DEFAULT_ALPHA,
                                              seed=int(test_seeds[r, v]), **options)
                    statistic, p_value = result.statistic, result.p_value
                except CalibrationInputError:  # not computable on this draw (documented: NaN, no rejection)
                    statistic = p_value = np.nan
                rows.append((key, method, n, start + r, statistic, p_value))
        done += count
        if on_progress is not None:
            on_progress(done, repetitions)
    frame = pd.DataFrame(rows, columns=_P_COLUMNS)
    return frame.astype({"n": np.int64, "repetition": np.int64, "statistic": np.float64, "p_value": np.float64})


# =========================================================================== summary
@dataclass(frozen=True)
class SizePowerResult:
    """Measured size and power of calibration tests (:func:`size_and_power`).

    Attributes
    ----------
    size : pandas.DataFrame
        One row per (test, n) on the calibrated generator: ``test``,
        ``method``, ``n``, ``repetitions``, ``rejections``, ``rate`` (the
        measured size), ``ci_low``, ``ci_high``, ``flagged`` (rate outside
        ``band``), ``conclusive`` (the whole interval outside ``band``).
    power : pandas.DataFrame
        One row per (test, n) on the miscalibrated generator: the same
        columns but the two flags.
    p_values : pandas.DataFrame
        Every p-value (:func:`simulate_p_values`) with a column ``role``
        (``"size"`` or ``"power"``).
    flags : mapping of str to str
        For each flagged test, one sentence: its measured size, interval and
        what it means.
    alpha, level : float
        Significance level of the tests and coverage of the intervals.
    band : tuple of float
        The accepted range of the measured size.
    interval : str
        ``"clopper_pearson"`` or ``"wilson"``.
    calibrated, miscalibrated : str
        Names of the generators.
    stopped : bool
        ``should_stop`` ended the run early (the tables hold what finished).
    seconds : float
    """

    size: pd.DataFrame
    power: pd.DataFrame
    p_values: pd.DataFrame
    flags: Mapping[str, str]
    alpha: float
    level: float
    band: tuple[float, float]
    interval: str
    calibrated: str
    miscalibrated: str
    stopped: bool = False
    seconds: float = 0.0

    @property
    def flagged(self) -> tuple[str, ...]:
        """Keys of the flagged tests."""
        return tuple(self.flags)


_RATE_COLUMNS = ["test", "method", "n", "repetitions", "rejections", "rate", "ci_low", "ci_high"]


def _rates(p_values: pd.DataFrame, alpha: float, level: float, interval: str) -> pd.DataFrame:
    if p_values.empty:
        return pd.DataFrame(columns=_RATE_COLUMNS)
    frame = p_values.assign(reject=(p_values["p_value"] < alpha).astype(np.int64))
    grouped = frame.groupby(["test", "method", "n"], sort=False)["reject"]
    table = grouped.agg(repetitions="count", rejections="sum").reset_index()
    table = table.astype({"repetitions": np.int64, "rejections": np.int64})
    table["rate"] = table["rejections"] / table["repetitions"]
    low, high = binomial_interval(table["rejections"].to_numpy(), table["repetitions"].to_numpy(),
                                  level=level, method=interval)
    table["ci_low"], table["ci_high"] = low, high
    return table[_RATE_COLUMNS]


def summarise_size_power(size_p_values: pd.DataFrame, power_p_values: pd.DataFrame | None = None, *,
                         alpha: float = DEFAULT_ALPHA, level: float = 0.95, interval: str = "clopper_pearson",
                         band: tuple[float, float] = SIZE_BAND, calibrated: str = "", miscalibrated: str = "",
                         stopped: bool = False, seconds: float = 0.0) -> SizePowerResult:
    """Rejection rates, intervals and size flags from p-values of :func:`simulate_p_values`.

    Parameters
    ----------
    size_p_values : pandas.DataFrame
        p-values on a calibrated generator.
    power_p_values : pandas.DataFrame, optional
        p-values on a miscalibrated generator.
    alpha : float, default 0.05
        A test rejects when ``p < alpha``.
    level, interval : coverage and kind of the binomial intervals (:func:`binomial_interval`).
    band : (float, float), default :data:`SIZE_BAND`
        A test whose measured size lies outside is flagged.
    calibrated, miscalibrated : str
        Generator names, kept in the result.

    Returns
    -------
    SizePowerResult

    Examples
    --------
    >>> p = pd.DataFrame({"test": "t", "method": "spiegelhalter", "n": 100, "repetition": range(100),
    ...                   "statistic": 0.0, "p_value": np.r_[np.full(20, 0.01), np.full(80, 0.5)]})
    >>> result = summarise_size_power(p)
    >>> float(result.size["rate"][0]), result.flagged
    (0.2, ('t',))
    """
    alpha = check_alpha(alpha)
    interval = check_choice(interval, "interval", INTERVAL_METHODS)
    low_band, high_band = (float(b) for b in band)
    if not 0.0 <= low_band < high_band <= 1.0:
        raise CalibrationInputError(f"`band` must be (low, high) with 0 <= low < high <= 1, got {band!r}.")
    power_p_values = pd.DataFrame(columns=_P_COLUMNS) if power_p_values is None else power_p_values
    size = _rates(size_p_values, alpha, level, interval)
    size["flagged"] = ((size["rate"] < low_band) | (size["rate"] > high_band)).astype(bool)
    size["conclusive"] = ((size["ci_high"] < low_band) | (size["ci_low"] > high_band)).astype(bool)
    power = _rates(power_p_values, alpha, level, interval)
    flags: dict[str, str] = {}
    for row in size.loc[size["flagged"]].itertuples(index=False):
        side = "more" if row.rate > high_band else "less"
        certainty = ("the whole interval lies outside the band, so this is a real defect of the test at these "
                     "settings" if row.conclusive else
                     f"the interval overlaps the band, so {row.repetitions} repetitions cannot tell a defect from "
                     "chance: run more")
        sentence = (f"n = {row.n:,}: rejects a calibrated model in {row.rate:.1%} of {row.repetitions} test sets "
                    f"({level:.0%} interval {row.ci_low:.1%}-{row.ci_high:.1%}), {side} often than α = {alpha:g} "
                    f"promises (accepted {low_band:g}-{high_band:g}); {certainty}.")
        flags[row.test] = f"{flags[row.test]} {sentence}" if row.test in flags else sentence
    p_values = pd.concat([size_p_values.assign(role="size"), power_p_values.assign(role="power")],
                         ignore_index=True) if not power_p_values.empty else size_p_values.assign(role="size")
    return SizePowerResult(size, power, p_values, MappingProxyType(flags), alpha, float(level),
                           (low_band, high_band), interval, calibrated, miscalibrated, stopped, seconds)


def cell_seed(seed: int | None, role: str, n: int) -> np.random.SeedSequence:
    """The stream of one (role, n) cell: ``SeedSequence([seed, 0 or 1, n])`` (role "size" or "power")."""
    role = check_choice(role, "role", ("size", "power"))
    if seed is None:
        return np.random.SeedSequence()
    return np.random.SeedSequence([int(seed), 0 if role == "size" else 1, int(n)])


def size_and_power(calibrated=None, miscalibrated=None, *, methods: Sequence[str] | Variants = TEST_METHODS,
                   size_n: int | Iterable[int] = 500, sizes: Iterable[int] = DEFAULT_POWER_SIZES,
                   repetitions: int = 200, alpha: float = DEFAULT_ALPHA, seed: int | None = 0,
                   level: float = 0.95, interval: str = "clopper_pearson", band: tuple[float, float] = SIZE_BAND,
                   on_progress: ProgressCallback | None = None,
                   should_stop: StopCallback | None = None) -> SizePowerResult:
    """Measure the size (calibrated data) and power (miscalibrated data, as a function of N) of calibration tests.

    Parameters
    ----------
    calibrated : generator, optional
        A model of :mod:`calib_core.lab.generators` that is calibrated; default
        the Bayes-optimal logistic model ``gaussian_mixture("perfect")``
        (Vaicenavicius et al. 2019, C.1).
    miscalibrated : generator, optional
        A miscalibrated model; default Futami & Fujisawa's "less calibrated"
        logistic model (b0, b1) = (0.5, -1.5) (true top-label TCE 0.026).
    methods : sequence of str or mapping, default every method at its defaults
        See :func:`resolve_tests`.
    size_n : int or iterable of int, default 500
        Test-set size(s) at which the size is measured.
    sizes : iterable of int, default :data:`DEFAULT_POWER_SIZES`
        Test-set sizes of the power curve (empty: no power curve).
    repetitions : int, default 200
        Test sets R per (generator, N).
    alpha : float, default 0.05
    seed : int, optional
        Same seed and settings, same result (see the module Notes).
    level, interval, band :
        See :func:`summarise_size_power`.
    on_progress : callable, optional
        ``on_progress(done, total)`` in test sets.
    should_stop : callable, optional
        Checked before each block of test sets; True ends the run early
        (``stopped=True``) with what finished.

    Returns
    -------
    SizePowerResult

    Raises
    ------
    CalibrationInputError
        Unknown methods, invalid sizes, repetitions or generators, or a
        "calibrated" generator that is not calibrated.

    Examples
    --------
    >>> res = size_and_power(methods=["spiegelhalter"], size_n=200, sizes=[100, 1000], repetitions=50)
    >>> list(res.size["n"]), list(res.power["n"])
    ([200], [100, 1000])
    """
    started = time.perf_counter()
    calibrated = gaussian_mixture("perfect") if calibrated is None else calibrated
    miscalibrated = futami_logistic("less_calibrated") if miscalibrated is None else miscalibrated
    _check_generator(calibrated, "calibrated")
    _check_generator(miscalibrated, "miscalibrated")
    if getattr(calibrated, "is_calibrated", True) is False:
        raise CalibrationInputError(f"`calibrated` must be a calibrated model; {calibrated.name} is not.")
    alpha = check_alpha(alpha)
    variants = resolve_tests(methods)
    size_ns = _sizes([size_n] if isinstance(size_n, numbers.Integral) else size_n, "size_n", allow_empty=False)
    power_ns = _sizes(sizes, "sizes", allow_empty=True)
    repetitions = check_count(repetitions, "repetitions")
    cells = [("size", calibrated, n) for n in size_ns] + [("power", miscalibrated, n) for n in power_ns]
    total = repetitions * len(cells)
    parts: dict[str, list[pd.DataFrame]] = {"size": [], "power": []}
    stopped = False
    for index, (role, generator, n) in enumerate(cells):
        if should_stop is not None and should_stop():
            stopped = True
            break
        offset = index * repetitions
        progress = None if on_progress is None else (lambda done, _total, o=offset: on_progress(o + done, total))
        frame = simulate_p_values(generator, n, variants, repetitions, seed=cell_seed(seed, role, n),
                                  on_progress=progress, should_stop=should_stop)
        parts[role].append(frame)
        if len(frame) < repetitions * len(variants):
            stopped = True
            break
    size_p = pd.concat(parts["size"], ignore_index=True) if parts["size"] else pd.DataFrame(columns=_P_COLUMNS)
    power_p = pd.concat(parts["power"], ignore_index=True) if parts["power"] else pd.DataFrame(columns=_P_COLUMNS)
    return summarise_size_power(size_p, power_p, alpha=alpha, level=level, interval=interval, band=band,
                                calibrated=getattr(calibrated, "name", type(calibrated).__name__),
                                miscalibrated=getattr(miscalibrated, "name", type(miscalibrated).__name__),
                                stopped=stopped, seconds=time.perf_counter() - started)


def _sizes(values: Iterable[int], name: str, *, allow_empty: bool) -> tuple[int, ...]:
    try:
        items = list(values)
    except TypeError:
        raise CalibrationInputError(f"`{name}` must be whole numbers >= 4, got {values!r}.") from None
    if not items and not allow_empty:
        raise CalibrationInputError(f"`{name}` is empty; give at least one test-set size.")
    return tuple(sorted({check_count(v, name, 4) for v in items}))


# =========================================================================== measured figures (docs/tests.md)
#: Display names of the methods of :func:`calib_core.calibration_test`.
TEST_LABELS: Mapping[str, str] = MappingProxyType({
    "consistency": "Consistency resampling (top-label ECE)",
    "skce": "SKCE test (blocks of √N rows)",
    "hosmer_lemeshow": "Hosmer-Lemeshow (g - 2 dof)",
    "spiegelhalter": "Spiegelhalter's Z",
})

#: The measured size at alpha = 0.05 of each method at its default settings, as reported in docs/tests.md:
#: ``size_and_power(size_n=[100, 500], sizes=[], repetitions=2000, seed=2024)`` on the Bayes-optimal logistic
#: model, plus R = 1000 at n = 2000 (95% Clopper-Pearson intervals). tests/lab/test_lab.py re-measures the flag.
SIZE_NOTES: Mapping[str, str] = MappingProxyType({
    "consistency": "4.6% (n = 100), 4.7% (n = 500), 3.2% (n = 2,000): within [3%, 7%].",
    "skce": "6.7% (n = 100, 95% interval 5.6-7.9%: slightly liberal), 5.9% (n = 500), 6.2% (n = 2,000, R = 500): "
            "within [3%, 7%].",
    "hosmer_lemeshow": "FLAGGED: 13.0% (n = 100), 11.2% (n = 500), 10.7% (n = 2,000), every interval above 7%: "
                       "g - 2 degrees of freedom suit a model fitted on these data; for a model evaluated on new "
                       "data use dof_offset=0 (g dof: 5.3% at n = 500).",
    "spiegelhalter": "5.2% (n = 100), 4.6% (n = 500), 5.7% (n = 2,000): within [3%, 7%].",
})

#: Methods whose measured size at default settings lies conclusively outside :data:`SIZE_BAND`.
FLAGGED_TESTS: tuple[str, ...] = ("hosmer_lemeshow",)
