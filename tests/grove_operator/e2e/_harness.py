"""Test harness: grove-operator in its own thread and event loop against the module's grove-sim, plus API helpers.

Running the operator on a private loop (like `SimCluster` does for the server) lets tests stop it at any moment
(`kill`) and start a fresh one (`start`), exactly like a process restart, while test code awaits on its own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from grove_operator.config import OperatorConfig
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS, PODGANGS
from grove_operator.wiring import OperatorApp, build
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.resources import PODS

from ...fixtures.samples import load_sample

T = TypeVar("T")
Obj = dict[str, Any]

WAIT = 60.0


class OperatorThread:
    """One grove-operator instance (no leader election, no HTTP endpoints) on a private loop."""

    def __init__(
        self, kubeconfig: str, config: OperatorConfig | None = None, *, clock: FakeClock | None = None, speed: float = 1
    ) -> None:
        """`clock`: run the operator on this fake clock, advanced `speed` times as fast as real time (its timers,
        requeues and condition times then all live in simulated time)."""
        self.kubeconfig = kubeconfig
        self.config = config or OperatorConfig(leader_elect=False, metrics_port=None, retry_interval=0.5)
        self.clock = clock
        self.speed = speed
        self.app: OperatorApp | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> OperatorThread:
        """Start the operator and wait until its manager reports started."""
        ready: Future[None] = Future()
        loop = asyncio.new_event_loop()
        self._loop = loop

        async def main() -> None:
            client = await KubeClient.from_kubeconfig(self.kubeconfig)
            ticker = asyncio.ensure_future(self._tick()) if self.clock is not None else None
            try:
                self.app = build(self.config, client, clock=self.clock)
                manager_task = asyncio.ensure_future(self.app.manager.run(handle_signals=False))
                self._task = manager_task
                started = asyncio.ensure_future(self.app.manager.started.wait())
                await asyncio.wait({manager_task, started}, return_when=asyncio.FIRST_COMPLETED)
                if not ready.done():
                    ready.set_result(None)
                started.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await manager_task
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
            finally:
                if ticker is not None:
                    ticker.cancel()
                await client.close()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(main())
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="grove-operator", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    async def _tick(self, step: float = 0.01) -> None:
        """Advance the fake clock `speed` times as fast as the loop's own time passes."""
        assert self.clock is not None
        while True:
            await asyncio.sleep(step)
            self.clock.advance(step * self.speed)

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the operator loop and return its result (white-box peeks, e.g. metrics)."""
        assert self._loop is not None
        fut: Future[T] = Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return fut.result(timeout=10)

    def alive(self) -> bool:
        """Whether the operator still runs (its manager has neither crashed nor stopped)."""
        return self._thread is not None and self._thread.is_alive() and self._task is not None and not self._task.done()

    def kill(self) -> None:
        """Cancel the manager wherever it is (mid-reconcile included) and wait for the thread to end."""
        if self._loop is not None and self._task is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._task.cancel)
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._thread = None
        self._task = None


async def wait_for(check: Callable[[], Awaitable[T | None]], what: str, limit: float = WAIT) -> T:
    """Poll `check` until it returns a truthy value; fail with `what` after `limit` seconds."""
    deadline = asyncio.get_running_loop().time() + limit
    last: T | None = None
    while True:
        last = await check()
        if last:
            return last
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")
        await asyncio.sleep(0.1)


async def create_pcs(client: KubeClient, namespace: str, pcs: Obj) -> Obj:
    """Create a PodCliqueSet in `namespace` (the sample's namespace is overridden)."""
    body = dict(pcs)
    body["metadata"] = {**pcs.get("metadata", {}), "namespace": namespace}
    return await client.create(PODCLIQUESETS, body, namespace)


async def ensure_namespace(client: KubeClient, namespace: str) -> None:
    """Create the namespace if it does not exist."""
    from grove_runtime.resources import NAMESPACES

    with contextlib.suppress(errors.AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})


async def items(client: KubeClient, rt: Any, namespace: str, selector: str | None = None) -> list[Obj]:
    """Listed objects of `rt` in `namespace`."""
    result = await client.list(rt, namespace, label_selector=selector)
    return list(result.get("items") or [])


async def names(client: KubeClient, rt: Any, namespace: str, selector: str | None = None) -> list[str]:
    """Sorted names of the live (non-terminating) objects of `rt`."""
    return sorted(
        o["metadata"]["name"]
        for o in await items(client, rt, namespace, selector)
        if not o["metadata"].get("deletionTimestamp")
    )


async def live_pods(client: KubeClient, namespace: str) -> list[Obj]:
    """Non-terminating pods of the namespace."""
    return [p for p in await items(client, PODS, namespace) if not p["metadata"].get("deletionTimestamp")]


async def bind_all(client: KubeClient, namespace: str, node_names: list[str], *, selector: str | None = None) -> int:
    """Act as the scheduler: bind every ungated, unbound pod (round-robin over `node_names`); returns the count."""
    bound = 0
    pods = await items(client, PODS, namespace, selector)
    for i, pod in enumerate(p for p in pods if not p["spec"].get("nodeName") and not p["spec"].get("schedulingGates")):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        try:
            await client.bind(namespace, pod["metadata"]["name"], node_names[i % len(node_names)])
        except errors.NotFound:
            continue  # deleted since the list (a scale-in, a gang replaced): nothing to bind
        bound += 1
    return bound


__all__ = [
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "OperatorThread",
    "bind_all",
    "create_pcs",
    "ensure_namespace",
    "items",
    "live_pods",
    "load_sample",
    "names",
    "wait_for",
]
