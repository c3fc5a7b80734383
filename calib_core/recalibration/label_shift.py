"""The deployment's class prevalence, estimated from unlabelled predictions (label shift).

A model evaluated on a labelled test set (the *source*) is deployed where the
classes occur at other rates (the *target*). Under **label shift** - only the
prevalences change, the class-conditional distributions ``p(x | y)`` stay the
same - the target prevalence can be estimated from the model's predictions on
unlabelled target rows alone:

* ``method="em"``: the EM algorithm of Saerens, Latinne & Decaestecker (2002,
  eq. 2.7-2.8), the maximum-likelihood estimate of the target prevalence. It
  assumes the predictions are **calibrated on the source**; Alexandari,
  Kundaje & Shrikumar (2020) show that it is then the best estimator, and that
  the usual deep-network miscalibration must first be removed by bias-corrected
  temperature scaling (temperature plus one bias per class, here
  :class:`calib_core.VectorScaling` is the closest, or any recalibrator fitted
  on the labelled source rows). Pass ``recalibrator=`` (unfitted) to have it
  fitted on the labelled rows and refitted in every bootstrap resample;
  otherwise the predictions are used as they are, and the note says so.
* ``method="bbse"``: black-box shift estimation (Lipton, Wang & Smola 2018,
  eq. 3-4): the confusion matrix of the arg-max predictions on labelled source
  rows, inverted against the arg-max frequencies on the target. It needs
  labelled source rows but not calibration; it is the check on the EM.

Both give a percentile bootstrap interval that resamples the labelled rows too
(the source prevalence, the recalibration and the confusion matrix are
estimated from them); the EM also a calibration check that says when its
interval cannot cover, a test of "no shift"
(black-box shift detection on the predictions, [Rabanser2019]_), the predictions moved to the estimated prevalence
(:func:`calib_core.adjust_prevalence`) and importance weights
``w_y = pi_target_y / pi_source_y`` that re-weight the labelled rows to the
deployment (``sample_weight=`` of every metric).

References
----------
.. [Saerens2002] Saerens, M., Latinne, P. & Decaestecker, C. "Adjusting the
   outputs of a classifier to new a priori probabilities: a simple procedure",
   Neural Computation 14 (2002), 21-41, eq. 2.7-2.8 (EM), section 2.4
   (likelihood-ratio test of a change in the priors).
.. [Lipton2018] Lipton, Z. C., Wang, Y.-X. & Smola, A. J. "Detecting and
   correcting for label shift with black box predictors", ICML 2018, eq. 3-4.
.. [Alexandari2020] Alexandari, A., Kundaje, A. & Shrikumar, A. "Maximum
   likelihood with bias-corrected calibration is hard-to-beat at label shift
   adaptation", ICML 2020.
.. [Garg2020] Garg, S., Wu, Y., Balakrishnan, S. & Lipton, Z. C. "A unified
   view of label shift estimation", NeurIPS 2020: the MLLS (EM) error splits
   into a finite-sample term and a miscalibration term, which does not
   vanish with more unlabelled rows.
.. [Armstrong2020] Armstrong, T. B. & Kolesar, M. "Simple and honest
   confidence intervals in nonparametric regression", Quantitative
   Economics 11 (2020), 1-39: the coverage of an interval whose estimate has
   a bias ``b`` and standard error ``se``, ``Phi(z - b/se) - Phi(-z - b/se)``.
.. [Rabanser2019] Rabanser, S., Guennemann, S. & Lipton, Z. C. "Failing loudly: an empirical
   study of methods for detecting dataset shift", NeurIPS 2019, section 3 (black-box shift
   detection: two-sample tests on the model's outputs; per-dimension Kolmogorov-Smirnov tests with
   a Bonferroni correction).
.. [Efron1993] Efron, B. & Tibshirani, R. "An Introduction to the
   Bootstrap", Chapman & Hall 1993, ch. 13 (percentile interval).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calib_core.inference.resample import index_blocks, row_weights
from calib_core.inference.verdicts import check_alpha
from calib_core.recalibration._base import Recalibrator
from calib_core.recalibration.prevalence import PrevalenceAdjustment, _check_prevalence, adjust_prevalence
from calib_core.validation import (CalibrationInputError, check_choice, check_count, check_labels, check_positive,
                                   check_probs, check_sample_weight, row_argmax)

__all__ = ["PREVALENCE_METHODS", "PrevalenceEstimate", "em_prevalence", "estimate_prevalence"]

#: Methods of :func:`estimate_prevalence`.
PREVALENCE_METHODS = ("em", "bbse")

#: Largest ``resamples x rows x classes`` of one block of bootstrap EM runs.
_EM_BLOCK_CELLS = 4_000_000

_ASSUMPTION = ("label shift: the class prevalences change between the labelled test set and the deployment, "
               "the class-conditional distributions p(x | y) do not")


@dataclass(frozen=True)
class PrevalenceEstimate:
    """The estimated deployment prevalence (:func:`estimate_prevalence`).

    Attributes
    ----------
    prevalence : ndarray of shape (K,)
        The estimated target (deployment) class prevalence.
    ci_low, ci_high : ndarray of shape (K,)
        Percentile bootstrap interval of each class's prevalence (NaN without resamples).
    source_prevalence : ndarray of shape (K,)
        The prevalence the predictions were made for.
    method : {"em", "bbse"}
    n : int
        Unlabelled rows.
    n_boot : int
        Bootstrap resamples (over the unlabelled rows, and over the labelled rows when ``labels`` are given).
    alpha : float
        The intervals cover ``1 - alpha``.
    shift_statistic, shift_p_value : float
        The test of "no shift" (EM only; NaN for BBSE), named by ``shift_test``: with
        ``probs_labelled``, the largest per-class two-sample Kolmogorov-Smirnov statistic between
        the unlabelled and the labelled predictions and its Bonferroni p-value (BBSD, [Rabanser2019]_);
        without them, the likelihood-ratio statistic under the EM model and its chi-square p-value
        on K - 1 degrees of freedom, which does not hold its size (the notes say so).
    iterations : int
        EM iterations of the estimate (0 for BBSE).
    converged : bool
    adjustment : PrevalenceAdjustment or None
        The unlabelled predictions moved to the estimated prevalence
        (:func:`calib_core.adjust_prevalence`); None when a class's estimate is 0.
    assumption : str
        The assumption every number here rests on.
    notes : tuple of str
        What the caller must know (assumed source prevalence, clipped BBSE weights, calibration); the first
        one says so when the interval does not hold.
    em_bias : ndarray of shape (K,)
        The EM's calibration check: the EM on the labelled rows re-weighted to the estimate (label shift by
        construction, so the truth is the estimate) minus the estimate. NaN for BBSE and without
        ``probs_labelled``.
    interval_holds : bool or None
        False when ``em_bias`` is significant and large enough against the interval's spread that the
        interval cannot cover at its stated level (:func:`estimate_prevalence`, Notes); None when
        not checked (BBSE, no labelled predictions, no resamples).
    shift_test : str
        Which test ``shift_statistic`` and ``shift_p_value`` come from ("" when there is none), and,
        for the likelihood-ratio test, that it does not hold its size.
    """

    prevalence: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    source_prevalence: NDArray[np.float64]
    method: str
    n: int
    n_boot: int
    alpha: float
    shift_statistic: float
    shift_p_value: float
    iterations: int
    converged: bool
    adjustment: PrevalenceAdjustment | None
    assumption: str = _ASSUMPTION
    notes: tuple[str, ...] = ()
    em_bias: NDArray[np.float64] | None = None
    interval_holds: bool | None = None
    shift_test: str = ""

    @property
    def class_weights(self) -> NDArray[np.float64]:
        """Importance weights per class, ``w_y = prevalence_y / source_prevalence_y``."""
        return self.prevalence / self.source_prevalence

    def sample_weight(self, labels: ArrayLike) -> NDArray[np.float64]:
        """Importance weights of labelled source rows, ``w[labels]``: they re-weight the test set to the deployment.

        Parameters
        ----------
        labels : array_like of shape (M,)
            Labels of the labelled (source) rows.

        Returns
        -------
        ndarray of shape (M,)
            Pass as ``sample_weight=`` to a metric: a weighted calibration view
            estimates the calibration the model would have at the deployment's
            prevalence (under label shift, without recalibrating for it).
        """
        checked = check_labels(labels, self.prevalence.size)
        return self.class_weights[checked]

    @property
    def shift_detected(self) -> bool | None:
        """Whether the no-shift test rejects at ``alpha`` (None when there is no test)."""
        return None if math.isnan(self.shift_p_value) else bool(self.shift_p_value < self.alpha)

    def sentence(self, class_names: list[str] | None = None) -> str:
        """One plain sentence: the estimate, its interval and the test (no Markdown)."""
        names = class_names or [str(k) for k in range(self.prevalence.size)]
        level = f"{1 - self.alpha:.0%}"
        parts = []
        for k, name in enumerate(names):
            interval = (f" ({level} interval {self.ci_low[k]:.3f} to {self.ci_high[k]:.3f})"
                        if np.isfinite(self.ci_low[k]) else "")
            parts.append(f"{name}: {self.prevalence[k]:.3f}{interval}, test set {self.source_prevalence[k]:.3f}")
        label = "EM (Saerens et al. 2002)" if self.method == "em" else "BBSE (Lipton et al. 2018)"
        text = f"Deployment prevalence by {label} from {self.n:,} unlabelled rows: " + "; ".join(parts) + "."
        if not math.isnan(self.shift_p_value):
            found = "a shift" if self.shift_p_value < self.alpha else "no evidence of a shift"
            text += (f" Test of no shift ({self.shift_test}): statistic {self.shift_statistic:.3g}, "
                     f"p = {self.shift_p_value:.3g}, {found} at alpha = {self.alpha:g}.")
        if self.interval_holds is False:
            text += f" The {level} intervals do not hold: the predictions fail the EM's calibration check."
        return text


def _em_batch(probs: NDArray[np.float64], source: NDArray[np.float64], counts: NDArray[np.float64],
              start: NDArray[np.float64], max_iter: int, tol: float) -> tuple[NDArray[np.float64], int, bool]:
    """EM for a block of row-count vectors at once: ``counts`` (B, N), ``start`` (B, K); the (B, K) estimates.

    ``source`` is one prevalence (K,) or one per replicate (B, K). Each replicate stops as soon as it has
    converged (the others go on), so one slow resample does not keep the whole block iterating.
    """
    prevalence = start.copy()
    active = np.arange(prevalence.shape[0])
    # the replicates still moving, compacted only when one stops (not copied at every iteration)
    current, weights, prior = start, counts, np.broadcast_to(source, start.shape)
    total = weights.sum(axis=1, keepdims=True)
    for iteration in range(1, max_iter + 1):
        ratio = current / prior  # (B, K)
        denominators = probs @ ratio.T  # (N, B): sum_k p_ik pi_k / pi_source_k
        updated = ratio * ((weights / denominators.T) @ probs) / total
        moving = np.abs(updated - current).max(axis=1) >= tol
        prevalence[active] = updated
        if moving.all():
            current = updated
            continue
        active, current, weights, prior, total = (active[moving], updated[moving], weights[moving], prior[moving],
                                                  total[moving])
        if active.size == 0:
            return prevalence, iteration, True
    return prevalence, max_iter, False


def em_prevalence(probs: ArrayLike, source_prevalence: ArrayLike, *, max_iter: int = 1000,
                  tol: float = 1e-8) -> tuple[NDArray[np.float64], int, bool]:
    """The EM estimate of the target prevalence of Saerens et al. (2002).

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predictions on unlabelled target rows, calibrated for ``source_prevalence``.
    source_prevalence : array_like of shape (K,)
    max_iter : int, default 1000
    tol : float, default 1e-8
        Stop when no prevalence moves by more than ``tol`` in one iteration.

    Returns
    -------
    prevalence : ndarray of shape (K,)
    iterations : int
    converged : bool

    Notes
    -----
    Starting from :math:`\\hat\\pi^{(0)} = \\pi^s`, [Saerens2002]_ eq. 2.7-2.8
    alternate

    .. math:: q^{(s)}_{ik} = \\frac{p_{ik}\\,\\hat\\pi^{(s)}_k/\\pi^s_k}{\\sum_j p_{ij}\\,\\hat\\pi^{(s)}_j/\\pi^s_j},
              \\qquad \\hat\\pi^{(s+1)}_k = \\frac1N \\sum_i q^{(s)}_{ik},

    which increases the log-likelihood
    :math:`\\ell(\\pi) = \\sum_i \\log \\sum_k p_{ik}\\,\\pi_k/\\pi^s_k` of the
    unlabelled rows at every step. The posteriors ``q`` at the estimate are
    :func:`calib_core.adjust_prevalence` of ``probs``.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    >>> pi, _, ok = em_prevalence(p, [0.5, 0.5])
    >>> ok, round(float(pi.sum()), 6)
    (True, 1.0)
    """
    probs = check_probs(probs)
    source = _check_prevalence(source_prevalence, probs.shape[1], "source_prevalence")
    max_iter = check_count(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    estimate, iterations, converged = _em_batch(probs, source, np.ones((1, probs.shape[0])), source[None, :],
                                                max_iter, tol)
    return estimate[0], iterations, converged


def _log_likelihood(probs: NDArray[np.float64], source: NDArray[np.float64],
                    prevalence: NDArray[np.float64]) -> float:
    """``sum_i log sum_k p_ik pi_k / pi_source_k`` (0 at ``prevalence = source``)."""
    with np.errstate(divide="ignore"):
        return float(np.log(probs @ (prevalence / source)).sum())


def _bbse(probs_labelled: NDArray[np.float64], labels: NDArray[np.intp], predicted_target: NDArray[np.intp],
          n_classes: int, weights: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], bool]:
    """BBSE estimate and whether negative weights were clipped to 0 (``weights``: the labelled rows' weights)."""
    joint = np.zeros((n_classes, n_classes))
    np.add.at(joint, (row_argmax(probs_labelled), labels), 1.0 if weights is None else weights)
    joint /= labels.size if weights is None else weights.sum()
    target = np.bincount(predicted_target, minlength=n_classes) / predicted_target.size
    try:
        weights = np.linalg.solve(joint, target)
    except np.linalg.LinAlgError:
        raise CalibrationInputError(
            "the confusion matrix of the labelled rows is singular (a class is never predicted or never occurs), "
            "so black-box shift estimation cannot invert it; use method='em'.") from None
    clipped = bool((weights < 0).any())
    prevalence = np.clip(weights, 0.0, None) * joint.sum(axis=0)
    return prevalence / prevalence.sum(), clipped


def _frequencies(labels: NDArray[np.intp], weights: NDArray[np.float64] | None,
                 n_classes: int) -> NDArray[np.float64]:
    """The class frequencies of ``labels``, as shares of the summed ``weights`` when given."""
    if weights is None:
        return np.bincount(labels, minlength=n_classes) / labels.size
    return np.bincount(labels, weights=weights, minlength=n_classes) / weights.sum()


def _labelled(probs_labelled: ArrayLike | None, labels: ArrayLike | None,
              n_classes: int) -> tuple[NDArray[np.float64] | None, NDArray[np.intp] | None]:
    if labels is None:
        if probs_labelled is not None:
            raise CalibrationInputError("`probs_labelled` needs its `labels`.")
        return None, None
    checked_probs = None
    if probs_labelled is not None:
        checked_probs = check_probs(probs_labelled, name="probs_labelled")
        if checked_probs.shape[1] != n_classes:
            raise CalibrationInputError(f"`probs_labelled` has {checked_probs.shape[1]} classes, "
                                        f"`probs_unlabelled` {n_classes}.")
    checked = check_labels(labels, n_classes, n_rows=None if checked_probs is None else checked_probs.shape[0])
    return checked_probs, checked


def _em_and_check(probs: NDArray[np.float64], probs_labelled: NDArray[np.float64] | None, onehot: NDArray[np.float64],
                  source: NDArray[np.float64] | None, counts: NDArray[np.float64], counts_labelled: NDArray[np.float64],
                  start: NDArray[np.float64], max_iter: int,
                  tol: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """EM estimates and calibration checks of a block of joint resamples (B rows of counts each).

    ``counts`` (B, N) weigh the unlabelled rows, ``counts_labelled`` (B, M) the labelled rows; ``source``
    None takes each resample's source prevalence from its labels. Returns the (B, K) estimates, the
    (B, 2, K) checks and which resamples are usable (every class among their labels). A check is the EM
    on the labelled rows re-weighted by class to a known prevalence (label shift by construction) minus
    that prevalence: ``[:, 0]`` at the estimate, ``[:, 1]`` at the labels' own frequencies (no shift); NaN
    without ``probs_labelled``.
    """
    frequencies = counts_labelled @ onehot / counts_labelled.sum(axis=1, keepdims=True)
    usable = (frequencies > 0).all(axis=1)
    frequencies, counts, counts_labelled, start = (frequencies[usable], counts[usable], counts_labelled[usable],
                                                   start[usable])
    prior = frequencies if source is None else source
    if not usable.any():
        return start[usable], np.full((0, 2, start.shape[1]), np.nan), usable
    estimates, _, _ = _em_batch(probs, prior, counts, start, max_iter, tol)
    checks = np.full((estimates.shape[0], 2, estimates.shape[1]), np.nan)
    if probs_labelled is not None and estimates.size:
        shifted = counts_labelled * ((estimates / frequencies) @ onehot.T)  # label shift to the estimate
        checks[:, 0] = _em_batch(probs_labelled, prior, shifted, estimates, max_iter, tol)[0] - estimates
        checks[:, 1] = _em_batch(probs_labelled, prior, counts_labelled, frequencies, max_iter, tol)[0] - frequencies
    return estimates, checks, usable


def _interval_holds(draws: NDArray[np.float64], checks: NDArray[np.float64], bias: NDArray[np.float64],
                    alpha: float) -> tuple[bool | None, NDArray[np.float64]]:
    """Whether the EM interval can hold its level given the calibration checks, and its coverage at each bias.

    ``bias`` (2, K) and ``checks`` (R, 2, K) as :func:`_em_and_check` returns them. A check fails when it
    is significant (``|b| / sd`` beyond the normal quantile of ``1 - alpha / (2 m)``, Bonferroni over the
    ``m = 2 K`` checks, ``sd`` their spread over the resamples, so a calibrated model is flagged in at
    most ``alpha`` of data sets) and the coverage a
    ``1 - alpha`` interval of standard error ``se`` (the spread of ``draws``) has at a bias ``b``,
    :math:`\\Phi(z - |b|/se) - \\Phi(-z - |b|/se)` ([Armstrong2020]_), is below ``1 - 2 alpha``.
    """
    coverage = np.full(bias.shape, np.nan)
    if draws.shape[0] < 2 or not np.isfinite(bias).all() or not np.isfinite(checks).all():
        return None, coverage
    z = stats.norm.ppf(1 - alpha / 2)
    spread = draws.std(axis=0, ddof=1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(spread > 0, np.abs(bias) / spread, np.where(bias == 0, 0.0, np.inf))
    coverage = stats.norm.cdf(z - ratio) - stats.norm.cdf(-z - ratio)
    noise = checks.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        significant = np.abs(bias) > stats.norm.ppf(1 - alpha / (2 * bias.size)) * noise
    return not bool((significant & (coverage < 1 - 2 * alpha)).any()), coverage


def _percentiles(draws: NDArray[np.float64], alpha: float, n_classes: int) -> tuple[NDArray, NDArray]:
    if draws.shape[0] == 0:
        return np.full(n_classes, np.nan), np.full(n_classes, np.nan)
    return np.quantile(draws, alpha / 2, axis=0), np.quantile(draws, 1 - alpha / 2, axis=0)


#: Names of the no-shift tests (``PrevalenceEstimate.shift_test``), shown on every surface.
_SHIFT_TEST_MEANS = ("black-box shift detection of Rabanser et al. 2019: per-class Welch t-test of the mean "
                    "predicted probability, unlabelled vs labelled rows, Bonferroni")
_SHIFT_TEST_LR = ("likelihood ratio under the EM model of Saerens et al. 2002, section 2.4, chi-square with K - 1 "
                 "degrees of freedom; it does not hold its size")

_LR_NOT_HELD = ("The no-shift test is the likelihood-ratio test of Saerens et al. (2002): it holds the source "
                "prevalence as exact and the predictions as calibrated, so it does not hold its size when either "
                "is estimated or wrong (on real demos it rejected 20-60% of samples without shift at 0.05) and "
                "its 'shift' is not established. Give `probs_labelled` (the test set's predictions) for a test "
                "that holds its size.")


def _shift_means(probs: NDArray[np.float64], probs_labelled: NDArray[np.float64],
                 weights: NDArray[np.float64] | None = None) -> tuple[float, float]:
    """Black-box shift detection ([Rabanser2019]_): the largest per-class Welch |t| and its Bonferroni p.

    The K columns sum to 1, so a binary model has one test (class 1), K > 2 classes have K. A class whose
    predictions are constant in both sets has no test; NaN when no class has one (e.g. a single row).
    ``weights`` (the labelled rows'): the labelled mean and variance are weighted and the labelled sample
    counts Kish's effective size ``(sum w)^2 / sum w^2`` (:func:`estimate_prevalence`, Notes).
    """
    columns = slice(1, 2) if probs.shape[1] == 2 else slice(None)
    with np.errstate(divide="ignore", invalid="ignore"):
        if weights is None:
            found = stats.ttest_ind(probs[:, columns], probs_labelled[:, columns], axis=0, equal_var=False)
        else:
            total, squares = weights.sum(), np.square(weights).sum()
            mean = weights @ probs_labelled[:, columns] / total
            # reliability-weighted variance: unbiased for i.i.d. rows, invariant to the weights' scale
            variance = weights @ np.square(probs_labelled[:, columns] - mean) / (total - squares / total)
            found = stats.ttest_ind_from_stats(probs[:, columns].mean(axis=0), probs[:, columns].std(axis=0, ddof=1),
                                               probs.shape[0], mean, np.sqrt(variance), total ** 2 / squares,
                                               equal_var=False)
    statistic, p_values = np.abs(np.atleast_1d(found.statistic)), np.atleast_1d(found.pvalue)
    tested = np.isfinite(p_values)
    if not tested.any():
        return math.nan, math.nan
    return float(statistic[tested].max()), float(min(1.0, p_values[tested].min() * p_values.size))


_NOT_HELD = ("The EM interval does not hold its {level:.0%} here: {where}, the labelled rows give an EM error of "
             "{bias:+.3g} for class {k}, a bias that leaves the interval covering about "
             "{coverage:.0%} (the predictions are not calibrated where the deployment puts its weight: the "
             "EM's assumption fails). Read the BBSE estimate, or recalibrate (`recalibrator=`).")

_TEST_VS_INTERVAL = ("The likelihood-ratio test finds a shift, but every class's {level:.0%} interval, which carries "
                     "the noise of the labelled rows, contains the test set's prevalence: the test holds that "
                     "prevalence fixed and rejects too often when it comes from a labelled sample, so the shift "
                     "is not established.")


def _weighted(weights: NDArray[np.float64] | None) -> dict:
    """``sample_weight=`` of a recalibrator's fit, only when there are weights (a fit called as before without)."""
    return {} if weights is None else {"sample_weight": weights}


@dataclass(frozen=True)
class _EMRun:
    probs: NDArray[np.float64]  # the unlabelled predictions the EM ran on (recalibrated when asked)
    estimate: NDArray[np.float64]
    iterations: int
    converged: bool
    draws: NDArray[np.float64]  # (R, K) bootstrap estimates
    checks: NDArray[np.float64]  # (R, 2, K) calibration checks of the resamples
    bias: NDArray[np.float64]  # (2, K) calibration checks of the data (at the estimate, without shift)
    notes: tuple[str, ...]


def _em_run(probs: NDArray[np.float64], probs_labelled: NDArray[np.float64] | None,
            labels: NDArray[np.intp] | None, given_source: NDArray[np.float64] | None, source: NDArray[np.float64],
            recalibrator: Recalibrator | None, n_boot: int, rng: np.random.Generator, max_iter: int,
            tol: float, weights: NDArray[np.float64] | None = None) -> _EMRun:
    """The EM estimate, its calibration check and the joint bootstrap (see :func:`estimate_prevalence`).

    ``weights``: the labelled rows' (all positive); each resample carries the weights of the rows it draws.
    """
    n_rows, n_classes = probs.shape
    notes = ["The EM assumes the predictions are calibrated on the labelled test set; recalibrate them first "
             "(Alexandari et al. 2020: bias-corrected temperature scaling), or the estimate absorbs the "
             "miscalibration as a shift (the no-shift test with labelled predictions does not need calibration)."]
    raw, raw_labelled = probs, probs_labelled
    if recalibrator is not None:
        fitted = copy.deepcopy(recalibrator).fit(probs_labelled, labels, **_weighted(weights))
        probs, probs_labelled = fitted.predict_proba(raw), fitted.predict_proba(raw_labelled)
        notes[0] = (f"The predictions were recalibrated by {type(recalibrator).__name__} fitted on the labelled rows "
                    "(refitted in every resample) before the EM (Alexandari et al. 2020).")
    estimate, iterations, converged = em_prevalence(probs, source, max_iter=max_iter, tol=tol)
    if not converged:
        notes.append(f"The EM did not converge in {max_iter} iterations: read the estimate with care.")
    if labels is not None and np.bincount(labels, minlength=n_classes).min() == 0:
        notes.append("The labelled rows lack a class, so they are not resampled and the EM's calibration is not "
                     "checked.")
        labels = None
    if labels is None:
        draws = []
        for block in range(0, n_boot, max(1, _EM_BLOCK_CELLS // (n_rows * n_classes))):
            count = min(max(1, _EM_BLOCK_CELLS // (n_rows * n_classes)), n_boot - block)
            for _, _, indices in index_blocks(rng, n_rows, count):
                counts = row_weights(indices, n_rows)[:, :n_rows].astype(np.float64)
                draws.append(_em_batch(probs, source, counts, np.repeat(estimate[None, :], len(counts), axis=0),
                                       max_iter, tol)[0])
        notes.append("The interval resamples the unlabelled rows only: it holds the source prevalence and the "
                     "predictions' calibration fixed, and is too narrow when they are themselves estimated.")
        stacked = np.concatenate(draws) if draws else np.empty((0, n_classes))
        return _EMRun(probs, estimate, iterations, converged, stacked,
                      np.full((stacked.shape[0], 2, n_classes), np.nan), np.full((2, n_classes), np.nan), tuple(notes))
    onehot = np.eye(n_classes)[labels]
    n_labelled = labels.size
    unit = np.ones(n_labelled) if weights is None else weights
    _, bias, _ = _em_and_check(probs, probs_labelled, onehot, given_source, np.ones((1, n_rows)),
                               unit[None, :], estimate[None, :], max_iter, tol)
    draws, checks, used = [], [], 0
    per_block = 1 if recalibrator is not None else max(1, _EM_BLOCK_CELLS // (max(n_rows, n_labelled) * n_classes))
    for block in range(0, n_boot, per_block):
        count = min(per_block, n_boot - block)
        counts = row_weights(rng.integers(0, n_rows, (count, n_rows)), n_rows)[:, :n_rows].astype(np.float64)
        labelled_rows = rng.integers(0, n_labelled, (count, n_labelled))
        counts_labelled = row_weights(labelled_rows, n_labelled)[:, :n_labelled] * unit
        resampled, resampled_labelled = probs, probs_labelled
        if recalibrator is not None:
            try:
                refitted = copy.deepcopy(recalibrator).fit(
                    raw_labelled[labelled_rows[0]], labels[labelled_rows[0]],
                    **_weighted(None if weights is None else weights[labelled_rows[0]]))
            except CalibrationInputError:  # e.g. a resample without some class
                continue
            resampled, resampled_labelled = refitted.predict_proba(raw), refitted.predict_proba(raw_labelled)
        found, check, usable = _em_and_check(resampled, resampled_labelled, onehot, given_source, counts,
                                             counts_labelled, np.repeat(estimate[None, :], count, axis=0),
                                             max_iter, tol)
        draws.append(found)
        checks.append(check)
        used += int(usable.sum())
    if used < n_boot:
        notes.append(f"{n_boot - used} of {n_boot} resamples lacked a class among their labelled rows and were "
                     "left out of the interval.")
    stacked = np.concatenate(draws) if draws else np.empty((0, n_classes))
    return _EMRun(probs, estimate, iterations, converged, stacked,
                  np.concatenate(checks) if checks else np.empty((0, 2, n_classes)), bias[0], tuple(notes))


def estimate_prevalence(probs_unlabelled: ArrayLike, source_prevalence: ArrayLike | None = None,
                        method: str = "em", *, probs_labelled: ArrayLike | None = None,
                        labels: ArrayLike | None = None, n_boot: int = 200, alpha: float = 0.05,
                        seed: int | None = 0, max_iter: int = 1000, tol: float = 1e-8,
                        recalibrator: Recalibrator | None = None,
                        sample_weight: ArrayLike | None = None) -> PrevalenceEstimate:
    """Estimate the class prevalence of a deployment from the model's predictions on its unlabelled rows.

    Parameters
    ----------
    probs_unlabelled : array_like of shape (N, K)
        Predictions on the deployment's rows (no labels).
    source_prevalence : float or array_like of shape (K,), optional
        The prevalence the predictions are calibrated for (binary: P(class 1)
        may be a single number). Default: the class frequencies of ``labels``
        when given, else uniform (1/K), which the notes then say.
    method : {"em", "bbse"}, default "em"
        See the module docstring: the EM needs calibrated predictions, BBSE
        needs ``probs_labelled`` and ``labels``.
    probs_labelled : array_like of shape (M, K), optional
        Predictions on labelled source rows (the test set): BBSE's confusion matrix.
    labels : array_like of shape (M,), optional
        Their labels; their frequencies are the source prevalence unless it is given.
    n_boot : int, default 200
        Bootstrap resamples of the interval (0: none).
    alpha : float, default 0.05
    seed : int, optional
        Seeds the resamples.
    max_iter, tol :
        EM stopping rule (:func:`em_prevalence`).
    recalibrator : Recalibrator, optional
        An unfitted recalibrator (e.g. ``TemperatureScaling(input="probs")``), EM only: fitted on
        ``probs_labelled`` and ``labels`` and applied to both sets before the EM
        ([Alexandari2020]_), refitted on every bootstrap resample of the labelled rows (each refit
        costs one fit). The object passed is not modified.
    sample_weight : array_like of shape (M,), optional
        Non-negative weights of the labelled rows (``labels`` needed); a row of weight 0 is left out.
        They weight everything the labelled rows give: the source prevalence (weighted class
        frequencies), the recalibrator's fit, BBSE's confusion matrix, the calibration check and the
        test of no shift (Notes). The unlabelled rows count one each.

    Returns
    -------
    PrevalenceEstimate
        ``prevalence``, ``ci_low``, ``ci_high`` (K,), the no-shift test, the
        adjusted predictions and the importance weights.

    Raises
    ------
    CalibrationInputError
        Invalid inputs; BBSE without labelled rows or with a singular
        confusion matrix; a source prevalence outside (0, 1).

    Notes
    -----
    **Interval** ([Efron1993]_ ch. 13). A percentile bootstrap; each resample
    draws the unlabelled rows (multinomial row counts, its EM started at the
    estimate) and, when ``labels`` are given, the labelled rows too: their
    frequencies are that resample's source prevalence (unless
    ``source_prevalence`` is given), ``recalibrator`` is refitted on them,
    BBSE's confusion matrix is recomputed. The EM amplifies an error in the
    source prevalence or in the calibration by the inverse of its slope, so
    on a weak model the former bootstrap over the unlabelled rows alone
    covered 0.60-0.93 for a nominal 0.95 (now 0.93-1.00); bench/bench_prevalence.py and
    tests/recalibration/test_label_shift.py measure the coverage
    (docs/decisions.md). Without labelled rows only the unlabelled rows are
    resampled, and a note says the interval is then too narrow.

    **Calibration check** (EM with ``probs_labelled``). Under label shift the
    deployment is the labelled set re-weighted by class,
    :math:`w_y = \\pi_y / f_y` (``f`` the labels' frequencies), so the EM on
    the labelled rows so weighted must return :math:`\\pi`; its error
    ``b`` there is the EM's bias from miscalibration at that prevalence (the
    miscalibration term of [Garg2020]_). It is computed at the estimate
    (``em_bias``) and at :math:`\\pi = f` (no shift), in the data and in every
    resample. ``interval_holds`` is False when a check is significant
    (:math:`|b| / sd_b` beyond the normal quantile of :math:`1 - \\alpha / (4K)`,
    Bonferroni over the 2K checks) and the coverage of an interval with the
    bootstrap's standard error ``se`` at that bias ([Armstrong2020]_),
    :math:`\\Phi(z - |b|/se) - \\Phi(-z - |b|/se)`, is below :math:`1 - 2\\alpha`;
    the first note then says which class and about what coverage. The check
    uses the labelled rows in-sample: predictions recalibrated on those same
    rows outside this function pass it too easily (use ``recalibrator``).

    **Test of no shift** (EM; ``shift_test`` names the one used). With
    ``probs_labelled``: black-box shift detection ([Rabanser2019]_ section 3),
    a two-sample test on the model's outputs: for each class, Welch's t-test
    of the mean predicted probability on the unlabelled rows against the
    labelled rows (each mean with its own sample's variance; one test, class 1,
    for a binary model, K tests for K > 2), the statistic the largest
    :math:`|t|` and the p-value the smallest times the number of tests
    (Bonferroni). Under label shift ``p(x | y)`` is fixed, so the mean
    prediction is :math:`\\sum_y \\pi_y\\,\\mu_y` (``mu_y`` the mean prediction
    on class ``y``): no change of prevalence means no change in it, whatever
    the calibration. So the test needs neither calibrated predictions nor an
    exact source prevalence, only both sets drawn independently, and holds
    its size (at most ``alpha`` up to the t approximation; Bonferroni makes it
    conservative for K > 2). It is the mean-difference variant of the paper's
    per-dimension tests (they use Kolmogorov-Smirnov): a change of prevalence
    moves the mean, and the mean test found it more often than KS in our
    simulations. It tests the predictions as given (before ``recalibrator``,
    a fixed map that would not change the answer) against the labelled rows:
    a ``source_prevalence`` given apart from their frequencies does not enter
    it. A model whose predictions barely move with the class gives it little
    power. bench/bench_prevalence.py measures its size and power
    (docs/decisions.md).

    Without ``probs_labelled``: the likelihood-ratio test of [Saerens2002]_
    section 2.4, :math:`2\\,[\\ell(\\hat\\pi) - \\ell(\\pi^s)] = 2\\,\\ell(\\hat\\pi)`
    (the log-likelihood of :func:`em_prevalence` is 0 at the source
    prevalence) against chi-square on K - 1 degrees of freedom. It treats the
    source prevalence as exact and the predictions as calibrated: an
    estimated source prevalence or a miscalibration looks like a shift to it,
    so it does not hold its size (20-60 % rejections without shift on the
    bench's demos with the prevalence from 50 % of their rows) and a note
    says so; ``shift_test`` says so too.

    **Row weights** (``sample_weight``). Weighted, the labelled rows stand
    for a sample in which row ``i`` occurs ``w_i`` times: the source
    prevalence is :math:`f_y = \\sum_{i: y_i = y} w_i / \\sum_i w_i`, the
    recalibrator is fitted with ``sample_weight=``, BBSE's
    :math:`\\hat C_{ij}` are shares of summed weight, and the calibration
    check re-weights row ``i`` by :math:`w_i\\,\\pi_{y_i} / f_{y_i}`. So integer
    weights give the estimate, the source prevalence, the calibration check
    (``em_bias``) and BBSE of the rows repeated that many times (a
    recalibrator's fit too when its weighted fit equals repeated rows). Two
    parts cannot: the bootstrap draws the labelled rows of positive weight
    with replacement and carries their weights (the weighted bootstrap of
    :func:`calib_core.bootstrap_ci`): a row repeated ``w`` times would be
    drawn as ``w`` independent rows, which claims ``w`` times the information
    the row holds. The no-shift test weights the labelled mean and variance
    (the reliability-weighted variance
    :math:`\\sum_i w_i (p_i - \\bar p_w)^2 / (V_1 - V_2 / V_1)`, with
    :math:`V_1 = \\sum w_i`, :math:`V_2 = \\sum w_i^2`) and counts Kish's
    effective sample size :math:`n_{eff} = V_1^2 / V_2` of labelled rows in the
    standard error and Welch's degrees of freedom, not :math:`V_1`: weights
    that only repeat rows would otherwise shrink the standard error as if
    the repeats were new rows. Unit weights give the unweighted test.

    **BBSE** ([Lipton2018]_ eq. 3-4): with :math:`\\hat C_{ij}` the share of
    labelled rows predicted ``i`` with label ``j`` and :math:`\\hat\\mu_i`
    the share of unlabelled rows predicted ``i``,
    :math:`\\hat w = \\hat C^{-1}\\hat\\mu` and
    :math:`\\hat\\pi_j = \\hat w_j \\pi^s_j`. Negative weights (sampling noise)
    are set to 0 and the prevalence renormalised; the notes say when.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    >>> est = estimate_prevalence(p, [0.5, 0.5], n_boot=0)
    >>> est.prevalence.shape, bool(est.prevalence[0] > 0.5)
    ((2,), True)
    """
    probs = check_probs(probs_unlabelled, name="probs_unlabelled")
    n_rows, n_classes = probs.shape
    method = check_choice(method, "method", PREVALENCE_METHODS)
    n_boot = check_count(n_boot, "n_boot", 0)
    alpha = check_alpha(alpha)
    probs_labelled, checked_labels = _labelled(probs_labelled, labels, n_classes)
    weights = None
    if sample_weight is not None:
        if checked_labels is None:
            raise CalibrationInputError("`sample_weight` weighs the labelled rows: it needs `labels`.")
        weights = check_sample_weight(sample_weight, checked_labels.size)
        keep = weights > 0  # a row of weight 0 is in no estimate, so it is not drawn either (bootstrap_ci)
        checked_labels, weights = checked_labels[keep], weights[keep]
        probs_labelled = None if probs_labelled is None else probs_labelled[keep]
    if recalibrator is not None and (method != "em" or probs_labelled is None):
        raise CalibrationInputError("`recalibrator` is fitted on `probs_labelled` and `labels` before the EM: it "
                                    "needs both, and method='em' (BBSE does not need calibrated predictions).")
    notes: list[str] = []
    if source_prevalence is not None:
        source = _check_prevalence(source_prevalence, n_classes, "source_prevalence")
    elif checked_labels is not None:
        source = _check_prevalence(_frequencies(checked_labels, weights, n_classes), n_classes,
                                   "the class frequencies of `labels`")
    else:
        source = np.full(n_classes, 1.0 / n_classes)
        notes.append("No source prevalence was given: the predictions are assumed to be made for equal class "
                     "prevalences (1/K each). Give the test set's labels or its prevalence.")
    rng = np.random.default_rng(seed)
    nan = math.nan
    bias = np.full(n_classes, nan)
    holds: bool | None = None
    if method == "em":
        given = probs
        run = _em_run(probs, probs_labelled, checked_labels, None if source_prevalence is None else source,
                      source, recalibrator, n_boot, rng, max_iter, tol, weights)
        probs, estimate, iterations, converged = run.probs, run.estimate, run.iterations, run.converged
        bias = run.bias[0]
        notes.extend(run.notes)
        if probs_labelled is not None:  # the predictions as given (before any recalibrator), both sets
            shift_test = _SHIFT_TEST_MEANS
            statistic, p_value = _shift_means(given, probs_labelled, weights)
            if math.isnan(p_value):
                notes.append("The no-shift test needs at least two rows in each set and predictions that vary: "
                             "there is no test here.")
        else:
            shift_test = _SHIFT_TEST_LR
            statistic = max(2.0 * _log_likelihood(probs, source, estimate), 0.0)
            p_value = float(stats.chi2.sf(statistic, n_classes - 1))
            notes.append(_LR_NOT_HELD)
        draws = [run.draws]
        holds, coverage = _interval_holds(run.draws, run.checks, run.bias, alpha)
        if holds is False:
            point, worst = np.unravel_index(int(np.nanargmin(coverage)), coverage.shape)
            where = "re-weighted to the estimate" if point == 0 else "at their own prevalence (no shift)"
            notes.insert(0, _NOT_HELD.format(level=1 - alpha, where=where, k=worst, bias=run.bias[point, worst],
                                             coverage=max(coverage[point, worst], 0.0)))
        low, high = _percentiles(run.draws, alpha, n_classes)
        if (shift_test == _SHIFT_TEST_LR and checked_labels is not None and p_value < alpha
                and run.draws.shape[0] > 0 and ((low <= source) & (source <= high)).all()):
            notes.append(_TEST_VS_INTERVAL.format(level=1 - alpha))
    else:
        if probs_labelled is None or checked_labels is None:
            raise CalibrationInputError("method='bbse' needs `probs_labelled` and `labels` (labelled test-set rows "
                                        "for the confusion matrix).")
        label_freq = _frequencies(checked_labels, weights, n_classes)
        if source_prevalence is not None and not np.allclose(source, label_freq, atol=1e-6):
            raise CalibrationInputError("method='bbse' takes the source prevalence from `labels`; the "
                                        f"`source_prevalence` given ({source.tolist()}) differs from it.")
        source = _check_prevalence(label_freq, n_classes, "the class frequencies of `labels`")
        predicted = row_argmax(probs)
        estimate, clipped = _bbse(probs_labelled, checked_labels, predicted, n_classes, weights)
        if clipped:
            notes.append("Some BBSE weights were negative (sampling noise in the confusion matrix) and were set "
                         "to 0 before renormalising.")
        statistic = p_value = nan
        shift_test = ""
        iterations, converged = 0, True
        draws = []
        for _ in range(n_boot):
            rows = rng.integers(0, checked_labels.size, checked_labels.size)
            target_rows = rng.integers(0, n_rows, n_rows)
            try:
                draws.append(_bbse(probs_labelled[rows], checked_labels[rows], predicted[target_rows],
                                   n_classes, None if weights is None else weights[rows])[0][None, :])
            except CalibrationInputError:  # a resample without some class: that resample has no estimate
                continue
        if n_boot and len(draws) < n_boot:
            notes.append(f"{n_boot - len(draws)} of {n_boot} resamples had a singular confusion matrix and were "
                         "left out of the interval.")
    stacked = np.concatenate(draws) if draws else np.empty((0, n_classes))
    low, high = _percentiles(stacked, alpha, n_classes)
    adjustment = None
    if (estimate > 0).all() and (estimate < 1).all():
        adjustment = adjust_prevalence(probs, estimate, source_prevalence=source)
    else:
        notes.append("A class's estimated prevalence is 0, so the predictions are not moved to it.")
    return PrevalenceEstimate(estimate, low, high, source, method, n_rows, n_boot, alpha, float(statistic),
                              float(p_value), iterations, converged, adjustment, _ASSUMPTION, tuple(notes), bias,
                              holds, shift_test)
