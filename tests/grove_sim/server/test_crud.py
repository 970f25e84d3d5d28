"""CRUD, conflicts, generateName, generation rules and validation through kubernetes-asyncio."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_configmap_crud_and_conflicts(api_client: client.ApiClient, namespace: str) -> None:
    """Create/get/replace/delete a ConfigMap; a duplicate create is AlreadyExists and a stale PUT is Conflict."""
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert created.metadata.uid
    assert created.metadata.resource_version
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    assert exc.value.status == 409
    assert "AlreadyExists" in exc.value.body
    created.data = {"a": "2"}
    updated = await core.replace_namespaced_config_map("cm", namespace, created)
    assert updated.data == {"a": "2"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    with pytest.raises(ApiException) as exc:
        await core.replace_namespaced_config_map("cm", namespace, created)
    assert exc.value.status == 409
    assert "the object has been modified" in exc.value.body
    await core.delete_namespaced_config_map("cm", namespace)
    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_config_map("cm", namespace)
    assert exc.value.status == 404
    assert 'configmaps \\"cm\\" not found' in exc.value.body


async def test_noop_update_keeps_resource_version(api_client: client.ApiClient, namespace: str) -> None:
    """Writing an identical object neither bumps resourceVersion nor changes anything."""
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_config_map(namespace, {"metadata": {"name": "same"}, "data": {"a": "1"}})
    again = await core.patch_namespaced_config_map("same", namespace, {"data": {"a": "1"}})
    assert again.metadata.resource_version == created.metadata.resource_version


async def test_generate_name(api_client: client.ApiClient, namespace: str) -> None:
    """generateName gets a 5-character random suffix."""
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    assert created.metadata.name.startswith("gen-")
    assert len(created.metadata.name) == 9


async def test_namespace_checks_and_name_rules(api_client: client.ApiClient) -> None:
    """Creating in a missing namespace is 404; a bad name and a pod without containers are 422 Invalid."""
    core = client.CoreV1Api(api_client)
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map("nope", {"metadata": {"name": "x"}})
    assert exc.value.status == 404
    assert 'namespaces \\"nope\\" not found' in exc.value.body
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map("default", {"metadata": {"name": "Bad_Name"}})
    assert exc.value.status == 422
    assert "RFC 1123" in exc.value.body
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", {"metadata": {"name": "empty"}, "spec": {"containers": []}})
    assert exc.value.status == 422
    assert "spec.containers: Required value" in exc.value.body


async def test_custom_resource_generation_and_status(
    api_client: client.ApiClient, namespace: str, widget_crd: dict[str, Any]
) -> None:
    """Spec changes bump generation; metadata and /status writes do not; status on create is dropped; defaults apply."""
    co = client.CustomObjectsApi(api_client)
    args = ("example.dev", "v1", namespace, "widgets")
    body = {
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {},
        "status": {"replicas": 9},
    }
    created = await co.create_namespaced_custom_object(*args, body)
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["replicas"] == 1
    assert "status" not in created
    labelled = await co.patch_namespaced_custom_object(
        *args, "w", {"metadata": {"labels": {"a": "b"}}}, _content_type="application/merge-patch+json"
    )
    assert labelled["metadata"]["generation"] == 1
    status = await co.patch_namespaced_custom_object_status(
        *args, "w", {"status": {"replicas": 3}}, _content_type="application/merge-patch+json"
    )
    assert status["metadata"]["generation"] == 1
    assert status["status"] == {"replicas": 3}
    ignored = await co.patch_namespaced_custom_object(
        *args, "w", {"status": {"replicas": 7}}, _content_type="application/merge-patch+json"
    )
    assert ignored["status"] == {"replicas": 3}
    spec = await co.patch_namespaced_custom_object(
        *args, "w", {"spec": {"replicas": 2}}, _content_type="application/merge-patch+json"
    )
    assert spec["metadata"]["generation"] == 2


async def test_custom_resource_schema_rejection(
    api_client: client.ApiClient, namespace: str, widget_crd: dict[str, Any]
) -> None:
    """A value breaking the schema is a 422 Status naming the field, with details.causes."""
    co = client.CustomObjectsApi(api_client)
    body = {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {"replicas": -1}}
    with pytest.raises(ApiException) as exc:
        await co.create_namespaced_custom_object("example.dev", "v1", namespace, "widgets", body)
    assert exc.value.status == 422
    import json

    status = json.loads(exc.value.body)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('Widget.example.dev "bad" is invalid: spec.replicas')
    assert status["details"]["causes"][0]["field"] == "spec.replicas"


async def test_scale_subresource(api_client: client.ApiClient, namespace: str, widget_crd: dict[str, Any]) -> None:
    """The scale subresource reads and writes spec.replicas and bumps generation; a stale PUT is 409."""
    co = client.CustomObjectsApi(api_client)
    args = ("example.dev", "v1", namespace, "widgets")
    await co.create_namespaced_custom_object(
        *args, {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "s"}, "spec": {"replicas": 1}}
    )
    scale = await co.get_namespaced_custom_object_scale(*args, "s")
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 1
    patched = await co.patch_namespaced_custom_object_scale(
        *args, "s", {"spec": {"replicas": 4}}, _content_type="application/merge-patch+json"
    )
    assert patched["spec"]["replicas"] == 4
    obj = await co.get_namespaced_custom_object(*args, "s")
    assert obj["spec"]["replicas"] == 4
    assert obj["metadata"]["generation"] == 2
    with pytest.raises(ApiException) as exc:
        await co.replace_namespaced_custom_object_scale(*args, "s", scale)
    assert exc.value.status == 409


async def test_dry_run_and_delete_collection(api_client: client.ApiClient, namespace: str) -> None:
    """dryRun=All validates without storing; deletecollection honours the label selector."""
    core = client.CoreV1Api(api_client)
    dry = await core.create_namespaced_config_map(namespace, {"metadata": {"name": "dry"}}, dry_run="All")
    assert dry.metadata.name == "dry"
    assert (await core.list_namespaced_config_map(namespace)).items == []
    for name, tier in (("x", "a"), ("y", "a"), ("z", "b")):
        await core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"tier": tier}}})
    await core.delete_collection_namespaced_config_map(namespace, label_selector="tier=a")
    left = await core.list_namespaced_config_map(namespace)
    assert [c.metadata.name for c in left.items] == ["z"]


async def test_rbac_names_are_path_segments(api_client: client.ApiClient, namespace: str) -> None:
    """Role names may contain colons (Grove's `grove.io:pcs:<name>`), but never a slash."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    role = {
        "metadata": {"name": "grove.io:pcs:demo"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    created = await rbac.create_namespaced_role(namespace, role)
    assert created.metadata.name == "grove.io:pcs:demo"
    with pytest.raises(ApiException) as exc:
        await rbac.create_namespaced_role(namespace, {**role, "metadata": {"name": "a/b"}})
    assert exc.value.status == 422
    assert "may not contain '/'" in exc.value.body
