"""A file of texts with no ratings yet, uploaded on the Data page in chromium (issue 11): the form opens the
"Dimensions to rate in the app" section, the researcher names a binary dimension and its labels, imports, and labels
items on the Label page; the labels land in the store with the declared codes. Screenshots: texts-only-*.png."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.browser

TEXTS = Path(__file__).resolve().parents[1] / "fixtures" / "words" / "texts_only.csv"


def test_texts_only_upload_then_label_it(app, app_server):
    from evalcore.store import Store

    app.open("", "Data")
    app.page.locator('.st-key-upload input[type="file"]').set_input_files(
        {"name": "my_texts.csv", "mimeType": "text/csv", "buffer": TEXTS.read_bytes()})
    app.page.get_by_role("button", name="Import dataset").wait_for()
    app.idle()
    dim = app.page.get_by_label("Dimension 1", exact=True)
    dim.fill("faithful")
    dim.press("Enter")
    app.idle()
    kind = app.page.get_by_role("combobox", name="Kind 1", exact=True)
    kind.click()
    kind.fill("binary")  # the option list filters as one types
    kind.press("Enter")
    app.idle()
    labels = app.page.get_by_label("Labels in order 1", exact=True)
    labels.fill("unfaithful, faithful")
    labels.press("Enter")
    app.idle()
    assert app.problems() == []
    app.screenshot("texts-only-form")
    app.page.get_by_role("button", name="Import dataset").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    dataset_id = app.page.url.split("dataset=")[1].split("&")[0]

    app.nav("Label")
    annotator = app.page.get_by_label("Annotator", exact=True)
    annotator.fill("ann")
    annotator.press("Enter")
    app.idle()
    app.heading("Label").click()  # out of the text field: the keys are the page's shortcuts
    for key in ("2", "1", "2"):  # the labels' shortcuts: 1 = unfaithful, 2 = faithful
        app.page.locator("body").press(key)
        app.idle()
    app.page.get_by_text("3 of ", exact=False).first.wait_for()
    assert app.problems() == []
    app.screenshot("texts-only-label")

    rows = Store(app_server.db_path).label_rows(dataset_id)
    assert len(rows) == 3 and list(rows["value"]) == [1.0, 0.0, 1.0] and set(rows["annotator"]) == {"ann"}
    assert len(pd.read_csv(TEXTS)) > 3
    # the export holds the three labels at once (the labelling part reran alone: the button is not stale)
    with app.page.expect_download() as dl:
        app.page.get_by_role("button", name="Download labels (CSV)").click()
    exported = pd.read_csv(dl.value.path())
    assert len(exported) == 3 and set(exported["annotator"]) == {"ann"}
