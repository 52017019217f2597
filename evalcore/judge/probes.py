"""The capability probe's requests, cached both ways.

A probe request the endpoint answers is cached like any request (``cache`` table). A probe request the endpoint
REJECTS (HTTP 400/404/405/422/501: the parameter or the route is not supported, e.g. no ``/v1/completions`` for the
echo probe) is remembered too, in ``probe_failures``, with its reason: without it, every run against an endpoint
without echo would send the echo probe again, and a fully cached repeat run would not be free. Transient failures
(429, 5xx, timeouts) are never remembered. ``refresh=True`` (``--reprobe``) asks again and replaces both kinds. Both kinds are stored under the endpoint that
gave them: with replicas, under the replica that answered or rejected the request (``CachedSender.source``).
"""

from __future__ import annotations

from typing import Any, Protocol

from evalcore.judge.client import RequestFailed
from evalcore.store import Store, request_key
from evalcore.types import Request, Response

NOT_SUPPORTED = ("HTTP 400", "HTTP 404", "HTTP 405", "HTTP 422", "HTTP 501")


class ProbeRoute(Protocol):
    """What a probe goes through: the run's ``runner.CachedSender`` (described here, not imported: the engine imports
    this module), read-only."""

    @property
    def client(self) -> object | None: ...  # None: the cache alone answers

    @property
    def store(self) -> Store: ...

    @property
    def identity(self) -> dict[str, Any]: ...

    def shaped(self, request: Request, *, probe: bool = False) -> Request: ...

    def key(self, request: Request, *, probe: bool = False, identity: dict[str, Any] | None = None) -> str: ...

    def source(self, answer: Response | BaseException) -> dict[str, Any] | None: ...

    def lookup(self, request: Request, *, probe: bool = False) -> Response | None: ...

    def probe_failure(self, request: Request) -> str | None: ...

    async def refresh(self, request: Request, *, probe: bool = False) -> Response: ...

    async def send_and_cache(self, request: Request, *, probe: bool = False) -> Response: ...


def cached_failure(store: Store, key: str) -> str | None:
    return store.probe_failure(key)


def remember_failure(store: Store, key: str, *, endpoint: dict[str, Any], request: dict[str, Any],
                     reason: str) -> None:
    store.remember_probe_failure(key, endpoint=endpoint, request=request, reason=reason)


def forget_failure(store: Store, key: str) -> None:
    store.forget_probe_failure(key)


class ProbeSender:
    """``send`` for ``JudgeClient.probe``: the response cache, then the remembered rejections, then the endpoint.

    ``sender`` is the run's ``runner.CachedSender`` (its client may be None: cache only, as ``estimate`` uses it)."""

    def __init__(self, sender: ProbeRoute, *, refresh: bool = False) -> None:
        self.sender = sender
        self.refresh = refresh
        self.sent = 0  # requests that went to the endpoint

    async def __call__(self, request: Request) -> Response:
        s = self.sender
        shaped = s.shaped(request, probe=True)  # as the endpoint's learned contract shapes it (evalcore.judge.contract)
        if not self.refresh:
            hit = s.lookup(request, probe=True)
            if hit is not None:
                return hit
            reason = s.probe_failure(request)  # any member's (a replica set's), the first endpoint's first
            if reason is not None:
                raise RequestFailed(reason)
        if s.client is None:
            raise RequestFailed("not in the cache and no client to ask")
        self.sent += 1
        try:
            resp = await (s.refresh(request, probe=True) if self.refresh else s.send_and_cache(request, probe=True))
        except RequestFailed as e:
            who = s.source(e)  # the endpoint that rejected it: a replica's rejection is its own
            if e.reason.startswith(NOT_SUPPORTED) and who is not None:
                # keyed as finally shaped: the refusal may have taught the contract something on the way
                remember_failure(s.store, s.key(request, probe=True, identity=who), endpoint=who,
                                 request=s.shaped(request, probe=True).params(), reason=e.reason)
            raise
        if self.refresh:
            who = s.source(resp) or s.identity
            forget_failure(s.store, request_key(who, shaped.params()))
        return resp


__all__ = ["ProbeSender", "NOT_SUPPORTED", "cached_failure", "remember_failure", "forget_failure"]
