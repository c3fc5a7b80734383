"""AppTest tests of the Streamlit app: every page, deep links, ?demo= links, uploads, widgets.

Each test starts a fresh AppTest session. ``AppTest.from_file("app.py")``
followed by ``switch_page(page)`` *before the first run* runs the page file
directly in a fresh session, as Streamlit does when a deep link such as
``/Reliability`` is opened first; app.py never runs then.
"""
from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import calib_core as cc
from calib_core.io import load_demo
from calib_core.plot import figures
from studio.nav import PAGES, available_pages
from studio.state import APP_KEY, DEFAULT_DEMO

from tests import app_support
from tests.app_support import assert_clean, plotly_specs

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

ROOT = Path(__file__).resolve().parents[2]
PAGE_FILES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
TIMEOUT = 30
GOOD_CSV = b"label,p_cat,p_dog,p_fox\ncat,0.7,0.2,0.1\ndog,0.1,0.8,0.1\nfox,0.3,0.3,0.4\ncat,0.5,0.4,0.1\n"

BAD_UPLOADS = {
    "nan": b"label,p_0,p_1\n0,0.5,0.5\n1,nan,0.5\n",
    "unnormalised": b"label,p_0,p_1\n0,0.5,0.6\n1,0.2,0.3\n",
    "label_out_of_range": b"label,p_0,p_1\n0,0.5,0.5\n7,0.5,0.5\n",
    "garbage": b"\x00\x01\x02 not a table \xff\xfe\x00",
    "empty": b"",
}


def open_page(page: str = "app.py", query: dict[str, str] | None = None) -> AppTest:
    """Run ``page`` in a fresh session (a deep link when it is not app.py)."""
    return app_support.open_link(page, timeout=TIMEOUT, query=query)


def loaded(at: AppTest) -> list[str]:
    return list(at.session_state[APP_KEY].models)


def unescape(markdown: str) -> str:
    """The text a reader sees of Markdown whose special characters were backslash-escaped."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")  # md()'s invisible word joiner


def values(data) -> np.ndarray:
    """A trace's array: plotly.js JSON stores numpy arrays as {"dtype", "bdata" (base64)}."""
    if isinstance(data, dict) and "bdata" in data:
        array = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        return array.reshape(data["shape"]) if "shape" in data and isinstance(data["shape"], list) else array
    return np.asarray(data)


def model_lines(spec: dict) -> list[dict]:
    """The curves of a sensitivity figure without the legend entries of the reference lines."""
    return [t for t in spec["data"] if not t.get("legendgroup", "").startswith("mark-")]


def traces_named(spec: dict, name: str) -> list[dict]:
    return [trace for trace in spec["data"] if trace.get("name") == name]


# ----------------------------------------------------------------------------- every page

def test_every_page_file_is_in_the_nav():
    listed = {page.path for page in PAGES}
    assert set(PAGE_FILES) <= listed
    assert [page.path for page in available_pages()] == [p.path for p in PAGES if p.path in PAGE_FILES]


def record_page_icons(monkeypatch) -> list:
    """The ``page_icon`` of every ``st.set_page_config`` call from now on (the calls still go through)."""
    import streamlit

    icons = []
    real = streamlit.set_page_config

    def recording(*args, **kwargs):
        icons.append(kwargs.get("page_icon"))
        return real(*args, **kwargs)

    monkeypatch.setattr(streamlit, "set_page_config", recording)
    return icons


def assert_the_shipped_favicon(icons: list) -> None:
    """The browser tab's icon ships with the app (issue 30, item 9): a Material icon as ``page_icon`` made every
    visitor's browser fetch it from fonts.gstatic.com, an outside host (an offline server showed none)."""
    assert icons, "the page sets its config"
    for icon in icons:
        assert isinstance(icon, (str, Path)) and not str(icon).startswith(":"), icon  # no Material icon or emoji code
        path = Path(icon)
        assert path.is_file() and path.stat().st_size < 4096, icon  # a small file in the repository


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_runs_on_the_default_demo_in_a_fresh_session(page, monkeypatch):
    """Every page on the default demo, and it sets the shipped favicon (once tests/app/test_favicon.py: one
    render of each page checks both)."""
    icons = record_page_icons(monkeypatch)
    at = open_page(page)
    assert_clean(at)
    assert_the_shipped_favicon(icons)
    assert loaded(at) == [DEFAULT_DEMO]
    assert at.query_params.get("demo") == DEFAULT_DEMO
    assert at.title and at.title[0].value
    # the shared sidebar: the custom nav labels the home page "Data"
    labels = [link.value for link in at.sidebar.get("page_link")]  # the Data page's cards link too
    assert labels[:5] == ["Data", "Metrics", "Reliability", "Per-class", "Bin sensitivity"]
    if page == "pages/10_Groups.py":
        # The default demo brings its group column (strokes): the page draws instead of asking for one.
        assert at.get("plotly_chart") and not any("Group column" in str(e.value) for e in at.info)
    elif page != "app.py":
        assert at.get("plotly_chart"), "every analysis page draws a chart"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGE_FILES[1:])
def test_pages_with_a_binary_and_a_three_class_model_on_one_split(page):
    at = open_page(page, {"demo": "breast_cancer_svc,iris_mlp", "split": "test"})
    assert_clean(at)
    assert loaded(at) == ["breast_cancer_svc", "iris_mlp"]
    assert at.session_state[APP_KEY].split == "test"
    if page == "pages/3_Per-class.py":
        assert "iris\\_mlp has other classes" in at.info[0].value  # names are Markdown-escaped (plain text)


def test_hidden_models_leave_the_pages_but_stay_loaded():
    at = open_page("pages/2_Reliability.py", {"demo": "wine_mlp,wine_svc"})
    at.sidebar.multiselect(key="studio:shown_models").set_value(["wine_svc"]).run()
    assert_clean(at)
    assert loaded(at) == ["wine_mlp", "wine_svc"]
    names = {t.get("name") for t in plotly_specs(at)[0]["data"]}
    assert "wine_svc" in names and "wine_mlp" not in names
    at.sidebar.multiselect(key="studio:shown_models").set_value([]).run()
    assert not at.exception
    assert "Every model is hidden" in at.info[0].value


def test_deep_link_loads_the_demo_and_draws_the_diagram():
    at = open_page("pages/2_Reliability.py")
    assert_clean(at)
    assert at.title[0].value == "Reliability diagram"
    (spec,) = plotly_specs(at)
    (trace,) = traces_named(spec, DEFAULT_DEMO)
    expected = cc.reliability_table(load_demo(DEFAULT_DEMO).probs, load_demo(DEFAULT_DEMO).labels, 15)
    # Bins under MIN_BIN_COUNT rows leave the line (a gap) and are drawn faded in a trace of their own.
    np.testing.assert_allclose(values(trace["y"]), expected["observed_frequency"].where(
        expected["count"] >= figures.MIN_BIN_COUNT))
    assert at.metric[0].value == f"{cc.ece(load_demo(DEFAULT_DEMO).probs, load_demo(DEFAULT_DEMO).labels):.4f}"


@pytest.mark.slow
def test_navigation_keeps_the_models_and_the_widget_values():
    at = open_page("app.py")
    at.switch_page("pages/2_Reliability.py").run()
    at.slider(key="bins").set_value(7).run()
    at.switch_page("pages/1_Metrics.py").run()
    at.switch_page("pages/2_Reliability.py").run()
    assert_clean(at)
    assert loaded(at) == [DEFAULT_DEMO]
    assert at.slider(key="bins").value == 7


# ----------------------------------------------------------------------------- links

def test_demo_query_param_opens_those_demos():
    at = open_page("pages/2_Reliability.py", {"demo": "wine_random_forest,wine_gaussian_nb"})
    assert_clean(at)
    assert loaded(at) == ["wine_random_forest", "wine_gaussian_nb"]
    assert at.query_params["demo"] == "wine_random_forest,wine_gaussian_nb"
    names = {trace.get("name") for trace in plotly_specs(at)[0]["data"]}
    assert {"wine_random_forest", "wine_gaussian_nb"} <= names


def test_unknown_demo_says_which_exist_and_opens_the_default():
    at = open_page("app.py", {"demo": "no_such_model"})
    assert not at.exception
    assert len(at.error) == 1
    assert "no_such_model" in at.error[0].value and DEFAULT_DEMO in at.error[0].value
    assert loaded(at) == [DEFAULT_DEMO]
    assert at.query_params["demo"] == DEFAULT_DEMO


def test_split_link_and_split_selector():
    at = open_page("pages/2_Reliability.py", {"split": "test"})
    assert_clean(at)
    store = at.session_state[APP_KEY]
    assert store.split == "test"
    assert "450 rows (test rows)" in " ".join(unescape(c.value) for c in at.sidebar.caption)
    at.sidebar.radio(key="studio:split").set_value("calibration").run()
    assert at.query_params["split"] == "calibration"
    assert "449 rows (calibration rows)" in " ".join(unescape(c.value) for c in at.sidebar.caption)
    at.sidebar.radio(key="studio:split").set_value("All rows").run()
    assert "split" not in at.query_params


# ----------------------------------------------------------------------------- uploads

def test_good_upload_adds_a_model_and_keeps_the_demo():
    at = open_page("app.py")
    at.file_uploader[0].set_value(("pets.csv", GOOD_CSV, "text/csv")).run()
    assert_clean(at)
    assert loaded(at) == [DEFAULT_DEMO, "pets"]
    predictions = at.session_state[APP_KEY].models["pets"].predictions
    assert predictions.class_names == ("cat", "dog", "fox")
    assert predictions.labels.tolist() == [0, 1, 2, 0]
    assert any(m.value == "#### pets" for m in at.markdown)
    # rerunning does not load the same upload again; the link keeps naming the demo only
    at.run()
    assert loaded(at) == [DEFAULT_DEMO, "pets"]
    assert at.query_params["demo"] == DEFAULT_DEMO
    # issue 15: the pages now show the upload; the demo stays loaded, one click away under Models shown
    assert at.sidebar.multiselect(key="studio:shown_models").value == ["pets"]
    assert DEFAULT_DEMO in at.sidebar.multiselect(key="studio:shown_models").options
    at.switch_page("pages/3_Per-class.py").run()
    assert_clean(at)
    assert not any("other classes than" in box.value for box in [*at.info, *at.warning]), [i.value for i in at.info]
    assert any("pets" in m.value for m in at.markdown)


def test_upload_of_every_format():
    rng = np.random.default_rng(0)
    probs, labels = rng.dirichlet(np.ones(3), size=20), rng.integers(0, 3, 20)
    npy, npz, parquet = io.BytesIO(), io.BytesIO(), io.BytesIO()
    np.save(npy, np.column_stack([probs, labels]))
    np.savez(npz, probs=probs, labels=labels)
    pd.DataFrame({"label": labels, "p_a": probs[:, 0], "p_b": probs[:, 1], "p_c": probs[:, 2]}).to_parquet(parquet)
    tsv = pd.DataFrame({"y_true": labels, **{f"logit_{k}": np.log(probs[:, k]) for k in range(3)}}).to_csv(
        sep="\t", index=False).encode()
    at = open_page("app.py")
    at.file_uploader[0].set_value([("a.npy", npy.getvalue(), "application/octet-stream"),
                                   ("b.npz", npz.getvalue(), "application/octet-stream"),
                                   ("c.parquet", parquet.getvalue(), "application/octet-stream"),
                                   ("d.tsv", tsv, "text/tab-separated-values")]).run()
    assert_clean(at)
    models = at.session_state[APP_KEY].models
    assert [(n, m.predictions.source_format, m.predictions.input_kind) for n, m in models.items()][1:] == [
        ("a", "npy", "probabilities"), ("b", "npz", "probabilities"), ("c", "parquet", "probabilities"),
        ("d", "csv", "logits")]
    for name in "abcd":
        np.testing.assert_allclose(models[name].predictions.probs, probs, atol=1e-12)
        assert models[name].predictions.labels.tolist() == labels.tolist()
    # the column-mapping form offers the file's columns (by number for a plain NPY array)
    assert at.selectbox(key="data:map:a:label").options == ["(detect)", "0", "-1"]
    assert at.selectbox(key="data:map:c:label").options == ["(detect)", "label", "p_a", "p_b", "p_c"]


def test_several_uploads_at_once_and_name_clashes():
    at = open_page("app.py")
    at.file_uploader[0].set_value([("pets.csv", GOOD_CSV, "text/csv"), ("pets.csv", GOOD_CSV, "text/csv")]).run()
    assert_clean(at)
    assert loaded(at) == [DEFAULT_DEMO, "pets", "pets (2)"]


@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_bad_upload_shows_an_error_and_keeps_the_loaded_models(case):
    at = open_page("app.py")
    at.file_uploader[0].set_value([("pets.csv", GOOD_CSV, "text/csv"),
                                   (f"{case}.csv", BAD_UPLOADS[case], "text/csv")]).run()
    assert not at.exception
    assert len(at.error) == 1
    message = unescape(at.error[0].value)
    assert f"{case}.csv" in message
    # Either fix buttons are offered (they are the advice) or the message says how to mend the file.
    fix_buttons = [b for b in at.button if b.key and b.key.startswith("data:fix:")]
    assert bool(fix_buttons) != ("upload it again" in message)
    assert "Traceback" not in message
    assert loaded(at) == [DEFAULT_DEMO, "pets"]


def test_an_upload_over_the_decoded_limits_is_refused_and_the_page_states_them():
    """Issue 30.1: a 129 KB Parquet of 10,000,000 rows took the server from 0.6 GB to 3.6 GB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from calib_core.io.formats import MAX_CELLS, MAX_ROWS

    n = MAX_ROWS + 1
    buffer = io.BytesIO()
    pq.write_table(pa.table({"label": np.zeros(n, np.int8), "p_0": np.full(n, 0.7), "p_1": np.full(n, 0.3)}),
                   buffer, compression="zstd")
    at = open_page("app.py")
    assert any(f"{MAX_ROWS:,} rows and {MAX_CELLS:,} cells" in text for text in texts(at))
    at.file_uploader[0].set_value(("bomb.parquet", buffer.getvalue(), "application/octet-stream")).run()
    assert not at.exception and len(at.error) == 1
    message = unescape(at.error[0].value)
    assert f"{n:,} rows" in message and "--engine stream" in message and "Large tables" in message
    assert not PYTHON_ARGUMENTS.search(message), message
    assert loaded(at) == [DEFAULT_DEMO]


def test_remove_a_model():
    at = open_page("app.py", {"demo": "wine_mlp,wine_svc"})
    at.button(key="data:remove:wine_mlp").click().run()
    assert_clean(at)
    assert loaded(at) == ["wine_svc"]
    assert at.query_params["demo"] == "wine_svc"


def test_demo_picker_adds_and_removes_demos():
    at = open_page("app.py")
    at.multiselect(key="data:demos").set_value([DEFAULT_DEMO, "iris_svc"]).run()
    assert loaded(at) == [DEFAULT_DEMO, "iris_svc"]
    at.multiselect(key="data:demos").set_value(["iris_svc"]).run()
    assert_clean(at)
    assert loaded(at) == ["iris_svc"]
    assert at.query_params["demo"] == "iris_svc"


@pytest.mark.slow
def test_column_mapping_reloads_the_file_and_a_bad_mapping_keeps_the_model():
    data = b"label,other,p_a,p_b\n0,1,0.9,0.1\n1,1,0.2,0.8\n0,1,0.6,0.4\n"
    at = open_page("app.py")
    at.file_uploader[0].set_value(("remap.csv", data, "text/csv")).run()
    assert loaded(at)[-1] == "remap"
    assert at.session_state[APP_KEY].models["remap"].predictions.labels.tolist() == [0, 1, 0]

    at.selectbox(key="data:map:remap:label").set_value("other")
    at.button(key="data:map:remap:submit").click().run()
    assert_clean(at)
    model = at.session_state[APP_KEY].models["remap"]
    assert model.predictions.labels.tolist() == [1, 1, 1]
    assert dict(model.options) == {"label_column": "other"}

    at.selectbox(key="data:map:remap:label").set_value("p_a")
    at.button(key="data:map:remap:submit").click().run()
    assert not at.exception
    assert len(at.error) == 1 and "could not be read with these settings" in at.error[0].value
    assert at.session_state[APP_KEY].models["remap"].predictions.labels.tolist() == [1, 1, 1]


# ----------------------------------------------------------------------------- widgets

@pytest.mark.slow
def test_reliability_widgets_change_the_chart():
    at = open_page("pages/2_Reliability.py", {"demo": "digits_gaussian_nb,digits_random_forest"})
    at.slider(key="bins").set_value(5).run()
    (spec,) = plotly_specs(at)
    (trace,) = traces_named(spec, "digits_random_forest")
    assert 1 <= len(values(trace["x"])) <= 5
    assert "error_y" in trace and trace["error_y"]["visible"]

    at.radio(key="layout").set_value("side_by_side").run()
    (spec,) = plotly_specs(at)
    assert "xaxis2" in spec["layout"] and "xaxis4" in spec["layout"]  # two columns, two rows

    at.radio(key="style").set_value("bars").run()
    (spec,) = plotly_specs(at)
    assert any(t["type"] == "bar" and t.get("name", "").startswith("Gap") for t in spec["data"])

    at.selectbox(key="event").set_value(3).run()
    assert_clean(at)
    (spec,) = plotly_specs(at)
    (trace,) = traces_named(spec, "digits_gaussian_nb")
    predictions = load_demo("digits_gaussian_nb")
    expected = cc.reliability_table(predictions.probs, predictions.labels, 5, "uniform", target=3)
    np.testing.assert_allclose(values(trace["y"]), expected["observed_frequency"])


@pytest.mark.slow
def test_metrics_table_matches_calib_core_and_reacts_to_the_widgets():
    at = open_page("pages/1_Metrics.py")
    assert_clean(at)
    predictions = load_demo(DEFAULT_DEMO)
    table = at.dataframe[1].value
    assert len(table) == len(cc.metrics_of_kind("classes"))
    ece_row = table[table["metric"] == "ECE"].iloc[0]
    assert ece_row["estimate"] == pytest.approx(cc.ece(predictions.probs, predictions.labels), abs=1e-12)
    assert ece_row["ci_low"] < ece_row["estimate"] < ece_row["ci_high"]
    assert at.download_button and at.download_button[0].label == "Download as CSV"

    at.slider(key="metric_bins").set_value(30)
    at.radio(key="metric_binning").set_value("adaptive")
    at.selectbox(key="boot").set_value(0).run()
    table = at.dataframe[1].value
    ece_row = table[table["metric"] == "ECE"].iloc[0]
    expected = cc.ece(predictions.probs, predictions.labels, n_bins=30, binning="adaptive")
    assert ece_row["estimate"] == pytest.approx(expected, abs=1e-12)
    assert np.isnan(ece_row["ci_low"]) and ece_row["n_bins"] == 30


def test_per_class_sorting_and_class_choice():
    at = open_page("pages/3_Per-class.py")
    at.radio(key="sort").set_value("ace").run()
    bars, diagram = plotly_specs(at)
    order = bars["layout"]["xaxis"]["categoryarray"]
    predictions = load_demo(DEFAULT_DEMO)
    per_class = cc.ace(predictions.probs, predictions.labels, per_class=True)
    assert order == [predictions.class_names[k] for k in np.argsort(-per_class, kind="stable")]

    at.selectbox(key="cls").set_value(4).run()
    assert_clean(at)
    _, diagram = plotly_specs(at)
    (trace,) = traces_named(diagram, DEFAULT_DEMO)
    expected = cc.reliability_table(predictions.probs, predictions.labels, 15, "uniform", target=4)
    np.testing.assert_allclose(values(trace["x"]), expected["mean_confidence"])


@pytest.mark.slow
def test_bin_sensitivity_with_one_then_several_models():
    at = open_page("pages/4_Bin_sensitivity.py")
    assert_clean(at)
    (curves,) = plotly_specs(at)
    assert len(model_lines(curves)) == 8  # 4 metrics x 2 binnings for one model
    assert {t["name"] for t in curves["data"]} >= {"optimal_n_bins(N) = 21", "N^(1/3) = 9.65"}  # N = 899
    assert at.info and "at least two models" in at.info[0].value

    at.button[0].click().run()  # "Compare with the other digits demo models"
    assert_clean(at)
    assert len(loaded(at)) == 5
    curves, ranks = plotly_specs(at)
    heatmap = next(t for t in ranks["data"] if t["type"] == "heatmap")
    assert len(values(heatmap["y"])) == 5 and len(values(heatmap["x"])) == 199
    assert at.warning or at.success  # the ranking either flips or it does not, and the page says which

    at.multiselect(key="metrics").set_value(["ece"]).run()
    curves, _ = plotly_specs(at)
    assert len(model_lines(curves)) == 5 * 2


# ----------------------------------------------------------------------------- figures (no app needed)

def reliability_tables(*names):
    return {name: cc.reliability_table(load_demo(name).probs, load_demo(name).labels, 10) for name in names}


def test_reliability_figure_layouts_and_styles():
    tables = reliability_tables("wine_svc", "wine_mlp")
    overlay = figures.reliability_figure(tables, colors={"wine_svc": 0, "wine_mlp": 1})
    assert {t.name for t in overlay.data} >= {"Perfect calibration", "wine_svc", "wine_mlp"}
    assert "xaxis2" in overlay.layout and "xaxis3" not in overlay.layout  # diagram + histogram
    line = next(t for t in overlay.data if t.name == "wine_mlp" and t.mode == "lines+markers")
    assert line.line.color == figures.color_for(1)
    np.testing.assert_allclose(line.error_y.array, tables["wine_mlp"]["ci_high"] - tables["wine_mlp"]["observed_frequency"])
    counts = [t for t in overlay.data if t.type == "bar"]
    assert sum(len(t.y) for t in counts) == len(tables["wine_svc"]) + len(tables["wine_mlp"])

    side = figures.reliability_figure(tables, layout="side_by_side", style="bars", histogram_log=True)
    assert "xaxis4" in side.layout and side.layout.yaxis3.type == "log"
    gaps = [t for t in side.data if t.name == "Gap (confidence - frequency)"]
    assert len(gaps) == 2 and sum(bool(t.showlegend) for t in gaps) == 1
    np.testing.assert_allclose(np.asarray(gaps[0].base, dtype=float), tables["wine_svc"]["observed_frequency"])
    with pytest.raises(ValueError, match="layout"):
        figures.reliability_figure(tables, layout="grid")


def test_per_class_and_sensitivity_figures():
    predictions = load_demo("wine_gaussian_nb")
    table = pd.DataFrame({
        "class": list(predictions.class_names), "support": [10, 20, 30], "mean_probability": [0.3, 0.3, 0.4],
        "ace": [0.1, 0.3, 0.2], "tace": [0.1, 0.3, 0.2], "classwise_ece": [0.05, 0.01, 0.02],
    })
    fig = figures.per_class_figure({"m": table}, sort_by="ace")
    names = list(predictions.class_names)
    assert list(fig.layout.xaxis.categoryarray) == [names[1], names[2], names[0]]
    fig = figures.per_class_figure({"m": table}, sort_by="classwise_ece")
    assert list(fig.layout.xaxis2.categoryarray) == [names[0], names[2], names[1]]

    sweep = cc.bin_sensitivity(predictions.probs, predictions.labels, bin_counts=range(2, 31)).assign(model="m")
    fig = figures.sensitivity_figure(sweep, marks={"a": 5, "b": 9.5})
    assert len(fig.data) == 4 * 2 + 2
    assert sorted(shape.x0 for shape in fig.layout.shapes) == [5] * 4 + [9.5] * 4

    ranking = cc.rank_by_bins({"m": sweep.drop(columns="model"), "n": sweep.drop(columns="model").assign(
        value=lambda t: t["value"] * 1.5)})
    ranks = ranking.ranks[(ranking.ranks.metric == "ece") & (ranking.ranks.binning == "uniform")]
    rho = ranking.spearman[(ranking.spearman.metric == "ece") & (ranking.spearman.binning == "uniform")]
    fig = figures.rank_figure(ranks, rho)
    heatmap = fig.data[0]
    assert list(heatmap.y) == ["m", "n"] and heatmap.z.shape == (2, 29)
    assert (heatmap.z[0] == 1).all() and (heatmap.z[1] == 2).all()


# ----------------------------------------------------------------------------- Data page: fixes, plain text

PYTHON_ARGUMENTS = re.compile(r"\w+=(True|False|None|'|\"|`|\[)|input_kind|renormalize|class_columns|"
                              r"label_column|score_column|max_bytes|file_format|percentages=|class_names")


def texts(at: AppTest) -> list[str]:
    """Everything the Data page shows in Markdown-like elements, as the reader sees it."""
    elements = [*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success]
    return [unescape(str(e.value)) for e in elements]


@pytest.mark.parametrize("case, data, button, sentence, probs", [
    ("percent", b"label,p_a,p_b\n0,90,10\n1,20,80\n", "Divide by 100", "values divided by 100",
     [[0.9, 0.1], [0.2, 0.8]]),
    ("scaled", b"label,p_a,p_b\n0,0.7,0.1\n1,0.2,0.6\n", "Renormalise rows", "rows renormalised",
     [[0.875, 0.125], [0.25, 0.75]]),
    ("centred", b"label,a,b,c\n0,2,-2,1\n1,-1.5,1.5,1\n2,-3,3,1\n", "Read as logits", "read as logits", None),
])
def test_rejected_upload_offers_its_fix_as_a_button_and_the_card_states_it(case, data, button, sentence, probs):
    at = open_page("app.py")
    at.file_uploader[0].set_value((f"{case}.csv", data, "text/csv")).run()
    assert not at.exception and len(at.error) == 1
    assert not PYTHON_ARGUMENTS.search(unescape(at.error[0].value)), at.error[0].value
    labels = [b.label for b in at.button if b.key and b.key.startswith("data:fix:")]
    assert button in labels
    next(b for b in at.button if b.label == button).click().run()
    assert_clean(at)
    assert loaded(at) == [DEFAULT_DEMO, case]
    model = at.session_state[APP_KEY].models[case]
    if probs is not None:
        np.testing.assert_allclose(model.predictions.probs, probs)
    assert any(t.startswith("Fix applied") and sentence in t for t in texts(at))


def test_error_texts_name_controls_not_python_arguments():
    bad = {"neg": b"label,p_a,p_b\n0,0.5,0.5\n1,-0.1,1.1\n0,0.4,0.6\n1,0.3,0.7\n", "sum": b"label,p_a,p_b\n0,0.5,0.6\n1,0.2,0.3\n",
           "nolabel": b"a,p_a,p_b\n0,0.5,0.5\n", "big": b"label,score\n0,0.5\n1,1.5\n",
           "names": b"label,p_0,p_1\ncat,0.5,0.5\ndog,0.5,0.5\n", "bad.parquet": b"label,p_a\n"}
    at = open_page("app.py")
    at.file_uploader[0].set_value([(name if "." in name else f"{name}.csv", data, "text/csv")
                                   for name, data in bad.items()]).run()
    assert not at.exception and len(at.error) == len(bad)
    for element in at.error:
        assert not PYTHON_ARGUMENTS.search(unescape(element.value)), element.value


def test_logits_read_without_being_told_say_so_first_and_can_be_refused():
    data = b"label,logit_a,logit_b\n0,0.6,0.4\n1,0.3,0.7\n"  # valid probabilities, named logit_*
    at = open_page("app.py")
    at.file_uploader[0].set_value(("named.csv", data, "text/csv")).run()
    assert_clean(at)
    card_warnings = [unescape(w.value) for w in at.warning]
    assert card_warnings[0].startswith("Read as logits, not probabilities, because the class columns")
    assert at.session_state[APP_KEY].models["named"].predictions.input_kind == "logits"
    at.button(key="data:refuse:named").click().run()
    assert_clean(at)
    model = at.session_state[APP_KEY].models["named"]
    assert model.predictions.input_kind == "probabilities"
    np.testing.assert_array_equal(model.predictions.probs, [[0.6, 0.4], [0.3, 0.7]])
    assert not any(w.startswith("Read as logits") for w in (unescape(x.value) for x in at.warning))
    assert any("read as probabilities" in t for t in texts(at))
    # A refusal that cannot work keeps the model and says why in plain words.
    at = open_page("app.py")
    at.file_uploader[0].set_value(("real.csv", b"label,logit_a,logit_b\n0,2,-1\n1,-3,4\n", "text/csv")).run()
    at.button(key="data:refuse:real").click().run()
    assert not at.exception and len(at.error) == 1
    assert not PYTHON_ARGUMENTS.search(unescape(at.error[0].value))
    assert at.session_state[APP_KEY].models["real"].predictions.input_kind == "logits"


def test_text_labels_matching_no_column_show_the_mapping_for_confirmation():
    rows = "\n".join(f"c{k + 1}," + ",".join("0.9" if j == k else "0.01" for j in range(11)) for k in range(11))
    data = ("label," + ",".join(f"p_{j}" for j in range(11)) + "\n" + rows + "\n").encode()
    at = open_page("app.py")
    at.file_uploader[0].set_value(("c.csv", data, "text/csv")).run()
    assert not at.exception and loaded(at) == [DEFAULT_DEMO]
    mapping = at.dataframe[0].value
    assert list(mapping["label"])[:3] == ["c1", "c2", "c3"] and list(mapping["class column"])[9] == "p_9"
    next(b for b in at.button if b.label == "Use this mapping").click().run()
    assert_clean(at)
    assert at.session_state[APP_KEY].models["c"].predictions.accuracy == 1.0
    assert any("labels mapped to the class columns as confirmed" in t for t in texts(at))


def test_user_strings_are_plain_text_never_markdown():
    image = "![t](http://127.0.0.1:9/t.png)"
    data = f"label,p_{image},p_<b>x</b>\n{image},0.9,0.1\n<b>x</b>,0.2,0.8\n".encode()
    at = open_page("app.py")
    at.file_uploader[0].set_value((f"{image}.csv", data, "text/csv")).run()
    assert_clean(at)
    for element in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.sidebar.markdown]:
        raw = str(element.value)
        assert "![t](" not in raw and "<b>" not in raw, raw
    assert any(image in t for t in texts(at))  # shown, literally
    at.file_uploader[0].set_value((f"{image}.csv", b"label,p_a\n" + image.encode() + b",x\n", "text/csv")).run()
    for element in at.error:
        assert "![t](" not in str(element.value)


def test_reload_with_a_struct_label_column_keeps_the_models_and_shows_no_traceback():
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"label": [0, 1], "p_a": [0.9, 0.2], "p_b": [0.1, 0.8],
                             "meta": pa.array([{"x": 1}, {"x": 2}])}), buffer)
    at = open_page("app.py")
    at.file_uploader[0].set_value(("s.parquet", buffer.getvalue(), "application/octet-stream")).run()
    assert loaded(at) == [DEFAULT_DEMO, "s"]
    at.selectbox(key="data:map:s:label").set_value("meta")
    at.button(key="data:map:s:submit").click().run()
    assert not at.exception and len(at.error) == 1
    message = unescape(at.error[0].value)
    assert "nested values" in message and "Traceback" not in message and "/work" not in message
    assert loaded(at) == [DEFAULT_DEMO, "s"]


def test_unexpected_reader_failures_become_a_clean_message(monkeypatch):
    from studio import compute

    def broken(*args, **kwargs):
        raise TypeError("internal detail /srv/app/secret.py line 3")

    monkeypatch.setattr(compute, "load_file", broken)
    at = open_page("app.py")
    at.file_uploader[0].set_value(("x.csv", GOOD_CSV, "text/csv")).run()
    assert not at.exception and len(at.error) == 1
    assert "secret" not in at.error[0].value and "TypeError" not in at.error[0].value
    assert loaded(at) == [DEFAULT_DEMO]


def test_no_traceback_reaches_a_visitor():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"


# ----------------------------------------------------------------------------- Data page: the first picture

def test_data_page_headline_shows_each_models_diagram_numbers_and_verdict_from_calib_core():
    at = open_page("app.py", {"demo": "wine_svc,iris_mlp"})
    assert_clean(at)
    assert loaded(at) == ["wine_svc", "iris_mlp"]
    charts = plotly_specs(at)
    assert len(charts) == 2, "one small reliability diagram per loaded model"
    assert all(spec["layout"]["height"] < figures.COMPACT_HEIGHT for spec in charts)
    metrics = [(m.label, m.value) for m in at.metric]
    captions = [unescape(c.value) for c in at.caption]
    for name in ("wine_svc", "iris_mlp"):
        preds = load_demo(name)
        for key in ("ece", "ace"):
            # The registry's number and interval at the Metrics page's defaults (15 bins, 200 resamples, seed 0).
            found = cc.metric_interval(key, preds.probs, preds.labels, n_bins=15, binning="uniform", n_boot=200,
                                       alpha=0.05, seed=0)
            assert (cc.metric_name(key), f"{found.estimate:.4f}") in metrics
            assert f"95% interval [{found.low:.4f}, {found.high:.4f}]" in captions
        assert ("Accuracy", f"{preds.accuracy:.1%}") in metrics
        test = cc.calibration_test(preds.probs, preds.labels, method="consistency", seed=0)
        lines = [unescape(m.value) for m in at.markdown]
        assert any("-badge[:material/" in line and f" {test.verdict}] {test.verdict_reason}" in line
                   for line in lines), lines
    links = [(link.value, link.proto.page) for link in at.main.get("page_link")]
    assert sum("Reliability" in label for label, _ in links) == 2
    assert sum("Metrics" in label for label, _ in links) == 2


def test_headline_numbers_are_the_metrics_pages_numbers():
    data = open_page("app.py")
    metrics = open_page("pages/1_Metrics.py")
    assert_clean(data)
    assert_clean(metrics)
    shown = {m.label: m.value for m in data.metric}
    frames = [frame.value for frame in metrics.dataframe]
    table = next(f for f in frames if {"key", "name", "estimate"} <= set(f.columns))  # "Estimates and intervals"
    for key in ("ece", "ace"):
        row = table[table["key"] == key].iloc[0]
        assert shown[row["name"]] == f"{row['estimate']:.4f}"
    tests = next(f for f in frames if {"method", "verdict"} <= set(f.columns))  # "Calibration tests"
    verdict = tests[tests["method"] == "consistency"].iloc[0]["verdict"]
    lines = [unescape(m.value) for m in data.markdown]
    assert any(line.startswith("**Verdict** :") and f" {verdict}] " in line for line in lines), lines


def test_headline_of_a_model_whose_test_cannot_run_says_why_instead_of_failing(monkeypatch):
    from studio import compute

    def refuses(*args, **kwargs):
        raise cc.CalibrationInputError("`labels` hold a single class here.")

    monkeypatch.setattr(compute.cc, "calibration_test", refuses)
    at = open_page("app.py")
    assert_clean(at)
    assert len(plotly_specs(at)) == 1
    assert "**Verdict** :gray-badge[:material/block: n/a] `labels` hold a single class here." in [
        unescape(m.value) for m in at.markdown]


def test_compact_reliability_figure_is_small_without_legend_and_checks_its_height():
    preds = load_demo(DEFAULT_DEMO)
    table = cc.reliability_table(preds.probs, preds.labels, 15, "uniform")
    small = figures.reliability_figure({"m": table}, height=300)
    assert small.layout.height == 300 and small.layout.showlegend is False
    assert figures.reliability_figure({"m": table}).layout.height == 640  # the Reliability page is unchanged
    with pytest.raises(ValueError, match="height"):
        figures.reliability_figure({"m": table}, height=10)
