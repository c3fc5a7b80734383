"""The real 1,000-class prediction set (``data/next_word``, issue 27): what the reference checks and the
bench rest on is a fitted model's real predictions of real text, small enough to commit."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from calib_core import softmax
from tests.recalibration.reference.sets import NEXT_WORD, next_word, stream_rows

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_set_is_small_and_holds_60000_rows_of_1000_classes():
    assert NEXT_WORD.stat().st_size < 500_000
    with np.load(NEXT_WORD) as data:
        stream, vocabulary = data["stream"], data["vocabulary"]
        assert {data[k].dtype for k in ("E1", "E2", "E3", "W", "b", "c")} == {np.dtype(np.float16)}
    assert stream.dtype == np.uint16 and stream.size == 60_003 and stream.max() < 1000
    assert vocabulary.size == 1000 and vocabulary[-1] == "<other>" and vocabulary[0] == "the"
    contexts, labels = stream_rows(stream[:6])
    np.testing.assert_array_equal(labels, stream[3:6])
    np.testing.assert_array_equal(contexts[0], stream[[2, 1, 0]])  # w_{t-1}, w_{t-2}, w_{t-3}


def test_the_model_is_fitted_it_beats_word_frequencies_on_held_out_text():
    """A fitted model, not noise: its held-out log loss is well below that of the words' frequencies in the
    same rows (an oracle unigram model, which even knows the held-out frequencies)."""
    logits, labels = next_word(5000)
    probs = softmax(logits)
    model_loss = -np.log(probs[np.arange(labels.size), labels]).mean()
    freq = np.bincount(labels, minlength=1000) / labels.size
    unigram_loss = -np.log(freq[labels]).mean()
    assert model_loss < unigram_loss - 0.3  # 4.22 against 4.57 nats
    assert 0.2 < np.mean(probs.argmax(axis=1) == labels) < 0.6


def test_the_bench_takes_its_binary_rows_from_the_same_model():
    sys.path.insert(0, str(BENCH))
    from bench_recalibration import bench_logits

    binary, outside = bench_logits(300, 2, 0, "next-word")
    logits, labels = next_word(300)
    np.testing.assert_allclose(softmax(binary)[:, 1], softmax(logits)[:, 999], rtol=1e-9)
    np.testing.assert_array_equal(outside, labels == 999)
    thousand, same = bench_logits(300, 1000, 0, "next-word")
    np.testing.assert_array_equal(thousand, logits)
    np.testing.assert_array_equal(same, labels)
