"""The store's campaign tables (schema version 9, evalcore.store.campaigns): a campaign and its assignments in one
write, labels linked to their campaign and slot, locks checked atomically, adjudications appended; and the migration
from a version-8 store (every row kept, the new tables empty) and from the release fixture."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from evalcore.store import Store, schema
from evalcore.store.campaigns import ADJUDICATION, LockHeld
from tests.test_store_migration_v6 import FIXTURE
from tests.test_store_migrations import V9_TABLES, all_rows, at_version, columns, copy_of

pytest_plugins = ["tests.store_backends"]  # the store fixture on SQLite and on PostgreSQL

ROW = {"dataset_id": "summeval", "dimension": "coherence", "name": "pilot", "creator": "alice", "k": 2,
       "selection": "all", "seed": 0, "lock_ttl_s": 60.0, "threshold": 1.0}


@pytest.fixture
def store(store_at):
    s = Store(store_at("campaigns.db"))
    yield s
    s.close()


def _make(store) -> dict:
    cid = store.create_campaign(ROW, [("i1", 0, "alice", 1), ("i1", 1, "bob", 1), ("i2", 0, "bob", 2),
                                      ("i2", 1, "alice", 2)])
    return store.campaign_row(cid)


def test_a_campaign_and_its_assignments_read_back(store):
    c = _make(store)
    assert {k: c[k] for k in ROW} == ROW and c["created_at"]
    a = store.campaign_assignments(c["campaign_id"])
    assert a[["item_id", "slot", "annotator", "position"]].values.tolist() == [
        ["i1", 0, "alice", 1], ["i2", 1, "alice", 2], ["i1", 1, "bob", 1], ["i2", 0, "bob", 2]]
    assert a["label_id"].isna().all()
    assert [r["campaign_id"] for r in store.campaign_rows("summeval", member="bob")] == [c["campaign_id"]]
    assert store.campaign_rows("summeval", member="carol") == [] and store.campaign_rows("other") == []


def test_a_failed_assignment_writes_no_campaign(store):
    integrity = (sqlite3.IntegrityError, *((store.conn.raw.IntegrityError,) if hasattr(store.conn, "raw") else ()))
    with pytest.raises(integrity):  # the same slot twice: the whole write is rolled back
        store.create_campaign(ROW, [("i1", 0, "alice", 1), ("i1", 0, "bob", 1)])
    assert store.campaign_rows() == [] and store.rows("SELECT * FROM campaign_assignments") == []


def test_a_label_is_a_labels_row_linked_to_its_campaign_and_slot(store):
    c = _make(store)
    label_id = store.save_campaign_label(c, "i1", 1, "bob", 4.0, now=10.0, shown_at="t0",
                                         strategy=f"random:campaign:{c['campaign_id']}", owner="bob")
    row = store.label_rows("summeval").iloc[0]
    assert (row["label_id"], row["annotator"], row["value"], row["dimension"], row["shown_at"]) == \
        (label_id, "bob", 4.0, "coherence", "t0") and row["created_at"]
    lab = store.campaign_labels(c["campaign_id"])
    assert lab[["label_id", "item_id", "slot", "annotator", "value"]].values.tolist() == [[label_id, "i1", 1, "bob", 4.0]]
    a = store.campaign_assignments(c["campaign_id"]).set_index(["item_id", "slot"])
    assert a.loc[("i1", 1), "label_id"] == label_id and a["label_id"].notna().sum() == 1
    # the Label page's undo of bob's last label takes it out of the campaign too: the slot is open again
    store.undo_label("summeval", "bob")
    assert store.campaign_labels(c["campaign_id"]).empty
    assert store.campaign_assignments(c["campaign_id"])["label_id"].isna().all()


def test_locks_are_taken_once_lapse_and_block_the_slots_named(store):
    c = _make(store)
    cid = c["campaign_id"]
    assert store.take_campaign_lock(cid, "i1", 0, "alice", now=100.0, ttl_s=60) == 160.0
    with pytest.raises(LockHeld) as e:
        store.take_campaign_lock(cid, "i1", 0, "carol", now=159.9, ttl_s=60)
    assert (e.value.holder, e.value.expires_at) == ("alice", 160.0)
    assert store.take_campaign_lock(cid, "i1", 1, "bob", now=120.0, ttl_s=60) == 180.0  # another slot: free
    with pytest.raises(LockHeld):  # the adjudicator's slot waits for every annotator's
        store.take_campaign_lock(cid, "i1", ADJUDICATION, "alice2", now=150.0, ttl_s=60, blocking_slots=(0, 1))
    assert store.take_campaign_lock(cid, "i1", 0, "carol", now=160.0, ttl_s=60) == 220.0  # lapsed at 160
    assert [(r["slot"], r["annotator"]) for r in store.campaign_locks(cid, now=170.0)] == [(0, "carol"), (1, "bob")]


def test_two_writers_racing_for_one_slot_one_wins(store):
    c = _make(store)
    won, lost = [], []
    barrier = threading.Barrier(8)

    def take(who: str) -> None:
        barrier.wait()
        try:
            store.take_campaign_lock(c["campaign_id"], "i2", 0, who, now=0.0, ttl_s=60)
            won.append(who)
        except LockHeld:
            lost.append(who)

    threads = [threading.Thread(target=take, args=(f"u{n}",)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 7
    assert [r["annotator"] for r in store.campaign_locks(c["campaign_id"], now=1.0)] == won


def test_adjudications_append_and_keep_who_and_when(store):
    c = _make(store)
    store.add_adjudication(c["campaign_id"], "i1", 3.0, "alice", "first", created_at="2026-01-01T00:00:00")
    store.add_adjudication(c["campaign_id"], "i1", 4.0, "alice", "second", created_at="2026-01-02T00:00:00")
    adj = store.adjudications(c["campaign_id"])
    assert adj[["value", "adjudicator", "note", "created_at"]].values.tolist() == [
        [3.0, "alice", "first", "2026-01-01T00:00:00"], [4.0, "alice", "second", "2026-01-02T00:00:00"]]



def test_a_datasets_adjudications_carry_their_campaigns_dimension_and_count_for_its_version(store):
    c = _make(store)
    other = store.campaign_row(store.create_campaign({**ROW, "dataset_id": "topical_chat"}, [("i1", 0, "alice", 1)]))
    assert store.dataset_adjudications("summeval").empty and store.adjudications_version("summeval") == 0
    store.add_adjudication(c["campaign_id"], "i2", 5.0, "alice", created_at="2026-01-02T00:00:00")
    store.add_adjudication(c["campaign_id"], "i1", 1.0, "alice", created_at="2026-01-01T00:00:00")
    store.add_adjudication(other["campaign_id"], "i1", 2.0, "alice", created_at="2026-01-03T00:00:00")
    adj = store.dataset_adjudications("summeval")  # oldest first; the other dataset's left out
    assert adj[["campaign_id", "item_id", "dimension", "value", "adjudicator"]].values.tolist() == [
        [c["campaign_id"], "i1", "coherence", 1.0, "alice"], [c["campaign_id"], "i2", "coherence", 5.0, "alice"]]
    assert store.adjudications_version("summeval") == 2 and store.adjudications_version("topical_chat") == 1


# ----------------------------------------------------------------------------------------------------- migration
def _store_at_8(path) -> None:
    """A store as version 8 left it: every step up to 8, and labels given on the Label page."""
    conn = at_version(path, 8)
    for n, (annotator, value) in enumerate([("ann-a", 3.0), ("ann-b", 4.0), ("ann-a", None)], start=1):
        conn.execute("INSERT INTO labels (dataset_id, item_id, dimension, annotator, value, skipped, strategy, "
                     "position, shown_at, created_at, session, owner) VALUES ('summeval', ?, 'coherence', ?, ?, ?, "
                     "'random', ?, NULL, 'x', '', NULL)", (f"i{n}", annotator, value, int(value is None), n))
    conn.commit()
    conn.close()


def test_version_9_keeps_every_row_of_a_version_8_store_and_adds_empty_campaign_tables(tmp_path):
    path = tmp_path / "v8.db"
    _store_at_8(path)
    before = all_rows(path)
    store = Store(path)
    assert schema.version(store.conn) == schema.SCHEMA_VERSION == 9
    assert store.backup is not None and all_rows(store.backup) == before
    after = all_rows(path)
    assert set(after) == set(before) | V9_TABLES
    assert {t: rows for t, rows in after.items() if t in before} == before  # every old row, as it was
    assert all(after[t] == [] for t in V9_TABLES)
    # the old labels are not in any campaign, and a campaign can be made and labelled on the migrated store
    c = _make(store)
    assert store.campaign_labels(c["campaign_id"]).empty
    new_id = store.save_campaign_label(c, "i2", 0, "bob", 2.0, now=0.0, shown_at=None, strategy="random", owner=None)
    assert new_id > max(r[0] for r in before["labels"])
    store.close()


def test_the_release_fixture_migrates_to_the_same_schema_as_a_fresh_store(tmp_path):
    path = copy_of(FIXTURE, tmp_path)
    before = all_rows(path)
    Store(path).close()
    after = all_rows(path)
    assert V9_TABLES <= set(after) and all(after[t] == [] for t in V9_TABLES)
    assert after["labels"] == before["labels"]
    fresh = Store(tmp_path / "fresh.db")
    fresh.close()
    assert {t: c for t, c in columns(tmp_path / "fresh.db").items() if t in V9_TABLES} == \
        {t: c for t, c in columns(path).items() if t in V9_TABLES}
