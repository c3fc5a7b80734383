"""The three prediction sets the structured-scaling reference outputs were made on (issue 27).

``binary``: ``breast_cancer_mlp`` and ``ten``: ``digits_mlp`` are real
models' predictions (the bundled demos, ``data/demo``), fitted on their
"calibration" rows and evaluated on their "test" rows. ``thousand`` is
synthetic: no real 1,000-class prediction set is bundled (and none can be
downloaded here), so 4,000 rows of over-confident logits with class-dependent
offsets are drawn from a seeded generator (the shape of an ImageNet
classifier's output, not its values).

Every set is given as probabilities (what the reference, probmetrics, takes)
and its methods are fitted here on ``log(probs)`` with ``input="logits"``:
the reference takes ``log`` of the (float32) probabilities, whereas
``input="probs"`` takes ``log(p + 1e-12)``, which differs for tiny p.
"""
from __future__ import annotations

import numpy as np

#: The sets each method is compared on (SMS: not at 1,000 classes, above its limit).
SETS = ("binary", "ten", "thousand")


def _demo(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from calib_core.io.demos import load_demo

    pred = load_demo(name)
    fit = pred.split == "calibration"
    probs = np.asarray(pred.probs, dtype=np.float64)
    return probs[fit], np.asarray(pred.labels)[fit], probs[~fit]


def _thousand(n_rows: int = 4000, n_classes: int = 1000, seed: int = 27) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.normal(size=(n_rows, n_classes)) + 0.3 * rng.normal(size=n_classes)
    z[np.arange(n_rows), rng.integers(0, n_classes, n_rows)] += 6.0
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (probs.cumsum(axis=1) > rng.uniform(size=(n_rows, 1))).argmax(axis=1)
    sharp = np.exp(2.0 * (z - z.max(axis=1, keepdims=True)))  # the model: over-confident (temperature 1/2)
    sharp /= sharp.sum(axis=1, keepdims=True)
    half = n_rows // 2
    return sharp[:half], labels[:half], sharp[half:]


def load_set(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(probs_fit, labels_fit, probs_eval)`` of one of :data:`SETS`."""
    if name == "binary":
        return _demo("breast_cancer_mlp")
    if name == "ten":
        return _demo("digits_mlp")
    if name == "thousand":
        return _thousand()
    raise ValueError(name)
