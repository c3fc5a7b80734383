"""Shared data of the reference-agreement tests of the non-parametric methods (issue 27).

Three prediction sets: two real demos of the repository (``data/demo``) and, as the repository holds
no real 1,000-class set, one synthetic ImageNet-shaped set. Each is split in halves: the methods are
fitted on the first and evaluated on the second.
"""
from __future__ import annotations

import numpy as np

from calib_core import softmax
from calib_core.io.demos import load_demo

#: Real sets: binary (569 rows) and 10 classes (1,797 rows).
REAL_SETS = ("breast_cancer_logistic_regression", "digits_logistic_regression")


def halves(name: str):
    """``(fit probs, fit labels, evaluation probs)`` of a demo, split in halves in file order."""
    pred = load_demo(name)
    half = pred.labels.size // 2
    return pred.probs[:half], pred.labels[:half], pred.probs[half:]


def imagenet_shaped(n_rows: int = 2000, n_classes: int = 1000, seed: int = 0):
    """``(fit probs, fit labels, evaluation probs)`` of a synthetic 1,000-class model, about 70% accurate.

    Each class occurs equally often in each half (the reference packages skip classes absent from the fit).
    """
    rng = np.random.default_rng(seed)
    labels = np.concatenate([rng.permutation(np.arange(n_rows // 2) % n_classes) for _ in range(2)])
    logits = rng.normal(size=(n_rows, n_classes))
    logits[np.arange(n_rows), labels] += rng.normal(4.0, 1.5, n_rows)
    probs = softmax(logits)
    half = n_rows // 2
    return probs[:half], labels[:half], probs[half:]
