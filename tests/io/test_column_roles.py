"""Tests for calib_core.io.columns: class columns decided by names and roles (issues 23 and 30).

Each case is a file a user wrote: the loader must find the classes from the
column names the labels give, never make an identifier or an integer
attribute a class or a score, and read one score column named for a class as
that class's probability.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calib_core.engines import evaluate
from calib_core.io import load_predictions
from calib_core.io.interpret import PredictionsFileError
from calib_core.validation import ROW_SUM_TOLERANCE, CalibrationInputError


def _vote_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """The file of issue 23.1: labels are names, class columns named after them, an integer attribute."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    label = np.where(rng.uniform(size=n) < p, "Clinton", "Dole")
    return pd.DataFrame({"label": label, "Clinton": p, "Dole": 1.0 - p, "educ": rng.integers(1, 8, n)})


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def test_labels_as_names_choose_the_class_columns_and_leave_an_integer_attribute():
    frame = _vote_frame()
    pred = load_predictions(_csv(frame), name="vote.csv")
    assert pred.class_names == ("Clinton", "Dole")
    assert pred.input_kind == "probabilities"
    np.testing.assert_array_equal(pred.probs[:, 0], frame["Clinton"].to_numpy())
    expected = (frame["label"] == "Dole").to_numpy().astype(int)
    np.testing.assert_array_equal(pred.labels, expected)
    assert "educ" in pred.attribute_columns
    educ = frame["educ"]
    note = f"not used as classes: 'educ' (integers {educ.min()}-{educ.max()})"
    assert any(note in w for w in pred.warnings), pred.warnings
    # The group column is offered without deselecting anything.
    grouped = load_predictions(_csv(frame), name="vote.csv", group="educ")
    assert grouped.class_names == ("Clinton", "Dole") and grouped.group_column == "educ"


def test_labels_as_names_with_prefixed_columns_and_extra_numbers():
    frame = _vote_frame().rename(columns={"Clinton": "p_Clinton", "Dole": "p_Dole"})
    frame["age"] = np.linspace(18.5, 90.5, frame.shape[0])
    pred = load_predictions(_csv(frame), name="vote.csv")
    assert pred.class_names == ("Clinton", "Dole")


def test_names_that_do_not_sum_to_one_take_the_unnamed_probability_column():
    """A class no label shows (``bird``) is still a class when the rows need it to sum to 1."""
    frame = pd.DataFrame({"label": ["cat", "dog", "cat", "dog"], "cat": [0.5, 0.2, 0.6, 0.1],
                          "dog": [0.3, 0.7, 0.2, 0.8], "bird": [0.2, 0.1, 0.2, 0.1], "educ": [1, 2, 3, 5]})
    pred = load_predictions(_csv(frame), name="pets.csv")
    assert pred.class_names == ("cat", "dog", "bird")
    assert "educ" in pred.attribute_columns


def test_streaming_engine_reads_the_same_classes(tmp_path):
    frame = _vote_frame(n=500)
    path = tmp_path / "vote.csv"
    frame.to_csv(path, index=False)
    memory = load_predictions(path)
    result = evaluate(path, engine="stream", metrics=("ece", "accuracy"))
    assert tuple(result.class_names) == memory.class_names == ("Clinton", "Dole")
    from calib_core import ece
    assert result.metrics["ece"] == pytest.approx(ece(memory.probs, memory.labels), abs=1e-12)


@pytest.mark.parametrize("id_name", ["question_id", "id", "row", "index", "sample_idx", "QuestionID"])
def test_an_identifier_is_never_a_score(id_name):
    rng = np.random.default_rng(1)
    n = 50
    confidence = rng.uniform(0.0, 1.0, n)
    frame = pd.DataFrame({id_name: np.arange(1, n + 1), "confidence": confidence,
                          "label": (rng.uniform(size=n) < confidence).astype(int)})
    pred = load_predictions(_csv(frame), name="qa.csv")
    assert pred.input_kind == "probabilities"
    np.testing.assert_array_equal(pred.probs[:, 1], confidence)
    assert any("'confidence'" in w and "class 1" in w for w in pred.warnings), pred.warnings


def test_distinct_consecutive_integers_are_never_a_class():
    rng = np.random.default_rng(2)
    n = 40
    p = rng.uniform(size=n)
    frame = pd.DataFrame({"item": np.arange(100, 100 + n), "label": (rng.uniform(size=n) < p).astype(int),
                          "p_1": p})
    frame = frame[["label", "item", "p_1"]]
    pred = load_predictions(_csv(frame), name="items.csv")
    assert pred.n_classes == 2
    np.testing.assert_array_equal(pred.probs[:, 1], p)
    frame = frame.rename(columns={"p_1": "score"})
    pred = load_predictions(_csv(frame), name="items.csv")
    np.testing.assert_array_equal(pred.probs[:, 1], p)


def test_no_logit_fix_is_offered_for_an_identifier():
    """With the only score column an identifier, the refusal offers no "Read as logits"."""
    frame = pd.DataFrame({"question_id": np.arange(1, 21), "label": [0, 1] * 10})
    with pytest.raises(CalibrationInputError) as info:
        load_predictions(_csv(frame), name="qa.csv")
    assert not any(fix.key == "logits" for fix in getattr(info.value, "fixes", ()))
    assert "question_id" in str(info.value)


def test_labels_equal_to_the_class_columns_names_load_as_they_are():
    text = "label,class_0,class_1\nclass_0,0.8,0.2\nclass_1,0.3,0.7\nclass_1,0.4,0.6\n"
    pred = load_predictions(text.encode(), name="m.csv")
    assert pred.class_names == ("class_0", "class_1")
    assert pred.labels.tolist() == [0, 1, 1]


def test_a_single_column_named_for_class_zero_is_its_probability():
    pred = load_predictions(b"label,p_0\n0,0.9\n1,0.2\n0,0.8\n", name="m.csv")
    assert pred.accuracy == 1.0
    assert pred.class_names == ("0", "1")
    np.testing.assert_allclose(pred.probs[:, 0], [0.9, 0.2, 0.8])


def test_a_single_column_named_for_class_zero_streams_the_same(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("label,p_0\n0,0.9\n1,0.2\n0,0.8\n1,0.4\n")
    memory = load_predictions(path)
    result = evaluate(path, engine="stream", metrics=("accuracy", "ece"))
    assert memory.accuracy == result.metrics["accuracy"] == 1.0


def test_a_single_column_whose_name_says_nothing_is_stated():
    pred = load_predictions(b"label,score\n0,0.1\n1,0.8\n0,0.3\n", name="m.csv")
    np.testing.assert_allclose(pred.probs[:, 1], [0.1, 0.8, 0.3])
    assert any("'score'" in w and "class 1" in w for w in pred.warnings), pred.warnings
    named = load_predictions(b"label,p_1\n0,0.1\n1,0.8\n0,0.3\n", name="m.csv")
    assert not any("taken as the probability" in w for w in named.warnings)


def test_a_round_off_negative_is_accepted_within_the_row_sum_tolerance():
    """-2.2e-16 (from 1 - p) is within the tolerance rows are allowed to miss 1 by."""
    p = 1.0 - 0.9 - 0.1  # a tiny negative from floating-point subtraction
    assert -ROW_SUM_TOLERANCE <= p < 0.0
    text = f"label,p_0,p_1,p_2\n0,0.1,0.7,0.2\n1,{p!r},0.5,0.5\n2,0.2,0.3,0.5\n"
    pred = load_predictions(text.encode(), name="m.csv")
    assert pred.probs.min() == 0.0
    assert any("read as 0" in w for w in pred.warnings), pred.warnings
    binary = load_predictions(f"label,p_1\n0,{p!r}\n1,1.0000000000000002\n".encode(), name="b.csv")
    assert binary.probs.min() == 0.0 and binary.probs.max() == 1.0
    with pytest.raises(CalibrationInputError):
        load_predictions(f"label,p_0,p_1\n0,{-2 * ROW_SUM_TOLERANCE!r},1.0\n".encode(), name="m.csv")


def test_a_duplicate_column_past_64_kib_of_header_is_refused():
    names = [f"p_{k}" for k in range(12_000)] + ["p_3"]
    header = "label," + ",".join(names)
    assert len(header.encode()) > 65536
    row = "0," + ",".join(["1"] + ["0"] * (len(names) - 1))  # a valid row: only the header is wrong
    with pytest.raises(CalibrationInputError, match="duplicate.*p_3|p_3.*twice|p_3.*more than once"):
        load_predictions(f"{header}\n{row}\n".encode(), name="wide.csv")


def test_the_class_names_mapping_is_proposed_only_when_names_cannot_decide():
    text = "label,a,b\ncat,0.8,0.2\ndog,0.3,0.7\n"
    with pytest.raises(PredictionsFileError) as info:
        load_predictions(text.encode(), name="m.csv")
    assert info.value.fixes[0].key == "class_names"


def test_one_score_column_streams_as_in_memory(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("label,p_1\n0,0.1\n1,0.8\n0,0.2\n1,0.6\n")
    result = evaluate(path, engine="stream", metrics=("accuracy", "brier"))
    memory = load_predictions(path)
    from calib_core import brier_score
    assert result.metrics["accuracy"] == memory.accuracy == 1.0
    assert result.metrics["brier"] == pytest.approx(brier_score(memory.probs, memory.labels), abs=1e-12)


def test_a_round_off_negative_streams_as_in_memory(tmp_path):
    p = 1.0 - 0.9 - 0.1
    path = tmp_path / "m.csv"
    path.write_text(f"label,p_0,p_1,p_2\n0,0.6,0.2,0.2\n1,{p!r},0.5,0.5\n2,0.2,0.3,0.5\n")
    memory = load_predictions(path)
    result = evaluate(path, engine="stream", metrics=("accuracy", "ece"))
    from calib_core import ece
    assert result.metrics["ece"] == pytest.approx(ece(memory.probs, memory.labels), abs=1e-12)


def test_an_integer_attribute_beside_probabilities_is_not_a_class_when_names_cannot_tell():
    frame = pd.DataFrame({"label": [0, 1, 2, 1], "a": [0.7, 0.1, 0.2, 0.3], "b": [0.2, 0.8, 0.3, 0.5],
                          "c": [0.1, 0.1, 0.5, 0.2], "age_group": [3, 5, 2, 3]})
    pred = load_predictions(_csv(frame), name="m.csv")
    assert pred.n_classes == 3 and pred.accuracy == 1.0
    assert "age_group" in pred.attribute_columns
    binary = pd.DataFrame({"label": [0, 1, 1, 0], "score": [0.2, 0.9, 0.6, 0.4], "educ": [1, 7, 3, 3]})
    assert load_predictions(_csv(binary), name="b.csv").accuracy == 1.0


def test_logits_written_as_integers_stay_classes():
    """When every score column holds integers they are logits (no float column to set them apart from)."""
    frame = pd.DataFrame({"label": [0, 1, 2, 1], "a": [2, -1, 0, 0], "b": [0, 3, -2, 4],
                          "c": [-1, 0, 3, 1]})
    pred = load_predictions(_csv(frame), name="m.csv")
    assert pred.n_classes == 3 and pred.input_kind == "logits"


def test_an_integer_attribute_beside_float_logits_is_not_a_class():
    """Issue 23.1 again: ``age`` beside float logits must not become a class (nor make the file logits)."""
    rng = np.random.default_rng(5)
    n = 200
    logits = rng.normal(0.0, 2.0, (n, 3))
    labels = logits.argmax(axis=1)
    frame = pd.DataFrame({"label": labels, "a": logits[:, 0], "b": logits[:, 1], "c": logits[:, 2],
                          "age": rng.integers(18, 90, n)})
    pred = load_predictions(_csv(frame), name="m.csv")
    assert pred.n_classes == 3 and pred.input_kind == "logits" and pred.accuracy == 1.0
    assert "age" in pred.attribute_columns
    assert any("not used as classes" in w and "'age'" in w for w in pred.warnings), pred.warnings
    score = rng.normal(0.0, 2.0, n)
    binary = pd.DataFrame({"label": (score > 0).astype(int), "score": score, "age": rng.integers(18, 90, n)})
    pred = load_predictions(_csv(binary), name="b.csv")
    assert pred.n_classes == 2 and pred.accuracy == 1.0
    assert "age" in pred.attribute_columns


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(n_classes=st.integers(40, 90), name_length=st.integers(800, 1500), data=st.data())
def test_a_repeated_name_anywhere_in_a_long_header_is_refused(n_classes, name_length, data):
    """Long headers (class names of about 1 KB): a name repeated past the sniffer's 64 KiB is refused."""
    names = [f"p_{k:04d}" + "x" * name_length for k in range(n_classes)]
    header = "label," + ",".join(names)
    cut = header.encode()[:65536].decode(errors="ignore").count(",")  # columns the sniffer sees whole
    first = data.draw(st.integers(0, n_classes - 1))
    position = data.draw(st.integers(max(cut, first + 1), n_classes))
    names.insert(position, names[first])
    row = "0," + ",".join(["1"] + ["0"] * (len(names) - 1))
    with pytest.raises(CalibrationInputError, match="duplicate column name"):
        load_predictions(f"label,{','.join(names)}\n{row}\n".encode(), name="wide.csv")


@pytest.mark.parametrize("n", [30, 150])
def test_a_confidence_column_holding_row_numbers_is_not_the_score(n):
    """``confidence`` holding 0..N-1 is an identifier: not the score, and no fix reading it as one
    (logits, percentages) is offered."""
    frame = pd.DataFrame({"confidence": np.arange(n), "label": [0, 1] * (n // 2)})
    with pytest.raises(CalibrationInputError) as info:
        load_predictions(_csv(frame), name="qa.csv")
    assert not getattr(info.value, "fixes", ()), info.value.fixes
    assert "logits" not in str(info.value) and "percentages" not in str(info.value)
    assert "confidence" in str(info.value) and "identifier" in str(info.value)


def test_a_round_off_above_one_is_read_as_one_in_memory_and_in_batches(tmp_path):
    """1 + 1e-10 in a multiclass row is round-off like 1 - p = -2.2e-16: read as 1, with the note, by
    the loader and by every streaming batch alike (one tolerance, both ends)."""
    from calib_core import ece
    from calib_core.engines.batches import ColumnBatch
    high = 1.0 + 1e-10
    text = f"label,p_0,p_1,p_2\n0,0.6,0.2,0.2\n1,0.0,{high!r},0.0\n2,0.2,0.3,0.5\n"
    pred = load_predictions(text.encode(), name="m.csv")
    assert pred.probs.max() == 1.0
    assert any("read as 1" in w for w in pred.warnings), pred.warnings
    columns = [np.array([0.6, 0.0, 0.2]), np.array([0.2, high, 0.3]), np.array([0.2, 0.0, 0.5])]
    checked = ColumnBatch(columns, np.array([0, 1, 2]), 0, "m.csv").check()
    assert max(float(c.max()) for c in checked.columns) == 1.0
    np.testing.assert_array_equal(np.column_stack(checked.columns), pred.probs)
    path = tmp_path / "m.csv"
    path.write_text(text)
    result = evaluate(path, engine="stream", metrics=("ece",))
    assert result.metrics["ece"] == pytest.approx(ece(pred.probs, pred.labels), abs=1e-15)
