"""PodDisruptionBudgets and the eviction subresource through kubernetes-asyncio, as kube-apiserver answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

Poll = Callable[..., Awaitable[Any]]


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }


async def _budget(policy: client.PolicyV1Api, namespace: str, name: str, poll: Poll, **want: int) -> Any:
    async def current() -> Any:
        pdb = await policy.read_namespaced_pod_disruption_budget(name, namespace)
        status = pdb.status
        if status is None or status.observed_generation != pdb.metadata.generation:
            return None
        seen = {key: getattr(status, key) for key in want}
        return pdb if seen == want else None

    return await poll(current)


async def _evict(core: client.CoreV1Api, namespace: str, name: str) -> None:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
    await core.create_namespaced_pod_eviction(name, namespace, body)


async def test_eviction_honours_the_budget(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """minAvailable 2 of 3 running pods allows one eviction; then a second is a 429 naming the budget, and the pod
    stays."""
    core, policy = client.CoreV1Api(api_client), client.PolicyV1Api(api_client)
    for index in range(3):
        pod = {
            "metadata": {"name": f"p{index}", "labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        await core.create_namespaced_pod(namespace, pod)
    pdb = {"metadata": {"name": "db"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}
    await policy.create_namespaced_pod_disruption_budget(namespace, pdb)
    await _budget(
        policy, namespace, "db", poll, current_healthy=3, desired_healthy=2, expected_pods=3, disruptions_allowed=1
    )
    await _evict(core, namespace, "p0")
    await _budget(policy, namespace, "db", poll, current_healthy=2, disruptions_allowed=0)
    with pytest.raises(ApiException) as refused:
        await _evict(core, namespace, "p1")
    assert refused.value.status == 429
    status = json.loads(refused.value.body)
    assert status["reason"] == "TooManyRequests"
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget db needs 2 healthy pods and has 2 currently"}
    ]
    assert (await core.read_namespaced_pod("p1", namespace)).metadata.deletion_timestamp is None


async def test_expected_pods_come_from_the_controllers_scale(
    api_client: client.ApiClient, namespace: str, poll: Poll
) -> None:
    """A percentage budget counts the Deployment's desired replicas, through its ReplicaSet, as expected pods."""
    apps, policy = client.AppsV1Api(api_client), client.PolicyV1Api(api_client)
    await apps.create_namespaced_deployment(namespace, _deployment("web", 4))
    pdb = {"metadata": {"name": "web"}, "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}
    await policy.create_namespaced_pod_disruption_budget(namespace, pdb)
    await _budget(
        policy, namespace, "web", poll, expected_pods=4, desired_healthy=2, current_healthy=4, disruptions_allowed=2
    )
    await apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 6}})
    await _budget(
        policy, namespace, "web", poll, expected_pods=6, desired_healthy=3, current_healthy=6, disruptions_allowed=3
    )


async def test_eviction_without_budget_and_of_pending_pods(api_client: client.ApiClient, namespace: str) -> None:
    """Without a budget the pod is deleted; a pending pod goes even when its budget allows nothing."""
    core, policy = client.CoreV1Api(api_client), client.PolicyV1Api(api_client)
    pod = {
        "metadata": {"name": "lone", "labels": {"app": "x"}},
        "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "i"}]},
    }
    await core.create_namespaced_pod(namespace, pod)
    pdb = {"metadata": {"name": "strict"}, "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "x"}}}}
    await policy.create_namespaced_pod_disruption_budget(namespace, pdb)
    await _evict(core, namespace, "lone")
    with pytest.raises(ApiException) as gone:
        await core.read_namespaced_pod("lone", namespace)
    assert gone.value.status == 404


async def test_budget_validation(api_client: client.ApiClient, namespace: str) -> None:
    """minAvailable and maxUnavailable together, or a percentage over 100, are 422s naming the field."""
    policy = client.PolicyV1Api(api_client)
    both = {"metadata": {"name": "both"}, "spec": {"minAvailable": 1, "maxUnavailable": "150%", "selector": {}}}
    with pytest.raises(ApiException) as refused:
        await policy.create_namespaced_pod_disruption_budget(namespace, both)
    assert refused.value.status == 422
    message = json.loads(refused.value.body)["message"]
    assert "minAvailable and maxUnavailable cannot be both set" in message
    assert 'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%' in message


@pytest.mark.kubectl
def test_kubectl_create_pdb_and_get(kubectl: Callable[..., Any]) -> None:
    """``kubectl create pdb`` (a protobuf body) is decoded, and ``kubectl get pdb`` shows kubectl's columns."""
    kubectl("create", "namespace", "pdb-cli")
    kubectl("create", "pdb", "p", "-n", "pdb-cli", "--selector=app=x", "--min-available=50%")
    pdb = json.loads(kubectl("get", "pdb", "p", "-n", "pdb-cli", "-o", "json").stdout)
    assert pdb["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "x"}}}
    lines = [line.split() for line in kubectl("get", "pdb", "-n", "pdb-cli").stdout.splitlines()]
    assert lines[0] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert lines[1][:4] == ["p", "50%", "N/A", "0"]
