"""Speed and memory of the O(N^2) estimators of issue 4 (kde_ce, skce, mmce) and of smooth_ece.

Run ``python bench/bench_kernel.py`` from the repository root (``--quick`` for
smaller sizes). Targets on the 2-core reference machine:

* ``kde_ce`` (N=10,000, K=10, canonical, KL, bandwidth 0.01) under 10 s;
* ``skce`` unbiased (N=20,000, K=10, median-heuristic bandwidth) under 10 s.

Each is compared with a straightforward full-matrix numpy version measured in
the same run. The full-matrix versions hold N x N float64 matrices (several
at once), which the blocked ones never do; where that would need more than
``--full-memory-gb`` the full-matrix version runs on a smaller N, and the
report says so and compares the time per pair.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.spatial.distance import pdist, squareform
from scipy.special import gammaln

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calib_core as cc  # noqa: E402
from calib_core.metrics import kernel  # noqa: E402


def timed(function, repeat: int = 1) -> tuple[float, object]:
    """Median wall time of ``function()`` over ``repeat`` runs (seconds) and its last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def predictions(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident softmax predictions with labels drawn from the calibrated ones."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1.5
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(0, k - 1)
    sharp = np.exp(2.0 * logits)
    return sharp / sharp.sum(axis=1, keepdims=True), labels


# ----------------------------------------------------------------------------- full-matrix baselines
def full_kde_ce_kl(probs: np.ndarray, labels: np.ndarray, bandwidth: float) -> float:
    """Eq. 9-12 with the whole N x N log-kernel matrix in memory."""
    n, k = probs.shape
    alpha = probs / bandwidth + 1.0
    log_norm = gammaln(alpha.sum(axis=1)) - gammaln(alpha).sum(axis=1)
    log_kernel = np.log(probs) @ (alpha - 1.0).T + log_norm[None, :]
    np.fill_diagonal(log_kernel, -np.inf)
    weights = np.exp(log_kernel - log_kernel.max(axis=1, keepdims=True))
    ratio = weights @ np.eye(k)[labels] / weights.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(ratio > 0, ratio * np.log(ratio / probs), 0.0)
    return float(terms.sum(axis=1).mean())


def full_skce(probs: np.ndarray, labels: np.ndarray) -> float:
    """U-statistic with the N x N distance, kernel and residual-product matrices."""
    n = probs.shape[0]
    condensed = pdist(probs)
    bandwidth = np.median(condensed)
    distances = squareform(condensed)
    del condensed
    residual = np.eye(probs.shape[1])[labels] - probs
    h = np.exp(-distances / bandwidth) * (residual @ residual.T)
    return float((h.sum() - np.trace(h)) / (n * (n - 1)))


def full_mmce(probs: np.ndarray, labels: np.ndarray, bandwidth: float = 0.4) -> float:
    confidence = probs.max(axis=1)
    residual = (probs.argmax(axis=1) == labels) - confidence
    gram = np.exp(-np.abs(confidence[:, None] - confidence[None, :]) / bandwidth)
    return float(np.sqrt(residual @ gram @ residual) / probs.shape[0])


# ----------------------------------------------------------------------------- report
def full_size(n: int, matrices: int, budget_gb: float) -> int:
    """Largest N' <= n whose ``matrices`` N' x N' float64 matrices fit in the budget."""
    limit = int(np.sqrt(budget_gb * 2**30 / (8 * matrices)))
    return min(n, limit)


def compare(name: str, n: int, k: int, blocked, full, matrices: int, budget_gb: float, target: float | None) -> None:
    probs, labels = predictions(n, k, seed=0)
    blocked_time, blocked_value = timed(lambda: blocked(probs, labels))
    n_full = full_size(n, matrices, budget_gb)
    small_probs, small_labels = probs[:n_full], labels[:n_full]
    full_time, full_value = timed(lambda: full(small_probs, small_labels))
    line = f"{name:<34} N={n:>6} K={k:<3} blocked {blocked_time:8.3f} s"
    if target is not None:
        line += f" (target < {target:g} s: {'ok' if blocked_time < target else 'MISSED'})"
    print(line)
    if n_full == n:
        print(f"{'':<34} full-matrix numpy {full_time:7.2f} s, ratio blocked/full = {blocked_time / full_time:.3g}, "
              f"values {blocked_value:.10g} vs {full_value:.10g}")
    else:
        check_time, check_value = timed(lambda: blocked(small_probs, small_labels))
        per_pair = (blocked_time / n**2) / (full_time / n_full**2)
        print(f"{'':<34} full-matrix numpy would need {matrices * 8 * n * n / 2**30:.1f} GB at N={n}; "
              f"measured at N={n_full}: {full_time:.2f} s (blocked at that N: {check_time:.2f} s, "
              f"ratio {check_time / full_time:.2f}; per pair at full N vs N={n_full}: {per_pair:.2f}), "
              f"values {check_value:.10g} vs {full_value:.10g}")
    peak_block = kernel.BLOCK_ELEMENTS * 8 / 2**20
    print(f"{'':<34} blocked working matrices: {peak_block:.0f} MiB each; one N x N float64 matrix: "
          f"{8 * n * n / 2**20:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N / 4 everywhere (a smoke run)")
    parser.add_argument("--full-memory-gb", type=float, default=4.0,
                        help="memory allowed to the full-matrix baselines (default 4)")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    budget = args.full_memory_gb

    print("# issue 4 estimators: blocked implementation vs straightforward full-matrix numpy, same run")
    compare("kde_ce (KL, Dirichlet, h=0.01)", 10_000 // scale, 10,
            lambda p, y: cc.kde_ce(p, y, "kl", 0.01),
            lambda p, y: full_kde_ce_kl(p, y, 0.01), matrices=3, budget_gb=budget, target=10.0)
    compare("skce (unbiased, median bandwidth)", 20_000 // scale, 10,
            lambda p, y: cc.skce(p, y),
            full_skce, matrices=3, budget_gb=budget, target=10.0)
    compare("mmce (Laplacian, h=0.4)", 20_000 // scale, 10,
            lambda p, y: cc.mmce(p, y),
            full_mmce, matrices=2, budget_gb=budget, target=None)

    print("# further timings (no full-matrix baseline)")
    for label, n, function in [
        ("kde_ce class-wise (KL, h=0.01)", 10_000 // scale, lambda p, y: cc.kde_ce(p, y, "kl", 0.01, True)),
        ("kde_bandwidth (LOO likelihood)", 10_000 // scale, lambda p, y: cc.kde_bandwidth(p)),
        ("skce block (linear time)", 1_000_000 // scale, lambda p, y: cc.skce(p, y, estimator="block")),
        ("smooth_ece (fixed-point bandwidth)", 1_000_000 // scale, lambda p, y: cc.smooth_ece(p, y)),
        ("bound_chain (kde, 15 bins)", 5_000 // scale, lambda p, y: cc.bound_chain(p, y)),
    ]:
        probs, labels = predictions(n, 10, seed=1)
        seconds, _ = timed(lambda: function(probs, labels))
        print(f"{label:<34} N={n:>7} K=10  {seconds:7.2f} s")


if __name__ == "__main__":
    main()
