"""Watch streams: per-request filtering of committed events and the chunked HTTP response that carries them.

A ``Watcher`` is registered with the store for one collection. For each committed event it decides, with the
request's namespace and selectors, what this client must see: the event as is, an ``ADDED`` when the object starts
matching a selector, a ``DELETED`` when it stops matching (what the real watch cache does for filtered watches), or
nothing. Plain JSON watchers share the event's single JSON encoding; only Table watchers render per watcher.
``stream`` then writes one line per event, BOOKMARKs when idle (if asked), and ends cleanly at ``timeoutSeconds``
so clients see a normal end of stream rather than a payload error (apiserver-notes §2.6).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from grove_sim.selectors import FieldSelector, LabelSelector
from grove_sim.storage import Event, Store, dumps

__all__ = ["Render", "Watcher", "stream"]

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


async def stream(
    request: web.Request,
    store: Store,
    key: tuple[str, str],
    watcher: Watcher,
    initial: Iterable[Event],
    *,
    duration: float,
    bookmark: dict[str, Any] | None,
    bookmark_interval: float,
    on_open: Callable[[Watcher], None],
    on_close: Callable[[Watcher], None],
) -> web.StreamResponse:
    """Serve an already-subscribed watcher until timeout, shutdown or client disconnect, then unsubscribe."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    on_open(watcher)
    try:
        for event in initial:
            watcher.initial(event)
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + duration
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = min(remaining, bookmark_interval) if bookmark is not None else remaining
            try:
                line = await asyncio.wait_for(watcher.queue.get(), wait)
            except TimeoutError:
                if bookmark is not None and deadline - loop.time() > 0:
                    mark = {**bookmark, "metadata": {"resourceVersion": str(store.rv)}}
                    await response.write(b'{"type":"BOOKMARK","object":' + dumps(mark) + b"}\n")
                continue
            if line is None:
                break
            chunk = [line]
            while not watcher.queue.empty():
                nxt = watcher.queue.get_nowait()
                if nxt is None:
                    await response.write(b"".join(chunk))
                    chunk = []
                    deadline = 0.0
                    break
                chunk.append(nxt)
            if chunk:
                await response.write(b"".join(chunk))
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
    except ConnectionError:
        pass
    finally:
        store.unsubscribe(key, watcher)
        on_close(watcher)
    return response
