"""App-support package of calibration studio (the Streamlit app).

* :mod:`studio.nav` -- the list of pages shown in the sidebar (one place).
* :mod:`studio.state` -- the loaded models, kept under one ``st.session_state`` key.
* :mod:`studio.compute` -- every calib_core call the pages make, wrapped in ``st.cache_data``.
* :mod:`calib_core.plot.figures` -- Plotly figures built from calib_core results (no streamlit).
* :mod:`studio.layout` -- page set-up and the shared sidebar every page calls first.
* ``compute_*.py`` / ``figures_*.py`` -- the cached calls and the figures of one page each.
* :mod:`studio.lab`, :mod:`studio.estimators`, :mod:`studio.recalibration`,
  :mod:`studio.simplex` -- the sections of the larger pages, so that each page file
  keeps its widgets and layout only.
* :mod:`studio.report` -- the one-file HTML report (no streamlit; also used by the CLI).

calib_core stays free of streamlit; the pages stay thin.
"""
