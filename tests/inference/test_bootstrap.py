"""Tests for calib_core.inference.bootstrap."""
import functools

import numpy as np
import pytest

import calib_core as cc
from tests.compiled_support import kernel_paths, require_kernel
from calib_core import CalibrationInputError


def calibrated_binary(n, seed):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n)
    return cc.as_probs(scores), (rng.uniform(size=n) < scores).astype(int)


def test_interval_contains_estimate_and_is_reproducible():
    probs, labels = calibrated_binary(2000, 0)
    first = cc.bootstrap_ci(cc.ece, probs, labels, n_boot=200, seed=3)
    second = cc.bootstrap_ci(cc.ece, probs, labels, n_boot=200, seed=3)
    assert first.low <= first.estimate <= first.high
    assert first.estimate == cc.ece(probs, labels)
    np.testing.assert_array_equal(first.samples, second.samples)
    assert first.samples.shape == (200,)


def test_interval_width_shrinks_like_one_over_sqrt_n():
    small = cc.bootstrap_ci(cc.brier_score, *calibrated_binary(500, 1), n_boot=300, seed=0)
    large = cc.bootstrap_ci(cc.brier_score, *calibrated_binary(8000, 1), n_boot=300, seed=0)
    ratio = (small.high - small.low) / (large.high - large.low)
    assert 2.5 < ratio < 6.5  # sqrt(16) = 4


def test_accuracy_interval_covers_normal_approximation():
    probs, labels = calibrated_binary(4000, 2)
    result = cc.bootstrap_ci(cc.accuracy, probs, labels, n_boot=400, seed=1)
    acc = result.estimate
    assert result.std == pytest.approx(np.sqrt(acc * (1 - acc) / 4000), rel=0.2)


def test_works_with_partial_metrics_and_reports_progress():
    probs, labels = calibrated_binary(300, 3)
    calls = []
    cc.bootstrap_ci(functools.partial(cc.ece, n_bins=5), probs, labels, n_boot=10, seed=0,
                    on_progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (10, 10)


@pytest.mark.parametrize("kwargs, match", [({"n_boot": 1}, "n_boot"), ({"alpha": 1.5}, "alpha")])
def test_option_errors(kwargs, match):
    with pytest.raises(CalibrationInputError, match=match):
        cc.bootstrap_ci(cc.ece, [[0.5, 0.5]], [0], **kwargs)


# ----------------------------------------------------------------------------- shared-work engine (issue 15)

from calib_core.inference import resample  # noqa: E402
from calib_core.inference.bootstrap import bootstrap_metrics  # noqa: E402

P = functools.partial
S = resample.BinnedSpec
metric_function = cc.metrics.registry.metric_function
#: Each binned case of the engine: its BinnedSpec and the public call it reproduces (issue 24: the engine reads
#: specs declared by the registry; these cases also cover settings the registry does not use, e.g. ``right``).
SUPPORTED = {
    "ece": (S("top_label", 15, "uniform"), cc.ece),
    "ece_right_false": (S("top_label", 4, "uniform", right=False), P(cc.ece, n_bins=4, right=False)),
    "rmsce": (S("top_label", 15, "uniform", "l2"), P(cc.ece, norm="l2")),
    "mce": (S("top_label", 15, "uniform", "max"), cc.mce),
    "ece_adaptive": (S("top_label", 15, "adaptive"), P(cc.ece, binning="adaptive")),
    "rmsce_adaptive": (S("top_label", 7, "adaptive", "l2"), P(cc.ece, n_bins=7, binning="adaptive", norm="l2")),
    "mce_adaptive_many_bins": (S("top_label", 60, "adaptive", "max"), P(cc.mce, n_bins=60, binning="adaptive")),
    "classwise_ece": (S("classwise", 15, "uniform"), cc.classwise_ece),
    "classwise_ece_l2_right_false": (S("classwise", 5, "uniform", "l2", right=False),
                                     P(cc.classwise_ece, n_bins=5, norm="l2", right=False)),
    "classwise_ece_adaptive_max": (S("classwise", 15, "adaptive", "max"),
                                   P(cc.classwise_ece, binning="adaptive", norm="max")),
    "sce": (S("classwise", 15, "uniform"), cc.sce),
    "sce_right_false": (S("classwise", 10, "uniform", right=False), P(cc.sce, n_bins=10, right=False)),
    "ace": (S("adaptive_mean", 15, "adaptive"), cc.ace),
    "ace_many_bins": (S("adaptive_mean", 80, "adaptive"), P(cc.ace, n_bins=80)),
    "tace": (S("adaptive_mean", 15, "adaptive", threshold=0.01), cc.tace),
    "tace_high_threshold": (S("adaptive_mean", 4, "adaptive", threshold=0.6), P(cc.tace, n_bins=4, threshold=0.6)),
}


def engine(cases, probs, labels, indices):
    """The engine's values ``(len(cases), R)`` of the ``(spec, metric)`` cases on the resamples ``indices``."""
    return resample.resampled_binned_values(resample.BinnedResampler(probs, labels), [spec for spec, _ in cases],
                                            indices)


def materialised(cases, probs, labels, indices):
    return np.array([[metric(probs[rows], labels[rows]) for rows in indices] for _, metric in cases])


def tied_predictions(n, k, seed, decimals=1):
    """Probabilities on a coarse grid (many ties, values on uniform bin edges), renormalised."""
    rng = np.random.default_rng(seed)
    probs = np.round(rng.dirichlet(np.full(k, 0.6), size=n), decimals)
    probs[probs.sum(axis=1) == 0, 0] = 1.0
    probs /= probs.sum(axis=1, keepdims=True)
    return probs, rng.integers(0, k, size=n)


adaptive_path = kernel_paths("adaptive_bin_sums", "adaptive_path")


@pytest.mark.parametrize("name", sorted(SUPPORTED))
@pytest.mark.parametrize("n, k, decimals", [(37, 3, 1), (250, 4, 1), (400, 5, 3)])
def test_engine_equals_metric_on_materialised_resamples(monkeypatch, name, n, k, decimals, adaptive_path):
    # Small pieces and blocks, so the chunk gathers and weight blocks are split.
    monkeypatch.setattr(resample, "_PAIRS", 7)
    monkeypatch.setattr(resample, "MAX_WEIGHT_BLOCK", 3 * n)
    probs, labels = tied_predictions(n, k, seed=n + k)
    indices = np.random.default_rng(1).integers(0, n, size=(25, n))
    cases = [SUPPORTED[name]]
    np.testing.assert_allclose(engine(cases, probs, labels, indices), materialised(cases, probs, labels, indices),
                               rtol=1e-12, atol=1e-13)


def test_engine_adaptive_bins_with_heavy_ties_and_empty_thresholded_sets(adaptive_path):
    # Two distinct values per column: most adaptive runs collapse onto a tie; with
    # threshold 0.5 some resamples keep nothing in a class.
    rng = np.random.default_rng(4)
    probs = cc.as_probs(rng.choice([0.3, 0.7], size=60))
    labels = rng.integers(0, 2, size=60)
    indices = rng.integers(0, 60, size=(40, 60))
    indices[0] = 0  # one resample of a single repeated row
    cases = [SUPPORTED["ece_adaptive"], SUPPORTED["ace"],
             *((S("adaptive_mean", 15, "adaptive", threshold=t), P(cc.tace, threshold=t)) for t in (0.5, 0.99))]
    np.testing.assert_allclose(engine(cases, probs, labels, indices), materialised(cases, probs, labels, indices),
                               rtol=1e-12, atol=1e-13)


def test_compiled_adaptive_walk_gives_the_numpy_class_wise_adaptive_samples(monkeypatch):
    """Issue 15: the ACE and TACE intervals at 50,000 x 1,000 took 7.7 s each (40 resamples): each resample's
    weights were gathered along every sorted column, summed per chunk and searched. The kernel walks each
    column once per resample; the same bins, sums that differ only in the order of the additions."""
    from calib_core._accel import compiled as _compiled
    require_kernel("adaptive_bin_sums")
    probs, labels = tied_predictions(500, 40, seed=2, decimals=3)
    probs[:5] = np.eye(40)[:5]  # values 0 and 1 in every column
    cases = [SUPPORTED["ace"], (S("adaptive_mean", 15, "adaptive", threshold=0.2), None),
             (S("classwise", 15, "adaptive", "l2"), None),
             (S("adaptive_mean", 300, "adaptive"), None)]  # more bins than most resamples' kept values
    draws = np.random.default_rng(5).integers(0, 500, size=(30, 500))
    compiled = engine(cases, probs, labels, draws)
    with monkeypatch.context() as patch:
        patch.setattr(_compiled, "adaptive_bin_sums", None)
        np.testing.assert_allclose(compiled, engine(cases, probs, labels, draws), rtol=1e-12, atol=1e-15)
    assert cc.bootstrap_ci(cc.ace, probs, labels, n_boot=5, seed=5).samples.shape == (5,)
    # int64 weights (a row drawn more than 127 times), as row_weights stores them then
    indices = np.zeros((3, 200), dtype=np.int64)
    indices[:, 100:] = np.arange(100)
    got = engine([SUPPORTED["ace"]], probs[:200], labels[:200], indices)[0]
    np.testing.assert_allclose(got, [cc.ace(probs[rows], labels[rows]) for rows in indices], rtol=1e-12)


def test_compiled_adaptive_walk_over_blocks_of_columns_on_two_threads(monkeypatch):
    """Issue 15: the blocks of class columns are walked on two threads (25,000 x 1,000: 3.7 s -> 2.2 s per 200
    resamples of every metric); the same samples as one thread, bit for bit, in column order."""
    from calib_core._accel import threads
    require_kernel("adaptive_bin_sums")
    probs, labels = tied_predictions(400, 30, seed=3, decimals=3)
    monkeypatch.setattr(resample, "_COLUMN_BLOCK", 400 * 7)  # five blocks of columns
    cases = [SUPPORTED["ace"], (S("adaptive_mean", 15, "adaptive", threshold=0.05), None)]
    draws = np.random.default_rng(4).integers(0, 400, size=(25, 400))
    samples = {}
    for workers in (2, 1):
        monkeypatch.setattr(threads, "WORKERS", workers)
        samples[workers] = engine(cases, probs, labels, draws)
    np.testing.assert_array_equal(samples[2], samples[1])


@pytest.mark.parametrize("metric", [cc.ece, metric_function("rmsce", n_bins=7, binning="adaptive"),
                                    metric_function("sce", n_bins=10), cc.ace, metric_function("tace"),
                                    metric_function("classwise_ece", n_bins=9, binning="adaptive")])
def test_bootstrap_ci_fast_path_gives_the_generic_interval(metric):
    assert resample.binned_spec(metric) is not None
    probs, labels = tied_predictions(300, 4, seed=9, decimals=2)
    fast = cc.bootstrap_ci(metric, probs, labels, n_boot=60, seed=11)
    generic = cc.bootstrap_ci(lambda p, y: metric(p, y), probs, labels, n_boot=60, seed=11)
    assert resample.binned_spec(lambda p, y: metric(p, y)) is None
    assert fast.estimate == generic.estimate
    np.testing.assert_allclose(fast.samples, generic.samples, rtol=1e-12, atol=1e-13)
    assert fast.low == pytest.approx(generic.low, abs=1e-12)
    assert fast.high == pytest.approx(generic.high, abs=1e-12)


def test_resamples_are_one_draw_whatever_the_block_size(monkeypatch):
    # The resamples of every path are the rows of one rng.integers(0, N, (n_boot, N)) call,
    # as before the engine, even when drawn in blocks of an odd number of indices.
    monkeypatch.setattr(resample, "MAX_INDEX_BLOCK", 3 * 101)
    probs, labels = tied_predictions(101, 3, seed=2, decimals=3)
    all_rows = np.random.default_rng(7).integers(0, 101, size=(20, 101))
    expected = [cc.ece(probs[rows], labels[rows]) for rows in all_rows]
    generic = cc.bootstrap_ci(lambda p, y: cc.ece(p, y), probs, labels, n_boot=20, seed=7)
    fast = cc.bootstrap_ci(cc.ece, probs, labels, n_boot=20, seed=7)
    np.testing.assert_array_equal(generic.samples, expected)
    np.testing.assert_allclose(fast.samples, expected, rtol=1e-12, atol=1e-13)


def test_bootstrap_metrics_shares_the_resamples_of_bootstrap_ci():
    probs, labels = tied_predictions(200, 3, seed=5, decimals=2)
    metrics = {"ece": cc.ece, "ace": cc.ace, "brier": cc.brier_score, "tace": P(cc.tace, threshold=0.05)}
    progress = []
    together = bootstrap_metrics(metrics, probs, labels, n_boot=30, seed=3,
                                 on_progress=lambda done, total: progress.append((done, total)))
    assert list(together) == list(metrics)
    assert progress[-1] == (30, 30)
    for name, metric in metrics.items():
        alone = cc.bootstrap_ci(metric, probs, labels, n_boot=30, seed=3)
        assert together[name].estimate == alone.estimate
        np.testing.assert_allclose(together[name].samples, alone.samples, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("metric", [
    P(cc.ece, n_bins=0),
    P(cc.ece, n_bins=20, right=False),  # a setting no declaration has: called on each materialised resample
    P(cc.ace, per_class=True),
    lambda p, y: cc.ece(p, y),
    cc.brier_score,  # declared, but not binned
])
def test_binned_spec_is_read_from_declarations_only(metric):
    assert resample.binned_spec(metric) is None


def test_binned_spec_reads_the_registry_declaration_and_settings():
    assert resample.binned_spec(metric_function("classwise_ece", n_bins=12, binning="adaptive")) == S(
        "classwise", 12, "adaptive", "l1", True, None)
    assert resample.binned_spec(metric_function("rmsce")).norm == "l2"
    assert resample.binned_spec(metric_function("mce")).norm == "max"
    assert resample.binned_spec(cc.tace).threshold == 0.01
    assert resample.binned_spec(metric_function("sce", binning="adaptive")).binning == "uniform"  # its fixed bins


def test_invalid_binned_settings_still_raise():
    with pytest.raises(CalibrationInputError, match="n_bins"):
        cc.bootstrap_ci(P(cc.ece, n_bins=0), [[0.5, 0.5], [0.2, 0.8]], [0, 1], n_boot=5)
    with pytest.raises(CalibrationInputError, match="n_bins"):
        metric_function("ece", n_bins=0)


def test_engine_counts_above_int8_take_the_wide_path():
    # A resample drawing one row 300 times: the weights no longer fit int8.
    probs, labels = tied_predictions(300, 3, seed=8, decimals=2)
    indices = np.random.default_rng(0).integers(0, 300, size=(4, 300))
    indices[1] = 5
    assert resample.row_weights(indices, 300).dtype == np.int64
    cases = [SUPPORTED["ace"], SUPPORTED["ece_adaptive"], SUPPORTED["sce"]]
    np.testing.assert_allclose(engine(cases, probs, labels, indices), materialised(cases, probs, labels, indices),
                               rtol=1e-12, atol=1e-13)


entry_path = kernel_paths("entry_sums", "entry_path")


@pytest.mark.parametrize("n_rows, n_classes", [(400, 2), (900, 3), (600, 60), (300, 400)])
@pytest.mark.parametrize("sparse", [True, False])
def test_classwise_uniform_resamples_from_column_totals_equal_the_materialised_resamples(n_rows, n_classes, sparse,
                                                                                       monkeypatch, entry_path):
    """Issue 15: class-wise metrics with uniform bins take each class's first bin as its column total minus its
    other bins (W @ probs, and bincounts over the entries of at least 1/B), with no sort and no pass per column."""
    from calib_core.inference.resample import BinnedResampler
    # Both paths, whichever the engine would choose for this shape (it takes the totals with many classes).
    monkeypatch.setattr(BinnedResampler, "_few_upper_entries", lambda self, spec: sparse)
    rng = np.random.default_rng(n_classes)
    logits = rng.normal(size=(n_rows, n_classes)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    probs[:20] = np.eye(n_classes)[rng.integers(0, n_classes, 20)]  # values on the edges 0 and 1
    labels = rng.integers(0, n_classes, n_rows)
    indices = rng.integers(0, n_rows, size=(9, n_rows))
    cases = [SUPPORTED["sce"], (S("classwise", 7, "uniform", "l2", right=False),
                                P(cc.classwise_ece, n_bins=7, right=False, norm="l2")),
             (S("classwise", 15, "uniform", "max"), P(cc.classwise_ece, norm="max"))]
    np.testing.assert_allclose(engine(cases, probs, labels, indices), materialised(cases, probs, labels, indices),
                               rtol=1e-12, atol=1e-15)


def test_class_columns_built_per_block_when_too_many_to_keep_give_the_same_values(monkeypatch):
    """Issue 15: at 50,000 x 1,000 the sorted class columns would hold 3.6 GB; above MAX_KEPT_CELLS each block
    builds and drops them. Same values as keeping them (and as the materialised resamples)."""
    from calib_core.inference import resample
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.full(6, 0.4), size=500)
    labels = rng.integers(0, 6, 500)
    cases = [SUPPORTED["ace"], SUPPORTED["tace"],
             (S("classwise", 6, "adaptive"), functools.partial(cc.classwise_ece, binning="adaptive", n_bins=6))]
    indices = rng.integers(0, 500, size=(5, 500))
    specs = [spec for spec, _ in cases]
    keep = resample.resampled_binned_values(resample.BinnedResampler(probs, labels), specs, indices)
    monkeypatch.setattr(resample, "MAX_KEPT_CELLS", 0)
    streamed = resample.BinnedResampler(probs, labels)
    np.testing.assert_array_equal(resample.resampled_binned_values(streamed, specs, indices), keep)
    assert "classwise" not in vars(streamed) and not streamed._sorted_blocks  # nothing kept
    np.testing.assert_allclose(keep, materialised(cases, probs, labels, indices), rtol=1e-12, atol=1e-15)


def test_class_wise_uniform_bins_take_the_entry_sums_at_ten_classes_only_when_compiled(monkeypatch):
    """Issue 15: with the compiled entry sums the sparse path is twice as fast as the per-column sums at
    50,000 x 10 (a third of the entries outside the first bin); numpy's bincounts only pay with many classes."""
    from calib_core._accel.sums import COMPILED_ENTRY_SHARE, NUMPY_ENTRY_SHARE
    from calib_core.inference import resample
    from calib_core._accel import compiled as _compiled
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.full(10, 0.5), size=400)
    labels = rng.integers(0, 10, 400)
    spec = resample.binned_spec(cc.sce)
    share = resample.BinnedResampler(probs, labels)._upper_bin_entries(15, True)[0].size / probs.size
    assert NUMPY_ENTRY_SHARE < share < COMPILED_ENTRY_SHARE
    monkeypatch.setattr(_compiled, "entry_sums", lambda *args: None)
    assert resample.BinnedResampler(probs, labels)._few_upper_entries(spec)
    monkeypatch.setattr(_compiled, "entry_sums", None)
    assert not resample.BinnedResampler(probs, labels)._few_upper_entries(spec)


def test_class_wise_adaptive_intervals_are_capped_by_rows_times_classes_and_say_so():
    """Issue 15: each resample of ACE re-bins every class column; rows x classes x resamples is capped at
    CLASSWISE_BOOT_CELLS (40 resamples at 50,000 x 1,000), never below CLASSWISE_MIN_BOOT, and the note says so."""
    from calib_core.inference.intervals import boot_cap
    registry = cc.metrics.registry
    assert boot_cap(cc.ace, 50_000, 1_000) == registry.CLASSWISE_BOOT_CELLS // 50_000_000 == 40
    assert boot_cap(cc.ace, 10**6, 1_000) == registry.CLASSWISE_MIN_BOOT
    assert boot_cap(cc.sce, 50_000, 1_000) == boot_cap(cc.ece, 50_000, 1_000) == float("inf")
    assert boot_cap(metric_function("classwise_ece", binning="adaptive"), 50_000, 1_000) == 40
    assert boot_cap(cc.ici, 100, 3, max_boot=30) == 30
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(50), size=400)
    labels = rng.integers(0, 50, 400)
    cells = 400 * 50 * 35  # room for 35 resamples
    original = registry.CLASSWISE_BOOT_CELLS
    from calib_core.inference import intervals
    try:
        intervals.CLASSWISE_BOOT_CELLS = cells
        found = cc.metric_interval("ace", probs, labels, n_boot=200, seed=0)
    finally:
        intervals.CLASSWISE_BOOT_CELLS = original
    assert found.n_boot == 35 and "35 resamples, capped from 200 for time" in found.note
    assert cc.metric_interval("ace", probs, labels, n_boot=200, seed=0).n_boot == 200


@pytest.mark.parametrize("key", ["accuracy", "brier", "nll", "calibration_upper_bound"])
def test_row_mean_metrics_resample_their_per_row_values_without_copying_the_rows(key, monkeypatch):
    """Issue 15: accuracy, Brier score and NLL resampled 200 copies of probs[rows] (400 MB each at 50,000 x
    1,000); they are means of per-row values, so a resample is values[rows].mean(): the same numbers."""
    from tests.registry_support import count_computes
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(4), size=700)
    labels = rng.integers(0, 4, 700)
    metric = metric_function(key)
    assert metric.resampling.kind == "row_mean"
    computes = count_computes(monkeypatch, [key])
    fast = cc.bootstrap_ci(metric, probs, labels, n_boot=50, seed=4)
    assert computes == [key]  # the estimate only: no resample is materialised
    slow = cc.bootstrap_ci(lambda p, y: metric(p, y), probs, labels, n_boot=50, seed=4)  # undeclared: materialised
    np.testing.assert_array_equal(fast.samples, slow.samples)
    assert (fast.low, fast.high) == (slow.low, slow.high)


def test_compiled_entry_sums_give_the_numpy_class_wise_uniform_samples_bit_for_bit(monkeypatch):
    """Issue 15: the sparse class-wise path built three (resamples x entries) float arrays and their keys per
    block (1.5 s for 200 resamples at 50,000 x 1,000); the kernel reads the integer weights (same additions)."""
    from calib_core._accel import compiled as _compiled
    require_kernel("entry_sums")
    rng = np.random.default_rng(2)
    probs = cc.softmax(rng.normal(size=(800, 300)) * 3)
    labels = rng.integers(0, 300, 800)
    compiled = cc.bootstrap_ci(cc.sce, probs, labels, n_boot=25, seed=4).samples
    cases = [(S("classwise", 9, "uniform", "l2", right=False), None)]
    draws = np.random.default_rng(4).integers(0, 800, size=(25, 800))
    compiled_engine = engine(cases, probs, labels, draws)
    with monkeypatch.context() as patch:
        patch.setattr(_compiled, "entry_sums", None)
        np.testing.assert_array_equal(compiled, cc.bootstrap_ci(cc.sce, probs, labels, n_boot=25, seed=4).samples)
        np.testing.assert_array_equal(compiled_engine, engine(cases, probs, labels, draws))


def test_counting_sort_of_the_draws_gives_the_same_top_label_samples(monkeypatch):
    """Issue 15: the KS error and MMCE intervals sorted each resample's confidences (0.7 s for 200 resamples at
    50,000 rows); the draws are now put in the stable order of their confidence by a counting sort on ranks, so
    the metric's own stable sort meets sorted data. The smooth ECE, which does not sort, gets the draws as drawn.
    Same samples, bit for bit, ties between different rows included."""
    from calib_core._accel import compiled as _compiled
    kernel = require_kernel("sorted_draws")
    rng = np.random.default_rng(6)
    keys = rng.integers(0, 9, 300)
    rows = rng.integers(0, 300, 500)
    np.testing.assert_array_equal(kernel(keys, rows, 9), rows[np.argsort(keys[rows], kind="stable")])
    probs, labels = tied_predictions(400, 4, seed=3, decimals=2)
    metrics = {"ks": cc.ks_error, "mmce": metric_function("mmce", bandwidth=0.3), "smooth": cc.smooth_ece}
    compiled = cc.bootstrap_metrics(metrics, probs, labels, n_boot=40, seed=8)
    monkeypatch.setattr(_compiled, "sorted_draws", None)
    numpy = cc.bootstrap_metrics(metrics, probs, labels, n_boot=40, seed=8)
    for name in metrics:
        np.testing.assert_array_equal(compiled[name].samples, numpy[name].samples)
    assert metrics["mmce"].resampling.sorts and cc.get_metric("ks").resampling.sorts
    assert not cc.get_metric("smooth_ece").resampling.sorts


def test_classwise_uniform_resamples_without_any_entry_outside_the_first_bin(entry_path):
    """Flat predictions over 40 classes with 15 bins: no value reaches 1/15, every class has only its first bin
    (numpy's bincount of no entries is integer-typed, which truncated the first bins' sums)."""
    from calib_core.inference.resample import BinnedResampler, binned_spec, resampled_binned_values
    probs = np.full((300, 40), 1 / 40)
    labels = np.arange(300) % 40
    indices = np.random.default_rng(0).integers(0, 300, size=(4, 300))
    fast = resampled_binned_values(BinnedResampler(probs, labels), [binned_spec(cc.sce)], indices)[0]
    np.testing.assert_allclose(fast, [cc.sce(probs[rows], labels[rows]) for rows in indices], rtol=1e-12)
    # One bin per class: |mean prediction - class frequency|, averaged over the classes.
    assert cc.sce(probs, labels) == pytest.approx(np.abs(1 / 40 - np.bincount(labels) / 300).mean(), abs=1e-15)


@pytest.mark.parametrize("metric", [cc.ks_error, metric_function("mmce", bandwidth=0.25), cc.mmce,
                                    metric_function("mmce"), metric_function("ks"), metric_function("smooth_ece"),
                                    metric_function("smooth_ece", bandwidth=0.05)])
def test_top_label_metrics_resample_confidence_and_correctness_only(metric, monkeypatch):
    """Issue 15: the KS error and MMCE copied probs[rows] per resample (400 MB at 50,000 x 1,000; 20 s for 200
    resamples) although they see only the top label: the two arrays are resampled instead, same samples (bit for
    bit; MMCE, whose resamples are counts on the sorted rows since issue 29, up to the order of the additions)."""
    declared = cc.metrics.registry.declared_metric(metric)
    assert declared.resampling.kind == "top_label"
    rng = np.random.default_rng(8)
    probs = rng.dirichlet(np.ones(5), size=600)
    labels = rng.integers(0, 5, 600)
    fast = cc.bootstrap_ci(metric, probs, labels, n_boot=40, seed=2)
    slow = cc.bootstrap_ci(lambda p, y: metric(p, y), probs, labels, n_boot=40, seed=2)  # undeclared: materialised
    if declared.resampling.of_draws is None:
        np.testing.assert_array_equal(fast.samples, slow.samples)
    else:
        np.testing.assert_allclose(fast.samples, slow.samples, rtol=1e-12, atol=0)
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        metric_function("mmce", bandwidth=-1.0)


@pytest.mark.parametrize("metric", [cc.ece, metric_function("mce", n_bins=7), metric_function("rmsce", n_bins=30)])
def test_compiled_key_sums_give_the_numpy_bootstrap_of_top_label_metrics(metric, monkeypatch):
    """Issue 15: with numba, each resample's (bin, correct) counts and confidence sums come from one pass over
    its drawn rows (the same additions in the same order as np.bincount): the same samples, bit for bit."""
    from calib_core._accel import compiled as _compiled
    require_kernel("key_sums")
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(6) * 0.5, size=3000)
    labels = rng.integers(0, 6, 3000)
    compiled = cc.bootstrap_ci(metric, probs, labels, n_boot=60, seed=1)
    monkeypatch.setattr(_compiled, "key_sums", None)
    np.testing.assert_array_equal(compiled.samples, cc.bootstrap_ci(metric, probs, labels, n_boot=60, seed=1).samples)


def test_a_partial_of_a_public_binned_metric_keeps_its_fast_declared_interval():
    """Issue 24 review: bootstrap_ci(partial(cc.ece, n_bins=10)) (the pattern docs/clinical.md shows) fell back to
    materialising every resample (0.5 s -> 5.4 s at 100,000 x 10); its bin settings are its declaration."""
    from calib_core.metrics.registry import declared_metric, metric_function

    assert declared_metric(functools.partial(cc.ece, n_bins=10)) == metric_function("ece", n_bins=10)
    assert declared_metric(functools.partial(cc.classwise_ece, n_bins=9, binning="adaptive")) == metric_function(
        "classwise_ece", n_bins=9, binning="adaptive")
    assert declared_metric(functools.partial(cc.ece, n_bins=10, right=False)) is None  # not a declared setting
    assert resample.binned_spec(functools.partial(cc.ece, n_bins=20)) == resample.binned_spec(
        metric_function("ece", n_bins=20))
    probs, labels = tied_predictions(300, 4, seed=9, decimals=2)
    fast = cc.bootstrap_ci(functools.partial(cc.ece, n_bins=10), probs, labels, n_boot=60, seed=11)
    generic = cc.bootstrap_ci(lambda p, y: cc.ece(p, y, n_bins=10), probs, labels, n_boot=60, seed=11)
    np.testing.assert_allclose(fast.samples, generic.samples, rtol=0, atol=1e-12)


def test_mmce_resamples_a_block_at_once_without_materialising_a_resample():
    """Issue 29: MMCE's interval gathered, sorted and evaluated every resample (19.5 s of the 66 s CPU of
    ``report --html`` at 12,000 x 8). A resample is now the data's sorted rows with their counts
    (:func:`calib_core.metrics.kernel.mmce_of_draws`, one call per block): the per-resample statistic is never
    called, and the samples equal it on each materialised resample up to round-off, ties and rows not drawn
    included."""
    probs, labels = tied_predictions(500, 4, seed=5, decimals=2)
    expected = cc.bootstrap_ci(lambda p, y: cc.mmce(p, y, bandwidth=0.3), probs, labels, n_boot=30, seed=4)

    def refuse(*args, **kwargs):
        raise AssertionError("the MMCE statistic was called on one resample")

    resampling = cc.get_metric("mmce").resampling
    original = resampling.statistic
    object.__setattr__(resampling, "statistic", refuse)  # a frozen declaration: restored below
    try:
        found = cc.bootstrap_ci(metric_function("mmce", bandwidth=0.3), probs, labels, n_boot=30, seed=4)
    finally:
        object.__setattr__(resampling, "statistic", original)
    np.testing.assert_allclose(found.samples, expected.samples, rtol=1e-12, atol=0)
