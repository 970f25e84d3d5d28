"""Scaling at three levels through the scale subresource (and kubectl scale), including to zero and back (§3.9)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS, PODGANGS
from grove_runtime.client import KubeClient
from grove_runtime.resources import HPAS, PODS, SERVICES

from ._harness import OperatorThread, create_pcs, items, live_pods, load_sample, names, wait_for

Obj = dict[str, Any]
AGG = "user-guide/01_core-concepts/single-node-aggregated.yaml"
MULTI = "user-guide/01_core-concepts/multi-node-aggregated.yaml"


def _indices(pods: list[Obj], pclq: str) -> list[int]:
    return sorted(
        int(p["metadata"]["labels"][glabels.LABEL_PODCLIQUE_POD_INDEX])
        for p in pods
        if p["metadata"]["labels"].get(glabels.LABEL_PODCLIQUE) == pclq
    )


async def _converged(kube: KubeClient, namespace: str, pclqs: list[str], gangs: list[str], pods: int) -> bool:
    """PodCliques and gangs are exactly as listed and there are exactly `pods` live pods."""
    return (
        await names(kube, PODCLIQUES, namespace) == sorted(pclqs)
        and await names(kube, PODGANGS, namespace) == sorted(gangs)
        and len(await live_pods(kube, namespace)) == pods
    )


async def test_scale_podcliqueset_with_kubectl_to_three_zero_and_back(
    operator: OperatorThread, kube: KubeClient, namespace: str, kubectl: Callable[..., Any]
) -> None:
    """`kubectl scale pcs` adds and removes whole replicas; at zero nothing but the services remain."""
    await create_pcs(kube, namespace, load_sample(AGG))
    base = "single-node-aggregated"
    await wait_for(lambda: _converged(kube, namespace, [f"{base}-0-model-worker"], [f"{base}-0"], 2), "1 replica")

    kubectl("scale", "pcs", base, "--replicas=3", "-n", namespace)
    three = [f"{base}-{i}-model-worker" for i in range(3)]
    await wait_for(lambda: _converged(kube, namespace, three, [f"{base}-{i}" for i in range(3)], 6), "3 replicas")
    pods = await live_pods(kube, namespace)
    assert {p["spec"]["subdomain"] for p in pods} == {f"{base}-{i}" for i in range(3)}

    kubectl("scale", "pcs", base, "--replicas=0", "-n", namespace)
    await wait_for(lambda: _converged(kube, namespace, [], [], 0), "0 replicas")
    pcs = await kube.get(PODCLIQUESETS, base, namespace)
    assert pcs["spec"]["replicas"] == 0

    kubectl("scale", "pcs", base, "--replicas=1", "-n", namespace)
    await wait_for(lambda: _converged(kube, namespace, [f"{base}-0-model-worker"], [f"{base}-0"], 2), "back to 1")
    assert _indices(await live_pods(kube, namespace), f"{base}-0-model-worker") == [0, 1]


async def test_scale_podclique_fills_lowest_indices_and_survives_template_edits(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """Scaling a PodClique adds/removes pods (lowest free index first, deleted pods recreated); template edits of
    `replicas` leave the live value alone."""
    await create_pcs(kube, namespace, load_sample(AGG))
    pclq = "single-node-aggregated-0-model-worker"
    gang = ["single-node-aggregated-0"]
    await wait_for(lambda: _converged(kube, namespace, [pclq], gang, 2), "2 pods")

    await kube.scale(PODCLIQUES, pclq, namespace, 4)
    await wait_for(lambda: _converged(kube, namespace, [pclq], gang, 4), "4 pods")
    pods = await live_pods(kube, namespace)
    assert _indices(pods, pclq) == [0, 1, 2, 3]

    victim = next(p for p in pods if p["metadata"]["labels"][glabels.LABEL_PODCLIQUE_POD_INDEX] == "1")
    await kube.delete(PODS, victim["metadata"]["name"], namespace)

    async def refilled() -> list[Obj] | None:
        now = await live_pods(kube, namespace)
        names_now = {p["metadata"]["name"] for p in now}
        return now if len(now) == 4 and victim["metadata"]["name"] not in names_now else None

    pods = await wait_for(refilled, "deleted pod recreated")
    assert _indices(pods, pclq) == [0, 1, 2, 3]

    async def referenced() -> bool:
        pg = await kube.get(PODGANGS, gang[0], namespace)
        group = pg["spec"]["podgroups"][0]
        return len(group["podReferences"]) == 4 and group["minReplicas"] == 2

    await wait_for(referenced, "gang references the 4 pods, minReplicas unchanged")

    await kube.patch(
        PODCLIQUESETS,
        "single-node-aggregated",
        {"spec": {"template": {"cliques": [{**load_sample(AGG)["spec"]["template"]["cliques"][0], "spec": {
            **load_sample(AGG)["spec"]["template"]["cliques"][0]["spec"], "replicas": 1}}]}}},
        namespace,
    )  # fmt: skip

    async def observed() -> bool:
        pcs = await kube.get(PODCLIQUESETS, "single-node-aggregated", namespace)
        return (pcs.get("status") or {}).get("observedGeneration") == pcs["metadata"]["generation"]

    await wait_for(observed, "template edit observed")
    assert (await kube.get(PODCLIQUES, pclq, namespace))["spec"]["replicas"] == 4

    await kube.scale(PODCLIQUES, pclq, namespace, 0)
    await wait_for(lambda: _converged(kube, namespace, [pclq], gang, 0), "0 pods")
    await kube.scale(PODCLIQUES, pclq, namespace, 2)
    await wait_for(lambda: _converged(kube, namespace, [pclq], gang, 2), "2 pods again")
    assert _indices(await live_pods(kube, namespace), pclq) == [0, 1]


async def test_scale_scaling_group_adds_scaled_gangs_and_removes_highest_replicas(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """Scaling a PCSG adds replicas with scaled gangs, removes the highest indices first, and goes to zero and back."""
    await create_pcs(kube, namespace, load_sample(MULTI))
    pcsg = "multinode-aggregated-0-model-instance"

    def members(count: int) -> list[str]:
        return [f"{pcsg}-{j}-{c}" for j in range(count) for c in ("leader", "worker")]

    def gangs(count: int) -> list[str]:
        return ["multinode-aggregated-0"] + [f"{pcsg}-{k}" for k in range(count - 1)]

    await wait_for(lambda: _converged(kube, namespace, members(2), gangs(2), 8), "2 PCSG replicas")

    await kube.scale(PODCLIQUESCALINGGROUPS, pcsg, namespace, 3)
    await wait_for(lambda: _converged(kube, namespace, members(3), gangs(3), 12), "3 PCSG replicas")
    scaled = await kube.get(PODGANGS, f"{pcsg}-1", namespace)
    assert [g["name"] for g in scaled["spec"]["podgroups"]] == [f"{pcsg}-2-leader", f"{pcsg}-2-worker"]
    member = await kube.get(PODCLIQUES, f"{pcsg}-2-worker", namespace)
    assert member["metadata"]["labels"][glabels.LABEL_BASE_PODGANG] == "multinode-aggregated-0"
    assert member["metadata"]["labels"][glabels.LABEL_PODGANG] == f"{pcsg}-1"

    await kube.scale(PODCLIQUESCALINGGROUPS, pcsg, namespace, 1)
    await wait_for(lambda: _converged(kube, namespace, members(1), gangs(1), 4), "1 PCSG replica")

    await kube.scale(PODCLIQUESCALINGGROUPS, pcsg, namespace, 0)
    await wait_for(lambda: _converged(kube, namespace, [], ["multinode-aggregated-0"], 0), "0 PCSG replicas")
    base = await kube.get(PODGANGS, "multinode-aggregated-0", namespace)
    assert base["spec"]["podgroups"] == []

    await kube.scale(PODCLIQUESCALINGGROUPS, pcsg, namespace, 2)
    await wait_for(lambda: _converged(kube, namespace, members(2), gangs(2), 8), "back to 2")
    status = (await kube.get(PODCLIQUESCALINGGROUPS, pcsg, namespace))["status"]
    assert status["replicas"] == 2


async def test_hpas_follow_pcs_replicas(operator: OperatorThread, kube: KubeClient, namespace: str) -> None:
    """HPAs exist per replica for autoscaled cliques and groups, target them by name, and go away on scale-in."""
    await create_pcs(kube, namespace, load_sample("simple/simple1.yaml"))
    await wait_for(lambda: _hpa_names(kube, namespace, ["simple1-0-pca", "simple1-0-sga"]), "HPAs of replica 0")
    hpa = await kube.get(HPAS, "simple1-0-sga", namespace)
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "name": "simple1-0-sga",
    }
    assert hpa["spec"]["maxReplicas"] == 6
    assert hpa["spec"]["minReplicas"] == 1
    pca = await kube.get(HPAS, "simple1-0-pca", namespace)
    assert (pca["spec"]["minReplicas"], pca["spec"]["maxReplicas"]) == (3, 5)
    await kube.scale(PODCLIQUESETS, "simple1", namespace, 2)
    want = ["simple1-0-pca", "simple1-0-sga", "simple1-1-pca", "simple1-1-sga"]
    await wait_for(lambda: _hpa_names(kube, namespace, want), "HPAs of two replicas")
    await kube.scale(PODCLIQUESETS, "simple1", namespace, 1)
    await wait_for(lambda: _hpa_names(kube, namespace, want[:2]), "HPAs of replica 1 removed")


async def _hpa_names(kube: KubeClient, namespace: str, want: list[str]) -> bool:
    return await names(kube, HPAS, namespace) == sorted(want)


async def test_headless_services_of_removed_replicas_are_deleted(
    operator: OperatorThread, kube: KubeClient, namespace: str, kubectl: Callable[..., Any]
) -> None:
    """`kubectl scale pcs` 3 → 1 leaves exactly one headless Service, and back up to 2 recreates the second
    (issue #13, 4: the Services of removed replicas used to stay forever)."""
    await create_pcs(kube, namespace, load_sample("simple/simple1.yaml"))

    async def services(want: list[str]) -> bool:
        return await names(kube, SERVICES, namespace) == want

    await wait_for(lambda: services(["simple1-0"]), "the Service of replica 0")
    kubectl("scale", "pcs", "simple1", "--replicas=3", "-n", namespace)
    await wait_for(lambda: services(["simple1-0", "simple1-1", "simple1-2"]), "the Services of three replicas")
    kubectl("scale", "pcs", "simple1", "--replicas=1", "-n", namespace)
    await wait_for(lambda: services(["simple1-0"]), "the Services of replicas 1 and 2 deleted")
    kubectl("scale", "pcs", "simple1", "--replicas=2", "-n", namespace)
    await wait_for(lambda: services(["simple1-0", "simple1-1"]), "the Service of replica 1 recreated")


async def test_gang_references_follow_a_replaced_scaling_group_pod(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """A scaled gang's pod deleted and recreated (its PodClique's status counts as they were) is referenced by its
    PodGang again: the PodCliqueSet follows its pods, not only its members' conditions (the chaos suite's finding:
    a gang left referencing a deleted pod keeps the replacement gated for good)."""
    await create_pcs(kube, namespace, load_sample(MULTI))
    pcsg = "multinode-aggregated-0-model-instance"
    gang, clique = f"{pcsg}-0", f"{pcsg}-1-worker"

    async def references() -> list[str] | None:
        pods = sorted(p["metadata"]["name"] for p in await live_pods(kube, namespace)
                      if p["metadata"]["labels"].get(glabels.LABEL_PODCLIQUE) == clique)  # fmt: skip
        found = await items(kube, PODGANGS, namespace)
        groups = [g for o in found if o["metadata"]["name"] == gang for g in o["spec"].get("podgroups") or []]
        refs = sorted(r["name"] for g in groups if g["name"] == clique for r in g.get("podReferences") or [])
        return refs if pods and refs == pods else None

    first = await wait_for(references, "the scaled gang referencing its pods")
    await kube.delete(PODS, first[0], namespace)
    replaced = await wait_for(references, "the scaled gang referencing the replacement pod")
    assert first[0] not in replaced
