"""Binned calibration errors: ECE, MCE, RMSCE, class-wise ECE/SCE, ACE, TACE and GCE.

All of them are reductions of the per-bin sums of :mod:`calib_core.binning`.

References
----------
.. [Nixon2019] Nixon, J., Dusenberry, M., Jerfel, G., Nguyen, T., Liu, J., Zhang, L.
   & Tran, D. "Measuring Calibration in Deep Learning", CVPR Workshops 2019.
   Section 3 (ECE eq. 1, SCE eq. 2, ACE eq. 3, TACE) and appendix C (the 32
   variants of the general calibration error).
.. [Guo2017] Guo, C. et al. "On Calibration of Modern Neural Networks", ICML 2017.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calib_core._accel import arg_max_by_blocks, remembered, top_label_bin_sums
from calib_core.binning import BinStats, bin_statistics, binned_error, classwise_bin_statistics, mean_abs_gap
from calib_core.validation import (
    ROW_SUM_TOLERANCE,
    CalibrationInputError,
    check_binning,
    check_choice,
    check_labels,
    check_n_bins,
    check_positive,
    check_probs_by_block,
    check_probs_labels,
    check_right,
    check_sample_weight,
    correct_rows,
    is_validated,
    row_argmax,
    row_blocks,
)

__all__ = [
    "NORMS",
    "accuracy",
    "ace",
    "classwise_ece",
    "ece",
    "gce",
    "mce",
    "sce",
    "tace",
    "top_label",
]

#: The norms of the gaps that ECE and class-wise ECE accept (``norm``): mean, root-mean-square, largest.
NORMS = ("l1", "l2", "max")


@remembered
def top_label(probs: NDArray[np.float64], labels: NDArray[np.intp]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Top-label confidence and correctness of checked predictions.

    The predicted class is the arg-max of each row, ties going to the lowest
    class index (:func:`numpy.argmax`).

    Returns
    -------
    confidence : ndarray of shape (N,)
        ``max_k probs[i, k]``.
    correct : ndarray of shape (N,)
        1.0 where the predicted class equals the label, else 0.0.
    """
    predicted, confidence = arg_max_by_blocks(probs.shape[0], row_blocks(probs))
    return confidence, (predicted == labels).astype(np.float64)


def _checked_top_label(probs: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``top_label(*check_probs_labels(probs, labels))`` in one pass over the matrix.

    The arg-max of each row block is taken while :func:`check_probs_by_block`
    has it in cache after checking it, so checking and the top label cost
    about one read of the matrix. Same errors, in the same order, and the
    same numbers as the two steps one after the other.
    """
    matrix, blocks = check_probs_by_block(probs)
    predicted, confidence = arg_max_by_blocks(matrix.shape[0], blocks)
    labels = check_labels(labels, matrix.shape[1], n_rows=matrix.shape[0])
    return confidence, (predicted == labels).astype(np.float64)


def _fused_bin_statistics(probs: ArrayLike, labels: ArrayLike, n_bins: int, binning: str, right: bool,
                          sample_weight: ArrayLike | None) -> BinStats | None:
    """The default ECE's bins (uniform, no weights) by one read of the matrix, or None to take the general path.

    :func:`calib_core._accel.top_label_bin_sums` checks each row, takes its
    top label and adds it to its bin in one pass (issue 29): no float64 copy
    of a float32 matrix, no (N,) arrays. The general path
    (:func:`_checked_top_label` and :func:`calib_core.binning.bin_statistics`)
    gives the same sums; it runs instead for other options, and whenever an
    argument is wrong or a row is not passed, so that every error is the
    validator's, raised in the same order.
    """
    if sample_weight is not None:
        return None
    try:
        n_bins, binning, right = check_n_bins(n_bins), check_binning(binning), check_right(right)
        if binning != "uniform":
            return None
        checked = is_validated(probs)
        matrix, _ = check_probs_by_block(probs)  # shape and type checked now; the values by the kernel
        labels = check_labels(labels, matrix.shape[1], n_rows=matrix.shape[0])
    except CalibrationInputError:
        return None
    upper = np.linspace(0.0, 1.0, n_bins + 1)
    sums = top_label_bin_sums(matrix, labels, upper[1:], right=right, tolerance=ROW_SUM_TOLERANCE, check=not checked)
    if sums is None:
        return None
    return BinStats(*sums, upper[:-1], upper[1:], float(matrix.shape[0]), right)


def ece(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform",
        norm: str = "l1", *, right: bool = True, sample_weight: ArrayLike | None = None) -> float:
    """Top-label expected calibration error (ECE), RMSCE or MCE.

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities, rows on the simplex.
    labels : array_like of shape (N,)
        True classes in ``0..K-1``.
    n_bins : int, default 15
        In ``1..MAX_N_BINS`` (10,000).
    binning : {"uniform", "adaptive"}, default "uniform"
        Uniform-width or uniform-mass bins over the top-label confidences.
    norm : {"l1", "l2", "max"}, default "l1"
        ``"l1"`` is the ECE, ``"l2"`` the root-mean-square calibration error
        (RMSCE), ``"max"`` the maximum calibration error (MCE).
    right : bool, default True
        Uniform bins ``(lo, hi]`` with 0 in the first bin (True, Guo et al.'s
        code, scikit-learn) or ``[lo, hi)`` with 1 in the last bin (False,
        torchmetrics and netcal); no effect on adaptive bins. See
        :mod:`calib_core.binning` and ``docs/peers.md``.
    sample_weight : array_like of shape (N,), optional
        Non-negative row weights: bin counts and sums are weighted sums, so
        integer weights give the value of the rows repeated that many times
        (``docs/weights.md``). None: every row counts once.

    Returns
    -------
    float

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels, weights or options.

    Notes
    -----
    With confidence :math:`c_i = \\max_k p_{ik}`, correctness
    :math:`a_i = [\\arg\\max_k p_{ik} = y_i]` and bins :math:`B_b` of size
    :math:`n_b` (Nixon et al. 2019, eq. 1; Guo et al. 2017, eq. 3):

    .. math:: \\mathrm{ECE} = \\sum_b \\frac{n_b}{N} \\left| \\mathrm{acc}(b) - \\mathrm{conf}(b) \\right|

    ``l2`` takes :math:`\\sqrt{\\sum_b (n_b/N) (\\mathrm{acc}(b) - \\mathrm{conf}(b))^2}`
    (torchmetrics' ``norm="l2"``), ``max`` the largest gap over non-empty bins.

    Examples
    --------
    >>> round(ece([[0.9, 0.1], [0.6, 0.4]], [0, 1], n_bins=10), 6)
    0.35

    The two uniform-bin conventions differ when confidences sit on edges:

    >>> p = [[.75, .15, .1], [.1, .8, .1], [.1, .3, .6], [.3, .3, .4]]
    >>> round(ece(p, [0, 1, 1, 2], n_bins=4), 4), round(ece(p, [0, 1, 1, 2], n_bins=4, right=False), 4)
    (0.2875, 0.4125)
    """
    stats = _fused_bin_statistics(probs, labels, n_bins, binning, right, sample_weight)
    if stats is not None:
        return float(binned_error(stats, check_choice(norm, "norm", NORMS)))
    confidence, correct = _checked_top_label(probs, labels)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    norm = check_choice(norm, "norm", NORMS)
    right = check_right(right)
    weights = check_sample_weight(sample_weight, confidence.size)
    return float(binned_error(bin_statistics(confidence, correct, n_bins, binning, right=right,
                                             sample_weight=weights), norm))


def mce(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform", *,
        right: bool = True, sample_weight: ArrayLike | None = None) -> float:
    """Maximum calibration error: ``ece(probs, labels, n_bins, binning, norm="max", right=right)``.

    The largest ``|acc(b) - conf(b)|`` over non-empty bins (Guo et al. 2017,
    eq. 5). Sensitive to sparsely populated bins: one sample can set it.
    """
    return ece(probs, labels, n_bins=n_bins, binning=binning, norm="max", right=right, sample_weight=sample_weight)


def accuracy(probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Fraction of rows whose arg-max class (ties: lowest index) equals the label (weighted by ``sample_weight``)."""
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is None:
        return float(np.mean(correct_rows(probs, labels)))
    return float(np.dot(weights, correct_rows(probs, labels)) / weights.sum())


def classwise_ece(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, binning: str = "uniform",
                  norm: str = "l1", per_class: bool = False, *,
                  right: bool = True, sample_weight: ArrayLike | None = None) -> float | NDArray[np.float64]:
    """Class-wise ECE: the ECE of each marginal ``probs[:, k]`` against ``labels == k``.

    Parameters
    ----------
    probs, labels : see :func:`ece`
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Bins are formed within each class column.
    norm : {"l1", "l2", "max"}
    per_class : bool, default False
        Return the ``(K,)`` array of per-class errors instead of their mean
        (the API contract fixes this flag; the mean is always
        ``per_class_values.mean()``).
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False); see :func:`ece`.
    sample_weight : array_like of shape (N,), optional
        Row weights, as in :func:`ece`.

    Returns
    -------
    float or ndarray of shape (K,)

    Notes
    -----
    Nixon et al. 2019, eq. 2 (with uniform bins: the static calibration error):

    .. math:: \\mathrm{CWECE} = \\frac{1}{K} \\sum_k \\sum_b \\frac{n_{bk}}{N}
              \\left| \\mathrm{acc}(b, k) - \\mathrm{conf}(b, k) \\right|
    """
    probs, labels = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    norm = check_choice(norm, "norm", NORMS)
    right = check_right(right)
    weights = check_sample_weight(sample_weight, labels.size)
    per_class_values = binned_error(classwise_bin_statistics(probs, labels, n_bins, binning, right=right,
                                                             sample_weight=weights), norm)
    return per_class_values if per_class else float(per_class_values.mean())


def sce(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, *, right: bool = True,
        sample_weight: ArrayLike | None = None) -> float:
    """Static calibration error (Nixon et al. 2019, eq. 2): class-wise ECE with uniform bins.

    ``right`` chooses ``(lo, hi]`` (True) or ``[lo, hi)`` (False) bins and ``sample_weight`` weighs rows, as
    in :func:`ece`.

    Examples
    --------
    >>> round(sce([[0.9, 0.1], [0.6, 0.4]], [0, 1], n_bins=10), 6)
    0.35
    """
    return classwise_ece(probs, labels, n_bins=n_bins, binning="uniform", right=right, sample_weight=sample_weight)


def _adaptive_classwise(probs: ArrayLike, labels: ArrayLike, n_bins: int, threshold: float | None,
                        per_class: bool, sample_weight: ArrayLike | None) -> float | NDArray[np.float64]:
    probs, labels = check_probs_labels(probs, labels)
    weights = check_sample_weight(sample_weight, labels.size)
    n_bins = check_n_bins(n_bins)
    if threshold is not None:
        threshold = check_positive(threshold, "threshold", allow_zero=True)
    stats = classwise_bin_statistics(probs, labels, n_bins, "adaptive", threshold=threshold, sample_weight=weights)
    per_class_values = mean_abs_gap(stats)
    return per_class_values if per_class else float(per_class_values.mean())


def ace(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15,
        per_class: bool = False, *, sample_weight: ArrayLike | None = None) -> float | NDArray[np.float64]:
    """Adaptive calibration error (Nixon et al. 2019, eq. 3).

    For each class k, the values ``probs[:, k]`` are split into ``n_bins``
    uniform-mass ranges (see :mod:`calib_core.binning`); ACE is the
    unweighted mean of ``|acc(r, k) - conf(r, k)|`` over the non-empty ranges,
    then the mean over all K classes:

    .. math:: \\mathrm{ACE} = \\frac{1}{KR} \\sum_{k=1}^{K} \\sum_{r=1}^{R}
              \\left| \\mathrm{acc}(r, k) - \\mathrm{conf}(r, k) \\right|

    Parameters
    ----------
    probs, labels : see :func:`ece`
    n_bins : int, default 15
        The number of ranges R.
    per_class : bool, default False
        Return the ``(K,)`` per-class values (Nixon et al. Figure 1, left).
    sample_weight : array_like of shape (N,), optional
        Row weights: the ranges are weighted quantiles
        (:func:`calib_core.binning.weighted_upper_edges`), so integer weights
        give the ranges and value of the repeated rows.

    Returns
    -------
    float or ndarray of shape (K,)

    Notes
    -----
    Equals ``gce(..., binning="adaptive", max_prob=False,
    class_conditional=True, threshold=0)`` when every class splits into
    equal-size ranges and no probability is exactly 0.
    """
    return _adaptive_classwise(probs, labels, n_bins, None, per_class, sample_weight)


def tace(probs: ArrayLike, labels: ArrayLike, n_bins: int = 15, threshold: float = 0.01,
         per_class: bool = False, *, sample_weight: ArrayLike | None = None) -> float | NDArray[np.float64]:
    """Thresholded adaptive calibration error (Nixon et al. 2019, section 3).

    ACE computed only on the probabilities strictly above ``threshold``, so
    that the many near-zero probabilities of a K-class model do not swamp
    the adaptive ranges. A class with no value above the threshold
    contributes 0 to the mean over the K classes.

    Parameters
    ----------
    probs, labels : see :func:`ece`
    n_bins : int, default 15
    threshold : float, default 0.01
    per_class : bool, default False
    sample_weight : array_like of shape (N,), optional
        Row weights, as in :func:`ace`.

    Returns
    -------
    float or ndarray of shape (K,)
    """
    return _adaptive_classwise(probs, labels, n_bins, threshold, per_class, sample_weight)


def _part(stats: BinStats, norm: str) -> NDArray[np.float64]:
    """``sum_b w_b |gap_b|`` (l1) or ``sum_b w_b gap_b**2`` (l2); 0 for an empty set."""
    return binned_error(stats, "l1") if norm == "l1" else binned_error(stats, "l2") ** 2


def gce(probs: ArrayLike, labels: ArrayLike, *, n_bins: int = 15, binning: str = "uniform",
        max_prob: bool = True, class_conditional: bool = False, threshold: float = 0.0,
        norm: str = "l1", right: bool = True, sample_weight: ArrayLike | None = None) -> float:
    """General calibration error spanning the 32 variants of Nixon et al. appendix C.

    Parameters
    ----------
    probs, labels : see :func:`ece`
    n_bins : int, default 15
    binning : {"uniform", "adaptive"}
        Uniform-width ("even") or uniform-mass bins, formed within each set.
    max_prob : bool, default True
        Use only the top-label probability of each row (True) or every class
        probability (False).
    class_conditional : bool, default False
        Compute one error per class and average over the K classes.
    threshold : float, default 0.0
        Drop the values ``<= threshold`` before binning (the default 0 drops
        exact zeros, as the reference implementation does).
    norm : {"l1", "l2"}
    right : bool, default True
        Uniform bins ``(lo, hi]`` (True) or ``[lo, hi)`` (False); see :func:`ece`.
    sample_weight : array_like of shape (N,), optional
        Row weights, as in :func:`ece` (the pooled set of every entry gives
        each entry its row's weight).

    Returns
    -------
    float

    Notes
    -----
    For a set of values ``v`` with 0/1 targets ``t``, after dropping
    ``v <= threshold`` and binning the remaining M values,
    ``part = sum_b (n_b / M) |mean_b(v) - mean_b(t)|^p`` with p = 1 (l1) or 2 (l2).

    * not class-conditional: one pooled set, the top-label confidences with
      correctness (``max_prob=True``) or all N*K entries ``probs[i, k]``
      with target ``labels[i] == k``; the result is ``part`` (l1) or
      ``sqrt(part)`` (l2).
    * class-conditional: for class k the set is column k (restricted to the
      rows whose top label is k when ``max_prob=True``) against
      ``labels == k``; the result is ``(1/K) sum_k part_k`` (l1) or its
      square root (l2), K counting every class, also those with an empty set.

    So ECE = gce(uniform, max_prob, not cc, l1), RMSCE = the same with l2,
    SCE = gce(uniform, not max_prob, cc, l1), ACE ~ gce(adaptive, not
    max_prob, cc, l1) and TACE the latter with a threshold.
    """
    probs, labels = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    binning = check_binning(binning)
    norm = check_choice(norm, "norm", ("l1", "l2"))
    threshold = check_positive(threshold, "threshold", allow_zero=True)
    right = check_right(right)
    weights = check_sample_weight(sample_weight, labels.size)
    stats = gce_bin_statistics(probs, labels, n_bins, binning, max_prob, class_conditional, threshold, right,
                               sample_weight=weights)
    return gce_of_statistics(stats, class_conditional, norm)


def gce_bin_statistics(probs: NDArray[np.float64], labels: NDArray[np.intp], n_bins: int, binning: str,
                       max_prob: bool, class_conditional: bool, threshold: float, right: bool = True, *,
                       sample_weight: NDArray[np.float64] | None = None) -> BinStats:
    """The bins of one :func:`gce` variant (checked arguments): one row per class, or one pooled row.

    Both norms of a variant share them (:func:`gce_of_statistics`).
    """
    if class_conditional:
        keep = probs > threshold
        if max_prob:
            predicted = row_argmax(probs)
            keep &= np.arange(probs.shape[1]) == predicted[:, None]
        return classwise_bin_statistics(probs, labels, n_bins, binning, keep=keep, right=right,
                                        sample_weight=sample_weight)
    if max_prob:
        values, targets = top_label(probs, labels)
    else:
        values = probs.ravel()
        targets = (np.arange(probs.shape[1]) == labels[:, None]).ravel().astype(np.float64)
    kept = values > threshold
    if sample_weight is None:
        return bin_statistics(values[kept], targets[kept], n_bins, binning, right=right)
    weights = sample_weight if max_prob else np.repeat(sample_weight, probs.shape[1])
    if not (weights[kept] > 0).any():  # nothing kept: the empty set's bins, as without weights
        return bin_statistics(values[:0], targets[:0], n_bins, binning, right=right)
    return bin_statistics(values[kept], targets[kept], n_bins, binning, right=right, sample_weight=weights[kept])


def gce_of_statistics(stats: BinStats, class_conditional: bool, norm: str) -> float:
    """:func:`gce` from its bins (:func:`gce_bin_statistics`): the mean part over classes or the pooled one."""
    parts = _part(stats, norm)
    value = float(parts.mean()) if class_conditional else float(parts)
    return float(np.sqrt(value)) if norm == "l2" else value
