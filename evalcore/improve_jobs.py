"""The Improve page's queues as jobs: on a PostgreSQL store, every run of a queue (evalcore.align.queue) goes into
the workers' queue at once, so the queue outlives the tab and the app server; ``python -m evalcore worker`` processes
score its runs one after another, in the queue's order. On SQLite nothing changes: the page's ``ScoringQueue``
starts each run on a thread of its session, as before.

Each run is an ordinary scoring job (evalcore.workers: "score run R to completion"), deferred under one procrastinate
lock for the whole queue: jobs sharing a lock run one at a time, in the order they were deferred, whichever workers
take them, which is the order the page's queue keeps. A run's job that fails does not hold the ones after it (the
lock only orders the jobs); the page, following the runs, ends its queue at the failed one as it always has.

The page follows the runs in the store (``follow``): its queue's jobs become ``FollowedRun``s, which only watch a
queued run's judgments and status (a tab opened later rebuilds the queue with ``align.queue.plan`` and follows the
same runs: they are named by the candidates, so nothing is queued or sent twice).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from typing import TYPE_CHECKING

from evalcore import workers
from evalcore.store import Store

if TYPE_CHECKING:  # pragma: no cover
    import procrastinate

    from evalcore.align.queue import ScoringQueue
    from evalcore.judge.spec import EngineOptions, ScoringSpec


def queue_lock(q: ScoringQueue) -> str:
    """The procrastinate lock the queue's jobs share (its kind, split and runs: one queue, one order)."""
    key = "\x1f".join([q.kind, q.split_id, *(it.run_id for it in q.items)])
    return "improve:" + hashlib.sha256(key.encode()).hexdigest()[:24]


def enqueue_queue(q: ScoringQueue) -> list[int | None]:
    """Record each of the queue's runs not done yet (status "queued") and defer its scoring job, in the queue's
    order, under ``queue_lock(q)``: one job id per item (None: the run is done already, or its job already waits).
    ValueError on a SQLite store (its queues run in the page's session) and for a queue under the spending rule
    (its one meter lives in the session that charged the estimate: such a queue runs there, as on SQLite)."""
    if not workers.queued(q.store):
        raise ValueError(f"the store {q.store.path} is a SQLite file: the Improve queue runs in the page's session")
    if q.meter is not None:
        raise ValueError("a queue counted against a user's budget runs in the page's session")
    lock = queue_lock(q)
    ids: list[int | None] = []
    with workers.opened(workers.store_location(q.store)) as app:
        for it in q.items:
            if q.store.run_exists(it.run_id) and q.store.run_row(it.run_id)["status"] == "done":
                ids.append(None)
                continue
            run_id = workers.record_run(_with_documents(it.spec), q.engine, store=q.store)
            ids.append(_defer(app, run_id, lock))
    return ids


def _with_documents(spec: ScoringSpec) -> ScoringSpec:
    """The spec naming the documents of its split's part: a worker rebuilds the run's dataset from the recorded
    spec (evalcore.judge.spec.recorded_spec), which without them would be the whole dataset, not the part."""
    if spec.documents is not None:
        return spec
    docs = tuple(str(d) for d in dict.fromkeys(spec.dataset.items["doc_id"]))
    return dataclasses.replace(spec, documents=docs)


def _defer(app: procrastinate.App, run_id: str, lock: str) -> int | None:
    from procrastinate.exceptions import AlreadyEnqueued

    try:  # a run's job still waiting (queued by another tab) is not queued again: that one scores it
        return int(app.tasks[workers.TASK].configure(lock=lock, queueing_lock=run_id).defer(run_id=run_id))
    except AlreadyEnqueued:
        return None


def _job_of(app: procrastinate.App, run_id: str) -> int | None:
    """The id of the run's latest scoring job (None: it has none)."""
    jobs = [j for j in app.job_manager.list_jobs(queue=workers.QUEUE, task=workers.TASK, queueing_lock=run_id)
            if j.id is not None]
    return max((int(j.id) for j in jobs if j.id is not None), default=None)


@dataclasses.dataclass
class FollowedRun(workers.QueuedScoringJob):
    """A queue's run already in the workers' queue (``enqueue_queue``): its thread only follows it in the store
    (progress, Cancel, a failed job), as the Score page's queued job does once it has deferred its run. A run
    cancelled or failed ends the page's queue, so the queue's runs still waiting (``lock``) are dropped too: they
    stay pending, as the page's own queue leaves them, and resume when the queue is started again."""

    lock: str | None = None
    sends: ScoringQueue | None = None  # set on a queue's first run: it sends the whole queue to the workers first

    def _score_online(self) -> None:
        if self.sends is not None:  # on this thread, not the page's: recording a run probes the endpoint
            enqueue_queue(self.sends)
            self.sends = None
        stop = threading.Event()
        watcher = threading.Thread(target=self._cancel_when_asked, args=(stop,), name=f"cancel-{self.run_id}",
                                   daemon=True)
        watcher.start()
        try:
            with workers.opened(workers.store_location(self.store)) as app:
                job_id = _job_of(app, self.run_id)
                self.queued_at = time.monotonic()
                try:
                    self._follow(app, self.run_id, job_id)
                    if self.cancel.is_set() and self.lock is not None:
                        watcher.join()  # it acts once Cancel is set: its runs are finished "cancelled" after this
                        if self.store.run_row(self.run_id)["status"] == "cancelled":
                            self.error = None  # its job read "cancelled" before its run did: what Cancel asked
                finally:
                    if self.lock is not None and (self.cancel.is_set() or self.error
                                                  or self.store.run_row(self.run_id)["status"] != "done"):
                        _drop_waiting(app, self.store, self.lock)
        finally:
            stop.set()
            watcher.join()
        self.run = self.store.load_run(self.run_id)

    def _cancel_when_asked(self, stop: threading.Event) -> None:
        """Cancel: the queue's jobs still waiting are dropped (this run's too, if no worker took it yet), and the
        worker scoring this run is asked to stop (procrastinate's abort, which ``workers`` turns into the run's
        Cancel). The jobs share the queue's lock, not the run's, so ``workers.cancel_scoring`` would not find them.
        On its own connections: the following thread holds the job's."""
        while not stop.wait(0.1):
            if not self.cancel.is_set() or self.lock is None:
                continue
            url = workers.store_location(self.store)
            store = Store(url)
            try:
                with workers.opened(url) as app:
                    _drop_waiting(app, store, self.lock)
                    for job in app.job_manager.list_jobs(queue=workers.QUEUE, task=workers.TASK, status="doing",
                                                         lock=self.lock):
                        if job.id is not None:
                            app.job_manager.cancel_job_by_id(job.id, abort=True)
            finally:
                store.close()
            return


def _drop_waiting(app: procrastinate.App, store: Store, lock: str) -> None:
    """Cancel the queue's jobs no worker has taken yet; their runs read "cancelled" and keep what they hold."""
    for job in app.job_manager.list_jobs(queue=workers.QUEUE, task=workers.TASK, status="todo", lock=lock):
        if job.id is not None and app.job_manager.cancel_job_by_id(job.id):
            run_id = str(job.task_kwargs["run_id"])
            store.finish_run(run_id, status="cancelled", stats=store.run_stats(run_id))


def follow(q: ScoringQueue) -> ScoringQueue:
    """Have the page's queue follow its runs in the workers' queue instead of scoring them in its session."""
    lock = queue_lock(q)

    def make(spec: ScoringSpec, engine: EngineOptions, store: Store) -> FollowedRun:
        from evalcore.align.loop import spec_run_id

        return FollowedRun(run_id=spec_run_id(spec), spec=spec, engine=engine, store=store, lock=lock)

    q.make_job = make
    return q


def enqueue_and_follow(q: ScoringQueue) -> ScoringQueue:
    """``enqueue_queue`` then ``follow``."""
    enqueue_queue(q)
    return follow(q)


def to_workers(q: ScoringQueue) -> ScoringQueue:
    """The Improve page's queue as the store wants it: on PostgreSQL, for a queue on the operator's key that no
    meter counts, its runs go to the workers when the page first advances it (after the click was charged; its
    first job's thread records and enqueues them, so an error there ends the queue as a run's would) and the page
    follows them; otherwise (SQLite, a typed key, a budget) ``q`` as it was, run in the page's session."""
    if not workers.queued(q.store) or q.meter is not None or q.engine.api_key:
        return q
    follow(q)
    following = q.make_job
    sent: list[bool] = []

    def make(spec: ScoringSpec, engine: EngineOptions, store: Store) -> FollowedRun:
        job = following(spec, engine, store)
        if not sent:  # the queue's first job sends every run of it to the workers, in order, on its thread
            job.sends = q
            sent.append(True)
        return job

    q.make_job = make
    return q


__all__ = ["queue_lock", "enqueue_queue", "follow", "enqueue_and_follow", "to_workers", "FollowedRun"]

