"""Hardening in a real browser (issue 9): credentials typed or linked in the base URL never stay in the address bar
(the page's share link), the run record or the store; the key field gets them for the session only."""

from __future__ import annotations

import urllib.parse

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _stored_bytes(app_server) -> bytes:
    return b"".join(p.read_bytes() for p in app_server.db_path.parent.glob(app_server.db_path.name + "*"))


CANARY = "sk-canary-browser-0123456789abcdef"


@pytest.fixture(scope="module")
def keyed_app(tmp_path_factory, loopback):
    """The app as a lab server runs it: the operator's key in the environment (a canary) and one configured
    endpoint, the loopback judge (``EVALCORE_ALLOWED_ENDPOINTS``). Everything else is a stranger's host."""
    from conftest import start_app, stop_app

    server = start_app(tmp_path_factory.mktemp("keyed"), resamples=20,
                       extra_env={"OPENAI_API_KEY": CANARY, "EVALCORE_ALLOWED_ENDPOINTS": loopback.base_url})
    try:
        yield server
    finally:
        stop_app(server)


def test_crafted_links_never_send_the_server_key_to_an_attackers_host(browser, keyed_app, loopback):
    """Issue 21, item 1: /score?base_url=ATTACKER&model=..., the Batch option, Criteria's "Generate evaluation
    steps", and the attacker's URL typed by a visitor: no byte reaches the attacker; the operator's own endpoint
    still works with the server's key, and a visitor's typed key works for the host it was typed for."""
    from conftest import UI_TIMEOUT_MS, VIEWPORT, AppPage

    from evalcore.testing.sink import Attacker

    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    app = AppPage(ctx.new_page(), keyed_app.url)
    with Attacker() as bad:
        host = bad.base_url.split("//", 1)[1]
        for path, heading in (("score", "Score"), ("criteria", "Criteria")):
            q = urllib.parse.urlencode({"base_url": bad.base_url, "model": "gpt-4o", "endpoint": "openai",
                                        "use_batch": "true", "limit": 2})
            app.open(f"{path}?{q}", heading)
            assert host not in app.page.url and "model=gpt-4o" not in app.page.url
            if path == "criteria":
                app.page.get_by_text("Generate evaluation steps with the judge").click()
            expect(app.page.get_by_role("textbox", name="Base URL", exact=True)).to_have_value("")
            expect(app.page.get_by_role("button", name="Start scoring" if path == "score" else
                                        "Generate evaluation steps", exact=True)).to_be_disabled()
            app.screenshot(f"hardening-link-{path}")
        # A visitor types the attacker's URL without a key: refused, with the reason, before anything is sent.
        app.open("score", "Score")
        app.type_into("Base URL", bad.base_url)
        app.type_into("Model", "gpt-4o")
        expect(app.page.get_by_text("is not an endpoint this server's operator configured").first).to_be_visible()
        expect(app.page.get_by_role("button", name="Start scoring")).to_be_disabled()
        app.screenshot("hardening-typed-attacker-refused")
        # The same endpoint fields on Criteria (one endpoint per session): still refused there.
        app.nav("Criteria")
        app.heading("Criteria").wait_for()
        app.idle()
        app.page.get_by_text("Generate evaluation steps with the judge").click()
        expect(app.page.get_by_role("textbox", name="Base URL", exact=True)).to_have_value(bad.base_url)
        expect(app.page.get_by_role("button", name="Generate evaluation steps", exact=True)).to_be_disabled()
        app.idle()
        assert bad.connections == 0 and bad.seen == b""
    # The operator's configured endpoint: the server's key, said on the page, and a run that finishes.
    app.open("score?limit=2", "Score")
    app.type_into("Base URL", loopback.base_url)
    app.type_into("Model", "loopback-judge")
    expect(app.page.get_by_text("with the server's $OPENAI_API_KEY").first).to_be_visible()
    app.start_scoring()
    app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == []
    app.screenshot("hardening-operator-endpoint")
    assert CANARY not in keyed_app.log_tail(1_000_000)
    ctx.close()


def test_credentials_typed_in_the_field_are_moved_then_a_run_stores_none(app, loopback, app_server):
    host = loopback.base_url.split("//", 1)[1]
    app.open("score?limit=2", "Score")
    app.type_into("Model", "loopback-judge")
    app.type_into("Base URL", f"http://bob:t0psecret@{host}")
    app.page.wait_for_function("() => !window.location.search.includes('t0psecret')", timeout=10_000)
    assert app.page.get_by_role("textbox", name="Base URL", exact=True).input_value() == loopback.base_url
    app.start_scoring()
    app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == [] and "t0psecret" not in app.page.url
    assert b"t0psecret" not in _stored_bytes(app_server) and b"s3cret" not in _stored_bytes(app_server)
    assert "t0psecret" not in app_server.log_tail(1_000_000)


def test_uploaded_names_are_shown_as_text_not_markdown(app, app_server, tmp_path):
    """Issue 21, item 7: a dimension named ``![x](http://ATTACKER/p.png) www.evil.example`` and a system id holding
    a link: on the Data, Label and Alignment pages no visitor's browser fetches the image, and nothing becomes a
    link (Markdown image, Markdown link, bare-URL autolink, plotly <a href>)."""
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO_ROOT

    from evalcore.testing.sink import Attacker

    with Attacker() as bad:
        host = bad.base_url.split("//", 1)[1].split("/", 1)[0]
        dim = f"![x](http://{host}/p.png) www.evil.example"
        system = f'<a href="http://{host}/phish">M1</a>'
        rows = [f"d{d},{system if s == 'A' else 'M2'},src {d},out {d}{s},{(d + (s == 'A')) % 5 + 1}"
                for d in range(1, 5) for s in "AB"]
        path = tmp_path / "md.csv"
        path.write_text(f"doc_id,system_id,source,output,{dim}\n" + "\n".join(rows) + "\n")
        env = {**os.environ, "EVALCORE_DB": str(app_server.db_path)}
        out = subprocess.run([sys.executable, "-m", "evalcore", "import-dataset", str(path), "--name", "markdown",
                              "--json"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True)
        ds_id = json.loads(out.stdout)["dataset"]
        for page, heading in (("data", "Data"), ("label", "Label")):
            app.open(f"{page}?dataset={ds_id}", heading)
            app.idle()
            links = app.page.locator(f'a[href*="{host}"], img[src*="{host}"], a[href*="evil.example"]')
            assert links.count() == 0, page
            app.screenshot(f"hardening-markdown-{page}")
        assert bad.connections == 0


def test_six_sessions_opened_at_once_all_get_their_page(open_app):
    """Issue 21, item 11: six browsers opening the app at the same moment each get the page, not a
    StreamlitAPIException ("This page cannot be called directly"): the navigation's pages are built per run."""
    apps = [open_app() for _ in range(6)]
    for a in apps:  # every request on its way before any page has finished running
        a.page.goto(f"{a.base_url}/score", wait_until="commit")
    for a in apps:
        a.heading("Score").wait_for()
        a.idle()
        assert a.problems() == []
