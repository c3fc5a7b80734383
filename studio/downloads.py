"""Downloads the pages share: the HTML report button and the chart export settings.

* :func:`chart_config` -- the ``config=`` of ``st.plotly_chart``: the modebar
  camera button saves the chart client-side (plotly.js ``toImage``, no
  server-side browser) as PNG or SVG with a meaningful file name
  (``toImageButtonOptions``, Plotly's configuration options). The camera button
  has one format per chart, and a second modebar button would need JavaScript,
  which ``st.plotly_chart`` cannot take from Python; so the format is one
  sidebar choice (:data:`CHART_FORMAT_KEY`, "Chart downloads: PNG / SVG") that
  every chart's button follows. Every ``st.plotly_chart`` of the app passes this
  config (``tests/app/test_chart_export.py``).
* :func:`report_button` -- "Download report (HTML)": the one-file offline
  report of :mod:`studio.report` for the shown models, built only when the
  button is clicked (``st.download_button`` with a callable ``data``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from studio import report, state

#: Session-state key of the sidebar's chart download format ("PNG" or "SVG").
CHART_FORMAT_KEY = "chart_format"
CHART_FORMATS = ("PNG", "SVG")

#: Bootstrap resamples of the app's reports (stated in the report's settings table).
APP_REPORT_N_BOOT = 200


def chart_config(*name_parts: object, image_format: str | None = None) -> dict:
    """Plotly config for ``st.plotly_chart(..., config=chart_config("Reliability", model, "15 bins"))``.

    Parameters
    ----------
    *name_parts : object
        Page, model, setting ...: joined into a safe file name by
        :func:`studio.report.chart_file_name` (user-supplied names are slugged).
    image_format : {"png", "svg"}, optional
        Default: the sidebar's choice (:data:`CHART_FORMAT_KEY`), PNG until one is made.

    Returns
    -------
    dict
        ``{"displaylogo": False, "toImageButtonOptions": {"format": ..., "filename": ..., "scale": 2}}``.
    """
    if image_format is None:
        image_format = str(st.session_state.get(CHART_FORMAT_KEY, CHART_FORMATS[0])).lower()
    if image_format not in ("png", "svg"):
        raise ValueError(f"`image_format` must be 'png' or 'svg', got {image_format!r}.")
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": image_format, "filename": report.chart_file_name(*name_parts),
                                     "scale": 2}}


def _report_models(models: Sequence[state.ModelView],
                   entries: Mapping[str, state.LoadedModel]) -> list[report.ReportModel]:
    """The report's models with each one's file name and SHA-256 (hashed here, when the button is clicked).

    ``entries`` are the loaded models as the script run saw them: the report
    is built on the click, outside the script run, where the session state
    cannot be read (reading it there gave every model an empty file list).
    """
    out = []
    for view in models:
        entry = entries.get(view.name)
        has_file = entry is not None and (entry.raw is not None or entry.demo is not None)  # else: arrays only
        files = ((entry.file_name, report.sha256_hex(entry.source_bytes())),) if has_file else ()
        out.append(report.ReportModel(view.name, view.predictions, files, view.rows,
                                      tuple(entry.fixes) if entry is not None else ()))
    return out


#: Session keys of the Recalibration page's settings (pages/6_Recalibration.py), read by the report of everything.
RECALIBRATION_KEYS = {"methods": "methods", "scheme": "protocol", "test_fraction": "test_fraction",
                      "n_folds": "folds", "seed": "recal_seed", "n_boot": "recal_boot", "in_sample": "in_sample"}


def page_recalibration_settings() -> report.RecalibrationSettings | None:
    """The Recalibration page's settings of this session, for the report of everything (None: never set).

    So the report's recalibration section says what the page said: the
    same methods, protocol, seed and resamples. Settings the page never
    received keep the page's first view.
    """
    found = {name: st.session_state[key] for name, key in RECALIBRATION_KEYS.items() if key in st.session_state}
    if not found:
        return None
    from calib_core.recalibration.compare import Protocol

    first = Protocol()
    seed = int(found.get("seed", first.seed))
    protocol = Protocol(str(found.get("scheme", first.scheme)), float(found.get("test_fraction", first.test_fraction)),
                        seed, int(found.get("n_folds", first.n_folds)), bool(found.get("in_sample", False)))
    methods = tuple(found["methods"]) if "methods" in found else None
    return report.RecalibrationSettings(methods=methods, protocol=protocol,
                                        n_boot=int(found["n_boot"]) if "n_boot" in found else None, seed=seed)


def report_button(section: str, models: Sequence[state.ModelView], *, n_bins: int = 15, binning: str = "uniform",
                  n_boot: int = APP_REPORT_N_BOOT, seed: int = 0, alpha: float = 0.05,
                  recalibration: report.Recalibration | Sequence[report.Recalibration] | None = None,
                  recalibration_settings: report.RecalibrationSettings | None = None) -> None:
    """A "Download report (HTML)" button for this page's ``section`` ("everything": every section).

    ``alpha``: the intervals cover ``1 - alpha`` (the page's *Interval* setting, so both show the same numbers).

    The report (metrics with intervals, verdicts, charts, file hashes and every
    setting) is built when the button is clicked, for the models shown.
    ``recalibration``: the Recalibration page's comparisons; without them
    the report's recalibration section (in "everything") makes its own with
    ``recalibration_settings`` (default: the page's first view, the report's
    resamples and seed).
    """
    if not models:
        return
    sections = report.REPORT_SECTIONS if section == "everything" else ("data", section)
    if section == "reliability":
        sections = ("data", "metrics", "verdicts", "reliability", "selective")
    if section == "metrics":  # with the Compare systems section when two or more confidence models are shown
        sections = ("data", "metrics", "systems")
    settings = report.ReportSettings(n_bins=int(n_bins), binning=binning, n_boot=int(n_boot),
                                     seed=int(seed), alpha=float(alpha))
    chosen = list(models)
    if section == "everything" and recalibration is None and recalibration_settings is None:
        recalibration_settings = page_recalibration_settings()
    entries = dict(state.get_entries())  # read now: the click's build runs where the session state cannot be read

    def build() -> str:
        return report.build_report(_report_models(chosen, entries), settings, sections=sections,
                                   recalibration=recalibration,
                                   title=f"Calibration report ({section.replace('_', ' ')})",
                                   recalibration_settings=recalibration_settings)

    st.download_button(
        "Download report (HTML)" if section != "everything" else "Download report of everything (HTML)",
        data=build, file_name=report.report_file_name(section, [m.name for m in chosen]), mime="text/html",
        on_click="ignore", icon=":material/description:", key=f"report_html_{section}",
        help="One self-contained HTML file that opens offline: settings, file hashes, data summary, metrics with "
             "intervals, verdicts and this page's charts.")
