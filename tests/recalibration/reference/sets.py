"""The three prediction sets the structured-scaling reference outputs were made on (issue 27).

``binary``: ``breast_cancer_mlp`` and ``ten``: ``digits_mlp`` are real
models' predictions (the bundled demos, ``data/demo``), fitted on their
"calibration" rows and evaluated on their "test" rows. ``thousand`` is a real
1,000-class set, and not ImageNet (no ImageNet classifier's outputs can be
downloaded here): next-word prediction in the Python 3.11 documentation's
sources by a fitted low-rank neural language model, over the 999 most
frequent words and ``<other>`` (``data/next_word``, made by
``scripts/make_next_word_set.py``, whose docstring says exactly what the text
and the model are). Its first 2,000 held-out rows are the fitting rows, the
next 2,000 the evaluation rows; :func:`next_word` gives up to 60,000 rows
(the bench's ImageNet-shaped 50,000 x 1,000).

Every set is given as probabilities (what the reference, probmetrics, takes)
and its methods are fitted here on ``log(probs)`` with ``input="logits"``:
the reference takes ``log`` of the (float32) probabilities, whereas
``input="probs"`` takes ``log(p + 1e-12)``, which differs for tiny p.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

#: The sets each method is compared on (SMS: not at 1,000 classes, above its limit).
SETS = ("binary", "ten", "thousand")


def _demo(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from calib_core.io.demos import load_demo

    pred = load_demo(name)
    fit = pred.split == "calibration"
    probs = np.asarray(pred.probs, dtype=np.float64)
    return probs[fit], np.asarray(pred.labels)[fit], probs[~fit]


#: The real 1,000-class set: the word-id stream of held-out text and the fitted model's parameters.
NEXT_WORD = Path(__file__).resolve().parents[3] / "data" / "next_word" / "python_docs_next_word.npz"
#: Words of context of the next-word model.
CONTEXT = 3


def next_word_logits(params: dict[str, np.ndarray], contexts: np.ndarray) -> np.ndarray:
    """The next-word model's logits ``tanh(E1[w_{t-1}] + E2[w_{t-2}] + E3[w_{t-3}] + c) W + b`` (float64).

    ``contexts`` (N, 3) holds the word ids ``w_{t-1}, w_{t-2}, w_{t-3}``; ``params`` the stored float16
    parameters (they are the model), computed here in float64.
    """
    hidden = np.asarray(params["c"], dtype=np.float64) + sum(
        np.asarray(params[f"E{j + 1}"], dtype=np.float64)[contexts[:, j]] for j in range(CONTEXT))
    return np.tanh(hidden) @ np.asarray(params["W"], dtype=np.float64) + np.asarray(params["b"], dtype=np.float64)


def stream_rows(stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(contexts (N, 3), labels (N,))`` of a word-id stream: row ``i`` predicts word ``i + 3``."""
    n_rows = stream.size - CONTEXT
    contexts = np.column_stack([stream[CONTEXT - j: CONTEXT - j + n_rows] for j in range(1, CONTEXT + 1)])
    return contexts.astype(np.intp), stream[CONTEXT:].astype(np.intp)


def next_word(n_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(logits (n_rows, 1000), labels)`` of the first ``n_rows`` rows of the real 1,000-class set (all: 60,000)."""
    with np.load(NEXT_WORD) as data:
        params = {key: data[key] for key in data.files if key not in ("stream", "vocabulary")}
        stream = data["stream"] if n_rows is None else data["stream"][:n_rows + CONTEXT]
    contexts, labels = stream_rows(stream)
    return next_word_logits(params, contexts), labels


def _thousand(half: int = 2000) -> tuple[np.ndarray, ...]:
    logits, labels = next_word(2 * half)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return probs[:half], labels[:half], probs[half:]


def load_set(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(probs_fit, labels_fit, probs_eval)`` of one of :data:`SETS`."""
    if name == "binary":
        return _demo("breast_cancer_mlp")
    if name == "ten":
        return _demo("digits_mlp")
    if name == "thousand":
        return _thousand()
    raise ValueError(name)
