"""Gang termination end to end (upstream GT1-GT6): grove-sim, grove-operator and grove-scheduler with
`terminationDelay: 2s`. Nodes are cordoned so a deleted pod's replacement cannot be scheduled: the gang falls below
its minimum and stays there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, PODS
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, items, live_pods, wait_for
from ._lifecycle import cordon, is_ready, running_scheduler, workload

Obj = dict[str, Any]


@pytest.fixture
async def scheduler(crds: SimCluster, kube: KubeClient) -> AsyncIterator[None]:
    """grove-scheduler for one test; every node uncordoned again afterwards."""
    async with running_scheduler(crds.kubeconfig):
        try:
            yield
        finally:
            await cordon(kube, False)


async def uids(kube: KubeClient, namespace: str) -> dict[str, str]:
    """PodClique name → uid of the live PodCliques."""
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in await items(kube, PODCLIQUES, namespace)
        if not p["metadata"].get("deletionTimestamp")
    }


async def all_ready(kube: KubeClient, namespace: str, count: int) -> bool:
    """`count` live pods, all Ready."""
    pods = await live_pods(kube, namespace)
    return len(pods) == count and all(is_ready(p) for p in pods)


async def delete_one_pod(kube: KubeClient, namespace: str, pclq: str) -> None:
    """Delete one pod of PodClique `pclq`."""
    pods = await items(kube, PODS, namespace, f"{glabels.LABEL_PODCLIQUE}={pclq}")
    await kube.delete(PODS, pods[0]["metadata"]["name"], namespace)


async def condition(kube: KubeClient, rt: Any, name: str, namespace: str, type_: str) -> Obj | None:
    """The named condition of an object, if present."""
    obj = await kube.get(rt, name, namespace)
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_), None)


async def gang_terminations(kube: KubeClient, namespace: str, name: str) -> list[Obj]:
    """GangTermination Events about object `name`."""
    events = await items(kube, EVENTS, namespace)
    return [e for e in events if e["reason"] == "GangTermination" and e["involvedObject"]["name"] == name]


async def break_a_gang(
    kube: KubeClient, namespace: str, body: Obj, pods: int, pclq: str, rebuilt: str
) -> tuple[dict[str, str], dict[str, str]]:
    """Create `body`, wait for its `pods` pods, cordon every node, delete a pod of `pclq`, and wait until every
    PodClique named `rebuilt`... has a new uid: the PodClique uids (before, after)."""
    await create_pcs(kube, namespace, body)
    await wait_for(lambda: all_ready(kube, namespace, pods), "all pods Ready")

    async def seen_available() -> bool:
        # Gang termination leaves alone a PodClique the operator never saw available, so the break must come after
        # the operator's status caught up with the Ready pods (it batches pod events).
        found = await condition(kube, PODCLIQUES, pclq, namespace, "PodCliqueAvailable")
        return found is not None and found["status"] == "True"

    await wait_for(seen_available, f"{pclq} seen available")
    before = await uids(kube, namespace)
    await cordon(kube, True)
    await delete_one_pod(kube, namespace, pclq)

    async def done() -> dict[str, str] | None:
        now = await uids(kube, namespace)
        return now if changed(before, now, rebuilt) else None

    return before, await wait_for(done, f"{rebuilt}* rebuilt")


def changed(before: dict[str, str], after: dict[str, str], prefix: str) -> bool:
    """Every PodClique named `prefix`... exists again with a new uid."""
    names = [n for n in before if n.startswith(prefix)]
    return bool(names) and all(n in after and after[n] != before[n] for n in names)


def same(before: dict[str, str], after: dict[str, str], prefix: str) -> bool:
    """Every PodClique named `prefix`... kept its uid."""
    names = [n for n in before if n.startswith(prefix)]
    return bool(names) and all(after.get(n) == before[n] for n in names)


async def test_a_replica_breached_longer_than_the_delay_is_rebuilt_once_and_not_while_never_available(
    operator: OperatorThread, scheduler: None, kube: KubeClient, namespace: str
) -> None:
    """GT1: a standalone clique loses a pod it cannot get back: after 2 s every PodClique of that replica is rebuilt
    (new uids; the other replica untouched) with a Warning Event; the rebuilt replica, never available since, is
    not rebuilt again however long its breach lasts; uncordoned, everything comes back."""
    body = workload("gt", delay="2s", standalone=(("worker", 2, 2),), group_replicas=1)
    before, after = await break_a_gang(kube, namespace, body, 10, "gt-0-worker", "gt-0-")
    assert same(before, after, "gt-1-"), "the other replica is left alone"
    (event,) = await gang_terminations(kube, namespace, "gt")
    assert event["type"] == "Warning"
    assert "replica 0" in event["message"]
    assert "gt-0-worker" in event["message"] or "gt-0-inst" in event["message"]

    async def breached_long() -> bool:
        found = await condition(kube, PODCLIQUES, "gt-0-worker", namespace, "MinAvailableBreached")
        if found is None or found["status"] != "True":
            return False
        since = datetime.fromisoformat(found["lastTransitionTime"].replace("Z", "+00:00"))
        return datetime.now(UTC) - since > timedelta(seconds=5)

    await wait_for(breached_long, "the rebuilt replica in breach for more than twice the delay")
    assert (await uids(kube, namespace)) == after, "a never-available replica is not recycled"
    available = await condition(kube, PODCLIQUES, "gt-0-worker", namespace, "PodCliqueAvailable")
    assert available is not None
    assert available["reason"] == "NotYetAvailable"
    assert len(await gang_terminations(kube, namespace, "gt")) == 1
    await cordon(kube, False)
    await wait_for(lambda: all_ready(kube, namespace, 10), "everything back")
    assert (await uids(kube, namespace)) == after


async def test_a_breach_shorter_than_the_delay_heals_without_a_rebuild(
    operator: OperatorThread, scheduler: None, kube: KubeClient, namespace: str
) -> None:
    """GT6: a pod lost and replaced within the delay: the breach ends, nothing is rebuilt."""
    await create_pcs(kube, namespace, workload("heal", delay="1m", standalone=(("worker", 2, 2),), group_replicas=1))
    await wait_for(lambda: all_ready(kube, namespace, 10), "all pods Ready")
    before = await uids(kube, namespace)
    await cordon(kube, True)
    await delete_one_pod(kube, namespace, "heal-0-worker")

    async def breached() -> bool:
        found = await condition(kube, PODCLIQUES, "heal-0-worker", namespace, "MinAvailableBreached")
        return found is not None and found["status"] == "True"

    await wait_for(breached, "the breach")
    await cordon(kube, False)

    async def healed() -> bool:
        found = await condition(kube, PODCLIQUES, "heal-0-worker", namespace, "MinAvailableBreached")
        return found is not None and found["status"] == "False" and await all_ready(kube, namespace, 10)

    await wait_for(healed, "the breach healed")
    assert (await uids(kube, namespace)) == before
    assert await gang_terminations(kube, namespace, "heal") == []


async def test_a_broken_scaling_group_replica_is_recreated_alone_when_the_group_keeps_its_minimum(
    operator: OperatorThread, scheduler: None, kube: KubeClient, namespace: str
) -> None:
    """GT5: scaling group of 2 replicas, minAvailable 1: replica 1 broken for 2 s is recreated alone."""
    body = workload("gs", replicas=1, delay="2s", standalone=(("worker", 2, 2),), group_replicas=2, group_min=1)
    before, after = await break_a_gang(kube, namespace, body, 8, "gs-0-inst-1-follower", "gs-0-inst-1-")
    assert same(before, after, "gs-0-inst-0-")
    assert same(before, after, "gs-0-worker")
    (event,) = await gang_terminations(kube, namespace, "gs-0-inst")
    assert "replica 1" in event["message"]
    assert await gang_terminations(kube, namespace, "gs") == []
    await cordon(kube, False)
    await wait_for(lambda: all_ready(kube, namespace, 8), "everything back")


async def test_a_scaling_group_below_its_minimum_gets_the_whole_replica_rebuilt(
    operator: OperatorThread, scheduler: None, kube: KubeClient, namespace: str
) -> None:
    """GT2: the only scaling-group replica broken: the PodCliqueSet rebuilds its whole replica (the standalone
    PodClique too) and marks the group GangTerminationInProgress until it is whole again."""
    body = workload("gw", replicas=1, delay="2s", standalone=(("worker", 2, 2),), group_replicas=1, group_min=1)
    await break_a_gang(kube, namespace, body, 5, "gw-0-inst-0-follower", "gw-0-")
    (event,) = await gang_terminations(kube, namespace, "gw")
    assert "replica 0" in event["message"]

    async def marked() -> bool:
        found = await condition(kube, PODCLIQUESCALINGGROUPS, "gw-0-inst", namespace, "GangTerminationInProgress")
        return found is not None and found["status"] == "True"

    await wait_for(marked, "GangTerminationInProgress on the scaling group")
    await cordon(kube, False)
    await wait_for(lambda: all_ready(kube, namespace, 5), "everything back")

    async def cleared() -> bool:
        found = await condition(kube, PODCLIQUESCALINGGROUPS, "gw-0-inst", namespace, "GangTerminationInProgress")
        return found is None

    await wait_for(cleared, "GangTerminationInProgress cleared once the group is whole")
