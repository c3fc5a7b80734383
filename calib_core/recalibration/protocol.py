"""Honest evaluation protocols for recalibration: splits, cross-fitting, before/after tables.

A recalibration map fitted on some rows always looks better on those same
rows (it has seen their labels), so the "after" numbers must come from rows
the map was not fitted on: a disjoint test split, or K-fold cross-fitting
when there is only one set. Evaluating on the fitting data is possible only
with ``allow_in_sample=True``, and the protocol string then says so.

References
----------
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, section 4.3 and
   appendix B.2 (the bias of recalibrating on the data used for evaluation).
.. [Chernozhukov2018] Chernozhukov, V. et al. "Double/debiased machine learning
   for treatment and structural parameters", Econometrics Journal 2018
   (cross-fitting: every prediction comes from a model fitted on other folds).
"""
from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calib_core.display import compact_display
from calib_core._accel import mark_validated, marked_copy
from calib_core.metrics.registry import get_metric, resolve_metrics
from calib_core.recalibration import Recalibrator
from calib_core.validation import (CalibrationInputError, check_choice, check_flag, check_fraction, check_labels,
                                   check_logits, check_probs, check_sample_weight, softmax_unchecked)

__all__ = [
    "DEFAULT_METRICS",
    "EVAL_SPLIT_VALUES",
    "FIT_SPLIT_VALUES",
    "PredictionSplit",
    "RecalibrationReport",
    "cross_fit",
    "evaluate_recalibration",
    "split_predictions",
    "stratified_folds",
    "stratified_split",
]

#: Values of a ``split`` column that mark rows to fit recalibration maps on.
FIT_SPLIT_VALUES = ("calibration", "calib", "cal", "validation", "valid", "val", "fit", "recalibration")
#: Values of a ``split`` column that mark rows to evaluate on.
EVAL_SPLIT_VALUES = ("test", "eval", "evaluation", "holdout")
#: Registry keys (:data:`calib_core.metrics.registry.METRICS`) evaluated when ``metrics`` is not given.
DEFAULT_METRICS = ("accuracy", "ece", "classwise_ece", "ace", "nll", "brier")

MethodLike = Recalibrator | Callable[[], Recalibrator]
ProgressCallback = Callable[[str, int, int], None]


def _check_seed(seed: object) -> np.random.Generator:
    if seed is not None and not isinstance(seed, (numbers.Integral, np.random.Generator)) or isinstance(seed, bool):
        raise CalibrationInputError(f"`seed` must be None, an integer or a numpy Generator, got {seed!r}.")
    return np.random.default_rng(seed)


def _check_any_labels(labels: ArrayLike, n_classes: int | None) -> NDArray[np.intp]:
    """Check labels against K classes, or only for being non-negative integers when K is unknown."""
    checked = check_labels(labels, n_classes if n_classes is not None else np.iinfo(np.intp).max)
    if checked.size == 0:
        raise CalibrationInputError("`labels` is empty.")
    return checked


def _class_grouped_order(labels: NDArray[np.intp], rng: np.random.Generator) -> NDArray[np.intp]:
    """Row indices grouped by class, in random order within each class."""
    permutation = rng.permutation(labels.size)
    return permutation[np.argsort(labels[permutation], kind="stable")]


# -- splits ----------------------------------------------------------------------
@dataclass(frozen=True)
class PredictionSplit:
    """Rows to fit recalibration maps on and disjoint rows to evaluate on.

    Attributes
    ----------
    fit_index, eval_index : ndarray of int
        Sorted, disjoint row indices.
    description : str
        How the split was made, in words (for the protocol statement).
    """

    fit_index: NDArray[np.intp]
    eval_index: NDArray[np.intp]
    description: str

    def take(self, x: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(x_fit, labels_fit, x_eval, labels_eval)`` for arrays of the original row order."""
        x = np.asarray(x)
        labels = np.asarray(labels)
        return x[self.fit_index], labels[self.fit_index], x[self.eval_index], labels[self.eval_index]


def stratified_split(labels: ArrayLike, *, test_fraction: float = 0.5, seed: int | np.random.Generator | None = 0,
                     n_classes: int | None = None) -> PredictionSplit:
    """Random split that keeps each class's share in both parts.

    Parameters
    ----------
    labels : array_like of shape (N,)
    test_fraction : float, default 0.5
        Share of each class sent to the evaluation part, in (0, 1).
    seed : int, Generator or None, default 0
    n_classes : int, optional
        K (defaults to ``max(labels) + 1``).

    Returns
    -------
    PredictionSplit

    Notes
    -----
    Within each class of ``n_c`` rows, ``round(n_c * test_fraction)`` random
    rows go to evaluation, kept between 1 and ``n_c - 1`` when ``n_c >= 2``
    (a singleton class goes to the fitting part).

    Raises
    ------
    CalibrationInputError
        Bad fraction or labels, or a part would be empty.

    Examples
    --------
    >>> split = stratified_split([0, 0, 1, 1], test_fraction=0.5, seed=0)
    >>> len(split.fit_index), len(split.eval_index)
    (2, 2)
    """
    labels = _check_any_labels(labels, n_classes)
    check_fraction(test_fraction, "test_fraction")
    rng = _check_seed(seed)
    order = _class_grouped_order(labels, rng)
    counts = np.bincount(labels)
    n_eval = np.rint(counts * float(test_fraction)).astype(np.intp)
    n_eval = np.where(counts >= 2, np.clip(n_eval, 1, counts - 1), 0)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sorted_labels = labels[order]
    rank = np.arange(labels.size) - starts[sorted_labels]
    to_eval = rank < n_eval[sorted_labels]
    fit_index, eval_index = np.sort(order[~to_eval]), np.sort(order[to_eval])
    if fit_index.size == 0 or eval_index.size == 0:
        raise CalibrationInputError(
            f"a stratified split of {labels.size} rows with test_fraction={test_fraction} leaves a part empty; "
            "more rows are needed."
        )
    seed_text = f"seed {seed}" if isinstance(seed, numbers.Integral) else "caller's random generator"
    description = (f"stratified random split ({seed_text}): {fit_index.size:,} rows to fit, "
                   f"{eval_index.size:,} disjoint rows to evaluate (test fraction {test_fraction:g})")
    return PredictionSplit(fit_index, eval_index, description)


def _split_from_column(split: ArrayLike, n_rows: int, fit_values: Sequence[str],
                       eval_values: Sequence[str]) -> PredictionSplit:
    values = pd.Series(np.asarray(split, dtype=object)).astype(str).str.strip().str.lower()
    if values.size != n_rows:
        raise CalibrationInputError(f"`split` has {values.size} entries but `x` has {n_rows} rows.")
    is_fit = values.isin([v.lower() for v in fit_values]).to_numpy()
    is_eval = values.isin([v.lower() for v in eval_values]).to_numpy()
    if not is_fit.any() or not is_eval.any():
        seen = ", ".join(repr(v) for v in values.unique()[:8])
        raise CalibrationInputError(
            f"`split` must mark both rows to fit on ({', '.join(fit_values)}) and rows to evaluate on "
            f"({', '.join(eval_values)}); found values {seen}."
        )
    ignored = int(n_rows - is_fit.sum() - is_eval.sum())
    description = (f"the `split` column: {int(is_fit.sum()):,} calibration rows to fit, "
                   f"{int(is_eval.sum()):,} test rows to evaluate")
    if ignored:
        description += f" ({ignored:,} rows with other split values ignored)"
    return PredictionSplit(np.flatnonzero(is_fit), np.flatnonzero(is_eval), description)


def split_predictions(x: ArrayLike, labels: ArrayLike, *, split: ArrayLike | None = None,
                      test_fraction: float = 0.5, seed: int | np.random.Generator | None = 0,
                      fit_values: Sequence[str] = FIT_SPLIT_VALUES,
                      eval_values: Sequence[str] = EVAL_SPLIT_VALUES) -> PredictionSplit:
    """Split predictions into a fitting part and a disjoint evaluation part.

    Parameters
    ----------
    x : array_like of shape (N, K)
        Logits or probabilities (only the shape is used here).
    labels : array_like of shape (N,)
    split : array_like of shape (N,), optional
        A per-row split column. Rows whose (case-insensitive) value is in
        ``fit_values`` (e.g. ``"calibration"``, ``"val"``) are fitted on, rows
        in ``eval_values`` (e.g. ``"test"``) evaluated on, other rows (e.g.
        ``"train"``) ignored. ``None``: a stratified random split.
    test_fraction : float, default 0.5
        For the random split.
    seed : int, Generator or None, default 0
        For the random split.

    Returns
    -------
    PredictionSplit
        Use ``.take(x, labels)`` for the four arrays and ``.description`` in
        the protocol statement.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.zeros((4, 2)); y = np.array([0, 1, 0, 1])
    >>> s = split_predictions(x, y, split=["cal", "cal", "test", "test"])
    >>> s.fit_index.tolist(), s.eval_index.tolist()
    ([0, 1], [2, 3])
    """
    matrix = check_logits(x, name="x")
    check_labels(labels, matrix.shape[1], n_rows=matrix.shape[0])
    if split is not None:
        return _split_from_column(split, matrix.shape[0], fit_values, eval_values)
    return stratified_split(labels, test_fraction=test_fraction, seed=seed, n_classes=matrix.shape[1])


def stratified_folds(labels: ArrayLike, n_folds: int = 5, *, seed: int | np.random.Generator | None = 0,
                     n_classes: int | None = None) -> NDArray[np.intp]:
    """Fold number (0..n_folds-1) of every row, each class spread evenly over the folds.

    Rows are grouped by class in random order and dealt round-robin, so fold
    sizes differ by at most one and every class's count per fold by at most
    one.

    Examples
    --------
    >>> np.bincount(stratified_folds([0] * 6 + [1] * 4, 2, seed=1)).tolist()
    [5, 5]
    """
    labels = _check_any_labels(labels, n_classes)
    if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) or not 2 <= n_folds <= labels.size:
        raise CalibrationInputError(
            f"`n_folds` must be a whole number between 2 and the number of rows ({labels.size}), got {n_folds!r}."
        )
    order = _class_grouped_order(labels, _check_seed(seed))
    folds = np.empty(labels.size, dtype=np.intp)
    folds[order] = np.arange(labels.size) % int(n_folds)
    return folds


def _make_method(method: MethodLike, input: str | None) -> Recalibrator:
    if isinstance(method, Recalibrator):
        instance = method.clone()
    elif callable(method):
        instance = method()
        if not isinstance(instance, Recalibrator):
            raise CalibrationInputError(
                f"a method factory must return a Recalibrator, got {type(instance).__name__}.")
    else:
        raise CalibrationInputError(
            f"a method must be a Recalibrator or a function returning one, got {method!r}.")
    if input is not None:
        instance.set_params(input=input)
    return instance


def cross_fit(method: MethodLike, x: ArrayLike, labels: ArrayLike, *, n_folds: int = 5,
              seed: int | np.random.Generator | None = 0, input: str | None = None,
              sample_weight: ArrayLike | None = None) -> NDArray[np.float64]:
    """Out-of-fold recalibrated predictions by K-fold cross-fitting.

    Parameters
    ----------
    method : Recalibrator or callable
        A recalibrator (cloned, never fitted itself) or a function returning
        a fresh one.
    x : array_like of shape (N, K)
        Logits or probabilities, as the method's ``input`` declares (or as
        ``input`` overrides).
    labels : array_like of shape (N,)
    n_folds : int, default 5
    seed : int, Generator or None, default 0
        Seeds the stratified fold assignment (:func:`stratified_folds`).
    input : {"logits", "probs"}, optional
        Overrides the method's ``input``.
    sample_weight : array_like of shape (N,), optional
        Row weights: each fold's map is fitted with the weights of the rows
        it is fitted on (``fit(..., sample_weight=w[~held_out])``). The folds
        are the same as without weights (they depend on the labels only).

    Returns
    -------
    ndarray of shape (N, K)
        Row i is recalibrated by a map fitted on the folds not holding row i,
        so metrics on these predictions are not optimistic.

    Notes
    -----
    With integer weights each fold's map is the map of that fold's fitting
    rows repeated that many times (the recalibrators' guarantee). Cross-fitting
    the repeated rows themselves is not the same computation: its folds are
    dealt over the copies, so copies of one row can land in different folds
    (a row then helps fit its own map). The equality holds for folds that
    keep every row's copies together.

    Examples
    --------
    >>> import numpy as np
    >>> from calib_core.recalibration import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> z = 3 * rng.normal(size=(100, 3)); y = rng.integers(0, 3, 100)
    >>> cross_fit(TemperatureScaling(), z, y, n_folds=4).shape
    (100, 3)
    """
    if input is not None:
        check_choice(input, "input", ("logits", "probs"))
    template = _make_method(method, input)
    matrix = check_logits(x, name="x")
    checked = check_labels(labels, matrix.shape[1], n_rows=matrix.shape[0])
    weights = check_sample_weight(sample_weight, checked.size)
    folds = stratified_folds(checked, n_folds, seed=seed, n_classes=matrix.shape[1])
    out = np.empty(matrix.shape)
    for fold in range(int(n_folds)):
        held_out = folds == fold
        model = template.clone().fit(matrix[~held_out], checked[~held_out],
                                     sample_weight=None if weights is None else weights[~held_out])
        out[held_out] = model.predict_proba(matrix[held_out])
    return out


# -- before / after evaluation ------------------------------------------------------
@compact_display
@dataclass(frozen=True)
class RecalibrationReport:
    """Before/after comparison of recalibration methods.

    Attributes
    ----------
    table : pandas.DataFrame
        Tidy: one row per (method, metric) with columns ``method``,
        ``metric`` (display name), ``metric_key``, ``before``, ``after``,
        ``delta`` (after - before; negative is lower), ``fit_seconds``.
    protocol : str
        What was fitted on what and evaluated on what, in one sentence to
        show next to every result.
    in_sample : bool
        True when the methods were evaluated on their own fitting data.
    labels : ndarray of shape (M,)
        Labels of the evaluated rows (read-only).
    before : ndarray of shape (M, K)
        Probabilities of the evaluated rows before recalibration (read-only
        when the report computed their metrics).
    after : dict of str to ndarray of shape (M, K)
        Recalibrated probabilities of the evaluated rows (out-of-fold under
        cross-fitting), per method; read-only (checked once for every metric).
    models : dict of str to Recalibrator
        Fitted methods (under cross-fitting: refitted on all rows when
        ``refit=True``, for export; their in-sample predictions are not in
        the table).
    sample_weight : ndarray of shape (M,) or None
        Weights of the evaluated rows that every metric of the table used
        (``None``: unweighted rows).
    """

    table: pd.DataFrame
    protocol: str
    in_sample: bool
    labels: NDArray[np.intp]
    before: NDArray[np.float64]
    after: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    models: dict[str, Recalibrator] = field(default_factory=dict)
    sample_weight: NDArray[np.float64] | None = None


def _resolve_metrics(metrics: str | Callable | Mapping[str, str | Callable] | Sequence[str | Callable] | None,
                     ) -> list[tuple[str, str, Callable]]:
    """``[(key, display name, metric(probs, labels))]``: registry keys are shown by their label."""
    metrics = DEFAULT_METRICS if metrics is None else metrics
    functions = resolve_metrics(metrics)
    if isinstance(metrics, str):
        keys = {metrics}
    elif isinstance(metrics, Mapping) or callable(metrics):
        keys = set()
    else:
        keys = {metric for metric in metrics if isinstance(metric, str)}
    return [(name, get_metric(name).label if name in keys else name, function) for name, function in functions.items()]


def _named_methods(methods: Mapping[str, MethodLike] | Sequence[MethodLike]) -> list[tuple[str, MethodLike]]:
    if isinstance(methods, Mapping):
        named = [(str(name), method) for name, method in methods.items()]
    elif isinstance(methods, (Recalibrator,)) or callable(methods):
        named = [(_display_name(methods), methods)]
    else:
        named, seen = [], {}
        for method in methods:
            base = _display_name(method)
            seen[base] = seen.get(base, 0) + 1
            named.append((base if seen[base] == 1 else f"{base} ({seen[base]})", method))
    if not named:
        raise CalibrationInputError("`methods` is empty; choose at least one recalibration method.")
    return named


def _display_name(method: MethodLike) -> str:
    if isinstance(method, Recalibrator):
        return method.display_name or type(method).__name__
    if isinstance(method, type) and issubclass(method, Recalibrator):
        return method.display_name
    return getattr(method, "__name__", repr(method))


def _as_eval_probs(x: ArrayLike, input: str, name: str) -> NDArray[np.float64]:
    if input == "probs":
        return check_probs(x, name=name)
    return softmax_unchecked(check_logits(x, name=name))


def _checked_once(predictions: NDArray[np.float64], *inputs: ArrayLike | None) -> NDArray[np.float64]:
    """A method's recalibrated probabilities, checked once and frozen, so that every metric skips its check.

    The metrics of :func:`evaluate_recalibration` each validate their input
    (a pass over M x K values: eight passes per method, 0.3 s at 25,000 x
    1,000). Checked here once and marked (:func:`calib_core._accel.mark_validated`),
    they are not scanned again. Only an array of the method's own is frozen:
    one that shares memory with the inputs, or is a view, is copied first.
    Invalid output raises the error the first metric would have raised.
    """
    checked = check_probs(predictions)
    if checked.base is not None or any(
            isinstance(x, np.ndarray) and np.may_share_memory(checked, x) for x in inputs if x is not None):
        checked = checked.copy()
    checked.flags.writeable = False
    return mark_validated(checked)


def evaluate_recalibration(methods: Mapping[str, MethodLike] | Sequence[MethodLike],
                           x_fit: ArrayLike, y_fit: ArrayLike,
                           x_eval: ArrayLike | None = None, y_eval: ArrayLike | None = None, *,
                           input: str = "logits",
                           metrics: Mapping[str, Callable] | Sequence[str] | None = None,
                           allow_in_sample: bool = False, n_folds: int = 5,
                           seed: int | np.random.Generator | None = 0, refit: bool = True,
                           split_description: str | None = None,
                           on_progress: ProgressCallback | None = None,
                           before_values: Mapping[str, float] | None = None,
                           sample_weight: ArrayLike | None = None,
                           eval_sample_weight: ArrayLike | None = None) -> RecalibrationReport:
    """Fit each method and compare metrics before and after recalibration, honestly.

    Parameters
    ----------
    methods : dict of name to Recalibrator (or factory), or a list of them
        A list is named by each method's ``display_name``. Every method is
        cloned with ``input=input``; the objects passed are not modified.
    x_fit, y_fit : array_like of shape (N, K) and (N,)
        The calibration (fitting) set.
    x_eval, y_eval : array_like of shape (M, K) and (M,), optional
        A disjoint evaluation set. When omitted: K-fold cross-fitting on the
        fitting set (:func:`cross_fit`), or, with ``allow_in_sample=True``,
        evaluation on the fitting set itself.
    input : {"logits", "probs"}, default "logits"
        What ``x_fit`` and ``x_eval`` hold ("before" probabilities are
        ``softmax(logits)`` or the probabilities themselves).
    metrics : str, callable, list of them, or dict of name to key or callable, optional
        Registry keys of :data:`calib_core.metrics.registry.METRICS` or functions
        ``metric(probs, labels) -> float`` (as
        :func:`calib_core.metrics.registry.resolve_metrics` reads them); default
        :data:`DEFAULT_METRICS`.
    allow_in_sample : bool, default False
        Must be True to evaluate on the fitting data (``x_eval`` omitted or
        equal to ``x_fit``); the protocol string then says "IN-SAMPLE".
    n_folds : int, default 5
        Folds for cross-fitting.
    seed : int, Generator or None, default 0
        Seeds the cross-fitting folds.
    refit : bool, default True
        Under cross-fitting, also fit every method on all rows (for
        ``report.models``: parameters to export). Costs one more fit each.
    split_description : str, optional
        How the fitting and evaluation sets were obtained (e.g.
        :attr:`PredictionSplit.description`), included in the protocol.
    on_progress : callable, optional
        ``on_progress(method_name, index, total)`` is called before each
        method is fitted (``index`` = 0-based position) and once after the
        last one with ``index == total``.
    before_values : mapping of str to float, optional
        The metrics of the uncalibrated evaluation predictions, by metric key,
        when the caller already has them (the app evaluates them once per
        protocol, not once per method); keys missing here are computed.
    sample_weight : array_like of shape (N,), optional
        Weights of the fitting rows: every fit takes them (``fit(...,
        sample_weight=...)``, the folds' own under cross-fitting), and under
        cross-fitting or in-sample, where the fitting rows are the evaluated
        rows, every metric weights them too (``metric(p, y, sample_weight=...)``).
    eval_sample_weight : array_like of shape (M,), optional
        Weights of the evaluation rows of a holdout (``x_eval``): every metric
        weights them. Only with ``x_eval``.

    Returns
    -------
    RecalibrationReport

    Raises
    ------
    CalibrationInputError
        Invalid inputs, or evaluation on the fitting data without
        ``allow_in_sample=True``.

    Notes
    -----
    Integer weights give the numbers of the rows repeated that many times
    (fits to the optimiser's tolerance, metrics exactly) on a holdout and
    in-sample. Under cross-fitting they give each fold's map of its rows
    repeated, on the same folds; the repeated rows cross-fitted on their own
    are dealt into other folds (:func:`cross_fit`).

    Examples
    --------
    >>> import numpy as np
    >>> from calib_core.recalibration import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> z = 3 * rng.normal(size=(400, 3)); y = rng.integers(0, 3, 400)
    >>> nll = lambda p, y: float(-np.log(p[np.arange(len(y)), y]).mean())
    >>> report = evaluate_recalibration([TemperatureScaling()], z[:200], y[:200], z[200:], y[200:],
    ...                                 metrics={"NLL": nll})
    >>> bool(report.table["after"].iloc[0] < report.table["before"].iloc[0])
    True
    """
    input = check_choice(input, "input", ("logits", "probs"))
    check_flag(allow_in_sample, "allow_in_sample")
    named = _named_methods(methods)
    resolved_metrics = _resolve_metrics(metrics)
    # The fitting rows' probabilities are "before" only in-sample and under cross-fitting; a holdout
    # needs only their check (one softmax pass less per call at large K).
    fit_checked = check_probs(x_fit, name="x_fit") if input == "probs" else check_logits(x_fit, name="x_fit")
    n_fit, n_classes = fit_checked.shape
    y_fit_checked = check_labels(y_fit, n_classes, n_rows=n_fit, name="y_fit")
    x_fit_array = np.asarray(x_fit, dtype=np.float64)

    fit_weights = check_sample_weight(sample_weight, n_fit)
    if (x_eval is None) != (y_eval is None):
        raise CalibrationInputError("give both `x_eval` and `y_eval`, or neither.")
    if eval_sample_weight is not None and x_eval is None:
        raise CalibrationInputError("`eval_sample_weight` weights the rows of `x_eval`; give `x_eval` with it.")
    same_as_fit = x_eval is not None and (
        x_eval is x_fit or (np.shape(x_eval) == np.shape(x_fit) and np.array_equal(np.asarray(x_eval), x_fit_array)
                            and np.array_equal(np.asarray(y_eval), np.asarray(y_fit))))
    if same_as_fit and not allow_in_sample:
        raise CalibrationInputError(
            "`x_eval` is the fitting data: in-sample results are optimistic. Pass a disjoint test set, omit "
            "`x_eval` for cross-fitting, or set `allow_in_sample=True` to evaluate on the fitting data anyway."
        )
    if x_eval is not None and not same_as_fit:
        mode = "holdout"
        before = _as_eval_probs(x_eval, input, "x_eval")
        labels_eval = check_labels(y_eval, before.shape[1], n_rows=before.shape[0], name="y_eval")
        if before.shape[1] != n_classes:
            raise CalibrationInputError(
                f"`x_eval` has {before.shape[1]} columns but `x_fit` has {n_classes}.")
        eval_weights = check_sample_weight(eval_sample_weight, before.shape[0], name="eval_sample_weight")
        protocol = (f"Holdout: each method was fitted on {n_fit:,} calibration rows and evaluated on "
                    f"{before.shape[0]:,} disjoint test rows.")
    elif allow_in_sample:
        mode = "in_sample"
        before, labels_eval = (fit_checked if input == "probs" else softmax_unchecked(fit_checked)), y_fit_checked
        eval_weights = fit_weights
        protocol = (f"IN-SAMPLE (optimistic): each method was fitted and evaluated on the same {n_fit:,} rows; "
                    "the 'after' numbers overstate how well the methods work on new data.")
    else:
        mode = "cross_fit"
        before, labels_eval = (fit_checked if input == "probs" else softmax_unchecked(fit_checked)), y_fit_checked
        eval_weights = fit_weights
        stratified_folds(y_fit_checked, n_folds, seed=seed, n_classes=n_classes)  # validates n_folds
        protocol = (f"{n_folds}-fold cross-fitting on {n_fit:,} rows (stratified folds, seed {seed}): every "
                    f"recalibrated prediction comes from a map fitted on the other {n_folds - 1} folds "
                    f"(about {n_fit - n_fit // n_folds:,} rows); metrics use all {n_fit:,} out-of-fold predictions.")
    if split_description:
        protocol += f" How the rows were split: {split_description}."
    if fit_weights is not None or eval_weights is not None:
        protocol += " " + _weights_sentence(fit_weights, eval_weights)
        resolved_metrics = [(key, label, _with_weights(function, eval_weights))
                            for key, label, function in resolved_metrics]

    labels_eval = marked_copy(labels_eval, n_classes)  # checked once for every metric
    known = dict(before_values or {})
    if any(key not in known for key, _, _ in resolved_metrics):
        before = _checked_once(before, x_fit, x_eval)
    before_values = {key: float(known[key]) if key in known else float(function(before, labels_eval))
                     for key, _, function in resolved_metrics}
    rows, after, models = [], {}, {}
    total = len(named)
    for index, (name, method) in enumerate(named):
        if on_progress is not None:
            on_progress(name, index, total)
        start = time.perf_counter()
        if mode == "cross_fit":
            predictions = cross_fit(method, x_fit_array, y_fit_checked, n_folds=n_folds, seed=seed, input=input,
                                    sample_weight=fit_weights)
            seconds = time.perf_counter() - start
            if refit:
                models[name] = _make_method(method, input).fit(x_fit_array, y_fit_checked, sample_weight=fit_weights)
        else:
            model = _make_method(method, input).fit(x_fit_array, y_fit_checked, sample_weight=fit_weights)
            seconds = time.perf_counter() - start
            models[name] = model
            predictions = model.predict_proba(x_fit_array if mode == "in_sample" else x_eval)
        predictions = _checked_once(predictions, x_fit, x_eval)
        after[name] = predictions
        for key, label, function in resolved_metrics:
            value = float(function(predictions, labels_eval))
            rows.append({"method": name, "metric": label, "metric_key": key, "before": before_values[key],
                         "after": value, "delta": value - before_values[key], "fit_seconds": seconds})
    if on_progress is not None:
        on_progress(named[-1][0], total, total)
    table = pd.DataFrame(rows, columns=["method", "metric", "metric_key", "before", "after", "delta", "fit_seconds"])
    return RecalibrationReport(table=table, protocol=protocol, in_sample=mode == "in_sample",
                               labels=labels_eval, before=before, after=after, models=models,
                               sample_weight=eval_weights)


def _with_weights(function: Callable, weights: NDArray[np.float64] | None) -> Callable:
    """``metric(probs, labels)`` of a metric evaluated with the rows' ``weights`` (unchanged without them).

    Through :func:`calib_core.inference.bootstrap.weighted_metric`: a registry metric takes the weights as it
    declares; a callable without a ``sample_weight`` keyword is refused rather than scored unweighted.
    """
    if weights is None:
        return function
    from calib_core.inference.bootstrap import weighted_metric  # inference builds on the metrics, not on this

    weighted = weighted_metric(function)
    return lambda probs, labels: weighted(probs, labels, weights)


def _weights_sentence(fit_weights: NDArray[np.float64] | None, eval_weights: NDArray[np.float64] | None) -> str:
    """What the weights did, for the protocol sentence."""
    if eval_weights is None:
        return ("Each fit weighted the calibration rows by their sample weights (total weight "
                f"{fit_weights.sum():,.6g}); the metrics count the test rows unweighted.")
    if fit_weights is None:
        return (f"The metrics weight the test rows by their sample weights (total weight {eval_weights.sum():,.6g}); "
                "the fits count the calibration rows unweighted.")
    if fit_weights is eval_weights:
        return (f"Every fit and every metric weights the rows by their sample weights (total weight "
                f"{eval_weights.sum():,.6g}).")
    return (f"Every fit and every metric weights the rows by their sample weights (total weight "
            f"{fit_weights.sum():,.6g} to fit, {eval_weights.sum():,.6g} to evaluate).")
