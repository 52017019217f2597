"""The server's key and the provider presets of 2026 (Anthropic, Gemini, OpenRouter, a LiteLLM proxy) and
Anthropic's Message Batches: each preset's key variable goes to its documented address only, never to a host the
operator did not configure, on every path (online scoring, check-judge, Message Batches submit / status / collect /
cancel), and a Message Batch's results are never fetched from another host than the endpoint's."""

from __future__ import annotations

import dataclasses

import pytest

from evalcore.judge import batch, trust
from evalcore.judge.check import check_judge
from evalcore.judge.client import PRESETS, JudgeClient
from evalcore.judge.spec import EngineOptions
from evalcore.spec import ScoringSpec
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_profiles import PROFILES
from evalcore.testing.sink import Attacker

from _judging import CRITERIA, dataset

CANARY = "sk-canary-preset-key-0123456789"
NEW = ("anthropic", "gemini", "openrouter", "litellm")


@pytest.fixture
def preset_keys(monkeypatch, tmp_path):
    monkeypatch.delenv(trust.ALLOWED_ENV, raising=False)
    for name in NEW:
        monkeypatch.setenv(PRESETS[name].api_key_env, CANARY)
    return Store(tmp_path / "judge.db")


@pytest.mark.parametrize("name", NEW)
def test_each_preset_key_goes_to_its_documented_address_only(name, preset_keys):
    ep = dataclasses.replace(PRESETS[name], model="m")
    assert trust.server_key_allowed(ep.base_url, ep.api_key_env, {})
    JudgeClient(ep)  # the documented address: allowed without configuration
    with Attacker() as bad:
        hostile = dataclasses.replace(ep, base_url=bad.base_url)
        with pytest.raises(trust.UntrustedEndpoint):
            JudgeClient(hostile)
        with pytest.raises(trust.UntrustedEndpoint):
            check_judge(hostile, store=preset_keys)
        assert bad.connections == 0 and CANARY.encode() not in bad.seen
    JudgeClient(dataclasses.replace(ep, base_url="https://elsewhere.example/v1"), api_key="users-own-key")


def test_message_batches_never_send_the_key_to_an_unconfigured_host(preset_keys):
    pytest.importorskip("anthropic")
    ds = dataset(3)
    preset_keys.save_dataset(ds)
    spec = ScoringSpec(ds, "rts", ["coherence"], CRITERIA)
    with Attacker() as bad:
        ep = dataclasses.replace(PRESETS["anthropic"], model="claude", base_url=bad.base_url)
        with pytest.raises(trust.UntrustedEndpoint):
            batch.submit(spec, EngineOptions(endpoint=ep), store=preset_keys)
        assert bad.connections == 0 and CANARY.encode() not in bad.seen


def test_a_run_recorded_at_a_hostile_host_is_not_polled_with_the_key(preset_keys):
    """Batches submitted (with someone's own key) to a host the operator never configured: status, collect and
    cancel from this server refuse to send the server's key there."""
    pytest.importorskip("anthropic")
    ds = dataset(3)
    preset_keys.save_dataset(ds)
    with serve(profile=PROFILES["anthropic-openai-compat"]) as srv:
        ep = dataclasses.replace(PRESETS["anthropic"], model="claude", base_url=srv.base_url)
        sub = batch.submit(ScoringSpec(ds, "rts", ["coherence"], CRITERIA), EngineOptions(endpoint=ep,
                                                                                         api_key="own-key"),
                           store=preset_keys)
        seen = srv.requests_seen
        for call in (batch.status, batch.cancel):
            with pytest.raises(trust.UntrustedEndpoint):
                call(sub.run_id, store=preset_keys)
        with pytest.raises(trust.UntrustedEndpoint):
            batch.collect(sub.run_id, store=preset_keys, wait=False)
        assert srv.requests_seen == seen


def test_results_on_another_host_are_not_fetched(preset_keys):
    pytest.importorskip("anthropic")
    ds = dataset(3)
    preset_keys.save_dataset(ds)
    with serve(profile=PROFILES["anthropic-openai-compat"]) as srv, Attacker() as bad:
        srv.anthropic_batches.results_base = bad.base_url.removesuffix("/v1")
        ep = dataclasses.replace(PRESETS["anthropic"], model="claude", base_url=srv.base_url, operator_configured=True)
        sub = batch.submit(ScoringSpec(ds, "rts", ["coherence"], CRITERIA), EngineOptions(endpoint=ep),
                           store=preset_keys)
        with pytest.raises(RuntimeError, match="another host"):
            batch.collect(sub.run_id, store=preset_keys, poll_s=0.02, confirmed_base_url=srv.base_url, dataset=ds)
        assert bad.connections == 0 and CANARY.encode() not in bad.seen
