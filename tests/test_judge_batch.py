"""The Batch API path against the loopback's /v1/files and /v1/batches: complete, partly failed, expired, cancelled
(then completed by submitting again), collected by a new process; replies land in the online cache keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore.judge import batch, runner
from evalcore.judge.client import Endpoint
from evalcore.store import Store
from evalcore.types import Criteria
from evalcore.model import Dataset, Dimension
from evalcore.testing.clock import SteppedClock
from evalcore.testing.loopback import BatchSwitches, serve
from tests import judge_calls

ROOT = Path(__file__).resolve().parents[1]
CHAT = "/v1/chat/completions"


def tiny_dataset(n_docs: int = 4, n_systems: int = 3) -> Dataset:
    docs = [f"d{i}" for i in range(n_docs)]
    systems = [f"S{j}" for j in range(n_systems)]
    items = pd.DataFrame([{"item_id": f"{d}/{s}", "doc_id": d, "system_id": s, "output": f"summary {d} by {s}"}
                          for d in docs for s in systems])
    documents = pd.DataFrame({"doc_id": docs, "source": [f"article {d} " * 20 for d in docs],
                              "references": [[f"ref {d}"] for d in docs], "context": [""] * n_docs})
    human = pd.DataFrame([{"item_id": i, "dimension": "coherence", "score": 3.0} for i in items["item_id"]])
    return Dataset(id="tinybatch", name="Tiny batch", task="summarization",
                   dimensions=[Dimension("coherence", 1, 5)], documents=documents, items=items, human_scores=human)


CRIT = {"coherence": Criteria("coherence", "You will be given a summary.", "coherence definition", 1, 5,
                              "1. Read.\n2. Score.")}


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "judge.db")


def ep(srv) -> Endpoint:
    return Endpoint(srv.base_url, "loop-model", provider="local")


def run_batch(ds, srv, store, **kw):
    return judge_calls.score_dataset_batch(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT,
                                     endpoint=ep(srv), store=store, poll_s=0.02, **kw)


def test_complete_batch_matches_online_and_fills_the_online_cache(store, tmp_path):
    ds = tiny_dataset()
    with serve() as srv:
        col = run_batch(ds, srv, store)
        assert srv.by_path.get(CHAT, 0) == 0  # not one synchronous chat call: probe included
        assert srv.by_path["/v1/batches"] >= 2 and srv.by_path["/v1/files"] >= 3
        run = col.run
        assert run.config["status"] == "done" and run.config["mode"] == "batch"
        assert (run.judgments["status"] == "ok").all() and len(run.judgments) == 12
        assert run.config["batch"]["answered_lines"] == 12
        assert "documented capabilities" in run.config["plan_note"]
        rows = batch.batch_rows(store, run.run_id)
        assert len(rows) == 1 and rows[0]["status"] == "completed" and rows[0]["collected"] == 1
        # the same work online on a fresh store: identical scores
        online = judge_calls.score_dataset(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT,
                                      endpoint=ep(srv), store=Store(tmp_path / "online.db"))
        a = run.judgments.set_index("item_id")["value"].sort_index()
        b = online.judgments.set_index("item_id")["value"].sort_index()
        pd.testing.assert_series_equal(a, b)
        # ... and online on the batch's store: every scoring request is a cache hit (only the probe is sent)
        before = srv.by_path.get(CHAT, 0)
        again = judge_calls.score_dataset(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT,
                                     endpoint=ep(srv), store=store)
        assert again.config["stats"]["requests"] == again.config["stats"]["probe_requests"]
        assert srv.by_path.get(CHAT, 0) - before <= 2  # the two chat probes; the echo probe is a completion


def test_batch_bodies_equal_the_online_bodies():
    """A batch line's body is byte-for-byte what the online client sends for the same request."""
    import asyncio

    from evalcore.judge.client import JudgeClient
    from evalcore.methods import get_method

    m = get_method("geval")
    planned, _ = m.plan(m.default_config(), batch.OPENAI_CAPABILITIES)
    task = runner.item_tasks(tiny_dataset(1, 1), "coherence")[0]
    req = m.build_requests(task, CRIT["coherence"], planned)[0]
    seen = []
    with serve() as srv:
        endpoint = ep(srv)
        orig = srv._chat

        def spy(body, prompt, fault):
            seen.append({k: v for k, v in body.items() if not k.startswith("_")})
            return orig(body, prompt, fault)

        srv._chat = spy

        async def send():
            c = JudgeClient(endpoint)
            try:
                await c.send(req)
            finally:
                await c.aclose()

        asyncio.run(send())
    assert req.logprobs and seen == [batch.request_body(endpoint, req)]


def test_partly_failed_batch_fails_those_items_with_the_reason(store):
    ds = tiny_dataset()
    with serve(batch=BatchSwitches(fail_match="summary d1 by S2")) as srv:
        run = run_batch(ds, srv, store).run
    j = run.judgments.set_index("item_id")
    assert j.loc["d1/S2", "status"] == "failed"
    assert j.loc["d1/S2", "reason"].startswith("batch: HTTP 400")
    assert (j.drop(index="d1/S2")["status"] == "ok").all()
    assert run.config["batch"]["failed_lines"] == 1


def test_expired_batch_every_item_scored_or_failed_with_reason(store):
    ds = tiny_dataset()
    with serve(batch=BatchSwitches(expire_after=5)) as srv:
        run = run_batch(ds, srv, store).run
        assert batch.batch_rows(store, run.run_id)[0]["status"] == "expired"
        j = run.judgments
        assert len(j) == 12 and (j["status"] == "ok").sum() == 5
        failed = j[j["status"] == "failed"]
        assert failed["reason"].str.startswith("batch expired").all() and failed["value"].isna().all()
        # submitting again under the same run sends only the 7 missing requests
        srv.batch_service.switches = BatchSwitches()
        col = run_batch(ds, srv, store, run_id=run.run_id)
    assert (col.run.judgments["status"] == "ok").all()
    assert col.run.config["batch"]["answered_lines"] == 7


def test_cancelled_batch_then_collect(store):
    # the loopback's batch answers a line each 0.05 s of a stepped clock: it has answered exactly three lines and
    # waits before the fourth when the cancel arrives, however busy the machine is
    ds = tiny_dataset()
    clock = SteppedClock()
    with serve(batch=BatchSwitches(line_delay_s=0.05, sleep=clock.sleep)) as srv:
        sub = judge_calls.submit(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT, endpoint=ep(srv),
                           store=store)
        assert sub.requests == 12 and len(sub.batch_ids) == 1
        clock.wait_sleeps(1)
        for n in (2, 3, 4):  # lines 1-3 answered; the 4th waits
            clock.advance(0.05)
            clock.wait_sleeps(n)
        st = batch.cancel(sub.run_id, store=store)
        assert st.batches[0]["status"] == "cancelling"
        clock.run_freely()  # the line already under way is answered, then the cancel stops the batch
        col = batch.collect(sub.run_id, store=store, poll_s=0.02, dataset=ds)
        assert srv.by_path.get(CHAT, 0) == 0
    j = col.run.judgments
    assert col.status.batches[0]["status"] == "cancelled"
    assert (j["status"] == "ok").sum() == 4 and len(j) == 12
    assert j.loc[j["status"] == "failed", "reason"].eq("batch cancelled: request not run").all()


def test_cli_submit_no_wait_then_collect_in_a_new_process(store):
    """`score --batch --no-wait` in one process, `batch collect` in another: the batch id lives in the store."""
    ds = tiny_dataset()
    store.save_dataset(ds)
    env = dict(os.environ, EVALCORE_DB=str(store.path))
    with serve(batch=BatchSwitches(line_delay_s=0.01)) as srv:
        sub = subprocess.run([sys.executable, "-m", "evalcore", "score", "--dataset", ds.id, "--method", "geval",
                              "--dimension", "coherence", "--model", "loop-model", "--provider", "vllm",
                              "--base-url", srv.base_url, "--batch", "--no-wait", "--json"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert sub.returncode == 0, sub.stderr
        info = json.loads(sub.stdout)
        assert info["requests"] == 12 and len(info["batch_ids"]) == 1
        assert store.run_row(info["run_id"])["status"] == "batch-submitted"
        st = batch.status(info["run_id"], store=store)
        assert [b["batch_id"] for b in st.batches] == info["batch_ids"]
        out = subprocess.run([sys.executable, "-m", "evalcore", "batch", "collect", info["run_id"], "--poll", "0.05",
                              "--json", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert srv.by_path.get(CHAT, 0) == 0
    summary = json.loads(out.stdout)
    assert summary["judgments"] == 12 and summary["failed"] == 0
    assert summary["batch"]["done"] and summary["batch"]["batches"][0]["collected"]
    run = store.load_run(info["run_id"])
    assert run.config["status"] == "done" and (run.judgments["status"] == "ok").all()


def test_estimate_shows_batch_and_cached_prompt_prices(store):
    ds = tiny_dataset()
    endpoint = Endpoint("http://127.0.0.1:9/v1", "gpt-4o-mini", provider="openai")
    est = judge_calls.estimate(ds, method="geval", criteria_by_dim=CRIT, endpoint=endpoint, store=store,
                          dimensions=["coherence"])
    rows = {r["tokens"]: r for r in est.cost_rows}
    assert rows["completion tokens"]["usd_per_1m"] == 0.60 and rows["completion tokens"]["batch_usd_per_1m"] == 0.30
    assert rows["prompt tokens (cached)"]["usd_per_1m"] == 0.075
    assert est.cost_usd_batch == pytest.approx(est.cost_usd / 2)
    # short prompts: below OpenAI's 1,024-token minimum, nothing is expected from the prompt cache
    assert est.cached_prompt_tokens == 0


def test_cost_table_by_hand(tmp_path):
    from evalcore.judge.cost import cost_table, load_prices

    rows = {r["tokens"]: r for r in cost_table(1_000_000, 1_000_000, cached_prompt_tokens=400_000, model="gpt-4o")}
    # gpt-4o: input 2.50, cached input 1.25, output 10.00 USD per 1M; the Batch API halves each
    assert rows["prompt tokens (not cached)"]["usd"] == pytest.approx(0.6 * 2.50)
    assert rows["prompt tokens (cached)"]["usd"] == pytest.approx(0.4 * 1.25)
    assert rows["total"]["usd"] == pytest.approx(1.5 + 0.5 + 10.0)
    assert rows["total"]["batch_usd"] == pytest.approx(0.75 + 0.25 + 5.0)
    unknown = cost_table(10, 10, model="no-such-model")
    assert unknown[-1]["usd"] is None and unknown[-1]["batch_usd"] is None
    local = cost_table(10, 10, model="x", provider="vllm")
    assert local[-1]["usd"] == 0.0
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"my-model": {"input": 1.0, "output": 2.0, "cached_input": 0.1, "batch_output": 0.5}}))
    table = load_prices(f)
    rows = {r["tokens"]: r for r in cost_table(1_000_000, 1_000_000, cached_prompt_tokens=1_000_000,
                                                 model="my-model", prices=table)}
    assert rows["prompt tokens (cached)"]["usd"] == pytest.approx(0.1)
    assert rows["completion tokens"]["batch_usd"] == pytest.approx(0.5)
    f.write_text(json.dumps({"my-model": {"input": 1.0, "output": 2.0, "cached_input": "cheap"}}))
    with pytest.raises(ValueError, match="cached_input"):
        load_prices(f)


def test_endpoint_without_a_batch_api_leaves_no_run(store):
    """A server without /v1/files (here: a plain stub answering 404) is a clear error and no half-made run."""
    import http.server
    import threading

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = b'{"error": {"message": "no such route", "type": "not_found"}}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        endpoint = Endpoint(f"http://127.0.0.1:{httpd.server_address[1]}/v1", "m", provider="local")
        with pytest.raises(RuntimeError, match="no Batch API"):
            judge_calls.submit(tiny_dataset(), method="geval", dimensions=["coherence"], criteria_by_dim=CRIT,
                         endpoint=endpoint, store=store, run_id="tinybatch/x")
    finally:
        httpd.shutdown()
    assert not store.run_exists("tinybatch/x") and batch.batch_rows(store, "tinybatch/x") == []
