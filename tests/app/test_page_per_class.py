"""The Per-class page with many classes (issue 15): the worst classes as bars, the distribution over all
classes, a class picker of names; with few classes the page is as before."""
from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pytest

import calib_core as cc
from calib_core.io import Predictions
from calib_core.plot import figures
from studio.text import plot_text
from tests.app.test_app_hardening import assert_plot_text_safe
from tests.app_support import assert_clean, open_with_model, plotly_specs, trace_array

PAGE = "pages/3_Per-class.py"


def label(model: Predictions, k: int) -> str:
    """The picker's label of class ``k`` (its name, after its position unless the name is that number)."""
    name = model.class_names[k]
    return name if name == str(k) else f"{k}: {name}"


def synthetic(n_rows: int, n_classes: int, *, seed: int = 0, names: list[str] | None = None) -> Predictions:
    """A float32 softmax model whose labels are drawn from a sharpened copy of its probabilities."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.5, size=(n_rows, n_classes)).astype(np.float32)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    sharp = probs.astype(float) ** 1.5
    cumulative = np.cumsum(sharp / sharp.sum(axis=1, keepdims=True), axis=1)
    labels = np.minimum((cumulative < rng.random((n_rows, 1))).sum(axis=1), n_classes - 1)
    names = names or [f"class {k:03d}" for k in range(n_classes)]
    return Predictions.from_arrays(probs=probs, labels=labels, class_names=names, name=f"synthetic_{n_classes}")


def test_many_classes_show_the_worst_ones_and_the_distribution():
    model = synthetic(3000, 300)
    at = open_with_model(PAGE, model, timeout=120)
    assert_clean(at)
    bars, distribution, diagram = plotly_specs(at)
    ace = cc.ace(model.probs, model.labels, n_bins=15, per_class=True)
    worst = np.argsort(-ace, kind="stable")[:25]
    for trace in bars["data"]:
        assert trace["orientation"] == "h" and len(trace["y"]) == 25
    assert bars["layout"]["yaxis"]["categoryarray"] == [model.class_names[k] for k in worst][::-1]  # worst on top
    np.testing.assert_allclose(trace_array(bars["data"][0]["x"]), ace[worst], atol=1e-12)
    assert any("25 worst of 300 classes" in c.value for c in at.caption)
    # the distribution: every class in each histogram, the 25th largest ACE marked
    assert [t["type"] for t in distribution["data"]] == ["histogram", "histogram"]
    assert trace_array(distribution["data"][0]["x"]).size == 300
    (line,) = [s for s in distribution["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    assert line["x0"] == pytest.approx(ace[worst[-1]])
    # the picker: class names, worst first
    picker = at.selectbox(key="cls")
    assert picker.options[:3] == [label(model, k) for k in worst[:3]]
    assert len(picker.options) == 300
    assert picker.value == worst[0]
    picker.set_value(int(worst[5])).run()
    assert_clean(at)
    assert f"probability of class {plot_text(model.class_names[worst[5]])} in the bin" in str(plotly_specs(at)[2])


def test_many_classes_controls():
    model = synthetic(2000, 120, seed=1)
    at = open_with_model(PAGE, model, timeout=120)
    at.slider(key="worst_n").set_value(10).run()
    at.radio(key="sort").set_value("classwise_ece").run()
    assert_clean(at)
    bars, distribution, _ = plotly_specs(at)
    cw = cc.classwise_ece(model.probs, model.labels, n_bins=15, per_class=True)
    worst = np.argsort(-cw, kind="stable")[:10]
    assert bars["layout"]["yaxis"]["categoryarray"] == [model.class_names[k] for k in worst][::-1]
    (line,) = [s for s in distribution["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    assert line["xref"] == "x2" and line["x0"] == pytest.approx(cw[worst[-1]])
    assert at.selectbox(key="cls").options[0] == label(model, worst[0])
    # class order: the first classes, no threshold line, the picker in file order
    at.radio(key="sort").set_value("class").run()
    assert_clean(at)
    bars, distribution, _ = plotly_specs(at)
    assert bars["layout"]["yaxis"]["categoryarray"] == list(model.class_names[:10])[::-1]
    assert not [s for s in distribution["layout"].get("shapes", []) if s.get("line", {}).get("dash") == "dash"]
    assert at.selectbox(key="cls").options[:2] == [label(model, 0), label(model, 1)]


HOSTILE = ["![t](http://example.com/t.png)", "<img src=x onerror=alert(1)>", "%{x} 50% $y$", "[link](http://x)",
           "<b>bold</b> & " + "very long " * 8]


def test_many_hostile_class_names_render_as_text():
    names = [HOSTILE[k % len(HOSTILE)] + f" #{k}" for k in range(60)]
    model = synthetic(1500, 60, seed=2, names=names)
    at = open_with_model(PAGE, model, timeout=120)
    assert_clean(at)
    bars, distribution, diagram = plotly_specs(at)
    for spec in (bars, distribution, diagram):
        assert_plot_text_safe(spec)
        assert "<b>bold" not in str(spec) and "%{x} 50%" not in str(spec)
    categories = bars["layout"]["yaxis"]["categoryarray"]
    assert {html.unescape(c) for c in categories} <= set(names)
    ticks = bars["layout"]["yaxis"]["ticktext"]
    assert all(len(html.unescape(t)) <= figures.CLASS_LABEL_CHARS for t in ticks)
    assert sorted(at.selectbox(key="cls").options) == sorted(f"{k}: {n}" for k, n in enumerate(names))
    assert not any("<img" in m.value for m in at.markdown)


def test_few_classes_keep_one_bar_per_class():
    model = synthetic(500, 10, seed=3)
    at = open_with_model(PAGE, model, timeout=60)
    assert_clean(at)
    bars, diagram = plotly_specs(at)
    assert [t["type"] for t in bars["data"]] == ["bar", "bar"]
    assert bars["layout"]["xaxis"]["categoryarray"] == list(model.class_names)
    assert at.radio(key="sort").value == "class"
    assert at.selectbox(key="cls").options == [label(model, k) for k in range(10)]
    assert not at.get("slider") or all(s.key != "worst_n" for s in at.slider)


def test_worst_and_distribution_figures_with_two_models():
    a, b = synthetic(800, 50, seed=4), synthetic(800, 50, seed=5)
    tables = {}
    for name, p in (("<b>a</b>", a), ("%{x} b", b)):
        tables[name] = pd.DataFrame({
            "class_index": np.arange(50), "class": list(p.class_names), "support": np.bincount(p.labels, minlength=50),
            "mean_probability": p.probs.mean(axis=0), "ace": cc.ace(p.probs, p.labels, per_class=True),
            "tace": cc.tace(p.probs, p.labels, per_class=True),
            "classwise_ece": cc.classwise_ece(p.probs, p.labels, per_class=True)})
    mean = (tables["<b>a</b>"]["ace"] + tables["%{x} b"]["ace"]) / 2
    worst = np.argsort(-mean.to_numpy(), kind="stable")
    assert figures.worst_classes(tables, "ace").index.tolist() == worst.tolist()
    bars = figures.per_class_worst_figure(tables, sort_by="ace", top_n=8)
    assert len(bars.data) == 4 and all(len(t.y) == 8 for t in bars.data)
    assert list(bars.layout.yaxis.categoryarray) == [a.class_names[k] for k in worst[:8]][::-1]
    distribution = figures.per_class_distribution_figure(tables, sort_by="ace", top_n=8)
    assert len(distribution.data) == 4
    (line,) = distribution.layout.shapes
    assert line.x0 == pytest.approx(mean.iloc[worst[7]])
    for fig in (bars, distribution):
        spec = json.loads(fig.to_json())
        assert_plot_text_safe(spec)
        assert "<b>a</b>" not in str(spec) and "%{x} b" not in str(spec)
    with pytest.raises(ValueError, match="sort_by"):
        figures.worst_classes(tables, "class")
