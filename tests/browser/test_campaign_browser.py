"""A labelling campaign with two annotators in headless chromium: the app runs with sign-in by a trusted proxy's header
(``EVALCORE_USER_HEADER``; each browser context sends the header as the proxy would). alice makes a campaign of three
SummEval items, two annotators each (alice and bob), on the Campaigns page; each labels their own queue; the
annotators' agreement appears (Krippendorff's alpha equal to the ``krippendorff`` package's on the same labels), the
item they disagree on is listed and alice, the campaign's creator, sets its final label. Every label is a row of the
store's labels, with annotator, time and campaign. Screenshots: artifacts/screenshots/campaign-*.png."""

from __future__ import annotations

import pytest
from conftest import USER_HEADER as HEADER
from conftest import as_user
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab_app(tmp_path_factory):
    from conftest import start_app, stop_app

    server = start_app(tmp_path_factory.mktemp("campaign"), resamples=20,
                       extra_env={"EVALCORE_USER_HEADER": HEADER})
    try:
        yield server
    finally:
        stop_app(server)


def label_queue(app, values: list[int]) -> None:
    for v in values:
        expect(app.page.get_by_text("Open for you until", exact=False)).to_be_visible()
        app.page.locator(f".st-key-campaign_rate_{v} button").click()
        app.idle()


def test_two_annotators_label_their_queues_and_the_agreement_appears(browser, lab_app):
    import krippendorff
    import numpy as np

    from evalcore.store import Store

    alice_ctx, alice = as_user(browser, lab_app, "alice")
    bob_ctx, bob = as_user(browser, lab_app, "bob")
    try:
        alice.open("campaigns?dataset=summeval&runs=", "Campaigns")
        expect(alice.page.get_by_text("Signed in as alice", exact=True)).to_be_visible()
        alice.page.get_by_label("Campaign name", exact=True).fill("pilot")
        alice.choose("Items", "A random sample of n items")
        alice.page.get_by_label("n (sample size)", exact=True).fill("3")
        alice.page.get_by_label("Annotators (user names, comma-separated)", exact=True).fill("alice, bob")
        alice.page.get_by_role("button", name="Create campaign").click()
        alice.idle()
        expect(alice.page.get_by_text("Campaign made: 3 items, 2 annotator(s) each", exact=False)).to_be_visible()
        alice.screenshot("campaign-alice-open")  # an item open in her queue
        label_queue(alice, [4, 2, 5])
        expect(alice.page.get_by_text("Your queue is done: 3 items labelled.", exact=True)).to_be_visible()

        bob.open("campaigns?dataset=summeval&runs=", "Campaigns")
        label_queue(bob, [4, 3, 1])
        expect(bob.page.get_by_text("Your queue is done: 3 items labelled.", exact=True)).to_be_visible()
        table = bob.page.locator('[data-testid="stTable"]').filter(has_text="Fleiss")
        expect(table).to_contain_text("Krippendorff")
        want = krippendorff.alpha(reliability_data=np.array([[4, 2, 5], [4, 3, 1]], float),
                                  level_of_measurement="interval")
        expect(table).to_contain_text(f"{want:.3f}")
        expect(table).to_contain_text("not applicable: the scale is numeric")
        bob.screenshot("campaign-bob")
        assert bob.problems() == []

        # every label: a labels row with annotator and time, linked to the campaign
        store = Store(lab_app.db_path)
        (campaign,) = store.campaign_rows("summeval")
        lab = store.campaign_labels(campaign["campaign_id"])
        assert sorted(lab["annotator"]) == ["alice"] * 3 + ["bob"] * 3 and lab["created_at"].notna().all()
        assert set(store.label_rows("summeval")["label_id"]) == set(lab["label_id"])

        # alice, the creator, adjudicates the item they disagree on (5 against 1)
        alice.open("campaigns?dataset=summeval&runs=", "Campaigns")
        expect(alice.page.get_by_text("1 item with annotators who disagree", exact=False)).to_be_visible()
        alice.page.get_by_label("Note (why)", exact=True).fill("read the article")
        alice.page.get_by_role("button", name="Set the final label").click()
        alice.idle()
        expect(alice.page.get_by_text("Final label 1 set on item", exact=False)).to_be_visible()
        adj = store.adjudications(campaign["campaign_id"])
        assert adj[["adjudicator", "note"]].values.tolist() == [["alice", "read the article"]]
        alice.screenshot("campaign-alice")
        assert alice.problems() == []
        store.close()
    finally:
        alice_ctx.close()
        bob_ctx.close()
