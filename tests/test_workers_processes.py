"""Real ``python -m evalcore worker`` processes on a PostgreSQL store, against the loopback judge, for the two things
in-process tests can only simulate: a worker KILLED in the middle of a capped user's run (what the spending record
holds for the user, checked against what the judge actually served), and two worker processes pacing to ONE
announced rate limit between them (the store's shared buckets, evalcore.judge.ratelimit.SharedBuckets).

Nothing depends on the machine's speed: the kill happens at a barrier the loopback holds (so exactly one request is
in flight when the worker dies, whatever the machine), every wait polls with a generous deadline, and the rate-limit
test asserts only a LOWER bound on time (a slow machine only lengthens it). Both need a server
(``EVALCORE_TEST_POSTGRES``; tests/store_backends.py) and are marked slow (real processes, the wall clock)."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import time
from collections import Counter

import pytest

from evalcore import workers
from evalcore.judge import cli as judge_cli
from evalcore.store import Store
from evalcore.testing.loopback import serve
from tests.store_backends import pg_schemas  # noqa: F401
from tests.test_workers import _judged_per_item, _wait_for, _worker


def _stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ------------------------------------------------------------------------ a worker killed in a capped user's run
MODEL = "loop-reasoner"
# the test's own price table, in USD per million tokens: replies are mostly completion tokens (a reasoning judge's
# hidden reasoning, 48 tokens a sample, 20 samples an item), so they cost far more than the estimate's guess
PRICES = {MODEL: {"input": 1.0, "output": 100.0}}
N_ITEMS = 40  # about 0.1 USD a reply: the whole run would cost about 4 USD
CAP_USD = 1.5  # reached after about 15 replies: the run must stop
KILL_AFTER = 5  # the worker's requests answered before the one held at the barrier, in flight when it is killed


def _reply_usd(usage: dict) -> float:
    """What one served reply costs, by evalcore's cost table at the test's prices (the price table's override)."""
    from evalcore.judge.cost import cost_table

    return float(cost_table(int(usage["prompt_tokens"]), int(usage["completion_tokens"]),
                            cached_prompt_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")
                                                     or 0), model=MODEL, provider="openai")[-1]["usd"])


def _capped_click_and_queue(store: Store, endpoint):
    """The Score page's click for ``N_ITEMS`` SummEval coherence items (the estimate, ``spending.charge``: the cap
    checked and the estimate recorded) and its job on PostgreSQL (``QueuedScoringJob``: ``record_run`` with the
    app's meter, ``hand_over``, defer): (the estimate, the job, once queued)."""
    from evalcore.judge import runner, spending
    from evalcore.judge.spec import EngineOptions, default_spec
    from evalcore.runs import get_dataset
    from evalcore.views import score as score_views

    spec = default_spec(get_dataset("summeval", store, with_labels=False), "geval", ["coherence"], store=store,
                        limit=N_ITEMS)
    est = runner.estimate(spec, EngineOptions(endpoint), store=store)
    d = spending.charge(est.cost_usd, est.calls, local=False, spender="alice", store=store, what="score")
    assert d.allowed, d.reason
    job = score_views.new_job(spec, endpoint, use_batch=False, api_key=None, concurrency=1, reprobe=False,
                              store=store, owner="alice", charged_usd=est.cost_usd)
    assert type(job) is workers.QueuedScoringJob and job.meter is not None  # a capped run goes to a worker
    job.start()
    _wait_for(lambda: job.queued_at is not None or job.finished, "the page's job to queue its run")
    assert job.error is None, job.error
    return est, job


@pytest.mark.slow
def test_a_worker_killed_mid_capped_run_the_other_stops_it_at_the_cap_and_the_record_holds_every_reply(
        pg_schemas, tmp_path, monkeypatch):  # noqa: F811
    """Alice (capped at CAP_USD by the operator, in the test's and the workers' environment) queues a run whose
    replies cost ~70x the estimate. Two worker processes wait; the one that takes the run answers KILL_AFTER
    requests, its next one is held at the loopback's barrier, and it is SIGKILLed there. The other takes the job
    over and stops the run at the cap. Checked against what the loopback served: every item judged at most once,
    no request asked twice but the one in flight at the kill, and the record for alice between what the replies
    the workers received cost and the cap plus the one reply in flight at the stop."""
    from evalcore.judge.client import endpoint_from_preset
    from evalcore.testing.loopback_profiles import PROFILES

    (tmp_path / "prices.json").write_text(json.dumps(PRICES))
    monkeypatch.setenv("EVALCORE_PRICES", str(tmp_path / "prices.json"))
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", repr(CAP_USD))
    url = pg_schemas.new("killcap")
    store = Store(url)
    with serve(profile=PROFILES["openai-reasoning"], latency_s=0.02) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-workers")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)  # the operator's endpoint: its key may go there
        est, job = _capped_click_and_queue(store, endpoint_from_preset("openai", model=MODEL, base_url=srv.base_url))
        run_id = job.run_id
        assert est.cost_usd < CAP_USD / 10 and store.run_row(run_id)["status"] == "queued"
        queued_at = len(srv.prompt_log)  # the capability probe's requests, sent by the app when it recorded the run
        held = queued_at + KILL_AFTER + 1  # the ordinal (1-based) of the request in flight at the kill
        srv.hold(held)
        pair = [_worker(url, tmp_path / "w0.log"), _worker(url, tmp_path / "w1.log")]
        try:
            _wait_for(lambda: srv.held == 1, "a worker's request to reach the barrier")
            assert len(srv.prompt_log) == held  # one request at a time: the one held is the victim's only one
            holder = store.lease_holder(run_id)
            victim = next(i for i, p in enumerate(pair) if p.pid == int(holder["pid"]))
            # read while the victim waits at the barrier (it saved and charged each judgment before its next
            # request): what it judged and what the record held for alice when it died
            spent_at_kill, judged_by_victim = store.spent_usd("alice"), sum(_judged_per_item(store, run_id).values())
            pair[victim].send_signal(signal.SIGKILL)  # no finally, no settle: its job stays "doing"
            pair[victim].wait()
            # the held request is answered (billed) to a dead client; the other worker's requests, once it has
            # taken the job over (3 s without the victim's heartbeats), pass freely
            srv.release()
            assert job.wait(300), "the page's job to see the run end"
        finally:
            _stop(*pair)
        log, served = list(srv.prompt_log), list(srv.served)
    assert "queued again" in (tmp_path / f"w{1 - victim}.log").read_text()  # it took over the victim's job

    # the run ended "stopped" at the cap, the page saying so, every judgment kept once
    assert store.run_row(run_id)["status"] == "stopped"
    assert job.error is not None and "spending cap of $1.50 per user was reached" in job.error
    per_item = _judged_per_item(store, run_id)
    assert set(per_item.values()) == {1} and KILL_AFTER <= judged_by_victim < len(per_item) < N_ITEMS

    # no request paid twice but the one in flight at the kill (the victim never read its reply: not in the cache)
    asked = Counter(log[queued_at:])
    assert {h for h, n in asked.items() if n > 1} <= {log[held - 1]} and max(asked.values()) <= 2

    cost, usage = {o: _reply_usd(u) for o, _, u in served}, {o: u for o, _, u in served}
    last = max(cost)  # the reply in flight at the stop: the last one served (the run stopped after it)
    # evalcore's cost table prices the served usage as the test's prices do by hand (1 and 100 USD per million)
    assert cost[last] == pytest.approx((usage[last]["prompt_tokens"] + 100 * usage[last]["completion_tokens"]) * 1e-6)
    assert held in cost  # the loopback answered (billed) the held request after the kill
    in_flight_at_kill = cost[held]
    # what the victim received (the probe's replies, counted by the app's meter, included) was in the record when
    # it died, past the reservation: recorded as each reply arrived, not at a settle it never reached
    received_by_victim = sum(c for o, c in cost.items() if o < held)
    assert received_by_victim > est.cost_usd and spent_at_kill >= received_by_victim - 1e-9
    # THE BOUNDS on alice's record: never under what the judge billed, but for the one request in flight at the kill
    # (its reply never reached any worker: no record can hold it); never over the cap by more than the reply in
    # flight at the stop (one request at a time: the reply whose cost crossed the cap is the last one served; the
    # reply lost at the kill is in no record, so "the cap + the requests in flight at the kill and at the stop"
    # holds a fortiori)
    spent = store.spent_usd("alice")
    assert spent >= sum(cost.values()) - in_flight_at_kill - 1e-9
    assert spent <= CAP_USD + cost[last] + 1e-9
    assert spent >= CAP_USD - 1e-9  # stopped because the cap was reached, not for another reason
    store.close()


# ------------------------------------------------------------------------ two workers against one rate limit
RPM = 600  # the loopback's announced limit: 10 requests a second, a 1-second burst (its own bucket: 10)
PER_RUN = 30  # SummEval items per run; two runs (coherence, fluency), one per worker
CONCURRENCY = 4
# requests that may go out before the store's bucket paces them: each worker's first CONCURRENCY, sent before a reply
# told it the limit, and the shared bucket's capacity (the client's burst share, 0.5, of the server's burst of 10)
BURST = 2 * CONCURRENCY + 5


def _record(store: Store, base_url: str, run_id: str, dimension: str) -> str:
    """A geval run of PER_RUN SummEval items on one dimension, on the loopback judge (a local server: no price, no
    key), recorded ("queued"; its capability probe sent from here) and not yet enqueued."""
    parser = argparse.ArgumentParser()
    judge_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["score", "--dataset", "summeval", "--dimension", dimension, "--method", "geval",
                              "--model", "loop", "--base-url", base_url, "--provider", "vllm", "--limit",
                              str(PER_RUN), "--concurrency", str(CONCURRENCY), "--run", run_id, "--quiet"])
    spec, engine = judge_cli.spec_from_args(args, judge_cli._dataset("summeval", store), store)
    return workers.record_run(spec, engine, store=store)


def _live_workers(store: Store) -> int:
    return int(store.conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()[0])


@pytest.mark.slow
def test_two_worker_processes_pace_to_one_announced_rate_limit_together(pg_schemas, tmp_path):  # noqa: F811
    """Two runs, one per worker process, on one endpoint announcing 600 requests a minute (the loopback only
    announces it, refusing nothing, so that the workers' own pacing is what is measured: a refusing server's 429s
    would slow any client to the limit). The store's buckets hold the rate in total: n requests take at least
    (n - BURST) / 10 s from the first to the last, where two workers pacing alone would each send at the whole rate
    and be done in about half that. A lower bound only: a slow machine can only lengthen it."""
    from evalcore.testing.loopback_limits import RateLimit

    url = pg_schemas.new("rates")
    store = Store(url)
    with serve(rate_limit=RateLimit(rpm=RPM, burst_s=1.0, enforce=False), record_bodies=True) as srv:
        runs = {dim: _record(store, srv.base_url, f"rl/{dim}", dim) for dim in ("coherence", "fluency")}
        pair = [_worker(url, tmp_path / "w0.log"), _worker(url, tmp_path / "w1.log")]
        try:
            # both idle and listening before the jobs come: each takes one (a worker runs one job at a time)
            _wait_for(lambda: _has_table(store) and _live_workers(store) == 2,
                      "both workers to start")
            queued_at, t_queued = len(srv.prompt_log), time.monotonic()
            for run_id in runs.values():
                workers.enqueue_scoring(store, run_id)
            _wait_for(lambda: all(store.run_row(r)["status"] == "done" for r in runs.values()), "both runs to end")
            t_done = time.monotonic()
        finally:
            _stop(*pair)
        log, arrivals, bodies = srv.prompt_log[queued_at:], srv.arrivals[queued_at:], srv.bodies[queued_at:]
    for run_id in runs.values():  # every item judged, once, by a worker
        per_item = _judged_per_item(store, run_id)
        assert len(per_item) == PER_RUN and set(per_item.values()) == {1}
        assert store.run_row(run_id)["status"] == "done"
    assert len(log) == len(set(log))  # nothing asked twice (no refusal, no retry)
    n = len(log)
    assert n >= 2 * PER_RUN - 4  # a few SummEval summaries are word for word the same: answered from the cache
    # the two workers sent at the same time (the runs interleave), so a limit held per worker would show
    dims = ["Coherence" if "Coherence" in _prompt(b) else "Fluency" for _, b in bodies]
    first = {d: arrivals[dims.index(d)] for d in set(dims)}
    last = {d: arrivals[len(dims) - 1 - dims[::-1].index(d)] for d in set(dims)}
    assert len(first) == 2 and first["Coherence"] < last["Fluency"] and first["Fluency"] < last["Coherence"]
    # THE BOUND (a lower one): the store's bucket lets out BURST, then 9.9 a second (0.99 x the limit) in total
    rate = RPM / 60
    assert arrivals[-1] - arrivals[0] >= (n - BURST) / rate, (n, arrivals[-1] - arrivals[0])
    assert t_done - t_queued >= (n - BURST) / rate  # from the queueing to the last judgment, a fortiori
    store.close()


def _has_table(store: Store) -> bool:
    return store.conn.execute("SELECT to_regclass('procrastinate_workers')").fetchone()[0] is not None


def _prompt(body: bytes) -> str:
    return "\n".join(str(m.get("content", "")) for m in json.loads(body).get("messages", []))
