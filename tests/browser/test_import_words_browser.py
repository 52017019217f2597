"""The Data page imports a file rated in words (pass/fail): the column guess shows the kind and labels, the page's
prefills (kind binary, scale 0-1 = the codes) import it, and the label kinds table names the labels."""

from __future__ import annotations

from pathlib import Path

FAITH = Path(__file__).resolve().parents[1] / "fixtures" / "words" / "faithfulness_annotators.csv"


def test_upload_a_pass_fail_file_and_import_it_as_binary_labels(app):
    app.open("", "Data")
    uploader = app.page.locator('.st-key-upload input[type="file"]')
    uploader.set_input_files({"name": "faith.csv", "mimeType": "text/csv", "buffer": FAITH.read_bytes()})
    app.page.get_by_role("button", name="Import dataset").wait_for()
    app.idle()
    assert app.problems() == []
    main = app.page.locator('[data-testid="stMain"]')
    assert float(app.page.get_by_label("Scale max · faithfulness").input_value()) == 1.0
    app.screenshot("words-upload-form")
    app.page.get_by_role("button", name="Import dataset").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    assert main.get_by_text("faithfulness", exact=False).count() >= 1
    app.screenshot("words-imported")
