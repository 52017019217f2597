"""The judge client: one OpenAI-compatible endpoint, called asynchronously with bounded concurrency.

Retries are openai-python's own (exponential backoff from 0.5 s to 8 s with up to 25 % jitter, on 408/409/429/5xx,
timeouts and dropped connections, honouring ``Retry-After``/``retry-after-ms`` up to two minutes). They are counted
without patching the library or reading its private headers: an httpx request hook sees every HTTP attempt, and a
context variable attributes it to the logical request that made it (its second and later attempts are retries).

The API key lives only in this object's memory (read from the endpoint's env var or passed in). It is never part of
``Endpoint``, cache keys, run records, logs or exports: ``Endpoint.identity()`` is what gets stored.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, SupportsFloat, SupportsIndex, TypeVar

import openai
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from evalcore import registry
from evalcore.judge import trust
from evalcore.judge.redact import redact, refuse_credentials
from evalcore.judge.ratelimit import RateLimiter
from evalcore.types import (
    Capabilities,
    ChatRequest,
    Choice,
    CompletionRequest,
    Request,
    Response,
    TokenLogprob,
)

if TYPE_CHECKING:  # the HTTP library of the openai release type-checked against (evalcore.judge.client._httpx)
    import httpx2

log = logging.getLogger(__name__)

# a parsed reply body of the openai SDK (ChatCompletion, Completion), as ``_expect_json`` hands it on
_Body = TypeVar("_Body")
# an httpx event hook: called with each request (or response) of the SDK's client
_Hook = Callable[..., Awaitable[None]]

LOCAL_PROVIDERS = trust.LOCAL_PROVIDERS  # re-exported: the pages read it here


@dataclass(frozen=True)
class Endpoint:
    """Where the judge lives. Holds the NAME of the env var with the key, never the key itself."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    provider: str = "openai"  # "openai" | "azure" | "vllm" | "ollama" | "llamacpp" | "local"
    api_version: str | None = None  # Azure OpenAI only
    # Set only by the operator's own tools (the command line): the server's key may go here even when the URL is in
    # no allow-list. Not part of the identity, never stored, never set from a page (evalcore.judge.trust).
    operator_configured: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # user:password@ in the URL would be stored in cache keys and run configs: refuse it (evalcore.judge.redact)
        refuse_credentials(self.base_url)

    def identity(self) -> dict[str, Any]:
        """What goes in cache keys and run records: provider, base_url, model (and Azure's api_version). The base URL
        in one spelling per address (``trust.identity_url``): another spelling of the same URL is the same endpoint."""
        out: dict[str, Any] = {"provider": self.provider, "base_url": trust.identity_url(self.base_url),
                               "model": self.model}
        if self.api_version:
            out["api_version"] = self.api_version
        return out


class _Presets(Mapping[str, Endpoint]):
    """Each registered provider (evalcore.judge.providers, plugins: evalcore.registry.PROVIDERS) as an Endpoint
    preset: base URL, which env var holds the key, Azure's api_version. ``model`` is filled by the user."""

    def __getitem__(self, name: str) -> Endpoint:
        p = registry.PROVIDERS[name]
        return Endpoint(base_url=p.base_url, model="", api_key_env=p.api_key_env, provider=p.name,
                        api_version=p.api_version)

    def __iter__(self) -> Iterator[str]:
        return iter(registry.PROVIDERS)

    def __len__(self) -> int:
        return len(registry.PROVIDERS)


PRESETS: Mapping[str, Endpoint] = _Presets()


def endpoint_from_preset(preset: str, *, model: str, base_url: str | None = None,
                         api_key_env: str | None = None, api_version: str | None = None) -> Endpoint:
    if preset not in PRESETS:
        raise KeyError(f"unknown endpoint preset {preset!r}; expected one of {sorted(PRESETS)}")
    ep = replace(PRESETS[preset], model=model)
    if base_url:
        ep = replace(ep, base_url=base_url)
    if api_key_env:
        ep = replace(ep, api_key_env=api_key_env)
    if api_version:
        ep = replace(ep, api_version=api_version)
    return ep


class MissingApiKey(RuntimeError):
    pass


class RequestFailed(RuntimeError):
    """A request that failed for good (after retries, or not retryable); ``reason`` is what the judgment records."""

    def __init__(self, reason: str, *, retryable: bool = False, refusal: dict[str, Any] | None = None,
                 recorded: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        # a failure read back from a finished batch's results, not an answer of the endpoint now: it says nothing
        # of whether the endpoint works, so it never stops a run early (runner._FailFast)
        self.recorded = recorded
        # an HTTP 4xx error's own fields (status, param, code, message): what evalcore.judge.contract learns from
        self.refusal = refusal
        # the replica that gave this failure (evalcore.judge.routing); "" when not one of a replica set's members
        self.answered_by = ""


class EndpointUnusable(RuntimeError):
    """The endpoint cannot be used at all (down, wrong URL or key): every probe or every first request failed the
    same way. ``str()`` is the one line to show; the run stops instead of failing every item."""


@dataclass
class RequestStats:
    """A client's request counters for one run (or its lifetime); the run records them with the engine's
    (evalcore.model.RunStats)."""

    requests: int = 0  # logical requests sent to the network (not cache hits)
    attempts: int = 0  # HTTP attempts, retries included
    retries: int = 0
    failures: int = 0  # logical requests that failed for good
    cached: int = 0  # requests answered from the cache (counted by the runner)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # summed over successful requests
    retrying_now: int = 0  # logical requests currently in a retry (for the progress line)
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("retrying_now")
        return d




@dataclass
class _Attempts:
    attempts: int = 0  # HTTP attempts of one logical request so far (the first, then openai-python's retries)
    retries: int = 0


_current: contextvars.ContextVar[_Attempts | None] = contextvars.ContextVar("evalcore_judge_attempt", default=None)


def key_for(endpoint: Endpoint, api_key: str | None, *, shared: bool = False) -> str:
    """The key this client sends: the one typed for this endpoint, else the environment's key only where the
    operator configured the endpoint (evalcore.judge.trust), else a local server's placeholder; else refused.
    ``shared`` (a page of a lab server): a local preset sends only to an address the operator configured
    (``trust.local_refusal``)."""
    return _key_decision(endpoint, api_key, shared)[0]


def key_source(endpoint: Endpoint, api_key: str | None, *, shared: bool) -> tuple[str, str | None]:
    """:func:`key_for`'s decision as a page says it: (which key the requests carry, in words; the reason they
    cannot be sent, or None). The one place the decision is made, so that the page and the client agree."""
    try:
        return _key_decision(endpoint, api_key, shared)[1], None
    except MissingApiKey:
        return "", f"no API key (field empty and ${endpoint.api_key_env} not set)"
    except trust.UntrustedEndpoint as e:
        return "", str(e)


def _key_decision(endpoint: Endpoint, api_key: str | None, shared: bool) -> tuple[str, str]:
    """(the key, where it comes from in words); raises UntrustedEndpoint or MissingApiKey."""
    refused = trust.local_refusal(endpoint, shared=shared)  # a local preset, on a lab server
    if refused:
        raise trust.UntrustedEndpoint(refused)
    trust.address(endpoint.base_url)  # AmbiguousURL: a URL parsers read differently gets no key, typed or not
    if api_key:
        return api_key, "with the key you typed, kept in this session only"
    key = os.environ.get(endpoint.api_key_env, "")
    if key:
        if endpoint.operator_configured or trust.server_key_allowed(endpoint.base_url, endpoint.api_key_env):
            return key, f"with the server's ${endpoint.api_key_env}: an endpoint the operator configured"
        if endpoint.provider not in LOCAL_PROVIDERS:
            raise trust.UntrustedEndpoint(trust.refusal(endpoint.base_url, endpoint.api_key_env))
    if endpoint.provider in LOCAL_PROVIDERS:
        # local servers usually accept any key; openai's client insists on a non-empty one
        return "not-needed", "a local server: no key is sent"
    raise MissingApiKey(
        f"no API key for {endpoint.provider} endpoint {endpoint.base_url}: set the environment variable "
        f"{endpoint.api_key_env} (or type the key in the Score page). A local server that needs no key "
        f"(vLLM, Ollama, llama.cpp) can use its preset: --provider vllm|ollama|llamacpp"
    )


def _refusal_fields(err: BaseException, keys: list[str]) -> dict[str, Any] | None:
    """An HTTP 400/422 error's documented fields (``param``, ``code``, ``message``: OpenAI's error object, which
    Azure and the compatibility layers follow), for the contract learner; None for any other error."""
    if not isinstance(err, openai.APIStatusError) or err.status_code not in (400, 422):
        return None
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    def text(k: str) -> str:
        v = inner.get(k) if isinstance(inner, dict) else None
        return redact(str(v), keys)[:500] if v is not None else ""
    return {"status": err.status_code, "param": text("param"), "code": text("code"),
            "message": text("message") or redact(str(err), keys)[:500]}


def _describe_error(err: BaseException, retries: int | None = None) -> str:
    """A short reason for a judgment record. Never includes request headers (where the key lives).
    "after retries" only when retries were made (``retries`` None: unknown, assumed made)."""
    after = " after retries" if retries is None or retries > 0 else ""
    if isinstance(err, openai.APITimeoutError):
        return "HTTP timeout" + (after or " (no complete answer within the timeout; not retried)")
    if isinstance(err, openai.APIConnectionError):
        return f"connection failed{after} ({_cause(err)})"
    if isinstance(err, openai.APIStatusError) and 300 <= err.status_code < 400:
        return _redirect_refused(err)
    if isinstance(err, openai.APIStatusError):
        too_long = _retry_after_over_limit(err)
        if too_long is not None:
            return (f"HTTP {err.status_code}: the server asked to wait {too_long:g} s before retrying (Retry-After), "
                    f"over the {_MAX_RETRY_AFTER_S:g} s this client waits; not retried: try again later")
        msg = ""
        try:
            body = err.body if isinstance(err.body, dict) else {}
            msg = str(body.get("message") or (body.get("error") or {}).get("message") or "")
        except (AttributeError, TypeError):  # an error body of an unexpected shape: no message
            msg = ""
        retried = after if err.status_code in (408, 409, 429) or err.status_code >= 500 else ""
        return f"HTTP {err.status_code}{retried}" + (f": {msg[:200]}" if msg else "")
    if isinstance(err, (ValueError, openai.APIResponseValidationError)):
        if str(getattr(err, "doc", "") or "").lstrip().startswith("<"):
            return "the endpoint returned HTML, not JSON (a web page: is the base URL the API's, usually .../v1?)"
        if type(err) is ValueError and str(err) == "response has no choices":
            return "malformed response body (ValueError): the answer has no choices"
        return f"malformed response body ({type(err).__name__})"
    return f"{type(err).__name__}: {str(err)[:200]}"


def _redirect_refused(err: openai.APIStatusError) -> str:
    """The failure of a request the endpoint redirected: where it pointed, and why it was not followed."""
    location = str(getattr(err.response, "headers", {}).get("location", "") or "")
    target = trust.host_of(location) if "://" in location else "the same host"
    return (f"HTTP {err.status_code}: the endpoint redirected this request to {target} "
            f"({redact(location)[:120] or 'no location given'}); redirects are not followed, since one would send "
            "the prompt to an address nobody configured. If that address is the API's, use it as the base URL.")


# openai-python follows a server's Retry-After up to two minutes and does not retry when it asks for more
_MAX_RETRY_AFTER_S = 120.0


def _retry_after_over_limit(err: openai.APIStatusError | httpx2.Response) -> float | None:
    """The server's Retry-After (seconds) when it is over what openai-python waits, else None."""
    headers = getattr(getattr(err, "response", err), "headers", None)  # an error, or a reply itself
    if headers is None:
        return None
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) / div
        except (TypeError, ValueError):
            continue
        return value if value > _MAX_RETRY_AFTER_S else None
    return None


def _no_retry_past_limit(resp: httpx2.Response) -> httpx2.Headers:
    """The reply's headers, with ``x-should-retry: false`` when the server asks for a longer wait than this client
    waits. Why: openai-python from about 1.60 gives up on such a Retry-After by itself, older releases retry with
    their own back-off (and the rate limiter would pause every attempt for two minutes); the header, which
    openai-python has honoured since 1.0, makes every supported release give up at once."""
    headers = resp.headers
    if resp.status_code == 429 and _retry_after_over_limit(resp) is not None:
        headers = headers.copy()
        headers["x-should-retry"] = "false"
    return headers


def _cause(err: BaseException) -> str:
    inner = err.__cause__ or err.__context__
    return f"{type(inner).__name__}: {str(inner)[:160]}" if inner is not None else str(err)[:160]


def _expect_json(raw: _Body | str | bytes, endpoint: "Endpoint") -> _Body:
    """openai-python hands back the body as text when the server did not answer JSON (a web page at the URL)."""
    if not isinstance(raw, (str, bytes)):
        return raw
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    kind = "HTML" if text.lstrip().startswith("<") else "text"
    base = endpoint.base_url.rstrip("/")
    if base.endswith("/v1"):
        hint = f"a web page, not the API: check the host and port of {base}"
    else:
        hint = f"is {base} the API's base URL? OpenAI-compatible APIs usually live under /v1: try {base}/v1"
    raise RequestFailed(f"the endpoint returned {kind}, not JSON ({hint})")


class _DeadlineTransport:
    """An httpx transport that gives every HTTP attempt one total deadline, body included.

    httpx's read timeout restarts with every byte, so a server that drips a byte a second keeps an attempt alive
    for as long as it likes; here the whole attempt (connect, headers, body) must finish within ``deadline_s`` or
    it is a timeout, which openai-python retries like any other."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, deadline_s: float) -> None:
        self._inner = inner
        self._deadline_s = deadline_s

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        httpx = _httpx()
        if not request.url.path.rstrip("/").endswith("completions"):
            # judge calls only: file uploads and downloads (batches) may rightly take longer than one judgment
            return await self._inner.handle_async_request(request)

        async def whole() -> httpx2.Response:
            resp = await self._inner.handle_async_request(request)
            try:
                body = b"".join([chunk async for chunk in resp.aiter_raw()])
            finally:
                await resp.aclose()
            return httpx.Response(resp.status_code, headers=_no_retry_past_limit(resp), content=body,
                                  request=request, extensions=resp.extensions)

        try:
            return await asyncio.wait_for(whole(), self._deadline_s)
        except asyncio.TimeoutError:
            raise httpx.ReadTimeout(f"no complete answer within {self._deadline_s:g} s", request=request) from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_DeadlineTransport":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _httpx() -> Any:
    """The HTTP library openai-python is built on: httpx2 in recent releases, httpx before."""
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - older openai
        import httpx

        return httpx


# The connection pool openai-python gives its own clients (1,000 connections, 100 kept alive), restated here rather
# than imported from its private ``_constants``: the concurrency window, not the pool, bounds what is in flight.
CONNECTION_LIMITS = {"max_connections": 1000, "max_keepalive_connections": 100}


def _deadline_http_client(deadline_s: float, hooks: dict[str, list[_Hook]]) -> httpx2.AsyncClient:
    inner = _httpx().AsyncHTTPTransport(limits=_httpx().Limits(**CONNECTION_LIMITS))
    # Redirects are not followed: a 307/308 would re-send the whole prompt (a private dataset's texts) to wherever the
    # endpoint points, a host the operator never configured; the failure names the target instead (_describe_error).
    # The transport is duck-typed (it subclasses neither httpx2's AsyncBaseTransport nor httpx's: openai-python runs
    # on either, by release), so the checker is told it is one.
    return openai.DefaultAsyncHttpxClient(event_hooks=hooks,
                                          transport=_DeadlineTransport(inner, deadline_s),  # type: ignore[arg-type]
                                          follow_redirects=False)


def request_body(endpoint: Endpoint, request: Request) -> dict[str, Any]:
    """The JSON body of one request: what ``JudgeClient`` sends online and what a Batch API line carries as its
    ``body`` (one builder, so a batched request is answered under the same cache key as the online one)."""
    if isinstance(request, ChatRequest):
        body: dict[str, Any] = {"model": endpoint.model,
                                "messages": [{"role": r, "content": c} for r, c in request.messages],
                                "temperature": request.temperature, "top_p": request.top_p,
                                request.token_param: request.max_tokens, "n": request.n}
        for name in request.omit:  # the endpoint allows only its default here (evalcore.judge.contract)
            body.pop(name, None)
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        if request.logprobs:
            body["logprobs"] = True
            if request.top_logprobs:
                body["top_logprobs"] = request.top_logprobs
        if request.seed is not None and "seed" not in request.omit:  # a judge that refuses seeds gets none
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        return body
    if not isinstance(request, CompletionRequest):
        raise TypeError(f"not a request: {type(request).__name__}")
    body = {"model": endpoint.model, "prompt": request.prompt, "max_tokens": request.max_tokens, "echo": request.echo,
            "temperature": request.temperature, "n": request.n}
    if request.logprobs is not None:
        body["logprobs"] = request.logprobs
    if request.seed is not None:
        body["seed"] = request.seed
    return body


def _sdk_arguments(create: Callable[..., object], body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as keyword arguments of the openai SDK's ``create``: a field this SDK release does not name yet (e.g.
    ``reasoning_effort`` before openai-python 1.58) goes in ``extra_body``, which the SDK sends as is, so the wire
    request is the same on every supported release."""
    known = _parameters(getattr(create, "__func__", create))
    extra = {k: body.pop(k) for k in list(body) if k not in known}
    return {**body, "extra_body": extra} if extra else body


@functools.lru_cache(maxsize=8)
def _parameters(function: Callable[..., object]) -> frozenset[str]:
    """The keyword names an SDK method takes, read once per method (every request asks)."""
    import inspect

    return frozenset(inspect.signature(function).parameters)


class JudgeClient:
    """Wraps ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI`` with a semaphore, retry counting and type conversion."""

    def __init__(self, endpoint: Endpoint, *, api_key: str | None = None, concurrency: int = 16,
                 max_retries: int = 6, timeout_s: float = 60.0) -> None:
        self.endpoint = endpoint
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.stats = RequestStats()
        self._api_key = key_for(endpoint, api_key)
        self._sem: asyncio.Semaphore | None = None
        self._client: openai.AsyncOpenAI | None = None
        # reads rate-limit headers, paces attempts and keeps an AIMD window (no-op without such headers)
        self.limiter = RateLimiter(concurrency)

    def redact(self, text: str | None) -> str:
        """``text`` without this client's key or any Bearer token / sk-style key (for stored or shown errors)."""
        return redact(text, [self._api_key])

    def __repr__(self) -> str:  # no key in reprs (tracebacks, logs)
        return f"JudgeClient({self.endpoint.identity()!r}, concurrency={self.concurrency})"

    # the openai client binds to the running loop's transport: build it lazily inside the loop
    def sdk(self) -> openai.AsyncOpenAI:
        """The openai SDK client for this endpoint (its key, its checked address, no redirects), built once inside
        the running loop: the Batch API route (evalcore.judge.batch) sends through the same one."""
        if self._client is None:
            async def on_request(request: httpx2.Request) -> None:
                # the hook runs in the task of the logical request (``_send_now``), so its context variable says
                # which attempt of that request this is: the second and later are retries
                self.stats.attempts += 1
                state = _current.get()
                if state is None:
                    return
                state.attempts += 1
                if state.attempts > 1:
                    self.stats.retries += 1
                    if state.retries == 0:
                        self.stats.retrying_now += 1
                    state.retries += 1

            hooks = self.limiter.hooks()
            http_client = _deadline_http_client(self.timeout_s, {"request": [on_request] + hooks["request"],
                                                                 "response": hooks["response"]})
            if self.endpoint.provider == "azure":
                self._client = openai.AsyncAzureOpenAI(azure_endpoint=trust.canonical_base_url(self.endpoint.base_url),
                                                       api_version=self.endpoint.api_version or "2024-10-21",
                                                       api_key=self._api_key, max_retries=self.max_retries,
                                                       timeout=self.timeout_s, http_client=http_client)
            else:
                self._client = openai.AsyncOpenAI(base_url=trust.canonical_base_url(self.endpoint.base_url),
                                                  api_key=self._api_key, max_retries=self.max_retries,
                                                  timeout=self.timeout_s, http_client=http_client)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def send(self, request: Request) -> Response:
        """Send one request (waiting for a concurrency slot); raise ``RequestFailed`` with a reason on failure."""
        async with self.limiter:  # the configured concurrency, lowered for a while after a 429 (AIMD)
            return await self._send_now(request)

    async def _send_now(self, request: Request) -> Response:
        client = self.sdk()
        state = _Attempts()
        token = _current.set(state)
        t0 = time.perf_counter()
        self.stats.requests += 1
        try:
            if isinstance(request, ChatRequest):
                raw = await client.chat.completions.create(**_sdk_arguments(client.chat.completions.create,
                                                                            request_body(self.endpoint, request)))
                resp = chat_response(_expect_json(raw, self.endpoint))
            elif isinstance(request, CompletionRequest):
                raw = await client.completions.create(**_sdk_arguments(client.completions.create,
                                                                       request_body(self.endpoint, request)))
                resp = completion_response(_expect_json(raw, self.endpoint),
                                           prompt=request.prompt if request.echo else None)
            else:
                raise TypeError(f"not a request: {type(request).__name__}")
            hostile = hostile_numbers(resp)
            if hostile:  # a failure of this request: not scored, not cached, its tokens not counted
                raise RequestFailed(hostile)
        except RequestFailed:
            self.stats.failures += 1
            raise
        except (openai.APIError, ValueError) as err:
            self.stats.failures += 1
            raise RequestFailed(redact(_describe_error(err, state.retries), [self._api_key]),
                                retryable=isinstance(err, (openai.APIConnectionError, openai.RateLimitError,
                                                           openai.InternalServerError)),
                                refusal=_refusal_fields(err, [self._api_key])) from None
        finally:
            _current.reset(token)
            if state.retries:
                self.stats.retrying_now -= 1
        resp.latency_s = time.perf_counter() - t0
        self.stats.latency_s += resp.latency_s
        self.stats.prompt_tokens += int(resp.usage.get("prompt_tokens", 0) or 0)
        self.stats.completion_tokens += int(resp.usage.get("completion_tokens", 0) or 0)
        return resp

    async def probe(self, send: Callable[[Request], Awaitable[Response]] | None = None) -> Capabilities:
        """Find what the endpoint supports with three tiny requests (each through ``send``, e.g. the cache).

        chat log-probs / top_logprobs: ask for 20 alternatives (then 5 if 20 is rejected) on a one-token reply;
        honours n: ask for 3 samples;
        echo log-probs: a completions call with echo=True, logprobs=1, max_tokens=0. An endpoint that rejects a
        parameter (HTTP 400/404/422) simply lacks that capability."""
        send = send or self.send
        lp = ChatRequest(messages=(("user", "Reply with one digit from 1 to 5."),), max_tokens=1, logprobs=True,
                         top_logprobs=20)
        nreq = ChatRequest(messages=(("user", "Reply with one digit from 1 to 5."),), max_tokens=1, n=3,
                           temperature=1.0)
        echo = CompletionRequest(prompt="The quick brown fox jumps over the lazy dog.", max_tokens=0, echo=True,
                                 logprobs=1)

        async def attempt(req: Request) -> Response | None:
            try:
                return await send(req)
            except RequestFailed as e:
                if e.reason.startswith(("HTTP 400", "HTTP 404", "HTTP 405", "HTTP 422", "HTTP 501")):
                    return None
                raise

        r_lp, r_n, r_echo = await asyncio.gather(attempt(lp), attempt(nreq), attempt(echo))
        if r_lp is None:
            # some servers cap top_logprobs at 5 (older Azure deployments) and reject 20 outright
            r_lp = await attempt(replace(lp, top_logprobs=5))
        first = r_lp.choices[0].tokens if r_lp is not None and r_lp.choices else None
        chat_lp = r_lp is not None and bool(first) and _answer_has_logprobs(r_lp)
        top = len(first[0].top) if chat_lp and first else 0
        honours_n = bool(r_n and len(r_n.choices) == 3)
        echo_ok = False
        if r_echo and r_echo.choices and r_echo.choices[0].tokens:
            toks = r_echo.choices[0].tokens
            echo_ok = len(toks) >= 2 and any(t.logprob is not None for t in toks[1:])
        return Capabilities(chat_logprobs=chat_lp, top_logprobs=top, honours_n=honours_n, echo_logprobs=echo_ok)


def _answer_has_logprobs(resp: Response) -> bool:
    """False when a reasoning judge's log-probs cannot be placed at its answer: the reasoning came apart from the
    content (a server field) but the token log-probs do not spell the content (they cover the reasoning too), so a
    log-prob method would have no distribution at the answer's position and samples instead. A reply that ended
    inside its reasoning says nothing either way (a larger budget reaches the answer): log-probs are assumed."""
    from evalcore.methods.base import separate_reasoning

    sep = separate_reasoning([resp])
    if not sep.reasoning[0] or sep.no_answer[0]:
        return True
    return sep.responses[0].choices[0].tokens is not None


# ------------------------------------------------------------------------------------------------ conversions
_REFUSAL_FINISH = ("content_filter",)


def chat_response(raw: ChatCompletion) -> Response:
    """openai ChatCompletion -> Response. A refusal (``message.refusal``, or Azure's content filter) becomes a
    choice with finish_reason "refusal" and the refusal text, so the runner can report it as such."""
    choices = []
    for c in raw.choices or []:
        msg = c.message
        text = (msg.content if msg is not None else None) or ""
        finish: str | None = c.finish_reason
        refusal = getattr(msg, "refusal", None) if msg is not None else None
        if refusal:
            text, finish = str(refusal), "refusal"
        elif finish in _REFUSAL_FINISH:
            finish = "refusal"
        tokens = None
        lp = getattr(c, "logprobs", None)
        if lp is not None and getattr(lp, "content", None):
            tokens = tuple(
                TokenLogprob(token=t.token, logprob=t.logprob,
                             top=tuple((a.token, a.logprob) for a in (t.top_logprobs or ())))
                for t in lp.content
            )
        choices.append(Choice(text=text, tokens=tokens, finish_reason=finish, reasoning=_reasoning_of(msg)))
    if not choices:
        raise ValueError("response has no choices")
    return Response(choices=choices, usage=_usage(raw), model=_reported_model(raw))


def _reasoning_of(msg: ChatCompletionMessage | None) -> str | None:
    """The reasoning a server returns apart from the answer: ``message.reasoning_content`` (vLLM before 0.11, llama.cpp
    with --reasoning-format deepseek, DeepSeek's API) or ``message.reasoning`` (vLLM 0.11+, OpenRouter, Ollama's
    OpenAI compatibility). Both are extra fields to openai-python's message model."""
    if msg is None:
        return None
    for name in ("reasoning_content", "reasoning"):
        value = getattr(msg, name, None)
        if value is None:
            value = (getattr(msg, "model_extra", None) or {}).get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def completion_response(raw: Completion, *, prompt: str | None = None) -> Response:
    """openai Completion -> Response. With echo, ``prompt_token_count`` counts the tokens whose text offset lies
    inside the prompt (what GPTScore averages over)."""
    choices = []
    for c in raw.choices or []:
        tokens = None
        count = None
        lp = getattr(c, "logprobs", None)
        if lp is not None and lp.tokens:
            tops = lp.top_logprobs or [None] * len(lp.tokens)
            lps = lp.token_logprobs or [None] * len(lp.tokens)
            tokens = tuple(
                TokenLogprob(token=t, logprob=v,
                             top=tuple(sorted(((k, float(x)) for k, x in (tp or {}).items()), key=lambda p: -p[1])))
                for t, v, tp in zip(lp.tokens, lps, tops)
            )
            if prompt is not None:
                if lp.text_offset:
                    count = sum(1 for off in lp.text_offset if off < len(prompt))
                else:
                    # no offsets: count tokens until their concatenation covers the prompt
                    acc, count = 0, 0
                    for t in lp.tokens:
                        if acc >= len(prompt):
                            break
                        acc += len(t)
                        count += 1
        text = c.text or ""
        if prompt is not None and text.startswith(prompt):
            text = text[len(prompt):]
        choices.append(Choice(text=text, tokens=tokens, finish_reason=c.finish_reason, prompt_token_count=count))
    if not choices:
        raise ValueError("response has no choices")
    return Response(choices=choices, usage=_usage(raw), model=_reported_model(raw))


def _reported_model(raw: ChatCompletion | Completion) -> str:
    """The response's ``model``: the snapshot that answered (e.g. gpt-4o-2024-08-06 for gpt-4o), part of a run's
    fingerprint (evalcore.fingerprint)."""
    model = getattr(raw, "model", None)
    return model if isinstance(model, str) else ""


def _usage(raw: ChatCompletion | Completion) -> dict[str, Any]:
    u = getattr(raw, "usage", None)
    if u is None:
        return {}
    out = {k: _token_count(getattr(u, k, 0)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached:  # prompt tokens the server served from its prefix cache (OpenAI prompt caching, vLLM APC)
        out["cached_tokens"] = _token_count(cached)
    done = getattr(u, "completion_tokens_details", None)
    reasoning = getattr(done, "reasoning_tokens", None) if done is not None else None
    if reasoning:  # hidden reasoning tokens, part of completion_tokens (OpenAI's reasoning models)
        out["reasoning_tokens"] = _token_count(reasoning)
    return out


def _token_count(value: SupportsFloat | SupportsIndex | str | None) -> int | float:
    """A usage figure as the endpoint reported it: an int when it is a whole number, else what it is (NaN for a
    value that is no number), for ``hostile_numbers`` to refuse."""
    try:
        x = float(value or 0)
    except (TypeError, ValueError, OverflowError):
        return math.nan
    return int(x) if math.isfinite(x) and x.is_integer() else x


# No request of a judge spends more: the largest context windows of 2026 hold about 2 million tokens, and a reply's
# budget is a fraction of it. A figure past it, negative or not a whole number is the endpoint's error (or a lie
# that would make a run's cost what the endpoint says), never a count to charge or to store.
MAX_USAGE_TOKENS = 10_000_000
# A log-prob is log p <= 0; a server's float rounding may report a hair above 0 for p = 1, nothing more.
LOGPROB_ROUNDING = 1e-3


def hostile_numbers(resp: Response) -> str | None:
    """Why a reply's numbers cannot be used, or None: a log-prob that is not a number or above 0 (NaN, +inf: a
    distribution computed from it would be no distribution; -inf, probability 0, is a number), or a usage figure
    that is negative, not a whole number or over ``MAX_USAGE_TOKENS``. Such a reply is a failed request with this
    reason (counted, not scored, not cached, its tokens not counted): choosing to refuse rather than clamp keeps a
    lying endpoint from setting what a run is charged."""
    for choice in resp.choices:
        for pos, t in enumerate(choice.tokens or ()):
            for token, lp in ((t.token, t.logprob), *t.top):
                if lp is None:
                    continue
                if not isinstance(lp, (int, float)) or math.isnan(lp) or lp > LOGPROB_ROUNDING:
                    return (f"the endpoint reported an impossible log-prob ({lp!r}) for the token {str(token)[:20]!r} "
                            f"at position {pos}: a log-prob is a number <= 0, so the reply is not scored")
    for k, v in (resp.usage or {}).items():
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_USAGE_TOKENS:
            return (f"the endpoint reported an implausible usage ({k} = {v!r}; a request's counts lie between 0 and "
                    f"{MAX_USAGE_TOKENS:,} tokens): the reply is not used and its tokens are not counted")
    return None


# ------------------------------------------------------------------------------------------------ (de)serialisation
def response_to_dict(resp: Response) -> dict[str, Any]:
    return {
        "choices": [
            {"text": c.text, "finish_reason": c.finish_reason, "prompt_token_count": c.prompt_token_count,
             "tokens": None if c.tokens is None else [[t.token, t.logprob, [list(a) for a in t.top]] for t in c.tokens],
             **({"reasoning": c.reasoning} if c.reasoning else {})}
            for c in resp.choices
        ],
        "usage": dict(resp.usage),
    }


def response_from_dict(d: dict[str, Any], *, latency_s: float = 0.0, cached: bool = False) -> Response:
    choices = [
        Choice(text=c["text"], finish_reason=c.get("finish_reason"), prompt_token_count=c.get("prompt_token_count"),
               reasoning=c.get("reasoning"), tokens=None if c.get("tokens") is None else tuple(
                   TokenLogprob(token=t[0], logprob=t[1], top=tuple((a[0], a[1]) for a in t[2])) for t in c["tokens"]))
        for c in d["choices"]
    ]
    return Response(choices=choices, usage=dict(d.get("usage") or {}), latency_s=latency_s, cached=cached)


__all__ = [
    "Endpoint", "PRESETS", "endpoint_from_preset", "JudgeClient", "RequestStats", "RequestFailed", "MissingApiKey",
    "EndpointUnusable", "hostile_numbers", "MAX_USAGE_TOKENS",
    "chat_response", "completion_response", "response_to_dict", "response_from_dict", "request_body",
]
