"""The Simplex page's sections (``pages/5_Simplex.py`` keeps the lens, distance and partition widgets and the order).

==================  =============================================================
module              what it holds
==================  =============================================================
``vertices``        the vertex pickers (three classes or three groups of classes) and their checks
``chart``           the two-dimensional reliability diagram, its caption and the per-cell table
``estimates``       canonical_ce of the model and of the triangle, their consistency bands and verdicts
==================  =============================================================

The modules hold widgets and rendering only: the cached calib_core calls are
in :mod:`studio.compute_simplex`, the figure in :mod:`calib_core.plot.figures_simplex`.
"""
