"""The store: cache keys, several writers at once (WAL on SQLite; PostgreSQL too), criteria versions, user datasets,
runs. The store's tests run on both backends (tests/store_backends.py)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading

import pandas as pd

from evalcore.store import Store, canonical_json, criteria_diff, request_key
from evalcore.types import ChatRequest, Criteria
from evalcore.model import Dataset, Dimension

pytest_plugins = ["tests.store_backends"]  # the backend / store_at fixtures: SQLite and PostgreSQL


def test_request_key_is_canonical_and_keyless():
    ident = {"provider": "openai", "base_url": "https://x/v1", "model": "m"}
    a = ChatRequest(messages=(("user", "hi"),))
    b = ChatRequest(messages=(("user", "hi"),), temperature=0.0)
    c = ChatRequest(messages=(("user", "hi"),), temperature=1.0)
    assert request_key(ident, a.params()) == request_key(ident, b.params())
    assert request_key(ident, a.params()) != request_key(ident, c.params())
    assert request_key(ident, a.params()) != request_key({**ident, "model": "m2"}, a.params())
    # key order does not matter (canonical JSON)
    assert request_key(dict(reversed(list(ident.items()))), a.params()) == request_key(ident, a.params())
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def _writer(path: str, who: str, n: int) -> None:
    st = Store(path)
    st.create_run(run_id=f"run-{who}", dataset_id="d", method="m", model="x")
    for i in range(n):
        st.save_judgment(f"run-{who}", {"item_id": f"i{i}", "dimension": "coherence", "status": "ok",
                                        "value": float(i % 5 + 1), "raw": str(i)},
                         cache=[{"key": f"{who}-{i}", "endpoint": {"model": "x"}, "request": {"i": i},
                                 "response": {"choices": [], "usage": {}}}])


def test_wal_two_processes_and_two_threads_write_at_once(store_at, backend):
    path = store_at("shared.db")
    Store(path)  # create the schema once
    n = 150
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"p{k}", n)) for k in range(2)]
    threads = [threading.Thread(target=_writer, args=(path, f"t{k}", n)) for k in range(2)]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    st = Store(path)
    if backend == "sqlite":
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert st.cache_count() == 4 * n
    for who in ("p0", "p1", "t0", "t1"):
        run = st.load_run(f"run-{who}")
        assert len(run.judgments) == n
        assert run.judgments["value"].sum() == sum(float(i % 5 + 1) for i in range(n))
    # integrity after concurrent writes
    if backend == "sqlite":
        assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_criteria_versions_list_and_diff(store_at):
    st = Store(store_at("c.db"))
    c1 = Criteria("coherence", "Intro.", "Well structured.", 1, 5, "1. Read.\n2. Rate.")
    c2 = Criteria("coherence", "Intro.", "Well structured.", 1, 5, "1. Read carefully.\n2. Rate.")
    h1 = st.save_criteria("summeval", c1)
    h2 = st.save_criteria("summeval", c2, note="edited")
    assert h1 == c1.version_hash() and h2 == c2.version_hash() and h1 != h2
    assert st.save_criteria("summeval", c1) == h1  # same content, same version
    versions = st.list_criteria_versions("summeval", "coherence")
    assert {v["hash"] for v in versions} == {h1, h2}
    assert st.load_criteria("summeval", "coherence", h1[:6]) == c1
    diff = st.diff_criteria("summeval", "coherence", h1, h2)
    assert "-1. Read." in diff and "+1. Read carefully." in diff
    assert "definition" not in "".join(line for line in diff.splitlines() if line.startswith(("+", "-"))
                                       and not line.startswith(("+++", "---")))
    assert criteria_diff(c1, c1) == ""


def test_user_dataset_round_trip(store_at):
    st = Store(store_at("d.db"))
    ds = Dataset(
        id="mine", name="My data", task="summarization",
        dimensions=[Dimension("coherence", 1, 5, "structure")],
        documents=pd.DataFrame({"doc_id": ["d1"], "source": ["text"], "references": [["r1", "r2"]], "context": [""]}),
        items=pd.DataFrame({"item_id": ["d1/a", "d1/b"], "doc_id": ["d1", "d1"], "system_id": ["a", "b"],
                            "output": ["x", "y"]}),
        human_scores=pd.DataFrame({"item_id": ["d1/a", "d1/b"], "dimension": ["coherence"] * 2, "score": [3.0, 4.5]}),
        meta={"note": [1, 2]},
    )
    st.save_dataset(ds)
    back = st.load_dataset("mine")
    assert back.dimensions == ds.dimensions and back.meta == ds.meta
    assert back.documents["references"].tolist() == [["r1", "r2"]]
    pd.testing.assert_frame_equal(back.human_scores, ds.human_scores, check_dtype=False)
    assert [d["id"] for d in st.list_datasets()] == ["mine"]
    try:
        st.save_dataset(ds)
        raise AssertionError("overwrite without overwrite=True must fail")
    except ValueError as e:
        assert "mine" in str(e)


def test_runs_keyed_by_criteria_hash(store_at):
    st = Store(store_at("r.db"))
    st.create_run(run_id="r", dataset_id="d", method="m", model="x",
                  config={"criteria": {"coherence": {"hash": "new"}}})
    st.save_judgment("r", {"item_id": "i", "dimension": "coherence", "criteria_hash": "old", "status": "ok",
                           "value": 1.0})
    st.save_judgment("r", {"item_id": "i", "dimension": "coherence", "criteria_hash": "new", "status": "ok",
                           "value": 4.0})
    run = st.load_run("r")
    assert run.judgments["value"].tolist() == [4.0]  # only the current criteria version
    assert [r.run_id for r in st.list_runs("d")] == ["r"] and st.list_runs("other") == []
