"""Seeded ground-truth generators: simulated predictions whose calibration errors are known.

Every estimator of a calibration error is judged against a number nobody
knows on real data. The generators below draw predictions ``g(X)`` and labels
``Y`` from models in which the calibration function ``r(g) = E[Y | g(X) = g]``
is known in closed form, so the *population* value of each error can be
computed to high precision and compared with what an estimator returns on a
finite sample (:mod:`calib_core.lab.estimators`).

* :class:`LogisticModel` - binary, ``P(Y=1) = 1/2``, ``X | Y=1 ~ N(-1, 1)``,
  ``X | Y=0 ~ N(1, 1)`` and the model ``g_1(x) = 1 / (1 + exp(-b0 - b1 x))``
  (Futami & Fujisawa 2024, section 6.1 and appendix G.1, after Zhang et al.
  2020; the same Gaussian mixture as Vaicenavicius et al. 2019, appendix
  C.1). :func:`futami_logistic` and :func:`gaussian_mixture` give the papers'
  parameter settings.
* :class:`LogisticNormalModel` - K classes, logits ``N(0, Sigma)`` with
  ``Sigma`` drawn once from an inverse-Wishart distribution, labels drawn from
  the predictions (so they are calibrated), then a temperature (Gruber &
  Buettner 2022, appendix G.1).
* :class:`UniformSimplexModel` - uniform points on the simplex, temperature
  ``t1 = 0.9``, labels drawn from them, then temperature ``t2 = 0.6``
  (Popordanoska et al. 2024, section 7.1).

==================  =============================================================
module              what it holds
==================  =============================================================
``truth``           truth keys, results, reference-sample truths, ``binned_truth``
``logistic``        the binary logistic model and the papers' settings
``multiclass``      the logistic-normal and the uniform simplex models
==================  =============================================================

Every model offers ``sample(n, seed=...)`` (a :class:`SimulatedData` with the
predictions, labels, the calibration function at each row and the true
errors), ``sample_batch(n, repetitions, rng)`` (``repetitions`` data sets drawn
at once as ``(R, n, K)`` arrays) and ``truth()`` (a :class:`GroundTruth`).

Notes
-----
How the true values are obtained (``GroundTruth.method`` says it per key):

* the logistic model: every top-label, class-wise and canonical error by
  adaptive quadrature (:func:`scipy.integrate.quad`) of closed-form
  integrands over x; KS by the trapezoid rule on a 400,001-point grid;
* the multi-class models: canonical errors are Monte Carlo means of
  closed-form functions of ``g`` over a large noise-free reference sample
  (no labels are drawn, only predictions), so their error is the Monte Carlo
  error of a mean, ~1e-4 relative. Errors that condition on a 1-D summary
  (the top-label confidence, one class probability) need
  ``E[r_C(g) | max g]``, which has no closed form: it is estimated by the
  mean of ``r_C`` over runs of ``FINE_BIN_SIZE`` sorted reference predictions;
* MMCE, KS and SKCE of every model use the reference sample with the exact
  ``r(g)`` (the tower property removes the label noise).

A model that is calibrated by construction (``is_calibrated``) reports exact
zeros for every calibration error.

References
----------
.. [Futami2024] Futami, F. & Fujisawa, M. "Information-Theoretic Generalization
   Analysis for Expected Calibration Error", NeurIPS 2024, section 6.1, appendix G.1.
.. [Gruber2022] Gruber, S. G. & Buettner, F. "Better Uncertainty Calibration via
   Proper Scores for Classification and Beyond", NeurIPS 2022, appendix G.1.
.. [Popordanoska2024] Popordanoska, T., Gruber, S. G., Tiulpin, A., Buettner, F. &
   Blaschko, M. B. "Consistent and Asymptotically Unbiased Estimation of Proper
   Calibration Errors", AISTATS 2024, section 7.1.
.. [Vaicenavicius2019] Vaicenavicius, J., Widmann, D., Andersson, C., Lindsten, F.,
   Roll, J. & Schön, T. "Evaluating model calibration in classification",
   AISTATS 2019, appendix C.1.
"""
from calib_core.lab.generators.truth import (ERROR_KEYS, FINE_BIN_SIZE, TRUTH_KEYS, GroundTruth, SimulatedData,
                                             binned_truth)
from calib_core.lab.generators.logistic import (FUTAMI_CASES, VAICENAVICIUS_CASES, LogisticModel, futami_logistic,
                                                gaussian_mixture)
from calib_core.lab.generators.multiclass import LogisticNormalModel, UniformSimplexModel

__all__ = [
    "ERROR_KEYS",
    "FUTAMI_CASES",
    "FINE_BIN_SIZE",
    "GroundTruth",
    "LogisticModel",
    "LogisticNormalModel",
    "SimulatedData",
    "TRUTH_KEYS",
    "UniformSimplexModel",
    "VAICENAVICIUS_CASES",
    "binned_truth",
    "futami_logistic",
    "gaussian_mixture",
]
