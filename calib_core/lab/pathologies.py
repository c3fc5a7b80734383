"""The pathology gallery: cases where a calibration number misleads, each computed live.

:func:`pathologies` returns the cases (Nixon et al.'s cancellation inside a
bin, Vaicenavicius et al.'s Examples 3 and 5, Gruber & Buettner's accuracy
map, a sharp and a constant calibrated model), each with its explanation,
reference, documented values and a ``compute()`` that recomputes its numbers.

References
----------
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix D.2,
   D.4 (Proposition D.2), Lemma 4.1.
.. [Nixon2019] Nixon, J. et al. "Measuring Calibration in Deep Learning", CVPR
   Workshops 2019, Figure 4.
.. [Vaicenavicius2019] Vaicenavicius, J. et al. "Evaluating model calibration in
   classification", AISTATS 2019, appendix A.1 (Examples 3 and 5), C.1.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.stats import binom

from calib_core.metrics import binned, scores
from calib_core.metrics.canonical import canonical_ce
from calib_core.lab.estimators import ece_estimator, run_lab
from calib_core.lab.generators import LogisticNormalModel, gaussian_mixture

__all__ = ["EXAMPLE3_CONDITIONALS", "EXAMPLE3_PREDICTIONS", "Pathology", "nixon_figure4_data", "pathologies"]


@dataclass(frozen=True)
class Pathology:
    """One case of the gallery.

    Attributes
    ----------
    key : str
    title : str
    explanation : str
        What the numbers show, in a few sentences.
    reference : str
        Paper and place.
    compute : callable
        ``compute() -> dict[str, float]``: the case's numbers, computed live.
    documented : mapping of str to float
        Values the paper states, for the keys of ``compute()`` it states.
    """

    key: str
    title: str
    explanation: str
    reference: str
    compute: Callable[[], dict[str, float]] = field(repr=False)
    documented: Mapping[str, float] = field(default_factory=dict)


def nixon_figure4_data() -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The predictions of Nixon et al. (2019), Figure 4: 450 x (0.52 wrong) and 550 x (0.58 right)."""
    probs = np.array([[0.52, 0.48]] * 450 + [[0.58, 0.42]] * 550)
    labels = np.array([1] * 450 + [0] * 550, dtype=np.intp)
    return probs, labels


def _nixon_numbers() -> dict[str, float]:
    probs, labels = nixon_figure4_data()
    confidence, correct = binned.top_label(probs, labels)
    return {
        "ece_10_bins": binned.ece(probs, labels, n_bins=10),
        "ece_100_bins": binned.ece(probs, labels, n_bins=100),
        "mean_confidence": float(confidence.mean()),
        "accuracy": float(correct.mean()),
        "mean_abs_gap_per_prediction": float(np.abs(confidence - correct).mean()),
        "ace": float(binned.ace(probs, labels, n_bins=10)),
        "sce_10_bins": binned.sce(probs, labels, n_bins=10),
    }


#: Vaicenavicius et al. (2019), Example 3 / Table 2: the two equally likely
#: predictions and the true conditional distribution of Y given each.
EXAMPLE3_PREDICTIONS = np.array([[0.5, 0.3, 0.2], [0.5, 0.2, 0.3]])
EXAMPLE3_CONDITIONALS = np.array([[0.5, 0.2, 0.3], [0.5, 0.3, 0.2]])


def _example3_numbers(n: int = 20_000, seed: int = 0) -> dict[str, float]:
    predictions, conditionals = EXAMPLE3_PREDICTIONS, EXAMPLE3_CONDITIONALS
    rng = np.random.default_rng(seed)
    which = rng.integers(0, 2, n)
    probs = predictions[which]
    uniform = rng.random(n)
    labels = (np.cumsum(conditionals[which], axis=1) < uniform[:, None]).sum(axis=1)
    top = predictions.argmax(axis=1)
    numbers = {
        "true_top_label_tce": float(np.mean(np.abs(predictions.max(axis=1) - conditionals[[0, 1], top]))),
        "true_classwise_tce": float(np.mean(np.abs(predictions - conditionals).mean(axis=0))),
        "true_canonical_tv": float(np.mean(0.5 * np.abs(predictions - conditionals).sum(axis=1))),
        "ece_estimate": binned.ece(probs, labels, n_bins=15),
        "classwise_ece_estimate": binned.classwise_ece(probs, labels, n_bins=15),
    }
    numbers["canonical_ce_estimate"] = float(canonical_ce(probs, labels, partition="data_dependent",
                                                          min_bin_size=n // 2))
    return numbers


def _one_bin_estimate(probs: NDArray[np.float64], labels: NDArray[np.intp]) -> float:
    """The expected-miscalibration estimate with a single bin (the canonical CE of one cell).

    For two classes it equals ``|mean prediction of class 0 - frequency of class 0|``.
    """
    return float(canonical_ce(probs, labels, partition="data_dependent", min_bin_size=max(probs.shape[0], 1)))


def _example5_numbers() -> dict[str, float]:
    perfect = np.array([[1.0, 0.0]])
    constant = np.array([[0.5, 0.5]])
    numbers = {
        "perfect_one_point_estimate": _one_bin_estimate(perfect, np.array([0])),
        "constant_one_point_estimate": _one_bin_estimate(constant, np.array([1])),
        "true_eta_tv_both": 0.0,
    }
    # Expected one-bin estimate of the constant model with n points: E|mean(Y) - 1/2|, Y ~ Bernoulli(1/2).
    for n in (1, 10, 100, 1000):
        k = np.arange(n + 1)
        numbers[f"constant_expected_estimate_n{n}"] = float(np.sum(binom.pmf(k, n, 0.5) * np.abs(k / n - 0.5)))
    return numbers


def _accuracy_map(probs: NDArray[np.float64], accuracy: float) -> NDArray[np.float64]:
    """Gruber & Buettner's t^f: the top entry becomes the accuracy, the others share the rest equally."""
    n, k = probs.shape
    mapped = np.full((n, k), (1.0 - accuracy) / (k - 1))
    mapped[np.arange(n), probs.argmax(axis=1)] = accuracy
    return mapped


def _gruber_d2_numbers(n: int = 20_000, seed: int = 0) -> dict[str, float]:
    model = LogisticNormalModel(n_classes=10, temperature=1.0, scale=215.0, model_seed=0)
    data = model.sample(n, seed=seed)
    accuracy = binned.accuracy(data.probs, data.labels)
    mapped = _accuracy_map(data.probs, accuracy)
    # Truth of the mapped model: t(g(X)) reveals only the arg-max C, so
    # E[Y | t(g(X))] = E[p | C], estimated on the noise-free reference sample.
    points, calibration = model.reference_sample()
    top = points.argmax(axis=1)
    population_accuracy = float(calibration[np.arange(points.shape[0]), top].mean())
    class_mean = np.zeros((model.n_classes, model.n_classes))
    for k in range(model.n_classes):
        chosen = top == k
        if chosen.any():
            class_mean[k] = calibration[chosen].mean(axis=0)
    mapped_reference = _accuracy_map(points, population_accuracy)
    numbers = {
        "accuracy_before": accuracy,
        "accuracy_after": binned.accuracy(mapped, data.labels),
        "ece_before": binned.ece(data.probs, data.labels),
        "ece_after": binned.ece(mapped, data.labels),
        "classwise_ece_after": binned.classwise_ece(mapped, data.labels),
        "brier_before": scores.brier_score(data.probs, data.labels),
        "brier_after": scores.brier_score(mapped, data.labels),
        "true_canonical_tv_after": float(0.5 * np.abs(mapped_reference - class_mean[top]).sum(axis=1).mean()),
    }
    numbers["canonical_ce_after"] = float(canonical_ce(mapped, data.labels, partition="data_dependent"))
    return numbers


def _sharp_vs_constant_numbers(n: int = 1000, repetitions: int = 200, seed: int = 0) -> dict[str, float]:
    numbers: dict[str, float] = {}
    estimators = [ece_estimator(10, "uniform", key="ece_10"), ece_estimator(100, "uniform", key="ece_100")]
    for case in ("perfect", "constant"):
        model = gaussian_mixture(case)
        data = model.sample(20_000, seed=seed)
        numbers[f"{case}_accuracy"] = model.truth()["accuracy"]
        numbers[f"{case}_brier"] = scores.brier_score(data.probs, data.labels)
        numbers[f"{case}_true_tce"] = model.truth()["tce"]
        result = run_lab(model, estimators, sizes=[n], repetitions=repetitions, seed=seed)
        means = result.summary.set_index("estimator")["mean"]
        numbers[f"{case}_mean_ece_10_bins_n{n}"] = float(means["ece_10"])
        numbers[f"{case}_mean_ece_100_bins_n{n}"] = float(means["ece_100"])
    return numbers


def pathologies() -> tuple[Pathology, ...]:
    """The gallery of cases where a calibration number misleads, each computed live.

    Returns
    -------
    tuple of Pathology
        ``nixon_cancellation``, ``vaicenavicius_example3``,
        ``vaicenavicius_example5``, ``gruber_accuracy_map``,
        ``sharp_vs_constant``; call ``case.compute()`` for the numbers.

    Examples
    --------
    >>> case = pathologies()[0]
    >>> round(case.compute()["ece_10_bins"], 6)
    0.003
    """
    return (
        Pathology(
            "nixon_cancellation",
            "Over- and under-confidence cancel inside one bin",
            "450 predictions at confidence 0.52 are all wrong and 550 at 0.58 are all right. With 10 bins both "
            "groups share the bin (0.5, 0.6], whose mean confidence 0.553 almost equals its accuracy 0.55, so "
            "the ECE is 0.003 although every single prediction is off by about 0.47. With 100 bins the groups "
            "separate and the ECE jumps to 0.465.",
            "Nixon et al. 2019, Figure 4",
            _nixon_numbers,
            {"ece_10_bins": 0.003},
        ),
        Pathology(
            "vaicenavicius_example3",
            "Top-label calibrated, yet every other class is off",
            "The model predicts (0.5, 0.3, 0.2) or (0.5, 0.2, 0.3), each half of the time, while the true "
            "distributions are (0.5, 0.2, 0.3) and (0.5, 0.3, 0.2). The top class is right half of the time "
            "at confidence 0.5, so ECE and top-label TCE are 0; the second and third classes are mis-stated by "
            "0.1 each time, which only the class-wise and canonical errors see.",
            "Vaicenavicius et al. 2019, appendix A.1, Example 3 (Table 2 reconstructed from the text)",
            _example3_numbers,
            {"true_top_label_tce": 0.0, "true_canonical_tv": 0.1},
        ),
        Pathology(
            "vaicenavicius_example5",
            "Same true error, different estimator bias",
            "On perfectly separable data both the perfect model and the constant model (1/2, 1/2) are "
            "calibrated (true error 0). With one bin and one data point the estimate is always 0 for the "
            "perfect model and always 1/2 for the constant one; with n points the constant model's expected "
            "estimate is E|mean(Y) - 1/2|, which shrinks only like 1/sqrt(n).",
            "Vaicenavicius et al. 2019, appendix A.1, Example 5",
            _example5_numbers,
            {"perfect_one_point_estimate": 0.0, "constant_one_point_estimate": 0.5},
        ),
        Pathology(
            "gruber_accuracy_map",
            "ECE 0 with the same accuracy, but not calibrated",
            "Replace each prediction's top entry by the model's accuracy and spread the rest evenly (the map "
            "t^f of Gruber & Buettner). Accuracy is unchanged and the ECE becomes exactly 0, yet the "
            "prediction now says nothing about which other classes are likely: its canonical (and class-wise) "
            "calibration error is clearly positive and the Brier score gets worse. ECE = 0 does not imply "
            "calibration (Theorem 3.1).",
            "Gruber & Buettner 2022, appendix D.2 (Theorem 3.1) and D.4 (Proposition D.2)",
            _gruber_d2_numbers,
            {"ece_after": 0.0},
        ),
        Pathology(
            "sharp_vs_constant",
            "Two calibrated models: sharp and useless",
            "In the Gaussian-mixture problem the Bayes-optimal model and the constant model (1/2, 1/2) are both "
            "perfectly calibrated, so every calibration error is 0 for both; only accuracy and the Brier score "
            "(sharpness) tell them apart. Their ECE estimates are biased differently: the sharp model spreads "
            "over many bins, so its estimate grows with the bin count, the constant model's does not.",
            "Vaicenavicius et al. 2019, appendix C.1 (Figures 6-7 vs 9-10); Gruber & Buettner 2022, Lemma 4.1",
            _sharp_vs_constant_numbers,
            {"perfect_true_tce": 0.0, "constant_true_tce": 0.0},
        ),
    )
