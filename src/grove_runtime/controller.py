"""A controller: watches feed one work queue, N workers call ``reconcile(key)`` and translate its outcome.

This is the only place where reconcile outcomes become queue operations (controller-runtime's
``reconcileHandler``):

* ``Result()``                      -> ``forget`` (success)
* ``Result(requeue_after=s)``       -> ``forget`` + ``add_after(s)``
* raises :class:`TerminalError`     -> ``forget``, logged and counted, no retry
* raises anything else              -> ``add_rate_limited`` (per-key exponential backoff)

The work queue guarantees one key is never reconciled concurrently and that bursts of events collapse.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from grove_runtime.clock import Clock, LoopClock
from grove_runtime.handlers import EventHandler, enqueue_self
from grove_runtime.informer import Informer
from grove_runtime.keys import ObjectKey, Result, TerminalError
from grove_runtime.logging import reconcile_context
from grove_runtime.metrics import ControllerMetrics
from grove_runtime.predicates import Predicate
from grove_runtime.workqueue import QueueShutDown, RateLimiter, WorkQueue

Obj = dict[str, Any]
log = structlog.get_logger("grove_runtime.controller")
MAX_DURATIONS = 100_000
"""Bound on remembered reconcile durations (one float per key; cleared when exceeded, like a cache)."""


class Reconciler(Protocol):
    """The one-method contract: read fresh state for ``key`` and drive the world towards it."""

    async def reconcile(self, key: ObjectKey) -> Result:
        """Reconcile one object; raise to retry with backoff, raise ``TerminalError`` to give up."""
        ...


class _Watch:
    """Adapter from informer callbacks to keys on the controller's queue, filtered by predicates.

    With a ``batch_period`` the keys are added after that delay instead of at once (``add_after``: the earliest
    pending deadline wins), so a burst of child events costs the owner one reconcile per period rather than one
    per event; Kubernetes' Job and EndpointSlice controllers batch their pod events the same way. With a
    ``batch_scale`` the period also stretches to that multiple of the key's last reconcile duration, so an owner
    whose reconcile walks thousands of children cannot take the whole CPU from the controllers that do the work.
    """

    def __init__(
        self,
        queue: WorkQueue[ObjectKey],
        handler: EventHandler,
        predicates: tuple[Predicate, ...],
        batch_period: float = 0.0,
        batch_scale: float = 0.0,
        durations: Mapping[ObjectKey, float] | None = None,
    ) -> None:
        self._queue = queue
        self._handler = handler
        self._predicates = predicates
        self._batch_period = batch_period
        self._batch_scale = batch_scale
        self._durations: Mapping[ObjectKey, float] = durations if durations is not None else {}

    def _enqueue(self, keys: Iterable[ObjectKey]) -> None:
        for key in keys:
            if self._batch_period > 0:
                period = self._batch_period
                if self._batch_scale > 0:
                    period = max(period, self._batch_scale * self._durations.get(key, 0.0))
                self._queue.add_after(key, period)
            else:
                self._queue.add(key)

    def on_add(self, obj: Obj) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._enqueue(self._handler.keys(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        if all(p.update(old, new) for p in self._predicates):
            self._enqueue({*self._handler.keys(old), *self._handler.keys(new)})

    def on_delete(self, obj: Obj) -> None:
        if all(p.delete(obj) for p in self._predicates):
            self._enqueue(self._handler.keys(obj))


class Controller:
    """Owns a work queue and ``workers`` tasks calling one :class:`Reconciler`."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        workers: int = 1,
        clock: Clock | None = None,
        metrics: ControllerMetrics | None = None,
        rate_limiter: RateLimiter[ObjectKey] | None = None,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.workers = workers
        self._clock = clock or LoopClock()
        self._metrics = metrics
        self.queue: WorkQueue[ObjectKey] = WorkQueue(
            name, rate_limiter=rate_limiter or RateLimiter(clock=self._clock), clock=self._clock, metrics=metrics
        )
        self.in_flight = 0
        self._durations: dict[ObjectKey, float] = {}

    def watch(
        self,
        informer: Informer,
        handler: EventHandler | None = None,
        *predicates: Predicate,
        batch_period: float = 0.0,
        batch_scale: float = 0.0,
    ) -> None:
        """Enqueue the keys ``handler`` (default: the object's own key) maps each passing event to.

        ``batch_period`` > 0 delays each key by that long, collapsing the events of the period into one reconcile;
        ``batch_scale`` > 0 stretches that delay to ``batch_scale`` times the key's last reconcile duration.
        """
        watch = _Watch(self.queue, handler or enqueue_self(), predicates, batch_period, batch_scale, self._durations)
        informer.add_handler(watch)

    def last_duration(self, key: ObjectKey) -> float:
        """Seconds the last finished reconcile of ``key`` took (0.0 when none finished yet)."""
        return self._durations.get(key, 0.0)

    def enqueue(self, key: ObjectKey) -> None:
        """Add a key directly (e.g. from a periodic trigger)."""
        self.queue.add(key)

    async def run(self) -> None:
        """Run the workers until cancelled; then shut the queue down and wait for in-flight reconciles to stop."""
        tasks = [
            asyncio.get_running_loop().create_task(self._worker(), name=f"{self.name}-worker-{i}")
            for i in range(self.workers)
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await self.queue.shut_down()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, QueueShutDown):
                    await task

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def process(self, key: ObjectKey) -> str:
        """Reconcile one key and apply the outcome to the queue; returns the result label."""
        start = self._clock.monotonic()
        outcome = "error"
        self.in_flight += 1
        with reconcile_context(self.name, str(key)):
            try:
                result = await self.reconciler.reconcile(key)
            except asyncio.CancelledError:
                outcome = "cancelled"
                raise
            except TerminalError as exc:
                outcome = "terminal"
                self.queue.forget(key)
                log.error("reconcile failed terminally", error=str(exc))
            except Exception as exc:
                outcome = "error"
                self.queue.add_rate_limited(key)
                log.warning(
                    "reconcile failed, will retry", error=repr(exc), retries=self.queue.num_requeues(key), exc_info=True
                )
            else:
                self.queue.forget(key)
                if result.requeue_after is not None and result.requeue_after > 0:
                    outcome = "requeue_after"
                    self.queue.add_after(key, result.requeue_after)
                else:
                    outcome = "success"
            finally:
                self.in_flight -= 1
                elapsed = self._clock.monotonic() - start
                if outcome != "cancelled":
                    if len(self._durations) >= MAX_DURATIONS and key not in self._durations:
                        self._durations.clear()
                    self._durations[key] = elapsed
                if self._metrics is not None and outcome != "cancelled":
                    self._metrics.observe_reconcile(self.name, outcome, elapsed)
        return outcome
