"""App hardening (issue 12, items 11 and 13; issue 11, item 10): bounded caches, user text shown as
plain text, and plots that do not mislead.

Cache policy (enforced by :func:`test_every_cache_decorator_is_bounded_by_entries_and_ttl`): every
``st.cache_data`` / ``st.cache_resource`` in the app has ``max_entries`` *and* ``ttl``.

* Computed results (metrics, tables, fits, resamplings) expire after an hour (``ttl="1h"``): long
  enough for a working session to revisit a view at no cost, short enough that the memory of
  visitors who left is given back (their results are keyed by a hash of their data, so nobody else
  can reuse them anyway).
* Bundled, read-only inputs (demo files, the pathology gallery, the estimator list) live a day.
* Uploaded bytes are cached per session only (``scope="session"``, ``ttl="15m"``, a few entries):
  Streamlit drops a session's cache when the session disconnects, so a 150 MB upload does not
  outlive its visitor, and one visitor's file never answers another's.
* The Lab's process-wide :class:`studio.compute_lab.ResultStore` follows the same rule (512
  entries, an hour).

Memory budget (issue 30, item 8; ``docs/deploy.md``): ``st.cache_data`` entries together are bounded in
pickled bytes by ``server.maxCacheDataSize``; ``st.cache_resource`` bounds entries and age only, so it holds
single objects of bounded size (``max_entries=1``) and the objects shared unpickled between sessions live in
byte-bounded :class:`studio.memory.ResultStore` s; a thread gives freed memory back to the system.
"""
from __future__ import annotations

import ast
import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest
from streamlit.time_util import time_to_seconds

import calib_core as cc
from calib_core.io import Predictions, load_demo
from studio import compute_lab as cl
from calib_core.plot import figures
from calib_core.plot import figures_estimators as fe
from calib_core.plot import figures_lab as fl
from studio import nav, state
from calib_core.plot.figures_recalibration import change_figure, temperature_surface_figure
from calib_core.plot.figures_simplex import ARROW_TRACE_NAME, simplex_figure
from studio.memory import RESULT_TTL_SECONDS
from studio.text import literal, md, plot_text

from tests.app_support import open_with_uploads

ROOT = Path(__file__).resolve().parents[2]
APP_SOURCES = sorted([*(ROOT / "studio").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"])


# ============================================================================ caches

def _cache_decorators(path: Path):
    """``(function name, decorator node)`` of every st.cache_data / st.cache_resource in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if (isinstance(target, ast.Attribute) and target.attr in ("cache_data", "cache_resource")
                    and isinstance(target.value, ast.Name) and target.value.id == "st"):
                yield node, decorator


def _ttl_seconds(node: ast.expr) -> float:
    """A decorator's ``ttl``: a literal ("1h", seconds) or ``RESULT_TTL_SECONDS``, the one result lifetime."""
    from studio import memory

    if isinstance(node, ast.Name) and node.id == "RESULT_TTL_SECONDS":
        return memory.RESULT_TTL_SECONDS
    return time_to_seconds(ast.literal_eval(node))


def test_every_cache_decorator_is_bounded_by_entries_and_ttl():
    found = 0
    for path in APP_SOURCES:
        for function, decorator in _cache_decorators(path):
            found += 1
            where = f"{path.relative_to(ROOT)}:{decorator.lineno} {function.name}"
            assert isinstance(decorator, ast.Call), f"{where}: bare decorator, no max_entries / ttl"
            keywords = {k.arg: k.value for k in decorator.keywords}
            assert "max_entries" in keywords and "ttl" in keywords, f"{where}: needs max_entries and ttl"
            max_entries = ast.literal_eval(keywords["max_entries"])
            assert isinstance(max_entries, int) and 1 <= max_entries <= 10_000, where
            ttl = _ttl_seconds(keywords["ttl"])
            assert 0 < ttl <= 86_400 and math.isfinite(ttl), f"{where}: ttl {ttl} s"
    assert found >= 30, "the app's caches were not found"


def test_caches_keyed_by_uploaded_bytes_are_session_scoped():
    """A cached function taking ``bytes`` holds an upload: it must leave with its session."""
    checked = []
    for path in APP_SOURCES:
        for function, decorator in _cache_decorators(path):
            annotations = [ast.unparse(a.annotation) for a in function.args.args if a.annotation is not None]
            if "bytes" not in annotations:
                continue
            keywords = {k.arg: ast.literal_eval(k.value) for k in decorator.keywords if k.arg == "scope"}
            assert keywords.get("scope") == "session", f"{path.relative_to(ROOT)} {function.name}"
            assert _ttl_seconds(next(k.value for k in decorator.keywords if k.arg == "ttl")) <= 3600
            checked.append(function.name)
    assert {"load_file", "file_columns", "read_summary"} <= set(checked)


def test_lab_result_store_drops_entries_after_its_ttl_and_beyond_max_entries():
    now = [0.0]
    store = cl.ResultStore(max_entries=3, ttl_seconds=10.0, clock=lambda: now[0])
    store.put("a", 1)
    now[0] = 5.0
    store.put("b", 2)
    assert store.get("a") == 1 and len(store) == 2
    now[0] = 10.5  # "a" was stored 10.5 s ago
    assert store.get("a") is None and "a" not in store and store.get("b") == 2
    now[0] = 15.0
    assert len(store) == 0, "every entry expired"
    for key in "cdef":
        store.put(key, key)
    assert len(store) == 3 and "c" not in store, "the least recently used went first"
    assert cl.result_store().ttl_seconds == RESULT_TTL_SECONDS <= 3600


def test_st_cache_data_has_a_byte_budget_and_st_cache_resource_holds_single_objects():
    """Idle RSS went from 72 MB to 944 MB after five visitors: caches were bounded in entries, not in bytes."""
    import tomllib

    from streamlit import byte_util

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    budget = byte_util.cache_data_max_size_to_bytes(config["server"]["maxCacheDataSize"])
    assert 0 < budget <= 512 * 2**20
    for path in APP_SOURCES:
        for function, decorator in _cache_decorators(path):
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if target.attr == "cache_resource":
                keywords = {k.arg: ast.literal_eval(k.value) for k in decorator.keywords}
                assert keywords["max_entries"] == 1, (
                    f"{path.relative_to(ROOT)} {function.name}: st.cache_resource has no byte bound; keep "
                    "data-sized shared results in a studio.memory.ResultStore")


def test_shared_result_store_is_bounded_in_bytes():
    from studio import memory

    store = memory.ResultStore(max_entries=10, max_bytes=1_000)
    for key in "abc":
        store.put(key, {"probs": np.zeros(50)})  # 400 bytes each
    assert "a" not in store and store.get("b") is not None and store.size_bytes == 800
    store.put("huge", np.zeros(200))  # 1,600 bytes: never stored, the bound holds
    assert "huge" not in store and store.size_bytes == 800
    view = np.zeros(100)
    assert memory.nbytes((view, view[:10], {"x": view})) == 800, "an array and its views count once"


def test_recalibration_fits_are_shared_from_a_byte_bounded_store():
    from studio import compute_recalibration as cr
    from studio import memory

    predictions = load_demo(state.DEFAULT_DEMO)
    fit = cr.fit_method(predictions, state.fingerprint(predictions), "Temperature scaling", cr.compare.Protocol())
    store = cr._shared_results()
    assert store.max_bytes == cr.RECALIBRATION_BYTES and memory.nbytes(fit) <= store.size_bytes <= store.max_bytes
    assert store.size_bytes > 0 and memory.nbytes(fit) > 0


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_freed_memory_goes_back_to_the_system():
    """Arrays under glibc's mmap threshold live in the heap; freed, their pages stayed in the server's RSS."""
    from studio import memory

    memory.release_freed_memory()
    before = _rss_bytes()
    blocks = [np.ones(8_000) for _ in range(3_000)]  # 64 KB each: from the heap, not mmap (192 MB)
    pinned = np.ones(8_000)  # allocated last: the top of the heap stays in use, so free() cannot shrink it
    del blocks
    held = _rss_bytes() - before
    assert memory.release_freed_memory()
    returned = held - (_rss_bytes() - before)
    del pinned
    assert held > 150_000_000 and returned > 0.8 * held, (held, returned)


def test_every_page_starts_the_trimming_thread():
    import threading

    from studio import memory

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any(t.name == "studio-malloc-trim" and t.daemon for t in threading.enumerate())
    assert memory.start_trimming() is True


# ============================================================================ user text

HOSTILE = (
    "![t](http://127.0.0.1:9/t.png)",
    "<img src=http://127.0.0.1:9/i.png onerror=alert(1)>",
    "[link](http://127.0.0.1:9/l) %{y} $x$ :red[r] **b**",
)
_RENDER = MarkdownIt("commonmark")


def _inline_tokens(text: str):
    for token in _RENDER.parse(text):
        yield token
        yield from token.children or ()


def _plain_text(text: str) -> str:
    """What a reader sees of ``text`` rendered as CommonMark: its text and code spans, no markup."""
    shown = "".join(t.content for t in _inline_tokens(text) if t.type in ("text", "code_inline", "code_block"))
    return shown.replace("\u2060", "")  # the invisible word joiner md() puts into URLs (no autolinks)


def _rendered_safely(text: str) -> bool:
    """Rendered as CommonMark, ``text`` shows every hostile string it holds as written (as text or in a
    code span), and has no image and no link or raw HTML pointing at the hostile host."""
    tokens = list(_inline_tokens(text))
    if any(t.type == "image" for t in tokens):
        return False
    if any(t.type in ("html_inline", "html_block") and ("<img" in t.content or "127.0.0.1" in t.content)
           for t in tokens):
        return False
    if any(t.type == "link_open" and "127.0.0.1" in str(t.attrGet("href")) for t in tokens):
        return False
    plain = _plain_text(text)
    return all(h in plain for h in HOSTILE if h in text)


@pytest.mark.parametrize("value", [*HOSTILE, "a\n# heading\n    code", "`x` <b>&amp;</b>", 7, "c_1 (2) [3]",
                                   "- item", "1. item", "> quote", "| a | b |"])
def test_md_shows_the_value_literally(value):
    out = _RENDER.render(md(value))
    assert _rendered_safely(md(value)), out
    assert "<img" not in out and "<a " not in out and "<strong" not in out
    text = html.unescape(re.sub(r"</?p>", "", out)).replace("\u2060", "").strip()
    assert text == " ".join(str(value).split())


def test_literal_shows_user_strings_verbatim():
    assert literal("model") == "`model`"
    assert literal("a`b") == "``a`b``" and literal("`a`") == "`` `a` ``"
    assert literal("two\nlines  here") == "`two lines here`"
    assert literal(":material/check:") == "`:\u200bmaterial/check:`"
    assert literal("a\u202eb\u200dc") == "`a\ufffdb\ufffdc`", "bidi overrides and zero-width joiners, as in md()"


@pytest.mark.parametrize("value", [*HOSTILE, "a\n# heading", "x``y", "`", 7])
def test_literal_renders_as_one_code_span_holding_the_value(value):
    tokens = [t for t in _inline_tokens(literal(value)) if t.type not in ("paragraph_open", "paragraph_close",
                                                                          "inline")]
    assert [t.type for t in tokens] == ["code_inline"], tokens
    assert tokens[0].content.strip() == " ".join(str(value).split())
    assert _rendered_safely(literal(value))


def test_layout_has_no_second_markdown_escaper():
    """One helper per job: ``studio.text.md`` is the only Markdown escaper the app uses."""
    from studio import compute_recalibration, layout

    assert not hasattr(layout, "plain")
    assert compute_recalibration.literal is literal
    for path in APP_SOURCES:
        source = path.read_text()
        assert "layout.plain" not in source and "import plain" not in source, path


@pytest.mark.parametrize("value", [*HOSTILE, "a & b < c", "100%"])
def test_plot_text_leaves_no_markup_and_decodes_to_the_value(value):
    out = plot_text(value)
    assert not re.search(r"[<>$]|%\{", out)
    assert html.unescape(out) == value
    assert len({plot_text(v) for v in HOSTILE}) == len(HOSTILE), "one-to-one: categories stay distinct"


#: Figure keys that Plotly never renders (identifiers only).
_HIDDEN_KEYS = frozenset({"legendgroup", "uid"})


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key not in _HIDDEN_KEYS:
                yield from _strings(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _strings(value)


#: Raw fragments of :data:`HOSTILE` that Plotly would read as a tag, a placeholder or MathJax.
PLOTLY_MARKUP = ("<img", "%{y} $", "$x$")


def assert_plot_text_safe(spec: dict) -> None:
    """No hostile name appears as markup in any string of a Plotly figure (titles, names, hover, categories)."""
    for text in _strings(spec):
        assert not any(part in text for part in PLOTLY_MARKUP), text


def hostile_predictions(n_rows: int = 240, seed: int = 0, name: str = HOSTILE[0] + ".csv") -> Predictions:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3) * 0.7, size=n_rows)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    return Predictions.from_arrays(probs=probs, labels=labels, class_names=HOSTILE, name=name)


def test_figures_show_hostile_model_and_class_names_as_text():
    a, b = hostile_predictions(), hostile_predictions(seed=1, name=HOSTILE[1])
    tables = {p.name: cc.reliability_table(p.probs, p.labels, 10) for p in (a, b)}
    per_class = {p.name: pd.DataFrame({"class": list(p.class_names), "support": [1, 2, 3],
                                       "mean_probability": [0.3, 0.3, 0.4], "ace": [0.1, 0.3, 0.2],
                                       "tace": [0.1, 0.3, 0.2], "classwise_ece": [0.05, 0.01, 0.02]})
                 for p in (a, b)}
    sweeps = {p.name: cc.bin_sensitivity(p.probs, p.labels, bin_counts=range(2, 8)) for p in (a, b)}
    sweep = pd.concat([t.assign(model=n) for n, t in sweeps.items()], ignore_index=True)
    ranking = cc.rank_by_bins(sweeps, reference_n_bins=5)
    built = [
        figures.reliability_figure(tables, layout="side_by_side", histogram_log=True),
        figures.reliability_figure(tables, style="bars"),
        figures.per_class_figure(per_class, sort_by="ace"),
        figures.sensitivity_figure(sweep),
        figures.rank_figure(*(t[(t["metric"] == "ece") & (t["binning"] == "uniform")]
                              for t in (ranking.ranks, ranking.spearman))),
        fl.subset_figure(pd.DataFrame({"metric": "ece", "model": [a.name, b.name], "size": [100, 100],
                                       "mean": 0.1, "q05": 0.05, "q95": 0.2, "std": 0.01}), {"ece": "ECE"}),
    ]
    for fig in built:
        spec = json.loads(fig.to_json())
        assert_plot_text_safe(spec)
        decoded = " ".join(html.unescape(s) for s in _strings(spec))
        assert a.name in decoded and b.name in decoded, "the names are still shown, as text"
    # The class names are the per-class figure's categories, escaped once and in file order.
    per_class_fig = built[2]
    assert sorted(per_class_fig.layout.xaxis.categoryarray) == sorted(plot_text(c) for c in HOSTILE)


#: Class and model names aimed at Plotly: a tag, an image and a hover placeholder (with MathJax).
PLOTLY_HOSTILE = ("<b>x</b>", "<img src=x>", "%{x} 50% $y$")
#: Their raw fragments that Plotly would read as markup (the figures' own templates hold none of them).
PLOTLY_HOSTILE_MARKUP = ("<b>x</b>", "<img", "%{x} 50", "$y$")


def assert_hostile_names_escaped(fig, names=PLOTLY_HOSTILE) -> None:
    """No hostile name is markup in any string of ``fig``, and each is still shown (decoded: as typed)."""
    spec = json.loads(fig.to_json())
    strings = list(_strings(spec))
    for text in strings:
        assert not any(part in text for part in PLOTLY_HOSTILE_MARKUP), text
    decoded = " ".join(html.unescape(s) for s in strings)
    for name in names:
        assert name in decoded, f"{name!r} is not shown at all, so the check above is vacuous"


def test_simplex_figure_shows_hostile_class_names_as_text():
    p = hostile_predictions()
    rel = cc.simplex_reliability(p.probs, p.labels, n_bins=4)
    fig = simplex_figure(rel, class_names=PLOTLY_HOSTILE)
    assert_hostile_names_escaped(fig)
    ternary = fig.layout.ternary
    assert [ternary.aaxis.title.text, ternary.baxis.title.text, ternary.caxis.title.text] == [
        plot_text(n) for n in PLOTLY_HOSTILE]
    (arrows,) = [t for t in fig.data if t.name == ARROW_TRACE_NAME]
    hover = next(t for t in arrows.text if t)
    assert ", ".join(plot_text(n) for n in PLOTLY_HOSTILE) in hover and "<br>" in hover, "own markup stays"


def test_estimator_figures_show_hostile_model_names_as_text():
    p = hostile_predictions()
    models = {name: p for name in PLOTLY_HOSTILE}
    table = pd.DataFrame({"model": list(models), "estimator": "ECE", "estimate": [0.1, 0.2, 0.3],
                          "ci_low": [0.05, 0.1, np.nan], "ci_high": [0.15, 0.3, np.nan], "interval": "boot"})
    decomposition = {name: {s: cc.score_decomposition(p.probs, p.labels, s, bandwidth=0.05) for s in ("brier", "log")}
                     for name in models}
    chains = {name: cc.bound_chain(p.probs, p.labels, bandwidth=0.05) for name in models}
    curve = cc.smooth_reliability_curve(p.probs, p.labels, n_boot=20, seed=0)
    curves = {name: curve for name in models}
    for fig in (fe.estimates_figure(table), fe.decomposition_figure(decomposition), fe.bound_chain_figure(chains),
                fe.smooth_reliability_figure(curves)):
        assert_hostile_names_escaped(fig)
    estimates = fe.estimates_figure(table)
    assert [t.name for t in estimates.data] == [plot_text(n) for n in PLOTLY_HOSTILE]
    assert [a.text for a in fe.bound_chain_figure(chains).layout.annotations] == [plot_text(n) for n in models]


def test_smooth_overlay_finds_each_hostile_models_axes_and_colour():
    """The diagram names a model's trace ``plot_text(name)``: the overlay must look for that, not the raw name
    (which matched no trace, so every curve fell onto the first panel in a fallback colour)."""
    p = hostile_predictions()
    table = cc.reliability_table(p.probs, p.labels, 10)
    names = PLOTLY_HOSTILE[:2]
    fig = figures.reliability_figure({n: table for n in names}, layout="side_by_side", colors={names[0]: 4,
                                                                                                names[1]: 5})
    before = len(fig.data)
    curve = cc.smooth_reliability_curve(p.probs, p.labels, n_boot=20, seed=0)
    fe.add_smooth_overlay(fig, {n: curve for n in names})
    added = fig.data[before:]
    for name, axes, color in ((names[0], ("x", "y"), 4), (names[1], ("x2", "y2"), 5)):
        (line,) = [t for t in added if t.name == f"{plot_text(name)}: smoothed (smECE {curve.smece:.4f})"]
        (binned,) = [t for t in fig.data[:before] if t.name == plot_text(name) and t.showlegend is not False]
        assert (line.xaxis or "x", line.yaxis or "y") == axes
        assert line.line.color == figures.color_for(color) and line.legendgroup == binned.legendgroup
    assert_hostile_names_escaped(fig, names)


def test_recalibration_figures_show_hostile_names_as_text():
    table = pd.DataFrame({"temperature": np.tile([0.5, 1.0, 2.0], 3), "metric": np.repeat(PLOTLY_HOSTILE, 3),
                          "value": [2.0, 1.0, 1.5, 0.3, 0.2, 0.1, 0.5, 0.4, 0.6]})
    minimisers = pd.DataFrame({"metric": list(PLOTLY_HOSTILE), "temperature": [1.0, 2.0, 1.0],
                               "value": [1.0, 0.1, 0.4]})
    for layout in ("relative", "panels"):
        fig = temperature_surface_figure(table, minimisers, layout=layout, marks={PLOTLY_HOSTILE[0]: 1.2})
        assert_hostile_names_escaped(fig)
        hovers = " ".join(t.hovertemplate for t in fig.data if t.hovertemplate)
        assert all(f"<b>{plot_text(n)}</b>" in hovers for n in PLOTLY_HOSTILE), "the names, in the figure's own bold"
        curves = [t for t in fig.data if t.name in {plot_text(n) for n in PLOTLY_HOSTILE}]
        assert len(curves) == 3
        if layout == "relative":
            assert fig.layout.yaxis.range[1] == pytest.approx(math.log10(3.0) + 0.05), "axis fits the curves"
    results = pd.DataFrame({"method": list(PLOTLY_HOSTILE), "metric": "ECE", "key": "ece", "delta": [-0.1, 0.0, 0.1],
                            "delta_low": np.nan, "delta_high": np.nan})
    change = change_figure(results, keys=("ece",))
    assert_hostile_names_escaped(change)
    assert [t.name for t in change.data] == [plot_text(n) for n in PLOTLY_HOSTILE]


# ---------------------------------------------------------------------------- every page, hostile names

#: Protobuf string fields that Streamlit renders as Markdown.
MARKDOWN_FIELDS = {"body", "label", "help", "caption", "text"}


def _repeated(field) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf >= 5 (upb); older versions have `label`
    return bool(flag) if flag is not None else field.label == field.LABEL_REPEATED


def _proto_strings(message, field_names=MARKDOWN_FIELDS):
    for field, value in message.ListFields():
        values = list(value) if _repeated(field) else [value]
        if field.type == field.TYPE_MESSAGE:
            for item in values:
                yield from _proto_strings(item, field_names)
        elif field.type == field.TYPE_STRING and field.name in field_names:
            for item in values:
                yield f"{message.DESCRIPTOR.name}.{field.name}", item


def _nodes(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


def markdown_texts(at: AppTest) -> list[tuple[str, str]]:
    """Every Markdown-rendered string on the page (bodies, labels, help texts, captions)."""
    texts = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ListFields"):
            texts.extend(_proto_strings(proto))
    return texts


#: Pages whose figures are built by the modules this suite covers (studio/figures*.py).
FIGURE_PAGES = {"pages/2_Reliability.py", "pages/3_Per-class.py", "pages/4_Bin_sensitivity.py",
                "pages/5_Simplex.py", "pages/6_Recalibration.py", "pages/7_Estimators.py",
                "pages/8_Lab.py", "pages/9_Large_tables.py"}
PAGE_STATE = {"pages/8_Lab.py": {"lab_tool": "Your data: test-set size"}}


@pytest.mark.usefixtures("fresh_streamlit_caches")
@pytest.mark.parametrize("page, n_models", [(p.path, 2) for p in nav.PAGES]
                         + [("pages/3_Per-class.py", 1), ("pages/8_Lab.py", 1)])
def test_every_page_shows_hostile_file_and_class_names_as_plain_text(page, n_models):
    """Models whose file and class names are a Markdown image, an HTML tag and a link (one model: the
    sidebar names it; two: rankings and comparisons name them)."""
    models = [hostile_predictions(), hostile_predictions(seed=1, name=HOSTILE[1])][:n_models]
    at = open_with_uploads(page, models, timeout=120, session_values=PAGE_STATE.get(page, {}))
    assert not at.exception, [e.value for e in at.exception]
    texts = markdown_texts(at)
    assert texts, "nothing rendered"
    offending = [(where, text) for where, text in texts if not _rendered_safely(text)]
    assert not offending, offending
    shown = " ".join(_plain_text(text) for _, text in texts)
    assert models[0].name in shown, "the page names the model (as text), so the check above is not vacuous"
    if page in FIGURE_PAGES:
        for chart in at.get("plotly_chart"):
            assert_plot_text_safe(json.loads(chart.proto.spec))


# ============================================================================ plots

def shaded_area(fig, name: str) -> float:
    """Total area of the gap polygons of model ``name`` (shoelace formula over the None-separated rings)."""
    (trace,) = [t for t in fig.data if t.name == f"{plot_text(name)} gap"]
    x = np.array([np.nan if v is None else v for v in trace.x], dtype=float)
    y = np.array([np.nan if v is None else v for v in trace.y], dtype=float)
    area = 0.0
    for ring in np.split(np.arange(x.size), np.flatnonzero(np.isnan(x))):
        ring = ring[~np.isnan(x[ring])]
        if ring.size >= 3:
            xs, ys = x[ring], y[ring]
            area += 0.5 * abs(np.dot(xs, np.roll(ys, -1)) - np.dot(ys, np.roll(xs, -1)))
    return area


def test_sparse_bins_are_faded_labelled_and_not_shaded():
    """Class 0 of the default demo: 812 rows near 0, one row at 0.13, 86 at 1 (class-wise ECE 0.003)."""
    demo = load_demo(state.DEFAULT_DEMO)
    table = cc.reliability_table(demo.probs, demo.labels, 15, "uniform", target=0)
    count = table["count"].to_numpy()
    assert (count < figures.MIN_BIN_COUNT).any() and (count >= figures.MIN_BIN_COUNT).sum() >= 2
    fig = figures.reliability_figure({"m": table}, histogram_log=True)
    # Before: the line through the one-row bin and its shading made a triangle of area ~0.4.
    assert shaded_area(fig, "m") < 0.01
    (line,) = [t for t in fig.data if t.name == "m" and t.mode == "lines+markers"]
    y = np.asarray(line.y, dtype=float)
    np.testing.assert_array_equal(np.isnan(y), count < figures.MIN_BIN_COUNT)
    (sparse,) = [t for t in fig.data if t.name == f"m: bins under {figures.MIN_BIN_COUNT} rows"]
    few = count < figures.MIN_BIN_COUNT
    np.testing.assert_allclose(sparse.x, table["mean_confidence"].to_numpy()[few])
    np.testing.assert_allclose(sparse.marker.opacity, figures.count_opacity(count[few]))
    assert all(o < 1 for o in sparse.marker.opacity)
    assert list(sparse.text) == [f"n={c}" for c in count[few]]
    assert "too few" in sparse.hovertemplate

    # A well-populated diagram keeps its line and its shading: the shaded area equals the area between the
    # diagonal and the piecewise-linear curve of the bins (computed here with the trapezoid rule).
    forest = load_demo("digits_random_forest")
    full = cc.reliability_table(forest.probs, forest.labels, 10, "adaptive")
    assert (full["count"] >= figures.MIN_BIN_COUNT).all()
    fig = figures.reliability_figure({"m": full})
    conf, obs = full["mean_confidence"].to_numpy(), full["observed_frequency"].to_numpy()
    assert np.all(obs > conf), "under-confident in every bin: one polygon, the trapezoid rule is exact"
    assert shaded_area(fig, "m") == pytest.approx(np.trapezoid(obs - conf, conf), rel=1e-9)
    assert not [t for t in fig.data if str(t.name).endswith("rows")  and t.type == "scatter"]


def test_count_opacity_grows_with_the_count_and_bars_use_it():
    counts = np.array([1, 2, 5, 9, 10, 500])
    opacity = figures.count_opacity(counts, 10)
    assert opacity[0] == pytest.approx(figures.SPARSE_OPACITY[0])
    assert opacity[3] == pytest.approx(figures.SPARSE_OPACITY[1])
    assert np.all(np.diff(opacity) >= 0) and (opacity[4:] == 1).all() and (opacity[:4] < 1).all()
    demo = load_demo(state.DEFAULT_DEMO)
    table = cc.reliability_table(demo.probs, demo.labels, 15, "uniform", target=0)
    fig = figures.reliability_figure({"m": table}, style="bars")
    bar = next(t for t in fig.data if t.name == "m" and t.type == "bar")
    np.testing.assert_allclose(bar.marker.opacity, figures.count_opacity(table["count"].to_numpy()))
    assert [t for t in bar.text if t] == [f"n={c}" for c in table["count"] if c < figures.MIN_BIN_COUNT]


def _percent(text: str) -> float:
    assert re.fullmatch(r"\d+(\.\d+)?%", text), text
    return float(text[:-1]) / 100


@pytest.mark.parametrize("n_bins, binning, target", [(15, "uniform", 0), (2, "adaptive", "top_label"),
                                                      (50, "uniform", 3), (10, "adaptive", "top_label")])
def test_log_histogram_ticks_are_readable_percentages(n_bins, binning, target):
    """Was: tickformat ".0%" with dtick=1 wrote 0.1% as "0%" and put a tick at "1000%"."""
    demo = load_demo(state.DEFAULT_DEMO)
    table = cc.reliability_table(demo.probs, demo.labels, n_bins, binning, target=target)
    axis = figures.reliability_figure({"m": table}, histogram_log=True).layout.yaxis2
    assert axis.type == "log" and axis.tickmode == "array"
    values = [_percent(t) for t in axis.ticktext]
    np.testing.assert_allclose(values, axis.tickvals, rtol=1e-9)
    assert len(values) >= 2 and all(0 < v <= 1 for v in values)
    low, high = axis.range
    assert 10 ** high >= 1 > 10 ** (high - 0.1), "the axis ends just above 100%"
    assert 10 ** low <= table["weight"].min(), "the smallest bar is inside the axis"
    assert all(low <= math.log10(v) <= high for v in axis.tickvals)


def test_lab_bias_bound_axis_has_labelled_ticks_and_titles_fit():
    optimal, fixed = cl.futami_curves((100, 268, 1931, 100_000), 1.52, 15)
    observed = pd.DataFrame({"label": ["ECE"] * 2, "size": [100, 268], "mean_abs_error": [0.08, 0.05]})
    fig = fl.futami_figure(optimal, observed, fixed=fixed, fixed_bins=15, lipschitz=1.52)
    axis = fig.layout.yaxis
    assert axis.type == "log" and axis.tickmode == "array", "Plotly's own minor ticks are bare digits"
    np.testing.assert_allclose([float(t) for t in axis.ticktext], axis.tickvals, rtol=1e-9)
    values = np.concatenate([optimal.statistical, optimal.binning, optimal.total, fixed.total, [0.08, 0.05]])
    assert min(axis.tickvals) >= values.min() / 1.01 and max(axis.tickvals) <= values.max() * 1.01
    assert len(axis.tickvals) >= 3
    assert "1.52" in fig.layout.yaxis2.title.text, "L moved from the clipped title to the axis title"
    # A subplot title is centred over its panel and not wrapped: half its width must fit between its
    # centre and the figure's edge. Width estimated at 0.55 em per character, for an 800 px wide chart.
    width = 800
    margin = fig.layout.margin
    plot = width - margin.l - margin.r
    for note in fig.layout.annotations:
        centre = margin.l + note.x * plot
        half = 0.55 * (note.font.size or 16) * len(note.text) / 2
        assert half <= min(centre, width - centre), note.text


def test_log_ticks_pick_steps_by_span():
    assert fl.log_ticks(0.02, 0.7, steps=None)["tickvals"] == pytest.approx([0.02, 0.05, 0.1, 0.2, 0.5])
    assert fl.log_ticks(1e-4, 1.0, steps=None)["tickvals"] == pytest.approx([1e-4, 1e-3, 1e-2, 1e-1, 1.0])


@pytest.mark.parametrize("name", ["![t](http://127.0.0.1:9/t.png)", "see https://example.org/x", "www.example.org",
                                  "WWW.Example.org", "me@example.org"])
def test_md_keeps_bare_urls_and_addresses_from_becoming_links(name):
    """Streamlit's Markdown links bare URLs, www. and e-mail addresses even when escaped (found in the browser)."""
    from studio.text import md

    escaped = md(name)
    for trigger in ("\\:\\/\\/", "www\\."):
        assert trigger.lower() not in escaped.lower()
    assert "@" not in escaped or "\u2060\\@" in escaped
    assert escaped.replace("\u2060", "").replace("\\", "") == name


def test_reliability_note_on_models_without_the_chosen_class_shows_their_names_as_text():
    """A binary model beside a 3-class one, event "class 2": the note naming the skipped model was raw Markdown."""
    rng = np.random.default_rng(5)
    binary = rng.dirichlet(np.ones(2), size=120)
    models = [hostile_predictions(),
              Predictions.from_arrays(probs=binary, labels=rng.integers(0, 2, 120), name=HOSTILE[1])]
    at = open_with_uploads("pages/2_Reliability.py", models, timeout=120)
    at.selectbox(key="event").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [box.value for box in at.info if "no class 2" in box.value]
    assert notes, [box.value for box in at.info]
    assert all(_rendered_safely(note) for note in notes), notes
    assert HOSTILE[1] in _plain_text(notes[0])
