"""Speed of the Simplex page after a control change on N=100,000 x K=10 (issue 3, item 7: budget 1 s).

Run ``python bench/bench_simplex_page.py`` from the repository root. The
model is a synthetic over-confident 10-class model (softmax of Gaussian
logits, labels drawn from a softer softmax). Starting from the page's
defaults, the controls are changed one after the other, as a user would,
and each change is timed twice:

* ``compute``: the calls the page makes for that setting, through the same
  cached wrappers (:mod:`studio.compute_simplex`, results of earlier
  settings still cached), plus the figure and its JSON (what
  ``st.plotly_chart`` sends);
* ``page``: an AppTest rerun of ``pages/5_Simplex.py`` after the widget
  change: the whole script, widgets, sidebar and chart included.

Every time is also given as a ratio to one ``calib_core.ece`` call on the
same data, measured in the same run, so the numbers compare across machines.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

import calib_core as cc  # noqa: E402
from calib_core.io import Predictions  # noqa: E402
from studio import compute_simplex as cs  # noqa: E402
from studio import state  # noqa: E402
from calib_core.plot.figures_simplex import simplex_figure  # noqa: E402

BUDGET = 1.0
PAGE = "pages/5_Simplex.py"


@dataclass
class Settings:
    """The page's controls (defaults as on the page)."""

    lens: str = "canonical"
    class_index: int | None = None
    distance: str = "tv"
    mode: str = "groups"
    members: tuple = field(default_factory=lambda: cc.default_groups(10))
    partition: str = "uniform"
    n_bins: int = 10
    min_bin_size: int = 100
    arrow_scale: float = 1.0
    count_scale: str = "log"
    n_resamples: int = 100  # the page's default for models over 50,000 rows
    seed: int = 0


def synthetic_model(n_rows: int, n_classes: int, seed: int = 2) -> Predictions:
    rng = __import__("numpy").random.default_rng(seed)
    logits = rng.normal(size=(n_rows, n_classes)) * 2.5
    labels = cc.sample_labels(cc.softmax(logits / 1.5), seed=seed + 1)[0]
    return Predictions(cc.softmax(logits), labels, tuple(str(k) for k in range(n_classes)), name="bench_model")


def page_compute(model: state.ModelView, s: Settings) -> tuple[float, float]:
    """The page's calls for settings ``s`` (same order and normalisation as pages/5_Simplex.py).

    Returns
    -------
    (seconds until the chart and the estimates are shown, seconds until the bands are shown too)
    """
    start = time.perf_counter()
    canonical = s.lens == "canonical"
    vertices = cs.Vertices(s.mode, s.members) if canonical else cs.Vertices("groups", ((0,), (1,), ()))
    n_bins = s.n_bins if s.partition == "uniform" else 10
    min_bin_size = s.min_bin_size if s.partition != "uniform" else 1000
    view = cs.simplex_view(model.predictions, model.fingerprint, vertices, s.lens, s.class_index, s.partition,
                           n_bins, min_bin_size, s.distance)
    simplex_figure(view, arrow_scale=s.arrow_scale, count_scale=s.count_scale).to_json()
    cs.lens_estimate(model.predictions, model.fingerprint, s.distance, s.partition, n_bins, min_bin_size, s.lens,
                     s.class_index)
    first = time.perf_counter() - start
    cs.lens_consistency(model.predictions, model.fingerprint, s.distance, s.partition, n_bins, min_bin_size,
                        s.lens, s.class_index, s.n_resamples, s.seed)
    if not cs.view_is_whole_model(vertices, s.lens, model.predictions.n_classes):
        cs.view_consistency(model.predictions, model.fingerprint, vertices, s.partition, n_bins, min_bin_size,
                            s.distance, s.n_resamples, s.seed)
    return first, time.perf_counter() - start


def changes(n_classes: int):
    """(description, settings change, AppTest widget change) in the order a user might make them."""
    groups = cc.default_groups(n_classes)
    moved = (groups[0] + (groups[2][-1],), groups[1], groups[2][:-1])
    return [
        ("arrow scale 1 -> 2", {"arrow_scale": 2.0}, lambda at: at.slider(key="arrows").set_value(2.0)),
        ("cell colours log -> linear", {"count_scale": "linear"},
         lambda at: at.radio(key="colours").set_value("linear")),
        ("groups: last class moved to vertex A", {"members": moved},
         lambda at: (at.multiselect(key="group_c").unselect(groups[2][-1]),
                     at.multiselect(key="group_a").select(groups[2][-1]))),
        ("vertices: three classes (0, 1, 2)", {"mode": "classes", "members": (0, 1, 2)},
         lambda at: at.radio(key="vertices").set_value("classes")),
        ("subdivisions n 10 -> 12", {"n_bins": 12}, lambda at: at.slider(key="cells").set_value(12)),
        ("distance tv -> squared Euclidean", {"distance": "sq_euclidean"},
         lambda at: at.radio(key="distance").set_value("sq_euclidean")),
        ("seed 0 -> 1", {"seed": 1}, lambda at: at.number_input(key="simplex_seed").set_value(1)),
        ("resamples 100 -> 200 (on request)", {"n_resamples": 200},
         lambda at: at.selectbox(key="resamples").set_value(200)),
        ("resamples 200 -> 100 (cached)", {"n_resamples": 100},
         lambda at: at.selectbox(key="resamples").set_value(100)),
        ("lens canonical -> max", {"lens": "max"}, lambda at: at.radio(key="lens").set_value("max")),
        ("lens max -> marginal (class 0)", {"lens": "marginal", "class_index": 0},
         lambda at: at.radio(key="lens").set_value("marginal")),
        ("partition -> data-dependent (min 100)", {"partition": "data_dependent"},
         lambda at: at.radio(key="partition").set_value("data_dependent")),
        ("lens marginal -> canonical", {"lens": "canonical", "class_index": None},
         lambda at: at.radio(key="lens").set_value("canonical")),
        ("min cell size 100 -> 1000", {"min_bin_size": 1000},
         lambda at: at.number_input(key="cell_size").set_value(1000)),
        ("partition -> uniform (cached)", {"partition": "uniform"},
         lambda at: at.radio(key="partition").set_value("uniform")),
    ]


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--no-apptest", action="store_true", help="time the compute calls only")
    args = parser.parse_args(argv)
    logging.getLogger("streamlit").setLevel(logging.ERROR)

    predictions = synthetic_model(args.rows, args.classes)
    model = state.ModelView(predictions.name, predictions, state.fingerprint(predictions), "all rows")
    one_ece = statistics.median(timed(lambda: cc.ece(predictions.probs, predictions.labels)) for _ in range(5))
    print(f"N={args.rows:,} x K={args.classes}; baseline: one ece call {one_ece * 1e3:.1f} ms; "
          f"budget {BUDGET:.1f} s after a control change\n")

    steps = changes(args.classes)
    settings = Settings(members=cc.default_groups(args.classes))
    st.cache_data.clear()
    compute_times = [("initial load (empty cache)", page_compute(model, settings))]
    for name, change, _ in steps:
        for key, value in change.items():
            setattr(settings, key, value)
        compute_times.append((name, page_compute(model, settings)))

    page_times: dict[str, float] = {}
    if not args.no_apptest:
        st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        entry = state.LoadedModel(predictions, model.fingerprint, "upload", "bench_model.npz")
        at.session_state[state.APP_KEY] = state._Store(models={predictions.name: entry}, started=True)
        at.switch_page(PAGE)
        page_times["initial load (empty cache)"] = timed(at.run)
        for name, _, widget_change in steps:
            widget_change(at)
            page_times[name] = timed(at.run)
            if at.exception or at.error:
                print(f"the page failed after {name!r}: {[e.value for e in at.exception or at.error]}")
                return 1

    print("chart = until the chart and the estimates are shown; all = with the consistency bands; "
          "page = AppTest rerun of the whole page script (bands included)")
    print(f"{'after':40s} {'chart s':>8s} {'all s':>7s} {'x ece':>6s} {'page s':>7s} {'x ece':>6s}  chart<1s  all<1s")
    over_chart = over_all = 0
    for name, (first, total) in compute_times:
        page = page_times.get(name)
        worst = max(total, page or 0.0)
        initial = name.startswith("initial")
        over_chart += first > BUDGET and not initial
        over_all += worst > BUDGET and not initial
        page_text = f"{page:7.3f} {page / one_ece:6.1f}" if page is not None else f"{'-':>7s} {'-':>6s}"
        print(f"{name:40s} {first:8.3f} {total:7.3f} {total / one_ece:6.1f} {page_text}  "
              f"{'yes' if first <= BUDGET else 'NO':>8s}  {'yes' if worst <= BUDGET else 'NO':>6s}")
    print(f"\ncontrol changes over the {BUDGET:.0f} s budget: {over_chart} until the chart, "
          f"{over_all} until the bands")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
