"""The Lab page's calib_core calls: resumable runs in chunks, and a process-wide store of finished chunks.

The lab's heavy work (a simulation run, the test-set-size study on the
user's data) is cut into **chunks** - one test-set size of the simulation,
one (model, subset size) pair of the study - held by a :class:`Job` in
``st.session_state``. The page computes one chunk per script run and then
calls ``st.rerun()``, which gives three things at once:

* a progress bar driven by calib_core's ``on_progress(done, total)`` inside
  the chunk, and the results of the finished chunks drawn while the next one runs;
* a Stop button that works: clicking it makes Streamlit interrupt the running
  script at its next ``st`` call (the progress-bar update; ``runner.fastReruns``
  is on by default), and the button's callback, which runs first in the new
  script run, marks the job stopped. The finished chunks are kept; at most the
  interrupted chunk's work is lost;
* a run that survives a tab or page change: the job is resumed where it was
  when its tab is opened again.

Finished chunks go into :class:`ResultStore`, a bounded process-wide store
keyed by every parameter of the chunk, so running the same settings again (or
a run that shares some sizes with an earlier one) reuses them. It replaces
``st.cache_data`` here because a cached function may not update a progress bar
created outside it (Streamlit could not replay that element), and because the
results hold objects that do not pickle (``GroundTruth`` uses mapping proxies).

Each chunk draws from its own seed, ``SeedSequence([seed, n])``, so a result
does not depend on which other sizes were run or on where a run was stopped.
"""
from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core.lab.bounds import model_lipschitz
from calib_core.lab.generators import FUTAMI_CASES, TRUTH_KEYS, VAICENAVICIUS_CASES, GroundTruth
from calib_core.lab.estimators import DEFAULT_ESTIMATORS, DEFAULT_SIZES, LabEstimator
from calib_core.lab.pathologies import Pathology
from calib_core.lab.size_power import cell_seed
from calib_core.lab.stability import study_sizes
from calib_core.validation import CalibrationInputError
from studio.memory import ResultStore  # noqa: F401  (re-exported for the tests)

Progress = Callable[[int, int], None] | None

# ============================================================================ store
#: How long a finished chunk stays in the store. Chunks on a visitor's data (the test-set-size study,
#: rank stability) are keyed by a hash of that data, so only the same visitor can reuse them; an hour
#: covers a working session, and memory is given back after the visitors leave. The store is bounded in
#: entries and in bytes (:class:`studio.memory.ResultStore`).


@st.cache_resource(show_spinner=False, max_entries=1, ttl="24h")
def result_store() -> ResultStore:
    """The store shared by every session of this server process (its entries expire after an hour;
    the store itself is renewed daily)."""
    return ResultStore()


# ============================================================================ jobs
@dataclass
class Job:
    """A computation cut into chunks, advanced one chunk per script run.

    Attributes
    ----------
    params : hashable
        Every setting of the run; a new run with equal ``params`` is the same run.
    chunks : tuple
        The chunks, in the order they are computed.
    weights : tuple of float
        Relative cost of each chunk (for the progress bar).
    done : dict
        Finished chunks and their results.
    stopped : bool
        The user stopped the run (or a chunk failed, see ``error``).
    error : str or None
        Why a chunk failed.
    seconds : float
        Compute time of the chunks computed in this session (chunks taken
        from the store cost nothing).
    created, ended : float
        ``time.perf_counter()`` when the job was made and when its last chunk
        finished (None while unfinished): the wall time the user waited.
    """

    params: Hashable
    chunks: tuple
    weights: tuple[float, ...]
    done: dict = field(default_factory=dict)
    stopped: bool = False
    error: str | None = None
    seconds: float = 0.0
    created: float = field(default_factory=time.perf_counter)
    ended: float | None = None

    @property
    def wall_seconds(self) -> float | None:
        """Seconds from the job's creation to its last chunk (None while unfinished)."""
        return None if self.ended is None else self.ended - self.created

    @property
    def pending(self) -> Any | None:
        """The next chunk to compute (None when every chunk is done)."""
        return next((chunk for chunk in self.chunks if chunk not in self.done), None)

    @property
    def finished(self) -> bool:
        return self.pending is None

    @property
    def running(self) -> bool:
        return not self.finished and not self.stopped

    def fraction(self, within: float = 0.0) -> float:
        """Share of the work done, counting ``within`` of the pending chunk."""
        total = sum(self.weights) or 1.0
        done = sum(w for c, w in zip(self.chunks, self.weights) if c in self.done)
        pending = self.pending
        if pending is not None:
            done += within * self.weights[self.chunks.index(pending)]
        return min(max(done / total, 0.0), 1.0)

    def advance(self, compute: Callable[[Any, Progress], Any], on_progress: Progress = None) -> None:
        """Compute the pending chunk with ``compute(chunk, on_progress)``.

        A chunk that raises stops the job with the message in ``error`` (the
        page shows it with ``st.error``); the finished chunks are kept.
        """
        chunk = self.pending
        if chunk is None or self.stopped:
            return
        started = time.perf_counter()
        try:
            self.done[chunk] = compute(chunk, on_progress)
        except CalibrationInputError as exc:
            self.stopped, self.error = True, str(exc)
        except (ValueError, FloatingPointError, MemoryError, np.linalg.LinAlgError) as exc:
            self.stopped, self.error = True, f"{type(exc).__name__}: {exc}"
        self.seconds += time.perf_counter() - started
        if self.finished:
            self.ended = time.perf_counter()


def chunk_seed(seed: int, n: int) -> int:
    """The seed of one chunk: ``SeedSequence([seed, n])`` turned into one 32-bit integer."""
    return int(np.random.SeedSequence([int(seed), int(n)]).generate_state(1)[0])


# ============================================================================ generators
#: The generators the page offers: key -> (label, parameter defaults).
GENERATORS: dict[str, tuple[str, dict[str, float]]] = {
    "logistic": ("Binary logistic model (Futami & Fujisawa 6.1; Vaicenavicius et al. C.1)",
                 {"b0": 0.5, "b1": -1.5}),
    "logistic_normal": ("Multi-class logistic-normal, tempered (Gruber & Buettner G.1)",
                        {"n_classes": 10, "temperature": 1.5, "scale": 215.0}),
    "uniform_simplex": ("Uniform simplex, sharpened then tempered (Popordanoska et al. 7.1)",
                        {"n_classes": 3, "t1": 0.9, "t2": 0.6}),
}

#: Ready-made parameters of the logistic model: label -> (b0, b1).
LOGISTIC_PRESETS: dict[str, tuple[float, float]] = {
    "Futami & Fujisawa: less calibrated (0.5, -1.5)": FUTAMI_CASES["less_calibrated"],
    "Futami & Fujisawa: better calibrated (0.2, -1.9)": FUTAMI_CASES["better_calibrated"],
    "Vaicenavicius et al.: perfect, Bayes-optimal (0, -2)": VAICENAVICIUS_CASES["perfect"],
    "Vaicenavicius et al.: constant 1/2 (0, 0)": VAICENAVICIUS_CASES["constant"],
    "Vaicenavicius et al.: uncalibrated (1, 1)": VAICENAVICIUS_CASES["uncalibrated"],
}


@dataclass(frozen=True)
class GeneratorSpec:
    """A ground-truth generator by name and parameters (hashable: part of every cache key)."""

    kind: str
    params: tuple[tuple[str, float], ...]

    @classmethod
    def make(cls, kind: str, **params: float) -> GeneratorSpec:
        if kind not in GENERATORS:
            raise CalibrationInputError(f"unknown generator {kind!r}; choose one of {', '.join(GENERATORS)}.")
        return cls(kind, tuple(sorted((k, float(v)) for k, v in params.items())))

    def build(self):
        """The calib_core model (raises CalibrationInputError for invalid parameters); built once per spec."""
        return _build(self)

    def _make(self):
        p = dict(self.params)
        if self.kind == "logistic":
            return cc.LogisticModel(b0=p["b0"], b1=p["b1"])
        if self.kind == "logistic_normal":
            return cc.LogisticNormalModel(n_classes=int(p["n_classes"]), temperature=p["temperature"],
                                          scale=p["scale"])
        return cc.UniformSimplexModel(n_classes=int(p["n_classes"]), t1=p["t1"], t2=p["t2"])

    @property
    def n_classes(self) -> int:
        return 2 if self.kind == "logistic" else int(dict(self.params)["n_classes"])


@functools.lru_cache(maxsize=32)
def _build(spec: GeneratorSpec):
    return spec._make()


@functools.lru_cache(maxsize=32)
def lipschitz_of(spec: GeneratorSpec) -> tuple[float, bool]:
    """The Lipschitz constant used for the optimal bin count and the bounds, and whether it is the model's own.

    Only the logistic model knows its L (a maximum over a fine grid, so it is
    computed once per spec): :func:`calib_core.lab.bounds.model_lipschitz`.
    """
    return model_lipschitz(spec.build())


#: Short names of the true values (keys of calib_core.lab.generators.TRUTH_KEYS).
TARGET_NAMES: dict[str, str] = {
    "accuracy": "accuracy", "tce": "TCE", "tce_l2": "TCE₂", "ks": "KS", "mmce": "MMCE",
    "classwise_tce": "class-wise TCE", "classwise_ce_kl": "class-wise CE_KL",
    "classwise_ce_l2_sq": "class-wise CE_L2²", "canonical_tv": "canonical CE (TV)", "canonical_sq": "CE₂²",
    "ce_kl": "CE_KL", "skce": "SKCE",
}


def truth_table(truth: GroundTruth) -> pd.DataFrame:
    """The model's true values: ``quantity``, ``key``, ``value``, ``method``, ``definition``."""
    return pd.DataFrame({
        "quantity": [TARGET_NAMES.get(k, k) for k in truth.values],
        "key": list(truth.values),
        "value": [float(v) for v in truth.values.values()],
        "method": [truth.method.get(k, "") for k in truth.values],
        "definition": [TRUTH_KEYS.get(k, "") for k in truth.values],
    })


# ============================================================================ estimators
#: The ECE at a bin count chosen on the page: key -> binning.
FIXED_ECE = {"ece_uniform_fixed": "uniform", "ece_adaptive_fixed": "adaptive"}
#: lab_estimators' own fixed-15-bin ECEs, replaced on the page by the chosen bin count.
_REPLACED = ("ece_uniform_15", "ece_adaptive_15")


@st.cache_resource(show_spinner=False, max_entries=1, ttl="24h")
def estimator_options() -> dict[str, str]:
    """Estimator key -> label, in lab_estimators' order, the fixed-B ECEs after the optimal-B ones."""
    options: dict[str, str] = {}
    for key, estimator in cc.lab_estimators().items():
        if key in _REPLACED:
            continue
        options[key] = estimator.label
        if key == "ece_adaptive":
            options["ece_uniform_fixed"] = "ECE (uniform, B chosen below)"
            options["ece_adaptive_fixed"] = "ECE (adaptive, B chosen below)"
    return options


def default_estimators() -> list[str]:
    """The default run's estimators (calib_core.lab.estimators.DEFAULT_ESTIMATORS) that this installation offers."""
    options = estimator_options()
    return [key for key in DEFAULT_ESTIMATORS if key in options]


def resolve_estimators(spec: GeneratorSpec, keys: Sequence[str], fixed_bins: int) -> list[LabEstimator]:
    """The LabEstimator objects of ``keys`` for the model of ``spec`` (SKCE bandwidth and L from the model)."""
    available = cc.lab_estimators(spec.build(), lipschitz=lipschitz_of(spec)[0])
    chosen = []
    for key in keys:
        if key in FIXED_ECE:
            chosen.append(cc.ece_estimator(int(fixed_bins), FIXED_ECE[key], key=key))
        elif key in available:
            chosen.append(available[key])
        else:
            raise CalibrationInputError(f"unknown lab estimator {key!r}; available: {', '.join(estimator_options())}.")
    return chosen


#: Test-set sizes offered on the page (the default run's eight, round numbers, up to 10^6).
SIZE_OPTIONS: tuple[int, ...] = tuple(sorted(set(DEFAULT_SIZES) | {
    20, 50, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 200_000, 500_000, 1_000_000}))


# ============================================================================ simulation runs
#: Largest n x K of one simulated test set: the generators hold a few arrays of that size at once.
MAX_TEST_SET_VALUES = 10_000_000


@dataclass(frozen=True)
class LabParams:
    """Every setting of a simulation run (hashable)."""

    spec: GeneratorSpec
    estimators: tuple[str, ...]
    fixed_bins: int
    sizes: tuple[int, ...]
    repetitions: int
    seed: int

    @property
    def simulated_values(self) -> int:
        """Probabilities drawn in the whole run (rows x classes)."""
        return self.repetitions * sum(self.sizes) * self.spec.n_classes


@dataclass(frozen=True)
class LabPart:
    """The result of one test-set size: calib_core.run_lab's ``estimates`` and ``summary`` for that size."""

    estimates: pd.DataFrame
    summary: pd.DataFrame
    seconds: float


def _stored_job(params: Hashable, chunks: tuple, weights: tuple[float, ...],
                key: Callable[[Any, Any], Hashable]) -> Job:
    """A new :class:`Job` with the chunks already in the store (under ``key(params, chunk)``) done."""
    job = Job(params, chunks, weights)
    store = result_store()
    for chunk in chunks:
        found = store.get(key(params, chunk))
        if found is not None:
            job.done[chunk] = found
    if job.finished:
        job.ended = job.created
    return job


TRUTH_CHUNK = "truth"


def lab_job(params: LabParams) -> Job:
    """A simulation run: the true values first, then one chunk per size (finished chunks taken from the store)."""
    chunks = (TRUTH_CHUNK, *params.sizes)
    work = [float(n * params.repetitions * params.spec.n_classes) for n in params.sizes]
    # The true values cost about as much as simulating two million probabilities.
    weights = (2e6, *work)
    return _stored_job(params, chunks, weights, _lab_key)


def _lab_key(params: LabParams, chunk) -> tuple:
    if chunk == TRUTH_CHUNK:
        return ("truth", params.spec)
    return ("lab", params.spec, params.estimators, params.fixed_bins, int(chunk), params.repetitions, params.seed)


def compute_lab_chunk(params: LabParams, chunk, on_progress: Progress = None):
    """The true values (``chunk == "truth"``) or one size of the run; stored when done."""
    model = params.spec.build()
    if chunk == TRUTH_CHUNK:
        result = model.truth()
    else:
        estimators = resolve_estimators(params.spec, params.estimators, params.fixed_bins)
        run = cc.run_lab(model, estimators, sizes=[int(chunk)], repetitions=params.repetitions,
                         seed=chunk_seed(params.seed, int(chunk)), on_progress=on_progress)
        result = LabPart(run.estimates, run.summary, run.seconds)
    result_store().put(_lab_key(params, chunk), result)
    return result


@dataclass(frozen=True)
class LabView:
    """What the page shows of a (possibly unfinished) simulation run."""

    params: LabParams
    truth: GroundTruth
    summary: pd.DataFrame
    estimates: pd.DataFrame
    labels: dict[str, str]
    targets: dict[str, str | None]
    sizes_done: tuple[int, ...]
    lipschitz: float
    lipschitz_known: bool
    model_name: str


def lab_view(job: Job) -> LabView | None:
    """The finished sizes of ``job`` in one view (None until the true values are known)."""
    params: LabParams = job.params
    truth = job.done.get(TRUTH_CHUNK)
    if truth is None:
        return None
    model = params.spec.build()
    estimators = resolve_estimators(params.spec, params.estimators, params.fixed_bins)
    labels = {e.key: e.label for e in estimators}
    targets = {e.key: e.target for e in estimators}
    parts = [job.done[n] for n in params.sizes if n in job.done]
    sizes_done = tuple(n for n in params.sizes if n in job.done)
    if parts:
        summary = pd.concat([p.summary for p in parts], ignore_index=True)
        estimates = pd.concat([p.estimates for p in parts], ignore_index=True)
    else:
        summary = pd.DataFrame(columns=["estimator", "size", "target", "truth", "mean", "std", "q05", "q95",
                                        "bias", "mean_abs_error", "rmse", "repetitions"])
        estimates = pd.DataFrame(columns=["estimator", "size", "repetition", "estimate"])
    order = {key: i for i, key in enumerate(params.estimators)}
    if not summary.empty:
        summary = summary.sort_values(["estimator", "size"], key=lambda c: c.map(order) if c.name == "estimator"
                                      else c, kind="stable").reset_index(drop=True)
        summary.insert(1, "label", summary["estimator"].map(labels))
    else:
        summary.insert(1, "label", pd.Series(dtype=object))
    lipschitz, known = lipschitz_of(params.spec)
    return LabView(params, truth, summary, estimates, labels, targets, sizes_done, lipschitz, known, model.name)


def futami_curves(sizes: Sequence[int], lipschitz: float, fixed_bins: int | None = None,
                  points: int = 60) -> tuple[cc.FutamiBounds, cc.FutamiBounds | None]:
    """Futami & Fujisawa's bounds on a dense log grid over ``sizes``: at the optimal B, and at ``fixed_bins``."""
    low, high = max(int(min(sizes)), 2), max(int(max(sizes)), 3)
    grid = np.unique(np.round(np.logspace(math.log10(low), math.log10(high), points)).astype(np.int64))
    optimal = cc.futami_bounds(grid, None, lipschitz)
    fixed = cc.futami_bounds(grid, int(fixed_bins), lipschitz) if fixed_bins else None
    return optimal, fixed


def optimal_bins(sizes: Sequence[int], lipschitz: float) -> list[int]:
    """Futami & Fujisawa's optimal bin count B* at each size."""
    return [int(b) for b in cc.futami_bounds(list(sizes), None, lipschitz).optimal_n_bins]


# ============================================================================ your data: test-set size
#: Fewest rows for the test-set-size study (subsets from 100 rows up to all, and half of them).
MIN_STUDY_ROWS = 200


@dataclass(frozen=True)
class StudyParams:
    """Every setting of a test-set-size study (hashable)."""

    models: tuple[tuple[str, str, int], ...]  # (name, fingerprint, rows)
    metrics: tuple[str, ...]
    repetitions: int
    n_bins: int
    binning: str
    seed: int


def study_job(params: StudyParams) -> Job:
    """A study: one chunk per model (its subset sizes report progress inside the chunk)."""
    chunks = tuple(name for name, _, _ in params.models)
    weights = tuple(float(sum(n * (1 if n == rows else params.repetitions) for n in study_sizes(rows)))
                    for _, _, rows in params.models)
    return _stored_job(params, chunks, weights, _study_key)


def _study_key(params: StudyParams, name: str) -> tuple:
    fingerprint = next(f for m, f, _ in params.models if m == name)
    return ("study", fingerprint, params.metrics, params.repetitions, params.n_bins, params.binning, params.seed)


def compute_study_chunk(params: StudyParams, predictions: Mapping[str, Any], name: str,
                        on_progress: Progress = None) -> cc.SubsetStudy:
    """One model of a study: :func:`calib_core.subset_study` at
    :func:`calib_core.lab.stability.study_sizes`; stored when done.

    Every model is drawn with the same seed, so models with the same number
    of rows are compared on the same subsets of rows.
    """
    data = predictions[name]
    result = cc.subset_study(data.probs, data.labels, list(params.metrics), sizes=study_sizes(data.n_samples),
                             repetitions=params.repetitions, seed=params.seed, n_bins=params.n_bins,
                             binning=params.binning, on_progress=on_progress)
    result_store().put(_study_key(params, name), result)
    return result


def default_study_metrics() -> list[str]:
    """Every registered metric but the O(N^2) ones, the loess ones (slow; they can be added) and those that
    may not exist on a subset (Cox's fit)."""
    return [spec.key for spec in cc.METRICS
            if not spec.quadratic and not spec.slow and spec.always_defined]


def study_summary(job: Job) -> pd.DataFrame:
    """The finished chunks' summaries with a ``model`` column (empty frame when none is done)."""
    frames = []
    for name, part in ((c, job.done[c]) for c in job.chunks if c in job.done):
        frame = part.summary.copy()
        frame.insert(0, "model", name)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["model", "metric", "size", "mean", "std", "q05", "q95", "full_value",
                                     "relative_spread", "repetitions"])
    return pd.concat(frames, ignore_index=True)


# ============================================================================ rank stability
def rank_stability_key(models: Sequence[tuple[str, str]], low: int, high: int) -> tuple:
    return ("rank", tuple(models), int(low), int(high))


def rank_stability(models: Sequence[Any], low: int, high: int, on_progress: Progress = None) -> cc.RankStability:
    """:func:`calib_core.bin_rank_stability` of the models over bin counts ``low..high`` (stored)."""
    key = rank_stability_key([(m.name, m.fingerprint) for m in models], low, high)
    store = result_store()
    found = store.get(key)
    if found is not None:
        return found
    result = cc.bin_rank_stability({m.name: (m.predictions.probs, m.predictions.labels) for m in models},
                                   range(int(low), int(high) + 1), on_progress=on_progress)
    store.put(key, result)
    return result


def rank_stability_is_stored(models: Sequence[Any], low: int, high: int) -> bool:
    return rank_stability_key([(m.name, m.fingerprint) for m in models], low, high) in result_store()


def variant_name(row: Mapping[str, Any]) -> str:
    """A GCE variant in words, e.g. ``adaptive · top label · per class · >0.01 · l2``."""
    return " · ".join([
        str(row["binning"]),
        "top label" if row["max_prob"] else "all classes",
        "per class" if row["class_conditional"] else "pooled",
        f">{float(row['threshold']):g}" if float(row["threshold"]) > 0 else "no threshold",
        str(row["norm"]),
    ])


# ============================================================================ pathology gallery
@st.cache_resource(show_spinner=False, max_entries=1, ttl="24h")
def gallery() -> tuple[Pathology, ...]:
    """The gallery's cases (:func:`calib_core.pathologies`)."""
    return cc.pathologies()


@st.cache_data(show_spinner=False, max_entries=32, ttl="24h")
def pathology_numbers(key: str) -> dict[str, float]:
    """``case.compute()`` of the case ``key``, computed live once per server process."""
    case = next((c for c in gallery() if c.key == key), None)
    if case is None:
        raise CalibrationInputError(f"unknown gallery case {key!r}.")
    return {name: float(value) for name, value in case.compute().items()}


# ============================================================================ calibration tests: size and power
#: The tests the page offers: key -> (label, (calibration_test method, options)). The first four are the
#: methods at their default settings (the ones the flag is about); the last is Hosmer-Lemeshow with g degrees
#: of freedom, the setting for predictions not fitted on the test data.
TEST_VARIANTS: dict[str, tuple[str, tuple[str, dict]]] = {
    "consistency": ("Consistency resampling (top-label ECE, 1,000 resamples)", ("consistency", {})),
    "skce": ("SKCE test (blocks of √N rows)", ("skce", {})),
    "hosmer_lemeshow": ("Hosmer-Lemeshow (g − 2 dof, default)", ("hosmer_lemeshow", {})),
    "spiegelhalter": ("Spiegelhalter's Z", ("spiegelhalter", {})),
    "hosmer_lemeshow_g": ("Hosmer-Lemeshow (g dof, dof_offset=0)", ("hosmer_lemeshow", {"dof_offset": 0})),
}

#: Miscalibrated logistic models offered for the power curve (label -> (b0, b1)).
POWER_PRESETS: dict[str, tuple[float, float]] = {
    label: params for label, params in LOGISTIC_PRESETS.items()
    if not cc.LogisticModel(*params).is_calibrated
}

#: Test-set sizes offered for the power curve, and the default (kept small: the page run stays near 10 s).
POWER_SIZE_OPTIONS: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000)
DEFAULT_POWER_SIZES: tuple[int, ...] = (100, 200, 500)
#: Default repetitions R and test-set size of the size measurement on the page.
DEFAULT_TEST_REPETITIONS = 200
DEFAULT_SIZE_N = 500


@dataclass(frozen=True)
class SizePowerParams:
    """Every setting of a size-and-power run (hashable)."""

    tests: tuple[str, ...]
    power_model: tuple[float, float]  # (b0, b1) of the miscalibrated logistic model
    size_n: int
    sizes: tuple[int, ...]
    repetitions: int
    seed: int

    def variants(self) -> dict[str, tuple[str, dict]]:
        return {key: TEST_VARIANTS[key][1] for key in self.tests}


def size_power_job(params: SizePowerParams) -> Job:
    """One chunk for the size (calibrated model at ``size_n``) and one per size of the power curve."""
    chunks = (("size", params.size_n), *(("power", n) for n in params.sizes))
    weights = tuple(float(n * params.repetitions) for _, n in chunks)
    return _stored_job(params, chunks, weights, _size_power_key)


def _size_power_key(params: SizePowerParams, chunk: tuple[str, int]) -> tuple:
    role, n = chunk
    model = (0.0, -2.0) if role == "size" else params.power_model
    return ("tests", params.tests, model, role, int(n), params.repetitions, params.seed)


def compute_size_power_chunk(params: SizePowerParams, chunk: tuple[str, int], on_progress: Progress = None):
    """The p-values of every chosen test on R test sets of one (role, n) cell (calib_core.simulate_p_values)."""
    role, n = chunk
    model = cc.gaussian_mixture("perfect") if role == "size" else cc.LogisticModel(*params.power_model)
    result = cc.simulate_p_values(model, int(n), params.variants(), params.repetitions,
                                  seed=cell_seed(params.seed, role, int(n)), on_progress=on_progress)
    result_store().put(_size_power_key(params, chunk), result)
    return result


def size_power_view(job: Job) -> cc.SizePowerResult:
    """The finished cells of ``job`` summarised by calib_core (rates, intervals, size flags)."""
    params: SizePowerParams = job.params
    done = [(chunk, job.done[chunk]) for chunk in job.chunks if chunk in job.done]
    size = [frame for (role, _), frame in done if role == "size"]
    power = [frame for (role, _), frame in done if role == "power"]
    columns = ["test", "method", "n", "repetition", "statistic", "p_value"]
    return cc.summarise_size_power(
        pd.concat(size, ignore_index=True) if size else pd.DataFrame(columns=columns),
        pd.concat(power, ignore_index=True) if power else None,
        calibrated=cc.gaussian_mixture("perfect").name, miscalibrated=cc.LogisticModel(*params.power_model).name,
        stopped=job.stopped)
