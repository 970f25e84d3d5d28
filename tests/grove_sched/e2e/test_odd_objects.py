"""Objects no real cluster should hold cost only themselves: an odd node is set aside, an impossible pod's gang is
UnschedulableAndUnresolvable (reported once, parked, never retried in a loop), and the post-filter runs only for
gangs that merely do not fit now."""

from __future__ import annotations

from typing import Any

from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, NODES, PODS
from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.model import Code, Status
from grove_sched.placement import Snapshot
from grove_sched.podgang_status import PODGANGS
from grove_sched.postfilter import NoPostFilter
from grove_sched.queue import Room
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, eventually, make_gang, pod_body, running_scheduler, scheduled_condition

ODD_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "odd", "labels": {"kubernetes.io/hostname": "odd"}},
    "status": {"allocatable": {"cpu": "64", "memory": "16Ei", "pods": "110", "nvidia.com/gpu": "1e30"}},
}


async def warnings(kube: KubeClient, kind: str, name: str, reason: str) -> list[dict[str, Any]]:
    events = await kube.list(EVENTS, "default")
    return [
        e
        for e in events["items"]
        if e["type"] == "Warning"
        and e["reason"] == reason
        and (e["involvedObject"]["kind"], e["involvedObject"]["name"]) == (kind, name)
    ]


async def test_a_node_with_odd_allocatable_is_set_aside_and_the_others_keep_scheduling(
    cluster: SimCluster, client: KubeClient
) -> None:
    """A node reporting 1e30 GPUs and 16Ei of memory gets a Warning Event and no pod; every other gang binds as
    usual, and the node rejoins once its allocatable is readable."""
    await client.create(NODES, ODD_NODE)
    async with running_scheduler(cluster.kubeconfig) as app:
        await make_gang(client, "fine", {"w": (2, 2, 4)})

        async def bound() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "fine")
            return nodes if len(nodes) == 2 else None

        assert "odd" not in (await eventually(bound)).values()
        events = await eventually(lambda: warnings(client, "Node", "odd", "InvalidNodeResources"))
        assert "nvidia.com/gpu" in events[0]["message"] or "memory" in events[0]["message"]
        assert "odd" in app.scheduler.cache.set_aside
        status = {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}}
        await client.patch(NODES, "odd", {"status": status}, subresource="status")

        async def rejoined() -> bool:
            return "odd" not in app.scheduler.cache.set_aside

        await eventually(rejoined)


async def impossible_gang(kube: KubeClient, name: str, amount: str) -> None:
    """A PodGang of one ungated pod asking `amount` GPUs."""
    body = pod_body(f"{name}-0", name, 1, gated=False)
    resources = body["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = resources["limits"]["nvidia.com/gpu"] = amount
    await kube.create(PODS, body)
    group = {"name": "w", "podReferences": [{"namespace": "default", "name": f"{name}-0"}], "minReplicas": 1}
    spec = {"podgroups": [group]}
    meta = {"name": name, "namespace": "default"}
    await kube.create(
        PODGANGS, {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang", "metadata": meta, "spec": spec}
    )


async def test_a_pod_asking_more_than_any_node_is_unresolvable_reported_and_parked(
    cluster: SimCluster, client: KubeClient
) -> None:
    """A pod asking 1e30 GPUs: the PodGang's Scheduled condition and a FailedScheduling Event say why, and the gang
    waits in the unschedulable room for a change instead of being retried."""
    async with running_scheduler(cluster.kubeconfig) as app:
        await impossible_gang(client, "huge", "1e30")
        cond = await eventually(lambda: scheduled_condition(client, "huge"))
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        assert "Insufficient nvidia.com/gpu" in cond["message"]
        events = await eventually(lambda: warnings(client, "PodGang", "huge", "FailedScheduling"))
        assert events[0]["message"] == cond["message"]

        async def parked() -> bool:
            return app.scheduler.queue.room(GangKey("default", "huge")) is Room.UNSCHEDULABLE

        await eventually(parked)
        attempts = app.metrics.registry.get_sample_value(
            "grove_scheduler_schedule_attempts_total", {"result": "unresolvable", "scheduler_name": "grove-scheduler"}
        )
        assert attempts == 1
        await make_gang(client, "after", {"w": (1, 1, 1)})

        async def after_bound() -> bool:
            return len(await bound_nodes(client, "after")) == 1

        await eventually(after_bound)


class RecordingPostFilter(NoPostFilter):
    """Records what the cycle hands the post-filter, and passes the status through."""

    def __init__(self) -> None:
        self.calls: list[tuple[ReadyGang, Snapshot, Status]] = []

    async def post_filter(self, gang: ReadyGang, snapshot: Snapshot, status: Status) -> Status:
        self.calls.append((gang, snapshot, status))
        return status


async def test_post_filter_runs_only_for_gangs_that_do_not_fit_now(cluster: SimCluster, client: KubeClient) -> None:
    """With 6 of 8 nodes full, a gang needing 4 whole nodes is Unschedulable: the post-filter gets it, the snapshot
    it did not fit and that status. A gang whose pods ask more than any node has, and a malformed one, are
    UnschedulableAndUnresolvable and never reach it; neither does a gang that fits."""
    recorder = RecordingPostFilter()
    async with running_scheduler(cluster.kubeconfig, post_filter=recorder):
        await make_gang(client, "filler", {"w": (6, 6, 8)})

        async def filled() -> bool:
            return len(await bound_nodes(client, "filler")) == 6

        await eventually(filled)
        await make_gang(client, "tight", {"w": (4, 4, 8)})
        await make_gang(client, "giant", {"w": (1, 1, 16)})
        await make_gang(client, "broken", {"w": (1, 1, 1)}, ungate=False)
        await client.patch(PODGANGS, "broken", {"spec": {"podgroups": [{"name": "w", "minReplicas": 2}]}}, "default")
        for gang in ("tight", "giant", "broken"):
            await eventually(lambda gang=gang: scheduled_condition(client, gang))
        assert {gang.key.name for gang, _, _ in recorder.calls} == {"tight"}
        gang, snapshot, status = recorder.calls[0]
        assert status.code is Code.UNSCHEDULABLE
        assert [group.min_replicas for group in gang.request.groups] == [4]
        gpu = snapshot.resource_index("nvidia.com/gpu")
        assert gpu is not None
        assert int(snapshot.free[:, gpu].sum()) == 16  # what the filler left: the snapshot the gang did not fit
        giant = await scheduled_condition(client, "giant")
        assert giant is not None
        assert giant["reason"] == "Unschedulable"
        broken = await scheduled_condition(client, "broken")
        assert broken is not None
        assert broken["reason"] == "InvalidPodGang"
