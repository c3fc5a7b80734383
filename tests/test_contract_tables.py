"""Contract, third round (``calib_core_api.md``): ``cc.load_predictions(source)`` takes a pandas DataFrame, a pyarrow
Table or a polars DataFrame with the same column rules as a file; other columns stay available as attributes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import calib_core as cc

pl = pytest.importorskip("polars")

FRAME = pd.DataFrame({"label": ["cat", "dog", "cat", "dog"], "p_cat": [0.9, 0.2, 0.6, 0.3],
                      "p_dog": [0.1, 0.8, 0.4, 0.7], "site": ["a", "b", "a", "b"]})


@pytest.mark.parametrize("make", [lambda f: f, pa.Table.from_pandas, pl.from_pandas], ids=["pandas", "arrow", "polars"])
def test_load_predictions_takes_tables_with_the_files_column_rules(make):
    from_file = cc.load_predictions(FRAME.to_csv(index=False).encode(), name="m.csv")
    loaded = cc.load_predictions(make(FRAME))
    assert isinstance(loaded, cc.Predictions)
    np.testing.assert_array_equal(loaded.probs, from_file.probs)
    np.testing.assert_array_equal(loaded.labels, from_file.labels)
    assert loaded.class_names == from_file.class_names == ("cat", "dog")
    assert loaded.attribute_columns == from_file.attribute_columns == ("site",)
    assert list(cc.load_predictions(make(FRAME), group="site").groups) == ["a", "b", "a", "b"]
