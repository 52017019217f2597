"""Schema version 8: the Improve loop's test-part runs that an earlier release wrote (no ``align`` record, only the
id ``{dataset}/align-{split[:8]}-test-...``) are recorded as such once, so opening one on Compare or Alignment is
still a counted look (evalcore.align.loop.test_part_of reads the record, never the id). Checked on a store at
version 7 written as the last release wrote it, and on the newest fixture a release wrote (nothing of it changes)."""

from __future__ import annotations

import json

from evalcore.align import loop
from evalcore.store import Store, schema
from tests.test_store_migration_v6 import FIXTURE
from tests.test_store_migrations import all_rows, at_version, copy_of

SPLIT = "91c787b14b412ccf0123456789abcdef"


def _store_at_7(path) -> None:
    """A store as version 7 left it: every step up to 7, a split, and the loop's runs under their old ids."""
    conn = at_version(path, 7)
    conn.execute('INSERT INTO splits (dataset_id, split_id, dimension, seed, test_share, strata, dev_docs, '
                 "test_docs, created_at) VALUES ('summeval', ?, 'coherence', 0, 0.3, '[]', '[]', '[]', 'x')",
                 (SPLIT,))
    rows = [
        (f"summeval/align-{SPLIT[:8]}-test-aaaaaaaa-geval-m-" + "0" * 64, {"criteria": {}}),
        (f"summeval/align-{SPLIT[:8]}-dev-aaaaaaaa-geval-m-" + "1" * 64, {"criteria": {}}),
        ("summeval/align-deadbeef-test-aaaaaaaa-geval-m-" + "2" * 64, {"criteria": {}}),  # no such split
        ("summeval/my-own-run", {"criteria": {}}),
    ]
    for run_id, config in rows:
        conn.execute("INSERT INTO runs (run_id, dataset_id, method, model, config, status) VALUES "
                     "(?, 'summeval', 'geval', 'm', ?, 'done')", (run_id, json.dumps(config)))
    conn.commit()
    conn.close()


def test_old_test_part_runs_are_recorded_once(tmp_path):
    path = tmp_path / "v7.db"
    _store_at_7(path)
    store = Store(path)
    assert schema.version(store.conn) == schema.SCHEMA_VERSION >= 8
    test_run = f"summeval/align-{SPLIT[:8]}-test-aaaaaaaa-geval-m-" + "0" * 64
    assert loop.test_part_of(store, test_run) == ("summeval", SPLIT)
    config = store.run_row(test_run)["config"]
    assert config["criteria"] == {} and config["spec"] == {"align": {"split": SPLIT, "part": "test"},
                                                           "dataset_id": "summeval"}
    for other in (f"summeval/align-{SPLIT[:8]}-dev-aaaaaaaa-geval-m-" + "1" * 64,
                  "summeval/align-deadbeef-test-aaaaaaaa-geval-m-" + "2" * 64, "summeval/my-own-run"):
        assert loop.test_part_of(store, other) is None
        assert "spec" not in store.run_row(other)["config"]
    store.close()


def test_the_release_fixture_is_unchanged_by_version_8(tmp_path):
    path = copy_of(FIXTURE, tmp_path)
    before = all_rows(path)
    Store(path).close()
    assert all_rows(path)["runs"] == before["runs"]
