"""The versioned schema: a store written by the unversioned release (tests/fixtures/store_v0.db, made by
scripts/make_store_fixture.py) is migrated in place after a backup, losing nothing; a store from a newer release is
refused and left byte-identical; a fresh store and a migrated one have the same schema."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from evalcore.store import Store, StoreTooNew, schema

FIXTURE = Path(__file__).parent / "fixtures" / "store_v0.db"
# the columns version 4 appends, with the value an old row gets: no owner (everyone sees it), not shared, steps
# written by a person
V4_ADDED = {"datasets": (None, 0), "runs": (None, 0), "criteria": (None, 0, ""), "labels": (None,)}
# version 9's tables (labelling campaigns), empty on a migrated store
V9_TABLES = {"campaigns", "campaign_assignments", "campaign_locks", "campaign_labels", "campaign_adjudications"}


def copy_of(fixture: Path, tmp_path: Path) -> Path:
    """A writable copy of a store fixture, named as the app names its store."""
    path = tmp_path / "evalcore.db"
    shutil.copy(fixture, path)
    return path


def user_version(path: Path) -> int:
    """The schema version the file says it has (read-only)."""
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as con:
        version = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()
    return version


def at_version(path: Path, version: int) -> sqlite3.Connection:
    """A new SQLite store at ``path`` as release ``version`` left it: every migration step up to it run, and its
    version set. The caller adds that release's rows, commits and closes."""
    conn = sqlite3.connect(path)
    for target, _why, statements in schema.MIGRATIONS:
        if target <= version:
            for sql in statements:
                conn.execute(sql)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


def all_rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, in rowid order (read-only: the file is not touched)."""
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: con.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall() for t in tables}
    finally:
        con.close()


def columns(path: Path) -> dict[str, list[tuple]]:
    con = sqlite3.connect(str(path))
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: [tuple(r[1:]) for r in con.execute(f'PRAGMA table_info("{t}")')] for t in tables}
    finally:
        con.close()


@pytest.fixture
def old_store(tmp_path) -> Path:
    return copy_of(FIXTURE, tmp_path)


def test_the_fixture_is_an_unversioned_store_with_something_in_every_table_users_fill():
    rows = all_rows(FIXTURE)
    assert user_version(FIXTURE) == 0
    for table in ("cache", "runs", "judgments", "criteria", "datasets", "leases", "answers", "batches", "labels"):
        assert rows[table], table
    assert len(rows["criteria"]) == 2 and len({r[1] for r in rows["criteria"]}) == 1  # two versions of a dimension


def test_migration_keeps_every_row_of_every_table_and_leaves_a_backup(old_store):
    before = all_rows(old_store)
    store = Store(old_store)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    store.close()
    after = all_rows(old_store)
    # version 2's store id, version 4's label shares, version 5's splits
    assert set(after) == set(before) | {"meta", "label_shares", "splits", "final_checks", "spending", "draws"} \
        | V9_TABLES  # + 6, 7, 9
    for table, rows in before.items():
        if table == "batches":  # version 3 added the endpoint, last: the old columns are as they were
            assert [r[:-1] for r in after[table]] == rows
            assert {r[-1] for r in after[table]} == {"http://127.0.0.1:36449/v1"}  # the run's recorded base URL
            continue
        added = V4_ADDED.get(table, ())  # version 4's columns, last, with the values of a row written unsigned
        assert [r[:len(r) - len(added)] for r in after[table]] == rows, table  # row by row, every old column
        assert all(r[len(r) - len(added):] == added for r in after[table]), table
    assert store.backup is not None and store.backup.parent == old_store.parent
    assert store.backup.name.startswith("evalcore.db.bak-v0-")
    assert all_rows(store.backup) == before
    with sqlite3.connect(store.backup) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 0


def test_the_migrated_store_reads_as_before(old_store):
    store = Store(old_store)
    runs = {r.run_id: r for r in store.list_runs()}
    assert {"fixture-online", "fixture-gptscore", "fixture-batch"} <= set(runs)
    online = store.load_run("fixture-online")
    assert len(online.judgments) == 4 and (online.judgments["status"] == "ok").all()
    dataset_id = runs["fixture-online"].dataset_id
    assert len(store.load_dataset(dataset_id).items) > 0
    assert len(store.list_criteria_versions(dataset_id, "coherence")) == 2
    labels = store.label_rows(dataset_id)
    assert len(labels) == 7 and labels["skipped"].sum() == 1
    assert [b["status"] for b in store.batch_rows("fixture-batch")] == ["completed"]
    assert store.lease_holder("fixture-online") is not None
    # and writes: a new label goes after the old ones
    new_id = store.save_label(dataset_id, "x", "coherence", "ann-a", 3.0)
    assert new_id > int(labels["label_id"].max())


def test_a_second_open_does_not_migrate_or_back_up_again(old_store):
    first = Store(old_store)
    first.close()
    second = Store(old_store)
    assert second.backup is None
    assert len(list(old_store.parent.glob("evalcore.db.bak-*"))) == 1


def test_a_fresh_store_has_the_migrated_schema(tmp_path, old_store):
    fresh = Store(tmp_path / "fresh.db")
    assert fresh.backup is None  # nothing to keep
    fresh.close()
    Store(old_store).close()
    assert columns(tmp_path / "fresh.db") == columns(old_store)


def test_a_store_from_a_newer_release_is_refused_and_left_byte_identical(tmp_path):
    path = tmp_path / "newer.db"
    Store(path).close()
    with sqlite3.connect(path) as con:
        con.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(StoreTooNew) as err:
        Store(path)
    message = str(err.value)
    assert str(path) in message and f"schema version {schema.SCHEMA_VERSION + 1}" in message
    assert "newer" in message and "left untouched" in message
    assert path.read_bytes() == before["newer.db"]
    assert not list(tmp_path.glob("*.bak-*"))


def test_version_2_gives_every_store_its_own_id_and_a_backup_keeps_it(tmp_path, old_store):
    migrated = Store(old_store)
    fresh = Store(tmp_path / "fresh.db")
    ids = [s.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0] for s in (migrated, fresh)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids) and ids[0] != ids[1]
    assert all_rows(migrated.backup).keys() == all_rows(FIXTURE).keys()  # the v0 copy has no meta table
    migrated.close()
    again = Store(old_store)  # opening again migrates nothing and keeps the id
    assert again.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0] == ids[0]
    assert again.backup is None


def test_version_3_keys_batches_by_endpoint_and_batch_id(old_store):
    store = Store(old_store)
    (row,) = store.batch_rows("fixture-batch")
    assert row["endpoint"] == "http://127.0.0.1:36449/v1" and row["status"] == "completed"  # the run's base URL
    pk = [r[1] for r in sorted(store.conn.execute('PRAGMA table_info("batches")'), key=lambda r: r[5]) if r[5]]
    assert pk == ["endpoint", "batch_id"]
    # the same id from another server is another batch; from the same server it is refused
    store.add_batch("other-run", row["batch_id"], endpoint="http://elsewhere/v1", route=row["route"],
                    input_file_id="f", api_key_env=None, status="validating", total=1)
    with pytest.raises(ValueError, match="again"):
        store.add_batch("other-run", row["batch_id"], endpoint=row["endpoint"], route=row["route"],
                        input_file_id="f", api_key_env=None, status="validating", total=1)
    assert [b["endpoint"] for b in store.batch_rows("other-run")] == ["http://elsewhere/v1"]
    assert "idx_batches_run_id" in {r[1] for r in store.conn.execute('PRAGMA index_list("batches")')}
