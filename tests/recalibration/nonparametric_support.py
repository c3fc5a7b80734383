"""Shared data of the reference-agreement tests of the non-parametric methods (issue 27).

Three real prediction sets: two demos of the repository (``data/demo``) and a 1,000-class set, not
ImageNet: next-word prediction in the Python documentation by a fitted language model
(``data/next_word``, ``tests/recalibration/reference/sets.py``). Each is split in halves: the methods
are fitted on the first and evaluated on the second.
"""
from __future__ import annotations

import numpy as np

from calib_core import softmax
from calib_core.io.demos import load_demo
from tests.recalibration.reference.sets import next_word

#: Real sets: binary (569 rows) and 10 classes (1,797 rows).
REAL_SETS = ("breast_cancer_logistic_regression", "digits_logistic_regression")


def halves(name: str):
    """``(fit probs, fit labels, evaluation probs)`` of a demo, split in halves in file order."""
    pred = load_demo(name)
    half = pred.labels.size // 2
    return pred.probs[:half], pred.labels[:half], pred.probs[half:]


def thousand_classes(n_rows: int = 2000):
    """``(fit probs, fit labels, evaluation probs)`` of the first ``n_rows`` rows of the real 1,000-class set.

    Its classes are as unbalanced as words are: many are absent from the fitting half (the reference
    packages skip them; the whole-K comparisons check that ours agree all the same).
    """
    logits, labels = next_word(n_rows)
    probs = softmax(logits)
    half = n_rows // 2
    return probs[:half], labels[:half], probs[half:]
