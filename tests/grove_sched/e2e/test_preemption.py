"""Preemption through the API: whole lower-priority gangs evicted in the domain the preemptor needs, capacity held
for the preemptor while victims terminate, equal priority and `preemptionPolicy: Never` never preempt, and pending
pods saying why in `PodScheduled`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, PODS, PRIORITYCLASSES
from grove_sched.cache import PodKey
from grove_sched.gangs import GangKey
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import (
    BLOCK,
    RACK,
    bound_nodes,
    eventually,
    gang_pods,
    make_gang,
    priority_class,
    running_scheduler,
    scheduled_condition,
)

Obj = Mapping[str, Any]
FILLERS = ("low-0", "low-1", "low-2", "low-3")


async def fill_with_low_gangs(client: KubeClient) -> dict[str, set[str]]:
    """Four gangs of two 8-GPU pods, each required into one rack: the 8-node cluster is full. Returns each
    gang's racks."""
    await priority_class(client, "batch", 10)
    for name in FILLERS:
        await make_gang(client, name, {"w": (2, 2, 8)}, required=RACK, priority_class="batch")

    async def all_bound() -> bool:
        return all([len(await bound_nodes(client, name)) == 2 for name in FILLERS])

    await eventually(all_bound)
    racks: dict[str, set[str]] = {}
    for name in FILLERS:
        racks[name] = {f"rack-{int(node.split('-')[1]) // 2}" for node in (await bound_nodes(client, name)).values()}
    return racks


async def reasons_on(client: KubeClient, kind: str, name: str) -> list[tuple[str, str]]:
    events = await client.list(EVENTS, "default", field_selector=f"involvedObject.name={name}")
    return [(e["reason"], e["message"]) for e in events["items"] if e["involvedObject"]["kind"] == kind]


async def test_high_priority_gang_evicts_one_whole_gang_in_the_rack_it_needs(
    cluster: SimCluster, client: KubeClient
) -> None:
    """The acceptance scenario: low-priority gangs fill the cluster; a high-priority gang of 2 x 8 GPUs required
    into one rack evicts exactly one low gang (both pods), binds in that rack; the other three keep running."""
    async with running_scheduler(cluster.kubeconfig) as app:
        racks = await fill_with_low_gangs(client)
        await priority_class(client, "inference", 1000)
        await make_gang(client, "high", {"w": (2, 2, 8)}, required=RACK, priority_class="inference")

        async def high_bound() -> dict[str, str]:
            nodes = await bound_nodes(client, "high")
            return nodes if len(nodes) == 2 else {}

        nodes = await eventually(high_bound)
        high_racks = {f"rack-{int(node.split('-')[1]) // 2}" for node in nodes.values()}
        assert len(high_racks) == 1
        gone = [name for name in FILLERS if not await gang_pods(client, name)]
        assert len(gone) == 1
        assert racks[gone[0]] == high_racks
        for name in FILLERS:
            if name not in gone:
                assert len(await bound_nodes(client, name)) == 2
        preempting = await reasons_on(client, "PodGang", "high")
        assert any(reason == "Preempting" and f"default/{gone[0]}" in message for reason, message in preempting)
        preempted = await reasons_on(client, "PodGang", gone[0])
        assert any(reason == "Preempted" and "default/high" in message for reason, message in preempted)
        cond = await scheduled_condition(client, gone[0])
        assert cond is not None
        assert cond["reason"] == "Preempted"
        metrics = app.metrics
        assert metrics.preemption_attempts.labels(result="preempted")._value.get() == 1
        assert metrics.preemption_victims.labels(kind="gangs")._value.get() == 1
        assert metrics.preemption_victims.labels(kind="pods")._value.get() == 2


async def test_a_block_needs_two_whole_gangs(cluster: SimCluster, client: KubeClient) -> None:
    """A gang of 4 x 8 GPUs required into one block (2 racks) evicts the two low gangs of one block, no more."""
    async with running_scheduler(cluster.kubeconfig):
        racks = await fill_with_low_gangs(client)
        await priority_class(client, "inference", 1000)
        await make_gang(client, "big", {"w": (4, 4, 8)}, required=BLOCK, priority_class="inference")

        async def big_bound() -> bool:
            return len(await bound_nodes(client, "big")) == 4

        await eventually(big_bound)
        gone = [name for name in FILLERS if not await gang_pods(client, name)]
        assert len(gone) == 2
        freed = set().union(*(racks[name] for name in gone))
        assert freed in ({"rack-0", "rack-1"}, {"rack-2", "rack-3"})


async def test_equal_priority_and_never_policy_do_not_preempt(cluster: SimCluster, client: KubeClient) -> None:
    """A gang of the fillers' priority, and a higher one whose class says preemptionPolicy Never, both wait;
    their pods say why in PodScheduled."""
    async with running_scheduler(cluster.kubeconfig):
        await fill_with_low_gangs(client)
        await priority_class(client, "polite", 1000, never=True)
        await make_gang(client, "peer", {"w": (2, 2, 8)}, required=RACK, priority_class="batch")
        await make_gang(client, "polite", {"w": (2, 2, 8)}, required=RACK, priority_class="polite")

        async def said_why(name: str, words: str) -> Obj | None:
            for pod in await gang_pods(client, name):
                for cond in (pod.get("status") or {}).get("conditions") or ():
                    if cond.get("type") == "PodScheduled" and words in str(cond.get("message")):
                        found: Obj = dict(cond)
                        return found
            return None

        peer = await eventually(lambda: said_why("peer", "preemption cannot help"))
        assert peer["status"] == "False"
        assert peer["reason"] == "Unschedulable"
        polite = await eventually(lambda: said_why("polite", "preemptionPolicy is Never"))
        assert polite["reason"] == "Unschedulable"
        for name in FILLERS:
            assert len(await bound_nodes(client, name)) == 2
        assert await bound_nodes(client, "peer") == {}
        assert await bound_nodes(client, "polite") == {}
        pods = (await client.list(PODS, "default"))["items"]
        assert not any(p["metadata"].get("deletionTimestamp") for p in pods)


class HeldRemover:
    """Holds victim pods until the test deletes them one by one (victims that take their time to terminate)."""

    def __init__(self) -> None:
        self.held: list[Obj] = []

    async def remove(self, pod: Obj) -> None:
        self.held.append(pod)


async def test_capacity_freed_for_a_preemptor_is_not_taken_by_a_later_gang(
    cluster: SimCluster, client: KubeClient
) -> None:
    """While the victims terminate (one pod gone, one left), a gang arriving later that would fit on the freed node
    is not placed there: the capacity is held for the preemptor, whose pods show it as nominatedNodeName. Once the
    last victim is gone the preemptor binds on the nominated nodes; the late gang keeps waiting."""
    held = HeldRemover()
    async with running_scheduler(cluster.kubeconfig, victim_remover=held) as app:
        await fill_with_low_gangs(client)
        await priority_class(client, "inference", 1000)
        await make_gang(client, "high", {"w": (2, 2, 8)}, required=RACK, priority_class="inference")

        async def nominated() -> dict[str, str]:
            pods = await gang_pods(client, "high")
            found = {p["metadata"]["name"]: str((p.get("status") or {}).get("nominatedNodeName") or "") for p in pods}
            return found if len(held.held) == 2 and all(found.values()) else {}

        nodes = await eventually(nominated)
        victim_nodes = {p["spec"]["nodeName"] for p in held.held}
        assert app.metrics.registry.get_sample_value("grove_scheduler_preemption_reservations") == 1
        assert set(nodes.values()) == victim_nodes
        first, second = held.held
        await client.delete(PODS, first["metadata"]["name"], "default")

        async def first_gone() -> bool:
            key = PodKey("default", first["metadata"]["name"])
            return app.scheduler.cache.bound_node(key) is None

        await eventually(first_gone)
        await make_gang(client, "late", {"w": (1, 1, 8)}, priority_class="batch")

        async def late_refused() -> Obj | None:
            return await scheduled_condition(client, "late")

        cond = await eventually(late_refused)
        assert cond["status"] == "False"
        assert await bound_nodes(client, "late") == {}
        assert await bound_nodes(client, "high") == {}
        await client.delete(PODS, second["metadata"]["name"], "default")

        async def high_bound() -> dict[str, str]:
            bound = await bound_nodes(client, "high")
            return bound if len(bound) == 2 else {}

        assert await eventually(high_bound) == nodes
        assert await bound_nodes(client, "late") == {}
        assert len(app.scheduler.post_filter.reserved(GangKey("default", "late"), 0)) == 0
        assert app.metrics.registry.get_sample_value("grove_scheduler_preemption_reservations") == 0
        assert app.metrics.registry.get_sample_value("grove_scheduler_preemption_oldest_reservation_seconds") == 0
        assert app.metrics.registry.get_sample_value("grove_scheduler_preemption_reservation_age_seconds_count") == 1


async def test_extra_pods_above_a_minimum_go_before_a_whole_gang(cluster: SimCluster, client: KubeClient) -> None:
    """Three low gangs of two pods and an elastic gang (two pods, minimum one) fill the cluster; a high-priority
    one-pod gang takes the elastic gang's extra pod, which leaves that gang at its minimum, running."""
    await priority_class(client, "batch", 10)
    async with running_scheduler(cluster.kubeconfig):
        for name in FILLERS[:3]:
            await make_gang(client, name, {"w": (2, 2, 8)}, required=RACK, priority_class="batch")
        await make_gang(client, "elastic", {"w": (2, 1, 8)}, priority_class="batch")

        async def full() -> bool:
            counts = [len(await bound_nodes(client, name)) for name in (*FILLERS[:3], "elastic")]
            return counts == [2, 2, 2, 2]

        await eventually(full)
        await priority_class(client, "inference", 1000)
        await make_gang(client, "one", {"w": (1, 1, 8)}, priority_class="inference")

        async def one_bound() -> bool:
            return len(await bound_nodes(client, "one")) == 1

        await eventually(one_bound)
        assert len(await bound_nodes(client, "elastic")) == 1
        for name in FILLERS[:3]:
            assert len(await bound_nodes(client, name)) == 2
        cond = await scheduled_condition(client, "elastic")
        assert cond is not None
        assert cond["reason"] != "Preempted"


async def test_a_gang_naming_no_class_gets_the_global_default(cluster: SimCluster, client: KubeClient) -> None:
    """With a globalDefault PriorityClass of 1000, a gang naming no class outranks the batch fillers and preempts."""
    async with running_scheduler(cluster.kubeconfig):
        await fill_with_low_gangs(client)
        await client.create(
            PRIORITYCLASSES,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "everyone"},
                "value": 1000,
                "globalDefault": True,
            },
        )
        await make_gang(client, "plain", {"w": (2, 2, 8)}, required=RACK)

        async def plain_bound() -> bool:
            return len(await bound_nodes(client, "plain")) == 2

        await eventually(plain_bound)
        assert sum([not await gang_pods(client, name) for name in FILLERS]) == 1


async def test_a_preemptor_that_disappears_releases_its_reservation(cluster: SimCluster, client: KubeClient) -> None:
    """The preemptor's PodGang is deleted while its victims terminate: nothing is held for it any more."""
    held = HeldRemover()
    async with running_scheduler(cluster.kubeconfig, victim_remover=held) as app:
        await fill_with_low_gangs(client)
        await priority_class(client, "inference", 1000)
        await make_gang(client, "high", {"w": (2, 2, 8)}, required=RACK, priority_class="inference")

        async def holding() -> bool:
            return len(held.held) == 2 and len(app.scheduler.post_filter.reserved(GangKey("default", "x"), 0)) == 2

        await eventually(holding)
        await client.delete(PODGANGS, "high", "default")

        async def released() -> bool:
            return not app.scheduler.post_filter.reserved(GangKey("default", "x"), 0)

        await eventually(released)
        assert app.metrics.registry.get_sample_value("grove_scheduler_preemption_reservations") == 0


async def test_victims_through_the_eviction_api(cluster: SimCluster, client: KubeClient) -> None:
    """With `preemption_eviction="evict"` victims are removed by `pods/{name}/eviction` (policy/v1): the same
    outcome, one whole gang gone and the preemptor bound."""
    async with running_scheduler(cluster.kubeconfig, preemption_eviction="evict"):
        await fill_with_low_gangs(client)
        await priority_class(client, "inference", 1000)
        await make_gang(client, "high", {"w": (2, 2, 8)}, required=RACK, priority_class="inference")

        async def high_bound() -> bool:
            return len(await bound_nodes(client, "high")) == 2

        await eventually(high_bound)
        assert sum([not await gang_pods(client, name) for name in FILLERS]) == 1
