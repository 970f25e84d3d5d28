"""Rolling updates end to end (upstream RU7-RU21): grove-sim, grove-operator and grove-scheduler, pods made Ready by
the simulated kubelet, an observer checking at every pod event that the update takes one thing down at a time."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, items, live_pods, wait_for
from ._history import History, untrue_counters
from ._lifecycle import IMAGE, PodObserver, is_ready, running_scheduler, set_image, template_hash, workload

Obj = dict[str, Any]
PODS_PER_REPLICA = 2 + 2 + 2 * 3
V2, V3 = "registry.example.com/llm:2", "registry.example.com/llm:3"


async def settled(kube: KubeClient, namespace: str, name: str, pods: int, image: str = IMAGE) -> Obj | None:
    """The PodCliqueSet once `pods` pods are Ready with `image` and its update (if any) has ended."""
    live = await live_pods(kube, namespace)
    if len(live) != pods or not all(is_ready(p) for p in live):
        return None
    if {c["image"] for p in live for c in p["spec"]["containers"]} != {image}:
        return None
    pcs = await kube.get(PODCLIQUESETS, name, namespace)
    status = pcs.get("status") or {}
    progress = status.get("updateProgress") or {}
    replicas = pcs["spec"]["replicas"]
    if progress and not progress.get("updateEndedAt"):
        return None
    if status.get("updatedReplicas") != replicas or status.get("availableReplicas") != replicas:
        return None
    return pcs if len({template_hash(p) for p in live}) == 1 else None


@contextlib.asynccontextmanager
async def updating(
    kube: KubeClient, namespace: str, name: str, *, deleted: int
) -> AsyncIterator[tuple[PodObserver, History]]:
    """A two-replica PodCliqueSet `name`, all Ready, then an update to V2 that has replaced `deleted` pods; the
    observer and the history recording since before the update."""
    await create_pcs(kube, namespace, workload(name))
    await wait_for(lambda: settled(kube, namespace, name, 2 * PODS_PER_REPLICA), "all pods Ready")
    async with PodObserver(kube, namespace) as observer, History(kube, namespace) as history:
        await set_image(kube, namespace, name, V2)

        async def under_way() -> bool:
            return len(observer.deleted) >= deleted

        await wait_for(under_way, "the update under way")
        yield observer, history


async def test_rolling_update_takes_one_pod_one_group_replica_one_replica_at_a_time(
    operator: OperatorThread, crds: SimCluster, kube: KubeClient, namespace: str, kubectl: Callable[..., Any]
) -> None:
    """A new image rolls through two replicas: standalone pods one at a time, scaling-group replicas one at a time,
    one PodCliqueSet replica after the other; it ends with every pod on the new template and true status columns."""
    async with running_scheduler(crds.kubeconfig):
        await create_pcs(kube, namespace, workload("roll"))
        await wait_for(lambda: settled(kube, namespace, "roll", 2 * PODS_PER_REPLICA), "all pods Ready")
        before = {p["metadata"]["name"] for p in await live_pods(kube, namespace)}
        async with PodObserver(kube, namespace) as observer, History(kube, namespace) as history:
            await set_image(kube, namespace, "roll", V2)
            pcs = await wait_for(lambda: settled(kube, namespace, "roll", 2 * PODS_PER_REPLICA, V2), "update done", 120)
        assert observer.violations == [], (observer.deleted, observer.violations[:3])
        assert untrue_counters(history, "roll") == []
        assert observer.max_down == {"standalone": 1, "group": 1, "replicas": 1}
        assert observer.replica_order() == [0, 1], "one PodCliqueSet replica after the other"
        assert {name for _, name, _ in observer.deleted} == before, "every old pod was replaced once"
    after = await live_pods(kube, namespace)
    assert not before & {p["metadata"]["name"] for p in after}
    status = pcs["status"]
    progress = status["updateProgress"]
    assert progress["updateStartedAt"] <= progress["updateEndedAt"]
    assert "currentlyUpdating" not in progress
    assert status["currentGenerationHash"] == pcs["status"]["currentGenerationHash"]
    assert (progress["updatedPodCliquesCount"], progress["totalPodCliquesCount"]) == (4, 4)
    assert (progress["updatedPodCliqueScalingGroupsCount"], progress["totalPodCliqueScalingGroupsCount"]) == (2, 2)
    for pclq in await items(kube, PODCLIQUES, namespace, f"{glabels.LABEL_COMPONENT}=pcs-podclique"):
        pclq_progress = pclq["status"]["updateProgress"]
        assert pclq_progress["updateStartedAt"] <= pclq_progress["updateEndedAt"]
        assert pclq["status"]["updatedReplicas"] == pclq["spec"]["replicas"]

    async def groups_caught_up() -> list[Obj] | None:
        # Each controller writes its own status: the PodCliqueSet's `updateEndedAt` comes from its PodCliques and
        # does not wait for the scaling groups' own status writes (batched over their members' changes).
        pcsgs = await items(kube, PODCLIQUESCALINGGROUPS, namespace)
        done = all(g["status"].get("updatedReplicas") == 2 for g in pcsgs)
        return pcsgs if pcsgs and done else None

    for pcsg in await wait_for(groups_caught_up, "the scaling groups' status caught up"):
        assert pcsg["status"]["updateProgress"]["updateEndedAt"]
        assert pcsg["status"]["currentPodCliqueSetGenerationHash"] == status["currentGenerationHash"]
    table = kubectl("get", "pcs", "roll", "-n", namespace, "-o", "json").stdout
    assert json.loads(table)["status"]["updatedReplicas"] == 2
    columns = kubectl("get", "pcs", "roll", "-n", namespace, "--no-headers").stdout.split()
    assert columns[1:4] == ["2", "2", "2"], f"REPLICAS AVAILABLE UPDATED: {columns}"
    reasons = [e for e in await items(kube, EVENTS, namespace) if e["involvedObject"]["name"] == "roll"]
    messages = " | ".join(e["message"] for e in reasons)
    assert "updating replica 0" in messages
    assert "updating replica 1" in messages


async def test_a_second_update_mid_update_converges_to_the_newest_template(
    operator: OperatorThread, crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """Upstream #400: a new image while the first update is half-way; the update ends on the newest template."""
    async with running_scheduler(crds.kubeconfig), updating(kube, namespace, "twice", deleted=3) as (observer, history):
        await set_image(kube, namespace, "twice", V3)
        pcs = await wait_for(lambda: settled(kube, namespace, "twice", 2 * PODS_PER_REPLICA, V3), "done", 120)
    assert observer.violations == [], (observer.deleted, observer.violations[:3])
    assert untrue_counters(history, "twice") == []
    assert pcs["status"]["updateProgress"]["updateEndedAt"] >= pcs["status"]["updateProgress"]["updateStartedAt"]


async def test_replicas_added_during_an_update_start_on_the_new_template_and_are_not_rolled(
    operator: OperatorThread, crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """Scale-out mid-update, of the PodCliqueSet (a third replica) and of a scaling group not updated yet (a third
    replica of replica 1's group): their pods have the new template and none of them is ever deleted."""
    async with running_scheduler(crds.kubeconfig), updating(kube, namespace, "grow", deleted=1) as (observer, history):
        await kube.scale(PODCLIQUESETS, "grow", namespace, 3)
        await kube.scale(PODCLIQUESCALINGGROUPS, "grow-1-inst", namespace, 3)
        await wait_for(lambda: settled(kube, namespace, "grow", 3 * PODS_PER_REPLICA + 3, V2), "update done", 120)
    assert observer.violations == []
    assert untrue_counters(history, "grow") == []
    assert 2 not in {replica for replica, _, _ in observer.deleted}
    assert not [name for _, name, _ in observer.deleted if name.startswith("grow-1-inst-2-")]
