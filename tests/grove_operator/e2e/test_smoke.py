"""Smoke: the simplest upstream sample becomes its PodClique, PodGang, Service and gated pods."""

from __future__ import annotations

from grove_operator.kinds import PODCLIQUES, PODGANGS
from grove_runtime.client import KubeClient
from grove_runtime.resources import SERVICES

from ._harness import OperatorThread, create_pcs, live_pods, load_sample, names, wait_for


async def test_single_node_aggregated(operator: OperatorThread, kube: KubeClient, namespace: str) -> None:
    """single-node-aggregated yields one PodClique, one gang, one service and two pods."""
    await create_pcs(kube, namespace, load_sample("user-guide/01_core-concepts/single-node-aggregated.yaml"))

    async def two_pods() -> list[dict[str, object]] | None:
        pods = await live_pods(kube, namespace)
        return pods if len(pods) == 2 else None

    pods = await wait_for(two_pods, "2 pods")
    assert await names(kube, PODCLIQUES, namespace) == ["single-node-aggregated-0-model-worker"]
    assert await names(kube, PODGANGS, namespace) == ["single-node-aggregated-0"]
    assert await names(kube, SERVICES, namespace) == ["single-node-aggregated-0"]
    assert len(pods) == 2
