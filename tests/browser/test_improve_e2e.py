"""End-to-end: the "Improve the judge" page in headless chromium drives the alignment loop on SummEval (issue 22).

The judge is the loopback judge whose quality depends on the prompt (evalcore.testing.loopback_align): weak with the
baseline criteria, close to the humans once the rubric phrase that its own LLM proposal adds is in the prompt. The app
reaches it as the operator's endpoint (OPENAI_BASE_URL with a server key, OPENAI_MODEL): a paid provider's model of
unknown price, so every scoring step asks for the spending confirmation first.

split (12 documents, half held out) -> score the baseline on development -> propose (the diff is shown) -> keep ->
few-shot candidate -> score the candidates on development -> final check on test: the page must show a positive test
difference whose interval lies above 0 for the proposal. Screenshots: artifacts/screenshots/improve-*.png (copied to
/tmp/improve_*.png).
"""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import AppPage, UI_TIMEOUT_MS, require_chromium, start_app, stop_app

pytestmark = pytest.mark.browser

DIM = "coherence"
SCORING_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def align_judge():
    """The prompt-dependent loopback judge, serving on a thread of this process."""
    from evalcore import datasets
    from evalcore.testing.loopback import serve
    from evalcore.testing.loopback_align import PromptQualityJudge

    scorer = PromptQualityJudge.for_dataset(datasets.load_dataset("summeval"), DIM)
    with serve(host="127.0.0.1", port=0, scorer=scorer, record_bodies=True) as server:
        yield server


@pytest.fixture(scope="module")
def operator_app(tmp_path_factory, align_judge):
    """The app with the loopback judge as the operator-configured endpoint."""
    require_chromium()
    server = start_app(tmp_path_factory.mktemp("improve"), resamples=200,
                       extra_env={"OPENAI_BASE_URL": align_judge.base_url, "OPENAI_API_KEY": "sk-operator-test",
                                  "OPENAI_MODEL": "loopback-judge"})
    try:
        yield server
    finally:
        stop_app(server)


def shot(app: AppPage, name: str) -> None:
    app.page.mouse.move(0, 0)  # no tooltip over what the shot is for
    path = app.screenshot(f"improve-{name}")
    shutil.copy(path, f"/tmp/improve_{name}.png")


def confirm_and_click(app: AppPage, button: str) -> None:
    """Tick the spending confirmation (unknown price), then press ``button``."""
    confirm = app.page.locator('[data-testid="stCheckbox"]:visible', has_text="I confirm")  # this tab's, this step's
    confirm.first.wait_for()
    assert "price is unknown" in confirm.first.inner_text()
    confirm.first.click()
    app.idle()
    app.page.get_by_role("button", name=button).click()


def main_text(app: AppPage) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def test_the_loop_on_summeval_through_the_page(browser, operator_app, align_judge):
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    try:
        app = AppPage(ctx.new_page(), operator_app.url)
        app.open("improve?dimension=coherence", "Improve the judge")
        assert app.problems() == []

        # 1. the split
        app.type_into("Documents in the loop (0 = all)", "12")
        app.type_into("Test share", "0.50")
        app.page.get_by_role("button", name="Make the split").click()
        app.idle()
        app.page.get_by_role("combobox", name="Split in use", exact=True).wait_for()
        assert "6 development / 6 test documents" in app.selected("Split in use")
        text = main_text(app)
        assert "with the server's $OPENAI_API_KEY: an endpoint the operator configured" in text
        shot(app, "split")

        # 2. the baseline on development, through the scoring job (progress bar), after the confirmation
        confirm_and_click(app, "Score the baseline on development")
        app.page.get_by_text("Baseline agreement (development)").wait_for(timeout=SCORING_TIMEOUT_MS)
        app.idle()
        assert app.problems() == []
        shot(app, "disagreements")

        # 3. the LLM proposal: shown as a diff, kept on click
        app.page.get_by_role("tab", name="LLM proposal").click()
        app.idle()
        confirm_and_click(app, "Propose")  # sent on the server's key: the same spending rule as a scoring run
        app.idle()
        diff = app.page.locator('[data-testid="stCode"]').filter(has_text="+++ candidate").first
        diff.wait_for()
        assert "Reward a text whose sentences build on each other" in diff.inner_text()
        shot(app, "proposal")
        app.page.get_by_role("button", name="Keep as candidate").click()
        app.idle()
        app.page.get_by_role("tab", name="Few-shot examples").click()
        app.page.get_by_role("button", name="Add few-shot candidate").click()
        app.idle()

        # 4. both candidates on development
        confirm_and_click(app, "Score 2 candidates on development")
        app.page.get_by_text("Candidate to test (default: the best development agreement above the baseline's)"
                             ).wait_for(
            timeout=SCORING_TIMEOUT_MS)
        app.idle()
        assert app.problems() == []
        assert app.page.get_by_role("button", name="Score 2 candidates on development").count() == 0
        chosen = app.page.get_by_role("combobox", name="Candidate to test (default: the best development "
                                                       "agreement above the baseline's)", exact=True).input_value()
        assert chosen.startswith("proposal "), chosen
        shot(app, "candidates")

        # 5. the final check on test
        confirm_and_click(app, "Run the final check on test")
        verdict = app.page.get_by_text("On the held-out test documents", exact=False).first
        verdict.wait_for(timeout=SCORING_TIMEOUT_MS)
        app.idle()
        assert app.problems() == []
        said = verdict.inner_text()
        m = re.search(r"difference ([+-]\d\.\d{3}) \(95% CI ([+-]\d\.\d{3}) to ([+-]\d\.\d{3})", said)
        assert m, said
        diff_value, low, high = (float(x) for x in m.groups())
        assert diff_value > 0 and low > 0 and high >= diff_value, said
        assert "agrees better" in said
        text = main_text(app)
        assert "first final check on this split's test part" in text and "optimism" in text
        assert app.page.get_by_role("button", name="Run the final check again (check 2)").count() == 1
        shot(app, "final")
    except BaseException:
        app.screenshot("FAILED-improve")  # what the browser showed: the first thing to look at
        raise
    finally:
        ctx.close()
