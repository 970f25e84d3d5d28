"""The gang timeout on a fake clock: when a failing gang times out, and the timer that wakes it at its deadline."""

from __future__ import annotations

import asyncio

from grove_runtime.clock import FakeClock
from grove_sched.koordinator import GangTimeouts


async def test_a_gang_times_out_once_per_window_and_is_woken_at_its_deadline() -> None:
    clock = FakeClock()
    woken: list[str] = []
    timeouts: GangTimeouts[str] = GangTimeouts(clock, woken.append)
    start = clock.monotonic()
    assert not timeouts.expired("g", 30.0, start)  # first failure: the wait starts, the timer is armed
    clock.advance(29.0)
    await asyncio.sleep(0)
    assert woken == []
    assert not timeouts.expired("g", 30.0, clock.monotonic())
    clock.advance(1.0)
    for _ in range(3):
        await asyncio.sleep(0)
    assert woken == ["g"]  # the deadline passed with no event: the gang gets an attempt
    assert timeouts.expired("g", 30.0, clock.monotonic())
    assert timeouts.timed_out("g")
    assert not timeouts.expired("g", 30.0, clock.monotonic() + 1)  # a new window started
    timeouts.forget("g")  # placed
    assert not timeouts.timed_out("g")
    clock.advance(60.0)
    for _ in range(3):
        await asyncio.sleep(0)
    assert woken == ["g"]  # forgotten: its timer is gone
    timeouts.close()


async def test_no_timeout_means_no_timer() -> None:
    clock = FakeClock()
    timeouts: GangTimeouts[str] = GangTimeouts(clock, lambda _key: None)
    assert not timeouts.expired("g", None, clock.monotonic())
    assert clock.sleepers == 0
