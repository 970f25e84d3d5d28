"""Patch types (merge, strategic, JSON patch, 415 on custom resources) and pod binding."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


async def test_strategic_merge_conditions_by_type(api_client: client.ApiClient, namespace: str) -> None:
    """A dict status patch on a pod (sent as SMP) merges conditions by type instead of replacing the list."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, _pod("smp", schedulerName="nobody"))
    await core.patch_namespaced_pod_status(
        "smp", namespace, {"status": {"conditions": [{"type": "A", "status": "True"}]}}
    )
    pod = await core.patch_namespaced_pod_status(
        "smp", namespace, {"status": {"conditions": [{"type": "B", "status": "False"}]}}
    )
    assert sorted((c.type, c.status) for c in pod.status.conditions) == [("A", "True"), ("B", "False")]


async def test_json_patch_and_smp_rejected_on_custom_resources(
    api_client: client.ApiClient, namespace: str, widget_crd: dict[str, Any]
) -> None:
    """CustomObjectsApi list bodies are JSON patches; a strategic merge patch on a CR is 415 with the real message."""
    co = client.CustomObjectsApi(api_client)
    args = ("example.dev", "v1", namespace, "widgets")
    await co.create_namespaced_custom_object(
        *args, {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "j"}, "spec": {}}
    )
    patched = await co.patch_namespaced_custom_object(
        *args, "j", [{"op": "add", "path": "/spec/color", "value": "red"}]
    )
    assert patched["spec"]["color"] == "red"
    with pytest.raises(ApiException) as exc:
        await co.patch_namespaced_custom_object(
            *args, "j", {"spec": {"color": "blue"}}, _content_type="application/strategic-merge-patch+json"
        )
    assert exc.value.status == 415
    assert json.loads(exc.value.body)["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    with pytest.raises(ApiException) as exc:
        await co.patch_namespaced_custom_object(*args, "j", [{"op": "test", "path": "/spec/color", "value": "blue"}])
    assert exc.value.status == 422


async def test_merge_patch_with_stale_resource_version_conflicts(api_client: client.ApiClient, namespace: str) -> None:
    """A patch carrying an old metadata.resourceVersion is a 409 Conflict."""
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_config_map(namespace, {"metadata": {"name": "rv"}})
    await core.patch_namespaced_config_map("rv", namespace, {"data": {"a": "b"}})
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_config_map(
            "rv", namespace, {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"a": "c"}}
        )
    assert exc.value.status == 409


async def test_binding(api_client: client.ApiClient, namespace: str) -> None:
    """Binding sets nodeName and PodScheduled; a second bind is 409; a gated pod is refused; nodeName is immutable."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, _pod("b"))
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b", "annotations": {"x": "y"}},
        "target": {"kind": "Node", "name": "node-1"},
    }
    resp = await core.create_namespaced_pod_binding("b", namespace, body, _preload_content=False)
    assert resp.status == 201
    assert (await resp.json())["status"] == "Success"
    pod = await core.read_namespaced_pod("b", namespace)
    assert pod.spec.node_name == "node-1"
    assert pod.metadata.annotations == {"x": "y"}
    assert any(c.type == "PodScheduled" and c.status == "True" for c in pod.status.conditions)
    again = await core.create_namespaced_pod_binding("b", namespace, body, _preload_content=False)
    assert again.status == 409
    assert "already assigned" in (await again.json())["message"]
    await core.create_namespaced_pod(namespace, _pod("g", schedulingGates=[{"name": "wait"}]))
    gated = await core.read_namespaced_pod("g", namespace)
    assert gated.status.conditions[0].reason == "SchedulingGated"
    refused = await core.create_namespaced_pod_binding(
        "g", namespace, {**body, "metadata": {"name": "g"}}, _preload_content=False
    )
    assert refused.status == 409
    assert "schedulingGates" in (await refused.json())["message"]
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_pod("g", namespace, {"spec": {"nodeName": "node-2"}})
    assert exc.value.status == 422
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_pod(
            "g", namespace, {"spec": {"schedulingGates": [{"name": "wait"}, {"name": "more"}]}}
        )
    assert exc.value.status == 422
    ungated = await core.patch_namespaced_pod("g", namespace, [{"op": "remove", "path": "/spec/schedulingGates"}])
    assert not ungated.spec.scheduling_gates
    resp = await core.create_namespaced_binding(namespace, {**body, "metadata": {"name": "g"}}, _preload_content=False)
    assert resp.status == 201


async def test_server_side_apply_upserts(api_client: client.ApiClient, namespace: str) -> None:
    """An apply patch creates a missing object and merges into an existing one."""
    core = client.CoreV1Api(api_client)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1"}}
    created = await core.patch_namespaced_config_map(
        "ssa", namespace, body, _content_type="application/apply-patch+yaml", field_manager="t"
    )
    assert created.data == {"a": "1"}
    updated = await core.patch_namespaced_config_map(
        "ssa", namespace, {**body, "data": {"a": "2"}}, _content_type="application/apply-patch+yaml", field_manager="t"
    )
    assert updated.data == {"a": "2"}
