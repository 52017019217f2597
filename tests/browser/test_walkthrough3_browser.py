"""The Label page's annotator field in headless chromium: after the name is submitted with Enter, the browser's
focus is no longer in a text field, so the digit keys rate the item instead of extending the name ("bob3324352344"
before). Screenshot: artifacts/screenshots/walkthrough3-label-after-enter.png."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_digit_keys_rate_after_the_name_is_submitted_with_enter(open_app, app_server):
    from evalcore.store import Store

    app = open_app()
    app.open("label?label_dims=coherence", "Label")
    field = app.page.get_by_label("Annotator", exact=True)
    # a name no other test in this app server's store uses (its label files share the store)
    field.fill("wt3_carol")
    field.press("Enter")
    app.page.get_by_text("Labelling as wt3_carol", exact=False).wait_for()  # the first item's card
    app.idle()
    focus = app.page.evaluate("() => document.activeElement.tagName")
    app.page.keyboard.press("3")
    app.page.wait_for_timeout(500)
    app.idle()
    app.screenshot("walkthrough3-label-after-enter")
    rows = Store(app_server.db_path).label_rows("summeval")
    rows = rows[rows["annotator"] == "wt3_carol"]
    assert rows["value"].tolist() == [3.0], (focus, rows.to_dict())
    assert focus not in ("INPUT", "TEXTAREA")
    app.page.get_by_text("1 of 50 labelled by wt3_carol", exact=False).wait_for()
    assert app.problems() == []
