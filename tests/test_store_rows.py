"""Rows written through the store's methods land by column name (sqlite-utils' table API, not positional VALUES),
inside the caller's one write transaction, without changing the schema."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from evalcore.model import Run
from evalcore.store import Store
from evalcore.types import Criteria

ENDPOINT = {"provider": "openai", "base_url": "http://x/v1", "model": "m"}

pytest_plugins = ["tests.store_backends"]  # the read-back tests run on SQLite and on PostgreSQL


def _row(st: Store, sql: str, args: tuple = ()) -> dict:
    rows = st.rows(sql, args)
    assert len(rows) == 1, rows
    return rows[0]


def _schema(st: Store) -> list[tuple]:
    return st.conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()


def test_a_judgment_its_cache_entry_and_answer_read_back_by_column(store_at):
    # every text column holds a value naming another column: written by position in the wrong order, they would
    # read back swapped
    st = Store(store_at("s.db"))
    st.create_run(run_id="r1", dataset_id="ds", method="geval", model="mod", label="lab", parser="par")
    st.save_judgment("r1", {"item_id": "dimension", "dimension": "item_id", "criteria_hash": "raw", "raw": "reason",
                            "value": 3.5, "status": "estimator", "reason": "status", "estimator": "criteria_hash",
                            "detail": {"k": 1}},
                     cache=[{"key": "k1", "endpoint": ENDPOINT, "request": {"q": 1},
                             "response": {"usage": {"prompt_tokens": 7}}, "latency_s": 0.5}],
                     answers=[("k1", "score", "coh", "ep-b", 11, 3, 0.25)])
    j = _row(st, "SELECT * FROM judgments")
    assert {k: j[k] for k in j if k != "created_at"} == {
        "run_id": "r1", "item_id": "dimension", "dimension": "item_id", "criteria_hash": "raw", "raw": "reason",
        "value": 3.5, "status": "estimator", "reason": "status", "estimator": "criteria_hash", "detail": '{"k": 1}'}
    c = _row(st, "SELECT * FROM cache")
    assert (c["key"], c["model"], c["latency_s"]) == ("k1", "m", 0.5)
    assert c["request"] == '{"q":1}' and c["usage"] == '{"prompt_tokens": 7}'
    a = _row(st, "SELECT * FROM answers")
    assert {k: a[k] for k in a if k != "created_at"} == {
        "run_id": "r1", "key": "k1", "task": "score", "dimension": "coh", "answered_by": "ep-b", "prompt_tokens": 11,
        "cached_tokens": 3, "latency_s": 0.25}
    r = _row(st, "SELECT * FROM runs")
    assert (r["dataset_id"], r["method"], r["model"], r["label"], r["parser"], r["status"], r["stats"]) == \
        ("ds", "geval", "mod", "lab", "par", "running", "{}")


def test_a_comparison_and_an_imported_run_read_back_by_column(store_at):
    st = Store(store_at("s.db"))
    st.create_run(run_id="p1", dataset_id="ds", method="pairwise", model="m")
    st.save_comparison("p1", {"pair_id": "doc_id", "doc_id": "pair_id", "item_first": "item_second",
                              "item_second": "item_first", "dimension": "order", "order": "dimension",
                              "criteria_hash": "h", "raw": "verdict", "verdict": "raw", "value": 0.5,
                              "status": "ok", "reason": "estimator", "estimator": "reason"})
    c = _row(st, "SELECT * FROM comparisons")
    assert (c["pair_id"], c["doc_id"], c["item_first"], c["item_second"], c["dimension"], c["order"], c["raw"],
            c["verdict"], c["reason"], c["estimator"], c["value"]) == \
        ("doc_id", "pair_id", "item_second", "item_first", "order", "dimension", "verdict", "raw", "estimator",
         "reason", 0.5)
    judgments = pd.DataFrame([{"item_id": "i1", "dimension": "coh", "criteria_hash": "", "raw": "4", "value": 4.0,
                               "status": "ok", "reason": "", "estimator": "mean", "detail": {},
                               "created_at": "2020-01-01"}])
    run = Run(run_id="imp", dataset_id="ds", method="geval", model="mx", label="L", config={"stats": {"n": 1}},
              parser="P", created_at="2019-12-31", judgments=judgments)
    st.save_imported_run(run, owner="alice")
    r = _row(st, "SELECT * FROM runs WHERE run_id = 'imp'")
    assert (r["dataset_id"], r["method"], r["model"], r["label"], r["parser"], r["created_at"], r["status"],
            r["stats"], r["owner"]) == ("ds", "geval", "mx", "L", "P", "2019-12-31", "done", '{"n": 1}', "alice")
    j = _row(st, "SELECT * FROM judgments WHERE run_id = 'imp'")
    assert (j["item_id"], j["dimension"], j["raw"], j["estimator"], j["created_at"]) == \
        ("i1", "coh", "4", "mean", "2020-01-01")


def test_labels_criteria_splits_checks_spending_and_the_rest_read_back_by_column(store_at):
    st = Store(store_at("s.db"))
    label_id = st.save_label("ds", "it", "dim", "ann", 2.0, strategy="stratified", shown_at="t0", session="sess",
                             created_at="t1")
    lab = _row(st, "SELECT * FROM labels WHERE label_id = ?", (label_id,))
    assert (lab["dataset_id"], lab["item_id"], lab["dimension"], lab["annotator"], lab["value"], lab["skipped"],
            lab["strategy"], lab["position"], lab["shown_at"], lab["created_at"], lab["session"]) == \
        ("ds", "it", "dim", "ann", 2.0, 0, "stratified", 1, "t0", "t1", "sess")
    assert st.insert_labels([{**lab, "item_id": "it2", "position": 9}]) == 1
    assert _row(st, "SELECT item_id, position FROM labels WHERE label_id > ?", (label_id,)) == \
        {"item_id": "it2", "position": 9}
    h = st.save_criteria("ds", Criteria(dimension="dim", task_introduction="intro", definition="defn", scale_min=1,
                                        scale_max=7, steps="st"), note="nt", steps_by="gen")
    cr = _row(st, "SELECT * FROM criteria")
    assert (cr["dataset_id"], cr["dimension"], cr["hash"], cr["task_introduction"], cr["definition"],
            cr["scale_min"], cr["scale_max"], cr["steps"], cr["note"], cr["steps_by"]) == \
        ("ds", "dim", h, "intro", "defn", 1, 7, "st", "nt", "gen")
    st.save_split({"dataset_id": "ds", "split_id": "sp", "dimension": "dim", "seed": 3, "test_share": 0.25,
                   "strata": "by system", "dev_docs": ["a"], "test_docs": ["b"]})
    sp = _row(st, "SELECT * FROM splits")
    assert (sp["split_id"], sp["dimension"], sp["seed"], sp["strata"], sp["dev_docs"], sp["test_docs"]) == \
        ("sp", "dim", 3, "by system", '["a"]', '["b"]')
    assert st.record_final_check("ds", "sp", dimension="dim", method="meth", baseline_hash="bh", chosen_hash="ch",
                                 baseline_run="br", chosen_run="cr", result={"x": 1}, owner="bob") == 1
    fc = _row(st, "SELECT * FROM final_checks")
    assert (fc["method"], fc["baseline_hash"], fc["chosen_hash"], fc["baseline_run"], fc["chosen_run"],
            fc["result"], fc["owner"]) == ("meth", "bh", "ch", "br", "cr", '{"x":1}', "bob")
    assert st.charge("bob", 0.5, calls=4, what="run r", cap=None) == 0.0
    sd = _row(st, "SELECT * FROM spending")
    assert (sd["spender"], sd["usd"], sd["calls"], sd["what"]) == ("bob", 0.5, 4, "run r")
    st.remember_probe_failure("pk", endpoint=ENDPOINT, request={"r": 1}, reason="why")
    assert _row(st, "SELECT key, request, reason FROM probe_failures") == \
        {"key": "pk", "request": '{"r":1}', "reason": "why"}
    st.share_labels("ds", "bob")
    assert _row(st, "SELECT dataset_id, owner FROM label_shares") == {"dataset_id": "ds", "owner": "bob"}
    lease = st.acquire_lease("r9")
    assert _row(st, "SELECT * FROM leases") == {k: lease[k] for k in ("run_id", "pid", "host", "started", "since",
                                                                      "token")}
    st.add_batch("r9", "b1", endpoint="http://x/v1", route="openai", input_file_id="f-in", api_key_env="KEY",
                 status="validating", total=5, output_file_id="f-out")
    b = _row(st, "SELECT * FROM batches")
    assert (b["run_id"], b["batch_id"], b["route"], b["input_file_id"], b["api_key_env"], b["total"],
            b["output_file_id"], b["endpoint"]) == ("r9", "b1", "openai", "f-in", "KEY", 5, "f-out", "http://x/v1")


def test_writes_keep_the_schema_and_refuse_what_is_not_in_it(tmp_path):
    st = Store(tmp_path / "s.db")
    before = _schema(st)
    st.cache_put("k", endpoint=ENDPOINT, request={}, response={})
    st.save_label("ds", "i", "d", "ann", 1.0)
    with pytest.raises(sqlite3.OperationalError, match="no column"), st.write():
        st._insert("cache", [{"key": "k2", "not_a_column": 1}])  # alter=False: no new column
    with pytest.raises(sqlite3.OperationalError, match="no such table"), st.write():
        st._insert("not_a_table", [{"a": 1}])  # no table created either
    assert _schema(st) == before
    assert st.cache_count() == 1


def test_row_writes_join_the_one_write_transaction(tmp_path):
    st = Store(tmp_path / "s.db")
    assert st.db.conn is st.conn  # sqlite-utils wraps the store's own connection: no second one
    with pytest.raises(RuntimeError, match="outside a write transaction"):
        st._insert("cache", [{"key": "k"}])
    statements: list[str] = []
    st.conn.set_trace_callback(statements.append)
    try:
        st.cache_put_many([{"key": f"k{i}", "endpoint": ENDPOINT, "request": {"i": i}, "response": {}}
                           for i in range(250)])  # more rows than one sqlite-utils chunk
    finally:
        st.conn.set_trace_callback(None)
    assert [s for s in statements if s.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK")] == \
        ["BEGIN IMMEDIATE", "COMMIT"]
    assert st.cache_count() == 250
    # all or nothing: a bad row after good ones leaves none of them, and a failure later in the same transaction
    # takes back a row written earlier in it
    good = {"dataset_id": "ds", "item_id": "i", "dimension": "d", "annotator": "ann", "value": 1.0, "position": 1}
    with pytest.raises(sqlite3.IntegrityError):
        st.insert_labels([good] * 150 + [{**good, "dimension": None}])
    with pytest.raises(KeyError), st.write():
        st.cache_put("late", endpoint=ENDPOINT, request={}, response={})
        raise KeyError("after the write")
    assert st.label_rows("ds").empty and st.cache_get("late") is None
