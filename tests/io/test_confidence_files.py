"""Confidence files (question_id, confidence, correct): recognised without options, read as a confidence model,
never as a two-class problem (issue 26)."""
import pickle

import numpy as np
import pytest

import calib_core as cc
from calib_core.io import SeveralModelsError, load_confidence_models
from calib_core.metrics.reports import metric_report


def known_file() -> bytes:
    """1,000 answers whose numbers are known by hand.

    confidence 0.9: 500 answers, 468 right (0.936); 0.7: 300, 180 right (0.6); 0.3: 200, 26 right (0.13).
    Accuracy = 674 / 1000 = 0.674. ECE of 10 equal-width bins = 0.5 * 0.036 + 0.3 * 0.1 + 0.2 * 0.17 = 0.082.
    Read as a two-class problem instead, the "accuracy" (of predicting correctness) is (468 + 180 + 174) / 1000
    = 0.822 and the top-label ECE pools 0.3 with 0.7: 0.5 * 0.036 + 0.5 * |0.7 - 354 / 500| = 0.022.
    """
    rows = []
    for c, n, right in ((0.9, 500, 468), (0.7, 300, 180), (0.3, 200, 26)):
        rows += [(c, int(k < right)) for k in range(n)]
    order = np.random.default_rng(0).permutation(len(rows))
    lines = ["question_id,confidence,correct"] + [f"q{i},{rows[j][0]},{rows[j][1]}" for i, j in enumerate(order)]
    return ("\n".join(lines) + "\n").encode()


def test_the_issue_file_loads_without_options_as_a_confidence_model():
    pred = cc.load_predictions(known_file(), name="answers.csv")
    assert pred.kind == "confidence"
    assert pred.accuracy == pytest.approx(0.674)
    report = metric_report(pred.probs, pred.labels, kind=pred.kind)
    assert report.values["conf_accuracy"] == pytest.approx(0.674)
    assert report.values["conf_ece"] == pytest.approx(0.082)
    assert "accuracy" not in report.values and "ece" not in report.values  # no two-class metric on it
    # what a two-class reading would have shown (the issue's wrong numbers)
    assert cc.accuracy(pred.probs, pred.labels) == pytest.approx(0.822)
    assert cc.ece(pred.probs, pred.labels, n_bins=10) == pytest.approx(0.022)


@pytest.mark.parametrize("confidence", ["confidence", "conf", "p_correct", "prob_correct", "score", "Confidence"])
@pytest.mark.parametrize("correct", ["correct", "is_correct", "hit", "acc"])
def test_column_names_are_recognised(confidence, correct):
    pred = cc.load_predictions(f"id,{confidence},{correct}\na,0.8,1\nb,0.4,0\nc,0.6,0\n".encode(), name="f.csv")
    assert pred.kind == "confidence"
    assert pred.confidence.tolist() == [0.8, 0.4, 0.6] and pred.correct.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("right,wrong", [("true", "false"), ("yes", "no"), ("True", "FALSE"), ("1", "0")])
def test_correctness_spellings(right, wrong):
    pred = cc.load_predictions(f"confidence,correct\n0.8,{right}\n0.4,{wrong}\n".encode(), name="f.csv")
    assert pred.labels.tolist() == [1, 0]


def test_percentages_are_read_and_said():
    pred = cc.load_predictions(b"confidence,correct\n80,1\n45,0\n100,1\n", name="f.csv")
    assert pred.confidence.tolist() == [0.8, 0.45, 1.0]
    assert any("percentages" in w for w in pred.warnings)
    signed = cc.load_predictions(b"confidence,correct\n85%,1\n5%,0\n", name="f.csv")
    assert signed.confidence.tolist() == [0.85, 0.05]
    assert any("'85%'" in w for w in signed.warnings)


def test_bad_values_are_refused_by_row():
    with pytest.raises(cc.CalibrationInputError, match="correctness column 'correct'.*'maybe'.*row 2"):
        cc.load_predictions(b"confidence,correct\n0.8,1\n0.4,maybe\n", name="f.csv")
    with pytest.raises(cc.CalibrationInputError, match="outside"):
        cc.load_predictions(b"confidence,correct\n0.8,1\n140,0\n", name="f.csv")


def test_kind_forces_or_refuses_the_reading():
    # a label column beside a 0/1 correctness column and one confidence column: a confidence file (it was read
    # as classes with the 0/1 `correct` column as P(class 1), the confidence ignored) unless told otherwise
    data = b"y,confidence,correct\n1,0.8,1\n0,0.3,0\n"
    assert cc.load_predictions(data, name="f.csv").kind == "confidence"
    assert cc.load_predictions(data, name="f.csv", kind="classes").kind == "classes"
    assert cc.load_predictions(data, name="f.csv", kind="confidence").accuracy == 0.5
    with pytest.raises(cc.CalibrationInputError, match="no label column"):
        cc.load_predictions(known_file(), name="f.csv", kind="classes")
    with pytest.raises(cc.CalibrationInputError, match="`kind`"):
        cc.load_predictions(known_file(), name="f.csv", kind="llm")


def test_group_split_and_attributes():
    data = b"question_id,confidence,correct,task,split\nq1,0.9,1,math,test\nq2,0.2,0,law,test\nq3,0.6,1,math,cal\n"
    pred = cc.load_predictions(data, name="f.csv", group="task")
    assert pred.groups.tolist() == ["math", "law", "math"] and pred.split.tolist() == ["test", "test", "cal"]
    assert pred.ids.tolist() == ["q1", "q2", "q3"]
    assert "task" in cc.load_predictions(data, name="f.csv").attribute_columns
    test = pred.select_split("test")
    assert test.kind == "confidence" and test.ids.tolist() == ["q1", "q2"] and test.accuracy == 0.5


def test_the_kind_survives_pickling_subsets_and_a_round_trip():
    pred = cc.load_predictions(known_file(), name="f.csv")
    again = pickle.loads(pickle.dumps(pred))
    assert again.kind == "confidence" and np.array_equal(again.ids, pred.ids)
    back = cc.load_predictions(pred.to_frame().to_csv(index=False).encode(), name="g.csv")
    assert back.kind == "confidence" and np.array_equal(back.confidence, pred.confidence)


def test_a_k_class_model_has_the_same_accessors():
    pred = cc.Predictions.from_arrays(probs=[[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]], labels=[0, 1])
    assert pred.confidence.tolist() == [0.7, 0.5] and pred.correct.tolist() == [1.0, 0.0]
    top = pred.as_confidence()
    assert top.kind == "confidence" and top.accuracy == pred.accuracy


LONG = b"""question_id,model,confidence,correct
q1,a,0.9,1
q2,a,0.6,0
q3,a,0.7,1
q2,b,0.8,1
q1,b,0.4,0
"""


def test_a_long_file_of_several_systems_loads_as_several_models_matched_by_id():
    with pytest.raises(SeveralModelsError, match="2 systems") as raised:
        cc.load_predictions(LONG, name="long.csv")
    assert [m.name for m in raised.value.models] == ["a", "b"]
    a, b = load_confidence_models(LONG, name="long.csv")
    assert a.ids.tolist() == b.ids.tolist() == ["q1", "q2"]  # q3: b did not answer it
    assert a.confidence.tolist() == [0.9, 0.6] and b.confidence.tolist() == [0.4, 0.8]
    assert any("left out" in w for w in a.warnings)


def test_one_file_per_system_and_repeated_ids():
    one = b"question_id,confidence,correct\nq1,0.9,1\nq2,0.6,0\n"
    two = b"question_id,confidence,correct\nq2,0.5,1\nq1,0.3,1\n"
    first, second = load_confidence_models([one, two], names=["x.csv", "y.csv"])
    assert second.confidence.tolist() == [0.3, 0.5]
    with pytest.raises(cc.CalibrationInputError, match="more than once"):
        load_confidence_models([one, b"question_id,confidence,correct\nq1,0.9,1\nq1,0.6,0\n"], names=["x", "y"])


# ----------------------------------------------------------------------------- a label column beside the pair
LABELLED = b"label,score,correct\ncat,0.9,1\ndog,0.3,0\ncat,0.8,1\ndog,0.6,0\nbird,0.7,1\n"


def test_a_label_column_beside_confidence_and_correctness_loads_as_a_confidence_model():
    """Refused before ("rows sum to 1.9": `correct` was read as a second class column)."""
    pred = cc.load_predictions(LABELLED, name="judge.csv")
    assert pred.kind == "confidence"
    assert pred.confidence.tolist() == [0.9, 0.3, 0.8, 0.6, 0.7]
    assert pred.correct.tolist() == [1, 0, 1, 0, 1]
    assert "label" in pred.attribute_columns  # the task labels stay available (e.g. as the group)
    assert any("'label'" in w and "not read as classes" in w for w in pred.warnings)
    grouped = cc.load_predictions(LABELLED, group="label")
    assert grouped.kind == "confidence" and sorted(set(grouped.groups)) == ["bird", "cat", "dog"]


@pytest.mark.parametrize("data, classes", [
    # probability columns named like correctness, 0/1 labels: still two classes
    (b"label,correct,incorrect\n0,0.9,0.1\n1,0.3,0.7\n0,0.8,0.2\n1,0.4,0.6\n", ("correct", "incorrect")),
    (b"label,right,left\nright,0.9,0.1\nleft,0.3,0.7\nright,0.6,0.4\n", ("right", "left")),
    # hard 0/1 probabilities of classes right/left: no confidence-like column, still classes
    (b"label,right,left\nright,1,0\nleft,0,1\nright,1,0\n", ("right", "left")),
])
def test_class_columns_named_like_correctness_still_load_as_classes(data, classes):
    pred = cc.load_predictions(data)
    assert pred.kind == "classes" and tuple(pred.class_names) == classes


def test_the_id_columns_name_is_kept_and_written_back():
    """The loader keeps the id column's name (``Predictions.id_column``): ``to_frame`` writes it under that name
    (not always ``question_id``), and the CLI's ``recalibrate`` reads it from there instead of parsing the
    loader's note; a subset and ``as_confidence`` keep it."""
    text = "example_id,confidence,correct\nq1,0.9,1\nq2,0.3,0\nq3,0.8,0\nq4,0.6,1\n"
    pred = cc.load_predictions(text.encode(), name="items.csv")
    assert pred.id_column == "example_id"
    assert list(pred.to_frame().columns[:3]) == ["example_id", "confidence", "correct"]
    assert pred.subset([True, False, True, True]).id_column == "example_id"
    assert pred.as_confidence().id_column == "example_id"
    from calib_core.engines.cli_recalibrate import id_column
    assert id_column(pred) == "example_id"
    assert cc.Predictions.from_confidence([0.9, 0.3], [1, 0]).id_column is None
