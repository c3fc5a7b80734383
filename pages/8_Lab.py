"""Lab: how far a calibration number can be trusted.

Simulations with a known truth, the size and power of the calibration tests,
a test-set-size study on the user's own data, bin-count rank stability and a
gallery of pathologies: one tab each, drawn by the modules of
:mod:`studio.lab`. Long runs advance one chunk per script run with a progress
bar and a Stop button (see :mod:`studio.compute_lab` for why that pattern
stops reliably).
"""
import streamlit as st

from studio import layout
from studio.deployment import planner_section
from studio.lab.gallery import pathology_gallery
from studio.lab.rank_stability import rank_stability
from studio.lab.simulation import simulation_lab
from studio.lab.size_power import size_power_section
from studio.lab.subsets import your_data

TABS = ["Simulation lab", "Calibration tests: size and power", "Your data: test-set size", "Bin-count rank stability",
        "Pathology gallery", "How many labels"]

models = layout.setup_page("Lab")
st.title("Lab: how far can a calibration number be trusted?")
st.markdown(
    "Every calibration error you compute is an *estimate* from a finite test set, and estimators differ in how "
    "wrong they are. Try them on simulated models whose true error is known, check how stable your own "
    "numbers are, and see the classic traps.")
tabs = layout.linked_tabs(TABS, key="lab_tool", name="Lab tool")
sections = (simulation_lab, size_power_section, lambda: your_data(models), lambda: rank_stability(models),
            pathology_gallery, lambda: planner_section(models, key="lab_plan"))
for tab, section in zip(tabs, sections):
    if tab.open:  # only the open tab runs
        with tab:
            section()
