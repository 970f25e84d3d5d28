"""An injectable clock so that time-based logic (backoff, expectations, leases) is testable without sleeping.

Production code uses :class:`LoopClock` (the running event loop's monotonic time plus wall time for API
timestamps). Tests use :class:`FakeClock`, whose ``sleep`` returns once ``advance`` moves time past the deadline.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import itertools
from typing import Protocol


class Clock(Protocol):
    """Monotonic time for intervals, wall time for timestamps written to the API, and a cancellable sleep."""

    def monotonic(self) -> float:
        """Seconds on a monotonic scale (only differences are meaningful)."""
        ...

    def now(self) -> dt.datetime:
        """Timezone-aware UTC wall time."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend for ``seconds`` of this clock's time."""
        ...


class LoopClock:
    """The real clock: the event loop's time and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        """The running loop's time, or ``time.monotonic`` equivalent outside a loop."""
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            import time

            return time.monotonic()

    def now(self) -> dt.datetime:
        """Current UTC time."""
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep`` (non-positive values just yield)."""
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A manually advanced clock; sleepers wake when :meth:`advance` passes their deadline."""

    def __init__(self, start: float = 1000.0, wall: dt.datetime | None = None) -> None:
        self._now = start
        self._wall0 = wall or dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        """Current fake time."""
        return self._now

    def now(self) -> dt.datetime:
        """Wall time that moves with the fake monotonic time."""
        return self._wall0 + dt.timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        """Wait until the fake time reaches ``now + seconds``."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)

    def pending_delays(self) -> list[float]:
        """Remaining seconds of every pending sleep, soonest first (lets tests check requested delays)."""
        return sorted(deadline - self._now for deadline, _, f in self._sleepers if not f.done())

    @property
    def sleepers(self) -> int:
        """Number of pending sleeps (lets tests wait until a task is parked)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())
