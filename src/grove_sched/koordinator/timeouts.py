"""Koordinator's gang timeout: a ready gang not placed within its `gang-timeout` is timed out, then retried.

Why a timer of its own: an unplaceable gang waits in the queue's unschedulable room for a cluster event or the
periodic flush, which may be long after its timeout. So when a gang with a timeout fails, a timer (on the
scheduler's clock, so tests move it) wakes it at its deadline; the attempt that then fails again times it out.
Timing out means, as in Koordinator: the gang's `Scheduled` condition turns False with reason `GangTimeout`, a
`GangTimeout` Event is recorded, capacity held for it (a preemption nomination) is released, and it is retried
with backoff; its next window starts then. The gang keeps the `GangTimeout` reason until it is placed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from grove_runtime.clock import Clock

__all__ = ["REASON_GANG_TIMEOUT", "GangTimeouts"]

REASON_GANG_TIMEOUT = "GangTimeout"
K = TypeVar("K", bound=Hashable)


class GangTimeouts(Generic[K]):
    """Per gang: when its current wait started, whether it has timed out, and the timer that wakes it."""

    def __init__(self, clock: Clock, wake: Callable[[K], None]) -> None:
        self._clock = clock
        self._wake = wake
        self._since: dict[K, float] = {}
        self._timed_out: set[K] = set()
        self._timers: dict[K, asyncio.Task[None]] = {}

    def expired(self, key: K, timeout: float | None, now: float) -> bool:
        """A failed attempt of a ready gang at `now`: True when its wait has reached `timeout` (the gang is then
        timed out and a new window starts); else arm the timer that wakes it at the deadline."""
        if timeout is None:
            self._cancel(key)
            return False
        since = self._since.setdefault(key, now)
        if now - since >= timeout:
            self._since[key] = now
            self._timed_out.add(key)
            self._arm(key, now + timeout)
            return True
        self._arm(key, since + timeout)
        return False

    def timed_out(self, key: K) -> bool:
        """Whether the gang has timed out since it last started waiting."""
        return key in self._timed_out

    def forget(self, key: K) -> None:
        """The gang was placed or is gone: its wait ends."""
        self._since.pop(key, None)
        self._timed_out.discard(key)
        self._cancel(key)

    def close(self) -> None:
        """Stop every timer (the scheduling loop ends)."""
        for key in list(self._timers):
            self._cancel(key)

    def _arm(self, key: K, deadline: float) -> None:
        self._cancel(key)
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to wake
            self._timers[key] = asyncio.get_running_loop().create_task(self._fire(key, deadline))

    async def _fire(self, key: K, deadline: float) -> None:
        await self._clock.sleep(max(0.0, deadline - self._clock.monotonic()))
        self._timers.pop(key, None)
        self._wake(key)

    def _cancel(self, key: K) -> None:
        task = self._timers.pop(key, None)
        if task is not None and task is not _current():
            task.cancel()


def _current() -> asyncio.Task[object] | None:
    with contextlib.suppress(RuntimeError):
        return asyncio.current_task()
    return None
