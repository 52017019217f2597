"""Scoring runs as jobs (evalcore.workers). On SQLite a job runs in the calling process, as scoring always has; on
PostgreSQL it waits in the queue for a ``python -m evalcore worker``. The kill-a-worker test: worker A takes a run of
300 items, is killed (SIGKILL) half-way, worker B takes the job over once A's heartbeats stop, and the run ends done
with every item judged once and no request the loopback judge answered to A asked again. Nothing depends on speed:
every wait polls the store or the server with a generous deadline. The PostgreSQL half needs a server
(``EVALCORE_TEST_POSTGRES``; tests/store_backends.py)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalcore import workers
from evalcore.judge import cli as judge_cli
from evalcore.store import Store
from evalcore.testing.loopback import serve
from tests.store_backends import pg_schemas  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
N_ITEMS = 300


def _queue_run(store: Store, base_url: str, run_id: str, n: int) -> str:
    """A geval run of ``n`` SummEval coherence items on the loopback judge, one request at a time, queued."""
    parser = argparse.ArgumentParser()
    judge_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval",
                              "--model", "loop", "--base-url", base_url, "--provider", "vllm", "--limit", str(n),
                              "--concurrency", "1", "--run", run_id, "--quiet"])
    spec, engine = judge_cli.spec_from_args(args, judge_cli._dataset("summeval", store), store)
    return workers.queue_scoring(spec, engine, store=store)


def _wait_for(cond, what: str, deadline_s: float = 300.0) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"waited {deadline_s:g} s for {what}")
        time.sleep(0.1)


def _judged(store: Store, run_id: str) -> int:
    return int(store.conn.execute("SELECT count(*) FROM judgments WHERE run_id = ?", (run_id,)).fetchone()[0])


def _judged_per_item(store: Store, run_id: str) -> dict[str, int]:
    """How many judgments the run holds per item."""
    rows = store.conn.execute("SELECT item_id, count(*) FROM judgments WHERE run_id = ? GROUP BY item_id",
                              (run_id,)).fetchall()
    return {str(i): int(c) for i, c in rows}


def _worker(url: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALCORE_DB": url}
    return subprocess.Popen([sys.executable, "-m", "evalcore", "worker", "--heartbeat", "0.5", "--stalled-after", "3"],
                            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def test_on_sqlite_a_job_runs_in_the_calling_process(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        run_id = _queue_run(store, srv.base_url, "wk/sqlite", 6)
        asked = srv.prompt_log[-6:]
    run = store.load_run(run_id)
    assert run.config.status == "done" and len(run.judgments) == 6 and run.judgments["status"].eq("ok").all()
    assert len(set(asked)) == 6


def test_a_worker_on_a_sqlite_store_says_workers_need_postgresql(tmp_path, capsys):
    from evalcore.cli import main

    assert main(["worker", "--db", str(tmp_path / "s.db")]) == 2
    assert "workers take runs from a PostgreSQL store" in capsys.readouterr().err


@pytest.mark.slow
def test_kill_a_worker_mid_run_and_another_finishes_it_paying_nothing_twice(pg_schemas, tmp_path):  # noqa: F811
    url = pg_schemas.new("workers")
    store = Store(url)
    with serve(latency_s=0.02) as srv:  # 300 x 20 ms at the least: A is killed mid-way, whatever the machine
        run_id = _queue_run(store, srv.base_url, "wk/kill", N_ITEMS)
        queued_at = len(srv.prompt_log)  # the probe's requests, sent when the run was recorded
        assert store.run_row(run_id)["status"] == "queued" and _judged(store, run_id) == 0
        a = _worker(url, tmp_path / "a.log")
        try:
            _wait_for(lambda: _judged(store, run_id) >= 20, "worker A to judge 20 items")
        finally:
            a.send_signal(signal.SIGKILL)  # no finally, no finish_run: the job stays "doing", the run "running"
            a.wait()
        _wait_for(lambda: store.live_status(run_id, store.run_row(run_id)["status"]) == "interrupted",
                  "the killed worker's lease to lapse")
        killed_at, judged_by_a = len(srv.prompt_log), _judged(store, run_id)
        assert 20 <= judged_by_a < N_ITEMS
        b = _worker(url, tmp_path / "b.log")
        try:
            _wait_for(lambda: store.run_row(run_id)["status"] == "done", "worker B to finish the run")
        finally:
            b.terminate()
            b.wait(60)
        log = list(srv.prompt_log)
    judged = _judged_per_item(store, run_id)
    assert len(judged) == N_ITEMS and set(judged.values()) == {1}  # every item judged, each once
    asked = log[queued_at:]
    # what the same run asks when nothing stops it (scored here, on SQLite: a second judge, a second store); a few
    # SummEval summaries are word for word the same, so the run asks fewer distinct prompts than it has items
    with serve() as ref:
        _queue_run(Store(tmp_path / "reference.db"), ref.base_url, "wk/kill", N_ITEMS)
        probe = set(log[:queued_at])  # the judge's capability probe, asked when a run is recorded on a new store
        uninterrupted = [p for p in ref.prompt_log if p not in probe]
    assert set(asked) == set(uninterrupted) and len(uninterrupted) == len(set(uninterrupted))
    # A sent one request at a time: the only request B may send again is the one in flight when A died (the judge
    # got it, A never got the reply). Every request whose reply A received is in the reply cache: not paid twice.
    again = set(log[killed_at:]) & set(log[queued_at:killed_at])
    assert again <= {log[killed_at - 1]}
    assert len(asked) - len(uninterrupted) == len(again) and len(log[killed_at:]) == len(set(log[killed_at:]))
    assert "queued again" in (tmp_path / "b.log").read_text()  # B took over A's job (not a second job)
    store.close()


def test_cancel_from_another_process_stops_the_workers_run_and_a_second_enqueue_waits_for_none(
        pg_schemas, tmp_path):  # noqa: F811
    """Cancel holds across processes: the test process cancels, the worker (another process) stops the run, which
    reads "cancelled" and keeps what it judged; enqueued again, it resumes without asking again what was answered.
    A run
    queued while its job still waits is refused (one waiting job per run)."""
    import procrastinate.exceptions

    url = pg_schemas.new("cancel")
    store = Store(url)
    with serve() as srv:
        run_id = _queue_run(store, srv.base_url, "wk/cancel", 60)
        store.conn.execute("UPDATE runs SET owner = 'alice' WHERE run_id = ?", (run_id,))  # a Score page user's run
        with pytest.raises(procrastinate.exceptions.AlreadyEnqueued):
            workers.enqueue_scoring(store, run_id)  # its job still waits: not queued twice
        queued_at = len(srv.prompt_log)
        srv.hold(queued_at + 10)  # the Cancel comes with the run's 10th request held in flight: never after its end
        w = _worker(url, tmp_path / "w.log")
        try:
            _wait_for(lambda: srv.held == 1, "the worker's 10th request")
            assert _judged(store, run_id) >= 5
            assert workers.cancel_scoring(store, run_id)
            _wait_for(lambda: store.run_row(run_id)["status"] == "cancelled", "the run to read cancelled")
            kept, cancelled_at = _judged(store, run_id), len(srv.prompt_log)
            srv.release()
            assert 5 <= kept < 60
            workers.enqueue_scoring(store, run_id)
            _wait_for(lambda: store.run_row(run_id)["status"] == "done", "the resumed run to finish")
        finally:
            srv.release()
            w.terminate()
            w.wait(60)
        log = list(srv.prompt_log)
    assert _judged(store, run_id) == 60
    # one request at a time: only the one in flight when the Cancel stopped the run (its reply dropped) is asked again
    again = set(log[cancelled_at:]) & set(log[queued_at:cancelled_at])
    assert again <= {log[cancelled_at - 1]} and len(log[cancelled_at:]) == len(set(log[cancelled_at:]))
    assert store.run_row(run_id)["owner"] == "alice"  # a worker scores a run for its owner
    assert not workers.cancel_scoring(store, run_id)  # nothing left to cancel
    store.close()


async def _claim_a_job(url: str) -> int:
    """A job deferred in the store at ``url`` and taken by a worker registered there (status "doing"), never run."""
    workers.ensure_schema(url)
    app = workers.make_app(url)
    async with app.open_async():
        await app.tasks[workers.TASK].defer_async(run_id="elsewhere")
        worker_id = await app.job_manager.register_worker()
        job = await app.job_manager.fetch_job(queues=[workers.QUEUE], worker_id=worker_id)
        assert job is not None and job.id is not None
        return int(job.id)


def test_an_abort_announced_for_another_schemas_job_of_the_same_id_leaves_this_run_alone(
        pg_schemas, monkeypatch):  # noqa: F811
    """procrastinate announces an abort on a LISTEN/NOTIFY channel named after the queue, and a channel spans the
    whole database. Two stores in two schemas of one database each number their jobs from 1: store B aborting its
    job 1 must not stop the run of store A's job 1. A's worker (in this process) reads the job's own row before it
    stops (workers.abort_asked, watched here); an abort asked in A still stops A's run (the Cancel tests above)."""
    import asyncio
    import json
    import threading

    import psycopg

    mine, theirs = pg_schemas.new("abort_mine"), pg_schemas.new("abort_theirs")
    store = Store(mine)
    answers: list[bool] = []
    asked = workers.abort_asked
    monkeypatch.setattr(workers, "abort_asked", lambda conn, ctx: answers.append(asked(conn, ctx)) or answers[-1])
    with serve() as srv:
        run_id = _queue_run(store, srv.base_url, "wk/abort-mine", 6)  # recorded: its capability probe answered
        srv.hold(len(srv.prompt_log) + 3)  # the run stays in flight (its third request unanswered) while B aborts
        worker = threading.Thread(target=lambda: asyncio.run(workers.work(mine, heartbeat_s=0.5, wait=False)))
        worker.start()
        try:
            _wait_for(lambda: srv.held >= 1, "A's run to send its third request")
            job_b = asyncio.run(_claim_a_job(theirs))
            with workers.opened(mine) as app:
                (job_a,) = [j.id for j in app.job_manager.list_jobs(queue=workers.QUEUE, status="doing")]
            assert job_a == job_b  # the same number in each schema: the notice names only the number
            with workers.opened(theirs) as app:
                assert app.job_manager.cancel_job_by_id(job_b, abort=True)
            with psycopg.connect(theirs, autocommit=True) as again:
                def heard() -> bool:  # B's trigger's notice sent again until heard: on a slow machine A's worker
                    if answers or store.run_row(run_id)["status"] == "cancelled":  # may start listening late
                        return True
                    again.execute("SELECT pg_notify(%s, %s)", (f"procrastinate_queue_v1#{workers.QUEUE}",
                                                               json.dumps({"type": "abort_job_requested",
                                                                           "job_id": job_b})))
                    return False

                _wait_for(heard, "A's worker to hear B's abort")
        finally:
            srv.release()
            _wait_for(lambda: not worker.is_alive(), "A's worker to finish its queue")
    assert answers and not any(answers)  # heard, read in A's own row: not asked in A
    assert store.run_row(run_id)["status"] == "done" and _judged(store, run_id) == 6
    store.close()


def _page_job(store: Store, base_url: str, n: int):
    """The Score page's job (evalcore.views.score.new_job) for ``n`` SummEval coherence items on the loopback judge,
    on the operator's key (none typed) with no spending cap: on PostgreSQL a QueuedScoringJob."""
    from evalcore.judge.client import endpoint_from_preset
    from evalcore.judge.spec import default_spec
    from evalcore.runs import get_dataset
    from evalcore.views import score as score_views

    spec = default_spec(get_dataset("summeval", store, with_labels=False), "geval", ["coherence"], store=store,
                        limit=n)
    ep = endpoint_from_preset("vllm", base_url=base_url, model="loop")
    return score_views.new_job(spec, ep, use_batch=False, api_key=None, concurrency=1, reprobe=False, store=store,
                               owner="alice")


def test_the_score_pages_job_on_postgresql_is_scored_by_a_worker_and_cancelled_from_the_page(
        pg_schemas, tmp_path, monkeypatch):  # noqa: F811
    """The page's job records and enqueues the run; a worker (another process) scores it; the page's progress is
    read from the store; the page's Cancel stops the worker's run; Resume finishes it."""
    monkeypatch.delenv("EVALCORE_MAX_COST_USD", raising=False)
    url = pg_schemas.new("page")
    store = Store(url)
    with serve() as srv:
        job = _page_job(store, srv.base_url, 40)
        assert type(job) is workers.QueuedScoringJob
        job.start()
        _wait_for(lambda: job.progress is not None and job.progress.total == 40, "the page's job to record the run")
        assert store.run_row(job.run_id)["status"] == "queued"  # no worker yet: it waits in the store
        srv.hold(len(srv.prompt_log) + 10)  # the Cancel comes with a request held in flight: never after the end
        w = _worker(url, tmp_path / "w.log")
        try:
            _wait_for(lambda: srv.held == 1 and job.progress.done >= 5, "the worker to judge 5 items, seen by the page")
            job.cancel.set()  # the page's Cancel
            assert job.wait(300) and job.error is None
            srv.release()
            assert job.run.config.status == "cancelled" and 5 <= len(job.run.judgments) < 40
            job.resume(None)
            assert job.wait(300) and job.error is None
        finally:
            srv.release()
            w.terminate()
            w.wait(60)
    assert job.run.config.status == "done" and len(job.run.judgments) == 40 and job.progress.done == 40
    assert store.run_row(job.run_id)["owner"] == "alice"
    store.close()


_APP_SERVER = """
import sys, time
from evalcore.store import Store
from tests.test_workers import _page_job
store = Store(sys.argv[1])
job = _page_job(store, sys.argv[2], int(sys.argv[3]))
job.start()
while job.queued_at is None and not job.finished:
    time.sleep(0.05)
print(job.run_id, job.error, flush=True)
time.sleep(3600)
"""


@pytest.mark.slow
def test_a_queued_run_outlives_the_app_server_that_queued_it(pg_schemas, tmp_path, monkeypatch):  # noqa: F811
    """The Score page's job in an app server process that is then killed (SIGKILL: a server restart, or its tab and
    session gone with it): the run waits in the store, a worker started afterwards scores all of it, and the store
    a new session reads holds it done, every item judged once, no prompt asked twice."""
    monkeypatch.delenv("EVALCORE_MAX_COST_USD", raising=False)
    url = pg_schemas.new("restart")
    store = Store(url)
    n = 30
    with serve(latency_s=0.02) as srv:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALCORE_DB": url}
        server = subprocess.Popen([sys.executable, "-c", _APP_SERVER, url, srv.base_url, str(n)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=(tmp_path / "server.log").open("w"), text=True)
        try:
            run_id, error = server.stdout.readline().split(maxsplit=1)
            assert error.strip() == "None", (tmp_path / "server.log").read_text()
        finally:
            server.send_signal(signal.SIGKILL)
            server.wait()
        assert store.run_row(run_id)["status"] == "queued" and _judged(store, run_id) == 0
        queued_at = len(srv.prompt_log)  # the capability probe's requests, sent by the server when it recorded the run
        w = _worker(url, tmp_path / "w.log")
        try:
            _wait_for(lambda: store.run_row(run_id)["status"] == "done", "a worker to score the orphaned run")
        finally:
            w.terminate()
            w.wait(60)
        log = list(srv.prompt_log)
    judged = _judged_per_item(store, run_id)
    assert len(judged) == n and set(judged.values()) == {1}
    asked = log[queued_at:]
    assert asked and len(asked) == len(set(asked))  # the worker asked each prompt once
    assert Store(url).load_run(run_id).config.status == "done"  # a new session's view of the store
    store.close()


def test_the_score_pages_job_on_sqlite_is_a_thread_as_before(tmp_path):
    from evalcore.judge.job import ScoringJob

    store = Store(tmp_path / "s.db")
    with serve() as srv:
        job = _page_job(store, srv.base_url, 4)
        assert type(job) is ScoringJob
        job.start()
        assert job.wait(120)
    assert job.run.config.status == "done" and len(job.run.judgments) == 4


# ------------------------------------------------------------------------------------- the spending cap in a worker
PRICE_PER_TOKEN = 1e-5  # the test's own price table: 10 USD per million tokens, prompt and completion alike


@pytest.fixture
def priced_judge(monkeypatch, tmp_path):
    """The operator's judge, a reasoning model on the loopback (its replies cost far more than the estimate's
    one-token guess), priced by an override price table; no cap yet."""
    import json

    from evalcore.judge.client import endpoint_from_preset
    from evalcore.testing.loopback_profiles import PROFILES

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"loop-reasoner": {"input": 10.0, "output": 10.0}}))
    monkeypatch.setenv("EVALCORE_PRICES", str(prices))
    monkeypatch.delenv("EVALCORE_MAX_COST_USD", raising=False)
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-workers")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield endpoint_from_preset("openai", model="loop-reasoner", base_url=srv.base_url)


def _click(store: Store, endpoint, n: int, owner: str = "alice"):
    """The Score page's estimate and "Start scoring" for ``n`` SummEval coherence items: (spec, estimate, the
    spending decision at the click: evalcore.judge.spending.charge, the one the page makes)."""
    from evalcore.judge import runner, spending
    from evalcore.judge.spec import EngineOptions, default_spec
    from evalcore.runs import get_dataset

    spec = default_spec(get_dataset("summeval", store, with_labels=False), "geval", ["coherence"], store=store,
                        limit=n)
    est = runner.estimate(spec, EngineOptions(endpoint), store=store)
    d = spending.charge(est.cost_usd, est.calls, local=False, spender=owner, store=store, what="score")
    return spec, est, d


def _queued_job(store: Store, spec, endpoint, est, owner: str = "alice"):
    from evalcore.views import score as score_views

    job = score_views.new_job(spec, endpoint, use_batch=False, api_key=None, concurrency=1, reprobe=False,
                              store=store, owner=owner, charged_usd=est.cost_usd)
    assert type(job) is workers.QueuedScoringJob and job.meter is not None  # a capped run goes to a worker too
    job.start()
    _wait_for(lambda: job.queued_at is not None or job.finished, "the page's job to queue its run")
    assert job.error is None, job.error
    return job


def _work_until_empty(url: str) -> None:
    """A worker in this process (evalcore.workers.work) that stops once the queue is empty."""
    import asyncio

    asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False))


def _replies_cost(stats) -> float:
    return (stats["prompt_tokens"] + stats["completion_tokens"]) * PRICE_PER_TOKEN


def test_a_capped_users_queued_runs_hold_the_cap_in_the_worker(pg_schemas, priced_judge, monkeypatch):  # noqa: F811
    """Alice's run goes to a worker with her meter: her second click, whose estimate and the first's pass the cap,
    is refused (the reservation is made when a run is queued, as in the app's thread); the worker charges what the
    replies cost (far more than the estimate) and stops the run at the cap, status "stopped", the page saying why;
    enqueued again, it stops before sending anything."""
    url = pg_schemas.new("cap")
    store = Store(url)
    spec, est, _ = _click(store, priced_judge, 8, owner="nobody")  # the estimate, before any cap
    cap = 1.5 * est.cost_usd
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", repr(cap))
    _, _, first = _click(store, priced_judge, 8)
    assert first.allowed
    job = _queued_job(store, spec, priced_judge, est)
    assert store.run_row(job.run_id)["status"] == "queued" and _judged(store, job.run_id) == 0
    assert store.spent_usd("alice") >= est.cost_usd - 1e-12  # the click's estimate stays reserved while queued
    _, _, second = _click(store, priced_judge, 8)
    assert not second.allowed and "pass the operator's cap" in second.reason
    _work_until_empty(url)
    assert job.wait(120)
    assert job.error is not None and f"spending cap of ${cap:.4f} per user was reached" in job.error
    row, stats = store.run_row(job.run_id), store.run_stats(job.run_id)
    assert row["status"] == "stopped" and 0 < stats["judged_this_session"] < 8
    per_task = _replies_cost(stats) / stats["judged_this_session"]
    spent = store.spent_usd("alice")
    assert cap <= spent <= cap + 2 * per_task  # stopped at the cap: one request in flight at a time
    assert spent >= _replies_cost(stats) - 1e-12  # every reply the worker received is charged
    # queued again (the page's Resume): the worker's rebuilt meter stops it before its first request
    asked = len(_judged_rows(store, job.run_id))
    job.resume(None)
    _wait_for(lambda: job.queued_at is not None or job.finished, "the resumed job to be queued")
    _work_until_empty(url)
    assert job.wait(120) and "spending cap" in (job.error or "")
    assert len(_judged_rows(store, job.run_id)) == asked and store.spent_usd("alice") == pytest.approx(spent)
    store.close()


def _judged_rows(store: Store, run_id: str) -> list:
    return store.conn.execute("SELECT item_id FROM judgments WHERE run_id = ?", (run_id,)).fetchall()


def test_a_queued_run_under_the_cap_is_charged_what_the_same_run_costs_in_the_apps_thread(
        pg_schemas, priced_judge, monkeypatch, tmp_path):  # noqa: F811
    """Within the cap the worker scores the whole run, and the record is settled to what its replies cost, the
    capability probe (sent by the app when it recorded the run) included: the same as the same run scored in the
    app's thread on a SQLite store (a second store: its probe is sent again), which the in-process tests check
    against the replies' usage."""
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    url = pg_schemas.new("settle")
    store = Store(url)
    spec, est, d = _click(store, priced_judge, 4)
    assert d.allowed
    job = _queued_job(store, spec, priced_judge, est)
    _work_until_empty(url)
    assert job.wait(120) and job.error is None
    assert job.run.config.status == "done" and len(job.run.judgments) == 4
    ref = Store(tmp_path / "reference.db")
    spec_ref, est_ref, d_ref = _click(ref, priced_judge, 4)
    from evalcore.views import score as score_views

    thread = score_views.new_job(spec_ref, priced_judge, use_batch=False, api_key=None, concurrency=1, reprobe=False,
                                 store=ref, owner="alice", charged_usd=est_ref.cost_usd)
    assert type(thread) is not workers.QueuedScoringJob
    thread.start()
    assert thread.wait(120) and thread.error is None
    assert ref.spent_usd("alice") == pytest.approx(_replies_cost(thread.run.config["stats"]))
    assert store.spent_usd("alice") == pytest.approx(ref.spent_usd("alice"))
    assert store.spent_usd("alice") > est.cost_usd  # the reasoning replies cost more than the estimate guessed
    ref.close()
    store.close()


def test_what_a_killed_workers_session_was_charged_stays_charged(pg_schemas, priced_judge, monkeypatch):  # noqa: F811
    """A worker's session that began, received replies costing more than the reservation and died (no settle): what
    it was charged stays (the reservation and the replies past it, recorded as they came); the worker that takes the
    run over charges its own replies on top and gives nothing of that back."""
    from evalcore.judge import spending

    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    url = pg_schemas.new("killed")
    store = Store(url)
    spec, est, d = _click(store, priced_judge, 4)
    assert d.allowed
    job = _queued_job(store, spec, priced_judge, est)
    dead = spending.queued_meter(store, job.run_id, priced_judge)  # what a worker builds when its session begins
    assert dead is not None
    dead.begin()
    dead.observe(5000, 5000)  # its replies so far: 10,000 tokens, 0.1 USD, past the estimate; then it is killed
    assert 10_000 * PRICE_PER_TOKEN > est.cost_usd
    after_kill = store.spent_usd("alice")
    assert after_kill >= 10_000 * PRICE_PER_TOKEN - 1e-12  # every reply it received is in the record
    _work_until_empty(url)  # the next worker scores the run (its judge's replies are not in the cache: all sent)
    assert job.wait(120) and job.error is None and job.run.config.status == "done"
    assert store.spent_usd("alice") == pytest.approx(after_kill + _replies_cost(store.run_stats(job.run_id)))
    store.close()


def test_a_run_cancelled_while_it_waits_gives_its_reservation_back(pg_schemas, priced_judge, monkeypatch):  # noqa: F811
    """No worker took it: the estimate reserved at the click is returned; what the capability probe's replies cost
    (sent when the app recorded the run) stays charged."""
    from evalcore.judge import spending

    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    url = pg_schemas.new("giveback")
    store = Store(url)
    spec, est, d = _click(store, priced_judge, 4)
    job = _queued_job(store, spec, priced_judge, est)
    held = store.spent_usd("alice")
    assert held >= est.cost_usd - 1e-12
    job.cancel.set()  # the page's Cancel
    assert job.wait(120) and job.run.config.status == "cancelled"
    probe = sum(u for w, u in spending.run_rows(store, "alice", job.run_id) if w.endswith(f"({spending.BEFORE})"))
    assert store.spent_usd("alice") == pytest.approx(probe) and probe < held
    store.close()


# ------------------------------------------------------------------------------- the Score page while a run waits
def test_the_score_page_says_a_worker_scores_a_queued_run_and_when_none_seems_to_run():
    """The view model (evalcore.views.score.queue_blocks) on an injected clock: queued, it says a worker scores the
    run; past NO_WORKER_AFTER_S with no worker on it, that none seems to run and the command that starts one; once a
    worker took it, only that it scores it; nothing for a run scored in the app's thread."""
    from types import SimpleNamespace

    from evalcore.views import score as score_views

    job = SimpleNamespace(queued_at=1000.0, claimed=False, running=True)
    fresh = score_views.queue_blocks(job, now=1000.0 + score_views.NO_WORKER_AFTER_S - 0.1)
    assert [b.kind for b in fresh] == ["info"] and "a worker process scores it" in fresh[0].text
    late = score_views.queue_blocks(job, now=1000.0 + score_views.NO_WORKER_AFTER_S)
    assert [b.kind for b in late] == ["info", "warning"]
    assert "none seems to be running" in late[1].text and "`python -m evalcore worker`" in late[1].text
    assert f"in {score_views.NO_WORKER_AFTER_S:,.0f} s" in late[1].text
    job.claimed = True
    taken = score_views.queue_blocks(job, now=5000.0)
    assert len(taken) == 1 and "A worker is scoring this run" in taken[0].text
    assert score_views.queue_blocks(SimpleNamespace(queued_at=None, claimed=False, running=True), now=5000.0) == []
    job.running = False  # ended: the page shows how it went instead
    assert score_views.queue_blocks(job, now=5000.0) == []


def test_the_page_job_knows_when_a_worker_took_its_run(pg_schemas, tmp_path, monkeypatch):  # noqa: F811
    """``claimed`` (what the page reads) is False while the job waits, True once a worker took it."""
    monkeypatch.delenv("EVALCORE_MAX_COST_USD", raising=False)
    url = pg_schemas.new("claimed")
    store = Store(url)
    with serve() as srv:
        job = _page_job(store, srv.base_url, 3)
        job.start()
        _wait_for(lambda: job.queued_at is not None, "the page's job to queue its run")
        time.sleep(3 * job.poll_s)  # a few polls with no worker: still unclaimed
        assert not job.claimed and job.running
        _work_until_empty(url)
        assert job.wait(120) and job.error is None
    assert job.claimed and job.run.config.status == "done"
    store.close()


# --------------------------------------------------------------------------- rate limits across worker processes
def test_the_stores_bucket_holds_the_rate_in_total_for_two_processes(pg_schemas):  # noqa: F811
    """Two takers, each on its own connection to the store (as two workers are), each in its own thread, taking as
    fast as the bucket lets them on a virtual clock: together they get exactly what ONE bucket of that rate and
    burst allows (5 at the start, then 10 per second: 5 per half-second step), not what two would (twice that)."""
    import threading

    from evalcore.judge.ratelimit import SharedBuckets

    url = pg_schemas.new("rate")
    now = [0.0]
    takers = [SharedBuckets(url, now=lambda: now[0]) for _ in range(2)]
    key, rate, burst = "https://api.example:443/v1/chat/completions|judge-model", 10.0, 5.0
    taken = [0, 0]

    def greedy(i: int) -> None:
        while takers[i].take(key, [("req", 1.0, rate, burst)]) == 0.0:
            taken[i] += 1

    steps = 40  # virtual seconds 0, 0.5, ..., 19.5
    for step in range(steps):
        now[0] = step * 0.5
        threads = [threading.Thread(target=greedy, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    one_bucket = burst + rate * 0.5 * (steps - 1)  # a token bucket's bound: burst + rate x elapsed
    assert sum(taken) == one_bucket == 200
    assert takers[0].take(key, [("req", 1.0, rate, burst)]) == pytest.approx(1.0 / rate)  # empty: wait one token
    for t in takers:
        t.close()


def _paced_limiter(shared, clock):
    """A RateLimiter that learned from a reply: 600 requests a minute, 9 left, so a burst of 4.5 (half of what
    remains) refilled at 0.99 x 10 a second."""
    from evalcore.judge.ratelimit import RateLimiter

    lim = RateLimiter(4, clock=clock, shared=shared)
    lim.after_attempt(200, {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "9",
                            "x-ratelimit-reset-requests": "0s"})
    return lim


def test_two_workers_rate_limiters_pace_to_the_limit_together(pg_schemas):  # noqa: F811
    """Two workers' limiters (each with its own connection to the store's buckets) sending in turn on one virtual
    clock: 200 attempts take the time ONE limiter at the announced rate needs for 200, where two limiters pacing
    alone (the in-process buckets, as on SQLite) send them in half that: twice the limit."""
    import httpx

    from evalcore.judge.ratelimit import SharedBuckets
    from evalcore.testing.clock import VirtualClock

    def elapsed(url: str | None) -> float:
        clock = VirtualClock(start=0.0)
        shared = [SharedBuckets(url, now=clock.now) if url else None for _ in range(2)]
        limiters = [_paced_limiter(s, clock) for s in shared]

        async def send() -> None:
            for _ in range(100):
                for lim in limiters:
                    await lim.before_attempt(httpx.Request("POST", "https://api.example/v1/chat/completions",
                                                           content=b'{"model": "judge-model"}'))
        asyncio_run(send())
        for s in shared:
            if s is not None:
                s.close()
        return clock.now()

    rate = 600 / 60 * 0.99
    together = elapsed(pg_schemas.new("limiters"))
    assert together == pytest.approx((200 - 4.5) / rate, rel=1e-6)  # burst 4.5, then one per 1 / rate seconds
    alone = elapsed(None)
    assert alone == pytest.approx((100 - 4.5) / rate, rel=1e-6)  # each at the whole rate: twice the limit


def test_a_worker_process_shares_its_limiters_buckets(pg_schemas):  # noqa: F811
    """evalcore.workers.work calls share_across_processes(url): every limiter made then takes from the store."""
    from evalcore.judge import ratelimit

    ratelimit.share_across_processes(pg_schemas.new("share"))
    try:
        assert isinstance(ratelimit.RateLimiter(4).shared, ratelimit.SharedBuckets)
    finally:
        ratelimit.share_across_processes(None)
    assert ratelimit.RateLimiter(4).shared is None  # the app's and the command line's own runs: per process


def asyncio_run(coro) -> None:
    import asyncio

    asyncio.run(coro)
