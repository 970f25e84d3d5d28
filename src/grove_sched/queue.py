"""The scheduling queue: which gang the serial scheduling cycle looks at next, and when a failed one comes back.

Why three rooms (after kube-scheduler's activeQ / backoffQ / unschedulable pods):

* **active**: gangs worth an attempt now, highest priority first, then oldest first (then name, so ties are
  deterministic);
* **backoff**: gangs that failed recently wait `initial * 2**(attempts-1)` seconds (capped) before they become
  active again, whatever woke them, so a gang can never spin the scheduler in a hot loop;
* **unschedulable**: gangs the placement rejected wait for a cluster event that could help (`move_all`: node added,
  uncordoned or changed, a pod deleted or finished) or for their own PodGang/pods to change (`add`), or for the
  periodic flush after `flush_after` seconds; then they go to backoff (if their backoff has not expired) or active.

An attempt ends with a `grove_sched.model.Code` (the cycle's `Status`), which alone decides the room::

    add ──▶ active ──pop()──▶ in flight ──done(SUCCESS)──▶ (forgotten)
              ▲                   │  └────done(ERROR)──────▶ backoff ──expiry──▶ active
              │                   └──done(UNSCHEDULABLE | UNSCHEDULABLE_AND_UNRESOLVABLE)
              │                                            ──▶ unschedulable ──event/flush──▶ backoff | active

An event that arrives while a gang is in flight is remembered: if that attempt then ends unschedulable, the gang
goes to backoff instead of waiting for another event that may never come.

With a `rank` (queues and fair share, `grove_sched.tenancy`), the active room is ordered by rank first (the gang's
queue's distance to its fair share, which moves with every bind, so it is read at `pop` time by a scan of the
active room rather than kept in the heap), then priority and age as above. `rank` is only consulted while
`ranked()` says so (some Queue exists); otherwise the heap decides, as without queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import heapq
import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from grove_runtime.clock import Clock, LoopClock
from grove_sched.model import Code

__all__ = ["QueueClosed", "Room", "SchedulingQueue"]

K = TypeVar("K", bound=Hashable)


class Room(enum.Enum):
    """Where a gang currently is."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    IN_FLIGHT = "in_flight"


class QueueClosed(Exception):
    """Raised by `pop` once the queue is closed."""


@dataclass(slots=True)
class _Entry:
    priority: int
    since: float
    room: Room
    attempts: int = 0
    backoff_until: float = 0.0
    parked_at: float = 0.0
    version: int = 0
    event_in_flight: bool = False
    readd: bool = False


class SchedulingQueue(Generic[K]):
    """Active / backoff / unschedulable rooms; every method but `pop` is synchronous and O(log n)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        flush_after: float = 30.0,
        rank: Callable[[K], float] | None = None,
        ranked: Callable[[], bool] = lambda: True,
    ) -> None:
        self._clock = clock or LoopClock()
        self._initial = initial_backoff
        self._max = max_backoff
        self._flush_after = flush_after
        self._entries: dict[K, _Entry] = {}
        # Keys per room, so cluster events and the pending gauge cost O(gangs in that room), not O(all gangs):
        # a node list at start-up wakes the queue once per node. Parked keys are in parking order.
        self._rooms: dict[Room, dict[K, None]] = {room: {} for room in Room}
        self._active: list[tuple[int, float, str, int, K]] = []
        self._backoff: list[tuple[float, int, int, K]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._closed = False
        self._rank = rank
        self._ranked = ranked

    # --- inspection ---------------------------------------------------------------------------------------------

    def room(self, key: K) -> Room | None:
        """The room `key` is in, or None when the queue does not hold it."""
        entry = self._entries.get(key)
        return entry.room if entry else None

    def counts(self) -> dict[Room, int]:
        """Number of gangs per room (for the pending-gangs gauge)."""
        return {room: len(keys) for room, keys in self._rooms.items()}

    def attempts(self, key: K) -> int:
        """Consecutive failed attempts of `key`."""
        entry = self._entries.get(key)
        return entry.attempts if entry else 0

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, count: int) -> list[K]:
        """The next `count` active gangs in the order `pop` would hand them out; none of them moves (what a
        look-ahead over the queue reads, O(active gangs))."""
        if count <= 0:
            return []
        if self._rank is not None and self._rooms[Room.ACTIVE] and self._ranked():
            rank, entries = self._rank, self._entries
            return heapq.nsmallest(
                count,
                self._rooms[Room.ACTIVE],
                key=lambda k: (rank(k), -entries[k].priority, entries[k].since, repr(k)),
            )
        live = (item for item in self._active if self._live(item[4], item[3]))
        return [item[4] for item in heapq.nsmallest(count, live)]

    # --- input --------------------------------------------------------------------------------------------------

    def add(self, key: K, priority: int = 0, since: float | None = None) -> None:
        """The gang may be ready (new, or its PodGang/pods changed): queue it, or wake it if unschedulable."""
        if self._closed:
            return
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(priority, self._clock.monotonic() if since is None else since, Room.ACTIVE)
            self._entries[key] = entry
            self._rooms[Room.ACTIVE][key] = None
            self._push_active(key, entry)
            return
        changed = entry.priority != priority
        entry.priority = priority
        if entry.room is Room.IN_FLIGHT:
            entry.event_in_flight = True
            entry.readd = True
        elif entry.room is Room.UNSCHEDULABLE:
            self._release(key, entry)
        elif entry.room is Room.ACTIVE and changed:
            self._push_active(key, entry)

    def held(self) -> list[K]:
        """Every gang the queue holds, in any room."""
        return list(self._entries)

    def set_priority(self, key: K, priority: int) -> None:
        """Change a held gang's priority (a PriorityClass appeared or changed) without waking it."""
        entry = self._entries.get(key)
        if entry is None or entry.priority == priority:
            return
        entry.priority = priority
        if entry.room is Room.ACTIVE:
            self._push_active(key, entry)

    def move_all(self) -> int:
        """A cluster event that could make room: release every unschedulable gang; returns how many moved."""
        for key in self._rooms[Room.IN_FLIGHT]:
            self._entries[key].event_in_flight = True
        parked = list(self._rooms[Room.UNSCHEDULABLE])
        for key in parked:
            self._release(key, self._entries[key])
        return len(parked)

    def remove(self, key: K) -> None:
        """Stop tracking `key` (gang deleted or fully bound); an in-flight attempt's `done` becomes a no-op."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry.version += 1
            del self._rooms[entry.room][key]

    def done(self, key: K, code: Code) -> None:
        """Record how an attempt popped earlier ended (its status code)."""
        entry = self._entries.get(key)
        if entry is None or entry.room is not Room.IN_FLIGHT or self._closed:
            return
        now = self._clock.monotonic()
        event, readd = entry.event_in_flight, entry.readd
        entry.event_in_flight = entry.readd = False
        if code is Code.SUCCESS:
            entry.attempts = 0
            if readd:
                self._move(key, entry, Room.ACTIVE)
                self._push_active(key, entry)
            else:
                del self._entries[key]
                del self._rooms[entry.room][key]
            return
        entry.attempts += 1
        entry.backoff_until = now + self.backoff(entry.attempts)
        if code is not Code.ERROR and not event:
            self._move(key, entry, Room.UNSCHEDULABLE)
            entry.parked_at = now
            entry.version += 1
            self._wake.set()
            return
        self._to_backoff(key, entry)

    def backoff(self, attempts: int) -> float:
        """Backoff after `attempts` consecutive failures."""
        if attempts <= 0:
            return 0.0
        return float(min(self._max, self._initial * 2 ** min(attempts - 1, 62)))

    # --- output -------------------------------------------------------------------------------------------------

    async def pop(self) -> K:
        """Wait for the best active gang and mark it in flight; raises QueueClosed after `close`."""
        while True:
            if self._closed:
                raise QueueClosed()
            now = self._clock.monotonic()
            self._flush(now)
            if self._rank is not None and self._rooms[Room.ACTIVE] and self._ranked():
                return self._pop_ranked(self._rank)
            while self._active:
                _, _, _, version, key = heapq.heappop(self._active)
                entry = self._entries.get(key)
                if entry is not None and entry.room is Room.ACTIVE and entry.version == version:
                    self._move(key, entry, Room.IN_FLIGHT)
                    entry.version += 1
                    return key
            self._wake.clear()
            await self._wait(self._next_deadline())

    def _pop_ranked(self, rank: Callable[[K], float]) -> K:
        """The active gang of lowest (rank, -priority, age, name); its heap entry goes stale (compacted later)."""
        key = min(
            self._rooms[Room.ACTIVE],
            key=lambda k: (rank(k), -self._entries[k].priority, self._entries[k].since, repr(k)),
        )
        entry = self._entries[key]
        self._move(key, entry, Room.IN_FLIGHT)
        entry.version += 1
        if len(self._active) > 4 * len(self._entries) + 64:
            self._active = [item for item in self._active if self._live(item[4], item[3])]
            heapq.heapify(self._active)
        return key

    def _live(self, key: K, version: int) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.room is Room.ACTIVE and entry.version == version

    def close(self) -> None:
        """Wake and fail every `pop`; later input is ignored."""
        self._closed = True
        self._wake.set()

    # --- internals ----------------------------------------------------------------------------------------------

    def _push_active(self, key: K, entry: _Entry) -> None:
        entry.version += 1
        heapq.heappush(self._active, (-entry.priority, entry.since, repr(key), entry.version, key))
        self._wake.set()

    def _move(self, key: K, entry: _Entry, room: Room) -> None:
        """The one place a gang changes room, keeping `_rooms` in step."""
        del self._rooms[entry.room][key]
        self._rooms[room][key] = None
        entry.room = room

    def _to_backoff(self, key: K, entry: _Entry) -> None:
        self._move(key, entry, Room.BACKOFF)
        entry.version += 1
        heapq.heappush(self._backoff, (entry.backoff_until, next(self._seq), entry.version, key))
        self._wake.set()

    def _release(self, key: K, entry: _Entry) -> None:
        if entry.backoff_until > self._clock.monotonic():
            self._to_backoff(key, entry)
        else:
            self._move(key, entry, Room.ACTIVE)
            self._push_active(key, entry)

    def _flush(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, _, version, key = heapq.heappop(self._backoff)
            entry = self._entries.get(key)
            if entry is not None and entry.room is Room.BACKOFF and entry.version == version:
                self._move(key, entry, Room.ACTIVE)
                self._push_active(key, entry)
        parked = self._rooms[Room.UNSCHEDULABLE]  # in parking order, so the expired ones come first
        expired = list(itertools.takewhile(lambda k: self._entries[k].parked_at + self._flush_after <= now, parked))
        for key in expired:
            self._release(key, self._entries[key])

    def _next_deadline(self) -> float | None:
        deadlines = [self._backoff[0][0]] if self._backoff else []
        oldest = next(iter(self._rooms[Room.UNSCHEDULABLE]), None)
        if oldest is not None:
            deadlines.append(self._entries[oldest].parked_at + self._flush_after)
        return min(deadlines) if deadlines else None

    async def _wait(self, deadline: float | None) -> None:
        waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._wake.wait())}
        if deadline is not None:
            waiters.add(asyncio.ensure_future(self._clock.sleep(deadline - self._clock.monotonic())))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in waiters:
                fut.cancel()
            for fut in waiters:
                with contextlib.suppress(asyncio.CancelledError):
                    await fut
