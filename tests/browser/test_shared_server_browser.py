"""The Improve loop and spending on a shared lab server (issue 29, items 4-7), in headless chromium on loopback: the app
runs with sign-in by a trusted proxy's header (each browser context sends ``X-Forwarded-User`` as the proxy would,
see tests/browser/test_identity_browser.py) and an operator's spending cap; the judge is the loopback (a local vLLM
endpoint: no price). Screenshots: artifacts/screenshots/shared-*.png.

* item 5: a run planted under the id alice's loop will use is refused on her page, not taken as her baseline;
* item 4: alice's baseline run on development is hers: bob, and a visitor not signed in, opening the same split,
  method and endpoint are asked to score their own;
* item 6: alice reading her test part's runs on Compare is a counted check of hers (the page says so, her split
  counts it), not bob's;
* item 7: a visitor not signed in cannot generate evaluation steps (nothing reaches the judge), and a signed-in user's
  step generation on a paid model passes the operator's cap, as a Score run does.
"""

from __future__ import annotations

import pytest
from conftest import USER_HEADER as HEADER
from conftest import as_user
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

DIM = "coherence"
SCORING_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def judge():
    from evalcore.testing.loopback import serve

    with serve(host="127.0.0.1", port=0, record_bodies=True) as server:
        yield server


@pytest.fixture(scope="module")
def lab_app(tmp_path_factory, judge):
    from conftest import require_chromium, start_app, stop_app

    require_chromium()
    # the loopback is the lab's local judge, listed by the operator: with sign-in, a local preset goes nowhere else
    server = start_app(tmp_path_factory.mktemp("shared"), resamples=20,
                       extra_env={"EVALCORE_USER_HEADER": HEADER, "EVALCORE_MAX_COST_USD": "0.000001",
                                  "EVALCORE_ALLOWED_ENDPOINTS": judge.base_url})
    try:
        yield server
    finally:
        stop_app(server)


def choose_preset(app, option: str) -> None:
    """The endpoint preset by typing it into the select (its drop-down may open off-screen low on a long page)."""
    box = app.page.get_by_role("combobox", name="Endpoint preset", exact=True)
    box.scroll_into_view_if_needed()
    box.click()
    box.fill(option)
    app.page.keyboard.press("Enter")
    app.idle()
    assert app.selected("Endpoint preset") == option


def improve_with_judge(app, judge, model: str) -> None:
    """The Improve page on the split in use (made first when there is none), the loopback as the judge."""
    app.open("improve?dimension=coherence", "Improve the judge")
    if app.page.get_by_role("combobox", name="Split in use", exact=True).count() == 0:
        app.type_into("Documents in the loop (0 = all)", "4")
        app.type_into("Test share", "0.50")
        app.page.get_by_role("button", name="Make the split").click()
        app.idle()
    app.page.get_by_role("combobox", name="Split in use", exact=True).wait_for()
    choose_preset(app, "vllm")
    app.type_into("Base URL", judge.base_url)
    app.type_into("Model", model)


def the_split(store):
    from evalcore.align.split import list_splits

    return list_splits(store, "summeval", DIM)[0]


def test_the_improve_loop_keeps_each_users_runs_and_checks(browser, lab_app, judge):
    from evalcore import datasets
    from evalcore.align import loop
    from evalcore.align.candidates import baseline_candidate, baseline_criteria
    from evalcore.align.split import DEV, split_dataset
    from evalcore.judge.client import Endpoint
    from evalcore.store import Store

    store = Store(lab_app.db_path)
    alice_ctx, alice = as_user(browser, lab_app, "alice")
    bob_ctx, bob = as_user(browser, lab_app, "bob")
    visitor_ctx, visitor = as_user(browser, lab_app, None)
    try:
        # item 5: bob plants a run (as an import would write it) under the id alice's baseline will use
        improve_with_judge(alice, judge, "judge-planted")
        split = the_split(store)
        assert len(split_dataset(datasets.load_dataset("summeval"), split, DEV).items) == 32  # 2 of 4 documents
        base = baseline_candidate(baseline_criteria(datasets.load_dataset("summeval"), DIM, "geval", store))
        ep = Endpoint(base_url=judge.base_url, model="judge-planted", provider="vllm", api_key_env="VLLM_API_KEY")
        planted = loop.run_id_for("summeval", split, DEV, base, "geval", ep, "alice")
        store.create_run(run_id=planted, dataset_id="summeval", method="geval", model="judge-planted", owner="bob",
                         status="done", config={"endpoint": {"base_url": "http://127.0.0.1:9/v1"}})
        sent = len(judge.bodies)
        alice.page.get_by_role("button", name="Score the baseline on development").click()
        alice.idle()
        expect(alice.page.get_by_text("was made by another user", exact=False).first).to_be_visible()
        assert alice.page.get_by_text("Baseline agreement (development)").count() == 0
        assert len(judge.bodies) == sent and store.run_row(planted)["owner"] == "bob"
        alice.screenshot("shared-planted-run-refused")

        # item 4: alice's own baseline is hers
        improve_with_judge(alice, judge, "loopback-judge")
        alice.page.get_by_role("button", name="Score the baseline on development").click()
        alice.page.get_by_text("Baseline agreement (development)").wait_for(timeout=SCORING_TIMEOUT_MS)
        alice.idle()
        assert alice.problems() == []
        alice.screenshot("shared-alice-baseline")
        for who, app in (("bob", bob), ("visitor", visitor)):
            improve_with_judge(app, judge, "loopback-judge")
            expect(app.page.get_by_text("Score the baseline on the development part first", exact=False)
                   ).to_be_visible()
            assert app.page.get_by_text("Baseline agreement (development)").count() == 0
            assert app.page.get_by_text("The judge's reply").count() == 0
            app.screenshot(f"shared-{who}-no-baseline")
        mine = [r for r in store.list_runs("summeval") if r.config.get("owner") == "alice"]
        assert len(mine) == 1 and len(mine[0].run_id.rsplit("-", 1)[1]) == 64

        # item 6: alice reads her test part's runs on Compare: a counted check of hers
        test_items = datasets.load_dataset("summeval").items
        test_items = test_items[test_items["doc_id"].astype(str).isin(split.test_docs)]["item_id"].astype(str)
        runs = []
        for k, version in enumerate(("a" * 64, "b" * 64)):
            rid = f"summeval/align-{split.split_id[:8]}-test-{version[:8]}-geval-m-{str(k) * 64}"
            store.create_run(run_id=rid, dataset_id="summeval", method="geval", model="m", owner="alice",
                             status="done", label=f"test run {k}",
                             config={"criteria": {DIM: {"hash": version}},  # the record the loop writes for a test part
                                     "spec": {"dataset_id": "summeval",
                                              "align": {"split": split.split_id, "part": "test"}}})
            for i, item in enumerate(test_items):
                store.save_judgment(rid, {"item_id": item, "dimension": DIM, "criteria_hash": version,
                                          "value": float(1 + (i * (k + 2)) % 5), "status": "ok", "raw": "3"})
            runs.append(rid)
        from urllib.parse import quote

        alice.open(f"compare?dimension=coherence&run_a={quote(runs[0])}&run_b={quote(runs[1])}", "Compare")
        expect(alice.page.get_by_text("counted as your check number 1", exact=False).first).to_be_visible()
        alice.screenshot("shared-compare-look-counted")
        from evalcore.identity import Viewer

        assert len(store.final_checks("summeval", split.split_id, viewer=Viewer("alice"))) >= 1
        assert store.final_checks("summeval", split.split_id, viewer=Viewer("bob")) == []
        improve_with_judge(alice, judge, "loopback-judge")
        assert "final check" in alice.selected("Split in use")
        improve_with_judge(bob, judge, "loopback-judge")
        assert "final check" not in bob.selected("Split in use")
    except BaseException:
        for name, app in (("alice", alice), ("bob", bob), ("visitor", visitor)):
            app.screenshot(f"FAILED-shared-{name}")
        raise
    finally:
        alice_ctx.close()
        bob_ctx.close()
        visitor_ctx.close()


def test_step_generation_needs_sign_in_and_passes_the_cap(browser, lab_app, judge):
    visitor_ctx, visitor = as_user(browser, lab_app, None)
    alice_ctx, alice = as_user(browser, lab_app, "alice")
    try:
        sent = len(judge.bodies)
        visitor.open("criteria?dimension=coherence", "Criteria")
        visitor.page.get_by_text("Generate evaluation steps with the judge").click()
        choose_preset(visitor, "vllm")
        visitor.type_into("Base URL", judge.base_url)
        visitor.type_into("Model", "loopback-judge")
        expect(visitor.page.get_by_text("Sign in to generate steps", exact=False)).to_be_visible()
        expect(visitor.page.get_by_role("button", name="Generate evaluation steps", exact=True)).to_be_disabled()
        visitor.screenshot("shared-visitor-generate-refused")
        assert len(judge.bodies) == sent

        alice.open("criteria?dimension=coherence", "Criteria")
        alice.page.get_by_text("Generate evaluation steps with the judge").click()
        alice.type_into("Model", "gpt-4o")
        alice.type_into("API key", "typed-key")
        expect(alice.page.get_by_text("cap of", exact=False).first).to_be_visible()
        expect(alice.page.get_by_role("button", name="Generate evaluation steps", exact=True)).to_be_disabled()
        alice.screenshot("shared-alice-generate-capped")
    finally:
        visitor_ctx.close()
        alice_ctx.close()
