"""Each compiled kernel of ``calib_core._accel`` against its numpy twin (issue 24: a kernel beside its twin).

Each test calls the one public function twice on the same inputs: with the
kernel (skipped without numba, failed in CI: ``tests/compiled_support.py``)
and with the kernel set to None, so the numpy twin runs; each twin is also
checked against the plain numpy statement of the contract, so it is tested
without numba too.
"""
import numpy as np
import pytest

from calib_core import _accel
from calib_core._accel import compiled
from calib_core._accel.sweep import SortedColumns, column_bin_sums, sort_columns
from calib_core.inference.resample import _sorted_column, row_weights
from compiled_support import require_kernel


def both_paths(monkeypatch, name, call):
    """``call()`` with the compiled kernel ``name`` and then with its numpy twin."""
    require_kernel(name)
    fast = call()
    with monkeypatch.context() as patch:
        patch.setattr(compiled, name, None)
        numpy = call()
    return fast, numpy


def twin(monkeypatch, name, call):
    """``call()`` on the numpy twin only (the kernel set to None)."""
    with monkeypatch.context() as patch:
        patch.setattr(compiled, name, None)
        return call()


@pytest.fixture
def draws():
    rng = np.random.default_rng(11)
    return rng, rng.integers(0, 300, size=(7, 300))


def test_key_sums(monkeypatch, draws):
    rng, indices = draws
    keys = rng.integers(0, 9, 300).astype(np.int16)
    values = rng.random(300)
    call = lambda: _accel.key_sums(indices, keys, values, 12)  # noqa: E731 -- keys 9..11 never drawn
    counts, sums = twin(monkeypatch, "key_sums", call)
    for r, rows in enumerate(indices):
        np.testing.assert_array_equal(counts[r], np.bincount(keys[rows], minlength=12))
        np.testing.assert_array_equal(sums[r], np.bincount(keys[rows], weights=values[rows], minlength=12))
    fast, numpy = both_paths(monkeypatch, "key_sums", call)
    for a, b in zip(fast, numpy):
        np.testing.assert_array_equal(a, b)  # the same additions in the same order


@pytest.mark.parametrize("n_entries", [0, 40])
def test_entry_sums(monkeypatch, draws, n_entries):
    rng, indices = draws
    weights = row_weights(indices, 300)
    rows = rng.integers(0, 300, n_entries)
    slots = rng.integers(0, 10, n_entries)
    values, targets = rng.random(n_entries), (rng.random(n_entries) < 0.4).astype(float)
    call = lambda: _accel.entry_sums(weights, rows, slots, values, targets, 10)  # noqa: E731
    count, value, target = twin(monkeypatch, "entry_sums", call)
    assert count.dtype == np.float64 and count.shape == (7, 10)  # float also without entries
    for r in range(7):
        w = weights[r, rows].astype(float)
        np.testing.assert_array_equal(value[r], np.bincount(slots, weights=w * values, minlength=10))
        np.testing.assert_array_equal(target[r], np.bincount(slots, weights=w * targets, minlength=10))
        np.testing.assert_array_equal(count[r], np.bincount(slots, weights=w, minlength=10))
    fast, numpy = both_paths(monkeypatch, "entry_sums", call)
    for a, b in zip(fast, numpy):
        np.testing.assert_array_equal(a, b)


def test_entry_sums_pay_at_the_share_of_the_path_that_runs(monkeypatch):
    monkeypatch.setattr(compiled, "entry_sums", None)
    assert _accel.entry_sums_pay(10, 100) and not _accel.entry_sums_pay(40, 100)
    monkeypatch.setattr(compiled, "entry_sums", lambda *args: None)
    assert _accel.entry_sums_pay(40, 100) and not _accel.entry_sums_pay(80, 100)


def adaptive_reference(order, values, targets, weights_by_row, start, n_bins):
    """The adaptive bins of each resample's materialised kept values: ``np.array_split`` runs of the values above
    position ``start``, each run's end moved to the end of its ties (the contract, one resample at a time)."""
    out = np.zeros((3, weights_by_row.shape[1], n_bins))
    for r in range(weights_by_row.shape[1]):
        repeat = weights_by_row[order[start:], r]
        kept_values = np.repeat(values[start:], repeat)
        kept_targets = np.repeat(targets[start:], repeat)
        n = kept_values.size
        if n == 0:
            continue
        previous = 0
        for b in range(n_bins):
            run = b + 1
            goal = run * (n // n_bins) + min(run, n % n_bins)
            end = goal if goal == n or goal == 0 else int(np.searchsorted(kept_values, kept_values[goal - 1], "right"))
            end = max(end, previous)
            out[:, r, b] = [end - previous, kept_values[previous:end].sum(), kept_targets[previous:end].sum()]
            previous = end
    return out


@pytest.mark.parametrize("start, n_bins", [(0, 4), (0, 40), (120, 6), (299, 3)])
def test_adaptive_bin_sums(monkeypatch, draws, start, n_bins):
    rng, indices = draws
    indices = indices.copy()
    indices[0] = 0  # a resample of one repeated row (nothing kept above the larger starts)
    values = np.round(rng.random(300), 1)  # many ties
    order, sorted_values, targets, tie_end = _sorted_column(values, rng.random(300) < 0.3)
    weights = row_weights(indices, 300)
    by_row = np.ascontiguousarray(weights.T)
    totals = weights.sum(axis=1, dtype=np.int64).astype(np.float64)
    call = lambda: _accel.adaptive_bin_sums(order, sorted_values, targets, tie_end, by_row,  # noqa: E731
                                            totals, start, n_bins)
    numpy = np.array(twin(monkeypatch, "adaptive_bin_sums", call))
    np.testing.assert_allclose(numpy, adaptive_reference(order, sorted_values, targets, by_row, start, n_bins),
                               rtol=1e-12, atol=1e-12)
    fast, numpy = both_paths(monkeypatch, "adaptive_bin_sums", call)
    for a, b in zip(fast, numpy):
        np.testing.assert_array_equal(a, b)  # the same cumulative sums, in the same order


def test_sorted_draws(monkeypatch, draws):
    rng, indices = draws
    keys = rng.integers(0, 9, 300)
    call = lambda: _accel.sorted_draws(keys, indices[2], 9)  # noqa: E731
    expected = indices[2][np.argsort(keys[indices[2]], kind="stable")]
    np.testing.assert_array_equal(twin(monkeypatch, "sorted_draws", call), expected)
    fast, numpy = both_paths(monkeypatch, "sorted_draws", call)
    np.testing.assert_array_equal(fast, numpy)



def test_laplace_draw_totals(monkeypatch, draws):
    """Issue 29: MMCE's bootstrap quadratic form of count-weighted residuals on the sorted rows, kernel and twin,
    against the full kernel matrix of each materialised resample (ties included: equal scaled values)."""
    rng, indices = draws
    scaled = np.sort(np.round(rng.random(300), 2)) / 0.4
    residual = rng.random(300) - 0.5
    position = rng.permutation(300)  # row -> place in the sorted order
    call = lambda: _accel.laplace_draw_totals(scaled, residual, position, indices)  # noqa: E731
    expected = []
    for rows in indices:
        at = position[rows]
        kernel = np.exp(-np.abs(scaled[at][:, None] - scaled[at][None, :]))
        expected.append(residual[at] @ kernel @ residual[at])
    np.testing.assert_allclose(twin(monkeypatch, "laplace_draw_totals", call), expected, rtol=1e-10)
    fast, numpy = both_paths(monkeypatch, "laplace_draw_totals", call)
    np.testing.assert_allclose(fast, numpy, rtol=1e-12)

def slot_inputs(rng, n_points=6):
    """A lookup table over a 64-cell grid with ``n_points`` cut points (two of them in one cell), as the
    streaming engine's ``_Slots`` builds it: slot 2i is (P[i-1], P[i]), slot 2i+1 is {P[i]}."""
    from calib_core.engines.streaming import _Slots
    points = np.sort(np.concatenate([rng.random(n_points - 2), [0.5, 0.5 + 1e-9]]))
    collect = rng.random(2 * n_points + 1) < 0.5
    values = np.concatenate([rng.random(200), points, [0.0, 1.0]])  # values on the points, and the ends
    return points, collect, values, _Slots(points, collect)._lookup()


def slot_reference(points, collect, values, targets):
    at = np.searchsorted(points, values, side="left")
    slot = 2 * at + (points[np.minimum(at, points.size - 1)] == values)
    size = collect.size
    return (np.bincount(slot, minlength=size), np.bincount(slot, weights=values, minlength=size),
            np.bincount(slot, weights=targets, minlength=size), values[collect[slot]], targets[collect[slot]])


@pytest.mark.parametrize("by_label, threshold", [(False, -np.inf), (True, -np.inf), (True, 0.3), (False, 2.0)])
def test_slot_sums(monkeypatch, by_label, threshold):
    from calib_core.engines.streaming import _LOOKUP_CELLS
    rng = np.random.default_rng(5)
    points, collect, values, table = slot_inputs(rng)
    labels = rng.integers(0, 3, values.size)
    targets = (labels == 1).astype(float) if by_label else rng.random(values.size)

    def call():
        sums = [np.zeros(collect.size) for _ in range(3)]
        kept = np.empty(values.size), np.empty(values.size)
        n_kept = _accel.slot_sums(values, np.zeros(0) if by_label else targets, labels if by_label else
                                  np.zeros(0, dtype=np.intp), 1 if by_label else -1, threshold, table,
                                  float(_LOOKUP_CELLS), points, collect, *sums, *kept)
        return (*sums, kept[0][:n_kept], kept[1][:n_kept])

    above = values > threshold
    expected = slot_reference(points, collect, values[above], targets[above])
    for got, want in zip(twin(monkeypatch, "slot_sums", call), expected):
        np.testing.assert_array_equal(got, want)
    fast, numpy = both_paths(monkeypatch, "slot_sums", call)
    for a, b in zip(fast, numpy):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("binning", ["uniform", "adaptive"])
@pytest.mark.parametrize("threshold", [None, 0.3])
def test_sweep_reductions(monkeypatch, binning, threshold):
    rng = np.random.default_rng(2)
    values = np.round(rng.dirichlet(np.ones(5), size=80), 2).T  # (classes, rows), with ties
    columns = sort_columns(values, rng.random(values.shape) < 0.3)
    counts = (1, 3, 10, 100)
    call = lambda: _accel.sweep_reductions(columns, counts, binning, True, threshold)  # noqa: E731
    l1, gap = twin(monkeypatch, "sweep_reductions", call)
    for j, n_bins in enumerate(counts):  # each count's bins on their own
        count, sum_value, sum_target = column_bin_sums(columns, (n_bins,), binning, True, threshold)
        difference = np.abs(sum_value - sum_target)
        np.testing.assert_allclose(l1[:, j], difference.sum(axis=1), rtol=1e-13, atol=1e-15)
        nonempty = count > 0
        mean = [(d[n] / c[n]).mean() if n.any() else 0.0 for d, c, n in zip(difference, count, nonempty)]
        np.testing.assert_allclose(gap[:, j], mean, rtol=1e-13, atol=1e-15)
    fast, numpy = both_paths(monkeypatch, "sweep_reductions", call)
    for a, b in zip(fast, numpy):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_sweep_reductions_in_blocks_of_rows_and_chunks_of_counts(monkeypatch):
    """The numpy twin bounds its memory by summing a few rows and bin counts at a time: the same reductions."""
    from calib_core._accel import sweep
    rng = np.random.default_rng(4)
    columns = sort_columns(rng.random((6, 50)), rng.random((6, 50)) < 0.5)
    counts = (2, 70, 5, 30)
    monkeypatch.setattr(compiled, "sweep_reductions", None)
    whole = _accel.sweep_reductions(columns, counts, "adaptive", False, None)
    monkeypatch.setattr(sweep, "SWEEP_BLOCK_VALUES", 60)  # one row at a time, the counts in three chunks
    assert sweep.count_chunks(counts) == [slice(0, 1), slice(1, 2), slice(2, 4)]
    for a, b in zip(whole, _accel.sweep_reductions(columns, counts, "adaptive", False, None)):
        np.testing.assert_array_equal(a, b)
    assert isinstance(columns, SortedColumns)


def _loess_windows(x, span=0.75):
    """The arguments ``loess_smooth`` gives :func:`_accel.window_moments` for sorted distinct ``x`` (one fit per
    point), with weights and 0/1 outcomes."""
    n = x.size
    q = max(int(span * n), 2)
    middles = (x[: n - q] + x[q:]) / 2.0
    left = np.searchsorted(middles, x, side="left")
    radius = np.maximum(x - x[left], x[left + q - 1] - x)
    lo = np.searchsorted(x, x - radius, side="left")
    hi = np.searchsorted(x, x + radius, side="right")
    return radius, lo, hi


@pytest.mark.parametrize("n_moments", [1, 3, 5])
@pytest.mark.parametrize("shape", ["uniform", "piled at both ends", "tiny values"])
def test_window_moments_by_blocks(monkeypatch, n_moments, shape):
    """Issue 29: the compiled window moments sum whole blocks of points from their power sums (the tricube
    expanded about the centre, and about the window's ends where the weight goes to 0): the numpy twin's
    moments, up to round-off, also where most of a window's mass sits near its ends (one-vs-rest scores) and in
    windows too narrow for powers of 1 / radius."""
    rng = np.random.default_rng(n_moments)
    x = {"uniform": rng.uniform(size=3000),
         "piled at both ends": np.concatenate([rng.beta(0.05, 3, size=2500), 1 - rng.beta(0.05, 3, size=500)]),
         "tiny values": np.concatenate([rng.uniform(size=2000) * 1e-25, rng.uniform(size=1000)])}[shape]
    x = np.unique(x)
    y = (rng.uniform(size=x.size) < x).astype(float)
    w = rng.integers(0, 4, size=x.size).astype(float)  # counts, some 0 (a resample's rows)
    radius, lo, hi = _loess_windows(x)
    zero = radius == 0.0
    safe = np.where(zero, 1.0, radius)
    call = lambda: _accel.window_moments(x, safe, zero, lo, hi, x, y, w, n_moments)  # noqa: E731
    assert _accel.twins.moments_block_size(hi - lo) < (hi - lo).mean() / 4  # whole blocks are used
    fast, numpy = both_paths(monkeypatch, "window_moments", call)
    # Each moment to round-off of its scale: the sum of the absolute terms (the weights times |t|^p <= weights).
    scale = np.broadcast_to(np.abs(numpy[:, :1, :]), numpy.shape)
    error = np.abs(fast - numpy) / np.where(scale > 0, scale, 1.0)
    assert error.max() < 1e-12, error.max()


@pytest.mark.parametrize("delta", [0.0, 1e-3, 0.05, 0.5, 2.0])
@pytest.mark.parametrize("last_count", [1, 3])
def test_loess_fit_points(monkeypatch, delta, last_count):
    """The delta rule's fit points: the compiled walk gives the twin's indices, and the twin gives statsmodels'
    rule spelled out (the farthest value within delta, at least the next; the second-to-last before the last)."""
    rng = np.random.default_rng(int(delta * 100) + last_count)
    distinct = np.unique(np.concatenate([rng.uniform(size=500) ** 3, [0.3, 0.3 + 1e-3, 0.3 + 2e-3]]))
    call = lambda: _accel.loess_fit_points(distinct, last_count, delta)  # noqa: E731
    numpy = twin(monkeypatch, "fit_points", call)
    m = distinct.size
    expected = [0] if m > 2 and delta > 0 else list(range(m))
    if delta > 0:
        second_last = m - 1 if last_count >= 2 else m - 2
        while expected[-1] < m - 1:
            g = expected[-1]
            j = max(k for k in range(m) if distinct[k] <= distinct[g] + delta)
            expected.append(max(second_last if j == m - 1 else j, g + 1))
    np.testing.assert_array_equal(numpy, expected)
    if delta > 0:
        fast, numpy = both_paths(monkeypatch, "fit_points", call)
        np.testing.assert_array_equal(fast, numpy)


@pytest.mark.parametrize("bandwidth", [1e-4, 0.05, 0.4, 1e3])
def test_laplace_form(monkeypatch, bandwidth):
    """MMCE's kernel sum: the compiled running sums give the numpy twin's log-sum-exps, and the twin gives the
    double sum written out, with ties and with tiny and large bandwidths (no overflow, no NaN)."""
    rng = np.random.default_rng(int(bandwidth * 1e4) % 97)
    confidence = np.sort(np.round(rng.uniform(0.2, 1.0, size=400), 3))  # ties
    residual = (rng.uniform(size=400) < confidence) - confidence
    residual[::7] *= rng.integers(0, 3, size=residual[::7].size)  # row weights: some 0, some 2
    scaled = confidence / bandwidth
    call = lambda: _accel.laplace_form(scaled, residual)  # noqa: E731
    numpy = twin(monkeypatch, "laplace_form", call)
    written = residual @ np.exp(-np.abs(scaled[:, None] - scaled[None, :])) @ residual
    np.testing.assert_allclose(numpy, written, rtol=1e-11, atol=1e-12)
    fast, numpy = both_paths(monkeypatch, "laplace_form", call)
    np.testing.assert_allclose(fast, numpy, rtol=1e-12, atol=1e-12)
