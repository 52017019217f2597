"""End-to-end, in headless chromium: an Inspect AI log written by inspect_ai (a ``mockllm`` model with fixed outputs
graded by ``model_graded_qa`` through another ``mockllm`` model, two epochs: the log tests/test_import_inspect_log.py
commits, written by its write_log) uploaded on the Data page: the page recognises the .eval log, previews its samples
with the scorer's values, proposes the human sources and the metadata keys it holds, and imports it as ``import-log``
does; the Alignment page then shows the judge's Pearson correlation with the humans equal to one computed by hand from
the log."""

from __future__ import annotations

import math

import pytest

from tests.test_import_inspect_log import FIXTURE, by_hand, pytestmark as needs_inspect_ai

pytestmark = [pytest.mark.browser, needs_inspect_ai]  # inspect_ai looked up, not imported (about 3 s a collection)


def _choose(app, label: str, option: str) -> None:
    """Pick ``option`` in a selectbox by typing it (the list opens under the preview's grid, off the viewport)."""
    box = app.page.get_by_role("combobox", name=label, exact=True)
    box.click()
    box.fill(option)
    app.page.get_by_role("option", name=option, exact=True).click()
    app.idle()


def test_an_inspect_log_uploads_imports_and_correlates_as_by_hand(app):
    log = FIXTURE
    assert log.suffix == ".eval"
    expected = by_hand(log, "metadata:rating")

    app.open("", "Data")
    app.page.locator('.st-key-upload input[type="file"]').set_input_files(
        {"name": log.name, "mimeType": "application/octet-stream", "buffer": log.read_bytes()})
    app.page.get_by_role("button", name="Import log").wait_for()
    app.idle()
    assert app.problems() == []
    app.page.get_by_text("Inspect log of task", exact=False).first.wait_for()
    app.page.get_by_text("judge mockllm/model", exact=False).first.wait_for()
    preview = app.grid(app.page.locator('[data-testid="stDataFrame"]').first)  # the log's samples, first on the page
    assert len(preview) >= 6 and "score: model_graded_qa" in preview[0], preview[:1]
    assert app.selected("Human ratings") == "metadata:rating"  # the numeric metadata key, before the target
    for label, key in (("Document key", "doc"), ("System key", "system")):
        _choose(app, label, key)
        assert app.selected(label) == key
    app.screenshot("inspect-upload-form")

    app.page.get_by_role("button", name="Import log").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []

    app.nav("Alignment")
    app.heading("Correlation with human ratings", level=3).wait_for()
    app.idle()
    app.choose("Coefficient", "pearson")
    app.heading("Correlation with human ratings", level=3).wait_for()
    assert app.problems() == []
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_correlations"))
    rows = app.grid(block.locator('[data-testid="stDataFrame"]').first)
    shown = [r for r in rows if r.get("level") == "dataset" and r.get("coefficient") == "pearson"]
    assert len(shown) == 1, rows
    assert math.isclose(float(shown[0]["statistic"]), expected, abs_tol=5e-4), (shown, expected)
    app.screenshot("inspect-alignment")
