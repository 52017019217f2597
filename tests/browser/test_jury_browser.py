"""The Jury page on Shen et al.'s five SummEval judges and the Alignment page's reliability expander on Chiang &
Lee's 20 Topical-Chat draws, in headless chromium: the matrix heatmap with the humans, a jury made, the jury against
the best single judge, the cost note; one draw against the mean of 20. Screenshots: artifacts/screenshots/jury-*.png,
reliability-*.png."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.browser.conftest import SCREENSHOT_DIR

pytestmark = pytest.mark.browser

SHEN = [f"summeval/shen-{m}-rts" for m in ("gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-7b-chat",
                                          "llama-2-13b-chat", "llama-2-70b-chat")]


def _tall_shot(app, locator, name: str) -> None:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    size = app.page.viewport_size
    app.page.set_viewport_size({"width": size["width"], "height": 5000})  # Streamlit scrolls inside its main block
    app.page.wait_for_timeout(500)
    try:
        locator.screenshot(path=str(SCREENSHOT_DIR / f"{name}.png"))
    finally:
        app.page.set_viewport_size(size)


def test_jury_page_on_shens_five_judges(app):
    runs = "&".join(f"jury_runs={quote(r, safe='')}" for r in SHEN)
    app.open(f"jury?dataset=summeval&dimension=coherence&resamples=100&{runs}", "Jury")
    app.page.get_by_text("How the judges agree with each other and with the humans").wait_for()
    app.idle()
    assert app.problems() == []
    app.page.get_by_role("button", name="Make the jury").click()
    app.page.get_by_text("The jury against the best single judge", exact=False).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == []
    main = app.page.locator('[data-testid="stMain"]')
    text = main.inner_text()
    assert "summeval/jury-mean-of-5" in text and "No recorded usage" in text
    _tall_shot(app, main, "jury-summeval-five")


def test_reliability_expander_on_topical_chat(app):
    run = quote("topical_chat/chiang-lee-gpt-3.5-geval", safe="")
    app.open(f"alignment?dataset=topical_chat&dimension=coherence&runs={run}&resamples=100&reliability_open=true",
             "Alignment")
    app.page.get_by_text("mean of 20 draws", exact=False).first.wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == []
    box = app.page.locator(".st-key-reliability_open")
    text = box.inner_text()
    assert "0.315" in text and "0.466" in text and "ICC(1,1)" in text
    _tall_shot(app, box, "reliability-topical-chat")
