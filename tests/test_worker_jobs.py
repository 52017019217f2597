"""Batch collection as a job (evalcore.worker_jobs), on PostgreSQL against the loopback's Batch API routes: a run's
batches submitted, "collect them when done" enqueued (a second enqueue while it waits adds none), a worker in this
process polls the loopback through the job's retries and collects; the run's judgments equal those of the same
batch collected in-process (``batch collect``) on another store, and a second collection job writes none twice.
Nothing depends on speed: the loopback's batch waits on a stepped clock until the job has been retried, the
job's poll wait is 0 and the worker runs until the queue is empty. Skipped without a
PostgreSQL server (``EVALCORE_TEST_POSTGRES``; tests/store_backends.py)."""

from __future__ import annotations

import asyncio
import threading
import time

import pandas as pd

from evalcore import runs, worker_jobs, workers
from evalcore.judge import batch
from evalcore.judge.client import Endpoint
from evalcore.store import Store
from evalcore.testing.clock import SteppedClock
from evalcore.testing.loopback import BatchSwitches, serve
from evalcore.types import Criteria
from tests import judge_calls
from tests.store_backends import pg_schemas  # noqa: F401

N_ITEMS = 6
CRIT = {"coherence": Criteria("coherence", "You will be given a summary.", "coherence definition", 1, 5,
                              "1. Read.\n2. Score.")}


def _submit(store: Store, base_url: str, run_id: str) -> batch.Submitted:
    ds = runs.get_dataset("summeval", store, with_labels=False)
    return judge_calls.submit(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT, limit=N_ITEMS, run_id=run_id,
                              endpoint=Endpoint(base_url, "loop-model", provider="local"), store=store)


def _judgments(store: Store, run_id: str) -> pd.DataFrame:
    rows = store.conn.execute("SELECT item_id, dimension, value, status FROM judgments WHERE run_id = ? "
                              "ORDER BY item_id, dimension", (run_id,)).fetchall()
    return pd.DataFrame([tuple(r) for r in rows], columns=["item_id", "dimension", "value", "status"])


def _work_until_empty(url: str) -> None:
    asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False))


def _attempts(url: str, job_id: int) -> int:
    with workers.opened(url) as app:
        return int(app.job_manager.list_jobs(id=job_id)[0].attempts)


def test_a_worker_collects_a_runs_batches_once_as_batch_collect_does(pg_schemas, monkeypatch):  # noqa: F811
    monkeypatch.setattr(worker_jobs, "POLL_S", 0)  # each retry at once: the worker polls until the batch ends
    queued_url, here_url = pg_schemas.new("queued"), pg_schemas.new("here")
    # the loopback's batches stay "validating" until the test lets its clock run: the worker's first tries find
    # them running, whatever the machine's speed
    clock = SteppedClock()
    with serve(batch=BatchSwitches(start_delay_s=1.0, sleep=clock.sleep)) as srv:
        queued_store, here_store = Store(queued_url), Store(here_url)
        try:
            sub = _submit(queued_store, srv.base_url, "run-queued")
            assert sub.batch_ids and queued_store.run_row("run-queued")["status"] == "batch-submitted"
            with workers.opened(queued_url) as app:
                job_id = worker_jobs.enqueue_collection(app, "run-queued")
                assert job_id is not None
                assert worker_jobs.enqueue_collection(app, "run-queued") is None  # one waiting job per run
            worker = threading.Thread(target=_work_until_empty, args=(queued_url,))
            worker.start()
            deadline = time.monotonic() + 120
            while _attempts(queued_url, job_id) < 2:  # tried, found the batch running, retried
                assert time.monotonic() < deadline and worker.is_alive(), "the job was not retried"
                time.sleep(0.05)
            assert _judgments(queued_store, "run-queued").empty
            clock.run_freely()  # the batch runs now; the job's next try collects it and the queue empties
            worker.join(300)
            assert not worker.is_alive()
            with workers.opened(queued_url) as app:
                assert app.job_manager.get_job_status(job_id).value == "succeeded"
            # the same work collected in this process, as `batch collect` does, on another store
            _submit(here_store, srv.base_url, "run-here")
            batch.collect("run-here", store=here_store, poll_s=0.02)

            queued, here = _judgments(queued_store, "run-queued"), _judgments(here_store, "run-here")
            assert len(queued) == N_ITEMS and (queued["status"] == "ok").all()
            pd.testing.assert_frame_equal(queued, here)
            assert queued_store.run_row("run-queued")["status"] == here_store.run_row("run-here")["status"] == "done"
            assert all(b["collected"] for b in batch.batch_rows(queued_store, "run-queued"))

            # collecting again (a second job) reads no batch again and writes no judgment twice
            files_before = srv.by_path.get("/v1/files", 0)
            with workers.opened(queued_url) as app:
                again = worker_jobs.enqueue_collection(app, "run-queued")
            _work_until_empty(queued_url)
            with workers.opened(queued_url) as app:
                assert app.job_manager.get_job_status(again).value == "succeeded"
            pd.testing.assert_frame_equal(_judgments(queued_store, "run-queued"), queued)
            assert srv.by_path.get("/v1/files", 0) == files_before  # no batch file fetched again
        finally:
            queued_store.close()
            here_store.close()


def test_a_job_for_batches_still_running_asks_again_later(pg_schemas, monkeypatch):  # noqa: F811
    """``collect_when_done`` on a batch that has not ended: BatchesPending (the job's retry), nothing written."""
    url = pg_schemas.new("pending")
    with serve(batch=BatchSwitches(start_delay_s=30.0)) as srv:  # stays "validating" for the whole test
        store = Store(url)
        try:
            _submit(store, srv.base_url, "run-pending")
            try:
                worker_jobs.collect_when_done(store, "run-pending")
            except worker_jobs.BatchesPending as e:
                assert "run-pending" in str(e)
            else:
                raise AssertionError("a batch still validating was collected")
            assert _judgments(store, "run-pending").empty
            assert store.run_row("run-pending")["status"] == "batch-submitted"
        finally:
            store.close()


def test_the_score_pages_batch_run_on_postgresql_is_collected_by_a_worker(pg_schemas, monkeypatch):  # noqa: F811
    """The Score page's Batch API run on the operator's key (``views.score.new_job``, use_batch): its thread
    submits the batches and queues their collection; a worker collects them; the page's job then holds the run,
    every item judged once."""
    from evalcore.judge.client import endpoint_from_preset
    from evalcore.judge.spec import default_spec
    from evalcore.views import score as score_views

    monkeypatch.setattr(worker_jobs, "POLL_S", 0)
    monkeypatch.delenv("EVALCORE_MAX_COST_USD", raising=False)
    url = pg_schemas.new("page_batch")
    store = Store(url)
    with serve() as srv:
        spec = default_spec(runs.get_dataset("summeval", store, with_labels=False), "geval", ["coherence"],
                            store=store, limit=N_ITEMS)
        job = score_views.new_job(spec, endpoint_from_preset("vllm", base_url=srv.base_url, model="loop"),
                                  use_batch=True, api_key=None, concurrency=1, reprobe=False, store=store,
                                  owner="alice")
        assert type(job) is workers.QueuedBatchJob
        job.poll_s = 0.05
        job.start()
        deadline = time.monotonic() + 120
        while not store.batch_rows(job.run_id) or not _collect_jobs(url):  # submitted, its collection queued
            assert time.monotonic() < deadline and job.running, job.error
            time.sleep(0.05)
        _work_until_empty(url)  # a worker: collects them (the loopback's batch ends by itself)
        assert job.wait(120) and job.error is None
    assert len(job.run.judgments) == N_ITEMS and job.run.judgments["item_id"].is_unique
    assert all(b["collected"] for b in store.batch_rows(job.run_id))
    store.close()


def _collect_jobs(url: str) -> list[object]:
    with workers.opened(url) as app:
        return [j for j in app.job_manager.list_jobs() if j.task_name == worker_jobs.COLLECT_TASK]
