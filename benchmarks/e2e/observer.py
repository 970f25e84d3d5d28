"""A pod watch in the benchmark process that timestamps each workload pod's life: seen, ungated, bound.

Why a watch and not the scheduler's own metrics: the gate is lifted by the operator and the bind is done by the
scheduler, so only an outside observer sees both on one clock. Times are `time.monotonic()` at event receipt in
this process; watch delivery delay applies to every event alike. The watch re-lists after any failure (410
Expired included) and keeps the earliest time it saw for each transition.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS

__all__ = ["PodTimes", "PodWatcher"]

GATE = "grove.io/podgang-pending-creation"


@dataclass(slots=True)
class PodTimes:
    """When this process first saw a pod, saw it without scheduling gates, and saw it bound (monotonic s)."""

    name: str
    gang: str
    part_of: str
    seen: float
    ungated: float | None = None
    bound: float | None = None
    node: str = ""
    failed: bool = False


@dataclass
class PodWatcher:
    """Watches the pods of one namespace; `pods` maps name to `PodTimes`, `bound` counts bound pods."""

    client: KubeClient
    namespace: str
    pods: dict[str, PodTimes] = field(default_factory=dict)
    bound: int = 0
    ungated: int = 0
    errors: int = 0
    _synced: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        """List then watch, forever; cancel the task to stop."""
        while True:
            try:
                listing = await self.client.list(PODS, self.namespace)
                now = time.monotonic()
                for pod in listing["items"]:
                    self.observe(pod, now)
                self._synced.set()
                rv = listing["metadata"]["resourceVersion"]
                async with self.client.watch(PODS, self.namespace, resource_version=rv, timeout_seconds=3600) as events:
                    async for event in events:
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self.observe(event.get("object") or {}, time.monotonic())
            except (TimeoutError, errors.ApiError, aiohttp.ClientError, KeyError, OSError, ValueError):
                self.errors += 1
                await asyncio.sleep(0.2)

    async def synced(self) -> None:
        """Wait for the first list to be processed."""
        await self._synced.wait()

    def observe(self, pod: Mapping[str, Any], now: float) -> None:
        """Record the transitions a pod state shows that were not seen before."""
        meta = pod.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            return
        spec = pod.get("spec") or {}
        times = self.pods.get(name)
        if times is None:
            labels = meta.get("labels") or {}
            times = PodTimes(
                name, str(labels.get("grove.io/podgang", "")), str(labels.get("app.kubernetes.io/part-of", "")), now
            )
            self.pods[name] = times
        if times.ungated is None and not any(g.get("name") == GATE for g in spec.get("schedulingGates") or []):
            times.ungated = now
            self.ungated += 1
        node = spec.get("nodeName")
        if node and times.bound is None:
            times.bound = now
            times.node = str(node)
            self.bound += 1
            if times.ungated is None:  # bound implies ungated; an event in between was coalesced
                times.ungated = now
                self.ungated += 1
        if (pod.get("status") or {}).get("phase") == "Failed":
            times.failed = True


@contextlib.asynccontextmanager
async def watching(client: KubeClient, namespace: str) -> AsyncIterator[PodWatcher]:
    """A running `PodWatcher` for the duration of the block (synced before the block starts)."""
    watcher = PodWatcher(client, namespace)
    task = asyncio.get_running_loop().create_task(watcher.run())
    try:
        await watcher.synced()
        yield watcher
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
