"""A tiny de-duplicating work queue with one worker task, shared by the simulator's background controllers.

Store listeners run synchronously inside a write, so they must never write themselves; they only ``add`` a key
here. The worker then processes keys one at a time on the server loop, level-triggered: a key queued twice before
it is processed is processed once, against the current state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["WorkQueue"]

K = TypeVar("K", bound=Hashable)
_log = logging.getLogger(__name__)


class WorkQueue(Generic[K]):
    """Keys to process, de-duplicated while pending; ``process`` may be sync or async."""

    def __init__(self, name: str, process: Callable[[K], Awaitable[None] | None]) -> None:
        self.name = name
        self._process = process
        self._pending: set[K] = set()
        self._queue: asyncio.Queue[K] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._timers: set[asyncio.TimerHandle] = set()

    def add(self, key: K) -> None:
        """Queue ``key`` unless it is already waiting."""
        if key not in self._pending:
            self._pending.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds (at once when ``delay`` <= 0)."""
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(handle)
            self.add(key)

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    def idle(self) -> bool:
        """True when nothing is queued or scheduled."""
        return not self._pending and not self._timers

    def start(self) -> None:
        """Start the worker task on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"grove-sim-{self.name}")

    async def stop(self) -> None:
        """Cancel timers and the worker."""
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            key = await self._queue.get()
            self._pending.discard(key)
            try:
                result = self._process(key)
                if result is not None:
                    await result
            except Exception:
                _log.exception("%s failed to process %r", self.name, key)
