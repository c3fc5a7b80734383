"""The registry's entries of issue 26: the top-label ranking metrics of any model (selective prediction) and the
metrics of confidence models (a stated confidence per item and whether it was right).

:mod:`calib_core.metrics.registry` appends them to :data:`~calib_core.metrics.registry.METRICS`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from calib_core.metrics import binned, confidence, selective
from calib_core.metrics.resampling import Resampling
from calib_core.metrics.spec import MetricSpec
from calib_core.validation import check_probs_labels

__all__ = ["CONFIDENCE_METRICS", "CONFIDENCE_RANKING_METRICS", "SELECTIVE_METRICS"]


# ----------------------------------------------------------------------------- selective prediction (issue 26)

def _of_top_label(statistic: Callable[[NDArray, NDArray], float]) -> Callable[[np.ndarray, np.ndarray, int, str], float]:
    """``compute(probs, labels, n_bins, binning)`` of a confidence-file statistic, on the top label of a K-class
    model (confidence = max probability, correct = arg-max == label)."""
    return lambda p, y, b, s: statistic(*binned.top_label(*check_probs_labels(p, y)))


def _selective(key: str, label: str, statistic: Callable[[NDArray, NDArray], float], summary: str, pitfalls: str,
               **flags) -> MetricSpec:
    """A ranking metric of the top label (:mod:`calib_core.metrics.selective`): no bins, no ideal value, a
    bootstrap standard error from the resampled confidences and correctness."""
    return MetricSpec(key, label, _of_top_label(statistic), summary, pitfalls, uses_bins=False,
                      calibration_error=False, probability_scale=False, ideal=None,
                      resampling=Resampling("top_label", statistic=statistic, sorts=True), **flags)


_TIES = "tied confidences enter together (the expected value over their order)"

SELECTIVE_METRICS: list[MetricSpec] = [
    _selective("auroc_correct", "AUROC of confidence (top label)", selective.auroc_correct,
               "Area under the ROC curve of the top-label confidence as a score for being right: the chance that "
               "a random right answer has a higher confidence than a random wrong one (ties count one half); 0.5 "
               "is chance, 1 a perfect ranking.",
               "Measures ranking, not calibration: any increasing transform of the confidence keeps it; does not "
               "exist when every answer is right or every one is wrong.", always_defined=False),
    _selective("aurc", "AURC (top label)", selective.aurc,
               "Area under the risk-coverage curve (Geifman & El-Yaniv 2017): the error rate among the k most "
               f"confident answers, averaged over k = 1..N; lower is better; {_TIES}.",
               "Mixes the ranking with the accuracy (a more accurate model has a lower AURC with the same "
               "ranking): compare models of different accuracy by E-AURC or AUGRC."),
    _selective("eaurc", "E-AURC (top label)", selective.eaurc,
               "Excess AURC (Geifman et al. 2019): AURC minus the AURC of the ideal order (every right answer "
               f"above every wrong one); 0 is a perfect ranking; {_TIES}.",
               "Still depends on the accuracy, less than AURC; the bootstrap interval describes the noise of the "
               "estimate, not its bias."),
    _selective("augrc", "AUGRC (top label)", selective.augrc,
               "Area under the generalized risk-coverage curve (Traub et al. 2024): the share of all answers "
               f"that are both kept and wrong, averaged over coverages k/N; lower is better; {_TIES}.",
               "About half the error rate for a random ranking, so it also mixes ranking and accuracy; it weighs "
               "an error kept at low coverage no more than one kept at high coverage, unlike AURC."),
]


# ----------------------------------------------------------------------------- confidence models (issue 26)
# Entries of a confidence model (probs = [1 - c, c], labels = correct); settings fixed in the key (headline: 10 bins).
_on_pair, _pair_rows, _term = confidence.on_pair, confidence.pair_rows, confidence.decomposition_term
_ROWS = Resampling("rows")
_TERM_NOTE = "A term of the Brier score's decomposition; read it with the other two."
_BINNED_NOTE = _TERM_NOTE + " Binned: the terms miss the within-bin part of the Brier score."


def _confidence(key, label, compute, summary, pitfalls, **options) -> MetricSpec:
    return MetricSpec(key, label, compute, summary, pitfalls, uses_bins=False, kind="confidence", **options)


CONFIDENCE_METRICS: list[MetricSpec] = [
    _confidence("conf_accuracy", "Accuracy (share of answers right)", _on_pair(lambda c, y: float(np.mean(y))),
                "The system's accuracy: the share of items whose answer was right.",
                "Says nothing about calibration; shown for context.", calibration_error=False, interval="percentile",
                ideal=None, resampling=Resampling("row_mean", per_row=_pair_rows(lambda c, y: y))),
    *(_confidence(key, label, _on_pair(confidence.confidence_ece, n_bins=n_bins, binning=binning),
                  "ECE of the stated confidence against correctness: count-weighted mean gap between mean confidence "
                  "and accuracy per bin." + (" The convention of the LLM calibration papers: 10 equal-width bins "
                                             "(lo, hi]." if key == "conf_ece" else ""),
                  "Depends on the bins and is biased upwards for small N; verbalised confidences in steps of 5 or 10 "
                  "% pile up on bin edges (ties share a bin).", resampling=_ROWS)
      for key, label, n_bins, binning in (("conf_ece", "ECE, 10 equal-width bins (headline)", 10, "uniform"),
                                          ("conf_ece_15", "ECE, 15 equal-width bins", 15, "uniform"),
                                          ("conf_ece_mass_10", "ECE, 10 equal-mass bins", 10, "adaptive"),
                                          ("conf_ece_mass_15", "ECE, 15 equal-mass bins", 15, "adaptive"))),
    _confidence("conf_smooth_ece", "smECE (confidence vs correct)", _on_pair(confidence.confidence_smooth_ece),
                "Smooth ECE (Blasiok & Nakkiran 2023) of the stated confidence against correctness, without bins.",
                "Smoothing can hide narrow regions of miscalibration; the automatic width is coarse for small N.",
                resampling=_ROWS),
    _confidence("conf_overconfidence", "Overconfidence (mean confidence - accuracy)", _on_pair(confidence.overconfidence),
                "Mean stated confidence minus accuracy: above 0 the system claims more than it delivers.",
                "Over- and underconfident items cancel: 0 does not mean calibrated (see the ECE).", signed=True,
                interval="percentile", resampling=Resampling("row_mean", per_row=_pair_rows(lambda c, y: c - y))),
    _confidence("conf_brier", "Brier score (confidence vs correct)", _on_pair(confidence.confidence_brier),
                "Mean squared difference between stated confidence and correctness (0 to 1; proper score).",
                "Mixes calibration and discrimination; see its decomposition.", calibration_error=False,
                probability_scale=False, interval="percentile", ideal=None,
                resampling=Resampling("row_mean", per_row=_pair_rows(lambda c, y: (c - y) ** 2))),
    _confidence("conf_corp_mcb", "Brier reliability (CORP, isotonic)", _on_pair(_term("corp", "reliability")),
                "Miscalibration of the CORP decomposition (Dimitriadis, Gneiting & Jordan 2021): Brier score minus "
                "that of the PAV-recalibrated confidence.", _TERM_NOTE, probability_scale=False, resampling=_ROWS),
    _confidence("conf_corp_dsc", "Brier resolution (CORP, isotonic)", _on_pair(_term("corp", "resolution")),
                "Discrimination of the CORP decomposition: the base rate's Brier score minus that of the "
                "PAV-recalibrated confidence (larger is better).", _TERM_NOTE, calibration_error=False,
                probability_scale=False, ideal=None, resampling=_ROWS),
    _confidence("conf_brier_reliability", "Brier reliability (binned, 10 bins)",
                _on_pair(_term("binned", "reliability")),
                "Murphy's reliability over 10 equal-width bins: sum_b (n_b/N)(mean confidence - accuracy)^2.",
                _BINNED_NOTE, probability_scale=False, resampling=_ROWS),
    _confidence("conf_brier_resolution", "Brier resolution (binned, 10 bins)", _on_pair(_term("binned", "resolution")),
                "Murphy's resolution over 10 equal-width bins: sum_b (n_b/N)(accuracy_b - accuracy)^2.",
                _BINNED_NOTE, calibration_error=False, probability_scale=False, ideal=None, resampling=_ROWS),
    _confidence("conf_brier_uncertainty", "Brier uncertainty", _on_pair(_term("corp", "uncertainty")),
                "accuracy x (1 - accuracy): the Brier score of always stating the accuracy (both decompositions).",
                _TERM_NOTE, calibration_error=False, probability_scale=False, ideal=None, resampling=_ROWS),
    _confidence("conf_nll", "NLL (confidence vs correct)", _on_pair(confidence.confidence_nll),
                "Mean negative log-likelihood of the outcomes under the stated confidence (proper score).",
                "Unbounded: a confident wrong answer at confidence 1 costs 27.6 (clipped at 1e-12).",
                calibration_error=False, probability_scale=False, interval="percentile", ideal=None,
                resampling=Resampling("row_mean", per_row=_pair_rows(confidence.nll_rows))),
]


# ----------------------------------------------------------------------------- confidence models: ranking (issue 26)
# The selective metrics above read a K-class model's top label; on a confidence model's [1 - c, c] that would be
# max(c, 1 - c). These read the stated confidence itself, so systems can be compared on knowing when they are wrong.
def _ranking(key: str, label: str, statistic: Callable[[NDArray, NDArray], float], of: str, **flags) -> MetricSpec:
    return _confidence(key, label, _on_pair(statistic),
                       f"{of} of the stated confidence against correctness (as the top-label entry "
                       f"{of.split()[0]} of a K-class model); {_TIES}.",
                       "Measures how well the confidence ranks right above wrong answers, not calibration; "
                       "see the top-label entry.", calibration_error=False, probability_scale=False, ideal=None,
                       resampling=_ROWS, **flags)


CONFIDENCE_RANKING_METRICS: list[MetricSpec] = [
    _ranking("conf_auroc", "AUROC of confidence for correctness", selective.auroc_correct,
             "AUROC (0.5 chance, 1 perfect; ties count one half)", always_defined=False),
    _ranking("conf_aurc", "AURC (confidence)", selective.aurc, "AURC (lower is better)"),
    _ranking("conf_eaurc", "E-AURC (confidence)", selective.eaurc, "E-AURC (AURC minus the ideal order's)"),
    _ranking("conf_augrc", "AUGRC (confidence)", selective.augrc, "AUGRC (Traub et al. 2024)"),
]
