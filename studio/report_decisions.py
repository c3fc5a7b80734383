"""The HTML report's "Decisions" and "Deployment" sections (issue 28).

The numbers come from :mod:`calib_core.engines.decisions_report`, the same
computation as ``calib-core report --threshold/--cost-matrix/--deployment
--json``, so the report and the command line agree; the charts from
:mod:`calib_core.plot.figures_decisions`, as on the Deployment page. Every
user-supplied string (model, class, file names) is escaped by the report's
helpers.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from calib_core.engines import decisions_report
from calib_core.io.unlabelled import load_unlabelled
from calib_core.plot import figures_decisions
from calib_core.recalibration.label_shift import PrevalenceEstimate
from calib_core.validation import CalibrationInputError

__all__ = ["DecisionInputs", "decisions_html"]


@dataclass(frozen=True)
class DecisionInputs:
    """What the decision and deployment sections are made for.

    Attributes
    ----------
    threshold : float, optional
        Act when P(class 1) >= threshold (binary models).
    cost_matrix : list of list of float, optional
        One row per action, one column per class (instead of ``threshold``).
    units : str, optional
        The cost matrix's units.
    deployment : bytes, optional
        The file of the model's predictions on the deployment's unlabelled
        rows (read for each model against its classes,
        :func:`calib_core.io.unlabelled.load_unlabelled`).
    deployment_file : str
        Its name, as shown (its extension picks the reader).
    """

    threshold: float | None = None
    cost_matrix: list[list[float]] | None = None
    units: str | None = None
    deployment: bytes | None = None
    deployment_file: str = ""

    @property
    def decides(self) -> bool:
        return self.threshold is not None or self.cost_matrix is not None


def _decisions(model, settings, inputs: DecisionInputs, chart: Callable[[str, str, object], str]) -> tuple[str, dict]:
    from studio.report import _e

    p = model.predictions
    found = decisions_report.decision_report(p, threshold=inputs.threshold, cost_matrix=inputs.cost_matrix,
                                             units=inputs.units, n_boot=settings.n_boot, seed=settings.seed,
                                             alpha=settings.alpha)
    data = decisions_report.decision_json(found, p.class_names)
    parts = [f"<p class='decision-value'>{_e(data['value']['sentence'])}</p>",
             f"<p class='note'>Recalibrated: {_e(data['method'])}, {_e(data['protocol'])}</p>"]
    if found.curve is not None:
        name = str(p.class_names[found.curve.positive_class])
        parts.append(chart("decisions", f"{model.name}: decision curve (net benefit, Vickers & Elkin 2006) before "
                           f"and after recalibration, {found.curve.n_boot} paired bootstrap resamples",
                           figures_decisions.decision_curve_figure(found.curve, class_name=name)))
    return "".join(parts), data


def _deployment(model, settings, inputs: DecisionInputs, chart: Callable[[str, str, object], str]) -> tuple[str, dict]:
    from studio.report import _e, _num, _table

    p = model.predictions
    unlabelled = load_unlabelled(inputs.deployment, p.class_names, name=inputs.deployment_file)
    found = decisions_report.deployment_report(p, unlabelled, n_boot=settings.n_boot, seed=settings.seed,
                                               alpha=settings.alpha, n_bins=settings.n_bins, binning=settings.binning,
                                               max_quadratic_rows=settings.max_quadratic_rows)
    data = decisions_report.deployment_json(found, p.class_names, file=inputs.deployment_file)
    level = f"{1 - settings.alpha:.0%}"
    parts = [f"<p class='note'>{_e(inputs.deployment_file)}: {data['n_rows']:,} unlabelled rows. Assumption: "
             f"{_e(data['assumption'] or 'label shift')}.</p>"]
    parts += [f"<p class='note'>{_e(n)}</p>" for n in data["notes"]]
    if data.get("weighted"):
        parts.append("<p class='note'>Row weights: the labelled rows are weighted (the test-set prevalence is their "
                     "weighted class shares; the EM's calibration check, BBSE and the no-shift test use the weights); "
                     "the deployment's rows count once each.</p>")
    for method, estimate in found.estimates.items():
        if isinstance(estimate, PrevalenceEstimate):
            parts.append(f"<p>{_e(estimate.sentence([str(c) for c in p.class_names]))}</p>")
            parts += [f"<p class='note'>{_e(n)}</p>" for n in estimate.notes]
        else:
            parts.append(f"<p class='note'>{method.upper()}: not available: {_e(estimate)}</p>")
    estimates = data["estimates"]
    rows = [(c, _num(data["test_set_prevalence"][k], 4) if data["test_set_prevalence"] else "n/a",
             *(f"{_num(e['prevalence'][k], 4)} [{_num(e['ci_low'][k], 4)}, {_num(e['ci_high'][k], 4)}]"
               + (" (interval does not hold)" if e.get("interval_holds") is False else "")
               if e["prevalence"] is not None else "n/a" for e in estimates.values()))
            for k, c in enumerate(data["classes"])]
    parts.append(_table(("class", "test set", f"EM [{level}]", f"BBSE [{level}]"), rows, cls="deployment"))
    em = found.estimates["em"]
    if isinstance(em, PrevalenceEstimate):
        parts.append(chart("deployment", f"{model.name}: test-set and estimated deployment prevalence (EM)",
                           figures_decisions.prevalence_figure(em, p.class_names)))
    reweighted = data.get("reweighted")
    if reweighted is not None:
        from calib_core.metrics.registry import metric_name

        rows = [(metric_name(k, n_bins=settings.n_bins, binning=settings.binning), _num(v) if v is not None else
                 f"n/a: {reweighted['reasons'].get(k, '')}") for k, v in reweighted["metrics"].items()]
        parts.append("<p>Every metric with each labelled row weighing its class's EM prevalence / test-set "
                     "prevalence" + (" times its row weight" if data.get("weighted") else "") + ": the calibration the model would have where it is deployed (under label shift, "
                     "without recalibrating for it).</p>" + _table(("metric", "re-weighted to the deployment"), rows,
                                                                   cls="reweighted"))
    return "".join(parts), data


def decisions_html(models: Sequence, settings, inputs: DecisionInputs,
                   chart: Callable[[str, str, object], str]) -> tuple[str, list[dict]]:
    """The HTML of the two sections and their data per model (``chart(section, caption, figure)`` draws a chart).

    A model for which a section cannot be made (e.g. a decision curve of a
    three-class model at a threshold) gets the reason as a note; the rest of
    the report is made.
    """
    from studio.report import _e, _model_heading

    data: list[dict] = [{"model": m.name} for m in models]
    html = []
    for title, key, make, wanted in (("Decisions", "decisions", _decisions, inputs.decides),
                                     ("Deployment", "deployment", _deployment, inputs.deployment is not None)):
        if not wanted:
            continue
        html.append(f"<h2>{title}</h2>")
        for model, entry in zip(models, data):
            try:
                part, entry[key] = make(model, settings, inputs, chart)
            except CalibrationInputError as exc:
                part, entry[key] = f"<p class='note'>Not available: {_e(exc)}</p>", {"reason": str(exc)}
            html.append(_model_heading(model) + part)
    return "".join(html), data
