"""Pod spec immutability on update, as ``ValidatePodUpdate``: what may change after create, and what may not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
Refused = Callable[..., dict[str, Any]]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "main", "image": "busybox:1"}], **spec}}


async def patch(core: client.CoreV1Api, namespace: str, name: str, body: Any, content_type: str = MERGE) -> Any:
    return await core.patch_namespaced_pod(name, namespace, body, _content_type=content_type)


async def refused_patch(core: client.CoreV1Api, namespace: str, name: str, body: Any, content_type: str = MERGE) -> Any:
    with pytest.raises(ApiException) as exc:
        await patch(core, namespace, name, body, content_type)
    return exc.value


async def test_images_change_but_other_fields_are_frozen(
    api_client: client.ApiClient, namespace: str, refused: Refused
) -> None:
    """A new image is accepted; a new hostname is refused on ``spec`` with upstream's list of updatable fields."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p", hostname="web-0"))
    updated = await patch(
        core,
        namespace,
        "p",
        {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}},
        "application/strategic-merge-patch+json",
    )
    assert updated.spec.containers[0].image == "busybox:2"
    exc = await refused_patch(core, namespace, "p", {"spec": {"hostname": "web-1"}})
    status = json.loads(exc.body)
    assert exc.status == 422
    cause = status["details"]["causes"][0]
    assert (cause["field"], cause["reason"]) == ("spec", "FieldValueForbidden")
    assert cause["message"].startswith(f"Forbidden: {UPDATABLE}\n")
    assert status["message"].startswith(f'Pod "p" is invalid: spec: Forbidden: {UPDATABLE}\n')
    exc = await refused_patch(core, namespace, "p", {"spec": {"nodeName": "node-0"}})
    assert json.loads(exc.body)["details"]["causes"][0]["field"] == "spec"


async def test_containers_cannot_be_added_or_removed(
    api_client: client.ApiClient, namespace: str, refused: Refused
) -> None:
    """Adding a container stops validation at ``spec.containers``; emptying an image is a required value."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("c"))
    add = [{"op": "add", "path": "/spec/containers/-", "value": {"name": "side", "image": "busybox"}}]
    exc = await refused_patch(core, namespace, "c", add, JSON_PATCH)
    refused(exc, 'Pod "c"', "spec.containers", "Forbidden: pod updates may not add or remove containers")
    blank = [{"op": "replace", "path": "/spec/containers/0/image", "value": ""}]
    exc = await refused_patch(core, namespace, "c", blank, JSON_PATCH)
    refused(exc, 'Pod "c"', "spec.containers[0].image", "Required value")


async def test_active_deadline_only_goes_down(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """Set once, then only lowered; never removed."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("d"))
    assert (
        await patch(core, namespace, "d", {"spec": {"activeDeadlineSeconds": 100}})
    ).spec.active_deadline_seconds == 100
    exc = await refused_patch(core, namespace, "d", {"spec": {"activeDeadlineSeconds": 200}})
    refused(
        exc, 'Pod "d"', "spec.activeDeadlineSeconds", "Invalid value: 200: must be less than or equal to previous value"
    )
    assert (
        await patch(core, namespace, "d", {"spec": {"activeDeadlineSeconds": 50}})
    ).spec.active_deadline_seconds == 50
    exc = await refused_patch(core, namespace, "d", {"spec": {"activeDeadlineSeconds": None}})
    refused(
        exc,
        'Pod "d"',
        "spec.activeDeadlineSeconds",
        "Invalid value: null: must not update from a positive integer to nil value",
    )


async def test_tolerations_may_only_be_added(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """A new toleration is fine; changing an existing one is forbidden."""
    core = client.CoreV1Api(api_client)
    first = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    await core.create_namespaced_pod(namespace, pod("t", tolerations=[first]))
    second = {"key": "example.com/spot", "operator": "Exists"}
    added = await patch(core, namespace, "t", {"spec": {"tolerations": [first, second]}})
    assert len(added.spec.tolerations) == 2
    changed = {**first, "effect": "NoExecute"}
    exc = await refused_patch(core, namespace, "t", {"spec": {"tolerations": [changed, second]}})
    refused(
        exc,
        'Pod "t"',
        "spec.tolerations",
        "Forbidden: existing toleration can not be modified except its tolerationSeconds",
    )


async def test_scheduling_gates_may_only_be_removed(
    api_client: client.ApiClient, namespace: str, refused: Refused
) -> None:
    """Removing a gate is how a controller releases a pod; adding one after create is forbidden."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(
        namespace, pod("g", schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/b"}])
    )
    exc = await refused_patch(
        core, namespace, "g", {"spec": {"schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/c"}]}}
    )
    refused(
        exc,
        'Pod "g"',
        "spec.schedulingGates[1].name",
        "Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'",
    )
    released = await patch(core, namespace, "g", {"spec": {"schedulingGates": [{"name": "example.com/b"}]}})
    assert [g.name for g in released.spec.scheduling_gates] == ["example.com/b"]


async def test_gated_pods_may_gain_node_selector_entries(
    api_client: client.ApiClient, namespace: str, refused: Refused
) -> None:
    """While gated, a pod's node selector may grow but not change; once released, not even grow."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(
        namespace, pod("s", schedulingGates=[{"name": "example.com/a"}], nodeSelector={"pool": "h100"})
    )
    grown = await patch(core, namespace, "s", {"spec": {"nodeSelector": {"pool": "h100", "rack": "r1"}}})
    assert grown.spec.node_selector == {"pool": "h100", "rack": "r1"}
    exc = await refused_patch(core, namespace, "s", {"spec": {"nodeSelector": {"pool": "a100", "rack": "r1"}}})
    refused(
        exc,
        'Pod "s"',
        "spec.nodeSelector",
        'Invalid value: {"pool":"a100","rack":"r1"}: only additions to spec.nodeSelector are allowed '
        "(no mutations or deletions)",
    )
    await patch(core, namespace, "s", {"spec": {"schedulingGates": None}})
    exc = await refused_patch(
        core, namespace, "s", {"spec": {"nodeSelector": {"pool": "h100", "rack": "r1", "x": "y"}}}
    )
    assert json.loads(exc.body)["details"]["causes"][0]["field"] == "spec"


async def test_metadata_is_validated_on_update(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """Labels written by a patch meet the same rules as on create."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("m"))
    exc = await refused_patch(core, namespace, "m", {"metadata": {"labels": {"app": "y" * 64}}})
    refused(exc, 'Pod "m"', "metadata.labels", f'Invalid value: "{"y" * 64}": must be no more than 63 characters')
    labelled = await patch(core, namespace, "m", {"metadata": {"labels": {"app": "y" * 63}}})
    assert labelled.metadata.labels == {"app": "y" * 63}
