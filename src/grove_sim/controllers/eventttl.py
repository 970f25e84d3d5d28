"""Core ``v1`` Events expire ``ttl`` seconds after their last write, as kube-apiserver's ``--event-ttl`` (default 1 h).

Why: the real server stores each Event under an etcd lease of that length, so Events never pile up; without it a
simulator that runs for hours keeps every Event ever written, and its memory grows with every object that ever
had one (the chaos suite's fuzzing found that). Each write of an Event (created, or bumped by a recorder) starts
its lifetime anew, as a write with a fresh lease does. Deleting an expired Event is an ordinary deletion (a
DELETED watch event), as etcd's lease expiry is to a watcher.

The TTL is the same for every Event, so the write order is the expiry order: one deque of (due, namespace, name,
resourceVersion) suffices, and an entry whose Event was written again since (another resourceVersion) or deleted
is skipped when it comes due. The deque holds one entry per write within the last ``ttl`` seconds.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry.core import Core
from grove_sim.storage.store import Event

__all__ = ["DEFAULT_EVENT_TTL", "EventTTL"]

DEFAULT_EVENT_TTL = 3600.0
"""kube-apiserver's ``--event-ttl`` default (1 h)."""

_EVENTS = ("", "events")
_KEY = "expire"
_log = logging.getLogger(__name__)


class EventTTL:
    """Deletes Events not written for ``ttl`` seconds, on its work queue: woken by the first write after an idle
    spell, then at each next due time."""

    def __init__(
        self, core: Core, ttl: float = DEFAULT_EVENT_TTL, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._core = core
        self.ttl = ttl
        self._clock = clock
        self._due: deque[tuple[float, str, str, str]] = deque()
        self.queue: WorkQueue[str] = WorkQueue("event-ttl", self._sync)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.key != _EVENTS or event.type == "DELETED":
            return
        meta = event.obj["metadata"]
        if not self._due:
            self.queue.add(_KEY)
        self._due.append((self._clock() + self.ttl, meta.get("namespace", ""), meta["name"], meta["resourceVersion"]))

    def pending(self) -> int:
        """Writes still waiting for their expiry (for tests: bounded by the writes of the last ``ttl`` seconds)."""
        return len(self._due)

    def expire(self) -> int:
        """Delete every Event whose last write is ``ttl`` seconds old; how many were deleted."""
        info = self._core.registry.get("", "v1", "events")
        now, deleted = self._clock(), 0
        while self._due and self._due[0][0] <= now:
            _, namespace, name, rv = self._due.popleft()
            stored = self._core.store.get(_EVENTS, namespace, name)
            if info is None or stored is None or stored["metadata"].get("resourceVersion") != rv:
                continue  # written again since (a later entry covers it) or already gone
            try:
                self._core.delete(info, namespace, name, {})
                deleted += 1
            except errors.ApiError as exc:
                _log.debug("expired event %s/%s not deleted: %s", namespace, name, exc)
        return deleted

    def _sync(self, _key: str) -> None:
        self.expire()
        if self._due:
            self.queue.add_after(_KEY, self._due[0][0] - self._clock())
