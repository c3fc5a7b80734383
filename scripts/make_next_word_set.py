"""Build ``data/next_word/python_docs_next_word.npz``: a real 1,000-class prediction set (issue 27).

It is NOT ImageNet. No ImageNet classifier's outputs can be downloaded here, so
the 1,000-class reference checks and the ImageNet-shaped bench use this set
instead: a real task, real text, a really fitted model.

The task
    Next-word prediction in English technical prose: given the three words
    before it, which word comes next, among 1,000 classes: the 999 most
    frequent words of the training text, and ``<other>`` (class 999) for every
    other word. The classes are as unbalanced as language is (Zipf's law):
    ``<other>`` and "the" are frequent, most classes rare.

The text
    The reStructuredText sources of the Python 3.11 documentation
    (``/usr/share/doc/python3.11/html/_sources/**/*.rst.txt``, Debian package
    ``python3.11-doc``, version 3.11.2-6+deb12u9; ``apt-get install
    python3.11-doc``): 497 documents, about 1.4 million words. Words are the
    lower-cased matches of ``[a-z]+(?:'[a-z]+)?`` (markup and code included,
    as they stand in the sources). The documents, sorted by path, are shuffled
    with seed 27; one in five (every fifth of the shuffled list) is held out,
    the rest are the training text. The text is not committed.

The model
    A low-rank neural log-bilinear language model (Bengio et al. 2003, with a
    rank-``RANK`` bottleneck): ``h = tanh(E1[w_{t-1}] + E2[w_{t-2}] + E3[w_{t-3}] + c)``,
    ``logits = h W + b``, with ``E1, E2, E3`` of shape 1,000 x ``RANK``, ``W``
    of shape ``RANK`` x 1,000 (the context words use the same 1,000 classes).
    It is fitted by Adam on the mean cross-entropy over every position of the
    training documents (``EPOCHS`` passes, batches of ``BATCH`` rows, seed 27,
    no penalty, no early stopping), in numpy. Its parameters are then rounded
    to float16, and the rounded ones ARE the model: the logits are computed in
    float64 from the stored float16 parameters
    (``tests/recalibration/reference/sets.py``'s :func:`next_word_logits`,
    which the tests and the bench use to read the set).

The stored set
    The first ``ROWS`` + 3 words of the held-out documents (in the shuffled
    order, concatenated) as ``uint16`` class ids: row ``i`` predicts word
    ``i + 3`` from words ``i``, ``i + 1``, ``i + 2``. So ``ROWS`` rows of
    real held-out predictions, at 1,000 classes, from a file of a few hundred
    KB. Its miscalibration is whatever the fitted model really has on text it
    did not see (printed by this script).

Run from the repository root (numpy only)::

    python scripts/make_next_word_set.py

The output is deterministic on one machine (the same numpy, the same BLAS).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recalibration" / "reference"))

from sets import CONTEXT, NEXT_WORD as OUT, next_word_logits as logits, stream_rows as _rows  # noqa: E402

SOURCE = Path("/usr/share/doc/python3.11/html/_sources")
N_CLASSES = 1000
RANK = 24
EPOCHS = 4
BATCH = 2048
LEARNING_RATE = 3e-3
ROWS = 60_000
SEED = 27
WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _documents() -> tuple[list[list[str]], list[list[str]]]:
    paths = sorted(SOURCE.rglob("*.rst.txt"))
    if not paths:
        sys.exit(f"no *.rst.txt under {SOURCE}: apt-get install python3.11-doc")
    order = np.random.default_rng(SEED).permutation(len(paths))
    docs = [WORD.findall(paths[i].read_text(encoding="utf-8", errors="replace").lower()) for i in order]
    held_out = [d for j, d in enumerate(docs) if j % 5 == 0]
    train = [d for j, d in enumerate(docs) if j % 5 != 0]
    return train, held_out


def _vocabulary(train: list[list[str]]) -> list[str]:
    words, counts = np.unique(np.concatenate([np.array(d) for d in train if d]), return_counts=True)
    order = np.lexsort((words, -counts))  # by count, ties alphabetically
    return [str(w) for w in words[order[:N_CLASSES - 1]]]


def _ids(docs: list[list[str]], vocab: list[str]) -> np.ndarray:
    index = {w: i for i, w in enumerate(vocab)}
    other = N_CLASSES - 1
    return np.array([index.get(w, other) for d in docs for w in d], dtype=np.uint16)


def _fit(contexts: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    params = {f"E{j}": 0.1 * rng.standard_normal((N_CLASSES, RANK)) for j in range(1, CONTEXT + 1)}
    params["c"] = np.zeros(RANK)
    params["W"] = rng.standard_normal((RANK, N_CLASSES)) / np.sqrt(RANK)
    params["b"] = np.log(np.bincount(labels, minlength=N_CLASSES) + 1.0)
    params = {k: v.astype(np.float32) for k, v in params.items()}
    moment1 = {k: np.zeros_like(v) for k, v in params.items()}
    moment2 = {k: np.zeros_like(v) for k, v in params.items()}
    step = 0
    for epoch in range(EPOCHS):
        order = rng.permutation(labels.size)
        total = 0.0
        for start in range(0, labels.size, BATCH):
            rows = order[start:start + BATCH]
            ctx, y = contexts[rows], labels[rows]
            pre = sum(params[f"E{j + 1}"][ctx[:, j]] for j in range(CONTEXT)) + params["c"]
            hidden = np.tanh(pre)
            z = hidden @ params["W"] + params["b"]
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            total += -np.log(p[np.arange(y.size), y] + 1e-30).sum()
            dz = p
            dz[np.arange(y.size), y] -= 1.0
            dz /= y.size
            grads = {"W": hidden.T @ dz, "b": dz.sum(axis=0)}
            dpre = (dz @ params["W"].T) * (1.0 - hidden * hidden)
            grads["c"] = dpre.sum(axis=0)
            for j in range(CONTEXT):
                g = np.zeros_like(params[f"E{j + 1}"])
                np.add.at(g, ctx[:, j], dpre)
                grads[f"E{j + 1}"] = g
            step += 1
            for k, g in grads.items():  # Adam (Kingma & Ba 2015), beta = (0.9, 0.999)
                moment1[k] = 0.9 * moment1[k] + 0.1 * g
                moment2[k] = 0.999 * moment2[k] + 0.001 * g * g
                update = (moment1[k] / (1 - 0.9 ** step)) / (np.sqrt(moment2[k] / (1 - 0.999 ** step)) + 1e-8)
                params[k] -= (LEARNING_RATE * update).astype(np.float32)
        print(f"epoch {epoch + 1}: training cross-entropy {total / labels.size:.4f}")
    return params


def _summary(name: str, z: np.ndarray, y: np.ndarray) -> None:
    z = z - z.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    top = log_p.argmax(axis=1)
    confidence = np.exp(log_p.max(axis=1))
    print(f"{name}: {y.size:,} rows, log-loss {-log_p[np.arange(y.size), y].mean():.4f}, "
          f"accuracy {np.mean(top == y):.4f}, mean top-1 confidence {confidence.mean():.4f}, "
          f"classes present {np.unique(y).size}")


def main() -> None:
    train, held_out = _documents()
    vocab = _vocabulary(train)
    train_stream = _ids(train, vocab)
    held_stream = _ids(held_out, vocab)
    print(f"{len(train)} training documents ({train_stream.size:,} words), {len(held_out)} held out "
          f"({held_stream.size:,} words); '<other>' is {np.mean(train_stream == N_CLASSES - 1):.1%} of training words")
    contexts, labels = _rows(train_stream)
    params = _fit(contexts, labels)
    stored = {k: v.astype(np.float16) for k, v in params.items()}
    _summary("training text (float16 model)", logits(stored, contexts[:200_000]), labels[:200_000])
    stream = held_stream[:ROWS + CONTEXT]
    held_contexts, held_labels = _rows(stream)
    _summary("stored held-out rows", logits(stored, held_contexts), held_labels)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, stream=stream, vocabulary=np.array([*vocab, "<other>"]), **stored)
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
