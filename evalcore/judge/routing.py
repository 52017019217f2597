"""Several endpoints for one run (e.g. vLLM replicas without a load balancer).

``EndpointPool`` has the interface the engine uses of a ``JudgeClient`` (``send``, ``probe``, ``stats``,
``aclose``) over one ``JudgeClient`` per endpoint, each with its own concurrency window and rate limiter:

* **least outstanding requests**: each request goes to the live endpoint with the fewest requests assigned and not
  yet answered (ties: the one that got a request least recently), so a slow replica gets less work;
* **draining**: a request that fails for a transient reason (connection, timeout or 5xx after the member's own few
  retries) is sent again to another live endpoint; an endpoint that fails ``drain_after`` times in a row is drained
  (no new work) and tried again after ``cooldown_s`` with a single request. A 429 is not a failure of the endpoint:
  the request is routed again (possibly to the same endpoint, whose limiter now paces it) and nothing is drained.
  The run fails a request only when every endpoint is drained or after ``max_failovers`` further attempts;
* **provenance**: each response carries ``answered_by`` (the base URL that answered), which the engine records,
  and so does a failure one member gave (a refusal naming a parameter, a rejected probe request).

Replicas are assumed to serve the same model, but a replica may be anyone's server: every reply and every refusal is
stored under the identity of the endpoint that gave it (``runner.CachedSender.source``), and a run of the set reads
every member's. A later run with the same list is served from the cache; a run on one of the endpoints alone reads
that endpoint's own replies only, never another member's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from evalcore.judge.client import Endpoint, JudgeClient, RequestFailed, RequestStats
from evalcore.types import Capabilities, Request, Response


@dataclass
class Member:
    endpoint: Endpoint
    client: JudgeClient
    outstanding: int = 0
    last_pick: float = 0.0
    consecutive_failures: int = 0
    drained_at: float | None = None
    drain_reason: str = ""
    answered: int = 0
    failed: int = 0
    drains: int = 0
    probing: bool = False

    def describe(self) -> dict[str, Any]:
        return {"base_url": self.endpoint.base_url, "answered": self.answered, "failed_attempts": self.failed,
                "drained": self.drained_at is not None, "drain_reason": self.drain_reason, "drains": self.drains,
                **{k: v for k, v in self.client.limiter.stats.as_dict().items() if k in ("rate_limited",)}}


@dataclass
class PoolStats:
    failovers: int = 0  # requests sent again to another endpoint after a transient failure
    members: list[dict[str, Any]] = field(default_factory=list)


class EndpointPool:
    def __init__(self, endpoints: list[Endpoint], *, api_key: str | None = None, concurrency: int = 16,
                 max_retries: int = 6, timeout_s: float = 60.0, drain_after: int = 3, cooldown_s: float = 30.0,
                 member_retries: int = 1, max_failovers: int | None = None) -> None:
        if not endpoints:
            raise ValueError("an endpoint pool needs at least one endpoint")
        models = {e.model for e in endpoints}
        if len(models) > 1:
            raise ValueError(f"every endpoint of a pool serves the same model; got {sorted(models)}")
        self.endpoint = endpoints[0]
        self.concurrency = concurrency  # per endpoint
        self.total_concurrency = concurrency * len(endpoints)
        self.drain_after = drain_after
        self.cooldown_s = cooldown_s
        self.max_failovers = max(len(endpoints) - 1, 1) * 2 if max_failovers is None else max_failovers
        # the members retry little themselves: a failing replica's work should move on, not wait on its backoff
        self.members = [Member(e, JudgeClient(e, api_key=api_key, concurrency=concurrency,
                                              max_retries=min(max_retries, member_retries), timeout_s=timeout_s))
                        for e in endpoints]
        self.pool_stats = PoolStats()
        self._changed: asyncio.Event | None = None

    def redact(self, text: str | None) -> str:
        """``text`` without the key or any token (every member holds the same key)."""
        return self.members[0].client.redact(text)

    def __repr__(self) -> str:
        return f"EndpointPool({[m.endpoint.base_url for m in self.members]!r}, concurrency={self.concurrency})"

    # ----------------------------------------------------------------------------------------- stats (summed)
    @property
    def stats(self) -> RequestStats:
        total = RequestStats()
        for m in self.members:
            for k, v in vars(m.client.stats).items():
                setattr(total, k, getattr(total, k) + v)
        return total

    def extra_stats(self) -> dict[str, Any]:
        return {"endpoints": [m.describe() for m in self.members], "failovers": self.pool_stats.failovers,
                "rate_limited": sum(m.client.limiter.stats.rate_limited for m in self.members)}

    # ----------------------------------------------------------------------------------------- routing
    def _live(self) -> list[Member]:
        now = time.monotonic()
        live = []
        for m in self.members:
            if m.drained_at is None:
                live.append(m)
            elif not m.probing and now - m.drained_at >= self.cooldown_s:
                live.append(m)  # half-open: one request may test it again
        return live

    def pick(self, exclude: frozenset[int] | set[int] = frozenset()) -> Member | None:
        live = [m for i, m in enumerate(self.members) if i not in exclude and m in self._live()]
        if not live:
            return None
        return min(live, key=lambda m: (m.outstanding / max(m.client.limiter.window, 1.0), m.last_pick))

    async def send(self, request: Request) -> Response:
        tried: set[int] = set()
        last: RequestFailed | None = None
        for _ in range(self.max_failovers + 1):
            m = self.pick(tried)
            if m is None:
                break
            i = self.members.index(m)
            half_open = m.drained_at is not None
            if half_open:
                m.probing = True
            m.outstanding += 1
            m.last_pick = time.monotonic()
            try:
                resp = await m.client.send(request)
            except RequestFailed as e:
                m.failed += 1
                last = e
                e.answered_by = m.endpoint.base_url  # who refused: its refusal is stored under its own identity
                if not e.retryable:
                    if half_open:
                        m.probing = False
                    raise
                self.pool_stats.failovers += 1
                if e.reason.startswith("HTTP 429"):
                    # rate-limited, not broken: never drained for it; its limiter now paces it, so it may be
                    # picked again (least outstanding decides)
                    m.probing = False
                    continue
                tried.add(i)
                m.consecutive_failures += 1
                if half_open or m.consecutive_failures >= self.drain_after:
                    if m.drained_at is None:
                        m.drains += 1
                    m.drained_at = time.monotonic()
                    m.drain_reason = e.reason
                m.probing = False
                continue
            finally:
                m.outstanding -= 1
            m.consecutive_failures = 0
            if half_open:
                m.drained_at = None
                m.probing = False
            m.answered += 1
            resp.answered_by = m.endpoint.base_url
            return resp
        if last is None:
            reasons = "; ".join(f"{m.endpoint.base_url}: {m.drain_reason}" for m in self.members if m.drain_reason)
            raise RequestFailed(f"every endpoint is drained ({reasons})", retryable=True)
        n = max(len(tried), 1)
        raise RequestFailed(f"{last.reason} (on {n} endpoint{'s' if n > 1 else ''})", retryable=last.retryable)

    async def probe(self, send: Callable[[Request], Awaitable[Response]] | None = None) -> Capabilities:
        return await JudgeClient.probe(self, send=send)  # type: ignore[arg-type]  # it uses only self.send

    async def aclose(self) -> None:
        for m in self.members:
            await m.client.aclose()


def make_client(endpoint: Endpoint | list[Endpoint], *, api_key: str | None = None, concurrency: int = 16,
                max_retries: int = 6, timeout_s: float = 60.0) -> tuple[Endpoint, Any]:
    """(the first endpoint, a JudgeClient or, for several endpoints, an EndpointPool)."""
    eps = list(endpoint) if isinstance(endpoint, (list, tuple)) else [endpoint]
    if len(eps) == 1:
        return eps[0], JudgeClient(eps[0], api_key=api_key, concurrency=concurrency, max_retries=max_retries,
                                   timeout_s=timeout_s)
    return eps[0], EndpointPool(eps, api_key=api_key, concurrency=concurrency, max_retries=max_retries,
                                timeout_s=timeout_s)


__all__ = ["EndpointPool", "Member", "make_client"]
