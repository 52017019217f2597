"""Batch collection as a job of the workers' queue (evalcore.workers): on a PostgreSQL store, "collect run R's
batches when they are done" waits in the queue, and a ``python -m evalcore worker`` asks the provider where R's
batches are, and collects them once every one has ended. On SQLite nothing changes: ``batch collect`` (or the Score
page's batch job) waits for the batches in the process that submitted them.

The job polls through procrastinate's retry strategy rather than by sleeping in a worker: while a batch is still
running the job raises ``BatchesPending`` and is retried ``POLL_S`` seconds later, so a 24-hour batch holds no
worker between polls and survives every worker's restart (its next try is a row in the queue).

Collecting is idempotent, as ``batch collect`` already is: a collected batch is marked so in the store
(``batches.collected``) and is not read again, its replies sit in the reply cache under the online keys, and the
run is scored from that cache under its own id, skipping the items it already holds. A second job for the same run
(or ``batch collect`` run by hand afterwards) therefore writes no judgment twice; two collections at once meet the
run's lease (evalcore.store.leases), and the job that met it is retried.

This module sits below evalcore.workers (which registers its task in ``make_app``) and does not import it: open the
queue with ``evalcore.workers.opened(url)`` and pass the app to ``enqueue_collection``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from evalcore.judge import batch
from evalcore.store import RunLeased, Store

if TYPE_CHECKING:  # pragma: no cover
    import procrastinate

log = logging.getLogger(__name__)

COLLECT_TASK = "evalcore.collect_batches"
POLL_S = 60  # seconds between two asks of the provider while a run's batches are still running (read at make_app)


class BatchesPending(Exception):
    """Some of the run's batches have not ended yet: the job is tried again ``POLL_S`` seconds later."""


def collect_when_done(store: Store, run_id: str) -> batch.Collected:
    """Collect run ``run_id``'s batches if every one has ended (the run scored from the cache, its judgments
    written once); ``BatchesPending`` when some still run. The endpoint's key, where one is sent, is the one named
    by the run's recorded key variable, read from this process's environment (the operator's)."""
    collected = batch.collect(run_id, store=store, wait=False)
    if collected.run is None:
        c = collected.status.counts
        raise BatchesPending(f"run {run_id}: {c['completed'] + c['failed']} of {c['total']} lines ended")
    log.info("run %s: batches collected (%s)", run_id, collected.run.config.get("status"))
    return collected


def enqueue_collection(app: procrastinate.App, run_id: str) -> int | None:
    """Put "collect run ``run_id``'s batches when done" in the queue of ``app`` (opened: ``workers.opened``): the
    job's id, or None when such a job already waits (that one will collect them). A collection job and a scoring
    job of one run never run at once (they share the run's procrastinate lock)."""
    from procrastinate.exceptions import AlreadyEnqueued

    try:
        return int(app.tasks[COLLECT_TASK].configure(lock=run_id, queueing_lock=f"collect:{run_id}")
                   .defer(run_id=run_id))
    except AlreadyEnqueued:
        return None


def register(app: procrastinate.App, *, url: str, queue: str) -> None:
    """Register the collection task on ``app`` (the store at ``url``), in the workers' ``queue``."""
    import procrastinate

    # pending batches are retried without end (a batch's window is the provider's to close: it then ends
    # "expired" and is collected as such); a run leased by another collector is tried again after the same wait
    retry = procrastinate.RetryStrategy(wait=POLL_S, retry_exceptions={BatchesPending, RunLeased})

    @app.task(name=COLLECT_TASK, queue=queue, retry=retry)
    def collect_batches_task(run_id: str) -> None:
        store = Store(url)
        try:
            collect_when_done(store, run_id)
        finally:
            store.close()
