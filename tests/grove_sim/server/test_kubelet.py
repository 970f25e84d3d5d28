"""Simulated kubelets: Running/Ready, resource admission, graceful deletion, tokens (init containers: elsewhere)."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from grove_sim.cluster import nodes_from_flags
from grove_sim.testing import SimCluster

Poll = Callable[..., Awaitable[Any]]


def _pod(name: str, gpus: int = 0, **spec: Any) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "app", "resources": resources}], **spec},
    }


async def _bind(core: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    body = {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}}
    resp = await core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
    assert resp.status == 201
    resp.release()


async def test_bound_pod_runs_and_overcommit_fails(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """A bound pod becomes Running and Ready; a pod exceeding the node's GPUs fails with OutOfnvidia.com/gpu."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, _pod("big", gpus=8))
    await _bind(core, namespace, "big", "node-3")

    async def running() -> Any:
        pod = await core.read_namespaced_pod("big", namespace)
        return pod if pod.status.phase == "Running" else None

    pod = await poll(running)
    assert pod.status.pod_ip
    assert pod.status.host_ip
    assert pod.status.start_time
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"
    assert pod.status.container_statuses[0].state.running is not None
    await core.create_namespaced_pod(namespace, _pod("extra", gpus=1))
    await _bind(core, namespace, "extra", "node-3")

    async def failed() -> Any:
        pod = await core.read_namespaced_pod("extra", namespace)
        return pod if pod.status.phase == "Failed" else None

    rejected = await poll(failed)
    assert rejected.status.reason == "OutOfnvidia.com/gpu"
    assert "requested: 1, used: 8, capacity: 8" in rejected.status.message


async def test_graceful_delete_and_unbound_delete(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """A bound pod is Terminating until the kubelet removes it; an unbound pod goes at once."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, _pod("loose"))
    await core.delete_namespaced_pod("loose", namespace)
    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_pod("loose", namespace)
    assert exc.value.status == 404
    await core.create_namespaced_pod(namespace, _pod("bound"))
    await _bind(core, namespace, "bound", "node-0")
    deleted = await core.delete_namespaced_pod("bound", namespace)
    assert deleted.metadata.deletion_timestamp is not None
    assert deleted.metadata.deletion_grace_period_seconds == 30

    async def gone() -> bool:
        try:
            await core.read_namespaced_pod("bound", namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    assert await poll(gone)


async def test_pod_on_missing_node_stays_pending(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """A pod bound to a node that does not exist stays Pending, and starts once the node is created."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, _pod("orphan"))
    await _bind(core, namespace, "orphan", "late-node")
    assert (await core.read_namespaced_pod("orphan", namespace)).status.phase == "Pending"
    node = await core.create_node({"metadata": {"name": "late-node"}})
    assert node.metadata.name == "late-node"

    async def running() -> bool:
        return (await core.read_namespaced_pod("orphan", namespace)).status.phase == "Running"

    assert await poll(running)
    ready_node = await core.read_node("late-node")
    assert any(c.type == "Ready" and c.status == "True" for c in ready_node.status.conditions)


async def test_token_secret_is_filled(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """A service-account-token Secret gets base64 token, ca.crt and namespace."""
    core = client.CoreV1Api(api_client)
    body = {
        "metadata": {"name": "tok", "annotations": {"kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token",
    }
    await core.create_namespaced_secret(namespace, body)

    async def filled() -> Any:
        secret = await core.read_namespaced_secret("tok", namespace)
        return secret if secret.data and "token" in secret.data else None

    secret = await poll(filled)
    assert base64.b64decode(secret.data["namespace"]).decode() == namespace
    assert base64.b64decode(secret.data["ca.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")


async def test_ready_after_delay(poll: Poll) -> None:
    """With a ready delay, a bound pod is first Running but not Ready, then becomes Ready."""
    with SimCluster(nodes=nodes_from_flags(1, 8), ready_delay=1.0) as cluster:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=cluster.kubeconfig, client_configuration=configuration)
        async with client.ApiClient(configuration=configuration) as api:
            core = client.CoreV1Api(api)
            await core.create_namespaced_pod("default", _pod("slow"))
            await _bind(core, "default", "slow", "node-0")

            async def running() -> Any:
                pod = await core.read_namespaced_pod("slow", "default")
                return pod if pod.status.phase == "Running" else None

            first = await poll(running)
            assert {c.type: c.status for c in first.status.conditions}["Ready"] == "False"

            async def ready() -> bool:
                pod = await core.read_namespaced_pod("slow", "default")
                return {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"

            assert await poll(ready, attempts=400)
