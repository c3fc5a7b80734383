"""The deployment and decision sections of ``report`` (JSON, text) and of the HTML report (issue 28).

One place computes them, so the command line's JSON and table and the HTML
report (``studio/report_decisions.py``) show the same numbers:

* :func:`deployment_report` - a second file of predictions on the
  deployment's unlabelled rows (:func:`calib_core.io.unlabelled.load_unlabelled`):
  the deployment's class prevalence by EM and by BBSE with bootstrap intervals
  (:func:`calib_core.estimate_prevalence`), its test of no shift (black-box
  shift detection on the predictions, labelled vs unlabelled), and every
  registered metric re-weighted to the deployment (each labelled row weighs
  its class's ``pi_deployment / pi_test``, from the EM estimate).
* :func:`decision_report` - for a threshold or a cost matrix, the decision
  curve before and after cross-fitted recalibration
  (:func:`calib_core.decision_curve`) and the value of recalibrating
  (:func:`calib_core.recalibration_value`).

Weights of a ``--weight-column`` weight both sections: the decision section
through ``sample_weight=`` of :func:`calib_core.decision_curve` and
:func:`calib_core.recalibration_value`, the deployment section through
``sample_weight=`` of :func:`calib_core.estimate_prevalence` (the labelled
rows' weights; the deployment's rows count one each) and, for the metrics
re-weighted to the deployment, each labelled row's weight times its class's
importance weight.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from calib_core.engines.cli_common import json_number as _finite
from calib_core.io.unlabelled import UnlabelledPredictions
from calib_core.metrics.reports import MetricReport, metric_report
from calib_core.recalibration.decisions import (DecisionCurve, RecalibrationValue, decision_curve,
                                                recalibration_value)
from calib_core.recalibration.label_shift import PREVALENCE_METHODS, PrevalenceEstimate, estimate_prevalence
from calib_core.validation import CalibrationInputError

__all__ = ["DecisionReport", "DeploymentReport", "decision_json", "decision_lines", "decision_report",
           "deployment_json", "deployment_lines", "deployment_report", "read_cost_matrix"]

#: The recalibration of the decision views (the Deployment page's default).
DECISION_METHOD = "Temperature scaling"
#: The prevalence estimate whose importance weights re-weight the metrics.
REWEIGHT_BY = "em"


def _numbers(values) -> list[float | None]:
    return [_finite(float(v)) for v in np.asarray(values, dtype=np.float64)]


def _refuse(predictions, what: str) -> None:
    """What a section cannot take: confidence files (no classes acted on)."""
    if getattr(predictions, "kind", "classes") == "confidence":
        raise CalibrationInputError(f"{what} needs a file of class probabilities; this is a confidence file "
                                    "(stated confidence and correctness).")


# ----------------------------------------------------------------------------- deployment

@dataclass(frozen=True)
class DeploymentReport:
    """The deployment section (:func:`deployment_report`).

    Attributes
    ----------
    unlabelled : UnlabelledPredictions
    estimates : dict
        ``{"em": PrevalenceEstimate or reason, "bbse": ...}`` (a str when that method cannot estimate here).
    reweighted : MetricReport or None
        Every metric with the labelled rows weighted to the EM estimate (None when the EM failed).
    weighted : bool
        Whether the labelled rows carry the model's row weights (``--weight-column``).
    """

    unlabelled: UnlabelledPredictions
    estimates: dict[str, PrevalenceEstimate | str]
    reweighted: MetricReport | None
    weighted: bool = False


def deployment_report(predictions, unlabelled: UnlabelledPredictions, *, n_boot: int, seed: int, alpha: float,
                      n_bins: int, binning: str, max_quadratic_rows: int | None) -> DeploymentReport:
    """The deployment's prevalence (EM and BBSE), the no-shift test and the metrics re-weighted to it (the labelled
    rows weighted by the model's row weights, when it has them)."""
    _refuse(predictions, "--deployment")
    if unlabelled.probs.shape[1] != predictions.n_classes:
        raise CalibrationInputError(f"the deployment file has {unlabelled.probs.shape[1]} classes, the labelled "
                                    f"file {predictions.n_classes}.")
    estimates: dict[str, PrevalenceEstimate | str] = {}
    for method in PREVALENCE_METHODS:
        try:
            estimates[method] = estimate_prevalence(unlabelled.probs, method=method, probs_labelled=predictions.probs,
                                                    labels=predictions.labels, n_boot=n_boot, seed=seed, alpha=alpha,
                                                    sample_weight=predictions.sample_weight)
        except CalibrationInputError as exc:
            estimates[method] = " ".join(str(exc).split())
    reweighted = None
    chosen = estimates[REWEIGHT_BY]
    if isinstance(chosen, PrevalenceEstimate):
        reweighted = metric_report(predictions.probs, predictions.labels, n_bins=n_bins, binning=binning,
                                   max_quadratic_rows=max_quadratic_rows,
                                   sample_weight=deployment_weights(chosen, predictions))
    return DeploymentReport(unlabelled, estimates, reweighted, predictions.sample_weight is not None)


def deployment_weights(estimate: PrevalenceEstimate, predictions) -> np.ndarray:
    """The labelled rows' weights to the deployment: the class's importance weight
    (:meth:`calib_core.PrevalenceEstimate.sample_weight`) times the row's own weight when the model has them."""
    weights = estimate.sample_weight(predictions.labels)
    return weights if predictions.sample_weight is None else weights * predictions.sample_weight


def _estimate_json(estimate: PrevalenceEstimate | str) -> dict:
    if isinstance(estimate, str):
        return {"prevalence": None, "ci_low": None, "ci_high": None, "reason": estimate}
    return {"prevalence": _numbers(estimate.prevalence), "ci_low": _numbers(estimate.ci_low),
            "ci_high": _numbers(estimate.ci_high), "n_boot": estimate.n_boot, "alpha": estimate.alpha,
            "converged": estimate.converged, "iterations": estimate.iterations, "notes": list(estimate.notes),
            "interval_holds": estimate.interval_holds,
            "em_bias": None if estimate.em_bias is None else _numbers(estimate.em_bias)}


def deployment_json(report: DeploymentReport, class_names, *, file: str) -> dict:
    """The ``deployment`` section of the JSON (and of the HTML report's data)."""
    first = next((e for e in report.estimates.values() if isinstance(e, PrevalenceEstimate)), None)
    em = report.estimates["em"]
    test = ({"method": em.shift_test,
             "statistic": _finite(em.shift_statistic), "p_value": _finite(em.shift_p_value), "alpha": em.alpha,
             "shift_detected": em.shift_detected} if isinstance(em, PrevalenceEstimate) else
            {"statistic": None, "p_value": None, "shift_detected": None, "reason": em})
    section = {
        "file": file, "n_rows": report.unlabelled.n_samples, "columns": list(report.unlabelled.columns),
        "notes": list(report.unlabelled.notes), "classes": [str(c) for c in class_names],
        "assumption": first.assumption if first is not None else None,
        "test_set_prevalence": None if first is None else _numbers(first.source_prevalence),
        "estimates": {method: _estimate_json(e) for method, e in report.estimates.items()},
        "no_shift_test": test,
    }
    if report.weighted:
        section["weighted"] = True  # the labelled rows carry their row weights (as the decision section says it)
    if report.reweighted is not None:
        section["reweighted"] = {
            "by": REWEIGHT_BY, "class_weights": _numbers(em.class_weights),
            "metrics": {k: _finite(v) for k, v in report.reweighted.values.items()},
            "reasons": dict(report.reweighted.reasons), "unreliable": dict(report.reweighted.unreliable)}
    return section


def _interval(section: dict, k: int) -> str:
    if section["prevalence"] is None:
        return "n/a"
    value, low, high = section["prevalence"][k], section["ci_low"][k], section["ci_high"][k]
    flag = "!" if section.get("interval_holds") is False else ""  # the interval fails the EM's calibration check
    return f"{value:.3f}" + (f" [{low:.3f}, {high:.3f}]{flag}" if low is not None else "")


def deployment_lines(section: dict, names: dict[str, str]) -> list[str]:
    """The deployment section as table lines (``names``: each metric's name with its settings)."""
    level = f"{1 - section['no_shift_test'].get('alpha', 0.05):.0%}"
    lines = [f"deployment {section['file']}: {section['n_rows']:,} unlabelled rows",
             f"  assumption: {section['assumption'] or 'label shift'}"]
    if section.get("weighted"):
        lines.append("  row weights: the labelled rows are weighted (test-set prevalence = weighted class shares, the "
                     "EM's calibration check, BBSE and the no-shift test with them); the deployment's rows count once")
    lines += [f"  note: {n}" for n in section["notes"]]
    width = max(len(c) for c in section["classes"])
    estimates = section["estimates"]
    lines.append(f"  {'class':<{width}}  {'test set':>8}  {'EM [' + level + ']':<24}  BBSE [{level}]")
    for k, name in enumerate(section["classes"]):
        source = section["test_set_prevalence"]
        shown = f"{source[k]:.3f}" if source is not None else "n/a"
        lines.append(f"  {name:<{width}}  {shown:>8}  {_interval(estimates['em'], k):<24}  "
                     f"{_interval(estimates['bbse'], k)}")
    lines += [f"  {method}: n/a -- {e['reason']}" for method, e in estimates.items() if e["prevalence"] is None]
    lines += [f"  {method}: its interval (marked !) does not hold -- see its first note"
              for method, e in estimates.items() if e.get("interval_holds") is False]
    for method, e in estimates.items():
        lines += [f"  {method} note: {n}" for n in e.get("notes", [])]
    test = section["no_shift_test"]
    if test["p_value"] is None:
        lines.append(f"  no-shift test: n/a -- {test.get('reason', 'not available')}")
    else:
        found = "a shift" if test["shift_detected"] else "no evidence of a shift"
        # the numbers and wording of PrevalenceEstimate.sentence (the page and the HTML report)
        lines.append(f"  no-shift test ({test['method']}): statistic {test['statistic']:.3g}, "
                     f"p = {test['p_value']:.3g}: {found} at alpha = {test['alpha']:g}")
    reweighted = section.get("reweighted")
    if reweighted is not None:
        lines.append("  metrics re-weighted to the deployment (each labelled row weighs its class's "
                     "EM prevalence / test-set prevalence" + (", times its row weight" if section.get("weighted")
                                                              else "") + "):")
        values = reweighted["metrics"]
        width = max((len(names.get(k, k)) for k, v in values.items() if v is not None), default=0)
        lines += [f"    {names.get(k, k):<{width}}  {v:.6f}" for k, v in values.items() if v is not None]
        # importance weights are fractional: the metrics defined on repeated rows refuse them (one line, not 20)
        whole = [k for k in values if values[k] is None and "whole numbers" in reweighted["reasons"].get(k, "")]
        if whole:
            lines.append(f"    not re-weighted: {', '.join(whole)} -- the importance weights are fractional and "
                         "these metrics take whole-number weights only (docs/weights.md)")
        lines += [f"    {names.get(k, k)}: n/a -- {reweighted['reasons'].get(k, 'not available')}"
                  for k in values if values[k] is None and k not in whole]
    return lines


# ----------------------------------------------------------------------------- decisions

def read_cost_matrix(path: str) -> tuple[list[list[float]], str | None]:
    """A cost matrix file: JSON, either ``[[...], ...]`` or ``{"costs": [[...], ...], "units": "..."}``.

    Rows are actions (the first: do not act), columns the true classes in the
    file's class order; ``units`` names the costs' units.
    """
    try:
        with open(path, "rb") as handle:
            document = json.loads(handle.read(1_000_001)[:1_000_000])
    except (ValueError, UnicodeDecodeError) as exc:
        raise CalibrationInputError(f"the cost matrix file {path} is not JSON ({exc}).") from None
    units = None
    if isinstance(document, dict):
        units = document.get("units")
        if units is not None and not isinstance(units, str):
            raise CalibrationInputError(f"`units` of the cost matrix file {path} must be text.")
        document = document.get("costs")
    if not (isinstance(document, list) and document and all(isinstance(row, list) for row in document)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for row in document for v in row)):
        raise CalibrationInputError(f"the cost matrix file {path} must hold a list of rows of numbers (one row per "
                                    "action, one column per class), or {\"costs\": [...], \"units\": \"...\"}.")
    return document, units


@dataclass(frozen=True)
class DecisionReport:
    """The decision section (:func:`decision_report`).

    Attributes
    ----------
    curve : DecisionCurve or None
        None for a cost matrix of a model with more than two classes.
    value : RecalibrationValue
    threshold : float or None
    cost_matrix : list of list of float, or None
    """

    curve: DecisionCurve | None
    value: RecalibrationValue
    threshold: float | None
    cost_matrix: list[list[float]] | None


def decision_report(predictions, *, threshold: float | None, cost_matrix=None, units: str | None = None,
                    n_boot: int, seed: int, alpha: float, method: str = DECISION_METHOD) -> DecisionReport:
    """The decision curve (binary) and the value of recalibrating at ``threshold`` or under ``cost_matrix``."""
    _refuse(predictions, "--threshold/--cost-matrix")
    common = dict(logits=predictions.logits, method=method, n_boot=n_boot, seed=seed, alpha=alpha,
                  sample_weight=predictions.sample_weight)
    curve = None
    if predictions.n_classes == 2 or threshold is not None:
        curve = decision_curve(predictions.probs, predictions.labels, **common)
    value = recalibration_value(predictions.probs, predictions.labels, threshold=threshold,
                                cost_matrix=None if cost_matrix is None else np.asarray(cost_matrix, dtype=float),
                                units=units, **common)
    return DecisionReport(curve, value, threshold, cost_matrix)


def decision_json(report: DecisionReport, class_names) -> dict:
    """The ``decisions`` section of the JSON (and of the HTML report's data)."""
    value = report.value
    section = {
        "method": value.method, "protocol": value.protocol, "n_boot": value.n_boot, "alpha": value.alpha,
        "threshold": report.threshold, "cost_matrix": report.cost_matrix,
        "value": {"value": _finite(value.value), "ci_low": _finite(value.ci_low), "ci_high": _finite(value.ci_high),
                  "cost_before": _finite(value.cost_before), "cost_after": _finite(value.cost_after),
                  "changed": _finite(value.changed), "per": value.per, "units": value.units,
                  "sentence": value.sentence()},
        "curve": None,
    }
    if value.weighted:
        section["weighted"] = True
    if report.curve is not None:
        curve = report.curve
        section["positive_class"] = str(class_names[curve.positive_class])
        section["curve"] = {column: _numbers(curve.table[column]) for column in curve.table.columns}
    return section


def decision_lines(section: dict) -> list[str]:
    """The decision section as table lines."""
    rule = (f"act when P({section.get('positive_class', '1')}) >= {section['threshold']:g}"
            if section["threshold"] is not None else "the cost matrix's least-cost action")
    lines = [f"decisions ({rule}; recalibrated: {section['method']}, {section['protocol']}):",
             f"  {section['value']['sentence']}"]
    curve = section["curve"]
    if curve is not None:
        level = f"{1 - section['alpha']:.0%}"
        lines.append(f"  net benefit (Vickers & Elkin 2006) at selected thresholds, {level} intervals:")
        lines.append(f"    {'t':>5}  {'treat all':>9}  {'current':>26}  {'recalibrated':>26}")
        wanted = {0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9}
        if section["threshold"] is not None:
            wanted.add(round(section["threshold"], 2))
        for i, t in enumerate(curve["threshold"]):
            if round(t, 2) not in wanted:
                continue
            cells = []
            for name in ("before", "after"):
                low = curve[f"{name}_low"][i]
                cells.append(f"{curve[name][i]:+.4f}" + (f" [{low:+.4f}, {curve[name + '_high'][i]:+.4f}]"
                                                        if low is not None else ""))
            lines.append(f"    {t:>5.2f}  {curve['treat_all'][i]:>+9.4f}  {cells[0]:>26}  {cells[1]:>26}")
    return lines
