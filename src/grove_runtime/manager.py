"""The manager: owns the process lifecycle of caches, leader election and controllers.

Start order (controller-runtime's ``manager``): health/metrics server -> caches (wait until synced; ``/readyz``
turns green) -> runnables that need no leadership -> leader election -> leader-only runnables (controllers).
Stop order is the reverse: controllers are cancelled (in-flight reconciles end), the lease is released, caches
stop, the HTTP server closes. SIGTERM/SIGINT request a graceful stop.

:meth:`Manager.run` returns after a requested stop, raises :class:`LeadershipLost` when the lease could not be
renewed (the binary must then exit so a fresh process re-joins the election), and re-raises the first error of a
runnable that crashed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

import structlog
from prometheus_client import CollectorRegistry

from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.health import Address, HealthServer, plan_listeners
from grove_runtime.heap import freeze_heap
from grove_runtime.leaderelection import LeaderElector, LeadershipLost

log = structlog.get_logger("grove_runtime.manager")

RELEASE_TIMEOUT = 1.0
"""Seconds a stopping manager waits to release its lease (one request to a live API server takes milliseconds)."""


class Runnable(Protocol):
    """Anything with an ``async run()`` that works until cancelled (a Controller, a periodic job...)."""

    async def run(self) -> None:
        """Run until cancelled."""
        ...


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    for task in reversed(tasks):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def dump_tasks() -> None:
    """Log every asyncio task with where it waits (`kill -USR1 <pid>`): what a stuck program is stuck on."""
    for task in asyncio.all_tasks():
        frames = task.get_stack(limit=12)
        where = [f"{f.f_code.co_filename}:{f.f_lineno} {f.f_code.co_name}" for f in frames]
        log.warning("task", task=task.get_name(), done=task.done(), stack=where)


class Manager:
    """Wires caches, an optional leader elector and runnables into one ordered lifecycle."""

    def __init__(
        self,
        client: Client,
        *,
        cache: Cache | None = None,
        elector: LeaderElector | None = None,
        registry: CollectorRegistry | None = None,
        health_host: str = "127.0.0.1",
        health_port: int | None = 8080,
        metrics: Address | Literal["with-probes"] | None = "with-probes",
        release_timeout: float = RELEASE_TIMEOUT,
    ) -> None:
        """Probes listen on ``health_host:health_port`` (None: no probes); ``metrics`` is the /metrics address,
        by default the probes' listener (None: no /metrics)."""
        self.client = client
        self.release_timeout = release_timeout
        self.cache = cache or Cache(client)
        self.elector = elector
        self.registry = registry if registry is not None else CollectorRegistry()
        health = Address(health_host, health_port) if health_port is not None else None
        plans = plan_listeners(health, health if metrics == "with-probes" else metrics)
        self.listeners = [
            HealthServer(self.registry, host=p.address.host, port=p.address.port, probes=p.probes, metrics=p.metrics)
            for p in plans
        ]
        self.health = next((server for server in self.listeners if server.probes), None)
        self._runnables: list[tuple[Runnable, bool]] = []
        self._stop = asyncio.Event()
        self.freeze_heap_when_synced = False
        """A program sets this: once the caches have synced, their objects leave the collector's passes
        (`grove_runtime.heap`); a test process, which runs many managers, leaves its heap alone."""
        self.started = asyncio.Event()
        self.leading = False
        if self.health is not None:
            self.health.add_ready_check("caches", lambda: self.cache.synced)

    def add(self, runnable: Runnable, *, leader_only: bool = True) -> None:
        """Register a runnable; leader-only ones start after the lease is acquired, in registration order."""
        self._runnables.append((runnable, leader_only))

    def stop(self) -> None:
        """Request a graceful stop (safe from signal handlers)."""
        self._stop.set()

    def _install_signals(self) -> Callable[[], None]:
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
            loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
            installed.append(signal.SIGUSR1)

        def remove() -> None:
            for sig in installed:
                loop.remove_signal_handler(sig)

        return remove

    async def _until_stopped(self, work: Awaitable[None]) -> bool:
        """Run ``work`` unless a stop is requested first; True if ``work`` completed."""
        task = asyncio.ensure_future(work)
        stopper = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            if not task.done():
                task.cancel()
            await asyncio.gather(task, stopper, return_exceptions=True)
        if task.done() and not task.cancelled():
            task.result()
            return True
        return False

    async def _release_lease(self, elector: LeaderElector) -> None:
        """Give the lease up, but never hold a stopping process hostage: with the API server gone the client's
        retries would take seconds, and an unreleased lease merely expires."""
        try:
            await asyncio.wait_for(elector.release(), self.release_timeout)
        except TimeoutError:
            log.warning("lease not released in time; it will expire", timeout=self.release_timeout)

    def _spawn(self, runnable: Runnable) -> asyncio.Task[None]:
        name = getattr(runnable, "name", type(runnable).__name__)
        return asyncio.get_running_loop().create_task(runnable.run(), name=f"runnable-{name}")

    async def run(self, *, handle_signals: bool = True) -> None:
        """Start everything in order, wait for a stop, leadership loss or crash, then stop in reverse."""
        remove_signals = self._install_signals() if handle_signals else (lambda: None)
        cache_task: asyncio.Task[None] | None = None
        others: list[asyncio.Task[None]] = []
        leaders: list[asyncio.Task[None]] = []
        hold: asyncio.Task[None] | None = None
        try:
            for server in self.listeners:
                await server.start()
            cache_task = asyncio.get_running_loop().create_task(self.cache.run(), name="cache")
            if not await self._until_stopped(self.cache.wait_synced()):
                return
            log.info("caches synced", informers=len(self.cache.informers()))
            if self.freeze_heap_when_synced:
                freeze_heap()
            others = [self._spawn(r) for r, leader_only in self._runnables if not leader_only]
            if self.elector is not None:
                if not await self._until_stopped(self.elector.acquire()):
                    return
                hold = asyncio.get_running_loop().create_task(self.elector.hold(), name="lease-renew")
            self.leading = True
            leaders = [self._spawn(r) for r, leader_only in self._runnables if leader_only]
            self.started.set()
            stopper = asyncio.ensure_future(self._stop.wait())
            watched: set[asyncio.Future[Any]] = {stopper, cache_task, *others, *leaders}
            if hold is not None:
                watched.add(hold)
            try:
                done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopper.cancel()
                await asyncio.gather(stopper, return_exceptions=True)
            if hold is not None and hold in done:
                raise LeadershipLost(f"lease {self.elector.namespace}/{self.elector.name}" if self.elector else "")
            for task in done:
                if task is not stopper and not task.cancelled():
                    exc = task.exception()
                    if exc is not None:
                        raise exc
        finally:
            self.leading = False
            await _cancel_all(leaders)
            if hold is not None:
                await _cancel_all([hold])
            if self.elector is not None:
                await self._release_lease(self.elector)
            await _cancel_all(others)
            if cache_task is not None:
                await _cancel_all([cache_task])
            for server in self.listeners:
                await server.stop()
            remove_signals()
            log.info("manager stopped")
