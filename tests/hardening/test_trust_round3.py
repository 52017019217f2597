"""The server's key, third red-team round: a URL the trust rule and the HTTP client read differently, the operator's
own configuration as input, redirects, and the command line's batch path (evalcore.judge.trust, JudgeClient).

Each case runs against ``Attacker``, a raw listener that records every byte, with a canary key in the environment:
the canary must never reach it."""

from __future__ import annotations

import asyncio
import string

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.judge import runner, trust
from evalcore.judge.client import Endpoint, JudgeClient, RequestFailed
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.sink import Attacker, Redirector
from evalcore.types import ChatRequest

from _judging import CAPS, CRITERIA, OneShot, dataset
from tests import judge_calls

CANARY = "sk-canary-server-key-round3-0123456789"


@pytest.fixture
def server_key(monkeypatch, tmp_path):
    for k in ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", trust.ALLOWED_ENV):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    return Store(tmp_path / "judge.db")


def _port_forms(port: int) -> list[str]:
    """The same port as urllib refuses it and Python's int() (the HTTP client's reading) accepts it."""
    digits = str(port)
    fullwidth = "".join(chr(0xFF10 + int(d)) for d in digits)
    arabic_indic = "".join(chr(0x0660 + int(d)) for d in digits)
    return [f"{digits[:2]}_{digits[2:]}", f"+{digits}", f" {digits}", f"{digits} ", fullwidth, arabic_indic]


# ---------------------------------------------------------------------------------------------------- item 1
@pytest.mark.parametrize("form", range(6))
def test_a_port_written_for_int_but_not_urllib_gets_no_key(server_key, monkeypatch, form):
    """The allow-listed endpoint has no explicit port (``http://127.0.0.1/v1``); before the fix, ``normalize``
    dropped a port urllib could not parse, so ``http://127.0.0.1:86_32/v1`` compared equal to it while the client
    connected to 8632 with the server's key."""
    monkeypatch.setenv(trust.ALLOWED_ENV, "http://127.0.0.1/v1")
    with Attacker() as bad:
        url = f"http://127.0.0.1:{_port_forms(bad.port)[form]}/v1"
        assert not trust.server_key_allowed(url, "OPENAI_API_KEY")
        with pytest.raises(trust.AmbiguousURL, match="refused"):
            JudgeClient(Endpoint(url, "m"))
        with pytest.raises(trust.AmbiguousURL):  # a typed key does not make the address unambiguous
            JudgeClient(Endpoint(url, "m"), api_key="typed-key")
        ds = dataset(2)
        server_key.save_dataset(ds)
        with pytest.raises(trust.UntrustedEndpoint):
            judge_calls.score_dataset(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=Endpoint(url, "m"),
                                      store=server_key, capabilities=CAPS)
        with pytest.raises(trust.UntrustedEndpoint):
            runner.generate_steps(CRITERIA["coherence"], endpoint=Endpoint(url, "m"), store=server_key,
                                  dataset_id=ds.id)
        with pytest.raises(trust.UntrustedEndpoint):
            judge_calls.submit(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=Endpoint(url, "m"),
                               store=server_key, capabilities=CAPS)
        assert bad.connections == 0 and CANARY.encode() not in bad.seen


def test_the_refusal_says_why_and_never_repeats_a_secret():
    msg = trust.refusal("http://user:sk-secret-in-url-123456@127.0.0.1:86_32/v1", "OPENAI_API_KEY")
    assert "refused" in msg and "sk-secret-in-url" not in msg and "$OPENAI_API_KEY" in msg
    assert trust.host_of("http://127.0.0.1:86_32/v1") == "?"


# The differential fuzzer: URL forms built from the pieces that parsers disagree on. Whatever the trust rule
# accepts, the openai client must read as the same scheme, host, port and path, both from the URL as typed and from
# the canonical URL the client is actually given.
_SCHEMES = st.sampled_from(["http", "https", "HTTP", "hTTps", "ftp", ""])
_HOSTS = st.sampled_from(["127.0.0.1", "localhost", "LLM.Lab", "llm.lab.", "[::1]", "[::ffff:127.0.0.1]", "127.1",
                          "0x7f.0.0.1", "127.0.0.%31", "h_st", "a@b", "evil\\@good", "xn--bcher-kva.example", ""])
_PORT_CHARS = st.sampled_from(list(string.digits) + ["_", "+", "-", " ", "\t", "\uff18", "\u0668", "\u00b2", "x"])
_PATHS = st.sampled_from(["", "/", "/v1", "/v1/", "/v1/../x", "/%2e%2e/v1", "/v1?x=1", "/v1#f", "//v1", "/v 1",
                          "/\u00e9", ";p"])


@st.composite
def url_forms(draw):
    scheme = draw(_SCHEMES)
    user = draw(st.sampled_from(["", "u@", "u:p@", ":@"]))
    host = draw(_HOSTS)
    port = draw(st.one_of(st.none(), st.text(_PORT_CHARS, min_size=0, max_size=6),
                          st.integers(0, 70000).map(str)))
    sep = draw(st.sampled_from(["://", ":/", ":", "//"]))
    return f"{scheme}{sep}{user}{host}{'' if port is None else ':' + port}{draw(_PATHS)}"


def _client_reading(url: str) -> tuple[str, str, int | None, str]:
    u = openai.AsyncOpenAI(api_key="x", base_url=url).base_url
    default = {"http": 80, "https": 443}.get(u.scheme)
    port = None if u.port in (None, default) else u.port
    return u.scheme, u.host, port, u.raw_path.decode().split("?")[0].rstrip("/")


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url_forms())
def test_differential_what_trust_accepts_the_client_reads_the_same(url):
    try:
        addr = trust.address(url)
    except trust.AmbiguousURL:
        return
    mine = (addr.scheme, addr.host, addr.port, addr.path.rstrip("/"))
    # surrounding whitespace is trimmed (as a typed field is), and the client is given the canonical URL anyway
    assert _client_reading(url.strip()) == mine, url
    assert _client_reading(trust.canonical_base_url(url)) == mine, url


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://localhost/v1/",
                                 "http://[::1]:8080/v1", "https://r.openai.azure.com", "http://gpu-2.lab:80/v1"])
def test_ordinary_urls_are_accepted_as_written(url):
    addr = trust.address(url)
    assert _client_reading(url) == (addr.scheme, addr.host, addr.port, addr.path.rstrip("/"))


# ---------------------------------------------------------------------------------------------------- item 2
def test_operator_urls_with_credentials_are_ignored_and_reported(monkeypatch):
    env = {"OPENAI_BASE_URL": "http://ops:sk-canary-in-env-url-999@127.0.0.1:9/v1",
           trust.ALLOWED_ENV: "http://good:1/v1, http://u:pw@bad:2/v1, http://127.0.0.1:86_32/v1"}
    assert trust.allowed_for("OPENAI_API_KEY", env) == frozenset({"http://good:1/v1"})
    problems = trust.configuration_problems(env)
    assert len(problems) == 3
    assert all("ignored" in p for p in problems)
    assert not any("sk-canary-in-env-url" in p or ":pw@" in p for p in problems)
    # a credentials-bearing $OPENAI_BASE_URL does not make the OpenAI default trusted either
    assert not trust.server_key_allowed("https://api.openai.com/v1", "OPENAI_API_KEY", env)


def test_a_replica_gets_the_server_key_only_when_itself_configured(server_key, monkeypatch):
    """The endpoint's replicas are judged one by one: the first is configured, the replica is a stranger's."""
    from evalcore.judge.routing import EndpointPool

    with serve() as srv, Attacker() as bad:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        with pytest.raises(trust.UntrustedEndpoint):
            EndpointPool([Endpoint(srv.base_url, "m"), Endpoint(bad.base_url, "m")])
        assert bad.connections == 0


def test_the_score_page_never_uses_a_secret_from_the_operators_base_url():
    """The page used to lift user:password@ out of $OPENAI_BASE_URL and send it as a typed key (to replicas too)."""
    from pathlib import Path

    shared = (Path(__file__).resolve().parents[2] / "pages" / "_shared.py").read_text()
    assert "env_secret" not in shared


# ---------------------------------------------------------------------------------------------------- item 3
@pytest.mark.parametrize("status", [307, 308, 302])
def test_a_redirect_is_not_followed_and_the_failure_names_it(server_key, status):
    with Attacker() as bad, Redirector(bad.base_url + "/chat/completions", status) as hop:
        client = JudgeClient(Endpoint(hop.base_url, "m"), api_key="typed-key", max_retries=0)
        req = ChatRequest(messages=(("user", "private dataset text 4711"),), max_tokens=1)

        async def go():
            try:
                return await client.send(req)
            finally:
                await client.aclose()

        with pytest.raises(RequestFailed, match=rf"HTTP {status}: the endpoint redirected this request to "
                                                rf"127\.0\.0\.1:{bad.port}.*not followed"):
            asyncio.run(go())
        assert hop.connections == 1 and b"POST /v1/chat/completions" in hop.seen
        assert bad.connections == 0 and bad.seen == b""


# ---------------------------------------------------------------------------------------------------- item 13
def test_score_batch_from_the_command_line_uses_the_operators_own_endpoint(server_key, capsys):
    """`score --batch --base-url URL`: the command line is the operator's, so its endpoint gets the server's key
    (the synchronous path always did; the batch path refused it)."""
    from evalcore.cli import main

    ds = dataset(3)
    server_key.save_dataset(ds)
    server_key.close()
    for wait in (["--no-wait"], ["--poll", "0.05"]):
        with serve() as srv:
            code = main(["score", "--dataset", ds.id, "--method", "geval", "--dimension", "coherence", "--model",
                         "m", "--base-url", srv.base_url, "--batch", *wait, "--json", "--db", str(server_key.path),
                         "--label", f"batch-{len(wait)}"])
            err = capsys.readouterr().err
            assert code == 0, err
            assert "not an endpoint this server's operator configured" not in err
