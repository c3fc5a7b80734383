"""One test per validation branch of calib_core.validation (and through a public metric)."""
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.validation import (check_count, check_flag, check_fraction, check_labels, check_logits, check_probs,
                                   check_real, softmax_unchecked)


@pytest.mark.parametrize("probs, match", [
    ([0.2, 0.8], "2-D"),
    ([[1.0]], "at least 2 columns"),
    (np.empty((0, 3)), "no rows"),
    ([["a", "b"]], "numbers"),
    ([[0.5, np.nan]], "NaN"),
    ([[0.5, np.inf]], "NaN or infinite"),
    ([[1.2, -0.2]], "negative"),
    ([[0.5, 0.6]], "sum to 1"),
])
def test_probs_errors_name_the_problem(probs, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.ece(probs, [0] * max(1, len(probs)))


def test_error_names_the_offending_row():
    probs = np.full((5, 2), 0.5)
    probs[3] = [0.7, 0.7]
    with pytest.raises(CalibrationInputError, match="row 3 sums to 1.4"):
        check_probs(probs)


@pytest.mark.parametrize("labels, match", [
    ([0, 2], "lie in 0..1"),
    ([0, -1], "lie in 0..1"),
    ([0.0, 0.5], "integer class indices"),
    ([0, np.nan], "NaN"),
    (["cat", "dog"], "integer class indices"),
    ([0], "has 1 entries"),
    ([[0, 1], [1, 0]], "1-D"),
])
def test_label_errors_name_the_problem(labels, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.ece([[0.5, 0.5], [0.4, 0.6]], labels)


def test_whole_float_and_bool_labels_are_accepted():
    assert check_labels(np.array([0.0, 1.0]), 2).tolist() == [0, 1]
    assert check_labels(np.array([True, False]), 2).tolist() == [1, 0]


def test_error_is_a_value_error():
    assert issubclass(CalibrationInputError, ValueError)


def test_small_rounding_in_row_sums_is_accepted():
    assert cc.ece([[0.333333, 0.333333, 0.333334], [0.5, 0.5000001, 0.0]], [0, 1]) >= 0


def test_as_probs_builds_two_columns_and_checks_range():
    np.testing.assert_allclose(cc.as_probs([0.2, 1.0]), [[0.8, 0.2], [0.0, 1.0]])
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\]"):
        cc.as_probs([0.2, 1.5])
    with pytest.raises(CalibrationInputError, match="1-D"):
        cc.as_probs(np.zeros((2, 2, 2)))
    with pytest.raises(CalibrationInputError, match="empty"):
        cc.as_probs([])


def test_softmax_is_stable_and_checks_finiteness():
    np.testing.assert_allclose(cc.softmax([[1000.0, 1000.0]]), [[0.5, 0.5]])
    with pytest.raises(CalibrationInputError, match="logits"):
        cc.softmax([[1.0, np.nan]])


def test_softmax_unchecked_is_the_same_softmax_over_the_last_axis():
    rng = np.random.default_rng(0)
    logits = 30.0 * rng.normal(size=(4, 50, 3))
    np.testing.assert_array_equal(softmax_unchecked(logits[0]), cc.softmax(logits[0]))
    np.testing.assert_array_equal(softmax_unchecked(logits)[2], cc.softmax(logits[2]))
    assert cc.recalibration.check_logits is check_logits


def test_check_logits():
    np.testing.assert_array_equal(check_logits([[1, 2], [3, 4]]), [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(CalibrationInputError, match="2-D"):
        check_logits([1.0, 2.0])
    with pytest.raises(CalibrationInputError, match="at least 2 columns"):
        check_logits([[1.0], [2.0]])
    with pytest.raises(CalibrationInputError, match="row 1"):
        check_logits([[1.0, 2.0], [np.nan, 0.0]])
    with pytest.raises(CalibrationInputError, match="numbers"):
        check_logits([["a", "b"]])


@pytest.mark.parametrize("check, value, match", [
    (lambda v: check_count(v, "n_boot", 2), 1, "`n_boot` must be a whole number >= 2, got 1"),
    (lambda v: check_count(v, "n_boot", 2), 2.0, "whole number"),
    (lambda v: check_count(v, "n_boot", 2), True, "whole number"),
    (lambda v: check_flag(v, "squared"), 1, "`squared` must be True or False, got 1"),
    (lambda v: check_fraction(v, "alpha"), 1.0, "`alpha` must lie strictly between 0 and 1, got 1.0"),
    (lambda v: check_fraction(v, "alpha"), "0.1", "strictly between 0 and 1"),
    (lambda v: check_fraction(v, "alpha"), False, "strictly between 0 and 1"),
    (lambda v: check_real(v, "b0"), np.inf, "`b0` must be a finite number"),
    (lambda v: check_real(v, "b0"), True, "finite number"),
])
def test_small_checks_name_the_argument_and_the_value(check, value, match):
    with pytest.raises(CalibrationInputError, match=match):
        check(value)


def test_small_checks_return_plain_python_values():
    assert check_count(np.int64(3), "n") == 3 and type(check_count(np.int64(3), "n")) is int
    assert check_flag(np.bool_(True), "flag") is True
    assert check_fraction(np.float32(0.25), "alpha") == 0.25
    assert check_real(-2, "b0") == -2.0


def test_inputs_are_never_modified():
    probs = np.array([[0.995, 0.005], [0.6, 0.4], [0.3, 0.7]])
    before = probs.copy()
    for metric in (cc.ece, cc.ace, cc.tace, cc.sce, cc.gce, cc.ks_error, cc.brier_score):
        metric(probs, np.array([0, 1, 1]))
    np.testing.assert_array_equal(probs, before)


def test_class_major_check_accepts_what_the_row_check_accepts():
    from calib_core.validation import check_probs_columns

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4), size=50_000)  # more than one block of the column check
    labels = rng.integers(0, 4, 50_000)
    columns, checked = check_probs_columns(probs.T.copy(), labels)
    np.testing.assert_array_equal(columns, probs.T)
    np.testing.assert_array_equal(checked, labels)
    # Lists and integer matrices take the row check's conversions.
    columns, _ = check_probs_columns([[1, 0], [0, 1]], [0, 1])
    assert columns.dtype == np.float64 and columns.tolist() == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("bad, match", [
    (np.nan, "NaN or infinite values, e.g. row 40007"),
    (np.inf, "NaN or infinite values, e.g. row 40007"),
    (-0.1, "negative values, e.g. row 40007"),
    (0.9, "row 40007 sums to"),
])
def test_class_major_check_names_the_row_with_its_offset(bad, match):
    from calib_core.validation import check_probs_columns

    columns = np.full((2, 50_000), 0.5)
    columns[1, 40_000] = bad
    with pytest.raises(CalibrationInputError, match=match):
        check_probs_columns(columns, np.zeros(50_000, dtype=int), row_offset=7)


def test_class_major_check_names_a_label_row_with_its_offset():
    from calib_core.validation import check_probs_columns

    with pytest.raises(CalibrationInputError, match="row 12 is 2"):
        check_probs_columns(np.full((2, 3), 0.5), [0, 1, 2], row_offset=10)


@st.composite
def _maybe_corrupted(draw):
    """A probability matrix with labels, perhaps with one bad value or label somewhere."""
    n = draw(st.integers(1, 300))
    k = draw(st.integers(2, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = rng.integers(0, k, n)
    fault = draw(st.sampled_from(["none", "nan", "inf", "negative", "sum", "label", "tiny"]))
    row, column = draw(st.integers(0, n - 1)), draw(st.integers(0, k - 1))
    if fault == "nan":
        probs[row, column] = np.nan
    elif fault == "inf":
        probs[row, column] = np.inf
    elif fault == "negative":
        probs[row, column] = -0.01
    elif fault == "sum":
        probs[row, column] += 0.01
    elif fault == "tiny":
        probs[row, column] += 5e-5  # within the row-sum tolerance
    elif fault == "label":
        labels[row] = k
    return probs, labels


@settings(max_examples=150, deadline=None)
@given(data=_maybe_corrupted())
def test_class_major_check_accepts_and_rejects_exactly_as_the_row_check(data):
    from calib_core.validation import check_probs_columns, check_probs_labels

    probs, labels = data
    try:
        check_probs_labels(probs, labels)
        expected = None
    except CalibrationInputError as exc:
        expected = str(exc)
    for columns in (list(probs.T.copy()), probs.T.copy()):
        try:
            check_probs_columns(columns, labels)
            found = None
        except CalibrationInputError as exc:
            found = str(exc)
        assert found == expected


# --- the n_bins bound (issue 12, item 9) ----------------------------------------------------------

from calib_core.metrics.debiased import ece_sweep_details  # noqa: E402
from calib_core.validation import MAX_N_BINS, check_n_bins  # noqa: E402

_rng = np.random.default_rng(0)
ROWS_300 = _rng.dirichlet(np.ones(4), 300)
LABELS_300 = _rng.integers(0, 4, 300)

#: Every public function that bins, called with one bin count.
BINNED = {
    "ece": lambda n: cc.ece(ROWS_300, LABELS_300, n_bins=n),
    "ece_adaptive": lambda n: cc.ece(ROWS_300, LABELS_300, n_bins=n, binning="adaptive"),
    "mce": lambda n: cc.mce(ROWS_300, LABELS_300, n_bins=n),
    "classwise_ece": lambda n: cc.classwise_ece(ROWS_300, LABELS_300, n_bins=n),
    "sce": lambda n: cc.sce(ROWS_300, LABELS_300, n_bins=n),
    "ace": lambda n: cc.ace(ROWS_300, LABELS_300, n_bins=n),
    "tace": lambda n: cc.tace(ROWS_300, LABELS_300, n_bins=n),
    "gce": lambda n: cc.gce(ROWS_300, LABELS_300, n_bins=n, max_prob=False, class_conditional=True),
    "reliability_table": lambda n: cc.reliability_table(ROWS_300, LABELS_300, n_bins=n),
    "bin_sensitivity": lambda n: cc.bin_sensitivity(ROWS_300, LABELS_300, bin_counts=[n]),
    "debiased_ece": lambda n: cc.debiased_ece(ROWS_300, LABELS_300, n_bins=n),
    "ece_sweep": lambda n: ece_sweep_details(ROWS_300, LABELS_300, binning="uniform", max_bins=n),
    "bin_index": lambda n: cc.bin_index(ROWS_300[:, 0], n),
    "bin_statistics": lambda n: cc.bin_statistics(ROWS_300[:, 0], LABELS_300 == 0, n),
    "classwise_bin_statistics": lambda n: cc.classwise_bin_statistics(ROWS_300, LABELS_300, n),
    "compute_metrics": lambda n: cc.compute_metrics(ROWS_300, LABELS_300, n_bins=n, keys=["ece", "sce"]),
    "histogram_binning": lambda n: cc.HistogramBinning(n_bins=n).fit(ROWS_300, LABELS_300),
}


@pytest.mark.parametrize("n_bins", [10**7, 10**9, 2**63, MAX_N_BINS + 1, np.int64(10**9)])
@pytest.mark.parametrize("name", sorted(BINNED))
def test_absurd_bin_counts_are_refused_at_once(name, n_bins):
    start = time.perf_counter()
    with pytest.raises(CalibrationInputError, match=r"`(n_bins|bin_counts|max_bins)` must be at most 10,000"):
        BINNED[name](n_bins)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("n_bins", [True, 15.0, "15", np.float64(15)])  # None: "optimal" where allowed
@pytest.mark.parametrize("name", sorted(BINNED))
def test_bin_counts_must_be_whole_numbers(name, n_bins):
    with pytest.raises(CalibrationInputError, match=r"`(n_bins|bin_counts|max_bins)` must be a whole number"):
        BINNED[name](n_bins)


@pytest.mark.parametrize("name", sorted(set(BINNED) - {"ece_sweep"}))  # ece_sweep: "whole number >= 1"
@pytest.mark.parametrize("n_bins", [0, -1, -(2**63)])
def test_bin_counts_must_be_positive(name, n_bins):
    with pytest.raises(CalibrationInputError, match=r"`(n_bins|bin_counts)` must be >= 1"):
        BINNED[name](n_bins)


@pytest.mark.parametrize("name", sorted(BINNED))
def test_the_largest_bin_count_and_numpy_integers_are_accepted(name):
    BINNED[name](np.int32(7))
    BINNED[name](MAX_N_BINS)


def test_the_bound_is_documented_and_optional_for_other_counts():
    assert MAX_N_BINS == 10_000
    assert check_n_bins(10**7, name="rows", maximum=None) == 10**7
    assert cc.optimal_n_bins(8 * 10**10) < MAX_N_BINS


def test_a_huge_iterable_of_bin_counts_is_not_read_to_its_end():
    start = time.perf_counter()
    with pytest.raises(CalibrationInputError, match="`bin_counts` holds more than 10,000 values"):
        cc.bin_sensitivity(ROWS_300, LABELS_300, bin_counts=range(1, 10**12))
    assert time.perf_counter() - start < 1.0


# --- validation once: the mark of checked, frozen arrays (issue 15) ---------------------------------------------

from calib_core._accel import is_validated, mark_validated  # noqa: E402
from calib_core.validation import check_probs_by_block, check_probs_labels  # noqa: E402
from calib_core.validation.arrays import _BLOCK_ELEMENTS  # noqa: E402


def _frozen(array):
    array = np.array(array)
    array.flags.writeable = False
    return array


def test_a_marked_frozen_array_is_returned_without_a_scan():
    probs = mark_validated(_frozen([[0.9, 0.1], [0.2, 0.8]]))
    labels = mark_validated(_frozen(np.array([0, 1], dtype=np.intp)), 2)
    assert is_validated(probs) and is_validated(labels, 2)
    assert check_probs(probs) is probs and check_labels(labels, 2, n_rows=2) is labels
    checked_probs, checked_labels = check_probs_labels(probs, labels)
    assert checked_probs is probs and checked_labels is labels
    assert not probs.flags.writeable and not labels.flags.writeable


def test_labels_are_marked_for_their_class_count_and_length_only():
    labels = mark_validated(_frozen(np.array([0, 2], dtype=np.intp)), 3)
    assert not is_validated(labels, 2)
    with pytest.raises(CalibrationInputError, match="must lie in 0..1"):
        check_labels(labels, 2)
    with pytest.raises(CalibrationInputError, match="has 2 entries"):
        check_labels(labels, 3, n_rows=3)


def test_an_invalid_array_passed_directly_still_raises():
    # Same values as a marked array, but a different object: checked in full.
    bad = np.array([[0.9, 0.1], [np.nan, 1.0]])
    mark_validated(_frozen([[0.9, 0.1], [0.2, 0.8]]))
    with pytest.raises(CalibrationInputError, match="NaN or infinite values, e.g. row 1"):
        check_probs(bad)
    with pytest.raises(CalibrationInputError, match="NaN or infinite values, e.g. row 1"):
        cc.ece(bad, [0, 1])
    with pytest.raises(CalibrationInputError, match="must lie in 0..1"):
        cc.ece([[0.9, 0.1], [0.2, 0.8]], np.array([0, 5]))


def test_copies_views_and_writeable_arrays_are_checked_again():
    probs = mark_validated(_frozen([[0.9, 0.1], [0.2, 0.8]]))
    copy = probs.copy()  # a copy is writeable and a new object
    copy[1] = [0.5, 0.7]
    assert not is_validated(copy)
    with pytest.raises(CalibrationInputError, match="row 1 sums to 1.2"):
        check_probs(copy)
    assert not is_validated(probs[:1]) and not is_validated(probs.view())
    # A writeable array, or a view of one, is never marked: its owner could change it.
    owner = np.array([[0.9, 0.1], [0.2, 0.8]])
    view = mark_validated(owner)
    assert not view.flags.writeable and not is_validated(view)
    owner[0, 0] = -1.0
    with pytest.raises(CalibrationInputError, match="negative values, e.g. row 0"):
        check_probs(view)


def test_the_mark_is_lost_when_the_data_become_writeable_again():
    root = _frozen([[0.9, 0.1], [0.2, 0.8]])
    probs = mark_validated(root)
    assert is_validated(probs)
    root.flags.writeable = True
    root[0, 0] = 5.0
    assert not is_validated(probs)
    with pytest.raises(CalibrationInputError, match="row 0 sums to 5.1"):
        check_probs(probs)


def test_a_freed_array_leaves_no_mark_for_a_new_one_at_the_same_address():
    import gc
    for _ in range(50):
        mark_validated(_frozen([[0.9, 0.1], [0.2, 0.8]]))
    gc.collect()
    bad = _frozen([[0.9, 0.3], [0.2, 0.8]])
    with pytest.raises(CalibrationInputError, match="must sum to 1"):
        check_probs(bad)


@pytest.mark.parametrize("row", [0, 1, 1310, 1311, 2999])
@pytest.mark.parametrize("kind, value, match", [
    ("nan", np.nan, "NaN or infinite values, e.g. row {row}"),
    ("inf", np.inf, "NaN or infinite values, e.g. row {row}"),
    ("-inf", -np.inf, "NaN or infinite values, e.g. row {row}"),
    ("negative", -0.25, "negative values, e.g. row {row}"),
    ("off", 0.5, "row {row} sums to"),
])
def test_block_checks_raise_what_the_row_check_raised_at_any_block(row, kind, value, match):
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(100), size=3000)
    probs[row, 7] = value
    pattern = match.format(row=row)
    with pytest.raises(CalibrationInputError, match=pattern):
        check_probs(probs)
    matrix, blocks = check_probs_by_block(probs)
    with pytest.raises(CalibrationInputError, match=pattern):
        for _ in blocks:
            pass
    with pytest.raises(CalibrationInputError, match=pattern):
        cc.ece(probs, np.zeros(3000, dtype=int))


def test_blocks_cover_every_row_once_in_order():
    probs = np.random.default_rng(4).dirichlet(np.ones(7), size=3 * (_BLOCK_ELEMENTS // 7) + 5)
    matrix, blocks = check_probs_by_block(probs)
    parts = list(blocks)
    assert len(parts) == 4 and [start for start, _ in parts] == [0, *np.cumsum([b.shape[0] for _, b in parts[:-1]])]
    np.testing.assert_array_equal(np.concatenate([b for _, b in parts]), matrix)
    marked = mark_validated(_frozen(probs))
    assert check_probs_by_block(marked)[0] is marked


def test_the_quick_block_test_is_exact_at_the_tolerance_edge():
    from calib_core.validation import ROW_SUM_TOLERANCE
    for delta in (ROW_SUM_TOLERANCE, -ROW_SUM_TOLERANCE, np.nextafter(ROW_SUM_TOLERANCE, 1), 2e-4):
        probs = np.array([[0.5, 0.5 + delta], [0.3, 0.7]])
        row_check = np.abs(probs.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE
        if row_check.any():
            with pytest.raises(CalibrationInputError, match="must sum to 1"):
                check_probs(probs)
        else:
            check_probs(probs)


def test_predictions_arrays_are_validated_once():
    from calib_core.io import Predictions
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(4), size=50)
    labels = rng.integers(0, 4, 50)
    from_list = Predictions.from_arrays(probs=probs.tolist(), labels=labels)
    assert is_validated(from_list.probs) and is_validated(from_list.labels, 4)
    subset = from_list.subset(np.arange(10))
    assert is_validated(subset.probs) and is_validated(subset.labels, 4)
    # The caller's own float64 array is used as it is (no copy), so it stays writeable for them and
    # the Predictions' view of it is not marked: every call checks it, and sees the caller's changes.
    shared = Predictions.from_arrays(probs=probs, labels=labels)
    assert not is_validated(shared.probs) and is_validated(shared.labels, 4)
    probs[0] = [2.0, 0.0, 0.0, 0.0]
    with pytest.raises(CalibrationInputError, match="row 0 sums to 2"):
        cc.ece(shared.probs, shared.labels)
    assert cc.ece(from_list.probs, from_list.labels) == cc.ece(np.array(from_list.probs), labels)
    loaded = cc.load_predictions(b"label,p_a,p_b\na,0.9,0.1\nb,0.3,0.7\n", file_format="csv")
    assert is_validated(loaded.probs) and is_validated(loaded.labels, 2)
    assert cc.ece(loaded.probs, loaded.labels) == cc.ece([[0.9, 0.1], [0.3, 0.7]], [0, 1])


def test_unpickled_and_copied_predictions_stay_read_only_and_marked():
    import copy
    import pickle

    from calib_core.io import Predictions
    caller_probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    pred = Predictions.from_arrays(probs=caller_probs, labels=[0, 1, 1], split=["a", "b", "a"])
    for protocol in (2, 4, 5):  # st.cache_data pickles with the default protocol (4)
        clone = pickle.loads(pickle.dumps(pred, protocol=protocol))
        for array in (clone.probs, clone.labels, clone.split):
            assert not array.flags.writeable
        np.testing.assert_array_equal(clone.probs, caller_probs)
        assert is_validated(clone.labels, 2)
        if protocol < 5:
            assert is_validated(clone.probs)
        assert cc.ece(clone.probs, clone.labels) == cc.ece(caller_probs, [0, 1, 1])
    deep = copy.deepcopy(pred)
    assert is_validated(deep.probs) and is_validated(deep.labels, 2)
    shallow = copy.copy(pred)  # shares the arrays: the caller's array is not frozen by the copy
    assert caller_probs.flags.writeable and not is_validated(shallow.probs)
    assert is_validated(shallow.labels, 2)


def test_row_argmax_equals_numpy_on_read_only_matrices_with_ties():
    from calib_core.validation import row_argmax

    rng = np.random.default_rng(3)
    matrix = np.round(rng.random((50_000, 7)), 1)  # many ties: the lowest index wins, as numpy's
    matrix.flags.writeable = False
    np.testing.assert_array_equal(row_argmax(matrix), np.asarray(matrix).argmax(axis=1))


def test_the_labels_of_a_parquet_file_are_marked(tmp_path):
    """Issue 15: a Parquet file's labels were a view of an Arrow buffer, which cannot be marked, so every metric
    call checked them again and nothing derived from them could be kept; they are now copied once and marked."""
    import pandas as pd
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.dirichlet(np.ones(3), size=50), columns=["p0", "p1", "p2"])
    frame["label"] = rng.integers(0, 3, 50)
    frame.to_parquet(tmp_path / "model.parquet")
    pred = cc.load_predictions(tmp_path / "model.parquet")
    assert is_validated(pred.probs) and is_validated(pred.labels, 3)
    np.testing.assert_array_equal(pred.labels, frame["label"].to_numpy())


def test_remembered_keeps_the_last_value_for_marked_arrays_only():
    """Issue 15: the Metrics page asked for the top label of one model about 20 times (45 ms each at
    50,000 x 1,000) and for its SKCE bandwidth 3 times (0.4 s each); for marked arrays the last one is kept."""
    import gc
    from calib_core._accel import remembered
    calls = []

    @remembered
    def spread_of(probs, labels, scale=1.0):
        calls.append(scale)
        return probs.max(axis=1) * scale, float(labels.sum())

    rng = np.random.default_rng(1)
    pred = cc.Predictions.from_arrays(rng.dirichlet(np.ones(3), size=40).tolist(), rng.integers(0, 3, 40).tolist())
    assert is_validated(pred.probs) and is_validated(pred.labels, 3)  # its own copies: frozen and marked
    first = spread_of(pred.probs, pred.labels)
    assert spread_of(pred.probs, pred.labels) is first and calls == [1.0]
    assert not first[0].flags.writeable  # nobody can change the kept value
    spread_of(pred.probs, pred.labels, 2.0)  # other settings: computed
    assert calls == [1.0, 2.0]
    writable = np.array(pred.probs)  # not marked: computed every time
    spread_of(writable, pred.labels)
    spread_of(writable, pred.labels)
    assert calls == [1.0, 2.0, 1.0, 1.0]
    assert first[0].flags.writeable is False and first[1] == float(pred.labels.sum())
    # The memo holds weak references: it keeps no model alive.
    import weakref
    alive = weakref.ref(pred.probs)
    spread_of(pred.probs, pred.labels)
    del pred, first
    gc.collect()
    assert alive() is None


def test_every_accuracy_is_the_mean_of_correct_rows():
    """One definition of a correct row (issue 24): arg-max (ties: lowest index) equals the label."""
    from calib_core.io import Predictions
    from calib_core.validation import correct_rows

    probs = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.1, 0.6, 0.3], [0.4, 0.4, 0.2]])
    labels = np.array([1, 2, 1, 0])
    assert correct_rows(probs, labels).tolist() == [0.0, 1.0, 1.0, 1.0]
    assert cc.accuracy(probs, labels) == Predictions(probs, labels).accuracy == 0.75
