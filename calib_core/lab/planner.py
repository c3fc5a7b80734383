"""How many labelled rows a calibration check needs: power of the tests on a model like the user's.

An "inconclusive" verdict says the rows at hand cannot tell calibrated from
miscalibrated. The planner answers the two questions that follow, by
simulation with the Lab's machinery (:func:`calib_core.lab.size_power.simulate_p_values`,
the loop that measures the tests' size and power):

* for a miscalibration of a given size (a temperature, or the top-label
  calibration error it causes), how many rows give the chosen test a power
  of 0.8 (:func:`plan_labels`, ``n_required``);
* with the user's N rows, the smallest such miscalibration the test detects
  with that power (``detectable_temperature``, ``detectable_ece``).

The simulated model is "like the user's": its predictions are drawn from
the user's own predictions (their confidence distribution, their classes),
and the labels from the same predictions tempered by the temperature
:class:`ResampledModel`, so that temperature scaling would fit that
temperature. Everything here is a Monte Carlo estimate with an error that
the result states.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.inference.calibration_tests import TEST_METHODS
from calib_core.inference.verdicts import DEFAULT_ALPHA, check_alpha
from calib_core.lab.generators.truth import sample_categorical
from calib_core.lab.size_power import binomial_interval, simulate_p_values
from calib_core.recalibration import log_probabilities
from calib_core.validation import (CalibrationInputError, check_choice, check_count, check_positive, check_probs,
                                   row_argmax, softmax_unchecked)

__all__ = ["DEFAULT_PLAN_SIZES", "DEFAULT_PLAN_TEMPERATURES", "PLAN_TEST_OPTIONS", "LabelPlan", "ResampledModel",
           "plan_labels", "temperature_for_ece", "tempered_ece"]

#: Test-set sizes tried for ``n_required`` (a coarse geometric grid; the first size with enough power ends it).
DEFAULT_PLAN_SIZES: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000)

#: Temperatures tried for the smallest detectable miscalibration at the user's N (overconfidence: T > 1).
DEFAULT_PLAN_TEMPERATURES: tuple[float, ...] = (1.05, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0, 5.0)

#: Options of :func:`calib_core.calibration_test` the planner uses: 100 consistency resamples instead of 1,000
#: (a p-value resolution of 1/101 is enough to reject at alpha = 0.05, at a tenth of the cost), and
#: Hosmer-Lemeshow with g degrees of freedom (a model evaluated on new data; docs/tests.md).
PLAN_TEST_OPTIONS = {"consistency": {"n_resamples": 100}, "skce": {}, "hosmer_lemeshow": {"dof_offset": 0},
                     "spiegelhalter": {}}


def _tempered(probs: NDArray[np.float64], temperature: float) -> NDArray[np.float64]:
    """``softmax(log p / T)``: the true class probabilities when temperature scaling would fit T."""
    if temperature == 1.0:
        return probs
    return softmax_unchecked(log_probabilities(probs) / temperature)


def tempered_ece(probs: ArrayLike, temperature: float) -> float:
    """The true top-label calibration error of ``probs`` when the truth is ``softmax(log p / T)``.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        The predictions (each row equally likely).
    temperature : float
        T > 1: the predictions are overconfident; T < 1: underconfident.

    Returns
    -------
    float
        :math:`\\frac1N\\sum_i |q_{i, c_i} - p_{i, c_i}|` with :math:`c_i` the
        arg-max of row i and :math:`q = \\mathrm{softmax}(\\log p / T)` (the
        TCE of Gruber & Buettner 2022, eq. 2, on the empirical distribution).
    """
    probs = check_probs(probs)
    temperature = check_positive(temperature, "temperature")
    top = row_argmax(probs)
    rows = np.arange(probs.shape[0])
    return float(np.abs(_tempered(probs, temperature)[rows, top] - probs[rows, top]).mean())


def temperature_for_ece(probs: ArrayLike, ece: float, *, tol: float = 1e-6) -> float:
    """The temperature T > 1 at which :func:`tempered_ece` equals ``ece`` (bisection; it grows with T).

    Raises
    ------
    CalibrationInputError
        ``ece`` not below the largest error overconfidence can cause (at T = infinity the truth is uniform).
    """
    probs = check_probs(probs)
    ece = check_positive(ece, "ece")
    top = probs.max(axis=1)
    ceiling = float(np.mean(top - 1.0 / probs.shape[1]))
    if ece >= ceiling:
        raise CalibrationInputError(
            f"`ece` = {ece:g} is not reachable by overconfidence for these predictions (at most {ceiling:.4g}, "
            "when the truth is uniform); choose a smaller error.")
    low, high = 1.0, 2.0
    while tempered_ece(probs, high) < ece:
        low, high = high, high * 2.0
    while high - low > tol * high:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if tempered_ece(probs, middle) < ece else (low, middle)
    return 0.5 * (low + high)


@dataclass(frozen=True)
class ResampledModel:
    """A ground-truth model like the user's: their predictions, resampled, with labels from the tempered truth.

    A generator in the sense of :mod:`calib_core.lab.generators` (``sample_batch``),
    so :func:`calib_core.lab.size_power.simulate_p_values` runs the tests on it.

    Attributes
    ----------
    probs : ndarray of shape (M, K)
        The user's predictions; each simulated row is one of them, drawn uniformly.
    temperature : float
        The labels are drawn from ``softmax(log p / T)``: calibrated at T = 1.
    """

    probs: NDArray[np.float64]
    temperature: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "probs", check_probs(self.probs))
        object.__setattr__(self, "temperature", check_positive(self.temperature, "temperature"))
        object.__setattr__(self, "_truth", _tempered(self.probs, self.temperature))

    @property
    def n_classes(self) -> int:
        return int(self.probs.shape[1])

    @property
    def is_calibrated(self) -> bool:
        return self.temperature == 1.0

    @property
    def name(self) -> str:
        return f"The user's predictions resampled (T = {self.temperature:g})"

    def sample_batch(self, n: int, repetitions: int, rng: np.random.Generator
                     ) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """``repetitions`` test sets of ``n`` rows: probs ``(R, n, K)`` and labels ``(R, n)``."""
        rows = rng.integers(0, self.probs.shape[0], size=(repetitions, n))
        return self.probs[rows], sample_categorical(self._truth[rows], rng)


@dataclass(frozen=True)
class LabelPlan:
    """Rows needed to detect a miscalibration, and the smallest one detectable at the user's N (:func:`plan_labels`).

    Attributes
    ----------
    test : str
        The method of :func:`calib_core.calibration_test`.
    temperature, ece : float
        The miscalibration to detect, as a temperature and as the true top-label error it causes.
    power, alpha : float
        Target power and the test's level.
    repetitions : int
        Simulated test sets per cell.
    curve : pandas.DataFrame
        ``n``, ``power``, ``ci_low``, ``ci_high`` (Clopper-Pearson 95 %): the measured power at each size tried.
    n_required : float
        Rows for the target power, interpolated in log N between the sizes
        around it; ``inf`` when even the largest size tried falls short.
    n : int or None
        The user's N.
    detection : pandas.DataFrame or None
        ``temperature``, ``ece``, ``power``, ``ci_low``, ``ci_high`` at the user's N.
    detectable_temperature, detectable_ece : float
        The smallest miscalibration detected with the target power at the
        user's N (interpolated; ``inf`` beyond the temperatures tried, NaN without N).
    mc_error : float
        Monte Carlo standard error of a measured power at the target,
        ``sqrt(power (1 - power) / repetitions)``.
    """

    test: str
    temperature: float
    ece: float
    power: float
    alpha: float
    repetitions: int
    curve: pd.DataFrame
    n_required: float
    n: int | None
    detection: pd.DataFrame | None
    detectable_temperature: float
    detectable_ece: float
    mc_error: float

    def sentence(self) -> str:
        """Plain sentences for a page (no Markdown)."""
        error = f"Monte Carlo error ±{self.mc_error:.2f} in power, {self.repetitions} simulated test sets per size"
        if math.isinf(self.n_required):
            need = (f"even {int(self.curve['n'].max()):,} rows give the {self.test} test less than "
                    f"{self.power:.0%} power")
        else:
            need = f"about {_round_rows(self.n_required):,} labelled rows give the {self.test} test {self.power:.0%} power"
        text = (f"To detect a miscalibration of temperature {self.temperature:.3g} (true top-label error "
                f"{self.ece:.3f}) in a model like this one, {need} at alpha = {self.alpha:g} ({error}).")
        if self.n is not None:
            if math.isinf(self.detectable_temperature):
                text += (f" With your {self.n:,} rows no temperature up to "
                         f"{float(self.detection['temperature'].max()):g} is detected with that power.")
            else:
                text += (f" With your {self.n:,} rows, the smallest miscalibration detected with that power is a "
                         f"temperature of about {self.detectable_temperature:.3g} (top-label error "
                         f"{self.detectable_ece:.3f}).")
        return text


def _round_rows(value: float) -> int:
    """Two significant figures: the Monte Carlo error does not support more."""
    if value < 100:
        return int(math.ceil(value))
    magnitude = 10 ** (int(math.floor(math.log10(value))) - 1)
    return int(math.ceil(value / magnitude) * magnitude)


def _power(model: ResampledModel, n: int, test: str, repetitions: int, alpha: float,
           seed: np.random.SeedSequence) -> tuple[float, float, float]:
    frame = simulate_p_values(model, n, {test: (test, dict(PLAN_TEST_OPTIONS[test]))}, repetitions, seed=seed)
    rejections = int((frame["p_value"] < alpha).sum())
    low, high = binomial_interval(rejections, repetitions)
    return rejections / repetitions, float(low), float(high)


def _crossing(xs: Sequence[float], powers: Sequence[float], target: float, *, log: bool) -> float:
    """The x where the measured power first reaches ``target``, linear between the points around it."""
    for index, value in enumerate(powers):
        if value >= target:
            if index == 0:
                return float(xs[0])
            x0, x1 = (math.log(xs[index - 1]), math.log(xs[index])) if log else (xs[index - 1], xs[index])
            p0 = powers[index - 1]
            x = x0 + (target - p0) / (value - p0) * (x1 - x0)
            return float(math.exp(x) if log else x)
    return math.inf


def plan_labels(probs: ArrayLike, *, temperature: float | None = None, ece: float | None = None,
                test: str = "consistency", n: int | None = None, power: float = 0.8, alpha: float = DEFAULT_ALPHA,
                repetitions: int = 100, sizes: Sequence[int] = DEFAULT_PLAN_SIZES,
                temperatures: Sequence[float] = DEFAULT_PLAN_TEMPERATURES, seed: int = 0) -> LabelPlan:
    """Rows needed for a calibration test to detect a given miscalibration, on a model like the user's.

    Parameters
    ----------
    probs : array_like of shape (M, K)
        The user's predictions (labels are not needed: only their distribution is used).
    temperature : float, optional
        The miscalibration to detect, as the temperature temperature scaling
        would fit (T > 1: overconfident). Give this or ``ece``.
    ece : float, optional
        The miscalibration as a true top-label calibration error; turned into
        an overconfidence temperature by :func:`temperature_for_ece`.
    test : str, default "consistency"
        A method of :func:`calib_core.calibration_test` (the Metrics page's
        verdict is the consistency test), with :data:`PLAN_TEST_OPTIONS`.
    n : int, optional
        The user's number of labelled rows: also find the smallest
        miscalibration detectable with them.
    power : float, default 0.8
    alpha : float, default 0.05
    repetitions : int, default 100
        Simulated test sets per size (and per temperature).
    sizes : sequence of int
        Sizes tried, ascending; the search stops at the first with enough power.
    temperatures : sequence of float
        Temperatures tried at ``n``, ascending.
    seed : int, default 0

    Returns
    -------
    LabelPlan

    Notes
    -----
    Each cell simulates ``repetitions`` test sets with
    :func:`calib_core.lab.size_power.simulate_p_values` on a
    :class:`ResampledModel` and counts the p-values below ``alpha``; the
    power has the binomial standard error ``sqrt(p (1 - p) / R)`` (0.04 at
    p = 0.8, R = 100), and ``n_required`` inherits it through the slope of
    the power curve: a coarse answer (two significant figures at best), meant
    to tell 500 rows from 5,000. Cells are seeded by ``(seed, size)`` and
    ``(seed, temperature)``, so a result does not depend on the others run.
    The defaults take a few seconds for the consistency test on a binary
    model; the app caches the result.
    """
    probs = check_probs(probs)
    if (temperature is None) == (ece is None):
        raise CalibrationInputError("give exactly one of `temperature` and `ece` (the miscalibration to detect).")
    test = check_choice(test, "test", TEST_METHODS)
    if isinstance(power, bool) or not 0.0 < float(power) < 1.0:
        raise CalibrationInputError(f"`power` must be a number in (0, 1), got {power!r}.")
    power = float(power)
    alpha = check_alpha(alpha)
    repetitions = check_count(repetitions, "repetitions", 10)
    if temperature is None:
        temperature = temperature_for_ece(probs, ece)
    temperature = check_positive(temperature, "temperature")
    if temperature == 1.0:
        raise CalibrationInputError("`temperature` = 1 is a calibrated model: there is nothing to detect.")
    sizes = sorted({check_count(s, "sizes", 4) for s in sizes})
    temperatures = sorted({check_positive(t, "temperatures") for t in temperatures})
    if temperatures and temperatures[0] <= 1.0:
        raise CalibrationInputError(f"`temperatures` must all exceed 1 (overconfidence), got {temperatures[0]:g}.")
    if not sizes or not temperatures:
        raise CalibrationInputError("`sizes` and `temperatures` must not be empty.")
    model = ResampledModel(probs, temperature)
    rows = []
    for size in sizes:
        rows.append((size, *_power(model, size, test, repetitions, alpha, np.random.SeedSequence([seed, 0, size]))))
        if rows[-1][1] >= power:
            break
    curve = pd.DataFrame(rows, columns=["n", "power", "ci_low", "ci_high"])
    n_required = _crossing(curve["n"].tolist(), curve["power"].tolist(), power, log=True)
    detection = None
    detectable_t = detectable_e = math.nan
    if n is not None:
        n = check_count(n, "n", 4)
        found = []
        for index, t in enumerate(temperatures):
            cell = np.random.SeedSequence([seed, 1, index, int(round(t * 1e6))])
            found.append((t, tempered_ece(probs, t), *_power(ResampledModel(probs, t), n, test, repetitions, alpha,
                                                               cell)))
            if found[-1][2] >= power:
                break
        detection = pd.DataFrame(found, columns=["temperature", "ece", "power", "ci_low", "ci_high"])
        detectable_t = _crossing(detection["temperature"].tolist(), detection["power"].tolist(), power, log=False)
        detectable_e = tempered_ece(probs, detectable_t) if math.isfinite(detectable_t) else math.inf
    return LabelPlan(test, float(temperature), tempered_ece(probs, temperature), power, alpha, repetitions, curve,
                     n_required, n, detection, float(detectable_t), float(detectable_e),
                     math.sqrt(power * (1.0 - power) / repetitions))
