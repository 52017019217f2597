"""Scoring runs as jobs: on a PostgreSQL store, a queue that ``python -m evalcore worker`` processes take jobs from;
on SQLite, the job runs in the calling process, as scoring always has.

A job is "score run R to completion": R's recorded spec scored again under its own id (evalcore.judge.resume), so
that what R already holds is skipped (items judged, replies in the reply cache are not paid again) and R's lease
keeps one scorer on it. The queue is procrastinate's (``pip install "judgescope[postgres]"``), a queue library for
PostgreSQL rather than a new one: jobs are rows its workers claim with ``SELECT ... FOR UPDATE SKIP LOCKED``, woken
by ``LISTEN/NOTIFY``, retried by its retry strategy; its tables live beside the store's, in the same schema.

A worker killed mid-job (SIGKILL, a lost machine) leaves its job "doing". Two things take it over, each needed:

* procrastinate's heartbeats: every worker writes one every ``heartbeat_s``; a job whose worker has written none for
  ``stalled_after_s`` is stalled, and every live worker puts stalled jobs back in the queue (the library's
  documented recipe: ``get_stalled_jobs`` then ``retry_job``);
* the run's lease (evalcore.store.leases): on PostgreSQL an advisory lock the scorer holds on its own connection,
  dropped by the server the moment that connection ends. A job taken over from a worker that was only slow, not
  dead, meets the lease, fails with ``RunLeased`` and is retried later (by then the run is done, and its retry
  sends nothing). So a false "stalled" costs a retry, never a judgment written twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator

from evalcore.judge.job import ScoringJob
from evalcore.judge.spending import CapReached, Meter
from evalcore.store import RunLeased, Store

if TYPE_CHECKING:  # pragma: no cover
    import procrastinate
    import psycopg

    from evalcore.model import Run

log = logging.getLogger(__name__)

QUEUE = "evalcore-scoring"
TASK = "evalcore.score_run"
HEARTBEAT_S = 10.0  # procrastinate's default heartbeat
STALLED_AFTER_S = 30.0  # procrastinate's default: a worker silent this long is taken for dead
LEASED_RETRY_WAIT_S = 5  # a job that met its run's lease (another scorer on it) waits this long, then retries
# applying procrastinate's schema: one process at a time (any 64-bit key unlikely to meet another lock of the store)
_SCHEMA_LOCK = 0x6576616C5F776B31


def queued(store: Store | None) -> bool:
    """Whether this store's scoring runs are jobs in a queue (PostgreSQL) rather than run in-process (SQLite)."""
    from evalcore.store.dialect import PostgresDialect

    return isinstance(getattr(store, "dialect", None), PostgresDialect)


def score_run(store: Store, run_id: str, *, concurrency: int | None = None,
              cancel: threading.Event | None = None) -> Run:
    """Score run ``run_id`` to completion under its own id, as recorded (its spec, endpoint and method config):
    what it holds is not asked again; ``cancel`` set stops it (the run reads "cancelled"). The endpoint's key is
    read from this process's environment (the operator's; a key typed into a browser is never stored, so a run
    started with one resumes only in that browser)."""
    from evalcore.judge import cli as judge_cli
    from evalcore.judge import runner
    from evalcore.judge.resume import resume_args

    from evalcore.judge import spending

    run = store.load_run(run_id)
    argv = resume_args(run) + ["--quiet", "--concurrency", str(concurrency or run.config.concurrency or 16)]
    parser = argparse.ArgumentParser(prog="python -m evalcore")
    judge_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)  # the resume command's own flags, read as ``score`` reads them
    dataset = judge_cli._dataset(args.dataset, store)
    spec, engine = judge_cli.spec_from_args(args, dataset, store)
    spec = judge_cli._recorded(args, dataset, store) or spec
    # scored for whoever owns the run (the worker is the operator's process; the run stays its owner's)
    spec = dataclasses.replace(spec, owner=store.run_row(run_id).get("owner") or None)
    # a run queued under the operator's spending rule carries its meter in the store's spending rows
    meter = spending.queued_meter(store, run_id, engine.first_endpoint)
    return runner.score_dataset(spec, engine, store=store, cancel=cancel, meter=meter)


def store_location(store: Store) -> str:
    """The location the store was opened at (a file path or a PostgreSQL URL, with its password)."""
    return str(store.file) if store.file is not None else str(getattr(store.dialect, "url", store.path))


def enqueue_scoring(store: Store, run_id: str) -> int | None:
    """Have run ``run_id`` scored to completion: on PostgreSQL a job in the queue (its id returned; any worker
    takes it), on SQLite scored here and now (None returned), as the Score page and ``score`` always have."""
    store.run_row(run_id)  # KeyError naming the run and the store when there is none
    if not queued(store):
        score_run(store, run_id)
        return None
    with opened(store_location(store)) as app:
        # one job per run waiting at a time (a second enqueue while one waits: AlreadyEnqueued), one running
        return int(app.tasks[TASK].configure(lock=run_id, queueing_lock=run_id).defer(run_id=run_id))


def _defer_once(app: procrastinate.App, run_id: str) -> int | None:
    """Enqueue ``run_id``; None when its job already waits in the queue (that one will score it)."""
    from procrastinate.exceptions import AlreadyEnqueued

    try:
        return int(app.tasks[TASK].configure(lock=run_id, queueing_lock=run_id).defer(run_id=run_id))
    except AlreadyEnqueued:
        return None


def cancel_scoring(store: Store, run_id: str) -> bool:
    """Cancel run ``run_id``'s job from any process: a job still waiting is dropped (the run keeps what it holds),
    a running one is asked to abort and its worker stops the run, which then reads "cancelled". True when there
    was a job to cancel. On SQLite, where no queue exists, False (the process scoring it holds its Cancel)."""
    if not queued(store):
        return False
    found = False
    with opened(store_location(store)) as app:
        for status in ("todo", "doing"):
            for job in app.job_manager.list_jobs(queue=QUEUE, task=TASK, status=status, lock=run_id):
                if job.id is not None and app.job_manager.cancel_job_by_id(job.id, abort=True):
                    found = True
                    if status == "todo":  # no worker will touch the run: it is cancelled here
                        store.finish_run(run_id, status="cancelled", stats=store.run_stats(run_id))
                        _give_back(store, run_id)
    return found


def _give_back(store: Store, run_id: str) -> None:
    """A run cancelled before any worker took it: what was reserved for it is returned to its owner."""
    from evalcore.judge import spending

    spending.give_back_queued(store, store.run_row(run_id).get("owner") or None, run_id)


def record_run(spec: Any, options: Any, *, store: Store, meter: Meter | None = None) -> str:
    """Record a new run, or a stopped one again (its spec, the endpoint's plan, status "queued"; no item's request
    sent): its id. ``meter`` (the app's, evalcore.judge.spending.Meter) counts the capability probe's replies and
    keeps the click's reservation (held) for the worker."""
    from evalcore.judge import runner

    stop = threading.Event()
    stop.set()  # plans and records the run, then stops before its first item
    if meter is not None:
        meter.held = True  # its end gives back nothing: the reservation is the worker's (spending.hand_over)
    try:
        run = runner.score_dataset(spec, options, store=store, cancel=stop, meter=meter)
    except BaseException:
        if meter is not None:  # not queued (the cap reached already, the probe failed): settled to its replies
            meter.release()
        raise
    finally:
        if meter is not None:
            meter.held = False
    store.finish_run(run.run_id, status="queued", stats=dict(run.config.stats.to_dict()))
    return run.run_id


def queue_scoring(spec: Any, options: Any, *, store: Store) -> str:
    """Record a new run (``record_run``) and enqueue it: the run id. On SQLite it is scored before this returns."""
    run_id = record_run(spec, options, store=store)
    enqueue_scoring(store, run_id)
    return run_id


@dataclasses.dataclass
class QueuedScoringJob(ScoringJob):
    """The Score page's job on a PostgreSQL store: its thread records the run, enqueues it and follows it in the
    store (progress: the run's judgments; Cancel: ``cancel_scoring``), while a worker scores it. The job outlives
    the tab and the app server; a session that comes back finds the run in the store. For a run on the operator's
    key (``views.score.new_job`` decides: a typed key never leaves the session). A run under the spending rule
    hands the estimate charged at the click to the run's own spending row, from which the worker rebuilds its
    meter (evalcore.judge.spending.queued_meter) and stops at the operator's cap."""

    poll_s: float = 0.5
    queued_at: float | None = None  # time.monotonic() when the job went into the queue (None: not yet)
    claimed: bool = False  # a worker has taken the job (the job is being done, or the run has begun)
    handed: bool = False  # the click's reservation went to the run's spending rows (a resume hands over nothing)

    def start(self) -> None:
        self.queued_at, self.claimed = None, False  # a resume queues the run again: not queued until it is
        super().start()

    def _score_online(self) -> None:
        from evalcore.judge import spending

        first = self.meter is not None and not self.handed
        self.handed = self.handed or first
        try:  # the app's meter counts the capability probe; the worker's, rebuilt from the store, the rest
            run_id = record_run(self.spec, self.engine, store=self.store, meter=self.meter if first else None)
        finally:
            if first:  # even when recording failed: what it settled and what was left move to the run's rows
                spending.hand_over(self.meter, self.run_id)
        with opened(store_location(self.store)) as app:
            job_id = _defer_once(app, run_id)
            self.queued_at = time.monotonic()
            self._follow(app, run_id, job_id)
        self.run = self.store.load_run(run_id)

    def _follow(self, app: procrastinate.App, run_id: str, job_id: int | None) -> None:
        """Follow the run in the store until it ends: progress, whether a worker took it, Cancel, a failed job."""
        from evalcore.judge.runner import Progress

        tasks = int(self.store.run_stats(run_id).get("tasks") or 0)
        asked_to_stop = False
        while True:
            if self.cancel.is_set() and not asked_to_stop:
                asked_to_stop = cancel_scoring(self.store, run_id) or True
            status = self.store.run_row(run_id)["status"]
            done = self.store.conn.execute("SELECT count(*) FROM judgments WHERE run_id = ?",
                                           (run_id,)).fetchone()[0]
            self.progress = Progress(total=tasks, done=int(done), cached=0, failed=0, retrying=0, eta_s=None,
                                     elapsed_s=time.monotonic() - self.started)
            job_status = app.job_manager.get_job_status(job_id).value if job_id is not None else None
            self.claimed = self.claimed or status != "queued" or job_status not in (None, "todo")
            if status in ("done", "stopped", "cancelled"):
                if status == "stopped" and self.meter is not None:
                    from evalcore.judge import spending

                    self.error = spending.cap_stop(self.store, self.meter.spender, run_id)
                return
            if job_status in ("failed", "aborted", "cancelled"):
                self.error = f"the worker's job for run {run_id} failed: see the worker's log"
                return
            time.sleep(self.poll_s)


# ------------------------------------------------------------------------------------------ the queue (procrastinate)
@dataclasses.dataclass
class QueuedBatchJob(ScoringJob):
    """The Score page's Batch API run on a PostgreSQL store, on the operator's key: its thread submits the batches
    (as in the app's thread), then queues "collect them when done" (evalcore.worker_jobs) for a worker and follows
    the run in the store until its batches are collected. Closing the tab, or Cancel (which stops only this wait,
    as for every Batch API run), leaves the collection to the worker. The estimate charged at the click stays
    charged: the worker collects on the operator's key and settles no session's meter."""

    def _score_batch(self) -> None:
        from evalcore import runs as runs_mod
        from evalcore import worker_jobs
        from evalcore.judge import batch as batch_mod

        if not any(not b["collected"] for b in self.store.batch_rows(self.run_id)):
            batch_mod.submit(self.spec, self.engine, store=self.store)
        with opened(store_location(self.store)) as app:
            worker_jobs.enqueue_collection(app, self.run_id)  # None: one already waits, and will collect them
        while not self.cancel.is_set():  # collected, then scored from the replies: the run's status ends it
            rows = self.store.batch_rows(self.run_id)
            status = self.store.run_row(self.run_id)["status"]
            if rows and all(b["collected"] for b in rows) and status not in ("batch-submitted", "running"):
                self.run = runs_mod.load_run(self.run_id, store=self.store)
                return
            self.cancel.wait(self.poll_s)


def make_app(url: str) -> procrastinate.App:
    """A procrastinate app on the store at ``url`` with the scoring task registered."""
    try:
        import procrastinate
    except ImportError:
        raise ValueError('the job queue of a PostgreSQL store needs procrastinate: pip install "judgescope[postgres]"'
                         ) from None

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    retry = procrastinate.RetryStrategy(wait=LEASED_RETRY_WAIT_S, retry_exceptions={RunLeased})

    @app.task(name=TASK, queue=QUEUE, retry=retry, pass_context=True)
    def score_run_task(context: procrastinate.JobContext, run_id: str) -> None:
        stop, done = threading.Event(), threading.Event()

        def watch() -> None:  # Cancel from any process: procrastinate's abort request, seen by this worker
            with contextlib.ExitStack() as own:  # its own connection, opened once an abort is announced
                conn = None
                while not done.wait(0.2):
                    if not context.should_abort():
                        continue
                    if conn is None:
                        import psycopg

                        conn = own.enter_context(psycopg.connect(url, autocommit=True))
                    if abort_asked(conn, context):
                        stop.set()
                        return

        watcher = threading.Thread(target=watch, name=f"abort-{run_id}", daemon=True)
        watcher.start()
        store = Store(url)
        try:
            score_run(store, run_id, cancel=stop)
        except CapReached as e:  # the run is recorded "stopped", its judgments kept: not a failed job
            log.warning("%s", e)
        finally:
            done.set()
            store.close()

    from evalcore import worker_jobs

    worker_jobs.register(app, url=url, queue=QUEUE)  # batch collection, in the same queue (evalcore.worker_jobs)
    return app


def abort_asked(conn: psycopg.Connection[Any], context: procrastinate.JobContext) -> bool:
    """Whether the job's abort was asked in this store, not only notified. procrastinate announces an abort on a
    LISTEN/NOTIFY channel named after the queue, and channels span the whole database: a store in another schema
    of the same database, cancelling its own job of the same id (each schema numbers its jobs from 1), would stop
    this one. The job's own row says whether the abort is this store's; a worker shutting down is always one."""
    from procrastinate.job_context import AbortReason

    if context.abort_reason() == AbortReason.SHUTDOWN:
        return True
    row = conn.execute("SELECT abort_requested FROM procrastinate_jobs WHERE id = %s", (context.job.id,)).fetchone()
    return bool(row and row[0])


def ensure_schema(url: str) -> None:
    """Create procrastinate's tables in the store's schema unless there (one process at a time)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            row = c.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
            if row is None or row[0] is None:
                _apply(url)
        finally:
            c.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))


def _apply(url: str) -> None:
    app = make_app(url)
    with app.open():
        app.schema_manager.apply_schema()


@contextlib.contextmanager
def opened(url: str) -> Iterator[procrastinate.App]:
    """The queue's app, schema ensured, opened for deferring jobs."""
    ensure_schema(url)
    app = make_app(url)
    with app.open():
        yield app


async def _retry_stalled(app: procrastinate.App, *, every_s: float, stalled_after_s: float) -> None:
    """Put back in the queue the jobs of workers silent for ``stalled_after_s`` (killed): procrastinate's recipe."""
    while True:
        for job in await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=stalled_after_s):
            log.warning("job %s (run %s) was held by a worker that stopped: queued again", job.id,
                        job.task_kwargs.get("run_id"))
            await app.job_manager.retry_job(job)
        await asyncio.sleep(every_s)


async def work(url: str, *, heartbeat_s: float = HEARTBEAT_S, stalled_after_s: float = STALLED_AFTER_S,
               wait: bool = True) -> None:
    """Take scoring jobs from the queue of the store at ``url`` and run them, one at a time, until stopped (or,
    ``wait=False``, until the queue is empty)."""
    from evalcore.judge import ratelimit

    ensure_schema(url)
    ratelimit.share_across_processes(url)  # the endpoints' rate limits hold across every worker, not in each
    app = make_app(url)
    async with app.open_async():
        sweeper = asyncio.ensure_future(_retry_stalled(app, every_s=heartbeat_s, stalled_after_s=stalled_after_s))
        try:
            await app.run_worker_async(queues=[QUEUE], concurrency=1, wait=wait, name="evalcore-worker",
                                       update_heartbeat_interval=heartbeat_s, stalled_worker_timeout=stalled_after_s,
                                       fetch_job_polling_interval=heartbeat_s, abort_job_polling_interval=heartbeat_s)
        finally:
            sweeper.cancel()
            ratelimit.share_across_processes(None)


# -------------------------------------------------------------------------------------------------- the command
def cmd_worker(args: argparse.Namespace) -> int:
    store = Store(args.db) if args.db else Store()
    try:
        if not queued(store):
            raise ValueError(f"the store {store.path} is a SQLite file: runs are scored in the process that starts "
                             f"them; workers take runs from a PostgreSQL store (EVALCORE_DB=postgresql://...)")
        url = store_location(store)
    finally:
        store.close()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(work(url, heartbeat_s=args.heartbeat, stalled_after_s=args.stalled_after, wait=not args.once))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    w = sub.add_parser("worker", help="take the jobs queued on a PostgreSQL store: scoring runs, Improve queues "
                                      "and batch collection (docs/lab-server.md#workers)")
    w.add_argument("--db", help="the PostgreSQL store (default $EVALCORE_DB)")
    w.add_argument("--heartbeat", type=float, default=HEARTBEAT_S, metavar="S",
                   help=f"seconds between this worker's heartbeats (default {HEARTBEAT_S:g})")
    w.add_argument("--stalled-after", type=float, default=STALLED_AFTER_S, metavar="S",
                   help="a job whose worker sent no heartbeat for S seconds is taken over "
                        f"(default {STALLED_AFTER_S:g})")
    w.add_argument("--once", action="store_true", help="stop once the queue is empty")
    w.set_defaults(func=cmd_worker)
