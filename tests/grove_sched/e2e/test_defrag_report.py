"""The defragmentation report through the API: on a cluster whose free GPUs are scattered, a gang that cannot fit
(and may not preempt) gets a `DefragmentationPlan` Event naming the one movable lower-priority gang whose move
would let it fit; nothing is evicted or moved."""

from __future__ import annotations

from typing import Any

from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, NODES, PODS
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, eventually, make_gang, priority_class, running_scheduler

LOW = [f"low-{i:02d}" for i in range(16)]


async def test_a_fragmented_cluster_gets_a_plan_and_nothing_moves(cluster: SimCluster, client: KubeClient) -> None:
    """Sixteen 4-GPU gangs fill the eight 8-GPU nodes; one per node is deleted, so 32 GPUs are free, 4 on each
    node. Every remaining gang but one opts out (`grove.io/movable: "false"`). A higher-priority gang of one
    8-GPU pod whose class says preemptionPolicy Never fits nowhere: its PodGang gets a Normal DefragmentationPlan
    Event naming the one movable gang (once: a second attempt finds the same plan and reports nothing new), and
    every remaining gang stays bound where it was."""
    async with running_scheduler(cluster.kubeconfig, defrag_report=True, defrag_interval=0.0) as app:
        await priority_class(client, "batch", 10)
        await priority_class(client, "urgent", 1000, never=True)
        for name in LOW:
            await make_gang(client, name, {"w": (1, 1, 4)}, priority_class="batch")

        async def all_bound() -> dict[str, str] | None:
            where = {name: next(iter((await bound_nodes(client, name)).values()), "") for name in LOW}
            return where if all(where.values()) else None

        where = await eventually(all_bound)
        kept: dict[str, str] = {}
        for name in LOW:
            if where[name] in kept.values():
                continue
            kept[name] = where[name]
        assert len(kept) == 8  # two gangs per node: keep the first of each node, delete the other
        for name in LOW:
            if name not in kept:
                await client.delete(PODGANGS, name, "default")
                await client.delete(PODS, f"{name}-w-0", "default")
        movable = sorted(kept)[0]
        for name in kept:
            if name != movable:
                patch = {"metadata": {"annotations": {"grove.io/movable": "false"}}}
                await client.patch(PODGANGS, name, patch, "default")

        async def holes() -> bool:
            pods = (await client.list(PODS, "default"))["items"]
            return len(pods) == 8

        await eventually(holes)
        await make_gang(client, "urgent", {"w": (1, 1, 8)}, priority_class="urgent")

        async def plan_event() -> dict[str, Any] | None:
            events = await client.list(EVENTS, "default", field_selector="involvedObject.name=urgent")
            for event in events["items"]:
                if event["reason"] == "DefragmentationPlan" and event["involvedObject"]["kind"] == "PodGang":
                    return dict(event)
            return None

        event = await eventually(plan_event)
        assert event["type"] == "Normal"
        assert f"default/{movable} (4 GPUs)" in event["message"]
        assert "moving 1 lower-priority gang(s)" in event["message"]
        metrics = app.metrics
        assert metrics.defrag_plans._value.get() == 1

        await client.patch(NODES, "node-0", {"metadata": {"labels": {"touched": "yes"}}})  # a node change: retry

        async def searched_again() -> bool:
            return bool(metrics.defrag_searches.labels(result="plan")._value.get() >= 2)

        await eventually(searched_again)  # the same plan again: not reported again
        assert metrics.defrag_plans._value.get() == 1
        assert metrics.preemption_attempts.labels(result="not_allowed")._value.get() >= 2
        for name, node in kept.items():
            assert await bound_nodes(client, name) == {f"{name}-w-0": node}
        assert await bound_nodes(client, "urgent") == {}
