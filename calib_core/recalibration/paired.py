"""Several models (or systems) on the same rows, compared metric by metric: each value with its interval, the
paired difference of every two with its interval, and which is better beyond noise.

Every model is resampled with the same seed (:func:`calib_core.inference.bootstrap.resampled_metrics`), so
resample ``b`` holds the same rows for each, and ``value_B,b - value_A,b`` is the bootstrap distribution of the
difference (the paired bootstrap of the Recalibration page, :func:`calib_core.recalibration.compare.intervals`).
Each interval is made as the metric's registry entry declares
(:func:`calib_core.inference.intervals.interval_from_samples`), so a model's interval is
:func:`calib_core.metric_interval`'s for the same seed. A difference is *beyond noise* when its interval
excludes 0. The command line's ``compare`` and ``check --baseline``, the app's *Compare systems* section and
the HTML report all read this module; the rows must already be matched
(:func:`calib_core.io.systems.match_by_id` for confidence models).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from calib_core.inference.bootstrap import resampled_metrics
from calib_core.inference.intervals import interval_from_samples
from calib_core.metrics.registry import get_metric, metric_function, metric_name
from calib_core.recalibration.compare import HIGHER_IS_BETTER, METRIC_KEYS
from calib_core.validation import CalibrationInputError, check_count, check_sample_weight

__all__ = ["CONFIDENCE_SYSTEM_KEYS", "CLASS_SYSTEM_KEYS", "PairedDifference", "PairedMetric", "SystemsComparison",
           "compare_systems", "paired_metric"]

#: The metrics compared by default for confidence models: calibration (ECE of 10 equal-width bins, the Brier
#: score) and knowing when it is wrong (AUROC of confidence for correctness, AURC), with the accuracy beside.
CONFIDENCE_SYSTEM_KEYS = ("conf_ece", "conf_brier", "conf_auroc", "conf_aurc", "conf_accuracy")
#: The metrics compared by default for K-class models (the Recalibration page's).
CLASS_SYSTEM_KEYS = METRIC_KEYS

#: What "better" means per metric, in the verdict sentences (AURC and AUGRC mix the ranking with the accuracy).
_BETTER = {"conf_ece": "is better calibrated than", "conf_brier": "has a better Brier score than",
           "conf_nll": "has a better NLL than", "conf_auroc": "is better at knowing when it is wrong than",
           "conf_eaurc": "is better at knowing when it is wrong than",
           "conf_aurc": "is better at selective prediction (ranking and accuracy together) than",
           "conf_augrc": "is better at selective prediction (ranking and accuracy together) than",
           "conf_accuracy": "is more accurate than", "accuracy": "is more accurate than"}


@dataclass(frozen=True)
class PairedMetric:
    """Each model's value of one metric with its interval, and the differences ``value_j - value_i``.

    Attributes
    ----------
    key, name : str
    estimates, lows, highs : ndarray of shape (M,)
        Per model; NaN interval ends when the metric has no bootstrap interval.
    samples : ndarray of shape (M, n_boot)
        The paired resampled values (the same rows in column ``b`` for every model).
    alpha : float
    """

    key: str
    name: str
    estimates: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    samples: np.ndarray
    alpha: float

    def difference(self, i: int, j: int) -> tuple[float, float, float]:
        """``value_j - value_i`` and its paired interval (the low end not cut at 0)."""
        spec = get_metric(self.key)
        estimate = float(self.estimates[j] - self.estimates[i])
        low, high = interval_from_samples(_sample_method(spec), estimate, self.samples[j] - self.samples[i],
                                          self.alpha, signed=True)
        return estimate, low, high


def _sample_method(spec) -> str:
    """How an interval is made from resamples: the declared one, or the bootstrap standard error for a metric
    whose own interval is a variance formula (its resamples are still valid)."""
    return spec.interval if spec.interval in ("percentile", "bootstrap_se") else "bootstrap_se"


def _labels_per_model(labels: ArrayLike, n_models: int) -> list[np.ndarray]:
    """``labels`` of shape (N,) shared by every model, or (M, N): one row per model (a confidence model's
    correctness differs from system to system on the same items)."""
    array = np.asarray(labels)
    if array.ndim == 1:
        return [array] * n_models
    if array.ndim != 2 or array.shape[0] != n_models:
        raise CalibrationInputError(f"`labels` must have shape (N,) or (M, N) with M = {n_models} models; got "
                                    f"shape {array.shape}.")
    return list(array)


def paired_metric(key: str, probs_list: Sequence[ArrayLike], labels: ArrayLike, *, n_bins: int = 15,
                  binning: str = "uniform", bandwidth: float | None = None, n_boot: int = 1000, seed: int = 0,
                  alpha: float = 0.05, sample_weight: ArrayLike | None = None) -> PairedMetric:
    """One metric of several models on the same rows, resampled with one seed (:func:`resampled_metrics`).

    ``labels`` has shape (N,), or (M, N) with one row per model (confidence models: each system's
    correctness on the same items). The same seed draws the same rows for every model. ``sample_weight``
    (shape (N,), one weight per row, shared by every model) weights each value as the metric's registry entry
    does and the resamples carry the weights (:func:`calib_core.bootstrap_ci`'s weighted bootstrap), the same
    rows for every model.

    Raises
    ------
    CalibrationInputError
        A metric that a bootstrap cannot resample (``interval="none"``: a
        leave-one-out kernel estimate, the loess summaries) or that cannot be
        computed on these rows.
    """
    spec = get_metric(key)
    if spec.interval == "none":
        raise CalibrationInputError(f"{spec.label} cannot be compared with a paired bootstrap: "
                                    f"{spec.no_interval or 'it declares no interval'}.")
    function = metric_function(key, n_bins=n_bins, binning=binning, bandwidth=bandwidth)
    per_model = _labels_per_model(labels, len(probs_list))
    weights = check_sample_weight(sample_weight, np.shape(per_model[0])[-1])
    if weights is None:
        estimates = np.array([float(function(p, y)) for p, y in zip(probs_list, per_model)])
    else:
        estimates = np.array([float(function(p, y, sample_weight=weights)) for p, y in zip(probs_list, per_model)])
    samples = np.stack([resampled_metrics({key: function}, p, y, n_boot=n_boot, seed=seed, sample_weight=weights)[key]
                        for p, y in zip(probs_list, per_model)])
    lows, highs = np.full(len(probs_list), math.nan), np.full(len(probs_list), math.nan)
    for m in range(len(probs_list)):
        lows[m], highs[m] = interval_from_samples(_sample_method(spec), estimates[m], samples[m], alpha,
                                                  signed=spec.signed)
    name = metric_name(key, n_bins=n_bins, binning=binning, bandwidth=bandwidth)
    return PairedMetric(key, name, estimates, lows, highs, samples, float(alpha))


@dataclass(frozen=True)
class PairedDifference:
    """``b - a`` for one metric, its paired interval and the verdict.

    Attributes
    ----------
    key, name : str
        The metric's registry key and its name with settings.
    a, b : str
        The two models (``b - a`` is the difference).
    difference, low, high : float
    higher_is_better : bool
    better : str or None
        The better model's name when the interval excludes 0, else None (within noise).
    alpha : float
    """

    key: str
    name: str
    a: str
    b: str
    difference: float
    low: float
    high: float
    higher_is_better: bool
    better: str | None
    alpha: float

    @property
    def verdict(self) -> str:
        """``"<model> better beyond noise"`` or ``"within noise"`` (the command line's words)."""
        return f"{self.better} better beyond noise" if self.better else "within noise"

    def sentence(self) -> str:
        """The verdict as one plain sentence (no Markdown; names as given)."""
        level = f"{1 - self.alpha:.0%}"
        span = f"{level} paired interval of {self.b} − {self.a}: {self.low:+.4f} to {self.high:+.4f}"
        if self.better is None:
            return (f"{self.name}: no difference beyond noise between {self.a} and {self.b} "
                    f"({self.difference:+.4f}; {span}, which holds 0).")
        worse = self.a if self.better == self.b else self.b
        what = _BETTER.get(self.key, "is better than")
        direction = "higher" if self.higher_is_better else "lower"
        return (f"{self.name}: {self.better} {what} {worse} beyond noise ({direction} by "
                f"{abs(self.difference):.4f}; {span}, which excludes 0).")


@dataclass(frozen=True)
class SystemsComparison:
    """:func:`compare_systems`: every metric of every model with its interval, and every pair's difference.

    Attributes
    ----------
    names : tuple of str
    n_samples, n_boot, seed : int
    alpha : float
    metrics : tuple of PairedMetric
    differences : tuple of PairedDifference
        Per metric, every pair ``(i, j)`` with ``i < j``, as ``names[j] - names[i]``.
    """

    names: tuple[str, ...]
    n_samples: int
    n_boot: int
    seed: int
    alpha: float
    metrics: tuple[PairedMetric, ...]
    differences: tuple[PairedDifference, ...]

    def table(self) -> pd.DataFrame:
        """One row per metric and pair: ``metric, key, a, b, difference, low, high, verdict``."""
        return pd.DataFrame([{"metric": d.name, "key": d.key, "a": d.a, "b": d.b, "difference": d.difference,
                              "low": d.low, "high": d.high, "verdict": d.verdict} for d in self.differences],
                            columns=["metric", "key", "a", "b", "difference", "low", "high", "verdict"])

    def values(self) -> pd.DataFrame:
        """One row per metric and model: ``metric, key, model, estimate, low, high``."""
        return pd.DataFrame([{"metric": m.name, "key": m.key, "model": name, "estimate": float(m.estimates[k]),
                              "low": float(m.lows[k]), "high": float(m.highs[k])}
                             for m in self.metrics for k, name in enumerate(self.names)],
                            columns=["metric", "key", "model", "estimate", "low", "high"])

    def sentences(self) -> list[str]:
        """The plain verdict of every metric and pair, in table order."""
        return [d.sentence() for d in self.differences]


def compare_systems(probs_list: Sequence[ArrayLike], labels: ArrayLike, *, names: Sequence[str],
                    keys: Sequence[str] | None = None, kind: str = "classes", n_bins: int = 15,
                    binning: str = "uniform", bandwidth: float | None = None, n_boot: int = 1000, seed: int = 0,
                    alpha: float = 0.05, sample_weight: ArrayLike | None = None) -> SystemsComparison:
    """Compare models on the same rows: each metric's paired differences, their intervals and verdicts.

    Parameters
    ----------
    probs_list : sequence of array_like of shape (N, K)
        One per model, rows already matched (a confidence model's ``[1 - c, c]``).
    labels : array_like of shape (N,) or (M, N)
        The labels shared by every model, or one row per model: confidence
        models answering the same items are each right or wrong on their own.
    names : sequence of str
        One name per model (distinct, for the verdicts to be read).
    keys : sequence of str, optional
        Registry keys (default :data:`CONFIDENCE_SYSTEM_KEYS` for ``kind="confidence"``, else
        :data:`CLASS_SYSTEM_KEYS`); each must be of the models' ``kind``.
    kind : {"classes", "confidence"}
    n_bins, binning, bandwidth : settings of the binned and kernel metrics.
    n_boot, seed, alpha : the paired bootstrap (``n_boot >= 2``) and its ``1 - alpha`` intervals.
    sample_weight : array_like of shape (N,), optional
        One weight per item, shared by every model (:func:`paired_metric`):
        each value is the weighted metric (whole-number weights: the repeated
        items; a metric defined only on repeated rows refuses other weights,
        saying why) and the paired resamples carry the weights.

    Returns
    -------
    SystemsComparison

    Raises
    ------
    CalibrationInputError
        Fewer than two models, not one name per model, a
        metric of the other kind or without a bootstrap interval.

    Notes
    -----
    Paired bootstrap (Efron & Tibshirani 1993, ch. 13): the same resampled
    rows for every model, so the difference's resamples keep the correlation
    between models that answer the same items; intervals as each metric
    declares (percentile, or estimate +- z sd). A difference is called only
    when its interval excludes 0; no correction for the number of pairs.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> c = rng.uniform(0.5, 1.0, 400); y = (rng.uniform(size=400) < c).astype(int)
    >>> honest, over = np.column_stack([1 - c, c]), np.column_stack([0.02 + 0 * c, 0.98 + 0 * c])
    >>> found = compare_systems([honest, over], [y, y], names=["honest", "over"], keys=["conf_ece"],
    ...                         kind="confidence", n_boot=200)
    >>> found.differences[0].better
    'honest'
    """
    if len(probs_list) < 2:
        raise CalibrationInputError(f"comparing systems needs at least two models, got {len(probs_list)}.")
    names = tuple(str(n) for n in names)
    if len(names) != len(probs_list):
        raise CalibrationInputError(f"`names` must give one name per model; got {list(names)} for "
                                    f"{len(probs_list)} models.")
    check_count(n_boot, "n_boot", 2)
    keys = list(keys or (CONFIDENCE_SYSTEM_KEYS if kind == "confidence" else CLASS_SYSTEM_KEYS))
    for key in keys:
        if get_metric(key).kind != kind:
            raise CalibrationInputError(f"metric {key!r} is for {get_metric(key).kind} models, these are {kind} "
                                        "models.")
    labels = np.asarray(labels)
    metrics, differences = [], []
    n_samples = labels.shape[-1]
    for key in keys:
        found = paired_metric(key, probs_list, labels, n_bins=n_bins, binning=binning,
                              bandwidth=bandwidth if get_metric(key).with_bandwidth else None, n_boot=n_boot,
                              seed=seed, alpha=alpha, sample_weight=sample_weight)
        metrics.append(found)
        higher = key in HIGHER_IS_BETTER
        for i, j in itertools.combinations(range(len(names)), 2):
            estimate, low, high = found.difference(i, j)
            better = None
            if low > 0 or high < 0:  # beyond noise: the interval of the difference excludes 0
                better = names[j] if (high < 0) != higher else names[i]
            differences.append(PairedDifference(key, found.name, names[i], names[j], estimate, low, high, higher,
                                                better, float(alpha)))
    return SystemsComparison(names, int(n_samples), int(n_boot), int(seed), float(alpha), tuple(metrics),
                             tuple(differences))
