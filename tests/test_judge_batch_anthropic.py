"""Anthropic's Message Batches (evalcore.judge.batch_anthropic) against the loopback's native batch service
(evalcore.testing.loopback_anthropic) under Anthropic's OpenAI-compatibility contract: the same submit / status /
collect / cancel / resume as the OpenAI Batch API, the same key trust rules, and replies stored under the online
cache keys (a later online run sends nothing and scores the same)."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest

from evalcore.judge import batch, runner, trust
from evalcore.judge.batch_anthropic import ROUTE, chat_line, message_params
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions
from evalcore.spec import ScoringSpec
from evalcore.store import Store
from evalcore.testing.clock import SteppedClock
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_profiles import PROFILES
from evalcore.types import ChatRequest
from tests.test_judge_batch import CRIT, tiny_dataset

# skipped without the anthropic package, which is looked up, not imported: importing it takes about 3 s, which every
# collection (each xdist worker's) would pay; evalcore.judge.batch_anthropic imports it only when a batch is sent
pytestmark = pytest.mark.skipif(importlib.util.find_spec("anthropic") is None, reason="the anthropic package is missing")

KEY = "sk-ant-test-0123456789abcdef"


def _ep(srv) -> Endpoint:
    return Endpoint(srv.base_url, "claude-judge", api_key_env="ANTHROPIC_API_KEY", provider="anthropic",
                    operator_configured=True)


def test_requests_are_translated_as_the_compatibility_layer_documents():
    ep = Endpoint("https://api.anthropic.com/v1", "claude-x", provider="anthropic")
    req = ChatRequest(messages=(("system", "Be brief."), ("user", "Rate it.")), temperature=1.7, max_tokens=9,
                      logprobs=True, top_logprobs=20, seed=3)
    assert message_params(ep, req) == {"model": "claude-x", "max_tokens": 9, "system": "Be brief.",
                                       "messages": [{"role": "user", "content": "Rate it."}], "temperature": 1.0}
    with pytest.raises(ValueError, match="n must be 1"):
        message_params(ep, dataclasses.replace(req, n=2))
    line = chat_line("k", {"type": "succeeded", "message": {
        "content": [{"type": "thinking", "thinking": "Score: 1?"}, {"type": "text", "text": "Score: 4"}],
        "stop_reason": "max_tokens", "usage": {"input_tokens": 5, "output_tokens": 2}}})
    choice = line["response"]["body"]["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Score: 4", "reasoning_content": "Score: 1?"}
    assert choice["finish_reason"] == "length"
    assert chat_line("k", {"type": "expired"})["error"]["code"] == "batch_expired"


def test_message_batches_score_what_the_online_run_scores_under_its_cache_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    ds, store = tiny_dataset(), Store(tmp_path / "a.db")
    spec = ScoringSpec(ds, "rts", ["coherence"], CRIT)
    with serve(profile=PROFILES["anthropic-openai-compat"]) as srv:
        col = batch.score_dataset_batch(spec, EngineOptions(endpoint=_ep(srv)), store=store, poll_s=0.02)
        assert srv.by_path.get("/v1/chat/completions", 0) == 0  # nothing online, not even a probe
        assert {b["route"] for b in batch.batch_rows(store, col.run.run_id)} == {ROUTE}
        assert col.run.judgments["status"].eq("ok").all() and len(col.run.judgments) == 12
        online = runner.score_dataset(dataclasses.replace(spec, run_id=None), EngineOptions(endpoint=_ep(srv)),
                                      store=store)
        fresh = runner.score_dataset(dataclasses.replace(spec, run_id=None), EngineOptions(endpoint=_ep(srv)),
                                     store=Store(tmp_path / "fresh.db"))
    assert online.config["stats"]["requests"] == online.config["stats"]["probe_requests"]
    by = lambda r: r.judgments.set_index("item_id")["value"].sort_index()  # noqa: E731
    assert by(col.run).equals(by(online)) and by(col.run).equals(by(fresh))


def test_cancel_then_resume_sends_only_what_was_not_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    ds, store = tiny_dataset(), Store(tmp_path / "c.db")
    spec = ScoringSpec(ds, "rts", ["coherence"], CRIT)
    clock = SteppedClock()  # the loopback answers a request each 0.05 s of this clock: two, then the cancel
    with serve(profile=PROFILES["anthropic-openai-compat"]) as srv:
        srv.anthropic_batches.line_delay_s = 0.05
        srv.anthropic_batches.sleep = clock.sleep
        sub = batch.submit(spec, EngineOptions(endpoint=_ep(srv)), store=store)
        clock.wait_sleeps(1)
        for n in (2, 3):  # requests 1 and 2 answered; the 3rd waits
            clock.advance(0.05)
            clock.wait_sleeps(n)
        # a recorded URL is confirmed by naming it again (as the CLI's --base-url does) before the key goes there
        batch.cancel(sub.run_id, store=store, confirmed_base_url=srv.base_url)
        clock.run_freely()
        col = batch.collect(sub.run_id, store=store, poll_s=0.02, confirmed_base_url=srv.base_url, dataset=ds)
        failed = col.run.judgments[col.run.judgments["status"] != "ok"]
        assert len(failed) == 10 and failed["reason"].str.startswith("batch cancelled").all()
        answered = srv.requests_seen
        srv.anthropic_batches.line_delay_s = 0.0
        again = batch.submit(dataclasses.replace(spec, run_id=sub.run_id), EngineOptions(endpoint=_ep(srv)),
                             store=store)
        assert again.requests == len(failed)  # only what the cancelled batch did not run
        done = batch.collect(sub.run_id, store=store, poll_s=0.02, confirmed_base_url=srv.base_url, dataset=ds)
        assert srv.requests_seen - answered == len(failed)
    assert done.run.judgments["status"].eq("ok").all()


def test_the_servers_key_goes_only_to_a_trusted_anthropic_endpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    ds = tiny_dataset()
    with serve(profile=PROFILES["anthropic-openai-compat"]) as srv:
        untrusted = dataclasses.replace(_ep(srv), operator_configured=False)
        with pytest.raises(trust.UntrustedEndpoint):
            batch.submit(ScoringSpec(ds, "rts", ["coherence"], CRIT), EngineOptions(endpoint=untrusted),
                         store=Store(tmp_path / "t.db"))
        assert srv.by_path.get("/v1/messages/batches", 0) == 0


def test_a_batch_cancelled_before_any_line_ran_is_collected_as_failures_not_a_broken_endpoint(tmp_path, monkeypatch):
    """Every line 'batch cancelled: request not run': the results of a finished batch say nothing of the endpoint's
    health, so collecting them records each failure and does not stop the run as if the endpoint were down."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    ds, store = tiny_dataset(), Store(tmp_path / "c0.db")
    spec = ScoringSpec(ds, "rts", ["coherence"], CRIT)
    clock = SteppedClock()  # the first line waits on this clock until after the cancel: no line runs before it
    with serve(profile=PROFILES["anthropic-openai-compat"]) as srv:
        srv.anthropic_batches.line_delay_s = 0.05
        srv.anthropic_batches.sleep = clock.sleep
        sub = batch.submit(spec, EngineOptions(endpoint=_ep(srv)), store=store)
        clock.wait_sleeps(1)  # the batch is processing, its first line not yet run
        batch.cancel(sub.run_id, store=store, confirmed_base_url=srv.base_url)
        clock.run_freely()
        col = batch.collect(sub.run_id, store=store, poll_s=0.02, confirmed_base_url=srv.base_url, dataset=ds)
        assert srv.requests_seen == 0  # not one line was answered
    j = col.run.judgments
    assert len(j) == len(ds.items) and j["reason"].str.startswith("batch cancelled").all()
