"""The HPA controller and the metrics API: an HPA on a tiny custom resource with a scale subresource scales it up
and down as the pods' annotated CPU usage crosses the target; ``kubectl top`` and ``kubectl get hpa`` show it."""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from grove_sim.server import SimServer
from grove_sim.testing import SimCluster

Poll = Callable[..., Awaitable[Any]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
GROUP, PLURAL = "sim.example", "pools"

POOL_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "pool", "kind": "Pool"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


@pytest.fixture(scope="module")
def pool_crd(sim: SimCluster) -> None:
    def install(server: SimServer) -> None:
        info = server.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert info is not None
        if server.store.get(info.key, "", POOL_CRD["metadata"]["name"]) is None:
            server.core.create(info, "", POOL_CRD)

    sim.call(install)


@pytest.fixture
def fake_clock(sim: SimCluster) -> Iterator[list[float]]:
    """The autoscaler's clock, moved only by the test."""
    now = [1_000_000.0]
    sim.call(lambda s: setattr(s.autoscaler, "clock", lambda: now[0]))
    yield now
    sim.call(lambda s: setattr(s.autoscaler, "clock", __import__("time").monotonic))


async def _pool(api: client.ApiClient, namespace: str, name: str, replicas: int, cpu_usage: str) -> None:
    """A Pool with ``replicas`` running pods of one CPU each, using ``cpu_usage`` each."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Pool", "metadata": {"name": name}, "spec": {"replicas": replicas}}
    created = await custom.create_namespaced_custom_object(GROUP, "v1", namespace, PLURAL, body)
    created["status"] = {"replicas": replicas, "selector": f"pool={name}"}
    await custom.replace_namespaced_custom_object_status(GROUP, "v1", namespace, PLURAL, name, created)
    for index in range(replicas):
        pod = {
            "metadata": {
                "name": f"{name}-{index}",
                "labels": {"pool": name},
                "annotations": {"sim.grove.io/cpu-usage": cpu_usage},
            },
            "spec": {"containers": [{"name": "main", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
        }
        await core.create_namespaced_pod(namespace, pod)


async def _set_usage(api: client.ApiClient, namespace: str, name: str, cpu_usage: str) -> None:
    core = client.CoreV1Api(api)
    for pod in (await core.list_namespaced_pod(namespace, label_selector=f"pool={name}")).items:
        patch = {"metadata": {"annotations": {"sim.grove.io/cpu-usage": cpu_usage}}}
        await core.patch_namespaced_pod(pod.metadata.name, namespace, patch)


def _hpa(name: str, maximum: int, down_window: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": f"{GROUP}/v1", "kind": "Pool", "name": name},
        "minReplicas": 1,
        "maxReplicas": maximum,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            }
        ],
    }
    if down_window is not None:
        spec["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": down_window}}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name}, "spec": spec}


async def _replicas_become(api: client.ApiClient, namespace: str, name: str, want: int, poll: Poll) -> None:
    custom = client.CustomObjectsApi(api)

    async def reached() -> bool:
        pool = await custom.get_namespaced_custom_object(GROUP, "v1", namespace, PLURAL, name)
        return bool(pool["spec"]["replicas"] == want)

    await poll(reached)


async def _conditions(api: client.ApiClient, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    hpa = await client.AutoscalingV2Api(api).read_namespaced_horizontal_pod_autoscaler(name, namespace)
    return {c.type: (c.status, c.reason) for c in hpa.status.conditions or []}


async def _running(api: client.ApiClient, namespace: str, name: str, count: int, poll: Poll) -> None:
    core = client.CoreV1Api(api)

    async def all_running() -> bool:
        pods = (await core.list_namespaced_pod(namespace, label_selector=f"pool={name}")).items
        return len(pods) == count and all(p.status.phase == "Running" for p in pods)

    await poll(all_running)


async def test_hpa_scales_a_custom_resource_up_and_down(
    api_client: client.ApiClient, namespace: str, poll: Poll, pool_crd: None, kubectl: Kubectl
) -> None:
    """90% of a 50% target on two pods asks for four; 10% then asks for one (no down window); the target's
    /scale is what changes, and kubectl shows current/target."""
    await _pool(api_client, namespace, "web", 2, "900m")
    await _running(api_client, namespace, "web", 2, poll)
    await client.AutoscalingV2Api(api_client).create_namespaced_horizontal_pod_autoscaler(namespace, _hpa("web", 10, 0))
    await _replicas_become(api_client, namespace, "web", 4, poll)
    row = kubectl("get", "hpa", "web", "-n", namespace).stdout.splitlines()[1].split()
    assert row[:5] == ["web", "Pool/web", "cpu:", "90%/50%", "1"]
    await _set_usage(api_client, namespace, "web", "100m")
    await _replicas_become(api_client, namespace, "web", 1, poll)
    hpa = await client.AutoscalingV2Api(api_client).read_namespaced_horizontal_pod_autoscaler("web", namespace)
    assert hpa.status.current_metrics[0].resource.current.average_utilization == 10
    assert hpa.status.current_metrics[0].resource.current.average_value == "100m"
    assert (await _conditions(api_client, namespace, "web"))["ScalingActive"] == ("True", "ValidMetricFound")
    events = kubectl("get", "events", "-n", namespace, "--field-selector", "reason=SuccessfulRescale").stdout
    assert "New size: 4; reason: cpu resource utilization (percentage of request) above target" in events
    assert "New size: 1; reason: All metrics below target" in events


async def test_down_window_and_max_replicas(
    api_client: client.ApiClient, namespace: str, poll: Poll, pool_crd: None, fake_clock: list[float]
) -> None:
    """Scale-up stops at maxReplicas (ScalingLimited TooManyReplicas); a drop in usage waits out the five-minute
    stabilisation window (ScaleDownStabilized) on the controller's clock, then scales down."""
    await _pool(api_client, namespace, "db", 2, "1")
    await _running(api_client, namespace, "db", 2, poll)
    await client.AutoscalingV2Api(api_client).create_namespaced_horizontal_pod_autoscaler(
        namespace, _hpa("db", 3, None)
    )
    await _replicas_become(api_client, namespace, "db", 3, poll)

    async def limited() -> bool:
        return (await _conditions(api_client, namespace, "db")).get("ScalingLimited") == ("True", "TooManyReplicas")

    await poll(limited)
    await _set_usage(api_client, namespace, "db", "10m")
    fake_clock[0] += 60

    async def stabilised() -> bool:
        return (await _conditions(api_client, namespace, "db")).get("AbleToScale") == ("True", "ScaleDownStabilized")

    await poll(stabilised)
    pool = await client.CustomObjectsApi(api_client).get_namespaced_custom_object(GROUP, "v1", namespace, PLURAL, "db")
    assert pool["spec"]["replicas"] == 3
    fake_clock[0] += 301
    await _replicas_become(api_client, namespace, "db", 1, poll)


def test_kubectl_top(kubectl: Kubectl) -> None:
    """kubectl top pods/nodes read metrics.k8s.io: annotated usage, zero for a pod without annotations."""
    ns = "top-pods"
    kubectl("create", "namespace", ns)
    pods = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy", "namespace": ns, "annotations": {
            "sim.grove.io/cpu-usage": "800m", "sim.grove.io/memory-usage": "1Gi"}},
         "spec": {"containers": [{"name": "c", "image": "i"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "idle", "namespace": ns},
         "spec": {"containers": [{"name": "c", "image": "i"}]}},
    ]  # fmt: skip
    import json
    import time

    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    for _ in range(300):
        phases = kubectl("get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.phase}").stdout.split()
        if phases == ["Running", "Running"]:
            break
        time.sleep(0.02)
    lines = [line.split() for line in kubectl("top", "pods", "-n", ns).stdout.splitlines()]
    assert lines == [["NAME", "CPU(cores)", "MEMORY(bytes)"], ["busy", "800m", "1024Mi"], ["idle", "0m", "0Mi"]]
    nodes = kubectl("top", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert len(nodes) > 1


async def test_pods_metric_average_value(
    api_client: client.ApiClient, namespace: str, poll: Poll, pool_crd: None
) -> None:
    """A Pods metric named ``queue`` reads ``sim.grove.io/queue-usage``: an average of 30 against a target of 10 per
    pod triples the Pool, and status reports the current average."""
    await _pool(api_client, namespace, "q", 2, "0")
    await _running(api_client, namespace, "q", 2, poll)
    core = client.CoreV1Api(api_client)
    for index in range(2):
        patch = {"metadata": {"annotations": {"sim.grove.io/queue-usage": "30"}}}
        await core.patch_namespaced_pod(f"q-{index}", namespace, patch)
    hpa = _hpa("q", 10, 0)
    hpa["spec"]["metrics"] = [
        {
            "type": "Pods",
            "pods": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}},
        }
    ]
    await client.AutoscalingV2Api(api_client).create_namespaced_horizontal_pod_autoscaler(namespace, hpa)
    await _replicas_become(api_client, namespace, "q", 6, poll)
    status = (
        await client.AutoscalingV2Api(api_client).read_namespaced_horizontal_pod_autoscaler("q", namespace)
    ).status
    assert status.current_metrics[0].pods.current.average_value == "30"
