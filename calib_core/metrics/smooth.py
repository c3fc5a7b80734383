"""Smooth ECE and the smoothed reliability curve (Blasiok & Nakkiran 2023).

The residuals ``correct - confidence`` of the top-label predictions are
smoothed with a Gaussian kernel reflected at 0 and 1; the smooth ECE is the
integral of the absolute smoothed residual, and the reliability curve is the
smoothed accuracy ``t + (smoothed residual / smoothed density)``. The
bandwidth is the fixed point ``sigma = smECE_sigma``, found by bisection as
the authors' package ``relplot`` does.

By default :func:`smooth_ece` reproduces ``relplot.smECE`` of the current
relplot release (1.0.3; the rule of every release since 1.0.2, which divides
by the summed kernel density); ``method="relplot_1.0.1"`` keeps the rule of
relplot 1.0 and 1.0.1 (divided by the number of grid points), which gives
lower values for strongly miscalibrated models (0.2995 against 0.3293 on a
7-class model).

Computation: predictions are spread onto a uniform grid over [0, 1] by linear
interpolation (each mass split between its two neighbouring grid points), and
the reflected kernel is applied exactly (all mirror images) as a circular
convolution of the grid's even periodic extension, with the FFT. The grid has
at least 40 points per bandwidth, so the discretisation error is far below
the sampling error. The default (relplot) rule's bandwidth search takes the
spread masses' FFT once and keeps each bandwidth's kernel spectrum and each
mesh's interpolation weights (a bootstrap's resamples meet the same first
halvings): the arithmetic of ``scipy.signal.fftconvolve``, so the same numbers.

References
----------
.. [Blasiok2023] Blasiok, J. & Nakkiran, P. "Smooth ECE: Principled Reliability
   Diagrams via Kernel Smoothing", arXiv:2309.12236 (ICLR 2024), section 3
   (definition of smECE_sigma with the reflected Gaussian kernel, the
   fixed-point bandwidth) and the package ``relplot``
   (https://github.com/apple/ml-calibration; ``relplot.metrics.smECE``,
   ``smooth_ece`` and ``kernels.ReflectedGaussianKernel`` of release 1.0.3,
   ``smECE_fast`` of 1.0.1; ``prepare_rel_diagram``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import fft as sp_fft

from calib_core.display import compact_display
from calib_core._accel import spread
from calib_core.metrics.binned import top_label

from calib_core.validation import (CalibrationInputError, check_choice, check_count, check_fraction, check_positive,
                                   check_probs_labels, repeated_probs_labels)

__all__ = ["SmoothReliabilityCurve", "smooth_ece", "smooth_ece_of_top_label", "smooth_reliability_curve"]

#: Grid points per bandwidth (at least) and in total (at least).
_POINTS_PER_SIGMA = 40
_MIN_GRID = 1001
#: Bandwidths below this count as "too small" in the fixed-point search (relplot's eps).
MIN_BANDWIDTH = 1e-3
#: Smallest bandwidth accepted from the caller (a 400,001-point grid).
SMALLEST_BANDWIDTH = 1e-4
#: Halvings of [0, 1] in the fixed-point search (relplot's ``refine=10``).
_BISECTION_STEPS = 10
#: Added to the smoothed density in the denominator of the reliability curve,
#: as relplot's ``KernelSmoother`` does, so the curve is defined where no
#: predictions fall (it bends back towards the diagonal there).
DENSITY_EPSILON = 1e-4
_MAX_BOOTSTRAP_CELLS = 1 << 22
#: relplot's smallest smECE mesh (``config.smECE_mesh_pts``).
_RELPLOT_GRID = 200
#: Added to the (unnormalised) smoothed density by relplot >= 1.0.2 (``BaseKernelMixin.smooth``).
_RELPLOT_DENSITY_EPSILON = 1e-4
_METHODS = ("relplot", "relplot_1.0.1", "exact")


def _grid_size(sigma: float) -> int:
    return max(_MIN_GRID, int(np.ceil(_POINTS_PER_SIGMA / sigma)) + 1)


def _reflected_convolution(grid: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """Apply the reflected Gaussian kernel to point masses on a uniform [0, 1] grid.

    Returns ``sum_j grid_j K_sigma(t_i, t_j)`` with the method-of-images kernel
    ``K(t, s) = sum_m phi(t - s - 2m) + phi(t + s - 2m)`` (a density in t on
    [0, 1] for every s). The masses are extended evenly and periodically with
    period 2; the end points appear once per period but with double weight.
    """
    size = grid.shape[-1]
    step = 1.0 / (size - 1)
    period = 2 * (size - 1)
    extended = np.concatenate([grid, grid[..., -2:0:-1]], axis=-1)
    extended[..., 0] *= 2.0
    extended[..., size - 1] *= 2.0
    offsets = np.arange(period) * step
    images = np.arange(-int(np.ceil(6.0 * sigma / 2.0)) - 1, int(np.ceil(6.0 * sigma / 2.0)) + 2)
    distance = offsets[:, None] - 2.0 * images[None, :]
    kernel = np.exp(-0.5 * (distance / sigma) ** 2).sum(axis=1) / (np.sqrt(2.0 * np.pi) * sigma)
    smoothed = np.fft.irfft(np.fft.rfft(extended, axis=-1) * np.fft.rfft(kernel), n=period, axis=-1)
    return smoothed[..., :size]


def _trapezoid(values: NDArray[np.float64]) -> NDArray[np.float64]:
    step = 1.0 / (values.shape[-1] - 1)
    return step * (values.sum(axis=-1) - 0.5 * (values[..., 0] + values[..., -1]))


def _smece_at(confidence: NDArray[np.float64], residual: NDArray[np.float64], sigma: float) -> float:
    size = _grid_size(sigma)
    smoothed = _reflected_convolution(spread(confidence, residual / confidence.size, size), sigma)
    return float(_trapezoid(np.abs(smoothed))[0])


def _relplot_fft_length(size: int) -> int:
    """The FFT length of the full convolution of the ``3 size - 2`` mirrored masses with the ``size`` kernel
    samples, padded as :func:`scipy.signal.fftconvolve` pads it (``next_fast_len(4 size - 3, real=True)``)."""
    return sp_fft.next_fast_len(4 * size - 3, True)


def _relplot_spectrum(grid: NDArray[np.float64]) -> NDArray[np.complex128]:
    """The real FFT of ``grid`` (``(..., G)`` point masses) mirrored once at each end, as ``fftconvolve`` takes it.

    A bandwidth search convolves the same masses with a dozen kernels: their
    spectrum is taken once (:class:`_SmeceEvaluator` keeps it).
    """
    size = grid.shape[-1]
    flipped = grid[..., ::-1]
    extended = np.concatenate([flipped[..., :-1], grid, flipped[..., 1:]], axis=-1)
    return sp_fft.rfftn(extended, [_relplot_fft_length(size)], axes=[grid.ndim - 1])


@functools.lru_cache(maxsize=256)
def _relplot_kernel_spectrum(sigma: float, size: int, ndim: int) -> NDArray[np.complex128]:
    """The real FFT of relplot's truncated Gaussian sampled on ``linspace(0, 1, size)``, shaped ``(1,) * (ndim - 1)
    + (F,)``; read-only and kept (LRU, 256 entries of ~16 KB): the bisection's bandwidths are dyadic and the same
    first ones recur in every resample of a bootstrap."""
    mesh = np.linspace(0.0, 1.0, size)
    kernel = np.exp(-(mesh - 0.5) * (mesh - 0.5) / (2.0 * sigma ** 2)) / (np.sqrt(2.0 * np.pi) * sigma)
    spectrum = sp_fft.rfftn(kernel.reshape((1,) * (ndim - 1) + (size,)), [_relplot_fft_length(size)],
                            axes=[ndim - 1])
    spectrum.flags.writeable = False
    return spectrum


def _relplot_convolve(grid: NDArray[np.float64], sigma: float,
                      spectrum: NDArray[np.complex128] | None = None) -> NDArray[np.float64]:
    """relplot's ``ReflectedGaussianKernel.convolve``: kernel truncated to |t - s| <= 1/2, reflected once.

    ``grid`` is ``(..., G)`` point masses on ``np.linspace(0, 1, G)``; the
    kernel is sampled on the same spacing, the masses are mirrored once at
    each end, and the direct convolution is done with the FFT (equal to
    relplot's ``np.convolve`` up to round-off). The same FFTs, product and
    slice as ``scipy.signal.fftconvolve(extended, kernel, mode="valid")``, so
    the same numbers bit for bit, with the masses' spectrum given
    (``spectrum``, :func:`_relplot_spectrum` of ``grid``) or taken here, and
    the kernel's kept per (sigma, G) (:func:`_relplot_kernel_spectrum`).
    """
    size = grid.shape[-1]
    length = _relplot_fft_length(size)
    if spectrum is None:
        spectrum = _relplot_spectrum(grid)
    full = sp_fft.irfftn(spectrum * _relplot_kernel_spectrum(float(sigma), size, grid.ndim), [length],
                         axes=[grid.ndim - 1])
    # The 'valid' part (2 G - 1 values) starts at G - 1 of the 4 G - 3 of the full convolution; relplot keeps G.
    start = size - 1 + size // 2
    return full[..., start: start + size]


def _relplot_smece(grid: NDArray[np.float64], sigma: float) -> float:
    """relplot 1.0.1's ``smooth_ece_interpolated``: mean of |smoothed residual| over the grid points."""
    return float(np.sum(np.abs(_relplot_convolve(grid, sigma))) / grid.size)


@functools.lru_cache(maxsize=64)
def _relplot_reading(points: int, size: int) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]:
    """Where relplot's ``kernels.interpolate`` reads ``linspace(0, 1, size)`` at ``linspace(0, 1, points)``: each
    mesh point's left grid index and the weights ``1 - fraction`` and ``fraction`` (read-only, kept: a bandwidth
    search meets the same few mesh sizes in every resample)."""
    mesh = np.linspace(0.0, 1.0, points)
    step = 1.0 / (size - 1)
    left = (mesh * (size - 1)).astype(np.intp).clip(0, size - 2)
    fraction = (mesh - left * step) / step
    reading = (left, 1.0 - fraction, fraction)
    for array in reading:
        array.flags.writeable = False
    return reading


def _relplot_interpolate(points: int, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """relplot's ``kernels.interpolate``: values on ``linspace(0, 1, G)`` (last axis) read at ``points`` mesh
    points ``linspace(0, 1, points)``."""
    left, keep, fraction = _relplot_reading(points, values.shape[-1])
    return values[..., left] * keep + values[..., left + 1] * fraction


def _relplot_current_smece(confidence: NDArray[np.float64], residual: NDArray[np.float64], sigma: float,
                           spread_cache: dict[int, tuple[NDArray[np.float64], NDArray[np.complex128]]] | None = None,
                           ) -> float:
    """``relplot.metrics.smooth_ece(f, y, sigma)`` of relplot >= 1.0.2 (checked against 1.0.3).

    Residual and density are spread onto ``max(2000, round(20 / sigma)) // 2 + 1``
    grid points with unit weights, smoothed with :func:`_relplot_convolve`,
    read at ``max(round(10 / sigma), 200)`` mesh points ``t``, and
    ``sum_t |r(t)| / sum_t (d(t) + 1e-4)`` is returned, with ``d`` the
    smoothed count density (relplot writes it as
    ``sum |r / (d + eps)| (d + eps) / sum (d + eps)``).

    The grid size is 1,001 for every sigma of at least 0.01, so a bandwidth
    search spreads the masses and takes their FFT once: ``spread_cache`` keeps
    both per size.
    """
    points = max(round(10.0 / sigma), _RELPLOT_GRID)
    size = max(2000, round(20.0 / sigma)) // 2 + 1
    found = None if spread_cache is None else spread_cache.get(size)
    if found is None:
        masses = spread(confidence, np.stack([residual, np.ones_like(residual)]), size)
        found = masses, _relplot_spectrum(masses)
        if spread_cache is not None:
            spread_cache[size] = found
    masses, spectrum = found
    smoothed = _relplot_interpolate(points, _relplot_convolve(masses, sigma, spectrum))
    density = smoothed[1] + _RELPLOT_DENSITY_EPSILON
    regression = smoothed[0] / density
    return float(np.sum(np.abs(regression) * density) / np.sum(density))


class _SmeceEvaluator:
    """smECE_sigma of fixed data, by the exact kernel or by relplot's discretisation.

    ``"relplot"``: relplot >= 1.0.2's ``smooth_ece`` at every sigma (no state).
    ``"relplot_1.0.1"`` keeps relplot 1.0.1's ``smECE_fast`` state: a 200-point
    grid that is multiplied by 4 whenever ``round(20 / sigma)`` exceeds it,
    and never shrinks.
    """

    def __init__(self, confidence: NDArray[np.float64], residual: NDArray[np.float64], method: str):
        self.confidence = confidence
        self.residual = residual
        self.method = method
        self.size = _RELPLOT_GRID
        self.grid: NDArray[np.float64] | None = None
        self.spread_cache: dict[int, tuple[NDArray[np.float64], NDArray[np.complex128]]] = {}

    def __call__(self, sigma: float) -> float:
        if self.method == "exact":
            return _smece_at(self.confidence, self.residual, sigma)
        if self.method == "relplot":
            return _relplot_current_smece(self.confidence, self.residual, sigma, self.spread_cache)
        size = self.size
        while round(20.0 / sigma) > size:
            size *= 4
        if self.grid is None or size != self.size:
            self.size = size
            self.grid = spread(self.confidence, self.residual / self.confidence.size, size)[0]
        return _relplot_smece(self.grid, sigma)


def _fixed_point(evaluate: _SmeceEvaluator) -> float:
    """relplot's ``search_param``: the upper end of a 10-step bisection for sigma = smECE_sigma."""
    def too_small(sigma: float) -> bool:
        return sigma < MIN_BANDWIDTH or sigma < evaluate(sigma)

    if too_small(1.0):
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(_BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if too_small(middle):
            low = middle
        else:
            high = middle
    return high


def _prepare(probs: ArrayLike, labels: ArrayLike, bandwidth: float | None, method: str):
    probs, labels = check_probs_labels(probs, labels)
    return _prepare_top_label(*top_label(probs, labels), bandwidth, method)


def _prepare_top_label(confidence: NDArray[np.float64], correct: NDArray[np.float64], bandwidth: float | None,
                       method: str):
    method = check_choice(method, "method", _METHODS)
    residual = correct - confidence
    evaluate = _SmeceEvaluator(confidence, residual, method)
    if bandwidth is None:
        bandwidth = _fixed_point(evaluate)
    else:
        bandwidth = check_positive(bandwidth, "bandwidth")
        if bandwidth < SMALLEST_BANDWIDTH:
            raise CalibrationInputError(
                f"`bandwidth` must be at least {SMALLEST_BANDWIDTH:g} (the grid needs 40 points per "
                f"bandwidth), got {bandwidth!r}."
            )
    return confidence, correct, bandwidth, evaluate(bandwidth)


def smooth_ece(probs: ArrayLike, labels: ArrayLike, *, bandwidth: float | None = None,
               method: str = "relplot",
               sample_weight: ArrayLike | None = None) -> float:
    """Smooth ECE (smECE) of the top-label confidence (Blasiok & Nakkiran 2023).

    Parameters
    ----------
    probs : array_like of shape (N, K)
        Predicted probabilities.
    labels : array_like of shape (N,)
        True classes in ``0..K-1``.
    bandwidth : float, optional
        Kernel width sigma, at least 1e-4. ``None`` (default) uses the fixed point
        ``sigma* = smECE_sigma*`` that makes smECE a consistent calibration
        measure.
    method : {"relplot", "relplot_1.0.1", "exact"}, default "relplot"
        ``"relplot"`` equals ``relplot.smECE(confidence, correct)`` of the
        current relplot release, 1.0.3 (the rule since 1.0.2), to round-off:
        the residuals and the counts are smoothed on a grid of
        ``max(2000, round(20 / sigma)) // 2 + 1`` points with the Gaussian
        kernel truncated at distance 1/2 and reflected once, read at
        ``max(round(10 / sigma), 200)`` mesh points, and the summed absolute
        residual is divided by the summed density (plus 1e-4 per point).
        ``"relplot_1.0.1"`` is the rule of relplot 1.0 and 1.0.1
        (``smECE_fast``: 200-point grid refined 4x while ``round(20 / sigma)``
        exceeds it, the summed absolute residual divided by the number of
        grid points), which loses the kernel mass cut off by the truncation
        and is lower for strongly miscalibrated predictions (0.2995 where
        1.0.3 gives 0.3293 on a 7-class model). ``"exact"`` applies the
        kernel with all mirror images on a grid of at least 40 points per
        sigma and integrates with the trapezoid rule.
    sample_weight : array_like of shape (N,), optional
        Whole-number row weights: the value of the rows repeated that many times (kernel smoothing of the
        repeated residuals, and the automatic width is the fixed point on them; ``docs/weights.md``). Other
        weights raise :class:`~calib_core.validation.CalibrationInputError`.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    CalibrationInputError
        Invalid predictions, labels or bandwidth.

    Notes
    -----
    With confidences :math:`f_i = \\max_k p_{ik}`, correctness :math:`y_i` and
    the Gaussian kernel reflected at 0 and 1,
    :math:`K_\\sigma(t, s) = \\sum_{m \\in \\mathbb Z} \\phi_\\sigma(t - s - 2m)
    + \\phi_\\sigma(t + s - 2m)` (Blasiok & Nakkiran 2023, section 3):

    .. math:: \\mathrm{smECE}_\\sigma = \\int_0^1 \\Big| \\frac1N \\sum_i
              K_\\sigma(t, f_i)\\,(y_i - f_i) \\Big|\\, dt
              = \\int_0^1 |\\hat r(t)|\\, \\hat\\delta(t)\\, dt

    where :math:`\\hat r` is the kernel regression of the residual and
    :math:`\\hat \\delta` the kernel density of the confidences. The
    automatic bandwidth repeats relplot's search: if sigma = 1 is still
    below smECE, 1; otherwise ten halvings of [0, 1] keeping
    ``sigma < max(smECE_sigma, 0.001)`` on the lower side, and the upper end
    of the last interval. smECE_sigma is decreasing in sigma, so the result is
    within 1/1024 of the fixed point.

    Examples
    --------
    The residuals here are 0.1, -0.8, 0.3 and -0.6 at confidences 0.6-0.9;
    smoothed with sigma = 0.1 they are negative everywhere, so the exact
    smECE is the absolute mean residual:

    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> round(smooth_ece(p, [0, 1, 1, 0], bandwidth=0.1, method="exact"), 6)
    0.25
    """
    probs, labels = repeated_probs_labels(probs, labels, sample_weight, metric="`smooth_ece`")
    return _prepare(probs, labels, bandwidth, method)[3]


def smooth_ece_of_top_label(confidence: NDArray[np.float64], correct: NDArray[np.float64], *,
                            bandwidth: float | None = None, method: str = "relplot") -> float:
    """:func:`smooth_ece` from the top-label confidences and correctness (what it computes after
    :func:`~calib_core.metrics.binned.top_label`; the bootstrap resamples these two arrays)."""
    return _prepare_top_label(confidence, correct, bandwidth, method)[3]


@compact_display
@dataclass(frozen=True)
class SmoothReliabilityCurve:
    """A smoothed reliability diagram of the top-label confidence.

    Attributes
    ----------
    mesh : ndarray of shape (M,)
        Confidence values in [0, 1] where the curve is evaluated.
    accuracy : ndarray of shape (M,)
        Smoothed accuracy ``t + r(t) / (density(t) + DENSITY_EPSILON / N)``,
        with ``r`` the kernel-smoothed residual ``correct - confidence``
        (weights 1/N) and ``density`` below. An estimate, not a probability:
        it can leave [0, 1] near the ends of the data, and outside
        ``[confidence_min, confidence_max]`` it is an extrapolation (the
        term ``t - local mean confidence`` grows with the distance to the
        data); a plot clips it to [0, 1] and draws it over the data range.
    density : ndarray of shape (M,)
        Kernel density of the confidences (integrates to 1 over [0, 1]).
    lower, upper : ndarray of shape (M,)
        Pointwise ``alpha / 2`` and ``1 - alpha / 2`` bootstrap percentiles of
        the smoothed accuracy (same bandwidth); NaN when ``n_boot == 0``.
    bandwidth : float
        Kernel width sigma.
    smece : float
        :func:`smooth_ece` at that bandwidth (with the chosen ``method``).
    alpha : float
        The band covers ``1 - alpha`` pointwise.
    confidence_min, confidence_max : float
        Smallest and largest top-label confidence of the data: the range
        where the curve is an estimate rather than an extrapolation.
    """

    mesh: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    density: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    bandwidth: float
    smece: float
    alpha: float
    confidence_min: float
    confidence_max: float


def _curves(confidence: NDArray[np.float64], correct: NDArray[np.float64], weights: NDArray[np.float64],
            sigma: float, mesh: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
    """Smoothed accuracy and density on ``mesh`` for each row of per-point ``weights`` (B, N).

    Each weight row sums to 1 (1/N for the data, counts/N for a resample).
    """
    size = _grid_size(sigma)
    batch = weights.shape[0]
    residual = (correct - confidence)[None, :] * weights
    smoothed = _reflected_convolution(spread(confidence, np.concatenate([residual, weights]), size), sigma)
    # Linear interpolation from the uniform grid to the mesh.
    position = mesh * (size - 1)
    left = np.clip(np.floor(position).astype(np.intp), 0, size - 2)
    fraction = position - left
    on_mesh = smoothed[:, left] * (1.0 - fraction) + smoothed[:, left + 1] * fraction
    numerator, density = on_mesh[:batch], on_mesh[batch:]
    epsilon = DENSITY_EPSILON / confidence.size
    return mesh[None, :] + numerator / (density + epsilon), density


def smooth_reliability_curve(probs: ArrayLike, labels: ArrayLike, *, bandwidth: float | None = None,
                             n_mesh: int = 200, n_boot: int = 200, alpha: float = 0.05,
                             seed: int | np.random.Generator | None = None,
                             method: str = "relplot") -> SmoothReliabilityCurve:
    """Smoothed reliability curve with its density and a bootstrap band.

    Parameters
    ----------
    probs : array_like of shape (N, K)
    labels : array_like of shape (N,)
    bandwidth : float, optional
        Kernel width; ``None`` uses the smECE fixed point (see :func:`smooth_ece`).
    n_mesh : int, default 200
        Number of evenly spaced mesh points in [0, 1] (at least 2).
    n_boot : int, default 200
        Bootstrap resamples of the rows for the band; 0 skips the band.
    alpha : float, default 0.05
        The band covers ``1 - alpha`` pointwise (percentile bootstrap).
    seed : int or numpy.random.Generator, optional
        Source of the resampling randomness.
    method : {"relplot", "relplot_1.0.1", "exact"}, default "relplot"
        How smECE and the automatic bandwidth are computed (see
        :func:`smooth_ece`). The curve and the density always use the
        exact reflected kernel.

    Returns
    -------
    SmoothReliabilityCurve

    Notes
    -----
    The curve is :math:`t + \\hat r(t)` with :math:`\\hat r(t) = \\sum_i K_\\sigma(t, f_i)
    (y_i - f_i) / (\\sum_i K_\\sigma(t, f_i) + \\epsilon)` (relplot's
    centred kernel smoother, :math:`\\epsilon` = :data:`DENSITY_EPSILON`), so
    that :math:`\\int |\\mathrm{curve}(t) - t|\\, \\mathrm{density}(t)\\, dt`
    is the smECE where the density is not tiny (Blasiok & Nakkiran 2023,
    section 4). The band resamples the rows ``n_boot`` times, keeps the
    bandwidth fixed, and takes pointwise percentiles.

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> curve = smooth_reliability_curve(p, [0, 1, 1, 0], bandwidth=0.1, n_boot=20, seed=0)
    >>> curve.mesh.shape, curve.accuracy.shape
    ((200,), (200,))
    """
    confidence, correct, bandwidth, smece = _prepare(probs, labels, bandwidth, method)
    check_count(n_mesh, "n_mesh", 2)
    check_count(n_boot, "n_boot", 0)
    alpha = check_fraction(alpha, "alpha")
    n = confidence.size
    mesh = np.linspace(0.0, 1.0, int(n_mesh))
    accuracy, density = _curves(confidence, correct, np.full((1, n), 1.0 / n), bandwidth, mesh)
    lower = np.full(mesh.shape, np.nan)
    upper = np.full(mesh.shape, np.nan)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        per_batch = max(1, _MAX_BOOTSTRAP_CELLS // n)
        replicates = []
        for start in range(0, int(n_boot), per_batch):
            batch = min(per_batch, int(n_boot) - start)
            counts = rng.multinomial(n, np.full(n, 1.0 / n), size=batch).astype(np.float64)
            replicates.append(_curves(confidence, correct, counts / n, bandwidth, mesh)[0])
        lower, upper = np.quantile(np.concatenate(replicates), [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    return SmoothReliabilityCurve(
        mesh=mesh,
        accuracy=accuracy[0],
        density=density[0],
        lower=lower,
        upper=upper,
        bandwidth=float(bandwidth),
        smece=smece,
        alpha=alpha,
        confidence_min=float(confidence.min()),
        confidence_max=float(confidence.max()),
    )
