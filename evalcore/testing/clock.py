"""Virtual clocks for tests of timing decisions: :class:`VirtualClock` (the rate limiter's pacing: ``sleep`` moves
the time forward at once instead of waiting) and :class:`SteppedClock` (a test double's background work on another
thread, such as a loopback batch answering its lines: ``sleep`` waits until the test moves the time). What the code
decides, and how far a double got when the test acts, is then exact and does not depend on how busy the machine is."""

from __future__ import annotations

import asyncio
import threading
from typing import Callable


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


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():  # a sleeper cancelled meanwhile (its server stopped) has nothing to wake
        fut.set_result(None)


class SteppedClock(VirtualClock):
    """A virtual clock shared with a test double that runs on another thread's event loop (the loopback server):
    ``sleep(s)`` returns only once the test's :meth:`advance` has taken the time to its wake-up, so the double does
    exactly as much as the test lets it, and no real time passes. ``sleeps``: how many sleeps have begun;
    :meth:`wait_sleeps` blocks the test until the n-th has (the double has done everything before its n-th pause).
    After :meth:`run_freely` every sleep moves the time itself and returns at once, as a VirtualClock's does."""

    def __init__(self, start: float = 1000.0) -> None:
        super().__init__(start)
        self.sleeps = 0
        self.free = False
        self._cond = threading.Condition()
        self._waiting: list[tuple[float, asyncio.AbstractEventLoop, asyncio.Future]] = []

    async def sleep(self, seconds: float) -> None:
        s = max(0.0, float(seconds))
        loop = asyncio.get_running_loop()
        fut = None
        with self._cond:
            self.sleeps += 1
            self.slept += s
            if self.free:
                self.t += s
            else:
                fut = loop.create_future()
                self._waiting.append((self.t + s, loop, fut))
            self._cond.notify_all()
        await (fut if fut is not None else asyncio.sleep(0))

    def advance(self, seconds: float) -> None:
        """Move the time forward (from the test's thread): every sleep whose wake-up is reached returns."""
        with self._cond:
            self.t += max(0.0, float(seconds))
            self._release(lambda wake: wake <= self.t)

    def run_freely(self) -> None:
        """From now on sleeps do not wait for the test; the ones waiting return now, the time at their wake-up."""
        with self._cond:
            self.free = True
            self.t = max([self.t] + [wake for wake, _, _ in self._waiting])
            self._release(lambda wake: True)

    def wait_sleeps(self, n: int, *, timeout_s: float = 60.0) -> None:
        """Block (the test's thread) until ``n`` sleeps have begun. ``timeout_s`` only keeps a broken double from
        hanging the test: reaching it is a failure, never a result."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.sleeps >= n, timeout_s):
                raise TimeoutError(f"the stepped clock saw {self.sleeps} sleeps, not {n}, within {timeout_s:g} s")

    def _release(self, due: Callable[[float], bool]) -> None:
        keep = []
        for wake, loop, fut in self._waiting:
            if not due(wake):
                keep.append((wake, loop, fut))
                continue
            try:
                loop.call_soon_threadsafe(_wake, fut)
            except RuntimeError:  # that loop is closed: nobody waits any more
                pass
        self._waiting = keep


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


__all__ = ["VirtualClock", "SteppedClock", "ServerBucket"]
