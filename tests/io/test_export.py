"""Tests for calib_core.io.export (CSV formula injection, OWASP)."""
from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from calib_core.io.export import FORMULA_PREFIXES, csv_bytes, escape_csv_cell, escape_csv_frame

HOSTILE = '=HYPERLINK("http://127.0.0.1:9/x","click")'


def rows_of(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"))))


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1+2", "@SUM(A1)", "\tx", "\rx", HOSTILE, "-3"])
def test_formula_like_text_gets_a_quote(text):
    assert escape_csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["ECE", "model 1", "", " =x", "1-2", "'=x"])
def test_other_text_is_unchanged(value):
    assert escape_csv_cell(value) == value


@pytest.mark.parametrize("value", [-1.5, -2, np.float64(-0.25), np.int64(-7), True, None, np.nan])
def test_numbers_and_missing_values_are_unchanged(value):
    assert escape_csv_cell(value) is value


def test_prefixes_are_owasps():
    assert set(FORMULA_PREFIXES) == {"=", "+", "-", "@", "\t", "\r"}


def test_frame_escapes_text_cells_names_and_labels_but_not_numbers():
    frame = pd.DataFrame({
        "model": [HOSTILE, "plain", None],
        "value": [-0.5, 1.0, -2.0],
        "mixed": ["-1+2", -1.0, np.nan],
        "category": pd.Categorical(["@a", "b", "@a"]),
        "string": pd.array(["+x", "y", None], dtype="string"),
        "=cols": [1, 2, 3],
    }, index=pd.Index(["-a", "b", "c"], name="@index"))
    escaped = escape_csv_frame(frame)
    assert escaped["model"].tolist()[:2] == ["'" + HOSTILE, "plain"] and escaped["model"].isna().iloc[2]
    assert escaped["value"].tolist() == [-0.5, 1.0, -2.0] and escaped["value"].dtype == np.float64
    assert escaped["mixed"].tolist()[:2] == ["'-1+2", -1.0]
    assert escaped["category"].tolist() == ["'@a", "b", "'@a"]
    assert escaped["string"].tolist()[:2] == ["'+x", "y"]
    assert "'=cols" in escaped.columns and escaped.index.tolist() == ["'-a", "b", "c"]
    assert escaped.index.name == "'@index"
    assert frame["model"].iloc[0] == HOSTILE, "the input is not changed"


def test_csv_bytes_round_trip():
    frame = pd.DataFrame({"model": [HOSTILE, "ok"], "estimate": [-0.00123, 0.5], "n": [3, -4]})
    rows = rows_of(csv_bytes(frame))
    assert rows[0] == ["model", "estimate", "n"]
    assert rows[1] == ["'" + HOSTILE, "-0.00123", "3"] and rows[2] == ["ok", "0.5", "-4"]
    assert csv_bytes(frame, float_format="%.2f").decode().splitlines()[1].endswith(",-0.00,3")
