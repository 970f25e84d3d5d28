"""grove-scheduler next to upstream Grove alone: a cluster with only Grove's own CRDs (no KAI Queue, no
Koordinator Reservation, no ClusterTopologyBinding) still gets its gangs placed; the other kinds are read once
their CRDs appear."""

from __future__ import annotations

import yaml

from grove_runtime.client import KubeClient
from grove_runtime.resources import CRDS
from grove_sim.testing import SimCluster

from .conftest import ROOT, bound_nodes, eventually, make_gang, running_scheduler

UPSTREAM = ("grove.io_podcliquesets.yaml", "grove.io_podcliques.yaml", "grove.io_podcliquescalinggroups.yaml")


async def test_gangs_are_placed_without_the_optional_crds(cluster: SimCluster) -> None:
    kube = await KubeClient.from_kubeconfig(cluster.kubeconfig)
    try:
        for name in (*UPSTREAM, "scheduler.grove.io_podgangs.yaml"):
            await kube.create(CRDS, yaml.safe_load((ROOT / "crds" / name).read_text()))
        async with running_scheduler(cluster.kubeconfig, client=kube) as app:
            await make_gang(kube, "g", {"workers": (2, 2, 8)})

            async def placed() -> dict[str, str] | None:
                nodes = await bound_nodes(kube, "g")
                return nodes if len(nodes) == 2 else None

            await eventually(placed)
            assert app.manager.cache.synced
    finally:
        await kube.close()
