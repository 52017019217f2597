"""The loopback test double and the client against it: replies, conversions, probe switches, retries."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from evalcore.judge.client import (
    Endpoint,
    JudgeClient,
    RequestFailed,
    response_from_dict,
    response_to_dict,
)
from evalcore.types import Capabilities, ChatRequest, CompletionRequest
from evalcore.testing.loopback import Fault, Switches, default_reply, echo_logprobs, find_scale, serve


def _client(srv, **kw) -> JudgeClient:
    return JudgeClient(Endpoint(srv.base_url, "loop", provider="local"), **kw)


async def _send(client: JudgeClient, req):
    try:
        return await client.send(req)
    finally:
        await client.aclose()


def test_scale_and_reply_shapes():
    assert find_scale("Rate it on a scale of 1 to 10.") == (1, 10)
    assert find_scale("Coherence (1-3): ...") == (1, 3)
    assert find_scale("a number between 0 and 100: from 0 to 100") == (0, 100)
    # G-Eval form: the reply is the score itself, with a distribution over 1..5 summing to 1
    r = default_reply("Coherence (1-5) - the quality.\n\nEvaluation Form (scores ONLY):\n\n- Coherence:")
    tok, top = r.tokens[0]
    assert tok in {"1", "2", "3", "4", "5"}
    assert {t for t, _ in top} == {"1", "2", "3", "4", "5"}
    assert math.isclose(sum(math.exp(lp) for _, lp in top), 1.0, rel_tol=1e-9)
    assert top[0][0] == tok  # the generated token is the most likely one
    # reason-then-score and pairwise and multiple choice
    assert "Score:" in default_reply("Explain your reasoning, then give a score from 1 to 5.").text
    assert default_reply("Which is better? (A) first (B) second (C) both equally good").text in {"A", "B", "C"}
    mcq = default_reply("Choose one:\nA. bad\nB. poor\nC. fair\nD. good\nE. great\n").text
    assert mcq.startswith("Answer:") and mcq[-1] in "ABCDE"
    # determinism
    assert default_reply("same prompt 1-5").text == default_reply("same prompt 1-5").text


def test_echo_logprobs_offsets():
    toks, lps, offs = echo_logprobs("The quick  brown fox")
    assert "".join(toks) == "The quick  brown fox"
    assert lps[0] is None and all(v < 0 for v in lps[1:])
    assert offs == [0, 3, 9, 16]


def test_chat_conversion_with_logprobs_and_n():
    with serve() as srv:
        req = ChatRequest(messages=(("user", "Rate coherence (1-5).\n- Coherence:"),), logprobs=True, top_logprobs=5,
                          n=3, temperature=1.0)
        resp = asyncio.run(_send(_client(srv), req))
    assert len(resp.choices) == 3
    c = resp.choices[0]
    assert c.tokens is not None and len(c.tokens[0].top) == 5
    assert c.tokens[0].token == c.text  # a one-token reply
    assert resp.usage["completion_tokens"] == 3
    # cache round trip keeps everything
    back = response_from_dict(response_to_dict(resp))
    assert back.choices == resp.choices and back.usage == resp.usage


def test_completion_echo_conversion_counts_prompt_tokens():
    prompt = "Summarize: the cat sat on the mat. Summary: a cat sat."
    with serve() as srv:
        resp = asyncio.run(_send(_client(srv), CompletionRequest(prompt=prompt, max_tokens=0, echo=True, logprobs=1)))
    c = resp.choices[0]
    toks, lps, _ = echo_logprobs(prompt)
    assert c.prompt_token_count == len(toks)
    assert [t.token for t in c.tokens] == toks
    assert [t.logprob for t in c.tokens] == lps
    assert c.text == ""  # the echoed prompt is stripped from the reply text


@pytest.mark.parametrize(
    "switches, expected",
    [
        (Switches(), Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True, echo_logprobs=True)),
        (Switches(no_logprobs=True), Capabilities(chat_logprobs=False, top_logprobs=0, honours_n=True,
                                                  echo_logprobs=True)),
        (Switches(ignore_n=True), Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=False,
                                               echo_logprobs=True)),
        (Switches(no_echo=True), Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True,
                                              echo_logprobs=False)),
        (Switches(no_completions=True), Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True,
                                                     echo_logprobs=False)),
    ],
)
def test_probe_reports_each_switch(switches, expected):
    async def go(srv):
        c = _client(srv)
        try:
            return await c.probe()
        finally:
            await c.aclose()

    with serve(switches=switches) as srv:
        assert asyncio.run(go(srv)) == expected


def test_retry_after_is_honoured_and_counted():
    # the first attempt gets 429 with Retry-After: 0.4; openai's own backoff would wait 0.5 * 2^0 * (0.75..1) s
    # otherwise, so use a value that is distinguishable from it on the other side: 1.2 s > 0.5 s max first backoff
    with serve(faults=[Fault("429", on_requests=(1,), retry_after=1.2)]) as srv:
        client = _client(srv, max_retries=3)
        t0 = time.perf_counter()
        resp = asyncio.run(_send(client, ChatRequest(messages=(("user", "score 1-5"),))))
        waited = time.perf_counter() - t0
        assert srv.requests_seen == 2
    assert resp.choices[0].text
    assert waited >= 1.2
    assert client.stats.retries == 1 and client.stats.attempts == 2 and client.stats.failures == 0


def test_failures_after_retries_have_reasons():
    cases = {
        "500": "HTTP 500 after retries",
        "malformed": "malformed response body",
        "drop": "connection failed after retries",
        "timeout": "HTTP timeout after retries",
    }
    for kind, reason in cases.items():
        with serve(faults=[Fault(kind, match="FAILME", hang_s=2.0)]) as srv:
            client = _client(srv, max_retries=1, timeout_s=0.3)
            with pytest.raises(RequestFailed) as ei:
                asyncio.run(_send(client, ChatRequest(messages=(("user", "FAILME 1-5"),))))
            assert ei.value.reason.startswith(reason), (kind, ei.value.reason)
            assert client.stats.failures == 1


def test_refusal_and_truncation_are_marked():
    with serve(faults=[Fault("refusal", match="REFUSE"), Fault("truncated", match="CUT")]) as srv:
        r1 = asyncio.run(_send(_client(srv), ChatRequest(messages=(("user", "REFUSE 1-5"),))))
        r2 = asyncio.run(_send(_client(srv), ChatRequest(messages=(("user", "CUT 1-5"),))))
    assert r1.choices[0].finish_reason == "refusal" and "sorry" in r1.choices[0].text
    assert r2.choices[0].finish_reason == "length"


def test_concurrency_is_bounded_and_parallel():
    # 16 requests with concurrency 8: the server holds every request until 8 are in flight at once (parallel), then
    # answers; the most it ever saw in flight is 8 (never more than the bound). No clock: a busy machine that is slow
    # to open its 8 connections waits at the barrier, it does not fail.
    import threading

    async def go(srv):
        c = _client(srv, concurrency=8)
        try:
            await asyncio.gather(*(c.send(ChatRequest(messages=(("user", f"item {i} 1-5"),))) for i in range(16)))
        finally:
            await c.aclose()

    with serve() as srv:
        srv.hold(1)
        sender = threading.Thread(target=lambda: asyncio.run(go(srv)))
        sender.start()
        deadline = time.monotonic() + 120
        while srv.held < 8 and sender.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        held = srv.held
        srv.release()
        sender.join(120)
        assert not sender.is_alive()
    assert held == 8 and srv.peak_in_flight == 8 and srv.requests_seen == 16


def test_models_endpoint_and_request_counter():
    import openai

    with serve() as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k")
        assert [m.id for m in client.models.list()] == ["loopback-judge"]
        assert srv.requests_seen == 0  # GETs are not counted: requests_seen counts judge calls
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "1-5"}])
        assert srv.requests_seen == 1 and srv.by_path == {"/v1/chat/completions": 1}
