"""The chunked HTTP response of a watch: one JSON line per event, bookmarks when idle, a clean end at timeout.

``stream`` writes what an already-subscribed :class:`~grove_sim.storage.watch.Watcher` buffered, BOOKMARKs when idle
(if asked), and ends cleanly at ``timeoutSeconds`` so clients see a normal end of stream rather than a payload error
(apiserver-notes §2.6).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from grove_sim.storage.store import Event, Store, dumps
from grove_sim.storage.watch import Watcher

__all__ = ["stream"]


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
