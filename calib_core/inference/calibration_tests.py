"""Calibration tests: a p-value for "is this miscalibration real, or noise?".

:func:`calibration_test` runs one of four tests of the null hypothesis that
the model is calibrated and reads its p-value with the package's single
verdict rule (:func:`calib_core.inference.verdicts.read_test`, the same rule as
:attr:`calib_core.ConsistencyResult.verdict`):

``"consistency"``
    Consistency resampling of any calibration estimator (Vaicenavicius et
    al. 2019, Section 4.2): labels drawn from the predictions themselves
    give the estimator's distribution under perfect calibration. Default
    estimator: the top-label ECE with 15 uniform bins.
``"skce"``
    The squared kernel calibration error test of Widmann, Lindsten &
    Zachariah (2019) on blocks of rows: the mean over disjoint random blocks
    of ceil(sqrt(N)) rows (at most 100) of the unbiased SKCE U-statistic,
    with a normal null whose variance is the exact variance under
    calibration (default, O(N sqrt(N) K)), or a consistency-resampled null
    (``null="resampled"``). ``block_rows=2`` is their linear-time test,
    ``block_rows=N`` with ``null="resampled"`` their quadratic one.
``"hosmer_lemeshow"``
    Hosmer & Lemeshow (1980): 10 groups by deciles of predicted risk,
    chi-square with g - 2 degrees of freedom (``dof_offset=0``: g, for
    predictions not fitted on these data; g - 2 then rejects too often).
``"spiegelhalter"``
    Spiegelhalter (1986): a standardised Brier-score test, two-sided normal.

The last two are binary tests. A binary problem is tested on P(class 1);
with K > 2 classes each class is tested one-vs-rest and the K p-values
are combined by Holm's step-down method (the combined p-value is the
smallest Holm-adjusted p-value, which equals the Bonferroni bound
``min(1, K * min_k p_k)``).

References
----------
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schon, T. B. "Evaluating model calibration in classification",
   AISTATS 2019. Section 4.2 (consistency resampling), eq. (6).
.. [Widmann2019] Widmann, D., Lindsten, F. & Zachariah, D. "Calibration tests in
   multi-class classification: A unifying framework", NeurIPS 2019. Section 3
   (SKCE, its unbiased quadratic and linear estimators), Section 4 (calibration
   tests: asymptotic normality of the linear estimator, consistency
   resampling of the quadratic one).
.. [HosmerLemeshow1980] Hosmer, D. W. & Lemeshow, S. "Goodness of fit tests for the
   multiple logistic regression model", Communications in Statistics - Theory
   and Methods 9(10), 1980; Hosmer, Lemeshow & Sturdivant, *Applied Logistic
   Regression*, 3rd ed. 2013, Section 5.2.2, eq. (5.10).
.. [Spiegelhalter1986] Spiegelhalter, D. J. "Probabilistic prediction in patient
   management and clinical trials", Statistics in Medicine 5(5), 1986,
   eq. (6)-(8) (the standardised Brier score).
.. [Holm1979] Holm, S. "A simple sequentially rejective multiple test procedure",
   Scandinavian Journal of Statistics 6(2), 1979.
.. [Zaremba2013] Zaremba, W., Gretton, A. & Blaschko, M. "B-test: A non-parametric, low variance kernel
   two-sample test", NeurIPS 2013: the mean of block MMD U-statistics, normal as the number of blocks
   grows, blocks growing with N (sqrt(N) balances block size and block count).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calib_core.display import compact_display
from calib_core.binning import bin_statistics, classwise_bin_statistics
from calib_core.inference.consistency import CanonicalCE, ConsistencyResult, consistency_resampling
from calib_core.inference.skce_estimators import (BlockSKCE, UnbiasedSKCE, block_rows_default, skce_bandwidth,
                                                  skce_block_groups, skce_block_statistics)
from calib_core.validation import (CalibrationInputError, check_choice, check_count, named_rng,
                                   check_sample_weight, repeat_rows, repeated_probs_labels, row_blocks)
from calib_core.inference.verdicts import DEFAULT_ALPHA, check_alpha, read_test

__all__ = ["TEST_METHODS", "BlockSKCE", "CalibrationTestResult", "UnbiasedSKCE", "calibration_test", "holm_adjust",
           "hosmer_lemeshow", "spiegelhalter_z"]

#: The methods of :func:`calibration_test`.
TEST_METHODS = ("consistency", "skce", "hosmer_lemeshow", "spiegelhalter")

#: Null distributions of the SKCE test.
SKCE_NULLS = ("asymptotic", "resampled")

#: The SKCE test states its power against a model whose labels are uniformly random on this share of the rows
#: (the issue's "clearly miscalibrated" case: a third, ECE 0.12 at N = 6,000, K = 4).
SKCE_REFERENCE_SHARE = 1.0 / 3.0
_SKCE_REFERENCE = "a model whose labels are uniformly random on a third of the rows"



Seed = int | np.random.Generator | None


@compact_display
@dataclass(frozen=True)
class CalibrationTestResult:
    """Outcome of :func:`calibration_test`.

    Attributes
    ----------
    method : str
        One of :data:`TEST_METHODS`.
    statistic : float
        The test statistic: the estimator's value (``"consistency"``), the
        SKCE estimate (``"skce"``), the chi-square statistic
        (``"hosmer_lemeshow"``) or Z (``"spiegelhalter"``). One-vs-rest
        (K > 2): the statistic of the class with the smallest p-value.
    p_value : float
        Small values are evidence of miscalibration. One-vs-rest: the
        smallest Holm-adjusted p-value of the classes.
    null_distribution : str
        How the p-value was obtained (distribution and its parameters).
    verdict : str
        ``"miscalibrated"``, ``"consistent"`` or ``"inconclusive"``
        (:func:`calib_core.inference.verdicts.read_test`).
    verdict_reason : str
        One or two sentences saying why.
    alpha : float
        Significance level of the verdict.
    n_samples : int
        Rows tested.
    reference : str
        Paper and equation of the test.
    classes : tuple of int
        Classes tested one-vs-rest (``(1,)`` for a binary problem, ``0..K-1``
        otherwise); empty for the multi-class tests (consistency, SKCE).
    class_statistics, class_p_values, class_adjusted_p_values : ndarray of shape (len(classes),)
        Per-class statistic, raw p-value and Holm-adjusted p-value (NaN for
        a class the test cannot be computed on, which is left out of the
        adjustment).
    class_dof : ndarray of shape (len(classes),)
        Hosmer-Lemeshow degrees of freedom per class (groups formed - 2);
        empty for the other methods.
    std_error : float
        SKCE: the standard deviation of the estimate under calibration
        (exact, from the predictions); NaN for the other methods.
    bandwidth : float
        SKCE kernel bandwidth; NaN for the other methods.
    consistency : ConsistencyResult or None
        The resampled null of ``"consistency"`` and of ``"skce"`` with
        ``null="resampled"`` (band, resampled values, cell occupancy).
    block_rows : int
        SKCE: rows per block (blocks hold this many rows or one more); 0 for
        the other methods.
    power : float
        SKCE: the test's power at ``alpha`` against a model whose labels are
        uniformly random on a third of the rows (normal approximation with
        the null variance); below :data:`calib_core.inference.verdicts.MIN_POWER`
        a non-rejection reads "inconclusive". NaN for the other methods.
    """

    method: str
    statistic: float
    p_value: float
    null_distribution: str
    verdict: str
    verdict_reason: str
    alpha: float
    n_samples: int
    reference: str
    classes: tuple[int, ...] = ()
    class_statistics: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    class_p_values: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    class_adjusted_p_values: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    class_dof: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    std_error: float = float("nan")
    bandwidth: float = float("nan")
    consistency: ConsistencyResult | None = None
    block_rows: int = 0
    power: float = float("nan")


# ----------------------------------------------------------------------------
# Multiple testing
# ----------------------------------------------------------------------------

def holm_adjust(p_values: ArrayLike) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values (NaN entries stay NaN and do not count).

    Parameters
    ----------
    p_values : array_like of shape (m,)

    Returns
    -------
    ndarray of shape (m,)
        With the m' finite p-values sorted, :math:`p_{(1)} \\le \\dots \\le p_{(m')}`,
        :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1, (m' - j + 1) p_{(j)})`
        (Holm 1979). The smallest equals the Bonferroni bound :math:`\\min(1, m' p_{(1)})`.

    Examples
    --------
    >>> holm_adjust([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    if m == 0:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


# ----------------------------------------------------------------------------
# Binary tests, vectorised over one-vs-rest columns
# ----------------------------------------------------------------------------

def _check_binary(probs: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim != 1 or y.ndim != 1 or p.shape != y.shape or p.size == 0:
        raise CalibrationInputError(
            f"`probs` and `labels` must be 1-D arrays of the same length, got shapes {p.shape} and {y.shape}."
        )
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        raise CalibrationInputError("`probs` must hold probabilities in [0, 1] (no NaN).")
    if not np.all((y == 0) | (y == 1)):
        raise CalibrationInputError("`labels` must be 0 or 1 for a binary test.")
    return p, y.astype(np.float64)


def hosmer_lemeshow(probs: ArrayLike, labels: ArrayLike, n_groups: int = 10,
                    dof_offset: int = 2, *,
                    sample_weight: ArrayLike | None = None) -> tuple[float, float, int]:
    """Hosmer-Lemeshow statistic, p-value and degrees of freedom of one binary problem.

    Parameters
    ----------
    probs : array_like of shape (N,)
        Predicted probability of the event.
    labels : array_like of shape (N,)
        1 for the event, 0 otherwise.
    n_groups : int, default 10
        Number g of groups ("deciles of risk").
    dof_offset : {2, 0}, default 2
        Degrees of freedom = groups formed - ``dof_offset``.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the test of the rows repeated that many times (a chi-square of counts);
        other weights raise :class:`~calib_core.validation.CalibrationInputError` (``docs/weights.md``).

    Returns
    -------
    statistic : float
    p_value : float
        ``scipy.stats.chi2.sf(statistic, dof)``; NaN when ``dof < 1``.
    dof : int
        Groups formed minus ``dof_offset``.

    Notes
    -----
    The rows are sorted by predicted risk and cut into g groups of (as
    nearly as possible) equal size, the package's equal-mass bins
    (:func:`calib_core.bin_index` with ``binning="adaptive"``: the runs of
    ``np.array_split`` of the sorted values, tied values always sharing a
    group, so fewer than g groups may form). With :math:`n_j` rows,
    :math:`O_j` observed events and :math:`E_j = \\sum_{i \\in j} p_i`
    expected events in group j (Hosmer, Lemeshow & Sturdivant 2013, eq. 5.10):

    .. math:: \\hat C = \\sum_{j=1}^{g} \\frac{(O_j - E_j)^2}{E_j (1 - E_j / n_j)}
              \\sim \\chi^2_{g-2}.

    A group with :math:`E_j \\in \\{0, n_j\\}` adds 0 if :math:`O_j = E_j`
    and makes the statistic infinite otherwise (an event predicted
    impossible happened). The g - 2 degrees of freedom are the convention of
    the original paper for a logistic model fitted on the same data. For
    predictions evaluated on data they were not fitted on, g degrees of
    freedom (``dof_offset=0``) are the reference (Hosmer, Lemeshow &
    Sturdivant 2013, Section 5.2.2, on validation samples): with g - 2 the
    test rejects too often there (measured in ``tests/inference/test_calibration_tests.py``:
    about 0.10-0.12 at alpha = 0.05 for N = 300-1000 calibrated rows, against
    about 0.05 with g).

    Examples
    --------
    Ten groups of 20 rows whose events match their expected counts exactly:

    >>> p = np.repeat(np.linspace(0.05, 0.95, 10), 20)
    >>> y = (np.arange(200) % 20 < np.round(p * 20)).astype(int)
    >>> stat, pv, dof = hosmer_lemeshow(p, y)
    >>> round(stat, 6), dof
    (0.0, 8)
    """
    p, y = _check_binary(probs, labels)
    weights = check_sample_weight(sample_weight, y.size)
    if weights is not None:
        p, y = repeat_rows(weights, p, y, metric="`hosmer_lemeshow`")
    n_groups, dof_offset = _check_groups(n_groups, dof_offset)
    groups = bin_statistics(p, y, n_groups, "adaptive")
    stat, pv, dof = _hosmer_lemeshow_groups(groups.count[None], groups.sum_target[None], groups.sum_value[None],
                                            dof_offset)
    return float(stat[0]), float(pv[0]), int(dof[0])


def _check_groups(n_groups: object, dof_offset: object) -> tuple[int, int]:
    n_groups = check_count(n_groups, "n_groups", 3)
    if isinstance(dof_offset, bool) or dof_offset not in (0, 2):
        raise CalibrationInputError(f"`dof_offset` must be 2 (model fitted on these data) or 0, got {dof_offset!r}.")
    return int(n_groups), int(dof_offset)


def _hosmer_lemeshow_groups(size: NDArray[np.float64], observed: NDArray[np.float64], expected: NDArray[np.float64],
                            dof_offset: int = 2) -> tuple[NDArray, NDArray, NDArray]:
    """Hosmer-Lemeshow for each row of (C, g) group sizes, observed events and expected events (sums of risks).

    Empty groups (ties merged them into a neighbour) are left out, and the
    degrees of freedom count the groups formed.
    """
    formed = size > 0
    denominator = expected * (1.0 - expected / np.where(formed, size, 1.0))
    gap = (observed - expected) ** 2
    degenerate = denominator <= 1e-12 * size
    terms = np.where(_impossible_groups(size, observed, expected), np.inf,
                     np.where(degenerate, 0.0, gap / np.where(degenerate, 1.0, denominator)))
    statistic = np.where(formed, terms, 0.0).sum(axis=1)
    dof = (formed.sum(axis=1) - dof_offset).astype(np.float64)
    with np.errstate(invalid="ignore"):
        p_value = np.where(dof >= 1, stats.chi2.sf(statistic, np.maximum(dof, 1.0)), np.nan)
    return statistic, p_value, dof


def _impossible_groups(size: NDArray[np.float64], observed: NDArray[np.float64],
                       expected: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Groups whose Hosmer-Lemeshow term is infinite: expected 0 (or all) events, and a different count seen."""
    formed = size > 0
    degenerate = expected * (1.0 - expected / np.where(formed, size, 1.0)) <= 1e-12 * size
    return formed & degenerate & ((observed - expected) ** 2 > 1e-18)


def _infinite_statistic_note(size: NDArray[np.float64], observed: NDArray[np.float64],
                             expected: NDArray[np.float64], classes: tuple[int, ...]) -> str:
    """Why a Hosmer-Lemeshow statistic is infinite, in words ("" when none is).

    A risk group whose predicted probabilities are all 0 (or all 1) expects
    no event (or only events); one event more (or fewer) makes its term
    ``(O - E)^2 / (E (1 - E / n))`` a division by zero.
    """
    impossible = _impossible_groups(size, observed, expected)
    rows = np.flatnonzero(impossible.any(axis=1))
    if rows.size == 0:
        return ""
    parts = []
    for row in rows[:3]:
        j = int(np.flatnonzero(impossible[row])[0])
        formed = np.flatnonzero(size[row] > 0)
        n, o, e = int(size[row, j]), int(round(observed[row, j])), float(expected[row, j])
        certain = "0" if e < 0.5 * n else "1"
        exact = e in (0.0, float(n))
        where = f"class {classes[row]}, " if len(classes) > 1 else ""
        parts.append(f"{where}risk group {int(np.searchsorted(formed, j)) + 1} of {formed.size} ({n:,} rows): "
                     f"expected {e:.2g} events (every predicted probability {'' if exact else 'about '}{certain}), "
                     f"observed {o:,}")
    more = f"; and {rows.size - 3} more class{'es' if rows.size > 4 else ''}" if rows.size > 3 else ""
    return ("The statistic is infinite: rows predicted with probability 0 (or 1) had the event (or did not), "
            "which a calibrated model never produces. " + "; ".join(parts).capitalize()[:1]
            + "; ".join(parts)[1:] + more + ".")


def spiegelhalter_z(probs: ArrayLike, labels: ArrayLike, *,
                    sample_weight: ArrayLike | None = None) -> tuple[float, float]:
    """Spiegelhalter's Z statistic and its two-sided p-value for one binary problem.

    Parameters
    ----------
    probs : array_like of shape (N,)
        Predicted probability of the event.
    labels : array_like of shape (N,)
        1 for the event, 0 otherwise.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the test of the rows repeated that many times (its variance counts rows);
        other weights raise :class:`~calib_core.validation.CalibrationInputError` (``docs/weights.md``).

    Returns
    -------
    z : float
    p_value : float
        ``2 * scipy.stats.norm.sf(abs(z))``; NaN when the variance is 0
        (every prediction 0, 1/2 or 1).

    Notes
    -----
    Under calibration the Brier score :math:`B = \\frac1N \\sum_i (y_i - p_i)^2`
    has mean :math:`\\frac1N \\sum_i p_i(1 - p_i)` and variance
    :math:`\\frac1{N^2} \\sum_i (1 - 2p_i)^2 p_i (1 - p_i)`; standardising
    gives (Spiegelhalter 1986, eq. 6-8)

    .. math:: Z = \\frac{\\sum_i (y_i - p_i)(1 - 2 p_i)}
                       {\\sqrt{\\sum_i (1 - 2 p_i)^2\\, p_i (1 - p_i)}} \\sim N(0, 1).

    Examples
    --------
    >>> z, p = spiegelhalter_z([0.2, 0.7, 0.9], [0, 1, 0])
    >>> round(z, 4)
    1.2443
    """
    p, y = _check_binary(probs, labels)
    weights = check_sample_weight(sample_weight, y.size)
    if weights is not None:
        p, y = repeat_rows(weights, p, y, metric="`spiegelhalter_z`")
    z, pv = _spiegelhalter_columns(p[:, None], y.astype(np.intp), np.array([1]))
    return float(z[0]), float(pv[0])


def _spiegelhalter_columns(p: NDArray[np.float64], labels: NDArray, classes: NDArray[np.intp]
                           ) -> tuple[NDArray, NDArray]:
    """Spiegelhalter's Z of each column ``p[:, c]`` against the outcome ``labels == classes[c]``.

    The numerator :math:`\\sum_i (y_i - p_i)(1 - 2p_i)` is
    :math:`\\sum_{i: y_i = 1} (1 - 2p_i) - \\sum_i p_i (1 - 2p_i)`: the first
    sum reads one entry per row, so no (N, C) outcome matrix is built.
    """
    # Row blocks that fit in cache: at 50,000 x 1,000 the whole-matrix temporaries took 3.7 s.
    n_columns = p.shape[1]
    position = np.full(int(max(np.max(labels, initial=0), np.max(classes, initial=0))) + 1, -1, dtype=np.intp)
    position[classes] = np.arange(n_columns)
    column_of_row = position[np.asarray(labels, dtype=np.intp)]  # -1: the row's outcome is 0 in every column
    events, expected, variance = np.zeros(n_columns), np.zeros(n_columns), np.zeros(n_columns)
    for start, block in row_blocks(p):
        slope = 1.0 - 2.0 * block
        expected += np.einsum("ij,ij->j", block, slope)
        slope *= slope
        variance += np.einsum("ij,ij->j", slope, block * (1.0 - block))
        column = column_of_row[start:start + block.shape[0]]
        rows = np.flatnonzero(column >= 0)
        events += np.bincount(column[rows], weights=1.0 - 2.0 * block[rows, column[rows]], minlength=n_columns)
    numerator = events - expected
    positive = variance > 0
    z = np.full(n_columns, np.nan)
    z[positive] = numerator[positive] / np.sqrt(variance[positive])
    p_value = np.where(positive, 2.0 * stats.norm.sf(np.abs(np.nan_to_num(z))), np.nan)
    return z, p_value


# ----------------------------------------------------------------------------
# SKCE: linear-time asymptotic test and the resampled U-statistic
# ----------------------------------------------------------------------------

def _skce_asymptotic(statistics: NDArray[np.float64], null_variances: NDArray[np.float64],
                     uniform_means: NDArray[np.float64], alpha: float) -> tuple[float, float, float, float]:
    """Mean of the independent block statistics, its standard deviation under calibration, the one-sided
    normal p-value and the power against :data:`SKCE_REFERENCE_SHARE` of the labels drawn uniformly."""
    m = statistics.size
    estimate = float(statistics.mean())
    std_error = float(np.sqrt(null_variances.sum()) / m)
    shift = SKCE_REFERENCE_SHARE ** 2 * float(uniform_means.mean())
    if std_error > 0:
        p_value = float(stats.norm.sf(estimate / std_error))
        power = float(stats.norm.sf(stats.norm.isf(alpha) - shift / std_error))
    else:  # every block's predictions one-hot: the residuals are 0 under calibration
        p_value = 1.0 if estimate <= 0 else 0.0
        power = 1.0
    return estimate, std_error, p_value, power


def _skce_test(probs: NDArray[np.float64], labels: NDArray[np.intp], *, alpha: float, seed: Seed,
               n_resamples: int, null: str | None, bandwidth: float | None,
               block_rows: int | None) -> CalibrationTestResult:
    """The SKCE test of :func:`calibration_test` (see its Notes)."""
    n_rows = probs.shape[0]
    if n_rows < 4:
        raise CalibrationInputError(f"the SKCE test needs at least 4 rows, got {n_rows}.")
    size = block_rows_default(n_rows) if block_rows is None else check_count(block_rows, "block_rows", 2)
    if size > n_rows:
        raise CalibrationInputError(f"`block_rows` must be at most the {n_rows:,} rows, got {size:,}.")
    n_blocks = n_rows // size
    null = "asymptotic" if null is None else check_choice(null, "null", SKCE_NULLS)
    if null == "asymptotic" and n_blocks < 2:
        raise CalibrationInputError(f"the asymptotic SKCE null needs at least 2 blocks; blocks of {size:,} rows "
                                    f"give {n_blocks} of the {n_rows:,} rows (use null='resampled').")
    width = skce_bandwidth(probs, bandwidth)
    # Two named streams of the one seed: which rows share a block, and the labels drawn under calibration.
    order = named_rng(seed, "calibration_test/skce/blocks").permutation(n_rows)
    estimator = BlockSKCE(width, skce_block_groups(order, size))
    estimate, std_error, p_value, power = _skce_asymptotic(
        *skce_block_statistics(probs, labels, width, estimator.groups, null_variances=True), alpha)
    widths = sorted({rows.shape[1] for rows in estimator.groups})
    blocks = f"{n_blocks:,} blocks of {'-'.join(format(w, ',') for w in widths)} rows (bandwidth {width:.3g})"
    power_text = f"; power {power:.0%} against {_SKCE_REFERENCE} (normal approximation)"
    reference = _REFERENCES["skce"]
    occupancy = estimator.cell_occupancy(probs)
    if null == "asymptotic":
        null_text = (f"normal with mean 0 and standard deviation {std_error:.3g}, the exact one under calibration "
                     f"(asymptotic null of the mean unbiased SKCE of {blocks}){power_text}")
        reading = read_test(p_value, alpha, test="SKCE test (blocks of √N rows, asymptotic)", occupancy=occupancy,
                            power=power, power_against=_SKCE_REFERENCE)
        return CalibrationTestResult("skce", estimate, p_value, null_text, reading.verdict, reading.reason, alpha,
                                     n_rows, reference, std_error=std_error, bandwidth=width, block_rows=size,
                                     power=power)
    result = consistency_resampling(probs, labels, estimator, n_resamples,
                                    named_rng(seed, "calibration_test/skce/labels"), alpha=alpha)
    null_text = (f"consistency resampling of the mean unbiased SKCE of {blocks}: {result.n_resamples:,} label "
                 f"vectors drawn from the predictions; 5%-95% band {result.lower:.3g}-{result.upper:.3g}{power_text}")
    test = "SKCE test (blocks of √N rows, resampled)"
    if result.verdict == "consistent":  # the same rule, now told the power
        reading = read_test(result.p_value, alpha, test=test, occupancy=occupancy, power=power,
                            power_against=_SKCE_REFERENCE)
        verdict, reason = reading.verdict, reading.reason
    else:
        verdict, reason = result.verdict, result.verdict_reason.replace("consistency resampling", test, 1)
    return CalibrationTestResult("skce", result.observed, result.p_value, null_text, verdict, reason, alpha,
                                 n_rows, reference, std_error=std_error, bandwidth=width, consistency=result,
                                 block_rows=size, power=power)


# ----------------------------------------------------------------------------
# calibration_test
# ----------------------------------------------------------------------------

_REFERENCES = {
    "consistency": "Vaicenavicius et al. 2019, Section 4.2 (consistency resampling)",
    "skce": "Widmann, Lindsten & Zachariah 2019, Sections 3-4",
    "hosmer_lemeshow": "Hosmer & Lemeshow 1980; Hosmer, Lemeshow & Sturdivant 2013, eq. (5.10)",
    "spiegelhalter": "Spiegelhalter 1986, eq. (6)-(8)",
}

_TEST_NAMES = {
    "hosmer_lemeshow": "Hosmer-Lemeshow test",
    "spiegelhalter": "Spiegelhalter's Z test",
}


def _estimator_name(estimator: object) -> str:
    name = getattr(estimator, "__name__", None)
    if name:
        return str(name)
    func = getattr(estimator, "func", None)  # functools.partial
    if func is not None:
        keywords = ", ".join(f"{k}={v!r}" for k, v in getattr(estimator, "keywords", {}).items())
        return f"{getattr(func, '__name__', repr(func))}({keywords})"
    return repr(estimator)


def calibration_test(probs: ArrayLike, labels: ArrayLike, method: str = "consistency", *,
                     alpha: float = DEFAULT_ALPHA, seed: Seed = None, n_resamples: int = 1000,
                     estimator: Callable[[NDArray, NDArray], float] | None = None, null: str | None = None,
                     bandwidth: float | None = None, block_rows: int | None = None, n_groups: int = 10,
                     dof_offset: int = 2, sample_weight: ArrayLike | None = None) -> CalibrationTestResult:
    """Test the hypothesis that the model is calibrated; a p-value and a verdict.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    method : {"consistency", "skce", "hosmer_lemeshow", "spiegelhalter"}, default "consistency"
    alpha : float, default 0.05
        Significance level of the verdict, in (0, 0.5].
    seed : int or numpy.random.Generator, optional
        Randomness of the resampled nulls and of the SKCE blocks. An integer
        seed gives each random quantity its own named stream
        (:func:`calib_core.validation.named_rng`: ``"calibration_test/consistency"``,
        ``"calibration_test/skce/blocks"``, ``"calibration_test/skce/labels"``), so
        the same seed gives the same numbers on every surface, whatever else
        is computed with it; a Generator is used as it is.
    n_resamples : int, default 1000
        Consistency resamples (``"consistency"``, ``"skce"`` with ``null="resampled"``).
    estimator : callable, optional
        ``"consistency"`` only: ``estimator(probs, labels) -> float``, any
        calibration estimator (e.g. ``functools.partial(cc.ece, n_bins=10)``
        or a :class:`calib_core.CanonicalCE`). Default: the top-label ECE
        with 15 uniform bins, as ``CanonicalCE(lens="max", n_bins=15)``,
        which equals ``cc.ece(probs, labels, n_bins=15)`` and also reports
        its bins' occupancy.
    null : {"asymptotic", "resampled"}, optional
        ``"skce"`` only. ``"asymptotic"`` (default): normal null with the
        exact variance of the block statistic under calibration, O(N s K) for
        blocks of s rows. ``"resampled"``: consistency resampling of the same
        statistic (exact size at any N), O(N s min(K, 32)) per resample.
    bandwidth : float, optional
        ``"skce"`` only: kernel width; default the median heuristic
        (:func:`calib_core.metrics.kernel.median_heuristic`, which depends on the
        predictions only, so it is the same under every resample).
    block_rows : int, optional
        ``"skce"`` only: rows per block s, from 2 to N; default
        ``ceil(sqrt(N))``, at most 100 (:func:`calib_core.inference.skce_estimators.block_rows_default`).
        2 is Widmann et al.'s linear-time test (little power); N with
        ``null="resampled"`` is their quadratic test (O(N^2) per resample).
    n_groups : int, default 10
        ``"hosmer_lemeshow"`` only: the number of risk groups g.
    dof_offset : {2, 0}, default 2
        ``"hosmer_lemeshow"`` only: degrees of freedom = g - ``dof_offset``.
        2 is Hosmer & Lemeshow's convention (a model fitted on these data);
        0 suits predictions evaluated on new data, where g - 2 rejects too
        often (:func:`hosmer_lemeshow`).
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights (frequencies): the test of the rows repeated
        that many times, which is what such weights stand for. Every null here
        counts independent rows (resampled labels per row, a chi-square of
        counts, a variance of a sum), so weights that are not counts -- e.g.
        importance weights towards a deployment -- are refused: their test
        would need the effective sample size, which these tests do not model.

    Returns
    -------
    CalibrationTestResult

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels or options, an option given to a method
        that does not use it, or a binary test that cannot be computed for
        any class.

    Notes
    -----
    **consistency** (Vaicenavicius et al. 2019, Section 4.2): labels are drawn
    from the predictions, :math:`\\tilde y_i \\sim g(x_i)`, and the
    estimator recomputed; ``p = (1 + #{b: T_b >= T}) / (1 + B)``. The verdict
    is :attr:`calib_core.ConsistencyResult.verdict` (an estimate below its
    band, or bins that mostly hold fewer than 5 rows, is inconclusive).

    **skce** (Widmann et al. 2019). With residuals
    :math:`e_i = \\mathrm{onehot}(y_i) - p_i` and
    :math:`h_{ij} = \\exp(-\\|p_i - p_j\\|/\\nu) \\langle e_i, e_j \\rangle`,
    :math:`\\mathrm{SKCE} = E[h_{ij}] = 0` iff the model is calibrated
    (for this characteristic kernel). The rows are put in a seeded random
    order and cut into :math:`m = \\lfloor N/s \\rfloor` disjoint blocks of s
    (or s + 1) rows; the statistic is the mean of the blocks' unbiased
    U-statistics :math:`\\hat U_b = \\frac{1}{s(s-1)}\\sum_{i \\ne j \\in b} h_{ij}`
    (Widmann et al. 2019, eq. 4 within each block; s = 2 is their
    linear-time estimator, s = N their quadratic one). The blocks are
    independent, so the mean is asymptotically normal as m grows; under
    calibration its variance is known exactly from the predictions,
    :math:`\\sigma_0^2 = m^{-2}\\sum_b \\mathrm{Var}_0(\\hat U_b)`
    (:func:`calib_core.inference.skce_estimators.skce_block_statistics`), and the test
    rejects for large values: ``p = norm.sf(estimate / sigma_0)``.

    *Why blocks of sqrt(N) rows.* The variance of the mean falls as
    1 / (N s): blocks of 2 rows (the linear-time test) compare each row with
    one other and have little power (on N = 6,000 rows with a third of the
    labels replaced by random ones, ECE 0.12, it rejected at 0.05 on none
    of seeds 0-4, p from 0.20 to 0.81); the quadratic U-statistic has the most power but its null is
    a weighted sum of chi-squares with no closed form, so it needs
    O(N^2 K) work per resample. Blocks of about sqrt(N) rows (the B-test of
    Zaremba et al. 2013) keep a normal null, cost O(N sqrt(N) K) (capped at
    blocks of 100 rows, O(100 N K), for N > 10,000) with bounded memory, and
    rejected on every one of 40 seeds of that case (largest p 4e-6). The exact null
    variance, rather than the spread of the few block values, keeps the
    size near alpha at small N (a studentised mean of 10-25 skewed block
    values rejected a calibrated model in only about 2 % of test sets);
    measured sizes are in ``docs/tests.md``.

    *When a non-rejection is inconclusive* (the rule of
    :func:`calib_core.inference.verdicts.read_test`, as for the other tests).
    The test states its power against a clear miscalibration of these very
    predictions: labels uniformly random on a third of the rows, for which
    :math:`E[e_i \\mid p_i] = \\tfrac13 (u - p_i)` and the statistic's mean is
    :math:`\\mu_1 = \\tfrac19 \\cdot` the blocks' mean of
    :math:`\\frac{1}{s(s-1)}\\sum_{i \\ne j} W_{ij}(\\langle p_i, p_j\\rangle - 1/K)`;
    power :math:`= \\Phi(\\mu_1 / \\sigma_0 - z_{1-\\alpha})` (normal approximation
    with the null variance). Below 80 % (:data:`calib_core.inference.verdicts.MIN_POWER`)
    a p-value above alpha reads "inconclusive", not "consistent"; so does
    one from blocks of fewer than 5 rows (the blocks as cells: each row is
    compared with next to nothing).
    ``null="resampled"`` draws labels from the predictions and recomputes
    the same statistic on the same blocks (:class:`BlockSKCE`;
    Vaicenavicius et al. 2019, Section 4.2), so its size is exact at any N,
    at O(N s min(K, 32)) per resample.

    **hosmer_lemeshow** and **spiegelhalter**: see :func:`hosmer_lemeshow`
    and :func:`spiegelhalter_z`. Binary problems (K = 2) are tested on
    P(class 1) (testing class 0 gives the same statistic). For K > 2 each
    class k is tested on ``probs[:, k]`` against ``labels == k`` and the K
    p-values are adjusted by Holm's method (:func:`holm_adjust`); the
    reported p-value, the smallest adjusted one, controls the family-wise
    error rate at ``alpha`` without assuming the K tests independent.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 2000)
    >>> y = (rng.uniform(size=2000) < p1).astype(int)
    >>> res = calibration_test(np.column_stack([1 - p1, p1]), y, "spiegelhalter")
    >>> res.verdict
    'consistent'
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`calibration_test`")
    method = check_choice(method, "method", TEST_METHODS)
    alpha = check_alpha(alpha)
    n_rows, n_classes = probs.shape
    if estimator is not None and method != "consistency":
        raise CalibrationInputError(f"`estimator` is only used with method='consistency', not {method!r}.")
    if null is not None and method != "skce":
        raise CalibrationInputError(f"`null` is only used with method='skce', not {method!r}.")
    if bandwidth is not None and method != "skce":
        raise CalibrationInputError(f"`bandwidth` is only used with method='skce', not {method!r}.")
    if block_rows is not None and method != "skce":
        raise CalibrationInputError(f"`block_rows` is only used with method='skce', not {method!r}.")
    if (n_groups != 10 or dof_offset != 2) and method != "hosmer_lemeshow":
        raise CalibrationInputError(
            f"`n_groups` and `dof_offset` are only used with method='hosmer_lemeshow', not {method!r}.")
    reference = _REFERENCES[method]

    if method == "consistency":
        if estimator is None:
            estimator, name = CanonicalCE(lens="max", n_bins=15), "top-label ECE (15 uniform bins)"
        else:
            name = _estimator_name(estimator)
        result = consistency_resampling(probs, labels, estimator, n_resamples,
                                        named_rng(seed, "calibration_test/consistency"), alpha=alpha)
        null_text = (f"consistency resampling of {name}: {result.n_resamples:,} label vectors drawn from the "
                     f"predictions; 5%-95% band {result.lower:.4g}-{result.upper:.4g}, mean "
                     f"{result.resampled_mean:.4g}")
        return CalibrationTestResult(method, result.observed, result.p_value, null_text, result.verdict,
                                     result.verdict_reason, alpha, n_rows, reference, consistency=result)

    if method == "skce":
        return _skce_test(probs, labels, alpha=alpha, seed=seed, n_resamples=n_resamples, null=null,
                          bandwidth=bandwidth, block_rows=block_rows)

    # Binary tests: P(class 1) for K = 2, one-vs-rest for K > 2.
    classes = (1,) if n_classes == 2 else tuple(range(n_classes))
    dof = np.empty(0)
    if method == "hosmer_lemeshow":
        n_groups, dof_offset = _check_groups(n_groups, dof_offset)
        # Each class column's risk groups: the adaptive bins of its sorted values (bin_index's groups).
        groups = classwise_bin_statistics(probs, labels, n_groups, "adaptive")
        picked = list(classes)
        statistic, raw, dof = _hosmer_lemeshow_groups(groups.count[picked], groups.sum_target[picked],
                                                      groups.sum_value[picked], dof_offset)
        infinite = _infinite_statistic_note(groups.count[picked], groups.sum_target[picked],
                                            groups.sum_value[picked], classes)
        if np.all(dof == n_groups - dof_offset):
            null_text = (f"chi-square with g - {dof_offset} = {n_groups - dof_offset} degrees of freedom "
                         f"(g = {n_groups} groups by predicted risk)")
        else:
            low, high = int(np.min(dof)), int(np.max(dof))
            span = str(high) if low == high else f"{low}-{high} by class"
            null_text = (f"chi-square with (groups formed - {dof_offset}) = {span} degrees of freedom ({n_groups} groups "
                         "by predicted risk requested; tied risks share a group, so fewer formed)")
    else:
        columns = probs if n_classes > 2 else probs[:, 1:]
        statistic, raw = _spiegelhalter_columns(columns, labels, np.asarray(classes, dtype=np.intp))
        null_text = "standard normal, two-sided"
        infinite = ""
    computable = np.isfinite(raw)
    if not computable.any():
        why = ("fewer than 3 distinct predicted risks" if method == "hosmer_lemeshow"
               else "every prediction is 0, 1/2 or 1, so Z has no variance")
        raise CalibrationInputError(f"the {_TEST_NAMES[method]} cannot be computed here: {why}.")
    adjusted = holm_adjust(raw)
    best = int(np.nanargmin(adjusted))
    p_value = float(adjusted[best])
    note = ""
    if len(classes) > 1:
        m = int(computable.sum())
        flagged = [classes[i] for i in np.flatnonzero(adjusted < alpha)]
        null_text += f"; one-vs-rest for each of {m} classes, Holm-adjusted (the smallest adjusted p-value)"
        note = (f"One test per class ({m} one-vs-rest tests); the p-value shown is the smallest one corrected for "
                f"testing {m} classes (Holm's method: the smallest raw p-value × {m}, at most 1), so the chance of a false "
                "alarm on any class stays at α.")
        note += (f" Classes flagged: {', '.join(map(str, flagged))}." if flagged else "")
        skipped = [classes[i] for i in np.flatnonzero(~computable)]
        if skipped:
            note += f" Not testable (left out): class {', '.join(map(str, skipped))}."
    note = f"{infinite} {note}".strip()  # the infinite statistic first: it is what the reader asks about
    reading = read_test(p_value, alpha, test=_TEST_NAMES[method], note=note)
    return CalibrationTestResult(method, float(statistic[best]), p_value, null_text, reading.verdict,
                                 reading.reason, alpha, n_rows, reference, classes, statistic, raw, adjusted,
                                 dof)
