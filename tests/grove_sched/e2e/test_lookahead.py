"""The queue look-ahead through the API (`--lookahead-gangs`): a scheduler that looks at the gangs queued behind
the one it places puts that one where the queue still fits, so every gang is bound where best fit strands one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES, PODS
from grove_sim.cluster.shapes import nodes_from_flags
from grove_sim.testing import SimCluster

from .conftest import RACK, bound_nodes, crd_client, eventually, make_gang, pod_body, running_scheduler


@pytest.fixture
async def two_racks() -> AsyncIterator[tuple[SimCluster, KubeClient]]:
    """Two 4-GPU nodes, each its own rack; one GPU of the second node is taken by a pod bound there already."""
    with SimCluster(nodes=nodes_from_flags(2, 4, "rack=2")) as sim:
        async with crd_client(sim) as kube:
            nodes = sorted(n["metadata"]["name"] for n in (await kube.list(NODES))["items"])
            busy = pod_body("background", None, 1, gated=False)
            busy["spec"]["nodeName"] = nodes[1]
            await kube.create(PODS, busy)
            yield sim, kube


async def test_the_first_gang_leaves_room_for_the_two_queued_behind_it(
    two_racks: tuple[SimCluster, KubeClient],
) -> None:
    """Gangs of 2, 3 and 2 GPUs, each required in one rack, queued before the scheduler starts. Best fit would
    put the first on the fuller node (3 free) and leave 1 GPU per node for the last; looking two gangs ahead,
    the first goes to the empty node and all three are bound."""
    sim, kube = two_racks
    for name, gpus in (("a", 2), ("b", 3), ("c", 2)):
        await make_gang(kube, name, {"w": (1, 1, gpus)}, required=RACK)
    async with running_scheduler(sim.kubeconfig, lookahead_gangs=4):

        async def all_bound() -> dict[str, str] | None:
            where = {name: next(iter((await bound_nodes(kube, name)).values()), "") for name in "abc"}
            return where if all(where.values()) else None

        where = await eventually(all_bound)
    nodes = sorted(n["metadata"]["name"] for n in (await kube.list(NODES))["items"])
    assert where == {"a": nodes[0], "b": nodes[1], "c": nodes[0]}
