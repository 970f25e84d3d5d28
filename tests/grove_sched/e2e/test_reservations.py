"""A Koordinator Reservation for 16 GPUs in one rack (two 8-GPU copies of its template, packed by rack): the
scheduler places it, refuses its capacity to a gang that does not own it, and places its owner into it."""

from __future__ import annotations

from typing import Any

import pytest

from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES, PRIORITYCLASSES
from grove_sched.reservations import RESERVATIONS
from grove_sim.testing import SimCluster

from .conftest import RACK, bound_nodes, eventually, make_gang, running_scheduler, scheduled_condition

pytestmark = pytest.mark.slow
Obj = dict[str, Any]


def reservation(name: str, owner_gang: str) -> Obj:
    """16 GPUs in one rack for the pods of PodGang `owner_gang`."""
    container = {
        "name": "main",
        "image": "reserved",
        "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
    }
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {
            "name": name,
            "annotations": {"grove.io/reservation-replicas": "2", "grove.io/reservation-pack": RACK},
        },
        "spec": {
            "template": {"spec": {"containers": [container]}},
            "owners": [{"labelSelector": {"matchLabels": {"grove.io/podgang": owner_gang}}}],
            "ttl": "1h",
        },
    }


async def test_a_reservation_is_held_for_its_owner(cluster: SimCluster, client: KubeClient) -> None:
    racks = {n["metadata"]["name"]: n["metadata"]["labels"][RACK] for n in (await client.list(NODES))["items"]}
    async with running_scheduler(cluster.kubeconfig):
        await client.create(RESERVATIONS, reservation("training", "owner"))

        async def available() -> Obj | None:
            status = (await client.get(RESERVATIONS, "training")).get("status") or {}
            return status if status.get("phase") == "Available" else None

        status = await eventually(available)
        reserved = status["nodeNames"]
        assert len(reserved) == 2
        assert len(set(reserved)) == 2
        assert len({racks[n] for n in reserved}) == 1
        assert status["allocatable"]["nvidia.com/gpu"] == "16"

        # Seven 8-GPU pods would fit the eight nodes, but two of them are reserved for someone else.
        await make_gang(client, "other", {"w": (7, 7, 8)})

        async def refused() -> Obj | None:
            cond = await scheduled_condition(client, "other")
            return cond if cond is not None and cond.get("status") == "False" else None

        await eventually(refused)
        assert await bound_nodes(client, "other") == {}

        await make_gang(client, "owner", {"w": (2, 2, 8)})

        async def owner_bound() -> dict[str, str] | None:
            found = await bound_nodes(client, "owner")
            return found if len(found) == 2 else None

        assert sorted((await eventually(owner_bound)).values()) == sorted(reserved)

        async def succeeded() -> Obj | None:
            status = (await client.get(RESERVATIONS, "training")).get("status") or {}
            return status if status.get("phase") == "Succeeded" else None

        done = await eventually(succeeded)
        assert len(done["currentOwners"]) == 2
        assert await bound_nodes(client, "other") == {}  # the owner now uses the capacity itself


async def test_a_reservation_ends_with_its_ttl(cluster: SimCluster, client: KubeClient) -> None:
    """A Reservation of every node whose ttl passes is Failed (reason Expired) and holds nothing any more: a gang
    that needs every node is placed."""
    body = reservation("short", "nobody")
    body["metadata"]["annotations"] = {"grove.io/reservation-replicas": "8"}
    body["spec"]["ttl"] = "1s"
    async with running_scheduler(cluster.kubeconfig):
        await client.create(RESERVATIONS, body)
        await make_gang(client, "later", {"w": (8, 8, 8)})

        async def later_bound() -> dict[str, str] | None:
            found = await bound_nodes(client, "later")
            return found if len(found) == 8 else None

        await eventually(later_bound)
        status = (await client.get(RESERVATIONS, "short")).get("status") or {}
        assert status.get("phase") == "Failed"
        assert status["conditions"][0]["reason"] == "Expired"


async def test_a_higher_priority_gang_does_not_preempt_a_reservation(cluster: SimCluster, client: KubeClient) -> None:
    """Preemption looks for lower-priority gangs to evict; what a Reservation holds is none of them."""
    await client.create(PRIORITYCLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "vip"}, "value": 1000})  # fmt: skip
    async with running_scheduler(cluster.kubeconfig):
        await client.create(RESERVATIONS, reservation("held", "owner"))

        async def available() -> bool:
            return ((await client.get(RESERVATIONS, "held")).get("status") or {}).get("phase") == "Available"

        await eventually(available)
        await make_gang(client, "vip", {"w": (7, 7, 8)}, priority_class="vip")

        async def refused() -> str | None:
            cond = await scheduled_condition(client, "vip")
            return str(cond["message"]) if cond is not None and cond.get("status") == "False" else None

        assert "preemption" in await eventually(refused)
        assert await bound_nodes(client, "vip") == {}
        assert await available()


async def test_what_an_owner_uses_is_no_longer_held(cluster: SimCluster, client: KubeClient) -> None:
    """A reservation of 2 x 2 GPUs that stays Available after use (`allocateOnce: false`): once its owner's two
    2-GPU pods sit in it, those GPUs count once (used, no longer held), so the other 60 of the 64 GPUs take a
    non-owner's 30 pods of 2 GPUs; counted twice, only 56 would be left."""
    body = reservation("shared", "owner")
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": "2"},
        "limits": {"nvidia.com/gpu": "2"},
    }
    body["spec"]["allocateOnce"] = False
    async with running_scheduler(cluster.kubeconfig):
        await client.create(RESERVATIONS, body)

        async def available() -> Obj | None:
            status = (await client.get(RESERVATIONS, "shared")).get("status") or {}
            return status if status.get("phase") == "Available" else None

        async def owners_recorded() -> Obj | None:
            status = (await client.get(RESERVATIONS, "shared")).get("status") or {}
            return status if len(status.get("currentOwners") or ()) == 2 else None

        reserved = (await eventually(available))["nodeNames"]
        await make_gang(client, "owner", {"w": (2, 2, 2)})
        assert (await eventually(owners_recorded))["phase"] == "Available"
        assert sorted((await bound_nodes(client, "owner")).values()) == sorted(reserved)
        await make_gang(client, "other", {"w": (30, 30, 2)})

        async def other_bound() -> dict[str, str] | None:
            found = await bound_nodes(client, "other")
            return found if len(found) == 30 else None

        await eventually(other_bound)
