"""Schema version 7 (every draw of a judge sampled several times per item) on the newest store fixture a release
wrote (tests/fixtures/store_v5.db): migrated in place after a backup, every old row kept, an empty ``draws`` table;
a run with draws then round-trips through the store (draws kept, judgments their mean), and a run without draws
reads back exactly as before."""

from __future__ import annotations

import math

import pandas as pd

from evalcore.model import DRAW_COLUMNS, Run, aggregate_draws
from evalcore.store import Store, schema
from tests.test_store_migration_v6 import FIXTURE
from tests.test_store_migrations import all_rows, columns, copy_of


def _run_with_draws(dataset_id: str, a: str = "a", b: str = "b") -> Run:
    draws = pd.DataFrame({
        "item_id": [a] * 3 + [b] * 3, "dimension": ["coherence"] * 6, "draw": [0, 1, 2] * 2,
        "raw": ["4", "5", "x", "2", "2", "3"], "value": [4.0, 5.0, math.nan, 2.0, 2.0, 3.0],
        "status": ["ok", "ok", "failed", "ok", "ok", "ok"], "reason": ["", "", "no score", "", "", ""]})
    agg = aggregate_draws(draws)
    judgments = agg.assign(raw="", reason="", estimator="mean-of-draws")[
        ["item_id", "dimension", "raw", "value", "status", "reason", "estimator"]]
    return Run("drawn", dataset_id, "geval", "m", judgments=judgments, draws=draws[DRAW_COLUMNS])


def test_version_7_keeps_every_row_and_adds_an_empty_draws_table(tmp_path):
    path = copy_of(FIXTURE, tmp_path)
    before = all_rows(path)
    store = Store(path)
    assert schema.version(store.conn) == schema.SCHEMA_VERSION >= 7
    store.close()
    after = all_rows(path)
    assert after["draws"] == []
    for table, rows in before.items():
        if table != "final_checks":  # version 6 appends a column there (tests/test_store_migration_v6.py)
            assert after[table] == rows, table
    assert [c[0] for c in columns(path)["draws"]] == [
        "run_id", "item_id", "dimension", "criteria_hash", "draw", "raw", "value", "status", "reason", "created_at"]


def test_a_run_with_draws_round_trips_and_old_runs_read_back_unchanged(tmp_path):
    path = copy_of(FIXTURE, tmp_path)
    store = Store(path)
    old_ids = [r.run_id for r in store.list_runs()]
    for run_id in old_ids:
        assert store.load_run(run_id).draws.empty
    run = _run_with_draws("summeval")
    store.save_imported_run(run)
    back = store.load_run("drawn")
    assert back.n_draws == 3 and len(back.draws) == 6
    assert back.draws["value"].tolist()[:2] == [4.0, 5.0] and math.isnan(back.draws["value"].tolist()[2])
    assert back.judgments.set_index("item_id")["value"].to_dict() == {"a": 4.5, "b": 7 / 3}
    store.delete_run("drawn")
    assert store.conn.execute("SELECT count(*) FROM draws").fetchone()[0] == 0
    store.close()


def test_a_run_bundle_carries_the_draws(tmp_path):
    from evalcore.bundles import export_run, import_bundle

    from evalcore.datasets import load_dataset

    a, b = load_dataset("summeval").items["item_id"].tolist()[:2]
    store = Store(tmp_path / "a.db")
    store.save_imported_run(_run_with_draws("summeval", a, b))
    out = tmp_path / "drawn.jsonl"
    summary = export_run("drawn", out, store=store)
    assert summary["draws"] == 6
    other = Store(tmp_path / "b.db")
    import_bundle(out, store=other)
    back = other.load_run("drawn")
    assert back.n_draws == 3 and back.draws["raw"].tolist() == ["4", "5", "x", "2", "2", "3"]
    assert back.judgments.set_index("item_id")["value"].to_dict() == {a: 4.5, b: 7 / 3}
