"""AppTest tests of a refused upload on the Data page: its message names controls it has (issue 23 item 3)."""
from __future__ import annotations

import pytest

from studio.state import APP_KEY

from tests import app_support
from tests.app_support import assert_clean

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

TIMEOUT = 30
NO_LABEL_NAME = b"truth_value,p_a,p_b\na,0.8,0.2\nb,0.3,0.7\nb,0.4,0.6\n"


def test_a_refused_upload_offers_the_column_choices_on_its_message():
    at = app_support.open_link("app.py", timeout=TIMEOUT)
    at.file_uploader[0].set_value(("nolabel.csv", NO_LABEL_NAME, "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert "Correct the column mapping" not in message  # a refused file has no card, so no such control
    assert "Choose the columns" in message
    assert "nolabel" not in at.session_state[APP_KEY].models
    # The control the message names is there, and loads the file.
    at.selectbox(key="data:refused:" + at.file_uploader[0].value[0].file_id + ":label").set_value("truth_value")
    at.button(key="data:refused:" + at.file_uploader[0].value[0].file_id + ":submit").click().run()
    assert_clean(at)
    model = at.session_state[APP_KEY].models["nolabel"]
    assert model.predictions.class_names == ("a", "b") and model.predictions.accuracy == 1.0
    assert not at.error


def test_labels_that_are_the_columns_names_upload_as_they_are():
    at = app_support.open_link("app.py", timeout=TIMEOUT)
    data = b"label,class_0,class_1\nclass_0,0.8,0.2\nclass_1,0.3,0.7\nclass_1,0.4,0.6\n"
    at.file_uploader[0].set_value(("cls.csv", data, "text/csv")).run()
    assert_clean(at)
    assert at.session_state[APP_KEY].models["cls"].predictions.accuracy == 1.0


def test_an_integer_attribute_is_listed_on_the_card_and_offered_as_the_group():
    rows = "\n".join(f"{'Clinton' if k % 3 else 'Dole'},{0.6 + 0.01 * (k % 7):.2f},{0.4 - 0.01 * (k % 7):.2f},{1 + k % 7}"
                     for k in range(30))
    data = ("label,Clinton,Dole,educ\n" + rows + "\n").encode()
    at = app_support.open_link("app.py", timeout=TIMEOUT)
    at.file_uploader[0].set_value(("vote.csv", data, "text/csv")).run()
    assert_clean(at)
    model = at.session_state[APP_KEY].models["vote"]
    assert model.predictions.class_names == ("Clinton", "Dole")
    notes = [w.value for w in at.warning if "not used as classes" in w.value]
    assert len(notes) == 1 and "educ" in notes[0] and "Group column" in notes[0]
    assert "educ" in at.selectbox(key="data:map:vote:group").options


def test_a_fix_offered_after_choosing_columns_keeps_the_columns_chosen():
    data = b"truth_value,p_a,p_b\na,0.8,0.4\nb,0.3,0.9\nb,0.4,0.9\n"  # no label name, rows not summing to 1
    at = app_support.open_link("app.py", timeout=TIMEOUT)
    at.file_uploader[0].set_value(("both.csv", data, "text/csv")).run()
    file_id = at.file_uploader[0].value[0].file_id
    at.selectbox(key=f"data:refused:{file_id}:label").set_value("truth_value")
    at.button(key=f"data:refused:{file_id}:submit").click().run()
    assert len(at.error) == 1 and "sum" in at.error[0].value
    at.button(key=f"data:fix:{file_id}:renormalize").click().run()
    assert_clean(at)
    model = at.session_state[APP_KEY].models["both"]
    assert dict(model.options)["label_column"] == "truth_value" and model.predictions.accuracy == 1.0
