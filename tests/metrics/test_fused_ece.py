"""The default ECE's fused pass (issue 29): one read of the matrix checks each row, takes its top label and bins it.

Both halves of :func:`calib_core._accel.top_label_bin_sums` (the compiled kernel and its numpy twin) run every
test (``numba_path``); "the general path" is the check-then-bin computation that ``ece`` ran before, and still runs
for other options and whenever the fused pass does not pass a row.
"""
import tracemalloc

import numpy as np
import pytest

import calib_core as cc
from calib_core._accel import top_label_bin_sums
from calib_core.metrics import binned
from calib_core.validation import ROW_SUM_TOLERANCE, CalibrationInputError
from tests.compiled_support import kernel_paths

numba_path = kernel_paths("top_label_bin_sums", "numba_path")


def _general_ece(monkeypatch, *args, **kwargs):
    """``cc.ece`` by the general path (the fused pass switched off), or the message it raises."""
    with monkeypatch.context() as patch:
        patch.setattr(binned, "_fused_bin_statistics", lambda *a, **k: None)
        return _value_or_message(cc.ece, *args, **kwargs)


def _value_or_message(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except CalibrationInputError as error:
        return f"error: {error}"


def _predictions(n_rows, n_classes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    probs = np.floor(rng.dirichlet(np.ones(n_classes) * 0.7, size=n_rows) * 20) / 20  # ties, values on bin edges
    probs[:, 0] = 0.0
    probs[:, 0] = 1.0 - probs.sum(axis=1)  # rows sum to 1 within rounding
    probs[:3] = 1.0 / n_classes  # every class tied
    probs[3, :] = 0.0
    probs[3, -1] = 1.0  # a confidence of exactly 1
    return probs.astype(dtype), rng.integers(0, n_classes, n_rows)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_classes", [2, 7, 8, 11])  # from 8 columns on the kernel reads four lanes
@pytest.mark.parametrize("n_bins, right, norm", [(15, True, "l1"), (10, False, "l1"), (20, True, "l2"),
                                                 (1, True, "max"), (4, False, "max")])
def test_fused_ece_gives_the_general_paths_number_exactly(numba_path, monkeypatch, dtype, n_classes, n_bins, right,
                                                          norm):
    """The same bins and the sums added in row order: the same value, bit for bit, ties and edges included."""
    for n_rows in (50, 6_000):  # below and above uniform_index's guessed-bin threshold
        probs, labels = _predictions(n_rows, n_classes, dtype)
        fused = cc.ece(probs, labels, n_bins=n_bins, right=right, norm=norm)
        assert fused == _general_ece(monkeypatch, probs, labels, n_bins=n_bins, right=right, norm=norm)
        assert binned._fused_bin_statistics(probs, labels, n_bins, "uniform", right, None) is not None


def test_fused_ece_on_a_predictions_arrays_skips_the_check_and_agrees(numba_path, monkeypatch):
    probs, labels = _predictions(3_000, 5, np.float32)
    pred = cc.Predictions.from_arrays(probs=probs, labels=labels)
    assert cc.ece(pred.probs, pred.labels) == _general_ece(monkeypatch, pred.probs, pred.labels)
    assert cc.mce(pred.probs, pred.labels) == cc.mce(probs, labels)


def _bad_inputs():
    probs, labels = _predictions(500, 4, np.float64)
    cases = []
    for value in (np.nan, np.inf, -np.inf, -0.1):
        bad = probs.copy()
        bad[321, 2] = value
        cases.append((bad, labels, {}))
    off = probs.copy()
    off[400] *= 1.5
    cases.append((off, labels, {}))
    wrong_labels = labels.copy()
    wrong_labels[7] = 4
    cases.append((probs, wrong_labels, {}))
    cases.append((off, wrong_labels, {}))  # the matrix's error first
    cases.append((off, labels, {"n_bins": 0}))  # the matrix's error before the option's
    cases.append((probs, labels, {"n_bins": 0}))
    cases.append((probs, labels, {"norm": "l3"}))
    cases.append((probs, labels, {"norm": "l3", "right": "yes"}))
    cases.append((probs.astype(np.float32)[:, :1], labels, {}))
    return cases


@pytest.mark.parametrize("case", range(len(_bad_inputs())))
def test_fused_ece_raises_the_validators_errors_in_the_same_order(numba_path, monkeypatch, case):
    probs, labels, options = _bad_inputs()[case]
    fused = _value_or_message(cc.ece, probs, labels, **options)
    assert isinstance(fused, str) and fused.startswith("error: ")
    assert fused == _general_ece(monkeypatch, probs, labels, **options)


@pytest.mark.parametrize("excess", [0.9999, 1.0, 1.0001])
def test_row_sums_at_the_tolerance_edge_are_decided_by_the_validator(numba_path, monkeypatch, excess):
    """A sum within rounding of the tolerance is not passed by the fused pass: the validator decides."""
    probs, labels = _predictions(200, 3, np.float64)
    probs[17] = [0.5, 0.5 + ROW_SUM_TOLERANCE * excess, 0.0]
    assert _value_or_message(cc.ece, probs, labels) == _general_ece(monkeypatch, probs, labels)


def test_kernel_and_numpy_twin_give_the_same_sums_and_refuse_the_same_matrices(monkeypatch):
    from calib_core._accel import compiled
    from tests.compiled_support import require_kernel
    require_kernel("top_label_bin_sums")
    upper = np.linspace(0.0, 1.0, 16)[1:]
    for dtype in (np.float64, np.float32):
        probs, labels = _predictions(5_000, 6, dtype)
        bad = probs.copy()
        bad[4_000, 1] = np.nan
        for matrix, check in ((probs, True), (probs, False), (bad, True)):
            for right in (True, False):
                kernel = top_label_bin_sums(matrix, labels, upper, right=right, tolerance=ROW_SUM_TOLERANCE,
                                            check=check)
                with monkeypatch.context() as patch:
                    patch.setattr(compiled, "top_label_bin_sums", None)
                    twin = top_label_bin_sums(matrix, labels, upper, right=right, tolerance=ROW_SUM_TOLERANCE,
                                              check=check)
                assert (kernel is None) == (twin is None) == (matrix is bad)
                if kernel is not None:
                    for a, b in zip(kernel, twin):
                        np.testing.assert_array_equal(a, b)


def test_float32_ece_allocates_no_per_row_arrays():
    """Issue 29: the float32 ECE allocated (N,) float64 arrays (confidence, correctness, bins: 80 % of a
    200,000 x 10 float32 input); the compiled fused pass allocates only its per-bin sums (target: 10 %).
    (numpy's half keeps the (N,) confidences and is not held to it.)"""
    from tests.compiled_support import require_kernel
    require_kernel("top_label_bin_sums")
    probs, labels = _predictions(200_000, 10, np.float32)
    cc.ece(probs, labels)  # compiled (or loaded from numba's cache) before the memory is traced
    tracemalloc.start()
    try:
        cc.ece(probs, labels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 0.10 * probs.nbytes, peak / probs.nbytes


def test_ties_across_the_kernels_lanes_go_to_the_lowest_index(numba_path):
    """Every pair of tied maxima in rows of 9 and 13 columns (the compiled kernel reads columns in four lanes
    and a tail): each row's label is its lowest maximal index, as np.argmax, so every row is correct."""
    for n_classes in (9, 13):
        pairs = [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]
        probs = np.full((len(pairs), n_classes), 0.2 / (n_classes - 2))
        for row, (a, b) in enumerate(pairs):
            probs[row, [a, b]] = 0.4
        labels = np.array([a for a, _ in pairs])
        count, _, sum_target = top_label_bin_sums(probs, labels, np.linspace(0.0, 1.0, 11)[1:], right=True,
                                                  tolerance=ROW_SUM_TOLERANCE, check=True)
        assert sum_target.sum() == count.sum() == len(pairs)
