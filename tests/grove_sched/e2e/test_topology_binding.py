"""grove-scheduler reads the topology hierarchy from the ClusterTopologyBinding its PodGang names."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES, PODS
from grove_sched.podgang_status import PODGANGS
from grove_sched.topology import CLUSTERTOPOLOGYBINDINGS
from grove_sim.cluster.nodes import node_capacity, node_object
from grove_sim.testing import SimCluster

from .conftest import bound_nodes, crd_client, eventually, pod_body, running_scheduler

L1, L2, L3 = "example.com/net-layer-1", "example.com/net-layer-2", "example.com/net-layer-3"
BUSY = ("n1", "n3", "n6", "n11", "n12")


@pytest.fixture
def nwtopo() -> Iterator[SimCluster]:
    """knavigator's nwtopo cluster: 12 eight-GPU nodes under 6 leaf, 3 spine and 1 core switch (own label keys)."""
    nodes = [
        node_object(
            f"n{i}",
            capacity=node_capacity("64", "512Gi", 110, 8, "1Ti"),
            labels={
                "kubernetes.io/hostname": f"n{i}",
                L1: f"sw1{(i + 1) // 2}",
                L2: f"sw2{(i + 3) // 4}",
                L3: "sw31",
            },
            index=i,
        )
        for i in range(1, 13)
    ]
    with SimCluster(nodes=nodes) as sim:
        yield sim


@pytest.fixture
async def nw_client(nwtopo: SimCluster) -> AsyncIterator[KubeClient]:
    """A client for the nwtopo cluster with the Grove CRDs applied."""
    async with crd_client(nwtopo) as kube:
        yield kube


def _binding(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": name},
        "spec": {
            "levels": [
                {"domain": "zone", "key": L3},
                {"domain": "block", "key": L2},
                {"domain": "rack", "key": L1},
                {"domain": "host", "key": "kubernetes.io/hostname"},
            ]
        },
    }


async def _job(kube: KubeClient, name: str, topology: str | None) -> None:
    """Three whole-node pods preferring one leaf switch, ungated, and their PodGang."""
    pods = [f"{name}-{i}" for i in range(3)]
    for pod in pods:
        await kube.create(PODS, pod_body(pod, name, 8, gated=False))
    annotations = {"grove.io/topology-name": topology} if topology else {}
    await kube.create(
        PODGANGS,
        {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": {
                "podgroups": [
                    {
                        "name": "w",
                        "podReferences": [{"namespace": "default", "name": p} for p in pods],
                        "minReplicas": 3,
                    }
                ],
                "topologyConstraint": {"packConstraint": {"preferred": L1}},
            },
        },
    )


async def test_the_named_binding_s_levels_decide_the_fallback(nwtopo: SimCluster, nw_client: KubeClient) -> None:
    """knavigator's network-topology case end to end: the job prefers one leaf, none has three free nodes, and the
    binding says leaves sit in spines, so the job lands on the spine that holds it (n5, n7, n8), with
    placementScore 1 (proven optimal on every tier)."""
    client = nw_client
    for name in BUSY:
        await client.patch(NODES, name, {"spec": {"unschedulable": True}})
    await client.create(CLUSTERTOPOLOGYBINDINGS, _binding("network"))
    leaves_only = {**_binding("other"), "spec": {"levels": [{"domain": "rack", "key": L1}]}}
    await client.create(CLUSTERTOPOLOGYBINDINGS, leaves_only)
    async with running_scheduler(nwtopo.kubeconfig):
        await _job(client, "job", "network")

        async def placed() -> dict[str, str] | None:
            nodes = await bound_nodes(client, "job")
            return nodes if len(nodes) == 3 else None

        nodes = await eventually(placed)
        assert sorted(nodes.values()) == ["n5", "n7", "n8"]

        async def scored() -> float | None:
            pg = await client.get(PODGANGS, "job", "default")
            return (pg.get("status") or {}).get("placementScore")

        assert await eventually(scored) == 1.0
