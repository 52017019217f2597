"""Schema version 4 (owners and sharing, issue 21 items 6, 8, 13) on a store the last release wrote:
tests/fixtures/store_v3.db (scripts/make_store_fixture.py at release ae45b33) is migrated in place after a backup,
every old row and column kept, the new columns last with the values of a row written without sign-in, so that
every old row stays visible to everyone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalcore.identity import Viewer
from evalcore.store import Store, schema
from tests.test_store_migrations import V4_ADDED, V9_TABLES, all_rows, columns, copy_of, user_version

FIXTURE = Path(__file__).parent / "fixtures" / "store_v3.db"


@pytest.fixture
def v3_store(tmp_path) -> Path:
    return copy_of(FIXTURE, tmp_path)


def test_the_fixture_is_a_version_3_store_with_rows_in_every_table_version_4_touches():
    assert user_version(FIXTURE) == 3
    rows = all_rows(FIXTURE)
    assert (len(rows["datasets"]), len(rows["runs"]), len(rows["criteria"]), len(rows["labels"])) == (1, 5, 2, 7)
    assert "label_shares" not in rows


def test_version_4_keeps_every_row_and_appends_the_owner_columns(v3_store):
    before = all_rows(v3_store)
    store = Store(v3_store)
    assert schema.version(store.conn) == schema.SCHEMA_VERSION
    store.close()
    after = all_rows(v3_store)
    assert set(after) == set(before) | {"label_shares", "splits", "final_checks", "spending", "draws"} | V9_TABLES
    assert after["label_shares"] == []
    for table, rows in before.items():
        added = V4_ADDED.get(table, ())
        assert [r[:len(r) - len(added)] for r in after[table]] == rows, table
        assert [r[len(r) - len(added):] for r in after[table]] == [added] * len(rows), table
    cols = columns(v3_store)
    assert [c[0] for c in cols["criteria"][-3:]] == ["owner", "shared", "steps_by"]
    assert [c[0] for c in cols["runs"][-2:]] == ["owner", "shared"]
    assert [c[0] for c in cols["datasets"][-2:]] == ["owner", "shared"]
    assert cols["labels"][-1][0] == "owner"
    # the backup is the version-3 file as it was
    assert store.backup is not None and store.backup.name.startswith("evalcore.db.bak-v3-")
    assert all_rows(store.backup) == before
    with sqlite3.connect(store.backup) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 3


def test_old_rows_stay_visible_to_everyone_after_version_4(v3_store):
    store = Store(v3_store)
    dataset_id = "user-e5a545f8445e"
    everyone = {r.run_id for r in store.list_runs(dataset_id)}
    assert len(everyone) == 5
    for viewer in (Viewer("bob"), Viewer(None)):  # a signed-in user, a visitor not signed in
        assert {r.run_id for r in store.list_runs(dataset_id, viewer=viewer)} == everyone
        assert [d["id"] for d in store.list_datasets(viewer=viewer)] == [dataset_id]
        assert len(store.list_criteria_versions(dataset_id, "coherence", viewer=viewer)) == 2
        assert len(store.label_rows(dataset_id, viewer=viewer)) == 7


def test_a_fresh_store_and_a_migrated_version_3_store_have_one_schema(tmp_path, v3_store):
    Store(tmp_path / "fresh.db").close()
    Store(v3_store).close()
    assert columns(tmp_path / "fresh.db") == columns(v3_store)
