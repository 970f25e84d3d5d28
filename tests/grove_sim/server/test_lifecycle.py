"""Deletion semantics: finalizers, ownerReference garbage collection and namespace termination."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

Poll = Callable[..., Awaitable[Any]]


async def _exists(core: client.CoreV1Api, name: str, namespace: str) -> bool:
    try:
        await core.read_namespaced_config_map(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


async def _owner_and_child(core: client.CoreV1Api, namespace: str, block: bool = False) -> tuple[str, str]:
    owner = await core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "child", "ownerReferences": [ref]}})
    return "owner", "child"


async def test_finalizer_blocks_delete_until_removed(api_client: client.ApiClient, namespace: str) -> None:
    """A finalizer keeps a deleted object with deletionTimestamp; no new finalizers; removing the last deletes it."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "fin", "finalizers": ["x/y"]}})
    await core.delete_namespaced_config_map("fin", namespace)
    marked = await core.read_namespaced_config_map("fin", namespace)
    assert marked.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_config_map("fin", namespace, {"metadata": {"finalizers": ["x/y", "new/one"]}})
    assert exc.value.status == 422
    await core.patch_namespaced_config_map("fin", namespace, {"metadata": {"finalizers": None}})
    assert not await _exists(core, "fin", namespace)


async def test_background_cascade(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """Deleting an owner (background) makes the garbage collector delete its dependents."""
    core = client.CoreV1Api(api_client)
    await _owner_and_child(core, namespace)
    await core.delete_namespaced_config_map("owner", namespace)

    async def gone() -> bool:
        return not await _exists(core, "child", namespace)

    assert await poll(gone)


async def test_foreground_cascade(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """With Foreground the owner waits (foregroundDeletion finalizer) until blocking dependents are gone."""
    core = client.CoreV1Api(api_client)
    await _owner_and_child(core, namespace, block=True)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "hold"}})
    child = await core.read_namespaced_config_map("child", namespace)
    await core.patch_namespaced_config_map("child", namespace, {"metadata": {"finalizers": ["keep/me"]}})
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")

    async def owner_waiting() -> bool:
        owner = await core.read_namespaced_config_map("owner", namespace)
        dep = await core.read_namespaced_config_map("child", namespace)
        return "foregroundDeletion" in (owner.metadata.finalizers or []) and dep.metadata.deletion_timestamp is not None

    assert await poll(owner_waiting)
    assert child.metadata.uid
    await core.patch_namespaced_config_map("child", namespace, {"metadata": {"finalizers": None}})

    async def both_gone() -> bool:
        return not await _exists(core, "owner", namespace) and not await _exists(core, "child", namespace)

    assert await poll(both_gone)


async def test_orphan_cascade(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """With Orphan the dependents survive and lose their ownerReferences."""
    core = client.CoreV1Api(api_client)
    await _owner_and_child(core, namespace)
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Orphan")

    async def orphaned() -> bool:
        child = await core.read_namespaced_config_map("child", namespace)
        return not await _exists(core, "owner", namespace) and not child.metadata.owner_references

    assert await poll(orphaned)


async def test_dangling_owner_collected(api_client: client.ApiClient, namespace: str, poll: Poll) -> None:
    """An object whose owner uid does not exist is garbage collected."""
    core = client.CoreV1Api(api_client)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "dangling", "ownerReferences": [ref]}})

    async def gone() -> bool:
        return not await _exists(core, "dangling", namespace)

    assert await poll(gone)


async def test_namespace_termination(api_client: client.ApiClient, poll: Poll) -> None:
    """A deleted namespace refuses creates (403), deletes its contents honouring finalizers, then disappears."""
    core = client.CoreV1Api(api_client)
    await core.create_namespace({"metadata": {"name": "doomed"}})
    await core.create_namespaced_config_map("doomed", {"metadata": {"name": "a"}})
    await core.create_namespaced_config_map("doomed", {"metadata": {"name": "f", "finalizers": ["x/y"]}})
    await core.delete_namespace("doomed")
    ns = await core.read_namespace("doomed")
    assert ns.status.phase == "Terminating"
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert exc.value.status == 403
    assert "being terminated" in exc.value.body

    async def only_finalized_left() -> bool:
        names = [c.metadata.name for c in (await core.list_namespaced_config_map("doomed")).items]
        return names == ["f"]

    assert await poll(only_finalized_left)
    assert (await core.read_namespace("doomed")).status.phase == "Terminating"
    await core.patch_namespaced_config_map("f", "doomed", {"metadata": {"finalizers": None}})

    async def ns_gone() -> bool:
        try:
            await core.read_namespace("doomed")
        except ApiException as exc:
            return exc.status == 404
        return False

    assert await poll(ns_gone)


async def test_crd_delete_removes_custom_resources(api_client: client.ApiClient, poll: Poll) -> None:
    """Deleting a CRD deletes its objects and removes the kind from discovery."""
    ext = client.ApiextensionsV1Api(api_client)
    co = client.CustomObjectsApi(api_client)
    crd = {
        "metadata": {"name": "gadgets.example.dev"},
        "spec": {
            "group": "example.dev",
            "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }
    created = await ext.create_custom_resource_definition(crd)
    assert any(c.type == "Established" and c.status == "True" for c in created.status.conditions)
    await co.create_cluster_custom_object(
        "example.dev",
        "v1",
        "gadgets",
        {"apiVersion": "example.dev/v1", "kind": "Gadget", "metadata": {"name": "g"}, "x": 1},
    )
    await ext.delete_custom_resource_definition("gadgets.example.dev")
    with pytest.raises(ApiException) as exc:
        await co.list_cluster_custom_object("example.dev", "v1", "gadgets")
    assert exc.value.status == 404
