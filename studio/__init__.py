"""App-support package of calibration studio (the Streamlit app).

* :mod:`studio.nav` -- the list of pages shown in the sidebar (one place).
* :mod:`studio.state` -- the loaded models, kept under one ``st.session_state`` key.
* :mod:`studio.compute` -- every calib_core call the pages make, wrapped in ``st.cache_data``.
* :mod:`studio.figures` -- Plotly figures built from calib_core results (no streamlit).
* :mod:`studio.layout` -- page set-up and the shared sidebar every page calls first.

calib_core stays free of streamlit; the pages stay thin.
"""
