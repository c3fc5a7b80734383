"""Numerical kernels shared by the recalibrators (private).

Everything here works on already-validated float64 arrays and is
vectorised over rows; loops run at most over classes.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq, isotonic_regression, minimize
from scipy.special import logsumexp

from calib_core.binning import sorted_pairs
from calib_core._accel import blas_single_threaded, map_blocks
from calib_core.validation import row_argmax, softmax_unchecked, transposed

#: Bounds on log T for every temperature fit: T in [1e-3, 1e3].
LOG_T_BOUNDS = (float(np.log(1e-3)), float(np.log(1e3)))
#: The constant added to probabilities before every logarithm of them (see :func:`log_probabilities`).
LOG_PROBS_EPS = 1e-12


def log_probabilities(probs: ArrayLike, *, eps: float = LOG_PROBS_EPS) -> NDArray[np.float64]:
    """``log(probs + eps)``: the one logarithm of probabilities used by every recalibrator.

    Every method whose maths needs logarithms of predicted probabilities
    (temperature, vector, matrix and Dirichlet scaling, ensemble and
    metric-optimised temperature and Platt scaling given ``input="probs"``,
    and Beta calibration's ``ln p`` and ``ln(1 - p)``) takes them here, so an
    exact zero means the same thing to all of them.

    Parameters
    ----------
    probs : array_like
        Probabilities in [0, 1] (already validated), any shape.
    eps : float, default :data:`LOG_PROBS_EPS` (1e-12)

    Returns
    -------
    ndarray
        ``log(probs + eps)``, finite: an exact 0 becomes ``log(1e-12) ~ -27.6``.

    Notes
    -----
    This is scikit-learn's rule for temperature scaling on ``predict_proba``
    output (``sklearn.calibration._convert_to_logits``, scikit-learn 1.8+:
    ``log(p + 1e-12)``), so a :class:`TemperatureScaling` fitted here on
    probabilities agrees with ``CalibratedClassifierCV(method="temperature")``.

    Why 1e-12 and not the floor ``log(tiny) ~ -708`` used before: models such
    as random forests output exact zeros (no tree voted for the class). A
    zero for the true class then costs ``708 / T`` nats in the NLL, and a
    handful of such rows drive the fitted temperature to hundreds (T = 312
    on a 5-tree forest, which flattens every other row). At ``log(1e-12)`` the
    zeros stay far below any vote share (``log(0.01) = -4.6``) yet the NLL
    they add is of the order of a confident mistake under the clipped NLL of
    :func:`calib_core.nll` (which clips at the same 1e-12). The added ``eps``
    changes a positive probability by a relative 1e-12 / p, far below what
    any fit can resolve for p >= 1e-6.

    Examples
    --------
    >>> log_probabilities([[0.0, 1.0]]).round(2).tolist()
    [[-27.63, 0.0]]
    """
    out = np.add(np.asarray(probs, dtype=np.float64), eps)
    return np.log(out, out=out)  # in place: one new array, not two (each 400 MB at 50,000 x 1,000)


def log_softmax(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise log-softmax, stable for large scores."""
    shifted = scores - scores.max(axis=1, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return shifted


def class_log_probs(scores: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log p_k`` and ``log(1 - p_k)`` for every entry of ``p = softmax(scores)``.

    ``1 - p_k`` is the sum of the other classes' shares. For a class other
    than the row's top class that sum includes the top share (exactly 1
    after shifting), so it cannot underflow; for the top class it is the sum
    of the other shares, and where that sum underflows (score gaps beyond
    about 708) its logarithm is taken as a log-sum-exp of the shifted scores,
    so ``log(1 - p_top)`` keeps full relative precision even when ``p_top``
    rounds to 1 (no floor: the log-odds of ``softmax([800, 0])`` are 800).
    """
    n_rows = scores.shape[0]
    rows = np.arange(n_rows)
    top = row_argmax(scores)
    shifted = scores - scores[rows, top][:, None]
    shares = np.exp(shifted)
    shares[rows, top] = 0.0
    rest_of_top = shares.sum(axis=1)  # sum of the non-top shares (the top share is exactly 1)
    total = rest_of_top + 1.0
    shares[rows, top] = 1.0
    log_total = np.log(total)[:, None]
    log_p = shifted - log_total
    others = total[:, None] - shares
    others[rows, top] = rest_of_top
    with np.errstate(divide="ignore"):
        log_not_p = np.log(others)
    # Where the other shares' sum is not a normal float (it underflowed), take it in log space.
    underflow = np.flatnonzero(rest_of_top < np.finfo(np.float64).tiny)
    if underflow.size:
        masked = shifted[underflow]
        masked[np.arange(underflow.size), top[underflow]] = -np.inf
        log_not_p[underflow, top[underflow]] = logsumexp(masked, axis=1)
    log_not_p -= log_total
    return log_p, log_not_p


# -- column by column ----------------------------------------------------------
#: Columns per block of :func:`column_results` and :func:`map_columns` (64 columns of 25,000 rows: 12.8 MB).
COLUMN_BLOCK = 64


def _by_column_blocks(matrix: NDArray, work: Callable[[int, NDArray], Any]) -> list:
    """``work(first, matrix[:, first:first + C].T)`` for blocks of C columns, each transposed C-ordered into a
    buffer of its thread's own, on two threads (:func:`calib_core._accel.map_blocks`); results in order."""
    n_rows, n_columns = matrix.shape
    scratch = threading.local()

    def block(first: int, last: int) -> Any:
        buffer = getattr(scratch, "buffer", None)
        if buffer is None:
            buffer = scratch.buffer = np.empty((min(COLUMN_BLOCK, n_columns), n_rows), dtype=matrix.dtype)
        return work(first, transposed(matrix[:, first:last], out=buffer[:last - first]))

    return map_blocks(block, ((first, min(n_columns, first + COLUMN_BLOCK))
                              for first in range(0, n_columns, COLUMN_BLOCK)))


def column_results(matrix: NDArray[np.float64], function: Callable[[int, NDArray[np.float64]], Any]) -> list:
    """``[function(k, matrix[:, k]) for k in range(K)]``, each column contiguous, without a transposed copy.

    Blocks of 64 columns are transposed into a reused buffer, so a result
    must not keep the column it was given. At 25,000 x 1,000, transposing the
    matrix (and the predictions back) took 0.5-1 s, most of it first touching
    200 MB arrays; by blocks, on two threads, a fraction of that.
    """
    return [result for part in _by_column_blocks(
        matrix, lambda first, columns: [function(first + j, column) for j, column in enumerate(columns)])
        for result in part]


def map_columns(matrix: NDArray[np.float64],
                function: Callable[[int, NDArray[np.float64]], NDArray[np.float64]]) -> NDArray[np.float64]:
    """A new C-ordered matrix whose column ``k`` is ``function(k, matrix[:, k])`` (see :func:`column_results`).

    Examples
    --------
    >>> map_columns(np.arange(6.0).reshape(3, 2), lambda k, column: column * (k + 1)).tolist()
    [[0.0, 2.0], [2.0, 6.0], [4.0, 10.0]]
    """
    out = np.empty(matrix.shape)

    def fill(first: int, columns: NDArray[np.float64]) -> None:
        for j in range(columns.shape[0]):
            columns[j] = function(first + j, columns[j])
        out[:, first:first + columns.shape[0]] = columns.T  # each block its own columns of ``out``

    _by_column_blocks(matrix, fill)
    return out


# -- temperature ---------------------------------------------------------------
#: Values per row block of the losses below: each pass over a block of this many float64 values (1 MiB) stays
#: in cache, and the work arrays are this small instead of two copies of the matrix (200 MB each at
#: 25,000 x 1,000, whose first touch cost more than the arithmetic).
LOSS_BLOCK_VALUES = 1 << 17


#: The row blocks of a loss are summed in this many chunks of consecutive blocks, one thread per chunk
#: (:func:`calib_core._accel.map_blocks`), and the chunks' sums then added in order: the same chunks
#: on any machine, so the sums (and every fit through them) do not depend on its cores.
LOSS_CHUNKS = 2


def row_blocks(n_rows: int, n_columns: int) -> range:
    """Starts of the row blocks of :data:`LOSS_BLOCK_VALUES` values (at least one row each)."""
    return range(0, n_rows, max(1, LOSS_BLOCK_VALUES // max(n_columns, 1)))


def block_sums(n_rows: int, n_columns: int, terms: Callable[..., Sequence], *, n_work: int = 1,
               work_columns: int | None = None) -> list:
    """Sums over the row blocks (:func:`row_blocks` of ``n_columns``) of ``terms(start, stop, *work)``.

    The terms are floats or arrays. ``work`` are ``n_work`` arrays of shape
    ``(block rows, work_columns)`` (default ``n_columns``) of the calling
    thread's own, the block's scratch space. Each of the
    :data:`LOSS_CHUNKS` chunks adds its blocks in order on its own thread;
    the chunks are added in order. With one block (up to
    :data:`LOSS_BLOCK_VALUES` values) this is ``terms(0, n_rows, *work)``.
    """
    starts = row_blocks(n_rows, n_columns)
    step = starts.step
    scratch = threading.local()

    def chunk(first: int, last: int) -> list:
        work = getattr(scratch, "work", None)
        if work is None:
            shape = (min(step, n_rows), n_columns if work_columns is None else work_columns)
            work = scratch.work = [np.empty(shape) for _ in range(n_work)]
        total: list = []
        for start in starts[first:last]:
            stop = min(n_rows, start + step)
            parts = terms(start, stop, *(array[:stop - start] for array in work))
            if not total:
                total = [part.copy() if isinstance(part, np.ndarray) else part for part in parts]
                continue
            for index, part in enumerate(parts):
                if isinstance(part, np.ndarray):
                    total[index] += part
                else:
                    total[index] = total[index] + part
        return total

    bounds = np.linspace(0, len(starts), min(LOSS_CHUNKS, len(starts)) + 1).round().astype(int)
    chunks = map_blocks(chunk, zip(bounds[:-1].tolist(), bounds[1:].tolist()))
    totals = chunks[0]
    for other in chunks[1:]:
        for index, part in enumerate(other):
            totals[index] = totals[index] + part
    return totals


class _TemperatureLoss:
    """Loss of ``softmax(z / T)`` and its derivatives in ``u = log T``, summed over row blocks (:func:`block_sums`)."""

    def __init__(self, scores: NDArray[np.float64], labels: NDArray[np.intp], loss: str,
                 weights: NDArray[np.float64] | None = None) -> None:
        self.scores, self.labels, self.loss, self.weights = scores, labels, loss, weights
        self.true_scores = scores[np.arange(scores.shape[0]), labels]
        # the weighted loss is the mean over the rows repeated `weights` times: sums of weighted row terms / W
        self.total = float(scores.shape[0]) if weights is None else float(weights.sum())

    def _sum(self, row_terms: NDArray[np.float64], start: int, stop: int) -> float:
        """The block's sum of per-row terms, each weighted by its row's weight (if any)."""
        if self.weights is None:
            return float(np.sum(row_terms))
        return float(np.sum(self.weights[start:stop] * row_terms))

    def _terms(self, start: int, stop: int, probs: NDArray[np.float64], scaled: NDArray[np.float64], beta: float,
               hessian: bool) -> tuple[float, float, float]:
        """The block's sums of the loss and its derivatives; ``probs`` and ``scaled`` are its scratch space."""
        scores, labels = self.scores[start:stop], self.labels[start:stop]
        rows = np.arange(stop - start)
        np.multiply(scores, beta, out=probs)
        row_max = probs.max(axis=1)
        probs -= row_max[:, None]
        np.exp(probs, out=probs)
        totals = probs.sum(axis=1)
        probs /= totals[:, None]
        # E_p[s] with s = beta * z, from one matrix-vector pass per row
        mean_s = beta * np.einsum("ij,ij->i", probs, scores)
        true_s = beta * self.true_scores[start:stop]
        if self.loss == "nll":
            # NLL_i = log sum exp(s_i) - s_iy;  d/du = s_y - E_p[s];  d2/du2 = Var_p(s) + E_p[s] - s_y
            value = self._sum(np.log(totals) + row_max - true_s, start, stop)
            grad = self._sum(true_s - mean_s, start, stop)
            second = 0.0
            if hessian:
                weighted = np.multiply(probs, scores, out=scaled)
                mean_s2 = beta**2 * np.einsum("ij,ij->i", weighted, scores)
                second = self._sum(mean_s2 - mean_s**2 + mean_s - true_s, start, stop)
            return value, grad, second
        # sum over N*K of (p - onehot)^2;  d p_k / du = -p_k (s_k - E_p[s])
        if self.weights is not None:
            w = self.weights[start:stop]
            value = self._sum(np.einsum("ij,ij->i", probs, probs) - 2.0 * probs[rows, labels] + 1.0, start, stop)
        else:
            value = float(np.vdot(probs, probs)) - 2.0 * float(probs[rows, labels].sum()) + (stop - start)
        np.multiply(scores, beta, out=scaled)
        scaled -= mean_s[:, None]
        scaled *= probs  # p_k (s_k - E_p[s]) = -d p_k / du
        # sum_k (p_k - y_k) d p_k / du = -sum_k p_k * scaled_k + scaled_y
        if self.weights is not None:
            grad = 2.0 * float(np.sum(w * (-np.einsum("ij,ij->i", probs, scaled) + scaled[rows, labels])))
        else:
            grad = 2.0 * (-float(np.vdot(probs, scaled)) + float(scaled[rows, labels].sum()))
        return value, grad, 0.0

    def __call__(self, log_t: float, *, hessian: bool = False) -> tuple[float, float, float]:
        """Loss, d/du and (NLL only, when asked) d2/du2 at ``u = log_t``: sums over row blocks, then means."""
        beta = float(np.exp(-log_t))
        n_rows, n_classes = self.scores.shape
        value, grad, second = block_sums(
            n_rows, n_classes, lambda start, stop, probs, scaled: self._terms(start, stop, probs, scaled, beta, hessian),
            n_work=2)
        if self.loss == "nll":
            return value / self.total, grad / self.total, second / self.total
        # mean over the N * K entries (Zhang et al. 2020's loss)
        return value / (self.total * n_classes), grad / (self.total * n_classes), 0.0


def fit_log_temperature(scores: NDArray[np.float64], labels: NDArray[np.intp], *, loss: str = "nll",
                        weights: NDArray[np.float64] | None = None) -> float:
    """log T minimising the mean NLL (``loss="nll"``) or the mean squared error of softmax(z / T).

    ``weights`` (positive, checked) make both losses weighted means, the
    means over the rows repeated ``weights`` times.

    ``"mse"`` is the mean over all ``N * K`` entries of ``(p - onehot)^2``
    (the loss of Zhang et al. 2020's code), i.e. Brier / K.

    Notes
    -----
    The NLL is convex in ``1 / T``, so its derivative in ``u = log T``
    changes sign once: a Newton iteration on ``u`` safeguarded by bisection
    on the bracket ``LOG_T_BOUNDS`` converges in a handful of passes over
    the data. The MSE derivative is solved for its root with Brent's method
    on the same bracket. A bound is returned when the derivative has the
    same sign at both ends.
    """
    with blas_single_threaded():  # its loss evaluations run on the blocks' threads (see block_sums)
        return _solve_log_temperature(_TemperatureLoss(scores, labels, loss, weights), loss)


def _solve_log_temperature(objective: _TemperatureLoss, loss: str) -> float:
    """The root of the loss's derivative in ``u = log T`` (:func:`fit_log_temperature`'s Notes)."""
    low, high = LOG_T_BOUNDS
    if loss == "mse":
        g_low, g_high = objective(low)[1], objective(high)[1]
        if g_low >= 0:
            return low
        if g_high <= 0:
            return high
        return float(brentq(lambda u: objective(u)[1], low, high, xtol=1e-10, rtol=1e-10, maxiter=100))
    u = 0.0
    for _ in range(100):
        _, grad, second = objective(u, hessian=True)
        if grad > 0:
            high = u
        elif grad < 0:
            low = u
        else:
            return u
        step = grad / second if second > 0 else np.inf
        if abs(step) < 1e-10:
            return u - step
        candidate = u - step
        if not (low < candidate < high):
            candidate = 0.5 * (low + high)
        if high - low < 1e-10:
            return candidate
        u = candidate
    return u


# -- linear maps followed by softmax (vector / matrix scaling, Dirichlet) ------
@dataclass(frozen=True)
class QuadraticPenalty:
    """``sum(coef_w * W**2) + sum(coef_b * b**2)``: every penalty used here is of this form."""

    coef_w: NDArray[np.float64]
    coef_b: NDArray[np.float64]

    def __call__(self, weights: NDArray[np.float64], bias: NDArray[np.float64]):
        value = float(np.sum(self.coef_w * weights**2) + np.sum(self.coef_b * bias**2))
        return value, 2.0 * self.coef_w * weights, 2.0 * self.coef_b * bias


def odir_penalty(n_classes: int, reg_lambda: float, reg_mu: float, *, full: bool = True) -> QuadraticPenalty:
    """``lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + mu / K * sum_j b_j^2`` (Kull et al. 2019, ODIR).

    For a diagonal map (``full=False``) only the intercept term remains.
    """
    if full:
        coef_w = np.full((n_classes, n_classes), reg_lambda / (n_classes * (n_classes - 1)))
        np.fill_diagonal(coef_w, 0.0)
    else:
        coef_w = np.zeros(n_classes)
    return QuadraticPenalty(coef_w, np.full(n_classes, reg_mu / n_classes))


def l2_penalty(n_classes: int, reg_lambda: float) -> QuadraticPenalty:
    """``lambda / (K (K + 1)) * (sum_ij W_ij^2 + sum_j b_j^2)``: plain L2 towards 0, averaged over parameters."""
    scale = reg_lambda / (n_classes * (n_classes + 1))
    return QuadraticPenalty(np.full((n_classes, n_classes), scale), np.full(n_classes, scale))


def _softmax_nll_and_residual(logits: NDArray[np.float64], labels: NDArray[np.intp],
                              n_total: float, weights: NDArray[np.float64] | None = None
                              ) -> tuple[float, NDArray[np.float64]]:
    """Summed NLL of softmax(logits) over these rows and ``(softmax - onehot) / n_total`` (overwrites ``logits``);
    with ``weights`` (these rows'), each row's NLL and residual times its weight."""
    rows = np.arange(logits.shape[0])
    logits -= logits.max(axis=1, keepdims=True)
    true_logit = logits[rows, labels]
    np.exp(logits, out=logits)
    totals = logits.sum(axis=1)
    row_nll = np.log(totals) - true_logit
    value = float(np.sum(row_nll)) if weights is None else float(np.sum(weights * row_nll))
    logits /= totals[:, None]
    logits[rows, labels] -= 1.0
    if weights is not None:
        logits *= weights[:, None]
    logits /= n_total
    return value, logits


def fit_linear_softmax(x: NDArray[np.float64], labels: NDArray[np.intp], *, full: bool,
                       penalty: QuadraticPenalty, weights0: NDArray[np.float64], bias0: NDArray[np.float64],
                       max_iter: int = 500, sample_weight: NDArray[np.float64] | None = None
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64], int, bool]:
    """Minimise ``NLL(softmax(x W^T + b)) + penalty(W, b)`` with L-BFGS-B and analytic gradients.

    ``sample_weight`` (positive, checked) makes the NLL the weighted mean
    over rows (the mean over the rows repeated that many times); the
    preconditioner's curvature is weighted the same way.

    ``full=False`` fits a diagonal ``W`` given as a vector (vector scaling);
    ``full=True`` a full ``(K, K)`` matrix.

    Returns
    -------
    weights, bias, n_iter, converged

    Notes
    -----
    With ``G = (softmax - onehot) / N`` the NLL gradients are ``dW = G^T x``
    (full) or ``sum_i G * x`` (diagonal) and ``db = sum_i G``.

    Conditioning. (1) Rows of logits or log-probabilities carry a large
    common offset ``r_i = mean_k x_ik``, and ``W x_i = W c_i + r_i W 1`` with
    ``c_i = x_i - r_i 1``; the directions that change ``W 1`` then have a
    curvature ``E[r^2]`` far above the rest. The full map is therefore
    optimised on the features ``[c, r / rho]`` (``rho``: root mean square of
    r) with parameters ``[A | a]``, mapped back by
    ``W = A (I - 11^T / K) + a 1^T / (K rho)`` — the same family of maps.
    (2) Every parameter is divided by the square root of its diagonal
    curvature at the start (Jacobi preconditioning): NLL curvature
    ``mean_i p_ik (1 - p_ik) f_ij^2`` plus the penalty's. The penalty is
    applied to ``(W, b)`` through the chain rule. One ``(N, K)`` buffer is
    reused by every evaluation (allocating 40 MB per call costs more than
    the arithmetic); the sums run over row blocks on two threads
    (:func:`block_sums`), so each work array holds one block, not the whole
    ``(N, K)`` matrix.
    """
    n_rows, n_classes = x.shape
    row_weights = sample_weight
    n_total = float(n_rows) if row_weights is None else float(row_weights.sum())
    if full:
        offset = x.mean(axis=1)
        rho = float(np.sqrt(np.mean(offset**2) if row_weights is None else np.sum(row_weights * offset**2) / n_total))
        rho = rho if rho > 0 else 1.0
        features = np.empty((n_rows, n_classes + 1))
        np.subtract(x, offset[:, None], out=features[:, :n_classes])
        np.divide(offset, rho, out=features[:, n_classes])
        w_shape = (n_classes, n_classes + 1)
        centering = np.eye(n_classes) - 1.0 / n_classes

        def to_weights(params: NDArray[np.float64]) -> NDArray[np.float64]:
            return params[:, :n_classes] @ centering + np.outer(params[:, n_classes], np.ones(n_classes)) / (n_classes * rho)

        def weights_grad_to_params(grad: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.column_stack([grad @ centering, grad.sum(axis=1) / (n_classes * rho)])

        params0 = np.column_stack([weights0, weights0.sum(axis=1) * rho])
        penalty_curvature_w = np.column_stack([2.0 * penalty.coef_w,
                                               2.0 * penalty.coef_w.mean(axis=1) / (n_classes * rho**2)])
    else:
        features = x
        w_shape = weights0.shape
        params0 = weights0

        def to_weights(params: NDArray[np.float64]) -> NDArray[np.float64]:
            return params

        def weights_grad_to_params(grad: NDArray[np.float64]) -> NDArray[np.float64]:
            return grad

        penalty_curvature_w = 2.0 * penalty.coef_w
    w_size = int(np.prod(w_shape))

    def curvature_terms(start: int, stop: int, probs0: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
        block = features[start:stop]
        np.matmul(block, params0.T, out=probs0) if full else np.multiply(block, params0, out=probs0)
        probs0 += bias0
        softmax_unchecked(probs0, out=probs0)
        probs0 *= 1.0 - probs0
        if row_weights is not None:
            probs0 *= row_weights[start:stop, None]
        return (probs0.T @ (block**2) if full else np.einsum("ij,ij->j", probs0, block**2)), probs0.sum(axis=0)

    # Jacobi preconditioner: diagonal curvature at the starting point.
    curvature_w, curvature_b = block_sums(n_rows, n_classes + 1, curvature_terms, work_columns=n_classes)
    curvature_w /= n_total
    curvature_b /= n_total
    curvature = np.concatenate([(curvature_w + penalty_curvature_w).ravel(), curvature_b + 2.0 * penalty.coef_b])
    floor = 1e-6 * float(curvature.max()) if curvature.max() > 0 else 1.0
    scale = 1.0 / np.sqrt(np.maximum(curvature, floor))  # theta = scale * phi

    def objective(phi: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        theta = phi * scale
        params = theta[:w_size].reshape(w_shape)
        bias = theta[w_size:]

        def terms(start: int, stop: int, logits: NDArray[np.float64]) -> tuple[float, NDArray, NDArray]:
            block = features[start:stop]
            np.matmul(block, params.T, out=logits) if full else np.multiply(block, params, out=logits)
            logits += bias
            part, residual = _softmax_nll_and_residual(
                logits, labels[start:stop], n_total, None if row_weights is None else row_weights[start:stop])
            return (part, residual.T @ block if full else np.einsum("ij,ij->j", residual, block),
                    residual.sum(axis=0))

        value, grad_params, grad_b = block_sums(n_rows, n_classes + 1, terms, work_columns=n_classes)
        value /= n_total
        extra, pen_w, pen_b = penalty(to_weights(params), bias)
        if extra:
            grad_params = grad_params + weights_grad_to_params(pen_w)
            grad_b = grad_b + pen_b
        return value + extra, np.concatenate([grad_params.ravel(), grad_b]) * scale

    phi0 = np.concatenate([params0.ravel(), bias0]) / scale
    with blas_single_threaded():  # the blocks' threads are the parallelism (see block_sums)
        result = minimize(objective, phi0, jac=True, method="L-BFGS-B",
                          options={"maxiter": max_iter, "gtol": 1e-6, "ftol": 1e-8})
    theta = result.x * scale
    weights = to_weights(theta[:w_size].reshape(w_shape))
    return (np.ascontiguousarray(weights), np.ascontiguousarray(theta[w_size:]),
            int(result.nit), bool(result.status == 0))


# -- binary logistic regression (Platt, Beta) ------------------------------------
def _logistic_loss(eta: NDArray[np.float64], targets: NDArray[np.float64],
                   weights: NDArray[np.float64] | None = None) -> float:
    # -[t log s(eta) + (1 - t) log s(-eta)] = logaddexp(0, eta) - t * eta
    rows = np.logaddexp(0.0, eta) - targets * eta
    # np.sum of the weighted terms, as np.mean sums them: weights of 1 give the unweighted loss bit for bit
    return float(np.mean(rows)) if weights is None else float(np.sum(weights * rows) / weights.sum())


def fit_logistic(features: NDArray[np.float64], targets: NDArray[np.float64], *,
                 max_iter: int = 100, tol: float = 1e-10,
                 weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Unpenalised logistic regression by damped Newton steps (few features, many rows).

    Minimises ``mean(log(1 + exp(F theta)) - t * F theta)`` for targets
    ``t`` in [0, 1] (the ``weights``-weighted mean when given: the rows
    repeated that many times); each Newton step is halved until the loss decreases.
    A ridge of ``1e-12 * trace(H)`` keeps the Hessian solvable when the
    classes separate (the coefficients then grow until ``max_iter``).
    """
    n_rows, n_features = features.shape
    row_weights = np.ones(n_rows) if weights is None else weights
    n_total = float(n_rows) if weights is None else float(weights.sum())
    theta = np.zeros(n_features)
    eta = np.zeros(n_rows)
    value = _logistic_loss(eta, targets, weights)
    for _ in range(max_iter):
        probs = 0.5 * (1.0 + np.tanh(0.5 * eta))  # stable sigmoid
        grad = features.T @ (row_weights * (probs - targets)) / n_total
        if np.max(np.abs(grad)) < tol:
            break
        hessian = (features * (row_weights * probs * (1.0 - probs))[:, None]).T @ features / n_total
        hessian[np.diag_indices(n_features)] += 1e-12 * np.trace(hessian) + 1e-300
        step = np.linalg.solve(hessian, grad)
        scale = 1.0
        for _ in range(60):
            candidate = theta - scale * step
            candidate_eta = features @ candidate
            candidate_value = _logistic_loss(candidate_eta, targets, weights)
            if candidate_value <= value:
                break
            scale *= 0.5
        else:
            break
        converged = np.max(np.abs(scale * step)) < tol * (1.0 + np.max(np.abs(theta)))
        theta, eta, value = candidate, candidate_eta, candidate_value
        if converged:
            break
    return theta


# -- isotonic regression -------------------------------------------------------
def isotonic_fit(values: NDArray[np.float64], targets: NDArray[np.float64],
                 weights: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Non-decreasing least-squares fit of ``targets`` on ``values`` (pool adjacent violators).

    Tied values are merged first (their targets averaged, weighted by the
    tie count); the fitted steps are returned as interpolation knots with
    interior points of constant runs dropped, as
    ``sklearn.isotonic.IsotonicRegression`` stores them. Predict with
    ``np.interp(v, knots_x, knots_y)`` (linear in between, clipped outside).
    Sorted once (:func:`calib_core.binning.sorted_pairs`); tie groups are
    the runs of equal sorted values. ``weights`` (positive) make it the
    weighted least-squares fit: a tie group's weight is its summed weight
    and its target the weighted mean, so integer weights fit the repeated rows.
    """
    if weights is None:
        sorted_values, sorted_targets = sorted_pairs(values, targets)
    else:
        order = np.argsort(values, kind="stable")
        sorted_values, sorted_targets, sorted_weights = values[order], targets[order], weights[order]
    starts_run = np.ones(sorted_values.size, dtype=bool)
    starts_run[1:] = sorted_values[1:] != sorted_values[:-1]
    start = np.flatnonzero(starts_run)
    unique = sorted_values[start]
    if weights is None:
        counts = np.diff(start, append=sorted_values.size)
        means = np.add.reduceat(sorted_targets, start) / counts
    else:
        counts = np.add.reduceat(sorted_weights, start)
        means = np.add.reduceat(sorted_weights * sorted_targets, start) / counts
    fitted = isotonic_regression(means, weights=counts.astype(np.float64), increasing=True).x
    keep = np.ones(fitted.size, dtype=bool)
    if fitted.size > 2:
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return unique[keep], fitted[keep]
