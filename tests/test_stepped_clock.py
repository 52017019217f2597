"""SteppedClock: work on another thread's event loop goes exactly as far as the test moves the time."""

from __future__ import annotations

import asyncio
import threading

import pytest

from evalcore.testing.clock import SteppedClock


def test_a_worker_on_another_loop_does_only_what_the_time_allows():
    clock = SteppedClock(start=0.0)
    done: list[int] = []

    async def work() -> None:
        for i in range(5):
            await clock.sleep(1.0)
            done.append(i)

    worker = threading.Thread(target=lambda: asyncio.run(work()))
    worker.start()
    try:
        clock.wait_sleeps(1)
        assert done == []
        clock.advance(0.5)  # not yet its wake-up
        clock.advance(0.5)
        clock.wait_sleeps(2)
        assert done == [0] and clock.now() == 1.0
        clock.advance(2.0)  # one sleep wakes; the next one starts after it, at t = 3
        clock.wait_sleeps(3)
        assert done == [0, 1]
        clock.run_freely()
    finally:
        clock.run_freely()
        worker.join(timeout=30)
    assert done == [0, 1, 2, 3, 4] and clock.slept == 5.0 and clock.now() == 6.0


def test_waiting_for_a_sleep_that_never_comes_fails_instead_of_hanging():
    with pytest.raises(TimeoutError, match="saw 0 sleeps, not 1"):
        SteppedClock().wait_sleeps(1, timeout_s=0.01)
