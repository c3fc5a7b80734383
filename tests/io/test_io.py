"""Tests for calib_core.io: every format, layout and bad input of load_predictions."""
from __future__ import annotations

import gzip
import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calib_core.io import Predictions, demo_datasets, load_demo, load_predictions
from calib_core.io.formats import MAX_CLASSES
from calib_core.io.interpret import LoadFix, PredictionsFileError
from calib_core.validation import CalibrationInputError, softmax

PROBS = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.25, 0.5, 0.25], [0.05, 0.05, 0.9]])
LABELS = np.array([0, 2, 1, 0])


def csv_bytes(text: str) -> bytes:
    return text.encode("utf-8")


def load_text(text: str, name: str = "model.csv", **kwargs) -> Predictions:
    return load_predictions(csv_bytes(text), name=name, **kwargs)


def wide_frame(class_names=("a", "b", "c"), prefix="p_") -> pd.DataFrame:
    frame = pd.DataFrame(PROBS, columns=[f"{prefix}{c}" for c in class_names])
    frame.insert(0, "label", LABELS)
    return frame


# ---------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------

def test_csv_path_wide_round_trip_is_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=200)
    labels = rng.integers(0, 4, size=200)
    frame = pd.DataFrame(probs, columns=[f"p_{k}" for k in range(4)])
    frame.insert(0, "label", labels)
    path = tmp_path / "resnet.csv"
    frame.to_csv(path, index=False)
    pred = load_predictions(path)
    np.testing.assert_array_equal(pred.probs, probs)  # kept bit for bit, not renormalised
    np.testing.assert_array_equal(pred.labels, labels)
    assert pred.class_names == ("0", "1", "2", "3")
    assert pred.name == "resnet"
    assert pred.source_format == "csv"
    assert pred.input_kind == "probabilities" and pred.logits is None
    assert pred.split is None
    assert pred.warnings == ()
    assert pred.n_samples == 200 and pred.n_classes == 4
    assert pred.accuracy == pytest.approx(np.mean(probs.argmax(axis=1) == labels))


def test_path_given_as_str(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    wide_frame().to_csv(path, index=False)
    assert load_predictions(str(path)).class_names == ("a", "b", "c")


@pytest.mark.parametrize("name", ["m.tsv", "m.txt", None])
def test_tab_separated_is_sniffed(name: str | None) -> None:
    data = wide_frame().to_csv(index=False, sep="\t").encode()
    pred = load_predictions(data, name=name)
    np.testing.assert_array_equal(pred.probs, PROBS)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert any("tab-separated" in w for w in pred.warnings)


def test_semicolon_with_decimal_commas() -> None:
    pred = load_text("label;p_a;p_b\n0;0,8;0,2\n1;0,25;0,75\n")
    np.testing.assert_allclose(pred.probs, [[0.8, 0.2], [0.25, 0.75]])
    assert any("decimal commas" in w for w in pred.warnings)


def test_semicolon_with_decimal_points() -> None:
    pred = load_text("label;p_a;p_b\n0;0.8;0.2\n1;0.25;0.75\n")
    np.testing.assert_allclose(pred.probs, [[0.8, 0.2], [0.25, 0.75]])


def test_parquet_path_and_bytes(tmp_path: Path) -> None:
    frame = wide_frame()
    frame["split"] = ["calibration", "calibration", "test", "test"]
    path = tmp_path / "m.parquet"
    frame.to_parquet(path)
    for source in (path, path.read_bytes()):
        pred = load_predictions(source)
        np.testing.assert_array_equal(pred.probs, PROBS)
        np.testing.assert_array_equal(pred.labels, LABELS)
        assert pred.source_format == "parquet"
        assert pred.split.tolist() == ["calibration", "calibration", "test", "test"]


def test_parquet_with_string_labels(tmp_path: Path) -> None:
    frame = wide_frame()
    frame["label"] = np.array(["a", "b", "c"])[LABELS]
    path = tmp_path / "m.parquet"
    frame.to_parquet(path)
    np.testing.assert_array_equal(load_predictions(path).labels, LABELS)


def test_npz_named_arrays(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    np.savez(path, probs=PROBS, labels=LABELS)
    pred = load_predictions(path)
    np.testing.assert_array_equal(pred.probs, PROBS)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert pred.source_format == "npz" and pred.name == "m"


@pytest.mark.parametrize("keys", [("probabilities", "y"), ("scores", "targets"), ("PROBS", "Labels")])
def test_npz_key_synonyms(keys: tuple[str, str]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{keys[0]: PROBS, keys[1]: LABELS})
    pred = load_predictions(buffer.getvalue(), name="m.npz")
    np.testing.assert_array_equal(pred.labels, LABELS)


def test_npz_unnamed_arrays_with_warning() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, PROBS, LABELS)
    pred = load_predictions(buffer.getvalue())  # no name: sniffed from the zip magic
    np.testing.assert_array_equal(pred.probs, PROBS)
    assert any("arr_0" in w for w in pred.warnings)


def test_npz_logits_class_names_and_split() -> None:
    logits = np.log(PROBS) + 3.0
    buffer = io.BytesIO()
    np.savez_compressed(buffer, logits=logits, labels=LABELS, class_names=np.array(["x", "y", "z"]),
                        split=np.array(["calibration", "test", "test", "calibration"]))
    pred = load_predictions(buffer.getvalue(), name="m.npz")
    np.testing.assert_allclose(pred.probs, PROBS, atol=1e-12)
    np.testing.assert_array_equal(pred.logits, logits)
    assert pred.input_kind == "logits"
    assert pred.class_names == ("x", "y", "z")
    assert pred.split_names == ("calibration", "test")


def test_npz_keeps_consistent_logits_and_drops_inconsistent_ones() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, probs=PROBS, logits=np.log(PROBS), labels=LABELS)
    kept = load_predictions(buffer.getvalue(), name="m.npz")
    np.testing.assert_array_equal(kept.logits, np.log(PROBS))
    buffer = io.BytesIO()
    np.savez(buffer, probs=PROBS, logits=np.log(PROBS) * 2.0, labels=LABELS)
    dropped = load_predictions(buffer.getvalue(), name="m.npz")
    assert dropped.logits is None
    assert any("ignored" in w for w in dropped.warnings)


def test_npz_score_column_override_and_ignored_arrays() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, my_output=PROBS, truth_idx=LABELS, extra=np.zeros(3))
    pred = load_predictions(buffer.getvalue(), name="m.npz", score_column="my_output",
                            label_column="truth_idx")
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert any("extra" in w for w in pred.warnings)


def test_npz_binary_scores_vector() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, scores=np.array([0.2, 0.9, 0.6]), labels=np.array([0, 1, 0]))
    pred = load_predictions(buffer.getvalue(), name="m.npz")
    np.testing.assert_allclose(pred.probs, [[0.8, 0.2], [0.1, 0.9], [0.4, 0.6]])


@pytest.mark.parametrize("first", [True, False])
def test_npy_plain_matrix_label_column_is_found(first: bool) -> None:
    matrix = np.column_stack([LABELS, PROBS] if first else [PROBS, LABELS])
    buffer = io.BytesIO()
    np.save(buffer, matrix)
    pred = load_predictions(buffer.getvalue(), name="m.npy")
    np.testing.assert_array_equal(pred.probs, PROBS)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert pred.source_format == "npy"
    assert any("took column" in w for w in pred.warnings)


def test_npy_ambiguous_matrix_needs_label_column() -> None:
    matrix = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])  # first and last column both fit
    buffer = io.BytesIO()
    np.save(buffer, matrix)
    with pytest.raises(CalibrationInputError, match="label_column=0"):
        load_predictions(buffer.getvalue(), name="m.npy")
    pred = load_predictions(buffer.getvalue(), name="m.npy", label_column=-1)
    np.testing.assert_array_equal(pred.labels, [0, 1])
    np.testing.assert_array_equal(pred.probs, [[0.0, 1.0], [1.0, 0.0]])


def test_npy_structured_array_is_a_table() -> None:
    records = np.zeros(2, dtype=[("label", "i8"), ("p_cat", "f8"), ("p_dog", "f8")])
    records["label"] = [1, 0]
    records["p_cat"] = [0.3, 0.6]
    records["p_dog"] = [0.7, 0.4]
    buffer = io.BytesIO()
    np.save(buffer, records)
    pred = load_predictions(buffer.getvalue(), name="m.npy")
    assert pred.class_names == ("cat", "dog")
    np.testing.assert_array_equal(pred.labels, [1, 0])


def test_gzipped_csv() -> None:
    data = gzip.compress(wide_frame().to_csv(index=False).encode())
    pred = load_predictions(data, name="m.csv.gz")
    np.testing.assert_array_equal(pred.probs, PROBS)
    assert pred.name == "m"


def test_bytes_with_name_hint_and_model_name() -> None:
    data = wide_frame().to_parquet()
    pred = load_predictions(data, name="effnet.parquet")
    assert pred.name == "effnet" and pred.source_format == "parquet"
    assert load_text("label,p_a,p_b\n0,0.5,0.5\n", name="ResNet v2").name == "ResNet v2"
    assert load_predictions(b"label,p_a,p_b\n0,0.5,0.5\n").name == "model"


def test_file_like_uses_its_name_attribute() -> None:
    class Upload(io.BytesIO):
        name = "uploaded_model.parquet"

    pred = load_predictions(Upload(wide_frame().to_parquet()))
    assert pred.name == "uploaded_model" and pred.source_format == "parquet"


def test_file_format_forces_the_reader() -> None:
    data = wide_frame().to_csv(index=False, sep="\t").encode()
    assert load_predictions(data, name="blob.bin", file_format="tsv").n_classes == 3


def test_latin1_file_is_decoded_with_warning() -> None:
    data = "label,p_caf\u00e9,p_th\u00e9\ncaf\u00e9,0.6,0.4\nth\u00e9,0.1,0.9\n".encode("latin-1")
    pred = load_predictions(data, name="m.csv")
    assert pred.class_names == ("caf\u00e9", "th\u00e9")
    np.testing.assert_array_equal(pred.labels, [0, 1])
    assert any("Latin-1" in w for w in pred.warnings)


def test_utf8_bom_and_spaces_around_names() -> None:
    pred = load_predictions("\ufefflabel, p_a , p_b\n0, 0.5, 0.5\n1,0.2,0.8\n".encode("utf-8"), name="m.csv")
    assert pred.class_names == ("a", "b")
    np.testing.assert_array_equal(pred.labels, [0, 1])


# ---------------------------------------------------------------------------
# Layouts and detection
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("label_name", ["label", "Labels", "y", "y_true", "TARGET", "true_label", "class", "truth"])
def test_label_column_names(label_name: str) -> None:
    pred = load_text(f"{label_name},p_a,p_b\n1,0.3,0.7\n0,0.9,0.1\n")
    np.testing.assert_array_equal(pred.labels, [1, 0])


@pytest.mark.parametrize("prefix", ["p_", "prob_", "proba_", "probs_", "probability_", "score_", "class_", "P_"])
def test_class_column_prefixes(prefix: str) -> None:
    pred = load_text(f"label,{prefix}cat,{prefix}dog,id\n1,0.3,0.7,17\n0,0.9,0.1,18\n")
    assert pred.class_names == ("cat", "dog")
    np.testing.assert_array_equal(pred.probs, [[0.3, 0.7], [0.9, 0.1]])


def test_unprefixed_numeric_columns_except_known_non_class_columns() -> None:
    pred = load_text("id,label,cat,dog,fold,weight,split\n7,1,0.3,0.7,0,1.0,test\n8,0,0.9,0.1,1,2.0,test\n")
    assert pred.class_names == ("cat", "dog")


def test_pandas_index_column_is_not_a_class() -> None:
    data = wide_frame().to_csv(index=True).encode()  # header starts with an empty name
    pred = load_predictions(data, name="m.csv")
    assert pred.class_names == ("a", "b", "c")


def test_text_column_without_prefix_is_ignored_with_warning() -> None:
    pred = load_text("label,cat,dog,comment\n1,0.3,0.7,fine\n0,0.9,0.1,odd\n")
    assert pred.class_names == ("cat", "dog")
    assert any("'comment'" in w for w in pred.warnings)


def test_unprefixed_column_next_to_prefixed_ones_is_reported() -> None:
    pred = load_text("label,p_a,p_b,age\n1,0.3,0.7,40\n0,0.9,0.1,50\n")
    assert pred.class_names == ("a", "b")
    assert any("'age'" in w for w in pred.warnings)


def test_several_label_candidates_warn() -> None:
    pred = load_text("label,target,p_a,p_b\n1,0,0.3,0.7\n0,1,0.9,0.1\n")
    np.testing.assert_array_equal(pred.labels, [1, 0])
    assert any("several columns" in w for w in pred.warnings)


def test_string_labels_match_class_column_names() -> None:
    pred = load_text("label,p_cat,p_dog,p_fox\ndog,0.2,0.7,0.1\nfox,0.1,0.1,0.8\ncat,0.5,0.3,0.2\n")
    assert pred.class_names == ("cat", "dog", "fox")
    np.testing.assert_array_equal(pred.labels, [1, 2, 0])


def test_string_labels_with_generic_columns_stop_with_a_proposed_mapping() -> None:
    # Issue 12 item 3: never a guess; the mapping is proposed and applied only on request.
    text = "label,p_0,p_1,p_2\nfox,0.2,0.1,0.7\ncat,0.5,0.3,0.2\ndog,0.1,0.8,0.1\n"
    with pytest.raises(PredictionsFileError, match=r"'cat' -> 'p_0', 'dog' -> 'p_1', 'fox' -> 'p_2'") as info:
        load_text(text)
    assert info.value.proposed_mapping == (("cat", "p_0"), ("dog", "p_1"), ("fox", "p_2"))
    (fix,) = info.value.fixes
    assert fix.key == "class_names" and "class_names" not in info.value.plain
    pred = load_text(text, **fix.kwargs)
    assert pred.class_names == ("cat", "dog", "fox")
    np.testing.assert_array_equal(pred.labels, [2, 0, 1])
    assert any("named on request" in w for w in pred.warnings)


def test_string_labels_with_generic_columns_and_wrong_count() -> None:
    with pytest.raises(CalibrationInputError, match=r"2 distinct.*3 class columns"):
        load_text("label,p_0,p_1,p_2\nfox,0.2,0.1,0.7\ncat,0.5,0.3,0.2\n")


def test_integer_labels_matched_to_numbered_columns_by_name() -> None:
    pred = load_text("label,p_1,p_2,p_3\n1,0.5,0.3,0.2\n3,0.1,0.1,0.8\n2,0.1,0.8,0.1\n")
    np.testing.assert_array_equal(pred.labels, [0, 2, 1])
    assert any("by name" in w for w in pred.warnings)


def test_whole_float_labels_and_boolean_labels() -> None:
    pred = load_text("label,p_a,p_b\n1.0,0.5,0.5\n0.0,0.2,0.8\n")
    np.testing.assert_array_equal(pred.labels, [1, 0])
    pred = load_text("label,score\nTrue,0.9\nFalse,0.2\n")
    np.testing.assert_array_equal(pred.labels, [1, 0])
    assert pred.class_names == ("False", "True")


def test_binary_score_column() -> None:
    pred = load_text("label,score\n0,0.3\n1,0.9\n1,0.4\n")
    np.testing.assert_allclose(pred.probs, [[0.7, 0.3], [0.1, 0.9], [0.6, 0.4]])
    assert pred.class_names == ("0", "1")
    assert pred.input_kind == "probabilities"


def test_binary_score_column_named_after_a_string_label() -> None:
    pred = load_text("label,p_malignant\nbenign,0.3\nmalignant,0.9\n")
    assert pred.class_names == ("benign", "malignant")
    np.testing.assert_array_equal(pred.labels, [0, 1])
    np.testing.assert_allclose(pred.probs[:, 1], [0.3, 0.9])
    pred = load_text("label,p_benign\nbenign,0.3\nmalignant,0.9\n")  # P(benign) is class 1
    assert pred.class_names == ("malignant", "benign")
    np.testing.assert_array_equal(pred.labels, [1, 0])


def test_binary_generic_score_with_string_labels_proposes_a_mapping() -> None:
    with pytest.raises(PredictionsFileError, match=r"holds P\('yes'\)") as info:
        load_text("label,score\nno,0.3\nyes,0.9\n")
    pred = load_text("label,score\nno,0.3\nyes,0.9\n", **info.value.fixes[0].kwargs)
    assert pred.class_names == ("no", "yes")
    np.testing.assert_allclose(pred.probs[:, 1], [0.3, 0.9])


def test_binary_score_with_three_string_labels_is_refused() -> None:
    with pytest.raises(CalibrationInputError, match="binary problem.*3 values"):
        load_text("label,score\nno,0.3\nyes,0.9\nmaybe,0.5\n")


def test_binary_single_logit_column_uses_sigmoid() -> None:
    pred = load_text("label,logit\n0,-1.5\n1,2.0\n1,0.0\n")
    z = np.array([-1.5, 2.0, 0.0])
    np.testing.assert_allclose(pred.probs[:, 1], 1.0 / (1.0 + np.exp(-z)), rtol=1e-14)
    np.testing.assert_array_equal(pred.logits, np.column_stack([np.zeros(3), z]))
    assert pred.input_kind == "logits"
    assert any("sigmoid" in w for w in pred.warnings)


def test_overrides_label_class_and_score_columns() -> None:
    text = "truth,a,b,c\n0,0.5,0.5,0\n1,0.2,0.8,1\n"
    pred = load_text(text, class_columns=["a", "b"])
    np.testing.assert_array_equal(pred.labels, [0, 1])
    assert pred.class_names == ("a", "b")
    pred = load_text(text, label_column="c", score_column="b")
    np.testing.assert_array_equal(pred.labels, [0, 1])
    np.testing.assert_allclose(pred.probs[:, 1], [0.5, 0.8])
    pred = load_text("gold,p_a,p_b\n1,0.5,0.5\n", label_column="GOLD")  # case-insensitive
    np.testing.assert_array_equal(pred.labels, [1])


def test_override_errors() -> None:
    text = "label,a,b\n0,0.5,0.5\n"
    with pytest.raises(CalibrationInputError, match=r"'nope'.*label_column=.*'label', 'a', 'b'"):
        load_text(text, label_column="nope")
    with pytest.raises(CalibrationInputError, match="class_columns="):
        load_text(text, class_columns=["a", "zz"])
    with pytest.raises(CalibrationInputError, match="not both"):
        load_text(text, class_columns=["a", "b"], score_column="a")
    with pytest.raises(CalibrationInputError, match="same column twice"):
        load_text(text, class_columns=["a", "a"])
    with pytest.raises(CalibrationInputError, match="both the label and a class column"):
        load_text(text, class_columns=["label", "a"])


# ---------------------------------------------------------------------------
# Logits, probabilities and row sums
# ---------------------------------------------------------------------------

def test_logit_prefix_means_logits_even_inside_unit_interval() -> None:
    pred = load_text("label,logit_a,logit_b,logit_c\n0,0.1,0.2,0.3\n2,0.5,0.1,0.2\n")
    logits = np.array([[0.1, 0.2, 0.3], [0.5, 0.1, 0.2]])
    np.testing.assert_allclose(pred.probs, softmax(logits), rtol=1e-14)
    np.testing.assert_array_equal(pred.logits, logits)
    assert pred.class_names == ("a", "b", "c")
    assert any("logit_" in w for w in pred.warnings)


def test_values_outside_unit_interval_are_logits() -> None:
    pred = load_text("label,a,b,c\n0,1.5,-2,3\n2,0.5,0.1,0.2\n")
    assert pred.input_kind == "logits"
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0)
    assert any("outside [0, 1]" in w for w in pred.warnings)


def test_declared_logits_and_declared_probabilities() -> None:
    text = "label,p_a,p_b\n0,0.5,0.5\n1,0.2,0.8\n"
    pred = load_text(text, input_kind="logits")
    np.testing.assert_allclose(pred.probs[1], softmax([[0.2, 0.8]])[0])
    assert pred.warnings == ()  # declared: nothing assumed
    with pytest.raises(CalibrationInputError, match="above 1.*input_kind='logits'"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n1,2,0.8\n", input_kind="probabilities")
    with pytest.raises(CalibrationInputError, match="above 1"):
        load_text("label,score\n0,0.5\n1,1.5\n", input_kind="probabilities")
    assert load_text(text, input_kind="probs").input_kind == "probabilities"


def test_rows_summing_to_one_with_a_negative_entry_are_not_logits() -> None:
    with pytest.raises(CalibrationInputError, match=r"negative probability \(-0.1\).*row 1 \(file line 2\)"):
        load_text("label,p_a,p_b\n0,-0.1,1.1\n1,0.4,0.6\n")


def test_rows_not_summing_to_one_are_refused() -> None:
    with pytest.raises(CalibrationInputError,
                       match=r"row 2 \(file line 3\) sum to 1.1.*p_a=0.5, p_b=0.6.*renormalize=True"):
        load_text("label,p_a,p_b\n0,0.4,0.6\n1,0.5,0.6\n")


def test_renormalize_divides_rows_and_says_how_many() -> None:
    pred = load_text("label,p_a,p_b\n0,0.4,0.6\n1,0.5,0.6\n0,1,1\n", renormalize=True)
    np.testing.assert_allclose(pred.probs, [[0.4, 0.6], [0.5 / 1.1, 0.6 / 1.1], [0.5, 0.5]])
    note = next(w for w in pred.warnings if "renormalised" in w)
    assert "2 row(s)" in note and "largest deviation was 1" in note


def test_renormalize_refuses_all_zero_rows() -> None:
    with pytest.raises(CalibrationInputError, match="sums to 0"):
        load_text("label,p_a,p_b\n0,0,0\n1,0.5,0.6\n", renormalize=True)


def test_tiny_row_sum_deviations_are_kept_exactly() -> None:
    quiet = load_text("label,p_a,p_b\n0,0.5,0.5000001\n1,0.2,0.8\n")
    assert quiet.warnings == ()
    assert quiet.probs[0, 1] == 0.5000001  # not renormalised
    noisy = load_text("label,p_a,p_b\n0,0.5,0.50005\n1,0.2,0.8\n")
    assert noisy.probs[0, 1] == 0.50005
    assert any("within 5e-05" in w for w in noisy.warnings)


# ---------------------------------------------------------------------------
# Split column and subsets
# ---------------------------------------------------------------------------

def test_split_column_subset_and_select_split() -> None:
    pred = load_text("label,p_a,p_b,split\n0,0.9,0.1,calibration\n1,0.2,0.8,test\n1,0.6,0.4,test\n")
    assert pred.split.tolist() == ["calibration", "test", "test"]
    assert pred.split_names == ("calibration", "test")
    test = pred.select_split("test")
    assert test.n_samples == 2 and test.accuracy == 0.5
    np.testing.assert_array_equal(test.labels, [1, 1])
    assert test.class_names == pred.class_names and test.name == pred.name
    by_index = pred.subset([0, 2])
    np.testing.assert_array_equal(by_index.probs, pred.probs[[0, 2]])
    assert by_index.split.tolist() == ["calibration", "test"]
    with pytest.raises(CalibrationInputError, match="no rows with split 'train'.*calibration, test"):
        pred.select_split("train")


def test_split_column_none_ignores_it_and_custom_name() -> None:
    text = "label,p_a,p_b,fold_name\n0,0.9,0.1,a\n1,0.2,0.8,b\n"
    assert load_text(text).split is None
    assert load_text(text, split_column="fold_name").split.tolist() == ["a", "b"]
    assert load_text("label,p_a,p_b,split\n0,0.9,0.1,x\n", split_column=None).split is None
    with pytest.raises(CalibrationInputError, match="split column 'phase'"):
        load_text(text, split_column="phase")


def test_missing_split_values_are_reported() -> None:
    pred = load_text("label,p_a,p_b,split\n0,0.9,0.1,test\n1,0.2,0.8,\n")
    assert pred.split.tolist() == ["test", ""]
    assert any("no value in the split column" in w for w in pred.warnings)


def test_subset_errors() -> None:
    pred = Predictions.from_arrays(probs=PROBS, labels=LABELS)
    with pytest.raises(CalibrationInputError, match="selects no rows"):
        pred.subset(np.zeros(4, dtype=bool))
    with pytest.raises(CalibrationInputError, match="boolean mask must have shape"):
        pred.subset([True, False])
    with pytest.raises(CalibrationInputError, match="row indices"):
        pred.subset([0, 7])
    with pytest.raises(CalibrationInputError, match="no split column"):
        pred.select_split("test")


# ---------------------------------------------------------------------------
# Bad input: one test per error branch
# ---------------------------------------------------------------------------

def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(CalibrationInputError, match=r"empty \(0 bytes\)"):
        load_predictions(path)
    with pytest.raises(CalibrationInputError, match="is empty"):
        load_text("\n  \n")


def test_header_without_rows() -> None:
    with pytest.raises(CalibrationInputError, match="no data rows"):
        load_text("label,p_a,p_b\n")


def test_no_label_column_lists_columns_and_override() -> None:
    with pytest.raises(CalibrationInputError,
                       match=r"no label column.*'lbl', 'p_a', 'p_b'.*label_column="):
        load_text("lbl,p_a,p_b\n0,0.5,0.5\n")


def test_integer_label_outside_classes() -> None:
    with pytest.raises(CalibrationInputError,
                       match=r"label 3 in row 2 \(file line 3\) is outside the classes.*0\.\.1"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n3,0.4,0.6\n")
    with pytest.raises(CalibrationInputError, match="label -1"):
        load_text("label,p_a,p_b\n-1,0.5,0.5\n")


def test_string_label_outside_classes() -> None:
    with pytest.raises(CalibrationInputError, match=r"label 'cow' in row 2 \(file line 3\).*'cat', 'dog'"):
        load_text("label,p_cat,p_dog\ncat,0.5,0.5\ncow,0.4,0.6\n")


def test_non_integer_label() -> None:
    with pytest.raises(CalibrationInputError, match="label 1.5 in row 1"):
        load_text("label,p_a,p_b\n1.5,0.5,0.5\n")


@pytest.mark.parametrize("value, what", [("nan", "missing or NaN"), ("", "missing or NaN"),
                                          ("inf", "infinite"), ("-inf", "infinite")])
def test_nan_or_inf_probability_names_column_and_line(value: str, what: str) -> None:
    with pytest.raises(CalibrationInputError, match=rf"'p_b' has (a|an) {what}.*row 2 \(file line 3\)"):
        load_text(f"label,p_a,p_b\n0,0.5,0.5\n1,0.4,{value}\n")


def test_nan_in_logits_is_refused_too() -> None:
    with pytest.raises(CalibrationInputError, match="'logit_b' has a missing or NaN value"):
        load_text("label,logit_a,logit_b\n0,1,nan\n")


def test_missing_label() -> None:
    with pytest.raises(CalibrationInputError, match=r"missing \(NaN\) in row 2 \(file line 3\)"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n,0.4,0.6\n")
    with pytest.raises(CalibrationInputError, match=r"label is missing in row 2"):
        load_text("label,p_cat,p_dog\ncat,0.5,0.5\n,0.4,0.6\n")


def test_file_line_counts_blank_lines_and_quoted_newlines() -> None:
    text = 'label,p_a,p_b,note\n0,0.5,0.5,"two\nlines"\n\n1,0.4,nan,x\n'
    with pytest.raises(CalibrationInputError, match=r"row 2 \(file line 5\)"):
        load_text(text)


def test_negative_probability_declared() -> None:
    with pytest.raises(CalibrationInputError, match="negative probability"):
        load_text("label,p_a,p_b\n0,-0.5,0.5\n", input_kind="probabilities")


def test_fewer_than_two_classes() -> None:
    with pytest.raises(CalibrationInputError, match="fewer than 2 classes"):
        load_text("label\n0\n1\n")
    with pytest.raises(CalibrationInputError, match="fewer than 2 classes"):
        load_text("label,id,split\n0,1,test\n")


def test_non_numeric_class_column_names_column_and_value() -> None:
    with pytest.raises(CalibrationInputError,
                       match=r"class column 'p_a' is not numeric: row 2 \(file line 3\) holds 'abc'"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n1,abc,0.5\n")
    with pytest.raises(CalibrationInputError, match="class column 'cat' is not numeric"):
        load_text("label,cat,dog\n0,0.5,0.5\n1,?,0.5\n")  # no prefix: a mostly numeric column


def test_duplicate_column_names_from_raw_header() -> None:
    with pytest.raises(CalibrationInputError, match=r"duplicate column name 'p_a'.*columns 2 and 3"):
        load_text("label,p_a,p_a\n0,0.5,0.5\n")


def test_duplicate_column_names_in_parquet() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table([pa.array([0]), pa.array([0.5]), pa.array([0.5])], names=["label", "p_a", "p_a"])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    with pytest.raises(CalibrationInputError, match="duplicate column name 'p_a'"):
        load_predictions(buffer.getvalue(), name="m.parquet")


def test_header_of_numbers_is_refused() -> None:
    with pytest.raises(CalibrationInputError, match="holds numbers.*add a header row"):
        load_text("0,0.5,0.5\n1,0.2,0.8\n")


def test_size_limit_for_path_bytes_and_stream(tmp_path: Path) -> None:
    data = wide_frame().to_csv(index=False).encode()
    path = tmp_path / "m.csv"
    path.write_bytes(data)
    with pytest.raises(CalibrationInputError, match=rf"{len(data):,} bytes, over the size limit of 50 bytes"):
        load_predictions(path, max_bytes=50)
    with pytest.raises(CalibrationInputError, match="over the size limit"):
        load_predictions(data, max_bytes=50)
    with pytest.raises(CalibrationInputError, match="more than 50 bytes"):
        load_predictions(io.BytesIO(data), max_bytes=50)
    assert load_predictions(data, max_bytes=len(data)).n_samples == 4
    assert load_predictions(data, max_bytes=None).n_samples == 4


def test_size_limit_applies_after_unpacking() -> None:
    data = ("label,p_a,p_b\n" + "0,0.5,0.5\n" * 2000).encode()
    with pytest.raises(CalibrationInputError, match="decompressed"):
        load_predictions(gzip.compress(data), name="m.csv.gz", max_bytes=5000)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, probs=np.full((5000, 2), 0.5), labels=np.zeros(5000, dtype=int))
    assert len(buffer.getvalue()) < 5000
    with pytest.raises(CalibrationInputError, match="unpacked"):
        load_predictions(buffer.getvalue(), name="m.npz", max_bytes=5000)


def test_unknown_format() -> None:
    with pytest.raises(CalibrationInputError, match=r"unknown file format '.xlsx'.*file_format="):
        load_predictions(b"label,p\n", name="m.xlsx")
    with pytest.raises(CalibrationInputError, match="unknown `file_format`"):
        load_predictions(b"label,p\n", file_format="excel")
    with pytest.raises(CalibrationInputError, match="binary but not Parquet"):
        load_predictions(b"\x00\x01\x02garbage")


def test_pickled_npy_and_npz_are_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(CalibrationInputError, match="pickled"):
        load_predictions(buffer.getvalue(), name="m.npy")
    path = tmp_path / "m.npz"
    np.savez(path, probs=PROBS, labels=np.array(list(LABELS), dtype=object))
    with pytest.raises(CalibrationInputError, match=r"pickled.*'labels'"):
        load_predictions(path)
    with pytest.raises(CalibrationInputError, match="pickled"):
        load_predictions(pickle.dumps({"probs": PROBS}), name="m.npy")


@pytest.mark.parametrize("name, data, match", [
    ("m.parquet", b"PAR1 this is not parquet PAR1", "as Parquet"),
    ("m.npz", b"PK\x03\x04 broken zip", "damaged NPZ"),
    ("m.npy", b"\x93NUMPY broken header", "as NPY"),
    ("m.csv.gz", b"\x1f\x8b broken gzip", "damaged gzip"),
])
def test_corrupt_files(name: str, data: bytes, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        load_predictions(data, name=name)


def test_zip_that_is_not_an_npz() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(CalibrationInputError, match="not an NPZ of arrays"):
        load_predictions(buffer.getvalue(), name="m.npz")


def test_ragged_rows() -> None:
    with pytest.raises(CalibrationInputError, match=r"Expected 3 fields in line 3, saw 4"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n1,0.2,0.8,9\n")
    with pytest.raises(CalibrationInputError, match="more values than the header"):
        load_text("label,p_a,p_b\n0,0.5,0.5,7\n1,0.2,0.8\n")


def test_npz_problems() -> None:
    def npz(**arrays) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    with pytest.raises(CalibrationInputError, match="no label array.*probs"):
        load_predictions(npz(probs=PROBS), name="m.npz")
    with pytest.raises(CalibrationInputError, match="no probability or logit array"):
        load_predictions(npz(labels=LABELS, other=PROBS, more=PROBS), name="m.npz")
    with pytest.raises(CalibrationInputError, match="has 4 rows but 'labels' has 3"):
        load_predictions(npz(probs=PROBS, labels=LABELS[:3]), name="m.npz")
    with pytest.raises(CalibrationInputError, match="not one-hot"):
        load_predictions(npz(probs=PROBS, labels=np.eye(3)[LABELS]), name="m.npz")
    with pytest.raises(CalibrationInputError, match="label array 'nope' not found"):
        load_predictions(npz(probs=PROBS, labels=LABELS), name="m.npz", label_column="nope")


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(CalibrationInputError, match="`input_kind` must be one of"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n", input_kind="odds")
    with pytest.raises(CalibrationInputError, match="`max_bytes` must be a positive"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n", max_bytes=0)
    with pytest.raises(CalibrationInputError, match="file not found"):
        load_predictions(tmp_path / "missing.csv")
    with pytest.raises(CalibrationInputError, match="looks like file content"):
        load_predictions("label,p_a,p_b\n0,0.5,0.5\n")
    with pytest.raises(CalibrationInputError, match="must be a path, bytes"):
        load_predictions(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# The Predictions object
# ---------------------------------------------------------------------------

def test_from_arrays_probs_logits_and_names() -> None:
    pred = Predictions.from_arrays(probs=PROBS, labels=LABELS, class_names=["x", "y", "z"], name="m")
    assert pred.class_names == ("x", "y", "z") and pred.name == "m"
    logits = np.log(PROBS)
    from_logits = Predictions.from_arrays(logits=logits, labels=LABELS)
    np.testing.assert_allclose(from_logits.probs, PROBS, atol=1e-12)
    assert from_logits.input_kind == "logits"
    both = Predictions.from_arrays(probs=PROBS, logits=logits, labels=LABELS)
    np.testing.assert_array_equal(both.probs, PROBS)
    named = Predictions.from_arrays(probs=PROBS, labels=["x", "z", "y", "x"], class_names=["x", "y", "z"])
    np.testing.assert_array_equal(named.labels, LABELS)


def test_from_arrays_validation() -> None:
    with pytest.raises(CalibrationInputError, match="not softmax"):
        Predictions.from_arrays(probs=PROBS, logits=np.log(PROBS) * 2, labels=LABELS)
    with pytest.raises(CalibrationInputError, match="Pass `probs` or `logits`"):
        Predictions.from_arrays(labels=LABELS)
    with pytest.raises(CalibrationInputError, match="`labels` is required"):
        Predictions.from_arrays(probs=PROBS)
    with pytest.raises(CalibrationInputError, match="rows of `probs` must sum to 1"):
        Predictions.from_arrays(probs=PROBS * 2, labels=LABELS)
    with pytest.raises(CalibrationInputError, match=r"`labels` must lie in 0\.\.2"):
        Predictions.from_arrays(probs=PROBS, labels=[0, 1, 2, 3])
    with pytest.raises(CalibrationInputError, match="`class_names` has 2 names"):
        Predictions.from_arrays(probs=PROBS, labels=LABELS, class_names=["a", "b"])
    with pytest.raises(CalibrationInputError, match="must be unique"):
        Predictions.from_arrays(probs=PROBS, labels=LABELS, class_names=["a", "b", "a"])
    with pytest.raises(CalibrationInputError, match="label 'w'"):
        Predictions.from_arrays(probs=PROBS, labels=["x", "y", "w", "x"], class_names=["x", "y", "z"])
    with pytest.raises(CalibrationInputError, match="`split` must have shape"):
        Predictions(probs=PROBS, labels=LABELS, split=["test"])


def test_arrays_are_read_only_and_inputs_stay_writeable() -> None:
    probs = PROBS.copy()
    pred = Predictions.from_arrays(probs=probs, labels=LABELS)
    with pytest.raises(ValueError):
        pred.probs[0, 0] = 1.0
    with pytest.raises(ValueError):
        pred.labels[0] = 1
    probs[0, 0] = 0.0  # the caller's array is untouched by the freeze
    assert probs.flags.writeable


def test_accuracy_uses_lowest_index_on_ties() -> None:
    pred = Predictions.from_arrays(probs=[[0.5, 0.5], [0.5, 0.5]], labels=[0, 1])
    assert pred.accuracy == 0.5


def test_to_frame_round_trip() -> None:
    pred = load_text("label,p_cat,p_dog,split\ndog,0.2,0.8,test\ncat,0.6,0.4,calibration\n")
    again = load_predictions(pred.to_frame().to_csv(index=False).encode(), name="m.csv")
    np.testing.assert_array_equal(again.probs, pred.probs)
    np.testing.assert_array_equal(again.labels, pred.labels)
    assert again.class_names == pred.class_names
    np.testing.assert_array_equal(again.split, pred.split)
    assert "n_samples=2" in repr(pred) and "splits=['test', 'calibration']" in repr(pred)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(1, 40), n_classes=st.integers(2, 6), seed=st.integers(0, 2**32 - 1),
       fmt=st.sampled_from(["csv", "tsv", "parquet", "npz"]), string_labels=st.booleans())
def test_round_trip_property(n_rows: int, n_classes: int, seed: int, fmt: str, string_labels: bool) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(n_classes, 0.5), size=n_rows)
    labels = rng.integers(0, n_classes, size=n_rows)
    names = [f"c{k}" for k in range(n_classes)]
    frame = pd.DataFrame(probs, columns=[f"p_{c}" for c in names])
    frame.insert(0, "label", np.array(names)[labels] if string_labels else labels)
    if fmt == "csv":
        data = frame.to_csv(index=False).encode()
    elif fmt == "tsv":
        data = frame.to_csv(index=False, sep="\t").encode()
    elif fmt == "parquet":
        data = frame.to_parquet()
    else:
        buffer = io.BytesIO()
        np.savez(buffer, probs=probs, labels=labels, class_names=np.array(names))
        data = buffer.getvalue()
    pred = load_predictions(data, name=f"m.{fmt}")
    np.testing.assert_array_equal(pred.probs, probs)
    np.testing.assert_array_equal(pred.labels, labels)
    assert pred.class_names == tuple(names)
    assert not any("renormalised" in w for w in pred.warnings)


# ---------------------------------------------------------------------------
# Demo data
# ---------------------------------------------------------------------------

EXPECTED_CLASSES = {"digits": 10, "breast_cancer": 2, "wine": 3, "iris": 3, "fair": 2, "confidence": 2}


def test_demo_datasets_are_listed_and_load() -> None:
    demos = demo_datasets()
    assert {"digits_gaussian_nb", "breast_cancer_random_forest", "wine_logistic_regression",
            "digits_mlp", "digits_svc"} <= set(demos)
    for name, path in demos.items():
        assert path.suffix == ".csv" and path.exists()
        pred = load_demo(name)
        dataset = next(d for d in EXPECTED_CLASSES if name.startswith(d + "_"))
        assert pred.n_classes == EXPECTED_CLASSES[dataset]
        assert pred.split_names == ("calibration", "test")
        assert pred.name == name
        assert pred.accuracy > (0.7 if dataset == "fair" else 0.8)  # the survey's outcome is hard to predict
        assert np.abs(pred.probs.sum(axis=1) - 1.0).max() <= 1e-6
        assert (pred.input_kind == "logits") == name.endswith("_svc")
        assert not any("renormalised" in w or "within" in w for w in pred.warnings)


def test_load_demo_unknown_name_lists_the_available_ones() -> None:
    with pytest.raises(CalibrationInputError, match=r"unknown demo 'nope'.*digits_gaussian_nb"):
        load_demo("nope")


def test_demo_datasets_without_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import calib_core.io.demos as module

    monkeypatch.setattr(module, "_demo_dir", lambda: tmp_path / "absent")
    assert module.demo_datasets() == {}
    with pytest.raises(CalibrationInputError, match="none"):
        module.load_demo("digits_mlp")


# ---------------------------------------------------------------------------
# Less common branches
# ---------------------------------------------------------------------------

def test_latin1_found_after_the_sniffed_head() -> None:
    # More than the 64 KiB sniffed at the start is plain ASCII; the Latin-1 byte comes later.
    text = "label,p_a,p_b,note\n" + "0,0.5,0.5,ok\n" * 6000 + "1,0.2,0.8,caf\u00e9\n"
    pred = load_predictions(text.encode("latin-1"), name="m.csv")
    assert pred.n_samples == 6001
    np.testing.assert_array_equal(pred.labels[-2:], [0, 1])
    assert any("Latin-1" in w for w in pred.warnings)


def test_renormalize_rows_already_within_tolerance() -> None:
    pred = load_text("label,p_a,p_b\n0,0.5,0.50005\n1,0.2,0.8\n", renormalize=True)
    np.testing.assert_allclose(pred.probs[0], [0.5 / 1.00005, 0.50005 / 1.00005], rtol=1e-15)
    np.testing.assert_allclose(pred.probs[1], [0.2, 0.8], rtol=1e-15)
    assert any("renormalised" in w and "5e-05" in w for w in pred.warnings)


def test_empty_and_boolean_columns_without_prefix_are_ignored_with_warning() -> None:
    pred = load_text("label,cat,dog,flag,blank\n1,0.3,0.7,true,\n0,0.9,0.1,false,\n")
    assert pred.class_names == ("cat", "dog")
    assert any("'flag'" in w for w in pred.warnings)
    assert any("'blank'" in w and "empty" in w for w in pred.warnings)


def test_class_columns_that_collapse_to_the_same_name() -> None:
    with pytest.raises(CalibrationInputError, match="same class name 'A'"):
        load_text("label,p_A,P_A\n0,0.5,0.5\n")


def test_binary_column_named_after_a_class_absent_from_the_labels() -> None:
    with pytest.raises(CalibrationInputError, match="named after class 'yes'"):
        load_text("label,p_yes\nno,0.3\nmaybe,0.9\n")


def test_npz_class_columns_override_and_name_count() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, out=PROBS, labels=LABELS, class_names=np.array(["a", "b"]))
    with pytest.raises(CalibrationInputError, match="2 class names but its scores have 3"):
        load_predictions(buffer.getvalue(), name="m.npz", class_columns=["out"])
    with pytest.raises(CalibrationInputError, match="the one array holding the scores"):
        load_predictions(buffer.getvalue(), name="m.npz", class_columns=["out", "labels"])


@pytest.mark.parametrize("column", ["prob", "proba", "probability", "score", "y_score"])
def test_single_unprefixed_score_column_names(column: str) -> None:
    text = f"label,{column}\nno,0.3\nyes,0.9\n"
    with pytest.raises(PredictionsFileError, match=f"score column '{column}' is not named after either label"):
        load_text(text)
    pred = load_text(text, class_names=["no", "yes"])
    assert pred.class_names == ("no", "yes")
    np.testing.assert_allclose(pred.probs[:, 1], [0.3, 0.9])


def test_numbered_prob_columns_without_underscore() -> None:
    pred = load_text("label,prob0,prob1\n1,0.3,0.7\n")
    assert pred.class_names == ("0", "1")


def test_text_mode_stream() -> None:
    pred = load_predictions(io.StringIO("label,p_a,p_b\n1,0.3,0.7\n"), name="m.csv")
    np.testing.assert_array_equal(pred.labels, [1])


# ---------------------------------------------------------------------------
# Issue 11 item 1: no silent reinterpretation; fixes carried by the exception
# ---------------------------------------------------------------------------

def _digits_probability_csv() -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """A real 10-class probability file: scikit-learn digits + logistic regression."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    x, y = load_digits(return_X_y=True)
    model = LogisticRegression(max_iter=2000).fit(x[::2] / 16.0, y[::2])
    probs = model.predict_proba(x[1::2] / 16.0)
    logits = model.decision_function(x[1::2] / 16.0)
    frame = pd.DataFrame(probs, columns=[f"p_{k}" for k in range(10)])
    frame.insert(0, "label", y[1::2])
    return frame.to_csv(index=False, float_format="%.17g").encode(), probs, y[1::2], logits


def _csv_of(values: np.ndarray, labels: np.ndarray, prefix: str = "p_") -> bytes:
    frame = pd.DataFrame(values, columns=[f"{prefix}{k}" for k in range(values.shape[1])])
    frame.insert(0, "label", labels)
    return frame.to_csv(index=False, float_format="%.17g").encode()


def test_digits_file_with_one_negative_cell_is_refused_naming_the_row_not_softmaxed() -> None:
    data, probs, labels, _ = _digits_probability_csv()
    ok = load_predictions(data, name="digits.csv")
    np.testing.assert_array_equal(ok.probs, probs)
    bad = probs.copy()
    bad[41, 3] = -0.001  # the reproduction: one cell changed
    with pytest.raises(PredictionsFileError, match=r"negative probability \(-0.001\) in row 42 \(file line 43\)") \
            as info:
        load_predictions(_csv_of(bad, labels), name="digits.csv")
    assert info.value.rows[0] == 41
    assert all(fix.key != "renormalize" for fix in info.value.fixes)  # a negative cannot be renormalised


def test_rows_scaled_by_1_3_are_refused_with_a_renormalise_fix() -> None:
    data, probs, labels, _ = _digits_probability_csv()
    with pytest.raises(PredictionsFileError, match=r"every row sums to 1.3, not 1") as info:
        load_predictions(_csv_of(probs * 1.3, labels), name="scaled.csv")
    keys = [fix.key for fix in info.value.fixes]
    assert keys[0] == "renormalize" and "logits" in keys
    assert "renormalize" not in info.value.plain and "input_kind" not in info.value.plain
    fixed = load_predictions(_csv_of(probs * 1.3, labels), name="scaled.csv", **info.value.fixes[0].kwargs)
    np.testing.assert_allclose(fixed.probs, probs, atol=1e-12)
    assert fixed.input_kind == "probabilities" and any("renormalised" in n for n in fixed.notes)


def test_percentages_are_refused_with_divide_by_100_and_the_option_states_itself() -> None:
    _, probs, labels, _ = _digits_probability_csv()
    data = _csv_of(np.round(probs * 100.0, 10), labels)
    with pytest.raises(PredictionsFileError, match=r"percentages\? Divide by 100") as info:
        load_predictions(data, name="pct.csv")
    assert info.value.fixes[0].key == "percentages"
    fixed = load_predictions(data, name="pct.csv", **info.value.fixes[0].kwargs)
    np.testing.assert_allclose(fixed.probs, probs, atol=1e-9)
    assert any("divided by 100" in n for n in fixed.notes)
    with pytest.raises(PredictionsFileError) as rounded_info:
        load_text("label,p_a,p_b,p_c\n0,33.3,33.3,33.3\n1,10,80,10\n2,0,0.5,99.5\n")
    assert rounded_info.value.fixes[0].kwargs == {"percentages": True, "renormalize": True}
    pred = load_text("label,p_a,p_b,p_c\n0,33.3,33.3,33.3\n1,10,80,10\n2,0,0.5,99.5\n",
                     **rounded_info.value.fixes[0].kwargs)
    np.testing.assert_allclose(pred.probs[0], [1 / 3] * 3)


def test_rows_summing_to_0_8_offer_renormalising() -> None:
    with pytest.raises(PredictionsFileError, match="every row sums to 0.8") as info:
        load_text("label,p_a,p_b\n0,0.7,0.1\n1,0.2,0.6\n")
    assert info.value.fixes[0].key == "renormalize"


def test_real_logits_are_read_as_logits_with_the_reason_and_can_be_refused() -> None:
    _, _, labels, logits = _digits_probability_csv()
    pred = load_predictions(_csv_of(logits, labels, prefix="score_"), name="svc.csv")
    assert pred.input_kind == "logits" and "outside [0, 1]" in pred.logit_reason
    np.testing.assert_allclose(pred.probs, softmax(logits), atol=1e-12)
    named = load_text("label,logit_a,logit_b\n0,0.2,0.1\n1,0.1,0.3\n")
    assert "logit_" in named.logit_reason
    told = load_text("label,logit_a,logit_b\n0,0.2,0.1\n1,0.1,0.3\n", input_kind="logits")
    assert told.input_kind == "logits" and told.logit_reason is None
    with pytest.raises(PredictionsFileError, match="sum to 0.3"):  # "read as probabilities instead"
        load_text("label,logit_a,logit_b\n0,0.2,0.1\n1,0.1,0.3\n", input_kind="probabilities")
    assert load_text("label,p_a,p_b\n0,0.2,0.8\n1,0.1,0.9\n").logit_reason is None


def test_values_summing_to_a_positive_constant_are_not_guessed_to_be_logits() -> None:
    text = "label,a,b,c\n0,2,-2,1\n1,-1.5,1.5,1\n1,-3,3,1\n"  # every row sums to 1: not logits
    with pytest.raises(PredictionsFileError, match="outside") as info:
        load_text(text)
    assert [fix.key for fix in info.value.fixes] == ["logits"]
    assert load_text(text, **info.value.fixes[0].kwargs).input_kind == "logits"
    centred = load_text("label,a,b\n0,2,-2\n1,-1.5,1.5\n1,-3,3\n")  # sums to 0: no probability scale
    assert centred.input_kind == "logits" and "outside [0, 1]" in centred.logit_reason


def test_every_offered_fix_loads_the_file() -> None:
    cases = ["label,p_a,p_b\n0,0.7,0.1\n1,0.2,0.6\n", "label,p_a,p_b\n0,70,30\n1,20,80\n",
             "label,p_a,p_b\n0,1.17,0.13\n1,0.26,1.04\n", "label,p_0,p_1\ncat,0.9,0.1\ndog,0.2,0.8\n"]
    for text in cases:
        with pytest.raises(PredictionsFileError) as info:
            load_text(text)
        assert info.value.fixes, text
        for fix in info.value.fixes:
            assert isinstance(fix, LoadFix) and fix.label and fix.description
            assert load_text(text, **fix.kwargs).n_samples == 2


# ---------------------------------------------------------------------------
# Issue 12 items 1-6, 8
# ---------------------------------------------------------------------------

def test_true_false_labels_map_to_columns_by_name() -> None:
    pred = load_text("label,p_True,p_False\nTrue,0.9,0.1\nFalse,0.2,0.8\n")
    assert pred.class_names == ("True", "False") and pred.accuracy == 1.0
    mixed = load_text("label,p_cat,p_False,p_True\nTrue,0.1,0.1,0.8\nFalse,0.1,0.8,0.1\ncat,0.8,0.1,0.1\n")
    np.testing.assert_array_equal(mixed.labels, [2, 1, 0])


def test_a_number_used_as_a_class_name_among_text_names() -> None:
    pred = load_text("label,p_2,p_cat,p_dog\n2,0.8,0.1,0.1\n")
    assert pred.labels.tolist() == [0] and pred.accuracy == 1.0
    mixed = load_text("label,p_2,p_cat,p_dog\n2,0.8,0.1,0.1\ndog,0.1,0.1,0.8\n")
    assert mixed.labels.tolist() == [0, 2]


def test_c1_to_c12_are_mapped_by_name_not_sorted_as_text() -> None:
    probs = np.full((12, 12), 0.1 / 11) + np.eye(12) * (0.9 - 0.1 / 11)
    labels = [f"c{k + 1}" for k in range(12)]
    frame = pd.DataFrame(probs, columns=[f"p_c{k + 1}" for k in range(12)])
    frame.insert(0, "label", labels)
    assert load_predictions(frame.to_csv(index=False).encode(), name="m.csv").accuracy == 1.0
    generic = _csv_of(probs, np.array(labels))
    with pytest.raises(PredictionsFileError, match=r"'c1' -> 'p_0', 'c2' -> 'p_1', 'c3' -> 'p_2'") as info:
        load_predictions(generic, name="m.csv")
    assert info.value.proposed_mapping[9] == ("c10", "p_9")
    assert load_predictions(generic, name="m.csv", **info.value.fixes[0].kwargs).accuracy == 1.0


def test_integer_labels_without_named_columns_stay_indices() -> None:
    pred = load_text("label,p_cat,p_dog\n1,0.2,0.8\n0,0.9,0.1\n")
    assert pred.labels.tolist() == [1, 0] and pred.class_names == ("cat", "dog")


def test_na_none_null_nan_are_class_names_when_columns_say_so() -> None:
    pred = load_text("label,p_NA,p_none,p_null,p_nan\nNA,0.7,0.1,0.1,0.1\nnone,0.1,0.7,0.1,0.1\n"
                     "null,0.1,0.1,0.7,0.1\nnan,0.1,0.1,0.1,0.7\n")
    assert pred.labels.tolist() == [0, 1, 2, 3] and pred.accuracy == 1.0
    with pytest.raises(CalibrationInputError, match="label is missing in row 2"):
        load_text("label,p_a,p_b\na,0.7,0.3\nNA,0.1,0.9\n")


def test_semicolon_decimal_comma_file_whose_first_row_is_integers() -> None:
    pred = load_text("label;p_a;p_b\n0;1;0\n1;0,2;0,8\n")
    np.testing.assert_array_equal(pred.probs, [[1.0, 0.0], [0.2, 0.8]])
    far = "label;p_a;p_b\n" + "0;1;0\n" * 300 + "1;0,25;0,75\n"
    assert load_text(far).probs[-1].tolist() == [0.25, 0.75]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_csv_is_read(codec: str) -> None:
    pred = load_predictions("label,p_a,p_b\n0,0.9,0.1\n1,0.2,0.8\n".encode(codec), name="excel.txt")
    np.testing.assert_array_equal(pred.probs, [[0.9, 0.1], [0.2, 0.8]])
    assert any("UTF-16" in n for n in pred.notes)
    with pytest.raises(CalibrationInputError, match="UTF-16: save it as UTF-8"):
        load_predictions(b"\xff\xfe" + "label,p_a\n".encode("utf-16-le") + b"\x00\xd8", name="x.csv")


def test_class_names_with_leading_spaces_match_their_labels() -> None:
    pred = load_text("label,p_ cat,p_ dog\ncat,0.9,0.1\n dog,0.2,0.8\n")
    assert pred.class_names == ("cat", "dog") and pred.accuracy == 1.0


def test_parquet_with_a_pandas_index_and_lying_metadata(tmp_path: Path) -> None:
    frame = pd.DataFrame({"sample_id": ["a", "b"], "label": [0, 1], "p_a": [0.9, 0.2], "p_b": [0.1, 0.8]})
    frame.set_index("sample_id").to_parquet(tmp_path / "m.parquet")
    pred = load_predictions(tmp_path / "m.parquet")
    np.testing.assert_array_equal(pred.probs, [[0.9, 0.1], [0.2, 0.8]])
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame.set_index("sample_id"))
    meta = dict(table.schema.metadata)
    meta[b"pandas"] = meta[b"pandas"].replace(b'"sample_id"', b'"missing_id"')
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "lie.parquet")
    assert load_predictions(tmp_path / "lie.parquet").n_samples == 2


def test_parquet_nested_columns_are_clean_errors(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"label": pa.array([{"x": 1}, {"x": 0}]), "p_a": [0.9, 0.2], "p_b": [0.1, 0.8],
                      "tags": pa.array([[1, 2], [3]]),
                      "m": pa.array([[("k", 1)], [("k", 2)]], type=pa.map_(pa.string(), pa.int64()))})
    pq.write_table(table, tmp_path / "n.parquet")
    with pytest.raises(CalibrationInputError, match="label column 'label'.*nested values"):
        load_predictions(tmp_path / "n.parquet")
    for column in ("tags", "m"):
        with pytest.raises(CalibrationInputError, match=f"'{column}'.*nested values"):
            load_predictions(tmp_path / "n.parquet", label_column=column)
    good = pa.table({"label": [0, 1], "p_a": [0.9, 0.2], "p_b": [0.1, 0.8], "tags": pa.array([[1], [2]])})
    pq.write_table(good, tmp_path / "g.parquet")
    assert load_predictions(tmp_path / "g.parquet", class_columns=["p_a", "p_b"]).n_samples == 2


def test_corrupted_parquet_metadata_is_a_clean_error(tmp_path: Path) -> None:
    pd.DataFrame({"label": [0, 1], "p_a": [0.9, 0.2], "p_b": [0.1, 0.8]}).to_parquet(tmp_path / "m.parquet")
    data = bytearray((tmp_path / "m.parquet").read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    for offset in range(len(data) - 8 - footer, len(data) - 8, 7):
        broken = bytearray(data)
        broken[offset] ^= 0xFF
        try:
            load_predictions(bytes(broken), name="m.parquet")
        except CalibrationInputError as exc:
            assert str(exc)


def test_huge_numbers_and_cells_are_clean_errors() -> None:
    with pytest.raises(CalibrationInputError):
        load_text("label,p_a,p_b\n0," + "9" * 400 + ",0.5\n")
    with pytest.raises(CalibrationInputError, match="infinite value.*row 2"):
        load_text("label,p_a,p_b\n0,0.5,0.5\n1,0.5," + "1" * 200_000 + "\n")
    with pytest.raises(CalibrationInputError):
        load_text("label,p_a,p_b\n" + "9" * 400 + ",0.5,0.5\n")


def _lying_npy(shape: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buffer.getvalue() + b"\x00" * 64


def test_npy_and_npz_headers_declaring_huge_shapes_are_refused_before_allocating() -> None:
    with pytest.raises(CalibrationInputError, match=r"declares shape \(1000000000000, 2\)"):
        load_predictions(_lying_npy((10 ** 12, 2)), name="m.npy")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("probs.npy", _lying_npy((10 ** 12, 2)))
        archive.writestr("labels.npy", _lying_npy((3,)))
    with pytest.raises(CalibrationInputError, match="declares shape"):
        load_predictions(buffer.getvalue(), name="m.npz")


def test_damaged_npz_members_and_structured_arrays_are_clean_errors() -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, probs=PROBS, labels=LABELS)
    data = bytearray(buffer.getvalue())
    for offset in range(40, len(data) - 30, 5):
        broken = bytearray(data)
        broken[offset] ^= 0x5A
        try:
            load_predictions(bytes(broken), name="m.npz")
        except CalibrationInputError as exc:
            assert str(exc)
    structured = np.zeros(3, dtype=[("a", "i4"), ("b", "f8")])
    buffer = io.BytesIO()
    np.savez(buffer, probs=PROBS, labels=LABELS, split=structured)
    with pytest.raises(CalibrationInputError, match="split array 'split'"):
        load_predictions(buffer.getvalue(), name="m.npz")
    buffer = io.BytesIO()
    np.savez(buffer, probs=PROBS, labels=structured)
    with pytest.raises(CalibrationInputError, match="structured"):
        load_predictions(buffer.getvalue(), name="m.npz")
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3, dtype=[("label", "i4"), ("p", "f8", (2,))]))
    with pytest.raises(CalibrationInputError, match="nested fields"):
        load_predictions(buffer.getvalue(), name="m.npy")


def test_loading_is_linear_in_the_class_count_and_capped() -> None:
    import time

    def one_row(k: int) -> bytes:
        return ("label," + ",".join(f"p_{j}" for j in range(k)) + "\n0," + ",".join(
            ["1"] + ["0"] * (k - 1)) + "\n").encode()

    start = time.perf_counter()
    small = load_predictions(one_row(2_000), name="m.csv")
    t_small = time.perf_counter() - start
    start = time.perf_counter()
    big = load_predictions(one_row(20_000), name="m.csv")
    t_big = time.perf_counter() - start
    assert small.n_classes == 2_000 and big.n_classes == 20_000
    assert t_big < 25 * t_small + 1.0  # quadratic work would take ~100x
    with pytest.raises(CalibrationInputError, match=f"at most {MAX_CLASSES:,} classes"):
        load_predictions(one_row(MAX_CLASSES + 100), name="m.csv")
    with pytest.raises(CalibrationInputError, match=f"at most {MAX_CLASSES:,} classes"):
        load_predictions(one_row(MAX_CLASSES + 1), name="m.csv")


def test_cli_loader_options_divide_by_100_and_renormalise(tmp_path: Path, capsys) -> None:
    """The command line's ``main(argv)`` in this process: its parsing, output and exit status, without a 2.5 s
    subprocess import of calib_core per call (tests/engines/test_cli.py runs ``python -m calib_core`` itself)."""
    import json

    from calib_core.engines.cli import main

    path = tmp_path / "pct.csv"
    path.write_text("label,p_a,p_b\n0,90,10\n1,20,80\n0,60,40\n")
    command = ["report", str(path), "--json"]
    assert main(command) == 2 and "percentages?" in capsys.readouterr().err
    status = main(command + ["--percentages"])
    loaded = capsys.readouterr()
    assert status == 0, loaded.err
    report = json.loads(loaded.out)
    assert report["n_samples"] == 3 and any("divided by 100" in w for w in report["warnings"])
    path.write_text("label,p_a,p_b\n0,0.7,0.1\n1,0.2,0.6\n")
    assert main(command + ["--renormalize"]) == 0


def test_scores_without_class_columns_are_refused_without_warnings() -> None:
    import warnings

    buffer = io.BytesIO()
    np.savez(buffer, probs=np.zeros((3, 0)), labels=np.zeros(3, dtype=int))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once "Mean of empty slice" on the way to the error
        with pytest.raises(CalibrationInputError, match=r"shape \(3, 0\)"):
            load_predictions(buffer.getvalue(), name="m.npz")


def test_fuzz_findings_long_digit_labels_and_binary_parquet_cells(tmp_path: Path) -> None:
    # Found by bench/fuzz_loader.py: int() of a 5,000-digit label while proposing a mapping,
    # and str() of non-UTF-8 bytes in a Parquet binary column: both once escaped as ValueError.
    with pytest.raises(PredictionsFileError, match="Proposed mapping"):
        load_text("label,p_0,p_1\n" + "1" * 5000 + ",0.5,0.5\nx²,0.5,0.5\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"label": [0, 1], "p_a": pa.array([b"\x86", b"\xff"]), "p_b": [0.5, 0.5]}),
                   tmp_path / "b.parquet")
    with pytest.raises(CalibrationInputError, match="not numeric"):
        load_predictions(tmp_path / "b.parquet", class_columns=["p_a", "p_b"])


# ---------------------------------------------------------------------------
# Group column (subgroup analysis)
# ---------------------------------------------------------------------------

GROUP_CSV = ("label,p_a,p_b,sex,site,age,score,split\n"
             "a,0.8,0.2,F,1,33.5,x,test\n"
             "b,0.3,0.7,M,2,40,y,test\n"
             "a,0.6,0.4,,1,20,x,calibration\n"
             "b,0.1,0.9, F ,3,51,y,calibration\n")


def test_group_column_is_kept_as_text_and_never_a_class() -> None:
    pred = load_text(GROUP_CSV, group="sex")
    assert pred.group_column == "sex" and pred.class_names == ("a", "b")
    assert pred.groups.tolist() == ["F", "M", "(missing)", "F"]  # stripped; the empty cell is its own group
    assert any("1 rows have no value in the group column 'sex'" in w and "(missing)" in w for w in pred.warnings)
    # An integer column as the group: read as text, never as a third class column.
    by_site = load_text(GROUP_CSV, group="SITE")  # names match case-insensitively, like the other columns
    assert by_site.group_column == "site" and by_site.groups.tolist() == ["1", "2", "1", "3"]
    assert by_site.n_classes == 2


def test_no_group_asked_lists_candidate_attribute_columns() -> None:
    pred = load_text(GROUP_CSV)
    assert pred.groups is None and pred.group_column is None
    # text and integer columns that are not label, split or classes; the float column 'age' is not offered
    assert pred.attribute_columns == ("sex", "site", "score")
    assert load_text(GROUP_CSV, group="score").attribute_columns == ("sex", "site", "score")


def test_integer_group_with_gaps_is_written_as_whole_numbers() -> None:
    # pandas reads an integer column with an empty cell as floats; the groups stay "1", "2".
    pred = load_text("label,p_0,p_1,g\n0,0.6,0.4,1\n1,0.3,0.7,\n1,0.2,0.8,2\n", group="g")
    assert pred.groups.tolist() == ["1", "(missing)", "2"]


@pytest.mark.parametrize("column, message", [
    ("nope", r"group column 'nope' \(from `group=`\) is not a column"),
    ("label", "is the label column"),
    ("split", "is the split column"),
])
def test_bad_group_column_is_refused(column: str, message: str) -> None:
    with pytest.raises(CalibrationInputError, match=message):
        load_text(GROUP_CSV, group=column)


def test_group_chosen_as_class_column_is_refused() -> None:
    with pytest.raises(CalibrationInputError, match="both the group and a class column"):
        load_text(GROUP_CSV, group="p_a", class_columns=["p_a", "p_b"])


def test_subset_and_select_split_carry_the_groups() -> None:
    pred = load_text(GROUP_CSV, group="sex")
    test = pred.select_split("test")
    assert test.groups.tolist() == ["F", "M"] and test.group_column == "sex"
    assert test.attribute_columns == pred.attribute_columns
    assert pred.subset([3, 0]).groups.tolist() == ["F", "F"]
    assert pred.subset(np.array([False, True, True, False])).groups.tolist() == ["M", "(missing)"]
    frame = pred.to_frame()
    assert frame["sex"].tolist() == pred.groups.tolist()
    again = load_predictions(frame.to_csv(index=False).encode(), name="m.csv", group="sex")
    assert again.groups.tolist() == pred.groups.tolist()


def test_from_arrays_groups_are_validated() -> None:
    pred = Predictions.from_arrays(probs=[[0.5, 0.5], [0.2, 0.8]], labels=[0, 1], groups=[1.0, None])
    assert pred.groups.tolist() == ["1", "(missing)"] and pred.group_column == "group"
    with pytest.raises(CalibrationInputError, match=r"`groups` must have shape \(2,\)"):
        Predictions.from_arrays(probs=[[0.5, 0.5], [0.2, 0.8]], labels=[0, 1], groups=["a"])


def test_group_from_parquet_and_npz(tmp_path: Path) -> None:
    frame = pd.DataFrame({"label": [0, 1, 1], "p_0": [0.6, 0.3, 0.2], "p_1": [0.4, 0.7, 0.8],
                          "region": pd.Categorical(["n", "s", "n"]), "flag": [True, False, True]})
    frame.to_parquet(tmp_path / "m.parquet")
    pred = load_predictions(tmp_path / "m.parquet", group="region")
    assert pred.groups.tolist() == ["n", "s", "n"] and pred.attribute_columns == ("region", "flag")
    buffer = io.BytesIO()
    np.savez(buffer, probs=frame[["p_0", "p_1"]].to_numpy(), labels=frame["label"].to_numpy(),
             site=np.array([b"x", b"y", b"x"]), weight=np.array([0.5, 1.0, 2.0]))
    from_npz = load_predictions(buffer.getvalue(), name="m.npz", group="site")
    assert from_npz.groups.tolist() == ["x", "y", "x"] and from_npz.group_column == "site"
    assert load_predictions(buffer.getvalue(), name="m.npz").attribute_columns == ("site",)
    with pytest.raises(CalibrationInputError, match="group array 'nope' not found"):
        load_predictions(buffer.getvalue(), name="m.npz", group="nope")


def test_plain_npy_has_no_group_column() -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.column_stack([[0, 1], [[0.6, 0.4], [0.3, 0.7]]]))
    with pytest.raises(CalibrationInputError, match="no group column 'g'"):
        load_predictions(buffer.getvalue(), name="m.npy", group="g", label_column=0)


def test_group_demo_has_its_occupation_groups() -> None:
    pred = load_demo("fair_logistic_regression")
    assert pred.group_column == "occupation"
    assert set(pred.groups.tolist()) == {"student", "unskilled", "white collar", "skilled", "managerial",
                                         "professional"}
    assert pred.groups.shape == (pred.n_samples,)
    assert demo_datasets()["fair_logistic_regression"].stat().st_size < 200_000
    # without the demo default, the column is a candidate attribute and not a class
    plain = load_predictions(demo_datasets()["fair_logistic_regression"])
    assert plain.groups is None and plain.attribute_columns == ("occupation",) and plain.n_classes == 2
