"""The Recalibration page's sections (``pages/6_Recalibration.py`` keeps the settings widgets and the order).

==================  =============================================================
module              what it holds
==================  =============================================================
``fitting``         the fits of every method on every model (with progress), the intervals, one result per model
``results``         the verdicts, the model shown in detail, its tables and the change chart
``charts``          reliability diagrams and simplex views before and after, the temperature surface, the
                    ranking under the 32 GCE variants, the downloads
==================  =============================================================

The modules hold widgets and rendering only: the science is
:mod:`calib_core.recalibration.compare` and :mod:`calib_core.recalibration.sweeps`,
cached by :mod:`studio.compute_recalibration`; the figures are in
:mod:`calib_core.plot.figures_recalibration`.
"""
