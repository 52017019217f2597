"""A virtual clock for tests of timing decisions (the rate limiter's pacing): ``sleep`` moves the time forward at
once instead of waiting, so what the code decides is exact and does not depend on how busy the machine is."""

from __future__ import annotations

import asyncio


class VirtualClock:
    """``now()`` in virtual seconds; ``sleep(s)`` advances it by ``s`` and yields to the event loop once."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = float(start)
        self.slept = 0.0  # total virtual time spent in sleep()

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += max(0.0, float(seconds))

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        self.slept += max(0.0, float(seconds))
        await asyncio.sleep(0)


class ServerBucket:
    """A server's per-minute request limit as OpenAI documents its headers (x-ratelimit-limit-requests,
    -remaining-requests, -reset-requests; a 429 with retry-after when empty), on a clock: a token bucket holding
    ``burst_s`` seconds of the rate, refilled continuously."""

    def __init__(self, clock: VirtualClock, *, rpm: float, burst_s: float) -> None:
        self.clock = clock
        self.rate = rpm / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self.t = clock.now()
        self.rpm = rpm
        self.admitted = 0
        self.limited = 0

    def admit(self, at: float) -> tuple[int, dict[str, str]]:
        """The status and headers of a request arriving at virtual time ``at`` (not earlier than the last one)."""
        self.level = min(self.capacity, self.level + max(0.0, at - self.t) * self.rate)
        self.t = max(self.t, at)
        ok = self.level >= 1.0
        if ok:
            self.level -= 1.0
            self.admitted += 1
        else:
            self.limited += 1
        reset_ms = int((self.capacity - self.level) / self.rate * 1000)
        headers = {"x-ratelimit-limit-requests": str(int(self.rpm)),
                   "x-ratelimit-remaining-requests": str(int(self.level)),
                   "x-ratelimit-reset-requests": f"{reset_ms}ms"}
        if not ok:
            headers["retry-after-ms"] = str(int((1.0 - self.level) / self.rate * 1000) + 1)
        return (200 if ok else 429), headers


__all__ = ["VirtualClock", "ServerBucket"]
