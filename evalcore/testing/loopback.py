"""An OpenAI-compatible HTTP test double: the judge the tests and benches talk to.

It is NEVER the application's default judge: nothing in evalcore points at it unless a test or bench passes its
``base_url`` explicitly.

What it serves (plain asyncio, no framework, so 64 concurrent slow requests cost 64 coroutines, not 64 threads):

* ``POST /v1/chat/completions``: messages, n, logprobs, top_logprobs, temperature, max_tokens, seed;
* ``POST /v1/completions``: prompt, echo, logprobs, max_tokens (echo returns per-token prompt log-probs);
* ``GET /v1/models``; plus ``GET /_stats`` and ``POST /_reset`` for a bench driving it as a separate process.

Replies are deterministic functions of the prompt (a sha256 of its text), shaped after what the prompt asks for:
a score on the scale it names ("Coherence: 4", or "... Score: 4" when it asks for a reason first) with a top-log-prob
distribution over the scale's tokens; a letter for multiple-choice prompts; a pairwise verdict when the prompt offers
two texts; Yes/No for yes-no questions. Sampled replies (temperature > 0, several choices) vary with the sample index.

Faults (``Fault``) are injected by fraction (seeded), by a deterministic schedule of request ordinals, by a substring
of the prompt, or "sticky" (decided by the prompt's hash, so every retry of that prompt meets the same fault):
429 with Retry-After, 500, a hang longer than the client's timeout, a dropped connection, a malformed JSON body,
an unparseable reply, a truncated reply (finish_reason "length") and a refusal. Capability switches (no log-probs,
ignore n, no echo, no completions endpoint) exercise the engine's capability probe and the methods' fallbacks.
A ``profile`` (evalcore.testing.loopback_profiles) makes it follow one provider's documented contract instead:
its refusals, its reasoning output, its budget rules; ``/v1/messages/batches`` serves Anthropic's Message Batches
(evalcore.testing.loopback_anthropic).

Run it as a separate process::

    python -m evalcore.testing.loopback --port 8123 --latency 1.0 [--faults '[{"kind": "429", "fraction": 0.1}]']
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import hashlib
import json
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from evalcore.testing.loopback_anthropic import AnthropicBatches
from evalcore.testing.loopback_batch import BatchService, BatchSwitches
from evalcore.testing.loopback_limits import PrefixCache, RateLimit
from evalcore.testing.replies import (
    Reply,
    default_reply,
    find_scale,
    hash_fraction,
    pad_alternatives,
    plain_tokens,
    stable_hash,
)

if TYPE_CHECKING:
    from evalcore.testing.loopback_profiles import Profile

FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "drop", "malformed", "unparseable", "truncated", "refusal")
# hostile endpoints (tests/hardening): a body dripped one byte at a time, a web page instead of JSON, a 401 that
# echoes the caller's Authorization header, a reply without choices, a body that is not JSON at all
HOSTILE_KINDS = ("drip", "html", "key_echo", "empty_choices", "garbage")
FAULT_KINDS = FAULT_KINDS + HOSTILE_KINDS
# faults whose reply replaces the answer (the others shape an answer: a refusal, an unparseable or truncated reply)
_FAULT_ONLY = ("429", "500", "timeout", "drop", "malformed") + HOSTILE_KINDS

REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
UNPARSEABLE_TEXT = "The text reads well overall, though some parts could be tighter."


@dataclass
class Fault:
    """One kind of misbehaviour and when to show it (any of the triggers fires it)."""

    kind: str
    fraction: float = 0.0  # share of attempts (seeded RNG), or of prompts when sticky
    sticky: bool = False  # decide by the prompt's hash: every retry of that prompt gets the same fault
    on_requests: tuple[int, ...] = ()  # 1-based ordinals of POST attempts (deterministic schedule)
    match: str | None = None  # prompts containing this substring always get it
    retry_after: float | None = 1.0  # seconds, for "429"
    hang_s: float = 30.0  # for "timeout": longer than the client's timeout
    drip_s: float = 1.0  # for "drip": seconds between two bytes of the body

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")
        self.on_requests = tuple(self.on_requests)


@dataclass
class Switches:
    """Capability switches: turn an endpoint feature off to test the probe and the fallbacks."""

    no_logprobs: bool = False  # chat ignores logprobs/top_logprobs (returns logprobs: null)
    ignore_n: bool = False  # always one choice
    no_echo: bool = False  # completions ignore echo (no prompt log-probs)
    no_completions: bool = False  # /v1/completions answers 404


_request_headers: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("loopback_headers", default={})


@dataclass
class _Drip:
    """A body sent one byte per ``interval_s`` (the "drip" fault)."""

    data: bytes
    interval_s: float


def _hostile(fault: Fault, chat: bool, model: str) -> tuple[int, Any, dict[str, str]] | None:
    """The reply of a hostile-endpoint fault, or None when ``fault`` is not one."""
    if fault.kind == "html":
        page = b"<!DOCTYPE html><html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>"
        return 200, page, {"Content-Type": "text/html; charset=utf-8"}
    if fault.kind == "key_echo":
        auth = _request_headers.get().get("authorization", "")
        return 401, {"error": {"message": f"Invalid key: {auth}", "type": "invalid_request_error",
                               "code": "invalid_api_key"}}, {}
    if fault.kind == "empty_choices":
        return 200, {"id": "x", "object": "chat.completion" if chat else "text_completion", "created": 0,
                     "model": model, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0,
                                                              "total_tokens": 1}}, {}
    if fault.kind == "garbage":
        return 200, b"\x00\x93 this is not json at all }{", {}
    if fault.kind == "drip":
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "3"}, "finish_reason": "stop"}]}).encode()
        return 200, _Drip(body, fault.drip_s), {}
    return None



def echo_logprobs(prompt: str) -> tuple[list[str], list[float | None], list[int]]:
    """Per whitespace token: token, a deterministic log-prob (None for the first), text offset."""
    tokens = re.findall(r"\s*\S+|\s+$", prompt)
    lps: list[float | None] = []
    offsets = []
    pos = 0
    prev = ""
    for i, t in enumerate(tokens):
        offsets.append(pos)
        pos += len(t)
        lps.append(None if i == 0 else -0.05 - (stable_hash(prev, t) % 5000) / 1000)
        prev = t
    return tokens, lps, offsets


# ------------------------------------------------------------------------------------------------ the server
class LoopbackServer:
    """An asyncio HTTP server on its own thread (``serve()``) or as the main loop (``run_forever``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, latency_s: float = 0.0,
                 faults: list[Fault] | None = None, scorer: Callable[..., Reply] | None = None,
                 switches: Switches | None = None, seed: int = 0, model: str = "loopback-judge",
                 rate_limit: RateLimit | None = None, prefix_cache_tokens: int = 0,
                 batch: BatchSwitches | None = None, record_bodies: bool = False,
                 profile: Profile | None = None) -> None:
        self.host = host
        # a provider's documented contract (evalcore.testing.loopback_profiles.Profile): refusals, reasoning
        self.profile = profile
        self.port = port
        self.latency_s = latency_s
        self.faults = list(faults or [])
        self.scorer = scorer or default_reply
        self.switches = switches or Switches()
        self.model = model
        self._rng = random.Random(seed)
        self._seed = seed
        self._lock = threading.Lock()
        self.requests_seen = 0  # every POST attempt, faults included
        self.in_flight = 0  # requests being answered now (the server's loop only: no lock)
        self.peak_in_flight = 0  # the most answered at once: how parallel the client was, measured without a clock
        self.by_path: dict[str, int] = {}
        self.faults_served: dict[str, int] = {}
        self.prompt_log: list[str] = []  # sha256 of each attempt's prompt (what was asked, in order)
        self.arrivals: list[float] = []  # time.monotonic() when each attempt of prompt_log arrived
        # (ordinal in prompt_log from 1, the prompt's sha256, its usage) of every answer composed (not the faults
        # that replace one): what a provider bills, whether or not the client lived to read the reply
        self.served: list[tuple[int, str, dict[str, Any]]] = []
        # a test's barrier: attempts from this ordinal on (1-based, as prompt_log counts) wait until release()
        self.hold_from: int | None = None
        self.held = 0  # attempts waiting at the barrier now
        self._released = threading.Event()
        self.record_bodies = record_bodies
        self.bodies: list[tuple[str, bytes]] = []  # (path, body) of each scoring POST, when record_bodies
        self._server: asyncio.base_events.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.rate_limit = rate_limit  # RPM/TPM buckets; replies carry x-ratelimit-* headers (loopback_limits)
        self.prefix_cache = PrefixCache(prefix_cache_tokens) if prefix_cache_tokens else None
        self.batch_service = BatchService(self, batch)  # /v1/files and /v1/batches (loopback_batch)
        self.anthropic_batches = AnthropicBatches(self)  # /v1/messages/batches (loopback_anthropic)
        self.rate_limited = 0  # requests answered 429 by the rate limit

    # -- lifecycle
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def reset(self) -> None:
        with self._lock:
            self.requests_seen = 0
            self.peak_in_flight = 0
            self.by_path = {}
            self.faults_served = {}
            self.prompt_log = []
            self.arrivals = []
            self.served = []
            self.bodies = []
            self._rng = random.Random(self._seed)
            self.rate_limited = 0

    async def start_async(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    def start(self) -> "LoopbackServer":
        def runner() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self.start_async())
            self._ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

        self._thread = threading.Thread(target=runner, name="loopback-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for t in asyncio.all_tasks():
                if t is not asyncio.current_task():
                    t.cancel()

        fut = asyncio.run_coroutine_threadsafe(shutdown(), loop)
        try:
            fut.result(5)
        except Exception:  # noqa: BLE001 - best effort on shutdown
            pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None

    def __enter__(self) -> "LoopbackServer":
        return self.start() if self._loop is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP plumbing
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                _request_headers.set(headers)
                result = await self._answer(method, path.split("?")[0], headers, body)
                if result is None:  # dropped connection
                    writer.transport.abort()
                    return
                status, payload, extra = result
                drip = payload if isinstance(payload, _Drip) else None
                payload = drip.data if drip is not None else payload
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
                          500: "Internal Server Error"}.get(status, "Error")
                extra = dict(extra)
                head = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {extra.pop('Content-Type', 'application/json')}",
                        f"Content-Length: {len(data)}"]
                head += [f"{k}: {v}" for k, v in extra.items()]
                close = headers.get("connection", "").lower() == "close"
                head.append("Connection: close" if close else "Connection: keep-alive")
                if drip is not None:  # headers at once, then the body a byte at a time
                    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
                    for i in range(len(data)):
                        await writer.drain()
                        await asyncio.sleep(drip.interval_s)
                        writer.write(data[i:i + 1])
                    await writer.drain()
                    continue
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        except asyncio.CancelledError:
            # server shutting down: drop the connection quietly
            writer.transport.abort()
            return
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes):
        """The reply to one request (None: drop the connection), counting the requests answered at once."""
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.batch_service.handles(path):
                return await self.batch_service.route(method, path, headers, body)
            if self.anthropic_batches.handles(path):
                return await self.anthropic_batches.route(method, path, body)
            return await self._route(method, path, body)
        finally:
            self.in_flight -= 1

    async def _route(self, method: str, path: str, body: bytes):
        admin = self._admin_route(method, path)
        if admin is not None:
            return admin
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/completions"):
            return 404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}, {}
        try:
            req = json.loads(body or b"{}")
        except json.JSONDecodeError:
            return 400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}, {}
        chat = path == "/v1/chat/completions"
        prompt = ("\n".join(str(m.get("content", "")) for m in req.get("messages", [])) if chat
                  else (req.get("prompt") if isinstance(req.get("prompt"), str) else "".join(req.get("prompt") or [])))
        fault = self._record(path, body, prompt)
        ordinal = len(self.prompt_log)  # this attempt's: nothing ran on the loop since _record appended it
        await self._barrier(ordinal)
        limit_headers: dict[str, str] = {}
        if self.rate_limit is not None:
            admitted, limit_headers = self.rate_limit.admit(self._token_cost(req, prompt))
            if not admitted:
                with self._lock:
                    self.rate_limited += 1
                return 429, {"error": {"message": "Rate limit reached (loopback RPM/TPM)", "type": "requests",
                                       "code": "rate_limit_exceeded"}}, limit_headers
        if self.prefix_cache is not None and fault is None:
            req["_cached_tokens"] = self.prefix_cache.lookup_insert(prompt)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if fault is not None and fault.kind in _FAULT_ONLY:
            return await self._fault_reply(fault, chat)
        if not chat and (self.switches.no_completions or self.profile is not None and self.profile.name != "openai-2023"):
            # the providers' compatibility layers and the reasoning models serve chat completions only
            return 404, {"error": {"message": "completions endpoint not available", "type": "not_found"}}, {}
        refused = self.profile.refusal(req) if chat and self.profile is not None else None
        if refused is not None:
            return 400, refused, {}
        answer = self._chat(req, prompt, fault) if chat else self._completion(req, prompt, fault)
        with self._lock:
            self.served.append((ordinal, self.prompt_log[ordinal - 1], dict(answer["usage"])))
        return 200, answer, limit_headers

    def hold(self, from_request: int) -> None:
        """Hold every attempt from the ``from_request``-th on (1-based, as ``prompt_log`` counts) until
        :meth:`release`: a test knows then exactly which request is in flight (arrived, unanswered) when it acts."""
        self._released.clear()
        self.hold_from = from_request

    def release(self) -> None:
        """Answer the held attempts, and hold no more."""
        self.hold_from = None
        self._released.set()

    async def _barrier(self, ordinal: int) -> None:
        if self.hold_from is None or ordinal < self.hold_from:
            return
        self.held += 1
        try:
            while not self._released.is_set():
                await asyncio.sleep(0.01)
        finally:
            self.held -= 1

    def _admin_route(self, method: str, path: str):
        """The test double's own routes (the model list, its counters, a reset); None for any other request."""
        if method == "GET" and path.rstrip("/") == "/v1/models":
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "loopback"}]}, {}
        if method == "GET" and path == "/_stats":
            with self._lock:
                return 200, {"requests": self.requests_seen, "by_path": dict(self.by_path),
                             "faults": dict(self.faults_served), "rate_limited": self.rate_limited}, {}
        if method == "POST" and path == "/_reset":
            self.reset()
            return 200, {"ok": True}, {}
        return None

    def _record(self, path: str, body: bytes, prompt: str) -> Fault | None:
        """Count the request (and keep its body when asked); the fault it gets, if any."""
        with self._lock:
            self.requests_seen += 1
            self.by_path[path] = self.by_path.get(path, 0) + 1
            self.prompt_log.append(hashlib.sha256(prompt.encode()).hexdigest())
            self.arrivals.append(time.monotonic())
            if self.record_bodies:
                self.bodies.append((path, body))
            fault = self._pick_fault(self.requests_seen, prompt)
            if fault is not None:
                self.faults_served[fault.kind] = self.faults_served.get(fault.kind, 0) + 1
        return fault

    async def _fault_reply(self, fault: Fault, chat: bool):
        """The reply of a fault that replaces the answer (the others, e.g. a truncated reply, shape the answer)."""
        if fault.kind == "429":
            extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return 429, {"error": {"message": "Rate limit reached (loopback)", "type": "rate_limit_error"}}, extra
        if fault.kind == "500":
            return 500, {"error": {"message": "Internal error (loopback)", "type": "server_error"}}, {}
        if fault.kind == "timeout":
            await asyncio.sleep(fault.hang_s)
            return 500, {"error": {"message": "too late", "type": "server_error"}}, {}
        if fault.kind == "drop":
            return None
        if fault.kind == "malformed":
            return 200, b'{"id": "x", "choices": [{"index": 0, "message": ', {}
        return _hostile(fault, chat, self.model)

    @staticmethod
    def _token_cost(req: dict, prompt: str) -> float:
        """What the rate limit counts: prompt tokens + max_tokens x n (counted before the request runs)."""
        out = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16) * int(req.get("n") or 1)
        return len(re.findall(r"\S+", prompt)) + out

    def _pick_fault(self, ordinal: int, prompt: str) -> Fault | None:
        for f in self.faults:
            if ordinal in f.on_requests:
                return f
            if f.match is not None and f.match in prompt:
                return f
            if f.fraction > 0:
                if f.sticky:
                    if hash_fraction(prompt, "fault", f.kind) < f.fraction:
                        return f
                elif self._rng.random() < f.fraction:
                    return f
        return None

    def _replies(self, req: dict, prompt: str, fault: Fault | None, n: int) -> list[Reply]:
        temperature = float(req.get("temperature", 1.0) if req.get("temperature") is not None else 1.0)
        out = []
        for i in range(n):
            if fault is not None and fault.kind == "refusal":
                out.append(Reply(plain_tokens(REFUSAL_TEXT), refusal=REFUSAL_TEXT))
            elif fault is not None and fault.kind == "unparseable":
                out.append(Reply(plain_tokens(UNPARSEABLE_TEXT)))
            elif fault is not None and fault.kind == "truncated":
                out.append(Reply(plain_tokens("The text is"), finish_reason="length"))
            else:
                r = self.scorer(prompt, sample=i, temperature=temperature)
                max_tokens = req.get("max_tokens") or req.get("max_completion_tokens")
                if max_tokens is not None and len(r.tokens) > int(max_tokens):
                    r = Reply(r.tokens[: int(max_tokens)], finish_reason="length")
                out.append(r)
        return out

    def _usage(self, prompt: str, replies: list[Reply], extra_prompt_tokens: int = 0, cached: int = 0) -> dict:
        p = len(re.findall(r"\S+", prompt)) + extra_prompt_tokens
        c = sum(len(r.tokens) for r in replies)
        out: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        if self.prefix_cache is not None:
            out["prompt_tokens_details"] = {"cached_tokens": min(int(cached), p)}
        return out

    def _chat(self, req: dict, prompt: str, fault: Fault | None) -> dict:
        if self.profile is not None:
            return self.profile.chat(lambda r, n: self._replies(r, prompt, fault, n), req, prompt, self.model)
        n = 1 if self.switches.ignore_n else int(req.get("n") or 1)
        replies = self._replies(req, prompt, fault, n)
        want_lp = bool(req.get("logprobs")) and not self.switches.no_logprobs
        k = int(req.get("top_logprobs") or 0)
        choices = []
        for i, r in enumerate(replies):
            lp = None
            if want_lp:
                lp = {"content": [
                    {"token": t, "logprob": top[0][1], "bytes": list(t.encode()),
                     "top_logprobs": [{"token": a, "logprob": b, "bytes": list(a.encode())}
                                      for a, b in pad_alternatives(top, k)[:k]]}
                    for t, top in r.tokens], "refusal": None}
            message = {"role": "assistant", "content": None if r.refusal else r.text, "refusal": r.refusal}
            choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": r.finish_reason})
        return {"id": f"chatcmpl-{stable_hash(prompt, time.time()):x}", "object": "chat.completion", "created": int(time.time()),
                "model": req.get("model", self.model), "choices": choices,
                "usage": self._usage(prompt, replies, cached=req.get("_cached_tokens", 0))}

    def _completion(self, req: dict, prompt: str, fault: Fault | None) -> dict:
        n = 1 if self.switches.ignore_n else int(req.get("n") or 1)
        max_tokens = int(req["max_tokens"]) if req.get("max_tokens") is not None else 16
        echo = bool(req.get("echo")) and not self.switches.no_echo
        k = req.get("logprobs")
        replies = self._replies(req, prompt, fault, n) if max_tokens > 0 else [Reply([]) for _ in range(n)]
        choices = []
        for i, r in enumerate(replies):
            text = (prompt if echo else "") + r.text
            lp = None
            if k is not None:
                toks: list[str] = []
                lps: list[float | None] = []
                offs: list[int] = []
                tops: list[dict | None] = []
                if echo:
                    toks, lps, offs = echo_logprobs(prompt)
                    tops = [None if v is None else {t: v} for t, v in zip(toks, lps)]
                pos = len(prompt) if echo else 0
                for t, top in r.tokens:
                    toks.append(t)
                    lps.append(top[0][1])
                    offs.append(pos)
                    pos += len(t)
                    tops.append(dict(top[: max(int(k), 1)]))
                lp = {"tokens": toks, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offs}
            choices.append({"index": i, "text": text, "logprobs": lp, "finish_reason": "length" if max_tokens == 0
                            else r.finish_reason})
        return {"id": f"cmpl-{stable_hash(prompt):x}", "object": "text_completion", "created": int(time.time()),
                "model": req.get("model", self.model), "choices": choices,
                "usage": self._usage(prompt, replies if max_tokens > 0 else [], cached=req.get("_cached_tokens", 0))}


def serve(host: str = "127.0.0.1", port: int = 0, *, latency_s: float = 0.0, faults: list[Fault] | None = None,
          scorer: Callable[..., Reply] | None = None, switches: Switches | None = None,
          seed: int = 0, rate_limit: RateLimit | None = None, prefix_cache_tokens: int = 0,
          batch: BatchSwitches | None = None, record_bodies: bool = False,
          profile: Profile | None = None) -> LoopbackServer:
    """Start a loopback server on a background thread; use as a context manager (``with serve() as srv:``).
    ``record_bodies``: keep every scoring request's raw body in ``srv.bodies`` (tests comparing what was sent)."""
    return LoopbackServer(host, port, latency_s=latency_s, faults=faults, scorer=scorer, switches=switches,
                          seed=seed, rate_limit=rate_limit, prefix_cache_tokens=prefix_cache_tokens,
                          batch=batch, record_bodies=record_bodies, profile=profile).start()


def _profile(name: str | None) -> Profile | None:
    if not name:
        return None
    from evalcore.testing.loopback_profiles import PROFILES

    if name not in PROFILES:
        raise SystemExit(f"unknown profile {name!r}; expected one of {sorted(PROFILES)}")
    return PROFILES[name]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evalcore.testing.loopback",
                                 description="OpenAI-compatible test double (never a real judge).")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds added to every POST")
    ap.add_argument("--faults", default="[]", help='JSON list of Fault fields, e.g. [{"kind":"429","fraction":0.1}]')
    ap.add_argument("--seed", type=int, default=0)
    for sw in ("no-logprobs", "ignore-n", "no-echo", "no-completions"):
        ap.add_argument(f"--{sw}", action="store_true")
    ap.add_argument("--rpm", type=float, help="enforce a requests-per-minute limit (429 + x-ratelimit-* headers)")
    ap.add_argument("--tpm", type=float, help="enforce a tokens-per-minute limit")
    ap.add_argument("--burst-s", type=float, default=1.0, help="rate-limit bucket size in seconds of the limit")
    ap.add_argument("--prefix-cache-tokens", type=int, default=0,
                    help="simulate automatic prefix caching with this many tokens (reported as cached_tokens)")
    ap.add_argument("--batch-line-delay", type=float, default=0.0, help="seconds per batch line")
    ap.add_argument("--batch-fail-match", help="batch lines whose prompt contains this fail")
    ap.add_argument("--batch-expire-after", type=int, help="batches expire after this many lines")
    ap.add_argument("--profile", help="a provider's documented contract (evalcore.testing.loopback_profiles)")
    a = ap.parse_args(argv)
    faults = [Fault(**f) for f in json.loads(a.faults)]
    switches = Switches(no_logprobs=a.no_logprobs, ignore_n=a.ignore_n, no_echo=a.no_echo,
                        no_completions=a.no_completions)
    limit = RateLimit(rpm=a.rpm, tpm=a.tpm, burst_s=a.burst_s) if (a.rpm or a.tpm) else None
    batch = BatchSwitches(line_delay_s=a.batch_line_delay, fail_match=a.batch_fail_match,
                          expire_after=a.batch_expire_after)
    srv = LoopbackServer(a.host, a.port, latency_s=a.latency, faults=faults, switches=switches, seed=a.seed,
                         rate_limit=limit, prefix_cache_tokens=a.prefix_cache_tokens, batch=batch,
                         profile=_profile(a.profile))

    async def run() -> None:
        await srv.start_async()
        print(f"LISTENING {srv.base_url}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    return 0


__all__ = ["Fault", "Switches", "Reply", "LoopbackServer", "serve", "default_reply", "find_scale", "echo_logprobs",
           "FAULT_KINDS", "RateLimit", "BatchSwitches"]

if __name__ == "__main__":
    raise SystemExit(main())
