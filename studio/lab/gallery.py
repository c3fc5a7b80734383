"""The Lab's pathology gallery: cases where a calibration number misleads, computed live."""
import pandas as pd
import streamlit as st

from studio import compute_lab as cl


def fmt_number(value: float) -> str:
    return f"{value:.4g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.2e}"


def pathology_gallery() -> None:
    st.markdown("Cases where a calibration number misleads, each with its numbers computed live. Open one.")
    for case in cl.gallery():
        box = st.expander(case.title, key=f"lab:case:{case.key}", on_change="rerun", icon=":material/warning:")
        with box:
            if box.open is False:
                continue
            st.markdown(case.explanation)
            st.caption(f"Source: {case.reference}")
            with st.spinner("Computing …"):
                numbers = cl.pathology_numbers(case.key)
            documented = [k for k in case.documented if k in numbers]
            if documented:
                cells = st.columns(min(len(documented), 4))
                for cell, key in zip(cells, documented):
                    cell.metric(key.replace("_", " "), fmt_number(numbers[key]),
                                help=f"The paper: {case.documented[key]:g}.")
            frame = pd.DataFrame({"quantity": [k.replace("_", " ") for k in numbers],
                                  "computed now": list(numbers.values()),
                                  "stated in the paper": [f"{case.documented[k]:g}" if k in case.documented else ""
                                                          for k in numbers]})
            st.dataframe(frame, hide_index=True, width="stretch", height=35 * (len(frame) + 1) + 3,
                         column_config={"computed now": st.column_config.NumberColumn(format="%.4f")})
