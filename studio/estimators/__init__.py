"""The Estimators page's sections (``pages/7_Estimators.py`` keeps the settings widgets and the order).

==================  =============================================================
module              what it holds
==================  =============================================================
``settings``        the page's settings as one object, the per-model plans and their notes
``estimates``       the progress bar, the table of binless estimates (computed and shown)
``sections``        decompositions, the bound chain, the smoothed reliability curve, the notes
==================  =============================================================

The cached calib_core calls are in :mod:`studio.compute_estimators`, the
figures in :mod:`calib_core.plot.figures_estimators`.
"""
