"""End-to-end fixtures: a fresh grove-sim per test with the Grove CRDs, a client, and an in-process scheduler."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_runtime.client import Client, KubeClient
from grove_runtime.clock import Clock
from grove_runtime.resources import CRDS, PODS, PRIORITYCLASSES
from grove_sched.app import SchedulerApp, build
from grove_sched.config import SchedulerConfig
from grove_sched.podgang_status import PODGANGS
from grove_sched.postfilter import PostFilter
from grove_sched.preemption import VictimRemover
from grove_sim.cluster import nodes_from_flags
from grove_sim.testing import SimCluster

Obj = dict[str, Any]
SCHED = "grove-scheduler"
GATE = "grove.io/podgang-pending-creation"
RACK = "topology.kubernetes.io/rack"
BLOCK = "topology.kubernetes.io/block"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def cluster() -> Iterator[SimCluster]:
    """2 blocks x 2 racks x 2 nodes with 8 GPUs each (node-0..node-7; racks rack-0..rack-3)."""
    with SimCluster(nodes=nodes_from_flags(8, 8, "block=2,rack=2")) as sim:
        yield sim


@contextlib.asynccontextmanager
async def crd_client(cluster: SimCluster) -> AsyncIterator[KubeClient]:
    """A KubeClient for a sim, with the Grove CRDs applied."""
    kube = await KubeClient.from_kubeconfig(cluster.kubeconfig)
    try:
        for path in sorted((ROOT / "crds").glob("*.yaml")):
            await kube.create(CRDS, yaml.safe_load(path.read_text()))
        yield kube
    finally:
        await kube.close()


@pytest.fixture
async def client(cluster: SimCluster) -> AsyncIterator[KubeClient]:
    """A KubeClient for the sim with the Grove CRDs applied."""
    async with crd_client(cluster) as kube:
        yield kube


def pod_body(name: str, gang: str | None, gpus: int, *, gated: bool = True, ns: str = "default") -> Obj:
    """A pod for our scheduler, gated like the operator creates them."""
    spec: Obj = {
        "schedulerName": SCHED,
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {
                    "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ],
    }
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    labels = {"grove.io/podgang": gang} if gang else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec,
    }


async def make_gang(
    kube: Client,
    name: str,
    groups: dict[str, tuple[int, int, int]],
    *,
    required: str | None = None,
    group_required: str | None = None,
    ungate: bool = True,
    priority_class: str | None = None,
) -> dict[str, list[str]]:
    """Create a PodGang with groups {name: (pods, minReplicas, gpus per pod)} and its gated pods; lift the gates."""
    members: dict[str, list[str]] = {}
    for group, (count, _, gpus) in groups.items():
        members[group] = [f"{name}-{group}-{i}" for i in range(count)]
        for pod in members[group]:
            await kube.create(PODS, pod_body(pod, name, gpus))
    spec: Obj = {
        "podgroups": [
            {
                "name": group,
                "podReferences": [{"namespace": "default", "name": p} for p in members[group]],
                "minReplicas": groups[group][1],
                **({"topologyConstraint": {"packConstraint": {"required": group_required}}} if group_required else {}),
            }
            for group in groups
        ]
    }
    if required:
        spec["topologyConstraint"] = {"packConstraint": {"required": required}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    body = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    await kube.create(PODGANGS, body)
    if ungate:
        for pods in members.values():
            for pod in pods:
                await kube.patch(PODS, pod, {"spec": {"schedulingGates": None}}, "default")
    return members


async def priority_class(client: Client, name: str, value: int, *, never: bool = False) -> None:
    """A PriorityClass (`never`: its preemptionPolicy is Never)."""
    body: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if never:
        body["preemptionPolicy"] = "Never"
    await client.create(PRIORITYCLASSES, body)


async def gang_pods(kube: Client, gang: str) -> list[Obj]:
    """Current pods labelled with the gang."""
    result = await kube.list(PODS, "default", label_selector=f"grove.io/podgang={gang}")
    return list(result["items"])


async def bound_nodes(kube: Client, gang: str) -> dict[str, str]:
    """Pod → node for the gang's bound pods."""
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"] for p in await gang_pods(kube, gang) if p["spec"].get("nodeName")
    }


async def eventually(probe: Any, *, limit: float = 30.0, interval: float = 0.05) -> Any:
    """Poll an async probe until it returns something truthy (the deadline only guards against hangs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        value = await probe()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached within {limit}s")
        await asyncio.sleep(interval)


async def scheduled_condition(kube: Client, gang: str) -> Obj | None:
    """The PodGang's Scheduled condition, if any."""
    pg = await kube.get(PODGANGS, gang, "default")
    for cond in (pg.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Scheduled":
            return dict(cond)
    return None


@contextlib.asynccontextmanager
async def running_scheduler(
    kubeconfig: str,
    *,
    client: Client | None = None,
    post_filter: PostFilter | None = None,
    victim_remover: VictimRemover | None = None,
    clock: Clock | None = None,
    **overrides: Any,
) -> AsyncIterator[SchedulerApp]:
    """Run the scheduler's manager as an asyncio task against the sim (metrics on a random port; `clock`: the
    scheduler's clock, a `FakeClock` to move its timers)."""
    own: KubeClient | None = None
    if client is None:
        own = await KubeClient.from_kubeconfig(kubeconfig)
        client = own
    settings: dict[str, Any] = {
        "metrics_port": 0,
        "metrics_host": "127.0.0.1",
        "leader_elect": False,
        "initial_backoff": 0.05,
        "max_backoff": 0.2,
    }
    try:
        config = SchedulerConfig(**{**settings, **overrides})
        app = build(config, client, clock=clock, post_filter=post_filter, victim_remover=victim_remover)
    except BaseException:
        if own is not None:
            await own.close()
        raise
    task = asyncio.get_running_loop().create_task(app.manager.run(handle_signals=False))
    try:
        started = asyncio.ensure_future(app.manager.started.wait())
        await asyncio.wait({started, task}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            started.cancel()
            task.result()
        yield app
    finally:
        app.manager.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if own is not None:
            await own.close()
