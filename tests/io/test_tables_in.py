"""Tables in memory (pandas, Arrow, polars) load exactly as the same table written to a CSV file.

Each case builds a table in Python, writes it with ``DataFrame.to_csv`` and loads both: the
arrays, names, groups, attribute columns and notes must be equal, and a refusal must carry the
same message (the file's name and file lines aside).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calib_core.io import Predictions, load_predictions
from calib_core.io.readers import FRAME_KINDS
from calib_core.validation import CalibrationInputError

pl = pytest.importorskip("polars")

KINDS = ("pandas", "arrow", "polars")


def typed_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Arrow and polars hold one type per column: a column mixing numbers and text is text there."""
    def one(column: pd.Series) -> pd.Series:
        mixed = column.dtype == object and len({type(v) for v in column.dropna()}) > 1
        return column.astype("string") if mixed else column
    return frame.apply(one)


def as_kind(frame: pd.DataFrame, kind: str):
    if kind == "pandas":
        return frame
    frame = typed_columns(frame)
    if kind == "arrow":
        return pa.Table.from_pandas(frame, preserve_index=False)
    return pl.from_pandas(frame)


def file_outcome(frame: pd.DataFrame, path: Path, **kwargs) -> Predictions | str:
    frame.to_csv(path, index=False)
    try:
        return load_predictions(path, **kwargs)
    except CalibrationInputError as exc:
        # Files name their lines; a table in memory names rows only.
        return re.sub(r" \(file line \d+\)", "", str(exc)).replace(f"file {path.name!r}", "THE TABLE")


def table_outcome(table, kind: str, **kwargs) -> Predictions | str:
    try:
        return load_predictions(table, **kwargs)
    except CalibrationInputError as exc:
        return str(exc).replace(FRAME_KINDS[kind], "THE TABLE")


def assert_same(from_file: Predictions | str, from_table: Predictions | str) -> None:
    assert type(from_file) is type(from_table), (from_file, from_table)
    if isinstance(from_file, str):
        assert from_table == from_file
        return
    np.testing.assert_array_equal(from_table.probs, from_file.probs)
    np.testing.assert_array_equal(from_table.labels, from_file.labels)
    for array in ("logits", "split", "groups"):
        expected, got = getattr(from_file, array), getattr(from_table, array)
        assert (expected is None) == (got is None), array
        if expected is not None:
            np.testing.assert_array_equal(got, expected)
    for attribute in ("class_names", "input_kind", "logit_reason", "group_column", "attribute_columns", "name"):
        assert getattr(from_table, attribute) == getattr(from_file, attribute), attribute
    assert [w.replace("file 'm.csv'", "THE TABLE") for w in from_file.warnings] == [
        w.replace("the pandas DataFrame", "THE TABLE") for w in from_table.warnings]


def check_every_kind(frame: pd.DataFrame, tmp_path: Path, **kwargs) -> Predictions | str:
    from_file = file_outcome(frame, tmp_path / "m.csv", **kwargs)
    for kind in KINDS:
        assert_same(from_file, table_outcome(as_kind(frame, kind), kind, name="m", **kwargs))
    return from_file


RNG = np.random.default_rng(7)
PROBS = RNG.dirichlet(np.ones(3), size=12)

CASES = {
    "probabilities": pd.DataFrame({"label": RNG.integers(0, 3, 12), "p_0": PROBS[:, 0], "p_1": PROBS[:, 1],
                                   "p_2": PROBS[:, 2]}),
    "logits": pd.DataFrame({"y": RNG.integers(0, 3, 12), **{f"logit_{k}": RNG.normal(size=12) for k in range(3)}}),
    "text labels": pd.DataFrame({"label": RNG.choice(["cat", "dog", "NA"], 12), "p_cat": PROBS[:, 0],
                                 "p_dog": PROBS[:, 1], "p_NA": PROBS[:, 2]}),
    "group and split": pd.DataFrame({"label": RNG.integers(0, 3, 12), "site": RNG.choice(["north", "south", None], 12),
                                     "split": RNG.choice(["calibration", "test"], 12),
                                     "age_band": RNG.integers(1, 5, 12),
                                     "p_a": PROBS[:, 0], "p_b": PROBS[:, 1], "p_c": PROBS[:, 2]}),
    "binary score": pd.DataFrame({"target": RNG.integers(0, 2, 12), "score": PROBS[:, 0]}),
    "refused: rows off one": pd.DataFrame({"label": [0, 1, 1], "p_0": [0.2, 0.7, 0.5], "p_1": [0.8, 0.7, 0.5]}),
    "refused: text in a class column": pd.DataFrame({"label": [0, 1, 1], "p_0": [0.2, "high", 0.5],
                                                      "p_1": [0.8, 0.7, 0.5]}),
    "refused: label outside classes": pd.DataFrame({"label": [0, 1, 4], "p_0": [0.2, 0.3, 0.5],
                                                    "p_1": [0.8, 0.7, 0.5]}),
    "refused: no label column": pd.DataFrame({"p_0": [0.2, 0.3], "p_1": [0.8, 0.7]}),
    "refused: missing probability": pd.DataFrame({"label": [0, 1, 1], "p_0": [0.2, np.nan, 0.5],
                                                  "p_1": [0.8, 0.7, 0.5]}),
    "proposed mapping": pd.DataFrame({"label": ["yes", "no", "yes"], "p_0": [0.2, 0.3, 0.5], "p_1": [0.8, 0.7, 0.5]}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_table_kind_loads_as_its_csv(case: str, tmp_path: Path) -> None:
    outcome = check_every_kind(CASES[case], tmp_path, group="site" if "group" in case else None)
    assert isinstance(outcome, str) == case.startswith(("refused", "proposed"))


def test_group_candidates_stay_available_as_attributes(tmp_path: Path) -> None:
    outcome = check_every_kind(CASES["group and split"], tmp_path)
    assert outcome.attribute_columns == ("site", "age_band")
    for kind in KINDS:
        loaded = load_predictions(as_kind(CASES["group and split"], kind), group="age_band")
        assert loaded.group_column == "age_band" and set(loaded.groups) == {"1", "2", "3", "4"}


def test_pandas_extension_dtypes_and_a_non_default_index_load_as_plain_values(tmp_path: Path) -> None:
    plain = CASES["group and split"]
    typed = plain.assign(
        label=plain["label"].astype("Int64"),
        site=plain["site"].astype("category"),
        split=plain["split"].astype("string[pyarrow]"),
        age_band=plain["age_band"].astype("category"),
        p_a=plain["p_a"].astype("Float64"),
    ).set_axis([f"r{k}" for k in range(12)])
    from_file = file_outcome(plain, tmp_path / "m.csv", group="site")
    assert_same(from_file, table_outcome(typed, "pandas", name="m", group="site"))
    assert_same(from_file, table_outcome(pl.from_pandas(typed), "polars", name="m", group="site"))
    text = plain.assign(label=pd.Categorical(plain["label"].map({0: "a", 1: "b", 2: "c"})))
    assert load_predictions(text).class_names == ("a", "b", "c")


def test_nullable_integer_labels_with_a_gap_are_refused_as_in_the_file(tmp_path: Path) -> None:
    frame = CASES["probabilities"].assign(label=pd.array([0, None, *range(10)], dtype="Int64") % 3)
    from_file = file_outcome(frame, tmp_path / "m.csv")
    assert isinstance(from_file, str) and "row 2" in from_file
    for kind in KINDS:
        assert table_outcome(as_kind(frame, kind), kind) == from_file


def test_a_non_default_index_names_the_refused_row() -> None:
    frame = CASES["refused: rows off one"].set_axis(["x", "y", "z"])
    with pytest.raises(CalibrationInputError, match=r"row 2 \(index 'y'\)"):
        load_predictions(frame)


def test_arrow_and_polars_string_and_categorical_columns(tmp_path: Path) -> None:
    frame = CASES["text labels"]
    from_file = file_outcome(frame, tmp_path / "m.csv")
    arrow = pa.table({"label": pa.array(frame["label"]).dictionary_encode(),
                      **{c: pa.array(frame[c]) for c in frame.columns[1:]}})
    large = arrow.set_column(0, "label", pa.array(frame["label"], type=pa.large_string()))
    polars = pl.from_pandas(frame).with_columns(pl.col("label").cast(pl.Categorical))
    for table, kind in ((arrow, "arrow"), (large, "arrow"), (pa.record_batch(arrow.to_batches()[0].columns,
                        names=arrow.column_names), "arrow"), (polars, "polars")):
        assert_same(from_file, table_outcome(table, kind, name="m"))


def test_table_kind_refusals_of_its_own() -> None:
    frame = CASES["probabilities"]
    with pytest.raises(CalibrationInputError, match=r"`file_format` chooses a file reader"):
        load_predictions(frame, file_format="csv")
    with pytest.raises(CalibrationInputError, match=r"polars LazyFrame; collect it first"):
        load_predictions(pl.from_pandas(frame).lazy())
    with pytest.raises(CalibrationInputError, match=r"duplicate column name 'p_0' in the pandas DataFrame"):
        load_predictions(frame.set_axis(["label", "p_0", "p_0", "p_2"], axis=1))
    with pytest.raises(CalibrationInputError, match=r"the Arrow table holds 12 rows x 4 columns"):
        load_predictions(pa.Table.from_pandas(frame), max_rows=5)


# ----------------------------------------------------------------------------- the property

HOSTILE = ["", "nan", "inf", "-0.5", "abc", "1e309", "NA", "None", "2", "0"]


@st.composite
def tables(draw) -> pd.DataFrame:
    n_rows = draw(st.integers(1, 10))
    n_classes = draw(st.integers(2, 4))
    raw = np.array(draw(st.lists(st.lists(st.integers(0, 100), min_size=n_classes, max_size=n_classes),
                                 min_size=n_rows, max_size=n_rows)), dtype=float) + 1.0
    probs = raw / raw.sum(axis=1, keepdims=True)
    labels = draw(st.lists(st.integers(0, n_classes - 1), min_size=n_rows, max_size=n_rows))
    names = draw(st.one_of(st.just([str(k) for k in range(n_classes)]),
                           st.lists(st.sampled_from(["cat", "dog", "NA", "x y", "é", "True"]),
                                    min_size=n_classes, max_size=n_classes, unique=True)))
    text_labels = draw(st.booleans())
    frame = pd.DataFrame({"label": [names[y] if text_labels else y for y in labels]})
    for k, name in enumerate(names):
        frame[f"p_{name}"] = probs[:, k]
    if draw(st.booleans()):
        frame["grp"] = draw(st.lists(st.sampled_from(["a", "b", None, "7"]), min_size=n_rows, max_size=n_rows))
    if draw(st.booleans()):  # one hostile cell, as text in a column of numbers or labels
        column = draw(st.sampled_from(list(frame.columns)))
        row = draw(st.integers(0, n_rows - 1))
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = draw(st.sampled_from(HOSTILE))
    return frame


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(frame=tables(), group=st.booleans())
def test_any_table_loads_as_its_csv_file(frame: pd.DataFrame, group: bool, tmp_path: Path) -> None:
    check_every_kind(frame, tmp_path, group="grp" if group and "grp" in frame else None)
