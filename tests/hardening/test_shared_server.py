"""A shared lab server, round 3: the Improve loop's runs and checks, spending, identity headers, prices and the store
(issue 29, items 4-10 and 12). Sign-in by a trusted proxy header, two users (alice, bob) and a visitor not signed in,
the judge on the loopback. The browser test tests/browser/test_shared_server_browser.py drives the same pages."""

from __future__ import annotations

import dataclasses
import multiprocessing
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalcore.align import loop  # noqa: E402
from evalcore.align.candidates import baseline_candidate, baseline_criteria  # noqa: E402
from evalcore.align.split import DEV, TEST, make_split, save_split  # noqa: E402
from evalcore.identity import IdentityError, Viewer, user_from_headers  # noqa: E402
from evalcore.judge import cost, spending  # noqa: E402
from evalcore.judge.client import Endpoint  # noqa: E402
from evalcore.judge.spec import EngineOptions  # noqa: E402
from evalcore.store import Store, StoreError, store_error  # noqa: E402
from evalcore.testing.loopback import serve  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
HEADER = "X-Forwarded-User"
DIM = "coherence"

pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py: a fresh store, empty caches


@pytest.fixture
def signed_in_as(monkeypatch):
    """Sign-in by header on; ``signed_in_as(name)`` makes the next sessions' requests carry that user (None: none)."""
    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", HEADER)
    who = {"name": None}
    monkeypatch.setattr(_identity, "_request_headers",
                        lambda: {HEADER: who["name"]} if who["name"] else {"Accept": "*/*"})
    return lambda name: who.__setitem__("name", name)


def page(path: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def local(url: str) -> Endpoint:
    return Endpoint(base_url=url, model="loopback-judge", provider="vllm", api_key_env="VLLM_API_KEY")


def small(ds_id: str = "summeval", docs: int = 4):
    """SummEval on ``docs`` documents, split in half (as the Improve page's "Documents in the loop" does)."""
    from evalcore import datasets
    from evalcore.sampling import documents_subset

    full = datasets.load_dataset(ds_id)
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:docs])
    return ds, make_split(ds, DIM, test_share=0.5, seed=0)


# ------------------------------------------------------------------------------------- item 4: private runs
def _improve_as(at_user, signed_in_as, url: str) -> AppTest:
    signed_in_as(at_user)
    at = page("pages/improve.py", dimension=DIM, resamples="20")
    at.number_input(key="loop_docs").set_value(4).run()
    at.number_input(key="test_share").set_value(0.5).run()
    at.button(key="make_split").click().run()
    at.selectbox(key="endpoint").set_value("vllm").run()
    at.text_input(key="base_url").input(url).run()
    at.text_input(key="model").input("loopback-judge").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _baseline_shown(at: AppTest) -> bool:
    return any(m.label.startswith("Baseline agreement") for m in at.metric)


def test_item4_another_users_private_baseline_run_is_not_shown_on_the_improve_page(first_start, signed_in_as,
                                                                                     monkeypatch):
    with serve() as judge:
        # the lab's local judge: on a server with sign-in a local preset goes only where the operator listed
        monkeypatch.setenv("EVALCORE_ALLOWED_ENDPOINTS", judge.base_url)
        at = _improve_as("alice", signed_in_as, judge.base_url)
        at.button(key="score_baseline").click().run()
        deadline = time.monotonic() + 60
        while not _baseline_shown(at) and time.monotonic() < deadline:
            time.sleep(0.3)
            at.run()
        assert _baseline_shown(at), "alice's baseline was not scored"
        gated = []  # item 7: her "Propose" (one request) passes the one spending decision, as a scoring run does
        real = spending.gate
        monkeypatch.setattr(spending, "gate", lambda *a, **k: gated.append((a[1], k["spender"])) or real(*a, **k))
        at.run()
        assert (1, "alice") in gated and not at.button(key="propose").disabled
        monkeypatch.setattr(spending, "gate", real)
        alices = [r for r in Store(first_start).list_runs("summeval") if r.config.get("owner") == "alice"]
        assert len(alices) == 1
        for who in ("bob", None):  # bob, and a visitor not signed in, on the same split, method and endpoint
            other = _improve_as(who, signed_in_as, judge.base_url)
            assert not _baseline_shown(other), f"{who} sees alice's private baseline run"
            assert not any(d for d in other.dataframe if "judge's reply" in d.value.columns)


# ------------------------------------------------------------------------------------- item 5: planted runs
def test_item5_run_ids_carry_a_full_hash_of_owner_and_endpoint():
    ds, split = small()
    c = baseline_candidate(baseline_criteria(ds, DIM, "geval", None))
    a = loop.run_id_for(ds.id, split, DEV, c, "geval", local("http://127.0.0.1:9/v1"), "alice")
    assert len(a.rsplit("-", 1)[1]) == 64  # the full SHA-256, not a 24-bit prefix a brute force matches
    assert a != loop.run_id_for(ds.id, split, DEV, c, "geval", local("http://127.0.0.1:9/v1"), "bob")
    assert a != loop.run_id_for(ds.id, split, DEV, c, "geval", local("http://127.0.0.1:10/v1"), "alice")


def test_item5_a_run_planted_under_the_loops_id_is_refused_not_reused_nor_rewritten(first_start):
    """bob scores a run under the id alice's loop will use, against his own endpoint: her loop refuses it (nothing of
    his is taken as her baseline) and its recorded endpoint is left as it was."""
    from evalcore.judge import runner

    store = Store(first_start)
    ds, split = small()
    save_split(store, split)
    c = baseline_candidate(baseline_criteria(ds, DIM, "geval", None))
    with serve(record_bodies=True) as hers, serve() as his:
        rid = loop.run_id_for(ds.id, split, DEV, c, "geval", local(hers.base_url))
        planted = loop.spec_for(ds, split, DEV, DIM, "geval", c, local(his.base_url))
        runner.score_dataset(dataclasses.replace(planted, run_id=rid, owner="bob"), EngineOptions(local(his.base_url)),
                             store=store)
        recorded = store.run_row(rid)["config"]["endpoint"]
        with pytest.raises(ValueError, match="another user"):
            loop.score_candidate(ds, split, DEV, DIM, "geval", c, EngineOptions(local(hers.base_url)), store=store,
                                 settings=loop.Settings(n_resamples=20))
        assert store.run_row(rid)["config"]["endpoint"] == recorded == local(his.base_url).identity()
        assert store.run_row(rid)["owner"] == "bob" and hers.bodies == []  # nothing was sent or taken as hers


def test_item5_a_users_run_made_against_another_endpoint_is_not_resumed_as_this_one(first_start):
    store = Store(first_start)
    ds, split = small()
    c = baseline_candidate(baseline_criteria(ds, DIM, "geval", None))
    rid = loop.run_id_for(ds.id, split, TEST, c, "geval", local("http://127.0.0.1:9/v1"), "alice")
    store.create_run(run_id=rid, dataset_id=ds.id, method="geval", model="m",
                     config={"endpoint": local("http://127.0.0.1:10/v1").identity()}, owner="alice")
    with pytest.raises(loop.RunNotReusable, match="another endpoint"):
        loop.check_reuse(store, rid, "alice", local("http://127.0.0.1:9/v1"))
    assert loop.own_run(store, rid, "alice", local("http://127.0.0.1:9/v1")) is None
    with pytest.raises(ValueError, match="another user"):  # and no one else resumes (rewrites) alice's run
        store.create_run(run_id=rid, dataset_id=ds.id, method="geval", model="m", owner="bob")


# ------------------------------------------------------------------------------------- item 6: checks per viewer
def _check(store, split, owner, chosen="c" * 64):
    return store.record_final_check(split.dataset_id, split.split_id, dimension=DIM, method="geval",
                                    baseline_hash="b" * 64, chosen_hash=chosen, baseline_run="r-b",
                                    chosen_run="r-c", result={"test_gain": 0.3}, owner=owner)


def test_item6_final_checks_are_counted_and_listed_per_user(first_start):
    store = Store(first_start)
    _ds, split = small()
    save_split(store, split)
    assert _check(store, split, "bob", chosen="f" * 64) == 1
    assert _check(store, split, "alice") == 1  # bob's check is not alice's first look
    assert _check(store, split, "alice") == 2
    mine = store.final_checks(split.dataset_id, split.split_id, viewer=Viewer("alice"))
    assert [r["chosen_hash"] for r in mine] == ["c" * 64] * 2  # bob's private candidate hash is not listed to her
    assert len(store.final_checks(split.dataset_id, split.split_id, viewer=Viewer("bob"))) == 1
    from evalcore.align.split import list_splits

    assert list_splits(store, split.dataset_id, DIM, viewer=Viewer("alice"))[0].final_checks == 2


def _test_part_runs(store, split, owner: str) -> list[str]:
    """Two runs of the loop on the split's test part (as the final check scores them, their records saying so: the
    spec's ``align``), with a judgment per item."""
    from evalcore import datasets

    ds = datasets.load_dataset("summeval")
    items = ds.items[ds.items["doc_id"].astype(str).isin(split.test_docs)]["item_id"].astype(str).tolist()
    ids = []
    for k, version in enumerate(("a" * 64, "b" * 64)):
        rid = f"summeval/align-{split.split_id[:8]}-test-{version[:8]}-geval-m-{'0' * 64}"
        store.create_run(run_id=rid, dataset_id="summeval", method="geval", model="m", owner=owner, status="done",
                         config={"criteria": {DIM: {"hash": version}},
                                 "spec": {"dataset_id": "summeval", "align": {"split": split.split_id, "part": "test"}}})
        for i, item in enumerate(items):
            store.save_judgment(rid, {"item_id": item, "dimension": DIM, "criteria_hash": version,
                                      "value": float(1 + (i * (k + 2)) % 5), "status": "ok", "raw": "3"})
        ids.append(rid)
    return ids


def test_item6_a_test_parts_run_is_known_by_its_record_not_its_id(first_start):
    from evalcore.align import loop

    store = Store(first_start)
    store.create_run(run_id="summeval/plain-name", dataset_id="summeval", method="geval", model="m", status="done",
                     config={"spec": {"dataset_id": "summeval", "align": {"split": "s" * 64, "part": "test"}}})
    store.create_run(run_id=f"summeval/align-{'s' * 8}-test-x", dataset_id="summeval", method="geval", model="m",
                     status="done", config={"spec": {"dataset_id": "summeval", "align": {"split": "s" * 64,
                                                                                           "part": "dev"}}})
    assert loop.test_part_of(store, "summeval/plain-name") == ("summeval", "s" * 64)
    assert loop.test_part_of(store, f"summeval/align-{'s' * 8}-test-x") is None  # a dev part's, whatever its id
    assert loop.test_part_of(store, "summeval/shen-gpt-4-0314-rts") is None  # a published run


def test_item6_reading_a_test_parts_runs_on_compare_is_a_counted_check(first_start, signed_in_as):
    from evalcore import datasets

    store = Store(first_start)
    ds = datasets.load_dataset("summeval")
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    save_split(store, split)
    run_a, run_b = _test_part_runs(store, split, "alice")
    signed_in_as("alice")
    at = page("pages/compare.py", dimension=DIM, run_a=run_a, run_b=run_b)
    assert (at.selectbox(key="run_a").value, at.selectbox(key="run_b").value) == (run_a, run_b)
    looks = store.final_checks("summeval", split.split_id, viewer=Viewer("alice"))
    assert len(looks) == 1 and looks[0]["result"]["look"] == "a page other than Improve"  # the two runs: one look
    assert any("counted as your check number 1" in i.value.replace("\\", "") for i in at.info)
    at.run()  # the same session again: not counted twice
    assert len(store.final_checks("summeval", split.split_id, viewer=Viewer("alice"))) == 1
    page("pages/compare.py", dimension=DIM, run_a=run_a, run_b=run_b)  # a new session: a new look
    assert len(store.final_checks("summeval", split.split_id, viewer=Viewer("alice"))) == 2
    assert store.final_checks("summeval", split.split_id, viewer=Viewer("bob")) == []


# ------------------------------------------------------------------------------------- item 7: consent to spend
def test_item7_a_visitor_not_signed_in_cannot_generate_steps(first_start, signed_in_as, monkeypatch):
    signed_in_as(None)
    with serve(record_bodies=True) as judge:
        monkeypatch.setenv("EVALCORE_ALLOWED_ENDPOINTS", judge.base_url)  # the lab's local judge, as the operator set
        at = page("pages/criteria.py", dimension=DIM)
        at.selectbox(key="endpoint").set_value("vllm").run()
        at.text_input(key="base_url").input(judge.base_url).run()
        at.text_input(key="model").input("loopback-judge").run()
        assert at.button(key="generate_steps").disabled
        assert "_crit_preview" not in at.session_state and not judge.bodies
        assert any("Sign in to generate steps" in c.value for c in at.caption)


def test_item7_step_generation_passes_the_same_spending_gate_as_score(first_start, monkeypatch):
    """Sign-in off, a paid model: the operator's cap holds for "Generate evaluation steps" as for a Score run."""
    monkeypatch.delenv("EVALCORE_USER_HEADER", raising=False)
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "0.000001")
    calls = []
    real = spending.gate
    monkeypatch.setattr(spending, "gate", lambda *a, **k: calls.append(k.get("spender")) or real(*a, **k))
    at = page("pages/criteria.py", dimension=DIM)
    at.text_input(key="model").input("gpt-4o").run()
    at.text_input(key="api_key").input("typed-key").run()
    assert at.button(key="generate_steps").disabled
    assert any("cap of" in e.value.replace("\\", "") for e in at.error)
    assert calls  # through the one library decision


# ------------------------------------------------------------------------------------- item 8: the cap persists
def test_item8_the_cap_is_kept_per_user_in_the_store_not_per_session(first_start):
    env = {"EVALCORE_MAX_COST_USD": "5"}
    store = Store(first_start)
    assert spending.charge(3.0, 10, local=False, spender="bob", store=store, what="check", environ=env).allowed
    again = Store(first_start)  # a new session, a new process: the same store
    d = spending.gate(3.0, 10, local=False, spender="bob", store=again, environ=env)
    assert not d.allowed and "per user" in d.reason
    assert not spending.charge(3.0, 10, local=False, spender="bob", store=again, what="check", environ=env).allowed
    assert again.spent_usd("bob") == 3.0
    assert spending.gate(3.0, 10, local=False, spender="alice", store=again, environ=env).allowed  # her own budget
    # everyone not signed in shares the server's budget
    assert spending.charge(4.0, 10, local=False, spender=None, store=again, what="x", environ=env).allowed
    assert not spending.gate(2.0, 10, local=False, spender=None, store=again, environ=env).allowed


def test_item8_a_new_session_of_the_score_page_sees_what_the_last_one_started(first_start, monkeypatch):
    from evalcore.judge.job import ScoringJob

    monkeypatch.delenv("EVALCORE_USER_HEADER", raising=False)
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "5")
    monkeypatch.setattr(ScoringJob, "start", lambda self: None)  # started, not sent: nothing leaves this machine

    def score_page() -> AppTest:
        at = page("pages/score.py", method="geval", limit="0")
        at.text_input(key="model").input("gpt-4o").run()
        at.text_input(key="api_key").input("typed-key").run()
        return at

    at = score_page()  # GPT-4o on all items: about 3.4 USD, under the cap of 5
    at.checkbox(key="confirm_spend").check().run()
    at.button(key="start_scoring").click().run()
    assert "_score_job" in at.session_state
    second = score_page()
    assert second.button(key="start_scoring").disabled
    assert any("cap of $5.00" in e.value.replace("\\", "") for e in second.error)


# ------------------------------------------------------------------------------------- item 9: duplicate headers
def test_item9_a_request_with_the_sign_in_header_twice_is_refused():
    from streamlit.runtime.context import StreamlitHeaders

    for headers in (StreamlitHeaders([(HEADER, "alice"), (HEADER.lower(), "bob")]),
                    [(HEADER, "alice"), (HEADER, "bob")]):
        with pytest.raises(IdentityError, match="2 times"):
            user_from_headers(headers, HEADER)
    assert user_from_headers(StreamlitHeaders([(HEADER, "alice")]), HEADER).name == "alice"


# ------------------------------------------------------------------------------------- item 10: prices
@pytest.mark.parametrize("model", ["gpt-4.5-preview", "gpt-4-32k", "gpt-4o-2024-05-13", "gpt-4o-audio-preview",
                                   "o3-mini-high", "gpt-4o-mini-tts", "gpt-4.1-mini-fast"])
def test_item10_a_model_is_priced_by_its_exact_name_never_a_prefix(model):
    assert cost.price_for(model, prices=cost.PRICES) is None
    assert cost.cost_usd(1000, 1000, model=model, prices=cost.PRICES) is None
    d = spending.decide(None, 10, local=False, cap=5.0)  # unknown under a cap: refused
    assert not d.allowed


@pytest.mark.parametrize("model,base", [("gpt-4o-2024-08-06", "gpt-4o"), ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
                                        ("gpt-4-0613", "gpt-4"), ("gpt-4.1-2025-04-14", "gpt-4.1"),
                                        ("gpt-4o", "gpt-4o")])
def test_item10_documented_snapshot_names_are_priced_as_their_model(model, base):
    assert cost.price_for(model, prices=cost.PRICES) == cost.PRICES[base]


# ------------------------------------------------------------------------------------- item 12: small ones
@pytest.mark.parametrize("text,kind", [("attempt to write a readonly database", "StoreReadOnly"),
                                       ("database or disk is full", "StoreFull")])
def test_item12_a_read_only_or_full_store_is_said_as_such_not_as_unreadable(tmp_path, text, kind):
    e = store_error(tmp_path / "secret-path" / "evalcore.db", sqlite3.OperationalError(text))
    assert type(e).__name__ == kind
    assert "move it aside" not in str(e) and "cannot be read" not in str(e)
    assert "secret-path" not in e.public and "evalcore.db" not in e.public


def test_item12_save_version_on_a_read_only_store_says_so_without_a_traceback_or_the_path(first_start, monkeypatch):
    monkeypatch.delenv("EVALCORE_USER_HEADER", raising=False)
    at = page("pages/criteria.py", dimension=DIM)
    prop = Store.conn

    def read_only(self):
        c = prop.fget(self)
        c.execute("PRAGMA query_only = ON")  # every write now fails as on a read-only file (SQLITE_READONLY)
        return c

    monkeypatch.setattr(Store, "conn", property(read_only))
    at.text_area(key="crit_definition").input("a new definition").run()
    at.button(key="save_criteria").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(e.value for e in at.error).replace("\\", "")
    assert "read-only" in shown and str(first_start.parent) not in shown and "evalcore.db" not in shown


def test_item12_an_invalid_sign_in_header_is_shown_as_plain_text(first_start, monkeypatch):
    from pages import _identity

    bad = "![x](http://127.0.0.1:9/pixel.png)"
    monkeypatch.setenv("EVALCORE_USER_HEADER", HEADER)
    monkeypatch.setattr(_identity, "_request_headers", lambda: {HEADER: bad})
    at = page("pages/data.py")
    markdown = [e.value for e in at.error] + [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert not any("![x]" in m or "pixel.png" in m for m in markdown)
    assert any("pixel.png" in t.value for t in at.text)  # said, as text


def _open(path: str, barrier) -> None:
    barrier.wait()
    Store(path).close()


def test_item12_concurrent_openers_of_an_old_store_write_one_backup(tmp_path):
    path = tmp_path / "evalcore.db"
    shutil.copy(ROOT / "tests" / "fixtures" / "store_v3.db", path)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_open, args=(str(path), barrier)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6
    assert len(list(tmp_path.glob("evalcore.db.bak-*"))) == 1
    from evalcore.store.schema import SCHEMA_VERSION

    # migrated to this release's schema, whatever its number (a migration added later changes none of this)
    assert Store(path).conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


class _Upgrading:
    """A connection whose switch to WAL meets SQLite's deadlock answer ("database is locked" at once) ``fails``
    times; the clock moves one second per pause."""

    def __init__(self, fails: int) -> None:
        self.fails, self.tries, self.now = fails, 0, 0.0

    def execute(self, sql: str):
        if sql == "PRAGMA journal_mode":
            return sqlite3.connect(":memory:").execute("SELECT 'delete'")
        self.tries += 1
        if self.tries <= self.fails:
            raise sqlite3.OperationalError("database is locked")
        return None


def test_the_switch_to_wal_is_tried_again_while_another_opener_holds_the_file_then_gives_up():
    from evalcore.store.dialect import enter_wal

    # the deadlock answer skips the busy handler, so the store's own patience (30 s) covers it
    c = _Upgrading(fails=3)
    enter_wal(c, clock=lambda: c.now, sleep=lambda s: setattr(c, "now", c.now + 1.0), patience_s=30)
    assert c.tries == 4
    stuck = _Upgrading(fails=10**6)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enter_wal(stuck, clock=lambda: stuck.now, sleep=lambda s: setattr(stuck, "now", stuck.now + 1.0),
                  patience_s=30)
    assert stuck.tries == 31  # tried at 0 s .. 30 s, then the error


def test_store_errors_are_store_errors():
    assert issubclass(type(store_error(Path("x"), sqlite3.OperationalError("database or disk is full"))), StoreError)


def test_item12_the_same_file_uploaded_by_two_users_makes_two_private_datasets(first_start):
    """alice's private upload neither blocks bob's import of the same file nor tells him it exists."""
    from evalcore.identity import upload_id
    from evalcore.importers import guess_columns, import_table, mapping_from_guesses, read_table, save_import

    wide = ROOT / "tests" / "fixtures" / "byo" / "wide_judges.csv"
    mapping = mapping_from_guesses(guess_columns(read_table(wide)), scales={"coherence": (1.0, 5.0)})
    store = Store(first_start)
    hers = import_table(wide, mapping, name="study", owner="alice")
    save_import(hers, store, owner="alice")
    his = import_table(wide, mapping, name="study", owner="bob")
    save_import(his, store, owner="bob")  # not refused: his own id
    assert hers.dataset.id != his.dataset.id
    assert [d["id"] for d in store.list_datasets(viewer=Viewer("bob"))] == [his.dataset.id]
    unsigned = import_table(wide, mapping, name="study")  # without sign-in: the content's own id, as before
    import hashlib

    digest = hashlib.sha256(wide.read_bytes() + mapping.to_json().encode("utf-8")).hexdigest()
    assert unsigned.dataset.id == upload_id(digest) == f"user-{digest[:12]}"
