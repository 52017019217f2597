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
import time
from typing import TYPE_CHECKING

from evalcore import workers

if TYPE_CHECKING:  # pragma: no cover
    import procrastinate

    from evalcore.align.queue import ScoringQueue
    from evalcore.judge.spec import EngineOptions, ScoringSpec
    from evalcore.store import Store


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
    (progress, Cancel, a failed job), as the Score page's queued job does once it has deferred its run."""

    def _score_online(self) -> None:
        with workers.opened(workers.store_location(self.store)) as app:
            job_id = _job_of(app, self.run_id)
            self.queued_at = time.monotonic()
            self._follow(app, self.run_id, job_id)
        self.run = self.store.load_run(self.run_id)


def _followed(spec: ScoringSpec, engine: EngineOptions, store: Store) -> FollowedRun:
    from evalcore.align.loop import spec_run_id

    return FollowedRun(run_id=spec_run_id(spec), spec=spec, engine=engine, store=store)


def follow(q: ScoringQueue) -> ScoringQueue:
    """Have the page's queue follow its runs in the workers' queue instead of scoring them in its session."""
    q.make_job = _followed
    return q


def enqueue_and_follow(q: ScoringQueue) -> ScoringQueue:
    """``enqueue_queue`` then ``follow``: what the Improve page does with a queue on a PostgreSQL store."""
    enqueue_queue(q)
    return follow(q)


__all__ = ["queue_lock", "enqueue_queue", "follow", "enqueue_and_follow", "FollowedRun"]

