"""The server's key goes only to endpoints its operator configured (evalcore.judge.trust; issue 21, item 1).

Every path that opens a connection (scoring, step generation, batch submit, batch status/collect/cancel) goes
through ``JudgeClient``, which picks the key: each path is tried against ``Attacker``, a raw listener that records
every byte, with a canary key in the environment. The pages and links are tried in a real browser in
tests/browser/test_hardening_e2e.py."""

from __future__ import annotations

import json

import pytest

from evalcore.judge import batch, runner, trust
from evalcore.judge.client import Endpoint, JudgeClient
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.sink import Attacker

from _judging import CAPS, CRITERIA, OneShot, dataset
from tests import judge_calls

CANARY = "sk-canary-server-key-0123456789"


@pytest.fixture
def server_key(monkeypatch, tmp_path):
    for k in ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", trust.ALLOWED_ENV):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    return Store(tmp_path / "judge.db")


@pytest.mark.parametrize("url,normal", [
    ("HTTPS://API.OpenAI.com:443/v1/", "https://api.openai.com/v1"),
    ("http://127.0.0.1:80/v1", "http://127.0.0.1/v1"),
    ("http://alice:pw@Host:8000/v1?x=1#f", "http://host:8000/v1"),
    ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
])
def test_normalize(url, normal):
    assert trust.normalize(url) == normal


@pytest.mark.parametrize("env,url,key_env,allowed", [
    ({}, "https://api.openai.com/v1", "OPENAI_API_KEY", True),  # the OpenAI client's own default
    ({}, "https://api.openai.com/v1.evil.example", "OPENAI_API_KEY", False),
    ({}, "https://api.openai.com/v1/../x", "OPENAI_API_KEY", False),
    ({}, "http://attacker.example/v1", "OPENAI_API_KEY", False),
    ({"OPENAI_BASE_URL": "http://gpu1:8000/v1"}, "http://gpu1:8000/v1/", "OPENAI_API_KEY", True),
    ({"OPENAI_BASE_URL": "http://gpu1:8000/v1"}, "https://api.openai.com/v1", "OPENAI_API_KEY", False),
    ({trust.ALLOWED_ENV: "http://a:1/v1, http://b:2/v1"}, "http://b:2/v1", "OPENAI_API_KEY", True),
    ({trust.ALLOWED_ENV: "http://a:1/v1"}, "http://a:1/v2", "OPENAI_API_KEY", False),
    ({"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"}, "https://r.openai.azure.com/", "AZURE_OPENAI_API_KEY",
     True),
    ({}, "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY", False),
    ({}, "http://localhost:8000/v1", "VLLM_API_KEY", True),
    ({}, "http://localhost:8000/v1", "OPENAI_API_KEY", False),  # a local preset's address is not the OpenAI key's
    ({}, "http://elsewhere:8000/v1", "VLLM_API_KEY", False),
])
def test_server_key_allowed(env, url, key_env, allowed):
    assert trust.server_key_allowed(url, key_env, env) is allowed


def test_client_refuses_the_server_key_for_an_unconfigured_host(server_key):
    with Attacker() as bad:
        with pytest.raises(trust.UntrustedEndpoint, match=r"127\.0\.0\.1:\d+ is not an endpoint .* configured"):
            JudgeClient(Endpoint(bad.base_url, "m"))
        assert bad.connections == 0 and bad.seen == b""


def test_typed_key_and_operator_endpoints_are_used(server_key, monkeypatch):
    """A key the user typed goes to the host it was typed for; the server's key to a configured one."""
    assert JudgeClient(Endpoint("http://127.0.0.1:9/v1", "m"), api_key="typed")._api_key == "typed"
    monkeypatch.setenv(trust.ALLOWED_ENV, "http://127.0.0.1:9/v1")
    assert JudgeClient(Endpoint("http://127.0.0.1:9/v1/", "m"))._api_key == CANARY
    op = Endpoint("http://127.0.0.1:10/v1", "m", operator_configured=True)  # the command line's own --base-url
    assert JudgeClient(op)._api_key == CANARY
    assert op == Endpoint("http://127.0.0.1:10/v1", "m") and "operator" not in repr(op)  # not identity, not shown


def test_local_preset_elsewhere_gets_no_server_key(monkeypatch, server_key):
    monkeypatch.setenv("VLLM_API_KEY", "vllm-canary")
    ep = Endpoint("http://127.0.0.1:9/v1", "m", api_key_env="VLLM_API_KEY", provider="vllm")
    assert JudgeClient(ep)._api_key == "not-needed"


def test_the_page_says_the_clients_own_decision(server_key):
    """The Score page's "requests go to ... with ..." line and its refusals are client.key_source, the decision
    JudgeClient makes: an endpoint the command line named (operator_configured) gets the server's key on both."""
    from evalcore.judge.client import key_for, key_source

    op = Endpoint("http://127.0.0.1:10/v1", "m", operator_configured=True)
    assert key_for(op, None) == CANARY
    assert key_source(op, None, shared=False) == ("with the server's $OPENAI_API_KEY: an endpoint the operator "
                                                  "configured", None)
    source, refused = key_source(Endpoint("http://127.0.0.1:10/v1", "m"), None, shared=False)
    assert source == "" and "is not an endpoint" in refused
    assert key_source(Endpoint("http://127.0.0.1:10/v1", "m"), "typed", shared=True)[1] is None
    local = Endpoint("http://127.0.0.1:9/v1", "m", api_key_env="VLLM_API_KEY", provider="vllm")
    assert key_source(local, None, shared=False) == ("a local server: no key is sent", None)
    source, refused = key_source(local, None, shared=True)  # a local preset elsewhere, on a lab server
    assert source == "" and "a local preset (vllm) sends only to" in refused
    with pytest.raises(trust.UntrustedEndpoint, match="a local preset"):
        key_for(local, None, shared=True)


def test_scoring_steps_and_batch_submit_never_reach_the_host(server_key):
    ds = dataset(4)
    server_key.save_dataset(ds)
    with Attacker() as bad:
        ep = Endpoint(bad.base_url, "m")
        with pytest.raises(trust.UntrustedEndpoint):
            judge_calls.score_dataset(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=ep, store=server_key,
                                 capabilities=CAPS)
        with pytest.raises(trust.UntrustedEndpoint):
            runner.generate_steps(CRITERIA["coherence"], endpoint=ep, store=server_key, dataset_id=ds.id)
        with pytest.raises(trust.UntrustedEndpoint):
            judge_calls.submit(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=ep, store=server_key,
                         capabilities=CAPS)
        assert bad.connections == 0 and CANARY.encode() not in bad.seen


def test_batch_collect_of_a_run_recorded_at_a_hostile_host_is_refused(server_key, monkeypatch, tmp_path):
    """A run whose batches were submitted (with another user's own key) to a host the operator never configured:
    status, collect and cancel from this server refuse to send the server's key there."""
    ds = dataset(3)
    server_key.save_dataset(ds)
    with serve() as srv:
        sub = judge_calls.submit(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=Endpoint(srv.base_url, "m"),
                           api_key="attackers-own-key", store=server_key, capabilities=CAPS)
    with pytest.raises(trust.UntrustedEndpoint):
        batch.collect(sub.run_id, store=server_key, wait=False)
    with pytest.raises(trust.UntrustedEndpoint):
        batch.status(sub.run_id, store=server_key)
    with pytest.raises(trust.UntrustedEndpoint):
        batch.cancel(sub.run_id, store=server_key)


def test_a_typed_key_is_not_sent_to_another_recorded_endpoint():
    assert trust.typed_key_elsewhere("http://host:1/v1/", "http://HOST:1/v1") is None
    assert trust.typed_key_elsewhere("http://evil:1/v1", None) is None  # no key typed: the server's rule applies
    msg = trust.typed_key_elsewhere("http://evil:1/v1", "https://api.openai.com/v1")
    assert msg.startswith("This run's endpoint is evil:1, and the key you typed is for api.openai.com")


def test_batch_cli_sends_the_server_key_to_a_recorded_endpoint_only_when_named_again(server_key, capsys):
    from evalcore.cli import main

    ds = dataset(3)
    server_key.save_dataset(ds)
    with serve() as srv:
        sub = judge_calls.submit(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=Endpoint(srv.base_url, "m"),
                           api_key="own-key", store=server_key, capabilities=CAPS)
        db = str(server_key.path)
        assert main(["batch", "status", sub.run_id, "--db", db]) == 2
        assert "is not an endpoint this server's operator configured" in capsys.readouterr().err
        assert main(["batch", "status", sub.run_id, "--db", db, "--base-url", "http://127.0.0.1:1/v1"]) == 2
        capsys.readouterr()
        assert main(["batch", "status", sub.run_id, "--db", db, "--base-url", srv.base_url + "/", "--json"]) == 0
        assert sub.batch_ids[0] in capsys.readouterr().out


def test_a_key_echoed_in_a_batchs_errors_is_stored_redacted(server_key, capsys):
    """Issue 21, item 5: a server that repeats the caller's key in a failed batch's errors; neither the store, nor
    `batch status --json`, nor the Score page's table (it shows the stored text) carry it."""
    from evalcore.cli import main
    from evalcore.judge.redact import MASK
    from evalcore.testing.loopback import BatchSwitches

    ds = dataset(3)
    server_key.save_dataset(ds)
    typed = "sk-typed-visitor-key-abcdef123456"
    with serve(batch=BatchSwitches(echo_key=True)) as srv:
        sub = judge_calls.submit(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=Endpoint(srv.base_url, "m"),
                           api_key=typed, store=server_key, capabilities=CAPS)
        st = batch.status(sub.run_id, store=server_key, api_key=typed)
        assert st.batches[0]["status"] == "failed" and MASK in st.batches[0]["errors"]
        server_key.close()
        assert main(["batch", "status", sub.run_id, "--db", str(server_key.path), "--json",
                     "--base-url", srv.base_url]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["batches"][0]["errors"] == json.dumps([f"rejected Bearer {MASK}"])
    assert typed not in out.out + out.err
    assert typed.encode() not in b"".join(p.read_bytes() for p in server_key.path.parent.glob("judge.db*"))
