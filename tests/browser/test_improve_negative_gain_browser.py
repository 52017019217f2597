"""End-to-end: the Improve loop's negative-gain case in headless chromium (SummEval, coherence).

The loopback judge (evalcore.testing.loopback_align) is good with the baseline's own definition (it holds
BASELINE_PHRASE, from G-Eval's coherence definition) and weak with the researcher's edit, which drops it: the only
candidate is worse than the baseline on development. The page must say that no candidate beat the baseline where
the candidate to test is picked, must not invite the final check (a box to tick first, the button not primary), and
after a check run anyway must say there was no development gain to carry over, never that one carried over.
Screenshots: artifacts/screenshots/improve-negative-*.png (copied to /tmp/improve_negative_*.png).
"""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import expect

from conftest import AppPage, UI_TIMEOUT_MS, require_chromium, start_app, stop_app

pytestmark = pytest.mark.browser

DIM = "coherence"
SCORING_TIMEOUT_MS = 120_000
BASELINE_PHRASE = "heap of related information"
PICKER = "Candidate to test (default: the best development agreement above the baseline's)"


@pytest.fixture(scope="module")
def baseline_good_judge():
    from evalcore import datasets
    from evalcore.testing.loopback import serve
    from evalcore.testing.loopback_align import PromptQualityJudge

    scorer = PromptQualityJudge.for_dataset(datasets.load_dataset("summeval"), DIM, rubric_phrase=BASELINE_PHRASE)
    with serve(host="127.0.0.1", port=0, scorer=scorer) as server:
        yield server


@pytest.fixture(scope="module")
def operator_app(tmp_path_factory, baseline_good_judge):
    require_chromium()
    server = start_app(tmp_path_factory.mktemp("improve-negative"), resamples=200,
                       extra_env={"OPENAI_BASE_URL": baseline_good_judge.base_url,
                                  "OPENAI_API_KEY": "sk-operator-test", "OPENAI_MODEL": "loopback-judge"})
    try:
        yield server
    finally:
        stop_app(server)


def shot(app: AppPage, name: str) -> None:
    app.page.mouse.move(0, 0)
    path = app.screenshot(f"improve-negative-{name}")
    shutil.copy(path, f"/tmp/improve_negative_{name}.png")


def confirm_spending(app: AppPage) -> None:
    """Tick the spending confirmation of the step in view (a paid provider's model of unknown price)."""
    confirm = app.page.locator('[data-testid="stCheckbox"]:visible', has_text="I confirm")
    confirm.first.wait_for()
    confirm.first.click()
    app.idle()


def main_text(app: AppPage) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def test_a_candidate_worse_than_the_baseline_through_the_page(browser, operator_app):
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    try:
        app = AppPage(ctx.new_page(), operator_app.url)
        app.open("improve?dimension=coherence", "Improve the judge")
        app.type_into("Documents in the loop (0 = all)", "12")
        app.type_into("Test share", "0.50")
        app.page.get_by_role("button", name="Make the split").click()
        app.idle()
        app.page.get_by_role("combobox", name="Split in use", exact=True).wait_for()

        confirm_spending(app)
        app.page.get_by_role("button", name="Score the baseline on development").click()
        app.page.get_by_text("Baseline agreement (development)").wait_for(timeout=SCORING_TIMEOUT_MS)
        app.idle()

        # the researcher's own edit, without the phrase the judge needs
        definition = app.page.get_by_label("Definition", exact=True)
        # the field is filled from the baseline on the run after the scoring job's last one (a busy machine may show
        # the tab a moment before that run delivers it): wait for the value, then check it holds the baseline's text
        expect(definition).to_have_value(re.compile(re.escape(BASELINE_PHRASE)), timeout=UI_TIMEOUT_MS)
        assert BASELINE_PHRASE in definition.input_value()
        definition.fill("Coherence: how well the summary reads.")
        definition.press("Control+Enter")  # a text area sends its value on Ctrl+Enter (or on leaving it)
        app.idle()
        app.page.get_by_role("button", name="Add as candidate").click()
        app.idle()
        confirm_spending(app)
        app.page.get_by_role("button", name="Score 1 candidate on development").click()
        app.page.get_by_text(PICKER).wait_for(timeout=SCORING_TIMEOUT_MS)
        app.idle()
        assert app.problems() == []

        chosen = app.selected(PICKER)
        assert chosen.startswith("edit ") and "over the baseline)" in chosen and "(-" in chosen, chosen
        warning = app.page.locator('[data-testid="stAlert"]', has_text="No candidate beat the baseline").first
        warning.wait_for()
        assert "no development gain to confirm" in warning.inner_text()
        final = app.page.get_by_role("button", name="Run the final check anyway on test")
        assert final.is_disabled()  # no invitation: nothing is checked without asking for it knowingly
        warning.scroll_into_view_if_needed()
        shot(app, "no-gain")

        app.page.locator('[data-testid="stCheckbox"]', has_text="on test anyway").click()
        app.idle()
        confirm_spending(app)
        assert not final.is_disabled()
        final.click()
        verdict = app.page.get_by_text("On the held-out test documents", exact=False).first
        verdict.wait_for(timeout=SCORING_TIMEOUT_MS)
        app.idle()
        assert app.problems() == []
        text = main_text(app)
        assert "there was no development gain to carry over" in text
        assert "carried over" not in text
        app.page.get_by_text("Development gain -", exact=False).first.scroll_into_view_if_needed()
        shot(app, "final")
    except BaseException:
        app.screenshot("FAILED-improve-negative")
        raise
    finally:
        ctx.close()
