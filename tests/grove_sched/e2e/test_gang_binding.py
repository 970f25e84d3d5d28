"""grove-scheduler against grove-sim: all-or-nothing gangs, topology, status, events."""

from __future__ import annotations

import asyncio

from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, NODES
from grove_sched.podgang_status import PODGANGS
from grove_sim.testing import SimCluster

from .conftest import BLOCK, RACK, bound_nodes, eventually, make_gang, running_scheduler, scheduled_condition


async def cordon(kube: KubeClient, node: str, value: bool) -> None:
    await kube.patch(NODES, node, {"spec": {"unschedulable": value}})


async def test_short_capacity_binds_nothing_until_a_node_is_uncordoned(cluster: SimCluster, client: KubeClient) -> None:
    """A gang needing all 8 nodes binds nothing while one is cordoned, and binds whole once it is uncordoned."""
    await cordon(client, "node-7", True)
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "big", {"workers": (8, 8, 8)})
        cond = await eventually(lambda: scheduled_condition(client, "big"))
        assert cond["status"] == "False"
        assert cond["reason"] == "Unschedulable"
        for _ in range(5):
            assert await bound_nodes(client, "big") == {}
            await asyncio.sleep(0.1)
        events = await client.list(EVENTS, "default")
        failed = [e for e in events["items"] if e["reason"] == "FailedScheduling"]
        assert {e["involvedObject"]["kind"] for e in failed} == {"Pod", "PodGang"}
        assert {e["message"] for e in failed} == {cond["message"]}
        assert "node" in cond["message"]
        await cordon(client, "node-7", False)

        async def all_bound() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "big")
            return nodes if len(nodes) == 8 else None

        nodes = await eventually(all_bound)
        assert sorted(nodes.values()) == [f"node-{i}" for i in range(8)]

        async def scheduled() -> bool:
            c = await scheduled_condition(client, "big")
            return c is not None and c["status"] == "True"

        await eventually(scheduled)
        pg = await client.get(PODGANGS, "big", "default")
        assert 0.0 <= pg["status"]["placementScore"] <= 1.0
        assert pg["status"]["phase"] in ("Starting", "Running")
        events = await client.list(EVENTS, "default")
        assigned = [e for e in events["items"] if e["reason"] == "Scheduled"]
        assert [e["involvedObject"]["kind"] for e in assigned] == ["PodGang"]  # one Event for the gang
        assert assigned[0]["message"].startswith("Successfully assigned default/big's 8 pod(s) to 8 node(s): ")
        assert "node-0 (big-workers-" in assigned[0]["message"]


async def test_required_rack_holds_on_every_bound_pod(cluster: SimCluster, client: KubeClient) -> None:
    """Every pod of a gang with a required rack constraint lands in one rack, and a new node lets a second fit."""
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "r1", {"prefill": (2, 2, 4), "decode": (2, 2, 4)}, required=RACK)

        async def bound_r1() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "r1")
            return nodes if len(nodes) == 4 else None

        nodes = await eventually(bound_r1)
        labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in (await client.list(NODES))["items"]}
        assert len({labels[node][RACK] for node in nodes.values()}) == 1


async def test_added_node_makes_room_in_its_rack(cluster: SimCluster, client: KubeClient) -> None:
    """A gang needing three full nodes in one rack waits, and binds entirely into the rack that gains a node."""
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "wide", {"w": (3, 3, 8)}, required=RACK)
        cond = await eventually(lambda: scheduled_condition(client, "wide"))
        assert cond["status"] == "False"
        assert "rack" in cond["message"]
        assert await bound_nodes(client, "wide") == {}
        template = await client.get(NODES, "node-0")
        labels = dict(template["metadata"]["labels"])
        labels["kubernetes.io/hostname"] = "node-extra"
        await client.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "node-extra", "labels": labels},
                "spec": {},
                "status": template["status"],
            },
        )

        async def bound_wide() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "wide")
            return nodes if len(nodes) == 3 else None

        nodes = await eventually(bound_wide)
        racks = {(await client.get(NODES, n))["metadata"]["labels"][RACK] for n in nodes.values()}
        assert racks == {labels[RACK]}


async def test_block_and_rack_constraints_hold(cluster: SimCluster, client: KubeClient) -> None:
    """Gang-level required block and per-group required rack hold on every bound pod."""
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "blk", {"prefill": (2, 2, 8), "decode": (4, 4, 4)}, required=BLOCK, group_required=RACK)

        async def bound_blk() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "blk")
            return nodes if len(nodes) == 6 else None

        nodes = await eventually(bound_blk)
        labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in (await client.list(NODES))["items"]}
        assert len({labels[n][BLOCK] for n in nodes.values()}) == 1
        for group in ("prefill", "decode"):
            racks = {labels[n][RACK] for p, n in nodes.items() if f"-{group}-" in p}
            assert len(racks) == 1


async def test_malformed_podgang_is_reported_and_blocks_nobody(cluster: SimCluster, client: KubeClient) -> None:
    """A PodGang referencing a missing pod gets Scheduled=False/InvalidPodGang while another gang binds."""
    async with running_scheduler(cluster.kubeconfig):
        await make_gang(client, "bad", {"x": (1, 1, 1)}, required="example.com/no-such-key")
        await make_gang(client, "good", {"x": (2, 2, 1)})
        cond = await eventually(lambda: scheduled_condition(client, "bad"))
        assert cond["reason"] == "InvalidPodGang"
        assert "example.com/no-such-key" in cond["message"]

        async def good_bound() -> bool:
            return len(await bound_nodes(client, "good")) == 2

        await eventually(good_bound)
        assert await bound_nodes(client, "bad") == {}
