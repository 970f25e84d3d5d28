"""Queue behaviour through the API: priority order, best-effort extras, gangs of other schedulers."""

from __future__ import annotations

import asyncio

from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES, PODS, PRIORITYCLASSES
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, eventually, make_gang, pod_body, running_scheduler, scheduled_condition


async def test_higher_priority_gang_wins_contended_capacity(cluster: SimCluster, client: KubeClient) -> None:
    """Of two ready gangs that cannot both fit, the one with the higher PriorityClass value is bound."""
    await client.create(
        PRIORITYCLASSES,
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 1000},
    )
    await make_gang(client, "early-low", {"w": (6, 6, 8)})
    await make_gang(client, "late-high", {"w": (6, 6, 8)})
    await client.patch(PODGANGS, "late-high", {"spec": {"priorityClassName": "urgent"}}, "default")
    async with running_scheduler(cluster.kubeconfig):

        async def high_bound() -> bool:
            return len(await bound_nodes(client, "late-high")) == 6

        await eventually(high_bound)
        cond = await eventually(lambda: scheduled_condition(client, "early-low"))
        assert cond["status"] == "False"
        assert await bound_nodes(client, "early-low") == {}


async def test_extra_pods_are_best_effort_and_follow_later(cluster: SimCluster, client: KubeClient) -> None:
    """The minimum binds with whatever extras fit; the rest bind once capacity appears."""
    for node in ("node-4", "node-5", "node-6", "node-7"):
        await client.patch(NODES, node, {"spec": {"unschedulable": True}})
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "ext", {"w": (6, 2, 8)})

        async def four_bound() -> bool:
            return len(await bound_nodes(client, "ext")) == 4

        await eventually(four_bound)
        for _ in range(3):
            assert len(await bound_nodes(client, "ext")) == 4
            await asyncio.sleep(0.05)
        cond = await scheduled_condition(client, "ext")
        assert cond is not None
        assert cond["status"] == "True"
        await client.patch(NODES, "node-6", {"spec": {"unschedulable": False}})
        await client.patch(NODES, "node-7", {"spec": {"unschedulable": False}})

        async def six_bound() -> bool:
            return len(await bound_nodes(client, "ext")) == 6

        await eventually(six_bound)


async def test_podgang_of_another_scheduler_is_left_alone(cluster: SimCluster, client: KubeClient) -> None:
    """Pods of another scheduler are never bound and their PodGang never gets our status."""
    await client.create(PODS, {**pod_body("kai-0", "kai", 1, gated=False), "spec": {
        **pod_body("kai-0", "kai", 1, gated=False)["spec"], "schedulerName": "kai-scheduler"}})  # fmt: skip
    await client.create(
        PODGANGS,
        {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": {"name": "kai", "namespace": "default", "labels": {"grove.io/scheduler-name": "kai-scheduler"}},
            "spec": {
                "podgroups": [
                    {"name": "x", "podReferences": [{"namespace": "default", "name": "kai-0"}], "minReplicas": 1}
                ]
            },
        },
    )
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "ours", {"w": (1, 1, 1)})

        async def ours_bound() -> bool:
            return len(await bound_nodes(client, "ours")) == 1

        await eventually(ours_bound)
        pg = await client.get(PODGANGS, "kai", "default")
        assert "status" not in pg or not pg["status"]
        assert await bound_nodes(client, "kai") == {}


async def test_the_scheduler_keeps_the_queue_it_is_configured_with(cluster: SimCluster, client: KubeClient) -> None:
    """The configured backoff and the fair-share rank reach the queue the scheduler pops from (an empty queue is
    falsy, and `queue or SchedulingQueue()` once replaced it with a default one)."""
    async with running_scheduler(cluster.kubeconfig, initial_backoff=0.05, max_backoff=0.2) as app:
        queue = app.scheduler.queue
        assert queue._initial == 0.05
        assert queue._max == 0.2
        assert queue._rank is not None
