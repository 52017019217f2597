"""The engine end to end against the loopback server, with a tiny method defined here (the real methods are
covered in test_judge_methods_e2e.py)."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pytest

from evalcore.judge import runner
from evalcore.judge.cli import export_rows
from evalcore.judge.client import Endpoint
from evalcore.store import Store
from evalcore.types import (
    Capabilities,
    ChatRequest,
    Criteria,
    Outcome,
    UnsupportedByEndpoint,
)
from evalcore.model import Dataset, Dimension
from evalcore.testing.loopback import Fault, Switches, serve
from tests import judge_calls

SECRET = "sk-test-SECRET-123"


@dataclass(frozen=True)
class TinyConfig:
    use_logprobs: bool = False
    fallback: bool = True
    max_tokens: int = 8


class TinyMethod:
    """Asks for a 1-5 score; reads the first digit (or, with log-probs, the top token)."""

    name = "tiny"
    pairwise = False
    parser = "form"

    def default_config(self):
        return TinyConfig()

    def load_config(self, data):
        return TinyConfig(**(data or {}))

    def requirements(self, config):
        return {"logprobs"} if config.use_logprobs else set()

    def plan(self, config, caps):
        if config.use_logprobs and not caps.chat_logprobs:
            if not config.fallback:
                raise UnsupportedByEndpoint("tiny needs log-probs and this endpoint returns none")
            return replace(config, use_logprobs=False), "log-probs unavailable: greedy fallback"
        return config, ""

    def build_requests(self, task, criteria, config):
        prompt = (f"{criteria.task_introduction}\n{criteria.steps}\nText: {task.output}\n"
                  f"Rate the {criteria.dimension} from {criteria.scale_min} to {criteria.scale_max}.")
        return [ChatRequest(messages=(("user", prompt),), max_tokens=config.max_tokens, logprobs=config.use_logprobs,
                            top_logprobs=5 if config.use_logprobs else None)]

    def score(self, task, criteria, config, responses, *, parse_mode="robust"):
        text = responses[0].choices[0].text
        m = re.search(r"\d", text)
        if not m:
            return Outcome(value=None, status="failed", reason="no score found in reply", raw=text, estimator="greedy")
        return Outcome(value=float(m.group()), status="ok", raw=text,
                       estimator="logprob-top" if config.use_logprobs else "greedy")


class TinyPairwise(TinyMethod):
    name = "tinypair"
    pairwise = True

    def build_requests(self, task, criteria, config):
        prompt = (f"Which is more {criteria.dimension}?\n(A) {task.output_first}\n(B) {task.output_second}\n"
                  "(C) both equally good")
        return [ChatRequest(messages=(("user", prompt),), max_tokens=2)]

    def score(self, task, criteria, config, responses, *, parse_mode="robust"):
        text = responses[0].choices[0].text.strip()
        verdict = {"A": "first", "B": "second", "C": "tie"}.get(text[:1])
        if verdict is None:
            return Outcome(value=None, status="failed", reason="no verdict", raw=text)
        return Outcome(value={"first": 1.0, "second": 0.0, "tie": 0.5}[verdict], status="ok", verdict=verdict,
                       raw=text, estimator="verdict")


def tiny_dataset(n_docs: int = 5, n_systems: int = 4) -> Dataset:
    docs = [f"d{i}" for i in range(n_docs)]
    systems = [f"S{j}" for j in range(n_systems)]
    items = pd.DataFrame([{"item_id": f"{d}/{s}", "doc_id": d, "system_id": s, "output": f"summary {d} by {s}"}
                          for d in docs for s in systems])
    documents = pd.DataFrame({"doc_id": docs, "source": [f"article {d}" for d in docs],
                              "references": [[f"ref {d}"] for d in docs], "context": [""] * n_docs})
    human = pd.DataFrame([{"item_id": i, "dimension": dim, "score": 3.0} for i in items["item_id"]
                          for dim in ("coherence", "fluency")])
    return Dataset(id="tiny", name="Tiny", task="summarization",
                   dimensions=[Dimension("coherence", 1, 5), Dimension("fluency", 1, 5)],
                   documents=documents, items=items, human_scores=human)


def crit(dim: str, steps: str = "1. Read.") -> Criteria:
    return Criteria(dim, "You will be given a summary.", f"{dim} definition", 1, 5, steps)


CRIT = {"coherence": crit("coherence"), "fluency": crit("fluency")}


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "judge.db")


def ep(srv) -> Endpoint:
    return Endpoint(srv.base_url, "loop-model", api_key_env="EVALCORE_TEST_KEY", provider="openai",
                    operator_configured=True)  # the test is the operator: evalcore.judge.trust


def test_fault_injection_every_item_scored_or_failed_with_reason(store):
    ds = tiny_dataset(6, 5)  # 30 items x 2 dims
    faults = [
        Fault("429", fraction=0.15, retry_after=0.05),
        Fault("500", fraction=0.1),
        Fault("500", fraction=0.08, sticky=True),  # permanent for those prompts: fails after retries
        Fault("unparseable", fraction=0.08, sticky=True),
        Fault("truncated", fraction=0.05, sticky=True),
        Fault("refusal", fraction=0.05, sticky=True),
        Fault("malformed", fraction=0.04, sticky=True),
    ]
    seen = []
    with serve(latency_s=0.01, faults=faults, seed=3) as srv:
        run = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), api_key=SECRET,
                                   store=store, concurrency=8, max_retries=2, progress=seen.append)
    j = run.judgments
    assert len(j) == 60
    assert set(j["status"]) <= {"ok", "failed"}
    failed = j[j["status"] == "failed"]
    assert len(failed) > 0 and (failed["reason"].str.len() > 0).all()
    assert failed["value"].isna().all() and j.loc[j["status"] == "ok", "value"].notna().all()
    reasons = " | ".join(failed["reason"])
    for expected in ("HTTP 500 after retries", "no score found", "judge refused", "reply truncated",
                     "malformed response body"):
        assert expected in reasons, expected
    stats = run.config.stats
    assert stats.retries > 0 and stats.failures > 0
    assert stats.ok + stats.failed == 60
    assert seen[-1].done == 60 and seen[-1].failed == len(failed)


def test_cache_hit_on_repeat_makes_zero_requests(store):
    ds = tiny_dataset()
    with serve() as srv:
        run1 = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), api_key=SECRET,
                                    store=store)
        first = srv.requests_seen
        assert first == 3 + 40  # probe + 20 items x 2 dimensions
        run2 = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), api_key=SECRET,
                                    store=store)
        assert srv.requests_seen == first
    assert run2.config.stats.requests == 0 and run2.config.stats.cached == 40
    pd.testing.assert_series_equal(run1.judgments["value"], run2.judgments["value"])


def test_cancel_halfway_then_resume_repeats_no_cached_call(store):
    ds = tiny_dataset(10, 4)  # 40 items, one dimension
    cancel = threading.Event()

    def on_progress(p):
        if p.done >= 15:
            cancel.set()

    one = {"coherence": CRIT["coherence"]}
    with serve(latency_s=0.05) as srv:
        run = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=one, endpoint=ep(srv), api_key=SECRET,
                                   store=store, concurrency=4, progress=on_progress, cancel=cancel)
        assert run.config.status == "cancelled"
        assert 15 <= len(run.judgments) < 40
        answered = store.cache_count()  # probe + every reply that came back before the cancel
        before = srv.requests_seen
        done_prompts = set(srv.prompt_log)
        resumed = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=one, endpoint=ep(srv),
                                       api_key=SECRET, store=store, run_id=run.run_id, concurrency=4)
        new_prompts = srv.prompt_log[before:]
    assert resumed.config.status == "done" and len(resumed.judgments) == 40
    # zero repeated calls for what was cached: only the unanswered items were asked again
    assert srv.requests_seen - before == 40 + 3 - answered
    cached_prompts = done_prompts - set(srv.prompt_log[before:])
    assert len(cached_prompts) >= answered - 3
    assert resumed.judgments["status"].eq("ok").all()
    assert len(new_prompts) == len(set(new_prompts))


def test_killed_subprocess_resumes_without_repeating(store, tmp_path):
    """A run in another process killed mid-way (SIGKILL): the resume asks only for what was not answered."""
    script = tmp_path / "child.py"
    script.write_text(f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from test_judge_runner import TinyMethod, tiny_dataset, CRIT
from tests import judge_calls
from evalcore.judge.client import Endpoint
from evalcore.store import Store
judge_calls.score_dataset(tiny_dataset(10, 4), method=TinyMethod(), criteria_by_dim={{"coherence": CRIT["coherence"]}},
                     endpoint=Endpoint(sys.argv[1], "loop-model", provider="openai"), api_key="k",
                     store=Store({str(store.path)!r}), concurrency=2, run_id="tiny/killed")
""")
    with serve() as srv:
        # from its 16th request on the server holds each one unanswered: the child is killed with exactly its two
        # requests in flight (concurrency 2), both arrived; no late arrival can land after ``before``
        srv.hold(16)
        child = subprocess.Popen([sys.executable, str(script), srv.base_url])
        deadline = time.monotonic() + 300
        try:
            while srv.held < 2 and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert srv.held == 2
        finally:
            child.kill()
            child.wait()
            srv.release()
        answered = store.cache_count()
        assert 0 < answered <= 15  # the probes and the items answered before the hold (those stored by the kill)
        before = srv.requests_seen
        run = judge_calls.score_dataset(tiny_dataset(10, 4), method=TinyMethod(), criteria_by_dim={"coherence":
                                   CRIT["coherence"]}, endpoint=ep(srv), api_key="k", store=store,
                                   run_id="tiny/killed")
        assert srv.requests_seen - before == 43 - answered
    assert len(run.judgments) == 40 and run.judgments["status"].eq("ok").all()


def test_changing_one_dimensions_steps_reruns_only_that_dimension(store):
    ds = tiny_dataset()
    with serve() as srv:
        run = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), api_key=SECRET,
                                   store=store)
        before = srv.requests_seen
        edited = {**CRIT, "fluency": crit("fluency", "1. Read aloud.\n2. Count errors.")}
        run2 = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=edited, endpoint=ep(srv),
                                    api_key=SECRET, store=store, run_id=run.run_id)
        assert srv.requests_seen - before == 20  # fluency only
    assert run2.config.stats.skipped_already_done == 20
    assert len(run2.judgments) == 40  # the run shows the current version of each dimension
    assert run2.config.criteria["fluency"]["hash"] == edited["fluency"].version_hash()


def test_api_key_never_persisted_logged_or_exported(store, tmp_path, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("EVALCORE_TEST_KEY", SECRET)
    ds = tiny_dataset(2, 2)
    faults = [Fault("429", on_requests=(5,), retry_after=0.01), Fault("500", match="summary d1 by S1")]
    with serve(faults=faults) as srv:
        run = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), store=store,
                                   max_retries=1)  # key from the env var
        est = judge_calls.estimate(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), store=store)
    assert est.calls == 2  # the two items that failed with HTTP 500 are not cached: they would be asked again
    cols, rows = export_rows(store.load_run(run.run_id), ds)
    out = tmp_path / "export.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in rows))
    store.close()
    blobs = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert SECRET.encode() not in blobs
    assert SECRET not in caplog.text
    assert SECRET not in json.dumps(run.config.to_dict())
    assert any("after retries" in r["reason"] for r in rows)  # the failure path was exercised too


def test_estimate_counts_calls_tokens_and_cache(store):
    ds = tiny_dataset(3, 2)  # 6 items
    m = TinyMethod()
    est = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=Endpoint("http://127.0.0.1:9/v1", "gpt-4o"),
                          store=store, capabilities=Capabilities())
    reqs = [m.build_requests(t, CRIT[t.dimension], m.default_config())[0]
            for t in runner.build_tasks(ds, m, ["coherence", "fluency"])]
    assert est.tasks == 12 and est.calls == 12 and est.cached == 0
    assert est.prompt_tokens == sum(-(-len(r.messages[0][1]) // 4) for r in reqs)
    assert est.completion_tokens == 12 * 8
    assert est.cost_usd == pytest.approx((est.prompt_tokens * 2.50 + est.completion_tokens * 10.0) / 1e6)
    with serve() as srv:
        e = Endpoint(srv.base_url, "gpt-4o", provider="openai")
        judge_calls.score_dataset(ds, method=m, criteria_by_dim=CRIT, endpoint=e, api_key="k", store=store, limit=2)
        est2 = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=e, store=store)
    assert est2.calls == 12 - 4 and est2.cached == 4  # 2 items x 2 dims cached
    assert est2.note == ""  # probe results came from the cache


def test_capability_fallback_recorded_or_clear_failure(store):
    ds = tiny_dataset(2, 2)
    with serve(switches=Switches(no_logprobs=True)) as srv:
        run = judge_calls.score_dataset(ds, method=TinyMethod(), config={"use_logprobs": True}, criteria_by_dim=CRIT,
                                   endpoint=ep(srv), api_key="k", store=store)
        assert run.config.plan_note == "log-probs unavailable: greedy fallback"
        assert run.config.capabilities["chat_logprobs"] is False
        assert run.config.method_config["use_logprobs"] is False
        assert run.config.requested_config["use_logprobs"] is True
        with pytest.raises(UnsupportedByEndpoint, match="needs log-probs"):
            judge_calls.score_dataset(ds, method=TinyMethod(), config={"use_logprobs": True, "fallback": False},
                                 criteria_by_dim=CRIT, endpoint=ep(srv), api_key="k", store=store)


def test_pairwise_both_orders_and_pair_selection(store):
    ds = tiny_dataset(3, 4)  # 6 pairs per document
    m = TinyPairwise()
    all_tasks = runner.build_tasks(ds, m, ["coherence"])
    assert len(all_tasks) == 3 * 6 * 2
    by_pair: dict[str, set] = {}
    for t in all_tasks:
        by_pair.setdefault(t.pair_id, set()).add((t.order, t.item_first, t.item_second))
    for orders in by_pair.values():
        (o1, a1, b1), (o2, a2, b2) = sorted(orders)
        assert (o1, o2) == ("ab", "ba") and (a1, b1) == (b2, a2)
    chosen = runner.build_tasks(ds, m, ["coherence"], pairs=[("S0", "S2")])
    assert {frozenset((t.item_first.split("/")[1], t.item_second.split("/")[1])) for t in chosen} == \
        {frozenset(("S0", "S2"))} and len(chosen) == 6
    s1 = runner.build_tasks(ds, m, ["coherence"], pairs={"sample": 5, "seed": 1})
    s2 = runner.build_tasks(ds, m, ["coherence"], pairs={"sample": 5, "seed": 1})
    assert s1 == s2 and len(s1) == 10
    with serve() as srv:
        run = judge_calls.score_dataset(ds, method=m, criteria_by_dim={"coherence": CRIT["coherence"]}, endpoint=ep(srv),
                                   api_key="k", store=store, pairs={"sample": 5, "seed": 1})
    c = run.comparisons
    assert len(c) == 10 and set(c["order"]) == {"ab", "ba"} and c["status"].eq("ok").all()
    assert set(c["verdict"]) <= {"first", "second", "tie"}
    assert run.config.pairs == {"mode": "sample", "systems": [], "k": 5, "seed": 1, "annotated": None,
                                   "orders": ["ab", "ba"]}


def test_cli_score_estimate_and_export(tmp_path, monkeypatch):
    """score/export through the CLI functions on a user dataset saved in the store."""
    from evalcore.judge import cli

    db = tmp_path / "cli.db"
    st = Store(db)
    st.save_dataset(tiny_dataset(2, 2))
    import argparse

    from evalcore import registry

    registry.METHODS.load()  # the menu --method offers is the registry's: the test's method joins it for this test
    monkeypatch.setitem(registry.METHODS._items, "tiny", TinyMethod())
    p = argparse.ArgumentParser()
    cli.register(p.add_subparsers(dest="command"))
    monkeypatch.setattr(runner, "method_of", lambda m: TinyMethod() if m == "tiny" else m)
    with serve() as srv:
        base = ["--dataset", "tiny", "--dimension", "coherence", "--method", "tiny", "--model", "loop",
                "--base-url", srv.base_url, "--provider", "vllm", "--db", str(db)]
        args = p.parse_args(["score", *base, "--estimate-only", "--json"])
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert args.func(args) == 0
        assert json.loads(buf.getvalue())["calls"] == 4
        args = p.parse_args(["score", *base, "--json", "--quiet"])
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert args.func(args) == 0
        summary = json.loads(buf.getvalue())
    assert summary["judgments"] == 4 and summary["stats"]["requests"] == 4 + 3  # + the probe
    out = tmp_path / "out.csv"
    args = p.parse_args(["export", "--run", summary["run_id"], "--format", "csv", "--out", str(out), "--db", str(db)])
    assert args.func(args) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns) == cli.EXPORT_COLUMNS and len(frame) == 4
    assert set(frame["system_id"]) == {"S0", "S1"} and frame["score"].between(1, 5).all()


def test_price_table_override_and_lookup(tmp_path):
    from evalcore.judge import cost

    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"my-model": {"input": 1.0, "output": 3.0}, "gpt-4o": {"input": 5.0, "output": 15.0}}))
    table = cost.load_prices(f)
    assert cost.cost_usd(1_000_000, 1_000_000, model="my-model", prices=table) == pytest.approx(4.0)
    assert cost.cost_usd(1, 1, model="my-model-v2", prices=table) is None  # exact names only: no prefix match
    assert cost.price_for("gpt-4o-mini-2024-07-18", prices=table) == cost.PRICES["gpt-4o-mini"]  # a snapshot alias
    assert cost.price_for("gpt-4o-2024-08-06", prices=table) == {"input": 5.0, "output": 15.0}
    assert cost.price_for("unknown-model", prices=table) is None
    assert cost.cost_usd(10, 10, model="anything", provider="ollama") == 0.0
    f.write_text(json.dumps({"bad": {"input": "x"}}))
    with pytest.raises(ValueError, match="bad"):
        cost.load_prices(f)


def test_reprobe_sees_a_server_changed_behind_the_same_url(store):
    from urllib.parse import urlparse

    ds = tiny_dataset(2, 2)
    with serve() as srv:
        port = urlparse(srv.base_url).port
        run1 = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv), api_key=SECRET,
                                    store=store)
    assert run1.config.capabilities["chat_logprobs"] is True
    with serve(port=port, switches=Switches(no_logprobs=True)) as srv:
        stale = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv),
                                     api_key=SECRET, store=store, run_id=None)
        assert srv.requests_seen == 0  # everything, the probe included, came from the cache
        assert stale.config.capabilities["chat_logprobs"] is True
        fresh = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=CRIT, endpoint=ep(srv),
                                     api_key=SECRET, store=store, reprobe=True)
        assert srv.requests_seen >= 3  # the three probe requests went out again
    assert fresh.config.capabilities["chat_logprobs"] is False


# ------------------------------------------------------------------------------------------ the estimate's plan cache
def _summeval_spec(method: str = "geval", n_docs: int = 3, dims: int = 1, **kw):
    from evalcore.datasets import load_dataset
    from evalcore.judge.spec import default_spec
    from evalcore.sampling import documents_subset

    ds = load_dataset("summeval")
    ds = documents_subset(ds, list(ds.items["doc_id"].drop_duplicates().iloc[:n_docs]))
    return default_spec(ds, method, ds.dimension_names[:dims], **kw)


def _options(model: str, provider: str = "openai", **kw):
    from evalcore.judge.spec import EngineOptions

    return EngineOptions(Endpoint("https://api.openai.com/v1", model, provider=provider), **kw)


def _both(spec, options, store) -> tuple:
    """The estimate through the plan cache and built afresh, as plain values."""
    from dataclasses import asdict

    return (asdict(runner.estimate(spec, options, store=store)),
            asdict(runner.estimate(spec, options, store=store, reuse=False)))


@pytest.mark.parametrize("method,kw,options", [
    ("geval", {}, {}),
    ("geval", {"draws": 2, "max_completion_tokens": 900, "reasoning_effort": "low"}, {}),
    ("rts", {"limit": 7}, {"schedule": "as-given"}),
    ("h2h", {"pairs": {"sample": 9, "seed": 3, "orders": ["ba"]}}, {"provider": "vllm"}),
    ("mcq", {}, {"capabilities": Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=False)}),
])
def test_the_cached_estimate_is_the_one_built_afresh_for_every_model(store, method, kw, options):
    """Several plans, each estimated for three models in turn: the estimate through the plan cache (built for the
    first model, reused for the others) equals the one built from scratch, to the last token and cent."""
    runner.PLAN_CACHE.clear()
    provider = options.pop("provider", "openai")
    spec = _summeval_spec(method, dims=2 if method == "geval" else 1, **kw)
    for model in ("gpt-4o-mini", "gpt-4o", "some-unpriced-model"):
        cached, afresh = _both(spec, _options(model, provider, **options), store)
        assert cached == afresh and cached["requests"] > 0


def test_the_cached_estimate_counts_cache_hits_duplicates_and_a_learned_contract_as_before(store):
    """Duplicate outputs, replies an earlier run left in the cache, and a model whose endpoint refused a parameter
    (its requests are shaped otherwise: another plan): the cached estimate still equals the one built afresh."""
    from evalcore.judge.contract import DEFAULT_ONLY, RENAME, Rule
    from evalcore.store import request_key

    ds = tiny_dataset(3, 3)
    items = ds.items.copy()
    items.loc[items["doc_id"] == "d0", "output"] = "the same summary of d0"
    ds = replace(ds, items=items)
    with serve() as srv:  # an earlier run scored d1: its items are cache hits now
        judge_calls.score_dataset(replace(ds, items=items[items["doc_id"] == "d1"]), method=TinyMethod(),
                                  criteria_by_dim=CRIT, endpoint=ep(srv), api_key=SECRET, store=store)
        e = ep(srv)
        caps = Capabilities(chat_logprobs=True, top_logprobs=5)
        m = TinyMethod()
        cached = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=e, store=store, capabilities=caps)
        afresh = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=e, store=store, capabilities=caps,
                                      reuse=False)
    assert cached == afresh
    assert (cached.requests, cached.duplicates, cached.cache_hits) == (18, 4, 6)
    strict = replace(e, model="strict-model")
    for rule in (Rule("max_tokens", RENAME, "max_completion_tokens", ""), Rule("temperature", DEFAULT_ONLY, 1.0, "")):
        store.remember_contract_rule(request_key(strict.identity(), {"kind": "contract", "param": rule.param}),
                                     endpoint=strict.identity(), rule=rule.as_dict())
    cached = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=strict, store=store, capabilities=caps)
    afresh = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=strict, store=store,
                                  capabilities=caps, reuse=False)
    assert cached == afresh and cached.cache_hits == 0


class _Spy:
    """Counts the calls of a function it stands in for."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *a, **kw):
        self.calls += 1
        return self.fn(*a, **kw)


def test_a_new_model_name_only_prices_the_plan_it_does_not_build_it_again(store, monkeypatch):
    """The Score page estimates again whenever the model's name changes: the plan's tasks and requests are built
    for the first model only; a changed criterion, limit or dataset text is another plan, built again."""
    from evalcore.methods import METHODS

    runner.PLAN_CACHE.clear()
    tasks = _Spy(runner.build_tasks)
    monkeypatch.setattr(runner, "build_tasks", tasks)
    geval = METHODS["geval"]
    requests = _Spy(geval.build_requests)
    monkeypatch.setattr(geval, "build_requests", requests)
    spec = _summeval_spec("geval")
    first = runner.estimate(spec, _options("gpt-4o-mini"), store=store)
    built = requests.calls
    assert tasks.calls == 1 and built == first.tasks > 0  # each task's requests built once, not twice
    for model in ("gpt-4o", "gpt-4.1", "gpt-4.1-mini", "my-own-model"):
        runner.estimate(spec, _options(model), store=store)
    assert (tasks.calls, requests.calls) == (1, built)
    runner.estimate(replace(spec, limit=5), _options("gpt-4o"), store=store)
    dim = spec.dimensions[0]
    runner.estimate(replace(spec, criteria={dim: replace(spec.criteria[dim], steps="1. Read it twice.")}),
                    _options("gpt-4o"), store=store)
    items = spec.dataset.items.copy()
    items.iloc[0, items.columns.get_loc("output")] = "another summary"
    runner.estimate(replace(spec, dataset=replace(spec.dataset, items=items)), _options("gpt-4o"), store=store)
    assert tasks.calls == 4  # each of the three changes is a plan of its own
    runner.estimate(spec, _options("gpt-4o"), store=store, reuse=False)
    assert tasks.calls == 5 and requests.calls > built + 2 * first.tasks  # built afresh: twice per task
    counted = _Spy(runner._tasks_per_document)
    monkeypatch.setattr(runner, "_tasks_per_document", counted)
    assert runner.count_requests(spec) == runner.count_requests(spec) == first.requests
    assert counted.calls == 1  # the page counts the plan again on every change of the model: counted once


def test_a_plans_keys_are_the_stores_request_keys():
    from evalcore.store import request_key
    from evalcore.types import CompletionRequest

    reqs = (ChatRequest(messages=(("system", "Évaluez « ce résumé »"), ("user", "текст 1")), seed=3, stop=("\n",)),
            CompletionRequest(prompt="The quick fox", max_tokens=0, draw=2))
    plan = runner.PlanRequests(1, 2, reqs, tuple(runner.canonical_json(r.params()) for r in reqs), ((0, 0), (0, 0)))
    for identity in ({"provider": "openai", "base_url": "https://api.openai.com/v1", "model": "gpt-4o"},
                     {"provider": "azure", "base_url": "https://x.openai.azure.com", "model": "dép", "api_version": "1"}):
        assert plan.keys(identity) == [request_key(identity, r.params()) for r in reqs]


def test_the_plan_cache_keeps_a_bounded_number_of_requests():
    cache = runner._PlanCache(max_requests=10)

    def plan(n):
        reqs = tuple(ChatRequest(messages=(("user", f"prompt {i} of {n}"),)) for i in range(n))
        return lambda: runner.PlanRequests(n, n, reqs, tuple(str(i) for i in range(n)),
                                           tuple(runner.request_tokens(r) for r in reqs))

    a = cache.get(("a",), plan(4))
    assert cache.get(("a",), plan(4)) is a  # kept
    cache.get(("b",), plan(5))
    cache.get(("a",), plan(4))  # a used last: b goes first
    cache.get(("c",), plan(3))
    assert cache.get(("a",), plan(4)) is a and list(cache._plans) == [("c",), ("a",)]
    big = plan(11)
    assert cache.get(("d",), big) is not cache.get(("d",), big)  # over the bound: built each time, never kept
