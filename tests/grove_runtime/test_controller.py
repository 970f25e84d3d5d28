"""Controller: outcome handling, de-duplication and per-key exclusivity, end to end from watch events."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CollectorRegistry

from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.controller import Controller
from grove_runtime.handlers import enqueue_owner
from grove_runtime.informer import Informer, running
from grove_runtime.keys import ObjectKey, Result, TerminalError
from grove_runtime.metrics import ControllerMetrics
from grove_runtime.predicates import GENERATION_CHANGED
from grove_runtime.resources import PODS, ResourceType
from grove_runtime.workqueue import RateLimiter

from .conftest import MiniApi
from .helpers import eventually

K = ObjectKey("ns", "a")


class Scripted:
    """A reconciler that replays scripted outcomes and records calls."""

    def __init__(self, *outcomes: Result | Exception) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[ObjectKey] = []

    async def reconcile(self, key: ObjectKey) -> Result:
        self.calls.append(key)
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def make(reconciler: Any, clock: FakeClock, metrics: ControllerMetrics | None = None) -> Controller:
    return Controller(
        "test", reconciler, clock=clock, metrics=metrics, rate_limiter=RateLimiter(base_delay=1.0, clock=clock)
    )


async def test_success_forgets_and_requeue_after_schedules() -> None:
    """Result() forgets the key; Result(requeue_after) adds it back after that delay."""
    clock = FakeClock()
    ctrl = make(Scripted(Result(requeue_after=30), Result()), clock)
    assert await ctrl.process(K) == "requeue_after"
    assert ctrl.queue.pending_delayed() == 1
    assert await ctrl.process(K) == "success"
    assert ctrl.queue.num_requeues(K) == 0
    await ctrl.queue.shut_down()


async def test_error_backs_off_and_terminal_error_gives_up() -> None:
    """An exception re-adds the key with backoff; TerminalError forgets it with no retry."""
    clock = FakeClock()
    metrics = ControllerMetrics("grove_test", CollectorRegistry())
    ctrl = make(Scripted(RuntimeError("x"), RuntimeError("y"), TerminalError("z")), clock, metrics)
    assert await ctrl.process(K) == "error"
    assert await ctrl.process(K) == "error"
    assert ctrl.queue.num_requeues(K) == 2
    assert await ctrl.process(K) == "terminal"
    assert ctrl.queue.num_requeues(K) == 0
    reg = metrics.registry
    assert reg.get_sample_value("grove_test_reconcile_total", {"controller": "test", "result": "error"}) == 2
    assert reg.get_sample_value("grove_test_reconcile_total", {"controller": "test", "result": "terminal"}) == 1
    assert reg.get_sample_value("grove_test_workqueue_retries_total", {"name": "test"}) == 2
    await ctrl.queue.shut_down()


class Exclusive:
    """A reconciler that detects concurrent reconciles of one key and can be paused."""

    def __init__(self) -> None:
        self.active: set[ObjectKey] = set()
        self.overlaps = 0
        self.calls: Counter[ObjectKey] = Counter()
        self.gate = asyncio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        if key in self.active:
            self.overlaps += 1
        self.active.add(key)
        self.calls[key] += 1
        try:
            await self.gate.wait()
        finally:
            self.active.discard(key)
        return Result()


@contextlib.asynccontextmanager
async def started(ctrl: Controller) -> AsyncIterator[None]:
    task = asyncio.ensure_future(ctrl.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_workers_never_reconcile_one_key_concurrently() -> None:
    """With many workers and a burst of adds, a key is reconciled once at a time and bursts collapse."""
    rec = Exclusive()
    ctrl = Controller("excl", rec, workers=8, clock=FakeClock())
    async with started(ctrl):
        for _ in range(20):
            ctrl.enqueue(K)
            ctrl.enqueue(ObjectKey("ns", "b"))
        await eventually(lambda: ctrl.in_flight == 2)
        for _ in range(20):
            ctrl.enqueue(K)
        rec.gate.set()
        await eventually(lambda: rec.calls[K] == 2 and ctrl.in_flight == 0 and len(ctrl.queue) == 0)
    assert rec.overlaps == 0
    assert rec.calls == Counter({K: 2, ObjectKey("ns", "b"): 1})


PCS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")


async def test_reconciles_keys_from_watch_events(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """Events on primaries (filtered by generation) and on owned pods enqueue the primary's key."""
    reconciler = Scripted()
    ctrl = Controller("pcs", reconciler, workers=2)
    pcs_inf = Informer(mini_client, PCS)
    pod_inf = Informer(mini_client, PODS)
    ctrl.watch(pcs_inf, None, GENERATION_CHANGED)
    ctrl.watch(pod_inf, enqueue_owner("grove.io", "PodCliqueSet"))
    mini_api.put("apis/grove.io/v1alpha1/podcliquesets", {"metadata": {"name": "p", "namespace": "ns"}})
    async with running(pcs_inf), running(pod_inf), started(ctrl):
        await eventually(lambda: reconciler.calls == [ObjectKey("ns", "p")])
        owner = {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "p", "controller": True, "uid": "u"}
        mini_api.put("api/v1/pods", {"metadata": {"name": "c", "namespace": "ns", "ownerReferences": [owner]}})
        await eventually(lambda: len(reconciler.calls) == 2)
        status_only = dict(mini_api.objects[("apis/grove.io/v1alpha1/podcliquesets", "ns", "p")])
        status_only["status"] = {"replicas": 1}
        mini_api.put("apis/grove.io/v1alpha1/podcliquesets", status_only)
        mini_api.put("api/v1/pods", {"metadata": {"name": "unowned", "namespace": "ns"}})
        mini_api.put("api/v1/pods", {"metadata": {"name": "c2", "namespace": "ns", "ownerReferences": [owner]}})
        await eventually(lambda: len(reconciler.calls) == 3)
    assert set(reconciler.calls) == {ObjectKey("ns", "p")}


class _Slow:
    """A reconciler that takes `cost` seconds of (fake) time per call."""

    def __init__(self, clock: FakeClock, cost: float) -> None:
        self.clock = clock
        self.cost = cost

    async def reconcile(self, key: ObjectKey) -> Result:
        self.clock.advance(self.cost)
        return Result()


class _Handlers:
    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def _ready_after(ctrl: Controller, clock: FakeClock, seconds: float) -> None:
    """Assert the parked key becomes ready after `seconds` of fake time, not before."""
    await _settle()
    clock.advance(seconds - 0.1)
    await _settle()
    assert len(ctrl.queue) == 0
    clock.advance(0.2)
    await _settle()
    assert len(ctrl.queue) == 1


async def test_batch_scale_stretches_the_batch_to_the_last_reconcile_duration() -> None:
    """With batch_scale, an event waits max(batch_period, scale x the key's last reconcile duration)."""
    clock = FakeClock()
    ctrl = Controller("paced", _Slow(clock, 2.0), clock=clock)
    informer = _Handlers()
    ctrl.watch(informer, batch_period=0.5, batch_scale=1.5)  # type: ignore[arg-type]
    pod = {"metadata": {"namespace": "ns", "name": "a"}}
    informer.handlers[0].on_add(pod)
    await _ready_after(ctrl, clock, 0.5)  # no reconcile has finished yet: the plain period
    key = await ctrl.queue.get()
    await ctrl.process(key)
    ctrl.queue.done(key)
    assert ctrl.last_duration(K) == 2.0
    informer.handlers[0].on_update(pod, pod)
    await _ready_after(ctrl, clock, 3.0)
    await ctrl.queue.shut_down()


async def test_batch_period_alone_ignores_reconcile_durations() -> None:
    """Without batch_scale, a slow reconcile does not stretch the batch period."""
    clock = FakeClock()
    ctrl = Controller("batched", _Slow(clock, 2.0), clock=clock)
    informer = _Handlers()
    ctrl.watch(informer, batch_period=0.5)  # type: ignore[arg-type]
    await ctrl.process(K)
    informer.handlers[0].on_add({"metadata": {"namespace": "ns", "name": "a"}})
    await _ready_after(ctrl, clock, 0.5)
    await ctrl.queue.shut_down()
