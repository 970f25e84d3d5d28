"""Manager lifecycle over real HTTP: health/metrics endpoints, cache sync, leader election hand-over, stop order."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

import aiohttp
import pytest
from structlog.testing import capture_logs

from grove_runtime.cache import Cache
from grove_runtime.client import KubeClient
from grove_runtime.controller import Controller
from grove_runtime.heap import GC_THRESHOLDS, tune_gc
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.leaderelection import LeaderElector, LeadershipLost
from grove_runtime.manager import Manager, dump_tasks
from grove_runtime.metrics import ControllerMetrics
from grove_runtime.resources import PODS

from .conftest import MiniApi
from .helpers import eventually

LEASES = "apis/coordination.k8s.io/v1/leases"


class Counting:
    """Reconciler that records keys."""

    def __init__(self) -> None:
        self.keys: list[ObjectKey] = []

    async def reconcile(self, key: ObjectKey) -> Result:
        self.keys.append(key)
        return Result()


class Journal:
    """A runnable that logs its start and stop into a shared list."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def run(self) -> None:
        self.log.append(f"start {self.name}")
        try:
            await asyncio.Event().wait()
        finally:
            self.log.append(f"stop {self.name}")


def elector(client: KubeClient, identity: str) -> LeaderElector:
    return LeaderElector(
        client, namespace="ns", name="mgr", identity=identity, lease_duration=3.0, renew_deadline=1.0, retry_period=0.05
    )


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.ensure_future(manager.run(handle_signals=False))
    try:
        yield task
    finally:
        manager.stop()
        with contextlib.suppress(LeadershipLost):
            await task


async def test_serves_probes_and_metrics_and_runs_controllers(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """After start, /healthz and /readyz are 200, /metrics shows controller metrics, and events are reconciled."""
    mini_api.put("api/v1/pods", {"metadata": {"name": "p", "namespace": "ns"}})
    metrics = ControllerMetrics("grove_test")
    manager = Manager(mini_client, registry=metrics.registry, health_host="127.0.0.1", health_port=0)
    reconciler = Counting()
    ctrl = Controller("pods", reconciler, metrics=metrics)
    ctrl.watch(manager.cache.informer(PODS))
    manager.add(ctrl)
    async with running(manager):
        await manager.started.wait()
        await eventually(lambda: reconciler.keys == [ObjectKey("ns", "p")])
        assert manager.health is not None
        base = f"http://127.0.0.1:{manager.health.port}"
        async with aiohttp.ClientSession() as http:
            for path in ("/healthz", "/readyz"):
                async with http.get(base + path) as resp:
                    assert resp.status == 200
            async with http.get(base + "/metrics") as resp:
                text = await resp.text()
    assert 'grove_test_reconcile_total{controller="pods",result="success"} 1.0' in text
    assert "grove_test_workqueue_depth" in text


async def test_start_and_stop_order(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """Non-leader runnables start before leader-only ones; stopping runs in reverse and releases the lease."""
    log: list[str] = []
    manager = Manager(mini_client, elector=elector(mini_client, "m1"), health_port=None)
    manager.add(Journal("always", log), leader_only=False)
    manager.add(Journal("leader1", log))
    manager.add(Journal("leader2", log))
    async with running(manager):
        await manager.started.wait()
        await eventually(lambda: len(log) == 3)
    assert log == ["start always", "start leader1", "start leader2", "stop leader2", "stop leader1", "stop always"]
    assert mini_api.objects[(LEASES, "ns", "mgr")]["spec"]["holderIdentity"] == ""


async def test_second_manager_takes_over_when_leader_stops(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """Only the leader runs controllers; when it stops, the standby acquires the lease and starts them."""
    log1: list[str] = []
    log2: list[str] = []
    m1 = Manager(mini_client, cache=Cache(mini_client), elector=elector(mini_client, "m1"), health_port=None)
    m1.add(Journal("c", log1))
    m2 = Manager(mini_client, cache=Cache(mini_client), elector=elector(mini_client, "m2"), health_port=None)
    m2.add(Journal("c", log2))
    async with running(m1):
        await m1.started.wait()
        async with running(m2):
            await eventually(lambda: m2.elector is not None and m2.elector._observed_record is not None)
            assert log2 == []
            m1.stop()
            await m2.started.wait()
            assert log2 == ["start c"]
            assert mini_api.objects[(LEASES, "ns", "mgr")]["spec"]["holderIdentity"] == "m2"
    assert log1 == ["start c", "stop c"]


async def test_lost_lease_stops_controllers_and_raises(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """When another holder overwrites the lease, renewals fail, controllers stop and run() raises LeadershipLost."""
    log: list[str] = []
    manager = Manager(mini_client, elector=elector(mini_client, "m1"), health_port=None)
    manager.add(Journal("c", log))
    task = asyncio.ensure_future(manager.run(handle_signals=False))
    await manager.started.wait()
    current = mini_api.objects[(LEASES, "ns", "mgr")]
    mini_api.put(LEASES, {**current, "spec": {**current["spec"], "holderIdentity": "thief", "renewTime": "x"}})
    with pytest.raises(LeadershipLost):
        await task
    assert log == ["start c", "stop c"]
    assert mini_api.objects[(LEASES, "ns", "mgr")]["spec"]["holderIdentity"] == "thief"


async def test_crashing_runnable_stops_the_manager(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A runnable that raises stops everything and its error propagates from run()."""

    class Crash:
        async def run(self) -> None:
            raise RuntimeError("crash")

    log: list[str] = []
    manager = Manager(mini_client, health_port=None)
    manager.add(Journal("other", log))
    manager.add(Crash())
    with pytest.raises(RuntimeError, match="crash"):
        await manager.run(handle_signals=False)
    assert log[-1] == "stop other"


async def test_a_task_dump_says_where_each_task_waits() -> None:
    """`kill -USR1` logs every asyncio task with its stack: a program stuck on something says what."""
    gate = asyncio.Event()

    async def stuck_reconcile() -> None:
        await gate.wait()

    task = asyncio.get_running_loop().create_task(stuck_reconcile(), name="podclique-worker-0")
    await asyncio.sleep(0)
    with capture_logs() as logs:
        dump_tasks()
    gate.set()
    await task
    [entry] = [e for e in logs if e.get("task") == "podclique-worker-0"]
    assert any("stuck_reconcile" in frame for frame in entry["stack"])


async def test_a_program_manager_freezes_what_its_synced_caches_hold(
    mini_api: MiniApi, mini_client: KubeClient
) -> None:
    """With `freeze_heap_when_synced` (set by the programs) the listed objects leave the collector's passes once
    the caches have synced; a manager left at the default (every test) does not touch the heap."""
    mini_api.put("api/v1/pods", {"metadata": {"name": "p", "namespace": "ns"}})
    gc.unfreeze()
    try:
        plain = Manager(mini_client, health_port=None)
        plain.cache.informer(PODS)
        async with running(plain):
            await plain.started.wait()
        assert gc.get_freeze_count() == 0
        program = Manager(mini_client, health_port=None)
        program.freeze_heap_when_synced = True
        informer = program.cache.informer(PODS)
        async with running(program):
            await program.started.wait()
            assert gc.get_freeze_count() > 0
            listed = informer.store.get(ObjectKey("ns", "p"))
            assert listed is not None
            assert gc.is_tracked(listed)
            assert all(obj is not listed for obj in gc.get_objects())  # the permanent generation is not listed
    finally:
        gc.unfreeze()


def test_tune_gc_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > 700
    finally:
        gc.set_threshold(*before)
