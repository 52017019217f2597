"""The Improve page's queues as jobs (evalcore.improve_jobs), on PostgreSQL with the loopback judge: a two-candidate
queue enqueued (each run recorded "queued", its scoring job deferred under the queue's one lock), a worker in this
process scores both, and the runs' judgments equal those of the same queue run in-process on a SQLite store, as the
page always has; a later tab's queue follows the same runs (nothing queued or sent again). On SQLite the queue
is refused (it runs in the page's session). Nothing depends on speed: the worker runs until the queue is empty.
The PostgreSQL half is skipped without a server (``EVALCORE_TEST_POSTGRES``; tests/store_backends.py)."""

from __future__ import annotations

import asyncio
import time

import pandas as pd
import pytest

from evalcore import datasets, improve_jobs, workers
from evalcore.align import make_split
from evalcore.align import queue as aq
from evalcore.align.candidates import Candidate, baseline_candidate
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions
from evalcore.sampling import documents_subset
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.types import Criteria
from tests.store_backends import pg_schemas  # noqa: F401

DIM = "coherence"
NAMES = ["baseline", "edit"]


def _crit(definition: str) -> Criteria:
    return Criteria(dimension=DIM, task_introduction="Rate the summary.", definition=definition, scale_min=1,
                    scale_max=5, steps="1. Read the summary.\n2. Rate it.")


def _plan(store: Store, base_url: str) -> aq.ScoringQueue:
    full = datasets.load_dataset("summeval")
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:4])
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    cands = [baseline_candidate(_crit("Coherence.")), Candidate(_crit("Coherence, sentence by sentence."), "edit")]
    endpoint = Endpoint(base_url=base_url, model="loopback-judge", provider="vllm", api_key_env="VLLM_API_KEY")
    return aq.plan("dev", ds, split, "dev", DIM, "geval", cands, NAMES, endpoint, EngineOptions(endpoint), store,
                   owner="ann")


def _run_here(q: aq.ScoringQueue) -> None:
    q.advance()
    while q.busy():
        q.job.wait(60)


def _judgments(store: Store, run_id: str) -> pd.DataFrame:
    rows = store.conn.execute("SELECT item_id, dimension, value, status FROM judgments WHERE run_id = ? "
                              "ORDER BY item_id, dimension", (run_id,)).fetchall()
    return pd.DataFrame([tuple(r) for r in rows], columns=["item_id", "dimension", "value", "status"])


def test_a_queue_on_sqlite_runs_in_the_pages_session(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        q = _plan(store, srv.base_url)
        with pytest.raises(ValueError, match="SQLite file"):
            improve_jobs.enqueue_queue(q)
    assert not any(store.run_exists(it.run_id) for it in q.items)  # nothing recorded


def test_a_worker_finishes_an_enqueued_queue_as_the_page_would(pg_schemas, tmp_path):  # noqa: F811
    url = pg_schemas.new("improve")
    store, here = Store(url), Store(tmp_path / "here.db")
    try:
        with serve() as srv:
            q = _plan(store, srv.base_url)
            ids = improve_jobs.enqueue_queue(q)
            assert all(i is not None for i in ids) and len(ids) == 2
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["queued", "queued"]
            assert improve_jobs.enqueue_queue(q) == [None, None]  # their jobs wait: not queued again
            with workers.opened(url) as app:  # one lock for the queue: its jobs run one after another, in order
                jobs = [app.job_manager.list_jobs(id=i)[0] for i in ids]
                assert {j.lock for j in jobs} == {improve_jobs.queue_lock(q)} and ids == sorted(ids)
            asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False))
            with workers.opened(url) as app:
                assert [app.job_manager.get_job_status(i).value for i in ids] == ["succeeded", "succeeded"]

            # the same queue in the page's session, on SQLite: the same runs, the same judgments
            local = _plan(here, srv.base_url)
            _run_here(local)
            assert local.outcome() is None and local.finished() == NAMES
            for it, mine in zip(q.items, local.items):
                assert it.run_id == mine.run_id and store.run_row(it.run_id)["status"] == "done"
                queued = _judgments(store, it.run_id)
                assert len(queued) > 0 and (queued["status"] == "ok").all()
                pd.testing.assert_frame_equal(queued, _judgments(here, mine.run_id))

            # a tab opened later follows the same runs: done, nothing queued or sent again
            sent = srv.requests_seen
            later = _plan(store, srv.base_url)
            assert improve_jobs.enqueue_queue(later) == [None, None]
            improve_jobs.follow(later)
            _run_here(later)
            assert later.outcome() is None and later.finished() == NAMES
            assert [r["state"] for r in later.status()] == ["done", "done"] and srv.requests_seen == sent
    finally:
        store.close()
        here.close()


def test_the_pages_queue_goes_to_the_workers_when_it_starts_and_follows_them(pg_schemas):  # noqa: F811
    """``to_workers``: nothing is queued until the page advances the queue; then both runs are, a worker (on a
    thread here) scores them in order while the page's queue follows, and it ends as the in-session queue does."""
    import threading

    url = pg_schemas.new("page")
    store = Store(url)
    try:
        with serve() as srv:
            q = improve_jobs.to_workers(_plan(store, srv.base_url))
            assert not any(store.run_exists(it.run_id) for it in q.items)  # planned only: nothing recorded
            q.advance()  # the click: both runs queued (on the first job's thread), the first one followed
            deadline = time.monotonic() + 120
            while q.job.queued_at is None:
                assert time.monotonic() < deadline and q.job.error is None, q.job.error
                time.sleep(0.05)
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["queued", "queued"]
            worker = threading.Thread(target=lambda: asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False)))
            worker.start()
            _run_here(q)
            worker.join(300)
            assert not worker.is_alive()
            assert q.outcome() is None and q.finished() == NAMES
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["done", "done"]
            assert all(len(_judgments(store, it.run_id)) > 0 for it in q.items)
    finally:
        store.close()


def test_cancelling_the_pages_queue_drops_its_waiting_runs(pg_schemas):  # noqa: F811
    url = pg_schemas.new("cancel")
    store = Store(url)
    try:
        with serve() as srv:
            q = improve_jobs.to_workers(_plan(store, srv.base_url))
            q.advance()  # no worker runs: both jobs wait
            q.cancel()
            q.job.wait(60)
            assert not q.busy() and q.outcome()[0] == "warning" and q.pending() == NAMES
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["cancelled", "cancelled"]
            with workers.opened(url) as app:
                assert app.job_manager.list_jobs(queue=workers.QUEUE, status="todo") == []
            # started again (a new click): queued again, and resumed
            again = improve_jobs.to_workers(_plan(store, srv.base_url))
            again.advance()
            deadline = time.monotonic() + 120
            while again.job.queued_at is None:
                assert time.monotonic() < deadline and again.job.error is None, again.job.error
                time.sleep(0.05)
            assert [store.run_row(it.run_id)["status"] for it in again.items] == ["queued", "queued"]
            again.cancel()
            again.job.wait(60)
    finally:
        store.close()


def test_a_queue_on_sqlite_is_left_to_the_pages_session(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        q = _plan(store, srv.base_url)
        make = q.make_job
        assert improve_jobs.to_workers(q) is q and q.make_job is make
