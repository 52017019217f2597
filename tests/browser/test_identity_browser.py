"""Two users on a lab server signed in by a trusted proxy's header (issue 21, items 6 and 13), in headless chromium on
loopback: the app runs with ``EVALCORE_USER_HEADER=X-Forwarded-User`` and each browser context sends that header as
the proxy would (Playwright's extra_http_headers: on the page load and on Streamlit's websocket handshake, which is
what ``st.context.headers`` reads). Alice's upload and run are hers until she shares them; bob, opening a link that
names alice as annotator, labels as bob, and his Undo leaves alice's labels alone. Screenshots:
artifacts/screenshots/identity-*.png."""

from __future__ import annotations

import pytest
from conftest import USER_HEADER as HEADER
from conftest import as_user
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab_app(tmp_path_factory):
    from conftest import start_app, stop_app

    server = start_app(tmp_path_factory.mktemp("lab"), resamples=20, extra_env={"EVALCORE_USER_HEADER": HEADER})
    try:
        yield server
    finally:
        stop_app(server)


def test_two_users_see_their_own_uploads_and_label_in_their_own_names(browser, lab_app):
    from evalcore.store import Store
    from tests.hardening._judging import dataset

    store = Store(lab_app.db_path)
    store.save_dataset(dataset(dataset_id="alice-upload"), owner="alice")
    store.create_run(run_id="alice-run", dataset_id="summeval", method="geval", model="m", label="alice's run",
                     owner="alice", status="done")
    alice_ctx, alice = as_user(browser, lab_app, "alice")
    bob_ctx, bob = as_user(browser, lab_app, "bob")
    try:
        # alice: signed in, her upload opens, private
        alice.open("data?dataset=alice-upload", "Data")
        expect(alice.page.get_by_text("Signed in as alice", exact=True)).to_be_visible()
        assert alice.selected_dataset() == "alice-upload"
        expect(alice.page.get_by_text("Uploaded by alice, private", exact=True)).to_be_visible()
        alice.screenshot("identity-data-alice")
        # bob: the same link does not open alice's upload, and it is not among his options
        bob.open("data?dataset=alice-upload", "Data")
        expect(bob.page.get_by_text("Signed in as bob", exact=True)).to_be_visible()
        assert bob.selected_dataset() == "summeval"
        bob.page.get_by_role("combobox", name="Dataset", exact=True).click()  # the picker lists datasets by name
        expect(bob.page.get_by_role("option", name="SummEval (CNN/DailyMail, 16 systems)", exact=True)).to_be_visible()
        assert bob.page.get_by_role("option", name="Tiny", exact=True).count() == 0
        bob.page.keyboard.press("Escape")
        bob.screenshot("identity-data-bob")
        # the Score page: alice's run is listed for her only
        alice.open("score", "Score")
        expect(alice.page.get_by_text("Started by alice, private", exact=True)).to_be_visible()
        alice.screenshot("identity-score-alice")
        bob.open("score", "Score")
        expect(bob.page.get_by_text("No local run on this dataset yet.", exact=True)).to_be_visible()
        bob.screenshot("identity-score-bob")

        # alice labels two items (a link naming another annotator changes nothing)
        alice.open("label?annotator=mallory&label_dims=coherence", "Label")
        expect(alice.page.get_by_role("textbox", name="Annotator", exact=True)).to_have_value("alice")
        expect(alice.page.get_by_role("textbox", name="Annotator", exact=True)).to_be_disabled()
        for v in (4, 5):
            alice.page.locator(f".st-key-label_rate_{v} button").click()
            alice.idle()
        alice.screenshot("identity-label-alice")
        # bob opens a link naming alice: he labels as bob, and his Undos never reach alice's labels
        bob.open("label?annotator=alice&label_dims=coherence", "Label")
        expect(bob.page.get_by_role("textbox", name="Annotator", exact=True)).to_have_value("bob")
        bob.page.locator(".st-key-label_rate_2 button").click()
        bob.idle()
        rows = store.label_rows("summeval")
        assert rows[["annotator", "value"]].values.tolist() == [["alice", 4.0], ["alice", 5.0], ["bob", 2.0]]
        for _ in range(3):
            bob.page.locator(".st-key-label_undo button").click()
            bob.idle()
        expect(bob.page.get_by_text("Nothing to undo.", exact=True)).to_be_visible()
        bob.screenshot("identity-label-bob")
        rows = store.label_rows("summeval")
        assert rows[["annotator", "value"]].values.tolist() == [["alice", 4.0], ["alice", 5.0]]
        assert bob.problems() == [] and alice.problems() == []

        # alice shares her upload: bob's link opens it now
        alice.open("data?dataset=alice-upload", "Data")
        alice.page.get_by_text("Share this dataset with the lab", exact=True).click()
        alice.idle()
        assert store.owner_of("datasets", ("alice-upload",)) == ("alice", True)
        bob.open("data?dataset=alice-upload", "Data")
        assert bob.selected_dataset() == "alice-upload"
        expect(bob.page.get_by_text("Uploaded by alice, shared with the lab", exact=True)).to_be_visible()
        bob.screenshot("identity-data-bob-shared")

        # criteria: a version alice saved (its steps generated by a judge) is hers, listed with who saved it and who
        # wrote its steps, and the prompt of no new session but hers
        from evalcore.judge import spec
        from evalcore.types import Criteria

        paper = spec.default_criteria(runs_ds := store.load_dataset("alice-upload"), "coherence", "geval", None)
        store.save_criteria(runs_ds.id, Criteria("coherence", paper.task_introduction, "alice's own definition", 1,
                                                 5, "1. Read.\n2. Rate."), owner="alice", steps_by="gpt-judge")
        alice.open("criteria?dataset=alice-upload&dimension=coherence", "Criteria")
        expect(alice.page.get_by_label("Evaluation criteria (definition)", exact=True)).to_have_value(
            "alice's own definition")
        block = alice.page.locator('[data-testid="stHorizontalBlock"]').filter(
            has=alice.page.locator(".st-key-csv_versions"))
        shown = alice.grid(block.locator('[data-testid="stDataFrame"]').first)
        assert [(r["saved by"], r["steps"]) for r in shown] == [("alice", "generated by gpt-judge (17 chars)")]
        alice.screenshot("identity-criteria-alice")
        bob.open("criteria?dataset=alice-upload&dimension=coherence", "Criteria")
        expect(bob.page.get_by_label("Evaluation criteria (definition)", exact=True)).to_have_value(paper.definition)
        expect(bob.page.get_by_text("No saved version of these criteria yet", exact=False)).to_be_visible()
        bob.screenshot("identity-criteria-bob")
    finally:
        alice_ctx.close()
        bob_ctx.close()
