"""Rate-limit-aware concurrency for one endpoint: read what the server says about its limits and pace to it.

Hosted APIs announce their limits on every reply (OpenAI's names, also used by Azure and several gateways)::

    x-ratelimit-limit-requests / -tokens       the per-minute limit
    x-ratelimit-remaining-requests / -tokens   what is left in the server's bucket now
    x-ratelimit-reset-requests / -tokens       how long until the bucket is full again ("1s", "6m0s", "120ms")
    retry-after / retry-after-ms               on a 429: how long to wait

``RateLimiter`` uses them in two ways:

* **pacing** (once the limits are known): a local token bucket that refills at ``safety`` x the announced rate
  (limit / 60 s; 99 %), holding ``burst_share`` of the server's burst capacity (inferred as ``remaining + reset x rate``:
  requests leave here before they reach the server, so sends spread out here may arrive together), re-synchronised
  downward on every reply with ``remaining - (sends since that request)``; every HTTP attempt (openai's own retries
  included, through the httpx request hook) waits for a token before it goes out;
* **additive increase, multiplicative decrease** (AIMD, as TCP's congestion control, Jacobson 1988) on a 429, at
  most once per round of requests (a 429 for a request sent before the last decrease does not decrease again): when
  the limits are known, the pacer's rate drops to 90 % and climbs back by 0.5 % per answer; when they are not, the
  concurrency window halves and grows back by 1/window per answer, up to the configured concurrency. Every 429's
  ``retry-after`` pauses every attempt.

Without rate-limit headers (vLLM, Ollama, the loopback without limits) nothing is paced and the window stays at the
configured concurrency, so an unlimited endpoint runs exactly as before.

**Several processes on one endpoint** (workers on a PostgreSQL store, evalcore.workers): each learns the same limits
from the same replies, so each pacing alone to them would send together up to N times the limit. A worker process
therefore also takes every attempt's tokens from :class:`SharedBuckets`, the pacer's buckets kept in the store (a
row per endpoint and bucket, refilled and taken in one short transaction under the row's lock, at the server's
clock), so that the limit holds in total. What stays per process: the window, the retry-after pause and the
downward re-synchronisation to a reply's ``remaining`` (each lowers only its own pace, never raising the total).
On SQLite, and in the app's and the command line's own runs, nothing is shared (one process sends).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

if TYPE_CHECKING:  # the HTTP library of the openai release type-checked against (its hooks see its requests)
    import httpx2

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(value: str | None) -> float | None:
    """Seconds from OpenAI's reset format ("1s", "6m0s", "20ms", "1h2m3.5s") or a plain number of seconds."""
    if value is None:
        return None
    v = str(value).strip()
    if not v:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    parts = _DURATION_RE.findall(v)
    if not parts or "".join(a + b for a, b in parts) != v.replace(" ", ""):
        return None
    scale = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(a) * scale[b] for a, b in parts)


def _num(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms`` (preferred, as openai-python does) or ``retry-after`` in seconds; None if absent."""
    ms = _num(headers.get("retry-after-ms"))
    if ms is not None:
        return max(0.0, ms / 1000)
    s = _num(headers.get("retry-after"))
    return None if s is None else max(0.0, s)


@dataclass
class Limits:
    """One reply's rate-limit headers (None where absent)."""

    limit_requests: float | None = None
    remaining_requests: float | None = None
    reset_requests_s: float | None = None
    limit_tokens: float | None = None
    remaining_tokens: float | None = None
    reset_tokens_s: float | None = None

    @classmethod
    def from_headers(cls, h: Mapping[str, str]) -> "Limits":
        return cls(limit_requests=_num(h.get("x-ratelimit-limit-requests")),
                   remaining_requests=_num(h.get("x-ratelimit-remaining-requests")),
                   reset_requests_s=parse_duration(h.get("x-ratelimit-reset-requests")),
                   limit_tokens=_num(h.get("x-ratelimit-limit-tokens")),
                   remaining_tokens=_num(h.get("x-ratelimit-remaining-tokens")),
                   reset_tokens_s=parse_duration(h.get("x-ratelimit-reset-tokens")))

    @property
    def any(self) -> bool:
        return self.limit_requests is not None or self.limit_tokens is not None


class Clock:
    """Where the limiter reads the time and waits: the monotonic clock and the event loop's sleep. Tests inject a
    virtual clock (evalcore.testing.clock) so that what the pacer decides does not depend on the machine's load."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Bucket:
    """The client's mirror of one server bucket (requests or tokens)."""

    def __init__(self, rate_per_s: float, capacity: float, now: float) -> None:
        self.rate = rate_per_s
        self.capacity = max(1.0, capacity)
        self.level = 0.0
        self.t = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now

    def wait_for(self, cost: float) -> float:
        need = min(cost, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.rate


@dataclass
class LimiterStats:
    rate_limited: int = 0  # attempts answered 429
    decreases: int = 0  # multiplicative decreases of the window
    paced_wait_s: float = 0.0  # time attempts spent waiting for the pacer or a retry-after pause
    limit_requests_per_min: float | None = None
    limit_tokens_per_min: float | None = None
    min_window: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"rate_limited": self.rate_limited, "window_decreases": self.decreases,
                "paced_wait_s": round(self.paced_wait_s, 3), "limit_requests_per_min": self.limit_requests_per_min,
                "limit_tokens_per_min": self.limit_tokens_per_min, "min_window": self.min_window}


# creating the shared buckets' table: one process at a time (any 64-bit key unlikely to meet another lock)
_TABLE_LOCK = 0x6576616C5F726C31


class SharedBuckets:
    """The pacer's token buckets kept in a PostgreSQL store at ``url``, one row per (endpoint, bucket): every process
    that takes from them paces against the same bucket. A take is one short transaction on this object's own
    connection: the rows locked (``SELECT ... FOR UPDATE``, always in the same order: no deadlock), refilled at the
    taker's rate since the row's time, the cost subtracted when every bucket holds it, else nothing taken and the
    wait returned. The time is the database server's (``clock_timestamp()``), the one clock every worker shares,
    whatever machine it runs on; tests inject ``now`` (a virtual clock). The table is UNLOGGED and made on first use:
    it holds pacing state, not the store's data (lost in a server crash, it starts full again, as a new process's
    local bucket does), so it is no part of the store's schema or its migrations."""

    TABLE = "evalcore_rate_buckets"

    def __init__(self, url: str, *, now: Callable[[], float] | None = None) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self._now = now
        self._lock = threading.Lock()  # one take at a time on this connection
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_TABLE_LOCK,))
            self.conn.execute(f"CREATE UNLOGGED TABLE IF NOT EXISTS {self.TABLE} (key TEXT NOT NULL, bucket TEXT "
                              "NOT NULL, level DOUBLE PRECISION NOT NULL, t DOUBLE PRECISION NOT NULL, "
                              "PRIMARY KEY (key, bucket))")

    def take(self, key: str, wants: list[tuple[str, float, float, float]]) -> float:
        """Take ``cost`` from each bucket ``name`` of endpoint ``key`` (``wants``: (name, cost, rate per second,
        capacity)): 0.0 when taken, else the seconds to wait before asking again (nothing taken)."""
        with self._lock, self.conn.transaction():
            now = self._now() if self._now is not None else float(
                self.conn.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0])  # type: ignore[index]
            wait, levels = 0.0, {}
            for name, cost, rate, capacity in sorted(wants):
                self.conn.execute(f"INSERT INTO {self.TABLE} (key, bucket, level, t) VALUES (%s, %s, %s, %s) "
                                  "ON CONFLICT DO NOTHING", (key, name, capacity, now))
                level, t = self.conn.execute(f"SELECT level, t FROM {self.TABLE} WHERE key = %s AND bucket = %s "
                                             "FOR UPDATE", (key, name)).fetchone()  # type: ignore[misc]
                level = min(capacity, level + max(0.0, now - t) * rate)
                need = min(cost, capacity) - level
                wait = max(wait, need / rate if need > 0 else 0.0)
                levels[name] = (level, cost, max(t, now))
            for name, (level, cost, t) in levels.items():
                left = level - cost if wait <= 1e-6 else level
                self.conn.execute(f"UPDATE {self.TABLE} SET level = %s, t = %s WHERE key = %s AND bucket = %s",
                                  (left, t, key, name))
            return 0.0 if wait <= 1e-6 else wait

    def close(self) -> None:
        self.conn.close()


_process_shared: SharedBuckets | None = None


def share_across_processes(url: str | None) -> None:
    """From now on, every RateLimiter made in this process also takes from the store's buckets at ``url`` (None:
    no longer). A worker process calls it (evalcore.workers.work)."""
    global _process_shared
    if _process_shared is not None:
        _process_shared.close()
    _process_shared = SharedBuckets(url) if url else None


def endpoint_key(request: httpx2.Request, body: bytes | None) -> str:
    """The shared buckets' key of a request: the URL it goes to (no query) and the model it asks for (hosted APIs
    limit per model)."""
    model = ""
    try:
        model = str(json.loads(body or b"{}").get("model") or "")
    except (ValueError, UnicodeDecodeError, AttributeError):
        pass
    u = request.url
    return f"{u.scheme}://{u.host}:{u.port or ''}{u.path}|{model}"


class RateLimiter:
    """Paces HTTP attempts to an endpoint's announced limits and keeps an AIMD concurrency window. ``shared``: the
    store's buckets every process takes from as well (:class:`SharedBuckets`; default: this process's, set by
    :func:`share_across_processes`, else none)."""

    def __init__(self, max_concurrency: int, *, safety: float = 0.99, burst_share: float = 0.5,
                 chars_per_token: float = 4.0, clock: Clock | None = None,
                 shared: SharedBuckets | None = None) -> None:
        self.clock = clock or Clock()
        self.shared = shared if shared is not None else _process_shared
        self.max_concurrency = max(1, int(max_concurrency))
        self.window = float(self.max_concurrency)
        self.safety = safety
        # the local bucket holds only part of the server's burst: requests leave here before they reach the server
        # (new connections, the network), so sends that look spread out here may arrive together there
        self.burst_share = burst_share
        self.chars_per_token = chars_per_token
        self.stats = LimiterStats()
        self._inflight = 0
        self._waiters: deque[asyncio.Future] = deque()
        self._pace_lock: asyncio.Lock | None = None
        self._req: _Bucket | None = None
        self._tok: _Bucket | None = None
        self._pause_until = 0.0
        self._seq = 0  # attempts sent so far
        self._sent_tokens: deque[tuple[int, float]] = deque(maxlen=4096)  # (seq, token cost) of recent sends
        self._last_decrease_seq = -1
        self._factor = 1.0  # the pacer's share of the announced rate, lowered after a 429 (AIMD on the rate)
        self._base_rates: dict[str, float] = {}

    def _apply_factor(self) -> None:
        for name, b in (("req", self._req), ("tok", self._tok)):
            if b is not None and name in self._base_rates:
                b.rate = self._base_rates[name] * self.safety * self._factor

    # ------------------------------------------------------------------ the concurrency window (logical requests)
    async def acquire(self) -> None:
        while self._inflight >= max(1, int(self.window)):
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    self._wake()  # woken, then cancelled: hand the slot to the next waiter
                raise
        self._inflight += 1

    def release(self) -> None:
        self._inflight -= 1
        self._wake()

    def _wake(self) -> None:
        free = max(1, int(self.window)) - self._inflight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    async def __aenter__(self) -> "RateLimiter":
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    # ------------------------------------------------------------------ each HTTP attempt (httpx event hooks)
    def token_cost(self, body: bytes | None) -> float:
        """What the server will count for a request: prompt tokens (characters / 4) + max_tokens x n, as OpenAI
        counts a request against the token limit before it runs."""
        if not body:
            return 1.0
        try:
            req = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return len(body) / self.chars_per_token
        if "messages" in req:
            chars = sum(len(str(m.get("content") or "")) for m in req.get("messages") or [])
        else:
            p = req.get("prompt") or ""
            chars = len(p) if isinstance(p, str) else sum(len(str(x)) for x in p)
        out = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16) * int(req.get("n") or 1)
        return chars / self.chars_per_token + out

    async def before_attempt(self, request: httpx2.Request) -> None:
        """Wait for a retry-after pause and for the pacer; then count the attempt as sent."""
        cost = 1.0
        if self._tok is not None:
            cost = self.token_cost(getattr(request, "content", None))
        if self._req is not None or self._tok is not None or self._pause_until > self.clock.now():
            if self._pace_lock is None:
                self._pace_lock = asyncio.Lock()
            t0 = self.clock.now()
            async with self._pace_lock:  # FIFO: one attempt waits for the next token at a time
                while True:
                    now = self.clock.now()
                    wait = self._pause_until - now
                    for b, c in ((self._req, 1.0), (self._tok, cost)):
                        if b is not None:
                            b.refill(now)
                            wait = max(wait, b.wait_for(c))
                    if wait <= 1e-6 and self.shared is not None:  # this process may send: may all of them?
                        wait = self._take_shared(request, cost)
                    if wait <= 1e-6:  # below a microsecond: float rounding of level + elapsed x rate, not a wait
                        break
                    await self.clock.sleep(wait)
                if self._req is not None:
                    self._req.level -= 1.0
                if self._tok is not None:
                    self._tok.level -= cost
            self.stats.paced_wait_s += self.clock.now() - t0
        self._seq += 1
        self._sent_tokens.append((self._seq, cost))
        try:
            request.extensions["evalcore_seq"] = self._seq
            request.extensions["evalcore_sent_at"] = self.clock.now()
        except (AttributeError, TypeError):
            pass

    def _take_shared(self, request: httpx2.Request, cost: float) -> float:
        """The attempt's request and tokens taken from the store's buckets too: 0.0, or the seconds to wait."""
        assert self.shared is not None
        wants = [(name, c, b.rate, b.capacity) for name, b, c in (("req", self._req, 1.0), ("tok", self._tok, cost))
                 if b is not None]
        return self.shared.take(endpoint_key(request, getattr(request, "content", None)), wants)

    def after_attempt(self, status: int, headers: Mapping[str, str], seq: int | None = None,
                      sent_at: float | None = None) -> None:
        """Learn from one reply's headers; a 429 pauses everyone for retry-after and halves the window."""
        lim = Limits.from_headers(headers)
        if lim.any:
            self._sync(lim, seq, sent_at)
        if status == 429:
            self.stats.rate_limited += 1
            ra = retry_after_s(headers)
            if ra is None:
                ra = lim.reset_requests_s if lim.remaining_requests == 0 else None
            if ra is not None and ra <= 120.0:
                # a longer wait is not retried at all (the reply fails with the server's reason: client.py), so it
                # must not hold the other requests back either
                self._pause_until = max(self._pause_until, self.clock.now() + ra)
            for b in (self._req, self._tok):
                if b is not None:
                    b.level = min(b.level, 0.0)
            if seq is None or seq > self._last_decrease_seq:
                self._last_decrease_seq = self._seq
                self.stats.decreases += 1
                if self._req is not None or self._tok is not None:
                    # paced: the limits are known, so slow the pacer a little (not the window, which must stay
                    # above rate x latency to reach the limit at all)
                    self._factor = max(0.5, self._factor * 0.9)
                    self._apply_factor()
                else:
                    self.window = max(1.0, self.window / 2)
                    self.stats.min_window = (self.window if self.stats.min_window is None
                                             else min(self.stats.min_window, self.window))
        elif 200 <= status < 300:
            if self.window < self.max_concurrency:
                self.window = min(float(self.max_concurrency), self.window + 1.0 / max(self.window, 1.0))
                self._wake()
            if self._factor < 1.0:
                self._factor = min(1.0, self._factor + 0.005)  # additive increase: +0.1 per 20 answers
                self._apply_factor()

    def _sync(self, lim: Limits, seq: int | None, sent_at: float | None = None) -> None:
        """Lower the local buckets to what the server reported: its remaining count when it admitted the request,
        minus what was sent since, plus what it has refilled since (credited from the send time at the paced rate,
        a slight over-credit by the one-way network delay, covered by holding only part of the burst)."""
        age = max(0.0, self.clock.now() - sent_at) if sent_at is not None else 0.0
        if lim.limit_requests:
            self.stats.limit_requests_per_min = lim.limit_requests
            self._req = self._synced(self._req, "req", lim.limit_requests, lim.remaining_requests,
                                     lim.reset_requests_s, lambda: self._seq - seq if seq is not None else 0, age)
        if lim.limit_tokens:
            self.stats.limit_tokens_per_min = lim.limit_tokens
            self._tok = self._synced(self._tok, "tok", lim.limit_tokens, lim.remaining_tokens, lim.reset_tokens_s,
                                     lambda: sum(c for s, c in self._sent_tokens if seq is not None and s > seq), age)

    def _synced(self, bucket: _Bucket | None, name: str, limit: float, remaining: float | None,
                reset_s: float | None, used_since: Callable[[], float], age: float) -> _Bucket:
        """One bucket (requests or tokens per minute) set to the announced rate and burst, its level lowered to
        ``remaining - used_since() + age x rate`` when the server reported what remains."""
        rate = limit / 60.0
        cap = (remaining or 0) + (reset_s or 0) * rate
        cap = (min(cap, limit) if cap > 0 else limit) * self.burst_share
        if bucket is None:
            bucket = _Bucket(rate * self.safety, cap, self.clock.now())
            bucket.level = cap
        self._base_rates[name] = rate
        bucket.rate = rate * self.safety * self._factor
        bucket.capacity = max(1.0, cap)
        if remaining is not None:
            bucket.refill(self.clock.now())
            bucket.level = min(bucket.level, remaining - used_since() + age * bucket.rate)
        return bucket

    # ------------------------------------------------------------------ httpx hooks
    def hooks(self) -> dict[str, list[Callable[..., Awaitable[None]]]]:
        async def on_request(request: httpx2.Request) -> None:
            await self.before_attempt(request)

        async def on_response(response: httpx2.Response) -> None:
            seq = sent_at = None
            try:
                seq = response.request.extensions.get("evalcore_seq")
                sent_at = response.request.extensions.get("evalcore_sent_at")
            except (AttributeError, RuntimeError):
                pass
            self.after_attempt(response.status_code, response.headers, seq, sent_at)

        return {"request": [on_request], "response": [on_response]}


__all__ = ["RateLimiter", "Clock", "Limits", "LimiterStats", "SharedBuckets", "share_across_processes",
           "parse_duration", "retry_after_s"]
