"""Plotting: the app's figures from Python, for notebooks and reports (Plotly, the optional ``plot`` extra).

``cc.plot.reliability(probs, labels, n_bins=15)`` returns the figure the
Reliability page draws; likewise :func:`per_class`, :func:`bin_sensitivity`,
:func:`simplex` and :func:`recalibration`. Each computes with calib_core and
draws with the page's own builder; the builders take computed tables (several
models at once) and are public too. Importing this package does not import
Plotly: a figure asked for without it raises ImportError saying how to install it.

=========================  ==========================================================
module                     what lives there
=========================  ==========================================================
``draw``                   the one-call figures above (compute, then build)
``figures``                reliability diagrams, per-class bars, bin sensitivity, ranks, intervals
``figures_decisions``      the Deployment page: decision curves, prevalence, the label planner's power
``figures_estimators``     the Estimators page: estimates, decompositions, smooth curves
``figures_groups``         the Groups page: per-group bars and reliability
``figures_lab``            the Lab page: simulated ground truth, size and power
``figures_recalibration``  the Recalibration page: temperature surface, ranks, changes
``figures_selective``      selective prediction: the risk-coverage curve with its bootstrap band
``figures_simplex``        the two-dimensional reliability diagram on the triangle
``text``                   user text in a figure, shown as written (``plot_text``)
=========================  ==========================================================
"""
from calib_core.plot.draw import bin_sensitivity, per_class, recalibration, reliability, simplex

__all__ = ["bin_sensitivity", "per_class", "recalibration", "reliability", "simplex"]
