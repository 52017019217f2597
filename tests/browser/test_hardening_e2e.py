"""Hardening in a real browser (issue 9): credentials typed or linked in the base URL never stay in the address bar
(the page's share link), the run record or the store; the key field gets them for the session only."""

from __future__ import annotations

import urllib.parse

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _stored_bytes(app_server) -> bytes:
    return b"".join(p.read_bytes() for p in app_server.db_path.parent.glob(app_server.db_path.name + "*"))


def test_credentials_in_a_shared_link_leave_the_address_bar(app, loopback, app_server):
    host = loopback.base_url.split("//", 1)[1]
    q = urllib.parse.urlencode({"base_url": f"http://alice:s3cret@{host}", "model": "loopback-judge", "limit": 2})
    app.open(f"score?{q}", "Score")
    app.page.wait_for_function("() => !window.location.search.includes('s3cret')", timeout=10_000)
    assert "s3cret" not in app.page.url and urllib.parse.quote(loopback.base_url, safe="") in app.page.url
    # the page reruns once after moving the credentials: the fields are read once that run has drawn them
    expect(app.page.get_by_role("textbox", name="Base URL", exact=True)).to_have_value(loopback.base_url)
    expect(app.page.get_by_role("textbox", name="API key")).to_have_value("s3cret")
    app.idle()
    assert app.problems() == []
    app.screenshot("hardening-credentials-moved")


def test_credentials_typed_in_the_field_are_moved_then_a_run_stores_none(app, loopback, app_server):
    host = loopback.base_url.split("//", 1)[1]
    app.open("score?model=loopback-judge&limit=2", "Score")
    app.type_into("Base URL", f"http://bob:t0psecret@{host}")
    app.page.wait_for_function("() => !window.location.search.includes('t0psecret')", timeout=10_000)
    assert app.page.get_by_role("textbox", name="Base URL", exact=True).input_value() == loopback.base_url
    app.page.get_by_role("button", name="Start scoring").click()
    app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == [] and "t0psecret" not in app.page.url
    assert b"t0psecret" not in _stored_bytes(app_server) and b"s3cret" not in _stored_bytes(app_server)
    assert "t0psecret" not in app_server.log_tail(1_000_000)
