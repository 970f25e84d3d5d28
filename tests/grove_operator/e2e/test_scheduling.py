"""Acting as the scheduler: gates lift per §3.3 and status moves scheduled → ready → available at three levels."""

from __future__ import annotations

from typing import Any

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_runtime.client import KubeClient
from grove_runtime.resources import NODES

from ._harness import OperatorThread, bind_all, create_pcs, items, live_pods, load_sample, wait_for

Obj = dict[str, Any]
SAMPLE = "user-guide/01_core-concepts/multi-node-aggregated.yaml"
BASE = "multinode-aggregated-0"
SCALED = "multinode-aggregated-0-model-instance-0"


def _gated(pod: Obj) -> bool:
    return any(
        g.get("name") == glabels.SCHEDULING_GATE_PODGANG_PENDING for g in pod["spec"].get("schedulingGates") or ()
    )


def _gang(pod: Obj) -> str:
    return str(pod["metadata"]["labels"][glabels.LABEL_PODGANG])


async def _node_names(kube: KubeClient) -> list[str]:
    return sorted(n["metadata"]["name"] for n in (await kube.list(NODES))["items"])


def _condition(obj: Obj, type_: str) -> str | None:
    found = next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_), None)
    return found.get("status") if found else None


async def test_scaled_gang_waits_for_base_gang_then_everything_becomes_available(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """Scaled-gang pods stay gated until the base gang is bound; binding all makes PCLQ, PCSG and PCS available."""
    await create_pcs(kube, namespace, load_sample(SAMPLE))

    async def base_ungated() -> list[Obj] | None:
        pods = await live_pods(kube, namespace)
        base = [p for p in pods if _gang(p) == BASE]
        return pods if len(pods) == 8 and len(base) == 4 and not any(_gated(p) for p in base) else None

    pods = await wait_for(base_ungated, "base gang pods ungated")
    scaled = [p for p in pods if _gang(p) == SCALED]
    assert len(scaled) == 4
    assert all(_gated(p) for p in scaled), "scaled-gang pods must wait for the base gang to be scheduled"

    pcs = await kube.get(PODCLIQUESETS, "multinode-aggregated", namespace)
    assert pcs["status"]["availableReplicas"] == 0

    nodes = await _node_names(kube)
    assert await bind_all(kube, namespace, nodes) == 4

    async def scaled_ungated() -> bool:
        pods = await live_pods(kube, namespace)
        return not any(_gated(p) for p in pods if _gang(p) == SCALED)

    await wait_for(scaled_ungated, "scaled gang pods ungated once the base gang is scheduled")
    assert await bind_all(kube, namespace, nodes) == 4

    async def available() -> Obj | None:
        obj = await kube.get(PODCLIQUESETS, "multinode-aggregated", namespace)
        return obj if (obj.get("status") or {}).get("availableReplicas") == 1 else None

    pcs = await wait_for(available, "PCS availableReplicas=1")
    assert pcs["status"]["replicas"] == 1
    assert pcs["status"]["observedGeneration"] == pcs["metadata"]["generation"]
    assert pcs["status"]["hpaPodSelector"] == (
        "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=multinode-aggregated"
    )

    async def pcsg_available() -> Obj | None:
        obj = await kube.get(PODCLIQUESCALINGGROUPS, "multinode-aggregated-0-model-instance", namespace)
        status = obj.get("status") or {}
        return obj if status.get("availableReplicas") == 2 and status.get("scheduledReplicas") == 2 else None

    pcsg = await wait_for(pcsg_available, "PCSG available=2")
    assert _condition(pcsg, "MinAvailableBreached") == "False"
    assert pcsg["status"]["selector"].endswith("grove.io/podcliquescalinggroup=multinode-aggregated-0-model-instance")

    async def pclqs_ready() -> list[Obj] | None:
        objs = await items(kube, PODCLIQUES, namespace)
        done = all(
            (o.get("status") or {}).get("readyReplicas") == o["spec"]["replicas"]
            and _condition(o, "PodCliqueScheduled") == "True"
            for o in objs
        )
        return objs if done else None

    for pclq in await wait_for(pclqs_ready, "all PodCliques ready"):
        status = pclq["status"]
        assert status["scheduledReplicas"] == status["replicas"] == pclq["spec"]["replicas"]
        assert status["scheduleGatedReplicas"] == 0
        assert _condition(pclq, "MinAvailableBreached") == "False"
        assert "hpaPodSelector" not in status, "PCSG members publish no HPA selector"


async def test_standalone_status_counts_gated_then_scheduled(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """A standalone PodClique reports its selector, then scheduled and ready counts as its pods are bound."""
    await create_pcs(kube, namespace, load_sample("user-guide/01_core-concepts/single-node-disaggregated.yaml"))

    async def all_ungated() -> bool:
        pods = await live_pods(kube, namespace)
        return len(pods) == 5 and not any(_gated(p) for p in pods)

    await wait_for(all_ungated, "pods ungated")
    pclq = await kube.get(PODCLIQUES, "single-node-disaggregated-0-prefill", namespace)
    assert pclq["status"]["scheduledReplicas"] == 0
    assert pclq["status"]["hpaPodSelector"].endswith("grove.io/podclique=single-node-disaggregated-0-prefill")
    assert await bind_all(kube, namespace, await _node_names(kube)) == 5

    async def scheduled() -> Obj | None:
        obj = await kube.get(PODCLIQUES, "single-node-disaggregated-0-prefill", namespace)
        status = obj.get("status") or {}
        return obj if status.get("scheduledReplicas") == 3 and status.get("readyReplicas") == 3 else None

    pclq = await wait_for(scheduled, "prefill scheduled and ready")
    assert _condition(pclq, "PodCliqueScheduled") == "True"
