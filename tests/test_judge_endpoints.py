"""Several endpoints for one run (routing, draining, provenance), probes cached both ways, prompt-cache-friendly
scheduling and cached-token accounting, all against loopback servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_h

from evalcore.judge import runner
from evalcore.judge.client import Endpoint
from evalcore.judge.routing import EndpointPool
from evalcore.judge.schedule import common_prefix_len, order_tasks, repeated_prefix_tokens
from evalcore.store import Store
from evalcore.types import Criteria
from evalcore.model import Dataset, Dimension
from evalcore.testing.loopback import Fault, Switches, serve
from evalcore.testing.loopback_limits import PrefixCache
from tests import judge_calls

ROOT = Path(__file__).resolve().parents[1]


def dataset(n_docs: int = 6, n_systems: int = 5, *, by_system: bool = False, words: int = 5) -> Dataset:
    docs = [f"d{i}" for i in range(n_docs)]
    systems = [f"S{j}" for j in range(n_systems)]
    pairs = [(d, s) for s in systems for d in docs] if by_system else [(d, s) for d in docs for s in systems]
    items = pd.DataFrame([{"item_id": f"{d}/{s}", "doc_id": d, "system_id": s, "output": f"summary {d} by {s}"}
                          for d, s in pairs])
    documents = pd.DataFrame({"doc_id": docs, "source": [" ".join(f"w{d}x{k}" for k in range(words)) for d in docs],
                              "references": [[f"ref {d}"] for d in docs], "context": [""] * n_docs})
    human = pd.DataFrame([{"item_id": i, "dimension": "coherence", "score": 3.0} for i in items["item_id"]])
    return Dataset(id="tinyep", name="Tiny", task="summarization", dimensions=[Dimension("coherence", 1, 5)],
                   documents=documents, items=items, human_scores=human)


CRIT = {"coherence": Criteria("coherence", "You will be given a summary.", "coherence definition", 1, 5, "1. Read.")}


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "judge.db")


def ep(srv) -> Endpoint:
    return Endpoint(srv.base_url, "loop-model", provider="local")


def score(ds, endpoint, store, **kw):
    return judge_calls.score_dataset(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT,
                                endpoint=endpoint, store=store, **kw)


def test_two_endpoints_one_failing_mid_run(store):
    ds = dataset(8, 5)  # 40 items
    # B answers its first 6 requests, then every attempt is a 500: it is drained and A takes its work
    with serve(latency_s=0.02) as a, serve(latency_s=0.02, faults=[Fault("500", on_requests=tuple(range(7, 5000)))]) \
            as b:
        run = score(ds, [ep(a), ep(b)], store, concurrency=4)
    j = run.judgments
    assert len(j) == 40 and (j["status"] == "ok").all()
    stats = run.config["stats"]
    by_url = {e["base_url"]: e for e in stats["endpoints"]}
    assert by_url[b.base_url]["drained"] and "HTTP 500" in by_url[b.base_url]["drain_reason"]
    assert by_url[a.base_url]["answered"] > by_url[b.base_url]["answered"] >= 1
    assert stats["failovers"] >= 1
    ans = store.answers(run.run_id)
    assert len(ans) == 40  # every request the run sent, with the endpoint that answered it
    counts = ans["answered_by"].value_counts()
    assert set(counts.index) == {a.base_url, b.base_url}
    # the pool's counters also include the capability probe's requests, which are not a task's
    assert counts[b.base_url] <= by_url[b.base_url]["answered"] and counts.sum() == 40
    assert run.config["endpoints"][1]["base_url"] == b.base_url.rstrip("/")


def test_least_outstanding_requests_favours_the_faster_endpoint(store):
    # The slow endpoint is one that stops answering: from its second request of the run it holds every request
    # until all 40 items have been sent somewhere. Its requests stay outstanding, so the pool sends the rest to the
    # fast one: at most 1 + 3 (its concurrency) items go to the slow one, whatever the machine's speed.
    import threading
    import time

    ds = dataset(8, 5)
    with serve() as fast, serve() as slow:
        score(dataset(1, 1, words=2), [ep(slow), ep(fast)], store)  # probes both (cached in the store): not held
        before = fast.requests_seen + slow.requests_seen
        slow.hold(len(slow.prompt_log) + 2)
        box: dict = {}
        th = threading.Thread(target=lambda: box.update(run=score(ds, [ep(slow), ep(fast)], store, concurrency=3)))
        th.start()
        deadline = time.monotonic() + 120
        while fast.requests_seen + slow.requests_seen - before < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        slow.release()
        th.join(120)
    run = box["run"]
    counts = store.answers(run.run_id)["answered_by"].value_counts()
    assert counts[slow.base_url] <= 4 and counts[fast.base_url] >= 36 and counts.sum() == 40
    assert (run.judgments["status"] == "ok").all()


def test_every_endpoint_failing_fails_items_with_a_reason(store):
    ds = dataset(2, 3)
    down = [Fault("500", on_requests=tuple(range(5, 5000)))]
    with serve(faults=down) as a, serve(faults=down) as b:
        run = score(ds, [ep(a), ep(b)], store, concurrency=2, max_retries=1)
    j = run.judgments
    assert len(j) == 6 and (j["status"] == "failed").sum() >= 1
    assert j.loc[j["status"] == "failed", "reason"].str.contains("HTTP 500|drained").all()


def test_pool_repeat_run_uses_the_first_endpoints_cache(store):
    ds = dataset(3, 3)
    with serve() as a, serve() as b:
        score(ds, [ep(a), ep(b)], store)
        seen = a.requests_seen + b.requests_seen
        again = score(ds, [ep(a), ep(b)], store)
        assert a.requests_seen + b.requests_seen == seen
    assert again.config["stats"]["requests"] == 0


def test_pool_rejects_mixed_models():
    with pytest.raises(ValueError, match="same model"):
        EndpointPool([Endpoint("http://a/v1", "m1", provider="local"), Endpoint("http://b/v1", "m2",
                                                                                  provider="local")])


def test_cli_repeated_base_url(store):
    ds = dataset(3, 3)
    store.save_dataset(ds)
    with serve() as a, serve() as b:
        env = dict(os.environ, EVALCORE_DB=str(store.path))
        out = subprocess.run([sys.executable, "-m", "evalcore", "score", "--dataset", ds.id, "--method", "geval",
                              "--dimension", "coherence", "--model", "loop-model", "--provider", "vllm",
                              "--base-url", a.base_url, "--base-url", b.base_url, "--json", "--quiet"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert a.requests_seen > 0 and b.requests_seen > 0
    stats = json.loads(out.stdout)["stats"]
    assert sum(e["answered"] for e in stats["endpoints"]) == stats["requests"]


# ------------------------------------------------------------------------------------------- probes cached both ways
def test_repeat_run_without_echo_sends_zero_requests(store):
    ds = dataset(2, 2)
    with serve(switches=Switches(no_completions=True)) as srv:
        first = score(ds, ep(srv), store)
        n1 = srv.requests_seen
        assert first.config["capabilities"]["echo_logprobs"] is False
        assert srv.by_path.get("/v1/completions", 0) == 1  # the echo probe, answered 404
        second = score(ds, ep(srv), store)
        assert srv.requests_seen == n1  # 0 requests: the rejected echo probe is remembered too
        third = score(ds, ep(srv), store, reprobe=True)  # --reprobe asks again
        assert srv.by_path.get("/v1/completions", 0) == 2
    assert second.config["stats"]["requests"] == 0
    assert second.config["capabilities"] == first.config["capabilities"] == third.config["capabilities"]


def test_transient_probe_failure_is_not_remembered(store):
    from evalcore.judge.probes import cached_failure

    ds = dataset(1, 2)
    with serve(faults=[Fault("500", match="quick brown fox")]) as srv:
        with pytest.raises(Exception):
            score(ds, ep(srv), store, max_retries=0)
    assert store.conn.execute("SELECT count(*) FROM probe_failures").fetchone()[0] == 0
    assert cached_failure(store, "nope") is None


# ------------------------------------------------------------------------------------------- prefix cache
def test_prefix_cache_counts_whole_blocks_and_evicts_lru():
    pc = PrefixCache(capacity_tokens=64, block=16)
    a = " ".join(f"a{i}" for i in range(40))
    assert pc.lookup_insert(a) == 0
    assert pc.lookup_insert(a) == 32  # 2 full blocks of 16; the 8-token tail is not a block
    assert pc.lookup_insert(a[:a.index("a20")] + "zzz " * 20) == 16  # shares only the first block
    for k in range(3):  # fill the 4-block cache with other prompts: a's blocks are evicted
        pc.lookup_insert(" ".join(f"b{k}x{i}" for i in range(32)))
    assert pc.lookup_insert(a) == 0


def test_repeated_prefix_tokens_by_hand():
    assert common_prefix_len("abcdef", "abcxyz") == 3
    shared, total = repeated_prefix_tokens(["a" * 40, "a" * 40 + "b" * 40, "c" * 40])
    assert total == 10 + 20 + 10 and shared == 10  # the second repeats the first's 40 chars = 10 tokens
    shared, _ = repeated_prefix_tokens(["a" * 4000, "a" * 4000], min_tokens=1024, step_tokens=128)
    assert shared == 0  # 1,000 tokens: under OpenAI's 1,024 minimum
    shared, _ = repeated_prefix_tokens(["a" * 6000, "a" * 6000], min_tokens=1024, step_tokens=128)
    assert shared == 1408  # 1,500 tokens, in 128-token steps


def _brute_lcp(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _brute_repeated(prompts, *, min_tokens=0, step_tokens=1, window=64):
    """The definition, written out: each prompt against every one of the ``window`` before it."""
    shared = total = 0
    for i, p in enumerate(prompts):
        toks = -(-len(p) // 4)
        total += toks
        best = max((_brute_lcp(p, q) for q in prompts[max(0, i - window):i]), default=0)
        t = best // 4
        if toks >= min_tokens and t >= min_tokens:
            shared += (t // step_tokens) * step_tokens
    return shared, total


@settings(max_examples=200, deadline=None)
@given(st_h.lists(st_h.text(alphabet="ab\n", max_size=40), max_size=25), st_h.integers(1, 6),
       st_h.integers(0, 3), st_h.integers(1, 3))
def test_repeated_prefix_tokens_equals_the_definition(prompts, window, min_tokens, step):
    """The sorted window's two neighbours give the same maximum as comparing with every prompt in the window; the
    halving common_prefix_len equals a character-by-character count."""
    for a, b in zip(prompts, prompts[1:]):
        assert common_prefix_len(a, b) == _brute_lcp(a, b)
    assert repeated_prefix_tokens(prompts, min_tokens=min_tokens, step_tokens=step, window=window) == \
        _brute_repeated(prompts, min_tokens=min_tokens, step_tokens=step, window=window)


def test_prefix_schedule_groups_documents_and_records_cached_tokens(tmp_path):
    ds = dataset(6, 4, by_system=True, words=120)  # listed system by system: documents interleaved
    tasks = runner.item_tasks(ds, "coherence")
    assert [t.doc_id for t in tasks[:3]] == ["d0", "d1", "d2"]
    from evalcore.methods import get_method

    m = get_method("geval")
    cfg = m.default_config()
    ordered = order_tasks(tasks, lambda t: m.build_requests(t, CRIT["coherence"], cfg), "prefix")
    docs = [t.doc_id for t in ordered]
    assert all(docs[i:i + 4] == [docs[i]] * 4 for i in range(0, 24, 4))  # each document's items together
    cached = {}
    for schedule in ("as-given", "prefix"):
        with serve(prefix_cache_tokens=400) as srv:  # room for about two prompts: only a hot prefix is reused
            run = score(ds, ep(srv), Store(tmp_path / f"{schedule}.db"), concurrency=1, schedule=schedule)
        st = run.config["stats"]
        assert run.config["schedule"] == schedule
        cached[schedule] = st["cached_prompt_tokens"] / st["prompt_tokens"]
    assert cached["prefix"] > cached["as-given"] + 0.2


@pytest.mark.parametrize("method_name", ["geval", "explicit", "implicit", "rts", "mcq", "pairwise", "h2h",
                                         "gptscore"])
def test_templates_put_the_shared_source_before_the_judged_text(method_name):
    """Two items of one document share their prompts' prefix up to the end of the source (what a prefix cache
    reuses), and the judged text comes after it."""
    from evalcore.judge.schedule import prompt_text
    from evalcore.types import Capabilities
    from evalcore.methods import get_method

    m = get_method(method_name)
    cfg, _ = m.plan(m.default_config(), Capabilities(True, 20, True, True))
    ds = dataset(1, 3, words=60)
    source = ds.documents["source"].iloc[0]
    tasks = (runner.pair_tasks(ds, "coherence", runner.PairSelection()) if m.pairwise
             else runner.item_tasks(ds, "coherence"))
    a, b = (prompt_text(m.build_requests(t, CRIT["coherence"], cfg)[0]) for t in tasks[:2])
    shared = a[:common_prefix_len(a, b)]
    assert source in shared, method_name
    judged = tasks[0].output_first if m.pairwise else tasks[0].output
    assert a.index(judged) > a.index(source)


def test_a_rate_limited_replica_is_paced_not_drained(store):
    from evalcore.testing.loopback_limits import RateLimit

    ds = dataset(8, 5)
    with serve(latency_s=0.02, rate_limit=RateLimit(rpm=600, burst_s=0.5)) as limited, serve(latency_s=0.02) as free:
        run = score(ds, [ep(limited), ep(free)], store, concurrency=8)
    assert (run.judgments["status"] == "ok").all()
    by_url = {e["base_url"]: e for e in run.config["stats"]["endpoints"]}
    assert not by_url[limited.base_url]["drained"] and not by_url[free.base_url]["drained"]
    assert by_url[free.base_url]["answered"] > by_url[limited.base_url]["answered"] >= 1
