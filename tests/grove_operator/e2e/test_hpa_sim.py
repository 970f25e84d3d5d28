"""The acceptance of autoscaling: grove-sim's HPA controller scales a PodClique through its scale subresource, as
the simulated CPU usage of its pods crosses the target, and the operator's pods follow (the operator made the HPA
from the clique's ``autoScalingConfig``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS
from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster, console_script

from ._harness import OperatorThread, bind_all, create_pcs, live_pods, load_sample, wait_for

NODES = [f"node-{i}" for i in range(4)]
PCLQ = "simple1-0-pca"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """The module's cluster, with HPAs synced every 100 ms."""
    options = SimOptions(
        nodes=nodes_from_flags(4, 8, "block=2,rack=4"),
        exec_images={"grove-initc": console_script("grove-initc")},
        hpa_controller=True,
        hpa_sync_period=0.1,
    )
    with SimCluster(options) as cluster:
        yield cluster


async def _running_pca(kube: KubeClient, namespace: str, count: int) -> list[dict[str, Any]] | None:
    """Bind what is pending (standing in for grove-scheduler); the clique's pods once exactly ``count`` run."""
    await bind_all(kube, namespace, NODES)
    pods = [p for p in await live_pods(kube, namespace) if p["metadata"]["labels"].get(glabels.LABEL_PODCLIQUE) == PCLQ]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    return pods if len(pods) == count and len(running) == count else None


async def _use_cpu(kube: KubeClient, namespace: str, usage: str) -> None:
    for pod in await live_pods(kube, namespace):
        if pod["metadata"]["labels"].get(glabels.LABEL_PODCLIQUE) == PCLQ:
            patch = {"metadata": {"annotations": {"sim.grove.io/cpu-usage": usage}}}
            await kube.patch(PODS, pod["metadata"]["name"], patch, namespace)


async def test_hpa_scales_a_podclique_and_its_pods_follow(
    sim: SimCluster, operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """200% of a 10m request against an 80% target scales pca from 3 to its maximum of 5 and the operator makes
    5 pods; idle pods bring it back to its minimum once the five-minute down window passed on the HPA's clock."""
    now = [time.monotonic()]
    sim.call(lambda server: setattr(server.autoscaler, "clock", lambda: now[0]))
    try:
        await create_pcs(kube, namespace, load_sample("simple/simple1.yaml"))
        await wait_for(lambda: _running_pca(kube, namespace, 3), "3 running pca pods")
        await _use_cpu(kube, namespace, "20m")

        async def clique_at(replicas: int) -> bool:
            clique = await kube.get(PODCLIQUES, PCLQ, namespace)
            return bool(clique["spec"]["replicas"] == replicas)

        await wait_for(lambda: clique_at(5), "pca scaled to 5")
        await wait_for(lambda: _running_pca(kube, namespace, 5), "5 running pca pods")
        await _use_cpu(kube, namespace, "1m")
        now[0] += 301
        await wait_for(lambda: clique_at(3), "pca back to its minimum of 3")
        await wait_for(lambda: _running_pca(kube, namespace, 3), "3 pca pods again")
    finally:
        sim.call(lambda server: setattr(server.autoscaler, "clock", time.monotonic))
