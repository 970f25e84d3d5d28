"""grove_runtime against the real simulated API server (grove_sim): informer, controller, leases, events,
status subresource and binding over the real wire protocol."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.controller import Controller
from grove_runtime.events import EventRecorder
from grove_runtime.informer import Informer, running
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.leaderelection import LeaderElector
from grove_runtime.resources import CRDS, EVENTS, LEASES, NAMESPACES, NODES, PODS
from grove_sched.tenancy import QUEUES
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster

from .helpers import Recorder, eventually

QUEUE_CRD = Path(__file__).resolve().parents[2] / "crds" / "scheduling.run.ai_queues.yaml"


def pod(name: str, ns: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
async def client(sim: SimCluster) -> AsyncIterator[KubeClient]:
    """A KubeClient built from the sim's kubeconfig."""
    kube = await KubeClient.from_kubeconfig(sim.kubeconfig)
    try:
        yield kube
    finally:
        await kube.close()


_ns_counter = iter(range(1_000_000))


@pytest.fixture
async def ns(client: KubeClient) -> str:
    """A fresh namespace per test."""
    name = f"rt-{next(_ns_counter)}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


async def test_informer_sees_creates_updates_deletes(client: KubeClient, ns: str) -> None:
    """A namespaced pod informer mirrors creates, label updates and deletes into its store and handlers."""
    await client.create(PODS, pod("a", ns))
    informer = Informer(client, PODS, namespace=ns)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        assert ObjectKey(ns, "a") in informer.store
        await client.create(PODS, pod("b", ns))
        await client.patch(PODS, "a", {"metadata": {"labels": {"x": "1"}}}, ns)
        await client.delete(PODS, "b", ns, grace_period_seconds=0)
        await eventually(lambda: ("delete", "b") in rec.events and ObjectKey(ns, "b") not in informer.store)
        await eventually(lambda: (informer.store.get(ObjectKey(ns, "a")) or {})["metadata"]["labels"] == {"x": "1"})
    assert rec.events[:2] == [("add", "a"), ("add", "b")]
    assert ("update", "a") in rec.events


async def test_informer_rewatches_after_server_closes_stream(client: KubeClient, ns: str) -> None:
    """When the server ends the watch at timeoutSeconds, the informer re-watches without re-listing."""
    informer = Informer(client, PODS, namespace=ns, watch_timeout=(1, 1))
    async with running(informer):
        await eventually(lambda: informer.watches >= 2)
        await client.create(PODS, pod("late", ns))
        await eventually(lambda: ObjectKey(ns, "late") in informer.store)
    assert informer.lists == 1


@pytest.fixture(scope="module")
def small_history_sim() -> Iterator[SimCluster]:
    """A sim with a tiny watch history so that resuming from an old resourceVersion gets 410 Expired."""
    with SimCluster(SimOptions(history=2)) as cluster:
        yield cluster


async def test_informer_relists_on_410_and_synthesises_deletes(small_history_sim: SimCluster) -> None:
    """A paused informer resuming from an expired RV re-lists and emits deletes for objects removed meanwhile."""
    client = await KubeClient.from_kubeconfig(small_history_sim.kubeconfig)
    try:
        for name in ("keep", "gone"):
            await client.create(PODS, pod(name, "default"))
        informer = Informer(client, PODS, namespace="default")
        rec = Recorder()
        informer.add_handler(rec)
        async with running(informer):
            pass
        await client.delete(PODS, "gone", "default", grace_period_seconds=0)
        for i in range(6):
            await client.create(PODS, pod(f"new-{i}", "default"))
        await eventually_absent(client, "gone")
        task = asyncio.ensure_future(informer.run())
        try:
            await eventually(lambda: informer.lists == 2 and ObjectKey("default", "new-5") in informer.store)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        assert ("delete", "gone") in rec.events
        assert ObjectKey("default", "gone") not in informer.store
        assert ObjectKey("default", "keep") in informer.store
    finally:
        await client.close()


async def eventually_absent(client: KubeClient, name: str) -> None:
    """Wait until a gracefully deleted pod is really gone from the server."""
    for _ in range(400):
        try:
            await client.get(PODS, name, "default")
        except errors.NotFound:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{name} never disappeared")


class Exclusive:
    """Reconciler that counts calls per key and detects concurrent reconciles of one key."""

    def __init__(self) -> None:
        self.active: set[ObjectKey] = set()
        self.overlaps = 0
        self.calls: Counter[ObjectKey] = Counter()

    async def reconcile(self, key: ObjectKey) -> Result:
        if key in self.active:
            self.overlaps += 1
        self.active.add(key)
        self.calls[key] += 1
        try:
            await asyncio.sleep(0.01)
        finally:
            self.active.discard(key)
        return Result()


async def test_controller_reconciles_watched_keys_deduplicated(client: KubeClient, ns: str) -> None:
    """Bursts of events for a few pods cause reconciles of exactly those keys, never two at once for one key."""
    informer = Informer(client, PODS, namespace=ns)
    rec = Exclusive()
    ctrl = Controller("pods", rec, workers=4)
    ctrl.watch(informer)
    async with running(informer):
        task = asyncio.ensure_future(ctrl.run())
        try:
            for i in range(3):
                await client.create(PODS, pod(f"p{i}", ns))
            for round_ in range(5):
                for i in range(3):
                    await client.patch(PODS, f"p{i}", {"metadata": {"labels": {"round": str(round_)}}}, ns)
            await eventually(lambda: len(rec.calls) == 3 and ctrl.in_flight == 0 and len(ctrl.queue) == 0)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert set(rec.calls) == {ObjectKey(ns, f"p{i}") for i in range(3)}
    assert rec.overlaps == 0
    assert sum(rec.calls.values()) <= 3 * 6


async def test_leader_election_on_sim(client: KubeClient, ns: str) -> None:
    """Two electors on the sim's Lease API: one wins, the other takes over after release."""
    a = LeaderElector(client, namespace=ns, name="lock", identity="a")
    b = LeaderElector(client, namespace=ns, name="lock", identity="b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert await a.try_acquire_or_renew()
    assert await a.release()
    assert await b.try_acquire_or_renew()
    lease = await client.get(LEASES, "lock", ns)
    assert lease["spec"]["holderIdentity"] == "b"


async def test_event_recorder_aggregates_on_sim(client: KubeClient, ns: str) -> None:
    """Repeated identical events become one Event whose count grows."""
    target = await client.create(PODS, pod("e", ns))
    recorder = EventRecorder(client, "grove-test")
    for _ in range(3):
        await recorder.warning(target, "BackOff", "retrying")
    listed = await client.list(EVENTS, ns)
    mine = [e for e in listed["items"] if e.get("reason") == "BackOff"]
    assert [e["count"] for e in mine] == [3]
    assert mine[0]["involvedObject"]["uid"] == target["metadata"]["uid"]


async def test_status_write_via_subresource(client: KubeClient, ns: str) -> None:
    """patch_status changes status through /status while a spec change in the same body is ignored."""
    await client.create(PODS, pod("s", ns))
    cond = {"type": "Example", "status": "True"}
    out = await client.patch_status(
        PODS, "s", {"status": {"conditions": [cond]}, "metadata": {"labels": {"z": "1"}}}, ns
    )
    assert cond in [{k: c.get(k) for k in ("type", "status")} for c in out["status"]["conditions"]]
    got = await client.get(PODS, "s", ns)
    assert "z" not in (got["metadata"].get("labels") or {})


async def test_binding_on_sim(client: KubeClient, ns: str) -> None:
    """bind() assigns a node through pods/binding; a second bind raises Conflict."""
    nodes = (await client.list(NODES))["items"]
    node = nodes[0]["metadata"]["name"]
    created = await client.create(PODS, pod("b", ns))
    await client.bind(ns, "b", node, uid=created["metadata"]["uid"])
    assert (await client.get(PODS, "b", ns))["spec"]["nodeName"] == node
    with pytest.raises(errors.Conflict):
        await client.bind(ns, "b", nodes[-1]["metadata"]["name"])


async def test_label_selected_list_and_informer(client: KubeClient, ns: str) -> None:
    """List and informer honour label selectors (a pod that stops matching leaves the informer's store)."""
    await client.create(PODS, pod("in", ns, team="a"))
    await client.create(PODS, pod("out", ns, team="b"))
    listed = await client.list(PODS, ns, label_selector="team=a")
    assert [p["metadata"]["name"] for p in listed["items"]] == ["in"]
    informer = Informer(client, PODS, namespace=ns, label_selector="team=a")
    async with running(informer):
        assert [k.name for k in informer.store.snapshot()] == ["in"]
        await client.patch(PODS, "in", {"metadata": {"labels": {"team": "c"}}}, ns)
        await eventually(lambda: len(informer.store) == 0)


async def test_optional_informer_starts_without_its_crd_and_picks_it_up_later(client: KubeClient) -> None:
    """An optional informer (a kind from another scheduler's CRD, such as KAI's Queue) is synced and empty while
    the cluster does not serve the kind, so a program starts without it; once the CRD is installed the next retry
    lists it, and when the CRD goes its objects are reported deleted (the next list is a 404 again). A required
    informer would never sync, and a program waiting for its caches would never start."""
    crd = yaml.safe_load(QUEUE_CRD.read_text())
    inf = Informer(client, QUEUES, optional=True, absent_retry=0.1)
    seen = Recorder()
    inf.add_handler(seen)
    async with running(inf):
        assert inf.absent
        assert inf.store.list() == []
        await client.create(CRDS, crd)
        queue = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team-a"}, "spec": {}}
        await eventually(lambda: not inf.absent)
        await client.create(QUEUES, queue)
        await eventually(lambda: [o["metadata"]["name"] for o in inf.store.list()] == ["team-a"])
        await client.delete(CRDS, crd["metadata"]["name"])
        await eventually(lambda: inf.store.list() == [] and ("delete", "team-a") in seen.events)
