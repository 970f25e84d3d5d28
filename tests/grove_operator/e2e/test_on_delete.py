"""OnDelete end to end (upstream OD1-OD9): nothing is replaced automatically, a pod deleted by hand comes back on
the new template, scale-in removes outdated pods first, and a switch to RollingRecreate rolls what is left.

This module's operator runs on a fake clock advanced ten times as fast as real time, so "30 s of the operator's
time" passes in 3 s while every timer, requeue and retry of the operator keeps running."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from grove_operator.kinds import PODCLIQUES, PODCLIQUESETS
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS
from grove_sim.testing import SimCluster

from ._harness import OperatorThread, create_pcs, items, live_pods, wait_for
from ._lifecycle import (
    PodObserver,
    fast_clock_operator,
    is_ready,
    operator_time_passes,
    running_scheduler,
    set_image,
    workload,
)
from .test_rolling_update import PODS_PER_REPLICA, V2, settled

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def operator(crds: SimCluster) -> Iterator[OperatorThread]:
    """One grove-operator on a fake clock running at ten times real time."""
    yield from fast_clock_operator(crds.kubeconfig)


def images(pods: list[Obj]) -> dict[str, str]:
    """Pod name → image of its first container."""
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in pods}


async def replaced(kube: KubeClient, namespace: str, gone: str, pclq: str) -> Obj | None:
    """The Ready pod of `pclq` that replaced `gone`, once there is one."""
    pods = await items(kube, PODS, namespace, f"grove.io/podclique={pclq}")
    fresh = [p for p in pods if p["metadata"]["name"] != gone and not p["metadata"].get("deletionTimestamp")]
    ready = [p for p in fresh if is_ready(p) and p["spec"]["containers"][0]["image"] == V2]
    return ready[0] if ready else None


async def test_on_delete_replaces_only_what_is_deleted_by_hand_and_scales_in_outdated_pods_first(
    operator: OperatorThread, crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """OD1/OD2/OD3/OD5: a template change replaces nothing for 30 s of the operator's time; a deleted standalone pod
    and a deleted scaling-group pod come back on the new template; scale-in removes the outdated pod first."""
    async with running_scheduler(crds.kubeconfig):
        await create_pcs(kube, namespace, workload("od", replicas=1, strategy="OnDelete"))
        await wait_for(lambda: settled(kube, namespace, "od", PODS_PER_REPLICA), "all pods Ready")
        async with PodObserver(kube, namespace) as observer:
            await set_image(kube, namespace, "od", V2)

            async def recorded() -> Obj | None:
                pcs = await kube.get(PODCLIQUESETS, "od", namespace)
                progress = (pcs.get("status") or {}).get("updateProgress") or {}
                return pcs if progress.get("updateEndedAt") else None

            pcs = await wait_for(recorded, "the template change recorded")
            await operator_time_passes(operator, 30)
            assert observer.deleted == [], "OnDelete deletes nothing by itself"
        progress = pcs["status"]["updateProgress"]
        assert progress["updateStartedAt"] == progress["updateEndedAt"]
        assert set(images(await live_pods(kube, namespace)).values()) == {"registry.example.com/llm:1"}
        pcs = await kube.get(PODCLIQUESETS, "od", namespace)
        assert pcs["status"]["updatedReplicas"] == 0, "no replica runs the new template"

        for pclq in ("od-0-router", "od-0-inst-0-leader"):
            (victim, *_) = await items(kube, PODS, namespace, f"grove.io/podclique={pclq}")
            await kube.delete(PODS, victim["metadata"]["name"], namespace)
            await wait_for(lambda p=pclq, v=victim: replaced(kube, namespace, v["metadata"]["name"], p), "new pod")

        router = await kube.get(PODCLIQUES, "od-0-router", namespace)

        async def counted() -> bool:
            fresh = await kube.get(PODCLIQUES, "od-0-router", namespace)
            return bool((fresh.get("status") or {}).get("updatedReplicas") == 1)

        await wait_for(counted, "the router's updatedReplicas counting the new pod")
        assert router["spec"]["podSpec"]["containers"][0]["image"] == V2
        await kube.scale(PODCLIQUES, "od-0-router", namespace, 1)

        async def scaled_in() -> dict[str, str] | None:
            pods = images(await items(kube, PODS, namespace, "grove.io/podclique=od-0-router"))
            live = [p for p in await live_pods(kube, namespace) if p["metadata"]["name"] in pods]
            return images(live) if len(live) == 1 else None

        assert set((await wait_for(scaled_in, "router scaled to 1")).values()) == {V2}, "the outdated pod went"


async def test_switching_from_on_delete_to_rolling_recreate_rolls_what_is_left(
    operator: OperatorThread, crds: SimCluster, kube: KubeClient, namespace: str
) -> None:
    """OD9: after an OnDelete template change, switching the strategy at run time updates every old pod, one thing
    down at a time."""
    async with running_scheduler(crds.kubeconfig):
        await create_pcs(kube, namespace, workload("sw", replicas=2, strategy="OnDelete"))
        await wait_for(lambda: settled(kube, namespace, "sw", 2 * PODS_PER_REPLICA), "all pods Ready")
        async with PodObserver(kube, namespace) as observer:
            await set_image(kube, namespace, "sw", V2)
            await operator_time_passes(operator, 10)
            assert observer.deleted == []
            await kube.patch(PODCLIQUESETS, "sw", {"spec": {"updateStrategy": {"type": "RollingRecreate"}}}, namespace)
            await wait_for(lambda: settled(kube, namespace, "sw", 2 * PODS_PER_REPLICA, V2), "rolled", 120)
        assert observer.violations == []
        assert observer.replica_order() == [0, 1]
