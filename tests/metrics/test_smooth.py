"""Tests for calib_core.metrics.smooth: smooth ECE, its fixed-point bandwidth and the smoothed reliability curve."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

import calib_core as cc
from calib_core import CalibrationInputError
from calib_core.metrics import smooth
from calib_core.metrics.smooth import smooth_ece, smooth_reliability_curve
from tests.compiled_support import require_kernel


def tempered(n, temperature, seed, k=4):
    """Logits whose softmax is the true distribution; predictions at another temperature."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(0, k - 1)
    probs = np.exp(logits / temperature) / np.exp(logits / temperature).sum(axis=1, keepdims=True)
    return probs, labels


def top(probs, labels):
    probs = np.asarray(probs)
    return probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)


def reflected_kernel(t, s, sigma, images=6):
    """Gaussian kernel reflected at 0 and 1 by the method of images, for an array of centres s."""
    shifts = 2.0 * np.arange(-images, images + 1)[:, None]
    return (norm.pdf(t - s[None, :] - shifts, scale=sigma) + norm.pdf(t + s[None, :] - shifts, scale=sigma)).sum(axis=0)


def direct_smece(confidence, correct, sigma):
    """Numerical integration of |(1/n) sum_i K(t, f_i) (y_i - f_i)| over [0, 1]."""
    residual = correct - confidence

    def integrand(t):
        return abs(np.mean(reflected_kernel(t, confidence, sigma) * residual))

    breaks = np.unique(np.clip(confidence, 0, 1))
    return integrate.quad(integrand, 0, 1, points=breaks[(breaks > 0) & (breaks < 1)], limit=400)[0]


def test_smece_with_residuals_of_one_sign_is_the_mean_absolute_residual():
    probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    labels = [1, 1, 0, 0]  # all wrong: residuals -0.9, -0.8, -0.7, -0.6
    for sigma in (0.01, 0.1, 0.7):
        assert smooth_ece(probs, labels, bandwidth=sigma, method="exact") == pytest.approx(0.75, rel=1e-6)
    # relplot truncates its kernel at distance 1/2; since 1.0.2 it divides by the summed
    # density, which cancels the lost mass; 1.0.1 divided by the grid size and lost it.
    for sigma in (0.05, 0.3, 0.7):
        assert smooth_ece(probs, labels, bandwidth=sigma) == pytest.approx(0.75, rel=2e-3)
    assert smooth_ece(probs, labels, bandwidth=0.05, method="relplot_1.0.1") == pytest.approx(0.75, rel=2e-3)
    assert smooth_ece(probs, labels, bandwidth=0.7, method="relplot_1.0.1") < 0.75 * 0.9


@pytest.mark.parametrize("sigma", [0.03, 0.1, 0.4])
def test_exact_smece_matches_numerical_integration(sigma):
    probs, labels = tempered(40, 1.8, seed=1)
    confidence, correct = top(probs, labels)
    expected = direct_smece(confidence, correct, sigma)
    assert smooth_ece(probs, labels, bandwidth=sigma, method="exact") == pytest.approx(expected, rel=2e-4)


def test_relplot_discretisation_is_close_to_exact_for_narrow_kernels():
    probs, labels = tempered(3000, 1.5, seed=2)
    exact = smooth_ece(probs, labels, bandwidth=0.05, method="exact")
    assert smooth_ece(probs, labels, bandwidth=0.05) == pytest.approx(exact, rel=5e-3)


@pytest.mark.parametrize("method", ["relplot", "relplot_1.0.1", "exact"])
def test_automatic_bandwidth_is_the_fixed_point(method):
    probs, labels = tempered(2000, 2.0, seed=3)
    curve = smooth_reliability_curve(probs, labels, n_boot=0, method=method)
    sigma = curve.bandwidth
    assert curve.smece == pytest.approx(smooth_ece(probs, labels, method=method))
    # bisection over [0, 1] in 10 halvings: sigma is a multiple of 1/1024 with
    # smECE(sigma) <= sigma and smECE(sigma - 1/1024) > sigma - 1/1024
    assert sigma * 1024 == pytest.approx(round(sigma * 1024))
    assert smooth_ece(probs, labels, bandwidth=sigma, method=method) <= sigma
    below = sigma - 1 / 1024
    assert smooth_ece(probs, labels, bandwidth=below, method=method) > below


def test_smece_is_small_for_calibrated_and_large_for_miscalibrated_predictions():
    calibrated = smooth_ece(*tempered(20_000, 1.0, seed=4))
    overconfident = smooth_ece(*tempered(20_000, 0.4, seed=4))
    assert calibrated < 0.02
    assert overconfident > 0.1


def test_curve_density_and_area_encode_the_smece():
    probs, labels = tempered(5000, 1.6, seed=5)
    curve = smooth_reliability_curve(probs, labels, n_boot=0, method="exact", n_mesh=2001)
    assert np.trapezoid(curve.density, curve.mesh) == pytest.approx(1.0, abs=1e-6)
    area = np.trapezoid(np.abs(curve.accuracy - curve.mesh) * curve.density, curve.mesh)
    assert area == pytest.approx(curve.smece, rel=1e-3)
    assert np.all(np.isnan(curve.lower)) and np.all(np.isnan(curve.upper))
    # underconfident predictions (temperature > 1): accuracy above confidence where the mass is
    heavy = curve.density > 0.5
    assert np.mean(curve.accuracy[heavy] > curve.mesh[heavy]) > 0.8


def test_bootstrap_band_is_reproducible_and_covers_the_curve():
    probs, labels = tempered(1500, 1.0, seed=6)
    first = smooth_reliability_curve(probs, labels, n_boot=60, seed=11)
    second = smooth_reliability_curve(probs, labels, n_boot=60, seed=11)
    np.testing.assert_array_equal(first.lower, second.lower)
    assert np.all(first.lower <= first.upper)
    heavy = first.density > 0.3
    inside = (first.lower[heavy] <= first.accuracy[heavy]) & (first.accuracy[heavy] <= first.upper[heavy])
    assert inside.mean() > 0.9
    other = smooth_reliability_curve(probs, labels, n_boot=60, seed=12)
    assert not np.array_equal(first.lower, other.lower)


def test_validation_errors():
    probs, labels = tempered(20, 1.0, seed=0)
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        smooth_ece(probs, labels, bandwidth=0.0)
    with pytest.raises(CalibrationInputError, match="at least 0.0001"):
        smooth_reliability_curve(probs, labels, bandwidth=1e-6)
    with pytest.raises(CalibrationInputError, match="method"):
        smooth_ece(probs, labels, method="fast")
    with pytest.raises(CalibrationInputError, match="n_mesh"):
        smooth_reliability_curve(probs, labels, n_mesh=1)
    with pytest.raises(CalibrationInputError, match="n_boot"):
        smooth_reliability_curve(probs, labels, n_boot=-1)
    with pytest.raises(CalibrationInputError, match="alpha"):
        smooth_reliability_curve(probs, labels, alpha=1.5)
    with pytest.raises(CalibrationInputError, match="labels"):
        smooth_ece(probs, np.full(20, 9))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60),
       method=st.sampled_from(["relplot", "relplot_1.0.1", "exact"]))
def test_permutation_invariance_and_range(seed, n, method):
    probs, labels = tempered(n, 0.7, seed=seed, k=3)
    order = np.random.default_rng(seed).permutation(n)
    value = smooth_ece(probs, labels, method=method)
    assert 0.0 <= value <= 1.0
    assert smooth_ece(probs[order], labels[order], method=method) == pytest.approx(value, rel=1e-9, abs=1e-12)


# --- relplot 1.0.3 (issue 11, item 8) -------------------------------------------------------------

def relplot_103_smooth_ece(f, y, sigma):
    """A line-by-line numpy transcription of relplot 1.0.3's ``metrics.smooth_ece`` (no FFT)."""
    t = np.linspace(0, 1, max(round(10 / sigma), 200))

    def apply(weights):
        points = max(2000, round(20 / sigma)) // 2 + 1
        values = np.zeros(points)  # kernels.smooth_round_to_grid
        bins = (f * (points - 1)).astype(int).clip(0, points - 2)
        frac = f * (points - 1) - bins
        np.add.at(values, bins, (1 - frac) * weights)
        np.add.at(values, bins + 1, frac * weights)
        grid = np.linspace(0, 1, points)  # ReflectedGaussianKernel.convolve
        ker = np.exp(-(grid - 0.5) * (grid - 0.5) / (2 * sigma ** 2)) / (np.sqrt(2 * np.pi) * sigma)
        ext = np.concatenate([np.flip(values)[:-1], values, np.flip(values)[1:]])
        smoothed = np.convolve(ext, ker, "valid")[points // 2: points // 2 + points]
        inds = (t * (points - 1)).astype(int).clip(0, points - 2)  # kernels.interpolate
        residual = (t - inds / (points - 1)) * (points - 1)
        return smoothed[inds] * (1 - residual) + smoothed[inds + 1] * residual

    dens = apply(np.ones_like(y)) + 0.0001
    rs = apply(f - y) / dens
    return np.sum(np.abs(rs) * dens) / np.sum(dens)


def relplot_103_smece(f, y):
    """relplot 1.0.3's ``smECE``: ``search_param`` over ``alpha < 0.001 or alpha < smooth_ece(alpha)``."""
    def too_small(alpha):
        return alpha < 0.001 or alpha < relplot_103_smooth_ece(f, y, alpha)

    if too_small(1):
        return relplot_103_smooth_ece(f, y, 1)
    start, end = 1, 0
    for _ in range(10):
        midpoint = (start + end) / 2
        if too_small(midpoint):
            end = midpoint
        else:
            start = midpoint
    return relplot_103_smooth_ece(f, y, start)


CASES = [(500, 7, 0.5, 0), (2000, 3, 1.0, 1), (50, 2, 0.3, 2), (3000, 10, 2.0, 3), (15, 4, 1.0, 4)]


@pytest.mark.parametrize("n, k, temperature, seed", CASES)
def test_default_equals_a_transcription_of_relplot_103(n, k, temperature, seed):
    probs, labels = tempered(n, temperature, seed=seed, k=k)
    f, y = top(probs, labels)
    assert smooth_ece(probs, labels) == pytest.approx(relplot_103_smece(f, y), rel=1e-12, abs=1e-15)
    for sigma in (0.003, 0.05, 0.4):
        assert smooth_ece(probs, labels, bandwidth=sigma) == pytest.approx(
            relplot_103_smooth_ece(f, y, sigma), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n, k, temperature, seed", CASES)
def test_default_equals_relplot_103(n, k, temperature, seed):
    relplot = pytest.importorskip("relplot")  # requirements-dev.txt pins relplot==1.0.3
    assert relplot.metrics.config.smECE_mesh_pts == 200 and not relplot.metrics.config.use_logit_scaling
    probs, labels = tempered(n, temperature, seed=seed, k=k)
    f, y = relplot.multiclass_logits_to_confidences(probs, labels, probs=True)
    assert smooth_ece(probs, labels) == pytest.approx(relplot.smECE(f, y), rel=1e-12, abs=1e-15)
    assert smooth_ece(probs, labels, bandwidth=0.02) == pytest.approx(relplot.smECE_sigma(f, y, 0.02),
                                                                        rel=1e-12, abs=1e-15)
    curve = smooth_reliability_curve(probs, labels, n_boot=0)
    assert curve.bandwidth == relplot.smECE(f, y, return_width=True)[1]


def test_old_relplot_rule_is_kept_as_an_explicit_option_and_is_lower_when_miscalibrated():
    """relplot 1.0.1 divided by the grid size: lower than 1.0.3 for a strongly miscalibrated 7-class model."""
    probs, labels = tempered(3000, 0.3, seed=8, k=7)
    f, y = top(probs, labels)
    current = smooth_ece(probs, labels)
    old = smooth_ece(probs, labels, method="relplot_1.0.1")
    assert current == pytest.approx(relplot_103_smece(f, y), rel=1e-12)
    assert old < current - 0.005


def test_compiled_spread_gives_numpys_linear_binning_bit_for_bit(monkeypatch):
    """Issue 15: the smooth ECE's interval spread 50,000 masses about 2,400 times (1.4 s at 200 resamples); the
    optional kernel reads each value once, summing the left and right shares apart as numpy's two bincounts."""
    from calib_core._accel import compiled as _compiled
    require_kernel("spread")
    rng = np.random.default_rng(0)
    values = rng.random(5000)
    values[:4] = [0.0, 1.0, 0.5, 0.25]  # on grid points and at both ends
    weights = rng.normal(size=(2, 5000))
    for size in (2, 3, 101, 1001):
        compiled = (smooth.spread(values, weights, size), smooth.spread(values, weights[0], size))
        with monkeypatch.context() as patch:
            patch.setattr(_compiled, "spread", None)
            np.testing.assert_array_equal(compiled[0], smooth.spread(values, weights, size))
            np.testing.assert_array_equal(compiled[1], smooth.spread(values, weights[0], size))


def test_the_bandwidth_search_spreads_the_masses_once_per_grid_size(monkeypatch):
    """Issue 15: relplot's grid has 1,001 points for every sigma >= 0.01, so the dozen evaluations of the
    bandwidth search share one spread of the masses (the same estimate)."""
    rng = np.random.default_rng(1)
    probs = cc.softmax(rng.normal(size=(3000, 4)) * 2)
    labels = rng.integers(0, 4, 3000)
    expected = cc.smooth_ece(probs, labels)
    sizes = []
    spread = smooth.spread
    monkeypatch.setattr(smooth, "spread", lambda values, weights, size: sizes.append(size) or spread(values, weights,
                                                                                                       size))
    assert cc.smooth_ece(probs, labels) == expected
    assert sizes == [1001]


@pytest.mark.parametrize("size, sigma", [(1001, 0.3), (1001, 0.011), (2501, 0.004), (200, 0.05)])
def test_relplot_convolution_equals_scipy_fftconvolve_bit_for_bit(size, sigma):
    """Issue 29: the convolution takes the masses' spectrum once per bandwidth search and keeps the kernel's; it
    is the same FFTs, product and slice as scipy.signal.fftconvolve(mode="valid"), so the same numbers."""
    from scipy.signal import fftconvolve
    grid = np.random.default_rng(size).random((2, size))
    mesh = np.linspace(0.0, 1.0, size)
    kernel = np.exp(-(mesh - 0.5) * (mesh - 0.5) / (2.0 * sigma ** 2)) / (np.sqrt(2.0 * np.pi) * sigma)
    for masses in (grid, grid[0]):
        flipped = masses[..., ::-1]
        extended = np.concatenate([flipped[..., :-1], masses, flipped[..., 1:]], axis=-1)
        expected = fftconvolve(extended, kernel.reshape((1,) * (masses.ndim - 1) + (size,)), mode="valid",
                               axes=-1)[..., size // 2: size // 2 + size]
        np.testing.assert_array_equal(smooth._relplot_convolve(masses, sigma), expected)
        np.testing.assert_array_equal(smooth._relplot_convolve(masses, sigma, smooth._relplot_spectrum(masses)),
                                      expected)


def test_bandwidth_search_takes_the_data_fft_once(monkeypatch):
    """Issue 29: each of the dozen bandwidths of the fixed-point search ran a whole fftconvolve (three FFTs) of
    the same masses (38 % of the smooth ECE interval in ``report --html``); the masses' FFT is now taken once per
    search and each bandwidth's kernel spectrum is kept, so a search whose bandwidths were met before (as a
    bootstrap's resamples meet the same first halvings) takes one forward FFT."""
    import scipy.fft
    calls = []
    forward = scipy.fft.rfftn

    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)

    probs, labels = tempered(400, 2.0, seed=3)
    expected = smooth_ece(probs, labels)  # its bandwidths' kernel spectra are kept
    monkeypatch.setattr(scipy.fft, "rfftn", counted)
    assert smooth_ece(probs, labels) == expected
    assert len(calls) == 1
