"""The Deployment page's sections, also used on the Metrics and Lab pages (the label planner).

Widgets and layout only: every number comes from calib_core through
:mod:`studio.compute_decisions`, every figure from :mod:`calib_core.plot.figures_decisions`.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

import calib_core as cc
from calib_core.plot import figures_decisions
from studio import compute_decisions, downloads, layout, state
from studio.text import md

#: Deployment files accepted by the uploader.
DEPLOYMENT_TYPES = ["csv", "tsv", "txt", "gz", "parquet", "pq"]
#: Recalibration methods offered for the decision views (cheap ones; the Recalibration page compares them all).
DECISION_METHODS = ("Temperature scaling", "Platt scaling", "Vector scaling", "Isotonic regression")


def _model_picker(models: list[state.ModelView], model_key: str, column=st) -> state.ModelView:
    index = layout.linked(column.selectbox, "Model", list(range(len(models))), index=0, key=model_key,
                          options=list(range(len(models))), format_func=lambda i: models[i].name)
    return models[index]


def _class_picker(model: state.ModelView, class_key: str, column=st) -> int:
    predictions = model.predictions
    options = [1] if predictions.n_classes == 2 else list(range(predictions.n_classes))
    return layout.linked(column.selectbox, "Class acted on (one against the rest)", options, index=0, key=class_key,
                         options=options, format_func=lambda k: str(predictions.class_names[k]),
                         disabled=predictions.n_classes == 2)


def decisions_section(models: list[state.ModelView]) -> None:
    """Decision curve before/after recalibration and the value of recalibrating at a threshold or cost matrix."""
    st.markdown(
        "A probability is used by acting on it. The **decision curve** (Vickers & Elkin 2006) gives, at each "
        "threshold t, the net benefit of acting when P ≥ t: true positives minus false positives weighted by "
        "t / (1 − t), per row (per unit of weight for a weighted model), against acting on everyone (*treat all*) or no one (*treat none*). *Recalibrated* "
        "is out of fold: each row is recalibrated by a map fitted on the other four folds (the Recalibration "
        "page's cross-fitting), so its gain is not optimism. Bands: paired percentile bootstrap.")
    cols = st.columns([3, 3, 3, 2])
    model = _model_picker(models, "decision_model", cols[0])
    positive = _class_picker(model, "decision_class", cols[1])
    method = layout.linked(cols[2].selectbox, "Recalibration", list(DECISION_METHODS), index=0,
                           key="decision_method", options=list(DECISION_METHODS))
    n_boot = layout.linked(cols[3].selectbox, "Bootstrap resamples", [0, 100, 200, 500], index=2,
                           key="decision_boot", options=[0, 100, 200, 500])
    predictions = model.predictions
    class_name = str(predictions.class_names[positive])
    try:
        curve = compute_decisions.decision_curve(predictions, model.fingerprint, int(positive), method, int(n_boot),
                                                 0, 0.05)
    except cc.CalibrationInputError as exc:
        st.error(f"No decision curve for {md(model.name)}: {md(str(exc))} Try another recalibration method.")
        return
    st.plotly_chart(figures_decisions.decision_curve_figure(curve, class_name=class_name), theme=None,
                    key="decision_curve_chart",
                    config=downloads.chart_config("Deployment", model.name, "decision curve", class_name, method))
    st.caption(md(curve.protocol))

    st.markdown("**What recalibration is worth in your decisions.** Give the threshold you act at, or the cost of "
                "each outcome in your own units (money, hours, harm).")
    rule = layout.linked(st.radio, "Decision rule", ["Threshold", "Cost matrix"], index=0, key="decision_rule",
                         horizontal=True, options=["Threshold", "Cost matrix"])
    threshold = costs = None
    units = ""
    if rule == "Threshold":
        threshold = float(layout.linked(st.number_input, "Act when P ≥", min_value=0.01, max_value=0.99, value=0.5,
                                        step=0.01, format="%.2f", key="decision_threshold"))
    else:
        c1, c2, c3 = st.columns(3)
        miss = float(c1.number_input("Cost of not acting on a positive (miss)", min_value=0.0, value=10.0,
                                     key="decision_cost_miss"))
        alarm = float(c2.number_input("Cost of acting on a negative (false alarm)", min_value=0.0, value=1.0,
                                      key="decision_cost_alarm"))
        units = c3.text_input("Units", value="cost units", max_chars=40, key="decision_units")
        costs = ((0.0, miss), (alarm, 0.0))  # rows: do not act, act; columns: negative, positive (this class)
    try:
        if predictions.n_classes == 2 or threshold is not None:
            value = compute_decisions.recalibration_value(
                predictions, model.fingerprint, int(positive), threshold, costs, units, method, int(n_boot), 0, 0.05)
        else:  # one-vs-rest cost matrix: expand to K classes (every other class is a negative)
            k = predictions.n_classes
            full = tuple(tuple(costs[a][1] if j == positive else costs[a][0] for j in range(k)) for a in range(2))
            value = compute_decisions.recalibration_value(
                predictions, model.fingerprint, None, None, full, units, method, int(n_boot), 0, 0.05)
    except cc.CalibrationInputError as exc:
        st.error(f"Cannot value recalibration for {md(model.name)}: {md(str(exc))}")
        return
    st.info(md(value.sentence()), icon=":material/payments:")


def prevalence_section(models: list[state.ModelView]) -> None:
    """Upload unlabelled deployment predictions: the estimated prevalence, the no-shift test, the re-weighted views."""
    st.markdown(
        "Upload the model's predictions on **unlabelled** rows from where it is deployed (same class columns as "
        "the labelled file, no label needed). Under **label shift** (the class prevalences change, p(x | y) does "
        "not) the deployment's prevalence is estimated from them: by EM (Saerens et al. 2002), which needs "
        "predictions calibrated on the test set, recalibrate first if they are not (Alexandari et al. 2020 "
        "recommend bias-corrected temperature scaling), or by black-box shift estimation (Lipton et al. 2018), "
        "which needs only the labelled test set's confusion matrix.")
    cols = st.columns([3, 2, 2])
    model = _model_picker(models, "deployment_model", cols[0])
    method = layout.linked(cols[1].radio, "Method", ["em", "bbse"], index=0, key="deployment_method",
                           options=["em", "bbse"], format_func=lambda m: "EM" if m == "em" else "BBSE",
                           horizontal=True)
    n_boot = layout.linked(cols[2].selectbox, "Bootstrap resamples", [0, 100, 200, 500], index=2,
                           key="deployment_boot", options=[0, 100, 200, 500])
    upload = st.file_uploader("Deployment predictions (unlabelled)", type=DEPLOYMENT_TYPES, key="deployment_file")
    if upload is None:
        st.caption("No deployment file yet.")
        return
    predictions = model.predictions
    names = tuple(str(c) for c in predictions.class_names)
    raw = upload.getvalue()
    try:
        unlabelled = compute_decisions.read_unlabelled(raw, upload.name, names)
        estimate = compute_decisions.prevalence(predictions, model.fingerprint, unlabelled,
                                                compute_decisions.file_key(raw), method, int(n_boot), 0, 0.05)
    except cc.CalibrationInputError as exc:
        st.error(f"{md(upload.name)}: {md(str(exc))} Fix the file and upload it again.")
        return
    st.markdown(md(estimate.sentence(list(names))))
    if estimate.interval_holds is False:  # calib_core's verdict; its first note says why
        st.warning(md(estimate.notes[0]), icon=":material/warning:")
    for note in estimate.notes[estimate.interval_holds is False:]:
        st.caption(md(note))
    st.plotly_chart(figures_decisions.prevalence_figure(estimate, names), theme=None, key="prevalence_chart",
                    config=downloads.chart_config("Deployment", model.name, "prevalence", method))
    table, note = compute_decisions.reweighted_metrics(predictions, model.fingerprint,
                                                      tuple(float(w) for w in estimate.class_weights), 15)
    st.markdown("**The test set re-weighted to the deployment.** Each labelled row weighs its class's "
                "π_deployment / π_test" + (" times its row weight (the test-set prevalence π_test, the EM's "
                                           "calibration check, BBSE and the no-shift test are weighted too; the "
                                           "deployment's rows count once each)"
                                           if predictions.sample_weight is not None else "") + ", so these views estimate the model's calibration where it is deployed "
                "(without recalibrating for the shift; `calib_core.adjust_prevalence` does that).")
    st.dataframe(table, hide_index=True, width="stretch", placeholder="n/a",
                 column_config={"test set": st.column_config.NumberColumn(format="%.4f"),
                                "re-weighted to the deployment": st.column_config.NumberColumn(format="%.4f")})
    if note:
        st.caption(md(note))
    if estimate.adjustment is not None:
        adjusted = estimate.adjustment.probs
        frame = {f"p_{name}": adjusted[:, k] for k, name in enumerate(names)}
        st.download_button("Download the predictions adjusted to the deployment prevalence (CSV)",
                           cc.csv_bytes(pd.DataFrame(frame)), file_name="deployment_adjusted.csv", mime="text/csv",
                           on_click="ignore", icon=":material/download:")


def planner_section(models: list[state.ModelView], *, key: str) -> None:
    """How many labelled rows the chosen test needs, and the smallest miscalibration detectable at the model's N."""
    st.markdown(
        "How many labelled rows would a calibration test need to detect a miscalibration of a given size in a "
        "model like this one? The planner simulates test sets from your model's own predictions, with labels "
        "drawn from the predictions tempered by T (T > 1: overconfident; the temperature temperature scaling "
        "would fit), and measures the test's power (`calib_core.plan_labels`).")
    cols = st.columns([3, 3, 2, 2])
    model = _model_picker(models, f"{key}_model", cols[0])
    test = layout.linked(cols[1].selectbox, "Test", list(cc.lab.size_power.TEST_LABELS), index=0, key=f"{key}_test",
                         options=list(cc.lab.size_power.TEST_LABELS),
                         format_func=lambda m: cc.lab.size_power.TEST_LABELS[m])
    kind = layout.linked(cols[2].radio, "Size to detect", ["ECE", "Temperature"], index=0, key=f"{key}_kind",
                         options=["ECE", "Temperature"])
    if kind == "ECE":
        size = float(layout.linked(cols[3].number_input, "True top-label ECE", min_value=0.005, max_value=0.5,
                                   value=0.03, step=0.005, format="%.3f", key=f"{key}_ece"))
    else:
        size = float(layout.linked(cols[3].number_input, "Temperature", min_value=1.01, max_value=10.0, value=1.5,
                                   step=0.05, format="%.2f", key=f"{key}_temperature"))
    predictions = model.predictions
    params = (model.fingerprint, test, kind, size)
    run_key = f"{key}_run"
    if st.button("Plan", key=f"{key}_button", icon=":material/calculate:"):
        st.session_state[run_key] = params
    if st.session_state.get(run_key) != params:
        st.caption("Press *Plan*: it simulates 100 test sets per size (seconds to a minute; the result is kept).")
        return
    try:
        with st.spinner("Simulating test sets like yours ..."):
            plan = compute_decisions.label_plan(predictions, model.fingerprint, test,
                                                size if kind == "Temperature" else None,
                                                size if kind == "ECE" else None, int(predictions.n_samples), 100, 0)
    except cc.CalibrationInputError as exc:
        st.error(f"Cannot plan for {md(model.name)}: {md(str(exc))}")
        return
    st.info(md(plan.sentence()), icon=":material/science:")
    page = key.split("_")[0].capitalize()  # the page the section is drawn on: its charts' file names start with it
    st.plotly_chart(figures_decisions.power_figure(plan), theme=None, key=f"{key}_power_chart",
                    config=downloads.chart_config(page, model.name, "power", test))
    if math.isfinite(plan.n_required) and plan.n_required > predictions.n_samples:
        st.caption(f"You have {predictions.n_samples:,} rows: about {plan.n_required - predictions.n_samples:,.0f} "
                   "more labelled rows would be needed for this power.")


def has_inconclusive(tests) -> bool:
    """Whether any verdict of the Metrics page's tests table is inconclusive."""
    return bool(np.any(tests["verdict"].astype(str) == "inconclusive")) if len(tests) else False
