"""Watchers: per-request filtering of committed events, buffered until the HTTP layer streams them.

A ``Watcher`` is registered with the store for one collection. For each committed event it decides, with the
request's namespace and selectors, what this client must see: the event as is, an ``ADDED`` when the object starts
matching a selector, a ``DELETED`` when it stops matching (what the real watch cache does for filtered watches), or
nothing. Plain JSON watchers share the event's single JSON encoding; only Table watchers render per watcher.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from grove_sim.machinery.field_selectors import FieldSelector
from grove_sim.machinery.label_selectors import LabelSelector
from grove_sim.storage.store import Event

__all__ = ["Render", "Watcher"]

Render = Callable[[Event, str], bytes]
"""Turns an event and the type this watcher should see into one stream line."""


def _json_render(event: Event, type_: str) -> bytes:
    return event.line(type_)


class Watcher:
    """One client's filtered view of a collection's events, buffered until the HTTP writer sends them."""

    def __init__(
        self,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        render: Render | None = None,
    ) -> None:
        self._namespace = namespace
        self._labels = labels if labels is not None and not labels.empty else None
        self._fields = fields if fields is not None and not fields.empty else None
        self._render = render or _json_render
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def _selected(self, obj: dict[str, Any]) -> bool:
        if self._labels is not None and not self._labels.matches((obj.get("metadata") or {}).get("labels") or {}):
            return False
        return self._fields is None or self._fields.matches(obj)

    def visible_type(self, event: Event) -> str | None:
        """The event type this watcher must see for ``event``, or None if it must not see it."""
        if self._namespace is not None and (event.obj.get("metadata") or {}).get("namespace") != self._namespace:
            return None
        if self._labels is None and self._fields is None:
            return event.type
        now = self._selected(event.obj)
        if event.type == "DELETED":
            return "DELETED" if now else None
        before = event.old is not None and self._selected(event.old)
        if now:
            return "MODIFIED" if before else "ADDED"
        return "DELETED" if before else None

    def offer(self, event: Event) -> None:
        """Queue the rendered event if this watcher sees it (called synchronously by the store)."""
        type_ = self.visible_type(event)
        if type_ is not None:
            self.queue.put_nowait(self._render(event, type_))

    def initial(self, event: Event) -> None:
        """Queue a synthetic or replayed event (replay uses the same visibility rules as live events)."""
        self.offer(event)

    def close(self) -> None:
        """Ask the writer to end the stream (server shutdown)."""
        self.queue.put_nowait(None)
