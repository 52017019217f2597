"""Schema version 6 (a shared server, round 3: final checks counted per user, spending kept in the store) on a store
the last release wrote: tests/fixtures/store_v5.db (scripts/make_store_fixture.py at release 724116d, with its split
and two final checks) is migrated in place after a backup, every old row and column kept, ``owner`` appended to
``final_checks`` with the value of a row written without sign-in, and an empty ``spending`` table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalcore.identity import Viewer
from evalcore.store import Store, schema
from tests.test_store_migrations import V9_TABLES, all_rows, columns, copy_of, user_version

FIXTURE = Path(__file__).parent / "fixtures" / "store_v5.db"


@pytest.fixture
def v5_store(tmp_path) -> Path:
    return copy_of(FIXTURE, tmp_path)


def test_the_fixture_is_a_version_5_store_with_final_checks():
    assert user_version(FIXTURE) == 5
    rows = all_rows(FIXTURE)
    assert (len(rows["splits"]), len(rows["final_checks"]), len(rows["runs"])) == (1, 2, 5)
    assert "spending" not in rows


def test_version_6_keeps_every_row_and_appends_the_owner_of_a_final_check(v5_store):
    before = all_rows(v5_store)
    store = Store(v5_store)
    assert schema.version(store.conn) == schema.SCHEMA_VERSION >= 6
    store.close()
    after = all_rows(v5_store)
    assert set(after) == set(before) | {"spending", "draws"} | V9_TABLES and after["spending"] == []  # + 7's, 9's
    for table, rows in before.items():
        if table == "final_checks":
            assert [r[:-1] for r in after[table]] == rows and [r[-1] for r in after[table]] == [None, None]
        else:
            assert after[table] == rows, table
    cols = columns(v5_store)
    assert cols["final_checks"][-1][0] == "owner"
    assert [c[0] for c in cols["spending"]] == ["spend_id", "spender", "usd", "calls", "what", "created_at"]
    assert store.backup is not None and store.backup.name.startswith("evalcore.db.bak-v5-")
    assert all_rows(store.backup) == before
    with sqlite3.connect(store.backup) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 5


def test_old_final_checks_count_for_no_one_signed_in_and_a_users_count_starts_at_one(v5_store):
    store = Store(v5_store)
    split_id = all_rows(v5_store)["splits"][0][1]
    dataset_id = all_rows(v5_store)["splits"][0][0]
    assert len(store.final_checks(dataset_id, split_id)) == 2  # the CLI, a laptop: every check
    assert len(store.final_checks(dataset_id, split_id, viewer=Viewer(None))) == 2  # written without sign-in
    assert store.final_checks(dataset_id, split_id, viewer=Viewer("alice")) == []
    n = store.record_final_check(dataset_id, split_id, dimension="coherence", method="geval", baseline_hash="b",
                                 chosen_hash="c", baseline_run="r1", chosen_run="r2", result={}, owner="alice")
    assert n == 1 and store.record_final_check(dataset_id, split_id, dimension="coherence", method="geval",
                                               baseline_hash="b", chosen_hash="c", baseline_run="r1",
                                               chosen_run="r2", result={}) == 3
    assert store.spent_usd("alice") == 0.0 and store.charge("alice", 0.5, calls=3, what="t", cap=1.0) == 0.0
    assert store.spent_usd("alice") == 0.5 and store.spent_usd(None) == 0.0


def test_a_fresh_store_and_a_migrated_version_5_store_have_one_schema(tmp_path, v5_store):
    Store(tmp_path / "fresh.db").close()
    Store(v5_store).close()
    assert columns(tmp_path / "fresh.db") == columns(v5_store)
