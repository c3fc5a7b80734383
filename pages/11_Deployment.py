"""Deployment: what miscalibration costs where the model is used.

Three sections (issue 28): the decision curve before and after recalibration
and the value of recalibrating in the user's units; the deployment's class
prevalence estimated from an uploaded file of unlabelled predictions; and how
many labelled rows a calibration check needs. The sections live in
:mod:`studio.deployment`.
"""
import streamlit as st

from studio import deployment, layout

TABS = ["Decisions", "Deployment prevalence", "How many labels"]

models = layout.setup_page("Deployment")
st.title("Deployment: what miscalibration costs")
st.markdown(
    "Calibration matters because decisions are taken on the probabilities, often where the classes occur at "
    "other rates than in the test set. See what recalibrating changes in those decisions, estimate the "
    "deployment's class balance from unlabelled predictions, and plan how many labels a check needs.")
layout.require_models(models)
tabs = layout.linked_tabs(TABS, key="deployment_tool", name="Deployment tool")
sections = (deployment.decisions_section, deployment.prevalence_section,
            lambda m: deployment.planner_section(m, key="deployment_plan"))
for tab, section in zip(tabs, sections):
    if tab.open:
        with tab:
            section(models)
