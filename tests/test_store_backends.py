"""The store on both backends (evalcore.store.dialect): SQLite, the embedded default, and PostgreSQL
(``EVALCORE_DB=postgresql://...``). The same calls give the same answers on both (a differential test, with values
checked by hand); the same migrations bring a PostgreSQL store from the last release's schema; one writer per run
holds on PostgreSQL through the server's advisory locks; ``meta --json`` of an imported bundled run is byte for byte
the same on both. The PostgreSQL half needs a server (``EVALCORE_TEST_POSTGRES``; see tests/store_backends.py)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore.identity import Viewer
from evalcore.model import Run
from evalcore.store import RunLeased, Store, StoreReadOnly, StoreTooNew, StoreUnreadable, schema
from evalcore.store.postgres import VERSION_TABLE, placeholders, redacted
from evalcore.types import Criteria

ROOT = Path(__file__).resolve().parents[1]
ENDPOINT = {"provider": "openai", "base_url": "http://x/v1", "model": "m"}

pytest_plugins = ["tests.store_backends"]  # the backend / store_at fixtures: SQLite and PostgreSQL


def exercise(st: Store) -> dict[str, object]:
    """Every kind of store call, and what each one answered."""
    out: dict[str, object] = {}
    st.cache_put_many([{"key": f"k{i}", "endpoint": ENDPOINT, "request": {"i": i}, "response": {"n": i},
                        "latency_s": 0.5} for i in range(3)])
    st.cache_put("k1", endpoint=ENDPOINT, request={"i": 1}, response={"n": 10})  # replaces
    out["cache"] = (st.cache_count(), st.cache_get("k1"), sorted(st.cache_has(["k0", "k2", "k9"])))
    st.create_run(run_id="r1", dataset_id="ds", method="geval", model="m", label="first", owner="alice")
    for i, value in enumerate([3.0, float("nan"), 4.5]):
        st.save_judgment("r1", {"item_id": f"i{i}", "dimension": "coherence", "status": "ok", "value": value,
                                "raw": str(value), "detail": {"i": i}},
                         answers=[(f"k{i}", "score", "coherence", "ep", 10 + i, i, 0.25)],
                         draws=[{"item_id": f"i{i}", "dimension": "coherence", "draw": d, "value": value + d,
                                 "status": "ok"} for d in range(2)])
    st.save_comparison("r1", {"pair_id": "p", "doc_id": "d", "item_first": "i0", "item_second": "i1",
                              "dimension": "fluency", "order": "ab", "status": "ok", "verdict": "A", "value": 1.0})
    st.finish_run("r1", status="done", stats={"ok": 3})
    run = st.load_run("r1")
    out["run"] = (run.label, run.config.status, run.judgments[["item_id", "value", "detail"]].to_dict("list"),
                  run.draws["value"].tolist(), run.comparisons["verdict"].tolist(), st.run_dimensions("r1"),
                  st.run_stats("r1"), st.answers("r1")[["key", "prompt_tokens", "latency_s"]].to_dict("list"),
                  sorted(st.done_keys("r1", pairwise=False).items()), st.run_version("r1").split("|")[1])
    out["runs_version"] = st.runs_version("ds").split("|")[::2]
    out["visible"] = ([r.run_id for r in st.list_runs("ds", viewer=Viewer("bob"))],
                      [r.run_id for r in st.list_runs("ds", viewer=Viewer("alice"))])
    out["shared"] = (st.share("runs", ("r1",), "alice"), st.owner_of("runs", ("r1",)),
                     [r.run_id for r in st.list_runs("ds", viewer=Viewer("bob"))])
    with pytest.raises(ValueError, match="belongs to another user"):
        st.create_run(run_id="r1", dataset_id="ds", method="geval", model="m", owner="bob")
    a = Criteria("coherence", "Intro.", "Def.", 1, 5, "1. Read.")
    b = Criteria("coherence", "Intro.", "Def.", 1, 5, "1. Read twice.")
    ha, hb = st.save_criteria("ds", a), st.save_criteria("ds", b, note="edit")
    st.save_criteria("ds", a)  # kept once
    out["criteria"] = ([v["hash"] == hb for v in st.list_criteria_versions("ds", "coherence")],
                       st.load_criteria("ds", "coherence", ha[:6]) == a, "+1. Read twice." in
                       st.diff_criteria("ds", "coherence", ha, hb))
    ids = [st.save_label("ds", f"i{i}", "coherence", "ann", float(i)) for i in range(3)]
    st.save_label("ds", "i0", "coherence", "ann", None, skipped=True)
    undone = st.undo_label("ds", "ann")
    rows = st.label_rows("ds")
    out["labels"] = (ids[1] - ids[0], ids[2] - ids[1], undone["skipped"] if undone else None,
                     rows[["item_id", "value", "position"]].to_dict("list"), st.labels_version("ds")[0],
                     st.labelled_datasets(), st.insert_labels(rows.to_dict("records")), st.delete_labels("ds", "x"))
    st.add_batch("r1", "b1", endpoint="http://x/v1", route="openai", input_file_id="f", api_key_env="K",
                 status="validating", total=5)
    st.update_batch("http://x/v1", "b1", status="completed", completed=5)
    with pytest.raises(ValueError, match="again"):
        st.add_batch("r1", "b1", endpoint="http://x/v1", route="openai", input_file_id="f", api_key_env="K",
                     status="validating", total=5)
    out["batches"] = [(b["batch_id"], b["status"], b["completed"]) for b in st.batch_rows("r1")]
    out["spending"] = (st.charge("alice", 0.6, calls=3, what="run", cap=1.0),
                       st.charge("alice", 0.6, calls=3, what="run", cap=1.0), st.spent_usd("alice"))
    sid = st.save_split({"dataset_id": "ds", "split_id": "abcdef0123", "dimension": "coherence", "seed": 1,
                         "test_share": 0.5, "strata": "none", "dev_docs": ["d1"], "test_docs": ["d2"]})
    out["splits"] = (sid, st.load_split_row("ds", "abc")["test_docs"], len(st.list_split_rows("ds")),
                     st.record_final_check("ds", sid, dimension="coherence", method="geval", baseline_hash="a",
                                           chosen_hash="b", baseline_run="r1", chosen_run="r1", result={"x": 1}),
                     [c["result"] for c in st.final_checks("ds", sid)])
    st.remember_contract_rule("c1", endpoint=ENDPOINT, rule={"param": "temperature", "message": "no"})
    st.remember_probe_failure("p1", endpoint=ENDPOINT, request={"q": 1}, reason="refused")
    out["probes"] = (st.probe_failure("p1"), st.contract_rules(ENDPOINT))
    st.forget_contract(ENDPOINT)
    out["probes_after"] = (st.probe_failure("c1"), st.probe_failure("p1"))
    return out


def test_every_store_call_answers_as_computed_by_hand(store_at):
    st = Store(store_at())
    out = exercise(st)
    assert out["cache"] == (3, {"response": {"n": 10}, "latency_s": 0.0}, ["k0", "k2"])
    label, status, judgments, draws, verdicts, dims, stats, answers, done, run_status = out["run"]
    assert (label, status, verdicts, dims, stats, run_status) == ("first", "done", ["A"], ["coherence", "fluency"],
                                                                  {"ok": 3}, "done")
    assert judgments["item_id"] == ["i0", "i1", "i2"] and judgments["detail"] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert judgments["value"][0] == 3.0 and pd.isna(judgments["value"][1]) and judgments["value"][2] == 4.5
    assert draws[:2] == [3.0, 4.0] and all(pd.isna(draws[2:4])) and draws[4:] == [4.5, 5.5]  # NaN stored as NULL
    assert answers == {"key": ["k0", "k1", "k2"], "prompt_tokens": [10, 11, 12], "latency_s": [0.25] * 3}
    assert done == [(("i0", "coherence", ""), "ok"), (("i1", "coherence", ""), "ok"), (("i2", "coherence", ""), "ok")]
    assert out["runs_version"] == ["1", "0"]
    assert out["visible"] == ([], ["r1"]) and out["shared"] == (True, ("alice", True), ["r1"])
    assert out["criteria"] == ([True, False], True, True)  # newest first
    assert out["labels"] == (1, 1, 1, {"item_id": ["i0", "i1", "i2"], "value": [0.0, 1.0, 2.0],
                                       "position": [1, 2, 3]}, 3, ["ds"], 3, 0)
    assert out["batches"] == [("b1", "completed", 5)]
    assert out["spending"] == (0.0, None, 0.6)
    assert out["splits"] == ("abcdef0123", ["d2"], 1, 1, [{"x": 1}])
    assert out["probes"] == ("refused", [{"param": "temperature", "message": "no"}])
    assert out["probes_after"] == (None, "refused")


def test_the_connections_of_ended_threads_are_let_go(store_at):
    """Streamlit runs each page load in a thread of its own: a store keeps a connection per live thread, not one per
    thread it ever served (on PostgreSQL the server ran out of connections after a few hundred page loads)."""
    import threading

    st = Store(store_at())
    st.save_label("ds", "i0", "q", "ann", 1.0)

    def page_load() -> None:
        assert st.label_rows("ds")["value"].tolist() == [1.0]

    opened = []
    for _ in range(12):  # one after the other, as page loads come
        t = threading.Thread(target=page_load)
        t.start()
        t.join()
        opened.append(st._conns[-1][1])
    st.label_rows("ds")  # the main thread's connection: made before the threads, nothing to let go of
    t = threading.Thread(target=page_load)
    t.start()
    t.join()
    assert len(st._conns) == 2  # the main thread's and the last page load's (let go of at the next new one)
    closed = [getattr(c, "raw", None) is None or c.raw.closed for c in opened[:-1]]
    assert all(closed)  # PostgreSQL: closed; SQLite: no longer held (closed when collected, on any thread)
    st.close()


def test_both_backends_answer_alike(tmp_path, pg_schemas):
    """A differential test: the same calls on a SQLite file and a PostgreSQL schema, every answer equal (NaN
    compared as missing)."""
    got = [exercise(Store(tmp_path / "s.db")), exercise(Store(pg_schemas.new("diff")))]
    assert json.dumps(got[0], default=str, sort_keys=True) == json.dumps(got[1], default=str, sort_keys=True)


def test_datasets_and_imported_runs_round_trip(store_at):
    from evalcore.datasets import load_dataset

    st = Store(store_at())
    ds = load_dataset("summeval")
    ds.id, ds.name = "mine", "mine"
    st.save_dataset(ds, owner="alice")
    back = st.load_dataset("mine")
    pd.testing.assert_frame_equal(back.items, ds.items.reset_index(drop=True), check_dtype=False)
    pd.testing.assert_frame_equal(back.human_scores, ds.human_scores.reset_index(drop=True), check_dtype=False)
    judgments = pd.DataFrame({"item_id": ds.items["item_id"][:4], "dimension": "coherence", "value": [1.0, 2, 3, 4],
                              "status": "ok"})
    run = Run(run_id="mine/r", dataset_id="mine", method="imported", model="m", label="r", judgments=judgments)
    st.save_imported_run(run)
    assert sorted(st.load_run("mine/r").judgments["value"]) == [1.0, 2.0, 3.0, 4.0]
    assert [d["id"] for d in st.list_datasets(viewer=Viewer("alice"))] == ["mine"]
    assert st.list_datasets(viewer=Viewer("bob")) == []
    assert st.find_datasets("mine") == ["mine"] and st.dataset_name("mine") == "mine"
    footprint = st.delete_dataset("mine")
    assert (footprint["runs"], footprint["judgments"]) == (1, 4) and not st.has_dataset("mine")
    assert not st.run_exists("mine/r")


def test_a_cap_holds_for_writers_at_once_on_both_backends(store_at):
    """Eight sessions of one user charging at once against a cap that admits three: exactly three charges are
    recorded (the check and the write are one transaction under the store's write lock, on either backend)."""
    import threading

    location = store_at()
    Store(location).close()
    results: list[float | None] = []
    gate = threading.Barrier(8)

    def session() -> None:
        st = Store(location)
        gate.wait()
        results.append(st.charge("alice", 0.3, calls=1, what="run", cap=1.0))
        st.close()

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r for r in results if r is not None) == pytest.approx([0.0, 0.3, 0.6])
    assert results.count(None) == 5 and Store(location).spent_usd("alice") == pytest.approx(0.9)


def test_text_orders_bytewise_on_both_backends(store_at):
    """ORDER BY on text is SQLite's (bytewise) on PostgreSQL too (``COLLATE "C"``), whatever the server's locale:
    the same run reads back in the same order on both."""
    st = Store(store_at())
    st.create_run(run_id="r", dataset_id="d", method="m", model="x")
    names = ["b", "B", "a", "é", "_x", "A10", "A9"]
    for n in names:
        st.save_judgment("r", {"item_id": n, "dimension": "c", "status": "ok", "value": 1.0})
    assert st.load_run("r").judgments["item_id"].tolist() == sorted(names, key=lambda s: s.encode())


# ----------------------------------------------------------------------------------------- PostgreSQL's own
def test_placeholders_outside_quotes_only():
    assert placeholders("SELECT '?', \"a?\" FROM t WHERE x = ? AND y LIKE ? || '%'") == \
        "SELECT '?', \"a?\" FROM t WHERE x = %s AND y LIKE %s || '%%'"
    assert redacted("postgresql://u:secret@host:5/db?sslmode=require") == "postgresql://u:***@host:5/db?sslmode=require"


def test_a_select_star_on_postgres_has_the_columns_sqlite_has(tmp_path, pg_schemas):
    lite, pg = Store(tmp_path / "s.db"), Store(pg_schemas.new("cols"))
    for st in (lite, pg):
        st.save_label("ds", "i", "d", "ann", 1.0)
    assert list(lite.rows("SELECT * FROM labels")[0]) == list(pg.rows("SELECT * FROM labels")[0])
    assert pg.rows("SELECT * FROM labels")[0]["label_id"] == 1
    assert pg.conn.execute("SELECT rowid FROM labels").fetchone() == (1,)  # asked for by name: there


def test_a_write_that_waits_past_the_lock_timeout_is_store_locked_on_postgres(pg_schemas, monkeypatch):
    """Writers queue on the store's lock, as on SQLite's file lock; one that waits past the timeout (30 s; here 0.2
    s) gets StoreLocked, naming the store without its password, and nothing it meant to write is written."""
    from evalcore.store import StoreLocked, postgres

    monkeypatch.setattr(postgres, "LOCK_TIMEOUT_S", 0.2)
    url = pg_schemas.new("locked")
    holder, waiter = Store(url), Store(url)
    with holder.write():
        with pytest.raises(StoreLocked, match="stayed locked"):
            waiter.save_label("ds", "i", "d", "ann", 1.0)
    assert waiter.label_rows("ds").empty
    waiter.save_label("ds", "i", "d", "ann", 1.0)  # the lock released: the write goes through
    assert len(holder.label_rows("ds")) == 1
    holder.share_labels("ds", "ann")
    joined = holder.rows("SELECT * FROM labels l JOIN label_shares s ON s.dataset_id = l.dataset_id")
    assert len(joined) == 1 and "rowid" not in joined[0] and joined[0]["shared_at"]  # a join: no hidden rowid


def test_a_fresh_postgres_store_has_sqlites_schema(tmp_path, pg_schemas):
    """The same tables, the same columns in the same order, the same primary keys and indexes (PostgreSQL's hidden
    rowid aside), and the same declared types up to the translation (TEXT, INTEGER -> integer or bigint, REAL ->
    double precision, BLOB -> bytea)."""
    lite, pg = Store(tmp_path / "s.db"), Store(pg_schemas.new("schema"))
    tables = [r[0] for r in lite.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                              "'sqlite_%' ORDER BY name")]
    pg_tables = [r[0] for r in pg.conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name <> ? "
        "ORDER BY table_name COLLATE \"C\"", (VERSION_TABLE,))]
    assert pg_tables == tables
    types = {"TEXT": "text", "INTEGER": "integer", "REAL": "double precision", "BLOB": "bytea"}
    for t in tables:
        info = lite.conn.execute(f'PRAGMA table_info("{t}")').fetchall()
        want = [(name, types[ty.upper()], pk > 0) for _cid, name, ty, _nn, _default, pk in info]
        got = pg.conn.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
                              "current_schema() AND table_name = ? AND column_name <> 'rowid' ORDER BY "
                              "ordinal_position", (t,)).fetchall()
        key = set(pg.conn.primary_key(t))  # type: ignore[union-attr]
        got = [(name, "integer" if ty == "bigint" else ty, name in key) for name, ty in got]
        assert got == want, t
    indexes = {r[0] for r in lite.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT "
                                               "LIKE 'sqlite_%'")}
    pg_indexes = {r[0] for r in pg.conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = "
                                                "current_schema() AND indexname NOT LIKE '%pkey'")}
    assert pg_indexes == indexes


def _at_version(url: str, upto: int) -> Store:
    """A PostgreSQL store as the release at schema version ``upto`` left it (every step up to it)."""
    from evalcore.store.connection import Connection

    handle = Connection(url)
    schema.migrate_postgres(handle.conn, handle, upto=upto)  # type: ignore[arg-type]
    return handle  # type: ignore[return-value]


def test_postgres_store_migrates_from_the_last_release_keeping_every_row(pg_schemas):
    url = pg_schemas.new("lastrelease")
    old = _at_version(url, schema.SCHEMA_VERSION - 1)
    assert schema.version(old.conn) == schema.SCHEMA_VERSION - 1
    tables = [r[0] for r in old.conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name <> ?"
        " ORDER BY table_name", (VERSION_TABLE,)).fetchall()]
    before = {}
    with old.write() as c:
        for t in tables:  # one row in every table, every column given a value of its type
            cols = c.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
                             "current_schema() AND table_name = ? AND column_name <> 'rowid' ORDER BY ordinal_position",
                             (t,)).fetchall()
            values = {n: {"bytea": b"\x00\x01", "double precision": 0.5}.get(ty, 7 if "int" in ty else f"{t}.{n}")
                      for n, ty in cols}
            c.execute(f'DELETE FROM "{t}"')
            c.execute(f'INSERT INTO "{t}" ({", ".join(chr(34) + n + chr(34) for n in values)}) VALUES '
                      f'({", ".join("?" for _ in values)})', list(values.values()))
            before[t] = values
    old.close()
    st = Store(url)
    assert schema.version(st.conn) == schema.SCHEMA_VERSION and st.backup is None
    for t, values in before.items():
        got = st.rows(f'SELECT * FROM "{t}"')
        assert len(got) == 1 and {k: got[0][k] for k in values} == values, t


def test_postgres_store_from_version_7_records_old_test_part_runs(pg_schemas):
    """Schema version 8's data step, in its PostgreSQL words: the same records as tests/test_store_migration_v8.py
    checks on SQLite."""
    from evalcore.align import loop

    split = "91c787b14b412ccf0123456789abcdef"
    url = pg_schemas.new("v7")
    old = _at_version(url, 7)
    test_run = f"summeval/align-{split[:8]}-test-aaaaaaaa-geval-m-" + "0" * 64
    others = [f"summeval/align-{split[:8]}-dev-aaaaaaaa-geval-m-" + "1" * 64,
              "summeval/align-deadbeef-test-aaaaaaaa-geval-m-" + "2" * 64, "summeval/my-own-run"]
    with old.write() as c:
        c.execute("INSERT INTO splits (dataset_id, split_id, dimension, seed, test_share, strata, dev_docs, test_docs,"
                  " created_at) VALUES ('summeval', ?, 'coherence', 0, 0.3, '[]', '[]', '[]', 'x')", (split,))
        for run_id in [test_run, *others]:
            c.execute("INSERT INTO runs (run_id, dataset_id, method, model, config, status) VALUES "
                      "(?, 'summeval', 'geval', 'm', ?, 'done')", (run_id, json.dumps({"criteria": {}})))
    old.close()
    st = Store(url)
    assert loop.test_part_of(st, test_run) == ("summeval", split)
    assert st.run_row(test_run)["config"] == {"criteria": {}, "spec": {"align": {"split": split, "part": "test"},
                                                                       "dataset_id": "summeval"}}
    for other in others:
        assert loop.test_part_of(st, other) is None and "spec" not in st.run_row(other)["config"]


def test_postgres_store_a_newer_release_wrote_is_refused_untouched(pg_schemas):
    url = pg_schemas.new("newer")
    st = Store(url)
    with st.write() as c:
        c.execute(f"UPDATE {VERSION_TABLE} SET version = ?", (schema.SCHEMA_VERSION + 1,))
    st.close()
    with pytest.raises(StoreTooNew, match="newer than this release"):
        Store(url)
    again = Store.__new__(Store)
    from evalcore.store.connection import Connection

    Connection.__init__(again, url)
    assert schema.version(again.conn) == schema.SCHEMA_VERSION + 1


def test_an_unreachable_server_is_a_store_error_naming_the_url_without_its_password(tmp_path):
    url = f"postgresql://judge:hunter2@/nodb?host={tmp_path}&connect_timeout=2"  # no server listens there
    with pytest.raises(StoreUnreadable) as e:
        Store(url)
    assert "cannot be reached" in str(e.value) and "hunter2" not in str(e.value) and "judge:***@" in str(e.value)


def test_the_apps_store_check_reads_a_postgres_url_as_a_url_never_as_a_file(tmp_path, monkeypatch):
    """The app's banner check (pages/_loaders.store_problem) once made the URL a Path, which folds its '//': the
    check then opened a SQLite file named 'postgresql:/...' under the working directory. It must ask the server."""
    from pages import _loaders

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALCORE_DB", f"postgresql://judge:hunter2@/nodb?host={tmp_path}&connect_timeout=2")
    message = _loaders.store_problem()
    assert message is not None and "cannot be reached" in message and "hunter2" not in message
    assert list(tmp_path.iterdir()) == []  # no file or folder made from the URL


def test_postgres_no_such_database_and_a_user_who_may_only_read(pg_schemas):
    """A database that does not exist is the broken-store message; a user granted only SELECT reads the store and
    gets the read-only message on a write, with nothing written."""
    import uuid
    from urllib.parse import urlsplit

    import psycopg

    base = pg_schemas.url
    parts = urlsplit(base)
    with pytest.raises(StoreUnreadable, match='database "no_such_db_x" does not exist'):
        Store(parts._replace(path="/no_such_db_x").geturl())
    url = pg_schemas.new("readonly")
    Store(url).save_label("ds", "i", "d", "ann", 1.0)
    role = f"reader_{uuid.uuid4().hex[:8]}"
    schema_name = pg_schemas.made[-1]
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE ROLE "{role}" LOGIN')
        c.execute(f'GRANT USAGE ON SCHEMA "{schema_name}" TO "{role}"')
        c.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema_name}" TO "{role}"')
    try:
        host = urlsplit(url).netloc.rsplit("@", 1)[-1] if "@" in urlsplit(url).netloc else urlsplit(url).netloc
        try:
            reader = Store(urlsplit(url)._replace(netloc=f"{role}@{host}").geturl())
        except StoreUnreadable as e:  # a server that lets no new role in without a password (.ci/run's does)
            pytest.skip(f"this server refuses a new role without a password: {e.detail}")
        assert len(reader.label_rows("ds")) == 1
        with pytest.raises(StoreReadOnly, match="refuses writes from this user"):
            reader.save_label("ds", "i", "d", "ann", 2.0)
        reader.close()
        assert len(Store(url).label_rows("ds")) == 1
    finally:
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f'DROP OWNED BY "{role}"')
            c.execute(f'DROP ROLE "{role}"')


def test_a_postgresql_url_without_its_driver_says_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a))
    with pytest.raises(StoreUnreadable, match=r"judgescope\[postgres\]"):
        Store("postgresql://judge@/db")


_HOLDER = """
import sys, time
from evalcore.store import Store
st = Store(sys.argv[1])
st.create_run(run_id="r", dataset_id="d", method="m", model="x")
st.acquire_lease("r")
print("held", flush=True)
time.sleep(120)
"""


def test_postgres_lease_is_the_servers_lock_and_a_killed_holder_lets_go(pg_schemas):
    """One writer per run without /proc: a holder on any host keeps its run while its session lives; killed, the
    server drops its lock, the run reads "interrupted" and another process takes it over."""
    url = pg_schemas.new("lease")
    Store(url)
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, url], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        st = Store(url)
        with st.write() as c:  # as a holder on another host would have written it: its pid means nothing here
            c.execute("UPDATE leases SET host = 'elsewhere', pid = 1")
        assert st.live_status("r", "running") == "running"
        with pytest.raises(RunLeased, match="pid 1 on elsewhere"):
            st.acquire_lease("r")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert st.live_status("r", "running") == "interrupted"
    lease = st.acquire_lease("r")
    assert st.live_status("r", "running") == "running"
    other = Store(url)
    with pytest.raises(RunLeased, match="another thread of this process"):
        other.acquire_lease("r")  # this process, another handle: still one writer
    st.release_lease(lease)
    assert st.lease_holder("r") is None and st.live_status("r", "running") == "interrupted"
    other.release_lease(other.acquire_lease("r"))


# ----------------------------------------------------------------------------------- end to end: meta --json
def _cli(*args: str, db: str) -> str:
    from evalcore import cli

    old = os.environ.get("EVALCORE_DB")
    os.environ["EVALCORE_DB"] = db
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(args))
    finally:
        if old is None:
            os.environ.pop("EVALCORE_DB", None)
        else:
            os.environ["EVALCORE_DB"] = old
    assert code in (0, None), err.getvalue()
    return out.getvalue()


def test_meta_json_of_an_imported_bundled_run_is_the_same_on_both_backends(tmp_path, pg_schemas):
    """A bundled run's judge scores (SummEval, GPT-4 with Shen et al.'s reason-then-score prompt) written to a
    judge-score file and imported into a SQLite store and into a PostgreSQL one: ``meta --json`` on each is the same
    document, byte for byte."""
    from evalcore import runs

    bundled = runs.load_run("summeval/shen-gpt-4-0314-rts")
    scores = tmp_path / "gpt4.csv"
    bundled.judgments.rename(columns={"value": "score"})[["item_id", "dimension", "score", "raw"]].to_csv(
        scores, index=False)
    metas = []
    for db in (str(tmp_path / "lite.db"), pg_schemas.new("meta")):
        imported = json.loads(_cli("import-run", str(scores), "--dataset", "summeval", "--name", "gpt-4 bundled",
                                   "--json", db=db))
        assert imported["judgments"] == len(bundled.judgments) and imported["unmatched"] == 0
        metas.append(_cli("meta", "--dataset", "summeval", "--run", imported["run"], "--resamples", "50", "--json",
                          db=db))
    assert metas[0] == metas[1]
    doc = json.loads(metas[0])
    assert set(doc["dimensions"]) == set(bundled.judgments["dimension"])


def test_scoring_end_to_end_against_the_loopback_gives_the_same_run_on_both_backends(tmp_path, pg_schemas):
    """``score`` (G-Eval, two draws per item) against the loopback judge into a SQLite store and into a PostgreSQL
    one: the same judgments and draws, the same ``meta --json``; scoring again sends nothing (every reply cached in
    the store) on both."""
    from evalcore import cli
    from evalcore.testing.loopback import serve

    def score(db: str, srv_url: str) -> dict[str, object]:
        args = cli.parse_checked(["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval",
                                  "--model", "loop", "--base-url", srv_url, "--provider", "vllm", "--limit", "2",
                                  "--draws", "2", "--run", "summeval/loop-geval", "--db", db, "--json", "--quiet"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert args.func(args) == 0
        return json.loads(out.getvalue())

    runs, metas, sent = [], [], []
    with serve() as srv:  # one judge for both (its address is in the run's record)
        for db in (str(tmp_path / "lite.db"), pg_schemas.new("score")):
            start = srv.requests_seen
            first = score(db, srv.base_url)
            middle = srv.requests_seen
            score(db, srv.base_url)
            sent.append((middle - start, srv.requests_seen - middle))
            run = Store(db).load_run(str(first["run_id"]))
            runs.append((run.judgments[["item_id", "value", "status"]].to_dict("list"), run.draws["value"].tolist()))
            metas.append(_cli("meta", "--dataset", "summeval", "--run", str(first["run_id"]), "--resamples", "50",
                              "--json", db=db))
    assert runs[0] == runs[1] and len(runs[0][1]) == 2 * len(runs[0][0]["item_id"]) > 0
    assert metas[0] == metas[1]
    assert sent[0] == sent[1] and sent[0][0] > 0 and sent[0][1] == 0  # the second run sent nothing
