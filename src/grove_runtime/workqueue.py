"""A de-duplicating, rate-limited work queue with client-go semantics.

Why: reconciliation is level-triggered, so ten events for one key must produce one reconcile, and one key must
never be reconciled by two workers at once. The queue keeps three pieces of state:

* ``queue``: keys ready to hand out, in FIFO order;
* ``dirty``: keys that need processing (queued, or re-added while being processed);
* ``processing``: keys currently held by a worker.

``add`` of a dirty key is a no-op; ``add`` of a key being processed only marks it dirty, and ``done`` re-queues
it. ``add_after`` parks a key until a deadline (the earliest deadline wins); ``add_rate_limited`` parks it for the
rate limiter's delay (per-item exponential backoff, max-ed with an overall token bucket); ``forget`` resets the
per-item backoff. The queue owns one background task for delayed keys, cancelled by :meth:`WorkQueue.shut_down`.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from grove_runtime.clock import Clock, LoopClock

T = TypeVar("T", bound=Hashable)


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue has been shut down."""


class QueueMetricsSink(Protocol):
    """Receives queue observations (implemented by :class:`grove_runtime.metrics.ControllerMetrics`)."""

    def queue_depth(self, name: str, depth: int) -> None:
        """Current number of ready keys."""
        ...

    def queue_latency(self, name: str, seconds: float) -> None:
        """Time a key waited between ``add`` and ``get``."""
        ...

    def queue_retry(self, name: str) -> None:
        """One ``add_rate_limited`` call."""
        ...


class ItemExponentialBackoff(Generic[T]):
    """Per-item delay ``base * 2**failures`` capped at ``cap``; ``forget`` resets the count."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self._base = base
        self._cap = cap
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        """Delay for the next retry of ``item``, counting this failure."""
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        if n > 64:
            return self._cap
        return float(min(self._cap, self._base * (2**n)))

    def num_requeues(self, item: T) -> int:
        """How many failures are recorded for ``item``."""
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        """Reset the failure count of ``item``."""
        self._failures.pop(item, None)


class TokenBucket:
    """An overall rate limit (``qps`` with ``burst``); a reservation may go negative and returns the wait."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock or LoopClock()
        self._tokens = float(burst)
        self._last: float | None = None

    def reserve(self) -> float:
        """Take one token and return how long the caller must wait for it."""
        now = self._clock.monotonic()
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps


class RateLimiter(Generic[T]):
    """client-go's default controller rate limiter: the max of per-item backoff and an overall token bucket."""

    def __init__(
        self,
        *,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
        clock: Clock | None = None,
    ) -> None:
        self._items: ItemExponentialBackoff[T] = ItemExponentialBackoff(base_delay, max_delay)
        self._bucket = TokenBucket(qps, burst, clock)

    def when(self, item: T) -> float:
        """Delay before ``item`` may be retried."""
        return max(self._items.when(item), self._bucket.reserve())

    def num_requeues(self, item: T) -> int:
        """Failures recorded for ``item`` since the last ``forget``."""
        return self._items.num_requeues(item)

    def forget(self, item: T) -> None:
        """Stop tracking ``item`` (after a success)."""
        self._items.forget(item)


class WorkQueue(Generic[T]):
    """The rate-limiting work queue; see the module docstring for its invariants."""

    def __init__(
        self,
        name: str = "queue",
        *,
        rate_limiter: RateLimiter[T] | None = None,
        clock: Clock | None = None,
        metrics: QueueMetricsSink | None = None,
    ) -> None:
        self.name = name
        self._clock = clock or LoopClock()
        self._limiter: RateLimiter[T] = rate_limiter or RateLimiter(clock=self._clock)
        self._metrics = metrics
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._added_at: dict[T, float] = {}
        self._not_empty = asyncio.Event()
        self._shutting_down = False
        self._waiting: list[tuple[float, int, T]] = []
        self._waiting_ready_at: dict[T, float] = {}
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._delayer: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        """Number of keys ready to be handed out."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        """Whether :meth:`shut_down` was called."""
        return self._shutting_down

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing (idempotent while it is pending)."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        self._added_at.setdefault(item, self._clock.monotonic())
        if item in self._processing:
            return
        self._queue.append(item)
        self._not_empty.set()
        self._report_depth()

    async def get(self) -> T:
        """Wait for a ready key and mark it as processing; raises :class:`QueueShutDown` after shutdown."""
        while True:
            if self._shutting_down:
                raise QueueShutDown(self.name)
            if self._queue:
                item = self._queue.popleft()
                if not self._queue:
                    self._not_empty.clear()
                self._processing.add(item)
                self._dirty.discard(item)
                added = self._added_at.pop(item, None)
                if self._metrics is not None:
                    if added is not None:
                        self._metrics.queue_latency(self.name, self._clock.monotonic() - added)
                    self._report_depth()
                return item
            self._not_empty.clear()
            await self._not_empty.wait()

    def done(self, item: T) -> None:
        """Release ``item``; if it was re-added meanwhile, queue it again."""
        self._processing.discard(item)
        if item in self._dirty and not self._shutting_down:
            self._queue.append(item)
            self._not_empty.set()
            self._report_depth()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` after ``delay`` seconds; an earlier pending deadline for the same item wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        current = self._waiting_ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._waiting_ready_at[item] = ready_at
        heapq.heappush(self._waiting, (ready_at, next(self._seq), item))
        self._wake.set()
        if self._delayer is None:
            self._delayer = asyncio.get_running_loop().create_task(self._run_delayed(), name=f"{self.name}-delayed")

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the rate limiter's delay (a failed reconcile)."""
        if self._metrics is not None:
            self._metrics.queue_retry(self.name)
        self.add_after(item, self._limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the backoff of ``item`` (a successful reconcile)."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Consecutive failures recorded for ``item``."""
        return self._limiter.num_requeues(item)

    def is_processing(self, item: T) -> bool:
        """Whether a worker currently holds ``item``."""
        return item in self._processing

    def pending_delayed(self) -> int:
        """Number of keys parked by ``add_after``."""
        return len(self._waiting_ready_at)

    async def shut_down(self) -> None:
        """Stop handing out keys, wake every waiting ``get`` and stop the delayed-keys task."""
        self._shutting_down = True
        self._not_empty.set()
        task, self._delayer = self._delayer, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _report_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.queue_depth(self.name, len(self._queue))

    def _pop_ready(self) -> None:
        now = self._clock.monotonic()
        while self._waiting and self._waiting[0][0] <= now:
            ready_at, _, item = heapq.heappop(self._waiting)
            if self._waiting_ready_at.get(item) == ready_at:
                del self._waiting_ready_at[item]
                self.add(item)

    async def _run_delayed(self) -> None:
        while True:
            self._wake.clear()
            self._pop_ready()
            if not self._waiting:
                await self._wake.wait()
                continue
            delay = self._waiting[0][0] - self._clock.monotonic()
            sleeper = asyncio.ensure_future(self._clock.sleep(delay))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for fut in (sleeper, waker):
                    fut.cancel()
                await asyncio.gather(sleeper, waker, return_exceptions=True)
