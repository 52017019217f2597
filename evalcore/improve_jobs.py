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

A queue counted against a user's budget (its ``meter``: ONE estimate charged at the click for all its runs) hands
that reservation to its runs when it is enqueued, each its share of the estimate, as the Score page's queued run
hands over its own (evalcore.judge.spending, "a run scored by a worker"): each worker rebuilds its run's meter from
the store and stops at the operator's cap, the shares of the runs waiting behind it its to use (as the page's one
meter lets its running run use the whole reservation): a run stopped at the cap leaves the runs behind it the cap
reached, and they stop before their first request, their shares given back. Cancel gives back what the dropped
runs had reserved; a run done, or queued already by another tab, is reserved nothing again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from typing import TYPE_CHECKING

from evalcore import workers
from evalcore.judge import spending
from evalcore.store import Store

if TYPE_CHECKING:  # pragma: no cover
    import procrastinate

    from evalcore.align.queue import Item, ScoringQueue
    from evalcore.judge.spec import EngineOptions, ScoringSpec


def queue_lock(q: ScoringQueue) -> str:
    """The procrastinate lock the queue's jobs share (its kind, split and runs: one queue, one order)."""
    key = "\x1f".join([q.kind, q.split_id, *(it.run_id for it in q.items)])
    return "improve:" + hashlib.sha256(key.encode()).hexdigest()[:24]


def enqueue_queue(q: ScoringQueue) -> list[int | None]:
    """Record each of the queue's runs not done yet (status "queued") and defer its scoring job, in the queue's
    order, under ``queue_lock(q)``: one job id per item (None: the run is done already, or its job already waits
    or runs: that one is followed). A queue under the spending rule (``q.meter``, the click's one reservation for
    all its runs) hands each run its share of the reservation (``reserve``): each worker rebuilds its run's meter
    from the store and stops at the operator's cap. ValueError on a SQLite store (its queues run in the page's
    session) and for a key typed into the browser (it never leaves the session)."""
    if not workers.queued(q.store):
        raise ValueError(f"the store {q.store.path} is a SQLite file: the Improve queue runs in the page's session")
    if q.engine.api_key:
        raise ValueError("a queue sent with a key typed into the browser runs in the page's session")
    lock = queue_lock(q)
    with workers.opened(workers.store_location(q.store)) as app:
        pending = list({it.run_id: it for it in q.items if not _done(q.store, it.run_id)}.values())
        todo = [it for it in pending if not _live(app, it.run_id)]
        weights = _weights(q, pending) if q.meter is not None else {}
        for it in todo:  # the queue's meter (if any) counts each recording's capability probe
            workers.record_run(_with_documents(it.spec), q.engine, store=q.store, meter=q.meter)
        if q.meter is not None:
            reserve(q, todo, weights)
        deferred: dict[str, int | None] = {}
        try:
            for it in todo:
                deferred.setdefault(it.run_id, _defer(app, it.run_id, lock))
        except BaseException:  # the runs left without a job give back what they were handed
            for it in todo:
                if it.run_id not in deferred and q.meter is not None:
                    spending.give_back_queued(q.store, q.meter.spender, it.run_id)
            raise
    return [deferred.get(it.run_id) for it in q.items]


def _done(store: Store, run_id: str) -> bool:
    return store.run_exists(run_id) and store.run_row(run_id)["status"] == "done"


def _live(app: procrastinate.App, run_id: str) -> bool:
    """Whether the run's scoring job waits or runs (queued by another tab: followed, not queued again)."""
    return any(j.status in ("todo", "doing") for j in
               app.job_manager.list_jobs(queue=workers.QUEUE, task=workers.TASK, queueing_lock=run_id))


def _weights(q: ScoringQueue, items: list[Item]) -> dict[str, float]:
    """Each run's part of the click's estimate: what its own estimate costs (nothing is sent), as the page's
    estimate (``loop.estimate_part``) summed them."""
    from evalcore.judge import runner

    return {it.run_id: float(runner.estimate(it.spec, q.engine, store=q.store).cost_usd or 0.0) for it in items}


def shares(total: float, weights: dict[str, float]) -> dict[str, float]:
    """``total`` split among the runs in proportion to ``weights`` (evenly when they are all 0)."""
    if not weights:
        return {}
    whole = sum(max(w, 0.0) for w in weights.values())
    if whole <= 0:
        return {r: total / len(weights) for r in weights}
    return {r: total * max(w, 0.0) / whole for r, w in weights.items()}


def reserve(q: ScoringQueue, todo: list[Item], weights: dict[str, float]) -> None:
    """The click's reservation (``q.meter``, the capability probes of the runs it recorded counted) split among
    the queue's runs not done by their estimates (``weights``), each of ``todo``'s made its run's own spending row
    (``spending.hand_over_shares``). A run already queued (by another tab), or holding a reservation, or that a
    worker began is handed nothing: its part is given back (a worker's meter counts its replies as they come)."""
    meter = q.meter
    split = shares(max(meter.charged - meter.cost, 0.0), weights)
    mine = {it.run_id for it in todo}
    fresh = {r: usd for r, usd in split.items()
             if r in mine and not spending.holds_reservation(q.store, meter.spender, r)}
    spending.hand_over_shares(meter, fresh, queue=queue_lock(q))


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
                    if self.error is None and not self.cancel.is_set() and \
                            self.store.run_row(self.run_id)["status"] == "stopped":  # not the cap: the page's
                        self.error = f"the worker stopped run {self.run_id}: see the worker's log"  # queue ends
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
    """Cancel the queue's jobs no worker has taken yet; their runs read "cancelled", keep what they hold and give
    back what was reserved for them (``spending.give_back_queued``: nothing for a run queued without a meter)."""
    for job in app.job_manager.list_jobs(queue=workers.QUEUE, task=workers.TASK, status="todo", lock=lock):
        if job.id is not None and app.job_manager.cancel_job_by_id(job.id):
            run_id = str(job.task_kwargs["run_id"])
            store.finish_run(run_id, status="cancelled", stats=store.run_stats(run_id))
            spending.give_back_queued(store, store.run_row(run_id).get("owner") or None, run_id)


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
    """The Improve page's queue as the store wants it: on PostgreSQL, for a queue on the operator's key, its runs
    go to the workers when the page first advances it (after the click was charged; its first job's thread records
    and enqueues them, so an error there ends the queue as a run's would) and the page follows them. A queue under
    the spending rule goes too: the click's reservation is split among its runs (``enqueue_queue``), each worker
    stops at the operator's cap, and a run stopped so ends the page's queue with the cap's message. Otherwise
    (SQLite, a key typed into the browser, which never leaves the session) ``q`` as it was, run in the page's
    session."""
    if not workers.queued(q.store) or q.engine.api_key:
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


__all__ = ["queue_lock", "enqueue_queue", "shares", "reserve", "follow", "enqueue_and_follow", "to_workers", "FollowedRun"]

