"""The Score page's Batch API option, its cost table (cached prompt tokens, batch prices) and the replicas list,
driven in chromium against loopback judges."""

from __future__ import annotations

import re

import pytest


pytestmark = pytest.mark.browser
CHAT = "/v1/chat/completions"


def _endpoint(app, base_url: str) -> None:
    app.open("score", "Score")
    app.type_into("Base URL", base_url)
    app.type_into("Model", "gpt-4o-mini")  # a priced model name (the loopback answers any name)
    app.type_into("API key", "sk-test-not-a-real-key")
    app.type_into("Items (0 = all)", "12")


def test_score_page_batch_option_and_cost_table(app, loopback, app_server):
    from evalcore.judge import batch
    from evalcore.store import Store

    _endpoint(app, loopback.base_url)
    app.page.get_by_text("Use the OpenAI Batch API", exact=True).click()
    app.idle()
    app.page.get_by_text("Cost, Batch API (USD)").wait_for()
    app.page.get_by_text("Cost by kind of token", exact=False).click()
    app.idle()
    main = app.page.locator('[data-testid="stMain"]')
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_cost_table"))
    rows = {r["Tokens"]: r for r in app.grid(block.locator('[data-testid="stDataFrame"]').first)}
    assert set(rows) == {"prompt tokens (not cached)", "prompt tokens (cached)", "completion tokens", "total"}
    assert rows["completion tokens"]["USD per 1M (online)"] == "0.600"  # gpt-4o-mini's list price
    assert rows["prompt tokens (cached)"]["USD per 1M (online)"] == "0.075"
    assert all("None" not in v and v.lower() != "nan" for r in rows.values() for v in r.values())
    app.screenshot("score-batch-estimate")
    chat_before = loopback.by_path.get(CHAT, 0)
    app.start_scoring()
    app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == []
    text = main.inner_text()
    run_id = re.search(r"Run (summeval/\S+)", text).group(1)
    assert "Batches of this run" in text
    assert loopback.by_path.get(CHAT, 0) == chat_before  # the whole run went through /v1/batches
    rows = batch.batch_rows(Store(app_server.db_path), run_id)
    assert rows and all(r["status"] == "completed" and r["collected"] for r in rows)
    # what the run used, as the batch replies reported it, priced online and through the Batch API
    app.page.get_by_text("Tokens and cost of this run", exact=False).click()
    app.idle()
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(has=app.page.locator(".st-key-csv_run_cost"))
    used = {r["Tokens"]: r for r in app.grid(block.locator('[data-testid="stDataFrame"]').first)}
    stats = Store(app_server.db_path).run_row(run_id)["stats"]["batch"]
    assert used["prompt tokens (not cached)"]["Count"] == f"{stats['prompt_tokens']:,}"
    assert used["completion tokens"]["Count"] == f"{stats['completion_tokens']:,}"
    assert "the Batch API columns apply" in main.inner_text()
    app.screenshot("score-batch-done")


def test_score_page_replicas(app, loopback, app_server):
    from evalcore.testing.loopback import serve

    with serve() as second:
        _endpoint(app, loopback.base_url)
        box = app.page.get_by_role("textbox", name="More replicas of this model")
        box.fill(second.base_url)
        box.press("Control+Enter")
        app.idle()
        before = (loopback.requests_seen, second.requests_seen)
        app.start_scoring()
        app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
        app.idle()
        assert app.problems() == []
        assert loopback.requests_seen > before[0] and second.requests_seen > before[1]
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(has=app.page.locator(".st-key-csv_endpoints"))
    shown = {r["base URL"]: r for r in app.grid(block.locator('[data-testid="stDataFrame"]').first)}
    assert set(shown) == {loopback.base_url, second.base_url}
    assert all(int(r["answered"]) > 0 and r["drained"] == "no" for r in shown.values())
    app.screenshot("score-replicas-done")
