"""The HTML report's confidence sections (issue 26): selective prediction and systems compared.

* ``"selective"`` -- per model, the risk-coverage curve with its pointwise bootstrap band
  (:func:`calib_core.risk_coverage`, :func:`calib_core.risk_coverage_band`), AUROC of confidence for correctness,
  AURC, E-AURC, AUGRC, the selective risk at :data:`COVERAGES`, the coverage at :data:`TARGET_RISK` on these
  rows, and the abstention threshold certified for it (:func:`calib_core.abstention_threshold`, Learn then Test)
  -- the numbers and sentences of the Reliability page's selective-prediction section. A K-class model enters
  through its top label, a confidence model through its stated confidence (:attr:`Predictions.confidence`).
* ``"systems"`` -- two or more confidence models: rows matched by item id
  (:func:`calib_core.io.systems.match_by_id`) and compared with paired intervals
  (:func:`calib_core.recalibration.paired.compare_systems`), the Metrics page's *Compare systems* section.

Pure functions; every user-supplied string is escaped by :func:`studio.report._e` / ``_table``.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import calib_core as cc
from calib_core.io.systems import match_by_id
from calib_core.recalibration.paired import compare_systems
from calib_core.validation import CalibrationInputError

__all__ = ["COVERAGES", "DELTA", "TARGET_RISK", "confidence_sections", "selective_html", "systems_html"]

#: Coverages at which the report gives the selective risk.
COVERAGES = (0.5, 0.8, 0.9, 1.0)
#: The target risk of the abstention threshold and its allowed failure probability (the app's defaults).
TARGET_RISK, DELTA = 0.1, 0.05


def _f(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _n(value: float | None, digits: int = 4) -> str:
    value = _f(value)
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ranking(confidence: np.ndarray, correct: np.ndarray, weights: np.ndarray | None) -> tuple[dict, dict]:
    """The four ranking areas, and calib_core's reason for each that has no value."""
    out, reasons = {}, {}
    for key, function in (("auroc", cc.auroc_correct), ("aurc", cc.aurc), ("eaurc", cc.eaurc),
                          ("augrc", cc.augrc)):
        try:
            out[key] = _f(function(confidence, correct, sample_weight=weights))
        except CalibrationInputError as exc:  # AUROC when every answer is right; fractional row weights
            out[key], reasons[key] = None, str(exc)
    return out, reasons


def selective_data(models, settings) -> tuple[list[dict], dict, dict, dict]:
    """Per model its selective numbers (plain data), and the curves, bands and thresholds for the figure."""
    rows, curves, bands, chosen = [], {}, {}, {}
    for model in models:
        p = model.predictions
        confidence, correct, w = p.confidence, p.correct, p.sample_weight  # weighted as the Reliability page
        curves[model.name] = cc.risk_coverage(confidence, correct, sample_weight=w)
        if settings.n_boot >= 2:
            bands[model.name] = cc.risk_coverage_band(confidence, correct, n_boot=min(settings.n_boot, 200),
                                                      alpha=settings.alpha, seed=settings.seed, sample_weight=w)
        try:
            found = cc.abstention_threshold(confidence, correct, TARGET_RISK, delta=DELTA, sample_weight=w)
            chosen[model.name] = found
            threshold = {"target_risk": TARGET_RISK, "delta": DELTA, "found": bool(found.found),
                         "threshold": _f(found.threshold) if found.found else None,
                         "coverage": _f(found.coverage), "risk": _f(found.risk),
                         "risk_upper": _f(found.risk_upper) if found.found else None, "guarantee": found.guarantee}
        except CalibrationInputError as exc:  # fractional row weights: calib_core says why
            threshold = {"target_risk": TARGET_RISK, "delta": DELTA, "found": False, "threshold": None,
                         "coverage": None, "risk": None, "risk_upper": None,
                         "guarantee": f"No certified threshold: {exc}"}
        risks = cc.selective_risk(confidence, correct, list(COVERAGES), sample_weight=w)
        ranking, reasons = _ranking(confidence, correct, w)
        rows.append({"model": model.name, "reads": "stated confidence" if p.kind == "confidence" else "top label",
                     **ranking, **({"reasons": reasons} if reasons and w is not None else {}),
                     "selective_risk": {f"{c:g}": _f(r) for c, r in zip(COVERAGES, risks)},
                     "coverage_at_target": _f(cc.coverage_at_risk(confidence, correct, TARGET_RISK,
                                                                  sample_weight=w)),
                     "threshold": threshold})
    return rows, curves, bands, chosen


def selective_html(models, settings, *, table: Callable, escape: Callable,
                   chart: Callable[[str, object], str]) -> tuple[str, list[dict]]:
    """The selective-prediction section as HTML (``table``/``escape``: the report's escaping helpers, ``chart``:
    its chart block for ``(caption, figure)``) and its numbers for the report's JSON."""
    from calib_core.plot.figures_selective import risk_coverage_figure

    rows, curves, bands, chosen = selective_data(models, settings)
    colors = {m.name: i for i, m in enumerate(models)}
    band = (f"Shaded: a {1 - settings.alpha:.0%} pointwise bootstrap band ({min(settings.n_boot, 200)} resamples, "
            f"seed {settings.seed})" if bands else "no band (no bootstrap resamples)")
    figure = risk_coverage_figure(curves, bands, colors=colors, chosen=chosen, target_risk=TARGET_RISK)
    head = ["model", "reads", "AUROC of confidence", "AURC", "E-AURC", "AUGRC",
            *[f"risk at {c:.0%} coverage" for c in COVERAGES], f"coverage at risk {TARGET_RISK:g} (these rows)",
            "certified threshold", "certified coverage", "risk bound"]
    body = [[r["model"], r["reads"], _n(r["auroc"]), _n(r["aurc"]), _n(r["eaurc"]), _n(r["augrc"]),
             *[_n(v) for v in r["selective_risk"].values()], _n(r["coverage_at_target"]),
             _n(r["threshold"]["threshold"]), _n(r["threshold"]["coverage"]), _n(r["threshold"]["risk_upper"])]
            for r in rows]
    notes = "".join(f"<p class='note'>{escape(r['model'])}: {escape(r['threshold']['guarantee'])}</p>" for r in rows)
    notes += "".join(f"<p class='note'>{escape(r['model'])}, {escape(key.upper())}: n/a: {escape(reason)}</p>"
                     for r in rows for key, reason in r.get("reasons", {}).items())
    html = ("<h2>Selective prediction: when to abstain</h2>"
            "<p class='note'>Answer only the most confident items: the error rate among the items answered "
            "(selective risk) at each coverage, most confident first; tied confidences enter together (the "
            f"expected value over their order). A K-class model enters through its top label. {escape(band)}. "
            f"The certified threshold is the lowest of a fixed grid whose exact binomial test, Bonferroni-corrected "
            f"over the grid, shows an error rate at most {TARGET_RISK:g} (Learn then Test, Angelopoulos et al. "
            f"2021): with probability at least {1 - DELTA:.0%}, for future items drawn like these. Its coverage is "
            "measured on these rows, not guaranteed; the coverage at the target read off the curve has no "
            "guarantee.</p>"
            + chart(f"Risk-coverage curves, target risk {TARGET_RISK:g}", figure)
            + table(head, body, cls="selective") + notes)
    return html, rows


def systems_html(models, settings, *, table: Callable, escape: Callable) -> tuple[str, dict | None]:
    """The systems comparison (two or more confidence models) as HTML and plain data; ``("", None)`` otherwise."""
    systems = [m for m in models if m.predictions.kind == "confidence"]
    if len(systems) < 2:
        return "", None
    names = [m.name for m in systems]
    head = "<h2>Compare systems</h2>"
    if settings.n_boot < 2:
        return head + "<p class='note'>No comparison: it needs bootstrap resamples (n_boot of 2 or more).</p>", \
            {"models": names, "error": "n_boot < 2"}
    try:
        matched = match_by_id([m.predictions for m in systems], names=names)
        found = compare_systems([p.probs for p in matched], np.stack([p.labels for p in matched]), names=names,
                                kind="confidence", n_boot=settings.n_boot, seed=settings.seed, alpha=settings.alpha)
    except CalibrationInputError as exc:
        return (head + f"<p class='verdict'>These systems cannot be compared: {escape(exc)}</p>",
                {"models": names, "error": str(exc)})
    by_id = all(m.predictions.ids is not None for m in systems)
    how = "by item id" if by_id else "by position (no id column; the same number of rows)"
    rows = [[d.name, d.a, d.b, f"{d.difference:+.4f}", f"{d.low:+.4f}", f"{d.high:+.4f}", d.verdict]
            for d in found.differences]
    sentences = "".join(f"<li>{escape(s)}</li>" for s in found.sentences())
    html = (head + f"<p class='note'>{found.n_samples:,} items matched {how} (rows per system: "
            + escape(", ".join(f"{m.name} {m.predictions.n_samples:,}" for m in systems))
            + f"); {found.n_boot:,} paired bootstrap resamples, seed {found.seed}, {1 - found.alpha:.0%} intervals; "
            "a difference is called only when its interval excludes 0 (calib_core.recalibration.paired."
            "compare_systems, as calib-core compare).</p>"
            + table(("metric", "A", "B", "B - A", "interval low", "interval high", "verdict"), rows, cls="systems")
            + f"<ul class='verdict'>{sentences}</ul>")
    data = {"models": names, "n_matched": found.n_samples, "matched_by": how, "n_boot": found.n_boot,
            "seed": found.seed, "alpha": found.alpha,
            "differences": [{"key": d.key, "metric": d.name, "a": d.a, "b": d.b, "difference": _f(d.difference),
                             "low": _f(d.low), "high": _f(d.high), "better": d.better, "sentence": d.sentence()}
                            for d in found.differences]}
    return html, data



def confidence_sections(models, settings, sections, data: dict, chart_div: Callable, *, table: Callable,
                        escape: Callable) -> list[str]:
    """The HTML blocks of ``"selective"`` and ``"systems"`` when in ``sections``; their numbers go to ``data``
    (``chart_div(section, caption, figure)``, ``table`` and ``escape``: the report's own helpers)."""
    out = []
    if "selective" in sections:
        block, data["selective"] = selective_html(models, settings, table=table, escape=escape,
                                                  chart=lambda caption, fig: chart_div("selective", caption, fig))
        out.append(block)
    if "systems" in sections:
        block, found = systems_html(models, settings, table=table, escape=escape)
        if found is not None:
            out.append(block)
            data["systems"] = found
    return out
