"""The Lab page's tools, one module per tab of ``pages/8_Lab.py``.

==================  =============================================================
module              what it shows
==================  =============================================================
``jobs``            progress bar and Stop button of the long runs (shared)
``simulation``      estimators on models with a known truth; Futami & Fujisawa's bounds
``size_power``      measured size and power of the calibration tests
``subsets``         every metric on subsets of the user's data, and which are stable
``rank_stability``  rank stability of the 32 GCE variants across bin counts
``gallery``         the pathology gallery
==================  =============================================================

The modules hold widgets and rendering only: the cached calib_core calls are
in :mod:`studio.compute_lab`, the figures in :mod:`calib_core.plot.figures_lab`.
"""
