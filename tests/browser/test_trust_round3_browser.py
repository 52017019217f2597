"""The server's key in a real browser, third round: a base URL whose port the trust rule and the HTTP client read
differently (``:86_32``), typed by a visitor who is not signed in, on Criteria's "Generate evaluation steps" and on
Score. The operator allow-listed ``http://127.0.0.1/v1`` (no explicit port): before the fix the typed URL compared
equal to it and the listener on 8632 received the server's key."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

CANARY = "sk-canary-browser-round3-0123456789"


@pytest.fixture(scope="module")
def portless_app(tmp_path_factory):
    from conftest import start_app, stop_app

    server = start_app(tmp_path_factory.mktemp("portless"), resamples=20,
                       extra_env={"OPENAI_API_KEY": CANARY, "EVALCORE_ALLOWED_ENDPOINTS": "http://127.0.0.1/v1"})
    try:
        yield server
    finally:
        stop_app(server)


def test_a_port_the_parsers_read_differently_gets_no_key(browser, portless_app):
    from conftest import UI_TIMEOUT_MS, VIEWPORT, AppPage

    from evalcore.testing.sink import Attacker

    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    app = AppPage(ctx.new_page(), portless_app.url)
    with Attacker() as bad:
        digits = str(bad.port)
        url = f"http://127.0.0.1:{digits[:2]}_{digits[2:]}/v1"
        app.open("criteria", "Criteria")
        app.page.get_by_text("Generate evaluation steps with the judge").click()
        app.type_into("Base URL", url)
        app.type_into("Model", "gpt-4o")
        expect(app.page.get_by_text("URL parsers read it differently").first.or_(
            app.page.get_by_text("is refused").first)).to_be_visible()
        expect(app.page.get_by_role("button", name="Generate evaluation steps", exact=True)).to_be_disabled()
        app.screenshot("trust-round3-criteria-ambiguous-port")
        app.nav("Score")
        app.heading("Score").wait_for()
        app.idle()
        expect(app.page.get_by_text("is refused").first).to_be_visible()
        expect(app.page.get_by_role("button", name="Start scoring")).to_be_disabled()
        app.screenshot("trust-round3-score-ambiguous-port")
        assert bad.connections == 0 and bad.seen == b""
    assert CANARY not in portless_app.log_tail(1_000_000)
    ctx.close()
