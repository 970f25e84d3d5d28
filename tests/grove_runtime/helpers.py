"""Small test helpers shared by grove_runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]


async def eventually(cond: Callable[[], bool], *, limit: float = 10.0) -> None:
    """Poll until ``cond()`` holds (the limit only guards against hangs; nothing asserts on timing)."""
    async with asyncio.timeout(limit):
        while not cond():  # noqa: ASYNC110 - polling an arbitrary condition, no event to wait on
            await asyncio.sleep(0.005)


class Recorder:
    """A ResourceEventHandler that records (type, name) tuples."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: Obj) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: Obj) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))
