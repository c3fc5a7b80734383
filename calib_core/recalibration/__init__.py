"""Post-hoc recalibration methods, scikit-learn style, and their registry.

Every method is a :class:`Recalibrator`: ``__init__`` stores keyword-only
hyper-parameters (``input="logits"|"probs"`` says what ``x`` holds),
``fit(x, labels)`` returns ``self``, ``predict_proba(x)`` returns ``(N, K)``
rows on the simplex and raises :class:`NotFittedError` before ``fit``;
``to_json``/``Recalibrator.from_json`` round-trip a fitted method exactly.

=================================  ==========================  ===================
class                              fits on                     keeps accuracy
=================================  ==========================  ===================
TemperatureScaling                 logits, NLL                 yes
VectorScaling                      logits, NLL                 no
MatrixScaling (ODIR)               logits, NLL + penalty       no
DirichletCalibration               log-probs, NLL + penalty    no
EnsembleTemperatureScaling         logits, MSE or NLL          yes
MetricOptimizedTemperature         logits, any metric          yes
PlattScaling                       log-odds, one-vs-rest       no (K > 2)
BetaCalibration                    probs, one-vs-rest          no (K > 2)
IsotonicCalibration                probs, one-vs-rest          no
HistogramBinning                   probs, uniform-mass bins    no
AccuracyPreservingCalibratedMap    predicted class only        usually (see doc)
StructuredMatrixScaling            T-scaled log-probs, ridge   no
StructuredVectorScaling            T-scaled log-probs, ridge   no
QuadraticScaling (binary)          logit, NLL                  no
SplineCalibration                  probs, one-vs-rest          no (K > 2)
CenteredIsotonic                   probs, one-vs-rest          no
VennAbers                          probs, one-vs-rest or -one  no
=================================  ==========================  ===================

Beside the methods: :mod:`~calib_core.recalibration.prevalence` (Bayes' rule
shift to a deployment's class prevalence), :mod:`~calib_core.recalibration.protocol`
(splits, cross-fitting, evaluation on held-out rows),
:mod:`~calib_core.recalibration.compare` (the Recalibration page's fits,
paired bootstrap intervals of the changes, best methods and verdict) and
:mod:`~calib_core.recalibration.sweeps` (the temperature surface and the
32-variant GCE ranking) and :mod:`~calib_core.recalibration.defaults` (the
methods fitted by default at K classes: those with K^2 parameters only up to
``Recalibrator.max_default_classes``) and :mod:`~calib_core.recalibration.fixable`
(the drop in NLL and Brier score the best of them achieves under cross-fitting,
with intervals: the part of a score recalibration can fix) and
:mod:`~calib_core.recalibration.sklearn_compat` (every method is a scikit-learn
estimator: ``clone``, ``Pipeline``, ``GridSearchCV`` with a registry metric as
scorer, and :class:`CalibratedModel` to wrap a fitted classifier) and
:mod:`~calib_core.recalibration.label_shift` (the deployment's prevalence from unlabelled predictions:
EM, BBSE, the no-shift test, importance weights) and :mod:`~calib_core.recalibration.decisions` (net
benefit, decision curves before and after cross-fitted recalibration, the value of recalibrating) and
:mod:`~calib_core.recalibration.confidence` (recalibrating a confidence model: the binary methods on
``[1 - c, c]``, compared through :mod:`~calib_core.recalibration.compare` with the ``conf_*`` metrics).

Every method that takes logarithms of probabilities (those fitting on logits
or log-probabilities when given ``input="probs"``, and Beta calibration) takes
them through one function, :func:`log_probabilities` (``log(p + 1e-12)``, as
scikit-learn's temperature scaling does), so an exact zero means the same to
all of them.
"""
from __future__ import annotations

from calib_core.recalibration._base import NotFittedError, Recalibrator
from calib_core.recalibration._numeric import LOG_PROBS_EPS, log_probabilities
from calib_core.recalibration.histogram import AccuracyPreservingCalibratedMap, HistogramBinning
from calib_core.recalibration.one_vs_rest import BetaCalibration, IsotonicCalibration, PlattScaling
from calib_core.recalibration.scaling import (
    DirichletCalibration,
    EnsembleTemperatureScaling,
    MatrixScaling,
    MetricOptimizedTemperature,
    TemperatureScaling,
    VectorScaling,
)
from calib_core.recalibration.structured import QuadraticScaling, StructuredMatrixScaling, StructuredVectorScaling
from calib_core.validation import check_choice, check_logits

__all__ = [
    "LOG_PROBS_EPS",
    "RECALIBRATORS",
    "AccuracyPreservingCalibratedMap",
    "BetaCalibration",
    "DirichletCalibration",
    "EnsembleTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibration",
    "MatrixScaling",
    "MetricOptimizedTemperature",
    "NotFittedError",
    "PlattScaling",
    "Recalibrator",
    "TemperatureScaling",
    "VectorScaling",
    "all_recalibrators",
    "check_logits",
    "log_probabilities",
]

#: Display name -> class, in the order the app lists them.
RECALIBRATORS: dict[str, type[Recalibrator]] = {
    cls.display_name: cls
    for cls in (
        TemperatureScaling,
        VectorScaling,
        MatrixScaling,
        DirichletCalibration,
        PlattScaling,
        BetaCalibration,
        IsotonicCalibration,
        HistogramBinning,
        EnsembleTemperatureScaling,
        MetricOptimizedTemperature,
        AccuracyPreservingCalibratedMap,
    )
}
# Structured scaling (Berta et al. 2026) and binary quadratic scaling (issue 27).
RECALIBRATORS.update((cls.display_name, cls) for cls in (
    StructuredMatrixScaling, StructuredVectorScaling, QuadraticScaling))
__all__ += ["QuadraticScaling", "StructuredMatrixScaling", "StructuredVectorScaling"]

# Non-parametric methods (issue 27): spline calibration, centred isotonic regression, Venn-Abers, and the
# floored twins of the methods that can emit exact zeros (calib_core.recalibration.hazards).
from calib_core.recalibration.centered_isotonic import CenteredIsotonic  # noqa: E402
from calib_core.recalibration.splines import SplineCalibration  # noqa: E402
from calib_core.recalibration.venn_abers import VennAbers  # noqa: E402
from calib_core.recalibration.hazards import FlooredHistogramBinning, FlooredIsotonic  # noqa: E402

RECALIBRATORS.update((cls.display_name, cls) for cls in (
    SplineCalibration, CenteredIsotonic, VennAbers, FlooredIsotonic, FlooredHistogramBinning))
__all__ += ["CenteredIsotonic", "FlooredHistogramBinning", "FlooredIsotonic", "SplineCalibration", "VennAbers"]


def all_recalibrators(*, input: str | None = None) -> dict[str, Recalibrator]:
    """A fresh, unfitted instance of every registered method with default hyper-parameters.

    Parameters
    ----------
    input : {"logits", "probs"}, optional
        Set every method's ``input`` (what ``x`` will hold); ``None`` keeps
        each method's default.

    Returns
    -------
    dict
        Display name -> instance, in :data:`RECALIBRATORS` order.

    Examples
    --------
    >>> methods = all_recalibrators(input="probs")
    >>> methods["Temperature scaling"].input
    'probs'
    """
    if input is not None:
        check_choice(input, "input", ("logits", "probs"))
    methods = {name: cls() for name, cls in RECALIBRATORS.items()}
    if input is not None:
        for method in methods.values():
            method.set_params(input=input)
    return methods


# The protocol (splits, cross-fitting, evaluation) uses the registry above, so it comes last.
from calib_core.recalibration.prevalence import PrevalenceAdjustment, adjust_prevalence  # noqa: E402
from calib_core.recalibration.protocol import (PredictionSplit, RecalibrationReport, cross_fit,  # noqa: E402
                                               evaluate_recalibration, split_predictions, stratified_folds,
                                               stratified_split)

from calib_core.recalibration.sklearn_compat import (CalibratedModel, CalibrationScorer,  # noqa: E402
                                                     make_calibration_scorer)

__all__ += ["CalibratedModel", "CalibrationScorer", "make_calibration_scorer"]
__all__ += ["PrevalenceAdjustment", "adjust_prevalence", "PredictionSplit", "RecalibrationReport", "cross_fit",
            "evaluate_recalibration", "split_predictions",
            "stratified_folds", "stratified_split"]

# Deployment: the target prevalence from unlabelled predictions, decision curves and regret (issue 28).
from calib_core.recalibration.label_shift import PrevalenceEstimate, estimate_prevalence  # noqa: E402
from calib_core.recalibration.decisions import (DecisionCurve, RecalibrationValue, decision_curve,  # noqa: E402
                                                net_benefit, recalibration_value)

__all__ += ["PrevalenceEstimate", "estimate_prevalence", "DecisionCurve", "RecalibrationValue", "decision_curve",
            "net_benefit", "recalibration_value"]

# Recalibrating a confidence model (issue 26, deliverable 3): the binary methods on [1 - c, c], one comparison.
from calib_core.recalibration.confidence import (CONFIDENCE_METHODS, apply_confidence_map,  # noqa: E402
                                                 compare_confidence, compare_predictions, fit_confidence_map,
                                                 order_changes)

__all__ += ["CONFIDENCE_METHODS", "apply_confidence_map", "compare_confidence", "compare_predictions",
            "fit_confidence_map", "order_changes"]
# Systems compared on the same rows (issue 26): paired differences of every metric, intervals and verdicts.
from calib_core.recalibration.paired import SystemsComparison, compare_systems  # noqa: E402

__all__ += ["SystemsComparison", "compare_systems"]
