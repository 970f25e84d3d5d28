"""Slow-start batching: doubling concurrent batches that stop after the first batch with a failure."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from grove_operator.slowstart import run_slow_start


def _calls(log: list[str], failing: set[int], n: int) -> list[Callable[[], Awaitable[int]]]:
    def make(i: int) -> Callable[[], Awaitable[int]]:
        async def call() -> int:
            log.append(f"start {i}")
            await asyncio.sleep(0)
            log.append(f"end {i}")
            if i in failing:
                raise RuntimeError(f"call {i} refused")
            return i

        return call

    return [make(i) for i in range(n)]


async def test_batches_double_and_run_concurrently() -> None:
    """Batches of 1, 2, 4: every call of a batch starts before any of it ends, and the next batch waits."""
    log: list[str] = []
    out = await run_slow_start(_calls(log, set(), 7))
    assert out.succeeded == list(range(7))
    assert (out.failed, out.skipped) == ([], 0)
    assert log == [
        "start 0", "end 0",
        "start 1", "start 2", "end 1", "end 2",
        "start 3", "start 4", "start 5", "start 6", "end 3", "end 4", "end 5", "end 6",
    ]  # fmt: skip


async def test_stops_after_the_first_batch_with_a_failure() -> None:
    """A failure in the second batch lets that batch finish, starts nothing more and reports the rest skipped."""
    log: list[str] = []
    out = await run_slow_start(_calls(log, {1}, 10))
    assert out.succeeded == [0, 2]
    assert [str(e) for e in out.failed] == ["call 1 refused"]
    assert out.skipped == 7
    assert not any(entry.startswith("start 3") for entry in log)


async def test_a_failing_first_call_costs_one_call() -> None:
    """When every call would fail, only the first is made."""
    log: list[str] = []
    out = await run_slow_start(_calls(log, set(range(100)), 100))
    assert (len(out.failed), out.skipped, log) == (1, 99, ["start 0", "end 0"])


async def test_batch_size_is_capped() -> None:
    """max_batch bounds the concurrency of later batches."""
    in_flight = 0
    peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1

    out = await run_slow_start([call] * 40, max_batch=4)
    assert (len(out.succeeded), peak) == (40, 4)


async def test_cancellation_propagates() -> None:
    """A cancelled call cancels the run instead of being reported as a failure."""

    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await run_slow_start([cancelled])
