"""A first visit explains itself (issue 29, item 2): without ``?demo=`` a fresh session opens three models of one
real data set that differ visibly in calibration, with a group column, so that every page has something to say."""
from __future__ import annotations

import pytest

import calib_core as cc
from calib_core.io import load_demo
from studio import state

from tests import app_support
from tests.app_support import assert_clean

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

TIMEOUT = 60


@pytest.fixture
def built_in_default(monkeypatch):
    """The demos a visitor gets (the rest of the suite pins one model: tests/conftest.py)."""
    monkeypatch.delenv("CALIB_STUDIO_DEFAULT_DEMOS", raising=False)
    return state.BUILT_IN_DEFAULT_DEMOS


def loaded(at) -> list[str]:
    return list(at.session_state[state.APP_KEY].models)


def test_the_default_demos_are_three_models_of_one_data_set_that_differ_in_calibration(built_in_default):
    """Overconfident, underconfident and close to calibrated: the test-row ECEs are far apart, and each model
    brings the same real group column."""
    models = [load_demo(name) for name in built_in_default]
    assert len(models) == 3 and len({m.class_names for m in models}) == 1
    ece = [cc.ece(m.probs, m.labels) for m in models]
    assert min(ece) < 0.03 and max(ece) > 0.2  # logistic regression vs the random forest
    overconfidence = [float(m.probs.max(axis=1).mean() - (m.probs.argmax(axis=1) == m.labels).mean())
                      for m in models]
    assert overconfidence[0] > 0.05 and overconfidence[1] < -0.05  # naive Bayes too sure, the forest too timid
    for model in models:
        assert model.groups is not None and set(model.groups) == {"light", "medium", "heavy"}


def test_a_fresh_session_opens_the_three_default_demos(built_in_default):
    at = app_support.open_link("app.py", timeout=TIMEOUT)
    assert_clean(at)
    assert loaded(at) == list(built_in_default)
    assert at.query_params.get("demo") in (list(built_in_default), ",".join(built_in_default))


def test_bin_sensitivity_compares_the_default_models_on_a_first_visit(built_in_default):
    at = app_support.open_link("pages/4_Bin_sensitivity.py", timeout=TIMEOUT)
    assert_clean(at)
    assert not any("Load at least two models" in str(box.value) for box in at.info)


def test_the_groups_page_shows_the_stroke_groups_on_a_first_visit(built_in_default):
    at = app_support.open_link("pages/10_Groups.py", timeout=TIMEOUT)
    assert_clean(at)
    assert not any("Group column" in str(e.value) for e in at.info)
    shown = " ".join(str(frame.value) for frame in at.dataframe) + " ".join(str(m.value) for m in at.markdown)
    assert "light" in shown and "heavy" in shown


def test_a_deployment_chooses_its_own_default_demos(monkeypatch):
    monkeypatch.setenv("CALIB_STUDIO_DEFAULT_DEMOS", "iris_svc, wine_mlp")
    assert state.default_demos() == ("iris_svc", "wine_mlp")
    at = app_support.open_link("app.py", timeout=TIMEOUT)
    assert loaded(at) == ["iris_svc", "wine_mlp"]
